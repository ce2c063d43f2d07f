//! A fixed table of values keyed by C handles (heap pointers: an endpoint, a NIC), open
//! addressing from the handle's home: a lookup takes no lock and no allocation, and a claim
//! never waits (one compare-and-swap per slot it tries). A slot keeps its handle until the
//! handle is released (its object destroyed); the slot is then free for another handle but not
//! empty ([`GONE`]), so that the handles placed past it are still found. A handle seen again
//! finds its slot.
//! All zero until used, so a static table lives in `.bss`, in zero pages.

use std::sync::atomic::{AtomicUsize, Ordering::*};

/// Slots tried from a handle's home before giving up (a full neighbourhood: not remembered).
const PROBES: usize = 64;
/// The key of a slot whose handle was released: free to claim, but a lookup goes on past it
/// (0 ends a lookup: no handle was ever placed further). No heap pointer is 1.
const GONE: usize = 1;

/// `N` slots (a power of two) of `V`, each with its handle.
pub struct Keyed<V: 'static, const N: usize>(pub [Slot<V>; N]);

/// A handle (0: never used, [`GONE`]: released) and its value.
pub struct Slot<V> {
    key: AtomicUsize,
    value: V,
}

impl<V> Slot<V> {
    /// A free slot holding `value` (all zero bits, so that the table is in `.bss`).
    pub const fn new(value: V) -> Self {
        Slot { key: AtomicUsize::new(0), value }
    }
}

impl<V, const N: usize> Keyed<V, N> {
    fn probe(&self, key: usize) -> impl Iterator<Item = &Slot<V>> {
        const { assert!(N.is_power_of_two()) };
        // The low bits are alignment; the multiply spreads the rest.
        let home = (key >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> (usize::BITS - N.trailing_zeros());
        (0..PROBES).map(move |k| &self.0[(home + k) % N])
    }

    /// The value of `key`, taking a free slot near its home if it has none; `None` for the null
    /// handle or a full neighbourhood. The caller sets the value of a slot it took: a released
    /// slot holds what its last handle's release left there.
    pub fn claim(&self, key: usize) -> Option<&V> {
        if key == 0 || key == GONE {
            return None;
        }
        if let Some(value) = self.find(key) {
            return Some(value);
        }
        // The first free slot (never used, or released) from the home. Two threads claiming the
        // same handle meet at the same slot: the loser's compare-and-swap sees the winner's key.
        // (Unless a release between their passes frees an earlier slot: then the handle has two
        // slots, and lookups find the first. Claims of one handle race only in a program that
        // creates and binds an endpoint from two threads at once.)
        self.probe(key)
            .find(|slot| {
                let seen = slot.key.load(Acquire);
                if seen == key {
                    return true;
                }
                (seen == 0 || seen == GONE)
                    && match slot.key.compare_exchange(seen, key, AcqRel, Acquire) {
                        Ok(_) => true,
                        Err(other) => other == key,
                    }
            })
            .map(|slot| &slot.value)
    }

    /// The value of `key`, if it has a slot.
    #[inline]
    pub fn find(&self, key: usize) -> Option<&V> {
        for slot in self.probe(key) {
            match slot.key.load(Acquire) {
                0 => return None,
                k if k == key => return Some(&slot.value),
                _ => {}
            }
        }
        None
    }

    /// `key`'s handle is gone (its object destroyed; the handle may come back as another's): its
    /// slot is free for the next handle that needs one. The caller has reset its value first.
    pub fn release(&self, key: usize) {
        if key == 0 || key == GONE {
            return;
        }
        if let Some(slot) = self.probe(key).find(|slot| slot.key.load(Acquire) == key) {
            _ = slot.key.compare_exchange(key, GONE, AcqRel, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table small enough that churn through it crosses its size many times.
    static SMALL: Keyed<AtomicUsize, 256> = Keyed([const { Slot::new(AtomicUsize::new(0)) }; 256]);

    #[test]
    fn released_slots_are_claimed_again_so_churn_never_fills_the_table() {
        // 100 handles alive at a time, 100,000 handles over the run: without release the 256
        // slots are full after about 256 distinct handles.
        let handle = |i: usize| 0x7f00_0000_0000 + (i << 6);
        let mut unremembered = 0;
        for i in 0..100_000 {
            match SMALL.claim(handle(i)) {
                Some(v) => v.store(i, Relaxed),
                None => unremembered += 1,
            }
            if i >= 100 {
                let old = handle(i - 100);
                if let Some(v) = SMALL.find(old) {
                    assert_eq!(v.load(Relaxed), i - 100, "a live handle keeps its value");
                    v.store(0, Relaxed);
                }
                SMALL.release(old);
                assert!(SMALL.find(old).is_none(), "a released handle is not found");
            }
        }
        assert_eq!(unremembered, 0);
        // The 100 alive are all found, past the released slots between them and their homes.
        for i in 100_000 - 100..100_000 {
            assert_eq!(SMALL.find(handle(i)).map(|v| v.load(Relaxed)), Some(i));
        }
        // A handle claimed again finds its slot, not a second one.
        let last = handle(99_999);
        assert!(std::ptr::eq(SMALL.claim(last).unwrap(), SMALL.find(last).unwrap()));
    }
}
