//! `messages`: batches of fixed-size messages, the multi-AS study's background bursts (for
//! example 10 batch events per second, 1 to 10 messages of 65,000 B each, mean 5.5). Batch
//! events are Poisson at `rate` per second, or periodic; a batch holds a uniform number of
//! messages in [batch_min, batch_max], or a Poisson number with mean `batch_mean` kept in that
//! range; with `jitter`, each message starts at its own uniform offset within `jitter` s around
//! its batch event (messages that would start before the flow's start or from its `stop` on are
//! dropped). Each message is a transfer on a new connection unless `persistent`.
//!
//! With `session`, each message of a batch opens a session instead, as an MGEN TCP flow runs
//! (`ON id TCP DST ... PERIODIC [rate size]`, then `OFF` after `duration`): one connection
//! whose application writes a message at once and then one every 1/`rate` s (or at
//! exponential gaps, MGEN's `POISSON`, for a `poisson_fraction` of the sessions) while the
//! session lasts, and closes after its last message (the FIN rides on its last segment).
//!
//! The multi-AS study's generator (`bg_mgen_script` in `fatihsarpkaya/L4S-ICNP2026`'s
//! notebook) is this with a Poisson batch size, a jitter of 0.5 s and a quarter of the sessions
//! `POISSON`.

use serde::{Deserialize, Serialize};

use super::{before_stop, per_second, stop_time, Source, Transfer};
use crate::rng::Rng;
use crate::time::{secs, SimTime, NEVER};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagesSpec {
    /// Batch events per second.
    pub rate: f64,
    /// Messages per batch, uniform in [batch_min, batch_max] (or see `batch_mean`).
    #[serde(default = "one")]
    pub batch_min: u32,
    #[serde(default = "one")]
    pub batch_max: u32,
    /// A Poisson number of messages per batch with this mean, kept in [batch_min, batch_max].
    #[serde(default)]
    pub batch_mean: Option<f64>,
    /// Seconds around its batch event within which each message starts (uniformly).
    #[serde(default)]
    pub jitter: f64,
    /// Bytes per message.
    pub message_size: u64,
    /// Exponential gaps between batch events (default) or a fixed period of 1/rate.
    #[serde(default = "yes")]
    pub poisson: bool,
    #[serde(default)]
    pub persistent: bool,
    #[serde(default)]
    pub stop: Option<f64>,
    /// Each message opens a session that writes messages on its connection for a while.
    #[serde(default)]
    pub session: Option<SessionSpec>,
}

/// An MGEN-like session: `rate` messages per second for `duration` seconds on one connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSpec {
    /// How long the session writes, s (MGEN's `ON` to `OFF`).
    pub duration: f64,
    /// Messages per second within the session.
    pub rate: f64,
    /// The fraction of sessions whose messages come at exponential gaps (MGEN's `POISSON`);
    /// the others write every 1/rate s (`PERIODIC`). Default 0.
    #[serde(default)]
    pub poisson_fraction: f64,
}

/// The largest `batch_mean` the Poisson sampler draws exactly.
pub const MAX_BATCH_MEAN: f64 = 500.0;

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

impl MessagesSpec {
    pub fn validate(&self) -> Result<(), (String, String)> {
        per_second("rate", self.rate, "batches")?;
        if self.batch_min == 0 {
            return Err(("batch_min".into(), "must be at least 1, got 0".into()));
        }
        if self.batch_max < self.batch_min {
            return Err((
                "batch_max".into(),
                format!(
                    "must be at least batch_min ({}), got {}",
                    self.batch_min, self.batch_max
                ),
            ));
        }
        // Each message of a batch is a connection opened at once (unless persistent).
        if self.batch_max as u64 > crate::scenario::MAX_STREAMS {
            return Err((
                "batch_max".into(),
                format!(
                    "{} messages in one batch is beyond what a run can hold (at most {})",
                    self.batch_max,
                    crate::scenario::MAX_STREAMS
                ),
            ));
        }
        if let Some(mean) = self.batch_mean {
            super::positive("batch_mean", mean)?;
            // Knuth's sampler multiplies uniforms down to e^-mean, which a double holds to ~700.
            if mean > MAX_BATCH_MEAN {
                return Err((
                    "batch_mean".into(),
                    format!("must be at most {MAX_BATCH_MEAN} messages, got {mean}"),
                ));
            }
        }
        if !(self.jitter.is_finite() && self.jitter >= 0.0) {
            return Err((
                "jitter".into(),
                format!("must be 0 or more seconds, got {}", self.jitter),
            ));
        }
        if self.message_size == 0 {
            return Err((
                "message_size".into(),
                "must be at least 1 byte, got 0".into(),
            ));
        }
        if let Some(se) = &self.session {
            if self.persistent {
                return Err((
                    "session".into(),
                    "a session opens its own connection: give session or persistent, not both"
                        .into(),
                ));
            }
            super::positive("session.duration", se.duration)?;
            per_second("session.rate", se.rate, "messages")?;
            if !(0.0..=1.0).contains(&se.poisson_fraction) {
                return Err((
                    "session.poisson_fraction".into(),
                    format!("must be in [0, 1], got {}", se.poisson_fraction),
                ));
            }
        }
        Ok(())
    }
}

pub struct Messages {
    spec: MessagesSpec,
    start: SimTime,
    stop: SimTime,
    /// The next batch event.
    next: SimTime,
    /// Half the jitter: a batch is drawn that long before its event.
    half_jitter: SimTime,
    /// Messages drawn and not started yet, latest first.
    pending: Vec<SimTime>,
}

impl Messages {
    pub fn new(spec: &MessagesSpec, start: SimTime, rng: &mut Rng) -> Messages {
        let mut m = Messages {
            spec: spec.clone(),
            start,
            stop: stop_time(spec.stop),
            next: NEVER,
            half_jitter: secs(spec.jitter / 2.0),
            pending: Vec::new(),
        };
        m.next = m.gap_from(start, rng);
        m
    }

    /// When the next batch is drawn: half the jitter before its event, so that its earliest
    /// message can start then.
    fn draw_at(&self) -> SimTime {
        self.next.saturating_sub(self.half_jitter).max(self.start)
    }

    fn batch_size(&self, rng: &mut Rng) -> u32 {
        let (lo, hi) = (self.spec.batch_min, self.spec.batch_max);
        match self.spec.batch_mean {
            Some(mean) => rng.poisson(mean).clamp(lo, hi),
            None => lo + rng.below(hi - lo + 1),
        }
    }

    fn gap_from(&self, t: SimTime, rng: &mut Rng) -> SimTime {
        if self.spec.rate <= 0.0 {
            return NEVER;
        }
        let mean = 1.0 / self.spec.rate;
        let gap = if self.spec.poisson {
            rng.exponential(mean)
        } else {
            mean
        };
        t + secs(gap).max(1)
    }
}

impl Source for Messages {
    fn next_wake(&self) -> SimTime {
        let batch = match before_stop(self.next, self.stop) {
            NEVER => NEVER,
            _ => self.draw_at(),
        };
        self.pending.last().map_or(batch, |&t| t.min(batch))
    }

    fn wake(&mut self, now: SimTime, rng: &mut Rng, out: &mut Vec<Transfer>) {
        if self.next < self.stop && self.draw_at() <= now {
            let event = self.next;
            let n = self.batch_size(rng);
            if self.half_jitter == 0 {
                out.extend((0..n).map(|_| Some(self.spec.message_size)));
            } else {
                for _ in 0..n {
                    // event - jitter/2 + U * jitter, kept within [start, stop)
                    let late = event + secs(rng.uniform() * self.spec.jitter);
                    let h = self.half_jitter;
                    if late >= self.start + h && late < self.stop.saturating_add(h) {
                        let at = late - h;
                        let i = self.pending.partition_point(|&t| t > at);
                        self.pending.insert(i, at);
                    }
                }
            }
            self.next = self.gap_from(event, rng);
        }
        while self.pending.last().is_some_and(|&t| t <= now) {
            self.pending.pop();
            out.push(Some(self.spec.message_size));
        }
    }

    fn set_rate(&mut self, rate: f64, now: SimTime, rng: &mut Rng) {
        self.spec.rate = rate.max(0.0);
        self.next = self.gap_from(now, rng);
    }

    fn persistent(&self) -> bool {
        self.spec.persistent
    }

    fn session(&self) -> Option<&SessionSpec> {
        self.spec.session.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn spec(rate: f64, poisson: bool) -> MessagesSpec {
        MessagesSpec {
            rate,
            batch_min: 1,
            batch_max: 1,
            batch_mean: None,
            jitter: 0.0,
            message_size: 1000,
            poisson,
            persistent: false,
            stop: None,
            session: None,
        }
    }

    /// The start time of every message the source gives from `start` until `until`.
    fn starts(spec: &MessagesSpec, start: f64, until: f64) -> Vec<f64> {
        let mut rng = Rng::new(1, stream::TRAFFIC);
        let mut m = Messages::new(spec, secs(start), &mut rng);
        let (mut out, mut times) = (Vec::new(), Vec::new());
        for _ in 0..10_000_000 {
            let t = m.next_wake();
            if t >= secs(until) {
                return times;
            }
            out.clear();
            m.wake(t, &mut rng, &mut out);
            times.extend(out.iter().map(|_| t as f64 / 1e9));
        }
        panic!("the source never went quiet");
    }

    #[test]
    fn a_poisson_batch_size_has_its_mean_kept_within_the_bounds() {
        // 10 batch events a second of Poisson(5.5) messages, at least 1 and at most 25: the
        // mean is 5.5 + P(0) = 5.504 (the study's heavy 4 Gbit/s profile).
        let s = MessagesSpec {
            batch_mean: Some(5.5),
            batch_max: 25,
            ..spec(10.0, true)
        };
        let n = starts(&s, 0.0, 2000.0).len() as f64;
        assert!((n / 2000.0 / 10.0 - 5.504).abs() < 0.06, "{}", n / 20000.0);
        let few = MessagesSpec {
            batch_mean: Some(20.0),
            batch_min: 2,
            batch_max: 3,
            ..spec(1.0, false)
        };
        let t = starts(&few, 0.0, 100.0);
        let per_batch = t.len() as f64 / 99.0;
        assert!((per_batch - 3.0).abs() < 0.02, "{per_batch}");
    }

    #[test]
    fn bad_batch_means_jitters_and_poisson_fractions_name_their_field() {
        let bad = |f: &dyn Fn(&mut MessagesSpec)| {
            let mut s = spec(1.0, true);
            f(&mut s);
            s.validate().unwrap_err().0
        };
        assert_eq!(bad(&|s| s.batch_mean = Some(0.0)), "batch_mean");
        assert_eq!(bad(&|s| s.batch_mean = Some(501.0)), "batch_mean");
        assert_eq!(bad(&|s| s.jitter = -0.1), "jitter");
        assert_eq!(bad(&|s| s.jitter = f64::NAN), "jitter");
        let session = |p| {
            Some(SessionSpec {
                duration: 1.0,
                rate: 1.0,
                poisson_fraction: p,
            })
        };
        assert_eq!(
            bad(&|s| s.session = session(1.5)),
            "session.poisson_fraction"
        );
        let mut ok = spec(1.0, true);
        ok.batch_mean = Some(MAX_BATCH_MEAN);
        ok.session = session(1.0);
        assert!(ok.validate().is_ok());
    }

    #[test]
    fn jittered_messages_start_around_their_batch_event_and_never_before_the_flow() {
        // Batches of 4 every 0.25 s from 10 s (events at 10.25, 10.5, ...), each message
        // within 0.5 s around its event: those before 10 s are dropped, the rest spread over
        // the whole window, in time order.
        let s = MessagesSpec {
            batch_min: 4,
            batch_max: 4,
            jitter: 0.5,
            ..spec(4.0, false)
        };
        let t = starts(&s, 10.0, 60.0);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        assert!(t[0] >= 10.0 && t[0] < 10.05, "{:?}", &t[..4]);
        let offsets: Vec<f64> = t
            .iter()
            .filter(|&&x| x > 11.0 && x < 59.0)
            .map(|&x| (x * 4.0).round() / 4.0 - x)
            .collect();
        assert!(offsets.iter().all(|o| o.abs() <= 0.125 + 1e-9));
        let mean = t.len() as f64 / 50.0;
        assert!((mean - 16.0).abs() < 0.2, "{mean}");
        // Each batch's messages are spread: about as many early as late.
        let early = offsets.iter().filter(|&&o| o > 0.0).count() as f64;
        assert!((early / offsets.len() as f64 - 0.5).abs() < 0.05);
        // Without jitter the four messages of a batch start together.
        let still = MessagesSpec {
            jitter: 0.0,
            ..s.clone()
        };
        let together = starts(&still, 10.0, 12.0);
        assert_eq!(together.len(), 4 * 7, "{together:?}");
        // A stop ends the batches and drops the messages that would start from it on.
        let stopped = MessagesSpec {
            stop: Some(20.0),
            ..s
        };
        let t = starts(&stopped, 10.0, f64::INFINITY);
        assert!(t.len() > 100 && *t.last().unwrap() < 20.0);
        assert!(together.iter().all(|&x| (x * 4.0).fract() == 0.0));
    }
}
