//! From the merged rows of an experiment to the figures of the report (all times in ns).
//!
//! The job's time for an iteration is the slowest rank's: an iteration of a bulk-synchronous code
//! ends when its last rank ends. Iterations that some ranks lack (a job stopped mid-iteration, a
//! rank file cut short) would understate that maximum, so they are left out of the per-policy
//! figures (with a warning) unless `--keep-incomplete`; so are iterations whose ranks disagree on
//! the policy. Label disagreements only drop the label.

use super::health::NoRows;
use super::output::{clean, first_few, NAMED, RANKS_NAMED};
use super::read::{ExperimentData, CONFLICT};
use aar_record::count;
use aar_record::ranks::RankSet;
use aar_stats as stats;
use serde::Serialize;
use std::collections::BTreeSet;

/// Confidence level of every interval.
pub const LEVEL: f64 = 0.95;
/// Family-wise significance level of the comparisons with the first policy.
pub const ALPHA: f64 = 0.05;
/// Smallest difference of medians the report calls significant, as a share of the first
/// policy's median: the ratio's interval must lie wholly beyond 1 ± this. A p-value alone
/// finds any difference, however small, given iterations enough (20,000 microsecond iterations
/// tell a few nanoseconds apart, less than the clock's readings and the markers' own work vary
/// by); a difference within 1% is also within what one allocation's or one day's traffic
/// changes, and no reason to choose a routing policy.
pub const MARGIN: f64 = 0.01;
/// Fewest iterations of a policy for any of its intervals: the median's (with 5, the widest,
/// smallest to largest, covers 1 - 2/32 < 95%), and the ratio's and the QCD difference's, whose
/// bootstraps of fewer iterations cover far less than they say (a ratio's of 2 and 2 about 70%).
pub const MIN_ITERATIONS_CI: usize = stats::MIN_VALUES_MEDIAN_CI;
/// Added to the ratio's bootstrap seed for the QCD difference's, so the two intervals come from
/// different resamples.
const QCD_SEED_OFFSET: u64 = 1 << 32;

/// Iterations × resamples from which the bootstrap may take a while (its time grows with both:
/// about 15 s on one core of a 2-core test machine here, minutes for millions of iterations),
/// said before it starts.
pub const SLOW_BOOTSTRAP: u64 = 2_000_000_000;

/// The note said before the bootstrap of `experiments` (and their pool) when its iterations ×
/// resamples reach [`SLOW_BOOTSTRAP`].
pub fn slow_bootstrap(experiments: &[ExperimentData], s: &Settings, pool: bool) -> Option<String> {
    let each: u64 = experiments.iter().map(|e| e.iterations.len() as u64).sum();
    // The pool resamples every experiment's iterations once more.
    let iterations = if pool { 2 * each } else { each };
    (iterations.saturating_mul(s.resamples as u64) >= SLOW_BOOTSTRAP).then(|| {
        format!(
            "{} × {} resamples: the bootstrap intervals may take a while (their time grows with both); \
             fewer resamples make it faster in proportion (--resamples N, at least 100; the intervals then move \
             a little more from one --seed to the next)",
            count(iterations, "iteration", "iterations"),
            s.resamples
        )
    })
}

#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub skip: u64,
    pub keep_incomplete: bool,
    pub resamples: usize,
    pub seed: u64,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub format: &'static str,
    pub settings: SettingsOut,
    pub experiments: Vec<ExperimentReport>,
    pub warnings: Vec<String>,
}

#[derive(Serialize, Debug)]
pub struct SettingsOut {
    pub skip: u64,
    pub keep_incomplete: bool,
    pub confidence: f64,
    pub alpha: f64,
    /// [`MARGIN`]
    pub margin: f64,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub iteration_time: &'static str,
    pub median_ci: &'static str,
    pub ratio_ci: &'static str,
    pub qcd_difference_ci: &'static str,
    pub test: &'static str,
    pub outlier_rule: &'static str,
    pub independence_test: &'static str,
}

#[derive(Serialize, Debug)]
pub struct ExperimentReport {
    pub experiment: String,
    /// The experiments `--pool` put together in this one (empty: an experiment of its own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pooled_from: Vec<String>,
    pub source: &'static str,
    pub clock: &'static str,
    pub order: String,
    pub boundary: String,
    /// Ranks whose rows were used.
    pub ranks: usize,
    /// Ranks the header announces, when it does.
    pub ranks_expected: Option<u32>,
    /// The iteration record of the process without a rank (outside a job) that this experiment
    /// is, which tells two such experiments of one name apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// `AAR_OUTPUT_RANKS` as the ranks' summary records give it, when it was set: only the ranks
    /// it names wrote records, and the iteration times are the slowest of those.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_ranks: Option<String>,
    /// Ranks with a summary record but no iteration record, per cause their records give: no
    /// time of theirs is in the iterations' times.
    pub ranks_without_rows: Vec<RanksWithoutRows>,
    pub policies: Vec<String>,
    pub modes: Vec<String>,
    /// Iteration indices seen after the warm-up.
    pub iterations_seen: usize,
    pub iterations_used: usize,
    /// Indices some ranks lack (left out unless --keep-incomplete).
    pub iterations_incomplete: usize,
    /// Indices whose ranks disagree on the policy (left out).
    pub iterations_conflicting: usize,
    /// Rows (rank-iterations) left out as warm-up by --skip.
    pub warmup_rows: u64,
    pub first_index: u64,
    pub policy_stats: Vec<PolicyStats>,
    /// Congestion impact per policy, when iterations are labelled `isolated` and `congested`.
    pub congestion: Vec<Congestion>,
    pub per_rank: Vec<RankSpread>,
    /// Ranks that were the slowest most often (the ranks that set the job's time).
    pub slowest_ranks: Vec<SlowRank>,
    /// Sorted iteration times per policy (for plots).
    #[serde(skip)]
    pub samples: Vec<Vec<f64>>,
    /// (iteration index, time, policy) in index order (for plots).
    #[serde(skip)]
    pub series: Vec<(u64, f64, usize)>,
}

/// Ranks that wrote a summary record but no iteration record, for one cause.
#[derive(Serialize, Debug, Clone)]
pub struct RanksWithoutRows {
    pub cause: NoRows,
    /// As `AAR_OUTPUT_RANKS` takes ranks: `3,7:9`.
    pub ranks: String,
    pub count: usize,
}

#[derive(Serialize, Debug, Clone)]
pub struct PolicyStats {
    pub policy: String,
    pub iterations: usize,
    pub min_ns: Option<f64>,
    pub q1_ns: Option<f64>,
    pub median_ns: Option<f64>,
    pub median_ci_ns: Option<[f64; 2]>,
    /// Exact coverage of the median's interval (≥ the confidence level).
    pub median_ci_coverage: Option<f64>,
    pub q3_ns: Option<f64>,
    pub mean_ns: Option<f64>,
    pub p99_ns: Option<f64>,
    pub max_ns: Option<f64>,
    /// Quartile coefficient of dispersion (Q3 − Q1)/(Q3 + Q1); absent when Q3 + Q1 is 0.
    pub qcd: Option<f64>,
    /// Whether its iterations, in the order they ran, look independent (absent with fewer than 10
    /// off the median).
    pub independence: Option<stats::Runs>,
    /// Iterations per block its bootstrap resamples together: 1 when they look independent, else
    /// the mean length of its spells above and below the median (its median's interval is then
    /// a block bootstrap's, without an exact coverage).
    pub bootstrap_block: usize,
    /// Against the first policy (absent for the first policy itself).
    pub vs_first: Option<Comparison>,
    pub modes: Vec<ModeShare>,
    /// Rank-iterations these sums cover.
    pub rank_iterations: u64,
    pub decisions: u64,
    pub switches: u64,
    pub latency_us_mean: Option<f64>,
    pub stall_ratio_mean: Option<f64>,
}

#[derive(Serialize, Debug, Clone)]
pub struct Comparison {
    /// This policy's median divided by the first policy's.
    pub ratio: f64,
    /// Absent when either policy has fewer than [`MIN_ITERATIONS_CI`] iterations.
    pub ratio_ci: Option<[f64; 2]>,
    /// This policy's QCD minus the first policy's (absent when either has fewer than 2 iterations
    /// or no QCD).
    pub qcd_difference: Option<f64>,
    /// Its percentile-bootstrap interval: excludes 0 when the spreads differ beyond sampling noise
    /// (absent when either policy has fewer than [`MIN_ITERATIONS_CI`] iterations).
    pub qcd_difference_ci: Option<[f64; 2]>,
    /// Mann–Whitney U of this policy's iterations against the first policy's.
    pub u: f64,
    pub z: f64,
    pub p: f64,
    /// Whether p is exact (every split of the iterations counted, for few iterations) rather than
    /// the normal approximation's.
    pub p_exact: bool,
    /// The level p is held against (ALPHA, Bonferroni-divided by the number of comparisons).
    pub alpha: f64,
    /// p < alpha and the ratio's interval lies wholly beyond 1 ± [`MARGIN`] ([`Verdict::Yes`]).
    pub significant: bool,
    pub verdict: Verdict,
}

/// What p and the ratio's interval say together of a policy against the first.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// p < alpha, and the ratio's interval lies wholly beyond 1 ± [`MARGIN`]: the medians differ
    /// by at least the margin.
    Yes,
    /// p ≥ alpha: no difference shown.
    No,
    /// p < alpha, but the ratio's interval lies wholly within 1 ± [`MARGIN`]: a difference
    /// smaller than the margin.
    BelowMargin,
    /// p < alpha, and the ratio's interval reaches into 1 ± [`MARGIN`], or there is no interval
    /// (too few iterations): a difference, perhaps smaller than the margin.
    Maybe,
}

impl Verdict {
    /// From the test's p, the level it is held against and the ratio's interval: without one
    /// (too few iterations), how large the difference is is not known, so at most `Maybe`.
    pub fn of(p: f64, alpha: f64, ratio_ci: Option<[f64; 2]>) -> Verdict {
        // A p that is NaN shows no difference either.
        if p.partial_cmp(&alpha) != Some(std::cmp::Ordering::Less) {
            return Verdict::No;
        }
        let Some([low, high]) = ratio_ci else { return Verdict::Maybe };
        if high < 1.0 - MARGIN || low > 1.0 + MARGIN {
            Verdict::Yes
        } else if low >= 1.0 - MARGIN && high <= 1.0 + MARGIN {
            Verdict::BelowMargin
        } else {
            Verdict::Maybe
        }
    }

    /// The table's word for it.
    pub fn label(self) -> String {
        match self {
            Verdict::Yes => "yes".into(),
            Verdict::No => "no".into(),
            Verdict::BelowMargin => format!("< {}%", MARGIN * 100.0),
            Verdict::Maybe => "maybe".into(),
        }
    }
}

#[derive(Serialize, Debug, Clone)]
pub struct ModeShare {
    pub mode: String,
    pub messages: u64,
    pub bytes: u64,
    /// Share of this policy's bytes (0..1); absent when it moved no bytes.
    pub share: Option<f64>,
}

#[derive(Serialize, Debug, Clone)]
pub struct Congestion {
    pub policy: String,
    pub isolated: usize,
    pub congested: usize,
    pub isolated_median_ns: Option<f64>,
    pub congested_median_ns: Option<f64>,
    pub impact_median: Option<f64>,
    pub isolated_p99_ns: Option<f64>,
    pub congested_p99_ns: Option<f64>,
    pub impact_p99: Option<f64>,
}

#[derive(Serialize, Debug, Clone)]
pub struct RankSpread {
    pub policy: String,
    /// Ranks with iterations of this policy.
    pub ranks: usize,
    /// Median over ranks of each rank's median iteration time.
    pub median_of_ranks_ns: Option<f64>,
    pub fastest_rank: Option<u32>,
    pub fastest_ns: Option<f64>,
    pub slowest_rank: Option<u32>,
    pub slowest_ns: Option<f64>,
    /// Scaled MAD of the rank medians.
    pub mad_ns: Option<f64>,
    /// Distance from the median of ranks beyond which a rank is listed.
    pub threshold_ns: Option<f64>,
    pub outliers: Vec<RankOutlier>,
}

#[derive(Serialize, Debug, Clone)]
pub struct RankOutlier {
    pub rank: u32,
    pub median_ns: f64,
    pub file: String,
}

#[derive(Serialize, Debug, Clone)]
pub struct SlowRank {
    pub rank: u32,
    /// Iterations in which this rank was the slowest.
    pub iterations: usize,
}

fn opt(sorted: &[f64], f: impl Fn(&[f64]) -> f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| f(sorted))
}

fn is_label(l: &Option<Box<str>>, want: &str) -> bool {
    l.as_deref().is_some_and(|l| l.eq_ignore_ascii_case(want))
}

/// The iterations of one experiment the figures are made of: the job's time for each (the
/// slowest rank's), in index order, with its policy; the ones labelled `isolated` or `congested`;
/// how often each rank was the slowest.
struct Usable {
    /// (iteration index, time, policy)
    series: Vec<(u64, f64, usize)>,
    isolated: Vec<Vec<f64>>,
    congested: Vec<Vec<f64>>,
    slowest: std::collections::HashMap<u32, usize>,
    incomplete: usize,
    conflicting: usize,
    /// Pooled: the first index of each job's iterations (empty for one experiment).
    jobs: Vec<u64>,
}

impl Usable {
    fn new(policies: usize) -> Self {
        Usable {
            series: Vec::new(),
            isolated: vec![Vec::new(); policies],
            congested: vec![Vec::new(); policies],
            slowest: std::collections::HashMap::new(),
            incomplete: 0,
            conflicting: 0,
            jobs: Vec::new(),
        }
    }

    /// `o`'s iterations after these, its indices moved up by `offset` (the slowest ranks are
    /// not added up: ranks of different jobs are different nodes).
    fn append(&mut self, o: Usable, offset: u64) {
        self.jobs.push(offset);
        // `pool` places a job only where its indices fit: saturating is never reached.
        self.series.extend(o.series.iter().map(|&(i, v, p)| (offset.saturating_add(i), v, p)));
        for (mine, theirs) in self.isolated.iter_mut().zip(o.isolated).chain(self.congested.iter_mut().zip(o.congested))
        {
            mine.extend(theirs);
        }
        self.incomplete += o.incomplete;
        self.conflicting += o.conflicting;
    }
}

/// The usable iterations of `e`, with a warning (through `warn`) for each kind left out.
/// (`told_how_ended`: a warning above said where to learn how ranks ended, [`HOW_RANKS_ENDED`]).
fn usable(e: &ExperimentData, s: &Settings, told_how_ended: bool, warn: &mut impl FnMut(String)) -> Usable {
    let ranks_used = e.ranks.iter().filter(|r| r.rows > 0).count();
    let mut u = Usable::new(e.policies.len());
    let mut label_conflicts = 0usize;
    let mut first_incomplete = None;
    let mut first_conflict = None;
    for (i, agg) in &e.iterations {
        if agg.policy == CONFLICT {
            u.conflicting += 1;
            first_conflict.get_or_insert(*i);
            continue;
        }
        if (agg.ranks as usize) < ranks_used {
            u.incomplete += 1;
            first_incomplete.get_or_insert((*i, agg.ranks));
            if !s.keep_incomplete {
                continue;
            }
        }
        let p = agg.policy as usize;
        let v = agg.max_ns as f64;
        u.series.push((*i, v, p));
        if let Some(rank) = agg.slowest_rank {
            *u.slowest.entry(rank).or_default() += 1;
        }
        if agg.label_conflict {
            label_conflicts += 1;
        } else if is_label(&agg.label, "isolated") {
            u.isolated[p].push(v);
        } else if is_label(&agg.label, "congested") {
            u.congested[p].push(v);
        }
    }
    if let Some(i) = first_conflict {
        warn(format!(
            "in {} the ranks disagree on the policy (first: iteration {i}): \
             left out",
            count(u.conflicting as u64, "iteration", "iterations")
        ));
    }
    if let Some((i, r)) = first_incomplete {
        let (why, uneven) = why_ranks_lack(e, told_how_ended);
        let done = if uneven && !s.keep_incomplete {
            "left out (--keep-incomplete keeps them, their time the slowest of the ranks that marked them)"
        } else if s.keep_incomplete {
            "kept (--keep-incomplete): their time is the slowest of the ranks that have them"
        } else {
            "left out (the slowest rank may be the one missing; --keep-incomplete keeps them)"
        };
        warn(format!(
            "{} some of the {ranks_used} ranks \
             (first: iteration {i}, on {}): {done}{why}",
            count(u.incomplete as u64, "iteration lacks", "iterations lack"),
            count(u64::from(r), "rank", "ranks"),
        ));
    }
    if label_conflicts > 0 {
        warn(format!(
            "in {} the ranks disagree on the label: used without a label",
            count(label_conflicts as u64, "iteration", "iterations")
        ));
    }
    u
}

/// How to mark iterations every rank passes equally often, for the `boundary` of a header. An MPI
/// boundary counts the function's calls on every communicator, so the likely cause is a rank that
/// also calls it on a communicator of only some ranks (one of `MPI_Comm_split`'s).
fn uneven_fix(boundary: &str) -> String {
    match boundary.split(':').next().filter(|f| f.starts_with("MPI_")) {
        Some(f) => format!(
            "AAR_AB_BOUNDARY counts the calls of {} on every communicator, so ranks that also call it on a \
             communicator of only some ranks (one of MPI_Comm_split's) pass the boundary more often: name a \
             collective (and a :N) that every rank calls equally often, or mark iterations with \
             aar_iteration_begin/end called alike on every rank",
            clean(f)
        ),
        None => "Mark iterations where every rank passes equally often (aar_iteration_begin/end called alike on \
                 every rank, or AAR_AB_BOUNDARY on a collective every rank calls)"
            .into(),
    }
}

/// Why some ranks' rows end before others' (completes the warning of iterations some ranks
/// lack): a rank that exited (its summary record says how many iterations it ended) marked fewer
/// iterations than the others: the ranks did not reach the iteration boundary equally often; a
/// rank without a summary record was stopped; a rank whose rows were left out (said with its file)
/// or go past the iterations it ended has a damaged record, whatever it marked. Each list names
/// the first few ranks and counts the others ([`first_few`]); where to learn how a stopped rank
/// ended is said unless `told_how_ended` (a warning above said it). `true`: only the first.
fn why_ranks_lack(e: &ExperimentData, told_how_ended: bool) -> (String, bool) {
    use super::read::RankSummary;
    let ranks: Vec<&RankSummary> = e.ranks.iter().filter(|r| r.rows > 0).collect();
    let Some(most) = ranks.iter().filter_map(|r| r.last_index).max() else { return (String::new(), false) };
    let short: Vec<&&RankSummary> = ranks.iter().filter(|r| r.last_index < Some(most)).collect();
    let Some(longest) = ranks.iter().find(|r| r.last_index == Some(most)) else { return (String::new(), false) };
    let ended_or_rows = |r: &RankSummary| r.ended.unwrap_or(r.rows);
    let marked = |r: &RankSummary| format!("{} ({})", r.who(), count(ended_or_rows(r), "iteration", "iterations"));
    // Rows past the iterations the rank ended: an index no row of libaar.so's can have.
    let past_ended = |r: &RankSummary| r.ended.is_some_and(|n| r.last_index.is_some_and(|i| i >= n));
    let damaged = |r: &RankSummary| r.left_out > 0 || past_ended(r);
    // In a list of rank numbers; a process without a rank is alone in its experiment, named.
    let number = |r: &RankSummary| r.rank.map_or_else(|| r.who().to_string(), |n| n.to_string());
    // A rank whose record holds fewer rows than it ended iterations is said apart (read.rs).
    let exited: Vec<String> = short
        .iter()
        .filter(|r| r.ended.is_some_and(|n| n < ended_or_rows(longest)) && r.unwritten().is_none() && !damaged(r))
        .map(|r| marked(r))
        .collect();
    let unwritten: Vec<String> = short.iter().filter(|r| r.unwritten().is_some()).map(|r| number(r)).collect();
    let without_summary = |unreadable: bool| -> Vec<String> {
        let lacks = |r: &&&&RankSummary| r.ended.is_none() && !damaged(r) && r.summary_unreadable == unreadable;
        short.iter().filter(lacks).map(|r| number(r)).collect()
    };
    let (stopped, cut) = (without_summary(false), without_summary(true));
    let left_out: Vec<String> = ranks.iter().filter(|r| r.left_out > 0).map(|r| number(r)).collect();
    let past: Option<&&RankSummary> = ranks.iter().find(|r| past_ended(r));
    // Rows that begin after the others': begins refused while libaar.so was still starting keep
    // their index (and count) but have no row. The summary record counts them by cause; one of a
    // libaar.so older than that count only counts the iterations before the rows, and libaar.so
    // said why on that rank's stderr.
    let earliest = ranks.iter().filter_map(|r| r.first_index).min();
    let begins_late = |r: &&&RankSummary| r.first_index > earliest && !damaged(r);
    let refused: Vec<(&RankSummary, &[(String, u64)])> = ranks
        .iter()
        .filter(begins_late)
        .filter_map(|r| Some((*r, r.refused_begins.as_deref().filter(|c| !c.is_empty())?)))
        .collect();
    let late: Vec<String> = ranks
        .iter()
        .filter(begins_late)
        .filter(|r| r.refused_begins.is_none() && r.ended.is_some_and(|n| n > r.rows))
        .map(|r| format!("{} (from iteration {})", r.who(), r.first_index.unwrap_or_default()))
        .collect();
    let listed = |list: &[String]| first_few(list, list.len(), NAMED, ", ");
    let mut why = String::new();
    if !exited.is_empty() {
        why.push_str(&format!(
            ". The ranks marked different numbers of iterations: {} ended normally having marked fewer than {} \
             (their summary records say so), so they reached the iteration boundary ({}) less often, and \
             iterations of the same index may not be the same work on every rank. {}",
            listed(&exited),
            marked(longest),
            clean(&e.header.boundary),
            uneven_fix(&e.header.boundary)
        ));
    }
    let one =
        |list: &[String], single: &'static str, plural: &'static str| if list.len() == 1 { single } else { plural };
    if !unwritten.is_empty() {
        why.push_str(&format!(
            ". The rows of rank{} {} end before the iterations {} summary record{} say{} {} ended: not written \
             whole (said above)",
            one(&unwritten, "", "s"),
            listed(&unwritten),
            one(&unwritten, "its", "their"),
            one(&unwritten, "", "s"),
            one(&unwritten, "s", ""),
            one(&unwritten, "it", "they"),
        ));
    }
    if !stopped.is_empty() {
        // Where to learn how they ended, once (a job's ranks only: the simulator is not killed).
        let how = match (e.header.source, told_how_ended) {
            (aar_record::Source::Job, false) => format!(". {HOW_RANKS_ENDED}"),
            (aar_record::Source::Job, true) => " (how each rank ended: see the warning of the missing ranks)".into(),
            (aar_record::Source::Sim, _) => String::new(),
        };
        why.push_str(&format!(
            ". The rows of rank{} {} end early and no summary record is beside {}, though libaar.so writes a rank's \
             summary record at exit: {} ended without libaar.so's exit handler (killed by a signal, the batch \
             system's at the job's time limit or the OOM killer's; a crash; _exit), or {} still running (a rank \
             writes its rows at least a second apart, and its summary record at exit: report the folder again when \
             the job has ended){how}",
            one(&stopped, "", "s"),
            listed(&stopped),
            one(&stopped, "it", "them"),
            one(&stopped, "it", "they"),
            one(&stopped, "is", "are"),
        ));
    }
    if !cut.is_empty() {
        why.push_str(&format!(
            ". The rows of rank{} {} end early and {} summary record{} beside them {} not whole (said above): \
             stopped while writing {} at exit, or out of room (a full disk, the file size limit)",
            one(&cut, "", "s"),
            listed(&cut),
            one(&cut, "its", "their"),
            one(&cut, "", "s"),
            one(&cut, "is", "are"),
            one(&cut, "it", "them"),
        ));
    }
    if !left_out.is_empty() {
        why.push_str(&format!(
            ". Rank{} {} had lines of {} iteration record{} left out (said above with the file{}), so {} those \
             iterations",
            one(&left_out, "", "s"),
            listed(&left_out),
            one(&left_out, "its", "their"),
            one(&left_out, "", "s"),
            one(&left_out, "", "s"),
            one(&left_out, "it lacks", "they lack"),
        ));
    }
    if let Some(r) = past {
        why.push_str(&format!(
            ". The rows of {} go on to iteration {}, past the {} its summary record says it ended: its \
             iteration record {} was damaged or edited (run the job again for a clean one)",
            r.who(),
            r.last_index.unwrap_or_default(),
            count(r.ended.unwrap_or_default(), "iteration", "iterations"),
            r.file.display()
        ));
    }
    if !refused.is_empty() {
        why.push_str(&refused_begins(&refused));
    }
    if !late.is_empty() {
        why.push_str(&format!(
            ". The rows of {} begin after the others' though {} summary record{} count{} the iterations before: \
             the first calls of aar_iteration_begin there came while libaar.so was still starting and were refused \
             (AAR_EINVAL; libaar.so said so on stderr), which keeps each one's index without a row. Begin the first \
             iteration once aar_policy_name() no longer returns \"starting\" (after MPI_Init, say)",
            listed(&late),
            one(&late, "its", "their"),
            one(&late, "", "s"),
            one(&late, "s", ""),
        ));
    }
    let only_uneven = stopped.is_empty()
        && unwritten.is_empty()
        && left_out.is_empty()
        && past.is_none()
        && late.is_empty()
        && refused.is_empty();
    (why, !exited.is_empty() && only_uneven)
}

/// Why ranks whose rows begin late lack the first iterations, as their summary records count it
/// (`ab.refused_begins`): how many begins were refused while libaar.so was starting, for which
/// causes, and how to begin the first iteration so that it has its row.
fn refused_begins(ranks: &[(&super::read::RankSummary, &[(String, u64)])]) -> String {
    use aar_record::RefusedBegin;
    let total = |causes: &[(String, u64)]| causes.iter().map(|c| c.1).fold(0, u64::saturating_add);
    let short = |cause: &str| match cause.parse() {
        Ok(RefusedBegin::InsideStartUp) => "from inside the start-up".to_string(),
        Ok(RefusedBegin::StartUpElsewhere) => "while another thread was starting it".to_string(),
        Err(()) => format!("for the cause \"{}\"", clean(cause)),
    };
    let how = |causes: &[(String, u64)]| -> String {
        causes.iter().map(|(why, n)| format!("{n} {}", short(why))).collect::<Vec<_>>().join(", ")
    };
    let mut causes: Vec<&str> = ranks.iter().flat_map(|(_, c)| c.iter().map(|c| c.0.as_str())).collect();
    causes.sort_unstable();
    causes.dedup();
    let explained: Vec<String> = causes
        .iter()
        .map(|cause| match cause.parse() {
            Ok(RefusedBegin::InsideStartUp) => "from inside the start-up: called on the thread running it (a \
                                                 callback of the PAPI library's loading, say), which no call can wait for"
                .to_string(),
            Ok(RefusedBegin::StartUpElsewhere) => "while another thread was starting it: called while another \
                                                    thread was starting libaar.so for longer than the 2 s a call \
                                                    waits for it (loading PAPI, reading the job's files)"
                .to_string(),
            Err(()) => format!("\"{}\": a cause this aar does not know (a newer libaar.so's: upgrade aar)", clean(cause)),
        })
        .collect();
    let said = match ranks {
        [(r, causes)] => format!(
            "{} says that {} (aar_iteration_begin) {} refused (AAR_EINVAL) while libaar.so was still starting \
             ({}), each keeping its index without a row, so its rows begin at iteration {}",
            r.rank.map_or_else(
                || format!("The summary record beside {}", r.file.display()),
                |n| format!("Rank {n}'s summary record")
            ),
            count(total(causes), "begin", "begins"),
            if total(causes) == 1 { "was" } else { "were" },
            how(causes),
            r.first_index.unwrap_or_default()
        ),
        _ => {
            let each = ranks.iter().map(|(r, causes)| {
                format!(
                    "{}: {} ({}), so its rows begin at iteration {}",
                    r.who(),
                    count(total(causes), "begin", "begins"),
                    how(causes),
                    r.first_index.unwrap_or_default()
                )
            });
            format!(
                "The summary records say that begins (aar_iteration_begin) were refused (AAR_EINVAL) while libaar.so \
                 was still starting, each keeping its index without a row: {}",
                first_few(each, ranks.len(), NAMED, "; ")
            )
        }
    };
    format!(
        ". {said}. Refused {}. Begin the first iteration once aar_policy_name() no longer returns \"starting\" \
         (after MPI_Init, say)",
        explained.join("; refused ")
    )
}

/// libaar.so's warning of short iterations, again where its rows are read: a job's iterations
/// on the node's clock whose median (of the job's times) is shorter than
/// [`aar_record::SHORT_ITERATION_NS`]. The simulator's clock reads without cost.
fn short_iterations(e: &ExperimentData, series: &[(u64, f64, usize)]) -> Option<String> {
    if e.header.source != aar_record::Source::Job || e.header.clock != aar_record::Clock::Monotonic {
        return None;
    }
    let mut times: Vec<f64> = series.iter().map(|s| s.1).collect();
    times.sort_by(f64::total_cmp);
    let median = stats::median(&times).filter(|&m| m < aar_record::SHORT_ITERATION_NS as f64)?;
    Some(format!(
        "its iterations last {} (the median), timed on the monotonic clock: two readings of the clock and the \
         markers' own work (libaar.so writes a row at each iteration's end) are inside each time and vary from one \
         iteration to the next, so a difference of nanoseconds between policies may be the measurement's, not the \
         routing's (significant counts differences of {}% or more only); {}",
        super::output::Unit::for_value(median).fmt_unit(median),
        MARGIN * 100.0,
        aar_record::SHORT_ITERATION_FIX
    ))
}

/// Where a job's records are, for a warning that names a missing rank's.
pub const JOB_FOLDER: &str = "the folder AAR_OUTPUT_DIR named in the job: give every folder that holds one (one on a \
     node's own disk holds that node's ranks only)";

/// How to learn how a rank that left no record ended, which no record can say: the batch
/// system's accounting, and the rank's stderr.
pub const HOW_RANKS_ENDED: &str = "How each rank ended is the batch system's to say (Slurm: sacct -j <job id> -o \
     JobID,State,ExitCode, where OUT_OF_MEMORY, TIMEOUT, or a signal after the colon of ExitCode tells; PBS: qstat -xf \
     <job id>; ALPS: aprun's \"exit signals\" line), and so is the rank's stderr (libaar.so says there when it \
     cannot write a record)";

/// The ranks of a job of `n` ranks that should have written records and have none (`have`: the
/// ranks that have): those `sample` (`AAR_OUTPUT_RANKS`) names, or every one. `None` when none
/// lacks; else the first missing rank, how many are missing, and what is missing said from `says` on, e.g. "the header
/// says 8 ranks, of which AAR_OUTPUT_RANKS=0,5 names 2, but 1 rank has usable rows (missing: 5)"
/// (`having`: "usable rows"), the first [`RANKS_NAMED`] missing ranks named and the others counted. An experiment's iteration records
/// and a job's summary records are said alike.
pub fn missing_ranks(
    n: u32,
    sample: Option<&RankSet>,
    have: &BTreeSet<u32>,
    says: &str,
    having: &str,
) -> Option<(u32, usize, String)> {
    let writers = sample.map_or(n, |s| s.count_below(n));
    let have_writers = have.iter().filter(|&&r| r < n && sample.is_none_or(|s| s.contains(r))).count();
    let lacking = (writers as usize).saturating_sub(have_writers);
    if lacking == 0 {
        return None;
    }
    // Not every rank of 0..n is looked at: a job may have millions.
    let candidates: Box<dyn Iterator<Item = u32>> = match sample {
        Some(s) => Box::new(s.ranks_below(n)),
        None => Box::new(0..n),
    };
    let missing: Vec<u32> = candidates.filter(|r| !have.contains(r)).take(lacking.min(RANKS_NAMED)).collect();
    let expected = match sample.filter(|_| writers < n) {
        Some(s) => format!(
            "{says} {}, of which AAR_OUTPUT_RANKS={} names {writers},",
            count(n, "rank", "ranks"),
            super::output::clean_to(&s.to_string(), 200)
        ),
        None => format!("{says} {}", count(n, "rank", "ranks")),
    };
    Some((
        *missing.first()?,
        lacking,
        format!(
            "{expected} but {} {having} (missing: {})",
            count(have_writers as u64, "rank has", "ranks have"),
            first_few(&missing, lacking, RANKS_NAMED, ", ")
        ),
    ))
}

/// What may have ended the ranks of job experiment `e` that left no record (completes the warning
/// that names them; `lacking`: how many), which no record says: when
/// other ranks exited (a summary record of theirs was read), the missing ranks wrote neither the
/// row libaar.so writes when a rank's first iteration ends nor the summary record it writes at
/// exit; and where to find out ([`HOW_RANKS_ENDED`]).
fn how_missing_ranks_ended(e: &ExperimentData, lacking: usize) -> String {
    let (rank_has, they, their, have_not) = match lacking == 1 {
        true => ("rank has", "it", "its", "has not"),
        false => ("ranks have", "they", "their", "have not"),
    };
    let exited = !e.without_rows.is_empty() || e.ranks.iter().any(|r| r.ended.is_some() || r.summary_unreadable);
    match exited {
        true => format!(
            ". Other ranks exited (their summary records are read), but the missing {rank_has} no record at all, \
             though libaar.so writes a rank's first row when its first iteration ends and its summary record at \
             exit: {they} most likely ended before {their} first iteration did, without libaar.so's exit handler \
             (killed by a signal, the batch system's or the OOM killer's; a crash; _exit), or {have_not} ended yet, \
             or never called uGNI (libaar.so then writes nothing). {HOW_RANKS_ENDED}"
        ),
        false => format!(
            ". A rank killed before its first iteration ended (libaar.so writes its first row then) has none either. \
             {HOW_RANKS_ENDED}"
        ),
    }
}

/// Figures of one experiment; `None` (with a warning) if nothing in it is usable.
pub fn analyse(e: &ExperimentData, s: &Settings, warnings: &mut Vec<String>) -> Option<ExperimentReport> {
    let name = e.name.escape_debug().to_string();
    let mut warn = |text: String| super::read::warn(warnings, format!("experiment \"{name}\": {text}"));
    let ranks_used = e.ranks.iter().filter(|r| r.rows > 0).count();
    if ranks_used == 0 && e.warmup_rows > 0 {
        warn(format!(
            "--skip {} leaves out every one of its iterations ({}): not reported. Give a smaller --skip",
            s.skip,
            count(e.warmup_rows, "row", "rows")
        ));
        return None;
    }
    // The ranks that write records: AAR_OUTPUT_RANKS, as the records give it, may name a
    // sample. Those it leaves out wrote none by design (the headline and the notes say what the
    // times are then); a rank it names without usable rows is missing.
    let sample = e.output_ranks.as_ref();
    let mut have: BTreeSet<u32> = e.ranks.iter().filter(|r| r.rows > 0).filter_map(|r| r.rank).collect();
    // Ranks whose summary records say why they have no rows are said (read), not missing.
    let having = match e.without_rows.is_empty() {
        true => "usable rows",
        false => "usable rows or a summary record that says why not",
    };
    have.extend(e.without_rows.iter().map(|(rank, _, _)| *rank));
    // Whether the warning of the missing ranks says where to learn how ranks ended (said once).
    let mut told_how_ended = false;
    if let Some((first, lacking, missing)) =
        e.header.nranks.and_then(|n| missing_ranks(n, sample, &have, "the header says", having))
    {
        // Where the missing ranks' records would be, as libaar.so and aar sim name them.
        let name = format!("aar.{}.{first}.<pid>{}", aar_record::job_in_name(&e.name), aar_record::ITERATIONS_SUFFIX);
        let (folder, none, ended) = match e.header.source {
            aar_record::Source::Job => (
                JOB_FOLDER,
                match sample {
                    Some(_) => "; a rank that ended no iteration writes none",
                    None => "; a rank that AAR_OUTPUT_RANKS leaves out, or that ended no iteration, writes none",
                },
                {
                    told_how_ended = true;
                    how_missing_ranks_ended(e, lacking)
                },
            ),
            aar_record::Source::Sim => ("the folder aar sim run --out named: give it whole", "", String::new()),
        };
        warn(format!(
            "{missing}; the iteration times are those of the ranks read. A missing rank's record would be {name} in \
             {folder}; a warning above says why any record read was left out{none}{ended}"
        ));
    }
    let u = usable(e, s, told_how_ended, &mut warn);
    if u.series.is_empty() {
        warn("no usable iterations: not reported".into());
        return None;
    }
    let per_rank = rank_spreads(e);
    let mut slowest_ranks: Vec<SlowRank> =
        u.slowest.iter().map(|(&rank, &iterations)| SlowRank { rank, iterations }).collect();
    slowest_ranks.sort_by(|a, b| b.iterations.cmp(&a.iterations).then(a.rank.cmp(&b.rank)));
    slowest_ranks.truncate(5);
    if let Some(w) = short_iterations(e, &u.series) {
        warn(w);
    }
    let mut r = figures(e, u, &e.totals, s, &mut warn, SPELLS_FIX);
    r.ranks = ranks_used;
    r.per_rank = per_rank;
    r.slowest_ranks = slowest_ranks;
    Some(r)
}

/// One report of the experiments `es` together, their iterations one job after the other: the
/// A/B experiment repeated in several jobs (several allocations, days, placements). The policies
/// ran alike in every job, so each job is a stratum: judged against its own median for spells
/// and resampled apart from the others, so that a job faster or slower than the rest (another
/// placement, another day's traffic) does not widen the intervals of the policies' comparison.
/// Only the experiments with the policies and modes most of them have are pooled (a warning
/// names the others). Ranks are not the same nodes from one job to the next, so there are no
/// per-rank figures. `None` with fewer than two experiments with usable iterations to pool.
pub fn pool(es: &[ExperimentData], s: &Settings, warnings: &mut Vec<String>) -> Option<ExperimentReport> {
    let alike = |a: &ExperimentData, b: &ExperimentData| a.policies == b.policies && a.modes == b.modes;
    let alike_count = |e: &ExperimentData| es.iter().filter(|o| alike(o, e)).count();
    let most = es.iter().map(alike_count).max()?;
    let first = es.iter().find(|e| alike_count(e) == most)?;
    let (same, other): (Vec<&ExperimentData>, Vec<&ExperimentData>) = es.iter().partition(|e| alike(e, first));
    for e in other {
        // Whichever differs: the policies, else the routing modes the records count.
        let (what, mine, theirs) = if e.policies != first.policies {
            ("policies", e.policies.join(","), first.policies.join(","))
        } else {
            ("mode columns", e.modes.join(","), first.modes.join(","))
        };
        super::read::warn(
            warnings,
            format!(
                "--pool: experiment \"{}\" has the {what} {} where \"{}\" has {}: not pooled",
                e.name.escape_debug(),
                super::output::clean_to(&mine, 200),
                first.name.escape_debug(),
                super::output::clean_to(&theirs, 200)
            ),
        );
    }
    // The experiments' own warnings are in their reports already.
    let mut quiet = |_: String| {};
    // Only experiments with usable iterations are pooled: one without (its own report says why)
    // would be named and counted among those pooled with nothing in the figures.
    let same: Vec<(&ExperimentData, Usable)> =
        same.into_iter().map(|e| (e, usable(e, s, true, &mut quiet))).filter(|(_, u)| !u.series.is_empty()).collect();
    // Each job's indices one after the other, in the order the experiments were read; while they
    // do not fit in an index, the job of the highest index (near 2^64, which no job reaches: a
    // damaged row) is not pooled, lest the indices wrap and put its iterations among another job's.
    let last = |e: &ExperimentData| e.iterations.iter().map(|(i, _)| *i).max().unwrap_or(0);
    let mut same = same;
    while same.iter().try_fold(0u64, |end, (e, _)| end.checked_add(last(e).checked_add(1)?)).is_none() {
        let Some(worst) = (0..same.len()).max_by_key(|&k| last(same[k].0)) else { break };
        let (e, _) = same.remove(worst);
        let highest = last(e);
        let file = e.ranks.iter().find(|r| r.last_index == Some(highest));
        let file = file.map_or_else(String::new, |r| format!(" in {} ({})", r.file.display(), r.who()));
        super::read::warn(
            warnings,
            format!(
                "--pool: experiment \"{}\" has iteration index {highest}{file}: placed after or before the other \
                 experiments' iterations, the indices would pass the largest an index holds (2^64 - 1): not \
                 pooled. No job reaches such an index: the record is damaged; remove it, or report the experiment \
                 alone",
                e.name.escape_debug()
            ),
        );
    }
    let mut end = 0u64;
    let same: Vec<(&ExperimentData, Usable, u64)> = same
        .into_iter()
        .map(|(e, u)| {
            // Fits: checked above.
            let next = end.saturating_add(last(e).saturating_add(1));
            (e, u, std::mem::replace(&mut end, next))
        })
        .collect();
    if same.len() < 2 {
        return None;
    }
    let first = same[0].0;
    let mut pooled = Usable::new(first.policies.len());
    // The others' sums are added to the first's own.
    let mut totals = first.totals.clone();
    for (e, _, _) in &same[1..] {
        for (sum, t) in totals.iter_mut().zip(&e.totals) {
            sum.merge(t);
        }
    }
    let (mut seen, mut warmup_rows) = (0, 0);
    let mut pooled_from = Vec::new();
    for (e, u, offset) in same {
        pooled.append(u, offset);
        seen += e.iterations.len();
        warmup_rows += e.warmup_rows;
        pooled_from.push(e);
    }
    let name = format!("{} experiments pooled", pooled_from.len());
    let mut warn = |text: String| super::read::warn(warnings, format!("{name}: {text}"));
    let mut r = figures(first, pooled, &totals, s, &mut warn, POOLED_SPELLS_FIX);
    r.experiment = name;
    r.pooled_from = pooled_from.iter().map(|e| e.name.clone()).collect();
    r.ranks = pooled_from.iter().map(|e| e.ranks.iter().filter(|r| r.rows > 0).count()).max().unwrap_or(0);
    r.ranks_expected = None;
    r.output_ranks = None;
    r.ranks_without_rows = Vec::new();
    r.iterations_seen = seen;
    r.warmup_rows = warmup_rows;
    r.first_index = 0;
    Some(r)
}

/// How many of policy `p`'s iterations of `series` (in index order) each job has, the jobs
/// starting at the indices `jobs` (empty with fewer than two jobs).
fn per_job(series: &[(u64, f64, usize)], jobs: &[u64], p: usize) -> Vec<usize> {
    if jobs.len() < 2 {
        return Vec::new();
    }
    let mut counts = vec![0; jobs.len()];
    for &(i, _, _) in series.iter().filter(|s| s.2 == p) {
        counts[jobs.partition_point(|&start| start <= i).saturating_sub(1)] += 1;
    }
    counts
}

/// `in_order`'s iterations job by job, `counts` of them in each.
fn by_job<'a>(in_order: &'a [f64], counts: &'a [usize]) -> impl Iterator<Item = &'a [f64]> + 'a {
    counts.iter().scan(0, move |start, &n| {
        let part = &in_order[*start..*start + n];
        *start += n;
        Some(part)
    })
}

/// What a warning about spells advises for one experiment.
const SPELLS_FIX: &str = "More iterations, or several shorter runs (read together with --pool), make it trustworthy";
/// ... and for experiments pooled, whose spells may be the jobs themselves.
const POOLED_SPELLS_FIX: &str = "Pooled, these spells are within jobs (each job judged against its own median): \
                                 each job's own table says which";

/// Per-policy figures of `u`'s iterations (the header's fields from `e`); `spells_fix` ends a
/// warning about spells.
fn figures(
    e: &ExperimentData,
    u: Usable,
    totals: &[super::read::Totals],
    s: &Settings,
    warn: &mut impl FnMut(String),
    spells_fix: &str,
) -> ExperimentReport {
    let np = e.policies.len();
    let Usable { series, mut isolated, mut congested, incomplete, conflicting, jobs, .. } = u;
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); np];
    for &(_, v, p) in &series {
        samples[p].push(v);
    }
    let used = series.len();
    for v in samples.iter_mut().chain(isolated.iter_mut()).chain(congested.iter_mut()) {
        v.sort_by(f64::total_cmp);
    }

    let compared = samples.iter().skip(1).filter(|v| !v.is_empty()).count().max(1);
    let alpha = ALPHA / compared as f64;
    // The intervals and tests treat iterations as independent; too few runs above and below a
    // policy's median say its slow iterations came in spells.
    let in_order: Vec<Vec<f64>> = (0..np).map(|p| series.iter().filter(|s| s.2 == p).map(|s| s.1).collect()).collect();
    // Pooled, each job's iterations are judged against its own median and resampled apart from
    // the other jobs' (the policies ran alike in every job, so a job's own speed is no spell).
    let strata: Vec<Vec<usize>> = (0..np).map(|p| per_job(&series, &jobs, p)).collect();
    let independence: Vec<Option<stats::Runs>> =
        in_order.iter().zip(&strata).map(|(v, jobs)| stats::runs_test_within(v, jobs)).collect();
    let judged = independence.iter().flatten().count().max(1);
    let mut blocks = vec![1; np];
    for (p, ind) in independence.iter().enumerate() {
        // Too few runs is what makes the intervals too narrow; too many (alternation) makes them wide.
        if let Some(ind) = ind.as_ref().filter(|i| i.z < 0.0 && i.p < ALPHA / judged as f64) {
            blocks[p] = stats::block_length(in_order[p].len(), ind.runs);
            warn(format!(
                "{}'s iterations are not independent in time: {} runs above and below its median where \
                 {:.1} are expected (runs test, p = {:.2e}); slow iterations came in spells. Its intervals \
                 come from a bootstrap that resamples blocks of {} consecutive iterations (the mean length \
                 of a spell), which keeps spells of about that length; longer ones, and its p-value, \
                 which treats iterations as independent, can still make it look surer than it is. \
                 {spells_fix}",
                clean(&e.policies[p]),
                ind.runs,
                ind.expected,
                ind.p,
                blocks[p]
            ));
        }
    }
    let sample = |p: usize| stats::Sample::in_strata(&samples[p], &in_order[p], blocks[p], &strata[p]);
    let first = &samples[0];
    // One iteration has no spread: every resample of it is itself, so an interval of it would
    // be a point that looks certain. Said, and shown as n=1.
    let single: Vec<String> = (0..np).filter(|&p| samples[p].len() == 1).map(|p| clean(&e.policies[p])).collect();
    if !single.is_empty() {
        warn(format!(
            "{} {}: no confidence interval, spread (QCD) or interval of a ratio with {} can be estimated from one \
             iteration (n=1; the table shows n=1 there). Run more iterations: at least {MIN_ITERATIONS_CI} per \
             policy for a 95% interval of the median",
            single.join(", "),
            if single.len() == 1 { "has 1 iteration" } else { "have 1 iteration each" },
            if single.len() == 1 { "it" } else { "them" },
        ));
    }
    let policy_stats = (0..np)
        .map(|p| {
            let x = &samples[p];
            let t = &totals[p];
            let seed = s.seed.wrapping_add(p as u64);
            // An exact interval for independent iterations of one job; a bootstrap's for spells
            // (in blocks) or jobs (each resampled apart).
            let ci = match (blocks[p], strata[p].is_empty()) {
                _ if x.len() < 2 => None,
                (1, true) => stats::median_ci(x, LEVEL).map(|c| ([c.low, c.high], Some(c.coverage))),
                _ => stats::bootstrap_median_ci(sample(p), LEVEL, s.resamples, seed).map(|c| ([c.0, c.1], None)),
            };
            let vs_first = (p > 0 && !x.is_empty() && !first.is_empty()).then(|| {
                // Pooled, the test compares the policies within each job (van Elteren); with no
                // job holding both, all their iterations as one sample.
                let parts: Vec<(&[f64], &[f64])> =
                    by_job(&in_order[p], &strata[p]).zip(by_job(&in_order[0], &strata[0])).collect();
                let mw = (!parts.is_empty())
                    .then(|| stats::van_elteren(&parts))
                    .flatten()
                    .or_else(|| stats::mann_whitney(x, first))
                    .expect("both samples are non-empty");
                let ratio = stats::ratio_of_medians(sample(0), sample(p), LEVEL, s.resamples, seed);
                let qcd =
                    stats::qcd_difference(sample(0), sample(p), LEVEL, s.resamples, seed.wrapping_add(QCD_SEED_OFFSET));
                // Bootstrap intervals of fewer iterations cover far less than 95%: none, as for the median.
                let enough = x.len().min(first.len()) >= MIN_ITERATIONS_CI;
                let ratio_ci = ratio.filter(|r| r.1.is_finite() && enough).map(|r| [r.1, r.2]);
                let ratio = ratio.map_or(f64::NAN, |r| r.0);
                let verdict = Verdict::of(mw.p, alpha, ratio_ci);
                Comparison {
                    ratio,
                    ratio_ci,
                    qcd_difference: qcd.map(|d| d.0),
                    qcd_difference_ci: qcd.filter(|d| d.1.is_finite() && enough).map(|d| [d.1, d.2]),
                    u: mw.u,
                    z: mw.z,
                    p: mw.p,
                    p_exact: mw.exact,
                    alpha,
                    significant: verdict == Verdict::Yes,
                    verdict,
                }
            });
            let total_bytes: u128 = t.bytes.iter().map(|&b| b as u128).sum();
            let modes = e
                .modes
                .iter()
                .enumerate()
                .map(|(m, mode)| ModeShare {
                    mode: mode.clone(),
                    messages: t.messages[m],
                    bytes: t.bytes[m],
                    share: (total_bytes > 0).then(|| t.bytes[m] as f64 / total_bytes as f64),
                })
                .collect();
            PolicyStats {
                policy: e.policies[p].clone(),
                iterations: x.len(),
                min_ns: opt(x, |x| x[0]),
                q1_ns: stats::quantile(x, 0.25),
                median_ns: stats::median(x),
                median_ci_ns: ci.map(|c| c.0),
                median_ci_coverage: ci.and_then(|c| c.1),
                q3_ns: stats::quantile(x, 0.75),
                mean_ns: opt(x, stats::mean),
                p99_ns: stats::quantile(x, 0.99),
                max_ns: opt(x, |x| x[x.len() - 1]),
                qcd: stats::sample_qcd(x).filter(|_| x.len() > 1),
                independence: independence[p],
                bootstrap_block: blocks[p],
                vs_first,
                modes,
                rank_iterations: t.rows,
                decisions: t.decisions,
                switches: t.switches,
                latency_us_mean: t.latency_us.get(),
                stall_ratio_mean: t.stall_ratio.get(),
            }
        })
        .collect();

    // Only when both conditions were measured (a run labelled `isolated` throughout has no impact).
    let labelled = isolated.iter().any(|v| !v.is_empty()) && congested.iter().any(|v| !v.is_empty());
    let congestion = if labelled {
        (0..np)
            .map(|p| {
                let (iso, con) = (&isolated[p], &congested[p]);
                let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                    (Some(a), Some(b)) if a > 0.0 => Some(b / a),
                    _ => None,
                };
                let (im, cm) = (stats::median(iso), stats::median(con));
                let (ip, cp) = (stats::quantile(iso, 0.99), stats::quantile(con, 0.99));
                Congestion {
                    policy: e.policies[p].clone(),
                    isolated: iso.len(),
                    congested: con.len(),
                    isolated_median_ns: im,
                    congested_median_ns: cm,
                    impact_median: ratio(im, cm),
                    isolated_p99_ns: ip,
                    congested_p99_ns: cp,
                    impact_p99: ratio(ip, cp),
                }
            })
            .collect()
    } else {
        Vec::new()
    };

    ExperimentReport {
        experiment: e.name.clone(),
        pooled_from: Vec::new(),
        source: e.header.source.name(),
        clock: e.header.clock.name(),
        order: e.header.order.clone(),
        boundary: e.header.boundary.clone(),
        ranks: 0,
        ranks_expected: e.header.nranks,
        process: e.ranks.iter().find(|r| r.rank.is_none()).map(|r| r.file.display().to_string()),
        output_ranks: e.output_ranks.as_ref().map(ToString::to_string),
        ranks_without_rows: {
            let mut by: Vec<(NoRows, Vec<u32>)> = Vec::new();
            for &(rank, why, _) in &e.without_rows {
                match by.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, ranks)) => ranks.push(rank),
                    None => by.push((why, vec![rank])),
                }
            }
            by.sort_by_key(|(why, _)| *why);
            by.into_iter()
                .map(|(cause, ranks)| RanksWithoutRows {
                    cause,
                    count: ranks.len(),
                    ranks: ranks.into_iter().collect::<RankSet>().to_string(),
                })
                .collect()
        },
        policies: e.policies.clone(),
        modes: e.modes.clone(),
        iterations_seen: e.iterations.len(),
        iterations_used: used,
        iterations_incomplete: incomplete,
        iterations_conflicting: conflicting,
        warmup_rows: e.warmup_rows,
        first_index: e.first_index,
        policy_stats,
        congestion,
        per_rank: Vec::new(),
        slowest_ranks: Vec::new(),
        samples,
        series,
    }
}

/// Each rank's median iteration time per policy, and the ranks far from the others.
fn rank_spreads(e: &ExperimentData) -> Vec<RankSpread> {
    // A process without a rank is alone in its experiment: no ranks to compare.
    if e.ranks.iter().any(|r| r.rank.is_none()) {
        return Vec::new();
    }
    (0..e.policies.len())
        .map(|p| {
            let ranks: Vec<(u32, f64, &std::path::Path)> =
                e.ranks.iter().filter_map(|r| Some((r.rank?, r.medians[p]?, r.file.as_path()))).collect();
            let values: Vec<f64> = ranks.iter().map(|r| r.1).collect();
            let o = stats::outliers(&values);
            let fastest = ranks.iter().min_by(|a, b| a.1.total_cmp(&b.1));
            let slowest = ranks.iter().max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            RankSpread {
                policy: e.policies[p].clone(),
                ranks: ranks.len(),
                median_of_ranks_ns: o.as_ref().map(|o| o.center),
                fastest_rank: fastest.map(|r| r.0),
                fastest_ns: fastest.map(|r| r.1),
                slowest_rank: slowest.map(|r| r.0),
                slowest_ns: slowest.map(|r| r.1),
                mad_ns: o.as_ref().map(|o| o.mad),
                threshold_ns: o.as_ref().map(|o| o.threshold),
                outliers: o
                    .map(|o| {
                        o.indices
                            .iter()
                            .map(|&k| RankOutlier {
                                rank: ranks[k].0,
                                median_ns: ranks[k].1,
                                file: ranks[k].2.display().to_string(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

pub fn settings_out(s: &Settings) -> SettingsOut {
    SettingsOut {
        skip: s.skip,
        keep_incomplete: s.keep_incomplete,
        confidence: LEVEL,
        alpha: ALPHA,
        margin: MARGIN,
        bootstrap_resamples: s.resamples,
        bootstrap_seed: s.seed,
        iteration_time: "max over ranks of end_ns - start_ns for each iteration index",
        median_ci: "order statistics, exact binomial(n, 1/2); for a policy whose iterations came in spells \
                    (independence_test), percentile bootstrap in blocks of bootstrap_block iterations; pooled \
                    (--pool), percentile bootstrap with each job's iterations resampled apart",
        ratio_ci: "percentile bootstrap of median(policy)/median(first policy), seeded, when both policies have \
                   at least 6 iterations (none with fewer); each sample resampled one iteration at a time, or in circular blocks of bootstrap_block consecutive iterations for \
                   a policy whose iterations came in spells; pooled (--pool), each job's iterations resampled \
                   apart from the other jobs' (stratified), as many as it has",
        qcd_difference_ci: "percentile bootstrap of QCD(policy) - QCD(first policy), each sample resampled \
                            with replacement as for ratio_ci, seeded, when both have at least 6 iterations",
        test: "Mann-Whitney U vs the first policy, two-sided; pooled (--pool), van Elteren's stratified form: \
               each job's U weighted by 1 / (its iterations of the two policies + 1), u the sum of the jobs' U; \
               p exact (p_exact: every split of each job's iterations of the two policies counted, ties kept) \
               where counting takes a few milliseconds at most (few iterations), else the normal approximation with \
               tie and continuity corrections (van Elteren's: half the finest step of its statistic); alpha 0.05 \
               Bonferroni-divided by the number of comparisons; significant when p < alpha and ratio_ci lies \
               wholly outside 1 - margin .. 1 + margin (verdict yes; below_margin: p < alpha and ratio_ci \
               wholly inside; maybe: p < alpha and ratio_ci reaching inside or absent; no: p >= alpha)",
        outlier_rule:
            "rank median more than 3 scaled MADs (1.4826 * MAD) and more than 1% from the median of rank medians",
        independence_test: "Wald-Wolfowitz runs test of each policy's iteration times, in the order they ran, \
                            above and below its median (at least 10 off the median); a warning when too few \
                            runs at alpha 0.05 Bonferroni-divided by the policies judged, and that policy's \
                            bootstrap resamples blocks of ceil(n / runs) iterations (at least 2, at most n / 2); \
                            pooled (--pool), each job's iterations above and below its own median, the runs, \
                            their expected count and variance summed over the jobs",
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    #[test]
    fn a_difference_is_significant_from_the_margin_on() {
        let of = |p: f64, ci: [f64; 2]| Verdict::of(p, 0.05, Some(ci));
        assert_eq!(of(1e-50, [0.85, 0.86]), Verdict::Yes);
        assert_eq!(of(1e-50, [1.02, 1.03]), Verdict::Yes);
        assert_eq!(of(1e-50, [1.001, 1.009]), Verdict::BelowMargin);
        assert_eq!(of(1e-50, [0.995, 1.005]), Verdict::BelowMargin);
        assert_eq!(of(1e-50, [1.005, 1.02]), Verdict::Maybe);
        assert_eq!(of(1e-50, [0.98, 0.995]), Verdict::Maybe);
        assert_eq!(of(0.2, [0.85, 0.86]), Verdict::No);
        assert_eq!(of(f64::NAN, [0.85, 0.86]), Verdict::No);
        // Without an interval (too few iterations), how large a difference is is not known.
        assert_eq!(Verdict::of(1e-9, 0.05, None), Verdict::Maybe);
        assert_eq!(Verdict::of(0.2, 0.05, None), Verdict::No);
        assert_eq!(Verdict::BelowMargin.label(), "< 1%");
    }
}
