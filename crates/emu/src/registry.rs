//! Everything uGNI hands out a handle for, and the registry that turns a handle back into an
//! object. Handles are the addresses of the objects, but they are never dereferenced: a handle is
//! only valid while the registry holds it, so a stale or made-up handle is an INVALID_PARAM, not
//! a crash.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use aar_abi::*;

use crate::cq::Cq;
use crate::mailbox::{Inbox, SharedMailbox};
use crate::FIRST_NIC_ADDR;

/// Keys are addresses and counters: a multiplicative hash is enough and much cheaper than SipHash
/// on the post path.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type Map<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

pub struct Cdm {
    pub inst_id: u32,
    pub modes: u32,
    /// Handle of the NIC this CDM is attached to, once attached.
    pub nic: Mutex<Option<usize>>,
}

pub struct Nic {
    pub addr: u32,
    /// inst_id of the CDM attached to this NIC.
    pub inst_id: u32,
    pub dual_events: bool,
    /// Routing mode of SMSG sends from this NIC (GNI_SmsgSetDeliveryMode).
    pub smsg_mode: AtomicU16,
}

pub struct MemReg {
    pub nic: usize,
    pub addr: u64,
    pub len: u64,
    pub dst_cq: Option<Arc<Cq>>,
    pub read_only: bool,
    /// qword2 of the handle, checked so a handle cannot be forged from its qword1 alone.
    pub check: u64,
}

impl MemReg {
    /// True when [addr, addr+len) lies inside the registered region.
    pub fn covers(&self, addr: u64, len: u64) -> bool {
        addr >= self.addr && addr.checked_add(len).is_some_and(|end| end <= self.addr + self.len)
    }
}

#[derive(Default)]
pub struct Binding {
    /// (remote NIC address, remote inst_id) from GNI_EpBind.
    pub remote: Option<(u32, u32)>,
    /// The endpoint that is bound back to us, found at first use.
    pub peer: Weak<Ep>,
}

pub struct Ep {
    /// Creation order: when several endpoints are bound back to us, the oldest is the peer.
    pub seq: u64,
    pub nic: Arc<Nic>,
    pub nic_handle: usize,
    pub cq: Option<Arc<Cq>>,
    pub binding: Mutex<Binding>,
    /// Largest header+data this endpoint may send by SMSG; 0 until GNI_SmsgInit.
    pub smsg_max_send: AtomicU32,
    /// The receiving mailbox, created by GNI_SmsgInit.
    pub inbox: Mutex<Option<Inbox>>,
    /// (local, remote) event data from GNI_EpSetEventData; None: uGNI's defaults.
    pub event_data: Mutex<Option<(u32, u32)>>,
    /// In a job, the mailboxes instead: ours in the rank's file and where the peer's is.
    pub shared_mbox: Mutex<Option<SharedMailbox>>,
}

impl Ep {
    pub fn lock_binding(&self) -> MutexGuard<'_, Binding> {
        self.binding.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn remote(&self) -> Option<(u32, u32)> {
        self.lock_binding().remote
    }

    pub fn lock_inbox(&self) -> MutexGuard<'_, Option<Inbox>> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn lock_shared_mbox(&self) -> MutexGuard<'_, Option<SharedMailbox>> {
        self.shared_mbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn event_data(&self) -> Option<(u32, u32)> {
        *self.event_data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The inst_id of the local CQ events of this endpoint's posts: GNI_EpSetEventData's
    /// local_event, by default the remote_id it is bound to.
    pub fn local_event_data(&self) -> u32 {
        self.event_data().map_or_else(|| self.remote().map_or(0, |(_, id)| id), |(local, _)| local)
    }

    /// The inst_id of the remote CQ events of this endpoint's posts: GNI_EpSetEventData's
    /// remote_event, by default the inst_id of its own domain.
    pub fn remote_event_data(&self) -> u32 {
        self.event_data().map_or(self.nic.inst_id, |(_, remote)| remote)
    }
}

#[derive(Default)]
pub struct Registry {
    pub cdms: Map<usize, Arc<Cdm>>,
    pub nics: Map<usize, Arc<Nic>>,
    pub eps: Map<usize, Arc<Ep>>,
    pub cqs: Map<usize, Arc<Cq>>,
    pub mems: Map<u64, Arc<MemReg>>,
    pub next_nic_addr: u32,
    pub next_mem_id: u64,
}

static REGISTRY: LazyLock<RwLock<Registry>> =
    LazyLock::new(|| RwLock::new(Registry { next_nic_addr: FIRST_NIC_ADDR, ..Registry::default() }));

static EP_SEQ: AtomicU64 = AtomicU64::new(0);

pub fn next_ep_seq() -> u64 {
    EP_SEQ.fetch_add(1, Ordering::Relaxed)
}

/// Posts and other lookups share the registry; only create/destroy calls write it.
pub fn read() -> RwLockReadGuard<'static, Registry> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

pub fn write() -> RwLockWriteGuard<'static, Registry> {
    REGISTRY.write().unwrap_or_else(|e| e.into_inner())
}

pub fn handle_of<T>(obj: &Arc<T>) -> usize {
    Arc::as_ptr(obj) as usize
}

/// Marks qword1 of the emulator's memory handles, so an all-zero handle is never valid.
const MEM_TAG: u64 = 0xa4e5_0000_0000_0000;
const MEM_CHECK_KEY: u64 = 0x9e37_79b9_7f4a_7c15;

pub fn mem_handle_for(id: u64, addr: u64, len: u64) -> GniMemHandle {
    let qword1 = MEM_TAG | id;
    GniMemHandle { qword1, qword2: (addr ^ len.rotate_left(32) ^ qword1).wrapping_mul(MEM_CHECK_KEY) }
}

pub fn is_zero(mh: &GniMemHandle) -> bool {
    mh.qword1 == 0 && mh.qword2 == 0
}

impl Registry {
    pub fn ep(&self, h: usize) -> Result<&Arc<Ep>, GniReturn> {
        self.eps.get(&h).ok_or(GNI_RC_INVALID_PARAM)
    }

    pub fn nic(&self, h: usize) -> Result<&Arc<Nic>, GniReturn> {
        self.nics.get(&h).ok_or(GNI_RC_INVALID_PARAM)
    }

    pub fn cq(&self, h: usize) -> Result<&Arc<Cq>, GniReturn> {
        self.cqs.get(&h).ok_or(GNI_RC_INVALID_PARAM)
    }

    /// CQ handle `h` (0: none) for an object of NIC handle `nic`: uGNI refuses a CQ of another
    /// NIC handle, as an unknown one, with GNI_RC_INVALID_PARAM (GNI_EpCreate, GNI_MemRegister).
    pub fn cq_of_nic(&self, h: usize, nic: usize) -> Result<Option<&Arc<Cq>>, GniReturn> {
        match h {
            0 => Ok(None),
            h => self.cq(h).ok().filter(|c| c.nic == nic).map(Some).ok_or(GNI_RC_INVALID_PARAM),
        }
    }

    /// The registration behind a handle, if it is one of ours and registered on NIC `nic`.
    pub fn mem(&self, mh: &GniMemHandle, nic: usize) -> Option<&Arc<MemReg>> {
        self.mems.get(&mh.qword1).filter(|m| m.check == mh.qword2 && m.nic == nic)
    }

    /// The endpoint bound back to `ep`: on the NIC `ep` is bound to, itself bound to `ep`'s NIC
    /// and inst_id. Cached in `ep` after the first search.
    pub fn peer(&self, ep: &Arc<Ep>) -> Option<Arc<Ep>> {
        let (raddr, rid) = {
            let b = ep.lock_binding();
            let remote = b.remote?;
            if let Some(p) = b.peer.upgrade() {
                if self.eps.contains_key(&handle_of(&p)) && p.remote() == Some((ep.nic.addr, ep.nic.inst_id)) {
                    return Some(p);
                }
            }
            remote
        };
        let me = (ep.nic.addr, ep.nic.inst_id);
        let found = self
            .eps
            .values()
            .filter(|e| e.nic.addr == raddr && e.nic.inst_id == rid && e.remote() == Some(me))
            // Prefer another endpoint over a loop back to ourselves, then the oldest.
            .min_by_key(|e| (Arc::ptr_eq(e, ep), e.seq))
            .cloned()?;
        ep.lock_binding().peer = Arc::downgrade(&found);
        Some(found)
    }

    /// Forgets a NIC and everything created on it (GNI_CdmDestroy); the handles of the
    /// endpoints it forgot, whose datagrams the caller withdraws.
    pub fn remove_nic(&mut self, nic_handle: usize) -> Vec<usize> {
        self.nics.remove(&nic_handle);
        let eps: Vec<usize> = self.eps.iter().filter(|(_, e)| e.nic_handle == nic_handle).map(|(&h, _)| h).collect();
        for h in &eps {
            self.eps.remove(h);
        }
        self.cqs.retain(|_, c| c.nic != nic_handle);
        let job = crate::job::get();
        self.mems.retain(|&qword1, m| {
            let keep = m.nic != nic_handle;
            if let (false, Some(j)) = (keep, job) {
                j.deregister(&GniMemHandle { qword1, qword2: m.check });
            }
            keep
        });
        eps
    }
}
