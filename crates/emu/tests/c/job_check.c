/* One rank of a multi-process job of the emulator, as `aar run` starts them: the environment
 * gives PMI_RANK, PMI_SIZE, PMI_GNI_LOC_ADDR, PMI_GNI_COOKIE and AAR_EMU_JOB_DIR; the test gives
 * JOB_TEST_XCHG, a folder where the ranks exchange their NIC address, inst_id and memory handles
 * (a file per rank) and meet at barriers (a file per rank and barrier), as a program would with
 * PMI. One scenario per argv[1]; prints "PASS <scenario>" and exits 0, or exits non-zero with a
 * message on stderr at the first surprise. */
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emu_test.h"

struct peer_info {
	uint32_t addr, inst;
	uint64_t buf;
	gni_mem_handle_t mh;
	/* A second registration (the hostile scenario withdraws it). */
	uint64_t buf2;
	gni_mem_handle_t mh2;
};

static int rank, size;
static struct node me;
static struct peer_info peers[64];
static gni_ep_handle_t eps[64];
static unsigned char *buf2;
static gni_mem_handle_t mh2;

static int env_int(const char *name)
{
	const char *v = getenv(name);
	if (!v) {
		fprintf(stderr, "%s is not set\n", name);
		exit(2);
	}
	return (int)strtol(v, NULL, 0);
}

static const char *xchg(void)
{
	const char *d = getenv("JOB_TEST_XCHG");
	EXPECT(d != NULL);
	return d;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Writes `len` bytes to the exchange file `name`, whole (written aside, then renamed). */
static void publish(const char *name, const void *data, size_t len)
{
	char path[4096], tmp[4200];
	snprintf(path, sizeof path, "%s/%s", xchg(), name);
	snprintf(tmp, sizeof tmp, "%s.partial", path);
	FILE *f = fopen(tmp, "wb");
	EXPECT(f != NULL);
	EXPECT(fwrite(data, 1, len, f) == len);
	EXPECT(fclose(f) == 0);
	EXPECT(rename(tmp, path) == 0);
}

/* Reads the exchange file `name` once it exists. */
static void fetch(const char *name, void *data, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", xchg(), name);
	for (;;) {
		FILE *f = fopen(path, "rb");
		if (f) {
			EXPECT(fread(data, 1, len, f) == len);
			fclose(f);
			return;
		}
		sleep_ms(2);
	}
}

static void barrier(int n)
{
	char name[64];
	char dummy = 0;
	snprintf(name, sizeof name, "barrier-%d-%d", n, rank);
	publish(name, &dummy, 1);
	for (int r = 0; r < size; r++) {
		snprintf(name, sizeof name, "barrier-%d-%d", n, r);
		fetch(name, &dummy, 1);
	}
}

/* The endpoint to rank p: bound to p's NIC with a remote_id that is NOT p's inst_id (only the
 * CQ events carry it; the target of a post is the NIC address and the memory handle). */
static uint32_t ep_id(int p)
{
	return (uint32_t)(rank * 100 + p);
}

/* Sets this rank up (CDM inst_id rank*1000, its NIC, CQs, a registered buffer and a second
 * one), publishes what the others need and reads theirs. */
static void setup(void)
{
	rank = env_int("PMI_RANK");
	size = env_int("PMI_SIZE");
	EXPECT(size <= 64);
	node_init(&me, (uint32_t)rank * 1000, 0);
	uint32_t addr, cpu;
	OK(GNI_CdmGetNicAddress(0, &addr, &cpu));
	EXPECT(me.addr == (uint32_t)env_int("PMI_GNI_LOC_ADDR"));
	EXPECT(addr == me.addr);
	buf2 = aligned_alloc(4096, 8192);
	EXPECT(buf2 != NULL);
	memset(buf2, 0x5a, 8192);
	OK(GNI_MemRegister(me.nic, addr_of(buf2), 8192, me.rx_cq, GNI_MEM_READWRITE, (uint32_t)-1, &mh2));
	struct peer_info mine = {me.addr, me.inst, addr_of(me.buf), me.mh, addr_of(buf2), mh2};
	char name[64];
	snprintf(name, sizeof name, "info-%d", rank);
	publish(name, &mine, sizeof mine);
	for (int p = 0; p < size; p++) {
		snprintf(name, sizeof name, "info-%d", p);
		fetch(name, &peers[p], sizeof peers[p]);
		OK(GNI_EpCreate(me.nic, me.cq, &eps[p]));
		OK(GNI_EpBind(eps[p], peers[p].addr, ep_id(p)));
	}
}

/* A descriptor from me.buf+loff to rank p's buffer at roff. */
static gni_post_descriptor_t to(int p, gni_post_type_t type, uint64_t loff, uint64_t roff, uint64_t len,
				uint16_t cq_mode)
{
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = type;
	pd.cq_mode = cq_mode;
	pd.local_addr = addr_of(me.buf + loff);
	pd.local_mem_hndl = me.mh;
	pd.remote_addr = peers[p].buf + roff;
	pd.remote_mem_hndl = peers[p].mh;
	pd.length = len;
	return pd;
}

/* The post's local event: on me.cq, naming the descriptor, carrying the endpoint's remote_id. */
static void completed(gni_post_descriptor_t *pd, int p)
{
	gni_cq_entry_t ev;
	gni_post_descriptor_t *done = NULL;
	OK(GNI_CqGetEvent(me.cq, &ev));
	EXPECT(GNI_CQ_GET_SOURCE(ev) == 0 && GNI_CQ_STATUS_OK(ev));
	EXPECT(GNI_CQ_GET_INST_ID(ev) == ep_id(p));
	OK(GNI_GetCompleted(me.cq, ev, &done));
	EXPECT(done == pd);
}

/* Each block is 4K: rank r writes its block at offset r*4K of its successor's buffer. */
#define BLOCK 4096

static void rma(void)
{
	setup();
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	/* FMA PUT with a remote event, then RDMA PUT, each into the successor's buffer. */
	fill(me.buf + 32768, BLOCK, (unsigned)rank + 1);
	gni_post_descriptor_t pd = to(next, GNI_POST_FMA_PUT, 32768, (uint64_t)rank * BLOCK, 2048,
				      GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostFma(eps[next], &pd));
	completed(&pd, next);
	pd = to(next, GNI_POST_RDMA_PUT, 32768 + 2048, (uint64_t)rank * BLOCK + 2048, 2048,
		GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostRdma(eps[next], &pd));
	completed(&pd, next);
	/* PUT with a sync flag: the flag after the data. */
	pd = to(next, GNI_POST_FMA_PUT_W_SYNCFLAG, 32768, 16384 + (uint64_t)rank * 64, 32, GNI_CQMODE_SILENT);
	pd.sync_flag_addr = peers[next].buf + 24576 + (uint64_t)rank * 8;
	pd.sync_flag_value = 0xf1a9000000000000ULL | (uint64_t)rank;
	OK(GNI_PostFma(eps[next], &pd));
	expect_no_event(me.cq);

	/* The predecessor's two remote events, sleeping on the CQ until they come. */
	for (int i = 0; i < 2; i++) {
		gni_cq_entry_t ev;
		OK(GNI_CqWaitEvent(me.rx_cq, (uint64_t)-1, &ev));
		EXPECT(GNI_CQ_GET_SOURCE(ev) == 1 && GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_POST);
		EXPECT(GNI_CQ_GET_INST_ID(ev) == peers[prev].inst);
	}
	unsigned char want[BLOCK];
	fill(want, BLOCK, (unsigned)prev + 1);
	EXPECT(!memcmp(me.buf + (size_t)prev * BLOCK, want, BLOCK));
	/* Poll for the flag, as programs do: once it is there, so is the data before it. */
	volatile uint64_t *flag_word = (volatile uint64_t *)(me.buf + 24576 + (size_t)prev * 8);
	while (*flag_word != (0xf1a9000000000000ULL | (uint64_t)prev))
		sleep_ms(1);
	EXPECT(!memcmp(me.buf + 16384 + (size_t)prev * 64, want, 32));
	uint64_t flag;
	barrier(1);

	/* FMA GET and RDMA GET of what the successor received from us. */
	memset(me.buf + 40960, 0, 8192);
	pd = to(next, GNI_POST_FMA_GET, 40960, (uint64_t)rank * BLOCK, 1024, GNI_CQMODE_GLOBAL_EVENT);
	OK(GNI_PostFma(eps[next], &pd));
	completed(&pd, next);
	pd = to(next, GNI_POST_RDMA_GET, 40960 + 1024, (uint64_t)rank * BLOCK + 1024, BLOCK - 1024,
		GNI_CQMODE_LOCAL_EVENT);
	OK(GNI_PostRdma(eps[next], &pd));
	completed(&pd, next);
	EXPECT(!memcmp(me.buf + 40960, me.buf + 32768, BLOCK));
	/* GET with a flag: the local flag after the data. */
	pd = to(next, GNI_POST_FMA_GET_W_FLAG, 49152, (uint64_t)rank * BLOCK, 64, GNI_CQMODE_SILENT);
	pd.sync_flag_addr = addr_of(me.buf + 49152 + 64);
	pd.sync_flag_value = 77;
	OK(GNI_PostFma(eps[next], &pd));
	EXPECT(!memcmp(me.buf + 49152, me.buf + 32768, 64));
	memcpy(&flag, me.buf + 49152 + 64, 8);
	EXPECT(flag == 77);

	/* A chained FMA PUT: head and two elements, one completion. */
	gni_ct_put_post_descriptor_t e2 = {NULL, eps[next], 16, addr_of(me.buf + 32768 + 100), peers[next].buf2 + 300,
					    peers[next].mh2};
	gni_ct_put_post_descriptor_t e1 = {&e2, eps[next], 8, addr_of(me.buf + 32768 + 50), peers[next].buf2 + 200,
					    peers[next].mh2};
	pd = to(next, GNI_POST_FMA_PUT, 32768, 0, 0, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_addr = peers[next].buf2 + 100;
	pd.remote_mem_hndl = peers[next].mh2;
	pd.length = 4;
	pd.next_descr = &e1;
	OK(GNI_CtPostFma(eps[next], &pd));
	completed(&pd, next);
	expect_no_event(me.cq);
	barrier(2);
	unsigned char from_prev[BLOCK];
	fill(from_prev, BLOCK, (unsigned)prev + 1);
	EXPECT(!memcmp(buf2 + 100, from_prev, 4) && !memcmp(buf2 + 200, from_prev + 50, 8) &&
	       !memcmp(buf2 + 300, from_prev + 100, 16));
	EXPECT(buf2[99] == 0x5a && buf2[104] == 0x5a && buf2[316] == 0x5a);
	barrier(3);

	/* Loop back inside the rank: a PUT with a remote event and an AMO on its own memory. */
	gni_ep_handle_t self;
	OK(GNI_EpCreate(me.nic, me.cq, &self));
	OK(GNI_EpBind(self, me.addr, me.inst));
	gni_post_descriptor_t lp;
	memset(&lp, 0, sizeof lp);
	lp.type = GNI_POST_FMA_PUT;
	lp.cq_mode = GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
	lp.local_addr = addr_of(me.buf + 32768);
	lp.local_mem_hndl = me.mh;
	lp.remote_addr = addr_of(me.buf + 57344);
	lp.remote_mem_hndl = me.mh;
	lp.length = 64;
	OK(GNI_PostFma(self, &lp));
	EXPECT(!memcmp(me.buf + 57344, me.buf + 32768, 64));
	gni_cq_entry_t ev;
	OK(GNI_CqGetEvent(me.cq, &ev));
	OK(GNI_CqWaitEvent(me.rx_cq, (uint64_t)-1, &ev));
	EXPECT(GNI_CQ_GET_SOURCE(ev) == 1 && GNI_CQ_GET_INST_ID(ev) == me.inst);
	memset(me.buf + 57344, 0, 8);
	lp.type = GNI_POST_AMO;
	lp.cq_mode = GNI_CQMODE_SILENT;
	lp.amo_cmd = GNI_FMA_ATOMIC_ADD;
	lp.first_operand = 41;
	lp.length = 8;
	OK(GNI_PostFma(self, &lp));
	OK(GNI_PostFma(self, &lp));
	uint64_t sum;
	memcpy(&sum, me.buf + 57344, 8);
	EXPECT(sum == 82);
	expect_no_event(me.cq);
}

/* Every rank adds 1 to rank 0's counter ROUNDS times, all at once, fetching the old value. */
#define ROUNDS 300

static void amo(void)
{
	setup();
	barrier(1);
	uint64_t last = 0;
	for (int i = 0; i < ROUNDS; i++) {
		gni_post_descriptor_t pd = to(0, GNI_POST_AMO, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT);
		pd.amo_cmd = GNI_FMA_ATOMIC_FADD;
		pd.first_operand = 1;
		pd.local_addr = addr_of(me.buf + 8192);
		OK(GNI_PostFma(eps[0], &pd));
		completed(&pd, 0);
		uint64_t old;
		memcpy(&old, me.buf + 8192, 8);
		EXPECT(old < (uint64_t)size * ROUNDS);
		EXPECT(i == 0 || old > last);
		last = old;
	}
	/* A compare-and-swap race on rank 0's second word: exactly one rank wins. */
	gni_post_descriptor_t pd = to(0, GNI_POST_AMO, 0, 8, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = GNI_FMA_ATOMIC2_FCSWAP;
	pd.first_operand = 0;
	pd.second_operand = (uint64_t)rank + 1;
	pd.local_addr = addr_of(me.buf + 8192);
	OK(GNI_PostFma(eps[0], &pd));
	completed(&pd, 0);
	uint64_t seen;
	memcpy(&seen, me.buf + 8192, 8);
	char name[32];
	snprintf(name, sizeof name, "seen-%d", rank);
	publish(name, &seen, 8);
	barrier(2);
	if (rank == 0) {
		uint64_t total, winner;
		memcpy(&total, me.buf, 8);
		memcpy(&winner, me.buf + 8, 8);
		EXPECT(total == (uint64_t)size * ROUNDS);
		/* Exactly one rank saw 0 and swapped in its number; the others saw that number. */
		int zeros = 0;
		for (int r = 0; r < size; r++) {
			snprintf(name, sizeof name, "seen-%d", r);
			fetch(name, &seen, 8);
			if (seen == 0) {
				zeros++;
				EXPECT(winner == (uint64_t)r + 1);
			} else {
				EXPECT(seen == winner);
			}
		}
		EXPECT(zeros == 1);
	}
	barrier(3);
}

/* Each rank writes a CQ entry to its successor's CQ (the one its registration names). */
static void cqwrite(void)
{
	setup();
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = GNI_POST_CQWRITE;
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
	pd.remote_mem_hndl = peers[next].mh;
	pd.cqwrite_value = 0xc0ffee000000ULL | (uint64_t)rank;
	OK(GNI_PostCqWrite(eps[next], &pd));
	completed(&pd, next);
	gni_cq_entry_t ev;
	OK(GNI_CqWaitEvent(me.rx_cq, (uint64_t)-1, &ev));
	EXPECT(GNI_CQ_GET_SOURCE(ev) == 1);
	EXPECT(GNI_CQ_GET_DATA(ev) == (0xc0ffee000000ULL | (uint64_t)prev));
	barrier(1);

	/* A chained CQ write: the head and two elements, each an event on the successor's CQ. */
	gni_ct_cqw_post_descriptor_t c2 = {NULL, eps[next], 0xbb0000ULL | (uint64_t)rank, peers[next].mh};
	gni_ct_cqw_post_descriptor_t c1 = {&c2, eps[next], 0xaa0000ULL | (uint64_t)rank, peers[next].mh2};
	pd.cqwrite_value = 0x990000ULL | (uint64_t)rank;
	pd.next_descr = &c1;
	OK(GNI_CtPostCqWrite(eps[next], &pd));
	completed(&pd, next);
	const uint64_t want[3] = {0x990000, 0xaa0000, 0xbb0000};
	for (int i = 0; i < 3; i++) {
		OK(GNI_CqWaitEvent(me.rx_cq, (uint64_t)-1, &ev));
		EXPECT(GNI_CQ_GET_DATA(ev) == (want[i] | (uint64_t)prev));
	}
	barrier(2);
	expect_no_event(me.rx_cq);
}

static double seconds(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/* Rank 1's small CQ: a wait sleeps until rank 0's event comes, a wait with nothing to come
 * times out, and remote events beyond its size overrun it: reported once, by GNI_CqGetEvent or
 * GNI_CqWaitEvent, with GNI_RC_ERROR_RESOURCE and an entry whose GNI_CQ_OVERRUN is set (what
 * programs written for uGNI test), then the events it kept. */
static void overrun(void)
{
	setup();
	EXPECT(size == 2);
	gni_cq_handle_t small;
	gni_mem_handle_t mh;
	OK(GNI_CqCreate(me.nic, 4, 0, GNI_CQ_BLOCKING, NULL, NULL, &small));
	OK(GNI_MemRegister(me.nic, addr_of(me.buf + 4096), 4096, small, GNI_MEM_READWRITE, (uint32_t)-1, &mh));
	publish(rank ? "small-1" : "small-0", &mh, sizeof mh);
	gni_mem_handle_t theirs;
	fetch(rank ? "small-0" : "small-1", &theirs, sizeof theirs);
	gni_cq_entry_t ev;
	if (rank == 1) {
		EXPECT_RC(GNI_CqWaitEvent(small, 30, &ev), GNI_RC_TIMEOUT);
		barrier(1);
		struct rusage r0, r1;
		struct timeval w0, w1;
		getrusage(RUSAGE_SELF, &r0);
		gettimeofday(&w0, NULL);
		OK(GNI_CqWaitEvent(small, (uint64_t)-1, &ev));
		getrusage(RUSAGE_SELF, &r1);
		gettimeofday(&w1, NULL);
		EXPECT(GNI_CQ_GET_SOURCE(ev) == 1 && GNI_CQ_GET_INST_ID(ev) == peers[0].inst);
		double wall = seconds(w1) - seconds(w0);
		double cpu = seconds(r1.ru_utime) - seconds(r0.ru_utime) + seconds(r1.ru_stime) - seconds(r0.ru_stime);
		/* Rank 0 waited 300 ms before posting: this rank slept through it. */
		EXPECT(wall >= 0.2);
		EXPECT(cpu < wall / 4);
		barrier(2);
		barrier(3);
		for (int round = 0; round < 2; round++) {
			ev = 0;
			EXPECT_RC(round ? GNI_CqWaitEvent(small, (uint64_t)-1, &ev) : GNI_CqGetEvent(small, &ev),
				  GNI_RC_ERROR_RESOURCE);
			EXPECT(GNI_CQ_OVERRUN(ev));
			char text[128];
			OK(GNI_CqErrorStr(ev, text, sizeof text));
			EXPECT(strstr(text, "overrun") != NULL);
			for (int i = 0; i < 4; i++) {
				OK(GNI_CqGetEvent(small, &ev));
				EXPECT(GNI_CQ_GET_SOURCE(ev) == 1 && !GNI_CQ_OVERRUN(ev));
			}
			EXPECT_RC(GNI_CqGetEvent(small, &ev), GNI_RC_NOT_DONE);
			barrier(4 + 2 * round);
			barrier(5 + 2 * round);
		}
	} else {
		barrier(1);
		sleep_ms(300);
		gni_post_descriptor_t pd = to(1, GNI_POST_FMA_PUT, 0, 4096, 8, GNI_CQMODE_REMOTE_EVENT);
		pd.remote_mem_hndl = theirs;
		OK(GNI_PostFma(eps[1], &pd));
		barrier(2);
		for (int i = 0; i < 6; i++)
			OK(GNI_PostFma(eps[1], &pd)); /* the sender does not see the overrun */
		barrier(3);
		barrier(4);
		for (int i = 0; i < 6; i++)
			OK(GNI_PostFma(eps[1], &pd)); /* again, for GNI_CqWaitEvent to report */
		barrier(5);
		barrier(6);
		barrier(7);
	}
}

/* Rank 0 attacks rank 1's memory with bad handles and addresses: every post fails with uGNI's
 * code and moves nothing; then a good post works and rank 1 carries on. */
static void hostile(void)
{
	setup();
	EXPECT(size == 2);
	if (rank == 1) {
		/* Withdraw the second registration: rank 0's copy of its handle is now stale. */
		OK(GNI_MemDeregister(me.nic, &mh2));
		barrier(1);
		barrier(2);
		for (int i = 0; i < 8192; i++)
			EXPECT(buf2[i] == 0x5a);
		for (int i = 0; i < 4096; i++)
			EXPECT(me.buf[i] == 0);
		expect_no_event(me.rx_cq);
		barrier(3);
		barrier(4);
		unsigned char want[64];
		fill(want, 64, 9);
		EXPECT(!memcmp(me.buf + 128, want, 64));
		gni_cq_entry_t ev;
		OK(GNI_CqWaitEvent(me.rx_cq, (uint64_t)-1, &ev));
		return;
	}
	barrier(1);
	fill(me.buf, 4096, 9);
	gni_post_descriptor_t pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_mem_hndl.qword2 ^= 1;
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* forged check */
	pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_mem_hndl.qword1 += 1;
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* another slot */
	pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_mem_hndl.qword1 ^= 0x7fULL << 24;
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* a rank not in the job */
	pd = to(1, GNI_POST_RDMA_PUT, 0, BUF_BYTES - 32, 64, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostRdma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* past the registration */
	pd = to(1, GNI_POST_RDMA_GET, 0, (uint64_t)-4096 - peers[1].buf, 64, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostRdma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* an address far outside */
	pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_addr = peers[1].buf2;
	pd.remote_mem_hndl = peers[1].mh2;
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* deregistered */
	pd = to(1, GNI_POST_FMA_GET, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	unsigned char *unregistered = aligned_alloc(4096, 4096);
	EXPECT(unregistered != NULL);
	pd.local_addr = addr_of(unregistered);
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* into unregistered memory */
	pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	pd.remote_mem_hndl = me.mh;
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_INVALID_PARAM); /* our own handle, their NIC */
	const char *foreign = getenv("JOB_TEST_FOREIGN");
	if (foreign) {
		/* A handle of the same rank and slot in another job. */
		FILE *f = fopen(foreign, "rb");
		EXPECT(f != NULL);
		EXPECT(fread(&pd.remote_mem_hndl, sizeof pd.remote_mem_hndl, 1, f) == 1);
		fclose(f);
		pd.remote_addr = peers[1].buf;
		EXPECT((pd.remote_mem_hndl.qword1 ^ peers[1].mh.qword1) == 0);
		EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_INVALID_PARAM);
	}
	/* Bound to a NIC that is not the handle's owner's. */
	gni_ep_handle_t wrong;
	OK(GNI_EpCreate(me.nic, me.cq, &wrong));
	OK(GNI_EpBind(wrong, peers[1].addr + 77, 1));
	pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostFma(wrong, &pd), GNI_RC_INVALID_PARAM);
	expect_no_event(me.cq);
	barrier(2);
	barrier(3);
	/* Rank 1 is unharmed: a good post reaches it. */
	pd = to(1, GNI_POST_FMA_PUT, 0, 128, 64, GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT);
	OK(GNI_PostFma(eps[1], &pd));
	completed(&pd, 1);
	barrier(4);
}

/* Endpoints bound to each peer's real inst_id, as datagrams need (they meet the endpoint bound
 * back to them). */
static gni_ep_handle_t dg_eps[64];

static void bind_to_peers(void)
{
	for (int p = 0; p < size; p++) {
		OK(GNI_EpCreate(me.nic, me.cq, &dg_eps[p]));
		OK(GNI_EpBind(dg_eps[p], peers[p].addr, peers[p].inst));
	}
}

struct hello {
	uint32_t rank, magic;
	gni_mem_handle_t mh;
};

/* Every pair of ranks trades a datagram; then rank 0 takes one from every other rank with
 * wildcard posts (an unbound endpoint), by id. */
static void dgram(void)
{
	setup();
	bind_to_peers();
	struct hello mine = {(uint32_t)rank, 0xda7a, me.mh}, theirs[64], got;
	gni_post_state_t st;
	uint32_t ra, ri;
	for (int p = 0; p < size; p++)
		if (p != rank)
			OK(GNI_EpPostData(dg_eps[p], &mine, sizeof mine, &theirs[p], sizeof theirs[p]));
	for (int p = 0; p < size; p++) {
		if (p == rank)
			continue;
		OK(GNI_EpPostDataWait(dg_eps[p], (uint32_t)-1, &st, &ra, &ri));
		EXPECT(st == GNI_POST_COMPLETED && ra == peers[p].addr && ri == peers[p].inst);
		EXPECT(theirs[p].rank == (uint32_t)p && theirs[p].magic == 0xda7a);
		EXPECT(!memcmp(&theirs[p].mh, &peers[p].mh, sizeof theirs[p].mh));
	}
	barrier(1);
	if (rank == 0) {
		gni_ep_handle_t any;
		int seen[64] = {0};
		OK(GNI_EpCreate(me.nic, me.cq, &any));
		for (int k = 1; k < size; k++) {
			OK(GNI_EpPostDataWId(any, &mine, sizeof mine, &got, sizeof got, 100 + (uint64_t)k));
			OK(GNI_EpPostDataWaitById(any, 100 + (uint64_t)k, (uint32_t)-1, &st, &ra, &ri));
			EXPECT(st == GNI_POST_COMPLETED && got.magic == 0xda7a && got.rank < (uint32_t)size);
			EXPECT(ra == peers[got.rank].addr && ri == peers[got.rank].inst);
			seen[got.rank]++;
		}
		for (int k = 1; k < size; k++)
			EXPECT(seen[k] == 1);
	} else {
		OK(GNI_EpPostDataWId(dg_eps[0], &mine, sizeof mine, &got, sizeof got, 7));
		OK(GNI_EpPostDataWaitById(dg_eps[0], 7, (uint32_t)-1, &st, &ra, &ri));
		EXPECT(st == GNI_POST_COMPLETED && got.rank == 0 && ra == peers[0].addr && ri == peers[0].inst);
	}
	barrier(2);
}

/* True once process `pid` has ended: gone, or a zombie (state Z or X in /proc/<pid>/stat). */
static int process_ended(pid_t pid)
{
	char path[64], stat[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(stat, 1, sizeof stat - 1, f);
	fclose(f);
	stat[n] = 0;
	const char *paren = strrchr(stat, ')');
	return paren && (paren[1] == ' ') && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Rank 1 posts a datagram to rank 0 and ends. Its datagram ended with it: rank 0's directed
 * post to rank 1 and its wildcard post stay pending (nobody collects a dead rank's bytes). */
static void dgdead(void)
{
	setup();
	EXPECT(size == 2);
	bind_to_peers();
	struct hello mine = {(uint32_t)rank, 0xda7a, me.mh}, got;
	memset(&got, 0, sizeof got);
	if (rank == 1) {
		OK(GNI_EpPostData(dg_eps[0], &mine, sizeof mine, &got, sizeof got));
		pid_t pid = getpid();
		publish("ended-1", &pid, sizeof pid);
		printf("PASS dgdead\n");
		exit(0);
	}
	pid_t pid;
	fetch("ended-1", &pid, sizeof pid);
	while (!process_ended(pid))
		sleep_ms(2);
	gni_post_state_t st;
	uint32_t ra, ri;
	OK(GNI_EpPostData(dg_eps[1], &mine, sizeof mine, &got, sizeof got));
	OK(GNI_EpPostDataTest(dg_eps[1], &st, &ra, &ri));
	EXPECT(st == GNI_POST_PENDING && got.magic == 0);
	OK(GNI_EpPostDataCancel(dg_eps[1]));
	gni_ep_handle_t any;
	OK(GNI_EpCreate(me.nic, me.cq, &any));
	OK(GNI_EpPostDataWId(any, &mine, sizeof mine, &got, sizeof got, 3));
	OK(GNI_EpPostDataTestById(any, 3, &st, &ra, &ri));
	EXPECT(st == GNI_POST_PENDING && got.magic == 0);
	OK(GNI_EpPostDataCancelById(any, 3));
}

/* SMSG between every pair of ranks, each mailbox's attributes traded by datagram: first the
 * credits (rank 0's fifth message to rank 1 waits for a release), then every rank streams
 * MSGS tagged messages to every other, receiving as it goes. */
#define MSGS 40
#define CREDITS 4
#define MAXSIZE 128

struct msg_header {
	uint32_t from, seq;
};

static void payload(unsigned char *p, int from, int to, int seq)
{
	for (int i = 0; i < 50; i++)
		p[i] = (unsigned char)(from * 31 + to * 7 + seq + i);
}

static void drain(gni_cq_handle_t cq, int *count)
{
	gni_cq_entry_t ev;
	while (GNI_CqGetEvent(cq, &ev) == GNI_RC_SUCCESS) {
		EXPECT(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_SMSG);
		(*count)++;
	}
}

static void smsg(void)
{
	setup();
	bind_to_peers();
	gni_smsg_attr_t mine[64], theirs[64];
	unsigned int bytes;
	for (int p = 0; p < size; p++) {
		memset(&mine[p], 0, sizeof mine[p]);
		mine[p].msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
		mine[p].mbox_maxcredit = CREDITS;
		mine[p].msg_maxsize = MAXSIZE;
		OK(GNI_SmsgBufferSizeNeeded(&mine[p], &bytes));
		EXPECT(bytes <= 1024);
		mine[p].msg_buffer = me.buf + 32768;
		mine[p].buff_size = 32768;
		mine[p].mem_hndl = me.mh;
		mine[p].mbox_offset = (uint32_t)p * 1024;
	}
	gni_post_state_t st;
	uint32_t ra, ri;
	for (int p = 0; p < size; p++)
		if (p != rank)
			OK(GNI_EpPostData(dg_eps[p], &mine[p], sizeof mine[p], &theirs[p], sizeof theirs[p]));
	for (int p = 0; p < size; p++) {
		if (p == rank)
			continue;
		OK(GNI_EpPostDataWait(dg_eps[p], (uint32_t)-1, &st, &ra, &ri));
		EXPECT(st == GNI_POST_COMPLETED && ri == peers[p].inst);
		EXPECT(theirs[p].mbox_offset == (uint32_t)rank * 1024);
		OK(GNI_SmsgInit(dg_eps[p], &mine[p], &theirs[p]));
	}
	barrier(1);

	struct msg_header h;
	unsigned char data[50];
	void *got;
	int local_events = 0, arrivals = 0;
	if (rank == 0) {
		for (int i = 0; i < CREDITS; i++) {
			h = (struct msg_header){0, (uint32_t)i};
			OK(GNI_SmsgSend(dg_eps[1], &h, sizeof h, NULL, 0, 900 + (uint32_t)i));
		}
		h.seq = CREDITS;
		EXPECT_RC(GNI_SmsgSend(dg_eps[1], &h, sizeof h, NULL, 0, 900), GNI_RC_NOT_DONE); /* no credit */
		barrier(2);
		barrier(3);
		OK(GNI_SmsgSend(dg_eps[1], &h, sizeof h, NULL, 0, 900 + CREDITS)); /* a release gave one back */
		drain(me.cq, &local_events);
		EXPECT(local_events == CREDITS + 1);
	} else if (rank == 1) {
		barrier(2);
		for (int i = 0; i < CREDITS; i++) {
			OK(GNI_SmsgGetNext(dg_eps[0], &got));
			memcpy(&h, got, sizeof h);
			EXPECT(h.from == 0 && h.seq == (uint32_t)i);
			EXPECT_RC(GNI_SmsgGetNext(dg_eps[0], &got), GNI_RC_SUCCESS); /* the same message again */
			OK(GNI_SmsgRelease(dg_eps[0]));
		}
		EXPECT_RC(GNI_SmsgGetNext(dg_eps[0], &got), GNI_RC_NOT_DONE);
		barrier(3);
		while (GNI_SmsgGetNext(dg_eps[0], &got) == GNI_RC_NOT_DONE)
			sleep_ms(1);
		memcpy(&h, got, sizeof h);
		EXPECT(h.seq == CREDITS);
		OK(GNI_SmsgRelease(dg_eps[0]));
		gni_cq_entry_t ev;
		for (int i = 0; i <= CREDITS; i++) {
			OK(GNI_CqWaitEvent(me.rx_cq, (uint64_t)-1, &ev));
			EXPECT(GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_SMSG && GNI_CQ_GET_SOURCE(ev) == 1);
			EXPECT(GNI_CQ_GET_INST_ID(ev) == peers[0].inst && GNI_CQ_GET_MSG_ID(ev) == 900 + (uint64_t)i);
		}
	} else {
		barrier(2);
		barrier(3);
	}
	barrier(4);
	local_events = 0;

	/* Every rank streams to every other. */
	int sent[64] = {0}, received[64] = {0}, done = 0, want = 2 * MSGS * (size - 1);
	while (done < want) {
		for (int p = 0; p < size; p++) {
			if (p == rank)
				continue;
			if (sent[p] < MSGS) {
				h = (struct msg_header){(uint32_t)rank, (uint32_t)sent[p]};
				payload(data, rank, p, sent[p]);
				gni_return_t rc = GNI_SmsgSendWTag(dg_eps[p], &h, sizeof h, data, sizeof data,
								   (uint32_t)sent[p], (uint8_t)(sent[p] % 3));
				EXPECT(rc == GNI_RC_SUCCESS || rc == GNI_RC_NOT_DONE);
				if (rc == GNI_RC_SUCCESS) {
					sent[p]++;
					done++;
				}
			}
			uint8_t tag = GNI_SMSG_ANY_TAG;
			if (GNI_SmsgGetNextWTag(dg_eps[p], &got, &tag) == GNI_RC_SUCCESS) {
				memcpy(&h, got, sizeof h);
				EXPECT(h.from == (uint32_t)p && h.seq == (uint32_t)received[p]);
				EXPECT(tag == (uint8_t)(received[p] % 3));
				payload(data, p, rank, received[p]);
				EXPECT(!memcmp((unsigned char *)got + sizeof h, data, sizeof data));
				OK(GNI_SmsgRelease(dg_eps[p]));
				received[p]++;
				done++;
			}
		}
		drain(me.cq, &local_events);
		drain(me.rx_cq, &arrivals);
	}
	drain(me.cq, &local_events);
	EXPECT(local_events == MSGS * (size - 1));
	barrier(5);
	drain(me.rx_cq, &arrivals);
	EXPECT(arrivals == MSGS * (size - 1));
}

/* The attributes of a mailbox of CREDITS messages at buf+32K+offset, registered under mh. */
static gni_smsg_attr_t mbox_attr(uint64_t buf, gni_mem_handle_t mh, uint32_t offset)
{
	gni_smsg_attr_t a;
	memset(&a, 0, sizeof a);
	a.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
	a.mbox_maxcredit = CREDITS;
	a.msg_maxsize = MAXSIZE;
	a.msg_buffer = (void *)(uintptr_t)(buf + 32768);
	a.buff_size = 32768;
	a.mem_hndl = mh;
	a.mbox_offset = offset;
	return a;
}

/* Rank 1 sets up two mailboxes towards rank 0 (endpoints x, then b), takes a message on b,
 * destroys x and sets b up again, as a program that reconnects does: b's mailbox is now kept by
 * another control in rank 1's file (x's, freed). Rank 0, which sent to b before, must send its
 * next message to where b now reads, not to b's old control that nobody reads any more. */
static void smsgreinit(void)
{
	setup();
	EXPECT(size == 2);
	struct msg_header h = {(uint32_t)rank, 0};
	void *got;
	if (rank == 0) {
		gni_smsg_attr_t mine = mbox_attr(addr_of(me.buf), me.mh, 0);
		gni_smsg_attr_t theirs = mbox_attr(peers[1].buf, peers[1].mh, 1024);
		OK(GNI_SmsgInit(eps[1], &mine, &theirs));
		barrier(1);
		OK(GNI_SmsgSend(eps[1], &h, sizeof h, NULL, 0, 1));
		barrier(2);
		barrier(3);
		h.seq = 1;
		OK(GNI_SmsgSend(eps[1], &h, sizeof h, NULL, 0, 2));
		barrier(4);
		return;
	}
	gni_smsg_attr_t theirs = mbox_attr(peers[0].buf, peers[0].mh, 0);
	gni_smsg_attr_t x_attr = mbox_attr(addr_of(me.buf), me.mh, 0);
	gni_smsg_attr_t b_attr = mbox_attr(addr_of(me.buf), me.mh, 1024);
	gni_ep_handle_t x, b;
	OK(GNI_EpCreate(me.nic, me.cq, &x));
	OK(GNI_EpBind(x, peers[0].addr, peers[0].inst));
	OK(GNI_EpCreate(me.nic, me.cq, &b));
	OK(GNI_EpBind(b, peers[0].addr, peers[0].inst));
	OK(GNI_SmsgInit(x, &x_attr, &theirs));
	OK(GNI_SmsgInit(b, &b_attr, &theirs));
	barrier(1);
	barrier(2);
	OK(GNI_SmsgGetNext(b, &got));
	memcpy(&h, got, sizeof h);
	EXPECT(h.from == 0 && h.seq == 0);
	OK(GNI_SmsgRelease(b));
	OK(GNI_EpDestroy(x));
	OK(GNI_SmsgInit(b, &b_attr, &theirs));
	barrier(3);
	barrier(4);
	/* Rank 0's send returned: the message is in b's mailbox, published. */
	OK(GNI_SmsgGetNext(b, &got));
	memcpy(&h, got, sizeof h);
	EXPECT(h.from == 0 && h.seq == 1);
	OK(GNI_SmsgRelease(b));
}

/* Rank 1 takes a message on endpoint e, destroys e and sets the same mailbox memory up again on
 * a new endpoint e2 (which takes e's freed control again). Rank 0's endpoint still names that
 * mailbox: its next send must fail (the endpoint it sent to is gone), not land in e2's mailbox
 * as if e2's peer had sent it. */
static void smsgstale(void)
{
	setup();
	EXPECT(size == 2);
	struct msg_header h = {(uint32_t)rank, 0};
	void *got;
	if (rank == 0) {
		gni_smsg_attr_t mine = mbox_attr(addr_of(me.buf), me.mh, 0);
		gni_smsg_attr_t theirs = mbox_attr(peers[1].buf, peers[1].mh, 0);
		OK(GNI_SmsgInit(eps[1], &mine, &theirs));
		barrier(1);
		OK(GNI_SmsgSend(eps[1], &h, sizeof h, NULL, 0, 1));
		barrier(2);
		barrier(3);
		h.seq = 1;
		EXPECT_RC(GNI_SmsgSend(eps[1], &h, sizeof h, NULL, 0, 2), GNI_RC_TRANSACTION_ERROR);
		barrier(4);
		return;
	}
	gni_smsg_attr_t theirs = mbox_attr(peers[0].buf, peers[0].mh, 0);
	gni_smsg_attr_t mine = mbox_attr(addr_of(me.buf), me.mh, 0);
	gni_ep_handle_t e, e2;
	OK(GNI_EpCreate(me.nic, me.cq, &e));
	OK(GNI_EpBind(e, peers[0].addr, peers[0].inst));
	OK(GNI_SmsgInit(e, &mine, &theirs));
	barrier(1);
	barrier(2);
	OK(GNI_SmsgGetNext(e, &got));
	memcpy(&h, got, sizeof h);
	EXPECT(h.from == 0 && h.seq == 0);
	OK(GNI_SmsgRelease(e));
	OK(GNI_EpDestroy(e));
	OK(GNI_EpCreate(me.nic, me.cq, &e2));
	OK(GNI_EpBind(e2, peers[0].addr, peers[0].inst));
	OK(GNI_SmsgInit(e2, &mine, &theirs));
	barrier(3);
	barrier(4);
	EXPECT_RC(GNI_SmsgGetNext(e2, &got), GNI_RC_NOT_DONE);
}

/* Rank 0's side of the takeover scenarios: one message to rank 1's first endpoint; after rank 1
 * took its mailbox over (barrier 3), a send on the old connection fails, and one on a new endpoint
 * bound to rank 1 goes out (message seq 1, before barrier 4). */
static void takeover_sender(void)
{
	struct msg_header h = {(uint32_t)rank, 0};
	gni_smsg_attr_t mine = mbox_attr(addr_of(me.buf), me.mh, 0);
	gni_smsg_attr_t mine2 = mbox_attr(addr_of(me.buf), me.mh, 1024);
	gni_smsg_attr_t theirs = mbox_attr(peers[1].buf, peers[1].mh, 0);
	gni_ep_handle_t f;
	OK(GNI_SmsgInit(eps[1], &mine, &theirs));
	barrier(1);
	OK(GNI_SmsgSend(eps[1], &h, sizeof h, NULL, 0, 1));
	barrier(2);
	barrier(3);
	h.seq = 1;
	EXPECT_RC(GNI_SmsgSend(eps[1], &h, sizeof h, NULL, 0, 2), GNI_RC_TRANSACTION_ERROR);
	OK(GNI_EpCreate(me.nic, me.cq, &f));
	OK(GNI_EpBind(f, peers[1].addr, peers[1].inst));
	OK(GNI_SmsgInit(f, &mine2, &theirs));
	OK(GNI_SmsgSend(f, &h, sizeof h, NULL, 0, 3));
	barrier(4);
}

/* Rank 1's first endpoint in the takeover scenarios, on its mailbox memory at offset 0, once it
 * has taken (not released) rank 0's first message (seq 0, between barriers 1 and 2 of
 * takeover_sender). */
static gni_ep_handle_t takeover_first_endpoint(void)
{
	gni_smsg_attr_t theirs = mbox_attr(peers[0].buf, peers[0].mh, 0);
	gni_smsg_attr_t mine = mbox_attr(addr_of(me.buf), me.mh, 0);
	struct msg_header h;
	void *got;
	gni_ep_handle_t e1;
	OK(GNI_EpCreate(me.nic, me.cq, &e1));
	OK(GNI_EpBind(e1, peers[0].addr, peers[0].inst));
	OK(GNI_SmsgInit(e1, &mine, &theirs));
	barrier(1);
	barrier(2);
	OK(GNI_SmsgGetNext(e1, &got));
	memcpy(&h, got, sizeof h);
	EXPECT(h.from == 0 && h.seq == 0);
	return e1;
}

/* Rank 1's second endpoint, set up on the same mailbox memory (taking the first one's control
 * over), towards rank 0's new endpoint's mailbox at offset 1024. */
static gni_ep_handle_t takeover_second_endpoint(void)
{
	gni_smsg_attr_t theirs2 = mbox_attr(peers[0].buf, peers[0].mh, 1024);
	gni_smsg_attr_t mine = mbox_attr(addr_of(me.buf), me.mh, 0);
	gni_ep_handle_t e2;
	OK(GNI_EpCreate(me.nic, me.cq, &e2));
	OK(GNI_EpBind(e2, peers[0].addr, peers[0].inst));
	OK(GNI_SmsgInit(e2, &mine, &theirs2));
	return e2;
}

/* Rank 1 sets up endpoint e1 on mailbox memory M and takes rank 0's first message on it, sets M
 * up again on a new endpoint e2 while e1 lives (e2 takes e1's control over), then destroys e1.
 * Rank 0's endpoint sent to e1, so its next send fails; re-connected on a new endpoint, it must
 * reach e2: e1 going must not free the control e2 keeps now. */
static void smsgtakeover(void)
{
	setup();
	EXPECT(size == 2);
	struct msg_header h = {(uint32_t)rank, 0};
	void *got;
	if (rank == 0) {
		takeover_sender();
		return;
	}
	gni_ep_handle_t e1 = takeover_first_endpoint();
	OK(GNI_SmsgRelease(e1));
	gni_ep_handle_t e2 = takeover_second_endpoint();
	OK(GNI_EpDestroy(e1));
	barrier(3);
	barrier(4);
	/* Rank 0's send on its new endpoint returned: the message is in e2's mailbox, published. */
	OK(GNI_SmsgGetNext(e2, &got));
	memcpy(&h, got, sizeof h);
	EXPECT(h.from == 0 && h.seq == 1);
	OK(GNI_SmsgRelease(e2));
	EXPECT_RC(GNI_SmsgGetNext(e2, &got), GNI_RC_NOT_DONE);
}

/* As smsgtakeover, but rank 1 keeps e1 alive, holding the message it took but did not release
 * when e2 took the mailbox over: e1 can then neither take e2's message nor release (advance e2's
 * head), each GNI_RC_INVALID_STATE, and e2 still receives it. */
static void smsgtakenold(void)
{
	setup();
	EXPECT(size == 2);
	struct msg_header h = {(uint32_t)rank, 0};
	void *got;
	if (rank == 0) {
		takeover_sender();
		return;
	}
	uint8_t tag = GNI_SMSG_ANY_TAG;
	gni_ep_handle_t e1 = takeover_first_endpoint();
	gni_ep_handle_t e2 = takeover_second_endpoint();
	barrier(3);
	barrier(4);
	/* Rank 0's send on its new endpoint returned: the message is in e2's mailbox, published. */
	EXPECT_RC(GNI_SmsgGetNext(e1, &got), GNI_RC_INVALID_STATE);
	EXPECT_RC(GNI_SmsgGetNextWTag(e1, &got, &tag), GNI_RC_INVALID_STATE);
	EXPECT_RC(GNI_SmsgRelease(e1), GNI_RC_INVALID_STATE);
	OK(GNI_SmsgGetNext(e2, &got));
	memcpy(&h, got, sizeof h);
	EXPECT(h.from == 0 && h.seq == 1);
	OK(GNI_SmsgRelease(e2));
	EXPECT_RC(GNI_SmsgGetNext(e2, &got), GNI_RC_NOT_DONE);
	OK(GNI_EpDestroy(e1));
	OK(GNI_EpDestroy(e2));
}

/* Rank 1 registers its memory and ends; rank 0's posts to it then fail with
 * GNI_RC_TRANSACTION_ERROR (said once on stderr) and rank 0 goes on. */
static void orphan(void)
{
	setup();
	EXPECT(size == 2);
	if (rank == 1) {
		publish("ended-1", &rank, sizeof rank);
		printf("PASS orphan\n");
		exit(0);
	}
	int r;
	fetch("ended-1", &r, sizeof r);
	/* Wait until rank 1 is gone: a post to it no longer reaches a process. */
	gni_post_descriptor_t pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	gni_return_t rc;
	while ((rc = GNI_PostFma(eps[1], &pd)) == GNI_RC_SUCCESS)
		completed(&pd, 1), sleep_ms(5);
	EXPECT(rc == GNI_RC_TRANSACTION_ERROR);
	pd = to(1, GNI_POST_AMO, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = GNI_FMA_ATOMIC_FADD;
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_TRANSACTION_ERROR);
	expect_no_event(me.cq);
	/* This rank is unharmed. */
	gni_ep_handle_t self;
	OK(GNI_EpCreate(me.nic, me.cq, &self));
	OK(GNI_EpBind(self, me.addr, me.inst));
	pd = to(0, GNI_POST_FMA_PUT, 0, 4096, 64, GNI_CQMODE_SILENT);
	OK(GNI_PostFma(self, &pd));
}

/* As orphan, but rank 1's process stays a zombie (ended, not reaped) while rank 0 posts to it:
 * rank 1 forks before its first uGNI call, the child is the rank and ends, and the parent reaps
 * it only once rank 0 is done, as a launcher that waits for its ranks in another order would.
 * Rank 0's posts fail with GNI_RC_TRANSACTION_ERROR, through process_vm or the service thread,
 * and rank 0 goes on. */
static void zombie(void)
{
	if (env_int("PMI_RANK") == 1) {
		pid_t child = fork();
		EXPECT(child >= 0);
		if (child == 0) {
			setup();
			publish("ended-1", &rank, sizeof rank);
			_exit(0);
		}
		int r, status;
		fetch("posted-0", &r, sizeof r);
		EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
		return;
	}
	setup();
	EXPECT(size == 2);
	int r;
	fetch("ended-1", &r, sizeof r);
	gni_post_descriptor_t pd = to(1, GNI_POST_FMA_PUT, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	gni_return_t rc;
	while ((rc = GNI_PostFma(eps[1], &pd)) == GNI_RC_SUCCESS)
		completed(&pd, 1), sleep_ms(5);
	EXPECT(rc == GNI_RC_TRANSACTION_ERROR);
	pd = to(1, GNI_POST_FMA_GET, 0, 0, 64, GNI_CQMODE_GLOBAL_EVENT);
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_TRANSACTION_ERROR);
	pd = to(1, GNI_POST_AMO, 0, 0, 8, GNI_CQMODE_GLOBAL_EVENT);
	pd.amo_cmd = GNI_FMA_ATOMIC_FADD;
	EXPECT_RC(GNI_PostFma(eps[1], &pd), GNI_RC_TRANSACTION_ERROR);
	expect_no_event(me.cq);
	publish("posted-0", &rank, sizeof rank);
}

/* Registers a buffer and writes its handle to JOB_TEST_FOREIGN_OUT: a handle of another job. */
static void foreign(void)
{
	node_init(&me, 1000, 0);
	const char *out = getenv("JOB_TEST_FOREIGN_OUT");
	EXPECT(out != NULL);
	FILE *f = fopen(out, "wb");
	EXPECT(f != NULL);
	EXPECT(fwrite(&me.mh, sizeof me.mh, 1, f) == 1);
	EXPECT(fclose(f) == 0);
}

/* Rank 0 GETs 32 KiB from rank 1 eight times, NO_ADAPT (one minimal path, which congests), and
 * then every rank says its node's counters ("counters <the five, in EVENTS order>"). */
static void simget(void)
{
	setup();
	barrier(1);
	if (rank == 0) {
		for (int i = 0; i < 8; i++) {
			gni_post_descriptor_t pd = to(1, GNI_POST_RDMA_GET, 32768, 0, 32768, GNI_CQMODE_GLOBAL_EVENT);
			pd.dlvr_mode = GNI_DLVMODE_NO_ADAPT;
			OK(GNI_PostRdma(eps[1], &pd));
			completed(&pd, 1);
		}
	}
	barrier(2);
	long long c[5];
	aar_emu_counters_get(c);
	printf("counters %lld %lld %lld %lld %lld\n", c[0], c[1], c[2], c[3], c[4]);
}

/* Only attaches a CDM, and says what GNI_CdmAttach returned ("attach rc=<n>"): what a rank
 * meets at its first uGNI call, which is where the emulator makes the rank's shared file. */
static void attach(void)
{
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	uint32_t addr = 0;
	OK(GNI_CdmCreate((uint32_t)env_int("PMI_RANK"), GNI_FIND_ALLOC_PTAG, 42, 0, &cdm));
	gni_return_t rc = GNI_CdmAttach(cdm, 0, &addr, &nic);
	printf("attach rc=%d\n", (int)rc);
	OK(GNI_CdmDestroy(cdm));
}

/* Rank 0 alone, whose job folder holds a rank-1 file another build made: posts datagrams to
 * rank 1's NIC, each of which looks for the ranks there, and finds none (they stay pending). */
static void stranger(void)
{
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	gni_cq_handle_t cq;
	gni_ep_handle_t ep;
	uint32_t addr = 0, ra, ri;
	gni_post_state_t st;
	uint64_t in = 7, out = 0;
	OK(GNI_CdmCreate((uint32_t)env_int("PMI_RANK"), GNI_FIND_ALLOC_PTAG, 42, 0, &cdm));
	OK(GNI_CdmAttach(cdm, 0, &addr, &nic));
	OK(GNI_CqCreate(nic, 16, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	OK(GNI_EpCreate(nic, cq, &ep));
	OK(GNI_EpBind(ep, 0x101, 1));
	for (uint64_t id = 0; id < 3; id++) {
		OK(GNI_EpPostDataWId(ep, &in, sizeof in, &out, sizeof out, id));
		OK(GNI_EpPostDataTestById(ep, id, &st, &ra, &ri));
		EXPECT(st == GNI_POST_PENDING && out == 0);
		OK(GNI_EpPostDataCancelById(ep, id));
	}
}

/* Rank 0 PUTs 8 bytes to rank 1 and GETs them back, COPIES times each (the test counts the
 * system calls those copies make). */
#define COPIES 100

static void copies(void)
{
	setup();
	EXPECT(size == 2);
	barrier(1);
	if (rank == 0) {
		for (int i = 0; i < COPIES; i++) {
			memcpy(me.buf, &i, sizeof i);
			gni_post_descriptor_t pd = to(1, GNI_POST_FMA_PUT, 0, 64, 8, GNI_CQMODE_GLOBAL_EVENT);
			OK(GNI_PostFma(eps[1], &pd));
			completed(&pd, 1);
			pd = to(1, GNI_POST_FMA_GET, 128, 64, 8, GNI_CQMODE_GLOBAL_EVENT);
			OK(GNI_PostFma(eps[1], &pd));
			completed(&pd, 1);
			EXPECT(!memcmp(me.buf + 128, &i, sizeof i));
		}
	}
	barrier(2);
}

/* Ranks 0 and 1 of a job that says it has many more (PMI_SIZE) trade datagrams both ways, each
 * meeting the other's directed post with a wildcard one (the test counts which files the ranks
 * open meanwhile). Only the exchange folder, not setup(), whose tables hold 64 ranks. */
static void bigjob(void)
{
	rank = env_int("PMI_RANK");
	EXPECT(rank < 2);
	node_init(&me, (uint32_t)rank * 1000, 0);
	struct peer_info mine = {me.addr, me.inst, addr_of(me.buf), me.mh, 0, me.mh}, peer;
	char name[64];
	snprintf(name, sizeof name, "info-%d", rank);
	publish(name, &mine, sizeof mine);
	snprintf(name, sizeof name, "info-%d", 1 - rank);
	fetch(name, &peer, sizeof peer);
	gni_ep_handle_t to_peer, any;
	OK(GNI_EpCreate(me.nic, me.cq, &to_peer));
	OK(GNI_EpBind(to_peer, peer.addr, peer.inst));
	OK(GNI_EpCreate(me.nic, me.cq, &any));
	struct hello hi = {(uint32_t)rank, 0xda7a, me.mh}, got;
	gni_post_state_t st;
	uint32_t ra, ri;
	for (int round = 0; round < 2; round++) {
		memset(&got, 0, sizeof got);
		if (rank == round) {
			OK(GNI_EpPostDataWId(any, &hi, sizeof hi, &got, sizeof got, 1));
			OK(GNI_EpPostDataWaitById(any, 1, (uint32_t)-1, &st, &ra, &ri));
		} else {
			OK(GNI_EpPostDataWId(to_peer, &hi, sizeof hi, &got, sizeof got, 2));
			OK(GNI_EpPostDataWaitById(to_peer, 2, (uint32_t)-1, &st, &ra, &ri));
		}
		EXPECT(st == GNI_POST_COMPLETED && got.magic == 0xda7a && got.rank == (uint32_t)(1 - rank));
		EXPECT(ra == peer.addr && ri == peer.inst);
	}
}

/* Rank 0 writes 2048 lines of 64 bytes (128 KiB, twice what a pipe holds) on stderr, then every
 * rank meets the others at a barrier: a job whose rank says more than a pipe holds before it
 * ends, which ends only if its launcher reads the ranks' output while they run. */
static void chatty(void)
{
	rank = env_int("PMI_RANK");
	size = env_int("PMI_SIZE");
	if (rank == 0)
		for (int i = 0; i < 2048; i++)
			fprintf(stderr, "chatty line %04d %046d\n", i, 0);
	barrier(1);
}

int main(int argc, char **argv)
{
	static const struct scenario scenarios[] = {
		{"rma", rma},
		{"amo", amo},
		{"cqwrite", cqwrite},
		{"overrun", overrun},
		{"hostile", hostile},
		{"foreign", foreign},
		{"dgram", dgram},
		{"dgdead", dgdead},
		{"smsg", smsg},
		{"smsgreinit", smsgreinit},
		{"smsgstale", smsgstale},
		{"smsgtakeover", smsgtakeover},
		{"smsgtakenold", smsgtakenold},
		{"orphan", orphan},
		{"zombie", zombie},
		{"attach", attach},
		{"stranger", stranger},
		{"simget", simget},
		{"chatty", chatty},
		{"copies", copies},
		{"bigjob", bigjob},
	};
	return run_scenario(argv[0], scenarios, sizeof scenarios / sizeof *scenarios, argc, argv);
}
