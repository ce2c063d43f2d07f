//! Process-wide state: lazy initialisation, the control word, the cumulative-size accumulator
//! and the decider (engine + counters) behind a lock that is only ever *tried*, so no post can
//! block on another.

use crate::control::{self, FAST, READY};
use crate::papi::Papi;
use crate::settings::Settings;
use crate::trylock::{Guard, TryLock};
use crate::{diag, iterations, mpi, output, stats, sys, trace};
use aar_engine::{CounterSample, Decision, Engine, Message, Policy, Window, WindowOutcome};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*};
use std::sync::OnceLock;

/// The control word every post loads (see [`control`]).
pub static CONTROL: AtomicU32 = AtomicU32::new(0);
/// Bytes since the last decision. Updated with a relaxed load and store, not an atomic add:
/// concurrent posts may lose a few bytes, which only delays a decision slightly.
static CUMULATIVE: AtomicU64 = AtomicU64::new(0);
static THRESHOLD: AtomicU64 = AtomicU64::new(u64::MAX);

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const DONE: u8 = 2;
static INIT: AtomicU8 = AtomicU8::new(UNINIT);

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// Set in a fork child until its own state is made (see `fork`).
static FORKED: AtomicBool = AtomicBool::new(false);
/// This process is a fork child of the one that loaded the library.
static FORK_CHILD: AtomicBool = AtomicBool::new(false);

pub fn is_fork_child() -> bool {
    FORK_CHILD.load(Relaxed)
}
static DECIDER: TryLock<Option<Decider>> = TryLock::new(None);

/// The latest valid window, for trace lines written without the decider lock (f64 bits).
static LAST_LATENCY: AtomicU64 = AtomicU64::new(u64::MAX);
static LAST_STALL: AtomicU64 = AtomicU64::new(u64::MAX);

/// Counter reads are timed on one decision in this many, so timing costs almost nothing.
const TIMING_SAMPLE: u64 = 16;

pub struct Decider {
    pub engine: Engine,
    counters: Option<Papi>,
    pub counter_reads: u64,
    pub counter_read_failures: u64,
    pub timed_decisions: u64,
    pub timed_decision_ns: u64,
    pub init_ns: u64,
    pub counters_library: Option<String>,
}

pub fn settings() -> Option<&'static Settings> {
    SETTINGS.get()
}

#[inline]
pub fn control() -> u32 {
    CONTROL.load(Acquire)
}

/// Add `bytes` to the accumulator; `true` if the threshold is now crossed (the accumulator then
/// restarts from zero), `false` if the message stays below it.
#[inline]
pub fn accumulate(bytes: u64) -> bool {
    let sum = CUMULATIVE.load(Relaxed).saturating_add(bytes);
    if sum <= THRESHOLD.load(Relaxed) {
        CUMULATIVE.store(sum, Relaxed);
        false
    } else {
        CUMULATIVE.store(0, Relaxed);
        true
    }
}

/// `AAR_DISABLE` (or a failed initialisation): every call goes straight to the real function.
#[inline]
pub fn inert() -> bool {
    INIT.load(Acquire) == DONE && CONTROL.load(Acquire) & READY == 0
}

/// Initialise once, on the first intercepted call. Callers arriving while another thread
/// initialises do not wait: they see a control word without READY and forward untouched.
#[inline]
pub fn ensure_init() {
    if INIT.load(Acquire) != DONE {
        init_once();
    }
}

#[cold]
#[inline(never)]
fn init_once() {
    if INIT.compare_exchange(UNINIT, INITIALIZING, AcqRel, Acquire).is_ok() {
        // A panic here must not reach the application (callers are C): the library then stays
        // a pass-through for this process.
        if std::panic::catch_unwind(init).is_err() {
            CONTROL.store(0, Release);
            diag::error(
                "internal error (a panic) while initialising; every call is forwarded untouched. Please report it.",
            );
        }
        INIT.store(DONE, Release);
    }
}

fn init() {
    let t0 = sys::now_ns();
    let lookup = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
    let (settings, warnings) = Settings::from_lookup(&lookup);
    diag::detect_rank();
    diag::install_panic_hook();
    diag::init_logging(settings.log);
    for w in &warnings {
        diag::warn(&w.message);
    }
    let settings = SETTINGS.get_or_init(|| settings);
    mpi::set_boundary((!settings.disabled).then_some(settings.ab_boundary));
    if settings.disabled {
        tracing::info!("AAR_DISABLE is set: every call is forwarded untouched");
        return;
    }
    let mut engine_cfg = settings.engine.clone();
    let (counters, counters_library) = match Papi::open(settings.papi_library.as_deref(), &settings.papi_events) {
        Ok(opened) => {
            opened.notes.iter().for_each(|n| diag::warn(n));
            (Some(opened.papi), Some(opened.library))
        }
        Err(why) => {
            diag::warn(&counters_unavailable(&why.0, &mut engine_cfg));
            (None, None)
        }
    };
    let mut decider = Decider {
        engine: Engine::new(engine_cfg),
        counters,
        counter_reads: 0,
        counter_read_failures: 0,
        timed_decisions: 0,
        timed_decision_ns: 0,
        init_ns: 0,
        counters_library,
    };
    decider.read_and_observe();
    let policy = decider.engine.config().policy;
    let tracing = trace::open(settings.trace.as_deref());
    output::check_output_dir(settings.output_dir.as_deref());
    iterations::init(settings);
    THRESHOLD.store(settings.engine.threshold_bytes, Relaxed);
    decider.init_ns = sys::now_ns().saturating_sub(t0);
    // Nobody else can hold it yet: posts see READY only after the store below.
    if let Some(mut slot) = DECIDER.try_lock_for(std::time::Duration::from_secs(1)) {
        *slot = Some(decider);
    }
    if !sys::at_exit(output::at_exit) {
        diag::warn("could not register the exit handler; no record or summary will be written");
    }
    if !crate::fork::install() {
        diag::warn("could not register the fork handlers; a forked child that sends on the network may share the parent's counters and records");
    }
    CONTROL.store(control::word(policy, settings.engine.low_latency_mode, true, true, tracing), Release);
    tracing::debug!(?policy, "aar initialised");
}

/// The warning for missing counters, and the fallback: automatic routing needs counters, so
/// it becomes the fixed low-latency mode.
fn counters_unavailable(why: &str, cfg: &mut aar_engine::EngineConfig) -> String {
    // In an A/B experiment the schedule owns the policy: an `auto` iteration without counters
    // has no window to decide from and routes like a message below the threshold.
    if let Some(ab) = SETTINGS.get().and_then(|s| s.ab.as_ref()) {
        let m = cfg.low_latency_mode;
        return if ab.0.contains(&Policy::Auto) {
            format!(
                "{why}. The A/B policy auto needs the NIC counters: in its iterations every adaptive message uses {m}; \
                 the other policies are unaffected. Load PAPI (e.g. module load papi), or set AAR_PAPI_LIBRARY or AAR_PAPI_EVENTS."
            )
        } else {
            format!("{why}. Routing is unaffected (no A/B policy is auto); records will carry no counter windows.")
        };
    }
    match cfg.policy {
        Policy::Auto => {
            let m = cfg.low_latency_mode;
            cfg.policy = Policy::Fixed(m);
            format!(
                "{why}. Automatic routing needs the NIC counters, so every adaptive message now uses {m} (fixed). \
                 Load PAPI (e.g. module load papi), set AAR_PAPI_LIBRARY or AAR_PAPI_EVENTS, or choose a mode with AAR_MODE."
            )
        }
        _ => format!("{why}. Routing is unaffected (AAR_MODE is not auto); records will carry no counter windows."),
    }
}

impl Decider {
    /// Read the counters (after a send) and give them to the engine.
    pub fn read_and_observe(&mut self) {
        let Some(papi) = self.counters.as_mut() else { return };
        match papi.read() {
            Ok(sample) => {
                self.counter_reads += 1;
                self.observe(sample);
            }
            Err(why) => {
                self.counter_read_failures += 1;
                self.counters = None;
                let mut cfg = self.engine.config().clone();
                let line = counters_unavailable(&why, &mut cfg);
                self.engine.set_policy(cfg.policy);
                update_control(|w| control::with(w, Some(cfg.policy), None, None));
                diag::warn(&line);
            }
        }
    }

    fn observe(&mut self, sample: CounterSample) {
        if let WindowOutcome::Valid(Window { latency_us, stall_ratio }) = self.engine.observe(sample) {
            LAST_LATENCY.store(latency_us.to_bits(), Relaxed);
            LAST_STALL.store(stall_ratio.to_bits(), Relaxed);
        }
    }

    /// Decide for a message that crossed the threshold, under the policy of control word `w`.
    pub fn decide(&mut self, msg: &Message, in_alltoall: bool, w: u32) -> Decision {
        let policy = control::policy(w);
        if self.engine.config().policy != policy {
            self.engine.set_policy(policy);
        }
        self.engine.on_threshold_crossed(msg, in_alltoall)
    }

    /// Counters after the send, timing one decision in [`TIMING_SAMPLE`].
    pub fn after_send(&mut self, started_ns: Option<u64>) {
        self.read_and_observe();
        if let Some(t0) = started_ns {
            self.timed_decisions += 1;
            self.timed_decision_ns += sys::now_ns().saturating_sub(t0);
        }
    }

    pub fn should_time(&self) -> bool {
        self.engine.stats().decisions.is_multiple_of(TIMING_SAMPLE)
    }
}

pub fn decider_lock() -> &'static TryLock<Option<Decider>> {
    &DECIDER
}

/// Called in a fork child (see `fork`): only flags, the work is done by
/// [`after_fork_in_child`] on the child's next intercepted call or at its exit.
pub fn forked() {
    FORK_CHILD.store(true, Relaxed);
    FORKED.store(true, Relaxed);
    // Every post takes the slow path until the child's own state exists.
    let _ = CONTROL.fetch_and(!FAST, AcqRel);
}

/// Give a fork child its own statistics, counters and trace (once, on its first slow path).
#[inline]
pub fn after_fork_in_child() {
    if FORKED.load(Relaxed) {
        become_fork_child();
    }
}

#[cold]
#[inline(never)]
fn become_fork_child() {
    if !FORKED.swap(false, AcqRel) {
        return;
    }
    stats::reset_in_child();
    let Some(settings) = SETTINGS.get() else { return };
    if let Some(mut slot) = DECIDER.try_lock_for(std::time::Duration::from_millis(200)) {
        if let Some(d) = slot.as_mut() {
            d.engine.reset_stats();
            (d.counter_reads, d.counter_read_failures, d.timed_decisions, d.timed_decision_ns) = (0, 0, 0, 0);
            // The inherited event set may still read (process-local events do); if not, the
            // read failure path falls back, with one warning, as anywhere else.
            d.read_and_observe();
        }
    }
    let tracing = trace::reopen_in_child(settings.trace.as_deref());
    update_control(|w| control::with(w, None, None, Some(tracing)));
}

/// The decider, if no other thread is using it right now (`None` inside before init).
#[inline]
pub fn try_decider() -> Option<Guard<'static, Option<Decider>>> {
    DECIDER.try_lock()
}

/// The decider for the exit record: waits a little for a thread that is deciding, never forever.
pub fn decider_for_exit() -> Option<Guard<'static, Option<Decider>>> {
    DECIDER.try_lock_for(std::time::Duration::from_millis(200))
}

/// The latest valid window, readable without the lock.
pub fn last_window() -> Option<Window> {
    let (l, s) = (LAST_LATENCY.load(Relaxed), LAST_STALL.load(Relaxed));
    (l != u64::MAX).then(|| Window { latency_us: f64::from_bits(l), stall_ratio: f64::from_bits(s) })
}

/// Initialise if needed, giving another thread that is initialising a moment (loading PAPI),
/// never forever: the settings, once parsed.
pub fn wait_ready() -> Option<&'static Settings> {
    ensure_init();
    for _ in 0..2000 {
        if INIT.load(Acquire) == DONE {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    settings()
}

/// Change policy or pause from the C API. Returns false when the library is killed by
/// `AAR_DISABLE` (it then stays inert).
pub fn set_control(policy: Option<Policy>, enabled: Option<bool>) -> bool {
    wait_ready();
    control() & READY != 0 && update_control(|w| control::with(w, policy, enabled, None))
}

/// The policy of a new A/B iteration: posts and SMSG steering follow the control word, the
/// engine takes it up at its next decision.
pub fn switch_policy(policy: Policy) {
    if control() & READY != 0 {
        update_control(|w| control::with(w, Some(policy), None, None));
    }
}

/// The decider at an iteration boundary: waits at most `wait` for a thread that is deciding.
pub fn decider_within(wait: std::time::Duration) -> Option<Guard<'static, Option<Decider>>> {
    DECIDER.try_lock_for(wait)
}

/// Replace the control word with `f(old)`, atomically with respect to other updates.
fn update_control(f: impl Fn(u32) -> u32) -> bool {
    CONTROL.fetch_update(AcqRel, Acquire, |w| Some(f(w))).is_ok()
}
