//! Stamps the version and git revision into libaar.so, so every record says what produced it,
//! and reads the DMAPP routing table from the site's `dmapp.h` when one is found.
#[path = "src/build/dmapp_header.rs"]
mod dmapp_header;
#[path = "src/build/git_revision.rs"]
mod git_revision;

fn main() {
    git_revision::stamp(&["src", "crates/engine", "crates/abi"]);
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
