/*
 * api_edges: the C API of aar.h at its edges, one case per run.
 *
 *   api_edges first-names   8 threads, released at once, each make the process's first call of
 *                           libaar.so, aar_policy_name(), and print "policy NAME"
 *   api_edges bad-args      every function that takes an argument, given a bad one (NULL, empty,
 *                           too long, a character outside the label set, a mode with a flag bit
 *                           above the routing byte, two routing bits, a DMAPP routing value, a name
 *                           that is no policy): prints "CALL rc=RC" for each
 *   api_edges slow-start    (with hold_start.so as AAR_PAPI_LIBRARY) a thread starts the library
 *                           and its start-up waits for the program: from inside it, every call
 *                           that changes something and aar_policy_name() ("inside CALL rc=RC",
 *                           "inside policy NAME"); then from main, while it still waits,
 *                           aar_set_mode(ADAPTIVE1) and aar_policy_name() ("waiting ..."); then,
 *                           the start-up over, the same again ("started ...")
 *   api_edges after-exit    labels the first iteration twice ("first", then "second"), begins and
 *                           ends it, and returns; an atexit handler registered before the first
 *                           call of libaar.so (so run after libaar.so's own) then begins, labels
 *                           and ends one more and pins ADAPTIVE2 ("after exit ..."), then begins and
 *                           ends another without printing
 *   api_edges refused-begins  (with hold_start.so as AAR_PAPI_LIBRARY) a thread starts the library
 *                           and its start-up waits for the program: from inside it, a begin and
 *                           an end ("inside ..."); then from main, while it still waits, a begin
 *                           ("waiting ..."); then, the start-up over, two iterations begun and
 *                           ended ("started begin rc=RC index I end rc=RC")
 *   api_edges exit-race     a thread begins and ends iterations without pause while main, once
 *                           the first has ended, calls exit(): prints "raced"
 *   api_edges exit-while-forking  begins and ends iteration 0; then a thread forks, held inside
 *                           fork() (by a prepare handler registered before libaar.so's, so run
 *                           after it: libaar.so holds its iteration record then) while main calls
 *                           exit(); an atexit handler registered before libaar.so's first call
 *                           (run after libaar.so's) lets the fork go on, then begins and ends 1000
 *                           more iterations, enough rows to fill libaar.so's buffer ("after exit
 *                           1000 ended")
 *   api_edges exit-while-forking N  the same, but begins and ends N iterations before the fork
 *                           (N above the rows libaar.so buffers, so that its iteration record is
 *                           created and rows are still buffered at exit), and the atexit handler
 *                           only lets the fork go on ("begin rc=0 end rc=0" when all N returned 0)
 *   api_edges exit-while-forking-then-pause  as exit-while-forking, but the atexit handler waits
 *                           1.5 s (past the second after which a boundary writes the rows
 *                           buffered) before its 1000 iterations
 *
 * Linked with -laar (as aar.h advises), so every function exists.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aar.h"

enum { THREADS = 8 };
static pthread_barrier_t start;

static void *first_name(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&start);
	const char *name = aar_policy_name();
	/* One printf per line: the lines of the threads do not mix. */
	printf("policy %s\n", name ? name : "(null)");
	return NULL;
}

static sem_t held, release;
static int refused_begins;

/* Called by hold_start.so's constructor, inside libaar.so's start-up. */
void hold_start_up(void);
void hold_start_up(void)
{
	if (refused_begins) {
		int begin = aar_iteration_begin();
		printf("inside begin rc=%d index %lld\n", begin, (long long)aar_iteration_index());
		printf("inside end rc=%d\n", aar_iteration_end());
		fflush(stdout);
		sem_post(&held);
		sem_wait(&release);
		return;
	}
	printf("inside aar_set_mode rc=%d\n", aar_set_mode(0x20));
	printf("inside aar_set_mode_name rc=%d\n", aar_set_mode_name("steady"));
	printf("inside aar_set_auto rc=%d\n", aar_set_auto());
	printf("inside aar_disable rc=%d\n", aar_disable());
	printf("inside aar_enable rc=%d\n", aar_enable());
	printf("inside aar_iteration_begin rc=%d\n", aar_iteration_begin());
	printf("inside aar_iteration_end rc=%d\n", aar_iteration_end());
	printf("inside aar_iteration_label rc=%d\n", aar_iteration_label("early"));
	printf("inside policy %s\n", aar_policy_name());
	fflush(stdout);
	sem_post(&held);
	sem_wait(&release);
}

static void *start_library(void *unused)
{
	(void)unused;
	aar_policy_name();
	return NULL;
}

static void slow_start(void)
{
	pthread_t t;
	sem_init(&held, 0, 0);
	sem_init(&release, 0, 0);
	pthread_create(&t, NULL, start_library, NULL);
	sem_wait(&held);
	int rc = aar_set_mode(0x20);
	printf("waiting aar_set_mode rc=%d\n", rc);
	printf("waiting policy %s\n", aar_policy_name());
	sem_post(&release);
	pthread_join(t, NULL);
	rc = aar_set_mode(0x20);
	printf("started aar_set_mode rc=%d\n", rc);
	printf("started policy %s\n", aar_policy_name());
}

/* Refused begins while the start-up is held, then iterations once it is over. */
static void begins_while_starting(void)
{
	pthread_t t;
	refused_begins = 1;
	sem_init(&held, 0, 0);
	sem_init(&release, 0, 0);
	pthread_create(&t, NULL, start_library, NULL);
	sem_wait(&held);
	printf("waiting begin rc=%d\n", aar_iteration_begin());
	sem_post(&release);
	pthread_join(t, NULL);
	for (int k = 0; k < 2; k++) {
		int begin = aar_iteration_begin();
		long long index = (long long)aar_iteration_index();
		int end = aar_iteration_end();
		printf("started begin rc=%d index %lld end rc=%d\n", begin, index, end);
	}
}

static void after_exit(void)
{
	int begin = aar_iteration_begin();
	int label = aar_iteration_label("late");
	int end = aar_iteration_end();
	int mode = aar_set_mode(0x40);
	printf("after exit begin rc=%d label rc=%d end rc=%d mode rc=%d policy %s\n", begin, label, end, mode,
	       aar_policy_name());
	fflush(stdout);
	/* One more: the loss is said once per process. */
	aar_iteration_begin();
	aar_iteration_end();
}

/* Iterations without pause, until the process exits under it. */
static sem_t first_ended;
static void *mark_forever(void *unused)
{
	(void)unused;
	for (long k = 0;; k++) {
		aar_iteration_begin();
		aar_iteration_end();
		if (k == 0)
			sem_post(&first_ended);
	}
	return NULL;
}

/* exit-while-forking: a fork held until libaar.so's exit handler has run. */
static sem_t in_fork, fork_go;
static int hold_forks, after_exit_iterations, after_exit_pause_ms;
static pthread_t forker;

static void prepare_holds(void)
{
	if (hold_forks) {
		sem_post(&in_fork);
		sem_wait(&fork_go);
	}
}

static void *fork_once(void *unused)
{
	(void)unused;
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	return NULL;
}

static void after_exit_while_forking(void)
{
	hold_forks = 0;
	sem_post(&fork_go);
	pthread_join(forker, NULL);
	if (!after_exit_iterations)
		return;
	/* Past the second after which a boundary writes the rows buffered. */
	if (after_exit_pause_ms) {
		struct timespec pause = {after_exit_pause_ms / 1000, (long)(after_exit_pause_ms % 1000) * 1000000L};
		nanosleep(&pause, NULL);
	}
	for (int k = 0; k < after_exit_iterations; k++) {
		aar_iteration_begin();
		aar_iteration_end();
	}
	printf("after exit %d ended\n", after_exit_iterations);
	fflush(stdout);
}

/* n iterations, then exit() while a thread is held inside fork(); the atexit handler then ends
 * `after` more. */
static void exit_while_forking(int n, int after)
{
	after_exit_iterations = after;
	atexit(after_exit_while_forking);
	pthread_atfork(prepare_holds, NULL, NULL);
	int begin = 0, end = 0;
	for (int k = 0; k < n; k++) {
		int b = aar_iteration_begin();
		int e = aar_iteration_end();
		begin = begin ? begin : b;
		end = end ? end : e;
	}
	printf("begin rc=%d end rc=%d\n", begin, end);
	fflush(stdout);
	sem_init(&in_fork, 0, 0);
	sem_init(&fork_go, 0, 0);
	hold_forks = 1;
	pthread_create(&forker, NULL, fork_once, NULL);
	sem_wait(&in_fork);
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "exit-while-forking"))
		exit_while_forking(1, 1000);
	if (argc == 2 && !strcmp(argv[1], "exit-while-forking-then-pause")) {
		after_exit_pause_ms = 1500;
		exit_while_forking(1, 1000);
	}
	if (argc == 3 && !strcmp(argv[1], "exit-while-forking"))
		exit_while_forking(atoi(argv[2]), 0);
	if (argc == 2 && !strcmp(argv[1], "exit-race")) {
		pthread_t t;
		sem_init(&first_ended, 0, 0);
		pthread_create(&t, NULL, mark_forever, NULL);
		sem_wait(&first_ended);
		printf("raced\n");
		exit(0);
	}
	if (argc == 2 && !strcmp(argv[1], "after-exit")) {
		atexit(after_exit);
		int first = aar_iteration_label("first");
		int second = aar_iteration_label("second");
		int begin = aar_iteration_begin();
		int end = aar_iteration_end();
		printf("labels rc=%d,%d begin rc=%d end rc=%d\n", first, second, begin, end);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "refused-begins")) {
		begins_while_starting();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "slow-start")) {
		slow_start();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "first-names")) {
		pthread_t t[THREADS];
		pthread_barrier_init(&start, NULL, THREADS);
		for (int i = 0; i < THREADS; i++)
			pthread_create(&t[i], NULL, first_name, NULL);
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "bad-args")) {
		char long_label[66];
		memset(long_label, 'a', 65);
		long_label[65] = 0;
		printf("label(NULL) rc=%d\n", aar_iteration_label(NULL));
		printf("label(\"\") rc=%d\n", aar_iteration_label(""));
		printf("label(65 chars) rc=%d\n", aar_iteration_label(long_label));
		printf("label(\"a b\") rc=%d\n", aar_iteration_label("a b"));
		/* GNI_DLVMODE_ORDERED_TAIL with ADAPTIVE3: a flag, no mode alone. */
		printf("set_mode(0x180) rc=%d\n", aar_set_mode(0x180));
		printf("set_mode(0x81) rc=%d\n", aar_set_mode(0x81));
		/* DMAPP_ROUTING_ADAPTIVE_3: DMAPP's own value, not uGNI's. */
		printf("set_mode(6) rc=%d\n", aar_set_mode(6));
		printf("set_mode_name(NULL) rc=%d\n", aar_set_mode_name(NULL));
		printf("set_mode_name(\"bogus\") rc=%d\n", aar_set_mode_name("bogus"));
		return 0;
	}
	fprintf(stderr, "usage: api_edges first-names|bad-args|slow-start|refused-begins|after-exit|exit-race|"
			"exit-while-forking[-then-pause]\n");
	return 2;
}
