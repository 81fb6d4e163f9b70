//! Log-linear histogram of nanosecond values (HDR-style: 64 linear sub-buckets per power of
//! two, so any quantile is within 1.6% of the true value). Memory is fixed (allocated at the
//! first record), so a run's sojourn and RTT distributions cost the same whatever the
//! packet count.

const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
const GROUPS: usize = 64 - SUB_BITS as usize + 1;

#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Count per bucket; empty until the first record.
    counts: Vec<u64>,
    n: u64,
    sum: u128,
    max: u64,
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let group = shift as usize + 1;
    let sub = ((v >> shift) as usize) & (SUB - 1);
    group * SUB + sub
}

/// Lower edge and width of bucket `i`.
fn bucket(i: usize) -> (u64, u64) {
    let group = i / SUB;
    let sub = (i % SUB) as u64;
    if group == 0 {
        return (sub, 1);
    }
    let shift = group as u32 - 1;
    (((SUB as u64) | sub) << shift, 1u64 << shift)
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; GROUPS * SUB];
        }
        self.counts[index(v)] += 1;
        self.n += 1;
        self.sum += v as u128;
        if v > self.max {
            self.max = v;
        }
    }
    pub fn count(&self) -> u64 {
        self.n
    }
    /// Sum of all recorded values.
    pub fn sum(&self) -> u128 {
        self.sum
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    /// Quantile q in [0, 1], interpolated within the bucket; 0 for an empty histogram.
    pub fn quantile(&self, q: f64) -> f64 {
        self.quantiles(&[q])[0]
    }
    /// [`Histogram::quantile`] of each of `qs` (ascending), in one pass over the buckets.
    pub fn quantiles(&self, qs: &[f64]) -> Vec<f64> {
        if self.n == 0 {
            return vec![0.0; qs.len()];
        }
        let mut out = Vec::with_capacity(qs.len());
        let rank = |q: f64| (q.clamp(0.0, 1.0) * self.n as f64).max(1.0);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            while let Some(&q) = qs.get(out.len()) {
                let r = rank(q);
                if ((seen + c) as f64) < r {
                    break;
                }
                let (lo, w) = bucket(i);
                let frac = (r - seen as f64) / c as f64;
                out.push((lo as f64 + frac * w as f64).min(self.max as f64));
            }
            seen += c;
        }
        out.resize(qs.len(), self.max as f64);
        out
    }
    /// What was recorded since `earlier`, a copy of this histogram taken before (the max is
    /// this histogram's whole-run max, an upper bound).
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        if earlier.counts.is_empty() {
            return self.clone();
        }
        Histogram {
            counts: self
                .counts
                .iter()
                .zip(&earlier.counts)
                .map(|(a, b)| a - b)
                .collect(),
            n: self.n - earlier.n,
            sum: self.sum - earlier.sum,
            max: self.max,
        }
    }
    /// The distribution at quantiles 0, 0.01, ..., 1 (101 values, ns): a CDF to plot.
    pub fn cdf(&self) -> Vec<f64> {
        if self.n == 0 {
            return Vec::new();
        }
        let qs: Vec<f64> = (0..=100).map(|i| i as f64 / 100.0).collect();
        self.quantiles(&qs)
    }
    pub fn merge(&mut self, other: &Histogram) {
        if self.counts.is_empty() {
            self.counts = other.counts.clone();
        } else {
            for (a, b) in self.counts.iter_mut().zip(&other.counts) {
                *a += b;
            }
        }
        self.n += other.n;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_uniform_values_are_within_two_percent() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 100);
        }
        for q in [0.5, 0.9, 0.99, 0.999] {
            let exact = q * 100_000.0 * 100.0;
            let got = h.quantile(q);
            assert!(
                (got - exact).abs() / exact < 0.02,
                "q={q} got={got} exact={exact}"
            );
        }
        assert!((h.mean() - 5_000_050.0).abs() < 1.0);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::default();
        for v in [0, 1, 2, 3] {
            h.record(v);
        }
        assert_eq!(h.quantile(1.0), 3.0);
        assert_eq!(h.max(), 3);
    }

    #[test]
    fn empty_histograms_merge_and_subtract() {
        let empty = Histogram::default();
        let mut h = Histogram::default();
        h.merge(&empty);
        assert_eq!((h.count(), h.quantile(0.5)), (0, 0.0));
        for v in [10, 20, 30] {
            h.record(v);
        }
        assert_eq!(h.since(&empty).count(), 3);
        let mut m = Histogram::default();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(m.count(), 6);
        // Two of each value: rank 1 of 6 sits half-way through the first bucket.
        assert_eq!(m.quantiles(&[0.0, 0.5, 1.0]), vec![10.5, 20.5, 30.0]);
    }

    #[test]
    fn bucket_edges_cover_index() {
        for v in [64u64, 65, 127, 128, 1000, 123_456_789, u64::MAX / 2] {
            let (lo, w) = bucket(index(v));
            assert!(lo <= v && v < lo + w, "v={v} lo={lo} w={w}");
        }
    }
}
