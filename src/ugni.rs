//! The uGNI seam: the real functions, resolved once with `dlsym(RTLD_NEXT)`, and the hooks that
//! route each post and SMSG send before forwarding it exactly once.
//!
//! Chained posts (GNI_CtPostFma, GNI_CtPostCqWrite): the routing is set on the head descriptor
//! only. The chain elements are a different struct whose layout is not public, so the library
//! never reads or writes them; only the head's `length` counts toward the message size.

use crate::control::{self, ENABLED, FAST, READY, TRACE};
use crate::settings::TestPanic;
use crate::state::{self, NICS};
use crate::tally::{self, class_of, CALLER_SMSG};
use crate::trylock::Inside;
use crate::{diag, init, mpi, sys, trace};
use aar_abi::*;
use aar_engine::model::{packets, request_flits};
use aar_engine::{requested_mode, with_mode, Message, Policy, Reason, RoutingMode, Transfer, Window};
use std::ffi::{c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};

/// Marks a symbol that dlsym did not find, so it is looked up once, not on every call.
const MISSING: *mut c_void = std::ptr::without_provenance_mut(1);

/// A real uGNI function.
pub struct Real {
    name: &'static CStr,
    addr: AtomicPtr<c_void>,
    reported_missing: AtomicBool,
}

impl Real {
    pub const fn new(name: &'static CStr) -> Self {
        Self { name, addr: AtomicPtr::new(std::ptr::null_mut()), reported_missing: AtomicBool::new(false) }
    }

    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("GNI_?")
    }

    #[inline]
    fn addr(&self) -> Option<*mut c_void> {
        let p = self.addr.load(Relaxed);
        if p.is_null() {
            return self.resolve();
        }
        (p != MISSING).then_some(p)
    }

    #[cold]
    fn resolve(&self) -> Option<*mut c_void> {
        // SAFETY: NUL-terminated name; RTLD_NEXT searches the objects loaded after libaar.so.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
        self.addr.store(if p.is_null() { MISSING } else { p }, Relaxed);
        (!p.is_null()).then_some(p)
    }
}

pub static POST_RDMA: Real = Real::new(c"GNI_PostRdma");
pub static POST_FMA: Real = Real::new(c"GNI_PostFma");
pub static POST_CQWRITE: Real = Real::new(c"GNI_PostCqWrite");
pub static CT_POST_FMA: Real = Real::new(c"GNI_CtPostFma");
pub static CT_POST_CQWRITE: Real = Real::new(c"GNI_CtPostCqWrite");
pub static SMSG_SEND: Real = Real::new(c"GNI_SmsgSend");
pub static SMSG_SEND_WTAG: Real = Real::new(c"GNI_SmsgSendWTag");
pub static SMSG_SET_DELIVERY_MODE: Real = Real::new(c"GNI_SmsgSetDeliveryMode");
pub static CDM_ATTACH: Real = Real::new(c"GNI_CdmAttach");
pub static CDM_DESTROY: Real = Real::new(c"GNI_CdmDestroy");

/// Reported once per function: the real symbol is absent (an older libugni without chained
/// transactions, or no libugni at all). The call cannot be forwarded.
#[cold]
pub fn missing(real: &Real) -> GniReturn {
    if !real.reported_missing.swap(true, Relaxed) {
        diag::error(&format!(
            "{} was called but the uGNI library loaded after libaar.so does not define it; returning GNI_RC_ILLEGAL_OP.",
            real.name()
        ));
    }
    GNI_RC_ILLEGAL_OP
}

/// Forward exactly once: the hook sets `rc` when it has called the real function; if it
/// panicked before that, restore what it changed and forward now.
fn forward_once(
    outcome: std::thread::Result<()>,
    rc: Option<GniReturn>,
    fallback: impl FnOnce() -> GniReturn,
) -> GniReturn {
    if outcome.is_err() {
        diag::internal_error(if rc.is_some() {
            "the call had been forwarded"
        } else {
            "the call was forwarded unchanged"
        });
    }
    rc.unwrap_or_else(fallback)
}

/// A post through GNI_PostRdma, GNI_PostFma, GNI_PostCqWrite or a chained post.
///
/// # Safety
/// `pd` is NULL or a valid descriptor owned by the caller for the duration of the call
/// (uGNI's contract).
#[inline(always)]
pub unsafe fn post(real: &Real, ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    let Some(real_fn) = real_fn::<PostFn>(real) else { return missing(real) };
    let w = control::load();
    if w & FAST != 0 && !pd.is_null() {
        // SAFETY: non-null descriptor, valid per the caller's contract.
        let (dlvr, bytes) = unsafe { ((*pd).dlvr_mode, (*pd).length) };
        if requested_mode(dlvr).is_none() {
            tally::count(class_of(dlvr), Reason::Passthrough, bytes);
            // SAFETY: forwarding the caller's arguments.
            return unsafe { real_fn(ep, pd) };
        }
        if !state::accumulate(bytes) {
            if w & control::REWRITE != 0 {
                // SAFETY: as above; only the routing byte changes, flag bits are kept.
                unsafe { (*pd).dlvr_mode = (dlvr & !GNI_DLVMODE_ROUTING_MASK) | (w & control::ROUTING) as u16 };
                tally::count_indexed(
                    control::below_threshold_class(w),
                    control::below_threshold_reason_index(w),
                    bytes,
                );
            } else {
                tally::count(class_of(dlvr), Reason::Passthrough, bytes);
            }
            // SAFETY: forwarding the caller's arguments.
            return unsafe { real_fn(ep, pd) };
        }
        // SAFETY: same arguments; the accumulator was crossed (and reset) above.
        return unsafe { guarded_post(real, real_fn, ep, pd, Some(true)) };
    }
    // SAFETY: same arguments.
    unsafe { guarded_post(real, real_fn, ep, pd, None) }
}

/// Everything but the inline fast path, inside `catch_unwind`.
#[cold]
#[inline(never)]
unsafe fn guarded_post(
    real: &Real,
    real_fn: PostFn,
    ep: GniEpHandle,
    pd: *mut GniPostDescriptor,
    crossed: Option<bool>,
) -> GniReturn {
    init::ensure_init();
    state::after_fork_in_child();
    if pd.is_null() || state::inert() {
        // SAFETY: the caller's arguments, untouched (a NULL descriptor is the real function's
        // to report).
        return unsafe { real_fn(ep, pd) };
    }
    // SAFETY: non-null descriptor, valid per the caller's contract.
    let original = unsafe { (*pd).dlvr_mode };
    let mut rc = None;
    // SAFETY: same arguments.
    let outcome = catch_unwind(AssertUnwindSafe(|| unsafe { route_post(real, real_fn, ep, pd, crossed, &mut rc) }));
    forward_once(outcome, rc, || {
        // SAFETY: restoring the caller's routing byte and forwarding its arguments.
        unsafe {
            (*pd).dlvr_mode = original;
            real_fn(ep, pd)
        }
    })
}

/// Route one post and forward it (setting `rc`), writing a trace line when tracing.
unsafe fn route_post(
    real: &Real,
    real_fn: PostFn,
    ep: GniEpHandle,
    pd: *mut GniPostDescriptor,
    crossed: Option<bool>,
    rc: &mut Option<GniReturn>,
) {
    let w = control::load();
    // SAFETY: non-null (checked by the caller) and valid per uGNI's contract.
    let (dlvr, bytes, post_type) = unsafe { ((*pd).dlvr_mode, (*pd).length, (*pd).r#type) };
    let mut forward = || {
        // SAFETY: the caller's arguments, forwarded once.
        *rc = Some(unsafe { real_fn(ep, pd) });
    };
    let set_mode = |m: Option<RoutingMode>| {
        if let Some(m) = m {
            // SAFETY: as above; only the routing byte changes.
            unsafe { (*pd).dlvr_mode = with_mode(dlvr, m) };
        }
    };
    let transfer = Transfer::of_post_type(post_type);
    let line = |chosen: Option<RoutingMode>, reason: Reason, window: Option<Window>| {
        if w & TRACE != 0 {
            state::TRACE.write(&trace::Line {
                t_ns: sys::now_ns(),
                call: real.name(),
                post_type: post_type_name(post_type),
                bytes,
                flits: request_flits(bytes, transfer),
                packets: packets(bytes),
                latency_us: window.map(|w| w.latency_us),
                stall_ratio: window.map(|w| w.stall_ratio),
                requested: dlvr_mode_name(dlvr),
                chosen: chosen.map_or_else(|| dlvr_mode_name(dlvr), |m| m.name()),
                reason: reason.name(),
            });
        }
    };
    if w & READY == 0 || w & ENABLED == 0 || requested_mode(dlvr).is_none() {
        // Counted also while another thread initialises (with AAR_DISABLE nothing is reported).
        tally::count(class_of(dlvr), Reason::Passthrough, bytes);
        forward();
        line(None, Reason::Passthrough, state::last_window());
        return;
    }
    let crossed = crossed.unwrap_or_else(|| state::accumulate(bytes));
    let mut slot = if crossed { state::try_decider() } else { None };
    let Some(decider) = slot.as_deref_mut().and_then(Option::as_mut) else {
        // Below the threshold, or another thread is deciding right now.
        let mode = control::below_threshold_mode(w);
        let reason = control::below_threshold_reason(w);
        set_mode(mode);
        tally::count(mode.map_or_else(|| class_of(dlvr), RoutingMode::index), reason, bytes);
        forward();
        line(mode, reason, state::last_window());
        return;
    };
    let started = decider.should_time().then(sys::now_ns);
    let settings = state::settings();
    let in_alltoall = settings.is_some_and(|s| s.alltoall_hook) && mpi::in_alltoall();
    let msg = Message { bytes, transfer, endpoint: ep as usize as u64 };
    let d = decider.decide(&msg, in_alltoall, w);
    let test_panic = settings.and_then(|s| s.test_panic);
    if d.read_before {
        // The side changes with this message: close the old side's window before it goes out.
        decider.read_and_observe();
    }
    set_mode(d.mode);
    if test_panic == Some(TestPanic::BeforeForward) {
        panic!("AAR_TEST_PANIC=before-forward");
    }
    tally::count(d.mode.map_or_else(|| class_of(dlvr), RoutingMode::index), d.reason, bytes);
    forward();
    if test_panic == Some(TestPanic::AfterForward) {
        panic!("AAR_TEST_PANIC=after-forward");
    }
    if d.read_counters {
        decider.after_send(started);
    }
    drop(slot);
    line(d.mode, d.reason, d.window);
}

// ---------------------------------------------------------------------------------------------
// SMSG: routed per NIC with GNI_SmsgSetDeliveryMode on every NIC handle the application attached.

/// Make every NIC's SMSG mode follow the control word (see [`crate::nics::NicTable::steer`]).
fn steer(w: u32) {
    let Some(set) = real_fn::<SmsgSetDeliveryModeFn>(&SMSG_SET_DELIVERY_MODE) else { return };
    NICS.steer(w, |nic, mode| {
        // SAFETY: a NIC handle returned by a successful GNI_CdmAttach whose CDM is not destroyed
        // (destruction removes it under the table's lock, which steering holds).
        unsafe { set(nic as GniNicHandle, mode) == GNI_RC_SUCCESS }
    });
}

/// An SMSG send: steer the NICs if the policy changed, count it, forward it once.
pub fn smsg_send(real: &Real, bytes: u64, forward: impl FnOnce(*mut c_void) -> GniReturn) -> GniReturn {
    let Some(addr) = real.addr() else { return missing(real) };
    let w = control::load();
    let class_reason = |w: u32| match control::below_threshold_mode(w) {
        Some(m) => (m.index(), if control::policy(w) == Policy::Auto { Reason::Smsg } else { Reason::Fixed }, Some(m)),
        None => (CALLER_SMSG, Reason::Passthrough, None),
    };
    if w & FAST != 0 && NICS.steered_for(w) {
        let (class, reason, _) = class_reason(w);
        tally::count(class, reason, bytes);
        return forward(addr);
    }
    init::ensure_init();
    if state::inert() {
        return forward(addr);
    }
    state::after_fork_in_child();
    let w = control::load();
    let mut rc = None;
    let mut forward = Some(forward);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if w & READY == 0 {
            tally::count(CALLER_SMSG, Reason::Passthrough, bytes);
            rc = forward.take().map(|f| f(addr));
            return;
        }
        // Steering holds the NIC table: a send made from inside it (re-entry) skips steering.
        if let Some(_inside) = Inside::enter() {
            steer(w);
        }
        let (class, reason, mode) = class_reason(w);
        tally::count(class, reason, bytes);
        rc = forward.take().map(|f| f(addr));
        if w & TRACE != 0 {
            state::TRACE.write(&trace::Line {
                t_ns: sys::now_ns(),
                call: real.name(),
                post_type: "SMSG",
                bytes,
                flits: request_flits(bytes, Transfer::Put),
                packets: packets(bytes),
                latency_us: None,
                stall_ratio: None,
                requested: "NIC",
                chosen: mode.map_or("NIC", RoutingMode::name),
                reason: reason.name(),
            });
        }
    }));
    forward_once(outcome, rc, || forward.take().map_or(GNI_RC_INVALID_STATE, |f| f(addr)))
}

/// The real function as `F`, its uGNI prototype (an `aar_abi` function type).
#[inline]
pub fn real_fn<F: Copy>(real: &Real) -> Option<F> {
    let addr = real.addr()?;
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: callers name `F` as the uGNI prototype of `real` (the exports check theirs against
    // aar_abi at compile time).
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&addr) })
}
