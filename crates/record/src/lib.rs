//! One record format for real jobs and for the simulator, so `aar report` reads both with the
//! same code.
//!
//! Each rank writes one file of JSON Lines: a [`Header`] on the first line, then one
//! [`Iteration`] per line, appended as iterations end. Lines are complete JSON objects, so a file
//! cut short (a job killed at its time limit) still yields every row before the cut, and a
//! reader needs memory for one line at a time. The format is versioned by the header's `format`
//! field ([`FORMAT`]); a reader refuses other formats with a message that names them.

use serde::{Deserialize, Serialize};
use std::io::BufRead;
pub mod folder;
pub mod quotes;
pub mod ranks;
pub mod text_file;

/// The format (and version) of an iteration record.
pub const FORMAT: &str = "aar-iterations/1";

/// Where a record comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A process running with libaar.so preloaded.
    Job,
    /// A rank of `aar sim`.
    Sim,
}

impl Source {
    /// The name the record gives it (`job`, `sim`).
    pub fn name(self) -> &'static str {
        match self {
            Source::Job => "job",
            Source::Sim => "sim",
        }
    }
}

/// What the iteration times are measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// CLOCK_MONOTONIC of the rank's node, in ns.
    Monotonic,
    /// The simulator's clock, in ns.
    Simulated,
}

impl Clock {
    /// The name the record gives it (`monotonic`, `simulated`).
    pub fn name(self) -> &'static str {
        match self {
            Clock::Monotonic => "monotonic",
            Clock::Simulated => "simulated",
        }
    }
}

/// First line of a record: who wrote it and how its rows are to be read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    pub source: Source,
    /// Ranks with the same experiment belong to one run and are compared iteration by
    /// iteration: the job and step id for jobs, the scenario for the simulator.
    pub experiment: String,
    /// The writer's rank; `null` for a process that knew none (outside a job, a serial program:
    /// `aar.nojob.norank.<pid>.iterations.jsonl`), which is no rank of a run. Records of a
    /// libaar.so older than this wrote 0 for it, and named them `norank` as now: `aar report` reads
    /// a job's rank 0 in a record so named as no rank.
    #[serde(default)]
    pub rank: Option<u32>,
    /// Ranks in the run, when known (`aar report` reads 0, which no writer writes, as not known).
    #[serde(default)]
    pub nranks: Option<u32>,
    /// The ranks that write records (`AAR_OUTPUT_RANKS`) when only some do: the others' records
    /// are not missing. `null` (and absent, in records written before it was added): every rank
    /// writes, or the writer has no such setting (the simulator). An optional field read as
    /// absent when missing, so [`FORMAT`] keeps its version: records of either kind read alike.
    #[serde(default)]
    pub output_ranks: Option<ranks::RankSet>,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub pid: Option<u32>,
    pub clock: Clock,
    /// The policies alternated, in schedule order (one entry when there is no A/B experiment).
    pub policies: Vec<String>,
    /// How iterations map to policies: `round-robin`, `shuffled:SEED`, or `single`.
    pub order: String,
    /// What marks iterations: `markers` (the C API), `MPI_Barrier:N` and the like, or `sim`.
    pub boundary: String,
    /// Names of the per-routing-mode columns of every row's `messages` and `bytes`.
    pub modes: Vec<String>,
    /// Version of the program that wrote the record.
    pub version: String,
    #[serde(default)]
    pub git_revision: Option<String>,
    #[serde(default)]
    pub command_line: Vec<String>,
}

/// One iteration of one rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// Iteration index: the same on every rank of the experiment for the same iteration.
    pub i: u64,
    /// Policy in force during the iteration (one of the header's `policies`).
    pub policy: String,
    /// A label the application or the simulator gave the iteration, e.g. `isolated` or
    /// `congested` in GPCNeT-style runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Messages per routing mode, in the order of the header's `modes`.
    pub messages: Vec<u64>,
    /// Bytes per routing mode, in the order of the header's `modes`.
    pub bytes: Vec<u64>,
    /// Threshold crossings decided during the iteration.
    pub decisions: u64,
    /// Switches between the two sides of the decision during the iteration.
    pub switches: u64,
    /// Mean request–response latency (µs) of the counter windows read during the iteration.
    #[serde(default)]
    pub latency_us: Option<f64>,
    /// Mean stall ratio (stalled cycles per request flit) of those windows.
    #[serde(default)]
    pub stall_ratio: Option<f64>,
}

impl Iteration {
    /// Duration in ns (0 for a row whose end precedes its start).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Keep file names to characters that are safe in any folder and in a shell.
fn safe(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}

/// What a run without a job id is called, in its files' names and its iteration records.
pub const NO_JOB: &str = "nojob";

/// Most bytes of the job in a file's name: with `aar.`, the rank, the pid and the longest ending
/// (`.iterations.jsonl.partial`), a name stays well under what a file name may be (NAME_MAX, 255
/// bytes), whatever the batch system or the user put in the job id.
pub const MAX_JOB_IN_NAME: usize = 128;

/// The job (with its step) as files' names carry it: every character but ASCII letters, digits,
/// `.` and `-` made `_`, and a job longer than
/// [`MAX_JOB_IN_NAME`] cut, with a hash of the whole id (FNV-1a, 16 hex digits) in place of its
/// end, so that every rank of a job has the same one and jobs whose ids differ past the cut do not.
/// The records' names and the node segment's (libaar.so's shared reading) use it.
pub fn job_in_name(job: &str) -> String {
    let name = safe(job);
    if name.len() <= MAX_JOB_IN_NAME {
        return name;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in job.bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    // `safe` leaves ASCII only: any byte is a character's end.
    format!("{}-{hash:016x}", &name[..MAX_JOB_IN_NAME - 17])
}

/// The run's name as libaar.so gives it (its iteration records' `experiment`, its files' names):
/// the job id with its step (`555.1`), then `.restart<N>` in a job Slurm started again (`restart`
/// 0 is none).
pub fn run_name(job: &str, step: Option<&str>, restart: Option<u64>) -> String {
    let run = step.map_or_else(|| job.to_string(), |step| format!("{job}.{step}"));
    match restart.filter(|&n| n > 0) {
        Some(n) => format!("{run}.restart{n}"),
        None => run,
    }
}

/// Whose a per-rank file is: the run (the job with its step, e.g. `555.1`: steps of one job may
/// write into one folder, and their ranks may have the same pid, as in a PID namespace per step),
/// the rank and the pid, so that ranks and forked children never collide. The files' names carry
/// it (`aar.<job>.<rank>.<pid>`, its `FromStr` reads it back), and a summary record's
/// fields say it (`job_id`, `step`, `restart`, `rank`, `pid`), so a renamed record is still known.
/// A process writes one summary record: two with the same identity are copies of one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity {
    /// The run as files' names carry it ([`job_in_name`]; [`NO_JOB`] without a job id).
    pub job: String,
    /// `None`: a process that knew no rank (`norank` in the names).
    pub rank: Option<u32>,
    pub pid: u32,
}

impl Identity {
    /// `job`: the run's name ([`run_name`]), `None` without a job id.
    pub fn new(job: Option<&str>, rank: Option<u32>, pid: u32) -> Self {
        Self { job: job_in_name(job.unwrap_or(NO_JOB)), rank, pid }
    }

    /// The name of its summary record.
    pub fn summary_file_name(&self) -> String {
        format!("{self}{SUMMARY_SUFFIX}")
    }

    /// The name of its iteration record.
    pub fn iterations_file_name(&self) -> String {
        format!("{self}{ITERATIONS_SUFFIX}")
    }
}

/// The base name of its files: `aar.<job>.<rank>.<pid>` (`norank` for no rank).
impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.rank {
            Some(rank) => write!(f, "aar.{}.{rank}.{}", self.job, self.pid),
            None => write!(f, "aar.{}.norank.{}", self.job, self.pid),
        }
    }
}

/// Read from a file's name: a base name, or a summary or iteration record's name (the job is
/// what comes between `aar.` and the rank: it may hold dots, a step's).
impl std::str::FromStr for Identity {
    type Err = ();
    fn from_str(name: &str) -> Result<Self, ()> {
        let base = name.strip_suffix(ITERATIONS_SUFFIX).or_else(|| name.strip_suffix(SUMMARY_SUFFIX)).unwrap_or(name);
        let (rest, pid) = base.strip_prefix("aar.").and_then(|b| b.rsplit_once('.')).ok_or(())?;
        let (job, rank) = rest.rsplit_once('.').ok_or(())?;
        let rank = match rank {
            "norank" => None,
            r => Some(r.parse().map_err(|_| ())?),
        };
        if job.is_empty() || job_in_name(job) != job {
            return Err(());
        }
        Ok(Self { job: job.to_string(), rank, pid: pid.parse().map_err(|_| ())? })
    }
}

/// Base name of a run's per-rank files ([`Identity`]).
pub fn base_name(job: Option<&str>, rank: Option<u32>, pid: u32) -> String {
    Identity::new(job, rank, pid).to_string()
}

/// The per-rank summary record's format, its name and version: the version is bumped when a field
/// changes meaning, so that a reader does not take a newer record for one it knows.
pub const SUMMARY_FORMAT: &str = "aar-record/2";

/// The per-rank summary record (`aar-record`, written at exit; [`Identity::summary_file_name`]).
pub fn summary_file_name(job: Option<&str>, rank: Option<u32>, pid: u32) -> String {
    Identity::new(job, rank, pid).summary_file_name()
}

/// How summary records end (after [`base_name`]).
pub const SUMMARY_SUFFIX: &str = ".json";

/// The per-rank iteration record ([`FORMAT`], streamed while the job runs;
/// [`Identity::iterations_file_name`]).
pub fn iterations_file_name(job: Option<&str>, rank: Option<u32>, pid: u32) -> String {
    Identity::new(job, rank, pid).iterations_file_name()
}

/// How iteration records are recognised in a folder.
pub const ITERATIONS_SUFFIX: &str = ".iterations.jsonl";

/// Why a record holds NUL bytes where text was to be.
pub const LOST_DATA: &str =
    "the file grew but its data never reached the disk, as when the node writing it crashed or lost power";

/// What is wrong with a record file or one of its lines; the text completes a sentence whose
/// subject is the file or the line (`aar: FILE: line 3: is cut short ...`).
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error("is empty")]
    Empty,
    #[error("cannot be read ({0})")]
    Unreadable(std::io::Error),
    #[error("has a line longer than {MAX_LINE} bytes: not an aar record")]
    LineTooLong,
    /// A run of NUL bytes where text was to be: the file's length was kept where its data never
    /// reached the disk, as a file system leaves a file being written when its node crashes or
    /// loses power. Not a row; the lines after it are read.
    #[error("is {}, not text: {LOST_DATA}", count(*.0, "NUL byte", "NUL bytes"))]
    Zeros(u64),
    #[error("does not start with a JSON header line: not an {FORMAT} record")]
    NoJsonHeader,
    #[error("is in format \"{}\", which this aar does not read (it reads {FORMAT} only)", .0.escape_debug())]
    OtherFormat(String),
    #[error("has no \"format\" in its first line: not an {FORMAT} record")]
    NoFormat,
    #[error("has a bad header ({0})")]
    BadHeader(serde_json::Error),
    /// A header whose one field cannot be read (a rank that is not a whole number): named.
    #[error("has a bad header (its \"{}\" cannot be read: {error})", .field.escape_debug())]
    HeaderField { field: String, error: serde_json::Error },
    #[error("has {found} mode columns where the header names {expected}")]
    ModeColumns { found: usize, expected: usize },
    #[error("ends before it starts")]
    EndsBeforeStart,
    /// The last line, without its newline: the writer was stopped in the middle of it, or could
    /// write no more of it (a full disk, the file size limit). Of a file, when that line is its
    /// header.
    #[error("is cut short (its writer was stopped, or could write no more: a full disk, the file size limit)")]
    CutShort,
    /// A line cut short by a run of NUL bytes ([`Fault::Zeros`]) in place of its rest: what a
    /// crash or a loss of power leaves of a line whose data never all reached the disk. The
    /// NUL bytes are part of it (not a line of their own); the lines after them are read.
    #[error("is cut short, and {} follow it in place of the rest: {LOST_DATA}", count(*.0, "NUL byte", "NUL bytes"))]
    CutByZeros(u64),
    #[error("is not an iteration row ({0})")]
    NotARow(serde_json::Error),
    /// A row whose one field has the wrong type (a string where a number goes): named.
    #[error("has a field \"{}\" of the wrong type ({error})", .field.escape_debug())]
    FieldType { field: String, error: serde_json::Error },
}

impl Fault {
    /// Whether nothing after it can be read: the input failed, or a line too long to hold means
    /// the file is not a record.
    pub fn ends_reading(&self) -> bool {
        matches!(self, Fault::Unreadable(_) | Fault::LineTooLong)
    }
}

/// A line of a record that could not be used, and why.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {fault}")]
pub struct Problem {
    /// 1-based line number.
    pub line: u64,
    pub fault: Fault,
}

/// Rows a job's process writes at most (about 20 MB): libaar.so writes no row after the
/// iteration of index `MAX_ROWS - 1`, and the summary record's `ab.iterations` still counts every
/// iteration, so a reader can tell a record that stopped there.
pub const MAX_ROWS: u64 = 100_000;

/// Why libaar.so refused an `aar_iteration_begin` that still took its index (so that the rank
/// numbers its iterations as the others do): such a begin has no row. A summary record counts them
/// per cause in `ab.refused_begins` (absent from records of a libaar.so older than the count), so
/// that `aar report` can say why a rank's rows begin later than the others'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusedBegin {
    /// Called from inside libaar.so's start-up, on the thread running it (a callback of the PAPI
    /// library's loading, say), which no call can wait for.
    InsideStartUp,
    /// Called while another thread was starting libaar.so, for longer than a call waits for it
    /// (loading PAPI, reading the job's files).
    StartUpElsewhere,
}

impl RefusedBegin {
    pub const ALL: [RefusedBegin; 2] = [RefusedBegin::InsideStartUp, RefusedBegin::StartUpElsewhere];

    /// The name `ab.refused_begins` counts it under.
    pub fn name(self) -> &'static str {
        match self {
            RefusedBegin::InsideStartUp => "inside_start_up",
            RefusedBegin::StartUpElsewhere => "start_up_elsewhere",
        }
    }

    /// Its place in [`Self::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::str::FromStr for RefusedBegin {
    type Err = ();
    fn from_str(name: &str) -> Result<Self, ()> {
        Self::ALL.into_iter().find(|r| r.name() == name).ok_or(())
    }
}

/// Iterations shorter than this (a millisecond) on a node's clock show little of a routing
/// policy's effect: the clock's readings and the iteration markers' own work are a share of each
/// that varies from one to the next. libaar.so warns of them while a job runs, `aar report` when
/// it reads such a job's records; both end with [`SHORT_ITERATION_FIX`].
pub const SHORT_ITERATION_NS: u64 = 1_000_000;

/// What is wrong with iterations shorter than [`SHORT_ITERATION_NS`] and how to mark longer ones.
pub const SHORT_ITERATION_FIX: &str = "an iteration that short shows little of a routing policy's effect. Mark \
     iterations of a millisecond or more: AAR_AB_BOUNDARY=MPI_<Fn>:N with a larger N, or aar_iteration_begin/end \
     around a whole time step.";

/// Longest line a reader accepts: a row is a few hundred bytes; anything far longer is not a
/// record (and must not make the reader hold a whole foreign file in memory).
pub const MAX_LINE: usize = 1 << 20;

/// Reads one record line by line, holding one line in memory.
pub struct Reader<R> {
    input: R,
    line_no: u64,
    buf: Vec<u8>,
    /// A run of NUL bytes that ended the line just read, to be given as the next ([`read_line`]).
    zeros: u64,
    header: Header,
}

/// Read one line of at most [`MAX_LINE`] bytes into `buf`; `Ok(false)` at the end of input.
///
/// A run of NUL bytes followed by the end of the input, a newline or a `{` (a row after a hole)
/// is what a file system leaves where a crash kept a write's length and lost its data: it ends
/// the line it interrupts (which the caller reads as [`Fault::CutByZeros`], taking `zeros`, when
/// it is not whole), and is otherwise itself the next line, [`Fault::Zeros`] (held in `zeros`
/// meanwhile), however long. Other NUL bytes are a line's own (a binary file's).
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>, zeros: &mut u64) -> Result<bool, Fault> {
    buf.clear();
    if *zeros > 0 {
        return Err(Fault::Zeros(std::mem::take(zeros)));
    }
    loop {
        let available = input.fill_buf().map_err(Fault::Unreadable)?;
        if available.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n' || b == 0) {
            Some(n) if available[n] == 0 => {
                if buf.len() + n > MAX_LINE + 1 {
                    return Err(Fault::LineTooLong);
                }
                buf.extend_from_slice(&available[..n]);
                input.consume(n);
                let run = skip_nuls(input)?;
                let next = input.fill_buf().map_err(Fault::Unreadable)?.first().copied();
                if matches!(next, None | Some(b'\n' | b'{')) {
                    if buf.is_empty() {
                        return Err(Fault::Zeros(run));
                    }
                    *zeros = run;
                    return Ok(true);
                }
                let len = usize::try_from(run).ok().and_then(|r| r.checked_add(buf.len())).unwrap_or(usize::MAX);
                if len > MAX_LINE + 1 {
                    return Err(Fault::LineTooLong);
                }
                buf.resize(len, 0);
                continue;
            }
            Some(n) => (n + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > MAX_LINE + 1 {
            return Err(Fault::LineTooLong);
        }
        buf.extend_from_slice(&available[..take]);
        input.consume(take);
        if done {
            return Ok(true);
        }
    }
}

/// Consume the NUL bytes at the start of `input`; how many.
fn skip_nuls(input: &mut impl BufRead) -> Result<u64, Fault> {
    let mut run = 0u64;
    loop {
        let available = input.fill_buf().map_err(Fault::Unreadable)?;
        let n = available.iter().take_while(|&&b| b == 0).count();
        let more = n > 0 && n == available.len();
        input.consume(n);
        run += n as u64;
        if !more {
            return Ok(run);
        }
    }
}

impl<R: BufRead> Reader<R> {
    /// Read and check the header; a fault here is the file's.
    pub fn new(mut input: R) -> Result<Self, Fault> {
        let (mut buf, mut zeros) = (Vec::new(), 0);
        if !read_line(&mut input, &mut buf, &mut zeros)? {
            return Err(Fault::Empty);
        }
        let value: serde_json::Value = serde_json::from_slice(&buf).map_err(|_| {
            // A writer writes the format first: a header so begun, without its newline, is an
            // iteration record whose writer was stopped in its first write.
            const BEGUN: &[u8] = b"{\"format\":\"aar-iterations/";
            let begun = buf.starts_with(BEGUN) || (buf.len() > 1 && BEGUN.starts_with(&buf));
            match begun && buf.last() != Some(&b'\n') {
                true if zeros > 0 => Fault::CutByZeros(zeros),
                true => Fault::CutShort,
                false => Fault::NoJsonHeader,
            }
        })?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => return Err(Fault::OtherFormat(other.to_string())),
            None => return Err(Fault::NoFormat),
        }
        let header: Header = serde_json::from_value(value.clone()).map_err(|error| {
            let good = Header {
                format: FORMAT.into(),
                source: Source::Job,
                experiment: String::new(),
                rank: None,
                nranks: None,
                output_ranks: None,
                host: None,
                pid: None,
                clock: Clock::Monotonic,
                policies: Vec::new(),
                order: String::new(),
                boundary: String::new(),
                modes: Vec::new(),
                version: String::new(),
                git_revision: None,
                command_line: Vec::new(),
            };
            match wrong_field(value, &good) {
                Some(field) => Fault::HeaderField { field, error },
                None => Fault::BadHeader(error),
            }
        })?;
        Ok(Self { input, line_no: 1, buf, zeros, header })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next row: `None` at the end, `Some(Err)` for a line that is not a row (the caller
    /// may skip it and go on, unless [`Fault::ends_reading`]; a cut last line is
    /// [`Fault::CutShort`]).
    pub fn next_row(&mut self) -> Option<Result<Iteration, Problem>> {
        loop {
            self.line_no += 1;
            let problem = |fault| Some(Err(Problem { line: self.line_no, fault }));
            match read_line(&mut self.input, &mut self.buf, &mut self.zeros) {
                Ok(false) => return None,
                Ok(true) => {}
                Err(fault) => return problem(fault),
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let complete = self.buf.last() == Some(&b'\n');
            let expected = self.header.modes.len();
            return match serde_json::from_slice::<Iteration>(&self.buf) {
                Ok(row) if row.messages.len() != expected || row.bytes.len() != expected => {
                    problem(Fault::ModeColumns { found: row.messages.len(), expected })
                }
                Ok(row) if row.end_ns < row.start_ns => problem(Fault::EndsBeforeStart),
                Ok(row) => Some(Ok(row)),
                // Cut by a crash's NUL bytes: they are said with it, not as a line of their own.
                Err(_) if !complete && self.zeros > 0 => problem(Fault::CutByZeros(std::mem::take(&mut self.zeros))),
                Err(_) if !complete => problem(Fault::CutShort),
                Err(error) => {
                    match serde_json::from_slice(&self.buf).ok().and_then(|v| wrong_field(v, &Iteration::default())) {
                        Some(field) => problem(Fault::FieldType { field, error }),
                        None => problem(Fault::NotARow(error)),
                    }
                }
            };
        }
    }
}

/// The field of a row or a header (`value`) that keeps it from being read, if one does: each
/// field of `value` put in turn into `good`, which reads; the first that stops it. (serde's
/// message gives only a column, or nothing.)
fn wrong_field<T: Serialize + serde::de::DeserializeOwned>(value: serde_json::Value, good: &T) -> Option<String> {
    let serde_json::Value::Object(fields) = value else { return None };
    let good = serde_json::to_value(good).ok()?;
    fields.into_iter().find_map(|(name, value)| {
        let mut probe = good.clone();
        probe.as_object_mut()?.insert(name.clone(), value);
        serde_json::from_value::<T>(probe).is_err().then_some(name)
    })
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Iteration, Problem>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_row()
    }
}

/// Append `value` as one JSON line to `out`.
pub fn write_line<T: Serialize>(out: &mut Vec<u8>, value: &T) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *out, value)?;
    out.push(b'\n');
    Ok(())
}

/// A number and the word for it, singular or plural, as libaar.so's summary line and the CLI
/// print them: `count(1, "row", "rows")` is `1 row`, `count(2, "row", "rows")` `2 rows` (and
/// `count(0, ...)` `0 rows`).
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Bytes for people, as libaar.so's summary line and the CLI print them: `512 B`, `1.5 KiB`,
/// `8.4 MiB` (binary units, one decimal). A value that rounds up to 1024 of a unit is given in the
/// next one: 1,048,575 B is `1.0 MiB`, not `1024.0 KiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut k = 0;
    // Compared as it will be printed, to one decimal, so that the printed number stays under 1024.
    while (k == 0 && v >= 1024.0 || k > 0 && v >= 1023.95) && k + 1 < UNITS.len() {
        v /= 1024.0;
        k += 1;
    }
    if k == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[k])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_begin_causes_are_read_by_the_names_they_are_written_with() {
        for why in RefusedBegin::ALL {
            assert_eq!(why.name().parse(), Ok(why));
            assert_eq!(RefusedBegin::ALL[why.index()], why);
        }
        assert_eq!("later_cause".parse::<RefusedBegin>(), Err(()));
    }

    #[test]
    fn counts_for_people() {
        assert_eq!(count(0u32, "row", "rows"), "0 rows");
        assert_eq!(count(1u32, "row", "rows"), "1 row");
        assert_eq!(count(2u64, "rank has", "ranks have"), "2 ranks have");
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1_048_524), "1023.9 KiB");
        assert_eq!(human_bytes(1_048_575), "1.0 MiB");
        assert_eq!(human_bytes((1 << 30) - 1), "1.0 GiB");
        assert_eq!(human_bytes(4 << 20), "4.0 MiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }

    fn header() -> Header {
        Header {
            format: FORMAT.into(),
            source: Source::Job,
            experiment: "42.0".into(),
            rank: Some(3),
            nranks: Some(4),
            output_ranks: Some("0:1,3".parse().unwrap()),
            host: Some("nid00012".into()),
            pid: Some(99),
            clock: Clock::Monotonic,
            policies: vec!["ADAPTIVE0".into(), "ADAPTIVE3".into()],
            order: "round-robin".into(),
            boundary: "markers".into(),
            modes: vec!["ADAPTIVE0".into(), "ADAPTIVE3".into()],
            version: "0.1.0".into(),
            git_revision: None,
            command_line: vec!["./app".into()],
        }
    }

    fn row(i: u64) -> Iteration {
        Iteration {
            i,
            policy: if i.is_multiple_of(2) { "ADAPTIVE0" } else { "ADAPTIVE3" }.into(),
            start_ns: 1000 * i,
            end_ns: 1000 * i + 500,
            messages: vec![1, 2],
            bytes: vec![64, 128],
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_and_cut_last_line() {
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        for i in 0..3 {
            write_line(&mut out, &row(i)).unwrap();
        }
        let full = out.len();
        write_line(&mut out, &row(3)).unwrap();
        out.truncate(full + 10);
        let mut r = Reader::new(&out[..]).unwrap();
        assert_eq!(r.header(), &header());
        let rows: Vec<_> = r.by_ref().collect();
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rows[..3].iter().map(|r| r.as_ref().unwrap().clone()).collect::<Vec<_>>(),
            (0..3).map(row).collect::<Vec<_>>()
        );
        assert!(matches!(rows[3].as_ref().unwrap_err().fault, Fault::CutShort));
    }

    #[test]
    fn a_header_written_before_output_ranks_reads_without_them() {
        let mut value = serde_json::to_value(header()).unwrap();
        assert_eq!(value["output_ranks"], "0:1,3");
        value.as_object_mut().unwrap().remove("output_ranks");
        let mut out = Vec::new();
        write_line(&mut out, &value).unwrap();
        let r = Reader::new(&out[..]).unwrap();
        assert_eq!(r.header(), &Header { output_ranks: None, ..header() });
        // Not a list of ranks: the header is refused, naming what is wrong.
        value["output_ranks"] = "0:x".into();
        let mut out = Vec::new();
        write_line(&mut out, &value).unwrap();
        let bad = Reader::new(&out[..]).err().unwrap().to_string();
        assert!(bad.starts_with("has a bad header (its \"output_ranks\" cannot be read: \"x\" is not a rank"), "{bad}");
        // A rank that is not one is named.
        for rank in [serde_json::json!(-1), "3".into(), 1.5.into(), u64::MAX.into()] {
            value["output_ranks"] = serde_json::Value::Null;
            value["rank"] = rank;
            let mut out = Vec::new();
            write_line(&mut out, &value).unwrap();
            let bad = Reader::new(&out[..]).err().unwrap().to_string();
            assert!(bad.starts_with("has a bad header (its \"rank\" cannot be read: invalid "), "{bad}");
        }
        // A field missing is named by serde.
        value["rank"] = 0.into();
        value.as_object_mut().unwrap().remove("clock");
        let mut out = Vec::new();
        write_line(&mut out, &value).unwrap();
        let bad = Reader::new(&out[..]).err().unwrap().to_string();
        assert_eq!(bad, "has a bad header (missing field `clock`)");
    }

    #[test]
    fn a_header_without_a_rank_reads_as_none_and_an_older_one_as_written() {
        let read = |value: &serde_json::Value| {
            let mut out = Vec::new();
            write_line(&mut out, value).unwrap();
            Reader::new(&out[..]).unwrap().header().rank
        };
        let mut value = serde_json::to_value(Header { rank: None, ..header() }).unwrap();
        assert!(value["rank"].is_null(), "{value}");
        assert_eq!(read(&value), None);
        value.as_object_mut().unwrap().remove("rank");
        assert_eq!(read(&value), None, "absent: not known");
        value["rank"] = 0.into();
        assert_eq!(read(&value), Some(0), "an older libaar.so's record, as written");
    }

    #[test]
    fn nul_bytes_a_crash_left_are_said_as_such_and_the_rows_after_them_read() {
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        write_line(&mut out, &row(0)).unwrap();
        // A row the crash cut inside, the zeros to a block's end, then a row written later.
        let mut one = Vec::new();
        write_line(&mut one, &row(1)).unwrap();
        out.extend_from_slice(&one[..10]);
        out.resize(out.len() + 3 * MAX_LINE, 0);
        write_line(&mut out, &row(2)).unwrap();
        out.resize(out.len() + 100, 0);
        let read: Vec<_> = Reader::new(&out[..]).unwrap().collect();
        let line = |r: &Result<Iteration, Problem>| r.as_ref().map(|r| r.i).map_err(|p| p.line);
        // The row cut by the zeros is one problem with them, said as what a crash leaves, not as
        // a full disk's.
        assert_eq!(read.iter().map(line).collect::<Vec<_>>(), [Ok(0), Err(3), Ok(2), Err(5)]);
        let Err(Problem { fault: ref cut @ Fault::CutByZeros(n), .. }) = read[1] else { panic!("{:?}", read[1]) };
        assert_eq!(n, 3 * MAX_LINE as u64);
        assert!(!cut.ends_reading());
        assert_eq!(
            cut.to_string(),
            format!("is cut short, and {n} NUL bytes follow it in place of the rest: {LOST_DATA}")
        );
        let Err(Problem { fault: ref zeros @ Fault::Zeros(100), .. }) = read[3] else { panic!("{:?}", read[3]) };
        assert!(!zeros.ends_reading());
        assert!(zeros.to_string().starts_with("is 100 NUL bytes, not text: the file grew"), "{zeros}");
        // A header so cut: the file's fault, said alike.
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        out.truncate(30);
        out.resize(4096, 0);
        assert!(matches!(Reader::new(&out[..]).err(), Some(Fault::CutByZeros(4066))));
        // A whole row whose newline was lost to the zeros is still read.
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        write_line(&mut out, &row(0)).unwrap();
        out.pop();
        out.resize(out.len() + 10, 0);
        let read: Vec<_> = Reader::new(&out[..]).unwrap().collect();
        assert!(matches!(read[..], [Ok(_), Err(Problem { line: 3, fault: Fault::Zeros(10) })]), "{read:?}");
        // A file of nothing but zeros: said as such, not as a foreign file.
        assert!(matches!(Reader::new(&[0u8; 4096][..]).err(), Some(Fault::Zeros(4096))));
        // NUL bytes inside a line are the line's.
        assert!(matches!(Reader::new(&b"\x00\x00PK\x03\x04\x00\x01\n"[..]).err(), Some(Fault::NoJsonHeader)));
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        out.extend_from_slice(b"{\"i\":\x00\x001}\n");
        let read: Vec<_> = Reader::new(&out[..]).unwrap().collect();
        assert!(matches!(read[..], [Err(Problem { line: 2, fault: Fault::NotARow(_) })]), "{read:?}");
    }

    #[test]
    fn foreign_and_hostile_input() {
        let fault = |input: &[u8]| Reader::new(input).err().unwrap();
        assert!(matches!(fault(b""), Fault::Empty));
        assert!(matches!(fault(b"\x00\x01binary"), Fault::NoJsonHeader));
        // A header its writer was stopped in: cut short, not foreign.
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        for cut in [3, 20, 100, out.len() - 2] {
            assert!(matches!(fault(&out[..cut]), Fault::CutShort), "{}", String::from_utf8_lossy(&out[..cut]));
        }
        assert!(matches!(fault(b"{\"format\":\"aar-iterations/1\", cut\n"), Fault::NoJsonHeader), "a whole line");
        assert!(matches!(fault(b"{\"schema\":"), Fault::NoJsonHeader));
        let other = fault(br#"{"format":"aar-iterations/9"}"#);
        assert!(other.to_string().contains("\"aar-iterations/9\""), "{other}");
        let long = vec![b'x'; MAX_LINE + 10];
        let too_long = fault(&long);
        assert!(matches!(too_long, Fault::LineTooLong) && too_long.ends_reading());
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        out.extend_from_slice(b"{\"i\":1}\n");
        out.extend_from_slice(br#"{"i":2,"policy":"x","start_ns":5,"end_ns":1,"messages":[0,0],"bytes":[0,0],"decisions":0,"switches":0}"#);
        out.push(b'\n');
        out.extend_from_slice(
            br#"{"i":3,"policy":"x","start_ns":0,"end_ns":1,"messages":[0],"bytes":[0],"decisions":0,"switches":0}"#,
        );
        out.push(b'\n');
        let problems: Vec<_> = Reader::new(&out[..]).unwrap().map(|r| r.unwrap_err()).collect();
        assert_eq!(problems.iter().map(|p| p.line).collect::<Vec<_>>(), [2, 3, 4]);
        assert!(matches!(problems[0].fault, Fault::NotARow(_)) && !problems[0].fault.ends_reading());
        assert!(matches!(problems[1].fault, Fault::EndsBeforeStart));
        assert_eq!(problems[2].to_string(), "line 4: has 1 mode columns where the header names 2");
        // A field of the wrong type is named.
        let mut out = Vec::new();
        write_line(&mut out, &header()).unwrap();
        out.extend_from_slice(
            br#"{"i":3,"policy":"x","start_ns":0,"end_ns":"1","messages":[0,0],"bytes":[0,0],"decisions":0,"switches":0}"#,
        );
        out.push(b'\n');
        let problems: Vec<_> = Reader::new(&out[..]).unwrap().map(|r| r.unwrap_err()).collect();
        assert!(problems[0].to_string().starts_with("line 2: has a field \"end_ns\" of the wrong type (invalid type"));
    }

    #[test]
    fn source_and_clock_names_are_the_serialized_ones() {
        for s in [Source::Job, Source::Sim] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
        for c in [Clock::Monotonic, Clock::Simulated] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.name());
        }
    }

    #[test]
    fn names() {
        assert_eq!(summary_file_name(Some("123.sdb"), Some(7), 42), "aar.123.sdb.7.42.json");
        assert_eq!(iterations_file_name(None, None, 1), "aar.nojob.norank.1.iterations.jsonl");
        assert_eq!(base_name(Some("../../etc/x"), Some(0), 1), "aar..._.._etc_x.0.1");
        let fits = "j".repeat(MAX_JOB_IN_NAME);
        assert_eq!(base_name(Some(&fits), Some(0), 1), format!("aar.{fits}.0.1"), "kept whole up to the limit");
        let long = |end: &str| base_name(Some(&format!("{}/{end}", "j".repeat(300))), Some(u32::MAX), u32::MAX);
        let (a, b) = (long("a"), long("b"));
        assert_ne!(a, b, "a hash of the whole id tells ids apart that differ past the cut");
        assert_eq!(a, long("a"), "the same for every rank of the job");
        assert!(a.starts_with(&format!("aar.{}-", "j".repeat(MAX_JOB_IN_NAME - 17))), "{a}");
        let longest = iterations_file_name(Some(&"j".repeat(100_000)), Some(u32::MAX), u32::MAX) + ".partial";
        assert!(longest.len() < 255, "{} bytes", longest.len());
    }

    #[test]
    fn an_identity_is_read_back_from_the_names_it_gives() {
        let step = Identity::new(Some(&run_name("555", Some("1"), Some(2))), Some(7), 42);
        assert_eq!(step.summary_file_name(), "aar.555.1.restart2.7.42.json");
        assert_eq!(run_name("555", None, Some(0)), "555", "restart 0 is none");
        let long = Identity::new(Some(&format!("{}/x y", "j".repeat(300))), None, u32::MAX);
        for id in [step, long, Identity::new(None, Some(0), 1)] {
            for name in [id.to_string(), id.summary_file_name(), id.iterations_file_name()] {
                assert_eq!(name.parse::<Identity>(), Ok(id.clone()), "{name}");
            }
        }
        for not in ["aar.1.json", "rank0.json", "aar..0.1.json", "aar.j.x.1.json", "aar.j.0.x.json", "aar.a b.0.1.json"]
        {
            assert_eq!(not.parse::<Identity>(), Err(()), "{not}");
        }
        assert_eq!("aar.sim-x.3.0.sim-rank.json".parse::<Identity>(), Err(()), "the simulator's rank files are not");
    }
}
