// libsde (Debian: libpapi-dev) publishes the NIC counters as PAPI Software-Defined Events.
fn main() {
    println!("cargo:rustc-link-lib=dylib=sde");
    // Give libugni.so its conventional soname so `-lugni` programs record it.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libugni.so");
    println!("cargo:rerun-if-changed=build.rs");
    link_libdmapp();
}

/// The same library serves DMAPP: `libdmapp.so`, a symbolic link to `libugni.so` beside it in
/// the profile's folder (target/<profile>, or target/<triple>/<profile>), so `-ldmapp` links.
/// The link records the soname libugni.so, so a program linked `-ldmapp -lugni` loads one object.
/// Made before the library is (a link may point at a file still to come); a failure is a build
/// warning, because only programs linked `-ldmapp` need it.
fn link_libdmapp() {
    let Some(out) = std::env::var_os("OUT_DIR") else { return };
    // OUT_DIR is <profile folder>/build/aar-emu-<hash>/out.
    let Some(dir) = std::path::Path::new(&out).ancestors().nth(3) else { return };
    let link = dir.join("libdmapp.so");
    if std::fs::read_link(&link).is_ok_and(|target| target == std::path::Path::new("libugni.so")) {
        return;
    }
    let _ = std::fs::remove_file(&link);
    if let Err(e) = std::os::unix::fs::symlink("libugni.so", &link) {
        println!(
            "cargo:warning=cannot make {} (a link to libugni.so): {e}; programs cannot link -ldmapp",
            link.display()
        );
    }
}
