/*
 * fma_put_get: FMA PUTs and GETs of several sizes between neighbours in a ring, with the event
 * data of the endpoint set by GNI_EpSetEventData (as Cray's examples do with their -e option).
 *
 * Rank r PUTs SIZES blocks to rank r+1 (global and remote events), then GETs rank r+1's blocks
 * back (global events). Local events carry LOCAL_EVENT_ID_BASE + r * 100 + (r+1); the remote
 * events rank r+1 receives carry REMOTE_EVENT_ID_BASE + r * 100 + (r+1).
 */
#include "cray_util.h"

#define LOCAL_EVENT_ID_BASE  10000000
#define REMOTE_EVENT_ID_BASE 11000000
#define EVENT_ID_MULTIPLIER  100
#define BYTES (16 * 1024)

static const size_t sizes[] = { 8, 64, 1000, 4096, 8192 };
#define SIZES (sizeof sizes / sizeof sizes[0])

/* Where block k lies in a buffer. */
static size_t offset_of_block(size_t k)
{
	size_t off = 0;
	for (size_t i = 0; i < k; i++)
		off += sizes[i];
	return off;
}

int main(void)
{
	job_init("fma_put_get");
	int next = (job.rank + 1) % job.size, prev = (job.rank + job.size - 1) % job.size;
	uint32_t local_event = LOCAL_EVENT_ID_BASE + (uint32_t)(job.rank * EVENT_ID_MULTIPLIER + next);
	uint32_t remote_event = REMOTE_EVENT_ID_BASE + (uint32_t)(job.rank * EVENT_ID_MULTIPLIER + next);
	uint32_t expected_remote = REMOTE_EVENT_ID_BASE + (uint32_t)(prev * EVENT_ID_MULTIPLIER + job.rank);

	gni_cq_handle_t cq, rx_cq;
	CHECK(GNI_CqCreate(job.nic, SIZES, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	CHECK(GNI_CqCreate(job.nic, SIZES, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rx_cq));
	gni_mem_handle_t src_mdh, dst_mdh, get_mdh;
	unsigned char *src = register_buffer(BYTES, NULL, &src_mdh);
	unsigned char *dst = register_buffer(BYTES, rx_cq, &dst_mdh);
	unsigned char *got = register_buffer(BYTES, NULL, &get_mdh);
	fill_pattern(src, BYTES, job.rank, next);
	remote_buffer_t *dsts = exchange_buffer(dst, dst_mdh);
	remote_buffer_t *srcs = exchange_buffer(src, src_mdh);
	gni_ep_handle_t ep = bind_endpoint(cq, next, (uint32_t)next * CDM_ID_MULTIPLIER);
	CHECK(GNI_EpSetEventData(ep, local_event, remote_event));

	gni_post_descriptor_t pd[SIZES];
	memset(pd, 0, sizeof pd);
	for (size_t k = 0; k < SIZES; k++) {
		size_t off = offset_of_block(k);
		pd[k].type = GNI_POST_FMA_PUT;
		pd[k].cq_mode = GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
		pd[k].dlvr_mode = GNI_DLVMODE_PERFORMANCE;
		pd[k].local_addr = (uint64_t)(uintptr_t)(src + off);
		pd[k].local_mem_hndl = src_mdh;
		pd[k].remote_addr = dsts[next].addr + off;
		pd[k].remote_mem_hndl = dsts[next].mdh;
		pd[k].length = sizes[k];
		CHECK(GNI_PostFma(ep, &pd[k]));
		expect_local_event(cq, &pd[k], local_event, "FMA PUT");
	}
	for (size_t k = 0; k < SIZES; k++)
		expect_remote_event(rx_cq, expected_remote, "remote event of the left neighbour's FMA PUT");
	expect_pattern(dst, offset_of_block(SIZES), prev, job.rank, "FMA PUT");
	PMI_CHECK(PMI_Barrier());

	for (size_t k = 0; k < SIZES; k++) {
		size_t off = offset_of_block(k);
		memset(&pd[k], 0, sizeof pd[k]);
		pd[k].type = GNI_POST_FMA_GET;
		pd[k].cq_mode = GNI_CQMODE_GLOBAL_EVENT;
		pd[k].dlvr_mode = GNI_DLVMODE_PERFORMANCE;
		pd[k].local_addr = (uint64_t)(uintptr_t)(got + off);
		pd[k].local_mem_hndl = get_mdh;
		pd[k].remote_addr = srcs[next].addr + off;
		pd[k].remote_mem_hndl = srcs[next].mdh;
		pd[k].length = sizes[k];
		CHECK(GNI_PostFma(ep, &pd[k]));
		expect_local_event(cq, &pd[k], local_event, "FMA GET");
	}
	expect_pattern(got, offset_of_block(SIZES), next, (next + 1) % job.size, "FMA GET");

	PMI_CHECK(PMI_Barrier());
	CHECK(GNI_EpUnbind(ep));
	CHECK(GNI_EpDestroy(ep));
	CHECK(GNI_MemDeregister(job.nic, &src_mdh));
	CHECK(GNI_MemDeregister(job.nic, &dst_mdh));
	CHECK(GNI_MemDeregister(job.nic, &get_mdh));
	if (job.rank == 0)
		printf("fma_put_get: %d ranks, %zu FMA PUTs and GETs of 8..8192 bytes around the ring: data and CQ event data verified\n",
		       job.size, SIZES);
	free(dsts);
	free(srcs);
	job_finish();
	return 0;
}
