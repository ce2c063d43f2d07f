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
	for (int k = 0; k < count; k++, seq++)
		if (ugni_put_checked(&pair_a, &pair_b, bytes, dlvr, seq))
			return -1;
	return 0;
}

#endif
