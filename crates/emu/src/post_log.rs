//! The post log: `AAR_EMU_LOG=<path>` → JSON Lines, one line per call that puts traffic on the
//! network or changes SMSG routing. Each line is one `write(2)` on an `O_APPEND` file, so lines are
//! complete at any exit (no buffer to flush) and processes sharing the file do not interleave.
//! Without the variable nothing is opened and nothing is formatted.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

use crate::warn;

static LOG: OnceLock<Option<Mutex<File>>> = OnceLock::new();

fn log_file() -> Option<&'static Mutex<File>> {
    LOG.get_or_init(|| {
        let path = std::env::var_os("AAR_EMU_LOG").filter(|p| !p.is_empty())?;
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(f) => Some(Mutex::new(f)),
            Err(e) => {
                warn(&format!("AAR_EMU_LOG={}: cannot open ({e}); posts are not logged", path.to_string_lossy()));
                None
            }
        }
    })
    .as_ref()
}

/// True when a log is open; callers skip building the record otherwise.
pub fn enabled() -> bool {
    log_file().is_some()
}

/// A JSON value for one field of a record.
pub enum Val {
    U(u64),
    Null,
}

impl From<u64> for Val {
    fn from(v: u64) -> Val {
        Val::U(v)
    }
}

impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

/// Writes `{"call":call, fields..., "rc":rc}` as one line.
pub fn record(call: &str, fields: &[(&str, Val)], rc: u32) {
    let Some(file) = log_file() else { return };
    let mut line = String::with_capacity(160);
    let _ = write!(line, "{{\"call\":\"{call}\"");
    for (key, val) in fields {
        let _ = match val {
            Val::U(v) => write!(line, ",\"{key}\":{v}"),
            Val::Null => write!(line, ",\"{key}\":null"),
        };
    }
    let _ = writeln!(line, ",\"rc\":{rc}}}");
    let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
    let _ = f.write_all(line.as_bytes());
}
