// libpmi.so.0 as on a Linux system: the soname libpmi.so.0 and the link libpmi.so.0 ->
// libpmi.so beside the library, so programs linked -lpmi load it. And the pkg-config files named as
// on a Cray (cray-pmi, cray-ugni, cray-dmapp) for the build tree, in <profile>/pkgconfig, so
// Makefiles that use them build against target/<profile> without an install.
use std::path::{Path, PathBuf};

#[path = "build/pc_value.rs"]
mod pc_value;
use pc_value::pc_value;

/// The pkg-config files of the build tree, from packaging/NAME.pc.in.
const PC_FILES: [&str; 3] = ["cray-pmi", "cray-ugni", "cray-dmapp"];

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpmi.so.0");
    println!("cargo:rerun-if-changed=build.rs");
    let Some(profile) = profile_dir() else { return };
    link(&profile.join("libpmi.so.0"), "libpmi.so");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("crates/pmi in the workspace");
    let pkgconfig = profile.join("pkgconfig");
    if let Err(e) = std::fs::create_dir_all(&pkgconfig) {
        println!("cargo:warning=cannot make {}: {e}; no build-tree pkg-config files", pkgconfig.display());
        return;
    }
    // Both paths go into the files: the profile folder (which CARGO_TARGET_DIR may put anywhere)
    // and the checkout's cabi/.
    let values = [profile.clone(), root.join("cabi")].map(|p| pc_value(&p).map_err(|c| (p, c)));
    let [libdir, includedir] = match values {
        [Ok(l), Ok(i)] => [l, i],
        [Err((p, c)), _] | [_, Err((p, c))] => {
            println!(
                "cargo:warning=no build-tree pkg-config files ({}): the path {} has {c}, which pkg-config cannot \
                 hand to the compiler; build in a folder without it (CARGO_TARGET_DIR or the checkout), or install \
                 with scripts/install",
                PC_FILES.join(", "),
                p.display()
            );
            for name in PC_FILES {
                let _ = std::fs::remove_file(pkgconfig.join(format!("{name}.pc")));
            }
            return;
        }
    };
    for name in PC_FILES {
        let template = root.join("packaging").join(format!("{name}.pc.in"));
        println!("cargo:rerun-if-changed={}", template.display());
        let text = match std::fs::read_to_string(&template) {
            Ok(t) => t
                .replace("@LIBDIR@", &libdir)
                .replace("@INCLUDEDIR@", &includedir)
                .replace("@VERSION@", env!("CARGO_PKG_VERSION")),
            Err(e) => {
                println!("cargo:warning=cannot read {}: {e}", template.display());
                continue;
            }
        };
        let out = pkgconfig.join(format!("{name}.pc"));
        if std::fs::read_to_string(&out).ok().as_deref() != Some(text.as_str()) {
            if let Err(e) = std::fs::write(&out, text) {
                println!("cargo:warning=cannot write {}: {e}", out.display());
            }
        }
    }
}

/// The profile's folder (target/<profile>, or target/<triple>/<profile>): OUT_DIR is
/// <profile folder>/build/aar-pmi-<hash>/out.
fn profile_dir() -> Option<PathBuf> {
    let out = std::env::var_os("OUT_DIR")?;
    Path::new(&out).ancestors().nth(3).map(Path::to_path_buf)
}

/// `link` -> `target` (made before the library is: a link may point at a file still to come); a
/// failure is a build warning.
fn link(link: &Path, target: &str) {
    if std::fs::read_link(link).is_ok_and(|t| t == Path::new(target)) {
        return;
    }
    let _ = std::fs::remove_file(link);
    if let Err(e) = std::os::unix::fs::symlink(target, link) {
        println!("cargo:warning=cannot make {} (a link to {target}): {e}", link.display());
    }
}
