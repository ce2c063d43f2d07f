//! Messages on stderr and diagnostics.
//!
//! User-facing messages carry the prefix `aar:` and say what happened, what the library did and
//! how to change it. Warnings come from rank 0 only (a thousand ranks would print a thousand
//! copies of the same configuration problem); errors come from every rank. Every message is also
//! kept, bounded, for the per-rank record. Debug diagnostics go through `tracing`, silent unless
//! `AAR_LOG` names a level.

use crate::sys;
use crate::trylock::TryLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use tracing::level_filters::LevelFilter;

const MAX_KEPT: usize = 64;
pub(crate) static KEPT: TryLock<Vec<String>> = TryLock::new(Vec::new());
static RANK: AtomicI64 = AtomicI64::new(-1);

/// Variables launchers set to the rank of the process, in the order they are trusted.
const RANK_VARIABLES: [&str; 5] = ["PMI_RANK", "SLURM_PROCID", "ALPS_APP_PE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"];

/// The rank from the launcher's environment, if any.
pub fn detect_rank() -> Option<u32> {
    let rank = RANK_VARIABLES.iter().find_map(|v| std::env::var(v).ok().and_then(|s| s.trim().parse::<u32>().ok()));
    RANK.store(rank.map_or(-1, i64::from), Ordering::Relaxed);
    rank
}

/// Variables launchers set to the number of ranks.
const SIZE_VARIABLES: [&str; 3] = ["PMI_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"];

/// Ranks in the job, when the launcher says.
pub fn nranks() -> Option<u32> {
    SIZE_VARIABLES.iter().find_map(|v| std::env::var(v).ok().and_then(|s| s.trim().parse::<u32>().ok()))
}

pub fn rank() -> Option<u32> {
    u32::try_from(RANK.load(Ordering::Relaxed)).ok()
}

/// Rank 0, or a process launched without a rank (a serial program, a test).
pub fn is_rank0() -> bool {
    rank().is_none_or(|r| r == 0)
}

fn emit(line: &str, print: bool) {
    if let Some(mut kept) = KEPT.try_lock() {
        if kept.len() < MAX_KEPT {
            kept.push(line.to_string());
        }
    }
    if print {
        sys::write_stderr(format!("aar: {line}\n").as_bytes());
    }
}

pub fn warn(line: &str) {
    emit(line, is_rank0());
}

pub fn error(line: &str) {
    emit(line, true);
}

static PANICS: AtomicU64 = AtomicU64::new(0);

/// Where the last panic inside the library happened (set by the panic hook).
static PANIC_AT: TryLock<String> = TryLock::new(String::new());

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

pub fn panics() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// Printed by rank 0 (the exit summary).
pub fn info_rank0(line: &str) {
    if is_rank0() {
        sys::write_stderr(format!("aar: {line}\n").as_bytes());
    }
}

/// Messages so far, for the record.
pub fn kept() -> Vec<String> {
    KEPT.try_lock().map(|k| k.clone()).unwrap_or_default()
}

/// Install a stderr subscriber when `AAR_LOG` asks for one.
pub fn init_logging(level: Option<LevelFilter>) {
    let Some(level) = level else { return };
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false)
        .with_target(false)
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
}
