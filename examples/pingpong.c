/*
 * pingpong: a uGNI ping-pong between two endpoints of one process, over a message-size sweep.
 *
 * Two communication domains (inst_id 0 and 1) are attached to two NICs; each side registers a
 * send and a receive buffer, the receive buffer with a destination CQ. For every size, side A
 * PUTs the message into B's receive buffer, B waits for the remote event, checks every byte and
 * PUTs its answer back, and A does the same. Like real runtimes, messages below --rdma-min go by
 * FMA and larger ones by RDMA (BTE). Each post asks for a local completion, which is taken from
 * the CQ and matched to its descriptor with GNI_GetCompleted.
 *
 *   pingpong [--min B] [--max B] [--iters N] [--rdma-min B] [--dlvr-mode M]
 *
 * Sizes go from --min (default 16) to --max (default 16 MiB) in powers of 2; --iters round trips
 * per size (default 10); --dlvr-mode is the routing mode put in every descriptor (default 0,
 * GNI_DLVMODE_PERFORMANCE = ADAPTIVE0; decimal or 0x hex). Exit status 0 only if every post
 * succeeded and every byte arrived intact.
 *
 * Clock: round trips are timed with the emulator's simulated clock (aar_emu_clock_ns, cabi/aar_emu.h)
 * when the program runs over the emulated libugni.so on a simulated network (AAR_EMU_SIM), and with
 * clock_gettime(CLOCK_MONOTONIC) otherwise; the header line says which. The emulator's function is
 * looked up by name (ugni_pair.h), so that a libugni without it (a real one) gives CLOCK_MONOTONIC,
 * whether the program was built with -fPIE or without.
 *
 * The set-up of the two sides (domains, NICs, CQs, endpoints, registered buffers) and the waits
 * for completions are in ugni_pair.h, beside this file.
 */
#define UGNI_PROGRAM "pingpong"
#include "ugni_pair.h"

static unsigned char pattern(uint64_t i, uint64_t size, int iter, int from)
{
	return (unsigned char)(i * 131u + size * 7u + (uint64_t)iter * 29u + (uint64_t)from * 101u);
}

static void fill(unsigned char *buf, uint64_t size, int iter, int from)
{
	for (uint64_t i = 0; i < size; i++)
		buf[i] = pattern(i, size, iter, from);
}

static int verify(const unsigned char *buf, uint64_t size, int iter, int from)
{
	for (uint64_t i = 0; i < size; i++) {
		if (buf[i] != pattern(i, size, iter, from)) {
			fprintf(stderr, "pingpong: size %llu iteration %d: byte %llu is 0x%02x, expected 0x%02x\n",
				(unsigned long long)size, iter, (unsigned long long)i, buf[i],
				pattern(i, size, iter, from));
			return -1;
		}
	}
	return 0;
}

/* One PUT of `size` bytes from `from`'s send buffer into `to`'s receive buffer, waited for at both
 * ends: the local completion (matched to its descriptor) and the remote event at the target. */
static int put_and_wait(struct ugni_side *from, struct ugni_side *to, uint64_t size, int use_rdma, uint16_t dlvr_mode)
{
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = use_rdma ? GNI_POST_RDMA_PUT : GNI_POST_FMA_PUT;
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
	pd.dlvr_mode = dlvr_mode;
	pd.local_addr = (uint64_t)(uintptr_t)from->send_buf;
	pd.local_mem_hndl = from->send_mh;
	pd.remote_addr = (uint64_t)(uintptr_t)to->recv_buf;
	pd.remote_mem_hndl = to->recv_mh;
	pd.length = size;
	pd.post_id = size;

	gni_return_t rc = use_rdma ? GNI_PostRdma(from->ep, &pd) : GNI_PostFma(from->ep, &pd);
	if (ugni_check(rc, use_rdma ? "GNI_PostRdma" : "GNI_PostFma"))
		return -1;
	return ugni_wait_local(from, &pd) || ugni_wait_remote(to, from) ? -1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: pingpong [--min B] [--max B] [--iters N] [--rdma-min B] [--dlvr-mode M]\n"
			"  sizes accept K and M suffixes; defaults: --min 16 --max 16M --iters 10 --rdma-min 4K --dlvr-mode 0\n");
}

int main(int argc, char **argv)
{
	uint64_t min = 16, max = 16u << 20, rdma_min = 4096, iters = 10, mode = GNI_DLVMODE_PERFORMANCE;
	const struct ugni_option options[] = {
		{ .name = "--min", .number = &min, .min = 1, .unit = "bytes", .not_above = "--max" },
		{ .name = "--max", .number = &max, .min = 1, .unit = "bytes" },
		{ .name = "--iters", .number = &iters, .min = 1, .max = 1000000, .unit = "round trips" },
		{ .name = "--rdma-min", .number = &rdma_min, .unit = "bytes" },
		{ .name = "--dlvr-mode", .number = &mode, .max = 0xffff, .hex = 1 },
	};
	int status = ugni_options(argc, argv, options, sizeof options / sizeof *options, usage);
	if (status >= 0)
		return status;

	struct ugni_side a, b;
	const struct ugni_pair_config config = {
		.inst_id = 0, .cookie = 0x1234, .cq_entries = 64, .tx_cq_mode = GNI_CQ_BLOCKING, .bytes = max,
	};
	if (ugni_pair_open(&a, &b, &config))
		return 1;

	int simulated = ugni_clock_simulated();
	printf("# pingpong over uGNI: NIC 0x%x (inst 0) <-> NIC 0x%x (inst 1), dlvr_mode 0x%llx, %llu iterations per size, clock %s\n",
	       a.addr, b.addr, (unsigned long long)mode, (unsigned long long)iters,
	       simulated ? "simulated (aar_emu_clock_ns)" : "CLOCK_MONOTONIC");
	printf("# %10s %6s %14s %14s\n", "bytes", "method", "round_trip_us", "MB_per_s");

	unsigned long long messages = 0, bytes = 0;
	for (uint64_t size = min; size <= max; size *= 2) {
		int use_rdma = size >= rdma_min;
		double t_total = 0;
		for (int it = 0; it < (int)iters; it++) {
			fill(a.send_buf, size, it, 0);
			fill(b.send_buf, size, it, 1);
			/* A to B, then B to A: only the PUTs are timed, not the checks. */
			for (int from = 0; from < 2; from++) {
				struct ugni_side *src = from ? &b : &a, *dst = from ? &a : &b;
				uint64_t t0 = ugni_now_ns(simulated);
				if (put_and_wait(src, dst, size, use_rdma, (uint16_t)mode))
					return 1;
				t_total += (double)(ugni_now_ns(simulated) - t0) / 1e3;
				if (verify(dst->recv_buf, size, it, from))
					return 1;
			}
			messages += 2;
			bytes += 2 * size;
		}
		double rt = t_total / (double)iters;
		printf("  %10llu %6s %14.2f %14.1f\n", (unsigned long long)size, use_rdma ? "RDMA" : "FMA",
		       rt, rt > 0 ? 2.0 * (double)size / rt : 0.0);
		if (size > UINT64_MAX / 2)
			break;
	}
	printf("pingpong: OK, %llu messages, %llu bytes, all verified\n", messages, bytes);
	return ugni_pair_close(&a, &b) ? 1 : 0;
}
