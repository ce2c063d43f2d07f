//! What a job of N ranks needs of this machine, checked before any rank starts, so that a job too
//! big for it is refused with the need, what there is and the fix, instead of failing late and
//! obscurely (a rank whose `GNI_CdmAttach` fails for want of /dev/shm, `Too many open files` at rank 1000):
//!
//! - /dev/shm: the emulator's shared state, [`RANK_FILE_BYTES`] per rank (measured: the size of
//!   its `rank-R` file, allocated whole at the rank's first uGNI call; `tests/run.rs` checks it
//!   against a real rank's file), a page per node and a few per job.
//! - Open files: the launcher holds the PMI socket and the stdout and stderr pipes of every rank,
//!   and a few more. A soft limit
//!   below that is raised to what is needed (as srun does) when the hard limit allows; the ranks
//!   get the soft limit back at exec.
//! - Processes: each rank is one, and the emulator starts a thread in it (RLIMIT_NPROC counts
//!   both), unless the kernel does not enforce the limit for this user (root, CAP_SYS_RESOURCE,
//!   CAP_SYS_ADMIN).
//! - Address space (`ulimit -v`, RLIMIT_AS, which the ranks inherit): a rank maps the file of every
//!   rank it reaches through the emulated uGNI, its own included, besides its program. A limit
//!   below what a rank that reaches all ranks needs is said before the job starts, which it does
//!   all the same (a rank that uses no uGNI, `aar run sh -c ...`, needs little): the rank's own
//!   failure (a file it cannot map, a GNI call that fails) would not name the limit.
//! - File size (`ulimit -f`, RLIMIT_FSIZE, which batch systems pass on and the ranks inherit): a
//!   rank allocates its file whole at its first uGNI call, so under a limit below
//!   [`RANK_FILE_BYTES`] its `GNI_CdmAttach` fails (`GNI_RC_ERROR_RESOURCE`, said by the emulator
//!   in its own line). Said before the job starts, which it does all the same (a rank that uses no
//!   uGNI writes no such file).

use aar_record::count;
use std::ffi::CString;
use std::path::Path;

/// The bytes of a rank's file in the job folder (`rank-R`: the emulator's `RankArea`).
pub const RANK_FILE_BYTES: u64 = 8_869_040;
/// Files in the job folder besides the ranks': `job`, `topology` and a partial rank file.
const JOB_FILES: u64 = 3;
/// Descriptors the launcher holds of each rank: its PMI socket and the pipes of its stdout and
/// stderr.
const FDS_PER_RANK: u64 = 3;
/// Descriptors the launcher holds besides [`FDS_PER_RANK`] per rank: stdin, stdout, stderr, the signal pipe,
/// a socket pair and the exec-error pipe while a rank starts, /proc and /dev/shm listings, and with
/// a terminal for stdin its own descriptor of it and rank 0's stdin pipe (`input::Relay`).
pub const LAUNCHER_FDS: u64 = 16;
/// Tasks (processes and threads, as RLIMIT_NPROC counts them) per rank: the process and the
/// emulator's service thread.
const TASKS_PER_RANK: u64 = 2;

/// Address space a small uGNI rank takes besides the rank files it maps: its code, libraries,
/// stacks and the emulator's thread (measured: examples/cray/all_pairs takes 6.9 to 7.1 MiB at
/// 2 to 8 ranks; `tests/run.rs` runs it within the limit this check asks for).
pub const RANK_BASE_BYTES: u64 = 8 << 20;

/// Where a refused job's fix would say how many ranks fit, and none does (`-n 0` is no job).
const NONE_FITS: &str = "Not even one rank fits: ";

/// The start of a refused job's fix: run at most the `fit` ranks that fit, or...
fn at_most(fit: u64) -> String {
    match fit {
        0 => NONE_FITS.to_string(),
        n => format!("Run at most -n {}, or ", count(n, "rank", "ranks")),
    }
}

/// /dev/shm (`dir`) has room for the job folder of `size` ranks on `nodes` nodes.
pub fn check_shm(dir: &Path, size: u64, nodes: u64) -> Result<(), String> {
    let Ok(path) = CString::new(dir.as_os_str().as_encoded_bytes()) else { return Ok(()) };
    // SAFETY: a zeroed statvfs is valid for statvfs to fill; path is a NUL-terminated string.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut st) != 0 {
            // Job::create says what is wrong with the folder.
            return Ok(());
        }
        st
    };
    let page = (st.f_frsize as u64).max(1);
    let pages = |bytes: u64| bytes.div_ceil(page) * page;
    let per_rank = pages(RANK_FILE_BYTES);
    // The node table is about 20 bytes a node.
    let need = size * per_rank + nodes * page + pages(20 * nodes) + 2 * page;
    let free = st.f_bavail as u64 * page;
    let total = st.f_blocks as u64 * page;
    if need > free {
        let fit = free.saturating_sub(need - size * per_rank) / per_rank;
        return Err(format!(
            "a job of {} needs {} of {} for the emulator's shared state ({} per rank), and it has {} free \
             of {}; no rank was started. {}free {} (aar-job-* folders of jobs that still run, other programs' \
             files), or make it bigger (as root: mount -o remount,size={}M {}).",
            count(size, "rank", "ranks"),
            aar_record::human_bytes(need),
            dir.display(),
            aar_record::human_bytes(per_rank),
            aar_record::human_bytes(free),
            aar_record::human_bytes(total),
            if fit == 0 { NONE_FITS.to_string() } else { format!("Run fewer ranks (-n {fit} fits), ") },
            dir.display(),
            (total + need - free).div_ceil(1 << 20),
            dir.display(),
        ));
    }
    // A tmpfs may run out of inodes (nr_inodes) before it runs out of bytes.
    let files = size + nodes + JOB_FILES + 1;
    if st.f_files > 0 && (st.f_favail as u64) < files {
        return Err(format!(
            "a job of {} needs {files} files in {}, and it has room for {} more (nr_inodes); no rank was \
             started. Run fewer ranks, or give it more inodes (as root: mount -o remount,nr_inodes={} {}).",
            count(size, "rank", "ranks"),
            dir.display(),
            st.f_favail,
            st.f_files as u64 + files - st.f_favail as u64,
            dir.display(),
        ));
    }
    Ok(())
}

/// The open-file limit lets the launcher hold a socket and two pipes per rank: the soft limit is raised when
/// it is too low and the hard limit allows; the soft limit the ranks get back, if it was raised.
pub fn check_open_files(size: u64) -> Result<Option<libc::rlimit>, String> {
    let need = size * FDS_PER_RANK + LAUNCHER_FDS;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(None);
    }
    let fits = |l: libc::rlim_t| l == libc::RLIM_INFINITY || l >= need;
    if fits(lim.rlim_cur) {
        return Ok(None);
    }
    if fits(lim.rlim_max) {
        let raised = libc::rlimit { rlim_cur: need, rlim_max: lim.rlim_max };
        // SAFETY: setrlimit reads a valid rlimit; a soft limit up to the hard one is always allowed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(Some(lim));
        }
        return Err(format!(
            "a job of {} needs {need} open files in aar run (the PMI socket and the output pipes of every rank, \
             {FDS_PER_RANK} each, and {LAUNCHER_FDS} of its own), and raising its limit from {} to {need} failed: {}; no rank was started. {}raise the \
             limit before (ulimit -n {need}).",
            count(size, "rank", "ranks"),
            lim.rlim_cur,
            std::io::Error::last_os_error(),
            at_most(lim.rlim_cur.saturating_sub(LAUNCHER_FDS) / FDS_PER_RANK),
        ));
    }
    Err(format!(
        "a job of {} needs {need} open files in aar run (the PMI socket and the output pipes of every rank, \
         {FDS_PER_RANK} each, and {LAUNCHER_FDS} of its own), and its limit is {} (hard limit {}); no rank was started. {}raise the hard limit (ulimit -n \
         {need} as root, or nofile in /etc/security/limits.conf).",
        count(size, "rank", "ranks"),
        lim.rlim_cur,
        lim.rlim_max,
        at_most(lim.rlim_max.saturating_sub(LAUNCHER_FDS) / FDS_PER_RANK),
    ))
}

/// The address space a rank of a job of `size` ranks needs to reach every rank through the
/// emulated uGNI.
pub fn address_space_need(size: u64) -> u64 {
    size * RANK_FILE_BYTES.div_ceil(4096) * 4096 + RANK_BASE_BYTES
}

/// What to say when the address-space limit (`ulimit -v`) is too low for a rank of a job of
/// `size` ranks that reaches every rank through the emulated uGNI; nothing when it is not.
pub fn check_address_space(size: u64) -> Option<String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let need = address_space_need(size);
    if lim.rlim_cur >= need {
        return None;
    }
    let fit = lim.rlim_cur.saturating_sub(RANK_BASE_BYTES) / (RANK_FILE_BYTES.div_ceil(4096) * 4096);
    Some(format!(
        "the address-space limit (ulimit -v, RLIMIT_AS), which the ranks inherit, is {} KiB ({}); a rank of a \
         job of {} that reaches every rank through the emulated uGNI maps each one's shared file ({} each) and \
         needs at least {} with its program, so such a rank will fail (its emulator cannot map a rank's file, or \
         a GNI call fails). The job is started all the same: a rank that uses no uGNI, or reaches fewer ranks, \
         needs less. To fix it, raise the limit before aar run (ulimit -v unlimited, or at least ulimit -v {}){}.",
        lim.rlim_cur / 1024,
        aar_record::human_bytes(lim.rlim_cur),
        count(size, "rank", "ranks"),
        aar_record::human_bytes(RANK_FILE_BYTES),
        aar_record::human_bytes(need),
        need.div_ceil(1024),
        if fit > 0 { format!(", or run fewer ranks (-n {fit} fits)") } else { String::new() },
    ))
}

/// What to say when the file size limit (`ulimit -f`) is below the file each rank's emulated uGNI
/// allocates at its first call; nothing when it is not.
pub fn check_file_size() -> Option<String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
        || lim.rlim_cur >= RANK_FILE_BYTES
    {
        return None;
    }
    Some(format!(
        "the file size limit (ulimit -f, RLIMIT_FSIZE), which the ranks inherit, is {} bytes ({}); the emulated \
         uGNI allocates a shared file of {} bytes ({}) for each rank at its first uGNI call, so such a rank's \
         GNI_CdmAttach will fail with GNI_RC_ERROR_RESOURCE. The job is started all the same: a rank that uses no uGNI \
         is not affected. To fix it, raise the limit before aar run (ulimit -f unlimited, or at least {} KiB: \
         ulimit -f {} in bash, which counts KiB); libaar.so's records are still limited by it.",
        lim.rlim_cur,
        aar_record::human_bytes(lim.rlim_cur),
        RANK_FILE_BYTES,
        aar_record::human_bytes(RANK_FILE_BYTES),
        RANK_FILE_BYTES.div_ceil(1024),
        RANK_FILE_BYTES.div_ceil(1024),
    ))
}

/// Whether the kernel enforces RLIMIT_NPROC on this process: not for root, nor with
/// CAP_SYS_RESOURCE or CAP_SYS_ADMIN (as fork checks).
fn nproc_enforced() -> bool {
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 {
        return false;
    }
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| v.trim().to_owned())))
        .and_then(|v| u64::from_str_radix(&v, 16).ok())
        .unwrap_or(0);
    // linux/capability.h: CAP_SYS_ADMIN 21, CAP_SYS_RESOURCE 24.
    let has = |cap: u32| caps & (1 << cap) != 0;
    !has(21) && !has(24)
}

/// The tasks (threads) of the processes of real user `uid`, from /proc.
fn tasks_of(uid: libc::uid_t) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<libc::uid_t>().ok())
                == Some(uid)
        })
        .map(|s| s.lines().find_map(|l| l.strip_prefix("Threads:")?.trim().parse().ok()).unwrap_or(1))
        .sum()
}

/// The process limit lets `size` more ranks start.
pub fn check_processes(size: u64) -> Result<(), String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
        || !nproc_enforced()
    {
        return Ok(());
    }
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let used = tasks_of(uid);
    let need = size * TASKS_PER_RANK;
    if used + need <= lim.rlim_cur {
        return Ok(());
    }
    Err(format!(
        "a job of {} needs {need} more processes and threads of user {uid} (each rank and the emulator's thread \
         in it), and the limit is {} (ulimit -u) with {used} in use; no rank was started. {}raise the limit \
         (ulimit -u {}; above the hard limit, {}, as root or nproc in /etc/security/limits.conf).",
        count(size, "rank", "ranks"),
        lim.rlim_cur,
        at_most(lim.rlim_cur.saturating_sub(used) / TASKS_PER_RANK),
        used + need,
        if lim.rlim_max == libc::RLIM_INFINITY { "unlimited".to_string() } else { lim.rlim_max.to_string() },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_too_small_is_named_with_what_fits() {
        // /proc has no free blocks.
        let e = check_shm(Path::new("/proc"), 4, 4).unwrap_err();
        assert!(e.contains("a job of 4 ranks needs 33.9 MiB of /proc") && e.contains("(8.5 MiB per rank)"), "{e}");
        assert!(e.contains("no rank was started. Not even one rank fits: free /proc (") && !e.contains("-n 0"), "{e}");
        assert!(check_shm(Path::new("/no/such/folder"), 4, 4).is_ok());
    }
}
