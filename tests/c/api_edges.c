/*
 * api_edges: the C API of aar.h at its edges, one case per run.
 *
 *   api_edges first-names   8 threads, released at once, each make the process's first call of
 *                           libaar.so, aar_policy_name(), and print "policy NAME"
 *   api_edges bad-args      every function that takes an argument, given a bad one (NULL, empty,
 *                           too long, a character outside the label set, a mode with a flag bit,
 *                           a DMAPP routing value, a name that is no policy): prints "CALL rc=RC"
 *                           for each
 *
 * Linked with -laar (as aar.h advises), so every function exists.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv)
{
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
		printf("set_mode(0x81) rc=%d\n", aar_set_mode(0x81));
		/* DMAPP_ROUTING_ADAPTIVE_3: DMAPP's own value, not uGNI's. */
		printf("set_mode(6) rc=%d\n", aar_set_mode(6));
		printf("set_mode_name(NULL) rc=%d\n", aar_set_mode_name(NULL));
		printf("set_mode_name(\"bogus\") rc=%d\n", aar_set_mode_name("bogus"));
		return 0;
	}
	fprintf(stderr, "usage: api_edges first-names|bad-args\n");
	return 2;
}
