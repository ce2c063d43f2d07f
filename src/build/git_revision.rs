//! The git revision a crate's build stamps into what it writes (`AAR_GIT_REVISION`), so that every
//! record says what produced it: build.rs of libaar.so and of the simulator include this file.

use std::process::Command;

/// Set `AAR_GIT_REVISION` for the crate being built: the short revision of HEAD, `-dirty` when
/// tracked files under `paths` (relative to the crate's folder, where cargo runs build scripts)
/// differ from it, `unknown` outside a git clone; built again when HEAD or the index moves.
pub fn stamp(paths: &[&str]) {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let status = [&["status", "--porcelain", "--untracked-files=no", "--"][..], paths].concat();
    let dirty = git(&status).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=AAR_GIT_REVISION={rev}{}", if dirty { "-dirty" } else { "" });
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
    }
}
