/*
 * ab_mpi: an unmodified MPI program whose iterations an MPI collective marks
 * (AAR_AB_BOUNDARY=MPI_Barrier, MPI_Allreduce:2, MPI_Allgatherv or MPI_Alltoallv). Every rank
 * also posts over the emulated uGNI (two NICs of its own, tests/c/pair.h), since MPICH's own
 * transport does not use uGNI.
 *
 *   ab_mpi barrier ITERS BYTES     per iteration: MPI_Barrier, then 2 RDMA PUTs of BYTES
 *   ab_mpi allreduce ITERS BYTES   per iteration: MPI_Allreduce, 1 PUT, MPI_Allreduce, 1 PUT
 *   ab_mpi allgatherv ITERS BYTES  per iteration: MPI_Allgatherv (rank r gives r + 1 + ITER
 *                                  longs), then 2 PUTs
 *   ab_mpi alltoallv ITERS BYTES   per iteration: MPI_Alltoallv (rank r sends r + 1 + ITER longs
 *                                  to each rank), then 2 PUTs
 *
 * A last collective closes the last iteration, so ITERS iterations end on every rank. The uGNI
 * NICs are set up after the first collective: libaar.so is initialised at the first boundary
 * call. With ITERS 0 the program makes one collective call and no uGNI call at all. Prints
 * "rank R of N: ok" on stdout; exit status 0 only if every collective and post succeeded.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"

/* Each rank's counts differ, and grow with the iteration: a kind of call is not its counts. */
#define V_MAX 64

/* MPI_Allgatherv of rank r's r + 1 + it longs (value r * 1000 + it); 0 if every block arrived. */
static int allgatherv(int rank, int size, long it)
{
	long send[V_MAX] = {0}, recv[V_MAX * V_MAX] = {0};
	int counts[V_MAX] = {0}, displs[V_MAX] = {0}, off = 0, bad = 0;
	if (size > V_MAX || size + it > V_MAX)
		return 1;
	for (int r = 0; r < size; r++) {
		counts[r] = r + 1 + (int)it;
		displs[r] = off;
		off += counts[r];
	}
	for (int i = 0; i < counts[rank]; i++)
		send[i] = rank * 1000L + it;
	bad |= MPI_Allgatherv(send, counts[rank], MPI_LONG, recv, counts, displs, MPI_LONG, MPI_COMM_WORLD) !=
	       MPI_SUCCESS;
	for (int r = 0; r < size; r++)
		for (int i = 0; i < counts[r]; i++)
			bad |= recv[displs[r] + i] != r * 1000L + it;
	return bad;
}

/* MPI_Alltoallv: rank r sends r + 1 + it longs (value r * 1000 + dest) to each rank; 0 if every
 * block arrived. */
static int alltoallv(int rank, int size, long it)
{
	long send[V_MAX * V_MAX] = {0}, recv[V_MAX * V_MAX] = {0};
	int scounts[V_MAX] = {0}, sdispls[V_MAX] = {0}, rcounts[V_MAX] = {0}, rdispls[V_MAX] = {0};
	int soff = 0, roff = 0, bad = 0;
	if (size > V_MAX || size + it > V_MAX)
		return 1;
	for (int r = 0; r < size; r++) {
		scounts[r] = rank + 1 + (int)it;
		sdispls[r] = soff;
		soff += scounts[r];
		rcounts[r] = r + 1 + (int)it;
		rdispls[r] = roff;
		roff += rcounts[r];
		for (int i = 0; i < scounts[r]; i++)
			send[sdispls[r] + i] = rank * 1000L + r;
	}
	bad |= MPI_Alltoallv(send, scounts, sdispls, MPI_LONG, recv, rcounts, rdispls, MPI_LONG, MPI_COMM_WORLD) !=
	       MPI_SUCCESS;
	for (int r = 0; r < size; r++)
		for (int i = 0; i < rcounts[r]; i++)
			bad |= recv[rdispls[r] + i] != r * 1000L + rank;
	return bad;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, size = 0, bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		fprintf(stderr, "usage: ab_mpi barrier|allreduce|allgatherv|alltoallv ITERS BYTES\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int allreduce = !strcmp(argv[1], "allreduce");
	int gatherv = !strcmp(argv[1], "allgatherv"), toallv = !strcmp(argv[1], "alltoallv");
	long iters = atol(argv[2]);
	uint64_t bytes = strtoull(argv[3], NULL, 0);
	for (long it = 0; it <= iters; it++) {
		if (allreduce) {
			long in = it + rank, out = 0;
			bad |= MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
			bad |= out != it * size + (long)size * (size - 1) / 2;
		} else if (gatherv) {
			bad |= allgatherv(rank, size, it);
		} else if (toallv) {
			bad |= alltoallv(rank, size, it);
		} else {
			bad |= MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS;
		}
		if (it == iters)
			break;
		if (it == 0 && pair_setup(bytes))
			MPI_Abort(MPI_COMM_WORLD, 1);
		bad |= pair_put(bytes, 1, 0) != 0;
		if (allreduce) {
			int one = 1, sum = 0;
			bad |= MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS || sum != size;
		}
		bad |= pair_put(bytes, 1, 0) != 0;
	}
	printf("rank %d of %d: %s\n", rank, size, bad ? "FAILED" : "ok");
	MPI_Finalize();
	return bad;
}
