//! The PAPI seam: libpapi is opened at run time (never linked), so libaar.so loads and runs on
//! nodes without PAPI. All NIC counters are read as one event set at one instant. The PAPI
//! declarations here (constants and function types, as in papi.h) are the only ones: the
//! self-check uses them too.

use crate::sys::Real;
use aar_abi::counters::REQUIRED_EVENTS;
use aar_engine::CounterSample;
use libloading::Library;
use std::ffi::{c_char, c_int, c_longlong, c_void, CStr, CString};
use std::fmt;
use std::sync::OnceLock;

pub const PAPI_OK: c_int = 0;
const PAPI_NULL: c_int = -1;
/// What `PAPI_is_initialized` returns before `PAPI_library_init`.
pub const PAPI_NOT_INITED: c_int = 0;
/// `PAPI_get_opt` option returning the library's version; works before initialisation.
pub const PAPI_LIB_VERSION: c_int = 21;
/// The running bit of `PAPI_state`'s status.
pub const PAPI_RUNNING: c_int = 0x02;
/// `PAPI_start`'s answer when an event set of the same component already counts (PAPI counts one
/// event set per component at a time).
pub const PAPI_EISRUN: c_int = -10;
/// PAPI is not initialised (the answer of a `PAPI_start` with no PAPI behind it).
pub const PAPI_ENOINIT: c_int = -16;

/// Sonames tried when `AAR_PAPI_LIBRARY` is not set: the unversioned name a `module load papi`
/// puts on the search path first, then the versions we know the ABI of.
const SONAMES: [&str; 6] =
    ["libpapi.so", "libpapi.so.7.0", "libpapi.so.7", "libpapi.so.6.0", "libpapi.so.6", "libpapi.so.5"];

pub type IsInitializedFn = unsafe extern "C" fn() -> c_int;
pub type GetOptFn = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;
pub type LibraryInitFn = unsafe extern "C" fn(c_int) -> c_int;
pub type CreateEventsetFn = unsafe extern "C" fn(*mut c_int) -> c_int;
pub type AddNamedEventFn = unsafe extern "C" fn(c_int, *const c_char) -> c_int;
pub type StartFn = unsafe extern "C" fn(c_int) -> c_int;
pub type ReadFn = unsafe extern "C" fn(c_int, *mut c_longlong) -> c_int;
pub type StrerrorFn = unsafe extern "C" fn(c_int) -> *mut c_char;
pub type QueryNamedEventFn = unsafe extern "C" fn(*const c_char) -> c_int;
pub type StateFn = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;
pub type StopFn = unsafe extern "C" fn(c_int, *mut c_longlong) -> c_int;
/// `PAPI_cleanup_eventset`.
pub type EventsetFn = unsafe extern "C" fn(c_int) -> c_int;
pub type DestroyEventsetFn = unsafe extern "C" fn(*mut c_int) -> c_int;
pub type ShutdownFn = unsafe extern "C" fn();

/// A PAPI return code, with PAPI's own words for it when it has some.
#[derive(Clone, Debug)]
pub struct Code {
    rc: c_int,
    text: Option<String>,
}

impl Code {
    /// `rc` as `PAPI_strerror` describes it.
    pub fn describe(strerror: StrerrorFn, rc: c_int) -> Self {
        // SAFETY: PAPI_strerror returns NULL or a pointer to a static NUL-terminated string.
        let text = unsafe {
            let p = strerror(rc);
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        Self { rc, text }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.text {
            Some(t) => write!(f, "{t} (code {})", self.rc),
            None => write!(f, "code {}", self.rc),
        }
    }
}

/// Why the counters are unavailable; the text is the start of the warning the user sees.
#[derive(Debug, thiserror::Error)]
pub enum PapiError {
    /// `given`: the path `AAR_PAPI_LIBRARY` gave (then the only one tried).
    #[error("PAPI could not be loaded (tried {tried}: {first_error})")]
    NotLoaded { tried: String, first_error: String, given: Option<String> },
    #[error(
        "the PAPI library{} lacks {function} ({why})",
        given.as_ref().map(|g| format!(" AAR_PAPI_LIBRARY names ({g})")).unwrap_or_default()
    )]
    MissingFunction { function: &'static str, why: String, given: Option<String> },
    #[error("{call} failed: {code}")]
    Failed { call: &'static str, code: Code },
    #[error("event name {0:?} contains a NUL byte")]
    NulInEventName(String),
    #[error("the PAPI event {name} is not available ({code})")]
    EventUnavailable { name: String, code: Code },
    #[error("PAPI was shut down by the application (PAPI_shutdown)")]
    ShutDown,
    #[error(
        "another PAPI event set of this process (the application's, or a tool's in it) already counts events of the \
         PAPI component that serves the NIC counters, and PAPI counts one event set per component at a time: \
         libaar.so's counters count once the application stops that set"
    )]
    InUse,
    #[error(
        "the application started a PAPI event set of its own on the PAPI component that serves the NIC counters, \
         and PAPI counts one event set per component at a time: libaar.so stopped its counters to let it count, \
         until the application stops that set"
    )]
    GaveWay,
    #[error(
        "this process was forked while a thread of its parent had been inside a routing decision for longer than \
         the fork waits ({} ms: stuck in a send or in PAPI's read), so the counters' state it inherited may be \
         half-written and a lock inside PAPI may stay held here for good: this process reads no counters",
        crate::trylock::FORK_HOLD.as_millis()
    )]
    ForkedMidDecision,
}

impl PapiError {
    /// How to get the counters back, the start of the warning's last sentence.
    pub fn fix(&self) -> std::borrow::Cow<'static, str> {
        match self {
            // The library AAR_PAPI_LIBRARY named is what failed: setting it would not help.
            PapiError::NotLoaded { given: Some(g), .. } | PapiError::MissingFunction { given: Some(g), .. } => format!(
                "Correct AAR_PAPI_LIBRARY (it names {g}) to the path of a libpapi.so that loads here, or unset it to \
                 load the libpapi.so the loader finds (module load papi, on a Cray)"
            )
            .into(),
            _ => self.usual_fix().into(),
        }
    }

    fn usual_fix(&self) -> &'static str {
        match self {
            PapiError::InUse | PapiError::GaveWay => {
                "Leave that component's events out of the application's (or the tool's) PAPI measurements"
            }
            PapiError::ShutDown => "Shut PAPI down only after the application's last send",
            PapiError::ForkedMidDecision => "Fork while no other thread of the process sends",
            _ => "Load PAPI (e.g. module load papi), set AAR_PAPI_LIBRARY or AAR_PAPI_EVENTS",
        }
    }
}

/// Why a read failed. Small and `Copy`, because reads are on the decision path (a `PapiError`
/// in the read's result made every decision measurably slower); [`Papi::explain`] puts it in
/// words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFailure {
    /// The application shut PAPI down (`PAPI_shutdown`).
    ShutDown,
    /// `PAPI_read` returned this code.
    Failed(c_int),
}

/// `Ok` when `rc` is `PAPI_OK`, else the failure of `call` in PAPI's words.
#[inline]
fn check(strerror: StrerrorFn, rc: c_int, call: &'static str) -> Result<(), PapiError> {
    if rc == PAPI_OK {
        Ok(())
    } else {
        Err(failed(strerror, rc, call))
    }
}

/// `call` failed with `rc` (off the path of a read that succeeds).
#[cold]
fn failed(strerror: StrerrorFn, rc: c_int, call: &'static str) -> PapiError {
    PapiError::Failed { call, code: Code::describe(strerror, rc) }
}

/// An open, started event set of the 4 or 5 NIC events.
///
/// 24 bytes, in the decider's first line (`PAPI_strerror` is looked up when a read fails).
pub struct Papi {
    is_initialized: IsInitializedFn,
    read: ReadFn,
    eventset: c_int,
    /// Whether the optional fifth event (response stalls) is in the set.
    with_rsp_stalled: bool,
}

/// A started event set, the notes about an optional event that could not be added, and the
/// library as it was loaded.
pub struct Opened {
    pub papi: Papi,
    pub notes: Vec<String>,
    pub library: String,
    /// Started; false when another event set of the same component was counting
    /// ([`PapiError::InUse`]): the set is made, and [`Papi::restart`] starts it later.
    pub counting: bool,
}

/// The loaded library, kept until the process ends: its functions stay in use.
static LIBRARY: OnceLock<Library> = OnceLock::new();

/// The `PAPI_start`, `PAPI_stop`, `PAPI_library_init` and `PAPI_shutdown` after libaar.so's
/// (libpapi's), for the application's calls:
/// libaar.so's own go to the functions in [`LIBRARY`].
pub static APPLICATION_START: Real = Real::new(c"PAPI_start");
pub static APPLICATION_STOP: Real = Real::new(c"PAPI_stop");
pub static APPLICATION_LIBRARY_INIT: Real = Real::new(c"PAPI_library_init");
pub static APPLICATION_SHUTDOWN: Real = Real::new(c"PAPI_shutdown");

/// Whether the PAPI that libaar.so loaded is shut down right now (its `PAPI_is_initialized` says
/// so): asked at the application's `PAPI_library_init`, which may be initialising it again after a
/// `PAPI_shutdown` that destroyed libaar.so's event set. False when none was loaded.
pub fn shut_down() -> bool {
    let Some(is_initialized) =
        LIBRARY.get().and_then(|lib| symbol::<IsInitializedFn>(lib, "PAPI_is_initialized", None).ok())
    else {
        return false;
    };
    // SAFETY: PAPI_is_initialized takes no arguments and only reads PAPI's state.
    unsafe { is_initialized() == PAPI_NOT_INITED }
}

fn load(explicit: Option<&str>) -> Result<(&'static Library, String), PapiError> {
    if let Some(lib) = LIBRARY.get() {
        // Already loaded (a fork child re-opening its event set): the same library.
        return Ok((lib, explicit.unwrap_or("libpapi").to_string()));
    }
    let candidates: Vec<&str> = match explicit {
        Some(path) => vec![path],
        None => SONAMES.to_vec(),
    };
    let mut first_error = None;
    for name in &candidates {
        // A path given by the user: dlopen would block on a FIFO there (its open waits for a
        // writer), so only a regular file is opened.
        if name.contains('/') && std::fs::metadata(name).is_ok_and(|m| !m.is_file()) {
            first_error.get_or_insert(format!("{name}: not a regular file"));
            continue;
        }
        // SAFETY: loading libpapi runs its ELF constructors, which only set up PAPI's own state.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok((LIBRARY.get_or_init(|| lib), name.to_string())),
            Err(e) => {
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    Err(PapiError::NotLoaded {
        tried: candidates.join(", "),
        first_error: first_error.unwrap_or_default(),
        given: explicit.map(str::to_string),
    })
}

/// `function` of `lib`; `given`: the path AAR_PAPI_LIBRARY gave for it, which a missing function
/// names as what to correct.
fn symbol<T: Copy>(lib: &'static Library, function: &'static str, given: Option<&str>) -> Result<T, PapiError> {
    // SAFETY: each `T` at the call sites is the C prototype of the named function in papi.h.
    unsafe { lib.get::<T>(function.as_bytes()) }.map(|s| *s).map_err(|e| PapiError::MissingFunction {
        function,
        why: e.to_string(),
        given: given.map(str::to_string),
    })
}

impl Papi {
    /// Load PAPI, initialise it unless the application already did, and start an event set of
    /// `events` (the first four required, the fifth optional).
    pub fn open(explicit_library: Option<&str>, events: &[String]) -> Result<Opened, PapiError> {
        let (lib, library) = load(explicit_library)?;
        let is_initialized: IsInitializedFn = symbol(lib, "PAPI_is_initialized", explicit_library)?;
        let get_opt: GetOptFn = symbol(lib, "PAPI_get_opt", explicit_library)?;
        let library_init: LibraryInitFn = symbol(lib, "PAPI_library_init", explicit_library)?;
        let create_eventset: CreateEventsetFn = symbol(lib, "PAPI_create_eventset", explicit_library)?;
        let add_named_event: AddNamedEventFn = symbol(lib, "PAPI_add_named_event", explicit_library)?;
        let start: StartFn = symbol(lib, "PAPI_start", explicit_library)?;
        let read: ReadFn = symbol(lib, "PAPI_read", explicit_library)?;
        let strerror: StrerrorFn = symbol(lib, "PAPI_strerror", explicit_library)?;

        // SAFETY: PAPI_is_initialized takes no arguments and only reads PAPI's state.
        if unsafe { is_initialized() } == PAPI_NOT_INITED {
            // SAFETY: PAPI_LIB_VERSION takes no option structure (NULL is documented for it).
            let version = unsafe { get_opt(PAPI_LIB_VERSION, std::ptr::null_mut()) };
            if version <= 0 {
                return Err(failed(strerror, version, "PAPI_get_opt(PAPI_LIB_VERSION)"));
            }
            // The major.minor of the installed library, as PAPI_VER_CURRENT would be at build time.
            let wanted = version & !0xffff;
            // SAFETY: plain integer argument.
            let got = unsafe { library_init(wanted) };
            if got != wanted {
                return Err(failed(strerror, got, "PAPI_library_init"));
            }
        }
        let mut eventset = PAPI_NULL;
        // SAFETY: `eventset` is a valid int initialised to PAPI_NULL, as PAPI requires.
        check(strerror, unsafe { create_eventset(&mut eventset) }, "PAPI_create_eventset")?;
        let mut notes = Vec::new();
        let mut with_rsp_stalled = false;
        for (i, name) in events.iter().enumerate() {
            let Ok(cname) = CString::new(name.as_str()) else {
                return Err(PapiError::NulInEventName(name.clone()));
            };
            // SAFETY: valid event set and NUL-terminated name.
            let rc = unsafe { add_named_event(eventset, cname.as_ptr()) };
            let optional = i >= REQUIRED_EVENTS;
            match rc {
                PAPI_OK => with_rsp_stalled |= optional,
                _ if optional => notes.push(format!(
                    "the optional PAPI event {name} is not available ({}); stall ratios are computed without subtracting response stalls",
                    Code::describe(strerror, rc)
                )),
                _ => {
                    return Err(PapiError::EventUnavailable { name: name.clone(), code: Code::describe(strerror, rc) })
                }
            }
        }
        // SAFETY: valid event set with its events added.
        let counting = match unsafe { start(eventset) } {
            PAPI_EISRUN => false,
            rc => check(strerror, rc, "PAPI_start").map(|()| true)?,
        };
        Ok(Opened { papi: Papi { is_initialized, read, eventset, with_rsp_stalled }, notes, library, counting })
    }

    /// Read all events at one instant.
    pub fn read(&mut self) -> Result<CounterSample, ReadFailure> {
        // An application that uses PAPI itself may shut it down; reading an event set of a shut
        // down PAPI crashes inside libpapi, so ask first.
        // SAFETY: PAPI_is_initialized takes no arguments and only reads PAPI's state.
        if unsafe { (self.is_initialized)() } == PAPI_NOT_INITED {
            return Err(ReadFailure::ShutDown);
        }
        let mut v: [c_longlong; 5] = [0; 5];
        // SAFETY: the event set is started and holds at most 5 events; `v` has room for 5.
        let rc = unsafe { (self.read)(self.eventset, v.as_mut_ptr()) };
        if rc != PAPI_OK {
            return Err(ReadFailure::Failed(rc));
        }
        Ok(CounterSample {
            req_flits: v[0],
            req_stalled: v[1],
            rsp_latency: v[2],
            rsp_packets: v[3],
            rsp_stalled: self.with_rsp_stalled.then_some(v[4]),
        })
    }

    /// Stop the event set, so that another of its component can count; `false` if PAPI would
    /// not (it may belong to another thread).
    pub fn stop(&self) -> bool {
        let Some(stop) = LIBRARY.get().and_then(|lib| symbol::<StopFn>(lib, "PAPI_stop", None).ok()) else {
            return false;
        };
        let mut v: [c_longlong; 5] = [0; 5];
        // SAFETY: a started event set of at most 5 events; `v` has room for 5.
        unsafe { stop(self.eventset, v.as_mut_ptr()) == PAPI_OK }
    }

    /// Start it again after [`Papi::stop`]: it counts from zero.
    pub fn restart(&self) -> Result<(), PapiError> {
        let lib = LIBRARY.get().ok_or(PapiError::ShutDown)?;
        let (start, strerror) =
            (symbol::<StartFn>(lib, "PAPI_start", None)?, symbol::<StrerrorFn>(lib, "PAPI_strerror", None)?);
        // SAFETY: an event set with its events added, stopped.
        match unsafe { start(self.eventset) } {
            PAPI_EISRUN => Err(PapiError::InUse),
            rc => check(strerror, rc, "PAPI_start"),
        }
    }

    /// Whether `eventset` is this one.
    pub fn is(&self, eventset: c_int) -> bool {
        self.eventset == eventset
    }

    /// An event set of 5 events read by `read` (unit tests stand it in for libpapi's).
    #[cfg(test)]
    pub fn with_reader(read: ReadFn) -> Papi {
        unsafe extern "C" fn initialised() -> c_int {
            PAPI_NOT_INITED + 1
        }
        Papi { is_initialized: initialised, read, eventset: 0, with_rsp_stalled: true }
    }

    /// A failed read, in words.
    pub fn explain(&self, failure: ReadFailure) -> PapiError {
        match failure {
            ReadFailure::ShutDown => PapiError::ShutDown,
            ReadFailure::Failed(rc) => {
                match LIBRARY.get().and_then(|lib| symbol::<StrerrorFn>(lib, "PAPI_strerror", None).ok()) {
                    Some(strerror) => failed(strerror, rc, "PAPI_read"),
                    // The unit tests' reader, which no library backs.
                    None => PapiError::Failed { call: "PAPI_read", code: Code { rc, text: None } },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_before_in_the_warning() {
        let code = |rc, text: Option<&str>| Code { rc, text: text.map(str::to_string) };
        let e = PapiError::Failed { call: "PAPI_start", code: code(-7, Some("Event does not exist")) };
        assert_eq!(e.to_string(), "PAPI_start failed: Event does not exist (code -7)");
        let e = PapiError::EventUnavailable { name: "X".into(), code: code(-1, None) };
        assert_eq!(e.to_string(), "the PAPI event X is not available (code -1)");
        let e = PapiError::NotLoaded {
            tried: "libpapi.so, libpapi.so.7".into(),
            first_error: "not found".into(),
            given: None,
        };
        assert_eq!(e.to_string(), "PAPI could not be loaded (tried libpapi.so, libpapi.so.7: not found)");
    }
}
