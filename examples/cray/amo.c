/*
 * amo: every rank fetch-and-adds into rank 0's counter; the result must be exact.
 *
 * Each rank r posts ITERATIONS fetching adds of r + 1 (GNI_FMA_ATOMIC_FADD) to a 64-bit counter
 * and as many non-fetching 32-bit adds of 1 (GNI_FMA_ATOMIC2_IADD_S) to a 32-bit counter, both in
 * rank 0's memory. The values a rank fetches must grow with every one of its adds; at the end
 * rank 0 checks both counters. The ptag is also looked up with GNI_GetPtag from the job's
 * cookie, as programs that get their cookie from elsewhere do.
 */
#include "cray_util.h"

#define ITERATIONS 200

struct counters {
	uint64_t sum;   /* the 64-bit counter */
	uint32_t count; /* the 32-bit counter */
	uint32_t pad;
};

int main(void)
{
	job_init("amo");
	uint8_t ptag = 0;
	CHECK(GNI_GetPtag(job.device_id, job.cookie, &ptag));
	if (ptag != job.ptag)
		fail("GNI_GetPtag gave ptag %u for cookie %u, PMI_GNI_PTAG says %u", ptag, job.cookie, job.ptag);

	gni_cq_handle_t cq;
	CHECK(GNI_CqCreate(job.nic, 4, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	gni_mem_handle_t counters_mdh, result_mdh;
	struct counters *counters = register_buffer(sizeof *counters, NULL, &counters_mdh);
	uint64_t *fetched = register_buffer(sizeof(uint64_t), NULL, &result_mdh);
	remote_buffer_t *all = exchange_buffer(counters, counters_mdh);
	gni_ep_handle_t ep = bind_endpoint(cq, 0, 0 * CDM_ID_MULTIPLIER);

	uint64_t last = 0;
	for (int i = 0; i < ITERATIONS; i++) {
		gni_post_descriptor_t fadd;
		memset(&fadd, 0, sizeof fadd);
		fadd.type = GNI_POST_AMO;
		fadd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
		fadd.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
		fadd.local_addr = (uint64_t)(uintptr_t)fetched;
		fadd.local_mem_hndl = result_mdh;
		fadd.remote_addr = all[0].addr + offsetof(struct counters, sum);
		fadd.remote_mem_hndl = all[0].mdh;
		fadd.length = sizeof(uint64_t);
		fadd.amo_cmd = GNI_FMA_ATOMIC_FADD;
		fadd.first_operand = (uint64_t)job.rank + 1;
		CHECK(GNI_PostFma(ep, &fadd));
		expect_local_event(cq, &fadd, 0, "fetching add");
		if (i > 0 && *fetched <= last)
			fail("add %d fetched %llu, not more than the %llu the add before fetched", i,
			     (unsigned long long)*fetched, (unsigned long long)last);
		last = *fetched;

		gni_post_descriptor_t add32;
		memset(&add32, 0, sizeof add32);
		add32.type = GNI_POST_AMO;
		add32.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
		add32.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
		add32.remote_addr = all[0].addr + offsetof(struct counters, count);
		add32.remote_mem_hndl = all[0].mdh;
		add32.length = sizeof(uint32_t);
		add32.amo_cmd = GNI_FMA_ATOMIC2_IADD_S;
		add32.first_operand = 1;
		CHECK(GNI_PostFma(ep, &add32));
		expect_local_event(cq, &add32, 0, "32-bit add");
	}

	PMI_CHECK(PMI_Barrier());
	if (job.rank == 0) {
		uint64_t n = (uint64_t)job.size;
		uint64_t want_sum = ITERATIONS * n * (n + 1) / 2;
		uint32_t want_count = (uint32_t)(ITERATIONS * n);
		if (counters->sum != want_sum)
			fail("the 64-bit counter is %llu, expected %llu", (unsigned long long)counters->sum,
			     (unsigned long long)want_sum);
		if (counters->count != want_count)
			fail("the 32-bit counter is %u, expected %u", counters->count, want_count);
		if (counters->pad != 0)
			fail("the word after the 32-bit counter changed to %u", counters->pad);
		printf("amo: %d ranks x %d fetching adds and 32-bit adds into rank 0: counters %llu and %u exact\n",
		       job.size, ITERATIONS, (unsigned long long)counters->sum, counters->count);
	}
	PMI_CHECK(PMI_Barrier());
	CHECK(GNI_EpUnbind(ep));
	CHECK(GNI_EpDestroy(ep));
	CHECK(GNI_MemDeregister(job.nic, &counters_mdh));
	CHECK(GNI_MemDeregister(job.nic, &result_mdh));
	free(all);
	job_finish();
	return 0;
}
