//! Transfer sizes of the traffic sources: a fixed size, a bounded Pareto (the IETF evaluations'
//! web flows: alpha 0.9 between 1 KB and 1 MB), a lognormal, or an empirical CDF. (Arrivals
//! are each source's own: `web.rs`, `messages.rs`, `chunks.rs`.)

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// Distribution of transfer sizes in bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum SizeDist {
    Fixed {
        bytes: u64,
    },
    /// Pareto with shape `alpha` truncated to [min, max] (the bounded Pareto, sampled by
    /// inverting its CDF, so no value is clipped onto the bounds).
    Pareto {
        alpha: f64,
        min: f64,
        max: f64,
    },
    /// exp(N(mu, sigma)) bytes, at least one.
    Lognormal {
        mu: f64,
        sigma: f64,
    },
    /// Piecewise-linear CDF: points (bytes, cumulative probability), increasing in both,
    /// the last probability 1.
    Empirical {
        cdf: Vec<(f64, f64)>,
    },
}

impl SizeDist {
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let v = match self {
            SizeDist::Fixed { bytes } => *bytes as f64,
            SizeDist::Pareto { alpha, min, max } => {
                let (a, l, h) = (*alpha, *min, *max);
                if h <= l {
                    l
                } else {
                    let u = rng.uniform();
                    let la = l.powf(a);
                    let ha = h.powf(a);
                    (-(u * ha - u * la - ha) / (ha * la)).powf(-1.0 / a)
                }
            }
            SizeDist::Lognormal { mu, sigma } => (mu + sigma * normal(rng)).exp(),
            SizeDist::Empirical { cdf } => {
                let u = rng.uniform();
                let i = cdf.partition_point(|&(_, p)| p < u);
                if i == 0 {
                    cdf[0].0
                } else if i >= cdf.len() {
                    cdf[cdf.len() - 1].0
                } else {
                    let ((x0, p0), (x1, p1)) = (cdf[i - 1], cdf[i]);
                    x0 + (x1 - x0) * (u - p0) / (p1 - p0).max(f64::MIN_POSITIVE)
                }
            }
        };
        (v.round() as u64).max(1)
    }

    /// Mean size in bytes (analytic where there is a closed form).
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed { bytes } => *bytes as f64,
            SizeDist::Pareto { alpha, min, max } => {
                let (a, l, h) = (*alpha, *min, *max);
                if h <= l {
                    return l;
                }
                let norm = 1.0 - (l / h).powf(a);
                if (a - 1.0).abs() < 1e-12 {
                    l * (h / l).ln() / norm
                } else {
                    l.powf(a) / norm * a / (a - 1.0) * (l.powf(1.0 - a) - h.powf(1.0 - a))
                }
            }
            SizeDist::Lognormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            SizeDist::Empirical { cdf } => {
                let mut m = cdf[0].0 * cdf[0].1;
                for w in cdf.windows(2) {
                    m += (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1);
                }
                m
            }
        }
    }

    pub fn validate(&self) -> Result<(), (String, String)> {
        let e = |f: &str, m: String| Err((f.to_string(), m));
        match self {
            SizeDist::Fixed { bytes } if *bytes == 0 => {
                e("bytes", "must be at least 1, got 0".into())
            }
            SizeDist::Pareto { alpha, min, max } => {
                if !(alpha.is_finite() && *alpha > 0.0) {
                    return e("alpha", format!("must be a positive number, got {alpha}"));
                }
                if !(min.is_finite() && *min >= 1.0) {
                    return e("min", format!("must be at least 1 byte, got {min}"));
                }
                if !(max.is_finite() && max >= min) {
                    return e("max", format!("must be at least min ({min}), got {max}"));
                }
                Ok(())
            }
            SizeDist::Lognormal { mu, sigma } => {
                if !mu.is_finite() || !(0.0..50.0).contains(mu) {
                    return e("mu", format!("must be in 0..50 (log bytes), got {mu}"));
                }
                if !(sigma.is_finite() && *sigma >= 0.0) {
                    return e("sigma", format!("must be zero or positive, got {sigma}"));
                }
                Ok(())
            }
            SizeDist::Empirical { cdf } => {
                if cdf.is_empty() {
                    return e(
                        "cdf",
                        "needs at least one (bytes, probability) point".into(),
                    );
                }
                let mut prev = (0.0, 0.0);
                for (i, &(x, p)) in cdf.iter().enumerate() {
                    if !(x.is_finite() && x >= 1.0 && x >= prev.0) {
                        return e(
                            &format!("cdf[{i}]"),
                            format!("bytes must be >= 1 and non-decreasing, got {x}"),
                        );
                    }
                    if !(p.is_finite() && (0.0..=1.0).contains(&p) && p >= prev.1) {
                        return e(
                            &format!("cdf[{i}]"),
                            format!("probability must be in 0..1 and non-decreasing, got {p}"),
                        );
                    }
                    prev = (x, p);
                }
                if (prev.1 - 1.0).abs() > 1e-9 {
                    return e(
                        "cdf",
                        format!("the last probability must be 1, got {}", prev.1),
                    );
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Standard normal by Box-Muller (one value per call; the pair's second value is dropped).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.uniform();
    let u2 = rng.uniform();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(d: &SizeDist, n: usize) -> (f64, f64, f64) {
        let mut rng = Rng::new(3, 0);
        let v: Vec<f64> = (0..n).map(|_| d.sample(&mut rng) as f64).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let min = v.iter().cloned().fold(f64::MAX, f64::min);
        let max = v.iter().cloned().fold(0.0, f64::max);
        (mean, min, max)
    }

    #[test]
    fn bounded_pareto_stays_in_bounds_and_matches_its_mean() {
        // The IETF-106 web flows: alpha 0.9, 1 KB to 1 MB.
        let d = SizeDist::Pareto {
            alpha: 0.9,
            min: 1000.0,
            max: 1e6,
        };
        let (mean, min, max) = moments(&d, 400_000);
        assert!(min >= 1000.0 && max <= 1e6, "{min} {max}");
        let want = d.mean();
        // The sample mean of a heavy tail converges slowly: 5 % at 400k samples.
        assert!((mean / want - 1.0).abs() < 0.05, "{mean} vs {want}");
    }

    #[test]
    fn pareto_median_follows_the_closed_form() {
        let d = SizeDist::Pareto {
            alpha: 0.9,
            min: 1000.0,
            max: 1e6,
        };
        let mut rng = Rng::new(5, 0);
        let mut v: Vec<u64> = (0..100_001).map(|_| d.sample(&mut rng)).collect();
        v.sort();
        // F(x) = (1 - (L/x)^a) / (1 - (L/H)^a) = 0.5
        let norm = 1.0 - (1e-3f64).powf(0.9);
        let median = 1000.0 / (1.0 - 0.5 * norm).powf(1.0 / 0.9);
        let got = v[50_000] as f64;
        assert!((got / median - 1.0).abs() < 0.02, "{got} vs {median}");
    }

    #[test]
    fn lognormal_and_empirical_means() {
        let d = SizeDist::Lognormal {
            mu: 8.0,
            sigma: 1.0,
        };
        let (mean, _, _) = moments(&d, 200_000);
        assert!((mean / d.mean() - 1.0).abs() < 0.03, "{mean}");
        let d = SizeDist::Empirical {
            cdf: vec![(100.0, 0.0), (1100.0, 0.5), (10_100.0, 1.0)],
        };
        let (mean, min, max) = moments(&d, 200_000);
        assert!(min >= 100.0 && max <= 10_100.0);
        assert!(
            (mean / d.mean() - 1.0).abs() < 0.02,
            "{mean} vs {}",
            d.mean()
        );
    }

    #[test]
    fn validation_names_the_parameter() {
        let bad = SizeDist::Pareto {
            alpha: 0.9,
            min: 1000.0,
            max: 10.0,
        };
        assert_eq!(bad.validate().unwrap_err().0, "max");
        let bad = SizeDist::Empirical {
            cdf: vec![(1.0, 0.2), (2.0, 0.1)],
        };
        assert_eq!(bad.validate().unwrap_err().0, "cdf[1]");
    }
}
