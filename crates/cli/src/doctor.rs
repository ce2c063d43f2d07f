//! `aar doctor [PROGRAM]`: can libaar.so work for this program, in this environment? PROGRAM may
//! be a launch line (`srun -n 4 ./app`): the program it starts is checked ([`launch`]).
//!
//! One line per check, each with a verdict — `ok`, `note` (information), `warning` (libaar.so
//! works, but not fully as configured) or `problem` (libaar.so will not work for this program as
//! things stand) — and, for warnings and problems, what to do about it.
//!
//! - The program (resolved through PATH as a shell would): an ELF executable, dynamically linked
//!   (a static one never sees LD_PRELOAD), and which of libugni, libdmapp and an MPI library it
//!   links, followed through its libraries as the loader would find them here ([`elf`]), or, with
//!   neither, whether it carries uGNI's or DMAPP's sends itself (from a static archive), or a
//!   library it needs is not found here (libugni may come through it). A set-user-ID or
//!   set-group-ID program of another user or group never sees LD_PRELOAD's libaar.so; one this
//!   user may run but not read is preloaded, but not looked into (a warning). For a
//!   Python script, or the interpreter itself, mpi4py's MPI module is checked in its place
//!   ([`python`]).
//! - The preload: libaar.so in LD_PRELOAD (`:` or space separated, as ld.so splits it, and its
//!   `$LIB`, `$PLATFORM` and `$ORIGIN` replaced as ld.so replaces them), the file
//!   there (a relative entry is a warning: the loader takes it from each program's folder), and
//!   that it loads (dlopen).
//! - PAPI, the counter events, the settings and the DMAPP routing table, from libaar.so itself: its
//!   `aar_selfcheck` export runs the library's own settings parser and PAPI opening ([`selfcheck`]). When the program
//!   links a libugni, that libugni is loaded first, as the job's loader would load it (the
//!   emulator's libugni registers its counter events in its constructor).
//! - A program that links libpapi may count on the NIC counters' PAPI component itself: libaar.so
//!   then gives way (a note).
//! - `MPICH_GNI_ROUTING_MODE`: a non-adaptive request leaves Cray MPICH's posts to MPICH.
//! - A file size limit (`ulimit -f`): the library's records and trace stop at it.
//! - The decision trace (`AAR_TRACE`): created where the job would create it (and removed), or,
//!   for a pattern with `%r` or `%p`, its folder.
//! - The record folder (`AAR_OUTPUT_DIR`): one this user may create files in; a missing one gets
//!   the `mkdir -p` that makes it (through a symbolic link to nothing, its target), or the fix of
//!   what would make that mkdir fail. The problem and
//!   its fix are `aar_record::folder`'s, as in libaar.so's start-up warning.
//! - A relative record folder or trace: a warning, since each process takes it from the folder it
//!   starts in; the fix is the absolute one from here.
//! - How many files the job would make in that folder (its number of ranks, from `--ranks` or as
//!   libaar.so reads it, `AAR_OUTPUT_RANKS`, `AAR_AB`), and how many it holds: a note from
//!   [`MANY_RECORD_FILES`] on, with the fix (a folder per job, a sample of ranks). Run as a
//!   one-task step of a job of several nodes (`srun -n 1`, `aprun -n 1`), without `--ranks`, a
//!   note says the count is that step's 1 rank's; in a job of several nodes with no number of
//!   ranks at all (a batch script submitted without `--ntasks`, a PBS job), a note says the files
//!   were not counted (`skipped` in the JSON document). The job's nodes are Slurm's
//!   `SLURM_JOB_NUM_NODES` (or `SLURM_NNODES`) or the distinct names in PBS's `PBS_NODEFILE`.
//! - Other libraries in LD_PRELOAD that define the MPI functions libaar.so wraps (profiling
//!   tools): one before libaar.so hides the calls from it. Others that define uGNI's or DMAPP's
//!   sends (a second router, a tracer) route or watch every post with it.
//! - Under `AAR_AB` with the markers boundary, whether the program (or a library of its own)
//!   imports `aar_iteration_begin`, or imports `dlsym` to look it up: otherwise it marks no
//!   iteration (a warning: a plug-in it loads may mark).
//! - Wrapped MPI functions the program defines itself (a linked-in profiling tool or MPI): its
//!   calls of them never reach libaar.so.
//! - The Fortran bindings of the program's MPI: whether they import the C functions libaar.so
//!   wraps (the self-check lists them) or their `PMPI_` forms, which libaar.so does not see; and
//!   where a library imports both forms (MPICH: its `use mpi_f08` `MPI_Barrier` calls the `PMPI_`
//!   one), whether the program calls the function through the `mpi_f08` bindings.
//!
//! Exit status: 0 all well; 1 at least one problem; 3 warnings but no problem; 2 bad arguments
//! (no such PROGRAM, no such `--lib` file, a `--ranks` that is not a whole number from 1, a launch
//! line without a program, a word after a program alone that is no option); 4 the
//! report could not be written.

pub(crate) mod elf;
mod launch;
mod python;
mod selfcheck;

use aar_record::count;
use aar_record::ranks::RankSet;
use clap::Args;
use launch::LaunchLine;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(after_help = "Exit status: 0 all well; 1 at least one problem (libaar.so will not work for this program as \
things stand); 3 warnings but no problem; 2 bad arguments; 4 the report could not be written.")]
pub struct DoctorArgs {
    /// The program to check, as you would launch it: a path or a name looked up in PATH, or the
    /// whole launch line (srun -n 4 ./app, aprun -n 4 ./app, mpirun -np 4 ./app), of which the
    /// program the launcher starts is checked, with its number of ranks (its own arguments are
    /// not looked at). After a program alone, the options below are still taken
    #[arg(value_name = "PROGRAM", trailing_var_arg = true, allow_hyphen_values = true)]
    program: Vec<String>,
    #[command(flatten)]
    options: DoctorOptions,
}

/// The doctor's options, given before the program, or after a program alone (`aar doctor ./app
/// --json`: the program's position takes the rest of the line, for a launch line's options).
#[derive(Args, Default)]
struct DoctorOptions {
    /// The libaar.so to check (default: the one in LD_PRELOAD, else the one installed with this aar)
    #[arg(long, value_name = "PATH")]
    lib: Option<PathBuf>,
    /// Print the checks as one JSON document (format aar-doctor/1) instead of text
    #[arg(long)]
    json: bool,
    /// The number of ranks the job will run, for the count of the files it makes in AAR_OUTPUT_DIR
    /// (default: the launch line's, else the launcher's as libaar.so reads it, which under `srun
    /// -n 1` is that step's 1)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), allow_negative_numbers = true)]
    ranks: Option<u32>,
}

impl DoctorOptions {
    /// The options among `words`, the ones after a program that is no launcher, over `self`;
    /// `Err`: clap's message for a word that is none (as for `aar doctor ./app extra`).
    fn and_after(self, words: &[String]) -> Result<DoctorOptions, clap::Error> {
        use clap::FromArgMatches;
        if words.is_empty() {
            return Ok(self);
        }
        let cmd = DoctorOptions::augment_args(clap::Command::new("aar doctor PROGRAM").no_binary_name(true));
        let after = DoctorOptions::from_arg_matches(&cmd.try_get_matches_from(words)?)?;
        Ok(DoctorOptions {
            lib: after.lib.or(self.lib),
            json: self.json || after.json,
            ranks: after.ranks.or(self.ranks),
        })
    }
}

/// Exit statuses (documented in `aar doctor --help` and the README).
pub const EXIT_OK: i32 = 0;
pub const EXIT_PROBLEM: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_WARNINGS: i32 = 3;
/// The checks ran but their report could not be written.
pub const EXIT_NOT_WRITTEN: i32 = 4;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Verdict {
    Ok,
    Note,
    Warning,
    Problem,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Note => "note",
            Verdict::Warning => "warning",
            Verdict::Problem => "problem",
        }
    }
}

/// One line of the report.
pub struct Check {
    pub topic: &'static str,
    pub verdict: Verdict,
    pub text: String,
    pub fix: Option<String>,
    /// The check could not be made (its text says why, its fix how to have it made).
    pub skipped: bool,
}

#[derive(Default)]
pub struct Report {
    pub checks: Vec<Check>,
    /// AAR_OUTPUT_DIR is set, and the records check found it cannot take records.
    pub records_unusable: bool,
}

impl Report {
    fn add(&mut self, topic: &'static str, verdict: Verdict, text: impl Into<String>, fix: Option<String>) {
        self.checks.push(Check { topic, verdict, text: text.into(), fix, skipped: false });
    }
    /// A check that could not be made: a note that says why, with the fix that has it made.
    fn skipped(&mut self, topic: &'static str, text: impl Into<String>, fix: impl Into<String>) {
        self.checks.push(Check {
            topic,
            verdict: Verdict::Note,
            text: text.into(),
            fix: Some(fix.into()),
            skipped: true,
        });
    }
    fn ok(&mut self, topic: &'static str, text: impl Into<String>) {
        self.add(topic, Verdict::Ok, text, None);
    }
    fn note(&mut self, topic: &'static str, text: impl Into<String>) {
        self.add(topic, Verdict::Note, text, None);
    }
    fn warning(&mut self, topic: &'static str, text: impl Into<String>, fix: impl Into<String>) {
        self.add(topic, Verdict::Warning, text, Some(fix.into()).filter(|f: &String| !f.is_empty()));
    }
    fn problem(&mut self, topic: &'static str, text: impl Into<String>, fix: impl Into<String>) {
        self.add(topic, Verdict::Problem, text, Some(fix.into()).filter(|f: &String| !f.is_empty()));
    }
    fn count(&self, v: Verdict) -> usize {
        self.checks.iter().filter(|c| c.verdict == v).count()
    }
    fn exit_code(&self) -> i32 {
        if self.count(Verdict::Problem) > 0 {
            EXIT_PROBLEM
        } else if self.count(Verdict::Warning) > 0 {
            EXIT_WARNINGS
        } else {
            EXIT_OK
        }
    }
}

/// The program as the doctor found it.
struct Program {
    path: PathBuf,
    /// The executable the loader starts (the program, or a script's interpreter): its folder is
    /// what `$ORIGIN` in LD_PRELOAD stands for.
    executable: Option<PathBuf>,
    elf: Option<elf::Elf>,
    closure: Option<elf::Closure>,
    /// For a Python program, mpi4py's MPI module: the file that makes its MPI calls.
    mpi_module: Option<PathBuf>,
}

/// A bad argument: nothing is checked, the exit status is [`EXIT_USAGE`].
#[derive(Debug, thiserror::Error)]
enum ArgError {
    #[error("{e}; nothing was checked. {fix}", e = .0, fix = .0.fix())]
    Program(#[from] crate::program::ProgramError),
    /// A launch line's word that names no program, after an option the doctor does not know
    /// (which may take it as its value): the fix is the line's.
    #[error("{e}; nothing was checked. {fix}", e = .0, fix = .1)]
    AfterUnknownOption(crate::program::ProgramError, String),
    /// A launch line without a program, or clap's message for a bad option after the program.
    #[error("{0}; nothing was checked.")]
    Usage(String),
    /// clap's message for a word after the program that is none of the doctor's options.
    #[error(
        "{} after the program; nothing was checked. After a program alone only the doctor's options \
         (--lib, --json, --ranks) may follow; give the program without its arguments, or a launch line \
         (srun -n 4 ./app ARGS...)",
        .0
    )]
    Options(String),
    #[error(
        "--lib {}: {}; nothing was checked. Give the path of a libaar.so (e.g. \
         $AAR_ROOT/lib/libaar.so after module load aar).",
        .0.display(),
        match std::fs::metadata(.0) {
            Ok(m) if m.is_dir() => "a folder, not a file",
            Ok(_) => "not a regular file (a FIFO, a device or a socket)",
            Err(_) => "no such file",
        }
    )]
    NoSuchLib(PathBuf),
}

/// The program to check, if one is given, as a shell would find it (the one a launch line
/// starts, with the line), and the options (`--lib` must exist).
fn check_args(args: DoctorArgs) -> Result<(Option<PathBuf>, Option<LaunchLine>, DoctorOptions), ArgError> {
    let line = LaunchLine::parse(&args.program).map_err(ArgError::Usage)?;
    let (name, options) = match (&line, args.program.split_first()) {
        (Some(l), _) => (Some(&l.program), args.options),
        (None, Some((program, after))) => {
            let options = args.options.and_after(after).map_err(|e| {
                let said = e.render().to_string();
                let said = said.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
                match e.kind() {
                    clap::error::ErrorKind::UnknownArgument => ArgError::Options(said),
                    _ => ArgError::Usage(said),
                }
            })?;
            (Some(program), options)
        }
        (None, None) => (None, args.options),
    };
    let program = name.map(|p| crate::program::find(p.as_ref())).transpose().map_err(|e| {
        match line.as_ref().and_then(|l| l.after_unknown.clone()) {
            Some(fix) => ArgError::AfterUnknownOption(e, fix),
            None => e.into(),
        }
    })?;
    match &options.lib {
        Some(lib) if !lib.is_file() => Err(ArgError::NoSuchLib(lib.clone())),
        _ => Ok((program, line, options)),
    }
}

pub fn run(args: DoctorArgs) -> i32 {
    let command = args.program.join(" ");
    let (program_path, line, args) = match check_args(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("aar doctor: {e}");
            return EXIT_USAGE;
        }
    };
    let mut report = Report::default();
    if let Some(l) = &line {
        report.note("program", format!("checking {}, the program {} would start ({command})", l.program, l.launcher));
    }
    let program = program_path.map(|p| check_program(&p, &mut report));
    // A name without '/' is the file here, as the shell and `--lib`'s check took it: dlopen would
    // search the library path for it instead (and find another, or none).
    let lib = args.lib.map(|l| if l.to_string_lossy().contains('/') { l } else { Path::new(".").join(l) });
    let libaar = check_preload(lib.as_deref(), program.as_ref(), &mut report);
    let outcome = libaar
        .as_ref()
        .map(|(path, how)| selfcheck::run(path, how, program.as_ref().and_then(|p| p.closure.as_ref()), &mut report));
    let ugni_loaded = outcome.as_ref().is_some_and(|o| o.ugni_loaded);
    let selfcheck = outcome.and_then(|o| o.doc);
    let nodes = JobNodes::find();
    let ranks = JobRanks::find(args.ranks, line.and_then(|l| l.ranks), selfcheck.as_ref(), nodes.as_ref());
    let libaar =
        selfcheck.as_ref().and_then(|d| d["library"].as_str().map(PathBuf::from)).or_else(|| libaar.map(|(p, _)| p));
    if let Some(doc) = &selfcheck {
        check_counters(doc, ugni_loaded, &mut report);
        check_settings(doc, &mut report);
        check_record_count(doc, ranks.as_ref(), nodes.as_ref(), &mut report);
        check_trace(doc, &mut report);
        check_topology(doc, &mut report);
        check_dmapp_table(doc, &mut report);
        check_mpich_routing(doc, &mut report);
        check_decider_lock(doc, &mut report);
        check_preloaded_tools(doc, &mut report);
        check_preloaded_routers(&mut report);
        check_file_size_limit(doc, &mut report);
        if let Some(p) = program.as_ref() {
            if let Some(closure) = &p.closure {
                let program = p.mpi_module.as_ref().unwrap_or(&p.path);
                check_own_mpi_definitions(program, doc, &mut report);
                check_fortran_mpi(program, closure, doc, &mut report);
                check_unwrapped_collectives(program, closure, doc, &mut report);
                // A Python program marks through ctypes, which looks the functions up itself.
                if p.mpi_module.is_none() {
                    check_markers(program, closure, doc, &mut report);
                }
            }
        }
    }
    let code = report.exit_code();
    let text = if args.json {
        let job = (ranks.as_ref(), nodes.as_ref());
        json_text(&report, program.as_ref(), libaar.as_deref(), selfcheck.as_ref(), job, code)
    } else {
        text(&report, program.as_ref(), libaar.as_deref(), selfcheck.as_ref(), code)
    };
    match crate::print(&text) {
        Ok(()) => code,
        Err(e) => {
            eprintln!("aar doctor: {e}");
            EXIT_NOT_WRITTEN
        }
    }
}

/// PROGRAM as a shell would find it: a name with a `/` as it is, any other name in PATH.
fn check_program(path: &Path, report: &mut Report) -> Program {
    let shown = path.display().to_string();
    let mut program =
        Program { path: path.to_path_buf(), executable: None, elf: None, closure: None, mpi_module: None };
    if path.is_dir() {
        report.problem("program", format!("{shown} is a folder, not a program"), "Give the program's file.");
        return program;
    }
    let file = match elf::read(path) {
        Ok(f) => f,
        // An execute-only program (mode --x, a site's licensed build): the kernel maps it and the
        // loader preloads libaar.so into it as into any other; only the doctor cannot look inside.
        Err(elf::NotElf::Unreadable(e))
            if e.kind() == std::io::ErrorKind::PermissionDenied && crate::program::is_executable_file(path) =>
        {
            report.checks.push(Check {
                topic: "program",
                verdict: Verdict::Warning,
                text: format!(
                    "{shown} may be run but not read by you ({e}): the loader preloads libaar.so into it all the \
                     same, but whether it is dynamically linked and links libugni cannot be checked here"
                ),
                fix: Some(format!(
                    "Ask its owner to make it readable (chmod a+r {}), or run aar doctor as a user who may read it.",
                    aar_record::folder::shell_word(&shown)
                )),
                skipped: true,
            });
            program.executable = Some(path.to_path_buf());
            check_secure_execution(path, report);
            return program;
        }
        Err(elf::NotElf::Unreadable(e)) => {
            report.problem("program", format!("{shown} cannot be read ({e})"), "Check its permissions (chmod +r).");
            return program;
        }
        Err(elf::NotElf::Script(line)) => {
            // A Python script, or a launcher script named python (pyenv's, conda's, a module's).
            let Some(python) = python::Python::of_script(&line).or_else(|| python::Python::of_program(path)) else {
                report.problem(
                    "program",
                    format!("{shown} is a script ({line}), not an ELF program; the doctor cannot see what it runs"),
                    "Run aar doctor on the program the script launches.",
                );
                return program;
            };
            let what = format!("{shown} is Python (a script: {line})");
            let asked = match python.ask() {
                Ok(a) => a,
                Err(why) => {
                    report.problem("program", format!("{what}, but {why}"), "Run aar doctor on the Python it runs.");
                    return program;
                }
            };
            match elf::read(&asked.executable) {
                Ok(interpreter) => {
                    program.executable = Some(asked.executable.clone());
                    if check_linking(&interpreter, report) {
                        check_python(&mut program, &what, &asked.executable, asked.mpi_module, report);
                    }
                    program.elf = Some(interpreter);
                }
                Err(e) => report.problem(
                    "program",
                    format!("{what}, whose interpreter {} cannot be read ({e})", asked.executable.display()),
                    "Run aar doctor on the Python it runs.",
                ),
            }
            return program;
        }
        Err(why) => {
            report.problem("program", format!("{shown} is {why}"), "Give the compiled program (an ELF executable).");
            return program;
        }
    };
    program.executable = Some(path.to_path_buf());
    if !file.is_program() {
        report.problem(
            "program",
            format!("{shown}: {}, not a program", file.describe()),
            "Give the executable you launch; libraries are checked through it.",
        );
        return program;
    }
    if crate::program::is_executable_file(path) {
        report.ok("program", format!("{shown}: {}", file.describe()));
    } else {
        report.problem(
            "program",
            format!(
                "{shown}: {}, but this user may not execute it (no x permission for this user, or a file system \
                 mounted noexec)",
                file.describe()
            ),
            format!("chmod +x {shown} (as its owner), or put it on a file system that allows execution"),
        );
    }
    check_secure_execution(path, report);
    if !check_linking(&file, report) {
        program.elf = Some(file);
        return program;
    }
    // The interpreter given as the program: its MPI is mpi4py's module, where there is one.
    if let Some(python) = python::Python::of_program(path) {
        if let Ok(python::Asked { mpi_module: Some(module), .. }) = python.ask() {
            check_python(&mut program, &format!("{shown} is Python"), path, Some(module), report);
            program.elf = Some(file);
            return program;
        }
    }
    let closure = elf::closure(path, &file, std::env::var("LD_LIBRARY_PATH").ok().as_deref());
    check_libraries(path, &closure, report);
    program.elf = Some(file);
    program.closure = Some(closure);
    program
}

/// A set-user-ID or set-group-ID program of another user or group: the kernel starts it in
/// secure-execution mode (AT_SECURE), where ld.so ignores LD_PRELOAD entries with a `/` and
/// preloads others only if they are set-user-ID themselves, in a standard folder. The bit has
/// no effect on a file system mounted `nosuid`, nor where the owner is the one who runs it.
fn check_secure_execution(path: &Path, report: &mut Report) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else { return };
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let suid = meta.mode() & libc::S_ISUID != 0 && meta.uid() != uid;
    let sgid = meta.mode() & libc::S_ISGID != 0 && meta.gid() != gid;
    if !(suid || sgid) || mounted_nosuid(path) {
        return;
    }
    let shown = path.display().to_string();
    let word = aar_record::folder::shell_word(&shown);
    let what = match (suid, sgid) {
        (true, true) => format!("set-user-ID (owner uid {}) and set-group-ID (group gid {})", meta.uid(), meta.gid()),
        (true, false) => format!("set-user-ID (owner uid {}, and you are uid {uid})", meta.uid()),
        _ => format!("set-group-ID (group gid {}, and yours is gid {gid})", meta.gid()),
    };
    report.problem(
        "program",
        format!(
            "{shown} is {what}: the kernel starts it in secure-execution mode, where the loader ignores every \
             LD_PRELOAD entry with a '/' (and any other not itself set-user-ID in a system library folder), so \
             libaar.so is not loaded into it"
        ),
        format!(
            "Run a copy that is not set-user-ID or set-group-ID (cp {word} app-copy makes one of yours), or, if it \
             does not need the bit, chmod u-s,g-s {word}."
        ),
    );
}

/// Whether the file system holding `path` is mounted `nosuid` (set-ID bits have no effect there).
fn mounted_nosuid(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` is valid for writing one statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    unsafe { st.assume_init() }.f_flag & libc::ST_NOSUID != 0
}

/// Whether the program (or a script's interpreter) is dynamically linked, so that LD_PRELOAD
/// reaches it; a verdict either way.
fn check_linking(file: &elf::Elf, report: &mut Report) -> bool {
    match &file.interpreter {
        Some(interp) => {
            report.ok("linking", format!("dynamically linked (loader {interp}): LD_PRELOAD applies"));
            true
        }
        None => {
            report.problem(
                "linking",
                format!(
                    "statically linked{}: the dynamic loader never runs, so LD_PRELOAD (and libaar.so) cannot reach it",
                    if file.dynamic { " (a static PIE)" } else { "" }
                ),
                "Rebuild it dynamically linked: on a Cray, export CRAYPE_LINK_TYPE=dynamic before compiling \
                 (or pass -dynamic to cc/CC/ftn); elsewhere, drop -static.",
            );
            false
        }
    }
}

/// A Python program (`what` says which): its MPI is mpi4py's `MPI` module, whose libraries are
/// checked in the program's place; libaar.so reaches them however Python loads the module.
fn check_python(program: &mut Program, what: &str, python: &Path, module: Option<PathBuf>, report: &mut Report) {
    let module = match module {
        Some(m) => m,
        None => {
            report.problem(
                "program",
                format!("{what}, and {} has no mpi4py: the doctor cannot see which MPI it runs", python.display()),
                "Install mpi4py for this Python, built against the job's MPI (on a Cray, with cray-mpich loaded), \
                 or run aar doctor on the program the script launches.",
            );
            return;
        }
    };
    match elf::read(&module) {
        Ok(m) => {
            report.ok(
                "program",
                format!("{what}: its MPI is mpi4py's module {}, whose libraries are checked here", module.display()),
            );
            let closure = elf::closure(&module, &m, std::env::var("LD_LIBRARY_PATH").ok().as_deref());
            check_libraries(&module, &closure, report);
            program.closure = Some(closure);
            program.mpi_module = Some(module);
        }
        Err(e) => report.problem(
            "program",
            format!("{what}: mpi4py's module {} cannot be read ({e})", module.display()),
            "Reinstall mpi4py for this Python.",
        ),
    }
}

fn describe_library(l: &elf::Library) -> String {
    match &l.path {
        Some(p) => format!("{} ({}, needed by {})", l.name, p.display(), l.needed_by),
        None => format!("{} (needed by {}, but not found here)", l.name, l.needed_by),
    }
}

fn check_libraries(program: &Path, closure: &elf::Closure, report: &mut Report) {
    let ugni = closure.find(&["libugni.so"]);
    let dmapp = closure.find(&["libdmapp.so"]);
    let mpi = closure.find(&["libmpi", "libmpich"]);
    let found_by_loader = |libs: &[&elf::Library]| libs.iter().any(|l| l.path.is_some());
    // Libraries not found here were not followed: libugni may be needed through one of them.
    let unfollowed = !closure.missing().is_empty();
    for (topic, name, libs) in [("uGNI", "libugni", &ugni), ("DMAPP", "libdmapp", &dmapp)] {
        match libs.first() {
            Some(_) if found_by_loader(libs) => {
                let l = libs.iter().find(|l| l.path.is_some()).unwrap_or(&libs[0]);
                report.ok(topic, format!("links {}", describe_library(l)));
            }
            Some(l) => report.warning(
                topic,
                format!("links {}", describe_library(l)),
                format!(
                    "The loader would not find {name} in this environment; load the module that provides it \
                     (e.g. module load cray-ugni) or set LD_LIBRARY_PATH, as the job will."
                ),
            ),
            None if unfollowed => {
                report.note(topic, format!("does not link {name} among the libraries the loader would find here"))
            }
            None => report.note(topic, format!("does not link {name}")),
        }
    }
    match mpi.first() {
        Some(l) => report.note("MPI", format!("links {}", describe_library(l))),
        None => report.note("MPI", "links no MPI library"),
    }
    // PAPI counts one event set per component at a time: the program's comes first.
    if let Some(l) = closure.find(&["libpapi.so"]).first() {
        report.note(
            "PAPI",
            format!(
                "links {}: where the program (or a tool in it) counts events of the PAPI component that serves the \
                 NIC counters, libaar.so gives its counters up to it while it counts and routes as without counters \
                 (automatic routing: the fixed low-latency mode), with one warning",
                describe_library(l)
            ),
        );
    }
    if ugni.is_empty() && dmapp.is_empty() {
        // Linked in from libugni.a or libdmapp.a: the program's calls to them stay inside it.
        let sends: HashSet<String> = SENDS.iter().map(|s| s.to_string()).collect();
        let mut inside: Vec<String> = elf::linked_in(program, &sends).unwrap_or_default().into_iter().collect();
        inside.sort();
        if !inside.is_empty() {
            report.problem(
                "routing",
                format!(
                    "the program has its own copy of {} ({}: libugni or libdmapp linked in from its static archive): \
                     its calls to them never leave the program, and libaar.so cannot reach them",
                    if inside.len() == 1 { "a network function" } else { "network functions" },
                    inside.join(", ")
                ),
                "Link libugni and libdmapp as shared libraries: on a Cray, export CRAYPE_LINK_TYPE=dynamic before \
                 compiling and put no -Wl,-Bstatic before -lugni or -ldmapp.",
            );
            return finish_libraries(closure, report);
        }
        if unfollowed {
            // A Cray MPI build whose module is not loaded here: its libmpich, not found, is what
            // links libugni. "Nothing to route" would be a guess.
            let missing: Vec<&str> = closure.missing().iter().map(|l| l.name.as_str()).collect();
            report.warning(
                "routing",
                format!(
                    "no libugni or libdmapp among the libraries the loader would find here, but {} the program needs \
                     ({}) cannot be found, and libugni may come through {}: whether libaar.so has anything to route \
                     in this program is not known",
                    count(missing.len() as u64, "library", "libraries"),
                    missing.join(", "),
                    if missing.len() == 1 { "it" } else { "them" }
                ),
                "Load the modules the job loads (or set LD_LIBRARY_PATH as the job will) and run aar doctor again.",
            );
            return finish_libraries(closure, report);
        }
        let fix = match launcher(program) {
            // `aar doctor srun`: the program the launcher starts is the one to check.
            Some(name) => format!(
                "{name} is a job launcher: libaar.so is preloaded into the programs it starts, not into it. Give the \
                 application itself (aar doctor ./app), or check it where the job runs: {name} -n 1 aar doctor ./app."
            ),
            None => "Check that this is the program that talks to the network (a Cray MPI, SHMEM or PGAS build links \
                     libugni); a program that opens libugni itself at run time (dlopen), or a stripped one that \
                     carries libugni from its static archive, cannot be checked here."
                .to_string(),
        };
        report.problem(
            "routing",
            "links neither libugni nor libdmapp (directly or through its libraries): libaar.so has nothing to route \
             in this program",
            fix,
        );
    }
    finish_libraries(closure, report);
}

/// The name of a job launcher (Slurm's, ALPS', MPICH's, Open MPI's, ...) `program` is, by its file
/// name: what users put in front of the application, and give the doctor by habit.
fn launcher(program: &Path) -> Option<&'static str> {
    const LAUNCHERS: [&str; 9] =
        ["srun", "aprun", "mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "jsrun", "ibrun"];
    let name = program.file_name()?.to_str()?;
    LAUNCHERS.into_iter().find(|&l| l == name)
}

/// The uGNI and DMAPP sends whose code in a program means it carries its own libugni or libdmapp.
const SENDS: [&str; 6] = ["GNI_PostRdma", "GNI_PostFma", "GNI_SmsgSend", "dmapp_put", "dmapp_get", "dmapp_put_nbi"];

/// The libraries of the program that the loader would not find here, and a tree cut short.
fn finish_libraries(closure: &elf::Closure, report: &mut Report) {
    let missing: Vec<String> = closure
        .missing()
        .iter()
        .filter(|l| !l.name.starts_with("libugni") && !l.name.starts_with("libdmapp"))
        .map(|l| describe_library(l))
        .collect();
    if !missing.is_empty() {
        report.warning(
            "libraries",
            format!("the loader would not find {} here: {}", count(missing.len() as u64, "library", "libraries"), missing.join("; ")),
            "Load the modules the job loads (or set LD_LIBRARY_PATH) before running aar doctor, so it sees what the job sees.",
        );
    }
    if closure.truncated {
        report.note("libraries", "the dependency tree was followed only so far (over 1000 libraries)");
    }
}

/// The wrapped MPI functions the program defines itself: a profiling tool linked into it (CrayPat's
/// `pat_build` instrumentation, a static mpiP) or a static MPI. The program's calls of them reach
/// its own code, exported or not, before any preloaded library: libaar.so never sees them.
fn check_own_mpi_definitions(program: &Path, doc: &Value, report: &mut Report) {
    let names: HashSet<String> = ["mpi_wrapped", "mpi_wrapped_large_count"]
        .iter()
        .filter_map(|k| doc[*k].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    let own = elf::linked_in(program, &names).unwrap_or_default();
    if own.is_empty() {
        return;
    }
    let list = first_names(own);
    report.warning(
        "MPI",
        format!(
            "the program defines {list} itself (a profiling tool linked into it, such as CrayPat's pat_build \
             instrumentation, or an MPI linked in statically): its calls of them stay inside it, and libaar.so does \
             not see them (AAR_AB_BOUNDARY=MPI_<Fn> marks no iteration there, steady does not time them as calls, \
             MPI_Alltoall's low-stall mode is not applied)"
        ),
        "For A/B runs use a build without the tool's MPI wrappers (instrument with a tool preloaded after \
         libaar.so instead), or mark the iterations with the C API (aar_iteration_begin/aar_iteration_end, \
         AAR_AB_BOUNDARY=markers).",
    );
}

/// The MPI libraries that hold Fortran bindings (MPICH and Cray MPICH, Open MPI), by file name.
const FORTRAN_MPI: [&str; 8] = [
    "libmpifort",
    "libmpichfort",
    "libmpichf90",
    "libfmpich",
    "libmpi_mpifh",
    "libmpi_usempi",
    "libmpi_f77",
    "libmpi_f90",
];

/// Whether a Fortran program's collectives reach libaar.so's MPI wrappers: they do when the
/// Fortran bindings call the C functions (`MPI_Allreduce`, which the preload interposes), not when
/// they call `PMPI_Allreduce` directly. Told from what each binding library imports. A library
/// that imports both forms of a function has bindings of each kind: MPICH's `use mpi_f08`
/// bindings of the functions without a buffer (`MPI_Barrier`) call the `PMPI_` form, its other
/// bindings the C one; whether the program calls the `mpi_f08` ones is told from its imports.
fn check_fortran_mpi(program: &Path, closure: &elf::Closure, doc: &Value, report: &mut Report) {
    let Some(wrapped) = doc["mpi_wrapped"].as_array() else { return };
    let wrapped: Vec<&str> = wrapped.iter().filter_map(Value::as_str).collect();
    let names: HashSet<String> = wrapped.iter().flat_map(|f| [f.to_string(), format!("P{f}")]).collect();
    for lib in closure.find(&FORTRAN_MPI) {
        let Some(path) = &lib.path else { continue };
        let name = elf::base_name(&lib.name);
        let imports = match elf::imports(path, &names) {
            Ok(i) => i,
            Err(e) => {
                report.note("Fortran", format!("{name} ({}) could not be read: {e}", path.display()));
                continue;
            }
        };
        let through_c: Vec<&str> = wrapped.iter().copied().filter(|f| imports.contains(*f)).collect();
        let direct: Vec<String> = wrapped
            .iter()
            .map(|f| format!("P{f}"))
            .filter(|p| imports.contains(p) && !imports.contains(&p[1..]))
            .collect();
        let both: Vec<&str> = through_c.iter().copied().filter(|f| imports.contains(&format!("P{f}"))).collect();
        if !direct.is_empty() {
            report.warning(
                "Fortran",
                format!(
                    "{name}'s Fortran bindings call {} directly: libaar.so does not see those collectives when \
                     Fortran code makes them (AAR_AB_BOUNDARY=MPI_<Fn> marks no iteration there, and steady does not \
                     tune them as calls); C code is not affected",
                    direct.join(", ")
                ),
                FORTRAN_FIX,
            );
        } else if !through_c.is_empty() {
            let except = match both.as_slice() {
                [] => String::new(),
                both => format!(
                    ", except {} from `use mpi_f08` code (it imports {} too, which MPICH's mpi_f08 bindings call)",
                    both.join(", "),
                    both.iter().map(|f| format!("P{f}")).collect::<Vec<_>>().join(", ")
                ),
            };
            report.ok(
                "Fortran",
                format!(
                    "{name}'s Fortran bindings call the C MPI functions ({} of the {} libaar.so wraps): libaar.so \
                     sees a Fortran program's collectives{except}",
                    through_c.len(),
                    wrapped.len()
                ),
            );
        } else {
            report.note(
                "Fortran",
                format!(
                    "{name} imports none of the {} MPI functions libaar.so wraps, in either form: its symbols do not \
                     show whether a Fortran program's collectives reach libaar.so (run one with \
                     AAR_AB_BOUNDARY=MPI_Barrier and look for its iteration record)",
                    wrapped.len()
                ),
            );
        }
        check_f08_bindings(program, closure, name, &both, report);
    }
}

/// What to do when Fortran code's collectives do not reach libaar.so.
const FORTRAN_FIX: &str = "Mark the iterations of a Fortran program with the aar module instead (use aar; \
                           aar_iteration_begin/aar_iteration_end, AAR_AB_BOUNDARY=markers).";

/// The functions `both` of binding library `lib` that it imports in both forms: a warning when
/// the program (or a library of its own) calls them through the `mpi_f08` bindings, MPICH's
/// `mpi_<fn>_f08_` and `mpi_<fn>_f08ts_`, which for those functions are the ones that call the
/// `PMPI_` form.
fn check_f08_bindings(program: &Path, closure: &elf::Closure, lib: &str, both: &[&str], report: &mut Report) {
    let f08 = |f: &str| {
        let lower = f.to_ascii_lowercase();
        [format!("{lower}_f08_"), format!("{lower}_f08ts_")]
    };
    let names: HashSet<String> = both.iter().flat_map(|f| f08(f)).collect();
    if names.is_empty() {
        return;
    }
    let (callers, found) = callers_importing(program, closure, &names);
    let called: Vec<&str> = both.iter().copied().filter(|f| f08(f).iter().any(|s| found.contains(s))).collect();
    if called.is_empty() {
        return;
    }
    let pmpi: Vec<String> = called.iter().map(|f| format!("P{f}")).collect();
    report.warning(
        "Fortran",
        format!(
            "{} {} {} through the mpi_f08 bindings, and {lib} imports {} besides the C {}: its mpi_f08 bindings of \
             {} call the PMPI form directly (MPICH's do), so libaar.so does not see those calls (AAR_AB_BOUNDARY={} \
             marks no iteration there)",
            callers.join(", "),
            if callers.len() == 1 { "calls" } else { "call" },
            called.join(", "),
            pmpi.join(", "),
            if called.len() == 1 { "function" } else { "functions" },
            if called.len() == 1 { "it" } else { "them" },
            called[0],
        ),
        format!(
            "Mark iterations with a collective whose mpi_f08 binding calls the C function (one with a buffer, \
             e.g. AAR_AB_BOUNDARY=MPI_Allreduce), or {}",
            FORTRAN_FIX.replacen("Mark", "mark", 1)
        ),
    );
}

/// Libraries, by file name, whose imports are not the program's MPI calls: MPI's own, and the
/// language runtimes.
const NOT_CALLERS: [&str; 14] = [
    "libmpi",
    "libmpich",
    "libfmpich",
    "libopen-",
    "libc.",
    "libm.",
    "libstdc++",
    "libgcc",
    "libgfortran",
    "libquadmath",
    "libpthread",
    "libdl.",
    "librt.",
    "ld-linux",
];

/// The nonblocking form of a blocking collective's name: `MPI_Allreduce` -> `MPI_Iallreduce`.
fn nonblocking(name: &str) -> Option<String> {
    let rest = name.strip_prefix("MPI_")?;
    let mut chars = rest.chars();
    let first = chars.next()?;
    Some(format!("MPI_I{}{}", first.to_ascii_lowercase(), chars.as_str()))
}

/// Whether the program (or a library of its own, not MPI's) calls collectives libaar.so does
/// not wrap: the nonblocking forms of the ones it does (from its self-check document), the
/// neighbourhood ones among them, and MPI 4's large-count (`_c`) forms of both. Under `steady`
/// their messages are decided one by one, not timed as whole calls, and none of them can mark
/// iterations.
fn check_unwrapped_collectives(program: &Path, closure: &elf::Closure, doc: &Value, report: &mut Report) {
    let Some(wrapped) = doc["mpi_wrapped"].as_array() else { return };
    // A libaar.so before the large-count forms were wrapped lists none.
    let large_count = doc["mpi_wrapped_large_count"].as_array().map_or(&[][..], Vec::as_slice);
    let names: HashSet<String> = wrapped
        .iter()
        .filter_map(Value::as_str)
        .flat_map(|f| [Some(f.to_string()), nonblocking(f)])
        .flatten()
        .flat_map(|f| [format!("{f}_c"), f])
        .filter(|f| !wrapped.iter().chain(large_count).any(|w| w == f.as_str()))
        .collect();
    let (callers, called) = callers_importing(program, closure, &names);
    if called.is_empty() {
        return;
    }
    let called: Vec<String> = called.into_iter().collect();
    report.note(
        "MPI",
        format!(
            "{} {} {}, which libaar.so does not wrap: under steady their messages are decided one by one, not \
             timed as whole calls, and AAR_AB_BOUNDARY cannot name them",
            callers.join(", "),
            if callers.len() == 1 { "calls" } else { "call" },
            called.join(", ")
        ),
    );
}

/// The program and the libraries of its own (not MPI's) that import any of `names`, by name, and
/// which of `names` they import. MPI's own libraries define them, or import them to give their
/// Fortran forms; the language runtimes call no MPI (and each library read is a whole file).
fn callers_importing(
    program: &Path,
    closure: &elf::Closure,
    names: &HashSet<String>,
) -> (Vec<String>, std::collections::BTreeSet<String>) {
    let skipped = |name: &str| NOT_CALLERS.iter().any(|p| name.starts_with(p));
    let files = std::iter::once((program.display().to_string(), Some(program.to_path_buf()))).chain(
        closure
            .libraries
            .iter()
            .filter(|l| !skipped(elf::base_name(&l.name)))
            .map(|l| (elf::base_name(&l.name).to_string(), l.path.clone())),
    );
    let mut callers = Vec::new();
    let mut called = std::collections::BTreeSet::new();
    for (name, path) in files {
        let Some(found) = path.and_then(|p| elf::imports(&p, names).ok()).filter(|f| !f.is_empty()) else { continue };
        callers.push(name);
        called.extend(found);
    }
    (callers, called)
}

/// Under an A/B experiment whose iterations are marked by the program (`AAR_AB` with the markers
/// boundary, as libaar.so's own parser took them), whether the program can call
/// `aar_iteration_begin`: it, or a library of its own, imports it, or it imports `dlsym` (to look
/// it up). A program built without -fPIE that declares the markers weak has them NULL for good,
/// under LD_PRELOAD too (cabi/aar.h), and marks nothing. Only a warning: a plug-in it loads may
/// mark.
fn check_markers(program: &Path, closure: &elf::Closure, doc: &Value, report: &mut Report) {
    let settings = &doc["settings"];
    if ab_policies(settings).is_empty() || settings["ab_boundary"] != "markers" {
        return;
    }
    let markers: HashSet<String> = MARKERS.iter().map(|s| s.to_string()).collect();
    let (callers, found) = callers_importing(program, closure, &markers);
    if found.contains(MARKERS[0]) {
        report.ok(
            "A/B",
            format!(
                "{} {} {}: under AAR_AB with markers, libaar.so marks each iteration where it is called",
                callers.join(", "),
                if callers.len() == 1 { "imports" } else { "import" },
                found.into_iter().collect::<Vec<_>>().join(", ")
            ),
        );
        return;
    }
    let shown = program.display();
    let dlsym: HashSet<String> = HashSet::from(["dlsym".to_string()]);
    if elf::imports(program, &dlsym).is_ok_and(|i| !i.is_empty()) {
        report.note(
            "A/B",
            format!(
                "{shown} references no aar_iteration_begin but imports dlsym: under AAR_AB with markers, its \
                 iterations are marked only if it looks aar_iteration_begin up with it (which its symbols do not show)"
            ),
        );
        return;
    }
    let references = if found.is_empty() {
        "references no aar_iteration_begin/end"
    } else {
        "references aar_iteration_end but not aar_iteration_begin, which begins iterations,"
    };
    report.warning(
        "A/B",
        format!(
            "{shown} {references} and does not import dlsym: under AAR_AB with markers no iteration will be marked \
             (a program built without -fPIE that declares them weak gets them NULL for good from the link editor, \
             under LD_PRELOAD too), so the whole run has iteration 0's policy and aar report has nothing to compare; unless a plug-in it \
             loads marks them"
        ),
        "Build it with -fPIE (or -fPIC), link it with -laar, or look the functions up with \
         dlsym(RTLD_DEFAULT, \"aar_iteration_begin\") (cabi/aar.h); for an unmodified MPI program, set \
         AAR_AB_BOUNDARY to a collective it calls once per iteration (e.g. AAR_AB_BOUNDARY=MPI_Barrier).",
    );
}

/// The C API's iteration markers: the first begins iterations.
const MARKERS: [&str; 2] = ["aar_iteration_begin", "aar_iteration_end"];

/// The other libraries in LD_PRELOAD that define MPI functions libaar.so wraps: profiling tools
/// (mpiP, IPM, Score-P). One before libaar.so takes the program's calls first and, as such tools
/// do, calls PMPI itself, so libaar.so does not see them; one after it sees every call, since
/// libaar.so passes each on to the next definition. Only entries with a folder are read (a bare
/// name is found by the loader's search).
fn check_preloaded_tools(doc: &Value, report: &mut Report) {
    let Some(wrapped) = doc["mpi_wrapped"].as_array() else { return };
    let names: HashSet<String> = wrapped.iter().filter_map(Value::as_str).map(String::from).collect();
    let entries = preload_entries(&std::env::var("LD_PRELOAD").unwrap_or_default());
    let Some(first_libaar) = entries.iter().position(|e| is_libaar(e)) else { return };
    for (i, entry) in entries.iter().enumerate() {
        if is_libaar(entry) || !entry.contains('/') {
            continue;
        }
        let Ok(defined) = elf::definitions(Path::new(entry), &names) else { continue };
        if defined.is_empty() {
            continue;
        }
        let count = defined.len();
        let share = format!("{}: {count} of the {} collectives libaar.so wraps", first_names(defined), names.len());
        if i < first_libaar {
            report.warning(
                "preload",
                format!(
                    "LD_PRELOAD puts {entry} before libaar.so, and it defines {share}. It takes the program's calls \
                     of them first and, if it is a profiling tool (mpiP, IPM, Score-P, ...), calls PMPI itself: \
                     libaar.so does not see them (AAR_AB_BOUNDARY=MPI_<Fn> marks no iteration, steady does not \
                     tune them as calls, MPI_Alltoall's low-stall mode is not applied)"
                ),
                "Put libaar.so first in LD_PRELOAD (load the aar module after the tool's module): libaar.so passes \
                 each call on to the tool, which still sees it.",
            );
        } else {
            report.ok(
                "preload",
                format!("{entry}, after libaar.so in LD_PRELOAD, defines {share}: libaar.so passes each call on to it"),
            );
        }
    }
}

/// The other libraries in LD_PRELOAD that define uGNI's or DMAPP's sends: a second router (the SC'19
/// authors' awr) or a tracer. Either way two libraries route or watch every post, and both may
/// read the counters. libugni or libdmapp itself before libaar.so takes every call from it.
fn check_preloaded_routers(report: &mut Report) {
    let sends: HashSet<String> = SENDS.iter().map(|s| s.to_string()).collect();
    let entries = preload_entries(&std::env::var("LD_PRELOAD").unwrap_or_default());
    let Some(first_libaar) = entries.iter().position(|e| is_libaar(e)) else { return };
    for (i, entry) in entries.iter().enumerate() {
        let base = elf::base_name(entry);
        let real = base.starts_with("libugni") || base.starts_with("libdmapp");
        if real && i < first_libaar {
            report.problem(
                "preload",
                format!(
                    "LD_PRELOAD puts {entry} before libaar.so: the program's calls go to it directly, and libaar.so \
                     routes none of them"
                ),
                format!("Put libaar.so first in LD_PRELOAD, or take {entry} out of it (the program links it anyway)."),
            );
        }
        if is_libaar(entry) || !entry.contains('/') || real {
            continue;
        }
        let Ok(defined) = elf::definitions(Path::new(entry), &sends) else { continue };
        let mut defined: Vec<String> = defined.into_iter().collect();
        if defined.is_empty() {
            continue;
        }
        defined.sort();
        let order = if i < first_libaar {
            "before libaar.so: the program's posts reach it first, and libaar.so routes what it passes on"
        } else {
            "after libaar.so: it receives the posts libaar.so has routed, and may route them again"
        };
        report.warning(
            "preload",
            format!(
                "LD_PRELOAD also has {entry}, {order}. It defines {}: a second router (such as the SC'19 authors' \
                 awr) or a tracer, so two libraries route or watch every post, and both may read the NIC counters",
                defined.join(", ")
            ),
            format!("Preload one router: take {entry} out of LD_PRELOAD (module unload its module), or unload aar."),
        );
    }
}

/// Names in order, the first three and how many more.
fn first_names(names: HashSet<String>) -> String {
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort();
    match names.len() {
        0..=3 => names.join(", "),
        n => format!("{} and {} more", names[..3].join(", "), n - 3),
    }
}

/// `entry` as the loader opens it: `$LIB`, `$PLATFORM` and `$ORIGIN` (or `${...}`) replaced as
/// ld.so replaces them in LD_PRELOAD: the C library's folder under `/` or `/usr`
/// (`lib/x86_64-linux-gnu` on Debian, `lib64` on SUSE and Red Hat), the kernel's platform
/// string (`x86_64`), and the folder of the executable started, `origin`. The token the doctor
/// cannot replace (`$ORIGIN` without a program) is the error.
fn loader_expansion(entry: &str, origin: Option<&Path>) -> Result<String, &'static str> {
    let mut out = String::with_capacity(entry.len());
    let mut rest = entry;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        // As ld.so reads a token: `{NAME}`, or NAME not followed by a letter, digit or `_`
        // (`$LIBX` is no `$LIB`, and stays as written).
        let token = ["ORIGIN", "PLATFORM", "LIB"].into_iter().find_map(|name| {
            let braced = rest.strip_prefix('{').and_then(|r| r.strip_prefix(name)).and_then(|r| r.strip_prefix('}'));
            let plain =
                rest.strip_prefix(name).filter(|r| !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'));
            braced.or(plain).map(|after| (name, after))
        });
        let Some((name, after)) = token else {
            out.push('$');
            continue;
        };
        let value = match name {
            "ORIGIN" => {
                origin.and_then(|p| p.canonicalize().ok()).and_then(|p| p.parent().map(|d| d.display().to_string()))
            }
            "PLATFORM" => platform(),
            _ => libc_folder(),
        };
        out.push_str(&value.ok_or(match name {
            "ORIGIN" => "$ORIGIN",
            "PLATFORM" => "$PLATFORM",
            _ => "$LIB",
        })?);
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

/// The kernel's platform string (the auxiliary vector's `AT_PLATFORM`), which ld.so's `$PLATFORM` is.
fn platform() -> Option<String> {
    // SAFETY: getauxval has no preconditions; AT_PLATFORM's value, when present, is the address
    // of a NUL-terminated string that lives as long as the process.
    let p = unsafe { libc::getauxval(libc::AT_PLATFORM) } as *const libc::c_char;
    // SAFETY: non-null, NUL-terminated (above).
    (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// ld.so's `$LIB`: the folder of the C library this process runs with, under `/` or `/usr`.
fn libc_folder() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let libc = maps.lines().filter_map(|l| l.split_whitespace().nth(5)).find(|p| p.ends_with("/libc.so.6"))?;
    let folder = Path::new(libc).parent()?;
    let folder = folder.strip_prefix("/usr").or_else(|_| folder.strip_prefix("/")).ok()?;
    Some(folder.display().to_string())
}

/// LD_PRELOAD entries, split as ld.so splits them: at spaces and colons only (glibc's
/// `handle_preload_list`), so a tab or a newline is part of a name, which then names no file.
fn preload_entries(value: &str) -> Vec<String> {
    value.split([' ', ':']).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn is_libaar(entry: &str) -> bool {
    elf::base_name(entry).starts_with("libaar.so")
}

/// The libaar.so installed with this `aar`: PREFIX/lib/libaar.so for PREFIX/bin/aar, or the
/// one beside it (a cargo target folder).
fn installed_libaar() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    let dir = exe.parent()?;
    [dir.join("../lib/libaar.so"), dir.join("libaar.so")].into_iter().find(|p| p.is_file())
}

/// LD_PRELOAD and the library file; returns the libaar.so to run the self-check with, and how it
/// was chosen.
fn check_preload(
    lib_arg: Option<&Path>,
    program: Option<&Program>,
    report: &mut Report,
) -> Option<(PathBuf, &'static str)> {
    let preload = std::env::var("LD_PRELOAD").unwrap_or_default();
    let entries: Vec<String> = preload_entries(&preload).into_iter().filter(|e| is_libaar(e)).collect();
    // A `--lib` of another name is not suggested: it may be no libaar.so at all (the
    // self-check tells).
    let suggestion = lib_arg
        .filter(|p| is_libaar(&p.to_string_lossy()))
        .map(Path::to_path_buf)
        .or_else(installed_libaar)
        .map(|p| p.canonicalize().unwrap_or(p).display().to_string())
        .unwrap_or_else(|| "/path/to/libaar.so".into());
    let mut from_preload = None;
    let origin = program.and_then(|p| p.executable.as_deref());
    // Each entry as the loader opens it: its tokens ($LIB, $PLATFORM, $ORIGIN) replaced.
    let entries: Vec<String> = entries
        .into_iter()
        .filter_map(|entry| match loader_expansion(&entry, origin) {
            Ok(file) if file == entry => Some(entry),
            Ok(file) => {
                report.ok("preload", format!("LD_PRELOAD names {entry}, which the loader opens as {file}"));
                Some(file)
            }
            Err(token) => {
                report.note(
                    "preload",
                    format!(
                        "LD_PRELOAD names {entry}, whose {token} the loader replaces for each program it starts: the \
                         file is not checked (give the program, aar doctor ./app, to check the one it would open)"
                    ),
                );
                None
            }
        })
        .collect();
    if entries.is_empty() && !preload_entries(&preload).iter().any(|e| is_libaar(e)) {
        report.problem(
            "preload",
            if preload.trim().is_empty() {
                "LD_PRELOAD is not set: programs started from this environment run without libaar.so".to_string()
            } else {
                format!(
                    "LD_PRELOAD (\"{}\") does not name libaar.so: programs started from this environment run without it",
                    preload.trim_matches(' ').escape_debug()
                )
            },
            format!(
                "module load aar (it sets LD_PRELOAD), or export LD_PRELOAD={suggestion}; for one launch only: \
                 srun --export=ALL,LD_PRELOAD={suggestion} ./app"
            ),
        );
    }
    // The libaar.so the loader would preload: the first entry it finds (a bare name it searches
    // for; a relative one is found from here). Entries it cannot open, it skips.
    let preloaded = entries.iter().find(|e| !e.contains('/') || Path::new(e).is_file()).cloned();
    for entry in &entries {
        if !entry.contains('/') {
            report.ok(
                "preload",
                format!("LD_PRELOAD names {entry} (no folder: the loader searches for it like a needed library)"),
            );
            from_preload.get_or_insert(PathBuf::from(entry));
        } else if Path::new(entry).is_file() && Path::new(entry).is_relative() {
            // The loader takes a relative name from the folder each program starts in, as
            // open(2) does: found from here, it is not from a job step run in another folder.
            let here = std::env::current_dir().map_or_else(|_| "this folder".to_string(), |d| d.display().to_string());
            let absolute: Vec<String> = preload_entries(&preload)
                .into_iter()
                .map(|e| match Path::new(&e).canonicalize() {
                    Ok(p) if is_libaar(&e) && Path::new(&e).is_relative() => p.display().to_string(),
                    _ => e,
                })
                .collect();
            report.warning(
                "preload",
                format!(
                    "LD_PRELOAD names {entry}, a relative path: it exists from here ({here}), but the loader looks \
                     for it from the folder each program starts in, so a program started in another folder (a \
                     batch script's cd, srun --chdir) runs without libaar.so"
                ),
                format!("export LD_PRELOAD={}", aar_record::folder::shell_word(&absolute.join(":"))),
            );
            from_preload.get_or_insert(PathBuf::from(entry));
        } else if Path::new(entry).is_file() {
            report.ok("preload", format!("LD_PRELOAD names {entry}, which exists"));
            from_preload.get_or_insert(PathBuf::from(entry));
        } else {
            // "module load aar again" does not mend this: a module loaded before its files moved
            // (an upgrade) cannot take its entry back, and loading keeps it (Lmod adds the new one
            // before it; Environment Modules takes the module as loaded). LD_PRELOAD without the
            // entries that do not exist does, with a libaar.so that does when none is left.
            let mut mended: Vec<String> = preload_entries(&preload)
                .into_iter()
                .filter(|e| {
                    let file = loader_expansion(e, origin).unwrap_or_else(|_| e.clone());
                    !(is_libaar(e) && file.contains('/') && !Path::new(&file).is_file())
                })
                .collect();
            if !mended.iter().any(|e| is_libaar(e)) {
                mended.insert(0, suggestion.clone());
            }
            let mended = mended.join(":");
            let mended = aar_record::folder::shell_word(&mended);
            // A folder of that name (a path cut short, a prefix given for the file) is no library
            // either: the loader skips it the same way.
            let (what, fix) = if Path::new(entry).is_dir() {
                ("is a folder, not a library", format!("export LD_PRELOAD={mended}"))
            } else if entry.contains(char::is_control) {
                (
                    "does not exist",
                    format!(
                        "export LD_PRELOAD={mended} (the loader separates its entries by spaces and colons only: a \
                         tab or a newline is part of a name)"
                    ),
                )
            } else {
                (
                    "does not exist",
                    format!(
                        "export LD_PRELOAD={mended} (a module loaded before its files moved or were removed, as by an \
                         upgrade, cannot take its entry back, and module load aar keeps it: a new login shell starts \
                         clean)"
                    ),
                )
            };
            match &preloaded {
                // Another libaar.so named there is preloaded: the job runs with it, and each of its
                // processes prints the loader's error about this one.
                Some(other) => report.warning(
                    "preload",
                    format!(
                        "LD_PRELOAD names {}, which {what}: the loader skips it, with an error on the standard \
                         error of every process it starts, and preloads {other}, which LD_PRELOAD names too",
                        entry.escape_debug()
                    ),
                    fix,
                ),
                None => report.problem(
                    "preload",
                    format!(
                        "LD_PRELOAD names {}, which {what}: the loader skips it (with an error) and the program \
                         runs without libaar.so",
                        entry.escape_debug()
                    ),
                    fix,
                ),
            }
        }
    }
    // The loader loads one file once, whatever it is called: distinct files are distinct copies.
    let mut files: Vec<PathBuf> = Vec::new();
    for file in entries.iter().filter_map(|e| Path::new(e).canonicalize().ok()).filter(|p| p.is_file()) {
        if !files.contains(&file) {
            files.push(file);
        }
    }
    if files.len() > 1 {
        let list: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        report.warning(
            "preload",
            format!(
                "LD_PRELOAD names {} copies of libaar.so ({}): the first routes the calls, the others forward them \
                 untouched (each says so once in the job)",
                files.len(),
                list.join(", ")
            ),
            "Keep one: set LD_PRELOAD to one of them, or unset it and module load aar.",
        );
    }
    let (path, how) = match (lib_arg, from_preload, installed_libaar()) {
        (Some(p), _, _) => (p.to_path_buf(), "given with --lib"),
        (None, Some(p), _) => (p, "from LD_PRELOAD"),
        (None, None, Some(p)) => (p, "installed with this aar"),
        (None, None, None) => {
            report.problem(
                "libaar.so",
                "no libaar.so to check: none in LD_PRELOAD, none given with --lib, none installed beside this aar",
                "Give one with --lib PATH, or module load aar.",
            );
            return None;
        }
    };
    if let (Some(exe), Ok(lib)) = (program.and_then(|p| p.elf.as_ref()), elf::read(&path)) {
        if !exe.compatible(&lib) {
            report.problem(
                "libaar.so",
                format!(
                    "{} is {} but the program is {}: the loader will not preload it into this program",
                    path.display(),
                    lib.describe(),
                    exe.describe()
                ),
                "Use the libaar.so built for the program's machine.",
            );
        }
    }
    Some((path, how))
}

/// Verdicts on PAPI and each counter event, from the self-check document.
fn check_counters(doc: &Value, ugni_loaded: bool, report: &mut Report) {
    let papi = &doc["papi"];
    if papi["checked"] == false {
        report.note("PAPI", papi["skipped"].as_str().unwrap_or("not checked").to_string());
        return;
    }
    let settings = &doc["settings"];
    let auto = uses_automatic(settings);
    let serious = |r: &mut Report, topic, text: String, fix: &str| {
        if auto {
            r.problem(topic, text, fix)
        } else {
            r.warning(topic, format!("{text} (automatic routing is not in use, so routing is unaffected; records carry no counter windows)"), fix)
        }
    };
    let fallback = format!(
        "automatic routing then uses {} (fixed) for every adaptive message",
        settings["engine"]["low_latency_mode"].as_str().unwrap_or("ADAPTIVE3")
    );
    match (papi["version"].as_str(), papi["path"].as_str()) {
        (Some(v), Some(p)) => report.ok(
            "PAPI",
            format!(
                "PAPI {v} loaded from {p}{}",
                papi["loaded_as"].as_str().map(|n| format!(" (as {n})")).unwrap_or_default()
            ),
        ),
        _ => {
            // Where AAR_PAPI_LIBRARY named the library, it is what failed: "set it" would not help.
            let fix = match given(doc, "AAR_PAPI_LIBRARY") {
                Some(value) => format!(
                    "Correct AAR_PAPI_LIBRARY (it names {value}) to the path of a libpapi.so that loads here, or \
                     unset it to load the libpapi.so the loader finds (module load papi, on a Cray)"
                ),
                None => "module load papi (on a Cray), or set AAR_PAPI_LIBRARY to the path of libpapi.so".to_string(),
            };
            serious(
                report,
                "PAPI",
                format!("aar: {}; {fallback}", papi["error"].as_str().unwrap_or("PAPI could not be loaded")),
                &fix,
            )
        }
    }
    let loaded = papi["path"].is_string();
    // The events checked are AAR_PAPI_EVENTS's where it was given and taken, else the Aries defaults.
    let events_given = given(doc, "AAR_PAPI_EVENTS").is_some();
    let events_set = events_given && !warned(doc).contains(&"AAR_PAPI_EVENTS");
    let mut missing_required = false;
    for event in papi["events"].as_array().into_iter().flatten() {
        let name = event["name"].as_str().unwrap_or("?");
        let role = event["role"].as_str().unwrap_or("?");
        let required = event["required"] != false;
        match event["exists"].as_bool() {
            Some(true) => report.ok("event", format!("{role}: {name}")),
            Some(false) => {
                let detail = event["detail"].as_str().unwrap_or("");
                let text = format!("{role}: {name} does not exist ({detail})");
                let is_sde = name.starts_with("sde:::");
                let fix = if is_sde && !ugni_loaded {
                    "Check with a dynamically linked PROGRAM that links the libugni registering these events (the emulator's \
                     sde:::aries:: counters exist only in a process that loaded it)."
                        .to_string()
                } else if !events_set {
                    // The defaults are what is missing: "unset it" would change nothing.
                    format!(
                        "These are the Aries defaults ({}), which exist on the compute nodes of a Cray XC only: run \
                         this check there (srun -n 1 aar doctor ./app, or aprun -n 1), with the PAPI module loaded; \
                         elsewhere set AAR_PAPI_EVENTS to events that exist (papi_native_avail lists them).",
                        if events_given {
                            "AAR_PAPI_EVENTS was not taken: see its warning"
                        } else if doc["variables_set"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|v| v["name"] == "AAR_PAPI_EVENTS")
                        {
                            "AAR_PAPI_EVENTS is empty, which counts as unset"
                        } else {
                            "AAR_PAPI_EVENTS is unset"
                        }
                    )
                } else {
                    "Correct AAR_PAPI_EVENTS (papi_native_avail lists the events here; on a Cray XC look for AR_NIC_*), or unset it for the Aries defaults."
                        .to_string()
                };
                if !required {
                    report.warning(
                        "event",
                        format!(
                            "{text}; it is optional: stall ratios are computed without subtracting response stalls"
                        ),
                        fix,
                    );
                } else if is_sde && !ugni_loaded {
                    missing_required = true;
                    report.warning("event", text, fix);
                } else {
                    missing_required = true;
                    serious(report, "event", text, &fix);
                }
            }
            None if loaded => report.note(
                "event",
                format!("{role}: {name} could not be checked ({})", event["detail"].as_str().unwrap_or("")),
            ),
            None => {}
        }
    }
    if loaded {
        match papi["error"].as_str() {
            None => {
                if !missing_required {
                    report.ok(
                        "counters",
                        "libaar.so's own PAPI opening succeeded (its event set started, then was given back)",
                    );
                }
            }
            Some(why) if !missing_required => serious(
                report,
                "counters",
                format!("libaar.so's own PAPI opening fails: aar: {why}; {fallback}"),
                "Fix the event named above (AAR_PAPI_EVENTS), or choose a mode with AAR_MODE.",
            ),
            Some(why) => report
                .note("counters", format!("libaar.so's own PAPI opening fails as expected: aar: {why}; {fallback}")),
        }
    }
    // libaar.so's notes on its opening: an optional event it could not add. One the events above
    // found missing has its warning and fix there already; one that exists but was refused (of
    // another PAPI component than the others, say) is said here.
    let missing: Vec<&str> = papi["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["exists"] == false)
        .filter_map(|e| e["name"].as_str())
        .collect();
    for n in papi["notes"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if missing.iter().any(|name| n.contains(&format!(" {name} "))) {
            continue;
        }
        report.warning(
            "counters",
            format!("aar: {n}"),
            "Name in AAR_PAPI_EVENTS an optional fifth event that PAPI counts with the four others (one of their \
             component: papi_native_avail lists them), or leave it out.",
        );
    }
}

/// The value of the `AAR_*` variable `name` as libaar.so takes it: set, and neither empty nor
/// blank (which count as unset, the default applying).
fn given<'a>(doc: &'a Value, name: &str) -> Option<&'a str> {
    doc["variables_set"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == name)
        .and_then(|v| v["value"].as_str())
        .filter(|v| !v.trim().is_empty())
}

/// The variables the library warned of (their values were not taken).
fn warned(doc: &Value) -> Vec<&str> {
    let refused = doc["warnings"].as_array().into_iter().flatten().filter(|w| no_effect(w).is_empty());
    refused.filter_map(|w| w["variable"].as_str()).collect()
}

/// The settings a warning names as taken but without effect under the run's policies (the
/// library's note of them; none in a warning of a bad value, or from a libaar.so before the note).
fn no_effect(warning: &Value) -> Vec<&str> {
    warning["no_effect"].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

/// Whether the automatic policy `name` (`auto` or `steady`), which needs the counters and
/// `steady` the node table, is in force in any iteration.
fn uses_policy(settings: &Value, name: &str) -> bool {
    settings["engine"]["policy"]["kind"] == name || ab_policies(settings).iter().any(|p| p == name)
}

/// Whether automatic routing (which needs the counters) is in force in any iteration.
fn uses_automatic(settings: &Value) -> bool {
    uses_policy(settings, "auto") || uses_policy(settings, "steady")
}

/// The A/B policies (`AAR_AB`, shown by the library as the list users write), if any.
fn ab_policies(settings: &Value) -> Vec<String> {
    settings["ab"].as_str().map(|l| l.split(',').map(|p| p.trim().to_string()).collect()).unwrap_or_default()
}

fn check_settings(doc: &Value, report: &mut Report) {
    let settings = &doc["settings"];
    let warnings = doc["warnings"].as_array().cloned().unwrap_or_default();
    if settings["disabled"] == true {
        report.warning(
            "setting",
            "AAR_DISABLE is set: libaar.so forwards every call untouched, reads nothing, writes nothing",
            "unset AAR_DISABLE",
        );
    }
    for w in &warnings {
        // The note of settings without effect says itself how to make them count.
        let fix = if no_effect(w).is_empty() {
            format!("Fix or unset {}.", w["variable"].as_str().unwrap_or("the variable"))
        } else {
            String::new()
        };
        report.warning("setting", format!("aar: {}", w["message"].as_str().unwrap_or("")), fix);
    }
    for unknown in doc["unknown_variables"].as_array().into_iter().flatten() {
        // aar-selfcheck/2 gives the library's own warning; /1 (an older libaar.so) only the name.
        let (name, warning) = match unknown.as_str() {
            Some(name) => (name, format!("{name} is set but libaar.so does not read it (a typo?)")),
            None => {
                (unknown["name"].as_str().unwrap_or("?"), unknown["warning"].as_str().unwrap_or_default().to_string())
            }
        };
        report.warning("setting", format!("aar: {warning}"), format!("Correct the name of {name}, or unset it."));
    }
    if let Some(dir) = settings["output_dir"].as_str() {
        match aar_record::folder::check(dir, can_create_in) {
            None => report.ok("records", format!("AAR_OUTPUT_DIR={dir} is a writable folder")),
            Some(u) => {
                report.records_unusable = true;
                report.warning(
                    "records",
                    format!("AAR_OUTPUT_DIR={dir} {}: no record will be written", u.problem()),
                    u.fix().to_string(),
                )
            }
        }
        warn_if_relative("records", "AAR_OUTPUT_DIR", dir, "its records", report);
    }
    if warnings.is_empty()
        && doc["unknown_variables"].as_array().is_none_or(|u| u.is_empty())
        && settings["disabled"] != true
    {
        let set = doc["variables_set"].as_array().map_or(0, Vec::len);
        report.ok("settings", format!("{} set, no warning", count(set as u64, "AAR_* variable", "AAR_* variables")));
    }
}

/// Files in one record folder from which the doctor notes them. Each rank that writes records
/// makes its summary record in `AAR_OUTPUT_DIR` at exit (under a temporary name, then linked to
/// its own) and, under `AAR_AB`, its iteration record when its first iteration ends: every rank at about the
/// same moment, all in one folder. On Lustre a folder is kept by one metadata target, which
/// serialises the creations in it, for every user of the file system at once; sites ask for
/// subfolders from hundreds of files on (NASA's Lustre guidance), and a Cray XC job of 1,000
/// nodes × 64 ranks would make 64,000 to 128,000. 4,096 lets a job of 64 such nodes (2,048 ranks
/// under `AAR_AB`) write every rank's records without a word, which a few seconds of one
/// metadata target take, and notes the jobs, and the folders grown over many jobs, whose files
/// are a load on the file system, and slow for `aar report`, which reads the whole folder.
const MANY_RECORD_FILES: u64 = 4096;

/// Where the number of ranks the doctor counts the job's files by came from.
enum RanksFrom {
    /// `--ranks N`.
    Option,
    /// The launch line's option, as written (`srun -n 4`).
    Launcher(String),
    /// The launcher's variable libaar.so reads it from (the self-check's `job_ranks`).
    Variable(String),
}

/// The largest `PBS_NODEFILE` read: 64 MiB, a line of 64 bytes for each of a million processors.
const NODE_FILE_MAX: u64 = 64 << 20;

/// The number of nodes of the job, as its batch system gives it to a batch script and its steps.
struct JobNodes {
    nodes: u32,
    /// The variable it came from.
    from: &'static str,
}

impl JobNodes {
    /// Slurm: `SLURM_JOB_NUM_NODES`, or `SLURM_NNODES`, its older name (sbatch's manual gives both
    /// as the number of nodes of the job's allocation; a step keeps the first as the job's). PBS
    /// (PBS Pro and OpenPBS, Torque): the nodes named in the file that `PBS_NODEFILE` names, which
    /// their qsub manuals give as the list of the nodes assigned to the job; a node may be named
    /// there more than once, so distinct names are counted. Those manuals give no variable with a
    /// number of nodes or of ranks (`PBS_NP` and `PBS_NUM_NODES` are not among them), so none is
    /// read; under ALPS the ranks are aprun's `-n`, which the batch system does not know. A file
    /// that cannot be read gives no number: under aprun, on a compute node, the file may be on the
    /// service node only.
    fn find() -> Option<JobNodes> {
        let number = |v: &str| std::env::var(v).ok().and_then(|v| v.trim().parse::<u32>().ok()).filter(|&n| n > 0);
        for from in ["SLURM_JOB_NUM_NODES", "SLURM_NNODES"] {
            if let Some(nodes) = number(from) {
                return Some(JobNodes { nodes, from });
            }
        }
        // Read as libaar.so reads a node table: a FIFO there would block the doctor at its opening,
        // and a device never end.
        let file = aar_record::text_file::read(Path::new(&std::env::var_os("PBS_NODEFILE")?), NODE_FILE_MAX).ok()?;
        let names: HashSet<&str> = file.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let nodes = u32::try_from(names.len()).ok().filter(|&n| n > 0)?;
        Some(JobNodes { nodes, from: "PBS_NODEFILE" })
    }

    /// Where the number came from, for the text: `SLURM_JOB_NUM_NODES=4`, `4 nodes in PBS_NODEFILE`.
    fn source(&self) -> String {
        if self.pbs() {
            format!("{} in PBS_NODEFILE", count(self.nodes, "node", "nodes"))
        } else {
            format!("{}={}", self.from, self.nodes)
        }
    }

    /// A PBS job, whose steps aprun starts (on a Cray).
    fn pbs(&self) -> bool {
        self.from == "PBS_NODEFILE"
    }
}

/// The number of ranks the job will run, as the file count takes it: `--ranks`, else the
/// launcher's as libaar.so reads it (`PMI_SIZE`, `OMPI_COMM_WORLD_SIZE` or `SLURM_NTASKS`, the
/// first set).
struct JobRanks {
    ranks: u32,
    from: RanksFrom,
    /// The launcher's count is 1 in a job of several nodes ([`JobNodes`]): the doctor runs as a
    /// one-task step (`srun -n 1`, which sets `SLURM_NTASKS` and `SLURM_STEP_NUM_TASKS` to the
    /// step's 1; `aprun -n 1`), not as the job's ranks will.
    one_task_step: bool,
}

impl JobRanks {
    fn find(
        option: Option<u32>,
        launched: Option<(u32, String)>,
        doc: Option<&Value>,
        nodes: Option<&JobNodes>,
    ) -> Option<JobRanks> {
        if let Some(ranks) = option {
            return Some(JobRanks { ranks, from: RanksFrom::Option, one_task_step: false });
        }
        if let Some((ranks, written)) = launched {
            return Some(JobRanks { ranks, from: RanksFrom::Launcher(written), one_task_step: false });
        }
        let found = &doc?["job_ranks"];
        let ranks = found["ranks"].as_u64().and_then(|n| u32::try_from(n).ok())?;
        let variable = found["from"].as_str().unwrap_or("the launcher").to_string();
        let one_task_step = ranks == 1 && nodes.is_some_and(|n| n.nodes > 1);
        Some(JobRanks { ranks, from: RanksFrom::Variable(variable), one_task_step })
    }

    /// Where the number came from, for the text: `--ranks 8`, `SLURM_NTASKS=8`.
    fn source(&self) -> String {
        match &self.from {
            RanksFrom::Option => format!("--ranks {}", self.ranks),
            RanksFrom::Variable(v) => format!("{v}={}", self.ranks),
            RanksFrom::Launcher(written) => written.clone(),
        }
    }
}

/// How many files the job would make in `AAR_OUTPUT_DIR` (ranks that write records, from
/// `--ranks` or the launcher's number of ranks, and `AAR_OUTPUT_RANKS`, × files per rank), and
/// how many the folder holds already (counted up to [`MANY_RECORD_FILES`]): `ok` with the count
/// and where the number of ranks came from; from [`MANY_RECORD_FILES`] on, a note with the
/// numbers, the folder and the fix (a folder per job; a sample of ranks, and what the report then
/// measures). A count that is a one-task step's in a job of several nodes is a note that says so,
/// with `--ranks`; in a job of several nodes without a number of ranks (a batch script submitted
/// without `--ntasks`, a PBS job), a note says the files were not counted, and how to have them
/// counted.
fn check_record_count(doc: &Value, ranks: Option<&JobRanks>, nodes: Option<&JobNodes>, report: &mut Report) {
    let settings = &doc["settings"];
    let Some(dir) = settings["output_dir"].as_str() else { return };
    // A folder that is not there is check_settings's warning, with its fix.
    if settings["disabled"] == true || !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return;
    }
    let sample = settings["output_ranks"].as_str().and_then(|t| t.parse::<RankSet>().ok());
    let ab = settings["ab"].is_string();
    let per_rank: u64 = if ab { 2 } else { 1 };
    let writers = ranks.map(|r| sample.as_ref().map_or(r.ranks, |s| s.count_below(r.ranks)));
    let new = writers.map_or(0, |w| u64::from(w) * per_rank);
    let held = std::fs::read_dir(dir).map_or(0, |d| d.take(MANY_RECORD_FILES as usize).count() as u64);
    let shown = dir.escape_debug();
    let job_ranks = |r: &JobRanks, w: u32| {
        format!(
            "{}{}",
            count(r.ranks, "rank", "ranks"),
            if w == r.ranks {
                format!(" ({})", r.source())
            } else {
                format!(" ({}), of which AAR_OUTPUT_RANKS names {w},", r.source())
            },
        )
    };
    let pbs = nodes.is_some_and(JobNodes::pbs);
    match (ranks, writers) {
        (Some(r), Some(_)) if r.one_task_step => report.add(
            "records",
            Verdict::Note,
            format!(
                "the number of ranks here is this job step's 1 ({}), in a job of several nodes \
                 ({}): the files the job would make in AAR_OUTPUT_DIR={shown} are counted for 1 \
                 rank ({}), not for the job's ranks",
                r.source(),
                nodes.map(JobNodes::source).unwrap_or_default(),
                count(new, "file", "files"),
            ),
            Some(if pbs {
                "Give the job's number of ranks (its aprun -n): aprun -n 1 aar doctor --ranks N ...".to_string()
            } else {
                "Give the job's number of ranks: srun -n 1 aar doctor --ranks N ... (in the batch script, \
                 \"$SLURM_NTASKS\" is the job's where it was submitted with --ntasks)."
                    .to_string()
            }),
        ),
        (None, _) if nodes.is_some_and(|n| n.nodes > 1) => report.skipped(
            "records",
            format!(
                "the files the job would make in AAR_OUTPUT_DIR={shown} were not counted: the number of ranks is \
                 unknown (no --ranks, and libaar.so finds none in the environment) in a job of several nodes ({})",
                nodes.map(JobNodes::source).unwrap_or_default(),
            ),
            if pbs {
                "Give the job's number of ranks (its aprun -n): aar doctor --ranks N ..."
            } else {
                "Give the job's number of ranks: aar doctor --ranks N ..., or submit the job with --ntasks N \
                 (the batch script's SLURM_NTASKS is then the job's)."
            },
        ),
        (Some(r), Some(w)) if new <= MANY_RECORD_FILES => report.ok(
            "records",
            format!(
                "this job's {} would make {} in AAR_OUTPUT_DIR={shown}",
                job_ranks(r, w),
                count(new, "file", "files")
            ),
        ),
        _ => {}
    }
    if new <= MANY_RECORD_FILES && held < MANY_RECORD_FILES {
        return;
    }
    let what = if ab {
        "an iteration record early in the run and a summary record at exit, each kind all at about the same moment"
    } else {
        "a summary record, all at exit; one more each if the program marks iterations"
    };
    let mut text = match (ranks, writers) {
        (Some(r), Some(w)) if new > MANY_RECORD_FILES => format!(
            "this job's {} would make {new} files in AAR_OUTPUT_DIR={shown} ({per_rank} per rank: {what}): more \
             than {MANY_RECORD_FILES} creations in one folder at once load the metadata server of a parallel file \
             system (Lustre), which every user shares",
            job_ranks(r, w),
        ),
        _ => format!(
            "AAR_OUTPUT_DIR={shown} holds {MANY_RECORD_FILES} files or more already (earlier jobs' records, when \
             every job writes there): each job adds its own, and aar report reads the whole folder"
        ),
    };
    if new > MANY_RECORD_FILES && held >= MANY_RECORD_FILES {
        text.push_str(&format!(", beside the {MANY_RECORD_FILES} or more it holds already"));
    }
    let job = if std::env::var_os("SLURM_JOB_ID").is_none() && std::env::var_os("PBS_JOBID").is_some() {
        "$PBS_JOBID"
    } else {
        "$SLURM_JOB_ID"
    };
    let mut fix = format!(
        "Give each job a folder of its own, made before the job step starts: export \
         AAR_OUTPUT_DIR={}/{job}; mkdir -p \"$AAR_OUTPUT_DIR\" (the folder no longer grows from job to job, and \
         aar report reads one job)",
        aar_record::folder::shell_word(dir)
    );
    if new > MANY_RECORD_FILES {
        let k = MANY_RECORD_FILES / per_rank;
        fix.push_str(&format!(
            ". Fewer files: AAR_OUTPUT_RANKS=0:{} lets {k} ranks write ({} files); aar report then takes each \
             iteration's time as the slowest of those {k} ranks', not of all {}: a slower rank outside the \
             sample is not seen (ranks spread over the nodes, a range per node, see more of the job)",
            k - 1,
            k * per_rank,
            ranks.map_or(0, |r| r.ranks)
        ));
    }
    report.add("records", Verdict::Note, text, Some(fix));
}

/// A relative `variable` (a path libaar.so writes `what` under): each process takes it from the
/// folder it is in when libaar.so starts, so the checks here, made from this folder, hold for a
/// job started here only (as for a relative LD_PRELOAD entry).
fn warn_if_relative(check: &'static str, variable: &str, value: &str, what: &str, report: &mut Report) {
    if !Path::new(value).is_relative() {
        return;
    }
    let Ok(here) = std::env::current_dir() else { return };
    let absolute = here.join(value);
    let absolute = absolute.to_string_lossy();
    report.warning(
        check,
        format!(
            "{variable}={} is a relative path: each process takes it from the folder it is in when libaar.so \
             starts (from here, {}), so a program started in another folder (a batch script's cd, srun --chdir) \
             writes {what} under that folder, or not at all",
            aar_record::folder::shell_word(value),
            absolute
        ),
        format!("export {variable}={}", aar_record::folder::shell_word(&absolute)),
    );
}

/// The decision trace (`AAR_TRACE`), which libaar.so creates at start-up, never over a file that
/// is there and never through a symbolic link: a name without `%` is created here (and removed) as
/// the job would create it; a pattern with `%r` or `%p` names a file per process, so its folder
/// is checked (where it has no `%` of its own). The pattern itself (an unknown `%x`) is the
/// library's to judge.
fn check_trace(doc: &Value, report: &mut Report) {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(pattern) = doc["settings"]["trace"].as_str() else { return };
    warn_if_relative("trace", "AAR_TRACE", pattern, "its decision trace", report);
    let shown = format!("AAR_TRACE={}", aar_record::folder::shell_word(pattern));
    let fix = "Point AAR_TRACE at a writable folder and a name that does not exist yet (add %p for the pid, %r for \
               the rank).";
    if !pattern.contains('%') {
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(pattern)
            .and_then(|_| std::fs::remove_file(pattern));
        match created {
            Ok(()) => report.ok("trace", format!("{shown}: the decision trace can be created there")),
            Err(e) => {
                let folder = Path::new(pattern).parent().filter(|f| !f.as_os_str().is_empty());
                let fix = match (e.kind(), folder) {
                    (std::io::ErrorKind::AlreadyExists, _) => format!(
                        "A file of that name is already there (an earlier run's?), and libaar.so never overwrites \
                         one: remove it, or add %p (the pid) to the name, e.g. AAR_TRACE={}",
                        aar_record::folder::shell_word(&format!("{pattern}.%p"))
                    ),
                    (std::io::ErrorKind::NotFound, Some(f)) if !f.exists() => {
                        format!("mkdir -p {}", aar_record::folder::shell_word(&f.to_string_lossy()))
                    }
                    _ => fix.to_string(),
                };
                report.warning(
                    "trace",
                    format!("{shown}: cannot create {pattern} ({e}): no decision trace will be written"),
                    fix,
                );
            }
        }
        return;
    }
    let folder = match Path::new(pattern).parent() {
        Some(f) if f.as_os_str().is_empty() => Path::new("."),
        Some(f) => f,
        None => return,
    };
    if folder.to_string_lossy().contains('%') {
        return;
    }
    let usable = match std::fs::metadata(folder) {
        Ok(m) if !m.is_dir() => Err(format!("{}, where it would go, is not a folder", folder.display())),
        Ok(_) => {
            can_create_in(folder).map_err(|e| format!("its folder {} cannot be written in ({e})", folder.display()))
        }
        Err(e) => Err(format!("its folder {} cannot be used ({e})", folder.display())),
    };
    match usable {
        Ok(()) => report.ok("trace", format!("{shown}: its folder {} is writable", folder.display())),
        Err(why) => report.warning(
            "trace",
            format!("{shown}: {why}: no decision trace will be written"),
            if folder.exists() {
                fix.to_string()
            } else {
                format!("mkdir -p {}", aar_record::folder::shell_word(&folder.to_string_lossy()))
            },
        ),
    }
}

/// The node table `steady` keeps its state per destination class by (`AAR_TOPOLOGY`): read and
/// checked against this node as the library does at initialisation.
fn check_topology(doc: &Value, report: &mut Report) {
    // An older libaar.so says nothing of it.
    let Some(t) = doc.get("topology") else { return };
    let steady = uses_policy(&doc["settings"], "steady");
    if t.is_null() {
        if steady {
            report.note(
                "topology",
                "no node table (AAR_TOPOLOGY is unset): steady keeps one state for every destination \
                 (one class) instead of one per router, group and other group. Set AAR_TOPOLOGY to a file of \
                 NIC GROUP ROUTER lines or xtprocadmin output (docs/node-reader.md)",
            );
        }
        return;
    }
    let path = t["path"].as_str().unwrap_or("?");
    let shown = match t["from"].as_str() {
        Some("AAR_TOPOLOGY") | None => format!("AAR_TOPOLOGY={path}"),
        Some(from) => format!("{from} ({path})"),
    };
    if let Some(w) = t["warning"].as_str() {
        report.warning("topology", format!("aar: {w}"), format!("Fix the table {shown} names, or unset it."));
        return;
    }
    let (nodes, named) = (t["nodes"].as_u64().unwrap_or(0), t["xtprocadmin_nodes"].as_u64().unwrap_or(0));
    let mut text = format!("{shown}: {}", count(nodes, "node", "nodes"));
    if named > 0 {
        text.push_str(&format!(" ({named} from xtprocadmin lines, keyed by NID)"));
        match (t["node"]["nid"].as_u64(), t["nic_address"].as_u64()) {
            (Some(nid), Some(nic)) => text.push_str(&format!(
                "; this node's NID {nid} (/proc/cray_xt) is its NIC address {nic:#x} (PMI_GNI_LOC_ADDR)"
            )),
            (Some(nid), None) => text.push_str(&format!(
                "; this node (NID {nid}) agrees with the table, but PMI_GNI_LOC_ADDR is unset here, so that NIDs \
                 are NIC addresses is checked only in the job, where libaar.so warns if they are not"
            )),
            (None, _) => text.push_str(
                "; this is not a Cray XC node (no /proc/cray_xt), so the table's NIDs could not be checked here: \
                 libaar.so checks them on each compute node",
            ),
        }
    }
    if steady {
        report.ok("topology", text);
    } else {
        report.note("topology", format!("{text}; only steady uses it, and it is not in force"));
    }
}

/// The table of DMAPP routing values libaar.so uses, and where it comes from.
fn check_dmapp_table(doc: &Value, report: &mut Report) {
    let d = &doc["dmapp"];
    // An older libaar.so says nothing of DMAPP.
    let (Some(table), Some(source)) = (d["routing_table"].as_str(), d["table_source"].as_str()) else { return };
    if d["assumed"] == true {
        report.note(
            "DMAPP",
            format!(
                "routing table {table}, {source}: DMAPP's routing values are not public and differ between releases; \
                 libaar.so checks every attribute it changes and stops steering DMAPP, with one warning, where this \
                 libdmapp disagrees. For the site's values, build aar with AAR_DMAPP_H=/path/to/dmapp.h (or with \
                 cray-dmapp loaded), or set AAR_DMAPP_ROUTING"
            ),
        );
    } else {
        report.ok("DMAPP", format!("routing table {table}, from {source}"));
    }
}

/// `MPICH_GNI_ROUTING_MODE`, the routing Cray MPICH asks for on its own posts: libaar.so routes
/// adaptive requests only, so a non-adaptive one leaves all of MPI's traffic to MPICH.
fn check_mpich_routing(doc: &Value, report: &mut Report) {
    let m = &doc["mpich_gni_routing_mode"];
    let Some(value) = m["value"].as_str() else { return };
    match m["adaptive"].as_str() {
        Some(mode) => report.note(
            "MPICH",
            format!(
                "MPICH_GNI_ROUTING_MODE={value}: Cray MPICH's posts ask for {mode}, an adaptive mode, which \
                 libaar.so replaces by its decision on every post it routes"
            ),
        ),
        None => report.warning(
            "MPICH",
            format!(
                "MPICH_GNI_ROUTING_MODE={value} is not an adaptive mode: libaar.so changes adaptive requests only, \
                 so it will route none of Cray MPICH's posts (their routing stays {value})"
            ),
            "Unset MPICH_GNI_ROUTING_MODE, or set one of ADAPTIVE_0 to ADAPTIVE_3.",
        ),
    }
}

/// Whether the decider's lock can be biased to the thread that posts, as libaar.so finds out at
/// initialisation: the kernel and the seccomp filter of the node the doctor runs on (a login
/// node's may differ from the compute nodes').
/// The file size limit (`ulimit -f`, which batch systems pass on to the job): the library's
/// records, iteration rows and trace stop at it (with a warning), as the application's files do.
fn check_file_size_limit(doc: &Value, report: &mut Report) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid rlimit to write to.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return;
    }
    let text = format!(
        "files are limited to {} bytes here (ulimit -f): the library's records, iteration rows and trace stop \
         there, with a warning, as the program's own files do",
        limit.rlim_cur
    );
    // As libaar.so takes them: an empty or blank AAR_OUTPUT_DIR or AAR_TRACE is unset.
    let writes = ["output_dir", "trace"].iter().any(|k| doc["settings"][k].is_string());
    if writes {
        report.warning("files", text, "Raise it in the batch script (ulimit -f unlimited) if they may grow past it.");
    } else {
        report.note("files", text);
    }
}

fn check_decider_lock(doc: &Value, report: &mut Report) {
    // An older libaar.so says nothing of it.
    let Some(lock) = doc.get("decider_lock") else { return };
    if lock["can_be_biased"] == true {
        report.ok(
            "lock",
            "the decider's lock can be biased to the thread that posts here (membarrier(2)): its decisions \
             take no atomic exchange",
        );
    } else {
        report.note(
            "lock",
            format!(
                "the decider's lock cannot be biased here: {}. Every decision takes it with one atomic exchange, \
                 a few ns more per decision; routing is the same",
                lock["because"].as_str().unwrap_or("no reason given")
            ),
        );
    }
}

/// The settings in effect, in words: what was set, and the defaults that matter.
/// `records_unusable`: the records check found that AAR_OUTPUT_DIR cannot take records (the
/// folder is probed once, there: a file written and removed).
fn settings_lines(doc: &Value, records_unusable: bool) -> Vec<String> {
    let s = &doc["settings"];
    let e = &s["engine"];
    let warned = warned(doc);
    let without_effect: Vec<&str> = doc["warnings"].as_array().into_iter().flatten().flat_map(no_effect).collect();
    let mut lines: Vec<String> = doc["variables_set"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let name = v["name"].as_str().unwrap_or("?");
            let value = v["value"].as_str().unwrap_or("");
            let tail = if warned.contains(&name) {
                "   (not taken: see the warning above)"
            } else if without_effect.contains(&name) {
                "   (no effect under this run's policies: see the warning above)"
            } else if value.trim().is_empty() {
                "   (empty: as if unset, the default applies)"
            } else {
                ""
            };
            format!("{name}={value}{tail}")
        })
        .collect();
    if lines.is_empty() {
        lines.push("no AAR_* variable is set: every default applies".into());
    }
    let ab = ab_policies(s);
    let policy = if ab.is_empty() {
        format!("policy {}", policy_name(&e["policy"]))
    } else {
        format!(
            "A/B experiment: {} alternated per iteration, order {}, iterations marked by {}",
            ab.join(","),
            s["ab_order"].as_str().unwrap_or("?"),
            match s["ab_boundary"].as_str() {
                Some("markers") => "the program's aar_iteration_begin/end markers".to_string(),
                Some(b) => format!("every {b} call"),
                None => "?".to_string(),
            }
        )
    };
    let events = match s["papi_events"].as_array() {
        Some(ev) if given(doc, "AAR_PAPI_EVENTS").is_some() && !warned.contains(&"AAR_PAPI_EVENTS") => {
            format!("{} PAPI events from AAR_PAPI_EVENTS", ev.len())
        }
        Some(ev) => format!("the {} default Aries PAPI events", ev.len()),
        None => "PAPI events ?".into(),
    };
    let records = match s["output_dir"].as_str() {
        // The warning above says why; "records in" a folder that takes none would be untrue.
        Some(d) if records_unusable => format!("no records (AAR_OUTPUT_DIR={d} cannot be used)"),
        Some(d) => format!("records in {d}"),
        None => "no records (AAR_OUTPUT_DIR unset)".into(),
    };
    lines.push(format!(
        "in effect: {policy}; threshold {} B; counter window {} decisions (steady: {}); High Bias side {}, \
         Adaptive side {}; latency unit {}; {events}; {records}{}",
        e["threshold_bytes"],
        e["window_decisions"],
        e["steady"]["window_decisions"],
        e["low_latency_mode"].as_str().unwrap_or("?"),
        e["low_stall_mode"].as_str().unwrap_or("?"),
        e["latency_unit"].as_str().unwrap_or("?"),
        if s["disabled"] == true { "; DISABLED (AAR_DISABLE)" } else { "" }
    ));
    lines
}

fn policy_name(p: &Value) -> String {
    match (p["kind"].as_str(), p["mode"].as_str()) {
        (Some("fixed"), Some(mode)) => mode.to_string(),
        (Some(kind), _) => kind.to_string(),
        _ => p.to_string(),
    }
}

fn summary_line(report: &Report, code: i32) -> String {
    let (p, w) = (report.count(Verdict::Problem), report.count(Verdict::Warning));
    match code {
        EXIT_PROBLEM => format!(
            "{}{}: libaar.so will not work for this program as things stand (exit {code})",
            count(p as u64, "problem", "problems"),
            if w > 0 { format!(", {}", count(w as u64, "warning", "warnings")) } else { String::new() }
        ),
        EXIT_WARNINGS => format!(
            "{}, no problem: libaar.so will work, but see above (exit {code})",
            count(w as u64, "warning", "warnings")
        ),
        _ => format!("all well (exit {code})"),
    }
}

fn text(report: &Report, program: Option<&Program>, libaar: Option<&Path>, doc: Option<&Value>, code: i32) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "aar doctor {}: {}\n",
        env!("CARGO_PKG_VERSION"),
        program.map_or("no PROGRAM given (environment only)".to_string(), |p| p.path.display().to_string())
    ));
    for (k, c) in report.checks.iter().enumerate() {
        out.push_str(&format!("{:<8} {:<10} {}\n", c.verdict.word(), c.topic, c.text));
        // Checks in a row with one fix (each missing default event has the same) have it said
        // once, after the last of them, not once a line.
        let next_has_it = report.checks.get(k + 1).is_some_and(|n| n.topic == c.topic && n.fix == c.fix);
        if let Some(fix) = c.fix.as_ref().filter(|_| !next_has_it) {
            out.push_str(&format!("{:<8} {:<10}   fix: {fix}\n", "", ""));
        }
    }
    if let Some(doc) = doc {
        out.push_str(&format!(
            "settings, as {} parses them:\n",
            libaar.map_or("libaar.so".to_string(), |p| p.display().to_string())
        ));
        for line in settings_lines(doc, report.records_unusable) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push_str(&format!("result: {}\n", summary_line(report, code)));
    out
}

fn json_text(
    report: &Report,
    program: Option<&Program>,
    libaar: Option<&Path>,
    doc: Option<&Value>,
    (ranks, nodes): (Option<&JobRanks>, Option<&JobNodes>),
    code: i32,
) -> String {
    let checks: Vec<Value> = report
        .checks
        .iter()
        .map(|c| json!({ "topic": c.topic, "verdict": c.verdict.word(), "text": c.text, "fix": c.fix, "skipped": c.skipped }))
        .collect();
    let verdict = report.checks.iter().map(|c| c.verdict).max().unwrap_or(Verdict::Ok);
    let libraries: Option<Vec<Value>> = program.and_then(|p| p.closure.as_ref()).map(|c| {
        c.libraries.iter().map(|l| json!({ "name": l.name, "path": l.path, "needed_by": l.needed_by })).collect()
    });
    let out = json!({
        "format": "aar-doctor/1",
        "version": env!("CARGO_PKG_VERSION"),
        "program": program.map(|p| p.path.display().to_string()),
        "libaar": libaar.map(|p| p.display().to_string()),
        "verdict": if verdict == Verdict::Note { "ok" } else { verdict.word() },
        "exit_code": code,
        "summary": summary_line(report, code),
        "checks": checks,
        "libraries": libraries,
        "job_ranks": ranks.map(|r| json!({
            "ranks": r.ranks,
            "from": match &r.from {
                RanksFrom::Option => "--ranks",
                RanksFrom::Variable(v) | RanksFrom::Launcher(v) => v.as_str(),
            },
            "one_task_step": r.one_task_step,
        })),
        "job_nodes": nodes.map(|n| json!({ "nodes": n.nodes, "from": n.from })),
        "selfcheck": doc,
    });
    serde_json::to_string_pretty(&out).unwrap_or_default() + "\n"
}

/// Whether this user may create files in the folder `dir`: a file created there (and removed),
/// which the mode bits alone do not tell (another user's folder, a read-only mount, root). The
/// file gets a block of bytes, written to the disk: a full or over-quota file system still takes
/// an empty file, but not a record.
fn can_create_in(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let probe = dir.join(format!(".aar-doctor-{}", std::process::id()));
    let mut file = std::fs::File::create_new(&probe)?;
    let written = file.write_all(&[0; 4096]).and_then(|()| file.sync_data());
    drop(file);
    let removed = std::fs::remove_file(&probe);
    written.and(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    /// The cases as glibc 2.36's ld.so opened them, seen with strace.
    fn the_loaders_tokens_are_replaced_only_where_ld_so_reads_one() {
        let lib = libc_folder().expect("this process's C library folder");
        let origin = std::env::current_exe().unwrap();
        let folder = origin.canonicalize().unwrap().parent().unwrap().display().to_string();
        let expand = |e: &str| loader_expansion(e, Some(&origin));
        assert_eq!(expand("/a/$LIB/x.so"), Ok(format!("/a/{lib}/x.so")));
        assert_eq!(expand("/a/${LIB}x.so"), Ok(format!("/a/{lib}x.so")));
        assert_eq!(expand("/a/$LIB.so"), Ok(format!("/a/{lib}.so")));
        assert_eq!(expand("/a/$LIB-x.so"), Ok(format!("/a/{lib}-x.so")));
        assert_eq!(expand("$ORIGIN/../$LIB/x.so"), Ok(format!("{folder}/../{lib}/x.so")));
        // Longer names, an unknown one, a lone `$` and an unclosed brace are no tokens.
        for kept in ["/a/$LIBX/x.so", "/a/$LIB_2/x.so", "/a/$ORIGINAL/x.so", "/a/$HOME/x.so", "/a/x$", "/a/${LIB/x.so"]
        {
            assert_eq!(expand(kept), Ok(kept.to_string()), "{kept}");
        }
        assert_eq!(loader_expansion("$ORIGIN/x.so", None), Err("$ORIGIN"));
        assert_eq!(loader_expansion("/a/$LIBX/$ORIGIN", None), Err("$ORIGIN"));
    }
}
