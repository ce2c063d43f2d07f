//! The ranks' stdout and stderr: each rank writes to a pipe of its own, which the launcher reads
//! in its poll loop and copies to its own stdout or stderr a whole line at a time, as srun does,
//! so the lines of two ranks never mix mid-line (ranks that shared the launcher's stdout would
//! split lines wherever their stdio buffers filled). With `--label` each line starts with the
//! rank that wrote it.
//!
//! The same loop serves PMI, so it never waits for its own stdout or stderr: lines go to a queue
//! of their stream ([`QUEUE_MAX`] bytes at most of the ranks'; the launcher's own lines, [`say()`],
//! go there too, after the ranks' lines before them), written out while the stream takes them
//! without blocking (a poll for POLLOUT, then at most [`PIPE_BUF`] bytes, which a pipe with room
//! takes whole). A stream nobody reads (`aar run ... | less` left at its prompt, a terminal
//! stopped with ^S, `aar run ... 2>&1 | less`) fills its queue; the ranks' pipes of that stream
//! are then not read, so a rank that writes on blocks in its own write, as it would writing to
//! the stream itself, while PMI is served to every rank and the job goes on, and ends as it
//! would (SIGTERM to the ranks at an abort). Before the launcher exits the queues are written
//! out, waiting as any program's writes do, but for a signal that ends the job (a Ctrl-C), which
//! drops what still waits.
//!
//! A line of the launcher's about a rank (its PMI_Abort, its end) comes after what the rank wrote
//! to stderr before it ([`Relay::hold_after`]): when a full queue leaves those lines in the
//! rank's pipe, the launcher's lines from then on are held back, not queued, until the rank's
//! stderr has been read past them; a stderr nobody reads then holds them as it holds the ranks'.

use std::collections::VecDeque;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{ChildStderr, ChildStdout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A line longer than this is written out in pieces (each piece still whole, and only the first
/// labelled), so a rank that writes without newlines cannot make the launcher hold its output.
const MAX_HELD: usize = 64 * 1024;

/// The bytes a stream's queue may hold before the ranks' pipes of that stream are no longer read.
const QUEUE_MAX: usize = 1 << 20;

/// The bytes of the launcher's own lines that stderr's queue may hold beyond [`QUEUE_MAX`].
const SAY_MAX: usize = 1 << 20;

/// The most a write to a stream that polled writable takes at once: a pipe with room for a
/// write takes this much whole (pipe(7)), so the write cannot block.
const PIPE_BUF: usize = libc::PIPE_BUF;

/// Where a rank's stream goes: the launcher's own stdout or stderr.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    Stdout,
    Stderr,
}

/// What waits to be written to one of the launcher's streams.
struct Queue {
    bytes: Vec<u8>,
    /// A write failed (`aar run ... | head` once head is gone): nothing more is written.
    closed: bool,
    /// The launcher's own lines not queued: the queue held [`QUEUE_MAX`] + [`SAY_MAX`] bytes
    /// (`bytes` and `held` together).
    lost: usize,
    /// The launcher's lines held back ([`Relay::hold_after`]), each group until a rank's pipe
    /// has been read up to a point: the read bytes of the pipe ([`Relay::read`]), and how many
    /// it must reach. Queued in order as the points are passed.
    held: VecDeque<(Arc<AtomicU64>, u64, Vec<u8>)>,
}

impl Queue {
    const fn new() -> Self {
        Queue { bytes: Vec::new(), closed: false, lost: 0, held: VecDeque::new() }
    }

    /// Queue the held lines whose points were passed, in order; all of them with `all`.
    fn release(&mut self, all: bool) {
        while self.held.front().is_some_and(|(read, at, _)| all || read.load(Ordering::Relaxed) >= *at) {
            if let Some((_, _, lines)) = self.held.pop_front() {
                self.bytes.extend_from_slice(&lines);
            }
        }
    }
}

static QUEUES: [Mutex<Queue>; 2] = [Mutex::new(Queue::new()), Mutex::new(Queue::new())];

impl Sink {
    fn fd(self) -> libc::c_int {
        match self {
            Sink::Stdout => libc::STDOUT_FILENO,
            Sink::Stderr => libc::STDERR_FILENO,
        }
    }

    fn queue(self) -> MutexGuard<'static, Queue> {
        // A poisoned lock only means a panic elsewhere: the bytes are still whole lines.
        QUEUES[self as usize].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write out what waits for this stream: while it takes bytes without blocking, or, with
    /// `wait`, all of it, waiting as a plain write does, but for a request to end (SIGINT,
    /// SIGTERM... [`super::signals::end_requested`]) that comes while nothing reads the stream
    /// (`aar run ... | less` at its prompt, a terminal stopped by ^S): what waits is then dropped,
    /// said on stderr, and the launcher goes on to its end. Whole lines where a piece can end at
    /// one, so a line of the other stream written in between (both to one terminal, `2>&1`) lands
    /// between lines.
    fn flush(self, wait: bool) {
        let fd = self.fd();
        let mut q = self.queue();
        while !q.bytes.is_empty() && !q.closed {
            if !writable(fd) {
                if !wait {
                    return;
                }
                // Until the stream takes more, or a signal comes (poll is not restarted).
                wait_writable(fd);
                if let Some(sig) = super::signals::end_requested() {
                    let dropped = q.bytes.len() + q.held.iter().map(|(_, _, lines)| lines.len()).sum::<usize>();
                    q.closed = true;
                    q.bytes = Vec::new();
                    q.held = VecDeque::new();
                    drop(q);
                    if self == Sink::Stdout {
                        say(format_args!(
                            "aar run: got {} while the job's last output waited for its stdout, which nothing \
                             reads: the {} that waited are dropped.",
                            super::signals::name(sig),
                            aar_record::count(dropped as u64, "byte", "bytes")
                        ));
                    }
                    return;
                }
                continue;
            }
            // A piece a stream that polled writable takes without blocking (a pipe: PIPE_BUF),
            // so that a wait is always in the poll above, which a signal ends.
            let piece = &q.bytes[..q.bytes.len().min(PIPE_BUF)];
            let n = piece.iter().rposition(|&b| b == b'\n').map_or(piece.len(), |end| end + 1);
            // SAFETY: write reads n bytes of the live queue, which holds at least n.
            let written = unsafe { libc::write(fd, q.bytes.as_ptr().cast(), n) };
            match usize::try_from(written) {
                Ok(w) if w > 0 => drop(q.bytes.drain(..w)),
                _ => match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => {}
                    // A stream left non-blocking by whoever opened it: with `wait`, the poll
                    // above waits.
                    Some(libc::EAGAIN) if !wait => return,
                    Some(libc::EAGAIN) => {}
                    // Closed (EPIPE), or gone: as the ranks' own writes would have learnt.
                    _ => {
                        q.closed = true;
                        q.bytes = Vec::new();
                        q.held = VecDeque::new();
                    }
                },
            }
        }
    }
}

/// `fd` takes a write now (or reports its error at once).
fn writable(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
    // SAFETY: a zero-timeout poll of one live pollfd.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

fn wait_writable(fd: libc::c_int) {
    let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
    // SAFETY: a poll of one live pollfd, until it is writable (or a signal interrupts it).
    unsafe { libc::poll(&mut p, 1, -1) };
}

/// The launcher's streams whose queues wait for room: to poll for POLLOUT.
pub fn waiting_sinks() -> Vec<libc::c_int> {
    [Sink::Stdout, Sink::Stderr]
        .into_iter()
        .filter(|s| {
            let q = s.queue();
            !q.closed && !q.bytes.is_empty()
        })
        .map(Sink::fd)
        .collect()
}

/// Write out what both streams' queues hold, when that does not block; with `wait`, all of it,
/// and the line that says how many of the launcher's own lines were lost ([`say()`]).
pub fn flush(wait: bool) {
    Sink::Stdout.flush(wait);
    if wait {
        // Lines held for what a rank wrote that was not read (a process it left holds its pipe):
        // the launcher's are not lost for that.
        Sink::Stderr.queue().release(true);
    }
    Sink::Stderr.flush(wait);
    if !wait {
        return;
    }
    let lost = std::mem::take(&mut Sink::Stderr.queue().lost);
    if lost > 0 {
        say(format_args!(
            "aar run: {lost} more of its lines were lost: its stderr was not read while the job ran and \
             {} MiB waited for it.",
            (QUEUE_MAX + SAY_MAX) >> 20
        ));
        Sink::Stderr.flush(true);
    }
}

/// One line of the launcher's own on stderr (the `say!` macro): queued after the ranks' lines
/// that wait for stderr, so that it comes after what they wrote before it, and written out as far
/// as stderr takes it without blocking, as theirs are: a stderr nobody reads must not stop the
/// loop that serves PMI and ends the job. Not bounded by [`QUEUE_MAX`] (a warning the launcher
/// holds back is no use), but by [`SAY_MAX`] more, against a rank that makes it say a line again
/// and again: beyond that the lines are counted, and one line at the end says how many were lost.
/// Lost when stderr cannot be written. Held back after the last point a rank's stderr must be read
/// past first ([`Relay::hold_after`]).
pub fn say(line: std::fmt::Arguments) {
    {
        let mut q = Sink::Stderr.queue();
        if q.closed {
            return;
        }
        let held: usize = q.held.iter().map(|(_, _, lines)| lines.len()).sum();
        if q.bytes.len() + held >= QUEUE_MAX + SAY_MAX {
            q.lost += 1;
            return;
        }
        let line = format!("{line}\n");
        match q.held.back_mut() {
            Some((_, _, lines)) => lines.extend_from_slice(line.as_bytes()),
            None => q.bytes.extend_from_slice(line.as_bytes()),
        }
    }
    Sink::Stderr.flush(false);
}

/// The read end of the pipe of one stream of a rank.
pub enum Pipe {
    Out(ChildStdout),
    Err(ChildStderr),
}

impl Pipe {
    fn raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Pipe::Out(p) => p.as_raw_fd(),
            Pipe::Err(p) => p.as_raw_fd(),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Pipe::Out(p) => p.read(buf),
            Pipe::Err(p) => p.read(buf),
        }
    }
}

/// One stream of one rank, on its way to the launcher's.
pub struct Relay {
    pipe: Option<Pipe>,
    sink: Sink,
    /// `"R: "` (the rank, right-aligned to the width of the job's largest) with `--label`.
    label: Option<String>,
    /// Bytes read past the last newline.
    held: Vec<u8>,
    /// The last piece queued ended a line (the next piece gets the label).
    at_line_start: bool,
    /// The bytes read from the pipe so far; `u64::MAX` once it is no longer read.
    read: Arc<AtomicU64>,
}

impl Relay {
    pub fn new(pipe: Option<Pipe>, sink: Sink, label: Option<String>) -> Self {
        Relay { pipe, sink, label, held: Vec::new(), at_line_start: true, read: Arc::new(AtomicU64::new(0)) }
    }

    /// The launcher's lines from now on (a line about what the rank did) are to come after what
    /// the rank wrote to this stream so far. All of it is queued when its queue has room (the
    /// caller read the pipe, [`Self::drain`]); what a full queue left in the pipe holds the
    /// launcher's lines back until the pipe has been read past it, not the launcher: it reads and
    /// queues them as the queue takes them. Only for stderr, the launcher's lines' stream: they
    /// do not wait for a stdout nobody reads.
    pub fn hold_after(&self) {
        let Some(pipe) = self.pipe.as_ref().filter(|_| self.sink == Sink::Stderr) else { return };
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD writes the bytes the live pipe holds into the c_int it points to.
        if unsafe { libc::ioctl(pipe.raw_fd(), libc::FIONREAD, &mut unread) } < 0 || unread <= 0 {
            return;
        }
        let at = self.read.load(Ordering::Relaxed) + unread as u64;
        let mut q = self.sink.queue();
        if !q.closed {
            q.held.push_back((Arc::clone(&self.read), at, Vec::new()));
        }
    }

    /// The pipe to poll, until its end of file, while its stream's queue has room.
    pub fn fd(&self) -> Option<std::os::fd::RawFd> {
        let q = self.sink.queue();
        self.pipe.as_ref().filter(|_| q.closed || q.bytes.len() < QUEUE_MAX).map(Pipe::raw_fd)
    }

    /// Read what the rank wrote, when that does not block and its stream's queue has room, and
    /// queue its whole lines; at the end of the pipe (the rank, and what it started, closed it)
    /// what is left, as it is (but a labelled line gets its newline). The queue is written out
    /// as far as the stream takes it without blocking. Whether anything was read.
    pub fn pump(&mut self) -> bool {
        self.sink.flush(false);
        let full = {
            let q = self.sink.queue();
            if q.closed {
                self.close();
                return false;
            }
            q.bytes.len() >= QUEUE_MAX
        };
        let Some(pipe) = self.pipe.as_mut().filter(|_| !full) else { return false };
        // SAFETY: a zero-timeout poll of one live pollfd, to read only when it would not block.
        let ready = unsafe {
            let mut p = libc::pollfd { fd: pipe.raw_fd(), events: libc::POLLIN, revents: 0 };
            libc::poll(&mut p, 1, 0) > 0
        };
        if !ready {
            return false;
        }
        // On the stack: a zeroed 64 KiB allocation per read would be most of the copy's work.
        let mut buf = [0u8; 16 * 1024];
        let read = match pipe.read(&mut buf) {
            // Not the end: a signal came first (the handlers restart reads, a default one may
            // not), and the rank's next write must not meet a closed pipe.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => true,
            Ok(0) | Err(_) => {
                self.pipe = None;
                self.read.store(u64::MAX, Ordering::Relaxed);
                let mut rest = std::mem::take(&mut self.held);
                // A labelled last line that the rank left unended is ended, so the next rank's
                // label does not land in it.
                if self.label.is_some() && (!rest.is_empty() || !self.at_line_start) {
                    rest.push(b'\n');
                }
                self.queue(&rest);
                false
            }
            Ok(n) => {
                self.held.extend_from_slice(&buf[..n]);
                let whole = match self.held.iter().rposition(|&b| b == b'\n') {
                    Some(end) => end + 1,
                    None if self.held.len() >= MAX_HELD => self.held.len(),
                    None => 0,
                };
                let lines: Vec<u8> = self.held.drain(..whole).collect();
                // Before the queue, which may find its stream closed and close this relay.
                self.read.fetch_add(n as u64, Ordering::Relaxed);
                self.queue(&lines);
                true
            }
        };
        self.sink.queue().release(false);
        self.sink.flush(false);
        read
    }

    /// What the pipe holds now, without waiting for more; bounded, for a process that writes on
    /// and on (one the ranks left running, before it is ended). With `wait`, the stream's queue
    /// is written out whole, waiting as a plain write does, so all of it is read; without, what
    /// a full queue leaves in the pipe stays there.
    pub fn drain(&mut self, wait: bool) {
        for _ in 0..64 {
            if wait {
                self.sink.flush(true);
            }
            if !self.pump() {
                break;
            }
        }
        if wait {
            self.sink.flush(true);
        }
    }

    /// The rank learns that its stream is closed at its next write (SIGPIPE or EPIPE), as it
    /// would have writing to it itself.
    fn close(&mut self) {
        self.pipe = None;
        self.held = Vec::new();
        self.read.store(u64::MAX, Ordering::Relaxed);
    }

    /// Queue `bytes` (whole lines, but for a piece of an overlong line or the end of the stream)
    /// for the sink, each line labelled.
    fn queue(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut q = self.sink.queue();
        if q.closed {
            drop(q);
            self.close();
            return;
        }
        match &self.label {
            None => q.bytes.extend_from_slice(bytes),
            Some(label) => {
                for piece in bytes.split_inclusive(|&b| b == b'\n') {
                    if self.at_line_start {
                        q.bytes.extend_from_slice(label.as_bytes());
                    }
                    q.bytes.extend_from_slice(piece);
                    self.at_line_start = piece.ends_with(b"\n");
                }
            }
        }
        self.at_line_start = bytes.ends_with(b"\n");
    }
}

/// The label of `rank` in a job of `size` ranks, as `--label` writes it: `"R: "`, R right-aligned
/// to the width of the largest rank.
pub fn label(rank: usize, size: usize) -> String {
    let width = size.saturating_sub(1).to_string().len();
    format!("{rank:>width$}: ")
}
