//! Robust summary statistics for repeated runs: median, a distribution-free 95% confidence
//! interval of the median (order statistics, binomial), quartile coefficient of dispersion.

use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub ci_lo: f64,
    pub ci_hi: f64,
    pub q1: f64,
    pub q3: f64,
    /// (Q3 - Q1) / (Q3 + Q1)
    pub qcd: f64,
    pub min: f64,
    pub max: f64,
}

pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let i = pos.floor() as usize;
    let f = pos - i as f64;
    if i + 1 < sorted.len() {
        sorted[i] * (1.0 - f) + sorted[i + 1] * f
    } else {
        sorted[i]
    }
}

fn binom_cdf(k: usize, n: usize) -> f64 {
    // P(X <= k), X ~ Binomial(n, 1/2)
    let mut c = 1.0f64;
    let mut s = 0.0;
    let p = 0.5f64.powi(n as i32);
    for i in 0..=k {
        if i > 0 {
            c = c * (n - i + 1) as f64 / i as f64;
        }
        s += c * p;
    }
    s
}

pub fn summarize(v: &[f64]) -> Summary {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    if n == 0 {
        return Summary::default();
    }
    let (q1, q3) = (quantile(&s, 0.25), quantile(&s, 0.75));
    // largest k with P(X < k) <= 2.5%: CI = [x_(k), x_(n-k+1)] (1-based)
    let mut k = 0usize;
    while k < n / 2 && binom_cdf(k, n) <= 0.025 {
        k += 1;
    }
    let (lo, hi) = if k == 0 { (s[0], s[n - 1]) } else { (s[k - 1], s[n - k]) };
    Summary {
        n,
        median: quantile(&s, 0.5),
        ci_lo: lo,
        ci_hi: hi,
        q1,
        q3,
        qcd: if q3 + q1 > 0.0 { (q3 - q1) / (q3 + q1) } else { 0.0 },
        min: s[0],
        max: s[n - 1],
    }
}

/// Simulated time for tables: ns, µs (written us) or ms.
pub fn fmt_ns(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.3} ms", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.2} us", x / 1e3)
    } else {
        format!("{:.0} ns", x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn median_ci_qcd() {
        let v: Vec<f64> = (1..=20).map(|x| x as f64).collect();
        let s = summarize(&v);
        assert_eq!(s.median, 10.5);
        assert!(s.ci_lo <= 10.5 && s.ci_hi >= 10.5);
        assert_eq!((s.ci_lo, s.ci_hi), (6.0, 15.0)); // n=20: k=6
        assert!((s.qcd - (15.25 - 5.75) / (15.25 + 5.75)).abs() < 1e-12);
        let one = summarize(&[3.0]);
        assert_eq!((one.median, one.ci_lo, one.ci_hi, one.qcd), (3.0, 3.0, 3.0, 0.0));
    }
}
