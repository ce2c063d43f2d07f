//! Datagrams: `GNI_EpPostData[WId]` and their Test, Wait, Probe and Cancel calls. A bound endpoint
//! posts up to GNI_DATAGRAM_MAXSIZE bytes to its (remote NIC address, remote inst_id); the post
//! meets the one that the endpoint at that address and inst_id posted to us (or posted unbound,
//! a wildcard), and each side gets the other's bytes: the exchange programs use to trade SMSG
//! attributes or memory handles. Matching happens inside the later of the two posts, under one
//! lock; the poster collects the peer's data with Test or Wait (Wait sleeps on the slot's
//! futex). In a job the slots are in the ranks' files and the lock in the job's file, so ranks
//! meet across processes; otherwise they are this process's.

use std::sync::atomic::Ordering;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use aar_abi::*;

use crate::job;
use crate::registry;
use crate::shm::{self, load_bytes, store_bytes, Dgram, Lock, ProcId, RankArea, DGRAMS, DG_DONE, DG_FREE, DG_PENDING};

/// The datagram slots of a process that is no job's rank, and their lock.
struct Local {
    lock: Lock,
    dgrams: [Dgram; DGRAMS],
}

static LOCAL: LazyLock<Box<Local>> = LazyLock::new(|| {
    // SAFETY: Local is made of atomics only; all zeroes is its empty state (every slot free).
    unsafe { shm::zeroed_box() }
});

/// The id of a datagram posted without one (GNI_EpPostData).
const NO_ID: u64 = u64::MAX;

/// The lock every change of a slot takes, and this process's slots.
fn space() -> (&'static Lock, &'static [Dgram]) {
    match job::get() {
        Some(j) => (&j.shared.dgram_lock, &j.me.dgrams),
        None => {
            let l: &'static Local = &LOCAL;
            (&l.lock, &l.dgrams)
        }
    }
}

/// The slots a datagram to NIC `addr` (None: from anywhere, for a wildcard) may meet, each with
/// the process of the rank that owns them (None: this process's own).
fn candidates(addr: Option<u32>) -> Vec<(Option<ProcId>, &'static [Dgram])> {
    match job::get() {
        Some(j) => {
            let areas: Vec<(u32, &RankArea)> = match addr {
                Some(a) => j.ranks_at(a).collect(),
                None => j.started(),
            };
            let proc = |r: u32, area: &RankArea| {
                (r != j.rank).then(|| ProcId::from_raw(area.header.proc.load(Ordering::Relaxed)))
            };
            areas.into_iter().map(|(r, area)| (proc(r, area), &area.dgrams[..])).collect()
        }
        None => vec![(None, &LOCAL.dgrams[..])],
    }
}

/// A pending slot of `slots` that meets a post from `local` to `remote`, other than `slot`.
/// The datagrams of a rank whose process has ended (a zombie too) meet nothing: the kernel
/// driver withdraws a process's datagrams when it ends, so on a real NIC they are lost with it,
/// and a post to that peer waits for a process that posts again.
fn partner(
    slots: Vec<(Option<ProcId>, &'static [Dgram])>,
    slot: &Dgram,
    local: (u32, u32),
    remote: Option<(u32, u32)>,
) -> Option<&'static Dgram> {
    slots.into_iter().find_map(|(proc, dgrams)| {
        let d = dgrams.iter().find(|d| !std::ptr::eq(*d, slot) && meets(d, local, remote))?;
        proc.is_none_or(ProcId::alive).then_some(d)
    })
}

/// The outstanding datagram of endpoint `ep` with id `id`, among this process's slots.
fn find(mine: &'static [Dgram], ep: usize, id: u64) -> Option<&'static Dgram> {
    mine.iter().find(|d| {
        d.state.load(Ordering::Acquire) != DG_FREE
            && d.ep.load(Ordering::Relaxed) == ep as u64
            && d.id.load(Ordering::Relaxed) == id
    })
}

fn pair(a: &std::sync::atomic::AtomicU32, b: &std::sync::atomic::AtomicU32) -> (u32, u32) {
    (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed))
}

/// True when `theirs` (pending) and a post from `local` to `remote` (None: a wildcard) meet.
fn meets(theirs: &Dgram, local: (u32, u32), remote: Option<(u32, u32)>) -> bool {
    if theirs.state.load(Ordering::Acquire) != DG_PENDING {
        return false;
    }
    let their_wildcard = theirs.wildcard.load(Ordering::Relaxed) != 0;
    let they_want_us = their_wildcard || pair(&theirs.remote_addr, &theirs.remote_inst) == local;
    match remote {
        Some(r) => pair(&theirs.local_addr, &theirs.local_inst) == r && they_want_us,
        None => !their_wildcard && they_want_us,
    }
}

/// Gives `to` the data of `from` and marks it done, waking its waiters.
fn deliver(to: &Dgram, from: &Dgram) {
    let len = from.in_len.load(Ordering::Relaxed).min(to.out_cap.load(Ordering::Relaxed));
    for (t, f) in to.out_data.iter().zip(&from.in_data) {
        t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    to.out_len.store(len, Ordering::Relaxed);
    to.peer_addr.store(from.local_addr.load(Ordering::Relaxed), Ordering::Relaxed);
    to.peer_inst.store(from.local_inst.load(Ordering::Relaxed), Ordering::Relaxed);
    to.state.store(DG_DONE, Ordering::Release);
    shm::futex_wake(&to.state);
}

/// GNI_EpPostData and GNI_EpPostDataWId (`id` None): posts `in_data` from endpoint `ep`; the
/// peer's data will go to `out_buf` (`out_cap` bytes) when Test or Wait collects it.
pub fn post(ep: usize, in_data: &[u8], out_buf: u64, out_cap: u16, id: Option<u64>) -> Result<(), GniReturn> {
    if in_data.len() > GNI_DATAGRAM_MAXSIZE as usize || u32::from(out_cap) > GNI_DATAGRAM_MAXSIZE {
        return Err(GNI_RC_SIZE_ERROR);
    }
    let (local, remote) = {
        let reg = registry::read();
        let e = reg.ep(ep)?;
        ((e.nic.addr, e.nic.inst_id), e.remote())
    };
    let id = id.unwrap_or(NO_ID);
    let (lock, mine) = space();
    let _g = lock.lock();
    if find(mine, ep, id).is_some() {
        return Err(GNI_RC_ERROR_RESOURCE);
    }
    let slot = mine.iter().find(|d| d.state.load(Ordering::Acquire) == DG_FREE).ok_or(GNI_RC_ERROR_RESOURCE)?;
    let (raddr, rinst) = remote.unwrap_or((0, 0));
    for (field, value) in [
        (&slot.local_addr, local.0),
        (&slot.local_inst, local.1),
        (&slot.remote_addr, raddr),
        (&slot.remote_inst, rinst),
        (&slot.wildcard, remote.is_none() as u32),
        (&slot.in_len, in_data.len() as u32),
        (&slot.out_len, 0),
        (&slot.out_cap, out_cap as u32),
    ] {
        field.store(value, Ordering::Relaxed);
    }
    slot.ep.store(ep as u64, Ordering::Relaxed);
    slot.id.store(id, Ordering::Relaxed);
    slot.out_buf.store(out_buf, Ordering::Relaxed);
    store_bytes(&slot.in_data, in_data);
    let theirs = partner(candidates(remote.map(|r| r.0)), slot, local, remote);
    match theirs {
        Some(t) => {
            deliver(t, slot);
            deliver(slot, t);
        }
        None => slot.state.store(DG_PENDING, Ordering::Release),
    }
    Ok(())
}

/// `GNI_EpPostDataTest[ById]`: the datagram's state and its peer (while pending: where it was
/// sent). A completed one is collected: the peer's data is copied to the poster's buffer and
/// the slot freed. GNI_RC_NO_MATCH when the endpoint has no such datagram.
///
/// # Safety
/// The buffer given to the post is still valid for writes of its size.
pub unsafe fn test(ep: usize, id: Option<u64>) -> Result<(GniPostState, u32, u32), GniReturn> {
    let (lock, mine) = space();
    let _g = lock.lock();
    let d = find(mine, ep, id.unwrap_or(NO_ID)).ok_or(GNI_RC_NO_MATCH)?;
    if d.state.load(Ordering::Acquire) == DG_PENDING {
        return Ok((GNI_POST_PENDING, d.remote_addr.load(Ordering::Relaxed), d.remote_inst.load(Ordering::Relaxed)));
    }
    let len = d.out_len.load(Ordering::Relaxed) as usize;
    let out = d.out_buf.load(Ordering::Relaxed);
    if len > 0 && out != 0 {
        let bytes = load_bytes(&d.out_data, len);
        // SAFETY: the poster's buffer holds out_cap >= len bytes and is still valid (this
        // function's contract).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out as *mut u8, len) };
    }
    let peer = pair(&d.peer_addr, &d.peer_inst);
    d.state.store(DG_FREE, Ordering::Release);
    Ok((GNI_POST_COMPLETED, peer.0, peer.1))
}

/// `GNI_EpPostDataWait[ById]`: [`test()`] once the datagram completed, sleeping until then, at most
/// `timeout_ms` (u32::MAX: for ever); GNI_RC_TIMEOUT when it did not.
///
/// # Safety
/// As for [`test()`].
pub unsafe fn wait(ep: usize, id: Option<u64>, timeout_ms: u32) -> Result<(GniPostState, u32, u32), GniReturn> {
    let deadline = match timeout_ms {
        u32::MAX => None,
        ms => Some(Instant::now() + Duration::from_millis(ms as u64)),
    };
    let d = {
        let (lock, mine) = space();
        let _g = lock.lock();
        find(mine, ep, id.unwrap_or(NO_ID)).ok_or(GNI_RC_NO_MATCH)?
    };
    if !shm::wait_until(&d.state, deadline, || d.state.load(Ordering::Acquire) != DG_PENDING) {
        return Err(GNI_RC_TIMEOUT);
    }
    // SAFETY: this function's contract.
    unsafe { test(ep, id) }
}

/// GNI_PostDataProbe and GNI_PostDataProbeById: the peer and id of a completed, not yet
/// collected datagram posted on NIC `nic`; GNI_RC_NO_MATCH when there is none.
pub fn probe(nic: usize) -> Result<(u32, u32, u64), GniReturn> {
    let local = {
        let reg = registry::read();
        let n = reg.nic(nic)?;
        (n.addr, n.inst_id)
    };
    let (lock, mine) = space();
    let _g = lock.lock();
    mine.iter()
        .find(|d| d.state.load(Ordering::Acquire) == DG_DONE && pair(&d.local_addr, &d.local_inst) == local)
        .map(|d| {
            (d.peer_addr.load(Ordering::Relaxed), d.peer_inst.load(Ordering::Relaxed), d.id.load(Ordering::Relaxed))
        })
        .ok_or(GNI_RC_NO_MATCH)
}

/// `GNI_PostdataProbeWaitById`: [`probe()`], sleeping until a datagram of NIC `nic` completed, at
/// most `timeout_ms` (u32::MAX: for ever); GNI_RC_TIMEOUT when none did. Completions arrive on
/// any of the slots, so it looks again every millisecond rather than on one slot's futex.
pub fn probe_wait(nic: usize, timeout_ms: u32) -> Result<(u32, u32, u64), GniReturn> {
    let deadline = match timeout_ms {
        u32::MAX => None,
        ms => Some(Instant::now() + Duration::from_millis(ms as u64)),
    };
    loop {
        match probe(nic) {
            Err(GNI_RC_NO_MATCH) => {}
            done => return done,
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(GNI_RC_TIMEOUT);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `GNI_EpPostDataCancel[ById]`: withdraws the endpoint's datagram; GNI_RC_NO_MATCH without one.
pub fn cancel(ep: usize, id: Option<u64>) -> Result<(), GniReturn> {
    registry::read().ep(ep)?;
    let (lock, mine) = space();
    let _g = lock.lock();
    let d = find(mine, ep, id.unwrap_or(NO_ID)).ok_or(GNI_RC_NO_MATCH)?;
    d.state.store(DG_FREE, Ordering::Release);
    shm::futex_wake(&d.state);
    Ok(())
}

/// Withdraws every datagram of an endpoint that is going away.
pub fn forget(ep: usize) {
    let (lock, mine) = space();
    let _g = lock.lock();
    for d in mine.iter().filter(|d| d.ep.load(Ordering::Relaxed) == ep as u64) {
        d.state.store(DG_FREE, Ordering::Release);
        shm::futex_wake(&d.state);
    }
}
