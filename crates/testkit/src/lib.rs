//! What the integration tests of the shim, the emulator and the `aar` command share: where the
//! workspace and the test's target folder are, the real artifacts (libaar.so, the emulated
//! libugni.so and libdmapp.so, the `aar` command) built once per test binary into that folder,
//! scratch folders, the names under which the emulator publishes the Aries counters, the
//! configuration that makes property tests reproducible, and the check of a crate's module layers
//! ([`layers`]).

pub mod layers;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("crates/testkit in the workspace").to_path_buf()
}

/// The target folder the running test binary was built into (`target/<profile>/deps/<test>`), so
/// a custom `CARGO_TARGET_DIR` is honoured.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.ancestors().nth(3).expect("target/<profile>/deps/<test>").to_path_buf()
}

/// `cargo build --release` of `packages` into [`target_dir`] (a no-op when fresh); the release
/// folder.
pub fn build_release(packages: &[&str]) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "-q"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    let st = cmd.env("CARGO_TARGET_DIR", target_dir()).current_dir(root()).status().expect("run cargo build");
    assert!(st.success(), "cargo build --release of {packages:?} failed");
    target_dir().join("release")
}

/// The folder of libaar.so and the emulated libugni.so (and its link libdmapp.so), built once per
/// test binary.
pub fn libdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = build_release(&["aar", "aar-emu"]);
        assert!(dir.join("libaar.so").is_file() && dir.join("libugni.so").is_file());
        dir
    })
}

/// The emulated libugni.so's folder, built once per test binary without the shim.
pub fn emulator_libdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = build_release(&["aar-emu"]);
        assert!(dir.join("libugni.so").is_file(), "no libugni.so in {}", dir.display());
        dir
    })
}

/// The real libaar.so.
pub fn libaar() -> PathBuf {
    libdir().join("libaar.so")
}

/// The `aar` command, built once per test binary.
pub fn aar_command() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| build_release(&["aar-cli"]).join("aar")).clone()
}

/// An empty scratch folder for one test, in the target folder.
pub fn scratch(name: &str) -> PathBuf {
    let d = target_dir().join("aar-tests").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The emulator's counter events as PAPI names them: `sde:::aries::` and the Aries names, in the
/// engine's order.
pub fn sde_events() -> Vec<String> {
    aar_abi::counters::EVENTS.iter().map(|e| format!("sde:::aries::{}", e.to_str().unwrap())).collect()
}

/// [`sde_events`] as `AAR_PAPI_EVENTS` takes them.
pub fn sde_events_setting() -> String {
    sde_events().join(",")
}

/// A proptest configuration: `cases` cases from a fixed seed, no failure files, unless the
/// environment asks otherwise (`PROPTEST_CASES`, `PROPTEST_RNG_SEED`).
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, RngSeed};
    let base = Config::default(); // reads PROPTEST_* from the environment
    let env_set = |k: &str| std::env::var_os(k).is_some();
    Config {
        cases: if env_set("PROPTEST_CASES") { base.cases } else { cases },
        rng_seed: if env_set("PROPTEST_RNG_SEED") { base.rng_seed } else { RngSeed::Fixed(0x00aa_2019_5c19) },
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..base
    }
}

/// Whether libaar.so can bias its decider's lock in a process started from here: a kernel with
/// private expedited membarriers (Linux 4.14 on) and no seccomp filter. The record then says
/// `biased` for one deciding thread, else `never-biased`.
pub fn lock_can_be_biased() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release.trim().split(|c: char| !c.is_ascii_digit()).map(|n| n.parse::<u32>().unwrap_or(0));
    let version = (v.next().unwrap_or(0), v.next().unwrap_or(0));
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let filtered = status.lines().find_map(|l| l.strip_prefix("Seccomp:")).is_some_and(|v| v.trim() != "0");
    version >= (4, 14) && !filtered
}
