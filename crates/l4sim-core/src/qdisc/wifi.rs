//! `wifi`: a Wi-Fi transmitter's aggregation in front of a child qdisc (the AP's or station's
//! queue), for a last hop where packets leave in bursts, one aggregate per transmit
//! opportunity.
//!
//! Modelled after 802.11 EDCA channel access and A-MPDU aggregation as Linux drivers build
//! them (mac80211 pulls frames from its queues with `ieee80211_tx_dequeue` when the driver
//! forms an aggregate; ath9k's `ath_tx_form_aggr` / `ath_lookup_rate` cap an aggregate at
//! the bytes sent in 4 ms at the current rate and at 65,535 bytes, and the block-ack window
//! caps it at 64 frames):
//!
//! - Channel access: when the previous exchange is over and the child has a packet, the
//!   transmitter waits AIFS (SIFS + `aifsn` slots) plus a backoff of a uniform number of slots
//!   in [0, `cw_min`] (the best-effort access category's defaults: AIFSN 3, CWmin 15, 9 us
//!   slots, 16 us SIFS, from the 802.11 default EDCA parameter set that mac80211 applies).
//! - Aggregate: at that instant it takes packets from the child (the child's AQM acts then)
//!   while the aggregate stays within `max_aggregate_packets`, `max_aggregate_bytes` and the
//!   airtime `txop_us`; a packet that does not fit waits for the next aggregate.
//! - Airtime: the aggregate's PHY header (`phy_header_us`), then each packet at
//!   `phy_rate_mbps`; a packet leaves the qdisc when its last bit is on the air, so the
//!   link's own rate should be at least the PHY rate. After the aggregate the medium stays
//!   busy for SIFS plus the block ack (`block_ack_us`: 32 bytes at 24 Mbit/s legacy OFDM,
//!   20 us preamble + 3 symbols of 4 us).
//!
//! Not modelled: other stations contending for the medium (collisions, the reverse
//! direction's airtime: each direction is its own transmitter), retransmission of lost
//! subframes, rate control, and the per-station fairness of mac80211's airtime scheduler.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Drop, Qdisc, QdiscSpec, QueueDisc};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Rate, SimTime, NEVER, US};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WifiParams {
    /// PHY rate of the data frames, Mbit/s.
    pub phy_rate_mbps: f64,
    /// Frames per aggregate (the block-ack window).
    #[serde(default = "d_max_packets")]
    pub max_aggregate_packets: u32,
    /// Bytes per aggregate (ath9k's `ATH_AMPDU_LIMIT_MAX`).
    #[serde(default = "d_max_bytes")]
    pub max_aggregate_bytes: u64,
    /// Airtime of an aggregate's frames, us (ath9k's 4 ms).
    #[serde(default = "d_txop")]
    pub txop_us: f64,
    #[serde(default = "d_aifsn")]
    pub aifsn: u32,
    #[serde(default = "d_cw_min")]
    pub cw_min: u32,
    #[serde(default = "d_slot")]
    pub slot_us: f64,
    #[serde(default = "d_sifs")]
    pub sifs_us: f64,
    /// PHY preamble and header of an aggregate, us (HT/VHT mixed format).
    #[serde(default = "d_header")]
    pub phy_header_us: f64,
    #[serde(default = "d_block_ack")]
    pub block_ack_us: f64,
    /// The queue the transmitter pulls from (default `pfifo limit 1000`).
    #[serde(default)]
    pub child: Option<Box<QdiscSpec>>,
}

fn d_max_packets() -> u32 {
    64
}
fn d_max_bytes() -> u64 {
    65_535
}
fn d_txop() -> f64 {
    4000.0
}
fn d_aifsn() -> u32 {
    3
}
fn d_cw_min() -> u32 {
    15
}
fn d_slot() -> f64 {
    9.0
}
fn d_sifs() -> f64 {
    16.0
}
fn d_header() -> f64 {
    40.0
}
fn d_block_ack() -> f64 {
    32.0
}

impl WifiParams {
    pub fn validate(&self) -> Result<(), (String, String)> {
        super::check_mbps("phy_rate_mbps", self.phy_rate_mbps)?;
        super::check_nonzero("max_aggregate_packets", self.max_aggregate_packets as u64)?;
        super::check_nonzero("max_aggregate_bytes", self.max_aggregate_bytes)?;
        super::check_pos("txop_us", self.txop_us)?;
        for (f, v) in [
            ("slot_us", self.slot_us),
            ("sifs_us", self.sifs_us),
            ("phy_header_us", self.phy_header_us),
            ("block_ack_us", self.block_ack_us),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err((
                    f.into(),
                    format!("{f} must be a finite time >= 0 us, got {v}"),
                ));
            }
        }
        if let Some(c) = &self.child {
            c.validate().map_err(|(f, m)| (format!("child.{f}"), m))?;
        }
        Ok(())
    }
}

fn us(v: f64) -> u64 {
    (v * US as f64).round() as u64
}

pub struct Wifi {
    rate: Rate,
    max_packets: usize,
    max_bytes: u64,
    txop: u64,
    aifs: u64,
    slot: u64,
    cw_min: u32,
    header: u64,
    /// SIFS + block ack: the medium is busy this long after an aggregate's last frame.
    tail: u64,
    child: Box<Qdisc>,
    rng: Rng,
    /// A packet taken from the child that did not fit the last aggregate.
    held: Option<Packet>,
    /// The aggregate on the air: each packet with the time its last bit is sent.
    air: VecDeque<(SimTime, Packet)>,
    /// When the pending channel access ends (NEVER: none pending).
    access_at: SimTime,
    /// End of the last exchange (its block ack).
    busy_until: SimTime,
    aggregates: u64,
    aggregated: u64,
}

impl Wifi {
    pub fn new(p: &WifiParams, mut rng: Rng) -> Wifi {
        let child = match &p.child {
            Some(c) => Qdisc::child(c, Rng::new(rng.next_u64(), 1)),
            None => Qdisc::child(&QdiscSpec::Pfifo { limit: 1000 }, rng.clone()),
        };
        Wifi {
            rate: Rate::mbps(p.phy_rate_mbps),
            max_packets: p.max_aggregate_packets as usize,
            max_bytes: p.max_aggregate_bytes,
            txop: us(p.txop_us),
            aifs: us(p.sifs_us + p.aifsn as f64 * p.slot_us),
            slot: us(p.slot_us),
            cw_min: p.cw_min,
            header: us(p.phy_header_us),
            tail: us(p.sifs_us + p.block_ack_us),
            child: Box::new(child),
            rng,
            held: None,
            air: VecDeque::new(),
            access_at: NEVER,
            busy_until: 0,
            aggregates: 0,
            aggregated: 0,
        }
    }

    /// Form the aggregate at the end of channel access `now`.
    fn aggregate(&mut self, now: SimTime, drops: &mut Vec<Drop>) {
        let (mut t, mut bytes, mut airtime) = (now + self.header, 0u64, 0u64);
        while self.air.len() < self.max_packets {
            let Some(p) = self.held.take().or_else(|| self.child.dequeue(now, drops)) else {
                break;
            };
            let tx = self.rate.tx_time(p.len);
            let fits = bytes + p.len as u64 <= self.max_bytes && airtime + tx <= self.txop;
            if !fits && !self.air.is_empty() {
                self.held = Some(p);
                break;
            }
            bytes += p.len as u64;
            airtime += tx;
            t += tx;
            self.air.push_back((t, p));
        }
        if !self.air.is_empty() {
            self.busy_until = t + self.tail;
            self.aggregates += 1;
            self.aggregated += self.air.len() as u64;
        }
    }
}

impl QueueDisc for Wifi {
    fn kind(&self) -> &'static str {
        "wifi"
    }
    fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<Drop>) {
        QueueDisc::enqueue(&mut *self.child, pkt, now, drops);
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Vec<Drop>) -> Option<Packet> {
        if let Some(&(t, _)) = self.air.front() {
            return (t <= now).then(|| self.air.pop_front().unwrap().1);
        }
        if self.access_at == NEVER {
            if self.held.is_none() && self.child.is_empty() {
                return None;
            }
            let backoff = self.rng.below(self.cw_min + 1) as u64;
            self.access_at = now.max(self.busy_until) + self.aifs + backoff * self.slot;
            return None;
        }
        if now < self.access_at {
            return None;
        }
        self.access_at = NEVER;
        self.aggregate(now, drops);
        None
    }
    fn ready_at(&self, now: SimTime) -> SimTime {
        match self.air.front() {
            Some(&(t, _)) => t.max(now),
            None if self.access_at != NEVER => self.access_at.max(now),
            None => self.child.ready_at(now),
        }
    }
    fn len(&self) -> usize {
        self.child.len() + self.air.len() + self.held.is_some() as usize
    }
    fn bytes(&self) -> u64 {
        let air: u64 = self.air.iter().map(|(_, p)| p.len as u64).sum();
        self.child.bytes() + air + self.held.map_or(0, |p| p.len as u64)
    }
    fn next_timer(&self) -> SimTime {
        self.child.next_timer()
    }
    fn on_timer(&mut self, now: SimTime) {
        self.child.on_timer(now)
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("aggregates", self.aggregates as f64));
        let mean = self.aggregated as f64 / self.aggregates.max(1) as f64;
        out.push(("mean_aggregate_pkts", mean));
    }
    fn classifier(&self) -> super::Classifier {
        self.child.classifier()
    }
    fn classes(&self) -> Vec<(String, &Qdisc)> {
        vec![("child".into(), &*self.child)]
    }
    fn children_mut(&mut self) -> Vec<&mut Qdisc> {
        vec![&mut *self.child]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    fn params(phy: f64) -> WifiParams {
        serde_json::from_value(serde_json::json!({ "phy_rate_mbps": phy })).unwrap()
    }

    /// Drive the qdisc as a port does: dequeue while packets come out, then wait for
    /// `ready_at`. Returns the departure times.
    fn drain(w: &mut Wifi, mut now: SimTime, until: SimTime) -> Vec<SimTime> {
        let (mut out, mut drops) = (Vec::new(), Vec::new());
        while !w.is_empty() && now < until {
            match w.dequeue(now, &mut drops) {
                Some(_) => out.push(now),
                None => {
                    let next = w.ready_at(now);
                    assert!(
                        next > now,
                        "the qdisc holds packets but names no time to wake"
                    );
                    now = next;
                }
            }
        }
        out
    }

    #[test]
    fn an_aggregate_leaves_after_access_header_and_each_frames_airtime() {
        let mut w = Wifi::new(&params(600.0), Rng::new(1, 2));
        let mut drops = Vec::new();
        for _ in 0..3 {
            w.enqueue(Packet::full_segment(), 0, &mut drops);
        }
        assert!(w.dequeue(0, &mut drops).is_none());
        let access = w.ready_at(0);
        let aifs = 16 * US + 3 * 9 * US;
        assert!((aifs..=aifs + 15 * 9 * US).contains(&access));
        assert!(
            (access - aifs).is_multiple_of(9 * US),
            "backoff is whole slots"
        );
        let t = drain(&mut w, access, SEC);
        let tx = Rate::mbps(600.0).tx_time(Packet::full_segment().len);
        assert_eq!(
            t,
            vec![
                access + 40 * US + tx,
                access + 40 * US + 2 * tx,
                access + 40 * US + 3 * tx
            ]
        );
        assert_eq!(w.busy_until, t[2] + 48 * US);
    }

    #[test]
    fn aggregates_are_capped_by_frames_bytes_and_airtime() {
        // 65,535 bytes: 43 full-size frames; at 10 Mbit/s, 4 ms of airtime holds 3.
        for (phy, max_pkts, want) in [(1000.0, 64, 43), (1000.0, 16, 16), (10.0, 64, 3)] {
            let mut p = params(phy);
            p.max_aggregate_packets = max_pkts;
            let mut w = Wifi::new(&p, Rng::new(1, 2));
            let mut drops = Vec::new();
            for _ in 0..100 {
                w.enqueue(Packet::full_segment(), 0, &mut drops);
            }
            w.dequeue(0, &mut drops);
            let at = w.ready_at(0);
            w.dequeue(at, &mut drops);
            assert_eq!(w.air.len(), want, "phy {phy} max {max_pkts}");
            assert_eq!(w.len(), 100);
        }
    }

    #[test]
    fn saturated_throughput_is_the_airtime_efficiency_of_full_aggregates() {
        let mut w = Wifi::new(&params(600.0), Rng::new(7, 2));
        let mut drops = Vec::new();
        for _ in 0..1000 {
            w.enqueue(Packet::full_segment(), 0, &mut drops);
        }
        let t = drain(&mut w, 0, SEC);
        assert_eq!(t.len(), 1000);
        let got = 1000.0 * Packet::full_segment().len as f64 * 8.0
            / (*t.last().unwrap() as f64 / 1e9)
            / 1e6;
        // Per aggregate of 43 frames: AIFS 43 us + mean backoff 7.5 x 9 us + header 40 us +
        // frames + SIFS 16 us + block ack 32 us.
        let frames = 43.0 * Packet::full_segment().len as f64 * 8.0 / 600.0;
        let want =
            43.0 * Packet::full_segment().len as f64 * 8.0 / (43.0 + 67.5 + 40.0 + frames + 48.0);
        assert!(
            (got - want).abs() / want < 0.03,
            "got {got} Mbit/s, want {want}"
        );
    }
}
