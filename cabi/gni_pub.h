/*
 * gni_pub.h: uGNI declarations for aar's C test programs and examples.
 *
 * Written for this project from the ABI facts in docs/abi.md (types, layouts, constant values and
 * prototypes of Cray's gni_pub.h, GNI_MINOR_REV 0x5c, plus the chained-transaction calls of newer
 * headers; the Rust side of the same facts is crates/abi). It declares what the emulator
 * (crates/emu, libugni.so) implements, and the names public uGNI programs use with Cray's values,
 * so that a program written against Cray's header compiles unchanged. Programs built against it
 * also run against a real libugni for everything except the gni_ct_* element types, whose real
 * layout is not public (see the end of this file).
 */
#ifndef _GNI_PUB_H_
#define _GNI_PUB_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNI_MAJOR_REV 0x00
#define GNI_MINOR_REV 0x5c
#define GNI_CODE_REV  0x0000
#define GNI_VERSION ((GNI_MAJOR_REV << 24) | (GNI_MINOR_REV << 16) | GNI_CODE_REV)
/* Chained transactions (GNI_CtPostFma, GNI_CtPostCqWrite) are available. The real value of this
 * sentinel is not public; this one is the emulator's and is <= GNI_VERSION on purpose, so the
 * usual test `GNI_VERSION >= GNI_VERSION_FMA_CHAIN_TRANSACTIONS` enables them. */
#define GNI_VERSION_FMA_CHAIN_TRANSACTIONS 0x005c0000
/* uGNI features by the version that introduced them. */
#define GNI_VERSION_FMA_SHARING 0x5b0000

#define GNI_GET_MAJOR(value) (((value) >> 24) & 0xFF)
#define GNI_GET_MINOR(value) (((value) >> 16) & 0xFF)
#define GNI_GET_REV(value)   ((value) & 0xFFFF)
#define GNI_VERSION_CHECK(maj, min, code) (((maj) << 24) | ((min) << 16) | (code))

/* Parameter direction markers, as Cray's header defines them (some programs use them too). */
#define IN
#define OUT
#define INOUT

/* Protection tags: on Aries a job's ptag comes from PMI_GNI_PTAG or GNI_GetPtag. */
enum {
	GNI_PTAG_LND = 1,
	GNI_PTAG_OFED,
	GNI_PTAG_USER_START,
	GNI_PTAG_LND_KNC = 128,
	GNI_PTAG_USER_END = 253,
	GNI_PTAG_HSNBOOT = 254,
	GNI_PTAG_MAX = 254,
	GNI_PTAG_LB = 255
};
#define GNI_FIND_ALLOC_PTAG GNI_PTAG_LB

#define GNI_COOKIE_PKEY_MASK      0xFFFF
#define GNI_COOKIE_PKEY_SHIFT     16
#define GNI_COOKIE_CBPS_MDD_MASK  0x7
#define GNI_COOKIE_CBPS_MDD_SHIFT 3
#define GNI_JOB_CREATE_COOKIE(pkey, cbps_mdd)                                                  \
	(((uint32_t)(pkey) << GNI_COOKIE_PKEY_SHIFT) |                                         \
	 (((cbps_mdd) & GNI_COOKIE_CBPS_MDD_MASK) << GNI_COOKIE_CBPS_MDD_SHIFT))

/* ---- handles and small types ---- */
typedef struct gni_mem_handle {
	uint64_t qword1;
	uint64_t qword2;
} gni_mem_handle_t;

typedef struct gni_nic  *gni_nic_handle_t;
typedef struct gni_cdm  *gni_cdm_handle_t;
typedef struct gni_ep   *gni_ep_handle_t;
typedef struct gni_cq   *gni_cq_handle_t;
typedef struct gni_err  *gni_err_handle_t;
typedef struct gni_msgq *gni_msgq_handle_t;
typedef struct gni_ce   *gni_ce_handle_t;

typedef uint64_t gni_cq_entry_t;
typedef uint32_t gni_cq_mode_t;

typedef enum gni_return {
	GNI_RC_SUCCESS = 0,
	GNI_RC_NOT_DONE,
	GNI_RC_INVALID_PARAM,
	GNI_RC_ERROR_RESOURCE,
	GNI_RC_TIMEOUT,
	GNI_RC_PERMISSION_ERROR,
	GNI_RC_DESCRIPTOR_ERROR,
	GNI_RC_ALIGNMENT_ERROR,
	GNI_RC_INVALID_STATE,
	GNI_RC_NO_MATCH,
	GNI_RC_SIZE_ERROR,
	GNI_RC_TRANSACTION_ERROR,
	GNI_RC_ILLEGAL_OP,
	GNI_RC_ERROR_NOMEM
} gni_return_t;

/* Names of the return codes, indexed by gni_return_t. */
extern const char *gni_err_str[];

/* State of a datagram exchange (GNI_EpPostDataTest and its relatives). */
typedef enum gni_post_state {
	GNI_POST_PENDING,
	GNI_POST_COMPLETED,
	GNI_POST_ERROR,
	GNI_POST_TIMEOUT,
	GNI_POST_TERMINATED,
	GNI_POST_REMOTE_DATA
} gni_post_state_t;

/* Maximum length in bytes of a datagram. */
#define GNI_DATAGRAM_MAXSIZE 128

/* The kind of NIC (GNI_GetDeviceType); the emulator is an Aries. */
typedef enum gni_nic_device {
	GNI_DEVICE_GEMINI = 0,
	GNI_DEVICE_ARIES  = 1,
	GNI_DEVICE_PISCES = 2,
	GNI_DEVICE_LAST
} gni_nic_device_t;

/* One segment of a GNI_MemRegisterSegments registration. */
typedef struct gni_mem_segment {
	uint64_t address;
	uint64_t length;
} gni_mem_segment_t;

typedef enum gni_post_type {
	GNI_POST_RDMA_PUT = 1,
	GNI_POST_RDMA_GET,
	GNI_POST_FMA_PUT,
	GNI_POST_FMA_PUT_W_SYNCFLAG,
	GNI_POST_FMA_GET,
	GNI_POST_AMO,
	GNI_POST_CQWRITE,
	GNI_POST_CE,
	GNI_POST_FMA_GET_W_FLAG,
	GNI_POST_AMO_W_FLAG
} gni_post_type_t;

/* AMO commands (amo_cmd), with Cray's values. The emulator executes every one: the 64-bit ones
 * on a uint64_t (length 8), the 32-bit-operand ones (_S, _SC) on a uint32_t (length 4, operands
 * in the low half of first_operand/second_operand); cached forms (_C, _SC) act like the plain
 * ones. Any other amo_cmd gets GNI_RC_ILLEGAL_OP. */
typedef enum gni_fma_cmd_type {
	/* fetching (the old value is written at local_addr) */
	GNI_FMA_ATOMIC_FADD       = 0x008,
	GNI_FMA_ATOMIC_FADD_C     = 0x018,
	GNI_FMA_ATOMIC_FAND       = 0x009,
	GNI_FMA_ATOMIC_FAND_C     = 0x019,
	GNI_FMA_ATOMIC_FOR        = 0x00A,
	GNI_FMA_ATOMIC_FOR_C      = 0x01A,
	GNI_FMA_ATOMIC_FXOR       = 0x00B,
	GNI_FMA_ATOMIC_FXOR_C     = 0x01B,
	GNI_FMA_ATOMIC_FAX        = 0x00C, /* (x & first_operand) ^ second_operand */
	GNI_FMA_ATOMIC_FAX_C      = 0x01C,
	GNI_FMA_ATOMIC_CSWAP      = 0x00D, /* if x == first_operand then x = second_operand */
	GNI_FMA_ATOMIC_CSWAP_C    = 0x01D,
	GNI_FMA_ATOMIC2_FAND_S    = 0x240,
	GNI_FMA_ATOMIC2_FAND      = 0x041,
	GNI_FMA_ATOMIC2_FAND_SC   = 0x260,
	GNI_FMA_ATOMIC2_FAND_C    = 0x061,
	GNI_FMA_ATOMIC2_FOR_S     = 0x242,
	GNI_FMA_ATOMIC2_FOR       = 0x043,
	GNI_FMA_ATOMIC2_FOR_SC    = 0x262,
	GNI_FMA_ATOMIC2_FOR_C     = 0x063,
	GNI_FMA_ATOMIC2_FXOR_S    = 0x244,
	GNI_FMA_ATOMIC2_FXOR      = 0x045,
	GNI_FMA_ATOMIC2_FXOR_SC   = 0x264,
	GNI_FMA_ATOMIC2_FXOR_C    = 0x065,
	GNI_FMA_ATOMIC2_FSWAP_S   = 0x246,
	GNI_FMA_ATOMIC2_FSWAP     = 0x047,
	GNI_FMA_ATOMIC2_FSWAP_SC  = 0x266,
	GNI_FMA_ATOMIC2_FSWAP_C   = 0x067,
	GNI_FMA_ATOMIC2_FAX_S     = 0x248,
	GNI_FMA_ATOMIC2_FAX       = 0x049,
	GNI_FMA_ATOMIC2_FAX_SC    = 0x268,
	GNI_FMA_ATOMIC2_FAX_C     = 0x069,
	GNI_FMA_ATOMIC2_FCSWAP_S  = 0x24A,
	GNI_FMA_ATOMIC2_FCSWAP    = 0x04B,
	GNI_FMA_ATOMIC2_FCSWAP_SC = 0x26A,
	GNI_FMA_ATOMIC2_FCSWAP_C  = 0x06B,
	GNI_FMA_ATOMIC2_FIMIN_S   = 0x250,
	GNI_FMA_ATOMIC2_FIMIN     = 0x051,
	GNI_FMA_ATOMIC2_FIMIN_SC  = 0x270,
	GNI_FMA_ATOMIC2_FIMIN_C   = 0x071,
	GNI_FMA_ATOMIC2_FIMAX_S   = 0x252,
	GNI_FMA_ATOMIC2_FIMAX     = 0x053,
	GNI_FMA_ATOMIC2_FIMAX_SC  = 0x272,
	GNI_FMA_ATOMIC2_FIMAX_C   = 0x073,
	GNI_FMA_ATOMIC2_FIADD_S   = 0x254,
	GNI_FMA_ATOMIC2_FIADD     = 0x055,
	GNI_FMA_ATOMIC2_FIADD_SC  = 0x274,
	GNI_FMA_ATOMIC2_FIADD_C   = 0x075,
	GNI_FMA_ATOMIC2_FFPMIN_S  = 0x258,
	GNI_FMA_ATOMIC2_FFPMIN    = 0x059,
	GNI_FMA_ATOMIC2_FFPMIN_SC = 0x278,
	GNI_FMA_ATOMIC2_FFPMIN_C  = 0x079,
	GNI_FMA_ATOMIC2_FFPMAX_S  = 0x25A,
	GNI_FMA_ATOMIC2_FFPMAX    = 0x05B,
	GNI_FMA_ATOMIC2_FFPMAX_SC = 0x27A,
	GNI_FMA_ATOMIC2_FFPMAX_C  = 0x07B,
	GNI_FMA_ATOMIC2_FFPADD_S  = 0x25C,
	GNI_FMA_ATOMIC2_FFPADD    = 0x05D,
	GNI_FMA_ATOMIC2_FFPADD_SC = 0x27C,
	GNI_FMA_ATOMIC2_FFPADD_C  = 0x07D,
	/* non-fetching */
	GNI_FMA_ATOMIC_ADD        = 0x108,
	GNI_FMA_ATOMIC_ADD_C      = 0x118,
	GNI_FMA_ATOMIC_AND        = 0x109,
	GNI_FMA_ATOMIC_AND_C      = 0x119,
	GNI_FMA_ATOMIC_OR         = 0x10A,
	GNI_FMA_ATOMIC_OR_C       = 0x11A,
	GNI_FMA_ATOMIC_XOR        = 0x10B,
	GNI_FMA_ATOMIC_XOR_C      = 0x11B,
	GNI_FMA_ATOMIC_AX         = 0x10C,
	GNI_FMA_ATOMIC_AX_C       = 0x11C,
	GNI_FMA_ATOMIC2_AND_S     = 0x340,
	GNI_FMA_ATOMIC2_AND       = 0x141,
	GNI_FMA_ATOMIC2_AND_SC    = 0x360,
	GNI_FMA_ATOMIC2_AND_C     = 0x161,
	GNI_FMA_ATOMIC2_OR_S      = 0x342,
	GNI_FMA_ATOMIC2_OR        = 0x143,
	GNI_FMA_ATOMIC2_OR_SC     = 0x362,
	GNI_FMA_ATOMIC2_OR_C      = 0x163,
	GNI_FMA_ATOMIC2_XOR_S     = 0x344,
	GNI_FMA_ATOMIC2_XOR       = 0x145,
	GNI_FMA_ATOMIC2_XOR_SC    = 0x364,
	GNI_FMA_ATOMIC2_XOR_C     = 0x165,
	GNI_FMA_ATOMIC2_SWAP_S    = 0x346,
	GNI_FMA_ATOMIC2_SWAP      = 0x147,
	GNI_FMA_ATOMIC2_SWAP_SC   = 0x366,
	GNI_FMA_ATOMIC2_SWAP_C    = 0x167,
	GNI_FMA_ATOMIC2_AX_S      = 0x348,
	GNI_FMA_ATOMIC2_AX        = 0x149,
	GNI_FMA_ATOMIC2_AX_SC     = 0x368,
	GNI_FMA_ATOMIC2_AX_C      = 0x169,
	GNI_FMA_ATOMIC2_CSWAP_S   = 0x34A,
	GNI_FMA_ATOMIC2_CSWAP     = 0x14B,
	GNI_FMA_ATOMIC2_CSWAP_SC  = 0x36A,
	GNI_FMA_ATOMIC2_CSWAP_C   = 0x16B,
	GNI_FMA_ATOMIC2_IMIN_S    = 0x350,
	GNI_FMA_ATOMIC2_IMIN      = 0x151,
	GNI_FMA_ATOMIC2_IMIN_SC   = 0x370,
	GNI_FMA_ATOMIC2_IMIN_C    = 0x171,
	GNI_FMA_ATOMIC2_IMAX_S    = 0x352,
	GNI_FMA_ATOMIC2_IMAX      = 0x153,
	GNI_FMA_ATOMIC2_IMAX_SC   = 0x372,
	GNI_FMA_ATOMIC2_IMAX_C    = 0x173,
	GNI_FMA_ATOMIC2_IADD_S    = 0x354,
	GNI_FMA_ATOMIC2_IADD      = 0x155,
	GNI_FMA_ATOMIC2_IADD_SC   = 0x374,
	GNI_FMA_ATOMIC2_IADD_C    = 0x175,
	GNI_FMA_ATOMIC2_FPMIN_S   = 0x358,
	GNI_FMA_ATOMIC2_FPMIN     = 0x159,
	GNI_FMA_ATOMIC2_FPMIN_SC  = 0x378,
	GNI_FMA_ATOMIC2_FPMIN_C   = 0x179,
	GNI_FMA_ATOMIC2_FPMAX_S   = 0x35A,
	GNI_FMA_ATOMIC2_FPMAX     = 0x15B,
	GNI_FMA_ATOMIC2_FPMAX_SC  = 0x37A,
	GNI_FMA_ATOMIC2_FPMAX_C   = 0x17B,
	GNI_FMA_ATOMIC2_FPADD_S   = 0x35C,
	GNI_FMA_ATOMIC2_FPADD     = 0x15D,
	GNI_FMA_ATOMIC2_FPADD_SC  = 0x37C,
	GNI_FMA_ATOMIC2_FPADD_C   = 0x17D
} gni_fma_cmd_type_t;

/* Size in bytes of the flag of an FMA GET or fetching AMO with a flagged response. */
#define GNI_FMA_FLAGGED_RESPONSE_SIZE 4

/* Collective-engine commands: only the type, for the descriptor layout. */
typedef enum gni_ce_cmd_type {
	GNI_FMA_CE_AND_S = 0x0
} gni_ce_cmd_type_t;

/* ---- delivery (routing) modes: the dlvr_mode field ---- */
#define GNI_DLVMODE_PERFORMANCE   0x0000
#define GNI_DLVMODE_NO_ADAPT      0x0001
#define GNI_DLVMODE_NO_HASH       0x0002
#define GNI_DLVMODE_NO_RADAPT     0x0004
#define GNI_DLVMODE_IN_ORDER      (GNI_DLVMODE_NO_ADAPT | GNI_DLVMODE_NO_HASH)
#define GNI_DLVMODE_MNON_HASH     GNI_DLVMODE_IN_ORDER
#define GNI_DLVMODE_NMIN_HASH     0x0008
#define GNI_DLVMODE_MIN_HASH      0x0010
#define GNI_DLVMODE_ADAPTIVE0     GNI_DLVMODE_PERFORMANCE
#define GNI_DLVMODE_ADAPTIVE1     0x0020
#define GNI_DLVMODE_ADAPTIVE2     0x0040
#define GNI_DLVMODE_ADAPTIVE3     0x0080
#define GNI_DLVMODE_ORDERED_TAIL  0x0100

/* ---- CDM modes ---- */
#define GNI_CDM_MODE_FORK_NOCOPY          0x00000001
#define GNI_CDM_MODE_FORK_FULLCOPY        0x00000002
#define GNI_CDM_MODE_FORK_PARTCOPY        0x00000004
#define GNI_CDM_MODE_ERR_NO_KILL          0x00000008
#define GNI_CDM_MODE_ERR_ALL_KILL         0x00000010
#define GNI_CDM_MODE_FAST_DATAGRAM_POLL   0x00000020
#define GNI_CDM_MODE_BTE_SINGLE_CHANNEL   0x00000040
#define GNI_CDM_MODE_USE_PCI_IOMMU        0x00000080
#define GNI_CDM_MODE_MDD_DEDICATED        0x00000100
#define GNI_CDM_MODE_MDD_SHARED           0x00000200
#define GNI_CDM_MODE_DUAL_EVENTS          0x00001000
#define GNI_CDM_MODE_FMA_DEDICATED        0x00010000
#define GNI_CDM_MODE_FMA_SHARED           0x00020000
#define GNI_CDM_MODE_CACHED_AMO_ENABLED   0x00040000
#define GNI_CDM_MODE_DLA_ENABLE_FORWARDING   0x00004000
#define GNI_CDM_MODE_DLA_DISABLE_FORWARDING  0x00008000
#define GNI_CDM_MODE_CQ_NIC_LOCAL_PLACEMENT  0x00080000
#define GNI_CDM_MODE_FLBTE_DISABLE           0x00100000
#define GNI_CDM_MODE_FMA_SMALL_WINDOW        0x00200000
#define GNI_CDM_MODE_MASK                    0x0FFFFFFF

/* ---- CQ modes, post CQ modes, RDMA modes, memory flags ---- */
#define GNI_CQ_NOBLOCK   0x00000000
#define GNI_CQ_BLOCKING  0x00000001
#define GNI_CQ_IS_NON_BLOCKING(modes) (((modes) & GNI_CQ_BLOCKING) == GNI_CQ_NOBLOCK)
#define GNI_CQ_IS_BLOCKING(modes)     (((modes) & GNI_CQ_BLOCKING) == GNI_CQ_BLOCKING)

#define GNI_CQMODE_SILENT        0x0000
#define GNI_CQMODE_LOCAL_EVENT   0x0001
#define GNI_CQMODE_GLOBAL_EVENT  0x0002
#define GNI_CQMODE_REMOTE_EVENT  0x0004
#define GNI_CQMODE_DUAL_EVENTS   (GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_GLOBAL_EVENT)

#define GNI_RDMAMODE_PHYS_ADDR   0x0001
#define GNI_RDMAMODE_FENCE       0x0002
#define GNI_RDMAMODE_GETWC_DIS   0x0004

#define GNI_MEM_READWRITE             0x00000000
#define GNI_MEM_READ_ONLY             0x00000001
#define GNI_MEM_USE_VMDH              0x00000002
#define GNI_MEM_USE_GART              0x00000004
#define GNI_MEM_PHYS_CONT             0x00000008
#define GNI_MEM_PHYS_SEGMENTS         0x00000010
#define GNI_MEM_STRICT_PI_ORDERING    0x00000020
#define GNI_MEM_PI_FLUSH              0x00000040
#define GNI_MEM_MDD_CLONE             0x00000080
#define GNI_MEM_RELAXED_PI_ORDERING   0x00000100
#define GNI_MEM_RESERVE_REGION        0x00000200
#define GNI_MEM_UPDATE_REGION         0x00000400
#define GNI_MEM_MDD_SHARED            0x00000800
#define GNI_MEM_MDD_DEDICATED         0x00001000

/* ---- completion queue entries ----
 * The encoding of a gni_cq_entry_t is each library's own; use the accessors. In the emulator:
 * type (POST or SMSG), source (1 = a remote/destination event), status (0 = OK), inst_id
 * (24 bits; local POST events: the endpoint's local event data, by default its remote_id; remote
 * POST events: the sender's remote event data, by default its domain's inst_id; see
 * GNI_EpSetEventData), rem_inst_id (the same, 32 bits), msg_id (SMSG), data (remote POST events:
 * the CQ write's cqwrite_value, low 48 bits, or the sender's remote event data). */
#define GNI_CQ_EVENT_TYPE_POST  0x0ULL
#define GNI_CQ_EVENT_TYPE_SMSG  0x1ULL
#define GNI_CQ_EVENT_TYPE_DMAPP 0x2ULL
#define GNI_CQ_EVENT_TYPE_MSGQ  0x3ULL

uint64_t gni_cq_get_data(gni_cq_entry_t);
uint64_t gni_cq_get_source(gni_cq_entry_t);
uint64_t gni_cq_get_status(gni_cq_entry_t);
uint64_t gni_cq_get_info(gni_cq_entry_t);
uint64_t gni_cq_overrun(gni_cq_entry_t);
uint64_t gni_cq_rem_overrun(gni_cq_entry_t);
uint64_t gni_cq_get_inst_id(gni_cq_entry_t);
uint64_t gni_cq_get_rem_inst_id(gni_cq_entry_t);
uint64_t gni_cq_get_tid(gni_cq_entry_t);
uint64_t gni_cq_get_msg_id(gni_cq_entry_t);
uint64_t gni_cq_get_type(gni_cq_entry_t);
uint64_t gni_cq_get_block_id(gni_cq_entry_t);
uint64_t gni_cq_get_unsuccessful_cnt(gni_cq_entry_t);
uint64_t gni_cq_get_marker_id(gni_cq_entry_t);
uint64_t gni_cq_get_failed_enqueue_cnt(gni_cq_entry_t);
uint64_t gni_cq_get_ce_id(gni_cq_entry_t);
uint64_t gni_cq_get_reductn_id(gni_cq_entry_t);
uint64_t gni_cq_get_trans_type(gni_cq_entry_t);
void     gni_cq_set_inst_id(gni_cq_entry_t *, uint64_t);
void     gni_cq_set_rem_inst_id(gni_cq_entry_t *, uint64_t);
void     gni_cq_set_tid(gni_cq_entry_t *, uint64_t);
void     gni_cq_set_msg_id(gni_cq_entry_t *, uint64_t);
void     gni_cq_set_type(gni_cq_entry_t *, uint64_t);
void     gni_cq_clr_status(gni_cq_entry_t *);
unsigned gni_cq_status_dla_overflow(gni_cq_entry_t);
unsigned gni_cq_bte_enq_status(gni_cq_entry_t);

#define GNI_CQ_GET_DATA               gni_cq_get_data
#define GNI_CQ_GET_SOURCE             gni_cq_get_source
#define GNI_CQ_GET_STATUS             gni_cq_get_status
#define GNI_CQ_GET_INFO               gni_cq_get_info
#define GNI_CQ_GET_INST_ID            gni_cq_get_inst_id
#define GNI_CQ_GET_REM_INST_ID        gni_cq_get_rem_inst_id
#define GNI_CQ_GET_TID                gni_cq_get_tid
#define GNI_CQ_GET_MSG_ID             gni_cq_get_msg_id
#define GNI_CQ_GET_TYPE               gni_cq_get_type
#define GNI_CQ_OVERRUN                gni_cq_overrun
#define GNI_CQ_REM_OVERRUN            gni_cq_rem_overrun
#define GNI_CQ_GET_BLOCK_ID           gni_cq_get_block_id
#define GNI_CQ_GET_UNSUCCESSFUL_CNT   gni_cq_get_unsuccessful_cnt
#define GNI_CQ_GET_MARKER_ID          gni_cq_get_marker_id
#define GNI_CQ_GET_FAILED_ENQUEUE_CNT gni_cq_get_failed_enqueue_cnt
#define GNI_CQ_GET_CE_ID              gni_cq_get_ce_id
#define GNI_CQ_GET_REDUCTN_ID         gni_cq_get_reductn_id
#define GNI_CQ_GET_TRANS_TYPE         gni_cq_get_trans_type
#define GNI_CQ_SET_INST_ID(entry, val)     gni_cq_set_inst_id(&(entry), val)
#define GNI_CQ_SET_REM_INST_ID(entry, val) gni_cq_set_rem_inst_id(&(entry), val)
#define GNI_CQ_SET_TID(entry, val)         gni_cq_set_tid(&(entry), val)
#define GNI_CQ_SET_MSG_ID(entry, val)      gni_cq_set_msg_id(&(entry), val)
#define GNI_CQ_SET_TYPE(entry, val)        gni_cq_set_type(&(entry), val)
#define GNI_CQ_CLR_STATUS(entry)           gni_cq_clr_status(&(entry))
#define GNI_CQ_STATUS_OK(entry)            (gni_cq_get_status(entry) == 0)
#define GNI_CQ_STATUS_DLA_OVERFLOW(entry)  (gni_cq_status_dla_overflow(entry))
#define GNI_CQ_BTE_ENQ_STATUS(entry)       gni_cq_bte_enq_status(entry)

/* ---- post descriptor: 184 bytes on x86-64 (docs/abi.md, post descriptor layout) ---- */
typedef struct gni_post_descriptor {
	void               *next_descr;
	void               *prev_descr;
	uint64_t            post_id;
	uint64_t            status;
	uint16_t            cq_mode_complete;
	gni_post_type_t     type;
	uint16_t            cq_mode;
	uint16_t            dlvr_mode;
	uint64_t            local_addr;
	gni_mem_handle_t    local_mem_hndl;
	uint64_t            remote_addr;
	gni_mem_handle_t    remote_mem_hndl;
	uint64_t            length;
	uint16_t            rdma_mode;
	gni_cq_handle_t     src_cq_hndl;
	uint64_t            sync_flag_value;
	uint64_t            sync_flag_addr;
	gni_fma_cmd_type_t  amo_cmd;
	uint64_t            first_operand;
	uint64_t            second_operand;
	uint64_t            cqwrite_value;
	gni_ce_cmd_type_t   ce_cmd;
	uint32_t            ce_mode;
	uint64_t            ce_red_id;
} gni_post_descriptor_t;

/* ---- short messages ---- */
typedef enum gni_smsg_type {
	GNI_SMSG_TYPE_INVALID = 0,
	GNI_SMSG_TYPE_MBOX,
	GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT
} gni_smsg_type_t;

typedef struct gni_smsg_attr {
	gni_smsg_type_t   msg_type;
	void             *msg_buffer;
	uint32_t          buff_size;
	gni_mem_handle_t  mem_hndl;
	uint32_t          mbox_offset;
	uint16_t          mbox_maxcredit;
	uint32_t          msg_maxsize;
} gni_smsg_attr_t;

#define GNI_SMSG_ANY_TAG   0xFF
#define GNI_SMSG_MAX_SIZE  65535

/* ---- functions (every one returns gni_return_t) ---- */
gni_return_t GNI_CdmCreate(uint32_t inst_id, uint8_t ptag, uint32_t cookie, uint32_t modes,
                           gni_cdm_handle_t *cdm_hndl);
gni_return_t GNI_CdmAttach(gni_cdm_handle_t cdm_hndl, uint32_t device_id, uint32_t *local_addr,
                           gni_nic_handle_t *nic_hndl);
gni_return_t GNI_CdmDestroy(gni_cdm_handle_t cdm_hndl);
gni_return_t GNI_CdmGetNicAddress(uint32_t device_id, uint32_t *address, uint32_t *cpu_id);

gni_return_t GNI_EpCreate(gni_nic_handle_t nic_hndl, gni_cq_handle_t src_cq_hndl,
                          gni_ep_handle_t *ep_hndl);
gni_return_t GNI_EpBind(gni_ep_handle_t ep_hndl, uint32_t remote_addr, uint32_t remote_id);
gni_return_t GNI_EpUnbind(gni_ep_handle_t ep_hndl);
/* The inst_id of the endpoint's post events from now on: local_event in its local (LOCAL and
 * GLOBAL) events, remote_event in the remote events at the target (default: the remote_id of
 * GNI_EpBind, and the inst_id of the sender's domain). */
gni_return_t GNI_EpSetEventData(gni_ep_handle_t ep_hndl, uint32_t local_event, uint32_t remote_event);
gni_return_t GNI_EpDestroy(gni_ep_handle_t ep_hndl);

/* Datagrams: up to GNI_DATAGRAM_MAXSIZE bytes exchanged between an endpoint and the one bound
 * back to it (an unbound endpoint takes any endpoint bound to it), e.g. to trade SMSG attributes;
 * the peer's data is in out_buf once a Test or Wait reports GNI_POST_COMPLETED. In one process
 * and between the ranks of an `aar run` job. */
gni_return_t GNI_EpPostData(gni_ep_handle_t ep_hndl, void *in_data, uint16_t data_len, void *out_buf,
                            uint16_t buf_size);
gni_return_t GNI_EpPostDataWId(gni_ep_handle_t ep_hndl, void *in_data, uint16_t data_len, void *out_buf,
                               uint16_t buf_size, uint64_t datagram_id);
gni_return_t GNI_EpPostDataTest(gni_ep_handle_t ep_hndl, gni_post_state_t *post_state, uint32_t *remote_addr,
                                uint32_t *remote_id);
gni_return_t GNI_EpPostDataTestById(gni_ep_handle_t ep_hndl, uint64_t datagram_id,
                                    gni_post_state_t *post_state, uint32_t *remote_addr, uint32_t *remote_id);
gni_return_t GNI_EpPostDataWait(gni_ep_handle_t ep_hndl, uint32_t timeout, gni_post_state_t *post_state,
                                uint32_t *remote_addr, uint32_t *remote_id);
gni_return_t GNI_EpPostDataWaitById(gni_ep_handle_t ep_hndl, uint64_t datagram_id, uint32_t timeout,
                                    gni_post_state_t *post_state, uint32_t *remote_addr, uint32_t *remote_id);
gni_return_t GNI_PostDataProbe(gni_nic_handle_t nic_hndl, uint32_t *remote_addr, uint32_t *remote_id);
gni_return_t GNI_PostDataProbeById(gni_nic_handle_t nic_hndl, uint64_t *datagram_id);
gni_return_t GNI_PostdataProbeWaitById(gni_nic_handle_t nic_hndl, uint32_t timeout, uint64_t *datagram_id);
gni_return_t GNI_EpPostDataCancel(gni_ep_handle_t ep_hndl);
gni_return_t GNI_EpPostDataCancelById(gni_ep_handle_t ep_hndl, uint64_t datagram_id);

gni_return_t GNI_CqCreate(gni_nic_handle_t nic_hndl, uint32_t entry_count, uint32_t delay_count,
                          gni_cq_mode_t mode, void (*handler)(gni_cq_entry_t *, void *),
                          void *context, gni_cq_handle_t *cq_hndl);
gni_return_t GNI_CqDestroy(gni_cq_handle_t cq_hndl);
gni_return_t GNI_CqGetEvent(gni_cq_handle_t cq_hndl, gni_cq_entry_t *event_data);
gni_return_t GNI_CqWaitEvent(gni_cq_handle_t cq_hndl, uint64_t timeout,
                             gni_cq_entry_t *event_data);
gni_return_t GNI_GetCompleted(gni_cq_handle_t cq_hndl, gni_cq_entry_t event_data,
                              gni_post_descriptor_t **post_descr);
/* A NUL-terminated description of the entry's status (GNI_RC_SIZE_ERROR, and as much as fits,
 * when len is too small). */
gni_return_t GNI_CqErrorStr(gni_cq_entry_t entry, void *buffer, uint32_t len);
/* 1 for an entry without an error; the emulator never produces error entries, so one with an
 * error status gets GNI_RC_INVALID_STATE. */
gni_return_t GNI_CqErrorRecoverable(gni_cq_entry_t entry, uint32_t *recoverable);

gni_return_t GNI_GetDeviceType(gni_nic_device_t *dev_type);
/* In a job (aar run, PMI_GNI_PTAG/PMI_GNI_COOKIE set): the ptag of the job's cookie; else, or
 * for another cookie, GNI_RC_NO_MATCH. */
gni_return_t GNI_GetPtag(uint32_t device_id, uint32_t cookie, uint8_t *ptag);

gni_return_t GNI_MemRegister(gni_nic_handle_t nic_hndl, uint64_t address, uint64_t length,
                             gni_cq_handle_t dst_cq_hndl, uint32_t flags, uint32_t vmdh_index,
                             gni_mem_handle_t *mem_hndl);
gni_return_t GNI_MemDeregister(gni_nic_handle_t nic_hndl, gni_mem_handle_t *mem_hndl);
/* The emulator registers one segment (as GNI_MemRegister); more than one get GNI_RC_ILLEGAL_OP. */
gni_return_t GNI_MemRegisterSegments(gni_nic_handle_t nic_hndl, gni_mem_segment_t *mem_segments,
                                     uint32_t segments_cnt, gni_cq_handle_t dst_cq_hndl, uint32_t flags,
                                     uint32_t vmdh_index, gni_mem_handle_t *mem_hndl);

gni_return_t GNI_PostRdma(gni_ep_handle_t ep_hndl, gni_post_descriptor_t *post_descr);
gni_return_t GNI_PostFma(gni_ep_handle_t ep_hndl, gni_post_descriptor_t *post_descr);
gni_return_t GNI_PostCqWrite(gni_ep_handle_t ep_hndl, gni_post_descriptor_t *post_descr);
gni_return_t GNI_CtPostFma(gni_ep_handle_t ep_hndl, gni_post_descriptor_t *post_descr);
gni_return_t GNI_CtPostCqWrite(gni_ep_handle_t ep_hndl, gni_post_descriptor_t *post_descr);

gni_return_t GNI_SmsgBufferSizeNeeded(gni_smsg_attr_t *smsg_attr, unsigned int *size);
gni_return_t GNI_SmsgInit(gni_ep_handle_t ep_hndl, gni_smsg_attr_t *local_smsg_attr,
                          gni_smsg_attr_t *remote_smsg_attr);
gni_return_t GNI_SmsgSetDeliveryMode(gni_nic_handle_t nic_handle, uint16_t dlvr_mode);
gni_return_t GNI_SmsgSend(gni_ep_handle_t ep_hndl, void *header, uint32_t header_length,
                          void *data, uint32_t data_length, uint32_t msg_id);
gni_return_t GNI_SmsgSendWTag(gni_ep_handle_t ep_hndl, void *header, uint32_t header_length,
                              void *data, uint32_t data_length, uint32_t msg_id, uint8_t tag);
gni_return_t GNI_SmsgGetNext(gni_ep_handle_t ep_hndl, void **header);
gni_return_t GNI_SmsgGetNextWTag(gni_ep_handle_t ep_hndl, void **header, uint8_t *tag);
gni_return_t GNI_SmsgRelease(gni_ep_handle_t ep_hndl);

/* ---- chained-transaction elements (GNI_CtPostFma, GNI_CtPostCqWrite) ----
 * The head of a chain is a gni_post_descriptor_t: it carries the type, cq_mode, dlvr_mode and
 * src_cq_hndl for the whole chain and does its own transfer; its next_descr points to the first
 * element, each element's next_descr to the next, the last one's to NULL. Elements are NOT
 * gni_post_descriptor_t. Cray's real layouts are not public: these are the emulator's own, and
 * only the emulator and C programs built with this header read them (the shim never does).
 *   head type GNI_POST_FMA_PUT -> gni_ct_put_post_descriptor_t elements
 *   head type GNI_POST_FMA_GET -> gni_ct_get_post_descriptor_t elements
 *   head type GNI_POST_CQWRITE -> gni_ct_cqw_post_descriptor_t elements
 * Each element names its own endpoint, which must be on the head's NIC. */
typedef struct gni_ct_put_post_descriptor {
	void             *next_descr;
	gni_ep_handle_t   ep_hndl;
	uint64_t          length;
	uint64_t          local_addr;
	uint64_t          remote_addr;
	gni_mem_handle_t  remote_mem_hndl;
} gni_ct_put_post_descriptor_t;

typedef struct gni_ct_get_post_descriptor {
	void             *next_descr;
	gni_ep_handle_t   ep_hndl;
	uint64_t          length;
	uint64_t          local_addr;
	uint64_t          remote_addr;
	gni_mem_handle_t  remote_mem_hndl;
	gni_mem_handle_t  local_mem_hndl;
} gni_ct_get_post_descriptor_t;

typedef struct gni_ct_cqw_post_descriptor {
	void             *next_descr;
	gni_ep_handle_t   ep_hndl;
	uint64_t          cqwrite_value;
	gni_mem_handle_t  remote_mem_hndl;
} gni_ct_cqw_post_descriptor_t;

#ifdef __cplusplus
}
#endif

#endif /* _GNI_PUB_H_ */
