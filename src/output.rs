//! What a run leaves behind at exit: a per-rank JSON record in `AAR_OUTPUT_DIR` (created
//! atomically: written under a temporary name, then linked to its final name, which is never
//! overwritten; on a file system without hard links, created under its name) and one summary
//! line on stderr from rank 0. The iteration record is written as the job runs (see `rows`);
//! both only by the ranks `AAR_OUTPUT_RANKS` names.
//!
//! The exit handler is here, below `init`, which registers it: it only reads the process state.

use crate::rows::Written;
use crate::settings::{Boundary, Settings};
use crate::state::{self, Decider};
use crate::tally::{self, Api, PerClass, CLASS_NAMES};
use crate::{attributes, control, diag, job, node, reserve, sys, topology, trace};
use aar_engine::{EngineStats, Reason};
use aar_record::{count, RefusedBegin};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

static WRITTEN: AtomicBool = AtomicBool::new(false);

/// The exit handler counts the iterations ended so far ([`counting`]).
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Whether the exit handler has counted, or is counting, this process's iterations: an iteration
/// that ends (its count taken: [`crate::rows::Iterations::begin`], `end`) and then finds this
/// `true` may not be counted, so it keeps no row. The handler counts holding the iteration record,
/// so that a boundary is wholly before the count (counted, with its row) or wholly after it; but it
/// waits for the record only so long, and a thread that holds it longer (inside `fork()`, writing
/// to a slow file system) then ends iterations while, or after, the handler counts, whose rows
/// would be written later without being counted. Sequentially consistent, as the count's
/// increments and the handler's read of it are: an iteration that ended and then found this
/// `false` is in the count.
pub fn counting() -> bool {
    COUNTING.load(Ordering::SeqCst)
}

/// The iterations the exit handler counted in what it wrote ([`counted_at_exit`]); `u64::MAX`:
/// none yet.
static COUNTED: AtomicU64 = AtomicU64::new(u64::MAX);

/// `Some(n)`: the exit handler has run and wrote what counts this process's iterations (the
/// iteration record and the summary record in `AAR_OUTPUT_DIR`, or the summary line of
/// `AAR_SUMMARY`), counting `n`. An iteration that ends later is in neither.
pub fn counted_at_exit() -> Option<u64> {
    Some(COUNTED.load(Ordering::Acquire)).filter(|&n| n != u64::MAX)
}

#[derive(Serialize)]
struct ModeTotals {
    messages: u64,
    bytes: u64,
}

/// Messages and bytes per routing mode they went out with (the modes with messages only).
fn modes(t: &PerClass) -> BTreeMap<&'static str, ModeTotals> {
    CLASS_NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| t.messages[*i] > 0)
        .map(|(i, n)| (*n, ModeTotals { messages: t.messages[i], bytes: t.bytes[i] }))
        .collect()
}

/// One API's traffic.
#[derive(Serialize)]
struct ApiTotals {
    messages: u64,
    bytes: u64,
    modes: BTreeMap<&'static str, ModeTotals>,
    /// Messages of calls the real function refused (not in the counts above).
    refused: u64,
    /// DMAPP: messages of calls that went out and failed in the network
    /// (`DMAPP_RC_TRANSACTION_ERROR`), in the counts above too. uGNI reports such failures at
    /// completion, which the library does not see: `null`.
    failed: Option<u64>,
}

/// DMAPP steering: the routing table in use and where it came from, whether the library still
/// steers DMAPP (and why not), the attribute set calls it made and the threads it read.
#[derive(Serialize)]
struct Dmapp {
    routing_table: Option<String>,
    table_source: Option<String>,
    steering: bool,
    stopped_because: Option<&'static str>,
    attribute_sets: u64,
    threads: u64,
}

impl Dmapp {
    fn now() -> Dmapp {
        let s = attributes::summary();
        Dmapp {
            routing_table: s.table.map(|(t, _)| t.to_string()),
            table_source: s.table.map(|(_, source)| source.to_string()),
            steering: s.stopped_because.is_none(),
            stopped_because: s.stopped_because,
            attribute_sets: s.attribute_sets,
            threads: s.threads,
        }
    }
}

#[derive(Serialize)]
struct Counters<'a> {
    /// "papi", or "none" when PAPI or an event was unavailable.
    backend: &'static str,
    library: Option<&'a str>,
    events: &'a [String],
    /// PAPI reads by this rank.
    reads: u64,
    /// Readings of another rank of the node used instead of a PAPI read (`AAR_NODE_READING`).
    shared_readings: u64,
    /// PAPI reads made without looking at the node's segment: this rank's looks kept finding no
    /// window it could use, so it paused them (docs/node-reader.md).
    reads_in_pauses: u64,
    read_failures: u64,
    /// Why the counters are not read (PAPI's failure, at start-up or at the read that failed);
    /// null while they are.
    unavailable_because: Option<&'a str>,
    /// Times the counters stepped aside for the application's own PAPI measurement (they count
    /// again when it stops its set).
    gave_way: u64,
}

/// The node the rank ran on, as the library saw it.
#[derive(Serialize)]
struct NodeInfo {
    /// `PMI_GNI_LOC_ADDR`.
    nic_address: Option<u32>,
    /// Ranks sharing the NIC (PMI's clique, else the launcher's environment, else 1).
    ranks_per_node: u32,
    /// (group, router) from the node table, when one is loaded and lists the node.
    location: Option<(u32, u32)>,
    /// The segment of the shared counter reading, when the ranks of the node share one.
    shared_reading: Option<String>,
}

/// The decider's lock: how it is taken, and the calls that found it held.
#[derive(Serialize)]
struct DeciderLock {
    /// [`crate::trylock::Bias::name`].
    lock: &'static str,
    /// Calls past the threshold that went out without a decision, in the mode of a call below
    /// it, because another thread was deciding.
    undecided_crossings: u64,
}

#[derive(Serialize)]
struct Time {
    /// Initialisation (settings, loading PAPI, opening files).
    init_ns: u64,
    decisions_timed: u64,
    /// Mean time of a timed decision: model, the forwarded post and the counter read.
    decision_mean_ns: Option<f64>,
    /// Decisions × their sampled mean; the fast path (a few ns per post) is measured by the
    /// benchmark, not timed in production.
    decisions_estimated_total_ns: Option<f64>,
}

/// Iterations and the A/B experiment, if any.
#[derive(Serialize)]
struct Ab {
    /// The policies alternated, or the one policy of the run (order `single`): its first
    /// iteration's, as in the iteration record.
    policies: Vec<&'static str>,
    order: String,
    boundary: String,
    /// Iterations that ended, with the begins refused while libaar.so was starting.
    iterations: u64,
    /// Those begins per cause ([`RefusedBegin::name`]; none under an MPI boundary).
    refused_begins: BTreeMap<&'static str, u64>,
    /// The iteration record (`aar-iterations`) in the same folder, if one was written.
    iterations_file: Option<String>,
    /// Rows buffered at exit that the exit handler could not write: another thread held the
    /// iteration record past its wait ([`EXIT_WAIT`]; inside `fork()`, writing rows to a slow file
    /// system), never written after ([`crate::rows::Iterations::unfinished`]). Null: it held the
    /// record and wrote every row (absent from older records).
    rows_unwritten_at_exit: Option<u64>,
}

#[derive(Serialize)]
struct Record<'a> {
    format: &'static str,
    version: &'static str,
    git_revision: &'static str,
    command_line: Vec<String>,
    host: String,
    pid: u32,
    rank: Option<u32>,
    /// The job's number of ranks, as the launcher says ([`job::nranks`]; null when it does not):
    /// with `settings.output_ranks`, `aar report` names the ranks whose record is missing.
    nranks: Option<u32>,
    job_id: Option<String>,
    /// The job step ([`job::step`]): `aar report` sums a job's records per step.
    step: Option<String>,
    /// Times Slurm started the job again before this run ([`job::restart`]); null: never.
    restart: Option<u32>,
    policy_at_exit: &'static str,
    /// A fork child of the process that loaded the library: its own messages only.
    fork_child: bool,
    /// Panics caught at the C boundary (each call still forwarded once).
    internal_errors: u64,
    settings: &'a Settings,
    /// Messages and bytes per routing mode they went out with, of every API.
    modes: BTreeMap<&'static str, ModeTotals>,
    /// The same per API (`uGNI`, `DMAPP`).
    apis: BTreeMap<&'static str, ApiTotals>,
    /// Messages per reason for their routing.
    reasons: BTreeMap<&'static str, u64>,
    dmapp: Dmapp,
    engine: Option<EngineStats>,
    decider: DeciderLock,
    counters: Option<Counters<'a>>,
    node: Option<NodeInfo>,
    time: Option<Time>,
    ab: Ab,
    /// The decision trace's lines, and those lost waiting for another thread; null without one.
    trace: Option<trace::Counted>,
    messages: Vec<String>,
}

/// Warn at start-up, not at exit, when the record could not be written.
pub fn check_output_dir(dir: Option<&str>) {
    let Some(dir) = dir else { return };
    if let Some(u) = aar_record::folder::check(dir, sys::can_create_in) {
        diag::warn_output_dir(&format!(
            "AAR_OUTPUT_DIR={} {}; the per-rank record will not be written. Fix: {}",
            trace::quoted_path(dir),
            u.problem(),
            u.fix()
        ));
    }
}

/// Partial files a record may be written under: `NAME.partial`, then `NAME.2.partial` and on.
const PARTIALS: u32 = 9;

fn write_record(dir: &str, name: &str, json: &[u8]) -> std::io::Result<String> {
    let final_path = Path::new(dir).join(name);
    let (partial, file) = write_partial(Path::new(dir), name, json)?;
    // link() fails if the final name exists (a symlink planted there included): never overwrite.
    let linked = match std::fs::hard_link(&partial, &final_path) {
        // It did link: over NFS a LINK sent again after its reply was lost finds the name it made
        // taken (EEXIST), or a soft mount gives up on it; the name is then this file's.
        Err(_) if is_ours(&file, &final_path) => Ok(()),
        Err(e) if refuses_hard_links(&e) => write_new(&final_path, json).map(drop),
        linked => linked,
    };
    // Only the partial this process made: another of the same name is another process's.
    let _ = std::fs::remove_file(&partial);
    linked.map(|()| final_path.to_string_lossy().into_owned())
}

/// Write the record under the first free partial name ([`PARTIALS`]). One is taken when another
/// process of the same name (the same job, rank and pid: a container's rank 0 is pid 1 in every
/// step, and pids come round again) is writing its record, or was killed while it wrote it and
/// left it (`aar report` counts those and says they can be removed): neither keeps this record
/// from its name, which goes to the first to link it.
fn write_partial(dir: &Path, name: &str, json: &[u8]) -> std::io::Result<(std::path::PathBuf, sys::OwnFile)> {
    let mut taken = None;
    for k in 1..=PARTIALS {
        let path = match k {
            1 => dir.join(format!("{name}.partial")),
            k => dir.join(format!("{name}.{k}.partial")),
        };
        match write_new(&path, json) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => taken = Some(e),
            Err(e) => return Err(e),
        }
    }
    let e = taken.unwrap_or_else(|| std::io::ErrorKind::AlreadyExists.into());
    Err(std::io::Error::new(
        e.kind(),
        format!(
            "{name}.partial and {name}.2.partial to {name}.{PARTIALS}.partial are all there, partial records of \
             processes of the same name ({e})"
        ),
    ))
}

/// Whether `path` names `file` (a hard link to it): not a symlink, nor another file.
fn is_ours(file: &sys::OwnFile, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let named = std::fs::symlink_metadata(path).map(|m| (m.dev(), m.ino()));
    matches!((file.identity(), named), (Ok(a), Ok(b)) if a == b)
}

/// Create `path` (never an existing name) with `json` in it, synced where the file system can.
fn write_new(path: &Path, json: &[u8]) -> std::io::Result<sys::OwnFile> {
    let f = sys::create_new_with(&path.to_string_lossy(), json)?;
    let _ = f.sync_data();
    Ok(f)
}

/// A file system without hard links (vfat, DAOS's dfuse, FUSE and object-store ones) refuses
/// link(2) this way: the record is then created under its own name directly (a reader at that
/// moment could see it part-written, which the link avoids where it can).
fn refuses_hard_links(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::EOPNOTSUPP | libc::ENOSYS))
}

fn summary(totals: &tally::Totals, decider: Option<&Decider>, record: Option<&str>, policy: &str) -> String {
    let t = totals.all();
    let messages = t.total_messages();
    let bytes = t.total_bytes();
    let mut per_mode: Vec<(u64, u64, &str)> = (0..CLASS_NAMES.len())
        .filter(|&i| t.messages[i] > 0)
        .map(|i| (t.bytes[i], t.messages[i], CLASS_NAMES[i]))
        .collect();
    per_mode.sort_by(|a, b| b.cmp(a));
    let per_mode: Vec<String> = per_mode
        .iter()
        .map(|(b, m, n)| {
            let pct = 100.0 * *b as f64 / bytes.max(1) as f64;
            let pct = if pct > 0.0 && pct < 1.0 { "<1".to_string() } else { format!("{pct:.0}") };
            format!("{n} {pct}% of bytes in {}", count(*m, "message", "messages"))
        })
        .collect();
    let child = if state::is_fork_child() { " (forked child)" } else { "" };
    let mut line = format!(
        "policy {policy}{child}: {}, {}",
        count(messages, "message", "messages"),
        aar_record::human_bytes(bytes)
    );
    if !per_mode.is_empty() {
        line += &format!(" ({})", per_mode.join(", "));
    }
    let dmapp = totals.api(Api::Dmapp).total_messages();
    if dmapp > 0 {
        let d = attributes::summary();
        line += &format!("; DMAPP {dmapp} of them");
        line += &match d.stopped_because {
            Some(_) => " (not steered: see the warning above)".to_string(),
            None => format!(" ({})", count(d.attribute_sets, "attribute set call", "attribute set calls")),
        };
    }
    if let Some(d) = decider {
        let s = d.engine.stats();
        line += &format!("; {}", count(s.decisions, "decision", "decisions"));
        let undecided = totals.undecided;
        if undecided > 0 {
            line += &format!(
                " ({} of the threshold undecided: another thread was deciding)",
                count(undecided, "crossing", "crossings")
            );
        }
        line += &format!(
            ", {}; {}",
            count(s.switches_to_low_latency + s.switches_to_low_stall, "switch", "switches"),
            count(d.counter_reads, "counter read", "counter reads")
        );
        if d.counter_reads == 0 && d.counters_library.is_none() {
            line += " (no counters)";
        } else if d.counter_read_failures > 0 {
            // Reads that failed were tried again at the next decision (a warning says when they
            // were given up); said here too, as `aar report` says it.
            line += &format!(" ({} failed)", d.counter_read_failures);
        }
    }
    match record {
        // Escaped: a line break in the folder's name would end the line, its rest without `aar:`.
        Some(p) => line + &format!("; record {}", p.escape_debug()),
        None => line,
    }
}

/// What writing the record and the summary may allocate at most, with room to spare.
const EXIT_NEEDS_BYTES: usize = 256 << 10;

/// How long the exit handler waits for a thread that holds what it reads, at most.
const EXIT_WAIT: Duration = Duration::from_millis(200);

/// The exit handler: write the record and the summary once, whatever thread calls `exit()`.
pub extern "C" fn at_exit() {
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(write_outputs);
    let _ = std::panic::catch_unwind(node::leave);
}

fn write_outputs() {
    // An inert process reports nothing: AAR_DISABLE, or a fork child whose parent's start-up the
    // fork cut short after it had registered this handler (it says so itself).
    if WRITTEN.swap(true, Ordering::AcqRel) || state::inert() {
        return;
    }
    let Some(settings) = state::settings() else { return };
    if !reserve::can_spare(EXIT_NEEDS_BYTES) {
        // An allocation that fails aborts the process: better no record than that.
        sys::write_stderr(
            b"aar: no memory is left for libaar.so's record and summary (malloc refuses and its reserve \
              is used up): none is written; the program's exit is not affected.\n",
        );
        return;
    }
    if let Some(line) = reserve::refusals() {
        diag::warn(&line);
    }
    state::after_fork_in_child();
    state::TRACE.finish();
    // The iteration record is held from here until the count is published: an iteration another
    // thread ends meanwhile is either counted with its row or, after, has neither and is said.
    // (A fork child writes no rows: its buffer holds the parent's.)
    let mut held = match state::is_fork_child() {
        true => None,
        false => state::ITERATIONS.record(EXIT_WAIT),
    };
    // From here an iteration that ends keeps no row: held, the record keeps every boundary wholly
    // before the count or after it; not held, this keeps a later one's row from being written
    // uncounted.
    COUNTING.store(true, Ordering::SeqCst);
    // A begin refused while the library was starting kept its index: it counts as an iteration
    // ended without a row, so that a rank's count covers the indices its rows use.
    let refused: BTreeMap<&'static str, u64> = match settings.ab_boundary {
        Boundary::Markers => RefusedBegin::ALL
            .iter()
            .map(|&why| (why.name(), state::ITERATIONS.refused(why)))
            .filter(|&(_, n)| n > 0)
            .collect(),
        Boundary::Mpi { .. } => BTreeMap::new(),
    };
    let ended = state::ITERATIONS.ended() + refused.values().sum::<u64>();
    if let (Some(_), Boundary::Mpi { function, .. }) = (&settings.ab, settings.ab_boundary) {
        // (A tool defining the function first was named at start-up already.)
        if ended == 0
            && state::ITERATIONS.current() < 0
            && !state::is_fork_child()
            && sys::first_definer(function.name()).is_none()
        {
            // Said where it shows: otherwise only the summary's "0 iterations" would.
            diag::warn(&format!(
                "AAR_AB is set but no iteration was marked: no call of {f} reached libaar.so. Either the \
                 program never calls {f} (choose a collective every rank calls once per iteration), or \
                 something calls P{f} instead: the MPI library's Fortran bindings (Open MPI's, for `use mpi` and mpif.h too; \
                 MPICH's `use mpi_f08` MPI_Barrier) or a profiling tool preloaded before libaar.so. `aar doctor \
                 PROGRAM` names the calls whose Fortran bindings bypass libaar.so; choose a function the program \
                 calls from C, or unset AAR_AB_BOUNDARY and mark iterations with aar_iteration_begin/end (in \
                 Fortran, the aar module's; refused while it names an MPI function).",
                f = function.name()
            ));
        }
    }
    if let (Some(_), Boundary::Markers) = (&settings.ab, settings.ab_boundary) {
        if ended == 0 && state::ITERATIONS.current() < 0 && !state::is_fork_child() {
            // The whole run had iteration 0's policy: an experiment that compared nothing.
            diag::warn(&format!(
                "AAR_AB is set but no iteration was marked: the program never called aar_iteration_begin, so the \
                 whole run used {} (iteration 0's policy) and there is nothing to compare. Mark the iterations \
                 with aar_iteration_begin/end (aar.h; Fortran: use aar), or, in an MPI program, set \
                 AAR_AB_BOUNDARY=MPI_<Fn>[:N] to a collective every rank calls once per iteration.",
                settings.engine.policy.name()
            ));
        }
    }
    if let (Some(_), Boundary::Markers) = (&held, settings.ab_boundary) {
        let open = state::ITERATIONS.current();
        if open >= 0 {
            // Ended by nothing: its row would hold a part of the run nobody marked as a whole.
            diag::warn(&format!(
                "iteration {open} was still in progress at exit (aar_iteration_begin without its \
                 aar_iteration_end): it has no row and is not counted. Call aar_iteration_end after the last \
                 iteration's work (in an MPI program, before MPI_Finalize) to keep it."
            ));
        }
    }
    let written = match (&mut held, state::is_fork_child()) {
        (Some(record), _) => record.finish(),
        (None, true) => Written::NONE,
        (None, false) => state::ITERATIONS.unfinished(),
    };
    if let Some(n) = written.unwritten_at_exit.filter(|&n| n > 0) {
        // Only this rank knows: said by every rank that writes records.
        diag::error(&format!(
            "libaar.so's exit handler waited {} ms for the iteration record in vain: another thread held it (inside \
             fork(), or writing rows to a slow file system), so the {} buffered then {} not written ({} in the \
             summary record's ab.iterations, these rows in its ab.rows_unwritten_at_exit, which aar report names). Let forks and other threads' iteration calls finish before the \
             program exits (join them before exit, or before MPI_Finalize) to keep every row.",
            EXIT_WAIT.as_millis(),
            count(n, "row", "rows"),
            if n == 1 { "was" } else { "were" },
            if n == 1 { "its iteration counts" } else { "their iterations count" },
        ));
    }
    let totals = tally::totals();
    // A fork child that sent nothing (a helper that never touched the network) leaves no trace.
    if state::is_fork_child() && totals.all().total_messages() == 0 {
        return;
    }
    if settings.writes_records(job::rank()) || settings.summary {
        COUNTED.store(ended, Ordering::Release);
    }
    drop(held);
    let slot = state::decider_within(EXIT_WAIT);
    let decider = slot.as_deref().and_then(Option::as_ref);
    let policy = control::policy_name(control::load());
    let mut record_path = None;
    if let Some(dir) = settings.output_dir.as_deref().filter(|_| settings.writes_records(job::rank())) {
        let d = decider;
        let mean = d.filter(|d| d.timed_decisions > 0).map(|d| d.timed_decision_ns as f64 / d.timed_decisions as f64);
        let record = Record {
            format: aar_record::SUMMARY_FORMAT,
            version: env!("CARGO_PKG_VERSION"),
            git_revision: env!("AAR_GIT_REVISION"),
            command_line: job::command_line(),
            host: sys::hostname(),
            pid: sys::pid(),
            rank: job::rank(),
            nranks: job::nranks(),
            job_id: job::job_id(),
            step: job::step(),
            restart: job::restart(),
            policy_at_exit: policy,
            fork_child: state::is_fork_child(),
            internal_errors: diag::panics(),
            settings,
            modes: modes(&totals.all()),
            apis: Api::ALL
                .iter()
                .map(|&api| {
                    let t = totals.api(api);
                    let (messages, bytes) = (t.total_messages(), t.total_bytes());
                    let refused = totals.refused[api as usize];
                    let failed = (api == Api::Dmapp).then_some(totals.dmapp_failed);
                    (api.name(), ApiTotals { messages, bytes, modes: modes(t), refused, failed })
                })
                .collect(),
            reasons: Reason::ALL.iter().map(|r| (r.name(), totals.reasons[r.index()])).collect(),
            dmapp: Dmapp::now(),
            engine: d.map(|d| d.engine.stats().clone()),
            decider: DeciderLock { lock: state::DECIDER.bias().name(), undecided_crossings: totals.undecided },
            counters: d.map(|d| Counters {
                backend: if d.counters_library.is_some() { "papi" } else { "none" },
                library: d.counters_library.as_deref(),
                events: &settings.papi_events,
                reads: d.counter_reads,
                shared_readings: d.shared_readings,
                reads_in_pauses: d.node_looks.paused_readings(),
                read_failures: d.counter_read_failures,
                unavailable_because: d.counters_unavailable.as_deref(),
                gave_way: d.gave_way,
            }),
            node: d.map(|d| {
                let nic_address = topology::local_nic_address();
                NodeInfo {
                    nic_address,
                    ranks_per_node: d.ranks_per_node,
                    location: nic_address.and_then(|nic| topology::table()?.location(nic)).map(|l| (l.group, l.router)),
                    shared_reading: d.node.map(|n| n.path().display().to_string()),
                }
            }),
            time: d.map(|d| Time {
                init_ns: d.init_ns,
                decisions_timed: d.timed_decisions,
                decision_mean_ns: mean,
                decisions_estimated_total_ns: mean.map(|m| m * d.engine.stats().decisions as f64),
            }),
            ab: ab_section(settings, ended, refused, written),
            trace: state::TRACE.counted(),
            messages: diag::kept(),
        };
        let name = aar_record::summary_file_name(job::experiment().as_deref(), record.rank, record.pid);
        match serde_json::to_vec_pretty(&record) {
            Ok(json) => match write_record(dir, &name, &json) {
                Ok(p) => record_path = Some(p),
                Err(e) => diag::error_output_write(&format!(
                    "could not write the record {name} in AAR_OUTPUT_DIR={} ({e}); nothing else is affected. {}",
                    trace::quoted_path(dir),
                    diag::write_fix(&e, "AAR_OUTPUT_DIR")
                )),
            },
            // Unreachable but for a bug: the record is plain fields, and the text of a value
            // (a setting's Display) cannot fail.
            Err(e) => diag::error(&format!(
                "could not encode the record {name} ({e}): it is not written, and nothing else is affected (the \
                 program's exit, the summary line). This is a bug in libaar.so, which no setting works around: \
                 please report it with this line."
            )),
        }
    }
    if settings.summary {
        let policy = match &settings.ab {
            Some(list) => format!("{list} (A/B, {})", count(ended, "iteration", "iterations")),
            None => policy.to_string(),
        };
        diag::info_rank0(&summary(&totals, decider, record_path.as_deref(), &policy));
    }
}

fn ab_section(settings: &Settings, ended: u64, refused_begins: BTreeMap<&'static str, u64>, written: Written) -> Ab {
    let (policies, order) = match &settings.ab {
        Some(list) => (list.0.iter().map(|p| p.name()).collect(), settings.ab_order.to_string()),
        None => (vec![written.first_policy.unwrap_or(settings.engine.policy).name()], "single".to_string()),
    };
    Ab {
        policies,
        order,
        boundary: settings.ab_boundary.to_string(),
        iterations: ended,
        refused_begins,
        iterations_file: written.file,
        rows_unwritten_at_exit: written.unwritten_at_exit,
    }
}
