/*
 * ab_threads: THREADS threads of one MPI process (MPI_THREAD_MULTIPLE) each call
 * MPI_Barrier(MPI_COMM_SELF) CALLS times at once, from the process's first MPI call on: with
 * AAR_AB_BOUNDARY=MPI_Barrier[:N], boundaries of several threads come at the same moments, the
 * library's start-up among them.
 *
 *   ab_threads CALLS THREADS
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long calls;

static void *work(void *arg)
{
	(void)arg;
	for (long i = 0; i < calls; i++)
		MPI_Barrier(MPI_COMM_SELF);
	return NULL;
}

int main(int argc, char **argv)
{
	int provided = 0;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	if (argc < 3 || provided < MPI_THREAD_MULTIPLE) {
		fprintf(stderr, "ab_threads: usage: ab_threads CALLS THREADS (and an MPI with MPI_THREAD_MULTIPLE)\n");
		return 2;
	}
	calls = atol(argv[1]);
	int n = atoi(argv[2]);
	pthread_t t[64];
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("ab_threads: %d threads x %ld barriers\n", n, calls);
	MPI_Finalize();
	return 0;
}
