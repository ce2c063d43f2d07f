//! Iterations and A/B experiments: the boundaries.
//!
//! Iterations are marked by the application (`aar_iteration_begin`/`_end`) or by every N-th
//! call of an MPI function (see [`crate::mpi`]). With `AAR_AB`, the policy of iteration i is a
//! pure function of i (the engine's A/B schedule), so every rank uses the same policy in the same
//! iteration without communicating. The policy changes only at boundaries, in the control word
//! every post loads anyway: posts gain no lock, allocation or system call. Before the first
//! iteration the policy is iteration 0's; after an end it stays until the next begin. Each
//! ended iteration becomes one row of the iteration record (`rows`).
//!
//! A boundary waits for the record at most [`LOCK_WAIT`]: a thread inside fork() (whose fork
//! handler holds the record until the fork is done) or one writing rows to a slow file system
//! may hold it longer. The boundary is then taken all the same (the index and the policy change)
//! but the rows of the iterations it ends and begins are lost: they count in the summary record's
//! `ab.iterations` as every ended iteration does, and one message per process says so ([`lost`]).
//!
//! The exit handler counts the ended iterations holding the record, but waits for it only so
//! long too. An iteration that ends once the handler has begun counting ([`output::counting`])
//! keeps no row, so that every row written is of an iteration the summary record counts.

use crate::rows::{valid_label, EngineMark, Marks, Record};
use crate::settings::{Boundary, Settings};
use crate::state::{self, ITERATIONS};
use crate::trylock::Guard;
use crate::{control, diag, init, output, tally};
use aar_engine::Policy;
use aar_record::RefusedBegin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

/// A boundary waits this long at most for another thread's boundary or for the decider.
const LOCK_WAIT: Duration = Duration::from_millis(100);
const DECIDER_WAIT: Duration = Duration::from_millis(1);

/// What the API calls can fail with.
pub enum Refused {
    /// Nothing to do in this state (no iteration open, markers with an MPI boundary, a bad label).
    Invalid,
    /// `AAR_DISABLE`.
    Disabled,
}

/// Why a boundary has no record to write its row in.
enum NoRecord {
    /// A fork child: it writes no rows (its buffer holds the parent's).
    ForkChild,
    /// Another thread held the record for over [`LOCK_WAIT`].
    Busy,
}

fn record() -> Result<Guard<'static, Record>, NoRecord> {
    if state::is_fork_child() {
        return Err(NoRecord::ForkChild);
    }
    ITERATIONS.record(LOCK_WAIT).ok_or(NoRecord::Busy)
}

/// Whether a loss ([`lost`]) was said.
static LOSS_SAID: AtomicBool = AtomicBool::new(false);

/// `what` was lost because the record stayed held: said once per process, by every rank (only
/// this rank knows its rows are missing).
#[cold]
fn lost(what: &str) {
    if LOSS_SAID.swap(true, Relaxed) {
        return;
    }
    diag::error(&format!(
        "{what}: another thread held the iteration record for over {} ms (a fork in progress, or rows being \
         written to a slow file system) and iteration calls do not wait longer. Iterations that ended without \
         their row still count in the summary record (ab.iterations); later losses are not said again. Mark \
         iterations from one thread, away from forks, to keep every row.",
        LOCK_WAIT.as_millis()
    ));
}

/// Whether what a held record lost comes after the exit handler wrote the records: iteration `i`
/// (`None`: whatever it was) that the summary record does not count. [`ended`] says that once;
/// [`lost`] would contradict it ("still count in the summary record").
fn after_the_records(i: Option<u64>) -> bool {
    output::counted_at_exit().is_some_and(|counted| i.is_none_or(|i| i >= counted))
}

/// Iteration `i` ended: after the exit handler wrote what counts iterations (by another thread
/// while the process exits, from an atexit handler registered before the library's first call, or
/// a destructor), it is in neither the iteration record nor the summary record: said once per
/// process, by every rank (only this rank knows).
fn ended(i: u64) {
    static SAID: AtomicBool = AtomicBool::new(false);
    let Some(counted) = output::counted_at_exit() else { return };
    if SAID.swap(true, Relaxed) {
        return;
    }
    diag::error(&format!(
        "iteration {i} ended after libaar.so's exit handler had written this process's records (it was ended \
         by another thread while the process was exiting, from an atexit handler registered before \
         libaar.so's first call, or from a destructor): it has no row in the iteration record, and the summary \
         record, written already with ab.iterations = {counted}, does not count it (nor later ones, which are \
         not said again). End the last iteration before the program exits (in an MPI program, before \
         MPI_Finalize), from a thread that still runs then, not in an atexit handler or a destructor."
    ));
}

/// `aar_iteration_begin` was refused (`AAR_EINVAL`) while the library was starting: the begin
/// keeps the index it would have had ([`crate::rows::Iterations::refuse_begin`]), so that this
/// rank's next iteration has the index the ranks that started sooner give theirs, is counted by
/// its cause for the summary record (`ab.refused_begins`, which `aar report` names), and is said
/// once per process, by every rank. `false`: not with an MPI boundary (known by then), where
/// markers are refused anyway and take no index.
#[cold]
pub fn refused_begin() -> bool {
    static SAID: AtomicBool = AtomicBool::new(false);
    if state::settings().is_some_and(|s| s.ab_boundary != Boundary::Markers) {
        return false;
    }
    let why = match init::initialising_here() {
        true => RefusedBegin::InsideStartUp,
        false => RefusedBegin::StartUpElsewhere,
    };
    let i = ITERATIONS.refuse_begin(why);
    if !SAID.swap(true, Relaxed) {
        diag::error(&format!(
            "aar_iteration_begin was refused (AAR_EINVAL) while libaar.so was starting (on another thread, for \
             longer than a call of aar.h waits for it: loading PAPI or reading the job's files; or from inside \
             the start-up itself): iteration {i} was not begun (no policy change, no row), but it keeps its index, \
             so that this rank numbers its iterations as the ranks that started sooner do: the next \
             aar_iteration_begin begins iteration {}. The summary record counts it (ab.iterations, and \
             ab.refused_begins by cause), and aar report says so where it leaves out the iterations this rank has no \
             row of; later refused begins are not said again. Do not \
             call aar_iteration_begin again for the same iteration; to have a row of every iteration, begin the \
             first once aar_policy_name() no longer returns \"starting\".",
            i + 1
        ));
    }
    true
}

/// Close the counter window, then read the time and the counts, in that order, so the window
/// ends inside the iteration that ends here.
fn marks(record: &mut Record) -> Marks {
    let engine = state::decider_within(DECIDER_WAIT).and_then(|mut slot| {
        let d = slot.as_mut()?;
        if d.engine.window_open() {
            d.read_and_observe();
        }
        Some(EngineMark::of(d.engine.stats()))
    });
    let t_ns = record.now();
    Marks { t_ns, totals: tally::totals(), engine }
}

/// The policy of iteration `i`: the schedule's, or the one in force without A/B.
fn policy_of(i: u64) -> Policy {
    match state::schedule() {
        Some(s) => s.policy_at(i),
        None => control::policy(control::load()),
    }
}

/// The iteration numbered by `index` begins (and the one in progress, if any, ends): from
/// `aar_iteration_begin` or an MPI boundary, each of which numbers its iterations itself.
pub fn begin_numbered(index: impl FnOnce() -> u64) {
    // The record first, then the iteration: threads at a boundary at once (collectives of
    // MPI_THREAD_MULTIPLE) each end the iteration the one before them began, under the record's
    // lock, so that every begun iteration is ended and its row kept. The index is taken under it
    // too: threads that begin iterations at once take the indices in the order their iterations
    // begin, never one that a thread waiting longer for the lock then begins after a higher one.
    let record = record();
    let i = index();
    let policy = policy_of(i);
    let mut record = match record {
        Ok(record) => record,
        Err(why) => {
            let previous = ITERATIONS.begin(i);
            switch(policy);
            if let Some(p) = previous {
                ended(p);
            }
            if matches!(why, NoRecord::Busy) && !after_the_records(previous) {
                lost(&match previous {
                    Some(p) => format!("iterations {p} (ended) and {i} (begun) have no row in the iteration record"),
                    None => format!("iteration {i} (begun) has no row in the iteration record"),
                });
            }
            return;
        }
    };
    let previous = ITERATIONS.begin(i);
    let m = marks(&mut record);
    switch(policy);
    if let Some(previous) = previous {
        if !output::counting() {
            record.end(previous, &m);
        }
        ended(previous);
    }
    record.begin(i, policy, &m, ITERATIONS.ended());
    record.write_if_due();
}

fn switch(policy: Policy) {
    if state::schedule().is_some() {
        state::switch_policy(policy);
    }
}

/// The library is initialised and not killed by `AAR_DISABLE`: its settings.
fn ready() -> Result<&'static Settings, Refused> {
    match init::wait_ready() {
        Some(s) if !s.disabled => Ok(s),
        _ => Err(Refused::Disabled),
    }
}

/// `aar_iteration_begin`.
pub fn api_begin() -> Result<(), Refused> {
    if ready()?.ab_boundary != Boundary::Markers {
        return Err(Refused::Invalid);
    }
    begin_numbered(|| ITERATIONS.next_marked());
    Ok(())
}

/// `aar_iteration_end`.
pub fn api_end() -> Result<(), Refused> {
    if ready()?.ab_boundary != Boundary::Markers {
        return Err(Refused::Invalid);
    }
    let mut record = match record() {
        Ok(record) => record,
        Err(why) => {
            let i = ITERATIONS.end().ok_or(Refused::Invalid)?;
            ended(i);
            if matches!(why, NoRecord::Busy) && !after_the_records(Some(i)) {
                lost(&format!("iteration {i} ended without its row in the iteration record"));
            }
            return Ok(());
        }
    };
    let i = ITERATIONS.end().ok_or(Refused::Invalid)?;
    if !output::counting() {
        let m = marks(&mut record);
        record.end(i, &m);
    }
    ended(i);
    record.write_if_due();
    Ok(())
}

/// `aar_iteration_label`: the iteration in progress, or the next one when none is.
/// A bad label is refused before the state is looked at, as every bad argument of the C API is.
/// A label the record, held by another thread, cannot take is refused too (`AAR_EINVAL`, as aar.h
/// says; it has no busy code) and said ([`lost`]).
pub fn api_label(label: &[u8]) -> Result<(), Refused> {
    if !valid_label(label) {
        return Err(Refused::Invalid);
    }
    ready()?;
    let label = String::from_utf8_lossy(label).into_owned();
    match record() {
        Ok(mut record) => record.label(label, ITERATIONS.current(), ITERATIONS.ended()),
        Err(NoRecord::ForkChild) => {}
        Err(NoRecord::Busy) => {
            if !after_the_records(None) {
                lost(&format!("the label \"{label}\" was not set (aar_iteration_label returned AAR_EINVAL)"));
            }
            return Err(Refused::Invalid);
        }
    }
    Ok(())
}

/// `aar_iteration_index`: the iteration in progress, -1 when none is.
pub fn current() -> i64 {
    ITERATIONS.current()
}

/// Whether an A/B experiment chooses the policy (the C API's policy calls are refused then).
pub fn ab_running() -> bool {
    state::schedule().is_some()
}
