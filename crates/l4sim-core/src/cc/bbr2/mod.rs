//! BBR v2, as google/bbr v2alpha `net/ipv4/tcp_bbr2.c` (0487ade5), with the L4STeam variant
//! (`L4STeam/linux` 009adfe4 `tcp_bbr2.c`) selected by `variant = "l4s"`.
//!
//! Modelled: STARTUP (bw plateau, loss and ECN exits) / DRAIN / PROBE_BW with the
//! DOWN/CRUISE/REFILL/UP cycle / PROBE_RTT (5 s `probe_rtt_min` window, cwnd = 0.5 BDP);
//! the model bounds `bw_lo`/`bw_hi`, `inflight_lo`/`inflight_hi`; loss response (2% loss
//! threshold, beta 0.3, 15% headroom); DCTCP-style ECN response (`ecn_alpha`, `ecn_factor`,
//! `ecn_thresh`), gated by `ecn_enable` and `ecn_max_rtt_us`; Reno-coexistence and wall-clock
//! probe timing; ACK aggregation; undo; the app-limited fast path.
//!
//! Files: `model.rs` (bw/BDP/pacing/cwnd and congestion signals), `startup.rs` (STARTUP and
//! DRAIN exits), `probe_bw.rs` (the PROBE_BW cycle and upper bounds), `probe_rtt.rs` (min_rtt
//! filters and PROBE_RTT).
//!
//! Differences of the L4S variant (doc 11.5): ECN on at any RTT by default, ECT(1) when
//! AccECN was negotiated (Not-ECT without ECN), DOWN pacing gain 0.91, +0.25 cwnd gain in UP,
//! the plateau detector `full_bw_now` (`full_bw_cnt_up`, `full_bw_thresh_up`, `bw_probe_exit`),
//! ECN cuts only `inflight_lo` (no `bw_lo`/`bw_hi` ECN cuts), `bw = min(max_bw, bw_lo)`.
//!
//! Loss is seen per lost segment through the core's `skb_marked_lost` hook
//! (`bbr2_skb_marked_lost` with `bbr2_inflight_hi_from_lost_skb`), as well as per ACK. One
//! difference: the core marks segments, Linux marks skbs, so a lost GSO skb of n segments is
//! n calls with `tcp_skb_pcount` 1 here.
//!
//! The min_rtt and PROBE_RTT stamps are in the host's jiffies (`tcp_jiffies32`), as Linux
//! keeps them (`probe_rtt.rs`); the rest of the clocks are microseconds (`tcp_mstamp`).

use serde::{Deserialize, Serialize};

use super::bbr1::{bw_to_mbps, BbrMode, BBR_UNIT};
use super::{AckSample, CaEvent, CaState, CcFlags, CongestionControl, EcnMode, RateSample, Sock};
use crate::rng::Rng;
use crate::time::{Jiffies, SimTime};

mod model;
mod probe_bw;
mod probe_rtt;
mod startup;

#[cfg(test)]
mod tests;

/// `enum bbr_pacing_gain_phase`: PROBE_BW sub-phases (`cycle_idx`).
pub const BW_PROBE_UP: u32 = 0;
pub const BW_PROBE_DOWN: u32 = 1;
pub const BW_PROBE_CRUISE: u32 = 2;
pub const BW_PROBE_REFILL: u32 = 3;

/// `enum bbr_ack_phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// Which code base the model follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bbr2Variant {
    /// google/bbr v2alpha.
    #[default]
    V2alpha,
    /// L4STeam/linux tcp_bbr2.c.
    L4s,
    /// google/bbr v3 (only reachable through the `bbr3` spec, see `bbr3.rs`).
    #[serde(skip)]
    V3,
}

/// Module parameters (gains and fractions in 1/256 as in the module; `None` = the variant's
/// default).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bbr2Params {
    pub variant: Bbr2Variant,
    pub high_gain: u32,
    pub startup_cwnd_gain: u32,
    pub drain_gain: u32,
    pub cwnd_gain: u32,
    /// Pacing gains UP, DOWN, CRUISE, REFILL (v2alpha: 1.25, 0.75, 1, 1; L4S: DOWN 0.91).
    pub pacing_gain: Option<[u32; 4]>,
    pub cwnd_min_target: u32,
    pub min_rtt_win_sec: u32,
    pub probe_rtt_mode_ms: u32,
    pub probe_rtt_win_ms: u32,
    pub probe_rtt_cwnd_gain: u32,
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    pub min_tso_rate: u64,
    pub tso_rtt_shift: u32,
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    pub extra_acked_max_us: u32,
    pub extra_acked_in_startup: bool,
    pub drain_to_target: bool,
    pub precise_ece_ack: bool,
    pub fast_path: bool,
    /// `bbr_ecn_enable` (v2alpha false, L4S true).
    pub ecn_enable: Option<bool>,
    /// `bbr_ecn_max_rtt_us` (v2alpha 5000, L4S 0 = any RTT).
    pub ecn_max_rtt_us: Option<u32>,
    pub beta: u32,
    pub ecn_alpha_gain: u32,
    pub ecn_alpha_init: u32,
    pub ecn_factor: u32,
    pub ecn_thresh: u32,
    pub ecn_reprobe_gain: u32,
    /// v2alpha only (the L4S tree has no ECN cut of bw_lo/bw_hi).
    pub ecn_bw_lo: bool,
    pub ecn_bw_hi: bool,
    pub loss_thresh: u32,
    pub full_loss_cnt: u32,
    pub full_ecn_cnt: u32,
    pub inflight_headroom: u32,
    pub bw_probe_pif_gain: u32,
    pub bw_probe_reno_gain: u32,
    pub bw_probe_max_rounds: u32,
    pub bw_probe_rand_rounds: u32,
    pub bw_probe_base_us: u32,
    pub bw_probe_rand_us: u32,
    pub undo: bool,
    pub refill_add_inc: u32,
    /// L4S only: PROBE_UP exit on a bw plateau (1) or on inflight >= 1.25 BDP (0).
    pub bw_probe_exit: u32,
    pub full_bw_cnt_up: u32,
    pub full_bw_thresh_up: u32,
    /// Extra cwnd gain in UP in units of 1/4 (L4S 1 = +0.25; v2alpha 0).
    pub bw_probe_cwnd_gain: Option<u32>,
}

impl Default for Bbr2Params {
    fn default() -> Self {
        let u = BBR_UNIT;
        Bbr2Params {
            variant: Bbr2Variant::V2alpha,
            high_gain: u * 2885 / 1000 + 1,
            startup_cwnd_gain: u * 2885 / 1000 + 1,
            drain_gain: u * 1000 / 2885,
            cwnd_gain: u * 2,
            pacing_gain: None,
            cwnd_min_target: 4,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            probe_rtt_win_ms: 5000,
            probe_rtt_cwnd_gain: u / 2,
            full_bw_thresh: u * 5 / 4,
            full_bw_cnt: 3,
            min_tso_rate: 1_200_000,
            tso_rtt_shift: 9,
            extra_acked_gain: u,
            extra_acked_win_rtts: 5,
            extra_acked_max_us: 100_000,
            extra_acked_in_startup: true,
            drain_to_target: true,
            precise_ece_ack: true,
            fast_path: true,
            ecn_enable: None,
            ecn_max_rtt_us: None,
            beta: u * 30 / 100,
            ecn_alpha_gain: u / 16,
            ecn_alpha_init: u,
            ecn_factor: u / 3,
            ecn_thresh: u / 2,
            ecn_reprobe_gain: 0,
            ecn_bw_lo: true,
            ecn_bw_hi: true,
            loss_thresh: u * 2 / 100,
            full_loss_cnt: 8,
            full_ecn_cnt: 2,
            inflight_headroom: u * 15 / 100,
            bw_probe_pif_gain: u * 5 / 4,
            bw_probe_reno_gain: u,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base_us: 2_000_000,
            bw_probe_rand_us: 1_000_000,
            undo: true,
            refill_add_inc: 0,
            bw_probe_exit: 0,
            full_bw_cnt_up: 2,
            full_bw_thresh_up: 1125 * u / 1000,
            bw_probe_cwnd_gain: None,
        }
    }
}

/// Parameters with the variant defaults resolved.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub l4s: bool,
    /// google/bbr v3 behaviour (see `bbr3.rs`).
    pub v3: bool,
    /// The later code lineage shared by the L4STeam tree and v3: max filter named
    /// `bw_hi[2]`, `bw = min(max_bw, bw_lo)`, no ECN cut of bw_lo/bw_hi, plateau detector
    /// `full_bw_now`, +cwnd gain in UP.
    pub newer: bool,
    pub pacing_gain: [u32; 4],
    pub ecn_enable: bool,
    pub ecn_max_rtt_us: u32,
    pub bw_probe_cwnd_gain: u32,
}

impl Bbr2Params {
    fn resolve(&self) -> Resolved {
        let u = BBR_UNIT;
        let l4s = self.variant == Bbr2Variant::L4s;
        let v3 = self.variant == Bbr2Variant::V3;
        Resolved {
            l4s,
            v3,
            newer: l4s || v3,
            pacing_gain: self.pacing_gain.unwrap_or(if l4s {
                [u * 5 / 4, u * 91 / 100, u, u]
            } else {
                [u * 5 / 4, u * 3 / 4, u, u]
            }),
            ecn_enable: self.ecn_enable.unwrap_or(l4s),
            ecn_max_rtt_us: self.ecn_max_rtt_us.unwrap_or(if l4s { 0 } else { 5000 }),
            bw_probe_cwnd_gain: self.bw_probe_cwnd_gain.unwrap_or(if l4s { 1 } else { 0 }),
        }
    }
}

/// BBR v2 per-flow state (`struct bbr` of tcp_bbr2.c). Bandwidths in pkts/us << 24; `u32::MAX`
/// (`~0U`) means "unset" for the bounds.
#[derive(Clone, Debug)]
pub struct Bbr2 {
    p: Bbr2Params,
    r: Resolved,
    rng: Rng,
    /// The host's jiffies, for the min_rtt and PROBE_RTT stamps.
    clock: Jiffies,
    mss: u32,
    // v1-shared state
    min_rtt_us: u32,
    /// Jiffies, as the two stamps below.
    min_rtt_stamp: u64,
    probe_rtt_done_stamp: u64,
    probe_rtt_min_us: u32,
    probe_rtt_min_stamp: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: SimTime,
    mode: BbrMode,
    prev_ca_state: CaState,
    round_start: bool,
    bw_probe_up_rounds: u32,
    try_fast_path: bool,
    got_ok_bw_probe_sample: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    cycle_idx: u32,
    has_seen_rtt: bool,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw_cnt: u32,
    init_cwnd: u32,
    prior_cwnd: u32,
    full_bw: u64,
    ack_epoch_mstamp: SimTime,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    // v2 state
    startup_ecn_rounds: u32,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_round_delivered: u64,
    undo_bw_lo: u64,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    bw_latest: u64,
    bw_lo: u64,
    bw_hi: u64,
    max_bw: [u64; 2],
    inflight_latest: u32,
    inflight_lo: u32,
    inflight_hi: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    probe_wait_us: u32,
    ecn_eligible: bool,
    ecn_alpha: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    rounds_since_probe: u32,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    ack_phase: AckPhase,
    loss_events_in_round: u32,
    initialized: bool,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,
    /// ECE seen by `in_ack_event` on the ACK being processed (`rs->is_ece`).
    ack_ece: bool,
}

/// "Unset" marker for the u32 bounds (`~0U`).
pub(crate) const UNSET32: u32 = u32::MAX;
/// "Unset" marker for the bw bounds.
pub(crate) const UNSET_BW: u64 = u32::MAX as u64;

/// Per-ACK scratch (`struct bbr_context`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ctx {
    pub sample_bw: u64,
}

impl Bbr2 {
    /// On a host with HZ 250 ticking from time 0.
    pub fn new(p: Bbr2Params, rng: Rng) -> Bbr2 {
        Self::on_host(p, rng, Jiffies::new(250))
    }

    /// On a host whose jiffies are `clock`.
    pub fn on_host(p: Bbr2Params, rng: Rng, clock: Jiffies) -> Bbr2 {
        let r = p.resolve();
        Bbr2 {
            p,
            r,
            rng,
            clock,
            mss: 1448,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_min_us: u32::MAX,
            probe_rtt_min_stamp: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: BbrMode::Startup,
            prev_ca_state: CaState::Open,
            round_start: false,
            bw_probe_up_rounds: 0,
            try_fast_path: false,
            got_ok_bw_probe_sample: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            cycle_idx: 0,
            has_seen_rtt: false,
            pacing_gain: BBR_UNIT,
            cwnd_gain: BBR_UNIT,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw_cnt: 0,
            init_cwnd: 10,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: UNSET_BW,
            bw_hi: UNSET_BW,
            max_bw: [0; 2],
            inflight_latest: 0,
            inflight_lo: UNSET32,
            inflight_hi: UNSET32,
            bw_probe_up_cnt: UNSET32,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            ecn_eligible: false,
            ecn_alpha: BBR_UNIT,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            initialized: false,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            ack_ece: false,
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }
    pub fn cycle_idx(&self) -> u32 {
        self.cycle_idx
    }
    pub fn inflight_hi(&self) -> u32 {
        self.inflight_hi
    }
    pub fn inflight_lo(&self) -> u32 {
        self.inflight_lo
    }
    pub fn ecn_alpha(&self) -> u32 {
        self.ecn_alpha
    }
    pub fn ecn_eligible(&self) -> bool {
        self.ecn_eligible
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// The round bookkeeping of `skb_marked_lost`: the first loss of a round starts a loss
    /// round ending at the current delivered count.
    fn note_loss(&mut self, sk: &Sock) {
        if !self.loss_in_round {
            self.loss_round_delivered = sk.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    fn update_gains(&mut self) {
        match self.mode {
            BbrMode::Startup => {
                self.pacing_gain = self.p.high_gain;
                self.cwnd_gain = self.p.startup_cwnd_gain;
            }
            BbrMode::Drain => {
                self.pacing_gain = self.p.drain_gain;
                self.cwnd_gain = self.p.startup_cwnd_gain;
            }
            BbrMode::ProbeBw => {
                self.pacing_gain = self.r.pacing_gain[self.cycle_idx as usize];
                self.cwnd_gain = self.p.cwnd_gain;
                if self.r.bw_probe_cwnd_gain > 0 && self.cycle_idx == BW_PROBE_UP {
                    self.cwnd_gain += BBR_UNIT * self.r.bw_probe_cwnd_gain / 4;
                }
            }
            BbrMode::ProbeRtt => {
                self.pacing_gain = BBR_UNIT;
                self.cwnd_gain = BBR_UNIT;
            }
        }
    }

    fn update_model(&mut self, sk: &mut Sock, rs: &RateSample, ctx: &Ctx) {
        self.update_congestion_signals(sk, rs, ctx);
        self.update_ack_aggregation(sk, rs);
        self.check_loss_too_high_in_startup(sk, rs);
        self.check_full_bw_reached(rs, ctx);
        self.check_drain(sk);
        self.update_cycle_phase(sk, rs, ctx);
        self.update_min_rtt(sk, rs);
    }

    /// `bbr2_fast_path`: returns true when the whole control update can be skipped, and
    /// clears `update_model` when only the model update can be.
    fn fast_path(
        &mut self,
        sk: &mut Sock,
        update_model: &mut bool,
        rs: &RateSample,
        ctx: &Ctx,
    ) -> bool {
        if self.p.fast_path
            && self.try_fast_path
            && rs.is_app_limited
            && ctx.sample_bw < self.max_bw()
            && !self.loss_in_round
            && !self.ecn_in_round
        {
            let prev_mode = self.mode;
            let prev_min_rtt = self.min_rtt_us;
            self.check_drain(sk);
            self.update_cycle_phase(sk, rs, ctx);
            self.update_min_rtt(sk, rs);
            if self.mode == prev_mode && self.min_rtt_us == prev_min_rtt && self.try_fast_path {
                return true;
            }
            *update_model = false;
        }
        false
    }
}

impl CongestionControl for Bbr2 {
    fn name(&self) -> &'static str {
        "bbr2"
    }
    /// `TCP_CONG_NON_RESTRICTED | TCP_CONG_WANTS_CE_EVENTS`; the receiving side echoes CE
    /// DCTCP-style when `ecn_enable && precise_ece_ack` (`bbr_cwnd_event`).
    fn flags(&self) -> CcFlags {
        CcFlags {
            dctcp_echo: self.r.ecn_enable && self.p.precise_ece_ack,
            ..CcFlags::default()
        }
    }
    fn init(&mut self, sk: &mut Sock) {
        // bbr_init (shared with v1)
        self.mss = sk.mss;
        self.init_cwnd = sk.snd_cwnd.min(0x7f);
        self.prior_cwnd = sk.prior_cwnd;
        sk.snd_ssthresh = super::INFINITE_SSTHRESH;
        // v2 starts counting rounds from 0, v3 from the current delivered count.
        self.next_rtt_delivered = if self.r.v3 { sk.delivered } else { 0 };
        self.prev_ca_state = CaState::Open;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        let min_rtt_us = if sk.min_rtt == u64::MAX {
            u32::MAX
        } else {
            (sk.min_rtt / 1000).min(u32::MAX as u64) as u32
        };
        self.probe_rtt_min_us = min_rtt_us;
        self.probe_rtt_min_stamp = self.clock.at(sk.now);
        self.min_rtt_us = min_rtt_us;
        self.min_rtt_stamp = self.probe_rtt_min_stamp;
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(sk);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.mode = BbrMode::Startup;
        self.ack_epoch_mstamp = sk.now;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
        self.try_fast_path = false;
        sk.pacing_needed = true;
        // bbr2_init
        self.initialized = true;
        self.loss_round_delivered = sk.delivered + 1;
        self.loss_round_start = false;
        self.undo_bw_lo = 0;
        self.undo_inflight_lo = 0;
        self.undo_inflight_hi = 0;
        self.loss_events_in_round = 0;
        self.startup_ecn_rounds = 0;
        self.reset_congestion_signals();
        self.bw_lo = UNSET_BW;
        self.bw_hi = UNSET_BW;
        self.max_bw = [0; 2];
        self.inflight_lo = UNSET32;
        self.inflight_hi = UNSET32;
        self.bw_probe_up_cnt = UNSET32;
        self.bw_probe_up_acks = 0;
        self.bw_probe_up_rounds = 0;
        self.probe_wait_us = 0;
        self.stopped_risky_probe = false;
        self.got_ok_bw_probe_sample = false;
        self.ack_phase = AckPhase::Init;
        self.rounds_since_probe = 0;
        self.bw_probe_samples = false;
        self.prev_probe_too_high = false;
        self.ecn_eligible = false;
        self.ecn_alpha = self.p.ecn_alpha_init.min(BBR_UNIT);
        self.alpha_last_delivered = 0;
        self.alpha_last_delivered_ce = 0;
        if self.r.l4s {
            // L4STeam: Not-ECT without ECN (bbr2_release), ECT(1) with AccECN.
            match sk.ecn_mode {
                EcnMode::None => sk.ect1 = false,
                EcnMode::AccEcn => sk.ect1 = true,
                EcnMode::Rfc3168 => {}
            }
        }
        if self.r.v3 {
            // bbr_can_use_ecn: ECN negotiated and the route marked ECN "low" (shallow-threshold).
            self.r.ecn_enable = self.p.ecn_enable.unwrap_or(false) && sk.ecn_mode != EcnMode::None;
        }
    }
    /// `bbr2_ssthresh`: save cwnd and the loss-adapted bounds for undo.
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        self.save_cwnd(sk);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        sk.snd_ssthresh
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    /// `bbr2_main`.
    fn cong_control(&mut self, sk: &mut Sock, rs: &RateSample) {
        self.mss = sk.mss;
        let mut ctx = Ctx::default();
        let mut update_model = true;

        self.update_round_start(sk, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.update_ecn_alpha(sk);
        }
        let is_ece = self.ack_ece || rs.ece_delta > 0;
        self.ack_ece = false;
        // v3 only counts ECE once the flow is ECN-eligible.
        if !self.r.v3 || self.ecn_eligible {
            self.ecn_in_round |= is_ece;
        }
        self.calculate_bw_sample(rs, &mut ctx);
        if self.r.v3 {
            self.update_latest_delivery_signals(sk, rs, &ctx);
        }

        if !self.fast_path(sk, &mut update_model, rs, &ctx) {
            if update_model {
                self.update_model(sk, rs, &ctx);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(sk, bw, self.pacing_gain);
            self.set_cwnd(sk, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(sk);
        }
        if self.r.v3 {
            self.advance_latest_delivery_signals(rs, &ctx);
        }
        self.prev_ca_state = sk.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }
    /// `bbr2_set_state`: on RTO remember the pre-RTO cwnd in `inflight_lo`; restore cwnd when
    /// leaving Loss.
    fn set_state(&mut self, sk: &mut Sock, new: CaState) {
        if new == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            if self.r.newer {
                self.reset_full_bw();
            } else {
                self.full_bw = 0; // v2alpha only clears the reference bw
            }
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET32 {
                self.inflight_lo = if self.r.newer {
                    sk.snd_cwnd.max(self.prior_cwnd)
                } else {
                    self.prior_cwnd
                };
            }
        } else if self.prev_ca_state == CaState::Loss {
            sk.snd_cwnd = sk.snd_cwnd.max(self.prior_cwnd);
            self.try_fast_path = false;
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
    fn in_ack_event(&mut self, _sk: &mut Sock, ece: bool) {
        self.ack_ece = ece;
    }
    fn pkts_acked(&mut self, _sk: &mut Sock, _sample: &AckSample) {}
    /// `bbr2_undo_cwnd`: spurious recovery: restore the bounds saved by `ssthresh`.
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        if !self.p.undo {
            return sk.snd_cwnd;
        }
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.prior_cwnd
    }
    /// "state": 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT; "cycle_idx": 0 UP, 1 DOWN,
    /// 2 CRUISE, 3 REFILL; gains as factors; "bw_mbps" (payload); "min_rtt_ms";
    /// "inflight_hi"/"inflight_lo" in segments; "ecn_alpha" in [0, 1]. -1 = unset.
    /// `bbr_tso_segs` (v2alpha's hook): the same goal as for the cwnd budget.
    fn tso_segs(&self, sk: &Sock) -> Option<u32> {
        Some(self.tso_segs_goal(sk))
    }
    /// `bbr2_skb_marked_lost`: note the loss round; while probing, see whether the loss rate
    /// of the flight up to this segment went too high, and if so cut `inflight_hi` at the
    /// segment where it did.
    fn skb_marked_lost(&mut self, sk: &Sock, rs: Option<&RateSample>) {
        self.note_loss(sk);
        let Some(rs) = rs.filter(|_| self.bw_probe_samples) else {
            return;
        };
        if self.is_inflight_too_high(rs) {
            let rs = RateSample {
                tx_in_flight: self.inflight_hi_from_lost_skb(rs),
                ..*rs
            };
            self.handle_inflight_too_high(sk, &rs);
        }
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        let opt32 = |v: u32| if v == UNSET32 { -1.0 } else { v as f64 };
        out.push(("state", self.mode as u32 as f64));
        out.push(("cycle_idx", self.cycle_idx as f64));
        out.push(("pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64));
        out.push(("cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64));
        out.push(("bw_mbps", bw_to_mbps(self.bw(), self.mss)));
        out.push((
            "min_rtt_ms",
            if self.min_rtt_us == u32::MAX {
                -1.0
            } else {
                self.min_rtt_us as f64 / 1000.0
            },
        ));
        out.push(("inflight_hi", opt32(self.inflight_hi)));
        out.push(("inflight_lo", opt32(self.inflight_lo)));
        out.push(("ecn_alpha", self.ecn_alpha as f64 / BBR_UNIT as f64));
    }
}
