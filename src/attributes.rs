//! DMAPP's routing attributes, as the library knows them: the table of enumerator values in use,
//! each thread's view of its own attributes, and whether the process still steers DMAPP.
//!
//! DMAPP routes by an attribute of the calling thread, not by an argument of each call. A
//! thread's view holds the application's attributes as last read (all of
//! `dmapp_rma_attrs_ext_t`, as bytes), and per direction the application's routing value, the
//! value the library put in force, and whether the library may change it (the application's
//! value is adaptive in the table in use). The view is current while its stamp equals
//! [`state_stamp`]: a new DMAPP job (`dmapp_init`), its end (`dmapp_finalize`) or the end of
//! steering changes the stamp, and every thread then brings its view up to date on its next call.
//! A view also knows whether the job its attributes were read in has ended since
//! ([`Thread::job_ended`]), even while another thread is inside `dmapp_finalize` ([`end_job`]).
//! No lock anywhere: atomics, a thread-local, and values set once at initialisation.

use crate::diag;
use crate::settings::TableSource;
use crate::tally::{class_of, OTHER};
use aar_abi::dmapp::{Direction, RmaAttrsExt, Routing, RoutingTable};
use aar_engine::RoutingMode;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*};
use std::sync::OnceLock;

// ---- The table in use ----------------------------------------------------------------------------

static TABLE: OnceLock<(RoutingTable, TableSource)> = OnceLock::new();
/// The table's value of each adaptive mode, by [`RoutingMode::index`], for the fast path.
static MODE_VALUES: [AtomicU8; 4] = [const { AtomicU8::new(0) }; 4];

/// Use `table` (at initialisation, before any DMAPP call is routed).
pub fn set_table(table: RoutingTable, source: TableSource) {
    let (table, _) = TABLE.get_or_init(|| (table, source));
    for m in RoutingMode::ALL {
        // A checked table (`RoutingTable::check`) has every adaptive name.
        let value = Routing::from_dlvr_mode(m.dlvr_bits()).and_then(|r| table.value(r)).unwrap_or(0);
        MODE_VALUES[m.index()].store(value, Relaxed);
    }
}

/// The table in use and where it comes from, once initialised.
pub fn table() -> Option<&'static (RoutingTable, TableSource)> {
    TABLE.get()
}

/// The table in use and its source in words, for the trace (made once).
pub fn table_description() -> Option<&'static str> {
    static TEXT: OnceLock<String> = OnceLock::new();
    let (table, source) = table()?;
    Some(TEXT.get_or_init(|| format!("{table}, from {source}")))
}

/// The attribute value of an adaptive mode in the table in use.
#[inline(always)]
pub fn mode_value(mode_index: usize) -> u8 {
    MODE_VALUES[mode_index % 4].load(Relaxed)
}

/// The routing name of an attribute value in the table in use.
pub fn routing_of(value: u8) -> Option<Routing> {
    table().and_then(|(t, _)| t.routing(value))
}

/// The name of an attribute value, for the trace.
pub fn name_of(value: u8) -> &'static str {
    routing_of(value).map_or("unknown", Routing::name)
}

/// The tally class of messages sent with an attribute value (a value the table does not name is
/// `OTHER`).
pub fn class_of_value(value: u8) -> usize {
    routing_of(value).map_or(OTHER, |r| class_of(r.dlvr_mode()))
}

// ---- Steering ------------------------------------------------------------------------------------

/// The job generation (from 1) shifted left by one, and [`STOPPED`]: a thread's view is current
/// while its stamp equals this.
static STATE: AtomicU64 = AtomicU64::new(2);
/// Bit of [`STATE`]: the library stopped steering DMAPP in this process.
const STOPPED: u64 = 1;
/// `dmapp_finalize` calls under way (in the real function, or about to change [`STATE`]).
static ENDING: AtomicU32 = AtomicU32::new(0);
/// The job generation the last successful `dmapp_finalize` began (0: none yet): a job of an
/// earlier generation has ended.
static ENDED: AtomicU64 = AtomicU64::new(0);
static WHY_STOPPED: OnceLock<String> = OnceLock::new();
/// Attribute set calls the library made.
static SETS: AtomicU64 = AtomicU64::new(0);
/// Threads whose attributes the library read.
static THREADS: AtomicU64 = AtomicU64::new(0);
/// A routing value the table does not name was reported.
static UNKNOWN_NOTED: AtomicBool = AtomicBool::new(false);

/// What a current view's stamp must be.
#[inline(always)]
pub fn state_stamp() -> u64 {
    STATE.load(Acquire)
}

/// Whether the library has stopped steering DMAPP.
pub fn stopped() -> bool {
    state_stamp() & STOPPED != 0
}

/// Stop steering DMAPP for the rest of the process, because of `why`; `true` the first time
/// (whose caller warns).
pub fn stop(why: &str) -> bool {
    let first = STATE.fetch_or(STOPPED, AcqRel) & STOPPED == 0;
    if first {
        let _ = WHY_STOPPED.set(why.to_string());
    }
    first
}

/// `dmapp_init` started a job: every thread's view predates it, and is read again at the thread's
/// next call.
pub fn new_job() {
    STATE.fetch_add(2, AcqRel);
}

/// `dmapp_finalize`: `finalize` forwards it (`true`: the job has ended). As [`new_job`], and
/// from before the real call until the new generation is published, [`Thread::job_ended`] is true
/// on every thread: a thread whose attribute call DMAPP refuses because the job has just ended
/// (a program that calls DMAPP while another thread finalizes) learns why, from the ordering
/// DMAPP's own end of the job gives (its refusal comes after this count went up).
pub fn end_job(finalize: impl FnOnce() -> bool) {
    ENDING.fetch_add(1, AcqRel);
    if finalize() {
        let generation = (STATE.fetch_add(2, AcqRel) >> 1) + 1;
        ENDED.fetch_max(generation, AcqRel);
    }
    ENDING.fetch_sub(1, AcqRel);
}

/// One attribute set call made by the library.
pub fn count_set() {
    SETS.fetch_add(1, Relaxed);
}

/// In a fork child, right after the fork, on the forking thread (the child's only thread, so
/// nothing races these stores): its record counts its own set calls, and its own threads: this
/// one, if the library read its attributes in the parent (its view came along), and those that
/// are counted from here.
pub fn reset_in_child() {
    SETS.store(0, Relaxed);
    // A finalize under way on another thread of the parent has no thread here to end it.
    ENDING.store(0, Relaxed);
    let counted_here = with_thread(|t| t.seen.get()).unwrap_or(false);
    THREADS.store(u64::from(counted_here), Relaxed);
}

/// What the record says about DMAPP steering.
pub struct Summary {
    pub table: Option<&'static (RoutingTable, TableSource)>,
    pub stopped_because: Option<&'static str>,
    pub attribute_sets: u64,
    pub threads: u64,
}

pub fn summary() -> Summary {
    Summary {
        table: table(),
        stopped_because: WHY_STOPPED.get().map(String::as_str).filter(|_| stopped()),
        attribute_sets: SETS.load(Relaxed),
        threads: THREADS.load(Relaxed),
    }
}

// ---- Each thread's view --------------------------------------------------------------------------

/// One direction of a thread's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dir {
    /// The application's routing value.
    pub app: u8,
    /// Its tally class.
    pub app_class: u8,
    /// The value in force (the application's, or one the library set and read back); `None`: not
    /// known (a set went through whose result could not be verified, and giving the application's
    /// attributes back was refused: the give-back is tried again at a later call).
    pub in_force: Option<u8>,
    /// The library may change it: the application's value is adaptive, and steering is on.
    pub routable: bool,
}

impl Dir {
    const UNKNOWN: Dir = Dir { app: 0, app_class: 0, in_force: Some(0), routable: false };
}

/// The calling thread's view.
pub struct Thread {
    /// [`state_stamp`] when the view was last brought up to date; 0: never.
    stamp: Cell<u64>,
    /// The job generation in which the attributes were last read (taken before reading them).
    job: Cell<u64>,
    /// The application's attributes as last read.
    app: Cell<RmaAttrsExt>,
    dirs: [Cell<Dir>; 2],
    /// Counted in the threads the record reports.
    seen: Cell<bool>,
    /// Inside an intercepted DMAPP call (its uGNI traffic, and DMAPP calls it makes itself, are
    /// that call's).
    inside: Cell<bool>,
    /// Changes of routing DMAPP answered with a transient failure in a row on this thread.
    busy_streak: Cell<u32>,
    /// Changes to let pass before the next attempt after such a failure.
    busy_wait: Cell<u32>,
}

/// After the n-th transient failure in a row, a thread lets 2^(n-1) - 1 changes pass (at most
/// this many) before it tries again: 0, 1, 3, 7, ...
const BUSY_WAIT_MAX: u32 = 127;

thread_local! {
    static THREAD: Thread = const {
        Thread {
            stamp: Cell::new(0),
            job: Cell::new(0),
            app: Cell::new(RmaAttrsExt::ZERO),
            dirs: [const { Cell::new(Dir::UNKNOWN) }; 2],
            seen: Cell::new(false),
            inside: Cell::new(false),
            busy_streak: Cell::new(0),
            busy_wait: Cell::new(0),
        }
    };
}

/// The calling thread's view (`None` while the thread is being torn down).
#[inline(always)]
pub fn with_thread<R>(f: impl FnOnce(&Thread) -> R) -> Option<R> {
    THREAD.try_with(f).ok()
}

/// Whether the calling thread is inside an intercepted DMAPP call. Out of line, so that the
/// thread-local's address is not computed on uGNI's fast path before the control word says the
/// process uses DMAPP at all.
#[cold]
#[inline(never)]
pub fn inside_dmapp() -> bool {
    with_thread(|t| t.inside.get()).unwrap_or(false)
}

impl Thread {
    #[inline(always)]
    pub fn dir(&self, d: Direction) -> Dir {
        self.dirs[d.index()].get()
    }

    /// Whether the view is up to date.
    #[inline(always)]
    pub fn current(&self) -> bool {
        self.stamp.get() == state_stamp()
    }

    /// Run `f` (the forward) marked as inside a DMAPP call.
    #[inline(always)]
    pub fn inside<R>(&self, f: impl FnOnce() -> R) -> R {
        self.inside.set(true);
        let r = f();
        self.inside.set(false);
        r
    }

    pub fn is_inside(&self) -> bool {
        self.inside.get()
    }

    /// The application's attributes as last read.
    pub fn app(&self) -> RmaAttrsExt {
        self.app.get()
    }

    /// Whether the library has a routing of its own in force on this thread.
    pub fn steered(&self) -> bool {
        self.dirs.iter().any(|d| d.get().in_force != Some(d.get().app))
    }

    /// The library put `value` in force for `d` (read back as written).
    pub fn applied(&self, d: Direction, value: u8) {
        let dir = self.dir(d);
        self.dirs[d.index()].set(Dir { in_force: Some(value), ..dir });
        self.busy_streak.set(0);
        self.busy_wait.set(0);
    }

    /// A set of `d`'s routing went through, but DMAPP would neither read it back nor restore what
    /// was in force (busy both times): the routing in force is not known. The thread stays
    /// routable: its next change reads the attributes again and verifies what it writes.
    pub fn unsure(&self, d: Direction) {
        let dir = self.dir(d);
        self.dirs[d.index()].set(Dir { in_force: None, ..dir });
    }

    /// Whether a change of routing is to be tried now: not while the thread lets changes pass
    /// after a transient failure (this one is then counted as passed).
    pub fn change_due(&self) -> bool {
        match self.busy_wait.get() {
            0 => true,
            n => {
                self.busy_wait.set(n - 1);
                false
            }
        }
    }

    /// DMAPP answered a change of routing with a transient failure, which changed nothing: the
    /// failures in a row on this thread, this one included. The thread tries again at its next
    /// change after the first, then less and less often.
    pub fn failed_transiently(&self) -> u32 {
        let streak = self.busy_streak.get().saturating_add(1);
        self.busy_streak.set(streak);
        let wait = 1u32.checked_shl(streak - 1).map_or(BUSY_WAIT_MAX, |w| (w - 1).min(BUSY_WAIT_MAX));
        self.busy_wait.set(wait);
        streak
    }

    /// The library's attributes could not be taken back from this thread (DMAPP was busy): the
    /// library changes nothing more on it but giving them back, and what is in force stays as it
    /// is, for the counts (`unsure`: not known, after a set whose result could not be verified;
    /// `stamp`: the [`state_stamp`] taken before the attempt, as for [`Thread::given_back`]).
    pub fn give_back_pending(&self, unsure: bool, stamp: u64) {
        for cell in &self.dirs {
            let d = cell.get();
            let in_force = if unsure { None } else { d.in_force };
            cell.set(Dir { in_force, routable: false, ..d });
        }
        self.stamp.set(stamp);
    }

    /// The application's attributes `app` are in force (just read from DMAPP, `stamp`: the
    /// [`state_stamp`] taken before reading them, so that a job that ends meanwhile is seen as
    /// ended).
    pub fn read(&self, app: RmaAttrsExt, stamp: u64) {
        for d in Direction::ALL {
            let value = app.routing(d);
            let routing = routing_of(value);
            if routing.is_none() {
                note_unknown(d, value);
            }
            let routable = stamp & STOPPED == 0 && routing.is_some_and(Routing::is_adaptive);
            let app_class = class_of_value(value) as u8;
            self.dirs[d.index()].set(Dir { app: value, app_class, in_force: Some(value), routable });
        }
        self.app.set(app);
        self.stamp.set(stamp);
        self.job.set(stamp >> 1);
        self.busy_streak.set(0);
        self.busy_wait.set(0);
        if !self.seen.replace(true) {
            THREADS.fetch_add(1, Relaxed);
        }
    }

    /// The application's attributes are back in force (given back after steering stopped): the
    /// library changes nothing on this thread any more. `stamp`: the [`state_stamp`] taken before
    /// giving them back, so that a job another thread ends meanwhile (DMAPP then refuses the
    /// give-back, or the job it went to is over) leaves the view out of date, not current in a
    /// job that is gone.
    pub fn given_back(&self, stamp: u64) {
        for cell in &self.dirs {
            let d = cell.get();
            cell.set(Dir { in_force: Some(d.app), routable: false, ..d });
        }
        self.stamp.set(stamp);
    }

    /// The thread's attributes `now`, read in a job its view predates (`stamp`, as for
    /// [`Thread::read`]; `asked`: the routing, by [`Direction::index`], that the `dmapp_init`
    /// which began the job asked for, when this is its thread and it gave a request). Where the
    /// job the view was read in still runs (a second `dmapp_init`, which the emulator answers
    /// keeping the job and every thread's attributes) and their routing is still the one the
    /// library had put in force, DMAPP kept them: that routing is still the library's, and the
    /// application's is what it last stated: the routing this `dmapp_init` asked for, else the
    /// earlier one. It is what the library keeps, shows and gives back. Otherwise `now` is all the
    /// application's: after a `dmapp_finalize` the new job's attributes are the application's, the
    /// routing its `dmapp_init` asked for, also where that is the routing the library had in force.
    pub fn renew(&self, now: RmaAttrsExt, stamp: u64, asked: Option<[u8; 2]>) {
        let before = self.dirs.each_ref().map(Cell::get);
        let kept = self.steered()
            && !self.job_ended()
            && Direction::ALL.iter().all(|&d| Some(now.routing(d)) == before[d.index()].in_force);
        if !kept {
            return self.read(now, stamp);
        }
        let intent = asked.unwrap_or(before.map(|dir| dir.app));
        self.read(Direction::ALL.iter().fold(now, |a, &d| a.with_routing(d, intent[d.index()])), stamp);
        for d in Direction::ALL {
            let dir = self.dir(d);
            self.dirs[d.index()].set(Dir { in_force: before[d.index()].in_force, ..dir });
        }
    }

    /// The view is not current (its attributes could not be read: no job, or DMAPP busy); what
    /// it knew is kept for [`Thread::renew`] when they can be read again.
    pub fn unread(&self) {
        self.stamp.set(0);
    }

    /// Forget the view (its attributes could not be read): the next call reads them again.
    pub fn forget(&self) {
        self.stamp.set(0);
        for cell in &self.dirs {
            cell.set(Dir::UNKNOWN);
        }
    }

    /// Whether the view predates the current job (rather than only the end of steering).
    pub fn predates_job(&self) -> bool {
        self.stamp.get() >> 1 != state_stamp() >> 1
    }

    /// Whether the job the attributes were last read in has ended, or may be ending: a
    /// `dmapp_finalize` is under way on some thread, or one has ended a job since.
    pub fn job_ended(&self) -> bool {
        ENDING.load(Acquire) != 0 || ENDED.load(Acquire) > self.job.get()
    }
}

/// Once per process: a routing value the table in use does not name is never changed.
fn note_unknown(d: Direction, value: u8) {
    if UNKNOWN_NOTED.swap(true, Relaxed) {
        return;
    }
    let (table, source) = match table() {
        Some((t, s)) => (t.to_string(), s.to_string()),
        None => (String::new(), String::new()),
    };
    diag::warn(&format!(
        "DMAPP: a thread's {} routing attribute is {value}, which the routing table in use ({table}, from {source}) does not name; \
         aar never changes a routing it cannot name, so that direction keeps the application's routing wherever it has this value. \
         If this DMAPP numbers its routings differently, set AAR_DMAPP_ROUTING to its table or build aar against the site's dmapp.h (AAR_DMAPP_H).",
        direction_name(d)
    ));
}

/// `PUT` (PUTs and AMOs) or `GET`.
pub fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Put => "PUT",
        Direction::Get => "GET",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_follows_reads_steering_and_its_end() {
        set_table(RoutingTable::ASSUMED, TableSource::Assumed);
        assert_eq!(mode_value(RoutingMode::Adaptive3.index()), 6);
        assert_eq!(mode_value(RoutingMode::Adaptive0.index()), 2);
        assert_eq!(class_of_value(6), RoutingMode::Adaptive3.index());
        assert_eq!(name_of(1), "DETERMINISTIC");
        std::thread::spawn(|| {
            with_thread(|t| {
                assert!(!t.current(), "a new thread has no view");
                // PUT adaptive, GET in order.
                t.read(
                    RmaAttrsExt::ZERO.with_routing(Direction::Put, 2).with_routing(Direction::Get, 0),
                    state_stamp(),
                );
                assert!(t.current() && !t.steered());
                assert!(t.dir(Direction::Put).routable && !t.dir(Direction::Get).routable);
                t.applied(Direction::Put, 6);
                assert!(t.steered());
                assert_eq!(t.dir(Direction::Put).app, 2);
                new_job();
                assert!(!t.current() && t.predates_job());
                t.read(
                    RmaAttrsExt::ZERO.with_routing(Direction::Put, 2).with_routing(Direction::Get, 2),
                    state_stamp(),
                );
                assert!(t.current() && !t.steered());
                t.applied(Direction::Get, 5);
                assert!(stop("test") && !stop("again"), "stopped once");
                assert!(!t.current() && !t.predates_job());
                t.given_back(state_stamp());
                assert!(t.current() && !t.steered() && !t.dir(Direction::Put).routable);
                assert_eq!(summary().stopped_because, Some("test"));
                // A new job that kept the library's routing: the application's is still its own.
                t.applied(Direction::Get, 6);
                new_job();
                t.unread();
                let ours = RmaAttrsExt([7; 256]).with_routing(Direction::Put, 2).with_routing(Direction::Get, 6);
                t.renew(ours, state_stamp(), None);
                assert!(t.current() && t.steered() && !t.dir(Direction::Get).routable, "stopped: not routable");
                assert_eq!((t.dir(Direction::Get).app, t.dir(Direction::Get).in_force), (2, Some(6)));
                assert_eq!(t.app(), ours.with_routing(Direction::Get, 2), "the rest as read");
                // Its dmapp_init asked for a routing: that is the application's now, whether it is
                // the library's (GET) or not (PUT).
                new_job();
                t.renew(ours, state_stamp(), Some([1, 6]));
                assert!(t.current() && t.steered());
                assert_eq!((t.dir(Direction::Put).app, t.dir(Direction::Put).in_force), (1, Some(2)));
                assert_eq!((t.dir(Direction::Get).app, t.dir(Direction::Get).in_force), (6, Some(6)));
                assert_eq!(t.app(), ours.with_routing(Direction::Put, 1), "the rest as read");
                // One that did not: what it reads is the application's, whatever was asked.
                new_job();
                t.renew(ours.with_routing(Direction::Get, 5), state_stamp(), Some([6, 6]));
                assert!(!t.steered() && t.dir(Direction::Get).app == 5);
                // After the end of the job, a new job's attributes are all the application's, also
                // where they are the routing the library had in force.
                t.applied(Direction::Get, 6);
                assert!(!t.job_ended());
                end_job(|| {
                    assert!(t.job_ended(), "while dmapp_finalize is under way");
                    true
                });
                assert!(t.job_ended() && t.predates_job());
                new_job();
                t.renew(ours, state_stamp(), Some([6, 6]));
                assert!(!t.steered() && !t.job_ended());
                assert_eq!((t.dir(Direction::Get).app, t.app()), (6, ours));
                // A dmapp_finalize that fails ends nothing.
                end_job(|| false);
                assert!(t.current() && !t.job_ended());
                // A fork child of a process whose other thread is in dmapp_finalize has no
                // thread to end it: its job is not taken as ending for ever.
                ENDING.fetch_add(1, AcqRel);
                assert!(t.job_ended());
                reset_in_child();
                assert!(!t.job_ended(), "the fork child");
                assert!(t.inside(inside_dmapp) && !inside_dmapp());
            })
            .unwrap();
        })
        .join()
        .unwrap();
    }

    #[test]
    fn after_transient_failures_a_thread_waits_longer_each_time_and_a_success_resets() {
        std::thread::spawn(|| {
            with_thread(|t| {
                let mut tried = Vec::new();
                for call in 0..400 {
                    if t.change_due() && t.failed_transiently() <= 10 {
                        tried.push(call);
                    }
                }
                // Tried at the first call, then after letting 1, 3, 7, ... pass (127 at most).
                assert_eq!(tried, [0, 1, 3, 7, 15, 31, 63, 127, 255, 383]);
                t.applied(Direction::Put, 6);
                assert!(t.change_due(), "a success ends the wait");
                assert_eq!(t.failed_transiently(), 1, "and the streak");
            })
            .unwrap();
        })
        .join()
        .unwrap();
    }
}
