/*
 * all_pairs: every rank FMA-PUTs a block to every other rank, with remote events.
 *
 * The endpoints are bound as in Cray's examples: to the peer's NIC address and the remote id
 * rank * BIND_ID_MULTIPLIER + peer, which is not the peer's inst_id (rank * 1000): the post goes
 * to the NIC address and the memory handle, the remote id only comes back in the local events.
 * Rank r's block lands at offset r * BLOCK of each peer's receive buffer; the remote event there
 * carries r's inst_id. Each rank checks every block it received, one remote event from each peer
 * and its local events.
 */
#include "cray_util.h"

#define BIND_ID_MULTIPLIER 100
#define BLOCK 3000

int main(void)
{
	job_init("all_pairs");
	int n = job.size;
	gni_cq_handle_t cq, rx_cq;
	CHECK(GNI_CqCreate(job.nic, 4, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	CHECK(GNI_CqCreate(job.nic, (uint32_t)n, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rx_cq));
	gni_mem_handle_t send_mdh, recv_mdh;
	unsigned char *send = register_buffer((size_t)BLOCK * (size_t)n, NULL, &send_mdh);
	unsigned char *recv = register_buffer((size_t)BLOCK * (size_t)n, rx_cq, &recv_mdh);
	for (int p = 0; p < n; p++)
		fill_pattern(send + (size_t)p * BLOCK, BLOCK, job.rank, p);
	remote_buffer_t *recvs = exchange_buffer(recv, recv_mdh);

	/* Start with the next rank, so that not everyone writes to rank 0 first. */
	for (int k = 1; k < n; k++) {
		int p = (job.rank + k) % n;
		uint32_t bind_id = (uint32_t)(job.rank * BIND_ID_MULTIPLIER + p);
		gni_ep_handle_t ep = bind_endpoint(cq, p, bind_id);
		gni_post_descriptor_t pd;
		memset(&pd, 0, sizeof pd);
		pd.type = GNI_POST_FMA_PUT;
		pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
		pd.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
		pd.local_addr = (uint64_t)(uintptr_t)(send + (size_t)p * BLOCK);
		pd.local_mem_hndl = send_mdh;
		pd.remote_addr = recvs[p].addr + (uint64_t)job.rank * BLOCK;
		pd.remote_mem_hndl = recvs[p].mdh;
		pd.length = BLOCK;
		CHECK(GNI_PostFma(ep, &pd));
		expect_local_event(cq, &pd, bind_id, "FMA PUT");
		CHECK(GNI_EpUnbind(ep));
		CHECK(GNI_EpDestroy(ep));
	}

	/* One remote event from each peer, in any order. */
	unsigned char *heard = calloc((size_t)n, 1);
	if (heard == NULL)
		fail("out of memory");
	for (int i = 0; i < n - 1; i++) {
		gni_cq_entry_t ev = wait_event(rx_cq, "remote event of a peer's FMA PUT");
		uint64_t inst = GNI_CQ_GET_INST_ID(ev);
		uint64_t from = inst / CDM_ID_MULTIPLIER;
		if (GNI_CQ_GET_TYPE(ev) != GNI_CQ_EVENT_TYPE_POST || inst % CDM_ID_MULTIPLIER != 0 ||
		    from >= (uint64_t)n || from == (uint64_t)job.rank || heard[from]++)
			fail("remote event %d: type %llu inst_id %llu, expected one POST event from each other rank's inst_id",
			     i, (unsigned long long)GNI_CQ_GET_TYPE(ev), (unsigned long long)inst);
	}
	for (int p = 0; p < n; p++)
		if (p != job.rank)
			expect_pattern(recv + (size_t)p * BLOCK, BLOCK, p, job.rank, "all-pairs block");

	PMI_CHECK(PMI_Barrier());
	CHECK(GNI_MemDeregister(job.nic, &send_mdh));
	CHECK(GNI_MemDeregister(job.nic, &recv_mdh));
	if (job.rank == 0)
		printf("all_pairs: %d ranks, %d FMA PUTs of %d bytes, every pair: data and CQ events verified\n", n,
		       n * (n - 1), BLOCK);
	free(heard);
	free(recvs);
	job_finish();
	return 0;
}
