//! The two NICs of each endpoint. Its remote NIC address, for per-destination routing: a post
//! names only its endpoint, and the endpoint's destination is what `GNI_EpBind` gave it (forgotten
//! again at `GNI_EpUnbind` and `GNI_EpDestroy`). Its local NIC handle, the one `GNI_EpCreate` made
//! it on (forgotten at `GNI_EpDestroy`), for SMSG: a send goes out with its NIC's SMSG mode. A fixed
//! table of atomics, open addressing on the handle: the decision path and the SMSG fast path look
//! an endpoint up without a lock or an allocation, and creating or binding never waits.

use crate::handles::{Keyed, Slot};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// Endpoints remembered at most (MPI binds one per peer; 24 bytes each, in zero pages until used).
pub const SLOTS: usize = 1 << 16;
/// What `nic` holds for an endpoint that is not bound.
const UNBOUND: u32 = 0;

struct Endpoint {
    /// The bound NIC address plus one; [`UNBOUND`] (so that the table is all zero, in `.bss`: a
    /// table of non-zero values is a MiB of the library's file, read page by page as it is used).
    nic: AtomicU32,
    /// The NIC handle the endpoint was created on; 0: not seen.
    local: AtomicUsize,
}

static TABLE: Keyed<Endpoint, SLOTS> =
    Keyed([const { Slot::new(Endpoint { nic: AtomicU32::new(UNBOUND), local: AtomicUsize::new(0) }) }; SLOTS]);

/// Binds that found no free slot near their endpoint's home: those endpoints have no remembered
/// destination ([`forgotten`]).
static FORGOTTEN: AtomicU64 = AtomicU64::new(0);

/// `ep` was created on the NIC handle `nic` (after a successful `GNI_EpCreate`). Without a free
/// slot it is not remembered: its SMSG sends are counted as if its NIC followed the library.
pub fn created(ep: usize, nic: usize) {
    if let Some(slot) = TABLE.claim(ep) {
        slot.local.store(nic, Release);
    }
}

/// `ep` is bound to the NIC at `nic` (after a successful `GNI_EpBind`).
pub fn bound(ep: usize, nic: u32) {
    if ep == 0 {
        return;
    }
    match TABLE.claim(ep) {
        // (u32::MAX, which no NIC has, reads as unbound.)
        Some(slot) => slot.nic.store(nic.wrapping_add(1), Release),
        None => _ = FORGOTTEN.fetch_add(1, Relaxed),
    }
}

/// How many binds the table had no room for (a process bound to more peers than it holds).
pub fn forgotten() -> u64 {
    FORGOTTEN.load(Relaxed)
}

/// What the table knew of an endpoint before it was forgotten: given back to [`restore`] when
/// uGNI refused the unbind or the destroy, and the endpoint lives on as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    remote: Option<u32>,
    local: Option<usize>,
}

/// `ep` is unbound (`GNI_EpUnbind`, before the real call: once it returns, another thread may
/// bind the endpoint again): it keeps its NIC.
pub fn unbound(ep: usize) -> Known {
    let known = Known { remote: remote_nic(ep), local: None };
    if let Some(slot) = TABLE.find(ep) {
        slot.nic.store(UNBOUND, Release);
    }
    known
}

/// `ep` is destroyed (`GNI_EpDestroy`, before the real call: once it returns, its handle may come
/// back as another endpoint's): its slot is free for the next endpoint (a process that creates
/// and destroys endpoints for ever keeps finding room).
pub fn destroyed(ep: usize) -> Known {
    let known = Known { remote: remote_nic(ep), local: local_nic(ep) };
    if let Some(slot) = TABLE.find(ep) {
        slot.nic.store(UNBOUND, Release);
        slot.local.store(0, Release);
        TABLE.release(ep);
    }
    known
}

/// uGNI refused the unbind or the destroy that forgot `known` of `ep`: the endpoint is as it was.
pub fn restore(ep: usize, known: Known) {
    if let Some(nic) = known.local {
        created(ep, nic);
    }
    if let Some(nic) = known.remote {
        bound(ep, nic);
    }
}

/// The NIC address `ep` is bound to, if the library saw the bind.
#[inline]
pub fn remote_nic(ep: usize) -> Option<u32> {
    TABLE.find(ep)?.nic.load(Acquire).checked_sub(1)
}

/// The NIC handle `ep` was created on, if the library saw the creation.
#[inline]
pub fn local_nic(ep: usize) -> Option<usize> {
    TABLE.find(ep).map(|s| s.local.load(Acquire)).filter(|&nic| nic != 0)
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

    #[test]
    fn endpoints_created_and_destroyed_for_ever_keep_finding_room() {
        // Twice the table's slots, 64 endpoints alive at a time, each created, bound, destroyed.
        let forgotten_before = forgotten();
        let ep = |i: usize| 0x7b00_0000_0000 + (i << 7);
        for i in 0..2 * SLOTS {
            created(ep(i), 0x5000);
            bound(ep(i), i as u32);
            assert_eq!((local_nic(ep(i)), remote_nic(ep(i))), (Some(0x5000), Some(i as u32)), "endpoint {i}");
            if i >= 64 {
                destroyed(ep(i - 64));
                assert_eq!((local_nic(ep(i - 64)), remote_nic(ep(i - 64))), (None, None));
            }
        }
        assert_eq!(forgotten(), forgotten_before, "no bind found the table full");
    }

    #[test]
    fn an_endpoint_keeps_its_nic_until_destroyed() {
        let (ep, nic) = (0x7e00_4321_0000_usize, 0x5555_0000_usize);
        assert_eq!(local_nic(ep), None);
        created(ep, nic);
        bound(ep, 7);
        assert_eq!((local_nic(ep), remote_nic(ep)), (Some(nic), Some(7)));
        unbound(ep);
        assert_eq!((local_nic(ep), remote_nic(ep)), (Some(nic), None), "unbound, still on its NIC");
        let known = destroyed(ep);
        assert_eq!(local_nic(ep), None);
        bound(ep, 9);
        restore(ep, unbound(ep));
        assert_eq!((local_nic(ep), remote_nic(ep)), (None, Some(9)), "an unbind uGNI refused changes nothing");
        destroyed(ep);
        restore(ep, known);
        assert_eq!((local_nic(ep), remote_nic(ep)), (Some(nic), None), "a destroy uGNI refused changes nothing");
    }
}
