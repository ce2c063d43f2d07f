/* The emulated libdmapp, one scenario per argv[1]; prints "PASS <scenario>" on success (after
 * any lines the scenario prints for the Rust test) and exits non-zero with a message on stderr at
 * the first surprise. Linked -ldmapp -lugni. Remote data is checked by reading it back with GETs
 * and by what it does to PE 0's memory (this process's), which is the only copy C can see. */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#include "dmapp.h"
#include "emu_test.h"

#define EXPECT_DRC(call, want)                                                                 \
	do {                                                                                   \
		dmapp_return_t rc_ = (call);                                                   \
		if (rc_ != (want)) {                                                           \
			fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, \
				#call, (int)rc_, (int)(want));                                 \
			exit(1);                                                               \
		}                                                                              \
	} while (0)
#define DOK(call) EXPECT_DRC(call, DMAPP_RC_SUCCESS)

/* The three forms of a data call: fn, fn_nb (with the sync id `sid`) and fn_nbi. */
enum form { BLOCKING, NB, NBI };
static dmapp_syncid_handle_t sid;
#define CALL3(f, fn, ...) \
	((f) == BLOCKING ? fn(__VA_ARGS__) : (f) == NB ? fn##_nb(__VA_ARGS__, &sid) : fn##_nbi(__VA_ARGS__))

/* Completes a call of form f as a program must: the sync id, or the global sync. */
static void complete(enum form f)
{
	int flag = 0;
	if (f == NB) {
		EXPECT(sid != NULL);
		DOK(dmapp_syncid_test(&sid, &flag));
		EXPECT(flag == 1);
		DOK(dmapp_syncid_wait(&sid));
	} else if (f == NBI) {
		DOK(dmapp_gsync_test(&flag));
		EXPECT(flag == 1);
		DOK(dmapp_gsync_wait());
	}
}

#define DO3(f, fn, ...)                             \
	do {                                        \
		sid = NULL;                         \
		DOK(CALL3(f, fn, __VA_ARGS__));     \
		complete(f);                        \
	} while (0)

static const size_t esize[4] = { 16, 8, 4, 1 }; /* DQW, QW, DW, BYTE */
#define NTYPES 4

static dmapp_jobinfo_t job;
static unsigned char *heap;
static dmapp_seg_desc_t *hseg;

static void start(void)
{
	dmapp_rma_attrs_t req = { .max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB,
				  .offload_threshold = DMAPP_OFFLOAD_THRESHOLD,
				  .put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
				  .get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
				  .max_concurrency = 1 },
			  actual;
	DOK(dmapp_init(&req, &actual));
	DOK(dmapp_get_jobinfo(&job));
	heap = job.sheap_seg.addr;
	hseg = &job.sheap_seg;
}

/* n bytes at heap offset off on PE pe, read with a blocking GET. */
static void peek(int pe, size_t off, void *out, size_t n)
{
	DOK(dmapp_get(out, heap + off, hseg, pe, n, DMAPP_BYTE));
}

static uint64_t peek_word(int pe, size_t off)
{
	uint64_t w = 0;
	DOK(dmapp_get(&w, heap + off, hseg, pe, 1, DMAPP_QW));
	return w;
}

/* The local buffers, 16-aligned. */
#define LOCAL_BYTES (64 * 1024)
static unsigned char *src, *dst, *scratch;

static void buffers(void)
{
	src = aligned_alloc(64, LOCAL_BYTES);
	dst = aligned_alloc(64, LOCAL_BYTES);
	scratch = aligned_alloc(64, LOCAL_BYTES);
	EXPECT(src && dst && scratch);
}

/* ---- scenarios ---------------------------------------------------------------------------- */

static void layout(void)
{
	EXPECT(sizeof(dmapp_rma_attrs_t) == 12);
	EXPECT(offsetof(dmapp_rma_attrs_t, put_relaxed_ordering) == 8);
	EXPECT(offsetof(dmapp_rma_attrs_t, get_relaxed_ordering) == 9);
	EXPECT(offsetof(dmapp_rma_attrs_t, max_concurrency) == 10);
	EXPECT(sizeof(dmapp_rma_attrs_ext_t) == 48);
	EXPECT(offsetof(dmapp_rma_attrs_ext_t, put_relaxed_ordering) == 8);
	EXPECT(offsetof(dmapp_rma_attrs_ext_t, PI_ordering) == 11);
	EXPECT(offsetof(dmapp_rma_attrs_ext_t, queue_depth) == 12);
	EXPECT(offsetof(dmapp_rma_attrs_ext_t, queue_nelems) == 16);
	EXPECT(offsetof(dmapp_rma_attrs_ext_t, queue_flags) == 24);
	EXPECT(sizeof(dmapp_seg_desc_t) == 48);
	EXPECT(offsetof(dmapp_seg_desc_t, memhndl) == 16);
	EXPECT(offsetof(dmapp_seg_desc_t, flags) == 32);
	EXPECT(sizeof(dmapp_jobinfo_t) == 112);
	EXPECT(offsetof(dmapp_jobinfo_t, sheap_seg) == 64);
	EXPECT(sizeof(dmapp_amo_t) == 24);
	EXPECT(offsetof(dmapp_amo_t, operand1) == 8);
	EXPECT(sizeof(dmapp_type_t) == 4 && sizeof(dmapp_pe_t) == 4);
}

static long statics[64] = { 1, 2, 3, 4, 5, 6, 7, 8 }; /* in the data segment */

/* Before dmapp_init nothing is permitted; init checks its attributes; the job's shape; a second
 * init changes nothing; after finalize nothing is permitted again, and a new job starts afresh. */
static void init(void)
{
	dmapp_jobinfo_t info;
	dmapp_rma_attrs_t a;
	dmapp_seg_desc_t seg;
	dmapp_syncid_handle_t id = NULL;
	int flag;
	uint64_t word = 0;
	memset(&a, 0, sizeof a);
	memset(&seg, 0, sizeof seg);
	EXPECT_DRC(dmapp_get_jobinfo(&info), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_get_rma_attrs(&a), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_set_rma_attrs(&a, &a), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_put(&word, &seg, 1, &word, 1, DMAPP_QW), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_aadd_qw(&word, &seg, 1, 1), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_mem_register(&word, 8, &seg), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_gsync_wait(), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_gsync_test(&flag), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_syncid_wait(&id), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_finalize(), DMAPP_RC_PERMISSION_ERROR);
	EXPECT(aar_emu_dmapp_routing(0) == -1);

	dmapp_rma_attrs_t bad = { .max_outstanding_nb = 4, .offload_threshold = 4096, .put_relaxed_ordering = 2,
				  .get_relaxed_ordering = 2, .max_concurrency = 1 };
	EXPECT_DRC(dmapp_init(&bad, &a), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_get_jobinfo(&info), DMAPP_RC_PERMISSION_ERROR);

	/* Init's attributes are every thread's. */
	dmapp_rma_attrs_t req = { .max_outstanding_nb = 64, .offload_threshold = 8192,
				  .put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE_2,
				  .get_relaxed_ordering = DMAPP_ROUTING_DETERMINISTIC, .max_concurrency = 4 };
	memset(&a, 0xee, sizeof a);
	DOK(dmapp_init(&req, &a));
	EXPECT(a.max_outstanding_nb == 64 && a.offload_threshold == 8192 && a.max_concurrency == 4);
	EXPECT(a.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE_2 && a.get_relaxed_ordering == DMAPP_ROUTING_DETERMINISTIC);
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_2 && aar_emu_dmapp_routing(1) == DMAPP_ROUTING_DETERMINISTIC);
	EXPECT(aar_emu_dmapp_routing(2) == -1 && aar_emu_dmapp_routing(-1) == -1);
	dmapp_rma_attrs_ext_t ext;
	DOK(dmapp_get_rma_attrs_ext(&ext));
	EXPECT(ext.max_outstanding_nb == 64 && ext.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE_2);
	EXPECT(ext.PI_ordering == DMAPP_PI_ORDERING_DEFAULT && ext.queue_flags == 0x202);

	DOK(dmapp_get_jobinfo(&info));
	EXPECT(info.pe == 0 && info.npes == 4 && info.sheap_seg.len == 16 << 20);
	EXPECT(info.sheap_seg.addr != NULL && ((uintptr_t)info.sheap_seg.addr & 4095) == 0);
	/* The data segment holds the program's statics. */
	EXPECT((char *)info.data_seg.addr <= (char *)statics &&
	       (char *)(statics + 64) <= (char *)info.data_seg.addr + info.data_seg.len);

	/* A second init: its attributes are checked, and nothing changes. */
	EXPECT_DRC(dmapp_init(&bad, &a), DMAPP_RC_INVALID_PARAM);
	dmapp_rma_attrs_t other = req;
	other.put_relaxed_ordering = DMAPP_ROUTING_IN_ORDER;
	DOK(dmapp_init(&other, &a));
	EXPECT(a.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE_2 && aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_2);
	dmapp_jobinfo_t again;
	DOK(dmapp_get_jobinfo(&again));
	EXPECT(again.sheap_seg.addr == info.sheap_seg.addr && again.npes == info.npes);

	/* A job's PEs and attributes are its own: after finalize the heap is gone, and a new job has
	 * a new one, with the new init's attributes for every thread, even one that set its own. */
	dmapp_rma_attrs_t mine = a;
	mine.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE_3;
	DOK(dmapp_set_rma_attrs(&mine, NULL));
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_3);
	DOK(dmapp_finalize());
	EXPECT_DRC(dmapp_get_jobinfo(&again), DMAPP_RC_PERMISSION_ERROR);
	EXPECT_DRC(dmapp_put(info.sheap_seg.addr, &info.sheap_seg, 0, &word, 1, DMAPP_QW), DMAPP_RC_PERMISSION_ERROR);
	EXPECT(aar_emu_dmapp_routing(0) == -1);
	dmapp_rma_attrs_ext_t ereq, eact;
	memset(&ereq, 0, sizeof ereq);
	ereq.max_outstanding_nb = 16;
	ereq.offload_threshold = 1024;
	ereq.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE_1;
	ereq.get_relaxed_ordering = DMAPP_ROUTING_IN_ORDER;
	ereq.max_concurrency = 2;
	ereq.PI_ordering = DMAPP_PI_ORDERING_RELAXED;
	ereq.queue_depth = 9;
	ereq.queue_flags = 0x2;
	DOK(dmapp_init_ext(&ereq, &eact));
	EXPECT(!memcmp(&ereq, &eact, sizeof ereq));
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_1 && aar_emu_dmapp_routing(1) == DMAPP_ROUTING_IN_ORDER);
	DOK(dmapp_finalize());
	/* No request: DMAPP's defaults, as Cray's own sample programs start (dmapp_init(NULL,
	 * &actual), checked for DMAPP_RC_SUCCESS); the same on a running job, whose attributes stay. */
	memset(&a, 0xee, sizeof a);
	DOK(dmapp_init(NULL, &a));
	EXPECT(a.max_outstanding_nb == DMAPP_DEF_OUTSTANDING_NB && a.offload_threshold == DMAPP_OFFLOAD_THRESHOLD);
	EXPECT(a.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE && a.get_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE);
	EXPECT(a.max_concurrency == 1 && aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE);
	DOK(dmapp_get_jobinfo(&again));
	DOK(dmapp_set_rma_attrs(&mine, NULL));
	DOK(dmapp_init_ext(NULL, NULL));
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_3);
	DOK(dmapp_finalize());
	start();
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE);
	EXPECT_DRC(dmapp_put(info.sheap_seg.addr, &info.sheap_seg, 0, &word, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	DOK(dmapp_put(heap, hseg, job.npes - 1, &word, 1, DMAPP_QW));
	DOK(dmapp_finalize());
}

/* PUT and GET of every element type in every form, to every PE; every PE keeps its own copy. */
static void put_get(void)
{
	start();
	buffers();
	int npes = job.npes;
	for (int t = 0; t < NTYPES; t++) {
		for (int f = 0; f < 3; f++) {
			for (int pe = 0; pe < npes; pe++) {
				uint64_t n = 4096 / esize[t] - (uint64_t)t; /* odd sizes too */
				size_t bytes = n * esize[t], off = 8192 * (size_t)(t * 3 + f);
				fill(src, bytes, (unsigned)((t * 3 + f) * npes + pe));
				DO3(f, dmapp_put, heap + off, hseg, pe, src, n, (dmapp_type_t)t);
				memset(dst, 0, bytes + 16);
				DO3(f, dmapp_get, dst, heap + off, hseg, pe, n, (dmapp_type_t)t);
				EXPECT(!memcmp(src, dst, bytes) && dst[bytes] == 0);
				if (pe == 0)
					EXPECT(!memcmp(heap + off, src, bytes));
			}
		}
	}
	/* Each PE still holds what was put to it, not what went to the others. */
	for (int t = 0; t < NTYPES; t++)
		for (int f = 0; f < 3; f++)
			for (int pe = 0; pe < npes; pe++) {
				size_t bytes = (4096 / esize[t] - (size_t)t) * esize[t], off = 8192 * (size_t)(t * 3 + f);
				fill(src, bytes, (unsigned)((t * 3 + f) * npes + pe));
				peek(pe, off, dst, bytes);
				EXPECT(!memcmp(src, dst, bytes));
			}

	/* put_flag: the data, then the flag word; get_flag_nbi: a GET. */
	for (int t = 0; t < NTYPES; t++)
		for (int f = 0; f < 3; f++) {
			int pe = (t + f) % npes;
			size_t off = 65536 + 8192 * (size_t)(t * 3 + f);
			uint64_t n = 256 / esize[t];
			fill(src, 256, (unsigned)(100 + t * 3 + f));
			DO3(f, dmapp_put_flag, heap + off, hseg, pe, src, n, (dmapp_type_t)t, heap + off + 4096,
			    0xf1a9000 + (uint64_t)(t * 3 + f));
			EXPECT(peek_word(pe, off + 4096) == 0xf1a9000 + (uint64_t)(t * 3 + f));
			memset(dst, 0, 256);
			DOK(dmapp_get_flag_nbi(dst, heap + off, hseg, pe, n, (dmapp_type_t)t));
			DOK(dmapp_gsync_wait());
			EXPECT(!memcmp(src, dst, 256));
		}

	/* Zero elements: a PUT moves nothing, and succeeds; DMAPP does not support a zero-length GET
	 * (RB-3.1's dmapp.h), in any form. */
	DOK(dmapp_put(heap, hseg, 1, NULL, 0, DMAPP_QW));
	dmapp_syncid_handle_t none = NULL;
	ptrdiff_t idx[1] = { 0 };
	dmapp_pe_t pes[1] = { 1 };
	EXPECT_DRC(dmapp_get(NULL, heap, hseg, 1, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_get_nb(dst, heap, hseg, 1, 0, DMAPP_BYTE, &none), DMAPP_RC_INVALID_PARAM);
	EXPECT(none == NULL);
	EXPECT_DRC(dmapp_get_flag_nbi(dst, heap, hseg, 1, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_iget_nbi(dst, heap, hseg, 1, 1, 1, 0, DMAPP_DW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_ixget(dst, heap, hseg, 1, idx, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_gather_ixpe(dst, heap, hseg, pes, 1, 0, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	/* PE 0 to itself, overlapping: memmove semantics. */
	fill(heap + 300000, 1000, 9);
	memcpy(scratch, heap + 300000, 1000);
	DOK(dmapp_put(heap + 300100, hseg, 0, heap + 300000, 1000, DMAPP_BYTE));
	EXPECT(!memcmp(heap + 300100, scratch, 1000));
}

/* Strided, indexed and per-PE-list calls, for every type and form. */
static void strided(void)
{
	start();
	buffers();
	int npes = job.npes;
	EXPECT(npes >= 4);
	for (int t = 0; t < NTYPES; t++)
		for (int f = 0; f < 3; f++) {
			size_t es = esize[t], off = 16384 * (size_t)(t * 3 + f);
			unsigned seed = (unsigned)(t * 3 + f);
			/* iput: 16 source elements, every other one (sst 2), to every third slot (tst 3). */
			fill(src, 32 * es, seed);
			DO3(f, dmapp_iput, heap + off, hseg, 1, src, 3, 2, 16, (dmapp_type_t)t);
			peek(1, off, dst, 48 * es);
			for (size_t i = 0; i < 48; i++) {
				const unsigned char *want = i % 3 == 0 ? src + (i / 3) * 2 * es : NULL;
				if (want)
					EXPECT(!memcmp(dst + i * es, want, es));
				else
					for (size_t b = 0; b < es; b++)
						EXPECT(dst[i * es + b] == 0);
			}
			/* Negative strides: the source backwards. */
			DO3(f, dmapp_iput, heap + off + 4096, hseg, 2, src + 15 * es, 1, -1, 16, (dmapp_type_t)t);
			peek(2, off + 4096, dst, 16 * es);
			for (size_t i = 0; i < 16; i++)
				EXPECT(!memcmp(dst + i * es, src + (15 - i) * es, es));
			/* iget: every fourth remote element (sst 4) into every other local slot (tst 2). */
			fill(src, 64 * es, seed + 50);
			DOK(dmapp_put(heap + off + 8192, hseg, 3, src, 64, (dmapp_type_t)t));
			memset(dst, 0, 32 * es);
			DO3(f, dmapp_iget, dst, heap + off + 8192, hseg, 3, 2, 4, 16, (dmapp_type_t)t);
			for (size_t i = 0; i < 16; i++) {
				EXPECT(!memcmp(dst + 2 * i * es, src + 4 * i * es, es));
				for (size_t b = 0; b < es; b++)
					EXPECT(dst[(2 * i + 1) * es + b] == 0);
			}
			/* ixput: element i to index tidx[i]. */
			ptrdiff_t tidx[5] = { 7, 0, 3, 12, 1 };
			fill(src, 5 * es, seed + 70);
			DO3(f, dmapp_ixput, heap + off + 12288, hseg, 1, src, tidx, 5, (dmapp_type_t)t);
			peek(1, off + 12288, dst, 13 * es);
			for (size_t i = 0; i < 5; i++)
				EXPECT(!memcmp(dst + (size_t)tidx[i] * es, src + i * es, es));
			/* ixget: element i from index sidx[i] (not for bytes). */
			if (t != DMAPP_BYTE) {
				ptrdiff_t sidx[4] = { 12, 3, 3, 0 };
				memset(scratch, 0, 4 * es);
				DO3(f, dmapp_ixget, scratch, heap + off + 12288, hseg, 1, sidx, 4, (dmapp_type_t)t);
				for (size_t i = 0; i < 4; i++)
					EXPECT(!memcmp(scratch + i * es, dst + (size_t)sidx[i] * es, es));
			}
		}

	/* One message per PE of a list: the same block to each (put_ixpe), consecutive blocks
	 * (scatter_ixpe), blocks from each into consecutive places (gather_ixpe). */
	dmapp_pe_t list[3] = { 3, 1, 2 };
	for (int t = 0; t < NTYPES; t++)
		for (int f = 0; f < 3; f++) {
			size_t es = esize[t], n = 40, block = n * es, off = 262144 + 8192 * (size_t)(t * 3 + f);
			fill(src, 3 * block, (unsigned)(200 + t * 3 + f));
			DO3(f, dmapp_put_ixpe, heap + off, hseg, list, 3, src, n, (dmapp_type_t)t);
			for (int k = 0; k < 3; k++) {
				peek(list[k], off, dst, block);
				EXPECT(!memcmp(dst, src, block));
			}
			peek(0, off, dst, block);
			for (size_t b = 0; b < block; b++)
				EXPECT(dst[b] == 0);
			DO3(f, dmapp_scatter_ixpe, heap + off + 4096, hseg, list, 3, src, n, (dmapp_type_t)t);
			for (int k = 0; k < 3; k++) {
				peek(list[k], off + 4096, dst, block);
				EXPECT(!memcmp(dst, src + (size_t)k * block, block));
			}
			memset(dst, 0, 3 * block);
			dmapp_pe_t back[3] = { 2, 3, 1 };
			DO3(f, dmapp_gather_ixpe, dst, heap + off + 4096, hseg, back, 3, n, (dmapp_type_t)t);
			for (int k = 0; k < 3; k++) {
				int from = back[k] == 3 ? 0 : back[k] == 1 ? 1 : 2; /* which block PE back[k] got */
				EXPECT(!memcmp(dst + (size_t)k * block, src + (size_t)from * block, block));
			}
		}
}

/* Every AMO in every form, on PE 0 (visible here) and on another PE. */
static void amo(void)
{
	start();
	for (int f = 0; f < 3; f++)
		for (int pe = 0; pe < 2; pe++) {
			size_t off = 512 + 64 * (size_t)(f * 2 + pe);
			int64_t *w = (int64_t *)(heap + off), old = -1;
			void *target = heap + off;
			DO3(f, dmapp_aadd_qw, target, hseg, pe, 5);
			DO3(f, dmapp_afadd_qw, &old, target, hseg, pe, 3);
			EXPECT(old == 5);
			DO3(f, dmapp_aand_qw, target, hseg, pe, 0xc);
			EXPECT(peek_word(pe, off) == 8);
			DO3(f, dmapp_aor_qw, target, hseg, pe, 1);
			DO3(f, dmapp_axor_qw, target, hseg, pe, 0xf);
			EXPECT(peek_word(pe, off) == 6);
			DO3(f, dmapp_afand_qw, &old, target, hseg, pe, 0x7);
			EXPECT(old == 6);
			DO3(f, dmapp_afor_qw, &old, target, hseg, pe, 0x10);
			EXPECT(old == 6);
			DO3(f, dmapp_afxor_qw, &old, target, hseg, pe, 0x3);
			EXPECT(old == 0x16);
			DO3(f, dmapp_afax_qw, &old, target, hseg, pe, 0xff, 0x100);
			EXPECT(old == 0x15);
			EXPECT(peek_word(pe, off) == 0x115);
			DO3(f, dmapp_acswap_qw, &old, target, hseg, pe, 0x115, 100);
			EXPECT(old == 0x115);
			DO3(f, dmapp_acswap_qw, &old, target, hseg, pe, 1, 7);
			EXPECT(old == 100 && peek_word(pe, off) == 100);
			dmapp_amo_t add = { DMAPP_AMO_ADD, 11, 0 }, swap = { DMAPP_AMO_SWAP, 42, 0 },
				    cswap = { DMAPP_AMO_CSWAP, 42, 43 };
			DO3(f, dmapp_amo_put, target, hseg, pe, &add);
			DO3(f, dmapp_amo_get, &old, target, hseg, pe, &swap);
			EXPECT(old == 111);
			DO3(f, dmapp_amo_get, &old, target, hseg, pe, &cswap);
			EXPECT(old == 42 && peek_word(pe, off) == 43);
			EXPECT(pe != 0 || *w == 43);
			if (pe != 0)
				EXPECT(*w == 0); /* PE 0's word untouched by AMOs on PE 1 */
		}
}

/* Registered segments and the data segment: every PE has a copy at the same offsets. */
static uint64_t registered[512];

static void segments(void)
{
	start();
	buffers();
	dmapp_seg_desc_t seg;
	DOK(dmapp_mem_register(registered, sizeof registered, &seg));
	EXPECT(seg.addr == (void *)registered && seg.len == sizeof registered);
	for (int i = 0; i < 16; i++)
		((uint64_t *)src)[i] = 0xabc00 + (uint64_t)i;
	DOK(dmapp_put(&registered[100], &seg, 2, src, 16, DMAPP_QW));
	EXPECT(registered[100] == 0); /* PE 2's copy, not ours */
	memset(dst, 0, 128);
	DOK(dmapp_get(dst, &registered[100], &seg, 2, 16, DMAPP_QW));
	EXPECT(!memcmp(dst, src, 128));
	DOK(dmapp_put(&registered[8], &seg, 0, src, 16, DMAPP_QW));
	EXPECT(registered[8] == 0xabc00 && registered[23] == 0xabc0f);
	EXPECT_DRC(dmapp_put(&registered[510], &seg, 1, src, 4, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	/* A descriptor that is not one DMAPP handed out. */
	dmapp_seg_desc_t forged = seg;
	forged.memhndl.qword2 ^= 1;
	EXPECT_DRC(dmapp_put(&registered[8], &forged, 1, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	forged = seg;
	forged.len -= 8;
	EXPECT_DRC(dmapp_put(&registered[8], &forged, 1, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_mem_unregister(&forged), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_mem_unregister(hseg), DMAPP_RC_INVALID_PARAM);
	DOK(dmapp_mem_unregister(&seg));
	EXPECT_DRC(dmapp_put(&registered[8], &seg, 1, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_mem_unregister(&seg), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_mem_register(NULL, 8, &seg), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_mem_register(registered, 0, &seg), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_mem_register(registered, 8, NULL), DMAPP_RC_INVALID_PARAM);

	/* The data segment: another PE's statics start as this program initialised them. */
	dmapp_seg_desc_t *data = &job.data_seg;
	long got[8] = { 0 };
	DOK(dmapp_get(got, statics, data, 3, 8, DMAPP_QW));
	for (int i = 0; i < 8; i++)
		EXPECT(got[i] == i + 1);
	long mine[8] = { 80, 81, 82, 83, 84, 85, 86, 87 };
	DOK(dmapp_put(statics, data, 3, mine, 8, DMAPP_QW));
	DOK(dmapp_get(got, statics, data, 3, 8, DMAPP_QW));
	EXPECT(got[0] == 80 && got[7] == 87 && statics[0] == 1);
}

/* Every error the emulator returns, and nothing moved by a failing call. */
static void errors(void)
{
	start();
	buffers();
	int npes = job.npes;
	unsigned long long calls0 = aar_emu_dmapp_calls();
	uint64_t word = 0;
	dmapp_syncid_handle_t id;
	fill(src, 4096, 3);
	/* Bad PE. */
	EXPECT_DRC(dmapp_put(heap, hseg, -1, src, 8, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_put_nb(heap, hseg, npes, src, 8, DMAPP_QW, &id), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_get_nbi(dst, heap, hseg, npes, 8, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_aadd_qw(heap, hseg, npes + 5, 1), DMAPP_RC_INVALID_PARAM);
	dmapp_pe_t list[2] = { 1, npes };
	EXPECT_DRC(dmapp_put_ixpe(heap + 4096, hseg, list, 2, src, 8, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT(peek_word(1, 4096) == 0); /* PE 1 got nothing from the refused call */
	EXPECT_DRC(dmapp_put_ixpe(heap, hseg, NULL, 2, src, 8, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	DOK(dmapp_put_ixpe(heap, hseg, NULL, 0, src, 8, DMAPP_QW));
	/* Bad element type. */
	EXPECT_DRC(dmapp_put(heap, hseg, 1, src, 8, (dmapp_type_t)4), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_iget(dst, heap, hseg, 1, 1, 1, 8, (dmapp_type_t)-1), DMAPP_RC_INVALID_PARAM);
	ptrdiff_t idx[2] = { 0, 1 };
	EXPECT_DRC(dmapp_ixget(dst, heap, hseg, 1, idx, 2, DMAPP_BYTE), DMAPP_RC_INVALID_PARAM);
	/* Misaligned, remote or local, for the element type; AMO words; the flag. */
	EXPECT_DRC(dmapp_put(heap + 4, hseg, 1, src, 2, DMAPP_QW), DMAPP_RC_ALIGNMENT_ERROR);
	EXPECT_DRC(dmapp_put(heap + 8, hseg, 1, src, 2, DMAPP_DQW), DMAPP_RC_ALIGNMENT_ERROR);
	EXPECT_DRC(dmapp_get(dst + 2, heap, hseg, 1, 2, DMAPP_DW), DMAPP_RC_ALIGNMENT_ERROR);
	EXPECT_DRC(dmapp_aadd_qw(heap + 4, hseg, 1, 1), DMAPP_RC_ALIGNMENT_ERROR);
	EXPECT_DRC(dmapp_afadd_qw(dst + 4, heap, hseg, 1, 1), DMAPP_RC_ALIGNMENT_ERROR);
	EXPECT_DRC(dmapp_put_flag(heap, hseg, 1, src, 2, DMAPP_QW, heap + 4100, 1), DMAPP_RC_ALIGNMENT_ERROR);
	DOK(dmapp_put(heap + 8195, hseg, 1, src + 1, 5, DMAPP_BYTE)); /* bytes: any address */
	/* Outside the segment. */
	size_t end = job.sheap_seg.len;
	EXPECT_DRC(dmapp_put(heap + end - 8, hseg, 1, src, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_get(dst, heap - 8, hseg, 1, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_iput(heap + end - 64, hseg, 1, src, 3, 1, 4, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_iput(heap + 8, hseg, 1, src, -2, 1, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	ptrdiff_t far[2] = { 0, (ptrdiff_t)(end / 8) };
	EXPECT_DRC(dmapp_ixput(heap, hseg, 1, src, far, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT(peek_word(1, 0) == 0);
	EXPECT_DRC(dmapp_aadd_qw(heap + end, hseg, 1, 1), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_put_flag(heap, hseg, 1, src, 2, DMAPP_QW, heap + end, 1), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_put(heap, hseg, 1, src, UINT64_MAX / 4, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	/* NULL arguments. */
	EXPECT_DRC(dmapp_put(heap, NULL, 1, src, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_put(heap, hseg, 1, NULL, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_put_nb(heap, hseg, 1, src, 1, DMAPP_QW, NULL), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_ixput(heap, hseg, 1, src, NULL, 2, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_afadd_qw(NULL, heap, hseg, 1, 1), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_amo_put(heap, hseg, 1, NULL), DMAPP_RC_INVALID_PARAM);
	dmapp_amo_t unknown = { (dmapp_amo_op_t)6, 1, 1 };
	EXPECT_DRC(dmapp_amo_get(&word, heap, hseg, 1, &unknown), DMAPP_RC_INVALID_PARAM);
	EXPECT(peek_word(1, 0) == 0);
	/* Sync ids and flags. */
	EXPECT_DRC(dmapp_syncid_wait(NULL), DMAPP_RC_INVALID_PARAM);
	id = (dmapp_syncid_handle_t)&word;
	EXPECT_DRC(dmapp_syncid_wait(&id), DMAPP_RC_INVALID_PARAM);
	DOK(dmapp_put_nb(heap, hseg, 1, src, 1, DMAPP_QW, &id));
	EXPECT_DRC(dmapp_syncid_test(&id, NULL), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_gsync_test(NULL), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_get_jobinfo(NULL), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_get_rma_attrs(NULL), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_get_rma_attrs_ext(NULL), DMAPP_RC_INVALID_PARAM);
	/* Every data call counted once, whatever it returned. */
	EXPECT(aar_emu_dmapp_calls() - calls0 == 36);
}

/* The calling thread's attributes: defaults, a set, each invalid value refused with nothing
 * changed, the queue flags, base sets keeping the ext fields. */
static void attrs(void)
{
	start();
	unsigned long long sets0 = aar_emu_dmapp_attr_sets(0);
	dmapp_rma_attrs_ext_t e, actual, now;
	DOK(dmapp_get_rma_attrs_ext(&e));
	EXPECT(e.max_outstanding_nb == DMAPP_DEF_OUTSTANDING_NB && e.offload_threshold == DMAPP_OFFLOAD_THRESHOLD);
	EXPECT(e.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE && e.get_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE);
	EXPECT(e.max_concurrency == 1 && e.PI_ordering == DMAPP_PI_ORDERING_DEFAULT && e.queue_flags == 0x202);

	e.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE_3;
	e.get_relaxed_ordering = DMAPP_ROUTING_IN_ORDER;
	e.queue_depth = 33;
	e.queue_flags = 0xffff;
	DOK(dmapp_set_rma_attrs_ext(&e, &actual));
	EXPECT(actual.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE_3 && actual.queue_depth == 33);
	EXPECT(actual.queue_flags == 0x202); /* unknown bits cleared */
	DOK(dmapp_get_rma_attrs_ext(&now));
	EXPECT(!memcmp(&now, &actual, sizeof now));
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_3 && aar_emu_dmapp_routing(1) == DMAPP_ROUTING_IN_ORDER);

	/* Each invalid value: INVALID_PARAM, attributes and actual untouched. */
	for (int i = 0; i < 7; i++) {
		dmapp_rma_attrs_ext_t bad = now;
		switch (i) {
		case 0: bad.put_relaxed_ordering = 7; break;
		case 1: bad.get_relaxed_ordering = 255; break;
		case 2: bad.max_outstanding_nb = DMAPP_MIN_OUTSTANDING_NB - 1; break;
		case 3: bad.max_outstanding_nb = DMAPP_MAX_OUTSTANDING_NB + 1; break;
		case 4: bad.max_concurrency = 0; break;
		case 5: bad.PI_ordering = 3; break;
		default: bad.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE; bad.get_relaxed_ordering = 9; break;
		}
		memset(&actual, 0xee, sizeof actual);
		EXPECT_DRC(dmapp_set_rma_attrs_ext(&bad, &actual), DMAPP_RC_INVALID_PARAM);
		EXPECT(actual.max_outstanding_nb == 0xeeeeeeee);
		dmapp_rma_attrs_ext_t after;
		DOK(dmapp_get_rma_attrs_ext(&after));
		EXPECT(!memcmp(&after, &now, sizeof now));
	}
	dmapp_rma_attrs_t base, base_actual;
	DOK(dmapp_get_rma_attrs(&base));
	EXPECT(base.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE_3 && base.max_outstanding_nb == 512);
	base.put_relaxed_ordering = 9;
	EXPECT_DRC(dmapp_set_rma_attrs(&base, &base_actual), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_set_rma_attrs(NULL, &base_actual), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_set_rma_attrs_ext(NULL, NULL), DMAPP_RC_INVALID_PARAM);
	/* A base set changes the base fields only; actual may be NULL. */
	base.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE_1;
	base.max_outstanding_nb = 100;
	DOK(dmapp_set_rma_attrs(&base, NULL));
	DOK(dmapp_get_rma_attrs_ext(&now));
	EXPECT(now.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE_1 && now.max_outstanding_nb == 100);
	EXPECT(now.queue_depth == 33 && now.get_relaxed_ordering == DMAPP_ROUTING_IN_ORDER);
	/* The first 12 bytes of the ext struct are the base struct. */
	DOK(dmapp_get_rma_attrs(&base));
	EXPECT(!memcmp(&base, &now, 11));
	/* Every set call counted, refused ones too. */
	EXPECT(aar_emu_dmapp_attr_sets(0) - sets0 == 12);
	EXPECT(aar_emu_dmapp_attr_sets(1) >= aar_emu_dmapp_attr_sets(0));
}

/* Threads have their own attributes, start from the job's, and their operations follow their own
 * routing; AMOs from all of them on one word are atomic. Prints "thread <tid> <put> <get> <sets>"
 * for the Rust test, which checks the log. */
#define THREADS 4
#define PER_THREAD 200

struct worker {
	int k;
	pid_t tid;
	unsigned long long sets;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	w->tid = gettid();
	/* A new thread starts with the job's attributes. */
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE && aar_emu_dmapp_routing(1) == DMAPP_ROUTING_ADAPTIVE);
	unsigned char buf[256], back[256];
	for (int round = 0; round <= w->k; round++) {
		dmapp_rma_attrs_t a;
		DOK(dmapp_get_rma_attrs(&a));
		a.put_relaxed_ordering = (uint8_t)(DMAPP_ROUTING_ADAPTIVE_1 + (w->k + round) % 3);
		a.get_relaxed_ordering = (uint8_t)(round == w->k ? DMAPP_ROUTING_DETERMINISTIC_1 : DMAPP_ROUTING_ADAPTIVE);
		DOK(dmapp_set_rma_attrs(&a, NULL));
		for (int i = 0; i < PER_THREAD; i++) {
			size_t off = 65536 + 4096 * (size_t)w->k;
			fill(buf, sizeof buf, (unsigned)(w->k * 1000 + i));
			DOK(dmapp_put(heap + off, hseg, 1 + w->k % 3, buf, sizeof buf, DMAPP_BYTE));
			DOK(dmapp_get(back, heap + off, hseg, 1 + w->k % 3, sizeof buf, DMAPP_BYTE));
			EXPECT(!memcmp(buf, back, sizeof buf));
			DOK(dmapp_aadd_qw(heap, hseg, 1, 1));
		}
		EXPECT(aar_emu_dmapp_routing(0) == a.put_relaxed_ordering);
		EXPECT(aar_emu_dmapp_routing(1) == a.get_relaxed_ordering);
	}
	w->sets = aar_emu_dmapp_attr_sets(0);
	return NULL;
}

static void threads(void)
{
	start();
	dmapp_rma_attrs_t mine = { 512, 4096, DMAPP_ROUTING_ADAPTIVE_2, DMAPP_ROUTING_ADAPTIVE_2, 1 };
	DOK(dmapp_set_rma_attrs(&mine, NULL));
	unsigned long long total0 = aar_emu_dmapp_attr_sets(1);
	struct worker w[THREADS];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ i, 0, 0 };
		EXPECT(pthread_create(&t[i], NULL, work, &w[i]) == 0);
	}
	unsigned long long want = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT(w[i].sets == (unsigned long long)i + 1);
		want += w[i].sets;
	}
	EXPECT(aar_emu_dmapp_attr_sets(1) - total0 == want);
	EXPECT(peek_word(1, 0) == (uint64_t)PER_THREAD * (THREADS * (THREADS + 1) / 2));
	/* This thread's attributes are its own still. */
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_2 && aar_emu_dmapp_routing(1) == DMAPP_ROUTING_ADAPTIVE_2);
	for (int i = 0; i < THREADS; i++)
		printf("thread %d %d %llu\n", (int)w[i].tid, w[i].k, w[i].sets);
	printf("main %d\n", (int)gettid());
}

/* A fixed sequence for the log test. */
static void log_sequence(void)
{
	uint64_t word[16] = { 0 };
	dmapp_seg_desc_t none = { 0 };
	dmapp_syncid_handle_t id;
	EXPECT_DRC(dmapp_put(word, &none, 1, word, 8, DMAPP_QW), DMAPP_RC_PERMISSION_ERROR);
	start();
	DOK(dmapp_put_nbi(heap, hseg, 1, word, 8, DMAPP_QW));
	dmapp_rma_attrs_ext_t e;
	DOK(dmapp_get_rma_attrs_ext(&e));
	e.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE_3;
	e.get_relaxed_ordering = DMAPP_ROUTING_IN_ORDER;
	DOK(dmapp_set_rma_attrs_ext(&e, &e));
	DOK(dmapp_get_nb(word, heap, hseg, 2, 100, DMAPP_BYTE, &id));
	DOK(dmapp_afadd_qw(word, heap, hseg, 3, 1));
	dmapp_pe_t list[2] = { 1, 3 };
	DOK(dmapp_put_ixpe_nbi(heap, hseg, list, 2, word, 8, DMAPP_DW));
	dmapp_rma_attrs_t a = { 512, 4096, 7, DMAPP_ROUTING_IN_ORDER, 1 };
	EXPECT_DRC(dmapp_set_rma_attrs(&a, &a), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_put(heap, hseg, 1, word, 8, (dmapp_type_t)9), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_gather_ixpe(word, heap, hseg, NULL, 2, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	EXPECT_DRC(dmapp_set_rma_attrs_ext(NULL, NULL), DMAPP_RC_INVALID_PARAM);
	printf("thread %d\n", (int)gettid());
}

/* AAR_EMU_DMAPP_LAYOUT=queue-first: a caller that writes bytes 8 and 9 of the ext struct does not
 * read back what it wrote, and the routing does not change; the real fields do work. */
static void queue_first(void)
{
	start();
	_Alignas(8) unsigned char buf[256], again[256];
	memset(buf, 0, sizeof buf);
	DOK(dmapp_get_rma_attrs_ext((dmapp_rma_attrs_ext_t *)buf));
	EXPECT(buf[8] == DMAPP_ROUTING_ADAPTIVE && buf[9] == DMAPP_ROUTING_ADAPTIVE); /* they look like routing */
	EXPECT(buf[16] == DMAPP_ROUTING_ADAPTIVE && buf[17] == DMAPP_ROUTING_ADAPTIVE);
	for (size_t i = 48; i < sizeof buf; i++)
		EXPECT(buf[i] == 0); /* 48 bytes written */
	buf[8] = DMAPP_ROUTING_ADAPTIVE_3;
	buf[9] = DMAPP_ROUTING_ADAPTIVE_1;
	DOK(dmapp_set_rma_attrs_ext((dmapp_rma_attrs_ext_t *)buf, NULL));
	memset(again, 0, sizeof again);
	DOK(dmapp_get_rma_attrs_ext((dmapp_rma_attrs_ext_t *)again));
	EXPECT(again[8] != DMAPP_ROUTING_ADAPTIVE_3 && again[9] != DMAPP_ROUTING_ADAPTIVE_1);
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE && aar_emu_dmapp_routing(1) == DMAPP_ROUTING_ADAPTIVE);
	/* The base struct is the same in both layouts. */
	dmapp_rma_attrs_t base;
	DOK(dmapp_get_rma_attrs(&base));
	EXPECT(base.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE);
	again[16] = DMAPP_ROUTING_ADAPTIVE_3;
	DOK(dmapp_set_rma_attrs_ext((dmapp_rma_attrs_ext_t *)again, NULL));
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_3);
	DOK(dmapp_get_rma_attrs(&base));
	EXPECT(base.put_relaxed_ordering == DMAPP_ROUTING_ADAPTIVE_3);
}

/* AAR_EMU_DMAPP_SET_BUSY=2 (from the Rust test): the first two set calls, base and ext, are busy
 * and change nothing, the third goes through; aar_emu_dmapp_set_busy makes the next ones busy
 * again, UINT_MAX every one, 0 none; init is never busy, and every set is counted. */
static void busy(void)
{
	start();
	unsigned long long sets0 = aar_emu_dmapp_attr_sets(0);
	dmapp_rma_attrs_ext_t e, actual;
	DOK(dmapp_get_rma_attrs_ext(&e));
	e.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE_3;
	memset(&actual, 0xee, sizeof actual);
	EXPECT_DRC(dmapp_set_rma_attrs_ext(&e, &actual), DMAPP_RC_BUSY);
	EXPECT(actual.max_outstanding_nb == 0xeeeeeeee);
	dmapp_rma_attrs_t base;
	DOK(dmapp_get_rma_attrs(&base));
	base.get_relaxed_ordering = DMAPP_ROUTING_IN_ORDER;
	EXPECT_DRC(dmapp_set_rma_attrs(&base, NULL), DMAPP_RC_BUSY);
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE && aar_emu_dmapp_routing(1) == DMAPP_ROUTING_ADAPTIVE);
	DOK(dmapp_set_rma_attrs_ext(&e, &actual));
	EXPECT(aar_emu_dmapp_routing(0) == DMAPP_ROUTING_ADAPTIVE_3);
	aar_emu_dmapp_set_busy(1);
	EXPECT_DRC(dmapp_set_rma_attrs(&base, NULL), DMAPP_RC_BUSY);
	DOK(dmapp_set_rma_attrs(&base, NULL));
	EXPECT(aar_emu_dmapp_routing(1) == DMAPP_ROUTING_IN_ORDER);
	aar_emu_dmapp_set_busy(UINT_MAX);
	for (int i = 0; i < 5; i++)
		EXPECT_DRC(dmapp_set_rma_attrs_ext(&e, NULL), DMAPP_RC_BUSY);
	aar_emu_dmapp_set_busy(0);
	DOK(dmapp_set_rma_attrs_ext(&e, NULL));
	EXPECT(aar_emu_dmapp_attr_sets(0) - sets0 == 11);
}

/* The job's shape, for the settings tests: "job npes N sheap BYTES", and PE N-1 works. */
static void job_shape(void)
{
	start();
	uint64_t word = 7;
	printf("job npes %d sheap %zu\n", job.npes, job.sheap_seg.len);
	DOK(dmapp_put(heap + job.sheap_seg.len - 8, hseg, job.npes - 1, &word, 1, DMAPP_QW));
	EXPECT(peek_word(job.npes - 1, job.sheap_seg.len - 8) == 7);
	EXPECT_DRC(dmapp_put(heap, hseg, job.npes, &word, 1, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
}

/* Linked -ldmapp -lugni: one object defines both APIs. Prints "object <path>". */
static int count_emulators(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (strstr(info->dlpi_name, "libugni") || strstr(info->dlpi_name, "libdmapp"))
		++*(int *)data;
	return 0;
}

static void one_object(void)
{
	Dl_info d, u;
	EXPECT(dladdr((void *)dmapp_put, &d) && dladdr((void *)GNI_PostFma, &u));
	EXPECT(d.dli_fbase == u.dli_fbase && !strcmp(d.dli_fname, u.dli_fname));
	int objects = 0;
	dl_iterate_phdr(count_emulators, &objects);
	EXPECT(objects == 1);
	printf("object %s\n", d.dli_fname);
	start();
	uint64_t word = 1;
	DOK(dmapp_put(heap, hseg, 1, &word, 1, DMAPP_QW));
	EXPECT(peek_word(1, 0) == 1);
}

/* The symmetric heap: NULL outside a job; blocks at the same offset on every PE (PE 0 puts into
 * PE 1's copy of its block and reads it back there); the same calls after a finalize and init
 * give the same offsets; reuse after free; realloc keeps the contents; NULL when too large. */
static void sheap(void)
{
	EXPECT(dmapp_sheap_malloc(64) == NULL);
	start();
	uint64_t *a = dmapp_sheap_malloc(3 * sizeof(uint64_t));
	uint64_t *b = dmapp_sheap_malloc(1);
	EXPECT(a && b && (unsigned char *)a >= heap && (unsigned char *)b < heap + job.sheap_seg.len);
	EXPECT(((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0 && (unsigned char *)b >= (unsigned char *)(a + 3));
	uint64_t words[3] = { 11, 22, 33 }, back[3] = { 0 };
	DOK(dmapp_put(a, hseg, 1, words, 3, DMAPP_QW));
	DOK(dmapp_get(back, a, hseg, 1, 3, DMAPP_QW));
	EXPECT(back[0] == 11 && back[2] == 33);
	EXPECT(peek_word(1, (unsigned char *)a - heap + 16) == 33 && peek_word(0, (unsigned char *)a - heap) != 11);
	size_t off_a = (unsigned char *)a - heap, off_b = (unsigned char *)b - heap;

	/* Reuse: a freed block is the first fit for the next request of its size. */
	dmapp_sheap_free(a);
	dmapp_sheap_free(NULL);
	uint64_t *c = dmapp_sheap_malloc(24);
	EXPECT(c == a);

	/* Realloc keeps the contents; NULL allocates; 0 frees; unknown pointers get NULL. */
	c[0] = 5, c[1] = 6, c[2] = 7;
	uint64_t *d = dmapp_sheap_realloc(c, 4096);
	EXPECT(d && d != c && d[0] == 5 && d[1] == 6 && d[2] == 7);
	uint64_t *e = dmapp_sheap_realloc(NULL, 8);
	EXPECT(e == c);
	EXPECT(dmapp_sheap_realloc(d, 0) == NULL);
	EXPECT(dmapp_sheap_realloc(words, 8) == NULL);

	/* Too large: NULL, and a failed realloc leaves the block as it was. */
	EXPECT(dmapp_sheap_malloc(job.sheap_seg.len) == NULL);
	e[0] = 99;
	EXPECT(dmapp_sheap_realloc(e, job.sheap_seg.len) == NULL);
	EXPECT(e[0] == 99);
	/* Everything freed, the whole heap (less its alignment) is one block again. */
	dmapp_sheap_free(b);
	dmapp_sheap_free(e);
	void *all = dmapp_sheap_malloc(job.sheap_seg.len);
	EXPECT(all == heap);
	dmapp_sheap_free(all);

	/* The same calls in a new job give the same offsets. */
	DOK(dmapp_finalize());
	EXPECT(dmapp_sheap_malloc(8) == NULL);
	start();
	a = dmapp_sheap_malloc(24);
	b = dmapp_sheap_malloc(1);
	EXPECT((size_t)((unsigned char *)a - heap) == off_a && (size_t)((unsigned char *)b - heap) == off_b);
}

/* Freeing what is not a block: ignored, said on stderr; the block is still there. */
static void sheap_bad_free(void)
{
	start();
	uint64_t *a = dmapp_sheap_malloc(32);
	uint64_t local = 0;
	dmapp_sheap_free(&local);
	dmapp_sheap_free(a + 1);
	EXPECT(dmapp_sheap_malloc(16) != a);
	dmapp_sheap_free(a);
	dmapp_sheap_free(a);
}

int main(int argc, char **argv)
{
	static const struct scenario scenarios[] = {
		{ "layout", layout },	{ "init", init },	 { "put_get", put_get }, { "strided", strided },
		{ "amo", amo },		{ "segments", segments }, { "errors", errors },	 { "attrs", attrs },
		{ "threads", threads }, { "log", log_sequence }, { "queue_first", queue_first },
		{ "job", job_shape },	{ "one_object", one_object }, { "busy", busy },
		{ "sheap", sheap },	{ "sheap_bad_free", sheap_bad_free },
	};
	return run_scenario("dmapp_check", scenarios, sizeof scenarios / sizeof scenarios[0], argc, argv);
}
