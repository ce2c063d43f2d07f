//! Why a record folder (`AAR_OUTPUT_DIR`) cannot take records, and the fix: one text for
//! libaar.so's start-up warning and `aar doctor`'s records check, so both say the same for the
//! same cause. Written as [`fmt::Display`] pieces, so that libaar.so builds its warning in one
//! `format!` without other allocations.

use std::fmt;
use std::io::{self, ErrorKind};
use std::path::Path;

/// What keeps the folder `dir` from taking records, `None` when it can take them.
/// `can_create_in` tells whether this process may create files in a folder (libaar.so asks
/// access(2) in every rank; `aar doctor` creates one): the mode bits alone do not tell for
/// another user's folder or a read-only mount.
pub fn check<F: Fn(&Path) -> io::Result<()>>(dir: &str, can_create_in: F) -> Option<Unusable> {
    let cause = match std::fs::metadata(dir) {
        Err(e) => {
            // What mkdir -p would have to make and where it would start, when the path (or a part
            // of it) is not there.
            let missing = match e.kind() {
                ErrorKind::NotFound | ErrorKind::NotADirectory => Some(missing(dir, &can_create_in)),
                _ => None,
            };
            Cause::Lookup(e, missing)
        }
        Ok(m) if !m.is_dir() => Cause::NotAFolder,
        Ok(_) => Cause::Create(can_create_in(Path::new(dir)).err()?),
    };
    Some(Unusable { cause })
}

/// Why a record folder cannot take records ([`check`]).
#[derive(Debug)]
pub struct Unusable {
    cause: Cause,
}

#[derive(Debug)]
enum Cause {
    /// It exists but is not a folder.
    NotAFolder,
    /// Looking it up failed; where it (or a part of its path) is not there, what mkdir -p would
    /// have to make.
    Lookup(io::Error, Option<Missing>),
    /// A folder this process may not create files in.
    Create(io::Error),
}

/// A missing folder: what `mkdir -p` would have to make, and where it would start.
#[derive(Debug)]
struct Missing {
    /// The first symbolic link to nothing on the way (the folder itself, or a folder in its path,
    /// whose target does not exist), with its target as the link holds it: `mkdir -p` of the
    /// folder's own name fails there ("File exists").
    link: Option<(String, String)>,
    /// The folder mkdir -p has to make: the record folder, or where the links to nothing lead.
    make: String,
    /// Its nearest existing ancestor.
    start: Ancestor,
}

/// The nearest existing ancestor of a missing folder, where `mkdir -p` would start.
#[derive(Debug)]
enum Ancestor {
    /// A folder files can be created in: mkdir -p makes the folder.
    Writable,
    /// Not a folder (a file in the middle of the path): mkdir cannot make the folder.
    NotAFolder(String),
    /// A folder files cannot be created in: mkdir would fail the same way.
    Unwritable(String, io::Error),
}

/// What mkdir -p has to make for the missing folder `dir`: a link to nothing in its path is
/// followed to where it leads (a link there too, up to the kernel's 40), as the kernel would.
fn missing(dir: &str, can_create_in: &impl Fn(&Path) -> io::Result<()>) -> Missing {
    let mut make = dir.to_string();
    let mut link = None;
    for _ in 0..40 {
        match nearest_existing(&make, can_create_in) {
            Walk::Start(start) => return Missing { link, make, start },
            Walk::Link { len, target } => {
                let (at, rest) = make.split_at(len);
                // A relative target is taken from the link's folder.
                let led = match Path::new(at).parent().and_then(Path::to_str) {
                    Some(p) if !target.starts_with('/') && !p.is_empty() => {
                        format!("{}/{target}", p.trim_end_matches('/'))
                    }
                    _ => target.clone(),
                };
                let next = format!("{led}{rest}");
                link.get_or_insert_with(|| (at.to_string(), target));
                make = match next.trim_end_matches('/') {
                    "" => next.clone(),
                    trimmed => trimmed.to_string(),
                };
            }
        }
    }
    let start = Ancestor::Unwritable(make.clone(), io::Error::other("too many levels of symbolic links"));
    Missing { link, make, start }
}

/// What the walk up from a missing folder met first.
enum Walk {
    /// An existing ancestor (or none that can be looked up).
    Start(Ancestor),
    /// A symbolic link to nothing, the first `len` bytes of the path, with its target.
    Link { len: usize, target: String },
}

fn nearest_existing(dir: &str, can_create_in: impl Fn(&Path) -> io::Result<()>) -> Walk {
    // "file/" is looked up as the file's folder: begin at the name without its trailing slashes.
    let mut at = match dir.trim_end_matches('/') {
        "" => dir,
        trimmed => trimmed,
    };
    let meta = loop {
        match std::fs::metadata(at) {
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {}
            found => break found,
        }
        // Not there through a link: mkdir cannot make the link's own name, only its target.
        if std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink()) {
            if let Some(target) = std::fs::read_link(at).ok().and_then(|t| t.to_str().map(str::to_string)) {
                return Walk::Link { len: at.len(), target };
            }
        }
        // A prefix of `at` (so text): an empty one is the current folder.
        match Path::new(at).parent().and_then(Path::to_str) {
            Some("") | None => at = ".",
            Some(p) => at = p,
        }
        if at == "." {
            break std::fs::metadata(at);
        }
    };
    Walk::Start(match meta {
        Ok(m) if !m.is_dir() => Ancestor::NotAFolder(at.to_string()),
        Ok(_) => match can_create_in(Path::new(at)) {
            Ok(()) => Ancestor::Writable,
            Err(e) => Ancestor::Unwritable(at.to_string(), e),
        },
        Err(e) => Ancestor::Unwritable(at.to_string(), e),
    })
}

impl Unusable {
    /// What is wrong, to follow the folder's name: "is not a folder", "cannot be used (ERROR)",
    /// "cannot be written in (ERROR)".
    pub fn problem(&self) -> impl fmt::Display + '_ {
        Problem(self)
    }

    /// The fix: a `mkdir -p` line quoted for the shell (which can be pasted) where that makes the
    /// folder (through a symbolic link to nothing, of where the link leads: mkdir cannot make the
    /// link's own name), else the fix of the cause (a read-only file system, permissions, a file
    /// in the path), not of another.
    pub fn fix(&self) -> impl fmt::Display + '_ {
        Fix(self)
    }
}

struct Problem<'a>(&'a Unusable);

impl fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.cause {
            Cause::NotAFolder => f.write_str("is not a folder"),
            Cause::Lookup(_, Some(Missing { link: Some((link, target)), .. })) => write!(
                f,
                "cannot be used ({} is a symbolic link to {}, which does not exist)",
                shell_word(link),
                shell_word(target)
            ),
            Cause::Lookup(e, _) => write!(f, "cannot be used ({e})"),
            Cause::Create(e) => write!(f, "cannot be written in ({e})"),
        }
    }
}

struct Fix<'a>(&'a Unusable);

impl fmt::Display for Fix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Cause::Lookup(_, Some(missing)) = &self.0.cause else {
            return match &self.0.cause {
                Cause::NotAFolder => f.write_str("Point AAR_OUTPUT_DIR at a folder."),
                Cause::Lookup(e, _) | Cause::Create(e) => cause_fix(f, e, None),
            };
        };
        // Through a link to nothing, the folder to make is where the link leads, not its name.
        let make = shell_word(&missing.make);
        let led = if missing.link.is_some() { " (where the link leads)" } else { "" };
        match (&missing.start, &missing.link) {
            (Ancestor::Writable, None) => write!(f, "mkdir -p {make}"),
            (Ancestor::Writable, Some(_)) => {
                write!(f, "mkdir -p {make}{led}, or point AAR_OUTPUT_DIR at another folder.")
            }
            (Ancestor::NotAFolder(a), _) => write!(
                f,
                "{} is not a folder, so mkdir cannot make {make}{led}. Point AAR_OUTPUT_DIR at a folder.",
                shell_word(a)
            ),
            (Ancestor::Unwritable(a, e), _) => {
                write!(f, "{} cannot be written in ({e}), so mkdir cannot make {make}{led}. ", shell_word(a))?;
                cause_fix(f, e, Some(a))
            }
        }
    }
}

/// The fix of `e`, met looking up or creating files in `folder` (the record folder itself when
/// `None`): the fix of that cause, not of another (creating a folder that exists on a read-only
/// file system would not help).
fn cause_fix(f: &mut fmt::Formatter<'_>, e: &io::Error, folder: Option<&str>) -> fmt::Result {
    const READ_ONLY: &str = " is on a read-only file system: point AAR_OUTPUT_DIR at a folder on a writable one.";
    const PERMISSION: &str = " (or reach it): give the user write and search permission (chmod u+wx, or ask its \
                              owner) or point AAR_OUTPUT_DIR at a folder of the user's.";
    match (e.kind(), folder) {
        (ErrorKind::ReadOnlyFilesystem, None) => write!(f, "It{READ_ONLY}"),
        (ErrorKind::ReadOnlyFilesystem, Some(d)) => write!(f, "{}{READ_ONLY}", shell_word(d)),
        (ErrorKind::PermissionDenied, None) => write!(f, "This user may not create files in it{PERMISSION}"),
        (ErrorKind::PermissionDenied, Some(d)) => {
            write!(f, "This user may not create files in {}{PERMISSION}", shell_word(d))
        }
        (ErrorKind::StorageFull | ErrorKind::QuotaExceeded, None) => {
            f.write_str("Free space there (or quota), or point AAR_OUTPUT_DIR at a file system with room.")
        }
        (ErrorKind::StorageFull | ErrorKind::QuotaExceeded, Some(d)) => write!(
            f,
            "Free space on the file system of {} (or quota), or point AAR_OUTPUT_DIR at one with room.",
            shell_word(d)
        ),
        _ => f.write_str("Point AAR_OUTPUT_DIR at a writable folder."),
    }
}

/// `text` as one word for a POSIX shell: as it is when it has nothing the shell would split or
/// expand, else in single quotes (a `'` in it as `'\''`), so that a fix line can be pasted. A
/// control character (a newline) is shown escaped, so that the line stays one line.
pub fn shell_word(text: &str) -> impl fmt::Display + '_ {
    ShellWord(text)
}

struct ShellWord<'a>(&'a str);

impl fmt::Display for ShellWord<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+,=@%:".contains(&b)) {
            return f.write_str(text);
        }
        f.write_str("'")?;
        for c in text.chars() {
            match c {
                '\'' => f.write_str("'\\''")?,
                c if c.is_control() => write!(f, "{}", c.escape_debug())?,
                c => write!(f, "{c}")?,
            }
        }
        f.write_str("'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_the_shell_would_split_or_expand_is_quoted() {
        assert_eq!(shell_word("/lus/me/aar-records").to_string(), "/lus/me/aar-records");
        assert_eq!(shell_word("a b/Jo's").to_string(), "'a b/Jo'\\''s'");
        assert_eq!(shell_word("").to_string(), "''");
        assert_eq!(shell_word("a\nb").to_string(), "'a\\nb'");
    }
}
