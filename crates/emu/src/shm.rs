//! The records a job's ranks share (job mode, see [`crate::job`]) and the means to use them from
//! several processes: a lock that survives its holder's death, futex waits, and the fixed layout
//! of one rank's file. Every field is an atomic, so a file mapped by several processes is only
//! ever accessed through shared references; an all-zero file is a valid empty rank.
//!
//! One rank's file ([`RankArea`]): a header (its process, rank, NIC address, cookie, the inst_ids of its
//! CDMs, the lock its AMOs take), the request and bounce buffer of its service thread
//! ([`Service`]), its registration table, the inbound rings of its completion queues, its SMSG
//! mailboxes' credit counters and its datagram slots.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aar_abi::*;

/// Registrations per rank.
pub const REG_SLOTS: usize = 8192;
/// Completion queues per rank (each has one ring).
pub const RINGS: usize = 64;
/// Events a ring holds at most; a CQ created larger overruns at this many.
pub const RING_CAP: usize = 8192;
/// SMSG mailboxes per rank.
pub const MBOXES: usize = 1024;
/// Outstanding datagrams per rank.
pub const DGRAMS: usize = 256;
/// Marks a mapped rank file as initialised by a rank of this layout: change it with the layout,
/// so that ranks of an older library never read a newer one's file (or the reverse).
pub const MAGIC: u64 = 0x6161_722d_6a6f_6203;
/// "No ring": a registration or mailbox whose events go nowhere.
pub const NO_RING: u32 = u32::MAX;

/// A process as the shared records name it, robust against pid reuse: its pid in the low 32 bits
/// and the low 32 bits of its start time (field 22 of `/proc/<pid>/stat`, clock ticks since
/// boot) in the high 32 bits. A pid alone is not enough: once its process has ended the kernel
/// may give the pid to another (pid_max wraps), and a waiter that trusted the pid would take the
/// newcomer for the holder and wait for ever. 0 names no process (no pid is 0); a start time of
/// 0 means "not known" (no /proc), and then only the pid is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcId(u64);

impl ProcId {
    /// This process. Cached per pid (a forked child has its own), since locks ask at every take.
    pub fn me() -> ProcId {
        static CACHE: AtomicU64 = AtomicU64::new(0);
        let pid = std::process::id();
        let cached = CACHE.load(Ordering::Relaxed);
        if cached != 0 && cached as u32 == pid {
            return ProcId(cached);
        }
        let id = ProcId::of(pid, start_time(pid).unwrap_or(0));
        CACHE.store(id.0, Ordering::Relaxed);
        id
    }

    /// Process `pid` started at `start` (clock ticks since boot; only the low 32 bits are kept).
    pub fn of(pid: u32, start: u64) -> ProcId {
        ProcId((start & 0xffff_ffff) << 32 | pid as u64)
    }

    pub fn from_raw(raw: u64) -> ProcId {
        ProcId(raw)
    }

    pub fn raw(self) -> u64 {
        self.0
    }

    pub fn pid(self) -> u32 {
        self.0 as u32
    }

    /// True while this process exists (EPERM: it exists, but is not ours to signal), has not
    /// ended and is the one that started at the recorded time, not a later process given its
    /// pid. A zombie (ended, not yet reaped by its parent: a launcher that waits for its ranks
    /// in order, or is stopped) still answers `kill(pid, 0)`, but holds no lock and serves no
    /// request, and would hang every rank that waits for it.
    pub fn alive(self) -> bool {
        let pid = self.pid();
        // SAFETY: kill with signal 0 only checks that the process exists.
        let exists = unsafe { libc::kill(pid as libc::pid_t, 0) == 0 || *libc::__errno_location() == libc::EPERM };
        if !exists {
            return false;
        }
        // An unreadable stat (no /proc) cannot tell: the process counts as alive, as it exists.
        let Some((state, start)) = stat_of(pid) else {
            return true;
        };
        let recorded = self.0 >> 32;
        !matches!(state, 'Z' | 'X') && (recorded == 0 || start & 0xffff_ffff == recorded)
    }
}

/// A process held for calls that name it by pid ([`ProcId::hold`]): by a pidfd where the kernel
/// has them (Linux 5.3), which names that process for good, else by its pid and start time.
pub struct Held {
    proc: ProcId,
    pidfd: Option<OwnedFd>,
}

impl ProcId {
    /// Holds this process for calls that name it by pid (process_vm_readv/writev); None when it
    /// has ended or its pid is another process's now ([`ProcId::alive`]).
    pub fn hold(self) -> Option<Held> {
        // SAFETY: pidfd_open takes a pid and flags; it returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid() as libc::pid_t, 0) };
        let pidfd = match fd {
            // SAFETY: a descriptor pidfd_open has just returned, owned by nothing else.
            0.. => Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }),
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) => return None,
            // No pidfds here (an old kernel, a seccomp filter, no descriptor left): the start time.
            _ => None,
        };
        // The pid names the recorded process after the pidfd was opened, so it did when it was
        // opened (a live process keeps its pid): the pidfd is the recorded process's.
        self.alive().then_some(Held { proc: self, pidfd })
    }
}

impl Held {
    /// True when the process is held by a pidfd, which names it for good: the hold may then be
    /// kept for later calls, each checked with [`Held::still_here`] alone.
    pub fn by_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// The held process's pid.
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// True while the held process has not been reaped, so that its pid still names it: a call
    /// made by pid since [`ProcId::hold`] reached it (or failed), and no other process.
    pub fn still_here(&self) -> bool {
        match &self.pidfd {
            Some(fd) => {
                // SAFETY: signal 0 through a pidfd only checks that its process exists; no
                // siginfo is passed.
                let rc = unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd.as_raw_fd(),
                        0,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    )
                };
                rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
            }
            None => self.proc.alive(),
        }
    }
}

/// The state (field 3) and start time (field 22, clock ticks since boot) of process `pid`, from
/// `/proc/<pid>/stat`; None when it cannot be read.
fn stat_of(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ...": comm may hold spaces and parentheses, so the state follows the last ')'.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 was the state: field 22 is 19 further on.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// The start time of process `pid` (clock ticks since boot), if /proc tells it.
fn start_time(pid: u32) -> Option<u64> {
    stat_of(pid).map(|(_, start)| start)
}

/// Sleeps while `word` holds `expected`, at most `timeout` (None: until woken). Returns early on
/// a wake-up, a change of the word or a signal; callers re-check their condition.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: the word is a live, aligned u32 (in shared memory: not FUTEX_PRIVATE); the timeout
    // is NULL or a valid timespec that outlives the call.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, expected, ts_ptr) };
}

/// Wakes every process and thread waiting on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}

/// Waits until `ready` says yes, sleeping on `word` between checks, at most until `deadline`
/// (None: for ever). `ready` is checked after the word is read, so a change signalled between
/// the two (with [`futex_wake`] after changing the word) is never missed. False on time-out.
pub fn wait_until(word: &AtomicU32, deadline: Option<Instant>, mut ready: impl FnMut() -> bool) -> bool {
    loop {
        let seen = word.load(Ordering::Acquire);
        if ready() {
            return true;
        }
        let timeout = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return false,
            },
        };
        futex_wait(word, seen, timeout);
    }
}

/// True when every page of [addr, addr+len) is mapped, checked the way registration pins pages.
pub fn mapped(addr: u64, len: u64) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let Some(end) = addr.checked_add(len) else {
        return false;
    };
    let mut at = addr & !(page - 1);
    let mut residency = [0u8; 1024];
    while at < end {
        let chunk = (end - at).min(page * residency.len() as u64);
        // SAFETY: mincore only inspects the mapping of the page-aligned range and writes one
        // byte per page into `residency`, which has room for chunk/page (<= 1024) bytes.
        if unsafe { libc::mincore(at as *mut c_void, chunk as usize, residency.as_mut_ptr()) } != 0 {
            return false;
        }
        at += chunk.div_ceil(page) * page;
    }
    true
}

/// A mutual-exclusion lock in shared memory: `owner` is 0 when free, else the holder's
/// [`ProcId`]; waiters sleep on `wake`, bumped at every release (a futex word is 32 bits, an
/// owner 64). A waiter that finds the holder gone ([`ProcId::alive`]: a zombie, or a pid now
/// another process's, too) takes the lock over, so a crashed rank cannot hang the others.
#[repr(C)]
#[derive(Default)]
pub struct Lock {
    owner: AtomicU64,
    wake: AtomicU32,
}

pub struct LockGuard<'a>(&'a Lock);

impl Lock {
    pub fn lock(&self) -> LockGuard<'_> {
        let me = ProcId::me().raw();
        loop {
            let seen = self.wake.load(Ordering::Acquire);
            match self.owner.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return LockGuard(self),
                Err(holder) => {
                    // A release after `seen` was read bumps `wake`: the wait then returns at once.
                    futex_wait(&self.wake, seen, Some(Duration::from_millis(20)));
                    if holder != me && !ProcId::from_raw(holder).alive() {
                        let _ = self.owner.compare_exchange(holder, 0, Ordering::AcqRel, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.0.owner.store(0, Ordering::Release);
        self.0.wake.fetch_add(1, Ordering::Release);
        futex_wake(&self.0.wake);
    }
}

/// The header of a rank's file.
#[repr(C)]
pub struct Header {
    /// [`MAGIC`] once the rest of the header is written.
    pub magic: AtomicU64,
    /// The rank's process ([`ProcId`]): whose memory other ranks copy to and from, and which
    /// they wait for only while it is alive.
    pub proc: AtomicU64,
    pub rank: AtomicU32,
    pub nic_addr: AtomicU32,
    pub cookie: AtomicU32,
    /// Held around every AMO's read-modify-write on this rank's memory.
    pub amo_lock: Lock,
    /// The inst_ids of the CDMs attached in this rank (the first 16), for `aar` tools and tests.
    pub inst_count: AtomicU32,
    pub inst_ids: [AtomicU32; 16],
}

/// A registration as other ranks see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg {
    pub addr: u64,
    pub len: u64,
    pub read_only: bool,
    /// The ring of the registration's CQ (its remote events), or [`NO_RING`].
    pub ring: u32,
}

impl Reg {
    /// True when [addr, addr+len) lies inside the registered region.
    pub fn covers(&self, addr: u64, len: u64) -> bool {
        addr >= self.addr && addr.checked_add(len).is_some_and(|end| end <= self.addr + self.len)
    }
}

/// One registration slot: free while `check` is 0. Written only by its rank, seqlock-style
/// (check cleared, fields, check set), so a reader never takes a half-written registration.
#[repr(C)]
pub struct RegSlot {
    check: AtomicU64,
    addr: AtomicU64,
    len: AtomicU64,
    read_only: AtomicU32,
    ring: AtomicU32,
}

impl RegSlot {
    pub fn is_free(&self) -> bool {
        self.check.load(Ordering::Acquire) == 0
    }

    /// Publishes a registration under `check` (never 0).
    pub fn publish(&self, check: u64, r: &Reg) {
        self.check.store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        self.addr.store(r.addr, Ordering::Relaxed);
        self.len.store(r.len, Ordering::Relaxed);
        self.read_only.store(r.read_only as u32, Ordering::Relaxed);
        self.ring.store(r.ring, Ordering::Relaxed);
        self.check.store(check, Ordering::Release);
    }

    pub fn clear(&self) {
        self.check.store(0, Ordering::Release);
    }

    /// True when the slot holds a registration (under any check) that covers [addr, addr+len)
    /// and, when `write`, may be written.
    pub fn allows(&self, addr: u64, len: u64, write: bool) -> bool {
        let check = self.check.load(Ordering::Acquire);
        self.read(check).is_some_and(|r| r.covers(addr, len) && !(write && r.read_only))
    }

    /// The registration, if the slot holds one under `check`.
    pub fn read(&self, check: u64) -> Option<Reg> {
        if check == 0 || self.check.load(Ordering::Acquire) != check {
            return None;
        }
        let r = Reg {
            addr: self.addr.load(Ordering::Relaxed),
            len: self.len.load(Ordering::Relaxed),
            read_only: self.read_only.load(Ordering::Relaxed) != 0,
            ring: self.ring.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        (self.check.load(Ordering::Relaxed) == check).then_some(r)
    }
}

#[repr(C)]
struct RingEntry {
    entry: AtomicU64,
    /// The completed descriptor of a local POST event (meaningful only in the owner), else 0.
    descr: AtomicU64,
}

/// The events of one completion queue, in its rank's file, so that other ranks deliver remote
/// events into it. Fields other than `seq` change only under `lock`.
#[repr(C)]
pub struct Ring {
    lock: Lock,
    /// Bumped after every delivery; GNI_CqWaitEvent sleeps on it.
    pub seq: AtomicU32,
    in_use: AtomicU32,
    capacity: AtomicU32,
    head: AtomicU32,
    count: AtomicU32,
    /// Slots promised to local posts in flight.
    reserved: AtomicU32,
    /// A remote event found the ring full; reported once by the next take.
    overrun: AtomicU32,
    entries: [RingEntry; RING_CAP],
}

impl Ring {
    /// Claims a free ring for a CQ of `capacity` events (clamped to [`RING_CAP`]).
    pub fn claim(&self, capacity: u32) -> bool {
        let _g = self.lock.lock();
        if self.in_use.load(Ordering::Relaxed) != 0 {
            return false;
        }
        self.in_use.store(1, Ordering::Relaxed);
        self.capacity.store(capacity.clamp(1, RING_CAP as u32), Ordering::Relaxed);
        for w in [&self.head, &self.count, &self.reserved, &self.overrun] {
            w.store(0, Ordering::Relaxed);
        }
        true
    }

    pub fn release(&self) {
        let _g = self.lock.lock();
        self.in_use.store(0, Ordering::Relaxed);
    }

    pub fn in_use(&self) -> bool {
        self.in_use.load(Ordering::Acquire) != 0
    }

    fn room(&self) -> u32 {
        let used = self.count.load(Ordering::Relaxed) + self.reserved.load(Ordering::Relaxed);
        self.capacity.load(Ordering::Relaxed).saturating_sub(used)
    }

    /// Promises `n` slots to a post about to run; false when there is no room.
    pub fn reserve(&self, n: u32) -> bool {
        let _g = self.lock.lock();
        if self.room() < n {
            return false;
        }
        self.reserved.fetch_add(n, Ordering::Relaxed);
        true
    }

    pub fn unreserve(&self, n: u32) {
        let _g = self.lock.lock();
        let r = self.reserved.load(Ordering::Relaxed);
        self.reserved.store(r.saturating_sub(n), Ordering::Relaxed);
    }

    /// Delivers an event: into a reserved slot, or (remote events) into a free one, else the
    /// ring overruns. False when the event was lost (the ring is not in use, or overran).
    pub fn push(&self, entry: u64, descr: u64, reserved: bool) -> bool {
        let delivered = {
            let _g = self.lock.lock();
            if !self.in_use() {
                return false;
            }
            if reserved {
                let r = self.reserved.load(Ordering::Relaxed);
                self.reserved.store(r.saturating_sub(1), Ordering::Relaxed);
            }
            let cap = self.capacity.load(Ordering::Relaxed);
            let count = self.count.load(Ordering::Relaxed);
            if !reserved && self.room() == 0 || count >= cap {
                self.overrun.store(1, Ordering::Relaxed);
                false
            } else {
                let i = (self.head.load(Ordering::Relaxed) + count) % cap;
                let e = &self.entries[i as usize];
                e.entry.store(entry, Ordering::Relaxed);
                e.descr.store(descr, Ordering::Relaxed);
                self.count.store(count + 1, Ordering::Relaxed);
                true
            }
        };
        self.seq.fetch_add(1, Ordering::Release);
        futex_wake(&self.seq);
        delivered
    }

    /// The next event and its descriptor: GNI_RC_ERROR_RESOURCE once after an overrun,
    /// GNI_RC_NOT_DONE when empty.
    pub fn take(&self) -> Result<(u64, u64), GniReturn> {
        let _g = self.lock.lock();
        if self.overrun.swap(0, Ordering::Relaxed) != 0 {
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        let count = self.count.load(Ordering::Relaxed);
        if count == 0 {
            return Err(GNI_RC_NOT_DONE);
        }
        let head = self.head.load(Ordering::Relaxed);
        let e = &self.entries[head as usize];
        let got = (e.entry.load(Ordering::Relaxed), e.descr.load(Ordering::Relaxed));
        self.head.store((head + 1) % self.capacity.load(Ordering::Relaxed), Ordering::Relaxed);
        self.count.store(count - 1, Ordering::Relaxed);
        Ok(got)
    }
}

/// An SMSG mailbox's control: its messages live in the receiver's registered memory at `addr`,
/// one slot of `stride` bytes per credit; the sender publishes with `tail`, the receiver frees
/// with `head`. `addr` (with the rank) is how a sender finds it from the receiver's attributes;
/// `ep` tells it whether the endpoint it sent to still keeps it.
#[repr(C)]
pub struct Mbox {
    pub state: AtomicU32,
    pub ring: AtomicU32,
    pub addr: AtomicU64,
    pub credits: AtomicU32,
    pub stride: AtomicU32,
    pub maxsize: AtomicU32,
    /// The receiving endpoint's creation number (low 32 bits), in what was padding before.
    pub ep: AtomicU32,
    /// Serialises the senders of one mailbox.
    pub send_lock: Lock,
    pub head: AtomicU64,
    pub tail: AtomicU64,
}

// `ep` took padding: the rank file's size (said in docs/emulator-job.md) stays.
const _: () = assert!(std::mem::size_of::<Mbox>() == 64);

/// A mailbox slot is free / set up by GNI_SmsgInit.
pub const MBOX_FREE: u32 = 0;
pub const MBOX_ACTIVE: u32 = 1;

/// One outstanding datagram (GNI_EpPostData*). Changed only under the job's datagram lock; the
/// poster sleeps on `state`.
#[repr(C)]
pub struct Dgram {
    pub state: AtomicU32,
    /// The poster's NIC address and inst_id.
    pub local_addr: AtomicU32,
    pub local_inst: AtomicU32,
    /// Where it goes: the bound endpoint's remote; `wildcard` 1 for an unbound endpoint.
    pub remote_addr: AtomicU32,
    pub remote_inst: AtomicU32,
    pub wildcard: AtomicU32,
    /// Who it was matched with.
    pub peer_addr: AtomicU32,
    pub peer_inst: AtomicU32,
    /// The poster's endpoint handle (a number in the poster's process) and datagram id.
    pub ep: AtomicU64,
    pub id: AtomicU64,
    pub in_len: AtomicU32,
    pub out_len: AtomicU32,
    /// The poster's buffer for the peer's data (an address in the poster's process) and its size.
    pub out_buf: AtomicU64,
    pub out_cap: AtomicU32,
    pub in_data: [AtomicU64; GNI_DATAGRAM_MAXSIZE as usize / 8],
    pub out_data: [AtomicU64; GNI_DATAGRAM_MAXSIZE as usize / 8],
}

/// Datagram states: free, posted and waiting for its match, matched (the peer's data is in
/// `out_data`) and not yet collected by Test/Wait.
pub const DG_FREE: u32 = 0;
pub const DG_PENDING: u32 = 1;
pub const DG_DONE: u32 = 2;

/// Copies `bytes` into words of shared memory.
pub fn store_bytes(words: &[AtomicU64], bytes: &[u8]) {
    for (w, chunk) in words.iter().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        w.store(u64::from_ne_bytes(b), Ordering::Relaxed);
    }
}

/// The first `len` bytes of words of shared memory.
pub fn load_bytes(words: &[AtomicU64], len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.load(Ordering::Relaxed).to_ne_bytes()).collect();
    out.truncate(len);
    out
}

/// A `T` of all-zero bytes on the heap: an empty set of shared records outside any file.
///
/// # Safety
/// All-zero bytes are a valid `T` (true of the records here, made of atomic integers).
pub unsafe fn zeroed_box<T>() -> Box<T> {
    let layout = std::alloc::Layout::new::<T>();
    assert!(layout.size() > 0);
    // SAFETY: a non-zero-sized layout; the allocation is checked below.
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: p is a fresh allocation of T's layout, whose zero bytes are a valid T (this
    // function's contract); the Box takes ownership with the same layout.
    unsafe { Box::from_raw(p) }
}

/// Bytes one request to a rank's service thread moves at most.
pub const BOUNCE_BYTES: usize = 1 << 16;

/// What a request asks the service thread to do: copy from its memory into the bounce buffer,
/// or from the bounce buffer into its memory.
pub const SERVE_READ: u32 = 1;
pub const SERVE_WRITE: u32 = 2;

/// A rank's service: when the kernel refuses other ranks direct access to its memory, its own
/// thread copies between its registered memory and this bounce buffer for them. One request at
/// a time (`lock`); the requester bumps `request`, the thread answers by setting `done` to the
/// number of the request it answered.
#[repr(C)]
pub struct Service {
    pub lock: Lock,
    pub request: AtomicU32,
    pub done: AtomicU32,
    /// 1 once the rank's service thread exists; it answers for the life of the process.
    pub running: AtomicU32,
    pub op: AtomicU32,
    /// 0: done; 1: refused (not inside a registration of the rank, or not mapped).
    pub status: AtomicU32,
    pub addr: AtomicU64,
    pub len: AtomicU64,
    pub bounce: [AtomicU64; BOUNCE_BYTES / 8],
}

impl Service {
    /// The bounce buffer's bytes. Only the holder of `lock` (and the service thread while it
    /// answers that holder's request) touches them.
    pub fn bounce(&self) -> *mut u8 {
        self.bounce.as_ptr() as *mut u8
    }
}

/// One rank's file, mapped whole.
#[repr(C)]
pub struct RankArea {
    pub header: Header,
    pub service: Service,
    pub regs: [RegSlot; REG_SLOTS],
    pub rings: [Ring; RINGS],
    pub mboxes: [Mbox; MBOXES],
    pub dgrams: [Dgram; DGRAMS],
}

/// Marks the job-wide file ([`JobArea`]) as one of this layout: change it with the layout, so
/// that ranks of another build never take a lock they do not share (a job folder reused, or
/// ranks of two builds in one job).
pub const JOB_MAGIC: u64 = 0x6161_722d_6a6f_6201;

/// The job-wide file: the lock datagram matching takes.
#[repr(C)]
pub struct JobArea {
    /// [`JOB_MAGIC`], set by the first rank that maps the file.
    pub magic: AtomicU64,
    pub dgram_lock: Lock,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zeroed<T>() -> Box<T> {
        // SAFETY: every field of the shared records is an atomic integer (or an array of them),
        // for which all-zero bytes are a valid value.
        unsafe { zeroed_box() }
    }

    #[test]
    fn a_ring_reserves_delivers_and_overruns() {
        let ring: Box<Ring> = zeroed();
        assert!(ring.claim(2));
        assert!(!ring.claim(2), "already in use");
        assert!(ring.reserve(1));
        assert!(ring.push(7, 0, false));
        assert!(!ring.push(8, 0, false), "the reserved slot is not for remote events");
        assert!(ring.push(9, 0x40, true));
        assert_eq!(ring.take(), Err(GNI_RC_ERROR_RESOURCE));
        assert_eq!(ring.take(), Ok((7, 0)));
        assert_eq!(ring.take(), Ok((9, 0x40)));
        assert_eq!(ring.take(), Err(GNI_RC_NOT_DONE));
        ring.release();
        assert!(!ring.push(1, 0, false), "a released ring takes nothing");
    }

    #[test]
    fn a_registration_reads_only_under_its_check() {
        let slot: Box<RegSlot> = zeroed();
        let r = Reg { addr: 4096, len: 100, read_only: true, ring: 3 };
        slot.publish(42, &r);
        assert_eq!(slot.read(42), Some(r));
        assert_eq!(slot.read(41), None);
        assert_eq!(slot.read(0), None);
        slot.clear();
        assert_eq!(slot.read(42), None);
        assert!(r.covers(4096, 100) && !r.covers(4096, 101) && !r.covers(u64::MAX, 2));
    }

    #[test]
    fn datagram_bytes_round_trip() {
        let words: [AtomicU64; 4] = Default::default();
        store_bytes(&words, b"hello, world!");
        assert_eq!(load_bytes(&words, 13), b"hello, world!");
    }

    /// A process that ended and was not reaped: kill(pid, 0) still finds it.
    #[test]
    fn a_zombie_is_not_alive_and_its_lock_is_taken_over() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let stat = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        while !stat().contains(") Z ") {
            std::thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: signal 0 only checks that the process exists.
        let still_found = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
        let zombie = ProcId::of(pid, start_time(pid).unwrap_or(0));
        let verdict = zombie.alive();
        let lock = Lock::default();
        lock.owner.store(zombie.raw(), Ordering::Relaxed);
        let taken_over = !verdict && {
            drop(lock.lock());
            lock.owner.load(Ordering::Relaxed) == 0
        };
        child.wait().unwrap();
        assert!(still_found, "kill(pid, 0) no longer finds the zombie: the test proves nothing");
        assert!(!verdict, "a zombie holder counts as alive: its lock would never be taken over");
        assert!(taken_over);
        assert!(ProcId::me().alive());
    }

    #[test]
    fn a_lock_excludes_and_a_dead_holders_lock_is_taken_over() {
        let lock = Lock::default();
        drop(lock.lock());
        // A pid that cannot exist holds it: the next locker takes it over.
        lock.owner.store(ProcId::of(i32::MAX as u32, 0).raw(), Ordering::Relaxed);
        drop(lock.lock());
        assert_eq!(lock.owner.load(Ordering::Relaxed), 0);
    }

    /// A holder that died and whose pid the kernel gave to another process (the parent of this
    /// test stands for it: alive, but not the process that started at the recorded time).
    #[test]
    fn a_lock_whose_holders_pid_was_reused_is_taken_over() {
        // SAFETY: getppid has no preconditions.
        let other = unsafe { libc::getppid() } as u32;
        let start = start_time(other).expect("/proc/<parent>/stat has a start time");
        assert!(start != 0 && ProcId::of(other, start).alive(), "the stand-in process is not alive");
        let reused = ProcId::of(other, start + 1);
        assert!(!reused.alive(), "a live process with the holder's pid but another start time counts as the holder");
        let lock = std::sync::Arc::new(Lock::default());
        lock.owner.store(reused.raw(), Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        let locker = std::sync::Arc::clone(&lock);
        std::thread::spawn(move || {
            drop(locker.lock());
            let _ = tx.send(());
        });
        // A hang guard, not a measure: the take-over takes one 20 ms wait.
        assert!(
            rx.recv_timeout(Duration::from_secs(10)).is_ok(),
            "a lock whose recorded holder's pid now names another live process is never taken over"
        );
        assert_eq!(lock.owner.load(Ordering::Relaxed), 0);
    }

    /// A held process that ends and is reaped while held (its pid free for another process)
    /// is no longer here; one that runs is.
    #[test]
    fn a_held_process_that_was_reaped_is_no_longer_here() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let held = ProcId::of(child.id(), start_time(child.id()).unwrap_or(0)).hold();
        let before = held.as_ref().map(Held::still_here);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(before, Some(true), "a running child is not held");
        assert!(!held.unwrap().still_here(), "a reaped process is still held as here");
        assert!(ProcId::me().hold().is_some_and(|h| h.still_here()));
    }

    /// The start time of a process whose name holds ") " and "(" (a command name is the
    /// program's, chosen by whoever names it) is read after the last ')'.
    #[test]
    fn the_start_time_follows_a_command_name_with_parentheses() {
        let me = std::process::id();
        let (_, mine) = stat_of(me).expect("/proc/self/stat");
        assert_eq!(ProcId::me(), ProcId::of(me, mine));
        let dir = std::env::temp_dir().join(format!("aar-emu-shm-test-{me}"));
        std::fs::create_dir_all(&dir).unwrap();
        let odd = dir.join("a) 1 (b");
        let _ = std::fs::remove_file(&odd);
        std::os::unix::fs::symlink("/bin/sleep", &odd).unwrap();
        let mut child = std::process::Command::new(&odd).arg("30").spawn().unwrap();
        let got = stat_of(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let (state, start) = got.expect("the child's stat");
        assert!(state != 'Z' && start >= mine, "state {state}, start {start} before this process's {mine}");
    }
}
