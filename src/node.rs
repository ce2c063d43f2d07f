//! One counter reader per node. The Aries NIC counters belong to the node, so the ranks of a node
//! count the same traffic: instead of one PAPI read per rank and decision, the ranks of a node
//! share the latest *window* through a small shared-memory segment. PAPI counts from the start of
//! each process's event set, so two ranks' readings of one NIC differ by a constant nobody knows:
//! only the difference of two readings of one rank is the node's traffic. A rank that takes a
//! reading publishes the window from its previous own reading to this one; a rank that needs a
//! window uses the segment's when it ended at most `AAR_NODE_READING` ago, more than
//! [`STAMP_SLACK_NS`] after this rank's last one; otherwise it reads PAPI itself. No rank ever
//! waits for another: the segment is a sequence lock whose writer slot is only ever *tried*; a
//! rank that finds another one writing, or a torn copy, reads PAPI itself.
//!
//! The segment: `AAR_EMU_JOB_DIR/aar-node-<NIC>-<events>-<clock>` under `aar run` (the launcher
//! removes the folder), else `/dev/shm/aar-node-<uid>-<job>-<NIC>-<events>-<clock>` (`<job>` the
//! run as the records name it: the job id, its step, `.restart<N>`), removed as soon as every
//! rank of the node has mapped it (so that a job killed whole leaves nothing behind), or else by
//! the last rank that leaves. `<events>` is a hash of the event names, so ranks that read
//! different events never share; `<clock>` names the clock readings are stamped with ([`Clock`]).
//! The NIC address comes from `PMI_GNI_LOC_ADDR`; without it, or without a job id outside
//! `aar run`, every rank reads its own counters. A zero-filled file is a valid empty segment, so
//! ranks that map it at the same time need no set-up between them. A window without response
//! stalls is not taken by a rank whose readings have them: its series would lose them for good.
//!
//! The segment also holds the node's decided bytes per side, which every rank adds to at its
//! decisions and reads with each reading: `steady` attributes a window by them (the counters
//! measured the node's traffic, not only this rank's). With `AAR_NODE_READING=0` the ranks share
//! only these, and each reads its own counters.
//!
//! A rank that dies while writing would leave the sequence odd: once the last reading is
//! [`STUCK_NS`] old (or stamped as far in the future: a corrupted segment) and a rank has seen
//! the same claim held for [`STUCK_NS`] more, it checks the writer's pid (kept in the sequence
//! word): if that process has ended it releases the slot and marks the reading as none (complete
//! or not, nobody uses it). A pid that `kill(pid, 0)` still finds (a zombie its parent has not
//! reaped, or a process that got the pid since) holds the slot only while it maps the segment
//! (its `/proc/<pid>/maps`), and a claim in the rank's own name is released (it holds none while
//! it looks). A pid names the same process only within one PID namespace: the segment records
//! the namespace of the ranks that use it, and where they are of several (containers that share
//! /dev/shm), no rank asks about pids; a claim is released once seen held for
//! [`UNJUDGED_STUCK_NS`].
//! A fork child claims the slot in its own name ([`forked`]), and neither attaches nor leaves.
//!
//! The segment is made only when more than one rank shares the NIC ([`ranks_per_node`]): a lone
//! rank would pay for it and never find another rank's reading or bytes. A rank whose looks at
//! the segment keep finding no window it can use pauses them ([`Looks`]).

use crate::papi::{Papi, ReadFailure};
use crate::{diag, job, sys, topology};
use aar_engine::{CounterSample, SideBytes};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicI64, AtomicU32, AtomicU64, Ordering::*};
use std::sync::OnceLock;

/// The segment's layout: the window in the first cache line (read by every rank, written by the
/// one taking a reading), its decided bytes and the rarely written fields in the second. Every
/// field is an atomic and zero is a valid value of each.
#[repr(C, align(64))]
struct Segment {
    /// Sequence lock: the sequence in the low 32 bits, odd while a rank writes the reading, and
    /// then the writer's pid in the high 32 bits (so one compare-and-swap claims and names).
    seq: AtomicU64,
    /// The node clock's time just before the reading that ends the window; 0: none yet.
    taken: AtomicU64,
    /// 1 when `values[4]` holds response stalls.
    with_rsp_stalled: AtomicU64,
    /// The window's counts: the difference of two readings of the rank that published it.
    values: [AtomicI64; 5],
    /// Ranks attached (outside `aar run`, the file is removed once as many as the node has
    /// have attached, or else by the last one to leave).
    users: AtomicU32,
    /// 1 once a rank has removed the file: its name may since be another segment's.
    removed: AtomicU32,
    /// The node's decided bytes per side ([`SideBytes`]: low latency, low stall), which each rank
    /// adds to at its decisions: what the node's counters measured, for `steady`'s attribution.
    decided: [AtomicU64; 2],
    /// The node's decided bytes over the window, per side.
    window_decided: [AtomicU64; 2],
    /// The PID namespace of the ranks attached (the inode of their `/proc/self/ns/pid`), recorded
    /// by the first; [`SEVERAL_NAMESPACES`] once a rank of another one (or one that cannot read
    /// its own) has attached; 0: none recorded yet.
    pid_ns: AtomicU64,
}

// The file stays 128 bytes: `pid_ns` took 8 of the bytes the second line's alignment left unused
// (zero in every file, which reads as "no namespace recorded"), so no reader's offsets moved.
const _: () = assert!(std::mem::size_of::<Segment>() == 128);

/// [`Segment::pid_ns`] once ranks of more than one PID namespace (or one that cannot tell its
/// own) have attached: no rank can then judge a writer by its pid.
const SEVERAL_NAMESPACES: u64 = u64::MAX;

/// The sequence word of a writer `pid` that takes the slot after `seq` (even), and the word it
/// leaves when done.
fn claimed(seq: u64, pid: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from((seq as u32).wrapping_add(1))
}
fn released(claimed: u64) -> u64 {
    u64::from((claimed as u32).wrapping_add(1))
}

/// A write slot held this long is checked for a dead writer (a PAPI read takes microseconds).
pub const STUCK_NS: u64 = 10_000_000;

/// A write slot held this long, seen by one rank, is released without asking about the writer's
/// pid, where the node's ranks are of several PID namespaces and a pid cannot be judged. A live
/// writer holds the slot for one PAPI read (microseconds); one that is runnable but descheduled
/// gets a core back within a few scheduler periods (milliseconds), even on a node whose cores all
/// run ranks. 100 times [`STUCK_NS`] (1 s) is past that with a wide margin; a dead writer then
/// costs its node mates 1 s of reading their own counters, which they do anyway while a writer
/// holds the slot. Only a writer stopped that long (a debugger, SIGSTOP) has its slot released
/// under it.
pub const UNJUDGED_STUCK_NS: u64 = 100 * STUCK_NS;

/// A rank takes another's reading only if it was stamped more than this after its own last
/// one. The TSCs of two cores can differ by tens of nanoseconds (a virtual machine's vCPUs more),
/// so stamps closer than that do not say which reading came first; a rank reads its own instead.
pub const STAMP_SLACK_NS: u64 = 1_000;

/// Looks at the segment in one round: at the end of each, the rank decides whether to pause.
pub const LOOKS_PER_ROUND: u32 = 64;
/// Windows a round's looks must find for the rank to go on looking. A low bar: a pause also stops
/// the rank publishing, so the others find fewer windows; with 4 the pauses fed each other
/// (docs/node-reader.md).
pub const FOUND_PER_ROUND: u32 = 1;
/// The longest pause, in readings.
pub const MAX_PAUSE: u32 = 1024;

/// When a rank looks at the segment. A look, and the publishing that follows a look that finds
/// nothing, move the segment's lines between the cores of the node and read the clock; where the
/// ranks rarely find a window they can use, that costs each reading more than the PAPI reads it
/// saves (45 to 150 ns per reading with 4 ranks on the 2-core development VM, whose looks found
/// 12 to 65 windows in 16,004 readings). So a rank counts the windows found by each round of
/// [`LOOKS_PER_ROUND`] looks: after a round that found fewer than [`FOUND_PER_ROUND`] it reads
/// its own, without looking, publishing or reading the clock, for a pause of as many readings as
/// a round has looks, doubled (up to [`MAX_PAUSE`]) after each further such round; a round that
/// finds enough ends the pauses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Looks {
    /// Looks in this round, and the windows they found.
    looked: u32,
    found: u32,
    /// The latest pause (0: none since the last round that found enough).
    pause: u32,
    /// Readings of the current pause still to make.
    left: u32,
    /// Readings made in pauses (the record's `reads_in_pauses`).
    paused_readings: u64,
}

impl Looks {
    /// This reading is part of a pause: no look.
    #[inline]
    fn paused(&mut self) -> bool {
        let paused = self.left > 0;
        self.left = self.left.saturating_sub(1);
        self.paused_readings += u64::from(paused);
        paused
    }

    /// A look found a window (`true`) or not.
    fn looked(&mut self, found: bool) {
        self.looked += 1;
        self.found += u32::from(found);
        if self.looked < LOOKS_PER_ROUND {
            return;
        }
        self.pause = if self.found < FOUND_PER_ROUND {
            self.pause.saturating_mul(2).clamp(LOOKS_PER_ROUND, MAX_PAUSE)
        } else {
            0
        };
        (self.left, self.looked, self.found) = (self.pause, 0, 0);
    }

    /// Readings this rank made in pauses, without looking at the segment.
    pub fn paused_readings(&self) -> u64 {
        self.paused_readings
    }
}

/// The stamp of a reading made without a clock read (in a pause of the looks, or with sharing off):
/// later than any window, so the next look takes none.
pub const UNSTAMPED: u64 = u64::MAX;

/// The clock the ranks of a node stamp readings with: the TSC where the kernel keeps time with it
/// (11 ns to read on the development VM, where `clock_gettime` takes 27), else `CLOCK_MONOTONIC`
/// in ns. Every rank of a node makes the same choice, and the segment's name carries it.
#[derive(Clone, Copy, Debug)]
struct Clock {
    tsc: bool,
    /// Ticks per nanosecond.
    per_ns: f64,
}

impl Clock {
    fn of_this_node() -> Clock {
        if !sys::tsc_keeps_time() {
            return Clock { tsc: false, per_ns: 1.0 };
        }
        // The rate, against CLOCK_MONOTONIC over 200 µs (once per process, at start-up).
        let (t0, c0) = (sys::now_ns(), sys::tsc());
        let mut t1 = t0;
        while t1.saturating_sub(t0) < 200_000 {
            t1 = sys::now_ns();
        }
        let c1 = sys::tsc();
        match c1.checked_sub(c0) {
            Some(ticks) if ticks > 0 => Clock { tsc: true, per_ns: ticks as f64 / (t1 - t0) as f64 },
            _ => Clock { tsc: false, per_ns: 1.0 },
        }
    }

    #[inline]
    fn now(self) -> u64 {
        if self.tsc {
            sys::tsc_ordered()
        } else {
            sys::now_ns()
        }
    }

    fn ticks(self, ns: u64) -> u64 {
        (ns as f64 * self.per_ns) as u64
    }

    fn name(self) -> &'static str {
        if self.tsc {
            "tsc"
        } else {
            "ns"
        }
    }
}

/// A rank's own reading: the counters as its PAPI event set counts them, the node's decided bytes
/// with them, and when it was taken on the node's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnReading {
    pub sample: CounterSample,
    pub decided: SideBytes,
    pub taken: u64,
}

/// What a rank gets when it needs the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// This rank read PAPI (and published the window since its previous reading, when it could).
    Own(OwnReading),
    /// Another rank's window, ended at most the bound ago: its counts, the node's decided bytes
    /// over it, and when it ended.
    Shared { window: CounterSample, decided: SideBytes, taken: u64 },
}

/// This process's attachment to its node's segment.
pub struct Node {
    segment: &'static Segment,
    path: PathBuf,
    /// Remove the file once the node's ranks have attached, or when the last leaves (not under
    /// `aar run`, whose folder goes).
    remove_when_last: bool,
    /// The process that attached (a fork child inherits the mapping, not the attachment).
    pid: u32,
    /// The pid this process claims the write slot with: its own, in a fork child too ([`forked`]);
    /// kept here because getpid is a system call and a claim is made on the reading path.
    writer: AtomicU32,
    clock: Clock,
    /// Readings younger than this (in the clock's ticks) are used as they are.
    max_age: u64,
    /// Readings are shared (`AAR_NODE_READING` is not 0); else only the decided bytes are.
    share_readings: bool,
    /// [`STUCK_NS`] and [`UNJUDGED_STUCK_NS`] in the clock's ticks.
    stuck: u64,
    stuck_unjudged: u64,
    /// This process's PID namespace ([`Segment::pid_ns`]); 0 when it cannot be read.
    pid_ns: u64,
    /// A claim of the write slot this rank found held, and when it first found it (or last found
    /// its writer alive).
    held_claim: AtomicU64,
    held_since: AtomicU64,
    /// [`STAMP_SLACK_NS`] in the clock's ticks.
    slack: u64,
}

static NODE: OnceLock<Node> = OnceLock::new();

/// A short, stable name for a list of event names (FNV-1a), so ranks reading different events
/// use different segments.
fn events_hash(events: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in events.iter().flat_map(|e| e.bytes().chain([0])) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The segment's path, and whether the last rank removes it; `None` when ranks of other jobs or
/// nodes could not be told apart.
fn segment_path(events: &[String], clock: Clock) -> Option<(PathBuf, bool)> {
    let nic = topology::local_nic_address()?;
    let name = format!("aar-node-{nic:#x}-{:016x}-{}", events_hash(events), clock.name());
    if let Some(dir) = sys::emulator_folder("AAR_EMU_JOB_DIR") {
        return Some((dir.join(name), false));
    }
    let job = aar_record::job_in_name(&job::experiment()?);
    Some((Path::new("/dev/shm").join(format!("aar-node-{}-{job}-{}", sys::uid(), &name["aar-node-".len()..])), true))
}

/// Attach to this node's segment (once per process); `None`, and every rank reads its own
/// counters and keeps its decided bytes to itself, when the rank is alone on its node, no
/// segment name can be made, or the file cannot be mapped. With `max_age_ns` 0 the ranks share
/// only their decided bytes: each reads its own counters.
pub fn attach(events: &[String], max_age_ns: u64, ranks_per_node: u32) -> Option<&'static Node> {
    if ranks_per_node < 2 {
        return None;
    }
    if let Some(n) = NODE.get() {
        return Some(n);
    }
    let clock = Clock::of_this_node();
    let Some((path, remove_when_last)) = segment_path(events, clock) else {
        tracing::debug!("no NIC address (PMI_GNI_LOC_ADDR) or job id: each rank reads its own counters");
        return None;
    };
    let bytes = match sys::map_shared(&path, std::mem::size_of::<Segment>()) {
        Ok(b) => b,
        Err(e) => {
            let place = path.parent().unwrap_or(Path::new("/")).display();
            let fix = match e.raw_os_error() {
                Some(libc::ENOSPC | libc::EDQUOT) => {
                    format!("Free space in {place} (MPI libraries keep their shared memory there too).")
                }
                Some(libc::EACCES | libc::EPERM | libc::EROFS) => format!(
                    "To share the node's readings, let this user create files in {place} (a writable tmpfs, \
                     mode 1777, as MPI libraries need it too)."
                ),
                Some(libc::ENOENT) => format!(
                    "{place} does not exist (a container without it?): to share the node's readings, mount a \
                     tmpfs there, as MPI libraries need it too."
                ),
                // Something at the segment's name that is not this user's own segment (a link, a
                // FIFO, another user's file): left as it is.
                Some(libc::ELOOP) => "It is a symbolic link, which is not followed: remove it.".to_string(),
                None if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    "It is left as it is: remove it, or have its owner or an administrator remove it (another \
                     user's file there could feed this rank's routing)."
                        .to_string()
                }
                _ => diag::limit_fix(&e)
                    .map_or_else(|| format!("Check that this user can create files in {place}."), str::to_string),
            };
            diag::warn(&format!(
                "cannot make the node's shared segment {} ({e}): this rank reads its own counters and keeps its \
                 decided bytes to itself. {fix}",
                path.display()
            ));
            return None;
        }
    };
    // SAFETY: `bytes` is a page-aligned mapping of at least size_of::<Segment>() bytes that lives
    // for the whole process; Segment is repr(C), made of atomics only, and all-zero is a valid
    // value of each, so any content another process left is a valid Segment.
    let segment = unsafe { &*bytes.as_ptr().cast::<Segment>() };
    let pid_ns = record_pid_namespace(segment, &path);
    let users = segment.users.fetch_add(1, AcqRel) + 1;
    if remove_when_last && users >= ranks_per_node {
        // Every rank of the node has its mapping: the name can go now, so that a job whose ranks
        // are all killed (time limit, scancel, MPI_Abort) leaves nothing in /dev/shm. A rank that
        // opened it meanwhile keeps its mapping; one that comes later makes a new one.
        remove_once(segment, &path);
    }
    let (max_age, stuck, slack) = (clock.ticks(max_age_ns), clock.ticks(STUCK_NS), clock.ticks(STAMP_SLACK_NS));
    let share_readings = max_age_ns > 0;
    let node = Node {
        segment,
        path,
        remove_when_last,
        pid: sys::pid(),
        writer: AtomicU32::new(sys::pid()),
        clock,
        max_age,
        share_readings,
        stuck,
        stuck_unjudged: clock.ticks(UNJUDGED_STUCK_NS),
        pid_ns,
        slack,
        held_claim: AtomicU64::new(0),
        held_since: AtomicU64::new(0),
    };
    Some(NODE.get_or_init(|| node))
}

/// Record this rank's PID namespace in the segment (the first rank's stays), or mark it
/// [`SEVERAL_NAMESPACES`], and say so, when another one is recorded there or this rank cannot
/// read its own. This rank's namespace, 0 when it cannot be read.
fn record_pid_namespace(segment: &Segment, path: &Path) -> u64 {
    let found = match sys::pid_namespace() {
        Err(e) => (
            0,
            format!(
                "this rank cannot read its PID namespace (/proc/self/ns/pid: {e}), so it cannot tell whether a \
                 writer's pid names the same process for every rank"
            ),
        ),
        Ok(own) => match segment.pid_ns.compare_exchange(0, own, AcqRel, Acquire) {
            Ok(_) => return own,
            Err(recorded) if recorded == own => return own,
            Err(recorded) => {
                let others = if recorded == SEVERAL_NAMESPACES {
                    "ranks of several PID namespaces use it".to_string()
                } else {
                    format!("a rank before it is in pid:[{recorded}]")
                };
                (
                    own,
                    format!(
                        "this rank is in PID namespace pid:[{own}] and {others}, so a writer's pid does not name the \
                         same process for every rank"
                    ),
                )
            }
        },
    };
    // Before this rank's first claim, which a rank that sees it acquires (its release ordering).
    segment.pid_ns.store(SEVERAL_NAMESPACES, SeqCst);
    diag::warn(&format!(
        "the node's shared segment {}: {}. Its ranks release a claim left by a writer that died while writing \
         only once they have seen it held for {} ms, without asking whether the writer lives (instead of {} ms \
         and asking): a dead writer costs them that long of reading their own counters, and a writer stopped that \
         long loses its claim. To avoid it, run the node's ranks in one PID namespace (the container runtime's \
         option to share the host's), or give each namespace its own /dev/shm.",
        path.display(),
        found.1,
        UNJUDGED_STUCK_NS / 1_000_000,
        STUCK_NS / 1_000_000,
    ));
    found.0
}

/// At exit: detach; outside `aar run`, the last rank of the node removes the segment if no rank
/// has yet.
pub fn leave() {
    let Some(n) = NODE.get() else { return };
    if n.pid != sys::pid() {
        return;
    }
    if n.segment.users.fetch_sub(1, AcqRel) == 1 && n.remove_when_last {
        // Fewer ranks attached than the node has (or the count was wrong): the last one removes
        // it. A rank attaching right now keeps its mapping; ranks after it make a new one.
        remove_once(n.segment, &n.path);
    }
}

/// In a fork child, right after the fork (its fork handler): it claims the write slot in its own
/// name from now on, not in its parent's. (A child that died writing would hold the slot while
/// its parent lives; a parent that has ended would have the child's slot released under it.)
pub fn forked() {
    if let Some(n) = NODE.get() {
        n.writer.store(sys::pid(), Relaxed);
    }
}

/// Remove the segment's file, unless a rank already has: by then its name may be a newer
/// segment's.
fn remove_once(segment: &Segment, path: &Path) {
    if segment.removed.swap(1, AcqRel) == 0 {
        let _ = std::fs::remove_file(path);
    }
}

impl Node {
    /// The node's counters for a rank whose own previous reading is `last_own` and whose last
    /// window ended at `not_before` (on the node's clock): the segment's window when it ended less
    /// than the bound ago and after `not_before`, else this rank's own PAPI read, which publishes
    /// the window since `last_own` for the others. An own reading is stamped with the clock read
    /// just before its PAPI read when it is published (its counters are no older), just after it
    /// when this rank keeps it to itself (they are no newer). Without `last_own` (the rank's
    /// first reading), or while `looks` pause, the rank reads its own and publishes nothing.
    /// Never waits, never allocates.
    #[inline]
    pub fn read(
        &self,
        papi: &mut Papi,
        last_own: Option<&OwnReading>,
        not_before: u64,
        looks: &mut Looks,
    ) -> Result<Reading, ReadFailure> {
        let Some(last_own) = last_own.filter(|_| self.share_readings) else {
            // Sharing off (`AAR_NODE_READING=0`: nothing is compared with the stamp), or no window
            // to publish yet.
            return self.own(papi, self.share_readings);
        };
        if looks.paused() {
            // Unstamped: the first look after the pause takes no window (none ended after
            // `UNSTAMPED`), it publishes one, with a stamp the looks after it compare with.
            return self.own(papi, false);
        }
        let reading = self.look(papi, last_own, not_before);
        looks.looked(matches!(reading, Ok(Reading::Shared { .. })));
        reading
    }

    /// The segment's window if this rank can use it, else this rank's own reading, published when
    /// no other rank is writing.
    fn look(&self, papi: &mut Papi, last_own: &OwnReading, not_before: u64) -> Result<Reading, ReadFailure> {
        let s = self.segment;
        let now = self.clock.now();
        let seq = s.seq.load(Acquire);
        if seq & 1 == 0 {
            if let Some(shared) = self.young_copy(seq, now, not_before, last_own.sample.rsp_stalled.is_some()) {
                return Ok(shared);
            }
            let mine = claimed(seq, self.writer.load(Relaxed));
            // Release: a rank that sees this claim also sees the PID namespace this rank recorded
            // at attach (on x86 the same instruction as Acquire).
            if s.seq.compare_exchange(seq, mine, AcqRel, Relaxed).is_ok() {
                return self.publish(papi, mine, now, last_own);
            }
        } else {
            self.release_if_writer_died(seq, now);
        }
        // Another rank is writing right now: read our own rather than wait.
        self.own(papi, true)
    }

    /// This rank's own reading, kept to itself. `stamped`: stamped after the read, not before
    /// (this rank then takes a published window only if its writer's clock read, before its PAPI
    /// read, came after this one's PAPI read, and the two never cover the same traffic from the
    /// same side); else [`UNSTAMPED`], with no clock read.
    fn own(&self, papi: &mut Papi, stamped: bool) -> Result<Reading, ReadFailure> {
        let sample = papi.read()?;
        let taken = if stamped { self.clock.now() } else { UNSTAMPED };
        Ok(Reading::Own(OwnReading { sample, decided: self.decided(), taken }))
    }

    /// The segment's window if it ended at most `max_age` before `now`, after `not_before`, was
    /// not being rewritten while it was copied, and has response stalls if this rank's own
    /// readings do (`rsp_stalled`).
    #[inline]
    fn young_copy(&self, seq: u64, now: u64, not_before: u64, rsp_stalled: bool) -> Option<Reading> {
        let s = self.segment;
        let taken = s.taken.load(Acquire);
        // A window ended after `now` (by a rank that got there first) is younger still. One this
        // rank already used (or an older one) says nothing new, and one stamped within the slack
        // of it may be older all the same.
        if taken == 0 || taken <= not_before.saturating_add(self.slack) || now.saturating_sub(taken) > self.max_age {
            return None;
        }
        let v: [i64; 5] = std::array::from_fn(|i| s.values[i].load(Relaxed));
        let with_rsp_stalled = s.with_rsp_stalled.load(Relaxed) == 1;
        if rsp_stalled && !with_rsp_stalled {
            // Counted without them (by a rank whose PAPI lacked the optional event, or written by
            // something else): the window would leave this rank's series without response stalls
            // for the rest of the run (a sample moved on by it has none, nor any sample after).
            return None;
        }
        let d = [s.window_decided[0].load(Relaxed), s.window_decided[1].load(Relaxed)];
        fence(Acquire);
        let window = CounterSample {
            req_flits: v[0],
            req_stalled: v[1],
            rsp_latency: v[2],
            rsp_packets: v[3],
            rsp_stalled: with_rsp_stalled.then_some(v[4]),
        };
        let decided = SideBytes { low_latency: d[0], low_stall: d[1] };
        (s.seq.load(Relaxed) == seq).then_some(Reading::Shared { window, decided, taken })
    }

    /// Holding the write slot (`seq` is this rank's claim): read PAPI, publish the window since
    /// `last_own`, release.
    fn publish(&self, papi: &mut Papi, seq: u64, now: u64, last_own: &OwnReading) -> Result<Reading, ReadFailure> {
        let s = self.segment;
        fence(Release);
        let result = papi.read();
        let decided = self.decided();
        if let Ok(sample) = &result {
            let w = sample.since(last_own.sample);
            let v = [w.req_flits, w.req_stalled, w.rsp_latency, w.rsp_packets, w.rsp_stalled.unwrap_or(0)];
            for (slot, x) in s.values.iter().zip(v) {
                slot.store(x, Relaxed);
            }
            s.with_rsp_stalled.store(u64::from(w.rsp_stalled.is_some()), Relaxed);
            let d = decided.since(last_own.decided);
            s.window_decided[0].store(d.low_latency, Relaxed);
            s.window_decided[1].store(d.low_stall, Relaxed);
            // After the values: a slot released for a dead writer never shows a young torn window.
            s.taken.store(now, Release);
        }
        // A CAS, not a store: if the slot was released for us as dead, someone else may hold it.
        let _ = s.seq.compare_exchange(seq, released(seq), Release, Relaxed);
        result.map(|sample| Reading::Own(OwnReading { sample, decided, taken: now }))
    }

    /// A writer whose reading is [`STUCK_NS`] old, or stamped as far in the future (a corrupted
    /// segment: its age would never grow), and whose claim this rank has seen held for
    /// [`STUCK_NS`] more gives up the slot if its process has ended (a live writer holds it for
    /// the microseconds of one PAPI read). Seen held, whatever `kill(pid, 0)` says: a pid of
    /// another PID namespace may be absent from this one though its writer lives. A process that
    /// `kill(pid, 0)` finds may be a zombie or another process that got the pid: it is the writer
    /// only if it maps the segment (asked again at most every [`STUCK_NS`], for a writer that is
    /// stopped), and unless it is this process: a claim in its own name that it did not make (it
    /// holds none while it looks: its readings are made one at a time, under the decider's lock)
    /// was left by a dead process that had its pid, or is a corrupted word. Where the segment's
    /// ranks are not all of this rank's PID namespace, a pid says nothing: the claim is released
    /// once seen held for [`UNJUDGED_STUCK_NS`], without asking.
    #[cold]
    fn release_if_writer_died(&self, seq: u64, now: u64) {
        let s = self.segment;
        if now.abs_diff(s.taken.load(Relaxed)) < self.stuck {
            return;
        }
        if self.held_claim.swap(seq, Relaxed) != seq {
            self.held_since.store(now, Relaxed);
            return;
        }
        let judged = self.pid_ns != 0 && s.pid_ns.load(Acquire) == self.pid_ns;
        let bound = if judged { self.stuck } else { self.stuck_unjudged };
        if now.saturating_sub(self.held_since.load(Relaxed)) < bound {
            return;
        }
        self.held_since.store(now, Relaxed);
        let pid = (seq >> 32) as u32;
        let ended = !judged
            || sys::process_ended(pid)
            || pid == self.writer.load(Relaxed)
            || maps_segment(pid, std::ptr::from_ref(s) as usize) == Some(false);
        if ended {
            s.taken.store(0, Relaxed);
            let _ = s.seq.compare_exchange(seq, released(seq), Release, Relaxed);
        }
    }

    /// Add this rank's decided bytes since its last call (a relaxed add per side: a count, not
    /// a reading, so no order with the other ranks' is needed).
    pub fn add_decided(&self, bytes: SideBytes) {
        let d = &self.segment.decided;
        for (slot, b) in d.iter().zip([bytes.low_latency, bytes.low_stall]) {
            if b != 0 {
                slot.fetch_add(b, Relaxed);
            }
        }
    }

    /// The node's decided bytes per side so far.
    pub fn decided(&self) -> SideBytes {
        let d = &self.segment.decided;
        SideBytes { low_latency: d[0].load(Relaxed), low_stall: d[1].load(Relaxed) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether process `pid` maps the segment this process maps at `addr` (the same device and
/// inode in both `/proc/<pid>/maps`); `None` when either file cannot be read (no /proc, or a
/// process whose maps this one may not read: then it may be a live writer).
fn maps_segment(pid: u32, addr: usize) -> Option<bool> {
    let mut own = None;
    any_maps_line(Path::new("/proc/self/maps"), |line| {
        let start = line
            .split(|&b| b == b'-')
            .next()
            .and_then(|a| usize::from_str_radix(std::str::from_utf8(a).ok()?, 16).ok());
        own = mapped_file(line).filter(|_| start == Some(addr));
        own.is_some()
    })
    .ok()?;
    let own = own?;
    // Written on the stack: this runs inside a rank's reading, which never allocates.
    let mut buf = [0u8; 32];
    let len = {
        let mut w = &mut buf[..];
        std::io::Write::write_fmt(&mut w, format_args!("/proc/{pid}/maps")).ok()?;
        32 - w.len()
    };
    let path = Path::new(std::str::from_utf8(&buf[..len]).ok()?);
    match any_maps_line(path, |line| mapped_file(line) == Some(own)) {
        Ok(found) => Some(found),
        // The process went (or never was) between the two questions.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) || e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    }
}

/// The file a line of `/proc/<pid>/maps` maps, as its device (major, minor) and inode; `None`
/// for an anonymous mapping or a line of another form.
fn mapped_file(line: &[u8]) -> Option<(u32, u32, u64)> {
    let mut fields = line.split(|b| b.is_ascii_whitespace()).filter(|f| !f.is_empty()).skip(3);
    let (dev, inode) = (fields.next()?, fields.next()?);
    let num = |f: &[u8], radix| u64::from_str_radix(std::str::from_utf8(f).ok()?, radix).ok();
    let mut dev = dev.split(|&b| b == b':');
    let (major, minor) = (num(dev.next()?, 16)?, num(dev.next()?, 16)?);
    let inode = num(inode, 10).filter(|&i| i != 0)?;
    Some((u32::try_from(major).ok()?, u32::try_from(minor).ok()?, inode))
}

/// Calls `found` with each line of the file at `path` (a /proc maps file) until it returns true;
/// whether one did. Through a buffer on the stack, without allocating; a line longer than it
/// (a path of thousands of bytes) is skipped.
fn any_maps_line(path: &Path, mut found: impl FnMut(&[u8]) -> bool) -> std::io::Result<bool> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buf = [0u8; 4096];
    let (mut len, mut skipping) = (0, false);
    loop {
        let n = file.read(&mut buf[len..])?;
        if n == 0 {
            return Ok(false);
        }
        len += n;
        let mut start = 0;
        while let Some(end) = buf[start..len].iter().position(|&b| b == b'\n') {
            if !std::mem::take(&mut skipping) && found(&buf[start..start + end]) {
                return Ok(true);
            }
            start += end + 1;
        }
        buf.copy_within(start..len, 0);
        len -= start;
        if len == buf.len() {
            (len, skipping) = (0, true);
        }
    }
}

/// How many ranks share this node's NIC: PMI's clique when the process has initialised PMI,
/// else what the launcher's environment says ([`job::local_nranks`]), else 1.
pub fn ranks_per_node() -> u32 {
    sys::pmi_clique_size().filter(|&n| n > 0).or_else(job::local_nranks).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{c_int, c_longlong};
    use std::sync::atomic::AtomicBool;

    /// The node's counters: every PAPI read returns one more than the one before, so a later
    /// read has larger values.
    static COUNTER: AtomicI64 = AtomicI64::new(100);
    /// Set while the slow rank's own read is in progress: the other rank takes and publishes a
    /// reading in the middle of it (as if the slow rank were descheduled there).
    static INTERLEAVE: AtomicBool = AtomicBool::new(false);
    static OTHER: OnceLock<Node> = OnceLock::new();

    /// The other rank published its window (checked by the test, not here: a panic must not
    /// cross this `extern "C"` function).
    static PUBLISHED: AtomicBool = AtomicBool::new(false);

    /// A rank's first reading, from which its first published window runs.
    const FIRST: OwnReading = OwnReading {
        sample: CounterSample { req_flits: 0, req_stalled: 0, rsp_latency: 0, rsp_packets: 0, rsp_stalled: None },
        decided: SideBytes { low_latency: 0, low_stall: 0 },
        taken: 0,
    };

    unsafe extern "C" fn counters(_: c_int, v: *mut c_longlong) -> c_int {
        if let Some(other) = OTHER.get().filter(|_| INTERLEAVE.swap(false, SeqCst)) {
            // The holder lets go, the other rank takes the slot and publishes: its clock read
            // comes after the slow rank's, its PAPI read before the slow rank's.
            other.segment.seq.store(released(other.segment.seq.load(SeqCst)), SeqCst);
            let mut papi = Papi::with_reader(counters);
            let published =
                matches!(other.read(&mut papi, Some(&FIRST), 0, &mut Looks::default()), Ok(Reading::Own(_)));
            PUBLISHED.store(published, SeqCst);
        }
        let x = COUNTER.fetch_add(1, SeqCst);
        for i in 0..5 {
            // SAFETY: the caller passes room for 5 values.
            unsafe { *v.add(i) = x };
        }
        0
    }

    fn node(segment: &'static Segment, pid: u32) -> Node {
        let clock = Clock { tsc: false, per_ns: 1.0 };
        Node {
            segment,
            path: PathBuf::new(),
            remove_when_last: false,
            pid,
            writer: AtomicU32::new(pid),
            clock,
            max_age: u64::MAX / 2,
            share_readings: true,
            stuck: u64::MAX,
            stuck_unjudged: u64::MAX,
            pid_ns: 1,
            slack: STAMP_SLACK_NS,
            held_claim: AtomicU64::new(0),
            held_since: AtomicU64::new(0),
        }
    }

    fn empty_segment() -> &'static Segment {
        Box::leak(Box::new(Segment {
            seq: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            with_rsp_stalled: AtomicU64::new(0),
            values: Default::default(),
            users: AtomicU32::new(0),
            removed: AtomicU32::new(0),
            decided: Default::default(),
            window_decided: Default::default(),
            pid_ns: AtomicU64::new(1),
        }))
    }

    /// Stamps on different cores do not order readings closer than the slack: a reading stamped
    /// within it of the rank's own last one is not taken; one stamped later is.
    #[test]
    fn a_reading_stamped_within_the_slack_of_the_rank_s_own_is_not_taken() {
        let segment = empty_segment();
        let rank = node(segment, 1);
        segment.taken.store(50_000, SeqCst);
        segment.values[0].store(7, SeqCst);
        let now = 50_100;
        for (own_last, taken) in
            [(49_999, false), (50_000 - STAMP_SLACK_NS, false), (50_000 - STAMP_SLACK_NS - 1, true)]
        {
            let copy = rank.young_copy(0, now, own_last, false);
            assert_eq!(copy.is_some(), taken, "own reading stamped at {own_last}");
            assert!(copy
                .is_none_or(|r| matches!(r, Reading::Shared { window, taken: 50_000, .. } if window.req_flits == 7)));
        }
    }

    #[test]
    fn a_rank_that_reads_its_own_never_takes_an_older_reading_next() {
        let segment = empty_segment();
        let slow = node(segment, 1);
        let _ = OTHER.set(node(segment, 2));
        let mut papi = Papi::with_reader(counters);
        let mut looks = Looks::default();
        // A third rank holds the slot: the slow rank reads its own, and is held up in the middle
        // of it while the other rank publishes an older reading with a later clock read.
        segment.seq.store(claimed(0, 3), SeqCst);
        INTERLEAVE.store(true, SeqCst);
        let Ok(Reading::Own(own)) = slow.read(&mut papi, Some(&FIRST), 0, &mut looks) else {
            panic!("not its own reading")
        };
        assert!(PUBLISHED.load(SeqCst), "the other rank published in the middle");
        assert!(segment.taken.load(SeqCst) < own.taken, "the published window ended before");
        // Its next reading, not before its own: never that window, which holds traffic its own
        // reading had counted already.
        let next = slow.read(&mut papi, Some(&own), own.taken, &mut looks).unwrap();
        assert!(matches!(next, Reading::Own(r) if r.sample.req_flits > own.sample.req_flits), "{next:?} after {own:?}");
    }

    /// A published window is the difference of two readings of the rank that published it, so
    /// it holds the node's traffic whatever that rank's PAPI counted from; another rank takes
    /// the window, not the reading.
    #[test]
    fn a_shared_window_is_the_difference_of_its_publisher_s_own_readings() {
        let segment = empty_segment();
        let (publisher, taker) = (node(segment, 7), node(segment, 8));
        let mut papi = Papi::with_reader(counters);
        // Its previous own reading counted 40 flits, its next one counts more: the window is
        // the difference, with the node's decided bytes over it.
        let before = OwnReading { sample: CounterSample { req_flits: 40, ..FIRST.sample }, ..FIRST };
        publisher.add_decided(SideBytes { low_latency: 0, low_stall: 4096 });
        let Ok(Reading::Own(mine)) = publisher.read(&mut papi, Some(&before), 0, &mut Looks::default()) else {
            panic!("not published")
        };
        let window = mine.sample.since(before.sample);
        assert!(window.req_flits > 0);
        match taker.read(&mut papi, Some(&FIRST), 0, &mut Looks::default()) {
            Ok(Reading::Shared { window: w, decided, taken }) => {
                assert_eq!(w, window, "the publisher's window, not its reading");
                assert_eq!(decided, SideBytes { low_latency: 0, low_stall: 4096 });
                assert_eq!(taken, mine.taken);
            }
            other => panic!("not the shared window: {other:?}"),
        }
    }

    /// By hand: a round of 64 looks that finds no window pauses the next 64 readings; each
    /// further such round doubles the pause, up to 1024; a round that finds one ends the pauses.
    #[test]
    fn rounds_of_looks_that_find_nothing_pause_for_longer_each_time_until_one_finds_a_window() {
        let mut c = Looks::default();
        let pause = |c: &mut Looks| {
            let mut n = 0;
            while c.paused() {
                n += 1;
            }
            n
        };
        let mut pauses = Vec::new();
        for _ in 0..7 {
            for _ in 0..LOOKS_PER_ROUND {
                assert!(!c.paused());
                c.looked(false);
            }
            pauses.push(pause(&mut c));
        }
        assert_eq!(pauses, [64, 128, 256, 512, 1024, 1024, 1024]);
        assert_eq!(c.paused_readings(), pauses.iter().sum::<u64>());
        // One window found in a round: no pause after it, and the next round that finds nothing
        // pauses 64 again.
        for i in 0..LOOKS_PER_ROUND {
            c.looked(i == 40);
        }
        assert_eq!(pause(&mut c), 0, "paused after a round that found a window");
        for _ in 0..LOOKS_PER_ROUND - 1 {
            c.looked(false);
            assert!(!c.paused(), "paused before the round's end");
        }
        c.looked(false);
        assert_eq!(pause(&mut c), u64::from(LOOKS_PER_ROUND));
        assert_eq!(c.paused_readings(), pauses.iter().sum::<u64>() + 64);
    }

    /// In a pause a rank neither takes nor publishes a window (the segment is not touched), and
    /// the first look after it takes no window, however fresh (one may hold traffic the pause's
    /// unstamped readings counted): it publishes one. The look after that takes a fresh window.
    #[test]
    fn a_paused_rank_leaves_the_segment_alone_and_its_first_look_after_takes_nothing() {
        let segment = empty_segment();
        let rank = node(segment, 9);
        // Not `counters`, whose interleaving belongs to another test running at the same time.
        unsafe extern "C" fn plain(_: c_int, v: *mut c_longlong) -> c_int {
            for i in 0..5 {
                // SAFETY: the caller passes room for 5 values.
                unsafe { *v.add(i) = 1 };
            }
            0
        }
        let mut papi = Papi::with_reader(plain);
        let mut looks = Looks { left: 2, pause: 64, ..Looks::default() };
        let publish = |taken: u64| {
            segment.values[0].store(3, SeqCst);
            segment.taken.store(taken, SeqCst);
        };
        publish(u64::MAX / 4);
        let seq = segment.seq.load(SeqCst);
        let mut last = FIRST;
        for _ in 0..2 {
            let Ok(Reading::Own(r)) = rank.read(&mut papi, Some(&last), 0, &mut looks) else {
                panic!("a paused reading is the rank's own")
            };
            assert_eq!(r.taken, UNSTAMPED);
            assert_eq!(segment.seq.load(SeqCst), seq, "a paused reading touched the segment");
            last = r;
        }
        assert_eq!(looks.paused_readings(), 2);
        // The window in the segment is fresh, but may hold traffic the paused readings counted.
        let Ok(Reading::Own(r)) = rank.read(&mut papi, Some(&last), last.taken, &mut looks) else {
            panic!("the first look after a pause took a window")
        };
        assert_ne!(segment.seq.load(SeqCst), seq, "the first look after a pause published nothing");
        assert_eq!(segment.taken.load(SeqCst), r.taken);
        // Another rank's window, ended after this one: taken.
        publish(r.taken + 2 * STAMP_SLACK_NS);
        let next = rank.read(&mut papi, Some(&r), r.taken, &mut looks);
        assert!(matches!(next, Ok(Reading::Shared { window, .. }) if window.req_flits == 3), "{next:?}");
    }
}
