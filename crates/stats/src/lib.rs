//! The statistics aar reports with, in one place, each with the reason it was chosen: `aar
//! report`'s tables and the simulator's summaries of repeated runs use the same code.
//!
//! Samples are iteration times of one policy: few (tens to thousands), skewed to the right and
//! often with a long tail (network noise), so every headline figure is an order statistic or a
//! rank test, none assumes normality, and every interval is exact or comes from a seeded, hence
//! reproducible, resampling. Iterations are treated as independent draws; alternating the
//! policies iteration by iteration (the A/B schedule) is what makes slow drifts of the machine
//! affect every policy alike. [`runs_test`] tells a report when a policy's iterations are not
//! independent all the same, and its bootstrap then resamples them in blocks ([`Sample`]).

/// Quantile `p` (0..=1) of an ascending sample: linear interpolation between order statistics
/// (Hyndman & Fan type 7, the default of R and NumPy), so the numbers agree with what users
/// compute themselves. `None` for an empty sample, which has none.
pub fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    let h = n.checked_sub(1)? as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Median of an ascending sample (the mean of the two middle values for even sizes); `None` for
/// an empty sample.
pub fn median(sorted: &[f64]) -> Option<f64> {
    quantile(sorted, 0.5)
}

/// Arithmetic mean (0 for an empty sample).
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// The mean of values added one at a time, kept as a mean rather than a sum: the mean of finite
/// values stays finite, between the smallest and the largest, where their sum can overflow to
/// infinity (two of 1e308).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunningMean {
    mean: f64,
    n: u64,
}

impl RunningMean {
    pub fn add(&mut self, x: f64) {
        self.n += 1;
        self.mean += (x - self.mean) / self.n as f64;
    }

    /// The mean of both sets of values.
    pub fn merge(&mut self, other: &RunningMean) {
        let n = self.n + other.n;
        if n > 0 {
            self.mean += (other.mean - self.mean) * (other.n as f64 / n as f64);
        }
        self.n = n;
    }

    /// `None` before any value.
    pub fn get(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }
}

/// Quartile coefficient of dispersion (Q3 − Q1) / (Q3 + Q1): a scale-free, outlier-resistant
/// measure of noise (0 when the middle half of the iterations take the same time). `None` when
/// Q3 + Q1 ≤ 0: times that are all 0 have no scale to be noisy against.
pub fn qcd(q1: f64, q3: f64) -> Option<f64> {
    (q1 + q3 > 0.0).then(|| (q3 - q1) / (q3 + q1))
}

/// [`qcd`] of an ascending sample from its [`quantile`]s; `None` when it is empty or the QCD is
/// undefined.
pub fn sample_qcd(sorted: &[f64]) -> Option<f64> {
    qcd(quantile(sorted, 0.25)?, quantile(sorted, 0.75)?)
}

/// Fewest values with a 95 % interval of the median ([`median_ci`]; the bootstrap's,
/// [`bootstrap_median_ci`], too): with 5 even the widest, smallest to largest, covers the median
/// only with probability 1 − 2·½⁵ = 0.9375. Intervals of medians made from fewer values (of a
/// ratio of medians) would fall as far short, so none is shown either.
pub const MIN_VALUES_MEDIAN_CI: usize = 6;

/// A distribution-free confidence interval of the median from order statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MedianCi {
    pub low: f64,
    pub high: f64,
    /// The interval's exact coverage (at least the requested level).
    pub coverage: f64,
}

/// Confidence interval of the median at `level` (e.g. 0.95): [x₍ₗ₎, x₍ₙ₋ₗ₊₁₎] with the largest
/// l such that P(B < l) ≤ (1 − level)/2 for B ~ Binomial(n, ½), the number of observations
/// below the true median. Exact for any continuous distribution, no assumption on its shape.
/// `None` when n is too small for any such interval (n < [`MIN_VALUES_MEDIAN_CI`] at 95 %).
pub fn median_ci(sorted: &[f64], level: f64) -> Option<MedianCi> {
    let n = sorted.len();
    let tail = (1.0 - level) / 2.0;
    // cdf(k) = P(B <= k), accumulated from the pmf in log space (0.5^n underflows for large n).
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0; // ln C(n, k)
    let mut cdf = 0.0;
    let mut l = 0; // largest l (1-based) found so far with P(B <= l-1) <= tail
    for k in 0..n {
        if k > 0 {
            ln_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        let next = cdf + (ln_choose - ln_half_n).exp();
        if next > tail {
            break;
        }
        cdf = next;
        l = k + 1;
    }
    if l == 0 || l > n - l + 1 {
        return None;
    }
    Some(MedianCi { low: sorted[l - 1], high: sorted[n - l], coverage: 1.0 - 2.0 * cdf })
}

/// Complementary error function, |relative error| < 1.2·10⁻⁷ everywhere (Chebyshev fit of
/// Numerical Recipes' `erfcc`): plenty for p-values shown to three digits.
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Result of a two-sided Mann–Whitney U test (or of its stratified form, [`van_elteren`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: pairs (x, y) with x > y, plus half the tied pairs.
    pub u: f64,
    /// Standard score with continuity and tie corrections (0 when every value is tied).
    pub z: f64,
    /// Two-sided p-value: exact when `exact`, else from the normal approximation (`z`).
    pub p: f64,
    /// Whether `p` counts every arrangement of the values ([`EXACT_WORK`]) rather than coming
    /// from the normal approximation.
    pub exact: bool,
}

/// Most steps the exact p-value of [`mann_whitney`] and [`van_elteren`] may take (a few
/// milliseconds); samples that would need more get the normal approximation, which is good by
/// then. One part of two samples of 28 values each is within it; so are tens of small parts.
pub const EXACT_WORK: u64 = 5_000_000;

/// Mann–Whitney U (Wilcoxon rank-sum) test of `x` against `y`, two-sided: does one policy tend to
/// take longer than the other? Rank-based, so a few huge outliers cannot make or break it.
/// Midranks for ties. The p-value is exact for small samples: the share of all C(n₁+n₂, n₁)
/// ways to split the pooled values into samples of these sizes whose U is at least as far from
/// n₁n₂/2 as the observed (given the ties, so exact with ties too), counted while that takes at
/// most [`EXACT_WORK`] steps. Beyond, the normal approximation, good for samples that large:
/// variance n₁n₂/12 · ((N+1) − Σ(t³−t)/(N(N−1))) (tie correction), z = (|U − n₁n₂/2| − ½)/σ
/// (continuity correction), p = erfc(|z|/√2), SciPy's `mannwhitneyu(method="asymptotic")`.
/// The normal approximation alone is anti-conservative for small samples: three values each, all
/// of x above all of y, would give p = 0.081 (0.0495 without the continuity correction) where
/// only 2 of the 20 splits are that extreme, p = 0.1. `None` if a sample is empty.
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    van_elteren(&[(x, y)])
}

/// Doubled midranks (integers) of `x`'s and `y`'s values in their pooled order, with U of `x`
/// against `y` and its variance under the null hypothesis, n₁n₂/12 · ((N+1) − Σ(t³−t)/(N(N−1)));
/// `None` if a sample is empty.
struct Ranked {
    /// Doubled midrank of each pooled value, and whether it is x's.
    ranks: Vec<(u64, bool)>,
    u: f64,
    var: f64,
}

fn rank(x: &[f64], y: &[f64]) -> Option<Ranked> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut pooled: Vec<(f64, bool)> = x.iter().map(|&v| (v, true)).chain(y.iter().map(|&v| (v, false))).collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pooled.len();
    let mut ranks = Vec::with_capacity(n);
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let doubled = (i + j + 1) as u64; // twice the mean of ranks i+1 ..= j
        ranks.extend(pooled[i..j].iter().map(|p| (doubled, p.1)));
        ties += t * t * t - t;
        i = j;
    }
    let rank_sum_x = ranks.iter().filter(|r| r.1).map(|r| r.0).sum::<u64>() as f64 / 2.0;
    let (f1, f2, nn) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_sum_x - f1 * (f1 + 1.0) / 2.0;
    let var = if n > 1 { f1 * f2 / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0))) } else { 0.0 };
    Some(Ranked { ranks, u, var })
}

/// [`mann_whitney`] for samples measured in several parts (e.g. jobs) that may differ as a
/// whole: van Elteren's stratified rank-sum test (1960). Each part's U is computed within it and
/// weighted by 1/(Nₛ + 1), so a part faster or slower than the others moves neither sample's
/// ranks against the other's; T = Σ Uₛ/(Nₛ+1), E(T) = Σ n₁ₛn₂ₛ/(2(Nₛ+1)). The p-value is exact
/// while counting takes at most [`EXACT_WORK`] steps: the probability, over every split of each
/// part's values into samples of its sizes (the parts independent), of a T at least as far from
/// E(T) as the observed; few or small parts are where the normal approximation is worst. Beyond,
/// Var T = Σ σₛ²/(Nₛ+1)², z = (|T − E(T)| − c)/√Var T with the continuity correction c half the
/// finest step of T, ½ · minₛ 1/(Nₛ+1) (with one part, exactly [`mann_whitney`]'s), and
/// p = erfc(|z|/√2). `u` is Σ Uₛ, the pairs within parts. Parts where either sample is empty are
/// left out; `None` if every part is.
pub fn van_elteren(parts: &[(&[f64], &[f64])]) -> Option<MannWhitney> {
    let ranked: Vec<Ranked> = parts.iter().filter_map(|&(x, y)| rank(x, y)).collect();
    if ranked.is_empty() {
        return None;
    }
    let (mut u, mut t, mut mean, mut var, mut step) = (0.0, 0.0, 0.0, 0.0, f64::INFINITY);
    for r in &ranked {
        let n1 = r.ranks.iter().filter(|r| r.1).count() as f64;
        let n2 = r.ranks.len() as f64 - n1;
        let w = 1.0 / (r.ranks.len() as f64 + 1.0);
        u += r.u;
        t += w * r.u;
        mean += w * n1 * n2 / 2.0;
        var += w * w * r.var;
        step = step.min(w);
    }
    if var <= 0.0 {
        return Some(MannWhitney { u, z: 0.0, p: 1.0, exact: true });
    }
    let d = t - mean;
    let z = ((d.abs() - 0.5 * step).max(0.0) / var.sqrt()) * d.signum();
    Some(match exact_p(&ranked) {
        Some(p) => MannWhitney { u, z, p, exact: true },
        None => MannWhitney { u, z, p: erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0), exact: false },
    })
}

/// The exact two-sided p-value of van Elteren's T over `ranked` parts, `None` when counting
/// would take more than [`EXACT_WORK`] steps. On the integer lattice K = Σ 2Uₛ · L/(Nₛ+1), L the
/// least common multiple of the Nₛ + 1, so that "at least as far from the mean" is decided
/// without rounding.
fn exact_p(ranked: &[Ranked]) -> Option<f64> {
    let mut work: u64 = 0;
    let mut lcm: u64 = 1;
    for r in ranked {
        let m = r.ranks.len() as u64 + 1;
        lcm = lcm.checked_mul(m / gcd(lcm, m)).filter(|&l| l < 1 << 40)?;
    }
    let (mut acc, mut mean, mut observed): (Vec<(i128, f64)>, i128, i128) = (vec![(0, 1.0)], 0, 0);
    for r in ranked {
        let scale = i128::from(lcm / (r.ranks.len() as u64 + 1));
        let n1 = r.ranks.iter().filter(|r| r.1).count() as i128;
        let n2 = r.ranks.len() as i128 - n1;
        let dist = u_distribution(&r.ranks, &mut work)?;
        work += (acc.len() * dist.len()) as u64;
        if work > EXACT_WORK {
            return None;
        }
        let mut next: Vec<(i128, f64)> =
            acc.iter().flat_map(|&(k, p)| dist.iter().map(move |&(u2, q)| (k + u2 * scale, p * q))).collect();
        next.sort_by_key(|e| e.0);
        next.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        acc = next;
        mean += n1 * n2 * scale; // E(2Uₛ) = n₁ₛn₂ₛ
        observed += (2.0 * r.u).round() as i128 * scale;
    }
    let far = (observed - mean).abs();
    Some(acc.iter().filter(|e| (e.0 - mean).abs() >= far).map(|e| e.1).sum::<f64>().min(1.0))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The distribution of 2U of the first sample over all splits of one part's values (doubled
/// midranks, and whose each is) into samples of its sizes, as (2U, probability) ascending;
/// `None` when that would take `work` past [`EXACT_WORK`]. Counts subsets of the smaller
/// sample's size by their doubled rank sum (a knapsack over the values).
fn u_distribution(ranks: &[(u64, bool)], work: &mut u64) -> Option<Vec<(i128, f64)>> {
    let n = ranks.len();
    let n1 = ranks.iter().filter(|r| r.1).count();
    let k = n1.min(n - n1);
    // The largest doubled rank sum.
    let top: usize = ranks.iter().rev().take(k).map(|r| r.0 as usize).sum();
    // Saturating: for tens of thousands of values a side the product passes u64 (a panic where
    // overflow is checked, and where it is not a small number that would let the count begin).
    *work = work.saturating_add((n as u64).saturating_mul(k as u64).saturating_mul(top as u64 + 1));
    if *work > EXACT_WORK {
        return None;
    }
    // ways[j][s]: subsets of j of the values seen so far with doubled rank sum s.
    let mut ways = vec![vec![0.0f64; top + 1]; k + 1];
    ways[0][0] = 1.0;
    for (i, &(r, _)) in ranks.iter().enumerate() {
        let r = r as usize;
        for j in (1..=k.min(i + 1)).rev() {
            let (lower, upper) = ways.split_at_mut(j);
            for s in (r..=top).rev() {
                upper[0][s] += lower[j - 1][s - r];
            }
        }
    }
    let total: f64 = ways[k].iter().sum();
    let (k, n1, n2) = (k as i128, n1 as i128, (n - n1) as i128);
    let mut dist: Vec<(i128, f64)> = ways[k as usize]
        .iter()
        .enumerate()
        .filter(|e| *e.1 > 0.0)
        .map(|(s, &c)| {
            // 2U of the smaller sample is 2R − k(k+1); the first's is 2n₁n₂ minus the other's.
            let u2 = s as i128 - k * (k + 1);
            (if k == n1 { u2 } else { 2 * n1 * n2 - u2 }, c / total)
        })
        .collect();
    dist.sort_by_key(|e| e.0);
    Some(dist)
}

/// Result of a Wald–Wolfowitz runs test (as `aar report`'s JSON gives it, per policy).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Runs {
    /// Runs of consecutive values on the same side of the median.
    pub runs: usize,
    /// The runs expected of independent values: 2·n₁n₂/n + 1.
    pub expected: f64,
    /// Standard score with continuity correction: negative when there are too few runs (slow
    /// values come in spells: the values are positively correlated in time).
    pub z: f64,
    /// Two-sided p-value from the normal approximation.
    pub p: f64,
}

/// Fewest values (on either side of the median together) [`runs_test`] judges: below this the
/// normal approximation is too rough to trust.
pub const RUNS_MIN_VALUES: usize = 10;

/// Wald–Wolfowitz runs test of `in_order` (values in the order they were measured) for
/// independence: are values above and below the median mixed as independent draws would be?
/// Rank-based like the rest of this crate (a few huge outliers count as one value above the
/// median each), and it asks nothing of the distribution. Values equal to the median are left
/// out. μ = 2n₁n₂/n + 1, σ² = 2n₁n₂(2n₁n₂ − n)/(n²(n − 1)); z = (|R − μ| − ½)/σ with R's sign;
/// p = erfc(|z|/√2). `None` with fewer than [`RUNS_MIN_VALUES`] values off the median, or all
/// on one side.
pub fn runs_test(in_order: &[f64]) -> Option<Runs> {
    runs_test_within(in_order, &[])
}

/// [`runs_test`] of values measured in several parts (e.g. jobs) that may differ as a whole:
/// `strata` are the lengths of `in_order`'s consecutive parts (empty: one part). Each part's values
/// are judged above or below that part's own median and its runs counted within it; R, μ and σ²
/// are the sums over the parts, so a part faster or slower than the others is not a spell.
pub fn runs_test_within(in_order: &[f64], strata: &[usize]) -> Option<Runs> {
    let whole = [in_order.len()];
    let strata = if strata.is_empty() || strata.iter().sum::<usize>() != in_order.len() { &whole[..] } else { strata };
    let (mut runs, mut n, mut expected, mut var) = (0usize, 0usize, 0.0, 0.0);
    let mut start = 0;
    for &len in strata {
        let part = &in_order[start..start + len];
        start += len;
        if part.is_empty() {
            continue;
        }
        let mut sorted = part.to_vec();
        sorted.sort_by(f64::total_cmp);
        let Some(m) = median(&sorted) else { continue };
        let sides: Vec<bool> = part.iter().filter(|&&v| v != m).map(|&v| v > m).collect();
        let k = sides.len();
        if k == 0 {
            continue;
        }
        let n1 = sides.iter().filter(|&&above| above).count() as f64;
        let (n2, kk) = ((k as f64) - n1, k as f64);
        runs += 1 + sides.windows(2).filter(|w| w[0] != w[1]).count();
        n += k;
        expected += 2.0 * n1 * n2 / kk + 1.0;
        if k > 1 {
            var += 2.0 * n1 * n2 * (2.0 * n1 * n2 - kk) / (kk * kk * (kk - 1.0));
        }
    }
    if n < RUNS_MIN_VALUES || var <= 0.0 {
        return None;
    }
    let d = runs as f64 - expected;
    let z = ((d.abs() - 0.5).max(0.0) / var.sqrt()) * d.signum();
    let p = erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0);
    Some(Runs { runs, expected, z, p })
}

/// A sample for the bootstrap: ascending, and, when its values came in spells or in parts that
/// may differ as a whole, the order they were measured in with the length of the blocks a
/// resample draws and the parts each resampled on its own.
///
/// Resampling values one by one assumes they are independent. Where slow values come in spells
/// (a slow phase of the machine longer than an A/B block), one-by-one draws mix the spells away
/// and the intervals come out too narrow. A circular moving-block bootstrap (Künsch 1989;
/// Politis & Romano 1992) draws runs of consecutive values instead, so a resample has spells as
/// long as the sample's.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    sorted: &'a [f64],
    /// How a resample draws, when not one value at a time from the whole sample.
    draws: Option<Draws<'a>>,
}

#[derive(Clone, Copy, Debug)]
struct Draws<'a> {
    /// The values in the order measured.
    in_order: &'a [f64],
    /// Consecutive values drawn together (1: one at a time).
    block: usize,
    /// Lengths of `in_order`'s consecutive parts, each resampled on its own (empty: one part).
    strata: &'a [usize],
}

impl<'a> Sample<'a> {
    /// Independent values, ascending.
    pub fn independent(sorted: &'a [f64]) -> Self {
        Self { sorted, draws: None }
    }

    /// Values whose order matters: `sorted` ascending, `in_order` the same values in the order
    /// measured, resampled in blocks of `block` consecutive values (1: one by one, as
    /// [`Sample::independent`]).
    pub fn in_blocks(sorted: &'a [f64], in_order: &'a [f64], block: usize) -> Self {
        Self::in_strata(sorted, in_order, block, &[])
    }

    /// [`Sample::in_blocks`] for values measured in several parts (e.g. jobs) that may differ as
    /// a whole: `strata` are the lengths of `in_order`'s consecutive parts, and a resample draws
    /// each part's length from that part alone (a stratified bootstrap), so the differences
    /// between the parts do not enter the intervals. Empty, or not adding up to the sample's
    /// length: one part.
    pub fn in_strata(sorted: &'a [f64], in_order: &'a [f64], block: usize, strata: &'a [usize]) -> Self {
        debug_assert_eq!(sorted.len(), in_order.len());
        let strata = if strata.len() > 1 && strata.iter().sum::<usize>() == in_order.len() { strata } else { &[] };
        let draws = ((block > 1 || !strata.is_empty()) && in_order.len() == sorted.len()).then_some(Draws {
            in_order,
            block: block.max(1),
            strata,
        });
        Self { sorted, draws }
    }

    /// One resample (n draws), ascending, into `out`.
    fn resample<'o>(&self, rng: &mut Rng, counts: &mut Vec<u32>, out: &'o mut Vec<f64>) -> &'o [f64] {
        let Some(d) = self.draws else { return resample_sorted(self.sorted, rng, counts, out) };
        out.clear();
        let whole = [d.in_order.len()];
        let strata = if d.strata.is_empty() { &whole[..] } else { d.strata };
        let mut start = 0;
        for &len in strata {
            let part = &d.in_order[start..start + len];
            start += len;
            // Circular blocks within the part: each draw is one of its values, in its order.
            let end = out.len() + len;
            while out.len() < end {
                let at = rng.index(len);
                let take = d.block.min(len).min(end - out.len());
                out.extend((at..at + take).map(|k| part[k % len]));
            }
        }
        out.sort_by(f64::total_cmp);
        out
    }

    /// The median of one resample (NaN for an empty sample).
    fn resample_median(&self, rng: &mut Rng, counts: &mut Vec<u32>, out: &mut Vec<f64>) -> f64 {
        match self.draws {
            _ if self.sorted.is_empty() => f64::NAN,
            None => bootstrap_median(self.sorted, rng).unwrap_or(f64::NAN),
            Some(_) => median(self.resample(rng, counts, out)).unwrap_or(f64::NAN),
        }
    }
}

impl<'a> From<&'a [f64]> for Sample<'a> {
    fn from(sorted: &'a [f64]) -> Self {
        Self::independent(sorted)
    }
}

impl<'a> From<&'a Vec<f64>> for Sample<'a> {
    fn from(sorted: &'a Vec<f64>) -> Self {
        Self::independent(sorted)
    }
}

impl<'a, const N: usize> From<&'a [f64; N]> for Sample<'a> {
    fn from(sorted: &'a [f64; N]) -> Self {
        Self::independent(sorted)
    }
}

/// The block length for a sample of `n` values whose runs test counted `runs`: the mean length
/// of a run above or below the median, ⌈n / runs⌉, at least 2 and at most n / 2. Independent
/// values have runs of about 2; spells make them longer, and a block as long as a spell keeps
/// it whole in a resample.
pub fn block_length(n: usize, runs: usize) -> usize {
    n.div_ceil(runs.max(1)).clamp(2, (n / 2).max(2))
}

/// Percentile-bootstrap interval of the median at `level` (for a sample in blocks or parts;
/// independent values have the exact [`median_ci`]). `None` when the sample is too small for
/// [`median_ci`] (n ≤ 5 at 95 %): a resampled median lies between the smallest and the largest
/// value, and even that widest interval covers the median less often than `level` asks.
pub fn bootstrap_median_ci(x: Sample, level: f64, resamples: usize, seed: u64) -> Option<(f64, f64)> {
    median_ci(x.sorted, level)?;
    let mut rng = Rng::new(seed);
    let (mut counts, mut buf) = (Vec::new(), Vec::new());
    let draws = (0..resamples.max(1)).map(|_| x.resample_median(&mut rng, &mut counts, &mut buf)).collect();
    Some(percentile_interval(draws, level))
}

/// A small deterministic generator (splitmix64): the same stream on every platform for a seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1): never 0, so its logarithm is finite.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Uniform index in 0..n.
    pub fn index(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    /// Gamma(shape, 1), Marsaglia & Tsang (2000); shape < 1 through the boost Gamma(a+1)·U^(1/a).
    fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = self.uniform();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
    /// Beta(a, b) as Ga/(Ga + Gb).
    fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }
}

/// The median of one bootstrap resample (n draws with replacement) of an ascending sample, drawn
/// in O(1) instead of O(n): the k-th smallest of n uniform indices is ⌊n·U₍ₖ₎⌋ where the uniform
/// order statistic U₍ₖ₎ ~ Beta(k, n−k+1), and, given U₍ₖ₎ = a, U₍ₖ₊₁₎ is the least of n−k
/// uniforms on (a, 1). So this draws from exactly the distribution of the resample's median that
/// drawing n indices would give, whatever n. `None` for an empty sample, which has no median.
pub fn bootstrap_median(sorted: &[f64], rng: &mut Rng) -> Option<f64> {
    let n = sorted.len();
    if n <= 1 {
        return sorted.first().copied();
    }
    let at = |u: f64| sorted[((u * n as f64) as usize).min(n - 1)];
    let k = n.div_ceil(2); // the lower middle order statistic (1-based)
    let a = rng.beta(k as f64, (n - k + 1) as f64);
    if n % 2 == 1 {
        return Some(at(a));
    }
    let rest = (n - k) as f64;
    let b = a + (1.0 - a) * (1.0 - rng.uniform().powf(1.0 / rest));
    Some((at(a) + at(b)) / 2.0)
}

/// Ratio of medians median(y)/median(x) and its percentile-bootstrap confidence interval at
/// `level`: `resamples` independent resamples of each sample (each as its [`Sample`] says),
/// seeded, so a report is reproducible. `None` when a sample is empty or x's median is not
/// positive.
pub fn ratio_of_medians<'a>(
    x: impl Into<Sample<'a>>,
    y: impl Into<Sample<'a>>,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64, f64)> {
    let (x, y) = (x.into(), y.into());
    let (mx, my) = (median(x.sorted)?, median(y.sorted)?);
    if mx <= 0.0 {
        return None;
    }
    let ratio = my / mx;
    let mut rng = Rng::new(seed);
    let (mut counts, mut buf) = (Vec::new(), Vec::new());
    let draws = (0..resamples.max(1))
        .filter_map(|_| {
            let mx = x.resample_median(&mut rng, &mut counts, &mut buf);
            let my = y.resample_median(&mut rng, &mut counts, &mut buf);
            (mx > 0.0).then(|| my / mx)
        })
        .collect();
    let (low, high) = percentile_interval(draws, level);
    Some((ratio, low, high))
}

/// The central `level` interval of bootstrap draws (NaN ends when there are none).
fn percentile_interval(mut draws: Vec<f64>, level: f64) -> (f64, f64) {
    draws.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    (quantile(&draws, tail).unwrap_or(f64::NAN), quantile(&draws, 1.0 - tail).unwrap_or(f64::NAN))
}

/// One bootstrap resample (n draws with replacement) of an ascending sample, ascending, into
/// `out`. The sample is already in order, so counting how often each index is drawn and
/// repeating each value that often sorts the resample in O(n).
fn resample_sorted<'a>(sorted: &[f64], rng: &mut Rng, counts: &mut Vec<u32>, out: &'a mut Vec<f64>) -> &'a [f64] {
    let n = sorted.len();
    counts.clear();
    counts.resize(n, 0);
    for _ in 0..n {
        counts[rng.index(n)] += 1;
    }
    out.clear();
    for (&v, &c) in sorted.iter().zip(counts.iter()) {
        out.extend(std::iter::repeat_n(v, c as usize));
    }
    out
}

/// Difference of spreads QCD(y) − QCD(x) ([`sample_qcd`]) and its percentile-bootstrap
/// confidence interval at `level`: `resamples` resamples of each sample, n draws each (one by
/// one, or in blocks, as its [`Sample`] says), seeded, so a report is reproducible. An interval
/// that excludes 0 says one policy is noisier than the other beyond what the iterations'
/// sampling explains. `None` when a sample has fewer than 2 values or a QCD is undefined.
pub fn qcd_difference<'a>(
    x: impl Into<Sample<'a>>,
    y: impl Into<Sample<'a>>,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64, f64)> {
    let (x, y) = (x.into(), y.into());
    if x.sorted.len() < 2 || y.sorted.len() < 2 {
        return None;
    }
    let difference = sample_qcd(y.sorted)? - sample_qcd(x.sorted)?;
    let mut rng = Rng::new(seed);
    let (mut counts, mut buf) = (Vec::new(), Vec::new());
    let draws = (0..resamples.max(1))
        .filter_map(|_| {
            let qx = sample_qcd(x.resample(&mut rng, &mut counts, &mut buf));
            let qy = sample_qcd(y.resample(&mut rng, &mut counts, &mut buf));
            Some(qy? - qx?)
        })
        .collect();
    let (low, high) = percentile_interval(draws, level);
    Some((difference, low, high))
}

/// Which values of a set (e.g. each rank's median iteration time) lie far from the others.
#[derive(Clone, Debug, PartialEq)]
pub struct Outliers {
    /// Median of the values.
    pub center: f64,
    /// Scaled median absolute deviation: 1.4826 · median |v − center| (σ for normal data).
    pub mad: f64,
    /// How far a value must be from `center` to be listed.
    pub threshold: f64,
    /// Indices of the values beyond the threshold.
    pub indices: Vec<usize>,
}

/// Values more than 3 scaled MADs from the median of all values (and more than 1 % of it, so that
/// ranks that agree to within noise are never listed when the MAD is tiny): the robust analogue
/// of "3 σ", which the outliers themselves cannot inflate.
pub fn outliers(values: &[f64]) -> Option<Outliers> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let center = median(&sorted)?;
    let mut dev: Vec<f64> = values.iter().map(|v| (v - center).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = 1.4826 * median(&dev)?;
    let threshold = (3.0 * mad).max(0.01 * center.abs());
    let indices = (0..values.len()).filter(|&i| (values[i] - center).abs() > threshold).collect();
    Some(Outliers { center, mad, threshold, indices })
}

/// The summary of a sample the simulator's tables show: size, median with its 95 % interval,
/// quartiles, quartile coefficient of dispersion, extremes.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Finite values summarised.
    pub n: usize,
    /// The median.
    pub median: f64,
    /// Low end of the 95 % interval of the median ([`median_ci`]); the smallest value when the
    /// sample is too small for one (`ci_is_range`).
    pub ci_lo: f64,
    /// High end of that interval; the largest value when `ci_is_range`.
    pub ci_hi: f64,
    /// `ci_lo`..`ci_hi` is the sample's range, not a 95 % interval: fewer than
    /// [`MIN_VALUES_MEDIAN_CI`] values (or none) are too few for one, and their range covers the
    /// median less often than 95 % (1 − 2·½ⁿ: 94 % for 5 values, 50 % for 1). Show it as a range.
    pub ci_is_range: bool,
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
    /// [`qcd`] of the quartiles (0 when undefined).
    pub qcd: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Default for Summary {
    /// The summary of no values: all zero, and no interval.
    fn default() -> Self {
        Summary {
            n: 0,
            median: 0.0,
            ci_lo: 0.0,
            ci_hi: 0.0,
            ci_is_range: true,
            q1: 0.0,
            q3: 0.0,
            qcd: 0.0,
            min: 0.0,
            max: 0.0,
        }
    }
}

/// [`Summary`] of the finite values of `values`, in any order (all zero when there are none).
pub fn summarize(values: &[f64]) -> Summary {
    let mut s: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let (Some(q1), Some(median), Some(q3)) = (quantile(&s, 0.25), median(&s), quantile(&s, 0.75)) else {
        return Summary::default();
    };
    let ci = median_ci(&s, 0.95);
    let (ci_lo, ci_hi) = ci.map_or((s[0], s[n - 1]), |ci| (ci.low, ci.high));
    Summary {
        n,
        median,
        ci_lo,
        ci_hi,
        ci_is_range: ci.is_none(),
        q1,
        q3,
        qcd: qcd(q1, q3).unwrap_or(0.0),
        min: s[0],
        max: s[n - 1],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_running_mean_of_huge_values_stays_finite_and_merges() {
        let mut a = RunningMean::default();
        assert_eq!(a.get(), None);
        a.add(1e308);
        a.add(1e308);
        assert_eq!(a.get(), Some(1e308), "two of 1e308 sum to infinity; their mean is 1e308");
        let mut b = RunningMean::default();
        for x in [1.0, 2.0, 6.0] {
            b.add(x);
        }
        assert_eq!(b.get(), Some(3.0));
        let mut c = RunningMean::default();
        c.add(7.0);
        b.merge(&c);
        assert_eq!(b.get(), Some(4.0), "(1 + 2 + 6 + 7) / 4");
        let mut empty = RunningMean::default();
        empty.merge(&RunningMean::default());
        assert_eq!(empty.get(), None);
        empty.merge(&b);
        assert_eq!(empty.get(), Some(4.0));
    }

    use super::*;

    #[test]
    fn runs_test_by_hand() {
        // 1..=13 rising: the median 7 is left out; 6 below then 6 above, 2 runs. μ = 2·36/12 + 1
        // = 7, σ² = 2·36·(72 − 12)/(144·11) = 2.7273, z = −(5 − ½)/1.6514 = −2.7249,
        // p = erfc(2.7249/√2) = 0.00643.
        let rising: Vec<f64> = (1..=13).map(f64::from).collect();
        let r = runs_test(&rising).unwrap();
        assert_eq!((r.runs, r.expected), (2, 7.0));
        assert!((r.z + 2.7249).abs() < 1e-4 && (r.p - 0.00643).abs() < 1e-5, "{r:?}");
        // Alternating around the median: 12 runs, as many too many: z = +2.7249.
        let alternating = [1.0, 12.0, 2.0, 11.0, 3.0, 10.0, 4.0, 9.0, 5.0, 8.0, 6.0, 7.0];
        let r = runs_test(&alternating).unwrap();
        assert_eq!(r.runs, 12);
        assert!((r.z - 2.7249).abs() < 1e-4, "{r:?}");
        // A shuffled order of the same values: about the expected runs, nothing to see.
        let mixed = [4.0, 9.0, 2.0, 1.0, 11.0, 12.0, 5.0, 3.0, 8.0, 10.0, 6.0, 7.0];
        let r = runs_test(&mixed).unwrap();
        assert_eq!(r.runs, 8);
        assert!(r.z.abs() < 0.5 && r.p > 0.5, "{r:?}");
        // Too few values off the median, or all on one side: no verdict.
        assert_eq!(runs_test(&rising[..9]), None);
        assert_eq!(runs_test(&[]), None);
        assert_eq!(runs_test(&[5.0; 20]), None);
    }

    #[test]
    fn block_length_is_the_mean_run_within_bounds() {
        assert_eq!(block_length(100, 50), 2, "independent values: runs of about 2");
        assert_eq!(block_length(100, 26), 4, "⌈100/26⌉");
        assert_eq!(block_length(100, 1), 50, "at most half the sample");
        assert_eq!(block_length(10, 100), 2, "at least 2");
        assert_eq!(block_length(3, 0), 2);
    }

    /// A series whose values are correlated in time (AR(1), φ = 0.8, stationary, true median 0):
    /// the exact interval, which assumes independence, misses the true median far more often
    /// than 5 % of the time; blocks of the mean run length miss it much less often.
    #[test]
    fn blocks_widen_the_median_interval_of_correlated_values() {
        let mut rng = Rng::new(7);
        let phi: f64 = 0.8;
        let (mut exact_covers, mut block_covers, series_count) = (0, 0, 200);
        for seed in 0..series_count {
            let mut v = rng.normal() / (1.0 - phi * phi).sqrt();
            let series: Vec<f64> = (0..120)
                .map(|_| {
                    v = phi * v + rng.normal();
                    v
                })
                .collect();
            let mut sorted = series.clone();
            sorted.sort_by(f64::total_cmp);
            let block = block_length(series.len(), runs_test(&series).unwrap().runs);
            let exact = median_ci(&sorted, 0.95).unwrap();
            exact_covers += usize::from(exact.low <= 0.0 && 0.0 <= exact.high);
            let (low, high) =
                bootstrap_median_ci(Sample::in_blocks(&sorted, &series, block), 0.95, 1000, seed).unwrap();
            block_covers += usize::from(low <= 0.0 && 0.0 <= high);
        }
        assert!(exact_covers < 150, "the exact interval covers {exact_covers} of {series_count}");
        assert!(block_covers >= exact_covers + 30, "blocks {block_covers}, exact {exact_covers}");
    }

    /// Every interval of a resampled median lies within the smallest and the largest value, and
    /// even that widest interval covers the median of five independent values only with
    /// probability 1 − 2·(½)⁵ = 0.9375 (by hand: the median is outside it when all five fall on
    /// one side of it): no 95 % interval of five values exists, resampled or not. Six values:
    /// 1 − 2/64 = 0.969 ≥ 0.95, and the bootstrap gives one.
    #[test]
    fn bootstrap_median_ci_has_no_interval_below_its_level() {
        let (five, order) = ([1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 1.0, 5.0, 2.0, 4.0]);
        let strata = [2, 3];
        assert_eq!(bootstrap_median_ci(Sample::in_strata(&five, &order, 1, &strata), 0.95, 1000, 1), None);
        assert_eq!(bootstrap_median_ci(Sample::in_blocks(&five, &order, 2), 0.95, 1000, 1), None);
        assert_eq!(bootstrap_median_ci(Sample::independent(&five), 0.95, 1000, 1), None);
        // At 90 %, five values suffice (0.9375 ≥ 0.9).
        assert!(bootstrap_median_ci(Sample::independent(&five), 0.90, 1000, 1).is_some());
        let six = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let (low, high) = bootstrap_median_ci(Sample::in_strata(&six, &six, 1, &[3, 3]), 0.95, 1000, 1).unwrap();
        assert!(1.0 <= low && low <= high && high <= 6.0, "[{low}, {high}]");
    }

    /// Blocks of 1 are draws one by one: the same figures as an independent sample.
    #[test]
    fn blocks_of_one_are_independent_draws() {
        let x: Vec<f64> = (1..=40).map(|i| f64::from(i * 7 % 41)).collect();
        let mut sorted = x.clone();
        sorted.sort_by(f64::total_cmp);
        let y: Vec<f64> = sorted.iter().map(|v| v * 1.1).collect();
        let one = Sample::in_blocks(&sorted, &x, 1);
        assert_eq!(ratio_of_medians(one, &y, 0.95, 500, 3), ratio_of_medians(&sorted, &y, 0.95, 500, 3));
        assert_eq!(qcd_difference(one, &y, 0.95, 500, 3), qcd_difference(&sorted, &y, 0.95, 500, 3));
        let three = Sample::in_blocks(&sorted, &x, 3);
        assert_ne!(qcd_difference(three, &y, 0.95, 500, 3), qcd_difference(&sorted, &y, 0.95, 500, 3));
    }

    /// Three parts (jobs) at different speeds, each of independent values: judged as one series
    /// their values come in spells a part long; judged within the parts, they do not. With one
    /// part the test is the plain runs test's.
    #[test]
    fn runs_within_parts_do_not_see_the_parts_as_spells() {
        let mut rng = Rng::new(11);
        let series: Vec<f64> = [1.0, 1.3, 0.8]
            .into_iter()
            .flat_map(|speed| (0..40).map(|_| speed * (0.02 * rng.normal()).exp()).collect::<Vec<_>>())
            .collect();
        let whole = runs_test(&series).unwrap();
        assert!(whole.z < -5.0, "{whole:?}");
        let within = runs_test_within(&series, &[40, 40, 40]).unwrap();
        assert!(within.z.abs() < 2.0 && within.p > 0.05, "{within:?}");
        // By hand: each part's runs about its own median, summed.
        let by_part: usize = series.chunks(40).map(|c| runs_test(c).unwrap().runs).sum();
        assert_eq!(within.runs, by_part);
        assert_eq!(runs_test_within(&series, &[120]), Some(whole));
        assert_eq!(runs_test_within(&series, &[]), Some(whole));
        assert_eq!(runs_test_within(&series, &[40, 40]), Some(whole), "parts that do not add up: one part");
    }

    /// A stratified resample draws each part's length from that part alone; the ratio of two
    /// policies measured alike in every part then has a narrower interval than when the parts'
    /// mix varies from resample to resample, and it still covers the true ratio.
    #[test]
    fn strata_are_resampled_apart() {
        // Parts whose values do not overlap: every resample has 10, 20 and 30 values in them.
        let x: Vec<f64> = (0..10)
            .map(f64::from)
            .chain((0..20).map(|i| 100.0 + f64::from(i)))
            .chain((0..30).map(|i| 1000.0 + f64::from(i)))
            .collect();
        let sorted = x.clone();
        let s = Sample::in_strata(&sorted, &x, 1, &[10, 20, 30]);
        let (mut rng, mut counts, mut out) = (Rng::new(3), Vec::new(), Vec::new());
        for _ in 0..50 {
            let r = s.resample(&mut rng, &mut counts, &mut out);
            let part = |lo: f64, hi: f64| r.iter().filter(|&&v| lo <= v && v < hi).count();
            assert_eq!((part(0.0, 10.0), part(100.0, 120.0), part(1000.0, 1030.0)), (10, 20, 30));
        }
        // Two policies, B 1.1 × A, in three jobs of different speeds.
        let mut rng = Rng::new(5);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for speed in [1.0, 1.2, 0.9] {
            for _ in 0..40 {
                a.push(speed * (0.02 * rng.normal()).exp());
                b.push(1.1 * speed * (0.02 * rng.normal()).exp());
            }
        }
        let (mut sa, mut sb) = (a.clone(), b.clone());
        sa.sort_by(f64::total_cmp);
        sb.sort_by(f64::total_cmp);
        let jobs = [40, 40, 40];
        let strata =
            ratio_of_medians(Sample::in_strata(&sa, &a, 1, &jobs), Sample::in_strata(&sb, &b, 1, &jobs), 0.95, 2000, 1)
                .unwrap();
        let mixed = ratio_of_medians(&sa, &sb, 0.95, 2000, 1).unwrap();
        assert!(strata.1 <= 1.1 && 1.1 <= strata.2, "{strata:?}");
        assert!(strata.2 - strata.1 < 0.75 * (mixed.2 - mixed.1), "strata {strata:?}, mixed {mixed:?}");
    }

    #[test]
    fn quantiles_match_numpy() {
        let x = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(median(&x), Some(3.0));
        assert_eq!(quantile(&x, 0.25), Some(2.0));
        assert!((quantile(&x, 0.99).unwrap() - 9.76).abs() < 1e-12); // numpy.percentile(x, 99)
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        // An empty sample has none, and says so rather than panicking.
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(median(&[]), None);
        assert_eq!(outliers(&[]), None);
        assert_eq!(summarize(&[f64::NAN]), Summary::default());
    }

    #[test]
    fn median_ci_matches_binomial_tables() {
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        let ci = median_ci(&x, 0.95).unwrap();
        // n = 100: the 95 % interval is [x(40), x(61)] (Conover, table A3), coverage 0.9648.
        assert_eq!((ci.low, ci.high), (40.0, 61.0));
        assert!((ci.coverage - 0.9648).abs() < 1e-4, "{}", ci.coverage);
        let six: Vec<f64> = (1..=MIN_VALUES_MEDIAN_CI).map(|i| i as f64).collect();
        assert_eq!(median_ci(&six, 0.95).map(|c| (c.low, c.high)), Some((1.0, 6.0)));
        assert_eq!(median_ci(&six[..MIN_VALUES_MEDIAN_CI - 1], 0.95), None);
        assert!(median_ci(&[], 0.95).is_none());
        // Large n stays finite (0.5^n underflows in linear space).
        let big: Vec<f64> = (0..100_000).map(f64::from).collect();
        let ci = median_ci(&big, 0.95).unwrap();
        assert!(ci.low < 50_000.0 && ci.high > 50_000.0 && ci.high - ci.low < 700.0);
    }

    #[test]
    fn erfc_values() {
        for (x, want) in
            [(0.0, 1.0), (1.0, 0.157_299_207_050_285), (2.0, 0.004_677_734_981_047), (-1.0, 1.842_700_792_949_715)]
        {
            assert!((erfc(x) - want).abs() / want < 2e-7, "erfc({x}) = {}", erfc(x));
        }
    }

    #[test]
    fn mann_whitney_textbook() {
        // U = 17 (pairs counted by hand); no ties: σ² = 5·4·10/12, z = (17 − 10 − ½)/σ = 1.59217
        // (SciPy's mannwhitneyu(method="asymptotic") gives the same z, and p = 0.111347).
        let r = mann_whitney(&[19.0, 22.0, 16.0, 29.0, 24.0], &[20.0, 11.0, 17.0, 12.0]).unwrap();
        assert_eq!(r.u, 17.0);
        assert!((r.z - 1.592_168).abs() < 1e-5, "{r:?}");
        // Exact: U ≥ 17 or U ≤ 3 (its mirror) in 2·7 of the C(9, 4) = 126 splits (U = u in as
        // many as u has partitions into at most 4 parts of at most 5: 1, 1, 2, 3 for u = 0..=3).
        assert!(r.exact && (r.p - 14.0 / 126.0).abs() < 1e-12, "{r:?}");
        // All tied: no evidence.
        assert_eq!(mann_whitney(&[1.0; 4], &[1.0; 3]).unwrap().p, 1.0);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }

    /// Three values each, all of x above all of y: 2 of the 20 splits are that extreme, p = 0.1.
    /// The normal approximation without a continuity correction said 0.0495, "significant" at
    /// 0.05 from six values; with it, 0.081, still too small.
    #[test]
    fn small_samples_get_the_exact_p() {
        let r = mann_whitney(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!(r.exact && (r.p - 0.1).abs() < 1e-12, "{r:?}");
        let parts: [(&[f64], &[f64]); 2] = [(&[4.0, 5.0], &[1.0, 2.0]), (&[14.0, 15.0], &[11.0, 12.0])];
        // Each part: 1 of C(4, 2) = 6 splits has both x above both y; T is extreme in both parts
        // together, or in neither direction: 2/36.
        let r = van_elteren(&parts).unwrap();
        assert!(r.exact && (r.p - 2.0 / 36.0).abs() < 1e-12, "{r:?}");
        // Samples so large that the work bound itself passes u64: the normal approximation.
        let (x, y): (Vec<f64>, Vec<f64>) =
            ((0..50_000).map(f64::from).collect(), (0..50_000).map(|i| f64::from(i) + 0.5).collect());
        assert!(!mann_whitney(&x, &y).unwrap().exact);
        // Past the work bound, the normal approximation, with its continuity correction.
        let x: Vec<f64> = (0..200).map(|i| f64::from(i * 7 % 201)).collect();
        let y: Vec<f64> = x.iter().map(|v| v + 3.0).collect();
        let r = mann_whitney(&x, &y).unwrap();
        assert!(!r.exact && (r.p - erfc(r.z.abs() / std::f64::consts::SQRT_2)).abs() < 1e-15, "{r:?}");
    }

    /// Every split of every part counted by brute force (bitmasks), T in floating point: the exact
    /// p-value is that, for parts of any sizes up to 8 values, with ties.
    #[test]
    fn exact_p_is_every_split_counted() {
        fn u_of(x: &[f64], y: &[f64]) -> f64 {
            let mut u = 0.0;
            for a in x {
                for b in y {
                    u += if a > b {
                        1.0
                    } else if a == b {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
            u
        }
        // Each part's T = U/(N+1) over its splits.
        fn ts(x: &[f64], y: &[f64]) -> Vec<f64> {
            let pooled = [x, y].concat();
            let n = pooled.len();
            (0u32..1 << n)
                .filter(|m| m.count_ones() as usize == x.len())
                .map(|m| {
                    let side = |x: bool| -> Vec<f64> {
                        (0..n).filter(|i| (m & (1 << i) != 0) == x).map(|i| pooled[i]).collect()
                    };
                    u_of(&side(true), &side(false)) / (n as f64 + 1.0)
                })
                .collect()
        }
        let mut rng = Rng::new(17);
        for case in 0..150 {
            let parts: Vec<(Vec<f64>, Vec<f64>)> = (0..1 + case % 3)
                .map(|_| {
                    let (n1, n2) = (1 + rng.index(4), 1 + rng.index(4));
                    // Few distinct values: ties often; a shift now and then: small p too.
                    let shift = if case % 4 == 0 { 2.0 } else { 0.0 };
                    let mut v = || rng.index(5) as f64;
                    ((0..n1).map(|_| v() + shift).collect(), (0..n2).map(|_| v()).collect())
                })
                .collect();
            let refs: Vec<(&[f64], &[f64])> = parts.iter().map(|(x, y)| (&x[..], &y[..])).collect();
            let r = van_elteren(&refs).unwrap();
            let observed: f64 = parts.iter().map(|(x, y)| u_of(x, y) / ((x.len() + y.len()) as f64 + 1.0)).sum();
            let mean: f64 =
                parts.iter().map(|(x, y)| (x.len() * y.len()) as f64 / 2.0 / ((x.len() + y.len()) as f64 + 1.0)).sum();
            let mut all = vec![0.0];
            for (x, y) in &parts {
                let t = ts(x, y);
                all = all.iter().flat_map(|a| t.iter().map(move |b| a + b)).collect();
            }
            let far = (observed - mean).abs() - 1e-9;
            let want = all.iter().filter(|t| (*t - mean).abs() >= far).count() as f64 / all.len() as f64;
            let want = if parts.iter().all(|(x, y)| x.iter().chain(y).all(|v| *v == x[0])) { 1.0 } else { want };
            assert!(r.exact && (r.p - want).abs() < 1e-9, "case {case}: {parts:?}: {r:?}, want p = {want}");
        }
    }

    /// Van Elteren's test with one part is the rank-sum test; with parts at different levels it
    /// compares the samples within each part, where the pooled test sees mostly the parts' levels.
    #[test]
    fn van_elteren_compares_within_parts() {
        let (x, y) = ([19.0, 22.0, 16.0, 29.0, 24.0], [20.0, 11.0, 17.0, 12.0]);
        let one = van_elteren(&[(&x, &y)]).unwrap();
        let mw = mann_whitney(&x, &y).unwrap();
        assert_eq!(one.u, 17.0);
        assert!((one.z - mw.z).abs() < 1e-12 && one.p == mw.p, "{one:?} {mw:?}");
        // Two parts, x 1 % above y in each, the second part 50 % above the first: by hand,
        // part 1: x = [1.01, 1.02, 1.03], y = [1.0, 1.005, 1.015]: U = 2 + 3 + 3 = 8 (x > y pairs),
        // part 2 the same scaled by 1.5: U = 8. N = 6 each, weight 1/7: T = 16/7, E[T] = 2·(9/2)/7,
        // Var T = 2 · (3·3·7/12)/49, continuity correction ½ · 1/7.
        let (x1, y1) = (vec![1.01, 1.02, 1.03], vec![1.0, 1.005, 1.015]);
        let (x2, y2): (Vec<f64>, Vec<f64>) =
            (x1.iter().map(|v| v * 1.5).collect(), y1.iter().map(|v| v * 1.5).collect());
        let r = van_elteren(&[(&x1, &y1), (&x2, &y2)]).unwrap();
        let (t, mean, var) = (16.0 / 7.0, 9.0 / 7.0, 2.0 * (63.0 / 12.0) / 49.0);
        assert_eq!(r.u, 16.0);
        assert!((r.z - (t - mean - 0.5 / 7.0) / f64::sqrt(var)).abs() < 1e-12, "{r:?}");
        // Exact: of a part's 20 splits, U = 9 in 1, 8 in 1, 7 in 2; U₁ + U₂ ≥ 16 (T ≥ 16/7) in
        // pairs (9,9) 1, (9,8) 1, (8,9) 1, (8,8) 1, (9,7) 2,
        // (7,9) 2: 8 of the 400 pairs of splits; as many at the other end: 16/400.
        assert!(r.exact && (r.p - 16.0 / 400.0).abs() < 1e-12, "{r:?}");
        // Pooled, the parts' levels dominate the ranks: U is the 16 pairs within parts and the 9
        // of x's second part over y's first, 25 of 36 (mean 18), and the test sees less.
        let (xs, ys): (Vec<f64>, Vec<f64>) = ([x1.clone(), x2.clone()].concat(), [y1.clone(), y2.clone()].concat());
        let pooled = mann_whitney(&xs, &ys).unwrap();
        assert!(pooled.z.abs() < r.z.abs() && pooled.p > r.p, "pooled {pooled:?}, within parts {r:?}");
        // A part with one sample empty says nothing; all such: no test.
        assert_eq!(van_elteren(&[(&x1, &y1), (&x2, &[])]).map(|r| r.u), Some(8.0));
        assert!(van_elteren(&[(&[], &y1)]).is_none());
    }

    #[test]
    fn bootstrap_median_matches_plain_resampling() {
        // The O(1) draw and n explicit draws give the same distribution of the median.
        for n in [7usize, 8, 40] {
            let x: Vec<f64> = (0..n).map(|i| (i * i) as f64).collect();
            let mut rng = Rng::new(3);
            let fast: Vec<f64> = (0..40_000).map(|_| bootstrap_median(&x, &mut rng).unwrap()).collect();
            let slow: Vec<f64> = (0..40_000)
                .map(|_| {
                    let mut r: Vec<f64> = (0..n).map(|_| x[rng.index(n)]).collect();
                    r.sort_by(f64::total_cmp);
                    median(&r).unwrap()
                })
                .collect();
            let (mut f, mut s) = (fast.clone(), slow.clone());
            f.sort_by(f64::total_cmp);
            s.sort_by(f64::total_cmp);
            for p in [0.025, 0.25, 0.5, 0.75, 0.975] {
                let (a, b) = (quantile(&f, p).unwrap(), quantile(&s, p).unwrap());
                let spread = x[n - 1] - x[0];
                assert!((a - b).abs() <= 0.03 * spread, "n={n} p={p}: {a} vs {b}");
            }
            assert!((mean(&fast) - mean(&slow)).abs() < 0.01 * x[n - 1], "n={n}");
        }
        // One value is its own median; none has none (and no panic).
        let mut rng = Rng::new(3);
        assert_eq!(bootstrap_median(&[4.0], &mut rng), Some(4.0));
        assert_eq!(bootstrap_median(&[], &mut rng), None);
    }

    #[test]
    fn ratio_ci_covers_the_true_ratio() {
        let mut rng = Rng::new(9);
        let x: Vec<f64> = (0..400).map(|_| 100.0 * (1.0 + 0.05 * rng.normal())).collect();
        let y: Vec<f64> = (0..400).map(|_| 120.0 * (1.0 + 0.05 * rng.normal())).collect();
        let (mut xs, mut ys) = (x.clone(), y.clone());
        xs.sort_by(f64::total_cmp);
        ys.sort_by(f64::total_cmp);
        let (r, lo, hi) = ratio_of_medians(&xs, &ys, 0.95, 4000, 1).unwrap();
        assert!(lo < 1.2 && 1.2 < hi && lo < r && r < hi && hi - lo < 0.03, "{r} [{lo}, {hi}]");
        assert_eq!(ratio_of_medians(&xs, &ys, 0.95, 4000, 1), Some((r, lo, hi)), "seeded: reproducible");
        assert!(ratio_of_medians(&[0.0], &ys, 0.95, 10, 1).is_none());
    }

    #[test]
    fn resampling_by_counts_is_sorting_the_draws() {
        let x: Vec<f64> = (0..9).map(|i| f64::from(i * i)).collect();
        let (mut counts, mut buf) = (Vec::new(), Vec::new());
        let (mut a, mut b) = (Rng::new(5), Rng::new(5));
        for _ in 0..100 {
            let mut plain: Vec<f64> = (0..x.len()).map(|_| x[b.index(x.len())]).collect();
            plain.sort_by(f64::total_cmp);
            assert_eq!(resample_sorted(&x, &mut a, &mut counts, &mut buf), &plain[..]);
        }
    }

    #[test]
    fn qcd_difference_tells_spreads_apart() {
        let mut rng = Rng::new(4);
        let mut sample = |center: f64, spread: f64, n: usize| {
            let mut v: Vec<f64> = (0..n).map(|_| center * (1.0 + spread * rng.normal())).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (x, y) = (sample(100.0, 0.01, 200), sample(100.0, 0.01, 200));
        let wide = sample(100.0, 0.05, 200);
        let q = |v: &[f64]| sample_qcd(v).unwrap();

        // Identical samples: the difference is 0 and the interval straddles it.
        let (d, lo, hi) = qcd_difference(&x, &x, 0.95, 2000, 1).unwrap();
        assert!(d == 0.0 && lo < 0.0 && 0.0 < hi, "{d} [{lo}, {hi}]");
        // Two samples of one distribution: the interval contains 0.
        let (d, lo, hi) = qcd_difference(&x, &y, 0.95, 2000, 1).unwrap();
        assert_eq!(d, q(&y) - q(&x));
        assert!(lo < 0.0 && 0.0 < hi, "{d} [{lo}, {hi}]");
        // Five times the spread (true QCDs 0.0067 and 0.034): the interval lies above 0, around d,
        // and the sign follows the order of the arguments.
        let (d, lo, hi) = qcd_difference(&x, &wide, 0.95, 2000, 1).unwrap();
        assert!(0.0 < lo && lo < d && d < hi, "{d} [{lo}, {hi}]");
        let (d2, lo2, hi2) = qcd_difference(&wide, &x, 0.95, 2000, 1).unwrap();
        assert!(d2 == -d && hi2 < 0.0, "{d2} [{lo2}, {hi2}]");

        // Seeded: reproducible; another seed, other draws.
        assert_eq!(qcd_difference(&x, &wide, 0.95, 2000, 1), Some((d, lo, hi)));
        assert_ne!(qcd_difference(&x, &wide, 0.95, 2000, 2), Some((d, lo, hi)));
    }

    #[test]
    fn qcd_difference_degenerate_cases() {
        let x = [1.0, 2.0, 3.0];
        assert_eq!(qcd_difference(&[1.0], &x, 0.95, 100, 1), None, "one value has no spread to resample");
        assert_eq!(qcd_difference(&x, &[], 0.95, 100, 1), None);
        assert_eq!(qcd(0.0, 0.0), None);
        assert_eq!(qcd_difference(&[0.0, 0.0], &x, 0.95, 100, 1), None, "QCD undefined");
        // Resamples whose QCD is undefined are left out: [0, 0, 4] resamples to all zeros now and then.
        let (d, lo, hi) = qcd_difference(&x, &[0.0, 0.0, 4.0], 0.95, 1000, 1).unwrap();
        assert!(d.is_finite() && lo.is_finite() && hi.is_finite() && lo <= hi);
        // Constant samples: no spread, and no doubt about it.
        assert_eq!(qcd_difference(&[2.0; 5], &[3.0; 4], 0.95, 100, 1), Some((0.0, 0.0, 0.0)));
    }

    #[test]
    fn outliers_by_mad() {
        let mut v = vec![100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        v.push(130.0);
        let o = outliers(&v).unwrap();
        assert_eq!(o.indices, vec![6]);
        // Identical values: the 1 % floor keeps jitter from being called an outlier.
        let o = outliers(&[100.0, 100.0, 100.0, 100.4]).unwrap();
        assert!(o.indices.is_empty());
    }

    #[test]
    fn summaries_of_repeated_runs() {
        let v: Vec<f64> = (1..=20).rev().map(|x| x as f64).collect();
        let s = summarize(&v);
        assert_eq!(s.median, 10.5);
        assert_eq!((s.ci_lo, s.ci_hi), (6.0, 15.0), "n = 20: the 6th and 15th order statistics");
        assert!((s.qcd - (15.25 - 5.75) / (15.25 + 5.75)).abs() < 1e-12);
        assert!(!s.ci_is_range);
        let one = summarize(&[3.0, f64::NAN]);
        assert_eq!((one.n, one.median, one.ci_lo, one.ci_hi, one.qcd), (1, 3.0, 3.0, 3.0, 0.0));
        // Too few for an interval: the range, said to be one.
        let five = summarize(&[5.0, 1.0, 4.0, 2.0, 3.0]);
        assert!(five.ci_is_range && (five.ci_lo, five.ci_hi) == (1.0, 5.0), "{five:?}");
        let six = summarize(&[5.0, 1.0, 4.0, 2.0, 3.0, 6.0]);
        assert!(!six.ci_is_range && six.n == MIN_VALUES_MEDIAN_CI, "{six:?}");
        assert_eq!(summarize(&[]), Summary::default());
        // Large samples: the interval stays inside the sample (0.5^n underflows past n ~ 1075).
        let big: Vec<f64> = (0..5000).map(|x| x as f64).collect();
        let s = summarize(&big);
        assert!(s.ci_lo > 2400.0 && s.ci_hi < 2600.0, "{s:?}");
    }
}
