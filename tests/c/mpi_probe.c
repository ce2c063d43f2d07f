/*
 * mpi_probe: a program that looks for MPI 4's MPI_Allreduce_c at run time (dlsym of
 * RTLD_DEFAULT, as a binding that supports MPI 3 and 4 libraries alike may) and calls it when it
 * is there: the sum of 1 over the ranks into `out`, which starts at -1. Prints
 * "size=N found=F rc=RC out=OUT" on stdout (N: the size of MPI_COMM_WORLD); exit status 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*allreduce_c_t)(const void *, void *, int64_t, MPI_Datatype, MPI_Op, MPI_Comm);

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	allreduce_c_t f = (allreduce_c_t)dlsym(RTLD_DEFAULT, "MPI_Allreduce_c");
	long in = 1, out = -1;
	int size = 0;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int rc = f ? f(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) : -1;
	printf("size=%d found=%d rc=%d out=%ld\n", size, f != NULL, rc, out);
	MPI_Finalize();
	return 0;
}
