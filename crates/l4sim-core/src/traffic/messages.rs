//! `messages`: batches of fixed-size messages, the multi-AS study's background bursts (for
//! example 10 batch events per second, 1 to 10 messages of 65,000 B each, mean 5.5). Batch
//! events are Poisson at `rate` per second, or periodic; each message is a transfer on a new
//! connection unless `persistent`.
//!
//! With `session`, each message of a batch opens a session instead, as an MGEN TCP flow runs
//! (`ON id TCP DST ... PERIODIC [rate size]`, then `OFF` after `duration`): one connection
//! whose application writes a message at once and then one every 1/`rate` s (or at
//! exponential gaps, MGEN's `POISSON`) while the session lasts, and closes after its last
//! message (the FIN rides on its last segment).

use serde::{Deserialize, Serialize};

use super::{before_stop, per_second, stop_time, Source, Transfer};
use crate::rng::Rng;
use crate::time::{secs, SimTime, NEVER};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessagesSpec {
    /// Batch events per second.
    pub rate: f64,
    /// Messages per batch, uniform in [batch_min, batch_max].
    #[serde(default = "one")]
    pub batch_min: u32,
    #[serde(default = "one")]
    pub batch_max: u32,
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
    /// Exponential gaps between its messages (MGEN's `POISSON`) instead of a fixed period.
    #[serde(default)]
    pub poisson: bool,
}

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
        }
        Ok(())
    }
}

pub struct Messages {
    spec: MessagesSpec,
    stop: SimTime,
    next: SimTime,
}

impl Messages {
    pub fn new(spec: &MessagesSpec, start: SimTime, rng: &mut Rng) -> Messages {
        let mut m = Messages {
            spec: spec.clone(),
            stop: stop_time(spec.stop),
            next: NEVER,
        };
        m.next = m.gap_from(start, rng);
        m
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
        before_stop(self.next, self.stop)
    }

    fn wake(&mut self, now: SimTime, rng: &mut Rng, out: &mut Vec<Transfer>) {
        let span = self.spec.batch_max - self.spec.batch_min + 1;
        let n = self.spec.batch_min + rng.below(span);
        out.extend((0..n).map(|_| Some(self.spec.message_size)));
        self.next = self.gap_from(now, rng);
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
