/* sim_check: transfers between the two NICs of one process (A = first attached, B = second) over
 * the emulator, for the simulator-backed mode (AAR_EMU_SIM). For each command it prints the change
 * of the emulator's clock (aar_emu_clock_ns) and of the five NIC counters:
 *
 *   step <cmd> <size> <mode> <count> <dt_ns> <req_flits> <req_stalled> <rsp_latency> <rsp_packets> <rsp_stalled>
 *
 * Commands, run in argv order:
 *   put SIZE MODE COUNT     COUNT RDMA PUTs of SIZE bytes from A to B, routing MODE (0x hex or decimal)
 *   back SIZE MODE COUNT    the same from B to A
 *   get SIZE MODE COUNT     COUNT RDMA GETs of SIZE bytes by A from B
 *   smsg SIZE MODE COUNT    COUNT short messages of SIZE bytes from A to B, A's SMSG mode set to MODE
 *   dput SIZE ROUTING COUNT COUNT dmapp_puts of SIZE bytes from PE 0 (A's NIC) to PE 1 (B's), the
 *                           thread's PUT routing attribute set to ROUTING (a dmapp_routing_type_t)
 *   dget SIZE ROUTING COUNT the same with dmapp_get, PE 1 to PE 0, GET routing ROUTING
 *   freeze 0|1              aar_emu_counters_freeze
 * Every transfer's bytes are checked where they land (PE 1's by the dgets that follow dputs, against
 * a copy of what was put). Prints "clock <ns>" first and last. */
#include "dmapp.h"
#include "emu_test.h"

#define DOK(call) EXPECT((call) == DMAPP_RC_SUCCESS)

#define SIM_BUF (4u << 20)

struct big {
	unsigned char *buf;
	gni_mem_handle_t mh;
};

static void big_init(struct node *n, struct big *b)
{
	b->buf = aligned_alloc(4096, SIM_BUF);
	EXPECT(b->buf != NULL);
	memset(b->buf, 0, SIM_BUF);
	OK(GNI_MemRegister(n->nic, addr_of(b->buf), SIM_BUF, n->rx_cq, GNI_MEM_READWRITE, (uint32_t)-1, &b->mh));
}

static void rdma(struct node *from, struct big *fb, struct big *tb, gni_post_type_t type,
		 uint64_t size, uint16_t mode, unsigned seed)
{
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = type;
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
	pd.dlvr_mode = mode;
	pd.local_addr = addr_of(fb->buf);
	pd.local_mem_hndl = fb->mh;
	pd.remote_addr = addr_of(tb->buf);
	pd.remote_mem_hndl = tb->mh;
	pd.length = size;
	unsigned char *src = type == GNI_POST_RDMA_PUT ? fb->buf : tb->buf;
	unsigned char *dst = type == GNI_POST_RDMA_PUT ? tb->buf : fb->buf;
	fill(src, size, seed);
	memset(dst, 0, size);
	OK(GNI_PostRdma(from->ep, &pd));
	expect_completion(from, &pd);
	EXPECT(!memcmp(src, dst, size));
}

int main(int argc, char **argv)
{
	struct node a, b;
	struct big ab, bb;
	node_init(&a, 0, 0);
	node_init(&b, 1, 0);
	connect_nodes(&a, &b);
	big_init(&a, &ab);
	big_init(&b, &bb);

	/* SMSG mailboxes, A -> B. */
	gni_smsg_attr_t aa, ba;
	smsg_attr(&a, &aa, 4, 1024);
	smsg_attr(&b, &ba, 4, 1024);
	OK(GNI_SmsgInit(a.ep, &aa, &ba));
	OK(GNI_SmsgInit(b.ep, &ba, &aa));

	/* DMAPP: PE 0 is this process on A's NIC, PE 1 is on B's. */
	dmapp_rma_attrs_t attrs = { 512, 4096, DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_ADAPTIVE, 1 };
	dmapp_jobinfo_t job;
	DOK(dmapp_init(&attrs, &attrs));
	DOK(dmapp_get_jobinfo(&job));
	EXPECT(job.sheap_seg.len >= SIM_BUF);
	unsigned char *heap = job.sheap_seg.addr, *pe1 = calloc(1, SIM_BUF);
	EXPECT(pe1 != NULL);

	printf("clock %llu\n", aar_emu_clock_ns());
	unsigned seed = 1;
	for (int i = 1; i < argc; i++) {
		const char *cmd = argv[i];
		if (!strcmp(cmd, "freeze") && i + 1 < argc) {
			aar_emu_counters_freeze(atoi(argv[++i]));
			continue;
		}
		EXPECT(i + 3 < argc);
		uint64_t size = strtoull(argv[i + 1], NULL, 0);
		uint16_t mode = (uint16_t)strtoul(argv[i + 2], NULL, 0);
		long count = strtol(argv[i + 3], NULL, 0);
		EXPECT(size > 0 && size <= SIM_BUF && count > 0);
		long long c0[5], c1[5];
		aar_emu_counters_get(c0);
		unsigned long long t0 = aar_emu_clock_ns();
		for (long k = 0; k < count; k++, seed++) {
			if (!strcmp(cmd, "put"))
				rdma(&a, &ab, &bb, GNI_POST_RDMA_PUT, size, mode, seed);
			else if (!strcmp(cmd, "back"))
				rdma(&b, &bb, &ab, GNI_POST_RDMA_PUT, size, mode, seed);
			else if (!strcmp(cmd, "get"))
				rdma(&a, &ab, &bb, GNI_POST_RDMA_GET, size, mode, seed);
			else if (!strcmp(cmd, "smsg")) {
				EXPECT(size <= 1024);
				OK(GNI_SmsgSetDeliveryMode(a.nic, mode));
				fill(ab.buf, size, seed);
				OK(GNI_SmsgSend(a.ep, NULL, 0, ab.buf, (uint32_t)size, (uint32_t)k));
				gni_cq_entry_t ev;
				void *msg;
				OK(GNI_CqGetEvent(a.cq, &ev));
				OK(GNI_CqGetEvent(b.rx_cq, &ev));
				OK(GNI_SmsgGetNext(b.ep, &msg));
				EXPECT(!memcmp(msg, ab.buf, size));
				OK(GNI_SmsgRelease(b.ep));
			} else if (!strcmp(cmd, "dput") || !strcmp(cmd, "dget")) {
				int put = cmd[1] == 'p';
				DOK(dmapp_get_rma_attrs(&attrs));
				*(put ? &attrs.put_relaxed_ordering : &attrs.get_relaxed_ordering) = (uint8_t)mode;
				DOK(dmapp_set_rma_attrs(&attrs, NULL));
				if (put) {
					fill(ab.buf, size, seed);
					DOK(dmapp_put(heap, &job.sheap_seg, 1, ab.buf, size, DMAPP_BYTE));
					memcpy(pe1, ab.buf, size);
				} else {
					memset(ab.buf, 0, size);
					DOK(dmapp_get(ab.buf, heap, &job.sheap_seg, 1, size, DMAPP_BYTE));
					EXPECT(!memcmp(ab.buf, pe1, size));
				}
			} else {
				fprintf(stderr, "sim_check: unknown command %s\n", cmd);
				return 2;
			}
		}
		unsigned long long t1 = aar_emu_clock_ns();
		aar_emu_counters_get(c1);
		printf("step %s %llu %#x %ld %llu", cmd, (unsigned long long)size, mode, count, t1 - t0);
		for (int j = 0; j < 5; j++)
			printf(" %lld", c1[j] - c0[j]);
		printf("\n");
		i += 3;
	}
	printf("clock %llu\n", aar_emu_clock_ns());
	return 0;
}
