//! Behaviour tests of the TCP endpoints through a small in-test network: a forward path with a
//! FIFO bottleneck (fixed rate, packet limit, programmable drop/mark/delay per packet) and a
//! fixed propagation delay, and a reverse path with a fixed delay.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::VecDeque;

use super::ecn::{self, EcnRequest};
use super::*;
use crate::cc::{reno::Reno, AnyCc, CaState, CcFlags, EcnMode};
use crate::packet::{flags, Ecn, Packet};
use crate::rng::Rng;
use crate::time::{Rate, SimDuration, SimTime, MS, NEVER, SEC, US};

enum Verdict {
    Pass,
    Drop,
    Mark,
    /// Pass, arriving this much later than the FIFO would deliver it (reordering).
    Delay(SimDuration),
}

struct Ctx {
    now: SimTime,
    qlen: usize,
}

type Filter = Box<dyn FnMut(&Packet, &Ctx) -> Verdict>;

struct Harness {
    s: TcpSender,
    r: TcpReceiver,
    now: SimTime,
    rate: Rate,
    delay: SimDuration,
    limit: usize,
    departs: VecDeque<SimTime>,
    last_depart: SimTime,
    events: BinaryHeap<Reverse<(SimTime, u64)>>,
    slab: Vec<(Packet, bool)>,
    filter: Filter,
    /// Drop decision for packets on the reverse path.
    rev_drop: Box<dyn FnMut(&Packet) -> bool>,
    /// Every packet the sender emitted, with the time and its pacing rate after the call.
    fwd: Vec<(SimTime, Packet, u64)>,
    /// Every packet the receiver emitted.
    rev: Vec<(SimTime, Packet)>,
    data_drops: u64,
    data_in_net: u64,
    out: Vec<Packet>,
}

fn params(size: Option<u64>) -> ConnParams {
    ConnParams {
        group: 0,
        dscp: 0,
        flow: 0,
        sender: 1,
        receiver: 2,
        hash_fwd: 11,
        hash_rev: 12,
        size,
        mss: crate::packet::hdr::MSS,
        tick_phases: (0, 0),
        client_opened: None,
    }
}

impl Harness {
    /// `rate_mbps` bottleneck, `rtt_ms` base RTT (half each way), `limit` packets of buffer.
    fn new(
        rate_mbps: f64,
        rtt_ms: f64,
        limit: usize,
        s_spec: TcpSpec,
        r_spec: TcpSpec,
        size: Option<u64>,
    ) -> Harness {
        Self::with_flags(
            rate_mbps,
            rtt_ms,
            limit,
            s_spec,
            r_spec,
            CcFlags::default(),
            size,
        )
    }
    fn with_flags(
        rate_mbps: f64,
        rtt_ms: f64,
        limit: usize,
        s_spec: TcpSpec,
        r_spec: TcpSpec,
        r_flags: CcFlags,
        size: Option<u64>,
    ) -> Harness {
        let p = params(size);
        let s = TcpSender::new(&p, &s_spec, AnyCc::Reno(Reno));
        let r = TcpReceiver::with_cc_flags(&p, &r_spec, r_flags);
        Harness {
            s,
            r,
            now: 0,
            rate: Rate::mbps(rate_mbps),
            delay: (rtt_ms * MS as f64 / 2.0) as SimDuration,
            limit,
            departs: VecDeque::new(),
            last_depart: 0,
            events: BinaryHeap::new(),
            slab: Vec::new(),
            filter: Box::new(|_, _| Verdict::Pass),
            rev_drop: Box::new(|_| false),
            fwd: Vec::new(),
            rev: Vec::new(),
            data_drops: 0,
            data_in_net: 0,
            out: Vec::new(),
        }
    }
    fn schedule(&mut self, t: SimTime, p: Packet, to_receiver: bool) {
        let id = self.slab.len() as u64;
        self.slab.push((p, to_receiver));
        self.events.push(Reverse((t, id)));
    }
    fn route_fwd(&mut self) {
        let out = std::mem::take(&mut self.out);
        for mut p in out.iter().copied() {
            self.fwd.push((self.now, p, self.s.sk.pacing_rate));
            while self.departs.front().is_some_and(|&d| d <= self.now) {
                self.departs.pop_front();
            }
            let ctx = Ctx {
                now: self.now,
                qlen: self.departs.len(),
            };
            let mut extra = 0;
            match (self.filter)(&p, &ctx) {
                Verdict::Pass => {}
                Verdict::Drop => {
                    if p.is_data() {
                        self.data_drops += 1;
                    }
                    continue;
                }
                Verdict::Mark => {
                    p.ecn.set_ce();
                }
                Verdict::Delay(d) => extra = d,
            }
            if self.departs.len() >= self.limit {
                if p.is_data() {
                    self.data_drops += 1;
                }
                continue;
            }
            let depart = self.now.max(self.last_depart) + self.rate.tx_time(p.len);
            self.last_depart = depart;
            self.departs.push_back(depart);
            if p.is_data() {
                self.data_in_net += 1;
            }
            self.schedule(depart + self.delay + extra, p, true);
        }
        self.out = out;
        self.out.clear();
    }
    fn route_rev(&mut self) {
        let out = std::mem::take(&mut self.out);
        for p in out.iter().copied() {
            self.rev.push((self.now, p));
            if (self.rev_drop)(&p) {
                continue;
            }
            self.schedule(self.now + self.delay, p, false);
        }
        self.out = out;
        self.out.clear();
    }
    fn start(&mut self) {
        self.s.connect(self.now, &mut self.out);
        self.route_fwd();
    }
    /// Run events until `t_end` or until `stop` returns true after an event.
    fn run_until(&mut self, t_end: SimTime, mut stop: impl FnMut(&Harness) -> bool) {
        for _ in 0..50_000_000u64 {
            let te = self
                .events
                .peek()
                .map(|Reverse((t, _))| *t)
                .unwrap_or(NEVER);
            let ts = self.s.next_timer();
            let tr = self.r.next_timer();
            let t = te.min(ts).min(tr);
            if t == NEVER || t > t_end {
                self.now = t_end;
                return;
            }
            self.now = self.now.max(t);
            if te == t {
                let Reverse((_, id)) = self.events.pop().unwrap();
                let (p, to_r) = self.slab[id as usize];
                if to_r {
                    if p.is_data() {
                        self.data_in_net -= 1;
                    }
                    self.r.on_packet(&p, self.now, &mut self.out);
                    self.route_rev();
                } else {
                    self.s.on_packet(&p, self.now, &mut self.out);
                    self.route_fwd();
                }
            } else if ts == t {
                self.s.on_timer(self.now, &mut self.out);
                self.route_fwd();
            } else {
                self.r.on_timer(self.now, &mut self.out);
                self.route_rev();
            }
            if let Some(e) = self.s.scoreboard_error() {
                panic!("at {} ns: {e}", self.now);
            }
            if stop(self) {
                return;
            }
        }
        panic!("harness did not terminate");
    }
    fn run(&mut self, t_end: SimTime) {
        self.run_until(t_end, |_| false);
    }
    fn data(&self) -> impl Iterator<Item = &(SimTime, Packet, u64)> {
        self.fwd.iter().filter(|(_, p, _)| p.is_data())
    }
    fn retransmitted_seqs(&self) -> Vec<u32> {
        self.data()
            .filter(|(_, p, _)| p.retrans)
            .map(|(_, p, _)| p.seq)
            .collect()
    }
}

fn spec(ecn: EcnSysctl) -> TcpSpec {
    TcpSpec {
        ecn,
        ..TcpSpec::default()
    }
}

/// A receiver whose buffer does not autotune (`tcp_moderate_rcvbuf` = 0): its window stays
/// at the initial 64 KB and `rcv_ssthresh` starts at it, so no `tcp_grow_window` quick ACKs,
/// one ACK per two segments from the end of the initial quick-ACK phase.
fn fixed_rcvbuf(ecn: EcnSysctl) -> TcpSpec {
    TcpSpec {
        moderate_rcvbuf: false,
        ..spec(ecn)
    }
}

fn first_tx_of(seqs: &'static [u32]) -> Filter {
    Box::new(move |p, _| {
        if p.is_data() && !p.retrans && seqs.contains(&p.seq) {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    })
}

/// Drops the first `n` transmissions of segment `seq` (the original and its first
/// retransmissions).
fn first_txs_of(seq: u32, n: u32) -> Filter {
    let mut sent = 0;
    Box::new(move |p, _| {
        if p.is_data() && p.seq == seq {
            sent += 1;
            if sent <= n {
                return Verdict::Drop;
            }
        }
        Verdict::Pass
    })
}

// ------------------------------------------------------------------------- ECN negotiation

const SYSCTLS: [EcnSysctl; 6] = [
    EcnSysctl::None,
    EcnSysctl::Classic,
    EcnSysctl::Passive,
    EcnSysctl::Accecn,
    EcnSysctl::AccecnClassicOut,
    EcnSysctl::AccecnPassive,
];

fn mode_char(m: EcnMode) -> char {
    match m {
        EcnMode::None => '-',
        EcnMode::Rfc3168 => 'C',
        EcnMode::AccEcn => 'A',
    }
}

#[test]
fn ecn_negotiation_matrix_follows_the_linux_sysctl_table() {
    // Rows: sender tcp_ecn 0..5; columns: receiver tcp_ecn 0..5 (Reno on both sides).
    let expected = ["------", "-CCCCC", "------", "-CCAAA", "-CCCCC", "------"];
    for (i, &ss) in SYSCTLS.iter().enumerate() {
        for (j, &rs) in SYSCTLS.iter().enumerate() {
            let mut h = Harness::new(10.0, 20.0, 100, spec(ss), spec(rs), Some(20_000));
            h.start();
            h.run(SEC);
            let want = expected[i].as_bytes()[j] as char;
            assert_eq!(
                mode_char(h.s.stats.ecn_mode),
                want,
                "sender {ss:?} receiver {rs:?}"
            );
            assert_eq!(
                mode_char(h.r.stats.ecn_mode),
                want,
                "receiver side, {ss:?} x {rs:?}"
            );
            let data_ecn = if want == '-' { Ecn::NotEct } else { Ecn::Ect0 };
            assert_eq!(h.s.stats.data_ecn, data_ecn);
            assert!(h.s.stats.completed_at != NEVER);
        }
    }
}

#[test]
fn ecn_negotiation_cc_flags_override_the_sysctls() {
    let prague = CcFlags {
        needs_ecn: true,
        needs_accecn: true,
        ..Default::default()
    };
    let prague_nofb = CcFlags {
        no_fallback_rfc3168: true,
        ..prague
    };
    let dctcp = CcFlags {
        needs_ecn: true,
        dctcp_echo: true,
        ..Default::default()
    };
    let plain = CcFlags::default();
    let mainline = AccEcnAccept::Mainline;
    // (the active end's mode, the listener's)
    let negotiate = |s_sys, s_f: CcFlags, r_sys, r_f: CcFlags, rule| {
        let h = ecn::client_opened((s_sys, s_f), (r_sys, r_f, rule));
        (h.client, h.server)
    };
    use EcnMode::*;
    use EcnSysctl as S;
    // Prague always requests AccECN, whatever its sysctl.
    assert_eq!(
        negotiate(S::None, prague, S::Accecn, plain, mainline).0,
        AccEcn
    );
    // A Prague listener accepts AccECN even with tcp_ecn=0.
    assert_eq!(
        negotiate(S::Accecn, prague, S::None, prague, mainline).0,
        AccEcn
    );
    // Prague against a classic-ECN receiver falls back to RFC 3168 (P06-cnt) ...
    assert_eq!(
        negotiate(S::Accecn, prague, S::Classic, plain, mainline).0,
        Rfc3168
    );
    // ... or to no ECN with NO_FALLBACK_RFC3168, although the listener answered classic.
    assert_eq!(
        negotiate(S::Accecn, prague_nofb, S::Classic, plain, mainline),
        (None, Rfc3168)
    );
    // Against tcp_ecn=0 with a plain CC: no ECN. The SYN was ECT, so a plain listener refuses.
    assert_eq!(
        negotiate(S::Accecn, prague, S::None, plain, mainline).0,
        None
    );
    assert_eq!(
        negotiate(S::Accecn, prague, S::Passive, plain, mainline).0,
        Rfc3168
    );
    // NEEDS_ECN makes a tcp_ecn=0 sender request classic ECN, and a DCTCP listener accepts it.
    assert_eq!(
        negotiate(S::None, dctcp, S::None, dctcp, mainline).0,
        Rfc3168
    );
    // An ECT SYN from a NEEDS_ECN sender is refused by a plain classic listener (no AE bit).
    assert_eq!(
        negotiate(S::None, dctcp, S::Classic, plain, mainline).0,
        None
    );
    // Older L4STeam acceptance: tcp_ecn=2 accepts AccECN, tcp_ecn=1 answers classic.
    assert_eq!(
        negotiate(S::Accecn, plain, S::Passive, plain, AccEcnAccept::Legacy).0,
        AccEcn
    );
    assert_eq!(
        negotiate(S::Accecn, plain, S::Classic, plain, AccEcnAccept::Legacy).0,
        Rfc3168
    );
    assert_eq!(
        negotiate(S::Accecn, plain, S::Passive, plain, mainline).0,
        Rfc3168
    );
    // A SYN/ACK reflecting all three bits is broken: no ECN.
    let all = flags::AE | flags::CWR | flags::ECE;
    assert_eq!(ecn::client_mode(EcnRequest::AccEcn, all, plain), None);
}

#[test]
fn retransmitted_syn_drops_the_ecn_request_after_one_second() {
    let mut h = Harness::new(
        10.0,
        20.0,
        100,
        spec(EcnSysctl::Accecn),
        spec(EcnSysctl::Accecn),
        Some(10_000),
    );
    let mut first = true;
    h.filter = Box::new(move |p, _| {
        if p.has(flags::SYN) && first {
            first = false;
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    });
    h.start();
    h.run(3 * SEC);
    assert_eq!(h.s.stats.syn_retrans, 1);
    // The 1 s SYN timer (250 jiffies, the timer wheel's level 1 with its 8-jiffy buckets)
    // runs at jiffy 256: 1.024 s, then one 20 ms round trip.
    let est = h.s.stats.established_at;
    assert!((SEC + 44 * MS..SEC + 49 * MS).contains(&est), "{est}");
    assert_eq!(h.s.stats.ecn_mode, EcnMode::None);
    assert!(h.s.stats.completed_at != NEVER);
}

#[test]
fn lost_synack_keeps_the_listeners_accecn_answer_on_both_sides() {
    let mut h = Harness::new(
        10.0,
        20.0,
        100,
        spec(EcnSysctl::Accecn),
        spec(EcnSysctl::Accecn),
        Some(10_000),
    );
    let mut first = true;
    h.rev_drop = Box::new(move |p| {
        let drop = p.has(flags::SYN) && first;
        first &= !p.has(flags::SYN);
        drop
    });
    h.start();
    h.run(3 * SEC);
    assert_eq!(h.s.stats.syn_retrans, 1);
    // The retransmitted SYN carries no ECN bits on the wire ...
    let syns: Vec<&Packet> = h
        .fwd
        .iter()
        .map(|(_, p, _)| p)
        .filter(|p| p.has(flags::SYN))
        .collect();
    assert_eq!(syns.len(), 2);
    assert!(syns[1].flags & (flags::AE | flags::CWR | flags::ECE) == 0);
    // ... but the listener's request socket answers as it did the first time.
    assert_eq!(h.r.stats.ecn_mode, EcnMode::AccEcn);
    assert_eq!(h.s.stats.ecn_mode, EcnMode::AccEcn);
    assert!(h.s.stats.completed_at != NEVER);
}

/// A harness whose listener drops the SYN/ACKs (`lost_synacks`) or whose path drops the SYNs
/// (`lost_syns`) until the sender's third SYN; run until the connection is established.
/// Returns the harness, the data segments sent at the handshake's end, and the smoothed RTT
/// then (the handshake's own sample, before any data).
fn handshake_after_losses(lost_syns: bool, client_opened: bool) -> (Harness, usize, SimDuration) {
    use std::cell::Cell;
    use std::rc::Rc;
    let mut h = no_ecn(10.0, 20.0, Some(1_000_000));
    if client_opened {
        let mut p = params(Some(1_000_000));
        p.client_opened = Some(ecn::ClientOpened {
            syn_flags: 0,
            syn_ecn: Ecn::NotEct,
            server: EcnMode::None,
            client: EcnMode::None,
        });
        h.s = TcpSender::new(&p, &spec(EcnSysctl::None), AnyCc::Reno(Reno));
        h.r = TcpReceiver::with_cc_flags(&p, &spec(EcnSysctl::None), CcFlags::default());
    }
    let syns = Rc::new(Cell::new(0u32));
    let seen = syns.clone();
    h.filter = Box::new(move |p, _| {
        if p.has(flags::SYN) {
            seen.set(seen.get() + 1);
            if lost_syns && seen.get() < 3 {
                return Verdict::Drop;
            }
        }
        Verdict::Pass
    });
    h.rev_drop = Box::new(move |p| !lost_syns && p.has(flags::SYN) && syns.get() < 3);
    h.start();
    h.run_until(10 * SEC, |h| h.s.stats.established_at != NEVER);
    assert_eq!(h.s.stats.syn_retrans, 2);
    let est = h.s.stats.established_at;
    let burst = h.data().filter(|(t, _, _)| *t == est).count();
    let srtt = h.s.sk.srtt;
    (h, burst, srtt)
}

#[test]
fn a_syn_lost_twice_starts_the_window_at_one_segment() {
    // tcp_init_transfer: more than one SYN retransmission, and the SYN/ACK answers a
    // retransmitted SYN (its echo is not the first SYN's timestamp): cwnd 1. Its RTT sample is
    // the round trip of the SYN that got through.
    let (mut h, burst, srtt) = handshake_after_losses(true, false);
    assert_eq!(burst, 1);
    assert!((20 * MS..22 * MS).contains(&srtt), "{srtt}");
    h.run(10 * SEC);
    assert!(h.s.stats.completed_at != NEVER);
}

#[test]
fn synacks_lost_until_the_third_syn_keep_the_initial_window_and_time_the_first_syn() {
    // The listener got the first SYN, so its SYN/ACKs echo that SYN's timestamp
    // (`tcp_check_req` answers a retransmitted SYN from the request sock): the timeouts were
    // spurious (`tcp_try_undo_spurious_syn`), the window starts at 10 segments, and the
    // TSecr sample spans both timeouts (1 s, then 2 s, each run on the timer wheel's tick).
    let (_, burst, srtt) = handshake_after_losses(false, false);
    assert_eq!(burst, 10);
    let est_from_first_syn = 3 * SEC + 20 * MS;
    assert!(
        (est_from_first_syn..est_from_first_syn + 100 * MS).contains(&srtt),
        "{srtt}"
    );
}

#[test]
fn a_requested_transfers_data_sender_starts_with_the_initial_window_after_syn_losses() {
    // It stands for the server, a passive opener whose socket has no undo_marker. Its RTT
    // sample times the latest of its SYNs (the server's SYN/ACKs) that the client had seen when
    // it answered: with lost SYNs, the one that got through; with lost answers, the second,
    // which the answer sent on the client's timer (its request's retransmission) echoes.
    let (_, burst, srtt) = handshake_after_losses(true, true);
    assert_eq!(burst, 10);
    assert!((20 * MS..22 * MS).contains(&srtt), "{srtt}");
    let (_, burst, srtt) = handshake_after_losses(false, true);
    assert_eq!(burst, 10);
    assert!((2 * SEC..2 * SEC + 100 * MS).contains(&srtt), "{srtt}");
}

#[test]
fn a_cached_rtt_above_the_handshakes_seeds_the_first_rto_until_the_first_data_sample() {
    // tcp_init_metrics: crtt 400 ms (100 jiffies at HZ 250) above the 20 ms handshake gives
    // 100 + max(200, 50) jiffies = 1.2 s; without the cache the handshake's 20 ms (a little
    // more: the SYN's own serialization) + rttvar's 200 ms floor, rounded up to 56 jiffies.
    let run = |cached: Option<metrics::TcpMetrics>| {
        let mut h = no_ecn(10.0, 20.0, Some(1_000_000));
        h.start();
        h.s.set_cached_metrics(cached);
        h.run_until(SEC, |h| h.s.stats.established_at != NEVER);
        let first = h.s.rto();
        let ending = h.s.metrics_ending();
        h.run_until(SEC, |h| h.s.sk.delivered > 2);
        (first, h.s.rto(), ending.reordering)
    };
    let (first, later, reordering) = run(None);
    assert_eq!(first, 224 * MS);
    assert_eq!((later, reordering), (first, 3));
    let cached = metrics::TcpMetrics {
        rtt_us8: 400 * 8000,
        reordering: 7,
    };
    let (first, later, reordering) = run(Some(cached));
    assert_eq!(first, 1200 * MS);
    assert!(later < 300 * MS, "{later}");
    assert_eq!(reordering, 7);
    // A cached RTT below the handshake's leaves the RTO to the handshake.
    let small = metrics::TcpMetrics {
        rtt_us8: 10 * 8000,
        reordering: 0,
    };
    assert_eq!(run(Some(small)).0, 224 * MS);
}

#[test]
fn rfc3168_mode_sends_ect0_on_new_data_only() {
    let mut h = Harness::new(
        10.0,
        20.0,
        100,
        spec(EcnSysctl::Classic),
        spec(EcnSysctl::Classic),
        Some(200_000),
    );
    h.filter = first_tx_of(&[30]);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.stats.ecn_mode, EcnMode::Rfc3168);
    for (_, p, _) in h.data() {
        let want = if p.retrans { Ecn::NotEct } else { Ecn::Ect0 };
        assert_eq!(p.ecn, want, "seq {} retrans {}", p.seq, p.retrans);
    }
    assert!(h
        .rev
        .iter()
        .all(|(_, p)| p.has(flags::SYN) || p.ecn == Ecn::NotEct));
    assert_eq!(h.retransmitted_seqs(), vec![30]);
}

#[test]
fn needs_ecn_sockets_keep_ect_on_retransmissions_and_pure_acks_in_rfc3168_mode() {
    let dctcp = CcFlags {
        needs_ecn: true,
        dctcp_echo: true,
        ..Default::default()
    };
    let mut h = Harness::with_flags(
        10.0,
        20.0,
        100,
        spec(EcnSysctl::Classic),
        spec(EcnSysctl::Classic),
        dctcp,
        Some(200_000),
    );
    h.s.cc_flags = dctcp;
    h.filter = first_tx_of(&[30]);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.stats.ecn_mode, EcnMode::Rfc3168);
    assert_eq!(h.retransmitted_seqs(), vec![30]);
    assert!(
        h.fwd.iter().all(|(_, p, _)| p.ecn == Ecn::Ect0),
        "SYN, data and retransmission"
    );
    assert!(
        h.rev.iter().all(|(_, p)| p.ecn == Ecn::Ect0),
        "SYN/ACK and ACKs"
    );
}

#[test]
fn accecn_mode_sends_every_packet_ect_without_cwr() {
    let mut h = Harness::new(
        10.0,
        20.0,
        100,
        spec(EcnSysctl::Accecn),
        spec(EcnSysctl::Accecn),
        Some(200_000),
    );
    h.filter = first_tx_of(&[30]);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.stats.ecn_mode, EcnMode::AccEcn);
    assert!(h.data().all(|(_, p, _)| p.ecn == Ecn::Ect0));
    assert!(h
        .rev
        .iter()
        .filter(|(_, p)| !p.has(flags::SYN))
        .all(|(_, p)| p.ecn == Ecn::Ect0));
    assert_eq!(h.retransmitted_seqs(), vec![30]);
}

/// `tcp_ecn_option` 2 on both hosts: the SYN/ACK's AccECN option lets the sender put its
/// own on every segment (12 bytes), which `tcp_current_mss` takes from the payload, so a
/// full segment is still 1514 bytes; ACKs carry it too, less where SACK blocks leave no
/// room. With the option off on either host no segment carries it.
#[test]
fn accecn_option_takes_twelve_bytes_from_every_segment() {
    let opt = |tx: u32, rx: u32| {
        let mut h = Harness::new(
            10.0,
            20.0,
            100,
            TcpSpec {
                ecn_option: tx,
                ..spec(EcnSysctl::Accecn)
            },
            TcpSpec {
                ecn_option: rx,
                ..spec(EcnSysctl::Accecn)
            },
            Some(100_000),
        );
        h.filter = first_tx_of(&[20]);
        h.start();
        h.run(5 * SEC);
        assert_eq!(h.s.stats.ecn_mode, EcnMode::AccEcn);
        assert_eq!(h.r.stats.bytes_delivered, 100_000, "the whole transfer");
        h
    };
    let h = opt(2, 2);
    let (full, last): (Vec<_>, Vec<_>) = h
        .data()
        .map(|(_, p, _)| *p)
        .partition(|p| p.payload == 1436);
    assert!(
        full.len() > 60
            && full
                .iter()
                .all(|p| p.len == 1514 && p.accecn_option_bytes() == 12)
    );
    // 100,000 = 69 x 1436 + 916.
    assert!(last.iter().all(|p| p.payload == 916 && p.len == 1514 - 520));
    let acks: Vec<_> = h
        .rev
        .iter()
        .filter(|(_, p)| !p.has(flags::SYN))
        .map(|(_, p)| *p)
        .collect();
    assert!(acks.iter().any(|p| p.n_sack > 0), "segment 20 was lost");
    for p in &acks {
        assert_eq!(
            p.accecn_option_bytes(),
            [12, 12, 8, 0][p.n_sack as usize],
            "{p:?}"
        );
    }
    for (tx, rx) in [(2, 0), (0, 2), (0, 0)] {
        let h = opt(tx, rx);
        assert!(h.data().all(|(_, p, _)| p.accecn_option_bytes() == 0));
        assert!(h.data().any(|(_, p, _)| p.payload == 1448));
        let acks_with = h
            .rev
            .iter()
            .filter(|(_, p)| !p.has(flags::SYN) && p.accecn_option_bytes() > 0)
            .count();
        assert_eq!(acks_with, 0, "tx {tx} rx {rx}: no option seen, none sent");
    }
}

// ------------------------------------------------------------------------- ECN feedback

#[test]
fn rfc3168_receiver_latches_ece_until_cwr_and_sender_reduces_once() {
    let mut h = Harness::new(
        10.0,
        40.0,
        1000,
        spec(EcnSysctl::Classic),
        spec(EcnSysctl::Classic),
        None,
    );
    // Mark 20 consecutive data packets (well within one RTT) once the flow is in steady growth.
    h.filter = Box::new(|p, _| {
        if p.is_data() && (200..220).contains(&p.seq) && !p.retrans {
            Verdict::Mark
        } else {
            Verdict::Pass
        }
    });
    h.start();
    h.run(2 * SEC);
    assert_eq!(
        h.s.stats.cwr_count, 1,
        "one reduction for marks within one RTT"
    );
    assert_eq!(h.r.stats.ce_received, 20);
    // ECE is set on every ACK from the first CE until the ACK of the CWR segment.
    let cwr_seq = h
        .data()
        .find(|(_, p, _)| p.has(flags::CWR))
        .expect("CWR sent")
        .1
        .seq;
    let acks: Vec<&Packet> = h
        .rev
        .iter()
        .map(|(_, p)| p)
        .filter(|p| !p.has(flags::SYN))
        .collect();
    let first_ece = acks.iter().position(|p| p.has(flags::ECE)).unwrap();
    assert_eq!(
        acks[first_ece].ack, 201,
        "first CE (seg 200) is ACKed at once with ECE"
    );
    let last_ece = acks.iter().rposition(|p| p.has(flags::ECE)).unwrap();
    assert!(acks[first_ece..=last_ece].iter().all(|p| p.has(flags::ECE)));
    assert!(
        acks[last_ece].ack <= cwr_seq,
        "ECE stops once CWR (seg {cwr_seq}) arrives"
    );
    assert!(acks[last_ece + 1].ack > cwr_seq && !acks[last_ece + 1].has(flags::ECE));
}

#[test]
fn rfc3168_reduces_at_most_once_per_round_trip_under_persistent_marking() {
    let mut h = Harness::new(
        10.0,
        40.0,
        1000,
        spec(EcnSysctl::Classic),
        spec(EcnSysctl::Classic),
        None,
    );
    // A step AQM above one BDP (33 packets): mark everything above 40 packets of queue.
    h.filter = Box::new(|p, c| {
        if p.is_data() && c.qlen > 40 {
            Verdict::Mark
        } else {
            Verdict::Pass
        }
    });
    h.start();
    let mut entries = vec![];
    h.run_until(10 * SEC, |h| {
        if h.s.stats.cwr_count > entries.len() as u64 {
            entries.push(h.now);
        }
        false
    });
    let marks = h.r.stats.ce_received;
    assert!(
        marks > 2 * entries.len() as u64,
        "{marks} marks, {} reductions",
        entries.len()
    );
    assert_eq!(entries.len() as u64, h.s.stats.cwr_count);
    for w in entries.windows(2) {
        assert!(w[1] - w[0] >= 40 * MS, "{entries:?}");
    }
    assert_eq!(h.s.stats.retrans, 0, "ECN kept the queue below the limit");
    let pkts_per_s = 10e6 / 8.0 / 1514.0;
    assert!(
        h.s.stats.data_pkts_sent as f64 > 0.9 * pkts_per_s * 9.5,
        "{}",
        h.s.stats.data_pkts_sent
    );
}

#[test]
fn accecn_ace_decoding_handles_counter_wraps() {
    // The receiver's ACE after k CE marks, and the sender's decoding with n newly delivered.
    let ace = |k: u64| ecn::ace_encode(k);
    assert_eq!(ace(0), 5);
    assert_eq!(ecn::ace_delta(ace(3), 0, 4), 3);
    // 9 and 17 marks between two ACKs covering 9 / 17 segments: the conservative rule
    // recovers them exactly when every delivered segment was marked.
    assert_eq!(ecn::ace_delta(ace(9), 0, 9), 9);
    assert_eq!(ecn::ace_delta(ace(17), 0, 17), 17);
    assert_eq!(ecn::ace_delta(ace(12), 3, 9), 9);
    // With at most 7 newly delivered segments the delta is taken mod 8 as is.
    assert_eq!(ecn::ace_delta(ace(8), 0, 7), 0);
    // ACK thinning: 20 segments with 3 marks are read as 19 marks (assume the most wraps).
    assert_eq!(ecn::ace_delta(ace(3), 0, 20), 19);
    assert_eq!(ecn::ace_delta(ace(0), 0, 20), 16);
}

#[test]
fn accecn_sender_counts_exactly_the_marks_the_receiver_saw() {
    let mut h = Harness::new(
        10.0,
        40.0,
        1000,
        spec(EcnSysctl::Accecn),
        spec(EcnSysctl::Accecn),
        None,
    );
    h.filter = Box::new(|p, c| {
        if p.is_data() && c.qlen > 15 {
            Verdict::Mark
        } else {
            Verdict::Pass
        }
    });
    h.start();
    h.run(5 * SEC);
    assert!(h.r.stats.ce_received > 20);
    // Two segments per ACK (< 8): the sender's delivered_ce matches the receiver's count for
    // everything ACKed.
    let in_flight_marks = h.r.stats.ce_received - h.s.sk.delivered_ce;
    assert!(
        in_flight_marks <= 6,
        "{} vs {}",
        h.r.stats.ce_received,
        h.s.sk.delivered_ce
    );
    assert!(h.s.stats.cwr_count > 0);
    assert!(h
        .rev
        .iter()
        .all(|(_, p)| !p.has(flags::SYN) || p.has(flags::CWR) || p.has(flags::AE)));
}

/// Drive a receiver directly: established AccECN connection, then in-order data.
/// A receiver of `s` that has answered, at time 0, a SYN with `syn_flags` (SYN included):
/// the receiver, its SYN/ACK, and an empty output buffer.
fn receiver_after_syn(s: TcpSpec, syn_flags: u8) -> (TcpReceiver, Packet, Vec<Packet>) {
    let p = params(None);
    let mut r = TcpReceiver::with_cc_flags(&p, &s, CcFlags::default());
    let mut out = Vec::new();
    let mut syn = Packet::new(0, crate::packet::Dir::Fwd, 1, 2);
    syn.flags = syn_flags;
    r.on_packet(&syn, 0, &mut out);
    let synack = out.remove(0);
    out.clear();
    (r, synack, out)
}

fn accecn_receiver(s: TcpSpec) -> (TcpReceiver, Vec<Packet>) {
    let (r, synack, out) = receiver_after_syn(s, flags::SYN | ecn::syn_flags(EcnRequest::AccEcn));
    assert!(synack.has(flags::CWR) && !synack.has(flags::AE) && !synack.has(flags::ECE));
    (r, out)
}

fn data_pkt(seq: u32, ecn: Ecn) -> Packet {
    let mut d = Packet::new(0, crate::packet::Dir::Fwd, 1, 2);
    d.flags = flags::ACK;
    d.seq = seq;
    d.payload = 1448;
    d.len = crate::packet::hdr::wire_len(d.payload, 0);
    d.ecn = ecn;
    d
}

#[test]
fn accecn_ace_on_every_ack_is_received_ce_plus_five_mod_8() {
    let (mut r, mut out) = accecn_receiver(fixed_rcvbuf(EcnSysctl::Accecn));
    let mut ce = 0u64;
    for seq in 0..200u32 {
        let e = if seq % 3 == 0 { Ecn::Ce } else { Ecn::Ect0 };
        ce += (e == Ecn::Ce) as u64;
        r.on_packet(&data_pkt(seq, e), (seq as u64 + 1) * MS, &mut out);
        for a in out.drain(..) {
            assert_eq!(a.ace(), ecn::ace_encode(ce), "seq {seq}");
            assert_eq!(a.ecn, Ecn::Ect0, "AccECN ACKs are ECT");
        }
    }
    assert_eq!(r.stats.ce_received, ce);
    // Every change of the ECN field is ACKed at once (two in every three segments here), so
    // the receiver sends more than its one ACK per two segments, fewer than one per segment.
    let acks = r.stats.acks_sent;
    assert!(acks > 16 + 100 && acks < 200, "{acks}");
}

/// A data segment as an AccECN sender with `tcp_ecn_option = 2` sends it: the option on,
/// timestamped `t`.
fn accecn_data(seq: u32, ecn: Ecn, t: SimTime) -> Packet {
    let mut d = data_pkt(seq, ecn);
    d.len = crate::packet::hdr::wire_len(d.payload, 0) + ecn::accecn_option_len(0, 0).unwrap();
    d.ts_val = t;
    d
}

/// An AccECN receiver past its quick-ACK phase (segments with the option, all in one
/// timestamp tick), with no segment pending.
fn accecn_receiver_after_quickacks(imp: AccEcnImpl) -> (TcpReceiver, Vec<Packet>, u32) {
    let s = TcpSpec {
        accecn_impl: imp,
        ..fixed_rcvbuf(EcnSysctl::Accecn)
    };
    let (mut r, mut out) = accecn_receiver(s);
    let mut seq = 0;
    while r.stats.acks_sent < 16 || r.stats.acks_sent % 2 == 1 {
        r.on_packet(&accecn_data(seq, Ecn::Ect1, 0), 0, &mut out);
        seq += 1;
    }
    if r.next_timer() != NEVER {
        r.on_timer(r.next_timer(), &mut out);
    }
    out.clear();
    (r, out, seq)
}

#[test]
fn accecn_receiver_acks_every_ecn_field_change_at_once() {
    // tcp_ecn_received_counters: an ECN-field edge sets ICSK_ACK_NOW, in both trees. All
    // segments share one timestamp tick, so only the edges force ACKs.
    for imp in [AccEcnImpl::L4steam, AccEcnImpl::Mainline] {
        let (mut r, mut out, mut seq) = accecn_receiver_after_quickacks(imp);
        let mut lone = |r: &mut TcpReceiver, ecn: Ecn, out: &mut Vec<Packet>| {
            let n = out.len();
            r.on_packet(&accecn_data(seq, ecn, 0), 0, out);
            seq += 1;
            let at_once = out.len() > n;
            if !at_once {
                r.on_timer(r.next_timer(), out);
            }
            at_once
        };
        assert!(
            !lone(&mut r, Ecn::Ect1, &mut out),
            "{imp:?}: no change, delayed ACK"
        );
        assert!(lone(&mut r, Ecn::Ce, &mut out), "{imp:?}: ECT(1) -> CE");
        assert!(!lone(&mut r, Ecn::Ce, &mut out), "{imp:?}: CE again");
        assert!(lone(&mut r, Ecn::Ect1, &mut out), "{imp:?}: CE -> ECT(1)");
        assert_eq!(out.last().unwrap().ace(), ecn::ace_encode(2));
    }
}

#[test]
fn l4steam_receiver_acks_the_first_segment_after_an_ack_on_a_new_timestamp_tick() {
    // L4STeam's tcp_ecn_received_counters saturates received_ce_pending with max(.., 15), so
    // __tcp_accecn_process (reached on the slow path when the timestamp advanced, i.e. for
    // the first segment after an ACK in a later 1 ms tick) always finds >= 6 pending and
    // forces an ACK. Mainline's min(.., 15) needs six CE marks for that.
    let acks = |imp: AccEcnImpl, gap: SimDuration| {
        let (mut r, mut out, mut seq) = accecn_receiver_after_quickacks(imp);
        for k in 1..=20u64 {
            let t = k * gap;
            r.on_packet(&accecn_data(seq, Ecn::Ect1, t), t, &mut out);
            seq += 1;
        }
        out.len()
    };
    // Lone segments 2 ms apart: each is the first after an ACK, in a new tick.
    assert_eq!(acks(AccEcnImpl::L4steam, 2 * MS), 20);
    assert_eq!(acks(AccEcnImpl::Mainline, 2 * MS), 10);
    // Four segments per tick: only the first after each ACK in a new tick is forced; the
    // others are ACKed two at a time.
    let l4steam = acks(AccEcnImpl::L4steam, MS / 4);
    assert!(l4steam > 10 && l4steam < 20, "{l4steam}");
    // Without the option the segment takes the fast path, where tcp_ack is not called.
    let (mut r, mut out, mut seq) = accecn_receiver_after_quickacks(AccEcnImpl::L4steam);
    for k in 1..=20u64 {
        let mut d = accecn_data(seq, Ecn::Ect1, k * 2 * MS);
        d.len = crate::packet::hdr::wire_len(d.payload, 0);
        r.on_packet(&d, k * 2 * MS, &mut out);
        seq += 1;
    }
    assert_eq!(out.len(), 10);
}

#[test]
fn sack_compression_holds_dup_acks_but_an_ecn_field_change_is_acked_at_once() {
    let (mut r, mut out) = accecn_receiver(spec(EcnSysctl::Accecn));
    let mut seq = 0;
    while r.stats.acks_sent < 16 {
        r.on_packet(&data_pkt(seq, Ecn::Ect0), 0, &mut out);
        seq += 1;
    }
    out.clear();
    // Segment `seq` is lost: the next three out-of-order segments get immediate dup-ACKs
    // with SACK, the following ones are compressed.
    let t = 10 * MS;
    for k in 1..=5 {
        r.on_packet(&data_pkt(seq + k, Ecn::Ect0), t, &mut out);
    }
    assert_eq!(out.len(), 3);
    assert!(out
        .iter()
        .all(|a| a.ack == seq && a.n_sack == 1 && a.sack[0].0 == seq + 1));
    assert_eq!(out[2].sack[0], (seq + 1, seq + 4));
    out.clear();
    // The change to CE is ACKed at once (an ECN-field edge); further CE marks stay
    // compressed: out-of-order data never advances ts_recent, so __tcp_accecn_process does
    // not run and received_ce_pending forces nothing.
    r.on_packet(&data_pkt(seq + 6, Ecn::Ce), t, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ace(), ecn::ace_encode(1));
    out.clear();
    for k in 7..=11 {
        r.on_packet(&data_pkt(seq + k, Ecn::Ce), t, &mut out);
    }
    assert!(out.is_empty());
    // The change back is ACKed at once too, with every CE counted.
    r.on_packet(&data_pkt(seq + 12, Ecn::Ect0), t, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ace(), ecn::ace_encode(6));
    assert_eq!(out[0].sack[0], (seq + 1, seq + 13));
    // The compression timer (min(1 ms, RTT/20)) flushes the rest.
    out.clear();
    r.on_packet(&data_pkt(seq + 13, Ecn::Ect0), t, &mut out);
    assert!(out.is_empty());
    let due = r.next_timer();
    assert!(due > t && due <= t + MS);
    r.on_timer(due, &mut out);
    assert_eq!(out.len(), 1);
}

#[test]
fn rfc3168_receiver_quick_acks_a_not_ect_segment_after_ect_ones() {
    let p = params(None);
    let mut r = TcpReceiver::with_cc_flags(&p, &spec(EcnSysctl::Classic), CcFlags::default());
    let mut out = Vec::new();
    let mut syn = Packet::new(0, crate::packet::Dir::Fwd, 1, 2);
    syn.flags = flags::SYN | ecn::syn_flags(EcnRequest::Classic);
    r.on_packet(&syn, 0, &mut out);
    assert!(out[0].has(flags::ECE) && !out[0].has(flags::CWR));
    let mut seq = 0;
    while r.stats.acks_sent < 16 {
        r.on_packet(&data_pkt(seq, Ecn::Ect0), seq as u64 * MS, &mut out);
        seq += 1;
    }
    // Even number of segments since the last ACK: the next ECT segment waits ...
    out.clear();
    if r.next_timer() == NEVER {
        r.on_packet(&data_pkt(seq, Ecn::Ect0), seq as u64 * MS, &mut out);
        seq += 1;
    }
    assert!(out.is_empty());
    r.on_timer(r.next_timer(), &mut out);
    out.clear();
    // ... but a lone Not-ECT segment (a retransmission) is ACKed at once.
    r.on_packet(
        &data_pkt(seq, Ecn::NotEct),
        seq as u64 * MS + 100 * MS,
        &mut out,
    );
    assert_eq!(out.len(), 1);
    assert!(out
        .iter()
        .all(|a| a.ecn == Ecn::NotEct && !a.has(flags::ECE)));
}

#[test]
fn dctcp_style_receiver_mirrors_the_ce_state_of_each_packet() {
    let dctcp = CcFlags {
        needs_ecn: true,
        dctcp_echo: true,
        ..Default::default()
    };
    let mut h = Harness::with_flags(
        10.0,
        40.0,
        1000,
        spec(EcnSysctl::Classic),
        spec(EcnSysctl::Classic),
        dctcp,
        None,
    );
    h.filter = Box::new(|p, _| {
        if p.is_data() && !p.retrans && p.seq % 10 == 5 && p.seq > 100 {
            Verdict::Mark
        } else {
            Verdict::Pass
        }
    });
    h.start();
    h.run(2 * SEC);
    // Each mark flips the state twice, each flip forces an ACK: the ACK of a marked segment
    // carries ECE and the next one does not.
    let acks: Vec<&Packet> = h
        .rev
        .iter()
        .map(|(_, p)| p)
        .filter(|p| !p.has(flags::SYN))
        .collect();
    for w in acks.windows(2) {
        if w[0].has(flags::ECE) && w[0].ack % 10 == 6 && w[0].ack > 101 {
            assert!(!w[1].has(flags::ECE) || w[1].ack % 10 == 6);
        }
    }
    let ece_acks = acks.iter().filter(|p| p.has(flags::ECE)).count();
    assert!(ece_acks as u64 >= h.r.stats.ce_received - 1, "{ece_acks}");
    assert!(acks
        .iter()
        .filter(|p| p.has(flags::ECE))
        .all(|p| p.ack % 10 == 6));
}

// ------------------------------------------------------------------------- ACK policy

#[test]
fn delayed_acks_halve_the_ack_count_in_steady_state() {
    let mut h = Harness::new(
        10.0,
        20.0,
        100_000,
        spec(EcnSysctl::None),
        fixed_rcvbuf(EcnSysctl::None),
        None,
    );
    h.start();
    h.run(5 * SEC);
    let data = h.r.stats.data_pkts_received as f64;
    let acks = h.r.stats.acks_sent as f64;
    let ratio = acks / data;
    assert!(
        (0.49..0.52).contains(&ratio),
        "{acks} ACKs for {data} segments"
    );
    assert_eq!(h.s.stats.retrans, 0);
}

#[test]
fn a_lone_segment_is_acked_by_the_delayed_ack_timer() {
    // One segment after the 16 quick ACKs: the 17th+ ACK waits for the 40 ms timer.
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(1448 * 33),
    );
    h.start();
    h.run(2 * SEC);
    assert!(h.s.stats.completed_at != NEVER);
    let last_data = h.r.stats.data_pkts_received;
    assert_eq!(last_data, 33);
    assert!(h.r.stats.acks_sent < 33);
}

#[test]
fn leaving_quick_ack_mode_deflates_the_delayed_ack_timeout() {
    // Segments 30 ms apart, 7 or 8 jiffies at HZ 250 (tcp_event_data_recv counts in
    // tcp_jiffies32): each grows ato to ato/2 + m, toward 60 ms, while the 16 quick ACKs go
    // out at once. The last quick ACK sets ato back to TCP_ATO_MIN, 10 jiffies
    // (tcp_dec_quickack_mode), so the next segment makes it 5 + m jiffies, not 60 ms. (The
    // delayed-ACK timer takes at most max(srtt, 40 ms) of it, so a longer ato shows only on
    // paths of more than 40 ms.)
    let (mut r, _, mut out) = receiver_after_syn(spec(EcnSysctl::None), flags::SYN);
    let mut seq = 0;
    let at = |seq: u32| (seq as u64 + 1) * 30 * MS;
    while r.stats.acks_sent < 16 {
        assert!(seq < 40, "no 16 quick ACKs");
        r.on_packet(&data_pkt(seq, Ecn::NotEct), at(seq), &mut out);
        seq += 1;
    }
    assert_eq!(out.len(), 16, "every segment ACKed at once");
    assert_eq!(r.ato(), receiver::TCP_ATO_MIN);
    r.on_packet(&data_pkt(seq, Ecn::NotEct), at(seq), &mut out);
    assert_eq!(out.len(), 16, "a delayed ACK");
    let jiffy = 4 * MS;
    let m = at(seq) / jiffy - at(seq - 1) / jiffy;
    assert_eq!(r.ato(), (5 + m) * jiffy, "m = {m} jiffies");
}

#[test]
fn the_delayed_ack_timer_runs_on_the_tick_after_ato_jiffies() {
    // tcp_send_delayed_ack: timeout = jiffies + ato, and the timer wheel runs a timer on the
    // tick after its expiry, so a lone segment arriving 3.5 ms into a 4 ms tick is ACKed 11
    // ticks after that tick began, 40.5 ms later (40-44 ms, not 40).
    let (mut r, _, mut out) = receiver_after_syn(spec(EcnSysctl::None), flags::SYN);
    for seq in 0..16 {
        r.on_packet(&data_pkt(seq, Ecn::NotEct), MS * (1 + seq as u64), &mut out);
    }
    assert_eq!(out.len(), 16, "the quick ACKs");
    let t = 103 * MS + 500 * US;
    r.on_packet(&data_pkt(16, Ecn::NotEct), t, &mut out);
    assert_eq!(out.len(), 16, "the segment waits");
    let tick = 100 * MS;
    assert_eq!(r.next_timer(), tick + 11 * 4 * MS);
    r.on_timer(r.next_timer(), &mut out);
    assert_eq!(out.len(), 17);
}

// ------------------------------------------------------------------------- loss recovery

#[test]
fn sack_recovery_retransmits_exactly_the_lost_segments() {
    let mut h = megabyte_at_10mbit();
    h.filter = first_tx_of(&[20, 23, 24]);
    h.start();
    h.run(10 * SEC);
    assert_eq!(h.retransmitted_seqs(), vec![20, 23, 24]);
    assert_eq!(h.s.stats.rto_count, 0);
    assert_eq!(h.s.stats.fast_recoveries, 1);
    assert_eq!(h.r.stats.bytes_delivered, 1_000_000);
    assert!(h.s.stats.completed_at != NEVER);
}

#[test]
fn prr_ends_recovery_with_cwnd_equal_to_ssthresh() {
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        None,
    );
    h.filter = first_tx_of(&[100]);
    h.start();
    let mut prev = CaState::Open;
    let mut seen_exit = false;
    let mut entered_with = 0;
    h.run_until(5 * SEC, |h| {
        let st = h.s.sk.ca_state;
        if prev != CaState::Recovery && st == CaState::Recovery {
            entered_with = h.s.sk.prior_cwnd;
        }
        if prev == CaState::Recovery && st != CaState::Recovery {
            assert_eq!(h.s.sk.snd_cwnd, h.s.sk.snd_ssthresh);
            assert_eq!(h.s.sk.snd_ssthresh, (entered_with / 2).max(2));
            seen_exit = true;
        }
        prev = st;
        false
    });
    assert!(seen_exit);
    assert_eq!(h.retransmitted_seqs(), vec![100]);
}

#[test]
fn rto_fires_when_a_whole_window_is_lost_and_restarts_from_snd_una_with_cwnd_one() {
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        None,
    );
    // Lose the initial window and the tail-loss probe.
    h.filter = Box::new(|p, _| {
        if p.is_data() && !p.retrans && p.seq <= 10 {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    });
    h.start();
    let mut at_rto = None;
    h.run_until(3 * SEC, |h| {
        if at_rto.is_none() && h.s.stats.rto_count == 1 {
            at_rto = Some((
                h.s.sk.snd_cwnd,
                h.s.sk.ca_state,
                h.now,
                h.fwd.last().unwrap().1,
            ));
        }
        false
    });
    let (cwnd, state, t, pkt) = at_rto.expect("RTO fired");
    // The probe's timer expires 2 srtt + 2 jiffies after the window (HZ 250: whole 4 ms
    // jiffies, usecs_to_jiffies rounds up) and runs on the tick after that; the RTO restarts
    // from the probe.
    let t_tlp = h.data().find(|(_, p, _)| p.seq == 10).unwrap().0;
    let t0 = h.data().next().unwrap().0;
    let srtt = h.s.stats.established_at; // the handshake sample (SYN sent at 0)
    let clock = crate::time::Jiffies::new(250);
    let runs = |at: SimTime, d: SimDuration| clock.timer_in(at, d);
    assert_eq!(t_tlp, runs(t0, 2 * srtt + 8 * MS), "srtt {srtt}");
    assert_eq!(state, CaState::Loss);
    assert_eq!(cwnd, 1);
    assert!(pkt.retrans && pkt.seq == 0, "{pkt:?}");
    assert_eq!(h.s.stats.tlp_count, 1);
    // RTO = srtt + max(2 srtt, rto_min) after the handshake sample: 20 + 200 ms.
    assert_eq!(t, runs(t_tlp, srtt + 200 * MS));
    assert_eq!(h.s.sk.snd_ssthresh, 5);
    assert!(h.r.stats.bytes_delivered > 1_000_000);
}

#[test]
fn rto_backoff_doubles_the_timeout() {
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        None,
    );
    h.filter = Box::new(|p, c| {
        if p.is_data() && c.now < 5 * SEC {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    });
    h.start();
    // Each timeout doubles icsk_rto and re-arms the timer with it; the timer runs on the
    // timer wheel's tick after that expiry (a whole bucket of 8 or 64 jiffies once the RTO
    // is 63 jiffies or more), so the gaps double only roughly.
    let mut armed: Vec<(SimTime, SimDuration)> = vec![];
    h.run_until(8 * SEC, |h| {
        if h.s.stats.rto_count as usize > armed.len() {
            armed.push((h.now, h.s.rto()));
        }
        false
    });
    assert!(armed.len() >= 4, "{armed:?}");
    let clock = crate::time::Jiffies::new(250);
    for w in armed.windows(2) {
        let ((t0, rto0), (t1, rto1)) = (w[0], w[1]);
        assert_eq!(rto1, 2 * rto0, "{armed:?}");
        assert_eq!(
            t1,
            clock.timer_runs(clock.at(t0), clock.at(t0) + rto0 / (4 * MS)),
            "{armed:?}"
        );
    }
    let gaps: Vec<SimDuration> = armed.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert!(gaps.windows(2).any(|g| g[1] != 2 * g[0]), "{gaps:?}");
}

#[test]
fn rack_waits_a_reordering_window_before_marking_loss() {
    // Segment 50 arrives 2 ms late: only one later segment is SACKed meanwhile, so RACK's
    // reo_wnd (min_rtt/4 = 5 ms) absorbs it and nothing is retransmitted.
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(500_000),
    );
    h.filter = Box::new(|p, _| {
        if p.is_data() && p.seq == 50 && !p.retrans {
            Verdict::Delay(2 * MS)
        } else {
            Verdict::Pass
        }
    });
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.stats.retrans, 0);
    assert_eq!(h.s.stats.fast_recoveries, 0);
    assert!(h.s.stats.completed_at != NEVER);
    // A real loss of segment 50 is retransmitted no earlier than one RTT after its send.
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(500_000),
    );
    h.filter = first_tx_of(&[50]);
    h.start();
    h.run(5 * SEC);
    let sent: Vec<SimTime> = h
        .data()
        .filter(|(_, p, _)| p.seq == 50)
        .map(|(t, _, _)| *t)
        .collect();
    assert_eq!(sent.len(), 2);
    assert!(sent[1] - sent[0] >= h.s.sk.min_rtt, "{sent:?}");
}

#[test]
fn rack_detects_a_lost_retransmission_without_an_rto() {
    let mut h = megabyte_at_10mbit();
    let mut drops = 0;
    h.filter = Box::new(move |p, _| {
        if p.is_data() && p.seq == 60 && drops < 2 {
            drops += 1;
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    });
    h.start();
    h.run(10 * SEC);
    assert_eq!(h.retransmitted_seqs(), vec![60, 60]);
    assert_eq!(h.s.stats.lost_retrans, 1);
    assert_eq!(h.s.stats.rto_count, 0);
    assert!(h.s.stats.completed_at != NEVER);
}

#[test]
fn tail_loss_probe_repairs_a_lost_last_segment_without_recovery() {
    let size = 1448 * 40;
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(size),
    );
    h.filter = first_tx_of(&[39]);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.stats.tlp_count, 1);
    assert_eq!(h.s.stats.rto_count, 0);
    assert_eq!(h.retransmitted_seqs(), vec![39]);
    assert_eq!(h.r.stats.bytes_delivered, size);
    // The probe went out 2 srtt + 2 jiffies after the last transmission; its ACK ends the
    // transfer (it does not pass tlp_high_seq, so Linux makes no TLP cwnd reduction).
    assert_eq!(h.s.stats.fast_recoveries, 0);
    let d: Vec<SimTime> = h.data().map(|(t, _, _)| *t).collect();
    let gap = d[d.len() - 1] - d[d.len() - 2];
    assert!(gap >= 2 * h.s.stats.established_at, "{gap}");
}

#[test]
fn the_probe_and_retransmission_timers_wait_for_the_next_paced_departure_in_whole_jiffies() {
    // tcp_reset_xmit_timer adds tcp_pacing_delay: tcp_wstamp_ns less now, truncated to
    // jiffies (4 ms at HZ 250), to the TLP and RTO deadlines.
    let mut h = no_ecn(100.0, 20.0, None);
    h.start();
    h.run(SEC);
    assert!(h.s.sk.packets_out > 0);
    let (now, jiffy) = (h.now, 4 * MS);
    // The RTO here is over 63 jiffies: its timer runs in the wheel's 8-jiffy buckets.
    let clock = crate::time::Jiffies::new(250);
    let rto_runs = |delay: u64| {
        let clk = clock.at(now);
        clock.timer_runs(clk, clk + clock.ceil(h.s.rto()) + delay) - now
    };
    let rto_delayed = rto_runs(2);
    assert_ne!(rto_delayed, rto_runs(0) + 2 * jiffy);
    for tlp in [true, false] {
        let mut at = |wstamp: SimTime| {
            h.s.sk.wstamp = wstamp;
            h.s.arm_xmit_timer(tlp, now) - now
        };
        let plain = at(now);
        assert_eq!(
            at(now.saturating_sub(MS)),
            plain,
            "a departure due in the past adds nothing"
        );
        assert_eq!(
            at(now + jiffy - 1),
            plain,
            "less than a jiffy truncates to 0"
        );
        let delayed = if tlp { plain + 2 * jiffy } else { rto_delayed };
        assert_eq!(at(now + 2 * jiffy + 3 * MS), delayed);
    }
}

#[test]
fn a_new_data_probe_is_one_skb_of_the_windows_quota_and_waits_for_pacing() {
    // tcp_send_loss_probe -> tcp_write_xmit(push_one = 2): one skb, as tcp_cwnd_test's quota
    // (half the window at most, what is left of it) and the TSO goal allow; a quota of one
    // only when cwnd is full. tcp_pacing_check applies as for any send: a probe due before
    // the next paced departure is not sent, and the RTO is re-armed.
    let probe = |room: u32, paced: bool| {
        let mut h = no_ecn(100.0, 20.0, None);
        h.start();
        h.run(SEC);
        let (now, in_flight) = (h.now, h.s.sk.packets_in_flight());
        h.s.sk.snd_cwnd = in_flight + room;
        if paced {
            h.s.sk.pacing_needed = true;
            h.s.sk.wstamp = now + MS;
        }
        let (before, probes) = (h.s.sk.snd_nxt, h.s.stats.tlp_count);
        h.s.fire_loss_probe(now, &mut h.out);
        let goal = h.s.tso_segs();
        (
            h.s.sk.snd_nxt - before,
            h.s.stats.tlp_count - probes,
            goal,
            in_flight,
        )
    };
    let (sent, probes, goal, in_flight) = probe(6, false);
    assert!(
        goal >= 6 && in_flight >= 12,
        "goal {goal}, in flight {in_flight}"
    );
    assert_eq!((sent, probes), (6, 1));
    assert_eq!(
        probe(0, false).0,
        1,
        "a full window still lets one segment out"
    );
    let (sent, probes, _, _) = probe(6, true);
    assert_eq!(
        (sent, probes),
        (0, 0),
        "before the paced departure: nothing sent, no probe"
    );
}

#[test]
fn a_timeout_ends_the_tail_loss_probe_episode() {
    // tcp_retransmit_timer clears tlp_high_seq: a retransmitted probe that is lost too is
    // repaired by the RTO, and the ACK of the next write, beyond the probe's snd_nxt, is not
    // taken for the probe's repair (tcp_process_tlp_ack would reduce the window again).
    let mut h = no_ecn(10.0, 20.0, Some(1448 * 40));
    h.s.keep_open();
    h.filter = first_txs_of(39, 2);
    h.start();
    h.run(5 * SEC);
    assert_eq!((h.s.stats.tlp_count, h.s.stats.rto_count), (1, 1));
    assert_eq!(h.r.stats.bytes_delivered, 1448 * 40);
    let (ssthresh, reductions) = (h.s.sk.snd_ssthresh, h.s.stats.cwr_count);
    let t = h.now;
    h.s.append(1448 * 10, t, &mut h.out);
    h.route_fwd();
    h.run(t + SEC);
    assert_eq!(h.r.stats.bytes_delivered, 1448 * 50);
    assert_eq!(
        (h.s.sk.snd_ssthresh, h.s.stats.cwr_count),
        (ssthresh, reductions)
    );
}

#[test]
fn a_retransmission_acked_by_its_original_does_not_advance_rack() {
    // tcp_clean_rtx_queue skips tcp_rack_advance for a cumulatively ACKed retransmission whose
    // ACK echoes a timestamp from before it (tcp_skb_spurious_retrans). The last of 21
    // segments is held 300 ms, its retransmissions (the loss probe, the RTO's) 600 ms: the
    // original's ACK completes the transfer, and RACK still dates from segment 19's send.
    let mut h = no_ecn(10.0, 20.0, Some(1448 * 21));
    h.filter = Box::new(|p, _| match (p.is_data() && p.seq == 20, p.retrans) {
        (true, false) => Verdict::Delay(300 * MS),
        (true, true) => Verdict::Delay(600 * MS),
        _ => Verdict::Pass,
    });
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.r.stats.bytes_delivered, 1448 * 21);
    let first_retx = h.data().find(|(_, p, _)| p.retrans).unwrap().0;
    let sent_19 = h.data().filter(|(_, p, _)| p.seq == 19).last().unwrap().0;
    assert_eq!(h.s.rack().mstamp, sent_19);
    assert!(sent_19 < first_retx);
}

#[test]
fn a_sack_of_data_sent_before_the_heads_retransmission_rearms_the_rto() {
    // tcp_clean_rtx_queue sets FLAG_SET_XMIT_TIMER for an ACK that only SACKs, when what it
    // SACKs was sent before the head's last transmission: the RTO then counts from the last
    // such SACK, not from the retransmission. Segment 5 of 15 and its fast retransmission are
    // lost; segments 10-14, sent before that retransmission, are SACKed about an RTT after it.
    let mut h = no_ecn(10.0, 20.0, Some(1448 * 15));
    h.filter = first_txs_of(5, 2);
    h.start();
    h.run_until(5 * SEC, |h| h.s.stats.rto_count == 1);
    let rto = h.s.rto() / 2; // the timer that fired, before its backoff
    let rto_at = h.now;
    let last_ack = h
        .rev
        .iter()
        .map(|(t, _)| *t + h.delay)
        .filter(|&t| t <= rto_at)
        .max()
        .unwrap();
    assert!(
        rto_at - last_ack >= rto,
        "RTO {} ms after the last ACK, RTO {} ms",
        (rto_at - last_ack) / MS,
        rto / MS
    );
    h.run(5 * SEC);
    assert_eq!(h.r.stats.bytes_delivered, 1448 * 15);
}

#[test]
fn a_lost_retransmission_goes_again_before_higher_lost_segments() {
    // tcp_xmit_retransmit_queue walks the queue in sequence order from retransmit_skb_hint,
    // and tcp_verify_retransmit_hint moves the hint back to a segment newly marked lost below
    // it: segments 100-199 are lost at once, and the first retransmission of 100 too; RACK
    // finds that out while PRR is still working through the others, and 100 goes again
    // before them (the model queued it behind them before 0.9.20).
    let mut h = no_ecn(10.0, 20.0, Some(1448 * 600));
    let mut tx100 = 0;
    h.filter = Box::new(move |p, _| {
        if p.is_data() && (100..200).contains(&p.seq) {
            if p.seq == 100 {
                tx100 += 1;
                if tx100 <= 2 {
                    return Verdict::Drop;
                }
            } else if !p.retrans {
                return Verdict::Drop;
            }
        }
        Verdict::Pass
    });
    h.start();
    h.run(10 * SEC);
    assert_eq!(h.r.stats.bytes_delivered, 1448 * 600);
    let retx: Vec<u32> = h.retransmitted_seqs();
    let again = retx.iter().rposition(|&s| s == 100).unwrap();
    let last = retx.iter().position(|&s| s == 199).unwrap();
    assert!(
        again < last && h.s.stats.rto_count == 0,
        "{retx:?} {}",
        h.s.stats.rto_count
    );
}

/// A 1 MB transfer over a 20 ms, 10 Mbit/s path with a 1000-packet buffer, no ECN.
fn megabyte_at_10mbit() -> Harness {
    no_ecn(10.0, 20.0, Some(1_000_000))
}

/// [`megabyte_at_10mbit`] with the first transmission of each segment in `late` held back
/// by `by`: reordering, nothing lost.
fn reordered(late: &'static [u32], by: SimDuration) -> Harness {
    let mut h = megabyte_at_10mbit();
    h.filter = Box::new(move |p, _| {
        if p.is_data() && !p.retrans && late.contains(&p.seq) {
            Verdict::Delay(by)
        } else {
            Verdict::Pass
        }
    });
    h
}

#[test]
fn a_fast_retransmit_that_reordering_made_spurious_is_undone() {
    // Segment 50 arrives 8 ms late, after more than three later segments: RACK (no
    // reordering seen yet, so no window) retransmits it and enters recovery. The original's
    // ACK echoes a timestamp from before the retransmission (tcp_packet_delayed), so the
    // reduction is undone (tcp_try_undo_partial): ssthresh is back where slow start had it.
    let mut h = reordered(&[50], 8 * MS);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.retransmitted_seqs(), vec![50]);
    assert_eq!(h.s.stats.fast_recoveries, 1);
    assert_eq!(h.s.stats.undos, 1);
    assert_eq!(h.s.sk.snd_ssthresh, crate::cc::INFINITE_SSTHRESH);
    assert!(h.s.stats.completed_at != NEVER);
    // The same segment really lost: the reduction stays.
    let mut h = megabyte_at_10mbit();
    h.filter = first_tx_of(&[50]);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.stats.undos, 0);
    assert!(h.s.sk.snd_ssthresh < crate::cc::INFINITE_SSTHRESH);
}

#[test]
fn the_reordering_degree_grows_to_how_far_a_late_segment_was_overtaken() {
    // 8 ms at 10 Mbit/s is about seven 1448-byte segments: segment 50 arrives behind the
    // ones sent up to 7 after it, so tcp_check_sack_reordering raises tp->reordering from
    // 3 to that distance. A real loss of the same segment leaves it at 3.
    let mut h = reordered(&[50], 8 * MS);
    h.start();
    h.run(5 * SEC);
    assert!((6..=8).contains(&h.s.reordering()), "{}", h.s.reordering());
    let mut h = megabyte_at_10mbit();
    h.filter = first_tx_of(&[50]);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.reordering(), 3);
}

#[test]
fn a_timeout_that_a_delay_spike_made_spurious_is_undone() {
    // Everything sent between 0.3 and 5 s arrives 3 s late: no ACK comes back, the RTO
    // fires and retransmits the head (late too). The delayed originals arrive first, and
    // their ACKs echo timestamps from before that retransmission (Eifel), so
    // tcp_try_undo_loss restores the window: ssthresh is back where slow start had it.
    let mut h = megabyte_at_10mbit();
    h.filter = Box::new(|p, ctx| {
        if p.is_data() && (300 * MS..5 * SEC).contains(&ctx.now) {
            Verdict::Delay(3 * SEC)
        } else {
            Verdict::Pass
        }
    });
    h.start();
    h.run(20 * SEC);
    assert!(h.s.stats.rto_count >= 1);
    assert_eq!(h.s.stats.fast_recoveries, 0);
    assert_eq!(h.s.stats.undos, 1);
    assert_eq!(h.s.sk.snd_ssthresh, crate::cc::INFINITE_SSTHRESH);
    assert!(h.s.stats.completed_at != NEVER);
}

/// A 5 MB transfer over a 20 ms, 10 Mbit/s path with a 50-packet buffer (about 1.5 BDP),
/// no ECN, with `tcp_frto` as given and `filter` on the data path.
fn five_megabytes_at_10mbit(frto: bool, filter: Filter) -> Harness {
    let mut h = Harness::new(
        10.0,
        20.0,
        50,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(5_000_000),
    );
    h.s.spec.frto = frto;
    h.filter = filter;
    h.start();
    h.run(30 * SEC);
    assert!(h.s.stats.completed_at != NEVER);
    h
}

#[test]
fn frto_sends_new_data_after_a_timeout_and_recovers_when_the_loss_was_real() {
    // Every data packet sent in 2-3.5 s is lost, the loss probe and two RTO retransmissions
    // of the head too; the third gets through. Its ACK advances snd_una without the rest of
    // the window (F-RTO step 2b): two new segments go out, not retransmissions. Their SACKs
    // show the loss was real (step 3a): the lost segments are then retransmitted and the
    // reduction stays. With tcp_frto = 0 the retransmissions follow the head's at once.
    let outage = || -> Filter {
        Box::new(|p, ctx| {
            if p.is_data() && (2 * SEC..3500 * MS).contains(&ctx.now) {
                Verdict::Drop
            } else {
                Verdict::Pass
            }
        })
    };
    for frto in [true, false] {
        let h = five_megabytes_at_10mbit(frto, outage());
        assert_eq!(h.s.stats.rto_count, 3);
        assert_eq!((h.s.stats.undos, h.s.stats.spurious_rtos), (0, 0));
        assert!(h.s.sk.snd_ssthresh < crate::cc::INFINITE_SSTHRESH);
        let sent: Vec<&Packet> = h.data().map(|(_, p, _)| p).collect();
        let last_rto = (0..sent.len())
            .filter(|&i| sent[i].retrans && sent[i].seq == sent[i - 1].seq)
            .last()
            .unwrap();
        let (head, highest) = (
            sent[last_rto].seq,
            sent[..last_rto].iter().map(|p| p.seq).max(),
        );
        let next: Vec<(u32, bool)> = sent[last_rto + 1..last_rto + 4]
            .iter()
            .map(|p| (p.seq, p.retrans))
            .collect();
        let h1 = highest.unwrap() + 1;
        if frto {
            assert_eq!(next, vec![(h1, false), (h1 + 1, false), (head + 1, true)]);
        } else {
            assert_eq!(
                next,
                vec![(head + 1, true), (head + 2, true), (head + 3, true)]
            );
        }
    }
}

#[test]
fn frto_undoes_a_timeout_when_data_never_retransmitted_arrives() {
    // From 2 s on, the first data segment is lost and everything else arrives 3 s late: no
    // ACK comes back, so the RTO fires (three times, backing off) and retransmits the lost
    // head. The delayed originals are SACKed before that retransmission arrives: data never
    // retransmitted was delivered, so the timeout was spurious (F-RTO step 3b) and is undone
    // at once. Without F-RTO nothing undoes it (the SACKs neither advance snd_una nor show a
    // retransmission spurious), and the transfer takes longer.
    let spike = || -> Filter {
        let mut lost = false;
        Box::new(move |p, ctx| {
            if !p.is_data() || !(2 * SEC..5 * SEC).contains(&ctx.now) {
                Verdict::Pass
            } else if !lost && !p.retrans {
                lost = true;
                Verdict::Drop
            } else {
                Verdict::Delay(3 * SEC)
            }
        })
    };
    let on = five_megabytes_at_10mbit(true, spike());
    let off = five_megabytes_at_10mbit(false, spike());
    for h in [&on, &off] {
        assert_eq!(h.s.stats.rto_count, 3);
    }
    assert_eq!(on.s.stats.spurious_rtos, 1);
    assert!(on.s.stats.undos >= 1);
    assert_eq!((off.s.stats.undos, off.s.stats.spurious_rtos), (0, 0));
    assert!(on.s.stats.completed_at < off.s.stats.completed_at);
}

#[test]
fn a_sacked_retransmission_not_marked_lost_stays_in_flight_until_the_cumulative_ack() {
    // Segments 100 and 103 are lost and retransmitted; an undo then unmarks both losses
    // (as `tcp_try_undo_loss` does), so they are plain retransmissions (SACKED_RETRANS
    // alone). A SACK of 103 leaves its retransmission counted in flight (`tcp_sacktag_one`:
    // "we do not clear RETRANS, believing that retransmission is still in flight"); the
    // cumulative ACK takes it out. Before model 0.9.16 the SACK cleared the flag but not
    // the count, and `retrans_out` stayed one too high for the rest of the connection.
    let mut h = megabyte_at_10mbit();
    h.filter = first_tx_of(&[100, 103]);
    h.start();
    h.run_until(10 * SEC, |h| h.s.stats.retrans >= 2);
    assert_eq!(h.s.sk.retrans_out, 2);
    h.s.undo_unmarking_losses();
    assert_eq!((h.s.sk.lost_out, h.s.sk.retrans_out), (0, 2));
    let mut ack = h.rev.last().unwrap().1;
    let mut out = Vec::new();
    (ack.ack, ack.sack[0], ack.n_sack) = (100, (103, 104), 1);
    h.s.on_packet(&ack, h.now, &mut out);
    assert_eq!(h.s.scoreboard_error(), None);
    assert_eq!(h.s.sk.retrans_out, 2);
    let nxt = h.s.sk.snd_nxt;
    (ack.ack, ack.n_sack) = (nxt, 0);
    h.s.on_packet(&ack, h.now + MS, &mut out);
    assert_eq!(h.s.scoreboard_error(), None);
    assert_eq!((h.s.sk.snd_una, h.s.sk.retrans_out), (nxt, 0));
}

#[test]
fn the_rate_samples_losses_include_those_its_ack_marked() {
    // tcp_rate_gen runs after the ACK's loss marking: rs->lost = tp->lost - prior_lost
    // counts the segments this ACK marked lost too (BBRv2's loss-rate test reads it).
    let mut h = megabyte_at_10mbit();
    h.filter = first_tx_of(&[100]);
    h.start();
    h.run_until(10 * SEC, |h| h.s.sk.lost >= 1);
    let rs = h.s.rate_sample();
    assert_eq!(
        (rs.losses, rs.lost),
        (1, 1),
        "marked by an ACK, and in its sample"
    );
}

#[test]
fn a_dsack_block_above_the_ack_sacks_the_segment_it_reports() {
    // A receiver's DSACK of an out-of-order duplicate whose block it does not report second
    // is, for Linux's sender, no DSACK (RFC 2883: below the ACK or inside the second block)
    // but an ordinary SACK block (`tcp_sacktag_walk`): the segment is SACKed.
    let mut h = megabyte_at_10mbit();
    h.start();
    h.run(100 * MS);
    let una = h.s.sk.snd_una;
    assert!(h.s.sk.snd_nxt > una + 10 && h.s.sk.sacked_out == 0);
    let mut ack = h.rev.last().unwrap().1;
    ack.ack = una;
    ack.sack[0] = (una + 5, una + 6);
    ack.n_sack = 1;
    ack.dsack = true;
    let mut out = Vec::new();
    h.s.on_packet(&ack, h.now, &mut out);
    assert_eq!(h.s.sk.sacked_out, 1);
    assert_eq!(h.s.stats.undos, 0);
}

#[test]
fn a_dsack_after_reordering_widens_the_rack_window() {
    // The spurious retransmission of segment 50 is DSACKed after reordering was seen, so
    // RACK's window grows from min_rtt/4 (5 ms) to 2 x min_rtt/4: segment 300, 8 ms late
    // too, is then waited for, not retransmitted (RFC 8985 section 6.2, step 4).
    let mut h = reordered(&[50, 300], 8 * MS);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.retransmitted_seqs(), vec![50]);
    assert_eq!(h.s.stats.dsacks_received, 1);
    assert_eq!(h.s.rack().reo_wnd_steps, 2);
    assert!(h.s.stats.completed_at != NEVER);
}

#[test]
fn rack_reordering_window_is_zero_in_recovery_or_after_three_sacks() {
    use super::rack::Rack;
    let r = Rack::default();
    let min_rtt = 40 * MS;
    assert_eq!(r.reo_wnd(CaState::Open, 1, min_rtt, 50 * MS), 10 * MS);
    assert_eq!(r.reo_wnd(CaState::Open, 3, min_rtt, 50 * MS), 0);
    assert_eq!(r.reo_wnd(CaState::Recovery, 0, min_rtt, 50 * MS), 0);
    let seen = Rack {
        reord_seen: 1,
        ..Rack::default()
    };
    assert_eq!(
        seen.reo_wnd(CaState::Recovery, 5, min_rtt, 50 * MS),
        10 * MS
    );
    assert_eq!(seen.reo_wnd(CaState::Open, 0, min_rtt, 8 * MS), 8 * MS);
}

// ------------------------------------------------------------------------- pacing, throughput

/// A sender spec with `sch_fq` pacing (so every skb leaves at its own time), no ECN.
fn paced() -> TcpSpec {
    TcpSpec {
        fq_pacing: true,
        ..spec(EcnSysctl::None)
    }
}

/// Transmissions grouped into skbs: (time, segments, payload bytes, pacing rate after).
fn bursts(h: &Harness) -> Vec<(SimTime, u32, u64, u64)> {
    let mut b: Vec<(SimTime, u32, u64, u64)> = Vec::new();
    for (t, p, r) in h.data() {
        match b.last_mut() {
            Some(last) if last.0 == *t => {
                last.1 += 1;
                last.2 += p.payload as u64;
                last.3 = *r;
            }
            _ => b.push((*t, 1, p.payload as u64, *r)),
        }
    }
    b
}

/// A 3 s bulk Reno transfer over `rate_mbps`, 20 ms, a 1000-packet buffer, sender spec `s`.
fn bulk_3s(rate_mbps: f64, s: TcpSpec) -> Harness {
    let mut h = Harness::new(rate_mbps, 20.0, 1000, s, spec(EcnSysctl::None), None);
    h.start();
    h.run(3 * SEC);
    h
}

#[test]
fn fq_pacing_spaces_skbs_at_the_pacing_rate() {
    let s = paced();
    let h = bulk_3s(10.0, s);
    let b = bursts(&h);
    // After the first 10 segments each skb's departure stamp is at least half its length
    // at the pacing rate after the previous one (tcp_update_skb_after_send's credit).
    let first = b.iter().scan(0, |n, x| {
        *n += x.1;
        Some(*n)
    });
    let start = first.take_while(|&n| n < 12).count() + 1;
    for i in start..b.len() {
        let (t0, _, len, rate) = b[i - 1];
        let gap_min = len * SEC / rate / 2;
        assert!(
            b[i].0 - t0 >= gap_min,
            "skb {i}: gap {} < {gap_min}",
            b[i].0 - t0
        );
    }
    // Unpaced Reno sends back-to-back bursts.
    let u = bulk_3s(10.0, spec(EcnSysctl::None));
    let d: Vec<SimTime> = u.data().map(|(t, _, _)| *t).collect();
    assert!(d.windows(2).filter(|w| w[0] == w[1]).count() > 100);
}

#[test]
fn cc_requested_pacing_is_enforced_without_fq() {
    // Without TSO every segment is its own skb, so paced segments leave exactly
    // payload / pacing_rate apart.
    let no_tso = TcpSpec {
        tso: false,
        ..spec(EcnSysctl::None)
    };
    let mut h = Harness::new(10.0, 20.0, 1000, no_tso, spec(EcnSysctl::None), None);
    h.start();
    h.run_until(SEC, |h| h.s.stats.established_at != NEVER);
    // What a CC's init does with SK_PACING_NEEDED (BBR, Prague).
    h.s.sk.pacing_needed = true;
    h.run(3 * SEC);
    let data: Vec<(SimTime, u32, u64)> = h.data().map(|(t, p, r)| (*t, p.payload, *r)).collect();
    let mut exact = 0;
    for i in 11..data.len() {
        let (t0, len, rate) = data[i - 1];
        let len_ns = len as u64 * SEC / rate;
        let gap = data[i].0 - t0;
        assert!(gap >= len_ns / 2, "packet {i}: gap {gap} < {}", len_ns / 2);
        exact += (gap == len_ns) as usize;
    }
    // Packets released by the pacing timer leave exactly payload / pacing_rate apart (the
    // others leave on an ACK's arrival: while the receive window grows, every segment is
    // ACKed at once, `tcp_grow_window`).
    assert!(exact * 5 > data.len(), "{exact} of {}", data.len());
}

#[test]
fn tso_autosizes_skbs_to_a_millisecond_at_the_pacing_rate() {
    // tcp_tso_autosize: pacing_rate >> 10 bytes, at least tcp_min_tso_segs = 2 segments,
    // and tcp_cwnd_test: at most half the window per skb.
    let h = bulk_3s(200.0, spec(EcnSysctl::None));
    let goal = ((h.s.sk.pacing_rate >> 10) / 1448).max(2) as u32;
    assert!(goal > 2, "goal {goal}");
    assert_eq!(h.s.tso_segs(), goal.min(45));
    let b = bursts(&h);
    let big = b.iter().filter(|x| x.1 > 3).count();
    // An unpaced sender defers partial bursts (tcp_tso_should_defer), so bursts larger
    // than the two or three segments one delayed ACK opens are common.
    assert!(
        big * 4 > b.len(),
        "{big} of {} skbs have more than 3 segments",
        b.len()
    );
    // Without TSO: one segment per transmission opportunity and no deferral, so no
    // burst is larger than what one ACK opens.
    let no_tso = TcpSpec {
        tso: false,
        ..spec(EcnSysctl::None)
    };
    let u = bulk_3s(200.0, no_tso);
    let sizes: Vec<u32> = bursts(&u).iter().skip(5).map(|x| x.1).collect();
    let avg = sizes.iter().sum::<u32>() as f64 / sizes.len() as f64;
    assert!(avg < 3.0, "mean burst {avg}");
}

#[test]
fn every_segment_of_an_skb_records_the_flight_after_the_whole_skb() {
    // tcp_set_tx_in_flight: tx.in_flight = packets in flight + tcp_skb_pcount(skb), once
    // per skb, so BBR's rate samples and lost-skb checks see the same flight for each of
    // its segments. A paced sender, so that each skb leaves at its own time.
    let h = bulk_3s(200.0, paced());
    let sent: Vec<(SimTime, u32)> = (h.s.sk.snd_una..h.s.sk.snd_nxt)
        .map(|seq| h.s.tx_in_flight(seq))
        .collect();
    let mut multi = 0;
    for skb in sent.chunk_by(|a, b| a.0 == b.0) {
        assert!(skb.iter().all(|s| s.1 == skb[0].1), "{skb:?}");
        multi += (skb.len() > 1) as usize;
    }
    assert!(multi > 10, "{multi} skbs of several segments in flight");
}

#[test]
fn a_burst_never_spans_two_write_queue_skbs() {
    // tcp_sendmsg fills the write queue's skbs to tcp_xmit_size_goal (a 64 KB GSO skb less
    // MAX_TCP_HEADER, at most half the largest offered window: 45 segments of 1448 bytes
    // once the window has opened) and tcp_write_xmit cuts bursts from one skb at a time. A
    // paced sender, so that every skb leaves at its own time.
    let s = paced();
    let h = bulk_3s(200.0, s);
    assert_eq!(h.s.size_goal_segs(), 45);
    let late = late_bursts(&h);
    // The grid of the current skb (a size goal that changed earlier, while the window grew,
    // put earlier boundaries elsewhere).
    let phase = h.s.skb_end % 45;
    assert_eq!(
        skb_crossings(&late, phase),
        0,
        "bursts crossing a write-queue skb boundary"
    );
    // The burst that ends an skb is short when 45 is not a multiple of the burst size.
    let skb_of = |s: u32| (s + 45 - phase) / 45;
    let max = late.iter().map(|(_, n)| *n).max().unwrap();
    assert!(
        45 % max != 0
            && late
                .iter()
                .any(|(s, n)| skb_of(*s) != skb_of(s + n) && *n < max)
    );
}

#[test]
fn a_sized_write_is_cut_into_write_queue_skbs_too() {
    // A 20 MB write: the same 45-segment skbs, the last one ending at the write's end.
    let s = paced();
    let mut h = Harness::new(
        200.0,
        20.0,
        1000,
        s,
        spec(EcnSysctl::None),
        Some(20_000_000),
    );
    h.start();
    h.run(3 * SEC);
    assert_eq!(h.r.stats.bytes_delivered, 20_000_000);
    assert_eq!(h.s.skb_end, 20_000_000u32.div_ceil(1448));
    // The grid's phase is set where the size goal reached 45, early on. Some phase has no
    // late burst crossing a boundary; bursts cut without the grid cross at every phase.
    let late = late_bursts(&h);
    assert!((0..45).any(|phase| skb_crossings(&late, phase) == 0));
}

/// The last 100 bursts of new data: (first segment, segments) sent at one time.
fn late_bursts(h: &Harness) -> Vec<(u32, u32)> {
    let mut skbs: Vec<(u32, u32)> = Vec::new();
    let mut last_t = NEVER;
    for (t, p, _) in h.data().filter(|(_, p, _)| !p.retrans) {
        match skbs.last_mut() {
            Some(b) if *t == last_t && b.0 + b.1 == p.seq => b.1 += 1,
            _ => skbs.push((p.seq, 1)),
        }
        last_t = *t;
    }
    assert!(skbs.len() > 400);
    skbs.split_off(skbs.len() - 100)
}

/// Bursts that span a boundary of the 45-segment grid with the given phase.
fn skb_crossings(bursts: &[(u32, u32)], phase: u32) -> usize {
    let skb_of = |s: u32| (s + 45 - phase) / 45;
    bursts
        .iter()
        .filter(|(s, n)| skb_of(*s) != skb_of(s + n - 1))
        .count()
}

#[test]
fn a_tail_that_fits_is_deferred_only_if_more_data_may_join_it() {
    // tcp_tso_should_defer sends an skb that fits the window when it is in the middle of
    // the write queue or carries the FIN (a closing transfer's last); the tail of a
    // connection kept open may get more data and waits like a partial burst. Near the end of
    // a 1 MB transfer, just after a send, with the ACK clock running and a window (hundreds
    // of segments) far above the few left:
    let mut h = one_megabyte_at_100mbit();
    let total = 1_000_000u32.div_ceil(1448);
    h.run_until(2 * SEC, |h| {
        let left = total - h.s.sk.snd_nxt;
        (2..=16).contains(&left) && 3 * left < h.s.sk.snd_cwnd && h.s.sk.wstamp == h.now
    });
    let now = h.now;
    assert!(
        (2..=16).contains(&(total - h.s.sk.snd_nxt)),
        "never near the end"
    );
    assert!(!h.s.would_defer_the_tail(now, false));
    assert!(h.s.would_defer_the_tail(now, true));
}

#[test]
fn tso_deferral_waits_at_most_a_millisecond_after_the_last_write() {
    // tcp_tso_should_defer never holds data back when the last write is older than 1 ms:
    // on a slow path (1 ACK per 2.4 ms at 10 Mbit/s) skbs follow the ACK clock.
    let h = bulk_3s(10.0, spec(EcnSysctl::None));
    // Every skb leaves at an ACK arrival (no timer releases deferred data).
    let ack_times: std::collections::HashSet<SimTime> =
        h.rev.iter().map(|(t, _)| *t + h.delay).collect();
    assert!(bursts(&h).iter().skip(1).all(|x| ack_times.contains(&x.0)));
}

#[test]
fn pacing_rate_is_twice_cwnd_over_srtt_in_slow_start() {
    let s = paced();
    let mut h = Harness::new(10.0, 20.0, 1000, s, spec(EcnSysctl::None), None);
    h.start();
    h.run_until(SEC, |h| h.s.stats.acks_received == 3);
    let sk = &h.s.sk;
    let want = sk.mss as u64 * 2 * sk.snd_cwnd.max(sk.packets_out) as u64 * SEC / (sk.srtt);
    let got = sk.pacing_rate;
    assert!(
        (got as f64 / want as f64 - 1.0).abs() < 0.01,
        "{got} vs {want}"
    );
}

#[test]
fn reno_fills_a_10_mbit_link() {
    // One BDP of buffer (20 ms at 10 Mbit/s = 17 packets).
    let mut h = Harness::new(
        10.0,
        20.0,
        17,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        None,
    );
    h.start();
    h.run(2 * SEC);
    let b0 = h.r.stats.bytes_delivered;
    h.run(12 * SEC);
    let goodput = (h.r.stats.bytes_delivered - b0) as f64 * 8.0 / 10.0;
    // Payload share of a full frame is 1448/1514 = 95.6 %.
    assert!(goodput > 9.0e6, "{goodput}");
    assert!(h.s.stats.fast_recoveries > 5);
    assert_eq!(h.s.stats.rto_count, 0);
}

#[test]
fn packet_conservation_holds_in_a_lossy_run() {
    let mut h = Harness::new(
        10.0,
        20.0,
        30,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        None,
    );
    let mut rng = Rng::new(7, 0);
    h.filter = Box::new(move |p, _| {
        if p.is_data() && rng.uniform() < 0.03 {
            Verdict::Drop
        } else {
            Verdict::Pass
        }
    });
    h.start();
    for k in 1..=10 {
        h.run(k * SEC);
        assert_eq!(
            h.s.stats.data_pkts_sent,
            h.r.stats.data_pkts_received + h.data_drops + h.data_in_net,
            "at {k} s"
        );
        let sk = &h.s.sk;
        assert!(sk.sacked_out + sk.lost_out <= sk.packets_out);
        assert!(sk.retrans_out <= sk.lost_out);
    }
    assert!(h.data_drops > 50 && h.s.stats.retrans > 50);
    // All bytes acknowledged were delivered in order.
    assert!(h.r.stats.bytes_delivered >= h.s.sk.snd_una as u64 * 1448);
}

#[test]
fn random_loss_reordering_ack_loss_and_marks_keep_the_scoreboard_consistent() {
    for seed in 0..6u64 {
        let ecn = [EcnSysctl::None, EcnSysctl::Classic, EcnSysctl::Accecn][seed as usize % 3];
        let s = TcpSpec {
            fq_pacing: seed % 2 == 1,
            frto: seed % 4 < 2,
            ..spec(ecn)
        };
        let mut h = Harness::new(
            20.0,
            10.0 + seed as f64 * 7.0,
            40,
            s,
            spec(ecn),
            Some(3_000_000),
        );
        let mut rng = Rng::new(seed, 9);
        // An outage longer than the RTO, so timeouts (and F-RTO) are exercised too.
        let outage = SEC + seed * 300 * MS..SEC + seed * 300 * MS + 700 * MS;
        h.filter = Box::new(move |p, c| {
            let u = rng.uniform();
            if p.is_data() && (u < 0.02 || outage.contains(&c.now)) {
                Verdict::Drop
            } else if u < 0.04 {
                Verdict::Delay((rng.uniform() * 3.0 * MS as f64) as SimDuration)
            } else if c.qlen > 20 && u < 0.3 {
                Verdict::Mark
            } else {
                Verdict::Pass
            }
        });
        let mut rng2 = Rng::new(seed, 10);
        h.rev_drop = Box::new(move |p| !p.has(flags::SYN) && rng2.uniform() < 0.05);
        h.start();
        h.run_until(60 * SEC, |h| {
            let sk = &h.s.sk;
            assert!(sk.sacked_out + sk.lost_out <= sk.packets_out);
            assert!(sk.retrans_out <= sk.lost_out + 1);
            assert!(sk.snd_cwnd >= 1);
            assert!((3..=300).contains(&h.s.reordering()));
            assert_eq!(
                h.s.stats.data_pkts_sent,
                h.r.stats.data_pkts_received + h.data_drops + h.data_in_net
            );
            false
        });
        assert_eq!(h.r.stats.bytes_delivered, 3_000_000, "seed {seed}");
        assert!(h.s.stats.completed_at != NEVER, "seed {seed}");
        assert!(h.s.stats.rto_count > 0, "seed {seed}");
        assert!(
            h.s.stats.retrans >= h.data_drops,
            "seed {seed}: {:?}",
            h.s.stats
        );
        eprintln!(
            "seed {seed}: {:?} done at {}",
            h.s.stats, h.s.stats.completed_at
        );
    }
}

#[test]
fn a_short_last_segment_is_acked_at_once() {
    // 32 full segments + 100 bytes: after the 16 quick ACKs the odd last segment would wait
    // for the delayed-ACK timer, but a short (pushed) segment read by the application is
    // ACKed at once (tcp_cleanup_rbuf), so the transfer ends one RTT after it was sent.
    let size = 1448 * 32 + 100;
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(size),
    );
    h.start();
    h.run(2 * SEC);
    let last = h.data().last().unwrap();
    assert_eq!(last.1.payload, 100);
    let done = h.s.stats.completed_at;
    assert!(done - last.0 < 35 * MS, "{}", done - last.0);
    assert_eq!(h.r.stats.acks_sent, 16 + 8 + 1);
}

#[test]
fn sized_flow_completes_and_records_its_completion_time() {
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(100_000),
    );
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.r.stats.bytes_delivered, 100_000);
    let n = h.data().count();
    assert_eq!(n, 70); // ceil(100000 / 1448)
    assert_eq!(h.data().last().unwrap().1.payload, 100_000 - 69 * 1448);
    let done = h.s.stats.completed_at;
    assert!(done != NEVER && done < SEC);
    assert_eq!(h.s.next_timer(), NEVER);
    assert_eq!(h.s.in_flight(), 0);
}

#[test]
fn a_one_byte_flow_completes_in_one_round_trip_after_the_handshake() {
    let mut h = Harness::new(
        10.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        Some(1),
    );
    h.start();
    h.run(SEC);
    assert_eq!(h.r.stats.bytes_delivered, 1);
    assert_eq!(h.data().count(), 1);
    let rtt = h.s.stats.established_at;
    assert!(
        h.s.stats.completed_at <= 2 * rtt + MS,
        "{}",
        h.s.stats.completed_at
    );
    assert_eq!(h.s.next_timer(), NEVER);
}

/// 1 MB over 100 Mbit/s, 20 ms (no ECN, not started), `tcp_slow_start_after_idle` set to `on`:
/// it gates both the idle restart and RFC 2861's decay.
fn megabyte_with_idle_sysctl(on: bool) -> Harness {
    let s_spec = TcpSpec {
        slow_start_after_idle: on,
        ..spec(EcnSysctl::None)
    };
    Harness::new(
        100.0,
        20.0,
        1000,
        s_spec,
        spec(EcnSysctl::None),
        Some(1_000_000),
    )
}

#[test]
fn a_write_after_idle_restarts_the_window_as_tcp_cwnd_restart() {
    // 1 MB on 100 Mbit/s, 20 ms: Reno's window grows well past 10. After 2 s idle (RTO about
    // 220 ms: many RTOs), the next write starts from the initial window, and ssthresh keeps
    // 3/4 of the old window; with the sysctl off the window is what the last ACKs left.
    for on in [true, false] {
        let mut h = megabyte_with_idle_sysctl(on);
        h.start();
        h.run(2 * SEC);
        assert!(h.s.is_done());
        let (w, ss) = (h.s.sk.snd_cwnd, h.s.sk.snd_ssthresh);
        assert!(w > 40, "window after 1 MB: {w}");
        let now = h.now;
        h.s.append(100_000, now, &mut h.out);
        if on {
            assert_eq!(h.s.sk.snd_cwnd, 10);
            assert_eq!(h.s.sk.snd_ssthresh, ss.max((w >> 1) + (w >> 2)));
            // The first flight is the initial window.
            assert_eq!(h.out.iter().filter(|p| p.is_data()).count(), 10);
        } else {
            assert_eq!(h.s.sk.snd_cwnd, w);
        }
        h.route_fwd();
        h.run(4 * SEC);
        assert!(h.s.is_done());
    }
}

#[test]
fn an_application_limited_window_decays_halfway_to_what_it_used_every_rto() {
    // RFC 2861 as tcp_cwnd_application_limited: 1 MB grows Reno's window past 40; then a 3 KB
    // write every 10 ms for 3 s keeps at most a few segments out, never cwnd-limited. Each RTO
    // (about 220 ms) of that halves the distance to the initial window (what it used is
    // less), and ssthresh keeps 3/4 of the window it had. With tcp_slow_start_after_idle off
    // the window stays; a bulk writer (SOCK_NOSPACE) is never cut either.
    for on in [true, false] {
        let mut h = megabyte_with_idle_sysctl(on);
        h.s.keep_open();
        h.start();
        h.run_until(2 * SEC, |h| h.s.is_done());
        assert!(h.s.is_done());
        let (w, ss) = (h.s.sk.snd_cwnd, h.s.sk.snd_ssthresh);
        assert!(w > 40, "window after 1 MB: {w}");
        let (done, mut cwnds) = (h.now, vec![]);
        for i in 0..300 {
            let now = h.now;
            h.s.append(3_000, now, &mut h.out);
            h.route_fwd();
            h.run(done + (i + 1) * 10 * MS);
            cwnds.push(h.s.sk.snd_cwnd);
            assert!(h.s.sk.packets_out <= 6, "{}", h.s.sk.packets_out);
        }
        if on {
            // the first cut after one RTO of starving, not before; then halving steps
            let first = cwnds
                .iter()
                .position(|&c| c != w)
                .expect("the window was never cut");
            assert!(
                (1..=25).contains(&first),
                "first cut after {first} writes: {cwnds:?}"
            );
            assert_eq!(cwnds[first], (w + 10) >> 1);
            assert_eq!(h.s.sk.snd_ssthresh, ss.max((w >> 1) + (w >> 2)));
            // Halving steps while the window is well above its use; near the end ssthresh
            // (3/4 of the first window) keeps the flow in slow start, where it counts as
            // cwnd-limited below twice its peak of segments out and grows back a little
            // between cuts, as Linux's does.
            let mut steps = cwnds.clone();
            steps.dedup();
            let mut expect = w;
            for c in steps[1..].iter().take_while(|&&c| c > 20) {
                expect = (expect + 10) >> 1;
                assert_eq!(*c, expect, "{steps:?}");
            }
            assert!(steps.len() > 6, "{steps:?}");
            assert!(cwnds[200..].iter().all(|&c| c <= 15), "{steps:?}");
        } else {
            assert!(cwnds.iter().all(|&c| c == w), "{cwnds:?}");
        }
    }
    // A bulk sender limited by a small receive window: never cwnd-limited, never cut.
    let mut h = Harness::new(
        100.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        fixed_rcvbuf(EcnSysctl::None),
        None,
    );
    h.start();
    h.run(SEC);
    let w = h.s.sk.snd_cwnd;
    h.run(3 * SEC);
    assert!(w > 44 && h.s.sk.snd_cwnd >= w, "{w} -> {}", h.s.sk.snd_cwnd);
}

#[test]
fn quick_acks_are_bounded_by_the_pairs_of_segments_the_window_holds() {
    // tcp_incr_quickack: a receive buffer of 8 KB (tcp_rmem, no autotuning) advertises two
    // segments, one pair: the first segment is ACKed at once, then every flight of two gets
    // one ACK at its second segment. Without the bound the 16 quick ACKs of the first data
    // would ACK both segments of the first eight flights.
    let r_spec = TcpSpec {
        rmem: [4096, 8192, 8192],
        moderate_rcvbuf: false,
        ..spec(EcnSysctl::None)
    };
    let mut h = Harness::new(100.0, 20.0, 1000, spec(EcnSysctl::None), r_spec, None);
    h.start();
    h.run(300 * MS);
    let data = h.data().count();
    let acks = h.rev.iter().filter(|(_, p)| !p.is_data()).count();
    assert!(data >= 20, "{data}");
    // the SYN/ACK, the quick ACK of the first segment, one per pair
    assert!(acks <= 2 + data / 2 + 1, "{acks} ACKs for {data} segments");
}

/// A 1 MB transfer over a 20 ms, 100 Mbit/s path with a 1000-packet buffer, no ECN, started.
fn one_megabyte_at_100mbit() -> Harness {
    let mut h = no_ecn(100.0, 20.0, Some(1_000_000));
    h.start();
    h
}

/// A transfer of `size` bytes (None: bulk) over a `rtt_ms`, `rate_mbps` path with a
/// 1000-packet buffer, no ECN, not started.
fn no_ecn(rate_mbps: f64, rtt_ms: f64, size: Option<u64>) -> Harness {
    Harness::new(
        rate_mbps,
        rtt_ms,
        1000,
        spec(EcnSysctl::None),
        spec(EcnSysctl::None),
        size,
    )
}

#[test]
fn the_final_fin_segment_is_not_held_by_the_congestion_window() {
    // tcp_cwnd_test lets a one-segment skb carrying the FIN out with a full window: a
    // closing 11-segment response leaves in the first round trip (10 by the initial window
    // plus the FIN-marked last), where one kept open waits for the first ACK.
    let first_flight = |keep_open: bool| {
        let mut h = Harness::new(
            100.0,
            20.0,
            1000,
            spec(EcnSysctl::None),
            spec(EcnSysctl::None),
            Some(11 * 1448),
        );
        if keep_open {
            h.s.keep_open();
        }
        h.start();
        h.run(SEC);
        assert!(h.s.is_done());
        let first_ack = h.rev.iter().find(|(_, p)| !p.has(flags::SYN)).unwrap().0;
        h.fwd
            .iter()
            .filter(|(t, p, _)| p.is_data() && *t < first_ack)
            .count()
    };
    assert_eq!(first_flight(false), 11);
    assert_eq!(first_flight(true), 10);
}

#[test]
fn nagle_splits_the_short_end_off_a_tail_skb_while_a_short_segment_is_unacknowledged() {
    // tcp_mss_split_point: a tail skb whose last segment is short is cut at the last full
    // segment when Nagle's check holds (tcp_nagle_check: something in flight and the last
    // short segment sent unacknowledged, Minshall). Two 2,172-byte messages (1.5 segments)
    // 1 ms apart on a connection kept open: the first leaves whole (nothing in flight), of
    // the second only the full segment, its short end waiting for the first's ACK; with
    // TCP_NODELAY both segments leave.
    let second_write = |nodelay: bool| {
        let s_spec = TcpSpec {
            nodelay,
            ..spec(EcnSysctl::None)
        };
        let mut h = Harness::new(100.0, 20.0, 1000, s_spec, spec(EcnSysctl::None), Some(1000));
        h.s.keep_open();
        h.start();
        h.run(SEC);
        let t = h.now;
        h.s.append(2172, t, &mut h.out);
        h.route_fwd();
        h.run(t + MS);
        h.s.append(2172, t + MS, &mut h.out);
        h.route_fwd();
        let at = |when: SimTime| {
            h.fwd
                .iter()
                .filter(|(x, p, _)| *x == when && p.is_data())
                .map(|(_, p, _)| p.payload)
                .collect::<Vec<_>>()
        };
        (at(t), at(t + MS))
    };
    assert_eq!(second_write(false), (vec![1448, 724], vec![1448]));
    assert_eq!(second_write(true), (vec![1448, 724], vec![1448, 724]));
}

#[test]
fn a_write_within_an_rto_of_the_last_send_keeps_the_window() {
    let mut h = one_megabyte_at_100mbit();
    h.run_until(2 * SEC, |h| h.s.is_done());
    let w = h.s.sk.snd_cwnd;
    // 100 ms after the last data left (the final ACK took an RTT): below the RTO.
    let t = h.now + 80 * MS;
    h.run(t);
    h.s.append(100_000, t, &mut h.out);
    assert_eq!(h.s.sk.snd_cwnd, w);
}

#[test]
fn a_lone_runt_acked_alone_does_not_raise_the_min_rtt_filter() {
    // tcp_clean_rtx_queue's FLAG_ACK_MAYBE_DELAYED: an ACK of one segment shorter than
    // mss_cache, sent when nothing else was in flight, may have waited for the receiver's
    // delayed-ACK timer, so tcp_update_rtt_min keeps it out of the 300 s min filter when it
    // is above the minimum, and the rate sample says so (`is_ack_delayed`, which BBR's min_rtt
    // refresh reads). A connection kept open sends one write every 10 s for 400 s, each
    // arriving 30 ms late (a 50 ms sample on a 20 ms path): runts leave the handshake's 20 ms
    // in the filter, full segments replace it once it is 300 s old.
    let run = |bytes: u64| {
        let mut h = no_ecn(100.0, 20.0, Some(bytes));
        h.s.keep_open();
        h.filter = Box::new(|p, c| {
            if p.is_data() && c.now > SEC {
                Verdict::Delay(30 * MS)
            } else {
                Verdict::Pass
            }
        });
        h.start();
        h.run(SEC);
        let mut delayed = Vec::new();
        for i in 1..=40u64 {
            let t = i * 10 * SEC;
            h.run(t);
            h.s.append(bytes, t, &mut h.out);
            h.route_fwd();
            h.run(t + SEC);
            delayed.push(h.s.rate_sample().is_ack_delayed);
        }
        (h.s.sk.min_rtt / MS, delayed)
    };
    let (runt_min, runt_delayed) = run(1000);
    assert_eq!(runt_min, 20);
    assert!(runt_delayed.iter().all(|&d| d));
    let (full_min, full_delayed) = run(1448);
    assert_eq!(full_min, 50);
    assert!(full_delayed.iter().all(|&d| !d));
}

// ------------------------------------------------------------------------- receive window

#[test]
fn linux_default_buffers_cap_a_long_fat_flow_at_a_3_mb_window() {
    // 1 Gbit/s, 100 ms: the BDP is 12.5 MB, but tcp_rmem[2] = 6 MB gives at most a 3 MB
    // window (half the buffer), 2172 segments per RTT: about 249 Mbit/s of payload.
    let goodput = |rmem_max: u32| {
        let r_spec = TcpSpec {
            rmem: [4096, 131_072, rmem_max],
            ..spec(EcnSysctl::None)
        };
        let mut h = Harness::new(1000.0, 100.0, 20_000, spec(EcnSysctl::None), r_spec, None);
        h.start();
        h.run(5 * SEC);
        let b0 = h.r.stats.bytes_delivered;
        h.run(15 * SEC);
        let gp = (h.r.stats.bytes_delivered - b0) as f64 * 8.0 / 10.0;
        (gp, h.s.stats.rwnd_limited)
    };
    let (gp, limited) = goodput(6_291_456);
    assert!((2.3e8..2.55e8).contains(&gp), "{gp}");
    assert!(limited > 100, "{limited}");
    // With a 64 MB tcp_rmem[2] the window follows the congestion window.
    let (gp, _) = goodput(64 << 20);
    assert!(gp > 8.0e8, "{gp}");
}

/// A bulk sender on an idle 100 Mbit/s, 20 ms path whose receiver keeps the initial 64 KB
/// window (45 segments, below the path's 167-segment BDP).
fn held_by_a_64_kb_window() -> Harness {
    Harness::new(
        100.0,
        20.0,
        1000,
        spec(EcnSysctl::None),
        fixed_rcvbuf(EcnSysctl::None),
        None,
    )
}

#[test]
fn a_receive_window_limit_does_not_grow_the_congestion_window() {
    // tcp_tso_should_defer marks a deferral cwnd-limited only when the congestion window is
    // the smaller one. A flow held by a fixed 64 KB receive window (45 segments) on an idle
    // 100 Mbit/s path, in congestion avoidance after one early loss, defers as rwnd-limited:
    // Reno's window grows only while it is what limits the flight (tcp_is_cwnd_limited).
    let mut h = held_by_a_64_kb_window();
    h.filter = first_tx_of(&[30]);
    h.start();
    h.run(5 * SEC);
    assert_eq!(h.s.stats.retrans, 1);
    assert!(!h.s.sk.in_slow_start());
    assert!(h.s.stats.rwnd_limited > 100, "{}", h.s.stats.rwnd_limited);
    let cwnd = h.s.sk.snd_cwnd;
    assert!((40..=48).contains(&cwnd), "cwnd {cwnd}");
}

#[test]
fn tso_deferral_takes_a_third_of_the_smaller_window() {
    // tcp_tso_should_defer sends rather than wait once the window space reaches a third of
    // min(snd_wnd, cwnd x mss) (tcp_tso_win_divisor 3). A flow held by a fixed 64 KB receive
    // window, in slow start with cwnd up to twice its flight, just after a send: the third
    // is the receive window's.
    let mut h = held_by_a_64_kb_window();
    h.start();
    h.run_until(3 * SEC, |h| {
        let s = &h.s;
        s.sk.wstamp == h.now && s.sk.snd_cwnd > s.snd_wnd_segs() + 6 && s.would_defer(h.now, 1)
    });
    let (now, rwnd, cwnd) = (h.now, h.s.snd_wnd_segs(), h.s.sk.snd_cwnd);
    assert!(
        cwnd > rwnd + 6,
        "never rwnd-bound: cwnd {cwnd}, rwnd {rwnd}"
    );
    let third = rwnd / 3;
    assert!(h.s.would_defer(now, third - 1));
    assert!(!h.s.would_defer(now, third + 1));
    assert!(third + 1 < cwnd / 3, "the cwnd's third would defer here");
}

#[test]
fn every_segment_is_acked_while_the_window_grows() {
    // tcp_grow_window puts the receiver in quick-ACK mode whenever rcv_ssthresh rises, and
    // receive-buffer autotuning keeps raising its bound while a flow speeds up: the first
    // 200 ms of slow start (no loss yet) at 100 Mbit/s.
    let ack_ratio = |r_spec: TcpSpec| {
        let mut h = Harness::new(100.0, 10.0, 1000, spec(EcnSysctl::None), r_spec, None);
        h.start();
        h.run(200 * MS);
        assert_eq!(h.s.stats.retrans, 0);
        h.r.stats.acks_sent as f64 / h.r.stats.data_pkts_received as f64
    };
    let autotuned = ack_ratio(spec(EcnSysctl::None));
    let fixed = ack_ratio(fixed_rcvbuf(EcnSysctl::None));
    assert!(autotuned > 0.7, "{autotuned}");
    assert!((0.49..0.56).contains(&fixed), "{fixed}");
}

#[test]
fn the_sender_never_passes_the_offered_edge_and_the_edge_never_retreats() {
    // Property over a grid of paths, buffers and random loss (which fills the receiver's
    // out-of-order memory and shrinks its free space): every ACK's right edge (bytes) is at
    // least the previous one's, and no new segment starts beyond the furthest edge the sender
    // had received when it sent it.
    let mss = crate::packet::hdr::MSS as u64;
    let mut rng = Rng::new(7, 7);
    for case in 0..12u32 {
        let rate = [10.0, 100.0, 1000.0][case as usize % 3];
        let rtt = [5.0, 50.0][(case as usize / 3) % 2];
        let rmem_max = [262_144, 6_291_456][(case as usize / 6) % 2];
        let r_spec = TcpSpec {
            rmem: [4096, 131_072.min(rmem_max), rmem_max],
            moderate_rcvbuf: case % 4 != 3,
            ..spec(EcnSysctl::None)
        };
        let mut h = Harness::new(rate, rtt, 500, spec(EcnSysctl::None), r_spec, None);
        let loss = rng.uniform() * 0.02;
        let mut drops = Rng::new(case as u64, 1);
        h.filter = Box::new(move |p, _| {
            if p.is_data() && drops.uniform() < loss {
                Verdict::Drop
            } else {
                Verdict::Pass
            }
        });
        h.start();
        h.run(3 * SEC);
        let delay = h.delay;
        // ACK arrivals at the sender with their right edges, in time order.
        let mut edges: Vec<(SimTime, u64)> = h
            .rev
            .iter()
            .filter(|(_, p)| p.has(flags::ACK) && !p.has(flags::SYN))
            .map(|(t, p)| (t + delay, p.ack as u64 * mss + p.wnd as u64))
            .collect();
        let mut prev = 0;
        for &(t, e) in &edges {
            assert!(e >= prev, "case {case}: edge {e} < {prev} at {t}");
            prev = e;
        }
        edges.sort_by_key(|&(t, _)| t);
        let synack = h.rev.iter().find(|(_, p)| p.has(flags::SYN)).unwrap();
        let (mut i, mut furthest) = (0, synack.1.wnd as u64);
        for (t, p, _) in h.data().filter(|(_, p, _)| !p.retrans) {
            while i < edges.len() && edges[i].0 <= *t {
                furthest = furthest.max(edges[i].1);
                i += 1;
            }
            let end = (p.seq as u64 + 1) * mss;
            assert!(
                end <= furthest,
                "case {case}: segment {} past edge {furthest}",
                p.seq
            );
        }
        assert!(h.r.stats.bytes_delivered > 0, "case {case}");
    }
}
