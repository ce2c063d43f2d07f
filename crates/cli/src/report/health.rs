//! Whether the policies ran as named on every rank: what each rank's summary record (written by
//! libaar.so at exit beside its iteration record, `aar.<job>[.<step>][.restart<N>].<rank>.<pid>.json`) says went wrong.
//! An automatic policy whose counters failed routes in a fixed mode from then on, a rank whose
//! threads kept finding the decider taken sent much of its traffic undecided, DMAPP traffic
//! that was not steered kept the application's routing under every policy: the table still names
//! the policies, so the report says which ranks did not run them as such.
//!
//! One warning per kind of problem and experiment, naming the ranks; and the warnings other
//! ranks kept that rank 0 did not print (libaar.so prints them from rank 0 only). A rank without
//! a summary record (killed, `_exit`, or written by the simulator) is not looked at. Summary
//! records are small (a few KiB) and read in parallel.

use super::output::{clean_to, first_few, NAMED, RANKS_NAMED};
use aar_engine::Policy;
use aar_record::ranks::RankSet;
use aar_record::Identity;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// A rank's share of threshold crossings that went out undecided above which it is named.
pub const UNDECIDED_SHARE: f64 = 0.1;
/// A rank's share of counter reads that failed (and were tried again) above which it is named.
pub const FAILED_READ_SHARE: f64 = 0.01;
/// Summary records larger than this are not summary records.
const MAX_SUMMARY_BYTES: u64 = 4 << 20;
/// Text from a record quoted in a warning: control characters (a terminal's escape sequences, a
/// newline that would forge a line) shown as `?`, and at most this many characters.
const MAX_QUOTED: usize = 400;

fn quoted(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    clean_to(text, MAX_QUOTED)
}
/// Distinct warnings of other ranks than rank 0 quoted; the others are counted.
const UNPRINTED_SHOWN: usize = 3;

/// What one rank's summary record says went wrong.
#[derive(Debug, Default)]
pub struct Problems {
    internal_errors: u64,
    /// The counters could not be read (from the start, or from some read on): why, as the
    /// record says (empty in a record that does not).
    counters: Option<String>,
    /// Why DMAPP stopped being steered, when the rank made DMAPP calls.
    dmapp: Option<String>,
    /// Crossings undecided and all crossings, when the share is above [`UNDECIDED_SHARE`].
    undecided: Option<(u64, u64)>,
    /// The messages the rank kept (its warnings, which only rank 0 prints, and its errors).
    messages: Vec<String>,
    /// Iterations ended, when more than its iteration record can hold ([`aar_record::MAX_ROWS`]).
    rows_capped: Option<u64>,
    /// Iterations the rank ended, as its record's `ab` section says (a rank with a summary record
    /// exited: it was not stopped).
    pub ended: Option<u64>,
    /// Begins of `aar_iteration_begin` refused while libaar.so was starting, per cause (the names
    /// of [`aar_record::RefusedBegin`], or a newer libaar.so's), as `ab.refused_begins` says:
    /// counted in `ended`, without rows. `None`: a record of a libaar.so older than the count.
    pub refused_begins: Option<Vec<(String, u64)>>,
    /// Rows buffered at exit that libaar.so's exit handler could not write, another thread holding
    /// the iteration record (`ab.rows_unwritten_at_exit`; `None`: it wrote them, or a record of a
    /// libaar.so older than the field).
    pub unwritten_at_exit: Option<u64>,
    /// Reads that failed and were tried again, and all reads, when the share is above
    /// [`FAILED_READ_SHARE`] and the counters were not given up.
    failed_reads: Option<(u64, u64)>,
    /// `AAR_OUTPUT_RANKS` as the rank took it (`None`: every rank writes records).
    output_ranks: Option<RankSet>,
    /// The job's number of ranks as the rank's launcher said (`None`: it did not, or a record
    /// written before libaar.so wrote it).
    nranks: Option<u32>,
}

/// The summary record beside an iteration record (there or not), if it has the library's naming:
/// the one of the same [`Identity`].
pub fn summary_beside(iterations: &Path) -> Option<PathBuf> {
    let name = iterations.file_name()?.to_str()?.strip_suffix(aar_record::ITERATIONS_SUFFIX)?;
    Some(iterations.with_file_name(name.parse::<Identity>().ok()?.summary_file_name()))
}

/// What a field of a summary record the report reads must be (or `null`, or absent).
#[derive(Clone, Copy)]
enum Kind {
    /// A non-negative integer.
    Count,
    Text,
    Flag,
    /// A list of strings.
    Texts,
    /// A set of ranks as `AAR_OUTPUT_RANKS` takes it (a string).
    Ranks,
    /// An object of non-negative integers.
    Counts,
}

/// The fields of a summary record the report reads ([`problems`] and the jobs' sums).
const FIELDS: &[(&str, Kind)] = &[
    ("/rank", Kind::Count),
    ("/nranks", Kind::Count),
    ("/pid", Kind::Count),
    ("/host", Kind::Text),
    ("/job_id", Kind::Text),
    ("/step", Kind::Text),
    ("/restart", Kind::Count),
    ("/policy_at_exit", Kind::Text),
    ("/command_line", Kind::Texts),
    ("/settings/engine/policy/kind", Kind::Text),
    ("/settings/ab", Kind::Text),
    ("/settings/output_ranks", Kind::Ranks),
    ("/internal_errors", Kind::Count),
    ("/counters/backend", Kind::Text),
    ("/counters/unavailable_because", Kind::Text),
    ("/counters/gave_way", Kind::Count),
    ("/counters/reads", Kind::Count),
    ("/counters/read_failures", Kind::Count),
    ("/apis/DMAPP/messages", Kind::Count),
    ("/dmapp/steering", Kind::Flag),
    ("/dmapp/stopped_because", Kind::Text),
    ("/decider/undecided_crossings", Kind::Count),
    ("/engine/decisions", Kind::Count),
    ("/engine/switches_to_low_latency", Kind::Count),
    ("/engine/switches_to_low_stall", Kind::Count),
    ("/ab/iterations", Kind::Count),
    ("/ab/refused_begins", Kind::Counts),
    ("/ab/rows_unwritten_at_exit", Kind::Count),
    ("/ab/iterations_file", Kind::Text),
    ("/fork_child", Kind::Flag),
    ("/messages", Kind::Texts),
];

impl Kind {
    fn fits(self, v: &Value) -> bool {
        match self {
            Kind::Count => v.is_u64(),
            Kind::Text => v.is_string(),
            Kind::Flag => v.is_boolean(),
            Kind::Texts => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            Kind::Ranks => v.as_str().is_some_and(|t| t.parse::<RankSet>().is_ok()),
            Kind::Counts => v.as_object().is_some_and(|o| o.values().all(Value::is_u64)),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::Count => "a whole number of at least 0",
            Kind::Text => "a string",
            Kind::Flag => "true or false",
            Kind::Texts => "a list of strings",
            Kind::Ranks => "a set of ranks as AAR_OUTPUT_RANKS takes it (e.g. \"0:63,128\")",
            Kind::Counts => "an object of whole numbers of at least 0",
        }
    }
}

/// The fields of `rec` the report reads that have another JSON type than libaar.so writes,
/// each set to `null` (read as absent: not counted), and how each was.
fn wrong_types(rec: &mut Value) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut check = |rec: &mut Value, pointer: &str, kind: Kind| {
        if let Some(v) = rec.pointer_mut(pointer).filter(|v| !v.is_null() && !kind.fits(v)) {
            wrong.push(format!(
                "\"{}\" is {} where {} is expected",
                &pointer[1..],
                quoted(&v.to_string()),
                kind.name()
            ));
            *v = Value::Null;
        }
    };
    for &(pointer, kind) in FIELDS {
        check(rec, pointer, kind);
    }
    let modes: Vec<String> = rec["modes"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    for mode in modes {
        let escaped = mode.replace('~', "~0").replace('/', "~1");
        for key in ["messages", "bytes"] {
            check(rec, &format!("/modes/{escaped}/{key}"), Kind::Count);
        }
    }
    wrong
}

/// A summary record (format `aar-record/N`, N at most [`aar_record::SUMMARY_FORMAT`]'s) and what in it could
/// not be read (fields of another type than libaar.so writes, read as absent: the text completes
/// `aar: FILE: ...`); or why `path` is not one that can be read (the text completes `aar: FILE:
/// ...: skipped`).
pub fn read_summary(path: &Path) -> Result<(Value, Option<String>), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_SUMMARY_BYTES {
        return Err(format!("larger than {} MiB, so not a summary record", MAX_SUMMARY_BYTES >> 20));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot be read ({e})"))?;
    let mut v: Value = serde_json::from_slice(&bytes).map_err(|e| match bytes.iter().filter(|&&b| b == 0).count() {
        // JSON text holds no NUL byte.
        0 => format!("not a whole summary record ({e}; cut short if its rank was stopped while writing it)"),
        n => format!(
            "not a whole summary record: it holds {}: {}",
            aar_record::count(n as u64, "NUL byte", "NUL bytes"),
            aar_record::LOST_DATA
        ),
    })?;
    // The newest format this aar reads: the one its libaar.so writes.
    let (name, newest) = aar_record::SUMMARY_FORMAT.rsplit_once('/').unwrap_or_default();
    let version = match v["format"].as_str().and_then(|f| f.strip_prefix(name)?.strip_prefix('/')) {
        Some(n) => n.parse::<u32>().map_err(|_| format!("in format \"{name}/{}\", which no aar writes", quoted(n)))?,
        None => return Err(format!("JSON, but not a summary record (no \"format\": \"{name}/...\")")),
    };
    if newest.parse::<u32>().is_ok_and(|newest| version > newest) {
        return Err(format!(
            "in format \"{name}/{version}\", which a newer libaar.so writes (this aar reads {name}/{newest} and \
             older; upgrade aar to read it)"
        ));
    }
    let wrong = wrong_types(&mut v);
    let note = (!wrong.is_empty()).then(|| {
        format!(
            "{}: read as absent (not counted). libaar.so writes none of these: the record was edited or damaged; \
             run the job again for a clean record",
            wrong.join("; ")
        )
    });
    Ok((v, note))
}

/// Whether a policy name is an automatic policy's (`auto`, `steady`: they need the counters).
pub fn is_automatic(policy: &str) -> bool {
    policy.parse::<Policy>().is_ok_and(Policy::is_automatic)
}

/// What a rank's summary record says went wrong; `automatic`: the rank ran an automatic policy.
pub fn problems(rec: &Value, automatic: bool) -> Problems {
    let n = |p: &str| rec.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    // Never opened, given up (a reason is kept: reads that failed and were tried again are not),
    // or stepped aside for the program's own PAPI measurement (which leaves the backend as it
    // was; the reason stays only while aside).
    let gave_way = n("/counters/gave_way");
    let counters_failed = rec.pointer("/counters/backend").and_then(Value::as_str) == Some("none")
        || rec.pointer("/counters/unavailable_because").is_some_and(Value::is_string)
        || gave_way > 0;
    let dmapp_stopped = n("/apis/DMAPP/messages") > 0 && rec.pointer("/dmapp/steering") == Some(&Value::Bool(false));
    let undecided = n("/decider/undecided_crossings");
    // Counts of an edited record may be near 2^64: added up, they saturate rather than wrap into a
    // share above 100 %.
    let crossings = undecided.saturating_add(n("/engine/decisions"));
    Problems {
        internal_errors: n("/internal_errors"),
        counters: (automatic && counters_failed).then(|| match rec.pointer("/counters/unavailable_because") {
            Some(Value::String(why)) => quoted(why),
            _ if gave_way > 0 => format!(
                "the counters stepped aside {} for the program's own PAPI measurement, and counted again after",
                aar_record::count(gave_way, "time", "times")
            ),
            _ => String::new(),
        }),
        dmapp: dmapp_stopped
            .then(|| quoted(rec.pointer("/dmapp/stopped_because").and_then(Value::as_str).unwrap_or(""))),
        undecided: (crossings > 0 && undecided as f64 > UNDECIDED_SHARE * crossings as f64)
            .then_some((undecided, crossings)),
        messages: rec["messages"].as_array().into_iter().flatten().filter_map(Value::as_str).map(quoted).collect(),
        rows_capped: Some(n("/ab/iterations")).filter(|&ended| ended > aar_record::MAX_ROWS),
        ended: rec.pointer("/ab/iterations").and_then(Value::as_u64),
        refused_begins: rec.pointer("/ab/refused_begins").and_then(Value::as_object).map(|o| {
            o.iter().filter_map(|(why, n)| Some((why.clone(), n.as_u64()?))).filter(|&(_, n)| n > 0).collect()
        }),
        unwritten_at_exit: rec.pointer("/ab/rows_unwritten_at_exit").and_then(Value::as_u64).filter(|&n| n > 0),
        failed_reads: {
            // Successful reads and failed ones: libaar.so tries a failed read again, and gives
            // the counters up (a reason, above) only at three failures in a row.
            let (failed, read) = (n("/counters/read_failures"), n("/counters/reads"));
            let tried = failed.saturating_add(read);
            (!counters_failed && failed > 0 && failed as f64 > FAILED_READ_SHARE * tried as f64)
                .then_some((failed, tried))
        },
        output_ranks: rec.pointer("/settings/output_ranks").and_then(Value::as_str).and_then(|t| t.parse().ok()),
        // 0, which libaar.so never writes (a run has a rank at least), is not known, as null is.
        nranks: rec["nranks"].as_u64().and_then(|n| u32::try_from(n).ok()).filter(|&n| n > 0),
    }
}

/// Values named in one warning when ranks disagree; the others are counted ([`first_few`]).
const VALUES_SHOWN: usize = 3;

/// Whose summary record: a rank's, or a process's that knew no rank (outside a job, a serial
/// program: `aar.nojob.norank.<pid>.json`), named by its record's file. Processes without a rank
/// are as many as their records, not one rank among the ranks; ranks come first in order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Who {
    Rank(u32),
    /// The record's file, as the warnings name it.
    NoRank(String),
}

impl Who {
    /// Whose record `rec` (read from `path`) is.
    pub fn of(rec: &Value, path: &Path) -> Self {
        Self::new(rec["rank"].as_u64().and_then(|r| u32::try_from(r).ok()), path)
    }

    /// Whose record, of `rank` or of none, `path` is.
    pub fn new(rank: Option<u32>, path: &Path) -> Self {
        match rank {
            Some(rank) => Who::Rank(rank),
            None => Who::NoRank(path.display().to_string()),
        }
    }
}

/// "rank 3", or "the process without a rank of FILE".
impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Rank(r) => write!(f, "rank {r}"),
            Who::NoRank(file) => write!(f, "the process without a rank of {file}"),
        }
    }
}

/// What the ranks `held` hold, when they hold more than one value: `8 (ranks 0, 1 and 2) and 9
/// (rank 4)`, in the order of the lowest rank holding each.
pub fn disagree(held: impl IntoIterator<Item = (Who, String)>) -> Option<String> {
    let by = by_value(held);
    if by.len() < 2 {
        return None;
    }
    let each = by.iter().map(|(v, list)| format!("{v} ({})", ranks(list)));
    Some(first_few(each, by.len(), VALUES_SHOWN, ", "))
}

/// Each value the ranks `held` hold, with the ranks that hold it (in rank order), in the order of
/// the lowest rank holding each. Sorted once, then grouped: a job of 100,000 ranks may give as
/// many values (a reason that names its node), which a search per rank would take minutes over.
fn by_value(held: impl IntoIterator<Item = (Who, String)>) -> Vec<(String, Vec<Who>)> {
    let mut held: Vec<(String, Who)> = held.into_iter().map(|(rank, value)| (value, rank)).collect();
    held.sort_unstable();
    held.dedup();
    let mut by: Vec<(String, Vec<Who>)> = Vec::new();
    for (value, rank) in held {
        match by.last_mut() {
            Some((v, list)) if *v == value => list.push(rank),
            _ => by.push((value, vec![rank])),
        }
    }
    by.sort_unstable_by(|(va, la), (vb, lb)| (&la[0], va).cmp(&(&lb[0], vb)));
    by
}

/// `AAR_OUTPUT_RANKS` as a rank's record gives it, as [`disagree`] names it.
pub fn sample_text(sample: Option<&RankSet>) -> String {
    sample.map_or_else(|| "unset".into(), |s| clean_to(&s.to_string(), 120))
}

/// `AAR_OUTPUT_RANKS` as the records of `found` give it (`None`: unset, or no record found); or,
/// when they disagree, what each says.
pub fn output_ranks(found: &[(Who, Problems)]) -> Result<Option<RankSet>, String> {
    match disagree(found.iter().map(|(rank, p)| (rank.clone(), sample_text(p.output_ranks.as_ref())))) {
        Some(said) => Err(format!("AAR_OUTPUT_RANKS: {said}")),
        None => Ok(found.first().and_then(|(_, p)| p.output_ranks.clone())),
    }
}

/// The job's number of ranks and `AAR_OUTPUT_RANKS` as the records of `found` give them; or, when
/// they disagree, what each says. The number is `None` when a record gives none (a launcher run
/// inside a Slurm step leaves its rank 0 the step's number and the others none: the ranks are
/// then those found, as for iteration records).
pub fn job_size(found: &[(Who, Problems)]) -> Result<(Option<u32>, Option<RankSet>), String> {
    let nranks = disagree(found.iter().filter_map(|(rank, p)| Some((rank.clone(), p.nranks?.to_string()))))
        .map(|said| format!("the job's number of ranks: {said}"));
    match (nranks, output_ranks(found)) {
        (None, Ok(sample)) => Ok((found.iter().map(|(_, p)| p.nranks).reduce(|a, b| a.and(b)).flatten(), sample)),
        (Some(said), Ok(_)) | (None, Err(said)) => Err(said),
        (Some(n), Err(sample)) => Err(format!("{n}; and on {sample}")),
    }
}

/// The warning that the `records` of `what` (a job, an experiment) disagree on `said` (from
/// [`job_size`]).
pub fn sizes_disagree(what: &str, records: &str, said: &str) -> String {
    format!(
        "{what}: its {records} disagree on {said}. No job size is used: the ranks are those read, and none is \
         named missing. Records of another run of the same name, or an edited record, disagree so: report each \
         run's records alone"
    )
}

/// "rank 3", "ranks 3, 5 and 9" or "ranks 0, 1, 2, 3, 4, 5, 6, 7 and 12 more"; then the processes
/// without a rank, by their records: "the process without a rank of FILE".
fn ranks(list: &[Who]) -> String {
    let (mut numbers, mut files) = (Vec::new(), Vec::new());
    for who in list {
        match who {
            Who::Rank(r) => numbers.push(*r),
            Who::NoRank(file) => files.push(file.as_str()),
        }
    }
    let word = if numbers.len() == 1 { "rank" } else { "ranks" };
    let numbers = format!("{word} {}", first_few(&numbers, numbers.len(), RANKS_NAMED, ", "));
    let noun = if files.len() == 1 { "the process without a rank of" } else { "the processes without a rank of" };
    let named = format!("{noun} {}", first_few(&files, files.len(), NAMED, ", "));
    match (list.len() - files.len(), files.len()) {
        (0, 0) => String::new(),
        (_, 0) => numbers,
        (0, _) => named,
        _ => format!("{numbers} and {named}"),
    }
}

/// "rank 3's record", or a process without a rank's: its file.
fn record_of(who: &Who) -> String {
    match who {
        Who::Rank(r) => format!("rank {r}'s record"),
        Who::NoRank(file) => file.clone(),
    }
}

/// The warnings for one experiment: its name, its policies, and its ranks' iteration records;
/// and the iterations each rank with a summary record ended (it exited, and says so). A rank
/// without a summary record beside its iteration record (stopped before its exit) is not looked
/// at; one whose record cannot be read is named.
pub fn warnings(experiment: &str, policies: &[String], files: &[(Who, &Path)]) -> Health {
    let automatic = policies.iter().any(|p| is_automatic(p));
    // A rank's problems and what in its record could not be read, or why it was not read.
    type Read = Result<(Who, Problems, Option<String>), (Who, String)>;
    let read: Vec<Read> = files
        .par_iter()
        .filter_map(|(rank, path)| {
            let rank = rank.clone();
            let summary = summary_beside(path).filter(|s| std::fs::symlink_metadata(s).is_ok())?;
            Some(match read_summary(&summary) {
                Ok((rec, note)) => {
                    Ok((rank, problems(&rec, automatic), note.map(|n| format!("{}: {n}", summary.display()))))
                }
                Err(why) => {
                    let whose = match &rank {
                        Who::Rank(r) => format!("rank {r}'s"),
                        Who::NoRank(_) => "its process's".to_string(),
                    };
                    Err((rank, format!("{}: {why}: {whose} health is not checked", summary.display())))
                }
            })
        })
        .collect();
    let (found, unread): (Vec<_>, Vec<_>) = read.into_iter().partition(Result::is_ok);
    let (unreadable, mut out): (Vec<Who>, Vec<String>) = unread.into_iter().filter_map(Result::err).unzip();
    let found: Vec<(Who, Problems, Option<String>)> = found.into_iter().flatten().collect();
    out.extend(found.iter().filter_map(|(_, _, note)| note.clone()));
    let ended = found.iter().filter_map(|(rank, p, _)| Some((rank.clone(), p.ended?))).collect();
    let refused_begins =
        found.iter().filter_map(|(rank, p, _)| Some((rank.clone(), p.refused_begins.clone()?))).collect();
    let unwritten_at_exit =
        found.iter().filter_map(|(rank, p, _)| Some((rank.clone(), p.unwritten_at_exit?))).collect();
    let found: Vec<(Who, Problems)> = found.into_iter().map(|(rank, p, _)| (rank, p)).collect();
    let output_ranks = output_ranks(&found);
    out.extend(name_ranks(&format!("experiment \"{}\"", experiment.escape_debug()), found));
    Health { said: out, ended, refused_begins, unwritten_at_exit, unreadable, output_ranks }
}

/// Why a rank that wrote a summary record has no iteration record, as that record says: the rank
/// has no rows, so no time of its is in the experiment's times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoRows {
    /// Its iteration record is beside its summary record but was not given (its summary record
    /// was named alone, or a folder of summary records only was given).
    NotGiven,
    /// It ended no iteration (`ab.iterations` 0).
    NoIterationEnded,
    /// Every begin it made was refused while libaar.so was starting (`ab.refused_begins`).
    BeginsRefused,
    /// Its exit handler found the iteration record held, and its rows were never written
    /// (`ab.rows_unwritten_at_exit`).
    UnwrittenAtExit,
    /// It ended iterations but no iteration record was written (not created, or a failed write).
    NotWritten,
    /// Its record names an iteration record (`ab.iterations_file`) that is not beside it.
    FileMissing,
    /// Its iteration record beside it is a symbolic link to a file that does not exist.
    LinkToNothing,
    /// Its iteration record beside it is a loop of symbolic links: no file at its end.
    LinkLoop,
    /// Its record does not say (no `ab.iterations`: an older libaar.so), or could not be read.
    NotSaid,
}

impl NoRows {
    /// In a few words, for the note under the table.
    pub fn name(self) -> &'static str {
        match self {
            NoRows::NotGiven => "iteration record not given",
            NoRows::NoIterationEnded => "no iteration ended",
            NoRows::BeginsRefused => "every begin refused at start-up",
            NoRows::UnwrittenAtExit => "rows unwritten at exit",
            NoRows::NotWritten => "no iteration record written",
            NoRows::FileMissing => "iteration record moved or deleted",
            NoRows::LinkToNothing => "iteration record a link to nothing",
            NoRows::LinkLoop => "iteration record a loop of links",
            NoRows::NotSaid => "why not said",
        }
    }

    /// What it is, completing "ranks ... have a summary record but no iteration record: ..." (`one`:
    /// of one rank), `details` (each rank's: a message of the record, a file name, a link, why it
    /// was not read; in rank order) included, each rank's up to [`NAMED`] and how many more (each
    /// needs its own fix, or says its own cause); and the fix.
    fn said(self, one: bool, details: &[String]) -> (String, &'static str) {
        let detail = first_few(details.iter().map(|d| quoted(d)), details.len(), NAMED, "; ");
        let (their, they, records, s, does) =
            if one { ("its", "it", "record", "s", "does") } else { ("their", "they", "records", "", "do") };
        match self {
            NoRows::NotGiven => (
                format!(
                    "{their} iteration {records} {is} beside {their} summary {records} but {was} not given to aar \
                     report ({detail})",
                    is = if one { "is" } else { "are" },
                    was = if one { "was" } else { "were" },
                ),
                if one {
                    "Give it too, or the folder that holds it"
                } else {
                    "Give them too, or the folder that holds them"
                },
            ),
            NoRows::NoIterationEnded => (
                format!(
                    "{their} summary {records} count{s} no iteration ended (ab.iterations = 0): {they} never began one, \
                     or never ended one (under AAR_AB_BOUNDARY, called its collective fewer times than it takes)"
                ),
                "Mark the iterations on every rank, or choose as the boundary a collective every rank calls once per \
                 iteration",
            ),
            NoRows::BeginsRefused => (
                format!(
                    "every iteration {they} began was refused while libaar.so was starting (ab.refused_begins counts \
                     them all), so none has a row"
                ),
                "Begin the first iteration once libaar.so has started (the message in the records says how)",
            ),
            NoRows::UnwrittenAtExit => (
                format!(
                    "at exit another thread held {their} iteration record (inside fork(), or writing rows to a slow \
                     file system) for longer than libaar.so's exit handler waits, so {their} rows, still buffered, \
                     were never written (ab.rows_unwritten_at_exit)"
                ),
                "Let forks and the other threads' iteration calls finish before the program exits (join those \
                 threads before exit, or before MPI_Finalize)",
            ),
            NoRows::NotWritten => (
                match detail.is_empty() {
                    true => format!(
                        "{they} ended iterations (ab.iterations) but libaar.so wrote no iteration record, and the \
                         summary {records} {does} not say why"
                    ),
                    false => format!(
                        "{they} ended iterations (ab.iterations) but libaar.so wrote no iteration record ({their} \
                         summary {records} say{s}: {})",
                        first_few(details.iter().map(|d| format!("\"{}\"", quoted(d))), details.len(), NAMED, "; ")
                    ),
                },
                "Give AAR_OUTPUT_DIR room and write permission on every node the job runs on",
            ),
            NoRows::FileMissing => (
                format!(
                    "{their} summary {records} name{s} an iteration record (ab.iterations_file: {detail}) \
                     that is not beside it: moved or deleted"
                ),
                "Give the folder that holds it too",
            ),
            NoRows::LinkToNothing => (
                format!(
                    "{their} iteration {records} beside {their} summary {records} {is} a symbolic link to a file that \
                     does not exist ({detail})",
                    is = if one { "is" } else { "are" },
                ),
                "Point the link at the iteration record where it is now (ln -sfn FILE LINK), or give the record \
                 itself",
            ),
            NoRows::LinkLoop => (
                format!(
                    "{their} iteration {records} beside {their} summary {records} {is} a loop of symbolic links, with \
                     no file at {their} end ({detail})",
                    is = if one { "is" } else { "are" },
                ),
                "Point the link at the iteration record (ln -sfn FILE LINK), or give the record itself",
            ),
            NoRows::NotSaid => (
                match detail.is_empty() {
                    true => format!(
                        "{their} summary {records} {does} not say why (no ab.iterations: a record of an older libaar.so)"
                    ),
                    false => format!("{their} summary {records} {does} not say why ({detail})"),
                },
                "",
            ),
        }
    }
}

/// Why the rank of summary record `rec` has no iteration record ([`NoRows`]), and what of the
/// record says more: the first message of libaar.so's about the iteration record, or its name.
fn no_rows(rec: &Value) -> (NoRows, Option<String>) {
    let n = |p: &str| rec.pointer(p).and_then(Value::as_u64);
    let refused: u64 = rec
        .pointer("/ab/refused_begins")
        .and_then(Value::as_object)
        .map_or(0, |o| o.values().filter_map(Value::as_u64).fold(0, u64::saturating_add));
    let file = rec.pointer("/ab/iterations_file").and_then(Value::as_str);
    match n("/ab/iterations") {
        None => (NoRows::NotSaid, None),
        Some(0) => (NoRows::NoIterationEnded, None),
        Some(_) if file.is_some() => (NoRows::FileMissing, file.map(String::from)),
        Some(_) if n("/ab/rows_unwritten_at_exit").is_some_and(|n| n > 0) => (NoRows::UnwrittenAtExit, None),
        Some(ended) if ended <= refused => (NoRows::BeginsRefused, None),
        Some(_) => {
            let said = rec["messages"].as_array().into_iter().flatten().filter_map(Value::as_str);
            (NoRows::NotWritten, said.into_iter().find(|m| m.contains("iteration record")).map(String::from))
        }
    }
}

/// Whose summary record `rec` is, as its fields say (`None`: it gives no pid).
pub fn identity(rec: &Value) -> Option<Identity> {
    let number = |key: &str| rec[key].as_u64().and_then(|n| u32::try_from(n).ok());
    let job =
        rec["job_id"].as_str().map(|job| aar_record::run_name(job, rec["step"].as_str(), rec["restart"].as_u64()));
    Some(Identity::new(job.as_deref(), number("rank"), number("pid")?))
}

/// Whose summary record `path` is: as its name says, or (a record renamed) as its fields do.
pub fn identity_of(path: &Path) -> Option<Identity> {
    let named = path.file_name()?.to_str().and_then(|n| n.parse().ok());
    named.or_else(|| identity(&read_summary(path).ok()?.0))
}

/// The iteration record beside summary record `summary` (there or not): the one of the same
/// [`Identity`], its name as libaar.so gives it (a renamed summary record's included).
pub fn iterations_beside(summary: &Path) -> Option<PathBuf> {
    Some(summary.with_file_name(identity_of(summary)?.iterations_file_name()))
}

/// "COPY: a copy of the summary record FIRST (...): counted once, as FIRST" for two records of
/// one process ([`Identity`]), the one the report counts, `first`, and the other; and, when their
/// contents differ, says so.
pub fn copy_said(copy: &Path, first: &Path, id: &Identity) -> String {
    let rank = id.rank.map_or_else(|| "no rank".to_string(), |r| format!("rank {r}"));
    // The same fields and values, however laid out (a copy passed through jq).
    let read = |p: &Path| std::fs::read(p).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let same = read(copy).is_some_and(|c| Some(c) == read(first));
    let (copy, first) = (copy.display(), first.display());
    match same {
        true => format!(
            "{copy}: a copy of the summary record {first} (the same job, {rank} and pid {}): counted once, as {first}",
            id.pid
        ),
        false => format!(
            "{copy}: a summary record of the same process as {first} (the same job, {rank} and pid {}) but with \
             other contents (one was edited, or copied while libaar.so was writing it): counted once, as {first}; \
             keep the right one and remove the other",
            id.pid
        ),
    }
}

/// Whether summary record `rec` is a fork child's: it writes no rows, and its rank's rows are its
/// parent's.
pub fn fork_child(rec: &Value) -> bool {
    rec["fork_child"] == Value::Bool(true)
}

/// The ranks of experiment `experiment` (`what` names it in warnings) that wrote a summary record
/// among `summaries` but none of whose iteration records were read (`read`: the ranks whose were):
/// each with why ([`NoRows`]: its iteration record is beside it but not among `given`, the
/// iteration records found, as [`std::fs::canonicalize`] names them; else as its record says), and
/// that record; and one warning per cause naming them, that says the comparison leaves them out. A
/// fork child's record (it writes no rows), a rank beyond `nranks`, and a record whose iteration
/// record beside it was given (and said, if it was not read) are not such ranks.
pub fn without_rows(
    what: &str,
    experiment: &str,
    nranks: Option<u32>,
    read: &BTreeSet<u32>,
    summaries: &[PathBuf],
    given: &HashSet<PathBuf>,
) -> (Vec<(u32, NoRows, PathBuf)>, Vec<String>) {
    let job = aar_record::job_in_name(experiment);
    // The experiment's, by the record's name or (renamed) its fields: a longer job (another
    // step's) is not its.
    let rank_of = |id: &Identity| -> Option<u32> {
        id.rank.filter(|r| id.job == job && !read.contains(r) && nranks.is_none_or(|n| *r < n))
    };
    let mut found: Vec<(u32, NoRows, Option<String>, &PathBuf)> = summaries
        .par_iter()
        .filter_map(|p| {
            let id = identity_of(p)?;
            let beside = p.with_file_name(id.iterations_file_name());
            Some((rank_of(&id)?, p, Some(beside).filter(|b| std::fs::symlink_metadata(b).is_ok())))
        })
        .filter_map(|(rank, p, beside)| match beside {
            // Given (and said if not read), or not a file to give (a FIFO: said by the walk).
            Some(beside)
                if given.contains(&std::fs::canonicalize(&beside).unwrap_or_else(|_| beside.clone()))
                    || std::fs::metadata(&beside).is_ok_and(|m| !m.is_file()) =>
            {
                None
            }
            Some(beside) => match std::fs::metadata(&beside) {
                Ok(_) => Some((rank, NoRows::NotGiven, Some(beside.display().to_string()), p)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::read_link(&beside) {
                    Ok(target) => Some((
                        rank,
                        NoRows::LinkToNothing,
                        Some(format!("{}, a link to {}", beside.display(), target.display())),
                        p,
                    )),
                    Err(_) => None,
                },
                Err(e) if super::is_loop(&e) => Some((rank, NoRows::LinkLoop, Some(super::links_followed(&beside)), p)),
                Err(_) => None,
            },
            None => match read_summary(p) {
                Ok((rec, _)) if fork_child(&rec) => None,
                Ok((rec, _)) => {
                    let (why, detail) = no_rows(&rec);
                    Some((rank, why, detail, p))
                }
                Err(e) => Some((rank, NoRows::NotSaid, Some(format!("{}: {e}", p.display())), p)),
            },
        })
        .collect();
    found.sort_by_key(|(rank, why, _, _)| (*rank, *why));
    found.dedup_by_key(|(rank, _, _, _)| *rank);
    let mut causes: BTreeMap<NoRows, (Vec<u32>, Vec<String>)> = BTreeMap::new();
    for (rank, why, detail, _) in &found {
        let (ranks, details) = causes.entry(*why).or_default();
        ranks.push(*rank);
        details.extend(detail.clone());
    }
    let said = causes
        .into_iter()
        .map(|(why, (ranks, details))| {
            let (cause, fix) = why.said(ranks.len() == 1, &details);
            let fix = if fix.is_empty() { String::new() } else { format!(". {fix}") };
            format!(
                "{what}: {} {} a summary record but no iteration record{}: {cause}. The tables compare the other \
                 ranks' iterations only (an iteration's time is the slowest of the ranks with rows): a slower rank \
                 among these is not seen{fix}",
                rank_list(&ranks),
                if ranks.len() == 1 { "has" } else { "have" },
                if matches!(why, NoRows::NotGiven | NoRows::LinkToNothing | NoRows::LinkLoop) { " read" } else { "" },
            )
        })
        .collect();
    (found.into_iter().map(|(rank, why, _, p)| (rank, why, p.clone())).collect(), said)
}

/// Ranks as the fewest ranges, as `AAR_OUTPUT_RANKS` takes them: "rank 3", "ranks 3,7:9 (4 ranks)"
/// (a list of scattered ranks cut short; the count says how many).
pub fn rank_list(ranks: &[u32]) -> String {
    match ranks {
        [one] => format!("rank {one}"),
        _ => format!(
            "ranks {} ({})",
            clean_to(&ranks.iter().copied().collect::<RankSet>().to_string(), 200),
            aar_record::count(ranks.len() as u64, "rank", "ranks")
        ),
    }
}

/// What the summary records beside an experiment's iteration records say.
pub struct Health {
    /// The warnings.
    pub said: Vec<String>,
    /// The iterations each rank with a readable record ended.
    pub ended: Vec<(Who, u64)>,
    /// The begins each rank with a readable record of a libaar.so that counts them had refused
    /// ([`Problems::refused_begins`]).
    pub refused_begins: Vec<(Who, Vec<(String, u64)>)>,
    /// The rows each rank's exit handler could not write ([`Problems::unwritten_at_exit`]).
    pub unwritten_at_exit: Vec<(Who, u64)>,
    /// The ranks whose summary record is there but could not be read (said in `said`).
    pub unreadable: Vec<Who>,
    /// `AAR_OUTPUT_RANKS` as the ranks with a readable summary record took it (`None`: unset, or
    /// no such record), or what each says when they disagree ([`output_ranks`]).
    pub output_ranks: Result<Option<RankSet>, String>,
}

/// One warning per kind of problem found in the ranks' records of `what` (an experiment, a job),
/// naming the ranks.
pub fn name_ranks(what: &str, mut found: Vec<(Who, Problems)>) -> Vec<String> {
    found.sort_by(|(a, _), (b, _)| a.cmp(b));
    let looked = found.len();
    let mut out = Vec::new();
    // Of ranks, or of processes when some knew no rank.
    let whom = if found.iter().all(|(who, _)| matches!(who, Who::Rank(_))) { "rank" } else { "process" };
    let of_and = |list: &[Who], more: &str| match looked {
        1 => format!("{} (the only {whom} with a summary record{more})", ranks(list)),
        _ => format!(
            "{} ({} of the {looked} {} with a summary record{more})",
            ranks(list),
            list.len(),
            if whom == "rank" { "ranks" } else { "processes" }
        ),
    };
    let of = |list: &[Who]| of_and(list, "");

    let errors: Vec<Who> = found.iter().filter(|(_, p)| p.internal_errors > 0).map(|(r, _)| r.clone()).collect();
    if !errors.is_empty() {
        let total = found.iter().map(|(_, p)| p.internal_errors).fold(0, u64::saturating_add);
        out.push(format!(
            "{what}: libaar.so caught {} on {}: each call was still forwarded, \
             some without the policy's routing; the records' messages say where (a bug in libaar.so: please \
             report it with a record)",
            aar_record::count(total, "internal error", "internal errors"),
            of(&errors)
        ));
    }
    // The ranks with a problem that has a reason, and each reason their records give with the ranks
    // that gave it (each may need its own fix): "on ranks ... (...; ranks 0, 1 and 2: why; and rank
    // 5: another)", the first few; one reason said once ("their records: why").
    let with_reason = |why: fn(&Problems) -> Option<&String>| {
        let by = by_value(found.iter().filter_map(|(r, p)| Some((r.clone(), why(p)?.clone()))));
        let mut list: Vec<Who> = by.iter().flat_map(|(_, list)| list.iter().cloned()).collect();
        list.sort_unstable();
        let said = |why: &str, one: bool| match (why, one) {
            ("", true) => "its record does not say why".to_string(),
            ("", false) => "their records do not say why".to_string(),
            (why, _) => why.to_string(),
        };
        let reasons = match by.as_slice() {
            [] => return None,
            [(why, _)] if why.is_empty() => said(why, list.len() == 1),
            [(why, _)] if list.len() == 1 => format!("{}: {why}", record_of(&list[0])),
            [(why, _)] => format!("their records: {why}"),
            _ => first_few(
                by.iter().map(|(why, list)| format!("{}: {}", ranks(list), said(why, list.len() == 1))),
                by.len(),
                NAMED,
                "; ",
            ),
        };
        Some(of_and(&list, &format!("; {reasons}")))
    };
    if let Some(on) = with_reason(|p| p.counters.as_ref()) {
        out.push(format!(
            "{what}: the NIC counters could not be read on {on}: there the automatic policies routed \
             in a fixed mode, so their rows are not the policies'; check AAR_PAPI_EVENTS and PAPI with aar doctor \
             on such a node"
        ));
    }
    if let Some(on) = with_reason(|p| p.dmapp.as_ref()) {
        out.push(format!(
            "{what}: DMAPP was not steered on {on}: from then on their DMAPP traffic kept the \
             application's routing under every policy; build aar against the site's dmapp.h \
             (AAR_DMAPP_H=/path/to/dmapp.h) or set AAR_DMAPP_ROUTING to its routing table"
        ));
    }
    let undecided: Vec<(Who, (u64, u64))> = found.iter().filter_map(|(r, p)| Some((r.clone(), p.undecided?))).collect();
    if !undecided.is_empty() {
        let list: Vec<Who> = undecided.iter().map(|(r, _)| r.clone()).collect();
        let worst = undecided.iter().map(|(_, (u, c))| *u as f64 / *c as f64).fold(0.0, f64::max);
        out.push(format!(
            "{what}: on {} more than {:.0} % of the messages past the threshold went out undecided \
             (up to {:.0} %): several threads posted at once and found the decider taken, so those messages used \
             the mode of a message below the threshold",
            of(&list),
            UNDECIDED_SHARE * 100.0,
            worst * 100.0
        ));
    }
    let failing: Vec<(Who, (u64, u64))> =
        found.iter().filter_map(|(r, p)| Some((r.clone(), p.failed_reads?))).collect();
    if !failing.is_empty() {
        let list: Vec<Who> = failing.iter().map(|(r, _)| r.clone()).collect();
        let worst = failing.iter().map(|(_, (f, t))| *f as f64 / *t as f64).fold(0.0, f64::max);
        out.push(format!(
            "{what}: on {} more than {:.0} % of the counter reads failed (up to {:.0} %) and were tried again at \
             the next decision: those ranks decided from fewer windows; check PAPI on such a node with aar doctor",
            of(&list),
            FAILED_READ_SHARE * 100.0,
            worst * 100.0
        ));
    }
    let capped: Vec<(Who, u64)> = found.iter().filter_map(|(r, p)| Some((r.clone(), p.rows_capped?))).collect();
    if let Some(most) = capped.iter().map(|(_, ended)| *ended).max() {
        let list: Vec<Who> = capped.iter().map(|(r, _)| r.clone()).collect();
        let (records, hold) = if list.len() == 1 { ("record", "holds its") } else { ("records", "hold their") };
        out.push(format!(
            "{what}: the iteration {records} of {} {hold} first {} iterations of up to {most} (libaar.so writes no \
             more rows per process): what follows compares those",
            of(&list),
            aar_record::MAX_ROWS
        ));
    }
    out.extend(unprinted(what, &found, of_and));
    out
}

/// Warnings other ranks kept that rank 0 did not (a full /dev/shm on their node, a setting only
/// their environment had): libaar.so prints warnings from rank 0 only, so no one saw these. Said
/// only when rank 0's record was read; those the kinds above cover (counters, DMAPP, internal
/// errors) are left out. A process without a rank prints its own, as rank 0 does.
fn unprinted(what: &str, found: &[(Who, Problems)], of_and: impl Fn(&[Who], &str) -> String) -> Vec<String> {
    let Some((_, zero)) = found.iter().find(|(rank, _)| *rank == Who::Rank(0)) else { return Vec::new() };
    let printed: BTreeSet<&str> = zero.messages.iter().map(String::as_str).collect();
    let mut unseen: BTreeMap<&str, BTreeSet<Who>> = BTreeMap::new();
    for (rank, p) in found.iter().filter(|(rank, _)| matches!(rank, Who::Rank(r) if *r != 0)) {
        let said = |why: &Option<String>| why.as_deref().is_some_and(|w| !w.is_empty());
        let covered = |m: &str| {
            m.starts_with("internal error")
                || [&p.counters, &p.dmapp].into_iter().any(|why| said(why) && m.contains(why.as_deref().unwrap_or("")))
        };
        for m in p.messages.iter().map(String::as_str).filter(|m| !printed.contains(m) && !covered(m)) {
            unseen.entry(m).or_default().insert(rank.clone());
        }
    }
    let mut out: Vec<String> = unseen
        .iter()
        .take(UNPRINTED_SHOWN)
        .map(|(m, list)| {
            let list: Vec<Who> = list.iter().cloned().collect();
            format!(
                "{what}: {} kept a warning that rank 0 did not print (only rank 0 prints them): {m}",
                of_and(&list, "")
            )
        })
        .collect();
    if unseen.len() > UNPRINTED_SHOWN {
        out.push(format!(
            "{what}: and {} more warnings kept by other ranks than rank 0, in their summary records (\"messages\")",
            unseen.len() - UNPRINTED_SHOWN
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_name_a_few_and_count_the_rest() {
        let of = |list: &[u32]| ranks(&list.iter().map(|&r| Who::Rank(r)).collect::<Vec<_>>());
        assert_eq!(of(&[4]), "rank 4");
        assert_eq!(of(&[1, 2, 3]), "ranks 1, 2 and 3");
        assert_eq!(of(&(0..20).collect::<Vec<_>>()), "ranks 0, 1, 2, 3, 4, 5, 6, 7 and 12 more");
        let none = |f: &str| Who::NoRank(f.into());
        assert_eq!(ranks(&[none("a.json")]), "the process without a rank of a.json");
        assert_eq!(
            ranks(&[Who::Rank(1), none("a.json"), none("b.json")]),
            "rank 1 and the processes without a rank of a.json and b.json"
        );
    }

    #[test]
    fn values_ranks_disagree_on_are_named_by_their_lowest_rank_a_few_and_counted_after() {
        let held = |pairs: &[(u32, &str)]| disagree(pairs.iter().map(|&(r, v)| (Who::Rank(r), v.to_string())));
        assert_eq!(held(&[(0, "8"), (1, "8"), (2, "8")]), None, "one value is no disagreement");
        assert_eq!(held(&[(3, "9"), (0, "8"), (1, "8")]), Some("8 (ranks 0 and 1) and 9 (rank 3)".to_string()));
        // Ordered by the lowest rank holding each, not by value; the fourth and fifth counted.
        let five = [(9, "a"), (1, "e"), (2, "d"), (3, "c"), (4, "b"), (0, "e"), (5, "a")];
        assert_eq!(held(&five), Some("e (ranks 0 and 1), d (rank 2), c (rank 3) and 2 more".to_string()), "{five:?}");
    }

    #[test]
    fn counters_that_stepped_aside_and_came_back_still_count_as_not_read() {
        let rec = serde_json::json!({
            "counters": { "backend": "papi", "read_failures": 0, "unavailable_because": null, "gave_way": 2 }
        });
        let why = problems(&rec, true).counters.unwrap();
        assert_eq!(
            why,
            "the counters stepped aside 2 times for the program's own PAPI measurement, and counted again after"
        );
        assert_eq!(problems(&rec, false).counters, None, "no automatic policy ran: nothing to say");
        let once = serde_json::json!({ "counters": { "backend": "papi", "read_failures": 0, "gave_way": 1 } });
        assert!(problems(&once, true).counters.unwrap().contains("stepped aside 1 time for"));
        let clean = serde_json::json!({ "counters": { "backend": "papi", "read_failures": 0, "gave_way": 0 } });
        assert_eq!(problems(&clean, true).counters, None);
        // Reads failed and were tried again: the counters still counted; named only when that
        // is more than 1 % of the reads.
        let retried = |failed: u64, reads: u64| {
            let rec = serde_json::json!({
                "counters": { "backend": "papi", "reads": reads, "read_failures": failed, "unavailable_because": null }
            });
            problems(&rec, true)
        };
        assert_eq!(retried(20, 980).counters, None);
        assert_eq!(retried(20, 980).failed_reads, Some((20, 1000)));
        assert_eq!(retried(10, 990).failed_reads, None, "10 in 1,000 is not more than 1 %");
        let given_up = serde_json::json!({
            "counters": { "backend": "papi", "reads": 10, "read_failures": 3, "unavailable_because": "PAPI_read failed" }
        });
        assert_eq!(problems(&given_up, true).failed_reads, None, "said as counters not read");
    }

    #[test]
    fn counts_near_2_to_the_64_give_shares_of_at_most_all() {
        let rec = serde_json::json!({
            "counters": { "backend": "papi", "reads": 3, "read_failures": u64::MAX },
            "decider": { "undecided_crossings": u64::MAX }, "engine": { "decisions": 5 },
        });
        let p = problems(&rec, true);
        assert_eq!(p.undecided, Some((u64::MAX, u64::MAX)), "not wrapped to 4 crossings");
        assert_eq!(p.failed_reads, Some((u64::MAX, u64::MAX)), "not wrapped to 2 reads tried");
        let errors = serde_json::json!({ "internal_errors": u64::MAX });
        let found = vec![(Who::Rank(0), problems(&errors, false)), (Who::Rank(1), problems(&errors, false))];
        let said = name_ranks("job \"7\"", found);
        assert!(
            said[0].starts_with("job \"7\": libaar.so caught 18446744073709551615 internal errors on ranks 0 and 1")
        );
    }

    #[test]
    fn a_summary_record_sits_beside_its_iteration_record() {
        let p = Path::new("/o/aar.42.0.7.iterations.jsonl");
        assert_eq!(summary_beside(p), Some(PathBuf::from("/o/aar.42.0.7.json")));
        assert_eq!(summary_beside(Path::new("/o/rank.jsonl")), None);
    }
}
