//! BBR v3, as google/bbr branch v3 `net/ipv4/tcp_bbr.c` (module name "bbr" there; "bbr3"
//! here). It shares the v2 engine (`bbr2/`), run with the v3 switches (`Bbr2Variant::V3`):
//!
//! - Gains: STARTUP pacing 2.77 and cwnd 2.0; DRAIN 1/2.885; PROBE_BW pacing UP 1.25,
//!   DOWN 0.91, CRUISE/REFILL 1.0; cwnd gain 2.0, +0.25 in UP (`bw_probe_cwnd_gain`).
//! - Full-pipe / PROBE_UP exit: the per-sample plateau detector `full_bw_now` (1.25x, 3 rounds)
//!   used both in STARTUP and to end PROBE_UP (unless inflight_hi limits growth).
//! - STARTUP loss exit after `full_loss_cnt = 6` loss events in a Recovery round with loss
//!   above 2%; on a loss/ECN exit inflight_hi = max(BDP, inflight delivered in the round).
//! - ECN only when negotiated *and* the route is marked "ECN low" (`bbr_can_use_ecn`, a route
//!   feature in Google's kernel: here the `ecn_low` parameter, default false), min_rtt <=
//!   5 ms; the alpha EWMA only runs once eligible; a sample is "too high" when CE > 50%;
//!   ECN cuts inflight_lo only; `ecn_reprobe_gain = 0.5` re-probes quickly after marks stop.
//! - bw = min(max_bw, bw_lo); probe_rtt_min refreshes only on a strictly lower RTT; the
//!   latest-round delivery filters are restarted at the end of each loss round.
//!
//! Not modelled: PLB (Protective Load Balancing, default off), TLP-recovery event, the
//! per-lost-skb check of `skb_marked_lost`, ECT marking changes (`TCP_ECN_ECT_PERMANENT`
//! only affects retransmissions; the codepoint stays the core's ECT(0)).

use serde::{Deserialize, Serialize};

use super::bbr1::BBR_UNIT;
use super::bbr2::{Bbr2, Bbr2Params, Bbr2Variant};
use super::{AckSample, CaEvent, CaState, CcFlags, CongestionControl, RateSample, Sock};
use crate::rng::Rng;

/// v3 parameters (gains and fractions in 1/256, as the module constants).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr3Params {
    pub startup_pacing_gain: u32,
    pub startup_cwnd_gain: u32,
    pub drain_gain: u32,
    pub cwnd_gain: u32,
    /// UP, DOWN, CRUISE, REFILL.
    pub pacing_gain: [u32; 4],
    pub cwnd_min_target: u32,
    pub min_rtt_win_sec: u32,
    pub probe_rtt_mode_ms: u32,
    pub probe_rtt_win_ms: u32,
    pub probe_rtt_cwnd_gain: u32,
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    pub tso_rtt_shift: u32,
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    pub extra_acked_max_us: u32,
    pub fast_path: bool,
    pub precise_ece_ack: bool,
    /// Route marked as a shallow-threshold ("ECN low") environment: enables ECN use.
    pub ecn_low: bool,
    pub ecn_max_rtt_us: u32,
    pub beta: u32,
    pub ecn_alpha_gain: u32,
    pub ecn_alpha_init: u32,
    pub ecn_factor: u32,
    pub ecn_thresh: u32,
    pub ecn_reprobe_gain: u32,
    pub loss_thresh: u32,
    pub full_loss_cnt: u32,
    pub full_ecn_cnt: u32,
    pub inflight_headroom: u32,
    pub bw_probe_cwnd_gain: u32,
    pub bw_probe_max_rounds: u32,
    pub bw_probe_rand_rounds: u32,
    pub bw_probe_base_us: u32,
    pub bw_probe_rand_us: u32,
}

impl Default for Bbr3Params {
    fn default() -> Self {
        let u = BBR_UNIT;
        Bbr3Params {
            startup_pacing_gain: u * 277 / 100 + 1,
            startup_cwnd_gain: u * 2,
            drain_gain: u * 1000 / 2885,
            cwnd_gain: u * 2,
            pacing_gain: [u * 5 / 4, u * 91 / 100, u, u],
            cwnd_min_target: 4,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            probe_rtt_win_ms: 5000,
            probe_rtt_cwnd_gain: u / 2,
            full_bw_thresh: u * 5 / 4,
            full_bw_cnt: 3,
            tso_rtt_shift: 9,
            extra_acked_gain: u,
            extra_acked_win_rtts: 5,
            extra_acked_max_us: 100_000,
            fast_path: true,
            precise_ece_ack: true,
            ecn_low: false,
            ecn_max_rtt_us: 5000,
            beta: u * 30 / 100,
            ecn_alpha_gain: u / 16,
            ecn_alpha_init: u,
            ecn_factor: u / 3,
            ecn_thresh: u / 2,
            ecn_reprobe_gain: u / 2,
            loss_thresh: u * 2 / 100,
            full_loss_cnt: 6,
            full_ecn_cnt: 2,
            inflight_headroom: u * 15 / 100,
            bw_probe_cwnd_gain: 1,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base_us: 2_000_000,
            bw_probe_rand_us: 1_000_000,
        }
    }
}

impl Bbr3Params {
    /// The engine parameters for v3.
    pub(crate) fn engine(&self) -> Bbr2Params {
        Bbr2Params {
            variant: Bbr2Variant::V3,
            high_gain: self.startup_pacing_gain,
            startup_cwnd_gain: self.startup_cwnd_gain,
            drain_gain: self.drain_gain,
            cwnd_gain: self.cwnd_gain,
            pacing_gain: Some(self.pacing_gain),
            cwnd_min_target: self.cwnd_min_target,
            min_rtt_win_sec: self.min_rtt_win_sec,
            probe_rtt_mode_ms: self.probe_rtt_mode_ms,
            probe_rtt_win_ms: self.probe_rtt_win_ms,
            probe_rtt_cwnd_gain: self.probe_rtt_cwnd_gain,
            full_bw_thresh: self.full_bw_thresh,
            full_bw_cnt: self.full_bw_cnt,
            // v3 floors TSO bursts at sysctl_tcp_min_tso_segs = 2 at any rate.
            min_tso_rate: 0,
            tso_rtt_shift: self.tso_rtt_shift,
            extra_acked_gain: self.extra_acked_gain,
            extra_acked_win_rtts: self.extra_acked_win_rtts,
            extra_acked_max_us: self.extra_acked_max_us,
            extra_acked_in_startup: true,
            drain_to_target: true,
            precise_ece_ack: self.precise_ece_ack,
            fast_path: self.fast_path,
            ecn_enable: Some(self.ecn_low),
            ecn_max_rtt_us: Some(self.ecn_max_rtt_us),
            beta: self.beta,
            ecn_alpha_gain: self.ecn_alpha_gain,
            ecn_alpha_init: self.ecn_alpha_init,
            ecn_factor: self.ecn_factor,
            ecn_thresh: self.ecn_thresh,
            ecn_reprobe_gain: self.ecn_reprobe_gain,
            ecn_bw_lo: false,
            ecn_bw_hi: false,
            loss_thresh: self.loss_thresh,
            full_loss_cnt: self.full_loss_cnt,
            full_ecn_cnt: self.full_ecn_cnt,
            inflight_headroom: self.inflight_headroom,
            bw_probe_pif_gain: BBR_UNIT * 5 / 4,
            bw_probe_reno_gain: BBR_UNIT,
            bw_probe_max_rounds: self.bw_probe_max_rounds,
            bw_probe_rand_rounds: self.bw_probe_rand_rounds,
            bw_probe_base_us: self.bw_probe_base_us,
            bw_probe_rand_us: self.bw_probe_rand_us,
            undo: true,
            refill_add_inc: 0,
            // PROBE_UP ends on a bw plateau, with the STARTUP thresholds.
            bw_probe_exit: 1,
            full_bw_cnt_up: self.full_bw_cnt,
            full_bw_thresh_up: self.full_bw_thresh,
            bw_probe_cwnd_gain: Some(self.bw_probe_cwnd_gain),
        }
    }
}

/// BBR v3 (a `Bbr2` engine with the v3 switches).
#[derive(Clone, Debug)]
pub struct Bbr3(pub Bbr2);

impl Bbr3 {
    /// On a host with HZ 250 ticking from time 0.
    pub fn new(p: Bbr3Params, rng: Rng) -> Bbr3 {
        Bbr3(Bbr2::new(p.engine(), rng))
    }

    /// On a host whose jiffies are `clock`.
    pub fn on_host(p: Bbr3Params, rng: Rng, clock: crate::time::Jiffies) -> Bbr3 {
        Bbr3(Bbr2::on_host(p.engine(), rng, clock))
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }
    fn flags(&self) -> CcFlags {
        self.0.flags()
    }
    fn init(&mut self, sk: &mut Sock) {
        self.0.init(sk)
    }
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        self.0.ssthresh(sk)
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    fn cong_control(&mut self, sk: &mut Sock, rs: &RateSample) {
        self.0.cong_control(sk, rs)
    }
    fn set_state(&mut self, sk: &mut Sock, new: CaState) {
        self.0.set_state(sk, new)
    }
    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        self.0.cwnd_event(sk, ev)
    }
    fn in_ack_event(&mut self, sk: &mut Sock, ece: bool) {
        self.0.in_ack_event(sk, ece)
    }
    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        self.0.pkts_acked(sk, sample)
    }
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        self.0.undo_cwnd(sk)
    }
    fn tso_segs(&self, sk: &Sock) -> Option<u32> {
        self.0.tso_segs(sk)
    }
    fn skb_marked_lost(&mut self, sk: &Sock, rs: Option<&RateSample>) {
        self.0.skb_marked_lost(sk, rs)
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        self.0.observe(out)
    }
}
