//! The decision trace (`AAR_TRACE`): one JSON line per intercepted message, for debugging a
//! policy or plotting its choices. Opt-in and off the fast path: with a trace, every post takes
//! the slow path that writes its line, until the trace reaches `AAR_TRACE_MAX` or a write fails.
//!
//! A line waits at most [`LINE_WAIT`] for another thread that holds the trace (one inside
//! fork(), whose fork handler holds it until the fork is done, or one writing the buffer to a
//! slow file system), and the exit handler at most [`EXIT_WAIT`]. A line that waits longer is
//! lost, and so are the lines the buffer holds when the exit handler gives up: the summary record
//! counts them ([`TraceFile::counted`]) and one message per process says so ([`TraceFile::lost`]).
//!
//! A post made on a thread that is already inside the library (from a signal handler that
//! interrupted it, or from a hook of the program's on a call the library makes, such as a write(2)
//! wrapper that posts) has no line: the trace may be mid-write on that very thread, and waiting for
//! it would wait for itself. The summary record counts those too, and the exit handler says them.

use crate::trylock::{ForkHeld, Inside, TryLock};
use crate::{control, diag, job, sys};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// A line waits this long at most for another thread that holds the trace.
const LINE_WAIT: Duration = Duration::from_secs(1);
/// The exit handler waits this long at most to write the lines still in the buffer.
const EXIT_WAIT: Duration = Duration::from_millis(200);

/// One line. Field names are part of the documented format.
#[derive(Serialize)]
pub struct Line {
    pub t_ns: u64,
    /// `uGNI` or `DMAPP`.
    pub api: &'static str,
    pub call: &'static str,
    /// uGNI's post type, `SMSG`, or DMAPP's `PUT`, `GET` or `AMO`.
    pub post_type: &'static str,
    /// Messages of the call: one, or one per target PE of DMAPP's `_ixpe` calls.
    pub messages: u64,
    /// Bytes of all of them; flits and packets likewise.
    pub bytes: u64,
    pub flits: u64,
    pub packets: u64,
    pub latency_us: Option<f64>,
    pub stall_ratio: Option<f64>,
    pub requested: &'static str,
    pub chosen: &'static str,
    pub reason: &'static str,
    /// Where the destination sits for the routing policy: `same-router`, `same-group`,
    /// `other-group`, or `unknown` (no node table, a policy without classes, SMSG, and DMAPP calls
    /// whose PEs cannot be placed or that go to several PEs).
    pub destination: &'static str,
    /// DMAPP lines: the enumerator table `requested` and `chosen` were named with, and where it
    /// came from (absent on uGNI lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dmapp_table: Option<&'static str>,
}

/// Expand `%r` (rank, or `norank`), `%p` (pid) and `%%` in a path pattern; any other `%x`, and a
/// `%` that ends the pattern, is kept as written, and the first such is returned too (named, to be
/// said).
pub fn expand(pattern: &str, rank: Option<u32>, pid: u32) -> (String, Option<String>) {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut unknown = None;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push_str(&rank.map_or_else(|| "norank".to_string(), |r| r.to_string())),
            Some('p') => out.push_str(&pid.to_string()),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
                unknown.get_or_insert_with(|| format!("%{other}"));
            }
            None => {
                out.push('%');
                unknown.get_or_insert_with(|| "a lone % at the end".to_string());
            }
        }
    }
    (out, unknown)
}

/// The trace file of this process, if tracing, and its counts, kept outside its lock so that a
/// thread that cannot take it still counts what it loses.
pub struct TraceFile {
    open: TryLock<Slot>,
    /// A trace was opened in this process (its record has a `trace` section).
    opened: AtomicBool,
    /// Lines taken: written, or in the buffer.
    lines: AtomicU64,
    /// Of those, the lines in the buffer (what the exit handler loses if it cannot take it).
    buffered: AtomicU64,
    /// Lines lost waiting for another thread: their own line, or the buffer's at exit.
    lost: AtomicU64,
    /// Whether a loss was said ([`TraceFile::lost`]).
    lost_said: AtomicBool,
    /// Lines of posts made on a thread already inside the library: counted only (a signal handler
    /// may have made them), said at exit ([`TraceFile::finish`]).
    nested: AtomicU64,
    /// The exit handler has finished the trace: a line after it has no file to go to.
    finished: AtomicBool,
    /// Whether a post after that was said ([`TraceFile::after_exit`]).
    after_exit_said: AtomicBool,
}

/// The summary record's `trace` section.
#[derive(Serialize)]
pub struct Counted {
    /// Lines the trace took: all in its file, but after a failed write (said then).
    pub lines: u64,
    /// Lines lost because another thread held the trace for over 1 s (200 ms at exit).
    pub lines_lost_waiting: u64,
    /// Lines of posts made on a thread already inside the library (a signal handler's, a write
    /// hook's): not written, since that thread may be writing another.
    pub lines_lost_nested: u64,
}

/// Whether the name `pattern` expands to differs from rank to rank and from process to process
/// (`%r`, `%p`; not a `%%r` or `%%p`, which are literal).
fn varies(pattern: &str) -> (bool, bool) {
    let name = |rank, pid| expand(pattern, Some(rank), pid).0;
    let base = name(0, 1);
    (name(1, 1) != base, name(0, 2) != base)
}

/// What the trace's lock holds.
enum Slot {
    /// No trace: none asked for, it stopped, or the exit handler finished it.
    Closed,
    /// A fork child's own trace (its pattern has `%p`), created with its first line: a child that
    /// sends nothing (a helper that does other work, then calls exit()) makes no file.
    Deferred {
        pattern: String,
        max: u64,
    },
    Open(Open),
}

impl Slot {
    fn take(&mut self) -> Option<Open> {
        match std::mem::replace(self, Slot::Closed) {
            Slot::Open(t) => Some(t),
            _ => None,
        }
    }
}

/// Lines buffered before they go out, in one write of whole lines.
const BUFFER: usize = 1 << 16;

/// The characters of the trace's path a message quotes: more than of a variable's value
/// ([`aar_record::quotes::shown`]), for its end, the file name that `%r` and `%p` made, is what
/// tells one rank's trace from another's; a path of a few KiB (or a pattern of 100 KiB, which
/// the environment allows) is not said whole.
const PATH_CHARS: usize = 256;

/// `path` as the messages about the library's files (the trace, the record folder) quote it: on
/// one line, escaped, cut to [`PATH_CHARS`].
pub fn quoted_path(path: &str) -> String {
    aar_record::quotes::quoted(path, PATH_CHARS)
}

/// An open trace, and its path for the warning if writing it fails.
struct Open {
    file: sys::OwnFile,
    /// Whole lines not yet written ([`BUFFER`]).
    buf: Vec<u8>,
    /// The path as messages quote it ([`quoted_path`]).
    path: String,
    /// The line being written, serialised first so that its length is known before it goes out.
    line: Vec<u8>,
    /// Bytes written so far, and the most it may take (`AAR_TRACE_MAX`).
    bytes: u64,
    max: u64,
}

impl Open {
    /// Write the buffered lines; a write that fails leaves the file ending with a whole line.
    fn flush(&mut self) -> std::io::Result<()> {
        let written = self.file.append_lines(&self.buf);
        self.buf.clear();
        written
    }

    /// The next line would take the trace past `AAR_TRACE_MAX` after `lines`: write what it has,
    /// say so, stop. Said by every rank, as a failed write is ([`Open::warn`]): the file ends as a
    /// whole trace would, and only this rank knows it was cut short (a rank that writes no record,
    /// or none with its messages, had it said nowhere).
    fn stop_at_max(mut self, lines: u64) {
        let flushed = self.flush();
        diag::error(&format!(
            "the decision trace {} reached AAR_TRACE_MAX={} after {} line{}; the trace stops here, the application \
             continues. Raise AAR_TRACE_MAX (e.g. AAR_TRACE_MAX=8G), or trace fewer ranks (AAR_TRACE in their \
             environment only).",
            self.path,
            aar_engine::ByteSize(self.max),
            lines,
            if lines == 1 { "" } else { "s" }
        ));
        if let Err(e) = flushed {
            self.warn(&e, "its lines not yet written are lost");
        }
    }

    /// Say that writing it failed with `e` (a full or over-quota file system, the job's file size
    /// limit), and `then`: what is lost. Said by every rank, as a record that cannot be written
    /// is ([`diag::error_output_write`]): only this rank knows its trace is cut short. Once per
    /// process, since the trace ends at its first failed write.
    fn warn(&self, e: &std::io::Error, then: &str) {
        diag::error(&format!(
            "writing the decision trace {} (AAR_TRACE) failed ({e}); {then}. {}",
            self.path,
            diag::write_fix(e, "AAR_TRACE")
        ));
    }
}

/// Create the trace `pattern` names, to take at most `max` bytes; `None` (said) when it cannot be.
fn create(pattern: &str, max: u64) -> Option<Open> {
    // (A `%` code it does not know was said with the other settings.)
    let (path, _) = expand(pattern, job::rank(), sys::pid());
    // One name for every rank: the others find it taken, and their own warnings of it are rank
    // 0's to say, which said it whether it created the file or another rank did so first.
    let one_name = varies(pattern) == (false, false) && job::nranks().is_some_and(|n| n > 1);
    let one_name_said = |found: &str| {
        format!(
            "AAR_TRACE={} names one file for every rank ({}){found}: the first rank to create it traces, and \
             every other rank that sees the same file system finds the name taken and writes no trace. \
             Add %r (the rank) to the name, e.g. AAR_TRACE=\"trace.%r.jsonl\".",
            aar_record::quotes::shown(pattern),
            quoted_path(&path)
        )
    };
    match sys::create_new(&path) {
        Ok(f) => {
            if one_name {
                diag::warn(&one_name_said(""));
            }
            let buf = Vec::with_capacity(BUFFER);
            Some(Open { file: f, buf, path: quoted_path(&path), line: Vec::with_capacity(512), bytes: 0, max })
        }
        // Rank 0 found it there: another rank was first (or an earlier run left it), and
        // "no decision trace is written" would be false.
        Err(e)
            if one_name && e.kind() == std::io::ErrorKind::AlreadyExists && !std::path::Path::new(&path).is_dir() =>
        {
            diag::warn(&one_name_said(&format!(
                " ({e}: another rank created it first and traces into it, or an earlier run left it and no rank traces)"
            )));
            None
        }
        Err(e) => {
            let fix = match diag::limit_fix(&e) {
                Some(fix) => fix.to_string(),
                // A folder is there (creating the file says only that the name is taken, or is a folder).
                None if std::path::Path::new(&path).is_dir() => format!(
                    "It is a folder: name a file in it, e.g. AAR_TRACE=\"{}/trace.%r.%p.jsonl\".",
                    path.trim_end_matches('/').escape_debug()
                ),
                None => "Point it at a writable folder and a name that does not exist yet (add %p for the pid, \
                         %r for the rank)."
                    .to_string(),
            };
            diag::warn(&format!(
                "AAR_TRACE={}: cannot create {} ({e}); no decision trace is written. {fix}",
                aar_record::quotes::shown(pattern),
                quoted_path(&path)
            ));
            None
        }
    }
}

impl TraceFile {
    /// No trace yet.
    pub const fn new() -> Self {
        Self {
            open: TryLock::new(Slot::Closed),
            opened: AtomicBool::new(false),
            lines: AtomicU64::new(0),
            buffered: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            lost_said: AtomicBool::new(false),
            nested: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            after_exit_said: AtomicBool::new(false),
        }
    }

    /// The summary record's `trace` section: `None` without a trace in this process.
    pub fn counted(&self) -> Option<Counted> {
        self.opened.load(Relaxed).then(|| Counted {
            lines: self.lines.load(Relaxed),
            lines_lost_waiting: self.lost.load(Relaxed),
            lines_lost_nested: self.nested.load(Relaxed),
        })
    }

    /// `n` lines were lost waiting for another thread: counted, and said once per process, by
    /// every rank (only this rank knows its trace lacks them), with `what` happened.
    #[cold]
    fn lost(&self, n: u64, what: impl FnOnce() -> String) {
        self.lost.fetch_add(n, Relaxed);
        if self.lost_said.swap(true, Relaxed) {
            return;
        }
        diag::error(&format!(
            "{}: another thread held the trace (one inside fork(), whose fork handler holds it until the fork \
             is done, or one writing the trace to a slow file system). The posts went out as always, without \
             those lines; the summary record's trace.lines_lost_waiting counts every line lost so, and later \
             losses are not said again. To keep every line, point AAR_TRACE at a node-local file system (e.g. \
             /tmp) and trace from fewer threads, or fork while no thread posts.",
            what()
        ));
    }

    /// A post made after the exit handler finished the trace (by another thread while the process
    /// exits, an `atexit` handler registered before the library's first call, or a destructor):
    /// its line has no file to go to, and the record is written, so this message is all there is.
    #[cold]
    fn after_exit(&self) {
        if self.after_exit_said.swap(true, Relaxed) {
            return;
        }
        diag::error(
            "a post made after libaar.so's exit handler had written this process's decision trace (AAR_TRACE) \
             and records (by another thread while the process exits, an atexit handler registered before \
             libaar.so's first call, or a destructor) has no line in the trace, nor do later ones; the posts went \
             out as always. Finish posting before exit (before MPI_Finalize in an MPI program) to trace every post.",
        );
    }

    /// Open the trace, to take at most `max` bytes; `true` if tracing is on.
    ///
    /// Its lock is taken before its file is made, so that a file is never left behind empty with
    /// tracing off. No other thread can hold the lock yet (the fork and exit handlers that take it
    /// are registered after the start-up, and posts are traced only once it is done); one that did
    /// is said, and no file is made.
    pub fn open(&self, pattern: Option<&str>, max: u64) -> bool {
        let Some(pattern) = pattern else { return false };
        let Some(mut slot) = self.open.try_lock_for(LINE_WAIT) else {
            diag::warn(&format!(
                "AAR_TRACE={}: another thread held the decision trace for over {} s while libaar.so started; no \
                 decision trace is written (no file was made), the application continues. Run again; if it recurs, \
                 please report it.",
                aar_record::quotes::shown(pattern),
                LINE_WAIT.as_secs()
            ));
            return false;
        };
        let Some(t) = create(pattern, max) else { return false };
        *slot = Slot::Open(t);
        self.opened.store(true, Relaxed);
        true
    }

    /// Append one line.
    pub fn write(&self, line: &Line) {
        // A post made on a thread already inside the library (a signal handler that interrupted
        // this very write, a write hook that posts) loses its line rather than wait for a lock its
        // own thread may hold; counted with one atomic add, which a signal handler may make, and
        // said at exit.
        let Some(_inside) = Inside::enter() else {
            self.nested.fetch_add(1, Relaxed);
            return;
        };
        if self.finished.load(Relaxed) {
            self.after_exit();
            return;
        }
        // Another thread mid-line: wait for it (the trace is a debugging mode, which serialises
        // posts), but never forever: a line that waits longer is lost, counted and said. A write
        // error ends the trace with one warning.
        let Some(mut guard) = self.open.try_lock_for(LINE_WAIT) else {
            self.lost(1, || {
                format!(
                    "a line of the decision trace (AAR_TRACE) was dropped after waiting over {} s",
                    LINE_WAIT.as_secs()
                )
            });
            return;
        };
        if let Slot::Deferred { pattern, max } = &*guard {
            let t = create(pattern, *max);
            self.opened.store(t.is_some(), Relaxed);
            *guard = t.map_or(Slot::Closed, Slot::Open);
        }
        let Slot::Open(t) = &mut *guard else {
            drop(guard);
            if self.finished.load(Relaxed) {
                // It waited while the exit handler wrote the trace.
                self.after_exit();
            } else {
                // No file to write (a fork child's that could not be created): back to the fast path.
                control::update(|w| control::with(w, None, None, Some(false)));
            }
            return;
        };
        t.line.clear();
        // Serialised first: a line that would take the trace past its cap is not begun.
        let written = serde_json::to_writer(&mut t.line, line).map_err(std::io::Error::from).and_then(|()| {
            t.line.push(b'\n');
            let len = t.line.len() as u64;
            if t.bytes.saturating_add(len) > t.max {
                return Ok(false);
            }
            if t.buf.len() + t.line.len() > BUFFER {
                self.buffered.store(0, Relaxed);
                t.flush()?;
            }
            t.buf.extend_from_slice(&t.line);
            t.bytes += len;
            self.lines.fetch_add(1, Relaxed);
            self.buffered.fetch_add(1, Relaxed);
            Ok(true)
        });
        if written.as_ref().is_ok_and(|&fits| fits) {
            return;
        }
        if let Some(t) = guard.take() {
            // Its buffer is written (at the cap) or lost (said): none of it is left for the exit
            // handler to count lost, should another thread (a fork) keep it from the trace.
            self.buffered.store(0, Relaxed);
            drop(guard);
            // Posts go back to the fast path: nothing would take their lines.
            control::update(|w| control::with(w, None, None, Some(false)));
            match written {
                // Its buffer goes with it: not written again at exit.
                Err(e) => t.warn(&e, "the trace stops here, the application continues"),
                Ok(_) => t.stop_at_max(self.lines.load(Relaxed)),
            }
        }
    }

    /// Flush the buffer (before a fork, so the child does not write the parent's lines again). A
    /// write that fails ends the trace, said as at any other write of it.
    pub fn flush(&self) {
        let Some(mut guard) = self.open.try_lock_for(Duration::from_millis(100)) else { return };
        let Slot::Open(t) = &mut *guard else { return };
        self.buffered.store(0, Relaxed);
        let Err(e) = t.flush() else { return };
        if let Some(t) = guard.take() {
            drop(guard);
            control::update(|w| control::with(w, None, None, Some(false)));
            t.warn(&e, "the trace stops here, the application continues");
        }
    }

    /// In a fork child: a pattern with `%p` gives the child its own trace, created with its
    /// first line (a child that sends nothing makes no file); without it the child stops tracing,
    /// rather than interleave its lines with the parent's in one file (or try to create the
    /// parent's, as `%%p`, a `%` and a `p`, would).
    pub fn reopen_in_child(&self, pattern: Option<&str>, max: u64) -> bool {
        let Some(mut guard) = self.open.try_lock_for(Duration::from_millis(100)) else { return false };
        // Discard, never flush, what the buffer may hold: those lines are the parent's, and so
        // are the counts (the child's record counts its own trace, if it has one).
        let own = pattern.filter(|p| varies(p).1);
        *guard = own.map_or(Slot::Closed, |p| Slot::Deferred { pattern: p.to_string(), max });
        self.opened.store(false, Relaxed);
        for count in [&self.lines, &self.buffered, &self.lost, &self.nested] {
            count.store(0, Relaxed);
        }
        for said in [&self.lost_said, &self.finished, &self.after_exit_said] {
            said.store(false, Relaxed);
        }
        own.is_some()
    }

    /// Flush at exit. Another thread that holds the trace for over [`EXIT_WAIT`] keeps the
    /// buffer: its lines are lost (up to that many: the thread may still write them before the
    /// process ends), counted and said. So are the lines of posts made on a thread already inside
    /// the library, this flush's included.
    pub fn finish(&self) {
        // Inside, as `write` is: a post made from inside the last write is one of those.
        let inside = Inside::enter();
        self.write_buffer();
        drop(inside);
        let n = self.nested.load(Relaxed);
        if n > 0 {
            diag::error(&format!(
                "{n} post{s} made on a thread that was inside libaar.so at the time (from a signal handler that \
                 interrupted it, or from a hook of the program's on a call libaar.so makes, such as a write(2) \
                 wrapper that posts) {have} no line in the decision trace (AAR_TRACE): a line cannot be written while \
                 its thread may be writing another. The posts went out as always; the summary record's \
                 trace.lines_lost_nested counts them. To trace them, point AAR_TRACE at a file system the program \
                 does not intercept, or post from the main program rather than a signal handler.",
                s = if n == 1 { "" } else { "s" },
                have = if n == 1 { "has" } else { "have" },
            ));
        }
    }

    /// [`TraceFile::finish`]'s flush.
    fn write_buffer(&self) {
        // From here a line has no file to go to (only posts made while tracing come to `write`:
        // a trace that stopped at its cap or a failed write sent them back to the fast path).
        self.finished.store(true, Relaxed);
        let Some(mut guard) = self.open.try_lock_for(EXIT_WAIT) else {
            let n = self.buffered.swap(0, Relaxed);
            if n > 0 {
                self.lines.fetch_sub(n, Relaxed);
                self.lost(n, || {
                    format!(
                        "at exit, up to {n} line{} of the decision trace (AAR_TRACE), the last ones, were not \
                         written from its buffer: the exit handler waited over {} ms",
                        if n == 1 { "" } else { "s" },
                        EXIT_WAIT.as_millis()
                    )
                });
            }
            return;
        };
        if let Some(mut t) = guard.take() {
            self.buffered.store(0, Relaxed);
            if let Err(e) = t.flush() {
                t.warn(&e, "its lines not yet written are lost");
            }
        }
    }
}

impl ForkHeld for TraceFile {
    fn hold_for(&self, timeout: Duration) -> bool {
        self.open.hold_for(timeout)
    }
    unsafe fn release(&self) {
        // SAFETY: forwarded contract.
        unsafe { self.open.release() }
    }
}

#[cfg(test)]
mod tests {
    use super::{expand, varies};

    #[test]
    fn patterns() {
        assert_eq!(expand("/x/t.%r.%p.jsonl", Some(3), 42), ("/x/t.3.42.jsonl".into(), None));
        assert_eq!(varies("t.jsonl"), (false, false));
        assert_eq!(varies("t.%r.jsonl"), (true, false));
        assert_eq!(varies("t.%p.jsonl"), (false, true));
        assert_eq!(varies("t.%%r.%%p"), (false, false), "literal");
        assert_eq!(expand("t%%r%%", None, 1), ("t%r%".into(), None));
        assert_eq!(expand("t.%", None, 1), ("t.%".into(), Some("a lone % at the end".into())));
        assert_eq!(expand("t%%r%", None, 1), ("t%r%".into(), Some("a lone % at the end".into())));
        assert_eq!(expand("%q.%", None, 1), ("%q.%".into(), Some("%q".into())), "the first is said");
        assert_eq!(expand("%r-%q.%z", None, 1), ("norank-%q.%z".into(), Some("%q".into())));
    }
}
