//! Reading iteration records (aar-record's `Reader`) in a streaming fashion.
//!
//! Three steps:
//! 1. **Find** the files: folders are searched recursively for `*.iterations.jsonl` (symbolic links
//!    to folders are not followed, so a link loop cannot trap the walk); files named on the command
//!    line are read whatever their name. A record's name on something that is not a regular file
//!    (a FIFO, a socket, a device, a link to nothing, a loop of links) is said and skipped (a rank's
//!    iteration record on a link to nothing or a loop of links by its rank's warning, once), and unfinished records
//!    (`aar.*.partial`, a writer stopped before it renamed them) are counted once per folder.
//! 2. **Heads**: every file's header and first row are read, files are grouped by `experiment`,
//!    and each experiment's reference header is that of its lowest rank. A file is left out, with
//!    a warning, when it is not a record, has no rows, repeats a rank already read (the file that
//!    sorts first is kept; of a process without a rank, an experiment of its own, a copy of its
//!    record: the same pid, host and first row's start), says another number of ranks or a rank beyond the reference's (another
//!    run of the same name), or disagrees with the reference on `source`, `clock` or `policies`
//!    (its iteration times could not be compared with the others'). Mode columns may differ
//!    between ranks: bytes are added up by mode name. A header without a rank, or with another
//!    rank, in a file whose name gives one (edited, damaged or renamed) is read as the name's
//!    rank, with a warning; a header with a rank in a file named `norank`, as a process without
//!    a rank, with a warning.
//! 3. **Rows**, in parallel (rayon, one file per task): each file's rows update the worker's
//!    per-iteration maxima and per-policy totals, and the file's own iteration times give the
//!    rank's medians; then they are dropped. Memory: per experiment, one small entry per iteration
//!    index per worker and one summary per rank — never the rows.
//! 4. **Health**: the summary record beside each rank's iteration record says whether the rank
//!    ran the policies as named ([`super::health`]).
//!
//! A file gets at most one warning, naming it, the first problem line, and what was done. Rows
//! that cannot be used are skipped one by one; a last line cut short (a job stopped at its time
//! limit) leaves every row before it in use; an over-long line or a read error ends the file
//! there. Rows whose policy is not in the header are skipped (counted in the warning), as are
//! repeated iteration indices within one file (the first is kept) and rows no job can have
//! (no time, more than [`MAX_ITERATION_NS`], bytes beyond [`MAX_BYTES_PER_SECOND`]); a negative
//! mean latency or stall ratio is left out of the means.

use super::output::{first_few, NAMED};
use super::{health, jobs};
use aar_record::{count, Fault, Header, Iteration, Problem, Reader, FORMAT, ITERATIONS_SUFFIX};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};

/// At most this many policies per experiment (the engine alternates far fewer).
pub const MAX_POLICIES: usize = 64;
/// At most this many mode columns per header.
const MAX_MODES: usize = 64;
/// Labels are cut to this many bytes (they name a condition, like `isolated`).
const MAX_LABEL: usize = 64;
/// An iteration longer than this (30 days) is not one a job ran: a clock that jumped, or a row
/// written by hand.
pub const MAX_ITERATION_NS: u64 = 30 * 24 * 3600 * 1_000_000_000;
/// Bytes a rank can have sent per second of an iteration, counted over at least one second (a
/// message posted at its end may complete after it): 10 TB/s, a thousand times an Aries NIC's
/// injection rate.
pub const MAX_BYTES_PER_SECOND: u64 = 10_000_000_000_000;
/// Show a progress bar when stderr is a terminal and there is at least this much to read.
const PROGRESS_BYTES: u64 = 256 << 20;

/// Policy index of an iteration whose ranks disagree on the policy.
pub const CONFLICT: u8 = u8::MAX;

/// Everything one iteration index contributes, merged over ranks.
#[derive(Clone, Debug)]
pub struct IterAgg {
    /// The slowest rank's duration.
    pub max_ns: u64,
    /// That rank (the lowest one on ties); `None`: a process without a rank, alone in its
    /// experiment.
    pub slowest_rank: Option<u32>,
    /// Ranks that reported the iteration.
    pub ranks: u32,
    /// Index into the experiment's policies, or [`CONFLICT`].
    pub policy: u8,
    pub label: Option<Box<str>>,
    pub label_conflict: bool,
}

impl IterAgg {
    fn merge(&mut self, o: &IterAgg) {
        if o.max_ns > self.max_ns || (o.max_ns == self.max_ns && o.slowest_rank < self.slowest_rank) {
            self.max_ns = o.max_ns;
            self.slowest_rank = o.slowest_rank;
        }
        self.ranks += o.ranks;
        if self.policy != o.policy {
            self.policy = CONFLICT;
        }
        if self.label != o.label || o.label_conflict {
            self.label_conflict = true;
        }
    }
}

/// Per-policy totals over every rank and iteration used.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Rank-iterations added up.
    pub rows: u64,
    /// Per experiment mode column.
    pub messages: Vec<u64>,
    pub bytes: Vec<u64>,
    pub decisions: u64,
    pub switches: u64,
    /// Means, not sums: a damaged record's huge values (1e308) would make a sum infinite.
    pub latency_us: aar_stats::RunningMean,
    pub stall_ratio: aar_stats::RunningMean,
}

impl Totals {
    /// Zero sums for each of `policies`, with `modes` mode columns.
    fn zeroed(policies: usize, modes: usize) -> Vec<Totals> {
        let zero = Totals { messages: vec![0; modes], bytes: vec![0; modes], ..Default::default() };
        vec![zero; policies]
    }

    pub fn merge(&mut self, o: &Totals) {
        self.rows += o.rows;
        for (a, b) in self.messages.iter_mut().zip(&o.messages) {
            *a = a.saturating_add(*b);
        }
        for (a, b) in self.bytes.iter_mut().zip(&o.bytes) {
            *a = a.saturating_add(*b);
        }
        self.decisions = self.decisions.saturating_add(o.decisions);
        self.switches = self.switches.saturating_add(o.switches);
        self.latency_us.merge(&o.latency_us);
        self.stall_ratio.merge(&o.stall_ratio);
    }
}

/// One rank's own iteration times, summarised (the rows themselves are dropped).
#[derive(Clone, Debug)]
pub struct RankSummary {
    /// `None`: a process without a rank, alone in its experiment (read.rs groups it so).
    pub rank: Option<u32>,
    pub file: PathBuf,
    /// Rows used.
    pub rows: u64,
    /// Median duration (ns) per policy; `None` where the rank has no row of that policy.
    pub medians: Vec<Option<f64>>,
    /// The lowest and the highest iteration index of the rows used.
    pub first_index: Option<u64>,
    pub last_index: Option<u64>,
    /// The highest iteration index of any whole row in the file, used or not (warm-up, damaged).
    pub last_written: Option<u64>,
    /// Whole lines of the file past the warm-up that were left out (not rows, of no policy of the
    /// schedule, repeated, values no job can have; a read that failed counts one): said with the
    /// file, and the rank lacks those iterations.
    pub left_out: u64,
    /// Iterations the rank ended, from its summary record: `None` without one (the rank was
    /// stopped before its exit, or the simulator wrote the record).
    pub ended: Option<u64>,
    /// Begins refused while libaar.so was starting, per cause, counted in `ended` without rows
    /// (`health::Problems::refused_begins`): `None` without a summary record or in one of a
    /// libaar.so older than the count.
    pub refused_begins: Option<Vec<(String, u64)>>,
    /// Rows buffered at exit that libaar.so's exit handler could not write, another thread holding
    /// the iteration record (`health::Problems::unwritten_at_exit`): why the rows end early, rather
    /// than a failed write.
    pub unwritten_at_exit: Option<u64>,
    /// A summary record is beside the rank's iteration record but could not be read (cut short,
    /// or not one): said with the file.
    pub summary_unreadable: bool,
}

impl RankSummary {
    /// Whose rows these are: the rank, or the process without a rank named by its record.
    pub fn who(&self) -> health::Who {
        health::Who::new(self.rank, &self.file)
    }

    /// The iterations the rank ended (its summary record says so) when its iteration record
    /// holds rows of fewer of them than libaar.so writes ([`aar_record::MAX_ROWS`] at most): the
    /// rest were not written (a failed write, or the process ended while a write was in progress;
    /// or, as [`Self::unwritten_at_exit`] says, another thread held the record at exit).
    pub fn unwritten(&self) -> Option<u64> {
        let ended = self.ended?;
        let held = self.last_written.map_or(0, |i| i.saturating_add(1));
        (held < ended.min(aar_record::MAX_ROWS)).then_some(ended)
    }
}

/// What the rows of one experiment add up to.
#[derive(Clone, Debug)]
pub struct ExperimentData {
    pub name: String,
    /// Header of the lowest rank.
    pub header: Header,
    pub policies: Vec<String>,
    /// Union of the ranks' mode columns, in order of first appearance.
    pub modes: Vec<String>,
    /// Smallest first iteration index of the ranks; `--skip N` leaves out indices below it + N.
    pub first_index: u64,
    /// Iterations by index, merged over ranks.
    pub iterations: Vec<(u64, IterAgg)>,
    pub totals: Vec<Totals>,
    /// Ranks read, by rank.
    pub ranks: Vec<RankSummary>,
    /// Rows left out as warm-up (`--skip`).
    pub warmup_rows: u64,
    /// `AAR_OUTPUT_RANKS`, the ranks that wrote records, as the lowest rank's iteration record
    /// gives it, else (a record written before its header had it) its summary records.
    pub output_ranks: Option<aar_record::ranks::RankSet>,
    /// Ranks with a summary record but no iteration record, why, and the record that says so
    /// ([`health::without_rows`]): none of their time is in the iterations' times.
    pub without_rows: Vec<(u32, health::NoRows, PathBuf)>,
}

/// All experiments found, and the warnings said along the way.
pub struct Data {
    pub experiments: Vec<ExperimentData>,
    pub warnings: Vec<String>,
    /// Inputs with summary records but no iteration record: reported per job only when no input
    /// has iterations.
    pub summaries_only: Vec<SummariesOnly>,
}

/// An input (a folder, or a summary record named alone) with summary records but no iteration
/// record.
pub struct SummariesOnly {
    pub input: PathBuf,
    /// Its summary records, but those read with the iteration record beside them and fork
    /// children's (they write no rows by design).
    pub records: usize,
    /// Those of them that say why a rank of an experiment read has no rows
    /// ([`ExperimentData::without_rows`]): the report uses them, the others it leaves out.
    pub explaining: usize,
}

/// Say a warning now and keep it for `--json` and the HTML page.
pub fn warn(warnings: &mut Vec<String>, text: String) {
    eprintln!("aar: {text}");
    warnings.push(text);
}

/// The files under folder `root` whose names `keep` takes (regular files, or links to them; a
/// name that is not UTF-8, a record renamed in another locale, as it reads lossily), searched
/// recursively without following links to folders, so that a link loop cannot trap the walk;
/// `said` hears, as a warning on that path, of each folder that cannot be listed and of
/// each name `keep` takes that is not a regular file (a FIFO, whose opening would wait for a
/// writer, a socket, a device, a link to nothing, a loop of links).
pub fn walk(root: &Path, keep: impl Fn(&str) -> bool, mut said: impl FnMut(&Path, String)) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                said(&dir, format!("{}: cannot be listed ({e}): skipped", dir.display()));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| keep(&n.to_string_lossy())) {
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_file() => found.push(path),
                    Ok(m) => said(&path, not_regular(&path, m.file_type())),
                    Err(e) if super::is_loop(&e) => said(&path, link_loop(&path)),
                    Err(_) if kind.is_symlink() => said(
                        &path,
                        format!(
                            "{}: a symbolic link to {}, which does not exist: skipped",
                            path.display(),
                            std::fs::read_link(&path).unwrap_or_default().display()
                        ),
                    ),
                    Err(e) => said(&path, format!("{}: cannot be read ({e}): skipped", path.display())),
                }
            }
        }
    }
    found
}

/// "PATH: a loop of symbolic links (PATH -> a -> PATH): skipped. ..." (the links followed,
/// [`super::links_followed`]), and how to mend it.
fn link_loop(path: &Path) -> String {
    let chain = super::links_followed(path);
    let chain = if chain.contains(" -> ") { format!(" ({chain})") } else { String::new() };
    format!(
        "{}: a loop of symbolic links{chain}: no file at its end (ELOOP): skipped. Point the link at a record \
         (ln -sfn FILE {}) or remove it",
        path.display(),
        path.display()
    )
}

/// "PATH: a FIFO, not a regular file: skipped" (what it is, so the user knows what to remove).
fn not_regular(path: &Path, kind: std::fs::FileType) -> String {
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "a special file"
    };
    format!("{}: {what}, not a regular file or a folder of records: skipped", path.display())
}

/// Whether a file name is a record its writer did not finish: libaar.so writes a rank's summary
/// record to `NAME.partial` and renames it when whole, `aar sim` its records to
/// `NAME.XXXXXX.partial`; a job killed in between leaves it.
fn is_partial(name: &str) -> bool {
    name.starts_with("aar.") && name.ends_with(".partial")
}

/// Step 1: the record files under `inputs`, sorted, each once.
/// The summary records, in the folders walked or named alone, go to `summaries`; the inputs that
/// hold no iteration record but summary records to `summaries_only`, with theirs; what is said of
/// an iteration record's name in a folder on a link to nothing or a loop of links, to `held`
/// (with the link): said later, unless a rank's warning names it as its iteration record.
fn discover(
    inputs: &[PathBuf],
    warnings: &mut Vec<String>,
    held: &mut Vec<(PathBuf, String)>,
    summaries_only: &mut Vec<(PathBuf, Vec<PathBuf>)>,
    summaries: &mut Vec<PathBuf>,
) -> Vec<PathBuf> {
    let mut found = Vec::new();
    // Unfinished records per folder, said once each.
    let mut partial: BTreeMap<PathBuf, u64> = BTreeMap::new();
    for input in inputs {
        let meta = match std::fs::metadata(input) {
            Ok(m) => m,
            Err(e) => {
                let why = if super::is_loop(&e) {
                    link_loop(input)
                } else {
                    format!("{}: cannot be opened ({e}): skipped", input.display())
                };
                warn(warnings, why);
                continue;
            }
        };
        if meta.is_file() {
            // A summary record named on the command line, renamed or not, is `jobs`'s to read
            // (and to warn of).
            let renamed_summary =
                || !input.to_string_lossy().ends_with(ITERATIONS_SUFFIX) && health::read_summary(input).is_ok();
            if jobs::names_a_summary(input) || renamed_summary() {
                summaries.push(input.clone());
                summaries_only.push((input.clone(), vec![input.clone()]));
            } else {
                found.push(input.clone());
            }
            continue;
        }
        if !meta.is_dir() {
            warn(warnings, not_regular(input, meta.file_type()));
            continue;
        }
        // One walk for every kind of record: special files among them are said here, once
        // (the summary records' reader walks again, quietly), or held.
        let mut here = walk(
            input,
            |n| n.ends_with(ITERATIONS_SUFFIX) || jobs::is_summary_name(n) || is_partial(n),
            |path, w| {
                let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
                match link && path.to_string_lossy().ends_with(ITERATIONS_SUFFIX) && std::fs::metadata(path).is_err() {
                    true => held.push((path.to_path_buf(), w)),
                    false => warn(warnings, w),
                }
            },
        );
        let before = summaries.len();
        here.retain(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
            if is_partial(&name) {
                *partial.entry(super::folder(p).to_path_buf()).or_default() += 1;
            } else if jobs::is_summary_name(&name) {
                summaries.push(p.clone());
            }
            name.ends_with(ITERATIONS_SUFFIX)
        });
        // Summary records alone are reported as such (`jobs`).
        if here.is_empty() {
            match &summaries[before..] {
                [] => warn(warnings, format!("{}: holds no *{ITERATIONS_SUFFIX} records", input.display())),
                records => summaries_only.push((input.clone(), records.to_vec())),
            }
        }
        found.extend(here);
    }
    for (dir, n) in partial {
        warn(
            warnings,
            format!(
                "{}: {} (aar.*.partial) ignored: their writer was stopped before it finished them (a job killed at \
                 its time limit or by a signal while libaar.so wrote its ranks' summary records, or aar sim while it \
                 wrote its records); the finished records beside them are read, and these can be removed",
                dir.display(),
                count(n, "unfinished record", "unfinished records")
            ),
        );
    }
    let mut seen = HashSet::new();
    found.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    found.sort();
    found
}

/// Why a file is left out as a whole; the text completes `aar: FILE: ...: skipped`.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot be opened ({0})")]
    Open(std::io::Error),
    #[error(transparent)]
    Record(#[from] Fault),
    #[error("names no policies in its header")]
    NoPolicies,
    #[error("names more than {MAX_POLICIES} policies or mode columns: not an A/B record")]
    TooManyColumns,
    #[error("has a header but no iteration rows")]
    NoRows,
    #[error("has no usable iteration rows ({0})")]
    NoUsableRows(Unusable),
}

/// Why a row cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Unusable {
    #[error(transparent)]
    Line(#[from] Problem),
    #[error("policy \"{}\" is not in the header", .0.escape_debug())]
    UnknownPolicy(String),
}

fn open(path: &Path) -> Result<Reader<BufReader<File>>, FileError> {
    let file = File::open(path).map_err(FileError::Open)?;
    Ok(Reader::new(BufReader::with_capacity(256 << 10, file))?)
}

/// Step 2 for one file: its header and the index of its first usable row.
struct Head {
    path: PathBuf,
    header: Header,
    first_index: u64,
    /// When the first usable row began, on the writer's clock.
    first_start_ns: u64,
    /// What is said of the file though it is read (a rank taken from its name).
    said: Option<String>,
}

fn read_head(path: &Path) -> Result<Head, FileError> {
    let mut reader = open(path)?;
    let mut header = reader.header().clone();
    // A libaar.so older than `rank: null` wrote rank 0 for a process that knew none, whose record
    // it named `norank` as now: that process is no rank of a run (not rank 0 of experiment
    // `nojob`, where two such records would be one rank read twice).
    let named = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<aar_record::Identity>().ok());
    if header.source == aar_record::Source::Job
        && header.rank == Some(0)
        && named.as_ref().is_some_and(|id| id.rank.is_none())
    {
        header.rank = None;
    }
    // Every writer gives a rank's record its rank, in its header as in its name: a header without
    // one (edited, or damaged) is the rank's its name gives, not a process without a rank's (an
    // experiment of its own).
    // A header whose rank is another than its name's, or that gives one where its name gives none
    // (edited, or the file renamed), is read as its name's too: the name is what ties it to the
    // summary record beside it.
    let mut said = None;
    match (header.rank, named.map(|id| id.rank)) {
        (None, Some(Some(rank))) => {
            header.rank = Some(rank);
            said = Some(format!(
                "{}: its header gives no \"rank\", which libaar.so and aar sim write: read as rank {rank}, the rank \
                 its name gives (the record was edited or damaged: put \"rank\": {rank} in its first line, or run \
                 the job again for a clean one)",
                path.display()
            ));
        }
        // Named `norank` (a process that knew no rank) with a rank in its header, the same: read
        // as the name says, a process without a rank.
        (Some(given), Some(name_rank)) if name_rank != Some(given) => {
            header.rank = name_rank;
            let (name_gives, read_as) = match name_rank {
                Some(rank) => (format!("rank {rank}"), format!("rank {rank}, the rank its name gives")),
                None => ("none (norank)".to_string(), "a process without a rank, an experiment of its own".to_string()),
            };
            said = Some(format!(
                "{}: its header gives rank {given} and its name {name_gives}, which libaar.so and aar sim write the \
                 same: read as {read_as}, as the summary record beside it is (the record was edited, or renamed: \
                 give it the name or the \"rank\" of its first line that is right, or run the job again for a \
                 clean one)",
                path.display()
            ));
        }
        _ => {}
    }
    if header.policies.is_empty() {
        return Err(FileError::NoPolicies);
    }
    if header.policies.len() > MAX_POLICIES || header.modes.len() > MAX_MODES {
        return Err(FileError::TooManyColumns);
    }
    let mut first_problem = None;
    loop {
        match reader.next_row() {
            None => return Err(first_problem.map_or(FileError::NoRows, FileError::NoUsableRows)),
            Some(Ok(row)) if header.policies.contains(&row.policy) => {
                return Ok(Head {
                    path: path.to_path_buf(),
                    header,
                    first_index: row.i,
                    first_start_ns: row.start_ns,
                    said,
                })
            }
            Some(Ok(row)) => {
                first_problem.get_or_insert(Unusable::UnknownPolicy(row.policy));
            }
            Some(Err(p)) if p.fault.ends_reading() => {
                return Err(FileError::NoUsableRows(first_problem.unwrap_or(Unusable::Line(p))))
            }
            Some(Err(p)) => {
                first_problem.get_or_insert(Unusable::Line(p));
            }
        }
    }
}

/// What one file's rows are read against.
struct Plan {
    exp: usize,
    path: PathBuf,
    rank: Option<u32>,
    /// The file's mode columns mapped to the experiment's.
    mode_map: Vec<usize>,
    policies: Vec<String>,
    skip_below: u64,
}

/// One worker's sums for one experiment.
#[derive(Default)]
struct ExpAcc {
    iterations: HashMap<u64, IterAgg>,
    totals: Vec<Totals>,
    ranks: Vec<RankSummary>,
    warmup_rows: u64,
}

impl ExpAcc {
    fn merge(&mut self, o: ExpAcc) {
        // The smaller map into the larger (IterAgg::merge is symmetric).
        let mut other = o.iterations;
        if self.iterations.len() < other.len() {
            std::mem::swap(&mut self.iterations, &mut other);
        }
        for (i, agg) in other {
            self.iterations.entry(i).and_modify(|a| a.merge(&agg)).or_insert(agg);
        }
        if self.totals.is_empty() {
            self.totals = o.totals;
        } else {
            for (a, b) in self.totals.iter_mut().zip(&o.totals) {
                a.merge(b);
            }
        }
        self.ranks.extend(o.ranks);
        self.warmup_rows += o.warmup_rows;
    }
}

/// One worker's sums for all experiments, and the warnings of the files it read (by file index).
struct Acc {
    exps: Vec<ExpAcc>,
    warnings: Vec<(usize, String)>,
}

impl Acc {
    fn new(n: usize) -> Self {
        Self { exps: (0..n).map(|_| ExpAcc::default()).collect(), warnings: Vec::new() }
    }
    fn merge(mut self, o: Acc) -> Acc {
        for (a, b) in self.exps.iter_mut().zip(o.exps) {
            a.merge(b);
        }
        self.warnings.extend(o.warnings);
        self
    }
}

/// Step 3 for one file: add its rows to `acc`; a warning if anything was wrong.
fn read_rows(plan: &Plan, n_modes: usize, acc: &mut ExpAcc) -> Option<String> {
    let mut reader = match open(&plan.path) {
        Ok(r) => r,
        Err(p) => return Some(format!("{}: {p} (it was readable a moment ago): skipped", plan.path.display())),
    };
    let np = plan.policies.len();
    if acc.totals.is_empty() {
        acc.totals = Totals::zeroed(np, n_modes);
    }
    let mut durations: Vec<Vec<f64>> = vec![Vec::new(); np];
    let (mut used, mut bad, mut unknown, mut repeated) = (0u64, 0u64, 0u64, 0u64);
    let mut first_bad: Option<Problem> = None;
    let mut first_unknown: Option<(u64, String)> = None; // (iteration, policy)
    let mut first_repeat: Option<u64> = None;
    let mut cut: Option<u64> = None;
    let mut stopped: Option<Problem> = None;
    let mut indices: Vec<u64> = Vec::new();
    let mut index_set: Option<HashSet<u64>> = None;
    let (mut first_index, mut last_index): (Option<u64>, Option<u64>) = (None, None);
    let mut last_written: Option<u64> = None;
    let (mut absurd_rows, mut first_absurd) = (0u64, None::<(u64, String)>);
    let (mut absurd_values, mut first_absurd_value) = (0u64, None::<(u64, String)>);
    while let Some(item) = reader.next_row() {
        let row: Iteration = match item {
            Ok(row) => {
                last_written = last_written.max(Some(row.i));
                row
            }
            Err(p) if matches!(p.fault, Fault::CutShort) => {
                cut = Some(p.line);
                continue;
            }
            Err(p) if p.fault.ends_reading() => {
                stopped = Some(p);
                break;
            }
            Err(p) => {
                bad += 1;
                first_bad.get_or_insert(p);
                continue;
            }
        };
        if row.i < plan.skip_below {
            acc.warmup_rows += 1;
            continue;
        }
        let Some(pi) = plan.policies.iter().position(|p| *p == row.policy) else {
            unknown += 1;
            first_unknown.get_or_insert_with(|| (row.i, row.policy.chars().take(40).collect()));
            continue;
        };
        // Repeated indices: rows come in increasing order; a set is built only if they do not.
        let repeat = match (&mut index_set, indices.last()) {
            (None, Some(&last)) if row.i <= last => {
                let mut set: HashSet<u64> = indices.iter().copied().collect();
                let dup = !set.insert(row.i);
                index_set = Some(set);
                dup
            }
            (None, _) => {
                indices.push(row.i);
                false
            }
            (Some(set), _) => !set.insert(row.i),
        };
        if repeat {
            repeated += 1;
            first_repeat.get_or_insert(row.i);
            continue;
        }
        if let Some(why) = absurd(&row) {
            absurd_rows += 1;
            first_absurd.get_or_insert((row.i, why));
            continue;
        }
        used += 1;
        first_index = Some(first_index.map_or(row.i, |f| f.min(row.i)));
        last_index = last_index.max(Some(row.i));
        let d = row.duration_ns();
        durations[pi].push(d as f64);
        let t = &mut acc.totals[pi];
        t.rows += 1;
        for (col, (&m, &b)) in row.messages.iter().zip(&row.bytes).enumerate() {
            if let Some(&c) = plan.mode_map.get(col) {
                t.messages[c] = t.messages[c].saturating_add(m);
                t.bytes[c] = t.bytes[c].saturating_add(b);
            }
        }
        t.decisions = t.decisions.saturating_add(row.decisions);
        t.switches = t.switches.saturating_add(row.switches);
        // A mean of windows is never below 0: such a value is left out of the means, not the time.
        for (name, v) in [("latency_us", row.latency_us), ("stall_ratio", row.stall_ratio)] {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                absurd_values += 1;
                first_absurd_value.get_or_insert((row.i, format!("{name} {v}")));
            }
        }
        if let Some(l) = row.latency_us.filter(|l| l.is_finite() && *l >= 0.0) {
            t.latency_us.add(l);
        }
        if let Some(s) = row.stall_ratio.filter(|s| s.is_finite() && *s >= 0.0) {
            t.stall_ratio.add(s);
        }
        let label = row.label.map(|mut l| {
            if l.len() > MAX_LABEL {
                let mut end = MAX_LABEL;
                while !l.is_char_boundary(end) {
                    end -= 1;
                }
                l.truncate(end);
            }
            l.into_boxed_str()
        });
        let agg =
            IterAgg { max_ns: d, slowest_rank: plan.rank, ranks: 1, policy: pi as u8, label, label_conflict: false };
        acc.iterations.entry(row.i).and_modify(|a| a.merge(&agg)).or_insert(agg);
    }
    let medians = durations
        .iter_mut()
        .map(|d| {
            d.sort_by(f64::total_cmp);
            aar_stats::median(d)
        })
        .collect();
    acc.ranks.push(RankSummary {
        rank: plan.rank,
        file: plan.path.clone(),
        rows: used,
        medians,
        first_index,
        last_index,
        last_written,
        left_out: bad + unknown + repeated + absurd_rows + u64::from(stopped.is_some()),
        ended: None,
        refused_begins: None,
        unwritten_at_exit: None,
        summary_unreadable: false,
    });

    let mut said = Vec::new();
    if let Some(p) = &stopped {
        said.push(format!("{p}: stopped reading there"));
    }
    if let Some(p) = &first_bad {
        let more =
            if bad > 1 { format!(" (and {} more)", count(bad - 1, "bad line", "bad lines")) } else { String::new() };
        said.push(format!("{p}{more}: skipped"));
    }
    if let Some((l, name)) = &first_unknown {
        said.push(format!(
            "{} a policy that is not in the header (first: iteration {l}, \"{}\"): skipped",
            count(unknown, "row names", "rows name"),
            name.escape_debug()
        ));
    }
    if let Some(i) = first_repeat {
        said.push(format!(
            "{} an iteration index already read (first: {i}): skipped",
            count(repeated, "row repeats", "rows repeat")
        ));
    }
    if let Some((i, why)) = &first_absurd {
        said.push(format!(
            "{} no job can have ({why}; first: iteration {i}): left out, so that iteration lacks this rank \
             (the record was damaged or edited: run the job again for a clean one)",
            count(absurd_rows, "row has a value", "rows have values")
        ));
    }
    if let Some((i, what)) = &first_absurd_value {
        said.push(format!(
            "{} a negative mean ({what}; first: iteration {i}): left out of the means of latency and stall",
            count(absurd_values, "value is", "values are")
        ));
    }
    if let Some(l) = cut {
        said.push(format!("line {l} {}: ignored", Fault::CutShort));
    }
    if said.is_empty() {
        return None;
    }
    let outcome =
        if used == 0 { "no rows used".to_string() } else { format!("the other {} used", count(used, "row", "rows")) };
    Some(format!("{}: {}; {outcome}", plan.path.display(), said.join("; ")))
}

/// A job none of whose ranks has a summary record beside its iteration record (`files`): none
/// has exited, so the job is still running or was stopped, and its rows may end evenly and yet
/// not be all its iterations. The simulator writes no summary records.
fn unfinished(e: &ExperimentData, files: &[(health::Who, &Path)]) -> Option<String> {
    let summary = |p: &Path| health::summary_beside(p).is_some_and(|s| std::fs::symlink_metadata(s).is_ok());
    if e.header.source != aar_record::Source::Job || files.iter().any(|(_, p)| summary(p)) {
        return None;
    }
    Some(format!(
        "experiment \"{}\": no rank has a summary record beside its iteration record (libaar.so writes it when the \
         rank exits): the job may still be running, or was stopped before its ranks exited (killed, or at its time \
         limit), so this report is of the iterations written so far (a rank writes its rows at least a second \
         apart). Report the folder again when the job has ended (or, if the records were copied, copy the \
         aar.*.json beside them too)",
        e.name.escape_debug()
    ))
}

/// Ranks that exited having ended more iterations than their iteration records hold rows of
/// (below the rows libaar.so writes per process), one warning per cause: rows the exit handler
/// could not write because another thread held the iteration record (its summary record says how
/// many: `ab.rows_unwritten_at_exit`), or else a write that failed or was in progress when the
/// process ended (its rows are not counted there), which the records do not tell apart. The table
/// compares the rows written.
fn unwritten(e: &ExperimentData) -> Vec<String> {
    let short: Vec<(&RankSummary, u64)> = e.ranks.iter().filter_map(|r| Some((r, r.unwritten()?))).collect();
    let (held, failed): (Vec<_>, Vec<_>) = short.into_iter().partition(|(r, _)| r.unwritten_at_exit.is_some());
    // Each rank's record named (the first few; the others counted): each is a run of its own to redo.
    let said = |short: &[(&RankSummary, u64)]| -> Option<String> {
        let each = short.iter().map(|(r, ended)| {
            format!(
                "{}'s iteration record {} holds rows of only {} of the {ended} its summary record says it ended",
                r.who(),
                r.file.display(),
                count(r.last_written.map_or(0, |i| i + 1), "iteration", "iterations")
            )
        });
        let each = first_few(each, short.len(), NAMED, "; ");
        (!short.is_empty()).then(|| format!("experiment \"{}\": {each}", e.name.escape_debug()))
    };
    let mut out = Vec::new();
    if let Some(head) = said(&held) {
        let unwritten: u64 = held.iter().map(|(r, _)| r.unwritten_at_exit.unwrap_or_default()).sum();
        let (rank, record) = match held.len() {
            1 => ("the rank's iteration record", "the summary record's"),
            _ => ("each rank's iteration record", "the summary records'"),
        };
        out.push(format!(
            "{head}: at exit another thread held {rank} (inside fork(), or writing rows to a slow \
             file system) for longer than libaar.so's exit handler waits, so the {} still buffered {} not written \
             ({record} ab.rows_unwritten_at_exit), and the tables compare the rows written. Let forks and \
             the other threads' iteration calls finish before the program exits (join those threads before exit, or \
             before MPI_Finalize), and run again",
            count(unwritten, "row", "rows"),
            if unwritten == 1 { "was" } else { "were" },
        ));
    }
    if let Some(head) = said(&failed) {
        out.push(format!(
            "{head}: the rest were not written: either a write failed (a full disk, \
             or the file size limit, ulimit -f: libaar.so's warning at run time, and the summary record's \
             \"messages\", say so), or the process ended while a write of rows was in progress (it exited while \
             another thread wrote them to a slow file system, or was killed during the write: the rows that write \
             had taken are not counted in ab.rows_unwritten_at_exit). The tables compare the rows written. Free \
             space or raise the limit in the batch script, let the program's threads finish their iteration calls \
             before it exits, and run again"
        ));
    }
    out
}

/// What makes a row's time or bytes impossible for a job: no time at all, more than
/// [`MAX_ITERATION_NS`], or more bytes than [`MAX_BYTES_PER_SECOND`] allows.
fn absurd(row: &Iteration) -> Option<String> {
    let d = row.duration_ns();
    if d == 0 {
        return Some("an iteration of 0 ns: end_ns = start_ns".into());
    }
    if d > MAX_ITERATION_NS {
        return Some(format!("an iteration of {} days", d / (24 * 3600 * 1_000_000_000)));
    }
    let bytes = row.bytes.iter().fold(0u64, |a, &b| a.saturating_add(b));
    let seconds = d.div_ceil(1_000_000_000).max(1);
    if bytes / seconds > MAX_BYTES_PER_SECOND {
        return Some(format!(
            "{} in {} ns, beyond {} per second",
            aar_record::human_bytes(bytes),
            d,
            aar_record::human_bytes(MAX_BYTES_PER_SECOND)
        ));
    }
    None
}

/// The copies among `summaries` of one process's summary record (the same [`aar_record::Identity`]
/// and host, in other files), set aside from `summaries`, and what is said of each
/// ([`health::copy_said`]). Kept of each process's: the record beside a given iteration record
/// (`beside_given`), else one in a folder that holds iteration records (not among
/// `inputs_of_summaries`), else the first by name. A copy beside a given iteration record is not
/// said: that iteration record is said as a file already read.
fn copies(
    summaries: &mut Vec<PathBuf>,
    inputs_of_summaries: &[(PathBuf, Vec<PathBuf>)],
    beside_given: &(impl Fn(&Path) -> bool + Sync),
) -> (HashSet<PathBuf>, Vec<String>) {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let ids: Vec<Option<aar_record::Identity>> = summaries.par_iter().map(|p| health::identity_of(p)).collect();
    let mut by_id: HashMap<aar_record::Identity, Vec<&PathBuf>> = HashMap::new();
    for (p, id) in summaries.iter().zip(ids) {
        if let Some(id) = id {
            by_id.entry(id).or_default().push(p);
        }
    }
    let alone: HashSet<&PathBuf> = inputs_of_summaries.iter().flat_map(|(_, records)| records).collect();
    let (mut set_aside, mut said) = (HashSet::new(), Vec::new());
    for (id, mut paths) in by_id.into_iter().filter(|(_, paths)| paths.len() > 1) {
        // The same file reached twice is read once already; one process per host.
        let mut seen = HashSet::new();
        paths.retain(|p| seen.insert(canonical(p)));
        let host = |p: &Path| health::read_summary(p).ok().map(|(rec, _)| rec["host"].as_str().map(String::from));
        let mut by_host: BTreeMap<Option<Option<String>>, Vec<&PathBuf>> = BTreeMap::new();
        for p in paths {
            by_host.entry(host(p)).or_default().push(p);
        }
        for (_, mut same) in by_host.into_iter().filter(|(host, same)| host.is_some() && same.len() > 1) {
            same.sort_by_key(|p| (!beside_given(p), alone.contains(p), p.to_path_buf()));
            for copy in &same[1..] {
                set_aside.insert((*copy).clone());
                if !beside_given(copy) {
                    said.push(health::copy_said(copy, same[0], &id));
                }
            }
        }
    }
    said.sort();
    summaries.retain(|p| !set_aside.contains(p));
    (set_aside, said)
}

/// Find, group and read every record under `inputs`. `skip`: iterations to leave out at the start
/// of each experiment.
pub fn read_all(inputs: &[PathBuf], skip: u64) -> Data {
    let mut warnings = Vec::new();
    let mut inputs_of_summaries = Vec::new();
    let mut summaries = Vec::new();
    let mut held = Vec::new();
    let files = discover(inputs, &mut warnings, &mut held, &mut inputs_of_summaries, &mut summaries);
    summaries.sort();
    summaries.dedup();
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    // The iteration records found, as a summary record's name for the one beside it is compared.
    let given: HashSet<PathBuf> = files.iter().map(|p| canonical(p)).collect();
    let beside_given = |p: &Path| health::iterations_beside(p).is_some_and(|i| given.contains(&canonical(&i)));
    // Copies of one process's summary record are one record: the others are said (when the report
    // is of iterations: summed per job, `jobs` says them) and set aside.
    let (copies, copies_said) = copies(&mut summaries, &inputs_of_summaries, &beside_given);

    // Step 2: heads, grouped by experiment.
    let heads: Vec<Result<Head, FileError>> = files.par_iter().map(|p| read_head(p)).collect();
    // A process without a rank (outside a job) is no rank of a run: its record is an experiment of
    // its own, not compared iteration by iteration with another's of the same name. A copy of it
    // (the same pid and host, its first row begun at the same nanosecond) is its, said as one.
    type Alone = (Option<u32>, Option<String>, u64, Option<PathBuf>);
    let mut groups: BTreeMap<(String, Option<Alone>), Vec<Head>> = BTreeMap::new();
    for (path, head) in files.iter().zip(heads) {
        match head {
            Ok(mut h) => {
                if let Some(said) = h.said.take() {
                    warn(&mut warnings, said);
                }
                let alone = h.header.rank.is_none().then(|| {
                    let unnamed = h.header.pid.is_none().then(|| h.path.clone());
                    (h.header.pid, h.header.host.clone(), h.first_start_ns, unnamed)
                });
                groups.entry((h.header.experiment.clone(), alone)).or_default().push(h)
            }
            // A newer format may give a field another meaning: not read as this one.
            Err(FileError::Record(Fault::OtherFormat(f)))
                if f.strip_prefix("aar-iterations/").and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n > 1) =>
            {
                warn(
                    &mut warnings,
                    format!(
                        "{}: is in format \"{}\", which a newer aar writes (this aar reads {FORMAT} only; upgrade aar \
                         to read it): skipped",
                        path.display(),
                        super::output::clean(&f)
                    ),
                )
            }
            // Every writer writes a header that reads (a newer one in a newer format).
            Err(what @ FileError::Record(Fault::BadHeader(_) | Fault::HeaderField { .. })) => warn(
                &mut warnings,
                format!(
                    "{}: {what}: skipped, with its rows (the record was damaged or edited: run the job again for a \
                     clean one)",
                    path.display()
                ),
            ),
            Err(what) => warn(&mut warnings, format!("{}: {what}: skipped", path.display())),
        }
    }
    let mut experiments = Vec::new();
    let mut plans = Vec::new();
    // Per experiment: its iteration records' headers disagree on AAR_OUTPUT_RANKS (said).
    let mut samples_said = Vec::new();
    for ((name, _), mut heads) in groups {
        heads.sort_by(|a, b| (a.header.rank, &a.path).cmp(&(b.header.rank, &b.path)));
        // A run has a rank at least: `nranks` 0, which no writer writes (an edited or damaged
        // header), is read as not known, as `null` is.
        let zero: Vec<&Path> = heads.iter().filter(|h| h.header.nranks == Some(0)).map(|h| h.path.as_path()).collect();
        if let Some(first) = zero.first() {
            warn(
                &mut warnings,
                format!(
                    "{}{}: {} \"nranks\": 0, which no writer writes (a run has a rank at least): read as \
                     not known, as null is, so the ranks of experiment \"{}\" are those read; run the job again for \
                     clean records",
                    first.display(),
                    match zero.len() {
                        1 => String::new(),
                        n => format!(" (and {} more)", n - 1),
                    },
                    if zero.len() == 1 { "the header gives" } else { "their headers give" },
                    name.escape_debug()
                ),
            );
        }
        for h in &mut heads {
            h.header.nranks = h.header.nranks.filter(|&n| n > 0);
        }
        let mut reference = heads[0].header.clone();
        // Ranks of which some know a number of ranks and some none: the number is not the run's.
        // A launcher run inside a Slurm step (a PMIx launcher's, whose daemons srun starts)
        // leaves its rank 0 the SLURM_PROCID 0 of the first daemon and with it the daemons'
        // SLURM_NTASKS, and the others none: the ranks are those whose records are read.
        if heads.iter().any(|h| h.header.nranks.is_none()) {
            reference.nranks = None;
        }
        let ref_path = heads[0].path.clone();
        let mut modes: Vec<String> = Vec::new();
        let mut admitted: Vec<Head> = Vec::new();
        // Where each rank's admitted head is: found by a look-up, as a search per head is
        // quadratic in the ranks.
        let mut admitted_at: HashMap<Option<u32>, usize> = HashMap::new();
        for h in heads {
            // Of ranks only: a process without a rank is alone in its experiment, but for copies.
            let rank = h.header.rank.unwrap_or_default();
            let whose = h.header.rank.map_or_else(|| "the process without a rank".to_string(), |r| format!("rank {r}"));
            let differs = |what: &str, mine: String, theirs: String| {
                format!(
                    "{}: rank {rank} of experiment \"{}\" has {what} {mine} where rank {} ({}) has {theirs}: skipped",
                    h.path.display(),
                    name.escape_debug(),
                    reference.rank.unwrap_or_default(),
                    ref_path.display()
                )
            };
            let problem = if let Some(prev) = admitted_at.get(&h.header.rank).map(|&i| &admitted[i]) {
                let process = |h: &Header| match (h.pid, &h.host) {
                    (Some(pid), Some(host)) => format!("pid {pid} on {}", super::output::clean(host)),
                    (Some(pid), None) => format!("pid {pid}"),
                    (None, _) => "a process the header does not name".to_string(),
                };
                let (mine, theirs) = (process(&h.header), process(&prev.header));
                Some(if mine == theirs && h.header.pid.is_some() {
                    format!(
                        "{}: {whose} of experiment \"{}\" was already read from {}, of the same process \
                         ({mine}): skipped as a copy of it (one of the two can be removed)",
                        h.path.display(),
                        name.escape_debug(),
                        prev.path.display()
                    )
                } else {
                    format!(
                        "{}: {whose} of experiment \"{}\" was already read from {}, of another process ({theirs}, \
                         where this is {mine}): skipped, so the rank's rows are that process's only. Two runs of one \
                         name are among the records given (give each run its own AAR_OUTPUT_DIR, and report each \
                         apart), or the launcher gave two processes one rank",
                        h.path.display(),
                        name.escape_debug(),
                        prev.path.display()
                    )
                })
            } else if let Some((mine, theirs)) = h.header.nranks.zip(reference.nranks).filter(|(m, t)| m != t) {
                Some(differs("ranks", mine.to_string(), format!("{theirs} (another run of the same name)")))
            } else if let Some(n) = reference.nranks.filter(|&n| h.header.rank.is_some_and(|r| r >= n)) {
                Some(format!(
                    "{}: rank {rank} of experiment \"{}\" is outside its {} (0 to {}): skipped",
                    h.path.display(),
                    name.escape_debug(),
                    count(n, "rank", "ranks"),
                    n.saturating_sub(1)
                ))
            } else if h.header.source != reference.source {
                Some(differs("source", h.header.source.name().into(), reference.source.name().into()))
            } else if h.header.clock != reference.clock {
                Some(differs("clock", h.header.clock.name().into(), reference.clock.name().into()))
            } else if h.header.policies != reference.policies {
                Some(differs("policies", format!("{:?}", h.header.policies), format!("{:?}", reference.policies)))
            } else {
                None
            };
            match problem {
                Some(p) => warn(&mut warnings, p),
                None => {
                    for m in &h.header.modes {
                        if !modes.contains(m) {
                            modes.push(m.clone());
                        }
                    }
                    admitted_at.insert(h.header.rank, admitted.len());
                    admitted.push(h);
                }
            }
        }
        // Ranks that took AAR_OUTPUT_RANKS differently: which ranks write is not known.
        let said =
            health::disagree(admitted.iter().map(|h| {
                (health::Who::new(h.header.rank, &h.path), health::sample_text(h.header.output_ranks.as_ref()))
            }));
        if let Some(said) = &said {
            let what = format!("experiment \"{}\"", name.escape_debug());
            warn(
                &mut warnings,
                health::sizes_disagree(&what, "iteration records", &format!("AAR_OUTPUT_RANKS: {said}")),
            );
            (reference.nranks, reference.output_ranks) = (None, None);
        }
        samples_said.push(said.is_some());
        // A schedule may name a policy twice (an older aar sim wrote --policy A,B,A, A in two
        // iterations of three): its rows are one policy's, one row of the tables, whichever place
        // they ran in.
        let mut policies: Vec<String> = Vec::new();
        for p in &reference.policies {
            if !policies.contains(p) {
                policies.push(p.clone());
            }
        }
        if policies.len() < reference.policies.len() {
            let twice: Vec<String> = policies
                .iter()
                .filter(|p| reference.policies.iter().filter(|q| q == p).count() > 1)
                .map(|p| super::output::clean(p))
                .collect();
            warn(
                &mut warnings,
                format!(
                    "experiment \"{}\": its schedule names {} more than once ({}, in {}): each policy's iterations \
                     are reported together in one row",
                    name.escape_debug(),
                    twice.join(", "),
                    super::output::clean_to(&reference.policies.join(","), 200),
                    ref_path.display()
                ),
            );
        }
        let first_index = admitted.iter().map(|h| h.first_index).min().unwrap_or(0);
        // Without --skip nothing is left out, whatever order the indices come in.
        let skip_below = if skip == 0 { 0 } else { first_index.saturating_add(skip) };
        let exp = experiments.len();
        for h in admitted {
            let mode_map = h.header.modes.iter().map(|m| modes.iter().position(|x| x == m).unwrap_or(0)).collect();
            plans.push(Plan {
                exp,
                path: h.path,
                rank: h.header.rank,
                mode_map,
                policies: policies.clone(),
                skip_below,
            });
        }
        experiments.push(ExperimentData {
            name,
            policies,
            header: reference,
            modes,
            first_index,
            iterations: Vec::new(),
            totals: Vec::new(),
            ranks: Vec::new(),
            warmup_rows: 0,
            output_ranks: None,
            without_rows: Vec::new(),
        });
    }

    // Step 3: rows, in parallel; a progress bar for long reads on a terminal.
    let sizes: Vec<u64> = plans.iter().map(|p| std::fs::metadata(&p.path).map_or(0, |m| m.len())).collect();
    let total: u64 = sizes.iter().sum();
    let bar = (std::io::stderr().is_terminal() && total >= PROGRESS_BYTES).then(|| {
        let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("aar: reading [{bar:30}] {binary_bytes}/{binary_total_bytes}, {eta} left")
        {
            b.set_style(style.progress_chars("=> "));
        }
        b
    });
    let n_exp = experiments.len();
    let modes_per_exp: Vec<usize> = experiments.iter().map(|e| e.modes.len()).collect();
    let acc = plans
        .par_iter()
        .enumerate()
        .fold(
            || Acc::new(n_exp),
            |mut acc, (k, plan)| {
                if let Some(w) = read_rows(plan, modes_per_exp[plan.exp], &mut acc.exps[plan.exp]) {
                    acc.warnings.push((k, w));
                }
                if let Some(b) = &bar {
                    b.inc(sizes[k]);
                }
                acc
            },
        )
        .reduce(|| Acc::new(n_exp), Acc::merge);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut file_warnings = acc.warnings;
    file_warnings.sort();
    for (_, w) in file_warnings {
        warn(&mut warnings, w);
    }
    for (e, a) in experiments.iter_mut().zip(acc.exps) {
        let mut iterations: Vec<(u64, IterAgg)> = a.iterations.into_iter().collect();
        iterations.sort_unstable_by_key(|x| x.0);
        e.iterations = iterations;
        e.totals = if a.totals.is_empty() { Totals::zeroed(e.policies.len(), e.modes.len()) } else { a.totals };
        e.ranks = a.ranks;
        e.ranks.sort_by_key(|r| r.rank);
        e.warmup_rows = a.warmup_rows;
    }
    if !experiments.is_empty() {
        for said in copies_said {
            warn(&mut warnings, said);
        }
    }
    // What the ranks' summary records say of how the policies ran.
    for ((k, e), samples_said) in experiments.iter_mut().enumerate().zip(samples_said) {
        let files: Vec<(health::Who, &Path)> = plans
            .iter()
            .filter(|p| p.exp == k)
            .map(|p| (health::Who::new(p.rank, &p.path), p.path.as_path()))
            .collect();
        let health = health::warnings(&e.name, &e.policies, &files);
        for w in health.said {
            warn(&mut warnings, w);
        }
        // Each rank found by a look-up, not a search: a search per rank is quadratic in the ranks.
        let mut at: HashMap<health::Who, usize> = HashMap::with_capacity(e.ranks.len());
        for (i, r) in e.ranks.iter().enumerate() {
            at.entry(r.who()).or_insert(i);
        }
        let rank_of = |who: &health::Who| at.get(who).copied();
        for (rank, n) in health.ended {
            if let Some(i) = rank_of(&rank) {
                e.ranks[i].ended = Some(n);
            }
        }
        for (rank, refused) in health.refused_begins {
            if let Some(i) = rank_of(&rank) {
                e.ranks[i].refused_begins = Some(refused);
            }
        }
        for (rank, n) in health.unwritten_at_exit {
            if let Some(i) = rank_of(&rank) {
                e.ranks[i].unwritten_at_exit = Some(n);
            }
        }
        // The header's first: a job still running has no summary records.
        e.output_ranks = match (e.header.output_ranks.clone(), health.output_ranks) {
            (Some(sample), _) => Some(sample),
            (None, Ok(sample)) => sample,
            (None, Err(said)) => {
                if !samples_said {
                    let what = format!("experiment \"{}\"", e.name.escape_debug());
                    warn(&mut warnings, health::sizes_disagree(&what, "summary records", &said));
                }
                e.header.nranks = None;
                None
            }
        };
        for rank in health.unreadable {
            if let Some(i) = rank_of(&rank) {
                e.ranks[i].summary_unreadable = true;
            }
        }
        for w in unwritten(e) {
            warn(&mut warnings, w);
        }
        if e.header.source == aar_record::Source::Job {
            let read: BTreeSet<u32> = plans.iter().filter(|p| p.exp == k).filter_map(|p| p.rank).collect();
            let what = format!("experiment \"{}\"", e.name.escape_debug());
            let (without, said) = health::without_rows(&what, &e.name, e.header.nranks, &read, &summaries, &given);
            e.without_rows = without;
            for w in said {
                warn(&mut warnings, w);
            }
        }
        if let Some(w) = unfinished(e, &files) {
            warn(&mut warnings, w);
        }
    }
    // An iteration record's name in a folder on a link to nothing or a loop of links is said once:
    // by its rank's warning (which names the rank, [`health::without_rows`]) if that names it,
    // else here.
    let place = |p: &Path| canonical(super::folder(p)).join(p.file_name().unwrap_or_default());
    let named: HashSet<PathBuf> = experiments
        .iter()
        .flat_map(|e| &e.without_rows)
        .filter(|(_, why, _)| matches!(why, health::NoRows::LinkToNothing | health::NoRows::LinkLoop))
        .filter_map(|(_, _, record)| Some(place(&health::iterations_beside(record)?)))
        .collect();
    for (link, said) in held {
        if !named.contains(&place(&link)) {
            warn(&mut warnings, said);
        }
    }
    // Which summary records of the inputs without iteration records the report uses, however
    // they were reached (a folder and a file in it). Not counted: one whose iteration record
    // beside it was given (it is read with that record), a fork child's (it writes no rows by
    // design), and a copy of another (said above): none is left out.
    let used: HashSet<PathBuf> =
        experiments.iter().flat_map(|e| &e.without_rows).map(|(_, _, record)| canonical(record)).collect();
    let fork_child = |p: &Path| health::read_summary(p).is_ok_and(|(rec, _)| health::fork_child(&rec));
    let summaries_only = inputs_of_summaries
        .into_iter()
        .map(|(input, records)| {
            let (explaining, others): (Vec<&PathBuf>, Vec<&PathBuf>) =
                records.iter().partition(|r| used.contains(&canonical(r)));
            let explaining = explaining.len();
            let counted = |r: &&PathBuf| !copies.contains(*r) && !beside_given(r) && !fork_child(r);
            SummariesOnly { input, records: explaining + others.into_par_iter().filter(counted).count(), explaining }
        })
        .collect();
    Data { experiments, warnings, summaries_only }
}
