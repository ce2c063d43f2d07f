/*
 * dmapp.h: DMAPP declarations for aar's C examples and test programs.
 *
 * Written for this project from the DMAPP facts in docs/abi.md (types, layouts, constants and
 * prototypes of Cray's dmapp.h). It declares what the emulator (crates/emu, which serves both
 * libugni.so and libdmapp.so) implements. The emulator's build makes libdmapp.so a symbolic link
 * to libugni.so in target/release, so programs link with -ldmapp -lugni (or -ldmapp alone) and
 * load one object; cabi/aar_emu.h says how the emulated job behaves (PEs, heap, error codes). Two things in it are the emulator's own, because Cray's
 * are not public, and differ from a real Cray installation:
 *   - the values of the dmapp_routing_type_t enumerators (the table aar assumes by default; on a
 *     Cray, build aar against the site's dmapp.h or set AAR_DMAPP_ROUTING, see the README);
 *   - the layout of dmapp_rma_attrs_ext_t after its first 12 bytes, and of dmapp_amo_t.
 * Programs that only use the calls, the types and the enumerator names compile unchanged against a
 * real dmapp.h.
 */
#ifndef _DMAPP_H_
#define _DMAPP_H_

#include <stddef.h>
#include <stdint.h>
#include "gni_pub.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int dmapp_pe_t;

typedef enum dmapp_return {
	DMAPP_RC_SUCCESS = 0,
	DMAPP_RC_INVALID_PARAM,
	DMAPP_RC_ALIGNMENT_ERROR,
	DMAPP_RC_TRANSACTION_ERROR,
	DMAPP_RC_RESOURCE_ERROR,
	DMAPP_RC_PERMISSION_ERROR,
	DMAPP_RC_NO_SPACE,
	DMAPP_RC_NOT_DONE,
	DMAPP_RC_NOT_SUPPORTED,
	DMAPP_RC_NOT_FOUND,
	DMAPP_RC_BUSY,
	DMAPP_RC_NOT_USED
} dmapp_return_t;

/* Element types: 16, 8, 4 and 1 bytes. */
typedef enum dmapp_type {
	DMAPP_DQW = 0,
	DMAPP_QW,
	DMAPP_DW,
	DMAPP_BYTE
} dmapp_type_t;

/* Routing of PUTs (and AMOs) and of GETs, an attribute of the calling thread. The names are
 * Cray's; the values are the emulator's (aar's assumed default table), see above. */
typedef enum dmapp_routing_type {
	DMAPP_ROUTING_IN_ORDER = 0,        /* minimal, not hashed, in order */
	DMAPP_ROUTING_DETERMINISTIC = 1,   /* non-minimal, hashed */
	DMAPP_ROUTING_ADAPTIVE = 2,        /* adaptive, no bias (uGNI ADAPTIVE0) */
	DMAPP_ROUTING_DETERMINISTIC_1 = 3, /* minimal, hashed */
	DMAPP_ROUTING_ADAPTIVE_1 = 4,      /* increasing bias towards minimal */
	DMAPP_ROUTING_ADAPTIVE_2 = 5,      /* low bias towards minimal */
	DMAPP_ROUTING_ADAPTIVE_3 = 6       /* high bias towards minimal */
} dmapp_routing_type_t;

typedef enum dmapp_pi_reg_type {
	DMAPP_PI_ORDERING_STRICT = 0,
	DMAPP_PI_ORDERING_DEFAULT,
	DMAPP_PI_ORDERING_RELAXED
} dmapp_pi_reg_type_t;

#define DMAPP_OFFLOAD_THRESHOLD 4096
#define DMAPP_MAX_OUTSTANDING_NB 2048
#define DMAPP_DEF_OUTSTANDING_NB 512
#define DMAPP_MIN_OUTSTANDING_NB 5

/* 12 bytes: the routing fields are bytes 8 (PUT and AMO) and 9 (GET). */
typedef struct dmapp_rma_attrs {
	uint32_t max_outstanding_nb;
	uint32_t offload_threshold;
	uint8_t put_relaxed_ordering;  /* a dmapp_routing_type_t */
	uint8_t get_relaxed_ordering;  /* a dmapp_routing_type_t */
	uint8_t max_concurrency;
} dmapp_rma_attrs_t;

/* The first 12 bytes are dmapp_rma_attrs_t's; the rest is the emulator's layout. */
typedef struct dmapp_rma_attrs_ext {
	uint32_t max_outstanding_nb;
	uint32_t offload_threshold;
	uint8_t put_relaxed_ordering;
	uint8_t get_relaxed_ordering;
	uint8_t max_concurrency;
	uint8_t PI_ordering;           /* a dmapp_pi_reg_type_t */
	uint32_t queue_depth;
	uint32_t queue_nelems;
	uint64_t queue_flags;
	uint8_t unused[16];
} dmapp_rma_attrs_ext_t;

typedef struct dmapp_seg_desc {
	void *addr;
	size_t len;
	gni_mem_handle_t memhndl;
	uint16_t flags;
	void *reserved;
} dmapp_seg_desc_t;

typedef struct dmapp_jobinfo {
	int version;
	int hw_version;
	int npes;
	int pe;
	dmapp_seg_desc_t data_seg;
	dmapp_seg_desc_t sheap_seg;
} dmapp_jobinfo_t;

typedef struct dmapp_syncid *dmapp_syncid_handle_t;

/* An AMO for dmapp_amo_put/dmapp_amo_get. The real layout is not public; this is the emulator's. */
typedef enum dmapp_amo_op {
	DMAPP_AMO_ADD = 0,
	DMAPP_AMO_AND,
	DMAPP_AMO_OR,
	DMAPP_AMO_XOR,
	DMAPP_AMO_SWAP,
	DMAPP_AMO_CSWAP
} dmapp_amo_op_t;

typedef struct dmapp_amo {
	dmapp_amo_op_t op;
	int64_t operand1;
	int64_t operand2; /* the swap value of DMAPP_AMO_CSWAP */
} dmapp_amo_t;

/* ---- set-up ---- */
extern dmapp_return_t dmapp_init(dmapp_rma_attrs_t *requested_attrs, dmapp_rma_attrs_t *actual_attrs);
extern dmapp_return_t dmapp_init_ext(dmapp_rma_attrs_ext_t *requested_attrs, dmapp_rma_attrs_ext_t *actual_attrs);
extern dmapp_return_t dmapp_finalize(void);
extern dmapp_return_t dmapp_get_jobinfo(dmapp_jobinfo_t *info);
extern dmapp_return_t dmapp_get_rma_attrs(dmapp_rma_attrs_t *attrs);
extern dmapp_return_t dmapp_get_rma_attrs_ext(dmapp_rma_attrs_ext_t *attrs);
extern dmapp_return_t dmapp_set_rma_attrs(dmapp_rma_attrs_t *requested_attrs, dmapp_rma_attrs_t *actual_attrs);
extern dmapp_return_t dmapp_set_rma_attrs_ext(dmapp_rma_attrs_ext_t *requested_attrs, dmapp_rma_attrs_ext_t *actual_attrs);
extern dmapp_return_t dmapp_mem_register(void *addr, uint64_t length, dmapp_seg_desc_t *seg_desc);
extern dmapp_return_t dmapp_mem_unregister(dmapp_seg_desc_t *seg_desc);
/* The symmetric heap (the emulator: first fit, 16-byte blocks, so the same calls give the same
 * offsets on every PE). NULL before dmapp_init or without room; realloc(NULL, n) allocates,
 * realloc(p, 0) frees, and a failed realloc leaves the block as it was. */
extern void *dmapp_sheap_malloc(size_t size);
extern void *dmapp_sheap_realloc(void *ptr, size_t size);
extern void dmapp_sheap_free(void *ptr);
extern dmapp_return_t dmapp_syncid_wait(dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_syncid_test(dmapp_syncid_handle_t *syncid, int *flag);
extern dmapp_return_t dmapp_gsync_wait(void);
extern dmapp_return_t dmapp_gsync_test(int *flag);

/* ---- data movement: blocking, _nb (explicit sync id) and _nbi (completed by gsync) ---- */
extern dmapp_return_t dmapp_put(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_put_nb(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, uint64_t nelems, dmapp_type_t type, dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_put_nbi(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, uint64_t nelems, dmapp_type_t type);

extern dmapp_return_t dmapp_get(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_get_nb(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, uint64_t nelems, dmapp_type_t type, dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_get_nbi(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, uint64_t nelems, dmapp_type_t type);

/* PUT, then write flag_value (8 bytes) at target_flag on the target PE once the data is there. */
extern dmapp_return_t dmapp_put_flag(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, uint64_t nelems, dmapp_type_t type, void *target_flag, uint64_t flag_value);
extern dmapp_return_t dmapp_put_flag_nb(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, uint64_t nelems, dmapp_type_t type, void *target_flag, uint64_t flag_value,
	dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_put_flag_nbi(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, uint64_t nelems, dmapp_type_t type, void *target_flag, uint64_t flag_value);
extern dmapp_return_t dmapp_get_flag_nbi(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, uint64_t nelems, dmapp_type_t type);

/* Strided: tst and sst are the target and source strides, in elements. */
extern dmapp_return_t dmapp_iput(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, ptrdiff_t tst, ptrdiff_t sst, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_iput_nb(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, ptrdiff_t tst, ptrdiff_t sst, uint64_t nelems, dmapp_type_t type,
	dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_iput_nbi(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, ptrdiff_t tst, ptrdiff_t sst, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_iget(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, ptrdiff_t tst, ptrdiff_t sst, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_iget_nb(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, ptrdiff_t tst, ptrdiff_t sst, uint64_t nelems, dmapp_type_t type,
	dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_iget_nbi(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, ptrdiff_t tst, ptrdiff_t sst, uint64_t nelems, dmapp_type_t type);

/* Indexed: element i goes to (ixput) or comes from (ixget) index tidx[i] / sidx[i], in elements. */
extern dmapp_return_t dmapp_ixput(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, ptrdiff_t *tidx, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_ixput_nb(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, ptrdiff_t *tidx, uint64_t nelems, dmapp_type_t type, dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_ixput_nbi(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	void *source_addr, ptrdiff_t *tidx, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_ixget(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, ptrdiff_t *sidx, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_ixget_nb(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, ptrdiff_t *sidx, uint64_t nelems, dmapp_type_t type, dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_ixget_nbi(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, ptrdiff_t *sidx, uint64_t nelems, dmapp_type_t type);

/* One transfer per PE of a list: put_ixpe and scatter_ixpe send the same (put) or consecutive
 * (scatter) nelems elements to each target PE; gather_ixpe fetches nelems from each source PE. */
extern dmapp_return_t dmapp_put_ixpe(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t *target_pe_list,
	uint32_t num_target_pes, void *source_addr, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_put_ixpe_nb(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t *target_pe_list,
	uint32_t num_target_pes, void *source_addr, uint64_t nelems, dmapp_type_t type, dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_put_ixpe_nbi(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t *target_pe_list,
	uint32_t num_target_pes, void *source_addr, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_scatter_ixpe(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t *target_pe_list,
	uint32_t num_target_pes, void *source_addr, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_scatter_ixpe_nb(void *target_addr, dmapp_seg_desc_t *target_seg,
	dmapp_pe_t *target_pe_list, uint32_t num_target_pes, void *source_addr, uint64_t nelems, dmapp_type_t type,
	dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_scatter_ixpe_nbi(void *target_addr, dmapp_seg_desc_t *target_seg,
	dmapp_pe_t *target_pe_list, uint32_t num_target_pes, void *source_addr, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_gather_ixpe(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t *source_pe_list, uint32_t num_source_pes, uint64_t nelems, dmapp_type_t type);
extern dmapp_return_t dmapp_gather_ixpe_nb(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t *source_pe_list, uint32_t num_source_pes, uint64_t nelems, dmapp_type_t type,
	dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_gather_ixpe_nbi(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t *source_pe_list, uint32_t num_source_pes, uint64_t nelems, dmapp_type_t type);

/* ---- atomic memory operations on 8-byte words (they follow the PUT routing attribute) ---- */
#define AAR_DMAPP_AMO(op)                                                                                  \
	extern dmapp_return_t dmapp_##op##_qw(void *target_addr, dmapp_seg_desc_t *target_seg,                 \
		dmapp_pe_t target_pe, int64_t operand);                                                        \
	extern dmapp_return_t dmapp_##op##_qw_nb(void *target_addr, dmapp_seg_desc_t *target_seg,              \
		dmapp_pe_t target_pe, int64_t operand, dmapp_syncid_handle_t *syncid);                         \
	extern dmapp_return_t dmapp_##op##_qw_nbi(void *target_addr, dmapp_seg_desc_t *target_seg,             \
		dmapp_pe_t target_pe, int64_t operand);
AAR_DMAPP_AMO(aadd)
AAR_DMAPP_AMO(aand)
AAR_DMAPP_AMO(aor)
AAR_DMAPP_AMO(axor)
#undef AAR_DMAPP_AMO

/* Fetching: the old value at source_addr on source_pe is written to target_addr. */
#define AAR_DMAPP_FAMO(op)                                                                                 \
	extern dmapp_return_t dmapp_##op##_qw(void *target_addr, void *source_addr,                            \
		dmapp_seg_desc_t *source_seg, dmapp_pe_t source_pe, int64_t operand);                          \
	extern dmapp_return_t dmapp_##op##_qw_nb(void *target_addr, void *source_addr,                         \
		dmapp_seg_desc_t *source_seg, dmapp_pe_t source_pe, int64_t operand,                           \
		dmapp_syncid_handle_t *syncid);                                                                \
	extern dmapp_return_t dmapp_##op##_qw_nbi(void *target_addr, void *source_addr,                        \
		dmapp_seg_desc_t *source_seg, dmapp_pe_t source_pe, int64_t operand);
AAR_DMAPP_FAMO(afadd)
AAR_DMAPP_FAMO(afand)
AAR_DMAPP_FAMO(afor)
AAR_DMAPP_FAMO(afxor)
#undef AAR_DMAPP_FAMO

/* afax: new = (old & andMask) ^ xorMask; acswap: new = swaperand if old == comperand. */
#define AAR_DMAPP_FAMO2(op, a, b)                                                                          \
	extern dmapp_return_t dmapp_##op##_qw(void *target_addr, void *source_addr,                            \
		dmapp_seg_desc_t *source_seg, dmapp_pe_t source_pe, int64_t a, int64_t b);                     \
	extern dmapp_return_t dmapp_##op##_qw_nb(void *target_addr, void *source_addr,                         \
		dmapp_seg_desc_t *source_seg, dmapp_pe_t source_pe, int64_t a, int64_t b,                      \
		dmapp_syncid_handle_t *syncid);                                                                \
	extern dmapp_return_t dmapp_##op##_qw_nbi(void *target_addr, void *source_addr,                        \
		dmapp_seg_desc_t *source_seg, dmapp_pe_t source_pe, int64_t a, int64_t b);
AAR_DMAPP_FAMO2(afax, andMask, xorMask)
AAR_DMAPP_FAMO2(acswap, comperand, swaperand)
#undef AAR_DMAPP_FAMO2

extern dmapp_return_t dmapp_amo_put(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	dmapp_amo_t *amo);
extern dmapp_return_t dmapp_amo_put_nb(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	dmapp_amo_t *amo, dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_amo_put_nbi(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe,
	dmapp_amo_t *amo);
extern dmapp_return_t dmapp_amo_get(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, dmapp_amo_t *amo);
extern dmapp_return_t dmapp_amo_get_nb(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, dmapp_amo_t *amo, dmapp_syncid_handle_t *syncid);
extern dmapp_return_t dmapp_amo_get_nbi(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg,
	dmapp_pe_t source_pe, dmapp_amo_t *amo);

#ifdef __cplusplus
}
#endif

#endif /* _DMAPP_H_ */
