//! TCP endpoints as Linux runs them: the data sender (client side, `iperf3 -c`) and the
//! receiver (server side). Each endpoint is a state machine driven by the engine:
//! `on_packet` / `on_timer` at the current time, pushing packets to transmit into `out`,
//! and `next_timer()` telling when it next wants `on_timer` (the engine keeps at most one
//! pending event per endpoint and tolerates stale ones).

use serde::{Deserialize, Serialize};

use crate::cc::{AnyCc, EcnMode, Sock};
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{SimTime, NEVER};

/// Linux `net.ipv4.tcp_ecn` (L4STeam / mainline-bound meaning; see linux-algorithms.md 2.2).
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

/// Per-endpoint TCP settings (sysctls and socket options of the testbed hosts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpSpec {
    /// `net.ipv4.tcp_ecn` of this host.
    pub ecn: EcnSysctl,
    /// The host's egress qdisc is `fq`, which paces every socket at its pacing rate (EDT).
    /// Without it only CCs that request pacing (BBR, Prague) are paced, by TCP itself.
    pub fq_pacing: bool,
    /// Initial congestion window, segments (TCP_INIT_CWND).
    pub init_cwnd: u32,
    /// Minimum RTO, ms (TCP_RTO_MIN).
    pub rto_min_ms: f64,
    /// Payload bytes per segment (1448 with timestamps on a 1500-byte MTU).
    pub mss: u32,
}

impl Default for TcpSpec {
    fn default() -> Self {
        TcpSpec {
            ecn: EcnSysctl::Passive,
            fq_pacing: false,
            init_cwnd: 10,
            rto_min_ms: 200.0,
            mss: crate::packet::hdr::MSS,
        }
    }
}

/// Identity and addressing of one connection, filled in by the topology builder.
#[derive(Clone, Debug)]
pub struct ConnParams {
    pub flow: u32,
    /// Host node ids of the sender (client) and receiver (server).
    pub sender: u32,
    pub receiver: u32,
    /// skb hash of each direction (stable per connection).
    pub hash_fwd: u32,
    pub hash_rev: u32,
    /// Bytes to send; None: an iperf3-style bulk transfer that never ends.
    pub size: Option<u64>,
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
}

/// The data sender (client side).
pub struct TcpSender {
    pub sk: Sock,
    pub cc: AnyCc,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(_params: &ConnParams, _spec: &TcpSpec, cc: AnyCc, _rng: Rng) -> TcpSender {
        TcpSender {
            sk: Sock::new(crate::packet::hdr::MSS),
            cc,
            stats: SenderStats::default(),
        }
    }
    /// Open the connection (send the SYN) at `now`.
    pub fn connect(&mut self, _now: SimTime, _out: &mut Vec<Packet>) {
        todo!("tcp sender")
    }
    pub fn on_packet(&mut self, _pkt: &Packet, _now: SimTime, _out: &mut Vec<Packet>) {
        todo!("tcp sender")
    }
    pub fn on_timer(&mut self, _now: SimTime, _out: &mut Vec<Packet>) {
        todo!("tcp sender")
    }
    pub fn next_timer(&self) -> SimTime {
        NEVER
    }
    /// Segments sent and not yet known delivered or lost, for packet conservation checks.
    pub fn in_flight(&self) -> u64 {
        0
    }
}

/// The receiver (server side, `iperf3 -s`).
pub struct TcpReceiver {
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    /// `spec` is the receiving host's settings; `cc` its socket's CC (which decides AccECN
    /// acceptance for NEEDS_ACCECN CCs and DCTCP-style CE echo).
    pub fn new(_params: &ConnParams, _spec: &TcpSpec, _cc: &AnyCc, _rng: Rng) -> TcpReceiver {
        TcpReceiver {
            stats: ReceiverStats::default(),
        }
    }
    pub fn on_packet(&mut self, _pkt: &Packet, _now: SimTime, _out: &mut Vec<Packet>) {
        todo!("tcp receiver")
    }
    pub fn on_timer(&mut self, _now: SimTime, _out: &mut Vec<Packet>) {
        todo!("tcp receiver")
    }
    pub fn next_timer(&self) -> SimTime {
        NEVER
    }
}
