/*
 * iterations: an iterative uGNI application, the shape A/B routing experiments run on. Two
 * communication domains of one process (inst_id 0 and 1) on two NICs; each iteration is one
 * exchange: side A PUTs --bytes bytes into B's receive buffer by RDMA, B checks every byte and
 * PUTs its own message back, and A checks it. Each iteration is bracketed by
 * aar_iteration_begin() and aar_iteration_end() (cabi/aar.h), looked up by name, so the same
 * binary also runs without libaar.so; with it and AAR_AB set, successive iterations alternate
 * routing policies, and each iteration is one row of the rank's iteration record in
 * AAR_OUTPUT_DIR. Build with -ldl before glibc 2.34.
 *
 *   iterations [--iters N] [--bytes SIZE] [--label-every K] [--dlvr-mode M]
 *
 * --iters iterations (default 100; 0: until the process is stopped); --bytes per PUT (default
 * 64K; K and M suffixes); --label-every K labels every K-th iteration (0, K, 2K, ...)
 * "congested" with aar_iteration_label(); --dlvr-mode is the routing mode written in every
 * descriptor (default 0, ADAPTIVE0). Prints one summary line on stdout; exit status 0 only if
 * every post succeeded and every byte arrived intact.
 *
 * Clock: iterations are timed with the emulator's simulated clock (aar_emu_clock_ns) when it runs
 * (AAR_EMU_SIM), with CLOCK_MONOTONIC otherwise, as libaar.so does for its iteration rows.
 *
 * The set-up of the two sides (domains, NICs, CQs, endpoints, registered buffers) is in
 * ugni_pair.h, beside this file.
 */
#define UGNI_PROGRAM "iterations"
#include "ugni_pair.h"

/* libaar.so's iteration markers (cabi/aar.h), looked up at start (ugni_lookup): NULL when the
 * program runs without libaar.so. Not weak declarations: in a program compiled without -fPIE
 * (-fno-pie, or a compiler or wrapper whose default that is) the linker sets a weak function that
 * no library it links defines to NULL for good, LD_PRELOAD or not, and no iteration would be marked. */
static int (*iteration_begin)(void), (*iteration_end)(void), (*iteration_label)(const char *);

static unsigned char pattern(uint64_t i, uint64_t iter, int from)
{
	return (unsigned char)(i * 131u + iter * 29u + (uint64_t)from * 101u);
}

/* One RDMA PUT from `from` into `to`, waited for at both ends, then checked byte by byte. */
static int put(struct ugni_side *from, struct ugni_side *to, uint64_t bytes, uint64_t iter, int who, uint16_t dlvr_mode)
{
	for (uint64_t i = 0; i < bytes; i++)
		from->send_buf[i] = pattern(i, iter, who);
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = GNI_POST_RDMA_PUT;
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
	pd.dlvr_mode = dlvr_mode;
	pd.local_addr = (uint64_t)(uintptr_t)from->send_buf;
	pd.local_mem_hndl = from->send_mh;
	pd.remote_addr = (uint64_t)(uintptr_t)to->recv_buf;
	pd.remote_mem_hndl = to->recv_mh;
	pd.length = bytes;
	pd.post_id = iter;
	if (ugni_check(GNI_PostRdma(from->ep, &pd), "GNI_PostRdma") || ugni_wait_local(from, &pd) ||
	    ugni_wait_remote(to, from))
		return -1;
	for (uint64_t i = 0; i < bytes; i++) {
		if (to->recv_buf[i] != pattern(i, iter, who)) {
			fprintf(stderr, "iterations: iteration %llu: byte %llu corrupted\n", (unsigned long long)iter,
				(unsigned long long)i);
			return -1;
		}
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: iterations [--iters N] [--bytes SIZE] [--label-every K] [--dlvr-mode M]\n"
			"  defaults: --iters 100 (0: until stopped) --bytes 64K --dlvr-mode 0; sizes accept K and M\n");
}

int main(int argc, char **argv)
{
	uint64_t iters = 100, bytes = 64 << 10, label_every = 0, mode = GNI_DLVMODE_PERFORMANCE;
	const struct ugni_option options[] = {
		{ .name = "--iters", .number = &iters, .unit = "iterations (0: until stopped)" },
		{ .name = "--bytes", .number = &bytes, .min = 1, .max = 1u << 30, .unit = "bytes" },
		{ .name = "--label-every", .number = &label_every, .unit = "iterations (0: none)" },
		{ .name = "--dlvr-mode", .number = &mode, .max = 0xffff, .hex = 1 },
	};
	int status = ugni_options(argc, argv, options, sizeof options / sizeof *options, usage);
	if (status >= 0)
		return status;

	struct ugni_side a, b;
	const struct ugni_pair_config config = {
		.inst_id = 0, .cookie = 0x1235, .cq_entries = 64, .tx_cq_mode = GNI_CQ_BLOCKING, .bytes = bytes,
	};
	if (ugni_pair_open(&a, &b, &config))
		return 1;
	int simulated = ugni_clock_simulated();
	iteration_begin = (int (*)(void))ugni_lookup("aar_iteration_begin");
	iteration_end = (int (*)(void))ugni_lookup("aar_iteration_end");
	iteration_label = (int (*)(const char *))ugni_lookup("aar_iteration_label");
	if (iteration_begin == NULL || iteration_end == NULL)
		iteration_begin = iteration_end = NULL;

	uint64_t total_ns = 0, done = 0;
	for (uint64_t it = 0; iters == 0 || it < iters; it++) {
		if (label_every && it % label_every == 0 && iteration_label)
			iteration_label("congested");
		if (iteration_begin)
			iteration_begin();
		uint64_t t0 = ugni_now_ns(simulated);
		if (put(&a, &b, bytes, it, 0, (uint16_t)mode) || put(&b, &a, bytes, it, 1, (uint16_t)mode))
			return 1;
		total_ns += ugni_now_ns(simulated) - t0;
		if (iteration_end)
			iteration_end();
		done++;
	}
	printf("iterations: %llu iterations of 2 x %llu-byte RDMA PUTs, %.2f us per iteration (%s clock)%s\n",
	       (unsigned long long)done, (unsigned long long)bytes, done ? (double)total_ns / (double)done / 1e3 : 0.0,
	       simulated ? "simulated" : "monotonic", iteration_begin ? "" : ", without libaar.so");
	return ugni_pair_close(&a, &b) ? 1 : 0;
}
