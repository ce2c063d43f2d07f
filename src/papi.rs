//! The PAPI seam: libpapi is opened at run time (never linked), so libaar.so loads and runs on
//! nodes without PAPI. All NIC counters are read as one event set at one instant.

use aar_engine::CounterSample;
use libloading::Library;
use std::ffi::{c_char, c_int, c_longlong, c_void, CStr, CString};
use std::sync::OnceLock;

const PAPI_OK: c_int = 0;
const PAPI_NULL: c_int = -1;
const PAPI_NOT_INITED: c_int = 0;
/// `PAPI_get_opt` option returning the library's version; works before initialisation.
const PAPI_LIB_VERSION: c_int = 21;

/// Sonames tried when `AAR_PAPI_LIBRARY` is not set: the unversioned name a `module load papi`
/// puts on the search path first, then the versions we know the ABI of.
const SONAMES: [&str; 6] =
    ["libpapi.so", "libpapi.so.7.0", "libpapi.so.7", "libpapi.so.6.0", "libpapi.so.6", "libpapi.so.5"];

type IsInitializedFn = unsafe extern "C" fn() -> c_int;
type GetOptFn = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;
type LibraryInitFn = unsafe extern "C" fn(c_int) -> c_int;
type CreateEventsetFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type AddNamedEventFn = unsafe extern "C" fn(c_int, *const c_char) -> c_int;
type StartFn = unsafe extern "C" fn(c_int) -> c_int;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_longlong) -> c_int;
type StrerrorFn = unsafe extern "C" fn(c_int) -> *mut c_char;

/// An open, started event set of the 4 or 5 NIC events.
pub struct Papi {
    is_initialized: IsInitializedFn,
    read: ReadFn,
    strerror: StrerrorFn,
    eventset: c_int,
    /// Whether the optional fifth event (response stalls) is in the set.
    with_rsp_stalled: bool,
}

/// Why counters are unavailable, in words for the warning.
pub struct Unavailable(pub String);

/// A note about an optional event that could not be added.
pub struct Opened {
    pub papi: Papi,
    pub notes: Vec<String>,
    pub library: String,
}

/// The loaded library, kept until the process ends: its functions stay in use.
static LIBRARY: OnceLock<Library> = OnceLock::new();

fn load(explicit: Option<&str>) -> Result<(&'static Library, String), Unavailable> {
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
        // SAFETY: loading libpapi runs its ELF constructors, which only set up PAPI's own state.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok((LIBRARY.get_or_init(|| lib), name.to_string())),
            Err(e) => {
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    Err(Unavailable(format!(
        "PAPI could not be loaded (tried {}: {})",
        candidates.join(", "),
        first_error.unwrap_or_default()
    )))
}

fn symbol<T: Copy>(lib: &'static Library, name: &str) -> Result<T, Unavailable> {
    // SAFETY: each `T` at the call sites is the C prototype of the named function in papi.h.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| Unavailable(format!("the PAPI library lacks {name} ({e})")))
}

impl Papi {
    /// Load PAPI, initialise it unless the application already did, and start an event set of
    /// `events` (the first four required, the fifth optional).
    pub fn open(explicit_library: Option<&str>, events: &[String]) -> Result<Opened, Unavailable> {
        let (lib, library) = load(explicit_library)?;
        let is_initialized: IsInitializedFn = symbol(lib, "PAPI_is_initialized")?;
        let get_opt: GetOptFn = symbol(lib, "PAPI_get_opt")?;
        let library_init: LibraryInitFn = symbol(lib, "PAPI_library_init")?;
        let create_eventset: CreateEventsetFn = symbol(lib, "PAPI_create_eventset")?;
        let add_named_event: AddNamedEventFn = symbol(lib, "PAPI_add_named_event")?;
        let start: StartFn = symbol(lib, "PAPI_start")?;
        let read: ReadFn = symbol(lib, "PAPI_read")?;
        let strerror: StrerrorFn = symbol(lib, "PAPI_strerror")?;
        let describe = |rc: c_int| describe(strerror, rc);

        // SAFETY: PAPI_is_initialized takes no arguments and only reads PAPI's state.
        if unsafe { is_initialized() } == PAPI_NOT_INITED {
            // SAFETY: PAPI_LIB_VERSION takes no option structure (NULL is documented for it).
            let version = unsafe { get_opt(PAPI_LIB_VERSION, std::ptr::null_mut()) };
            if version <= 0 {
                return Err(Unavailable(format!("PAPI_get_opt(PAPI_LIB_VERSION) failed: {}", describe(version))));
            }
            // The major.minor of the installed library, as PAPI_VER_CURRENT would be at build time.
            let wanted = version & !0xffff;
            // SAFETY: plain integer argument.
            let got = unsafe { library_init(wanted) };
            if got != wanted {
                return Err(Unavailable(format!("PAPI_library_init failed: {}", describe(got))));
            }
        }
        let mut eventset = PAPI_NULL;
        // SAFETY: `eventset` is a valid int initialised to PAPI_NULL, as PAPI requires.
        let rc = unsafe { create_eventset(&mut eventset) };
        if rc != PAPI_OK {
            return Err(Unavailable(format!("PAPI_create_eventset failed: {}", describe(rc))));
        }
        let mut notes = Vec::new();
        let mut with_rsp_stalled = false;
        for (i, name) in events.iter().enumerate() {
            let Ok(cname) = CString::new(name.as_str()) else {
                return Err(Unavailable(format!("event name {name:?} contains a NUL byte")));
            };
            // SAFETY: valid event set and NUL-terminated name.
            let rc = unsafe { add_named_event(eventset, cname.as_ptr()) };
            match (rc, i) {
                (PAPI_OK, 4) => with_rsp_stalled = true,
                (PAPI_OK, _) => {}
                (_, 4) => notes.push(format!(
                    "the optional PAPI event {name} is not available ({}); stall ratios are computed without subtracting response stalls",
                    describe(rc)
                )),
                _ => return Err(Unavailable(format!("the PAPI event {name} is not available ({})", describe(rc)))),
            }
        }
        // SAFETY: valid event set with its events added.
        let rc = unsafe { start(eventset) };
        if rc != PAPI_OK {
            return Err(Unavailable(format!("PAPI_start failed: {}", describe(rc))));
        }
        Ok(Opened { papi: Papi { is_initialized, read, strerror, eventset, with_rsp_stalled }, notes, library })
    }

    /// Read all events at one instant.
    pub fn read(&mut self) -> Result<CounterSample, String> {
        // An application that uses PAPI itself may shut it down; reading an event set of a shut
        // down PAPI crashes inside libpapi, so ask first.
        // SAFETY: PAPI_is_initialized takes no arguments and only reads PAPI's state.
        if unsafe { (self.is_initialized)() } == PAPI_NOT_INITED {
            return Err("PAPI was shut down by the application (PAPI_shutdown)".into());
        }
        let mut v: [c_longlong; 5] = [0; 5];
        // SAFETY: the event set is started and holds at most 5 events; `v` has room for 5.
        let rc = unsafe { (self.read)(self.eventset, v.as_mut_ptr()) };
        if rc != PAPI_OK {
            return Err(format!("PAPI_read failed: {}", describe(self.strerror, rc)));
        }
        Ok(CounterSample {
            req_flits: v[0],
            req_stalled: v[1],
            rsp_latency: v[2],
            rsp_packets: v[3],
            rsp_stalled: self.with_rsp_stalled.then_some(v[4]),
        })
    }
}

fn describe(strerror: StrerrorFn, rc: c_int) -> String {
    // SAFETY: PAPI_strerror returns NULL or a pointer to a static NUL-terminated string.
    let text = unsafe {
        let p = strerror(rc);
        if p.is_null() {
            None
        } else {
            Some(CStr::from_ptr(p).to_string_lossy().into_owned())
        }
    };
    match text {
        Some(t) => format!("{t} (code {rc})"),
        None => format!("code {rc}"),
    }
}
