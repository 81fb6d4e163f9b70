//! The data sender (Linux tcp_output.c / tcp_input.c / tcp_timer.c / tcp_recovery.c).
//!
//! Modelled: SYN with ECN negotiation and SYN retransmission (1 s, doubling, ECN bits cleared
//! on retransmitted SYNs as `tcp_ecn_clear_syn` with `tcp_ecn_fallback=1`; an initial window
//! of one segment after more than one SYN retransmission unless the SYN/ACK answers the first
//! SYN, `tcp_init_transfer` with `tcp_try_undo_spurious_syn`), the SACK
//! scoreboard, RACK-TLP loss detection, fast recovery with PRR, ECN-triggered CWR (RFC 3168
//! ECE latch or AccECN ACE deltas), RTO with exponential backoff, delivery-rate samples,
//! the CC hooks in Linux's order, and pacing (EDT departure stamps advancing by
//! payload/pacing_rate as `tcp_update_skb_after_send`, the first 10 segments unpaced,
//! enforced when the host has fq or the CC asks for pacing). Sequence numbers count segments;
//! the SYN does not consume one. The handshake's third ACK is folded into the first data
//! segment.
//!
//! Per ACK (`tcp_ack`): SACK tagging, cumulative ACK and RTT sample, ECN feedback
//! (`delivered_ce`, `rs.ece_delta`), `pkts_acked`, `in_ack_event`, the CA state machine
//! (`tcp_fastretrans_alert`: RACK loss marking, Recovery/CWR entry, `ssthresh` before
//! `set_state`), TLP bookkeeping, TLP/RTO timer, then `tcp_rate_gen` and either
//! `cong_control` or PRR / `cong_avoid` + `tcp_update_pacing_rate`, then retransmissions and
//! new data. Per-ACK work is amortised O(1): segments live in a ring indexed by sequence,
//! SACKed ranges in a BTreeMap (only newly SACKed parts are visited), and RACK walks a
//! send-time ordered intrusive list from which delivered and lost segments are unlinked.
//!
//! TSO/GSO (`tcp_write_xmit`): new data leaves in skbs of up to `tcp_tso_segs` segments
//! (the CC's `tso_segs` hook, else `tcp_tso_autosize`: about 1 ms at the pacing rate, at least
//! 2), at most half the window each (`tcp_cwnd_test`, which lets the final FIN-marked
//! segment out even with the window full), sent back to back; the EDT stamp
//! advances once per skb. Bursts are cut from the write queue's skbs, which `tcp_sendmsg`
//! fills to `tcp_xmit_size_goal` (a 64 KB GSO skb, at most half the largest offered window:
//! 45 segments of 1436-1448 bytes), one skb at a time, so a burst ends at each boundary,
//! short if need be. The boundaries are placed as `snd_nxt` reaches them, with the size goal
//! of that moment (Linux fixes them when the application writes, up to a send buffer
//! earlier: the two differ only while the offered window still grows); the end of a sized
//! transfer's write also ends an skb, unless the next write comes before that skb has left
//! (it joins it), autocorking (`tcp_should_autocork`) holds a short tail skb while more
//! than it is below TCP, and Nagle's test (`tcp_nagle_test`) a short last segment of a
//! persistent connection while an earlier short one is unacknowledged. Unpaced senders hold
//! back partial skbs as
//! `tcp_tso_should_defer` does (win divisor 3, at most 1 ms after the last write, not when
//! the next ACK is more than srtt/2 away). Retransmissions and loss probes are single
//! segments.
//!
//! DSACKs (`tcp_check_dsack`, `tcp_dsack_seen`) count the duplicate as delivered, prove
//! retransmissions spurious (`undo_retrans`) and widen RACK's reordering window; a reduction
//! shown spurious by them or by a timestamp echo from before the first retransmission
//! (`tcp_packet_delayed`, Eifel) is undone (`tcp_try_undo_recovery`, `_partial`, `_dsack`,
//! `_loss`) to what the CC's `undo_cwnd` restores.
//!
//! After an RTO, F-RTO (RFC 5682's SACK-enhanced version, `tcp_process_loss`,
//! `net.ipv4.tcp_frto`) sends new data once the retransmitted head is acknowledged and
//! undoes the timeout if data never retransmitted is then (S)ACKed.
//!
//! Reordering (a never-retransmitted segment (S)ACKed below the highest SACKed one) raises
//! `tp->reordering` to its extent (`tcp_check_sack_reordering`); above the default 3, cwnd
//! grows on SACKs too (`tcp_may_raise_cwnd`).
//!
//! Not modelled: the reordering degree a closed connection leaves in the route's TCP metrics
//! for the next one (`tcp_update_metrics`), GRO.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::ecn::{self, EcnRequest};
use super::metrics::{self, TcpMetrics};
use super::prr::Prr;
use super::rack::{sent_after, Rack, RECOVERY_THRESH, REORDERING};
use super::rate::{RateSampler, TxInfo};
use super::rtt::{MinMax, RttEstimator};
use super::sack::SackedRanges;
use super::tsq::{self, Tsq};
use super::{ConnParams, SenderStats, TcpSpec, MIN_RTT_WIN, TCP_RTO_MAX, TCP_TIMEOUT_INIT};
use crate::cc::{
    AckSample, AnyCc, CaEvent, CaState, CcFlags, CongestionControl, EcnMode, RateSample, Sock,
};
use crate::packet::{flags, hdr, Dir, Ecn, Packet};
use crate::time::{Jiffies, SimDuration, SimTime, MS, NEVER, SEC, US};

const NIL: u32 = u32::MAX;

/// `sk_pacing_shift` default: TSO autosizing aims at about 1 ms (2^-10 s) of data.
pub(super) const SK_PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_min_tso_segs`.
const TCP_MIN_TSO_SEGS: u32 = 2;
/// Largest GSO skb payload: `GSO_MAX_SIZE` (64 KB) - 1 - `MAX_TCP_HEADER` (320).
const GSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// `sysctl_tcp_tso_win_divisor`.
const TCP_TSO_WIN_DIVISOR: u32 = 3;

// Segment state bits (`TCP_SKB_CB(skb)->sacked`).
const S_SACKED: u8 = 1;
const S_LOST: u8 = 2;
/// A retransmission of this segment is in flight (TCPCB_SACKED_RETRANS).
const S_RETRANS: u8 = 4;
const S_EVER_RETRANS: u8 = 8;
/// Linked in the send-time ordered list.
const S_TSORTED: u8 = 16;
/// Waiting in the retransmission queue.
const S_QUEUED: u8 = 32;

// ACK flags (subset of tcp_input.c FLAG_*).
/// `tcp_ack_update_window` took the ACK's window (FLAG_WIN_UPDATE).
const FLAG_WIN_UPDATE: u32 = 0x02;
const FLAG_DATA_SACKED: u32 = 0x20;
const FLAG_ECE: u32 = 0x40;
const FLAG_LOST_RETRANS: u32 = 0x80;
const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
/// The ACK carried a DSACK that `tcp_dsack_seen` accepted (FLAG_DSACKING_ACK).
const FLAG_DSACKING_ACK: u32 = 0x800;
/// That DSACK reports the tail loss probe's segment (FLAG_DSACK_TLP).
const FLAG_DSACK_TLP: u32 = 0x20000;
const FLAG_RETRANS_DATA_ACKED: u32 = 0x8;
/// Data never retransmitted, sent before `high_seq`, was (S)ACKed (FLAG_ORIG_SACK_ACKED).
const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
const FLAG_SET_XMIT_TIMER: u32 = 0x1000;
/// A lone runt segment ACKed alone: the receiver may have delayed the ACK, so its RTT may not
/// lower-bound the path's (FLAG_ACK_MAYBE_DELAYED).
const FLAG_ACK_MAYBE_DELAYED: u32 = 0x10000;

/// `net.ipv4.tcp_max_reordering` (default 300): the most `tp->reordering` can grow to.
const MAX_REORDERING: u32 = 300;

#[derive(Clone, Copy, Debug)]
struct Seg {
    /// Last (re)transmission time.
    tx_time: SimTime,
    st: u8,
    /// Links of the send-time ordered list (`tsorted_sent_queue`), by segment number.
    prev: u32,
    next: u32,
    tx: TxInfo,
}

/// What `tcp_xmit_recovery` sends after an ACK (REXMIT_NONE, _LOST, _NEW).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rexmit {
    None,
    /// The segments marked lost.
    Lost,
    /// New data first (F-RTO step 2b).
    New,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    Rto,
    Tlp,
    Reo,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Closed,
    SynSent,
    Established,
    Done,
}

/// The data sender (client side).
pub struct TcpSender {
    pub sk: Sock,
    pub cc: AnyCc,
    pub stats: SenderStats,
    /// The CC's flags, read once (tests may override them before `connect`).
    pub(crate) cc_flags: CcFlags,
    params: ConnParams,
    pub(crate) spec: TcpSpec,
    /// `spec.rto_min_ms` in ns, worked out once: the ACK path asks for it on every ACK.
    rto_min: SimDuration,
    /// The host's jiffies (`spec.hz`): timer durations are whole jiffies, and the timers run
    /// on the timer wheel's ticks.
    clock: Jiffies,
    /// TCP_TIMEOUT_MIN (2 jiffies, as `2 * SEC / hz`), for the TLP and RACK timers.
    timeout_min: SimDuration,
    phase: Phase,
    ecn_req: EcnRequest,
    syn_retries: u32,
    /// The first SYN's timestamp (`retrans_stamp` from `tcp_connect`).
    syn_stamp: SimTime,
    /// What the TCP metrics cache holds for this host pair when the SYN/ACK arrives.
    cached_metrics: Option<TcpMetrics>,
    /// `icsk_backoff` > 0: the RTO doubled and no RTT sample came since.
    backed_off: bool,
    /// The receiver's offered window, bytes (`snd_wnd`).
    snd_wnd: u64,
    /// The largest window the receiver offered (`max_window`), bytes.
    max_window: u64,
    /// The write queue: the end of the skb `snd_nxt` is in (`tcp_sendmsg` fills each skb to
    /// the size goal; `tcp_write_xmit` never joins two skbs in one burst).
    pub(crate) skb_end: u32,
    syn_at: SimTime,
    /// Segments to send (u32::MAX: bulk) and the payload of the last one.
    total_segs: u32,
    /// The most segments in flight while not cwnd-limited since the last check
    /// (`snd_cwnd_used`, RFC 2861).
    snd_cwnd_used: u32,
    last_payload: u32,
    /// Payload bytes per segment (`tcp_current_mss`): the MSS less the option bytes beyond
    /// the timestamps that every segment carries (the AccECN option, when in use).
    mss_now: u32,
    /// Bytes of the AccECN option on every data segment (`tcp_ecn_option` 2 and the peer's
    /// option seen), else 0.
    opt_bytes: u32,
    /// What the application wrote before the handshake completed, segmented again at the
    /// SYN/ACK if the MSS changes then (dropped after it: memory stays flat).
    early_writes: Vec<u64>,
    /// Earlier partial segments of a persistent connection's writes: (segment, payload).
    partial: VecDeque<(u32, u32)>,
    segs: VecDeque<Seg>,
    ts_head: u32,
    ts_tail: u32,
    sacked: SackedRanges,
    /// Segments marked lost and not yet retransmitted, lowest first: Linux walks the
    /// retransmission queue in sequence order from `retransmit_skb_hint`, which
    /// `tcp_verify_retransmit_hint` moves back to any segment newly marked below it.
    lost_q: BinaryHeap<Reverse<u32>>,
    rtt: RttEstimator,
    min_rtt: MinMax,
    rto: SimDuration,
    /// RTO retransmissions since snd_una last advanced (`icsk_retransmits`).
    retransmits: u32,
    /// F-RTO is testing the last timeout (`tp->frto`).
    frto: bool,
    /// The application keeps the connection open after its writes (a persistent
    /// connection): its last segment carries no FIN, so Nagle's test applies to it.
    keep_open: bool,
    /// End of the last skb sent with a short segment (`tp->snd_sml`, Minshall's check).
    snd_sml: u32,
    /// The reordering degree seen, in segments (`tp->reordering`, from `sysctl_tcp_reordering`
    /// up to `sysctl_tcp_max_reordering`).
    reordering: u32,
    timer: Option<(Timer, SimTime)>,
    /// The pending pacing wakeup (the EDT stamp itself is `sk.wstamp`).
    pace_at: SimTime,
    /// TCP Small Queues: the socket's data below TCP (the simulator reports completions).
    pub tsq: Tsq,
    data_segs_out: u64,
    queue_cwr: bool,
    prr: Prr,
    rack: Rack,
    tlp_high_seq: Option<u32>,
    tlp_retrans: bool,
    /// Undo of a spurious cwnd reduction (`tcp_init_undo`): `snd_una` when the recovery
    /// began (`undo_marker`; None: nothing to undo) and the retransmissions not yet shown
    /// spurious by a DSACK (`undo_retrans`; -1: none sent yet).
    undo_marker: Option<u32>,
    undo_retrans: i32,
    /// Time of the first retransmission of this episode (`retrans_stamp`).
    retrans_stamp: Option<SimTime>,
    /// Segments reported twice by DSACKs (`dsack_dups`).
    dsack_dups: u64,
    /// Loss events handed to the CC (`skb_marked_lost`): one per `tp->lost` increment.
    #[cfg(test)]
    loss_events: u64,
    /// The timestamp echo of the ACK being processed (`rx_opt.rcv_tsecr`).
    rcv_tsecr: SimTime,
    rate: RateSampler,
    rs: RateSample,
    /// Echo value for our timestamps (peer's latest ts_val).
    ts_recent: SimTime,
    /// CE-marked packets received (our own ACE field, AccECN).
    received_ce: u64,
}

fn ect_of(sk: &Sock) -> Ecn {
    if sk.ect1 {
        Ecn::Ect1
    } else {
        Ecn::Ect0
    }
}

impl TcpSender {
    pub fn new(params: &ConnParams, spec: &TcpSpec, cc: AnyCc) -> TcpSender {
        // `tcp_sync_mss`: the path's MSS, lowered by the socket's TCP_MAXSEG if set.
        let mss = spec.mss.map_or(params.mss, |m| m.min(params.mss));
        let mut sk = Sock::new(mss);
        sk.snd_cwnd = spec.init_cwnd;
        sk.pacing_fq = spec.fq_pacing;
        let stats = SenderStats {
            established_at: NEVER,
            completed_at: NEVER,
            ..Default::default()
        };
        let mut s = TcpSender {
            sk,
            cc_flags: cc.flags(),
            cc,
            stats,
            params: params.clone(),
            spec: spec.clone(),
            rto_min: (spec.rto_min_ms * MS as f64).round() as SimDuration,
            clock: Jiffies::with_phase(spec.hz, params.tick_phases.0),
            timeout_min: 2 * SEC / spec.hz.max(1) as u64,
            phase: Phase::Closed,
            ecn_req: EcnRequest::None,
            syn_retries: 0,
            syn_stamp: NEVER,
            cached_metrics: None,
            backed_off: false,
            snd_wnd: 0,
            max_window: 0,
            skb_end: 0,
            syn_at: NEVER,
            total_segs: 0,
            snd_cwnd_used: 0,
            last_payload: mss,
            mss_now: mss,
            opt_bytes: 0,
            early_writes: Vec::new(),
            partial: VecDeque::new(),
            segs: VecDeque::with_capacity(256),
            ts_head: NIL,
            ts_tail: NIL,
            sacked: SackedRanges::default(),
            lost_q: BinaryHeap::with_capacity(64),
            rtt: RttEstimator::default(),
            min_rtt: MinMax::default(),
            rto: TCP_TIMEOUT_INIT,
            retransmits: 0,
            frto: false,
            keep_open: false,
            snd_sml: 0,
            reordering: REORDERING,
            timer: None,
            pace_at: NEVER,
            tsq: Tsq::default(),
            data_segs_out: 0,
            queue_cwr: false,
            prr: Prr::default(),
            rack: Rack::default(),
            tlp_high_seq: None,
            tlp_retrans: false,
            undo_marker: None,
            undo_retrans: 0,
            retrans_stamp: None,
            dsack_dups: 0,
            #[cfg(test)]
            loss_events: 0,
            rcv_tsecr: 0,
            rate: RateSampler::default(),
            rs: RateSample::default(),
            ts_recent: 0,
            received_ce: 0,
        };
        match params.size {
            Some(b) => {
                s.add_segments(b);
                s.early_writes.push(b);
            }
            None => s.total_segs = u32::MAX,
        }
        s
    }

    /// Segments for `bytes` more written by the application: the last one may be short.
    /// As `tcp_sendmsg_locked` copies into the write queue's tail skb while it is unsent and
    /// below the size goal, a write first fills a short last segment that has not left yet
    /// and extends the skb it is in (a burst cut from it later may run on into this write);
    /// after the tail has left, the write starts a new segment and skb.
    fn add_segments(&mut self, bytes: u64) {
        let mss = self.mss_now as u64;
        let mut bytes = bytes.max(1);
        if self.total_segs > 0 {
            if self.sk.snd_nxt < self.total_segs {
                let fill = (mss - self.last_payload as u64).min(bytes);
                self.last_payload += fill as u32;
                bytes -= fill;
                // The skb `snd_nxt` is in ends where the last write did: it is the tail,
                // and grows to the size goal again (from `snd_nxt`, where `tso_fragment`
                // left the unsent rest of a partly sent skb).
                if self.skb_end == self.total_segs {
                    self.skb_end = self.sk.snd_nxt;
                }
                if bytes == 0 {
                    return;
                }
            } else if self.last_payload < self.mss_now {
                self.partial
                    .push_back((self.total_segs - 1, self.last_payload));
            }
        }
        let n = bytes.div_ceil(mss);
        self.total_segs += n as u32;
        self.last_payload = (bytes - (n - 1) * mss) as u32;
    }

    /// The payload per segment changes before any data left (the SYN/ACK decided the
    /// options): segment what was written so far again.
    fn set_mss_now(&mut self, mss_now: u32) {
        debug_assert_eq!(self.sk.snd_nxt, 0, "MSS changed after data was sent");
        self.mss_now = mss_now;
        if self.total_segs == u32::MAX {
            self.last_payload = mss_now;
            return;
        }
        self.total_segs = 0;
        self.partial.clear();
        for b in std::mem::take(&mut self.early_writes) {
            self.add_segments(b);
        }
    }

    fn rto_min(&self) -> SimDuration {
        self.rto_min
    }
    /// `usecs_to_jiffies`: timer durations are whole jiffies (rounded up), as Linux keeps
    /// icsk_rto and the TLP/RACK timeouts.
    fn jiffies(&self, d: SimDuration) -> SimDuration {
        self.clock.ceil(d) * self.clock.jiffy()
    }
    /// The jiffies from `then` to `now` as the host's clock counts them (`tcp_jiffies32`
    /// differences), and the RTO in jiffies (`icsk_rto`).
    fn jiffies_since(&self, then: SimTime, now: SimTime) -> (i64, i64) {
        let c = &self.clock;
        let elapsed = c.at(now) as i64 - c.at(then) as i64;
        (elapsed, c.floor(self.rto) as i64)
    }
    /// `inet_csk_reset_xmit_timer`: the retransmission timer (`kind`) expires `when` (whole
    /// jiffies) after this tick and runs when the timer wheel gets to it.
    fn arm_timer(&mut self, kind: Timer, now: SimTime, when: SimDuration) {
        self.timer = Some((kind, self.clock.timer_in(now, when)));
    }
    /// TCP_TIMEOUT_MIN: 2 jiffies.
    fn timeout_min(&self) -> SimDuration {
        self.timeout_min
    }

    /// The application writes `bytes` more on a sized (persistent) connection: the next
    /// response, message or video chunk (`tcp_sendmsg_locked`, see `add_segments`), then
    /// `tcp_push`: a finished transfer resumes sending, after the idle check of
    /// `tcp_skb_entail`, unless autocorked.
    pub fn append(&mut self, bytes: u64, now: SimTime, out: &mut Vec<Packet>) {
        debug_assert!(self.total_segs != u32::MAX, "append to a bulk transfer");
        if matches!(self.phase, Phase::Established | Phase::Done) {
            self.slow_start_after_idle_check(now);
        }
        let una = self.sk.snd_una;
        while self.partial.front().is_some_and(|&(s, _)| s < una) {
            self.partial.pop_front();
        }
        if !matches!(self.phase, Phase::Established | Phase::Done) {
            self.early_writes.push(bytes);
        }
        self.add_segments(bytes);
        self.stats.completed_at = NEVER;
        if self.phase == Phase::Done {
            self.phase = Phase::Established;
        }
        if self.phase == Phase::Established {
            self.sk.now = now;
            if !self.autocorked(now) {
                self.write_xmit(now, out, false);
            }
        }
    }

    /// `tcp_push`'s `tcp_should_autocork` (`net.ipv4.tcp_autocorking`): the write queue's
    /// tail skb, below the size goal, waits while earlier data is unacknowledged and more
    /// than that skb is still in the host's queue (`sk_wmem_alloc`); the next transmit
    /// completion sends it (`tcp_wfree` -> `tcp_tsq_handler`), and writes until then join it.
    #[cold]
    fn autocorked(&mut self, now: SimTime) -> bool {
        let (s, total) = (self.sk.snd_nxt, self.total_segs);
        if !self.spec.autocorking || self.sk.snd_una == s || s >= total {
            return false;
        }
        // The tail skb starts at the last boundary: the end of the skb `snd_nxt` is in,
        // then one every size goal (placed as `snd_nxt` reaches them, `skb_left`), or at
        // `snd_nxt` if the skb it is in is the tail (`tso_fragment` left its unsent rest).
        let goal = self.size_goal_segs();
        let start = if self.skb_end > s && self.skb_end >= total {
            s
        } else {
            let b = self.skb_end.max(s);
            b + (total - 1 - b) / goal * goal
        };
        let len = (total - 1 - start) as u64 * self.mss_now as u64 + self.last_payload as u64;
        if len >= goal as u64 * self.mss_now as u64 {
            return false;
        }
        match self.tsq.autocork(now, tsq::SKB_HEAD_TRUESIZE + len) {
            Some(at) => {
                self.pace_at = self.pace_at.min(at.max(now));
                true
            }
            None => false,
        }
    }

    /// `tcp_slow_start_after_idle_check`: with nothing in flight and no data sent for more
    /// than an RTO (both in jiffies), `tcp_cwnd_restart`: ssthresh keeps 3/4 of the window
    /// (`tcp_current_ssthresh`), and the window halves for every further RTO of idleness, down
    /// to the initial window. CCs with their own `cong_control` (BBR, Prague) are exempt; no
    /// modelled CC acts on `CA_EVENT_CWND_RESTART`.
    #[cold]
    fn slow_start_after_idle_check(&mut self, now: SimTime) {
        if !self.spec.slow_start_after_idle || self.sk.packets_out > 0 || self.cc.has_cong_control()
        {
            return;
        }
        let (mut delta, rto) = self.jiffies_since(self.sk.lsndtime, now);
        if delta <= rto {
            return;
        }
        let restart = self.spec.init_cwnd.min(self.sk.snd_cwnd);
        self.sk.snd_ssthresh = self.current_ssthresh();
        let mut cwnd = self.sk.snd_cwnd;
        loop {
            delta -= rto;
            if !(delta > 0 && cwnd > restart) {
                break;
            }
            cwnd >>= 1;
        }
        self.sk.snd_cwnd = cwnd.max(restart);
        self.sk.snd_cwnd_stamp = now;
    }

    /// Whether every written byte has been acknowledged.
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Open the connection (send the SYN) at `now`.
    #[cold]
    pub fn connect(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.sk.now = now;
        self.ecn_req = ecn::syn_request(self.spec.ecn, self.cc_flags);
        self.phase = Phase::SynSent;
        self.send_syn(now, out);
    }

    #[cold]
    fn send_syn(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut p = self.pkt(now);
        // tcp_ecn_clear_syn (tcp_ecn_fallback=1): a retransmitted SYN carries no ECN request
        // on the wire, but the socket still interprets the SYN/ACK per its original request
        // (a SYN/ACK answering the first SYN still enables ECN).
        if let (0, Some(h)) = (self.syn_retries, self.params.client_opened) {
            // The client's SYN, as the client would have sent it.
            p.flags = flags::SYN | h.syn_flags;
            p.ecn = h.syn_ecn;
        } else if self.syn_retries == 0 {
            p.flags = flags::SYN | ecn::syn_flags(self.ecn_req);
            // tcp_ecn_send_syn: the SYN itself is ECT only for NEEDS_ECN CCs (ECT(0): the CC
            // has not chosen its codepoint before init).
            if self.ecn_req != EcnRequest::None && self.cc_flags.needs_ecn {
                p.ecn = Ecn::Ect0;
            }
        } else {
            p.flags = flags::SYN;
        }
        if self.syn_retries == 0 {
            self.syn_stamp = now;
        }
        out.push(p);
        let when = (TCP_TIMEOUT_INIT << self.syn_retries.min(7)).min(TCP_RTO_MAX);
        self.syn_at = self.clock.timer_in(now, when);
    }

    fn pkt(&self, now: SimTime) -> Packet {
        let mut p = Packet::new(
            self.params.flow,
            Dir::Fwd,
            self.params.sender,
            self.params.receiver,
        );
        p.hash = self.params.hash_fwd;
        p.ts_val = now;
        p.ts_ecr = self.ts_recent;
        p.group = self.params.group;
        p.dscp = self.params.dscp;
        p
    }

    pub fn on_packet(&mut self, pkt: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        self.sk.now = now;
        if pkt.ecn == Ecn::Ce {
            self.received_ce += 1;
        }
        match self.phase {
            Phase::SynSent if pkt.has(flags::SYN) && pkt.has(flags::ACK) => {
                self.on_synack(pkt, now, out);
            }
            Phase::Established if !pkt.has(flags::SYN) && pkt.has(flags::ACK) => {
                self.ts_recent = pkt.ts_val;
                self.on_ack(pkt, now, out);
            }
            _ => {}
        }
    }

    #[cold]
    fn on_synack(&mut self, pkt: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        self.ts_recent = pkt.ts_val;
        self.snd_wnd = pkt.wnd as u64;
        self.max_window = self.max_window.max(self.snd_wnd);
        let mode = match self.params.client_opened {
            Some(h) => h.server,
            None => ecn::client_mode(self.ecn_req, pkt.flags, self.cc_flags),
        };
        self.sk.ecn_mode = mode;
        // The SYN/ACK's AccECN option sets `saw_accecn_opt`; from then on every segment
        // carries ours (`tcp_established_options`), which `tcp_current_mss` takes off the
        // payload.
        if mode == EcnMode::AccEcn && pkt.accecn_option_bytes() > 0 && self.spec.ecn_option != 0 {
            self.opt_bytes = ecn::accecn_option_len(0, 0).unwrap_or(0);
            self.set_mss_now(self.sk.mss - self.opt_bytes);
        }
        self.early_writes = Vec::new();
        // RTT sample of the SYN (timestamp echo covers retransmitted SYNs).
        let rtt_us = (now.saturating_sub(pkt.ts_ecr) / US).max(1);
        let rto_min_us = self.rto_min() / US;
        self.rtt.sample(rtt_us, 0, 0, rto_min_us);
        self.min_rtt.running_min(MIN_RTT_WIN, now, rtt_us * US);
        self.sync_rtt();
        self.rto = self.jiffies(self.rtt.rto());
        // tcp_init_metrics: the cached reordering degree, and a cached RTT above the
        // handshake's seeds the first RTO (the estimator keeps the handshake's sample).
        if let Some(m) = self.cached_metrics.take() {
            if m.reordering != 0 {
                self.reordering = m.reordering;
            }
            if m.rtt_us8 > self.rtt.srtt_us {
                let rto_min = self.clock.ceil(self.rto_min());
                let j = metrics::seeded_rto_jiffies(m.rtt_us8, self.spec.hz, rto_min);
                self.rto = (j * self.clock.jiffy()).min(TCP_RTO_MAX);
            }
        }
        self.syn_at = NEVER;
        self.phase = Phase::Established;
        self.stats.established_at = now;
        // tcp_finish_connect: the idle clock starts at the handshake.
        self.sk.lsndtime = now;
        // tcp_init_transfer: one segment after more than one SYN retransmission (RFC 6298
        // section 5.7), unless the SYN/ACK echoes the first SYN's timestamp: then the SYN was
        // not lost and `tcp_try_undo_spurious_syn` clears `undo_marker`. A passive opener's
        // socket has no `undo_marker` (`tcp_create_openreq_child`), so a requested transfer's
        // data sender, which stands for the server, always starts with the initial window.
        let cut = self.params.client_opened.is_none()
            && self.syn_retries > 1
            && pkt.ts_ecr != self.syn_stamp;
        self.sk.snd_cwnd = if cut { 1 } else { self.spec.init_cwnd };
        self.sk.snd_cwnd_stamp = now;
        self.cc.init(&mut self.sk);
        self.stats.ecn_mode = mode;
        self.stats.data_ecn = match mode {
            EcnMode::None => Ecn::NotEct,
            _ => ect_of(&self.sk),
        };
        if !self.cc.has_cong_control() {
            self.update_pacing_rate();
        }
        self.write_xmit(now, out, false);
    }

    fn sync_rtt(&mut self) {
        self.sk.srtt = self.rtt.srtt_ns();
        self.sk.rttvar = self.rtt.rttvar_us * US;
        self.sk.min_rtt = self.min_rtt.get();
    }

    // ---------------------------------------------------------------- scoreboard helpers

    fn idx(&self, seq: u32) -> usize {
        (seq - self.sk.snd_una) as usize
    }
    fn seg(&self, seq: u32) -> &Seg {
        &self.segs[(seq - self.sk.snd_una) as usize]
    }
    fn seg_mut(&mut self, seq: u32) -> &mut Seg {
        let i = (seq - self.sk.snd_una) as usize;
        &mut self.segs[i]
    }
    fn payload_of(&self, seq: u32) -> u32 {
        if seq + 1 == self.total_segs {
            self.last_payload
        } else if self.partial.is_empty() {
            self.mss_now
        } else {
            match self.partial.binary_search_by_key(&seq, |&(s, _)| s) {
                Ok(i) => self.partial[i].1,
                Err(_) => self.mss_now,
            }
        }
    }
    /// Payload bytes of the `n` segments from `seq`.
    fn payload_from(&self, seq: u32, n: u32) -> u64 {
        if seq + n < self.total_segs && self.partial.is_empty() {
            n as u64 * self.mss_now as u64 // full segments (payload_of's common case)
        } else {
            (seq..seq + n).map(|s| self.payload_of(s) as u64).sum()
        }
    }

    fn ts_unlink(&mut self, seq: u32) {
        let (prev, next, st) = {
            let s = self.seg(seq);
            (s.prev, s.next, s.st)
        };
        if st & S_TSORTED == 0 {
            return;
        }
        if prev == NIL {
            self.ts_head = next;
        } else {
            self.seg_mut(prev).next = next;
        }
        if next == NIL {
            self.ts_tail = prev;
        } else {
            self.seg_mut(next).prev = prev;
        }
        let s = self.seg_mut(seq);
        s.st &= !S_TSORTED;
        s.prev = NIL;
        s.next = NIL;
    }
    fn ts_push(&mut self, seq: u32) {
        self.ts_unlink(seq);
        let tail = self.ts_tail;
        {
            let s = self.seg_mut(seq);
            s.prev = tail;
            s.next = NIL;
            s.st |= S_TSORTED;
        }
        if tail == NIL {
            self.ts_head = seq;
        } else {
            self.seg_mut(tail).next = seq;
        }
        self.ts_tail = seq;
    }

    /// The CC's `skb_marked_lost` hook (`tcp_notify_skb_loss_event`), with the rate sample
    /// Linux builds from the segment's send-time state.
    fn notify_loss(&mut self, seq: u32) {
        let tx = self.seg(seq).tx;
        let rs = (!tx.counted).then(|| RateSample {
            tx_in_flight: tx.in_flight,
            lost: self.sk.lost - tx.lost,
            is_app_limited: tx.app_limited,
            ..Default::default()
        });
        self.cc.skb_marked_lost(&self.sk, rs.as_ref());
        #[cfg(test)]
        {
            self.loss_events += 1;
        }
    }

    /// `tcp_mark_skb_lost` (+ `tcp_notify_skb_loss_event`).
    #[cold]
    fn mark_lost(&mut self, seq: u32) {
        let st = self.seg(seq).st;
        if st & S_SACKED != 0 {
            return;
        }
        if st & S_LOST != 0 {
            // Already lost: only a lost retransmission is news.
            if st & S_RETRANS == 0 {
                return;
            }
            self.seg_mut(seq).st &= !S_RETRANS;
            self.sk.retrans_out -= 1;
            self.sk.lost += 1;
            self.stats.lost_retrans += 1;
        } else {
            self.seg_mut(seq).st |= S_LOST;
            self.sk.lost_out += 1;
            self.sk.lost += 1;
        }
        self.notify_loss(seq);
        self.ts_unlink(seq);
        if self.seg(seq).st & S_QUEUED == 0 {
            self.seg_mut(seq).st |= S_QUEUED;
            self.lost_q.push(Reverse(seq));
        }
    }

    // ---------------------------------------------------------------- transmission

    fn ecn_for(&mut self, p: &mut Packet, retrans: bool) {
        match self.sk.ecn_mode {
            EcnMode::None => {}
            EcnMode::Rfc3168 => {
                if !retrans {
                    p.ecn = ect_of(&self.sk);
                    if self.queue_cwr {
                        self.queue_cwr = false;
                        p.flags |= flags::CWR;
                    }
                } else if self.cc_flags.needs_ecn {
                    // tcp_ecn_send: only non-NEEDS_ECN sockets clear ECT on retransmissions.
                    p.ecn = ect_of(&self.sk);
                }
            }
            EcnMode::AccEcn => {
                p.ecn = ect_of(&self.sk);
                p.set_ace(ecn::ace_encode(self.received_ce));
            }
        }
    }

    /// Transmit segment `seq` (new if seq == snd_nxt) and update pacing, rate and counters.
    /// `in_flight`: packets in flight once the skb it belongs to is sent (`tx.in_flight`).
    fn transmit(
        &mut self,
        seq: u32,
        now: SimTime,
        out: &mut Vec<Packet>,
        retrans: bool,
        in_flight: u32,
    ) {
        let payload = self.payload_of(seq);
        let mut p = self.pkt(now);
        p.flags = flags::ACK;
        p.seq = seq;
        p.payload = payload;
        p.len = hdr::wire_len(payload, 0) + self.opt_bytes;
        p.retrans = retrans;
        self.ecn_for(&mut p, retrans);
        p.skb |= self.tsq.skb_flags();
        out.push(p);
        self.tsq.charge(tsq::truesize(payload));
        // tcp_event_data_sent: first transmission with nothing in flight, then the time of
        // the last data sent (CUBIC's TxStart shifts its epoch by the idle time since).
        if self.sk.packets_in_flight() == 0 {
            self.cc.cwnd_event(&mut self.sk, CaEvent::TxStart);
        }
        self.sk.lsndtime = now;
        let tx = self.rate.on_sent(&mut self.sk, now, in_flight);
        if retrans {
            let s = self.seg_mut(seq);
            s.tx_time = now;
            s.tx = tx;
            s.st |= S_EVER_RETRANS;
            self.stats.retrans += 1;
        } else {
            self.segs.push_back(Seg {
                tx_time: now,
                st: 0,
                prev: NIL,
                next: NIL,
                tx,
            });
            self.sk.snd_nxt += 1;
            self.sk.packets_out += 1;
        }
        self.ts_push(seq);
        self.stats.data_pkts_sent += 1;
        self.data_segs_out += 1;
    }

    /// `__tcp_transmit_skb` + `tcp_update_skb_after_send` for one skb of `payload` bytes
    /// just sent: the write stamp becomes at least `now` and, when paced, advances by
    /// payload/pacing_rate (less up to half of it as credit for a late send, Linux's
    /// allowance for OS jitter).
    fn after_send(&mut self, now: SimTime, payload: u64) {
        let prior = self.sk.wstamp;
        self.sk.wstamp = self.sk.wstamp.max(now);
        if self.paced() {
            let rate = self.sk.pacing_rate;
            if rate != 0 && rate != u64::MAX && self.data_segs_out >= 10 {
                let mut len_ns = payload * SEC / rate;
                let credit = self.sk.wstamp - prior;
                len_ns -= (len_ns / 2).min(credit);
                self.sk.wstamp += len_ns;
            }
        }
    }

    /// `tcp_tso_segs`: how many segments one skb (one GSO burst, sent back to back) may
    /// carry. The CC's `tso_segs` hook decides if it has one (Prague, BBR); otherwise
    /// `tcp_tso_autosize`: about 1 ms at the pacing rate (`sk_pacing_shift` 10), at least
    /// `tcp_min_tso_segs` (2), at most a 64 KB GSO skb. 1 when the host has no TSO/GSO.
    pub(crate) fn tso_segs(&self) -> u32 {
        if !self.spec.tso {
            return 1;
        }
        let mss = self.mss_now.max(1) as u64;
        let segs = self.cc.tso_segs(&self.sk).unwrap_or_else(|| {
            let bytes = (self.sk.pacing_rate >> SK_PACING_SHIFT).min(GSO_MAX_BYTES);
            ((bytes / mss) as u32).max(TCP_MIN_TSO_SEGS)
        });
        segs.clamp(1, (GSO_MAX_BYTES / mss) as u32)
    }

    /// `tcp_xmit_size_goal` in segments: a 64 KB GSO skb, at most half the largest window the
    /// receiver offered (`tcp_bound_to_half_wnd`).
    pub(crate) fn size_goal_segs(&self) -> u32 {
        if !self.spec.tso {
            return 1;
        }
        let mut bytes = GSO_MAX_BYTES;
        if self.max_window > 0 {
            let cutoff = if self.max_window > 536 {
                self.max_window >> 1
            } else {
                self.max_window
            };
            bytes = bytes.min(cutoff.max(68));
        }
        ((bytes / self.mss_now.max(1) as u64) as u32).max(1)
    }

    /// Segments left in the write-queue skb that `snd_nxt` is in. An skb ends at the size
    /// goal or at the end of what was written when it started (a later write starts a new
    /// one, as each write starts a new segment).
    fn skb_left(&mut self) -> u32 {
        if self.skb_end <= self.sk.snd_nxt {
            self.skb_end = (self.sk.snd_nxt + self.size_goal_segs()).min(self.total_segs);
        }
        self.skb_end - self.sk.snd_nxt
    }

    /// `tcp_tso_should_defer`: hold back a partial GSO burst while an ACK that will open
    /// more window is expected soon, so unpaced senders emit bursts of about `max_segs`
    /// (`tcp_tso_win_divisor` 3). `limit` is the window space in segments, the smaller of
    /// the congestion and the receive window's; the caller sorts a deferral into cwnd-,
    /// rwnd- or application-limited as 5.15 does.
    fn tso_should_defer(&self, now: SimTime, limit: u32, max_segs: u32, remaining: u32) -> bool {
        if self.sk.ca_state >= CaState::Recovery {
            return false;
        }
        // Only if the last write was recent (1 ms).
        if now > self.sk.wstamp + MS {
            return false;
        }
        if limit >= max_segs {
            return false;
        }
        // The rest of this skb fits and it gets no more data: it is in the middle of the
        // write queue (a bulk sender's always is), or a closing transfer's last, which
        // carries the FIN (5.15 tests the FIN last; the tests between can only send
        // sooner). A persistent connection's tail may get more: it may wait.
        if limit >= remaining && !(self.keep_open && self.sk.snd_nxt + remaining == self.total_segs)
        {
            return false;
        }
        // At least a third of the window (`tcp_tso_win_divisor`): of cwnd, or of the receive
        // window where that is smaller (`chunk = min(snd_wnd, cwnd * mss) / 3`).
        let mss = self.mss_now as u64;
        if self.snd_wnd < self.sk.snd_cwnd as u64 * mss {
            if limit as u64 * mss >= self.snd_wnd / TCP_TSO_WIN_DIVISOR as u64 {
                return false;
            }
        } else if limit * TCP_TSO_WIN_DIVISOR >= self.sk.snd_cwnd {
            return false;
        }
        // If the next ACK is likely to come too late (the head was sent less than srtt/2
        // ago), do not defer.
        let Some(head) = self.segs.front() else {
            return false;
        };
        now.saturating_sub(head.tx_time) >= self.sk.srtt / 2
    }

    /// `tcp_small_queue_check` for an skb of the `n` segments from `seq` (`factor` 1 for a
    /// retransmission): over the limit, try again at the transmit completion that brings the
    /// socket under it (`tcp_wfree` -> `tcp_tsq_handler`).
    #[cold]
    fn tsq_throttled(&mut self, now: SimTime, seq: u32, n: u32, factor: u32) -> bool {
        let skb = tsq::SKB_HEAD_TRUESIZE + self.payload_from(seq, n);
        let rtx_empty = self.sk.snd_una == self.sk.snd_nxt;
        let paced = self.paced();
        match self
            .tsq
            .throttle(now, skb, self.sk.pacing_rate, paced, factor, rtx_empty)
        {
            Some(at) => {
                self.pace_at = self.pace_at.min(at);
                true
            }
            None => false,
        }
    }

    /// The simulator put one of this socket's segments on its host's line, which transmits
    /// it by `done`; a throttled socket learns when to try again.
    #[inline]
    pub fn tsq_queued(&mut self, now: SimTime, done: SimTime, payload: u32) {
        if let Some(at) = self.tsq.queued(done, tsq::truesize(payload)) {
            self.pace_at = self.pace_at.min(at.max(now));
        }
    }

    /// One of this socket's segments was freed before its host's line sent it: dropped by the
    /// qdisc on the host's egress, or orphaned by a netem there (`tcp_wfree` at once).
    pub fn tsq_freed(&mut self, now: SimTime, payload: u32) {
        if let Some(at) = self.tsq.freed(tsq::truesize(payload)) {
            self.pace_at = self.pace_at.min(at.max(now));
        }
    }

    /// Paced when the host has fq (EDT) or the CC asked for pacing (SK_PACING_NEEDED).
    fn paced(&self) -> bool {
        self.sk.pacing_fq || self.sk.pacing_needed
    }

    fn pacing_blocked(&mut self, now: SimTime) -> bool {
        if self.paced() && self.sk.wstamp > now {
            self.pace_at = self.sk.wstamp;
            return true;
        }
        false
    }

    fn in_cwnd_reduction(&self) -> bool {
        matches!(self.sk.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_write_xmit`: new data within cwnd (and pacing). `tlp` is the loss probe's
    /// `push_one = 2`: one skb, without Nagle's test or a TSO deferral, and with a quota of one
    /// segment when cwnd is full.
    fn write_xmit(&mut self, now: SimTime, out: &mut Vec<Packet>, tlp: bool) -> u32 {
        let mut sent = 0;
        let mut cwnd_limited = false;
        let prior_packets = self.sk.packets_out;
        let max_segs = self.tso_segs();
        while self.sk.snd_nxt < self.total_segs {
            if self.pacing_blocked(now) {
                break;
            }
            let in_flight = self.sk.packets_in_flight();
            let cwnd = self.sk.snd_cwnd;
            // tcp_cwnd_test: no room in cwnd, unless this is the loss probe or the final FIN
            // ("don't be strict about the congestion window for the final FIN"): a closing
            // transfer's last segment, alone in its skb, goes out with a quota of one.
            let full = in_flight >= cwnd;
            if full && !(tlp && sent == 0) && !self.fin_alone() {
                cwnd_limited = true;
                break;
            }
            // tcp_snd_wnd_test: the first segment must fit the receiver's window.
            let wnd_left = self.wnd_end().saturating_sub(self.sk.snd_nxt);
            if wnd_left == 0 {
                self.stats.rwnd_limited += 1;
                break;
            }
            // tcp_cwnd_test: at most half the window per skb, so at least two GSO bursts
            // are in flight.
            let quota = if full {
                1
            } else {
                (cwnd >> 1).max(1).min(cwnd - in_flight)
            };
            let remaining = self.skb_left();
            if remaining == 1 && !tlp && self.nagle_holds(1) {
                break;
            }
            if !tlp
                && max_segs > 1
                && remaining > 1
                && self.tso_should_defer(now, (cwnd - in_flight).min(wnd_left), max_segs, remaining)
            {
                // Its three cases: the skb does not fit the smaller of the two windows, which
                // makes the send cwnd- or rwnd-limited, or it fits (application-limited).
                let cong = cwnd - in_flight;
                let skb_len = self.payload_from(self.sk.snd_nxt, remaining);
                let no_fit = |wnd: u32| wnd as u64 * self.mss_now as u64 <= skb_len;
                if cong < wnd_left {
                    cwnd_limited = no_fit(cong);
                } else if no_fit(wnd_left) {
                    self.stats.rwnd_limited += 1;
                }
                break;
            }
            // tcp_mss_split_point: whole segments within the window; all of a tail skb but
            // its short last segment when Nagle's check holds for that.
            let mut n = quota.min(max_segs).min(remaining).min(wnd_left);
            if n == remaining && n > 1 && !tlp && self.nagle_holds(remaining) {
                n -= 1;
            }
            if self.tsq.may_throttle(self.sk.pacing_rate, self.paced())
                && self.tsq_throttled(now, self.sk.snd_nxt, n, 0)
            {
                break;
            }
            // tcp_set_tx_in_flight: every segment of the skb records the flight after it.
            let in_flight = self.sk.packets_in_flight() + n;
            let mut payload = 0;
            for _ in 0..n {
                let seq = self.sk.snd_nxt;
                payload += self.payload_of(seq) as u64;
                self.transmit(seq, now, out, false, in_flight);
            }
            self.after_send(now, payload);
            sent += n;
            // tcp_minshall_update: this skb ended in a short segment.
            if self.sk.snd_nxt == self.total_segs && self.last_payload < self.mss_now {
                self.snd_sml = self.total_segs;
            }
            if tlp {
                break;
            }
        }
        // tcp_rate_check_app_limited at the tail of a sized transfer.
        if self.sk.snd_nxt >= self.total_segs
            && self.sk.packets_in_flight() < self.sk.snd_cwnd
            && self.sk.lost_out <= self.sk.retrans_out
        {
            self.sk.app_limited = (self.sk.delivered + self.sk.packets_in_flight() as u64).max(1);
        }
        cwnd_limited |= self.sk.packets_in_flight() >= self.sk.snd_cwnd;
        if sent > 0 || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
        if sent > 0 {
            if self.in_cwnd_reduction() {
                self.prr.out += sent;
            }
            // tcp_event_new_data_sent
            if prior_packets == 0 || matches!(self.timer, Some((Timer::Tlp, _))) {
                self.rearm_rto(now);
            }
            if !tlp {
                self.schedule_loss_probe(now, false);
            }
        }
        sent
    }

    /// `tcp_nagle_check` for the short last segment of the `remaining`-segment skb at
    /// `snd_nxt` (not for a loss probe, which passes `TCP_NAGLE_OFF`): a short segment at the
    /// write queue's tail without the FIN waits, unless `TCP_NODELAY`, while something is in
    /// flight and the last short segment sent is unacknowledged (`tcp_minshall_check`): alone
    /// in its skb (`tcp_nagle_test`) it is not sent, at the end of a longer one
    /// (`tcp_mss_split_point`) it is cut off. An ACK or a write that fills it sends it.
    #[inline]
    fn nagle_holds(&self, remaining: u32) -> bool {
        let s = self.sk.snd_nxt;
        s + remaining == self.total_segs
            && self.keep_open
            && self.last_payload < self.mss_now
            && !self.spec.nodelay
            && self.sk.packets_out > 0
            && self.snd_sml > self.sk.snd_una
            && self.snd_sml <= s
    }

    /// The skb at `snd_nxt` is one segment carrying the FIN: a closing transfer's last
    /// (`tcp_send_fin` tacks the FIN onto the unsent tail skb, and `tso_fragment` leaves it
    /// on the last part of a split).
    #[inline]
    fn fin_alone(&self) -> bool {
        !self.keep_open && self.sk.snd_nxt + 1 == self.total_segs
    }

    /// The application keeps this connection open after its writes (`web`, `messages` and
    /// `chunks` on a persistent connection): no FIN ends its last segment.
    pub fn keep_open(&mut self) {
        self.keep_open = true;
    }

    /// The application closes the connection after its next write (a `messages` session's
    /// last message): the FIN rides on that write's last segment.
    pub fn close_after_writes(&mut self) {
        self.keep_open = false;
    }

    /// `tcp_wnd_end`, in segments: the window counts whole segments of `mss_now` bytes.
    fn wnd_end(&self) -> u32 {
        let segs = self.snd_wnd / self.mss_now.max(1) as u64;
        self.sk
            .snd_una
            .saturating_add(segs.min(u32::MAX as u64) as u32)
    }

    /// `tcp_cwnd_validate`: the window-usage bookkeeping ([`crate::cc::Sock::cwnd_validate`]), then the
    /// cwnd timestamp while the network is fed fully; while it starves, the most segments
    /// out, and after an RTO of starving [`Self::cwnd_application_limited`].
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        self.sk.cwnd_validate(is_cwnd_limited);
        if self.sk.cwnd_limited() {
            self.snd_cwnd_used = 0;
            self.sk.snd_cwnd_stamp = self.sk.now;
        } else {
            self.snd_cwnd_used = self.snd_cwnd_used.max(self.sk.packets_out);
            // A bulk writer is never cut (SOCK_NOSPACE) and nothing else reads the stamp:
            // it skips the check and its divisions.
            if self.total_segs != u32::MAX
                && self.spec.slow_start_after_idle
                && !self.cc.has_cong_control()
            {
                let (starved, rto) = self.jiffies_since(self.sk.snd_cwnd_stamp, self.sk.now);
                if starved >= rto {
                    self.cwnd_application_limited();
                }
            }
        }
    }

    /// `tcp_cwnd_application_limited` (RFC 2861's slow part): after an RTO in which the
    /// window was not filled, in the Open state and with the application not blocked on the
    /// send buffer, cwnd falls halfway to the most it used (at least the initial window) and
    /// ssthresh keeps 3/4 of the old one (`tcp_current_ssthresh`). The model has no send
    /// buffer: a bulk writer (iperf) always has SOCK_NOSPACE set, since its writes block on
    /// the full buffer, so it never comes here; a sized writer's writes are taken whole, as if
    /// they never blocked.
    #[cold]
    fn cwnd_application_limited(&mut self) {
        if self.sk.ca_state == CaState::Open {
            let win_used = self.snd_cwnd_used.max(self.spec.init_cwnd);
            if win_used < self.sk.snd_cwnd {
                self.sk.snd_ssthresh = self.current_ssthresh();
                self.sk.snd_cwnd = (self.sk.snd_cwnd + win_used) >> 1;
            }
            self.snd_cwnd_used = 0;
        }
        self.sk.snd_cwnd_stamp = self.sk.now;
    }

    /// `tcp_xmit_retransmit_queue`: retransmit segments marked lost, within cwnd and pacing.
    #[cold]
    fn xmit_retransmit_queue(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        let mut rearm = false;
        while let Some(&Reverse(seq)) = self.lost_q.peek() {
            let valid = seq >= self.sk.snd_una && {
                let st = self.seg(seq).st;
                st & S_LOST != 0 && st & (S_SACKED | S_RETRANS) == 0
            };
            if !valid {
                self.lost_q.pop();
                if seq >= self.sk.snd_una {
                    self.seg_mut(seq).st &= !S_QUEUED;
                }
                continue;
            }
            if self.pacing_blocked(now) {
                break;
            }
            if self.sk.packets_in_flight() >= self.sk.snd_cwnd {
                break;
            }
            if self.tsq.may_throttle(self.sk.pacing_rate, self.paced())
                && self.tsq_throttled(now, seq, 1, 1)
            {
                break;
            }
            self.lost_q.pop();
            self.retransmit_one(seq, now, out);
            if self.in_cwnd_reduction() {
                self.prr.out += 1;
            }
            if seq == self.sk.snd_una && !matches!(self.timer, Some((Timer::Reo, _))) {
                rearm = true;
            }
        }
        if rearm {
            self.reset_xmit_timer(Timer::Rto, now, self.rto, TCP_RTO_MAX);
        }
    }

    /// `tcp_retransmit_skb` of a lost segment: it is in flight again (SACKED_RETRANS).
    #[cold]
    fn retransmit_one(&mut self, seq: u32, now: SimTime, out: &mut Vec<Packet>) {
        let in_flight = self.sk.packets_in_flight() + 1;
        self.transmit(seq, now, out, true, in_flight);
        self.after_send(now, self.payload_of(seq) as u64);
        let s = self.seg_mut(seq);
        s.st &= !S_QUEUED;
        s.st |= S_RETRANS;
        self.sk.retrans_out += 1;
        // The first retransmission's time, and one more to be shown spurious before undo.
        self.retrans_stamp.get_or_insert(now);
        self.undo_retrans = self.undo_retrans.max(0) + 1;
    }

    // ---------------------------------------------------------------- timers

    fn head_tx_time(&self) -> SimTime {
        self.segs.front().map(|s| s.tx_time).unwrap_or(self.sk.now)
    }

    /// `tcp_rearm_rto`.
    fn rearm_rto(&mut self, now: SimTime) {
        if self.sk.packets_out == 0 {
            self.timer = None;
            return;
        }
        let mut rto = self.rto;
        if matches!(self.timer, Some((Timer::Reo, _)) | Some((Timer::Tlp, _))) {
            // Offset the time elapsed since the head was sent.
            let delta = (self.head_tx_time() + self.rto) as i64 - now as i64;
            rto = self.jiffies(delta.max(1) as u64);
        }
        self.reset_xmit_timer(Timer::Rto, now, rto, TCP_RTO_MAX);
    }

    /// `tcp_reset_xmit_timer`: the timer `when` from now plus `tcp_pacing_delay`, the time to
    /// the next paced departure (`tcp_wstamp_ns`) in whole jiffies (`nsecs_to_jiffies`
    /// truncates, so only a gap of a jiffy or more delays it); at most `max_when`
    /// (`inet_csk_reset_xmit_timer`).
    fn reset_xmit_timer(
        &mut self,
        kind: Timer,
        now: SimTime,
        when: SimDuration,
        max_when: SimDuration,
    ) {
        let gap = self.sk.wstamp.saturating_sub(now);
        let delay = self.clock.floor(gap) * self.clock.jiffy();
        self.arm_timer(kind, now, (when + delay).min(max_when));
    }

    /// `tcp_schedule_loss_probe`.
    fn schedule_loss_probe(&mut self, now: SimTime, advancing_rto: bool) -> bool {
        if self.sk.packets_out == 0 || !matches!(self.sk.ca_state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let mut timeout = if self.rtt.srtt_us > 0 {
            let t = self.jiffies((self.rtt.srtt_us >> 2) * US);
            // Delayed-ACK allowance with one segment out: the constant TCP_RTO_MIN (200 ms),
            // whatever the route's rto_min.
            t + if self.sk.packets_out == 1 {
                200 * MS
            } else {
                self.timeout_min()
            }
        } else {
            TCP_TIMEOUT_INIT
        };
        let rto_delta = if advancing_rto {
            self.rto as i64
        } else {
            (self.head_tx_time() + self.rto) as i64 - now as i64
        };
        if rto_delta > 0 {
            timeout = timeout.min(self.jiffies(rto_delta as u64));
        }
        self.reset_xmit_timer(Timer::Tlp, now, timeout, TCP_RTO_MAX);
        true
    }

    /// `tcp_set_xmit_timer`.
    fn set_xmit_timer(&mut self, now: SimTime) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.sk.now = now;
        match self.phase {
            Phase::SynSent => {
                if now >= self.syn_at {
                    self.syn_retries += 1;
                    self.stats.syn_retrans += 1;
                    self.send_syn(now, out);
                }
                return;
            }
            Phase::Established => {}
            _ => return,
        }
        if self.pace_at <= now {
            self.pace_at = NEVER;
            if self.sk.lost_out > self.sk.retrans_out {
                self.xmit_retransmit_queue(now, out);
            }
            self.write_xmit(now, out, false);
        }
        if let Some((kind, at)) = self.timer {
            if at <= now {
                self.timer = None;
                match kind {
                    Timer::Rto => self.retransmit_timer(now, out),
                    Timer::Tlp => self.send_loss_probe(now, out),
                    Timer::Reo => self.rack_reo_timeout(now, out),
                }
            }
        }
    }

    pub fn next_timer(&self) -> SimTime {
        match self.phase {
            Phase::SynSent => self.syn_at,
            Phase::Established => {
                let t = self.timer.map(|(_, t)| t).unwrap_or(NEVER);
                t.min(self.pace_at)
            }
            _ => NEVER,
        }
    }

    /// `tcp_retransmit_timer`: RTO.
    #[cold]
    fn retransmit_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.sk.packets_out == 0 {
            return;
        }
        self.stats.rto_count += 1;
        // The timeout ends a tail loss probe episode (`tcp_retransmit_timer`).
        self.tlp_high_seq = None;
        self.enter_loss(now);
        // Retransmit the head regardless of cwnd.
        let head = self.sk.snd_una;
        let st = self.seg(head).st;
        if st & S_LOST != 0 && st & (S_RETRANS | S_SACKED) == 0 {
            self.retransmit_one(head, now, out);
        }
        self.retransmits += 1;
        self.backed_off = true;
        self.rto = (self.rto * 2).min(TCP_RTO_MAX);
        self.arm_timer(Timer::Rto, now, self.rto);
    }

    /// `tcp_enter_loss`.
    #[cold]
    fn enter_loss(&mut self, now: SimTime) {
        let new_recovery = self.sk.ca_state < CaState::Recovery;
        // tcp_timeout_mark_lost: the head, and every segment RACK considers timed out.
        let una = self.sk.snd_una;
        for seq in una..self.sk.snd_nxt {
            let s = self.seg(seq);
            if s.st & S_SACKED != 0 {
                continue;
            }
            if seq != una && (self.rack.rtt as i64 - (now.saturating_sub(s.tx_time)) as i64) > 0 {
                continue;
            }
            self.mark_lost(seq);
        }
        let state = self.sk.ca_state;
        if state <= CaState::Disorder
            || self.sk.high_seq <= self.sk.snd_una
            || (state == CaState::Loss && self.retransmits == 0)
        {
            self.sk.prior_ssthresh = self.current_ssthresh();
            self.sk.prior_cwnd = self.sk.snd_cwnd;
            self.sk.snd_ssthresh = self.cc.ssthresh(&mut self.sk);
            self.cc.cwnd_event(&mut self.sk, CaEvent::Loss);
            self.init_undo();
        }
        self.sk.snd_cwnd = self.sk.packets_in_flight() + 1;
        self.sk.snd_cwnd_cnt = 0;
        self.sk.snd_cwnd_stamp = now;
        // A timeout after many SACKs outside recovery: the reordering was overestimated.
        if state <= CaState::Disorder && self.sk.sacked_out >= REORDERING {
            self.reordering = self.reordering.min(REORDERING);
        }
        self.set_state(CaState::Loss);
        self.sk.high_seq = self.sk.snd_nxt;
        if self.sk.ecn_mode == EcnMode::Rfc3168 {
            self.queue_cwr = true;
        }
        // F-RTO step 1: test this timeout unless a fast recovery was under way (a repeated
        // timeout on the same snd_una is tested again).
        self.frto = self.spec.frto && (new_recovery || self.retransmits > 0);
    }

    /// `tcp_send_loss_probe`.
    #[cold]
    fn send_loss_probe(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        // Pending while the handler runs: without a probe the RTO re-arms from the head.
        self.timer = Some((Timer::Tlp, now));
        if self.tlp_high_seq.is_none() {
            self.tlp_retrans = false;
            let mut probed = false;
            if self.sk.snd_nxt < self.total_segs && self.sk.snd_nxt < self.wnd_end() {
                probed = self.write_xmit(now, out, true) > 0;
            } else if self.sk.packets_out > 0 {
                let last = self.sk.snd_nxt - 1;
                if self.seg(last).st & S_SACKED == 0 {
                    let in_flight = self.sk.packets_in_flight() + 1;
                    self.transmit(last, now, out, true, in_flight);
                    self.tlp_retrans = true;
                    probed = true;
                }
            }
            if probed {
                self.tlp_high_seq = Some(self.sk.snd_nxt);
                self.stats.tlp_count += 1;
                self.timer = None;
            }
        }
        self.rearm_rto(now);
    }

    /// `tcp_rack_reo_timeout`.
    #[cold]
    fn rack_reo_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        // The REO timer stays "pending" while its handler runs (icsk_pending), so the RTO
        // is re-armed relative to the head's send time. Segments not yet expired wait for
        // the next ACK (the new timeout is not re-armed here, as in Linux).
        self.timer = Some((Timer::Reo, now));
        let prior_inflight = self.sk.packets_in_flight();
        let prior_lost = self.sk.lost;
        self.rack_detect_loss(now);
        if prior_inflight != self.sk.packets_in_flight() {
            if self.sk.ca_state != CaState::Recovery {
                self.enter_recovery(false);
                if !self.cc.has_cong_control() {
                    let newly_lost = (self.sk.lost - prior_lost) as u32;
                    let sk = &mut self.sk;
                    self.prr.reduce(sk, 1, newly_lost, false);
                }
            }
            self.xmit_retransmit_queue(now, out);
        }
        if !matches!(self.timer, Some((Timer::Rto, _))) {
            self.rearm_rto(now);
        }
    }

    /// `tcp_rack_detect_loss`: mark lost every segment sent before the most recently delivered
    /// one and outstanding for longer than rack.rtt + reo_wnd. Returns the time until the next
    /// one would expire (0 if none).
    fn rack_detect_loss(&mut self, now: SimTime) -> u64 {
        let reo_wnd = self.rack.reo_wnd(
            self.sk.ca_state,
            self.sk.sacked_out,
            self.sk.min_rtt,
            self.sk.srtt,
        );
        let mut timeout = 0u64;
        let mut cur = self.ts_head;
        while cur != NIL {
            let s = *self.seg(cur);
            if !sent_after(self.rack.mstamp, s.tx_time, self.rack.end_seq, cur + 1) {
                break;
            }
            let remaining = (self.rack.rtt + reo_wnd) as i64 - now.saturating_sub(s.tx_time) as i64;
            if remaining <= 0 {
                self.mark_lost(cur);
            } else {
                timeout = timeout.max(remaining as u64);
            }
            cur = s.next;
        }
        timeout
    }

    /// `tcp_rack_mark_lost`; returns true when a reordering timer was armed.
    fn rack_mark_lost(&mut self, now: SimTime) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout = self.rack_detect_loss(now);
        if timeout > 0 {
            // inet_csk_reset_xmit_timer directly: no pacing delay, at most the RTO.
            let when = (self.jiffies(timeout) + self.timeout_min()).min(self.rto);
            self.arm_timer(Timer::Reo, now, when);
            return true;
        }
        false
    }

    // ---------------------------------------------------------------- state machine

    fn set_state(&mut self, s: CaState) {
        self.cc.set_state(&mut self.sk, s);
        self.sk.ca_state = s;
    }

    /// `tcp_init_cwnd_reduction`.
    #[cold]
    fn init_cwnd_reduction(&mut self) {
        self.sk.high_seq = self.sk.snd_nxt;
        self.tlp_high_seq = None;
        self.sk.snd_cwnd_cnt = 0;
        self.sk.prior_cwnd = self.sk.snd_cwnd;
        self.prr = Prr::default();
        self.sk.snd_ssthresh = self.cc.ssthresh(&mut self.sk);
        if self.sk.ecn_mode == EcnMode::Rfc3168 {
            self.queue_cwr = true;
        }
    }

    /// `tcp_end_cwnd_reduction`.
    #[cold]
    fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        // Unless the reduction was undone.
        if self.sk.snd_ssthresh < crate::cc::INFINITE_SSTHRESH
            && (self.sk.ca_state == CaState::Cwr || self.undo_marker.is_some())
        {
            self.sk.snd_cwnd = self.sk.snd_ssthresh;
            self.sk.snd_cwnd_stamp = self.sk.now;
        }
        self.cc.cwnd_event(&mut self.sk, CaEvent::CompleteCwr);
    }

    /// `tcp_enter_cwr`.
    #[cold]
    fn enter_cwr(&mut self) {
        self.sk.prior_ssthresh = 0;
        if self.sk.ca_state < CaState::Cwr {
            // Congestion proven by ECN: nothing to undo.
            self.undo_marker = None;
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
            self.stats.cwr_count += 1;
        }
    }

    /// `tcp_enter_recovery`.
    #[cold]
    fn enter_recovery(&mut self, ece_ack: bool) {
        self.sk.prior_ssthresh = 0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            if !ece_ack {
                self.sk.prior_ssthresh = self.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.stats.fast_recoveries += 1;
        self.set_state(CaState::Recovery);
    }

    fn any_retrans_done(&self) -> bool {
        self.sk.retrans_out > 0
            || self
                .segs
                .front()
                .is_some_and(|s| s.st & S_EVER_RETRANS != 0)
    }

    /// `tcp_try_keep_open`.
    fn try_keep_open(&mut self) {
        let state = if self.sk.sacked_out + self.sk.lost_out > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.sk.ca_state != state {
            self.set_state(state);
            self.sk.high_seq = self.sk.snd_nxt;
        }
    }

    /// `tcp_try_to_open`.
    fn try_to_open(&mut self, flag: u32) {
        if !self.any_retrans_done() {
            self.retrans_stamp = None;
        }
        if flag & FLAG_ECE != 0 {
            self.enter_cwr();
        }
        if self.sk.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    /// `tcp_identify_packet_loss` (RACK).
    fn identify_packet_loss(&mut self, now: SimTime, flag: &mut u32) {
        if self.sk.packets_out == 0 {
            return;
        }
        let prior_retrans = self.sk.retrans_out;
        if self.rack_mark_lost(now) {
            *flag &= !FLAG_SET_XMIT_TIMER;
        }
        if prior_retrans > self.sk.retrans_out {
            *flag |= FLAG_LOST_RETRANS;
        }
    }

    /// `tcp_current_ssthresh`: ssthresh, or 3/4 of cwnd if that is more, outside a reduction.
    fn current_ssthresh(&self) -> u32 {
        if self.in_cwnd_reduction() {
            self.sk.snd_ssthresh
        } else {
            self.sk
                .snd_ssthresh
                .max((self.sk.snd_cwnd >> 1) + (self.sk.snd_cwnd >> 2))
        }
    }

    /// `tcp_init_undo`: a reduction starts that a later proof of spuriousness may undo.
    fn init_undo(&mut self) {
        self.undo_marker = Some(self.sk.snd_una);
        // Retransmissions still in flight may be DSACKed later.
        self.undo_retrans = if self.sk.retrans_out > 0 {
            self.sk.retrans_out as i32
        } else {
            -1
        };
    }

    /// `tcp_packet_delayed` (Eifel detection, RFC 3522): this ACK echoes a timestamp from
    /// before the first retransmission, so the original arrived. In TCP timestamp ticks
    /// (1 ms, `TCP_TS_HZ`).
    fn packet_delayed(&self) -> bool {
        self.retrans_stamp.is_some_and(|t| self.tsecr_before(t))
    }

    /// `tcp_tsopt_ecr_before`: the ACK echoes a timestamp (1 ms ticks) from before `t`.
    fn tsecr_before(&self, t: SimTime) -> bool {
        self.rcv_tsecr > 0 && self.rcv_tsecr / MS < t / MS
    }

    /// `tcp_may_undo`: every retransmission was DSACKed, or the originals arrived.
    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`: the reduction was spurious; restore what the CC had
    /// (`undo_cwnd`) and ssthresh, and with `unmark_loss` forget the loss marks.
    #[cold]
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            for s in self.segs.iter_mut() {
                s.st &= !S_LOST;
            }
            self.sk.lost_out = 0;
        }
        if self.sk.prior_ssthresh != 0 {
            self.sk.snd_cwnd = self.cc.undo_cwnd(&mut self.sk);
            if self.sk.prior_ssthresh > self.sk.snd_ssthresh {
                self.sk.snd_ssthresh = self.sk.prior_ssthresh;
                // tcp_ecn_withdraw_cwr
                self.queue_cwr = false;
            }
        }
        self.sk.snd_cwnd_stamp = self.sk.now;
        self.undo_marker = None;
        // Make RACK look at the losses again.
        self.rack.advanced = true;
        self.stats.undos += 1;
    }

    /// `tcp_try_undo_recovery`, when the recovery (or loss) episode is over: undo if it was
    /// spurious, else count down the widened RACK window; back to Open.
    fn try_undo_recovery(&mut self) {
        if self.may_undo() {
            self.undo_cwnd_reduction(false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        self.set_state(CaState::Open);
    }

    /// `tcp_try_undo_dsack`: DSACKs showed every retransmission spurious.
    fn try_undo_dsack(&mut self) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RECOVERY_THRESH);
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss`: after an RTO, undo if the originals arrived, or (`frto_undo`)
    /// F-RTO found data that was never retransmitted acknowledged.
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            self.undo_cwnd_reduction(true);
            self.retransmits = 0;
            self.set_state(CaState::Open);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`: a partial ACK in recovery echoes a timestamp from before the
    /// first retransmission, so a delayed original filled the hole: reordering, not loss.
    /// Returns true while retransmissions are still out (send new data, retransmit no more).
    fn try_undo_partial(&mut self, prior_snd_una: u32) -> bool {
        if self.undo_marker.is_some() && self.packet_delayed() {
            self.check_sack_reordering(prior_snd_una);
            if self.sk.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp = None;
            }
            self.undo_cwnd_reduction(true);
            self.try_keep_open();
        }
        false
    }

    /// `tcp_may_raise_cwnd`: when data is cumulatively ACKed (`FLAG_DATA_ACKED`, RFC 5681),
    /// or once the reordering seen exceeds the default degree on SACKs too
    /// (`FLAG_FORWARD_PROGRESS`).
    fn may_raise_cwnd(&self, flag: u32, pkts_acked: u32) -> bool {
        pkts_acked > 0 || (self.reordering > REORDERING && flag & FLAG_DATA_SACKED != 0)
    }

    /// `tcp_check_sack_reordering`: a segment from `low_seq` on, never retransmitted, arrived
    /// after the highest SACKed one: reordering seen, and its distance in segments raises
    /// `tp->reordering`. `tcp_highest_sack_seq` is the start of the skb after the highest
    /// SACKed one (`tcp_advance_highest_sack`), here its end; snd_una once nothing is SACKed.
    fn check_sack_reordering(&mut self, low_seq: u32) {
        let fack = if self.sk.sacked_out == 0 {
            self.sk.snd_una
        } else {
            self.sacked.highest_end()
        };
        if low_seq >= fack {
            return;
        }
        self.reordering = self.reordering.max((fack - low_seq).min(MAX_REORDERING));
        self.rack.reord_seen += 1;
    }

    /// `tcp_process_loss`: in Loss, undo on forward progress if the timeout was spurious;
    /// with F-RTO (RFC 5682 section 3.1, SACK-enhanced), once the retransmitted head is
    /// acknowledged send new data instead of retransmitting (step 2b), and undo if the next
    /// ACK (S)ACKs data never retransmitted (step 3b) or fall back to the conventional
    /// recovery if it SACKs only the new data or is a duplicate (step 3a). Leave Loss once
    /// everything sent before it is acknowledged.
    fn process_loss(&mut self, flag: u32, num_dupack: bool) -> Rexmit {
        let recovered = self.sk.snd_una >= self.sk.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return Rexmit::None;
        }
        if self.frto {
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                self.stats.spurious_rtos += 1;
                return Rexmit::None;
            }
            if self.sk.snd_nxt > self.sk.high_seq {
                if flag & FLAG_DATA_SACKED != 0 || num_dupack {
                    self.frto = false;
                }
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 && !recovered {
                self.sk.high_seq = self.sk.snd_nxt;
                // Deferred until tcp_ack has updated cwnd (`tcp_xmit_recovery`).
                if self.sk.snd_nxt < self.total_segs && self.wnd_end() > self.sk.snd_nxt {
                    return Rexmit::New;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery();
            return Rexmit::None;
        }
        Rexmit::Lost
    }

    /// `tcp_fastretrans_alert` for a SACK + RACK connection (Linux 5.15 `tcp_input.c`, the
    /// NewReno and MTU-probe branches left out). Returns what `tcp_xmit_recovery` sends.
    fn fastretrans_alert(
        &mut self,
        now: SimTime,
        flag: &mut u32,
        prior_snd_una: u32,
        num_dupack: bool,
    ) -> Rexmit {
        let ece = *flag & FLAG_ECE != 0;
        // A. ECE: the reduction is required, not to be undone.
        if ece {
            self.sk.prior_ssthresh = 0;
        }
        // D. State exit when high_seq is ACKed.
        if self.sk.ca_state == CaState::Open {
            self.retrans_stamp = None;
        } else if self.sk.snd_una >= self.sk.high_seq {
            match self.sk.ca_state {
                CaState::Cwr if self.sk.snd_una != self.sk.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_state(CaState::Open);
                }
                CaState::Recovery => {
                    self.try_undo_recovery();
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. Process state.
        let mut rexmit = Rexmit::None;
        match self.sk.ca_state {
            CaState::Recovery => {
                if *flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_partial(prior_snd_una) {
                    return Rexmit::None;
                }
                if self.try_undo_dsack() {
                    self.try_keep_open();
                }
                self.identify_packet_loss(now, flag);
                if self.sk.ca_state != CaState::Recovery {
                    if self.sk.lost_out == 0 {
                        return Rexmit::None;
                    }
                    // Undone, but loss is evident: a new recovery.
                    self.enter_recovery(ece);
                }
                return Rexmit::Lost;
            }
            CaState::Loss => {
                rexmit = self.process_loss(*flag, num_dupack);
                self.identify_packet_loss(now, flag);
                if !(self.sk.ca_state == CaState::Open || *flag & FLAG_LOST_RETRANS != 0) {
                    return rexmit;
                }
                // Undone or recovered, or retransmissions lost: as in the other states.
            }
            _ => {}
        }
        if self.sk.ca_state <= CaState::Disorder {
            self.try_undo_dsack();
        }
        self.identify_packet_loss(now, flag);
        if self.sk.lost_out == 0 {
            self.try_to_open(*flag);
            return rexmit;
        }
        self.enter_recovery(ece);
        Rexmit::Lost
    }

    /// `tcp_xmit_recovery`: after the ACK's window update, retransmit what is marked lost, or
    /// (F-RTO step 2b) send new data first and fall back to retransmitting if none could go.
    fn xmit_recovery(&mut self, rexmit: Rexmit, now: SimTime, out: &mut Vec<Packet>) {
        match rexmit {
            Rexmit::None => return,
            Rexmit::New => {
                self.write_xmit(now, out, false);
                if self.sk.snd_nxt > self.sk.high_seq {
                    return;
                }
                self.frto = false;
            }
            Rexmit::Lost => {}
        }
        self.xmit_retransmit_queue(now, out);
    }

    /// `tcp_process_tlp_ack`.
    fn process_tlp_ack(&mut self, ack: u32, flag: u32) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || flag & FLAG_DSACK_TLP != 0 {
            self.tlp_high_seq = None;
        } else if ack > high {
            // The probe repaired a loss: reduce once.
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
        } else if flag & (FLAG_SND_UNA_ADVANCED | FLAG_WIN_UPDATE | FLAG_DATA_SACKED) == 0 {
            // A pure duplicate (not FLAG_NOT_DUP, no new SACK): original and probe arrived.
            self.tlp_high_seq = None;
        }
    }

    /// `tcp_update_pacing_rate`.
    fn update_pacing_rate(&mut self) {
        let sk = &mut self.sk;
        let ratio: u64 = if sk.snd_cwnd < sk.snd_ssthresh / 2 {
            self.spec.pacing_ss_ratio as u64
        } else {
            self.spec.pacing_ca_ratio as u64
        };
        let mut rate = sk.mss as u64 * ((1_000_000 / 100) << 3) * ratio;
        rate *= sk.snd_cwnd.max(sk.packets_out) as u64;
        if let Some(r) = rate.checked_div(self.rtt.srtt_us) {
            rate = r;
        }
        sk.pacing_rate = rate.min(sk.max_pacing_rate);
    }

    // ---------------------------------------------------------------- ACK processing

    /// `tcp_ack`.
    fn on_ack(&mut self, p: &Packet, now: SimTime, out: &mut Vec<Packet>) {
        let ack = p.ack;
        if ack < self.sk.snd_una || ack > self.sk.snd_nxt {
            return;
        }
        self.stats.acks_received += 1;
        // tcp_ack_update_window (tcp_may_update_window: the ACK advances, or the window
        // grows or closes; a pure receiver's sequence number never moves).
        let win_update = ack > self.sk.snd_una || p.wnd as u64 > self.snd_wnd || p.wnd == 0;
        if win_update {
            self.snd_wnd = p.wnd as u64;
            self.max_window = self.max_window.max(self.snd_wnd);
        }
        let prior_snd_una = self.sk.snd_una;
        let prior_delivered = self.sk.delivered;
        let prior_lost = self.sk.lost;
        let prior_fack = self.sacked.highest_end().max(prior_snd_una);
        self.rcv_tsecr = p.ts_ecr;
        self.rs = RateSample {
            prior_in_flight: self.sk.packets_in_flight(),
            rtt: -1,
            delivered: -1,
            interval: -1,
            ..Default::default()
        };
        self.rate.have_prior = false;
        let mut flag = if win_update { FLAG_WIN_UPDATE } else { 0 };
        if ack > prior_snd_una {
            flag |= FLAG_SND_UNA_ADVANCED;
            self.retransmits = 0;
        }
        let min_rtt = self.sk.min_rtt;
        // SACK blocks (tcp_sacktag_write_queue).
        let mut first_sackt = NEVER;
        let mut last_sackt = NEVER;
        if p.n_sack > 0 {
            let mut reord = self.sk.snd_nxt;
            if p.dsack {
                self.stats.dsacks_received += 1;
                self.check_dsack(p, prior_snd_una, &mut flag, &mut reord);
            }
            // A DSACK block is tagged too (`tcp_sacktag_walk` with `dup_sack`): the part above
            // snd_una that earlier blocks never reported is SACKed by it.
            for i in 0..p.n_sack as usize {
                let (s, e) = p.sack[i];
                let s = s.max(ack);
                let e = e.min(self.sk.snd_nxt);
                if s >= e {
                    continue;
                }
                // Tag only the parts not SACKed before (the range set is taken out while
                // its callback updates the scoreboard).
                let mut ranges = std::mem::take(&mut self.sacked);
                ranges.add(s, e, |a, b| {
                    for seq in a..b {
                        flag |= self.sacktag_one(
                            seq,
                            now,
                            min_rtt,
                            prior_fack,
                            &mut reord,
                            &mut first_sackt,
                            &mut last_sackt,
                        );
                    }
                });
                self.sacked = ranges;
            }
            // End of `tcp_sacktag_write_queue` (not in Loss, unless undo is still possible).
            if self.sk.ca_state != CaState::Loss || self.undo_marker.is_some() {
                self.check_sack_reordering(reord);
            }
        }
        // Cumulative ACK (tcp_clean_rtx_queue).
        let prior_sacked = self.sk.sacked_out;
        let mut reord = self.sk.snd_nxt;
        let mut first_ackt = NEVER;
        let mut last_ackt = NEVER;
        let mut pkts_acked = 0u32;
        while self.sk.snd_una < ack {
            let seq = self.sk.snd_una;
            self.ts_unlink(seq);
            let mut s = self.segs.pop_front().expect("segment below snd_nxt");
            self.sk.snd_una += 1;
            self.sk.packets_out -= 1;
            pkts_acked += 1;
            // A SACKed segment may still count its retransmission in flight.
            if s.st & S_RETRANS != 0 {
                self.sk.retrans_out -= 1;
            }
            if s.st & S_SACKED != 0 {
                self.sk.sacked_out -= 1;
            } else {
                if s.st & S_LOST != 0 {
                    self.sk.lost_out -= 1;
                }
                self.sk.delivered += 1;
                // Not for a retransmission whose ACK echoes a timestamp from before it: the
                // original arrived (`tcp_skb_spurious_retrans`).
                let spurious = s.st & S_EVER_RETRANS != 0 && self.tsecr_before(s.tx_time);
                if !spurious {
                    self.rack
                        .advance(s.st & S_EVER_RETRANS != 0, seq + 1, s.tx_time, now, min_rtt);
                }
                if s.st & S_EVER_RETRANS == 0 {
                    reord = reord.min(seq);
                }
            }
            if s.st & S_EVER_RETRANS != 0 {
                flag |= FLAG_RETRANS_DATA_ACKED;
            } else if s.st & S_SACKED == 0 {
                last_ackt = s.tx_time;
                if first_ackt == NEVER {
                    first_ackt = s.tx_time;
                }
                if seq < self.sk.high_seq {
                    flag |= FLAG_ORIG_SACK_ACKED;
                }
            }
            self.rate.on_delivered(
                &mut self.rs,
                &mut s.tx,
                s.tx_time,
                seq + 1,
                s.st & S_EVER_RETRANS != 0,
                false,
            );
        }
        if pkts_acked > 0 {
            self.sacked.trim_below(ack);
            flag |= FLAG_SET_XMIT_TIMER;
            // A hole filled by data never retransmitted (`tcp_clean_rtx_queue`).
            if reord < prior_fack {
                self.check_sack_reordering(reord);
            }
        }
        self.rack
            .update_reo_wnd(self.rs.prior_delivered, self.sk.delivered);
        // RTT (tcp_ack_update_rtt).
        let mut seq_rtt: i64 = -1;
        let mut ca_rtt: i64 = -1;
        if first_ackt != NEVER && flag & FLAG_RETRANS_DATA_ACKED == 0 {
            seq_rtt = (now - first_ackt) as i64;
            ca_rtt = (now - last_ackt) as i64;
            // One segment of fewer bytes than `mss_cache` (so also a full one that shares
            // its room with the AccECN option), nothing SACKed, nothing else delivered since
            // it was sent. (Linux also tests FLAG_CA_ALERT and FLAG_SYN_ACKED, on
            // tcp_clean_rtx_queue's own flags, which never hold the former; a SYN is not in
            // this queue.)
            if pkts_acked == 1
                && prior_sacked == 0
                && self.payload_of(prior_snd_una) < self.sk.mss
                && self.rs.prior_delivered + 1 == self.sk.delivered
            {
                flag |= FLAG_ACK_MAYBE_DELAYED;
            }
        }
        let mut sack_rtt: i64 = -1;
        if first_sackt != NEVER {
            sack_rtt = (now - first_sackt) as i64;
            ca_rtt = (now - last_sackt) as i64;
        }
        if seq_rtt < 0 {
            seq_rtt = sack_rtt;
        }
        if seq_rtt < 0 && pkts_acked > 0 && p.ts_ecr > 0 {
            // Timestamp fallback (ms resolution, TCP_TS_HZ = 1000).
            let d = (now / MS).saturating_sub(p.ts_ecr / MS).max(1);
            seq_rtt = (d * MS) as i64;
            ca_rtt = seq_rtt;
        }
        self.rs.rtt = ca_rtt;
        // A SACK of data sent before the head's last transmission re-arms the timers too
        // (`tcp_clean_rtx_queue`), so the RTO counts from that transmission.
        if pkts_acked == 0
            && sack_rtt >= 0
            && self.sk.snd_una < self.sk.snd_nxt
            && sack_rtt as u64 > now - self.seg(self.sk.snd_una).tx_time
        {
            flag |= FLAG_SET_XMIT_TIMER;
        }
        if seq_rtt >= 0 {
            // tcp_update_rtt_min: a sample that may carry a delayed ACK's wait never enters
            // the filter above its minimum.
            let ca_us = ((ca_rtt.max(0) as u64) / US).max(1);
            if flag & FLAG_ACK_MAYBE_DELAYED == 0 || ca_us * US <= self.min_rtt.get() {
                self.min_rtt.running_min(MIN_RTT_WIN, now, ca_us * US);
            }
            let rto_min_us = self.rto_min() / US;
            self.rtt.sample(
                ((seq_rtt as u64) / US).max(1),
                self.sk.snd_una,
                self.sk.snd_nxt,
                rto_min_us,
            );
            self.rto = self.jiffies(self.rtt.rto());
            self.backed_off = false;
            self.sync_rtt();
        }
        // ECN feedback.
        let newly = (self.sk.delivered - prior_delivered) as u32;
        let ece_delta = match self.sk.ecn_mode {
            EcnMode::None => 0,
            EcnMode::Rfc3168 => {
                if p.has(flags::ECE) {
                    flag |= FLAG_ECE;
                    newly
                } else {
                    0
                }
            }
            EcnMode::AccEcn => {
                let d = ecn::ace_delta(p.ace(), self.sk.delivered_ce, newly);
                if d > 0 {
                    flag |= FLAG_ECE;
                }
                d
            }
        };
        self.sk.delivered_ce += ece_delta as u64;
        self.rs.ece_delta = ece_delta;
        // pkts_acked hook (tcp_clean_rtx_queue). Linux fills `in_flight` with
        // `mss * (tp->delivered - rs->prior_delivered)`; here in segments.
        let in_flight = (self.sk.delivered - self.rs.prior_delivered) as u32;
        let sample = AckSample {
            pkts_acked,
            rtt: ca_rtt,
            in_flight,
        };
        self.cc.pkts_acked(&mut self.sk, &sample);
        self.cc.in_ack_event(&mut self.sk, flag & FLAG_ECE != 0);
        // The tail loss probe's outcome, then loss detection and the CA state machine (5.15's
        // `tcp_ack` order).
        self.process_tlp_ack(ack, flag);
        // tcp_ack_is_dubious: not FLAG_NOT_DUP (nothing ACKed, no window update; a pure
        // receiver's ACKs carry no data), or FLAG_CA_ALERT, or not Open.
        let dubious = (pkts_acked == 0 && flag & FLAG_WIN_UPDATE == 0)
            || flag & (FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK) != 0
            || self.sk.ca_state != CaState::Open;
        let mut rexmit = Rexmit::None;
        if dubious {
            // A duplicate ACK: no progress, no window update, no DSACK (`num_dupack`).
            let num_dupack = flag & (FLAG_SND_UNA_ADVANCED | FLAG_DSACKING_ACK | FLAG_WIN_UPDATE)
                == 0
                && pkts_acked == 0;
            rexmit = self.fastretrans_alert(now, &mut flag, prior_snd_una, num_dupack);
        }
        if flag & FLAG_SET_XMIT_TIMER != 0 {
            self.set_xmit_timer(now);
        }
        // Rate sample and congestion control (tcp_cong_control).
        let lost = (self.sk.lost - prior_lost) as u32;
        self.rs.is_ack_delayed = flag & FLAG_ACK_MAYBE_DELAYED != 0;
        self.rate
            .generate(&mut self.sk, &mut self.rs, newly, lost, now);
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.sk, &self.rs);
        } else {
            if self.in_cwnd_reduction() {
                let una_adv = flag & FLAG_SND_UNA_ADVANCED != 0;
                self.prr.reduce(&mut self.sk, newly, lost, una_adv);
            } else if self.may_raise_cwnd(flag, pkts_acked) {
                self.cc.cong_avoid(&mut self.sk, ack, newly);
            }
            self.update_pacing_rate();
        }
        // Completion of a sized transfer.
        if self.sk.snd_una >= self.total_segs {
            self.stats.completed_at = now;
            self.phase = Phase::Done;
            self.timer = None;
            self.pace_at = NEVER;
            return;
        }
        self.xmit_recovery(rexmit, now, out);
        self.write_xmit(now, out, false);
    }

    /// `tcp_check_dsack` with `tcp_dsack_seen` for the ACK's first SACK block, which the
    /// receiver marked a DSACK (RFC 2883): the duplicate counts as delivered, a DSACK of a
    /// retransmission proves it spurious (`undo_retrans`), and one that may come from
    /// reordering widens RACK's window. DSACKs for more segments than were ever
    /// retransmitted are ignored as dubious.
    #[cold]
    fn check_dsack(&mut self, p: &Packet, prior_snd_una: u32, flag: &mut u32, reord: &mut u32) {
        let (start, end) = p.sack[0];
        let below_ack = start < p.ack;
        let inside_next = p.n_sack > 1 && end <= p.sack[1].1 && start >= p.sack[1].0;
        if !(below_ack || inside_next) || start >= end {
            return;
        }
        let dup_segs = end - start;
        if dup_segs as u64 * self.mss_now as u64 > self.max_window {
            return;
        }
        if dup_segs == 1 && self.tlp_high_seq == Some(end) {
            *flag |= FLAG_DSACK_TLP;
        }
        self.dsack_dups += dup_segs as u64;
        if self.dsack_dups > self.stats.retrans {
            return;
        }
        if self.rack.reord_seen > 0 && *flag & FLAG_DSACK_TLP == 0 {
            self.rack.dsack_seen = true;
        }
        *flag |= FLAG_DSACKING_ACK;
        // A spurious retransmission is delivered (`sack_delivered`).
        self.sk.delivered += dup_segs as u64;
        let marker = self.undo_marker;
        if end <= prior_snd_una {
            // Already acknowledged: count without looking (`tcp_check_dsack`).
            if marker.is_some_and(|m| self.undo_retrans > 0 && end > m) {
                self.undo_retrans = (self.undo_retrans - dup_segs as i32).max(0);
            }
            return;
        }
        // Still in the retransmission queue: each retransmitted segment it covers
        // (`tcp_sacktag_one` with `dup_sack`).
        for seq in start.max(self.sk.snd_una)..end.min(self.sk.snd_nxt) {
            let st = self.seg(seq).st;
            if st & (S_RETRANS | S_EVER_RETRANS) == 0 {
                continue;
            }
            if marker.is_some_and(|m| self.undo_retrans > 0 && seq + 1 > m) {
                self.undo_retrans -= 1;
            }
            // A SACKed segment's retransmission DSACKed: the original had arrived late.
            if st & S_SACKED != 0 {
                *reord = (*reord).min(seq);
            }
            // The retransmission was redundant: no longer in flight (above the new ACK;
            // below it the cumulative ACK clears it).
            if st & S_RETRANS != 0 && seq >= p.ack {
                self.seg_mut(seq).st &= !S_RETRANS;
                self.sk.retrans_out -= 1;
            }
        }
    }

    /// `tcp_sacktag_one` for a newly SACKed segment.
    fn sacktag_one(
        &mut self,
        seq: u32,
        now: SimTime,
        min_rtt: u64,
        prior_fack: u32,
        reord: &mut u32,
        first_sackt: &mut SimTime,
        last_sackt: &mut SimTime,
    ) -> u32 {
        let i = self.idx(seq);
        let st = self.segs[i].st;
        if st & S_SACKED != 0 {
            return 0;
        }
        let mut flag = FLAG_DATA_SACKED;
        let tx_time = self.segs[i].tx_time;
        self.rack
            .advance(st & S_EVER_RETRANS != 0, seq + 1, tx_time, now, min_rtt);
        // A retransmission not marked lost is believed still in flight: it keeps
        // SACKED_RETRANS (and its count in `retrans_out`) until the cumulative ACK or a DSACK.
        let mut clear = S_LOST;
        if st & S_RETRANS != 0 {
            if st & S_LOST != 0 {
                self.sk.lost_out -= 1;
                self.sk.retrans_out -= 1;
                clear |= S_RETRANS;
            }
        } else {
            if st & S_EVER_RETRANS == 0 {
                if seq < prior_fack {
                    *reord = (*reord).min(seq);
                }
                *last_sackt = tx_time;
                if *first_sackt == NEVER {
                    *first_sackt = tx_time;
                }
                if seq < self.sk.high_seq {
                    flag |= FLAG_ORIG_SACK_ACKED;
                }
            }
            if st & S_LOST != 0 {
                self.sk.lost_out -= 1;
            }
        }
        self.segs[i].st = (st | S_SACKED) & !clear;
        self.sk.sacked_out += 1;
        self.sk.delivered += 1;
        self.ts_unlink(seq);
        let mut tx = self.segs[i].tx;
        self.rate.on_delivered(
            &mut self.rs,
            &mut tx,
            tx_time,
            seq + 1,
            st & S_EVER_RETRANS != 0,
            true,
        );
        self.segs[i].tx = tx;
        flag
    }

    /// Segments sent and not yet known delivered or lost (`tcp_packets_in_flight`).
    pub fn in_flight(&self) -> u64 {
        self.sk.packets_in_flight() as u64
    }
    /// Current RTO, ns (with backoff).
    pub fn rto(&self) -> SimDuration {
        self.rto
    }
    /// The TCP metrics cache's entry for this host pair, read when the SYN/ACK arrives
    /// (`tcp_init_metrics`; see `metrics.rs`).
    #[cold]
    pub fn set_cached_metrics(&mut self, m: Option<TcpMetrics>) {
        if self.phase == Phase::SynSent {
            self.cached_metrics = m;
        }
    }
    /// The state `tcp_update_metrics` reads when the connection ends.
    #[cold]
    pub fn metrics_ending(&self) -> metrics::Ending {
        let ssthresh = self.sk.snd_ssthresh;
        metrics::Ending {
            srtt_us8: self.rtt.srtt_us,
            backed_off: self.backed_off,
            initial_slow_start: ssthresh >= crate::cc::INFINITE_SSTHRESH,
            open_avoidance: self.sk.snd_cwnd >= ssthresh && self.sk.ca_state == CaState::Open,
            reordering: self.reordering,
        }
    }
    /// The data sender's and the receiver's hosts.
    pub fn hosts(&self) -> (u32, u32) {
        (self.params.sender, self.params.receiver)
    }
    /// The rate sample of the last ACK.
    #[cfg(test)]
    pub(crate) fn rate_sample(&self) -> &RateSample {
        &self.rs
    }
    /// Segment `seq`'s last send time and the packets in flight it recorded (`tx.in_flight`).
    #[cfg(test)]
    pub(crate) fn tx_in_flight(&self, seq: u32) -> (SimTime, u32) {
        let s = self.seg(seq);
        (s.tx_time, s.tx.in_flight)
    }
    /// The tail loss probe's timer fires now (`tcp_send_loss_probe`).
    #[cfg(test)]
    pub(crate) fn fire_loss_probe(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.send_loss_probe(now, out);
    }

    /// Arm the tail loss probe (`tcp_schedule_loss_probe`) or, with `tlp` false, the RTO
    /// (`tcp_rearm_rto`) now; returns the deadline.
    #[cfg(test)]
    pub(crate) fn arm_xmit_timer(&mut self, tlp: bool, now: SimTime) -> SimTime {
        self.timer = None;
        if tlp {
            assert!(self.schedule_loss_probe(now, true));
        } else {
            self.rearm_rto(now);
        }
        self.timer.expect("armed").1
    }
    /// `tcp_try_undo_loss`'s undo, which unmarks every loss, for tests of what follows it.
    #[cfg(test)]
    pub(crate) fn undo_unmarking_losses(&mut self) {
        self.undo_cwnd_reduction(true);
    }
    /// The scoreboard's counters against its segments' flags (`tcp_verify_left_out` and
    /// more): `packets_out`, `sacked_out`, `lost_out` and `retrans_out` recounted, and one
    /// loss event for the CC per segment counted lost (`tcp_notify_skb_loss_event`).
    #[cfg(test)]
    pub(crate) fn scoreboard_error(&self) -> Option<String> {
        let count = |bit: u8| self.segs.iter().filter(|s| s.st & bit != 0).count() as u32;
        let sk = &self.sk;
        let seen = (sk.packets_out, sk.sacked_out, sk.lost_out, sk.retrans_out);
        let want = (
            self.segs.len() as u32,
            count(S_SACKED),
            count(S_LOST),
            count(S_RETRANS),
        );
        if self.loss_events != sk.lost {
            return Some(format!(
                "{} loss events for tp->lost = {}",
                self.loss_events, sk.lost
            ));
        }
        (seen != want).then(|| {
            format!("packets/sacked/lost/retrans_out {seen:?}, segments' flags say {want:?}")
        })
    }
    #[cfg(test)]
    pub(crate) fn rack(&self) -> &Rack {
        &self.rack
    }
    #[cfg(test)]
    pub(crate) fn reordering(&self) -> u32 {
        self.reordering
    }
    /// Whether `tcp_tso_should_defer` would hold the unsent rest of the transfer at `now`
    /// with window for all of it, the connection kept open or not.
    #[cfg(test)]
    pub(crate) fn would_defer_the_tail(&mut self, now: SimTime, keep_open: bool) -> bool {
        let left = self.total_segs - self.sk.snd_nxt;
        self.keep_open = keep_open;
        self.tso_should_defer(now, left, left + 1, left)
    }
    /// Whether `tcp_tso_should_defer` would hold an skb one segment larger than `limit`, the
    /// window space, at `now`; and the receive window in segments.
    #[cfg(test)]
    pub(crate) fn would_defer(&self, now: SimTime, limit: u32) -> bool {
        self.tso_should_defer(now, limit, limit + 2, limit + 1)
    }
    #[cfg(test)]
    pub(crate) fn snd_wnd_segs(&self) -> u32 {
        (self.snd_wnd / self.mss_now as u64) as u32
    }
}
