//! Rank 0's stdin when `aar run`'s is its controlling terminal. The ranks run in process groups
//! of their own (so that a signal to the launcher's group, a key's or `kill -- -PGID`'s, reaches
//! them once, forwarded by the launcher), outside the terminal's foreground group: a rank that
//! read the terminal would be stopped by SIGTTIN. So the launcher reads the terminal, while its
//! own process group is the foreground one, and writes what it read to a pipe that is rank 0's
//! stdin, as hydra's mpiexec forwards its stdin to rank 0. In the background (`aar run ... &`,
//! `bg`) it leaves the terminal alone, and rank 0 waits for input until the job is brought to the
//! foreground, instead of the whole job being stopped for tty input. What the launcher read and
//! rank 0 did not (up to a pipe's worth) is lost when rank 0 ends or the job does, said with how
//! many bytes ([`Relay::drop_unread`]): it is no longer in the terminal for the shell.
//!
//! A stdin that is no terminal (a file, a pipe, /dev/null, a terminal that is not the launcher's
//! controlling one) is rank 0's own, as before: no job control stops its reader.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

/// How often a launcher in the background looks whether it came to the foreground (`fg` of a job
/// that runs sends it no signal).
const RECHECK: Duration = Duration::from_millis(250);

/// The most bytes read from the terminal that wait for rank 0's pipe; the terminal is read only
/// when none wait, so a rank 0 that does not read leaves the rest in the terminal.
const CHUNK: usize = 4096;

pub struct Relay {
    /// The launcher's own descriptor of the terminal, non-blocking (a reopened one: the
    /// inherited stdin's file description, which the shell shares, stays blocking).
    terminal: File,
    /// The write end of rank 0's stdin, non-blocking; `None` once closed (end of input, or rank 0
    /// and what it started closed the read end).
    pipe: Option<File>,
    /// Read from the terminal, not yet taken by the pipe.
    waiting: Vec<u8>,
}

impl Relay {
    /// When stdin is this launcher's controlling terminal: the relay, and the read end of the pipe
    /// for rank 0's stdin. `None` otherwise (rank 0 inherits stdin), or when the terminal cannot
    /// be reopened or the pipe made (rank 0 inherits the terminal, and is stopped by SIGTTIN if it
    /// reads it).
    pub fn for_terminal() -> Option<(Relay, OwnedFd)> {
        // SAFETY: tcgetpgrp only queries fd 0; it fails unless fd 0 is the controlling terminal
        // of this process's session.
        if unsafe { libc::tcgetpgrp(0) } < 0 {
            return None;
        }
        let terminal = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open("/proc/self/fd/0")
            .ok()?;
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: pipe2 just returned these two open descriptors, owned from here on.
        let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on the pipe's write end, just opened; only the launcher's end is made
        // non-blocking (the flag belongs to the write end's file description alone).
        if unsafe { libc::fcntl(write_end.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
            return None;
        }
        Some((Relay { terminal, pipe: Some(write_end), waiting: Vec::new() }, read_end))
    }

    /// This launcher's process group is the terminal's foreground group: it may read it.
    fn foreground(&self) -> bool {
        // SAFETY: tcgetpgrp and getpgrp only query.
        unsafe { libc::tcgetpgrp(self.terminal.as_raw_fd()) == libc::getpgrp() }
    }

    /// The descriptor the loop waits on, and for what: the pipe's room for what waits, or the
    /// terminal's input in the foreground; `None` in the background or once closed.
    pub fn poll_fd(&self) -> Option<libc::pollfd> {
        let pipe = self.pipe.as_ref()?;
        let (fd, events) = if !self.waiting.is_empty() {
            (pipe.as_raw_fd(), libc::POLLOUT)
        } else if self.foreground() {
            (self.terminal.as_raw_fd(), libc::POLLIN)
        } else {
            return None;
        };
        Some(libc::pollfd { fd, events, revents: 0 })
    }

    /// When the loop is to look again whether the launcher came to the foreground: in the
    /// background, with nothing waiting.
    pub fn recheck_at(&self) -> Option<Instant> {
        (self.pipe.is_some() && self.waiting.is_empty() && !self.foreground()).then(|| Instant::now() + RECHECK)
    }

    /// Pass on what waits and what the terminal holds, as far as that does not block.
    pub fn pump(&mut self) {
        while let Some(pipe) = self.pipe.as_mut() {
            while !self.waiting.is_empty() {
                match pipe.write(&self.waiting) {
                    Ok(n) => drop(self.waiting.drain(..n)),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                    // EPIPE: nobody holds rank 0's stdin any more.
                    Err(_) => return self.drop_unread("rank 0 closed its stdin (or ended) without reading"),
                }
            }
            // Rank 0 (and what it started) closed its stdin: the terminal's input is not taken
            // from the shell or the next program.
            let mut p = libc::pollfd { fd: pipe.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
            // SAFETY: a zero-timeout poll of one live pollfd.
            if unsafe { libc::poll(&mut p, 1, 0) } > 0 && p.revents & libc::POLLERR != 0 {
                return self.drop_unread("rank 0 closed its stdin (or ended) without reading");
            }
            if !self.foreground() {
                return;
            }
            let mut buf = [0u8; CHUNK];
            // With SIGTTIN blocked, a read from the background (the job was moved there since the
            // look above) fails with EIO instead of stopping the launcher's whole process group.
            let read = with_sigttin_blocked(|| self.terminal.read(&mut buf));
            match read {
                // The end of input (Ctrl-D at the start of a line, or the terminal hung up).
                Ok(0) => return self.close(),
                Ok(n) => self.waiting.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// The bytes read from the terminal for rank 0 that it has not read: those that wait here,
    /// and those in its pipe.
    fn unread(&self) -> usize {
        let Some(pipe) = self.pipe.as_ref() else { return 0 };
        let mut in_pipe: libc::c_int = 0;
        // SAFETY: FIONREAD writes the bytes the live pipe holds into the c_int it points to (on
        // either end of a pipe; its readers may be gone, its bytes are still counted).
        if unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &mut in_pipe) } < 0 {
            in_pipe = 0;
        }
        self.waiting.len() + usize::try_from(in_pipe).unwrap_or(0)
    }

    /// Rank 0 will read no more (`why`, which leads into "the last N bytes typed"): what it did not read of what was typed is lost, as with
    /// any launcher that passes its input on (the launcher read it from the terminal, so it is not
    /// left there for the shell, which would have got it after a program that did not read it);
    /// said, with how many bytes, so that a command typed ahead for the shell that never ran is
    /// explained.
    pub fn drop_unread(&mut self, why: &str) {
        let lost = self.unread();
        self.close();
        if lost > 0 {
            say!(
                "aar run: {why} the last {} typed at the terminal, which aar run had \
                 read for it: they are lost (not left for the shell); type ahead only what rank 0 reads.",
                aar_record::count(lost as u64, "byte", "bytes")
            );
        }
    }

    /// Rank 0 sees the end of its input; what waits is dropped.
    pub fn close(&mut self) {
        self.pipe = None;
        self.waiting = Vec::new();
    }
}

/// `f` with SIGTTIN blocked in this (single-threaded) process, its mask restored after.
fn with_sigttin_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t values set by sigemptyset/sigaddset; pthread_sigmask only changes this
    // thread's mask, and the old one is restored before returning.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTIN);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}
