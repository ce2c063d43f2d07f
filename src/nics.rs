//! The NICs the application attached, for SMSG routing: short messages have no descriptor, so
//! their routing is the NIC's SMSG delivery mode, set with `GNI_SmsgSetDeliveryMode` on every
//! NIC handle the application attached (as the reference implementation does).
//!
//! A NIC the application set to a non-adaptive mode is never steered, and its sends are counted
//! and traced with that mode ([`pinned_mode`]): the SMSG fast path asks without a lock.

use crate::control;
use crate::diag;
use crate::handles::{Keyed, Slot};
use crate::trylock::{ForkHeld, TryLock};
use aar_engine::{requested_mode, with_mode};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::time::Duration;

struct Nic {
    cdm: usize,
    nic: usize,
    /// What the application asked for with GNI_SmsgSetDeliveryMode (uGNI's default: 0).
    caller_mode: u16,
    /// What the NIC is set to, if we or the caller set it.
    applied: Option<u16>,
}

/// NIC handles are few (one per CDM attach); more than this is not a real program.
const MAX_NICS: usize = 4096;
/// Adding or removing a NIC waits this long at most for a thread that is steering.
const WAIT: Duration = Duration::from_secs(1);

/// Marks a pinned mode (IN_ORDER's routing bits are 0x3, and a mode of 0 is ADAPTIVE0's).
const PINNED: u32 = 1 << 16;

/// The mode the application pinned each NIC handle to ([`PINNED`] with its non-adaptive mode; 0:
/// not pinned), written under the table's lock and read by every SMSG send without one. A NIC
/// with no room near its home is not remembered: its sends are counted as the library's.
static PINS: Keyed<AtomicU32, { 2 * MAX_NICS }> = Keyed([const { Slot::new(AtomicU32::new(0)) }; 2 * MAX_NICS]);
/// NICs pinned now: while 0 (the common case) a send looks nothing up.
static PINNED_NICS: AtomicU32 = AtomicU32::new(0);

/// Pin `nic` to the application's non-adaptive `mode`, or (`None`) unpin it. Under the table's
/// lock: one writer at a time.
fn pin(nic: usize, mode: Option<u16>) {
    let slot = match mode {
        Some(_) => PINS.claim(nic),
        None => PINS.find(nic),
    };
    let Some(slot) = slot else { return };
    let new = mode.map_or(0, |m| PINNED | u32::from(m));
    match (slot.swap(new, AcqRel) != 0, new != 0) {
        (false, true) => _ = PINNED_NICS.fetch_add(1, Release),
        (true, false) => _ = PINNED_NICS.fetch_sub(1, Release),
        _ => {}
    }
    if new == 0 {
        // Unpinned (set adaptive again, or its CDM destroyed): the slot is free for another NIC.
        PINS.release(nic);
    }
}

/// The non-adaptive SMSG mode the application set on NIC handle `nic`, if it did (no lock, no
/// allocation: the SMSG fast path asks).
#[inline]
pub fn pinned_mode(nic: usize) -> Option<u16> {
    let m = PINS.find(nic)?.load(Acquire);
    (m != 0).then_some(m as u16)
}

/// Whether any NIC is pinned now.
#[inline(always)]
pub fn any_pinned() -> bool {
    PINNED_NICS.load(Relaxed) != 0
}

/// The NIC handles of the process and what their SMSG modes were set to.
pub struct NicTable {
    nics: TryLock<Vec<Nic>>,
    /// Bumped when the set of NICs or a caller's mode changes.
    generation: AtomicU32,
    /// (generation, SMSG routing bits of the control word) the NICs were last steered to.
    steered: AtomicU64,
}

impl NicTable {
    /// No NIC yet.
    pub const fn new() -> Self {
        Self { nics: TryLock::new(Vec::new()), generation: AtomicU32::new(0), steered: AtomicU64::new(u64::MAX) }
    }

    fn key(&self, w: u32) -> u64 {
        (u64::from(self.generation.load(Acquire)) << 32) | u64::from(w & (control::ROUTING | control::REWRITE))
    }

    /// Every NIC already follows control word `w` (the SMSG fast path).
    #[inline]
    pub fn steered_for(&self, w: u32) -> bool {
        self.steered.load(Relaxed) == self.key(w)
    }

    /// Make every NIC's SMSG mode follow control word `w`: the below-threshold mode when routing
    /// (High Bias in automatic mode), the caller's own mode otherwise. A NIC the caller set to a
    /// non-adaptive mode is never touched. `set(nic, mode)` calls the real
    /// `GNI_SmsgSetDeliveryMode`, under the table's lock (so no NIC is removed meanwhile), and
    /// says whether it succeeded.
    pub fn steer(&self, w: u32, mut set: impl FnMut(usize, u16) -> bool) {
        let key = self.key(w);
        // Another thread steering (or a lock inherited held by a fork child): skip, retry next send.
        let Some(mut nics) = self.nics.try_lock() else { return };
        let wanted = control::below_threshold_mode(w);
        let mut all_done = true;
        for n in nics.iter_mut() {
            let target = match wanted {
                Some(m) if requested_mode(n.caller_mode).is_some() => with_mode(n.caller_mode, m),
                _ if n.applied.is_none() => continue,
                _ => n.caller_mode,
            };
            if n.applied == Some(target) {
                continue;
            }
            if set(n.nic, target) {
                n.applied = Some(target);
            } else {
                all_done = false;
            }
        }
        if all_done {
            self.steered.store(key, Release);
        }
    }

    /// A NIC the application attached, so SMSG traffic can be steered on it.
    pub fn attached(&self, cdm: usize, nic: usize) {
        let Some(mut nics) = self.nics.try_lock_for(WAIT) else { return };
        if nics.len() >= MAX_NICS {
            drop(nics);
            diag::warn(&format!(
                "more than {MAX_NICS} NIC handles attached; SMSG routing is not steered on the extra ones."
            ));
            return;
        }
        nics.push(Nic { cdm, nic, caller_mode: 0, applied: None });
        self.generation.fetch_add(1, Release);
    }

    /// Forget the NICs of a CDM before it is destroyed: their handles become invalid.
    pub fn cdm_destroyed(&self, cdm: usize) {
        let Some(mut nics) = self.nics.try_lock_for(WAIT) else { return };
        nics.retain(|n| {
            if n.cdm == cdm {
                pin(n.nic, None);
            }
            n.cdm != cdm
        });
        self.generation.fetch_add(1, Release);
    }

    /// The application sets a NIC's SMSG mode itself: `set` makes the real call (and says whether
    /// it succeeded) under the table's lock, so that no thread steering the NICs sets its own mode
    /// after the application's; on success the mode is remembered as the caller's wish (and, when
    /// it is not adaptive, as what the NIC's sends go out with). `set` is not called when the lock
    /// cannot be had within [`WAIT`] (the caller then forwards, unremembered).
    pub fn caller_set(&self, nic: usize, mode: u16, set: impl FnOnce() -> bool) {
        let Some(mut nics) = self.nics.try_lock_for(WAIT) else { return };
        if !set() {
            return;
        }
        pin(nic, requested_mode(mode).is_none().then_some(mode));
        if let Some(n) = nics.iter_mut().find(|n| n.nic == nic) {
            n.caller_mode = mode;
            n.applied = Some(mode);
        } else if nics.len() < MAX_NICS {
            nics.push(Nic { cdm: 0, nic, caller_mode: mode, applied: Some(mode) });
        }
        self.generation.fetch_add(1, Release);
    }
}

impl ForkHeld for NicTable {
    fn hold_for(&self, timeout: Duration) -> bool {
        self.nics.hold_for(timeout)
    }
    unsafe fn release(&self) {
        // SAFETY: forwarded contract.
        unsafe { self.nics.release() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nic_set_to_a_non_adaptive_mode_is_pinned_until_set_adaptive_or_destroyed() {
        let t = NicTable::new();
        let (a, b) = (0x7d00_1000_0000_usize, 0x7d00_2000_0000_usize);
        t.attached(1, a);
        t.attached(2, b);
        assert_eq!((pinned_mode(a), pinned_mode(b)), (None, None));
        t.caller_set(a, 0x3, || true);
        t.caller_set(b, 0x40, || true);
        assert_eq!((pinned_mode(a), pinned_mode(b)), (Some(0x3), None), "ADAPTIVE2 is the library's to steer");
        assert!(any_pinned());
        t.caller_set(a, 0x10, || true);
        assert_eq!(pinned_mode(a), Some(0x10));
        t.caller_set(a, 0x80, || true);
        assert_eq!(pinned_mode(a), None);
        t.caller_set(a, 0x3, || true);
        t.cdm_destroyed(1);
        assert_eq!(pinned_mode(a), None, "its handle may come back as another NIC's");
    }

    #[test]
    fn nics_pinned_and_unpinned_one_after_another_never_fill_the_pins() {
        // Four times the slots, each NIC pinned then set adaptive again.
        for i in 0..8 * MAX_NICS {
            let nic = 0x7c00_0000_0000 + (i << 12);
            pin(nic, Some(0x3));
            assert_eq!(pinned_mode(nic), Some(0x3), "NIC {i} pinned");
            pin(nic, None);
            assert_eq!(pinned_mode(nic), None);
        }
    }

    /// The application's own set is made under the table's lock, so that a thread steering the
    /// NICs cannot set its mode after the application's; a set uGNI refuses is not remembered.
    #[test]
    fn the_applications_set_is_made_under_the_lock_and_a_refused_one_is_not_remembered() {
        let t = NicTable::new();
        let c = 0x7d00_3000_0000_usize;
        t.attached(3, c);
        let mut held = false;
        t.caller_set(c, 0x3, || {
            // What a steering thread tries first.
            held = t.nics.try_lock().is_none();
            false
        });
        assert!(held, "the table is held while the application's set is made");
        assert_eq!(pinned_mode(c), None, "refused: not pinned");
        t.caller_set(c, 0x3, || true);
        assert_eq!(pinned_mode(c), Some(0x3));
        t.cdm_destroyed(3);
    }
}
