//! uGNI (`gni_pub.h`, GNI_MINOR_REV 0x5c) as laid out on x86-64: handles, the post descriptor,
//! return codes, post types, delivery modes, and the type of every function aar defines or calls.

use core::ffi::{c_uint, c_void};

/// `gni_return_t`.
pub type GniReturn = u32;
/// The call succeeded.
pub const GNI_RC_SUCCESS: GniReturn = 0;
/// Nothing to return yet (e.g. an empty completion queue).
pub const GNI_RC_NOT_DONE: GniReturn = 1;
/// An argument is invalid.
pub const GNI_RC_INVALID_PARAM: GniReturn = 2;
/// A resource is exhausted or still in use.
pub const GNI_RC_ERROR_RESOURCE: GniReturn = 3;
/// A wait timed out.
pub const GNI_RC_TIMEOUT: GniReturn = 4;
/// Not permitted.
pub const GNI_RC_PERMISSION_ERROR: GniReturn = 5;
/// A post descriptor is invalid or unknown.
pub const GNI_RC_DESCRIPTOR_ERROR: GniReturn = 6;
/// An address or length is misaligned.
pub const GNI_RC_ALIGNMENT_ERROR: GniReturn = 7;
/// The object is not in a state that allows the call.
pub const GNI_RC_INVALID_STATE: GniReturn = 8;
/// No matching entry.
pub const GNI_RC_NO_MATCH: GniReturn = 9;
/// A size is out of range.
pub const GNI_RC_SIZE_ERROR: GniReturn = 10;
/// The network transaction failed.
pub const GNI_RC_TRANSACTION_ERROR: GniReturn = 11;
/// The operation is not supported (libaar.so returns it for a function the loaded libugni lacks).
pub const GNI_RC_ILLEGAL_OP: GniReturn = 12;
/// Out of memory.
pub const GNI_RC_ERROR_NOMEM: GniReturn = 13;

/// `gni_post_type_t`.
pub type GniPostType = u32;
/// RDMA (BTE) put: data travels in the requests.
pub const GNI_POST_RDMA_PUT: GniPostType = 1;
/// RDMA (BTE) get: data comes back in the responses.
pub const GNI_POST_RDMA_GET: GniPostType = 2;
/// FMA put.
pub const GNI_POST_FMA_PUT: GniPostType = 3;
/// FMA put followed by a synchronisation flag write.
pub const GNI_POST_FMA_PUT_W_SYNCFLAG: GniPostType = 4;
/// FMA get.
pub const GNI_POST_FMA_GET: GniPostType = 5;
/// Atomic memory operation.
pub const GNI_POST_AMO: GniPostType = 6;
/// Write of a remote completion-queue entry.
pub const GNI_POST_CQWRITE: GniPostType = 7;
/// Collective-engine operation.
pub const GNI_POST_CE: GniPostType = 8;
/// FMA get followed by a flag write.
pub const GNI_POST_FMA_GET_W_FLAG: GniPostType = 9;
/// Atomic memory operation followed by a flag write.
pub const GNI_POST_AMO_W_FLAG: GniPostType = 10;

/// True for the post types whose data comes back in the responses (RDMA and FMA GETs): their
/// requests are one flit per packet. Every other post type carries its data in the requests.
pub const fn post_type_is_get(t: GniPostType) -> bool {
    matches!(t, GNI_POST_RDMA_GET | GNI_POST_FMA_GET | GNI_POST_FMA_GET_W_FLAG)
}

/// The bytes a post of type `t` moves, whose descriptor says `length`: a CQ write's one packet
/// carries only its `cqwrite_value` (uGNI does not read `length` for it, and a chained CQ write's
/// elements have none), so it moves none.
pub const fn post_payload_bytes(t: GniPostType, length: u64) -> u64 {
    if t == GNI_POST_CQWRITE {
        0
    } else {
        length
    }
}

/// Name of a post type as uGNI spells it, for traces and records.
pub const fn post_type_name(t: GniPostType) -> &'static str {
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

// ---- AMO commands: the `amo_cmd` field (`gni_fma_cmd_type_t`) -----------------------------------
//
// gni_pub.h names every command; they are built from the fetching 64-bit codes below and the bits
// after them (docs/abi.md §1.4). The bits have no name in gni_pub.h, hence no `GNI_` prefix.

/// `gni_fma_cmd_type_t`: the atomic operation of an AMO post.
pub type GniFmaCmdType = u32;
/// First generation, fetching: add the first operand.
pub const GNI_FMA_ATOMIC_FADD: GniFmaCmdType = 0x008;
/// First generation, fetching: and with the first operand.
pub const GNI_FMA_ATOMIC_FAND: GniFmaCmdType = 0x009;
/// First generation, fetching: or with the first operand.
pub const GNI_FMA_ATOMIC_FOR: GniFmaCmdType = 0x00a;
/// First generation, fetching: exclusive-or with the first operand.
pub const GNI_FMA_ATOMIC_FXOR: GniFmaCmdType = 0x00b;
/// First generation, fetching: and with the first operand, then exclusive-or with the second.
pub const GNI_FMA_ATOMIC_FAX: GniFmaCmdType = 0x00c;
/// First generation, fetching: if the word equals the first operand, store the second (gni_pub.h
/// has no non-fetching form).
pub const GNI_FMA_ATOMIC_CSWAP: GniFmaCmdType = 0x00d;
/// Second generation, fetching, 64-bit: and.
pub const GNI_FMA_ATOMIC2_FAND: GniFmaCmdType = 0x041;
/// Second generation, fetching, 64-bit: or.
pub const GNI_FMA_ATOMIC2_FOR: GniFmaCmdType = 0x043;
/// Second generation, fetching, 64-bit: exclusive-or.
pub const GNI_FMA_ATOMIC2_FXOR: GniFmaCmdType = 0x045;
/// Second generation, fetching, 64-bit: store the first operand.
pub const GNI_FMA_ATOMIC2_FSWAP: GniFmaCmdType = 0x047;
/// Second generation, fetching, 64-bit: and with the first operand, exclusive-or with the second.
pub const GNI_FMA_ATOMIC2_FAX: GniFmaCmdType = 0x049;
/// Second generation, fetching, 64-bit: compare with the first operand, store the second.
pub const GNI_FMA_ATOMIC2_FCSWAP: GniFmaCmdType = 0x04b;
/// Second generation, fetching, 64-bit: signed minimum.
pub const GNI_FMA_ATOMIC2_FIMIN: GniFmaCmdType = 0x051;
/// Second generation, fetching, 64-bit: signed maximum.
pub const GNI_FMA_ATOMIC2_FIMAX: GniFmaCmdType = 0x053;
/// Second generation, fetching, 64-bit: integer add.
pub const GNI_FMA_ATOMIC2_FIADD: GniFmaCmdType = 0x055;
/// Second generation, fetching, 64-bit: floating-point minimum.
pub const GNI_FMA_ATOMIC2_FFPMIN: GniFmaCmdType = 0x059;
/// Second generation, fetching, 64-bit: floating-point maximum.
pub const GNI_FMA_ATOMIC2_FFPMAX: GniFmaCmdType = 0x05b;
/// Second generation, fetching, 64-bit: floating-point add.
pub const GNI_FMA_ATOMIC2_FFPADD: GniFmaCmdType = 0x05d;
/// Set: the command does not fetch (`GNI_FMA_ATOMIC_ADD` is `GNI_FMA_ATOMIC_FADD` with it).
pub const AMO_CMD_NON_FETCHING: GniFmaCmdType = 0x100;
/// Set in a first-generation command: its cached form (`_C`).
pub const AMO_CMD_CACHED: GniFmaCmdType = 0x010;
/// Set in a second-generation command: its cached form (`_C`, `_SC`).
pub const AMO_CMD2_CACHED: GniFmaCmdType = 0x020;
/// Set in a second-generation command on 64-bit operands; its 32-bit form (`_S`) clears it and
/// sets [`AMO_CMD_OPERANDS_32`] (`GNI_FMA_ATOMIC2_FAND_S` 0x240, `GNI_FMA_ATOMIC2_FAND` 0x041).
pub const AMO_CMD2_OPERANDS_64: GniFmaCmdType = 0x001;
/// Set: a second-generation command on 32-bit operands (`_S`, `_SC`) and a 4-byte word.
pub const AMO_CMD_OPERANDS_32: GniFmaCmdType = 0x200;

// ---- Mode and flag bits of the calls that set up NICs, queues, registrations and posts ---------

/// `GNI_CdmCreate` mode: posts on the domain's NIC may ask for both a local and a global event.
pub const GNI_CDM_MODE_DUAL_EVENTS: u32 = 0x0000_1000;
/// `GNI_CqCreate` mode: `GNI_CqWaitEvent` may block on the queue.
pub const GNI_CQ_BLOCKING: u32 = 0x1;
/// `GNI_MemRegister` flag: the region may be read remotely but not written.
pub const GNI_MEM_READ_ONLY: u32 = 0x1;
/// `cq_mode` of a post: an event on the local CQ when the data has left.
pub const GNI_CQMODE_LOCAL_EVENT: u16 = 0x1;
/// `cq_mode` of a post: an event on the local CQ when the data is globally visible.
pub const GNI_CQMODE_GLOBAL_EVENT: u16 = 0x2;
/// `cq_mode` of a post: an event on the CQ of the remote registration.
pub const GNI_CQMODE_REMOTE_EVENT: u16 = 0x4;
/// `gni_smsg_type_t`: a mailbox.
pub const GNI_SMSG_TYPE_MBOX: u32 = 1;
/// `gni_smsg_type_t`: a mailbox with retransmission.
pub const GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT: u32 = 2;
/// The tag `GNI_SmsgGetNextWTag` takes to match any message.
pub const GNI_SMSG_ANY_TAG: u8 = 0xff;

/// `gni_post_state_t`: the state of a datagram exchange (`GNI_EpPostDataTest*`/`Wait*`).
pub type GniPostState = u32;
/// The datagram is still being exchanged.
pub const GNI_POST_PENDING: GniPostState = 0;
/// The exchange completed: both sides' data arrived.
pub const GNI_POST_COMPLETED: GniPostState = 1;
/// The exchange failed.
pub const GNI_POST_ERROR: GniPostState = 2;
/// The exchange timed out.
pub const GNI_POST_TIMEOUT: GniPostState = 3;
/// The exchange was cancelled.
pub const GNI_POST_TERMINATED: GniPostState = 4;
/// The remote side's data arrived; the local side's is still in flight.
pub const GNI_POST_REMOTE_DATA: GniPostState = 5;
/// Largest datagram `GNI_EpPostData*` exchanges, in bytes.
pub const GNI_DATAGRAM_MAXSIZE: u32 = 128;

/// `gni_nic_device_t`: the kind of network interface (`GNI_GetDeviceType`).
pub type GniNicDevice = u32;
/// Gemini (Cray XE/XK).
pub const GNI_DEVICE_GEMINI: GniNicDevice = 0;
/// Aries (Cray XC): the only device the emulator reports.
pub const GNI_DEVICE_ARIES: GniNicDevice = 1;
/// Pisces.
pub const GNI_DEVICE_PISCES: GniNicDevice = 2;

/// `gni_mem_segment_t`: one segment of a `GNI_MemRegisterSegments` registration.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GniMemSegment {
    /// Start of the segment.
    pub address: u64,
    /// Bytes in the segment.
    pub length: u64,
}

/// `gni_nic_handle_t`: a NIC attached to a communication domain (a pointer to an opaque struct).
pub type GniNicHandle = *mut c_void;
/// `gni_cdm_handle_t`: a communication domain.
pub type GniCdmHandle = *mut c_void;
/// `gni_ep_handle_t`: an endpoint, bound to one remote NIC address and instance.
pub type GniEpHandle = *mut c_void;
/// `gni_cq_handle_t`: a completion queue.
pub type GniCqHandle = *mut c_void;
/// `gni_cq_entry_t`: one completion-queue event.
pub type GniCqEntry = u64;
/// The completion handler `GNI_CqCreate` may take: `void (*)(gni_cq_entry_t *, void *)`.
pub type GniCqHandler = unsafe extern "C" fn(*mut GniCqEntry, *mut c_void);

/// `gni_mem_handle_t`: 16 bytes, opaque to users.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GniMemHandle {
    /// First opaque word.
    pub qword1: u64,
    /// Second opaque word.
    pub qword2: u64,
}

/// `gni_post_descriptor_t`: 184 bytes, align 8. aar reads `type` and `length` and writes only
/// the routing byte of `dlvr_mode`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GniPostDescriptor {
    /// Next descriptor: a list link, or the first element of a chained (CT) post. The chain
    /// elements are a different, non-public struct: never read them as descriptors.
    pub next_descr: *mut c_void,
    /// Previous descriptor (list link).
    pub prev_descr: *mut c_void,
    /// The caller's identifier, returned with the completion.
    pub post_id: u64,
    /// Completion status, written by uGNI.
    pub status: u64,
    /// Completion-queue events already delivered, written by uGNI.
    pub cq_mode_complete: u16,
    /// What the post does (`GNI_POST_*`).
    pub r#type: GniPostType,
    /// Which completion events to generate (`GNI_CQMODE_*`).
    pub cq_mode: u16,
    /// Routing of the post's packets (`GNI_DLVMODE_*`): the routing byte and flag bits.
    pub dlvr_mode: u16,
    /// Local buffer address.
    pub local_addr: u64,
    /// Registration of the local buffer.
    pub local_mem_hndl: GniMemHandle,
    /// Remote buffer address.
    pub remote_addr: u64,
    /// Registration of the remote buffer.
    pub remote_mem_hndl: GniMemHandle,
    /// Bytes to transfer.
    pub length: u64,
    /// RDMA flags (`GNI_RDMAMODE_*`).
    pub rdma_mode: u16,
    /// Completion queue for local events, overriding the endpoint's.
    pub src_cq_hndl: GniCqHandle,
    /// Value of the synchronisation flag (`*_W_SYNCFLAG` posts).
    pub sync_flag_value: u64,
    /// Remote address of the synchronisation flag.
    pub sync_flag_addr: u64,
    /// Atomic operation (`gni_fma_cmd_type_t`) of an AMO post.
    pub amo_cmd: GniFmaCmdType,
    /// First AMO operand.
    pub first_operand: u64,
    /// Second AMO operand.
    pub second_operand: u64,
    /// Value of a CQ write (the low 6 bytes are usable).
    pub cqwrite_value: u64,
    /// Collective-engine command.
    pub ce_cmd: u32,
    /// Collective-engine mode.
    pub ce_mode: u32,
    /// Collective-engine reduction identifier.
    pub ce_red_id: u64,
}

/// `gni_smsg_attr_t`: a short-message mailbox, local or remote.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GniSmsgAttr {
    /// Mailbox type (`GNI_SMSG_TYPE_*`).
    pub msg_type: u32,
    /// The mailbox buffer.
    pub msg_buffer: *mut c_void,
    /// Size of the mailbox buffer.
    pub buff_size: u32,
    /// Registration of the mailbox buffer.
    pub mem_hndl: GniMemHandle,
    /// Offset of this mailbox in the buffer.
    pub mbox_offset: u32,
    /// Credits: messages in flight before the receiver must release.
    pub mbox_maxcredit: u16,
    /// Largest message, header plus data.
    pub msg_maxsize: u32,
}

/// Largest SMSG message, header plus data.
pub const GNI_SMSG_MAX_SIZE: u32 = 65535;

// The x86-64 layouts of gni_pub.h (docs/abi.md §1.3), checked when the crate is built: a field of
// the wrong type, size or place fails the build of the shim and the emulator alike.
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    /// Bytes of the field `get` reads: a field narrowed inside its padding keeps every offset.
    const fn width<F>(_get: fn(&GniPostDescriptor) -> &F) -> usize {
        size_of::<F>()
    }
    assert!(size_of::<GniMemHandle>() == 16 && align_of::<GniMemHandle>() == 8, "gni_mem_handle_t");
    assert!(offset_of!(GniMemHandle, qword2) == 8, "gni_mem_handle_t.qword2");
    assert!(size_of::<GniMemSegment>() == 16 && offset_of!(GniMemSegment, length) == 8, "gni_mem_segment_t");
    assert!(size_of::<GniPostDescriptor>() == 184, "gni_post_descriptor_t is 184 bytes");
    assert!(align_of::<GniPostDescriptor>() == 8, "gni_post_descriptor_t is 8-aligned");
    type P = GniPostDescriptor;
    assert!(offset_of!(P, next_descr) == 0 && offset_of!(P, prev_descr) == 8);
    assert!(offset_of!(P, post_id) == 16 && offset_of!(P, status) == 24);
    assert!(offset_of!(P, cq_mode_complete) == 32);
    assert!(offset_of!(P, r#type) == 36 && width(|p| &p.r#type) == 4, "type, which aar reads: 4 bytes at 36");
    assert!(offset_of!(P, cq_mode) == 40 && width(|p| &p.cq_mode) == 2);
    assert!(
        offset_of!(P, dlvr_mode) == 42 && width(|p| &p.dlvr_mode) == 2,
        "dlvr_mode, which aar writes: 2 bytes at 42"
    );
    assert!(offset_of!(P, local_addr) == 48 && offset_of!(P, local_mem_hndl) == 56);
    assert!(offset_of!(P, remote_addr) == 72 && offset_of!(P, remote_mem_hndl) == 80);
    assert!(offset_of!(P, length) == 96 && width(|p| &p.length) == 8, "length, which aar reads: 8 bytes at 96");
    assert!(offset_of!(P, rdma_mode) == 104 && offset_of!(P, src_cq_hndl) == 112);
    assert!(offset_of!(P, sync_flag_value) == 120 && offset_of!(P, sync_flag_addr) == 128);
    assert!(offset_of!(P, amo_cmd) == 136 && offset_of!(P, first_operand) == 144);
    assert!(offset_of!(P, second_operand) == 152 && offset_of!(P, cqwrite_value) == 160);
    assert!(offset_of!(P, ce_cmd) == 168 && offset_of!(P, ce_mode) == 172 && offset_of!(P, ce_red_id) == 176);
    type S = GniSmsgAttr;
    assert!(size_of::<S>() == 56 && align_of::<S>() == 8, "gni_smsg_attr_t is 56 bytes");
    assert!(offset_of!(S, msg_type) == 0 && offset_of!(S, msg_buffer) == 8 && offset_of!(S, buff_size) == 16);
    assert!(offset_of!(S, mem_hndl) == 24 && offset_of!(S, mbox_offset) == 40);
    assert!(offset_of!(S, mbox_maxcredit) == 44 && offset_of!(S, msg_maxsize) == 48);
};

// ---- Delivery modes: the `dlvr_mode` field and GNI_SmsgSetDeliveryMode -------------------------

/// Adaptive routing with no bias towards minimal paths (the same value as `PERFORMANCE`).
pub const GNI_DLVMODE_ADAPTIVE0: u16 = 0x0000;
/// `GNI_DLVMODE_PERFORMANCE`: the default, plain adaptive routing.
pub const GNI_DLVMODE_PERFORMANCE: u16 = GNI_DLVMODE_ADAPTIVE0;
/// Gemini-era bit: no adaptivity.
pub const GNI_DLVMODE_NO_ADAPT: u16 = 0x0001;
/// Gemini-era bit: no hashing.
pub const GNI_DLVMODE_NO_HASH: u16 = 0x0002;
/// Gemini-era bit: no request adaptivity.
pub const GNI_DLVMODE_NO_RADAPT: u16 = 0x0004;
/// Minimal, not hashed, delivered in order (`NO_ADAPT | NO_HASH`; on Aries also `MNON_HASH`).
pub const GNI_DLVMODE_IN_ORDER: u16 = 0x0003;
/// Non-minimal, hashed.
pub const GNI_DLVMODE_NMIN_HASH: u16 = 0x0008;
/// Minimal, hashed.
pub const GNI_DLVMODE_MIN_HASH: u16 = 0x0010;
/// Adaptive, with a bias towards minimal paths that grows as the packet nears its destination.
pub const GNI_DLVMODE_ADAPTIVE1: u16 = 0x0020;
/// Adaptive, with a low bias towards minimal paths.
pub const GNI_DLVMODE_ADAPTIVE2: u16 = 0x0040;
/// Adaptive, with a high bias towards minimal paths ("High Bias").
pub const GNI_DLVMODE_ADAPTIVE3: u16 = 0x0080;
/// Flag: order the completion (tail) of a transfer; not a routing.
pub const GNI_DLVMODE_ORDERED_TAIL: u16 = 0x0100;

/// The routing byte of `dlvr_mode`. Every routing value above fits in it and every flag lies
/// above it, so a routing is changed by replacing this byte and keeping the rest.
pub const GNI_DLVMODE_ROUTING_MASK: u16 = 0x00ff;

/// Name of the routing byte of any `dlvr_mode` value, as uGNI spells it (without the
/// `GNI_DLVMODE_` prefix); `OTHER` for a combination uGNI does not name.
pub const fn dlvr_mode_name(dlvr_mode: u16) -> &'static str {
    match dlvr_mode & GNI_DLVMODE_ROUTING_MASK {
        GNI_DLVMODE_ADAPTIVE0 => "ADAPTIVE0",
        GNI_DLVMODE_ADAPTIVE1 => "ADAPTIVE1",
        GNI_DLVMODE_ADAPTIVE2 => "ADAPTIVE2",
        GNI_DLVMODE_ADAPTIVE3 => "ADAPTIVE3",
        GNI_DLVMODE_IN_ORDER => "IN_ORDER",
        GNI_DLVMODE_NMIN_HASH => "NMIN_HASH",
        GNI_DLVMODE_MIN_HASH => "MIN_HASH",
        GNI_DLVMODE_NO_ADAPT => "NO_ADAPT",
        GNI_DLVMODE_NO_HASH => "NO_HASH",
        GNI_DLVMODE_NO_RADAPT => "NO_RADAPT",
        _ => "OTHER",
    }
}

// ---- Function types: every uGNI function aar defines (the emulator) or interposes (the shim) ----
//
// Parameters in the order of gni_pub.h. The shim resolves the real function by name and calls it
// through these types; the emulator's definitions are checked against them at compile time.

/// `GNI_CdmCreate(inst_id, ptag, cookie, modes, *cdm)`.
pub type CdmCreateFn = unsafe extern "C" fn(u32, u8, u32, u32, *mut GniCdmHandle) -> GniReturn;
/// `GNI_CdmAttach(cdm, device_id, *local_address, *nic)`.
pub type CdmAttachFn = unsafe extern "C" fn(GniCdmHandle, u32, *mut u32, *mut GniNicHandle) -> GniReturn;
/// `GNI_CdmDestroy(cdm)`.
pub type CdmDestroyFn = unsafe extern "C" fn(GniCdmHandle) -> GniReturn;
/// `GNI_CdmGetNicAddress(device_id, *address, *cpu_id)`.
pub type CdmGetNicAddressFn = unsafe extern "C" fn(u32, *mut u32, *mut u32) -> GniReturn;
/// `GNI_EpCreate(nic, src_cq, *ep)`.
pub type EpCreateFn = unsafe extern "C" fn(GniNicHandle, GniCqHandle, *mut GniEpHandle) -> GniReturn;
/// `GNI_EpBind(ep, remote_addr, remote_id)`.
pub type EpBindFn = unsafe extern "C" fn(GniEpHandle, u32, u32) -> GniReturn;
/// `GNI_EpUnbind(ep)` and `GNI_EpDestroy(ep)`.
pub type EpFn = unsafe extern "C" fn(GniEpHandle) -> GniReturn;
/// `GNI_CqCreate(nic, entry_count, delay_count, mode, handler, context, *cq)`.
pub type CqCreateFn =
    unsafe extern "C" fn(GniNicHandle, u32, u32, u32, Option<GniCqHandler>, *mut c_void, *mut GniCqHandle) -> GniReturn;
/// `GNI_CqDestroy(cq)`.
pub type CqDestroyFn = unsafe extern "C" fn(GniCqHandle) -> GniReturn;
/// `GNI_CqGetEvent(cq, *event)`.
pub type CqGetEventFn = unsafe extern "C" fn(GniCqHandle, *mut GniCqEntry) -> GniReturn;
/// `GNI_CqWaitEvent(cq, timeout_ms, *event)`.
pub type CqWaitEventFn = unsafe extern "C" fn(GniCqHandle, u64, *mut GniCqEntry) -> GniReturn;
/// `GNI_GetCompleted(cq, event, **descriptor)`.
pub type GetCompletedFn = unsafe extern "C" fn(GniCqHandle, GniCqEntry, *mut *mut GniPostDescriptor) -> GniReturn;
/// `GNI_MemRegister(nic, address, length, dst_cq, flags, vmdh_index, *mem_hndl)`.
pub type MemRegisterFn =
    unsafe extern "C" fn(GniNicHandle, u64, u64, GniCqHandle, u32, u32, *mut GniMemHandle) -> GniReturn;
/// `GNI_MemDeregister(nic, *mem_hndl)`.
pub type MemDeregisterFn = unsafe extern "C" fn(GniNicHandle, *mut GniMemHandle) -> GniReturn;
/// `GNI_PostRdma`, `GNI_PostFma`, `GNI_PostCqWrite`, `GNI_CtPostFma`, `GNI_CtPostCqWrite`:
/// `(ep, *descriptor)`.
pub type PostFn = unsafe extern "C" fn(GniEpHandle, *mut GniPostDescriptor) -> GniReturn;

// Datagrams: a bound endpoint exchanges up to GNI_DATAGRAM_MAXSIZE bytes with the endpoint bound
// back to it (an unbound one with any endpoint bound to it), e.g. to trade SMSG attributes.

/// `GNI_EpPostData(ep, *in_data, data_len, *out_buf, buf_size)`.
pub type EpPostDataFn = unsafe extern "C" fn(GniEpHandle, *mut c_void, u16, *mut c_void, u16) -> GniReturn;
/// `GNI_EpPostDataWId`: `GNI_EpPostData`'s parameters and a final `datagram_id`.
pub type EpPostDataWIdFn = unsafe extern "C" fn(GniEpHandle, *mut c_void, u16, *mut c_void, u16, u64) -> GniReturn;
/// `GNI_EpPostDataTest(ep, *post_state, *remote_addr, *remote_id)`.
pub type EpPostDataTestFn = unsafe extern "C" fn(GniEpHandle, *mut GniPostState, *mut u32, *mut u32) -> GniReturn;
/// `GNI_EpPostDataTestById(ep, datagram_id, *post_state, *remote_addr, *remote_id)`.
pub type EpPostDataTestByIdFn =
    unsafe extern "C" fn(GniEpHandle, u64, *mut GniPostState, *mut u32, *mut u32) -> GniReturn;
/// `GNI_EpPostDataWait(ep, timeout_ms, *post_state, *remote_addr, *remote_id)`.
pub type EpPostDataWaitFn = unsafe extern "C" fn(GniEpHandle, u32, *mut GniPostState, *mut u32, *mut u32) -> GniReturn;
/// `GNI_EpPostDataWaitById(ep, datagram_id, timeout_ms, *post_state, *remote_addr, *remote_id)`.
pub type EpPostDataWaitByIdFn =
    unsafe extern "C" fn(GniEpHandle, u64, u32, *mut GniPostState, *mut u32, *mut u32) -> GniReturn;
/// `GNI_PostDataProbe(nic, *remote_addr, *remote_id)`: a completed datagram's peer.
pub type PostDataProbeFn = unsafe extern "C" fn(GniNicHandle, *mut u32, *mut u32) -> GniReturn;
/// `GNI_PostDataProbeById(nic, *datagram_id)`.
pub type PostDataProbeByIdFn = unsafe extern "C" fn(GniNicHandle, *mut u64) -> GniReturn;
/// `GNI_PostdataProbeWaitById(nic, timeout_ms, *datagram_id)` (Cray spells it with a lower-case
/// "d"): [`PostDataProbeByIdFn`], waiting up to `timeout_ms` for a datagram to complete.
pub type PostdataProbeWaitByIdFn = unsafe extern "C" fn(GniNicHandle, u32, *mut u64) -> GniReturn;
/// `GNI_EpPostDataCancel(ep)`.
pub type EpPostDataCancelFn = unsafe extern "C" fn(GniEpHandle) -> GniReturn;
/// `GNI_EpPostDataCancelById(ep, datagram_id)`.
pub type EpPostDataCancelByIdFn = unsafe extern "C" fn(GniEpHandle, u64) -> GniReturn;
/// `GNI_SmsgBufferSizeNeeded(*attr, *size)`.
pub type SmsgBufferSizeNeededFn = unsafe extern "C" fn(*mut GniSmsgAttr, *mut c_uint) -> GniReturn;
/// `GNI_SmsgInit(ep, *local, *remote)`.
pub type SmsgInitFn = unsafe extern "C" fn(GniEpHandle, *mut GniSmsgAttr, *mut GniSmsgAttr) -> GniReturn;
/// `GNI_SmsgSend(ep, *header, header_length, *data, data_length, msg_id)`.
pub type SmsgSendFn = unsafe extern "C" fn(GniEpHandle, *mut c_void, u32, *mut c_void, u32, u32) -> GniReturn;
/// `GNI_SmsgSendWTag`: `GNI_SmsgSend`'s parameters and a final tag.
pub type SmsgSendWTagFn = unsafe extern "C" fn(GniEpHandle, *mut c_void, u32, *mut c_void, u32, u32, u8) -> GniReturn;
/// `GNI_SmsgGetNext(ep, **header)`.
pub type SmsgGetNextFn = unsafe extern "C" fn(GniEpHandle, *mut *mut c_void) -> GniReturn;
/// `GNI_SmsgGetNextWTag(ep, **header, *tag)`.
pub type SmsgGetNextWTagFn = unsafe extern "C" fn(GniEpHandle, *mut *mut c_void, *mut u8) -> GniReturn;
/// `GNI_SmsgRelease(ep)`.
pub type SmsgReleaseFn = unsafe extern "C" fn(GniEpHandle) -> GniReturn;
/// `GNI_SmsgSetDeliveryMode(nic, dlvr_mode)`: the SMSG routing of one NIC handle.
pub type SmsgSetDeliveryModeFn = unsafe extern "C" fn(GniNicHandle, u16) -> GniReturn;

/// `GNI_EpSetEventData(ep, local_event, remote_event)`: the inst_id that the local and the
/// remote CQ events of the endpoint's posts carry instead of uGNI's defaults.
pub type EpSetEventDataFn = unsafe extern "C" fn(GniEpHandle, u32, u32) -> GniReturn;
/// `GNI_CqErrorStr(entry, *buffer, len)`: a NUL-terminated description of an entry's status.
pub type CqErrorStrFn = unsafe extern "C" fn(GniCqEntry, *mut c_void, u32) -> GniReturn;
/// `GNI_CqErrorRecoverable(entry, *recoverable)`.
pub type CqErrorRecoverableFn = unsafe extern "C" fn(GniCqEntry, *mut u32) -> GniReturn;
/// `GNI_GetDeviceType(*dev_type)`.
pub type GetDeviceTypeFn = unsafe extern "C" fn(*mut GniNicDevice) -> GniReturn;
/// `GNI_GetPtag(device_id, cookie, *ptag)`: the protection tag that goes with a job's cookie.
pub type GetPtagFn = unsafe extern "C" fn(u32, u32, *mut u8) -> GniReturn;
/// `GNI_MemRegisterSegments(nic, *segments, segment_count, dst_cq, flags, vmdh_index, *mem_hndl)`.
pub type MemRegisterSegmentsFn =
    unsafe extern "C" fn(GniNicHandle, *mut GniMemSegment, u32, GniCqHandle, u32, u32, *mut GniMemHandle) -> GniReturn;

// ---- CQ-entry accessors: the functions behind the GNI_CQ_* macros -------------------------------
//
// The encoding of a `gni_cq_entry_t` is each libugni's own, so gni_pub.h reads and edits entries
// only through these functions.

/// `gni_cq_get_data`, `gni_cq_get_source`, `gni_cq_get_status`, `gni_cq_get_inst_id`, ... and
/// `gni_cq_overrun`: one field of an entry, `uint64_t (*)(gni_cq_entry_t)`.
pub type CqEntryGetFn = unsafe extern "C" fn(GniCqEntry) -> u64;
/// `gni_cq_set_inst_id`, `gni_cq_set_msg_id`, `gni_cq_set_type`, ...: sets one field of the entry
/// at the pointer, `void (*)(gni_cq_entry_t *, uint64_t)`.
pub type CqEntrySetFn = unsafe extern "C" fn(*mut GniCqEntry, u64);
/// `gni_cq_clr_status(*entry)`.
pub type CqEntryClearFn = unsafe extern "C" fn(*mut GniCqEntry);
/// `gni_cq_status_dla_overflow` and `gni_cq_bte_enq_status`: `unsigned (*)(gni_cq_entry_t)`.
pub type CqEntryFlagFn = unsafe extern "C" fn(GniCqEntry) -> c_uint;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_modes() {
        assert_eq!(dlvr_mode_name(GNI_DLVMODE_ADAPTIVE3 | GNI_DLVMODE_ORDERED_TAIL), "ADAPTIVE3");
        assert_eq!(dlvr_mode_name(GNI_DLVMODE_IN_ORDER), "IN_ORDER");
        assert_eq!(dlvr_mode_name(0x0060), "OTHER");
        assert_eq!(GNI_DLVMODE_ORDERED_TAIL & GNI_DLVMODE_ROUTING_MASK, 0, "flags lie above the routing byte");
    }

    #[test]
    fn gets_are_the_post_types_whose_data_comes_back() {
        let gets: [GniPostType; 3] = [GNI_POST_RDMA_GET, GNI_POST_FMA_GET, GNI_POST_FMA_GET_W_FLAG];
        for t in GNI_POST_RDMA_PUT..=GNI_POST_AMO_W_FLAG {
            assert_eq!(post_type_is_get(t), gets.contains(&t), "{}", post_type_name(t));
        }
    }

    /// cabi/gni_pub.h names exactly the AMO commands these codes and bits make: each fetching code
    /// in its cached form, each second-generation one in its 32-bit forms, and the non-fetching
    /// form of each (its name without the leading F; the first-generation CSWAP has none).
    #[test]
    fn amo_commands_are_those_of_gni_pub_h() {
        use std::collections::BTreeMap;
        use std::string::{String, ToString};
        let first = [
            ("FADD", GNI_FMA_ATOMIC_FADD),
            ("FAND", GNI_FMA_ATOMIC_FAND),
            ("FOR", GNI_FMA_ATOMIC_FOR),
            ("FXOR", GNI_FMA_ATOMIC_FXOR),
            ("FAX", GNI_FMA_ATOMIC_FAX),
            ("CSWAP", GNI_FMA_ATOMIC_CSWAP),
        ];
        let second = [
            ("FAND", GNI_FMA_ATOMIC2_FAND),
            ("FOR", GNI_FMA_ATOMIC2_FOR),
            ("FXOR", GNI_FMA_ATOMIC2_FXOR),
            ("FSWAP", GNI_FMA_ATOMIC2_FSWAP),
            ("FAX", GNI_FMA_ATOMIC2_FAX),
            ("FCSWAP", GNI_FMA_ATOMIC2_FCSWAP),
            ("FIMIN", GNI_FMA_ATOMIC2_FIMIN),
            ("FIMAX", GNI_FMA_ATOMIC2_FIMAX),
            ("FIADD", GNI_FMA_ATOMIC2_FIADD),
            ("FFPMIN", GNI_FMA_ATOMIC2_FFPMIN),
            ("FFPMAX", GNI_FMA_ATOMIC2_FFPMAX),
            ("FFPADD", GNI_FMA_ATOMIC2_FFPADD),
        ];
        let mut want: BTreeMap<String, GniFmaCmdType> = BTreeMap::new();
        let mut both = |name: &str, code: GniFmaCmdType| {
            want.insert(name.to_string(), code);
            if let Some((prefix, op)) = name.split_once('_') {
                if let Some(op) = op.strip_prefix('F') {
                    want.insert(std::format!("{prefix}_{op}"), code | AMO_CMD_NON_FETCHING);
                }
            }
        };
        for (op, code) in first {
            both(&std::format!("ATOMIC_{op}"), code);
            both(&std::format!("ATOMIC_{op}_C"), code | AMO_CMD_CACHED);
        }
        for (op, code) in second {
            let short = (code & !AMO_CMD2_OPERANDS_64) | AMO_CMD_OPERANDS_32;
            both(&std::format!("ATOMIC2_{op}"), code);
            both(&std::format!("ATOMIC2_{op}_C"), code | AMO_CMD2_CACHED);
            both(&std::format!("ATOMIC2_{op}_S"), short);
            both(&std::format!("ATOMIC2_{op}_SC"), short | AMO_CMD2_CACHED);
        }
        let header: BTreeMap<String, GniFmaCmdType> = include_str!("../../../cabi/gni_pub.h")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("GNI_FMA_")?.split_once('='))
            .filter(|(name, _)| name.starts_with("ATOMIC"))
            .map(|(name, value)| {
                let hex = value.split(',').next().unwrap().trim().trim_start_matches("0x");
                (name.trim().to_string(), u32::from_str_radix(hex, 16).unwrap())
            })
            .collect();
        assert_eq!(header.len(), 6 * 2 + 5 * 2 + 12 * 4 * 2, "{header:?}");
        assert_eq!(header, want);
    }
}
