//! Iterations and A/B experiments.
//!
//! Iterations are marked by the application (`aar_iteration_begin`/`_end`) or by every N-th
//! call of an MPI function (see [`crate::mpi`]). With `AAR_AB`, the policy of iteration i is a
//! pure function of i (the engine's A/B schedule), so every rank uses the same policy in the same
//! iteration without communicating. The policy changes only at boundaries, in the control word
//! every post loads anyway: posts gain no lock, allocation or system call. Before the first
//! iteration the policy is iteration 0's; after an end it stays until the next begin.
//!
//! Each ended iteration becomes one row (`aar_record::Iteration`): time, messages and bytes
//! per routing mode (deltas of the per-thread counters), decisions, switches and the counter
//! windows of the engine. Rows wait in a buffer of fixed capacity and are written, as whole
//! lines, when it is full, at a boundary at least a second after the last write, and at exit,
//! so memory stays bounded over any number of iterations and a killed job keeps every row
//! written before the kill. An iteration still open at exit has no end and no row.

use crate::settings::{Boundary, Settings};
use crate::stats::{self, CLASS_NAMES};
use crate::trylock::TryLock;
use crate::{control, diag, output, runtime, sys, trace};
use aar_engine::{AbSchedule, EngineStats, Policy};
use aar_record::{Clock, Header, Iteration, Source};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::*};
use std::sync::OnceLock;
use std::time::Duration;

/// Index the next `aar_iteration_begin` gets.
static NEXT: AtomicU64 = AtomicU64::new(0);
/// The iteration in progress; -1: none.
static CURRENT: AtomicI64 = AtomicI64::new(-1);
/// Iterations ended so far (with or without a row written).
static ENDED: AtomicU64 = AtomicU64::new(0);
static SCHEDULE: OnceLock<AbSchedule> = OnceLock::new();
static STATE: TryLock<State> = TryLock::new(State::new());

/// Rows are written when the buffer is this full (a row is a few hundred bytes).
const BUFFER_BYTES: usize = 64 << 10;
/// Room kept for one more row: longer than any row can be (at most 18 numbers, a
/// [`MAX_LABEL`]-byte label, a policy name and two floats).
const ROW_ROOM: usize = 2048;
const FLUSH_EVERY_NS: u64 = 1_000_000_000;
/// Longest label, in bytes.
pub const MAX_LABEL: usize = 64;
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

/// The clock rows are timed with: the emulator's simulated one when the process has it.
#[derive(Clone, Copy)]
enum RowClock {
    Monotonic,
    Simulated(sys::ClockFn),
}

impl RowClock {
    fn now(self) -> u64 {
        match self {
            Self::Monotonic => sys::now_ns(),
            // SAFETY: the emulator's `unsigned long long aar_emu_clock_ns(void)`, found by name.
            Self::Simulated(f) => unsafe { f() },
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
struct EngineMark {
    decisions: u64,
    switches: u64,
    windows_valid: u64,
    latency_us_sum: f64,
    stall_ratio_sum: f64,
}

impl EngineMark {
    fn of(s: &EngineStats) -> Self {
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
struct Marks {
    t_ns: u64,
    totals: stats::Totals,
    /// `None`: another thread held the decider.
    engine: Option<EngineMark>,
}

struct Open {
    i: u64,
    policy: Policy,
    label: Option<String>,
    start_ns: u64,
    totals: stats::Totals,
}

enum Output {
    /// No `AAR_OUTPUT_DIR`, a rank `AAR_OUTPUT_RANKS` leaves out, or not initialised.
    Off,
    /// The file is created on the first write.
    Pending {
        path: String,
        name: String,
    },
    Open(File),
    /// A write failed (warned once): rows are no longer kept.
    Failed,
}

struct State {
    open: Option<Open>,
    /// A label given while no iteration was open: for the next one.
    pending_label: Option<String>,
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
}

impl State {
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
        }
    }

    fn clock(&mut self) -> RowClock {
        *self.clock.get_or_insert_with(|| sys::emulator_clock().map_or(RowClock::Monotonic, RowClock::Simulated))
    }

    /// Close the counter window, then read the time and the counts, in that order, so the
    /// window ends inside the iteration that ends here.
    fn marks(&mut self) -> Marks {
        let engine = runtime::decider_within(DECIDER_WAIT).and_then(|mut slot| {
            let d = slot.as_mut()?;
            if d.engine.window_open() {
                d.read_and_observe();
            }
            Some(EngineMark::of(d.engine.stats()))
        });
        let t_ns = self.clock().now();
        Marks { t_ns, totals: stats::totals(), engine }
    }

    fn begin(&mut self, i: u64, policy: Policy, m: &Marks) {
        if m.engine.is_some() && !self.carrying {
            // Decisions made between two iterations belong to neither.
            self.engine = m.engine;
        }
        let label = self.pending_label.take();
        self.first_policy.get_or_insert(policy);
        self.open = Some(Open { i, policy, label, start_ns: m.t_ns, totals: m.totals.clone() });
    }

    /// End iteration `i` (if it is the one open here) and keep its row.
    fn end(&mut self, i: u64, m: &Marks) {
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
        let row = Iteration {
            i,
            policy: open.policy.name().to_string(),
            label: open.label,
            start_ns: open.start_ns,
            end_ns: m.t_ns.max(open.start_ns),
            messages: delta(&m.totals.messages, &open.totals.messages),
            bytes: delta(&m.totals.bytes, &open.totals.bytes),
            decisions,
            switches,
            latency_us,
            stall_ratio,
        };
        self.keep(&row);
    }

    fn keep(&mut self, row: &Iteration) {
        if !matches!(self.output, Output::Pending { .. } | Output::Open(_)) {
            return;
        }
        if self.rows.capacity() < BUFFER_BYTES {
            self.rows.reserve_exact(BUFFER_BYTES - self.rows.len());
        }
        if self.rows.len() + ROW_ROOM > BUFFER_BYTES {
            self.write();
        }
        let before = self.rows.len();
        if aar_record::write_line(&mut self.rows, row).is_err() {
            self.rows.truncate(before);
        }
    }

    /// Write the buffered rows (whole lines, one write), creating the file with its header first.
    fn write(&mut self) {
        self.last_write_ns = sys::now_ns();
        if self.rows.is_empty() {
            return;
        }
        let result = match std::mem::replace(&mut self.output, Output::Failed) {
            Output::Pending { path, name } => {
                let clock = self.clock.unwrap_or(RowClock::Monotonic);
                let first_policy = self.first_policy.unwrap_or(Policy::Auto);
                let rows = &self.rows;
                let create = || -> std::io::Result<File> {
                    let mut f = trace::create_new(&path)?;
                    // The header and the first rows in one write: the file is never seen empty.
                    let mut head = Vec::with_capacity(1024 + rows.len());
                    aar_record::write_line(&mut head, &header(clock, first_policy))?;
                    head.extend_from_slice(rows);
                    f.write_all(&head)?;
                    Ok(f)
                };
                create()
                    .map(|f| (f, Some(name)))
                    .map_err(|e| format!("cannot create the iteration record {path} ({e})"))
            }
            Output::Open(mut f) => match f.write_all(&self.rows) {
                Ok(()) => Ok((f, None)),
                Err(e) => Err(format!("writing the iteration record failed ({e})")),
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
            Err(why) => {
                self.rows = Vec::new();
                if !output::dir_warned() {
                    output::set_dir_warned();
                    diag::warn(&format!(
                        "{why}; no more iteration rows are written, the application continues. Point AAR_OUTPUT_DIR at a writable folder with room."
                    ));
                }
            }
        }
    }

    fn write_if_due(&mut self) {
        if sys::now_ns().saturating_sub(self.last_write_ns) >= FLUSH_EVERY_NS || self.last_write_ns == 0 {
            self.write();
        }
    }
}

/// The first line of the iteration record. Without A/B its one policy is the first iteration's
/// (what was in force: `auto` without counters runs as the fixed low-latency mode); an
/// application that changes the policy with the C API later has rows with other names.
fn header(clock: RowClock, first_policy: Policy) -> Header {
    let settings = runtime::settings();
    let (policies, order) = match SCHEDULE.get() {
        Some(s) => (s.policies().iter().map(|p| p.name().to_string()).collect(), s.order().to_string()),
        None => (vec![first_policy.name().to_string()], "single".to_string()),
    };
    Header {
        format: aar_record::FORMAT.to_string(),
        source: Source::Job,
        experiment: output::experiment(),
        rank: diag::rank().unwrap_or(0),
        nranks: diag::nranks(),
        host: Some(sys::hostname()),
        pid: Some(sys::pid()),
        clock: clock.kind(),
        policies,
        order,
        boundary: settings.map_or(Boundary::Markers, |s| s.ab_boundary).to_string(),
        modes: CLASS_NAMES.iter().map(|m| m.to_string()).collect(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: Some(env!("AAR_GIT_REVISION").to_string()),
        command_line: std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect(),
    }
}

/// At initialisation: the schedule, and whether this process writes rows.
pub fn init(settings: &Settings) {
    if let Some(s) = settings.ab_schedule() {
        let _ = SCHEDULE.set(s);
    }
    if !output::writes_records(settings) {
        return;
    }
    let Some(dir) = settings.output_dir.as_deref() else { return };
    let name = aar_record::iterations_file_name(output::job_id().as_deref(), diag::rank(), sys::pid());
    let path = Path::new(dir).join(&name).to_string_lossy().into_owned();
    if let Some(mut st) = STATE.try_lock_for(LOCK_WAIT) {
        st.output = Output::Pending { path, name };
    }
}

/// The policy of iteration `i`: the schedule's, or the one in force without A/B.
fn policy_of(i: u64) -> Policy {
    match SCHEDULE.get() {
        Some(s) => s.policy_at(i),
        None => control::policy(runtime::control()),
    }
}

/// Iteration `i` begins (and the one in progress, if any, ends): from a marker or an MPI
/// boundary.
pub fn boundary(i: u64) {
    let previous = CURRENT.swap(i64::try_from(i).unwrap_or(i64::MAX), AcqRel);
    if previous >= 0 {
        ENDED.fetch_add(1, Relaxed);
    }
    let policy = policy_of(i);
    // A fork child writes no rows (its buffer holds the parent's); its policy still follows.
    let state = if runtime::is_fork_child() { None } else { STATE.try_lock_for(LOCK_WAIT) };
    let Some(mut st) = state else {
        switch(policy);
        return;
    };
    let m = st.marks();
    switch(policy);
    if previous >= 0 {
        st.end(previous as u64, &m);
    }
    st.begin(i, policy, &m);
    st.write_if_due();
}

fn switch(policy: Policy) {
    if SCHEDULE.get().is_some() {
        runtime::switch_policy(policy);
    }
}

/// The library is initialised and not killed by `AAR_DISABLE`: its settings.
fn ready() -> Result<&'static Settings, Refused> {
    match runtime::wait_ready() {
        Some(s) if !s.disabled => Ok(s),
        _ => Err(Refused::Disabled),
    }
}

/// `aar_iteration_begin`.
pub fn api_begin() -> Result<(), Refused> {
    if ready()?.ab_boundary != Boundary::Markers {
        return Err(Refused::Invalid);
    }
    boundary(NEXT.fetch_add(1, Relaxed));
    Ok(())
}

/// `aar_iteration_end`.
pub fn api_end() -> Result<(), Refused> {
    if ready()?.ab_boundary != Boundary::Markers {
        return Err(Refused::Invalid);
    }
    let i = CURRENT.swap(-1, AcqRel);
    if i < 0 {
        return Err(Refused::Invalid);
    }
    ENDED.fetch_add(1, Relaxed);
    if runtime::is_fork_child() {
        return Ok(());
    }
    if let Some(mut st) = STATE.try_lock_for(LOCK_WAIT) {
        let m = st.marks();
        st.end(i as u64, &m);
        st.write_if_due();
    }
    Ok(())
}

/// A label is short and safe anywhere (a file, a shell, a plot): ASCII letters, digits and
/// `-_.:+/=@`, 1 to [`MAX_LABEL`] bytes.
pub fn valid_label(label: &[u8]) -> bool {
    (1..=MAX_LABEL).contains(&label.len())
        && label.iter().all(|&b| b.is_ascii_alphanumeric() || b"-_.:+/=@".contains(&b))
}

/// `aar_iteration_label`: the iteration in progress, or the next one when none is.
pub fn api_label(label: &[u8]) -> Result<(), Refused> {
    ready()?;
    if !valid_label(label) {
        return Err(Refused::Invalid);
    }
    if runtime::is_fork_child() {
        return Ok(());
    }
    let mut st = STATE.try_lock_for(LOCK_WAIT).ok_or(Refused::Invalid)?;
    let label = String::from_utf8_lossy(label).into_owned();
    match st.open.as_mut() {
        Some(open) => open.label = Some(label),
        None => st.pending_label = Some(label),
    }
    Ok(())
}

/// `aar_iteration_index`: the iteration in progress, -1 when none is.
pub fn current() -> i64 {
    CURRENT.load(Acquire)
}

/// Whether an A/B experiment chooses the policy (the C API's policy calls are refused then).
pub fn ab_running() -> bool {
    SCHEDULE.get().is_some()
}

/// What the per-rank summary record says of iterations.
pub struct Summary {
    /// Iterations ended.
    pub iterations: u64,
    /// The iteration record's file name, if one was created.
    pub file: Option<String>,
    /// The policy of the first iteration (the one policy of a run without A/B).
    pub first_policy: Option<Policy>,
}

/// At exit: write the rows still buffered (the iteration in progress, if any, has no end and
/// is dropped).
pub fn finish() -> Summary {
    let mut summary = Summary { iterations: ENDED.load(Relaxed), file: None, first_policy: None };
    if runtime::is_fork_child() {
        return summary;
    }
    if let Some(mut st) = STATE.try_lock_for(Duration::from_millis(200)) {
        st.write();
        summary.file = st.file_name.clone();
        summary.first_policy = st.first_policy;
        st.output = Output::Off;
    }
    summary
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
