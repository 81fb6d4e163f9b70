//! BBRv2 min_rtt filters and PROBE_RTT (tcp_bbr2.c `bbr_update_min_rtt`,
//! `bbr_check_probe_rtt_done`, `bbr2_exit_probe_rtt`): a 5 s `probe_rtt_min` filter schedules
//! PROBE_RTT, which holds cwnd at max(4, 0.5 BDP) for 200 ms and one round; the 10 s min_rtt
//! filter feeds the BDP. The stamps are jiffies, so the filters expire and PROBE_RTT ends on
//! the host's ticks (`after()`: the first tick past the stamp plus the span).

use super::super::bbr1::BbrMode;
use super::super::{RateSample, Sock};
use super::{AckPhase, Bbr2};
use crate::time::{MS, SEC};

impl Bbr2 {
    pub(crate) fn check_probe_rtt_done(&mut self, sk: &mut Sock) {
        let now = self.clock.at(sk.now);
        if !(self.probe_rtt_done_stamp != 0 && now > self.probe_rtt_done_stamp) {
            return;
        }
        self.probe_rtt_min_stamp = now; // schedule the next PROBE_RTT
        sk.snd_cwnd = sk.snd_cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(sk);
    }

    fn exit_probe_rtt(&mut self, sk: &Sock) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = BbrMode::ProbeBw;
            self.start_bw_probe_down(sk);
            self.start_bw_probe_cruise();
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    pub(crate) fn update_min_rtt(&mut self, sk: &mut Sock, rs: &RateSample) {
        let now = self.clock.at(sk.now);
        let probe_rtt_expired =
            now > self.probe_rtt_min_stamp + self.clock.ceil(self.p.probe_rtt_win_ms as u64 * MS);
        if rs.rtt >= 0 {
            let rtt_us = (rs.rtt / 1000).min(u32::MAX as i64) as u32;
            // v2 refreshes on an equal sample, v3 only on a lower one.
            let lower = if self.r.v3 {
                rtt_us < self.probe_rtt_min_us
            } else {
                rtt_us <= self.probe_rtt_min_us
            };
            if lower || (probe_rtt_expired && !rs.is_ack_delayed) {
                self.probe_rtt_min_us = rtt_us;
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired =
            now > self.min_rtt_stamp + self.clock.ceil(self.p.min_rtt_win_sec as u64 * SEC);
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if self.p.probe_rtt_mode_ms > 0
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != BbrMode::ProbeRtt
        {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(sk);
            self.probe_rtt_done_stamp = 0;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = sk.delivered;
        }
        if self.mode == BbrMode::ProbeRtt {
            let v = sk.delivered + sk.packets_in_flight() as u64;
            sk.app_limited = if v > 0 { v } else { 1 };
            if self.probe_rtt_done_stamp == 0 && sk.packets_in_flight() <= self.probe_rtt_cwnd() {
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
}
