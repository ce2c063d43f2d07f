//! The iterations of this process and its iteration record (`aar-iterations`): which iteration
//! is in progress, and one row per ended iteration.
//!
//! A row (`aar_record::Iteration`) holds the time, messages and bytes per routing mode (deltas
//! of the per-thread counts), decisions, switches and the counter windows of the engine. Rows
//! wait in a buffer of fixed capacity and are written, as whole lines, when it is full, at a
//! boundary at least a second after the last write, and at exit, so memory stays bounded over
//! any number of iterations and a killed job keeps every row written before the kill. An
//! iteration still open at exit has no end and no row. When to begin and end iterations, and
//! with which policy, is the hooks' business (`iterations`).

use crate::settings::Settings;
use crate::tally::{Totals, CLASS_NAMES};
use crate::trylock::{ForkHeld, Guard, TryLock};
use crate::{diag, job, sys};
use aar_engine::{AbSchedule, EngineStats, Policy};
use aar_record::{Clock, Header, Iteration, RefusedBegin, Source, MAX_ROWS, SHORT_ITERATION_FIX, SHORT_ITERATION_NS};
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::*};
use std::sync::OnceLock;
use std::time::Duration;

/// Rows are written when the buffer is this full (a row is a few hundred bytes).
const BUFFER_BYTES: usize = 64 << 10;
/// Room kept for one more row: longer than any row can be (at most 18 numbers, a
/// [`MAX_LABEL`]-byte label, a policy name and two floats).
const ROW_ROOM: usize = 2048;
const FLUSH_EVERY_NS: u64 = 1_000_000_000;
/// After this many rows, iterations shorter than [`SHORT_ITERATION_NS`] on average are warned of.
const SHORT_CHECK_ROWS: u64 = 1_000;
/// Longest label, in bytes.
pub const MAX_LABEL: usize = 64;
/// The characters a label may hold besides ASCII letters and digits.
pub const LABEL_PUNCTUATION: &str = "-_.:+/=@";

/// The iteration indices, and the record behind a lock.
pub struct Iterations {
    /// Index the next `aar_iteration_begin` gets.
    next: AtomicU64,
    /// The iteration in progress; -1: none.
    current: AtomicI64,
    /// Iterations ended so far (with or without a row written).
    ended: AtomicU64,
    /// Begins refused while the library was starting, per cause ([`RefusedBegin::index`]): each
    /// took its index ([`Self::refuse_begin`]).
    refused: [AtomicU64; RefusedBegin::ALL.len()],
    record: TryLock<Record>,
}

impl Iterations {
    /// No iteration yet, no record.
    pub const fn new() -> Self {
        Self {
            next: AtomicU64::new(0),
            current: AtomicI64::new(-1),
            ended: AtomicU64::new(0),
            refused: [const { AtomicU64::new(0) }; RefusedBegin::ALL.len()],
            record: TryLock::new(Record::new()),
        }
    }

    /// The index of the next iteration the application's markers begin.
    pub fn next_marked(&self) -> u64 {
        self.next.fetch_add(1, Relaxed)
    }

    /// A begin of the application's was refused while the library was starting: the index it
    /// would have had, which it keeps, so that the next begin gets the index it has on the ranks
    /// that started sooner. No iteration is in progress then (none can begin before the start-up
    /// is over), so nothing ends.
    pub fn refuse_begin(&self, why: RefusedBegin) -> u64 {
        self.refused[why.index()].fetch_add(1, Relaxed);
        self.next_marked()
    }

    /// Begins refused while the library was starting ([`Self::refuse_begin`]) for `why`.
    pub fn refused(&self, why: RefusedBegin) -> u64 {
        self.refused[why.index()].load(Relaxed)
    }

    /// Iteration `i` is now in progress; the one it replaces (now ended), if any. The count of
    /// ended iterations is taken sequentially consistent, as the exit handler's start and its read
    /// of the count are (`output::counting`).
    pub fn begin(&self, i: u64) -> Option<u64> {
        let previous = self.current.swap(i64::try_from(i).unwrap_or(i64::MAX), AcqRel);
        let previous = u64::try_from(previous).ok();
        if previous.is_some() {
            self.ended.fetch_add(1, SeqCst);
        }
        previous
    }

    /// No iteration is in progress now; the one that ended, if any (counted as [`Self::begin`]
    /// counts).
    pub fn end(&self) -> Option<u64> {
        let previous = u64::try_from(self.current.swap(-1, AcqRel)).ok();
        if previous.is_some() {
            self.ended.fetch_add(1, SeqCst);
        }
        previous
    }

    /// The iteration in progress, -1 when none is.
    pub fn current(&self) -> i64 {
        self.current.load(Acquire)
    }

    /// Iterations ended so far.
    pub fn ended(&self) -> u64 {
        self.ended.load(SeqCst)
    }

    /// The record, waiting at most `wait` for another thread's boundary.
    pub fn record(&self, wait: Duration) -> Option<Guard<'_, Record>> {
        self.record.try_lock_for(wait)
    }

    /// At exit, when another thread held the record past the exit handler's wait (inside
    /// `fork()`, writing rows to a slow file system): what the summary record can say of the
    /// iteration record without it ([`Record::finish`] says it holding the record). The rows still
    /// buffered are counted unwritten, and from then on no write writes them ([`Record::write`]):
    /// a boundary after the exit handler (an atexit handler's, a thread's once the fork is done)
    /// would otherwise write rows the summary record says were not written, into a file it may
    /// not name. Rows a write in progress took are not counted: they are the file's.
    pub fn unfinished(&self) -> Written {
        let buffered = UNLOCKED.buffered.fetch_or(GIVEN_UP, AcqRel) & !GIVEN_UP;
        Written { file: UNLOCKED.file.get().cloned(), first_policy: None, unwritten_at_exit: Some(buffered) }
    }
}

/// What the exit handler can read of the record without its lock ([`Iterations::unfinished`]),
/// kept by the record's holder as it changes: one process has one record.
struct Unlocked {
    /// The iteration record's file name, once the file is created.
    file: OnceLock<String>,
    /// Rows in the buffer that no write has taken yet; with [`GIVEN_UP`] once the exit handler
    /// counted them unwritten ([`Iterations::unfinished`]).
    buffered: AtomicU64,
}

/// The exit handler counted the rows buffered as unwritten: they stay so.
const GIVEN_UP: u64 = 1 << 63;

static UNLOCKED: Unlocked = Unlocked { file: OnceLock::new(), buffered: AtomicU64::new(0) };

impl ForkHeld for Iterations {
    fn hold_for(&self, timeout: Duration) -> bool {
        self.record.hold_for(timeout)
    }
    unsafe fn release(&self) {
        // SAFETY: forwarded contract.
        unsafe { self.record.release() }
    }
}

/// The clock rows are timed with: the emulator's simulated one when the process has it.
#[derive(Clone, Copy)]
enum RowClock {
    Monotonic,
    Simulated(sys::EmulatorClock),
}

impl RowClock {
    fn now(self) -> u64 {
        match self {
            Self::Monotonic => sys::now_ns(),
            Self::Simulated(clock) => clock.now(),
        }
    }

    fn kind(self) -> Clock {
        match self {
            Self::Monotonic => Clock::Monotonic,
            Self::Simulated(_) => Clock::Simulated,
        }
    }
}

/// The engine's counts at a boundary, for per-iteration deltas.
#[derive(Clone, Copy, Default)]
pub struct EngineMark {
    decisions: u64,
    switches: u64,
    windows_valid: u64,
    latency_us_sum: f64,
    stall_ratio_sum: f64,
}

impl EngineMark {
    /// The counts in `s`.
    pub fn of(s: &EngineStats) -> Self {
        Self {
            decisions: s.decisions,
            switches: s.switches_to_low_latency + s.switches_to_low_stall,
            windows_valid: s.windows_valid,
            latency_us_sum: s.window_latency_us_sum,
            stall_ratio_sum: s.window_stall_ratio_sum,
        }
    }
}

/// Everything measured at one boundary.
pub struct Marks {
    /// [`Record::now`].
    pub t_ns: u64,
    /// The counts of every thread.
    pub totals: Totals,
    /// `None`: another thread held the engine.
    pub engine: Option<EngineMark>,
}

struct Open {
    i: u64,
    policy: Policy,
    label: Option<String>,
    start_ns: u64,
    totals: Totals,
}

enum Output {
    /// No `AAR_OUTPUT_DIR`, a rank `AAR_OUTPUT_RANKS` leaves out, or not initialised.
    Off,
    /// The file is created on the first write, with this header (completed then).
    Pending {
        path: String,
        name: String,
        header: Box<Header>,
    },
    Open(sys::OwnFile),
    /// A write failed (warned once): rows are no longer kept.
    Failed,
}

/// The rows not yet written and where they go.
pub struct Record {
    open: Option<Open>,
    /// A label given while no iteration was in progress, for the next one to begin, and the
    /// iterations ended then ([`Iterations::ended`]): a begin that finds more ended since follows
    /// a begin the record missed, and the label was that iteration's.
    pending_label: Option<(String, u64)>,
    /// The engine's counts at the last boundary that could read them.
    engine: Option<EngineMark>,
    /// An iteration ended without the engine's counts: the next row carries them.
    carrying: bool,
    clock: Option<RowClock>,
    /// The policy of the first iteration: the header's one policy when there is no A/B.
    first_policy: Option<Policy>,
    rows: Vec<u8>,
    output: Output,
    last_write_ns: u64,
    file_name: Option<String>,
    /// Rows kept so far, and the start of the first.
    kept: u64,
    first_start_ns: u64,
}

/// What the per-rank summary record says of the iteration record.
pub struct Written {
    /// The iteration record's file name, if one was created.
    pub file: Option<String>,
    /// The policy of the first iteration (the one policy of a run without A/B).
    pub first_policy: Option<Policy>,
    /// Rows buffered that the exit handler could not write, another thread holding the record,
    /// and that are never written ([`Iterations::unfinished`]); `None`: it held the record and
    /// wrote them (or had none to).
    pub unwritten_at_exit: Option<u64>,
}

impl Written {
    /// Nothing written (a fork child, whose buffer holds the parent's rows).
    pub const NONE: Written = Written { file: None, first_policy: None, unwritten_at_exit: None };
}

impl Record {
    const fn new() -> Self {
        Self {
            open: None,
            pending_label: None,
            engine: None,
            carrying: false,
            clock: None,
            first_policy: None,
            rows: Vec::new(),
            output: Output::Off,
            last_write_ns: 0,
            file_name: None,
            kept: 0,
            first_start_ns: 0,
        }
    }

    /// Write rows in folder `dir` (the file is created on the first write). The header says what
    /// the rows are of: `schedule`'s policies, or the first iteration's one policy.
    pub fn write_to(&mut self, dir: &str, settings: &Settings, schedule: Option<&AbSchedule>) {
        let experiment = job::experiment();
        let name = aar_record::iterations_file_name(experiment.as_deref(), job::rank(), sys::pid());
        let path = Path::new(dir).join(&name).to_string_lossy().into_owned();
        let (policies, order) = match schedule {
            Some(s) => (s.policies().iter().map(|p| p.name().to_string()).collect(), s.order().to_string()),
            None => (Vec::new(), "single".to_string()),
        };
        let header = Header {
            format: aar_record::FORMAT.to_string(),
            source: Source::Job,
            experiment: experiment.unwrap_or_else(|| aar_record::NO_JOB.to_string()),
            rank: job::rank(),
            nranks: job::nranks(),
            output_ranks: settings.output_ranks.clone(),
            host: Some(sys::hostname()),
            pid: Some(sys::pid()),
            clock: Clock::Monotonic,
            policies,
            order,
            boundary: settings.ab_boundary.to_string(),
            modes: CLASS_NAMES.iter().map(|m| m.to_string()).collect(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: Some(env!("AAR_GIT_REVISION").to_string()),
            command_line: job::command_line(),
        };
        self.output = Output::Pending { path, name, header: Box::new(header) };
    }

    fn clock(&mut self) -> RowClock {
        *self.clock.get_or_insert_with(|| sys::emulator_clock().map_or(RowClock::Monotonic, RowClock::Simulated))
    }

    /// The time rows are stamped with.
    pub fn now(&mut self) -> u64 {
        self.clock().now()
    }

    /// Iteration `i` begins, under `policy`; `ended`: [`Iterations::ended`] now.
    pub fn begin(&mut self, i: u64, policy: Policy, m: &Marks, ended: u64) {
        if m.engine.is_some() && !self.carrying {
            // Decisions made between two iterations belong to neither.
            self.engine = m.engine;
        }
        let label = self.pending_label.take().filter(|(_, then)| *then == ended).map(|(label, _)| label);
        self.first_policy.get_or_insert(policy);
        self.open = Some(Open { i, policy, label, start_ns: m.t_ns, totals: m.totals.clone() });
    }

    /// End iteration `i` (if it is the one open here) and keep its row.
    pub fn end(&mut self, i: u64, m: &Marks) {
        let Some(open) = self.open.take_if(|o| o.i == i) else { return };
        let (mut decisions, mut switches, mut latency_us, mut stall_ratio) = (0, 0, None, None);
        match (m.engine, self.engine) {
            (Some(now), Some(before)) => {
                decisions = now.decisions.saturating_sub(before.decisions);
                switches = now.switches.saturating_sub(before.switches);
                let windows = now.windows_valid.saturating_sub(before.windows_valid);
                if windows > 0 {
                    latency_us = Some((now.latency_us_sum - before.latency_us_sum) / windows as f64);
                    stall_ratio = Some((now.stall_ratio_sum - before.stall_ratio_sum) / windows as f64);
                }
                self.engine = Some(now);
                self.carrying = false;
            }
            (Some(now), None) => self.engine = Some(now),
            (None, _) => self.carrying = true,
        }
        let delta = |end: &[u64], start: &[u64]| end.iter().zip(start).map(|(e, s)| e.wrapping_sub(*s)).collect();
        let (end, start) = (m.totals.all(), open.totals.all());
        let row = Iteration {
            i,
            policy: open.policy.name().to_string(),
            label: open.label,
            start_ns: open.start_ns,
            end_ns: m.t_ns.max(open.start_ns),
            messages: delta(&end.messages, &start.messages),
            bytes: delta(&end.bytes, &start.bytes),
            decisions,
            switches,
            latency_us,
            stall_ratio,
        };
        self.keep(&row);
    }

    /// Label the iteration in progress (`current`, [`Iterations::current`]), or the next one
    /// when none is (`ended`: [`Iterations::ended`]). An iteration open here that is not the one
    /// in progress was ended by a boundary that found the record held: it has no row, and takes
    /// no label. An iteration in progress not open here was begun so: the label has no row to go to.
    pub fn label(&mut self, label: String, current: i64, ended: u64) {
        self.open.take_if(|o| i64::try_from(o.i).unwrap_or(i64::MAX) != current);
        match self.open.as_mut() {
            Some(open) => open.label = Some(label),
            None if current < 0 => self.pending_label = Some((label, ended)),
            None => {}
        }
    }

    /// Keep a row to write, up to [`MAX_ROWS`]: a thousand ranks that end an iteration every few
    /// microseconds (a boundary on a solver's every `MPI_Allreduce`) would otherwise write hundreds
    /// of MB a second each, and a long experiment fill the job's quota; far more rows than a
    /// comparison of policies needs.
    fn keep(&mut self, row: &Iteration) {
        if !matches!(self.output, Output::Pending { .. } | Output::Open(_)) || self.kept >= MAX_ROWS {
            return;
        }
        self.kept += 1;
        match self.kept {
            1 => self.first_start_ns = row.start_ns,
            SHORT_CHECK_ROWS => warn_if_short(row.end_ns.saturating_sub(self.first_start_ns) / SHORT_CHECK_ROWS),
            MAX_ROWS => diag::warn(&format!(
                "the iteration record holds the first {MAX_ROWS} iterations; later ones are counted in the summary \
                 record but not written, so that no rank's rows fill the file system. Mark longer iterations to \
                 compare policies over a longer run."
            )),
            _ => {}
        }
        if self.rows.capacity() < BUFFER_BYTES {
            self.rows.reserve_exact(BUFFER_BYTES - self.rows.len());
        }
        if self.rows.len() + ROW_ROOM > BUFFER_BYTES {
            self.write();
        }
        let before = self.rows.len();
        match aar_record::write_line(&mut self.rows, row) {
            Ok(()) => {
                UNLOCKED.buffered.fetch_add(1, Release);
            }
            Err(_) => self.rows.truncate(before),
        }
    }

    /// Write the buffered rows (whole lines, one write), creating the file with its header first;
    /// none once the exit handler counted them unwritten ([`Iterations::unfinished`]).
    fn write(&mut self) {
        self.last_write_ns = sys::now_ns();
        if self.rows.is_empty() {
            return;
        }
        // The rows leave the count as this write takes them, unless the exit handler counted them.
        if UNLOCKED.buffered.fetch_update(AcqRel, Acquire, |n| (n & GIVEN_UP == 0).then_some(0)).is_err() {
            self.rows = Vec::new();
            self.output = Output::Off;
            return;
        }
        let result = match std::mem::replace(&mut self.output, Output::Failed) {
            Output::Pending { path, name, mut header } => {
                header.clock = self.clock.unwrap_or(RowClock::Monotonic).kind();
                if header.policies.is_empty() {
                    // Without A/B its one policy is the first iteration's (what was in force:
                    // `auto` without counters runs as the fixed low-latency mode); an application
                    // that changes the policy with the C API later has rows with other names.
                    header.policies = vec![self.first_policy.unwrap_or(Policy::Auto).name().to_string()];
                }
                // The header and the first rows in one write. Where the file system takes only
                // part of it (the file size limit), the rows that fit stay, cut back to whole
                // lines; a file without its whole header is no record, and goes.
                let mut head = Vec::with_capacity(1024 + self.rows.len());
                let created =
                    aar_record::write_line(&mut head, &*header).map_err(std::io::Error::from).and_then(|()| {
                        let header_bytes = head.len() as u64;
                        head.extend_from_slice(&self.rows);
                        let mut f = sys::create_new(&path)?;
                        match f.append_lines(&head) {
                            Ok(()) => Ok(Ok(f)),
                            Err(e) if f.len() >= header_bytes => Ok(Err(e)),
                            Err(e) => {
                                let _ = std::fs::remove_file(&path);
                                Err(e)
                            }
                        }
                    });
                match created {
                    Ok(Ok(f)) => {
                        let _ = UNLOCKED.file.set(name.clone());
                        Ok((f, Some(name)))
                    }
                    Ok(Err(e)) => {
                        let _ = UNLOCKED.file.set(name.clone());
                        self.file_name = Some(name);
                        Err((format!("writing the iteration record {path} failed ({e})"), e))
                    }
                    Err(e) => Err((format!("cannot create the iteration record {path} ({e})"), e)),
                }
            }
            Output::Open(mut f) => match f.append_lines(&self.rows) {
                Ok(()) => Ok((f, None)),
                Err(e) => Err((format!("writing the iteration record failed ({e})"), e)),
            },
            other => {
                self.output = other;
                self.rows.clear();
                return;
            }
        };
        self.rows.clear();
        match result {
            Ok((f, name)) => {
                self.output = Output::Open(f);
                if name.is_some() {
                    self.file_name = name;
                }
            }
            Err((why, e)) => {
                self.rows = Vec::new();
                diag::error_output_write(&format!(
                    "{why}; no more iteration rows are written, the application continues. {}",
                    diag::write_fix(&e, "AAR_OUTPUT_DIR")
                ));
            }
        }
    }

    /// Write the rows if the last write is a second old.
    pub fn write_if_due(&mut self) {
        if sys::now_ns().saturating_sub(self.last_write_ns) >= FLUSH_EVERY_NS || self.last_write_ns == 0 {
            self.write();
        }
    }

    /// At exit: write the rows still buffered (the iteration in progress, if any, has no end and
    /// is dropped), and say what was written.
    pub fn finish(&mut self) -> Written {
        self.write();
        self.output = Output::Off;
        Written { file: self.file_name.clone(), first_policy: self.first_policy, unwritten_at_exit: None }
    }
}

/// Iterations `mean_ns` long on average: each ends with a row, so from every rank hundreds of
/// bytes each time, and each is too short to show what a routing policy does.
fn warn_if_short(mean_ns: u64) {
    if mean_ns >= SHORT_ITERATION_NS {
        return;
    }
    let per_second = 1e9 / mean_ns.max(1) as f64;
    diag::warn(&format!(
        "iterations last {:.1} us on average over the first {SHORT_CHECK_ROWS}: each ends with a row of the \
         iteration record, about {:.0} rows a second from each rank (after {MAX_ROWS} iterations rows are no \
         longer written), and {SHORT_ITERATION_FIX}",
        mean_ns as f64 / 1e3,
        per_second
    ));
}

/// A label is short and safe anywhere (a file, a shell, a plot): ASCII letters, digits and
/// `-_.:+/=@`, 1 to [`MAX_LABEL`] bytes.
pub fn valid_label(label: &[u8]) -> bool {
    (1..=MAX_LABEL).contains(&label.len())
        && label.iter().all(|&b| b.is_ascii_alphanumeric() || LABEL_PUNCTUATION.as_bytes().contains(&b))
}

#[cfg(test)]
mod tests {
    use super::valid_label;

    #[test]
    fn labels() {
        for good in ["isolated", "congested", "a", "run-2.b_c:d+e/f=g@h", &"x".repeat(64)] {
            assert!(valid_label(good.as_bytes()), "{good}");
        }
        for bad in ["", "two words", "quote\"", "new\nline", "é", &"x".repeat(65), "a\0b"] {
            assert!(!valid_label(bad.as_bytes()), "{bad:?}");
        }
    }
}
