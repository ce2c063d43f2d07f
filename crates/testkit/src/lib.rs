//! What the integration tests of the shim, the emulator and the `aar` command share: where the
//! workspace and the test's target folder are, the real artifacts (libaar.so, the emulated
//! libugni.so and libdmapp.so, the `aar` command) built once per test binary into that folder,
//! scratch folders (and one under /dev/shm, [`ShmDir`]), the names under which the emulator
//! publishes the Aries counters, the configuration that makes property tests reproducible, and the
//! check of a crate's module layers ([`layers`]).

pub mod layers;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
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

/// The packages whose files the tests run (libaar.so, the emulated libugni.so and libdmapp.so,
/// libpmi.so.0, the `aar` command), always built together, as `scripts/demo` and `scripts/install`
/// build them: cargo unifies the features of the dependencies over the packages of one build, so
/// a build of fewer of them (`-p aar-emu` alone) links libugni.so or `aar` again, with other
/// features, replacing the file while other tests of the same binary run programs that load it.
pub const ARTIFACTS: [&str; 4] = ["aar", "aar-emu", "aar-pmi", "aar-cli"];

/// `cargo build --release` of [`ARTIFACTS`] into [`target_dir`], once per test binary (a no-op
/// after the suite's own build); the release folder.
pub fn release_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--release", "-q"]);
        for p in ARTIFACTS {
            cmd.args(["-p", p]);
        }
        let st = cmd.env("CARGO_TARGET_DIR", target_dir()).current_dir(root()).status().expect("run cargo build");
        assert!(st.success(), "cargo build --release of {ARTIFACTS:?} failed");
        let dir = target_dir().join("release");
        for f in ["libaar.so", "libugni.so", "libpmi.so", "aar"] {
            assert!(dir.join(f).is_file(), "no {f} in {}", dir.display());
        }
        dir
    })
}

/// The folder of libaar.so and the emulated libugni.so (and its link libdmapp.so).
pub fn libdir() -> &'static Path {
    release_dir()
}

/// The real libaar.so.
pub fn libaar() -> PathBuf {
    libdir().join("libaar.so")
}

/// The `aar` command.
pub fn aar_command() -> PathBuf {
    release_dir().join("aar")
}

/// An empty scratch folder for one test, in the target folder.
pub fn scratch(name: &str) -> PathBuf {
    let d = target_dir().join("aar-tests").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An empty folder under /dev/shm for one test (a job's AAR_EMU_JOB_DIR), named after the test
/// process, `tag` and a count, so that tests running at once never share one; removed on drop,
/// also when the test fails.
pub struct ShmDir(PathBuf);

impl ShmDir {
    pub fn new(tag: &str) -> ShmDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let d = Path::new("/dev/shm").join(format!("aar-test-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap_or_else(|e| panic!("create {}: {e}", d.display()));
        ShmDir(d)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ShmDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

/// An executable script at `path` holding `text`, written by a child process (`install`): a file
/// this multi-threaded test process wrote itself may still be open for writing in a child that
/// another test thread forked meanwhile and that has not exec'd yet, and exec'ing it then fails
/// with ETXTBSY ("Text file busy").
pub fn write_script(path: &Path, text: &str) {
    let source = path.with_extension("text");
    std::fs::write(&source, text).unwrap();
    let installed = Command::new("install").arg("-m").arg("755").arg(&source).arg(path).status();
    assert!(installed.is_ok_and(|s| s.success()), "install {}", path.display());
    std::fs::remove_file(&source).unwrap();
}
