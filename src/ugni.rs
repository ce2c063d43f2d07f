//! The uGNI seam: the real functions, resolved once ([`crate::sys::next_definition`]), and the hooks that
//! route each post and SMSG send before forwarding it exactly once.
//!
//! Chained posts (GNI_CtPostFma, GNI_CtPostCqWrite): the routing is set on the head descriptor
//! only. The chain elements are a different struct whose layout is not public, so the library
//! never reads or writes them; only the head's `length` counts toward the message size (none for
//! a CQ write, [`aar_abi::post_payload_bytes`]).

use crate::attributes;
use crate::control::{self, FAST, READY, TRACE};
use crate::route::{self, forward_once, Call};
use crate::state::{self, NICS};
use crate::sys::Real;
use crate::tally::{self, class_of, CALLER_SMSG};
use crate::trylock::Inside;
use crate::{diag, endpoints, init, mpi, nics, sys, topology, trace};
use aar_abi::*;
use aar_engine::model::{packets, request_flits};
use aar_engine::{requested_mode, with_mode, DestinationClass, Message, Reason, RoutingMode, Transfer};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// In the line every post reads ([`control::Hot`]).
pub static POST_RDMA: &Real = &control::HOT.post_rdma;
pub static POST_FMA: Real = Real::new(c"GNI_PostFma");
pub static POST_CQWRITE: Real = Real::new(c"GNI_PostCqWrite");
pub static CT_POST_FMA: Real = Real::new(c"GNI_CtPostFma");
pub static CT_POST_CQWRITE: Real = Real::new(c"GNI_CtPostCqWrite");
pub static SMSG_SEND: Real = Real::new(c"GNI_SmsgSend");
pub static SMSG_SEND_WTAG: Real = Real::new(c"GNI_SmsgSendWTag");
pub static SMSG_SET_DELIVERY_MODE: Real = Real::new(c"GNI_SmsgSetDeliveryMode");
pub static CDM_ATTACH: Real = Real::new(c"GNI_CdmAttach");
pub static CDM_DESTROY: Real = Real::new(c"GNI_CdmDestroy");
pub static EP_CREATE: Real = Real::new(c"GNI_EpCreate");
pub static EP_BIND: Real = Real::new(c"GNI_EpBind");
pub static EP_UNBIND: Real = Real::new(c"GNI_EpUnbind");
pub static EP_DESTROY: Real = Real::new(c"GNI_EpDestroy");

/// Reported once per function: the real symbol is absent (an older libugni without chained
/// transactions, or no libugni at all). The call cannot be forwarded.
#[cold]
pub fn missing(real: &Real) -> GniReturn {
    if real.first_miss() {
        diag::error(&format!(
            "{} was called but the uGNI library loaded after libaar.so does not define it; returning GNI_RC_ILLEGAL_OP.",
            real.name()
        ));
    }
    GNI_RC_ILLEGAL_OP
}

/// A uGNI call that libdmapp makes from inside an intercepted DMAPP call: its traffic is that
/// call's, already routed and counted, so it goes out untouched.
#[inline(always)]
fn from_inside_dmapp(w: u32) -> bool {
    w & control::DMAPP != 0 && attributes::inside_dmapp()
}

/// Whether libaar.so may choose the routing of a post: the caller asked for an adaptive mode
/// (a non-adaptive one carries an ordering or determinism guarantee), and it is not a
/// collective-engine operation (`GNI_POST_CE`: a reduction step that the Aries collective engine
/// carries, whose use of the routing field nothing public describes; it goes out as the caller
/// made it, counted as passed through).
#[inline(always)]
fn routable(dlvr: u16, post_type: GniPostType) -> bool {
    requested_mode(dlvr).is_some() && post_type != GNI_POST_CE
}

/// A post through GNI_PostRdma, GNI_PostFma, GNI_PostCqWrite or a chained post. `CQ_WRITE`: the
/// call is one of the two that post CQ writes (uGNI refuses a CQ write's type anywhere else), whose
/// descriptor's `length` moves no byte ([`post_payload_bytes`]); the other calls' fast path then
/// takes the length as it is (asking for each of their posts cost 9 instructions on the read path).
///
/// # Safety
/// `pd` is NULL or a valid descriptor owned by the caller for the duration of the call
/// (uGNI's contract).
#[inline(always)]
pub unsafe fn post<const CQ_WRITE: bool>(real: &Real, ep: GniEpHandle, pd: *mut GniPostDescriptor) -> GniReturn {
    let Some(real_fn) = real.get::<PostFn>() else { return missing(real) };
    let w = control::load();
    if from_inside_dmapp(w) {
        // SAFETY: forwarding the caller's arguments, untouched.
        return unsafe { real_fn(ep, pd) };
    }
    if w & FAST != 0 && !pd.is_null() {
        // SAFETY: non-null descriptor, valid per the caller's contract.
        let (dlvr, length, post_type) = unsafe { ((*pd).dlvr_mode, (*pd).length, (*pd).r#type) };
        let bytes = if CQ_WRITE { post_payload_bytes(post_type, length) } else { length };
        let (class, reason) = if !routable(dlvr, post_type) {
            (class_of(dlvr), Reason::Passthrough.index())
        } else if state::accumulate(bytes) {
            // SAFETY: same arguments; the accumulator was crossed (and reset) above.
            return unsafe { guarded_post(real, real_fn, ep, pd, Some(true)) };
        } else if w & control::REWRITE != 0 {
            let (routing, class, reason) = match mpi::call_follow(w) {
                Some((m, reason)) => (m.dlvr_bits(), m.index(), reason),
                None => (
                    (w & control::ROUTING) as u16,
                    control::below_threshold_class(w),
                    control::below_threshold_reason_index(w),
                ),
            };
            // SAFETY: as above; only the routing byte changes, flag bits are kept.
            unsafe { (*pd).dlvr_mode = (dlvr & !GNI_DLVMODE_ROUTING_MASK) | routing };
            (class, reason)
        } else {
            (class_of(dlvr), Reason::Passthrough.index())
        };
        let c = tally::Count { api: tally::Api::Ugni, class, reason, messages: 1, bytes };
        // SAFETY: forwarding the caller's arguments.
        return unsafe { count_and_forward(real_fn, ep, pd, c) };
    }
    // SAFETY: same arguments.
    unsafe { guarded_post(real, real_fn, ep, pd, None) }
}

/// Count a post of the fast path as `c` and forward it once ([`refused_if`]). A thread without
/// a block of its own at its home slot (its first post, or a crowded table) counts and forwards
/// out of line, so that the fast path makes no call between its count and its forward.
///
/// # Safety
/// As [`post`].
#[inline(always)]
unsafe fn count_and_forward(
    real_fn: PostFn,
    ep: GniEpHandle,
    pd: *mut GniPostDescriptor,
    c: tally::Count,
) -> GniReturn {
    if !tally::count_own(c) {
        // SAFETY: the caller's arguments.
        return unsafe { count_elsewhere_and_forward(real_fn, ep, pd, c.class, c.reason, c.bytes) };
    }
    // SAFETY: the caller's arguments, forwarded once.
    refused_if(unsafe { real_fn(ep, pd) }, c)
}

/// [`count_and_forward`] for a thread that owns no block at its home slot.
///
/// # Safety
/// As [`post`].
#[cold]
#[inline(never)]
unsafe fn count_elsewhere_and_forward(
    real_fn: PostFn,
    ep: GniEpHandle,
    pd: *mut GniPostDescriptor,
    class: usize,
    reason: usize,
    bytes: u64,
) -> GniReturn {
    // In registers: a `Count` in memory would be stored on every post, before the branch here.
    let c = tally::Count { api: tally::Api::Ugni, class, reason, messages: 1, bytes };
    tally::count_all(c);
    // SAFETY: the caller's arguments, forwarded once.
    refused_if(unsafe { real_fn(ep, pd) }, c)
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
    // From the fast path (`crossed`): initialised, ready, not a fork child still without its own
    // state (its first posts leave the fast path), and a non-null descriptor.
    if crossed.is_none() {
        init::ensure_init();
        state::after_fork_in_child();
        if pd.is_null() || state::inert() {
            // SAFETY: the caller's arguments, untouched (a NULL descriptor is the real function's
            // to report).
            return unsafe { real_fn(ep, pd) };
        }
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
            // Not counted yet (`route` counts right before it forwards): the record holds what
            // went out, the caller's own routing.
            let c =
                tally::count(class_of(original), Reason::Passthrough, post_payload_bytes((*pd).r#type, (*pd).length));
            refused_if(real_fn(ep, pd), c)
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
    let (dlvr, length, post_type) = unsafe { ((*pd).dlvr_mode, (*pd).length, (*pd).r#type) };
    let bytes = post_payload_bytes(post_type, length);
    let transfer = Transfer::of_post_type(post_type);
    let class = topology::destination_class(control::policy(w), ep as usize);
    let msg = Message { bytes, transfer, endpoint: ep as usize as u64, class, posted_ns: None };
    let call = Call { api: tally::Api::Ugni, msg, messages: 1 };
    let apply = |m: Option<RoutingMode>| match m {
        Some(m) => {
            // SAFETY: as above; only the routing byte changes.
            unsafe { (*pd).dlvr_mode = with_mode(dlvr, m) };
            m.index()
        }
        None => class_of(dlvr),
    };
    let forward = || {
        // SAFETY: the caller's arguments, forwarded once.
        let sent = unsafe { real_fn(ep, pd) };
        *rc = Some(sent);
        sent == GNI_RC_SUCCESS
    };
    let routed = route::route(w, &call, crossed, routable(dlvr, post_type), apply, forward);
    if w & TRACE != 0 {
        trace_post(real, post_type, dlvr, &call.msg, &routed);
    }
}

/// The trace line of a post. Out of line: its frame (the line, the serialisation) is not every
/// post's; on the read path each stack line a post touches after its send is a cache miss.
#[cold]
#[inline(never)]
fn trace_post(real: &Real, post_type: GniPostType, dlvr: u16, msg: &Message, routed: &route::Routed) {
    let bytes = msg.bytes;
    state::TRACE.write(&trace::Line {
        t_ns: sys::now_ns(),
        api: tally::Api::Ugni.name(),
        call: real.name(),
        post_type: post_type_name(post_type),
        messages: 1,
        bytes,
        flits: request_flits(bytes, msg.transfer),
        packets: packets(bytes),
        latency_us: routed.window.map(|w| w.latency_us),
        stall_ratio: routed.window.map(|w| w.stall_ratio),
        requested: dlvr_mode_name(dlvr),
        chosen: routed.mode.map_or_else(|| dlvr_mode_name(dlvr), |m| m.name()),
        reason: routed.reason.name(),
        destination: msg.class.name(),
        dmapp_table: None,
    });
}

// ---------------------------------------------------------------------------------------------
// SMSG: routed per NIC with GNI_SmsgSetDeliveryMode on every NIC handle the application attached.

/// Make every NIC's SMSG mode follow the control word (see [`crate::nics::NicTable::steer`]).
fn steer(w: u32) {
    let Some(set) = SMSG_SET_DELIVERY_MODE.get::<SmsgSetDeliveryModeFn>() else { return };
    NICS.steer(w, |nic, mode| {
        // SAFETY: a NIC handle returned by a successful GNI_CdmAttach whose CDM is not destroyed
        // (destruction removes it under the table's lock, which steering holds).
        unsafe { set(nic as GniNicHandle, mode) == GNI_RC_SUCCESS }
    });
}

/// The non-adaptive mode the application set on the NIC `ep` was created on: the library never
/// steers that NIC, so the send goes out with it. No lock and no allocation, and while no NIC is
/// pinned (the common case) one load.
#[inline(always)]
fn pinned_nic_mode(ep: usize) -> Option<u16> {
    if !nics::any_pinned() {
        return None;
    }
    pinned_lookup(ep)
}

/// Out of line: only a process that pinned a NIC runs it.
#[inline(never)]
fn pinned_lookup(ep: usize) -> Option<u16> {
    nics::pinned_mode(endpoints::local_nic(ep)?)
}

/// `rc` of a message counted as `c` before it was forwarded: when uGNI refused it (an SMSG send
/// without a credit, `GNI_RC_NOT_DONE`; a post to a full queue) it sent nothing, and the caller
/// sends it again: its count moves to the refused ones ([`tally::refused`]).
#[inline(always)]
fn refused_if(rc: GniReturn, c: tally::Count) -> GniReturn {
    tally::settle(rc == GNI_RC_SUCCESS, c);
    rc
}

/// An SMSG send on endpoint `ep`: steer the NICs if the policy changed, count it (with the
/// application's own mode when its NIC is pinned), forward it once, and take the count back to
/// the refused ones when uGNI refused it ([`refused_if`]).
pub fn smsg_send(
    real: &Real,
    ep: GniEpHandle,
    bytes: u64,
    forward: impl FnOnce(*mut c_void) -> GniReturn,
) -> GniReturn {
    let Some(addr) = real.addr() else { return missing(real) };
    let w = control::load();
    if from_inside_dmapp(w) {
        return forward(addr);
    }
    let ep = ep as usize;
    let class_reason = |w: u32, pinned: Option<u16>| match (pinned, control::below_threshold_mode(w)) {
        (Some(m), _) => (class_of(m), Reason::Passthrough, None),
        (None, Some(m)) => {
            (m.index(), if control::policy(w).is_automatic() { Reason::Smsg } else { Reason::Fixed }, Some(m))
        }
        (None, None) => (CALLER_SMSG, Reason::Passthrough, None),
    };
    if w & FAST != 0 && NICS.steered_for(w) {
        let (class, reason, _) = class_reason(w, pinned_nic_mode(ep));
        let c = tally::count(class, reason, bytes);
        return refused_if(forward(addr), c);
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
        let pinned = pinned_nic_mode(ep);
        if w & READY == 0 {
            let class = pinned.map_or(CALLER_SMSG, class_of);
            let c = tally::count(class, Reason::Passthrough, bytes);
            rc = forward.take().map(|f| refused_if(f(addr), c));
            return;
        }
        // Steering holds the NIC table: a send made from inside it (re-entry) skips steering.
        if let Some(_inside) = Inside::enter() {
            steer(w);
        }
        let (class, reason, mode) = class_reason(w, pinned);
        let c = tally::count(class, reason, bytes);
        rc = forward.take().map(|f| refused_if(f(addr), c));
        if w & TRACE != 0 {
            // What the NIC sends with: the application's pinned mode, the library's, or (neither)
            // whatever the application left on it.
            let nic = pinned.map_or("NIC", dlvr_mode_name);
            state::TRACE.write(&trace::Line {
                t_ns: sys::now_ns(),
                api: tally::Api::Ugni.name(),
                call: real.name(),
                post_type: "SMSG",
                messages: 1,
                bytes,
                flits: request_flits(bytes, Transfer::Put),
                packets: packets(bytes),
                latency_us: None,
                stall_ratio: None,
                requested: nic,
                chosen: mode.map_or(nic, RoutingMode::name),
                reason: reason.name(),
                destination: DestinationClass::Unknown.name(),
                dmapp_table: None,
            });
        }
    }));
    forward_once(outcome, rc, || forward.take().map_or(GNI_RC_INVALID_STATE, |f| f(addr)))
}
