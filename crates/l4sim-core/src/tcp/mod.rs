//! TCP endpoints as Linux runs them: the data sender (client side, `iperf3 -c`) and the
//! receiver (server side). Each endpoint is a state machine driven by the engine:
//! `on_packet` / `on_timer` at the current time, pushing packets to transmit into `out`,
//! and `next_timer()` telling when it next wants `on_timer` (the engine keeps at most one
//! pending event per endpoint and tolerates stale ones: `on_timer` does whatever is due).
//!
//! Files: `sender.rs` (tcp_output.c / tcp_input.c / tcp_timer.c: scoreboard, CA state
//! machine, RTO/TLP/RACK timers, pacing), `receiver.rs` (receive path and ACK policy),
//! `rtt.rs` (tcp_rtt_estimator, win_minmax), `sack.rs` (SACKed range set), `rack.rs`
//! (RACK state, reo_wnd), `rate.rs` (tcp_rate.c), `ecn.rs` (negotiation, ACE codec),
//! `prr.rs` (tcp_cwnd_reduction), `metrics.rs` (the TCP metrics cache), `rcvbuf.rs` (receive buffer autotuning and
//! the advertised window), `tsq.rs` (TCP Small Queues). Behaviour tests with a bottleneck
//! harness: `tests.rs`.
//!
//! Modelling choices (Linux behaviour unless stated): sequence numbers count segments, one
//! segment per packet (a GSO skb leaves as a burst of segments; no GRO); TSQ on the host's
//! egress, a plain device queue or a qdisc; SACK + timestamps on; RACK-TLP loss detection;
//! PRR; undo of spurious reductions (DSACKs, timestamps (Eifel) and F-RTO), RACK's window
//! widened by DSACKs and `tp->reordering` raised by reordering seen; AccECN feedback through the ACE field (the AccECN option
//! takes its bytes on the wire, its counters are not read); the handshake's third ACK is
//! folded into the first data segment; the receive window counts whole segments at the
//! sender; HZ sets the jiffy to which the sender rounds its RTO, TLP and RACK timer durations
//! (`usecs_to_jiffies`), TCP_TIMEOUT_MIN (2 jiffies) and the receiver's delayed-ACK engine,
//! and these `timer_list` timers (and the SYN and SYN/ACK retransmission timers) run on the
//! timer wheel's tick after their expiry (`time::Jiffies::timer_runs`); pacing's and SACK
//! compression's hrtimers are exact. Each host ticks with its own phase
//! (`ConnParams::tick_phases`).

use serde::{Deserialize, Serialize};

use crate::cc::EcnMode;
use crate::packet::Ecn;
use crate::time::{SimDuration, SimTime, SEC};

pub mod ecn;
pub mod metrics;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod rcvbuf;
mod receiver;
pub mod rtt;
pub mod sack;
mod sender;
#[cfg(test)]
mod tests;
pub mod tsq;

pub use ecn::AccEcnAccept;
pub use receiver::TcpReceiver;
pub use sender::TcpSender;

/// TCP_RTO_MAX.
pub const TCP_RTO_MAX: SimDuration = 120 * SEC;
/// TCP_TIMEOUT_INIT: SYN and SYN/ACK retransmission timeout.
pub const TCP_TIMEOUT_INIT: SimDuration = SEC;
/// Window of the min_rtt filter (`sysctl_tcp_min_rtt_wlen`, 300 s).
pub const MIN_RTT_WIN: SimDuration = 300 * SEC;

/// Linux `net.ipv4.tcp_ecn` (L4STeam / mainline-bound meaning; see docs/linux-algorithms.md 2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnSysctl {
    /// 0: never request, never accept.
    None,
    /// 1: request and accept RFC 3168 ECN.
    Classic,
    /// 2 (Linux default): accept ECN when asked, never request.
    #[default]
    Passive,
    /// 3: request and accept AccECN.
    Accecn,
    /// 4: accept AccECN, request classic ECN.
    AccecnClassicOut,
    /// 5: accept AccECN, request nothing.
    AccecnPassive,
}

/// The AccECN receiver code. Both ACK at once on every change of a data segment's ECN field
/// (`tcp_ecn_received_counters`) and when a segment with the AccECN option advances the
/// timestamp while `received_ce_pending >= TCP_ACCECN_ACE_MAX_DELTA` (`__tcp_accecn_process`);
/// they differ in how `received_ce_pending` saturates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccEcnImpl {
    /// The L4STeam trees (I. Jarvinen's series as the 5.15 testing kernels carry it, and the
    /// later L4STeam/linux branches): `max(received_ce_pending + ce, 15)`, so every ECT or CE
    /// segment leaves 15 pending and the second rule ACKs the first segment after each ACK
    /// whose timestamp tick is new.
    #[default]
    L4steam,
    /// Mainline (the 2025 AccECN series): `min(received_ce_pending + ce, 15)`, so the second
    /// rule needs six CE marks since the last ACK, which the first segment after an ACK never
    /// has: for in-order data only the first rule acts.
    Mainline,
}

/// Per-endpoint TCP settings (sysctls and socket options of the testbed hosts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpSpec {
    /// `net.ipv4.tcp_ecn` of this host.
    pub ecn: EcnSysctl,
    /// The host's egress qdisc is `fq`, which paces every socket at its pacing rate (EDT).
    /// Without it only CCs that request pacing (BBR, Prague) are paced, by TCP itself.
    pub fq_pacing: bool,
    /// The host NIC does TSO/GSO (Linux default): data leaves in skbs of several segments
    /// sent back to back (`tcp_tso_autosize`, the CC's `tso_segs` hook) and unpaced senders
    /// defer partial bursts (`tcp_tso_should_defer`). Off: one segment per transmission.
    pub tso: bool,
    /// Initial congestion window, segments (TCP_INIT_CWND).
    pub init_cwnd: u32,
    /// Minimum RTO, ms (TCP_RTO_MIN).
    pub rto_min_ms: f64,
    /// `TCP_MAXSEG`: caps the payload bytes per segment. Unset, the connection's MSS is its
    /// path's (`Network::path_mss`: 1448 with timestamps on 1500-byte links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// Kernel HZ: the sender's RTO/TLP/RACK durations are whole jiffies, TCP_TIMEOUT_MIN is 2
    /// jiffies. Ubuntu kernels use 250.
    pub hz: u32,
    /// Phase of this host's jiffies tick at time 0, us (taken modulo one tick): its clock reads
    /// this much past a tick at time 0. Unset: drawn per host from the run's seed, since a
    /// host's tick phase is not under the experiment's control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jiffies_phase_us: Option<f64>,
    /// `net.ipv4.tcp_pacing_ss_ratio` / `tcp_pacing_ca_ratio`, percent.
    pub pacing_ss_ratio: u32,
    pub pacing_ca_ratio: u32,
    /// How this host, as a listener, answers an AccECN SYN (docs/linux-algorithms.md 2.2).
    pub accecn_accept: AccEcnAccept,
    /// Which AccECN receiver code this host runs (see [`AccEcnImpl`]).
    pub accecn_impl: AccEcnImpl,
    /// `net.ipv4.tcp_ecn_option`: 2 (Linux default) sends the AccECN option on every segment
    /// that has room once the peer's was seen; 0 never sends it. (1, the minimum rules, and
    /// 3 are not modelled.)
    pub ecn_option: u32,
    /// `net.ipv4.tcp_comp_sack_nr`: SACK compression after 3 immediate dup-ACKs (0 disables).
    pub comp_sack_nr: u32,
    /// `net.ipv4.tcp_comp_sack_delay_ns`, in us (delay = min(this, RTT/20)).
    pub comp_sack_delay_us: f64,
    /// `net.ipv4.tcp_slow_start_after_idle` (default 1): data written after more than an RTO
    /// without sending restarts the window (`tcp_cwnd_restart`).
    pub slow_start_after_idle: bool,
    /// `net.ipv4.tcp_rmem` (min, default, max bytes): a receiving socket starts with the
    /// default buffer and grows it up to the max; half the buffer is window
    /// (`tcp_adv_win_scale` = 1), so Linux's defaults cap a flow's window at 3 MB.
    pub rmem: [u32; 3],
    /// `net.ipv4.tcp_moderate_rcvbuf` (default 1): receive-buffer autotuning (DRS).
    pub moderate_rcvbuf: bool,
    /// `net.ipv4.tcp_frto` (default 2, on): after an RTO, F-RTO (RFC 5682, SACK-enhanced)
    /// sends new data and undoes the timeout when never-retransmitted data is then
    /// acknowledged. Off: only timestamps (Eifel) and DSACKs undo a timeout.
    pub frto: bool,
    /// `net.ipv4.tcp_autocorking` (default 1): a write whose skb is below the size goal
    /// waits, while earlier data is unacknowledged and more than that skb is still in the
    /// host's queue, for the next transmit completion; writes until then join it.
    pub autocorking: bool,
    /// The application's `TCP_NODELAY` (default off): off, Nagle's test holds a short
    /// last segment while an earlier short one is unacknowledged (`tcp_nagle_test` with
    /// Minshall's `snd_sml`).
    pub nodelay: bool,
}

impl Default for TcpSpec {
    fn default() -> Self {
        TcpSpec {
            ecn: EcnSysctl::Passive,
            fq_pacing: false,
            tso: true,
            init_cwnd: 10,
            rto_min_ms: 200.0,
            mss: None,
            hz: 250,
            jiffies_phase_us: None,
            pacing_ss_ratio: 200,
            pacing_ca_ratio: 120,
            accecn_accept: AccEcnAccept::Mainline,
            accecn_impl: AccEcnImpl::L4steam,
            ecn_option: 2,
            comp_sack_nr: 44,
            comp_sack_delay_us: 1000.0,
            slow_start_after_idle: true,
            rmem: [4096, 131_072, 6_291_456],
            moderate_rcvbuf: true,
            frto: true,
            autocorking: true,
            nodelay: false,
        }
    }
}

/// Identity and addressing of one connection, filled in by the topology builder.
#[derive(Clone, Debug)]
pub struct ConnParams {
    pub flow: u32,
    /// The scenario flow (traffic source) this connection belongs to.
    pub group: u16,
    /// DSCP of the sender's packets (the socket's IP_TOS, fixed when it opens).
    pub dscp: u8,
    /// Host node ids of the sender (client) and receiver (server).
    pub sender: u32,
    pub receiver: u32,
    /// skb hash of each direction (stable per connection).
    pub hash_fwd: u32,
    pub hash_rev: u32,
    /// Bytes to send; None: an iperf3-style bulk transfer that never ends.
    pub size: Option<u64>,
    /// MSS of the path (`Network::path_mss`); the sender's `TCP_MAXSEG` may lower it.
    pub mss: u32,
    /// The tick phase of the sender's and the receiver's host, ns (`time::Jiffies::with_phase`).
    pub tick_phases: (SimDuration, SimDuration),
    /// Some: the data receiver opened the connection (a requested `web` or `chunks`
    /// transfer), so the ECN negotiation's active end is the receiver's socket and the
    /// listener the sender's. The handshake packets still run sender first.
    pub client_opened: Option<ecn::ClientOpened>,
}

/// Sender counters reported per flow.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments transmitted, retransmissions included.
    pub data_pkts_sent: u64,
    pub retrans: u64,
    pub rto_count: u64,
    pub fast_recoveries: u64,
    /// Reductions in response to ECN (CWR entries).
    pub cwr_count: u64,
    pub ecn_mode: EcnMode,
    /// Codepoint carried by new data segments.
    pub data_ecn: Ecn,
    /// Time the handshake completed and data could flow (NEVER if not yet).
    pub established_at: SimTime,
    /// Time the last byte of a sized transfer was ACKed (NEVER if not yet).
    pub completed_at: SimTime,
    /// Tail loss probes sent.
    pub tlp_count: u64,
    /// Retransmissions detected lost again (RACK).
    pub lost_retrans: u64,
    pub syn_retrans: u64,
    pub acks_received: u64,
    pub dsacks_received: u64,
    /// Reductions undone as spurious (Linux's TCPFULLUNDO, TCPPARTIALUNDO, TCPDSACKUNDO
    /// and TCPLOSSUNDO counters together).
    pub undos: u64,
    /// Timeouts F-RTO showed spurious (Linux's TCPSPURIOUSRTOS), undone among `undos`.
    pub spurious_rtos: u64,
    /// Times new data waited for the receiver's window (`tcp_write_xmit`'s rwnd-limited
    /// exits).
    pub rwnd_limited: u64,
}

/// Receiver counters reported per flow.
#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    /// In-order payload bytes delivered to the application (what iperf3 counts).
    pub bytes_delivered: u64,
    pub data_pkts_received: u64,
    pub ce_received: u64,
    pub acks_sent: u64,
    pub ecn_mode: EcnMode,
    /// ACKs that carried SACK blocks.
    pub sack_acks_sent: u64,
    /// Data packets already received (spurious retransmissions), and out-of-order arrivals.
    pub dup_pkts: u64,
    pub ooo_pkts: u64,
    pub synack_retrans: u64,
}
