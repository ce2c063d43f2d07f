//! A completion queue: what posts and short messages deliver their events to and GNI_CqGetEvent,
//! GNI_CqWaitEvent and GNI_GetCompleted take them from. The registry holds the queues;
//! GNI_CqCreate and GNI_CqDestroy are in [`crate::domain`]. In a job the events are in a ring of
//! the rank's shared file ([`Ring`]), so other ranks deliver remote events into it and
//! GNI_CqWaitEvent sleeps on a futex of the ring; otherwise they are in the process.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::AtomicUsize;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use aar_abi::*;

use crate::cq_entry::{entry_with_ids, is_remote, overrun, status, ty, MSG_MASK, OVERRUN_ENTRY, TYPE_POST};
use crate::shm::{self, Ring, NO_RING};

pub struct Cq {
    /// Handle of the NIC the CQ was created on.
    pub nic: usize,
    capacity: usize,
    blocking: bool,
    handler: Option<GniCqHandler>,
    context: usize,
    state: Mutex<CqState>,
    ready: Condvar,
    /// Endpoints using this CQ as their source CQ (GNI_CqDestroy refuses while any remain).
    pub eps: AtomicUsize,
    /// In a job: the ring that holds the events, and its index in the rank's file.
    ring: Option<(&'static Ring, u32)>,
}

struct Event {
    entry: u64,
    /// The completed `gni_post_descriptor_t *` for local POST events, else 0.
    descr: usize,
}

#[derive(Default)]
struct CqState {
    events: VecDeque<Event>,
    /// Slots promised to posts that are transferring now, so a full CQ refuses new posts.
    reserved: usize,
    overrun: bool,
    /// Descriptors whose event was taken but not yet collected with GNI_GetCompleted.
    completed: VecDeque<(u32, usize)>,
    next_completion_id: u32,
}

impl Cq {
    pub fn new(nic: usize, entry_count: u32, blocking: bool, handler: Option<GniCqHandler>, context: usize) -> Cq {
        let capacity = entry_count as usize;
        Cq {
            nic,
            capacity,
            blocking,
            handler,
            context,
            // Room made now, so that a post and its completion allocate nothing (a program at its
            // memory limit still posts).
            state: Mutex::new(CqState {
                events: VecDeque::with_capacity(capacity.min(4096)),
                completed: VecDeque::with_capacity((capacity + 1).min(4096)),
                ..CqState::default()
            }),
            ready: Condvar::new(),
            eps: AtomicUsize::new(0),
            ring: None,
        }
    }

    /// A CQ whose events are in `ring` (claimed for it), ring number `index` of this rank.
    pub fn in_ring(mut self, ring: &'static Ring, index: u32) -> Cq {
        self.ring = Some((ring, index));
        self
    }

    /// The number of its ring in the rank's file, or [`NO_RING`] outside a job.
    pub fn ring_index(&self) -> u32 {
        self.ring.map_or(NO_RING, |(_, i)| i)
    }

    fn lock(&self) -> MutexGuard<'_, CqState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Promises `n` event slots to a post about to run; false when the CQ has no room (the post
    /// must then fail with GNI_RC_ERROR_RESOURCE, as a real NIC refuses more outstanding posts).
    pub fn reserve(&self, n: usize) -> bool {
        if let Some((ring, _)) = self.ring {
            return ring.reserve(n as u32);
        }
        let mut s = self.lock();
        if s.events.len() + s.reserved + n > self.capacity {
            return false;
        }
        s.reserved += n;
        true
    }

    /// Gives back slots reserved by a post that then failed.
    pub fn unreserve(&self, n: usize) {
        if let Some((ring, _)) = self.ring {
            return ring.unreserve(n as u32);
        }
        let mut s = self.lock();
        s.reserved = s.reserved.saturating_sub(n);
    }

    /// Delivers a local POST completion into a reserved slot.
    pub fn push_post_completion(&self, inst_id: u32, descr: usize) {
        let mut s = self.lock();
        let id = s.next_completion_id;
        s.next_completion_id = id.wrapping_add(1);
        let entry = entry_with_ids(TYPE_POST, false, inst_id, id);
        if let Some((ring, _)) = self.ring {
            drop(s);
            ring.push(entry, descr as u64, true);
            return;
        }
        s.reserved = s.reserved.saturating_sub(1);
        s.events.push_back(Event { entry, descr });
        drop(s);
        self.ready.notify_all();
    }

    /// Delivers an event into a reserved slot.
    pub fn push_reserved(&self, entry: u64) {
        if let Some((ring, _)) = self.ring {
            ring.push(entry, 0, true);
            return;
        }
        let mut s = self.lock();
        s.reserved = s.reserved.saturating_sub(1);
        s.events.push_back(Event { entry, descr: 0 });
        drop(s);
        self.ready.notify_all();
    }

    /// Delivers an event nobody reserved room for (remote events): a full CQ overruns instead.
    pub fn push_unreserved(&self, entry: u64) {
        if let Some((ring, _)) = self.ring {
            ring.push(entry, 0, false);
            return;
        }
        let mut s = self.lock();
        if s.events.len() + s.reserved >= self.capacity {
            s.overrun = true;
        } else {
            s.events.push_back(Event { entry, descr: 0 });
        }
        drop(s);
        self.ready.notify_all();
    }

    /// Takes the next event if there is one (`Err(rc)` otherwise); once after an overrun,
    /// [`OVERRUN_ENTRY`] instead, which [`Cq::finish`] returns with GNI_RC_ERROR_RESOURCE.
    fn take(&self, s: &mut CqState) -> Result<u64, GniReturn> {
        let ev = match self.ring {
            Some((ring, _)) => match ring.take() {
                Ok((entry, descr)) => Event { entry, descr: descr as usize },
                Err(GNI_RC_ERROR_RESOURCE) => return Ok(OVERRUN_ENTRY),
                Err(rc) => return Err(rc),
            },
            None if s.overrun => {
                // Reported once; the CQ stays usable afterwards.
                s.overrun = false;
                return Ok(OVERRUN_ENTRY);
            }
            None => s.events.pop_front().ok_or(GNI_RC_NOT_DONE)?,
        };
        if ev.descr != 0 {
            s.completed.push_back(((ev.entry & MSG_MASK) as u32, ev.descr));
            // Callers that never collect descriptors must not grow this without bound.
            if s.completed.len() > self.capacity.max(1) {
                s.completed.pop_front();
            }
        }
        Ok(ev.entry)
    }

    /// The entry and code GetEvent/WaitEvent give: the overrun report without the handler (it
    /// is no event), any other entry after it.
    fn finish(&self, entry: u64) -> (u64, GniReturn) {
        if overrun(entry) {
            return (entry, GNI_RC_ERROR_RESOURCE);
        }
        let mut e = entry;
        if let Some(h) = self.handler {
            // SAFETY: the handler and its context were supplied together by the caller of
            // GNI_CqCreate, which is told the handler runs before GetEvent/WaitEvent returns.
            unsafe { h(&mut e, self.context as *mut c_void) };
        }
        let rc = if status(entry) != 0 { GNI_RC_TRANSACTION_ERROR } else { GNI_RC_SUCCESS };
        (entry, rc)
    }

    pub fn get_event(&self) -> Result<(u64, GniReturn), GniReturn> {
        let entry = self.take(&mut self.lock())?;
        Ok(self.finish(entry))
    }

    pub fn wait_event(&self, timeout_ms: u64) -> Result<(u64, GniReturn), GniReturn> {
        if !self.blocking {
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        // (uint64_t)-1 waits for ever; so does anything too large to add to now.
        let deadline = Instant::now().checked_add(Duration::from_millis(timeout_ms));
        if let Some((ring, _)) = self.ring {
            let mut got = Err(GNI_RC_NOT_DONE);
            let ready = shm::wait_until(&ring.seq, deadline, || {
                got = self.take(&mut self.lock());
                got != Err(GNI_RC_NOT_DONE)
            });
            return match (ready, got) {
                (false, _) => Err(GNI_RC_TIMEOUT),
                (true, got) => got.map(|entry| self.finish(entry)),
            };
        }
        let mut s = self.lock();
        loop {
            match self.take(&mut s) {
                Err(GNI_RC_NOT_DONE) => {}
                Err(rc) => return Err(rc),
                Ok(entry) => {
                    drop(s);
                    return Ok(self.finish(entry));
                }
            }
            s = match deadline {
                None => self.ready.wait(s).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(GNI_RC_TIMEOUT);
                    }
                    self.ready.wait_timeout(s, d - now).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }

    /// The descriptor of a local POST event already taken from this CQ.
    pub fn get_completed(&self, entry: u64) -> Option<usize> {
        if ty(entry) != TYPE_POST || is_remote(entry) || overrun(entry) {
            return None;
        }
        let id = (entry & MSG_MASK) as u32;
        let mut s = self.lock();
        let i = s.completed.iter().position(|&(c, _)| c == id)?;
        s.completed.remove(i).map(|(_, d)| d)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        if let Some((ring, _)) = self.ring {
            ring.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cq_entry::{data, inst_id, remote_post_entry};

    #[test]
    fn full_cq_refuses_reservations_and_overruns_remote_events() {
        let cq = Cq::new(0, 2, false, None, 0);
        assert!(cq.reserve(2));
        assert!(!cq.reserve(1));
        cq.push_post_completion(5, 0x1000);
        cq.push_unreserved(remote_post_entry(1)); // one slot still reserved: overrun
        assert_eq!(cq.get_event(), Ok((OVERRUN_ENTRY, GNI_RC_ERROR_RESOURCE)));
        let (e, rc) = cq.get_event().unwrap();
        assert_eq!((rc, inst_id(e)), (GNI_RC_SUCCESS, 5));
        assert_eq!(cq.get_completed(e), Some(0x1000));
        assert_eq!(cq.get_completed(e), None);
        assert_eq!(cq.get_event().unwrap_err(), GNI_RC_NOT_DONE);
        assert_eq!(cq.wait_event(0).unwrap_err(), GNI_RC_ERROR_RESOURCE, "non-blocking CQ");
        let blocking = Cq::new(0, 1, true, None, 0);
        assert_eq!(blocking.wait_event(1).unwrap_err(), GNI_RC_TIMEOUT);
    }

    #[test]
    fn an_overrun_is_reported_once_with_an_entry_that_says_so_and_completes_nothing() {
        for blocking in [false, true] {
            let cq = Cq::new(0, 1, blocking, None, 0);
            assert!(cq.reserve(1));
            cq.push_post_completion(5, 0x1000);
            let (done, _) = cq.get_event().unwrap(); // completion id 0 awaits GNI_GetCompleted
            cq.push_unreserved(remote_post_entry(1));
            cq.push_unreserved(remote_post_entry(2)); // a CQ of one entry: overrun
            let got = if blocking { cq.wait_event(0) } else { cq.get_event() };
            assert_eq!(got, Ok((OVERRUN_ENTRY, GNI_RC_ERROR_RESOURCE)), "blocking: {blocking}");
            assert!(overrun(OVERRUN_ENTRY) && status(OVERRUN_ENTRY) == 0);
            assert_eq!(cq.get_completed(OVERRUN_ENTRY), None, "it is no post's completion");
            assert_eq!(cq.get_completed(done), Some(0x1000));
            let (e, rc) = cq.get_event().unwrap(); // then the event the CQ kept
            assert_eq!((rc, data(e), overrun(e)), (GNI_RC_SUCCESS, 1, false));
            assert_eq!(cq.get_event(), Err(GNI_RC_NOT_DONE));
        }
    }
}
