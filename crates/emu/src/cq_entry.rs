//! The emulator's encoding of a `gni_cq_entry_t`, which programs read and edit only through the
//! accessors behind the `GNI_CQ_*` macros (exported in [`crate::exports`]):
//!
//! ```text
//!  63..62  type      GNI_CQ_EVENT_TYPE_POST (0) or GNI_CQ_EVENT_TYPE_SMSG (1)
//!  61      remote    1: delivered to a destination CQ (remote event, CQ write, SMSG arrival)
//!  60      overrun   set only on the entry GNI_CqGetEvent/GNI_CqWaitEvent write with
//!                    GNI_RC_ERROR_RESOURCE when the CQ overran (every other bit 0); never on a
//!                    delivered event
//!  59..56  status    0 = OK (the emulator never produces failed transfers)
//!  55..0   payload, by kind:
//!    remote POST event (PUT/GET/AMO with REMOTE_EVENT, CQ write):
//!          47..0  data: the CQ write's cqwrite_value (low 48 bits), or the sending endpoint's
//!                 remote event data (GNI_EpSetEventData; by default its domain's inst_id),
//!                 read as inst_id (24 bits) and rem_inst_id (32 bits)
//!    every other event (local POST completion, SMSG sent, SMSG arrived):
//!          55..32 inst_id (24 bits): local POST events carry the endpoint's local event data
//!                 (GNI_EpSetEventData; by default the remote_id it is bound to), SMSG events the
//!                 peer's inst_id
//!          31..0  msg_id: the SMSG msg_id, or for a local POST event the completion id that
//!                 GNI_GetCompleted uses to find the descriptor
//! ```

pub const TYPE_POST: u64 = 0;
pub const TYPE_SMSG: u64 = 1;

const TYPE_SHIFT: u32 = 62;
const REMOTE_BIT: u64 = 1 << 61;
const OVERRUN_BIT: u64 = 1 << 60;
const STATUS_SHIFT: u32 = 56;
const STATUS_MASK: u64 = 0xf;
const DATA_MASK: u64 = (1 << 48) - 1;
const INST_SHIFT: u32 = 32;
const INST_MASK: u64 = 0xff_ffff;
pub const MSG_MASK: u64 = 0xffff_ffff;
const REM_INST_MASK: u64 = 0xffff_ffff;

/// An entry with inst_id and msg_id (every kind except remote POST events).
pub fn entry_with_ids(ty: u64, remote: bool, inst_id: u32, msg_id: u32) -> u64 {
    (ty << TYPE_SHIFT)
        | if remote { REMOTE_BIT } else { 0 }
        | ((inst_id as u64 & INST_MASK) << INST_SHIFT)
        | msg_id as u64
}

/// What GNI_CqGetEvent and GNI_CqWaitEvent write with GNI_RC_ERROR_RESOURCE after events were
/// lost: `GNI_CQ_OVERRUN` is 1 on it, and it is no event (GNI_GetCompleted finds no descriptor
/// for it). gni_pub.h leaves the entry undefined on that code; Cray's own kernel-side code
/// asserts the overrun bit on it (docs/abi.md, section 1.5).
pub const OVERRUN_ENTRY: u64 = OVERRUN_BIT;

/// A remote POST event carrying 48 bits of data.
pub fn remote_post_entry(data: u64) -> u64 {
    (TYPE_POST << TYPE_SHIFT) | REMOTE_BIT | (data & DATA_MASK)
}

pub fn ty(e: u64) -> u64 {
    e >> TYPE_SHIFT
}
pub fn is_remote(e: u64) -> bool {
    e & REMOTE_BIT != 0
}
pub fn status(e: u64) -> u64 {
    (e >> STATUS_SHIFT) & STATUS_MASK
}
pub fn overrun(e: u64) -> bool {
    e & OVERRUN_BIT != 0
}
pub fn data(e: u64) -> u64 {
    e & DATA_MASK
}
fn carries_data(e: u64) -> bool {
    ty(e) == TYPE_POST && is_remote(e)
}
pub fn inst_id(e: u64) -> u64 {
    if carries_data(e) {
        e & INST_MASK
    } else {
        (e >> INST_SHIFT) & INST_MASK
    }
}
/// The 32-bit remote inst_id of a remote POST event; of any other entry, its inst_id.
pub fn rem_inst_id(e: u64) -> u64 {
    if carries_data(e) {
        e & REM_INST_MASK
    } else {
        inst_id(e)
    }
}
pub fn msg_id(e: u64) -> u64 {
    if carries_data(e) {
        0
    } else {
        e & MSG_MASK
    }
}
pub fn set_inst_id(e: u64, v: u64) -> u64 {
    if carries_data(e) {
        (e & !INST_MASK) | (v & INST_MASK)
    } else {
        (e & !(INST_MASK << INST_SHIFT)) | ((v & INST_MASK) << INST_SHIFT)
    }
}
pub fn set_rem_inst_id(e: u64, v: u64) -> u64 {
    if carries_data(e) {
        (e & !REM_INST_MASK) | (v & REM_INST_MASK)
    } else {
        set_inst_id(e, v)
    }
}
pub fn set_msg_id(e: u64, v: u64) -> u64 {
    if carries_data(e) {
        e
    } else {
        (e & !MSG_MASK) | (v & MSG_MASK)
    }
}
pub fn set_type(e: u64, v: u64) -> u64 {
    (e & !(3 << TYPE_SHIFT)) | ((v & 3) << TYPE_SHIFT)
}
pub fn clear_status(e: u64) -> u64 {
    e & !(STATUS_MASK << STATUS_SHIFT)
}

/// What GNI_CqErrorStr writes for an entry: its kind and its status in words.
pub fn describe(e: u64) -> String {
    let kind = match ty(e) {
        TYPE_POST => "POST",
        TYPE_SMSG => "SMSG",
        2 => "DMAPP",
        _ => "MSGQ",
    };
    let side = if is_remote(e) { "remote" } else { "local" };
    match status(e) {
        0 if overrun(e) => "CQ overrun: events were lost, this entry is none of them".to_string(),
        0 => format!("{side} {kind} event: status OK, no error"),
        s => format!("{side} {kind} event: error status {s:#x}, which the emulator never produces"),
    }
}

/// GNI_CqErrorRecoverable's verdict: Some(true) for an entry without an error (retrying what it
/// completes is safe); Some(false) for an overrun (the lost events are no one's to retry); None
/// for an error status, which the emulator never produces, so it has no meaning to translate.
pub fn recoverable(e: u64) -> Option<bool> {
    (status(e) == 0).then_some(!overrun(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let e = entry_with_ids(TYPE_SMSG, true, 0xabcdef, 0x1234_5678);
        assert_eq!((ty(e), is_remote(e), inst_id(e), msg_id(e), status(e)), (1, true, 0xabcdef, 0x1234_5678, 0));
        let e = remote_post_entry(0xffff_1234_5678_9abc);
        assert_eq!((ty(e), is_remote(e), data(e), msg_id(e)), (0, true, 0x1234_5678_9abc, 0));
        let e = set_inst_id(entry_with_ids(TYPE_POST, false, 1, 2), 7);
        assert_eq!((inst_id(e), msg_id(e)), (7, 2));
        assert_eq!(ty(set_type(e, 1)), 1);
        let e = remote_post_entry(0xabcd_1234_5678);
        assert_eq!((inst_id(e), rem_inst_id(e)), (0x34_5678, 0x1234_5678));
        assert_eq!(rem_inst_id(set_rem_inst_id(e, 0x8765_4321)), 0x8765_4321);
        assert_eq!(data(set_rem_inst_id(e, 0x8765_4321)) >> 32, 0xabcd, "the rest of the data stays");
        let local = entry_with_ids(TYPE_POST, false, 9, 3);
        assert_eq!((rem_inst_id(local), inst_id(set_rem_inst_id(local, 4))), (9, 4));
    }

    #[test]
    fn error_descriptions_and_verdicts() {
        let ok = entry_with_ids(TYPE_POST, false, 1, 2);
        assert_eq!(describe(ok), "local POST event: status OK, no error");
        assert_eq!(recoverable(ok), Some(true));
        assert_eq!(recoverable(OVERRUN_ENTRY), Some(false), "lost events cannot be retried");
        let bad = ok | (5 << STATUS_SHIFT);
        assert_eq!(describe(bad), "local POST event: error status 0x5, which the emulator never produces");
        assert_eq!(recoverable(bad), None);
        assert!(describe(remote_post_entry(1)).starts_with("remote POST event"));
        assert_eq!(describe(OVERRUN_ENTRY), "CQ overrun: events were lost, this entry is none of them");
    }
}
