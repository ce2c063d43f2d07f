//! `aar doctor` end to end: the real `aar` binary checks real programs (compiled here) against
//! the real libaar.so and the emulated libugni.so, both built in release mode into this test's
//! target folder, and each case gets its verdict lines and its exit status.

use aar_testkit::{libaar, libdir, lock_can_be_biased, root, sde_events, target_dir, write_script};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch() -> PathBuf {
    static FRESH: std::sync::Once = std::sync::Once::new();
    let d = target_dir().join("aar-tests").join(format!("doctor-{}", std::process::id()));
    // An earlier run with the same process id left its programs here, built from older sources.
    FRESH.call_once(|| _ = std::fs::remove_dir_all(&d));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compile a one-file C program with `flags` (once per name).
fn compile(name: &str, source: &str, flags: &[&str]) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap();
    let dir = scratch();
    let out = dir.join(name);
    if out.exists() {
        return out;
    }
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let st = Command::new("gcc")
        .args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(root().join("cabi"))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .args(flags)
        .status()
        .expect("run gcc");
    assert!(st.success(), "compiling {name} failed");
    out
}

/// A dynamic program over the emulated uGNI (-lugni from the target folder).
fn ugni_program() -> PathBuf {
    let lib = libdir();
    compile(
        "ugni-app",
        "#include \"gni_pub.h\"\n#include <stdio.h>\nint main(void) { gni_cdm_handle_t cdm;\n\
         printf(\"%d\\n\", (int)GNI_CdmCreate(0, 0, 0, 0, &cdm)); return 0; }\n",
        &["-L", lib.to_str().unwrap(), "-lugni", &format!("-Wl,-rpath,{}", lib.display())],
    )
}

/// The same kind of program, linked statically (no uGNI: a static libugni does not exist here).
fn static_program() -> PathBuf {
    compile("static-app", "int main(void) { return 0; }\n", &["-static"])
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn has_line(&self, verdict: &str, topic: &str, text: &str) -> bool {
        self.stdout.lines().any(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some(verdict) && w.next() == Some(topic) && l.contains(text)
        })
    }
    #[track_caller]
    fn expect_line(&self, verdict: &str, topic: &str, text: &str) {
        assert!(self.has_line(verdict, topic, text), "no line `{verdict} {topic} ...{text}...` in:\n{}", self.stdout);
    }
    #[track_caller]
    fn expect_code(&self, code: i32) {
        assert_eq!(self.code, code, "exit status; stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
    }
}

/// `aar doctor ARGS` with LD_PRELOAD=libaar.so, the emulator's events and `env`, and no other
/// AAR_* variable of the caller's environment.
/// A value in the `env` of [`doctor`] that removes the variable (LD_PRELOAD and AAR_PAPI_EVENTS
/// are set for every case) instead of setting it.
const UNSET: &str = "\0unset";

fn doctor(args: &[&str], env: &[(&str, &str)]) -> Run {
    doctor_under(None, args, env)
}

/// [`doctor`], started by `wrapper` (a program that runs its arguments) when given.
fn doctor_under(wrapper: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Run {
    doctor_in(None, wrapper, args, env)
}

/// [`doctor_under`], run in the folder `cwd` when given.
fn doctor_in(cwd: Option<&Path>, wrapper: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = match wrapper {
        Some(w) => {
            let mut c = Command::new(w);
            c.arg(env!("CARGO_BIN_EXE_aar"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_aar")),
    };
    cmd.arg("doctor").args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("AAR_") || k == "LD_PRELOAD" {
            cmd.env_remove(k);
        }
    }
    cmd.env("LD_PRELOAD", libaar()).env("AAR_PAPI_EVENTS", sde_events().join(","));
    for (k, v) in env {
        if *v == UNSET {
            cmd.env_remove(k);
        } else {
            cmd.env(k, v);
        }
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let Output { status, stdout, stderr } = cmd.output().expect("run aar doctor");
    Run {
        code: status.code().expect("aar doctor exited by a signal"),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

#[test]
fn a_dynamic_ugni_program_with_the_preload_and_its_events_is_all_well() {
    let prog = ugni_program();
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_code(0);
    r.expect_line("ok", "program", "ELF 64-bit");
    r.expect_line("ok", "linking", "dynamically linked");
    r.expect_line("ok", "uGNI", &format!("links libugni.so ({}", libdir().join("libugni.so").display()));
    r.expect_line("note", "counters", "loaded the program's");
    r.expect_line("ok", "preload", &format!("LD_PRELOAD names {}", libaar().display()));
    r.expect_line("ok", "libaar.so", "loads: aar ");
    r.expect_line("ok", "PAPI", "PAPI 7.");
    for (i, event) in sde_events().iter().enumerate() {
        r.expect_line("ok", "event", event);
        assert!(r
            .stdout
            .contains(["request flits", "request stalled", "cumulative", "response packets", "optional"][i]));
    }
    r.expect_line("ok", "counters", "libaar.so's own PAPI opening succeeded");
    assert!(!r.stdout.lines().any(|l| l.starts_with("warning ") || l.starts_with("problem ")), "{}", r.stdout);
    assert!(r.stdout.lines().last().unwrap().starts_with("result: all well (exit 0)"), "{}", r.stdout);
    // Nothing of libaar.so on the doctor's stderr: the check initialises nothing that prints.
    assert!(!r.stderr.contains("aar:"), "{}", r.stderr);
}

/// A program over a stand-in Fortran MPI binding library `lib` whose `mpi_allreduce_` calls
/// `callee` (nothing: it calls no MPI function); the C functions live in a stand-in libfakempi.so.
fn fortran_binding_program(lib: &str, callee: Option<&str>) -> PathBuf {
    let dir = scratch();
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let d = dir.to_str().unwrap();
    compile(
        "libfakempi.so",
        "int MPI_Allreduce(const void *s, void *r, int n, int t, int o, int c) { (void)s; (void)r; (void)n; \
         (void)t; (void)o; (void)c; return 0; }\n\
         int PMPI_Allreduce(const void *s, void *r, int n, int t, int o, int c) { return MPI_Allreduce(s, r, n, t, o, c); }\n",
        &["-shared", "-fPIC"],
    );
    let body = match callee {
        Some(f) => format!("int {f}(const void *, void *, int, int, int, int);\nvoid mpi_allreduce_(void) {{ {f}(0, 0, 0, 0, 0, 0); }}\n"),
        None => "void mpi_allreduce_(void) {}\n".to_string(),
    };
    compile(&format!("{lib}.so"), &body, &["-shared", "-fPIC", "-L", d, "-lfakempi", &rpath]);
    let link = format!("-l{}", lib.trim_start_matches("lib"));
    compile(
        &format!("fortran-app-{lib}"),
        "void mpi_allreduce_(void);\nint main(void) { mpi_allreduce_(); return 0; }\n",
        &["-L", d, &link, &rpath],
    )
}

/// Whether a Fortran program's collectives reach libaar.so's MPI wrappers, told from what its
/// MPI library's Fortran bindings import: the C function (seen), its PMPI_ form (not seen), or
/// neither (cannot tell).
#[test]
fn the_fortran_bindings_of_the_program_s_mpi_are_checked_for_what_libaar_sees() {
    let check = |lib: &str, callee: Option<&str>| {
        let prog = fortran_binding_program(lib, callee);
        doctor(&[prog.to_str().unwrap()], &[])
    };
    let r = check("libmpi_mpifh", Some("PMPI_Allreduce"));
    r.expect_line("warning", "Fortran", "libmpi_mpifh.so's Fortran bindings call PMPI_Allreduce directly");
    assert!(r.stdout.contains("fix: Mark the iterations of a Fortran program with the aar module"), "{}", r.stdout);
    check("libmpifort_cray", Some("MPI_Allreduce")).expect_line(
        "ok",
        "Fortran",
        "libmpifort_cray.so's Fortran bindings call the C MPI functions (1 of the 22 libaar.so wraps)",
    );
    check("libmpichf90_gnu", None).expect_line("note", "Fortran", "libmpichf90_gnu.so imports none of the 22");
    // And a real one, where MPICH is installed: its bindings call the C functions.
    let have_mpif90 = Command::new("mpif90.mpich").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have_mpif90 {
        eprintln!("SKIPPED (MPICH part): mpif90.mpich is not installed; scripts/setup installs it");
        return;
    }
    let dir = scratch();
    let src = dir.join("allreduce.f90");
    std::fs::write(
        &src,
        "program allreduce\n  use mpi\n  integer :: ierr, x, y\n  call MPI_INIT(ierr)\n  x = 1\n  \
         call MPI_ALLREDUCE(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)\n  call MPI_FINALIZE(ierr)\n\
         end program allreduce\n",
    )
    .unwrap();
    let prog = dir.join("allreduce-f90");
    let st = Command::new("mpif90.mpich").arg(&src).arg("-o").arg(&prog).status().unwrap();
    assert!(st.success());
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_line("ok", "Fortran", "'s Fortran bindings call the C MPI functions (22 of the 22 libaar.so wraps)");
    r.expect_line("ok", "Fortran", "libmpichfort.so");
    assert!(!r.stdout.contains("through the mpi_f08 bindings"), "{}", r.stdout);
    // Its `use mpi_f08` MPI_Barrier calls PMPI_Barrier: a program that calls it is warned.
    let src08 = dir.join("barrier08.f90");
    std::fs::write(
        &src08,
        "program barrier08\n  use mpi_f08\n  call MPI_Init()\n  call MPI_Barrier(MPI_COMM_WORLD)\n  \
         call MPI_Finalize()\nend program barrier08\n",
    )
    .unwrap();
    let prog08 = dir.join("barrier-f08");
    let st = Command::new("mpif90.mpich").arg(&src08).arg("-J").arg(&dir).arg("-o").arg(&prog08).status().unwrap();
    assert!(st.success());
    let r = doctor(&[prog08.to_str().unwrap()], &[]);
    r.expect_line("ok", "Fortran", "except MPI_Barrier from `use mpi_f08` code (it imports PMPI_Barrier too");
    r.expect_line("warning", "Fortran", "barrier-f08 calls MPI_Barrier through the mpi_f08 bindings, and libmpichfort");
    assert!(r.stdout.contains("e.g. AAR_AB_BOUNDARY=MPI_Allreduce), or mark the iterations"), "{}", r.stdout);
    // And Open MPI's, where it is installed: they call the PMPI functions directly.
    let have_openmpi = Command::new("mpif90.openmpi").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have_openmpi {
        eprintln!("SKIPPED (Open MPI part): mpif90.openmpi is not installed; scripts/setup installs it");
        return;
    }
    let prog = dir.join("allreduce-f90-openmpi");
    let st = Command::new("mpif90.openmpi").arg(&src).arg("-o").arg(&prog).status().unwrap();
    assert!(st.success());
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_line("warning", "Fortran", "'s Fortran bindings call PMPI_Barrier, PMPI_Allreduce,");
    assert!(r.stdout.contains("warning  Fortran    libmpi_mpifh.so"), "{}", r.stdout);
}

/// Collectives libaar.so does not wrap (the nonblocking ones, neighbourhood ones among them, and
/// their large-count forms), called by the program or a library of its own, are named in a note;
/// the ones MPI's own libraries import (to give their Fortran forms) are not the program's calls,
/// and the blocking neighbourhood collectives and the blocking large-count forms are wrapped.
#[test]
fn unwrapped_collectives_the_program_calls_are_named() {
    let dir = scratch();
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let d = dir.to_str().unwrap();
    compile(
        "libcollstub.so",
        "int MPI_Iallreduce(void) { return 0; }
int MPI_Neighbor_alltoall(void) { return 0; }
int MPI_Ineighbor_alltoall(void) { return 0; }
int MPI_Alltoall_c(void) { return 0; }
int MPI_Iallreduce_c(void) { return 0; }
         int MPI_Ibcast(void) { return 0; }
int MPI_Allreduce(void) { return 0; }
",
        &["-shared", "-fPIC"],
    );
    // MPI's Fortran binding library: imports MPI_Ibcast, which is then not the program's call.
    compile(
        "libmpifort_stub.so",
        "int MPI_Ibcast(void);
void mpi_ibcast_(void) { MPI_Ibcast(); }
",
        &["-shared", "-fPIC", "-L", d, "-lcollstub", &rpath],
    );
    compile(
        "libsolver.so",
        "int MPI_Neighbor_alltoall(void);
int MPI_Ineighbor_alltoall(void);
int solve(void) { return MPI_Neighbor_alltoall() + MPI_Ineighbor_alltoall(); }
",
        &["-shared", "-fPIC", "-L", d, "-lcollstub", &rpath],
    );
    let prog = compile(
        "coll-app",
        "int MPI_Iallreduce(void);
int MPI_Allreduce(void);
int MPI_Alltoall_c(void);
int MPI_Iallreduce_c(void);
int solve(void);
void mpi_ibcast_(void);
         int main(void) { mpi_ibcast_(); return MPI_Iallreduce() + MPI_Allreduce() + MPI_Alltoall_c() + MPI_Iallreduce_c() + solve(); }
",
        &["-L", d, "-lsolver", "-lmpifort_stub", "-lcollstub", &rpath],
    );
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_line(
        "note",
        "MPI",
        &format!(
            "{}, libsolver.so call MPI_Iallreduce, MPI_Iallreduce_c, MPI_Ineighbor_alltoall, which libaar.so does \
             not wrap",
            prog.display()
        ),
    );
    for wrapped_or_not_the_program_s in ["MPI_Ibcast", "MPI_Neighbor_alltoall", "MPI_Alltoall_c"] {
        assert!(!r.stdout.contains(wrapped_or_not_the_program_s), "{}", r.stdout);
    }
    // A program that calls none: no such line.
    let r = doctor(&[ugni_program().to_str().unwrap()], &[]);
    assert!(!r.has_line("note", "MPI", "which libaar.so does not wrap"), "{}", r.stdout);
}

/// A program that defines wrapped MPI functions itself (a profiling tool linked in, as CrayPat's
/// pat_build instrumentation is, or a static MPI) keeps its calls of them from libaar.so: a warning
/// naming them, large-count forms included.
/// A uGNI program that marks its iterations as `how` says: `weak` (the markers declared weak and
/// called when not NULL, as cabi/aar.h shows), `strong` (declared by aar.h alone: it links -laar)
/// or `dlsym` (looked up at run time).
fn marking_program(name: &str, how: &str, flags: &[&str]) -> PathBuf {
    let lib = libdir();
    let mark = match how {
        "weak" => {
            "#pragma weak aar_iteration_begin\n#pragma weak aar_iteration_end\n\
                   static void mark(void) { if (aar_iteration_begin) aar_iteration_begin();\n\
                   if (aar_iteration_end) aar_iteration_end(); }\n"
        }
        "strong" => "static void mark(void) { aar_iteration_begin(); aar_iteration_end(); }\n",
        _ => {
            "#include <dlfcn.h>\nstatic void mark(void) { int (*begin)(void) = \
              (int (*)(void))dlsym(RTLD_DEFAULT, \"aar_iteration_begin\"); if (begin) begin(); }\n"
        }
    };
    let source = format!(
        "#define _GNU_SOURCE\n#include \"aar.h\"\n#include \"gni_pub.h\"\n{mark}int main(void) {{ gni_cdm_handle_t cdm;\n\
         mark(); return (int)GNI_CdmCreate(0, 0, 0, 0, &cdm) == 99; }}\n"
    );
    let mut args: Vec<&str> = flags.to_vec();
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    args.extend(["-L", lib.to_str().unwrap(), "-lugni", &rpath]);
    compile(name, &source, &args)
}

/// Under AAR_AB with the markers boundary, a program that cannot call aar_iteration_begin marks no
/// iteration: built without -fPIE, its weak markers are NULL for good, and the doctor says so.
#[test]
fn a_program_that_cannot_mark_iterations_under_ab_markers_is_a_warning() {
    let no_pie = marking_program("weak-no-pie", "weak", &["-fno-pie", "-no-pie"]);
    let pie = marking_program("weak-pie", "weak", &["-fPIE", "-pie"]);
    let lib = libdir().to_str().unwrap();
    let linked = marking_program("linked-laar", "strong", &["-fno-pie", "-no-pie", "-L", lib, "-laar"]);
    let looked_up = marking_program("dlsym-no-pie", "dlsym", &["-fno-pie", "-no-pie"]);
    let ab = ("AAR_AB", "ADAPTIVE0,ADAPTIVE3");
    let is_ab_line = |l: &str| l.split_whitespace().nth(1) == Some("A/B");

    let r = doctor(&[no_pie.to_str().unwrap()], &[ab]);
    r.expect_code(3);
    r.expect_line(
        "warning",
        "A/B",
        &format!("{} references no aar_iteration_begin/end and does not import dlsym", no_pie.display()),
    );
    assert!(r.stdout.contains("no iteration will be marked"), "{}", r.stdout);
    assert!(r.stdout.contains("fix: Build it with -fPIE"), "{}", r.stdout);
    assert!(r.stdout.contains("AAR_AB_BOUNDARY=MPI_Barrier"), "{}", r.stdout);

    for (program, verdict, text) in [
        (&pie, "ok", "imports aar_iteration_begin, aar_iteration_end"),
        (&linked, "ok", "imports aar_iteration_begin, aar_iteration_end"),
        (&looked_up, "note", "references no aar_iteration_begin but imports dlsym"),
    ] {
        let r = doctor(&[program.to_str().unwrap()], &[ab]);
        r.expect_code(0);
        r.expect_line(verdict, "A/B", &format!("{} {text}", program.display()));
    }

    // An MPI boundary, or no experiment: the markers are not needed, and nothing is said of them.
    for env in [&[ab, ("AAR_AB_BOUNDARY", "MPI_Barrier")][..], &[]] {
        let r = doctor(&[no_pie.to_str().unwrap()], env);
        r.expect_code(0);
        assert!(!r.stdout.lines().any(is_ab_line), "{}", r.stdout);
    }
}

#[test]
fn mpi_functions_the_program_defines_itself_are_a_warning() {
    let prog = compile(
        "instrumented-app",
        "int MPI_Allreduce(void) { return 0; }\nint MPI_Alltoall_c(void) { return 0; }\n\
         int main(void) { return MPI_Allreduce() + MPI_Alltoall_c(); }\n",
        &[],
    );
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_line("warning", "MPI", "the program defines MPI_Allreduce, MPI_Alltoall_c itself (a profiling tool");
    assert!(r.stdout.contains("fix: For A/B runs use a build without the tool's MPI wrappers"), "{}", r.stdout);
    let r = doctor(&[ugni_program().to_str().unwrap()], &[]);
    assert!(!r.has_line("warning", "MPI", "the program defines"), "{}", r.stdout);
}

/// A script, a file that is not ELF and a cut ELF file are problems that say what the file is
/// (the doctor reads only where the headers point).
/// A Python program runs MPI through mpi4py, whose `MPI` module links the MPI library (and,
/// through a Cray MPICH, libugni): the doctor checks that module in the script's place, found as
/// the script's own Python (with its `#!` options) finds it. A Python without mpi4py is a problem
/// that says so.
#[test]
fn a_python_script_is_checked_through_mpi4py_s_module() {
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("SKIPPED: no /usr/bin/python3");
        return;
    }
    let lib = libdir();
    // What Cray MPICH's mpi4py module is to the loader: a library that needs libugni.
    let module = compile(
        "mpi4py-MPI.so",
        "#include \"gni_pub.h\"\nint mpi4py_module(void) { gni_cdm_handle_t c; return (int)GNI_CdmCreate(0, 0, 0, 0, &c); }\n",
        &["-shared", "-fPIC", "-L", lib.to_str().unwrap(), "-lugni", &format!("-Wl,-rpath,{}", lib.display())],
    );
    let site = scratch().join("site");
    std::fs::create_dir_all(site.join("mpi4py")).unwrap();
    std::fs::write(site.join("mpi4py/__init__.py"), "").unwrap();
    std::fs::copy(&module, site.join("mpi4py/MPI.so")).unwrap();
    // -S: the system's own mpi4py, if it has one, stays out of sight; PYTHONPATH still counts.
    let script = scratch().join("app.py");
    write_script(&script, "#!/usr/bin/python3 -S\nfrom mpi4py import MPI\n");
    let s = script.to_str().unwrap();

    let r = doctor(&[s], &[("PYTHONPATH", site.to_str().unwrap())]);
    r.expect_line(
        "ok",
        "program",
        &format!(
            "is Python (a script: #!/usr/bin/python3 -S): its MPI is mpi4py's module {}",
            site.join("mpi4py/MPI.so").display()
        ),
    );
    r.expect_line("ok", "uGNI", "links libugni.so");
    assert!(!r.stdout.contains("nothing to route"), "{}", r.stdout);

    // A site's sitecustomize that prints, and more than a pipe holds, before the doctor's
    // question runs: the answer is still found.
    std::fs::write(site.join("sitecustomize.py"), "print('Welcome to the cluster\\n' * 20000)\n").unwrap();
    let chatty = scratch().join("chatty.py");
    write_script(&chatty, "#!/usr/bin/python3\nfrom mpi4py import MPI\n");
    let r = doctor(&[chatty.to_str().unwrap()], &[("PYTHONPATH", site.to_str().unwrap())]);
    r.expect_line(
        "ok",
        "program",
        &format!(
            "is Python (a script: #!/usr/bin/python3): its MPI is mpi4py's module {}",
            site.join("mpi4py/MPI.so").display()
        ),
    );
    std::fs::remove_file(site.join("sitecustomize.py")).unwrap();

    let r = doctor(&[s], &[]);
    r.expect_line("problem", "program", "and /usr/bin/python3 has no mpi4py: the doctor cannot see which MPI it runs");
    r.expect_code(1);
}

#[test]
fn a_script_or_a_non_elf_file_is_named_for_what_it_is() {
    let dir = scratch();
    let script = dir.join("launch.sh");
    std::fs::write(&script, "#!/bin/sh -e\nexec ./app \"$@\"\n").unwrap();
    let r = doctor(&[script.to_str().unwrap()], &[]);
    r.expect_code(1);
    r.expect_line("problem", "program", "is a script (#!/bin/sh -e), not an ELF program");
    let junk = dir.join("junk.bin");
    std::fs::write(&junk, vec![0x5a_u8; 64 << 20]).unwrap();
    let r = doctor(&[junk.to_str().unwrap()], &[]);
    r.expect_line("problem", "program", "is not an ELF file (unknown format)");
    // The first 200 bytes of a real program: its header, then program headers cut short.
    let cut = dir.join("cut");
    std::fs::write(&cut, &std::fs::read(ugni_program()).unwrap()[..200]).unwrap();
    let r = doctor(&[cut.to_str().unwrap()], &[]);
    r.expect_code(1);
    r.expect_line("problem", "program", "is a damaged ELF file");
    let _ = std::fs::remove_file(&junk);
}

/// Cray MPICH's own routing request: libaar.so changes adaptive requests only.
#[test]
fn whether_the_decider_s_lock_can_be_biased_on_this_node_is_stated() {
    let prog = ugni_program();
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    if lock_can_be_biased() {
        r.expect_line("ok", "lock", "can be biased to the thread that posts here");
    } else {
        r.expect_line("note", "lock", "cannot be biased here");
    }
    // Under a seccomp filter that kills a process for membarrier(2), as a container's may: a note
    // that says so, and the doctor is not killed for asking.
    let seccomp =
        compile("seccomp-exec", &std::fs::read_to_string(root().join("tests/c/seccomp_exec.c")).unwrap(), &[]);
    let r = doctor_under(Some(&seccomp), &[prog.to_str().unwrap()], &[]);
    r.expect_code(0);
    r.expect_line("note", "lock", "cannot be biased here: the process runs under a seccomp filter");
}

#[test]
fn two_copies_of_libaar_in_ld_preload_are_a_warning() {
    let prog = ugni_program();
    let other = scratch().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let copy = other.join("libaar.so");
    std::fs::copy(libaar(), &copy).unwrap();
    // The same file twice is one copy; another file is a second.
    let same = format!("{0}:{0}", libaar().display());
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &same)]);
    assert!(!r.stdout.contains("copies of libaar.so"), "{}", r.stdout);
    let two = format!("{}:{}:{}", libaar().display(), copy.display(), libaar().display());
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &two)]);
    r.expect_line(
        "warning",
        "preload",
        &format!(
            "LD_PRELOAD names 2 copies of libaar.so ({}, {})",
            libaar().canonicalize().unwrap().display(),
            copy.canonicalize().unwrap().display()
        ),
    );
    r.expect_code(3);
}

/// A file size limit (`ulimit -f`, which batch systems pass on) stops the library's records and
/// trace: a warning where the settings write some, a note otherwise, nothing without a limit.
#[test]
fn a_file_size_limit_is_named_where_the_library_writes_files() {
    let prog = ugni_program();
    let sh = scratch().join("ulimit-sh");
    write_script(&sh, "#!/bin/sh\nulimit -f 2048 && exec \"$@\"\n");
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", "/tmp")]);
    // (`ulimit -f` counts 512 or 1024 bytes, by the shell.)
    assert!(
        r.has_line("warning", "files", "files are limited to 1048576 bytes here")
            || r.has_line("warning", "files", "files are limited to 2097152 bytes here"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("fix: Raise it in the batch script (ulimit -f unlimited)"), "{}", r.stdout);
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[]);
    r.expect_line("note", "files", "(ulimit -f)");
    // Blank, as libaar.so takes it, AAR_OUTPUT_DIR and AAR_TRACE are unset: no file is written.
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", " "), ("AAR_TRACE", " ")]);
    r.expect_line("note", "files", "(ulimit -f)");
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", "/tmp")]);
    assert!(!r.stdout.contains("ulimit -f"), "{}", r.stdout);
}

/// A library in LD_PRELOAD that takes uGNI's posts too (a second router such as awr, or a
/// tracer), before or after libaar.so, is a warning that names it, what it defines and the fix;
/// libugni itself is no router, but before libaar.so it takes every post from it: a problem.
#[test]
fn a_second_router_in_ld_preload_is_a_warning_in_either_place() {
    let prog = ugni_program();
    let router = scratch().join("libother_router.so");
    let st = Command::new("gcc")
        .args(["-O2", "-shared", "-fPIC", "-I"])
        .arg(root().join("cabi"))
        .arg(root().join("tests/c/other_router.c"))
        .arg("-o")
        .arg(&router)
        .arg("-ldl")
        .status()
        .unwrap();
    assert!(st.success());
    for (order, place) in [((true, false), "before libaar.so"), ((false, true), "after libaar.so")] {
        let entries = match order {
            (true, _) => [router.display().to_string(), libaar().display().to_string()],
            _ => [libaar().display().to_string(), router.display().to_string()],
        };
        let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &entries.join(":"))]);
        r.expect_code(3);
        r.expect_line("warning", "preload", &format!("LD_PRELOAD also has {}, {place}", router.display()));
        r.expect_line("warning", "preload", "It defines GNI_PostFma, GNI_PostRdma: a second router");
        assert!(r.stdout.contains(&format!("fix: Preload one router: take {} out of LD_PRELOAD", router.display())));
    }
    // libugni itself: after libaar.so it is no router; before it, it takes every post.
    let ugni = libdir().join("libugni.so");
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &format!("{}:{}", libaar().display(), ugni.display()))]);
    r.expect_code(0);
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &format!("{}:{}", ugni.display(), libaar().display()))]);
    assert!(!r.stdout.contains("second router"), "{}", r.stdout);
    r.expect_code(1);
    r.expect_line("problem", "preload", &format!("LD_PRELOAD puts {} before libaar.so", ugni.display()));
    r.expect_line("problem", "preload", "libaar.so routes none of them");
}

/// A library in LD_PRELOAD that defines MPI collectives libaar.so wraps (a profiling tool): before
/// libaar.so it is a warning that names it, how many it defines and the fix; after it, an `ok`;
/// one that defines none gets no line.
#[test]
fn a_profiling_tool_preloaded_before_libaar_is_a_warning_and_after_it_ok() {
    let prog = ugni_program();
    let tool = compile(
        "libtool.so",
        "int MPI_Allreduce(void) { return 0; }\nint MPI_Barrier(void) { return 0; }\n\
         int MPI_Init(void) { return 0; }\n",
        &["-shared", "-fPIC"],
    );
    let other = compile("libother.so", "int other(void) { return 0; }\n", &["-shared", "-fPIC"]);
    let (tool, other, aar) = (tool.display().to_string(), other.display().to_string(), libaar().display().to_string());
    let defines = "defines MPI_Allreduce, MPI_Barrier: 2 of the ";

    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &format!("{other} {tool}:{aar}"))]);
    r.expect_line("warning", "preload", &format!("LD_PRELOAD puts {tool} before libaar.so, and it {defines}"));
    assert!(r.stdout.contains("Put libaar.so first in LD_PRELOAD"), "{}", r.stdout);
    assert!(!r.stdout.contains(&other), "a library that defines none gets no line:\n{}", r.stdout);
    r.expect_code(3);

    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &format!("{aar} {tool}"))]);
    r.expect_line("ok", "preload", &format!("{tool}, after libaar.so in LD_PRELOAD, {defines}"));
    r.expect_code(0);
}

#[test]
fn a_non_adaptive_mpich_gni_routing_mode_is_a_warning() {
    let prog = ugni_program();
    let r = doctor(&[prog.to_str().unwrap()], &[("MPICH_GNI_ROUTING_MODE", "IN_ORDER")]);
    r.expect_code(3);
    r.expect_line("warning", "MPICH", "MPICH_GNI_ROUTING_MODE=IN_ORDER is not an adaptive mode");
    assert!(r.stdout.contains("fix: Unset MPICH_GNI_ROUTING_MODE, or set one of ADAPTIVE_0 to ADAPTIVE_3."));
    let r = doctor(&[prog.to_str().unwrap()], &[("MPICH_GNI_ROUTING_MODE", "ADAPTIVE_1")]);
    r.expect_code(0);
    r.expect_line("note", "MPICH", "MPICH_GNI_ROUTING_MODE=ADAPTIVE_1: Cray MPICH's posts ask for ADAPTIVE1");
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    assert!(!r.stdout.contains("MPICH_GNI_ROUTING_MODE"), "{}", r.stdout);
}

#[test]
fn a_static_program_cannot_be_preloaded_and_the_fix_is_named() {
    let prog = static_program();
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_code(1);
    r.expect_line("ok", "program", "ELF 64-bit");
    r.expect_line("problem", "linking", "statically linked: the dynamic loader never runs, so LD_PRELOAD");
    assert!(r.stdout.contains("fix: Rebuild it dynamically linked: on a Cray, export CRAYPE_LINK_TYPE=dynamic"));
    assert!(r.stdout.contains("-dynamic"), "{}", r.stdout);
    assert!(r.stdout.contains("libaar.so will not work for this program as things stand (exit 1)"));
}

#[test]
fn a_set_user_id_program_of_another_user_is_a_problem_since_the_loader_ignores_the_preload() {
    let as_root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    // A program that says whether libaar.so is mapped into it.
    let maps = compile(
        "maps-app",
        "#include <stdio.h>\n#include <string.h>\nint main(void) { char l[4096]; int n = 0;\n\
         FILE *f = fopen(\"/proc/self/maps\", \"r\"); while (f && fgets(l, sizeof l, f)) n |= !!strstr(l, \"libaar\");\n\
         printf(\"libaar %s\\n\", n ? \"loaded\" : \"absent\"); return 0; }\n",
        &[],
    );
    let prog = if as_root {
        // Set-user-ID to nobody: run by root, the kernel starts it in secure-execution mode.
        let p = scratch().join("suid-app");
        std::fs::copy(&maps, &p).unwrap();
        std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
        let out = Command::new(&p).env("LD_PRELOAD", libaar()).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "libaar absent\n", "the loader preloaded it after all");
        p
    } else {
        // A user runs the system's set-user-ID root programs in that mode.
        let Some(p) = ["/bin/su", "/usr/bin/su", "/usr/bin/passwd"].iter().map(PathBuf::from).find(|p| p.exists())
        else {
            panic!("no set-user-ID program (su, passwd) to check");
        };
        p
    };
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_code(1);
    r.expect_line("problem", "program", "is set-user-ID (owner uid ");
    r.expect_line("problem", "program", "secure-execution mode, where the loader ignores every LD_PRELOAD entry");
    assert!(r.stdout.contains("fix: Run a copy that is not set-user-ID"), "{}", r.stdout);
    // Owned by the one who runs it, the bit changes nothing: the preload applies.
    let own = scratch().join("suid-own-app");
    std::fs::copy(&maps, &own).unwrap();
    std::fs::set_permissions(&own, std::os::unix::fs::PermissionsExt::from_mode(0o6755)).unwrap();
    let out = Command::new(&own).env("LD_PRELOAD", libaar()).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "libaar loaded\n");
    let r = doctor(&[own.to_str().unwrap()], &[]);
    assert!(!r.stdout.contains("set-user-ID"), "{}", r.stdout);
}

#[test]
fn a_library_not_found_here_leaves_open_whether_there_is_anything_to_route() {
    let lib = libdir();
    // libugni through a library of the program's own (an MPI, a PGAS runtime) that this
    // environment does not find (its module not loaded).
    let mid = compile(
        "libaarmid.so",
        "void GNI_CdmCreate(void);\nvoid aarmid(void) { GNI_CdmCreate(); }\n",
        &["-shared", "-fPIC", "-L", lib.to_str().unwrap(), "-lugni", &format!("-Wl,-rpath,{}", lib.display())],
    );
    let dir = scratch();
    let prog = compile(
        "via-mid-app",
        "void aarmid(void);\nint main(void) { aarmid(); return 0; }\n",
        &["-L", dir.to_str().unwrap(), "-laarmid"],
    );
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_LIBRARY_PATH", UNSET)]);
    r.expect_code(3);
    r.expect_line("warning", "routing", "1 library the program needs (libaarmid.so) cannot be found");
    r.expect_line("note", "uGNI", "does not link libugni among the libraries the loader would find here");
    assert!(!r.stdout.contains("nothing to route"), "{}", r.stdout);
    // Found, it is followed to the libugni it links.
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_LIBRARY_PATH", dir.to_str().unwrap())]);
    r.expect_code(0);
    r.expect_line("ok", "uGNI", &format!("needed by {})", mid.display()));
}

#[test]
fn a_program_without_ugni_or_dmapp_gives_libaar_nothing_to_route() {
    // Looked up through PATH, as a shell would.
    let r = doctor(&["true"], &[]);
    r.expect_code(1);
    assert!(r.stdout.lines().next().unwrap().ends_with("/true"), "{}", r.stdout);
    r.expect_line("ok", "linking", "dynamically linked");
    r.expect_line("note", "uGNI", "does not link libugni");
    r.expect_line("note", "DMAPP", "does not link libdmapp");
    r.expect_line("problem", "routing", "links neither libugni nor libdmapp");
    assert!(r.stdout.contains("libaar.so has nothing to route in this program"));
    assert!(!r.stdout.contains("job launcher"), "{}", r.stdout);
}

/// A job launcher given as the program (`aar doctor srun`, by habit) is told to give the
/// application, or to put the launcher in front of the doctor.
#[test]
fn a_launcher_given_as_the_program_is_told_to_give_the_application() {
    let dir = scratch().join("launchers");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["srun", "mpiexec.hydra"] {
        let fake = dir.join(name);
        std::fs::copy("/bin/true", &fake).unwrap();
        let r = doctor(&[fake.to_str().unwrap()], &[]);
        r.expect_code(1);
        r.expect_line("problem", "routing", "links neither libugni nor libdmapp");
        assert!(r.stdout.contains(&format!("{name} is a job launcher")), "{}", r.stdout);
        assert!(r.stdout.contains(&format!("{name} -n 1 aar doctor ./app")), "{}", r.stdout);
    }
}

/// A program that measures with PAPI itself may count on the NIC counters' component, which PAPI
/// gives one event set at a time: the doctor says that libaar.so then gives way.
#[test]
fn a_program_that_links_papi_is_told_that_its_measurement_comes_first() {
    let lib = libdir();
    let source =
        "#include \"gni_pub.h\"\n#include <papi.h>\n#include <stdio.h>\nint main(void) { gni_cdm_handle_t cdm;\n\
                  printf(\"%d %d\\n\", (int)GNI_CdmCreate(0, 0, 0, 0, &cdm), PAPI_is_initialized()); return 0; }\n";
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let prog = compile("ugni-papi-app", source, &["-L", lib.to_str().unwrap(), "-lugni", "-lpapi", &rpath]);
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_code(0);
    r.expect_line("note", "PAPI", "links libpapi.so");
    r.expect_line("note", "PAPI", "libaar.so gives its counters up to it while it counts");
    let r = doctor(&[ugni_program().to_str().unwrap()], &[]);
    assert!(!r.has_line("note", "PAPI", "gives its counters up"), "{}", r.stdout);
}

/// A dynamic program with libugni linked in from its static archive (`-Wl,-Bstatic -lugni`): its
/// calls to uGNI never go through the loader, so libaar.so cannot route them, and no libugni.so
/// appears among its libraries.
#[test]
fn a_program_that_carries_its_own_libugni_is_named_for_it() {
    // An archive libugni.a that defines two of uGNI's sends, as Cray's does.
    let dir = scratch().join("archive");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("ugni.c");
    std::fs::write(
        &src,
        "int GNI_PostRdma(void *e, void *d) { return e != d; }\nint GNI_PostFma(void *e, void *d) { return e == d; }\n",
    )
    .unwrap();
    let object = dir.join("ugni.o");
    assert!(Command::new("gcc").args(["-O2", "-c"]).arg(&src).arg("-o").arg(&object).status().unwrap().success());
    let _ = std::fs::remove_file(dir.join("libugni.a"));
    assert!(Command::new("ar").arg("rcs").arg(dir.join("libugni.a")).arg(&object).status().unwrap().success());
    let source = "int GNI_PostRdma(void *, void *);\nint main(void) { return GNI_PostRdma(0, 0); }\n";
    let prog =
        compile("archive-app", source, &["-L", dir.to_str().unwrap(), "-Wl,-Bstatic", "-lugni", "-Wl,-Bdynamic"]);
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_code(1);
    r.expect_line("ok", "linking", "dynamically linked");
    r.expect_line("note", "uGNI", "does not link libugni");
    r.expect_line(
        "problem",
        "routing",
        "the program has its own copy of network functions (GNI_PostFma, GNI_PostRdma: libugni",
    );
    assert!(r.stdout.contains("fix: Link libugni and libdmapp as shared libraries"), "{}", r.stdout);

    // Stripped, the program no longer says what it carries: the general problem, which says so.
    let stripped = scratch().join("archive-app-stripped");
    assert!(Command::new("strip").arg("-o").arg(&stripped).arg(&prog).status().unwrap().success());
    let r = doctor(&[stripped.to_str().unwrap()], &[]);
    r.expect_line("problem", "routing", "links neither libugni nor libdmapp");
    assert!(r.stdout.contains("a stripped one that carries libugni from its static archive"), "{}", r.stdout);
}

#[test]
fn a_missing_event_is_named_whether_papi_refuses_it_or_takes_it_as_a_placeholder() {
    let prog = ugni_program();
    // A name no PAPI component knows: the library's own opening fails on it.
    let sde = sde_events();
    let mut events = sde.clone();
    events[1] = "AR_NIC_NO_SUCH_EVENT".into();
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_PAPI_EVENTS", &events.join(","))]);
    r.expect_code(1);
    r.expect_line("ok", "event", &sde[0]);
    r.expect_line("problem", "event", "request stalled cycles: AR_NIC_NO_SUCH_EVENT does not exist");
    r.expect_line("ok", "event", &sde[2]);
    r.expect_line("note", "counters", "aar: the PAPI event AR_NIC_NO_SUCH_EVENT is not available");
    assert!(r.stdout.contains("fix: Correct AAR_PAPI_EVENTS"), "{}", r.stdout);
    // An sde::: name nothing registered: PAPI would accept it and read 0 forever.
    events[1] = "sde:::aries::AR_NIC_NO_SUCH_EVENT".into();
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_PAPI_EVENTS", &events.join(","))]);
    r.expect_code(1);
    r.expect_line(
        "problem",
        "event",
        "sde:::aries::AR_NIC_NO_SUCH_EVENT does not exist (no library loaded in this process registered",
    );
    r.expect_line("ok", "event", &sde[3]);
}

/// An optional fifth event PAPI refuses: one finding, the event's warning with its fix, not a
/// second warning without one from libaar.so's note on the same event.
#[test]
fn a_missing_optional_event_is_one_warning_with_its_fix() {
    let prog = ugni_program();
    let mut events = sde_events();
    events[4] = "AR_NIC_NO_SUCH_EVENT".into();
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_PAPI_EVENTS", &events.join(","))]);
    r.expect_code(3);
    r.expect_line("warning", "event", "(optional): AR_NIC_NO_SUCH_EVENT does not exist");
    assert!(r.stdout.contains("fix: Correct AAR_PAPI_EVENTS"), "{}", r.stdout);
    assert!(!r.has_line("warning", "counters", "AR_NIC_NO_SUCH_EVENT"), "{}", r.stdout);
    assert!(r.stdout.contains("result: 1 warning, no problem"), "{}", r.stdout);
}

/// `steady` is automatic routing too: without its counters it falls back to a fixed mode, so a
/// missing event is a problem under it, as under `auto`, not a warning that routing is unaffected.
#[test]
fn a_missing_event_is_a_problem_under_steady_too() {
    let prog = ugni_program();
    let mut events = sde_events();
    events[1] = "AR_NIC_NO_SUCH_EVENT".into();
    for mode in ["steady", "ADAPTIVE0"] {
        let r = doctor(&[prog.to_str().unwrap()], &[("AAR_PAPI_EVENTS", &events.join(",")), ("AAR_MODE", mode)]);
        if mode == "steady" {
            r.expect_code(1);
            r.expect_line("problem", "event", "request stalled cycles: AR_NIC_NO_SUCH_EVENT does not exist");
        } else {
            r.expect_line("warning", "event", "automatic routing is not in use, so routing is unaffected");
        }
    }
}

/// The Aries default events missing (a login node, a node without PAPI's Aries counters, off-Cray):
/// "unset AAR_PAPI_EVENTS for the Aries defaults" would change nothing, so the fix says where
/// they exist instead, and why the defaults are in use: once, for the five events.
#[test]
fn missing_default_events_are_sent_to_a_compute_node_not_to_unset_the_variable() {
    let prog = ugni_program();
    for (value, why) in [
        (UNSET, "(AAR_PAPI_EVENTS is unset)"),
        ("A,B", "(AAR_PAPI_EVENTS was not taken: see its warning)"),
        // Empty or blank counts as unset, as for every AAR_* variable: the defaults are in use.
        (" ", "(AAR_PAPI_EVENTS is empty, which counts as unset)"),
    ] {
        let r = doctor(&[prog.to_str().unwrap()], &[("AAR_PAPI_EVENTS", value)]);
        r.expect_code(1);
        r.expect_line("problem", "event", "request flits: AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS does not exist");
        let fix = format!(
            "fix: These are the Aries defaults {why}, which exist on the compute nodes of a Cray XC only: run this \
             check there (srun -n 1 aar doctor ./app"
        );
        // Said once, after the last of the five events it fixes, not once per event.
        assert_eq!(r.stdout.matches(&fix).count(), 1, "once for the five events:\n{}", r.stdout);
        let lines: Vec<&str> = r.stdout.lines().collect();
        let fix_at = lines.iter().position(|l| l.contains(&fix)).unwrap();
        let events: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.split_whitespace().nth(1) == Some("event"))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(events.len(), 5, "{}", r.stdout);
        assert_eq!(fix_at, events[4] + 1, "the fix follows the last event:\n{}", r.stdout);
        assert!(!r.stdout.contains("or unset it for the Aries defaults"), "{}", r.stdout);
        assert!(r.stdout.contains("; the 5 default Aries PAPI events;"), "{}", r.stdout);
    }
}

/// Without a libpapi where the loader looks (no `module load papi`): a problem whose fix, followed
/// (AAR_PAPI_LIBRARY naming a libpapi elsewhere), makes PAPI load and the events exist. Run in a
/// mount namespace in which no libpapi exists (tests/support/without-papi.sh), where one can be made.
#[test]
fn without_libpapi_the_fix_names_aar_papi_library_and_following_it_works() {
    if !Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here: the case is not run");
        return;
    }
    let prog = ugni_program();
    let dir = scratch().join("no-papi");
    std::fs::create_dir_all(dir.join("ns")).unwrap();
    // The libpapi the loader finds here, copied where no folder of the loader's is.
    let r = doctor(&[prog.to_str().unwrap(), "--json"], &[]);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    let papi = doc["selfcheck"]["papi"]["path"].as_str().expect("PAPI loads outside the namespace").to_string();
    let copy = dir.join("papi/libpapi.so");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&papi, &copy).unwrap();
    let wrapper = dir.join("without-papi");
    write_script(
        &wrapper,
        &format!(
            "#!/bin/sh\nexec unshare -m sh {} {} \"$@\"\n",
            root().join("tests/support/without-papi.sh").display(),
            dir.join("ns").display()
        ),
    );
    // The usual names were tried, and the fix is to load PAPI or to name it.
    let usual_names_tried = |r: &Run| {
        r.expect_code(1);
        r.expect_line("problem", "PAPI", "aar: PAPI could not be loaded (tried libpapi.so,");
        assert!(
            r.stdout.contains("fix: module load papi (on a Cray), or set AAR_PAPI_LIBRARY to the path of libpapi.so"),
            "{}",
            r.stdout
        );
    };
    let r = doctor_under(Some(&wrapper), &[prog.to_str().unwrap()], &[]);
    assert_ne!(r.code, 97, "the namespace could not be set up: {}", r.stderr);
    usual_names_tried(&r);
    // AAR_PAPI_LIBRARY naming a file that is not there: the fix is to correct it, not to set it.
    let wrong = dir.join("papi/no-such-libpapi.so");
    let r = doctor_under(Some(&wrapper), &[prog.to_str().unwrap()], &[("AAR_PAPI_LIBRARY", wrong.to_str().unwrap())]);
    r.expect_code(1);
    r.expect_line("problem", "PAPI", &format!("aar: PAPI could not be loaded (tried {}", wrong.display()));
    assert!(
        r.stdout.contains(&format!("fix: Correct AAR_PAPI_LIBRARY (it names {})", wrong.display())),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("or set AAR_PAPI_LIBRARY"), "{}", r.stdout);
    // AAR_PAPI_LIBRARY empty or blank counts as unset: the usual names were tried, and it names nothing.
    usual_names_tried(&doctor_under(Some(&wrapper), &[prog.to_str().unwrap()], &[("AAR_PAPI_LIBRARY", " ")]));
    let r = doctor_under(Some(&wrapper), &[prog.to_str().unwrap()], &[("AAR_PAPI_LIBRARY", copy.to_str().unwrap())]);
    r.expect_code(0);
    r.expect_line("ok", "PAPI", &format!("loaded from {}", copy.display()));
    r.expect_line("ok", "counters", "libaar.so's own PAPI opening succeeded");
}

/// A relative AAR_OUTPUT_DIR or AAR_TRACE is taken from the folder each process starts in: the
/// doctor, run where the folder is, finds it writable but warns, and its fix (the path made
/// absolute from here) leaves nothing to warn about.
#[test]
fn relative_record_and_trace_paths_are_warned_of_with_their_absolute_form() {
    let prog = ugni_program();
    let prog = prog.to_str().unwrap();
    let here = scratch().join("relative paths");
    std::fs::create_dir_all(here.join("recs")).unwrap();
    let r = doctor_in(Some(&here), None, &[prog], &[("AAR_OUTPUT_DIR", "recs"), ("AAR_TRACE", "t.%p")]);
    r.expect_code(3);
    r.expect_line("ok", "records", "AAR_OUTPUT_DIR=recs is a writable folder");
    r.expect_line(
        "warning",
        "records",
        "AAR_OUTPUT_DIR=recs is a relative path: each process takes it from the folder",
    );
    r.expect_line("warning", "trace", "AAR_TRACE=t.%p is a relative path");
    let fix = |var: &str| {
        let line = format!("fix: export {var}=");
        let fix = r.stdout.lines().find_map(|l| l.trim().strip_prefix(&line)).unwrap_or_else(|| {
            panic!("no fix line for {var}:\n{}", r.stdout);
        });
        let out = Command::new("sh").arg("-c").arg(format!("printf %s {fix}")).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let (records, trace) = (fix("AAR_OUTPUT_DIR"), fix("AAR_TRACE"));
    assert_eq!(records, here.join("recs").to_str().unwrap());
    assert_eq!(trace, here.join("t.%p").to_str().unwrap());
    let r = doctor(&[prog], &[("AAR_OUTPUT_DIR", &records), ("AAR_TRACE", &trace)]);
    r.expect_code(0);
}

/// A missing record folder: the fix line, pasted into a shell, makes that folder (a space or a
/// quote in its name included) and the doctor then calls it writable; where mkdir cannot make it
/// (under a file), the fix says so and offers no mkdir.
#[test]
fn the_fix_for_a_missing_record_folder_makes_it() {
    let prog = ugni_program();
    let top = scratch().join("records of mine");
    _ = std::fs::remove_dir_all(&top);
    let dir = top.join("Jo's");
    let d = dir.to_str().unwrap();
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", d)]);
    r.expect_code(3);
    r.expect_line("warning", "records", &format!("AAR_OUTPUT_DIR={d} cannot be used (No such file"));
    // What is in effect says so too, rather than "records in" a folder that takes none.
    assert!(r.stdout.contains(&format!("; no records (AAR_OUTPUT_DIR={d} cannot be used)")), "{}", r.stdout);
    assert!(!r.stdout.contains("; records in "), "{}", r.stdout);
    let fix = r
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("warning  records"))
        .nth(1)
        .and_then(|l| l.trim().strip_prefix("fix: "))
        .unwrap_or_else(|| panic!("no fix line under the records warning:\n{}", r.stdout))
        .to_string();
    let st = Command::new("sh").arg("-c").arg(&fix).current_dir(scratch()).status().unwrap();
    assert!(st.success() && dir.is_dir(), "`{fix}` did not make {d}");
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", d)]);
    r.expect_code(0);
    r.expect_line("ok", "records", &format!("AAR_OUTPUT_DIR={d} is a writable folder"));
    assert!(r.stdout.contains(&format!("; records in {d}")), "{}", r.stdout);
    let under_file = format!("{}/records", libaar().display());
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", &under_file)]);
    r.expect_line("warning", "records", &format!("AAR_OUTPUT_DIR={under_file} cannot be used"));
    assert!(
        r.stdout.contains(&format!("fix: {} is not a folder, so mkdir cannot make {under_file}.", libaar().display())),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("fix: mkdir"), "{}", r.stdout);
}

/// A record folder that is a symbolic link to nothing (or has one in its path), as a link to a
/// scratch folder left after the folder was cleaned up: `mkdir -p` of its name fails ("File
/// exists"), so the doctor names the link and its target, and the fix's mkdir, pasted into a
/// shell, makes the folder the link leads to (a relative target is taken from the link's folder),
/// after which the doctor calls the folder writable.
#[test]
fn a_record_folder_that_is_a_link_to_nothing_names_the_link_and_makes_its_target() {
    let prog = ugni_program();
    let top = scratch().join("links");
    _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(&top).unwrap();
    let gone = top.join("gone of mine/Jo's");
    let link = top.join("records");
    std::os::unix::fs::symlink(&gone, &link).unwrap();
    std::os::unix::fs::symlink("relative/gone", top.join("in-path")).unwrap();
    let quoted = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
    for (dir, named, target, make) in [
        (link.clone(), link.clone(), quoted(&gone), gone.clone()),
        (top.join("in-path/sub"), top.join("in-path"), "relative/gone".to_string(), top.join("relative/gone/sub")),
    ] {
        let d = dir.to_str().unwrap();
        let r = doctor(&[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", d)]);
        r.expect_code(3);
        r.expect_line(
            "warning",
            "records",
            &format!(
                "AAR_OUTPUT_DIR={d} cannot be used ({} is a symbolic link to {target}, which does not exist)",
                named.display()
            ),
        );
        let fix = r
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("warning  records"))
            .nth(1)
            .and_then(|l| l.trim().strip_prefix("fix: "))
            .unwrap_or_else(|| panic!("no fix line under the records warning:\n{}", r.stdout))
            .to_string();
        let want = "(where the link leads), or point AAR_OUTPUT_DIR at another folder.";
        let mkdir = fix.strip_suffix(want).unwrap_or_else(|| panic!("{d}: no {want:?} in {fix:?}"));
        assert!(mkdir.starts_with("mkdir -p ") && !mkdir.contains(d), "{d}: {fix:?}");
        let st = Command::new("sh").arg("-c").arg(mkdir).current_dir(scratch()).status().unwrap();
        assert!(st.success() && make.is_dir() && dir.is_dir(), "`{mkdir}` did not make {} for {d}", make.display());
        let r = doctor(&[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", d)]);
        r.expect_code(0);
        r.expect_line("ok", "records", &format!("AAR_OUTPUT_DIR={d} is a writable folder"));
    }
}

/// A record folder on a file system mounted read-only (in a mount namespace of the test's), and a
/// missing one there: the doctor names that cause and its fix, offers no mkdir, and says what
/// libaar.so's own start-up warning says for the same folder (one text, `aar_record::folder`).
#[test]
fn a_record_folder_on_a_read_only_file_system_is_named_as_such() {
    if !Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here: the read-only case is not run");
        return;
    }
    let prog = ugni_program();
    // GNI_CdmAttach starts libaar.so, which checks the folder.
    let lib = libdir();
    let attaching = compile(
        "ugni-attach-app",
        "#include \"gni_pub.h\"\nint main(void) { gni_cdm_handle_t cdm; gni_nic_handle_t nic; uint32_t a;\n\
         return GNI_CdmCreate(0, 0, 0, 0, &cdm) || GNI_CdmAttach(cdm, 0, &a, &nic); }\n",
        &["-L", lib.to_str().unwrap(), "-lugni", &format!("-Wl,-rpath,{}", lib.display())],
    );
    let ro = scratch().join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let ro = ro.to_str().unwrap();
    let sh = scratch().join("read-only-sh");
    // The mount is made in a mount namespace of the wrapped command's own: the host's mounts stay
    // as they were (a mount left there would also keep the test folder from being removed).
    let script = format!(
        "#!/bin/sh\nexec unshare -m sh -c 'mount -t tmpfs -o ro tmpfs \"$0\" || exit 97; exec \"$@\"' '{ro}' \"$@\"\n"
    );
    write_script(&sh, &script);
    let read_only = "is on a read-only file system: point AAR_OUTPUT_DIR at a folder on a writable one.";
    let missing = format!("{ro}/records");
    for (dir, problem, fix) in [
        (ro, "cannot be written in (Read-only file system", format!("It {read_only}")),
        (
            missing.as_str(),
            "cannot be used (No such file",
            format!("{ro} cannot be written in (Read-only file system (os error 30)), so mkdir cannot make {missing}. {ro} {read_only}"),
        ),
    ] {
        let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", dir)]);
        assert_ne!(r.code, 97, "namespace setup failed: {}", r.stderr);
        r.expect_line("warning", "records", &format!("AAR_OUTPUT_DIR={dir} {problem}"));
        assert!(r.stdout.contains(&format!("fix: {fix}\n")), "{}", r.stdout);
        assert!(!r.stdout.contains("mkdir -p"), "{}", r.stdout);
        // libaar.so, preloaded into a program under the same mount, gives the same fix.
        let out = Command::new(&sh)
            .arg(&attaching)
            .env("LD_PRELOAD", libaar())
            .env("AAR_OUTPUT_DIR", dir)
            .env("AAR_PAPI_EVENTS", sde_events().join(","))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("; the per-rank record will not be written. Fix: {fix}\n")), "{err}");
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&format!(" {ro} ")), "the read-only mount was left on the host: {ro}");
}

/// A record folder on a full file system takes an empty file but not a record: the doctor's
/// probe writes bytes, so that the folder is not called writable where the job's record would
/// fail for want of room (libaar.so then says so at exit, too late).
#[test]
fn a_record_folder_on_a_full_file_system_is_not_called_writable() {
    if !Command::new("unshare").args(["-m", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("note: no mount namespace here: the full file system case is not run");
        return;
    }
    let prog = ugni_program();
    let full = scratch().join("full");
    std::fs::create_dir_all(&full).unwrap();
    let full = full.to_str().unwrap();
    let sh = scratch().join("full-sh");
    // A small tmpfs, filled up, in the wrapped command's own mount namespace.
    let script = format!(
        "#!/bin/sh\nexec unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs \"$0\" || exit 97; \
         head -c 1048576 /dev/zero > \"$0/fill\" 2>/dev/null; exec \"$@\"' '{full}' \"$@\"\n"
    );
    write_script(&sh, &script);
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", full)]);
    assert_ne!(r.code, 97, "namespace setup failed: {}", r.stderr);
    r.expect_line(
        "warning",
        "records",
        &format!("AAR_OUTPUT_DIR={full} cannot be written in (No space left on device"),
    );
    assert!(!r.has_line("ok", "records", "writable"), "{}", r.stdout);
    // The fix of that cause: room, not another folder that can be written in.
    let fix = "fix: Free space there (or quota), or point AAR_OUTPUT_DIR at a file system with room.\n";
    assert!(r.stdout.contains(fix), "{}", r.stdout);
    r.expect_code(3);
    // The same folder with room is writable.
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", full)]);
    r.expect_line("ok", "records", &format!("AAR_OUTPUT_DIR={full} is a writable folder"));
}

/// The decision trace (`AAR_TRACE`) is created at start-up, never over a file that is there: a
/// trace that could not be created is a warning with the fix, before the job (libaar.so says it
/// only in the job), and the check leaves nothing behind.
#[test]
fn the_decision_trace_is_checked_where_the_job_would_create_it() {
    let prog = ugni_program();
    let prog = prog.to_str().unwrap();
    let dir = scratch().join("trace");
    std::fs::create_dir_all(&dir).unwrap();
    // In a folder that is not there: the fix makes it.
    let missing = dir.join("missing/decisions.jsonl");
    let r = doctor(&[prog], &[("AAR_TRACE", missing.to_str().unwrap())]);
    r.expect_code(3);
    r.expect_line("warning", "trace", &format!("cannot create {} (No such file", missing.display()));
    assert!(r.stdout.contains(&format!("fix: mkdir -p {}\n", dir.join("missing").display())), "{}", r.stdout);
    let r = doctor(&[prog], &[("AAR_TRACE", &format!("{}/missing/t.%p", dir.display()))]);
    r.expect_line(
        "warning",
        "trace",
        &format!("its folder {} cannot be used (No such file", dir.join("missing").display()),
    );
    // Over a file that is there: libaar.so would not overwrite it, nor does the check.
    let there = dir.join("there.jsonl");
    std::fs::write(&there, "an earlier trace\n").unwrap();
    let r = doctor(&[prog], &[("AAR_TRACE", there.to_str().unwrap())]);
    r.expect_code(3);
    r.expect_line("warning", "trace", &format!("cannot create {} (File exists", there.display()));
    assert!(r.stdout.contains("fix: A file of that name is already there"), "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(&there).unwrap(), "an earlier trace\n");
    // libaar.so, preloaded into a program, finds the same.
    let lib = libdir();
    let attaching = compile(
        "ugni-attach-app",
        "#include \"gni_pub.h\"\nint main(void) { gni_cdm_handle_t cdm; gni_nic_handle_t nic; uint32_t a;\n\
         return GNI_CdmCreate(0, 0, 0, 0, &cdm) || GNI_CdmAttach(cdm, 0, &a, &nic); }\n",
        &["-L", lib.to_str().unwrap(), "-lugni", &format!("-Wl,-rpath,{}", lib.display())],
    );
    let out = Command::new(&attaching)
        .env("LD_PRELOAD", libaar())
        .env("AAR_TRACE", &there)
        .env("AAR_PAPI_EVENTS", sde_events().join(","))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot create \"{}\" (File exists", there.display())), "{err}");
    // Where it can be created: ok, and no file is left by the check.
    for pattern in [dir.join("new.jsonl").display().to_string(), format!("{}/t.%p", dir.display())] {
        let r = doctor(&[prog], &[("AAR_TRACE", &pattern)]);
        assert!(r.has_line("ok", "trace", &format!("AAR_TRACE={pattern}:")), "{}", r.stdout);
        r.expect_code(0);
    }
    // A `%` code libaar.so does not know: its own warning, before the job.
    let pattern = format!("{}/t.%q", dir.display());
    let r = doctor(&[prog], &[("AAR_TRACE", &pattern)]);
    r.expect_code(3);
    r.expect_line(
        "warning",
        "setting",
        &format!(
            "aar: AAR_TRACE=\"{pattern}\": %q is not one of %r (the rank), %p (the pid) or %% (a %): kept as written"
        ),
    );
    let mut left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["there.jsonl"], "the check left files in {}", dir.display());
}

/// The node table `steady` keeps its state per destination class by: read and checked against
/// the node (`/proc/cray_xt`, here the emulator's `AAR_EMU_CRAY_XT`, and `PMI_GNI_LOC_ADDR`) as
/// libaar.so does at initialisation, so that a table that would put destinations in the wrong
/// classes is found before the job.
#[test]
fn the_node_table_is_read_and_checked_as_the_job_would() {
    let prog = ugni_program().display().to_string();
    let dir = scratch().join("doctor-topology");
    std::fs::create_dir_all(dir.join("cray_xt")).unwrap();
    let table = dir.join("nodes.txt");
    std::fs::write(&table, "256 0x100 c0-0c0s5n0 compute up batch\n257 0x101 c2-0c0s5n0 compute up batch\n0x300 1 1\n")
        .unwrap();
    std::fs::write(dir.join("cray_xt/cname"), "c0-0c0s5n0\n").unwrap();
    let (table, cray_xt) = (table.display().to_string(), dir.join("cray_xt").display().to_string());
    let with = |nid: &str, extra: &[(&str, &str)]| {
        std::fs::write(dir.join("cray_xt/nid"), nid).unwrap();
        let mut env = vec![("AAR_TOPOLOGY", table.as_str()), ("AAR_EMU_CRAY_XT", cray_xt.as_str())];
        env.extend_from_slice(extra);
        doctor(&[prog.as_str()], &env)
    };
    let steady = [("AAR_MODE", "steady"), ("PMI_GNI_LOC_ADDR", "0x100")];
    let r = with("256\n", &steady);
    r.expect_line("ok", "topology", &format!("AAR_TOPOLOGY={table}: 3 nodes (2 from xtprocadmin lines, keyed by NID)"));
    r.expect_line("ok", "topology", "this node's NID 256 (/proc/cray_xt) is its NIC address 0x100 (PMI_GNI_LOC_ADDR)");
    let r = with("300\n", &steady);
    r.expect_line("warning", "topology", "this node's NID is 300 (/proc/cray_xt/nid) but its NIC address is 0x100");
    r.expect_line("warning", "topology", "only its 1 NIC GROUP ROUTER lines are used");
    // Not steady: the table is only described.
    let r = with("256\n", &[("PMI_GNI_LOC_ADDR", "0x100")]);
    r.expect_line("note", "topology", "only steady uses it, and it is not in force");
    // A table that is no file, and no table at all under steady.
    let r = doctor(&[prog.as_str()], &[("AAR_TOPOLOGY", "/dev/zero"), ("AAR_MODE", "steady")]);
    r.expect_line("warning", "topology", "AAR_TOPOLOGY=\"/dev/zero\" is not a usable node table (not a regular file)");
    let r = doctor(&[prog.as_str()], &[("AAR_MODE", "steady")]);
    r.expect_line("note", "topology", "no node table (AAR_TOPOLOGY is unset)");
    let r = doctor(&[prog.as_str()], &[]);
    assert!(!r.stdout.contains("topology"), "auto, no table: nothing to say\n{}", r.stdout);
}

#[test]
fn the_dmapp_routing_table_and_its_source_are_stated() {
    let prog = ugni_program();
    let r = doctor(&[prog.to_str().unwrap()], &[]);
    r.expect_code(0);
    let assumed = "IN_ORDER=0,DETERMINISTIC=1,ADAPTIVE=2,DETERMINISTIC_1=3,ADAPTIVE_1=4,ADAPTIVE_2=5,ADAPTIVE_3=6";
    r.expect_line("note", "DMAPP", &format!("routing table {assumed}, assumed"));
    r.expect_line("note", "DMAPP", "set AAR_DMAPP_ROUTING");
    let table = "ADAPTIVE=4,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7,IN_ORDER=3";
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_DMAPP_ROUTING", table)]);
    r.expect_code(0);
    r.expect_line(
        "ok",
        "DMAPP",
        "routing table IN_ORDER=3,ADAPTIVE=4,ADAPTIVE_1=5,ADAPTIVE_2=6,ADAPTIVE_3=7, from AAR_DMAPP_ROUTING",
    );
    // A bad one: the library's own warning, and the table it uses instead.
    let r = doctor(&[prog.to_str().unwrap(), "--json"], &[("AAR_DMAPP_ROUTING", "ADAPTIVE=4")]);
    r.expect_code(3);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let checks = doc["checks"].as_array().unwrap();
    assert!(checks.iter().any(|c| c["topic"] == "setting"
        && c["text"].as_str().unwrap().contains("AAR_DMAPP_ROUTING=\"ADAPTIVE=4\" is not a DMAPP routing table")));
    assert_eq!(doc["selfcheck"]["dmapp"]["routing_table"], assumed);
    assert_eq!(doc["selfcheck"]["dmapp"]["assumed"], true);
}

#[test]
fn a_bad_setting_is_a_warning_with_the_librarys_own_words() {
    let prog = ugni_program();
    let r = doctor(&[prog.to_str().unwrap()], &[("AAR_MODE", "fast"), ("AAR_MDOE", "ADAPTIVE3")]);
    r.expect_code(3);
    r.expect_line(
        "warning",
        "setting",
        "aar: AAR_MODE=\"fast\" is not a routing policy; using the default auto. Use auto, steady, off, or a fixed mode",
    );
    r.expect_line("warning", "setting", "aar: AAR_MDOE is set but libaar.so does not read it (did you mean AAR_MODE?)");
    assert!(r.stdout.contains("AAR_MODE=fast   (not taken: see the warning above)"), "{}", r.stdout);
    assert!(r.stdout.contains("in effect: policy auto;"), "{}", r.stdout);
    assert!(r.stdout.contains("result: 2 warnings, no problem"), "{}", r.stdout);
    assert!(!r.stdout.lines().any(|l| l.starts_with("problem ")), "{}", r.stdout);
}

/// Settings taken but without effect under a fixed mode: the library's one note, with its own
/// fix (no "Fix or unset" line, which would tell to fix values that are fine), and each of them
/// marked as without effect, not as refused.
#[test]
fn settings_a_fixed_mode_never_reads_are_marked_as_without_effect() {
    let prog = ugni_program();
    let env = [("AAR_MODE", "ADAPTIVE0"), ("AAR_LAMBDA", "2"), ("AAR_SIGMA", "3")];
    let r = doctor(&[prog.to_str().unwrap()], &env);
    r.expect_code(3);
    r.expect_line("warning", "setting", "aar: AAR_LAMBDA, AAR_SIGMA have no effect under AAR_MODE=\"ADAPTIVE0\"");
    assert!(!r.stdout.contains("Fix or unset"), "{}", r.stdout);
    for name in ["AAR_LAMBDA=2", "AAR_SIGMA=3"] {
        assert!(
            r.stdout.contains(&format!("{name}   (no effect under this run's policies: see the warning above)")),
            "{name}: {}",
            r.stdout
        );
    }
    assert!(!r.stdout.contains("not taken"), "{}", r.stdout);
}

#[test]
fn without_the_preload_the_fix_names_the_library_and_lib_chooses_it() {
    let prog = ugni_program();
    let lib = libaar();
    let r = doctor(&[prog.to_str().unwrap(), "--lib", lib.to_str().unwrap()], &[("LD_PRELOAD", "")]);
    r.expect_code(1);
    r.expect_line("problem", "preload", "LD_PRELOAD is not set");
    assert!(r.stdout.contains(&format!("export LD_PRELOAD={}", lib.canonicalize().unwrap().display())), "{}", r.stdout);
    r.expect_line("ok", "libaar.so", "(given with --lib) loads");
    // A `--lib` that is another library is not what the fix suggests preloading.
    let other = libdir().join("libugni.so");
    let r = doctor(&[prog.to_str().unwrap(), "--lib", other.to_str().unwrap()], &[("LD_PRELOAD", "")]);
    r.expect_line("problem", "libaar.so", "(given with --lib) loads but is not libaar.so");
    assert!(r.stdout.contains(&format!("export LD_PRELOAD={}", lib.canonicalize().unwrap().display())), "{}", r.stdout);
    assert!(!r.stdout.contains(&format!("LD_PRELOAD={}", other.canonicalize().unwrap().display())), "{}", r.stdout);
    // A preload entry that does not exist, among others, with a space separator.
    let gone = scratch().join("gone/libaar.so");
    let preload = format!("/lib/nothing-else.so {}", gone.display());
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &preload)]);
    r.expect_code(1);
    r.expect_line("problem", "preload", &format!("LD_PRELOAD names {}, which does not exist", gone.display()));
    // The fix is the LD_PRELOAD that works: `module load aar` again keeps an entry a module loaded
    // before an upgrade (Lmod puts the new one before it: the second case), and following the fix
    // leaves no problem with the preload.
    let lib_now = lib.canonicalize().unwrap();
    for (preload, mended) in [
        (preload.clone(), format!("{}:/lib/nothing-else.so", lib_now.display())),
        (format!("{}:{}", lib.display(), gone.display()), lib.display().to_string()),
    ] {
        let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &preload)]);
        // Beside a libaar.so that exists (the second case), the loader preloads that one: the
        // program runs with libaar.so, and each process prints the loader's error.
        if preload.starts_with(lib.to_str().unwrap()) {
            r.expect_code(3);
            r.expect_line(
                "warning",
                "preload",
                &format!(
                    "LD_PRELOAD names {}, which does not exist: the loader skips it, with an error on the \
                     standard error of every process it starts, and preloads {}",
                    gone.display(),
                    lib.display()
                ),
            );
        } else {
            r.expect_code(1);
        }
        let fix = format!("fix: export LD_PRELOAD={mended} (a module loaded before its files moved");
        assert!(r.stdout.contains(&fix), "no {fix:?} in:\n{}", r.stdout);
        assert!(!r.stdout.contains("module load aar again"), "{}", r.stdout);
        let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &mended)]);
        assert!(!r.stdout.lines().any(|l| l.starts_with("problem  preload")), "{}", r.stdout);
        r.expect_line("ok", "preload", &format!("LD_PRELOAD names {}", mended.split(':').next().unwrap()));
    }
    // Another library under libaar.so's name (a copy of the emulator's libugni.so) routes nothing.
    let impostor = scratch().join("impostor/libaar.so");
    std::fs::create_dir_all(impostor.parent().unwrap()).unwrap();
    std::fs::copy(libdir().join("libugni.so"), &impostor).unwrap();
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", impostor.to_str().unwrap())]);
    r.expect_code(1);
    r.expect_line("problem", "libaar.so", "loads but is not libaar.so: it does not define aar_version");
    assert!(!r.stdout.lines().any(|l| l.starts_with("ok       libaar.so")), "{}", r.stdout);
    // A folder under libaar.so's name (a path cut short) is there, but is no library: said as such,
    // and the fix is the LD_PRELOAD without it.
    let folder = scratch().join("folder/libaar.so");
    std::fs::create_dir_all(&folder).unwrap();
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &format!("{}:{}", folder.display(), lib.display()))]);
    r.expect_code(3);
    r.expect_line(
        "warning",
        "preload",
        &format!(
            "LD_PRELOAD names {}, which is a folder, not a library: the loader skips it, with an error on the \
             standard error of every process it starts, and preloads {}",
            folder.display(),
            lib.display()
        ),
    );
    assert!(r.stdout.contains(&format!("fix: export LD_PRELOAD={}\n", lib.display())), "{}", r.stdout);
    assert!(!r.stdout.contains("does not exist"), "{}", r.stdout);
    // A file under libaar.so's name that is no ELF library (a truncated or text copy): the fix
    // says so, not that ldd would name a missing library.
    let text = scratch().join("text/libaar.so");
    std::fs::create_dir_all(text.parent().unwrap()).unwrap();
    std::fs::write(&text, "not a library\n").unwrap();
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", text.to_str().unwrap())]);
    r.expect_code(1);
    r.expect_line("problem", "libaar.so", &format!("{} (from LD_PRELOAD) does not load", text.display()));
    assert!(
        r.stdout.contains("fix: It is not an ELF file (unknown format), not a shared library: preload the libaar.so"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("ldd"), "{}", r.stdout);
}

#[test]
fn ld_preload_is_split_as_the_loader_splits_it() {
    let prog = ugni_program();
    let lib = libaar();
    // ld.so separates entries by spaces and colons only: a tab or a newline is part of a name,
    // and a name with one is no file, so the program runs without libaar.so.
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &format!("{}\t", lib.display()))]);
    r.expect_code(1);
    r.expect_line("problem", "preload", &format!("LD_PRELOAD names {}\\t, which does not exist", lib.display()));
    assert!(r.stdout.contains("the loader separates its entries by spaces and colons only"), "{}", r.stdout);
    assert!(!r.stdout.lines().any(|l| l.starts_with("ok       preload")), "{}", r.stdout);
    let r = doctor(&[prog.to_str().unwrap()], &[("LD_PRELOAD", &format!("{}\n/lib/other.so", lib.display()))]);
    r.expect_code(1);
    r.expect_line("problem", "preload", &format!("LD_PRELOAD (\"{}\\n/lib/other.so\") does not name", lib.display()));
}

#[test]
fn a_relative_ld_preload_entry_is_a_warning_with_the_absolute_one_as_fix() {
    // Found from the folder the doctor runs in, but the loader takes it from each program's.
    let prog = ugni_program();
    let lib = libaar();
    let r = doctor_in(Some(libdir()), None, &[prog.to_str().unwrap()], &[("LD_PRELOAD", "./libaar.so")]);
    r.expect_code(3);
    r.expect_line("warning", "preload", "LD_PRELOAD names ./libaar.so, a relative path: it exists from here");
    assert!(
        r.stdout.contains(&format!("fix: export LD_PRELOAD={}\n", lib.canonicalize().unwrap().display())),
        "{}",
        r.stdout
    );
    r.expect_line("ok", "libaar.so", "(from LD_PRELOAD) loads");
}

/// `$LIB`, `$PLATFORM` and `$ORIGIN` in LD_PRELOAD are the loader's to replace: the doctor opens
/// the file the loader opens (which the real loader, asked through LD_DEBUG, names here), not a
/// file named `$LIB`; `$ORIGIN` without a program is a note, not a missing file.
#[test]
fn loader_tokens_in_ld_preload_name_the_file_the_loader_opens() {
    let prog = ugni_program();
    let prog = prog.to_str().unwrap();
    let top = scratch().join("tokens");
    // A copy in each folder $LIB may be; the loader, preloading it into a program, names the one it
    // opened, and only that one is kept.
    for lib in ["lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "lib64", "lib"] {
        std::fs::create_dir_all(top.join(lib)).unwrap();
        std::fs::copy(libaar(), top.join(lib).join("libaar.so")).unwrap();
    }
    let entry = format!("{}/$LIB/libaar.so", top.display());
    let out = Command::new("/bin/sh")
        .args(["-c", "exit 0"])
        .env("LD_PRELOAD", &entry)
        .env("LD_DEBUG", "libs")
        .output()
        .unwrap();
    let debug = String::from_utf8_lossy(&out.stderr);
    let opened = debug
        .lines()
        .find_map(|l| l.split("calling init: ").nth(1).filter(|f| f.ends_with("/libaar.so")))
        .unwrap_or_else(|| panic!("the loader did not preload {entry}:\n{debug}"))
        .trim()
        .to_string();
    for lib in ["lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "lib64", "lib"] {
        if top.join(lib).join("libaar.so") != Path::new(&opened) {
            std::fs::remove_file(top.join(lib).join("libaar.so")).unwrap();
        }
    }
    let r = doctor(&[prog], &[("LD_PRELOAD", &entry)]);
    r.expect_code(0);
    r.expect_line("ok", "preload", &format!("LD_PRELOAD names {entry}, which the loader opens as {opened}"));
    r.expect_line("ok", "libaar.so", "(from LD_PRELOAD) loads");
    // $ORIGIN is the program's folder: one preload for programs that carry their libaar.so.
    let beside = Path::new(prog).parent().unwrap().join("origin-lib");
    std::fs::create_dir_all(&beside).unwrap();
    std::fs::copy(libaar(), beside.join("libaar.so")).unwrap();
    let r = doctor(&[prog], &[("LD_PRELOAD", "${ORIGIN}/origin-lib/libaar.so")]);
    r.expect_code(0);
    let file = beside.canonicalize().unwrap().join("libaar.so");
    r.expect_line("ok", "preload", &format!("which the loader opens as {}", file.display()));
    // Without a program, the doctor cannot tell which folder: a note, not a missing file.
    let r = doctor(&[], &[("LD_PRELOAD", "$ORIGIN/origin-lib/libaar.so")]);
    r.expect_line("note", "preload", "whose $ORIGIN the loader replaces for each program it starts");
    assert!(
        !r.stdout.contains("which does not exist") && !r.stdout.contains("does not name libaar.so"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_lib_given_by_a_bare_name_is_the_file_in_this_folder() {
    // dlopen would search the library path for a name without '/', not this folder.
    let prog = ugni_program();
    let dir = scratch().join("bare-lib");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(libaar(), dir.join("libaar.so")).unwrap();
    let env = [("LD_PRELOAD", ""), ("LD_LIBRARY_PATH", UNSET)];
    let r = doctor_in(Some(&dir), None, &["--lib", "libaar.so", prog.to_str().unwrap()], &env);
    r.expect_line("ok", "libaar.so", "./libaar.so (given with --lib) loads");
    assert!(!r.stdout.contains("does not load"), "{}", r.stdout);
}

#[test]
fn a_program_that_is_a_fifo_is_refused_without_waiting_for_a_writer() {
    let fifo = scratch().join("fifo-app");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A writer, so that a doctor that opens the FIFO to read it ends (and fails below) instead of
    // waiting for ever; released at the end if the doctor never opened it.
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            use std::io::Write;
            if let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&fifo) {
                let _ = w.write_all(b"\x7fELF");
            }
        }
    });
    let r = doctor(&[fifo.to_str().unwrap()], &[]);
    // Opened for reading and writing, a FIFO never blocks: the writer's open returns.
    drop(std::fs::OpenOptions::new().read(true).write(true).open(&fifo));
    writer.join().unwrap();
    r.expect_code(1);
    r.expect_line("problem", "program", "is not a regular file (a FIFO, a device or a socket)");
}

/// A program this user may run but not read (mode --x): the loader preloads libaar.so into it,
/// so it is no problem (exit 1) with "chmod +r" for a fix, but a check that could not be made.
/// Run as `nobody` when the tests run as root (root may read anything).
#[test]
fn a_program_that_may_be_run_but_not_read_is_a_warning_not_a_problem() {
    use std::os::unix::fs::PermissionsExt;
    let Some((sh, as_root)) = as_nobody() else { return };
    let prog = scratch().join("exec-only-app");
    if !prog.exists() {
        std::fs::copy(ugni_program(), &prog).unwrap();
    }
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o711)).unwrap();
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap(), "--json"], &[]);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    let check = doc["checks"].as_array().unwrap().iter().find(|c| c["topic"] == "program").unwrap().clone();
    assert_eq!((&check["verdict"], &check["skipped"]), (&"warning".into(), &true.into()), "{check}");
    let text = check["text"].as_str().unwrap();
    assert!(text.contains("may be run but not read by you (Permission denied"), "{text}");
    assert!(check["fix"].as_str().unwrap().contains("chmod a+r"), "{check}");
    assert!(doc["checks"].as_array().unwrap().iter().all(|c| c["verdict"] != "problem"), "{}", r.stdout);
    r.expect_code(3);
    // Neither read nor run (mode ---): the kernel would refuse it too, a problem.
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o700)).unwrap();
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[]);
    r.expect_code(1);
    r.expect_line("problem", "program", "cannot be read (Permission denied");
    // Read but not run (mode rwxr--r--, another user's): an execute bit of its owner's is none of
    // this user's, a problem.
    if as_root {
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o744)).unwrap();
        let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[]);
        r.expect_code(1);
        r.expect_line("problem", "program", "but this user may not execute it");
    }
}

#[test]
fn bad_arguments_exit_2_and_name_the_input() {
    let r = doctor(&["no-such-program-anywhere"], &[]);
    r.expect_code(2);
    assert!(r.stderr.contains("PROGRAM \"no-such-program-anywhere\" was not found"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
    let r = doctor(&["./no/such/file"], &[]);
    r.expect_code(2);
    assert!(r.stderr.contains("PROGRAM \"./no/such/file\" does not exist"), "{}", r.stderr);
    // A link to nothing is named as one, with its target: "does not exist" would send the user
    // to build a program that is there, under another name.
    let link = scratch().join("app-link");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/no/such/build/app", &link).unwrap();
    let r = doctor(&[link.to_str().unwrap()], &[]);
    r.expect_code(2);
    assert!(
        r.stderr.contains(&format!(
            "PROGRAM \"{}\" is a symbolic link to /no/such/build/app, which does not exist",
            link.display()
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("point the link at it"), "{}", r.stderr);
    let r = doctor(&["--lib", "/no/such/libaar.so"], &[]);
    r.expect_code(2);
    assert!(r.stderr.contains("--lib /no/such/libaar.so: no such file"), "{}", r.stderr);
    let r = doctor(&["--lib", "/tmp"], &[]);
    r.expect_code(2);
    assert!(r.stderr.contains("--lib /tmp: a folder, not a file"), "{}", r.stderr);
    let r = doctor(&["--lib", "/dev/null"], &[]);
    r.expect_code(2);
    assert!(r.stderr.contains("--lib /dev/null: not a regular file (a FIFO, a device or a socket)"), "{}", r.stderr);
    let r = doctor(&["--no-such-option"], &[]);
    r.expect_code(2);
}

#[test]
fn json_output_carries_the_checks_the_code_and_the_librarys_document() {
    let prog = ugni_program();
    let r = doctor(&[prog.to_str().unwrap(), "--json"], &[("AAR_MODE", "fast")]);
    r.expect_code(3);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    assert_eq!(doc["format"], "aar-doctor/1");
    assert_eq!(doc["exit_code"], 3);
    assert_eq!(doc["verdict"], "warning");
    let checks = doc["checks"].as_array().unwrap();
    assert!(checks.iter().any(|c| c["topic"] == "setting" && c["verdict"] == "warning"));
    assert!(doc["libraries"].as_array().unwrap().iter().any(|l| l["name"] == "libugni.so"));
    let sc = &doc["selfcheck"];
    assert_eq!(sc["format"], "aar-selfcheck/2");
    assert_eq!(sc["runtime_initialised"], false);
    assert_eq!(sc["warnings"][0]["variable"], "AAR_MODE");
    assert_eq!(sc["papi"]["opened"], true);
    assert_eq!(sc["papi"]["events"].as_array().unwrap().len(), 5);
}

/// A report that cannot be written (a full disk under `aar doctor ... > FILE`) is said, with an
/// exit status of its own, never a panic.
#[test]
fn a_report_that_cannot_be_written_is_said_with_exit_4() {
    let prog = ugni_program();
    for json in [false, true] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aar"));
        cmd.arg("doctor").arg(&prog).args(json.then_some("--json")).stdout(full);
        cmd.env("LD_PRELOAD", libaar()).env("AAR_PAPI_EVENTS", sde_events().join(","));
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "--json {json}: {err}");
        assert!(err.contains("aar doctor: the output could not be written") && !err.contains("panicked"), "{err}");
    }
}

/// A wrapper script that runs its command as `nobody` when the tests run as root (root may read,
/// write and run anything), else as this user; and whether they run as root. None (said on
/// stderr) for root without setpriv: the case cannot be run.
fn as_nobody() -> Option<(PathBuf, bool)> {
    // /proc/self belongs to the process's effective user.
    let as_root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    let setpriv_found =
        Command::new("sh").args(["-c", "command -v setpriv >/dev/null"]).status().is_ok_and(|s| s.success());
    if as_root && !setpriv_found {
        eprintln!("note: running as root without setpriv: the case is not run");
        return None;
    }
    let sh = scratch().join("as-nobody-sh");
    // Once: tests that run at once would write the same file.
    static WRITTEN: std::sync::Once = std::sync::Once::new();
    WRITTEN.call_once(|| {
        let run_as =
            if as_root { "exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$@\"" } else { "exec \"$@\"" };
        write_script(&sh, &format!("#!/bin/sh\n{run_as}\n"));
    });
    Some((sh, as_root))
}

/// A record folder the user may not write in, though its mode has its owner's write bit (`/`,
/// another user's folder): a warning, not "a writable folder". Run as `nobody` when the tests
/// run as root (root may write anywhere).
#[test]
fn a_record_folder_of_another_user_s_is_not_called_writable() {
    let prog = ugni_program();
    let Some((sh, _)) = as_nobody() else { return };
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", "/")]);
    r.expect_line("warning", "records", "AAR_OUTPUT_DIR=/ cannot be written in (Permission denied");
    // A missing folder there (the module's $HOME/aar-records under a home that cannot be written
    // in): mkdir would fail the same way, so the fix is another folder.
    let r = doctor_under(Some(&sh), &[prog.to_str().unwrap()], &[("AAR_OUTPUT_DIR", "/aar-doctor-none/records")]);
    r.expect_line("warning", "records", "AAR_OUTPUT_DIR=/aar-doctor-none/records cannot be used (No such file");
    assert!(
        r.stdout.contains(
            "fix: / cannot be written in (Permission denied (os error 13)), so mkdir cannot make /aar-doctor-none/records. \
             This user may not create files in / (or reach it): give the user write and search permission"
        ),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("fix: mkdir"), "{}", r.stdout);
}

/// The doctor's lines of `topic` with `verdict`, each with its fix line when it has one.
fn lines_of(r: &Run, verdict: &str, topic: &str) -> Vec<String> {
    let lines: Vec<&str> = r.stdout.lines().collect();
    let head = format!("{verdict:<8} {topic:<10} ");
    (0..lines.len())
        .filter(|&i| lines[i].starts_with(&head))
        .map(|i| match lines.get(i + 1).map(|l| l.trim_start()) {
            Some(fix) if fix.starts_with("fix: ") => format!("{}\n{fix}", lines[i]),
            _ => lines[i].to_string(),
        })
        .collect()
}

/// A job whose ranks would make more than 4,096 files in the record folder gets a note (not a
/// warning: the exit status stays 0) with the numbers, the folder and the fix; at 4,096 none.
/// The number of ranks is the launcher's, as libaar.so reads it (PMI_SIZE before SLURM_NTASKS),
/// the writers those AAR_OUTPUT_RANKS names, two files per rank under AAR_AB. A folder that
/// holds 4,096 files already (the module's one folder after many jobs) gets the note for any job.
/// The fix, pasted into a shell, makes a folder the doctor then has nothing to say of.
#[test]
fn a_job_that_would_make_thousands_of_files_in_one_folder_gets_a_note() {
    // A program that marks iterations, so that AAR_AB has nothing else to say.
    let prog = marking_program("dlsym-pie", "dlsym", &["-fPIE", "-pie"]);
    let top = scratch().join("many-records");
    _ = std::fs::remove_dir_all(&top);
    let dir = top.join("aar-records");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let check = |env: &[(&str, &str)]| {
        let mut all: Vec<(&str, &str)> = NO_LAUNCHER.to_vec();
        all.push(("AAR_OUTPUT_DIR", d));
        all.extend_from_slice(env);
        let r = doctor(&[prog.to_str().unwrap()], &all);
        r.expect_code(0);
        lines_of(&r, "note", "records")
    };
    let ab = ("AAR_AB", "ADAPTIVE0,ADAPTIVE3");
    let notes = check(&[("SLURM_NTASKS", "2049"), ab]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(&format!(
            "this job's 2049 ranks (SLURM_NTASKS=2049) would make 4098 files in AAR_OUTPUT_DIR={d} (2 per rank: an \
             iteration record early in the run and a summary record at exit"
        )) && notes[0].contains("more than 4096 creations in one folder at once"),
        "{notes:?}"
    );
    let fix = notes[0].lines().nth(1).and_then(|l| l.strip_prefix("fix: ")).expect("a fix line").to_string();
    assert!(
        fix.contains(&format!("export AAR_OUTPUT_DIR={d}/$SLURM_JOB_ID; mkdir -p \"$AAR_OUTPUT_DIR\""))
            && fix.contains(
                "AAR_OUTPUT_RANKS=0:2047 lets 2048 ranks write (4096 files); aar report then takes each iteration's \
                 time as the slowest of those 2048 ranks', not of all 2049"
            ),
        "{fix}"
    );
    // At the threshold, none; one file per rank without AAR_AB.
    assert_eq!(check(&[("SLURM_NTASKS", "2048"), ab]), Vec::<String>::new());
    assert_eq!(check(&[("SLURM_NTASKS", "4096")]), Vec::<String>::new());
    let notes = check(&[("SLURM_NTASKS", "4097")]);
    assert!(
        notes.len() == 1
            && notes[0].contains("would make 4097 files")
            && notes[0]
                .contains("(1 per rank: a summary record, all at exit; one more each if the program marks iterations)"),
        "{notes:?}"
    );
    // libaar.so's number of ranks: PMI_SIZE comes first.
    assert_eq!(check(&[("PMI_SIZE", "8"), ("SLURM_NTASKS", "64000"), ab]), Vec::<String>::new());
    // A sample of ranks: those AAR_OUTPUT_RANKS names write.
    assert_eq!(check(&[("PMI_SIZE", "64000"), ("AAR_OUTPUT_RANKS", "0:1023,2000:3023"), ab]), Vec::<String>::new());
    let notes = check(&[("PMI_SIZE", "64000"), ("AAR_OUTPUT_RANKS", "0:1023,1000:3048"), ab]);
    assert!(
        notes.len() == 1
            && notes[0].contains(
                "this job's 64000 ranks (PMI_SIZE=64000), of which AAR_OUTPUT_RANKS names 3049, would make 6098 files"
            ),
        "{notes:?}"
    );

    // The fix, in a shell of job 99: the folder is made, and the same job there has no note.
    let fix_shell = fix[fix.find("export ").unwrap()..].split(" (the folder").next().unwrap().to_string();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{fix_shell} && echo \"$AAR_OUTPUT_DIR\""))
        .env("SLURM_JOB_ID", "99")
        .output()
        .unwrap();
    let made = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success() && made == format!("{d}/99") && Path::new(&made).is_dir(), "{fix_shell}: {made}");
    let r = doctor(
        &[prog.to_str().unwrap()],
        &[
            ("AAR_OUTPUT_DIR", &made),
            ("AAR_OUTPUT_RANKS", "0:2047"),
            ("SLURM_NTASKS", "2049"),
            ab,
            NO_LAUNCHER[0],
            NO_LAUNCHER[1],
        ],
    );
    assert!(lines_of(&r, "note", "records").is_empty(), "{}", r.stdout);

    // A folder grown over many jobs: a note for a job of 8 ranks, without the sample's advice.
    for i in 0..4096 {
        std::fs::write(dir.join(format!("aar.{i}.0.1.json")), "").unwrap();
    }
    let notes = check(&[("SLURM_NTASKS", "8"), ab]);
    assert!(
        notes.len() == 1
            && notes[0].contains(&format!("AAR_OUTPUT_DIR={d} holds 4096 files or more already"))
            && notes[0].contains(&format!("export AAR_OUTPUT_DIR={d}/$SLURM_JOB_ID"))
            && !notes[0].contains("AAR_OUTPUT_RANKS="),
        "{notes:?}"
    );
    std::fs::remove_dir_all(&top).unwrap();
}

/// The environment of [`a_job_that_would_make_thousands_of_files_in_one_folder_gets_a_note`]'s
/// checks, less the launcher's numbers the caller's own job may set.
const NO_LAUNCHER: [(&str, &str); 10] = [
    ("PMI_SIZE", UNSET),
    ("OMPI_COMM_WORLD_SIZE", UNSET),
    ("SLURM_NTASKS", UNSET),
    ("SLURM_STEP_NUM_TASKS", UNSET),
    ("SLURM_JOB_NUM_NODES", UNSET),
    ("SLURM_NNODES", UNSET),
    ("PBS_NODEFILE", UNSET),
    ("SLURM_PROCID", UNSET),
    ("SLURM_JOB_ID", UNSET),
    ("PBS_JOBID", UNSET),
];

/// `aar doctor --json PROGRAM ARGS` in a fresh record folder `name`, with `env` over
/// [`NO_LAUNCHER`]: its `records` lines (with their fix) and its JSON document.
fn record_count(name: &str, args: &[&str], env: &[(&str, &str)]) -> (Vec<String>, serde_json::Value) {
    let prog = marking_program("dlsym-pie", "dlsym", &["-fPIE", "-pie"]);
    let dir = scratch().join(name);
    _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut all: Vec<(&str, &str)> = NO_LAUNCHER.to_vec();
    all.push(("AAR_OUTPUT_DIR", dir.to_str().unwrap()));
    all.extend_from_slice(env);
    let run = |json: &[&str]| {
        let r = doctor(&[args, json, &[prog.to_str().unwrap()]].concat(), &all);
        r.expect_code(0);
        r
    };
    let r = run(&[]);
    let lines = [lines_of(&r, "ok", "records"), lines_of(&r, "note", "records")].concat();
    let lines = lines.into_iter().filter(|l| !l.contains("is a writable folder")).collect();
    let doc = serde_json::from_str(&run(&["--json"]).stdout).expect("one JSON document");
    std::fs::remove_dir_all(&dir).unwrap();
    (lines, doc)
}

/// `--ranks N` is the number of ranks the file count takes, over the launcher's (here PMI_SIZE,
/// which libaar.so reads first), and the check says where its number came from, in the text and
/// in the JSON document's `job_ranks`.
#[test]
fn the_file_count_takes_the_number_of_ranks_from_the_ranks_option_and_says_so() {
    let ab = ("AAR_AB", "ADAPTIVE0,ADAPTIVE3");
    let (lines, doc) = record_count("ranks-option", &["--ranks", "2049"], &[("PMI_SIZE", "8"), ab]);
    assert!(
        lines.len() == 1
            && lines[0].starts_with("note     records")
            && lines[0].contains("this job's 2049 ranks (--ranks 2049) would make 4098 files in AAR_OUTPUT_DIR=")
            && lines[0].contains("not of all 2049"),
        "{lines:?}"
    );
    assert_eq!(doc["job_ranks"], serde_json::json!({ "ranks": 2049, "from": "--ranks", "one_task_step": false }));
    // Below the threshold: ok, with the number and where it came from.
    let (lines, doc) = record_count("ranks-option", &["--ranks", "8"], &[("PMI_SIZE", "64000"), ab]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("ok       records    this job's 8 ranks (--ranks 8) would make 16 files"),
        "{lines:?}"
    );
    assert_eq!(doc["job_ranks"]["ranks"], 8);
    // Without it, the launcher's, named.
    let (lines, doc) = record_count("ranks-option", &[], &[("PMI_SIZE", "64"), ("AAR_OUTPUT_RANKS", "0:15")]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("this job's 64 ranks (PMI_SIZE=64), of which AAR_OUTPUT_RANKS names 16, would make 16 files"),
        "{lines:?}"
    );
    assert_eq!(doc["job_ranks"], serde_json::json!({ "ranks": 64, "from": "PMI_SIZE", "one_task_step": false }));
}

/// Under `srun -n 1` in a job of several nodes, Slurm sets the step's SLURM_NTASKS (and
/// SLURM_STEP_NUM_TASKS) to 1 and leaves SLURM_JOB_NUM_NODES the job's: the check says its count
/// is that step's 1 rank, with `--ranks` as the fix, instead of an ok for 1 file. In a job of one
/// node, or with `--ranks`, it does not.
#[test]
fn a_one_task_step_of_a_larger_job_is_told_to_give_the_job_s_ranks() {
    let step = [("SLURM_NTASKS", "1"), ("SLURM_STEP_NUM_TASKS", "1"), ("SLURM_PROCID", "0")];
    let (lines, doc) = record_count("one-task-step", &[], &[&step[..], &[("SLURM_JOB_NUM_NODES", "64")]].concat());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(
            "note     records    the number of ranks here is this job step's 1 (SLURM_NTASKS=1), in a job of several \
             nodes (SLURM_JOB_NUM_NODES=64): the files the job would make in AAR_OUTPUT_DIR="
        ) && lines[0].contains("are counted for 1 rank (1 file), not for the job's ranks")
            && lines[0].contains("fix: Give the job's number of ranks: srun -n 1 aar doctor --ranks N"),
        "{lines:?}"
    );
    assert_eq!(doc["job_ranks"], serde_json::json!({ "ranks": 1, "from": "SLURM_NTASKS", "one_task_step": true }));
    // The job's number given: counted, no word of the step.
    let (lines, doc) =
        record_count("one-task-step", &["--ranks", "4097"], &[&step[..], &[("SLURM_JOB_NUM_NODES", "64")]].concat());
    assert!(
        lines.len() == 1 && lines[0].contains("this job's 4097 ranks (--ranks 4097) would make 4097 files"),
        "{lines:?}"
    );
    assert_eq!(doc["job_ranks"]["one_task_step"], false);
    // A job of one node: its one task may be all it has.
    let (lines, _) = record_count("one-task-step", &[], &[&step[..], &[("SLURM_JOB_NUM_NODES", "1")]].concat());
    assert!(lines.len() == 1 && lines[0].contains("this job's 1 rank (SLURM_NTASKS=1) would make 1 file"), "{lines:?}");
}

/// The `records` check of [`record_count`]'s JSON document.
fn records_check(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    let checks = doc["checks"].as_array().expect("a checks array");
    checks.iter().filter(|c| c["topic"] == "records" && !c["text"].as_str().unwrap().contains("writable")).collect()
}

/// A batch script of several nodes submitted without --ntasks has no SLURM_NTASKS, nor any other
/// number of ranks: the file count is not made, and a note says so (`skipped` in the JSON
/// document), with --ranks and --ntasks as the fix, naming the variable that gave the nodes
/// (SLURM_JOB_NUM_NODES, else its older name SLURM_NNODES). One node, or --ranks: no such note.
#[test]
fn a_job_of_several_nodes_without_a_number_of_ranks_says_its_files_were_not_counted() {
    let (lines, doc) = record_count("nodes-no-ranks", &[], &[("SLURM_JOB_NUM_NODES", "4"), ("SLURM_NNODES", "9")]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("note     records    the files the job would make in AAR_OUTPUT_DIR=")
            && lines[0].contains(
                "were not counted: the number of ranks is unknown (no --ranks, and libaar.so finds none in the \
                 environment) in a job of several nodes (SLURM_JOB_NUM_NODES=4)"
            )
            && lines[0].contains(
                "fix: Give the job's number of ranks: aar doctor --ranks N ..., or submit the job with --ntasks N"
            ),
        "{lines:?}"
    );
    let records = records_check(&doc);
    assert!(records.len() == 1 && records[0]["skipped"] == true && records[0]["verdict"] == "note", "{records:?}");
    assert_eq!(doc["job_ranks"], serde_json::Value::Null);
    assert_eq!(doc["job_nodes"], serde_json::json!({ "nodes": 4, "from": "SLURM_JOB_NUM_NODES" }));
    // SLURM_NNODES alone, as older Slurm sets it.
    let (lines, doc) = record_count("nodes-no-ranks", &[], &[("SLURM_NNODES", "3")]);
    assert!(lines.len() == 1 && lines[0].contains("in a job of several nodes (SLURM_NNODES=3)"), "{lines:?}");
    assert_eq!(doc["job_nodes"], serde_json::json!({ "nodes": 3, "from": "SLURM_NNODES" }));
    // One node: nothing to say without a number of ranks, as before.
    let (lines, doc) = record_count("nodes-no-ranks", &[], &[("SLURM_JOB_NUM_NODES", "1")]);
    assert!(lines.is_empty() && records_check(&doc).is_empty(), "{lines:?}");
    // With --ranks the files are counted, and the check is not skipped.
    let (lines, doc) = record_count("nodes-no-ranks", &["--ranks", "8"], &[("SLURM_JOB_NUM_NODES", "4")]);
    assert!(lines.len() == 1 && lines[0].contains("this job's 8 ranks (--ranks 8) would make 8 files"), "{lines:?}");
    assert_eq!(records_check(&doc)[0]["skipped"], false);
}

/// Under PBS (Torque, PBS Pro) the job's nodes are the distinct names in the file PBS_NODEFILE
/// names (a node is listed once per slot): with several, and no number of ranks (a batch script
/// on ALPS's service node), the note says the files were not counted, with aprun's -n as the fix;
/// under `aprun -n 1` (PMI_SIZE=1) that the count is the step's 1. A list of one node, or a file
/// that cannot be read (on a compute node it may be the service node's only), says nothing.
#[test]
fn a_pbs_job_s_nodes_come_from_its_node_file() {
    let dir = scratch().join("pbs-nodefile");
    _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let two = dir.join("two");
    std::fs::write(&two, "nid00012\nnid00012\nnid00013\n\n").unwrap();
    let one = dir.join("one");
    std::fs::write(&one, "nid00012\nnid00012\n").unwrap();
    fn pbs(file: &Path) -> [(&'static str, &str); 2] {
        [("PBS_JOBID", "123.sdb"), ("PBS_NODEFILE", file.to_str().unwrap())]
    }

    let (lines, doc) = record_count("pbs-nodes", &[], &pbs(&two));
    assert!(
        lines.len() == 1
            && lines[0].contains("were not counted: the number of ranks is unknown")
            && lines[0].contains("in a job of several nodes (2 nodes in PBS_NODEFILE)")
            && lines[0].contains("fix: Give the job's number of ranks (its aprun -n): aar doctor --ranks N"),
        "{lines:?}"
    );
    assert_eq!(records_check(&doc)[0]["skipped"], true);
    assert_eq!(doc["job_nodes"], serde_json::json!({ "nodes": 2, "from": "PBS_NODEFILE" }));
    // aprun -n 1: the step's 1 rank.
    let (lines, doc) = record_count("pbs-nodes", &[], &[&pbs(&two)[..], &[("PMI_SIZE", "1")]].concat());
    assert!(
        lines.len() == 1
            && lines[0].contains("this job step's 1 (PMI_SIZE=1), in a job of several nodes (2 nodes in PBS_NODEFILE)")
            && lines[0].contains("fix: Give the job's number of ranks (its aprun -n): aprun -n 1 aar doctor --ranks N"),
        "{lines:?}"
    );
    assert_eq!(doc["job_ranks"], serde_json::json!({ "ranks": 1, "from": "PMI_SIZE", "one_task_step": true }));
    // One node listed twice, or no file to read: nothing said.
    let (lines, doc) = record_count("pbs-nodes", &[], &pbs(&one));
    assert!(
        lines.is_empty() && doc["job_nodes"] == serde_json::json!({ "nodes": 1, "from": "PBS_NODEFILE" }),
        "{lines:?}"
    );
    let (lines, doc) = record_count("pbs-nodes", &[], &pbs(&dir.join("none")));
    assert!(lines.is_empty() && doc["job_nodes"].is_null(), "{lines:?}");
    // A FIFO is no node file: not opened (the opening would wait for a writer). Were it opened,
    // the writer here would give it two nodes, and the note would be said.
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (fifo, done) = (fifo.clone(), done.clone());
        // Each opening waits for a reader: one for each doctor run that opens the FIFO.
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                _ = std::fs::write(&fifo, "n1\nn2\n");
            }
        })
    };
    let (lines, doc) = record_count("pbs-nodes", &[], &pbs(&fifo));
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(lines.is_empty() && doc["job_nodes"].is_null(), "{lines:?}");
    // Let the writer go: a reader that opens and closes at once.
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    _ = writer.join();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `--ranks` that is not a number of ranks (a whole number from 1) is refused, named, with
/// exit 2 and nothing checked.
#[test]
fn a_bad_ranks_value_is_refused_with_exit_2() {
    for bad in ["0", "-1", "many", "2.5", "4294967296", ""] {
        let r = doctor(&["--ranks", bad], &[]);
        r.expect_code(2);
        assert!(r.stderr.contains(&format!("invalid value '{bad}' for '--ranks <N>'")), "{bad}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{bad}: {}", r.stdout);
    }
}

/// The launch line a user types (`aar doctor srun -n 4 ./app`) checks the program the launcher
/// would start, says so, and counts the job's files by its `-n`; the doctor's own options still
/// follow a program given alone; a word that is none of them, or a launch line without a
/// program, is a bad argument (exit status 2) that says what to give.
#[test]
fn a_launch_line_checks_the_program_it_starts_with_its_ranks() {
    let prog = ugni_program();
    let p = prog.to_str().unwrap();
    let dir = scratch().join("launch-line-records");
    std::fs::create_dir_all(&dir).unwrap();
    let mut env: Vec<(&str, &str)> = NO_LAUNCHER.to_vec();
    env.push(("AAR_OUTPUT_DIR", dir.to_str().unwrap()));
    for (line, ranks) in [
        (vec!["srun", "-n", "4", "--cpu-bind=cores", p, "--its-own-flag"], "srun -n 4"),
        (vec!["aprun", "-n", "6", "-N", "2", p], "aprun -n 6"),
        (vec!["mpirun", "-genv", "OMP_NUM_THREADS", "2", "-np", "3", p, "input"], "mpirun -np 3"),
    ] {
        let r = doctor(&line, &env);
        r.expect_code(0);
        let launcher = line[0];
        r.expect_line(
            "note",
            "program",
            &format!("checking {p}, the program {launcher} would start ({})", line.join(" ")),
        );
        r.expect_line("ok", "program", &format!("{p}: ELF 64-bit"));
        let n: u32 = ranks.rsplit(' ').next().unwrap().parse().unwrap();
        r.expect_line("ok", "records", &format!("this job's {n} ranks ({ranks}) would make {n} files"));
    }
    // --ranks wins over the line's count.
    let r = doctor(&["--ranks", "2", "srun", "-n", "4", p], &env);
    r.expect_line("ok", "records", "this job's 2 ranks (--ranks 2) would make 2 files");
    // After a program alone, the doctor's options are the doctor's.
    let r = doctor(&[p, "--json"], &env);
    r.expect_code(0);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    assert_eq!(doc["checks"][0]["topic"], "program", "{doc}");
    let r = doctor(&[p, "input.dat"], &env);
    r.expect_code(2);
    assert!(
        r.stderr.contains("unexpected argument 'input.dat' found after the program; nothing was checked")
            && r.stderr.contains("or a launch line (srun -n 4 ./app ARGS...)"),
        "{}",
        r.stderr
    );
    let r = doctor(&["srun", "-n", "4"], &env);
    r.expect_code(2);
    assert!(r.stderr.contains("\"srun -n 4\" names no program after srun's options"), "{}", r.stderr);
}

/// A launcher's option the doctor does not know, its value written as the next word (a site's
/// plugin: `srun --site-opt cores ./app`), makes the doctor take the value as the program: where
/// that names no program, the message says which word it took, after which option, and the two
/// ways to put it right, with the program found past the pair.
#[test]
fn a_value_taken_as_the_program_after_an_unknown_option_says_how_to_fix_it() {
    let prog = ugni_program();
    let p = prog.to_str().unwrap();
    let r = doctor(&["srun", "-n", "4", "--site-opt", "cores", p], &NO_LAUNCHER);
    r.expect_code(2);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains("PROGRAM \"cores\" was not found")
            && r.stderr.contains(
                "The doctor took cores as the program srun would start: it follows --site-opt, an option of srun \
                 the doctor does not know. If --site-opt takes cores as its value, write it --site-opt=cores, or \
                 give the program alone (aar doctor --ranks 4 "
            )
            && r.stderr.contains(&format!("--ranks 4 {p}).")),
        "{}",
        r.stderr
    );
    // So written, the line is read as meant.
    let r = doctor(&["srun", "-n", "4", "--site-opt=cores", p], &NO_LAUNCHER);
    r.expect_line("ok", "program", &format!("{p}: ELF 64-bit"));
}
