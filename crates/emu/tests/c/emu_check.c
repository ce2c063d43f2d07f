/* The emulator's behaviour, one scenario per argv[1]; prints "PASS <scenario>" on success and
 * exits non-zero with a message on stderr at the first surprise. */
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_test.h"

static void layout(void)
{
	/* Our header must lay the descriptor out as the post descriptor layout of docs/abi.md (and
	 * aar_abi::GniPostDescriptor) says, and the chain elements as the emulator reads them. */
	EXPECT(sizeof(gni_post_descriptor_t) == 184);
	EXPECT(offsetof(gni_post_descriptor_t, type) == 36);
	EXPECT(offsetof(gni_post_descriptor_t, cq_mode) == 40);
	EXPECT(offsetof(gni_post_descriptor_t, dlvr_mode) == 42);
	EXPECT(offsetof(gni_post_descriptor_t, length) == 96);
	EXPECT(offsetof(gni_post_descriptor_t, src_cq_hndl) == 112);
	EXPECT(offsetof(gni_post_descriptor_t, amo_cmd) == 136);
	EXPECT(offsetof(gni_post_descriptor_t, cqwrite_value) == 160);
	EXPECT(offsetof(gni_post_descriptor_t, ce_red_id) == 176);
	EXPECT(sizeof(gni_smsg_attr_t) == 56);
	EXPECT(sizeof(gni_ct_put_post_descriptor_t) == 56);
	EXPECT(sizeof(gni_ct_get_post_descriptor_t) == 72);
	EXPECT(offsetof(gni_ct_get_post_descriptor_t, local_mem_hndl) == 56);
	EXPECT(sizeof(gni_ct_cqw_post_descriptor_t) == 40);
	EXPECT(!strcmp(gni_err_str[GNI_RC_INVALID_PARAM], "GNI_RC_INVALID_PARAM"));
	EXPECT(!strcmp(gni_err_str[GNI_RC_ERROR_NOMEM], "GNI_RC_ERROR_NOMEM"));
}

static void put_get(void)
{
	struct node a, b;
	node_init(&a, 10, 0);
	node_init(&b, 20, 0);
	connect_nodes(&a, &b);
	uint32_t addr, cpu;
	OK(GNI_CdmGetNicAddress(0, &addr, &cpu));
	EXPECT(addr == a.addr && b.addr != a.addr);

	/* FMA PUT with a remote event at the target's registration CQ. */
	fill(a.buf, 100, 1);
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 1000, 100,
					 GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostFma(a.ep, &pd));
	EXPECT(!memcmp(a.buf, b.buf + 1000, 100));
	gni_cq_entry_t ev;
	OK(GNI_CqGetEvent(a.cq, &ev));
	EXPECT(GNI_CQ_GET_INST_ID(ev) == b.inst); /* local events carry the endpoint's remote_id */
	gni_post_descriptor_t *done;
	OK(GNI_GetCompleted(a.cq, ev, &done));
	EXPECT(done == &pd);
	EXPECT_RC(GNI_GetCompleted(a.cq, ev, &done), GNI_RC_DESCRIPTOR_ERROR);
	EXPECT(done == NULL);
	OK(GNI_CqWaitEvent(b.rx_cq, 1000, &ev));
	EXPECT(GNI_CQ_GET_SOURCE(ev) == 1 && GNI_CQ_GET_INST_ID(ev) == a.inst);
	expect_no_event(b.rx_cq);

	/* FMA PUT needs no local handle; zero-length FMA PUT is allowed. */
	fill(a.buf + 200, 33, 2);
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 200, 2000, 33, GNI_CQMODE_GLOBAL_EVENT);
	memset(&pd.local_mem_hndl, 0, sizeof pd.local_mem_hndl);
	OK(GNI_PostFma(a.ep, &pd));
	expect_completion(&a, &pd);
	EXPECT(!memcmp(a.buf + 200, b.buf + 2000, 33));
	pd.length = 0;
	OK(GNI_PostFma(a.ep, &pd));
	expect_completion(&a, &pd);

	/* RDMA PUT of the whole buffer but one page, silent. */
	fill(a.buf, BUF_BYTES - 4096, 3);
	pd = descr(&a, &b, GNI_POST_RDMA_PUT, 0, 4096, BUF_BYTES - 4096, GNI_CQMODE_SILENT);
	OK(GNI_PostRdma(a.ep, &pd));
	expect_no_event(a.cq);
	EXPECT(!memcmp(a.buf, b.buf + 4096, BUF_BYTES - 4096));

	/* FMA GET and RDMA GET bring remote bytes back. */
	fill(b.buf, 512, 4);
	memset(a.buf, 0, BUF_BYTES);
	pd = descr(&a, &b, GNI_POST_FMA_GET, 64, 0, 512, GNI_CQMODE_GLOBAL_EVENT);
	OK(GNI_PostFma(a.ep, &pd));
	expect_completion(&a, &pd);
	EXPECT(!memcmp(a.buf + 64, b.buf, 512));
	fill(b.buf, 32768, 5);
	pd = descr(&a, &b, GNI_POST_RDMA_GET, 0, 0, 32768, GNI_CQMODE_LOCAL_EVENT);
	OK(GNI_PostRdma(a.ep, &pd));
	expect_completion(&a, &pd);
	EXPECT(!memcmp(a.buf, b.buf, 32768));

	/* PUT with sync flag: data, then the flag word at the target. */
	fill(a.buf, 64, 6);
	pd = descr(&a, &b, GNI_POST_FMA_PUT_W_SYNCFLAG, 0, 128, 64, GNI_CQMODE_SILENT);
	pd.sync_flag_addr = addr_of(b.buf + 256);
	pd.sync_flag_value = 0x1234567890abcdefULL;
	OK(GNI_PostFma(a.ep, &pd));
	EXPECT(!memcmp(a.buf, b.buf + 128, 64));
	uint64_t flag;
	memcpy(&flag, b.buf + 256, 8);
	EXPECT(flag == 0x1234567890abcdefULL);

	/* The descriptor's own CQ overrides the endpoint's. */
	gni_cq_handle_t other;
	OK(GNI_CqCreate(a.nic, 4, 0, GNI_CQ_NOBLOCK, NULL, NULL, &other));
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.src_cq_hndl = other;
	OK(GNI_PostFma(a.ep, &pd));
	expect_no_event(a.cq);
	OK(GNI_CqGetEvent(other, &ev));
	OK(GNI_GetCompleted(other, ev, &done));
	EXPECT(done == &pd);

	/* The target is the bound NIC address and the remote handle: a remote_id that is no CDM's
	 * inst_id only shapes the local event (as on an Aries). */
	gni_ep_handle_t odd;
	OK(GNI_EpCreate(a.nic, a.cq, &odd));
	OK(GNI_EpBind(odd, b.addr, 12345));
	fill(a.buf, 24, 8);
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 300, 24, GNI_CQMODE_GLOBAL_EVENT);
	OK(GNI_PostFma(odd, &pd));
	OK(GNI_CqGetEvent(a.cq, &ev));
	EXPECT(GNI_CQ_GET_INST_ID(ev) == 12345);
	OK(GNI_GetCompleted(a.cq, ev, &done));
	EXPECT(done == &pd && !memcmp(a.buf, b.buf + 300, 24));

	/* Loop back: an endpoint bound to its own NIC. */
	gni_ep_handle_t self;
	OK(GNI_EpCreate(a.nic, a.cq, &self));
	OK(GNI_EpBind(self, a.addr, a.inst));
	fill(a.buf, 16, 7);
	pd = descr(&a, &a, GNI_POST_FMA_PUT, 0, 100, 16, GNI_CQMODE_SILENT);
	OK(GNI_PostFma(self, &pd));
	EXPECT(!memcmp(a.buf, a.buf + 100, 16));
}

static uint64_t word(struct node *n, size_t off)
{
	uint64_t v;
	memcpy(&v, n->buf + off, 8);
	return v;
}

static void set_word(struct node *n, size_t off, uint64_t v)
{
	memcpy(n->buf + off, &v, 8);
}

static void amo_post(struct node *a, struct node *b, gni_fma_cmd_type_t cmd, uint64_t first, uint64_t second)
{
	gni_post_descriptor_t pd = descr(a, b, GNI_POST_AMO, 0, 64, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = cmd;
	pd.first_operand = first;
	pd.second_operand = second;
	OK(GNI_PostFma(a->ep, &pd));
	expect_completion(a, &pd);
}

static void amo(void)
{
	struct node a, b;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	connect_nodes(&a, &b);
	set_word(&b, 64, 40);
	amo_post(&a, &b, GNI_FMA_ATOMIC_FADD, 2, 0);
	EXPECT(word(&b, 64) == 42 && word(&a, 0) == 40);
	amo_post(&a, &b, GNI_FMA_ATOMIC_ADD, 8, 0);
	EXPECT(word(&b, 64) == 50);
	amo_post(&a, &b, GNI_FMA_ATOMIC_CSWAP, 50, 7); /* matches: swapped */
	EXPECT(word(&b, 64) == 7 && word(&a, 0) == 50);
	amo_post(&a, &b, GNI_FMA_ATOMIC2_FCSWAP, 99, 1); /* no match: unchanged */
	EXPECT(word(&b, 64) == 7 && word(&a, 0) == 7);
	amo_post(&a, &b, GNI_FMA_ATOMIC2_FSWAP, 0xffff, 0);
	EXPECT(word(&b, 64) == 0xffff && word(&a, 0) == 7);
	amo_post(&a, &b, GNI_FMA_ATOMIC_AX, 0xff0, 0x1);
	EXPECT(word(&b, 64) == ((0xffffULL & 0xff0) ^ 0x1));
	amo_post(&a, &b, GNI_FMA_ATOMIC2_IMIN, (uint64_t)-5, 0);
	EXPECT((int64_t)word(&b, 64) == -5);
	amo_post(&a, &b, GNI_FMA_ATOMIC2_FIMAX, 3, 0);
	EXPECT(word(&b, 64) == 3 && (int64_t)word(&a, 0) == -5);
	double x = 1.25, y = 2.5, r;
	uint64_t bits;
	memcpy(&bits, &x, 8);
	set_word(&b, 64, bits);
	memcpy(&bits, &y, 8);
	amo_post(&a, &b, GNI_FMA_ATOMIC2_FPADD, bits, 0);
	bits = word(&b, 64);
	memcpy(&r, &bits, 8);
	EXPECT(r == 3.75);

	/* AMO with flag: the flag lands at the initiator after the result. */
	set_word(&b, 64, 1);
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_AMO_W_FLAG, 0, 64, 8, GNI_CQMODE_SILENT);
	pd.amo_cmd = GNI_FMA_ATOMIC_FADD;
	pd.first_operand = 1;
	pd.sync_flag_addr = addr_of(a.buf + 8);
	pd.sync_flag_value = 77;
	OK(GNI_PostFma(a.ep, &pd));
	EXPECT(word(&b, 64) == 2 && word(&a, 0) == 1 && word(&a, 8) == 77);
}

static void smsg(void)
{
	struct node a, b;
	node_init(&a, 5, 0);
	node_init(&b, 6, 0);
	gni_smsg_attr_t aa, ba;
	smsg_attr(&a, &aa, 4, 256);
	smsg_attr(&b, &ba, 4, 256);
	EXPECT_RC(GNI_SmsgInit(a.ep, &aa, &ba), GNI_RC_INVALID_STATE); /* not bound yet */
	connect_nodes(&a, &b);
	OK(GNI_SmsgInit(a.ep, &aa, &ba));
	/* B is not initialised yet: no credit. */
	char hdr[16] = "header-bytes";
	EXPECT_RC(GNI_SmsgSend(a.ep, hdr, sizeof hdr, NULL, 0, 1), GNI_RC_NOT_DONE);
	OK(GNI_SmsgInit(b.ep, &ba, &aa));

	unsigned char data[200];
	fill(data, sizeof data, 9);
	OK(GNI_SmsgSend(a.ep, hdr, sizeof hdr, data, sizeof data, 0xabc));
	gni_cq_entry_t ev;
	OK(GNI_CqGetEvent(a.cq, &ev)); /* local: sent */
	EXPECT(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_SMSG && GNI_CQ_GET_MSG_ID(ev) == 0xabc);
	OK(GNI_CqWaitEvent(b.rx_cq, 1000, &ev)); /* remote: arrived, from inst 5 */
	EXPECT(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_SMSG && GNI_CQ_GET_INST_ID(ev) == a.inst);
	void *msg;
	OK(GNI_SmsgGetNext(b.ep, &msg));
	EXPECT(((uintptr_t)msg & 7) == 0);
	EXPECT(!memcmp(msg, hdr, sizeof hdr));
	EXPECT(!memcmp((char *)msg + sizeof hdr, data, sizeof data)); /* data follows the header */
	OK(GNI_SmsgRelease(b.ep));
	EXPECT_RC(GNI_SmsgRelease(b.ep), GNI_RC_NOT_DONE);
	EXPECT_RC(GNI_SmsgGetNext(b.ep, &msg), GNI_RC_NOT_DONE);

	/* Too big for the mailbox: ERROR_RESOURCE. */
	unsigned char big[300] = { 0 };
	EXPECT_RC(GNI_SmsgSend(a.ep, hdr, sizeof hdr, big, sizeof big, 2), GNI_RC_ERROR_RESOURCE);

	/* Tags: a mismatch is NO_MATCH and leaves the message; ANY_TAG reports the tag. */
	OK(GNI_SmsgSendWTag(a.ep, hdr, 4, NULL, 0, 3, 17));
	uint8_t tag = 18;
	EXPECT_RC(GNI_SmsgGetNextWTag(b.ep, &msg, &tag), GNI_RC_NO_MATCH);
	tag = GNI_SMSG_ANY_TAG;
	OK(GNI_SmsgGetNextWTag(b.ep, &msg, &tag));
	EXPECT(tag == 17);
	OK(GNI_SmsgRelease(b.ep));

	/* Credits: 4 in flight, the fifth waits until one is released. */
	for (uint32_t i = 0; i < 4; i++)
		OK(GNI_SmsgSend(a.ep, &i, sizeof i, NULL, 0, i));
	uint32_t five = 5;
	EXPECT_RC(GNI_SmsgSend(a.ep, &five, 4, NULL, 0, 5), GNI_RC_NOT_DONE);
	OK(GNI_SmsgGetNext(b.ep, &msg));
	EXPECT(*(uint32_t *)msg == 0);
	OK(GNI_SmsgRelease(b.ep));
	OK(GNI_SmsgSend(a.ep, &five, 4, NULL, 0, 5));
	for (uint32_t want = 1; want <= 5; want = want == 3 ? 5 : want + 1) {
		OK(GNI_SmsgGetNext(b.ep, &msg));
		EXPECT(*(uint32_t *)msg == want);
		OK(GNI_SmsgRelease(b.ep));
	}

	/* SMSG in the other direction, and the delivery mode setting. */
	OK(GNI_SmsgSetDeliveryMode(b.nic, GNI_DLVMODE_ADAPTIVE3));
	OK(GNI_SmsgSend(b.ep, hdr, 8, NULL, 0, 9));
	OK(GNI_SmsgGetNext(a.ep, &msg));
	EXPECT(!memcmp(msg, hdr, 8));
	OK(GNI_SmsgRelease(a.ep));

	/* After unbinding, the endpoint is no longer an SMSG endpoint. */
	OK(GNI_EpUnbind(a.ep));
	EXPECT_RC(GNI_SmsgSend(a.ep, hdr, 8, NULL, 0, 1), GNI_RC_INVALID_PARAM);
}

static void chain(void)
{
	/* A has two endpoints on one NIC, bound to B and to C. */
	struct node a, b, c;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	node_init(&c, 3, 0);
	connect_nodes(&a, &b);
	gni_ep_handle_t a_to_c;
	OK(GNI_EpCreate(a.nic, a.cq, &a_to_c));
	OK(GNI_EpBind(a_to_c, c.addr, c.inst));

	fill(a.buf, 4096, 11);
	gni_post_descriptor_t head = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	head.dlvr_mode = GNI_DLVMODE_ADAPTIVE0;
	gni_ct_put_post_descriptor_t e[3];
	memset(e, 0, sizeof e);
	uint64_t loff[3] = { 64, 192, 1024 }, roff[3] = { 100, 300, 2000 }, lens[3] = { 128, 8, 1000 };
	gni_ep_handle_t eps[3] = { a.ep, a_to_c, a.ep };
	struct node *dst[3] = { &b, &c, &b };
	for (int i = 0; i < 3; i++) {
		e[i].next_descr = i < 2 ? &e[i + 1] : NULL;
		e[i].ep_hndl = eps[i];
		e[i].length = lens[i];
		e[i].local_addr = addr_of(a.buf + loff[i]);
		e[i].remote_addr = addr_of(dst[i]->buf + roff[i]);
		e[i].remote_mem_hndl = dst[i]->mh;
	}
	head.next_descr = &e[0];
	gni_ct_put_post_descriptor_t before[3];
	memcpy(before, e, sizeof e);
	OK(GNI_CtPostFma(a.ep, &head));
	EXPECT(!memcmp(before, e, sizeof e)); /* elements are only read */
	expect_completion(&a, &head);
	expect_no_event(a.cq); /* one completion for the whole chain */
	EXPECT(!memcmp(a.buf, b.buf, 64));
	for (int i = 0; i < 3; i++)
		EXPECT(!memcmp(a.buf + loff[i], dst[i]->buf + roff[i], lens[i]));

	/* A GET chain. */
	fill(b.buf, 4096, 12);
	fill(c.buf, 4096, 13);
	memset(a.buf, 0, 4096);
	gni_ct_get_post_descriptor_t g[2];
	memset(g, 0, sizeof g);
	g[0].next_descr = &g[1];
	g[0].ep_hndl = a_to_c;
	g[0].length = 256;
	g[0].local_addr = addr_of(a.buf + 512);
	g[0].remote_addr = addr_of(c.buf + 64);
	g[0].remote_mem_hndl = c.mh;
	g[0].local_mem_hndl = a.mh;
	g[1] = g[0];
	g[1].next_descr = NULL;
	g[1].ep_hndl = a.ep;
	g[1].local_addr = addr_of(a.buf + 1024);
	g[1].remote_addr = addr_of(b.buf + 128);
	g[1].remote_mem_hndl = b.mh;
	head = descr(&a, &b, GNI_POST_FMA_GET, 0, 0, 128, GNI_CQMODE_GLOBAL_EVENT);
	head.next_descr = &g[0];
	OK(GNI_CtPostFma(a.ep, &head));
	expect_completion(&a, &head);
	EXPECT(!memcmp(a.buf, b.buf, 128));
	EXPECT(!memcmp(a.buf + 512, c.buf + 64, 256));
	EXPECT(!memcmp(a.buf + 1024, b.buf + 128, 256));

	/* A bad element fails the whole chain before any byte moves. */
	memset(b.buf, 0, 4096);
	head = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	e[2].length = BUF_BYTES; /* past the end of B's registration */
	e[1].next_descr = &e[2];
	head.next_descr = &e[0];
	EXPECT_RC(GNI_CtPostFma(a.ep, &head), GNI_RC_INVALID_PARAM);
	expect_no_event(a.cq);
	for (int i = 0; i < 64; i++)
		EXPECT(b.buf[i] == 0);

	/* Chained CQ writes: one event per write at the target CQs. */
	gni_ct_cqw_post_descriptor_t w[1];
	memset(w, 0, sizeof w);
	w[0].ep_hndl = a_to_c;
	w[0].cqwrite_value = 0x222;
	w[0].remote_mem_hndl = c.mh;
	head = descr(&a, &b, GNI_POST_CQWRITE, 0, 0, 0, GNI_CQMODE_GLOBAL_EVENT);
	head.cqwrite_value = 0x111;
	head.next_descr = &w[0];
	OK(GNI_CtPostCqWrite(a.ep, &head));
	expect_completion(&a, &head);
	gni_cq_entry_t ev;
	OK(GNI_CqGetEvent(b.rx_cq, &ev));
	EXPECT(GNI_CQ_GET_DATA(ev) == 0x111);
	OK(GNI_CqGetEvent(c.rx_cq, &ev));
	EXPECT(GNI_CQ_GET_DATA(ev) == 0x222);
}

static void cqwrite(void)
{
	struct node a, b;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	connect_nodes(&a, &b);
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_CQWRITE, 0, 0, 0, GNI_CQMODE_GLOBAL_EVENT);
	pd.cqwrite_value = 0xffff123456789abcULL; /* only the low 48 bits travel */
	OK(GNI_PostCqWrite(a.ep, &pd));
	expect_completion(&a, &pd);
	gni_cq_entry_t ev;
	OK(GNI_CqWaitEvent(b.rx_cq, 1000, &ev));
	EXPECT(GNI_CQ_GET_DATA(ev) == 0x123456789abcULL);
	EXPECT(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_POST && GNI_CQ_GET_SOURCE(ev) == 1);
	gni_post_descriptor_t *done;
	EXPECT_RC(GNI_GetCompleted(b.rx_cq, ev, &done), GNI_RC_DESCRIPTOR_ERROR);
	/* Without a memory handle the write goes to the peer endpoint's CQ. */
	memset(&pd.remote_mem_hndl, 0, sizeof pd.remote_mem_hndl);
	pd.cqwrite_value = 5;
	OK(GNI_PostCqWrite(a.ep, &pd));
	expect_completion(&a, &pd);
	OK(GNI_CqGetEvent(b.cq, &ev));
	EXPECT(GNI_CQ_GET_DATA(ev) == 5);
}

static void errors(void)
{
	struct node a, b;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	unsigned long long posts0 = aar_emu_post_count();
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);

	EXPECT_RC(GNI_PostFma(a.ep, NULL), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_PostFma(NULL, &pd), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_PostFma((gni_ep_handle_t)&pd, &pd), GNI_RC_INVALID_PARAM); /* not a handle */
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_STATE);                /* not bound */
	EXPECT(aar_emu_post_count() - posts0 == 4); /* failed posts are counted too */
	connect_nodes(&a, &b);

	memset(b.buf, 0, 4096);
	fill(a.buf, 4096, 1);
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, BUF_BYTES - 32, 64, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* past the registration */
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_mem_hndl.qword2 ^= 1;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* forged handle */
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_mem_hndl = a.mh;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* registered on the wrong NIC */
	expect_no_event(a.cq);
	for (int i = 0; i < 4096; i++)
		EXPECT(b.buf[i] == 0); /* nothing moved */

	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostRdma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* FMA type on the RDMA call */
	pd.type = GNI_POST_RDMA_PUT;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);
	pd.type = GNI_POST_CE;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_ILLEGAL_OP);
	pd.type = 99;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);
	pd.type = GNI_POST_FMA_PUT;
	EXPECT_RC(GNI_CtPostCqWrite(a.ep, &pd), GNI_RC_INVALID_PARAM);
	pd = descr(&a, &b, GNI_POST_RDMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	memset(&pd.local_mem_hndl, 0, sizeof pd.local_mem_hndl);
	EXPECT_RC(GNI_PostRdma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* RDMA needs a local handle */

	pd = descr(&a, &b, GNI_POST_FMA_GET, 1, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_ALIGNMENT_ERROR);
	pd = descr(&a, &b, GNI_POST_RDMA_GET, 0, 0, 6, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostRdma(a.ep, &pd), GNI_RC_ALIGNMENT_ERROR);
	pd = descr(&a, &b, GNI_POST_FMA_GET, 0, 0, 0, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* zero-length GET */

	pd = descr(&a, &b, GNI_POST_AMO, 0, 8, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = GNI_FMA_ATOMIC_FADD;
	pd.remote_addr += 4;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_ALIGNMENT_ERROR);
	pd.remote_addr -= 4;
	pd.length = 4;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);
	pd.length = 8;
	pd.amo_cmd = GNI_FMA_ATOMIC2_IADD_S; /* 32-bit operands: a 4-byte word, not 8 */
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);

	/* A read-only registration cannot be written remotely. */
	gni_mem_handle_t ro;
	OK(GNI_MemRegister(b.nic, addr_of(b.buf), 4096, NULL, GNI_MEM_READ_ONLY, (uint32_t)-1, &ro));
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_mem_hndl = ro;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_PERMISSION_ERROR);
	pd.type = GNI_POST_FMA_GET;
	OK(GNI_PostFma(a.ep, &pd)); /* ...but read */
	expect_completion(&a, &pd);
	OK(GNI_MemDeregister(b.nic, &ro));
	EXPECT_RC(GNI_MemDeregister(b.nic, &ro), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* deregistered */

	/* Events: both kinds need a DUAL_EVENTS CDM; an event needs a CQ; a full CQ refuses. */
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);
	gni_ep_handle_t no_cq;
	OK(GNI_EpCreate(a.nic, NULL, &no_cq));
	OK(GNI_EpBind(no_cq, b.addr, b.inst));
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
	EXPECT_RC(GNI_PostFma(no_cq, &pd), GNI_RC_INVALID_PARAM);
	pd.cq_mode = GNI_CQMODE_SILENT;
	OK(GNI_PostFma(no_cq, &pd));
	gni_cq_handle_t tiny;
	OK(GNI_CqCreate(a.nic, 2, 0, GNI_CQ_NOBLOCK, NULL, NULL, &tiny));
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
	pd.src_cq_hndl = tiny;
	OK(GNI_PostFma(a.ep, &pd));
	OK(GNI_PostFma(a.ep, &pd));
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_ERROR_RESOURCE);
	struct node d;
	node_init(&d, 4, GNI_CDM_MODE_DUAL_EVENTS);
	OK(GNI_EpBind(d.ep, b.addr, b.inst));
	pd = descr(&d, &b, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_GLOBAL_EVENT);
	OK(GNI_PostFma(d.ep, &pd));
	expect_completion(&d, &pd);
	expect_completion(&d, &pd);

	/* CQ calls. */
	gni_cq_entry_t ev;
	EXPECT_RC(GNI_CqGetEvent(a.cq, NULL), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_CqGetEvent((gni_cq_handle_t)a.ep, &ev), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_CqWaitEvent(a.cq, 10, &ev), GNI_RC_ERROR_RESOURCE); /* not a blocking CQ */
	EXPECT_RC(GNI_CqWaitEvent(a.rx_cq, 10, &ev), GNI_RC_TIMEOUT);
	EXPECT_RC(GNI_CqCreate(a.nic, 0, 0, 0, NULL, NULL, &tiny), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_CqDestroy(a.cq), GNI_RC_ERROR_RESOURCE); /* an endpoint uses it */
	gni_post_descriptor_t *done;
	EXPECT_RC(GNI_GetCompleted(a.cq, 0, NULL), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_GetCompleted(a.cq, 12345, &done), GNI_RC_DESCRIPTOR_ERROR);

	/* Registration. */
	gni_mem_handle_t mh;
	EXPECT_RC(GNI_MemRegister(a.nic, addr_of(a.buf), 0, NULL, 0, (uint32_t)-1, &mh), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_MemRegister(a.nic, 0, 64, NULL, 0, (uint32_t)-1, &mh), GNI_RC_INVALID_PARAM);
	void *hole = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(hole != MAP_FAILED);
	munmap(hole, 8192);
	EXPECT_RC(GNI_MemRegister(a.nic, addr_of(hole), 8192, NULL, 0, (uint32_t)-1, &mh), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_MemRegister((gni_nic_handle_t)a.cq, addr_of(a.buf), 64, NULL, 0, (uint32_t)-1, &mh),
		  GNI_RC_INVALID_PARAM);

	/* SMSG without SmsgInit; attributes. */
	EXPECT_RC(GNI_SmsgSend(a.ep, a.buf, 8, NULL, 0, 1), GNI_RC_INVALID_PARAM);
	void *msg;
	EXPECT_RC(GNI_SmsgGetNext(a.ep, &msg), GNI_RC_INVALID_PARAM);
	gni_smsg_attr_t attr;
	unsigned int size;
	memset(&attr, 0, sizeof attr);
	attr.msg_type = GNI_SMSG_TYPE_MBOX;
	attr.mbox_maxcredit = 4;
	attr.msg_maxsize = GNI_SMSG_MAX_SIZE + 1;
	EXPECT_RC(GNI_SmsgBufferSizeNeeded(&attr, &size), GNI_RC_INVALID_PARAM);
	attr.msg_maxsize = 64;
	attr.msg_type = GNI_SMSG_TYPE_INVALID;
	EXPECT_RC(GNI_SmsgBufferSizeNeeded(&attr, &size), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_SmsgSetDeliveryMode((gni_nic_handle_t)a.ep, 0), GNI_RC_INVALID_PARAM);

	/* CDM and endpoint life cycle. */
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	OK(GNI_CdmCreate(9, GNI_FIND_ALLOC_PTAG, 0, 0, &cdm));
	EXPECT_RC(GNI_CdmAttach(cdm, 7, NULL, &nic), GNI_RC_NO_MATCH);
	OK(GNI_CdmAttach(cdm, 0, NULL, &nic));
	EXPECT_RC(GNI_CdmAttach(cdm, 0, NULL, &nic), GNI_RC_INVALID_STATE);
	EXPECT_RC(GNI_CdmCreate(9, 0, 0, 0, NULL), GNI_RC_INVALID_PARAM);
	OK(GNI_CdmDestroy(cdm));
	EXPECT_RC(GNI_CdmDestroy(cdm), GNI_RC_INVALID_PARAM);
	gni_ep_handle_t ep;
	EXPECT_RC(GNI_EpCreate(nic, NULL, &ep), GNI_RC_INVALID_PARAM); /* its NIC went with the CDM */
	OK(GNI_EpDestroy(no_cq));
	EXPECT_RC(GNI_EpBind(no_cq, b.addr, b.inst), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_EpCreate(a.nic, b.cq, &ep), GNI_RC_INVALID_PARAM); /* CQ of another NIC */

	/* A bound NIC address that does not exist. */
	OK(GNI_EpCreate(a.nic, a.cq, &ep));
	OK(GNI_EpBind(ep, 0xdead, 1));
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostFma(ep, &pd), GNI_RC_INVALID_PARAM);
}

/* Eight threads post at once on their own endpoints (all on A's NIC) to B: PUTs into their own
 * slices and fetch-and-adds on one shared counter. */
#define THREADS 8
#define PER_THREAD 2000

struct worker {
	struct node *a, *b;
	int id;
	gni_ep_handle_t ep;
	gni_cq_handle_t cq;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		uint64_t slot = 4096 + (uint64_t)w->id * 1024 + (uint64_t)(i % 16) * 64;
		gni_post_descriptor_t pd = descr(w->a, w->b, GNI_POST_FMA_PUT, slot, slot, 64, GNI_CQMODE_GLOBAL_EVENT);
		OK(GNI_PostFma(w->ep, &pd));
		gni_cq_entry_t ev;
		gni_post_descriptor_t *done;
		OK(GNI_CqGetEvent(w->cq, &ev));
		OK(GNI_GetCompleted(w->cq, ev, &done));
		EXPECT(done == &pd);
		gni_post_descriptor_t amo = descr(w->a, w->b, GNI_POST_AMO, 0, 0, 8, GNI_CQMODE_SILENT);
		amo.amo_cmd = GNI_FMA_ATOMIC_ADD;
		amo.first_operand = 1;
		OK(GNI_PostFma(w->ep, &amo));
	}
	return NULL;
}

static void threads(void)
{
	struct node a, b;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	fill(a.buf + 4096, THREADS * 1024, 21);
	struct worker w[THREADS];
	pthread_t t[THREADS];
	unsigned long long posts0 = aar_emu_post_count();
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ &a, &b, i, NULL, NULL };
		OK(GNI_CqCreate(a.nic, 8, 0, GNI_CQ_NOBLOCK, NULL, NULL, &w[i].cq));
		OK(GNI_EpCreate(a.nic, w[i].cq, &w[i].ep));
		OK(GNI_EpBind(w[i].ep, b.addr, b.inst));
	}
	for (int i = 0; i < THREADS; i++)
		EXPECT(pthread_create(&t[i], NULL, work, &w[i]) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	EXPECT(word(&b, 0) == THREADS * PER_THREAD);
	EXPECT(!memcmp(a.buf + 4096, b.buf + 4096, THREADS * 1024));
	EXPECT(aar_emu_post_count() - posts0 == 2ULL * THREADS * PER_THREAD);
}

/* A fixed sequence for the log test: successes, failures, a chain, SMSG and its routing. */
static void log_sequence(void)
{
	struct node a, b;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	connect_nodes(&a, &b);
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_SILENT);
	pd.dlvr_mode = GNI_DLVMODE_ADAPTIVE3;
	OK(GNI_PostFma(a.ep, &pd));
	pd = descr(&a, &b, GNI_POST_RDMA_GET, 0, 0, 4096, GNI_CQMODE_SILENT);
	pd.dlvr_mode = GNI_DLVMODE_IN_ORDER | GNI_DLVMODE_ORDERED_TAIL;
	OK(GNI_PostRdma(a.ep, &pd));
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, BUF_BYTES, 8, GNI_CQMODE_SILENT);
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_PostFma(a.ep, NULL), GNI_RC_INVALID_PARAM);
	pd = descr(&a, &b, GNI_POST_CQWRITE, 0, 0, 0, GNI_CQMODE_SILENT);
	pd.dlvr_mode = GNI_DLVMODE_ADAPTIVE1;
	OK(GNI_PostCqWrite(a.ep, &pd));

	gni_ct_put_post_descriptor_t e[2];
	memset(e, 0, sizeof e);
	for (int i = 0; i < 2; i++) {
		e[i].next_descr = i == 0 ? &e[1] : NULL;
		e[i].ep_hndl = a.ep;
		e[i].length = 100 + 10 * i;
		e[i].local_addr = addr_of(a.buf + 1024 * (i + 1));
		e[i].remote_addr = addr_of(b.buf + 1024 * (i + 1));
		e[i].remote_mem_hndl = b.mh;
	}
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 32, GNI_CQMODE_SILENT);
	pd.dlvr_mode = GNI_DLVMODE_ADAPTIVE2;
	pd.next_descr = &e[0];
	OK(GNI_CtPostFma(a.ep, &pd));

	gni_smsg_attr_t aa, ba;
	smsg_attr(&a, &aa, 4, 128);
	smsg_attr(&b, &ba, 4, 128);
	OK(GNI_SmsgInit(a.ep, &aa, &ba));
	OK(GNI_SmsgInit(b.ep, &ba, &aa));
	OK(GNI_SmsgSend(a.ep, a.buf, 8, a.buf, 40, 1));
	OK(GNI_SmsgSetDeliveryMode(a.nic, GNI_DLVMODE_ADAPTIVE3));
	OK(GNI_SmsgSendWTag(a.ep, a.buf, 16, NULL, 0, 2, 5));
	EXPECT_RC(GNI_SmsgSend(NULL, a.buf, 8, NULL, 0, 3), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_SmsgSetDeliveryMode(NULL, GNI_DLVMODE_ADAPTIVE0), GNI_RC_INVALID_PARAM);
	printf("nic %u %u\n", a.addr, b.addr);
}

/* For the log test: a chain whose lengths add up past 2^64-1 (each but the last a good
 * transfer) is refused, and its total is logged as 2^64-1, not as the sum wrapped round. */
static void chain_wrap(void)
{
	struct node a, b;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	connect_nodes(&a, &b);
	gni_ct_put_post_descriptor_t e[2];
	memset(e, 0, sizeof e);
	for (int i = 0; i < 2; i++) {
		e[i].next_descr = i == 0 ? &e[1] : NULL;
		e[i].ep_hndl = a.ep;
		e[i].local_addr = addr_of(a.buf);
		e[i].remote_addr = addr_of(b.buf);
		e[i].remote_mem_hndl = b.mh;
	}
	e[0].length = 8;
	e[1].length = UINT64_MAX - 3; /* 8 + this wraps to 4 */
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 16, GNI_CQMODE_GLOBAL_EVENT);
	pd.next_descr = &e[0];
	EXPECT_RC(GNI_CtPostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);
	expect_no_event(a.cq);
}

/* Datagrams in one process: a bound endpoint meets the one bound back to it, each side gets the
 * other's bytes when it collects; ids, wildcards, probes, time-outs and cancels. */
static void datagram(void)
{
	struct node a, b;
	node_init(&a, 31, 0);
	node_init(&b, 32, 0);
	connect_nodes(&a, &b);
	char ina[GNI_DATAGRAM_MAXSIZE] = "from a", inb[GNI_DATAGRAM_MAXSIZE] = "from b, longer";
	char outa[GNI_DATAGRAM_MAXSIZE], outb[GNI_DATAGRAM_MAXSIZE];
	memset(outa, 0, sizeof outa);
	memset(outb, 0, sizeof outb);
	gni_post_state_t st;
	uint32_t ra, ri;
	EXPECT_RC(GNI_EpPostDataTest(a.ep, &st, &ra, &ri), GNI_RC_NO_MATCH);
	OK(GNI_EpPostData(a.ep, ina, 7, outa, sizeof outa));
	EXPECT_RC(GNI_EpPostData(a.ep, ina, 7, outa, sizeof outa), GNI_RC_ERROR_RESOURCE); /* one at a time */
	OK(GNI_EpPostDataTest(a.ep, &st, &ra, &ri));
	EXPECT(st == GNI_POST_PENDING);
	EXPECT_RC(GNI_EpPostDataWait(a.ep, 10, &st, &ra, &ri), GNI_RC_TIMEOUT);
	EXPECT_RC(GNI_PostDataProbe(a.nic, &ra, &ri), GNI_RC_NO_MATCH);
	uint64_t none = 0;
	EXPECT_RC(GNI_PostdataProbeWaitById(a.nic, 10, &none), GNI_RC_TIMEOUT);
	EXPECT_RC(GNI_PostdataProbeWaitById(a.nic, 10, NULL), GNI_RC_INVALID_PARAM);
	OK(GNI_EpPostData(b.ep, inb, 15, outb, sizeof outb));
	OK(GNI_PostDataProbe(a.nic, &ra, &ri));
	EXPECT(ra == b.addr && ri == b.inst);
	OK(GNI_EpPostDataWait(a.ep, (uint32_t)-1, &st, &ra, &ri));
	EXPECT(st == GNI_POST_COMPLETED && ra == b.addr && ri == b.inst);
	EXPECT(!strcmp(outa, "from b, longer"));
	OK(GNI_EpPostDataTest(b.ep, &st, &ra, &ri));
	EXPECT(st == GNI_POST_COMPLETED && ra == a.addr && ri == a.inst);
	EXPECT(!strcmp(outb, "from a"));
	EXPECT_RC(GNI_EpPostDataTest(b.ep, &st, &ra, &ri), GNI_RC_NO_MATCH); /* collected */

	/* With ids, against a wildcard (an unbound endpoint takes any endpoint bound to it). */
	gni_ep_handle_t any;
	OK(GNI_EpCreate(b.nic, b.cq, &any));
	OK(GNI_EpPostDataWId(any, inb, 2, outb, sizeof outb, 9));
	OK(GNI_EpPostDataWId(a.ep, ina, 4, outa, sizeof outa, 7));
	uint64_t id = 0;
	OK(GNI_PostDataProbeById(b.nic, &id));
	EXPECT(id == 9);
	id = 0;
	OK(GNI_PostdataProbeWaitById(b.nic, 1000, &id));
	EXPECT(id == 9);
	OK(GNI_EpPostDataWaitById(any, 9, 1000, &st, &ra, &ri));
	EXPECT(st == GNI_POST_COMPLETED && ra == a.addr && ri == a.inst && !memcmp(outb, "from", 4));
	OK(GNI_EpPostDataTestById(a.ep, 7, &st, &ra, &ri));
	EXPECT(st == GNI_POST_COMPLETED && !memcmp(outa, "fr", 2));

	/* Nobody answers: cancel. Bad sizes and handles. */
	OK(GNI_EpPostData(a.ep, ina, 1, outa, 1));
	OK(GNI_EpPostDataCancel(a.ep));
	EXPECT_RC(GNI_EpPostDataCancel(a.ep), GNI_RC_NO_MATCH);
	EXPECT_RC(GNI_EpPostDataTest(a.ep, &st, &ra, &ri), GNI_RC_NO_MATCH);
	OK(GNI_EpPostDataWId(a.ep, ina, 1, outa, 1, 5));
	OK(GNI_EpPostDataCancelById(a.ep, 5));
	EXPECT_RC(GNI_EpPostData(a.ep, ina, GNI_DATAGRAM_MAXSIZE + 1, outa, 1), GNI_RC_SIZE_ERROR);
	EXPECT_RC(GNI_EpPostData(NULL, ina, 1, outa, 1), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_EpPostData(a.ep, NULL, 1, outa, 1), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_EpPostDataTest(a.ep, NULL, &ra, &ri), GNI_RC_INVALID_PARAM);
	/* Destroying an endpoint withdraws its datagram. */
	gni_ep_handle_t gone;
	OK(GNI_EpCreate(a.nic, a.cq, &gone));
	OK(GNI_EpBind(gone, b.addr, b.inst));
	OK(GNI_EpPostData(gone, ina, 1, outa, 1));
	OK(GNI_EpDestroy(gone));
	OK(GNI_EpPostData(b.ep, inb, 1, outb, 1));
	OK(GNI_EpPostDataTest(b.ep, &st, &ra, &ri));
	EXPECT(st == GNI_POST_PENDING);
	OK(GNI_EpPostDataCancel(b.ep));
	/* So does destroying its domain, which destroys the endpoint with it: a later post to that
	 * domain's NIC and inst_id meets nothing, and the slot is free again. */
	struct node c;
	node_init(&c, 33, 0);
	OK(GNI_EpBind(c.ep, b.addr, b.inst));
	OK(GNI_EpPostData(c.ep, ina, 7, outa, sizeof outa));
	OK(GNI_CdmDestroy(c.cdm));
	EXPECT_RC(GNI_EpPostDataTest(c.ep, &st, &ra, &ri), GNI_RC_NO_MATCH);
	gni_ep_handle_t to_c;
	OK(GNI_EpCreate(b.nic, b.cq, &to_c));
	OK(GNI_EpBind(to_c, c.addr, c.inst));
	OK(GNI_EpPostData(to_c, inb, 1, outb, 1));
	OK(GNI_EpPostDataTest(to_c, &st, &ra, &ri));
	EXPECT(st == GNI_POST_PENDING);
	OK(GNI_EpDestroy(to_c));
}

int main(int argc, char **argv)
{
	static const struct scenario scenarios[] = {
		{ "layout", layout }, { "put_get", put_get }, { "amo", amo },     { "smsg", smsg },
		{ "chain", chain },   { "cqwrite", cqwrite }, { "errors", errors }, { "threads", threads },
		{ "log", log_sequence }, { "datagram", datagram }, { "chain_wrap", chain_wrap },
	};
	return run_scenario("emu_check", scenarios, sizeof scenarios / sizeof scenarios[0], argc, argv);
}
