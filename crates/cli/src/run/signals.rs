//! The launcher's signals, counted per signal by the handler and announced by a byte on a pipe
//! (the self-pipe trick), so one poll loop sees rank messages, rank exits (SIGCHLD), requests to
//! end the job (SIGINT, SIGTERM, SIGHUP), job control (SIGTSTP, SIGCONT) and signals meant for
//! the ranks (SIGUSR1, SIGUSR2, SIGWINCH) in order. The count, not the byte, is the record: a byte
//! a full pipe refused (a flood of SIGWINCH from a dragged window, of SIGCHLD) loses no signal.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// The signals that end the job: forwarded to the ranks (SIGQUIT too, as srun and hydra's mpiexec
/// forward it: a user asks a hung job for its ranks' core dumps).
pub const ENDING: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The signals only forwarded to the ranks, as srun and hydra's mpiexec forward them (a program
/// may use them to checkpoint or report progress); the job goes on unless a rank dies of one.
pub const FORWARDED: [libc::c_int; 2] = [libc::SIGUSR1, libc::SIGUSR2];

/// The other signals whose default action ends a process (a timer's, the CPU time limit's, a
/// power failure's): they end the job too, with SIGTERM to the ranks, rather than end the launcher
/// alone and leave the processes the ranks started running on.
pub const FATAL: [libc::c_int; 5] = [libc::SIGALRM, libc::SIGVTALRM, libc::SIGPROF, libc::SIGXCPU, libc::SIGPWR];

/// Job control: a stop request (Ctrl-Z, `kill -TSTP`) and the continue that ends a stop.
pub const JOB_CONTROL: [libc::c_int; 2] = [libc::SIGTSTP, libc::SIGCONT];

/// A resize of the terminal, forwarded to the ranks' process groups, which, outside the
/// terminal's foreground group, do not get it from the terminal.
pub const RESIZE: libc::c_int = libc::SIGWINCH;

/// The pipe's write end, for the handler.
static WRITE_END: AtomicI32 = AtomicI32::new(-1);

/// Numbers the handler's runs; the last SIGTSTP's and the last SIGCONT's, so [`stop_self`] can
/// tell a continue that came after the stop request (nothing would end that stop) and whether
/// its own stop happened.
static SEQ: AtomicU64 = AtomicU64::new(1);
static LAST_TSTP: AtomicU64 = AtomicU64::new(0);
static LAST_CONT: AtomicU64 = AtomicU64::new(0);

/// Signal numbers are below this (64 on Linux, and real-time ones are not handled).
const SIGNALS: usize = 65;

/// Per signal: how many arrived and were not yet taken by [`SignalPipe::drain`], and the [`SEQ`]
/// of the last one, which orders the signals whose bytes a full pipe refused.
static ARRIVED: [AtomicU64; SIGNALS] = [const { AtomicU64::new(0) }; SIGNALS];
static LAST: [AtomicU64; SIGNALS] = [const { AtomicU64::new(0) }; SIGNALS];

extern "C" fn on_signal(sig: libc::c_int) {
    let Some(slot) = usize::try_from(sig).ok().filter(|&s| s < SIGNALS) else { return };
    let seq = SEQ.fetch_add(1, Ordering::SeqCst);
    match sig {
        libc::SIGTSTP => LAST_TSTP.store(seq, Ordering::SeqCst),
        libc::SIGCONT => LAST_CONT.store(seq, Ordering::SeqCst),
        _ => {}
    }
    // Counted before the byte is written: a drain that sees the byte sees the count.
    LAST[slot].store(seq, Ordering::SeqCst);
    ARRIVED[slot].fetch_add(1, Ordering::SeqCst);
    // Signals are below 65: one byte.
    let byte = sig as u8;
    let fd = WRITE_END.load(Ordering::Relaxed);
    // SAFETY: write is async-signal-safe; fd is the pipe's non-blocking write end (a full pipe
    // refuses the byte, but the signal is counted, and the bytes already there wake the loop);
    // errno is restored.
    unsafe {
        let saved = *libc::__errno_location();
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = saved;
    }
}

/// The read end of the signal pipe.
pub struct SignalPipe {
    read_end: std::fs::File,
}

impl SignalPipe {
    /// Install the handlers for SIGCHLD, [`ENDING`], [`FORWARDED`], [`FATAL`], [`JOB_CONTROL`] and
    /// [`RESIZE`]; a signal of [`ENDING`], [`FORWARDED`], [`FATAL`] or [`RESIZE`] that is already
    /// ignored (SIG_IGN) stays ignored. The signals handled are unblocked, should aar run have
    /// been started with them blocked (an inherited signal mask). Ranks started after this
    /// get the default dispositions back at exec, and the ignored ones stay ignored.
    pub fn install() -> std::io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 just returned these two open descriptors, owned from here on; the write
        // end lives as long as the process (the handler may run at any time).
        let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        WRITE_END.store(write_end.as_raw_fd(), Ordering::Relaxed);
        std::mem::forget(write_end);
        // SAFETY: a zeroed sigset_t is valid for sigemptyset to initialise.
        let mut handled: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: handled is a live sigset_t.
        unsafe { libc::sigemptyset(&mut handled) };
        for sig in ENDING.into_iter().chain(FORWARDED).chain(FATAL).chain(JOB_CONTROL).chain([libc::SIGCHLD, RESIZE]) {
            // A signal ignored when aar run started (`nohup aar run`, a background job of a shell
            // without job control ignores SIGINT and SIGQUIT) stays ignored, here and, through
            // exec, in the ranks: whoever started the job asked that it not end by it.
            if !JOB_CONTROL.contains(&sig) && sig != libc::SIGCHLD && ignored(sig) {
                continue;
            }
            handle(sig, true)?;
            // SAFETY: handled is a live, initialised sigset_t and sig a valid signal number.
            unsafe { libc::sigaddset(&mut handled, sig) };
        }
        // A signal mask is inherited through exec: a parent that blocked SIGCHLD or SIGTERM (and
        // exec'd aar run without restoring its mask) would leave them pending for ever, the
        // handlers never run: the end of a rank whose leftovers hold its output open would go
        // unseen (the job would hang), a Ctrl-C or `kill` would do nothing. Blocking is no
        // request to ignore (that is SIG_IGN, kept above): the signals handled are unblocked.
        // (The ranks start with an empty mask: Command clears it in the child.)
        // SAFETY: pthread_sigmask reads the live set; the old mask is not wanted.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &handled, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(SignalPipe { read_end: std::fs::File::from(read_end) })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> libc::c_int {
        self.read_end.as_raw_fd()
    }

    /// The signals that arrived since the last call, each once, in order: in the order of their
    /// bytes on the pipe, then those whose byte a full pipe refused (or that is not written yet),
    /// in the order of their last arrival.
    pub fn drain(&mut self) -> Vec<libc::c_int> {
        let mut buf = [0u8; 4096];
        let mut out = Vec::new();
        while let Ok(n @ 1..) = self.read_end.read(&mut buf) {
            // A byte whose signal a previous drain took from its count already is skipped.
            out.extend(buf[..n].iter().map(|&b| libc::c_int::from(b)).filter(|&sig| take(sig, 1) == 1));
        }
        let mut refused: Vec<(u64, libc::c_int, u64)> = (1..SIGNALS as libc::c_int)
            .filter_map(|sig| {
                let n = take(sig, u64::MAX);
                (n > 0).then(|| (LAST[sig as usize].load(Ordering::SeqCst), sig, n))
            })
            .collect();
        refused.sort_unstable();
        for (_, sig, n) in refused {
            out.extend(std::iter::repeat_n(sig, n as usize));
        }
        out
    }
}

/// Take up to `most` of `sig`'s arrivals from its count; how many were taken.
fn take(sig: libc::c_int, most: u64) -> u64 {
    let Some(count) = usize::try_from(sig).ok().and_then(|s| ARRIVED.get(s)) else { return 0 };
    match count.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n > 0).then(|| n - n.min(most))) {
        Ok(n) => n.min(most),
        Err(_) => 0,
    }
}

/// Set `sig`'s disposition: [`on_signal`] (with SA_RESTART, which keeps the loop's blocking writes
/// going; poll still returns) or SIG_DFL.
fn handle(sig: libc::c_int, ours: bool) -> std::io::Result<()> {
    type Handler = extern "C" fn(libc::c_int);
    // SAFETY: a zeroed sigaction is valid; the handler only calls async-signal-safe functions.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = if ours { on_signal as Handler as libc::sighandler_t } else { libc::SIG_DFL };
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether `sig` is ignored (SIG_IGN) in this process.
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: sigaction with a NULL new action only reads the disposition into a zeroed, valid
    // sigaction.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// A signal that ends the job ([`ENDING`], [`FATAL`]) that arrived and that no
/// [`SignalPipe::drain`] took: once the job is over and nothing drains, a request to stop
/// waiting for the launcher's own stdout or stderr ([`super::output`]).
pub fn end_requested() -> Option<libc::c_int> {
    ENDING.into_iter().chain(FATAL).find(|&sig| ARRIVED[sig as usize].load(Ordering::SeqCst) > 0)
}

/// Whether a SIGCONT came after the last SIGTSTP: the stop it asked for is already over.
pub fn continued_since_stop_request() -> bool {
    LAST_CONT.load(Ordering::SeqCst) > LAST_TSTP.load(Ordering::SeqCst)
}

/// Stop this process as SIGTSTP's default action does (so a shell reports the job as stopped by
/// Ctrl-Z), and return once a SIGCONT resumed it. In an orphaned process group (a launcher under
/// `setsid`, a daemon, a batch system) the kernel discards SIGTSTP, as nothing could resume the
/// group by job control; the process then stops with SIGSTOP: its ranks are stopped, so must it
/// be, and `kill -CONT` resumes it.
pub fn stop_self() {
    let before = LAST_CONT.load(Ordering::SeqCst);
    // With SIGTSTP's handler back in place on every path: a failure to set SIG_DFL (which cannot
    // fail for SIGTSTP) only means the SIGSTOP below does the stopping.
    let _ = handle(libc::SIGTSTP, false);
    // SAFETY: raise only sends a signal to this process; the stop happens before it returns.
    unsafe { libc::raise(libc::SIGTSTP) };
    let _ = handle(libc::SIGTSTP, true);
    // A stop ends only with a SIGCONT, whose handler ran before raise returned.
    if LAST_CONT.load(Ordering::SeqCst) == before {
        // SAFETY: as above; SIGSTOP cannot be caught, ignored or discarded.
        unsafe { libc::raise(libc::SIGSTOP) };
    }
}

/// A signal's name (SIGSEGV), or its number.
pub fn name(sig: libc::c_int) -> String {
    let known = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGCHLD, "SIGCHLD"),
        (libc::SIGCONT, "SIGCONT"),
        (libc::SIGSTOP, "SIGSTOP"),
        (libc::SIGTSTP, "SIGTSTP"),
        (libc::SIGTTIN, "SIGTTIN"),
        (libc::SIGTTOU, "SIGTTOU"),
        (libc::SIGURG, "SIGURG"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGWINCH, "SIGWINCH"),
        (libc::SIGIO, "SIGIO"),
        (libc::SIGPWR, "SIGPWR"),
        (libc::SIGSYS, "SIGSYS"),
        (libc::SIGSTKFLT, "SIGSTKFLT"),
    ];
    known.iter().find(|(s, _)| *s == sig).map_or_else(|| format!("signal {sig}"), |(_, n)| (*n).to_owned())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    /// A full signal pipe loses no signal, nor counts one twice: each is counted by the handler,
    /// and the byte is only a wake-up. Two SIGINTs are two (a second Ctrl-C kills the ranks).
    #[test]
    fn a_full_pipe_loses_no_signal() {
        let mut pipe = super::SignalPipe::install().unwrap();
        let fd = super::WRITE_END.load(Ordering::Relaxed);
        // Filled with bytes that are no signal, until the non-blocking write end refuses more.
        let filler = [0u8; 4096];
        // SAFETY: write of a live buffer to the pipe's write end, which stays open.
        while unsafe { libc::write(fd, filler.as_ptr().cast(), filler.len()) } > 0 {}
        let raised = [libc::SIGINT, libc::SIGUSR1, libc::SIGINT, libc::SIGTERM];
        for sig in raised {
            // SAFETY: raise runs the handler installed above in this thread before it returns.
            assert_eq!(unsafe { libc::raise(sig) }, 0);
        }
        // Another test's child may end meanwhile: its SIGCHLD is not this test's.
        let mut drain = || pipe.drain().into_iter().filter(|&s| s != libc::SIGCHLD).collect::<Vec<_>>();
        // In the order of their last arrival, as their bytes were refused.
        assert_eq!(drain(), [libc::SIGUSR1, libc::SIGINT, libc::SIGINT, libc::SIGTERM]);
        // The pipe has room again: the next comes through its byte, once.
        // SAFETY: as above.
        assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
        assert_eq!(drain(), [libc::SIGUSR2]);
        assert!(drain().is_empty());
        // The test harness gets its own dispositions back.
        for sig in super::ENDING
            .into_iter()
            .chain(super::FORWARDED)
            .chain(super::FATAL)
            .chain(super::JOB_CONTROL)
            .chain([libc::SIGCHLD, super::RESIZE])
        {
            super::handle(sig, false).unwrap();
        }
    }

    /// Every standard signal has its name (a rank past `ulimit -f` dies of SIGXFSZ); real-time
    /// signals have their number.
    #[test]
    fn every_standard_signal_is_named() {
        for sig in 1..32 {
            let name = super::name(sig);
            assert!(name.starts_with("SIG"), "signal {sig}: {name}");
        }
        assert_eq!(super::name(libc::SIGXFSZ), "SIGXFSZ");
        assert_eq!(super::name(40), "signal 40");
    }
}
