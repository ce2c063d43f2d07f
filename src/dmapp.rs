//! The DMAPP seam: the hooks that route each DMAPP data call by the calling thread's routing
//! attribute before forwarding it exactly once, and the attribute calls through which the
//! application states its own routing.
//!
//! DMAPP has no per-call routing argument: routing is an attribute of the thread, set with
//! `dmapp_set_rma_attrs_ext`, that applies to the operations the thread issues after it (the PUT
//! attribute also to AMOs). So the library puts the routing the engine chose in force on the
//! calling thread before forwarding, and only when it differs from what is in force there (one
//! set call per change of decision, never one per message); operations already issued keep
//! theirs. It never changes a direction whose routing the application chose non-adaptive (or
//! whose value the table in use does not name).
//!
//! The layout of `dmapp_rma_attrs_ext_t` differs between releases, so every change is
//! read-modify-write-verify on an oversized zeroed buffer of which only the routing byte of the
//! direction changes, read back whole. Any disagreement (a refused value: the table in use is not
//! this DMAPP's; a byte that does not read back: the layout is not the one relied on) stops DMAPP
//! steering for the process with one warning and gives each thread its application's attributes
//! back; every DMAPP call is then forwarded untouched (and still counted). A transient refusal
//! (`DMAPP_RC_BUSY` and the like, [`Rc::is_transient`]) changes nothing and is no disagreement: the
//! call goes out with the routing in force, counted with it, and the thread tries again at a later
//! call; only [`TRANSIENT_FAILURES_LIMIT`] of them in a row stop steering.
//!
//! Giving back is lazy and per thread: after `aar_disable()`, `AAR_MODE=off` or an A/B iteration
//! under another policy, a thread's next DMAPP operation carries the routing the policy now wants
//! (the application's own, when the library does not route).
//!
//! The library's own attribute calls run marked as inside DMAPP, as the data calls it forwards do:
//! what libdmapp does in them through its own exported functions (its PLT) goes out untouched,
//! never taken for the application's. A libdmapp without the `_ext` attribute calls is not
//! steered ([`lacks`]).
//!
//! A data call names a PE; under `steady` its destination class is that of the PE's node, placed
//! through Cray's PMI ([`pe_class`]).

use crate::attributes::{self, Thread};
use crate::control::{self, FAST, READY, REWRITE, TRACE};
use crate::route::{self, forward_once, Call};
use crate::sys::{self, Real};
use crate::tally::{self, Api, Count, OTHER};
use crate::{diag, init, mpi, state, topology, trace};
use aar_abi::dmapp::*;
use aar_engine::model::{packets, request_flits};
use aar_engine::{DestinationClass, Message, Policy, Reason, RoutingMode, Transfer};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// What a data call moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Put,
    Get,
    /// An atomic memory operation, fetching or not: one quad word, following the PUT attribute.
    Amo,
}

impl Kind {
    /// The routing attribute the call follows.
    pub const fn direction(self) -> Direction {
        match self {
            Kind::Get => Direction::Get,
            Kind::Put | Kind::Amo => Direction::Put,
        }
    }

    /// For the cost model: GETs carry their data in the responses.
    pub const fn transfer(self) -> Transfer {
        match self {
            Kind::Get => Transfer::Get,
            Kind::Put | Kind::Amo => Transfer::Put,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Kind::Put => "PUT",
            Kind::Get => "GET",
            Kind::Amo => "AMO",
        }
    }
}

/// The messages of one data call: `messages` of `bytes` each (one per target PE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub kind: Kind,
    pub bytes: u64,
    pub messages: u64,
    /// The (first) target PE.
    pub endpoint: u64,
}

impl Shape {
    /// `nelems` elements of `ty` to or from `pe`. A call DMAPP refuses for its size moves 0 bytes:
    /// an unknown type, or more bytes than 64 bits count (which, counted, would wrap the record's
    /// totals and cross the threshold for a message that never goes out).
    pub fn transfer(kind: Kind, pe: DmappPe, nelems: u64, ty: DmappType) -> Shape {
        let bytes = element_bytes(ty).and_then(|e| e.checked_mul(nelems)).unwrap_or(0);
        Shape { kind, bytes, messages: 1, endpoint: pe as u32 as u64 }
    }

    /// An AMO on `pe`.
    pub fn amo(pe: DmappPe) -> Shape {
        Shape { kind: Kind::Amo, bytes: AMO_BYTES, messages: 1, endpoint: pe as u32 as u64 }
    }

    /// `nelems` elements of `ty` to or from each of `n` PEs listed at `pes` (0 bytes each when
    /// the call's bytes do not fit in 64 bits, as for [`Shape::transfer`]).
    ///
    /// # Safety
    /// `pes` is NULL or valid for reading `n` PEs (DMAPP's contract).
    pub unsafe fn per_pe(kind: Kind, pes: *const DmappPe, n: u32, nelems: u64, ty: DmappType) -> Shape {
        // SAFETY: non-null and holding `n` > 0 PEs per the contract.
        let first = if pes.is_null() || n == 0 { 0 } else { unsafe { *pes } };
        let each = Shape::transfer(kind, first, nelems, ty);
        let bytes = if each.bytes.checked_mul(u64::from(n)).is_some() { each.bytes } else { 0 };
        Shape { bytes, messages: u64::from(n), ..each }
    }

    fn total_bytes(&self) -> u64 {
        self.bytes.saturating_mul(self.messages)
    }
}

pub static INIT: Real = Real::new(c"dmapp_init");
pub static INIT_EXT: Real = Real::new(c"dmapp_init_ext");
pub static FINALIZE: Real = Real::new(c"dmapp_finalize");
pub static GET_RMA_ATTRS: Real = Real::new(c"dmapp_get_rma_attrs");
pub static GET_RMA_ATTRS_EXT: Real = Real::new(c"dmapp_get_rma_attrs_ext");
pub static SET_RMA_ATTRS: Real = Real::new(c"dmapp_set_rma_attrs");
pub static SET_RMA_ATTRS_EXT: Real = Real::new(c"dmapp_set_rma_attrs_ext");
// ---- Where a PE sits ------------------------------------------------------------------------------

static GET_JOBINFO: Real = Real::new(c"dmapp_get_jobinfo");

/// This process's PE and the job's number of PEs, from the real `dmapp_get_jobinfo` (after
/// `dmapp_init`). `Err`: why not, for a message.
fn job_pe() -> Result<(usize, usize), String> {
    let get = GET_JOBINFO.get::<GetJobinfoFn>().ok_or("no library loaded after libaar.so defines dmapp_get_jobinfo")?;
    let mut info = std::mem::MaybeUninit::<DmappJobinfo>::zeroed();
    // SAFETY: a writable dmapp_jobinfo_t, the struct the function fills.
    let rc = unsafe { get(info.as_mut_ptr()) };
    if rc != DMAPP_RC_SUCCESS {
        return Err(format!("dmapp_get_jobinfo returned {rc}"));
    }
    // SAFETY: zeroed (a valid value: integers and raw pointers), then filled by the call.
    let info = unsafe { info.assume_init() };
    match (usize::try_from(info.pe), usize::try_from(info.npes)) {
        (Ok(pe), Ok(npes)) if pe < npes => Ok((pe, npes)),
        _ => Err(format!("dmapp_get_jobinfo gives PE {} of {}", info.pe, info.npes)),
    }
}

/// The largest DMAPP job whose PEs are placed (a NID and a place each: 16 bytes a PE, 64 MiB at
/// most).
const MAX_PES: usize = 1 << 22;

/// The NID of every DMAPP PE's node and its place in the table, by PE number.
type PePlaces = Box<[(u32, Option<topology::Location>)]>;

/// The PEs' places (built once, under `steady`); `None` when PEs cannot be placed (said once).
static PE_PLACES: OnceLock<Option<PePlaces>> = OnceLock::new();

/// Where the PEs sit. A DMAPP call names a PE; Cray's PMI gives the NID of a rank's node
/// (`PMI_Get_nid`), and on a Cray the PE is the PMI rank. Both are checked on this rank before
/// any PE is placed: DMAPP's PE and PE count must be PMI's rank and size, and this rank's NID must
/// be its NIC address (`PMI_GNI_LOC_ADDR`), the key of the table's lines.
fn pe_places(table: &topology::Topology) -> Result<PePlaces, String> {
    let (pe, npes) = job_pe()?;
    let (rank, nids) = crate::sys::pmi_nids(MAX_PES)?;
    if (pe, npes) != (rank, nids.len()) {
        return Err(format!("DMAPP's PE {pe} of {npes} is not PMI's rank {rank} of {}", nids.len()));
    }
    let nic = topology::local_nic_address();
    if nic != Some(nids[rank]) {
        let nic = nic.map_or_else(|| "unknown (PMI_GNI_LOC_ADDR is unset)".to_string(), |n| format!("{n:#x}"));
        return Err(format!("this rank's NID is {:#x} (PMI_Get_nid) but its NIC address is {nic}", nids[rank]));
    }
    Ok(nids.iter().map(|&nid| (nid, table.location(nid))).collect())
}

/// The destination class of a DMAPP call to `messages` PEs, the first `pe`, for the policies
/// that keep state per class (`steady`); the others see one class, and never make the library
/// place PEs. A call to several PEs is of no class (unknown). `in_job`: the calling thread's
/// attributes were read in the job in force, so there is one to ask for this process's PE; a
/// call without one (before `dmapp_init`, which DMAPP refuses) places no PE, since a placement
/// that fails is final and without a job `dmapp_get_jobinfo` can only fail.
#[inline]
pub fn pe_class(policy: Policy, pe: u64, messages: u64, in_job: bool) -> DestinationClass {
    match policy {
        Policy::Steady => steady_pe_class(pe, messages, in_job),
        Policy::Auto | Policy::Fixed(_) | Policy::Off => DestinationClass::Unknown,
    }
}

fn steady_pe_class(pe: u64, messages: u64, in_job: bool) -> DestinationClass {
    let Some(here) = topology::here() else { return DestinationClass::Unknown };
    let places = if in_job { placed_pes() } else { PE_PLACES.get().and_then(Option::as_ref) };
    let Some(&(nid, there)) = places.and_then(|p| usize::try_from(pe).ok().and_then(|pe| p.get(pe))) else {
        return DestinationClass::Unknown;
    };
    match there {
        _ if messages != 1 => DestinationClass::Unknown,
        Some(there) => DestinationClass::between(here, there),
        None => {
            topology::unlisted(nid);
            DestinationClass::Unknown
        }
    }
}

/// Taken by the one thread that places the PEs, never given back.
static PLACING: AtomicBool = AtomicBool::new(false);

/// The PEs' places, placed on the first call; `None` (said once) where they cannot be, and while
/// another thread places them: its PMI calls are not waited for, by a call of another thread or
/// by a fork child (which the placing thread never comes to: its calls stay of no class).
fn placed_pes() -> Option<&'static PePlaces> {
    if let Some(placed) = PE_PLACES.get() {
        return placed.as_ref();
    }
    // A load first: in a fork child whose parent was placing, the flag stays taken and every call
    // comes here; a swap is a locked instruction.
    if PLACING.load(Ordering::Relaxed) || PLACING.swap(true, Ordering::Acquire) {
        return None;
    }
    let placed = topology::table().and_then(|table| {
        pe_places(table)
            .inspect(|places| {
                let listed = places.iter().filter(|(_, place)| place.is_some()).count();
                tracing::debug!(pes = places.len(), listed, "DMAPP PEs placed through PMI_Get_nid");
            })
            .inspect_err(|why| {
                diag::warn(&format!(
                    "DMAPP calls cannot be placed: {why}; steady keeps one destination class for all of them \
                     (uGNI posts take theirs from the node table). Run under Cray's PMI (or aar run), with \
                     PMI_Init called (dmapp_init does) and a node table that lists every node of the job."
                ))
            })
            .ok()
    });
    PE_PLACES.get_or_init(|| placed).as_ref()
}

/// After a successful `dmapp_init`, on its thread: place the PEs now if `steady` may decide (the
/// policy in force, or an A/B arm). PMI-1 is not thread-safe, and this thread has just used it
/// (Cray's `dmapp_init` does), so the library's own PMI calls are best made here, not at some
/// later DMAPP call that may run while another thread of the application is inside PMI. An
/// application that selects `steady` later (C API) has its PEs placed at its first DMAPP call
/// in a job ([`pe_class`]).
pub fn place_pes_after_dmapp_init(w: u32) {
    let steady = control::policy(w) == Policy::Steady
        || state::settings().and_then(|s| s.ab.as_ref()).is_some_and(|ab| ab.0.contains(&Policy::Steady));
    if steady && topology::here().is_some() {
        placed_pes();
    }
}

/// Reported once per function: no library loaded after libaar.so defines it.
#[cold]
pub fn missing(real: &Real) -> DmappReturn {
    if real.first_miss() {
        diag::error(&format!(
            "{} was called but no library loaded after libaar.so defines it (libdmapp); returning DMAPP_RC_NOT_SUPPORTED.",
            real.name()
        ));
    }
    DMAPP_RC_NOT_SUPPORTED
}

// ---- Data calls ------------------------------------------------------------------------------------

/// A data call: route it by the thread's attribute, count it, forward it once. `forward` calls
/// the real function with the caller's arguments (copied into it, so the fast path keeps them in
/// registers); it is called exactly once.
#[inline(always)]
pub fn data<F: Fn(*mut c_void) -> DmappReturn + Copy>(real: &Real, shape: Shape, forward: F) -> DmappReturn {
    let Some(addr) = real.addr() else { return missing(real) };
    let mut crossed = None;
    let w = control::load();
    if w & FAST != 0 {
        let fast = attributes::with_thread(|t| {
            if t.is_inside() || !t.current() {
                return None;
            }
            let dir = t.dir(shape.kind.direction());
            let total = shape.total_bytes();
            let mut c = Count {
                api: Api::Dmapp,
                class: dir.app_class as usize,
                reason: PASSTHROUGH,
                messages: shape.messages,
                bytes: total,
            };
            let mut desired = dir.app;
            if dir.routable {
                if state::accumulate(total) {
                    crossed = Some(true);
                    return None;
                }
                crossed = Some(false);
                if w & REWRITE != 0 {
                    (c.class, c.reason) = match mpi::call_follow(w) {
                        Some((m, reason)) => (m.index(), reason),
                        None => (control::below_threshold_class(w), control::below_threshold_reason_index(w)),
                    };
                    desired = attributes::mode_value(c.class);
                }
            }
            if Some(desired) != dir.in_force {
                return None;
            }
            tally::count_all(c);
            let rc = t.inside(|| forward(addr));
            settle(rc, c);
            Some(rc)
        });
        if let Some(Some(rc)) = fast {
            return rc;
        }
    }
    slow(real, addr, &shape, crossed, &forward)
}

const PASSTHROUGH: usize = Reason::Passthrough.index();

/// After the forward of a data call counted as `c`: nothing more when it succeeded, else
/// [`unsuccessful`].
#[inline(always)]
fn settle(rc: DmappReturn, c: Count) {
    if rc != DMAPP_RC_SUCCESS {
        // In registers: a `Count` in memory would be stored on every call, before its forward.
        unsuccessful(rc, c.class, c.reason, c.messages, c.bytes);
    }
}

/// A data call counted as `c` that DMAPP answered `rc`, not success: one that went out and failed
/// in the network stays counted, with the routing it went out with, and counts as failed
/// ([`tally::failed`]); any other sent nothing, and counts as refused ([`tally::refused`]).
#[cold]
#[inline(never)]
fn unsuccessful(rc: DmappReturn, class: usize, reason: usize, messages: u64, bytes: u64) {
    let c = Count { api: Api::Dmapp, class, reason, messages, bytes };
    if Rc(rc).went_out() {
        tally::failed(c.messages);
    } else {
        tally::refused(c);
    }
}

/// Everything but the inline fast path, inside `catch_unwind`.
#[cold]
#[inline(never)]
fn slow(
    real: &Real,
    addr: *mut c_void,
    shape: &Shape,
    crossed: Option<bool>,
    forward: &dyn Fn(*mut c_void) -> DmappReturn,
) -> DmappReturn {
    // From the fast path (`crossed`): initialised, ready, not a fork child still without its own
    // state (its first calls leave the fast path), and not a call DMAPP makes itself.
    if crossed.is_none() {
        init::ensure_init();
        state::after_fork_in_child();
        let inside = attributes::with_thread(Thread::is_inside).unwrap_or(true);
        if state::inert() || inside {
            // AAR_DISABLE, or a DMAPP call that DMAPP makes itself: untouched, not counted again.
            return forward(addr);
        }
    }
    let w = control::load();
    control::note_dmapp(w);
    let mut rc = None;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        attributes::with_thread(|t| {
            let forward = &mut |a| {
                let sent = forward(a);
                rc = Some(sent);
                // Counted before it went out (`route`): a call that went out and failed stays so.
                if Rc(sent).went_out() {
                    tally::failed(shape.messages);
                }
                sent == DMAPP_RC_SUCCESS || Rc(sent).went_out()
            };
            route_call(real, t, w, shape, crossed, forward, addr)
        });
    }));
    forward_once(outcome, rc, || {
        // Not counted yet (`route` counts right before it forwards): counted with the routing in
        // force on the thread, for the record holds what went out.
        let d = shape.kind.direction();
        let in_force = attributes::with_thread(|t| t.current().then(|| t.dir(d).in_force).flatten()).flatten();
        let class = in_force.map_or(OTHER, attributes::class_of_value);
        let (messages, bytes) = (shape.messages, shape.total_bytes());
        let c = Count { api: Api::Dmapp, class, reason: PASSTHROUGH, messages, bytes };
        tally::count_all(c);
        let rc = forward(addr);
        settle(rc, c);
        rc
    })
}

/// Route one data call on thread `t` and forward it, writing a trace line when tracing.
fn route_call(
    real: &Real,
    t: &Thread,
    w: u32,
    shape: &Shape,
    crossed: Option<bool>,
    forward: &mut dyn FnMut(*mut c_void) -> bool,
    addr: *mut c_void,
) {
    let d = shape.kind.direction();
    if w & READY != 0 {
        up_to_date(t, None);
    }
    let known = t.current();
    let requested = t.dir(d);
    let call = Call {
        api: Api::Dmapp,
        msg: Message {
            bytes: shape.bytes,
            transfer: shape.kind.transfer(),
            endpoint: shape.endpoint,
            class: pe_class(control::policy(w), shape.endpoint, shape.messages, known),
            posted_ns: None,
        },
        messages: shape.messages,
    };
    let apply = |mode: Option<RoutingMode>| {
        if !known {
            // Its attributes cannot be read (before dmapp_init): nothing to apply, routing unknown.
            return OTHER;
        }
        let desired = mode.map_or(requested.app, |m| attributes::mode_value(m.index()));
        if Some(desired) != t.dir(d).in_force {
            reconcile(t, d, desired);
        }
        if t.predates_job() {
            // The job the view was read in has ended (DMAPP refused the change for want of a
            // job: [`disagreement`]): the call goes out without one, of unknown routing.
            return OTHER;
        }
        t.dir(d).in_force.map_or(OTHER, attributes::class_of_value)
    };
    let routed = route::route(w, &call, crossed, known && requested.routable, apply, || t.inside(|| forward(addr)));
    if w & TRACE != 0 {
        let transfer = shape.kind.transfer();
        let name = |v: u8| if known { attributes::name_of(v) } else { "unknown" };
        state::TRACE.write(&trace::Line {
            t_ns: sys::now_ns(),
            api: Api::Dmapp.name(),
            call: real.name(),
            post_type: shape.kind.name(),
            messages: shape.messages,
            bytes: call.bytes(),
            flits: request_flits(shape.bytes, transfer).saturating_mul(shape.messages),
            packets: packets(shape.bytes).saturating_mul(shape.messages),
            latency_us: routed.window.map(|w| w.latency_us),
            stall_ratio: routed.window.map(|w| w.stall_ratio),
            requested: name(requested.app),
            // As counted: a call that goes out without the job its view was read in is unknown.
            chosen: if t.predates_job() { "unknown" } else { t.dir(d).in_force.map_or("unknown", name) },
            reason: routed.reason.name(),
            destination: call.msg.class.name(),
            dmapp_table: attributes::table_description(),
        });
    }
}

// ---- The thread's attributes -------------------------------------------------------------------------

/// Why the thread's attributes could not be read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AttrsError {
    /// The loaded libdmapp does not define the function.
    Missing(&'static str),
    /// The function returned this code.
    Failed(&'static str, Rc),
}

impl AttrsError {
    /// A failure the same call may not repeat later (DMAPP was busy): it changed nothing.
    fn is_transient(self) -> bool {
        matches!(self, AttrsError::Failed(_, rc) if rc.is_transient())
    }
}

impl std::fmt::Display for AttrsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttrsError::Missing(call) => write!(f, "this libdmapp has no {call}"),
            AttrsError::Failed(call, rc) => write!(f, "{call} returned {rc}"),
        }
    }
}

/// `dmapp_get_rma_attrs_ext` into a zeroed buffer, on thread `t` (marked as inside a DMAPP call:
/// what libdmapp does in it through its own exported functions, its PLT, goes out untouched).
fn read_attrs(t: &Thread) -> Result<RmaAttrsExt, AttrsError> {
    const CALL: &str = "dmapp_get_rma_attrs_ext";
    let Some(get) = GET_RMA_ATTRS_EXT.get::<GetAttrsFn>() else {
        return Err(AttrsError::Missing(CALL));
    };
    let mut attrs = RmaAttrsExt::ZERO;
    // SAFETY: a zeroed buffer of RMA_ATTRS_EXT_BYTES, larger than any dmapp_rma_attrs_ext_t.
    let rc = t.inside(|| unsafe { get((&raw mut attrs).cast()) });
    match rc {
        DMAPP_RC_SUCCESS => Ok(attrs),
        rc => Err(AttrsError::Failed(CALL, Rc(rc))),
    }
}

/// `dmapp_set_rma_attrs_ext(attrs)` on thread `t`, counted (marked as inside a DMAPP call, as
/// [`read_attrs`]: a set libdmapp makes in it through its PLT is not the application's).
fn write_attrs(t: &Thread, attrs: &RmaAttrsExt) -> Result<(), AttrsError> {
    const CALL: &str = "dmapp_set_rma_attrs_ext";
    let Some(set) = SET_RMA_ATTRS_EXT.get::<AttrsInitFn>() else {
        return Err(AttrsError::Missing(CALL));
    };
    let mut requested = *attrs;
    let mut actual = RmaAttrsExt::ZERO;
    attributes::count_set();
    // SAFETY: two buffers of RMA_ATTRS_EXT_BYTES, larger than any dmapp_rma_attrs_ext_t; the
    // first holds what the same DMAPP wrote, with at most its routing bytes changed.
    let rc = t.inside(|| unsafe { set((&raw mut requested).cast(), (&raw mut actual).cast()) });
    match rc {
        DMAPP_RC_SUCCESS => Ok(()),
        rc => Err(AttrsError::Failed(CALL, Rc(rc))),
    }
}

/// Bring the thread's view up to date: read its attributes in a new job (or the first time;
/// `asked`: the routing the `dmapp_init` that began it asked for, on its thread, as for
/// [`Thread::renew`]), give them back once steering has stopped.
fn up_to_date(t: &Thread, asked: Option<[u8; 2]>) {
    if t.current() {
        return;
    }
    if t.predates_job() {
        let stamp = attributes::state_stamp();
        match read_attrs(t) {
            Ok(now) => t.renew(now, stamp, asked),
            Err(e @ AttrsError::Missing(_)) => {
                lacks(e);
                t.unread();
            }
            Err(_) => t.unread(),
        }
    } else {
        give_back(t, false);
    }
}

/// Put the application's attributes back in force on this thread, if the library changed them
/// (or `written`: a set call went through and its result is not known). When DMAPP is busy, what
/// is in force stays as it is (not known after such a set) and is given back at a later call of
/// the thread's ([`Thread::give_back_pending`]), whole when it is not known ([`reconcile`]).
fn give_back(t: &Thread, written: bool) {
    let stamp = attributes::state_stamp();
    if written || t.steered() {
        if let Err(e) = write_attrs(t, &t.app()) {
            if e.is_transient() {
                t.failed_transiently();
                return t.give_back_pending(written, stamp);
            }
        }
    }
    t.given_back(stamp);
}

/// Transient failures in a row on one thread after which a change of routing is taken to fail
/// for good: the thread tried at its next change after the first, then after letting 1, 3, 7,
/// ... changes pass (127 changes in all between the first failure and the last).
pub const TRANSIENT_FAILURES_LIMIT: u32 = 8;

/// Put `desired` in force for direction `d`, read-modify-write-verify. A transient failure (DMAPP
/// busy) changes nothing: the call goes out with the routing in force, and the thread tries again
/// at a later change ([`Thread::change_due`]); [`TRANSIENT_FAILURES_LIMIT`] of them in a row, or
/// any other disagreement, stop steering DMAPP, unless the job has ended under the change
/// ([`disagreement`]).
fn reconcile(t: &Thread, d: Direction, desired: u8) {
    if !t.change_due() {
        return;
    }
    if t.dir(d).in_force.is_none() && !t.dir(d).routable {
        // What a set whose result was not verified changed is not known, and the library gives
        // the attributes back: all of them go back. (A routable thread's is read again below.)
        return give_back(t, true);
    }
    let dir = attributes::direction_name(d);
    let name = attributes::name_of(desired);
    let now = match read_attrs(t) {
        Ok(now) => now,
        Err(e) if e.is_transient() => return busy(t, e, dir, name),
        Err(e @ AttrsError::Missing(_)) => {
            lacks(e);
            return give_back(t, false);
        }
        Err(e) => return disagreement(t, &e.to_string(), false),
    };
    let wanted = now.with_routing(d, desired);
    match write_attrs(t, &wanted) {
        Ok(()) => {}
        Err(e) if e.is_transient() => return busy(t, e, dir, name),
        Err(AttrsError::Failed(call, rc)) => {
            return disagreement(
                t,
                &format!("{call} refused the {dir} routing {name} (value {desired}): it returned {rc}"),
                false,
            )
        }
        Err(e) => {
            lacks(e);
            return give_back(t, false);
        }
    }
    let back = match read_attrs(t) {
        Ok(back) => back,
        // Not verified: put back what was in force, and try again later.
        Err(e) if e.is_transient() => {
            match write_attrs(t, &now) {
                Ok(()) => {}
                // Neither verified nor put back: what is in force is not known until the
                // thread's next change reads it again (and verifies what it writes).
                Err(r) if r.is_transient() => t.unsure(d),
                Err(r) => return disagreement(t, &r.to_string(), true),
            }
            return busy(t, e, dir, name);
        }
        Err(e) => return disagreement(t, &e.to_string(), true),
    };
    if let Some(i) = (0..RMA_ATTRS_EXT_BYTES).find(|&i| back.0[i] != wanted.0[i]) {
        let what = format!(
            "the routing attributes did not read back as written after setting the {dir} routing (byte {}): byte {i} was written as {} and reads {}",
            d.offset(),
            wanted.0[i],
            back.0[i]
        );
        return disagreement(t, &what, true);
    }
    t.applied(d, desired);
}

/// DMAPP disagreed with a change of routing on thread `t` (`what`; `written`: as for [`stop`]),
/// which stops steering DMAPP, unless the job the thread's attributes were read in has ended, or
/// is ending, under the change: then DMAPP refused for want of a job (or read back the next job's
/// attributes), which says nothing of the routing table or the layout. The view is read again at
/// the thread's next call, in the next job if there is one ([`Thread::renew`] takes what it
/// reads there for the application's). Only a program whose DMAPP calls run while another thread
/// is in `dmapp_finalize` meets this; the check is on this cold path only, with atomics.
#[cold]
fn disagreement(t: &Thread, what: &str, written: bool) {
    if t.job_ended() {
        return t.unread();
    }
    stop(t, what, written);
}

/// DMAPP answered a change of routing with a transient failure `e`: nothing changed, and the
/// thread tries again later, unless this makes [`TRANSIENT_FAILURES_LIMIT`] in a row.
#[cold]
fn busy(t: &Thread, e: AttrsError, dir: &str, name: &str) {
    let streak = t.failed_transiently();
    if streak < TRANSIENT_FAILURES_LIMIT || attributes::stopped() {
        return;
    }
    let why = format!("{e} on {streak} attempts in a row to set a thread's {dir} routing to {name}");
    if attributes::stop(&why) {
        diag::warn(&format!(
            "DMAPP: {why} (the thread tried again at later DMAPP calls, which went out, and were counted, with the routing in \
             force). aar takes this as lasting and stops steering DMAPP: each thread gets its application's attributes \
             back and every DMAPP call is forwarded untouched from now on (uGNI routing is unaffected). A DMAPP may refuse \
             attribute changes while the thread has operations outstanding: completing non-blocking operations sooner \
             (dmapp_gsync_wait), or a fixed AAR_MODE (one change per thread and direction), lets fewer changes meet a busy \
             DMAPP; with AAR_MODE=off aar never changes DMAPP's attributes."
        ));
    }
    give_back(t, false);
}

/// Stop steering DMAPP (one warning per process), and give this thread its attributes back.
#[cold]
fn stop(t: &Thread, what: &str, written: bool) {
    if attributes::stop(what) {
        let (table, source) = match attributes::table() {
            Some((t, s)) => (t.to_string(), s.to_string()),
            None => (String::new(), String::new()),
        };
        diag::warn(&format!(
            "DMAPP: {what}. Either the routing table in use ({table}, from {source}) or the layout of dmapp_rma_attrs_ext_t aar relies on \
             (PUT routing at byte {PUT_ROUTING_OFFSET}, GET at byte {GET_ROUTING_OFFSET}) is not this libdmapp's, so aar stops steering DMAPP: \
             each thread gets its application's attributes back and every DMAPP call is forwarded untouched from now on (uGNI routing is unaffected). \
             Build aar against the site's dmapp.h (AAR_DMAPP_H=/path/to/dmapp.h) or set AAR_DMAPP_ROUTING to its routing table."
        ));
    }
    give_back(t, written);
}

/// This libdmapp lacks a call through which the library reads or sets a thread's routing (`e`,
/// [`AttrsError::Missing`]): stop steering DMAPP for the process, with one warning. (Counted of
/// unknown routing, calls whose routing cannot be read would otherwise go out untouched with no
/// word, and the record would say DMAPP was steered.)
#[cold]
fn lacks(e: AttrsError) {
    let why = e.to_string();
    if attributes::stop(&why) {
        diag::warn(&format!(
            "DMAPP: {why}: aar reads and sets each thread's routing attribute with dmapp_get_rma_attrs_ext and \
             dmapp_set_rma_attrs_ext, so it does not steer DMAPP in this process: every DMAPP call is forwarded untouched \
             and still counted, of unknown routing (OTHER) while aar cannot read it (uGNI routing is unaffected). Run \
             with a libdmapp that defines both, the site's cray-dmapp (module load cray-dmapp), loaded by the program \
             or by a library it loads."
        ));
    }
}

// ---- The application's own attribute calls -----------------------------------------------------------------

/// The caller's `dmapp_set_rma_attrs[_ext]`: forwarded as asked; on success the thread's view is
/// read again, since what the application set is its intent.
pub fn set_attrs(real: &Real, forward: impl FnOnce(AttrsInitFn) -> DmappReturn) -> DmappReturn {
    let Some(real_fn) = real.get::<AttrsInitFn>() else { return missing(real) };
    if attributes::inside_dmapp() {
        // libdmapp's own call, through its PLT (from inside a data call or the library's own
        // attribute call): untouched.
        return forward(real_fn);
    }
    init::ensure_init();
    let rc = forward(real_fn);
    if rc == DMAPP_RC_SUCCESS && !state::inert() && control::load() & READY != 0 {
        let reread = || {
            attributes::with_thread(|t| {
                let stamp = attributes::state_stamp();
                match read_attrs(t) {
                    Ok(app) => t.read(app, stamp),
                    Err(_) => t.forget(),
                }
            })
        };
        if catch_unwind(reread).is_err() {
            diag::internal_error("the call had been forwarded");
        }
    }
    rc
}

/// The caller's `dmapp_get_rma_attrs[_ext]`: forwarded; while the library has its own routing in
/// force on this thread, the routing bytes the caller gets are its own, so that a get-modify-set
/// of the application never takes the library's routing for its intent.
///
/// # Safety
/// `attrs` is NULL or valid for writing the struct the function fills (DMAPP's contract).
pub unsafe fn get_attrs(real: &Real, attrs: *mut c_void) -> DmappReturn {
    let Some(real_fn) = real.get::<GetAttrsFn>() else { return missing(real) };
    if attributes::inside_dmapp() {
        // SAFETY: the caller's argument, unchanged (libdmapp's own call, as in set_attrs).
        return unsafe { real_fn(attrs) };
    }
    init::ensure_init();
    let steering = !state::inert() && control::load() & READY != 0;
    if steering {
        bring_up_to_date("the call is forwarded", None);
        give_back_if_unsure();
    }
    // SAFETY: the caller's argument, unchanged.
    let rc = unsafe { real_fn(attrs) };
    if rc == DMAPP_RC_SUCCESS && steering {
        // SAFETY: DMAPP filled the caller's struct.
        unsafe { show_own_routing(attrs) };
    }
    rc
}

/// Before the application reads its attributes: where what is in force on the calling thread is
/// not known (a set that did not read back, whose give-back DMAPP refused as busy), the
/// application's attributes are given back now, whole, if DMAPP lets, rather than at the thread's
/// next data call: [`show_own_routing`] cannot tell which bytes that set left, and the application
/// would take them for its own.
fn give_back_if_unsure() {
    let unsure = |t: &Thread| t.current() && Direction::ALL.iter().any(|&d| t.dir(d).in_force.is_none());
    let give = || {
        attributes::with_thread(|t| {
            if unsure(t) {
                give_back(t, true)
            }
        })
    };
    if catch_unwind(give).is_err() {
        diag::internal_error("the call is forwarded");
    }
}

/// The calling thread's view brought up to date ([`up_to_date`]), inside `catch_unwind` (`then`:
/// what happens to the call, for the message of a panic).
fn bring_up_to_date(then: &str, asked: Option<[u8; 2]>) {
    if catch_unwind(|| attributes::with_thread(|t| up_to_date(t, asked))).is_err() {
        diag::internal_error(then);
    }
}

/// In `attrs`, an attribute struct DMAPP filled for the calling thread, the application's own
/// routing in each direction where the library has its own in force.
///
/// # Safety
/// `attrs` is NULL or a `dmapp_rma_attrs_t` or `dmapp_rma_attrs_ext_t` DMAPP has just filled.
unsafe fn show_own_routing(attrs: *mut c_void) {
    if attrs.is_null() {
        return;
    }
    attributes::with_thread(|t| {
        if !t.current() {
            return;
        }
        for d in Direction::ALL {
            let dir = t.dir(d);
            if dir.in_force.is_some_and(|v| v != dir.app) {
                // SAFETY: DMAPP filled the caller's struct, which holds the routing of `d` at
                // this offset (in both attribute structs), as the verified set showed.
                unsafe { attrs.cast::<u8>().add(d.offset()).write(dir.app) };
            }
        }
    });
}

/// The caller's `dmapp_init[_ext]`: forwarded; on success a new job has begun, whose attributes
/// every thread reads again on its next call, and whose PEs `steady` places now. Where DMAPP
/// kept the attributes of the calling thread while the library steers it (a second `dmapp_init`
/// of a running job, in the emulator), the library's routing stays in force, and the routing
/// `requested` asked for is the application's intent ([`Thread::renew`]), which `actual` shows:
/// the application asked for it and DMAPP said success, whether it is the routing the library has
/// in force (DMAPP may have applied it: what it reads cannot tell) or another, which DMAPP did not
/// apply: then DMAPP kept the thread's attributes only because the library's set made them the
/// thread's own, and the library puts the request in force (or routes by it) at the thread's next
/// call. With `requested` NULL the earlier intent stays. After a `dmapp_finalize`, what the new
/// job's attributes say is the application's intent: the routing this `dmapp_init` asked for, also
/// where it is the routing the library had in force.
///
/// # Safety
/// `requested` is NULL or a `dmapp_rma_attrs_t` or `dmapp_rma_attrs_ext_t` DMAPP reads, `actual`
/// NULL or what the function fills (DMAPP's contract).
pub unsafe fn init(
    real: &Real,
    requested: *const c_void,
    actual: *mut c_void,
    forward: impl FnOnce(AttrsInitFn) -> DmappReturn,
) -> DmappReturn {
    let Some(real_fn) = real.get::<AttrsInitFn>() else { return missing(real) };
    init::ensure_init();
    let rc = forward(real_fn);
    if rc == DMAPP_RC_SUCCESS && !state::inert() {
        attributes::new_job();
        let w = control::load();
        if catch_unwind(|| place_pes_after_dmapp_init(w)).is_err() {
            diag::internal_error("the call had been forwarded");
        }
        if w & READY != 0 && attributes::with_thread(Thread::steered) == Some(true) {
            // SAFETY: DMAPP accepted the caller's request, which holds the routing of each
            // direction at this offset (in both attribute structs).
            let asked = (!requested.is_null())
                .then(|| Direction::ALL.map(|d| unsafe { requested.cast::<u8>().add(d.offset()).read() }));
            bring_up_to_date("the call had been forwarded", asked);
            // SAFETY: DMAPP filled the caller's struct.
            unsafe { show_own_routing(actual) };
        }
    }
    rc
}

/// The caller's `dmapp_finalize`: forwarded; on success the job has ended, and until the next
/// `dmapp_init` each thread's calls go out untouched, of unknown routing, as before the first:
/// without a job DMAPP refuses the attribute calls, and a refused change of routing would be
/// taken for a routing table or layout that is not this DMAPP's. A thread whose change of
/// routing DMAPP refuses while this runs, or after, knows why ([`attributes::end_job`],
/// [`disagreement`]).
pub fn finalize(real: &Real) -> DmappReturn {
    let Some(real_fn) = real.get::<VoidFn>() else { return missing(real) };
    init::ensure_init();
    let mut rc = DMAPP_RC_SUCCESS;
    attributes::end_job(|| {
        // SAFETY: the function found under this name, which takes no argument.
        rc = unsafe { real_fn() };
        rc == DMAPP_RC_SUCCESS && !state::inert()
    });
    rc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let s = Shape::transfer(Kind::Get, 3, 10, DMAPP_DQW);
        assert_eq!((s.bytes, s.messages, s.endpoint, s.kind.direction()), (160, 1, 3, Direction::Get));
        assert_eq!(Shape::transfer(Kind::Put, 1, 1 << 61, DMAPP_QW).bytes, 0, "past 64 bits: refused, no bytes");
        assert_eq!(Shape::transfer(Kind::Get, 1, (1 << 60) - 1, DMAPP_DQW).bytes, u64::MAX - 15, "the largest");
        assert_eq!(Shape::transfer(Kind::Put, 1, 10, 9).bytes, 0, "an unknown type moves nothing");
        let amo = Shape::amo(2);
        assert_eq!((amo.bytes, amo.kind.direction(), amo.kind.transfer()), (AMO_BYTES, Direction::Put, Transfer::Put));
        let pes = [5, 6, 7];
        // SAFETY: three PEs.
        let s = unsafe { Shape::per_pe(Kind::Put, pes.as_ptr(), 3, 4, DMAPP_DW) };
        assert_eq!((s.bytes, s.messages, s.endpoint, s.total_bytes()), (16, 3, 5, 48));
        // SAFETY: NULL is allowed.
        let s = unsafe { Shape::per_pe(Kind::Get, std::ptr::null(), 2, 4, DMAPP_BYTE) };
        assert_eq!((s.bytes, s.messages, s.endpoint), (4, 2, 0));
        // SAFETY: three PEs.
        let s = unsafe { Shape::per_pe(Kind::Put, pes.as_ptr(), 3, 1 << 62, DMAPP_BYTE) };
        assert_eq!((s.bytes, s.messages, s.total_bytes()), (1 << 62, 3, 3 << 62));
        // SAFETY: NULL is allowed.
        let s = unsafe { Shape::per_pe(Kind::Put, std::ptr::null(), 4, 1 << 62, DMAPP_BYTE) };
        assert_eq!((s.bytes, s.messages), (0, 4), "4 x 2^62 bytes: past 64 bits");
    }
}
