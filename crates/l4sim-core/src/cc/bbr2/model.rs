//! BBRv2 network model: bw and BDP estimates, pacing and cwnd control, and the congestion
//! signals (loss, ECN) that drive the lower bounds `bw_lo` / `inflight_lo`
//! (tcp_bbr2.c `bbr_*` helpers shared with v1, `bbr2_update_congestion_signals`,
//! `bbr2_adapt_lower_bounds`, `bbr2_update_ecn_alpha`, `bbr2_bound_cwnd_for_inflight_model`).

use super::super::bbr1::{
    in_net_at_edt, rate_bytes_per_sec, us_delta, BbrMode, BBR_SCALE, BBR_UNIT, BW_UNIT,
    GSO_BUDGET_BYTES, SK_PACING_SHIFT,
};
use super::super::{CaState, RateSample, Sock};
use super::{Bbr2, Ctx, BW_PROBE_CRUISE, BW_PROBE_REFILL, BW_PROBE_UP, UNSET32, UNSET_BW};

/// Linux `GSO_MAX_SIZE`.
const GSO_MAX_SIZE: u64 = 65536;

impl Bbr2 {
    /// `bbr_max_bw`: max of the two PROBE_BW-cycle slots.
    pub(crate) fn max_bw(&self) -> u64 {
        self.max_bw[0].max(self.max_bw[1])
    }
    /// `bbr_bw`: v2alpha `min(max_bw, bw_lo, bw_hi)`; L4S `min(max_bw, bw_lo)`.
    pub(crate) fn bw(&self) -> u64 {
        let b = self.max_bw().min(self.bw_lo);
        if self.r.newer {
            b
        } else {
            b.min(self.bw_hi)
        }
    }
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    fn bw_to_pacing_rate(&self, sk: &Sock, bw: u64, gain: u32) -> u64 {
        rate_bytes_per_sec(sk.mss, bw, gain, 1).min(sk.max_pacing_rate)
    }

    pub(crate) fn init_pacing_rate_from_rtt(&mut self, sk: &mut Sock) {
        let rtt_us = if sk.srtt > 0 {
            self.has_seen_rtt = true;
            (sk.srtt / 1000).max(1)
        } else {
            1000
        };
        let bw = sk.snd_cwnd as u64 * BW_UNIT / rtt_us;
        sk.pacing_rate = self.bw_to_pacing_rate(sk, bw, self.p.high_gain);
    }

    pub(crate) fn set_pacing_rate(&mut self, sk: &mut Sock, bw: u64, gain: u32) {
        let rate = self.bw_to_pacing_rate(sk, bw, gain);
        if !self.has_seen_rtt && sk.srtt > 0 {
            self.init_pacing_rate_from_rtt(sk);
        }
        if self.full_bw_reached || rate > sk.pacing_rate {
            sk.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal` (v2): pacing-rate budget plus a min_rtt-based allowance.
    pub(crate) fn tso_segs_goal(&self, sk: &Sock) -> u32 {
        let mut bytes = sk.pacing_rate >> SK_PACING_SHIFT;
        if self.p.tso_rtt_shift > 0 {
            let r = self.min_rtt_us >> self.p.tso_rtt_shift;
            if r < 32 {
                bytes += GSO_MAX_SIZE >> r;
            }
        }
        bytes = bytes.min(GSO_BUDGET_BYTES);
        let min_segs = if sk.pacing_rate < self.p.min_tso_rate >> 3 {
            1
        } else {
            2
        };
        ((bytes / sk.mss.max(1) as u64) as u32).max(min_segs)
    }

    pub(crate) fn save_cwnd(&mut self, sk: &Sock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = sk.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(sk.snd_cwnd);
        }
    }

    pub(crate) fn bdp(&self, bw: u64, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return self.init_cwnd;
        }
        let w = bw as u128 * self.min_rtt_us as u128;
        (((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128)).min(u32::MAX as u128) as u32
    }

    /// `bbr_quantization_budget` with `cwnd_tso_budget = 1` (flooring).
    pub(crate) fn quantization_budget(&self, sk: &Sock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd
            .max(3 * self.tso_segs_goal(sk))
            .max(self.p.cwnd_min_target);
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
            cwnd += 2;
        }
        cwnd
    }

    pub(crate) fn inflight(&self, sk: &Sock, bw: u64, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(sk, bdp)
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when the next skb
    /// leaves at its departure time (`tcp_wstamp_ns`), at the estimated bandwidth; with the
    /// skb itself when probing up.
    pub(crate) fn packets_in_net_at_edt(&self, sk: &Sock, inflight_now: u32) -> u32 {
        in_net_at_edt(
            sk,
            self.bw(),
            inflight_now,
            self.pacing_gain,
            self.tso_segs_goal(sk),
        )
    }

    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || !(self.full_bw_reached || self.p.extra_acked_in_startup)
        {
            return 0;
        }
        let max_aggr =
            (self.bw() as u128 * self.p.extra_acked_max_us as u128 / BW_UNIT as u128) as u64;
        let aggr = (self.p.extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE;
        aggr.min(max_aggr) as u32
    }

    /// `bbr_probe_rtt_cwnd`: max(cwnd_min_target, probe_rtt_cwnd_gain * BDP).
    pub(crate) fn probe_rtt_cwnd(&self) -> u32 {
        if self.p.probe_rtt_cwnd_gain == 0 {
            return self.p.cwnd_min_target;
        }
        self.p
            .cwnd_min_target
            .max(self.bdp(self.bw(), self.p.probe_rtt_cwnd_gain))
    }

    /// `bbr_set_cwnd` (v2: no packet conservation; the inflight model bounds cwnd).
    pub(crate) fn set_cwnd(&mut self, sk: &mut Sock, acked: u32, bw: u64, gain: u32) {
        let mut cwnd = sk.snd_cwnd;
        if acked > 0 {
            let mut target = self.bdp(bw, gain);
            target += self.ack_aggregation_cwnd();
            target = self.quantization_budget(sk, target);
            self.try_fast_path = false;
            if self.full_bw_reached {
                cwnd += acked;
                if cwnd >= target {
                    cwnd = target;
                    self.try_fast_path = true;
                }
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        sk.snd_cwnd = cwnd.min(sk.snd_cwnd_clamp);
        if self.mode == BbrMode::ProbeRtt {
            sk.snd_cwnd = sk.snd_cwnd.min(self.probe_rtt_cwnd());
        }
    }

    pub(crate) fn update_round_start(&mut self, sk: &Sock, rs: &RateSample) {
        self.round_start = false;
        if rs.interval / 1000 > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = sk.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_calculate_bw_sample`: delivered / interval, rounded up.
    pub(crate) fn calculate_bw_sample(&self, rs: &RateSample, ctx: &mut Ctx) {
        let interval_us = rs.interval / 1000;
        if interval_us > 0 && rs.delivered >= 0 {
            ctx.sample_bw = (rs.delivered as u64 * BW_UNIT).div_ceil(interval_us as u64);
        }
    }

    pub(crate) fn update_ack_aggregation(&mut self, sk: &Sock, rs: &RateSample) {
        if self.p.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval / 1000 <= 0
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            let thresh = if self.p.extra_acked_in_startup && !self.full_bw_reached {
                1
            } else {
                self.p.extra_acked_win_rtts
            };
            if self.extra_acked_win_rtts >= thresh {
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

    /// Keep the max of the last 1-2 PROBE_BW cycles: flip the window each cycle.
    pub(crate) fn advance_max_bw_filter(&mut self) {
        if self.max_bw[1] == 0 {
            return;
        }
        self.max_bw[0] = self.max_bw[1];
        self.max_bw[1] = 0;
    }

    /// `bbr2_target_inflight`: min(BDP, cwnd).
    pub(crate) fn target_inflight(&self, sk: &Sock) -> u32 {
        self.inflight(sk, self.bw(), BBR_UNIT).min(sk.snd_cwnd)
    }

    pub(crate) fn is_probing_bandwidth(&self) -> bool {
        self.mode == BbrMode::Startup
            || (self.mode == BbrMode::ProbeBw
                && (self.cycle_idx == BW_PROBE_REFILL || self.cycle_idx == BW_PROBE_UP))
    }

    pub(crate) fn has_elapsed_in_phase(&self, sk: &Sock, interval_us: u32) -> bool {
        us_delta(sk.now, self.cycle_mstamp + interval_us as u64 * 1000) > 0
    }

    pub(crate) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// Once per round: EWMA of the CE fraction (g = 1/16); also decides ECN eligibility.
    pub(crate) fn update_ecn_alpha(&mut self, sk: &Sock) {
        if self.r.v3 {
            // v3: decide eligibility first; the EWMA only runs for eligible flows.
            if !self.ecn_eligible
                && self.r.ecn_enable
                && self.p.ecn_factor > 0
                && (self.min_rtt_us <= self.r.ecn_max_rtt_us || self.r.ecn_max_rtt_us == 0)
            {
                self.ecn_eligible = true;
            }
            if !self.ecn_eligible {
                return;
            }
        } else if self.p.ecn_factor == 0 {
            return;
        }
        let delivered = sk.delivered.wrapping_sub(self.alpha_last_delivered) as i64;
        let delivered_ce = sk.delivered_ce.wrapping_sub(self.alpha_last_delivered_ce) as i64;
        if delivered <= 0 || delivered_ce < 0 {
            return;
        }
        if !self.ecn_eligible
            && self.r.ecn_enable
            && (self.min_rtt_us <= self.r.ecn_max_rtt_us || self.r.ecn_max_rtt_us == 0)
        {
            self.ecn_eligible = true;
        }
        let ce_ratio = ((delivered_ce as u64) << BBR_SCALE) / delivered as u64;
        let gain = self.p.ecn_alpha_gain as u64;
        let mut alpha = ((BBR_UNIT as u64 - gain) * self.ecn_alpha as u64) >> BBR_SCALE;
        alpha += (gain * ce_ratio) >> BBR_SCALE;
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = sk.delivered;
        self.alpha_last_delivered_ce = sk.delivered_ce;
        self.check_ecn_too_high_in_startup(sk, ce_ratio as u32);
    }

    /// Loss above `loss_thresh` of `tx_in_flight`, or CE >= `ecn_thresh` of delivered.
    pub(crate) fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 {
            let loss_thresh = (rs.tx_in_flight as u64 * self.p.loss_thresh as u64) >> BBR_SCALE;
            if rs.lost > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible && self.p.ecn_thresh > 0 {
            let ecn_thresh = (rs.delivered as u64 * self.p.ecn_thresh as u64) >> BBR_SCALE;
            let ce = rs.delivered_ce as u64;
            if ce > ecn_thresh || (!self.r.v3 && ce == ecn_thresh) {
                return true;
            }
        }
        false
    }

    /// `bbr2_inflight_hi_from_lost_skb`: the in-flight level at which the loss rate crossed
    /// `loss_thresh`, solving (lost_prev + x) / (inflight_prev + x) = loss_thresh for the
    /// prefix x of the lost segment, rounded up (one segment here: `tcp_skb_pcount` is 1).
    pub(crate) fn inflight_hi_from_lost_skb(&self, rs: &RateSample) -> u32 {
        const PCOUNT: u64 = 1;
        let thresh = self.p.loss_thresh as u64;
        let (Some(inflight_prev), Some(lost_prev)) = (
            (rs.tx_in_flight as u64).checked_sub(PCOUNT),
            rs.lost.checked_sub(PCOUNT),
        ) else {
            return UNSET32;
        };
        let budget = (inflight_prev * thresh + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let prefix = if lost_prev >= budget {
            0
        } else {
            ((budget - lost_prev) << BBR_SCALE) / (BBR_UNIT as u64 - thresh)
        };
        (inflight_prev + prefix) as u32
    }

    /// inflight_hi minus 15% headroom, at least cwnd_min_target.
    pub(crate) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET32 {
            return UNSET32;
        }
        let headroom =
            ((self.inflight_hi as u64 * self.p.inflight_headroom as u64) >> BBR_SCALE).max(1);
        ((self.inflight_hi as i64 - headroom as i64).max(self.p.cwnd_min_target as i64)) as u32
    }

    pub(crate) fn bound_cwnd_for_inflight_model(&mut self, sk: &mut Sock) {
        if !self.initialized {
            return;
        }
        let mut cap = UNSET32;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx != BW_PROBE_CRUISE {
            cap = self.inflight_hi;
        } else if self.mode == BbrMode::ProbeRtt
            || (self.mode == BbrMode::ProbeBw && self.cycle_idx == BW_PROBE_CRUISE)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo);
        cap = cap.max(self.p.cwnd_min_target);
        sk.snd_cwnd = sk.snd_cwnd.min(cap);
    }

    /// `bbr2_ecn_cut`: 1 - alpha * ecn_factor.
    pub(crate) fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * self.p.ecn_factor) >> BBR_SCALE)
    }

    /// Once per round while not probing: cut bw_lo/inflight_lo on loss (beta) or ECN.
    fn adapt_lower_bounds(&mut self, sk: &Sock) {
        if self.is_probing_bandwidth() {
            return;
        }
        let ecn_bw_lo_on = self.p.ecn_bw_lo && !self.r.newer;
        let mut ecn_inflight_lo = UNSET32;
        let mut ecn_bw_lo = UNSET_BW;
        // (v3 folds eligibility into ecn_in_round.)
        if self.ecn_in_round && (self.ecn_eligible || self.r.v3) && self.p.ecn_factor > 0 {
            let cut = self.ecn_cut() as u64;
            if ecn_bw_lo_on && self.bw_lo == UNSET_BW {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == UNSET32 {
                self.inflight_lo = sk.snd_cwnd;
            }
            ecn_inflight_lo = ((self.inflight_lo as u64 * cut) >> BBR_SCALE) as u32;
            if ecn_bw_lo_on {
                ecn_bw_lo = (self.bw_lo * cut) >> BBR_SCALE;
            }
        }
        if self.loss_in_round {
            if self.bw_lo == UNSET_BW {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo == UNSET32 {
                self.inflight_lo = sk.snd_cwnd;
            }
            let keep = (BBR_UNIT - self.p.beta) as u64;
            self.bw_lo = self.bw_latest.max((self.bw_lo * keep) >> BBR_SCALE);
            self.inflight_lo = self
                .inflight_latest
                .max(((self.inflight_lo as u64 * keep) >> BBR_SCALE) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if ecn_bw_lo_on {
            self.bw_lo = self.bw_lo.min(ecn_bw_lo);
        }
        if self.r.v3 {
            self.bw_lo = self.bw_lo.max(1);
        }
    }

    pub(crate) fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET_BW;
        self.inflight_lo = UNSET32;
    }

    pub(crate) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// Track the latest round's delivery rate and volume, loss presence, and once per
    /// (loss-)round adapt the lower bounds.
    pub(crate) fn update_congestion_signals(&mut self, sk: &Sock, rs: &RateSample, ctx: &Ctx) {
        if self.r.v3 {
            // v3: the latest-delivery filters and loss rounds are kept by
            // update/advance_latest_delivery_signals around the model update.
            if rs.interval / 1000 <= 0 || rs.acked_sacked == 0 {
                return;
            }
            let bw = ctx.sample_bw;
            if !rs.is_app_limited || bw >= self.max_bw() {
                self.max_bw[1] = self.max_bw[1].max(bw);
            }
            self.loss_in_round |= rs.losses > 0;
            if !self.loss_round_start {
                return;
            }
            self.adapt_lower_bounds(sk);
            self.loss_in_round = false;
            self.ecn_in_round = false;
            return;
        }
        self.loss_round_start = false;
        if rs.interval / 1000 <= 0 || rs.acked_sacked == 0 {
            return;
        }
        let bw = ctx.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.max_bw[1] = self.max_bw[1].max(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        self.bw_latest = self.bw_latest.max(bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
        if rs.prior_delivered < self.loss_round_delivered {
            return;
        }
        self.loss_round_delivered = sk.delivered;
        self.loss_round_start = true;
        self.adapt_lower_bounds(sk);
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.bw_latest = bw;
        self.inflight_latest = rs.delivered.max(0) as u32;
    }

    /// v3 `bbr_update_latest_delivery_signals`: max rate and volume delivered in the latest
    /// round, and the loss-round clock.
    pub(crate) fn update_latest_delivery_signals(&mut self, sk: &Sock, rs: &RateSample, ctx: &Ctx) {
        self.loss_round_start = false;
        if rs.interval / 1000 <= 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = sk.delivered;
            self.loss_round_start = true;
        }
    }

    /// v3 `bbr_advance_latest_delivery_signals`: restart the one-round filters.
    pub(crate) fn advance_latest_delivery_signals(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.loss_round_start {
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
        }
    }
}
