//! An endpoint's SMSG mailbox, as GNI_SmsgInit makes it ([`crate::smsg`]): a ring of
//! `mbox_maxcredit` slots of `msg_maxsize` bytes, allocated once. A message is copied header then
//! data into the next free slot (so the data follows the header, as in a real mailbox).

use std::sync::Arc;

use aar_abi::*;

use crate::cq::Cq;

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
