/*
 * pair.h: two NICs of one process over the emulated uGNI (inst_id 0 and 1), for test programs
 * that need a little network traffic and nothing else (the MPI and Fortran A/B tests): A PUTs
 * into B by RDMA, every post waited for and its bytes checked. The set-up is the examples'
 * (examples/ugni_pair.h). Header-only, so that any test program includes it.
 */
#ifndef AAR_TEST_PAIR_H
#define AAR_TEST_PAIR_H

#ifndef UGNI_PROGRAM
#define UGNI_PROGRAM "pair"
#endif
#include "../../examples/ugni_pair.h"

static struct ugni_side pair_a, pair_b;

/* Two NICs, buffers of `max_bytes`. 0 on success. */
static int pair_setup(uint64_t max_bytes)
{
	const struct ugni_pair_config config = {
		.inst_id = 0, .cookie = 0x7a7a, .cq_entries = 64, .tx_cq_mode = GNI_CQ_BLOCKING, .bytes = max_bytes,
	};
	return ugni_pair_open(&pair_a, &pair_b, &config);
}

/* `count` RDMA PUTs of `bytes` from A to B with routing `dlvr`; 0 if all arrived intact. */
static int pair_put(uint64_t bytes, int count, uint16_t dlvr)
{
	static unsigned seq;
	for (int k = 0; k < count; k++, seq++) {
		for (uint64_t i = 0; i < bytes; i++)
			pair_a.send_buf[i] = (unsigned char)(i * 7u + seq);
		gni_post_descriptor_t pd;
		memset(&pd, 0, sizeof pd);
		pd.type = GNI_POST_RDMA_PUT;
		pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
		pd.dlvr_mode = dlvr;
		pd.local_addr = (uint64_t)(uintptr_t)pair_a.send_buf;
		pd.local_mem_hndl = pair_a.send_mh;
		pd.remote_addr = (uint64_t)(uintptr_t)pair_b.recv_buf;
		pd.remote_mem_hndl = pair_b.recv_mh;
		pd.length = bytes;
		if (ugni_check(GNI_PostRdma(pair_a.ep, &pd), "GNI_PostRdma") || ugni_wait_local(&pair_a, &pd) ||
		    memcmp(pair_a.send_buf, pair_b.recv_buf, bytes))
			return -1;
	}
	return 0;
}

#endif
