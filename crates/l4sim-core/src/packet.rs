//! Packets, moved by value through the network.
//!
//! Sequence numbers count segments, not bytes: every data segment of a bulk flow carries one
//! MSS (the last segment of a sized flow may be shorter, its `payload` says so). This keeps
//! the SACK scoreboard and the ACK arithmetic simple and exact for the study's traffic.

use crate::time::SimTime;

/// The IP-ECN field (RFC 3168), with the codepoint values of the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[repr(u8)]
pub enum Ecn {
    #[default]
    NotEct = 0b00,
    Ect1 = 0b01,
    Ect0 = 0b10,
    Ce = 0b11,
}

impl Ecn {
    pub const ALL: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
    /// Linux `INET_ECN_set_ce`: ECT(0)/ECT(1) become CE; CE stays CE. Returns true when the
    /// packet now carries CE (so a Not-ECT packet returns false and is left alone).
    pub fn set_ce(&mut self) -> bool {
        match *self {
            Ecn::NotEct => false,
            _ => {
                *self = Ecn::Ce;
                true
            }
        }
    }
    pub fn bits(self) -> u8 {
        self as u8
    }
    #[cfg(test)]
    pub fn from_bits(b: u8) -> Ecn {
        match b & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "not_ect",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
            Ecn::Ce => "ce",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// TCP header flags. `AE` is the AccECN bit (formerly NS); with CWR and ECE it forms ACE.
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
    pub const AE: u8 = 0x20; // stands in for the NS/AE bit (URG is never used here)
}

/// Direction of a packet within its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From the data sender (client) to the receiver (server): SYN and data.
    Fwd,
    /// From the receiver back to the sender: SYN/ACK and ACKs.
    Rev,
}

/// A SACK block [start, end) in segment numbers.
pub type SackBlock = (u32, u32);

/// Header sizes for a 1500-byte MTU Ethernet path with TCP timestamps (Linux default).
pub mod hdr {
    /// Ethernet header counted by qdiscs (`qdisc_pkt_len` = skb->len including the MAC header).
    pub const ETH: u32 = 14;
    pub const IP: u32 = 20;
    /// `TCPOLEN_TSTAMP_ALIGNED`: the timestamp option with its padding.
    pub const TSTAMP_ALIGNED: u32 = 12;
    /// TCP header with the timestamp option (20 + 12).
    pub const TCP_TS: u32 = 20 + TSTAMP_ALIGNED;
    /// `MAX_TCP_OPTION_SPACE`: option bytes a TCP header can carry.
    pub const OPTION_SPACE: u32 = 40;
    pub const MTU: u32 = 1500;
    /// Largest link MTU a scenario may give (jumbo frames).
    pub const MAX_MTU: u32 = 9000;
    /// Payload of a full segment: 1500 - 20 - 32.
    pub const MSS: u32 = MTU - IP - TCP_TS;
    /// `psched_mtu`: the MTU plus the link-layer header, as qdiscs use it (1514).
    pub const PSCHED_MTU: u32 = MTU + ETH;
    /// Option bytes of `n_sack` SACK blocks (`TCPOLEN_SACK_BASE_ALIGNED` + 8 each).
    pub fn sack_len(n_sack: u8) -> u32 {
        if n_sack > 0 {
            4 + 8 * n_sack as u32
        } else {
            0
        }
    }
    /// Wire length of a segment with `payload` bytes and `n_sack` SACK blocks.
    pub fn wire_len(payload: u32, n_sack: u8) -> u32 {
        ETH + IP + TCP_TS + sack_len(n_sack) + payload
    }
}

/// One packet. Plain data, copied by value (no per-packet allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Connection index (the scenario's flow number).
    pub flow: u32,
    pub dir: Dir,
    /// Source and destination host node ids (for routing).
    pub src: u32,
    pub dst: u32,
    /// Bytes on the wire as a qdisc counts them (Ethernet + IP + TCP headers + payload).
    pub len: u32,
    /// TCP payload bytes (0 for pure ACKs and SYNs).
    pub payload: u32,
    pub ecn: Ecn,
    /// Codepoint the packet had when it entered the current qdisc (set by the qdisc wrapper,
    /// used to count CE marks per original codepoint).
    pub ecn_in: Ecn,
    /// TCP flags (see [`flags`]).
    pub flags: u8,
    /// First segment number carried (data), or the SYN's initial number.
    pub seq: u32,
    /// Cumulative ACK: next segment number expected.
    pub ack: u32,
    pub sack: [SackBlock; 3],
    pub n_sack: u8,
    /// DSACK: the first SACK block reports a duplicate (RFC 2883).
    pub dsack: bool,
    /// TCP timestamps (RFC 7323), here in ns of the sender's clock.
    pub ts_val: SimTime,
    pub ts_ecr: SimTime,
    /// Receive window offered (bytes: the window field times 2^wscale; a SYN's unscaled).
    pub wnd: u32,
    /// Enqueue time at the current qdisc (skb->tstamp / enqueue_time in Linux qdiscs).
    pub enq_ts: SimTime,
    /// Flow hash (skb_get_hash): fixed per connection and direction.
    pub hash: u32,
    /// Data packets: true for a retransmission.
    pub retrans: bool,
    /// Index of the scenario flow (traffic source) the packet belongs to, for per-source
    /// queue-delay histograms; `flow` is the connection.
    pub group: u16,
    /// DSCP (the upper six bits of the IP TOS byte), set by the sender from its flow's `dscp`.
    pub dscp: u8,
    /// What the sk_buff carries beyond the headers (see [`skb`]).
    pub skb: u8,
}

/// Flags of the sk_buff around a packet, in [`Packet::skb`].
pub mod skb {
    /// A copy made by netem's `duplicate` on its way to the root qdisc: the netem that made
    /// it does not duplicate it again (Linux zeroes that netem's `q->duplicate` around the
    /// root enqueue). That netem clears the flag when the copy reaches it.
    pub const NETEM_DUP: u8 = 1;
    /// A bit flipped by netem's `corrupt`: the destination host's checksum discards it.
    pub const CORRUPT: u8 = 2;
    /// A TCP data segment still charged to its socket's `sk_wmem_alloc` (its destructor is
    /// `tcp_wfree`, TCP Small Queues) while it waits in a qdisc on its host's own egress:
    /// freed when the line has sent it, when it is dropped, or when a delaying netem orphans
    /// it (`skb_orphan_partial`). Copies (`skb_clone`) are not charged.
    pub const WFREE: u8 = 4;
    /// A UDP datagram (no TCP header: the TCP flags a UDP source uses for its own feedback
    /// are not seen by matches on the TCP header, such as ip6tables' `--ecn-tcp-ece`).
    pub const UDP: u8 = 8;
}

/// The tests of ip6tables' `-m ecn` match (net/netfilter/xt_ecn.c) as bits, for policy routes
/// by ECN ([`Packet::ecn_tests`]): `--ecn-ip-ect N` is bit N (the IP-ECN field's value: 0
/// Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE), `-p tcp --ecn-tcp-ece` / `--ecn-tcp-cwr` a TCP segment
/// with ECE / CWR set.
pub mod ecn_test {
    pub const NOT_ECT: u8 = 1 << 0;
    pub const ECT1: u8 = 1 << 1;
    pub const ECT0: u8 = 1 << 2;
    pub const CE: u8 = 1 << 3;
    pub const TCP_ECE: u8 = 1 << 4;
    pub const TCP_CWR: u8 = 1 << 5;
}

impl Packet {
    /// A client's request for a transfer (`World::request`): a bare SYN toward the data
    /// sender, which no TCP endpoint here sends otherwise (the receiver's SYN carries ACK).
    pub fn is_request(&self) -> bool {
        self.dir == Dir::Rev && self.flags == flags::SYN
    }

    pub fn new(flow: u32, dir: Dir, src: u32, dst: u32) -> Packet {
        Packet {
            flow,
            dir,
            src,
            dst,
            len: hdr::wire_len(0, 0),
            payload: 0,
            ecn: Ecn::NotEct,
            ecn_in: Ecn::NotEct,
            flags: 0,
            seq: 0,
            ack: 0,
            sack: [(0, 0); 3],
            n_sack: 0,
            dsack: false,
            ts_val: 0,
            ts_ecr: 0,
            wnd: 0,
            enq_ts: 0,
            hash: 0,
            retrans: false,
            group: 0,
            dscp: 0,
            skb: 0,
        }
    }
    /// A full-size data segment of flow 0 from node 0 to node 1 (for tests).
    #[cfg(test)]
    pub fn full_segment() -> Packet {
        let mut p = Packet::new(0, Dir::Fwd, 0, 1);
        p.payload = hdr::MSS;
        p.len = hdr::wire_len(hdr::MSS, 0);
        p
    }
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    /// The [`ecn_test`]s this packet passes: its IP-ECN field's, and for a TCP segment those
    /// of its ECE and CWR flags.
    #[inline]
    pub fn ecn_tests(&self) -> u8 {
        let tcp = if self.skb & skb::UDP == 0 {
            (self.flags & (flags::ECE | flags::CWR)) >> 2
        } else {
            0
        };
        1 << self.ecn.bits() | tcp
    }
    pub fn is_data(&self) -> bool {
        self.payload > 0
    }
    /// TCP option bytes beyond the timestamps and the SACK blocks: the AccECN option, the only
    /// other option modelled (`tcp::ecn::accecn_option_len`; 0 when absent).
    pub fn accecn_option_bytes(&self) -> u32 {
        self.len - hdr::wire_len(self.payload, self.n_sack)
    }
    /// The 3-bit ACE field (AccECN): AE, CWR, ECE from most to least significant.
    pub fn ace(&self) -> u8 {
        ((self.flags & flags::AE != 0) as u8) << 2
            | ((self.flags & flags::CWR != 0) as u8) << 1
            | (self.flags & flags::ECE != 0) as u8
    }
    pub fn set_ace(&mut self, ace: u8) {
        self.flags &= !(flags::AE | flags::CWR | flags::ECE);
        if ace & 4 != 0 {
            self.flags |= flags::AE;
        }
        if ace & 2 != 0 {
            self.flags |= flags::CWR;
        }
        if ace & 1 != 0 {
            self.flags |= flags::ECE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_segment_is_1514_bytes_at_the_qdisc() {
        assert_eq!(hdr::MSS, 1448);
        assert_eq!(hdr::wire_len(hdr::MSS, 0), 1514);
    }

    #[test]
    fn set_ce_leaves_not_ect_alone() {
        let mut e = Ecn::NotEct;
        assert!(!e.set_ce());
        assert_eq!(e, Ecn::NotEct);
        for mut e in [Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
            assert!(e.set_ce());
            assert_eq!(e, Ecn::Ce);
        }
    }

    #[test]
    fn ecn_tests_are_xt_ecns_ip_and_tcp_matches() {
        let mut p = Packet::full_segment();
        for (ecn, bit) in [
            (Ecn::NotEct, ecn_test::NOT_ECT),
            (Ecn::Ect1, ecn_test::ECT1),
            (Ecn::Ect0, ecn_test::ECT0),
            (Ecn::Ce, ecn_test::CE),
        ] {
            p.ecn = ecn;
            assert_eq!(p.ecn_tests(), bit, "{ecn:?}");
        }
        p.ecn = Ecn::Ect0;
        p.flags = flags::ACK | flags::CWR;
        assert_eq!(p.ecn_tests(), ecn_test::ECT0 | ecn_test::TCP_CWR);
        p.flags = flags::SYN | flags::ECE | flags::CWR | flags::AE;
        let both = ecn_test::TCP_ECE | ecn_test::TCP_CWR;
        assert_eq!(p.ecn_tests(), ecn_test::ECT0 | both);
        // `-p tcp`: a UDP datagram's flags (UDP Prague's own feedback) are not TCP's.
        p.skb = skb::UDP;
        assert_eq!(p.ecn_tests(), ecn_test::ECT0);
    }

    #[test]
    fn ace_roundtrips_through_header_bits() {
        let mut p = Packet::new(0, Dir::Rev, 0, 1);
        for v in 0..8 {
            p.set_ace(v);
            assert_eq!(p.ace(), v);
        }
    }
}
