//! Traffic sources: what each scenario flow sends.
//!
//! A TCP source ([`Source`]) decides when connections open and how many bytes each carries;
//! the simulator creates the connections (handshake, slow start, the data, FIN riding on the
//! last segment) and retires them once every packet of theirs has left the network, so state
//! and per-event cost do not grow with the number of finished connections. One file per
//! source: [`bulk`] (iperf3, the default), [`web`] (request/response transfers), [`messages`]
//! (batches of fixed-size messages), [`chunks`] (video-like chunks at a rate). UDP sources are
//! endpoints of their own, not connections: [`udp`] (constant bit rate or on/off) and
//! [`udp_prague`] (a real-time flow rate-controlled by L4STeam's libprague).

use serde::{Deserialize, Serialize};

use crate::rng::Rng;
use crate::time::SimTime;

pub mod bulk;
pub mod chunks;
pub mod dist;
pub mod messages;
pub mod udp;
pub mod udp_prague;
pub mod web;

/// Bytes of one transfer; `None`: a bulk transfer that never ends.
pub type Transfer = Option<u64>;

/// A TCP application: when transfers start and how large they are. The flow's `persistent`
/// setting decides whether each transfer opens a new connection or is written on the flow's
/// one long-lived connection.
pub trait Source: Send + Sync {
    /// Transfers that start with the flow (at its `start`): iperf3's parallel streams.
    fn initial(&mut self, _out: &mut Vec<Transfer>) {}
    /// Next time the source starts transfers (`NEVER`: no more).
    fn next_wake(&self) -> SimTime;
    /// Start the transfers due at `now`.
    fn wake(&mut self, now: SimTime, rng: &mut Rng, out: &mut Vec<Transfer>);
    /// Change the offered load from `now` on (the source's own unit: requests/s, batches/s,
    /// Mbit/s).
    fn set_rate(&mut self, _rate: f64, _now: SimTime, _rng: &mut Rng) {}
    /// Whether transfers share one long-lived connection.
    fn persistent(&self) -> bool {
        false
    }
    /// Whether the receiving host asks for each transfer (request/response): the request
    /// crosses the network to the data sender before it opens its connection or writes.
    fn requested(&self) -> bool {
        false
    }
    /// Whether each transfer opens a session: a connection on which the application writes
    /// the transfer's size again at the session's rate until it ends (`messages`).
    fn session(&self) -> Option<&messages::SessionSpec> {
        None
    }
}

/// What a flow sends (`source` in a scenario flow; default `bulk`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SourceSpec {
    /// iperf3: `streams` connections from `start`, for the whole run (or `size` bytes each).
    /// No parameters of its own (a struct variant, so that serde refuses any key beside `kind`).
    Bulk {},
    Web(web::WebSpec),
    Messages(messages::MessagesSpec),
    Chunks(chunks::ChunksSpec),
    Udp(udp::UdpSpec),
    UdpPrague(udp_prague::UdpPragueSpec),
}

impl Default for SourceSpec {
    fn default() -> Self {
        SourceSpec::Bulk {}
    }
}

impl SourceSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            SourceSpec::Bulk {} => "bulk",
            SourceSpec::Web(_) => "web",
            SourceSpec::Messages(_) => "messages",
            SourceSpec::Chunks(_) => "chunks",
            SourceSpec::Udp(_) => "udp",
            SourceSpec::UdpPrague(_) => "udp_prague",
        }
    }

    /// iperf3's bulk transfer (the default source).
    pub fn is_bulk(&self) -> bool {
        matches!(self, SourceSpec::Bulk {})
    }

    /// Whether the flow is TCP (a [`Source`]) rather than a UDP endpoint.
    pub fn is_tcp(&self) -> bool {
        !matches!(self, SourceSpec::Udp(_) | SourceSpec::UdpPrague(_))
    }

    /// Largest UDP payload a UDP source sends (it must fit its path's MTU).
    pub fn max_datagram(&self) -> Option<u32> {
        match self {
            SourceSpec::Udp(s) => Some(s.packet_size),
            SourceSpec::UdpPrague(s) => Some(s.packet_size),
            _ => None,
        }
    }

    pub fn validate(&self) -> Result<(), (String, String)> {
        match self {
            SourceSpec::Bulk {} => Ok(()),
            SourceSpec::Web(s) => s.validate(),
            SourceSpec::Messages(s) => s.validate(),
            SourceSpec::Chunks(s) => s.validate(),
            SourceSpec::Udp(s) => s.validate(),
            SourceSpec::UdpPrague(s) => s.validate(),
        }
    }

    /// The TCP source of a flow starting at `start` with `streams` streams of `size` bytes.
    pub fn build(
        &self,
        start: SimTime,
        streams: u32,
        size: Option<u64>,
        rng: &mut Rng,
    ) -> Option<Box<dyn Source>> {
        Some(match self {
            SourceSpec::Bulk {} => Box::new(bulk::Bulk::new(streams, size)),
            SourceSpec::Web(s) => Box::new(web::Web::new(s, start, rng)),
            SourceSpec::Messages(s) => Box::new(messages::Messages::new(s, start, rng)),
            SourceSpec::Chunks(s) => Box::new(chunks::Chunks::new(s, start)),
            SourceSpec::Udp(_) | SourceSpec::UdpPrague(_) => return None,
        })
    }
}

/// `next`, or `NEVER` once it reaches the source's `stop` time.
pub(crate) fn before_stop(next: SimTime, stop: SimTime) -> SimTime {
    if next >= stop {
        crate::time::NEVER
    } else {
        next
    }
}

/// Seconds to `SimTime`, with `None` (no stop) as `NEVER`.
pub(crate) fn stop_time(stop: Option<f64>) -> SimTime {
    stop.map_or(crate::time::NEVER, crate::time::secs)
}

/// Events per second a source may start: each is at least one connection, so more than a
/// million a second would fill memory before the link could carry them.
pub(crate) const MAX_PER_SECOND: f64 = 1e6;

/// A positive rate of `what` (e.g. "requests") per second, at most [`MAX_PER_SECOND`].
pub(crate) fn per_second(field: &str, v: f64, what: &str) -> Result<(), (String, String)> {
    positive(field, v)?;
    if v > MAX_PER_SECOND {
        return Err((
            field.to_string(),
            format!("{v} {what}/s is beyond what a run can hold (at most 1e6)"),
        ));
    }
    Ok(())
}

/// Check an optional rate-like value: positive and finite.
pub(crate) fn positive(field: &str, v: f64) -> Result<(), (String, String)> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err((
            field.to_string(),
            format!("must be a positive number, got {v}"),
        ))
    }
}
