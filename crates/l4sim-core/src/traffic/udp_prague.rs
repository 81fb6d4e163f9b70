//! UDP Prague: a rate-controlled real-time UDP flow, modelled on L4STeam's libprague
//! (`prague_cc.h` / `prague_cc.cpp`, `PragueCC`) and its example applications
//! `udp_prague_sender.cpp` / `udp_prague_receiver.cpp` with their packet formats
//! (`pkt_format.h`) and defaults (`app_stuff.h`), in the per-packet-ACK ("PKT_ACK_TYPE")
//! feedback mode that the example uses by default.
//!
//! This is our own model written from reading that code; each piece names the libprague
//! function or field it stands for, so a reader can check it against the library.
//!
//! # Sender (`udp_prague_sender.cpp`, bulk/non-RT mode, the default)
//! * Sends ECT(1) data packets (`GetTimeInfo` gives `ecn_l4s_id`, or Not-ECT once the receiver
//!   has reported `error_L4S`), sequence numbers from 1.
//! * Pacing loop: while `inflight < packet_window && inburst < packet_burst && nextSend <= now`
//!   it sends; after a burst `nextSend = startSend + packet_size * inburst / pacing_rate`.
//!   `pacing_rate`, `packet_window`, `packet_burst` and `packet_size` come from `GetCCInfo`,
//!   which the app calls at start and after every ACK.
//! * When window-limited it waits `SND_TIMEOUT` (1 s) for an ACK; if none comes it calls
//!   `ResetCCInfo` and restarts sending.
//! * On each ACK: `PacketReceived(timestamp, echoed_timestamp)` then
//!   `ACKReceived(packets_received, packets_CE, packets_lost, seqnr, error_L4S, inflight)`.
//!
//! # Receiver (`udp_prague_receiver.cpp`)
//! * On each data packet: `PacketReceived` (freezes the sender's timestamp) and
//!   `DataReceivedSequence(ecn, seq_nr)` (counters: received, CE, lost = sequence gaps,
//!   decremented again by a late/reordered packet), then it sends one ACK (`ackmessage_t`,
//!   26 bytes of UDP payload) with `GetTimeInfo` timestamps and `GetACKInfo` counters.
//!
//! # Timestamps
//! libprague "freezes" the peer's timestamp on receipt (`m_ts_remote = now - timestamp`)
//! and echoes it "defrosted" (`echoed = now - m_ts_remote`), so the echo excludes the
//! peer's holding time and `now - echoed` is a pure RTT sample. Here timestamps are in ns of
//! the simulated clock; the CC arithmetic itself is done in libprague's units (µs, B/s, µB)
//! with its integer rounding.
//!
//! # Packet conventions (this crate's [`Packet`])
//! Data (`Dir::Fwd`): `payload` = UDP payload bytes (libprague's `packet_size`, which includes
//! its 13-byte `datamessage_t` header), `len = ETH + IP + 8 + payload`, `ecn = Ect1`,
//! `seq` = `seq_nr`, `ts_val` = `timestamp`, `ts_ecr` = `echoed_timestamp` (0 = none yet),
//! `hash = hash_fwd`.
//! Feedback (`Dir::Rev`, one per data packet): `payload = 0`, `len = ETH + IP + 8 + 26`
//! (`ackmessage_t`), `ecn = Ect1`, `seq` = `ack_seq` (the data packet's `seq_nr`),
//! `ack` = `packets_received`, `sack[0]` = (`packets_CE`, `packets_lost`) (with `n_sack` left
//! at 0: they are counters, not SACK blocks), `flags & ECE` = `error_L4S`,
//! `ts_val` = `timestamp`, `ts_ecr` = `echoed_timestamp`, `hash = hash_rev`.
//! `group` carries the scenario flow, as on every packet.
//!
//! # Packet size
//! libprague, not the app, picks the packet size: `m_packet_size = pacing_rate * vrtt / 2`
//! clamped to [`PRAGUE_MINMTU` = 150 B, `max_packet_size`] (two packets per vRTT at least).
//! So packets are `UdpPragueSpec::packet_size` (1200 B) at any rate above
//! 2 × 1200 B / 25 ms = 768 kbit/s, and smaller while the flow starts at its 100 kbit/s
//! `PRAGUE_INITRATE` or is pushed near `PRAGUE_MINRATE`. All rates (max/min/start, the CC's
//! `pacing_rate`) are UDP-payload rates, as in libprague.
//!
//! # Simplifications
//! * RT/frame mode (`--rt`, `GetCCInfoVideo`, fps/frame budget) and RFC 8888 feedback
//!   (`--rfc8888`, `RFC8888Received`) are not modelled: the example's default (bulk pacing,
//!   per-packet ACKs, `fps = 0`, so `REF_RTT` = 25 ms and alpha gain 1/16) is.
//! * libprague's 32-bit wrapping clocks/counters are 64-bit here (no wrap).
//! * The example's send-time compensation `compRecv` is always 0 in a simulator (timers fire
//!   exactly on time). The example exits after its third `SND_TIMEOUT`; here the flow keeps
//!   going (it just resets again).
//! * `ACKReceived` divides by the packets received since the last alpha update; libprague
//!   would divide by zero when a whole round was lost, here alpha is then left unchanged.
//!   Likewise the rate-mode increase's divisor (`invscaler`, packets per vRTT) is kept at
//!   least 1 where libprague's `div_64_64_round` would saturate.
//! * The CC's clock is the simulated time floored to µs (libprague's `Now()` resolution);
//!   pacing gaps (`packet_size * inburst / pacing_rate`) are computed in ns.
//! * `packets_sent()` counts data packets; no retransmissions exist (real-time data).

use serde::{Deserialize, Serialize};

use crate::packet::{flags, hdr, skb, Dir, Ecn, Packet};
use crate::time::{SimDuration, SimTime, MS, NEVER, SEC, US};

/// libprague's constants (`prague_cc.h`, `prague_cc.cpp`, `pkt_format.h`).
pub mod consts {
    /// `PRAGUE_INITWIN`: initial window, packets.
    pub const PRAGUE_INITWIN: u32 = 10;
    /// `PRAGUE_MINMTU`: smallest packet size the CC picks, bytes.
    pub const PRAGUE_MINMTU: u64 = 150;
    /// `PRAGUE_INITRATE`: initial rate, B/s (100 kbit/s).
    pub const PRAGUE_INITRATE: u64 = 12_500;
    /// `PRAGUE_MINRATE`: minimum rate, B/s (100 kbit/s).
    pub const PRAGUE_MINRATE: u64 = 12_500;
    /// `PRAGUE_MAXRATE`: maximum rate, B/s (100 Gbit/s).
    pub const PRAGUE_MAXRATE: u64 = 12_500_000_000;
    /// `MIN_STEP`: vRTTs always waited before faster growth.
    pub const MIN_STEP: i64 = 7;
    /// `RATE_STEP`: one more vRTT of waiting per this many B/s of pacing rate.
    pub const RATE_STEP: u64 = 1_920_000;
    /// `QUEUE_GROWTH`: target queue growth per vRTT once growing, µs.
    pub const QUEUE_GROWTH_US: u64 = 1_000;
    /// `BURST_TIME`: µs of pacing that may go back to back.
    pub const BURST_TIME_US: u64 = 250;
    /// `REF_RTT`: reference (virtual) RTT, µs.
    pub const REF_RTT_US: i64 = 25_000;
    /// `PROB_SHIFT`: fixed-point shift of alpha.
    pub const PROB_SHIFT: u32 = 20;
    /// `MAX_PROB`.
    pub const MAX_PROB: i64 = 1 << PROB_SHIFT;
    /// `ALPHA_SHIFT`: EWMA gain 1/16 (with `fps = 0`).
    pub const ALPHA_SHIFT: u32 = 4;
    /// `MIN_PKT_BURST`.
    pub const MIN_PKT_BURST: u64 = 1;
    /// `MIN_PKT_WIN`.
    pub const MIN_PKT_WIN: u64 = 2;
    /// `RATE_OFFSET`: ±3 % pacing in the two halves of a vRTT, and window headroom.
    pub const RATE_OFFSET: u64 = 3;
    /// `SND_TIMEOUT` (pkt_format.h): µs a window-limited sender waits for an ACK.
    pub const SND_TIMEOUT_US: u64 = 1_000_000;
    /// `sizeof(ackmessage_t)` (packed): type 1 + 6 × 4 + error_L4S 1.
    pub const ACK_MSG_BYTES: u32 = 26;
    /// UDP header.
    pub const UDP_HDR: u32 = 8;
}
use consts::*;

/// Scenario parameters of a udp_prague source. Defaults: libprague's, except the target rate
/// and packet size, which are the multi-AS study's (5 Mbit/s, 1200 B).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UdpPragueSpec {
    /// The call's maximum rate (`max_rate`, the example's `-b`), Mbit/s of UDP payload.
    pub max_rate_mbps: f64,
    /// `min_rate` (`PRAGUE_MINRATE` = 0.1 Mbit/s).
    pub min_rate_mbps: f64,
    /// Largest UDP payload (`max_packet_size`, the example's `-m`), bytes. libprague picks
    /// `packet_size = pacing_rate * vrtt / 2` clamped to [`PRAGUE_MINMTU`, this], so packets
    /// are this size except at rates below `2 * packet_size / 25 ms`.
    pub packet_size: u32,
    /// `init_rate`, Mbit/s; `None` = `PRAGUE_INITRATE` (0.1 Mbit/s).
    pub start_rate_mbps: Option<f64>,
    /// `init_window` in packets (`PRAGUE_INITWIN` = 10).
    pub init_window: u32,
    /// s: the call ends (absolute simulated time).
    pub stop: Option<f64>,
}

impl Default for UdpPragueSpec {
    fn default() -> Self {
        UdpPragueSpec {
            max_rate_mbps: 5.0,
            min_rate_mbps: PRAGUE_MINRATE as f64 * 8.0 / 1e6,
            packet_size: 1200,
            start_rate_mbps: None,
            init_window: PRAGUE_INITWIN,
            stop: None,
        }
    }
}

fn mbps_to_bytes_per_sec(m: f64) -> u64 {
    (m * 1e6 / 8.0).round() as u64
}

impl UdpPragueSpec {
    pub fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, m: String| Err((f.to_string(), m));
        let max_udp = hdr::MAX_MTU - hdr::IP - UDP_HDR;
        if !(self.max_rate_mbps.is_finite() && self.max_rate_mbps > 0.0) {
            return err(
                "max_rate_mbps",
                format!("must be a positive number, got {}", self.max_rate_mbps),
            );
        }
        if mbps_to_bytes_per_sec(self.max_rate_mbps) > PRAGUE_MAXRATE {
            return err(
                "max_rate_mbps",
                format!(
                    "{} exceeds libprague's PRAGUE_MAXRATE (100000 Mbit/s)",
                    self.max_rate_mbps
                ),
            );
        }
        if !(self.min_rate_mbps.is_finite() && self.min_rate_mbps > 0.0) {
            return err(
                "min_rate_mbps",
                format!("must be a positive number, got {}", self.min_rate_mbps),
            );
        }
        if mbps_to_bytes_per_sec(self.min_rate_mbps) == 0 {
            return err(
                "min_rate_mbps",
                format!("{} is below 1 byte/s", self.min_rate_mbps),
            );
        }
        if self.min_rate_mbps > self.max_rate_mbps {
            return err(
                "min_rate_mbps",
                format!(
                    "{} exceeds max_rate_mbps {}",
                    self.min_rate_mbps, self.max_rate_mbps
                ),
            );
        }
        if (self.packet_size as u64) < PRAGUE_MINMTU || self.packet_size > max_udp {
            return err(
                "packet_size",
                format!(
                    "{} must be between {} and {} bytes",
                    self.packet_size, PRAGUE_MINMTU, max_udp
                ),
            );
        }
        if let Some(r) = self.start_rate_mbps {
            if !(r.is_finite() && r > 0.0) || mbps_to_bytes_per_sec(r) == 0 {
                return err(
                    "start_rate_mbps",
                    format!("must be a positive rate, got {r}"),
                );
            }
            if r > self.max_rate_mbps {
                return err(
                    "start_rate_mbps",
                    format!("{r} exceeds max_rate_mbps {}", self.max_rate_mbps),
                );
            }
        }
        if self.init_window == 0 {
            return err(
                "init_window",
                "must be at least 1 packet, got 0".to_string(),
            );
        }
        if let Some(s) = self.stop {
            if !(s.is_finite() && s >= 0.0) {
                return err("stop", format!("must be a non-negative time in s, got {s}"));
            }
        }
        Ok(())
    }
}

pub use super::udp::UdpParams;

/// `cs_tp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcState {
    /// `cs_init`
    Init,
    /// `cs_cong_avoid`
    CongAvoid,
    /// `cs_in_loss`
    InLoss,
    /// `cs_in_cwr`
    InCwr,
}

/// `cca_tp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcaMode {
    /// `cca_prague_win`: window-based, rate = window / srtt.
    Win,
    /// `cca_prague_rate`: rate-based (when srtt <= 2 ms or <= one pacing interval).
    Rate,
}

/// libprague's `div_64_64_round`: a / d rounded to nearest (saturating on d = 0).
fn div_round(a: u128, d: u128) -> u128 {
    if d == 0 {
        return u64::MAX as u128;
    }
    (a + d / 2) / d
}

/// The sender-side state of `PragueCC` (`PragueState`), in libprague's units:
/// times in µs, rates in B/s, windows in µB.
#[derive(Clone, Debug)]
pub struct PragueCc {
    // parameters
    init_rate: u64,
    min_rate: u64,
    max_rate: u64,
    max_packet_size: u64,
    // `m_ts_remote`: frozen remote timestamp (ns here), None before the first ACK.
    ts_remote: Option<i128>,
    /// `m_r_prev_ts`: newest remote timestamp seen (ns).
    r_prev_ts: u64,
    /// `m_rtt`, `m_srtt`, `m_vrtt` (µs).
    pub rtt: i64,
    pub srtt: i64,
    pub vrtt: i64,
    // latest counters from the receiver
    packets_received: i64,
    packets_ce: i64,
    packets_lost: i64,
    error_l4s: bool,
    // alpha round
    alpha_ts: i64,
    alpha_packets_received: i64,
    alpha_packets_ce: i64,
    alpha_packets_sent: i64,
    // loss / undo
    loss_ts: i64,
    loss_cca: CcaMode,
    lost_window: u64,
    lost_rate: u64,
    lost_rtts_to_growth: i64,
    loss_packets_lost: i64,
    loss_packets_sent: i64,
    // cwr
    cwr_ts: i64,
    cwr_packets_sent: i64,
    // control variables
    pub cc_state: CcState,
    pub cca_mode: CcaMode,
    pub rtts_to_growth: i64,
    /// `m_alpha`, fixed point with `PROB_SHIFT` fractional bits.
    pub alpha: i64,
    /// `m_pacing_rate`, B/s.
    pub pacing_rate: u64,
    /// `m_fractional_window`, µB.
    pub fractional_window: u64,
    pub packet_burst: u64,
    pub packet_size: u64,
    pub packet_window: u64,
}

impl PragueCc {
    /// `PragueCC::PragueCC(max_packet_size, fps = 0, frame_budget = 0, init_rate, init_window,
    /// min_rate, max_rate)`.
    pub fn new(
        max_packet_size: u64,
        init_rate: u64,
        init_window: u64,
        min_rate: u64,
        max_rate: u64,
        now_us: i64,
    ) -> PragueCc {
        let mut cc = PragueCc {
            init_rate,
            min_rate,
            max_rate,
            max_packet_size,
            ts_remote: None,
            r_prev_ts: 0,
            rtt: 0,
            srtt: 0,
            vrtt: 0,
            packets_received: 0,
            packets_ce: 0,
            packets_lost: 0,
            error_l4s: false,
            alpha_ts: now_us,
            alpha_packets_received: 0,
            alpha_packets_ce: 0,
            alpha_packets_sent: 0,
            loss_ts: 0,
            loss_cca: CcaMode::Win,
            lost_window: 0,
            lost_rate: 0,
            lost_rtts_to_growth: 0,
            loss_packets_lost: 0,
            loss_packets_sent: 0,
            cwr_ts: 0,
            cwr_packets_sent: 0,
            cc_state: CcState::Init,
            cca_mode: CcaMode::Win,
            rtts_to_growth: (init_rate / RATE_STEP) as i64 + MIN_STEP,
            alpha: 0,
            pacing_rate: init_rate,
            fractional_window: init_window * max_packet_size * 1_000_000,
            packet_burst: MIN_PKT_BURST,
            packet_size: max_packet_size,
            packet_window: MIN_PKT_WIN,
        };
        // The constructor sizes packets with the reference RTT (vrtt is still 0).
        cc.packet_size = cc.size_for(REF_RTT_US);
        cc.packet_burst = cc.burst();
        let w = (cc.fractional_window / 1_000_000).div_ceil(cc.packet_size);
        cc.packet_window = w.max(MIN_PKT_WIN);
        cc
    }

    /// `m_packet_size = pacing_rate * rtt / 2`, clamped to [`PRAGUE_MINMTU`, max_packet_size].
    fn size_for(&self, rtt_us: i64) -> u64 {
        let s = self.pacing_rate as u128 * rtt_us.max(0) as u128 / 1_000_000 / MIN_PKT_WIN as u128;
        (s as u64).clamp(PRAGUE_MINMTU, self.max_packet_size)
    }

    /// `m_packet_burst = pacing_rate * BURST_TIME / packet_size`, at least `MIN_PKT_BURST`.
    fn burst(&self) -> u64 {
        (self.pacing_rate as u128 * BURST_TIME_US as u128 / 1_000_000 / self.packet_size as u128)
            .max(MIN_PKT_BURST as u128) as u64
    }

    fn set_vrtt(&mut self) {
        self.vrtt = self.srtt.max(REF_RTT_US);
    }

    /// `PacketReceived(timestamp, echoed_timestamp)`: freeze the peer's timestamp and take an
    /// RTT sample (ns in, µs kept). Returns false for an older packet (ignored).
    pub fn packet_received(&mut self, now: SimTime, timestamp: SimTime, echoed: SimTime) -> bool {
        if self.cc_state != CcState::Init && self.r_prev_ts > timestamp {
            return false;
        }
        self.ts_remote = Some(now as i128 - timestamp as i128);
        self.rtt = ((now as i128 - echoed as i128) / US as i128) as i64;
        if self.cc_state != CcState::Init {
            // `m_srtt += (m_rtt - m_srtt) >> 3` (arithmetic shift)
            self.srtt += (self.rtt - self.srtt) >> 3;
        } else {
            self.srtt = self.rtt;
        }
        self.set_vrtt();
        self.r_prev_ts = timestamp;
        true
    }

    /// `GetTimeInfo`: (timestamp, echoed_timestamp, ecn) for a packet sent now.
    pub fn time_info(&self, now: SimTime) -> (SimTime, SimTime, Ecn) {
        let echoed = match self.ts_remote {
            Some(r) => (now as i128 - r).max(0) as SimTime,
            None => 0,
        };
        let ecn = if self.error_l4s {
            Ecn::NotEct
        } else {
            Ecn::Ect1
        };
        (now, echoed, ecn)
    }

    /// `ACKReceived(packets_received, packets_CE, packets_lost, packets_sent, error_L4S,
    /// &inflight)`. Returns the packets in flight, or None for an old ACK (ignored).
    pub fn ack_received(
        &mut self,
        now_us: i64,
        packets_received: i64,
        packets_ce: i64,
        packets_lost: i64,
        packets_sent: i64,
        error_l4s: bool,
    ) -> Option<i64> {
        if self.packets_received > packets_received || self.packets_ce > packets_ce {
            return None;
        }
        let pacing_interval = (self.packet_size * 1_000_000 / self.pacing_rate.max(1)) as i64;
        let srtt = self.srtt.max(1);

        if self.cc_state == CcState::Init {
            self.fractional_window = srtt as u64 * self.pacing_rate;
            self.cc_state = CcState::CongAvoid;
        }
        // Rate- or window-based mode; keep the rate when switching to the window.
        if srtt <= 2000 || srtt <= pacing_interval {
            self.cca_mode = CcaMode::Rate;
        } else {
            if self.cca_mode == CcaMode::Rate {
                self.fractional_window = srtt as u64 * self.pacing_rate;
            }
            self.cca_mode = CcaMode::Win;
        }
        let ts = now_us;

        // Alpha: once per (real and virtual) RTT, EWMA of the CE fraction with gain 1/16.
        if packets_received + packets_lost - self.alpha_packets_sent > 0
            && ts - self.alpha_ts - self.vrtt >= 0
        {
            let received = packets_received - self.alpha_packets_received;
            if received > 0 {
                let prob = ((packets_ce - self.alpha_packets_ce) << PROB_SHIFT) / received;
                self.alpha += (prob - self.alpha) / (1 << ALPHA_SHIFT);
                self.alpha = self.alpha.min(MAX_PROB);
            }
            self.alpha_packets_sent = packets_sent;
            self.alpha_packets_ce = packets_ce;
            self.alpha_packets_received = packets_received;
            self.alpha_ts = ts;
            if self.rtts_to_growth > 0 {
                self.rtts_to_growth -= 1;
            }
        }

        // Undo a loss reduction when the lost counter came back down (reordering).
        if (self.lost_window > 0 || self.lost_rate > 0)
            && self.loss_packets_lost - packets_lost >= 0
        {
            self.cca_mode = self.loss_cca;
            if self.cca_mode == CcaMode::Rate {
                self.pacing_rate += self.lost_rate;
                self.lost_rate = 0;
            } else {
                self.fractional_window += self.lost_window;
                self.lost_window = 0;
            }
            self.rtts_to_growth = (self.rtts_to_growth - self.lost_rtts_to_growth).max(0);
            self.lost_rtts_to_growth = 0;
            self.cc_state = CcState::CongAvoid;
        }

        // Leave in_loss after a real and a virtual RTT.
        if self.cc_state == CcState::InLoss
            && packets_received + packets_lost - self.loss_packets_sent > 0
            && ts - self.loss_ts - self.vrtt >= 0
        {
            self.cc_state = CcState::CongAvoid;
        }

        // Loss: halve the window (or rate), at most once per RTT.
        if self.cc_state != CcState::InLoss && packets_lost > self.packets_lost {
            let vrtt = self.vrtt.max(1);
            let rtts_to_growth =
                ((self.pacing_rate / 2 / self.max_packet_size) as i64 * REF_RTT_US / vrtt)
                    * REF_RTT_US
                    / 1_000_000;
            self.lost_rtts_to_growth += rtts_to_growth - self.rtts_to_growth;
            self.lost_rtts_to_growth = self.lost_rtts_to_growth.min(rtts_to_growth);
            self.rtts_to_growth = rtts_to_growth;
            if self.cca_mode == CcaMode::Win {
                self.lost_window = self.fractional_window / 2;
                self.fractional_window -= self.lost_window;
            } else {
                self.lost_rate = self.pacing_rate / 2;
                self.pacing_rate -= self.lost_rate;
            }
            self.cc_state = CcState::InLoss;
            self.loss_cca = self.cca_mode;
            self.loss_packets_sent = packets_sent;
            self.loss_ts = ts;
            self.loss_packets_lost = self.packets_lost;
        }

        // Additive increase for the non-CE ACKed packets, RTT-independent (scaled by
        // (srtt/vrtt)^2): one `increment` per vRTT, where increment is a max-size packet,
        // or 1 ms worth of pacing rate once `rtts_to_growth` has run out.
        let acks = (packets_received - self.packets_received) - (packets_ce - self.packets_ce);
        if self.cc_state != CcState::InLoss && acks > 0 {
            let mut increment = self.pacing_rate as u128 * QUEUE_GROWTH_US as u128 / 1_000_000;
            if increment < self.max_packet_size as u128 || self.rtts_to_growth != 0 {
                increment = self.max_packet_size as u128;
            }
            let acks = acks as u128;
            let vrtt = self.vrtt.max(1) as u128;
            if self.cca_mode == CcaMode::Win {
                let s = srtt as u128;
                let scaler = div_round(s * 1_000_000 * s, vrtt * vrtt);
                let increase = div_round(
                    acks * self.packet_size as u128 * scaler * 1_000_000,
                    self.fractional_window.max(1) as u128,
                );
                self.fractional_window = (self.fractional_window as u128 + increase * increment)
                    .min(u64::MAX as u128) as u64;
            } else {
                let invscaler = div_round(
                    self.pacing_rate as u128 * vrtt,
                    self.packet_size as u128 * 1_000_000,
                )
                .max(1);
                let increase = div_round(acks * increment * 1_000_000, vrtt);
                self.pacing_rate = (self.pacing_rate as u128 + div_round(increase, invscaler))
                    .min(u64::MAX as u128) as u64;
            }
        }

        // Leave in_cwr after a real and a virtual RTT.
        if self.cc_state == CcState::InCwr
            && packets_received + packets_lost - self.cwr_packets_sent > 0
            && ts - self.cwr_ts - self.vrtt >= 0
        {
            self.cc_state = CcState::CongAvoid;
        }

        // CE: reduce by alpha/2, at most once per RTT, and restart the wait for growth.
        if self.cc_state == CcState::CongAvoid && packets_ce > self.packets_ce {
            self.rtts_to_growth = (self.pacing_rate / RATE_STEP) as i64 + MIN_STEP;
            if self.cca_mode == CcaMode::Win {
                let cut = (self.fractional_window as u128 * self.alpha as u128) >> (PROB_SHIFT + 1);
                self.fractional_window -= cut as u64;
            } else {
                let cut = (self.pacing_rate as u128 * self.alpha as u128) >> (PROB_SHIFT + 1);
                self.pacing_rate -= cut as u64;
            }
            self.cc_state = CcState::InCwr;
            self.cwr_packets_sent = packets_sent;
            self.cwr_ts = ts;
        }

        // Dependent parameters.
        if self.cca_mode != CcaMode::Rate {
            self.pacing_rate = self.fractional_window / srtt as u64;
        }
        self.pacing_rate = self.pacing_rate.clamp(self.min_rate, self.max_rate);
        self.fractional_window = (self.pacing_rate * srtt as u64).max(1);
        self.packet_size = self.size_for(self.vrtt);
        self.packet_burst = self.burst();
        // Window with 3 % headroom, rounded up: it should not block pacing.
        let w = (self.fractional_window as u128 * (100 + RATE_OFFSET) as u128 / 100_000_000)
            / self.packet_size as u128
            + 1;
        self.packet_window = (w as u64).max(MIN_PKT_WIN);

        self.packets_received = packets_received;
        self.packets_ce = packets_ce;
        self.packets_lost = packets_lost;
        if error_l4s {
            self.error_l4s = true;
        }
        Some(packets_sent - self.packets_received - self.packets_lost)
    }

    /// `ResetCCInfo`: after `SND_TIMEOUT` without ACKs while window-limited.
    pub fn reset(&mut self, now_us: i64) {
        self.cc_state = CcState::Init;
        self.cca_mode = CcaMode::Win;
        self.alpha_ts = now_us;
        self.alpha = 0;
        self.pacing_rate = self.init_rate;
        self.fractional_window = self.max_packet_size * 1_000_000;
        self.packet_burst = MIN_PKT_BURST;
        self.packet_size = self.max_packet_size;
        self.packet_window = MIN_PKT_WIN;
        self.rtts_to_growth = (self.pacing_rate / RATE_STEP) as i64 + MIN_STEP;
        self.lost_rtts_to_growth = 0;
    }

    /// `GetCCInfo`: (pacing_rate B/s, packet_window, packet_burst, packet_size). The pacing
    /// rate is 3 % above the CC's rate in the first half of the vRTT since the last alpha
    /// update and 3 % below it in the second half.
    pub fn cc_info(&self, now_us: i64) -> (u64, u64, u64, u64) {
        let rate = if now_us - self.alpha_ts - (self.vrtt >> 1) >= 0 {
            self.pacing_rate * 100 / (100 + RATE_OFFSET)
        } else {
            self.pacing_rate * (100 + RATE_OFFSET) / 100
        };
        (
            rate.max(1),
            self.packet_window,
            self.packet_burst,
            self.packet_size,
        )
    }
}

fn to_us(t: SimTime) -> i64 {
    (t / US) as i64
}

/// The UDP Prague sender (`udp_prague_sender.cpp`, non-RT mode).
pub struct UdpPragueSender {
    p: UdpParams,
    stop: SimTime,
    cc: PragueCc,
    started: bool,
    done: bool,
    /// `seqnr`: last sequence number sent (= packets sent).
    seqnr: i64,
    /// `inflight` as `ACKReceived` last computed it, plus packets sent since.
    inflight: i64,
    /// Values of the last `GetCCInfo`.
    pacing_rate: u64,
    packet_window: u64,
    packet_burst: u64,
    packet_size: u64,
    /// `nextSend`.
    next_send: SimTime,
    /// Start of the current wait while window-limited (`waitTimeout = now + SND_TIMEOUT`).
    wait_since: SimTime,
    resets: u64,
    bytes_sent: u64,
}

impl UdpPragueSender {
    pub fn new(p: &UdpParams, spec: &UdpPragueSpec) -> Self {
        let max_rate = mbps_to_bytes_per_sec(spec.max_rate_mbps).max(1);
        let min_rate = mbps_to_bytes_per_sec(spec.min_rate_mbps).clamp(1, max_rate);
        let init_rate = spec
            .start_rate_mbps
            .map(mbps_to_bytes_per_sec)
            .unwrap_or(PRAGUE_INITRATE)
            .max(1);
        let cc = PragueCc::new(
            spec.packet_size as u64,
            init_rate,
            spec.init_window as u64,
            min_rate,
            max_rate,
            0,
        );
        let (r, w, b, s) = cc.cc_info(0);
        UdpPragueSender {
            p: p.clone(),
            stop: spec.stop.map(crate::time::secs).unwrap_or(NEVER),
            cc,
            started: false,
            done: false,
            seqnr: 0,
            inflight: 0,
            pacing_rate: r,
            packet_window: w,
            packet_burst: b,
            packet_size: s,
            next_send: NEVER,
            wait_since: 0,
            resets: 0,
            bytes_sent: 0,
        }
    }

    fn refresh_cc_info(&mut self, now: SimTime) {
        let (r, w, b, s) = self.cc.cc_info(to_us(now));
        self.pacing_rate = r;
        self.packet_window = w;
        self.packet_burst = b;
        self.packet_size = s;
    }

    /// Begins sending (the CC's clock starts now).
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.started {
            return;
        }
        self.started = true;
        self.cc.alpha_ts = to_us(now);
        self.refresh_cc_info(now);
        self.next_send = now;
        self.check_stop(now);
        self.send_due(now, out);
    }

    fn check_stop(&mut self, now: SimTime) {
        if now >= self.stop {
            self.done = true;
        }
    }

    fn window_limited(&self) -> bool {
        self.inflight >= self.packet_window as i64
    }

    /// The example's send loop: one burst if the window and pacing allow.
    fn send_due(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.done || !self.started {
            return;
        }
        let mut inburst = 0u64;
        while self.inflight < self.packet_window as i64
            && inburst < self.packet_burst
            && self.next_send <= now
        {
            let (ts, echoed, ecn) = self.cc.time_info(now);
            self.seqnr += 1;
            let mut pkt = Packet::new(self.p.flow, Dir::Fwd, self.p.sender, self.p.receiver);
            pkt.payload = self.packet_size as u32;
            pkt.len = hdr::ETH + hdr::IP + UDP_HDR + pkt.payload;
            pkt.group = self.p.group;
            pkt.dscp = self.p.dscp;
            pkt.ecn = ecn;
            pkt.skb = skb::UDP;
            pkt.seq = self.seqnr as u32;
            pkt.ts_val = ts;
            pkt.ts_ecr = echoed;
            pkt.hash = self.p.hash_fwd;
            out.push(pkt);
            self.bytes_sent += pkt.payload as u64;
            inburst += 1;
            self.inflight += 1;
        }
        if inburst > 0 {
            let gap = (self.packet_size as u128 * inburst as u128 * SEC as u128
                / self.pacing_rate as u128) as SimDuration;
            self.next_send = now + gap.max(1);
            self.wait_since = now;
        }
    }

    /// A feedback packet (`Dir::Rev`).
    pub fn on_packet(&mut self, pkt: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        if pkt.dir != Dir::Rev || pkt.flow != self.p.flow || !self.started {
            return;
        }
        self.cc.packet_received(now, pkt.ts_val, pkt.ts_ecr);
        let inflight = self.cc.ack_received(
            to_us(now),
            pkt.ack as i64,
            pkt.sack[0].0 as i64,
            pkt.sack[0].1 as i64,
            self.seqnr,
            pkt.has(flags::ECE),
        );
        if let Some(i) = inflight {
            self.inflight = i;
        }
        self.refresh_cc_info(now);
        self.wait_since = now;
        self.check_stop(now);
        self.send_due(now, out);
    }

    /// Pacing (send what is due), the stop time, and the window-limited `SND_TIMEOUT`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.check_stop(now);
        if self.done || !self.started {
            return;
        }
        if self.window_limited() && now >= self.wait_since + SND_TIMEOUT_US * US {
            // `ResetCCInfo`, `inflight = 0`, `nextSend = now`.
            self.cc.reset(to_us(now));
            self.inflight = 0;
            self.resets += 1;
            self.refresh_cc_info(now);
            self.next_send = now;
        }
        self.send_due(now, out);
    }

    pub fn next_timer(&self) -> SimTime {
        if self.done || !self.started {
            return NEVER;
        }
        let t = if self.window_limited() {
            self.wait_since.saturating_add(SND_TIMEOUT_US * US)
        } else {
            self.next_send
        };
        t.min(self.stop)
    }

    /// The CC's rate (`m_pacing_rate`), bit/s of UDP payload.
    pub fn pacing_rate_bps(&self) -> f64 {
        self.cc.pacing_rate as f64 * 8.0
    }
    /// `m_fractional_window` in bytes.
    pub fn cwnd_bytes(&self) -> u64 {
        self.cc.fractional_window / 1_000_000
    }
    /// `m_srtt`.
    pub fn srtt(&self) -> SimDuration {
        self.cc.srtt.max(0) as u64 * US
    }
    pub fn packets_sent(&self) -> u64 {
        self.seqnr as u64
    }
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }
    /// `ResetCCInfo` calls after `SND_TIMEOUT`.
    pub fn resets(&self) -> u64 {
        self.resets
    }
    /// `m_alpha` as a fraction.
    pub fn alpha(&self) -> f64 {
        self.cc.alpha as f64 / MAX_PROB as f64
    }
    /// CE marks the receiver has echoed (`packets_CE` of the latest ACK).
    pub fn ce_fed_back(&self) -> u64 {
        self.cc.packets_ce as u64
    }
    /// The CC state, for inspection.
    pub fn cc(&self) -> &PragueCc {
        &self.cc
    }
    pub fn done(&self) -> bool {
        self.done
    }
}

/// One receiver record per 100 ms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpRecord {
    /// End of the interval, s.
    pub t: f64,
    /// UDP payload received in the interval, Mbit/s.
    pub rate_mbps: f64,
    /// Mean of the receiver's RTT samples (`now - echoed_timestamp` of data packets) in the
    /// interval, ms; NaN when there was none.
    pub rtt_ms: f64,
    /// CE-marked / received packets in the interval.
    pub mark_frac: f64,
    /// Lost / (received + lost) packets in the interval (receiver's `packets_lost` delta).
    pub loss_frac: f64,
}

const RECORD_INTERVAL: SimDuration = 100 * MS;

/// The UDP Prague receiver (`udp_prague_receiver.cpp`, per-packet ACKs).
pub struct UdpPragueReceiver {
    p: UdpParams,
    /// `m_r_packets_received`, `m_r_packets_CE`, `m_r_packets_lost`, `m_r_error_L4S`.
    r_packets_received: i64,
    r_packets_ce: i64,
    r_packets_lost: i64,
    r_error_l4s: bool,
    /// `m_ts_remote` (ns).
    ts_remote: Option<i128>,
    bytes_received: u64,
    // current record interval (None: none open) and the first interval not yet recorded
    rec_index: Option<u64>,
    rec_next: Option<u64>,
    rec_bytes: u64,
    rec_rtt_sum: f64,
    rec_rtt_n: u64,
    rec_recv0: i64,
    rec_ce0: i64,
    rec_lost0: i64,
    records: Vec<UdpRecord>,
}

impl UdpPragueReceiver {
    pub fn new(p: &UdpParams) -> Self {
        UdpPragueReceiver {
            p: p.clone(),
            r_packets_received: 0,
            r_packets_ce: 0,
            r_packets_lost: 0,
            r_error_l4s: false,
            ts_remote: None,
            bytes_received: 0,
            rec_index: None,
            rec_next: None,
            rec_bytes: 0,
            rec_rtt_sum: 0.0,
            rec_rtt_n: 0,
            rec_recv0: 0,
            rec_ce0: 0,
            rec_lost0: 0,
            records: Vec::new(),
        }
    }

    /// Empty records for intervals `from..upto`.
    fn empty_records(&mut self, from: u64, upto: u64) {
        for j in from..upto {
            self.records.push(UdpRecord {
                t: ((j + 1) * RECORD_INTERVAL) as f64 / 1e9,
                rate_mbps: 0.0,
                rtt_ms: f64::NAN,
                mark_frac: 0.0,
                loss_frac: 0.0,
            });
        }
    }

    /// Close the open interval and every empty one before interval `upto`.
    fn close_records(&mut self, upto: u64) {
        let Some(k) = self.rec_index else { return };
        if k >= upto {
            return;
        }
        let secs = RECORD_INTERVAL as f64 / 1e9;
        let recv = self.r_packets_received - self.rec_recv0;
        let ce = self.r_packets_ce - self.rec_ce0;
        let lost = (self.r_packets_lost - self.rec_lost0).max(0);
        self.records.push(UdpRecord {
            t: ((k + 1) * RECORD_INTERVAL) as f64 / 1e9,
            rate_mbps: self.rec_bytes as f64 * 8.0 / secs / 1e6,
            rtt_ms: if self.rec_rtt_n > 0 {
                self.rec_rtt_sum / self.rec_rtt_n as f64 / 1e6
            } else {
                f64::NAN
            },
            mark_frac: if recv > 0 {
                ce as f64 / recv as f64
            } else {
                0.0
            },
            loss_frac: if recv + lost > 0 {
                lost as f64 / (recv + lost) as f64
            } else {
                0.0
            },
        });
        self.empty_records(k + 1, upto);
        self.rec_next = Some(upto);
        self.rec_index = None;
        self.rec_bytes = 0;
        self.rec_rtt_sum = 0.0;
        self.rec_rtt_n = 0;
        self.rec_recv0 = self.r_packets_received;
        self.rec_ce0 = self.r_packets_ce;
        self.rec_lost0 = self.r_packets_lost;
    }

    /// A data packet (`Dir::Fwd`): counters (`DataReceivedSequence`), timestamps
    /// (`PacketReceived`), then one ACK (`GetTimeInfo` + `GetACKInfo`).
    pub fn on_packet(&mut self, pkt: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        if pkt.dir != Dir::Fwd || pkt.flow != self.p.flow {
            return;
        }
        let k = now / RECORD_INTERVAL;
        match self.rec_index {
            Some(open) if open < k => {
                self.close_records(k);
            }
            _ => {}
        }
        if self.rec_index.is_none() {
            // The first interval, or the first after a silence: record the silent intervals
            // as empty. Counter baselines were set when the previous interval closed.
            if let Some(n) = self.rec_next {
                self.empty_records(n, k);
            }
            self.rec_index = Some(k);
        }

        // `PacketReceived`: the receiver's PragueCC never leaves `cs_init` (it never gets
        // `ACKReceived`), so its older-timestamp check never applies: every packet freezes
        // the timestamp and gives an RTT sample (`m_rtt = now - echoed_timestamp`).
        self.ts_remote = Some(now as i128 - pkt.ts_val as i128);
        if pkt.ts_ecr != 0 && now >= pkt.ts_ecr {
            self.rec_rtt_sum += (now - pkt.ts_ecr) as f64;
            self.rec_rtt_n += 1;
        }
        // `DataReceivedSequence(ip_ecn, seq_nr)`.
        self.r_packets_received += 1;
        let skipped = pkt.seq as i64 - self.r_packets_received - self.r_packets_lost;
        if skipped >= 0 {
            self.r_packets_lost += skipped;
        } else if self.r_packets_lost > 0 {
            self.r_packets_lost -= 1;
        }
        match pkt.ecn {
            Ecn::Ce => self.r_packets_ce += 1,
            Ecn::Ect1 => {}
            _ => self.r_error_l4s = true,
        }
        self.bytes_received += pkt.payload as u64;
        self.rec_bytes += pkt.payload as u64;

        let mut ack = Packet::new(self.p.flow, Dir::Rev, self.p.receiver, self.p.sender);
        ack.payload = 0;
        ack.len = hdr::ETH + hdr::IP + UDP_HDR + ACK_MSG_BYTES;
        ack.group = self.p.group;
        ack.ecn = Ecn::Ect1;
        ack.seq = pkt.seq;
        ack.skb = skb::UDP;
        ack.ts_val = now;
        ack.ts_ecr = match self.ts_remote {
            Some(r) => (now as i128 - r).max(0) as SimTime,
            None => 0,
        };
        ack.ack = self.r_packets_received as u32;
        ack.sack[0] = (self.r_packets_ce as u32, self.r_packets_lost as u32);
        if self.r_error_l4s {
            ack.flags |= flags::ECE;
        }
        ack.hash = self.p.hash_rev;
        out.push(ack);
    }

    /// Closes the open 100 ms record at its end.
    pub fn on_timer(&mut self, now: SimTime, _out: &mut Vec<Packet>) {
        if let Some(k) = self.rec_index {
            if now >= (k + 1) * RECORD_INTERVAL {
                self.close_records(k + 1);
            }
        }
    }

    /// End of the open record interval (NEVER when none is open).
    pub fn next_timer(&self) -> SimTime {
        match self.rec_index {
            Some(k) => (k + 1) * RECORD_INTERVAL,
            None => NEVER,
        }
    }

    /// Per-100 ms records completed since the last [`Self::take_records`].
    pub fn records(&self) -> &[UdpRecord] {
        &self.records
    }
    /// Per-100 ms records completed so far (drained).
    pub fn take_records(&mut self) -> Vec<UdpRecord> {
        std::mem::take(&mut self.records)
    }
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received
    }
    pub fn packets_received(&self) -> u64 {
        self.r_packets_received as u64
    }
    pub fn ce_received(&self) -> u64 {
        self.r_packets_ce as u64
    }
    /// `m_r_packets_lost`.
    pub fn packets_lost(&self) -> u64 {
        self.r_packets_lost.max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    enum Marking {
        None,
        /// CE when the sojourn at dequeue exceeds this.
        Step(SimDuration),
        /// CE with this probability.
        Prob(f64),
    }

    /// A FIFO bottleneck of fixed rate with a fixed propagation delay each way; feedback
    /// returns after a fixed delay without queueing.
    struct Link {
        rate_bps: u64,
        fwd_delay: SimDuration,
        rev_delay: SimDuration,
        marking: Marking,
        /// Drop the first data packet arriving at or after each of these times.
        drop_at: Vec<SimTime>,
        busy_until: SimTime,
        rng: Rng,
    }

    impl Link {
        fn new(rate_mbps: f64, rtt: SimDuration, marking: Marking) -> Link {
            Link {
                rate_bps: (rate_mbps * 1e6) as u64,
                fwd_delay: rtt / 2,
                rev_delay: rtt / 2,
                marking,
                drop_at: Vec::new(),
                busy_until: 0,
                rng: Rng::new(7, crate::rng::stream::TRAFFIC),
            }
        }
    }

    #[derive(Default)]
    struct Trace {
        /// (time, CC pacing rate bit/s) after every event.
        rate: Vec<(SimTime, f64)>,
        /// (arrival time, sojourn) of every data packet at the bottleneck.
        sojourn: Vec<(SimTime, SimDuration)>,
        records: Vec<UdpRecord>,
        last_send: SimTime,
        dropped: u64,
    }

    fn params() -> UdpParams {
        UdpParams {
            flow: 3,
            group: 0,
            dscp: 0,
            sender: 1,
            receiver: 2,
            hash_fwd: 11,
            hash_rev: 12,
        }
    }

    fn run(
        snd: &mut UdpPragueSender,
        rcv: &mut UdpPragueReceiver,
        link: &mut Link,
        end: SimTime,
    ) -> Trace {
        let mut tr = Trace::default();
        let mut heap: BinaryHeap<Reverse<(SimTime, u64, usize)>> = BinaryHeap::new();
        let mut slab: Vec<Packet> = Vec::new();
        let mut order = 0u64;
        let mut out = Vec::new();
        snd.start(0, &mut out);
        let mut now = 0;
        loop {
            for p in out.drain(..) {
                let at = if p.dir == Dir::Fwd {
                    tr.last_send = now;
                    if let Some(i) = link.drop_at.iter().position(|&t| now >= t) {
                        link.drop_at.remove(i);
                        tr.dropped += 1;
                        continue;
                    }
                    let start = now.max(link.busy_until);
                    let sojourn = start - now;
                    tr.sojourn.push((now, sojourn));
                    link.busy_until = start + (p.len as u64 * 8 * SEC).div_ceil(link.rate_bps);
                    let mut p = p;
                    let mark = match link.marking {
                        Marking::None => false,
                        Marking::Step(th) => sojourn > th,
                        Marking::Prob(pr) => link.rng.uniform() < pr,
                    };
                    if mark {
                        p.ecn.set_ce();
                    }
                    slab.push(p);
                    link.busy_until + link.fwd_delay
                } else {
                    slab.push(p);
                    now + link.rev_delay
                };
                heap.push(Reverse((at, order, slab.len() - 1)));
                order += 1;
            }
            tr.rate.push((now, snd.pacing_rate_bps()));
            let th = heap.peek().map(|r| r.0 .0).unwrap_or(NEVER);
            let ts = snd.next_timer();
            let trr = rcv.next_timer();
            now = th.min(ts).min(trr);
            if now == NEVER || now > end {
                break;
            }
            if th == now {
                let Reverse((_, _, i)) = heap.pop().unwrap();
                let p = slab[i];
                if p.dir == Dir::Fwd {
                    rcv.on_packet(&p, now, &mut out);
                } else {
                    snd.on_packet(&p, now, &mut out);
                }
            } else if ts == now {
                snd.on_timer(now, &mut out);
            } else {
                rcv.on_timer(now, &mut out);
            }
        }
        tr.records = rcv.take_records();
        tr
    }

    fn flow(spec: &UdpPragueSpec) -> (UdpPragueSender, UdpPragueReceiver) {
        spec.validate().unwrap();
        let p = params();
        (UdpPragueSender::new(&p, spec), UdpPragueReceiver::new(&p))
    }

    fn mean_rate(recs: &[UdpRecord], from: f64, to: f64) -> f64 {
        let v: Vec<f64> = recs
            .iter()
            .filter(|r| r.t > from && r.t <= to)
            .map(|r| r.rate_mbps)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    }

    #[test]
    fn reaches_max_rate_on_an_idle_link_and_stays_there() {
        let spec = UdpPragueSpec::default();
        let (mut s, mut r) = flow(&spec);
        let mut link = Link::new(20.0, 20 * MS, Marking::None);
        let tr = run(&mut s, &mut r, &mut link, 6 * SEC);
        let first_max = tr
            .rate
            .iter()
            .find(|x| x.1 >= 5e6)
            .expect("never reached max rate")
            .0;
        assert!(first_max < 2 * SEC, "reached 5 Mbit/s only at {first_max}");
        assert!(tr
            .rate
            .iter()
            .filter(|x| x.0 >= 2 * SEC)
            .all(|x| x.1 == 5e6));
        let m = mean_rate(&tr.records, 2.0, 6.0);
        assert!((m - 5.0).abs() < 0.1, "received {m} Mbit/s");
        assert_eq!(r.ce_received(), 0);
        assert_eq!(r.packets_lost(), 0);
        assert!(
            s.packets_sent() - r.packets_received() < 20,
            "only the packets in flight are missing"
        );
        // Full-size packets at this rate, ECT(1).
        assert_eq!(s.cc().packet_size, 1200);
        assert!(
            (s.srtt() as i64 - 20 * MS as i64).abs() < 3 * MS as i64,
            "srtt {}",
            s.srtt()
        );
    }

    #[test]
    fn fills_a_slower_link_with_a_small_queue_under_step_marking() {
        let spec = UdpPragueSpec::default();
        let (mut s, mut r) = flow(&spec);
        let mut link = Link::new(4.0, 20 * MS, Marking::Step(MS));
        let tr = run(&mut s, &mut r, &mut link, 10 * SEC);
        let payload_cap = 4.0 * 1200.0 / 1242.0;
        let m = mean_rate(&tr.records, 3.0, 10.0);
        assert!(
            m > 0.85 * payload_cap && m <= payload_cap * 1.001,
            "received {m} of {payload_cap} Mbit/s"
        );
        let mut soj: Vec<SimDuration> = tr
            .sojourn
            .iter()
            .filter(|x| x.0 >= 3 * SEC)
            .map(|x| x.1)
            .collect();
        soj.sort();
        let p99 = soj[soj.len() * 99 / 100];
        let mean = soj.iter().sum::<u64>() as f64 / soj.len() as f64;
        // At 4 Mbit/s one 1242-byte packet takes 2.5 ms to serialize, so the 1 ms step marks
        // whenever one packet waits: the queue stays within about two packets.
        assert!(p99 < 5 * MS, "p99 sojourn {p99} ns");
        assert!(mean < 2e6, "mean sojourn {mean} ns");
        assert!(r.ce_received() > 0);
        assert_eq!(r.packets_lost(), 0);
    }

    #[test]
    fn reduces_its_rate_under_ten_percent_marking() {
        let spec = UdpPragueSpec {
            max_rate_mbps: 20.0,
            ..Default::default()
        };
        let (mut s0, mut r0) = flow(&spec);
        let tr0 = run(
            &mut s0,
            &mut r0,
            &mut Link::new(50.0, 20 * MS, Marking::None),
            6 * SEC,
        );
        let unmarked = mean_rate(&tr0.records, 3.0, 6.0);
        let (mut s, mut r) = flow(&spec);
        let tr = run(
            &mut s,
            &mut r,
            &mut Link::new(50.0, 20 * MS, Marking::Prob(0.1)),
            6 * SEC,
        );
        let marked = mean_rate(&tr.records, 3.0, 6.0);
        assert!(unmarked > 19.0, "unmarked {unmarked}");
        assert!(
            marked < 0.6 * unmarked,
            "marked {marked} vs unmarked {unmarked}"
        );
        assert!((s.alpha() - 0.1).abs() < 0.04, "alpha {}", s.alpha());
        let mf: f64 = tr
            .records
            .iter()
            .filter(|x| x.t > 1.0)
            .map(|x| x.mark_frac)
            .sum::<f64>()
            / tr.records.iter().filter(|x| x.t > 1.0).count() as f64;
        assert!((mf - 0.1).abs() < 0.02, "mark fraction {mf}");
    }

    #[test]
    fn halves_its_rate_on_a_loss() {
        let spec = UdpPragueSpec::default();
        let (mut s, mut r) = flow(&spec);
        let mut link = Link::new(20.0, 20 * MS, Marking::None);
        link.drop_at = vec![3 * SEC];
        let tr = run(&mut s, &mut r, &mut link, 4 * SEC);
        assert_eq!(tr.dropped, 1);
        assert!(tr
            .rate
            .iter()
            .filter(|x| x.0 < 3 * SEC && x.0 > 2 * SEC)
            .all(|x| x.1 == 5e6));
        let after: Vec<f64> = tr
            .rate
            .iter()
            .filter(|x| x.0 > 3 * SEC && x.0 < 3 * SEC + 200 * MS)
            .map(|x| x.1)
            .collect();
        let min = after.iter().cloned().fold(f64::MAX, f64::min);
        assert!(
            (2.4e6..=2.6e6).contains(&min),
            "min rate after the loss {min}"
        );
        assert_eq!(r.packets_lost(), 1);
        let lossy = tr.records.iter().find(|x| x.loss_frac > 0.0).unwrap();
        assert!(lossy.t > 3.0 && lossy.t <= 3.2);
    }

    #[test]
    fn records_every_100ms_with_rate_rtt_mark_and_loss_fractions() {
        let p = params();
        let mut r = UdpPragueReceiver::new(&p);
        let mut out = Vec::new();
        // 0.1-0.2 s: seq 1..=100 every ms except 5 lost ones (seq % 20 == 0), every 10th
        // received one CE, each echoing a timestamp 30 ms old.
        let mut n = 0;
        for seq in 1..=100u32 {
            let now = 100 * MS + (seq as u64 - 1) * MS;
            if seq % 20 == 0 {
                continue;
            }
            let mut d = Packet::new(p.flow, Dir::Fwd, p.sender, p.receiver);
            d.payload = 1000;
            d.len = hdr::ETH + hdr::IP + 8 + 1000;
            d.seq = seq;
            d.ts_val = now - 10 * MS;
            d.ts_ecr = now - 30 * MS;
            n += 1;
            d.ecn = if n % 10 == 0 { Ecn::Ce } else { Ecn::Ect1 };
            r.on_packet(&d, now, &mut out);
        }
        assert_eq!(out.len(), 95);
        let last = out.last().unwrap();
        assert_eq!(
            (last.dir, last.ack, last.sack[0], last.seq, last.payload),
            (Dir::Rev, 95, (9, 4), 99, 0)
        );
        assert_eq!(last.len, hdr::ETH + hdr::IP + 8 + 26);
        assert_eq!(r.next_timer(), 200 * MS);
        r.on_timer(200 * MS, &mut out);
        // One more packet at 0.45 s fills 0.2-0.4 with empty records.
        let mut d = Packet::new(p.flow, Dir::Fwd, p.sender, p.receiver);
        d.payload = 1000;
        d.seq = 101;
        d.ecn = Ecn::Ect1;
        r.on_packet(&d, 450 * MS, &mut out);
        r.on_timer(500 * MS, &mut out);
        let recs = r.take_records();
        assert_eq!(recs.len(), 4);
        assert!((recs[0].t - 0.2).abs() < 1e-12);
        assert!((recs[0].rate_mbps - 95.0 * 1000.0 * 8.0 / 0.1 / 1e6).abs() < 1e-9);
        assert!((recs[0].rtt_ms - 30.0).abs() < 1e-9);
        assert!((recs[0].mark_frac - 9.0 / 95.0).abs() < 1e-12);
        assert!(
            (recs[0].loss_frac - 4.0 / 99.0).abs() < 1e-12,
            "{}",
            recs[0].loss_frac
        );
        assert!(recs[1].rate_mbps == 0.0 && recs[2].rate_mbps == 0.0 && recs[1].rtt_ms.is_nan());
        assert!((recs[3].t - 0.5).abs() < 1e-12 && (recs[3].rate_mbps - 0.08).abs() < 1e-12);
        assert!(
            (recs[3].loss_frac - 1.0 / 2.0).abs() < 1e-12,
            "seq 100 counted lost now"
        );
        assert!(r.take_records().is_empty());
        assert_eq!(r.next_timer(), NEVER);
    }

    #[test]
    fn stop_ends_sending() {
        let spec = UdpPragueSpec {
            stop: Some(2.0),
            ..Default::default()
        };
        let (mut s, mut r) = flow(&spec);
        let mut link = Link::new(20.0, 20 * MS, Marking::None);
        let tr = run(&mut s, &mut r, &mut link, 4 * SEC);
        assert!(s.done());
        assert!(s.packets_sent() > 100);
        assert!(tr.last_send < 2 * SEC && tr.last_send > 2 * SEC - 10 * MS);
        assert_eq!(s.next_timer(), NEVER);
        assert_eq!(
            r.packets_received(),
            s.packets_sent(),
            "all sent packets arrived before 4 s"
        );
    }

    #[test]
    fn a_loss_reported_then_retracted_is_undone() {
        // Window mode (srtt 40 ms), steady at 2 Mbit/s: a lost packet halves the window; when
        // the receiver's lost counter goes back down (the packet was reordered), ACKReceived
        // restores it.
        let mut cc = PragueCc::new(1200, 250_000, 10, PRAGUE_MINRATE, 625_000, 0);
        cc.packet_received(40 * MS, 0, 0);
        assert_eq!(cc.srtt, 40_000);
        cc.ack_received(40_000, 1, 0, 0, 10, false).unwrap();
        assert_eq!(cc.cca_mode, CcaMode::Win);
        let w = cc.fractional_window;
        cc.ack_received(41_000, 1, 0, 1, 11, false).unwrap();
        assert_eq!(cc.cc_state, CcState::InLoss);
        assert_eq!(cc.fractional_window, w / 2);
        assert_eq!(cc.pacing_rate, (w / 2) / 40_000);
        cc.ack_received(42_000, 3, 0, 0, 12, false).unwrap();
        assert_eq!(cc.cc_state, CcState::CongAvoid);
        assert!(cc.fractional_window >= w, "{} < {w}", cc.fractional_window);
    }

    #[test]
    fn old_acks_are_ignored() {
        let mut cc = PragueCc::new(1200, 250_000, 10, PRAGUE_MINRATE, 625_000, 0);
        cc.packet_received(40 * MS, 0, 0);
        assert!(cc.ack_received(40_000, 5, 2, 0, 10, false).is_some());
        assert!(cc.ack_received(41_000, 4, 2, 0, 10, false).is_none());
        assert!(cc.ack_received(41_000, 5, 1, 0, 10, false).is_none());
    }

    #[test]
    fn validate_names_the_bad_field() {
        assert!(UdpPragueSpec::default().validate().is_ok());
        let bad = UdpPragueSpec {
            min_rate_mbps: 6.0,
            ..Default::default()
        };
        assert_eq!(bad.validate().unwrap_err().0, "min_rate_mbps");
        let bad = UdpPragueSpec {
            packet_size: 100,
            ..Default::default()
        };
        let (f, m) = bad.validate().unwrap_err();
        assert_eq!(f, "packet_size");
        assert!(m.contains("100"));
        let e: Result<UdpPragueSpec, _> =
            serde_json::from_str(r#"{"max_rate_mbps": 5, "fps": 30}"#);
        assert!(e.is_err());
    }
}
