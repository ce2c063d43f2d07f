//! Running libaar.so's own check (`aar_selfcheck`, src/selfcheck.rs) in this process: the
//! program's libugni first, as the job's loader would load it, then libaar.so by dlopen.

use super::{elf, Report};
use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LAZY, RTLD_LOCAL};
use serde_json::Value;
use std::ffi::{c_char, CStr};
use std::path::Path;

type SelfcheckFn = unsafe extern "C" fn(*mut c_char, usize) -> isize;
type VersionFn = unsafe extern "C" fn() -> *const c_char;

/// What the self-check gave.
pub struct Outcome {
    /// The self-check document (`aar-selfcheck/2`), when it ran.
    pub doc: Option<Value>,
    /// The program's libugni was loaded into this process before it.
    pub ugni_loaded: bool,
}

/// Load `libaar` (chosen as `how` says) and run its self-check.
pub fn run(libaar: &Path, how: &str, closure: Option<&elf::Closure>, report: &mut Report) -> Outcome {
    let ugni_loaded = load_ugni(closure, report);
    Outcome { doc: check(libaar, how, report), ugni_loaded }
}

/// The program's libugni, loaded as the job's loader would load it.
fn load_ugni(closure: Option<&elf::Closure>, report: &mut Report) -> bool {
    if let Some(ugni) = closure.and_then(|c| c.find(&["libugni.so"]).into_iter().find_map(|l| l.path.clone())) {
        // The job's loader puts the program's libraries in the global scope; so does this: PAPI's
        // SDE component finds the counters libugni registers (through libsde) only there.
        // SAFETY: loading the program's own libugni runs its constructors, as the job does.
        match unsafe { Library::open(Some(&ugni), RTLD_LAZY | RTLD_GLOBAL) } {
            Ok(lib) => {
                report.note(
                    "counters",
                    format!(
                        "loaded the program's {} into this check first (RTLD_LAZY|RTLD_GLOBAL), as the job's loader \
                         would: counter events its libraries register exist only where it is loaded",
                        ugni.display()
                    ),
                );
                // Never unloaded: libraries it registered events with keep pointers into it.
                std::mem::forget(lib);
                return true;
            }
            Err(e) => report.warning(
                "counters",
                format!(
                    "the program's {} does not load here ({e}); events it would register cannot be checked",
                    ugni.display()
                ),
                "Run aar doctor where the job runs (on a compute node: srun -n 1 aar doctor ./app).",
            ),
        }
    }
    false
}

fn check(libaar: &Path, how: &str, report: &mut Report) -> Option<Value> {
    // SAFETY: libaar.so does no work in its constructors beyond what is safe before main (DESIGN
    // §4); it initialises only on an intercepted call, which this process never makes.
    let lib = match unsafe { Library::open(Some(libaar), RTLD_LAZY | RTLD_LOCAL) } {
        Ok(lib) => lib,
        Err(e) => {
            // A file that is no ELF library at all (a text file, a truncated copy) has no missing
            // library for ldd to name.
            let fix = match elf::read(libaar) {
                Err(why) if !matches!(why, elf::NotElf::Unreadable(_)) => format!(
                    "It is {why}, not a shared library: preload the libaar.so of this aar ($AAR_ROOT/lib/libaar.so, \
                     or module load aar), or pass it with --lib; the loader would fail the same way."
                ),
                _ => "Check the file (ldd on it names a missing library), or reinstall aar; the loader would fail the same way."
                    .to_string(),
            };
            report.problem("libaar.so", format!("{} ({how}) does not load: {e}", libaar.display()), fix);
            return None;
        }
    };
    // SAFETY: aar_version's prototype in cabi/aar.h; it returns a static NUL-terminated string.
    let version = unsafe { lib.get::<VersionFn>(b"aar_version") }
        .ok()
        .map(|f| unsafe { CStr::from_ptr(f()) }.to_string_lossy().into_owned());
    let Some(version) = version else {
        // Every libaar.so has defined aar_version: this is another library under its name.
        report.problem(
            "libaar.so",
            format!("{} ({how}) loads but is not libaar.so: it does not define aar_version", libaar.display()),
            "Preload the libaar.so of this aar ($AAR_ROOT/lib/libaar.so, or module load aar), or pass it with --lib.",
        );
        return None;
    };
    // SAFETY: the prototype of the export in src/exports.rs.
    let Ok(selfcheck) = (unsafe { lib.get::<SelfcheckFn>(b"aar_selfcheck") }) else {
        report.ok("libaar.so", format!("{} ({how}) loads (aar {version})", libaar.display()));
        report.warning(
            "libaar.so",
            "this libaar.so has no aar_selfcheck (it is older than this aar): PAPI, the counter events and the \
             settings were not checked",
            "Check with the aar of the same installation ($AAR_ROOT/bin/aar), or pass that one's library with --lib.",
        );
        return None;
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = -1;
    for _ in 0..2 {
        // SAFETY: `buf` is valid for writing `buf.len()` bytes.
        n = unsafe { selfcheck(buf.as_mut_ptr().cast(), buf.len()) };
        match usize::try_from(n) {
            Ok(len) if len >= buf.len() => buf.resize(len + 1, 0),
            _ => break,
        }
    }
    let doc = usize::try_from(n)
        .ok()
        .filter(|&len| len < buf.len())
        .and_then(|len| serde_json::from_slice::<Value>(&buf[..len]).ok());
    let shown = doc
        .as_ref()
        .and_then(|d| d["library"].as_str().map(str::to_string))
        .unwrap_or_else(|| libaar.display().to_string());
    report.ok(
        "libaar.so",
        format!(
            "{shown} ({how}) loads: aar {version}{}",
            doc.as_ref().and_then(|d| d["git_revision"].as_str()).map(|g| format!(", git {g}")).unwrap_or_default()
        ),
    );
    let Some(doc) = doc else {
        report.problem(
            "libaar.so",
            format!("its self-check failed (aar_selfcheck returned {n}): PAPI, the counter events and the settings were not checked"),
            "Please report it, with the output of aar doctor --json.",
        );
        return None;
    };
    if doc["version"].as_str() != Some(env!("CARGO_PKG_VERSION")) {
        report.note(
            "libaar.so",
            format!(
                "it is aar {} and this aar is {}",
                doc["version"].as_str().unwrap_or("?"),
                env!("CARGO_PKG_VERSION")
            ),
        );
    }
    // Keep libaar.so loaded: PAPI, which it loaded, stays in use until the process exits.
    std::mem::forget(lib);
    Some(doc)
}
