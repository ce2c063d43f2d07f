//! Short messages: GNI_SmsgInit gives each endpoint its mailbox (a ring of `mbox_maxcredit` slots
//! of `msg_maxsize` bytes, [`crate::mailbox`]); a send copies header then data into the peer's
//! next free slot; no free slot means no credit (GNI_RC_NOT_DONE). Sends are routed in the mode
//! GNI_SmsgSetDeliveryMode set on the sending NIC. In a job the peer's mailbox is the one its
//! attributes (as the program exchanged them) name, found by its rank and address, and a send
//! writes into the receiver's mailbox memory across processes before publishing the message.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aar_abi::*;
use aar_engine::model::Transfer;

use crate::counters;
use crate::cq_entry::{entry_with_ids, TYPE_SMSG};
use crate::job::{self, Job};
use crate::mailbox::{Inbox, SharedMailbox};
use crate::post_log::{self, Record};
use crate::registry::{self, Ep, Registry};
use crate::shm::{Mbox, MBOX_ACTIVE, NO_RING};
use crate::timing::NicTransfer;

/// Per-message bookkeeping uGNI keeps in each mailbox slot, counted in the buffer size.
const SLOT_OVERHEAD: u64 = 32;

/// Bytes of one mailbox slot: the message and uGNI's overhead, rounded to a cache line.
fn slot_bytes(attr: &GniSmsgAttr) -> u64 {
    (attr.msg_maxsize as u64 + SLOT_OVERHEAD).div_ceil(64) * 64
}

/// Bytes of mailbox GNI_SmsgBufferSizeNeeded asks for: one slot per credit.
fn mailbox_bytes(attr: &GniSmsgAttr) -> Result<u64, GniReturn> {
    check_attr(attr)?;
    Ok(slot_bytes(attr) * attr.mbox_maxcredit as u64)
}

/// GNI_SmsgBufferSizeNeeded.
pub fn buffer_size_needed(attr: &GniSmsgAttr) -> Result<u32, GniReturn> {
    u32::try_from(mailbox_bytes(attr)?).map_err(|_| GNI_RC_INVALID_PARAM)
}

fn check_attr(attr: &GniSmsgAttr) -> Result<(), GniReturn> {
    let type_ok = matches!(attr.msg_type, GNI_SMSG_TYPE_MBOX | GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT);
    if !type_ok || attr.mbox_maxcredit == 0 || attr.msg_maxsize == 0 || attr.msg_maxsize > GNI_SMSG_MAX_SIZE {
        return Err(GNI_RC_INVALID_PARAM);
    }
    Ok(())
}

/// GNI_SmsgInit: `local` describes our mailbox (registered on our NIC), `remote` the peer's.
pub fn init(ep: usize, local: &GniSmsgAttr, remote: &GniSmsgAttr) -> Result<(), GniReturn> {
    let reg = registry::read();
    let ep = reg.ep(ep)?;
    if ep.remote().is_none() {
        return Err(GNI_RC_INVALID_STATE);
    }
    if check_attr(local).and(check_attr(remote)).is_err() || local.msg_buffer.is_null() {
        return Err(GNI_RC_INVALID_PARAM);
    }
    let needed = mailbox_bytes(local).unwrap_or(u64::MAX);
    let start = local.msg_buffer as u64 + local.mbox_offset as u64;
    match reg.mem(&local.mem_hndl, ep.nic_handle) {
        Some(m) if (local.buff_size as u64) >= needed && m.covers(start, needed) => {
            let rx_cq = m.dst_cq.clone().or_else(|| ep.cq.clone());
            match job::get() {
                Some(j) => {
                    // The peer's mailbox must be registered memory of a rank of this job.
                    let peer_addr = remote.msg_buffer as u64 + remote.mbox_offset as u64;
                    let (rank, _, r) = j.lookup(&remote.mem_hndl).ok_or(GNI_RC_INVALID_PARAM)?;
                    if !r.covers(peer_addr, mailbox_bytes(remote)?) {
                        return Err(GNI_RC_INVALID_PARAM);
                    }
                    let ring = rx_cq.map_or(NO_RING, |c| c.ring_index());
                    let mut shared = ep.lock_shared_mbox();
                    shared.take();
                    let (credits, me) = (local.mbox_maxcredit as u32, ep.seq as u32);
                    let mine = j
                        .claim_mbox(start, credits, slot_bytes(local) as u32, local.msg_maxsize, ring, me)
                        .ok_or(GNI_RC_ERROR_RESOURCE)?;
                    *shared = Some(SharedMailbox::new(mine, me, rank, peer_addr));
                }
                None => {
                    let (credits, size) = (local.mbox_maxcredit as usize, local.msg_maxsize as usize);
                    *ep.lock_inbox() = Some(Inbox::new(credits, size, rx_cq));
                }
            }
            ep.smsg_max_send.store(remote.msg_maxsize, Ordering::Relaxed);
            Ok(())
        }
        _ => Err(GNI_RC_INVALID_PARAM),
    }
}

/// One SMSG send: the caller's pointers and lengths.
pub struct Send {
    pub header: *const u8,
    pub header_len: u32,
    pub data: *const u8,
    pub data_len: u32,
    pub msg_id: u32,
    pub tag: u8,
}

/// GNI_SmsgSend and GNI_SmsgSendWTag (`call` names which): counted, sent, logged.
///
/// # Safety
/// `s.header` and `s.data` are each NULL or readable for their lengths.
pub unsafe fn send(call: &'static str, ep_handle: usize, s: &Send) -> Result<(), GniReturn> {
    counters::count_post();
    let reg = registry::read();
    let ep = reg.ep(ep_handle).ok();
    let smsg_mode = ep.map(|e| e.nic.smsg_mode.load(Ordering::Relaxed));
    let rc = match ep {
        // SAFETY: this function's contract.
        Some(ep) => unsafe { send_on(&reg, ep, smsg_mode.unwrap_or(0), s) },
        None => GNI_RC_INVALID_PARAM,
    };
    if post_log::enabled() {
        post_log::record(&Record::SmsgSend {
            call,
            length: s.header_len as u64 + s.data_len as u64,
            smsg_dlvr_mode: smsg_mode,
            nic: ep.map(|e| e.nic.addr),
            rc,
        });
    }
    match rc {
        GNI_RC_SUCCESS => Ok(()),
        rc => Err(rc),
    }
}

/// # Safety
/// As for [`send`].
unsafe fn send_on(reg: &Registry, ep: &Arc<Ep>, mode: u16, s: &Send) -> GniReturn {
    let max = ep.smsg_max_send.load(Ordering::Relaxed);
    if max == 0 || (s.header.is_null() && s.header_len > 0) || (s.data.is_null() && s.data_len > 0) {
        return GNI_RC_INVALID_PARAM;
    }
    let Some((_, remote_id)) = ep.remote() else {
        return GNI_RC_INVALID_STATE;
    };
    let total = s.header_len as usize + s.data_len as usize;
    if total > max as usize {
        return GNI_RC_ERROR_RESOURCE;
    }
    if let Some(j) = job::get() {
        // SAFETY: this function's contract.
        return unsafe { send_shared(j, ep, mode, s, remote_id) };
    }
    // The peer may not be created, bound or SMSG-initialised yet: like a full mailbox, retry later.
    let Some(peer) = reg.peer(ep) else {
        return GNI_RC_NOT_DONE;
    };
    if let Some(cq) = &ep.cq {
        if !cq.reserve(1) {
            return GNI_RC_NOT_DONE;
        }
    }
    let unreserve = || {
        if let Some(cq) = &ep.cq {
            cq.unreserve(1)
        }
    };
    let delivered = match peer.lock_inbox().as_mut() {
        // SAFETY: the caller's header and data are readable for their stated lengths (this
        // function's contract; non-null checked above when the length is non-zero).
        Some(inbox) => unsafe { inbox.deliver(s.header, s.header_len as usize, s.data, s.data_len as usize, s.tag) },
        None => Err(GNI_RC_NOT_DONE),
    };
    let rx_cq = match delivered {
        Ok(rx_cq) => rx_cq,
        Err(rc) => {
            unreserve();
            return rc;
        }
    };
    if let Some(rx) = rx_cq {
        rx.push_unreserved(entry_with_ids(TYPE_SMSG, true, ep.nic.inst_id, s.msg_id));
    }
    if let Some(cq) = &ep.cq {
        cq.push_reserved(entry_with_ids(TYPE_SMSG, false, remote_id, s.msg_id));
    }
    counters::account(&NicTransfer {
        transfer: Transfer::Put,
        bytes: total as u64,
        dlvr_mode: mode,
        src_nic: ep.nic.addr,
        dst_nic: peer.nic.addr,
    });
    GNI_RC_SUCCESS
}

/// A send in a job: into the mailbox the peer's attributes named (in whichever rank), found by
/// its address; the bytes are in the receiver's memory before the message is published and its
/// arrival event delivered.
///
/// # Safety
/// As for [`send`].
unsafe fn send_shared(j: &Job, ep: &Arc<Ep>, mode: u16, s: &Send, remote_id: u32) -> GniReturn {
    let mut guard = ep.lock_shared_mbox();
    let Some(link) = guard.as_mut() else {
        return GNI_RC_INVALID_STATE;
    };
    // The control found before, while it still keeps that mailbox: the peer frees it when its
    // endpoint goes or sets the mailbox up again, which may then be kept by another control.
    let (addr, peer_ep) = (link.peer_addr, link.peer_ep);
    let keeps = move |m: &Mbox| {
        m.state.load(Ordering::Acquire) == MBOX_ACTIVE
            && m.addr.load(Ordering::Relaxed) == addr
            && peer_ep.is_none_or(|e| m.ep.load(Ordering::Relaxed) == e)
    };
    let found = link.peer_box.filter(|m| keeps(m));
    let Some(peer) = found.or_else(|| j.find_mbox(link.peer_rank, addr)) else {
        // The peer has not called GNI_SmsgInit yet: like a full mailbox, retry later.
        return GNI_RC_NOT_DONE;
    };
    if !keeps(peer) {
        // The endpoint this one sent to is gone and another keeps its mailbox memory now: the
        // messages would reach a stranger. Retrying never helps, so an error, as for a post to
        // a rank that ended.
        return GNI_RC_TRANSACTION_ERROR;
    }
    link.peer_box = Some(peer);
    link.peer_ep = Some(peer.ep.load(Ordering::Relaxed));
    let rank = link.peer_rank;
    let total = s.header_len as u64 + s.data_len as u64;
    if total > peer.maxsize.load(Ordering::Relaxed) as u64 {
        return GNI_RC_ERROR_RESOURCE;
    }
    if let Some(cq) = &ep.cq {
        if !cq.reserve(1) {
            return GNI_RC_NOT_DONE;
        }
    }
    let written = {
        let _one_sender = peer.send_lock.lock();
        let (head, tail) = (peer.head.load(Ordering::Acquire), peer.tail.load(Ordering::Acquire));
        let credits = peer.credits.load(Ordering::Relaxed).max(1) as u64;
        if !keeps(peer) {
            // Freed or taken over since it was found: the next try finds out which.
            Err(GNI_RC_NOT_DONE)
        } else if tail - head >= credits {
            Err(GNI_RC_NOT_DONE)
        } else {
            let stride = peer.stride.load(Ordering::Relaxed) as u64;
            let slot = peer.addr.load(Ordering::Relaxed) + tail % credits * stride;
            let tag = s.tag as u64;
            let parts = [
                (slot, s.header as u64, s.header_len as u64),
                (slot + s.header_len as u64, s.data as u64, s.data_len as u64),
                (slot + stride - 8, &tag as *const u64 as u64, 8),
            ];
            let copied =
                parts.iter().filter(|p| p.2 > 0).try_for_each(|&(to, from, len)| j.write_to(rank, to, from, len));
            copied.map(|()| peer.tail.store(tail + 1, Ordering::Release))
        }
    };
    if let Err(rc) = written {
        if let Some(cq) = &ep.cq {
            cq.unreserve(1);
        }
        return rc;
    }
    if let Some(ring) = j.ring(rank, peer.ring.load(Ordering::Relaxed)) {
        ring.push(entry_with_ids(TYPE_SMSG, true, ep.nic.inst_id, s.msg_id), 0, false);
    }
    if let Some(cq) = &ep.cq {
        cq.push_reserved(entry_with_ids(TYPE_SMSG, false, remote_id, s.msg_id));
    }
    let dst_nic = ep.remote().map_or(0, |(addr, _)| addr);
    counters::account(&NicTransfer {
        transfer: Transfer::Put,
        bytes: total,
        dlvr_mode: mode,
        src_nic: ep.nic.addr,
        dst_nic,
    });
    GNI_RC_SUCCESS
}

/// GNI_SmsgGetNext and GNI_SmsgGetNextWTag: the head message, if its tag matches (`tag` None = GetNext, any tag).
pub fn get_next(ep: usize, tag: Option<&mut u8>) -> Result<*mut u8, GniReturn> {
    let reg = registry::read();
    let ep = reg.ep(ep)?;
    if let Some(shared) = ep.lock_shared_mbox().as_mut() {
        return shared.next(tag);
    }
    let mut guard = ep.lock_inbox();
    guard.as_mut().ok_or(GNI_RC_INVALID_PARAM)?.next(tag)
}

/// GNI_SmsgRelease: frees the slot of the message GetNext returned.
pub fn release(ep: usize) -> Result<(), GniReturn> {
    let reg = registry::read();
    let ep = reg.ep(ep)?;
    if let Some(shared) = ep.lock_shared_mbox().as_mut() {
        return shared.release();
    }
    let mut guard = ep.lock_inbox();
    guard.as_mut().ok_or(GNI_RC_INVALID_PARAM)?.release()
}

/// GNI_SmsgSetDeliveryMode: the routing of the NIC's later SMSG sends; logged.
pub fn set_delivery_mode(nic: usize, dlvr_mode: u16) -> Result<(), GniReturn> {
    let reg = registry::read();
    let n = reg.nic(nic).ok();
    if let Some(n) = n {
        n.smsg_mode.store(dlvr_mode, Ordering::Relaxed);
    }
    let rc = if n.is_some() { GNI_RC_SUCCESS } else { GNI_RC_INVALID_PARAM };
    if post_log::enabled() {
        post_log::record(&Record::SmsgSetDeliveryMode {
            call: "GNI_SmsgSetDeliveryMode",
            nic: n.map(|n| n.addr),
            dlvr_mode,
            rc,
        });
    }
    n.map(|_| ()).ok_or(GNI_RC_INVALID_PARAM)
}
