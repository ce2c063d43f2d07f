// libsde (Debian: libpapi-dev) publishes the NIC counters as PAPI Software-Defined Events.
fn main() {
    println!("cargo:rustc-link-lib=dylib=sde");
    // Give libugni.so its conventional soname so `-lugni` programs record it.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libugni.so");
    println!("cargo:rerun-if-changed=build.rs");
}
