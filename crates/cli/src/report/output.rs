//! The report as an aligned table (stdout by default), one JSON document (`--json`) or CSV
//! (`--csv`, one row per policy; columns in [`CSV_COLUMNS`]).

use super::analysis::{ExperimentReport, PolicyStats, Report, Verdict, MARGIN, MIN_ITERATIONS_CI};
use aar_record::{count, human_bytes};

/// Time unit of one experiment's tables: chosen from its fastest median so that every median
/// shows about four significant digits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    pub name: &'static str,
    pub ns: f64,
    pub decimals: usize,
}

impl Unit {
    pub fn for_experiment(e: &ExperimentReport) -> Unit {
        let smallest =
            e.policy_stats.iter().filter_map(|p| p.median_ns).filter(|m| *m > 0.0).fold(f64::INFINITY, f64::min);
        Unit::for_value(smallest)
    }

    /// The unit is the one the value shows in once rounded to four digits: 999,990 ns is
    /// `1.000 ms`, not `1000.0 µs`.
    pub fn for_value(ns: f64) -> Unit {
        let (name, scale) = if !ns.is_finite() || ns < 999.5 {
            ("ns", 1.0)
        } else if ns < 999_950.0 {
            ("µs", 1e3)
        } else if ns < 999_950_000.0 {
            ("ms", 1e6)
        } else {
            ("s", 1e9)
        };
        let v = if ns.is_finite() && ns > 0.0 { ns / scale } else { 1.0 };
        let decimals = if scale == 1.0 { 0 } else { (3 - v.log10().floor() as i64).clamp(0, 3) as usize };
        Unit { name, ns: scale, decimals }
    }

    pub fn fmt(&self, ns: f64) -> String {
        format!("{:.*}", self.decimals, ns / self.ns)
    }

    /// With the unit, e.g. `1.234 ms`.
    pub fn fmt_unit(&self, ns: f64) -> String {
        format!("{} {}", self.fmt(ns), self.name)
    }
}

/// A name from a file, made safe for a terminal and an SVG file: characters not [`printable`]
/// become `?`, long names are cut.
pub fn clean(name: &str) -> String {
    clean_to(name, 40)
}

/// Whether a record's character can be shown as it is: not a control character (it would drive
/// a terminal), nor U+FFFE or U+FFFF, which XML forbids (an SVG file with one does not open).
pub fn printable(c: char) -> bool {
    !c.is_control() && c != '\u{FFFE}' && c != '\u{FFFF}'
}

/// [`clean`] with room for `max` characters.
pub fn clean_to(name: &str, max: usize) -> String {
    let mut s: String = name.chars().take(max).map(|c| if printable(c) { c } else { '?' }).collect();
    if name.chars().count() > max {
        s.push('…');
    }
    if s.is_empty() {
        s.push_str("\"\"");
    }
    s
}

/// Things named in one warning when each needs its own fix or says its own cause (a link to
/// point anew, a file to give, a rank's record); the others are counted ([`first_few`]).
pub const NAMED: usize = 4;

/// Ranks named by number in one warning; the others are counted ([`first_few`]).
pub const RANKS_NAMED: usize = 8;

/// The first `limit` of `items` (in order; `total` of them in all, whether or not `items` yields
/// them all: a job may have millions of ranks), and how many more, the last after "and": "3, 5 and
/// 9", "0, 1, 2, 3 and 4 more" (`sep` ", "); "a; b; c; d; and 2 more" (`sep` "; ": a list of
/// clauses keeps its semicolons). The one way a warning names a list it cuts short.
pub fn first_few<T: std::fmt::Display>(
    items: impl IntoIterator<Item = T>,
    total: usize,
    limit: usize,
    sep: &str,
) -> String {
    let mut named: Vec<String> = items.into_iter().take(limit).map(|i| i.to_string()).collect();
    match total.saturating_sub(named.len()) {
        0 => {}
        more => named.push(format!("{more} more")),
    }
    let and = if sep.trim() == ";" { "; and " } else { " and " };
    match named.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{}{and}{last}", rest.join(sep)),
    }
}

fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        "<1e-300".into()
    } else if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// A significance threshold (0.05, or 0.05 divided by the comparisons) to three significant digits:
/// `0.05`, `0.0167`, `0.00833`, not `0.008333333333333333`.
fn fmt_alpha(a: f64) -> String {
    let decimals = (2 - a.log10().floor() as i32).clamp(0, 20) as usize;
    let s = format!("{a:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A difference of QCDs: one more decimal than the QCDs (differences of QCDs below 0.01 are
/// common), and no `-0.0000`.
fn fmt_qcd_difference(d: f64) -> String {
    let s = format!("{d:.4}");
    match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    }
}

/// A mean latency (µs) or stall ratio: three decimals, as `1.500`; from a million on (no window
/// measures that: a damaged or edited record's, up to 1e308), in exponent form, `1.000e308`, not
/// the hundreds of digits that would push the table's last columns off the screen. A value above
/// 0 that would round to `0.000` is `<0.001`: a small stall ratio is not none, nor a small QCD
/// (which the policy table prints alike) no spread, nor a congestion impact or a ratio of medians
/// and its interval (alike too) none.
fn fmt_mean(v: f64) -> String {
    if v > 0.0 && v < 0.0005 {
        "<0.001".into()
    } else if v.abs() < 1e6 {
        format!("{v:.3}")
    } else {
        format!("{v:.3e}")
    }
}

fn dash() -> String {
    "-".into()
}

/// Render rows as aligned columns, two spaces apart, without borders (`right[k]`: right-align
/// column k).
pub fn render(out: &mut String, header: &[String], rows: &[Vec<String>], right: &[bool]) {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING).set_header(header).add_rows(rows);
    for (k, column) in table.column_iter_mut().enumerate() {
        // One space on each side of each cell makes the gap; none before the first column.
        column.set_padding((u16::from(k > 0), 1));
        if right[k] {
            column.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The main table's cells for one policy (also used by the HTML page); `first_n`: the first
/// policy's iterations. An interval too few iterations leave out shows how many there are (`n=1`).
pub fn policy_cells(p: &PolicyStats, first_n: usize, u: &Unit) -> Vec<String> {
    let t = |v: Option<f64>| v.map_or_else(dash, |v| u.fmt(v));
    let few = |n: usize| move || if n > 0 && n < MIN_ITERATIONS_CI { format!("n={n}") } else { dash() };
    let fewest = few(p.iterations.min(first_n));
    let (qcd_ci, ratio, ratio_ci, pval, sig) = match &p.vs_first {
        Some(c) => (
            c.qcd_difference_ci
                .map_or_else(&fewest, |d| format!("{}–{}", fmt_qcd_difference(d[0]), fmt_qcd_difference(d[1]))),
            if c.ratio.is_finite() { fmt_mean(c.ratio) } else { dash() },
            c.ratio_ci.map_or_else(&fewest, |r| format!("{}–{}", fmt_mean(r[0]), fmt_mean(r[1]))),
            fmt_p(c.p),
            c.verdict.label(),
        ),
        None if p.iterations > 0 => (dash(), "1".into(), dash(), dash(), dash()),
        None => (dash(), dash(), dash(), dash(), dash()),
    };
    vec![
        clean(&p.policy),
        p.iterations.to_string(),
        t(p.median_ns),
        p.median_ci_ns.map_or_else(few(p.iterations), |c| format!("{}–{}", u.fmt(c[0]), u.fmt(c[1]))),
        t(p.mean_ns),
        t(p.p99_ns),
        t(p.max_ns),
        p.qcd.map_or_else(dash, fmt_mean),
        qcd_ci,
        ratio,
        ratio_ci,
        pval,
        sig,
    ]
}

pub const POLICY_HEADER: [&str; 13] = [
    "policy",
    "iters",
    "median",
    "95% CI",
    "mean",
    "p99",
    "max",
    "QCD",
    "QCD Δ 95% CI",
    "ratio",
    "ratio 95% CI",
    "p",
    "significant",
];

/// Cells of the routing table: share of bytes per mode, then the sums.
/// Only the modes that carried bytes in some policy get a column.
pub fn routing_cells(e: &ExperimentReport) -> (Vec<String>, Vec<Vec<String>>) {
    let used: Vec<bool> = (0..e.modes.len())
        .map(|m| e.policy_stats.iter().any(|p| p.modes.get(m).is_some_and(|x| x.bytes > 0)))
        .collect();
    let mut header = vec!["policy".to_string()];
    header.extend(e.modes.iter().zip(&used).filter(|(_, u)| **u).map(|(m, _)| clean(m)));
    header.extend(["messages", "bytes", "decisions", "switches", "latency µs", "stall"].map(String::from));
    let rows = e
        .policy_stats
        .iter()
        .map(|p| {
            let mut r = vec![clean(&p.policy)];
            r.extend(
                p.modes
                    .iter()
                    .zip(&used)
                    .filter(|(_, u)| **u)
                    .map(|(m, _)| m.share.map_or_else(dash, |s| format!("{:.1}%", 100.0 * s))),
            );
            r.push(p.modes.iter().fold(0u64, |a, m| a.saturating_add(m.messages)).to_string());
            r.push(human_bytes(p.modes.iter().fold(0u64, |a, m| a.saturating_add(m.bytes))));
            r.push(p.decisions.to_string());
            r.push(p.switches.to_string());
            r.push(p.latency_us_mean.map_or_else(dash, fmt_mean));
            r.push(p.stall_ratio_mean.map_or_else(dash, fmt_mean));
            r
        })
        .collect();
    (header, rows)
}

/// Cells of the congestion-impact table (GPCNeT style).
pub fn congestion_cells(e: &ExperimentReport, u: &Unit) -> (Vec<String>, Vec<Vec<String>>) {
    let header =
        ["policy", "isolated", "congested", "median iso", "median cong", "impact", "p99 iso", "p99 cong", "impact p99"]
            .map(String::from)
            .to_vec();
    let t = |v: Option<f64>| v.map_or_else(dash, |v| u.fmt(v));
    let r = |v: Option<f64>| v.map_or_else(dash, fmt_mean);
    let rows = e
        .congestion
        .iter()
        .map(|c| {
            vec![
                clean(&c.policy),
                c.isolated.to_string(),
                c.congested.to_string(),
                t(c.isolated_median_ns),
                t(c.congested_median_ns),
                r(c.impact_median),
                t(c.isolated_p99_ns),
                t(c.congested_p99_ns),
                r(c.impact_p99),
            ]
        })
        .collect();
    (header, rows)
}

/// Cells of the per-rank table.
pub fn rank_cells(e: &ExperimentReport, u: &Unit) -> (Vec<String>, Vec<Vec<String>>) {
    let header =
        ["policy", "ranks", "median of ranks", "fastest", "slowest", "MAD", "outliers"].map(String::from).to_vec();
    let rows = e
        .per_rank
        .iter()
        .map(|r| {
            let at = |v: Option<f64>, rank: Option<u32>| match (v, rank) {
                (Some(v), Some(rank)) => format!("{} (rank {rank})", u.fmt(v)),
                _ => dash(),
            };
            let mut out: Vec<String> =
                r.outliers.iter().take(6).map(|o| format!("rank {} ({})", o.rank, u.fmt(o.median_ns))).collect();
            if r.outliers.len() > 6 {
                out.push(format!("+{} more", r.outliers.len() - 6));
            }
            vec![
                clean(&r.policy),
                r.ranks.to_string(),
                r.median_of_ranks_ns.map_or_else(dash, |v| u.fmt(v)),
                at(r.fastest_ns, r.fastest_rank),
                at(r.slowest_ns, r.slowest_rank),
                r.mad_ns.map_or_else(dash, |v| u.fmt(v)),
                if out.is_empty() { "none".into() } else { out.join(", ") },
            ]
        })
        .collect();
    (header, rows)
}

/// One-line description of an experiment.
pub fn describe(e: &ExperimentReport) -> String {
    if !e.pooled_from.is_empty() {
        let names: Vec<String> = e.pooled_from.iter().map(|n| format!("\"{}\"", clean_to(n, 60))).collect();
        return format!(
            "{} (--pool: their iterations one experiment after the other): {}; {} at most, clock {}",
            e.experiment,
            names.join(", "),
            count(e.ranks as u64, "rank", "ranks"),
            e.clock
        );
    }
    let mut expected = match e.ranks_expected {
        Some(n) if n as usize != e.ranks => format!(" of {n}"),
        _ => String::new(),
    };
    if let Some(set) = &e.output_ranks {
        expected.push_str(&format!(" (AAR_OUTPUT_RANKS={})", clean_to(set, 120)));
    }
    let ranks = match &e.process {
        Some(file) => format!("a process without a rank ({})", clean_to(file, 200)),
        None => count(e.ranks as u64, "rank", "ranks"),
    };
    format!(
        "experiment \"{}\": {}, {ranks}{expected}, clock {}, order {}, boundary {}",
        clean_to(&e.experiment, 120),
        e.source,
        e.clock,
        clean(&e.order),
        clean(&e.boundary)
    )
}

/// What the iteration counts mean.
pub fn describe_iterations(e: &ExperimentReport) -> String {
    let mut s = format!("{} used", count(e.iterations_used as u64, "iteration", "iterations"));
    let mut left = Vec::new();
    if e.iterations_incomplete > 0 && e.iterations_used < e.iterations_seen {
        left.push(format!("{} not on every rank", e.iterations_incomplete));
    }
    if e.iterations_conflicting > 0 {
        left.push(format!("{} with conflicting policies", e.iterations_conflicting));
    }
    if !left.is_empty() {
        s.push_str(&format!(" ({} left out: {})", e.iterations_seen - e.iterations_used, left.join(", ")));
    }
    if e.warmup_rows > 0 {
        s.push_str(&format!("; {} rank-iterations skipped as warm-up", e.warmup_rows));
    }
    s
}

/// Notes under the main table: what each statistic is.
pub fn notes(e: &ExperimentReport, r: &Report) -> Vec<String> {
    let first = clean(&e.policies[0]);
    let compared = e.policy_stats.iter().filter(|p| p.vs_first.is_some()).count();
    let alpha = e.policy_stats.iter().find_map(|p| p.vs_first.as_ref().map(|c| c.alpha)).unwrap_or(0.05);
    // Ranks that wrote no records (AAR_OUTPUT_RANKS naming a sample, records missing) are not
    // in the times: say of which ranks the slowest is taken.
    let of = match (e.ranks_expected, &e.output_ranks) {
        (Some(n), set) if n as usize > e.ranks => format!(
            ", of the {} read of the job's {n}{}: a slower rank without records is not seen",
            count(e.ranks as u64, "rank", "ranks"),
            set.as_ref().map_or(String::new(), |s| format!(" (AAR_OUTPUT_RANKS={})", clean_to(s, 120)))
        ),
        (None, Some(s)) => format!(
            ", of the ranks read (AAR_OUTPUT_RANKS={} named those that write): a slower rank without records is not seen",
            clean_to(s, 120)
        ),
        _ => String::new(),
    };
    let mut without: Vec<String> =
        e.ranks_without_rows.iter().map(|w| format!("{} ({})", clean_to(&w.ranks, 120), w.cause.name())).collect();
    let without = match without.len() {
        0 => String::new(),
        n => {
            let ranks: usize = e.ranks_without_rows.iter().map(|w| w.count).sum();
            if n > 1 {
                let last = without.pop().unwrap_or_default();
                without = vec![format!("{} and {last}", without.join(", "))];
            }
            format!(
                "; {} {}: {} a summary record but no iteration record read (the warnings say why), and a slower rank \
                 among them is not seen",
                if ranks == 1 { "no rows of rank" } else { "no rows of ranks" },
                without[0],
                if ranks == 1 { "it has" } else { "they have" }
            )
        }
    };
    let mut notes = vec![
        format!("iteration time = the slowest rank's end - start in each iteration{of}{without}"),
        format!(
            "95% CI of the median: {}; n=K: too few iterations for an interval ({MIN_ITERATIONS_CI} at least, \
             of each policy for the ratio's and the QCD difference's); QCD = (Q3-Q1)/(Q3+Q1), lower is less noisy",
            if e.pooled_from.is_empty() {
                "order statistics (exact binomial)"
            } else {
                "bootstrap (pooled: see below)"
            }
        ),
        format!(
            "ratio = median / median of {first}, 95% CI by a seeded bootstrap ({} resamples, seed {})",
            r.settings.bootstrap_resamples, r.settings.bootstrap_seed
        ),
        format!(
            "QCD Δ 95% CI: of QCD - QCD of {first}, by a seeded bootstrap with as many resamples; when it excludes 0, \
             the spreads differ by more than sampling noise"
        ),
        // No test without iterations of the first policy and of another (a table of one policy).
        if compared == 0 {
            format!("p: none, no test was run (a test needs iterations of {first} and of another policy)")
        } else {
            format!(
                "p: {} against {first} ({}); significant: p < {}{} \
                 and the ratio's 95% CI wholly outside {}–{}, a difference of at least {margin}% (\"{}\": p that small, \
                 the CI wholly inside: a difference too small to matter; \"maybe\": the CI reaches inside, or there is \
                 none)",
                // Pooled, p is van Elteren's (analysis.rs), as the pooled note below says.
                if e.pooled_from.is_empty() {
                    "two-sided Mann-Whitney U"
                } else {
                    "two-sided van Elteren stratified rank-sum test"
                },
                {
                    let exact = e.policy_stats.iter().filter_map(|p| p.vs_first.as_ref()).filter(|c| c.p_exact).count();
                    match (exact, compared) {
                        (0, _) => "normal approximation, tie- and continuity-corrected",
                        (n, m) if n == m => "exact: every split of the iterations counted",
                        _ => "exact for few iterations (JSON p_exact), else normal approximation, tie- and continuity-corrected",
                    }
                },
                fmt_alpha(alpha),
                if compared > 1 { format!(" (0.05 / {compared} comparisons, Bonferroni)") } else { String::new() },
                fmt_mean(1.0 - MARGIN),
                fmt_mean(1.0 + MARGIN),
                Verdict::BelowMargin.label(),
                margin = MARGIN * 100.0,
            )
        },
        "the intervals and p treat iterations as independent; a runs test of each policy's iterations in the \
         order they ran checks it, and a warning names a policy whose slow iterations came in spells"
            .into(),
    ];
    let spells: Vec<String> = e
        .policy_stats
        .iter()
        .filter(|p| p.bootstrap_block > 1)
        .map(|p| format!("{} (blocks of {})", clean(&p.policy), p.bootstrap_block))
        .collect();
    if !spells.is_empty() {
        notes.push(format!(
            "for {}: every interval by a bootstrap that resamples blocks of consecutive iterations, as long as \
             its spells are on average (the median's without an exact coverage); p still treats them as independent",
            spells.join(", ")
        ));
    }
    if !e.pooled_from.is_empty() {
        notes.push(
            "pooled: each job's iterations are judged for spells against their job's own median and resampled apart \
             from the other jobs' (a stratified bootstrap), so a job faster or slower than the others does not widen \
             the intervals; p is van Elteren's stratified rank-sum test, which compares the policies within each job"
                .into(),
        );
    }
    notes
}

/// The whole report as text tables.
pub fn table(r: &Report) -> String {
    let mut out = String::new();
    for (k, e) in r.experiments.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        let u = Unit::for_experiment(e);
        out.push_str(&format!("{}\n{}; times in {}\n\n", describe(e), describe_iterations(e), u.name));
        let first_n = e.policy_stats.first().map_or(0, |p| p.iterations);
        let rows: Vec<Vec<String>> = e.policy_stats.iter().map(|p| policy_cells(p, first_n, &u)).collect();
        let mut right = vec![true; POLICY_HEADER.len()];
        right[0] = false;
        right[POLICY_HEADER.len() - 1] = false; // significant
        render(&mut out, &POLICY_HEADER.map(String::from), &rows, &right);
        for n in notes(e, r) {
            out.push_str(&format!("  {n}\n"));
        }

        out.push_str(
            "\nrouting modes (share of bytes; modes that carried none left out) and decisions, summed over ranks\n",
        );
        let (h, rows) = routing_cells(e);
        let mut right = vec![true; h.len()];
        right[0] = false;
        render(&mut out, &h, &rows, &right);

        if !e.congestion.is_empty() {
            out.push_str(&format!("\ncongestion impact = congested / isolated (times in {})\n", u.name));
            let (h, rows) = congestion_cells(e, &u);
            let mut right = vec![true; h.len()];
            right[0] = false;
            render(&mut out, &h, &rows, &right);
        }

        // A pooled report has none: rank r of one job is not the node of rank r in another.
        if !e.per_rank.is_empty() {
            out.push_str(&format!(
                "\nper rank: each rank's median iteration time (in {}); outliers: more than 3 scaled MADs and 1% from \
                 the median of ranks\n",
                u.name
            ));
            let (h, rows) = rank_cells(e, &u);
            let mut right = vec![true, true, true, true, true, true, false];
            right[0] = false;
            render(&mut out, &h, &rows, &right);
        }
        if !e.slowest_ranks.is_empty() {
            let list: Vec<String> = e
                .slowest_ranks
                .iter()
                .map(|s| format!("rank {} ({})", s.rank, count(s.iterations as u64, "iteration", "iterations")))
                .collect();
            out.push_str(&format!("slowest rank most often: {}\n", list.join(", ")));
        }
    }
    out
}

pub fn json(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// The CSV columns, in order; then one `bytes_share:MODE` column per routing mode of any
/// experiment. Times in ns, ratios and shares as plain numbers, empty where not applicable.
pub const CSV_COLUMNS: [&str; 30] = [
    "experiment",
    "policy",
    "iterations",
    "median_ns",
    "median_ci_low_ns",
    "median_ci_high_ns",
    "mean_ns",
    "p99_ns",
    "max_ns",
    "min_ns",
    "q1_ns",
    "q3_ns",
    "qcd",
    "qcd_diff",
    "qcd_diff_ci_low",
    "qcd_diff_ci_high",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "mwu_u",
    "mwu_p",
    "significant",
    "rank_iterations",
    "decisions",
    "switches",
    "latency_us_mean",
    "stall_ratio_mean",
    "impact_median",
    "impact_p99",
    "bootstrap_block",
];

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn csv(r: &Report) -> String {
    let mut modes: Vec<&str> = Vec::new();
    for e in &r.experiments {
        for m in &e.modes {
            if !modes.contains(&m.as_str()) {
                modes.push(m);
            }
        }
    }
    let mut out = String::new();
    let mut header: Vec<String> = CSV_COLUMNS.iter().map(|c| c.to_string()).collect();
    header.extend(modes.iter().map(|m| csv_field(&format!("bytes_share:{m}"))));
    out.push_str(&header.join(","));
    out.push('\n');
    let num = |v: Option<f64>| v.filter(|v| v.is_finite()).map_or_else(String::new, |v| v.to_string());
    for e in &r.experiments {
        for (k, p) in e.policy_stats.iter().enumerate() {
            let c = p.vs_first.as_ref();
            let g = e.congestion.get(k);
            let mut row = vec![
                csv_field(&e.experiment),
                csv_field(&p.policy),
                p.iterations.to_string(),
                num(p.median_ns),
                num(p.median_ci_ns.map(|c| c[0])),
                num(p.median_ci_ns.map(|c| c[1])),
                num(p.mean_ns),
                num(p.p99_ns),
                num(p.max_ns),
                num(p.min_ns),
                num(p.q1_ns),
                num(p.q3_ns),
                num(p.qcd),
                num(c.and_then(|c| c.qcd_difference)),
                num(c.and_then(|c| c.qcd_difference_ci.map(|d| d[0]))),
                num(c.and_then(|c| c.qcd_difference_ci.map(|d| d[1]))),
                num(c.map(|c| c.ratio).or((k == 0 && p.iterations > 0).then_some(1.0))),
                num(c.and_then(|c| c.ratio_ci.map(|r| r[0]))),
                num(c.and_then(|c| c.ratio_ci.map(|r| r[1]))),
                num(c.map(|c| c.u)),
                num(c.map(|c| c.p)),
                c.map_or_else(String::new, |c| c.significant.to_string()),
                p.rank_iterations.to_string(),
                p.decisions.to_string(),
                p.switches.to_string(),
                num(p.latency_us_mean),
                num(p.stall_ratio_mean),
                num(g.and_then(|g| g.impact_median)),
                num(g.and_then(|g| g.impact_p99)),
                p.bootstrap_block.to_string(),
            ];
            for m in &modes {
                row.push(num(p.modes.iter().find(|x| x.mode == *m).and_then(|x| x.share)));
            }
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_keep_four_digits() {
        assert_eq!(Unit::for_value(1_234_567.0).fmt_unit(1_234_567.0), "1.235 ms");
        assert_eq!(Unit::for_value(123_456.0).fmt_unit(123_456.0), "123.5 µs");
        assert_eq!(Unit::for_value(812.0).fmt_unit(812.0), "812 ns");
        // At a unit's end, the next unit, as the value rounds.
        assert_eq!(Unit::for_value(999_990.0).fmt_unit(999_990.0), "1.000 ms");
        assert_eq!(Unit::for_value(999_949.0).fmt_unit(999_949.0), "999.9 µs");
        assert_eq!(Unit::for_value(999.7).fmt_unit(999.7), "1.000 µs");
        assert_eq!(Unit::for_value(999_960_000.0).fmt_unit(999_960_000.0), "1.000 s");
        assert_eq!(Unit::for_value(2.5e9).fmt_unit(2.5e9), "2.500 s");
        assert_eq!(Unit::for_value(f64::INFINITY).name, "ns");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_p(0.0123456), "0.0123");
        assert_eq!(fmt_p(1.5e-9), "1.5e-9");
        assert_eq!(fmt_mean(1.5), "1.500");
        assert_eq!(fmt_mean(999_999.0), "999999.000");
        assert_eq!(fmt_mean(1e308), "1.000e308");
        assert_eq!(fmt_mean(0.0004), "<0.001");
        assert_eq!(fmt_mean(0.0005), "0.001");
        assert_eq!(fmt_mean(0.0), "0.000");
        assert_eq!(fmt_qcd_difference(-0.00004), "0.0000");
        assert_eq!(fmt_qcd_difference(-0.0025), "-0.0025");
        assert_eq!(fmt_qcd_difference(0.01234), "0.0123");
        assert_eq!(clean("a\u{1b}[31m"), "a?[31m");
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
    }
}
