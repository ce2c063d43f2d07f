//! Stamps the version and git revision into libaar.so, so every record says what produced it,
//! and reads the DMAPP routing table from the site's `dmapp.h` when one is found.
use std::process::Command;

#[path = "src/build/dmapp_header.rs"]
mod dmapp_header;

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
    // Its own name as its soname: a program linked with -laar (the Fortran markers, the C API
    // without weak declarations) finds its dependency in the copy LD_PRELOAD already loaded.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libaar.so");

    // The DMAPP routing table (src/settings.rs reads these two at compile time).
    let var = |k: &str| std::env::var(k).ok();
    let found = dmapp_header::discover(&var, &|p| p.is_file(), &|p| std::fs::read_to_string(p));
    if let Some((table, path)) = &found.table {
        println!("cargo:rustc-env=AAR_DMAPP_TABLE={table}");
        println!("cargo:rustc-env=AAR_DMAPP_HEADER={}", path.display());
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:warning={}", found.message);
    for v in [dmapp_header::HEADER_VARIABLE].into_iter().chain(dmapp_header::OPTION_VARIABLES) {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo:rerun-if-changed=src/build/dmapp_header.rs");
}
