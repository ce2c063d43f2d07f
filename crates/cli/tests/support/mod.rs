//! What the CLI's integration tests share: where the workspace and this build's target folder
//! are, and the real libaar.so and emulated libugni.so, built once per test binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root (this crate is crates/cli).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// The target folder this test was built into (target/<profile>/deps/<test>).
pub fn target_dir() -> PathBuf {
    std::env::current_exe().unwrap().ancestors().nth(3).unwrap().to_path_buf()
}

/// The folder of libaar.so and the emulated libugni.so, built in release mode into this test's
/// target folder once per test binary (a no-op when fresh).
pub fn libdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "--release", "-q", "-p", "aar", "-p", "aar-emu"])
            .env("CARGO_TARGET_DIR", target_dir())
            .current_dir(root())
            .status()
            .expect("run cargo build");
        assert!(st.success(), "building libaar.so and libugni.so failed");
        let dir = target_dir().join("release");
        assert!(dir.join("libaar.so").is_file() && dir.join("libugni.so").is_file());
        dir
    })
}

pub fn libaar() -> PathBuf {
    libdir().join("libaar.so")
}

/// The emulator's counter events as PAPI names them (sde:::aries:: and the Aries event names).
pub fn sde_events() -> Vec<String> {
    aar_abi::counters::EVENTS.iter().map(|e| format!("sde:::aries::{}", e.to_str().unwrap())).collect()
}
