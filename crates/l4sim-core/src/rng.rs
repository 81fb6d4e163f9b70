//! Seeded pseudo-random numbers with an independent stream per component.
//!
//! xoshiro256++ (Blackman and Vigna), seeded through SplitMix64 from the run seed and a
//! stream identifier, so adding a component never perturbs the numbers another one draws.
//! Written here rather than taken from a crate so the sequence can never change under us:
//! the determinism test relies on it.

#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Stream identifiers, so components draw from disjoint, reproducible streams.
pub mod stream {
    pub const QDISC: u64 = 1 << 32;
    pub const CC: u64 = 2 << 32;
    pub const TCP: u64 = 3 << 32;
    pub const TRAFFIC: u64 = 4 << 32;
    // 5 << 32: none (results depend on these numbers, so they are not renumbered)
    /// Per node: its clock's tick phase.
    pub const TICK: u64 = 6 << 32;
}

impl Rng {
    /// A generator for `stream` of the run seeded with `seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut x = seed ^ stream.wrapping_mul(0xD605_0B4A_9E6C_3F91);
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[0]
            .wrapping_add(self.s[3])
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform 32-bit value, as Linux's `get_random_u32()` / `prandom_u32()`.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n) (n > 0), by Lemire's multiply-shift.
    pub fn below(&mut self, n: u32) -> u32 {
        ((self.next_u32() as u64 * n as u64) >> 32) as u32
    }

    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Poisson with the given mean, by Knuth's product of uniforms (one uniform per unit of
    /// the result: meant for batch sizes, means of a few dozen at most).
    pub fn poisson(&mut self, mean: f64) -> u32 {
        let limit = (-mean).exp();
        let mut n = 0;
        let mut p = self.uniform();
        while p > limit {
            n += 1;
            p *= self.uniform();
        }
        n
    }

    /// Pareto with shape `alpha` and scale (minimum) `xm`.
    pub fn pareto(&mut self, alpha: f64, xm: f64) -> f64 {
        xm / (1.0 - self.uniform()).powf(1.0 / alpha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_gives_same_sequence() {
        let mut a = Rng::new(7, stream::QDISC);
        let mut b = Rng::new(7, stream::QDISC);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn streams_are_independent() {
        let mut a = Rng::new(7, stream::QDISC);
        let mut b = Rng::new(7, stream::CC);
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn poisson_has_its_mean_as_mean_and_variance() {
        let mut r = Rng::new(3, stream::QDISC);
        let xs: Vec<f64> = (0..200_000).map(|_| r.poisson(5.5) as f64).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((mean - 5.5).abs() < 0.02, "{mean}");
        assert!((var - 5.5).abs() < 0.1, "{var}");
        let zeros = xs.iter().filter(|&&x| x == 0.0).count() as f64 / xs.len() as f64;
        assert!((zeros - (-5.5f64).exp()).abs() < 0.001, "{zeros}");
    }

    #[test]
    fn uniform_has_mean_one_half() {
        let mut r = Rng::new(1, 0);
        let n = 100_000;
        let m: f64 = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((m - 0.5).abs() < 0.01, "{m}");
    }
}
