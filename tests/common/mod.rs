//! Shared by the integration tests: build the real artifacts, compile the C test programs, run
//! them under LD_PRELOAD=libaar.so over the emulated libugni.so, and read what reached the
//! emulator (its post log) and what the library wrote.
#![allow(dead_code, unused_imports)]

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// dlvr_mode values.
pub const AD0: u64 = 0x00;
pub const AD1: u64 = 0x20;
pub const AD2: u64 = 0x40;
pub const AD3: u64 = 0x80;

pub use aar_testkit::{aar_command, libaar, libdir, lock_can_be_biased, root, scratch, sde_events_setting, target_dir};

/// The Open MPI 4.1 setting (an MCA parameter) of the folder a process makes its session folder
/// `ompi.<host>.<uid>` in: /tmp unless set. An Open MPI job (an `mpiexec`, or each singleton rank
/// under `aar run`) removes that folder when it ends, if it is then empty; a job starting beside
/// it that finds the folder made, then gone, fails in `orte_init` ("A call to mkdir was unable to
/// create the desired directory ... File exists"). Each test's Open MPI job gets a folder of its
/// own.
pub const OPEN_MPI_TMPDIR: &str = "OMPI_MCA_orte_tmpdir_base";

/// Compile tests/c/<name>.c against cabi/ and the emulator, once per test binary.
pub fn program(name: &str) -> PathBuf {
    program_with(name, &[])
}

/// The same, with extra compiler flags (e.g. `-DREENTER`).
pub fn program_with(name: &str, flags: &[&str]) -> PathBuf {
    compile("cc", name, &[root().join("tests/c").join(format!("{name}.c"))], flags)
}

/// tests/c/<name>.c linked as a Cray SHMEM-style program is: `-ldmapp -lugni` (the emulator's
/// libdmapp.so is a link to its libugni.so).
pub fn dmapp_program(name: &str, flags: &[&str]) -> PathBuf {
    let flags: Vec<&str> = flags.iter().copied().chain(["-ldmapp"]).collect();
    program_with(name, &flags)
}

/// examples/<name>.c, built as scripts/demo builds it.
pub fn example(name: &str) -> PathBuf {
    compile("cc", &format!("example-{name}"), &[root().join("examples").join(format!("{name}.c"))], &[])
}

/// Whether a program (a compiler, a launcher) can be run here.
pub fn have(command: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {command} >/dev/null")]).status().is_ok_and(|s| s.success())
}

/// Compile `sources` with `compiler` (cc, mpicc.mpich, g++, gfortran, mpif90.mpich) against cabi/
/// and tests/c/ and the emulated libugni.so, once per test binary and set of flags. Flags that name
/// libraries (`-l...`) go after the sources, before `-lugni`. Fortran modules go to the output
/// folder; gfortran programs link libaar.so. The C sources of a Fortran or C++ program are compiled
/// by `cc` (MPI's Fortran wrapper adds Fortran-only options, which a C compile rejects; g++ would
/// compile them as C++).
pub fn compile(compiler: &str, name: &str, sources: &[PathBuf], flags: &[&str]) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let lib = libdir();
    let key = format!("{compiler}:{name}{}", flags.concat());
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    if let Some(p) = built.get(&key) {
        return p.clone();
    }
    let out_dir = target_dir().join("aar-tests").join("bin");
    std::fs::create_dir_all(&out_dir).unwrap();
    // The compiler is part of the name too: one program built against two MPIs is two files.
    let compiler_tag = if compiler == "cc" { "" } else { compiler };
    let variant: String =
        [compiler_tag, &flags.concat()].concat().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let out = out_dir.join(format!("{name}{variant}-{}", std::process::id()));
    let (libs, flags): (Vec<&str>, Vec<&str>) = flags.iter().partition(|f| f.starts_with("-l"));
    let fortran = compiler.contains("fortran") || compiler.contains("f90");
    let other_language = fortran || compiler.contains("++");
    let sources: Vec<PathBuf> = sources
        .iter()
        .map(|s| match s.extension() {
            Some(e) if other_language && e == "c" => c_object(s, &out_dir),
            _ => s.clone(),
        })
        .collect();
    let mut cmd = Command::new(compiler);
    cmd.args(["-O2", "-Wall", "-Wextra", "-Werror", "-rdynamic"]).args(flags);
    if fortran {
        let modules = out_dir.join(format!("mod-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&modules).unwrap();
        cmd.arg("-J").arg(modules);
    }
    let st = cmd
        .arg("-I")
        .arg(root().join("cabi"))
        .arg("-I")
        .arg(root().join("tests/c"))
        .args(&sources)
        .arg("-o")
        .arg(&out)
        .arg("-L")
        .arg(lib)
        // Fortran has no weak symbols: a program that calls aar.f90 links libaar.so (before libugni).
        .args(if compiler.contains("fortran") { &["-laar"][..] } else { &[] })
        .args(libs)
        .args(["-lugni", "-lpthread", "-ldl"])
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .status()
        .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
    assert!(st.success(), "compiling {sources:?} with {compiler} failed");
    built.insert(key, out.clone());
    out
}

/// `source` compiled by `cc` to an object in `out_dir`, its warnings errors as in [`compile`].
fn c_object(source: &Path, out_dir: &Path) -> PathBuf {
    let stem = source.file_stem().and_then(|s| s.to_str()).unwrap_or("c");
    let out = out_dir.join(format!("{stem}-{}.o", std::process::id()));
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-c"])
        .arg("-I")
        .arg(root().join("cabi"))
        .arg("-I")
        .arg(root().join("tests/c"))
        .arg(source)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("run cc: {e}"));
    assert!(st.success(), "compiling {} with cc failed", source.display());
    out
}

pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// What reached the emulator, one JSON object per call.
    pub log: Vec<Value>,
    pub dir: PathBuf,
}

impl Run {
    /// Lines the library printed (prefix "aar:").
    pub fn aar_lines(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| l.starts_with("aar:")).collect()
    }
    /// Posts of one uGNI call, in order.
    pub fn posts(&self, call: &str) -> Vec<&Value> {
        self.log.iter().filter(|v| v["call"] == call).collect()
    }
    pub fn dlvr_modes(&self, call: &str) -> Vec<u64> {
        self.posts(call).iter().map(|v| v["dlvr_mode"].as_u64().unwrap()).collect()
    }
    pub fn assert_ok(&self) {
        assert!(
            self.status.success(),
            "program failed: {}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
    }
    /// The records written in `dir`/out.
    pub fn records(&self) -> Vec<Value> {
        read_records(&self.dir.join("out"))
    }
}

/// The number after the last `key=` in a program's output.
pub fn stdout_field(out: &str, key: &str) -> u64 {
    let tail = out.rsplit(&format!("{key}=")).next().unwrap_or("");
    tail.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap_or("")
        .parse()
        .unwrap_or_else(|_| panic!("no {key}= in {out}"))
}

pub fn read_records(dir: &Path) -> Vec<Value> {
    let Ok(rd) = std::fs::read_dir(dir) else { return vec![] };
    let mut v: Vec<Value> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    v.sort_by_key(|r| r["pid"].as_u64());
    v
}

pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// How a test program is launched.
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub remove_env: Vec<String>,
    pub preload: bool,
    pub wrapper: Vec<String>,
    pub dir: PathBuf,
    /// Where the program's stderr goes instead of [`Run::stderr`].
    pub stderr: Option<Stdio>,
}

impl Launch {
    /// The driver under libaar.so with the emulator's SDE event names, its log in a scratch dir.
    pub fn driver(test: &str, args: &str) -> Launch {
        Launch::program(test, program("driver"), args)
    }

    /// Any program, set up as [`Launch::driver`] sets up the driver.
    pub fn program(test: &str, program: PathBuf, args: &str) -> Launch {
        let dir = scratch(test);
        std::fs::create_dir_all(dir.join("out")).unwrap();
        Launch {
            program,
            args: args.split_whitespace().map(String::from).collect(),
            env: vec![
                ("AAR_PAPI_EVENTS".into(), sde_events_setting()),
                ("AAR_EMU_LOG".into(), dir.join("emu.jsonl").display().to_string()),
                ("AAR_OUTPUT_DIR".into(), dir.join("out").display().to_string()),
            ],
            remove_env: vec![],
            preload: true,
            wrapper: vec![],
            dir,
            stderr: None,
        }
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.retain(|(key, _)| key != k);
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn unset(mut self, k: &str) -> Self {
        self.env.retain(|(key, _)| key != k);
        self.remove_env.push(k.into());
        self
    }
    /// Run the program through `sh`, which first writes an earlier run's summary record of the
    /// name the program's will have (no job id, no rank, the same pid: `exec` keeps it), so that
    /// the program finds its record's name taken. [`earlier_record_kept`] checks what is left.
    pub fn with_earlier_record(self) -> Self {
        let out = self.dir.join("out");
        self.through_sh(format!("echo earlier >{}/aar.nojob.norank.$$.json; exec \"$@\"", out.display()))
    }
    /// Run the program through `sh -c script`, which runs it as `"$@"` (`exec "$@"` keeps its pid).
    pub fn through_sh(mut self, script: String) -> Self {
        self.wrapper = vec!["sh".into(), "-c".into(), script, "sh".into()];
        self
    }
    pub fn no_preload(mut self) -> Self {
        self.preload = false;
        self
    }
    pub fn run(self) -> Run {
        let mut cmd = match self.wrapper.split_first() {
            Some((w, rest)) => {
                let mut c = Command::new(w);
                c.args(rest).arg(&self.program);
                c
            }
            None => Command::new(&self.program),
        };
        cmd.args(&self.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(self.stderr.unwrap_or(Stdio::piped()));
        // A clean slate: no AAR_* or launcher variables leak in from the test's environment.
        for (k, _) in std::env::vars() {
            if k.starts_with("AAR_")
                || [
                    "LD_LIBRARY_PATH",
                    "PMI_RANK",
                    "SLURM_PROCID",
                    "ALPS_APP_PE",
                    "OMPI_COMM_WORLD_RANK",
                    "PMIX_RANK",
                    "SLURM_JOB_ID",
                    "SLURM_STEP_ID",
                    "SLURM_NTASKS",
                    "OMPI_COMM_WORLD_SIZE",
                    "SLURM_RESTART_COUNT",
                    "PMI_SIZE",
                    "LD_PRELOAD",
                ]
                .contains(&k.as_str())
            {
                cmd.env_remove(&k);
            }
        }
        for k in &self.remove_env {
            cmd.env_remove(k);
        }
        if self.preload {
            cmd.env("LD_PRELOAD", libaar());
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn test program");
        // Never let a hang stall CI: a test program gets two minutes.
        let deadline = Instant::now() + Duration::from_secs(120);
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take();
        let out_t = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
        let err_t = std::thread::spawn(move || stderr.map(|e| std::io::read_to_string(e).unwrap_or_default()));
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("test program {} {:?} did not finish in 120 s (a hang?)", self.program.display(), self.args);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let log = read_jsonl(&self.dir.join("emu.jsonl"));
        let stderr = err_t.join().unwrap().unwrap_or_default();
        Run { status, stdout: out_t.join().unwrap(), stderr, log, dir: self.dir }
    }
}

/// Asserts that the output folder of `r`, run [`Launch::with_earlier_record`], holds the earlier record
/// as it was written and nothing else.
pub fn earlier_record_kept(r: &Run) {
    let kept: Vec<_> = std::fs::read_dir(r.dir.join("out"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(kept, ["earlier\n"], "the earlier record kept, nothing else left");
}

/// An iteration record: its header and its rows.
pub type IterationRecord = (Value, Vec<Value>);

/// The iteration record (`*.iterations.jsonl`) of each process in `dir`, by rank then pid.
pub fn iteration_records(dir: &Path) -> Vec<IterationRecord> {
    let Ok(rd) = std::fs::read_dir(dir) else { return vec![] };
    let mut v: Vec<IterationRecord> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".iterations.jsonl"))
        .map(|e| {
            let mut lines = read_jsonl(&e.path());
            assert!(!lines.is_empty(), "{} is empty", e.path().display());
            let header = lines.remove(0);
            (header, lines)
        })
        .collect();
    v.sort_by_key(|(h, _)| (h["rank"].as_u64(), h["pid"].as_u64()));
    v
}

/// The name `aar_record` gives a routing mode column, for a dlvr_mode the emulator logged.
pub fn mode_name(dlvr_mode: u64) -> &'static str {
    match dlvr_mode & 0xff {
        0x00 => "ADAPTIVE0",
        0x20 => "ADAPTIVE1",
        0x40 => "ADAPTIVE2",
        0x80 => "ADAPTIVE3",
        _ => "other",
    }
}
