//! Congestion control: the Linux `tcp_congestion_ops` hooks as a trait, and the shared
//! socket state (`Sock`, a subset of `struct tcp_sock`) the hooks read and write.
//!
//! The TCP sender calls the hooks at the points Linux does (tcp_input.c / tcp_output.c):
//! `ssthresh` before `set_state` on entering CWR/Recovery/Loss, `pkts_acked` per ACK with an
//! RTT sample, `in_ack_event`, then either `cong_control` (CCs that own cwnd and pacing:
//! BBR, Prague) or PRR / `cong_avoid`, and `cwnd_event` on the `tcp_ca_event` events the CCs
//! here act on ([`CaEvent`]).

use serde::{Deserialize, Serialize};

use crate::rng::Rng;
use crate::time::{Jiffies, SimDuration, SimTime};

pub mod bbr1;
pub mod bbr2;
pub mod bbr3;
pub mod cubic;
pub mod dctcp;
pub mod prague;
pub mod reno;

/// Linux `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Congestion-avoidance state machine of the sender (`enum tcp_ca_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CaState {
    Open = 0,
    Disorder = 1,
    Cwr = 2,
    Recovery = 3,
    Loss = 4,
}

/// Events of `tcp_ca_event()` that a modelled CC acts on (`CA_EVENT_CWND_RESTART` and the
/// receiver's ECN and delayed-ACK events reach none of them: DCTCP's and Prague's receiver
/// echo is the TCP receiver's own, `tcp/receiver.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmission when no packet is in flight (after idle).
    TxStart,
    /// End of a CWR/Recovery reduction.
    CompleteCwr,
    /// RTO fired (`tcp_enter_loss`).
    Loss,
}

/// The ECN mode negotiated on the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    #[default]
    None,
    /// RFC 3168: ECE latched by the receiver until CWR.
    Rfc3168,
    /// Accurate ECN (RFC 9768): ACE counter.
    AccEcn,
}

/// `tcp_congestion_ops.flags` that matter here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcFlags {
    /// TCP_CONG_NEEDS_ECN: request ECN on the SYN whatever the sysctl says.
    pub needs_ecn: bool,
    /// TCP_CONG_NEEDS_ACCECN (L4STeam): request AccECN; a listener accepts it regardless.
    pub needs_accecn: bool,
    /// TCP_CONG_NO_FALLBACK_RFC3168: a classic-ECN answer disables ECN instead.
    pub no_fallback_rfc3168: bool,
    /// The receiving side of this CC echoes CE DCTCP-style (dctcp, bbr2 precise_ece_ack).
    pub dctcp_echo: bool,
}

/// Shared TCP socket state, the part of `struct tcp_sock` the CCs use.
/// Windows and counters are in segments; times in ns.
#[derive(Clone, Debug)]
pub struct Sock {
    pub now: SimTime,
    /// Payload bytes per full segment (`mss_cache`).
    pub mss: u32,
    /// IP MTU (`tcp_mss_to_mtu(mss)`), used by Prague's pacing.
    pub mtu: u32,
    pub snd_cwnd: u32,
    pub snd_ssthresh: u32,
    /// Linear-increase carry for `tcp_cong_avoid_ai`.
    pub snd_cwnd_cnt: u32,
    pub snd_cwnd_clamp: u32,
    pub snd_cwnd_stamp: SimTime,
    /// cwnd before the current reduction (for undo and BBR's save/restore).
    pub prior_cwnd: u32,
    pub prior_ssthresh: u32,
    /// Smoothed RTT (0 until the first sample) and Linux's mdev-based variation.
    pub srtt: SimDuration,
    pub rttvar: SimDuration,
    /// Windowed minimum RTT (`tcp_min_rtt`, 300 s window). `u64::MAX` until a sample.
    pub min_rtt: SimDuration,
    /// Segments sent and not yet cumulatively ACKed.
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Largest packets_out seen in the current window (for `tcp_is_cwnd_limited`).
    pub max_packets_out: u32,
    /// `max_packets_seq`: snd_nxt when `max_packets_out` was recorded (the window's end).
    pub max_packets_seq: u32,
    /// Set when the sender was limited by cwnd rather than by the application.
    pub is_cwnd_limited: bool,
    pub snd_una: u32,
    pub snd_nxt: u32,
    /// `high_seq`: snd_nxt when the current CWR/Recovery episode started.
    pub high_seq: u32,
    /// Segments delivered (ACKed or SACKed) so far, and those carrying CE feedback.
    pub delivered: u64,
    pub delivered_ce: u64,
    pub delivered_mstamp: SimTime,
    /// Total segments marked lost.
    pub lost: u64,
    /// Non-zero while the flow is application limited (tcp_rate.c `app_limited`).
    pub app_limited: u64,
    pub ca_state: CaState,
    /// Pacing rate in bytes per second; 0 = unpaced.
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    /// SK_PACING_NEEDED: the CC asked for pacing (enforced by TCP's internal pacing if the
    /// host has no fq qdisc).
    pub pacing_needed: bool,
    /// SK_PACING_FQ: the sender host's `fq` qdisc paces the socket (`tcp.fq_pacing`).
    pub pacing_fq: bool,
    pub ecn_mode: EcnMode,
    /// TCP_ECN_ECT_1: data goes out ECT(1) instead of ECT(0).
    pub ect1: bool,
    /// Time of the last data transmission (`tp->lsndtime`); Cubic's `TxStart` uses it to
    /// shift its epoch by the idle time.
    pub lsndtime: SimTime,
    /// Earliest departure time of the next skb (`tp->tcp_wstamp_ns`, the EDT stamp that
    /// `tcp_update_skb_after_send` advances by each skb's pacing time); BBR's
    /// `bbr_packets_in_net_at_edt` reads it.
    pub wstamp: SimTime,
}

impl Sock {
    pub fn new(mss: u32) -> Sock {
        Sock {
            now: 0,
            mss,
            mtu: mss + crate::packet::hdr::IP + crate::packet::hdr::TCP_TS,
            snd_cwnd: 10,
            snd_ssthresh: INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX / 2,
            snd_cwnd_stamp: 0,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            srtt: 0,
            rttvar: 0,
            min_rtt: u64::MAX,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            max_packets_out: 0,
            max_packets_seq: 0,
            is_cwnd_limited: false,
            snd_una: 0,
            snd_nxt: 0,
            high_seq: 0,
            delivered: 0,
            delivered_ce: 0,
            delivered_mstamp: 0,
            lost: 0,
            app_limited: 0,
            ca_state: CaState::Open,
            pacing_rate: 0,
            max_pacing_rate: u64::MAX,
            pacing_needed: false,
            pacing_fq: false,
            ecn_mode: EcnMode::None,
            ect1: false,
            lsndtime: 0,
            wstamp: 0,
        }
    }

    /// `tcp_packets_in_flight`: packets_out - (sacked_out + lost_out) + retrans_out.
    pub fn packets_in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }
    /// The bookkeeping half of `tcp_cwnd_validate` as 5.15.72 (the study kernel) has it: a
    /// new window, a new `packets_out` peak or a cwnd-limited send records `is_cwnd_limited`
    /// and the peak. So a pacing-limited send that raises the peak later in a window clears
    /// a cwnd-limited mark from earlier in it, and CUBIC, Reno and Prague stop growing cwnd
    /// until the next cwnd-limited send (fixed upstream by f4ce91ce12a7, which reached the
    /// 5.15 series after 5.15.72).
    pub fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        if self.snd_una.wrapping_sub(self.max_packets_seq) as i32 >= 0
            || self.packets_out > self.max_packets_out
            || is_cwnd_limited
        {
            self.max_packets_out = self.packets_out;
            self.max_packets_seq = self.snd_nxt;
            self.is_cwnd_limited = is_cwnd_limited;
        }
    }
    /// `tcp_is_cwnd_limited` (5.15.72): in slow start, whether cwnd is below twice the
    /// window's `packets_out` peak; otherwise the last `tcp_cwnd_validate` verdict.
    pub fn cwnd_limited(&self) -> bool {
        if self.in_slow_start() {
            return self.snd_cwnd < 2 * self.max_packets_out;
        }
        self.is_cwnd_limited
    }
    /// `tcp_slow_start`: grow cwnd by `acked` up to ssthresh; returns the leftover.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.snd_cwnd + acked).min(self.snd_ssthresh);
        let leftover = acked - (cwnd - self.snd_cwnd).min(acked);
        self.snd_cwnd = cwnd.min(self.snd_cwnd_clamp);
        leftover
    }
    /// `tcp_cong_avoid_ai`: +1 segment per `w` segments acked (Linux 4.x+ semantics).
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.snd_cwnd_cnt >= w {
            self.snd_cwnd_cnt = 0;
            self.snd_cwnd += 1;
        }
        self.snd_cwnd_cnt += acked;
        if self.snd_cwnd_cnt >= w {
            let delta = self.snd_cwnd_cnt / w;
            self.snd_cwnd_cnt -= delta * w;
            self.snd_cwnd += delta;
        }
        self.snd_cwnd = self.snd_cwnd.min(self.snd_cwnd_clamp);
    }
    /// Smoothed RTT in microseconds, as `tcp_info.tcpi_rtt` reports it.
    pub fn srtt_us(&self) -> u64 {
        self.srtt / 1000
    }
}

/// Delivery-rate sample for one ACK (Linux `struct rate_sample`, tcp_rate.c), times in ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    pub prior_mstamp: SimTime,
    pub prior_delivered: u64,
    pub prior_delivered_ce: u64,
    /// Segments delivered over the interval (-1: no valid sample).
    pub delivered: i64,
    pub delivered_ce: i64,
    /// Interval over which `delivered` was delivered, ns (-1: invalid).
    pub interval: i64,
    pub snd_interval: i64,
    pub rcv_interval: i64,
    /// RTT of the most recently (S)ACKed, never-retransmitted segment, ns (-1: none).
    pub rtt: i64,
    /// Segments newly marked lost on this ACK.
    pub losses: u32,
    /// Segments newly ACKed or SACKed on this ACK.
    pub acked_sacked: u32,
    pub prior_in_flight: u32,
    pub last_end_seq: u32,
    pub is_app_limited: bool,
    pub is_retrans: bool,
    pub is_ack_delayed: bool,
    /// Segments this ACK reports as CE-marked (AccECN ACE delta, or all newly delivered
    /// segments of an RFC 3168 ECE ACK), `rs->ece_delta` in the AccECN patches.
    pub ece_delta: u32,
    /// BBRv2: packets in flight when the sampled segment was sent (`tx.in_flight`).
    pub tx_in_flight: u32,
    /// BBRv2: `tp->lost` when the sampled segment was sent (`rs->prior_lost = tx.lost`).
    pub prior_lost: u64,
    /// BBRv2: segments lost between the sampled segment's send and the end of this ACK's
    /// processing, the losses it marked included (`tcp_rate_gen`: `tp->lost - prior_lost`).
    pub lost: u64,
}

/// What `pkts_acked` sees (`struct ack_sample`), times in ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    pub pkts_acked: u32,
    /// RTT sample in ns, -1 if none.
    pub rtt: i64,
    pub in_flight: u32,
}

/// The Linux `tcp_congestion_ops` hooks. Default bodies do what Linux does when a CC leaves
/// the hook NULL.
pub trait CongestionControl {
    fn name(&self) -> &'static str;
    fn flags(&self) -> CcFlags {
        CcFlags::default()
    }
    /// Called once the handshake has completed (`init` runs at the switch to ESTABLISHED):
    /// `sk.ecn_mode` is known, so CCs can pick their codepoint and pacing here.
    fn init(&mut self, _sk: &mut Sock) {}
    /// New slow-start threshold on entering CWR/Recovery/Loss (called before `set_state`).
    fn ssthresh(&mut self, sk: &mut Sock) -> u32;
    /// Per-ACK window growth when the CC has no `cong_control` and the state allows it.
    fn cong_avoid(&mut self, _sk: &mut Sock, _ack: u32, _acked: u32) {}
    /// Whether this CC currently owns cwnd and pacing through `cong_control` (then the core
    /// does no PRR, no `cong_avoid`, no pacing-rate update, and does not reset cwnd to
    /// ssthresh at the end of a reduction).
    fn has_cong_control(&self) -> bool {
        false
    }
    fn cong_control(&mut self, _sk: &mut Sock, _rs: &RateSample) {}
    fn set_state(&mut self, _sk: &mut Sock, _new: CaState) {}
    fn cwnd_event(&mut self, _sk: &mut Sock, _ev: CaEvent) {}
    /// `in_ack_event(sk, flags)`; `ece` tells whether the ACK carried ECE feedback.
    fn in_ack_event(&mut self, _sk: &mut Sock, _ece: bool) {}
    fn pkts_acked(&mut self, _sk: &mut Sock, _sample: &AckSample) {}
    /// cwnd to restore on undo; Linux's default is `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        sk.snd_cwnd.max(sk.prior_cwnd)
    }
    /// The `tso_segs` hook (L4STeam / BBRv2 trees): segments per GSO burst, or None to
    /// let the core autosize bursts from the pacing rate.
    fn tso_segs(&self, _sk: &Sock) -> Option<u32> {
        None
    }
    /// `skb_marked_lost` (BBRv2/v3 trees, called from `tcp_mark_skb_lost` after `tp->lost`
    /// counted it): a segment was just marked lost. `rs` is what Linux builds from the
    /// segment's send-time state (`tx_in_flight`, `lost` = `tp->lost - tx.lost`,
    /// `is_app_limited`); None when its `tx.delivered_mstamp` is already cleared.
    fn skb_marked_lost(&mut self, _sk: &Sock, _rs: Option<&RateSample>) {}
    /// Internal variables for time series (e.g. ("alpha", 0.3)).
    fn observe(&self, _out: &mut Vec<(&'static str, f64)>) {}
}

/// Which congestion control a flow runs, with its module parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case", deny_unknown_fields)]
pub enum CcSpec {
    Reno,
    Cubic(cubic::CubicParams),
    Dctcp(dctcp::DctcpParams),
    Prague(prague::PragueParams),
    /// BBR v1 (mainline tcp_bbr.c).
    Bbr(bbr1::Bbr1Params),
    /// BBR v2 (google/bbr v2alpha tcp_bbr2.c, or the L4STeam variant).
    Bbr2(bbr2::Bbr2Params),
    /// BBR v3 (google/bbr v3 tcp_bbr.c).
    Bbr3(bbr3::Bbr3Params),
}

impl Default for CcSpec {
    /// CUBIC, Linux's default congestion control.
    fn default() -> Self {
        CcSpec::Cubic(Default::default())
    }
}

impl CcSpec {
    /// Check the module parameters that have a meaning only in a range (Linux takes any
    /// integer; these ranges are where the named behaviour exists): the field and the problem.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let range = |f: &str, v: u32, lo: u32, hi: u32, what: &str| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err((
                    f.to_string(),
                    format!("must be {lo} to {hi} ({what}), got {v}"),
                ))
            }
        };
        match self {
            CcSpec::Cubic(p) => {
                range(
                    "beta",
                    p.beta,
                    1,
                    1024,
                    "the decrease factor over 1024: 717 is 0.7",
                )?;
                range(
                    "bic_scale",
                    p.bic_scale,
                    1,
                    u32::MAX,
                    "C = bic_scale x 10 / 1024",
                )?;
                range(
                    "hystart_detect",
                    p.hystart_detect,
                    0,
                    3,
                    "1 ACK train, 2 delay, 3 both",
                )
            }
            CcSpec::Prague(p) => {
                range(
                    "ecn_fallback",
                    p.ecn_fallback,
                    0,
                    2,
                    "0 off, 1 detect and floor alpha, 2 detect only",
                )?;
                range(
                    "rtt_scaling",
                    p.rtt_scaling,
                    0,
                    3,
                    "0 none, 1 rate, 2 scalable, 3 additive",
                )?;
                range(
                    "cwnd_mode",
                    p.cwnd_mode,
                    0,
                    2,
                    "0 fractional window, 1 rate based, 2 switch",
                )?;
                match p.alpha_init {
                    Some(a) if !(0.0..=1.0).contains(&a) => {
                        Err(("alpha_init".into(), format!("must be from 0 to 1, got {a}")))
                    }
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            CcSpec::Reno => "reno",
            CcSpec::Cubic(_) => "cubic",
            CcSpec::Dctcp(_) => "dctcp",
            CcSpec::Prague(_) => "prague",
            CcSpec::Bbr(_) => "bbr",
            CcSpec::Bbr2(_) => "bbr2",
            CcSpec::Bbr3(_) => "bbr3",
        }
    }
}

/// Static dispatch over the controllers.
pub enum AnyCc {
    Reno(reno::Reno),
    Cubic(cubic::Cubic),
    Dctcp(dctcp::Dctcp),
    Prague(prague::Prague),
    Bbr(bbr1::Bbr1),
    Bbr2(bbr2::Bbr2),
    Bbr3(bbr3::Bbr3),
}

/// Build the controller for a flow on a host whose jiffies are `clock` (its `tcp.hz` and tick
/// phase). `rng` is the flow's private CC stream.
pub fn build(spec: &CcSpec, clock: Jiffies, rng: Rng) -> AnyCc {
    match spec {
        CcSpec::Reno => AnyCc::Reno(reno::Reno),
        CcSpec::Cubic(p) => AnyCc::Cubic(cubic::Cubic::on_host(p.clone(), clock)),
        CcSpec::Dctcp(p) => AnyCc::Dctcp(dctcp::Dctcp::new(p.clone())),
        CcSpec::Prague(p) => AnyCc::Prague(prague::Prague::new(p.clone())),
        CcSpec::Bbr(p) => AnyCc::Bbr(bbr1::Bbr1::on_host(p.clone(), rng, clock)),
        CcSpec::Bbr2(p) => AnyCc::Bbr2(bbr2::Bbr2::on_host(p.clone(), rng, clock)),
        CcSpec::Bbr3(p) => AnyCc::Bbr3(bbr3::Bbr3::on_host(p.clone(), rng, clock)),
    }
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::Reno($c) => $e,
            AnyCc::Cubic($c) => $e,
            AnyCc::Dctcp($c) => $e,
            AnyCc::Prague($c) => $e,
            AnyCc::Bbr($c) => $e,
            AnyCc::Bbr2($c) => $e,
            AnyCc::Bbr3($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    fn flags(&self) -> CcFlags {
        dispatch!(self, c => c.flags())
    }
    fn init(&mut self, sk: &mut Sock) {
        dispatch!(self, c => c.init(sk))
    }
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        dispatch!(self, c => c.ssthresh(sk))
    }
    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        dispatch!(self, c => c.cong_avoid(sk, ack, acked))
    }
    fn has_cong_control(&self) -> bool {
        dispatch!(self, c => c.has_cong_control())
    }
    fn cong_control(&mut self, sk: &mut Sock, rs: &RateSample) {
        dispatch!(self, c => c.cong_control(sk, rs))
    }
    fn set_state(&mut self, sk: &mut Sock, new: CaState) {
        dispatch!(self, c => c.set_state(sk, new))
    }
    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        dispatch!(self, c => c.cwnd_event(sk, ev))
    }
    fn in_ack_event(&mut self, sk: &mut Sock, ece: bool) {
        dispatch!(self, c => c.in_ack_event(sk, ece))
    }
    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        dispatch!(self, c => c.pkts_acked(sk, sample))
    }
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        dispatch!(self, c => c.undo_cwnd(sk))
    }
    fn tso_segs(&self, sk: &Sock) -> Option<u32> {
        dispatch!(self, c => c.tso_segs(sk))
    }
    fn skb_marked_lost(&mut self, sk: &Sock, rs: Option<&RateSample>) {
        dispatch!(self, c => c.skb_marked_lost(sk, rs))
    }
    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        dispatch!(self, c => c.observe(out))
    }
}

#[cfg(test)]
mod tests {
    use super::Sock;

    /// A socket in congestion avoidance with `out` segments in flight of a 10-segment window.
    fn in_ca(out: u32) -> Sock {
        let mut sk = Sock::new(1448);
        sk.snd_cwnd = 10;
        sk.snd_ssthresh = 10;
        sk.snd_nxt = out;
        sk.packets_out = out;
        sk
    }

    #[test]
    fn a_higher_uncapped_peak_forgets_the_windows_cwnd_limited_mark_as_5_15_72_does() {
        let mut sk = in_ca(10);
        sk.cwnd_validate(true); // the cwnd test stopped this send
        assert!(sk.cwnd_limited());
        // Later in the same window: one ACK, then a paced send that reaches a new peak of 11
        // (cwnd grew meanwhile) without being stopped by cwnd.
        sk.snd_una = 1;
        sk.snd_cwnd = 12;
        sk.snd_nxt = 12;
        sk.packets_out = 11;
        sk.cwnd_validate(false);
        assert!(
            !sk.cwnd_limited(),
            "5.15.72 keeps the last verdict, not the window's"
        );
        // The same send below the peak keeps the mark (no new window, no new peak).
        let mut sk = in_ca(10);
        sk.cwnd_validate(true);
        sk.snd_una = 1;
        sk.packets_out = 9;
        sk.cwnd_validate(false);
        assert!(sk.cwnd_limited());
    }

    #[test]
    fn a_new_window_records_the_send_afresh() {
        let mut sk = in_ca(10);
        sk.cwnd_validate(true);
        sk.snd_una = 10; // everything of the recorded window acknowledged
        sk.snd_nxt = 14;
        sk.packets_out = 4;
        sk.cwnd_validate(false);
        assert_eq!((sk.max_packets_out, sk.max_packets_seq), (4, 14));
        assert!(!sk.cwnd_limited());
    }

    #[test]
    fn slow_start_asks_only_whether_cwnd_is_below_twice_the_peak() {
        let mut sk = Sock::new(1448);
        sk.snd_cwnd = 20;
        sk.is_cwnd_limited = true;
        sk.max_packets_out = 10;
        assert!(
            !sk.cwnd_limited(),
            "20 is not below 2 x 10: the flag does not count"
        );
        sk.max_packets_out = 11;
        assert!(sk.cwnd_limited());
    }
}
