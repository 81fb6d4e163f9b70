//! The receiver (Linux tcp_input.c receive path, tcp_output.c ACK sending, tcp_timer.c
//! delayed-ACK timer): listener ECN decision, SYN/ACK (retransmitted after 1 s, doubling),
//! in-order delivery with an out-of-order range set, SACK blocks (most recent first, DSACK for
//! duplicates), `__tcp_ack_snd_check` (ACK every 2nd full segment, quick-ACK mode, ICSK_ACK_NOW,
//! immediate dup-ACKs then SACK compression), the adaptive delayed-ACK timer, and ECN feedback:
//! RFC 3168 latch, DCTCP-style echo, AccECN ACE with its immediate ACKs (every ECN-field
//! change; pending marks on a timestamp tick, which the L4STeam trees' saturating `max` makes
//! the first segment after every ACK: docs/linux-algorithms.md 2.4).
//!
//! The receiver's own RTT (used to bound `ato` and the SACK-compression delay) is the
//! handshake RTT (SYN/ACK sent to first ACK), as `tcp_synack_rtt_meas` gives Linux servers.
//! The receive buffer and the window each ACK offers are `rcvbuf.rs`'s; the application
//! reads in-order data at once, so `__tcp_ack_snd_check`'s "window advances far enough" test
//! is left out (`tcp_cleanup_rbuf` would send that ACK at the same instant). The delayed-ACK
//! engine counts in the host's jiffies (`tcp.hz` and its tick phase), as Linux's does: `ato`,
//! the inter-arrival time it adapts to and the timer's expiry are whole jiffies, and the timer
//! runs on the timer wheel's tick after its expiry (as the SYN/ACK's does).

use std::collections::BTreeMap;

use super::ecn::{self, ACE_MAX_DELTA};
use super::rcvbuf::RcvBuf;
use super::{AccEcnImpl, ConnParams, ReceiverStats, TcpSpec, TCP_RTO_MAX, TCP_TIMEOUT_INIT};
use crate::cc::{AnyCc, CcFlags, CongestionControl, EcnMode};
use crate::packet::{flags, hdr, Dir, Ecn, Packet};
use crate::time::{Jiffies, SimDuration, SimTime, MS, NEVER, SEC, US};

/// TCP_DELACK_MIN = TCP_ATO_MIN (HZ/25 jiffies).
pub const TCP_ATO_MIN: SimDuration = 40 * MS;
/// TCP_MAX_QUICKACKS.
pub const TCP_MAX_QUICKACKS: u32 = 16;
/// TCP_FASTRETRANS_THRESH: immediate dup-ACKs before SACK compression starts.
const FASTRETRANS_THRESH: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Listen,
    SynRcvd,
    Established,
}

/// The receiver (server side, `iperf3 -s`).
pub struct TcpReceiver {
    pub stats: ReceiverStats,
    params: ConnParams,
    spec: TcpSpec,
    cc_flags: CcFlags,
    phase: Phase,
    mode: EcnMode,
    syn_ecn: Ecn,
    synack_retries: u32,
    synack_sent_at: SimTime,
    synack_at: SimTime,
    /// Receiver's RTT estimate (handshake) and RTO (`icsk_rto`).
    rtt: SimDuration,
    rto: SimDuration,
    rcv_nxt: u32,
    /// `icsk_ack.rcv_mss`: starts at TCP_MSS_DEFAULT (536), then the largest segment seen.
    rcv_mss: u32,
    /// rcv_nxt when the last ACK was sent (`rcv_wup`).
    rcv_wup: u32,
    unacked_bytes: u64,
    /// Out-of-order data: start -> (end, payload bytes).
    ooo: BTreeMap<u32, (u32, u64)>,
    /// SACK blocks, most recently changed first (`selective_acks`).
    sacks: [(u32, u32); 4],
    n_sacks: usize,
    dsack: Option<(u32, u32)>,
    ts_recent: SimTime,
    // Delayed-ACK engine (`icsk_ack`), in the host's jiffies.
    quick: u32,
    clock: Jiffies,
    /// TCP_ATO_MIN in jiffies.
    ato_min: u64,
    ato: u64,
    lrcvtime: u64,
    ack_pending: bool,
    ack_now: bool,
    /// The delayed-ACK timer's expiry (`icsk_ack.timeout`, jiffies) and when the timer wheel
    /// runs it (NEVER: not pending).
    delack_timeout: u64,
    delack_at: SimTime,
    // SACK compression.
    compressed_ack: u32,
    dup_ack_counter: u32,
    compressed_ack_rcv_nxt: u32,
    comp_at: SimTime,
    // ECN.
    demand_cwr: bool,
    /// An ECT or CE data segment was received (TCP_ECN_SEEN).
    ecn_seen: bool,
    dctcp_ce_state: bool,
    prior_rcv_nxt: u32,
    received_ce: u64,
    ce_pending: u32,
    /// ECN field of the last segment (`prev_ecnfield`; the SYN's at first).
    prev_ecn: Ecn,
    /// The sender's AccECN option was seen (`saw_accecn_opt`): ACKs carry ours.
    accecn_opt_seen: bool,
    /// Highest option field counted so far (`accecn_minlen`): ACKs without room for it
    /// go without the option.
    accecn_minlen: u8,
    /// Receive buffer and window; in-order bytes at `prior_rcv_nxt`.
    rwin: RcvBuf,
    prior_bytes: u64,
}

impl TcpReceiver {
    /// `spec` is the receiving host's settings; `cc` its socket's CC (which decides AccECN
    /// acceptance for NEEDS_ACCECN CCs and DCTCP-style CE echo).
    pub fn new(params: &ConnParams, spec: &TcpSpec, cc: &AnyCc) -> TcpReceiver {
        Self::with_cc_flags(params, spec, cc.flags())
    }
    /// As `new`, with the receiving socket's CC given by its flags only.
    pub fn with_cc_flags(params: &ConnParams, spec: &TcpSpec, cc_flags: CcFlags) -> TcpReceiver {
        let clock = Jiffies::with_phase(spec.hz, params.tick_phases.1);
        TcpReceiver {
            stats: ReceiverStats::default(),
            params: params.clone(),
            spec: spec.clone(),
            cc_flags,
            phase: Phase::Listen,
            mode: EcnMode::None,
            syn_ecn: Ecn::NotEct,
            synack_retries: 0,
            synack_sent_at: 0,
            synack_at: NEVER,
            rtt: 0,
            rto: TCP_TIMEOUT_INIT,
            rcv_nxt: 0,
            rcv_mss: 536,
            rcv_wup: 0,
            unacked_bytes: 0,
            ooo: BTreeMap::new(),
            sacks: [(0, 0); 4],
            n_sacks: 0,
            dsack: None,
            ts_recent: 0,
            quick: 0,
            clock,
            ato_min: TCP_ATO_MIN / clock.jiffy(),
            ato: 0,
            lrcvtime: 0,
            ack_pending: false,
            ack_now: false,
            delack_timeout: 0,
            delack_at: NEVER,
            compressed_ack: 0,
            dup_ack_counter: 0,
            compressed_ack_rcv_nxt: 0,
            comp_at: NEVER,
            demand_cwr: false,
            ecn_seen: false,
            dctcp_ce_state: false,
            prior_rcv_nxt: 0,
            received_ce: 0,
            ce_pending: 0,
            prev_ecn: Ecn::NotEct,
            accecn_opt_seen: false,
            accecn_minlen: 0,
            rwin: RcvBuf::new(spec.rmem, spec.moderate_rcvbuf, params.mss),
            prior_bytes: 0,
        }
    }

    fn pkt(&self, now: SimTime) -> Packet {
        let mut p = Packet::new(
            self.params.flow,
            Dir::Rev,
            self.params.receiver,
            self.params.sender,
        );
        p.hash = self.params.hash_rev;
        p.ts_val = now;
        p.ts_ecr = self.ts_recent;
        p.group = self.params.group;
        p
    }

    /// The receiving host's request for a transfer (a `web` source's client): a bare SYN
    /// toward the data sender, which opens its connection, or writes the response on its
    /// persistent one, when this arrives (the simulator's `World::request`). Its size and
    /// codepoint are a SYN's; the handshake that follows is the data sender's.
    pub fn request_syn(&self, now: SimTime) -> Packet {
        let mut p = self.pkt(now);
        p.flags = flags::SYN;
        p
    }

    /// When the last SYN/ACK left (0: none yet): for a requested transfer, when the client
    /// would have sent its HTTP request.
    pub fn synack_sent_at(&self) -> SimTime {
        self.synack_sent_at
    }

    /// The retransmission timeout a client would wait before sending a lost request again
    /// (from its handshake's RTT sample; 1 s before it).
    pub fn rto(&self) -> SimDuration {
        self.rto
    }

    /// The receiving host's clock (its jiffies and timer wheel).
    pub fn clock(&self) -> Jiffies {
        self.clock
    }

    /// Codepoint of our own ECT packets: ECT(1) for L4S (NEEDS_ACCECN) CCs, whose init sets
    /// TCP_ECN_ECT_1 on the receiving socket too; ECT(0) otherwise.
    fn own_ect(&self) -> Ecn {
        if self.cc_flags.needs_accecn {
            Ecn::Ect1
        } else {
            Ecn::Ect0
        }
    }

    #[cold]
    fn send_synack(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut p = self.pkt(now);
        let decided = self.params.client_opened.map_or(self.mode, |h| h.server);
        p.flags = flags::SYN | flags::ACK | ecn::synack_flags(decided, self.syn_ecn);
        p.wnd = self.rwin.rcv_wnd() as u32;
        if self.mode == EcnMode::AccEcn
            || (self.mode == EcnMode::Rfc3168 && self.cc_flags.needs_ecn)
        {
            p.ecn = self.own_ect();
        }
        // tcp_synack_options: an AccECN listener sends the option whenever the sysctl allows.
        if self.mode == EcnMode::AccEcn && self.spec.ecn_option != 0 {
            p.len += ecn::accecn_option_len(0, 0).unwrap_or(0);
        }
        out.push(p);
        self.synack_sent_at = now;
        // The request sock's timer (`reqsk_queue_hash_req`, `reqsk_timer_handler`).
        let when = (TCP_TIMEOUT_INIT << self.synack_retries.min(7)).min(TCP_RTO_MAX);
        self.synack_at = self.clock.timer_in(now, when);
    }

    pub fn on_packet(&mut self, pkt: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        if pkt.has(flags::SYN) {
            // The request sock keeps the first SYN's timestamp (`tcp_openreq_init`); a pure
            // retransmitted SYN gets the SYN/ACK again with it (`tcp_check_req`), so the
            // opener's handshake RTT sample (`tcp_ack_update_rtt`'s TSecr rule) then spans its
            // SYN timeouts. A requested transfer's handshake runs data sender first
            // (docs/traffic.md): there the data sender stands for the server, a passive opener
            // whose sample is the SYN/ACK that got through, so the echo is the latest SYN's.
            if self.phase == Phase::Listen || self.params.client_opened.is_some() {
                self.ts_recent = pkt.ts_val;
            }
            match self.phase {
                Phase::Listen => {
                    // A connection the receiver opened: its mode is the client's, and the
                    // SYN/ACK carries the server's (the data sender's) decision.
                    self.mode = match self.params.client_opened {
                        Some(h) => h.client,
                        None => ecn::listener_mode(
                            pkt.flags,
                            pkt.ecn,
                            self.spec.ecn,
                            self.cc_flags,
                            self.spec.accecn_accept,
                        ),
                    };
                    self.syn_ecn = pkt.ecn;
                    self.prev_ecn = pkt.ecn;
                    self.phase = Phase::SynRcvd;
                    self.stats.ecn_mode = self.mode;
                    self.send_synack(now, out);
                }
                Phase::SynRcvd => self.send_synack(now, out),
                Phase::Established => {}
            }
            return;
        }
        if self.phase == Phase::SynRcvd && pkt.has(flags::ACK) {
            self.phase = Phase::Established;
            self.synack_at = NEVER;
            self.rtt = now.saturating_sub(self.synack_sent_at).max(US);
            self.rto = self.rtt + (2 * self.rtt).max((self.spec.rto_min_ms * MS as f64) as u64);
            self.rwin.established(now);
        }
        if self.phase != Phase::Established || !pkt.is_data() {
            return;
        }
        self.on_data(pkt, now, out);
    }

    fn on_data(&mut self, p: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        self.stats.data_pkts_received += 1;
        let ce = p.ecn == Ecn::Ce;
        if ce {
            self.stats.ce_received += 1;
        }
        let seq = p.seq;
        // tcp_rcv_rtt_measure_ts (before the segment is queued).
        self.rwin
            .rtt_measure_ts(p.ts_ecr, p.payload >= self.rcv_mss, now);
        // tcp_measure_rcv_mss: the largest segment seen is the receiver's MSS estimate.
        self.rcv_mss = self.rcv_mss.max(p.payload);
        // tcp_replace_ts_recent: only from segments at or left of the last ACKed point; a
        // later timestamp tick (1 ms, TCP_TS_HZ) than the last one recorded is FLAG_TS_PROGRESS.
        let ts_progress = seq <= self.rcv_wup && p.ts_val / MS > self.ts_recent / MS;
        if seq <= self.rcv_wup {
            self.ts_recent = p.ts_val;
        }
        if self.mode == EcnMode::AccEcn {
            let has_option = p.accecn_option_bytes() > 0;
            self.accecn_opt_seen |= has_option;
            self.accecn_minlen = self.accecn_minlen.max(ecn::accecn_optfield(p.ecn));
            self.ecn_received_counters(p.ecn);
            // A segment with the AccECN option misses header prediction, so tcp_ack runs
            // with FLAG_SLOWPATH; for a pure receiver (tcp_ack's no_queue path)
            // __tcp_accecn_process forces an ACK if the segment advanced the timestamp and
            // received_ce_pending >= TCP_ACCECN_ACE_MAX_DELTA.
            if has_option && ts_progress && self.ce_pending >= ACE_MAX_DELTA {
                self.ack_now = true;
            }
        }
        // tcp_ecn_accept_cwr (RFC 3168 only: in AccECN CWR is part of ACE).
        if self.mode == EcnMode::Rfc3168 && p.has(flags::CWR) {
            self.demand_cwr = false;
            self.ack_now = true;
        }
        let in_seq_dup = seq < self.rcv_nxt || self.ooo_contains(seq);
        let in_order = !in_seq_dup && seq == self.rcv_nxt;
        if in_seq_dup {
            // Duplicate: DSACK it and ACK at once (tcp_data_queue out_of_window path).
            self.stats.dup_pkts += 1;
            self.dsack = Some((seq, seq + 1));
            self.enter_quickack_mode(TCP_MAX_QUICKACKS);
            self.ack_pending = true;
        } else if in_order {
            self.rcv_nxt += 1;
            self.stats.bytes_delivered += p.payload as u64;
            self.unacked_bytes += p.payload as u64;
            if !self.ooo.is_empty() {
                while let Some((&a, &(b, bytes))) = self.ooo.iter().next() {
                    if a != self.rcv_nxt {
                        break;
                    }
                    self.ooo.remove(&a);
                    self.rcv_nxt = b;
                    self.stats.bytes_delivered += bytes;
                    self.unacked_bytes += bytes;
                }
                // RFC 5681 4.2: ACK at once when the gap is filled.
                if self.ooo.is_empty() {
                    self.ack_now = true;
                }
                let rn = self.rcv_nxt;
                self.sack_retain(|(_, e)| e > rn);
            }
            self.event_data_recv(now);
            self.rwin.rtt_measure(self.stats.bytes_delivered, now);
            // tcp_measure_rcv_mss marks a short segment ICSK_ACK_PUSHED; the application
            // (iperf3) reads it at once and tcp_cleanup_rbuf then ACKs immediately.
            if p.payload < self.rcv_mss {
                self.ack_now = true;
            }
            self.ecn_check_ce(p.ecn, now, out);
            self.grow_window(p.payload);
            self.ack_pending = true;
        } else {
            self.stats.ooo_pkts += 1;
            let iv = self.ooo_insert(seq, p.payload as u64);
            self.sack_new_ofo(iv);
            self.ecn_check_ce(p.ecn, now, out);
            self.grow_window(p.payload);
            self.ack_pending = true;
        }
        self.prior_rcv_nxt = self.rcv_nxt;
        self.prior_bytes = self.stats.bytes_delivered;
        self.ack_snd_check(now, out);
        if in_order {
            self.read(now, out);
        }
    }

    /// `tcp_grow_window` (segments of 128 bytes or more, in order or out of order with SACK).
    fn grow_window(&mut self, payload: u32) {
        if payload >= 128 && self.rwin.grow(payload, self.ooo_segs()) {
            self.quick |= 1;
        }
    }

    /// The application (iperf3) reads the new in-order data: `tcp_rcv_space_adjust`, then
    /// `tcp_cleanup_rbuf`'s window update.
    fn read(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let copied = self.stats.bytes_delivered;
        self.rwin.space_adjust(copied, now);
        if self.ack_pending
            && self
                .rwin
                .window_update_due(copied, self.ooo_segs(), self.rcv_mss)
        {
            self.send_ack(now, out);
        }
    }

    /// Segments held out of order (receive memory the application cannot read yet).
    fn ooo_segs(&self) -> u64 {
        self.ooo.iter().map(|(&a, &(b, _))| (b - a) as u64).sum()
    }

    fn ooo_contains(&self, seq: u32) -> bool {
        !self.ooo.is_empty()
            && self
                .ooo
                .range(..=seq)
                .next_back()
                .is_some_and(|(_, &(e, _))| seq < e)
    }

    /// Insert segment `seq` into the out-of-order set; returns the merged range.
    #[cold]
    fn ooo_insert(&mut self, seq: u32, bytes: u64) -> (u32, u32) {
        let mut s = seq;
        let mut e = seq + 1;
        let mut b = bytes;
        if let Some((&a, &(pe, pb))) = self.ooo.range(..seq).next_back() {
            if pe == seq {
                self.ooo.remove(&a);
                s = a;
                b += pb;
            }
        }
        if let Some(&(ne, nb)) = self.ooo.get(&e) {
            self.ooo.remove(&e);
            e = ne;
            b += nb;
        }
        self.ooo.insert(s, (e, b));
        (s, e)
    }

    fn sack_retain(&mut self, keep: impl Fn((u32, u32)) -> bool) {
        let mut n = 0;
        for i in 0..self.n_sacks {
            if keep(self.sacks[i]) {
                self.sacks[n] = self.sacks[i];
                n += 1;
            }
        }
        self.n_sacks = n;
    }

    /// `tcp_sack_new_ofo_skb`: the block holding the new segment goes first.
    #[cold]
    fn sack_new_ofo(&mut self, (s, e): (u32, u32)) {
        self.sack_retain(|(a, b)| !(a <= e && b >= s));
        let n = self.n_sacks.min(3);
        for i in (0..n).rev() {
            self.sacks[i + 1] = self.sacks[i];
        }
        self.sacks[0] = (s, e);
        self.n_sacks = n + 1;
    }

    /// The delayed-ACK engine's `ato` (`icsk_ack.ato`).
    #[cfg(test)]
    pub(crate) fn ato(&self) -> SimDuration {
        self.ato * self.clock.jiffy()
    }

    /// `jiffies` at `t`.
    fn jiffies(&self, t: SimTime) -> u64 {
        self.clock.at(t)
    }

    /// `icsk_rto` in jiffies.
    fn rto_jiffies(&self) -> u64 {
        self.clock.ceil(self.rto)
    }

    /// `tcp_enter_quickack_mode`: [`Self::incr_quickack`], and `ato` back to its minimum.
    #[cold]
    fn enter_quickack_mode(&mut self, n: u32) {
        self.incr_quickack(n);
        self.ato = self.ato_min;
    }

    /// `tcp_incr_quickack`: at most `n` quick ACKs, and no more than the last advertised
    /// window holds pairs of segments (at least 2).
    #[cold]
    fn incr_quickack(&mut self, n: u32) {
        let pairs = self.rwin.rcv_wnd() / (2 * self.rcv_mss as u64);
        let quickacks = if pairs == 0 { 2 } else { pairs };
        self.quick = self.quick.max(quickacks.min(n as u64) as u32);
    }

    /// `tcp_ecn_received_counters`: count CE in the ACE counter and ACK at once on every
    /// change of the ECN field (`ecn_edge`, ICSK_ACK_NOW). `received_ce_pending` is capped at
    /// 15 with `min` in mainline; the L4STeam trees have `max`, which sets it to 15 or more
    /// on every ECT or CE segment (`AccEcnImpl`).
    fn ecn_received_counters(&mut self, ecn: Ecn) {
        if ecn != Ecn::NotEct {
            let ce = (ecn == Ecn::Ce) as u32;
            self.received_ce += ce as u64;
            let pending = self.ce_pending + ce;
            self.ce_pending = match self.spec.accecn_impl {
                AccEcnImpl::L4steam => pending.max(15),
                AccEcnImpl::Mainline => pending.min(15),
            };
        }
        if ecn != self.prev_ecn {
            self.ack_now = true;
        }
        self.prev_ecn = ecn;
    }

    /// `tcp_event_data_recv`: adapt `ato` to the inter-arrival time.
    fn event_data_recv(&mut self, now: SimTime) {
        let now = self.jiffies(now);
        if self.ato == 0 {
            self.enter_quickack_mode(TCP_MAX_QUICKACKS);
        } else {
            let m = now.saturating_sub(self.lrcvtime);
            if m <= self.ato_min / 2 {
                self.ato = (self.ato >> 1) + self.ato_min / 2;
            } else if m < self.ato {
                self.ato = ((self.ato >> 1) + m).min(self.rto_jiffies());
            } else if m > self.rto_jiffies() {
                // Too long a gap: tcp_incr_quickack, ato kept.
                self.incr_quickack(TCP_MAX_QUICKACKS);
            }
        }
        self.lrcvtime = now;
    }

    /// `__tcp_ecn_check_ce`: RFC 3168 latch or DCTCP-style echo (the receiving CC's
    /// CA_EVENT_ECN_IS_CE / ECN_NO_CE), per the data packet's IP-ECN field.
    fn ecn_check_ce(&mut self, ecn: Ecn, now: SimTime, out: &mut Vec<Packet>) {
        if self.mode != EcnMode::Rfc3168 {
            return;
        }
        match ecn {
            Ecn::NotEct => {
                // "Funny extension": a Not-ECT segment after ECT ones is probably a
                // retransmission; ACK quickly.
                if self.ecn_seen {
                    self.enter_quickack_mode(2);
                }
            }
            Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce => {
                let ce = ecn == Ecn::Ce;
                if self.cc_flags.dctcp_echo {
                    if ce != self.dctcp_ce_state {
                        // Send any delayed ACK with the old CE state first, then ACK at once.
                        if self.delack_at != NEVER {
                            let prior = self.prior_rcv_nxt;
                            self.send_ack_seq(prior, self.dctcp_ce_state, now, out);
                        }
                        self.ack_now = true;
                    }
                    self.dctcp_ce_state = ce;
                    self.demand_cwr = ce;
                } else if ce && !self.demand_cwr {
                    self.enter_quickack_mode(2);
                    self.demand_cwr = true;
                }
                self.ecn_seen = true;
            }
        }
    }

    /// `__tcp_ack_snd_check`.
    fn ack_snd_check(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if !self.ack_pending {
            return;
        }
        if self.unacked_bytes > self.rcv_mss as u64 || self.quick > 0 || self.ack_now {
            self.send_ack(now, out);
            return;
        }
        if self.ooo.is_empty() {
            self.send_delayed_ack(now, out);
            return;
        }
        if self.compressed_ack >= self.spec.comp_sack_nr {
            self.send_ack(now, out);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.send_ack(now, out);
            return;
        }
        self.compressed_ack += 1;
        if self.comp_at != NEVER {
            return;
        }
        let delay = ((self.spec.comp_sack_delay_us * US as f64) as u64).min(self.rtt / 20);
        self.comp_at = now + delay;
    }

    /// `tcp_send_delayed_ack`, in jiffies: the timer expires `ato` jiffies after this tick and
    /// runs on the timer wheel's next tick after that ([`Jiffies::timer_runs`]).
    fn send_delayed_ack(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut ato = self.ato;
        if ato > self.ato_min {
            let mut max_ato = SEC / 2 / self.clock.jiffy(); // HZ/2
            if self.rtt > 0 {
                let rtt = self.clock.ceil(self.rtt).max(self.ato_min);
                if rtt < max_ato {
                    max_ato = rtt;
                }
            }
            ato = ato.min(max_ato);
        }
        let jiffies = self.jiffies(now);
        let mut timeout = jiffies + ato;
        if self.delack_at != NEVER {
            if self.delack_timeout <= jiffies + (ato >> 2) {
                self.send_ack(now, out);
                return;
            }
            timeout = timeout.min(self.delack_timeout);
        }
        self.delack_timeout = timeout;
        self.delack_at = self.clock.timer_runs(jiffies, timeout);
    }

    fn send_ack(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let ece = self.demand_cwr;
        self.send_ack_seq(self.rcv_nxt, ece, now, out);
    }

    /// Build and send an ACK of `ack`; a full ACK (ack == rcv_nxt) also resets the ACK engine
    /// (`tcp_event_ack_sent`).
    fn send_ack_seq(&mut self, ack: u32, ece: bool, now: SimTime, out: &mut Vec<Packet>) {
        let mut p = self.pkt(now);
        p.flags = flags::ACK;
        p.ack = ack;
        let mut n = 0usize;
        if let Some(d) = self.dsack.take() {
            p.sack[0] = d;
            p.dsack = true;
            n = 1;
        }
        for i in 0..self.n_sacks {
            if n == 3 {
                break;
            }
            p.sack[n] = self.sacks[i];
            n += 1;
        }
        p.n_sack = n as u8;
        p.len = hdr::wire_len(0, p.n_sack);
        // tcp_select_window, for the rcv_nxt this ACK carries.
        let bytes = if ack == self.rcv_nxt {
            self.stats.bytes_delivered
        } else {
            self.prior_bytes
        };
        let (wnd, half_full) = self.rwin.select(bytes, self.ooo_segs(), self.rcv_mss);
        p.wnd = wnd.min(u32::MAX as u64) as u32;
        if half_full {
            self.quick = 0;
        }
        match self.mode {
            EcnMode::None => {}
            EcnMode::Rfc3168 => {
                if ece {
                    p.flags |= flags::ECE;
                }
                // A NEEDS_ECN socket (DCTCP, Prague) keeps ECT on pure ACKs (tcp_ecn_send).
                if self.cc_flags.needs_ecn {
                    p.ecn = self.own_ect();
                }
            }
            EcnMode::AccEcn => {
                p.set_ace(ecn::ace_encode(self.received_ce));
                p.ecn = self.own_ect();
                self.ce_pending = 0;
                // The option, where the SACK blocks leave room for the fields counted.
                if self.accecn_opt_seen && self.spec.ecn_option != 0 {
                    if let Some(n) = ecn::accecn_option_len(p.n_sack, self.accecn_minlen) {
                        p.len += n;
                    }
                }
            }
        }
        out.push(p);
        self.stats.acks_sent += 1;
        if p.n_sack > 0 {
            self.stats.sack_acks_sent += 1;
        }
        self.rcv_wup = self.rcv_nxt;
        self.unacked_bytes = 0;
        if ack != self.rcv_nxt {
            return; // DCTCP's special ACK reflecting the prior CE state
        }
        // tcp_dec_quickack_mode (5.15, one packet per pure ACK): leaving quick-ACK mode
        // deflates ato.
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = self.ato_min;
            }
        }
        self.ack_pending = false;
        self.ack_now = false;
        self.delack_at = NEVER;
        self.compressed_ack = 0;
        self.comp_at = NEVER;
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.phase == Phase::SynRcvd && self.synack_at <= now {
            self.synack_retries += 1;
            self.stats.synack_retrans += 1;
            self.send_synack(now, out);
        }
        if self.delack_at <= now {
            self.delack_at = NEVER;
            if self.ack_pending {
                // Delayed ACK missed: inflate ato.
                self.ato = (self.ato << 1).min(self.rto_jiffies());
                self.send_ack(now, out);
            }
        }
        if self.comp_at <= now {
            self.comp_at = NEVER;
            if self.compressed_ack > 0 {
                self.compressed_ack -= 1;
                self.send_ack(now, out);
            }
        }
    }

    pub fn next_timer(&self) -> SimTime {
        let syn = if self.phase == Phase::SynRcvd {
            self.synack_at
        } else {
            NEVER
        };
        syn.min(self.delack_at).min(self.comp_at)
    }

    /// Next in-order segment expected.
    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }
}
