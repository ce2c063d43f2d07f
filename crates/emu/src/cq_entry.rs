//! The emulator's encoding of a `gni_cq_entry_t`, which programs read and edit only through the
//! accessors behind the `GNI_CQ_*` macros (exported in [`crate::exports`]):
//!
//! ```text
//!  63..62  type      GNI_CQ_EVENT_TYPE_POST (0) or GNI_CQ_EVENT_TYPE_SMSG (1)
//!  61      remote    1: delivered to a destination CQ (remote event, CQ write, SMSG arrival)
//!  60      overrun   never set on a delivered entry (overrun is reported by the return code)
//!  59..56  status    0 = OK (the emulator never produces failed transfers)
//!  55..0   payload, by kind:
//!    remote POST event (PUT/GET/AMO with REMOTE_EVENT, CQ write):
//!          47..0  data: the CQ write's cqwrite_value (low 48 bits), or the sender's inst_id
//!    every other event (local POST completion, SMSG sent, SMSG arrived):
//!          55..32 inst_id (24 bits): local events carry the endpoint's remote_id, remote events
//!                 the sender's inst_id (uGNI's defaults)
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

/// An entry with inst_id and msg_id (every kind except remote POST events).
pub fn entry_with_ids(ty: u64, remote: bool, inst_id: u32, msg_id: u32) -> u64 {
    (ty << TYPE_SHIFT)
        | if remote { REMOTE_BIT } else { 0 }
        | ((inst_id as u64 & INST_MASK) << INST_SHIFT)
        | msg_id as u64
}

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
    }
}
