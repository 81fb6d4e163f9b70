//! BBR v1, as mainline Linux `net/ipv4/tcp_bbr.c` (5.x/6.x, `bbr_main` as `cong_control`).
//!
//! Modelled: STARTUP / DRAIN / PROBE_BW (8-phase pacing-gain cycle, random start phase that
//! is never the 0.75 phase) / PROBE_RTT; the windowed max bw filter over `bw_rtts` packet-timed
//! rounds (`lib/win_minmax.c`); round counting from `rs.prior_delivered`; full-pipe detection;
//! pacing at `gain * bw` minus a 1% margin; `target cwnd = gain*BDP + extra_acked +
//! quantization budget`; ACK-aggregation estimation (`extra_acked`); long-term (policer) bw
//! sampling; idle restart; packet conservation in Recovery and cwnd save/restore. BBRv1 has no
//! ECN logic: CE feedback changes nothing (the core's CWR state is bypassed by `cong_control`).
//!
//! Units follow the Linux code: bandwidth in packets per microsecond scaled by `2^BW_SCALE`,
//! gains in `1/BBR_UNIT` (256), min_rtt in microseconds. Parameters keep the module-parameter
//! units (gains in 1/256).
//!
//! Simplifications (documented, Linux behaviour assumed):
//! - Linux keeps min_rtt/PROBE_RTT stamps in jiffies; we use exact simulated time.
//! - `bbr_packets_in_net_at_edt`: the core does not expose the EDT of the next skb, so we take
//!   EDT = now (no in-pacing-queue discount), still adding the TSO goal when probing up.
//! - TSO goal (`bbr_tso_segs_goal`) uses the default `sk_pacing_shift` of 10.

use serde::{Deserialize, Serialize};

use super::{AckSample, CaEvent, CaState, CcFlags, CongestionControl, RateSample, Sock};
use crate::rng::Rng;
use crate::time::SimTime;

pub(crate) const BW_SCALE: u32 = 24;
pub(crate) const BW_UNIT: u64 = 1 << BW_SCALE;
pub(crate) const BBR_SCALE: u32 = 8;
pub(crate) const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// Number of phases in the PROBE_BW pacing-gain cycle.
pub(crate) const CYCLE_LEN: u32 = 8;
/// `TCP_INIT_CWND`.
pub(crate) const TCP_INIT_CWND: u32 = 10;
/// `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER = 320 on x86-64).
pub(crate) const GSO_BUDGET_BYTES: u64 = 65536 - 1 - 320;
/// Default `sk_pacing_shift` (about 1 ms worth of data per TSO burst).
pub(crate) const SK_PACING_SHIFT: u32 = 10;

/// `enum bbr_mode`; also the numeric "state" reported by `observe()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup = 0,
    Drain = 1,
    ProbeBw = 2,
    ProbeRtt = 3,
}

/// Module parameters of `tcp_bbr.c` (gains in 1/256 as in the module).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr1Params {
    /// STARTUP pacing and cwnd gain, 2/ln(2) = 2.885 (`BBR_UNIT*2885/1000+1`).
    pub high_gain: u32,
    /// DRAIN pacing gain, 1/2.885.
    pub drain_gain: u32,
    /// PROBE_BW cwnd gain, 2.0.
    pub cwnd_gain: u32,
    /// PROBE_BW pacing-gain cycle.
    pub pacing_gain: [u32; 8],
    /// Random start phase spread (`bbr_cycle_rand`).
    pub cycle_rand: u32,
    /// Window of the max bw filter, in rounds (`CYCLE_LEN + 2`).
    pub bw_rtts: u32,
    /// Window of the min_rtt filter, seconds.
    pub min_rtt_win_sec: u32,
    /// Time spent at `cwnd_min_target` in PROBE_RTT, ms.
    pub probe_rtt_mode_ms: u32,
    pub cwnd_min_target: u32,
    /// Full-pipe detection: growth threshold (1.25) and rounds without growth (3).
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    /// Skip TSO below this rate, bit/s.
    pub min_tso_rate: u64,
    pub pacing_margin_percent: u32,
    /// ACK aggregation: gain (1.0), window in rounds, cap in us of bw.
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    pub extra_acked_max_us: u32,
    /// Long-term (policer) bw sampling.
    pub lt_intvl_min_rtts: u32,
    pub lt_loss_thresh: u32,
    pub lt_bw_ratio: u32,
    /// Bytes/s.
    pub lt_bw_diff: u64,
    pub lt_bw_max_rtts: u32,
}

impl Default for Bbr1Params {
    fn default() -> Self {
        let u = BBR_UNIT;
        Bbr1Params {
            high_gain: u * 2885 / 1000 + 1,
            drain_gain: u * 1000 / 2885,
            cwnd_gain: u * 2,
            pacing_gain: [u * 5 / 4, u * 3 / 4, u, u, u, u, u, u],
            cycle_rand: 7,
            bw_rtts: CYCLE_LEN + 2,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            cwnd_min_target: 4,
            full_bw_thresh: u * 5 / 4,
            full_bw_cnt: 3,
            min_tso_rate: 1_200_000,
            pacing_margin_percent: 1,
            extra_acked_gain: u,
            extra_acked_win_rtts: 5,
            extra_acked_max_us: 100_000,
            lt_intvl_min_rtts: 4,
            lt_loss_thresh: 50,
            lt_bw_ratio: u / 8,
            lt_bw_diff: 4000 / 8,
            lt_bw_max_rtts: 48,
        }
    }
}

/// Kathleen Nichols' windowed running max over 3 samples (`lib/win_minmax.c`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Minmax {
    s: [(u32, u64); 3],
}

impl Minmax {
    pub fn get(&self) -> u64 {
        self.s[0].1
    }
    pub fn reset(&mut self, t: u32, v: u64) {
        self.s = [(t, v); 3];
    }
    pub fn running_max(&mut self, win: u32, t: u32, v: u64) -> u64 {
        let val = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            self.reset(t, v);
            return v;
        }
        if v >= self.s[1].1 {
            self.s[1] = val;
            self.s[2] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        // subwin_update
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// `bbr_rate_bytes_per_sec`: bw (pkts/us << 24) times gain, minus margin, in bytes/s.
pub(crate) fn rate_bytes_per_sec(mss: u32, rate: u64, gain: u32, margin: u32) -> u64 {
    let mut r = rate as u128 * mss as u128;
    r = r * gain as u128 >> BBR_SCALE;
    r *= (1_000_000 / 100 * (100 - margin as u128)) as u128;
    r >>= BW_SCALE;
    (r as u64).max(1)
}

/// Microseconds from `b` to `a` (ns stamps), as `tcp_stamp_us_delta` (signed).
pub(crate) fn us_delta(a: SimTime, b: SimTime) -> i64 {
    (a as i64 - b as i64) / 1000
}

/// BBR v1 per-flow state (`struct bbr` of tcp_bbr.c).
#[derive(Clone, Debug)]
pub struct Bbr1 {
    p: Bbr1Params,
    rng: Rng,
    min_rtt_us: u32,
    min_rtt_stamp: SimTime,
    probe_rtt_done_stamp: SimTime,
    bw: Minmax,
    rtt_cnt: u32,
    next_rtt_delivered: u64,
    cycle_mstamp: SimTime,
    mode: BbrMode,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp: u64,
    lt_last_lost: u64,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: u32,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u64,
    ack_epoch_mstamp: SimTime,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// mss_cache, remembered for `observe()`.
    mss: u32,
}

impl Bbr1 {
    pub fn new(p: Bbr1Params, rng: Rng) -> Bbr1 {
        Bbr1 {
            p,
            rng,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: Minmax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: BbrMode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            mss: 1448,
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn cycle_idx(&self) -> u32 {
        self.cycle_idx
    }
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }
    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt_us
    }

    fn max_bw(&self) -> u64 {
        self.bw.get()
    }
    /// `bbr_bw`: the long-term (policed) rate when in use, else the max filter.
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    fn bw_to_pacing_rate(&self, sk: &Sock, bw: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(sk.mss, bw, gain, self.p.pacing_margin_percent).min(sk.max_pacing_rate)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain * cwnd / srtt (1 ms if no sample yet).
    fn init_pacing_rate_from_rtt(&mut self, sk: &mut Sock) {
        let rtt_us = if sk.srtt > 0 {
            self.has_seen_rtt = true;
            (sk.srtt / 1000).max(1)
        } else {
            1000
        };
        let bw = sk.snd_cwnd as u64 * BW_UNIT / rtt_us;
        sk.pacing_rate = self.bw_to_pacing_rate(sk, bw, self.p.high_gain);
    }

    fn set_pacing_rate(&mut self, sk: &mut Sock, bw: u64, gain: u32) {
        let rate = self.bw_to_pacing_rate(sk, bw, gain);
        if !self.has_seen_rtt && sk.srtt > 0 {
            self.init_pacing_rate_from_rtt(sk);
        }
        if self.full_bw_reached || rate > sk.pacing_rate {
            sk.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal`.
    fn tso_segs_goal(&self, sk: &Sock) -> u32 {
        let min_segs = if sk.pacing_rate < self.p.min_tso_rate >> 3 {
            1
        } else {
            2
        };
        let bytes = (sk.pacing_rate >> SK_PACING_SHIFT).min(GSO_BUDGET_BYTES);
        let segs = ((bytes / sk.mss.max(1) as u64) as u32).max(min_segs);
        segs.min(0x7f)
    }

    fn save_cwnd(&mut self, sk: &Sock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = sk.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(sk.snd_cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw * min_rtt * gain), initial cwnd before any RTT sample.
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u128 * self.min_rtt_us as u128;
        (((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128)) as u32
    }

    /// `bbr_quantization_budget`: 3 TSO bursts, rounded up to even, +2 in the 1.25 phase.
    fn quantization_budget(&self, sk: &Sock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal(sk);
        cwnd = (cwnd + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    fn inflight(&self, sk: &Sock, bw: u64, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(sk, bdp)
    }

    /// `bbr_packets_in_net_at_edt` with EDT = now (see module doc).
    fn packets_in_net_at_edt(&self, sk: &Sock, inflight_now: u32) -> u32 {
        let mut inflight = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight += self.tso_segs_goal(sk);
        }
        inflight
    }

    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = (self.bw() as u128 * self.p.extra_acked_max_us as u128 / BW_UNIT as u128)
            as u64;
        let aggr = (self.p.extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE;
        aggr.min(max_aggr) as u32
    }

    /// Packet conservation on entering Recovery, restore on leaving; returns the cwnd and
    /// whether conservation decided it (`bbr_set_cwnd_to_recover_or_restore`).
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        sk: &Sock,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev = self.prev_ca_state;
        let state = sk.ca_state;
        let mut cwnd = sk.snd_cwnd;
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = sk.delivered;
            cwnd = sk.packets_in_flight() + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return ((sk.packets_in_flight() + acked).max(cwnd), true);
        }
        (cwnd, false)
    }

    fn set_cwnd(&mut self, sk: &mut Sock, rs: &RateSample, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = sk.snd_cwnd;
        if acked > 0 {
            let (c, done) = self.set_cwnd_to_recover_or_restore(sk, rs, acked);
            cwnd = c;
            if !done {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(sk, target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || sk.delivered < TCP_INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.p.cwnd_min_target);
            }
        }
        sk.snd_cwnd = cwnd.min(sk.snd_cwnd_clamp);
        if self.mode == BbrMode::ProbeRtt {
            sk.snd_cwnd = sk.snd_cwnd.min(self.p.cwnd_min_target);
        }
    }

    fn is_next_cycle_phase(&self, sk: &Sock, rs: &RateSample) -> bool {
        let is_full_length =
            us_delta(sk.delivered_mstamp, self.cycle_mstamp) > self.min_rtt_us as i64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(sk, rs.prior_in_flight);
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(sk, self.max_bw(), self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(sk, self.max_bw(), BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self, sk: &Sock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = sk.delivered_mstamp;
    }

    fn update_cycle_phase(&mut self, sk: &Sock, rs: &RateSample) {
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(sk, rs) {
            self.advance_cycle_phase(sk);
        }
    }

    fn reset_startup_mode(&mut self) {
        self.mode = BbrMode::Startup;
    }

    /// Enter PROBE_BW at a random phase other than the 0.75 one.
    fn reset_probe_bw_mode(&mut self, sk: &Sock) {
        self.mode = BbrMode::ProbeBw;
        let r = if self.p.cycle_rand > 0 {
            self.rng.below(self.p.cycle_rand)
        } else {
            0
        };
        self.cycle_idx = (CYCLE_LEN - 1).wrapping_sub(r) & (CYCLE_LEN - 1);
        self.advance_cycle_phase(sk);
    }

    fn reset_mode(&mut self, sk: &Sock) {
        if !self.full_bw_reached {
            self.reset_startup_mode();
        } else {
            self.reset_probe_bw_mode(sk);
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self, sk: &Sock) {
        self.lt_last_stamp = sk.delivered_mstamp / 1_000_000;
        self.lt_last_delivered = sk.delivered;
        self.lt_last_lost = sk.lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, sk: &Sock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(sk);
    }

    fn lt_bw_interval_done(&mut self, sk: &Sock, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT as u64 <= self.p.lt_bw_ratio as u64 * self.lt_bw
                || rate_bytes_per_sec(sk.mss, diff, BBR_UNIT, self.p.pacing_margin_percent)
                    <= self.p.lt_bw_diff
            {
                // Two consistent intervals: estimate we are policed.
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(sk);
    }

    /// Token-bucket policer detection (`bbr_lt_bw_sampling`).
    fn lt_bw_sampling(&mut self, sk: &Sock, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= self.p.lt_bw_max_rtts {
                    self.reset_lt_bw_sampling(sk);
                    self.reset_probe_bw_mode(sk);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(sk);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(sk);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < self.p.lt_intvl_min_rtts {
            return;
        }
        if self.lt_rtt_cnt > 4 * self.p.lt_intvl_min_rtts {
            self.reset_lt_bw_sampling(sk);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = sk.lost - self.lt_last_lost;
        let delivered = sk.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < self.p.lt_loss_thresh as u64 * delivered {
            return;
        }
        let t = (sk.delivered_mstamp / 1_000_000) as i64 - self.lt_last_stamp as i64;
        if t < 1 {
            return;
        }
        let t_us = t as u64 * 1000;
        let bw = delivered * BW_UNIT / t_us;
        self.lt_bw_interval_done(sk, bw);
    }

    fn update_bw(&mut self, sk: &Sock, rs: &RateSample) {
        self.round_start = false;
        let interval_us = rs.interval / 1000;
        if rs.delivered < 0 || interval_us <= 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = sk.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(sk, rs);
        let bw = rs.delivered as u64 * BW_UNIT / interval_us as u64;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(self.p.bw_rtts, self.rtt_cnt, bw);
        }
    }

    fn update_ack_aggregation(&mut self, sk: &Sock, rs: &RateSample) {
        if self.p.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval <= 0
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= self.p.extra_acked_win_rtts {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us_delta(sk.delivered_mstamp, self.ack_epoch_mstamp).max(0) as u64;
        let mut expected = (self.bw() as u128 * epoch_us as u128 / BW_UNIT as u128) as u32;
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + rs.acked_sacked >= (1 << 20)
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = sk.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(sk.snd_cwnd);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = self.full_bw * self.p.full_bw_thresh as u64 >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_cnt;
    }

    fn check_drain(&mut self, sk: &mut Sock) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            sk.snd_ssthresh = self.inflight(sk, self.max_bw(), BBR_UNIT);
        }
        if self.mode == BbrMode::Drain
            && self.packets_in_net_at_edt(sk, sk.packets_in_flight())
                <= self.inflight(sk, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(sk);
        }
    }

    fn check_probe_rtt_done(&mut self, sk: &mut Sock) {
        if !(self.probe_rtt_done_stamp != 0 && sk.now > self.probe_rtt_done_stamp) {
            return;
        }
        self.min_rtt_stamp = sk.now; // wait a while until the next PROBE_RTT
        sk.snd_cwnd = sk.snd_cwnd.max(self.prior_cwnd);
        self.reset_mode(sk);
    }

    fn update_min_rtt(&mut self, sk: &mut Sock, rs: &RateSample) {
        let win = self.p.min_rtt_win_sec as u64 * 1_000_000_000;
        let filter_expired = sk.now > self.min_rtt_stamp + win;
        if rs.rtt >= 0 {
            let rtt_us = (rs.rtt / 1000).min(u32::MAX as i64) as u32;
            if rtt_us < self.min_rtt_us || (filter_expired && !rs.is_ack_delayed) {
                self.min_rtt_us = rtt_us;
                self.min_rtt_stamp = sk.now;
            }
        }
        if self.p.probe_rtt_mode_ms > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != BbrMode::ProbeRtt
        {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(sk);
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == BbrMode::ProbeRtt {
            // Ignore low-rate samples during PROBE_RTT.
            let v = sk.delivered + sk.packets_in_flight() as u64;
            sk.app_limited = if v > 0 { v } else { 1 };
            if self.probe_rtt_done_stamp == 0 && sk.packets_in_flight() <= self.p.cwnd_min_target
            {
                self.probe_rtt_done_stamp =
                    sk.now + self.p.probe_rtt_mode_ms as u64 * 1_000_000;
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = sk.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(sk);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        match self.mode {
            BbrMode::Startup => {
                self.pacing_gain = self.p.high_gain;
                self.cwnd_gain = self.p.high_gain;
            }
            BbrMode::Drain => {
                self.pacing_gain = self.p.drain_gain;
                self.cwnd_gain = self.p.high_gain;
            }
            BbrMode::ProbeBw => {
                self.pacing_gain = if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    self.p.pacing_gain[self.cycle_idx as usize]
                };
                self.cwnd_gain = self.p.cwnd_gain;
            }
            BbrMode::ProbeRtt => {
                self.pacing_gain = BBR_UNIT;
                self.cwnd_gain = BBR_UNIT;
            }
        }
    }
}

impl CongestionControl for Bbr1 {
    fn name(&self) -> &'static str {
        "bbr"
    }
    fn flags(&self) -> CcFlags {
        CcFlags::default()
    }
    fn init(&mut self, sk: &mut Sock) {
        self.prior_cwnd = 0;
        sk.snd_ssthresh = super::INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = sk.delivered;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = if sk.min_rtt == u64::MAX {
            u32::MAX
        } else {
            (sk.min_rtt / 1000).min(u32::MAX as u64) as u32
        };
        self.min_rtt_stamp = sk.now;
        self.bw.reset(self.rtt_cnt, 0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(sk);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(sk);
        self.reset_startup_mode();
        self.ack_epoch_mstamp = sk.now;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
        sk.pacing_needed = true;
        self.mss = sk.mss;
    }
    /// `bbr_ssthresh`: remember cwnd for the restore; ssthresh unchanged.
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        self.save_cwnd(sk);
        sk.snd_ssthresh
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    /// `bbr_main`.
    fn cong_control(&mut self, sk: &mut Sock, rs: &RateSample) {
        self.mss = sk.mss;
        self.update_bw(sk, rs);
        self.update_ack_aggregation(sk, rs);
        self.update_cycle_phase(sk, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(sk);
        self.update_min_rtt(sk, rs);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(sk, bw, self.pacing_gain);
        self.set_cwnd(sk, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }
    /// `bbr_set_state`: an RTO ends the round and counts as a loss for policer sampling.
    fn set_state(&mut self, sk: &mut Sock, new: CaState) {
        if new == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..Default::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(sk, &rs);
        }
    }
    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        if ev == CaEvent::TxStart && sk.app_limited != 0 {
            self.idle_restart = true;
            self.ack_epoch_mstamp = sk.now;
            self.ack_epoch_acked = 0;
            if self.mode == BbrMode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(sk, bw, BBR_UNIT);
            } else if self.mode == BbrMode::ProbeRtt {
                self.check_probe_rtt_done(sk);
            }
        }
    }
    fn pkts_acked(&mut self, _sk: &mut Sock, _sample: &AckSample) {}
    /// `bbr_undo_cwnd`: spurious loss: restart full-pipe and policer detection, keep cwnd.
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(sk);
        sk.snd_cwnd
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("state", self.mode as u32 as f64));
        out.push(("pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64));
        out.push(("cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64));
        out.push(("cycle_idx", self.cycle_idx as f64));
        out.push(("bw_mbps", bw_to_mbps(self.bw(), self.mss)));
        out.push((
            "min_rtt_ms",
            if self.min_rtt_us == u32::MAX {
                f64::NAN
            } else {
                self.min_rtt_us as f64 / 1000.0
            },
        ));
        out.push(("lt_use_bw", self.lt_use_bw as u32 as f64));
    }
}

/// Bandwidth (pkts/us << 24) as Mbit/s of `mss`-byte segments (payload rate).
pub(crate) fn bw_to_mbps(bw: u64, mss: u32) -> f64 {
    bw as f64 / BW_UNIT as f64 * 1e6 * mss as f64 * 8.0 / 1e6
}
