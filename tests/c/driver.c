/*
 * driver: a scriptable uGNI program for the integration tests. Two communication domains of one
 * process (inst_id 0 = A, 1 = B) on two emulated NICs; A sends to B. Commands run in argv order:
 *
 *   fma|rdma SIZE COUNT DLVR        PUTs of SIZE bytes (GNI_PostFma / GNI_PostRdma)
 *   fmaget|rdmaget SIZE COUNT DLVR  GETs of SIZE bytes
 *   burst SIZE COUNT DLVR           COUNT RDMA PUTs of SIZE bytes posted back to back (each its own
 *                                   slice of the buffers), then their completions waited for in order
 *   sleep US                        sleep US microseconds
 *   cqwrite COUNT DLVR [LEN]        GNI_PostCqWrite, the descriptor's length LEN (default 0; uGNI does
 *                                   not read it for a CQ write: a reused descriptor's stale length)
 *   ct SIZE ELEMS DLVR              chained FMA PUT: a head of SIZE bytes and ELEMS elements of SIZE
 *   ctcqw ELEMS DLVR                chained CQ write (GNI_CtPostCqWrite)
 *   smsg SIZE COUNT | smsgtag SIZE COUNT   short messages (GNI_SmsgSend / GNI_SmsgSendWTag)
 *   smsgmode DLVR                   GNI_SmsgSetDeliveryMode on both NICs (the application's wish)
 *   smsgburst SIZE COUNT            COUNT GNI_SmsgSend with nothing received meanwhile (past the
 *                                   mailbox's credits uGNI answers GNI_RC_NOT_DONE), then every
 *                                   message received ("smsgburst sent=S refused=R received=N")
 *   badpost                         an FMA PUT from unregistered memory: must fail, rc printed
 *   nullpost                        GNI_PostFma(ep, NULL): rc printed
 *   epunbind | epdestroy            GNI_EpUnbind / GNI_EpDestroy of A's endpoint: rc printed (only
 *                                   under tests/c/ep_busy.c, which refuses them: the endpoint lives on)
 *   cepost SIZE DLVR                a collective-engine post (GNI_POST_CE) through GNI_PostFma: rc and
 *                                   the routing it went out with printed ("cepost rc=R dlvr_out=0xM")
 *   net LAT_AD LAT_BS STALL_AD STALL_BS    aar_emu_set_network
 *   cadd F S L P R | cset F S L P R        aar_emu_counters_add / _set
 *   freeze 0|1                      aar_emu_counters_freeze
 *   api mode DLVR | api name NAME | api auto | api disable | api enable
 *   policy                          print aar_policy_name()
 *   iter begin | iter end | iter label NAME | iter index   the iteration markers of aar.h (rc printed;
 *                                   "index" prints aar_iteration_index())
 *   iterloop N                      N empty iterations (begin, end); prints "iterloop failed=F"
 *   forkhold | forkrelease          a thread forks and stays inside fork() between the fork handlers,
 *                                   libaar.so's having run (it holds the library's locks, the
 *                                   iteration record's among them) and the parent's not yet: our
 *                                   prepare handler, registered first, so run last, waits there
 *                                   ("forkhold entered=1"); forkrelease lets the fork finish and
 *                                   waits for the thread and its child ("forkrelease ok=1")
 *   maxrss                          print the process's peak resident set since its exec
 *                                   ("maxrss_kb=K", VmHWM: getrusage's ru_maxrss keeps across exec
 *                                   the peak of the process that spawned it, here the test's)
 *   fdfull                          a program with every descriptor its limit allows open (limits.h;
 *                                   "fdfull fds=N")
 *   memfull                         a program at its memory limit (limits.h; "memfull bytes=B")
 *   endpoints N                     N more endpoints of A, each bound to B (a rank with N peers);
 *                                   later posts go out on the last
 *   chdir PATH                      change the working folder (an application moving into its run's)
 *   touch PATH | waitfile PATH      create an empty file | wait until a file exists (every 1 ms, at
 *                                   most 60 s, else an error): steps of several processes in order
 *   open PATH                       create PATH and keep it open to the end, as an application's
 *                                   output file ("open fd=N"; "data" is written into it at exit)
 *   threads N SIZE COUNT            N threads, each its own CDM pair, COUNT FMA PUTs of SIZE (as the
 *                                   first command, or after "stack", the threads make the first uGNI
 *                                   calls of the process)
 *   stalled N SIZE COUNT            as threads, but main waits at most 20 s for N - 1 of them to end
 *                                   (one may be stuck writing to a stderr no one reads), prints
 *                                   "stalled done=D of N" and leaves with _exit (1 if D < N - 1)
 *   stack BYTES                     the threads of later "threads" commands get stacks of BYTES (a
 *                                   runtime's progress thread made small); 0: the default
 *   fork N                          fork; the child makes N 64 B FMA PUTs and N 64 KiB RDMA PUTs on the
 *                                   inherited endpoints and exits; the parent waits and checks it
 *   forkmode N DLVR                 as fork, but the child first pins DLVR (aar_set_mode, rc printed)
 *   forkexec                        fork and exec /bin/sh -c true (a helper process); wait for it
 *   forkmidread N MS                (under tests/c/flaky_papi.c) a thread makes one 64 KiB RDMA PUT
 *                                   on a pair of its own whose counter read takes MS ms more; while
 *                                   it is in that read, fork: the child does as under fork N. The
 *                                   child is given 20 s, then killed ("forkmidread child=exited|hung
 *                                   status=S")
 *   papi_shutdown                   shut PAPI down behind the library's back (its next read fails)
 *   papi start EVENT | papi stop    (built with -DWITH_PAPI, linked with -lpapi, as a program that
 *   | papi shutdown                 measures with PAPI itself) an event set of its own: PAPI
 *                                   initialised if it is not, EVENT added, started; or stopped; or
 *                                   PAPI shut down (PAPI_shutdown), the next start making a new set
 *                                   ("papi start rc=R" / "papi stop rc=R"; as the first commands,
 *                                   before the process's first uGNI call)
 *   exit_posting                    start a thread that posts forever, then exit() from main
 *   postatexit SIZE                 (the first command) an atexit handler registered before any uGNI
 *                                   call, so run after libaar.so's own, makes one FMA PUT of SIZE on
 *                                   the main pair ("postatexit rc=R")
 *   _exit                           leave with _exit(0): no exit handlers run
 *   reenter 0|1                     (built with -DREENTER) malloc itself posts 1 B, re-entering uGNI
 *   allocs 1 | allocs 0             (built with -DREENTER) count allocations from here / print the count
 *   alltoall SIZE COUNT             MPI_Alltoall, whose PMPI_Alltoall (defined here, found by
 *                                   libaar.so at run time) makes COUNT RDMA PUTs of SIZE bytes and
 *                                   checks that every argument arrived unchanged
 *   alltoall-in-place SIZE COUNT    the same, as a program gives it MPI_IN_PLACE (MPICH's): send count
 *                                   0 and MPI_DATATYPE_NULL, which MPI ignores then; COUNT is the
 *                                   receive count
 *   barrier SIZE COUNT              MPI_Barrier, whose PMPI_Barrier (defined here) makes COUNT RDMA
 *                                   PUTs of SIZE bytes (an MPI library's barrier messages)
 *   neighbor SIZE COUNT             MPI_Neighbor_alltoall, as alltoall (its PMPI_Neighbor_alltoall,
 *                                   defined here, makes COUNT RDMA PUTs of SIZE bytes)
 *   alltoall2 SIZE COUNT SIZE2 COUNT2  MPI_Alltoall of COUNT posts of SIZE; inside it, before its
 *                                   posts, a second thread's whole MPI_Alltoall of COUNT2 posts of
 *                                   SIZE2 on a pair of its own (two threads inside collectives at once)
 *   modetime US0 US1 US2 US3        from here, every post waits US microseconds after its completion,
 *                                   by the ADAPTIVE mode it went out with (a network where the
 *                                   routing decides the time; 0 0 0 0: none)
 *
 * DLVR is the dlvr_mode the caller writes (decimal or 0x hex). Every post waits for its local completion, checks that GNI_GetCompleted returns its own
 * descriptor, that every byte arrived, and that the descriptor fields the caller set are as the
 * caller left them (the routing byte of dlvr_mode is the only thing a router may change; its
 * flag bits must survive). Chain elements are checksummed before and after the post.
 * Prints "posts=N errors=E emu_posts=M" last (M: what the emulator received); exit status 0 only
 * if E == 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aar_emu.h"
/* The C API is optional: the driver also runs without libaar.so. */
#include "aar_weak.h"
#include "limits.h"
#define UGNI_PROGRAM "driver"
#include "../../examples/ugni_pair.h"

#define MAX_BYTES (8u << 20)

struct pair {
	struct ugni_side a, b;
	uint64_t posts, errors;
};

static int verbose = 1;

/* The file of the "open" command, written into at exit as an application writes its output. */
static int output_fd = -1;

static void write_output_file(void)
{
	if (output_fd >= 0 && write(output_fd, "data\n", 5) != 5)
		perror("driver: open");
}

static void fail(struct pair *p, const char *what)
{
	p->errors++;
	fprintf(stderr, "driver: %s\n", what);
}

static int ok(struct pair *p, gni_return_t rc, const char *what)
{
	if (ugni_check(rc, what) == 0)
		return 1;
	p->errors++;
	return 0;
}

/* Sides A and B (inst_id `first_inst` and the next), their buffers of `bytes` and mailboxes. */
static int setup_pair(struct pair *p, uint32_t first_inst, uint64_t bytes)
{
	const struct ugni_pair_config config = {
		.inst_id = first_inst,
		.cookie = 0x5a5a,
		.cq_entries = 1024,
		.tx_cq_mode = GNI_CQ_BLOCKING,
		.bytes = bytes,
		.smsg_credits = 64,
		.smsg_max_size = 4096,
	};
	memset(p, 0, sizeof *p);
	if (ugni_pair_open(&p->a, &p->b, &config)) {
		p->errors++;
		return -1;
	}
	return 0;
}

static unsigned char pattern(uint64_t i, uint64_t seq)
{
	return (unsigned char)(i * 131u + seq * 29u + 7u);
}

static uint64_t checksum(const void *mem, size_t n)
{
	const unsigned char *b = mem;
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* Wait for the local completion of `pd`, posted by `s`. */
static int complete(struct pair *p, struct ugni_side *s, gni_post_descriptor_t *pd)
{
	if (ugni_wait_local(s, pd) == 0)
		return 0;
	p->errors++;
	return -1;
}

static void drain_remote(struct ugni_side *s)
{
	gni_cq_entry_t ev;
	while (GNI_CqGetEvent(s->rx_cq, &ev) == GNI_RC_SUCCESS)
		;
}

/* Fields a router must leave alone: everything but the routing byte of dlvr_mode. */
static int caller_fields_intact(const gni_post_descriptor_t *before, const gni_post_descriptor_t *after)
{
	return before->type == after->type && before->cq_mode == after->cq_mode &&
	       (before->dlvr_mode & 0xff00) == (after->dlvr_mode & 0xff00) &&
	       before->local_addr == after->local_addr && before->remote_addr == after->remote_addr &&
	       before->length == after->length && before->post_id == after->post_id &&
	       !memcmp(&before->local_mem_hndl, &after->local_mem_hndl, sizeof before->local_mem_hndl) &&
	       !memcmp(&before->remote_mem_hndl, &after->remote_mem_hndl, sizeof before->remote_mem_hndl) &&
	       before->rdma_mode == after->rdma_mode && before->src_cq_hndl == after->src_cq_hndl &&
	       before->amo_cmd == after->amo_cmd && before->first_operand == after->first_operand &&
	       before->cqwrite_value == after->cqwrite_value;
}

/* A descriptor of a post from A's send buffer to B's receive buffer, with a local completion. */
static gni_post_descriptor_t a_to_b(struct pair *p, gni_post_type_t type, uint64_t length, uint16_t dlvr, uint64_t seq)
{
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = type;
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
	pd.dlvr_mode = dlvr;
	pd.local_addr = (uint64_t)(uintptr_t)p->a.send_buf;
	pd.local_mem_hndl = p->a.send_mh;
	pd.remote_addr = (uint64_t)(uintptr_t)p->b.recv_buf;
	pd.remote_mem_hndl = p->b.recv_mh;
	pd.length = length;
	pd.post_id = seq;
	return pd;
}

/* microseconds a post waits after completing, by its ADAPTIVE mode (modetime) */
static unsigned mode_wait_us[4];

static int transfer(struct pair *p, const char *kind, uint64_t size, uint16_t dlvr, uint64_t seq)
{
	struct ugni_side *a = &p->a, *b = &p->b;
	int get = !strcmp(kind, "fmaget") || !strcmp(kind, "rdmaget");
	int rdma = !strcmp(kind, "rdma") || !strcmp(kind, "rdmaget");
	int cqw = !strcmp(kind, "cqwrite");
	unsigned char *src = get ? b->recv_buf : a->send_buf, *dst = get ? a->send_buf : b->recv_buf;
	if (size > MAX_BYTES) {
		fail(p, "size too large");
		return -1;
	}
	for (uint64_t i = 0; i < size; i++)
		src[i] = pattern(i, seq);
	gni_post_type_t type = cqw ? GNI_POST_CQWRITE : get ? (rdma ? GNI_POST_RDMA_GET : GNI_POST_FMA_GET) : (rdma ? GNI_POST_RDMA_PUT : GNI_POST_FMA_PUT);
	gni_post_descriptor_t pd = a_to_b(p, type, size, dlvr, seq);
	pd.cqwrite_value = seq & 0xffffffffffffull;
	gni_post_descriptor_t before = pd;
	gni_return_t rc = cqw ? GNI_PostCqWrite(a->ep, &pd) : rdma ? GNI_PostRdma(a->ep, &pd) : GNI_PostFma(a->ep, &pd);
	__atomic_add_fetch(&p->posts, 1, __ATOMIC_RELAXED);
	if (!ok(p, rc, kind))
		return -1;
	if (complete(p, a, &pd))
		return -1;
	drain_remote(b);
	if (!caller_fields_intact(&before, &pd))
		fail(p, "the descriptor's caller fields changed");
	if (!cqw && memcmp(src, dst, size))
		fail(p, "payload corrupted");
	if (verbose > 1)
		printf("post %s size=%llu dlvr_in=0x%x dlvr_out=0x%x\n", kind, (unsigned long long)size, before.dlvr_mode, pd.dlvr_mode);
	uint16_t r = pd.dlvr_mode;
	unsigned wait = mode_wait_us[r & GNI_DLVMODE_ADAPTIVE3 ? 3 : r & GNI_DLVMODE_ADAPTIVE2 ? 2 : r & GNI_DLVMODE_ADAPTIVE1 ? 1 : 0];
	if (wait)
		usleep(wait);
	return 0;
}

static int burst(struct pair *p, uint64_t size, uint64_t count, uint16_t dlvr, uint64_t seq)
{
	struct ugni_side *a = &p->a, *b = &p->b;
	gni_post_descriptor_t pd[64], before[64];
	if (count > 64 || size * count > MAX_BYTES) {
		fail(p, "burst too large");
		return -1;
	}
	for (uint64_t i = 0; i < size * count; i++)
		a->send_buf[i] = pattern(i, seq);
	for (uint64_t k = 0; k < count; k++) {
		pd[k] = a_to_b(p, GNI_POST_RDMA_PUT, size, dlvr, seq + k);
		pd[k].local_addr += k * size;
		pd[k].remote_addr += k * size;
		before[k] = pd[k];
	}
	/* Nothing between the posts: they are in flight together. */
	uint64_t posted;
	for (posted = 0; posted < count; posted++) {
		gni_return_t rc = GNI_PostRdma(a->ep, &pd[posted]);
		__atomic_add_fetch(&p->posts, 1, __ATOMIC_RELAXED);
		if (!ok(p, rc, "burst"))
			break;
	}
	for (uint64_t k = 0; k < posted; k++) {
		if (complete(p, a, &pd[k]))
			return -1;
		if (!caller_fields_intact(&before[k], &pd[k]))
			fail(p, "the descriptor's caller fields changed");
	}
	drain_remote(b);
	if (memcmp(a->send_buf, b->recv_buf, size * posted))
		fail(p, "burst payload corrupted");
	return 0;
}

static int chained(struct pair *p, int cqw, uint64_t size, unsigned elems, uint16_t dlvr, uint64_t seq)
{
	struct ugni_side *a = &p->a, *b = &p->b;
	if ((uint64_t)(elems + 1) * size > MAX_BYTES || elems > 64) {
		fail(p, "chain too large");
		return -1;
	}
	for (uint64_t i = 0; i < (elems + 1) * size; i++)
		a->send_buf[i] = pattern(i, seq);
	gni_ct_put_post_descriptor_t puts[64];
	gni_ct_cqw_post_descriptor_t cqws[64];
	memset(puts, 0, sizeof puts);
	memset(cqws, 0, sizeof cqws);
	for (unsigned i = 0; i < elems; i++) {
		puts[i].next_descr = i + 1 < elems ? &puts[i + 1] : NULL;
		puts[i].ep_hndl = a->ep;
		puts[i].length = size;
		puts[i].local_addr = (uint64_t)(uintptr_t)(a->send_buf + (i + 1) * size);
		puts[i].remote_addr = (uint64_t)(uintptr_t)(b->recv_buf + (i + 1) * size);
		puts[i].remote_mem_hndl = b->recv_mh;
		cqws[i].next_descr = i + 1 < elems ? &cqws[i + 1] : NULL;
		cqws[i].ep_hndl = a->ep;
		cqws[i].cqwrite_value = i;
		cqws[i].remote_mem_hndl = b->recv_mh;
	}
	uint64_t sum_before = cqw ? checksum(cqws, sizeof cqws[0] * elems) : checksum(puts, sizeof puts[0] * elems);
	gni_post_descriptor_t pd = a_to_b(p, cqw ? GNI_POST_CQWRITE : GNI_POST_FMA_PUT, cqw ? 0 : size, dlvr, seq);
	pd.next_descr = elems ? (cqw ? (void *)cqws : (void *)puts) : NULL;
	gni_post_descriptor_t before = pd;
	gni_return_t rc = cqw ? GNI_CtPostCqWrite(a->ep, &pd) : GNI_CtPostFma(a->ep, &pd);
	__atomic_add_fetch(&p->posts, 1, __ATOMIC_RELAXED);
	printf("ct%s rc=%d\n", cqw ? "cqw" : "", (int)rc);
	if (!ok(p, rc, cqw ? "GNI_CtPostCqWrite" : "GNI_CtPostFma"))
		return -1;
	if (complete(p, a, &pd))
		return -1;
	drain_remote(b);
	uint64_t sum_after = cqw ? checksum(cqws, sizeof cqws[0] * elems) : checksum(puts, sizeof puts[0] * elems);
	printf("chain elements=%u unchanged=%d head_dlvr=0x%x\n", elems, sum_before == sum_after, pd.dlvr_mode);
	if (sum_before != sum_after)
		fail(p, "chain elements changed");
	if (!caller_fields_intact(&before, &pd) || pd.next_descr != before.next_descr)
		fail(p, "the head descriptor's caller fields changed");
	if (!cqw && memcmp(a->send_buf, b->recv_buf, (elems + 1) * size))
		fail(p, "chained payload corrupted");
	return 0;
}

static int smsg(struct pair *p, int tagged, uint64_t size, uint64_t seq)
{
	struct ugni_side *a = &p->a, *b = &p->b;
	uint32_t header = (uint32_t)seq;
	unsigned char payload[4096];
	if (size + sizeof header > 4096) {
		fail(p, "smsg too large");
		return -1;
	}
	for (uint64_t i = 0; i < size; i++)
		payload[i] = pattern(i, seq);
	gni_return_t rc = tagged ? GNI_SmsgSendWTag(a->ep, &header, sizeof header, payload, (uint32_t)size, (uint32_t)seq, 7)
				 : GNI_SmsgSend(a->ep, &header, sizeof header, payload, (uint32_t)size, (uint32_t)seq);
	__atomic_add_fetch(&p->posts, 1, __ATOMIC_RELAXED);
	if (!ok(p, rc, "GNI_SmsgSend"))
		return -1;
	void *msg = NULL;
	uint8_t tag = GNI_SMSG_ANY_TAG;
	rc = tagged ? GNI_SmsgGetNextWTag(b->ep, &msg, &tag) : GNI_SmsgGetNext(b->ep, &msg);
	if (!ok(p, rc, "GNI_SmsgGetNext"))
		return -1;
	if (memcmp(msg, &header, sizeof header) || memcmp((unsigned char *)msg + sizeof header, payload, size) || (tagged && tag != 7))
		fail(p, "smsg payload corrupted");
	GNI_SmsgRelease(b->ep);
	drain_remote(b);
	gni_cq_entry_t ev;
	while (GNI_CqGetEvent(a->tx_cq, &ev) == GNI_RC_SUCCESS)
		;
	return 0;
}

/* COUNT short messages sent before any is received, as a program that runs out of credits does. */
static void smsg_burst(struct pair *p, uint64_t size, uint64_t count, uint64_t seq)
{
	unsigned char payload[4096] = { 0 };
	uint32_t header = (uint32_t)seq;
	uint64_t sent = 0, refused = 0, received = 0;
	if (size > sizeof payload) {
		fail(p, "smsgburst too large");
		return;
	}
	for (uint64_t k = 0; k < count; k++) {
		gni_return_t rc = GNI_SmsgSend(p->a.ep, &header, sizeof header, payload, (uint32_t)size, (uint32_t)(seq + k));
		p->posts++;
		if (rc == GNI_RC_SUCCESS)
			sent++;
		else if (rc == GNI_RC_NOT_DONE)
			refused++;
		else
			ok(p, rc, "GNI_SmsgSend");
	}
	void *msg = NULL;
	while (GNI_SmsgGetNext(p->b.ep, &msg) == GNI_RC_SUCCESS) {
		GNI_SmsgRelease(p->b.ep);
		received++;
	}
	drain_remote(&p->b);
	gni_cq_entry_t ev;
	while (GNI_CqGetEvent(p->a.tx_cq, &ev) == GNI_RC_SUCCESS)
		;
	printf("smsgburst sent=%llu refused=%llu received=%llu\n", (unsigned long long)sent, (unsigned long long)refused,
	       (unsigned long long)received);
}

/* A stand-in MPI: handles are pointer-sized, as in Open MPI, so the check below sees all 64 bits. */
typedef void *MPI_Datatype;
typedef void *MPI_Comm;
int MPI_Alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
#pragma weak MPI_Alltoall
int MPI_Barrier(MPI_Comm);
#pragma weak MPI_Barrier
int MPI_Neighbor_alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
#pragma weak MPI_Neighbor_alltoall

/* Each thread's own: a thread that calls MPI_Alltoall sets them first (alltoall2 has two). */
static __thread struct pair *alltoall_pair;
static __thread uint64_t alltoall_seq;
static int alltoall_calls;
/* alltoall2: the first thread waits inside its PMPI_Alltoall, before its posts, until the second
 * thread's whole MPI_Alltoall has run (0: not in alltoall2; 1: the first is inside; 2: done). */
static __thread int alltoall_waits;
static int alltoall2_phase;

#define SENDTYPE ((MPI_Datatype)0x1122334455667788ull)
#define RECVTYPE ((MPI_Datatype)0x0102030405060708ull)
#define COMM ((MPI_Comm)0x7766554433221100ull)
/* MPICH's MPI_IN_PLACE and MPI_DATATYPE_NULL (alltoall-in-place) */
#define IN_PLACE ((void *)-1)
#define DATATYPE_NULL ((MPI_Datatype)0x0c000000ull)

/* What PMPI_Alltoall and PMPI_Neighbor_alltoall (NAME) do: check that every argument arrived
 * unchanged, then make the posts the command asked for (after alltoall2's wait, with WAIT). */
static int alltoall_posts(const char *name, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
			  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int wait)
{
	int in_place = sendbuf == IN_PLACE;
	if ((in_place ? sendcount != 0 || sendtype != DATATYPE_NULL
		      : sendbuf != (void *)alltoall_pair || sendtype != SENDTYPE || recvcount != -sendcount) ||
	    recvbuf != (void *)&alltoall_seq || recvtype != RECVTYPE || comm != COMM) {
		char why[96];
		snprintf(why, sizeof why, "%s arguments changed on the way to P%s", name, name);
		fail(alltoall_pair, why);
		return 1;
	}
	uint64_t size = alltoall_seq >> 32, count = (uint64_t)(in_place ? recvcount : sendcount);
	if (wait) {
		__atomic_store_n(&alltoall2_phase, 1, __ATOMIC_RELEASE);
		/* at most 10 s: a second thread that never runs its call fails the command, not hangs it */
		for (int k = 0; k < 100000 && __atomic_load_n(&alltoall2_phase, __ATOMIC_ACQUIRE) != 2; k++)
			usleep(100);
	}
	for (uint64_t k = 0; k < count; k++)
		transfer(alltoall_pair, "rdma", size, 0, (alltoall_seq & 0xffffffff) + k);
	return 0;
}

int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		  MPI_Datatype recvtype, MPI_Comm comm)
{
	__atomic_add_fetch(&alltoall_calls, 1, __ATOMIC_RELAXED);
	return alltoall_posts("MPI_Alltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
			      alltoall_waits);
}

/* neighbor: MPI_Neighbor_alltoall's calls reach this, with alltoall's arguments. */
static int neighbor_calls;

int PMPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
			   MPI_Datatype recvtype, MPI_Comm comm)
{
	__atomic_add_fetch(&neighbor_calls, 1, __ATOMIC_RELAXED);
	return alltoall_posts("MPI_Neighbor_alltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
			      0);
}

/* barrier: what the next PMPI_Barrier posts (set by the command, on the main thread). */
static struct pair *barrier_pair;
static uint64_t barrier_size, barrier_count, barrier_seq;
static int barrier_calls;

int PMPI_Barrier(MPI_Comm comm)
{
	__atomic_add_fetch(&barrier_calls, 1, __ATOMIC_RELAXED);
	if (comm != COMM) {
		fail(barrier_pair, "MPI_Barrier's communicator changed on the way to PMPI_Barrier");
		return 1;
	}
	for (uint64_t k = 0; k < barrier_count; k++)
		transfer(barrier_pair, "rdma", barrier_size, 0, barrier_seq + k);
	return 0;
}

/* alltoall2's second thread: its own pair, and one MPI_Alltoall once the first thread is inside
 * its own. */
struct alltoall2_arg {
	uint64_t size, count;
	struct pair pair;
	int rc;
};

static void *alltoall2_second(void *v)
{
	struct alltoall2_arg *t = v;
	t->rc = -1;
	if (setup_pair(&t->pair, 70, t->size > 4096 ? t->size : 4096)) {
		__atomic_store_n(&alltoall2_phase, 2, __ATOMIC_RELEASE);
		return NULL;
	}
	/* at most 10 s for the first thread to be inside its call */
	for (int k = 0; k < 100000 && __atomic_load_n(&alltoall2_phase, __ATOMIC_ACQUIRE) != 1; k++)
		usleep(100);
	alltoall_pair = &t->pair;
	alltoall_seq = t->size << 32 | 0x10000;
	t->rc = MPI_Alltoall(&t->pair, (int)t->count, SENDTYPE, &alltoall_seq, -(int)t->count, RECVTYPE, COMM);
	__atomic_store_n(&alltoall2_phase, 2, __ATOMIC_RELEASE);
	return NULL;
}

struct thread_arg {
	uint32_t inst;
	uint64_t size, count;
	struct pair pair;
	struct thread_arg *earlier; /* in the first of a command's threads: the previous command's */
};

/* The pairs of every "threads" command stay open until the process exits, as the main pair does
 * (their NICs stay known to libaar.so); kept here, they stay reachable for LeakSanitizer too. */
static struct thread_arg *thread_args;
/* Stack size of the threads the "threads" command makes; 0: the default. */
static size_t thread_stack;

/* Threads of "threads" and "stalled" commands that have made all their posts. */
static unsigned threads_done;

static void *thread_main(void *v)
{
	struct thread_arg *t = v;
	if (setup_pair(&t->pair, t->inst, t->size > 4096 ? t->size : 4096))
		return NULL;
	for (uint64_t i = 0; i < t->count; i++)
		transfer(&t->pair, "fma", t->size, 0, i);
	__atomic_add_fetch(&threads_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static struct pair *main_pair;

static uint64_t post_at_exit_size;

static void post_at_exit(void)
{
	if (main_pair) {
		printf("postatexit rc=%d\n", transfer(main_pair, "fma", post_at_exit_size, 0, 0));
		fflush(stdout);
	}
}

#ifdef REENTER
/* An allocator that itself sends on the network: every allocation, including the ones libaar.so
 * makes in its slow path, re-enters GNI_PostFma. */
static volatile int reenter_armed;
static __thread int in_alloc;
static unsigned long long reentered;

static void reenter(void)
{
	if (!reenter_armed || in_alloc || !main_pair)
		return;
	in_alloc = 1;
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = GNI_POST_FMA_PUT;
	pd.cq_mode = GNI_CQMODE_SILENT;
	pd.local_addr = (uint64_t)(uintptr_t)main_pair->a.send_buf;
	pd.local_mem_hndl = main_pair->a.send_mh;
	pd.remote_addr = (uint64_t)(uintptr_t)main_pair->b.recv_buf + MAX_BYTES - 64;
	pd.remote_mem_hndl = main_pair->b.recv_mh;
	pd.length = 1;
	if (GNI_PostFma(main_pair->a.ep, &pd) == GNI_RC_SUCCESS)
		__atomic_add_fetch(&reentered, 1, __ATOMIC_RELAXED);
	in_alloc = 0;
}
#define ALLOC_HOOK() reenter()
#include "allocs.h"
#endif

static void *post_forever(void *v)
{
	struct pair *p = v;
	for (uint64_t k = 0;; k++)
		transfer(p, k % 2 ? "fma" : "rdma", k % 2 ? 64 : 8192, 0, k);
	return NULL;
}

/* A fork child's work (fork, forkmidread): N 64 B FMA PUTs and N 64 KiB RDMA PUTs, then exit. */
static void child_posts(struct pair *p, uint64_t n, uint64_t seq)
{
	p->posts = p->errors = 0;
	for (uint64_t k = 0; k < n; k++)
		transfer(p, "fma", 64, 0, seq + k);
	for (uint64_t k = 0; k < n; k++)
		transfer(p, "rdma", 65536, 0, seq + n + k);
	printf("child posts=%llu errors=%llu\n", (unsigned long long)p->posts, (unsigned long long)p->errors);
	exit(p->errors ? 1 : 0);
}

/* forkmidread: the thread's one post, on its own pair. */
static void *post_once(void *v)
{
	transfer(v, "rdma", 65536, 0, 0);
	return NULL;
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

#ifdef WITH_PAPI
#include <papi.h>

/* The program's own PAPI measurement: calls to PAPI_start and PAPI_stop resolve as in any program
 * linked with libpapi (to libaar.so's PAPI_start when it is preloaded). */
static int papi_command(const char *what, const char *event)
{
	static int set = PAPI_NULL;
	long long v[1];
	if (!strcmp(what, "stop"))
		return PAPI_stop(set, v);
	if (!strcmp(what, "shutdown")) {
		PAPI_shutdown();
		set = PAPI_NULL;
		return 0;
	}
	if (!PAPI_is_initialized() && PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
		return -1000;
	if (set == PAPI_NULL) {
		int rc = PAPI_create_eventset(&set);
		if (rc == PAPI_OK)
			rc = PAPI_add_named_event(set, event);
		if (rc != PAPI_OK)
			return rc - 1000;
	}
	return PAPI_start(set);
}
#else
static int papi_command(const char *what, const char *event)
{
	(void)what;
	(void)event;
	return -2000;
}
#endif

/* forkhold: pipes to the prepare handler (entered; may leave), and the forking thread. */
static int hold_entered[2] = {-1, -1}, hold_leave[2] = {-1, -1};
static int hold_armed;
static pthread_t hold_thread;

/* Registered before libaar.so registers its handlers (at its start-up, in the first uGNI call):
 * prepare handlers run in the reverse order of registration (POSIX), so this one runs after
 * libaar.so's has taken its locks. */
static void hold_prepare(void)
{
	char c = 1;
	if (!__atomic_exchange_n(&hold_armed, 0, __ATOMIC_ACQ_REL))
		return;
	if (write(hold_entered[1], &c, 1) != 1 || read(hold_leave[0], &c, 1) != 1)
		fprintf(stderr, "driver: forkhold pipe failed\n");
}

static void *hold_fork(void *arg)
{
	(void)arg;
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	int status = -1;
	if (child < 0 || waitpid(child, &status, 0) != child)
		return (void *)0;
	return (void *)(intptr_t)(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	static struct pair p;
	int ready = 0;
	if (pthread_atfork(hold_prepare, NULL, NULL)) {
		fprintf(stderr, "driver: pthread_atfork failed\n");
		return 2;
	}
	const char *v = getenv("DRIVER_VERBOSE");
	if (v)
		verbose = atoi(v);
	uint64_t seq = 0;
	for (int i = 1; i < argc; i++) {
		const char *c = argv[i];
		/* The main pair is made at the first command that needs it, so that "threads" as the
		 * first command (after "stack", if any) makes the process's first uGNI calls from several
		 * threads at once. */
		if (!ready && strcmp(c, "threads") && strcmp(c, "stack") && strcmp(c, "papi") && strcmp(c, "postatexit")) {
			if (setup_pair(&p, 0, MAX_BYTES)) {
				fprintf(stderr, "driver: setup failed\n");
				return 2;
			}
			main_pair = &p;
			ready = 1;
		}
#define ARG(k) (i + (k) < argc ? argv[i + (k)] : "0")
		if (!strcmp(c, "fma") || !strcmp(c, "rdma") || !strcmp(c, "fmaget") || !strcmp(c, "rdmaget")) {
			uint64_t size = num(ARG(1)), count = num(ARG(2));
			uint16_t dlvr = (uint16_t)num(ARG(3));
			for (uint64_t k = 0; k < count; k++)
				transfer(&p, c, size, dlvr, seq++);
			i += 3;
		} else if (!strcmp(c, "burst")) {
			uint64_t size = num(ARG(1)), count = num(ARG(2));
			burst(&p, size, count, (uint16_t)num(ARG(3)), seq);
			seq += count;
			i += 3;
		} else if (!strcmp(c, "sleep")) {
			usleep((useconds_t)num(ARG(1)));
			i += 1;
		} else if (!strcmp(c, "cqwrite")) {
			uint64_t count = num(ARG(1));
			uint16_t dlvr = (uint16_t)num(ARG(2));
			/* An optional length: the next word, if it is a number. */
			uint64_t len = 0;
			int has_len = i + 3 < argc && argv[i + 3][0] >= '0' && argv[i + 3][0] <= '9';
			if (has_len)
				len = num(argv[i + 3]);
			for (uint64_t k = 0; k < count; k++)
				transfer(&p, c, len, dlvr, seq++);
			i += 2 + has_len;
		} else if (!strcmp(c, "ct")) {
			chained(&p, 0, num(ARG(1)), (unsigned)num(ARG(2)), (uint16_t)num(ARG(3)), seq++);
			i += 3;
		} else if (!strcmp(c, "ctcqw")) {
			chained(&p, 1, 0, (unsigned)num(ARG(1)), (uint16_t)num(ARG(2)), seq++);
			i += 2;
		} else if (!strcmp(c, "smsg") || !strcmp(c, "smsgtag")) {
			uint64_t size = num(ARG(1)), count = num(ARG(2));
			for (uint64_t k = 0; k < count; k++)
				smsg(&p, !strcmp(c, "smsgtag"), size, seq++);
			i += 2;
		} else if (!strcmp(c, "smsgburst")) {
			uint64_t size = num(ARG(1)), count = num(ARG(2));
			smsg_burst(&p, size, count, seq);
			seq += count;
			i += 2;
		} else if (!strcmp(c, "smsgmode")) {
			uint16_t m = (uint16_t)num(ARG(1));
			ok(&p, GNI_SmsgSetDeliveryMode(p.a.nic, m), "GNI_SmsgSetDeliveryMode");
			ok(&p, GNI_SmsgSetDeliveryMode(p.b.nic, m), "GNI_SmsgSetDeliveryMode");
			i += 1;
		} else if (!strcmp(c, "badpost")) {
			unsigned char local[64];
			gni_post_descriptor_t pd = a_to_b(&p, GNI_POST_FMA_PUT, sizeof local, 0, 0);
			pd.local_addr = (uint64_t)(uintptr_t)local;
			gni_return_t rc = GNI_PostFma(p.a.ep, &pd);
			p.posts++;
			printf("badpost rc=%d\n", (int)rc);
			if (rc == GNI_RC_SUCCESS)
				fail(&p, "a post from unregistered memory succeeded");
		} else if (!strcmp(c, "cepost")) {
			gni_post_descriptor_t pd = a_to_b(&p, GNI_POST_CE, num(ARG(1)), (uint16_t)num(ARG(2)), 0);
			gni_return_t rc = GNI_PostFma(p.a.ep, &pd);
			p.posts++;
			printf("cepost rc=%d dlvr_out=0x%x\n", (int)rc, pd.dlvr_mode);
			i += 2;
		} else if (!strcmp(c, "epunbind") || !strcmp(c, "epdestroy")) {
			/* Of A's endpoint, with a uGNI that refuses it (tests/c/ep_busy.c): rc printed. */
			gni_return_t rc = !strcmp(c, "epunbind") ? GNI_EpUnbind(p.a.ep) : GNI_EpDestroy(p.a.ep);
			printf("%s rc=%d\n", c, (int)rc);
		} else if (!strcmp(c, "nullpost")) {
			gni_return_t rc = GNI_PostFma(p.a.ep, NULL);
			p.posts++;
			printf("nullpost rc=%d\n", (int)rc);
		} else if (!strcmp(c, "net")) {
			if (aar_emu_set_network(atof(ARG(1)), atof(ARG(2)), atof(ARG(3)), atof(ARG(4))))
				fail(&p, "aar_emu_set_network refused");
			i += 4;
		} else if (!strcmp(c, "cadd") || !strcmp(c, "cset")) {
			long long x[5];
			for (int k = 0; k < 5; k++)
				x[k] = strtoll(ARG(k + 1), NULL, 0);
			(!strcmp(c, "cadd") ? aar_emu_counters_add : aar_emu_counters_set)(x[0], x[1], x[2], x[3], x[4]);
			i += 5;
		} else if (!strcmp(c, "chdir")) {
			if (chdir(ARG(1)))
				fail(&p, "chdir");
			i += 1;
		} else if (!strcmp(c, "freeze")) {
			aar_emu_counters_freeze((int)num(ARG(1)));
			i += 1;
		} else if (!strcmp(c, "api")) {
			i += 1 + api_command(ARG(1), ARG(2));
		} else if (!strcmp(c, "iter")) {
			i += 1 + iter_command(ARG(1), ARG(2));
		} else if (!strcmp(c, "iterloop")) {
			uint64_t n = num(ARG(1)), failed = 0;
			for (uint64_t k = 0; aar_iteration_begin && k < n; k++)
				failed += aar_iteration_begin() != 0 || aar_iteration_end() != 0;
			printf("iterloop failed=%llu\n", (unsigned long long)failed);
			i += 1;
		} else if (!strcmp(c, "forkhold")) {
			char ch = 0;
			if (pipe(hold_entered) || pipe(hold_leave)) {
				fail(&p, "forkhold: pipe");
				continue;
			}
			__atomic_store_n(&hold_armed, 1, __ATOMIC_RELEASE);
			if (pthread_create(&hold_thread, NULL, hold_fork, NULL)) {
				fail(&p, "forkhold: pthread_create");
				continue;
			}
			printf("forkhold entered=%d\n", read(hold_entered[0], &ch, 1) == 1);
		} else if (!strcmp(c, "forkrelease")) {
			char ch = 1;
			void *ok_fork = NULL;
			if (write(hold_leave[1], &ch, 1) != 1 || pthread_join(hold_thread, &ok_fork))
				fail(&p, "forkrelease");
			for (int k = 0; k < 2; k++) {
				close(hold_entered[k]);
				close(hold_leave[k]);
			}
			printf("forkrelease ok=%d\n", ok_fork != NULL);
		} else if (!strcmp(c, "touch")) {
			FILE *f = fopen(ARG(1), "w");
			if (!f || fclose(f))
				fail(&p, "touch");
			i += 1;
		} else if (!strcmp(c, "open")) {
			int fd = open(ARG(1), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
			if (fd < 0 || atexit(write_output_file))
				fail(&p, "open");
			output_fd = fd;
			printf("open fd=%d\n", fd);
			i += 1;
		} else if (!strcmp(c, "waitfile")) {
			int ms = 0;
			while (access(ARG(1), F_OK) && ms++ < 60000)
				usleep(1000);
			if (ms > 60000)
				fail(&p, "waitfile: the file never appeared");
			i += 1;
		} else if (!strcmp(c, "endpoints")) {
			/* N more endpoints bound to the same peer, as a rank talking to N peers has; later
			 * posts go out on the last one. */
			uint64_t n = num(ARG(1));
			for (uint64_t k = 0; k < n; k++) {
				gni_ep_handle_t ep;
				if (!ok(&p, GNI_EpCreate(p.a.nic, p.a.tx_cq, &ep), "GNI_EpCreate") ||
				    !ok(&p, GNI_EpBind(ep, p.b.addr, p.b.inst_id), "GNI_EpBind"))
					break;
				p.a.ep = ep;
			}
			i += 1;
		} else if (!strcmp(c, "fdfull")) {
			printf("fdfull fds=%d\n", take_all_descriptors());
		} else if (!strcmp(c, "memfull")) {
			size_t taken = take_all_memory();
			if (!taken)
				fail(&p, "memfull: cannot cap the address space");
			printf("memfull bytes=%zu\n", taken);
		} else if (!strcmp(c, "maxrss")) {
			char line[256];
			long kb = -1;
			FILE *status = fopen("/proc/self/status", "r");
			while (status && fgets(line, sizeof line, status))
				if (!strncmp(line, "VmHWM:", 6))
					kb = strtol(line + 6, NULL, 10);
			if (status)
				fclose(status);
			if (kb < 0)
				fail(&p, "maxrss: no VmHWM in /proc/self/status");
			printf("maxrss_kb=%ld\n", kb);
		} else if (!strcmp(c, "policy")) {
			printf("policy %s\n", aar_policy_name ? aar_policy_name() : "none");
		} else if (!strcmp(c, "alltoall") || !strcmp(c, "alltoall-in-place") || !strcmp(c, "neighbor")) {
			uint64_t size = num(ARG(1)), count = num(ARG(2));
			int neighbor = !strcmp(c, "neighbor"), *calls = neighbor ? &neighbor_calls : &alltoall_calls;
			int (*call)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm) =
				neighbor ? MPI_Neighbor_alltoall : MPI_Alltoall;
			const char *name = neighbor ? "MPI_Neighbor_alltoall" : "MPI_Alltoall";
			if (!call) {
				printf("%s unavailable\n", c);
			} else {
				alltoall_pair = &p;
				alltoall_seq = size << 32 | (seq & 0xffffffff);
				int before = *calls;
				int rc = !strcmp(c, "alltoall-in-place")
						 ? call(IN_PLACE, 0, DATATYPE_NULL, &alltoall_seq, (int)count, RECVTYPE, COMM)
						 : call(&p, (int)count, SENDTYPE, &alltoall_seq, -(int)count, RECVTYPE, COMM);
				seq += count;
				printf("%s rc=%d reached_pmpi=%d\n", c, rc, *calls - before);
				if (rc != 0 || *calls != before + 1) {
					char why[96];
					snprintf(why, sizeof why, "%s did not reach P%s once", name, name);
					fail(&p, why);
				}
			}
			i += 2;
		} else if (!strcmp(c, "barrier")) {
			if (!MPI_Barrier) {
				printf("barrier unavailable\n");
			} else {
				barrier_pair = &p;
				barrier_size = num(ARG(1));
				barrier_count = num(ARG(2));
				barrier_seq = seq;
				int before = barrier_calls;
				int rc = MPI_Barrier(COMM);
				seq += barrier_count;
				printf("barrier rc=%d reached_pmpi=%d\n", rc, barrier_calls - before);
				if (rc != 0 || barrier_calls != before + 1)
					fail(&p, "MPI_Barrier did not reach PMPI_Barrier once");
			}
			i += 2;
		} else if (!strcmp(c, "alltoall2")) {
			/* This thread's MPI_Alltoall of COUNT posts of SIZE; inside it, before its posts,
			 * another thread's whole MPI_Alltoall of COUNT2 posts of SIZE2, on a pair of its own. */
			static struct alltoall2_arg second;
			second = (struct alltoall2_arg){.size = num(ARG(3)), .count = num(ARG(4))};
			uint64_t size = num(ARG(1)), count = num(ARG(2));
			pthread_t t;
			__atomic_store_n(&alltoall2_phase, 0, __ATOMIC_RELEASE);
			if (!MPI_Alltoall || pthread_create(&t, NULL, alltoall2_second, &second)) {
				printf("alltoall2 unavailable\n");
			} else {
				alltoall_pair = &p;
				alltoall_seq = size << 32 | (seq & 0xffffffff);
				alltoall_waits = 1;
				int rc = MPI_Alltoall(&p, (int)count, SENDTYPE, &alltoall_seq, -(int)count, RECVTYPE, COMM);
				alltoall_waits = 0;
				pthread_join(t, NULL);
				seq += count;
				printf("alltoall2 rc=%d second_rc=%d\n", rc, second.rc);
				if (rc != 0 || second.rc != 0)
					fail(&p, "alltoall2: an MPI_Alltoall failed");
			}
			i += 4;
		} else if (!strcmp(c, "modetime")) {
			for (int k = 0; k < 4; k++)
				mode_wait_us[k] = (unsigned)num(ARG(k + 1));
			i += 4;
		} else if (!strcmp(c, "fork") || !strcmp(c, "forkmode")) {
			uint64_t n = num(ARG(1));
			int pin = !strcmp(c, "forkmode");
			fflush(stdout);
			pid_t child = fork();
			if (child == 0) {
				if (pin && aar_set_mode)
					printf("child api mode rc=%d\n", aar_set_mode((uint16_t)num(ARG(2))));
				child_posts(&p, n, seq);
			}
			int status = 0;
			if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
				fail(&p, "the forked child failed");
			printf("fork child=%d status=%d\n", (int)child, status);
			seq += 2 * n;
			i += 1 + pin;
		} else if (!strcmp(c, "forkmidread")) {
			uint64_t n = num(ARG(1));
			const char *papi = getenv("AAR_PAPI_LIBRARY");
			void *flaky = papi ? dlopen(papi, RTLD_LAZY | RTLD_NOLOAD) : NULL;
			volatile int *slow = flaky ? dlsym(flaky, "flaky_papi_slow_read") : NULL;
			volatile int *inside = flaky ? dlsym(flaky, "flaky_papi_in_slow_read") : NULL;
			static struct pair tp;
			pthread_t t;
			if (!slow || !inside || setup_pair(&tp, 60, 1 << 20))
				fail(&p, "forkmidread: no flaky_papi loaded as AAR_PAPI_LIBRARY, or no pair");
			*slow = (int)num(ARG(2));
			if (pthread_create(&t, NULL, post_once, &tp))
				fail(&p, "forkmidread: pthread_create");
			for (int k = 0; k < 10000 && !*inside; k++)
				usleep(1000);
			if (!*inside)
				fail(&p, "forkmidread: the thread's read never began");
			fflush(stdout);
			pid_t child = fork();
			if (child == 0) {
				child_posts(&p, n, seq);
			}
			int status = 0, k = 0;
			pid_t done = 0;
			for (; child > 0 && k < 20000 && (done = waitpid(child, &status, WNOHANG)) == 0; k++)
				usleep(1000);
			if (child > 0 && done == 0) {
				kill(child, SIGKILL);
				waitpid(child, &status, 0);
			}
			pthread_join(t, NULL);
			printf("forkmidread child=%s status=%d\n", done == child ? "exited" : "hung", status);
			seq += 2 * n;
			i += 2;
		} else if (!strcmp(c, "forkexec")) {
			fflush(stdout);
			pid_t child = fork();
			if (child == 0) {
				execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
				_exit(127);
			}
			int status = 0;
			if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
				fail(&p, "fork-then-exec failed");
			printf("forkexec status=%d\n", status);
		} else if (!strcmp(c, "papi")) {
			printf("papi %s rc=%d\n", ARG(1), papi_command(ARG(1), ARG(2)));
			i += strcmp(ARG(1), "start") ? 1 : 2;
		} else if (!strcmp(c, "papi_shutdown")) {
			void *papi = dlopen("libpapi.so.7.0", RTLD_NOW | RTLD_NOLOAD);
			void (*shutdown)(void) = papi ? (void (*)(void))dlsym(papi, "PAPI_shutdown") : NULL;
			if (shutdown)
				shutdown();
			printf("papi_shutdown %s\n", shutdown ? "done" : "unavailable");
		} else if (!strcmp(c, "postatexit")) {
			post_at_exit_size = num(ARG(1));
			if (atexit(post_at_exit))
				fail(&p, "postatexit: atexit failed");
			i += 1;
		} else if (!strcmp(c, "exit_posting")) {
			static struct pair tp;
			pthread_t t;
			if (setup_pair(&tp, 50, 1 << 20) == 0 && pthread_create(&t, NULL, post_forever, &tp) == 0) {
				while (__atomic_load_n(&tp.posts, __ATOMIC_RELAXED) < 1000)
					;
				printf("exit_posting posts>=1000\n");
				fflush(stdout);
				exit(0);
			}
			fail(&p, "exit_posting could not start its thread");
		} else if (!strcmp(c, "_exit")) {
			printf("posts=%llu errors=%llu\n", (unsigned long long)p.posts, (unsigned long long)p.errors);
			fflush(stdout);
			_exit(0);
		} else if (!strcmp(c, "reenter")) {
#ifdef REENTER
			reenter_armed = (int)num(ARG(1));
			printf("reenter %d (re-entered %llu)\n", reenter_armed, reentered);
#else
			printf("reenter unavailable\n");
#endif
			i += 1;
		} else if (!strcmp(c, "allocs")) {
#ifdef REENTER
			count_armed = (int)num(ARG(1));
			if (!count_armed)
				printf("allocations=%llu\n", allocations);
			else
				allocations = 0;
#else
			printf("allocs unavailable\n");
#endif
			i += 1;
		} else if (!strcmp(c, "stack")) {
			thread_stack = (size_t)num(ARG(1));
			i += 1;
		} else if (!strcmp(c, "stalled")) {
			unsigned n = (unsigned)num(ARG(1)), done = 0;
			struct thread_arg *t = calloc(n, sizeof *t);
			for (unsigned k = 0; k < n; k++) {
				t[k] = (struct thread_arg){ .inst = 100 + 2 * k, .size = num(ARG(2)), .count = num(ARG(3)) };
				pthread_t tid;
				pthread_create(&tid, NULL, thread_main, &t[k]);
				pthread_detach(tid);
			}
			for (int ms = 0; ms < 20000; ms++) {
				done = __atomic_load_n(&threads_done, __ATOMIC_ACQUIRE);
				if (done + 1 >= n)
					break;
				usleep(1000);
			}
			printf("stalled done=%u of %u\n", done, n);
			fflush(stdout);
			_exit(done + 1 >= n ? 0 : 1);
		} else if (!strcmp(c, "threads")) {
			unsigned n = (unsigned)num(ARG(1));
			struct thread_arg *t = calloc(n, sizeof *t);
			pthread_t *tid = calloc(n, sizeof *tid);
			for (unsigned k = 0; k < n; k++) {
				t[k].inst = 100 + 2 * k;
				t[k].size = num(ARG(2));
				t[k].count = num(ARG(3));
				pthread_attr_t attr;
				pthread_attr_init(&attr);
				if (thread_stack && pthread_attr_setstacksize(&attr, thread_stack)) {
					fprintf(stderr, "driver: stack %zu refused\n", thread_stack);
					p.errors++;
				}
				pthread_create(&tid[k], &attr, thread_main, &t[k]);
				pthread_attr_destroy(&attr);
			}
			for (unsigned k = 0; k < n; k++) {
				pthread_join(tid[k], NULL);
				p.posts += t[k].pair.posts;
				p.errors += t[k].pair.errors;
			}
			if (n) { /* kept: see thread_args */
				t[0].earlier = thread_args;
				thread_args = t;
			} else {
				free(t);
			}
			free(tid);
			i += 3;
		} else {
			fprintf(stderr, "driver: unknown command %s\n", c);
			return 2;
		}
	}
#ifdef REENTER
	reenter_armed = 0;
	printf("reentered=%llu\n", reentered);
	p.posts += reentered;
#endif
	printf("posts=%llu errors=%llu emu_posts=%llu\n", (unsigned long long)p.posts, (unsigned long long)p.errors,
	       aar_emu_post_count());
	return p.errors ? 1 : 0;
}
