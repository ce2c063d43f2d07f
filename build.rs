//! Stamps the version and git revision into libaar.so, so every record says what produced it.
use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no", "--", "src", "crates/engine", "crates/abi"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    println!("cargo:rustc-env=AAR_GIT_REVISION={rev}{}", if dirty { "-dirty" } else { "" });
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
}
