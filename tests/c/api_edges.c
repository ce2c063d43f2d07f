/*
 * api_edges: the C API of aar.h at its edges, one case per run.
 *
 *   api_edges first-names   8 threads, released at once, each make the process's first call of
 *                           libaar.so, aar_policy_name(), and print "policy NAME"
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
	fprintf(stderr, "usage: api_edges first-names\n");
	return 2;
}
