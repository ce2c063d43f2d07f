/*
 * trace_nested: posts made while libaar.so writes its decision trace, on the thread that writes it.
 * The program defines write(2), as a file system client that forwards writes over the network does
 * (GekkoFS, UnifyFS): each write to the file named by TRACE_FILE raises SIGUSR1 first, and the
 * handler posts one RDMA PUT of 8 bytes on a pair of NICs of its own (the main thread's post is
 * still in flight on the other), so the post is made from a signal handler that interrupted the
 * library inside its write. Other writes (records, the emulator's log, stderr) go
 * straight through.
 *
 *   TRACE_FILE=PATH trace_nested POSTS
 *
 * One post of 8 bytes starts libaar.so; once aar_policy_name() no longer says "starting", POSTS
 * RDMA PUTs of 64 bytes, each waited for and checked (examples/ugni_pair.h). Prints "posts=P nested=N": every post made (the first and the handler's
 * included), and those of them the handler made, from an exit handler registered before
 * libaar.so's (so run after it, which writes the trace's last lines).
 */
#define _GNU_SOURCE
#define UGNI_PROGRAM "trace_nested"
#include "../../examples/ugni_pair.h"
#include "aar_weak.h"
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct ugni_side main_a, main_b, handler_a, handler_b;
static const char *trace_file;
static volatile sig_atomic_t nested, in_handler;
static int posts;

/* One RDMA PUT of `bytes` from a to b (examples/ugni_pair.h); 0 if it arrived intact. */
static int put(struct ugni_side *a, struct ugni_side *b, uint64_t bytes)
{
	static unsigned seq;
	return ugni_put_checked(a, b, bytes, 0, ++seq);
}

static void post_from_handler(int s)
{
	(void)s;
	in_handler = 1;
	if (put(&handler_a, &handler_b, 8))
		_exit(3);
	nested++;
	in_handler = 0;
}

/* The program's write(2): libaar.so's writes come here. */
ssize_t write(int fd, const void *buf, size_t count)
{
	char link[64], target[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = trace_file && !in_handler ? readlink(link, target, sizeof target - 1) : -1;
	if (n > 0) {
		target[n] = 0;
		if (!strcmp(target, trace_file))
			raise(SIGUSR1);
	}
	return syscall(SYS_write, fd, buf, count);
}

static void at_exit(void)
{
	printf("posts=%d nested=%d\n", posts + nested, (int)nested);
}

/* Before main, and before libaar.so's first call registers its exit handler: run after it. */
__attribute__((constructor)) static void register_first(void)
{
	atexit(at_exit);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: TRACE_FILE=PATH trace_nested POSTS\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = post_from_handler;
	sigaction(SIGUSR1, &sa, NULL);
	struct ugni_pair_config config = {
		.inst_id = 0, .cookie = 0x7a7a, .cq_entries = 64, .tx_cq_mode = GNI_CQ_BLOCKING, .bytes = 64,
	};
	if (ugni_pair_open(&main_a, &main_b, &config))
		return 1;
	config.inst_id = 2;
	if (ugni_pair_open(&handler_a, &handler_b, &config) || put(&main_a, &main_b, 8))
		return 1;
	posts = 1;
	for (int k = 0; k < 2000 && !strcmp(aar_policy_name(), "starting"); k++)
		usleep(1000);
	if (!strcmp(aar_policy_name(), "starting")) {
		fprintf(stderr, "trace_nested: libaar.so still starting after 2 s\n");
		return 1;
	}
	trace_file = getenv("TRACE_FILE");
	for (int k = 0; k < atoi(argv[1]); k++, posts++)
		if (put(&main_a, &main_b, 64))
			return 1;
	return 0;
}
