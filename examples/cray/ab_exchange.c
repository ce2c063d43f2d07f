/*
 * ab_exchange: the iterative exchange an A/B routing experiment runs on a Cray, between nodes.
 *
 *   ab_exchange [--iters N] [--bytes SIZE]
 *
 * Rank r pairs with rank r + size/2 (and that rank with r). Each iteration, bracketed by
 * aar_iteration_begin() and aar_iteration_end() (cabi/aar.h, looked up with dlsym: the same binary
 * runs without libaar.so), both partners RDMA PUT --bytes bytes into each other's receive buffer at
 * once and wait for the local completion of their PUT and the remote event of their partner's.
 * Every rank meets every other in a PMI_Barrier before each iteration (outside it: a PMI barrier
 * is far slower and noisier than the exchange), so that the job's iterations start together and
 * aar report's iteration time (the slowest rank's end - start) is the exchange's. With libaar.so
 * and AAR_AB set, successive iterations run under the policies of the experiment, and each is one
 * row of the rank's iteration record.
 *
 * The job must have an even number of ranks, and rank r and rank r + size/2 on different nodes
 * (so that the PUTs cross the network, where routing matters): one rank per node does it
 * (srun --nodes=2 --ntasks-per-node=1, aprun -n 2 -N 1), as does block placement of the same
 * number of ranks on each of an even number of nodes. The program checks both, by the partner's
 * NIC address, and ends the job otherwise.
 *
 * --iters iterations (default 100, at least 1); --bytes per PUT (default 64K; K and M suffixes,
 * up to 512M). Every byte is checked after each iteration, outside it (the partner's next PUT
 * comes after the next barrier, and into the other half of the receive buffer); so is every CQ
 * event. Rank 0 prints one result line.
 */
#include "cray_util.h"
#include "parse_size.h"

#include <dlfcn.h>

/* libaar.so's iteration markers (cabi/aar.h), looked up at start: NULL when the program runs
 * without libaar.so. Not weak declarations: in a program compiled without -fPIE (-fno-pie, or a
 * compiler or wrapper whose default that is) the linker sets a weak function that no library it links
 * defines to NULL for good, LD_PRELOAD or not, and no iteration would be marked. dlsym needs -ldl
 * before glibc 2.34. */
static int (*iteration_begin)(void), (*iteration_end)(void);

/* The function `name` of the program or of a library it loaded (libaar.so under LD_PRELOAD),
 * NULL if none has it. Through a union: ISO C has no conversion from dlsym's object pointer to a
 * function pointer (-Wpedantic warns of a cast); void (*)(void) converts to any function type. */
static void (*lookup(const char *name))(void)
{
	union {
		void *object;
		void (*function)(void);
	} found = { .object = dlsym(RTLD_DEFAULT, name) };
	return found.function;
}

#define USAGE "usage: ab_exchange [--iters N] [--bytes SIZE]"
#define MAX_BYTES (512u << 20)

static void usage(void)
{
	fprintf(stderr, USAGE "\n  defaults: --iters 100 --bytes 64K; sizes accept K and M (KiB, MiB)\n");
}

/* Byte i of what rank `from` PUTs to rank `to` in iteration `iter`: a stale buffer (the previous
 * iteration's data in the same half) differs from it. */
static unsigned char iteration_pattern(int from, int to, uint64_t iter, size_t i)
{
	return pattern(from, to, i) ^ (unsigned char)(iter * 101u + 1u);
}

int main(int argc, char **argv)
{
	uint64_t iters = 100, bytes = 64 << 10;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		}
		int is_iters = !strcmp(argv[i], "--iters");
		if ((!is_iters && strcmp(argv[i], "--bytes")) || i + 1 >= argc) {
			usage();
			return 2;
		}
		const char *name = argv[i++];
		uint64_t *value = is_iters ? &iters : &bytes;
		if (parse_size(argv[i], value) || *value == 0 || (!is_iters && *value > MAX_BYTES)) {
			fprintf(stderr, "ab_exchange: %s %s refused: it takes %s, decimal or 0x hex; nothing was run\n", name,
				argv[i], is_iters ? "a count of 1 or more (K or M: times 1024 or 1048576)" : "1 byte to 512M (K or M: KiB or MiB)");
			usage();
			return 2;
		}
	}

	iteration_begin = (int (*)(void))lookup("aar_iteration_begin");
	iteration_end = (int (*)(void))lookup("aar_iteration_end");
	if ((iteration_begin == NULL) != (iteration_end == NULL))
		iteration_begin = iteration_end = NULL;

	job_init("ab_exchange");
	if (job.size < 2 || job.size % 2 != 0)
		fail("the job has %d ranks: ab_exchange pairs rank r with rank r + size/2, it needs an even number",
		     job.size);
	int peer = (job.rank + job.size / 2) % job.size;
	uint32_t peer_inst = (uint32_t)peer * CDM_ID_MULTIPLIER;
	if (job.addresses[peer] == job.local_address)
		fail("my partner, rank %d, is on my node (NIC address 0x%x): its exchange would not cross the network; "
		     "place rank r and rank r + %d on different nodes (one rank per node: srun --ntasks-per-node=1, aprun -N 1)",
		     peer, job.local_address, job.size / 2);

	gni_cq_handle_t cq, rx_cq;
	CHECK(GNI_CqCreate(job.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	CHECK(GNI_CqCreate(job.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rx_cq));
	/* dst holds two halves, page-aligned: iteration k lands in half k % 2. The partner's PUTs
	 * into it raise events on rx_cq. */
	size_t stride = ((size_t)bytes + 4095) & ~(size_t)4095;
	gni_mem_handle_t src_mdh, dst_mdh;
	unsigned char *src = register_buffer(bytes, NULL, &src_mdh);
	unsigned char *dst = register_buffer(2 * stride, rx_cq, &dst_mdh);
	remote_buffer_t *dsts = exchange_buffer(dst, dst_mdh);
	gni_ep_handle_t ep = bind_endpoint(cq, peer, peer_inst);

	gni_post_descriptor_t put;
	double seconds = 0;
	char what[64];
	for (uint64_t it = 0; it < iters; it++) {
		for (size_t i = 0; i < bytes; i++)
			src[i] = iteration_pattern(job.rank, peer, it, i);
		size_t half = (size_t)(it % 2) * stride;
		memset(&put, 0, sizeof put);
		put.type = GNI_POST_RDMA_PUT;
		put.cq_mode = GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
		put.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
		put.local_addr = (uint64_t)(uintptr_t)src;
		put.local_mem_hndl = src_mdh;
		put.remote_addr = dsts[peer].addr + half;
		put.remote_mem_hndl = dsts[peer].mdh;
		put.length = bytes;
		put.post_id = it;
		snprintf(what, sizeof what, "iteration %llu: RDMA PUT", (unsigned long long)it);

		/* Every rank starts the iteration together; the barrier stays outside it: a PMI barrier
		 * goes through the launcher's daemons, far slower and noisier than the exchange timed. */
		PMI_CHECK(PMI_Barrier());
		if (iteration_begin)
			iteration_begin();
		double t0 = now_seconds();
		CHECK(GNI_PostRdma(ep, &put));
		expect_local_event(cq, &put, peer_inst, what);
		expect_remote_event(rx_cq, peer_inst, what);
		seconds += now_seconds() - t0;
		if (iteration_end)
			iteration_end();

		for (size_t i = 0; i < bytes; i++)
			if (dst[half + i] != iteration_pattern(peer, job.rank, it, i))
				fail("%s: byte %zu is %u, expected %u (data from rank %d)", what, i, dst[half + i],
				     iteration_pattern(peer, job.rank, it, i), peer);
	}

	PMI_CHECK(PMI_Barrier());
	CHECK(GNI_EpUnbind(ep));
	CHECK(GNI_EpDestroy(ep));
	CHECK(GNI_MemDeregister(job.nic, &src_mdh));
	CHECK(GNI_MemDeregister(job.nic, &dst_mdh));
	if (job.rank == 0)
		printf("ab_exchange: %d ranks, %d pair%s across nodes, %llu iterations of RDMA PUTs of %llu bytes each way, "
		       "%.2f us per iteration: data and CQ events verified%s\n",
		       job.size, job.size / 2, job.size / 2 == 1 ? "" : "s", (unsigned long long)iters, (unsigned long long)bytes,
		       seconds / (double)iters * 1e6, iteration_begin ? "" : ", without libaar.so");
	free(dsts);
	free(src);
	free(dst);
	job_finish();
	return 0;
}
