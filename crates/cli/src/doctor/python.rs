//! Python programs: Python runs MPI through mpi4py, whose `MPI` extension module links the MPI
//! library (and, through a Cray MPICH, libugni). For a Python script, or the interpreter itself,
//! that module is what the doctor checks in the program's place.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The interpreter is given this long to say where mpi4py's module is.
const ASK_FOR: Duration = Duration::from_secs(30);

/// The `#!` options that decide where Python looks for modules; the others are left out (`-m`
/// and `-c` would run code of their own).
const PATH_OPTIONS: [&str; 5] = ["-I", "-E", "-s", "-S", "-P"];

/// A Python interpreter as a script's `#!` line runs it.
pub struct Python {
    pub path: PathBuf,
    /// The options of the `#!` line that decide what the script can import ([`PATH_OPTIONS`]).
    pub options: Vec<String>,
}

impl Python {
    /// The interpreter of a `#!` line, if it is a Python (`#!/usr/bin/python3 -u`, or
    /// `#!/usr/bin/env python3`, found in PATH as env would).
    pub fn of_script(line: &str) -> Option<Python> {
        let mut words = line.strip_prefix("#!")?.split_whitespace();
        let first = words.next()?;
        let (program, options): (PathBuf, Vec<String>) = if Path::new(first).file_name()? == "env" {
            let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
            (crate::program::find_executable(name.as_ref()).ok()?, Vec::new())
        } else {
            (PathBuf::from(first), words.filter(|w| PATH_OPTIONS.contains(w)).map(str::to_string).collect())
        };
        Python::named(&program).then_some(Python { path: program, options })
    }

    /// The interpreter itself given as the program (`aar doctor python3`).
    pub fn of_program(path: &Path) -> Option<Python> {
        Python::named(path).then(|| Python { path: path.to_path_buf(), options: Vec::new() })
    }

    fn named(path: &Path) -> bool {
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python"))
    }

    /// Ask the interpreter (run as the script would run it) for its own executable (`python3` in
    /// PATH is often a launcher script: pyenv, conda, a module's wrapper) and where mpi4py's
    /// `MPI` module is, without importing it (importing it initialises MPI).
    pub fn ask(&self) -> Result<Asked, String> {
        // Each answer on a line of its own after a marker: a site's `sitecustomize` may print
        // (a banner, a module system's notice) before the question runs.
        let ask = format!(
            "import sys, importlib.util as u\nprint('{EXECUTABLE}' + sys.executable)\ntry:\n    \
             s = u.find_spec('mpi4py.MPI')\nexcept Exception:\n    s = None\nprint('{MODULE}' + (s.origin if s and s.origin else ''))"
        );
        let mut child = Command::new(&self.path)
            .args(&self.options)
            .args(["-c", &ask])
            .env_remove("LD_PRELOAD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{} could not be run ({e})", self.path.display()))?;
        // Read while it runs: one that prints more than a pipe holds would otherwise wait for
        // ever on its write, and be taken for one that never answered.
        let reader =
            child.stdout.take().map(|o| std::thread::spawn(move || std::io::read_to_string(o).unwrap_or_default()));
        let deadline = Instant::now() + ASK_FOR;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{} did not answer within {} s", self.path.display(), ASK_FOR.as_secs()));
                }
            }
        };
        // (A child it started that keeps the pipe open keeps the reader waiting: its output is
        // then not read.)
        let out = reader.filter(|r| wait_until(r, deadline)).and_then(|r| r.join().ok()).unwrap_or_default();
        let answer = |marker: &str| {
            out.lines().find_map(|l| l.strip_prefix(marker)).map(str::trim).filter(|l| !l.is_empty()).map(PathBuf::from)
        };
        match (status.success(), answer(EXECUTABLE)) {
            (true, Some(executable)) => Ok(Asked { executable, mpi_module: answer(MODULE) }),
            _ => Err(format!("{} did not run as Python ({status})", self.path.display())),
        }
    }
}

/// The markers of the interpreter's two answers.
const EXECUTABLE: &str = "aar-doctor-executable:";
const MODULE: &str = "aar-doctor-mpi4py-module:";

/// Whether thread `t` ended by `deadline` (polled).
fn wait_until<T>(t: &std::thread::JoinHandle<T>, deadline: Instant) -> bool {
    while !t.is_finished() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// What a Python interpreter said of itself.
pub struct Asked {
    /// `sys.executable`: the ELF program the loader runs.
    pub executable: PathBuf,
    /// The file of mpi4py's `MPI` module, if this Python has mpi4py.
    pub mpi_module: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_is_found_in_a_hash_bang_line_with_its_options() {
        let p = Python::of_script("#!/usr/bin/python3 -S -u -m app").unwrap();
        assert_eq!((p.path, p.options), (PathBuf::from("/usr/bin/python3"), vec!["-S".to_string()]));
        assert!(Python::of_script("#!/bin/bash").is_none());
        assert!(Python::of_script("#!/usr/bin/env perl").is_none());
        assert!(Python::of_program(Path::new("/opt/python3.11")).is_some());
        assert!(Python::of_program(Path::new("/usr/bin/perl")).is_none());
    }
}
