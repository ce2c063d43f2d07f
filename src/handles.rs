//! A fixed table of values keyed by C handles (heap pointers: an endpoint, a NIC), open
//! addressing from the handle's home: a lookup takes no lock and no allocation, and a claim
//! never waits (one compare-and-swap per slot it tries). A slot once claimed keeps its handle:
//! handles come back from the application's allocator, and a handle seen again finds its slot.
//! All zero until used, so a static table lives in `.bss`, in zero pages.

use std::sync::atomic::{AtomicUsize, Ordering::*};

/// Slots tried from a handle's home before giving up (a full neighbourhood: not remembered).
const PROBES: usize = 64;

/// `N` slots (a power of two) of `V`, each with its handle.
pub struct Keyed<V: 'static, const N: usize>(pub [Slot<V>; N]);

/// A handle (0: free) and its value.
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
    /// handle or a full neighbourhood.
    pub fn claim(&self, key: usize) -> Option<&V> {
        if key == 0 {
            return None;
        }
        self.probe(key)
            .find(|slot| match slot.key.compare_exchange(0, key, AcqRel, Acquire) {
                Ok(_) => true,
                Err(other) => other == key,
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
}
