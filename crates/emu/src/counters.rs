//! The five Aries NIC counters: static `long long`s updated with atomics, published as PAPI
//! Software-Defined Events (`sde:::aries::<name>`) from an ELF constructor, and driven by the
//! timing model: the profile model, or the network simulator when `AAR_EMU_SIM` is set (see
//! [`crate::timing`]). One set per process; in an `aar run` job, one set per node, shared by the
//! ranks of that node as the NIC's registers are: the file `nic-<address>` in the job's folder
//! ([`node_counters`]).

use std::ffi::{c_char, c_int, c_void};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use aar_abi::counters::EVENTS;
use aar_engine::model::NIC_CYCLE_US;
use aar_engine::LatencyUnit;

use crate::settings::{self, SettingError};
use crate::timing::profile::{DefaultModel, NetworkProfile};
use crate::timing::simulated::{SimModel, SimSetting};
use crate::timing::{NicModel, NicTransfer};

/// The counters, indexed in the order of [`EVENTS`] everywhere (the order of
/// `AAR_PAPI_EVENTS` and of the `aar_emu_counters_*` arguments). `AtomicI64` has the size and
/// alignment of `long long`, so libsde reads these in place.
pub static COUNTERS: [AtomicI64; 5] =
    [AtomicI64::new(0), AtomicI64::new(0), AtomicI64::new(0), AtomicI64::new(0), AtomicI64::new(0)];

/// In a job, the counters of this rank's node, shared with the other ranks of its NIC address.
static NODE_COUNTERS: OnceLock<&'static [AtomicI64; 5]> = OnceLock::new();

/// The counters this process counts on and publishes.
fn counters() -> &'static [AtomicI64; 5] {
    NODE_COUNTERS.get().copied().unwrap_or(&COUNTERS)
}

/// Map the node's counters when this process is a rank of an `aar run` job (a complete, valid
/// job environment; `job` says what is wrong with a bad one, later); called from the ELF
/// constructor, so only the environment and file calls.
fn node_counters() -> Option<&'static [AtomicI64; 5]> {
    let env = settings::job_env_quietly()?.ok()?;
    let path = env.dir.join(format!("nic-{}", env.nic_addr));
    let mapped = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        // SAFETY: five atomics; any bytes (zero for a new file) are valid counter values.
        .and_then(|file| unsafe { crate::job::map_as::<[AtomicI64; 5]>(&file) });
    // Only this rank knows: said by it. Its counters still count, its own traffic only.
    mapped
        .map_err(|e| {
            crate::warn(&format!(
                "the node's NIC counters {} cannot be shared ({e}): this rank's counters count its own \
                 traffic only, not its node's other ranks'. Free space in {} (a full /dev/shm?) or remove \
                 what is in the way, and run the job again.",
                path.display(),
                env.dir.display()
            ))
        })
        .ok()
}

/// When set, transfers leave the counters alone (tests inject values without interference).
pub static FROZEN: AtomicBool = AtomicBool::new(false);

const PAPI_SDE_RO: c_int = 0x00;
const PAPI_SDE_DELTA: c_int = 0x00;
const PAPI_SDE_LONG_LONG: c_int = 0x0;

#[link(name = "sde")]
extern "C" {
    fn papi_sde_init(name_of_library: *const c_char) -> *mut c_void;
    fn papi_sde_register_counter(
        handle: *mut c_void,
        event_name: *const c_char,
        cntr_mode: c_int,
        cntr_type: c_int,
        counter: *mut c_void,
    ) -> c_int;
}

/// Registers the counters with libsde before `main`, so a PAPI event set created at any later
/// time finds them. Only libc-level work happens here (libsde allocates its tables).
extern "C" fn register_sde_counters() {
    // SAFETY: the library name and event names are NUL-terminated statics; the counters are
    // statics of `long long` layout that live for the whole process, as libsde requires.
    unsafe {
        let handle = papi_sde_init(c"aries".as_ptr());
        if handle.is_null() {
            return;
        }
        let set = *NODE_COUNTERS.get_or_init(|| node_counters().unwrap_or(&COUNTERS));
        for (name, counter) in EVENTS.iter().zip(set.iter()) {
            papi_sde_register_counter(
                handle,
                name.as_ptr(),
                PAPI_SDE_RO | PAPI_SDE_DELTA,
                PAPI_SDE_LONG_LONG,
                counter.as_ptr().cast(),
            );
        }
    }
}

#[used]
#[link_section = ".init_array"]
static REGISTER_SDE_COUNTERS: extern "C" fn() = register_sde_counters;

/// The model plus the fractional parts that integer counters have not absorbed yet.
struct Timing {
    model: Box<dyn NicModel>,
    fractions: [f64; 5],
    /// The network profile in force: `AAR_EMU_NETWORK`'s, then `aar_emu_set_network`'s.
    profile: NetworkProfile,
    /// Published latency counts per microsecond and per NIC cycle (`AAR_EMU_LATENCY_UNIT`).
    latency_scale: (f64, f64),
}

static TIMING: OnceLock<Mutex<Timing>> = OnceLock::new();

/// Make the NIC model at the first NIC's attach, not at the first transfer: a post then allocates
/// nothing (a program at its memory limit still posts).
pub fn make_model() {
    timing();
}

fn timing() -> &'static Mutex<Timing> {
    TIMING.get_or_init(|| {
        let profile = settings::network_profile();
        let latency_scale = match settings::latency_unit() {
            LatencyUnit::Microseconds => (1.0, NIC_CYCLE_US),
            LatencyUnit::Cycles => (1.0 / NIC_CYCLE_US, 1.0),
        };
        let model: Box<dyn NicModel> = match settings::sim() {
            SimSetting::On(spec) => match SimModel::start(&spec, profile, rank_nic()) {
                Some(m) => Box::new(m),
                None => {
                    SettingError::SimStart.report();
                    Box::new(DefaultModel { profile })
                }
            },
            SimSetting::Off => Box::new(DefaultModel { profile }),
        };
        Mutex::new(Timing { model, fractions: [0.0; 5], profile, latency_scale })
    })
}

/// In an `aar run` job, this rank's NIC address: its node's counters are the ones it publishes.
fn rank_nic() -> Option<u32> {
    settings::job_env_quietly().and_then(Result::ok).map(|job| job.nic_addr)
}

fn lock_timing() -> MutexGuard<'static, Timing> {
    // A panic while holding the lock cannot leave the counters inconsistent beyond one transfer.
    timing().lock().unwrap_or_else(|e| e.into_inner())
}

/// Applies one transfer to the counters through the model, keeping fractional remainders so that
/// small latencies and stalls are not lost to integer rounding.
pub fn account(t: &NicTransfer) {
    if FROZEN.load(Ordering::Relaxed) {
        // The default model keeps no state, so a frozen transfer need not reach it; the
        // simulator's network and clock must still carry it.
        let mut g = lock_timing();
        if g.model.stateful() {
            g.model.on_transfer(t);
        }
        return;
    }
    let mut g = lock_timing();
    let e = g.model.on_transfer(t);
    let amounts = [
        e.req_flits,
        e.req_stalled_cycles,
        e.rsp_latency_us * g.latency_scale.0 + e.rsp_latency_cycles * g.latency_scale.1,
        e.rsp_packets,
        e.rsp_stalled_cycles,
    ];
    for (i, amount) in amounts.into_iter().enumerate() {
        let total = g.fractions[i] + amount;
        if !total.is_finite() {
            continue;
        }
        let whole = total.floor();
        g.fractions[i] = total - whole;
        if whole != 0.0 {
            counters()[i].fetch_add(whole as i64, Ordering::Relaxed);
        }
    }
}

/// The model's clock in nanoseconds (`aar_emu_clock_ns`): simulated time with `AAR_EMU_SIM`,
/// 0 with the default model.
pub fn clock_ns() -> u64 {
    lock_timing().model.clock_ns()
}

/// Replaces the two ends of the network profile (`aar_emu_set_network`), keeping its response
/// stalls per request stall (`AAR_EMU_NETWORK`'s `rsp_stall`); false (and nothing changed) when
/// a value is negative or not finite.
pub fn set_network(latency_ad: f64, latency_bs: f64, stall_ad: f64, stall_bs: f64) -> bool {
    let mut g = lock_timing();
    let profile = NetworkProfile { latency_ad, latency_bs, stall_ad, stall_bs, ..g.profile };
    if !profile.is_valid() {
        return false;
    }
    g.profile = profile;
    g.model.set_profile(profile);
    true
}

/// Adds to the counters (values may be negative: tests inject decreasing counters).
pub fn add(values: [i64; 5]) {
    for (c, v) in counters().iter().zip(values) {
        c.fetch_add(v, Ordering::Relaxed);
    }
}

/// Sets absolute counter values and forgets the fractional remainders.
pub fn set(values: [i64; 5]) {
    let mut g = lock_timing();
    g.fractions = [0.0; 5];
    for (c, v) in counters().iter().zip(values) {
        c.store(v, Ordering::Relaxed);
    }
}

pub fn get() -> [i64; 5] {
    std::array::from_fn(|i| counters()[i].load(Ordering::Relaxed))
}

/// Posts received so far, of every kind, whatever their outcome (`aar_emu_post_count`).
static POSTS: AtomicU64 = AtomicU64::new(0);

pub fn count_post() {
    POSTS.fetch_add(1, Ordering::Relaxed);
}

pub fn post_count() -> u64 {
    POSTS.load(Ordering::Relaxed)
}
