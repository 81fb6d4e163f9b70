//! `chunks`: a video stream as adaptive-streaming players fetch it: every `period` seconds a
//! chunk of `rate_mbps` x `period` bits is written on one long-lived connection (the
//! multi-AS study's streaming flows: 10 Mbit/s as 2 s chunks of about 2.5 MB). By default the
//! server pushes each chunk; with `request = true` the player asks for it, as a DASH or HLS
//! client's HTTP GET per segment does, so the request's crossing of the network comes first.

use serde::{Deserialize, Serialize};

use super::{before_stop, positive, stop_time, Source, Transfer};
use crate::rng::Rng;
use crate::time::{secs, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunksSpec {
    /// Video rate, Mbit/s.
    pub rate_mbps: f64,
    /// Seconds of video per chunk (one chunk per period).
    #[serde(default = "two")]
    pub period: f64,
    #[serde(default)]
    pub stop: Option<f64>,
    /// The client asks for each chunk (request/response, as the `web` source's transfers).
    #[serde(default)]
    pub request: bool,
}

fn two() -> f64 {
    2.0
}

impl ChunksSpec {
    pub fn validate(&self) -> Result<(), (String, String)> {
        positive("rate_mbps", self.rate_mbps)?;
        positive("period", self.period)?;
        if self.rate_mbps * self.period / 8.0 * 1e6 < 1.0 {
            return Err((
                "rate_mbps".into(),
                "a chunk must carry at least one byte".into(),
            ));
        }
        Ok(())
    }
}

pub struct Chunks {
    rate_mbps: f64,
    period: SimTime,
    stop: SimTime,
    next: SimTime,
    request: bool,
}

impl Chunks {
    pub fn new(spec: &ChunksSpec, start: SimTime) -> Chunks {
        Chunks {
            rate_mbps: spec.rate_mbps,
            period: secs(spec.period).max(1),
            stop: stop_time(spec.stop),
            next: start,
            request: spec.request,
        }
    }
}

impl Source for Chunks {
    fn next_wake(&self) -> SimTime {
        before_stop(self.next, self.stop)
    }

    fn wake(&mut self, now: SimTime, _rng: &mut Rng, out: &mut Vec<Transfer>) {
        let bytes = self.rate_mbps * 1e6 / 8.0 * (self.period as f64 / 1e9);
        out.push(Some((bytes.round() as u64).max(1)));
        self.next = now + self.period;
    }

    fn set_rate(&mut self, rate: f64, _now: SimTime, _rng: &mut Rng) {
        self.rate_mbps = rate.max(0.0);
    }

    fn persistent(&self) -> bool {
        true
    }

    fn requested(&self) -> bool {
        self.request
    }
}
