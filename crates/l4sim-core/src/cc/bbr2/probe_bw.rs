//! BBRv2 PROBE_BW: the DOWN -> CRUISE -> REFILL -> UP cycle and the upper bounds
//! `inflight_hi` / `bw_hi` (tcp_bbr2.c `bbr2_update_cycle_phase`, `bbr2_adapt_upper_bounds`,
//! `bbr2_start_bw_probe_*`, `bbr2_check_time_to_probe_bw`, `bbr2_handle_inflight_too_high`).

use super::super::bbr1::{BbrMode, BBR_SCALE, BBR_UNIT};
use super::super::{CaState, RateSample, Sock};
use super::{
    AckPhase, Bbr2, Ctx, BW_PROBE_CRUISE, BW_PROBE_DOWN, BW_PROBE_REFILL, BW_PROBE_UP, UNSET32,
    UNSET_BW,
};

impl Bbr2 {
    /// Each round of UP, double the growth of inflight_hi: +1 per `cwnd / 2^rounds` acked.
    pub(crate) fn raise_inflight_hi_slope(&mut self, sk: &Sock) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(31);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (sk.snd_cwnd / growth_this_round).max(1);
    }

    fn probe_inflight_hi_upward(&mut self, sk: &Sock, rs: &RateSample) {
        if !sk.is_cwnd_limited || sk.snd_cwnd < self.inflight_hi {
            if !self.r.v3 {
                self.bw_probe_up_acks = 0; // v2: don't accumulate unused credits
            }
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(sk);
        }
    }

    /// Loss/ECN too high while probing: inflight_hi = max(tx_in_flight, (1-beta) * target
    /// inflight), once per probe, then go DOWN.
    pub(crate) fn handle_inflight_too_high(&mut self, sk: &Sock, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.is_app_limited {
            let keep = (BBR_UNIT - self.p.beta) as u64;
            let floor = ((self.target_inflight(sk) as u64 * keep) >> BBR_SCALE) as u32;
            self.inflight_hi = rs.tx_in_flight.max(floor);
            // v2alpha: ECN also cuts bw_hi (bbr2_handle_inflight_too_high_via_ecn).
            if !self.r.newer
                && self.p.ecn_bw_hi
                && self.ecn_eligible
                && !self.got_ok_bw_probe_sample
            {
                let cut = self.ecn_cut() as u64;
                if self.bw_hi == UNSET_BW {
                    self.bw_hi = self.max_bw();
                }
                self.bw_hi = (self.bw_hi * cut) >> BBR_SCALE;
            }
        }
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
            self.start_bw_probe_down(sk);
        }
    }

    /// Returns true when it decided a state transition.
    fn adapt_upper_bounds(&mut self, sk: &Sock, rs: &RateSample, ctx: &Ctx) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == BbrMode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == BbrMode::ProbeBw
                && self.stopped_risky_probe
                && !self.prev_probe_too_high
            {
                self.start_bw_probe_refill(sk, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(sk, rs);
            }
        } else {
            if !self.r.newer {
                self.got_ok_bw_probe_sample |= self.bw_probe_samples;
            }
            let no_signals = if self.r.newer {
                self.inflight_hi == UNSET32
            } else {
                self.inflight_hi == UNSET32 && self.bw_hi == UNSET_BW
            };
            if no_signals {
                return false;
            }
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if !self.r.newer && ctx.sample_bw > self.bw_hi {
                self.bw_hi = ctx.sample_bw;
            }
            if self.mode == BbrMode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
                self.probe_inflight_hi_upward(sk, rs);
            }
        }
        false
    }

    /// Reno-coexistence probe time: rounds since the last probe >= min(63, BDP).
    pub(crate) fn is_reno_coexistence_probe_time(&self, sk: &Sock) -> bool {
        let mut rounds = self.p.bw_probe_max_rounds;
        if self.p.bw_probe_reno_gain > 0 {
            let inflight = self.target_inflight(sk) as u64;
            let reno_rounds = ((inflight * self.p.bw_probe_reno_gain as u64) >> BBR_SCALE) as u32;
            rounds = rounds.min(reno_rounds);
        }
        self.rounds_since_probe >= rounds
    }

    /// Random wait before the next probe: 0..rand_rounds rounds of offset, and a wall clock
    /// of base + rand(0..rand_us) (2-3 s).
    pub(crate) fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = if self.p.bw_probe_rand_rounds > 0 {
            self.rng.below(self.p.bw_probe_rand_rounds)
        } else {
            0
        };
        let r = if self.p.bw_probe_rand_us > 0 {
            self.rng.below(self.p.bw_probe_rand_us)
        } else {
            0
        };
        self.probe_wait_us = self.p.bw_probe_base_us + r;
    }

    fn set_cycle_idx(&mut self, idx: u32) {
        self.cycle_idx = idx;
        self.try_fast_path = false;
    }

    pub(crate) fn start_bw_probe_refill(&mut self, sk: &Sock, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        if self.inflight_hi != UNSET32 {
            self.inflight_hi += self.p.refill_add_inc;
        }
        self.bw_probe_up_rounds = bw_probe_up_rounds & 0x1f; // a 5-bit field in Linux
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        if !self.r.newer {
            self.got_ok_bw_probe_sample = false;
        }
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = sk.delivered;
        self.set_cycle_idx(BW_PROBE_REFILL);
    }

    fn start_bw_probe_up(&mut self, sk: &Sock, ctx: &Ctx) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = sk.delivered;
        self.cycle_mstamp = sk.now;
        if self.r.newer {
            self.reset_full_bw();
            self.full_bw = ctx.sample_bw;
        }
        self.set_cycle_idx(BW_PROBE_UP);
        self.raise_inflight_hi_slope(sk);
    }

    pub(crate) fn start_bw_probe_down(&mut self, sk: &Sock) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET32;
        self.pick_probe_wait();
        self.cycle_mstamp = sk.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = sk.delivered;
        self.set_cycle_idx(BW_PROBE_DOWN);
    }

    pub(crate) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET32 {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_cycle_idx(BW_PROBE_CRUISE);
    }

    fn check_time_to_probe_bw(&mut self, sk: &Sock) -> bool {
        if self.p.ecn_reprobe_gain > 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && sk.ca_state == CaState::Open
        {
            let v = (self.inflight_hi as u64 * self.p.ecn_reprobe_gain as u64) >> BBR_SCALE;
            let n = if v > 0 { 63 - v.leading_zeros() } else { 0 };
            self.start_bw_probe_refill(sk, n);
            return true;
        }
        if self.has_elapsed_in_phase(sk, self.probe_wait_us)
            || self.is_reno_coexistence_probe_time(sk)
        {
            self.start_bw_probe_refill(sk, 0);
            return true;
        }
        false
    }

    pub(crate) fn check_time_to_cruise(&self, sk: &Sock, inflight: u32, bw: u64) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        let is_under_bdp = inflight <= self.inflight(sk, bw, BBR_UNIT);
        if self.p.drain_to_target {
            return is_under_bdp;
        }
        is_under_bdp || self.has_elapsed_in_phase(sk, self.min_rtt_us)
    }

    /// The PROBE_BW state machine (runs once the pipe is full; upper bounds adapt in DRAIN,
    /// PROBE_BW and PROBE_RTT).
    pub(crate) fn update_cycle_phase(&mut self, sk: &Sock, rs: &RateSample, ctx: &Ctx) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(sk, rs, ctx) {
            return;
        }
        if self.mode != BbrMode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(sk, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            BW_PROBE_CRUISE => {
                self.check_time_to_probe_bw(sk);
            }
            // After one round of REFILL, samples reflect the refilled pipe: probe UP.
            BW_PROBE_REFILL if self.round_start => {
                self.bw_probe_samples = true;
                self.start_bw_probe_up(sk, ctx);
            }
            BW_PROBE_UP => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else if self.r.newer && self.p.bw_probe_exit == 1 {
                    if sk.is_cwnd_limited && sk.snd_cwnd >= self.inflight_hi {
                        // inflight_hi limits bw growth: restart plateau detection.
                        self.reset_full_bw();
                        self.full_bw = ctx.sample_bw;
                    } else if self.full_bw_now {
                        done = true;
                    }
                } else if self.has_elapsed_in_phase(sk, self.min_rtt_us)
                    && inflight >= self.inflight(sk, bw, self.p.bw_probe_pif_gain)
                {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(sk);
                }
            }
            BW_PROBE_DOWN => {
                if self.check_time_to_probe_bw(sk) {
                    return;
                }
                if self.check_time_to_cruise(sk, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
            _ => {}
        }
    }
}
