/*
 * threads_trace: several threads of one process post at once, uGNI and DMAPP, and mark iterations
 * with aar.h while they do (an MPI_THREAD_MULTIPLE or OpenMP program), for tests/threads.rs.
 *
 *   threads_trace THREADS POSTS MARKS END
 *
 * The main thread first makes one uGNI post of 8 bytes (which starts libaar.so) and waits until
 * aar_policy_name() no longer says "starting", so that every later post is routed, counted and
 * traced. Then THREADS uGNI threads (thread k: its own pair of NICs, RDMA PUTs of 64 * (k + 1)
 * bytes, each waited for and checked) and one DMAPP thread (blocking dmapp_put of 8 * 7 = 56 bytes
 * to PE 1, then one dmapp_get of the last back, counted as a post) each make POSTS posts. Every
 * 16 posts (from its 2nd on) a thread marks:
 *
 *   MARKS = begin   aar_iteration_begin only (each begin ends the iteration another thread began:
 *                   from the main thread's first begin, made before the threads start, every post
 *                   is inside an iteration)
 *   MARKS = both    aar_iteration_begin, then aar_iteration_end 8 posts later (AAR_EINVAL when
 *                   another thread's end or begin came first), and a label before each begin
 *
 * END says how the process ends:
 *
 *   join    uGNI thread 0 stops halfway and calls pthread_exit, the iteration it began, if no
 *           other thread ended it, still in progress;
 *           the main thread joins the others, ends the iteration in progress if any, and returns
 *   exit    the threads post without end; once each made POSTS posts, the main thread prints
 *           what they made and calls exit(0) while they keep posting and marking
 *
 * Prints "thread K bytes=B posts=P begins=G ends=E" per thread (K = THREADS for the DMAPP thread,
 * "main" for the main thread's own begins and ends), then "total posts=P begins=G ends=E".
 * Counts only what returned successfully; exit status 1 on the first failed post or aar.h call
 * that returned neither AAR_OK nor (for an end) AAR_EINVAL.
 */
#define _GNU_SOURCE
#define UGNI_PROGRAM "threads_trace"
#include "../../examples/ugni_pair.h"
#include "aar_weak.h"
#include "dmapp.h"
#include <pthread.h>
#include <unistd.h>

#define MAX_THREADS 16

struct worker {
	int k;
	uint64_t bytes;
	struct ugni_side a, b;
	/* read by the main thread while the worker runs */
	unsigned long posts, begins, ends;
};

static struct worker workers[MAX_THREADS + 1];
static int nthreads;
static unsigned long posts_each;
static int both, forever;
static dmapp_jobinfo_t job;

static void die(const char *what)
{
	fprintf(stderr, "threads_trace: %s\n", what);
	exit(1);
}

static void add(unsigned long *n)
{
	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

static unsigned long get(const unsigned long *n)
{
	return __atomic_load_n(n, __ATOMIC_RELAXED);
}

static void mark(struct worker *w, unsigned long i)
{
	const unsigned long every = 16;
	if (i % every == 1 % every) {
		if (both) {
			char label[16];
			snprintf(label, sizeof label, "t%d", w->k);
			int rc = aar_iteration_label(label);
			if (rc != AAR_OK && rc != AAR_EINVAL)
				die("aar_iteration_label");
		}
		if (aar_iteration_begin() != AAR_OK)
			die("aar_iteration_begin");
		add(&w->begins);
	} else if (both && i % every == (1 + every / 2) % every) {
		int rc = aar_iteration_end();
		if (rc == AAR_OK)
			add(&w->ends);
		else if (rc != AAR_EINVAL)
			die("aar_iteration_end");
	}
}

static void ugni_put(struct worker *w, unsigned long i)
{
	for (uint64_t j = 0; j < w->bytes; j++)
		w->a.send_buf[j] = (unsigned char)(j * 13u + i + (unsigned)w->k);
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = GNI_POST_RDMA_PUT;
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
	pd.dlvr_mode = GNI_DLVMODE_ADAPTIVE0;
	pd.local_addr = (uint64_t)(uintptr_t)w->a.send_buf;
	pd.local_mem_hndl = w->a.send_mh;
	pd.remote_addr = (uint64_t)(uintptr_t)w->b.recv_buf;
	pd.remote_mem_hndl = w->b.recv_mh;
	pd.length = w->bytes;
	if (ugni_check(GNI_PostRdma(w->a.ep, &pd), "GNI_PostRdma") || ugni_wait_local(&w->a, &pd) ||
	    memcmp(w->a.send_buf, w->b.recv_buf, w->bytes))
		die("a uGNI post failed");
}

static void open_pair(struct worker *w, uint32_t inst)
{
	const struct ugni_pair_config config = {
		.inst_id = inst, .cookie = 0x7a7a, .cq_entries = 64, .tx_cq_mode = GNI_CQ_BLOCKING, .bytes = 4096,
	};
	if (ugni_pair_open(&w->a, &w->b, &config))
		die("opening a pair of NICs failed");
}

static void *ugni_thread(void *v)
{
	struct worker *w = v;
	open_pair(w, 10 + 2 * (uint32_t)w->k);
	for (unsigned long i = 0; forever || i < posts_each; i++) {
		if (!forever && w->k == 0 && i == posts_each / 2)
			pthread_exit(NULL); /* its iteration, if any, left in progress */
		mark(w, i);
		ugni_put(w, i);
		add(&w->posts);
	}
	return NULL;
}

static void *dmapp_thread(void *v)
{
	struct worker *w = v;
	uint64_t src[7], back[7];
	char *target = (char *)job.sheap_seg.addr + 4096;
	for (unsigned long i = 0; forever || i < posts_each; i++) {
		mark(w, i);
		for (int j = 0; j < 7; j++)
			src[j] = i * 7 + (uint64_t)j;
		if (dmapp_put(target, &job.sheap_seg, 1, src, 7, DMAPP_QW) != DMAPP_RC_SUCCESS)
			die("dmapp_put failed");
		add(&w->posts);
	}
	if (dmapp_get(back, target, &job.sheap_seg, 1, 7, DMAPP_QW) != DMAPP_RC_SUCCESS || memcmp(back, src, sizeof src))
		die("dmapp_get did not read back the last put");
	add(&w->posts); /* the get is a message of the thread's too */
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5)
		die("usage: threads_trace THREADS POSTS begin|both join|exit");
	nthreads = atoi(argv[1]);
	posts_each = strtoul(argv[2], NULL, 0);
	both = !strcmp(argv[3], "both");
	forever = !strcmp(argv[4], "exit");
	if (nthreads < 1 || nthreads > MAX_THREADS || posts_each < 16)
		die("THREADS is 1 to 16, POSTS at least 16");
	if (!aar_iteration_begin)
		die("run it with libaar.so preloaded");

	/* The main thread's one post starts the library. */
	struct worker *m = &workers[MAX_THREADS];
	m->bytes = 8;
	open_pair(m, 2);
	ugni_put(m, 0);
	for (int k = 0; k < 2000 && !strcmp(aar_policy_name(), "starting"); k++)
		usleep(1000);
	if (!strcmp(aar_policy_name(), "starting"))
		die("libaar.so still starting after 2 s");

	dmapp_rma_attrs_t req = { .max_outstanding_nb = DMAPP_DEF_OUTSTANDING_NB,
				  .offload_threshold = DMAPP_OFFLOAD_THRESHOLD,
				  .put_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
				  .get_relaxed_ordering = DMAPP_ROUTING_ADAPTIVE,
				  .max_concurrency = 1 },
			  act;
	if (dmapp_init(&req, &act) != DMAPP_RC_SUCCESS || dmapp_get_jobinfo(&job) != DMAPP_RC_SUCCESS || job.npes < 2)
		die("dmapp_init failed");

	unsigned long main_begins = 0, main_ends = 0;
	if (aar_iteration_begin() != AAR_OK)
		die("aar_iteration_begin");
	main_begins++;

	pthread_t t[MAX_THREADS + 1];
	for (int k = 0; k <= nthreads; k++) {
		workers[k].k = k;
		workers[k].bytes = k < nthreads ? 64 * ((uint64_t)k + 1) : 56;
		if (pthread_create(&t[k], NULL, k < nthreads ? ugni_thread : dmapp_thread, &workers[k]))
			die("pthread_create");
	}
	if (forever) {
		for (int k = 0; k <= nthreads; k++)
			while (get(&workers[k].posts) < posts_each)
				usleep(1000);
	} else {
		for (int k = 0; k <= nthreads; k++)
			pthread_join(t[k], NULL);
		int rc = aar_iteration_end();
		if (rc == AAR_OK)
			main_ends++;
		else if (rc != AAR_EINVAL)
			die("aar_iteration_end");
	}
	/* The counts of posts that returned before exit() was called: each is traced and counted. */
	unsigned long posts = 1, begins = main_begins, ends = main_ends;
	printf("thread main bytes=8 posts=1 begins=%lu ends=%lu\n", main_begins, main_ends);
	for (int k = 0; k <= nthreads; k++) {
		struct worker *w = &workers[k];
		unsigned long p = get(&w->posts), b = get(&w->begins), e = get(&w->ends);
		printf("thread %d bytes=%llu posts=%lu begins=%lu ends=%lu\n", k, (unsigned long long)w->bytes, p, b, e);
		posts += p, begins += b, ends += e;
	}
	printf("total posts=%lu begins=%lu ends=%lu\n", posts, begins, ends);
	fflush(stdout);
	exit(0);
}
