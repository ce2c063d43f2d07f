//! Job mode: this process is one rank of a job that `aar run` started (`AAR_EMU_JOB_DIR` and the
//! PMI variables, see [`crate::settings::job_env`]). Each rank keeps what other ranks must reach
//! in its own file `rank-<r>` in the job's folder ([`RankArea`]: registrations, CQ rings,
//! mailbox credits, datagrams), mapped by every rank that talks to it. Handles stay numbers of
//! their process; only memory handles travel, and they name their owner: qword1 holds the
//! owner's rank and registration slot, qword2 a check mixed from the job (its folder and cookie),
//! the owner's rank and slot, the registration's serial number (the rank counts its
//! registrations), the address and the length, so a handle of another job, a stale one or a
//! forged one matches no registration (GNI_RC_INVALID_PARAM). Bytes move between ranks
//! with `process_vm_readv`/`process_vm_writev`, which return only when the bytes are in place;
//! where the kernel refuses them (or `AAR_EMU_JOB_COPY=service`), the other rank's service
//! thread copies them through a bounce buffer in its file ([`Service`]).
//!
//! Without `AAR_EMU_JOB_DIR` there is no job and nothing here is used.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use aar_abi::*;

use crate::amo::{apply_to_bytes, AmoOp, Width};
use crate::post_log;
use crate::settings::{self, CopyPath, JobEnv};
use crate::shm::{
    self, Header, Held, JobArea, LockGuard, Mbox, ProcId, RankArea, Reg, Ring, Service, BOUNCE_BYTES, JOB_MAGIC, MAGIC,
    MBOX_ACTIVE, MBOX_FREE, NO_RING, REG_SLOTS, RINGS, SERVE_READ, SERVE_WRITE,
};

/// Marks qword1 of a job's memory handles (the in-process mode uses another tag).
const JOB_MEM_TAG: u64 = 0xa4e6 << 48;
const FIELD_MASK: u64 = 0xff_ffff;

pub struct Job {
    pub rank: u32,
    pub size: u32,
    pub nic_addr: u32,
    /// Mixed into every check, so that jobs with the same cookie still differ.
    job_key: u64,
    dir: PathBuf,
    pub me: &'static RankArea,
    pub shared: &'static JobArea,
    /// Other ranks' files, mapped at first use: only those, since a job may say it has up to
    /// 2^24 ranks (PMI_SIZE), and a table for all would take 128 MiB at the first uGNI call.
    areas: Mutex<HashMap<u32, &'static RankArea>>,
    /// The processes of the ranks this rank copies to and from, held for those copies ([`Holds`]).
    holds: Mutex<Holds>,
    /// Serialises this process's changes to its own file's slots.
    alloc: Mutex<usize>,
    serial: AtomicU64,
    /// Bytes go through the other rank's service thread: asked for, or process_vm was refused.
    via_service: AtomicBool,
}

/// Other ranks' processes, held by the pidfd opened at the first copy to or from each (the
/// process its file names, checked then), so that a copy checks only that the pidfd's process has
/// not been reaped (one call before it, one after), not open a pidfd and read `/proc/<pid>/stat`
/// each time. A pidfd is kept for at most [`Holds::limit`] ranks (each is a descriptor of the
/// program's); a rank beyond them is held afresh for each copy. A rank whose process has ended
/// is remembered as such, and its pidfd closed: a rank's file names one process for good.
struct Holds {
    by_rank: HashMap<u32, Option<Arc<Held>>>,
    pidfds: usize,
    limit: usize,
}

impl Holds {
    /// A sixteenth of the descriptors the program may open (RLIMIT_NOFILE), at most 1024.
    fn new() -> Holds {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes one rlimit, which lives across the call.
        let nofile = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } {
            0 => lim.rlim_cur,
            _ => 1024,
        };
        Holds { by_rank: HashMap::new(), pidfds: 0, limit: (nofile / 16).min(1024) as usize }
    }
}

static JOB: OnceLock<Result<Option<Job>, GniReturn>> = OnceLock::new();

/// The job this process is a rank of, set up at the first call; None in the in-process mode (or
/// when this rank cannot join its job: [`joined`]).
pub fn get() -> Option<&'static Job> {
    joined().ok().flatten()
}

/// As [`get`], but GNI_RC_ERROR_RESOURCE when this rank's shared file cannot be made (a file
/// size limit, `ulimit -f`, below it; a full /dev/shm; a folder it may not write): GNI_CdmAttach
/// fails with it, as on a NIC out of resources, since the rank can neither join its job nor,
/// running alone, be reached by the other ranks (whose posts and datagrams to it would fail or
/// wait for ever). Said once, by every rank that meets it (an error of the rank's, not a
/// warning about a setting).
pub fn joined() -> Result<Option<&'static Job>, GniReturn> {
    JOB.get_or_init(|| {
        let Some(env) = settings::job_env() else {
            return Ok(None);
        };
        match Job::start(&env) {
            Ok(job) => {
                post_log::set_rank(job.rank);
                Ok(Some(job))
            }
            Err(StartError::Foreign(why)) => {
                crate::warn(&why);
                Err(GNI_RC_ERROR_RESOURCE)
            }
            Err(StartError::Io(e)) if e.raw_os_error() == Some(libc::EFBIG) => {
                crate::warn(&format!(
                    "the file size limit (ulimit -f, RLIMIT_FSIZE) is {}, below the {} bytes of this rank's \
                     shared file in AAR_EMU_JOB_DIR={}: the file is not made, so this process cannot join \
                     the job, and GNI_CdmAttach returns GNI_RC_ERROR_RESOURCE. To fix it, raise the limit \
                     before aar run (ulimit -f unlimited, or at least {} KiB: ulimit -f {} in bash, which \
                     counts KiB)",
                    settings::file_size_limit().map_or("lower".to_string(), |l| format!("{l} bytes")),
                    std::mem::size_of::<RankArea>(),
                    env.dir.display(),
                    std::mem::size_of::<RankArea>().div_ceil(1024),
                    std::mem::size_of::<RankArea>().div_ceil(1024),
                ));
                Err(GNI_RC_ERROR_RESOURCE)
            }
            Err(StartError::Io(e)) => {
                crate::warn(&format!(
                    "AAR_EMU_JOB_DIR={}: cannot make this rank's shared file of {} bytes ({e}), so this \
                     process cannot join the job, and GNI_CdmAttach returns GNI_RC_ERROR_RESOURCE. To \
                     fix it, make room for every rank's file in that folder's file system (df {}), or \
                     run fewer ranks per node",
                    env.dir.display(),
                    std::mem::size_of::<RankArea>(),
                    env.dir.display(),
                ));
                Err(GNI_RC_ERROR_RESOURCE)
            }
        }
    })
    .as_ref()
    .map(Option::as_ref)
    .map_err(|rc| *rc)
}

/// Maps `size` bytes of `file` shared, for the life of the process.
fn map(file: &File, size: usize) -> std::io::Result<*mut u8> {
    // SAFETY: a fresh shared mapping of an open file; the kernel picks the address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p.cast())
}

/// A mapped file of at least `size_of::<T>()` bytes as a `T` for the life of the process. Its
/// pages are allocated first: on a full file system (a node's /dev/shm) a page of a file only
/// grown to size would kill the rank with SIGBUS at its first touch, where this is an error.
///
/// # Safety
/// Every bit pattern, all zeroes included, is a valid `T` (the shared records are atomics).
pub unsafe fn map_as<T>(file: &File) -> std::io::Result<&'static T> {
    let size = std::mem::size_of::<T>();
    let len = libc::off_t::try_from(size).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // Growing a file past the file size limit (`ulimit -f`) raises SIGXFSZ, whose default action
    // kills the process, which is the application's and not a library's to end: so a file that
    // would pass the limit is refused here, before anything is allocated, with EFBIG (what the
    // kernel gives where SIGXFSZ is ignored). This changes no signal state. Ignoring SIGXFSZ
    // around the call would change a disposition the whole process shares: another thread's
    // write past the limit would fail quietly instead of raising the signal its program expects,
    // and a handler the application installs meanwhile would be overwritten when the old one is
    // put back. Blocking it in this thread would leave the signal pending, to be taken away
    // after the call (libaar.so does that for writes whose size it cannot know before): a
    // SIGXFSZ sent to the process meanwhile could be taken with it. Here the size is known, so
    // a check suffices. (Only growth is limited: mapping a peer's file of full size is not.)
    if (file.metadata()?.len() as usize) < size && settings::file_size_limit().is_some_and(|limit| size as u64 > limit)
    {
        return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
    }
    // SAFETY: an open descriptor; mode 0 allocates what is not yet and keeps the bytes that are.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
            return Err(e);
        }
        if (file.metadata()?.len() as usize) < size {
            file.set_len(size as u64)?;
        }
    }
    let p = map(file, size)?;
    // SAFETY: a page-aligned mapping of `size` bytes that is never unmapped; any bytes are a
    // valid T (this function's contract), and T is only used through shared references.
    Ok(unsafe { &*p.cast::<T>() })
}

/// A hash of the job's folder, so checks differ between jobs.
fn key_of(dir: &Path, cookie: u32) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ cookie as u64;
    for b in dir.as_os_str().as_encoded_bytes() {
        h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Lets the job's other ranks (same user) read and write this process's memory where Yama's
/// ptrace_scope=1 would refuse them; says once when the kernel forbids it altogether: by rank 0
/// only ([`settings::warn`]), since every rank of an `aar run` job runs on this one kernel.
fn allow_siblings() {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok();
    match scope.as_deref().map(str::trim) {
        Some("1") => {
            // SAFETY: prctl(PR_SET_PTRACER) takes a pid-sized argument and changes no memory.
            unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
        }
        Some(s @ ("2" | "3")) => settings::warn(&format!(
            "kernel.yama.ptrace_scope={s}: the kernel will refuse this job's ranks access to each \
             other's memory (at 2, unless they have CAP_SYS_PTRACE), so bytes between ranks will go \
             through their service threads, a slower copy through shared memory; set it to 0 or 1"
        )),
        _ => {}
    }
}

/// A started rank's shared file that this rank cannot map (each rank maps every peer's it talks
/// to, so what a rank needs of its address space grows with the job), said once per process:
/// posts to that rank fail with GNI_RC_INVALID_PARAM, as to a rank that never started.
fn unmappable(rank: u32, err: &std::io::Error) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::warn(&format!(
            "cannot map rank {rank}'s shared file ({err}): this rank cannot reach it, and posts to it fail with \
             GNI_RC_INVALID_PARAM. Each rank maps the {} KiB file of every rank it talks to: raise the \
             address-space limit (ulimit -v) or run fewer ranks",
            std::mem::size_of::<RankArea>() >> 10
        ));
    }
}

/// Why a data movement to or from another rank failed, said once per process.
fn refused(what: &str, rank: u32, pid: u32, err: &std::io::Error) -> GniReturn {
    static SAID: AtomicBool = AtomicBool::new(false);
    let (rc, why) = match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) | Some(libc::ENOSYS) => (
            GNI_RC_PERMISSION_ERROR,
            "the kernel refuses cross-process memory access here (Yama ptrace_scope, a seccomp \
             filter, or ranks of different users) and that rank runs no service thread to fall \
             back on: run the ranks as one user with kernel.yama.ptrace_scope at 0 or 1",
        ),
        Some(libc::ESRCH) => (GNI_RC_TRANSACTION_ERROR, "that rank has ended"),
        _ => (GNI_RC_TRANSACTION_ERROR, "its registered memory is no longer mapped"),
    };
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::warn(&format!(
            "{what} rank {rank} (pid {pid}) failed: {err}: {why}; the post fails with {}",
            if rc == GNI_RC_PERMISSION_ERROR { "GNI_RC_PERMISSION_ERROR" } else { "GNI_RC_TRANSACTION_ERROR" }
        ));
    }
    rc
}

/// Why a rank could not join its job.
enum StartError {
    /// Its file (or the job's) could not be made or mapped.
    Io(std::io::Error),
    /// The job's file is another build's: the whole message.
    Foreign(String),
}

impl From<std::io::Error> for StartError {
    fn from(e: std::io::Error) -> StartError {
        StartError::Io(e)
    }
}

/// The job-wide file `job` in `dir`, made by the first rank, mapped by every rank; refused when
/// another build made it (another size, or another [`JOB_MAGIC`]): its ranks would not take the
/// same lock.
fn job_area(dir: &Path) -> Result<&'static JobArea, StartError> {
    let path = dir.join("job");
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(&path)?;
    let size = std::mem::size_of::<JobArea>() as u64;
    let len = file.metadata()?.len();
    // 0: just made, here or by a rank that has not yet grown it.
    let found = if len == 0 || len == size {
        // SAFETY: JobArea is made of atomics only.
        let shared: &'static JobArea = unsafe { map_as(&file)? };
        match shared.magic.compare_exchange(0, JOB_MAGIC, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok(shared),
            Err(JOB_MAGIC) => return Ok(shared),
            Err(other) => format!("magic {other:#x}"),
        }
    } else {
        format!("{len} bytes")
    };
    Err(StartError::Foreign(format!(
        "{}: this job's shared file is another build's ({found}; this build's has {size} bytes, magic \
         {JOB_MAGIC:#x}): a job folder reused from a run of another version, or ranks of two builds \
         in one job. This process cannot join the job, and GNI_CdmAttach returns \
         GNI_RC_ERROR_RESOURCE. To fix it, run every rank with the same build, in a fresh folder (aar \
         run makes one per job; remove this one if it is left from an earlier run)",
        path.display()
    )))
}

/// The size of a rank's file and, read from its header without mapping it, its magic and rank
/// (zeroes where the file is too short to hold them).
fn header_of(file: &File) -> (u64, u64, u32) {
    let len = file.metadata().map_or(0, |m| m.len());
    let mut head = [0u8; std::mem::size_of::<Header>()];
    if file.read_exact_at(&mut head, 0).is_err() {
        return (len, 0, 0);
    }
    let at = |offset: usize, n: usize| &head[offset..offset + n];
    let magic = u64::from_ne_bytes(at(std::mem::offset_of!(Header, magic), 8).try_into().unwrap_or_default());
    let rank = u32::from_ne_bytes(at(std::mem::offset_of!(Header, rank), 4).try_into().unwrap_or_default());
    (len, magic, rank)
}

/// A rank's file of another layout, or of another rank (an older build's, a job folder reused),
/// said once per process: that rank counts as not started.
fn foreign_rank_file(path: &Path, rank: u32, len: u64, magic: u64, of_rank: u32) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        crate::warn(&format!(
            "{}: not a file of this build's rank {rank} ({len} bytes, magic {magic:#x}, rank {of_rank}; this \
             build's have {} bytes, magic {MAGIC:#x}): another build's, from a job folder reused or a rank \
             of another version in this job. This rank treats rank {rank} as not started: posts to it fail \
             with GNI_RC_INVALID_PARAM and datagrams to it wait. To fix it, run every rank with the same \
             build, in a fresh folder (aar run makes one per job)",
            path.display(),
            std::mem::size_of::<RankArea>(),
        ));
    }
}

/// This rank's file while the rank joins. Dropped on a failure (the job's file refused, the
/// rename failing), it unmaps the file and removes it: no rank maps a `.partial` file, and a
/// rank that could not join holds neither the file's pages (in /dev/shm) nor its address space.
struct Joining<'a> {
    partial: &'a Path,
    /// The file's mapping, once made.
    area: Option<&'static RankArea>,
}

impl Joining<'_> {
    /// The file is published: it stays, mapped, for the life of the process.
    fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Joining<'_> {
    fn drop(&mut self) {
        if let Some(area) = self.area.take() {
            // SAFETY: the mapping map_as made of size_of::<RankArea>() bytes; the rank failed
            // to join, so no reference to it is used after this (Job::start returns the error),
            // and no thread was started on it.
            unsafe { libc::munmap(std::ptr::from_ref(area).cast_mut().cast(), std::mem::size_of::<RankArea>()) };
        }
        let _ = std::fs::remove_file(self.partial);
    }
}

impl Job {
    fn start(env: &JobEnv) -> Result<Job, StartError> {
        allow_siblings();
        let name = format!("rank-{}", env.rank);
        let partial = env.dir.join(format!("{name}.partial"));
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).mode(0o600).open(&partial)?;
        let mut joining = Joining { partial: &partial, area: None };
        // SAFETY: RankArea is made of atomics only.
        let me: &'static RankArea = unsafe { map_as(&file) }?;
        joining.area = Some(me);
        let h = &me.header;
        h.proc.store(ProcId::me().raw(), Ordering::Relaxed);
        h.rank.store(env.rank, Ordering::Relaxed);
        h.nic_addr.store(env.nic_addr, Ordering::Relaxed);
        h.cookie.store(env.cookie, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
        // Before the rank is published: a rank that cannot share the job's lock does not join.
        let shared = job_area(&env.dir)?;
        std::fs::rename(&partial, env.dir.join(&name))?;
        joining.keep();
        // The service thread sleeps until a rank the kernel keeps out needs it. It is marked
        // running here, once it exists, not by the thread itself: a peer's first request may
        // come before the new thread has run at all, and must then wait for it, not fail.
        let first = me.service.request.load(Ordering::Acquire);
        let spawned = std::thread::Builder::new().name("aar-emu-service".into()).spawn(move || serve(me, first));
        if spawned.is_ok() {
            me.service.running.store(1, Ordering::Release);
        }
        Ok(Job {
            rank: env.rank,
            size: env.size,
            nic_addr: env.nic_addr,
            job_key: key_of(&env.dir, env.cookie),
            dir: env.dir.clone(),
            me,
            shared,
            areas: Mutex::new(HashMap::new()),
            holds: Mutex::new(Holds::new()),
            alloc: Mutex::new(0),
            serial: AtomicU64::new(1),
            via_service: AtomicBool::new(settings::job_copy() == CopyPath::Service),
        })
    }

    /// Rank `rank`'s file, mapped at first use; None when that rank has not started (or the
    /// rank is not in the job).
    pub fn area(&self, rank: u32) -> Option<&'static RankArea> {
        if rank == self.rank {
            return Some(self.me);
        }
        if rank >= self.size {
            return None;
        }
        let mut areas = self.areas.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(area) = areas.get(&rank) {
            return Some(*area);
        }
        let path = self.dir.join(format!("rank-{rank}"));
        let file = OpenOptions::new().read(true).write(true).open(&path).ok()?;
        // Checked before the file is mapped: a file of another layout is never mapped (nor
        // grown), each time a post asks again for it.
        let (len, magic, of_rank) = header_of(&file);
        if len != std::mem::size_of::<RankArea>() as u64 || magic != MAGIC || of_rank != rank {
            foreign_rank_file(&path, rank, len, magic, of_rank);
            return None;
        }
        // Room for it first: a mapping that could not be recorded would be made again at each use.
        if areas.try_reserve(1).is_err() {
            unmappable(rank, &std::io::Error::from_raw_os_error(libc::ENOMEM));
            return None;
        }
        // SAFETY: RankArea is made of atomics only; the file has its size (checked).
        let area: &'static RankArea = match unsafe { map_as(&file) } {
            Ok(area) => area,
            Err(e) => {
                unmappable(rank, &e);
                return None;
            }
        };
        areas.insert(rank, area);
        Some(area)
    }

    /// The ranks that have started, this one included, in order, each with its file. Found in
    /// the job's folder (the `rank-<r>` files), so that a job that says it has many ranks
    /// (PMI_SIZE, up to 2^24) costs what its started ranks cost, not a look for each rank it
    /// might have; once every rank's file is mapped, from those (where the folder cannot be
    /// read, the ranks mapped so far).
    pub fn started(&self) -> Vec<(u32, &'static RankArea)> {
        let mapped: Vec<u32> = self.areas.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect();
        let mut ranks = if mapped.len() + 1 >= self.size as usize {
            mapped
        } else {
            match std::fs::read_dir(&self.dir) {
                Ok(entries) => entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.strip_prefix("rank-")?.parse::<u32>().ok())
                    .collect(),
                Err(_) => mapped,
            }
        };
        ranks.push(self.rank);
        ranks.sort_unstable();
        ranks.dedup();
        ranks.into_iter().filter_map(|r| self.area(r).map(|a| (r, a))).collect()
    }

    /// The ranks whose NIC address is `addr` (the ranks of one node), among those started.
    pub fn ranks_at(&self, addr: u32) -> impl Iterator<Item = (u32, &'static RankArea)> {
        self.started().into_iter().filter(move |(_, a)| a.header.nic_addr.load(Ordering::Relaxed) == addr)
    }

    /// Records the inst_id of a CDM attached in this rank.
    pub fn note_inst_id(&self, inst_id: u32) {
        let h = &self.me.header;
        let i = h.inst_count.fetch_add(1, Ordering::Relaxed) as usize;
        if let Some(w) = h.inst_ids.get(i) {
            w.store(inst_id, Ordering::Relaxed);
        }
    }

    fn lock_alloc(&self) -> MutexGuard<'_, usize> {
        self.alloc.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check(&self, rank: u32, slot: u32, serial: u64, addr: u64, len: u64) -> u64 {
        let c = mix(self.job_key ^ mix(serial ^ (rank as u64) << 40 ^ slot as u64) ^ mix(addr ^ len.rotate_left(29)));
        c.max(1)
    }

    /// Publishes a registration of this rank; its handle. GNI_RC_ERROR_RESOURCE when every slot
    /// is taken.
    pub fn register(&self, reg: &Reg) -> Result<GniMemHandle, GniReturn> {
        let mut cursor = self.lock_alloc();
        let slot = (0..REG_SLOTS).map(|i| (*cursor + i) % REG_SLOTS).find(|&s| self.me.regs[s].is_free());
        let slot = slot.ok_or(GNI_RC_ERROR_RESOURCE)?;
        *cursor = slot + 1;
        let serial = self.serial.fetch_add(1, Ordering::Relaxed);
        let check = self.check(self.rank, slot as u32, serial, reg.addr, reg.len);
        self.me.regs[slot].publish(check, reg);
        Ok(GniMemHandle { qword1: JOB_MEM_TAG | (self.rank as u64) << 24 | slot as u64, qword2: check })
    }

    /// Withdraws a registration of this rank (its handle was checked by the caller).
    pub fn deregister(&self, mh: &GniMemHandle) {
        if let Some((rank, slot)) = decode(mh) {
            if rank == self.rank {
                let _g = self.lock_alloc();
                if self.me.regs[slot as usize].read(mh.qword2).is_some() {
                    self.me.regs[slot as usize].clear();
                }
            }
        }
    }

    /// The registration a handle names and its owner, if it is one of this job's and live.
    pub fn lookup(&self, mh: &GniMemHandle) -> Option<(u32, &'static RankArea, Reg)> {
        let (rank, slot) = decode(mh)?;
        let area = self.area(rank)?;
        let reg = area.regs.get(slot as usize)?.read(mh.qword2)?;
        Some((rank, area, reg))
    }

    /// A free ring of this rank for a CQ of `capacity` events: its index.
    pub fn claim_ring(&self, capacity: u32) -> Option<u32> {
        let _g = self.lock_alloc();
        (0..RINGS).find(|&i| self.me.rings[i].claim(capacity)).map(|i| i as u32)
    }

    /// A mailbox control of this rank for the mailbox at `addr` (a free one, or the one that
    /// already has that address, reset): `credits` slots of `stride` bytes, messages up to
    /// `maxsize` bytes, arrival events to ring `ring`, kept by the endpoint created `ep`-th. Changed
    /// under its send lock, so that no sender writes while it changes hands.
    pub fn claim_mbox(
        &self,
        addr: u64,
        credits: u32,
        stride: u32,
        maxsize: u32,
        ring: u32,
        ep: u32,
    ) -> Option<&'static Mbox> {
        let _g = self.lock_alloc();
        let active = |m: &Mbox| m.state.load(Ordering::Acquire) == MBOX_ACTIVE;
        let m = (self.me.mboxes.iter().find(|m| active(m) && m.addr.load(Ordering::Relaxed) == addr))
            .or_else(|| self.me.mboxes.iter().find(|m| m.state.load(Ordering::Acquire) == MBOX_FREE))?;
        let _senders = m.send_lock.lock();
        m.state.store(MBOX_FREE, Ordering::Release);
        m.ep.store(ep, Ordering::Relaxed);
        m.addr.store(addr, Ordering::Relaxed);
        m.credits.store(credits, Ordering::Relaxed);
        m.stride.store(stride, Ordering::Relaxed);
        m.maxsize.store(maxsize, Ordering::Relaxed);
        m.ring.store(ring, Ordering::Relaxed);
        m.head.store(0, Ordering::Relaxed);
        m.tail.store(0, Ordering::Relaxed);
        m.state.store(MBOX_ACTIVE, Ordering::Release);
        Some(m)
    }

    /// Rank `rank`'s active mailbox at `addr`, if it has one yet.
    pub fn find_mbox(&self, rank: u32, addr: u64) -> Option<&'static Mbox> {
        self.area(rank)?
            .mboxes
            .iter()
            .find(|m| m.state.load(Ordering::Acquire) == MBOX_ACTIVE && m.addr.load(Ordering::Relaxed) == addr)
    }

    /// Ring `ring` of rank `rank`, if that is a ring in use.
    pub fn ring(&self, rank: u32, ring: u32) -> Option<&'static Ring> {
        if ring == NO_RING {
            return None;
        }
        self.area(rank)?.rings.get(ring as usize).filter(|r| r.in_use())
    }

    /// Copies `len` bytes from this process's `local` to `remote` in rank `rank`.
    pub fn write_to(&self, rank: u32, remote: u64, local: u64, len: u64) -> Result<(), GniReturn> {
        self.move_bytes(rank, remote, local, len, true)
    }

    /// Copies `len` bytes from `remote` in rank `rank` to this process's `local`.
    pub fn read_from(&self, rank: u32, remote: u64, local: u64, len: u64) -> Result<(), GniReturn> {
        self.move_bytes(rank, remote, local, len, false)
    }

    /// Rank `rank`'s process `proc` held for a copy ([`Holds`]); None when it has ended or its
    /// pid is another process's now.
    fn hold(&self, rank: u32, proc: ProcId) -> Option<Arc<Held>> {
        let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = holds.by_rank.get(&rank) {
            return kept.clone();
        }
        let held = proc.hold().map(Arc::new);
        match &held {
            None => {
                holds.by_rank.insert(rank, None);
            }
            Some(h) if h.by_pidfd() && holds.pidfds < holds.limit && holds.by_rank.try_reserve(1).is_ok() => {
                holds.pidfds += 1;
                holds.by_rank.insert(rank, held.clone());
            }
            Some(_) => {}
        }
        held
    }

    /// Rank `rank`'s process has ended: its pidfd, if kept, is closed (once no copy uses it).
    fn ended(&self, rank: u32) {
        let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Some(_)) = holds.by_rank.insert(rank, None) {
            holds.pidfds -= 1;
        }
    }

    fn move_bytes(&self, rank: u32, remote: u64, local: u64, len: u64, write: bool) -> Result<(), GniReturn> {
        let area = self.area(rank).ok_or(GNI_RC_INVALID_PARAM)?;
        let proc = ProcId::from_raw(area.header.proc.load(Ordering::Relaxed));
        let pid = proc.pid();
        if self.via_service.load(Ordering::Relaxed) {
            return through_service(area, proc, remote, local, len, write);
        }
        let copied = match self.hold(rank, proc) {
            Some(held) => vm_copy(&held, remote, local, len, write),
            None => Err((0, std::io::Error::from_raw_os_error(libc::ESRCH))),
        };
        let Err((done, err)) = copied else {
            return Ok(());
        };
        if err.raw_os_error() == Some(libc::ESRCH) {
            self.ended(rank);
        }
        let what = if write { "process_vm_writev to" } else { "process_vm_readv from" };
        let kept_out = matches!(err.raw_os_error(), Some(libc::EPERM | libc::EACCES | libc::ENOSYS));
        if kept_out && area.service.running.load(Ordering::Acquire) != 0 {
            crate::warn(&format!(
                "{what} rank {rank} (pid {pid}) refused: {err}; bytes between this rank and \
                 the others now go through their service threads (a copy through shared \
                 memory, slower); let the ranks reach each other's memory \
                 (kernel.yama.ptrace_scope 0 or 1, one user) to avoid it"
            ));
            self.via_service.store(true, Ordering::Relaxed);
            return through_service(area, proc, remote + done, local + done, len - done, write);
        }
        Err(refused(what, rank, pid, &err))
    }

    /// The lock every AMO on rank `rank`'s memory holds around its read-modify-write.
    pub fn amo_lock(&self, rank: u32) -> Result<LockGuard<'static>, GniReturn> {
        Ok(self.area(rank).ok_or(GNI_RC_INVALID_PARAM)?.header.amo_lock.lock())
    }

    /// An AMO on the word of `width` at `target` in another rank: the previous value.
    pub fn amo(
        &self,
        rank: u32,
        target: u64,
        op: AmoOp,
        width: Width,
        first: u64,
        second: u64,
    ) -> Result<u64, GniReturn> {
        let _g = self.amo_lock(rank)?;
        let len = width.bytes();
        let mut bytes = [0u8; 8];
        self.read_from(rank, target, bytes.as_mut_ptr() as u64, len)?;
        let (old, new) = apply_to_bytes(&mut bytes, width, op, first, second);
        if new != old {
            self.write_to(rank, target, bytes.as_ptr() as u64, len)?;
        }
        Ok(old)
    }
}

/// Copies `len` bytes between this process's `local` and `remote` in the `held` process (to it
/// when `write`) with process_vm_writev/readv, which name it by pid only: the pid was checked to
/// be that process's when it was held ([`ProcId::hold`]), not a later process's the kernel gave
/// it to once the held one ended (that one's memory would be written), and before and after each
/// call the held process is checked to be still there, not reaped, so that its pid still names
/// it: a call that may have met another process is an error. On failure, how many bytes were
/// moved and why (ESRCH: the process has ended). What is left: a write whose target is reaped
/// and has its pid given to another process of the user between the check and the call lands
/// there; it is said as an error, not undone.
fn vm_copy(held: &Held, remote: u64, local: u64, len: u64, write: bool) -> Result<(), (u64, std::io::Error)> {
    let ended = || std::io::Error::from_raw_os_error(libc::ESRCH);
    if !held.still_here() {
        return Err((0, ended()));
    }
    let mut done = 0u64;
    while done < len {
        let n = (len - done) as usize;
        let l = libc::iovec { iov_base: (local + done) as *mut libc::c_void, iov_len: n };
        let r = libc::iovec { iov_base: (remote + done) as *mut libc::c_void, iov_len: n };
        // SAFETY: the kernel checks both ranges: a bad address is EFAULT, never a fault here;
        // the iovecs live across the call.
        let moved = unsafe {
            if write {
                libc::process_vm_writev(held.pid() as libc::pid_t, &l, 1, &r, 1, 0)
            } else {
                libc::process_vm_readv(held.pid() as libc::pid_t, &l, 1, &r, 1, 0)
            }
        };
        let err = (moved <= 0).then(|| match moved {
            0 => std::io::Error::from_raw_os_error(libc::EFAULT),
            _ => std::io::Error::last_os_error(),
        });
        if !held.still_here() {
            return Err((done, ended()));
        }
        if let Some(err) = err {
            return Err((done, err));
        }
        done += moved as u64;
    }
    Ok(())
}

/// The rank's service thread: answers other ranks' requests to copy between its registered
/// memory and the bounce buffer of its file, one at a time, for the life of the process.
/// `last` is the request count before any peer could ask, so a request made before this
/// thread first runs is answered.
fn serve(me: &'static RankArea, mut last: u32) {
    let svc = &me.service;
    loop {
        let now = svc.request.load(Ordering::Acquire);
        if now == last {
            shm::futex_wait(&svc.request, now, None);
            continue;
        }
        last = now;
        let (addr, len) = (svc.addr.load(Ordering::Relaxed), svc.len.load(Ordering::Relaxed));
        let write = svc.op.load(Ordering::Relaxed) == SERVE_WRITE;
        // Only inside this rank's own registrations.
        let ok = len as usize <= BOUNCE_BYTES
            && me.regs.iter().any(|r| r.allows(addr, len, write))
            && (len == 0 || copy_own(svc.bounce(), addr, len as usize, write));
        svc.status.store(!ok as u32, Ordering::Relaxed);
        // The number of the request answered, so that a requester knows the answer is to its own.
        svc.done.store(now, Ordering::Release);
        shm::futex_wake(&svc.done);
    }
}

/// The service thread's copy between the bounce buffer and `addr` in this process (into `addr`
/// when `write`); false when a page of it cannot be read (or, `write`, written). The memory is
/// the application's, which may unmap it or take away its access (mprotect) at any time, after a
/// registration was checked too: so the kernel copies it (process_vm_readv/writev on this very
/// process, which no Yama setting refuses), and a page it cannot reach is EFAULT, not a fault
/// that kills this rank. Where the kernel has no such calls (a seccomp filter), the pages are
/// checked to be mapped and copied by the CPU, which leaves a page unmapped or protected
/// meanwhile to fault.
fn copy_own(bounce: *mut u8, addr: u64, len: usize, write: bool) -> bool {
    let b = libc::iovec { iov_base: bounce.cast(), iov_len: len };
    let a = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: len };
    // SAFETY: getpid has no preconditions; the kernel checks both ranges (a bad address is
    // EFAULT, never a fault here); the iovecs live across the call.
    let moved = unsafe {
        let me = libc::getpid();
        if write {
            libc::process_vm_writev(me, &b, 1, &a, 1, 0)
        } else {
            libc::process_vm_readv(me, &b, 1, &a, 1, 0)
        }
    };
    if moved >= 0 || !matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) {
        return moved == len as isize;
    }
    if !shm::mapped(addr, len as u64) {
        return false;
    }
    // SAFETY: [addr, addr+len) is mapped memory of this process inside one of its registrations
    // (checked by the caller and above); the bounce buffer holds BOUNCE_BYTES >= len bytes and
    // the requester holding the service lock waits until `done` moves.
    unsafe {
        if write {
            std::ptr::copy_nonoverlapping(bounce, addr as *mut u8, len);
        } else {
            std::ptr::copy_nonoverlapping(addr as *const u8, bounce, len);
        }
    }
    true
}

/// Moves bytes to (`write`) or from another rank through its service thread, a bounce buffer
/// at a time; GNI_RC_TRANSACTION_ERROR when it refuses or its process has ended.
fn through_service(
    area: &RankArea,
    proc: ProcId,
    remote: u64,
    local: u64,
    len: u64,
    write: bool,
) -> Result<(), GniReturn> {
    let svc: &Service = &area.service;
    if svc.running.load(Ordering::Acquire) == 0 {
        return Err(GNI_RC_TRANSACTION_ERROR);
    }
    let _one_at_a_time = svc.lock.lock();
    // A requester that died between its request and the answer (its lock was taken over) left
    // one outstanding: its answer must not be taken for this one's.
    await_answer(svc, proc, svc.request.load(Ordering::Acquire))?;
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(BOUNCE_BYTES as u64);
        if write {
            // SAFETY: the caller's checked local range; the bounce buffer is ours while we hold
            // the service lock and holds BOUNCE_BYTES >= n bytes.
            unsafe { std::ptr::copy_nonoverlapping((local + done) as *const u8, svc.bounce(), n as usize) };
        }
        svc.op.store(if write { SERVE_WRITE } else { SERVE_READ }, Ordering::Relaxed);
        svc.addr.store(remote + done, Ordering::Relaxed);
        svc.len.store(n, Ordering::Relaxed);
        let ticket = svc.request.fetch_add(1, Ordering::Release).wrapping_add(1);
        shm::futex_wake(&svc.request);
        await_answer(svc, proc, ticket)?;
        if svc.status.load(Ordering::Relaxed) != 0 {
            return Err(GNI_RC_TRANSACTION_ERROR);
        }
        if !write {
            // SAFETY: the caller's checked local range; the service thread filled n bytes of
            // the bounce buffer, ours while we hold the service lock.
            unsafe { std::ptr::copy_nonoverlapping(svc.bounce(), (local + done) as *mut u8, n as usize) };
        }
        done += n;
    }
    Ok(())
}

/// Waits until the service thread of process `proc` has answered request number `ticket`;
/// GNI_RC_TRANSACTION_ERROR when that process has ended.
fn await_answer(svc: &Service, proc: ProcId, ticket: u32) -> Result<(), GniReturn> {
    while !shm::wait_until(&svc.done, Some(Instant::now() + Duration::from_millis(100)), || {
        svc.done.load(Ordering::Acquire) == ticket
    }) {
        if !proc.alive() {
            return Err(GNI_RC_TRANSACTION_ERROR);
        }
    }
    Ok(())
}

/// (owner rank, registration slot) of a job memory handle; None for any other handle.
pub fn decode(mh: &GniMemHandle) -> Option<(u32, u32)> {
    if mh.qword1 & !(FIELD_MASK << 24 | FIELD_MASK) != JOB_MEM_TAG {
        return None;
    }
    Some(((mh.qword1 >> 24 & FIELD_MASK) as u32, (mh.qword1 & FIELD_MASK) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_name_their_owner() {
        let mh = GniMemHandle { qword1: JOB_MEM_TAG | 5 << 24 | 17, qword2: 1 };
        assert_eq!(decode(&mh), Some((5, 17)));
        assert_eq!(decode(&GniMemHandle { qword1: 0xa4e5 << 48 | 3, qword2: 1 }), None, "in-process handle");
        assert_eq!(decode(&GniMemHandle::default()), None);
        assert_ne!(key_of(Path::new("/dev/shm/aar-job-1"), 7), key_of(Path::new("/dev/shm/aar-job-2"), 7));
        assert_ne!(key_of(Path::new("/dev/shm/aar-job-1"), 7), key_of(Path::new("/dev/shm/aar-job-1"), 8));
    }

    /// A rank that ended and whose pid the kernel gave to another process of the user (this
    /// test's own process, recorded with another start time, stands for that one): no byte is
    /// written into it or read from it, and the copy says the rank ended.
    #[test]
    fn no_byte_moves_to_or_from_a_process_that_took_an_ended_ranks_pid() {
        let start = ProcId::me().raw() >> 32;
        assert!(start != 0, "no start time from /proc/self/stat: the test proves nothing");
        let newcomer = ProcId::of(std::process::id(), start + 1);
        let target = vec![0u8; 64];
        let source = vec![0x5au8; 64];
        let (t, s) = (target.as_ptr() as u64, source.as_ptr() as u64);
        let rc = |r: Result<(), (u64, std::io::Error)>| r.map_err(|(n, e)| (n, e.raw_os_error()));
        assert!(newcomer.hold().is_none(), "the newcomer was held for the ended rank: copies would reach it");
        // The process the record names is reached.
        let me = ProcId::me().hold().expect("this process is held");
        assert_eq!(rc(vm_copy(&me, t, s, 64, true)), Ok(()));
        assert_eq!(std::hint::black_box(&target), &source);
    }

    /// A rank held (its pidfd kept) whose process ended and was reaped since: a copy checks the
    /// hold first, so nothing moves, and the copy says the rank ended.
    #[test]
    fn no_byte_moves_through_a_kept_hold_of_a_reaped_process() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let start = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let start: u64 = start[start.rfind(')').unwrap() + 2..].split(' ').nth(19).unwrap().parse().unwrap();
        let held = ProcId::of(pid, start).hold().expect("a running child is held");
        child.kill().unwrap();
        child.wait().unwrap();
        let (target, source) = ([0u8; 8], [1u8; 8]);
        let (t, s) = (target.as_ptr() as u64, source.as_ptr() as u64);
        let r = vm_copy(&held, t, s, 8, true).map_err(|(n, e)| (n, e.raw_os_error()));
        assert_eq!(r, Err((0, Some(libc::ESRCH))));
    }

    /// A rank that cannot join its job (the job's file is another build's; the name of its own
    /// file is taken by a folder, so the rename fails) keeps neither its `.partial` file nor the
    /// mapping of it (8.8 MB of /dev/shm pages held for the life of the process).
    #[test]
    fn a_rank_that_cannot_join_keeps_neither_its_file_nor_its_mapping() {
        for case in ["job file of another build", "rename refused"] {
            let dir = Path::new("/dev/shm").join(format!("aar-emu-unit-join-{}-{}", std::process::id(), case.len()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir(&dir).unwrap();
            if case == "rename refused" {
                std::fs::create_dir(dir.join("rank-3")).unwrap();
            } else {
                std::fs::write(dir.join("job"), [0u8; 16]).unwrap();
            }
            let env = JobEnv { dir: dir.clone(), rank: 3, size: 4, nic_addr: 0x100, cookie: 1 };
            let failed = Job::start(&env).is_err();
            let partial = dir.join("rank-3.partial");
            let left = partial.exists();
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            let still_mapped = maps.lines().any(|l| l.contains(&*partial.to_string_lossy()));
            std::fs::remove_dir_all(&dir).unwrap();
            assert!(failed, "{case}: the rank joined: the test proves nothing");
            assert!(!left, "{case}: {} was left", partial.display());
            assert!(!still_mapped, "{case}: {} is still mapped:\n{maps}", partial.display());
        }
    }

    /// Registered memory whose pages the application made unreadable or read-only after the
    /// registration (mprotect; unmapping it is the same race): a request to read or write it is
    /// refused (GNI_RC_TRANSACTION_ERROR for the requester), as process_vm refuses it, and the
    /// service thread does not fault, which would kill this rank.
    #[test]
    fn the_service_thread_refuses_pages_it_cannot_reach_and_does_not_fault() {
        // SAFETY: RankArea is made of atomics only; all zeroes is an empty rank.
        let area: &'static RankArea = Box::leak(unsafe { shm::zeroed_box() });
        // SAFETY: a fresh private anonymous mapping of two pages; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let at = p as u64;
        area.regs[0].publish(1, &Reg { addr: at, len: 8192, read_only: false, ring: NO_RING });
        // SAFETY: the mapping made above: its first page read-only, its second without access.
        unsafe {
            assert_eq!(libc::mprotect(p, 4096, libc::PROT_READ), 0);
            assert_eq!(libc::mprotect(p.cast::<u8>().add(4096).cast(), 4096, libc::PROT_NONE), 0);
        }
        area.service.running.store(1, Ordering::Relaxed);
        std::thread::spawn(move || serve(area, 0));
        let mut out = [7u8; 64];
        let buf = out.as_mut_ptr() as u64;
        assert_eq!(through_service(area, ProcId::me(), at, buf, 64, true), Err(GNI_RC_TRANSACTION_ERROR));
        assert_eq!(through_service(area, ProcId::me(), at + 4096, buf, 64, false), Err(GNI_RC_TRANSACTION_ERROR));
        // The readable page is read.
        assert_eq!(through_service(area, ProcId::me(), at, buf, 64, false), Ok(()));
        assert_eq!(out, [0u8; 64]);
    }

    /// A requester that died after its request and before the answer, whose service lock the
    /// next requester took over: that late answer (other bytes in the bounce buffer) is not
    /// taken for the next request's.
    #[test]
    fn a_dead_requesters_late_answer_is_not_taken_for_the_next_request() {
        // SAFETY: RankArea is made of atomics only; all zeroes is an empty rank.
        let area: &'static RankArea = Box::leak(unsafe { shm::zeroed_box() });
        let data: &'static [u8; 64] = Box::leak(Box::new([7; 64]));
        let at = data.as_ptr() as u64;
        area.regs[0].publish(1, &Reg { addr: at, len: 64, read_only: false, ring: NO_RING });
        let svc = &area.service;
        svc.running.store(1, Ordering::Relaxed);
        svc.request.store(1, Ordering::Release); // the dead requester's, not answered yet
        let requester = std::thread::spawn(move || {
            let mut out = [0u8; 64];
            let rc = through_service(area, ProcId::me(), at, out.as_mut_ptr() as u64, 64, false);
            (rc, out)
        });
        // The requester waits (a pause only makes the late answer come after it asked).
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: the bounce buffer holds BOUNCE_BYTES >= 64 bytes; the requester reads it
        // only after the answer below.
        unsafe { std::ptr::write_bytes(svc.bounce(), 0xee, 64) };
        svc.done.store(1, Ordering::Release);
        shm::futex_wake(&svc.done);
        std::thread::spawn(move || serve(area, 1));
        let (rc, out) = requester.join().unwrap();
        assert_eq!(rc, Ok(()));
        assert_eq!(out, [7; 64], "the requester took the dead requester's answer for its own");
    }
}
