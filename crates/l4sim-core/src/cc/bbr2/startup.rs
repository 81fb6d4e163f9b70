//! BBRv2 STARTUP and DRAIN exits (tcp_bbr2.c `bbr_check_full_bw_reached`,
//! `bbr2_check_loss_too_high_in_startup`, `bbr2_check_ecn_too_high_in_startup`,
//! `bbr2_check_drain`; the L4S tree's `bbr2_check_full_bw_reached` plateau detector).

use super::super::bbr1::{BbrMode, BBR_SCALE, BBR_UNIT};
use super::super::{CaState, RateSample, Sock};
use super::{Bbr2, Ctx};

impl Bbr2 {
    /// Loss/ECN says the queue is too high in STARTUP: the pipe is full, and inflight_hi is
    /// the estimated BDP.
    fn handle_queue_too_high_in_startup(&mut self, sk: &Sock) {
        self.full_bw_reached = true;
        let bdp = self.inflight(sk, self.max_bw(), BBR_UNIT);
        self.inflight_hi = if self.r.v3 {
            bdp.max(self.inflight_latest)
        } else {
            bdp
        };
    }

    /// Called from the once-per-round alpha update: `full_ecn_cnt` consecutive rounds with a
    /// CE ratio >= `ecn_thresh` end STARTUP.
    pub(crate) fn check_ecn_too_high_in_startup(&mut self, sk: &Sock, ce_ratio: u32) {
        if self.full_bw_reached
            || !self.ecn_eligible
            || self.p.full_ecn_cnt == 0
            || self.p.ecn_thresh == 0
        {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_cnt {
            self.handle_queue_too_high_in_startup(sk);
        }
    }

    /// At the end of a round in Recovery during STARTUP: >= `full_loss_cnt` loss events and
    /// a loss rate above `loss_thresh` end STARTUP.
    pub(crate) fn check_loss_too_high_in_startup(&mut self, sk: &Sock, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.p.full_loss_cnt > 0
            && self.loss_round_start
            && sk.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.p.full_loss_cnt
            && self.is_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup(sk);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// Full-pipe detection. v2alpha: as v1 (max_bw grew < 25% for 3 non-app-limited rounds).
    /// L4S: per-sample plateau detector `full_bw_now`, also used in PROBE_UP with
    /// `full_bw_thresh_up` / `full_bw_cnt_up`.
    pub(crate) fn check_full_bw_reached(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.r.newer {
            if self.full_bw_now || rs.is_app_limited {
                return;
            }
            let (thresh, cnt) = if self.full_bw_reached {
                (self.p.full_bw_thresh_up, self.p.full_bw_cnt_up)
            } else {
                (self.p.full_bw_thresh, self.p.full_bw_cnt)
            };
            let bw_thresh = (self.full_bw * thresh as u64) >> BBR_SCALE;
            if ctx.sample_bw >= bw_thresh {
                self.reset_full_bw();
                self.full_bw = ctx.sample_bw;
                return;
            }
            if !self.round_start {
                return;
            }
            self.full_bw_cnt += 1;
            self.full_bw_now = self.full_bw_cnt >= cnt;
            self.full_bw_reached |= self.full_bw_now;
            return;
        }
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = (self.full_bw * self.p.full_bw_thresh as u64) >> BBR_SCALE;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_cnt;
    }

    /// STARTUP -> DRAIN once the pipe is full; DRAIN -> PROBE_BW (DOWN) once inflight is
    /// at most the BDP.
    pub(crate) fn check_drain(&mut self, sk: &mut Sock) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            sk.snd_ssthresh = self.inflight(sk, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == BbrMode::Drain
            && self.packets_in_net_at_edt(sk, sk.packets_in_flight())
                <= self.inflight(sk, self.max_bw(), BBR_UNIT)
        {
            self.mode = BbrMode::ProbeBw;
            self.start_bw_probe_down(sk);
        }
    }
}
