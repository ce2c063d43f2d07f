//! The integration scenarios under sanitizers: the C side (test programs, the emulator's
//! payload copies) under AddressSanitizer/LeakSanitizer, and the library under a data-race
//! checker.
//!
//! **AddressSanitizer + LeakSanitizer** (always run, stable toolchain and gcc only): the driver
//! (tests/c/driver.c, wrapped by tests/c/api_thread.c) is compiled with
//! `-fsanitize=address -fno-omit-frame-pointer` and run with
//! `LD_PRELOAD="<gcc's libasan.so> <libaar.so>"` (the ASan runtime must come first) over the
//! emulated libugni.so: every post kind, chained posts, SMSG, the C API (also from a second
//! thread), MPI_Alltoall, threads, fork, exit while posting, PAPI failures, hostile settings and
//! counters, forced panics. Any ASan error or leak fails the run (`halt_on_error=1`,
//! `exitcode=23`). libaar.so and the emulator are not instrumented: ASan checks the C side's
//! own accesses, every allocation and free made by any library (malloc is intercepted), and the
//! ranges of the libc calls they make (`memcpy`, `memmove`, `memset`, `strlen`...), which is where
//! the emulator moves payload bytes between the driver's buffers. Instrumenting the Rust side
//! would need a nightly `-Zbuild-std` build (see scripts/sanitize for the TSan one).
//!
//! **ThreadSanitizer** (`#[ignore]`d: needs the nightly toolchain with `rust-src`;
//! `scripts/sanitize` runs them): libaar.so *and* the emulator are built with
//! `RUSTFLAGS=-Zsanitizer=thread cargo +nightly build -Zbuild-std` into `target/tsan` (the emulator
//! must be instrumented too: its std `Mutex` is a bare futex that TSan cannot see, and its
//! allocations under that lock are then reported as races), the driver with
//! `gcc -fsanitize=thread`, and the multi-threaded scenarios run with
//! `TSAN_OPTIONS=halt_on_error=0:exitcode=66` so that every report is seen. gcc 12's libtsan
//! accepts Rust's (newer LLVM) instrumentation except for three entry points it predates,
//! `__tsan_memcpy`, `__tsan_memmove` and `__tsan_memset`; [`TSAN_COMPAT`] defines them as the
//! intercepted libc calls, which is what the newer runtime does too.
//!
//! Every report fails the run, also one that lies entirely inside the test programs (it is named
//! as such). The self-tests at the end show that a deliberate heap overflow, leak and data race
//! are caught by exactly this machinery.

mod common;
use common::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

const ASAN_EXIT: i32 = 23;
const TSAN_EXIT: i32 = 66;

/// Every ASan check that costs little, and any report is fatal with its own exit code.
const ASAN_OPTIONS: &str = "detect_leaks=1:halt_on_error=1:exitcode=23:abort_on_error=0:\
detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:\
strict_string_checks=1:detect_invalid_pointer_pairs=0:allocator_may_return_null=0";

/// LeakSanitizer suppressions, each with its reason. Keep this list short and precise.
const LSAN_SUPPRESSIONS: &str = "\
# (none: everything the library keeps until exit is reachable from a static)
";

/// See the module documentation.
const TSAN_COMPAT: &str = "\
#include <string.h>
void *__tsan_memcpy(void *d, const void *s, size_t n) { return memcpy(d, s, n); }
void *__tsan_memmove(void *d, const void *s, size_t n) { return memmove(d, s, n); }
void *__tsan_memset(void *d, int c, size_t n) { return memset(d, c, n); }
";

// ---------------------------------------------------------------------------------------------
// Building.

fn build_dir() -> PathBuf {
    let d = target_dir().join("aar-tests").join("sanitizers");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A file of gcc's runtime (e.g. libasan.so), resolved to the real file.
fn gcc_runtime(name: &str) -> PathBuf {
    let out = Command::new("gcc").arg(format!("-print-file-name={name}")).output().expect("run gcc");
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let real =
        std::fs::canonicalize(&p).unwrap_or_else(|_| panic!("gcc has no {name} (install gcc's sanitizer runtimes)"));
    assert!(real.is_absolute() && real.exists(), "{name}: {}", real.display());
    real
}

fn gcc(args: &[&str], what: &str) {
    let st = Command::new("gcc").args(args).status().expect("run gcc");
    assert!(st.success(), "gcc failed: {what}: gcc {}", args.join(" "));
}

/// tests/c/driver.c (as `driver_main`) with tests/c/api_thread.c, compiled with `san` flags and
/// linked against the libugni.so in `libdir`; once per variant and test binary.
fn sanitized_driver(variant: &str, san: &[&str], libdir: &Path, extra_c: Option<&str>) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    if let Some(p) = built.get(variant) {
        return p.clone();
    }
    let dir = build_dir().join(format!("{variant}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = root();
    let inc = root.join("cabi");
    let s = |p: &Path| p.display().to_string();
    let common_flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror", "-I"];
    let mut objects = Vec::new();
    // The driver measures with PAPI itself too (its `papi` commands), as a program may.
    for (src, defs) in [("driver.c", vec!["-Dmain=driver_main", "-DWITH_PAPI"]), ("api_thread.c", vec![])] {
        let obj = dir.join(src.replace(".c", ".o"));
        let mut args: Vec<String> = common_flags.iter().map(|a| a.to_string()).collect();
        args.push(s(&inc));
        args.extend(san.iter().map(|a| a.to_string()));
        args.extend(defs.iter().map(|a| a.to_string()));
        args.extend(["-c".into(), s(&root.join("tests/c").join(src)), "-o".into(), s(&obj)]);
        gcc(&args.iter().map(String::as_str).collect::<Vec<_>>(), src);
        objects.push(s(&obj));
    }
    if let Some(code) = extra_c {
        let c = dir.join("extra.c");
        std::fs::write(&c, code).unwrap();
        objects.push(s(&c));
    }
    let exe = dir.join("api_thread");
    let mut args: Vec<String> = san.iter().map(|a| a.to_string()).collect();
    args.push("-rdynamic".into());
    args.extend(objects);
    args.extend(["-o".into(), s(&exe), "-L".into(), s(libdir), "-lugni".into(), "-lpapi".into(), "-lpthread".into()]);
    args.push("-ldl".into());
    args.push(format!("-Wl,-rpath,{}", libdir.display()));
    gcc(&args.iter().map(String::as_str).collect::<Vec<_>>(), "link");
    built.insert(variant.into(), exe.clone());
    exe
}

fn asan_driver() -> PathBuf {
    sanitized_driver("asan", &["-fsanitize=address"], libdir(), None)
}

/// libaar.so and libugni.so built with `-Zsanitizer=thread` by the nightly toolchain, into
/// target/tsan, once per test binary (a no-op when fresh; scripts/sanitize builds them first).
fn tsan_libdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let toolchain = std::env::var("SANITIZE_TOOLCHAIN").unwrap_or_else(|_| "nightly".into());
        let triple = "x86_64-unknown-linux-gnu";
        let tdir = target_dir().join("tsan");
        let t0 = Instant::now();
        let mut cmd = Command::new("cargo");
        cmd.arg(format!("+{toolchain}"))
            .args(["build", "-q", "-Zbuild-std", "--target", triple, "--release", "-p", "aar", "-p", "aar-emu"])
            .arg("--target-dir")
            .arg(&tdir)
            .current_dir(root());
        // Nothing from the outer (stable) cargo may leak into the nightly build.
        for k in ["CARGO", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR", "RUSTC", "RUSTC_WRAPPER", "RUSTDOC", "RUSTUP_TOOLCHAIN"] {
            cmd.env_remove(k);
        }
        cmd.env("RUSTFLAGS", "-Zsanitizer=thread");
        let st = cmd.status().expect("run cargo +nightly");
        assert!(
            st.success(),
            "the ThreadSanitizer build failed; it needs `rustup toolchain install {toolchain} --component rust-src` (see scripts/sanitize)"
        );
        eprintln!("sanitizers: ThreadSanitizer build of libaar.so and libugni.so: {:.1} s", t0.elapsed().as_secs_f64());
        let dir = tdir.join(triple).join("release");
        for lib in ["libaar.so", "libugni.so"] {
            let bytes = std::fs::read(dir.join(lib)).unwrap();
            let needle = b"__tsan_func_entry";
            assert!(bytes.windows(needle.len()).any(|w| w == needle), "{lib} is not instrumented by ThreadSanitizer");
        }
        dir
    })
}

/// The compat entry points are linked into the driver too: ld refuses to link against the
/// instrumented libugni.so while they are undefined.
fn tsan_driver() -> PathBuf {
    sanitized_driver("tsan", &["-fsanitize=thread"], tsan_libdir(), Some(TSAN_COMPAT))
}

/// [`TSAN_COMPAT`] as a library to preload after the TSan runtime, so that the programs the
/// driver execs (/bin/sh) have the entry points too.
fn tsan_compat() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = build_dir().join(format!("tsan-compat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c, so) = (dir.join("tsan_compat.c"), dir.join("libtsan_compat.so"));
        std::fs::write(&c, TSAN_COMPAT).unwrap();
        gcc(&["-O1", "-shared", "-fPIC", &c.display().to_string(), "-o", &so.display().to_string()], "tsan_compat");
        so
    })
}

// ---------------------------------------------------------------------------------------------
// Running and reading the reports.

#[derive(Debug)]
struct Report {
    text: String,
    /// Every frame is in a test program (tests/c/*.c), the sanitizer runtime or libc.
    in_test_program_only: bool,
}

fn frames(block: &str) -> Vec<&str> {
    block
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('#') && l[1..].starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

fn runtime_frame(f: &str) -> bool {
    ["/libsanitizer/", "libasan.so", "libtsan.so", "__interceptor_", "libc.so", "../sysdeps/", "libc_start"]
        .iter()
        .any(|p| f.contains(p))
}

/// Splits stderr into sanitizer reports (a leak report into one report per leak).
fn reports(stderr: &str) -> Vec<Report> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let flush = |cur: &mut Option<String>, out: &mut Vec<Report>| {
        if let Some(text) = cur.take() {
            let fr = frames(&text);
            let leak = text.contains(" leak of ");
            let in_test_program_only = !fr.is_empty()
                && if leak {
                    // The leaked block's owner is the first frame above the allocator.
                    fr.iter().find(|f| !runtime_frame(f)).is_some_and(|f| f.contains("tests/c/"))
                } else {
                    text.contains("WARNING: ThreadSanitizer: data race")
                        && fr.iter().all(|f| f.contains("tests/c/") || runtime_frame(f))
                };
            out.push(Report { text, in_test_program_only });
        }
    };
    for line in stderr.lines() {
        let starts = line.contains("ERROR: AddressSanitizer")
            || line.contains("ERROR: LeakSanitizer")
            || line.contains("LeakSanitizer has encountered a fatal error")
            || line.contains("WARNING: ThreadSanitizer")
            || line.contains("ERROR: ThreadSanitizer")
            || line.contains("Sanitizer: CHECK failed")
            || line.contains("Sanitizer:DEADLYSIGNAL")
            || line.contains("runtime error:")
            || line.starts_with("Direct leak of")
            || line.starts_with("Indirect leak of");
        if starts {
            flush(&mut cur, &mut out);
            cur = Some(String::new());
        }
        if line.starts_with("SUMMARY: ") || line.starts_with("==================") {
            if let Some(c) = cur.as_mut() {
                c.push_str(line);
                c.push('\n');
            }
            flush(&mut cur, &mut out);
            continue;
        }
        if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
    }
    flush(&mut cur, &mut out);
    // The LeakSanitizer banner alone is not a report; its leaks are.
    out.retain(|r| !(r.text.contains("ERROR: LeakSanitizer") && frames(&r.text).is_empty()));
    out
}

fn stdout_field(out: &str, key: &str) -> Option<u64> {
    let tail = out.rsplit(&format!("{key}=")).next()?;
    if tail.len() == out.len() {
        return None;
    }
    tail.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Asserts the run found nothing anywhere (library, emulator, PAPI or the test programs, whose
/// reports are named as such), the program succeeded, and the driver's own checks passed.
fn assert_clean(r: &Run, what: &str, _sanitizer_exit: i32) {
    let reps = reports(&r.stderr);
    assert!(
        reps.is_empty(),
        "{what}: {} sanitizer report(s):\n{}\n--- stdout:\n{}",
        reps.len(),
        reps.iter()
            .map(|r| format!(
                "{}{}",
                if r.in_test_program_only { "(in the test program, tests/c) " } else { "" },
                r.text
            ))
            .collect::<Vec<_>>()
            .join("\n"),
        r.stdout
    );
    assert!(r.status.success(), "{what}: exit {:?}\n--- stdout:\n{}\n--- stderr:\n{}", r.status, r.stdout, r.stderr);
    if !r.stdout.contains("exit_posting posts>=") {
        assert_eq!(
            stdout_field(&r.stdout, "errors"),
            Some(0),
            "{what}: the driver's own checks\n{}\n{}",
            r.stdout,
            r.stderr
        );
        if let (Some(posts), Some(emu)) = (stdout_field(&r.stdout, "posts"), stdout_field(&r.stdout, "emu_posts")) {
            assert!(emu >= posts, "{what}: the emulator received {emu} posts for {posts}");
        }
    }
    assert!(!r.stdout.contains("bad=1"), "{what}: the C API returned codes aar.h does not allow:\n{}", r.stdout);
}

/// The suppressions file, written once per test binary and renamed into place: a file rewritten
/// while another test's program reads it would be read empty.
fn suppressions() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let p = build_dir().join(format!("lsan-{}.supp", std::process::id()));
        let tmp = p.with_extension("tmp");
        std::fs::write(&tmp, LSAN_SUPPRESSIONS).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        p
    })
}

/// The driver under ASan with libasan then libaar.so preloaded.
fn asan(test: &str, script: &str) -> Launch {
    let mut l = Launch::driver(test, script);
    l.program = asan_driver();
    l.preload = false;
    let preload = format!("{} {}", gcc_runtime("libasan.so").display(), libaar().display());
    l.env("LD_PRELOAD", &preload)
        .env("ASAN_OPTIONS", ASAN_OPTIONS)
        .env("LSAN_OPTIONS", &format!("exitcode=23:print_suppressions=0:suppressions={}", suppressions().display()))
}

/// The driver under TSan with the instrumented libaar.so preloaded.
fn tsan(test: &str, script: &str) -> Launch {
    let mut l = Launch::driver(test, script);
    l.program = tsan_driver();
    l.preload = false;
    // The TSan runtime first, then the compat entry points: an uninstrumented program the driver
    // execs (/bin/sh) inherits the preload and needs both to resolve libaar.so's __tsan_* calls.
    let preload = format!(
        "{} {} {}",
        gcc_runtime("libtsan.so").display(),
        tsan_compat().display(),
        tsan_libdir().join("libaar.so").display()
    );
    // halt_on_error=0: a report confined to the test program must not hide one in the library.
    l.env("LD_PRELOAD", &preload)
        .env("TSAN_OPTIONS", "halt_on_error=0:exitcode=66:report_signal_unsafe=1:second_deadlock_stack=1")
        .unset("AAR_EMU_LOG")
}

/// The first of the emulator's counter events, for the driver's own PAPI measurement.
fn first_event() -> String {
    sde_events_setting().split(',').next().unwrap_or_default().to_string()
}

fn run_asan(test: &str, script: &str, env: &[(&str, &str)]) -> Run {
    let mut l = asan(test, script);
    for (k, v) in env {
        l = l.env(k, v);
    }
    let r = l.run();
    assert_clean(&r, &format!("ASan {test}: {script} {env:?}"), ASAN_EXIT);
    r
}

fn run_tsan(test: &str, script: &str, env: &[(&str, &str)]) -> Run {
    let mut l = tsan(test, script);
    for (k, v) in env {
        l = l.env(k, v);
    }
    let t0 = Instant::now();
    let r = l.run();
    eprintln!("sanitizers: TSan {test} ({script}) ran in {:.1} s", t0.elapsed().as_secs_f64());
    assert_clean(&r, &format!("TSan {test}: {script} {env:?}"), TSAN_EXIT);
    assert!(r.aar_lines().iter().any(|l| l.starts_with("aar: policy")), "libaar.so was not active:\n{}", r.stderr);
    r
}

// ---------------------------------------------------------------------------------------------
// AddressSanitizer + LeakSanitizer.

#[test]
fn asan_every_post_kind_chained_posts_smsg_and_failing_posts() {
    let script = "fma 64 20 0 rdma 65536 6 0 fmaget 256 5 0 rdmaget 16384 4 0 cqwrite 3 0 \
                  ct 128 4 0 ct 4096 8 0x100 ctcqw 3 0 ct 64 3 0x3 \
                  smsg 100 7 smsgtag 20 5 smsgmode 0x3 smsg 8 3 smsgmode 0 smsgtag 4000 2 \
                  fma 64 3 0x3 rdma 65536 3 0x10 fma 64 3 0x180 rdma 1048576 2 0x100 \
                  badpost nullpost";
    let l = asan("asan-posts", script);
    let trace = l.dir.join("trace.%p.jsonl").display().to_string();
    let r = l.env("AAR_TRACE", &trace).run();
    assert_clean(&r, "ASan posts", ASAN_EXIT);
    assert_eq!(r.records().len(), 1, "one record written: {}", r.stderr);
    assert!(
        std::fs::read_dir(&r.dir).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().starts_with("trace.")),
        "trace written"
    );
}

#[test]
fn asan_c_api_alltoall_and_every_policy() {
    let script = "api mode 0x80 policy fma 64 5 0 rdma 65536 3 0 api name ADAPTIVE_0 rdma 65536 3 0 \
                  api name bogus api name off fma 64 3 0 api mode 0x3 api mode 0x20 policy \
                  api disable smsg 10 3 fma 64 3 0 rdma 65536 2 0 policy api enable api auto policy \
                  alltoall 65536 4 alltoall 64 10 rdma 65536 3 0";
    run_asan("asan-api", script, &[]);
    run_asan("asan-api-window1", script, &[("AAR_WINDOW", "1"), ("AAR_THRESHOLD", "0")]);
}

#[test]
fn asan_threads_with_the_c_api_from_another_thread() {
    run_asan("asan-threads", "threads 8 64 2000 threads 4 8192 300 fma 64 10 0", &[("API_THREAD", "1")]);
}

#[test]
fn asan_fork_exit_and_papi_failures() {
    run_asan("asan-fork", "fma 64 3 0 fork 6 forkexec rdma 65536 4 0", &[]);
    run_asan("asan-papi-shutdown", "rdma 65536 12 0 papi_shutdown rdma 65536 12 0", &[]);
    // The program's own PAPI measurement: libaar.so gives way while the API thread reads at
    // iteration boundaries.
    let own = format!("rdma 65536 12 0 papi start {} rdma 65536 12 0 papi stop", first_event());
    let r = run_asan("asan-papi-own", &own, &[("API_THREAD", "1")]);
    assert!(r.stdout.contains("papi start rc=0\n") && r.stdout.contains("papi stop rc=0\n"), "{}", r.stdout);
    let r = run_asan("asan-exit-posting", "fma 64 3 0 exit_posting", &[]);
    assert!(r.stdout.contains("exit_posting posts>="), "{}", r.stdout);
    run_asan("asan-underscore-exit", "fma 64 3 0 rdma 65536 3 0 _exit", &[]);
}

#[test]
fn asan_degraded_settings_hostile_counters_and_forced_panics() {
    let script = "fma 64 10 0 rdma 65536 6 0 smsg 10 3 ct 64 2 0";
    let cases: &[&[(&str, &str)]] = &[
        &[("AAR_PAPI_LIBRARY", "/nonexistent/libpapi.so")],
        &[("AAR_PAPI_EVENTS", "sde:::aries::NOPE,b,c,d")],
        &[("AAR_MODE", "ADAPTIVEé"), ("AAR_THRESHOLD", "\u{1b}[31m"), ("AAR_LAMBDA", "1e999"), ("AAR_SIGMA", "-0")],
        &[("AAR_THRESHOLD", "0"), ("AAR_WINDOW", "1")],
        &[("AAR_DISABLE", "1")],
        &[("AAR_MODE", "off")],
        &[("AAR_MODE", "ADAPTIVE_2"), ("AAR_ALLTOALL", "0")],
        &[("AAR_OUTPUT_DIR", "/nonexistent/dir"), ("AAR_TRACE", "/nonexistent/dir/t.jsonl")],
        &[("AAR_TEST_PANIC", "before-forward")],
        &[("AAR_TEST_PANIC", "after-forward")],
        &[("AAR_LOG", "trace"), ("AAR_LATENCY_UNIT", "cycles")],
    ];
    for (i, env) in cases.iter().enumerate() {
        run_asan(&format!("asan-settings-{i}"), script, env);
    }
    let hostile = "net 1.2 1.0 2 50 rdma 8192 6 0 cset 10 10 10 10 10 rdma 8192 3 0 \
                   cset 9223372036854775800 0 0 100 0 rdma 8192 2 0 cset -9223372036854775800 0 0 100 0 rdma 8192 3 0 \
                   cadd 1 0 9000000000000000 1 0 rdma 8192 3 0 freeze 1 rdma 8192 4 0 freeze 0 rdma 8192 10 0";
    run_asan("asan-hostile-counters", hostile, &[("AAR_WINDOW", "1")]);
}

// ---------------------------------------------------------------------------------------------
// ThreadSanitizer (nightly; scripts/sanitize runs these).

#[test]
#[ignore = "needs the nightly toolchain with rust-src (rustup); run by scripts/sanitize"]
fn tsan_eight_threads_posting_below_the_threshold() {
    let r = run_tsan("tsan-small", "threads 8 64 20000", &[]);
    assert_eq!(stdout_field(&r.stdout, "emu_posts"), Some(160_000), "{}", r.stdout);
}

#[test]
#[ignore = "needs the nightly toolchain with rust-src (rustup); run by scripts/sanitize"]
fn tsan_eight_threads_crossing_the_threshold_on_every_post() {
    // 8 KiB posts: every post crosses the threshold, so every post contends for the decider;
    // AAR_WINDOW=1 reads the counters after every decision, through PAPI.
    let r = run_tsan("tsan-8k", "threads 8 8192 2000", &[("AAR_WINDOW", "1")]);
    assert_eq!(stdout_field(&r.stdout, "emu_posts"), Some(16_000), "{}", r.stdout);
}

#[test]
#[ignore = "needs the nightly toolchain with rust-src (rustup); run by scripts/sanitize"]
fn tsan_posts_smsg_alltoall_trace_and_the_c_api_from_another_thread() {
    let l = tsan("tsan-api", "threads 8 64 5000 threads 8 8192 1000 smsg 10 100 alltoall 65536 8 rdma 65536 20 0");
    let trace = l.dir.join("trace.jsonl").display().to_string();
    let r = l.env("API_THREAD", "1").env("AAR_TRACE", &trace).run();
    assert_clean(&r, "TSan api", TSAN_EXIT);
    assert!(stdout_field(&r.stdout, "api_calls").unwrap_or(0) > 1000, "the API thread ran: {}", r.stdout);
    assert_eq!(r.records().len(), 1);
}

#[test]
#[ignore = "needs the nightly toolchain with rust-src (rustup); run by scripts/sanitize"]
fn tsan_two_threads_inside_collectives_at_once_under_steady() {
    // A second thread's whole MPI_Alltoall runs inside the first thread's (each with its own call
    // ticket), between calls of four threads crossing the threshold on every post.
    let script = "alltoall 1024 8 alltoall2 1024 8 2048 4 threads 4 8192 200 alltoall2 65536 4 8192 8";
    let r = run_tsan("tsan-calls", script, &[("AAR_MODE", "steady"), ("AAR_WINDOW", "1")]);
    assert_eq!(r.stdout.matches("alltoall2 rc=0 second_rc=0").count(), 2, "{}", r.stdout);
}

#[test]
#[ignore = "needs the nightly toolchain with rust-src (rustup); run by scripts/sanitize"]
fn tsan_first_calls_from_many_threads_fork_and_exit_while_posting() {
    // The first uGNI calls of the process come from 8 threads and the API thread at once.
    run_tsan("tsan-init", "threads 8 64 2000 fma 64 10 0", &[("API_THREAD", "1")]);
    run_tsan("tsan-fork", "fma 64 3 0 fork 6 forkexec rdma 65536 4 0", &[]);
    run_tsan("tsan-papi-shutdown", "threads 4 8192 200 papi_shutdown threads 4 8192 200", &[]);
    // libaar.so gives way to the program's own PAPI measurement while the API thread reads.
    let own = format!("threads 4 8192 100 papi start {} threads 4 8192 100 papi stop", first_event());
    let r = run_tsan("tsan-papi-own", &own, &[("API_THREAD", "1")]);
    assert!(r.stdout.contains("papi start rc=0\n"), "{}", r.stdout);
    // exit() runs the library's exit path while another thread is inside a post.
    run_tsan("tsan-exit-posting", "threads 4 8192 100 exit_posting", &[("API_THREAD", "1")]);
}

// ---------------------------------------------------------------------------------------------
// The machinery catches what it must (deliberate bugs in throwaway programs).

fn throwaway(name: &str, code: &str, flags: &[&str]) -> PathBuf {
    let dir = build_dir().join(format!("selftest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, code).unwrap();
    let exe = dir.join(name);
    let mut args = vec!["-O1", "-g", "-fno-omit-frame-pointer"];
    args.extend(flags);
    let (s, e) = (src.display().to_string(), exe.display().to_string());
    args.extend([s.as_str(), "-o", e.as_str(), "-lpthread"]);
    gcc(&args, name);
    exe
}

fn run_throwaway(exe: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(exe);
    cmd.env_remove("LD_PRELOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn asan_self_test_a_heap_overflow_and_a_leak_are_caught() {
    let overflow = throwaway(
        "overflow",
        "#include <stdlib.h>\n#include <string.h>\nint main(int c, char **v) { (void)v; char *p = malloc(64); memset(p, 1, 64 + c); int r = p[0]; free(p); return r - 1; }\n",
        &["-fsanitize=address"],
    );
    let leak = throwaway(
        "leak",
        "#include <stdlib.h>\n#include <string.h>\nvoid *volatile keep;\n\
         __attribute__((noinline)) static void lose(size_t n) { keep = malloc(n); memset(keep, 1, n); keep = 0; }\n\
         __attribute__((noinline)) static void scrub(void) { volatile char b[8192]; memset((char *)b, 0, sizeof b); }\n\
         int main(void) { lose(100); lose(200); scrub(); return 0; }\n",
        &["-fsanitize=address"],
    );
    let lsan = format!("exitcode=23:suppressions={}", suppressions().display());
    let env = [("ASAN_OPTIONS", ASAN_OPTIONS), ("LSAN_OPTIONS", lsan.as_str())];
    let (code, err) = run_throwaway(&overflow, &env);
    assert_eq!(code, Some(ASAN_EXIT), "{err}");
    assert!(err.contains("heap-buffer-overflow"), "{err}");
    let reps = reports(&err);
    assert!(!reps.is_empty() && reps.iter().all(|r| !r.in_test_program_only), "{reps:?}");
    let (code, err) = run_throwaway(&leak, &env);
    assert_eq!(code, Some(ASAN_EXIT), "{err}");
    let reps = reports(&err);
    assert!(!reps.is_empty() && reps.iter().all(|r| !r.in_test_program_only), "{err}\n{reps:?}");
    // And the same program preloading libaar.so as the scenarios do: still caught.
    let preload = format!("{} {}", gcc_runtime("libasan.so").display(), libaar().display());
    let (code, err) = run_throwaway(&overflow, &[env[0], env[1], ("LD_PRELOAD", &preload)]);
    assert_eq!(code, Some(ASAN_EXIT), "{err}");
}

#[test]
fn tsan_self_test_a_data_race_is_caught() {
    // The second write follows the first through relaxed flags, which order nothing for TSan: a
    // race every run. Two writes at the same instant can go unseen (TSan's maintainers call that
    // a trade-off for speed; CI missed one in a loop of increments), so they never overlap, and
    // the first thread stays alive until the second has written.
    let racy = throwaway(
        "racy",
        "#include <pthread.h>\nlong counter;\nint wrote, done;\n\
         static void *first(void *a) { counter++; __atomic_store_n(&wrote, 1, __ATOMIC_RELAXED); \
         while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) ; return a; }\n\
         static void *second(void *a) { while (!__atomic_load_n(&wrote, __ATOMIC_RELAXED)) ; \
         counter++; __atomic_store_n(&done, 1, __ATOMIC_RELAXED); return a; }\n\
         int main(void) { pthread_t t[2]; pthread_create(&t[0], 0, first, 0); pthread_create(&t[1], 0, second, 0); \
         for (int i = 0; i < 2; i++) pthread_join(t[i], 0); return counter != 2; }\n",
        &["-fsanitize=thread"],
    );
    let (code, err) = run_throwaway(&racy, &[("TSAN_OPTIONS", "halt_on_error=0:exitcode=66")]);
    assert_eq!(code, Some(TSAN_EXIT), "{err}");
    let reps = reports(&err);
    assert!(!reps.is_empty() && reps.iter().all(|r| !r.in_test_program_only), "{reps:?}");
}

#[test]
fn report_parsing_tells_test_program_reports_from_library_ones() {
    let driver_race = "==================\nWARNING: ThreadSanitizer: data race (pid=1)\n  Atomic read of size 8 at 0x1 by main thread:\n    #0 driver_main tests/c/driver.c:600 (api_thread+0x5ded)\n    #1 main tests/c/api_thread.c:86 (api_thread+0x6491)\n\n  Previous write of size 8 at 0x1 by thread T1:\n    #0 transfer tests/c/driver.c:235 (api_thread+0x2e2b)\n\nSUMMARY: ThreadSanitizer: data race tests/c/driver.c:600 in driver_main\n==================\n";
    let lib_race = driver_race.replace(
        "#0 transfer tests/c/driver.c:235 (api_thread+0x2e2b)",
        "#0 aar::state::x src/state.rs:1 (libaar.so+0x1)",
    );
    let driver_leak = "==1==ERROR: LeakSanitizer: detected memory leaks\n\nDirect leak of 32 byte(s) in 1 object(s) allocated from:\n    #0 0x7f in __interceptor_calloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:77\n    #1 0x56 in main tests/c/driver.c:633\n    #2 0x7f in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58\n\nSUMMARY: AddressSanitizer: 32 byte(s) leaked in 1 allocation(s).\n";
    let lib_leak = driver_leak.replace(
        "#1 0x56 in main tests/c/driver.c:633",
        "#1 0x7f in aar::output::x src/output.rs:9\n    #2 0x56 in main tests/c/driver.c:633",
    );
    let r = reports(driver_race);
    assert!(r.len() == 1 && r[0].in_test_program_only, "{r:?}");
    let r = reports(&lib_race);
    assert!(r.len() == 1 && !r[0].in_test_program_only, "{r:?}");
    let r = reports(driver_leak);
    assert!(r.len() == 1 && r[0].in_test_program_only, "{r:?}");
    let r = reports(&lib_leak);
    assert!(r.len() == 1 && !r[0].in_test_program_only, "{r:?}");
    let overflow = "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1\n    #0 0x1 in main tests/c/driver.c:1\nSUMMARY: AddressSanitizer: heap-buffer-overflow\n";
    let r = reports(overflow);
    assert!(r.len() == 1 && !r[0].in_test_program_only, "memory errors are never excused: {r:?}");
}
