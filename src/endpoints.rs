//! The remote NIC address of each endpoint, for per-destination routing: a post names only its
//! endpoint, and the endpoint's destination is what `GNI_EpBind` gave it (forgotten again at
//! `GNI_EpUnbind` and `GNI_EpDestroy`). A fixed table of atomics, open addressing on the handle:
//! the decision path looks an endpoint up without a lock or an allocation, and binding never waits.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// Endpoints remembered at most (MPI binds one per peer; 16 bytes each, in zero pages until used).
pub const SLOTS: usize = 1 << 16;
/// Slots probed from an endpoint's home before giving up (a full neighbourhood: not remembered).
const PROBES: usize = 64;
/// What `nic` holds for an endpoint that is not bound.
const UNBOUND: u32 = 0;

struct Slot {
    /// The endpoint handle; 0: free. A slot once taken keeps its handle (handles are reused by
    /// the application's allocator, and a rebound endpoint finds its slot again).
    ep: AtomicUsize,
    /// The bound NIC address plus one; [`UNBOUND`] (so that the table is all zero, in `.bss`: a
    /// table of non-zero values is a MiB of the library's file, read page by page as it is used).
    nic: AtomicU32,
}

static TABLE: [Slot; SLOTS] = [const { Slot { ep: AtomicUsize::new(0), nic: AtomicU32::new(UNBOUND) } }; SLOTS];

/// Binds that found no free slot near their endpoint's home: those endpoints have no remembered
/// destination ([`forgotten`]).
static FORGOTTEN: AtomicU64 = AtomicU64::new(0);

fn home(ep: usize) -> usize {
    // Handles are heap pointers: the low bits are alignment, the multiply spreads the rest.
    (ep >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> (usize::BITS - SLOTS.trailing_zeros())
}

fn probe(ep: usize) -> impl Iterator<Item = &'static Slot> {
    let h = home(ep);
    (0..PROBES).map(move |k| &TABLE[(h + k) % SLOTS])
}

/// `ep` is bound to the NIC at `nic` (after a successful `GNI_EpBind`).
pub fn bound(ep: usize, nic: u32) {
    if ep == 0 {
        return;
    }
    for slot in probe(ep) {
        match slot.ep.compare_exchange(0, ep, AcqRel, Acquire) {
            Ok(_) => {}
            Err(other) if other == ep => {}
            Err(_) => continue,
        }
        // (u32::MAX, which no NIC has, reads as unbound.)
        slot.nic.store(nic.wrapping_add(1), Release);
        return;
    }
    FORGOTTEN.fetch_add(1, Relaxed);
}

/// How many binds the table had no room for (a process bound to more peers than it holds).
pub fn forgotten() -> u64 {
    FORGOTTEN.load(Relaxed)
}

/// `ep` is unbound or destroyed.
pub fn unbound(ep: usize) {
    if let Some(slot) = probe(ep).find(|s| s.ep.load(Acquire) == ep) {
        slot.nic.store(UNBOUND, Release);
    }
}

/// The NIC address `ep` is bound to, if the library saw the bind.
#[inline]
pub fn remote_nic(ep: usize) -> Option<u32> {
    for slot in probe(ep) {
        match slot.ep.load(Acquire) {
            0 => return None,
            e if e == ep => return slot.nic.load(Acquire).checked_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_are_remembered_until_unbound_and_rebinds_replace() {
        let (a, b) = (0x7f00_1234_5670_usize, 0x7f00_1234_5680_usize);
        assert_eq!(remote_nic(a), None);
        bound(a, 0x100);
        bound(b, 0x101);
        assert_eq!((remote_nic(a), remote_nic(b)), (Some(0x100), Some(0x101)));
        unbound(a);
        assert_eq!((remote_nic(a), remote_nic(b)), (None, Some(0x101)));
        bound(a, 0x102);
        assert_eq!(remote_nic(a), Some(0x102));
        let many: Vec<usize> = (1..=1000).map(|k| a + (k << 6)).collect();
        for (i, &ep) in many.iter().enumerate() {
            bound(ep, i as u32);
        }
        assert!(many.iter().enumerate().all(|(i, &ep)| remote_nic(ep) == Some(i as u32)));
    }
}
