//! Classic-ECN-AQM detection of TCP Prague v0.6 (L4STeam `tcp_prague.c`, the variant with
//! `prague_ecn_fallback`, and the `tcp_sock` fields the L4STeam patches add for it).
//!
//! A slow private RTT EWMA (`srtt_pace`, gain 2^-gs) and its mean deviation (`mdev_pace`,
//! gain 2^-(gs+1)) are fed with every RTT sample. Once per round (with CE seen) the score
//! `classic_ecn` moves by
//!   V = 1/2 log2(mdev / 750 us)  (may be negative), and
//!   D = 1/2 max(0, log2((srtt_pace - min_rtt) / 2 ms))  (only when srtt_pace > min_rtt),
//! clamped to [0, 17] (in 2^-20 units). The logs are integer logs of a product with the
//! mantissa carried from the previous round, so they average to real log2 values.
//! gs is set from ssthresh at each `ssthresh` call: min(L + L/2 + 1, 18), L = ilog2(ssthresh).

/// Alpha and score unit (`PRAGUE_ALPHA_BITS` = 20).
const ALPHA_BITS: u32 = 20;
const ONE: u64 = 1 << ALPHA_BITS;
/// Upper bound of the srtt gain shift; mdev uses one more bit.
const MAX_SRTT_BITS: u32 = 18;
const MAX_MDEV_BITS: u32 = MAX_SRTT_BITS + 1;
/// 2^(MAX_MDEV_BITS + 0.5): initial carried mantissa (sqrt(2), i.e. an unbiased start).
const INIT_MDEV_CARRY: u64 = 741_455;
/// 2^(MAX_MDEV_BITS - 1): rounding adjustment before the integer log.
const INIT_ADJ_US: u64 = 262_144;
/// Weights 2^-V and 2^-D of the two terms (both 1/2).
const V_SHIFT: u32 = 1;
const D_SHIFT: u32 = 1;
/// round(log2(750 us) * 2^20) and round(log2(2000 us) * 2^20), weighted.
const V0_LG: u64 = 10_014_683 >> V_SHIFT;
const D0_LG: u64 = 11_498_458 >> D_SHIFT;
/// Score thresholds: <= 8 pure L4S, (8, 9] transition, clamp at 17.
pub const L_STICKY: u64 = 16 << (ALPHA_BITS - V_SHIFT);
pub const CLASSIC_ECN: u64 = L_STICKY + ONE;
pub const C_STICKY: u64 = CLASSIC_ECN + L_STICKY;

fn ilog2(x: u64) -> u32 {
    63 - x.max(1).leading_zeros()
}

#[derive(Clone, Debug)]
pub struct ClassicEcnDetector {
    /// Upscaled by 2^g_srtt_shift, us.
    pub srtt_pace: u64,
    /// Upscaled by 2^g_mdev_shift, us.
    pub mdev_pace: u64,
    pub mrtt_pace: i64,
    pub g_srtt_shift: u32,
    pub g_mdev_shift: u32,
    /// Score in 2^-20 units, 0 ..= C_STICKY.
    pub classic_ecn: u64,
    rest_depth: u64,
    rest_mdev: u64,
}

impl ClassicEcnDetector {
    /// Connection start (`prague_init`): seed the EWMA with the current srtt (us).
    pub fn new(srtt_us: u64) -> Self {
        let gs = MAX_SRTT_BITS;
        ClassicEcnDetector {
            srtt_pace: srtt_us << gs,
            mdev_pace: 1 << MAX_MDEV_BITS,
            mrtt_pace: srtt_us as i64,
            g_srtt_shift: gs,
            g_mdev_shift: MAX_MDEV_BITS,
            classic_ecn: 0,
            rest_depth: INIT_MDEV_CARRY >> 1,
            rest_mdev: INIT_MDEV_CARRY,
        }
    }

    /// Score as a real number in [0, 17].
    pub fn score(&self) -> f64 {
        self.classic_ecn as f64 / ONE as f64
    }
    pub fn srtt_us(&self) -> u64 {
        self.srtt_pace >> self.g_srtt_shift
    }
    pub fn mdev_us(&self) -> u64 {
        self.mdev_pace >> self.g_mdev_shift
    }

    /// `prague_rtt_estimator`: per RTT sample (us).
    pub fn rtt_sample(&mut self, mrtt_us: i64) {
        let mut m = mrtt_us;
        let mut srtt = self.srtt_pace as i64;
        self.mrtt_pace = mrtt_us;
        if srtt != 0 {
            m -= srtt >> self.g_srtt_shift;
            srtt += m;
            m = m.abs();
            m -= (self.mdev_pace >> self.g_mdev_shift) as i64;
            self.mdev_pace = (self.mdev_pace as i64 + m).max(0) as u64;
        } else {
            srtt = m << self.g_srtt_shift;
            self.mdev_pace = 1 << self.g_mdev_shift;
        }
        self.srtt_pace = srtt.max(1) as u64;
    }

    /// `prague_update_rtt_scaling`: gain from ssthresh, rescaling the stored values.
    pub fn update_rtt_scaling(&mut self, ssthresh: u32) {
        let old = self.g_srtt_shift as i32;
        let l = ilog2(ssthresh as u64);
        let new = (l + (l >> 1) + 1).min(MAX_SRTT_BITS);
        self.g_srtt_shift = new;
        self.g_mdev_shift = new + 1;
        let delta = new as i32 - old;
        if delta > 0 {
            let d = delta as u32;
            self.srtt_pace <<= d;
            self.mdev_pace <<= d;
            self.rest_depth <<= d;
            self.rest_mdev <<= d;
        } else if delta < 0 {
            let d = (-delta) as u32;
            self.srtt_pace >>= d;
            self.mdev_pace >>= d;
            self.rest_depth >>= d;
            self.rest_mdev >>= d;
        }
    }

    /// `prague_classic_ecn_detection`: one round's score update. `min_rtt_us` is the
    /// kernel's windowed min RTT (None before any sample).
    pub fn detect(&mut self, min_rtt_us: Option<u64>) {
        let gs = self.g_srtt_shift;
        let gm = self.g_mdev_shift;
        let srtt = self.srtt_pace >> gs;
        let mdev = self.mdev_pace >> gm;
        let adj = INIT_ADJ_US >> (MAX_MDEV_BITS - gm);
        let Some(min_rtt) = min_rtt_us else { return };
        if srtt == 0 {
            return;
        }
        let mut score = self.classic_ecn as i64;

        // V-term: integer log of mdev times the carried mantissa.
        let prod = mdev * self.rest_mdev + adj;
        let mdev_lg = ilog2(prod).max(gm) - gm;
        self.rest_mdev = prod >> mdev_lg;
        let mdev_lg = (mdev_lg as u64) << (ALPHA_BITS - V_SHIFT);
        score += mdev_lg as i64 - V0_LG as i64;

        // D-term: queue depth above the min RTT, only pushes toward classic.
        if srtt > min_rtt {
            let prod = (srtt - min_rtt) * self.rest_depth + (adj >> 1);
            let depth_lg = ilog2(prod).max(gs) - gs;
            self.rest_depth = prod >> depth_lg;
            let depth_lg = (depth_lg as u64) << (ALPHA_BITS - D_SHIFT);
            if depth_lg > D0_LG {
                score += (depth_lg - D0_LG) as i64;
            }
        }
        self.classic_ecn = (score.max(0) as u64).min(C_STICKY);
    }

    /// `prague_classic_ecn_fallback`: floor alpha (2^-20 units) at 0.625 * (min(c, 9) - 8)
    /// when the score is above L_STICKY.
    pub fn floor_alpha(&self, alpha: u64) -> u64 {
        if self.classic_ecn <= L_STICKY {
            return alpha;
        }
        let c = self.classic_ecn.min(CLASSIC_ECN) - L_STICKY;
        alpha.max((c >> 1) + (c >> 3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gain_shift_follows_log2_of_ssthresh() {
        let mut d = ClassicEcnDetector::new(10_000);
        d.update_rtt_scaling(100);
        assert_eq!(d.g_srtt_shift, 10);
        assert_eq!(d.srtt_us(), 10_000);
        d.update_rtt_scaling(0x7fff_ffff);
        assert_eq!(d.g_srtt_shift, 18);
        assert_eq!(d.srtt_us(), 10_000);
    }

    #[test]
    fn steady_rtt_keeps_score_at_zero_and_floor_inactive() {
        let mut d = ClassicEcnDetector::new(10_000);
        d.update_rtt_scaling(100);
        for _ in 0..50 {
            for _ in 0..100 {
                d.rtt_sample(10_100);
            }
            d.detect(Some(10_000));
        }
        assert_eq!(d.classic_ecn, 0);
        assert_eq!(d.floor_alpha(1000), 1000);
    }
}
