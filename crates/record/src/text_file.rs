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
        let most = match limit >> 20 {
            mib if mib > 0 && limit & ((1 << 20) - 1) == 0 => format!("{mib} MiB"),
            _ => format!("{limit} bytes"),
        };
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("larger than {most}")));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_the_limit_is_refused_naming_the_limit() {
        let path = std::env::temp_dir().join(format!("aar-text-file-{}", std::process::id()));
        std::fs::write(&path, vec![b'x'; 2000]).unwrap();
        assert_eq!(read(&path, 2000).unwrap().len(), 2000);
        assert_eq!(read(&path, 1999).unwrap_err().to_string(), "larger than 1999 bytes");
        assert_eq!(read(&path, 1 << 20).unwrap().len(), 2000);
        std::fs::write(&path, vec![b'x'; (1 << 20) + 1]).unwrap();
        assert_eq!(read(&path, 1 << 20).unwrap_err().to_string(), "larger than 1 MiB");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(read(Path::new("/dev/null"), 10).unwrap_err().to_string(), "not a regular file");
    }
}
