/*
 * pair.h: two NICs of one process over the emulated uGNI (inst_id 0 and 1), for test programs
 * that need a little network traffic and nothing else (the MPI and Fortran A/B tests): A PUTs
 * into B by RDMA, every post waited for and its bytes checked. Header-only, so that any test
 * program includes it.
 */
#ifndef AAR_TEST_PAIR_H
#define AAR_TEST_PAIR_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gni_pub.h"

struct pair_side {
	uint32_t addr;
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	gni_cq_handle_t cq;
	gni_ep_handle_t ep;
	unsigned char *buf;
	gni_mem_handle_t mh;
};

static struct pair_side pair_a, pair_b;
static uint64_t pair_bytes;

static int pair_ok(gni_return_t rc, const char *what)
{
	if (rc != GNI_RC_SUCCESS)
		fprintf(stderr, "pair: %s failed: rc=%d\n", what, (int)rc);
	return rc == GNI_RC_SUCCESS;
}

static int pair_side_setup(struct pair_side *s, uint32_t inst)
{
	if (!pair_ok(GNI_CdmCreate(inst, GNI_FIND_ALLOC_PTAG, 0x7a7a, 0, &s->cdm), "GNI_CdmCreate") ||
	    !pair_ok(GNI_CdmAttach(s->cdm, 0, &s->addr, &s->nic), "GNI_CdmAttach") ||
	    !pair_ok(GNI_CqCreate(s->nic, 64, 0, GNI_CQ_BLOCKING, NULL, NULL, &s->cq), "GNI_CqCreate") ||
	    !pair_ok(GNI_EpCreate(s->nic, s->cq, &s->ep), "GNI_EpCreate"))
		return -1;
	s->buf = aligned_alloc(64, pair_bytes);
	if (!s->buf)
		return -1;
	memset(s->buf, 0, pair_bytes);
	return pair_ok(GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)s->buf, pair_bytes, NULL, GNI_MEM_READWRITE,
				       (uint32_t)-1, &s->mh), "GNI_MemRegister") ? 0 : -1;
}

/* Two NICs, buffers of `max_bytes`. 0 on success. */
static int pair_setup(uint64_t max_bytes)
{
	pair_bytes = (max_bytes + 63) / 64 * 64;
	if (pair_side_setup(&pair_a, 0) || pair_side_setup(&pair_b, 1))
		return -1;
	return pair_ok(GNI_EpBind(pair_a.ep, pair_b.addr, 1), "GNI_EpBind") ? 0 : -1;
}

/* `count` RDMA PUTs of `bytes` from A to B with routing `dlvr`; 0 if all arrived intact. */
static int pair_put(uint64_t bytes, int count, uint16_t dlvr)
{
	static unsigned seq;
	for (int k = 0; k < count; k++, seq++) {
		for (uint64_t i = 0; i < bytes; i++)
			pair_a.buf[i] = (unsigned char)(i * 7u + seq);
		gni_post_descriptor_t pd;
		memset(&pd, 0, sizeof pd);
		pd.type = GNI_POST_RDMA_PUT;
		pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
		pd.dlvr_mode = dlvr;
		pd.local_addr = (uint64_t)(uintptr_t)pair_a.buf;
		pd.local_mem_hndl = pair_a.mh;
		pd.remote_addr = (uint64_t)(uintptr_t)pair_b.buf;
		pd.remote_mem_hndl = pair_b.mh;
		pd.length = bytes;
		gni_cq_entry_t ev;
		gni_post_descriptor_t *done = NULL;
		if (!pair_ok(GNI_PostRdma(pair_a.ep, &pd), "GNI_PostRdma") ||
		    !pair_ok(GNI_CqWaitEvent(pair_a.cq, 10000, &ev), "GNI_CqWaitEvent") ||
		    !pair_ok(GNI_GetCompleted(pair_a.cq, ev, &done), "GNI_GetCompleted") || done != &pd ||
		    memcmp(pair_a.buf, pair_b.buf, bytes))
			return -1;
	}
	return 0;
}

#endif
