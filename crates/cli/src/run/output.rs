//! The ranks' stdout and stderr: each rank writes to a pipe of its own, which the launcher reads
//! in its poll loop and copies to its own stdout or stderr a whole line at a time, as srun does,
//! so the lines of two ranks never mix mid-line (ranks that shared the launcher's stdout would
//! split lines wherever their stdio buffers filled). With `--label` each line starts with the
//! rank that wrote it.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::{ChildStderr, ChildStdout};

/// A line longer than this is written out in pieces (each piece still whole, and only the first
/// labelled), so a rank that writes without newlines cannot make the launcher hold its output.
const MAX_HELD: usize = 64 * 1024;

/// Where a rank's stream goes: the launcher's own stdout or stderr.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    Stdout,
    Stderr,
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
    /// The last piece written ended a line (the next piece gets the label).
    at_line_start: bool,
}

impl Relay {
    pub fn new(pipe: Option<Pipe>, sink: Sink, label: Option<String>) -> Self {
        Relay { pipe, sink, label, held: Vec::new(), at_line_start: true }
    }

    /// The pipe to poll, until its end of file.
    pub fn fd(&self) -> Option<std::os::fd::RawFd> {
        self.pipe.as_ref().map(Pipe::raw_fd)
    }

    /// Read what the rank wrote, when that does not block, and write out its whole lines; at the
    /// end of the pipe (the rank, and what it started, closed it) what is left, as it is (but a
    /// labelled line gets its newline). Whether anything was read.
    pub fn pump(&mut self) -> bool {
        let Some(pipe) = self.pipe.as_mut() else { return false };
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
        match pipe.read(&mut buf) {
            // Not the end: a signal came first (the handlers restart reads, a default one may
            // not), and the rank's next write must not meet a closed pipe.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => true,
            Ok(0) | Err(_) => {
                self.pipe = None;
                let mut rest = std::mem::take(&mut self.held);
                // A labelled last line that the rank left unended is ended, so the next rank's
                // label does not land in it.
                if self.label.is_some() && (!rest.is_empty() || !self.at_line_start) {
                    rest.push(b'\n');
                }
                self.write(&rest);
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
                self.write(&lines);
                true
            }
        }
    }

    /// What the pipe holds now, without waiting for more; bounded, for a process that writes on
    /// and on (one the ranks left running, before it is ended).
    pub fn drain(&mut self) {
        for _ in 0..64 {
            if !self.pump() {
                return;
            }
        }
    }

    /// `bytes` (whole lines, but for a piece of an overlong line or the end of the stream) to the
    /// sink in one write, each line labelled. When the sink is closed (`aar run ... | head`) the
    /// pipe is closed too, so the rank learns it at its next write (SIGPIPE or EPIPE) as it
    /// would have writing to the sink itself.
    fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let out = match &self.label {
            None => bytes.to_vec(),
            Some(label) => {
                let mut out = Vec::with_capacity(bytes.len() + label.len());
                for piece in bytes.split_inclusive(|&b| b == b'\n') {
                    if self.at_line_start {
                        out.extend_from_slice(label.as_bytes());
                    }
                    out.extend_from_slice(piece);
                    self.at_line_start = piece.ends_with(b"\n");
                }
                out
            }
        };
        self.at_line_start = bytes.ends_with(b"\n");
        let written = match self.sink {
            Sink::Stdout => std::io::stdout().lock().write_all(&out).and_then(|()| std::io::stdout().flush()),
            Sink::Stderr => std::io::stderr().lock().write_all(&out),
        };
        if written.is_err() {
            self.pipe = None;
            self.held.clear();
        }
    }
}

/// The label of `rank` in a job of `size` ranks, as `--label` writes it: `"R: "`, R right-aligned
/// to the width of the largest rank.
pub fn label(rank: usize, size: usize) -> String {
    let width = size.saturating_sub(1).to_string().len();
    format!("{rank:>width$}: ")
}
