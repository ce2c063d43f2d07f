/* Helpers shared by the emulator's C test programs: checked calls and a small "node" (a CDM
 * attached to its own NIC, with a source CQ, a receive CQ, an endpoint and a registered buffer). */
#ifndef EMU_TEST_H
#define EMU_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gni_pub.h"
#include "aar_emu.h"

static inline const char *rc_name(gni_return_t rc)
{
	return (unsigned)rc <= GNI_RC_ERROR_NOMEM ? gni_err_str[rc] : "?";
}

#define EXPECT_RC(call, want)                                                                  \
	do {                                                                                   \
		gni_return_t rc_ = (call);                                                     \
		if (rc_ != (want)) {                                                           \
			fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, \
				#call, rc_name(rc_), rc_name(want));                           \
			exit(1);                                                               \
		}                                                                              \
	} while (0)
#define OK(call) EXPECT_RC(call, GNI_RC_SUCCESS)
#define EXPECT(cond)                                                                           \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);    \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

#define BUF_BYTES (64 * 1024)

struct node {
	uint32_t inst, addr;
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	gni_cq_handle_t cq, rx_cq;
	gni_ep_handle_t ep;
	unsigned char *buf;
	gni_mem_handle_t mh;
};

static inline void node_init(struct node *n, uint32_t inst, uint32_t cdm_modes)
{
	memset(n, 0, sizeof *n);
	n->inst = inst;
	OK(GNI_CdmCreate(inst, GNI_FIND_ALLOC_PTAG, 42, cdm_modes, &n->cdm));
	OK(GNI_CdmAttach(n->cdm, 0, &n->addr, &n->nic));
	OK(GNI_CqCreate(n->nic, 64, 0, GNI_CQ_NOBLOCK, NULL, NULL, &n->cq));
	OK(GNI_CqCreate(n->nic, 64, 0, GNI_CQ_BLOCKING, NULL, NULL, &n->rx_cq));
	OK(GNI_EpCreate(n->nic, n->cq, &n->ep));
	n->buf = aligned_alloc(4096, BUF_BYTES);
	EXPECT(n->buf != NULL);
	memset(n->buf, 0, BUF_BYTES);
	OK(GNI_MemRegister(n->nic, (uint64_t)(uintptr_t)n->buf, BUF_BYTES, n->rx_cq, GNI_MEM_READWRITE,
			   (uint32_t)-1, &n->mh));
}

static inline void connect_nodes(struct node *a, struct node *b)
{
	OK(GNI_EpBind(a->ep, b->addr, b->inst));
	OK(GNI_EpBind(b->ep, a->addr, a->inst));
}

/* SMSG attributes of a mailbox of `credits` messages of up to `maxsize` bytes in the second half
 * of n's registered buffer. */
static inline void smsg_attr(struct node *n, gni_smsg_attr_t *attr, uint16_t credits, uint32_t maxsize)
{
	unsigned int bytes;
	memset(attr, 0, sizeof *attr);
	attr->msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
	attr->mbox_maxcredit = credits;
	attr->msg_maxsize = maxsize;
	OK(GNI_SmsgBufferSizeNeeded(attr, &bytes));
	EXPECT(bytes >= (unsigned)credits * maxsize && bytes <= BUF_BYTES / 2);
	attr->msg_buffer = n->buf + BUF_BYTES / 2;
	attr->buff_size = bytes;
	attr->mem_hndl = n->mh;
	attr->mbox_offset = 0;
}

static inline uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* A descriptor for `type` of `len` bytes from a->buf+loff to b->buf+roff. */
static inline gni_post_descriptor_t descr(struct node *a, struct node *b, gni_post_type_t type, uint64_t loff,
				   uint64_t roff, uint64_t len, uint16_t cq_mode)
{
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = type;
	pd.cq_mode = cq_mode;
	pd.local_addr = addr_of(a->buf + loff);
	pd.local_mem_hndl = a->mh;
	pd.remote_addr = addr_of(b->buf + roff);
	pd.remote_mem_hndl = b->mh;
	pd.length = len;
	return pd;
}

/* The post completed inside the call: its event is already on the CQ, and it names `pd`. */
static inline void expect_completion(struct node *n, gni_post_descriptor_t *pd)
{
	gni_cq_entry_t ev;
	gni_post_descriptor_t *done = NULL;
	OK(GNI_CqGetEvent(n->cq, &ev));
	EXPECT(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_POST);
	EXPECT(GNI_CQ_STATUS_OK(ev));
	EXPECT(GNI_CQ_GET_SOURCE(ev) == 0);
	OK(GNI_GetCompleted(n->cq, ev, &done));
	EXPECT(done == pd);
}

static inline void expect_no_event(gni_cq_handle_t cq)
{
	gni_cq_entry_t ev;
	EXPECT_RC(GNI_CqGetEvent(cq, &ev), GNI_RC_NOT_DONE);
}

static inline void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7u + seed);
}

/* A check program's scenarios: main runs the one argv[1] names and prints "PASS <name>". */
struct scenario {
	const char *name;
	void (*run)(void);
};

static inline int run_scenario(const char *program, const struct scenario *s, size_t n, int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "";
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(which, s[i].name)) {
			s[i].run();
			printf("PASS %s\n", which);
			return 0;
		}
	}
	fprintf(stderr, "%s: unknown scenario \"%s\"\n", program, which);
	return 2;
}

#endif
