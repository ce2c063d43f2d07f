/* Reads the emulated NIC counters through the real libpapi (opened at run time, as the shim does)
 * around a fixed sequence of transfers (uGNI posts, then DMAPP calls), and prints the change of the five counters after each
 * step as "step <name> <req_flits> <req_stalled> <rsp_latency> <rsp_packets> <rsp_stalled>".
 * The Rust test compares these with the timing model's predictions.
 *
 *   papi_counters [--set-network]   (--set-network: profile 1.5/1.0/2/40 through the control API;
 *                                    otherwise the environment's profile applies) */
#include <dlfcn.h>
#include <papi.h> /* constants and prototypes: the functions are dlopen()ed, as the shim does */

#include "dmapp.h"
#include "emu_test.h"

#define DOK(call) EXPECT((call) == DMAPP_RC_SUCCESS)

/* Sets the calling thread's DMAPP routing for PUTs (and AMOs) and GETs. */
static void dmapp_routing(uint8_t put, uint8_t get)
{
	dmapp_rma_attrs_t a;
	DOK(dmapp_get_rma_attrs(&a));
	a.put_relaxed_ordering = put;
	a.get_relaxed_ordering = get;
	DOK(dmapp_set_rma_attrs(&a, NULL));
}

static const char *events[5] = {
	"sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS",
	"sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_STALLED",
	"sde:::aries::AR_NIC_ORB_PRF_NET_RSP_TRACK_2",
	"sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_NET_TRACK",
	"sde:::aries::AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_STALLED",
};

/* Typed from papi.h's own prototypes, so these cannot disagree with the library's. */
static __typeof__(PAPI_get_opt) *papi_get_opt;
static __typeof__(PAPI_library_init) *papi_library_init;
static __typeof__(PAPI_create_eventset) *papi_create_eventset;
static __typeof__(PAPI_add_named_event) *papi_add_named_event;
static __typeof__(PAPI_start) *papi_start;
static __typeof__(PAPI_read) *papi_read;

static int eventset = PAPI_NULL;
static long long last[5];

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		fprintf(stderr, "papi_counters: %s missing from libpapi\n", name);
		exit(1);
	}
	return p;
}

static void papi_open(void)
{
	void *lib = dlopen("libpapi.so.7.0", RTLD_NOW | RTLD_GLOBAL);
	if (!lib)
		lib = dlopen("libpapi.so", RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "papi_counters: cannot open libpapi: %s\n", dlerror());
		exit(1);
	}
	*(void **)&papi_get_opt = sym(lib, "PAPI_get_opt");
	*(void **)&papi_library_init = sym(lib, "PAPI_library_init");
	*(void **)&papi_create_eventset = sym(lib, "PAPI_create_eventset");
	*(void **)&papi_add_named_event = sym(lib, "PAPI_add_named_event");
	*(void **)&papi_start = sym(lib, "PAPI_start");
	*(void **)&papi_read = sym(lib, "PAPI_read");
	int version = papi_get_opt(PAPI_LIB_VERSION, NULL);
	int want = version & (int)0xffff0000;
	EXPECT(version > 0 && papi_library_init(want) == want);
	EXPECT(papi_create_eventset(&eventset) == PAPI_OK);
	for (int i = 0; i < 5; i++) {
		int rc = papi_add_named_event(eventset, events[i]);
		if (rc != PAPI_OK) {
			fprintf(stderr, "papi_counters: PAPI_add_named_event(%s) = %d\n", events[i], rc);
			exit(1);
		}
	}
	EXPECT(papi_start(eventset) == PAPI_OK);
	EXPECT(papi_read(eventset, last) == PAPI_OK);
}

/* Prints the change since the previous step, and checks PAPI agrees with the control API. */
static void step(const char *name)
{
	long long now[5], direct[5];
	EXPECT(papi_read(eventset, now) == PAPI_OK);
	aar_emu_counters_get(direct);
	printf("step %s", name);
	for (int i = 0; i < 5; i++) {
		printf(" %lld", now[i] - last[i]);
		last[i] = now[i];
	}
	printf("\n");
	/* PAPI reports counts since PAPI_start; the counters started at 0 before any transfer. */
	static long long base[5];
	static int have_base;
	if (!have_base) {
		memcpy(base, direct, sizeof base);
		for (int i = 0; i < 5; i++)
			base[i] -= now[i];
		have_base = 1;
	}
	for (int i = 0; i < 5; i++)
		EXPECT(direct[i] - base[i] == now[i]);
}

static void put(struct node *a, struct node *b, gni_post_type_t type, uint64_t len, uint16_t mode)
{
	gni_post_descriptor_t pd = descr(a, b, type, 0, 0, len, GNI_CQMODE_SILENT);
	pd.dlvr_mode = mode;
	if (type == GNI_POST_AMO)
		pd.amo_cmd = GNI_FMA_ATOMIC_ADD;
	if (type == GNI_POST_RDMA_PUT || type == GNI_POST_RDMA_GET)
		OK(GNI_PostRdma(a->ep, &pd));
	else
		OK(GNI_PostFma(a->ep, &pd));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--set-network"))
		EXPECT(aar_emu_set_network(1.5, 1.0, 2.0, 40.0) == 0);
	EXPECT(aar_emu_set_network(-1.0, 1.0, 2.0, 40.0) == -1);

	struct node a, b;
	node_init(&a, 1, 0);
	node_init(&b, 2, 0);
	connect_nodes(&a, &b);
	papi_open();

	put(&a, &b, GNI_POST_FMA_PUT, 64, GNI_DLVMODE_ADAPTIVE0);
	step("put64_a0");
	put(&a, &b, GNI_POST_FMA_PUT, 64, GNI_DLVMODE_ADAPTIVE3);
	step("put64_a3");
	put(&a, &b, GNI_POST_RDMA_GET, 4096, GNI_DLVMODE_ADAPTIVE0);
	step("get4096_a0");
	put(&a, &b, GNI_POST_RDMA_PUT, 1000, GNI_DLVMODE_ADAPTIVE3 | GNI_DLVMODE_ORDERED_TAIL);
	step("put1000_a3_tail");
	put(&a, &b, GNI_POST_FMA_PUT, 64, GNI_DLVMODE_NMIN_HASH);
	step("put64_nmin");
	put(&a, &b, GNI_POST_AMO, 8, GNI_DLVMODE_ADAPTIVE2);
	step("amo8_a2");

	/* 100 bytes of SMSG on a NIC set to ADAPTIVE3. */
	gni_smsg_attr_t aa, ba;
	smsg_attr(&a, &aa, 4, 256);
	smsg_attr(&b, &ba, 4, 256);
	OK(GNI_SmsgInit(a.ep, &aa, &ba));
	OK(GNI_SmsgInit(b.ep, &ba, &aa));
	OK(GNI_SmsgSetDeliveryMode(a.nic, GNI_DLVMODE_ADAPTIVE3));
	OK(GNI_SmsgSend(a.ep, a.buf, 8, a.buf + 8, 92, 1));
	step("smsg100_a3");

	/* A chain: a 64-byte head and two 128-byte elements, ADAPTIVE0. */
	gni_ct_put_post_descriptor_t e[2];
	memset(e, 0, sizeof e);
	for (int i = 0; i < 2; i++) {
		e[i].next_descr = i == 0 ? &e[1] : NULL;
		e[i].ep_hndl = a.ep;
		e[i].length = 128;
		e[i].local_addr = addr_of(a.buf + 256 * (i + 1));
		e[i].remote_addr = addr_of(b.buf + 256 * (i + 1));
		e[i].remote_mem_hndl = b.mh;
	}
	gni_post_descriptor_t head = descr(&a, &b, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_SILENT);
	head.next_descr = &e[0];
	OK(GNI_CtPostFma(a.ep, &head));
	step("chain_64_2x128_a0");

	/* CQ writes carry only cqwrite_value: one packet each, whatever the descriptor's length
	 * (a field uGNI does not read for them), alone or chained. */
	gni_post_descriptor_t cqw = descr(&a, &b, GNI_POST_CQWRITE, 0, 0, 4096, GNI_CQMODE_SILENT);
	cqw.dlvr_mode = GNI_DLVMODE_ADAPTIVE2;
	cqw.cqwrite_value = 1;
	OK(GNI_PostCqWrite(a.ep, &cqw));
	gni_ct_cqw_post_descriptor_t ce = { NULL, a.ep, 2, b.mh };
	cqw.next_descr = &ce;
	OK(GNI_CtPostCqWrite(a.ep, &cqw));
	gni_cq_entry_t ev;
	for (int i = 0; i < 3; i++)
		OK(GNI_CqGetEvent(b.rx_cq, &ev));
	step("cqwrite_len4096_and_chain_of_2_a2");

	/* DMAPP from PE 0 to the other PEs: the same counters, in the routing attribute's mode. */
	dmapp_rma_attrs_t req = { 512, 4096, DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_ADAPTIVE, 1 }, act;
	dmapp_jobinfo_t job;
	DOK(dmapp_init(&req, &act));
	DOK(dmapp_get_jobinfo(&job));
	step("dmapp_init");
	void *heap = job.sheap_seg.addr;
	dmapp_seg_desc_t *seg = &job.sheap_seg;
	DOK(dmapp_put(heap, seg, 1, a.buf, 8, DMAPP_QW));
	step("dmapp_put64_ad");
	dmapp_routing(DMAPP_ROUTING_ADAPTIVE_3, DMAPP_ROUTING_ADAPTIVE_2);
	DOK(dmapp_put_nbi(heap, seg, 1, a.buf, 1000, DMAPP_BYTE));
	DOK(dmapp_gsync_wait());
	step("dmapp_put1000_a3");
	DOK(dmapp_get(a.buf, heap, seg, 2, 1024, DMAPP_DW));
	step("dmapp_get4096_a2");
	int64_t old;
	DOK(dmapp_afadd_qw(&old, heap, seg, 3, 1));
	step("dmapp_amo_a3");
	dmapp_pe_t pes[3] = { 1, 2, 3 };
	DOK(dmapp_put_ixpe(heap, seg, pes, 3, a.buf, 8, DMAPP_QW));
	step("dmapp_ixpe_3x64_a3");
	DOK(dmapp_iput(heap, seg, 1, a.buf, 2, 1, 16, DMAPP_QW));
	step("dmapp_iput128_a3");
	dmapp_routing(DMAPP_ROUTING_IN_ORDER, DMAPP_ROUTING_DETERMINISTIC);
	DOK(dmapp_put(heap, seg, 1, a.buf, 8, DMAPP_QW));
	DOK(dmapp_get(a.buf, heap, seg, 1, 8, DMAPP_QW));
	step("dmapp_put64_inorder_get64_nmin");

	/* Frozen: transfers leave the counters alone; injected values still show. */
	aar_emu_counters_freeze(1);
	put(&a, &b, GNI_POST_FMA_PUT, 4096, GNI_DLVMODE_ADAPTIVE0);
	step("frozen_put");
	aar_emu_counters_add(-3, 0, 0, 0, 7);
	step("injected");
	aar_emu_counters_freeze(0);
	put(&a, &b, GNI_POST_FMA_PUT, 64, GNI_DLVMODE_ADAPTIVE0);
	step("thawed_put64_a0");
	long long before[5];
	aar_emu_counters_get(before);
	aar_emu_counters_set(before[0] + 1000, before[1], before[2], before[3], before[4] + 1);
	step("set");
	return 0;
}
