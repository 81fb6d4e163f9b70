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
//! - min_rtt and PROBE_RTT stamps in the host's jiffies (`tcp_jiffies32`), as Linux keeps
//!   them: the 10 s filter expires and the 200 ms of PROBE_RTT end on ticks (`after()`: the
//!   first tick past the stamp plus the span, `msecs_to_jiffies` rounding up).
//! - TSO goal (`bbr_tso_segs_goal`) uses the default `sk_pacing_shift` of 10.

use serde::{Deserialize, Serialize};

use super::{AckSample, CaEvent, CaState, CcFlags, CongestionControl, RateSample, Sock};
use crate::rng::Rng;
use crate::time::{Jiffies, SimTime, MS};

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
    r = (r * gain as u128) >> BBR_SCALE;
    r *= 1_000_000 / 100 * (100 - margin as u128);
    r >>= BW_SCALE;
    (r as u64).max(1)
}

/// Microseconds from `b` to `a` (ns stamps), as `tcp_stamp_us_delta` (signed).
/// `bbr_packets_in_net_at_edt` (all three versions): the packets still in the network when
/// the next skb leaves at its earliest departure time (`tcp_wstamp_ns`, `sk.wstamp`), i.e.
/// in flight now, plus that skb's TSO goal when probing up (`pacing_gain` above 1), less
/// what `bw` delivers until then (whole microseconds, as `div_u64` truncates).
pub(crate) fn in_net_at_edt(
    sk: &Sock,
    bw: u64,
    inflight_now: u32,
    pacing_gain: u32,
    tso_goal: u32,
) -> u32 {
    let interval_us = sk.wstamp.saturating_sub(sk.now) / 1000;
    let delivered = ((bw as u128 * interval_us as u128) >> BW_SCALE) as u32;
    let mut inflight = inflight_now;
    if pacing_gain > BBR_UNIT {
        inflight += tso_goal;
    }
    inflight.saturating_sub(delivered)
}

pub(crate) fn us_delta(a: SimTime, b: SimTime) -> i64 {
    (a as i64 - b as i64) / 1000
}

/// BBR v1 per-flow state (`struct bbr` of tcp_bbr.c).
#[derive(Clone, Debug)]
pub struct Bbr1 {
    p: Bbr1Params,
    rng: Rng,
    /// The host's jiffies, for the stamps below.
    clock: Jiffies,
    min_rtt_us: u32,
    /// Jiffies.
    min_rtt_stamp: u64,
    probe_rtt_done_stamp: u64,
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
    /// On a host with HZ 250 ticking from time 0.
    pub fn new(p: Bbr1Params, rng: Rng) -> Bbr1 {
        Self::on_host(p, rng, Jiffies::new(250))
    }

    /// On a host whose jiffies are `clock`.
    pub fn on_host(p: Bbr1Params, rng: Rng, clock: Jiffies) -> Bbr1 {
        Bbr1 {
            p,
            rng,
            clock,
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

    /// `bbr_packets_in_net_at_edt` ([`in_net_at_edt`]).
    fn packets_in_net_at_edt(&self, sk: &Sock, inflight_now: u32) -> u32 {
        in_net_at_edt(
            sk,
            self.bw(),
            inflight_now,
            self.pacing_gain,
            self.tso_segs_goal(sk),
        )
    }

    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr =
            (self.bw() as u128 * self.p.extra_acked_max_us as u128 / BW_UNIT as u128) as u64;
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
                && (rs.losses > 0
                    || inflight >= self.inflight(sk, self.max_bw(), self.pacing_gain));
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
            || rs.interval / 1000 <= 0
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
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= (1 << 20) {
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
        let thresh = (self.full_bw * self.p.full_bw_thresh as u64) >> BBR_SCALE;
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
        let now = self.clock.at(sk.now);
        if !(self.probe_rtt_done_stamp != 0 && now > self.probe_rtt_done_stamp) {
            return;
        }
        self.min_rtt_stamp = now; // wait a while until the next PROBE_RTT
        sk.snd_cwnd = sk.snd_cwnd.max(self.prior_cwnd);
        self.reset_mode(sk);
    }

    fn update_min_rtt(&mut self, sk: &mut Sock, rs: &RateSample) {
        let now = self.clock.at(sk.now);
        let win = self
            .clock
            .ceil(self.p.min_rtt_win_sec as u64 * crate::time::SEC);
        let filter_expired = now > self.min_rtt_stamp + win;
        if rs.rtt >= 0 {
            let rtt_us = (rs.rtt / 1000).min(u32::MAX as i64) as u32;
            if rtt_us < self.min_rtt_us || (filter_expired && !rs.is_ack_delayed) {
                self.min_rtt_us = rtt_us;
                self.min_rtt_stamp = now;
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
            if self.probe_rtt_done_stamp == 0 && sk.packets_in_flight() <= self.p.cwnd_min_target {
                self.probe_rtt_done_stamp =
                    now + self.clock.ceil(self.p.probe_rtt_mode_ms as u64 * MS);
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
        self.min_rtt_stamp = self.clock.at(sk.now);
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
    /// "state": 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT; "cycle_idx": PROBE_BW phase
    /// (0 = the 1.25 phase, 1 = the 0.75 phase); gains as factors; "bw_mbps": bw estimate
    /// (payload); "min_rtt_ms" (-1 before a sample); "lt_use_bw": 1 when policed.
    /// `bbr_tso_segs`: the same goal as for the cwnd budget.
    fn tso_segs(&self, sk: &Sock) -> Option<u32> {
        Some(self.tso_segs_goal(sk))
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
                -1.0
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

/// A tiny event-driven path for tests: one bottleneck of fixed rate (FIFO, unlimited buffer),
/// fixed base RTT, optional CE marking above a queue-delay threshold, and a sender that
/// follows cwnd and the pacing rate and produces `tcp_rate.c`-style rate samples.
#[cfg(test)]
pub(crate) mod testpath {
    use std::collections::VecDeque;

    use crate::cc::{AckSample, CaState, CongestionControl, RateSample, Sock};
    use crate::time::{SimTime, MS, SEC};

    #[derive(Clone, Copy, Debug)]
    struct Pkt {
        sent: SimTime,
        ack_at: SimTime,
        ce: bool,
        delivered: u64,
        delivered_ce: u64,
        delivered_mstamp: SimTime,
        first_tx_mstamp: SimTime,
        is_app_limited: bool,
        tx_in_flight: u32,
        /// `tp->lost` when sent (`tx.lost`).
        lost: u64,
        /// Dropped at the bottleneck (tail drop); detected lost when a later packet is ACKed.
        dropped: bool,
    }

    pub struct Path {
        pub sk: Sock,
        /// Bottleneck service time per packet, ns.
        pub pkt_time: u64,
        pub base_rtt: u64,
        /// Mark CE when the queueing delay seen at enqueue exceeds this (ns); None = no ECN.
        pub ce_thresh: Option<u64>,
        /// Tail-drop buffer in packets (None = unlimited). Lost segments are not
        /// retransmitted; Recovery lasts until the flight sent before the loss is ACKed.
        pub buffer: Option<u32>,
        pub drops: u64,
        last_departure: SimTime,
        last_send: SimTime,
        first_tx_mstamp: SimTime,
        flight: VecDeque<Pkt>,
        pub acks: u64,
    }

    impl Path {
        /// `mbps` bottleneck, `rtt_ms` base RTT, 1448-byte segments.
        pub fn new(mbps: f64, rtt_ms: u64) -> Path {
            let sk = Sock::new(1448);
            let pkt_time = (1514.0 * 8.0 / (mbps * 1e6) * 1e9) as u64;
            Path {
                sk,
                pkt_time,
                base_rtt: rtt_ms * MS,
                ce_thresh: None,
                buffer: None,
                drops: 0,
                last_departure: 0,
                last_send: 0,
                first_tx_mstamp: 0,
                flight: VecDeque::new(),
                acks: 0,
            }
        }

        /// Bottleneck rate in packets per second.
        pub fn pps(&self) -> f64 {
            SEC as f64 / self.pkt_time as f64
        }
        pub fn bdp_pkts(&self) -> f64 {
            self.pps() * self.base_rtt as f64 / SEC as f64
        }

        fn send(&mut self, now: SimTime) {
            let sk = &mut self.sk;
            if sk.packets_out == 0 {
                self.first_tx_mstamp = now;
                sk.delivered_mstamp = now;
            }
            let start = now.max(self.last_departure);
            let qdelay = start - now;
            let queued = qdelay / self.pkt_time;
            let dropped = matches!(self.buffer, Some(b) if queued >= b as u64);
            let departure = start + self.pkt_time;
            if !dropped {
                self.last_departure = departure;
            } else {
                self.drops += 1;
            }
            let ce = matches!(self.ce_thresh, Some(k) if qdelay > k);
            sk.packets_out += 1;
            sk.snd_nxt += 1;
            self.flight.push_back(Pkt {
                sent: now,
                ack_at: departure + self.base_rtt,
                ce,
                delivered: sk.delivered,
                delivered_ce: sk.delivered_ce,
                delivered_mstamp: sk.delivered_mstamp,
                first_tx_mstamp: self.first_tx_mstamp,
                is_app_limited: sk.app_limited != 0,
                tx_in_flight: sk.packets_out,
                lost: sk.lost,
                dropped,
            });
            self.last_send = now;
        }

        fn ack(&mut self, cc: &mut dyn CongestionControl, p: Pkt, newly_lost: u32) {
            let now = p.ack_at;
            let sk = &mut self.sk;
            sk.now = now;
            let prior_in_flight = sk.packets_in_flight();
            sk.packets_out -= 1;
            sk.snd_una += 1;
            sk.delivered += 1;
            if p.ce {
                sk.delivered_ce += 1;
            }
            sk.delivered_mstamp = now;
            self.first_tx_mstamp = self.first_tx_mstamp.max(p.sent);
            let rtt = now - p.sent;
            sk.min_rtt = sk.min_rtt.min(rtt);
            sk.srtt = if sk.srtt == 0 {
                rtt
            } else {
                (7 * sk.srtt + rtt) / 8
            };
            if sk.app_limited != 0 && sk.delivered > sk.app_limited {
                sk.app_limited = 0;
            }
            let snd_int = p.sent as i64 - p.first_tx_mstamp as i64;
            let ack_int = now as i64 - p.delivered_mstamp as i64;
            let mut interval = snd_int.max(ack_int);
            if interval < sk.min_rtt as i64 {
                interval = -1;
            }
            let rs = RateSample {
                prior_mstamp: p.delivered_mstamp,
                prior_delivered: p.delivered,
                prior_delivered_ce: p.delivered_ce,
                delivered: (sk.delivered - p.delivered) as i64,
                delivered_ce: (sk.delivered_ce - p.delivered_ce) as i64,
                interval,
                snd_interval: snd_int,
                rcv_interval: ack_int,
                rtt: rtt as i64,
                losses: 0,
                acked_sacked: 1,
                prior_in_flight,
                is_app_limited: p.is_app_limited,
                ece_delta: p.ce as u32,
                tx_in_flight: p.tx_in_flight,
                lost: 0,
                ..Default::default()
            };
            self.acks += 1;
            cc.pkts_acked(
                sk,
                &AckSample {
                    pkts_acked: 1,
                    rtt: rtt as i64,
                    in_flight: prior_in_flight,
                },
            );
            // Loss detection and the CA state machine (tcp_fastretrans_alert), before
            // in_ack_event and cong_control as in tcp_ack().
            if newly_lost > 0 {
                sk.lost += newly_lost as u64;
                sk.packets_out -= newly_lost;
                sk.snd_una += newly_lost;
                if sk.ca_state < CaState::Recovery {
                    sk.prior_cwnd = sk.snd_cwnd;
                    sk.snd_ssthresh = cc.ssthresh(sk);
                    sk.ca_state = CaState::Recovery;
                    cc.set_state(sk, CaState::Recovery);
                    sk.high_seq = sk.snd_nxt;
                }
            } else if sk.ca_state >= CaState::Recovery && sk.snd_una >= sk.high_seq {
                sk.ca_state = CaState::Open;
                cc.set_state(sk, CaState::Open);
            }
            let rs = RateSample {
                losses: newly_lost,
                lost: sk.lost - p.lost,
                ..rs
            };
            cc.in_ack_event(sk, p.ce);
            cc.cong_control(sk, &rs);
        }

        fn rto(&mut self, cc: &mut dyn CongestionControl) {
            let sk = &mut self.sk;
            sk.now += 200 * MS;
            let n = self.flight.len() as u32;
            self.flight.clear();
            sk.prior_cwnd = sk.snd_cwnd;
            sk.snd_ssthresh = cc.ssthresh(sk);
            cc.cwnd_event(sk, crate::cc::CaEvent::Loss);
            sk.lost += n as u64;
            sk.packets_out -= n;
            sk.snd_una += n;
            sk.snd_cwnd = 1;
            sk.ca_state = CaState::Loss;
            cc.set_state(sk, CaState::Loss);
            sk.high_seq = sk.snd_nxt;
            self.last_send = sk.now;
        }

        /// Run until `until`, calling `probe` after every ACK.
        pub fn run(
            &mut self,
            cc: &mut dyn CongestionControl,
            until: SimTime,
            probe: &mut dyn FnMut(&Sock, &dyn CongestionControl),
        ) {
            loop {
                let can_send = self.sk.packets_in_flight() < self.sk.snd_cwnd;
                self.sk.is_cwnd_limited = !can_send;
                let next_send = if can_send {
                    let gap = if self.sk.pacing_rate > 0 {
                        (self.sk.mss as u128 * SEC as u128 / self.sk.pacing_rate as u128) as u64
                    } else {
                        0
                    };
                    Some((self.last_send + gap).max(self.sk.now))
                } else {
                    None
                };
                let next_ack = self.flight.iter().find(|p| !p.dropped).map(|p| p.ack_at);
                let t = match (next_send, next_ack) {
                    (Some(s), Some(a)) if s < a => s,
                    (_, Some(a)) => a,
                    (Some(s), None) => s,
                    (None, None) if !self.flight.is_empty() => {
                        // Whole flight dropped: RTO after 200 ms (tcp_enter_loss).
                        self.rto(cc);
                        continue;
                    }
                    (None, None) => break,
                };
                if t > until {
                    break;
                }
                if Some(t) == next_ack && next_send.is_none_or(|s| s >= t) {
                    let mut lost = 0;
                    while self.flight.front().is_some_and(|p| p.dropped) {
                        self.flight.pop_front();
                        lost += 1;
                    }
                    let p = self.flight.pop_front().unwrap();
                    self.ack(cc, p, lost);
                    probe(&self.sk, cc);
                } else {
                    self.sk.now = t;
                    self.send(t);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testpath::Path;
    use super::*;
    use crate::cc::{CcSpec, CongestionControl};
    use crate::time::{MS, SEC};

    fn bbr(seed: u64) -> Bbr1 {
        Bbr1::new(
            Bbr1Params::default(),
            Rng::new(seed, crate::rng::stream::CC),
        )
    }

    #[test]
    fn in_network_at_edt_discounts_what_bw_delivers_before_the_next_departure() {
        // bbr_packets_in_net_at_edt: 1 packet per 10 us, next skb due 255.9 us from now
        // (255 whole us): 25 packets delivered by then.
        let mut sk = Sock::new(1448);
        sk.now = 1_000_000;
        let bw = BW_UNIT / 10;
        sk.wstamp = sk.now + 255_900;
        assert_eq!(in_net_at_edt(&sk, bw, 100, BBR_UNIT, 4), 75);
        // Probing up: the departing skb's TSO goal counts too.
        assert_eq!(in_net_at_edt(&sk, bw, 100, BBR_UNIT * 5 / 4, 4), 79);
        // More delivered than in flight: none left.
        assert_eq!(in_net_at_edt(&sk, bw, 20, BBR_UNIT, 4), 0);
        // A departure stamp in the past is now (edt = max(wstamp, now)).
        sk.wstamp = sk.now - 5_000;
        assert_eq!(in_net_at_edt(&sk, bw, 100, BBR_UNIT, 4), 100);
    }

    /// One hand-made round: `n` packets delivered over `interval_us`, ending the round.
    fn round(b: &mut Bbr1, sk: &mut Sock, n: u64, interval_us: i64) {
        let prior = sk.delivered;
        sk.delivered += n;
        sk.now += interval_us as u64 * 1000;
        sk.delivered_mstamp = sk.now;
        let rs = RateSample {
            prior_delivered: prior,
            delivered: n as i64,
            interval: interval_us * 1000,
            rtt: 20_000_000,
            acked_sacked: n as u32,
            prior_in_flight: sk.packets_out,
            ..Default::default()
        };
        b.cong_control(sk, &rs);
    }

    #[test]
    fn startup_exits_after_three_rounds_without_25pct_bw_growth() {
        let mut b = bbr(1);
        let mut sk = Sock::new(1448);
        sk.packets_out = 1000; // keep DRAIN from ending at once
        b.init(&mut sk);
        // Growing rounds: bw doubles each round.
        for n in [10, 20, 40, 80] {
            round(&mut b, &mut sk, n, 20_000);
            assert_eq!(b.mode(), BbrMode::Startup);
        }
        // Plateau: +10% per round is below the 25% threshold.
        round(&mut b, &mut sk, 88, 20_000);
        assert_eq!(b.mode(), BbrMode::Startup);
        round(&mut b, &mut sk, 96, 20_000);
        assert_eq!(b.mode(), BbrMode::Startup);
        round(&mut b, &mut sk, 99, 20_000);
        assert!(b.full_bw_reached());
        assert_eq!(b.mode(), BbrMode::Drain);
        // DRAIN sets ssthresh to the BDP-based inflight.
        assert!(sk.snd_ssthresh < 200, "{}", sk.snd_ssthresh);
    }

    #[test]
    fn startup_growth_of_25pct_restarts_the_plateau_count() {
        let mut b = bbr(1);
        let mut sk = Sock::new(1448);
        sk.packets_out = 1000;
        b.init(&mut sk);
        round(&mut b, &mut sk, 100, 20_000);
        round(&mut b, &mut sk, 100, 20_000);
        round(&mut b, &mut sk, 100, 20_000);
        round(&mut b, &mut sk, 130, 20_000); // +30%: new plateau reference
        round(&mut b, &mut sk, 130, 20_000);
        round(&mut b, &mut sk, 130, 20_000);
        assert_eq!(b.mode(), BbrMode::Startup);
        round(&mut b, &mut sk, 130, 20_000);
        assert_eq!(b.mode(), BbrMode::Drain);
    }

    #[test]
    fn drain_drains_inflight_to_the_estimated_bdp_then_enters_probe_bw() {
        let mut p = Path::new(12.0, 20);
        let mut b = bbr(3);
        b.init(&mut p.sk);
        let mut prev = BbrMode::Startup;
        let mut saw_drain = false;
        let mut exit = None;
        p.run(&mut b, 2 * SEC, &mut |sk, cc| {
            let mut o = Vec::new();
            cc.observe(&mut o);
            let mode = o[0].1 as u32;
            if mode == BbrMode::Drain as u32 {
                saw_drain = true;
                assert!((o[1].1 - 88.0 / 256.0).abs() < 1e-9, "drain pacing gain");
            }
            if prev == BbrMode::Drain && mode == BbrMode::ProbeBw as u32 && exit.is_none() {
                // estimated BDP in packets from the model's bw (Mbit/s of payload) and min_rtt
                let est_bdp = o[4].1 * 1e6 / 8.0 / 1448.0 * o[5].1 / 1000.0;
                exit = Some((sk.packets_in_flight() as f64, est_bdp));
            }
            prev = match mode {
                0 => BbrMode::Startup,
                1 => BbrMode::Drain,
                2 => BbrMode::ProbeBw,
                _ => BbrMode::ProbeRtt,
            };
        });
        assert!(saw_drain);
        let (inflight, est_bdp) = exit.expect("left DRAIN");
        let bdp = p.bdp_pkts();
        assert!(
            (est_bdp - bdp).abs() < 0.15 * bdp,
            "est {est_bdp} true {bdp}"
        );
        // At most the estimated BDP plus the quantization budget (3 bursts of 2 segments,
        // rounded up to even), and well below the STARTUP inflight (2.885 BDP).
        assert!(
            inflight <= est_bdp.ceil() + 7.0,
            "inflight {inflight} bdp {est_bdp}"
        );
        assert!(
            inflight >= est_bdp * 0.8,
            "inflight {inflight} bdp {est_bdp}"
        );
    }

    #[test]
    fn probe_bw_gain_cycle_follows_125_075_then_six_unity_phases_one_per_min_rtt() {
        let mut p = Path::new(12.0, 20);
        let mut b = bbr(5);
        b.init(&mut p.sk);
        let mut phases: Vec<(u64, u32, f64)> = Vec::new();
        p.run(&mut b, 3 * SEC, &mut |sk, cc| {
            let mut o = Vec::new();
            cc.observe(&mut o);
            if o[0].1 as u32 != BbrMode::ProbeBw as u32 {
                return;
            }
            let idx = o[3].1 as u32;
            if phases.last().is_none_or(|l| l.1 != idx) {
                phases.push((sk.now, idx, o[1].1));
            }
        });
        assert!(phases.len() > 20);
        assert_ne!(phases[0].1, 1, "never starts in the 0.75 phase");
        let expect = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        for w in phases.windows(2) {
            assert_eq!(w[1].1, (w[0].1 + 1) % 8, "phases advance one at a time");
            assert_eq!(w[0].2, expect[w[0].1 as usize]);
            let dur = w[1].0 - w[0].0;
            if w[0].1 >= 2 {
                // unity phases last one min_rtt (advance on the first ACK after it)
                assert!(
                    dur > 20 * MS && dur < 23 * MS,
                    "phase {} lasted {dur}",
                    w[0].1
                );
            }
        }
    }

    #[test]
    fn random_start_phase_excludes_the_075_phase() {
        let mut seen = [false; 8];
        for seed in 0..200 {
            let mut b = bbr(seed);
            let sk = Sock::new(1448);
            b.reset_probe_bw_mode(&sk);
            seen[b.cycle_idx() as usize] = true;
        }
        assert!(!seen[1]);
        assert_eq!(seen.iter().filter(|s| **s).count(), 7);
    }

    #[test]
    fn probe_rtt_entered_when_min_rtt_not_refreshed_for_10s_and_holds_cwnd_4_for_200ms() {
        let mut p = Path::new(12.0, 20);
        let mut b = bbr(7);
        b.init(&mut p.sk);
        let mut enter = None;
        let mut leave = None;
        let mut max_cwnd_in = 0;
        p.run(&mut b, 11 * SEC, &mut |sk, cc| {
            let mut o = Vec::new();
            cc.observe(&mut o);
            let in_rtt = o[0].1 as u32 == BbrMode::ProbeRtt as u32;
            if in_rtt && enter.is_none() {
                enter = Some(sk.now);
            }
            if in_rtt {
                max_cwnd_in = max_cwnd_in.max(sk.snd_cwnd);
            }
            if !in_rtt && enter.is_some() && leave.is_none() {
                leave = Some(sk.now);
            }
        });
        let enter = enter.expect("entered PROBE_RTT");
        let leave = leave.expect("left PROBE_RTT");
        // The first RTT sample arrives after ~20 ms; the filter expires 10 s later.
        assert!(enter > 10 * SEC && enter < 10 * SEC + 100 * MS, "{enter}");
        assert_eq!(max_cwnd_in, 4);
        let held = leave - enter;
        assert!((200 * MS..300 * MS).contains(&held), "{held}");
    }

    #[test]
    fn recovery_uses_packet_conservation_then_restores_the_prior_cwnd() {
        let mut b = bbr(1);
        let mut sk = Sock::new(1448);
        b.init(&mut sk);
        sk.snd_cwnd = 50;
        sk.packets_out = 40;
        sk.delivered = 100;
        b.ssthresh(&mut sk); // entering Recovery: remember cwnd 50
        sk.ca_state = CaState::Recovery;
        b.set_state(&mut sk, CaState::Recovery);
        // ACKs for segments sent before the episode (prior_delivered 90): same round.
        let ack = |b: &mut Bbr1, sk: &mut Sock, losses: u32| {
            sk.packets_out -= 2;
            sk.delivered += 2;
            sk.now += MS;
            let rs = RateSample {
                prior_delivered: 90,
                delivered: 2,
                interval: 20 * MS as i64,
                acked_sacked: 2,
                losses,
                rtt: 20 * MS as i64,
                ..Default::default()
            };
            b.cong_control(sk, &rs);
        };
        ack(&mut b, &mut sk, 1);
        // cwnd = in flight + newly acked.
        assert_eq!(sk.snd_cwnd, 38 + 2);
        ack(&mut b, &mut sk, 0);
        assert_eq!(
            sk.snd_cwnd, 40,
            "conservation: no growth beyond inflight + acked"
        );
        sk.ca_state = CaState::Open;
        ack(&mut b, &mut sk, 0);
        assert!(
            sk.snd_cwnd >= 50,
            "restored to the prior cwnd: {}",
            sk.snd_cwnd
        );
    }

    #[test]
    fn bbr1_ignores_ecn() {
        let trace = |ce: Option<u64>| {
            let mut p = Path::new(12.0, 20);
            p.ce_thresh = ce;
            p.sk.ecn_mode = crate::cc::EcnMode::Rfc3168;
            let mut b = bbr(9);
            b.init(&mut p.sk);
            let mut v = Vec::new();
            let mut ce_acks = 0u64;
            p.run(&mut b, SEC, &mut |sk, _| {
                v.push((sk.snd_cwnd, sk.pacing_rate));
                ce_acks = sk.delivered_ce;
            });
            (v, ce_acks)
        };
        let (plain, _) = trace(None);
        let (marked, ce) = trace(Some(0));
        assert!(ce > 100, "the path did mark CE ({ce})");
        assert_eq!(plain, marked);
    }

    #[test]
    fn spec_bbr_gets_defaults_and_rejects_unknown_keys() {
        let s: CcSpec = serde_json::from_str(r#"{"name":"bbr"}"#).unwrap();
        assert_eq!(s, CcSpec::Bbr(Bbr1Params::default()));
        let s: CcSpec = serde_json::from_str(r#"{"name":"bbr","cwnd_gain":640}"#).unwrap();
        match s {
            CcSpec::Bbr(p) => assert_eq!(p.cwnd_gain, 640),
            _ => panic!(),
        }
        let e = serde_json::from_str::<CcSpec>(r#"{"name":"bbr","cwnd_gian":2}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cwnd_gian"), "{e}");
    }
}
