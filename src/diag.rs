//! Messages on stderr and diagnostics.
//!
//! User-facing messages carry the prefix `aar:` and say what happened, what the library did and
//! how to change it. Warnings come from rank 0 only (a thousand ranks would print a thousand
//! copies of the same configuration problem); errors come from every rank. Every message is also
//! kept, bounded, for the per-rank record. Debug diagnostics go through `tracing`, silent unless
//! `AAR_LOG` names a level.

use crate::trylock::TryLock;
use crate::{job, sys};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::Duration;
use tracing::level_filters::LevelFilter;

const MAX_KEPT: usize = 64;
/// Messages so far, for the record.
pub static KEPT: TryLock<Vec<String>> = TryLock::new(Vec::new());

/// The prefix of every line libaar.so writes on stderr.
const PREFIX: &[u8] = b"aar: ";

/// `parts` on stderr behind [`PREFIX`], in one write(2) (a line of another rank or thread never
/// comes between the prefix and the rest).
fn print(parts: &[&[u8]]) {
    let mut out = Vec::with_capacity(PREFIX.len() + parts.iter().map(|p| p.len()).sum::<usize>());
    out.extend_from_slice(PREFIX);
    for part in parts {
        out.extend_from_slice(part);
    }
    if sys::write_stderr(&out) == sys::Written::Stalled {
        // Kept for the record only: stderr takes nothing.
        emit(STDERR_STALLED, false);
    }
}

/// What the record says when stderr stalled.
const STDERR_STALLED: &str = "stderr took nothing for 1 s (a pipe whose reader stopped reading, such as a stuck output \
                              forwarding): this line and every later one of libaar.so were left off stderr, so that the \
                              program does not wait on them; its warnings and errors are kept in this record";

/// Messages said while [`KEPT`] was held by another thread (one inside `fork()`: its handlers
/// hold every lock of the library until the fork is done), moved into it by the next message or
/// [`kept`]. A few slots: a fork holds it for milliseconds, and a message is said once.
static PENDING: [AtomicPtr<String>; 4] = [const { AtomicPtr::new(ptr::null_mut()) }; 4];

/// Move the messages set aside in [`PENDING`] into `kept`.
fn take_pending(kept: &mut Vec<String>) {
    for slot in &PENDING {
        let p = slot.swap(ptr::null_mut(), Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a pointer of `Box::into_raw` put in the slot by `emit`, taken out once by
            // this swap.
            let line = unsafe { Box::from_raw(p) };
            if kept.len() < MAX_KEPT {
                kept.push(*line);
            }
        }
    }
}

fn emit(line: &str, print_it: bool) {
    match KEPT.try_lock() {
        Some(mut kept) => {
            take_pending(&mut kept);
            if kept.len() < MAX_KEPT {
                kept.push(line.to_string());
            }
        }
        None => {
            let p = Box::into_raw(Box::new(line.to_string()));
            let set = PENDING
                .iter()
                .any(|slot| slot.compare_exchange(ptr::null_mut(), p, Ordering::Release, Ordering::Relaxed).is_ok());
            if !set {
                // SAFETY: `p` is from `Box::into_raw` above and was put in no slot.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
    if print_it {
        print(&[line.as_bytes(), b"\n"]);
    }
}

/// A warning: printed by rank 0, kept by every rank.
pub fn warn(line: &str) {
    emit(line, job::is_rank0());
}

/// An error: printed by every rank.
pub fn error(line: &str) {
    emit(line, true);
}

/// `AAR_OUTPUT_DIR` was reported unusable (at start-up, or by a failed write of a record).
static OUTPUT_DIR_REPORTED: AtomicBool = AtomicBool::new(false);

/// A problem with `AAR_OUTPUT_DIR`: the first is warned about, the others would only repeat it.
pub fn warn_output_dir(line: &str) {
    if !OUTPUT_DIR_REPORTED.swap(true, Ordering::Relaxed) {
        warn(line);
    }
}

/// A record of this process could not be written in `AAR_OUTPUT_DIR` though the folder was usable
/// at start-up (a file system or quota that filled, a name already taken): said by every rank, once,
/// for only this rank knows its record is lost (its messages were to be kept in it, and `aar
/// report` takes a rank without a summary record for one that was stopped). After a problem with
/// the folder itself at start-up (said by rank 0: every rank has it), nothing more is said.
pub fn error_output_write(line: &str) {
    if !OUTPUT_DIR_REPORTED.swap(true, Ordering::Relaxed) {
        error(line);
    }
}

/// How to fix a failed create or write `e` of a file of the library's in the place `setting` names.
pub fn write_fix(e: &std::io::Error, setting: &str) -> String {
    match limit_fix(e) {
        Some(fix) => fix.to_string(),
        // Names hold the job, rank and pid: without a job id, an earlier run's rank can have had
        // the same pid (a PID namespace per container, or pids come round again).
        // Creating a file in a folder that was there at start-up (else that was said then): the
        // folder, or one above it, was removed or replaced while the program ran.
        None if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => format!(
            "The folder {setting} names was there when libaar.so started and is no longer: something removed \
             or replaced it while the program ran (a clean-up of the job's scratch space, the job script). Keep it \
             until the job ends, or give {setting} a folder nothing removes."
        ),
        None if e.kind() == std::io::ErrorKind::AlreadyExists => format!(
            "A file of that name is already there (an earlier run's, if it had no job id and a rank with the \
             same pid): give each run its own {setting}."
        ),
        None => format!("Point {setting} at a writable file system with room."),
    }
}

/// How to fix `e` when it is a limit of the job's or the node's (which no other place for the
/// file would lift), not a problem of the place.
pub fn limit_fix(e: &std::io::Error) -> Option<&'static str> {
    match e.raw_os_error()? {
        libc::EFBIG => Some("The file reached the job's file size limit: raise it (ulimit -f) in the batch script."),
        libc::EMFILE => Some(
            "The program has as many files open as its limit allows: raise the limit (ulimit -n) in the batch \
             script, or have the program close files it no longer needs.",
        ),
        libc::ENFILE => Some("The node's table of open files is full: the job cannot open more files on this node."),
        _ => None,
    }
}

static PANICS: AtomicU64 = AtomicU64::new(0);

/// Where the last panic inside the library happened (set by the panic hook).
pub static PANIC_AT: TryLock<String> = TryLock::new(String::new());

/// Replace std's panic message (which would not carry the `aar:` prefix) with a note of where it
/// happened. libaar.so has its own copy of std, so this is not the application's hook.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        if let Some(mut at) = PANIC_AT.try_lock() {
            *at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        }
    }));
}

/// A panic was caught at the C boundary: reported once per process (every rank), counted always.
pub fn internal_error(what: &str) {
    if PANICS.fetch_add(1, Ordering::Relaxed) == 0 {
        let at = PANIC_AT.try_lock().map(|a| a.clone()).unwrap_or_default();
        error(&format!(
            "internal error (a panic at {at}) in libaar.so; {what}, and the application continues. Please report it."
        ));
    }
}

/// Panics caught so far.
pub fn panics() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// Printed by rank 0 (the exit summary).
pub fn info_rank0(line: &str) {
    if job::is_rank0() {
        print(&[line.as_bytes(), b"\n"]);
    }
}

/// What the record's messages say when another thread held them through the wait at exit.
const KEPT_HELD: &str = "the messages of this process are not in its record: another thread (one inside fork()) \
                             held them at exit for over 100 ms. Its errors and rank 0's warnings were printed on \
                             stderr as they came; run it again to keep the other ranks' warnings";

/// Messages so far, for the record: waiting a little for a thread that holds them (one inside
/// `fork()`), as the other exit paths do; when it does not let go, a record that says so rather
/// than one that reads as a rank with nothing to say.
pub fn kept() -> Vec<String> {
    let Some(mut kept) = KEPT.try_lock_for(Duration::from_millis(100)) else { return vec![KEPT_HELD.to_string()] };
    take_pending(&mut kept);
    kept.clone()
}

/// Stderr through [`sys::write_stderr`] behind the prefix: each event (`tracing` writes one whole
/// event per call) in one write(2), with no lock and no SIGPIPE.
struct Stderr;

impl std::io::Write for Stderr {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        print(&[bytes]);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Install a stderr subscriber when `AAR_LOG` asks for one.
pub fn init_logging(level: Option<LevelFilter>) {
    let Some(level) = level else { return };
    let subscriber = tracing_subscriber::fmt()
        .with_writer(|| Stderr)
        .with_max_level(level)
        .with_ansi(false)
        .with_target(false)
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
}
