//! MPICH 4 and Open MPI 4.1 as README says a user meets them: an MPI function libaar.so wraps
//! that the process's MPI does not define (MPI 4's large-count forms, `MPI_Allreduce_c`, under
//! Open MPI 4.1, an MPI 3.1 library), which a program reaches only by a run-time lookup: the call
//! is not made, returns an error code, and the one line libaar.so says names the cause and the
//! fix; which MPI's programs `aar run` starts as one MPI job; and what of a call's arguments
//! `steady` tells its kinds of call by, where MPI ignores some (MPI_IN_PLACE).

mod common;

use common::*;
use std::process::Command;

#[test]
fn a_large_count_form_the_mpi_lacks_returns_an_error_and_says_why() {
    if !have("mpicc.openmpi") || !have("mpiexec.openmpi") {
        eprintln!("SKIPPED: Open MPI (mpicc.openmpi, mpiexec.openmpi) is not installed; scripts/setup installs it");
        return;
    }
    let prog = compile("mpicc.openmpi", "mpi_probe", &[aar_testkit::root().join("tests/c/mpi_probe.c")], &["-ldl"]);
    let session = scratch("mpi-lacks-large-count");
    let run = |preload: bool| {
        let mut cmd = Command::new("mpiexec.openmpi");
        cmd.args(["--oversubscribe", "-n", "2"])
            .env(OPEN_MPI_TMPDIR, &session)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_plm", "isolated")
            .env_remove("LD_PRELOAD");
        if preload {
            cmd.args(["-x", &format!("LD_PRELOAD={}", aar_testkit::libaar().display())]);
        }
        let out = cmd.arg(&prog).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Without libaar.so the lookup finds nothing: Open MPI 4.1 has no large-count forms.
    let (stdout, _) = run(false);
    assert_eq!(stdout, "size=2 found=0 rc=-1 out=-1\n".repeat(2));
    // With it, the program finds libaar.so's: each rank's call returns 16 and writes nothing.
    let (stdout, stderr) = run(true);
    assert_eq!(stdout, "size=2 found=1 rc=16 out=-1\n".repeat(2), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("aar: MPI_Allreduce_c")).collect();
    assert_eq!(said.len(), 2, "once per rank: {stderr}");
    assert!(
        said[0].contains("older than MPI 4.0")
            && said[0].contains("(dlsym)")
            && said[0].contains("returns 16 (MPICH's MPI_ERR_INTERN, Open MPI's MPI_ERR_OTHER)")
            && said[0].ends_with(
                "Fix: use an MPI 4 library, or have the program call MPI_Allreduce where its counts fit in an int"
            ),
        "{stderr}"
    );
}

/// MPICH's programs speak the simple PMI protocol `aar run` serves: its ranks are one MPI job,
/// whose large-count forms libaar.so forwards. Open MPI's speak PMIx: under `aar run` each rank
/// is an MPI job of its own (whose large-count form is libaar.so's, returning 16).
#[test]
fn aar_run_starts_an_mpich_program_as_one_job_and_an_open_mpi_one_as_singletons() {
    for (compiler, want) in
        [("mpicc.mpich", "size=2 found=1 rc=0 out=2\n"), ("mpicc.openmpi", "size=1 found=1 rc=16 out=-1\n")]
    {
        if !have(compiler) {
            eprintln!("SKIPPED: {compiler} is not installed; scripts/setup installs it");
            continue;
        }
        let prog = compile(compiler, "mpi_probe", &[aar_testkit::root().join("tests/c/mpi_probe.c")], &["-ldl"]);
        // Each singleton rank is an Open MPI job: a session folder of its own (a rank that ends
        // first would remove a shared one under the other).
        let session = scratch(&format!("mpi-aar-run-{compiler}"));
        let out = Command::new(aar_testkit::aar_command())
            .args(["run", "-n", "2", "--time", "2:00", "--", "sh", "-c"])
            .arg(format!("{OPEN_MPI_TMPDIR}=\"$0/$PMI_RANK\" exec \"$1\""))
            .arg(&session)
            .arg(&prog)
            .env("LD_PRELOAD", aar_testkit::libaar())
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{compiler}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), want.repeat(2), "{compiler}: {stderr}");
    }
}

/// An alltoall in place (MPI_IN_PLACE, as `MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
/// n, ...)` gives it: MPI ignores the send count and datatype then) is told apart by its receive
/// count: under `steady` calls of two sizes, alternating, are two kinds of call, each trying its
/// own routings in turn (`steady`'s decisions, every post Adaptive, every post High Bias). Keyed
/// by the ignored send side, they were one kind: the second size's first call took the first's
/// second try, and each size was timed on a routing the other had drawn.
#[test]
fn under_steady_alltoalls_in_place_of_two_sizes_are_two_kinds_of_call() {
    // minimal paths stall (Adaptive wins for bulk), and a High Bias post waits 2 ms more
    let calls = "alltoall-in-place 1024 8 alltoall-in-place 2048 4 ".repeat(3);
    let r = Launch::driver("calls-in-place", &format!("net 1.2 1.0 2 50 modetime 0 0 0 2000 {calls}"))
        .env("AAR_MODE", "steady")
        .run();
    r.assert_ok();
    assert_eq!(r.stdout.matches("alltoall-in-place rc=0 reached_pmpi=1").count(), 6, "{}", r.stdout);
    let modes = r.dlvr_modes("GNI_PostRdma");
    let calls: Vec<&[u64]> = [8, 4, 8, 4, 8, 4]
        .iter()
        .scan(0, |at, &n| {
            *at += n;
            Some(&modes[*at - n..*at])
        })
        .collect();
    assert_eq!(modes.len(), 36, "{modes:?}");
    // each size's second call: every post Adaptive (ADAPTIVE1 in MPI_Alltoall); its third: High Bias
    assert_eq!((calls[2], calls[3]), (&[AD1; 8][..], &[AD1; 4][..]), "second calls of each size: {modes:?}");
    assert_eq!((calls[4], calls[5]), (&[AD3; 8][..], &[AD3; 4][..]), "third calls of each size: {modes:?}");
}
