//! Builds libugni.so (and its link libdmapp.so), compiles C programs against it and runs them,
//! with no preload.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

pub use aar_testkit::root as repo_root;

/// target/release, after making sure libugni.so there is current (a no-op build when it is).
pub fn lib_dir() -> &'static Path {
    aar_testkit::libdir()
}

/// Compiles `src` (relative to the repository root) with warnings as errors, linked with -lugni.
/// Once per program and test binary: tests running in parallel share the executable.
pub fn compile(src: &str, name: &str) -> PathBuf {
    compile_with(src, name, &["-lugni"])
}

/// [`compile`], linked with `libs` (e.g. `-ldmapp -lugni`) instead.
pub fn compile_with(src: &str, name: &str, libs: &[&str]) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(exe) = built.get(name) {
        return exe.clone();
    }
    let exe = compile_now(src, name, libs);
    built.insert(name.to_string(), exe.clone());
    exe
}

fn compile_now(src: &str, name: &str, libs: &[&str]) -> PathBuf {
    let lib = lib_dir();
    let out_dir = lib.join("emu-tests");
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join(name);
    let root = repo_root();
    let output = Command::new("cc")
        .args(["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O2", "-pthread"])
        .arg("-I")
        .arg(root.join("cabi"))
        .arg(root.join(src))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(lib)
        .args(libs)
        .arg("-ldl")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("run cc");
    assert!(output.status.success(), "cc {src} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    exe
}

/// A path for a file a test writes (a log), removed if an earlier run left it.
pub fn scratch(name: &str) -> PathBuf {
    let p = lib_dir().join("emu-tests").join(name);
    let _ = std::fs::remove_file(&p);
    p
}

/// Runs a program with a clean emulator environment plus `env`.
pub fn run(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    for var in [
        "AAR_EMU_LOG",
        "AAR_EMU_NETWORK",
        "AAR_EMU_LATENCY_UNIT",
        "AAR_EMU_SIM",
        "AAR_EMU_DMAPP_PES",
        "AAR_EMU_DMAPP_SHEAP",
        "AAR_EMU_DMAPP_LAYOUT",
        "AAR_EMU_DMAPP_SET_BUSY",
        "AAR_EMU_DMAPP_GET_BUSY",
        "LD_PRELOAD",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run test program")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a clean exit and returns stdout.
pub fn expect_success(o: &Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}", o.status, stdout(o), stderr(o));
    stdout(o)
}

/// Runs scenario `name` of a check program (`exe name`) with `env`: a clean exit, "PASS <name>"
/// last on stdout, nothing on stderr. The lines before it.
pub fn pass(exe: &Path, name: &str, env: &[(&str, &str)]) -> Vec<String> {
    let out = run(exe, &[name], env);
    let stdout = expect_success(&out, name);
    assert_eq!(stderr(&out), "", "{name}: the emulator said something on stderr");
    let mut lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert_eq!(lines.pop().as_deref(), Some(format!("PASS {name}").as_str()), "{stdout}");
    lines
}

/// One line of the post log: a flat JSON object, its fields in the order written.
pub fn parse_log_line(line: &str) -> serde_json::Map<String, serde_json::Value> {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON object ({e}): {line}"))
}
