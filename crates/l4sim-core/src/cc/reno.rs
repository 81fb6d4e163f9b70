//! TCP Reno / NewReno (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh` in tcp_cong.c).

use super::{CongestionControl, Sock};

#[derive(Clone, Debug, Default)]
pub struct Reno;

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    /// `tcp_reno_ssthresh`: half the window, at least 2.
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        (sk.snd_cwnd >> 1).max(2)
    }
    /// `tcp_reno_cong_avoid`: slow start, then +1 segment per window of ACKed segments.
    fn cong_avoid(&mut self, sk: &mut Sock, _ack: u32, acked: u32) {
        if !sk.cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if sk.in_slow_start() {
            acked = sk.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let w = sk.snd_cwnd;
        sk.cong_avoid_ai(w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_doubles_per_window() {
        let mut sk = Sock::new(1448);
        sk.max_packets_out = sk.snd_cwnd; // a full window out: cwnd-limited in slow start
        let mut r = Reno;
        r.cong_avoid(&mut sk, 0, 10);
        assert_eq!(sk.snd_cwnd, 20);
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window() {
        let mut sk = Sock::new(1448);
        sk.is_cwnd_limited = true;
        sk.snd_cwnd = 20;
        sk.snd_ssthresh = 20;
        let mut r = Reno;
        for _ in 0..20 {
            r.cong_avoid(&mut sk, 0, 1);
        }
        assert_eq!(sk.snd_cwnd, 21);
    }

    #[test]
    fn ssthresh_halves_the_window() {
        let mut sk = Sock::new(1448);
        sk.snd_cwnd = 31;
        assert_eq!(Reno.ssthresh(&mut sk), 15);
        sk.snd_cwnd = 3;
        assert_eq!(Reno.ssthresh(&mut sk), 2);
    }
}
