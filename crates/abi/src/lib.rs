//! uGNI data layouts and constants, exactly as `gni_pub.h` (GNI_MINOR_REV 0x5c) lays them out on
//! x86-64. Data only: the functions are declared where they are called (the shim's seam) or
//! defined (the emulator). Enums that cross the C boundary are plain integers, because a C caller
//! may pass any value and a Rust `enum` must never hold an undeclared one.
#![no_std]
#![forbid(unsafe_code)]

use core::ffi::c_void;

/// `gni_return_t`.
pub type GniReturn = u32;
pub const GNI_RC_SUCCESS: GniReturn = 0;
pub const GNI_RC_NOT_DONE: GniReturn = 1;
pub const GNI_RC_INVALID_PARAM: GniReturn = 2;
pub const GNI_RC_ERROR_RESOURCE: GniReturn = 3;
pub const GNI_RC_TIMEOUT: GniReturn = 4;
pub const GNI_RC_PERMISSION_ERROR: GniReturn = 5;
pub const GNI_RC_DESCRIPTOR_ERROR: GniReturn = 6;
pub const GNI_RC_ALIGNMENT_ERROR: GniReturn = 7;
pub const GNI_RC_INVALID_STATE: GniReturn = 8;
pub const GNI_RC_NO_MATCH: GniReturn = 9;
pub const GNI_RC_SIZE_ERROR: GniReturn = 10;
pub const GNI_RC_TRANSACTION_ERROR: GniReturn = 11;
pub const GNI_RC_ILLEGAL_OP: GniReturn = 12;
pub const GNI_RC_ERROR_NOMEM: GniReturn = 13;

/// `gni_post_type_t`.
pub type GniPostType = u32;
pub const GNI_POST_RDMA_PUT: GniPostType = 1;
pub const GNI_POST_RDMA_GET: GniPostType = 2;
pub const GNI_POST_FMA_PUT: GniPostType = 3;
pub const GNI_POST_FMA_PUT_W_SYNCFLAG: GniPostType = 4;
pub const GNI_POST_FMA_GET: GniPostType = 5;
pub const GNI_POST_AMO: GniPostType = 6;
pub const GNI_POST_CQWRITE: GniPostType = 7;
pub const GNI_POST_CE: GniPostType = 8;
pub const GNI_POST_FMA_GET_W_FLAG: GniPostType = 9;
pub const GNI_POST_AMO_W_FLAG: GniPostType = 10;

/// Name of a post type as uGNI spells it, for traces and records.
pub fn post_type_name(t: GniPostType) -> &'static str {
    match t {
        GNI_POST_RDMA_PUT => "RDMA_PUT",
        GNI_POST_RDMA_GET => "RDMA_GET",
        GNI_POST_FMA_PUT => "FMA_PUT",
        GNI_POST_FMA_PUT_W_SYNCFLAG => "FMA_PUT_W_SYNCFLAG",
        GNI_POST_FMA_GET => "FMA_GET",
        GNI_POST_AMO => "AMO",
        GNI_POST_CQWRITE => "CQWRITE",
        GNI_POST_CE => "CE",
        GNI_POST_FMA_GET_W_FLAG => "FMA_GET_W_FLAG",
        GNI_POST_AMO_W_FLAG => "AMO_W_FLAG",
        _ => "UNKNOWN",
    }
}

/// Handles are pointers to opaque library structs.
pub type GniNicHandle = *mut c_void;
pub type GniCdmHandle = *mut c_void;
pub type GniEpHandle = *mut c_void;
pub type GniCqHandle = *mut c_void;

/// `gni_mem_handle_t`: 16 bytes, opaque to users.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GniMemHandle {
    pub qword1: u64,
    pub qword2: u64,
}

/// `gni_post_descriptor_t`: 184 bytes, align 8 (aries-abi.md §1.3).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GniPostDescriptor {
    pub next_descr: *mut c_void,
    pub prev_descr: *mut c_void,
    pub post_id: u64,
    pub status: u64,
    pub cq_mode_complete: u16,
    pub r#type: GniPostType,
    pub cq_mode: u16,
    pub dlvr_mode: u16,
    pub local_addr: u64,
    pub local_mem_hndl: GniMemHandle,
    pub remote_addr: u64,
    pub remote_mem_hndl: GniMemHandle,
    pub length: u64,
    pub rdma_mode: u16,
    pub src_cq_hndl: GniCqHandle,
    pub sync_flag_value: u64,
    pub sync_flag_addr: u64,
    pub amo_cmd: u32,
    pub first_operand: u64,
    pub second_operand: u64,
    pub cqwrite_value: u64,
    pub ce_cmd: u32,
    pub ce_mode: u32,
    pub ce_red_id: u64,
}

/// `gni_smsg_attr_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GniSmsgAttr {
    pub msg_type: u32,
    pub msg_buffer: *mut c_void,
    pub buff_size: u32,
    pub mem_hndl: GniMemHandle,
    pub mbox_offset: u32,
    pub mbox_maxcredit: u16,
    pub msg_maxsize: u32,
}

/// Largest SMSG message, header plus data.
pub const GNI_SMSG_MAX_SIZE: u32 = 65535;

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn post_descriptor_layout_matches_gni_pub_h() {
        assert_eq!(size_of::<GniPostDescriptor>(), 184);
        assert_eq!(align_of::<GniPostDescriptor>(), 8);
        let offsets = [
            (offset_of!(GniPostDescriptor, next_descr), 0),
            (offset_of!(GniPostDescriptor, prev_descr), 8),
            (offset_of!(GniPostDescriptor, post_id), 16),
            (offset_of!(GniPostDescriptor, status), 24),
            (offset_of!(GniPostDescriptor, cq_mode_complete), 32),
            (offset_of!(GniPostDescriptor, r#type), 36),
            (offset_of!(GniPostDescriptor, cq_mode), 40),
            (offset_of!(GniPostDescriptor, dlvr_mode), 42),
            (offset_of!(GniPostDescriptor, local_addr), 48),
            (offset_of!(GniPostDescriptor, local_mem_hndl), 56),
            (offset_of!(GniPostDescriptor, remote_addr), 72),
            (offset_of!(GniPostDescriptor, remote_mem_hndl), 80),
            (offset_of!(GniPostDescriptor, length), 96),
            (offset_of!(GniPostDescriptor, rdma_mode), 104),
            (offset_of!(GniPostDescriptor, src_cq_hndl), 112),
            (offset_of!(GniPostDescriptor, sync_flag_value), 120),
            (offset_of!(GniPostDescriptor, sync_flag_addr), 128),
            (offset_of!(GniPostDescriptor, amo_cmd), 136),
            (offset_of!(GniPostDescriptor, first_operand), 144),
            (offset_of!(GniPostDescriptor, second_operand), 152),
            (offset_of!(GniPostDescriptor, cqwrite_value), 160),
            (offset_of!(GniPostDescriptor, ce_cmd), 168),
            (offset_of!(GniPostDescriptor, ce_mode), 172),
            (offset_of!(GniPostDescriptor, ce_red_id), 176),
        ];
        for (i, (got, want)) in offsets.iter().enumerate() {
            assert_eq!(got, want, "field #{i} of gni_post_descriptor_t");
        }
    }

    #[test]
    fn small_types_have_c_sizes() {
        assert_eq!(size_of::<GniMemHandle>(), 16);
        assert_eq!(size_of::<GniSmsgAttr>(), 56);
        assert_eq!(offset_of!(GniSmsgAttr, mem_hndl), 24);
        assert_eq!(offset_of!(GniSmsgAttr, msg_maxsize), 48);
    }
}
