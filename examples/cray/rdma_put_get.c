/*
 * rdma_put_get: RDMA (BTE) PUT, then GET, between neighbours in a ring.
 *
 * Rank r PUTs a block to rank r+1 with a local and a remote event, then GETs rank r+1's block
 * back with a global and a remote event. Each rank checks the data it received, its local events
 * (the bound remote_id, and GNI_GetCompleted names the descriptor) and the remote events of its
 * left neighbour's posts (that rank's inst_id).
 */
#include "cray_util.h"

#define BYTES (256 * 1024)

int main(void)
{
	job_init("rdma_put_get");
	int next = (job.rank + 1) % job.size, prev = (job.rank + job.size - 1) % job.size;
	uint32_t next_inst = (uint32_t)next * CDM_ID_MULTIPLIER, prev_inst = (uint32_t)prev * CDM_ID_MULTIPLIER;

	gni_cq_handle_t cq, rx_cq;
	CHECK(GNI_CqCreate(job.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	CHECK(GNI_CqCreate(job.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rx_cq));
	/* src is what the others PUT from and GET; both remote posts into it or from it raise events
	 * on rx_cq. */
	gni_mem_handle_t src_mdh, dst_mdh, get_mdh;
	unsigned char *src = register_buffer(BYTES, rx_cq, &src_mdh);
	unsigned char *dst = register_buffer(BYTES, rx_cq, &dst_mdh);
	unsigned char *got = register_buffer(BYTES, NULL, &get_mdh);
	fill_pattern(src, BYTES, job.rank, next);
	remote_buffer_t *dsts = exchange_buffer(dst, dst_mdh);
	remote_buffer_t *srcs = exchange_buffer(src, src_mdh);
	gni_ep_handle_t ep = bind_endpoint(cq, next, next_inst);

	gni_post_descriptor_t put;
	memset(&put, 0, sizeof put);
	put.type = GNI_POST_RDMA_PUT;
	put.cq_mode = GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
	put.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
	put.local_addr = (uint64_t)(uintptr_t)src;
	put.local_mem_hndl = src_mdh;
	put.remote_addr = dsts[next].addr;
	put.remote_mem_hndl = dsts[next].mdh;
	put.length = BYTES;
	CHECK(GNI_PostRdma(ep, &put));
	expect_local_event(cq, &put, next_inst, "RDMA PUT");
	expect_remote_event(rx_cq, prev_inst, "remote event of the left neighbour's RDMA PUT");
	expect_pattern(dst, BYTES, prev, job.rank, "RDMA PUT");
	PMI_CHECK(PMI_Barrier());

	gni_post_descriptor_t get;
	memset(&get, 0, sizeof get);
	get.type = GNI_POST_RDMA_GET;
	get.cq_mode = GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
	get.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
	get.local_addr = (uint64_t)(uintptr_t)got;
	get.local_mem_hndl = get_mdh;
	get.remote_addr = srcs[next].addr;
	get.remote_mem_hndl = srcs[next].mdh;
	get.length = BYTES;
	CHECK(GNI_PostRdma(ep, &get));
	expect_local_event(cq, &get, next_inst, "RDMA GET");
	expect_pattern(got, BYTES, next, (next + 1) % job.size, "RDMA GET");
	expect_remote_event(rx_cq, prev_inst, "remote event of the left neighbour's RDMA GET");

	PMI_CHECK(PMI_Barrier());
	CHECK(GNI_EpUnbind(ep));
	CHECK(GNI_EpDestroy(ep));
	CHECK(GNI_MemDeregister(job.nic, &src_mdh));
	CHECK(GNI_MemDeregister(job.nic, &dst_mdh));
	CHECK(GNI_MemDeregister(job.nic, &get_mdh));
	if (job.rank == 0)
		printf("rdma_put_get: %d ranks, RDMA PUT and GET of %d bytes around the ring: data and CQ events verified\n",
		       job.size, BYTES);
	free(dsts);
	free(srcs);
	job_finish();
	return 0;
}
