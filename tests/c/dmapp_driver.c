/*
 * dmapp_driver: a scriptable DMAPP program for the integration tests, linked -ldmapp -lugni. This
 * process is PE 0 of the emulator's DMAPP job and sends to its other PEs. Commands run in argv
 * order:
 *
 *   init | initext                  dmapp_init / dmapp_init_ext with DMAPP's defaults (ADAPTIVE both
 *                                   ways); "init rc=RC put=P get=G": the routing "actual" shows
 *   pmi                             PMI_Init, as Cray's dmapp_init does (built with -DWITH_PMI -lpmi,
 *                                   to run under aar run); rc printed; PMI_Finalize at exit
 *   initas PUT GET | initas12 PUT GET    dmapp_init_ext / dmapp_init asking for that PUT and GET
 *                                   routing (DMAPP's defaults otherwise); printed as "init"
 *   finalize                        dmapp_finalize; rc printed
 *   finrace INSIDE                  a second thread makes a one-word PUT to PE 1 while this one calls
 *                                   dmapp_finalize ("finalize rc=RC") at the moment
 *                                   tests/c/dmapp_finrace.c (preloaded after libaar.so) makes:
 *                                   libaar.so's change of routing for that PUT goes to DMAPP after the
 *                                   job has ended (INSIDE 1: before libaar.so's dmapp_finalize returns);
 *                                   the PUT is refused: "finrace put rc=RC"
 *   form blocking|nb|nbi            the form put, get and amo use from here (blocking at first)
 *   put PE SIZE COUNT               COUNT PUTs of SIZE bytes to heap offset 0 of PE (8-byte elements
 *                                   when SIZE allows, else bytes)
 *   get PE SIZE COUNT               COUNT GETs of SIZE bytes from there, each checked against what
 *                                   the last put there wrote
 *   ixpe N SIZE                     dmapp_put_ixpe of SIZE bytes to PEs 1..N, then each checked
 *   amo COUNT                       COUNT dmapp_aadd_qw of 1 on PE 1, then the sum checked
 *   all                             every interposed data call, each form, once or a few times, with
 *                                   its effect checked (by blocking GETs)
 *   errors                          calls the emulator refuses (bad PE, misaligned, NULL segment,
 *                                   unknown type): "rc NAME=RC" per call
 *   closed                          calls made without a job (before dmapp_init or after
 *                                   dmapp_finalize): a 64-byte PUT and GET and an AMO on PE 1, each
 *                                   refused: "rc NAME=RC" per call
 *   huge                            calls whose size does not fit in 64 bits (nelems x element size, or
 *                                   that times the PEs of an _ixpe call), each refused: "rc NAME=RC"
 *   huger                           five PUTs of 2^62 bytes (sizes that fit, adding up past 2^64), each
 *                                   refused: "rc NAME=RC"
 *   attrs PUT GET | attrs12 PUT GET the application sets its routing (dmapp_set_rma_attrs_ext /
 *                                   dmapp_set_rma_attrs, the other fields as it read them); rc printed
 *   getset                          get-modify-set of the application: reads its attributes (prints
 *                                   the routing it sees), changes max_outstanding_nb, sets them
 *   routing                         the routing in force here, as the emulator sees it
 *   busy N                          the emulator answers the next N attribute set calls (of every
 *                                   thread, libaar.so's too) DMAPP_RC_BUSY; N = -1: every one
 *   threads N SIZE COUNT            N threads, each COUNT PUTs of SIZE to PE 1 + k % (npes - 1) at its
 *                                   own offset, then a checking GET; each prints its thread id and the
 *                                   attribute set calls made on it
 *   forkplacing MS                  (built with -DSLOW_NID: PMI_Get_nid takes SLOW_NID_MS ms more) a
 *                                   thread calls dmapp_init; MS ms later, while libaar.so places the
 *                                   PEs after it, fork: the child makes two 64 KiB PUTs to PE 1 and
 *                                   is given 20 s; the parent prints "forkplacing child=exited|hung
 *                                   status=S" and skips the commands after this one
 *   fork                            fork: the child runs the commands after this one; the parent waits for
 *                                   it ("fork status=S"; not 0: an error) and skips them
 *   tattrs PUT GET SIZE COUNT       one thread that sets its own routing (as "attrs"), then makes COUNT
 *                                   PUTs and COUNT GETs of SIZE to PE 1 at its own offset, each
 *                                   checked; prints "tattrs tid=T put=P get=G sets=S": its id, the
 *                                   routing in force on it at the end, the set calls made on it
 *   ugni SIZE COUNT                 COUNT uGNI RDMA PUTs of SIZE bytes between two NICs of this process
 *                                   (tests/c/pair.h), each checked; also makes the pair
 *                                   dmapp_layer_post() uses
 *   api mode DLVR | api name NAME | api auto | api disable | api enable    the C API of aar.h
 *   iter begin | iter end           the iteration markers of aar.h
 *   allocs 1 | allocs 0             count allocations from here / print the count
 *   memfull                         a program at its memory limit (limits.h; "memfull bytes=B")
 *
 * Every data call the program makes is counted by name; at the end it prints "called NAME=K" for
 * each, then "calls=N errors=E emu_calls=M sets=S app_sets=A": M is what the emulator received,
 * S the attribute set calls it received from every thread, A those the program made itself. Exit
 * status 0 only if E == 0.
 */
#define _GNU_SOURCE
#ifdef WITH_PMI
#include <pmi.h>
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aar_emu.h"
#include "aar_weak.h"
#include "allocs.h"
#include "dmapp.h"
#include "limits.h"
#define UGNI_PROGRAM "dmapp_driver"
#include "pair.h"

static unsigned long long errors, app_sets;

static void fail(const char *what)
{
	__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "dmapp_driver: %s\n", what);
}

/* ---- calls, counted by name ------------------------------------------------------------------- */

#define NAMES 96
static struct {
	const char *name;
	unsigned long long n;
} called[NAMES];
static pthread_mutex_t called_lock = PTHREAD_MUTEX_INITIALIZER;

static dmapp_return_t note(const char *name, dmapp_return_t rc)
{
	pthread_mutex_lock(&called_lock);
	int i = 0;
	while (i < NAMES - 1 && called[i].name && strcmp(called[i].name, name))
		i++;
	called[i].name = name;
	called[i].n++;
	pthread_mutex_unlock(&called_lock);
	return rc;
}

/* A call that must succeed. */
static void ok(const char *name, dmapp_return_t rc)
{
	if (rc != DMAPP_RC_SUCCESS) {
		char what[128];
		snprintf(what, sizeof what, "%s returned %d", name, (int)rc);
		fail(what);
	}
}

#define CALL(fn, ...) ok(#fn, note(#fn, fn(__VA_ARGS__)))

/* The form put, get and the AMOs use, and the completion each form needs. */
enum form { BLOCKING, NB, NBI };
static enum form form = BLOCKING;
static __thread dmapp_syncid_handle_t sid;

#define CALL3(f, fn, ...)                                                                \
	do {                                                                             \
		if ((f) == BLOCKING)                                                     \
			CALL(fn, __VA_ARGS__);                                           \
		else if ((f) == NB)                                                      \
			CALL(fn##_nb, __VA_ARGS__, &sid);                                \
		else                                                                     \
			CALL(fn##_nbi, __VA_ARGS__);                                     \
		complete(f);                                                             \
	} while (0)

static void complete(enum form f)
{
	if (f == NB)
		ok("dmapp_syncid_wait", dmapp_syncid_wait(&sid));
	else if (f == NBI)
		ok("dmapp_gsync_wait", dmapp_gsync_wait());
}

/* ---- the job ------------------------------------------------------------------------------------ */

static dmapp_jobinfo_t job;
static unsigned char *heap;
static dmapp_seg_desc_t *hseg;
#define LOCAL (1u << 20)
static unsigned char *src, *dst;
/* What the last put wrote at heap offset 0 of each PE (first 1 MiB). */
#define MAX_PES 16
static unsigned char *shadow[MAX_PES];

/* dmapp_init_ext (ext) or dmapp_init asking for PUT and GET routing, DMAPP's defaults otherwise. */
static void start(int ext, int put, int get)
{
	dmapp_return_t rc;
	int put_routing, get_routing;
	if (ext) {
		dmapp_rma_attrs_ext_t req, act;
		memset(&req, 0, sizeof req);
		req.max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB;
		req.offload_threshold = DMAPP_OFFLOAD_THRESHOLD;
		req.put_relaxed_ordering = (uint8_t)put;
		req.get_relaxed_ordering = (uint8_t)get;
		req.max_concurrency = 1;
		req.PI_ordering = DMAPP_PI_ORDERING_DEFAULT;
		memset(&act, 0xff, sizeof act);
		rc = dmapp_init_ext(&req, &act);
		put_routing = act.put_relaxed_ordering;
		get_routing = act.get_relaxed_ordering;
	} else {
		dmapp_rma_attrs_t req = { .max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB,
					  .offload_threshold = DMAPP_OFFLOAD_THRESHOLD,
					  .put_relaxed_ordering = (uint8_t)put,
					  .get_relaxed_ordering = (uint8_t)get,
					  .max_concurrency = 1 },
				  act;
		memset(&act, 0xff, sizeof act);
		rc = dmapp_init(&req, &act);
		put_routing = act.put_relaxed_ordering;
		get_routing = act.get_relaxed_ordering;
	}
	printf("init rc=%d put=%d get=%d\n", (int)rc, put_routing, get_routing);
	if (rc != DMAPP_RC_SUCCESS)
		return;
	ok("dmapp_get_jobinfo", dmapp_get_jobinfo(&job));
	heap = job.sheap_seg.addr;
	hseg = &job.sheap_seg;
	if (job.npes > MAX_PES)
		fail("more PEs than the driver handles");
}

#ifdef SLOW_NID
/* PMI's PMI_Get_nid, SLOW_NID_MS ms slower (exported with -rdynamic, so libaar.so finds it first). */
int PMI_Get_nid(int rank, int *nid)
{
	int (*real)(int, int *) = (int (*)(int, int *))dlsym(RTLD_NEXT, "PMI_Get_nid");
	const char *ms = getenv("SLOW_NID_MS");
	if (ms)
		usleep((useconds_t)atoi(ms) * 1000);
	return real ? real(rank, nid) : 1;
}
#endif

static void *init_thread(void *unused)
{
	(void)unused;
	start(0, DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_ADAPTIVE);
	return NULL;
}

/* forkplacing: see the list of commands. */
static void fork_while_placing(unsigned ms)
{
	pthread_t tid;
	pthread_create(&tid, NULL, init_thread, NULL);
	usleep(ms * 1000);
	fflush(stdout);
	pid_t child = fork();
	if (child < 0) {
		fail("fork");
		return;
	}
	if (child == 0) {
		alarm(20);
		dmapp_jobinfo_t job;
		ok("dmapp_get_jobinfo", dmapp_get_jobinfo(&job));
		uint64_t zero[8192] = { 0 };
		for (int k = 0; k < 2; k++)
			ok("dmapp_put", dmapp_put(job.sheap_seg.addr, &job.sheap_seg, 1, zero, 8192, DMAPP_QW));
		_exit(errors ? 1 : 0);
	}
	pthread_join(tid, NULL);
	int status = -1;
	waitpid(child, &status, 0);
	int hung = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
	printf("forkplacing child=%s status=%d\n", hung ? "hung" : "exited", status);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("forkplacing: the child failed");
}

static dmapp_type_t type_for(uint64_t size, uint64_t *nelems)
{
	if (size % 8 == 0) {
		*nelems = size / 8;
		return DMAPP_QW;
	}
	*nelems = size;
	return DMAPP_BYTE;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131u + seed * 29u + 7u);
}

static void check(const char *what, const void *got, const void *want, size_t n)
{
	if (memcmp(got, want, n)) {
		char msg[160];
		snprintf(msg, sizeof msg, "%s: data corrupted", what);
		fail(msg);
	}
}

/* n bytes at heap offset off on PE pe, read with a blocking GET (counted). */
static void peek(int pe, size_t off, void *out, size_t n)
{
	CALL(dmapp_get, out, heap + off, hseg, pe, n, DMAPP_BYTE);
}

static int64_t peek_word(int pe, size_t off)
{
	int64_t w = 0;
	CALL(dmapp_get, &w, heap + off, hseg, pe, 1, DMAPP_QW);
	return w;
}

static void put(int pe, uint64_t size, uint64_t count, unsigned seed)
{
	uint64_t n;
	dmapp_type_t t = type_for(size, &n);
	if (pe < 0 || pe >= MAX_PES || size > LOCAL) {
		fail("put: bad PE or size");
		return;
	}
	for (uint64_t k = 0; k < count; k++) {
		fill(src, size, seed + (unsigned)k);
		CALL3(form, dmapp_put, heap, hseg, pe, src, n, t);
		if (shadow[pe])
			memcpy(shadow[pe], src, size);
	}
}

static void get(int pe, uint64_t size, uint64_t count)
{
	uint64_t n;
	dmapp_type_t t = type_for(size, &n);
	if (pe < 0 || pe >= MAX_PES || size > LOCAL) {
		fail("get: bad PE or size");
		return;
	}
	for (uint64_t k = 0; k < count; k++) {
		memset(dst, 0xee, size);
		CALL3(form, dmapp_get, dst, heap, hseg, pe, n, t);
		check("get", dst, shadow[pe], size);
	}
}

/* ---- every call --------------------------------------------------------------------------------- */

static void all(void)
{
	static const size_t esize[4] = { 16, 8, 4, 1 };
	unsigned char *scratch = malloc(LOCAL);
	for (int f = 0; f < 3; f++) {
		size_t base = 65536 * (size_t)(f + 1);
		/* put, get, each element type */
		for (int t = 0; t < 4; t++) {
			size_t n = 64 / esize[t], off = base + 128 * (size_t)t;
			fill(src, 64, (unsigned)(f * 4 + t));
			CALL3(f, dmapp_put, heap + off, hseg, 1, src, n, (dmapp_type_t)t);
			memset(dst, 0, 64);
			CALL3(f, dmapp_get, dst, heap + off, hseg, 1, n, (dmapp_type_t)t);
			check("put/get", dst, src, 64);
		}
		/* put_flag: the data, then the flag word; get_flag_nbi reads the data back */
		fill(src, 256, (unsigned)(40 + f));
		CALL3(f, dmapp_put_flag, heap + base + 1024, hseg, 2, src, 32, DMAPP_QW, heap + base + 2048,
		      0xf1a9000 + (uint64_t)f);
		if (peek_word(2, base + 2048) != 0xf1a9000 + f)
			fail("put_flag: flag not written");
		memset(dst, 0, 256);
		CALL(dmapp_get_flag_nbi, dst, heap + base + 1024, hseg, 2, 32, DMAPP_QW);
		ok("dmapp_gsync_wait", dmapp_gsync_wait());
		check("put_flag/get_flag_nbi", dst, src, 256);
		/* iput: 8 words, every other source word, to every third slot; iget them back */
		fill(src, 128, (unsigned)(50 + f));
		memset(scratch, 0, 256);
		CALL(dmapp_put, heap + base + 4096, hseg, 3, scratch, 32, DMAPP_QW);
		CALL3(f, dmapp_iput, heap + base + 4096, hseg, 3, src, 3, 2, 8, DMAPP_QW);
		peek(3, base + 4096, dst, 192);
		for (size_t i = 0; i < 8; i++)
			check("iput", dst + 3 * i * 8, src + 2 * i * 8, 8);
		memset(scratch, 0, 128);
		CALL3(f, dmapp_iget, scratch, heap + base + 4096, hseg, 3, 2, 3, 8, DMAPP_QW);
		for (size_t i = 0; i < 8; i++)
			check("iget", scratch + 2 * i * 8, src + 2 * i * 8, 8);
		/* ixput, ixget: element i to / from index idx[i] */
		ptrdiff_t idx[4] = { 5, 0, 2, 9 };
		fill(src, 32, (unsigned)(60 + f));
		CALL3(f, dmapp_ixput, heap + base + 8192, hseg, 1, src, idx, 4, DMAPP_QW);
		memset(scratch, 0, 32);
		CALL3(f, dmapp_ixget, scratch, heap + base + 8192, hseg, 1, idx, 4, DMAPP_QW);
		check("ixput/ixget", scratch, src, 32);
		/* put_ixpe: the same block to each PE; scatter_ixpe: consecutive blocks; gather_ixpe:
		 * each PE's block back into consecutive places */
		dmapp_pe_t list[3] = { 3, 1, 2 };
		fill(src, 3 * 64, (unsigned)(70 + f));
		CALL3(f, dmapp_put_ixpe, heap + base + 12288, hseg, list, 3, src, 8, DMAPP_QW);
		for (int k = 0; k < 3; k++) {
			peek(list[k], base + 12288, dst, 64);
			check("put_ixpe", dst, src, 64);
		}
		CALL3(f, dmapp_scatter_ixpe, heap + base + 16384, hseg, list, 3, src, 8, DMAPP_QW);
		memset(scratch, 0, 3 * 64);
		CALL3(f, dmapp_gather_ixpe, scratch, heap + base + 16384, hseg, list, 3, 8, DMAPP_QW);
		check("scatter_ixpe/gather_ixpe", scratch, src, 3 * 64);
		/* the AMOs on one word of PE 1 */
		void *word = heap + base + 20480;
		int64_t old = -1, zero = 0;
		CALL(dmapp_put, word, hseg, 1, &zero, 1, DMAPP_QW);
		CALL3(f, dmapp_aadd_qw, word, hseg, 1, 5);
		CALL3(f, dmapp_afadd_qw, &old, word, hseg, 1, 3);
		if (old != 5)
			fail("aadd/afadd");
		CALL3(f, dmapp_aand_qw, word, hseg, 1, 0xc);
		CALL3(f, dmapp_aor_qw, word, hseg, 1, 1);
		CALL3(f, dmapp_axor_qw, word, hseg, 1, 0xf);
		if (peek_word(1, base + 20480) != 6)
			fail("aand/aor/axor");
		CALL3(f, dmapp_afand_qw, &old, word, hseg, 1, 0x7);
		CALL3(f, dmapp_afor_qw, &old, word, hseg, 1, 0x10);
		CALL3(f, dmapp_afxor_qw, &old, word, hseg, 1, 0x3);
		if (old != 0x16)
			fail("afand/afor/afxor");
		CALL3(f, dmapp_afax_qw, &old, word, hseg, 1, 0xff, 0x100);
		if (old != 0x15 || peek_word(1, base + 20480) != 0x115)
			fail("afax");
		CALL3(f, dmapp_acswap_qw, &old, word, hseg, 1, 0x115, 100);
		if (old != 0x115 || peek_word(1, base + 20480) != 100)
			fail("acswap");
		dmapp_amo_t add = { DMAPP_AMO_ADD, 11, 0 }, swap = { DMAPP_AMO_SWAP, 42, 0 };
		CALL3(f, dmapp_amo_put, word, hseg, 1, &add);
		CALL3(f, dmapp_amo_get, &old, word, hseg, 1, &swap);
		if (old != 111 || peek_word(1, base + 20480) != 42)
			fail("amo_put/amo_get");
	}
	free(scratch);
}

/* ---- errors the emulator returns ------------------------------------------------------------------ */

static void refused(const char *name, dmapp_return_t rc, dmapp_return_t want)
{
	note(name, rc);
	printf("rc %s=%d\n", name, (int)rc);
	if (rc != want) {
		char what[128];
		snprintf(what, sizeof what, "%s returned %d, the emulator's code is %d", name, (int)rc, (int)want);
		fail(what);
	}
}

static void refusals(void)
{
	int64_t w = 0;
	dmapp_seg_desc_t none;
	memset(&none, 0, sizeof none);
	refused("dmapp_put", dmapp_put(heap, hseg, job.npes + 5, src, 8, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	refused("dmapp_get_nb", dmapp_get_nb(dst, heap + 4, hseg, 1, 2, DMAPP_QW, &sid), DMAPP_RC_ALIGNMENT_ERROR);
	refused("dmapp_aadd_qw_nbi", dmapp_aadd_qw_nbi(heap + 3, hseg, 1, 1), DMAPP_RC_ALIGNMENT_ERROR);
	refused("dmapp_afadd_qw", dmapp_afadd_qw(&w, heap, NULL, 1, 1), DMAPP_RC_INVALID_PARAM);
	refused("dmapp_iput", dmapp_iput(heap, &none, 1, src, 1, 1, 4, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	refused("dmapp_put_nbi", dmapp_put_nbi(heap, hseg, 1, src, 4, (dmapp_type_t)9), DMAPP_RC_INVALID_PARAM);
	dmapp_pe_t bad[2] = { 1, 999 };
	refused("dmapp_put_ixpe", dmapp_put_ixpe(heap, hseg, bad, 2, src, 4, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
}

/* Without a job, DMAPP refuses every call (the emulator with DMAPP_RC_PERMISSION_ERROR). */
static void closed(void)
{
	int64_t w = 0;
	refused("dmapp_put", dmapp_put(heap, hseg, 1, src, 8, DMAPP_QW), DMAPP_RC_PERMISSION_ERROR);
	refused("dmapp_get", dmapp_get(dst, heap, hseg, 1, 8, DMAPP_QW), DMAPP_RC_PERMISSION_ERROR);
	refused("dmapp_afadd_qw", dmapp_afadd_qw(&w, heap, hseg, 1, 1), DMAPP_RC_PERMISSION_ERROR);
}

/* Sizes past 64 bits: 2^61 QW, 2^60 DQW and 2^62 DW are 2^64 bytes; 2^62 bytes to 4 PEs too. */
static void huge(void)
{
	uint64_t big = (uint64_t)1 << 60;
	dmapp_pe_t list[4] = { 1, 2, 3, 1 };
	refused("dmapp_put", dmapp_put(heap, hseg, 1, src, 2 * big, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
	refused("dmapp_get_nbi", dmapp_get_nbi(dst, heap, hseg, 1, big, DMAPP_DQW), DMAPP_RC_INVALID_PARAM);
	refused("dmapp_iput_nb", dmapp_iput_nb(heap, hseg, 1, src, 1, 1, 4 * big, DMAPP_DW, &sid),
		DMAPP_RC_INVALID_PARAM);
	refused("dmapp_put_ixpe", dmapp_put_ixpe(heap, hseg, list, 4, src, 4 * big, DMAPP_BYTE), DMAPP_RC_INVALID_PARAM);
}

/* PUTs of 2^62 bytes each, which fit in 64 bits but DMAPP refuses: five add up past 2^64. */
static void huger(void)
{
	for (int k = 0; k < 5; k++)
		refused("dmapp_put", dmapp_put(heap, hseg, 1, src, (uint64_t)1 << 59, DMAPP_QW), DMAPP_RC_INVALID_PARAM);
}

/* ---- the application's own attributes -------------------------------------------------------------- */

static void set_routing(int ext, int put_routing, int get_routing)
{
	dmapp_return_t rc;
	if (ext) {
		dmapp_rma_attrs_ext_t a;
		ok("dmapp_get_rma_attrs_ext", dmapp_get_rma_attrs_ext(&a));
		a.put_relaxed_ordering = (uint8_t)put_routing;
		a.get_relaxed_ordering = (uint8_t)get_routing;
		rc = dmapp_set_rma_attrs_ext(&a, NULL);
	} else {
		dmapp_rma_attrs_t a;
		ok("dmapp_get_rma_attrs", dmapp_get_rma_attrs(&a));
		a.put_relaxed_ordering = (uint8_t)put_routing;
		a.get_relaxed_ordering = (uint8_t)get_routing;
		rc = dmapp_set_rma_attrs(&a, NULL);
	}
	app_sets++;
	printf("attrs rc=%d\n", (int)rc);
}

static void getset(void)
{
	dmapp_rma_attrs_ext_t a;
	dmapp_rma_attrs_t b;
	ok("dmapp_get_rma_attrs_ext", dmapp_get_rma_attrs_ext(&a));
	ok("dmapp_get_rma_attrs", dmapp_get_rma_attrs(&b));
	printf("getset saw put=%d get=%d base put=%d get=%d\n", a.put_relaxed_ordering, a.get_relaxed_ordering,
	       b.put_relaxed_ordering, b.get_relaxed_ordering);
	a.max_outstanding_nb = 256;
	dmapp_return_t rc = dmapp_set_rma_attrs_ext(&a, NULL);
	app_sets++;
	printf("getset rc=%d\n", (int)rc);
}

/* ---- threads ------------------------------------------------------------------------------------ */

struct thread_arg {
	int index;
	uint64_t size, count;
};

static void *thread_main(void *v)
{
	struct thread_arg *t = v;
	int pe = 1 + t->index % (job.npes - 1);
	size_t off = (size_t)(t->index + 1) << 20;
	uint64_t n;
	dmapp_type_t type = type_for(t->size, &n);
	unsigned char *buf = malloc(2 * t->size + 16);
	for (uint64_t k = 0; k < t->count; k++) {
		fill(buf, t->size, (unsigned)(t->index * 1000 + k));
		CALL(dmapp_put, heap + off, hseg, pe, buf, n, type);
	}
	CALL(dmapp_get, buf + t->size, heap + off, hseg, pe, n, type);
	check("thread put/get", buf + t->size, buf, t->size);
	free(buf);
	printf("thread %d tid=%d sets=%llu\n", t->index, (int)gettid(), aar_emu_dmapp_attr_sets(0));
	return NULL;
}

/* One thread that states its own routing, then sends: DMAPP's attributes are the thread's. */
struct tattrs_arg {
	int put_routing, get_routing;
	uint64_t size, count;
};

static void *tattrs_main(void *v)
{
	struct tattrs_arg *a = v;
	size_t off = (size_t)12 << 20; /* past the "threads" threads' offsets, in the 16 MiB heap */
	uint64_t n;
	dmapp_type_t type = type_for(a->size, &n);
	unsigned char *buf = malloc(2 * a->size + 16);
	set_routing(1, a->put_routing, a->get_routing);
	for (uint64_t k = 0; k < a->count; k++) {
		fill(buf, a->size, (unsigned)(7000 + k));
		CALL(dmapp_put, heap + off, hseg, 1, buf, n, type);
		CALL(dmapp_get, buf + a->size, heap + off, hseg, 1, n, type);
		check("tattrs put/get", buf + a->size, buf, a->size);
	}
	free(buf);
	printf("tattrs tid=%d put=%d get=%d sets=%llu\n", (int)gettid(), aar_emu_dmapp_routing(0),
	       aar_emu_dmapp_routing(1), aar_emu_dmapp_attr_sets(0));
	return NULL;
}

/* Threads at once, each with its own routing, which it changes half-way: thread k states
 * mt_routing[k % 4][0] (by the _ext call for even k), makes `count` PUTs and GETs of `size` bytes,
 * reads its attributes back, then states mt_routing[k % 4][1] and does the same. The threads wait
 * for each other before each half, so that their calls and attribute calls interleave. */
static const int mt_routing[4][2][2] = {
	{ { DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_ADAPTIVE }, { DMAPP_ROUTING_IN_ORDER, DMAPP_ROUTING_ADAPTIVE } },
	{ { DMAPP_ROUTING_IN_ORDER, DMAPP_ROUTING_DETERMINISTIC }, { DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_ADAPTIVE } },
	{ { DMAPP_ROUTING_DETERMINISTIC_1, DMAPP_ROUTING_ADAPTIVE },
	  { DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_DETERMINISTIC } },
	{ { DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_IN_ORDER }, { DMAPP_ROUTING_DETERMINISTIC, DMAPP_ROUTING_ADAPTIVE } },
};
static pthread_barrier_t mt_barrier;

static void *mt_main(void *v)
{
	struct thread_arg *t = v;
	size_t off = (size_t)(t->index + 1) << 19;
	uint64_t n;
	dmapp_type_t type = type_for(t->size, &n);
	unsigned char *buf = malloc(2 * t->size + 16);
	for (int half = 0; half < 2; half++) {
		const int *r = mt_routing[t->index % 4][half];
		pthread_barrier_wait(&mt_barrier);
		set_routing(t->index % 2 == 0, r[0], r[1]);
		for (uint64_t k = 0; k < t->count; k++) {
			fill(buf, t->size, (unsigned)(t->index * 1000 + k));
			CALL(dmapp_put, heap + off, hseg, 1, buf, n, type);
			CALL(dmapp_get, buf + t->size, heap + off, hseg, 1, n, type);
			check("mt put/get", buf + t->size, buf, t->size);
		}
		dmapp_rma_attrs_ext_t a;
		ok("dmapp_get_rma_attrs_ext", dmapp_get_rma_attrs_ext(&a));
		printf("mt tid=%d half=%d app put=%d get=%d saw put=%d get=%d\n", (int)gettid(), half, r[0], r[1],
		       a.put_relaxed_ordering, a.get_relaxed_ordering);
	}
	free(buf);
	return NULL;
}

static void mt(unsigned n, uint64_t size, uint64_t count)
{
	struct thread_arg *t = calloc(n, sizeof *t);
	pthread_t *tid = calloc(n, sizeof *tid);
	pthread_barrier_init(&mt_barrier, NULL, n);
	for (unsigned k = 0; k < n; k++) {
		t[k] = (struct thread_arg){ .index = (int)k, .size = size, .count = count };
		pthread_create(&tid[k], NULL, mt_main, &t[k]);
	}
	for (unsigned k = 0; k < n; k++)
		pthread_join(tid[k], NULL);
	pthread_barrier_destroy(&mt_barrier);
	free(t);
	free(tid);
}

/* ---- the end of the job while another thread changes its routing ------------------------------- */

/* tests/c/dmapp_finrace.c's functions, when it is preloaded. */
static void *finrace_fn(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	if (!f)
		fail("finrace: tests/c/dmapp_finrace.c is not preloaded");
	return f;
}

/* One PUT of a word to PE 1 (refused: the job ends under it), then says so to
 * tests/c/dmapp_finrace.c. */
static void *finrace_main(void *v)
{
	(void)v;
	int64_t word = 1;
	dmapp_return_t rc = note("dmapp_put", dmapp_put(heap, hseg, 1, &word, 1, DMAPP_QW));
	printf("finrace put rc=%d\n", (int)rc);
	((void (*)(void))finrace_fn("finrace_sent"))();
	return NULL;
}

/* A second thread makes a PUT, whose change of routing this thread's dmapp_finalize meets
 * (tests/c/dmapp_finrace.c: after that dmapp_finalize, or inside it). */
static void finrace(int inside)
{
	void (*arm)(int) = (void (*)(int))finrace_fn("finrace_arm");
	void (*wait_set)(void) = (void (*)(void))finrace_fn("finrace_wait_set");
	if (!arm || !wait_set || !finrace_fn("finrace_ended") || !finrace_fn("finrace_sent"))
		return;
	arm(inside);
	pthread_t tid;
	pthread_create(&tid, NULL, finrace_main, NULL);
	wait_set();
	printf("finalize rc=%d\n", (int)dmapp_finalize());
	((void (*)(void))finrace_fn("finrace_ended"))();
	pthread_join(tid, NULL);
}

/* ---- uGNI beside DMAPP ---------------------------------------------------------------------------- */

static int ugni_ready;

static void ugni(uint64_t size, uint64_t count)
{
	if (!ugni_ready && pair_setup(LOCAL)) {
		fail("uGNI setup");
		return;
	}
	ugni_ready = 1;
	if (pair_put(size, (int)count, 0))
		fail("uGNI put");
}

/* Called by tests/c/dmapp_layer.c from inside dmapp_put (a libdmapp that sends through uGNI): one
 * 64-byte RDMA PUT that asks for ADAPTIVE0, on the pair of the "ugni" command. */
void dmapp_layer_post(void);
void dmapp_layer_post(void)
{
	if (ugni_ready && pair_put(64, 1, GNI_DLVMODE_ADAPTIVE0))
		fail("uGNI post from inside DMAPP");
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

#ifdef WITH_PMI
static void finalize_pmi(void)
{
	PMI_Finalize();
}
#endif

int main(int argc, char **argv)
{
	src = aligned_alloc(64, LOCAL);
	dst = aligned_alloc(64, LOCAL);
	for (int pe = 0; pe < MAX_PES; pe++)
		shadow[pe] = calloc(1, LOCAL);
	unsigned seed = 1;
	for (int i = 1; i < argc; i++) {
		const char *c = argv[i];
#define ARG(k) (i + (k) < argc ? argv[i + (k)] : "0")
		if (!strcmp(c, "init") || !strcmp(c, "initext")) {
			start(!strcmp(c, "initext"), DMAPP_ROUTING_ADAPTIVE, DMAPP_ROUTING_ADAPTIVE);
		} else if (!strcmp(c, "initas") || !strcmp(c, "initas12")) {
			start(!strcmp(c, "initas"), (int)num(ARG(1)), (int)num(ARG(2)));
			i += 2;
		} else if (!strcmp(c, "finrace")) {
			finrace((int)num(ARG(1)));
			i += 1;
		} else if (!strcmp(c, "finalize")) {
			printf("finalize rc=%d\n", (int)dmapp_finalize());
#ifdef WITH_PMI
		} else if (!strcmp(c, "pmi")) {
			int spawned = 0;
			printf("PMI_Init rc=%d\n", PMI_Init(&spawned));
			/* A rank that called PMI_Init and exits without PMI_Finalize fails its job (aar run,
			 * hydra, Open MPI's mpirun). */
			atexit(finalize_pmi);
#endif
		} else if (!strcmp(c, "form")) {
			form = !strcmp(ARG(1), "nb") ? NB : !strcmp(ARG(1), "nbi") ? NBI : BLOCKING;
			i += 1;
		} else if (!strcmp(c, "put")) {
			put((int)num(ARG(1)), num(ARG(2)), num(ARG(3)), seed);
			seed += (unsigned)num(ARG(3));
			i += 3;
		} else if (!strcmp(c, "get")) {
			get((int)num(ARG(1)), num(ARG(2)), num(ARG(3)));
			i += 3;
		} else if (!strcmp(c, "ixpe")) {
			dmapp_pe_t list[MAX_PES];
			uint32_t n = (uint32_t)num(ARG(1));
			uint64_t size = num(ARG(2)), nelems;
			dmapp_type_t t = type_for(size, &nelems);
			for (uint32_t k = 0; k < n && k < MAX_PES; k++)
				list[k] = (dmapp_pe_t)(1 + k);
			fill(src, size, seed++);
			CALL3(form, dmapp_put_ixpe, heap, hseg, list, n, src, nelems, t);
			for (uint32_t k = 0; k < n && k < MAX_PES; k++) {
				memcpy(shadow[1 + k], src, size);
				peek(1 + (int)k, 0, dst, size);
				check("put_ixpe", dst, src, size);
			}
			i += 2;
		} else if (!strcmp(c, "amo")) {
			uint64_t count = num(ARG(1));
			int64_t zero = 0;
			CALL(dmapp_put, heap + 4096, hseg, 1, &zero, 1, DMAPP_QW);
			for (uint64_t k = 0; k < count; k++)
				CALL3(form, dmapp_aadd_qw, heap + 4096, hseg, 1, 1);
			if (peek_word(1, 4096) != (int64_t)count)
				fail("amo: the sum is wrong");
			i += 1;
		} else if (!strcmp(c, "all")) {
			all();
		} else if (!strcmp(c, "errors")) {
			refusals();
		} else if (!strcmp(c, "closed")) {
			closed();
		} else if (!strcmp(c, "huge")) {
			huge();
		} else if (!strcmp(c, "huger")) {
			huger();
		} else if (!strcmp(c, "attrs") || !strcmp(c, "attrs12")) {
			set_routing(!strcmp(c, "attrs"), (int)num(ARG(1)), (int)num(ARG(2)));
			i += 2;
		} else if (!strcmp(c, "getset")) {
			getset();
		} else if (!strcmp(c, "busy")) {
			aar_emu_dmapp_set_busy((unsigned)strtol(ARG(1), NULL, 0));
			i += 1;
		} else if (!strcmp(c, "routing")) {
			printf("routing put=%d get=%d\n", aar_emu_dmapp_routing(0), aar_emu_dmapp_routing(1));
		} else if (!strcmp(c, "threads")) {
			unsigned n = (unsigned)num(ARG(1));
			struct thread_arg *t = calloc(n, sizeof *t);
			pthread_t *tid = calloc(n, sizeof *tid);
			for (unsigned k = 0; k < n; k++) {
				t[k] = (struct thread_arg){ .index = (int)k, .size = num(ARG(2)), .count = num(ARG(3)) };
				pthread_create(&tid[k], NULL, thread_main, &t[k]);
			}
			for (unsigned k = 0; k < n; k++)
				pthread_join(tid[k], NULL);
			free(t);
			free(tid);
			i += 3;
		} else if (!strcmp(c, "mt")) {
			mt((unsigned)num(ARG(1)), num(ARG(2)), num(ARG(3)));
			i += 3;
		} else if (!strcmp(c, "forkplacing")) {
			fork_while_placing((unsigned)num(ARG(1)));
			break;
		} else if (!strcmp(c, "fork")) {
			fflush(stdout);
			pid_t child = fork();
			if (child < 0)
				fail("fork");
			if (child > 0) {
				int status = -1;
				if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
					fail("fork: the child failed");
				printf("fork status=%d\n", status);
				break;
			}
		} else if (!strcmp(c, "tattrs")) {
			struct tattrs_arg a = { (int)num(ARG(1)), (int)num(ARG(2)), num(ARG(3)), num(ARG(4)) };
			pthread_t tid;
			pthread_create(&tid, NULL, tattrs_main, &a);
			pthread_join(tid, NULL);
			i += 4;
		} else if (!strcmp(c, "ugni")) {
			ugni(num(ARG(1)), num(ARG(2)));
			i += 2;
		} else if (!strcmp(c, "api")) {
			i += 1 + api_command(ARG(1), ARG(2));
		} else if (!strcmp(c, "iter")) {
			i += 1 + iter_command(ARG(1), ARG(2));
		} else if (!strcmp(c, "memfull")) {
			size_t taken = take_all_memory();
			if (!taken)
				fail("memfull: cannot cap the address space");
			printf("memfull bytes=%zu\n", taken);
		} else if (!strcmp(c, "allocs")) {
			count_armed = (int)num(ARG(1));
			if (!count_armed)
				printf("allocations=%llu\n", allocations);
			else
				allocations = 0;
			i += 1;
		} else {
			fprintf(stderr, "dmapp_driver: unknown command %s\n", c);
			return 2;
		}
	}
	unsigned long long calls = 0;
	for (int i = 0; i < NAMES && called[i].name; i++) {
		printf("called %s=%llu\n", called[i].name, called[i].n);
		calls += called[i].n;
	}
	printf("calls=%llu errors=%llu emu_calls=%llu sets=%llu app_sets=%llu\n", calls, errors, aar_emu_dmapp_calls(),
	       aar_emu_dmapp_attr_sets(1), app_sets);
	return errors ? 1 : 0;
}
