//! The launcher's signals as bytes on a pipe (the self-pipe trick), so one poll loop sees rank
//! messages, rank exits (SIGCHLD) and requests to end the job (SIGINT, SIGTERM, SIGHUP) in order.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals that end the job: forwarded to the ranks.
pub const ENDING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The pipe's write end, for the handler.
static WRITE_END: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let byte = sig as u8;
    let fd = WRITE_END.load(Ordering::Relaxed);
    // SAFETY: write is async-signal-safe; fd is the pipe's non-blocking write end (a full pipe
    // loses the byte, but then earlier bytes already wake the loop); errno is restored.
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
    /// Install the handlers for SIGCHLD and [`ENDING`]. Ranks started after this get the default
    /// dispositions back at exec.
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
        for sig in ENDING.into_iter().chain([libc::SIGCHLD]) {
            // SAFETY: a zeroed sigaction is valid; the handler only calls async-signal-safe
            // functions; SA_RESTART keeps the loop's blocking writes going (poll still returns).
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(SignalPipe { read_end: std::fs::File::from(read_end) })
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> libc::c_int {
        self.read_end.as_raw_fd()
    }

    /// The signals that arrived since the last call, in order.
    pub fn drain(&mut self) -> Vec<libc::c_int> {
        let mut buf = [0u8; 64];
        let mut out = Vec::new();
        while let Ok(n @ 1..) = self.read_end.read(&mut buf) {
            out.extend(buf[..n].iter().map(|&b| libc::c_int::from(b)));
        }
        out
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
        (libc::SIGXCPU, "SIGXCPU"),
    ];
    known.iter().find(|(s, _)| *s == sig).map_or_else(|| format!("signal {sig}"), |(_, n)| (*n).to_owned())
}
