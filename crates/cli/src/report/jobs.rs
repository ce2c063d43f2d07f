//! `aar report` on a run without iterations: a job with neither `AAR_AB` nor marked iterations
//! leaves only each rank's summary record (`aar.<job>[.<step>][.restart<N>].<rank>.<pid>.json`, written by libaar.so
//! at exit). Without iteration times there is no table of times; the records are summed per job
//! instead: ranks, policies, messages and bytes per routing mode, decisions, switches, counter
//! reads, and what [`super::health`] finds in them.

use super::analysis::{missing_ranks, HOW_RANKS_ENDED, JOB_FOLDER};
use super::health;
use super::output::{clean, clean_to, render};
use super::read::walk;
use aar_record::ranks::RankSet;
use aar_record::{count, human_bytes, job_in_name, Identity, NO_JOB};
use aar_record::{ITERATIONS_SUFFIX, SUMMARY_SUFFIX};
use aar_sim::record::RANK_SUFFIX;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Whether a file name is a summary record's (`aar.<job>[.<step>][.restart<N>].<rank>.<pid>.json`). The simulator's
/// per-rank files end in `.sim-rank.json` and are not.
pub fn is_summary_name(name: &str) -> bool {
    name.starts_with("aar.") && name.ends_with(SUMMARY_SUFFIX) && !name.ends_with(RANK_SUFFIX)
}

/// Whether `path`'s file name is a summary record's ([`is_summary_name`]).
pub fn names_a_summary(path: &Path) -> bool {
    path.file_name().is_some_and(|n| is_summary_name(&n.to_string_lossy()))
}

/// The summary records under `inputs` (files named on the command line taken whatever their
/// name but an iteration record's), sorted, each once.
fn discover(inputs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = BTreeSet::new();
    for input in inputs {
        let Ok(meta) = std::fs::metadata(input) else { continue };
        if meta.is_file() {
            if !input.to_string_lossy().ends_with(ITERATIONS_SUFFIX) {
                found.insert(input.clone());
            }
        } else {
            // Said by the iteration records' reader, which walks the same folders first.
            found.extend(walk(input, is_summary_name, |_, _| {}));
        }
    }
    found.into_iter().collect()
}

/// One job's summary records, summed.
#[derive(Debug, Default, Serialize)]
pub struct Job {
    /// The job id the ranks read from their launcher (`SLURM_JOB_ID`, ...); `null`: none.
    pub job: Option<String>,
    /// The job step (`SLURM_STEP_ID`, the ALPS application id); `null`: none, or a record that
    /// does not say. The steps of a job are summed apart (each may run another policy).
    pub step: Option<String>,
    /// Times Slurm had started the job again (requeued) before this run (`SLURM_RESTART_COUNT`);
    /// absent: never. A job started again has the same job id and step ids: each run is summed
    /// apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart: Option<u64>,
    /// Without a job id: the program the records are of (such records are summed per program,
    /// not all together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Summary records read (a rank run twice, or a forked child, has more than one).
    pub records: u64,
    /// Distinct ranks and hosts (counted in JSON).
    #[serde(serialize_with = "count_of")]
    pub ranks: BTreeSet<u32>,
    /// The job's number of ranks, as its records say (`null`: one does not, or they disagree on it
    /// or on `AAR_OUTPUT_RANKS`).
    pub ranks_expected: Option<u32>,
    /// `AAR_OUTPUT_RANKS` as the records say (`null`: every rank writes records, or they disagree):
    /// the ranks it leaves out have no record by design.
    pub output_ranks: Option<RankSet>,
    #[serde(serialize_with = "count_of")]
    pub hosts: BTreeSet<String>,
    /// Records per policy in force at exit.
    pub policies: BTreeMap<String, u64>,
    /// Messages and bytes per routing mode they went out with.
    pub modes: BTreeMap<String, Traffic>,
    pub decisions: u64,
    pub undecided_crossings: u64,
    pub switches: u64,
    pub counter_reads: u64,
}

fn count_of<T, S: serde::Serializer>(set: &BTreeSet<T>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(set.len() as u64)
}

#[derive(Debug, Default, Serialize)]
pub struct Traffic {
    pub messages: u64,
    pub bytes: u64,
}

impl Job {
    fn add(&mut self, rec: &Value) {
        let n = |p: &str| rec.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        self.records = self.records.saturating_add(1);
        if let Some(r) = rec["rank"].as_u64().and_then(|r| u32::try_from(r).ok()) {
            self.ranks.insert(r);
        }
        if let Some(h) = rec["host"].as_str() {
            self.hosts.insert(h.to_string());
        }
        *self.policies.entry(rec["policy_at_exit"].as_str().unwrap_or("?").to_string()).or_default() += 1;
        for (mode, t) in rec["modes"].as_object().into_iter().flatten() {
            let sum = self.modes.entry(mode.clone()).or_default();
            sum.messages = sum.messages.saturating_add(t["messages"].as_u64().unwrap_or(0));
            sum.bytes = sum.bytes.saturating_add(t["bytes"].as_u64().unwrap_or(0));
        }
        self.decisions = self.decisions.saturating_add(n("/engine/decisions"));
        self.undecided_crossings = self.undecided_crossings.saturating_add(n("/decider/undecided_crossings"));
        self.switches = self
            .switches
            .saturating_add(n("/engine/switches_to_low_latency").saturating_add(n("/engine/switches_to_low_stall")));
        self.counter_reads = self.counter_reads.saturating_add(n("/counters/reads"));
    }

    /// Add another part of the same job.
    fn merge(&mut self, o: Job) {
        self.records = self.records.saturating_add(o.records);
        self.ranks.extend(o.ranks);
        self.hosts.extend(o.hosts);
        for (p, n) in o.policies {
            *self.policies.entry(p).or_default() += n;
        }
        for (m, t) in o.modes {
            let sum = self.modes.entry(m).or_default();
            sum.messages = sum.messages.saturating_add(t.messages);
            sum.bytes = sum.bytes.saturating_add(t.bytes);
        }
        self.decisions = self.decisions.saturating_add(o.decisions);
        self.undecided_crossings = self.undecided_crossings.saturating_add(o.undecided_crossings);
        self.switches = self.switches.saturating_add(o.switches);
        self.counter_reads = self.counter_reads.saturating_add(o.counter_reads);
    }

    /// The job as its records' names carry it (`<job>[.<step>][.restart<N>]`, or `nojob`), as
    /// libaar.so names them.
    fn in_name(&self) -> String {
        let Some(job) = self.job.as_deref() else { return NO_JOB.into() };
        job_in_name(&aar_record::run_name(job, self.step.as_deref(), self.restart))
    }

    /// The ranks the records say the job has that have no record, if any: said as a warning.
    fn missing(&self) -> Option<String> {
        let n = self.ranks_expected?;
        let (first, _, missing) =
            missing_ranks(n, self.output_ranks.as_ref(), &self.ranks, "the summary records say", "a summary record")?;
        Some(format!(
            "{}: {missing}; the sums are those of the ranks read. A missing rank's record would be \
             aar.{}.{first}.<pid>{SUMMARY_SUFFIX} in {JOB_FOLDER}; a rank writes it when it exits: one killed, or \
             still running, has none. {HOW_RANKS_ENDED}",
            self.name(),
            self.in_name()
        ))
    }

    /// "job \"4242\"", "job \"4242\" step \"1\"", or "records of app without a job id".
    fn name(&self) -> String {
        let Some(job) = self.job.as_deref() else {
            return match &self.program {
                Some(p) => format!("records of {} without a job id", clean(p)),
                None => "records without a job id".into(),
            };
        };
        let name = match self.step.as_deref() {
            Some(step) => format!("job \"{}\" step \"{}\"", job.escape_debug(), step.escape_debug()),
            None => format!("job \"{}\"", job.escape_debug()),
        };
        match self.restart {
            Some(n) => format!("{name} (restart {n})"),
            None => name,
        }
    }
}

/// What tells one process's record from another's: its [`Identity`] and its host (`None`: a
/// record without a pid, told from none).
type Process = Option<(Identity, Option<String>)>;

/// One record read: its sums as a job of its own, its rank, what went wrong in it, whose it is,
/// and what in it could not be read.
type Part = (Job, health::Who, health::Problems, Process, Option<String>);

/// Whether a record's policies include an automatic one (they need the counters).
fn automatic(rec: &Value) -> bool {
    let kind = rec.pointer("/settings/engine/policy/kind").and_then(Value::as_str).unwrap_or("");
    let ab = rec.pointer("/settings/ab").and_then(Value::as_str).unwrap_or("");
    health::is_automatic(kind) || ab.split(',').any(health::is_automatic)
}

/// The jobs of the summary records under `inputs` (none when there is no record it can read),
/// and the warnings: the files skipped and the ranks' health. Each record is read, summed into a
/// job of its own and dropped (in parallel); the jobs are then merged: memory is a few hundred
/// bytes per record.
pub fn read(inputs: &[PathBuf]) -> (Vec<Job>, Vec<String>) {
    let files = discover(inputs);
    let read: Vec<Result<Part, Option<String>>> = files
        .par_iter()
        .map(|p| {
            // Only a file named as a summary record is warned of here: any other was named on the
            // command line, and the iteration records' reader has said why it skipped it.
            let said = |why| names_a_summary(p).then(|| format!("{}: {why}: skipped", p.display()));
            let (rec, note) = health::read_summary(p).map_err(said)?;
            let note = note.map(|n| format!("{}: {n}", p.display()));
            let rank = health::Who::of(&rec, p);
            let text = |key: &str| rec[key].as_str().map(str::to_string);
            // A step belongs to a job: without a job id it tells nothing apart.
            let (job_id, step) = (text("job_id"), text("step"));
            // Without a job id, the program's name tells runs of different programs apart.
            let program = job_id.is_none().then(|| rec.pointer("/command_line/0").and_then(Value::as_str)).flatten();
            let program = program.map(|p| Path::new(p).file_name().map_or(p.into(), |n| n.to_string_lossy().into()));
            let restart = job_id.as_ref().and(rec["restart"].as_u64()).filter(|&n| n > 0);
            let mut job = Job { step: job_id.as_ref().and(step), restart, program, job: job_id, ..Job::default() };
            job.add(&rec);
            let process = health::identity(&rec).map(|id| (id, text("host")));
            Ok((job, rank, health::problems(&rec, automatic(&rec)), process, note))
        })
        .collect();
    let mut warnings = Vec::new();
    // A process writes one record: the same one found twice (a copy in a subfolder, a folder
    // and a file in it both named) is summed once.
    let mut first: HashMap<(Identity, Option<String>), &Path> = HashMap::new();
    let mut parts = Vec::new();
    for (path, r) in files.iter().zip(read) {
        match r {
            Err(w) => warnings.extend(w),
            Ok((part, rank, problems, process, note)) => {
                match process.as_ref().and_then(|p| Some((p, first.get(p)?))) {
                    Some(((id, _), earlier)) => warnings.push(health::copy_said(path, earlier, id)),
                    None => {
                        warnings.extend(note);
                        if let Some(process) = process {
                            first.insert(process, path);
                        }
                        parts.push((part, rank, problems));
                    }
                }
            }
        }
    }
    // Per job id and step: the sums, and each rank's problems.
    type Found = Vec<(health::Who, health::Problems)>;
    type Key = (Option<String>, Option<String>, Option<u64>, Option<String>);
    let mut jobs: BTreeMap<Key, (Job, Found)> = BTreeMap::new();
    for (part, rank, problems) in parts {
        let key = (part.job.clone(), part.step.clone(), part.restart, part.program.clone());
        let (job, found) = jobs.entry(key).or_insert_with(|| {
            let (job, step, restart, program) =
                (part.job.clone(), part.step.clone(), part.restart, part.program.clone());
            (Job { job, step, restart, program, ..Job::default() }, Vec::new())
        });
        job.merge(part);
        found.push((rank, problems));
    }
    let jobs = jobs
        .into_values()
        .map(|(mut job, found)| {
            match health::job_size(&found) {
                Ok((n, sample)) => (job.ranks_expected, job.output_ranks) = (n, sample),
                Err(said) => warnings.push(health::sizes_disagree(&job.name(), "summary records", &said)),
            }
            warnings.extend(job.missing());
            warnings.extend(health::name_ranks(&job.name(), found));
            job
        })
        .collect();
    (jobs, warnings)
}

/// What the records cannot give, and how to get it.
pub const NO_ITERATIONS: &str = "these records have no iterations, so no times to compare: mark iterations \
    (AAR_AB_BOUNDARY=MPI_Barrier:10, or aar_iteration_begin/end) and alternate policies over them with AAR_AB";

/// The jobs as text.
pub fn table(jobs: &[Job]) -> String {
    let mut out = String::new();
    for (k, job) in jobs.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        let policies: Vec<String> = job.policies.iter().map(|(p, n)| format!("{} ({n})", clean(p))).collect();
        // Of how many ranks: the job's, when the records say (and the sample AAR_OUTPUT_RANKS
        // named, when it did).
        let of = match (job.ranks_expected, &job.output_ranks) {
            (Some(n), sample) => format!(
                " ({} of {}{})",
                job.ranks.len(),
                count(n, "rank", "ranks"),
                sample
                    .as_ref()
                    .map_or(String::new(), |s| format!(", AAR_OUTPUT_RANKS={}", clean_to(&s.to_string(), 120)))
            ),
            (None, _) => format!(" ({} of them)", job.ranks.len()),
        };
        let ranks = match (job.ranks.first(), job.ranks.last()) {
            (Some(a), Some(b)) if a == b && job.ranks_expected.is_none_or(|n| n == 1) => format!(", rank {a}"),
            (Some(a), Some(b)) if a == b => format!(", rank {a}{of}"),
            (Some(a), Some(b)) => format!(", ranks {a}-{b}{of}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{}: {}{ranks} on {}; policy at exit: {}\n\n",
            job.name(),
            count(job.records, "summary record", "summary records"),
            count(job.hosts.len() as u64, "host", "hosts"),
            policies.join(", ")
        ));
        let total = job.modes.values().fold(0u64, |sum, t| sum.saturating_add(t.bytes));
        let rows: Vec<Vec<String>> = job
            .modes
            .iter()
            .map(|(mode, t)| {
                let share = if total == 0 { 0.0 } else { 100.0 * t.bytes as f64 / total as f64 };
                vec![clean(mode), t.messages.to_string(), human_bytes(t.bytes), format!("{share:.1} %")]
            })
            .collect();
        let header = ["routing mode", "messages", "bytes", "share of bytes"].map(String::from);
        render(&mut out, &header, &rows, &[false, true, true, true]);
        out.push_str(&format!(
            "\ndecisions {}, undecided crossings {}, switches {}, counter reads {} (summed over the records)\n",
            job.decisions, job.undecided_crossings, job.switches, job.counter_reads
        ));
    }
    out.push_str(&format!("\n{NO_ITERATIONS}.\n"));
    out
}

/// The jobs as one JSON document.
pub fn json(jobs: &[Job], warnings: &[String]) -> String {
    #[derive(Serialize)]
    struct Doc<'a> {
        format: &'static str,
        experiments: [(); 0],
        jobs: &'a [Job],
        warnings: &'a [String],
    }
    let doc = Doc { format: "aar-report/1", experiments: [], jobs, warnings };
    serde_json::to_string_pretty(&doc).map_or_else(|e| format!("{{\"error\": \"{e}\"}}"), |s| s + "\n")
}
