//! Event queue: a calendar (timing wheel) of `B` buckets of `2^shift` ticks each, a small binary heap
//! for the bucket being processed, and an overflow heap for events beyond the wheel's horizon.
//! Events are totally ordered by (time, insertion sequence): the order is deterministic and does not
//! depend on the queue's internals.

use std::collections::BinaryHeap;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Ev {
    pub key: u128, // time << 64 | seq
    pub a: u32,
    pub b: u32,
}
impl Ev {
    #[inline]
    pub fn time(&self) -> u64 {
        (self.key >> 64) as u64
    }
}
impl Ord for Ev {
    #[inline]
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.key.cmp(&self.key) // min-heap
    }
}
impl PartialOrd for Ev {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

pub struct Calendar {
    shift: u32,
    mask: u64,
    buckets: Vec<Vec<Ev>>,
    in_wheel: usize,
    cur: BinaryHeap<Ev>,
    cur_bucket: u64,
    far: BinaryHeap<Ev>,
    seq: u64,
}

impl Calendar {
    pub fn new(shift: u32, log2_buckets: u32) -> Self {
        let n = 1usize << log2_buckets;
        Calendar {
            shift,
            mask: (n - 1) as u64,
            buckets: (0..n).map(|_| Vec::new()).collect(),
            in_wheel: 0,
            cur: BinaryHeap::with_capacity(1024),
            cur_bucket: 0,
            far: BinaryHeap::new(),
            seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.in_wheel + self.cur.len() + self.far.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn push(&mut self, t: u64, a: u32, b: u32) {
        self.seq += 1;
        let ev = Ev { key: ((t as u128) << 64) | self.seq as u128, a, b };
        self.place(ev);
    }

    #[inline]
    fn place(&mut self, ev: Ev) {
        let bi = ev.time() >> self.shift;
        if bi <= self.cur_bucket {
            self.cur.push(ev);
        } else if bi <= self.cur_bucket + self.mask {
            self.buckets[(bi & self.mask) as usize].push(ev);
            self.in_wheel += 1;
        } else {
            self.far.push(ev);
        }
    }

    /// Time of the earliest event, advancing the wheel as needed.
    #[inline]
    pub fn peek_time(&mut self) -> Option<u64> {
        loop {
            if let Some(e) = self.cur.peek() {
                return Some(e.time());
            }
            if !self.advance() {
                return None;
            }
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Ev> {
        loop {
            if let Some(e) = self.cur.pop() {
                return Some(e);
            }
            if !self.advance() {
                return None;
            }
        }
    }

    /// Move to the next non-empty bucket (cur is empty). Returns false if no events remain.
    fn advance(&mut self) -> bool {
        if self.in_wheel == 0 {
            match self.far.peek() {
                None => return false,
                Some(e) => self.cur_bucket = (e.time() >> self.shift).max(self.cur_bucket + 1) - 1,
            }
        }
        loop {
            self.cur_bucket += 1;
            // pull overflow events that are now within the horizon
            while let Some(e) = self.far.peek() {
                if (e.time() >> self.shift) <= self.cur_bucket + self.mask {
                    let e = self.far.pop().unwrap();
                    let bi = e.time() >> self.shift;
                    if bi <= self.cur_bucket {
                        self.cur.push(e);
                    } else {
                        self.buckets[(bi & self.mask) as usize].push(e);
                        self.in_wheel += 1;
                    }
                } else {
                    break;
                }
            }
            let b = &mut self.buckets[(self.cur_bucket & self.mask) as usize];
            if !b.is_empty() {
                self.in_wheel -= b.len();
                for e in b.drain(..) {
                    self.cur.push(e);
                }
            }
            if !self.cur.is_empty() {
                return true;
            }
            if self.in_wheel == 0 && self.far.is_empty() {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn calendar_orders_like_a_heap() {
        let mut c = Calendar::new(3, 4);
        let mut rng = Rng::new(7);
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut now = 0u64;
        let mut seq = 0u64;
        let mut out = Vec::new();
        for round in 0..2000 {
            for _ in 0..rng.below(4) {
                let dt = if rng.below(10) == 0 { rng.below(5000) as u64 } else { rng.below(40) as u64 };
                seq += 1;
                c.push(now + dt, seq as u32, 0);
                reference.push((now + dt, seq));
            }
            if round % 3 != 0 {
                if let Some(e) = c.pop() {
                    assert!(e.time() >= now);
                    now = e.time();
                    out.push((e.time(), e.a as u64));
                }
            }
        }
        while let Some(e) = c.pop() {
            out.push((e.time(), e.a as u64));
        }
        assert_eq!(out.len(), reference.len());
        for w in out.windows(2) {
            assert!(w[0] <= w[1], "{:?}", w);
        }
    }
}
