/*
 * signals: a program that blocks, handles or leaves pending the signals a write can raise
 * (SIGPIPE, SIGXFSZ), and is interrupted by a timer throughout, while libaar.so writes its lines,
 * trace and record. What the program sees of those signals must be its own only.
 *
 *   signals MODE POSTS
 *
 * MODE: "handle"  SIGPIPE and SIGXFSZ counted by handlers, and SIGALRM every 50 us (no
 *                 SA_RESTART: every slow call may fail with EINTR) to the end of the exit handlers
 *       "block"   SIGPIPE and SIGXFSZ blocked in the main thread
 *       "pending" as "block", with a SIGPIPE of the program's own raised and left pending first
 * Then POSTS RDMA PUTs of 64 KiB (pair.h). Prints "MODE sigpipe=N sigxfsz=N" (handled, or pending
 * at the end for "block" and "pending"), from main and again, as "exit ...", from an exit handler
 * registered before libaar.so's (so run after it).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "pair.h"

static volatile sig_atomic_t pipes, sizes, alarms;
static const char *mode = "";

static void on_signal(int s)
{
	if (s == SIGPIPE)
		pipes++;
	else if (s == SIGXFSZ)
		sizes++;
	else
		alarms++;
}

static void report(const char *when)
{
	int p = pipes, z = sizes;
	if (strcmp(mode, "handle")) {
		sigset_t pending;
		sigpending(&pending);
		p = sigismember(&pending, SIGPIPE);
		z = sigismember(&pending, SIGXFSZ);
	}
	printf("%s%s sigpipe=%d sigxfsz=%d\n", when, mode, p, z);
	fflush(stdout);
}

static void at_exit(void)
{
	report("exit ");
}

/* Before main, and before libaar.so's first call registers its exit handler: run after it. */
__attribute__((constructor)) static void register_first(void)
{
	atexit(at_exit);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: signals handle|block|pending POSTS\n");
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "handle")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(SIGPIPE, &sa, NULL);
		sigaction(SIGXFSZ, &sa, NULL);
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval every = {{0, 50}, {0, 50}};
		setitimer(ITIMER_REAL, &every, NULL);
	} else if (!strcmp(mode, "block") || !strcmp(mode, "pending")) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGPIPE);
		sigaddset(&s, SIGXFSZ);
		sigprocmask(SIG_BLOCK, &s, NULL);
		if (!strcmp(mode, "pending"))
			raise(SIGPIPE);
	} else {
		fprintf(stderr, "signals: unknown mode %s\n", mode);
		return 2;
	}
	if (pair_setup(65536) || pair_put(65536, atoi(argv[2]), 0)) {
		fprintf(stderr, "signals: posts failed\n");
		return 1;
	}
	report("");
	return 0;
}
