//! A PROGRAM argument (`aar doctor PROGRAM`, `aar run PROGRAM`), found as a shell finds it: a name
//! with a `/` as it is, any other name in the folders of PATH.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Why a PROGRAM argument names no program. The message says what is wrong, [`ProgramError::fix`]
/// how to put it right; each command says in between what it did instead.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("PROGRAM is empty")]
    Empty,
    #[error("PROGRAM \"{0}\" does not exist")]
    Missing(String),
    #[error("PROGRAM \"{0}\" is a symbolic link to {1}, which does not exist")]
    BrokenLink(String, String),
    #[error("PROGRAM \"{0}\" is not a file this user may execute")]
    NotExecutable(String),
    #[error("PROGRAM \"{0}\" was not found: it has no '/' and no folder of PATH holds an executable of that name")]
    NotInPath(String),
}

impl ProgramError {
    /// How to put it right, as a sentence.
    pub fn fix(&self) -> String {
        match self {
            ProgramError::Empty => "Give the program, e.g. ./app.".into(),
            ProgramError::Missing(_) => "Give the path of the program (build it first).".into(),
            ProgramError::BrokenLink(..) => {
                "Give the path of the program itself, or point the link at it (ln -sfn PROGRAM LINK).".into()
            }
            ProgramError::NotExecutable(_) => {
                "Give a program (chmod +x it if it is one; a file system mounted noexec runs none).".into()
            }
            ProgramError::NotInPath(name) => format!("Give its path (e.g. ./{name}) or add its folder to PATH."),
        }
    }
}

/// The file `arg` names: with a `/`, any file that exists (the caller decides what it may be);
/// without, the first executable file of that name in PATH (an empty entry is the current folder).
pub fn find(arg: &OsStr) -> Result<PathBuf, ProgramError> {
    let shown = arg.to_string_lossy();
    if arg.is_empty() {
        return Err(ProgramError::Empty);
    }
    if shown.contains('/') {
        let p = PathBuf::from(arg);
        return match std::fs::read_link(&p) {
            _ if p.exists() => Ok(p),
            // A link to nothing (to a build folder since cleaned, a relative target from elsewhere).
            Ok(target) => Err(ProgramError::BrokenLink(shown.into_owned(), target.display().to_string())),
            _ => Err(ProgramError::Missing(shown.into_owned())),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir }.join(arg))
        .find(|c| is_executable_file(c))
        .ok_or_else(|| ProgramError::NotInPath(shown.into_owned()))
}

/// [`find`], and the file must be one the kernel can execute.
pub fn find_executable(arg: &OsStr) -> Result<PathBuf, ProgramError> {
    let p = find(arg)?;
    if is_executable_file(&p) {
        Ok(p)
    } else {
        Err(ProgramError::NotExecutable(arg.to_string_lossy().into_owned()))
    }
}

/// A regular file this user may execute: access(2) with X_OK checks its mode for this user's
/// owner and groups, and a file system mounted noexec, as exec does (an execute bit for another
/// user only is no program here: a shell looking through PATH passes it by too).
pub fn is_executable_file(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else { return false };
    // SAFETY: `c` is a NUL-terminated path; access(2) only reads it.
    std::fs::metadata(p).is_ok_and(|m| m.is_file()) && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}
