/* The part of Cray's public uGNI surface beyond posts and messages: every name of gni_pub.h that
 * public uGNI programs use, event data, CQ error decoding, the device type, the job's ptag, segment
 * registration, the 32-bit and cached AMO commands and the NIC of an endpoint's or a registration's
 * CQ. One scenario per argv[1]; prints "PASS <scenario>" on success and exits non-zero with a message on stderr at
 * the first surprise. */
#include <stddef.h>

#include "emu_test.h"

/* Every name this header adds for programs written against Cray's gni_pub.h, used so that it
 * must compile; the values are printed for the test to compare with aar_abi. */
static void names(void)
{
	gni_post_state_t states[] = { GNI_POST_PENDING, GNI_POST_COMPLETED, GNI_POST_ERROR,
				      GNI_POST_TIMEOUT, GNI_POST_TERMINATED, GNI_POST_REMOTE_DATA };
	const char *state_names[] = { "GNI_POST_PENDING", "GNI_POST_COMPLETED", "GNI_POST_ERROR",
				      "GNI_POST_TIMEOUT", "GNI_POST_TERMINATED", "GNI_POST_REMOTE_DATA" };
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
		printf("%s %u\n", state_names[i], (unsigned)states[i]);
	gni_nic_device_t devices[] = { GNI_DEVICE_GEMINI, GNI_DEVICE_ARIES, GNI_DEVICE_PISCES };
	printf("GNI_DEVICE_GEMINI %u\nGNI_DEVICE_ARIES %u\nGNI_DEVICE_PISCES %u\n", (unsigned)devices[0],
	       (unsigned)devices[1], (unsigned)devices[2]);
	printf("GNI_DATAGRAM_MAXSIZE %u\n", (unsigned)GNI_DATAGRAM_MAXSIZE);
	printf("sizeof(gni_mem_segment_t) %zu\n", sizeof(gni_mem_segment_t));
	printf("offsetof(gni_mem_segment_t, length) %zu\n", offsetof(gni_mem_segment_t, length));
	gni_mem_segment_t seg = { .address = 1, .length = 2 };
	EXPECT(seg.address + seg.length == 3);

	/* The AMO commands of gni_pub.h, each with Cray's value. */
	static const struct {
		const char *name;
		gni_fma_cmd_type_t cmd;
	} amos[] = {
#define A(x) { #x, x }
		A(GNI_FMA_ATOMIC_FADD_C),      A(GNI_FMA_ATOMIC_FAND_C),      A(GNI_FMA_ATOMIC_FOR_C),
		A(GNI_FMA_ATOMIC_FXOR_C),      A(GNI_FMA_ATOMIC_FAX_C),       A(GNI_FMA_ATOMIC_CSWAP_C),
		A(GNI_FMA_ATOMIC2_FAND_S),     A(GNI_FMA_ATOMIC2_FAND_SC),    A(GNI_FMA_ATOMIC2_FAND_C),
		A(GNI_FMA_ATOMIC2_FOR_S),      A(GNI_FMA_ATOMIC2_FOR_SC),     A(GNI_FMA_ATOMIC2_FOR_C),
		A(GNI_FMA_ATOMIC2_FXOR_S),     A(GNI_FMA_ATOMIC2_FXOR_SC),    A(GNI_FMA_ATOMIC2_FXOR_C),
		A(GNI_FMA_ATOMIC2_FSWAP_S),    A(GNI_FMA_ATOMIC2_FSWAP_SC),   A(GNI_FMA_ATOMIC2_FSWAP_C),
		A(GNI_FMA_ATOMIC2_FAX_S),      A(GNI_FMA_ATOMIC2_FAX_SC),     A(GNI_FMA_ATOMIC2_FAX_C),
		A(GNI_FMA_ATOMIC2_FCSWAP_S),   A(GNI_FMA_ATOMIC2_FCSWAP_SC),  A(GNI_FMA_ATOMIC2_FCSWAP_C),
		A(GNI_FMA_ATOMIC2_FIMIN_S),    A(GNI_FMA_ATOMIC2_FIMIN_SC),   A(GNI_FMA_ATOMIC2_FIMIN_C),
		A(GNI_FMA_ATOMIC2_FIMAX_S),    A(GNI_FMA_ATOMIC2_FIMAX_SC),   A(GNI_FMA_ATOMIC2_FIMAX_C),
		A(GNI_FMA_ATOMIC2_FIADD_S),    A(GNI_FMA_ATOMIC2_FIADD_SC),   A(GNI_FMA_ATOMIC2_FIADD_C),
		A(GNI_FMA_ATOMIC2_FFPMIN_S),   A(GNI_FMA_ATOMIC2_FFPMIN_SC),  A(GNI_FMA_ATOMIC2_FFPMIN_C),
		A(GNI_FMA_ATOMIC2_FFPMAX_S),   A(GNI_FMA_ATOMIC2_FFPMAX_SC),  A(GNI_FMA_ATOMIC2_FFPMAX_C),
		A(GNI_FMA_ATOMIC2_FFPADD_S),   A(GNI_FMA_ATOMIC2_FFPADD_SC),  A(GNI_FMA_ATOMIC2_FFPADD_C),
		A(GNI_FMA_ATOMIC_ADD_C),       A(GNI_FMA_ATOMIC_AND_C),       A(GNI_FMA_ATOMIC_OR_C),
		A(GNI_FMA_ATOMIC_XOR_C),       A(GNI_FMA_ATOMIC_AX_C),        A(GNI_FMA_ATOMIC2_AND_S),
		A(GNI_FMA_ATOMIC2_AND_SC),     A(GNI_FMA_ATOMIC2_AND_C),      A(GNI_FMA_ATOMIC2_OR_S),
		A(GNI_FMA_ATOMIC2_OR_SC),      A(GNI_FMA_ATOMIC2_OR_C),       A(GNI_FMA_ATOMIC2_XOR_S),
		A(GNI_FMA_ATOMIC2_XOR_SC),     A(GNI_FMA_ATOMIC2_XOR_C),      A(GNI_FMA_ATOMIC2_SWAP_S),
		A(GNI_FMA_ATOMIC2_SWAP_SC),    A(GNI_FMA_ATOMIC2_SWAP_C),     A(GNI_FMA_ATOMIC2_AX_S),
		A(GNI_FMA_ATOMIC2_AX_SC),      A(GNI_FMA_ATOMIC2_AX_C),       A(GNI_FMA_ATOMIC2_CSWAP_S),
		A(GNI_FMA_ATOMIC2_CSWAP_SC),   A(GNI_FMA_ATOMIC2_CSWAP_C),    A(GNI_FMA_ATOMIC2_IMIN_S),
		A(GNI_FMA_ATOMIC2_IMIN_SC),    A(GNI_FMA_ATOMIC2_IMIN_C),     A(GNI_FMA_ATOMIC2_IMAX_S),
		A(GNI_FMA_ATOMIC2_IMAX_SC),    A(GNI_FMA_ATOMIC2_IMAX_C),     A(GNI_FMA_ATOMIC2_IADD_S),
		A(GNI_FMA_ATOMIC2_IADD_SC),    A(GNI_FMA_ATOMIC2_IADD_C),     A(GNI_FMA_ATOMIC2_FPMIN_S),
		A(GNI_FMA_ATOMIC2_FPMIN_SC),   A(GNI_FMA_ATOMIC2_FPMIN_C),    A(GNI_FMA_ATOMIC2_FPMAX_S),
		A(GNI_FMA_ATOMIC2_FPMAX_SC),   A(GNI_FMA_ATOMIC2_FPMAX_C),    A(GNI_FMA_ATOMIC2_FPADD_S),
		A(GNI_FMA_ATOMIC2_FPADD_SC),   A(GNI_FMA_ATOMIC2_FPADD_C),
#undef A
	};
	for (size_t i = 0; i < sizeof amos / sizeof amos[0]; i++)
		printf("%s 0x%03x\n", amos[i].name, (unsigned)amos[i].cmd);

	/* The other names public programs use; only that they compile and keep Cray's values. */
	gni_err_handle_t err = NULL;
	gni_msgq_handle_t msgq = NULL;
	gni_ce_handle_t ce = NULL;
	EXPECT(err == NULL && msgq == NULL && ce == NULL);
	EXPECT(GNI_GET_MINOR(GNI_VERSION) == GNI_MINOR_REV && GNI_GET_MAJOR(GNI_VERSION) == GNI_MAJOR_REV);
	EXPECT(GNI_GET_REV(GNI_VERSION) == GNI_CODE_REV);
	EXPECT(GNI_VERSION_CHECK(0, 0x5c, 0) == GNI_VERSION && GNI_VERSION >= GNI_VERSION_FMA_SHARING);
	EXPECT(GNI_FIND_ALLOC_PTAG == GNI_PTAG_LB && GNI_PTAG_USER_START == 3 && GNI_PTAG_MAX == 254);
	EXPECT(GNI_JOB_CREATE_COOKIE(0x1234, 0) == 0x12340000u);
	EXPECT(GNI_CDM_MODE_MASK == 0x0FFFFFFF && GNI_CDM_MODE_FMA_SMALL_WINDOW == 0x00200000);
	EXPECT(GNI_CDM_MODE_DLA_ENABLE_FORWARDING == 0x4000 && GNI_CDM_MODE_DLA_DISABLE_FORWARDING == 0x8000);
	EXPECT(GNI_CDM_MODE_CQ_NIC_LOCAL_PLACEMENT == 0x80000 && GNI_CDM_MODE_FLBTE_DISABLE == 0x100000);
	EXPECT(GNI_CQ_IS_BLOCKING(GNI_CQ_BLOCKING) && GNI_CQ_IS_NON_BLOCKING(GNI_CQ_NOBLOCK));
	EXPECT(GNI_MEM_PHYS_SEGMENTS == 0x10 && GNI_MEM_MDD_DEDICATED == 0x1000 && GNI_MEM_USE_GART == 0x4);
	EXPECT(GNI_MEM_PHYS_CONT == 0x8 && GNI_MEM_PI_FLUSH == 0x40 && GNI_MEM_MDD_CLONE == 0x80);
	EXPECT(GNI_MEM_RESERVE_REGION == 0x200 && GNI_MEM_UPDATE_REGION == 0x400 && GNI_MEM_MDD_SHARED == 0x800);
	EXPECT(GNI_FMA_FLAGGED_RESPONSE_SIZE == 4);
}

/* Two nodes bound to each other, with instance ids as Cray's examples give them (rank * 1000). */
static void pair(struct node *a, struct node *b)
{
	node_init(a, 0, 0);
	node_init(b, 1000, 0);
	OK(GNI_EpBind(a->ep, b->addr, b->inst));
	OK(GNI_EpBind(b->ep, a->addr, a->inst));
}

static void expect_event(gni_cq_handle_t cq, int remote, uint64_t inst_id)
{
	gni_cq_entry_t ev;
	OK(GNI_CqGetEvent(cq, &ev));
	EXPECT(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_POST);
	EXPECT(GNI_CQ_GET_SOURCE(ev) == (uint64_t)remote);
	if (GNI_CQ_GET_INST_ID(ev) != inst_id) {
		fprintf(stderr, "%s event: inst_id %llu, expected %llu\n", remote ? "remote" : "local",
			(unsigned long long)GNI_CQ_GET_INST_ID(ev), (unsigned long long)inst_id);
		exit(1);
	}
}

static void event_data(void)
{
	struct node a, b;
	pair(&a, &b);

	/* uGNI's defaults: local events carry the bound remote_id, remote events the sender's
	 * instance id. */
	fill(a.buf, 64, 1);
	gni_post_descriptor_t pd =
		descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostFma(a.ep, &pd));
	expect_event(a.cq, 0, 1000);
	expect_event(b.rx_cq, 1, 0);

	/* After GNI_EpSetEventData, the posts of that endpoint carry its values: LOCAL and GLOBAL
	 * events the local value, remote events the remote one; the peer's posts keep the defaults. */
	OK(GNI_EpSetEventData(a.ep, 10000000 + 1, 11000000 + 2));
	uint16_t modes[] = { GNI_CQMODE_LOCAL_EVENT, GNI_CQMODE_GLOBAL_EVENT };
	for (int i = 0; i < 2; i++) {
		pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 64, 64, modes[i] | GNI_CQMODE_REMOTE_EVENT);
		OK(GNI_PostFma(a.ep, &pd));
		expect_event(a.cq, 0, 10000001);
		expect_event(b.rx_cq, 1, 11000002);
	}
	pd = descr(&a, &b, GNI_POST_RDMA_GET, 0, 128, 64, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostRdma(a.ep, &pd));
	expect_event(a.cq, 0, 10000001);
	expect_event(b.rx_cq, 1, 11000002);
	pd = descr(&a, &b, GNI_POST_AMO, 0, 256, 8, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	pd.amo_cmd = GNI_FMA_ATOMIC_FADD;
	pd.first_operand = 1;
	OK(GNI_PostFma(a.ep, &pd));
	expect_event(a.cq, 0, 10000001);
	expect_event(b.rx_cq, 1, 11000002);
	pd = descr(&b, &a, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostFma(b.ep, &pd));
	expect_event(b.cq, 0, 0);
	expect_event(a.rx_cq, 1, 1000);

	/* A CQ write's remote event carries its value, not the event data. */
	pd = descr(&a, &b, GNI_POST_CQWRITE, 0, 0, 0, GNI_CQMODE_GLOBAL_EVENT);
	pd.cqwrite_value = 0xbeef;
	OK(GNI_PostCqWrite(a.ep, &pd));
	expect_event(a.cq, 0, 10000001);
	gni_cq_entry_t ev;
	OK(GNI_CqGetEvent(b.rx_cq, &ev));
	EXPECT(GNI_CQ_GET_DATA(ev) == 0xbeef);

	/* On Aries an event's inst_id has 24 bits; a remote event keeps all 32 in rem_inst_id. */
	OK(GNI_EpSetEventData(a.ep, 0x12345678, 0x9abcdef0));
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostFma(a.ep, &pd));
	expect_event(a.cq, 0, 0x345678);
	OK(GNI_CqGetEvent(b.rx_cq, &ev));
	EXPECT(GNI_CQ_GET_INST_ID(ev) == 0xbcdef0 && GNI_CQ_GET_REM_INST_ID(ev) == 0x9abcdef0);

	/* The values stay through a new binding; a bad handle is refused. */
	OK(GNI_EpUnbind(a.ep));
	OK(GNI_EpBind(a.ep, b.addr, b.inst));
	OK(GNI_EpSetEventData(a.ep, 7, 8));
	pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_LOCAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostFma(a.ep, &pd));
	expect_event(a.cq, 0, 7);
	expect_event(b.rx_cq, 1, 8);
	EXPECT_RC(GNI_EpSetEventData(NULL, 1, 2), GNI_RC_INVALID_PARAM);
	gni_ep_handle_t gone;
	OK(GNI_EpCreate(a.nic, NULL, &gone));
	OK(GNI_EpDestroy(gone));
	EXPECT_RC(GNI_EpSetEventData(gone, 1, 2), GNI_RC_INVALID_PARAM);
	expect_no_event(a.cq);
	expect_no_event(b.rx_cq);
}

static void cq_error(void)
{
	struct node a, b;
	pair(&a, &b);
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT);
	OK(GNI_PostFma(a.ep, &pd));
	gni_cq_entry_t ev;
	OK(GNI_CqGetEvent(a.cq, &ev));

	char text[128];
	OK(GNI_CqErrorStr(ev, text, sizeof text));
	EXPECT(!strcmp(text, "local POST event: status OK, no error"));
	char small[8];
	memset(small, 'x', sizeof small);
	EXPECT_RC(GNI_CqErrorStr(ev, small, sizeof small), GNI_RC_SIZE_ERROR);
	EXPECT(!strcmp(small, "local P")); /* as much as fits, NUL-terminated */
	EXPECT_RC(GNI_CqErrorStr(ev, NULL, 64), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_CqErrorStr(ev, text, 0), GNI_RC_INVALID_PARAM);

	uint32_t recoverable = 7;
	OK(GNI_CqErrorRecoverable(ev, &recoverable));
	EXPECT(recoverable == 1);
	EXPECT_RC(GNI_CqErrorRecoverable(ev, NULL), GNI_RC_INVALID_PARAM);
	/* The emulator never delivers an error status; one made up in its encoding (status in
	 * bits 59..56) has no meaning to translate, but is still described. */
	gni_cq_entry_t made_up = ev | (3ULL << 56);
	EXPECT(!GNI_CQ_STATUS_OK(made_up));
	recoverable = 7;
	EXPECT_RC(GNI_CqErrorRecoverable(made_up, &recoverable), GNI_RC_INVALID_STATE);
	EXPECT(recoverable == 7);
	OK(GNI_CqErrorStr(made_up, text, sizeof text));
	EXPECT(!strcmp(text, "local POST event: error status 0x3, which the emulator never produces"));
}

static void device(void)
{
	gni_nic_device_t type = GNI_DEVICE_GEMINI;
	OK(GNI_GetDeviceType(&type));
	EXPECT(type == GNI_DEVICE_ARIES);
	EXPECT_RC(GNI_GetDeviceType(NULL), GNI_RC_INVALID_PARAM);
}

/* Run with PMI_GNI_PTAG=7:219 and PMI_GNI_COOKIE=0x10000:3735928559, as a launcher of a job
 * with two protection domains sets them. */
static void ptag_job(void)
{
	uint8_t ptag = 0;
	OK(GNI_GetPtag(0, 0x10000, &ptag));
	EXPECT(ptag == 7);
	OK(GNI_GetPtag(0, 3735928559u, &ptag));
	EXPECT(ptag == 219);
	ptag = 1;
	EXPECT_RC(GNI_GetPtag(0, 0x20000, &ptag), GNI_RC_NO_MATCH); /* another job's cookie */
	EXPECT(ptag == 1);
	EXPECT_RC(GNI_GetPtag(3, 0x10000, &ptag), GNI_RC_NO_MATCH); /* no such device */
	EXPECT_RC(GNI_GetPtag(0, 0x10000, NULL), GNI_RC_INVALID_PARAM);
	/* What Cray's examples then do with it. */
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	uint32_t addr;
	OK(GNI_GetPtag(0, 0x10000, &ptag));
	OK(GNI_CdmCreate(0, ptag, 0x10000, 0, &cdm));
	OK(GNI_CdmAttach(cdm, 0, &addr, &nic));
	OK(GNI_CdmDestroy(cdm));
}

/* Run outside a job, or with a bad PMI_GNI_* value: no cookie has a ptag. */
static void ptag_none(void)
{
	uint8_t ptag = 1;
	EXPECT_RC(GNI_GetPtag(0, 0x10000, &ptag), GNI_RC_NO_MATCH);
	EXPECT_RC(GNI_GetPtag(0, 0, &ptag), GNI_RC_NO_MATCH);
	EXPECT(ptag == 1);
}

static void segments(void)
{
	struct node a, b;
	pair(&a, &b);
	unsigned char *region = aligned_alloc(4096, 8192);
	EXPECT(region != NULL);
	memset(region, 0, 8192);
	gni_mem_segment_t seg[2] = { { addr_of(region), 4096 }, { addr_of(region + 4096), 4096 } };
	gni_mem_handle_t mh;
	OK(GNI_MemRegisterSegments(b.nic, seg, 1, b.rx_cq, GNI_MEM_READWRITE, (uint32_t)-1, &mh));
	/* The one segment is registered as GNI_MemRegister registers it: addressed by virtual
	 * address, remote events to its CQ, bounds checked. */
	fill(a.buf, 100, 9);
	gni_post_descriptor_t pd =
		descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 100, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	pd.remote_addr = addr_of(region + 1000);
	pd.remote_mem_hndl = mh;
	OK(GNI_PostFma(a.ep, &pd));
	EXPECT(!memcmp(region + 1000, a.buf, 100));
	expect_event(a.cq, 0, 1000);
	expect_event(b.rx_cq, 1, 0);
	pd.remote_addr = addr_of(region + 4096);
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM); /* outside the segment */
	OK(GNI_MemDeregister(b.nic, &mh));

	gni_mem_handle_t untouched = { 0x1111, 0x2222 };
	EXPECT_RC(GNI_MemRegisterSegments(b.nic, seg, 2, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &untouched),
		  GNI_RC_ILLEGAL_OP);
	EXPECT(untouched.qword1 == 0x1111 && untouched.qword2 == 0x2222);
	EXPECT_RC(GNI_MemRegisterSegments(b.nic, seg, 0, NULL, 0, (uint32_t)-1, &mh), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_MemRegisterSegments(b.nic, NULL, 1, NULL, 0, (uint32_t)-1, &mh), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_MemRegisterSegments(b.nic, seg, 1, NULL, 0, (uint32_t)-1, NULL), GNI_RC_INVALID_PARAM);
	gni_mem_segment_t empty = { addr_of(region), 0 };
	EXPECT_RC(GNI_MemRegisterSegments(b.nic, &empty, 1, NULL, 0, (uint32_t)-1, &mh), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_MemRegisterSegments(NULL, seg, 1, NULL, 0, (uint32_t)-1, &mh), GNI_RC_INVALID_PARAM);
}

static uint32_t word32(struct node *n, size_t off)
{
	uint32_t v;
	memcpy(&v, n->buf + off, 4);
	return v;
}

static void set_word32(struct node *n, size_t off, uint32_t v)
{
	memcpy(n->buf + off, &v, 4);
}

static void amo32_post(struct node *a, struct node *b, gni_fma_cmd_type_t cmd, uint64_t first, uint64_t second)
{
	gni_post_descriptor_t pd = descr(a, b, GNI_POST_AMO, 0, 64, 4, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = cmd;
	pd.first_operand = first;
	pd.second_operand = second;
	OK(GNI_PostFma(a->ep, &pd));
	expect_completion(a, &pd);
}

static void amo32(void)
{
	struct node a, b;
	pair(&a, &b);
	/* The word's neighbours (bytes 60..63 and 68..71) must never change. */
	set_word32(&b, 60, 0xaaaaaaaa);
	set_word32(&b, 68, 0xbbbbbbbb);
	set_word32(&b, 64, 40);
	set_word32(&a, 4, 0xcccccccc);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_FIADD_S, 0xffffffff00000002ULL, 0); /* high half ignored */
	EXPECT(word32(&b, 64) == 42 && word32(&a, 0) == 40 && word32(&a, 4) == 0xcccccccc);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_IADD_SC, (uint32_t)-50, 0);
	EXPECT((int32_t)word32(&b, 64) == -8);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_FIMAX_S, 5, 0); /* signed: 5 > -8 */
	EXPECT(word32(&b, 64) == 5 && (int32_t)word32(&a, 0) == -8);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_FCSWAP_S, 5, 77);
	EXPECT(word32(&b, 64) == 77 && word32(&a, 0) == 5);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_CSWAP_S, 5, 99); /* no match: unchanged */
	EXPECT(word32(&b, 64) == 77);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_FAX_S, 0xf0, 0x3);
	EXPECT(word32(&b, 64) == ((77u & 0xf0) ^ 0x3) && word32(&a, 0) == 77);
	/* Floating point, single precision, the operand passed as Cray's examples pass it. */
	float x = 1.5f, y = 2.25f, r;
	uint32_t bits;
	memcpy(&bits, &x, 4);
	set_word32(&b, 64, bits);
	memcpy(&bits, &y, 4);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_FPADD_S, bits, 0);
	bits = word32(&b, 64);
	memcpy(&r, &bits, 4);
	EXPECT(r == 3.75f);
	memcpy(&bits, &x, 4);
	amo32_post(&a, &b, GNI_FMA_ATOMIC2_FFPMIN_SC, bits, 0);
	bits = word32(&b, 64);
	memcpy(&r, &bits, 4);
	EXPECT(r == 1.5f);
	EXPECT(word32(&b, 60) == 0xaaaaaaaa && word32(&b, 68) == 0xbbbbbbbb);

	/* A 32-bit word is 4 bytes, 4-aligned. */
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_AMO, 0, 64, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = GNI_FMA_ATOMIC2_FIADD_S;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_INVALID_PARAM);
	pd.length = 4;
	pd.remote_addr += 2;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_ALIGNMENT_ERROR);
	pd.remote_addr += 2; /* 4-aligned, not 8: fine for a 32-bit word */
	OK(GNI_PostFma(a.ep, &pd));
	expect_completion(&a, &pd);

	/* The cached 64-bit forms act like the plain ones. */
	uint64_t v = 100;
	memcpy(b.buf + 128, &v, 8);
	pd = descr(&a, &b, GNI_POST_AMO, 8, 128, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = GNI_FMA_ATOMIC_FADD_C;
	pd.first_operand = 5;
	OK(GNI_PostFma(a.ep, &pd));
	expect_completion(&a, &pd);
	memcpy(&v, b.buf + 128, 8);
	EXPECT(v == 105);
	memcpy(&v, a.buf + 8, 8);
	EXPECT(v == 100);
	pd.amo_cmd = GNI_FMA_ATOMIC2_IMAX_C;
	pd.first_operand = 1000;
	OK(GNI_PostFma(a.ep, &pd));
	expect_completion(&a, &pd);
	memcpy(&v, b.buf + 128, 8);
	EXPECT(v == 1000);
}

/* A value no gni_fma_cmd_type_t has: GNI_RC_ILLEGAL_OP, nothing moves, one message. */
static void amo_unknown(void)
{
	struct node a, b;
	pair(&a, &b);
	set_word32(&b, 64, 40);
	gni_post_descriptor_t pd = descr(&a, &b, GNI_POST_AMO, 0, 64, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = (gni_fma_cmd_type_t)0x0ff;
	pd.first_operand = 1;
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_ILLEGAL_OP);
	pd.amo_cmd = (gni_fma_cmd_type_t)0x241; /* a 32-bit form with bit 0 set */
	EXPECT_RC(GNI_PostFma(a.ep, &pd), GNI_RC_ILLEGAL_OP);
	EXPECT(word32(&b, 64) == 40);
	expect_no_event(a.cq);
}

/* Two CDMs, each attached to a NIC handle of its own (in a job both at the node's address): an
 * endpoint takes only a CQ of its own NIC handle, as uGNI's GNI_EpCreate does. Prints both
 * addresses, for the test to see whether they tell the NICs apart. */
static void cq_of_another_nic(void)
{
	struct node a, b;
	node_init(&a, 0, 0);
	node_init(&b, 1000, 0);
	printf("addresses %u %u\n", a.addr, b.addr);
	gni_cq_handle_t other;
	OK(GNI_CqCreate(b.nic, 16, 0, GNI_CQ_NOBLOCK, NULL, NULL, &other));
	gni_ep_handle_t ep = NULL;
	EXPECT_RC(GNI_EpCreate(a.nic, other, &ep), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_EpCreate(a.nic, b.cq, &ep), GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_EpCreate(b.nic, a.cq, &ep), GNI_RC_INVALID_PARAM);
	EXPECT(ep == NULL);
	/* The refused creates left no endpoint on the CQ. */
	OK(GNI_CqDestroy(other));
	OK(GNI_EpCreate(a.nic, a.cq, &ep));
	OK(GNI_EpDestroy(ep));
}

/* As cq_of_another_nic, for a registration's dst_cq: GNI_MemRegister and GNI_MemRegisterSegments
 * take only a CQ of the NIC handle they register on, and a refused one leaves the handle as it was. */
static void mem_cq_of_another_nic(void)
{
	struct node a, b;
	node_init(&a, 0, 0);
	node_init(&b, 1000, 0);
	printf("addresses %u %u\n", a.addr, b.addr);
	unsigned char *region = aligned_alloc(4096, 4096);
	EXPECT(region != NULL);
	gni_mem_segment_t seg = { addr_of(region), 4096 };
	gni_mem_handle_t mh = { 0x1111, 0x2222 };
	EXPECT_RC(GNI_MemRegister(a.nic, addr_of(region), 4096, b.rx_cq, GNI_MEM_READWRITE, (uint32_t)-1, &mh),
		  GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_MemRegister(b.nic, addr_of(region), 4096, a.cq, GNI_MEM_READWRITE, (uint32_t)-1, &mh),
		  GNI_RC_INVALID_PARAM);
	EXPECT_RC(GNI_MemRegisterSegments(a.nic, &seg, 1, b.rx_cq, GNI_MEM_READWRITE, (uint32_t)-1, &mh),
		  GNI_RC_INVALID_PARAM);
	EXPECT(mh.qword1 == 0x1111 && mh.qword2 == 0x2222);
	/* Its own NIC's CQ, or none, is taken. */
	OK(GNI_MemRegister(a.nic, addr_of(region), 4096, a.rx_cq, GNI_MEM_READWRITE, (uint32_t)-1, &mh));
	OK(GNI_MemDeregister(a.nic, &mh));
	OK(GNI_MemRegisterSegments(b.nic, &seg, 1, NULL, GNI_MEM_READWRITE, (uint32_t)-1, &mh));
	OK(GNI_MemDeregister(b.nic, &mh));
	free(region);
}

int main(int argc, char **argv)
{
	static const struct scenario scenarios[] = {
		{ "names", names },	{ "event_data", event_data }, { "cq_error", cq_error },
		{ "device", device },	{ "ptag_job", ptag_job },     { "ptag_none", ptag_none },
		{ "segments", segments }, { "amo32", amo32 },	      { "amo_unknown", amo_unknown },
		{ "cq_of_another_nic", cq_of_another_nic }, { "mem_cq_of_another_nic", mem_cq_of_another_nic },
	};
	return run_scenario("gni_surface_check", scenarios, sizeof scenarios / sizeof scenarios[0], argc, argv);
}
