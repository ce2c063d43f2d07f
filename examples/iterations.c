/*
 * iterations: an iterative uGNI application, the shape A/B routing experiments run on. Two
 * communication domains of one process (inst_id 0 and 1) on two NICs; each iteration is one
 * exchange: side A PUTs --bytes bytes into B's receive buffer by RDMA, B checks every byte and
 * PUTs its own message back, and A checks it. Each iteration is bracketed by
 * aar_iteration_begin() and aar_iteration_end() (cabi/aar.h), declared weak, so the same binary
 * also runs without libaar.so; with it and AAR_AB set, successive iterations alternate routing
 * policies, and each iteration is one row of the rank's iteration record in AAR_OUTPUT_DIR.
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

/* libaar.so's iteration markers (cabi/aar.h): absent when the program runs without it. */
int aar_iteration_begin(void);
int aar_iteration_end(void);
int aar_iteration_label(const char *label);
#pragma weak aar_iteration_begin
#pragma weak aar_iteration_end
#pragma weak aar_iteration_label

/* The emulator's simulated clock (cabi/aar_emu.h): absent from a real libugni, 0 without a
 * simulated network. */
unsigned long long aar_emu_clock_ns(void);
#pragma weak aar_emu_clock_ns
static int simulated_clock;

struct side {
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
		fprintf(stderr, "iterations: %s failed: %s (%d)\n", what,
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

static int setup(struct side *s, uint32_t inst_id, uint64_t bytes)
{
	s->inst_id = inst_id;
	if (check(GNI_CdmCreate(inst_id, GNI_FIND_ALLOC_PTAG, 0x1235, 0, &s->cdm), "GNI_CdmCreate") ||
	    check(GNI_CdmAttach(s->cdm, 0, &s->addr, &s->nic), "GNI_CdmAttach") ||
	    check(GNI_CqCreate(s->nic, CQ_ENTRIES, 0, GNI_CQ_BLOCKING, NULL, NULL, &s->tx_cq), "GNI_CqCreate") ||
	    check(GNI_CqCreate(s->nic, CQ_ENTRIES, 0, GNI_CQ_BLOCKING, NULL, NULL, &s->rx_cq), "GNI_CqCreate") ||
	    check(GNI_EpCreate(s->nic, s->tx_cq, &s->ep), "GNI_EpCreate"))
		return -1;
	s->send_buf = aligned_alloc(64, bytes);
	s->recv_buf = aligned_alloc(64, bytes);
	if (!s->send_buf || !s->recv_buf) {
		fprintf(stderr, "iterations: out of memory for %llu-byte buffers\n", (unsigned long long)bytes);
		return -1;
	}
	memset(s->send_buf, 0, bytes);
	memset(s->recv_buf, 0, bytes);
	if (check(GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)s->send_buf, bytes, NULL, GNI_MEM_READWRITE,
				  (uint32_t)-1, &s->send_mh), "GNI_MemRegister") ||
	    check(GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)s->recv_buf, bytes, s->rx_cq, GNI_MEM_READWRITE,
				  (uint32_t)-1, &s->recv_mh), "GNI_MemRegister"))
		return -1;
	return 0;
}

static unsigned char pattern(uint64_t i, uint64_t iter, int from)
{
	return (unsigned char)(i * 131u + iter * 29u + (uint64_t)from * 101u);
}

/* One RDMA PUT from `from` into `to`, waited for at both ends, then checked byte by byte. */
static int put(struct side *from, struct side *to, uint64_t bytes, uint64_t iter, int who, uint16_t dlvr_mode)
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
	if (check(GNI_PostRdma(from->ep, &pd), "GNI_PostRdma"))
		return -1;
	gni_cq_entry_t ev;
	gni_post_descriptor_t *done = NULL;
	if (check(GNI_CqWaitEvent(from->tx_cq, WAIT_MS, &ev), "GNI_CqWaitEvent (local)") ||
	    check(GNI_GetCompleted(from->tx_cq, ev, &done), "GNI_GetCompleted"))
		return -1;
	if (done != &pd || !GNI_CQ_STATUS_OK(ev)) {
		fprintf(stderr, "iterations: wrong completion in iteration %llu\n", (unsigned long long)iter);
		return -1;
	}
	if (check(GNI_CqWaitEvent(to->rx_cq, WAIT_MS, &ev), "GNI_CqWaitEvent (remote)"))
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

static uint64_t now_ns(void)
{
	if (simulated_clock)
		return aar_emu_clock_ns();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: iterations [--iters N] [--bytes SIZE] [--label-every K] [--dlvr-mode M]\n"
			"  defaults: --iters 100 (0: until stopped) --bytes 64K --dlvr-mode 0; sizes accept K and M\n");
}

int main(int argc, char **argv)
{
	uint64_t iters = 100, bytes = 64 << 10, label_every = 0, mode = GNI_DLVMODE_PERFORMANCE;
	for (int i = 1; i < argc; i++) {
		uint64_t *target = NULL;
		if (!strcmp(argv[i], "--iters"))
			target = &iters;
		else if (!strcmp(argv[i], "--bytes"))
			target = &bytes;
		else if (!strcmp(argv[i], "--label-every"))
			target = &label_every;
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
	if (bytes == 0 || bytes > (1u << 30) || mode > 0xffff) {
		usage();
		return 2;
	}

	struct side a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	if (setup(&a, 0, bytes) || setup(&b, 1, bytes) || check(GNI_EpBind(a.ep, b.addr, b.inst_id), "GNI_EpBind") ||
	    check(GNI_EpBind(b.ep, a.addr, a.inst_id), "GNI_EpBind"))
		return 1;
	simulated_clock = aar_emu_clock_ns && aar_emu_clock_ns() != 0;

	uint64_t total_ns = 0, done = 0;
	for (uint64_t it = 0; iters == 0 || it < iters; it++) {
		if (label_every && it % label_every == 0 && aar_iteration_label)
			aar_iteration_label("congested");
		if (aar_iteration_begin)
			aar_iteration_begin();
		uint64_t t0 = now_ns();
		if (put(&a, &b, bytes, it, 0, (uint16_t)mode) || put(&b, &a, bytes, it, 1, (uint16_t)mode))
			return 1;
		total_ns += now_ns() - t0;
		if (aar_iteration_end)
			aar_iteration_end();
		done++;
	}
	printf("iterations: %llu iterations of 2 x %llu-byte RDMA PUTs, %.2f us per iteration (%s clock)%s\n",
	       (unsigned long long)done, (unsigned long long)bytes, done ? (double)total_ns / (double)done / 1e3 : 0.0,
	       simulated_clock ? "simulated" : "monotonic", aar_iteration_begin ? "" : ", without libaar.so");
	return 0;
}
