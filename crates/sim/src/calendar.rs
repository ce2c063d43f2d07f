//! Event queue: a calendar (timing wheel) of `B` buckets of `2^shift` ticks each, and an overflow
//! heap for events beyond the wheel's horizon. Events are totally ordered by (time, insertion
//! sequence): the order is deterministic and does not depend on the queue's internals.
//!
//! A bucket holds the events of one bucket-sized time slice in insertion order (overflow events
//! enter a bucket in (time, sequence) order, before any event pushed to it directly, which is
//! later), so a stable sort by time alone gives (time, sequence) order without storing the
//! sequence: when the wheel reaches a bucket, the bucket becomes the sorted run `cur` that events
//! are popped from. This is cheaper than a binary heap over the bucket, and events are 16 bytes.
//!
//! A drained bucket gives its memory back: the calendar holds the pending events, not a turn's
//! worth of them. Kept, every bucket would hold the capacity of the busiest slice it ever saw
//! (8,192 events, 128 KB, in each of the 4,096 buckets of a 9-group network at load 0.5: 512 MB
//! for about 340,000 pending events). Growing a bucket again from empty each turn measured no
//! slower than keeping it (fewer page faults make up for the reallocations).

use std::collections::BinaryHeap;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Ev {
    pub t: u64,
    pub a: u32,
    pub b: u32,
}
impl Ev {
    #[inline]
    pub fn time(&self) -> u64 {
        self.t
    }
}

/// An event beyond the wheel's horizon, ordered by (time, sequence) in the overflow heap.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct FarEv {
    key: u128, // time << 64 | seq
    a: u32,
    b: u32,
}
impl FarEv {
    #[inline]
    fn time(&self) -> u64 {
        (self.key >> 64) as u64
    }
}
impl Ord for FarEv {
    #[inline]
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.key.cmp(&self.key) // min-heap
    }
}
impl PartialOrd for FarEv {
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
    /// the current bucket's events sorted by (time, insertion); `cur[pos..]` are still pending
    cur: Vec<Ev>,
    pos: usize,
    cur_bucket: u64,
    far: BinaryHeap<FarEv>,
    seq: u64,
    /// counting sort of a bucket: events per tick within the bucket, and the sorted copy
    counts: Vec<usize>,
    sorted: Vec<Ev>,
}

impl Calendar {
    pub fn new(shift: u32, log2_buckets: u32) -> Self {
        let n = 1usize << log2_buckets;
        Calendar {
            shift,
            mask: (n - 1) as u64,
            buckets: (0..n).map(|_| Vec::new()).collect(),
            in_wheel: 0,
            cur: Vec::with_capacity(1024),
            pos: 0,
            cur_bucket: 0,
            far: BinaryHeap::new(),
            seq: 0,
            counts: Vec::new(),
            sorted: Vec::with_capacity(1024),
        }
    }

    pub fn len(&self) -> usize {
        self.in_wheel + (self.cur.len() - self.pos) + self.far.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn push(&mut self, t: u64, a: u32, b: u32) {
        let ev = Ev { t, a, b };
        let bi = t >> self.shift;
        if bi <= self.cur_bucket {
            // after every pending event of the same time (they were pushed earlier)
            if self.cur.last().is_none_or(|l| l.t <= t) {
                self.cur.push(ev);
            } else {
                let i = self.pos + self.cur[self.pos..].partition_point(|e| e.t <= t);
                self.cur.insert(i, ev);
            }
        } else if bi <= self.cur_bucket + self.mask {
            self.buckets[(bi & self.mask) as usize].push(ev);
            self.in_wheel += 1;
        } else {
            self.seq += 1;
            self.far.push(FarEv { key: ((t as u128) << 64) | self.seq as u128, a, b });
        }
    }

    /// Time of the earliest event, advancing the wheel as needed.
    #[inline]
    pub fn peek_time(&mut self) -> Option<u64> {
        if self.pos == self.cur.len() && !self.advance() {
            return None;
        }
        Some(self.cur[self.pos].t)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Ev> {
        if self.pos == self.cur.len() && !self.advance() {
            return None;
        }
        self.pos += 1;
        Some(self.cur[self.pos - 1])
    }

    /// The event `k` places after the next one, if it is already in the current bucket (for
    /// touching its data ahead of time; no effect on the order).
    #[inline]
    pub fn ahead(&self, k: usize) -> Option<&Ev> {
        self.cur.get(self.pos + k)
    }

    /// Sorts the new current bucket by time, stably: events of the same time stay in insertion
    /// order. Its events differ only in the low `shift` bits of their time, so a counting sort
    /// over those does it in one pass when the bucket holds more events than it has ticks.
    fn sort_cur(&mut self) {
        let ticks = 1usize << self.shift;
        if self.cur.len() < ticks / 4 || ticks > 1 << 16 {
            self.cur.sort_by_key(|e| e.t);
            return;
        }
        let low = ticks as u64 - 1;
        self.counts.clear();
        self.counts.resize(ticks + 1, 0);
        for e in &self.cur {
            self.counts[(e.t & low) as usize + 1] += 1;
        }
        for i in 1..=ticks {
            self.counts[i] += self.counts[i - 1];
        }
        self.sorted.clear();
        self.sorted.resize(self.cur.len(), Ev { t: 0, a: 0, b: 0 });
        for e in &self.cur {
            let k = (e.t & low) as usize;
            self.sorted[self.counts[k]] = *e;
            self.counts[k] += 1;
        }
        std::mem::swap(&mut self.cur, &mut self.sorted);
    }

    /// Make the next non-empty bucket current (the current one is exhausted). Returns false if
    /// no events remain.
    fn advance(&mut self) -> bool {
        self.cur.clear();
        self.pos = 0;
        if self.in_wheel == 0 {
            match self.far.peek() {
                None => return false,
                Some(e) => self.cur_bucket = (e.time() >> self.shift).max(self.cur_bucket + 1) - 1,
            }
        }
        loop {
            self.cur_bucket += 1;
            // overflow events now within the horizon go to their (still empty) buckets first, in
            // (time, sequence) order: every event pushed to those buckets later is later
            while let Some(e) = self.far.peek() {
                let bi = e.time() >> self.shift;
                if bi > self.cur_bucket + self.mask {
                    break;
                }
                let e = self.far.pop().unwrap();
                self.buckets[(bi & self.mask) as usize].push(Ev { t: e.time(), a: e.a, b: e.b });
                self.in_wheel += 1;
            }
            let b = &mut self.buckets[(self.cur_bucket & self.mask) as usize];
            if !b.is_empty() {
                self.in_wheel -= b.len();
                self.cur = std::mem::take(b);
                self.sort_cur();
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

    /// Pops in exactly the (time, insertion) order of a binary heap over (time, sequence), with
    /// pushes into the current bucket, within the wheel and beyond its horizon interleaved, for
    /// buckets of one tick, of few ticks (sorted by counting) and of many (sorted by comparison).
    #[test]
    fn calendar_orders_like_a_heap() {
        for shift in [0, 3, 6] {
            pops_like_a_heap(shift);
        }
    }

    /// A bucket gives its memory back once drained: after a burst that filled every bucket of
    /// the wheel, the calendar keeps only the last bucket's run and its sort buffer, not a turn's
    /// worth of events (a large network filled every bucket with thousands of events, kept for
    /// the whole run).
    #[test]
    fn drained_buckets_keep_no_memory() {
        let mut c = Calendar::new(2, 4);
        let per_bucket = 1000;
        for t in 0..16 * 4 {
            for i in 0..per_bucket / 4 {
                c.push(t, i, 0);
            }
        }
        let mut last = 0;
        while let Some(e) = c.pop() {
            assert!(e.time() >= last);
            last = e.time();
        }
        let held: usize = c.buckets.iter().map(Vec::capacity).sum();
        assert_eq!(held, 0, "events the drained buckets still have room for");
        assert!(c.cur.capacity() + c.sorted.capacity() <= 4 * per_bucket as usize);
    }

    fn pops_like_a_heap(shift: u32) {
        use std::cmp::Reverse;
        let mut c = Calendar::new(shift, 4);
        let mut rng = Rng::new(7);
        let mut reference = BinaryHeap::new();
        let mut now = 0u64;
        let mut seq = 0u32;
        let mut popped = 0;
        for round in 0..20_000 {
            for _ in 0..rng.below(4) {
                let dt = match rng.below(10) {
                    0 => rng.below(5000) as u64,
                    1 => 0,
                    _ => rng.below(40) as u64,
                };
                seq += 1;
                c.push(now + dt, seq, 0);
                reference.push(Reverse((now + dt, seq)));
            }
            if round % 3 != 0 {
                let e = c.pop();
                assert_eq!(e.map(|e| (e.time(), e.a)), reference.pop().map(|Reverse(k)| k));
                if let Some(e) = e {
                    now = e.time();
                    popped += 1;
                }
            }
            assert_eq!(c.len(), reference.len());
        }
        while let Some(e) = c.pop() {
            assert_eq!(Some((e.time(), e.a)), reference.pop().map(|Reverse(k)| k));
            popped += 1;
        }
        assert!(reference.is_empty());
        assert_eq!(popped, seq);
    }
}
