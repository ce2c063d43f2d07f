//! Process state: the settings, where initialisation stands, the cumulative-size sum, the decider
//! (engine + counters) behind a lock that is only ever *tried*, so no post can block on another,
//! the per-process trace, NIC table and iterations, and what a fork child must redo.
//!
//! Every lock the library waits on is declared here, and [`FORK_LOCKS`] lists them beside their
//! declarations (with the two of `diag`, a lower layer): the fork handlers hold them all across a
//! `fork()`. A unit test checks that no lock of the crate is missing from the list.

use crate::control::HOT;
use crate::nics::NicTable;
use crate::node::{Looks, Node, OwnReading, Reading};
use crate::papi::{self, Papi, PapiError, ReadFailure, PAPI_OK};
use crate::rows::Iterations;
use crate::settings::{Settings, TestPanic};
use crate::trace::TraceFile;
use crate::trylock::{ForkHeld, Guard, TryLock};
use crate::{attributes, control, diag, node, reserve, sys, tally};
use aar_engine::{
    AbSchedule, CallTicket, CounterSample, Decision, Engine, EngineConfig, Message, Policy, Reason, RoutingMode,
    SideBytes, Window, WindowOutcome,
};
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU8, Ordering::*};
use std::sync::OnceLock;
use std::time::Duration;

// ---- Initialisation ----------------------------------------------------------------------------

// 0: not begun.
const INITIALIZING: u8 = 1;
const DONE: u8 = 2;
/// Where initialisation stands ([`control::Hot::init`]).
static INIT: &AtomicU8 = &HOT.init;
/// The process whose thread claimed initialisation (0: none yet). A fork child inherits a claim
/// its parent's thread made and that no thread of the child will finish: the claim of another
/// pid is an orphan ([`Claim::Orphaned`]). Set before [`INIT`] says `INITIALIZING`.
static CLAIMED_BY: AtomicU32 = AtomicU32::new(0);

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Initialisation is over (done, failed or killed by `AAR_DISABLE`).
#[inline]
pub fn initialised() -> bool {
    INIT.load(Acquire) == DONE
}

/// Another thread (or this one) of this process is initialising right now (not a thread of the
/// parent this process was forked from: that one is not here).
pub fn initialising() -> bool {
    INIT.load(Acquire) == INITIALIZING && CLAIMED_BY.load(Acquire) == sys::pid()
}

/// Who initialises, as [`claim_init`] found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The calling thread: it initialises, then calls [`init_done`].
    Mine,
    /// Another thread of this process did or does.
    Taken,
    /// A thread of the parent this process was forked from had begun, and is not in this process;
    /// the calling thread (the only one to get this) ends it, then calls [`init_done`].
    Orphaned,
}

/// Whether the calling thread is the one to initialise.
pub fn claim_init() -> Claim {
    if initialised() {
        return Claim::Taken;
    }
    let me = sys::pid();
    let mut seen = 0;
    loop {
        match CLAIMED_BY.compare_exchange(seen, me, AcqRel, Acquire) {
            Ok(0) => {
                INIT.store(INITIALIZING, Release);
                return Claim::Mine;
            }
            Ok(_) => return Claim::Orphaned,
            Err(now) if now == me => return Claim::Taken,
            // Another pid's claim (a parent's), or none where one was expected: try again with it.
            Err(now) => seen = now,
        }
    }
}

/// Initialisation is over; called once, by the thread that claimed it.
pub fn init_done() {
    INIT.store(DONE, Release);
}

/// The settings, once parsed.
pub fn settings() -> Option<&'static Settings> {
    SETTINGS.get()
}

/// Keep the settings for the life of the process (the first ones win).
pub fn set_settings(settings: Settings) -> &'static Settings {
    SETTINGS.get_or_init(|| settings)
}

/// `AAR_DISABLE` (or a failed initialisation): every call goes straight to the real function.
#[inline]
pub fn inert() -> bool {
    initialised() && control::load() & control::READY == 0
}

// ---- The cumulative-size sum -------------------------------------------------------------------

/// Set the threshold (at initialisation).
pub fn set_threshold(bytes: u64) {
    HOT.threshold.store(bytes, Relaxed);
}

/// Add `bytes` to the sum (the engine's rule, [`aar_engine::accumulate`]); `true` if the
/// threshold is now crossed (the sum then restarts from zero).
#[inline]
pub fn accumulate(bytes: u64) -> bool {
    let (sum, crossed) = aar_engine::accumulate(HOT.cumulative.load(Relaxed), bytes, HOT.threshold.load(Relaxed));
    HOT.cumulative.store(sum, Relaxed);
    crossed
}

// ---- Inside a collective call under `steady` ----------------------------------------------------

/// What a thread's posts below the threshold take inside its collective under `steady`
/// ([`Engine::below_threshold_in_call`]): the mode's index + 1 in the low four bits, the
/// reason's index above them; 0: nothing (the control word's routing). Kept per thread
/// ([`thread_call`]), set at the call's entry and after each `steady` decision in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Follow(u8);

impl Follow {
    pub const NONE: Follow = Follow(0);

    fn of(follow: Option<(RoutingMode, Reason)>) -> Follow {
        Follow(follow.map_or(0, |(m, r)| (m.index() as u8 + 1) | ((r.index() as u8) << 4)))
    }

    /// The mode and the reason's index.
    #[inline]
    pub fn get(self) -> Option<(RoutingMode, usize)> {
        match self.0 {
            0 => None,
            v => RoutingMode::ALL.get(usize::from(v & 0xf).wrapping_sub(1)).map(|&m| (m, usize::from(v >> 4))),
        }
    }
}

/// The collective call a thread is inside (the engine's ticket for it) and what its posts below
/// the threshold take.
pub type ThreadCall = (Option<CallTicket>, Follow);

thread_local! {
    /// This thread's collective under `steady` or an A/B experiment: each thread its own, so
    /// that threads inside collectives at once neither time nor route each other's calls.
    static CALL: Cell<ThreadCall> = const { Cell::new((None, Follow::NONE)) };
}

/// This thread's collective call (none while the thread-local is gone, at thread exit).
#[inline]
pub fn thread_call() -> ThreadCall {
    CALL.try_with(Cell::get).unwrap_or((None, Follow::NONE))
}

/// Make `call` this thread's collective call, returning the one it replaces (an MPI library may
/// make collectives inside one: the caller gives the outer one back at the inner one's exit).
pub fn swap_thread_call(call: ThreadCall) -> ThreadCall {
    CALL.try_with(|c| c.replace(call)).unwrap_or((None, Follow::NONE))
}

/// How long a call's entry or exit waits for a thread that is deciding: decisions take well under
/// a microsecond, and a collective call many.
const CALL_WAIT: Duration = Duration::from_millis(1);

/// An MPI collective of kind `key` begins on this thread, under the policy of control word `w`
/// (see [`Engine::begin_call`]): the engine's ticket for it, and what its posts below the
/// threshold take. Nothing when another thread holds the decider longer than [`CALL_WAIT`]:
/// the call then goes untimed, its messages decided one by one.
pub fn begin_call(key: u64, in_alltoall: bool, w: u32) -> (Option<CallTicket>, Follow) {
    let Some(mut slot) = decider_within(CALL_WAIT) else { return (None, Follow::NONE) };
    let Some(d) = slot.as_mut() else { return (None, Follow::NONE) };
    d.sync_policy(w);
    d.engine.begin_call(key, in_alltoall);
    let ticket = d.engine.call_ticket();
    let follow = Follow::of(d.engine.below_threshold_in_call(in_alltoall));
    // Until this thread's next decision gives it back, no call is the engine's current one.
    d.engine.resume_call(None);
    (ticket, follow)
}

/// The collective of `ticket` ended, `elapsed_ns` after it began. When another thread holds the
/// decider longer than [`CALL_WAIT`], the call's time is not kept.
pub fn end_call(ticket: CallTicket, elapsed_ns: u64) {
    if let Some(mut slot) = decider_within(CALL_WAIT) {
        if let Some(d) = slot.as_mut() {
            d.engine.resume_call(Some(ticket));
            d.engine.end_call(elapsed_ns);
        }
    }
}

// ---- The A/B schedule --------------------------------------------------------------------------

static SCHEDULE: OnceLock<AbSchedule> = OnceLock::new();

/// The A/B schedule, when an experiment runs (`AAR_AB`).
pub fn schedule() -> Option<&'static AbSchedule> {
    SCHEDULE.get()
}

/// Set the A/B schedule (at initialisation).
pub fn set_schedule(schedule: AbSchedule) {
    let _ = SCHEDULE.set(schedule);
}

/// The policy of a new A/B iteration: posts and SMSG steering follow the control word, the
/// engine takes it up at its next decision.
pub fn switch_policy(policy: Policy) {
    if control::load() & control::READY != 0 {
        control::update(|w| control::with(w, Some(policy), None, None));
    }
}

// ---- The decider -------------------------------------------------------------------------------

/// Decisions (with their counter read) are timed on one in this many: each timing takes two
/// `clock_gettime` calls (about 25 ns each on the development VM), 4 ns per decision at one in
/// 16, under 1 ns at one in 64.
const TIMING_SAMPLE: u64 = 64;

/// The engine, the counters it observes, and what the record says about them.
///
/// `repr(C)`: what every decision and read touches first, in the line of [`DECIDER`]'s lock
/// flag, then the engine from the next line (its own layout is hot first), then the rest.
#[repr(C)]
pub struct Decider {
    pub counters: Option<Papi>,
    /// The node's segment: its shared reading (`AAR_NODE_READING`) and decided bytes; `None`:
    /// this rank reads its own and keeps its bytes to itself.
    pub node: Option<&'static Node>,
    /// PAPI reads by this rank.
    pub counter_reads: u64,
    /// `AAR_ALLTOALL` and `AAR_TEST_PANIC`, copied from the settings: every decision asks, and
    /// the settings' lines are cold by then.
    pub alltoall_hook: bool,
    pub test_panic: Option<TestPanic>,
    /// The policy bits of the control word the engine's policy was last set from
    /// ([`control::policy_bits`]; `u32::MAX`: none yet): a decision compares these, not policies.
    pub policy_bits: u32,
    pub engine: Engine,
    /// Readings of another rank of the node that this rank used instead of a PAPI read.
    pub shared_readings: u64,
    /// When this rank's latest reading was taken, on the node's clock (a shared one is never
    /// older), with a shared reading.
    pub last_reading: u64,
    /// Ranks sharing this node's NIC ([`crate::node::ranks_per_node`]).
    pub ranks_per_node: u32,
    pub counter_read_failures: u64,
    pub timed_decisions: u64,
    pub timed_decision_ns: u64,
    pub init_ns: u64,
    pub counters_library: Option<String>,
    /// Why the counters are not read: PAPI's failure at start-up, or at the read that failed.
    pub counters_unavailable: Option<String>,
    /// `steady`'s post times.
    pub post_clock: sys::MonotonicClock,
    /// This rank's decided bytes already added to its node's ([`Node::add_decided`]).
    pub published: SideBytes,
    /// With a node's segment: this rank's latest own reading (the other ranks' PAPI counts from
    /// other starts, so only windows pass between ranks), and the sample and node's decided bytes
    /// last given to the engine, which each window moves on.
    pub last_own: Option<OwnReading>,
    pub fed: (CounterSample, SideBytes),
    /// When this rank looks at the node's segment, and the readings it made without looking.
    pub node_looks: Looks,
    /// The counters while they are stepped aside for the application's own PAPI measurement
    /// ([`Decider::give_way`]), and how often they were.
    pub aside: Option<Aside>,
    pub gave_way: u64,
    /// Failed reads in a row ([`READS_FAILING_IN_A_ROW`] end the counters' use), and how many
    /// readings (own and shared) had succeeded at the last failure: one since starts it again.
    pub failing_in_a_row: u32,
    pub reads_at_last_failure: u64,
}

/// A read that fails is tried again at the next decision (a PAPI component's read can fail once,
/// an interrupted system call under it); this many failures in a row, and the counters are given
/// up. A PAPI the application shut down is given up at once.
const READS_FAILING_IN_A_ROW: u32 = 3;

/// libaar.so's event set, stopped while the application's set `theirs` counts (`None`: a set
/// that was counting when libaar.so started, which it cannot name), and the policies before and
/// after the fall back (the one before comes back if the fall back is still in force).
pub struct Aside {
    papi: Papi,
    theirs: Option<c_int>,
    before: Policy,
    fallback: Policy,
}

/// The application's event set libaar.so stepped aside for, [`NO_SET`] when none, [`ANY_SET`] when
/// it could not name it: every application `PAPI_stop` looks, without the decider's lock.
static STEPPED_ASIDE_FOR: AtomicI64 = AtomicI64::new(NO_SET);
const NO_SET: i64 = i64::MIN;
const ANY_SET: i64 = i64::MIN + 1;

impl Aside {
    fn is_for(&self, eventset: c_int) -> bool {
        self.theirs.is_none_or(|t| t == eventset)
    }
}

// The lock's line: its bias word and flags (16 bytes with their padding), then the decider's first
// fields.
const _: () =
    assert!(16 + std::mem::offset_of!(Decider, engine) == 64, "the engine must start the decider's second line");

impl Decider {
    /// Read the counters (after a send) and give them to the engine.
    pub fn read_and_observe(&mut self) {
        let Some(papi) = self.counters.as_mut() else { return };
        if let Some(node) = self.node {
            return self.read_node(node);
        }
        match papi.read() {
            Ok(sample) => {
                self.counter_reads += 1;
                self.observe(sample, None);
            }
            Err(failure) => self.read_failed(failure),
        }
    }

    /// With a node's segment: this rank's own reading or another rank's window, given to the
    /// engine as the next sample of one series (the last sample given, moved on by the window
    /// since this rank's previous own reading, or by the other rank's), with the node's decided
    /// bytes moved on alike. Out of line: a rank alone on its node never comes here.
    #[inline(never)]
    fn read_node(&mut self, node: &'static Node) {
        let Some(papi) = self.counters.as_mut() else { return };
        let (fed, fed_decided) = self.fed;
        let next = match node.read(papi, self.last_own.as_ref(), self.last_reading, &mut self.node_looks) {
            Ok(Reading::Own(r)) => {
                let next = match self.last_own {
                    Some(prev) => {
                        (fed.plus(r.sample.since(prev.sample)), fed_decided.plus(r.decided.since(prev.decided)))
                    }
                    None => (r.sample, r.decided),
                };
                self.last_own = Some(r);
                self.last_reading = r.taken;
                self.counter_reads += 1;
                next
            }
            Ok(Reading::Shared { window, decided, taken }) => {
                self.last_reading = taken;
                self.shared_readings += 1;
                (fed.plus(window), fed_decided.plus(decided))
            }
            Err(failure) => return self.read_failed(failure),
        };
        self.fed = next;
        self.observe(next.0, Some(next.1));
    }

    /// A read failed: tried again at the next decision, unless it is the
    /// [`READS_FAILING_IN_A_ROW`]th in a row or PAPI was shut down; then the counters cannot be
    /// read any more: fall back, once, with a warning. Out of line, so that its frame (the
    /// warning, a copy of the configuration) is not every read's.
    #[cold]
    #[inline(never)]
    fn read_failed(&mut self, failure: ReadFailure) {
        let Some(papi) = self.counters.as_ref() else { return };
        self.counter_read_failures += 1;
        let reads = self.counter_reads + self.shared_readings;
        let again = self.reads_at_last_failure == reads && self.failing_in_a_row > 0;
        self.failing_in_a_row = if again { self.failing_in_a_row + 1 } else { 1 };
        self.reads_at_last_failure = reads;
        if failure != ReadFailure::ShutDown && self.failing_in_a_row < READS_FAILING_IN_A_ROW {
            // No window this time: the open one runs on to the next read.
            return;
        }
        let why = papi.explain(failure);
        self.give_up_counters(&why, true);
    }

    /// In a fork child whose parent had a thread inside a decision through the fork's whole wait:
    /// the engine may be half-updated, and the thread may have held a lock inside PAPI (libsde's
    /// read holds a spinlock) that nobody frees here, so the child never calls PAPI and starts a
    /// new engine without counters, with a warning.
    #[cold]
    fn distrust_after_fork(&mut self) {
        self.aside = None;
        STEPPED_ASIDE_FOR.store(NO_SET, Relaxed);
        self.node = None;
        self.last_own = None;
        self.engine = Engine::new(self.engine.config().clone());
        self.give_up_counters(&PapiError::ForkedMidDecision, true);
    }

    /// Read no counters from here on, because of `why`: fall back, with a warning (if `warn`).
    fn give_up_counters(&mut self, why: &PapiError, warn: bool) {
        self.counters = None;
        let mut cfg = self.engine.config().clone();
        let line = counters_unavailable(why, &mut cfg);
        self.counters_unavailable = Some(why.to_string());
        self.engine.set_policy(cfg.policy);
        control::update(|w| control::with(w, Some(cfg.policy), None, None));
        if warn {
            diag::warn(&line);
        }
    }

    /// The application's `PAPI_start` of `theirs` found an event set of the same component
    /// counting: if that is this rank's, stop it and start theirs again with `start`. Theirs
    /// counting, the counters step aside until the application stops it
    /// ([`Decider::resume_after`]), with a warning the first time; else this rank's counts again.
    /// Either way it counts from zero when it counts again: the window across the stop is
    /// discarded as decreasing, and the next one starts from there. The answer of the second
    /// start, or `None` when there was none.
    pub fn give_way(&mut self, theirs: c_int, start: impl FnOnce() -> c_int) -> Option<c_int> {
        let papi = self.counters.take_if(|p| !p.is(theirs))?;
        if !papi.stop() {
            self.counters = Some(papi);
            return None;
        }
        let rc = start();
        if rc == PAPI_OK {
            let before = self.engine.config().policy;
            self.give_up_counters(&PapiError::GaveWay, self.gave_way == 0);
            self.gave_way += 1;
            let fallback = self.engine.config().policy;
            self.step_aside(Aside { papi, theirs: Some(theirs), before, fallback });
        } else if let Err(why) = papi.restart() {
            self.give_up_counters(&why, true);
        } else {
            self.counters = Some(papi);
            self.last_own = None;
        }
        Some(rc)
    }

    /// The counters' event set could not start because another of the same component was counting
    /// ([`PapiError::InUse`]): it waits, as for a set the application started later
    /// ([`Decider::give_way`]), until the application stops one, then counts, and `before` comes
    /// back if the fall back is still in force.
    pub fn wait_for_application(&mut self, papi: Papi, before: Policy) {
        let fallback = self.engine.config().policy;
        self.step_aside(Aside { papi, theirs: None, before, fallback });
    }

    /// Keep the counters aside, and tell every application `PAPI_stop` which set they wait for.
    fn step_aside(&mut self, aside: Aside) {
        STEPPED_ASIDE_FOR.store(aside.theirs.map_or(ANY_SET, i64::from), Relaxed);
        self.aside = Some(aside);
    }

    /// The application stopped its event set `theirs`: if the counters stepped aside for it,
    /// they count again, and the policy they fell back from comes back unless another was chosen
    /// meanwhile (the C API, an A/B iteration).
    fn resume_after(&mut self, theirs: c_int) {
        let Some(aside) = self.aside.take_if(|a| a.is_for(theirs)) else { return };
        STEPPED_ASIDE_FOR.store(NO_SET, Relaxed);
        if let Err(why) = aside.papi.restart() {
            if matches!(why, PapiError::InUse) {
                // Another set of the component still counts (the one that was counting when
                // libaar.so started, which it cannot name): wait for the next stop.
                self.step_aside(Aside { theirs: None, ..aside });
                return;
            }
            // The first give-way's warning promised the counters back: say they are not.
            diag::warn(&format!(
                "{why}: after the application stopped its PAPI event set, libaar.so's counters could not count \
                 again, and routing stays as without counters"
            ));
            self.counters_unavailable = Some(why.to_string());
            return;
        }
        self.counters = Some(aside.papi);
        self.counters_unavailable = None;
        // Counting from zero: no window of the node's passes across the stop.
        self.last_own = None;
        if aside.before != aside.fallback && control::policy(control::load()) == aside.fallback {
            self.engine.set_policy(aside.before);
            control::update(|w| control::with(w, Some(aside.before), None, None));
        }
    }

    /// PAPI was shut down under the counters' event set ([`papi_shut_down`]): they read no more,
    /// with the shutdown's warning, unless a failed read has said it already.
    #[cold]
    fn papi_shut_down(&mut self) {
        STEPPED_ASIDE_FOR.store(NO_SET, Relaxed);
        let why = PapiError::ShutDown;
        if self.aside.take().is_some() {
            // Routing fell back when they stepped aside, whose warning promised them back.
            diag::warn(&format!(
                "{why}: libaar.so's counters, stepped aside for the application's PAPI event set, do not count again, \
                 and routing stays as without counters. {}.",
                why.fix()
            ));
            self.counters_unavailable = Some(why.to_string());
        } else if self.counters.is_some() {
            self.give_up_counters(&why, true);
        }
    }

    /// Inline in both callers: out of line, the read path (a rank alone on its node) pays a call
    /// and a frame (7 ns per read with `AAR_WINDOW=1` when `read_node` became its second caller).
    #[inline(always)]
    fn observe(&mut self, sample: CounterSample, node_decided: Option<SideBytes>) {
        let outcome = match node_decided {
            Some(node) => self.engine.observe_node(sample, node),
            None => self.engine.observe(sample),
        };
        if let WindowOutcome::Valid(Window { latency_us, stall_ratio }) = outcome {
            HOT.last_latency.store(latency_us.to_bits(), Relaxed);
            HOT.last_stall.store(stall_ratio.to_bits(), Relaxed);
        }
    }

    /// Decide for a message that crossed the threshold, under the policy of control word `w`.
    pub fn decide(&mut self, msg: &Message, in_alltoall: bool, w: u32) -> Decision {
        self.sync_policy(w);
        let d = if self.engine.config().policy == Policy::Steady {
            self.decide_steady(msg, in_alltoall)
        } else {
            self.engine.on_threshold_crossed(msg, in_alltoall)
        };
        if let Some(node) = self.node {
            self.publish_decided(node);
        }
        d
    }

    /// Add the bytes this decision put on a side to the node's (none unless `steady` learns).
    #[inline(never)]
    fn publish_decided(&mut self, node: &Node) {
        let decided = self.engine.decided_bytes();
        node.add_decided(decided.since(self.published));
        self.published = decided;
    }

    /// Give the engine the policy of control word `w`, if it changed.
    #[inline]
    fn sync_policy(&mut self, w: u32) {
        if self.policy_bits != control::policy_bits(w) {
            self.policy_bits = control::policy_bits(w);
            self.engine.set_policy(control::policy(w));
        }
    }

    /// `steady` counts the messages posted shortly before this one (they share the NIC's
    /// injection with it): it needs the post time, a clock read that only its decisions pay.
    #[inline(never)]
    fn decide_steady(&mut self, msg: &Message, in_alltoall: bool) -> Decision {
        // The collective this thread is inside, if any, routes the message (another thread's
        // call may have been the engine's current one).
        let (ticket, _) = thread_call();
        self.engine.resume_call(ticket);
        let msg = Message { posted_ns: Some(self.post_clock.now_ns()), ..*msg };
        let d = self.engine.on_threshold_crossed(&msg, in_alltoall);
        let _ = CALL.try_with(|c| c.set((ticket, Follow::of(self.engine.below_threshold_in_call(in_alltoall)))));
        d
    }

    /// Counters after the send, timing one decision in [`TIMING_SAMPLE`].
    pub fn after_send(&mut self, started_ns: Option<u64>) {
        self.read_and_observe();
        if let Some(t0) = started_ns {
            self.timed_decisions += 1;
            self.timed_decision_ns += sys::now_ns().saturating_sub(t0);
        }
    }

    /// Whether to time this decision.
    pub fn should_time(&self) -> bool {
        self.engine.stats().decisions.is_multiple_of(TIMING_SAMPLE)
    }
}

/// The warning for missing counters, and the fallback: automatic routing needs counters, so
/// it becomes the fixed low-latency mode.
pub fn counters_unavailable(why: &PapiError, cfg: &mut EngineConfig) -> String {
    let fix = why.fix();
    // In an A/B experiment the schedule owns the policy: an `auto` iteration without counters
    // has no window to decide from and routes like a message below the threshold.
    if let Some(ab) = settings().and_then(|s| s.ab.as_ref()) {
        let m = cfg.low_latency_mode;
        return match ab.0.iter().find(|p| p.is_automatic()) {
            Some(p) => format!(
                "{why}. The A/B policy {} needs the NIC counters: in its iterations every adaptive message uses {m}; \
                 the other policies are unaffected. {fix}.",
                p.name()
            ),
            None => format!(
                "{why}. Routing is unaffected (no A/B policy is automatic: auto or steady); records will carry no counter windows."
            ),
        };
    }
    match cfg.policy {
        Policy::Auto | Policy::Steady => {
            let m = cfg.low_latency_mode;
            cfg.policy = Policy::Fixed(m);
            format!(
                "{why}. Automatic routing needs the NIC counters, so every adaptive message now uses {m} (fixed). \
                 {fix}, or choose a mode with AAR_MODE."
            )
        }
        _ => format!("{why}. Routing is unaffected (AAR_MODE is not auto); records will carry no counter windows."),
    }
}

/// The decider, if no other thread is using it right now (`None` inside before init).
#[inline]
pub fn try_decider() -> Option<Guard<'static, Option<Decider>>> {
    DECIDER.try_lock()
}

/// The decider, waiting at most `wait` for a thread that is deciding (a boundary, exit).
pub fn decider_within(wait: Duration) -> Option<Guard<'static, Option<Decider>>> {
    DECIDER.try_lock_for(wait)
}

/// Install the decider (at the start-up). Its lock is left unbiased: the start-up may run on a
/// helper thread that ends ([`sys::with_room`]), and the bias belongs to the first thread that
/// decides. Nobody else can hold it yet (posts see READY only after the start-up); bounded anyway.
pub fn install_decider(decider: Decider) {
    // Whether the lock can be biased, found now rather than at the first decision (a file read).
    let _ = sys::process_barrier_ready();
    if let Some(mut slot) = DECIDER.try_lock_unbiased().or_else(|| decider_within(Duration::from_secs(1))) {
        *slot = Some(decider);
    }
}

/// The application's `PAPI_start` of `eventset`, forwarded. Where it finds an event set of
/// libaar.so counting on the same PAPI component (PAPI counts one per component at a time),
/// libaar.so gives way ([`Decider::give_way`]): the application's measurement is its own, the
/// routing an optimisation.
pub fn start_for_application(eventset: c_int) -> c_int {
    let Some(start) = papi::APPLICATION_START.get::<papi::StartFn>() else { return papi::PAPI_ENOINIT };
    // SAFETY: libpapi's PAPI_start (StartFn is its prototype), the caller's argument.
    let rc = unsafe { start(eventset) };
    if rc != papi::PAPI_EISRUN {
        return rc;
    }
    let give_way = || {
        // The decider is held only for a decision and its read; bounded, in case this thread holds it.
        let mut decider = decider_within(Duration::from_millis(100))?;
        // SAFETY: as above.
        decider.as_mut()?.give_way(eventset, || unsafe { start(eventset) })
    };
    std::panic::catch_unwind(give_way).ok().flatten().unwrap_or(rc)
}

/// The application's `PAPI_stop` of `eventset`, passed on; the counters that stepped aside for
/// that set count again ([`Decider::resume_after`]).
///
/// # Safety
/// `values` as PAPI_stop takes it (room for the set's counts, or NULL).
pub unsafe fn stop_for_application(eventset: c_int, values: *mut std::ffi::c_longlong) -> c_int {
    let Some(stop) = papi::APPLICATION_STOP.get::<papi::StopFn>() else { return papi::PAPI_ENOINIT };
    // SAFETY: libpapi's PAPI_stop (StopFn is its prototype), the caller's arguments.
    let rc = unsafe { stop(eventset, values) };
    let aside = STEPPED_ASIDE_FOR.load(Relaxed);
    if rc == PAPI_OK && (aside == i64::from(eventset) || aside == ANY_SET) {
        let resume = || {
            // Bounded, in case this thread holds the decider.
            let mut decider = decider_within(Duration::from_millis(100))?;
            decider.as_mut()?.resume_after(eventset);
            Some(())
        };
        let _ = std::panic::catch_unwind(resume);
    }
    rc
}

/// The application's `PAPI_shutdown`, passed on once the counters are given up
/// ([`papi_shut_down`]): it destroys libaar.so's event set, and stops the application's sets with
/// `PAPI_stop` calls that must not start libaar.so's again.
pub fn shutdown_for_application() {
    let Some(shutdown) = papi::APPLICATION_SHUTDOWN.get::<papi::ShutdownFn>() else { return };
    let _ = std::panic::catch_unwind(papi_shut_down);
    // SAFETY: libpapi's PAPI_shutdown (ShutdownFn is its prototype).
    unsafe { shutdown() }
}

/// The application shuts PAPI down (`PAPI_shutdown`, which destroys every event set), or is
/// initialising it again after a shutdown libaar.so did not see (a `PAPI_shutdown` looked up with
/// `dlsym`): libaar.so's event set is gone, and its number will be that of the first set the
/// application makes. The counters are given up now, not read (nor started again by a
/// `PAPI_stop` of the application's) as that set ([`Decider::papi_shut_down`]).
pub fn papi_shut_down() {
    // Bounded, in case this thread holds the decider.
    if let Some(mut decider) = decider_within(Duration::from_millis(100)) {
        if let Some(d) = decider.as_mut() {
            d.papi_shut_down();
        }
    }
}

/// The latest valid window, readable without the lock.
pub fn last_window() -> Option<Window> {
    let (l, s) = (HOT.last_latency.load(Relaxed), HOT.last_stall.load(Relaxed));
    (l != u64::MAX).then(|| Window { latency_us: f64::from_bits(l), stall_ratio: f64::from_bits(s) })
}

// ---- The locks, and fork() ---------------------------------------------------------------------

/// The decider; `None` before initialisation and under `AAR_DISABLE`.
pub static DECIDER: TryLock<Option<Decider>> = TryLock::biased(None);
/// The decision trace.
pub static TRACE: TraceFile = TraceFile::new();
/// The NICs the application attached.
pub static NICS: NicTable = NicTable::new();
/// The iterations and their record.
pub static ITERATIONS: Iterations = Iterations::new();

/// How many locks [`FORK_LOCKS`] holds.
pub const FORK_LOCK_COUNT: usize = 7;

/// Every lock of the library, held by the `fork()` handlers so that a child inherits consistent
/// state (holders are mid-decision or mid-line, never long) and released in the child, where a
/// lock another thread held would otherwise stay taken forever.
pub static FORK_LOCKS: [&dyn ForkHeld; FORK_LOCK_COUNT] =
    [&DECIDER, &TRACE, &NICS, &ITERATIONS, &diag::KEPT, &diag::PANIC_AT, &reserve::RESERVE];

/// Set in a fork child until its own state is made ([`control::Hot::forked`]).
static FORKED: &AtomicBool = &HOT.forked;
/// This process is a fork child of the one that loaded the library.
static FORK_CHILD: AtomicBool = AtomicBool::new(false);

/// Whether this process is a fork child of the one that loaded the library.
pub fn is_fork_child() -> bool {
    FORK_CHILD.load(Relaxed)
}

/// The fork found the decider held by another thread through its whole wait ([`forked`]).
static DECIDER_DISTRUSTED: AtomicBool = AtomicBool::new(false);

/// In a fork child, right after the fork: only atomic stores, flags and the DMAPP counts (little
/// is safe to call in a forked child of a threaded program); [`after_fork_in_child`] does the
/// work on the child's next intercepted call or at its exit. `decider_whole`: the fork held the
/// decider, so no thread was inside a decision when it copied the process.
pub fn forked(decider_whole: bool) {
    FORK_CHILD.store(true, Relaxed);
    DECIDER_DISTRUSTED.store(!decider_whole, Relaxed);
    node::forked();
    // Here, not on the child's next call: that may come from a thread the child starts (and
    // count itself meanwhile), where the forking thread's own count is not known.
    attributes::reset_in_child();
    FORKED.store(true, Relaxed);
    // Every post takes the slow path until the child's own state exists.
    control::leave_fast_path();
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
    tally::reset_in_child();
    let Some(settings) = settings() else { return };
    if let Some(mut slot) = DECIDER.try_lock_for(Duration::from_millis(200)) {
        if let Some(d) = slot.as_mut() {
            if DECIDER_DISTRUSTED.swap(false, Relaxed) {
                d.distrust_after_fork();
            }
            d.engine.reset_stats();
            (d.counter_reads, d.shared_readings, d.counter_read_failures, d.timed_decisions, d.timed_decision_ns) =
                (0, 0, 0, 0, 0);
            d.node_looks = Looks::default();
            d.failing_in_a_row = 0;
            // The inherited event set may still read (process-local events do); if not, the
            // read failure path falls back, with one warning, as anywhere else.
            d.read_and_observe();
        }
    }
    let tracing = TRACE.reopen_in_child(settings.trace.as_deref(), settings.trace_max);
    control::update(|w| control::with(w, None, None, Some(tracing)));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crate's sources without their unit tests (which may declare locks of their own).
    fn sources() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("\n#[cfg(test)]").next().unwrap_or_default().to_string();
                files.push((path.file_name().unwrap().to_string_lossy().into_owned(), code));
            }
        }
        files
    }

    /// The name after `for` in `impl<...> ForkHeld for Name...`.
    fn fork_held_types(code: &str) -> Vec<String> {
        code.match_indices("ForkHeld for ")
            .map(|(i, m)| code[i + m.len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
            .collect()
    }

    #[test]
    fn every_lock_is_held_across_fork() {
        let files = sources();
        let lock_types: Vec<String> = files.iter().flat_map(|(_, code)| fork_held_types(code)).collect();
        assert!(lock_types.iter().any(|t| t == "TryLock"), "{lock_types:?}");
        let state = &files.iter().find(|(f, _)| f == "state.rs").unwrap().1;
        let list = state.split("pub static FORK_LOCKS").nth(1).unwrap().split("];").next().unwrap();
        let listed: Vec<&str> =
            list.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
        let mut locks = Vec::new();
        for (file, code) in &files {
            for line in code.lines().map(str::trim) {
                let Some(decl) = line.strip_prefix("pub static ").or_else(|| line.strip_prefix("static ")) else {
                    continue;
                };
                let Some((name, ty)) = decl.split_once(':') else { continue };
                let ty: String = ty.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if lock_types.contains(&ty) {
                    locks.push(format!("{file}: {name}"));
                    assert!(listed.contains(&name), "{file}: the lock {name} is not in FORK_LOCKS");
                }
            }
        }
        assert_eq!(locks.len(), FORK_LOCK_COUNT, "{locks:?}");
    }
}
