//! Start-up: the library initialises lazily, on the first intercepted call, with an atomic state
//! machine, so a process that never calls uGNI (a shell, `srun`, a compiler, Lmod itself) sees no
//! output, no file, no cost (at load, one `fcntl` notes whether stderr is open). This is the only
//! place that registers process handlers: the exit handler (`output`), the `fork()` handlers
//! below and that load-time note.
//!
//! `fork()`: the child keeps working and its output never mixes with the parent's. Before a fork
//! every lock of the library ([`state::FORK_LOCKS`]) is taken, so the child inherits consistent
//! state, and the trace buffer is flushed so the child does not write the parent's lines again.
//! In the child every lock is released and only atomics are stored ([`state::forked`]); the real
//! work waits for the child's next intercepted call or its exit ([`state::after_fork_in_child`]): a
//! fresh counter window (on the event set it inherited, which reads in the child as long as its
//! events do; a failed read falls back as anywhere), its own statistics (the record of a child
//! counts the child's messages only, under the child's pid), its own trace. A decider another
//! thread held through the whole wait (stuck in a send or in PAPI's read) is not trusted: the child
//! reads no counters ([`PapiError::ForkedMidDecision`]).

use crate::papi::{self, Papi, PapiError};
use crate::settings::{Boundary, Settings};
use crate::state::{self, Claim, Decider, FORK_LOCKS, FORK_LOCK_COUNT};
use crate::{attributes, control, diag, job, node, output, sys, topology, trylock};
use aar_engine::{Engine, Policy, SideBytes};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Initialise once, on the first intercepted call. Callers arriving while another thread
/// initialises do not wait: they see a control word without READY and forward untouched.
#[inline]
pub fn ensure_init() {
    if !state::initialised() {
        init_once();
    }
}

// The one thing done when libaar.so is loaded rather than at its first call: whether the process
// has a stderr, which by the first call may be a file of the application's. Not under unit tests:
// the test harness's stderr is no business of the library's.
#[cfg(not(test))]
#[used]
#[link_section = ".init_array"]
static NOTE_STDERR_AT_LOAD: extern "C" fn() = sys::note_stderr_at_load;

thread_local! {
    /// This thread is the one initialising (a call it makes from inside must not wait for itself).
    static INITIALISING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cold]
#[inline(never)]
fn init_once() {
    match state::claim_init() {
        Claim::Taken => {}
        Claim::Mine => {
            let _ = INITIALISING_HERE.try_with(|h| h.set(true));
            // A panic here must not reach the application (callers are C): the library then stays
            // a pass-through for this process.
            if std::panic::catch_unwind(init).is_err() {
                control::store(0);
                diag::error(
                    "internal error (a panic) while initialising; every call is forwarded untouched. Please report it.",
                );
            }
            state::init_done();
            let _ = INITIALISING_HERE.try_with(|h| h.set(false));
        }
        Claim::Orphaned => {
            let _ = std::panic::catch_unwind(orphaned_start_up);
            state::init_done();
        }
    }
}

/// This process was forked while a thread of its parent was starting the library: that thread is
/// not here, and its start-up stopped where the fork found it. Begun again here, it could wait
/// forever on what the thread held (libpapi's and the dynamic loader's state, half-made, the
/// settings' cell): so, unless it had got as far as the control word (its last step: this process
/// then works as any fork child), the library stays inert in this process, and says so once.
fn orphaned_start_up() {
    if control::load() & control::READY != 0 {
        return;
    }
    diag::error(&format!(
        "this process (pid {}) was forked while another thread of its parent was still starting libaar.so: that \
         start-up cannot finish here, so libaar.so forwards every call of this process untouched and writes no record \
         for it (aar_policy_name() says \"disabled\"; the parent is unaffected). To have a fork child route, let the \
         start-up finish before forking: make a first call of libaar.so (aar_policy_name(), say) until it no longer \
         says \"starting\".",
        sys::pid()
    ));
}

/// Wait, at most [`READY_WAIT`], for an initialisation another thread is making; none is started.
pub fn wait_for_other_thread() {
    if INITIALISING_HERE.try_with(|h| h.get()).unwrap_or(true) {
        return;
    }
    let until = std::time::Instant::now() + READY_WAIT;
    while state::initialising() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The application's `PAPI_library_init`, passed on once libaar.so's own PAPI set-up, if another
/// thread is making it, is over (waited for at most two seconds): libpapi is not safe to
/// initialise from two threads at once. A PAPI shut down under libaar.so's event set
/// ([`state::papi_shut_down`]) ends the counters' use first. Nothing is started here: a program
/// that initialises PAPI before its first uGNI call initialises it alone, and libaar.so then uses
/// it as it finds it.
pub fn library_init_for_application(version: std::ffi::c_int) -> std::ffi::c_int {
    let Some(library_init) = papi::APPLICATION_LIBRARY_INIT.get::<papi::LibraryInitFn>() else {
        return papi::PAPI_ENOINIT;
    };
    let _ = std::panic::catch_unwind(wait_for_other_thread);
    // PAPI_shutdown destroyed libaar.so's event set, and the sets of the PAPI initialised again
    // would take its number: its counters are given up before the application makes one.
    if papi::shut_down() {
        let _ = std::panic::catch_unwind(state::papi_shut_down);
    }
    // SAFETY: libpapi's PAPI_library_init (LibraryInitFn is its prototype), the caller's argument.
    unsafe { library_init(version) }
}

/// How long a caller that needs the initialisation done waits for another thread's.
const READY_WAIT: Duration = Duration::from_secs(2);

/// Whether this thread is running the start-up (a call from inside it: a callback of the PAPI
/// library's loading, say).
pub fn initialising_here() -> bool {
    INITIALISING_HERE.try_with(|h| h.get()).unwrap_or(false)
}

/// Initialise if needed, giving another thread that is initialising a moment (loading PAPI),
/// never forever: the settings, once parsed.
pub fn wait_ready() -> Option<&'static Settings> {
    ensure_init();
    wait_for_other_thread();
    state::settings()
}

/// What [`prepare`] made, for [`install`].
struct Prepared {
    decider: Decider,
    policy: Policy,
    tracing: bool,
}

/// The library's start-up. Its work (the settings, PAPI, the node's segment, the files, the
/// decider's installation) runs on a thread with room when the calling code has little stack left
/// ([`sys::with_room`]: a thread made with a small stack, a signal handler on a signal stack).
fn init() {
    sys::with_room(start_up);
}

/// Out of line, and with the decider made and installed in it: its frame (over 10 KiB, most of it
/// the decider) inlined into the caller's would be taken on the caller's stack, before
/// [`sys::with_room`] can see that there is no room for it.
#[inline(never)]
fn start_up() {
    if let Some(prepared) = prepare() {
        install(prepared);
    }
}

fn prepare() -> Option<Prepared> {
    // Run on a helper thread for a caller with little stack, this thread is the start-up too: a
    // call from inside it (a callback of PAPI's loading) must not wait for the start-up it is in.
    let _ = INITIALISING_HERE.try_with(|h| h.set(true));
    let t0 = sys::now_ns();
    let (mut settings, warnings) = Settings::from_environment();
    if let Ok(start) = std::env::current_dir() {
        settings.anchor_paths(&start);
    }
    let place_warnings = job::detect();
    diag::install_panic_hook();
    diag::init_logging(settings.log);
    if let Some(first) = sys::earlier_copy() {
        // Both copies would route each call, this one last (its routing on the wire), and both
        // would read the counters (the second PAPI_start fails) and write a record of one name.
        diag::warn(&format!(
            "two copies of libaar.so are loaded: {first} routes the calls, and this one ({}) forwards them untouched \
             and writes nothing. Load one: look at LD_PRELOAD and at the modules loaded (module list).",
            sys::own_path().unwrap_or_else(|| "another file".into())
        ));
        settings.disabled = true;
    } else if !settings.disabled {
        // Under AAR_DISABLE nothing is used: a warning that some value was replaced by a default
        // would be untrue, and the kill switch writes nothing. (A bad AAR_DISABLE is not set.)
        for w in warnings.iter().map(|w| &w.message).chain(&place_warnings) {
            diag::warn(w);
        }
    }
    let settings = state::set_settings(settings);
    if settings.disabled {
        tracing::info!("AAR_DISABLE is set, or another copy of libaar.so routes: every call is forwarded untouched");
        return None;
    }
    for name in crate::settings::unknown_variables(sys::variable_names()) {
        diag::warn(&crate::settings::unknown_variable_warning(&name));
    }
    if let Boundary::Mpi { function, .. } = settings.ab_boundary {
        // A profiling tool preloaded before libaar.so (mpiP, IPM, Score-P), or the program itself.
        if let Some(first) = sys::first_definer(function.name()) {
            let name = function.name();
            diag::warn(&format!(
                "AAR_AB_BOUNDARY={}: {name} is defined first by {first}, loaded before libaar.so. If that is a \
                 profiling tool (mpiP, IPM, Score-P, ...), its {name} calls P{name} itself, libaar.so never sees the \
                 call and no iteration is recorded; the boundary stays {name}. Put libaar.so before it in \
                 LD_PRELOAD (load the aar module after the tool's module): libaar.so passes each call on to the tool.",
                settings.ab_boundary
            ));
        }
    }
    // Another library that takes the program's posts before this one: a second router (the SC'19
    // authors' awr), a tracer, or libugni linked into the program and exported by it.
    if let Some(first) = sys::defined_before_this(c"GNI_PostRdma") {
        // libugni itself defines GNI_CdmCreate too; a router or a tracer takes the posts only.
        let libugni = sys::defined_before_this(c"GNI_CdmCreate").as_ref() == Some(&first);
        diag::warn(&if first.is_empty() {
            "the program itself defines GNI_PostRdma (libugni linked in from its static archive): its own posts never \
             reach libaar.so. Link libugni as a shared library (on a Cray: CRAYPE_LINK_TYPE=dynamic)."
                .to_string()
        } else if libugni {
            format!(
                "libugni ({first}) is loaded before libaar.so: the program's posts go to it directly, and libaar.so \
                 routes none of them. Put libaar.so first in LD_PRELOAD, or leave libugni out of it."
            )
        } else {
            format!(
                "GNI_PostRdma is defined first by {first}, loaded before libaar.so: the program's posts reach it \
                 first (a second router, such as the SC'19 authors' awr, or a tracer), and libaar.so routes what it \
                 passes on, so two libraries route or watch every post and both may read the counters. Preload \
                 one router: take {first} out of LD_PRELOAD (its module: module unload), or unload aar."
            )
        });
    }
    let mut engine_cfg = settings.engine.clone();
    // A set that could not start (another of its component counts) waits for the application's.
    let mut waiting = None;
    let (counters, counters_library, counters_unavailable) =
        match Papi::open(settings.papi_library.as_deref(), &settings.papi_events) {
            Ok(opened) => {
                opened.notes.iter().for_each(|n| diag::warn(n));
                if opened.counting {
                    (Some(opened.papi), Some(opened.library), None)
                } else {
                    diag::warn(&state::counters_unavailable(&PapiError::InUse, &mut engine_cfg));
                    waiting = Some(opened.papi);
                    (None, Some(opened.library), Some(PapiError::InUse.to_string()))
                }
            }
            Err(why) => {
                diag::warn(&state::counters_unavailable(&why, &mut engine_cfg));
                (None, None, Some(why.to_string()))
            }
        };
    let ranks_per_node = node::ranks_per_node();
    // The node's ranks share its NIC: its injection and its counters (the max-rate view).
    engine_cfg.ranks_per_node = ranks_per_node;
    let node =
        counters.as_ref().and_then(|_| node::attach(&settings.papi_events, settings.node_reading.0, ranks_per_node));
    topology::load(settings.topology.as_deref());
    let mut decider = Decider {
        engine: Engine::new(engine_cfg),
        counters,
        node,
        counter_reads: 0,
        shared_readings: 0,
        last_reading: 0,
        ranks_per_node,
        counter_read_failures: 0,
        timed_decisions: 0,
        timed_decision_ns: 0,
        init_ns: 0,
        counters_library,
        counters_unavailable,
        alltoall_hook: settings.alltoall_hook,
        policy_bits: u32::MAX,
        test_panic: settings.test_panic,
        post_clock: sys::MonotonicClock::of_this_machine(),
        published: SideBytes::default(),
        last_own: None,
        fed: Default::default(),
        node_looks: Default::default(),
        aside: None,
        gave_way: 0,
        failing_in_a_row: 0,
        reads_at_last_failure: 0,
    };
    if let Some(papi) = waiting {
        decider.wait_for_application(papi, settings.engine.policy);
    }
    // `steady`'s per-class bookkeeping on every window is only worth its cost where `steady`
    // may decide: as the policy, as an A/B arm, or once the application selects it (C API).
    let steady_arm = settings.ab.as_ref().is_some_and(|ab| ab.0.contains(&Policy::Steady));
    decider.engine.keep_steady_state(steady_arm);
    decider.read_and_observe();
    let policy = decider.engine.config().policy;
    let tracing = state::TRACE.open(settings.trace.as_deref(), settings.trace_max);
    output::check_output_dir(settings.output_dir.as_deref());
    if let Some(schedule) = settings.ab_schedule() {
        state::set_schedule(schedule);
    }
    if let Some(dir) = settings.output_dir.as_deref().filter(|_| settings.writes_records(job::rank())) {
        if let Some(mut record) = state::ITERATIONS.record(Duration::from_millis(100)) {
            record.write_to(dir, settings, state::schedule());
        }
    }
    state::set_threshold(settings.engine.threshold_bytes);
    let (table, source) = settings.dmapp_table();
    attributes::set_table(table, source);
    decider.init_ns = sys::now_ns().saturating_sub(t0);
    Some(Prepared { decider, policy, tracing })
}

fn install(Prepared { decider, policy, tracing }: Prepared) {
    let Some(settings) = state::settings() else { return };
    state::install_decider(decider);
    if !sys::at_exit(output::at_exit) {
        diag::warn("could not register the exit handler; no record or summary will be written");
    }
    if !sys::at_fork(prepare_fork, after_fork_in_parent, after_fork_in_child) {
        diag::warn("could not register the fork handlers; a forked child that sends on the network may share the parent's counters and records");
    }
    control::store(control::word(policy, settings.engine.low_latency_mode, true, true, tracing));
    tracing::debug!(?policy, "aar initialised");
}

/// Which of [`FORK_LOCKS`] `prepare_fork` took.
static HELD: [AtomicBool; FORK_LOCK_COUNT] = [const { AtomicBool::new(false) }; FORK_LOCK_COUNT];

extern "C" fn prepare_fork() {
    state::TRACE.flush();
    for (lock, held) in FORK_LOCKS.iter().zip(&HELD) {
        held.store(lock.hold_for(trylock::FORK_HOLD), Ordering::Relaxed);
    }
}

extern "C" fn after_fork_in_parent() {
    for (lock, held) in FORK_LOCKS.iter().zip(&HELD) {
        if held.swap(false, Ordering::Relaxed) {
            // SAFETY: taken by `prepare_fork` with hold_for in this thread; no guard alive.
            unsafe { lock.release() };
        }
    }
}

extern "C" fn after_fork_in_child() {
    let mut decider_whole = true;
    for (lock, held) in FORK_LOCKS.iter().zip(&HELD) {
        if std::ptr::addr_eq(*lock, &state::DECIDER) {
            decider_whole = held.load(Ordering::Relaxed);
        }
        held.store(false, Ordering::Relaxed);
        // SAFETY: in the child only this thread exists, so whoever held the lock (prepare_fork,
        // or a thread that stayed in the parent) has no guard here.
        unsafe { lock.release_in_child() };
    }
    state::forked(decider_whole);
}
