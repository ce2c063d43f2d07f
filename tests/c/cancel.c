/*
 * cancel: a thread cancelled (pthread_cancel) while inside an MPI collective that libaar.so wraps.
 * The program is its own MPI (no MPI library): its PMPI_Allreduce, which libaar.so forwards to,
 * blocks the worker thread at a cancellation point (pause), as an MPI library's progress engine
 * can (a poll(2) on sockets). The main thread makes POSTS RDMA PUTs of BYTES over the emulated
 * uGNI (libaar.so starts), starts the worker, cancels it and joins it: the cancellation unwinds
 * through libaar.so's MPI_Allreduce. Then it makes an MPI_Allreduce of its own (this one returns
 * at once) and POSTS more PUTs, and exits.
 *
 *   cancel BYTES POSTS
 *
 * Prints "worker: cancelled" (or "worker: returned") and "posts=N errors=E" on stdout.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define UGNI_PROGRAM "cancel"
#include "pair.h"

/* libaar.so's, when it is preloaded; else the program's own is called directly. */
int MPI_Allreduce(const void *in, void *out, int count, int datatype, int op, int comm);
#pragma weak MPI_Allreduce

static pthread_t worker_thread;
/* Set by the worker itself: whether pthread_create has stored its id yet does not matter. */
static __thread int is_worker;

int PMPI_Allreduce(const void *in, void *out, int count, int datatype, int op, int comm)
{
	(void)datatype;
	(void)op;
	(void)comm;
	if (is_worker)
		for (;;)
			pause();
	for (int i = 0; i < count; i++)
		((long *)out)[i] = ((const long *)in)[i];
	return 0;
}

static int allreduce(const long *in, long *out)
{
	return (MPI_Allreduce ? MPI_Allreduce : PMPI_Allreduce)(in, out, 1, 0, 0, 0);
}

static void *worker(void *arg)
{
	(void)arg;
	is_worker = 1;
	long in = 1, out = 0;
	allreduce(&in, &out);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: cancel BYTES POSTS\n");
		return 2;
	}
	uint64_t bytes = strtoull(argv[1], NULL, 0);
	int posts = atoi(argv[2]);
	/* Posts first: libaar.so is initialised, so that the worker's call is routed as a call. */
	if (pair_setup(bytes))
		return 1;
	int errors = 0;
	for (int i = 0; i < posts; i++)
		errors += pair_put(bytes, 1, GNI_DLVMODE_ADAPTIVE0) != 0;
	if (pthread_create(&worker_thread, NULL, worker, NULL))
		return 1;
	usleep(100000);
	void *result = NULL;
	if (pthread_cancel(worker_thread) || pthread_join(worker_thread, &result))
		return 1;
	printf("worker: %s\n", result == PTHREAD_CANCELED ? "cancelled" : "returned");
	long in = 7, out = 0;
	if (allreduce(&in, &out) || out != 7)
		return 1;
	for (int i = 0; i < posts; i++)
		errors += pair_put(bytes, 1, GNI_DLVMODE_ADAPTIVE0) != 0;
	printf("posts=%d errors=%d\n", 2 * posts, errors);
	return errors != 0;
}
