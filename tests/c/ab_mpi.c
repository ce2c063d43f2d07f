/*
 * ab_mpi: an unmodified MPI program whose iterations an MPI collective marks
 * (AAR_AB_BOUNDARY=MPI_Barrier or MPI_Allreduce:2). Every rank also posts over the emulated
 * uGNI (two NICs of its own, tests/c/pair.h), since MPICH's own transport does not use uGNI.
 *
 *   ab_mpi barrier ITERS BYTES     per iteration: MPI_Barrier, then 2 RDMA PUTs of BYTES
 *   ab_mpi allreduce ITERS BYTES   per iteration: MPI_Allreduce, 1 PUT, MPI_Allreduce, 1 PUT
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

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, size = 0, bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		fprintf(stderr, "usage: ab_mpi barrier|allreduce ITERS BYTES\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int allreduce = !strcmp(argv[1], "allreduce");
	long iters = atol(argv[2]);
	uint64_t bytes = strtoull(argv[3], NULL, 0);
	for (long it = 0; it <= iters; it++) {
		if (allreduce) {
			long in = it + rank, out = 0;
			bad |= MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
			bad |= out != it * size + (long)size * (size - 1) / 2;
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
