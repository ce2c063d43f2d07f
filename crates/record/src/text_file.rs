//! A text file that a setting or the system names, read without blocking or running away: one
//! reader for libaar.so (a node table, `/proc/cray_xt`) and `aar doctor` (`PBS_NODEFILE`).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The text of the file at `path`, read only if it is a regular file of at most `limit` bytes: a
/// FIFO or a device in its place would block the thread (opening a FIFO waits for a writer) or
/// never end (`/dev/zero`). Opened without blocking, checked on the open file, so a swap after a
/// check cannot slip one in.
pub fn read(path: &Path, limit: u64) -> std::io::Result<String> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut text = String::new();
    file.take(limit.saturating_add(1)).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("larger than {} MiB", limit >> 20)));
    }
    Ok(text)
}
