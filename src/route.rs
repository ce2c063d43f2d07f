//! The routing step both APIs share: from one intercepted call to the routing its messages go out
//! with, the forward, and the counters after it. uGNI applies a mode by rewriting the routing byte
//! of the caller's descriptor (`ugni`), DMAPP by changing the calling thread's routing attribute
//! (`dmapp`); everything else (the threshold, the decider, the counts) is the same, so a program
//! that mixes both keeps one engine state and one record.

use crate::control::{self, ENABLED, READY};
use crate::settings::TestPanic;
use crate::tally::{self, Api, Count};
use crate::{diag, mpi, state};
use aar_engine::{Message, Reason, RoutingMode, Window};

/// One intercepted call: the engine's message (one of `messages` alike, to one endpoint each).
pub struct Call {
    pub api: Api,
    pub msg: Message,
    pub messages: u64,
}

impl Call {
    /// Bytes of all its messages.
    pub fn bytes(&self) -> u64 {
        self.msg.bytes.saturating_mul(self.messages)
    }

    /// Count it, right before it is forwarded.
    fn count(&self, class: usize, reason: Reason) -> Count {
        let (api, messages, bytes) = (self.api, self.messages, self.bytes());
        let c = Count { api, class, reason: reason.index(), messages, bytes };
        tally::count_all(c);
        c
    }
}

/// The routing a call went out with, for its trace line.
pub struct Routed {
    /// `None`: the caller's own.
    pub mode: Option<RoutingMode>,
    pub reason: Reason,
    /// The counter window the decision used, or the latest one.
    pub window: Option<Window>,
}

/// Route `call` under control word `w`, forwarding it exactly once.
///
/// `routable`: the caller asked for an adaptive routing, which the library may change. `crossed`:
/// the fast path already added the call to the cumulative size (`None`: add it here). `apply`
/// puts a mode in force (`None`: the caller's own routing) and returns the routing class the
/// messages go out with, for the tally. `forward` says whether the real function took the call:
/// one it refused (no credit, a full queue: the caller tries again later) sent nothing and is
/// counted as refused, so that a retried message is counted once.
pub fn route(
    w: u32,
    call: &Call,
    crossed: Option<bool>,
    routable: bool,
    apply: impl FnOnce(Option<RoutingMode>) -> usize,
    forward: impl FnOnce() -> bool,
) -> Routed {
    if w & READY == 0 || w & ENABLED == 0 || !routable {
        // Counted also while another thread initialises (with AAR_DISABLE nothing is reported).
        let c = call.count(apply(None), Reason::Passthrough);
        tally::settle(forward(), c);
        return Routed { mode: None, reason: Reason::Passthrough, window: state::last_window() };
    }
    let crossed = crossed.unwrap_or_else(|| state::accumulate(call.bytes()));
    let mut slot = if crossed { state::try_decider() } else { None };
    let Some(decider) = slot.as_deref_mut().and_then(Option::as_mut) else {
        // Below the threshold, or another thread is deciding right now.
        if crossed && slot.is_none() {
            tally::count_undecided();
        }
        let (mode, reason) = match mpi::call_follow(w) {
            Some((m, reason)) => (Some(m), Reason::ALL.get(reason).copied().unwrap_or(Reason::Passthrough)),
            None => (control::below_threshold_mode(w), control::below_threshold_reason(w)),
        };
        let c = call.count(apply(mode), reason);
        tally::settle(forward(), c);
        return Routed { mode, reason, window: state::last_window() };
    };
    let started = decider.should_time().then(crate::sys::now_ns);
    let in_alltoall = decider.alltoall_hook && mpi::in_alltoall();
    let d = decider.decide(&call.msg, in_alltoall, w);
    let test_panic = decider.test_panic;
    if d.read_before {
        // The side changes with this message: close the old side's window before it goes out.
        decider.read_and_observe();
    }
    let class = apply(d.mode);
    if test_panic == Some(TestPanic::BeforeForward) {
        panic!("AAR_TEST_PANIC=before-forward");
    }
    let c = call.count(class, d.reason);
    tally::settle(forward(), c);
    if test_panic == Some(TestPanic::AfterForward) {
        panic!("AAR_TEST_PANIC=after-forward");
    }
    if d.read_counters {
        decider.after_send(started);
    }
    drop(slot);
    Routed { mode: d.mode, reason: d.reason, window: d.window }
}

/// Forward exactly once: the hook sets `rc` when it has called the real function; if it
/// panicked before that, undo what it changed and forward now (`fallback`).
pub fn forward_once<R>(outcome: std::thread::Result<()>, rc: Option<R>, fallback: impl FnOnce() -> R) -> R {
    if outcome.is_err() {
        diag::internal_error(if rc.is_some() {
            "the call had been forwarded"
        } else {
            "the call was forwarded unchanged"
        });
    }
    rc.unwrap_or_else(fallback)
}
