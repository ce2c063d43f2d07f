//! The C API of libaar.so (cabi/aar.h) at its edges: first calls racing the library's start-up,
//! bad arguments under the kill switch. The rest of the API is exercised where its effect is
//! (degradation.rs: pinning, pausing; ab.rs: iterations; dmapp.rs: DMAPP routing).

mod common;
use common::*;

/// The C test program, linked with -laar as aar.h advises.
fn api_edges() -> std::path::PathBuf {
    program_with("api_edges", &["-laar"])
}

/// Threads that call `aar_policy_name()` while another thread is starting the library get the
/// policy in force, not "disabled" (which aar.h keeps for AAR_DISABLE). Several processes, since
/// which thread starts the library and how long the others wait varies from run to run.
#[test]
fn policy_names_asked_during_start_up_are_the_policy_not_disabled() {
    for run in 0..5 {
        let r = Launch::program(&format!("api-first-names-{run}"), api_edges(), "first-names")
            .env("AAR_MODE", "ADAPTIVE1")
            .run();
        assert!(r.status.success(), "{}", r.stderr);
        assert_eq!(r.stdout.matches("policy ADAPTIVE1\n").count(), 8, "run {run}: {}", r.stdout);
    }
    let r = Launch::program("api-first-names-disabled", api_edges(), "first-names").env("AAR_DISABLE", "1").run();
    assert_eq!(r.stdout.matches("policy disabled\n").count(), 8, "{}", r.stdout);
}

/// A bad argument is AAR_EINVAL (-1) whether or not AAR_DISABLE is set: the answer to a bad call
/// does not depend on the environment.
#[test]
fn a_bad_argument_is_einval_under_the_kill_switch_too() {
    for disable in ["0", "1"] {
        let r = Launch::program(&format!("api-bad-args-{disable}"), api_edges(), "bad-args")
            .env("AAR_DISABLE", disable)
            .run();
        assert!(r.status.success(), "{}", r.stderr);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines.len(), 8, "{}", r.stdout);
        for l in lines {
            assert!(l.ends_with(" rc=-1"), "AAR_DISABLE={disable}: {l}");
        }
    }
}
