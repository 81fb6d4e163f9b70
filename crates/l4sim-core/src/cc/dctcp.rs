//! DCTCP, following Linux `net/ipv4/tcp_dctcp.c` (and `tcp_dctcp.h` for the receiver's
//! CE echo), RFC 8257.
//!
//! Modelled: `TCP_CONG_NEEDS_ECN`; the DCTCP-style receiver echo flag; alpha as a 10-bit
//! fraction (1024 = 1.0, initial `dctcp_alpha_on_init`), updated once per window of data
//! from `in_ack_event` with the `delivered`/`delivered_ce` deltas and gain 2^-`shift_g`;
//! `ssthresh = max(cwnd - cwnd*alpha/2048, 2)` on CWR; `max(cwnd/2, 2)` on loss (entering
//! Recovery or an RTO); Reno increase; undo to `max(cwnd, loss_cwnd)`. Data is ECT(0) as in
//! mainline. Without ECN negotiated the socket becomes `dctcp-reno` (Reno, Not-ECT).

use serde::{Deserialize, Serialize};

use super::{reno::Reno, CaEvent, CaState, CcFlags, CongestionControl, EcnMode, Sock};

/// `DCTCP_MAX_ALPHA`.
const MAX_ALPHA: u32 = 1024;

/// Module parameters of `tcp_dctcp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DctcpParams {
    /// EWMA gain g = 2^-shift_g.
    pub shift_g: u32,
    /// Initial alpha in 1/1024.
    pub alpha_on_init: u32,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams {
            shift_g: 4,
            alpha_on_init: 1024,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    p: DctcpParams,
    /// Set by `init` when ECN was not negotiated: the ops become `dctcp-reno`.
    reno: bool,
    alpha: u32,
    old_delivered: u64,
    old_delivered_ce: u64,
    next_seq: u32,
    loss_cwnd: u32,
}

impl Dctcp {
    pub fn new(p: DctcpParams) -> Dctcp {
        let alpha = p.alpha_on_init.min(MAX_ALPHA);
        Dctcp {
            p,
            reno: false,
            alpha,
            old_delivered: 0,
            old_delivered_ce: 0,
            next_seq: 0,
            loss_cwnd: 0,
        }
    }

    /// Alpha as a fraction in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / MAX_ALPHA as f64
    }

    /// `dctcp_reset`: start a new observation window.
    fn reset_window(&mut self, sk: &Sock) {
        self.next_seq = sk.snd_nxt;
        self.old_delivered = sk.delivered;
        self.old_delivered_ce = sk.delivered_ce;
    }

    /// `dctcp_react_to_loss`.
    fn react_to_loss(&mut self, sk: &mut Sock) {
        self.loss_cwnd = sk.snd_cwnd;
        sk.snd_ssthresh = (sk.snd_cwnd >> 1).max(2);
    }
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp::new(DctcpParams::default())
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        if self.reno {
            "dctcp-reno"
        } else {
            "dctcp"
        }
    }

    /// `dctcp-reno` has no flags; DCTCP needs ECN and echoes CE DCTCP-style.
    fn flags(&self) -> CcFlags {
        if self.reno {
            return CcFlags::default();
        }
        CcFlags {
            needs_ecn: true,
            dctcp_echo: true,
            ..CcFlags::default()
        }
    }

    /// `dctcp_init`: without ECN fall back to `dctcp-reno` (Not-ECT).
    fn init(&mut self, sk: &mut Sock) {
        sk.ect1 = false;
        if sk.ecn_mode == EcnMode::None {
            self.reno = true;
            return;
        }
        self.reno = false;
        self.alpha = self.p.alpha_on_init.min(MAX_ALPHA);
        self.loss_cwnd = 0;
        self.reset_window(sk);
    }

    /// `dctcp_ssthresh`: `cwnd * (1 - alpha/2)`.
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        if self.reno {
            return Reno.ssthresh(sk);
        }
        self.loss_cwnd = sk.snd_cwnd;
        let cwnd = sk.snd_cwnd as u64;
        (cwnd - ((cwnd * self.alpha as u64) >> 11)).max(2) as u32
    }

    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        Reno.cong_avoid(sk, ack, acked)
    }

    /// `dctcp_state`: entering Recovery halves ssthresh (overriding the alpha-based one the
    /// core just set).
    fn set_state(&mut self, sk: &mut Sock, new: CaState) {
        if self.reno {
            return;
        }
        if new == CaState::Recovery && new != sk.ca_state {
            self.react_to_loss(sk);
        }
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        if !self.reno && ev == CaEvent::Loss {
            self.react_to_loss(sk);
        }
    }

    /// `dctcp_update_alpha`: once per window, alpha <- (1-g) alpha + g F.
    fn in_ack_event(&mut self, sk: &mut Sock, _ece: bool) {
        if self.reno {
            return;
        }
        if (sk.snd_una.wrapping_sub(self.next_seq) as i32) < 0 {
            return;
        }
        let mut delivered_ce = sk.delivered_ce - self.old_delivered_ce;
        let mut alpha = self.alpha;
        // min_not_zero(alpha, alpha >> g): alpha < 2^g drops straight to 0.
        let dec = alpha >> self.p.shift_g;
        alpha -= if dec == 0 { alpha } else { dec };
        if delivered_ce > 0 {
            let delivered = (sk.delivered - self.old_delivered).max(1);
            delivered_ce <<= 10 - self.p.shift_g.min(10);
            delivered_ce /= delivered;
            alpha = (alpha as u64 + delivered_ce).min(MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.reset_window(sk);
    }

    /// `dctcp_cwnd_undo`.
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        if self.reno {
            return sk.snd_cwnd.max(sk.prior_cwnd);
        }
        sk.snd_cwnd.max(self.loss_cwnd)
    }

    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("alpha", self.alpha()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ecn_sock() -> Sock {
        let mut sk = Sock::new(1448);
        sk.ecn_mode = EcnMode::AccEcn;
        sk.snd_cwnd = 100;
        sk
    }

    /// One window: `n` segments delivered, `marked` of them CE, then the window-end ACK.
    fn window(d: &mut Dctcp, sk: &mut Sock, n: u32, marked: u32) {
        sk.snd_nxt += n;
        sk.delivered += n as u64;
        sk.delivered_ce += marked as u64;
        sk.snd_una = sk.snd_nxt;
        d.in_ack_event(sk, marked > 0);
    }

    #[test]
    fn alpha_converges_to_marking_fraction() {
        let mut d = Dctcp::default();
        let mut sk = ecn_sock();
        d.init(&mut sk);
        assert_eq!(d.alpha(), 1.0);
        for _ in 0..200 {
            window(&mut d, &mut sk, 100, 20);
        }
        assert!((d.alpha() - 0.2).abs() < 0.02, "alpha {}", d.alpha());
        for _ in 0..200 {
            window(&mut d, &mut sk, 100, 0);
        }
        assert_eq!(d.alpha(), 0.0);
    }

    #[test]
    fn alpha_updates_only_once_per_window() {
        let mut d = Dctcp::default();
        let mut sk = ecn_sock();
        sk.snd_nxt = 100;
        d.init(&mut sk);
        sk.snd_una = 50;
        sk.delivered = 50;
        d.in_ack_event(&mut sk, false);
        assert_eq!(d.alpha, 1024);
        sk.snd_una = 100;
        sk.delivered = 100;
        d.in_ack_event(&mut sk, false);
        assert_eq!(d.alpha, 1024 - 64);
    }

    #[test]
    fn ssthresh_is_cwnd_times_one_minus_half_alpha() {
        let mut d = Dctcp::default();
        let mut sk = ecn_sock();
        d.init(&mut sk);
        d.alpha = 512;
        sk.snd_cwnd = 100;
        assert_eq!(d.ssthresh(&mut sk), 75);
        d.alpha = 1024;
        assert_eq!(d.ssthresh(&mut sk), 50);
        d.alpha = 0;
        assert_eq!(d.ssthresh(&mut sk), 100);
    }

    #[test]
    fn loss_halves_ssthresh() {
        let mut d = Dctcp::default();
        let mut sk = ecn_sock();
        d.init(&mut sk);
        d.alpha = 100;
        sk.snd_ssthresh = d.ssthresh(&mut sk);
        d.set_state(&mut sk, CaState::Recovery);
        assert_eq!(sk.snd_ssthresh, 50);
    }

    #[test]
    fn without_ecn_becomes_dctcp_reno_not_ect() {
        let mut d = Dctcp::default();
        let mut sk = Sock::new(1448);
        sk.snd_cwnd = 100;
        assert!(d.flags().needs_ecn);
        d.init(&mut sk);
        assert_eq!(d.name(), "dctcp-reno");
        assert!(!sk.ect1);
        assert_eq!(d.ssthresh(&mut sk), 50);
    }
}
