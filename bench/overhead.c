/*
 * overhead: what libaar.so adds to a uGNI post or a DMAPP PUT, measured in one process and one run.
 *
 * Run with LD_PRELOAD=libaar.so over the emulated libugni.so (which is also libdmapp.so). The same
 * call is issued two ways,
 * in alternating batches: through the interposed symbol (libaar.so, then the emulator) and
 * through the emulator's own symbol found with dlsym on its handle (the post without the shim).
 * Batches are paired (one of each, back to back, in alternating order) and the cost of the shim is
 * the median of the paired differences, which cancels the drift a 64 KiB copy's memory traffic
 * puts on both alike. Each path:
 *
 *   below   64 B FMA PUTs, below the cumulative threshold except every 65th (the common case)
 *   1k      1 KiB FMA PUTs: every 5th crosses the 4 KiB threshold (decision + counter read)
 *   read    64 KiB RDMA PUTs: every post crosses the threshold (one PAPI read each)
 *   smsg    8 B SMSG sends (the receiver drains in both paths alike)
 *   mix     a realistic size mix: 80% 8-512 B, 18% 1-16 KiB, 2% 64 KiB-1 MiB
 *   dput    64 B dmapp_put to PE 1, below the threshold except every 65th (DMAPP's common case:
 *           the routing attribute is already the one wanted, so no set call)
 *   dread   64 KiB dmapp_put: every call crosses the threshold (a decision, a PAPI read every 8th)
 *   coll    MPI_Allreduce of one long, whose PMPI_Allreduce (defined here, found by libaar.so
 *           at run time) copies it and returns: what the collective's wrapper adds (the
 *           whole-call timing of `steady` and of an A/B experiment with a `steady` arm, or a
 *           plain forward). Skipped when no preloaded library defines MPI_Allreduce.
 *
 * Posts are silent (no completion event), so the emulator's cheapest path is measured; DMAPP PUTs
 * are blocking (the emulator completes every form inside the call).
 *   overhead [--batches N] [--batch-posts N] [--runs R] [--only PATH]   (--help: the bounds)
 *
 * The whole measurement is repeated R times (default 5) in this process; each line reports the
 * median over the runs of each figure, and the smallest and largest added cost, because a
 * shared virtual machine has slow phases that last longer than a run.
 * Output: one line per path: median ns per post without and with the shim, the median paired
 * difference (added ns per post) and the median paired ratio.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dmapp.h"
#include "gni_pub.h"

typedef gni_return_t (*post_fn)(gni_ep_handle_t, gni_post_descriptor_t *);
typedef dmapp_return_t (*dput_fn)(void *, dmapp_seg_desc_t *, dmapp_pe_t, void *, uint64_t, dmapp_type_t);
typedef gni_return_t (*smsg_fn)(gni_ep_handle_t, void *, uint32_t, void *, uint32_t, uint32_t);

struct side {
	uint32_t inst, addr;
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	gni_cq_handle_t cq;
	gni_ep_handle_t ep;
	unsigned char *buf, *mbox;
	gni_mem_handle_t mh, mbox_mh;
	gni_smsg_attr_t attr;
};

#define MAX_BYTES (1u << 20)

static void die(const char *what, gni_return_t rc)
{
	fprintf(stderr, "overhead: %s failed (rc=%d)\n", what, (int)rc);
	exit(2);
}

static void setup(struct side *s, uint32_t inst)
{
	gni_return_t rc;
	unsigned int mbytes;
	s->inst = inst;
	if ((rc = GNI_CdmCreate(inst, GNI_FIND_ALLOC_PTAG, 1, 0, &s->cdm)) || (rc = GNI_CdmAttach(s->cdm, 0, &s->addr, &s->nic)) ||
	    (rc = GNI_CqCreate(s->nic, 4096, 0, GNI_CQ_NOBLOCK, NULL, NULL, &s->cq)) || (rc = GNI_EpCreate(s->nic, s->cq, &s->ep)))
		die("setup", rc);
	s->buf = aligned_alloc(64, MAX_BYTES);
	memset(s->buf, 1, MAX_BYTES);
	if ((rc = GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)s->buf, MAX_BYTES, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &s->mh)))
		die("GNI_MemRegister", rc);
	memset(&s->attr, 0, sizeof s->attr);
	s->attr.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
	s->attr.mbox_maxcredit = 64;
	s->attr.msg_maxsize = 256;
	if ((rc = GNI_SmsgBufferSizeNeeded(&s->attr, &mbytes)))
		die("GNI_SmsgBufferSizeNeeded", rc);
	s->mbox = aligned_alloc(64, (mbytes + 63) / 64 * 64);
	if ((rc = GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)s->mbox, mbytes, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &s->mbox_mh)))
		die("GNI_MemRegister", rc);
	s->attr.msg_buffer = s->mbox;
	s->attr.buff_size = mbytes;
	s->attr.mem_hndl = s->mbox_mh;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static struct side A, B;
static gni_post_descriptor_t pd;
static uint64_t mix_state = 88172645463325252ull;

static uint64_t mix_size(void)
{
	mix_state ^= mix_state << 13, mix_state ^= mix_state >> 7, mix_state ^= mix_state << 17;
	unsigned r = mix_state % 100;
	uint64_t v = mix_state >> 20;
	if (r < 80)
		return 8 + v % 505;
	if (r < 98)
		return (1024 + v % (15 * 1024)) & ~7ull;
	return (65536 + v % (MAX_BYTES - 65536)) & ~7ull; /* the BTE moves 4-byte multiples */
}

/* Like a runtime: FMA below 4 KiB, RDMA (BTE) from 4 KiB. */
static void post_batch(post_fn fma, post_fn rdma, const char *path, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t len = !strcmp(path, "below") ? 64 : !strcmp(path, "1k") ? 1024 : !strcmp(path, "read") ? 65536 : mix_size();
		int use_rdma = len >= 4096;
		pd.type = use_rdma ? GNI_POST_RDMA_PUT : GNI_POST_FMA_PUT;
		pd.length = len;
		pd.dlvr_mode = 0;
		gni_return_t rc = (use_rdma ? rdma : fma)(A.ep, &pd);
		if (rc)
			die("post", rc);
	}
}

static dmapp_jobinfo_t job;

static void dmapp_batch(dput_fn put, const char *path, int n)
{
	uint64_t nelems = !strcmp(path, "dput") ? 8 : 8192;
	for (int i = 0; i < n; i++) {
		dmapp_return_t rc = put(job.sheap_seg.addr, &job.sheap_seg, 1, A.buf, nelems, DMAPP_QW);
		if (rc)
			die("dmapp_put", (gni_return_t)rc);
	}
}

/* MPICH's handle ABI (int); libaar.so forwards any handle unchanged. */
typedef int (*allreduce_fn)(const void *, void *, int, int, int, int);
int MPI_Allreduce(const void *, void *, int, int, int, int);
#pragma weak MPI_Allreduce

int PMPI_Allreduce(const void *in, void *out, int count, int datatype, int op, int comm)
{
	(void)datatype;
	(void)op;
	(void)comm;
	memcpy(out, in, (size_t)count * sizeof(long));
	return 0;
}

static void coll_batch(allreduce_fn f, int n)
{
	for (long i = 0; i < n; i++) {
		long out = -1;
		if (f(&i, &out, 1, 0x4c000807 /* MPI_LONG */, 0x58000003 /* MPI_SUM */, 0x44000000 /* MPI_COMM_WORLD */) ||
		    out != i)
			die("MPI_Allreduce", 1);
	}
}

static void smsg_batch(smsg_fn f, int n)
{
	uint64_t payload = 42;
	for (int i = 0; i < n; i++) {
		gni_return_t rc = f(A.ep, &payload, sizeof payload, NULL, 0, (uint32_t)i);
		if (rc)
			die("smsg", rc);
		void *msg;
		if (GNI_SmsgGetNext(B.ep, &msg) == GNI_RC_SUCCESS)
			GNI_SmsgRelease(B.ep);
		gni_cq_entry_t ev;
		while (GNI_CqGetEvent(B.cq, &ev) == GNI_RC_SUCCESS)
			;
		while (GNI_CqGetEvent(A.cq, &ev) == GNI_RC_SUCCESS)
			;
	}
}

static const char *const paths[] = {"below", "1k", "read", "smsg", "mix", "dput", "dread", "coll"};
#define N_PATHS (sizeof paths / sizeof *paths)
#define USAGE "usage: overhead [--batches N] [--batch-posts N] [--runs R] [--only PATH]\n" \
	      "  N from 1 to 1000000 (defaults 200 and 2000), R from 1 to 64 (default 5),\n" \
	      "  PATH one of below, 1k, read, smsg, mix, dput, dread, coll (default: all)\n"

/* The value of option `name` (argv[i + 1]), a whole number from 1 to max; anything else is said
 * on stderr, with the usage, and the harness exits 2 (a value read as 0 or negative indexed
 * outside the arrays of the batches). */
static int whole(int argc, char **argv, int i, long max)
{
	char *end;
	long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
	if (i + 1 >= argc || end == argv[i + 1] || *end || v < 1 || v > max) {
		fprintf(stderr, "overhead: %s %s: give a whole number from 1 to %ld; nothing was measured\n" USAGE, argv[i],
			i + 1 < argc ? argv[i + 1] : "(no value)", max);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	int batches = 200, per_batch = 2000, runs = 5;
	const char *only = NULL;
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(USAGE, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--batches")) {
			batches = whole(argc, argv, i, 1000000);
		} else if (!strcmp(argv[i], "--batch-posts")) {
			per_batch = whole(argc, argv, i, 1000000);
		} else if (!strcmp(argv[i], "--runs")) {
			runs = whole(argc, argv, i, 64);
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[i + 1];
			unsigned p = 0;
			while (p < N_PATHS && strcmp(only, paths[p]))
				p++;
			if (p == N_PATHS) {
				fprintf(stderr, "overhead: --only %s: no such path; nothing was measured\n" USAGE, only);
				return 2;
			}
		} else {
			fprintf(stderr, "overhead: %s: unknown option or missing value; nothing was measured\n" USAGE, argv[i]);
			return 2;
		}
	}
	setup(&A, 0);
	setup(&B, 1);
	gni_return_t rc;
	if ((rc = GNI_EpBind(A.ep, B.addr, B.inst)) || (rc = GNI_EpBind(B.ep, A.addr, A.inst)) ||
	    (rc = GNI_SmsgInit(A.ep, &A.attr, &B.attr)) || (rc = GNI_SmsgInit(B.ep, &B.attr, &A.attr)))
		die("bind", rc);
	memset(&pd, 0, sizeof pd);
	pd.cq_mode = GNI_CQMODE_SILENT;
	pd.local_addr = (uint64_t)(uintptr_t)A.buf;
	pd.local_mem_hndl = A.mh;
	pd.remote_addr = (uint64_t)(uintptr_t)B.buf;
	pd.remote_mem_hndl = B.mh;

	dmapp_rma_attrs_t req = { .max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB,
				  .offload_threshold = DMAPP_OFFLOAD_THRESHOLD,
				  .put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
				  .get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
				  .max_concurrency = 1 },
			  actual;
	dmapp_return_t drc;
	if ((drc = dmapp_init(&req, &actual)) || (drc = dmapp_get_jobinfo(&job)))
		die("dmapp_init", (gni_return_t)drc);

	void *emu = dlopen("libugni.so", RTLD_NOW | RTLD_NOLOAD);
	if (!emu) {
		fprintf(stderr, "overhead: libugni.so is not loaded: %s\n", dlerror());
		return 2;
	}
	post_fn direct_fma = (post_fn)dlsym(emu, "GNI_PostFma"), direct_rdma = (post_fn)dlsym(emu, "GNI_PostRdma");
	smsg_fn direct_smsg = (smsg_fn)dlsym(emu, "GNI_SmsgSend");
	dput_fn direct_dput = (dput_fn)dlsym(emu, "dmapp_put");
	int shimmed = direct_fma != GNI_PostFma;
	printf("# overhead per post, %d runs of %d batches of %d posts per path, %s\n", runs, batches, per_batch,
	       shimmed ? "through the preloaded library vs the emulator directly" : "NO SHIM LOADED (both columns are the emulator)");
	printf("# %-6s %12s %12s %10s %8s %18s\n", "path", "direct_ns", "shim_ns", "added_ns", "ratio", "added_min..max");
	double *d = malloc(sizeof(double) * batches), *s = malloc(sizeof(double) * batches);
	double *diff = malloc(sizeof(double) * batches), *ratio = malloc(sizeof(double) * batches);
	double run_fig[4][64];
	for (unsigned p = 0; p < N_PATHS; p++) {
		const char *path = paths[p];
		if (only && strcmp(only, path))
			continue;
		if (!strcmp(path, "coll") && !MPI_Allreduce) {
			printf("  %-6s (no MPI_Allreduce: no preloaded library defines it)\n", path);
			continue;
		}
		for (int run = 0; run < runs; run++) {
		int n = per_batch;
		if (!strcmp(path, "read") || !strcmp(path, "mix") || !strcmp(path, "dread"))
			n = per_batch / 10 > 0 ? per_batch / 10 : 1;
		for (int b = 0; b < batches; b++) {
			double t0, t1;
			/* Alternate which goes first, so drift and cache effects fall on both alike. */
			for (int k = 0; k < 2; k++) {
				int through_shim = (b + k) % 2;
				t0 = now_ns();
				if (!strcmp(path, "coll"))
					coll_batch(through_shim ? MPI_Allreduce : PMPI_Allreduce, n);
				else if (!strcmp(path, "smsg"))
					smsg_batch(through_shim ? GNI_SmsgSend : direct_smsg, n);
				else if (path[0] == 'd')
					dmapp_batch(through_shim ? dmapp_put : direct_dput, path, n);
				else if (through_shim)
					post_batch(GNI_PostFma, GNI_PostRdma, path, n);
				else
					post_batch(direct_fma, direct_rdma, path, n);
				t1 = now_ns();
				(through_shim ? s : d)[b] = (t1 - t0) / n;
			}
		}
		for (int b = 0; b < batches; b++) {
			diff[b] = s[b] - d[b];
			ratio[b] = s[b] / d[b];
		}
		qsort(d, batches, sizeof *d, cmp);
		qsort(s, batches, sizeof *s, cmp);
		qsort(diff, batches, sizeof *diff, cmp);
		qsort(ratio, batches, sizeof *ratio, cmp);
		run_fig[0][run] = d[batches / 2];
		run_fig[1][run] = s[batches / 2];
		run_fig[2][run] = diff[batches / 2];
		run_fig[3][run] = ratio[batches / 2];
		}
		double lo = run_fig[2][0], hi = run_fig[2][0];
		for (int run = 0; run < runs; run++) {
			lo = run_fig[2][run] < lo ? run_fig[2][run] : lo;
			hi = run_fig[2][run] > hi ? run_fig[2][run] : hi;
		}
		for (int f = 0; f < 4; f++)
			qsort(run_fig[f], runs, sizeof(double), cmp);
		printf("  %-6s %12.1f %12.1f %10.1f %8.3f %8.1f..%-8.1f\n", path, run_fig[0][runs / 2], run_fig[1][runs / 2],
		       run_fig[2][runs / 2], run_fig[3][runs / 2], lo, hi);
	}
	return 0;
}
