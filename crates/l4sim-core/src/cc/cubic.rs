//! CUBIC with HyStart, following Linux `net/ipv4/tcp_cubic.c` (v2.3) as 5.15.72 has it, and
//! RFC 9438 for the model. Since 4e1fddc98d25 (5.16, in 5.15.y from 5.15.6) a HyStart round
//! ends in `hystart_update`, on an ACK whose RTT HyStart samples, whether or not the flow is
//! cwnd-limited (before, `bictcp_cong_avoid` ended it, only for cwnd-limited flows).
//!
//! Modelled as in Linux:
//! - fixed-point cubic: time in 1/1024 s (`BICTCP_HZ` = 10 bit), `C = bic_scale*10/1024`,
//!   `K = cbrt(cube_factor * (W_max - cwnd))` with `cube_factor = 2^40 / (bic_scale*10)`;
//! - `epoch_start` and `last_time` in **jiffies** (the sending host's clock: its `tcp.hz` and
//!   its tick phase, drawn per host unless `tcp.jiffies_phase_us` sets it):
//!   the cubic target is recomputed at most once per jiffy and elapsed time is quantised
//!   to jiffies; `delay_min` is converted with `usecs_to_jiffies` (rounding up);
//! - `cnt` (ACKs per +1 cwnd) with the 20 cap before the first loss, the Reno-friendly
//!   estimate (`beta_scale`) and the `max(cnt, 2)` floor; growth by `tcp_cong_avoid_ai`;
//! - fast convergence, `ssthresh = max(cwnd*beta/1024, 2)`;
//! - classic HyStart (ACK train + delay), not HyStart++;
//! - full reset on entering Loss (RTO), epoch shift on `TxStart` after idle, Reno undo.
//!
//! - K by `cubic_root` (a table lookup and one Newton-Raphson step, about 0.2 % off the exact
//!   cube root), and `(t - K)^3` in 64-bit arithmetic that wraps after about 347 s of an epoch,
//!   as Linux's does.

use serde::{Deserialize, Serialize};

use super::{AckSample, CaEvent, CaState, CongestionControl, Sock};
use crate::time::{Jiffies, SEC};

/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: the cubic clock ticks at 2^10 per second.
const BICTCP_HZ: u32 = 10;
const HYSTART_ACK_TRAIN: u32 = 0x1;
const HYSTART_DELAY: u32 = 0x2;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_US: u32 = 4000;
const HYSTART_DELAY_MAX_US: u32 = 16000;
/// `GSO_MAX_SIZE` (64 KB), used by `hystart_ack_delay`.
const GSO_MAX_SIZE: u64 = 65536;

/// Module parameters of `tcp_cubic` (all optional in a scenario).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CubicParams {
    /// Multiplicative decrease, /1024.
    pub beta: u32,
    /// C = bic_scale * 10 / 1024 (41 gives 0.4).
    pub bic_scale: u32,
    pub fast_convergence: bool,
    pub tcp_friendliness: bool,
    /// Initial ssthresh when HyStart is off (0 = infinite).
    pub initial_ssthresh: u32,
    pub hystart: bool,
    /// 1 = ACK train, 2 = delay, 3 = both.
    pub hystart_detect: u32,
    pub hystart_low_window: u32,
    pub hystart_ack_delta_us: u32,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams {
            beta: 717,
            bic_scale: 41,
            fast_convergence: true,
            tcp_friendliness: true,
            initial_ssthresh: 0,
            hystart: true,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
        }
    }
}

/// Per-flow state (`struct bictcp`).
#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,
    /// The sending host's jiffies and its `CONFIG_HZ` (jiffies per second).
    clock: Jiffies,
    hz: u32,
    /// Precomputed at module load in Linux.
    beta_scale: u32,
    cube_rtt_scale: u64,
    cube_factor: u64,

    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    /// Jiffies of the last cubic recomputation.
    last_time: u64,
    bic_origin_point: u32,
    /// Time to the origin point, in 1/1024 s.
    bic_k: u32,
    /// Minimum RTT seen, us (0 = none).
    delay_min: u32,
    /// Epoch start in jiffies; `None` is Linux's `epoch_start == 0`.
    epoch_start: Option<u64>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    // HyStart
    sample_cnt: u32,
    found: bool,
    round_start: u64,
    end_seq: u32,
    last_ack: u64,
    curr_rtt: u32,
}

impl Cubic {
    /// A controller on a host with HZ 250 ticking from time 0.
    pub fn new(p: CubicParams) -> Cubic {
        Self::on_host(p, Jiffies::new(250))
    }

    /// A controller on a host whose jiffies are `clock`.
    pub fn on_host(p: CubicParams, clock: Jiffies) -> Cubic {
        let hz = (SEC / clock.jiffy()) as u32;
        let beta = p.beta.min(BETA_SCALE - 1);
        let beta_scale = 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta);
        let bic_scale = p.bic_scale.max(1) as u64;
        let cube_rtt_scale = bic_scale * 10;
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / (bic_scale * 10);
        Cubic {
            p,
            clock,
            hz,
            beta_scale,
            cube_rtt_scale,
            cube_factor,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: u32::MAX,
        }
    }

    /// `tcp_jiffies32` for the simulated time.
    fn jiffies(&self, now_ns: u64) -> u64 {
        self.clock.at(now_ns)
    }

    /// `usecs_to_jiffies` (rounds up).
    fn usecs_to_jiffies(&self, us: u32) -> u64 {
        self.clock.ceil(us as u64 * 1000)
    }

    /// `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = None;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// `bictcp_hystart_reset`: start a new HyStart round.
    fn hystart_reset(&mut self, sk: &Sock) {
        self.round_start = sk.now / 1000;
        self.last_ack = self.round_start;
        self.end_seq = sk.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// W_max (`last_max_cwnd`), for tests and observation.
    pub fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }
    /// K in seconds.
    pub fn k_secs(&self) -> f64 {
        self.bic_k as f64 / 1024.0
    }

    /// `bictcp_update`: compute `cnt` for the current cwnd.
    fn update(&mut self, sk: &Sock, cwnd: u32, acked: u32) {
        let now = self.jiffies(sk.now);
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= (self.hz / 32) as u64 {
            return;
        }

        // The cubic part is recomputed at most once per jiffy; a reduction clears the
        // epoch, which forces a recomputation.
        let recompute = !(self.epoch_start.is_some() && now == self.last_time);
        if recompute {
            self.last_cwnd = cwnd;
            self.last_time = now;

            if self.epoch_start.is_none() {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    let diff = (self.last_max_cwnd - cwnd) as u64;
                    self.bic_k = cubic_root(self.cube_factor.wrapping_mul(diff));
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }
            let epoch = self.epoch_start.unwrap_or(now);
            // t in 1/1024 s: elapsed jiffies plus delay_min, then HZ -> BICTCP_HZ.
            let mut t = now.saturating_sub(epoch) + self.usecs_to_jiffies(self.delay_min);
            t = (t << BICTCP_HZ) / self.hz as u64;
            let k = self.bic_k as u64;
            // u32 arithmetic, as `bictcp_update`'s `delta` and `bic_target`.
            let delta = cubic_delta(self.cube_rtt_scale, t.abs_diff(k));
            let bic_target = if t < k {
                self.bic_origin_point.wrapping_sub(delta)
            } else {
                self.bic_origin_point.wrapping_add(delta)
            };
            self.cnt = if bic_target > cwnd {
                cwnd / (bic_target - cwnd)
            } else {
                100u32.wrapping_mul(cwnd)
            };
            // Before the first loss grow at least 5% per RTT.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }

        if self.p.tcp_friendliness {
            // Reno estimate: +1 per cwnd*beta_scale/8 ACKed segments, i.e. 3(1-b)/(1+b)
            // segments per RTT.
            let delta = (cwnd * self.beta_scale) >> 3;
            if delta > 0 {
                while self.ack_cnt > delta {
                    self.ack_cnt -= delta;
                    self.tcp_cwnd += 1;
                }
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                if self.cnt > max_cnt {
                    self.cnt = max_cnt;
                }
            }
        }
        // At most +1 per 2 ACKed segments (1.5x per RTT).
        self.cnt = self.cnt.max(2);
    }

    /// `hystart_ack_delay`: TSO/GRO cushion, at most 1 ms.
    fn hystart_ack_delay(sk: &Sock) -> u32 {
        if sk.pacing_rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * 1_000_000 / sk.pacing_rate).min(1000) as u32
    }

    /// `hystart_update`, with `delay` in us.
    fn hystart_update(&mut self, sk: &mut Sock, delay: u32) {
        if (sk.snd_una.wrapping_sub(self.end_seq) as i32) > 0 {
            self.hystart_reset(sk);
        }
        if self.p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = sk.now / 1000;
            if now.saturating_sub(self.last_ack) <= self.p.hystart_ack_delta_us as u64 {
                self.last_ack = now;
                let mut threshold = self.delay_min + Self::hystart_ack_delay(sk);
                // Unpaced (`sk_pacing_status` NONE: neither the host's fq nor the CC paces):
                // packets are not spread, so the train is half as long.
                if !(sk.pacing_fq || sk.pacing_needed) {
                    threshold >>= 1;
                }
                if now.saturating_sub(self.round_start) > threshold as u64 {
                    self.found = true;
                    sk.snd_ssthresh = sk.snd_cwnd;
                }
            }
        }
        if self.p.hystart_detect & HYSTART_DELAY != 0 {
            if self.curr_rtt > delay {
                self.curr_rtt = delay;
            }
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh =
                    (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
                if self.curr_rtt > self.delay_min + thresh {
                    self.found = true;
                    sk.snd_ssthresh = sk.snd_cwnd;
                }
            }
        }
    }
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic::new(CubicParams::default())
    }
}

/// `cubic_root`'s table: for the top six bits `x` of the argument, `cbrt(x << 18) - 1`
/// refined by hand (Willy Tarreau), so that `cbrt(x)` is about `(V[x] + 10) >> 6`.
const CBRT_MSB: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168,
    170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213,
    215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245,
    246, 248, 250, 251, 252, 254,
];

/// `cubic_root` (tcp_cubic.c): the cube root of `a` from the table entry of its top bits,
/// shifted to its magnitude, then one Newton-Raphson step `x = (2x + a / (x (x - 1))) / 3`
/// in 32-bit arithmetic (the division by 3 as `* 341 >> 10`). About 0.2 % off on average.
fn cubic_root(a: u64) -> u32 {
    let bits = 64 - a.leading_zeros(); // fls64
    if bits < 7 {
        return (CBRT_MSB[a as usize] as u32 + 35) >> 6;
    }
    let b = ((bits * 84) >> 8) - 1; // about a third of the bits, less one
    let top = (a >> (b * 3)) as usize;
    let x = ((CBRT_MSB[top] as u32 + 10) << b) >> 6;
    let x = (2 * x).wrapping_add((a / (x as u64 * (x - 1) as u64)) as u32);
    x.wrapping_mul(341) >> 10
}

/// `bictcp_update`'s `delta`, `C/rtt * (t - K)^3` in segments: the 64-bit product of
/// `cube_rtt_scale` and `offs` cubed wraps as in C (`offs` above about 347 s), then the
/// shift from 1/1024 s cubed and the 32-bit `u32 delta`.
fn cubic_delta(cube_rtt_scale: u64, offs: u64) -> u32 {
    let cube = cube_rtt_scale
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        .wrapping_mul(offs);
    (cube >> (10 + 3 * BICTCP_HZ)) as u32
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `bictcp_init`.
    fn init(&mut self, sk: &mut Sock) {
        self.reset();
        if self.p.hystart {
            self.hystart_reset(sk);
        }
        if !self.p.hystart && self.p.initial_ssthresh != 0 {
            sk.snd_ssthresh = self.p.initial_ssthresh;
        }
    }

    /// `bictcp_recalc_ssthresh`: end the epoch, update W_max (fast convergence).
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        self.epoch_start = None;
        if sk.snd_cwnd < self.last_max_cwnd && self.p.fast_convergence {
            self.last_max_cwnd = ((sk.snd_cwnd as u64 * (BETA_SCALE + self.p.beta) as u64)
                / (2 * BETA_SCALE) as u64) as u32;
        } else {
            self.last_max_cwnd = sk.snd_cwnd;
        }
        ((sk.snd_cwnd as u64 * self.p.beta as u64 / BETA_SCALE as u64) as u32).max(2)
    }

    /// `bictcp_cong_avoid`.
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
        let cwnd = sk.snd_cwnd;
        self.update(sk, cwnd, acked);
        sk.cong_avoid_ai(self.cnt, acked);
    }

    /// `bictcp_state`: an RTO resets everything, W_max included.
    fn set_state(&mut self, sk: &mut Sock, new: CaState) {
        if new == CaState::Loss {
            self.reset();
            self.hystart_reset(sk);
        }
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        match ev {
            // After idle, shift the epoch so the cubic curve continues where it stopped.
            CaEvent::TxStart => {
                let now = self.jiffies(sk.now);
                let last_send = self.jiffies(sk.lsndtime);
                if let Some(epoch) = self.epoch_start {
                    if now > last_send {
                        self.epoch_start = Some((epoch + (now - last_send)).min(now));
                    }
                }
            }
            // Linux resets in `set_state(Loss)`; the RTO event arrives in the same
            // `tcp_enter_loss`, so resetting here too is idempotent and keeps the model
            // right whichever of the two the sender reports first.
            CaEvent::Loss => {
                self.reset();
                self.hystart_reset(sk);
            }
            _ => {}
        }
    }

    /// `bictcp_acked`: track delay_min and run HyStart.
    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        if sample.rtt < 0 {
            return;
        }
        // Discard delay samples in the first second of an epoch (right after recovery).
        if let Some(epoch) = self.epoch_start {
            if self.jiffies(sk.now).saturating_sub(epoch) < self.hz as u64 {
                return;
            }
        }
        let delay = ((sample.rtt / 1000) as u32).max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found
            && sk.in_slow_start()
            && self.p.hystart
            && sk.snd_cwnd >= self.p.hystart_low_window
        {
            self.hystart_update(sk, delay);
        }
    }

    fn observe(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("w_max", self.last_max_cwnd as f64));
        out.push(("k", self.k_secs()));
        out.push(("cnt", self.cnt as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    /// Values of `cubic_root` worked out by hand from tcp_cubic.c (C's u32/u64 arithmetic),
    /// where they differ from the exact cube root: the table alone below 64, the table and one
    /// Newton step above, for K of W_max - cwnd = 1, 10, 100 and 1000 segments.
    #[test]
    fn the_cube_root_is_linuxs_table_and_newton_step_not_the_exact_root() {
        let cube_factor = (1u64 << 40) / 410;
        for (a, linux, exact) in [
            (7, 2, 1),
            (26, 3, 2),
            (63, 4, 3),
            (cube_factor, 1388, 1389),
            (cube_factor * 10, 2991, 2993),
            (cube_factor * 100, 6451, 6448),
            (cube_factor * 1000, 13897, 13893),
            (1 << 63, 2098142, 2097152),
        ] {
            assert_eq!(cubic_root(a), linux, "cubic_root({a}), exact {exact}");
        }
        // tcp_cubic.c: "Avg err ~= 0.195%"; over K's arguments (cube_factor times 1 to a million
        // segments) no value is further off than that.
        for d in (1..1_000_000u64).step_by(997) {
            let a = cube_factor * d;
            let exact = (a as f64).cbrt();
            let err = (cubic_root(a) as f64 - exact).abs() / exact;
            assert!(
                err < 0.002,
                "cubic_root({a}) = {} against {exact:.1}",
                cubic_root(a)
            );
        }
    }

    /// `(t - K)^3` times `cube_rtt_scale` overflows 64 bits once `t - K` passes about 347 s
    /// (355,700 in 1/1024 s), and Linux's product wraps there.
    #[test]
    fn the_cubic_term_wraps_in_64_bits_after_about_347_seconds() {
        let exact = |offs: u64| ((410u128 * (offs as u128).pow(3)) >> 40) as u64;
        let at_300_s = 300 * 1024;
        assert_eq!(cubic_delta(410, at_300_s) as u64, exact(at_300_s));
        let at_400_s = 400 * 1024;
        let wrapped = ((410u128 * (at_400_s as u128).pow(3)) % (1u128 << 64)) >> 40;
        assert_eq!(cubic_delta(410, at_400_s) as u128, wrapped);
        assert!((cubic_delta(410, at_400_s) as u64) < exact(at_400_s));
    }

    fn ca_sock(cwnd: u32) -> Sock {
        let mut sk = Sock::new(1448);
        sk.is_cwnd_limited = true;
        sk.snd_cwnd = cwnd;
        sk.snd_ssthresh = cwnd;
        sk
    }

    fn feed_rtt(c: &mut Cubic, sk: &mut Sock, rtt: u64) {
        let s = AckSample {
            pkts_acked: 1,
            rtt: rtt as i64,
            in_flight: 0,
        };
        c.pkts_acked(sk, &s);
    }

    /// Deliver one RTT's worth of ACKs (one per segment), spread evenly over the RTT.
    fn one_rtt(c: &mut Cubic, sk: &mut Sock, rtt: u64) {
        let n = sk.snd_cwnd as u64;
        let t0 = sk.now;
        for i in 0..n {
            sk.now = t0 + i * rtt / n;
            sk.snd_una = sk.snd_una.wrapping_add(1);
            let una = sk.snd_una;
            c.cong_avoid(sk, una, 1);
        }
        sk.now = t0 + rtt;
    }

    #[test]
    fn k_matches_cube_root_of_wmax_times_one_minus_beta_over_c() {
        let mut c = Cubic::default();
        let mut sk = ca_sock(1000);
        sk.now = 10 * SEC;
        let ss = c.ssthresh(&mut sk);
        assert_eq!(ss, 700);
        sk.snd_cwnd = ss;
        sk.snd_ssthresh = ss;
        c.cong_avoid(&mut sk, 1, 1);
        let c_const: f64 = 41.0 * 10.0 / 1024.0;
        let expect = (1000.0 * (1.0 - 717.0 / 1024.0) / c_const).cbrt();
        assert!(
            (c.k_secs() - expect).abs() < 0.01,
            "K {} vs {}",
            c.k_secs(),
            expect
        );
    }

    #[test]
    fn window_follows_cubic_function_after_loss() {
        let rtt = 100 * MS;
        let mut c = Cubic::default();
        let mut sk = ca_sock(1000);
        c.init(&mut sk);
        sk.now = 5 * SEC;
        feed_rtt(&mut c, &mut sk, rtt);
        let ss = c.ssthresh(&mut sk);
        sk.snd_cwnd = ss;
        sk.snd_ssthresh = ss;
        let epoch = sk.now;
        let c_const: f64 = 0.4;
        let beta = 717.0 / 1024.0;
        let k = (1000.0 * (1.0 - beta) / c_const).cbrt();
        for _ in 0..150 {
            one_rtt(&mut c, &mut sk, rtt);
            // The window reached at t tracks W(t) (Linux aims one min RTT ahead, so the
            // curve is evaluated at t, the lag and lead roughly cancelling).
            let t = (sk.now - epoch) as f64 / 1e9;
            let w = c_const * (t - k).powi(3) + 1000.0;
            let err = (sk.snd_cwnd as f64 - w).abs();
            assert!(
                err <= 0.01 * w + 2.0,
                "t={t:.2} cwnd {} vs W(t) {w:.1}",
                sk.snd_cwnd
            );
        }
    }

    #[test]
    fn fast_convergence_lowers_wmax_when_cwnd_below_last_wmax() {
        let mut c = Cubic::default();
        let mut sk = ca_sock(1000);
        c.ssthresh(&mut sk);
        assert_eq!(c.w_max(), 1000);
        sk.snd_cwnd = 800;
        c.ssthresh(&mut sk);
        assert_eq!(c.w_max(), 800 * (1024 + 717) / 2048);
        let mut c2 = Cubic::new(CubicParams {
            fast_convergence: false,
            ..Default::default()
        });
        sk.snd_cwnd = 1000;
        c2.ssthresh(&mut sk);
        sk.snd_cwnd = 800;
        c2.ssthresh(&mut sk);
        assert_eq!(c2.w_max(), 800);
    }

    #[test]
    fn reno_friendly_region_grows_about_half_a_segment_per_rtt() {
        // With a tiny C the cubic curve is flat, so the Reno estimate drives growth at
        // 3(1-b)/(1+b) ~ 0.53 segments per RTT.
        let rtt = 10 * MS;
        let mut c = Cubic::new(CubicParams {
            bic_scale: 1,
            ..Default::default()
        });
        let mut sk = ca_sock(100);
        sk.now = 5 * SEC;
        feed_rtt(&mut c, &mut sk, rtt);
        let ss = c.ssthresh(&mut sk);
        sk.snd_cwnd = ss;
        sk.snd_ssthresh = ss;
        let start = sk.snd_cwnd;
        for _ in 0..200 {
            one_rtt(&mut c, &mut sk, rtt);
        }
        let per_rtt = (sk.snd_cwnd - start) as f64 / 200.0;
        assert!((0.45..0.62).contains(&per_rtt), "growth {per_rtt} per RTT");
    }

    #[test]
    fn hystart_delay_detection_sets_ssthresh_when_rtt_rises_by_the_clamp() {
        let mut c = Cubic::new(CubicParams {
            hystart_detect: HYSTART_DELAY,
            ..Default::default()
        });
        let mut sk = Sock::new(1448);
        sk.snd_cwnd = 32;
        c.init(&mut sk);
        // Base RTT 20 ms: threshold clamp(20/8 = 2.5 ms) = 4 ms.
        for _ in 0..9 {
            feed_rtt(&mut c, &mut sk, 20 * MS);
        }
        assert!(!c.found);
        // New round whose RTTs are 3.9 ms higher: not enough.
        c.hystart_reset(&sk);
        for _ in 0..9 {
            feed_rtt(&mut c, &mut sk, 23_900_000);
        }
        assert!(!c.found);
        assert_eq!(sk.snd_ssthresh, crate::cc::INFINITE_SSTHRESH);
        // 4.1 ms higher: exit slow start at the current cwnd.
        c.hystart_reset(&sk);
        for _ in 0..9 {
            feed_rtt(&mut c, &mut sk, 24_100_000);
        }
        assert!(c.found);
        assert_eq!(sk.snd_ssthresh, 32);
    }

    /// ACK-train detection only, cwnd 64, started at 1 s (paced by the host's fq or not).
    fn ack_train_cubic(pacing_fq: bool) -> (Cubic, Sock) {
        let mut c = Cubic::new(CubicParams {
            hystart_detect: HYSTART_ACK_TRAIN,
            ..Default::default()
        });
        let mut sk = Sock::new(1448);
        sk.pacing_fq = pacing_fq;
        sk.snd_cwnd = 64;
        sk.now = 1000 * MS;
        c.init(&mut sk);
        (c, sk)
    }

    #[test]
    fn hystart_ack_train_exits_when_train_exceeds_half_min_rtt_unpaced() {
        let (mut c, mut sk) = ack_train_cubic(false);
        // ACKs 1 ms apart, min RTT 10 ms, unpaced: threshold 5 ms.
        for i in 0..5 {
            sk.now = 1000 * MS + i * MS;
            feed_rtt(&mut c, &mut sk, 10 * MS);
        }
        assert!(!c.found, "5 ms train must not trigger (needs > 5 ms)");
        sk.now = 1000 * MS + 6 * MS;
        feed_rtt(&mut c, &mut sk, 10 * MS);
        assert!(c.found);
        assert_eq!(sk.snd_ssthresh, 64);

        // Paced by the host's fq: the threshold is the full min RTT.
        let (mut c, mut sk) = ack_train_cubic(true);
        for i in 0..8 {
            sk.now = 1000 * MS + i * MS;
            feed_rtt(&mut c, &mut sk, 10 * MS);
        }
        assert!(!c.found);
    }

    #[test]
    fn hystart_rounds_end_on_the_sampled_acks_whether_or_not_the_flow_is_cwnd_limited() {
        // 4e1fddc98d25: the round restarts in hystart_update once snd_una passes the round's
        // end, so a flow that is not cwnd-limited (cong_avoid returns at once) measures each
        // train from its own round. ACKs 1 ms apart, min RTT 10 ms, unpaced (threshold 5 ms),
        // rounds of 4 ACKs: no train ever lasts 5 ms.
        let (mut c, mut sk) = ack_train_cubic(false);
        for i in 1..40u32 {
            sk.now = 1000 * MS + i as u64 * MS;
            sk.snd_una = i;
            sk.snd_nxt = i + 3;
            feed_rtt(&mut c, &mut sk, 10 * MS);
        }
        assert!(!c.found);
    }

    #[test]
    fn hystart_ack_train_ignores_spaced_acks() {
        let (mut c, mut sk) = ack_train_cubic(false);
        for i in 0..10 {
            sk.now = 1000 * MS + i * 3 * MS;
            feed_rtt(&mut c, &mut sk, 10 * MS);
        }
        assert!(!c.found);
    }

    #[test]
    fn cnt_capped_at_twenty_before_first_loss_and_floored_at_two() {
        let mut c = Cubic::new(CubicParams {
            tcp_friendliness: false,
            ..Default::default()
        });
        let mut sk = ca_sock(100);
        sk.now = SEC;
        c.cong_avoid(&mut sk, 1, 1);
        assert_eq!(c.cnt, 20);
        // Ten seconds into an epoch the cubic target is ~400 segments above cwnd: cnt
        // would be 0, the floor keeps it at 2 (at most 1.5x per RTT).
        let mut c = Cubic::default();
        let mut sk = ca_sock(101);
        c.ssthresh(&mut sk);
        sk.snd_cwnd = 100;
        sk.snd_ssthresh = 100;
        sk.now = SEC;
        c.cong_avoid(&mut sk, 1, 1);
        assert!(c.cnt > 2);
        sk.now = 11 * SEC;
        c.cong_avoid(&mut sk, 1, 1);
        assert_eq!(c.cnt, 2);
    }

    #[test]
    fn rto_resets_wmax_and_idle_shifts_epoch() {
        let mut c = Cubic::default();
        let mut sk = ca_sock(100);
        sk.now = SEC;
        c.ssthresh(&mut sk);
        c.set_state(&mut sk, CaState::Loss);
        assert_eq!(c.w_max(), 0);
        sk.snd_cwnd = 70;
        sk.snd_ssthresh = 70;
        c.cong_avoid(&mut sk, 1, 1);
        let e0 = c.epoch_start.unwrap();
        sk.lsndtime = 2 * SEC;
        sk.now = 3 * SEC;
        c.cwnd_event(&mut sk, CaEvent::TxStart);
        assert_eq!(c.epoch_start.unwrap(), e0 + 250);
    }

    #[test]
    fn jiffies_count_ticks_from_the_hosts_phase() {
        // HZ 250: 4 ms ticks. With a 3 ms phase the first tick falls at 1 ms.
        let c = Cubic::on_host(CubicParams::default(), Jiffies::with_phase(250, 3 * MS));
        assert_eq!(c.jiffies(999_999), 0);
        assert_eq!(c.jiffies(1_000_000), 1);
        assert_eq!(c.jiffies(5_000_000), 2);
        // At HZ 1000 a jiffy is 1 ms; HZ/32 is 31 jiffies.
        let d = Cubic::on_host(CubicParams::default(), Jiffies::new(1000));
        assert_eq!((d.jiffies(7 * MS), d.hz / 32), (7, 31));
    }
}
