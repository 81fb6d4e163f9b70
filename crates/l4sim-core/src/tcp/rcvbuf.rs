//! The receiver's buffer and advertised window, as Linux 5.15 sizes them.
//!
//! - Set-up: `tcp_select_initial_window` (window scale from `tcp_rmem[2]`, the SYN/ACK window
//!   of `tcp_full_space` rounded down to whole segments) and `tcp_init_buffer_space`
//!   (`window_clamp` = full space less one segment, `tcp_app_win` = 31).
//! - Per data segment: `tcp_grow_window` (`rcv_ssthresh` += 2 x advmss up to
//!   min(`window_clamp`, `tcp_space`); each raise puts the ACK engine in quick-ACK mode,
//!   `icsk_ack.quick |= 1`), `tcp_rcv_rtt_measure` and `tcp_rcv_rtt_measure_ts` (the
//!   receiver's RTT estimate, `tcp_rcv_rtt_update`).
//! - Per read: `tcp_rcv_space_adjust` (dynamic right-sizing: once per receiver RTT the buffer
//!   grows to hold twice the bytes read in that RTT plus 16 segments, plus twice the growth,
//!   up to `tcp_rmem[2]`, and `window_clamp` follows).
//! - Per ACK: `__tcp_select_window` / `tcp_select_window` (the free space, at most
//!   `rcv_ssthresh`, aligned to the window scale, never shrinking what was offered).
//!
//! `tcp_adv_win_scale` = 1 (half the buffer is window). The application reads in-order data
//! at once (iperf3), so only out-of-order segments hold receive memory, each the kernel's
//! own estimate `SKB_TRUESIZE(advmss + MAX_TCP_HEADER)`; a segment's truesize is taken to be
//! within twice its length (drivers with 2 KB receive buffers), `tcp_grow_window`'s fast path.
//! No memory pressure.

use crate::packet::hdr;
use crate::time::{SimTime, MS, US};

/// `MAX_TCP_HEADER` on x86-64 (`L1_CACHE_BYTES` + 128 + ... as 5.15 builds it).
const MAX_TCP_HEADER: u32 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` + `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`.
const SKB_OVERHEAD: u32 = 256 + 320;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u64 = 10;
/// `sysctl_tcp_app_win`.
const TCP_APP_WIN: u32 = 31;
/// `sysctl_rmem_max` default.
const RMEM_MAX: u64 = 212_992;

/// `tcp_win_from_space` with `tcp_adv_win_scale` = 1.
fn win_from_space(space: i64) -> i64 {
    space - (space >> 1)
}

/// Receive-side buffer and window state of one connection (bytes).
#[derive(Clone, Debug)]
pub struct RcvBuf {
    rmem_max: u64,
    moderate: bool,
    advmss: u64,
    /// Per out-of-order segment held in memory.
    truesize: u64,
    /// `tcp_rcv_space_adjust`'s memory per segment: the truesize, raised in 128-byte steps
    /// until half of it holds one advmss (2996 bytes for a 1460-byte advmss).
    rcvmem: u64,
    wscale: u32,
    rcvbuf: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    /// Window offered with the last ACK, and `rcv_wup` (bytes received in order then).
    rcv_wnd: u64,
    rcv_wup: u64,
    /// `rcvq_space`: bytes read in the last measured RTT, read position and time then.
    space: u64,
    space_seq: u64,
    space_time: SimTime,
    /// `rcv_rtt_est`: 8 x RTT in us (0: none yet), and the per-window measurement.
    rtt_us8: u64,
    rtt_seq: u64,
    rtt_time: SimTime,
    last_tsecr_ms: u64,
}

impl RcvBuf {
    /// A listener's socket for a path MSS of `mss` payload bytes (timestamps on), with
    /// `net.ipv4.tcp_rmem` = `rmem` and `tcp_moderate_rcvbuf` = `moderate`.
    pub fn new(rmem: [u32; 3], moderate: bool, mss: u32) -> RcvBuf {
        let advmss = (mss + hdr::TSTAMP_ALIGNED) as u64; // advmss counts no options
        let rcvbuf = rmem[1] as u64;
        let truesize = advmss + (MAX_TCP_HEADER + SKB_OVERHEAD) as u64;
        let mut rcvmem = truesize as i64;
        while win_from_space(rcvmem) < advmss as i64 {
            rcvmem += 128;
        }
        // tcp_select_initial_window: scale for the largest buffer the socket may get.
        let max_space = (rmem[2] as u64).max(RMEM_MAX);
        let wscale = (63 - max_space.leading_zeros()).saturating_sub(15).min(14);
        let full = win_from_space(rcvbuf as i64).max(0) as u64;
        let mss = mss as u64;
        let rcv_wnd = if full > mss { full - full % mss } else { full }.min(65_535);
        // tcp_init_buffer_space: clamp to the full space, reserve one segment.
        let mut clamp = full;
        if TCP_APP_WIN > 0 && clamp > 2 * advmss && clamp + advmss > full {
            clamp = (2 * advmss).max(full - advmss);
        }
        RcvBuf {
            rmem_max: rmem[2] as u64,
            moderate,
            advmss,
            truesize,
            rcvmem: rcvmem as u64,
            wscale,
            rcvbuf,
            window_clamp: clamp,
            rcv_ssthresh: rcv_wnd.min(clamp),
            rcv_wnd,
            rcv_wup: 0,
            space: rcv_wnd.min(clamp).min(TCP_INIT_CWND * advmss),
            space_seq: 0,
            space_time: 0,
            rtt_us8: 0,
            rtt_seq: 0,
            rtt_time: 0,
            last_tsecr_ms: u64::MAX,
        }
    }

    /// The window last advertised (`tp->rcv_wnd`), bytes; before the first ACK, the SYN/ACK's
    /// (unscaled, at most 65535).
    pub fn rcv_wnd(&self) -> u64 {
        self.rcv_wnd
    }

    /// The connection is established (`tcp_init_buffer_space`'s `rcvq_space` stamp).
    pub fn established(&mut self, now: SimTime) {
        self.space_time = now;
    }

    /// `tcp_space` / `tcp_full_space`, with `ooo_segs` segments held out of order.
    fn free_space(&self, ooo_segs: u64) -> i64 {
        win_from_space(self.rcvbuf as i64 - (ooo_segs * self.truesize) as i64)
    }
    fn full_space(&self) -> u64 {
        win_from_space(self.rcvbuf as i64) as u64
    }

    /// `tcp_grow_window` for a segment of `len` payload bytes; true when `rcv_ssthresh` rose
    /// (the caller's quick-ACK `icsk_ack.quick |= 1`).
    pub fn grow(&mut self, len: u32, ooo_segs: u64) -> bool {
        let bound = (self.window_clamp as i64).min(self.free_space(ooo_segs));
        let room = bound - self.rcv_ssthresh as i64;
        if room <= 0 {
            return false;
        }
        let incr = (2 * self.advmss).max(2 * len as u64);
        self.rcv_ssthresh += (room as u64).min(incr);
        true
    }

    /// `tcp_rcv_rtt_update`: `win_dep` samples only lower the estimate.
    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let cur = self.rtt_us8;
        self.rtt_us8 = if cur == 0 {
            sample_us << 3
        } else if win_dep {
            cur.min(sample_us << 3)
        } else {
            cur - (cur >> 3) + sample_us
        };
    }

    /// `tcp_rcv_rtt_measure`: the time to receive one advertised window of data, with
    /// `rcv_nxt` in bytes (`tcp_event_data_recv`).
    pub fn rtt_measure(&mut self, rcv_nxt: u64, now: SimTime) {
        if self.rtt_time != 0 {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            let d = (now.saturating_sub(self.rtt_time) / US).max(1);
            self.rtt_update(d, true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time = now.max(1);
    }

    /// `tcp_rcv_rtt_measure_ts`: a full segment echoing a new timestamp (`tsecr`, ns) gives
    /// a sample in whole ms, as `tcp_rtt_tsopt_us`.
    pub fn rtt_measure_ts(&mut self, tsecr: SimTime, full: bool, now: SimTime) {
        let ecr = tsecr / MS;
        if tsecr == 0 || ecr == self.last_tsecr_ms {
            return;
        }
        self.last_tsecr_ms = ecr;
        if full {
            let d = (now / MS).saturating_sub(ecr).max(1);
            self.rtt_update(d * 1000, false);
        }
    }

    /// `tcp_rcv_space_adjust` after the application read up to `copied` bytes.
    pub fn space_adjust(&mut self, copied: u64, now: SimTime) {
        let time = now.saturating_sub(self.space_time) / US;
        if self.rtt_us8 == 0 || time < self.rtt_us8 >> 3 {
            return;
        }
        let read = copied - self.space_seq;
        if read > self.space {
            if self.moderate {
                let mut rcvwin = 2 * read + 16 * self.advmss;
                let grow = rcvwin * (read - self.space) / self.space;
                rcvwin += grow << 1;
                let rcvbuf = ((rcvwin / self.advmss) * self.rcvmem).min(self.rmem_max);
                if rcvbuf > self.rcvbuf {
                    self.rcvbuf = rcvbuf;
                    self.window_clamp = win_from_space(rcvbuf as i64) as u64;
                }
            }
            self.space = read;
        }
        self.space_seq = copied;
        self.space_time = now;
    }

    /// `__tcp_select_window`: the window the free space allows now (bytes), and whether the
    /// buffer is more than half used (the receiver then leaves quick-ACK mode).
    fn possible_window(&self, ooo_segs: u64, rcv_mss: u32) -> (u64, bool) {
        let full_space = self.window_clamp.min(self.full_space()) as i64;
        let mss = (rcv_mss as i64).min(full_space);
        let mut free = self.free_space(ooo_segs);
        let half_full = free < full_space >> 1;
        if half_full {
            free &= !((1i64 << self.wscale) - 1);
            if free < (self.full_space() as i64 >> 4) || free < mss {
                return (0, true);
            }
        }
        let w = free.min(self.rcv_ssthresh as i64).max(0) as u64;
        (align_up(w, self.wscale), half_full)
    }

    /// `tcp_select_window` for an ACK sent with `rcv_nxt` bytes received in order: the
    /// window to offer (bytes, never shrinking the edge already offered), and whether the
    /// buffer is more than half used.
    pub fn select(&mut self, rcv_nxt: u64, ooo_segs: u64, rcv_mss: u32) -> (u64, bool) {
        let (new_win, half_full) = self.possible_window(ooo_segs, rcv_mss);
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        let win = if new_win < cur {
            align_up(cur, self.wscale)
        } else {
            new_win
        };
        self.rcv_wnd = win;
        self.rcv_wup = rcv_nxt;
        (win, half_full)
    }

    /// `tcp_cleanup_rbuf`'s window update: after a read, ACK at once when the window left
    /// is at most half the clamp and the window now possible is at least twice it.
    pub fn window_update_due(&self, rcv_nxt: u64, ooo_segs: u64, rcv_mss: u32) -> bool {
        let now_left = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        if 2 * now_left > self.window_clamp {
            return false;
        }
        let (w, half_full) = self.possible_window(ooo_segs, rcv_mss);
        !half_full && w > 0 && w >= 2 * now_left
    }

    pub fn window_clamp(&self) -> u64 {
        self.window_clamp
    }
    pub fn rcv_ssthresh(&self) -> u64 {
        self.rcv_ssthresh
    }
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }
}

/// `ALIGN(w, 1 << wscale)`.
fn align_up(w: u64, wscale: u32) -> u64 {
    let a = 1u64 << wscale;
    (w + a - 1) & !(a - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RMEM: [u32; 3] = [4096, 131_072, 6_291_456];

    #[test]
    fn initial_window_is_the_full_space_in_whole_segments() {
        let r = RcvBuf::new(RMEM, true, 1448);
        // tcp_full_space(131072) = 65536, rounded down to 45 x 1448.
        assert_eq!(r.rcv_wnd(), 65_160);
        // One segment (advmss 1460) reserved from 65536.
        assert_eq!(r.window_clamp(), 64_076);
        assert_eq!(r.rcv_ssthresh(), 64_076);
        // 6 MB needs scale 7 (2^22 <= 6291456 < 2^23).
        assert_eq!(r.wscale, 7);
        assert_eq!(r.space, 14_600);
    }

    #[test]
    fn grow_adds_two_advmss_up_to_the_clamp() {
        let mut r = RcvBuf::new(RMEM, true, 1448);
        assert!(!r.grow(1448, 0), "rcv_ssthresh starts at the clamp");
        r.window_clamp = 100_000;
        r.rcvbuf = 400_000;
        assert!(r.grow(1448, 0));
        assert_eq!(r.rcv_ssthresh(), 64_076 + 2920);
        for _ in 0..100 {
            r.grow(1448, 0);
        }
        assert_eq!(r.rcv_ssthresh(), 100_000);
    }

    #[test]
    fn drs_grows_the_buffer_to_four_times_a_doubling_rtt_and_caps_at_rmem_max() {
        let mut r = RcvBuf::new(RMEM, true, 1448);
        r.established(0);
        r.rtt_measure_ts(MS, true, 11 * MS); // 10 ms
        assert_eq!(r.rtt_us8, 80_000);
        // One RTT later 20 segments were read: 2 x 28960 + 16 x 1460 = 81280, plus twice
        // its growth over 14600 -> 241166 bytes, 165 segments of 2996 bytes.
        r.space_adjust(28_960, 10 * MS);
        assert_eq!(r.rcvbuf(), 165 * 2996);
        assert_eq!(r.window_clamp(), 165 * 2996 / 2);
        // A huge read caps the buffer at tcp_rmem[2].
        r.space_adjust(28_960 + 50_000_000, 20 * MS);
        assert_eq!(r.rcvbuf(), 6_291_456);
        assert_eq!(r.window_clamp(), 3_145_728);
    }

    #[test]
    fn the_offered_window_never_shrinks_and_holes_use_memory() {
        let mut r = RcvBuf::new(RMEM, true, 1448);
        // The SYN/ACK offered 65160 bytes: the first ACK keeps that edge (aligned).
        let (w0, _) = r.select(0, 0, 1448);
        assert_eq!(w0, align_up(65_160, 7));
        // 30 out-of-order segments hold 30 x 2356 bytes: the free space drops below half.
        let (w1, half) = r.select(1448, 30, 1448);
        assert!(half);
        assert_eq!(
            w1,
            align_up(w0 - 1448, 7),
            "keeps the right edge offered before"
        );
    }
}
