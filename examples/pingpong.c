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
 * declared weak, so the same binary links and runs against a real libugni on a Cray.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gni_pub.h"

#define CQ_ENTRIES 64
#define WAIT_MS 10000

/* The emulator's simulated clock (cabi/aar_emu.h): absent from a real libugni, 0 without a
 * simulated network. */
unsigned long long aar_emu_clock_ns(void);
#pragma weak aar_emu_clock_ns
static int simulated_clock;

struct side {
	const char *name;
	uint32_t inst_id, addr;
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	gni_cq_handle_t tx_cq, rx_cq;
	gni_ep_handle_t ep;
	unsigned char *send_buf, *recv_buf;
	gni_mem_handle_t send_mh, recv_mh;
};

static int check(gni_return_t rc, const char *what)
{
	if (rc != GNI_RC_SUCCESS) {
		fprintf(stderr, "pingpong: %s failed: %s (%d)\n", what,
			(unsigned)rc <= GNI_RC_ERROR_NOMEM ? gni_err_str[rc] : "?", (int)rc);
		return -1;
	}
	return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int setup(struct side *s, uint32_t inst_id, uint64_t max)
{
	s->inst_id = inst_id;
	if (check(GNI_CdmCreate(inst_id, GNI_FIND_ALLOC_PTAG, 0x1234, 0, &s->cdm), "GNI_CdmCreate") ||
	    check(GNI_CdmAttach(s->cdm, 0, &s->addr, &s->nic), "GNI_CdmAttach") ||
	    check(GNI_CqCreate(s->nic, CQ_ENTRIES, 0, GNI_CQ_BLOCKING, NULL, NULL, &s->tx_cq), "GNI_CqCreate") ||
	    check(GNI_CqCreate(s->nic, CQ_ENTRIES, 0, GNI_CQ_BLOCKING, NULL, NULL, &s->rx_cq), "GNI_CqCreate") ||
	    check(GNI_EpCreate(s->nic, s->tx_cq, &s->ep), "GNI_EpCreate"))
		return -1;
	s->send_buf = aligned_alloc(64, max);
	s->recv_buf = aligned_alloc(64, max);
	if (!s->send_buf || !s->recv_buf) {
		fprintf(stderr, "pingpong: out of memory for %llu-byte buffers\n", (unsigned long long)max);
		return -1;
	}
	memset(s->send_buf, 0, max);
	memset(s->recv_buf, 0, max);
	if (check(GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)s->send_buf, max, NULL,
				  GNI_MEM_READWRITE, (uint32_t)-1, &s->send_mh), "GNI_MemRegister") ||
	    check(GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)s->recv_buf, max, s->rx_cq,
				  GNI_MEM_READWRITE, (uint32_t)-1, &s->recv_mh), "GNI_MemRegister"))
		return -1;
	return 0;
}

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
static int put_and_wait(struct side *from, struct side *to, uint64_t size, int use_rdma, uint16_t dlvr_mode)
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
	if (check(rc, use_rdma ? "GNI_PostRdma" : "GNI_PostFma"))
		return -1;

	gni_cq_entry_t ev;
	gni_post_descriptor_t *done = NULL;
	if (check(GNI_CqWaitEvent(from->tx_cq, WAIT_MS, &ev), "GNI_CqWaitEvent (local)") ||
	    check(GNI_GetCompleted(from->tx_cq, ev, &done), "GNI_GetCompleted"))
		return -1;
	if (done != &pd || GNI_CQ_GET_TYPE(ev) != GNI_CQ_EVENT_TYPE_POST || !GNI_CQ_STATUS_OK(ev)) {
		fprintf(stderr, "pingpong: wrong completion for a %llu-byte put\n", (unsigned long long)size);
		return -1;
	}
	if (check(GNI_CqWaitEvent(to->rx_cq, WAIT_MS, &ev), "GNI_CqWaitEvent (remote)"))
		return -1;
	if (GNI_CQ_GET_INST_ID(ev) != from->inst_id) {
		fprintf(stderr, "pingpong: remote event from inst_id %llu, expected %u\n",
			(unsigned long long)GNI_CQ_GET_INST_ID(ev), from->inst_id);
		return -1;
	}
	return 0;
}

static double now_us(void)
{
	if (simulated_clock)
		return (double)aar_emu_clock_ns() / 1e3;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void usage(void)
{
	fprintf(stderr, "usage: pingpong [--min B] [--max B] [--iters N] [--rdma-min B] [--dlvr-mode M]\n"
			"  sizes accept K and M suffixes; defaults: --min 16 --max 16M --iters 10 --rdma-min 4K --dlvr-mode 0\n");
}

int main(int argc, char **argv)
{
	uint64_t min = 16, max = 16u << 20, rdma_min = 4096, iters = 10, mode = GNI_DLVMODE_PERFORMANCE;
	for (int i = 1; i < argc; i++) {
		uint64_t *target = NULL;
		if (!strcmp(argv[i], "--min"))
			target = &min;
		else if (!strcmp(argv[i], "--max"))
			target = &max;
		else if (!strcmp(argv[i], "--iters"))
			target = &iters;
		else if (!strcmp(argv[i], "--rdma-min"))
			target = &rdma_min;
		else if (!strcmp(argv[i], "--dlvr-mode"))
			target = &mode;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		}
		if (!target || i + 1 >= argc || parse_size(argv[++i], target)) {
			usage();
			return 2;
		}
	}
	if (min == 0 || max < min || iters == 0 || iters > 1000000 || mode > 0xffff) {
		usage();
		return 2;
	}

	struct side a = { .name = "A" }, b = { .name = "B" };
	if (setup(&a, 0, max) || setup(&b, 1, max) ||
	    check(GNI_EpBind(a.ep, b.addr, b.inst_id), "GNI_EpBind") ||
	    check(GNI_EpBind(b.ep, a.addr, a.inst_id), "GNI_EpBind"))
		return 1;

	simulated_clock = aar_emu_clock_ns && aar_emu_clock_ns() != 0;
	printf("# pingpong over uGNI: NIC 0x%x (inst 0) <-> NIC 0x%x (inst 1), dlvr_mode 0x%llx, %llu iterations per size, clock %s\n",
	       a.addr, b.addr, (unsigned long long)mode, (unsigned long long)iters,
	       simulated_clock ? "simulated (aar_emu_clock_ns)" : "CLOCK_MONOTONIC");
	printf("# %10s %6s %14s %14s\n", "bytes", "method", "round_trip_us", "MB_per_s");

	unsigned long long messages = 0, bytes = 0;
	for (uint64_t size = min; size <= max; size *= 2) {
		int use_rdma = size >= rdma_min;
		double t_total = 0;
		for (int it = 0; it < (int)iters; it++) {
			fill(a.send_buf, size, it, 0);
			fill(b.send_buf, size, it, 1);
			double t0 = now_us();
			if (put_and_wait(&a, &b, size, use_rdma, (uint16_t)mode))
				return 1;
			double t1 = now_us();
			if (verify(b.recv_buf, size, it, 0))
				return 1;
			double t2 = now_us();
			if (put_and_wait(&b, &a, size, use_rdma, (uint16_t)mode))
				return 1;
			double t3 = now_us();
			if (verify(a.recv_buf, size, it, 1))
				return 1;
			t_total += (t1 - t0) + (t3 - t2);
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

	GNI_MemDeregister(a.nic, &a.send_mh);
	GNI_MemDeregister(a.nic, &a.recv_mh);
	GNI_MemDeregister(b.nic, &b.send_mh);
	GNI_MemDeregister(b.nic, &b.recv_mh);
	GNI_EpDestroy(a.ep);
	GNI_EpDestroy(b.ep);
	GNI_CdmDestroy(a.cdm);
	GNI_CdmDestroy(b.cdm);
	free(a.send_buf);
	free(a.recv_buf);
	free(b.send_buf);
	free(b.recv_buf);
	return 0;
}
