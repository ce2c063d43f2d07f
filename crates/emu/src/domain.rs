//! Communication domains, the NICs they attach to, endpoints and completion queues: the calls that
//! create, bind and destroy them. The objects and their handles live in [`crate::registry`].

use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use aar_abi::*;

use crate::counters;
use crate::cq::Cq;
use crate::datagram;
use crate::job;
use crate::registry::{self, handle_of, Binding, Cdm, Ep, Nic};
use crate::settings;
use crate::FIRST_NIC_ADDR;

/// The `device_id` that GNI_CdmAttach and GNI_CdmGetNicAddress take for "the nearest NIC".
const ANY_DEVICE: u32 = u32::MAX;

/// The emulated node has one NIC: device 0, also the nearest one.
fn check_device(device_id: u32) -> Result<(), GniReturn> {
    if device_id == 0 || device_id == ANY_DEVICE {
        Ok(())
    } else {
        Err(GNI_RC_NO_MATCH)
    }
}

/// GNI_CdmCreate: a new domain's handle.
pub fn cdm_create(inst_id: u32, modes: u32) -> usize {
    let obj = Arc::new(Cdm { inst_id, modes, nic: Mutex::new(None) });
    let h = handle_of(&obj);
    registry::write().cdms.insert(h, obj);
    h
}

/// GNI_CdmAttach: attaches the domain to a NIC: in a job, the rank's node's (PMI_GNI_LOC_ADDR),
/// else a NIC of its own; its address and handle. GNI_RC_ERROR_RESOURCE when the rank cannot
/// join its job, its shared file not made ([`job::joined`]).
pub fn cdm_attach(cdm: usize, device_id: u32) -> Result<(u32, usize), GniReturn> {
    let job = job::joined();
    counters::make_model();
    let mut reg = registry::write();
    let c = reg.cdms.get(&cdm).ok_or(GNI_RC_INVALID_PARAM)?.clone();
    check_device(device_id)?;
    let job = job?;
    let mut attached = c.nic.lock().unwrap_or_else(|e| e.into_inner());
    if attached.is_some() {
        return Err(GNI_RC_INVALID_STATE);
    }
    let addr = match job {
        Some(j) => {
            j.note_inst_id(c.inst_id);
            j.nic_addr
        }
        None => {
            reg.next_nic_addr += 1;
            reg.next_nic_addr - 1
        }
    };
    let obj = Arc::new(Nic {
        addr,
        inst_id: c.inst_id,
        dual_events: c.modes & GNI_CDM_MODE_DUAL_EVENTS != 0,
        smsg_mode: Default::default(),
    });
    let h = handle_of(&obj);
    reg.nics.insert(h, obj);
    *attached = Some(h);
    Ok((addr, h))
}

/// GNI_CdmDestroy: the domain, its NIC and everything created on that NIC. Its endpoints'
/// datagrams are withdrawn, as GNI_EpDestroy withdraws them: left pending, one would meet a later
/// post to this domain's address, and Test on a new endpoint that took its handle (the address
/// of the freed one) would find it and copy into the destroyed endpoint's buffer. They are
/// withdrawn before the registry is let go, so that no new endpoint has one of their handles yet.
pub fn cdm_destroy(cdm: usize) -> Result<(), GniReturn> {
    let mut reg = registry::write();
    let c = reg.cdms.remove(&cdm).ok_or(GNI_RC_INVALID_PARAM)?;
    let nic = *c.nic.lock().unwrap_or_else(|e| e.into_inner());
    for ep in nic.map(|n| reg.remove_nic(n)).unwrap_or_default() {
        datagram::forget(ep);
    }
    Ok(())
}

/// GNI_CdmGetNicAddress: the address GNI_CdmAttach gives (in a job the node's, else the first
/// NIC's), and the CPU the caller runs on.
pub fn nic_address(device_id: u32) -> Result<(u32, u32), GniReturn> {
    check_device(device_id).map_err(|_| GNI_RC_INVALID_PARAM)?;
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() }.max(0) as u32;
    Ok((job::get().map_or(FIRST_NIC_ADDR, |j| j.nic_addr), cpu))
}

/// The values of `PMI_GNI_PTAG` or `PMI_GNI_COOKIE` as a Cray launcher sets them: one per
/// protection domain of the job, separated by `:`, each decimal or `0x` hexadecimal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobCredentials(pub Vec<u32>);

/// A value of `PMI_GNI_PTAG` or `PMI_GNI_COOKIE` that is not a `:`-separated list of numbers.
#[derive(Debug, thiserror::Error)]
#[error("{} is not a number (decimal or 0x hexadecimal)", aar_record::quotes::shown(.0))]
pub struct BadCredential(String);

impl FromStr for JobCredentials {
    type Err = BadCredential;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let number = |item: &str| {
            item.parse::<settings::CrayNumber>().map(|n| n.0).map_err(|_| BadCredential(item.trim().to_string()))
        };
        s.split(':').map(number).collect::<Result<_, _>>().map(JobCredentials)
    }
}

/// The job's (ptags, cookies), read once; None outside a job or with a bad value, said once.
fn job_credentials() -> Option<&'static (JobCredentials, JobCredentials)> {
    static CREDENTIALS: OnceLock<Option<(JobCredentials, JobCredentials)>> = OnceLock::new();
    CREDENTIALS
        .get_or_init(|| {
            // A value that is not UTF-8 is set all the same: its bad bytes (U+FFFD) fail the parse.
            let var = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
            let (Some(ptags), Some(cookies)) = (var("PMI_GNI_PTAG"), var("PMI_GNI_COOKIE")) else {
                settings::warn(
                    "GNI_GetPtag: PMI_GNI_PTAG and PMI_GNI_COOKIE are not both set, so this process is in no \
                     job: every cookie gets GNI_RC_NO_MATCH (start the program with `aar run`, which sets them, \
                     or pass the ptag to GNI_CdmCreate yourself)",
                );
                return None;
            };
            let parse = |name: &str, value: &str, max: u32| {
                let parsed = value.parse::<JobCredentials>().map_err(|e| e.to_string()).and_then(|c| {
                    match c.0.iter().find(|&&n| n > max) {
                        Some(n) => Err(format!("{n} is more than {max}, the largest {name} of a domain")),
                        None => Ok(c),
                    }
                });
                parsed
                    .map_err(|e| {
                        settings::warn(&format!(
                            "GNI_GetPtag: {name}={}: {e}; every cookie gets GNI_RC_NO_MATCH (give one \
                             number per protection domain, separated by ':', as a Cray launcher does)",
                            aar_record::quotes::shown(value)
                        ))
                    })
                    .ok()
            };
            Some((parse("PMI_GNI_PTAG", &ptags, u8::MAX.into())?, parse("PMI_GNI_COOKIE", &cookies, u32::MAX)?))
        })
        .as_ref()
}

/// GNI_GetPtag: the protection tag of the job's domain whose cookie is `cookie` (the n-th
/// PMI_GNI_PTAG for the n-th PMI_GNI_COOKIE).
pub fn ptag_of_cookie(device_id: u32, cookie: u32) -> Result<u8, GniReturn> {
    check_device(device_id)?;
    let (ptags, cookies) = job_credentials().ok_or(GNI_RC_NO_MATCH)?;
    let i = cookies.0.iter().position(|&c| c == cookie).ok_or(GNI_RC_NO_MATCH)?;
    ptags.0.get(i).and_then(|&p| u8::try_from(p).ok()).ok_or(GNI_RC_NO_MATCH)
}

/// GNI_EpCreate: an endpoint on `nic`, with `src_cq` (0: none) as its completion queue.
pub fn ep_create(nic: usize, src_cq: usize) -> Result<usize, GniReturn> {
    let mut reg = registry::write();
    let n = reg.nic(nic)?.clone();
    let cq = reg.cq_of_nic(src_cq, nic)?.cloned();
    if let Some(c) = &cq {
        c.eps.fetch_add(1, Ordering::Relaxed);
    }
    let obj = Arc::new(Ep {
        seq: registry::next_ep_seq(),
        nic: n,
        nic_handle: nic,
        cq,
        binding: Default::default(),
        smsg_max_send: Default::default(),
        inbox: Mutex::new(None),
        event_data: Mutex::new(None),
        shared_mbox: Mutex::new(None),
    });
    let h = handle_of(&obj);
    reg.eps.insert(h, obj);
    Ok(h)
}

/// GNI_EpBind: the remote NIC address and instance the endpoint talks to.
pub fn ep_bind(ep: usize, remote_addr: u32, remote_id: u32) -> Result<(), GniReturn> {
    let reg = registry::read();
    let e = reg.ep(ep)?;
    *e.lock_binding() = Binding { remote: Some((remote_addr, remote_id)), ..Default::default() };
    Ok(())
}

/// GNI_EpSetEventData: what the endpoint's posts put in the inst_id of their local and remote
/// CQ events from now on, bound or not.
pub fn ep_set_event_data(ep: usize, local_event: u32, remote_event: u32) -> Result<(), GniReturn> {
    let reg = registry::read();
    *reg.ep(ep)?.event_data.lock().unwrap_or_else(|e| e.into_inner()) = Some((local_event, remote_event));
    Ok(())
}

/// GNI_EpUnbind: forgets the binding, and with it the SMSG mailbox and any datagram.
pub fn ep_unbind(ep: usize) -> Result<(), GniReturn> {
    let reg = registry::read();
    let e = reg.ep(ep)?;
    datagram::forget(ep);
    *e.lock_binding() = Default::default();
    e.smsg_max_send.store(0, Ordering::Relaxed);
    *e.lock_inbox() = None;
    *e.lock_shared_mbox() = None;
    Ok(())
}

/// GNI_EpDestroy: its datagrams withdrawn before the registry is let go, so that no new
/// endpoint has its handle yet.
pub fn ep_destroy(ep: usize) -> Result<(), GniReturn> {
    let mut reg = registry::write();
    let e = reg.eps.remove(&ep).ok_or(GNI_RC_INVALID_PARAM)?;
    datagram::forget(ep);
    drop(reg);
    if let Some(c) = &e.cq {
        c.eps.fetch_sub(1, Ordering::Relaxed);
    }
    Ok(())
}

/// GNI_CqCreate: a queue of `entry_count` events on NIC `nic`.
pub fn cq_create(
    nic: usize,
    entry_count: u32,
    mode: u32,
    handler: Option<GniCqHandler>,
    context: usize,
) -> Result<usize, GniReturn> {
    if entry_count == 0 {
        return Err(GNI_RC_INVALID_PARAM);
    }
    let mut reg = registry::write();
    reg.nic(nic)?;
    let mut cq = Cq::new(nic, entry_count, mode & GNI_CQ_BLOCKING != 0, handler, context);
    if let Some(j) = job::get() {
        // In a job every CQ may receive remote events, so its events live in a shared ring.
        let index = j.claim_ring(entry_count).ok_or(GNI_RC_ERROR_RESOURCE)?;
        cq = cq.in_ring(&j.me.rings[index as usize], index);
    }
    let obj = Arc::new(cq);
    let h = handle_of(&obj);
    reg.cqs.insert(h, obj);
    Ok(h)
}

/// GNI_CqDestroy: refused while an endpoint still uses the queue.
pub fn cq_destroy(cq: usize) -> Result<(), GniReturn> {
    let mut reg = registry::write();
    if reg.cq(cq)?.eps.load(Ordering::Relaxed) > 0 {
        return Err(GNI_RC_ERROR_RESOURCE);
    }
    reg.cqs.remove(&cq);
    Ok(())
}

/// Looks a CQ up without holding the registry while the caller waits on it.
pub fn cq_find(cq: usize) -> Result<Arc<Cq>, GniReturn> {
    registry::read().cq(cq).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_credentials_parse_as_cray_launchers_write_them() {
        assert_eq!("219".parse::<JobCredentials>().unwrap(), JobCredentials(vec![219]));
        assert_eq!(" 0x2a0000:1234 ".parse::<JobCredentials>().unwrap(), JobCredentials(vec![0x2a_0000, 1234]));
        let e = "12:x1".parse::<JobCredentials>().unwrap_err();
        assert_eq!(e.to_string(), "\"x1\" is not a number (decimal or 0x hexadecimal)");
        assert!("".parse::<JobCredentials>().is_err());
        assert!("4294967296".parse::<JobCredentials>().is_err());
    }
}
