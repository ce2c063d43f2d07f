//! The MPI seam: the collectives that can mark A/B iterations in an unmodified program
//! (`AAR_AB_BOUNDARY=MPI_<Fn>[:N]`), that `steady` routes and times as whole calls, and
//! MPI_Alltoall, inside which the low-stall mode is ADAPTIVE1 (what Cray MPICH uses there by
//! default). The functions calls go on to are resolved at run time: libaar.so has no link
//! dependency on any MPI.
//!
//! Each collective with a buffer is wrapped in its MPI 4 large-count form too (`MPI_Allreduce_c`),
//! as the same function: programs built against an MPI 4 library call those where counts need 64
//! bits, and some bindings always do.
//!
//! MPI handles are `int` in MPICH (Cray MPICH) and pointers in Open MPI. Every handle parameter
//! is declared pointer-sized here and forwarded unchanged in the same register or stack slot,
//! so one wrapper is correct for both ABIs without knowing which one the application uses.
//!
//! A wrapper forwards each call exactly once, to the next definition of its MPI function after
//! libaar.so (a profiling tool preloaded after it, or the MPI library), else to its PMPI function:
//! calling PMPI directly would hide the call from a tool after libaar.so. When its function is the
//! iteration boundary, the boundary is taken when the call returns, so that all ranks leave a
//! collective together before they switch policy; otherwise the wrapper is a plain forward. A
//! tool preloaded *before* libaar.so calls PMPI itself and libaar.so never sees the call: the
//! boundary's function is checked for such a tool at start-up.
//!
//! An MPI library may unwind out of a collective: a C++ exception from an error handler that
//! throws, or the thread cancelled (pthread_cancel) at a cancellation point inside it. The
//! wrappers and the types of the functions they call are `extern "C-unwind"`, so that the unwind
//! goes on to the application and the wrapper's guards run on the way: the thread is no longer
//! inside the collective. (Through `"C"` frames the guards were skipped, which is undefined behaviour, and a
//! thread that caught an exception out of MPI_Alltoall routed as if inside it from then on.)

use crate::settings::{self, Boundary, MpiFunction};
use crate::state::Follow;
use crate::{diag, init, iterations, state};
use aar_engine::{Policy, RoutingMode};
use std::cell::Cell;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub type BarrierFn = unsafe extern "C-unwind" fn(usize) -> c_int;
/// MPI_Allreduce, MPI_Scan, MPI_Exscan and MPI_Reduce_scatter_block.
pub type AllreduceFn = unsafe extern "C-unwind" fn(*const c_void, *mut c_void, c_int, usize, usize, usize) -> c_int;
/// MPI_Reduce_scatter.
pub type ReduceScatterFn =
    unsafe extern "C-unwind" fn(*const c_void, *mut c_void, *const c_int, usize, usize, usize) -> c_int;
pub type ReduceFn = unsafe extern "C-unwind" fn(*const c_void, *mut c_void, c_int, usize, usize, c_int, usize) -> c_int;
pub type BcastFn = unsafe extern "C-unwind" fn(*mut c_void, c_int, usize, c_int, usize) -> c_int;
/// MPI_Allgather and MPI_Alltoall, and their neighbourhood forms.
pub type AllToAllFn =
    unsafe extern "C-unwind" fn(*const c_void, c_int, usize, *mut c_void, c_int, usize, usize) -> c_int;
/// MPI_Allgatherv and MPI_Neighbor_allgatherv.
pub type AllgathervFn = unsafe extern "C-unwind" fn(
    *const c_void,
    c_int,
    usize,
    *mut c_void,
    *const c_int,
    *const c_int,
    usize,
    usize,
) -> c_int;
/// MPI_Alltoallv and MPI_Neighbor_alltoallv.
pub type AlltoallvFn = unsafe extern "C-unwind" fn(
    *const c_void,
    *const c_int,
    *const c_int,
    usize,
    *mut c_void,
    *const c_int,
    *const c_int,
    usize,
    usize,
) -> c_int;
/// MPI_Gather and MPI_Scatter.
pub type RootedFn =
    unsafe extern "C-unwind" fn(*const c_void, c_int, usize, *mut c_void, c_int, usize, c_int, usize) -> c_int;
/// MPI_Gatherv.
pub type GathervFn = unsafe extern "C-unwind" fn(
    *const c_void,
    c_int,
    usize,
    *mut c_void,
    *const c_int,
    *const c_int,
    usize,
    c_int,
    usize,
) -> c_int;
/// MPI_Scatterv.
pub type ScattervFn = unsafe extern "C-unwind" fn(
    *const c_void,
    *const c_int,
    *const c_int,
    usize,
    *mut c_void,
    c_int,
    usize,
    c_int,
    usize,
) -> c_int;
/// MPI_Alltoallw (its datatypes are arrays of handles, one per rank).
pub type AlltoallwFn = unsafe extern "C-unwind" fn(
    *const c_void,
    *const c_int,
    *const c_int,
    *const usize,
    *mut c_void,
    *const c_int,
    *const c_int,
    *const usize,
    usize,
) -> c_int;

/// MPI_Neighbor_alltoallw: as MPI_Alltoallw, with displacements of `MPI_Aint`.
pub type NeighborAlltoallwFn = unsafe extern "C-unwind" fn(
    *const c_void,
    *const c_int,
    *const isize,
    *const usize,
    *mut c_void,
    *const c_int,
    *const isize,
    *const usize,
    usize,
) -> c_int;

// MPI 4's large-count forms (`MPI_Allreduce_c`, ...): counts of `MPI_Count` (a 64-bit integer)
// and displacements of `MPI_Aint`, the rest as above. `MPI_Count` is `i64` here: MPICH's and Open
// MPI's on 64-bit Linux.

/// MPI_Allreduce_c, MPI_Scan_c, MPI_Exscan_c and MPI_Reduce_scatter_block_c.
pub type AllreduceCFn = unsafe extern "C-unwind" fn(*const c_void, *mut c_void, i64, usize, usize, usize) -> c_int;
/// MPI_Reduce_scatter_c.
pub type ReduceScatterCFn =
    unsafe extern "C-unwind" fn(*const c_void, *mut c_void, *const i64, usize, usize, usize) -> c_int;
pub type ReduceCFn = unsafe extern "C-unwind" fn(*const c_void, *mut c_void, i64, usize, usize, c_int, usize) -> c_int;
pub type BcastCFn = unsafe extern "C-unwind" fn(*mut c_void, i64, usize, c_int, usize) -> c_int;
/// MPI_Allgather_c and MPI_Alltoall_c, and their neighbourhood forms.
pub type AllToAllCFn = unsafe extern "C-unwind" fn(*const c_void, i64, usize, *mut c_void, i64, usize, usize) -> c_int;
/// MPI_Allgatherv_c and MPI_Neighbor_allgatherv_c.
pub type AllgathervCFn = unsafe extern "C-unwind" fn(
    *const c_void,
    i64,
    usize,
    *mut c_void,
    *const i64,
    *const isize,
    usize,
    usize,
) -> c_int;
/// MPI_Alltoallv_c and MPI_Neighbor_alltoallv_c.
pub type AlltoallvCFn = unsafe extern "C-unwind" fn(
    *const c_void,
    *const i64,
    *const isize,
    usize,
    *mut c_void,
    *const i64,
    *const isize,
    usize,
    usize,
) -> c_int;
/// MPI_Gather_c and MPI_Scatter_c.
pub type RootedCFn =
    unsafe extern "C-unwind" fn(*const c_void, i64, usize, *mut c_void, i64, usize, c_int, usize) -> c_int;
pub type GathervCFn = unsafe extern "C-unwind" fn(
    *const c_void,
    i64,
    usize,
    *mut c_void,
    *const i64,
    *const isize,
    usize,
    c_int,
    usize,
) -> c_int;
pub type ScattervCFn = unsafe extern "C-unwind" fn(
    *const c_void,
    *const i64,
    *const isize,
    usize,
    *mut c_void,
    i64,
    usize,
    c_int,
    usize,
) -> c_int;
/// MPI_Alltoallw_c and MPI_Neighbor_alltoallw_c.
pub type AlltoallwCFn = unsafe extern "C-unwind" fn(
    *const c_void,
    *const i64,
    *const isize,
    *const usize,
    *mut c_void,
    *const i64,
    *const isize,
    *const usize,
    usize,
) -> c_int;

/// MPI_ERR_INTERN in MPICH, a non-zero error code in every MPI.
const MPI_ERR_INTERN: c_int = 16;

/// A wrapped MPI function, or its large-count form, and the function its calls go on to, found
/// on first use. Both forms are the same [`MpiFunction`]: a boundary named `MPI_Allreduce` is taken
/// at either, and `steady` keys them as one kind of call.
pub struct Collective {
    function: MpiFunction,
    /// MPI 4's large-count form (`MPI_Allreduce_c`).
    large_count: bool,
    addr: AtomicPtr<c_void>,
    reported_missing: AtomicBool,
}

/// Longest MPI or PMPI name with its NUL (`PMPI_Reduce_scatter_block_c`).
const NAME_MAX: usize = 32;

impl Collective {
    const fn new(function: MpiFunction) -> Self {
        Self::of(function, false)
    }

    const fn large_count(function: MpiFunction) -> Self {
        Self::of(function, true)
    }

    const fn of(function: MpiFunction, large_count: bool) -> Self {
        Self {
            function,
            large_count,
            addr: AtomicPtr::new(std::ptr::null_mut()),
            reported_missing: AtomicBool::new(false),
        }
    }

    /// The MPI standard's name of this form (`MPI_Allreduce_c`).
    pub fn name(&self) -> String {
        self.c_name(&mut [0; NAME_MAX], false).to_string_lossy().into_owned()
    }

    /// The function's own name, after a `P` when `profiling`, NUL-terminated, in `buf` (the first
    /// call of each function looks it up, inside the application's call).
    fn c_name<'b>(&self, buf: &'b mut [u8; NAME_MAX], profiling: bool) -> &'b CStr {
        let suffix: &[u8] = if self.large_count { b"_c" } else { b"" };
        let mut at = 0;
        for part in [&b"P"[..usize::from(profiling)], self.function.name().as_bytes(), suffix] {
            let n = part.len().min(NAME_MAX - 1 - at);
            buf[at..at + n].copy_from_slice(&part[..n]);
            at += n;
        }
        buf[at] = 0;
        CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"")
    }

    /// Where a call goes on to, as `F`, its prototype (see the exports): the next definition of
    /// the MPI function after libaar.so ([`crate::sys::next_definition`]), which is a profiling
    /// tool's wrapper when one (mpiP, IPM, Score-P) is preloaded after libaar.so, so that the tool
    /// still sees the call, or else the MPI library's own; without one, the PMPI function. Never
    /// the MPI name by `RTLD_DEFAULT`, which would find libaar.so's own wrapper, or a tool's
    /// before it, and call round.
    fn real<F: Copy>(&self) -> Option<F> {
        let mut p = self.addr.load(Ordering::Acquire);
        if p.is_null() {
            let mut buf = [0; NAME_MAX];
            let mpi = self.c_name(&mut buf, false);
            p = crate::sys::next_definition(mpi);
            if p.is_null() {
                // Anywhere: an MPI linked into the program itself is before libaar.so.
                p = crate::sys::first_definition(self.c_name(&mut buf, true));
            }
            self.addr.store(p, Ordering::Release);
        }
        debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        // SAFETY: a non-null MPI or PMPI function has the MPI-standard prototype that callers
        // name as `F`, register for register (see the module comment).
        (!p.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
    }
}

pub static BARRIER: Collective = Collective::new(MpiFunction::Barrier);
pub static ALLREDUCE: Collective = Collective::new(MpiFunction::Allreduce);
pub static REDUCE: Collective = Collective::new(MpiFunction::Reduce);
pub static BCAST: Collective = Collective::new(MpiFunction::Bcast);
pub static ALLGATHER: Collective = Collective::new(MpiFunction::Allgather);
pub static ALLGATHERV: Collective = Collective::new(MpiFunction::Allgatherv);
pub static ALLTOALL: Collective = Collective::new(MpiFunction::Alltoall);
pub static ALLTOALLV: Collective = Collective::new(MpiFunction::Alltoallv);
pub static GATHER: Collective = Collective::new(MpiFunction::Gather);
pub static SCATTER: Collective = Collective::new(MpiFunction::Scatter);
pub static GATHERV: Collective = Collective::new(MpiFunction::Gatherv);
pub static SCATTERV: Collective = Collective::new(MpiFunction::Scatterv);
pub static ALLTOALLW: Collective = Collective::new(MpiFunction::Alltoallw);
pub static REDUCE_SCATTER: Collective = Collective::new(MpiFunction::ReduceScatter);
pub static REDUCE_SCATTER_BLOCK: Collective = Collective::new(MpiFunction::ReduceScatterBlock);
pub static SCAN: Collective = Collective::new(MpiFunction::Scan);
pub static EXSCAN: Collective = Collective::new(MpiFunction::Exscan);
pub static NEIGHBOR_ALLGATHER: Collective = Collective::new(MpiFunction::NeighborAllgather);
pub static NEIGHBOR_ALLGATHERV: Collective = Collective::new(MpiFunction::NeighborAllgatherv);
pub static NEIGHBOR_ALLTOALL: Collective = Collective::new(MpiFunction::NeighborAlltoall);
pub static NEIGHBOR_ALLTOALLV: Collective = Collective::new(MpiFunction::NeighborAlltoallv);
pub static NEIGHBOR_ALLTOALLW: Collective = Collective::new(MpiFunction::NeighborAlltoallw);
pub static ALLREDUCE_C: Collective = Collective::large_count(MpiFunction::Allreduce);
pub static REDUCE_C: Collective = Collective::large_count(MpiFunction::Reduce);
pub static BCAST_C: Collective = Collective::large_count(MpiFunction::Bcast);
pub static ALLGATHER_C: Collective = Collective::large_count(MpiFunction::Allgather);
pub static ALLGATHERV_C: Collective = Collective::large_count(MpiFunction::Allgatherv);
pub static ALLTOALL_C: Collective = Collective::large_count(MpiFunction::Alltoall);
pub static ALLTOALLV_C: Collective = Collective::large_count(MpiFunction::Alltoallv);
pub static GATHER_C: Collective = Collective::large_count(MpiFunction::Gather);
pub static SCATTER_C: Collective = Collective::large_count(MpiFunction::Scatter);
pub static GATHERV_C: Collective = Collective::large_count(MpiFunction::Gatherv);
pub static SCATTERV_C: Collective = Collective::large_count(MpiFunction::Scatterv);
pub static ALLTOALLW_C: Collective = Collective::large_count(MpiFunction::Alltoallw);
pub static REDUCE_SCATTER_C: Collective = Collective::large_count(MpiFunction::ReduceScatter);
pub static REDUCE_SCATTER_BLOCK_C: Collective = Collective::large_count(MpiFunction::ReduceScatterBlock);
pub static SCAN_C: Collective = Collective::large_count(MpiFunction::Scan);
pub static EXSCAN_C: Collective = Collective::large_count(MpiFunction::Exscan);
pub static NEIGHBOR_ALLGATHER_C: Collective = Collective::large_count(MpiFunction::NeighborAllgather);
pub static NEIGHBOR_ALLGATHERV_C: Collective = Collective::large_count(MpiFunction::NeighborAllgatherv);
pub static NEIGHBOR_ALLTOALL_C: Collective = Collective::large_count(MpiFunction::NeighborAlltoall);
pub static NEIGHBOR_ALLTOALLV_C: Collective = Collective::large_count(MpiFunction::NeighborAlltoallv);
pub static NEIGHBOR_ALLTOALLW_C: Collective = Collective::large_count(MpiFunction::NeighborAlltoallw);

/// The large-count forms libaar.so wraps (the self-check lists them for `aar doctor`).
pub static LARGE_COUNT: [&Collective; 21] = [
    &ALLREDUCE_C,
    &REDUCE_C,
    &BCAST_C,
    &ALLGATHER_C,
    &ALLGATHERV_C,
    &ALLTOALL_C,
    &ALLTOALLV_C,
    &GATHER_C,
    &SCATTER_C,
    &GATHERV_C,
    &SCATTERV_C,
    &ALLTOALLW_C,
    &REDUCE_SCATTER_C,
    &REDUCE_SCATTER_BLOCK_C,
    &SCAN_C,
    &EXSCAN_C,
    &NEIGHBOR_ALLGATHER_C,
    &NEIGHBOR_ALLGATHERV_C,
    &NEIGHBOR_ALLTOALL_C,
    &NEIGHBOR_ALLTOALLV_C,
    &NEIGHBOR_ALLTOALLW_C,
];

thread_local! {
    /// Collectives and MPI_Alltoalls this thread is inside.
    static DEPTH: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
}

/// Set by the first collective routed under `steady` or the first MPI_Alltoall: until then no
/// thread can be inside one, and the decision path skips the thread-local lookup.
/// ([`crate::control::Hot::collective_seen`].)
static COLLECTIVE_SEEN: &AtomicBool = &crate::control::HOT.collective_seen;

/// Threads inside a collective right now: outside collectives, a post below the threshold under
/// `steady` reads this and not its thread's state (a thread-local costs a call in a shared
/// library).
static INSIDE: AtomicU32 = AtomicU32::new(0);

/// Whether this thread is inside MPI_Alltoall.
#[inline]
pub fn in_alltoall() -> bool {
    COLLECTIVE_SEEN.load(Ordering::Relaxed) && DEPTH.try_with(|d| d.get().1 > 0).unwrap_or(false)
}

/// The mode and reason index a post below the threshold takes instead of the control word's,
/// if any: under `steady`, on a thread inside a collective, the call's routing
/// ([`aar_engine::Engine::below_threshold_in_call`]). Other policies pay one comparison of the
/// word; `steady` in a program that never called a collective one load from the line the fast
/// path reads anyway, and while no thread is inside one a load of [`INSIDE`].
#[inline]
pub fn call_follow(w: u32) -> Option<(RoutingMode, usize)> {
    if !crate::control::is_steady(w) || !COLLECTIVE_SEEN.load(Ordering::Relaxed) || INSIDE.load(Ordering::Relaxed) == 0
    {
        return None;
    }
    state::thread_call().1.get()
}

/// This thread is inside a collective (and an MPI_Alltoall, when `alltoall`) until the drop, which
/// also runs when an exception or a cancellation unwinds out of the MPI library (the wrappers and
/// the types of the functions they call are `"C-unwind"` for that).
struct Depth(bool);
impl Depth {
    fn enter(alltoall: bool) -> Depth {
        COLLECTIVE_SEEN.store(true, Ordering::Relaxed);
        INSIDE.fetch_add(1, Ordering::Relaxed);
        let _ = DEPTH.try_with(|d| {
            let (calls, alltoalls) = d.get();
            d.set((calls.saturating_add(1), alltoalls.saturating_add(u32::from(alltoall))));
        });
        Depth(alltoall)
    }
}
impl Drop for Depth {
    fn drop(&mut self) {
        INSIDE.fetch_sub(1, Ordering::Relaxed);
        let _ = DEPTH.try_with(|d| {
            let (calls, alltoalls) = d.get();
            d.set((calls.saturating_sub(1), alltoalls.saturating_sub(u32::from(self.0))));
        });
    }
}

/// The collective this thread was inside when another began (an MPI library may make collectives
/// inside one), given back when the inner one ends: when it returns, and when an exception or a
/// cancellation unwinds out of the MPI library through the wrapper (whose call is then not timed).
struct OuterCall(state::ThreadCall);
impl Drop for OuterCall {
    fn drop(&mut self) {
        state::swap_thread_call(self.0);
    }
}

/// Whether `steady` routes a collective as one call under word `w`: when it is the policy, or an
/// A/B experiment with a `steady` arm may time the call for it under a fixed mode. An experiment
/// without one never routes by calls (the schedule owns the policy), so its collectives skip the
/// decider's lock and the two clock reads.
fn routes_calls(w: u32) -> bool {
    use crate::control::{ENABLED, READY};
    w & (READY | ENABLED) == (READY | ENABLED)
        && (crate::control::is_steady(w) || state::schedule().is_some_and(|s| s.policies().contains(&Policy::Steady)))
}

/// Whether `buf` is MPI_IN_PLACE: `(void *) -1` in MPICH (Cray MPICH), `(void *) 1` in Open MPI,
/// neither of which is a buffer's address.
pub fn in_place(buf: *const c_void) -> bool {
    matches!(buf as usize, 1 | usize::MAX)
}

/// The count and datatype that tell a rooted collective's kinds of call apart alike on every rank
/// (`steady` tries its routings on a schedule of each kind's calls, so every rank must count
/// them alike): `own`, the side every rank gives (MPI_Gather's send side, MPI_Scatter's receive
/// side), whose buffer is `own_buf`; at a root that passes MPI_IN_PLACE there, which makes that
/// side ignored (any values, the same or not from call to call), its `other` side, which gives
/// one rank's share in the same terms.
pub fn share(own_buf: *const c_void, own: (u64, u64), other: (u64, u64)) -> (u64, u64) {
    if in_place(own_buf) {
        other
    } else {
        own
    }
}

/// The boundary function as an index into [`MpiFunction::ALL`], or one of these.
const UNKNOWN: u8 = 0xff;
const NOT_MPI: u8 = 0xfe;
/// `AAR_AB_BOUNDARY` is set but names no function (before the settings exist): the library is
/// initialised at the first wrapped call, so that the setting's warning is said.
const NOT_A_BOUNDARY: u8 = 0xfd;
/// From the settings, once they exist.
static BOUNDARY: AtomicU8 = AtomicU8::new(UNKNOWN);
static EVERY: AtomicU32 = AtomicU32::new(1);
/// From the environment, before the settings exist.
static PEEKED: AtomicU8 = AtomicU8::new(UNKNOWN);
/// Calls of the boundary function so far.
static CALLS: AtomicU64 = AtomicU64::new(0);
/// Boundaries taken so far: the index of the next iteration, taken under the iteration record's
/// lock ([`iterations::begin_numbered`]).
static BOUNDARIES: AtomicU64 = AtomicU64::new(0);

fn code(f: MpiFunction) -> u8 {
    MpiFunction::ALL.iter().position(|&g| g == f).map_or(NOT_MPI, |i| i as u8)
}

/// Whether `f` marks iterations.
#[inline]
fn is_boundary(f: MpiFunction) -> bool {
    let c = BOUNDARY.load(Ordering::Acquire);
    let c = if c == UNKNOWN { boundary_code() } else { c };
    c == code(f)
}

/// The boundary function: from the settings once they exist (none under `AAR_DISABLE`). Before
/// the library is initialised, `AAR_AB_BOUNDARY` is read once, without the settings, so that an
/// MPI program is initialised at its first boundary call if no uGNI call came first, and left
/// alone otherwise.
#[cold]
fn boundary_code() -> u8 {
    if let Some(s) = state::settings() {
        let (c, every) = match s.ab_boundary {
            Boundary::Mpi { function, every } if !s.disabled => (code(function), every.max(1)),
            _ => (NOT_MPI, 1),
        };
        EVERY.store(every, Ordering::Relaxed);
        BOUNDARY.store(c, Ordering::Release);
        return c;
    }
    let peeked = PEEKED.load(Ordering::Relaxed);
    if peeked != UNKNOWN {
        return peeked;
    }
    // Read as the settings will read it (empty or blank is unset): no boundary, the program is left alone.
    let c = match settings::peek("AAR_AB_BOUNDARY").map(|v| v.parse::<Boundary>()) {
        Some(Ok(Boundary::Mpi { function, .. })) => code(function),
        Some(Err(_)) => NOT_A_BOUNDARY,
        _ => NOT_MPI,
    };
    PEEKED.store(c, Ordering::Relaxed);
    c
}

/// Whether this call of a wrapped function `f` initialises the library though it is not the
/// boundary: before the settings exist, when `AAR_AB_BOUNDARY` names an MPI function (a
/// profiling tool preloaded before libaar.so may take every call of it, which start-up names) or
/// is not a boundary at all (its warning). Without such a setting an MPI program is left alone.
#[inline]
fn initialises(f: MpiFunction) -> bool {
    BOUNDARY.load(Ordering::Acquire) == UNKNOWN && {
        let c = boundary_code();
        c != NOT_MPI && c != code(f)
    }
}

/// Every N-th call of the boundary function, starting with the first, begins an iteration
/// (and ends the one before). Whether this call is a boundary is known from its own count; its
/// index is taken once the iteration record is held, so that threads at the boundary at once
/// begin their iterations in index order.
fn boundary_call() {
    let c = CALLS.fetch_add(1, Ordering::Relaxed);
    let every = u64::from(EVERY.load(Ordering::Relaxed).max(1));
    if c.is_multiple_of(every) {
        iterations::begin_numbered(|| BOUNDARIES.fetch_add(1, Ordering::Relaxed));
    }
}

/// A wrapped function the process's MPI does not define: said once per function, by every rank
/// that calls it, and the call returns [`MPI_ERR_INTERN`] without being made. For a large-count
/// form that is an MPI older than 4.0 (Open MPI 4, MPICH 3), reached only through a run-time
/// lookup (`dlsym`) that finds libaar.so's own definition, where without libaar.so it would have
/// found none.
#[cold]
fn missing(c: &Collective) -> c_int {
    if !c.reported_missing.swap(true, Ordering::Relaxed) {
        let name = c.name();
        let returns = "The call is not made: it returns 16 (MPICH's MPI_ERR_INTERN, Open MPI's MPI_ERR_OTHER) \
                       without the communicator's error handler, and leaves its buffers as they were";
        diag::error(&if c.large_count {
            format!(
                "{name} was called, but this process's MPI library has none (it is older than MPI 4.0, as Open \
                 MPI 4 and MPICH 3 are): the program found libaar.so's own {name} by a run-time lookup (dlsym) \
                 that finds nothing without libaar.so. {returns}. Fix: use an MPI 4 library, or have the \
                 program call {} where its counts fit in an int",
                c.function.name()
            )
        } else {
            format!("{name} was called, but neither {name} after libaar.so nor P{name} can be found. {returns}.")
        });
    }
    MPI_ERR_INTERN
}

/// Forward one call of a wrapped MPI function exactly once to the function `F` it goes on to
/// ([`Collective::real`]; `call` makes it), then take the iteration boundary if this function is the boundary. `key` holds
/// what tells its calls apart besides the function (count, datatype, root, communicator): under
/// `steady` a call is routed and timed as a whole ([`aar_engine::calls`]).
pub fn forward<F: Copy>(c: &Collective, key: [u64; 4], call: impl FnOnce(F) -> c_int) -> c_int {
    let Some(real) = c.real::<F>() else { return missing(c) };
    let alltoall = c.function == MpiFunction::Alltoall;
    let w = crate::control::load();
    let rc = if c.function.carries_payload() && routes_calls(w) {
        let _inside = Depth::enter(alltoall);
        let begin = || {
            let key = aar_engine::calls::call_key(&[code(c.function) as u64, key[0], key[1], key[2], key[3]]);
            state::begin_call(key, alltoall && state::settings().is_some_and(|s| s.alltoall_hook), w)
        };
        // A panic must not reach the application; the call is forwarded whatever happens here.
        let call_now = std::panic::catch_unwind(begin).unwrap_or_else(|_| {
            diag::internal_error("the collective was forwarded");
            (None, Follow::NONE)
        });
        let outer = OuterCall(state::swap_thread_call(call_now));
        let t0 = crate::sys::now_ns();
        let rc = call(real);
        let elapsed = crate::sys::now_ns().saturating_sub(t0);
        if let (Some(ticket), _) = call_now {
            if std::panic::catch_unwind(|| state::end_call(ticket, elapsed)).is_err() {
                diag::internal_error("the collective had been forwarded");
            }
        }
        drop(outer);
        rc
    } else if alltoall {
        let _inside = Depth::enter(true);
        call(real)
    } else {
        call(real)
    };
    if is_boundary(c.function) || initialises(c.function) {
        // A panic must not reach the application; the call has been forwarded already.
        let take = || {
            // Threads at their first boundary at once: each waits for the settings (the A/B
            // schedule), so that none takes a boundary under the policy before it.
            init::wait_ready();
            // Still the boundary once the settings are known (not under AAR_DISABLE).
            if is_boundary(c.function) {
                boundary_call();
            }
        };
        if std::panic::catch_unwind(take).is_err() {
            diag::internal_error("the MPI call had been forwarded");
        }
    }
    rc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_the_function_s_and_its_pmpi_name_has_a_p_before_it() {
        for f in MpiFunction::ALL {
            let mut buf = [0; NAME_MAX];
            let c = Collective::new(f);
            assert_eq!(c.c_name(&mut buf, false).to_str().unwrap(), f.name());
            assert_eq!(c.c_name(&mut buf, true).to_str().unwrap(), format!("P{}", f.name()));
            let c = Collective::large_count(f);
            assert_eq!(c.c_name(&mut buf, false).to_str().unwrap(), format!("{}_c", f.name()));
            assert_eq!(c.c_name(&mut buf, true).to_str().unwrap(), format!("P{}_c", f.name()));
        }
    }

    /// MPI_IN_PLACE is one value in MPICH and another in Open MPI; a rooted collective's root
    /// that passes it is keyed by its other side, and every other rank by its own.
    #[test]
    fn a_root_in_place_is_keyed_by_the_side_it_gives() {
        let buf = std::ptr::without_provenance::<c_void>(0x1000);
        for mpi_in_place in [usize::MAX, 1].map(std::ptr::without_provenance::<c_void>) {
            assert!(in_place(mpi_in_place));
            assert_eq!(share(mpi_in_place, (0, 0), (8, 3)), (8, 3));
        }
        assert!(!in_place(buf) && !in_place(std::ptr::null()));
        assert_eq!(share(buf, (8, 3), (0, 0)), (8, 3));
    }

    /// MPI 4 gives every collective with a buffer a large-count form (MPI_Barrier has none).
    #[test]
    fn every_function_with_a_payload_has_its_large_count_form_listed_once() {
        let listed: Vec<MpiFunction> = LARGE_COUNT.iter().map(|c| c.function).collect();
        let with_payload: Vec<MpiFunction> = MpiFunction::ALL.into_iter().filter(|f| f.carries_payload()).collect();
        assert_eq!(listed, with_payload);
        assert!(LARGE_COUNT.iter().all(|c| c.large_count && c.name().ends_with("_c")));
    }
}
