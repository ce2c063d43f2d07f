/*
 * shmem_ring: one-sided DMAPP traffic the way Cray SHMEM, Coarray Fortran and UPC produce it: a
 * block of data travels around the ring of PEs by PUTs and GETs, over a message-size sweep, and
 * every byte is checked on the way.
 *
 * For every size, PE 0 PUTs a block from its symmetric heap into PE 1's, GETs it back from there
 * into a second buffer, checks it, PUTs that copy on to PE 2, and so on around the ring of the
 * other PEs; a non-fetching atomic add on each PE it visits counts the visits, which a fetching
 * add reads back at the end. Small blocks use the blocking calls, blocks
 * from --nbi-min on the implicit non-blocking ones completed by dmapp_gsync_wait, as SHMEM
 * runtimes do. Nothing here sets a routing attribute: the PEs run with DMAPP's default routing,
 * and libaar.so, when preloaded, chooses per message.
 *
 *   shmem_ring [--min B] [--max B] [--iters N] [--nbi-min B]
 *
 * Sizes go from --min (default 8) to --max (default 1 MiB) in powers of 2, with --iters laps per
 * size (default 5). The data is 8-byte words (DMAPP_QW), so sizes are multiples of 8. Exit status
 * 0 only if every call succeeded and every byte and every counter arrived as sent.
 *
 * Over the emulator the PEs are virtual PEs of this one process (AAR_EMU_DMAPP_PES, default 4);
 * on a Cray, run it with one PE per rank of the job (every PE walks the same ring from itself).
 * The clock is the emulator's simulated one on a simulated network (AAR_EMU_SIM), CLOCK_MONOTONIC
 * otherwise, as in the uGNI examples, whose command-line reading and clock (ugni_pair.h, beside
 * this file) it shares.
 */
#define UGNI_PROGRAM "shmem_ring"
#include "ugni_pair.h"
#include "dmapp.h"

static int check(dmapp_return_t rc, const char *what)
{
	if (rc != DMAPP_RC_SUCCESS) {
		fprintf(stderr, UGNI_PROGRAM ": %s failed: DMAPP_RC %d\n", what, (int)rc);
		return -1;
	}
	return 0;
}

static uint64_t word(uint64_t i, uint64_t size, uint64_t lap)
{
	return i * 0x9e3779b97f4a7c15ull ^ size << 20 ^ lap;
}

static void usage(void)
{
	fprintf(stderr, "usage: shmem_ring [--min B] [--max B] [--iters N] [--nbi-min B]\n");
}

int main(int argc, char **argv)
{
	uint64_t min = 8, max = 1 << 20, iters = 5, nbi_min = 4096;
	const struct ugni_option options[] = {
		{ .name = "--min", .number = &min, .min = 8, .multiple = 8, .unit = "bytes", .not_above = "--max" },
		{ .name = "--max", .number = &max, .min = 8, .multiple = 8, .unit = "bytes" },
		{ .name = "--iters", .number = &iters, .min = 1, .max = 100000, .unit = "laps" },
		{ .name = "--nbi-min", .number = &nbi_min, .unit = "bytes" },
	};
	int status = ugni_options(argc, argv, options, sizeof options / sizeof *options, usage);
	if (status >= 0)
		return status;

	dmapp_rma_attrs_t requested = {
		.max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB,
		.offload_threshold = DMAPP_OFFLOAD_THRESHOLD,
		.put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
		.get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
		.max_concurrency = 1,
	};
	dmapp_rma_attrs_t actual;
	dmapp_jobinfo_t job;
	if (check(dmapp_init(&requested, &actual), "dmapp_init") || check(dmapp_get_jobinfo(&job), "dmapp_get_jobinfo"))
		return 1;
	/* The symmetric heap holds the block being sent, the copy fetched back, and the lap counter:
	 * the same offsets on every PE. */
	uint64_t *send = job.sheap_seg.addr, *back = send + max / 8, *laps = back + max / 8;
	dmapp_seg_desc_t *seg = &job.sheap_seg;
	/* 3 x --max + 8 bytes of heap, compared without computing it: a --max near 2^64 wrapped it to
	 * a few bytes, and the ring wrote past the heap. */
	if (job.npes < 2 || job.sheap_seg.len < 8 || max > (job.sheap_seg.len - 8) / 3) {
		if (job.npes < 2)
			fprintf(stderr, UGNI_PROGRAM ": needs 2 PEs or more, has %d: run it with more (AAR_EMU_DMAPP_PES "
					     "over the emulator); nothing was run\n",
				job.npes);
		else
			fprintf(stderr,
				UGNI_PROGRAM ": --max %llu needs 3 x --max + 8 bytes of symmetric heap, there are %zu: give a "
					     "smaller --max, or a larger heap (AAR_EMU_DMAPP_SHEAP over the emulator, "
					     "XT_SYMMETRIC_HEAP_SIZE on a Cray); nothing was run\n",
				(unsigned long long)max, job.sheap_seg.len);
		dmapp_finalize();
		return 1;
	}
	const int simulated = ugni_clock_simulated();
	printf("# shmem_ring: PE %d of %d, %llu laps per size, clock %s\n", job.pe, job.npes,
	       (unsigned long long)iters, simulated ? "simulated" : "monotonic");
	printf("%10s %8s %14s %12s\n", "bytes", "hops", "us per hop", "MB/s");

	long bad = 0, failures = 0;
	for (uint64_t size = min; size <= max && !failures; size *= 2) {
		const uint64_t n = size / 8;
		const int nbi = size >= nbi_min;
		uint64_t hops = 0, t0 = ugni_now_ns(simulated);
		for (uint64_t lap = 0; lap < iters && !failures; lap++) {
			for (uint64_t i = 0; i < n; i++)
				send[i] = word(i, size, lap);
			for (int k = 1; k < job.npes && !failures; k++) {
				/* The k-th PE after this one on the ring. */
				const dmapp_pe_t pe = (job.pe + k) % job.npes;
				if (nbi) {
					failures += check(dmapp_put_nbi(send, seg, pe, send, n, DMAPP_QW), "dmapp_put_nbi") ||
						    check(dmapp_gsync_wait(), "dmapp_gsync_wait") ||
						    check(dmapp_get_nbi(back, send, seg, pe, n, DMAPP_QW), "dmapp_get_nbi") ||
						    check(dmapp_gsync_wait(), "dmapp_gsync_wait");
				} else {
					failures += check(dmapp_put(send, seg, pe, send, n, DMAPP_QW), "dmapp_put") ||
						    check(dmapp_get(back, send, seg, pe, n, DMAPP_QW), "dmapp_get");
				}
				failures += check(dmapp_aadd_qw(laps, seg, pe, 1), "dmapp_aadd_qw");
				for (uint64_t i = 0; i < n; i++)
					bad += back[i] != word(i, size, lap);
				memcpy(send, back, size);
				hops++;
			}
		}
		const double us = (double)(ugni_now_ns(simulated) - t0) / 1e3 / (double)(hops ? hops : 1);
		printf("%10llu %8llu %14.3f %12.1f\n", (unsigned long long)size, (unsigned long long)hops, us,
		       us > 0 ? 2.0 * (double)size / us : 0.0);
	}

	/* Every other PE counted one visit per lap and size: read the counters with a fetching add of 0. */
	uint64_t sizes = 0;
	for (uint64_t size = min; size <= max; size *= 2)
		sizes++;
	for (int pe = 0; pe < job.npes && !failures; pe++) {
		int64_t count = -1;
		failures += check(dmapp_afadd_qw(&count, laps, seg, pe, 0), "dmapp_afadd_qw");
		const int64_t visits = pe == job.pe ? 0 : (int64_t)(iters * sizes);
		if (count != visits) {
			fprintf(stderr, UGNI_PROGRAM ": PE %d counted %lld visits, not %lld\n", pe, (long long)count,
				(long long)visits);
			bad++;
		}
	}
	failures += check(dmapp_finalize(), "dmapp_finalize");
	printf("shmem_ring: %s, %ld bad words or counters, %ld failed calls\n",
	       bad || failures ? "FAILED" : "all data verified", bad, failures);
	return bad || failures ? 1 : 0;
}
