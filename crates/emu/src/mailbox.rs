//! An endpoint's SMSG mailbox, as GNI_SmsgInit makes it ([`crate::smsg`]): a ring of
//! `mbox_maxcredit` slots of `msg_maxsize` bytes, allocated once. A message is copied header then
//! data into the next free slot (so the data follows the header, as in a real mailbox). In a
//! job ([`SharedMailbox`]) the slots are the mailbox memory the program registered, and their
//! credit counters are in the rank's shared file, so that a sender in another process fills
//! them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aar_abi::*;

use crate::cq::Cq;
use crate::shm::{Mbox, MBOX_FREE};

pub struct Inbox {
    /// u64 words so the header handed to the application is 8-byte aligned.
    slots: Vec<Box<[u64]>>,
    slot_bytes: usize,
    tags: Vec<u8>,
    head: usize,
    count: usize,
    /// GNI_SmsgGetNext returned the head message and GNI_SmsgRelease has not been called yet.
    current: bool,
    /// Where arrival events go: the mailbox registration's dst_cq, else the endpoint's CQ.
    rx_cq: Option<Arc<Cq>>,
}

impl Inbox {
    /// An empty mailbox of `credits` slots of `slot_bytes` bytes; arrival events go to `rx_cq`.
    pub fn new(credits: usize, slot_bytes: usize, rx_cq: Option<Arc<Cq>>) -> Inbox {
        let slot_words = slot_bytes.div_ceil(8);
        Inbox {
            slots: (0..credits).map(|_| vec![0u64; slot_words].into_boxed_slice()).collect(),
            slot_bytes,
            tags: vec![0; credits],
            head: 0,
            count: 0,
            current: false,
            rx_cq,
        }
    }

    /// Copies header then data into the next free slot, tagged `tag`: the CQ its arrival event
    /// goes to. GNI_RC_ERROR_RESOURCE when the message does not fit a slot, GNI_RC_NOT_DONE when
    /// no slot is free (no credit).
    ///
    /// # Safety
    /// `header` and `data` are each readable for their lengths (and may be NULL only when their
    /// length is 0).
    pub unsafe fn deliver(
        &mut self,
        header: *const u8,
        header_len: usize,
        data: *const u8,
        data_len: usize,
        tag: u8,
    ) -> Result<Option<Arc<Cq>>, GniReturn> {
        if header_len + data_len > self.slot_bytes {
            return Err(GNI_RC_ERROR_RESOURCE);
        }
        if self.count == self.slots.len() {
            return Err(GNI_RC_NOT_DONE);
        }
        let i = (self.head + self.count) % self.slots.len();
        let slot = self.slots[i].as_mut_ptr().cast::<u8>();
        // SAFETY: the slot holds slot_bytes >= header_len + data_len bytes; the header and data
        // are readable for their lengths (this function's contract).
        unsafe {
            if header_len > 0 {
                std::ptr::copy_nonoverlapping(header, slot, header_len);
            }
            if data_len > 0 {
                std::ptr::copy_nonoverlapping(data, slot.add(header_len), data_len);
            }
        }
        self.tags[i] = tag;
        self.count += 1;
        Ok(self.rx_cq.clone())
    }

    /// GNI_SmsgGetNext and GNI_SmsgGetNextWTag: the head message, if its tag matches (`tag` None:
    /// any tag); `tag` becomes the message's.
    pub fn next(&mut self, tag: Option<&mut u8>) -> Result<*mut u8, GniReturn> {
        if self.count == 0 {
            return Err(GNI_RC_NOT_DONE);
        }
        let i = self.head;
        if let Some(tag) = tag {
            if *tag != GNI_SMSG_ANY_TAG && *tag != self.tags[i] {
                return Err(GNI_RC_NO_MATCH);
            }
            *tag = self.tags[i];
        }
        self.current = true;
        Ok(self.slots[i].as_mut_ptr().cast())
    }

    /// GNI_SmsgRelease: frees the slot of the message `next` returned.
    pub fn release(&mut self) -> Result<(), GniReturn> {
        if !self.current || self.count == 0 {
            return Err(GNI_RC_NOT_DONE);
        }
        self.current = false;
        self.head = (self.head + 1) % self.slots.len();
        self.count -= 1;
        Ok(())
    }
}

/// In a job: the endpoint's own mailbox (its control in the rank's file, its slots in the memory
/// GNI_SmsgInit was given) and where the peer's is. Each slot ends with the message's tag in its
/// last 8 bytes (the slot has room for uGNI's per-message overhead).
pub struct SharedMailbox {
    pub mine: &'static Mbox,
    /// The endpoint `mine` was claimed for: another endpoint of this rank set up on the same
    /// mailbox memory takes the control over, and then it is no longer ours to free.
    ep: u32,
    /// GNI_SmsgGetNext returned the head message and GNI_SmsgRelease has not been called yet.
    current: bool,
    /// The peer's rank and the address of its mailbox (its attributes' buffer plus offset).
    pub peer_rank: u32,
    pub peer_addr: u64,
    /// The peer's mailbox control and the endpoint that kept it, once found.
    pub peer_box: Option<&'static Mbox>,
    pub peer_ep: Option<u32>,
}

impl SharedMailbox {
    /// `mine` as [`crate::job::Job::claim_mbox`] claimed it for endpoint `ep` (its creation number).
    pub fn new(mine: &'static Mbox, ep: u32, peer_rank: u32, peer_addr: u64) -> SharedMailbox {
        SharedMailbox { mine, ep, current: false, peer_rank, peer_addr, peer_box: None, peer_ep: None }
    }

    /// Whether `mine` still belongs to this endpoint: another endpoint of the rank set up on the
    /// same mailbox memory takes it over, and its messages are then that endpoint's.
    fn keeps(&self) -> bool {
        self.mine.ep.load(Ordering::Relaxed) == self.ep
    }

    /// The head message's slot, if its tag matches (`tag` None: any tag); `tag` becomes its.
    /// GNI_RC_INVALID_STATE once another endpoint took the mailbox over.
    pub fn next(&mut self, tag: Option<&mut u8>) -> Result<*mut u8, GniReturn> {
        if !self.keeps() {
            return Err(GNI_RC_INVALID_STATE);
        }
        let m = self.mine;
        let head = m.head.load(Ordering::Acquire);
        if head == m.tail.load(Ordering::Acquire) {
            return Err(GNI_RC_NOT_DONE);
        }
        let stride = m.stride.load(Ordering::Relaxed) as u64;
        let slot = m.addr.load(Ordering::Relaxed) + head % m.credits.load(Ordering::Relaxed).max(1) as u64 * stride;
        // SAFETY: the slot lies in this process's mailbox memory, registered on the endpoint's
        // NIC and checked by GNI_SmsgInit to hold every slot; the sender wrote the tag before
        // publishing the message (tail, read above with Acquire).
        let msg_tag = unsafe { ((slot + stride - 8) as *const u64).read_volatile() } as u8;
        if let Some(tag) = tag {
            if *tag != GNI_SMSG_ANY_TAG && *tag != msg_tag {
                return Err(GNI_RC_NO_MATCH);
            }
            *tag = msg_tag;
        }
        self.current = true;
        Ok(slot as *mut u8)
    }

    /// Frees the slot of the message `next` returned: a credit back to the sender.
    /// GNI_RC_INVALID_STATE once another endpoint took the mailbox over: the head is its now.
    pub fn release(&mut self) -> Result<(), GniReturn> {
        if !self.keeps() {
            return Err(GNI_RC_INVALID_STATE);
        }
        if !self.current {
            return Err(GNI_RC_NOT_DONE);
        }
        self.current = false;
        self.mine.head.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

impl Drop for SharedMailbox {
    fn drop(&mut self) {
        // Under the send lock, as the control changes hands: taken over, it is not ours to free.
        let _senders = self.mine.send_lock.lock();
        if self.keeps() {
            self.mine.state.store(MBOX_FREE, Ordering::Release);
        }
    }
}
