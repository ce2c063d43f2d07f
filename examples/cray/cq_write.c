/*
 * cq_write: CQ writes to a remote CQ around a ring.
 *
 * Rank r posts WRITES CQ writes to rank r+1, each naming the CQ of a memory registration of rank
 * r+1 through its memory handle, with the value CQW_MAGIC | r << 8 | k (the low 48 bits are the
 * event's data). Each rank checks its local events and that its CQ received every value of its
 * left neighbour exactly once.
 */
#include "cray_util.h"

#define WRITES 16
#define CQW_MAGIC (0xc0deULL << 32)

int main(void)
{
	job_init("cq_write");
	int next = (job.rank + 1) % job.size, prev = (job.rank + job.size - 1) % job.size;
	uint32_t next_inst = (uint32_t)next * CDM_ID_MULTIPLIER;

	gni_cq_handle_t cq, rx_cq;
	CHECK(GNI_CqCreate(job.nic, 4, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	CHECK(GNI_CqCreate(job.nic, WRITES, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rx_cq));
	/* The registration only names rx_cq to the writers. */
	gni_mem_handle_t mdh;
	void *anchor = register_buffer(4096, rx_cq, &mdh);
	remote_buffer_t *all = exchange_buffer(anchor, mdh);
	gni_ep_handle_t ep = bind_endpoint(cq, next, next_inst);

	for (uint64_t k = 0; k < WRITES; k++) {
		gni_post_descriptor_t pd;
		memset(&pd, 0, sizeof pd);
		pd.type = GNI_POST_CQWRITE;
		pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
		pd.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
		pd.remote_mem_hndl = all[next].mdh;
		pd.cqwrite_value = CQW_MAGIC | (uint64_t)job.rank << 8 | k;
		CHECK(GNI_PostCqWrite(ep, &pd));
		expect_local_event(cq, &pd, next_inst, "CQ write");
	}

	int seen[WRITES] = { 0 };
	for (int i = 0; i < WRITES; i++) {
		gni_cq_entry_t ev = wait_event(rx_cq, "CQ write from the left neighbour");
		uint64_t data = GNI_CQ_GET_DATA(ev);
		uint64_t k = data & 0xff;
		if (GNI_CQ_GET_TYPE(ev) != GNI_CQ_EVENT_TYPE_POST || data >> 32 != CQW_MAGIC >> 32 ||
		    (data & 0xffffffff) >> 8 != (uint64_t)prev || k >= WRITES || seen[k]++)
			fail("CQ write %d: event data 0x%llx (type %llu), expected 0x%llx | %d << 8 | k, each k < %d once",
			     i, (unsigned long long)data, (unsigned long long)GNI_CQ_GET_TYPE(ev),
			     (unsigned long long)CQW_MAGIC, prev, WRITES);
	}

	PMI_CHECK(PMI_Barrier());
	CHECK(GNI_EpUnbind(ep));
	CHECK(GNI_EpDestroy(ep));
	CHECK(GNI_MemDeregister(job.nic, &mdh));
	if (job.rank == 0)
		printf("cq_write: %d ranks x %d CQ writes to the next rank's CQ: values and events verified\n", job.size,
		       WRITES);
	free(all);
	job_finish();
	return 0;
}
