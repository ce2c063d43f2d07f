//! What `aar report` and the simulator's summaries rely on, for any sample: quantiles lie inside
//! the sample and grow with p, the median's interval holds the median with at least the asked
//! coverage, the rank test is symmetric with a p-value in [0, 1], the bootstrap intervals are
//! ordered, and nothing panics on values a record may hold (ties, zeros, one value, huge ones).
//! Iteration times are finite and non-negative; `summarize` also takes NaN and infinities.

use aar_stats::*;
use proptest::prelude::*;

/// Iteration times: ties and zeros on purpose, values from nanoseconds to hours in µs.
fn time() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => prop::sample::select(vec![0.0, 1.0, 83.3, 85.5, 1e-3]),
        3 => 0.0f64..1e4,
        1 => 0.0f64..1e10,
    ]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

proptest! {
    #![proptest_config(aar_testkit::proptest_config(1000))]

    #[test]
    fn quantiles_lie_in_the_sample_and_grow_with_p(v in prop::collection::vec(time(), 1..200), p in 0.0f64..=1.0, q in 0.0f64..=1.0) {
        let s = sorted(v);
        let (lo, hi) = (p.min(q), p.max(q));
        let (a, b) = (quantile(&s, lo).unwrap(), quantile(&s, hi).unwrap());
        prop_assert!(s[0] <= a && a <= b && b <= s[s.len() - 1], "{a} {b} of {s:?}");
        prop_assert_eq!(quantile(&s, 0.0), Some(s[0]));
        prop_assert_eq!(quantile(&s, 1.0), Some(s[s.len() - 1]));
        if let Some(c) = sample_qcd(&s) {
            prop_assert!((0.0..=1.0).contains(&c), "QCD {c}");
        }
    }

    #[test]
    fn the_median_interval_holds_the_median_with_its_coverage(v in prop::collection::vec(time(), 0..300), level in prop::sample::select(vec![0.9, 0.95, 0.99])) {
        let s = sorted(v);
        match median_ci(&s, level) {
            Some(ci) => {
                let m = median(&s).unwrap();
                prop_assert!(ci.low <= m && m <= ci.high, "{ci:?} around {m}");
                prop_assert!(ci.coverage >= level - 1e-9 && ci.coverage <= 1.0, "{ci:?}");
            }
            // None only when even the whole range covers less than `level`.
            None => prop_assert!(2.0 * 0.5f64.powi(s.len() as i32) > 1.0 - level, "no interval for n = {}", s.len()),
        }
        // Order statistics symmetric about the middle: on the ranks 0..n they sum to n − 1.
        let ranks: Vec<f64> = (0..s.len()).map(|i| i as f64).collect();
        if let Some(ci) = median_ci(&ranks, level) {
            prop_assert_eq!(ci.low + ci.high, (s.len() - 1) as f64, "{:?}", ci);
        }
    }

    #[test]
    fn the_rank_test_is_symmetric(x in prop::collection::vec(time(), 1..60), y in prop::collection::vec(time(), 1..60)) {
        let (a, b) = (mann_whitney(&x, &y).unwrap(), mann_whitney(&y, &x).unwrap());
        prop_assert!((0.0..=1.0).contains(&a.p), "{a:?}");
        prop_assert!((a.p - b.p).abs() < 1e-12 && (a.z + b.z).abs() < 1e-9, "{a:?} {b:?}");
        prop_assert!((a.u + b.u - (x.len() * y.len()) as f64).abs() < 1e-6, "{a:?} {b:?}");
    }

    #[test]
    fn bootstrap_intervals_are_ordered_and_reproducible(x in prop::collection::vec(time(), 2..80), y in prop::collection::vec(time(), 2..80), seed in any::<u64>()) {
        let (x, y) = (sorted(x), sorted(y));
        // Present exactly when defined, around the point estimate of the samples themselves.
        let ratio = ratio_of_medians(&x, &y, 0.95, 200, seed);
        prop_assert_eq!(ratio.is_some(), median(&x) > Some(0.0));
        if let Some((r, lo, hi)) = ratio {
            prop_assert_eq!(Some(r), median(&y).zip(median(&x)).map(|(y, x)| y / x));
            prop_assert!(r.is_finite() && lo <= hi, "{r} [{lo}, {hi}]");
            prop_assert_eq!(ratio, ratio_of_medians(&x, &y, 0.95, 200, seed));
        }
        let spread = qcd_difference(&x, &y, 0.95, 200, seed);
        let (qx, qy) = (sample_qcd(&x), sample_qcd(&y));
        prop_assert_eq!(spread.is_some(), qx.is_some() && qy.is_some());
        if let (Some((d, lo, hi)), Some(qx), Some(qy)) = (spread, qx, qy) {
            prop_assert_eq!(d, qy - qx);
            prop_assert!(lo <= hi && (-1.0..=1.0).contains(&lo) && (-1.0..=1.0).contains(&hi), "{d} [{lo}, {hi}]");
        }
    }

    #[test]
    fn summaries_take_any_values(v in prop::collection::vec(prop_oneof![4 => time(), 1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, -f64::INFINITY, -1.0])], 0..100)) {
        let s = summarize(&v);
        prop_assert_eq!(s.n, v.iter().filter(|x| x.is_finite()).count());
        if s.n > 0 {
            prop_assert!(s.min <= s.q1 && s.q1 <= s.median && s.median <= s.q3 && s.q3 <= s.max, "{s:?}");
            prop_assert!(s.ci_lo <= s.median && s.median <= s.ci_hi, "{s:?}");
        }
        prop_assert_eq!(s.ci_is_range, s.n < MIN_VALUES_MEDIAN_CI, "{:?}", s);
        let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let o = outliers(&finite);
        prop_assert_eq!(o.is_some(), !finite.is_empty());
        if let Some(o) = o {
            prop_assert_eq!(o.center, s.median);
            prop_assert!(o.indices.iter().all(|&i| i < s.n) && o.threshold >= 0.0, "{o:?}");
            // Listed exactly when farther from the centre than the threshold.
            for (i, x) in finite.iter().enumerate() {
                prop_assert_eq!(o.indices.contains(&i), (x - o.center).abs() > o.threshold, "{} of {:?}", x, o);
            }
        }
    }
}
