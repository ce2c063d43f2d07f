//! libpmi.so.0's PMI_Init against environments no launcher gave: C programs built against the
//! real library, run as processes.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// tests/c/pmi_init.c, built once against the build tree's libpmi.so.0.
fn pmi_init() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let lib = aar_testkit::release_dir();
        let dir = aar_testkit::target_dir().join("aar-tests").join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join(format!("pmi_init-{}", std::process::id()));
        let root = aar_testkit::root();
        let st = Command::new("cc")
            .args(["-O2", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(root.join("cabi"))
            .arg(root.join("crates/pmi/tests/c/pmi_init.c"))
            .arg("-o")
            .arg(&exe)
            .arg("-L")
            .arg(lib)
            .arg("-lpmi")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .status()
            .expect("run cc");
        assert!(st.success(), "compiling pmi_init.c failed");
        exe
    })
}

/// A PMI_FD left in the environment from another job names the program's own stdout (a pipe
/// here): PMI_Init refuses it, says so, and leaves stdout open, where closing it (as the
/// session's socket) lost every later line of the program.
#[test]
fn a_pmi_fd_that_is_no_socket_is_refused_and_left_open() {
    let out = Command::new(pmi_init()).env("PMI_FD", "1").env("PMI_RANK", "0").env("PMI_SIZE", "1").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, "rc=1 fd1_open=1\n", "{stderr}");
    assert!(
        stderr.contains("aar: PMI_Init: PMI_FD=1 is open, but not on a Unix-domain socket")
            && stderr.contains("descriptor 1 was left as it is"),
        "{stderr}"
    );
}
