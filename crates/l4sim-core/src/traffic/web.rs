//! `web`: request/response transfers, as the DualPI2 demo's and the IETF evaluations' web-like
//! flows. Arrivals are Poisson at `rate` per second (exponential gaps) or follow a `trace` of
//! (time, bytes); sizes come from `size`. Each transfer is a new TCP connection (handshake,
//! slow start, the response, FIN) unless `persistent`, when responses follow each other on one
//! connection. The client asks for each response: its request crosses the network to the
//! server (the data sender) first, which then opens its connection or, on a persistent one,
//! writes the response (the simulator's `World::request`).

use serde::{Deserialize, Serialize};

use super::dist::SizeDist;
use super::{before_stop, per_second, stop_time, Source, Transfer};
use crate::rng::Rng;
use crate::time::{secs, SimTime, NEVER};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSpec {
    /// Requests per second (Poisson); not with a `trace`.
    #[serde(default)]
    pub rate: f64,
    /// Response sizes (default: the IETF evaluations' Pareto, alpha 0.9, 1 KB to 1 MB).
    #[serde(default = "default_size")]
    pub size: SizeDist,
    /// Arrivals from a trace instead: (seconds from the flow's start, bytes), in time order.
    #[serde(default)]
    pub trace: Option<Vec<(f64, u64)>>,
    /// All responses on one long-lived connection instead of one connection each.
    #[serde(default)]
    pub persistent: bool,
    /// No new requests after this time, s.
    #[serde(default)]
    pub stop: Option<f64>,
}

fn default_size() -> SizeDist {
    SizeDist::Pareto {
        alpha: 0.9,
        min: 1000.0,
        max: 1e6,
    }
}

impl WebSpec {
    pub fn validate(&self) -> Result<(), (String, String)> {
        match &self.trace {
            Some(_) if self.rate != 0.0 => {
                return Err((
                    "rate".into(),
                    format!(
                        "a web source takes rate (Poisson requests/s) or trace, not both; got rate {} beside a trace",
                        self.rate
                    ),
                ));
            }
            None if self.rate == 0.0 => {
                return Err((
                    "rate".into(),
                    "a web source needs rate (Poisson requests/s) or trace".into(),
                ));
            }
            Some(tr) => {
                let mut prev = 0.0;
                for (i, &(t, b)) in tr.iter().enumerate() {
                    if !(t.is_finite() && t >= prev) {
                        return Err((
                            format!("trace[{i}]"),
                            format!("times must be non-negative and in order, got {t}"),
                        ));
                    }
                    if b == 0 {
                        return Err((
                            format!("trace[{i}]"),
                            "bytes must be at least 1, got 0".into(),
                        ));
                    }
                    prev = t;
                }
            }
            None => {
                per_second("rate", self.rate, "requests")?;
            }
        }
        self.size
            .validate()
            .map_err(|(f, m)| (format!("size.{f}"), m))
    }
}

pub struct Web {
    rate: f64,
    size: SizeDist,
    trace: Option<(Vec<(f64, u64)>, usize)>,
    start: SimTime,
    stop: SimTime,
    persistent: bool,
    next: SimTime,
}

impl Web {
    pub fn new(spec: &WebSpec, start: SimTime, rng: &mut Rng) -> Web {
        let mut w = Web {
            rate: spec.rate,
            size: spec.size.clone(),
            trace: spec.trace.clone().map(|t| (t, 0)),
            start,
            stop: stop_time(spec.stop),
            persistent: spec.persistent,
            next: NEVER,
        };
        w.next = match &w.trace {
            Some((t, _)) => t.first().map_or(NEVER, |&(s, _)| start + secs(s)),
            None => w.gap_from(start, rng),
        };
        w
    }

    fn gap_from(&self, t: SimTime, rng: &mut Rng) -> SimTime {
        if self.rate <= 0.0 {
            return NEVER;
        }
        t + secs(rng.exponential(1.0 / self.rate)).max(1)
    }
}

impl Source for Web {
    fn next_wake(&self) -> SimTime {
        before_stop(self.next, self.stop)
    }

    fn wake(&mut self, now: SimTime, rng: &mut Rng, out: &mut Vec<Transfer>) {
        match &mut self.trace {
            Some((tr, i)) => {
                while *i < tr.len() && self.start + secs(tr[*i].0) <= now {
                    out.push(Some(tr[*i].1));
                    *i += 1;
                }
                self.next = tr.get(*i).map_or(NEVER, |&(s, _)| self.start + secs(s));
            }
            None => {
                out.push(Some(self.size.sample(rng)));
                self.next = self.gap_from(now, rng);
            }
        }
    }

    /// A new request rate (per second); the next arrival is redrawn from `now` (Poisson
    /// arrivals are memoryless, so this is exact).
    fn set_rate(&mut self, rate: f64, now: SimTime, rng: &mut Rng) {
        if self.trace.is_none() {
            self.rate = rate.max(0.0);
            self.next = self.gap_from(now, rng);
        }
    }

    fn persistent(&self) -> bool {
        self.persistent
    }

    fn requested(&self) -> bool {
        true
    }
}
