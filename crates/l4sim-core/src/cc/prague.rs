//! TCP Prague, following the L4STeam out-of-tree `net/ipv4/tcp_prague.c`.
//!
//! Default variant `v0.6`: the v0.6 code with classic-ECN detection and the `cwnd_cnt`
//! window carry (the "P06-cnt" file, the most likely build in the 5.15.72-prague-43 test
//! kernel). Selectable `v0.7`: the 2024 rewrite (`L4STeam/linux@893e1479`), window mode.
//!
//! v0.6, as in the code:
//! - owns cwnd and pacing through `cong_control`: per ACK, only segments not reported CE
//!   (`acked_sacked - ece_delta`) earn an increase of `ai_ack_increase / cwnd` (2^-20
//!   units) into the carry `cwnd_cnt`; Reno slow start below ssthresh; the real cwnd moves
//!   by at most one segment per ACK; every step down sets ssthresh = cwnd;
//! - alpha EWMA with g = 1/16 (upscaled by 16, 2^20 = 1.0, initial 1.0), once per round and
//!   only after CE was seen; in RTT-independent mode also >= R (25 ms) apart;
//! - entering CWR: `cwnd_cnt -= alpha*cwnd/2` (rounded), at most once per R when
//!   RTT-independent; entering Recovery or an RTO: halve via the carry, no increase until
//!   Open (`in_loss`);
//! - RTT independence (modes 0-3) once `round >= rtt_transition` post-slow-start rounds;
//! - classic-ECN detection (`detect.rs`) and, with `ecn_fallback = 1`, an alpha floor of
//!   0.625*(min(c, 9) - 8) at CWR entry; `detect_refs` picks the 5.15 branch's unrescaled
//!   reference constants (default, L4STeam/linux issue 38) or the intended ones;
//! - pacing `MTU * max(cwnd, in_flight) / srtt`, 2x while cwnd < ssthresh/2;
//!   `max_tso_burst` = rate/MTU >> burst_shift.
//! - `init` with no ECN negotiated swaps to `prague-reno` (Reno ssthresh and cong_avoid with
//!   the core's PRR, Not-ECT, no pacing request).
//!
//! v0.7: alpha with 2^24 resolution starting at 0, the fractional window `frac_cwnd`
//! halved at the first CE ever, RTT independence always on after `rtt_transition` (4)
//! rounds with the increase scaled by (srtt/25 ms)^2 and 1500/MTU, pacing with a
//! 100 kbit/s floor, `NO_FALLBACK_RFC3168` (an RFC 3168 connection is run as
//! `prague-reno`), and `cwnd_mode` 2: once CE was seen and the window is at most
//! `cwnd_transit` x 1500 B, a rate-based mode (rate +1500 B per virtual RTT per virtual
//! RTT, `rate*alpha/2` cut on CWR with a 100 kbit/s floor, halving on loss, window =
//! rate x hsrtt, pacing +/-3% around the rate in the two halves of each virtual RTT).
//! Not modelled: the MTU (MSS) reduction at low rates (the sender's MSS is fixed here).

mod detect;

use serde::{Deserialize, Serialize};

use super::{
    reno::Reno, AckSample, CaEvent, CaState, CcFlags, CongestionControl, EcnMode, RateSample, Sock,
};
pub use detect::{ClassicEcnDetector, DetectRefs};

/// Window fixed point (`CWND_UNIT`).
const CWND_UNIT: u32 = 20;
const ONE_CWND: i64 = 1 << CWND_UNIT;
const MIN_CWND: u32 = 2;
/// EWMA gain g = 2^-4.
const SHIFT_G: u32 = 4;
/// v0.6 internal RTT unit for the target: 128 us.
const RTT_UNIT: u32 = 7;
const MAX_SCALED_RTT_US: u64 = 100_000;
/// v0.7: reference MTU for the increase and the minimum pacing rate (100 kbit/s).
const MTU_SYS: u64 = 1500;
const MINIMUM_RATE: u64 = 12_500;
/// v0.7 rate mode: +/- 4/128 pacing offset, hsrtt EWMA gain 2^-7, and the 2^23 ~ 8e6
/// approximation Linux uses to turn `srtt_us` (8 x us) into seconds.
const RATE_OFFSET: u64 = 4;
const OFFSET_UNIT: u32 = 7;
const HSRTT_SHIFT: u32 = 7;
const RTT2SEC_SHIFT: u32 = 23;

const RTT_CONTROL_NONE: u32 = 0;
const RTT_CONTROL_RATE: u32 = 1;
const RTT_CONTROL_SCALABLE: u32 = 2;
const RTT_CONTROL_ADDITIVE: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PragueVariant {
    #[default]
    #[serde(rename = "v0.6")]
    V06,
    #[serde(rename = "v0.7")]
    V07,
}

/// Codepoint Prague v0.6 sends when only RFC 3168 ECN was negotiated.
/// `ect1` is what the P06 code does (TCP_ECN_ECT_1 is honoured on the RFC 3168 path);
/// `ect0` (default) is what the study reports observing for that case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ClassicEcnEct {
    #[default]
    Ect0,
    Ect1,
}

/// Module parameters of `tcp_prague` (all optional in a scenario).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PragueParams {
    pub variant: PragueVariant,
    /// `prague_rtt_scaling` (v0.6): 0 none, 1 rate, 2 scalable, 3 additive.
    pub rtt_scaling: u32,
    /// `prague_rtt_target`, us.
    pub rtt_target_us: u32,
    /// `prague_rtt_transition`: post-slow-start rounds before RTT independence
    /// (default 500 for v0.6, 4 for v0.7).
    pub rtt_transition: Option<u32>,
    /// `prague_ecn_fallback` (v0.6): 0 off, 1 detect and floor alpha, 2 detect only.
    pub ecn_fallback: u32,
    /// Reference constants of the classic-ECN detection (v0.6): `unscaled` = the 5.15
    /// branch the testbed ran (L4STeam/linux issue 38, default), `scaled` = as designed.
    pub detect_refs: DetectRefs,
    /// `prague_burst_shift`: TSO burst = pacing_rate * 2^-burst_shift s.
    pub burst_shift: u32,
    /// `prague_max_tso_segs` (0 = no cap).
    pub max_tso_segs: u32,
    /// Initial alpha (default 1.0 for v0.6, 0.0 for v0.7). For v0.7 setting it selects
    /// `prague_alpha_mode = 1` behaviour: no halving at the first mark.
    pub alpha_init: Option<f64>,
    /// Codepoint in RFC 3168 mode (v0.6).
    pub classic_ecn_ect: ClassicEcnEct,
    /// `prague_cwnd_mode` (v0.7): 0 fractional window, 1 rate based, 2 switch to rate
    /// based below `cwnd_transit` x 1500 B once CE was seen.
    pub cwnd_mode: u32,
    /// `prague_cwnd_transit` (v0.7), in 1500-byte packets.
    pub cwnd_transit: u32,
}

impl Default for PragueParams {
    fn default() -> Self {
        PragueParams {
            variant: PragueVariant::V06,
            rtt_scaling: RTT_CONTROL_RATE,
            rtt_target_us: 25_000,
            rtt_transition: None,
            ecn_fallback: 0,
            detect_refs: DetectRefs::Unscaled,
            burst_shift: 12,
            max_tso_segs: 0,
            alpha_init: None,
            classic_ecn_ect: ClassicEcnEct::Ect0,
            cwnd_mode: 2,
            cwnd_transit: 4,
        }
    }
}

/// Per-flow state (`struct prague` plus the detector fields of `tcp_sock`).
#[derive(Clone, Debug)]
pub struct Prague {
    p: PragueParams,
    v07: bool,
    /// `prague-reno` after `init` found no (usable) ECN.
    reno: bool,
    alpha_bits: u32,
    /// v0.7 `prague_alpha_mode == 0`: halve the window at the first CE.
    halve_at_first_mark: bool,
    cwr_stamp: u64,
    alpha_stamp: u64,
    upscaled_alpha: u64,
    ai_ack_increase: u64,
    cwnd_cnt: i64,
    loss_cwnd_cnt: i64,
    loss_cwnd: u32,
    frac_cwnd: u64,
    loss_frac_cwnd: u64,
    /// v0.7 rate mode: internal pacing rate (B/s), its value at loss, the slow srtt EWMA
    /// (upscaled 2^7, in Linux `srtt_us` units), and the mode flags.
    rate_bytes: u64,
    loss_rate_bytes: u64,
    hsrtt: u64,
    rate_mode: bool,
    mode_switching: bool,
    max_tso_burst: u32,
    old_delivered: u64,
    old_delivered_ce: u64,
    next_seq: u32,
    round: u32,
    rtt_transition_delay: u32,
    /// v0.6: in 128 us units.
    rtt_target: u32,
    rtt_indep: u32,
    saw_ce: bool,
    in_loss: bool,
    /// `prague_is_rtt_indep` as of the last ACK (for observation).
    rtt_indep_active: bool,
    det: ClassicEcnDetector,
}

fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl Prague {
    pub fn new(p: PragueParams) -> Prague {
        let v07 = p.variant == PragueVariant::V07;
        let alpha_bits = if v07 { 24 } else { 20 };
        let mut c = Prague {
            v07,
            reno: false,
            alpha_bits,
            halve_at_first_mark: v07 && p.alpha_init.is_none(),
            cwr_stamp: 0,
            alpha_stamp: 0,
            upscaled_alpha: 0,
            ai_ack_increase: ONE_CWND as u64,
            cwnd_cnt: 0,
            loss_cwnd_cnt: 0,
            loss_cwnd: 0,
            frac_cwnd: 0,
            loss_frac_cwnd: 0,
            rate_bytes: 0,
            loss_rate_bytes: 0,
            hsrtt: 0,
            rate_mode: false,
            mode_switching: false,
            max_tso_burst: 1,
            old_delivered: 0,
            old_delivered_ce: 0,
            next_seq: 0,
            round: 0,
            rtt_transition_delay: 0,
            rtt_target: 0,
            rtt_indep: 0,
            saw_ce: false,
            in_loss: false,
            rtt_indep_active: false,
            det: ClassicEcnDetector::new(0, DetectRefs::Scaled),
            p,
        };
        c.upscaled_alpha = c.initial_upscaled_alpha();
        c
    }

    fn max_alpha(&self) -> u64 {
        1 << self.alpha_bits
    }

    fn initial_upscaled_alpha(&self) -> u64 {
        let a = self
            .p
            .alpha_init
            .unwrap_or(if self.v07 { 0.0 } else { 1.0 })
            .clamp(0.0, 1.0);
        ((a * self.max_alpha() as f64).round() as u64) << SHIFT_G
    }

    /// Alpha as a fraction in [0, 1].
    pub fn alpha(&self) -> f64 {
        (self.upscaled_alpha >> SHIFT_G) as f64 / self.max_alpha() as f64
    }
    /// Classic-ECN score in [0, 17].
    pub fn classic_ecn(&self) -> f64 {
        self.det.score()
    }
    /// `prague_tso_segs`: the largest TSO/GSO burst in segments.
    pub fn tso_burst_segs(&self) -> u32 {
        let mut segs = if self.v07 {
            self.max_tso_burst
        } else {
            self.max_tso_burst.max(2)
        };
        if self.p.max_tso_segs > 0 {
            segs = segs.min(self.p.max_tso_segs);
        }
        segs
    }

    fn now_us(sk: &Sock) -> u64 {
        sk.now / 1000
    }
    /// Linux `srtt_us`: 8 x smoothed RTT in us.
    fn srtt8(sk: &Sock) -> u64 {
        sk.srtt * 8 / 1000
    }

    /// `prague_is_rtt_indep`.
    fn is_rtt_indep(&self, sk: &Sock) -> bool {
        (self.v07 || self.rtt_indep != RTT_CONTROL_NONE)
            && !sk.in_slow_start()
            && self.round >= self.rtt_transition_delay
    }

    /// `prague_target_rtt`, in us.
    fn target_rtt_us(&self, sk: &Sock) -> u64 {
        if self.v07 {
            return self.p.rtt_target_us as u64;
        }
        let mut t = self.rtt_target as u64;
        if self.rtt_indep == RTT_CONTROL_ADDITIVE {
            t += (sk.srtt / 1000) >> RTT_UNIT;
        }
        t << RTT_UNIT
    }

    fn target_rtt_elapsed(&self, sk: &Sock) -> bool {
        self.target_rtt_us(sk) <= Self::now_us(sk).saturating_sub(self.alpha_stamp)
    }

    /// `prague_should_update_ewma`: a round has ended (and, RTT-independent, R elapsed).
    fn should_update_ewma(&self, sk: &Sock) -> bool {
        if before(sk.snd_una, self.next_seq) {
            return false;
        }
        let mode_spaces = self.v07 || self.rtt_indep != RTT_CONTROL_NONE;
        !mode_spaces || !self.is_rtt_indep(sk) || self.target_rtt_elapsed(sk)
    }

    /// `prague_ai_ack_increase`: per-ACK additive increase, scaled for RTT independence.
    fn update_ai_ack_increase(&mut self, sk: &Sock) {
        let one = ONE_CWND as u64;
        self.ai_ack_increase = if self.v07 {
            let rtt = Self::srtt8(sk);
            let target = (self.p.rtt_target_us as u64) << 3;
            if self.round < self.rtt_transition_delay
                || rtt == 0
                || rtt > MAX_SCALED_RTT_US << 3
                || rtt >= target
            {
                one
            } else {
                div_round_closest(
                    (rtt as u128 * rtt as u128) << CWND_UNIT,
                    target as u128 * target as u128,
                )
            }
        } else if self.rtt_indep == RTT_CONTROL_NONE {
            one
        } else {
            let rtt = (sk.srtt / 1000) >> RTT_UNIT;
            if self.round < self.rtt_transition_delay || rtt == 0 || rtt > MAX_SCALED_RTT_US {
                one
            } else if self.rtt_indep == RTT_CONTROL_SCALABLE {
                // R0 ~ 16.4 ms, R1 ~ 1.5 ms (128 us units).
                let r0: i64 = (1 << 14) >> RTT_UNIT;
                let r1: i64 = ((1 << 10) + (1 << 9)) >> RTT_UNIT;
                let mut inc = (ONE_CWND >> 3) as u128 * r0 as u128;
                inc += ONE_CWND as u128 * (rtt as i64 - r1).clamp(0, r0) as u128;
                inc *= rtt as u128;
                let div = (r0 * r0) as u128;
                ((inc + div / 2) / div) as u64
            } else {
                let target = self.target_rtt_us(sk) >> RTT_UNIT;
                if rtt >= target {
                    one
                } else {
                    let div = target as u128 * target as u128;
                    ((((rtt as u128 * rtt as u128) << CWND_UNIT) + div / 2) / div) as u64
                }
            }
        };
    }

    fn cwnd_changed(&mut self, sk: &mut Sock) {
        sk.snd_cwnd_stamp = sk.now;
        self.update_ai_ack_increase(sk);
    }

    /// `prague_new_round`.
    fn new_round(&mut self, sk: &Sock) {
        self.next_seq = sk.snd_nxt;
        self.old_delivered_ce = sk.delivered_ce;
        self.old_delivered = sk.delivered;
        if !sk.in_slow_start() {
            self.round = self.round.wrapping_add(1);
            if self.round == 0 {
                self.round = self.rtt_transition_delay;
            }
        }
        self.update_ai_ack_increase(sk);
    }

    /// `prague_update_alpha`: alpha <- (1-g) alpha + g F, once per round after a CE.
    fn update_alpha(&mut self, sk: &mut Sock) {
        if self.saw_ce {
            if !self.v07 && self.p.ecn_fallback > 0 {
                let min_rtt = (sk.min_rtt != u64::MAX).then_some(sk.min_rtt / 1000);
                self.det.detect(min_rtt);
            }
            let mut ecn_segs = sk.delivered_ce - self.old_delivered_ce;
            if ecn_segs > 0 {
                let acked = (sk.delivered - self.old_delivered).max(1);
                ecn_segs = (ecn_segs << self.alpha_bits) / acked;
            }
            let a = self.upscaled_alpha;
            let a = a - (a >> SHIFT_G) + ecn_segs;
            self.alpha_stamp = Self::now_us(sk);
            self.upscaled_alpha = a.min(self.max_alpha() << SHIFT_G);
        }
        if self.v07 {
            self.hsrtt = self.hsrtt + Self::srtt8(sk) - (self.hsrtt >> HSRTT_SHIFT);
        }
        self.new_round(sk);
    }

    /// `prague_update_cwnd` (v0.6, `cwnd_cnt` carry).
    fn update_cwnd_v06(&mut self, sk: &mut Sock, rs: &RateSample) {
        let mut acked = rs.acked_sacked as i64;
        if rs.ece_delta > 0 {
            self.saw_ce = true;
            acked -= rs.ece_delta as i64;
        }
        if acked > 0 && !self.in_loss && sk.cwnd_limited() {
            if sk.in_slow_start() {
                acked = sk.slow_start(acked as u32) as i64;
                if acked == 0 {
                    self.cwnd_changed(sk);
                    return;
                }
            }
            let mut inc = acked as u128 * self.ai_ack_increase as u128;
            let cwnd = sk.snd_cwnd as u128;
            if let Some(q) = (inc + (cwnd >> 1)).checked_div(cwnd) {
                inc = q;
            }
            self.cwnd_cnt += (inc as i64).max(acked);
        }
        // Move the real window by at most one segment per ACK.
        if self.cwnd_cnt <= -ONE_CWND {
            self.cwnd_cnt += ONE_CWND;
            sk.snd_cwnd -= 1;
            if sk.snd_cwnd < MIN_CWND {
                sk.snd_cwnd = MIN_CWND;
                self.cwnd_cnt = 0;
            }
            sk.snd_ssthresh = sk.snd_cwnd;
            self.cwnd_changed(sk);
        } else if self.cwnd_cnt >= ONE_CWND {
            self.cwnd_cnt -= ONE_CWND;
            sk.snd_cwnd = (sk.snd_cwnd + 1).min(sk.snd_cwnd_clamp);
            self.cwnd_changed(sk);
        }
    }

    /// `prague_frac_cwnd_to_snd_cwnd` (v0.7): ceil, at least 2.
    fn frac_to_cwnd(&self, sk: &Sock) -> u32 {
        let c = (self.frac_cwnd + (ONE_CWND as u64 - 1)) >> CWND_UNIT;
        (c.max(MIN_CWND as u64)).min(sk.snd_cwnd_clamp as u64) as u32
    }

    /// v0.7 `prague_virtual_rtt`: max(target, srtt), Linux `srtt_us` units (8 x us).
    fn virtual_rtt8(&self, sk: &Sock) -> u64 {
        ((self.p.rtt_target_us as u64) << 3).max(Self::srtt8(sk))
    }

    /// v0.7: rate-based mode is in force.
    fn in_rate_mode(&self, sk: &Sock) -> bool {
        self.v07 && self.rate_mode && self.is_rtt_indep(sk)
    }

    /// v0.7 `prague_pacing_rate_to_frac_cwnd`: rate x hsrtt / MTU (rounded up).
    fn rate_to_frac(&self, sk: &Sock) -> u64 {
        let mtu = sk.mtu.max(1) as u128;
        let rtt = match self.hsrtt >> HSRTT_SHIFT {
            0 => Self::srtt8(sk),
            h => h,
        };
        let bytes = (self.rate_bytes as u128 * rtt as u128) >> (RTT2SEC_SHIFT - CWND_UNIT);
        bytes.div_ceil(mtu) as u64
    }

    /// v0.7 `prague_frac_cwnd_to_pacing_rate`: MTU x frac / srtt, at least 100 kbit/s.
    fn frac_to_rate(&self, sk: &Sock) -> u64 {
        let mut rate = 8_000_000u64 * sk.mtu as u64;
        rate = rate.checked_div(Self::srtt8(sk)).unwrap_or(rate);
        (((rate as u128 * self.frac_cwnd as u128) >> CWND_UNIT) as u64).max(MINIMUM_RATE)
    }

    /// `prague_update_cwnd` (v0.7).
    fn update_cwnd_v07(&mut self, sk: &mut Sock, rs: &RateSample) {
        let mut acked = rs.acked_sacked as i64;
        if rs.ece_delta > 0 {
            if !self.saw_ce && self.halve_at_first_mark {
                self.frac_cwnd = (self.frac_cwnd + 1) >> 1;
            }
            self.saw_ce = true;
            acked -= rs.ece_delta as i64;
        }
        if acked > 0 && !self.in_loss && sk.cwnd_limited() {
            if sk.in_slow_start() {
                acked = sk.slow_start(acked as u32) as i64;
                self.frac_cwnd = (sk.snd_cwnd as u64) << CWND_UNIT;
                if acked == 0 {
                    self.cwnd_changed(sk);
                    return;
                }
            }
            if self.in_rate_mode(sk) {
                // About 1500 B per virtual RTT per virtual RTT.
                let vrtt = self.virtual_rtt8(sk) as u128;
                let inc = ((acked as u128 * MTU_SYS as u128) << RTT2SEC_SHIFT) / vrtt;
                let div = (sk.mtu.max(1) as u128) << RTT2SEC_SHIFT;
                let w = (self.rate_bytes as u128 * vrtt).div_ceil(div);
                if w > 0 {
                    self.rate_bytes += div_round_closest(inc, w);
                }
                self.frac_cwnd = (self.frac_cwnd + acked as u64).max(self.rate_to_frac(sk));
            } else {
                let mut inc = acked as u128 * self.ai_ack_increase as u128;
                if self.frac_cwnd > 0 {
                    inc = div_round_closest(inc << CWND_UNIT, self.frac_cwnd as u128) as u128;
                }
                inc = inc * MTU_SYS as u128 / sk.mtu.max(1) as u128;
                self.frac_cwnd += (inc as u64).max(acked as u64);
                let rate = self.frac_to_rate(sk);
                self.rate_bytes = (self.rate_bytes + acked as u64).max(rate);
            }
        }
        let target = self.frac_to_cwnd(sk);
        if sk.snd_cwnd > target {
            sk.snd_cwnd -= 1;
            sk.snd_ssthresh = sk.snd_cwnd;
            self.cwnd_changed(sk);
        } else if sk.snd_cwnd < target {
            sk.snd_cwnd += 1;
            self.cwnd_changed(sk);
        }
    }

    /// `prague_update_pacing_rate`.
    fn update_pacing_rate(&mut self, sk: &mut Sock) {
        let mtu = sk.mtu.max(1) as u64;
        let srtt8 = Self::srtt8(sk);
        let inflight = sk.packets_in_flight() as u64;
        let mut rate = 8_000_000u64 * mtu;
        if self.v07 {
            if self.in_rate_mode(sk) {
                // +3% in the first half of each virtual RTT after an alpha update, -3% after.
                let offset = (RATE_OFFSET * self.rate_bytes) >> OFFSET_UNIT;
                let half_vrtt_us = self.virtual_rtt8(sk) >> 4;
                let since = Self::now_us(sk).saturating_sub(self.alpha_stamp);
                rate = if half_vrtt_us <= since {
                    self.rate_bytes - offset
                } else {
                    self.rate_bytes + offset
                };
            } else {
                rate = rate.checked_div(srtt8).unwrap_or(rate);
                let w = (self.frac_cwnd >> CWND_UNIT).max(inflight);
                rate = rate.saturating_mul(w).max(MINIMUM_RATE);
                self.rate_bytes = rate;
            }
            if sk.snd_cwnd < sk.snd_ssthresh / 2 {
                rate = rate.saturating_mul(2);
            }
        } else {
            if sk.snd_cwnd < sk.snd_ssthresh / 2 {
                rate <<= 1;
            }
            rate = rate.checked_div(srtt8).unwrap_or(rate);
            rate = rate.saturating_mul((sk.snd_cwnd as u64).max(inflight));
        }
        rate = rate.min(sk.max_pacing_rate);
        let burst = rate / mtu;
        self.max_tso_burst = ((burst >> self.p.burst_shift.min(63)) as u32).max(1);
        sk.pacing_rate = rate;
    }

    /// `prague_enter_loss`: halve (through the carry), no increase until Open.
    fn enter_loss(&mut self, sk: &mut Sock) {
        self.loss_cwnd = sk.snd_cwnd;
        if self.v07 {
            self.loss_frac_cwnd = self.frac_cwnd;
            self.loss_rate_bytes = self.rate_bytes;
            if self.in_rate_mode(sk) {
                self.rate_bytes -= self.rate_bytes >> 1;
                self.frac_cwnd = self.rate_to_frac(sk);
            } else {
                self.frac_cwnd -= self.frac_cwnd >> 1;
                self.rate_bytes = self.frac_to_rate(sk);
            }
        } else {
            self.loss_cwnd_cnt = self.cwnd_cnt;
            self.cwnd_cnt -= ((sk.snd_cwnd as i64) << (CWND_UNIT - 1)) + (self.cwnd_cnt >> 1);
        }
        self.in_loss = true;
        if !self.v07 {
            self.cwnd_changed(sk);
        }
    }

    /// `prague_enter_cwr`: reduce by alpha/2 (at most once per R when RTT-independent).
    fn enter_cwr(&mut self, sk: &mut Sock) {
        let now = Self::now_us(sk);
        if self.is_rtt_indep(sk) && self.target_rtt_us(sk) > now.saturating_sub(self.cwr_stamp) {
            return;
        }
        self.cwr_stamp = now;
        let mut alpha = self.upscaled_alpha >> SHIFT_G;
        let bits = self.alpha_bits;
        if self.in_rate_mode(sk) {
            let red = ((self.rate_bytes as u128 * alpha as u128) >> (bits + 1)) as u64;
            self.rate_bytes = self.rate_bytes.saturating_sub(red).max(MINIMUM_RATE);
            self.frac_cwnd = self.rate_to_frac(sk);
        } else if self.v07 {
            let red = (alpha as u128 * self.frac_cwnd as u128 + (1u128 << bits)) >> (bits + 1);
            self.frac_cwnd -= (red as u64).min(self.frac_cwnd);
            self.rate_bytes = self.frac_to_rate(sk);
        } else {
            if self.p.ecn_fallback == 1 {
                alpha = self.det.floor_alpha(alpha);
            }
            let red = (alpha as u128 * ((sk.snd_cwnd as u128) << CWND_UNIT) + (1u128 << bits))
                >> (bits + 1);
            self.cwnd_cnt -= red as i64;
        }
    }
}

fn div_round_closest(a: u128, b: u128) -> u64 {
    ((a + b / 2) / b) as u64
}

impl Default for Prague {
    fn default() -> Self {
        Prague::new(PragueParams::default())
    }
}

impl CongestionControl for Prague {
    fn name(&self) -> &'static str {
        if self.reno {
            "prague-reno"
        } else {
            "prague"
        }
    }

    fn flags(&self) -> CcFlags {
        if self.reno {
            return CcFlags::default();
        }
        CcFlags {
            needs_ecn: true,
            needs_accecn: true,
            no_fallback_rfc3168: self.v07,
            dctcp_echo: false,
        }
    }

    /// `prague_init`: ECT(1) and a pacing request when ECN was negotiated, else
    /// `prague-reno` (Not-ECT, no pacing request).
    fn init(&mut self, sk: &mut Sock) {
        let usable = match sk.ecn_mode {
            EcnMode::None => false,
            EcnMode::Rfc3168 => !self.v07,
            EcnMode::AccEcn => true,
        };
        if !usable {
            self.reno = true;
            sk.ect1 = false;
            sk.pacing_needed = false;
            return;
        }
        self.reno = false;
        sk.ect1 = match sk.ecn_mode {
            EcnMode::Rfc3168 => self.p.classic_ecn_ect == ClassicEcnEct::Ect1,
            _ => true,
        };
        sk.pacing_needed = true;

        self.alpha_stamp = Self::now_us(sk);
        self.upscaled_alpha = self.initial_upscaled_alpha();
        self.cwnd_cnt = 0;
        self.loss_cwnd_cnt = 0;
        self.loss_cwnd = 0;
        self.frac_cwnd = (sk.snd_cwnd as u64) << CWND_UNIT;
        self.loss_frac_cwnd = 0;
        self.max_tso_burst = 1;
        self.round = 0;
        self.rtt_transition_delay = self
            .p
            .rtt_transition
            .unwrap_or(if self.v07 { 4 } else { 500 });
        self.rtt_target = self.p.rtt_target_us >> RTT_UNIT;
        self.rtt_indep = if self.rtt_target > 0 && self.p.rtt_scaling <= RTT_CONTROL_ADDITIVE {
            self.p.rtt_scaling
        } else {
            RTT_CONTROL_NONE
        };
        self.saw_ce = sk.delivered_ce != 0;
        self.det = ClassicEcnDetector::new(sk.srtt / 1000, self.p.detect_refs);
        if self.v07 {
            let srtt8 = Self::srtt8(sk);
            let w = sk.snd_cwnd.max(sk.packets_in_flight()) as u64;
            self.rate_bytes = (8_000_000 * sk.mtu as u64)
                .checked_div(srtt8)
                .map_or(MINIMUM_RATE, |r| (r * w).max(MINIMUM_RATE));
            self.loss_rate_bytes = 0;
            self.hsrtt = if srtt8 > 0 {
                srtt8 << HSRTT_SHIFT
            } else {
                1 << (HSRTT_SHIFT + 3)
            };
            self.mode_switching = self.p.cwnd_mode & 2 != 0;
            self.rate_mode = self.p.cwnd_mode & 1 != 0;
        }
        if sk.srtt > 0 || self.v07 {
            self.update_pacing_rate(sk);
        }
        self.new_round(sk);
    }

    /// `prague_ssthresh`: keep ssthresh (Prague reduces its own window); v0.6 retunes the
    /// detector's gain from it.
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        if self.reno {
            return Reno.ssthresh(sk);
        }
        if !self.v07 {
            self.det.update_rtt_scaling(sk.snd_ssthresh);
        }
        sk.snd_ssthresh
    }

    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        if self.reno {
            Reno.cong_avoid(sk, ack, acked);
        }
    }

    fn has_cong_control(&self) -> bool {
        !self.reno
    }

    /// `prague_cong_control`: window, then alpha once per round, then pacing.
    fn cong_control(&mut self, sk: &mut Sock, rs: &RateSample) {
        if self.reno {
            return;
        }
        if self.v07 {
            self.update_cwnd_v07(sk, rs);
        } else {
            self.update_cwnd_v06(sk, rs);
        }
        if self.should_update_ewma(sk) {
            self.update_alpha(sk);
        }
        self.update_pacing_rate(sk);
        if self.v07 && self.mode_switching {
            let cwnd_bytes = sk.snd_cwnd as u64 * sk.mtu as u64;
            let transit = self.p.cwnd_transit as u64 * MTU_SYS;
            if self.saw_ce && cwnd_bytes <= transit {
                self.rate_mode = true;
                self.frac_cwnd = self.rate_to_frac(sk);
            } else {
                self.rate_mode = false;
                self.rate_bytes = self.frac_to_rate(sk);
            }
        }
        self.rtt_indep_active = self.is_rtt_indep(sk);
    }

    /// `prague_state`: called before `sk.ca_state` changes (Linux order).
    fn set_state(&mut self, sk: &mut Sock, new: CaState) {
        if self.reno || new == sk.ca_state {
            return;
        }
        match new {
            CaState::Recovery => self.enter_loss(sk),
            CaState::Cwr => self.enter_cwr(sk),
            CaState::Open => self.in_loss = false,
            _ => {}
        }
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        if !self.reno && ev == CaEvent::Loss {
            self.enter_loss(sk);
        }
    }

    fn pkts_acked(&mut self, _sk: &mut Sock, sample: &AckSample) {
        if !self.reno && !self.v07 && sample.rtt >= 0 {
            self.det.rtt_sample(sample.rtt / 1000);
        }
    }

    /// `prague_cwnd_undo`.
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        if self.reno {
            return sk.snd_cwnd.max(sk.prior_cwnd);
        }
        if self.v07 {
            self.in_loss = false;
            self.rate_bytes = self.rate_bytes.max(self.loss_rate_bytes);
            self.frac_cwnd = self.rate_to_frac(sk);
        } else {
            // As in the code: progress made since the loss is counted again.
            self.cwnd_cnt += self.cwnd_cnt - self.loss_cwnd_cnt;
        }
        self.loss_cwnd.max(sk.snd_cwnd)
    }

    /// `prague_tso_segs`; `prague-reno` has no hook (core autosizing).
    fn tso_segs(&self, _sk: &Sock) -> Option<u32> {
        (!self.reno).then(|| self.tso_burst_segs())
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("alpha", self.alpha()));
        out.push(("classic_ecn", self.det.score()));
        out.push(("rtt_indep", f64::from(u8::from(self.rtt_indep_active))));
        out.push(("ai_increase", self.ai_ack_increase as f64 / ONE_CWND as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcSpec;
    use crate::time::MS;

    const ONE: u64 = ONE_CWND as u64;

    /// A connected Prague socket in congestion avoidance (cwnd = ssthresh = `cwnd`).
    fn setup(p: PragueParams, mode: EcnMode, cwnd: u32, srtt: u64) -> (Prague, Sock) {
        let mut sk = Sock::new(1448);
        sk.ecn_mode = mode;
        sk.snd_cwnd = cwnd;
        sk.srtt = srtt;
        sk.min_rtt = srtt;
        sk.is_cwnd_limited = true;
        sk.snd_nxt = cwnd;
        sk.packets_out = cwnd;
        sk.max_packets_out = cwnd;
        sk.now = 1000 * MS;
        let mut c = Prague::new(p);
        c.init(&mut sk);
        sk.snd_ssthresh = cwnd;
        c.new_round(&sk);
        (c, sk)
    }

    /// One ACK for `acked` segments of which `ce` were CE, run through a minimal Linux-order
    /// sender: ECN feedback, CWR entry/exit (ssthresh then set_state), cong_control.
    fn ack(c: &mut Prague, sk: &mut Sock, acked: u32, ce: u32) {
        sk.snd_una = sk.snd_una.wrapping_add(acked);
        sk.delivered += acked as u64;
        sk.delivered_ce += ce as u64;
        if sk.ca_state == CaState::Cwr && sk.snd_una.wrapping_sub(sk.high_seq) as i32 > 0 {
            c.set_state(sk, CaState::Open);
            sk.ca_state = CaState::Open;
        }
        if ce > 0 && sk.ca_state < CaState::Cwr {
            sk.snd_ssthresh = c.ssthresh(sk);
            sk.high_seq = sk.snd_nxt;
            c.set_state(sk, CaState::Cwr);
            sk.ca_state = CaState::Cwr;
        }
        let rs = RateSample {
            acked_sacked: acked,
            ece_delta: ce,
            ..Default::default()
        };
        c.cong_control(sk, &rs);
        // Keep the window full.
        sk.snd_nxt = sk.snd_una.wrapping_add(sk.snd_cwnd);
        sk.packets_out = sk.snd_cwnd;
        sk.max_packets_out = sk.snd_cwnd;
    }

    /// One round trip of per-segment ACKs; every `mark_every`-th segment is CE (0 = none).
    fn round(c: &mut Prague, sk: &mut Sock, mark_every: u32, rtt: u64, seq: &mut u64) {
        let n = sk.snd_cwnd;
        let t0 = sk.now;
        for i in 0..n {
            sk.now = t0 + i as u64 * rtt / n as u64;
            *seq += 1;
            let ce = u32::from(mark_every > 0 && (*seq).is_multiple_of(mark_every as u64));
            ack(c, sk, 1, ce);
        }
        sk.now = t0 + rtt;
    }

    fn p06() -> PragueParams {
        PragueParams::default()
    }

    #[test]
    fn alpha_converges_to_marking_fraction() {
        let (mut c, mut sk) = setup(
            PragueParams {
                rtt_scaling: 0,
                ..p06()
            },
            EcnMode::AccEcn,
            50,
            10 * MS,
        );
        assert_eq!(c.alpha(), 1.0);
        let mut seq = 0;
        for _ in 0..200 {
            round(&mut c, &mut sk, 5, 10 * MS, &mut seq);
        }
        assert!((c.alpha() - 0.2).abs() < 0.03, "alpha {}", c.alpha());
    }

    #[test]
    fn alpha_not_updated_before_first_ce() {
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 20, 10 * MS);
        let mut seq = 0;
        for _ in 0..20 {
            round(&mut c, &mut sk, 0, 10 * MS, &mut seq);
        }
        assert_eq!(c.alpha(), 1.0);
    }

    #[test]
    fn cwr_reduction_is_half_alpha_applied_one_segment_per_ack() {
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 100, 10 * MS);
        c.upscaled_alpha = (ONE / 2) << SHIFT_G;
        // First marked ACK: enter CWR (cwnd_cnt -= 0.5 * 100 / 2 = 25 segments) and step.
        ack(&mut c, &mut sk, 1, 1);
        assert_eq!(sk.snd_cwnd, 99);
        for i in 2..=25 {
            ack(&mut c, &mut sk, 1, 1);
            assert_eq!(sk.snd_cwnd, 100 - i);
            assert_eq!(sk.snd_ssthresh, sk.snd_cwnd);
        }
        for _ in 0..10 {
            ack(&mut c, &mut sk, 1, 1);
        }
        assert_eq!(sk.snd_cwnd, 75);
    }

    #[test]
    fn increase_counts_only_non_ce_segments() {
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 100, 10 * MS);
        let rs = |acked, ce| RateSample {
            acked_sacked: acked,
            ece_delta: ce,
            ..Default::default()
        };
        // No marks: +1 segment per window.
        for _ in 0..100 {
            c.cong_control(&mut sk, &rs(1, 0));
        }
        assert_eq!(sk.snd_cwnd, 101);
        // All marked: no increase at all.
        let cnt = c.cwnd_cnt;
        for _ in 0..300 {
            c.cong_control(&mut sk, &rs(1, 1));
        }
        assert_eq!(sk.snd_cwnd, 101);
        assert_eq!(c.cwnd_cnt, cnt);
        // Half marked: half the increase (one window of unmarked segments over two windows).
        for _ in 0..101 {
            c.cong_control(&mut sk, &rs(2, 1));
        }
        assert_eq!(sk.snd_cwnd, 102);
    }

    #[test]
    fn rtt_independence_scales_increase_by_srtt_over_target_squared_after_500_rounds() {
        let srtt = 5 * MS;
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 10, srtt);
        let mut seq = 0;
        while c.round < 499 {
            assert_eq!(c.ai_ack_increase, ONE, "round {}", c.round);
            round(&mut c, &mut sk, 0, srtt, &mut seq);
        }
        assert_eq!(c.ai_ack_increase, ONE);
        let mut obs = Vec::new();
        c.observe(&mut obs);
        assert!(obs.contains(&("rtt_indep", 0.0)));
        round(&mut c, &mut sk, 0, srtt, &mut seq);
        assert_eq!(c.round, 500);
        // (5000 >> 7)^2 / (25000 >> 7)^2 = (39/195)^2 = 0.04.
        let expect = (39.0f64 / 195.0).powi(2);
        let got = c.ai_ack_increase as f64 / ONE as f64;
        assert!((got - expect).abs() < 1e-4, "ai {got} vs {expect}");
        let mut obs = Vec::new();
        c.observe(&mut obs);
        assert!(obs.contains(&("rtt_indep", 1.0)));

        // Mode 0: never scaled.
        let (mut c, mut sk) = setup(
            PragueParams {
                rtt_scaling: 0,
                ..p06()
            },
            EcnMode::AccEcn,
            10,
            srtt,
        );
        for _ in 0..510 {
            round(&mut c, &mut sk, 0, srtt, &mut seq);
        }
        assert_eq!(c.ai_ack_increase, ONE);
    }

    #[test]
    fn rtt_independent_cwr_reductions_are_spaced_by_target() {
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 100, 5 * MS);
        c.round = 1000;
        c.upscaled_alpha = (ONE / 2) << SHIFT_G;
        sk.now = 2000 * MS;
        c.set_state(&mut sk, CaState::Cwr);
        let after_first = c.cwnd_cnt;
        assert_eq!(after_first, -25 * ONE_CWND);
        sk.now += 10 * MS;
        c.set_state(&mut sk, CaState::Cwr);
        assert_eq!(c.cwnd_cnt, after_first, "second reduction within 25 ms");
        sk.now += 15 * MS;
        c.set_state(&mut sk, CaState::Cwr);
        assert!(c.cwnd_cnt < after_first);
    }

    #[test]
    fn rtt_independent_alpha_updates_are_spaced_by_target_not_per_round() {
        let srtt = 5 * MS;
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 20, srtt);
        c.round = 1000;
        c.saw_ce = true;
        let mut seq = 0;
        let mut updates = 0;
        let mut stamp = c.alpha_stamp;
        // 40 rounds of 5 ms = 200 ms: one alpha update per 25 ms, not one per round.
        for _ in 0..40 {
            round(&mut c, &mut sk, 10, srtt, &mut seq);
            if c.alpha_stamp != stamp {
                updates += 1;
                stamp = c.alpha_stamp;
            }
        }
        assert!(
            (7..=8).contains(&updates),
            "{updates} alpha updates in 200 ms"
        );
    }

    #[test]
    fn step_marking_loop_holds_window_near_bdp_plus_threshold() {
        // Crude closed loop: every ACK is CE while the window exceeds BDP + K packets.
        let (bdp, k) = (100u32, 20u32);
        let (mut c, mut sk) = setup(
            PragueParams {
                rtt_scaling: 0,
                ..p06()
            },
            EcnMode::AccEcn,
            10,
            10 * MS,
        );
        sk.snd_ssthresh = crate::cc::INFINITE_SSTHRESH;
        let (mut sum, mut n, mut lo, mut hi) = (0u64, 0u64, u32::MAX, 0u32);
        for r in 0..600 {
            let t0 = sk.now;
            let w = sk.snd_cwnd;
            for i in 0..w {
                sk.now = t0 + i as u64 * 10 * MS / w as u64;
                let ce = u32::from(sk.snd_cwnd > bdp + k);
                ack(&mut c, &mut sk, 1, ce);
                if r >= 300 {
                    sum += sk.snd_cwnd as u64;
                    n += 1;
                    lo = lo.min(sk.snd_cwnd);
                    hi = hi.max(sk.snd_cwnd);
                }
            }
        }
        let mean = sum as f64 / n as f64;
        assert!(
            ((bdp + k - 10) as f64..=(bdp + k + 3) as f64).contains(&mean),
            "mean cwnd {mean}"
        );
        assert!(
            lo >= bdp + k - 15 && hi <= bdp + k + 3,
            "cwnd range {lo}..{hi}"
        );
        assert!(c.alpha() > 0.01 && c.alpha() < 0.2, "alpha {}", c.alpha());
    }

    /// `rounds` rounds of one ACK per segment in flight, one CE per round (on the first ACK),
    /// `step` apart, with the RTT sample of ACK `i` of round `r` from `rtt(i, r)`; the gain
    /// comes from ssthresh ~100 (gs = 10), and each round leaves CWR so the next round's mark
    /// is a new CWR entry.
    fn rounds_of(
        c: &mut Prague,
        sk: &mut Sock,
        rounds: u32,
        step: u64,
        rtt: impl Fn(u32, u32) -> u64,
    ) {
        sk.snd_ssthresh = 100;
        c.ssthresh(sk);
        sk.snd_ssthresh = sk.snd_cwnd;
        for r in 0..rounds {
            let n = sk.snd_cwnd;
            for i in 0..n {
                let s = AckSample {
                    pkts_acked: 1,
                    rtt: rtt(i, r) as i64,
                    in_flight: n,
                };
                c.pkts_acked(sk, &s);
                sk.now += step;
                ack(c, sk, 1, u32::from(i == 0));
            }
            c.set_state(sk, CaState::Open);
            sk.ca_state = CaState::Open;
            sk.snd_cwnd = 100;
            sk.snd_ssthresh = 100;
            c.cwnd_cnt = 0;
        }
    }

    /// Rounds with a deep, jittery queue: RTT samples alternate between 30 and 70 ms over a
    /// 10 ms base RTT.
    fn jittery_rounds(c: &mut Prague, sk: &mut Sock, rounds: u32) {
        rounds_of(c, sk, rounds, MS / 2, |i, r| {
            if (i + r) % 2 == 0 {
                30 * MS
            } else {
                70 * MS
            }
        });
    }

    /// Rounds whose RTT is a steady `rtt` (an L4S queue's ~0.2 ms above min_rtt).
    fn steady_rounds(c: &mut Prague, sk: &mut Sock, rounds: u32, rtt: u64) {
        rounds_of(c, sk, rounds, MS / 10, |_, _| rtt);
    }

    #[test]
    fn classic_ecn_score_rises_with_deep_jittery_queue_and_floors_alpha_in_mode_1() {
        let p = PragueParams {
            ecn_fallback: 1,
            rtt_scaling: 0,
            ..p06()
        };
        let (mut c, mut sk) = setup(p, EcnMode::AccEcn, 100, 50 * MS);
        sk.min_rtt = 10 * MS;
        jittery_rounds(&mut c, &mut sk, 100);
        assert!(c.classic_ecn() > 9.0, "score {}", c.classic_ecn());
        assert!(c.classic_ecn() <= 17.0);
        // With a tiny alpha the reduction is still 0.625/2 of cwnd.
        c.upscaled_alpha = (ONE / 100) << SHIFT_G;
        c.cwnd_cnt = 0;
        sk.snd_cwnd = 100;
        c.set_state(&mut sk, CaState::Cwr);
        let red = -c.cwnd_cnt as f64 / ONE as f64;
        assert!((red - 31.25).abs() < 0.01, "reduction {red}");
    }

    #[test]
    fn fallback_on_an_l4s_queue_floors_alpha_only_with_the_515_unscaled_refs() {
        // L4STeam/linux issue 38: the 5.15 branch (PRAGUE_ALPHA_BITS 24, V0_LG/D0_LG left
        // at 2^20) falls back behind a 0.2 ms L4S queue; the intended detector does not.
        for (refs, floored) in [(DetectRefs::Unscaled, true), (DetectRefs::Scaled, false)] {
            let p = PragueParams {
                ecn_fallback: 1,
                rtt_scaling: 0,
                detect_refs: refs,
                ..p06()
            };
            let (mut c, mut sk) = setup(p, EcnMode::AccEcn, 100, 10 * MS);
            sk.min_rtt = 10 * MS;
            steady_rounds(&mut c, &mut sk, 30, 10 * MS + 200_000);
            c.upscaled_alpha = (ONE / 100) << SHIFT_G;
            c.cwnd_cnt = 0;
            sk.snd_cwnd = 100;
            c.set_state(&mut sk, CaState::Cwr);
            let red = -c.cwnd_cnt as f64 / ONE as f64;
            if floored {
                assert!(c.classic_ecn() > 9.0, "{refs:?}: score {}", c.classic_ecn());
                assert!((red - 31.25).abs() < 0.01, "{refs:?}: reduction {red}");
            } else {
                assert_eq!(c.classic_ecn(), 0.0, "{refs:?}");
                assert!((red - 0.5).abs() < 0.01, "{refs:?}: reduction {red}");
            }
        }
    }

    #[test]
    fn classic_ecn_detection_only_mode_2_does_not_floor_alpha() {
        let p = PragueParams {
            ecn_fallback: 2,
            rtt_scaling: 0,
            ..p06()
        };
        let (mut c, mut sk) = setup(p, EcnMode::AccEcn, 100, 50 * MS);
        sk.min_rtt = 10 * MS;
        jittery_rounds(&mut c, &mut sk, 100);
        assert!(c.classic_ecn() > 9.0, "score {}", c.classic_ecn());
        c.upscaled_alpha = (ONE / 100) << SHIFT_G;
        c.cwnd_cnt = 0;
        sk.snd_cwnd = 100;
        c.set_state(&mut sk, CaState::Cwr);
        let red = -c.cwnd_cnt as f64 / ONE as f64;
        assert!((red - 0.5).abs() < 0.01, "reduction {red}");
    }

    #[test]
    fn classic_ecn_score_stays_zero_when_fallback_off() {
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 100, 50 * MS);
        sk.min_rtt = 10 * MS;
        jittery_rounds(&mut c, &mut sk, 20);
        assert_eq!(c.classic_ecn(), 0.0);
    }

    #[test]
    fn loss_halves_window_one_segment_per_ack_without_increase_until_open() {
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 100, 10 * MS);
        sk.snd_ssthresh = c.ssthresh(&mut sk);
        assert_eq!(sk.snd_ssthresh, 100);
        c.set_state(&mut sk, CaState::Recovery);
        sk.ca_state = CaState::Recovery;
        let rs = RateSample {
            acked_sacked: 1,
            ..Default::default()
        };
        for _ in 0..80 {
            c.cong_control(&mut sk, &rs);
        }
        assert_eq!(sk.snd_cwnd, 50);
        c.set_state(&mut sk, CaState::Open);
        sk.ca_state = CaState::Open;
        for _ in 0..50 {
            c.cong_control(&mut sk, &rs);
        }
        assert_eq!(sk.snd_cwnd, 51);
        // Undo restores the pre-loss window.
        assert_eq!(c.undo_cwnd(&mut sk), 100);
    }

    #[test]
    fn pacing_is_mtu_times_cwnd_over_srtt_doubled_below_half_ssthresh() {
        let (mut c, mut sk) = setup(p06(), EcnMode::AccEcn, 100, 10 * MS);
        c.update_pacing_rate(&mut sk);
        let mtu = sk.mtu as u64;
        assert_eq!(sk.pacing_rate, mtu * 100 * 100);
        sk.snd_ssthresh = 1000;
        c.update_pacing_rate(&mut sk);
        assert_eq!(sk.pacing_rate, 2 * mtu * 100 * 100);
        // About 244 us of data per TSO burst.
        let burst = (2 * 100 * 100) >> 12;
        assert_eq!(c.max_tso_burst, burst as u32);
        assert!(sk.pacing_needed && sk.ect1);
        // prague_tso_segs: the burst, floored at tcp_min_tso_segs (2).
        assert_eq!(
            CongestionControl::tso_segs(&c, &sk),
            Some((burst as u32).max(2))
        );
    }

    #[test]
    fn without_ecn_runs_as_prague_reno_not_ect_unpaced() {
        let mut sk = Sock::new(1448);
        sk.snd_cwnd = 40;
        sk.is_cwnd_limited = true;
        let mut c = Prague::default();
        c.init(&mut sk);
        assert_eq!(c.name(), "prague-reno");
        assert!(!c.has_cong_control());
        // prague-reno has no tso_segs hook: the core autosizes its skbs.
        assert_eq!(CongestionControl::tso_segs(&c, &sk), None);
        assert!(!sk.ect1 && !sk.pacing_needed);
        assert_eq!(c.ssthresh(&mut sk), 20);
        sk.snd_ssthresh = 40;
        for _ in 0..40 {
            c.cong_avoid(&mut sk, 0, 1);
        }
        assert_eq!(sk.snd_cwnd, 41);
    }

    #[test]
    fn rfc3168_mode_codepoint_follows_classic_ecn_ect() {
        let mut sk = Sock::new(1448);
        sk.ecn_mode = EcnMode::Rfc3168;
        let mut c = Prague::default();
        c.init(&mut sk);
        assert!(c.has_cong_control());
        assert!(!sk.ect1, "default: ECT(0) in RFC 3168 mode");
        let mut c = Prague::new(PragueParams {
            classic_ecn_ect: ClassicEcnEct::Ect1,
            ..p06()
        });
        c.init(&mut sk);
        assert!(sk.ect1);
        // v0.7 has NO_FALLBACK_RFC3168: such a connection is prague-reno.
        let mut c = Prague::new(PragueParams {
            variant: PragueVariant::V07,
            ..p06()
        });
        assert!(c.flags().no_fallback_rfc3168);
        c.init(&mut sk);
        assert_eq!(c.name(), "prague-reno");
    }

    #[test]
    fn v07_halves_window_at_first_mark_with_alpha_zero() {
        let p = PragueParams {
            variant: PragueVariant::V07,
            ..p06()
        };
        let (mut c, mut sk) = setup(p, EcnMode::AccEcn, 100, 10 * MS);
        sk.snd_ssthresh = crate::cc::INFINITE_SSTHRESH;
        assert_eq!(c.alpha(), 0.0);
        assert_eq!(c.rtt_transition_delay, 4);
        let rs = |acked, ce| RateSample {
            acked_sacked: acked,
            ece_delta: ce,
            ..Default::default()
        };
        c.cong_control(&mut sk, &rs(1, 1));
        assert_eq!(c.frac_cwnd, 50 << CWND_UNIT);
        assert_eq!(sk.snd_cwnd, 99);
        for _ in 0..60 {
            c.cong_control(&mut sk, &rs(1, 1));
        }
        assert_eq!(sk.snd_cwnd, 50);
        // Later marks do not halve again; with alpha 0 a CWR entry reduces nothing.
        c.set_state(&mut sk, CaState::Cwr);
        assert_eq!(c.frac_cwnd, 50 << CWND_UNIT);
    }

    #[test]
    fn v07_rtt_independent_after_four_rounds() {
        let p = PragueParams {
            variant: PragueVariant::V07,
            ..p06()
        };
        let srtt = 5 * MS;
        let (mut c, mut sk) = setup(p, EcnMode::AccEcn, 10, srtt);
        let mut seq = 0;
        for _ in 0..6 {
            round(&mut c, &mut sk, 0, srtt, &mut seq);
        }
        // (5 ms / 25 ms)^2 in 2^-20 units.
        let got = c.ai_ack_increase as f64 / ONE as f64;
        assert!((got - 0.04).abs() < 1e-3, "ai {got}");
    }

    #[test]
    fn v07_switches_to_rate_mode_below_four_packets_and_grows_1500_bytes_per_vrtt() {
        let p = PragueParams {
            variant: PragueVariant::V07,
            ..p06()
        };
        let (mut c, mut sk) = setup(p, EcnMode::AccEcn, 3, 5 * MS);
        c.saw_ce = true;
        c.round = 10;
        let rs = |acked| RateSample {
            acked_sacked: acked,
            ..Default::default()
        };
        c.cong_control(&mut sk, &rs(0));
        assert!(c.in_rate_mode(&sk));
        let r0 = c.rate_bytes;
        // One virtual RTT (25 ms) of ACKs at this rate.
        let n = (r0 as f64 * 0.025 / sk.mtu as f64).round() as u32;
        for _ in 0..n {
            c.cong_control(&mut sk, &rs(1));
        }
        assert!(c.in_rate_mode(&sk));
        // 1500 B per vRTT per vRTT, with Linux's 2^23 ~ 8e6 seconds approximation.
        let expect = 1500.0 / 0.025 * (8_388_608.0 / 8e6);
        let grew = (c.rate_bytes - r0) as f64;
        assert!((grew / expect - 1.0).abs() < 0.1, "grew {grew} vs {expect}");
        // Pacing is the rate +/- 4/128.
        let r = c.rate_bytes;
        assert!(sk.pacing_rate == r + ((4 * r) >> 7) || sk.pacing_rate == r - ((4 * r) >> 7));
        // CWR cuts the rate by alpha/2.
        c.upscaled_alpha = (1u64 << 23) << SHIFT_G;
        sk.now += 100 * MS;
        c.set_state(&mut sk, CaState::Cwr);
        let cut = c.rate_bytes as f64 / r as f64;
        assert!((cut - 0.75).abs() < 0.001, "cut {cut}");
    }

    #[test]
    fn cc_spec_parses_defaults_and_rejects_unknown_params() {
        let s: CcSpec = serde_json::from_str(r#"{"name":"cubic"}"#).unwrap();
        assert_eq!(s, CcSpec::Cubic(Default::default()));
        assert_eq!(s.name(), "cubic");
        let s: CcSpec = serde_json::from_str(r#"{"name":"prague","ecn_fallback":1}"#).unwrap();
        match &s {
            CcSpec::Prague(p) => {
                assert_eq!(p.ecn_fallback, 1);
                assert_eq!(p.variant, PragueVariant::V06);
            }
            _ => panic!("not prague"),
        }
        let s: CcSpec =
            serde_json::from_str(r#"{"name":"prague","variant":"v0.7","classic_ecn_ect":"ect1"}"#)
                .unwrap();
        assert_eq!(s.name(), "prague");
        let s: CcSpec = serde_json::from_str(r#"{"name":"dctcp","shift_g":5}"#).unwrap();
        assert_eq!(
            s,
            CcSpec::Dctcp(crate::cc::dctcp::DctcpParams {
                shift_g: 5,
                ..Default::default()
            })
        );
        let e = serde_json::from_str::<CcSpec>(r#"{"name":"cubic","betta":700}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("betta"), "{e}");
        let e = serde_json::from_str::<CcSpec>(r#"{"name":"prague","ecn_falback":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ecn_falback"), "{e}");
    }
}
