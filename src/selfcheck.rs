//! The library's own check of the environment it runs in, for `aar doctor` (exported as
//! `aar_selfcheck`, an internal symbol that `cabi/aar.h` does not declare).
//!
//! It runs the code a job runs at initialisation, not a copy of it: the settings parser
//! (`Settings::from_lookup` over the environment, with its warnings word for word) and the PAPI
//! seam (`Papi::open` with the configured library and events, whose error is the text the library
//! would print). Then, through the PAPI library that `Papi::open` loaded, it asks PAPI which
//! version it is and whether each configured event exists on its own (`PAPI_query_named_event`),
//! so that every missing event is named, not only the first.
//!
//! Rules it keeps: nothing on stdout, no abort (a panic becomes the return value −1), no
//! allocation handed to the caller (the JSON is copied into the caller's buffer), and the
//! library's runtime is neither initialised nor touched: no control word, no decider, no exit
//! handler, no record. The check runs once per process (loading and initialising PAPI are not
//! undone); later calls return the same document. When the runtime is already initialised in this process
//! (a job, not `aar doctor`), PAPI is not opened a second time: the document says so. The event
//! set the check started is stopped and destroyed again, so that the library's own one can start
//! later in this process (PAPI runs one event set per component at a time).
//!
//! `unsafe` here is the C boundary (the caller's buffer) and the PAPI calls of the extra
//! questions (version, one event at a time), each with its SAFETY line.

use crate::papi::{
    Code, DestroyEventsetFn, EventsetFn, GetOptFn, IsInitializedFn, Papi, PapiError, QueryNamedEventFn, StateFn,
    StopFn, StrerrorFn, PAPI_LIB_VERSION, PAPI_NOT_INITED, PAPI_OK, PAPI_RUNNING,
};
use crate::settings::{MpiFunction, Settings, TableSource, VARIABLES};
use crate::{state, topology};
use aar_abi::counters::REQUIRED_EVENTS;
use aar_engine::RoutingMode;
use libloading::os::unix::Library;
use serde_json::{json, Value};
use std::ffi::{c_char, c_int, c_longlong, c_void, CStr, CString};
use std::sync::OnceLock;

/// The document's format name; bump the number when a field changes meaning.
pub const FORMAT: &str = "aar-selfcheck/2";

/// What each configured event is for, in the order of `AAR_PAPI_EVENTS`.
const ROLES: [&str; 5] = [
    "request flits",
    "request stalled cycles",
    "cumulative response latency",
    "response packets",
    "response stalled cycles (optional)",
];

/// Event set ids are small indices into PAPI's table; looking this far covers any process.
const MAX_EVENTSET_ID: c_int = 4096;

static DOCUMENT: OnceLock<String> = OnceLock::new();

/// The export's body: copy the document (made on the first call) into `buf`.
///
/// Returns the document's length in bytes, without the terminating NUL. When `len` is larger
/// than that, the document and a NUL were written to `buf`; otherwise nothing was written, and a
/// buffer of at least the returned length + 1 gets it. −1: an internal error (a panic, caught).
///
/// # Safety
/// `buf` is NULL (with any `len`: only the length is returned) or valid for writing `len` bytes.
pub unsafe fn write_report(buf: *mut c_char, len: usize) -> isize {
    let Ok(doc) = std::panic::catch_unwind(|| DOCUMENT.get_or_init(document).as_str()) else {
        return -1;
    };
    let n = doc.len();
    if !buf.is_null() && len > n {
        // SAFETY: `buf` is valid for `len` > n bytes (the contract), and cannot overlap the
        // library's own string.
        unsafe {
            std::ptr::copy_nonoverlapping(doc.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    isize::try_from(n).unwrap_or(-1)
}

/// The whole check, as JSON.
fn document() -> String {
    let lookup = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
    let (settings, warnings) = Settings::from_environment();
    let set: Vec<Value> = VARIABLES
        .iter()
        .filter_map(|(name, default)| {
            lookup(name).map(|value| json!({ "name": name, "value": value, "default": default }))
        })
        .collect();
    let warnings: Vec<Value> = warnings
        .iter()
        .map(|w| json!({ "variable": w.variable, "value": w.value, "message": w.message, "no_effect": w.no_effect }))
        .collect();
    let runtime_initialised = state::settings().is_some();
    let papi = if runtime_initialised {
        json!({
            "checked": false,
            "skipped": "libaar.so is already initialised in this process and has its own PAPI event set; \
                        it was not opened a second time",
        })
    } else {
        check_papi(&settings)
    };
    let (table, source) = settings.dmapp_table();
    let unknown = crate::settings::unknown_variables(crate::sys::variable_names());
    let doc = json!({
        "format": FORMAT,
        "version": env!("CARGO_PKG_VERSION"),
        "git_revision": env!("AAR_GIT_REVISION"),
        "library": crate::sys::own_path(),
        "pid": std::process::id(),
        "runtime_initialised": runtime_initialised,
        "variables_set": set,
        "unknown_variables": unknown.iter().map(|name| json!({
            "name": name,
            "warning": crate::settings::unknown_variable_warning(name),
        })).collect::<Vec<_>>(),
        "settings": serde_json::to_value(&settings).unwrap_or(Value::Null),
        "warnings": warnings,
        "papi": papi,
        "dmapp": {
            "routing_table": table.to_string(),
            "table_source": source.to_string(),
            "assumed": source == TableSource::Assumed,
        },
        // The node table `steady` would use, read and checked as at initialisation.
        "topology": topology::Read::named(settings.topology.as_deref()).map(|r| json!({
            "from": r.from,
            "path": r.path.display().to_string(),
            "nodes": r.table.as_ref().map_or(0, |t| t.len()),
            "xtprocadmin_nodes": r.table.as_ref().map_or(0, |t| t.named_len()),
            "node": r.node.map(|n| json!({ "nid": n.nid, "cname": n.cname })),
            "nic_address": topology::local_nic_address(),
            "warning": r.warning,
        })),
        // The job's number of ranks as a rank started here would take it (null: none is set).
        "job_ranks": crate::job::size_in_environment().map(|(variable, n)| json!({ "ranks": n, "from": variable })),
        // What `aar doctor` looks for in a program's Fortran MPI bindings.
        "mpi_wrapped": MpiFunction::ALL.map(MpiFunction::name),
        // And their MPI 4 large-count forms (`MPI_Allreduce_c`), which it wraps too.
        "mpi_wrapped_large_count": crate::mpi::LARGE_COUNT.map(|c| c.name()),
        // Whether the decider's lock can be biased to the posting thread here (README, "Inside a
        // production job").
        "decider_lock": match crate::sys::process_barrier_usable() {
            Ok(_) => json!({ "can_be_biased": true }),
            Err(why) => json!({ "can_be_biased": false, "because": why }),
        },
        // The routing Cray MPICH asks for on its own posts: libaar.so changes adaptive requests only.
        "mpich_gni_routing_mode": lookup("MPICH_GNI_ROUTING_MODE").map(|v| json!({
            "value": v,
            "adaptive": v.parse::<RoutingMode>().ok().map(RoutingMode::name),
        })),
    });
    doc.to_string()
}

/// Open PAPI as the job would, then ask it the questions the job does not.
fn check_papi(settings: &Settings) -> Value {
    let explicit = settings.papi_library.as_deref();
    // What exists before the library's own code runs: PAPI event sets of the process (when it
    // already uses PAPI), and the Software-Defined Events registered so far (PAPI accepts any
    // sde::: name as a placeholder once it has been asked for it, so ask libsde first).
    let sets_before = LoadedPapi::find(explicit, None).map(|p| p.eventsets()).unwrap_or_default();
    let sde = sde_registered();
    let opened = Papi::open(explicit, &settings.papi_events);
    let (ok, error, notes, loaded_as) = match opened {
        Ok(o) if o.counting => (true, None, o.notes, Some(o.library)),
        Ok(o) => (false, Some(PapiError::InUse.to_string()), o.notes, Some(o.library)),
        Err(why) => (false, Some(why.to_string()), Vec::new(), None),
    };
    let loaded = LoadedPapi::find(explicit, loaded_as.as_deref());
    let events: Vec<Value> = settings
        .papi_events
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (exists, detail) = match (&loaded, name.strip_prefix("sde:::")) {
                (None, _) => (None, "PAPI was not loaded".to_string()),
                (Some(_), Some(sde_name)) => match &sde {
                    Some(registered) if registered.iter().any(|r| r == sde_name) => (Some(true), String::new()),
                    Some(_) => (Some(false), SDE_MISSING.to_string()),
                    None => (Some(false), NO_SDE.to_string()),
                },
                (Some(p), None) => p.query(name),
            };
            json!({
                "name": name,
                "role": ROLES.get(i).copied().unwrap_or("unused"),
                "required": i < REQUIRED_EVENTS,
                "exists": exists,
                "detail": detail,
            })
        })
        .collect();
    let (path, version) = match &loaded {
        Some(p) => {
            // Give the event set the check started (and any it created) back, so this process
            // can still start one of its own: PAPI runs one event set per component at a time.
            p.destroy_new_eventsets(&sets_before);
            (p.path.clone(), p.version())
        }
        None => (None, None),
    };
    json!({
        "checked": true,
        "requested_library": settings.papi_library,
        "opened": ok,
        "error": error,
        "notes": notes,
        "loaded_as": loaded_as,
        "path": path,
        "version": version,
        "events": events,
    })
}

const SDE_MISSING: &str = "no library loaded in this process registered this Software-Defined Event \
(PAPI accepts the name as a placeholder that always reads 0)";
const NO_SDE: &str = "no library in this process registers Software-Defined Events (libsde is not loaded globally)";

/// The Software-Defined Events registered in this process (`library::event`), from libsde;
/// `None` when libsde is not in the global scope (then PAPI's sde component sees none either).
fn sde_registered() -> Option<Vec<String>> {
    type NumFn = unsafe extern "C" fn() -> c_int;
    type NameFn = unsafe extern "C" fn(c_int) -> *mut c_char;
    // SAFETY: dlsym with NUL-terminated names.
    let (num, name) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"sde_ti_get_num_reg_events".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"sde_ti_get_event_name".as_ptr()),
        )
    };
    if num.is_null() || name.is_null() {
        return None;
    }
    // SAFETY: libsde's prototypes (sde_lib_ti.h): int (void) and char *(int).
    let (num, name) =
        unsafe { (std::mem::transmute::<*mut c_void, NumFn>(num), std::mem::transmute::<*mut c_void, NameFn>(name)) };
    // SAFETY: no arguments; reads libsde's table.
    let n = unsafe { num() }.clamp(0, 100_000);
    let names = (0..n)
        .filter_map(|i| {
            // SAFETY: an index below the count; libsde returns NULL or a string it owns.
            let p = unsafe { name(i) };
            // SAFETY: non-null, NUL-terminated, owned by libsde for the process's life.
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        })
        .collect();
    Some(names)
}

/// The PAPI library `Papi::open` loaded, opened again by handle (RTLD_NOLOAD: never a second
/// copy) for the version and per-event questions.
struct LoadedPapi {
    lib: Library,
    path: Option<String>,
}

impl LoadedPapi {
    fn find(explicit: Option<&str>, loaded_as: Option<&str>) -> Option<LoadedPapi> {
        let mut candidates: Vec<String> = loaded_as.into_iter().chain(explicit).map(str::to_string).collect();
        let loaded = crate::sys::loaded_objects().into_iter().map(|n| n.to_string_lossy().into_owned());
        candidates.extend(loaded.filter(|p| {
            let base = p.rsplit('/').next().unwrap_or(p);
            base.starts_with("libpapi.so") || base.starts_with("libpapi-")
        }));
        candidates.into_iter().find_map(|name| {
            // SAFETY: RTLD_NOLOAD only returns a handle to a library already loaded in this
            // process (no constructor runs again); the handle keeps it loaded while we use it.
            let lib = unsafe { Library::open(Some(&name), libc::RTLD_NOLOAD | libc::RTLD_LAZY) }.ok()?;
            let path = symbol_file(&lib, "PAPI_get_opt");
            // Only a library that is PAPI: it must have the functions we call.
            // SAFETY: the symbol's C prototype is GetOptFn (papi.h); it is only looked up here.
            unsafe { lib.get::<GetOptFn>(b"PAPI_get_opt") }.ok()?;
            Some(LoadedPapi { lib, path })
        })
    }

    /// The event sets that exist now (ids PAPI_state answers for), empty before initialisation.
    fn eventsets(&self) -> Vec<c_int> {
        let Some(state) = self.initialised_fn::<StateFn>(b"PAPI_state") else { return Vec::new() };
        (0..MAX_EVENTSET_ID)
            .filter(|&id| {
                let mut status: c_int = 0;
                // SAFETY: PAPI is initialised; `status` is a valid int; an unknown id is an error.
                let rc = unsafe { state(id, &mut status) };
                rc == PAPI_OK
            })
            .collect()
    }

    /// Stop, clean up and destroy the event sets that did not exist in `before`.
    fn destroy_new_eventsets(&self, before: &[c_int]) {
        let (Some(state), Some(stop), Some(cleanup), Some(destroy)) = (
            self.initialised_fn::<StateFn>(b"PAPI_state"),
            self.initialised_fn::<StopFn>(b"PAPI_stop"),
            self.initialised_fn::<EventsetFn>(b"PAPI_cleanup_eventset"),
            self.initialised_fn::<DestroyEventsetFn>(b"PAPI_destroy_eventset"),
        ) else {
            return;
        };
        for mut id in self.eventsets().into_iter().filter(|id| !before.contains(id)) {
            let mut status: c_int = 0;
            // SAFETY: an existing event set; `status` is a valid int.
            if unsafe { state(id, &mut status) } == PAPI_OK && status & PAPI_RUNNING != 0 {
                let mut values = [0 as c_longlong; 64];
                // SAFETY: a running event set of at most 5 events; `values` has room for 64.
                unsafe { stop(id, values.as_mut_ptr()) };
            }
            // SAFETY: an existing, stopped event set; destroy resets `id` to PAPI_NULL.
            unsafe {
                cleanup(id);
                destroy(&mut id);
            }
        }
    }

    /// A PAPI function, only once PAPI is initialised (most refuse, or crash, before).
    fn initialised_fn<T: Copy>(&self, name: &[u8]) -> Option<T> {
        // SAFETY: PAPI_is_initialized's prototype; `T` is the prototype of `name` at each call site.
        unsafe {
            let is_initialized = *self.lib.get::<IsInitializedFn>(b"PAPI_is_initialized").ok()?;
            if is_initialized() == PAPI_NOT_INITED {
                return None;
            }
            Some(*self.lib.get::<T>(name).ok()?)
        }
    }

    /// `major.minor.revision.increment` of the loaded library.
    fn version(&self) -> Option<String> {
        // SAFETY: PAPI_get_opt's prototype in papi.h is GetOptFn.
        let get_opt = unsafe { self.lib.get::<GetOptFn>(b"PAPI_get_opt") }.ok()?;
        // SAFETY: PAPI_LIB_VERSION takes no option structure (NULL is documented for it) and
        // works before initialisation.
        let v = unsafe { get_opt(PAPI_LIB_VERSION, std::ptr::null_mut()) };
        (v > 0).then(|| format!("{}.{}.{}.{}", (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff))
    }

    /// Whether PAPI knows the event `name`: `(Some(true), "")`, `(Some(false), why)`, or `None`
    /// when PAPI could not be asked.
    fn query(&self, name: &str) -> (Option<bool>, String) {
        // SAFETY: the prototypes of these three functions in papi.h.
        let fns = unsafe {
            (
                self.lib.get::<IsInitializedFn>(b"PAPI_is_initialized"),
                self.lib.get::<QueryNamedEventFn>(b"PAPI_query_named_event"),
                self.lib.get::<StrerrorFn>(b"PAPI_strerror"),
            )
        };
        let (Ok(is_initialized), Ok(query), Ok(strerror)) = fns else {
            return (
                None,
                "this PAPI library lacks PAPI_is_initialized, PAPI_query_named_event or PAPI_strerror".into(),
            );
        };
        // SAFETY: no arguments; only reads PAPI's state.
        if unsafe { is_initialized() } == PAPI_NOT_INITED {
            return (None, "PAPI is not initialised (PAPI_library_init did not succeed)".into());
        }
        let Ok(cname) = CString::new(name) else {
            return (Some(false), "the name contains a NUL byte".into());
        };
        // SAFETY: PAPI is initialised and the name is NUL-terminated.
        let rc = unsafe { query(cname.as_ptr()) };
        if rc == PAPI_OK {
            return (Some(true), String::new());
        }
        (Some(false), Code::describe(*strerror, rc).to_string())
    }
}

/// The file a symbol of `lib` comes from.
fn symbol_file(lib: &Library, name: &str) -> Option<String> {
    // SAFETY: the symbol is only used for its address, never called.
    let sym = unsafe { lib.get::<*mut c_void>(name.as_bytes()) }.ok()?;
    crate::sys::file_of(*sym as *const c_void)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(len: usize) -> (isize, Vec<u8>) {
        let mut buf = vec![0x55u8; len];
        // SAFETY: `buf` is valid for `len` bytes.
        let n = unsafe { write_report(buf.as_mut_ptr().cast(), len) };
        (n, buf)
    }

    #[test]
    fn a_short_buffer_gets_the_length_and_no_bytes_then_the_document_fits() {
        // SAFETY: NULL asks for the length only.
        let n = unsafe { write_report(std::ptr::null_mut(), 0) };
        assert!(n > 0);
        let n = n as usize;
        let (m, buf) = call(n);
        assert_eq!(m as usize, n, "the same document every time");
        assert!(buf.iter().all(|&b| b == 0x55), "nothing written into a buffer of exactly the length");
        let (m, buf) = call(n + 1);
        assert_eq!(m as usize, n);
        assert_eq!(buf[n], 0);
        let doc: Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!(doc["format"], FORMAT);
        assert_eq!(doc["runtime_initialised"], false);
        assert!(doc["settings"]["engine"]["threshold_bytes"].is_u64(), "{doc}");
        assert!(doc["papi"]["events"].as_array().is_some_and(|e| (4..=5).contains(&e.len())), "{doc}");
        let (table, source) = Settings::default().dmapp_table();
        assert_eq!(doc["dmapp"]["routing_table"], table.to_string(), "{doc}");
        assert_eq!(doc["dmapp"]["assumed"], source == TableSource::Assumed);
        assert!(state::settings().is_none(), "the check never initialises the runtime");
    }
}
