/*
 * ab_mpi: an unmodified MPI program whose iterations an MPI collective marks
 * (AAR_AB_BOUNDARY=MPI_Barrier, MPI_Allreduce:2, or any other collective below). Every rank
 * also posts over the emulated uGNI (two NICs of its own, tests/c/pair.h), since MPICH's own
 * transport does not use uGNI.
 *
 *   ab_mpi barrier ITERS BYTES     per iteration: MPI_Barrier, then 2 RDMA PUTs of BYTES
 *   ab_mpi allreduce ITERS BYTES   per iteration: MPI_Allreduce, 1 PUT, MPI_Allreduce, 1 PUT
 *   ab_mpi allgatherv ITERS BYTES  per iteration: MPI_Allgatherv (rank r gives r + 1 + ITER
 *                                  longs), then 2 PUTs
 *   ab_mpi alltoallv ITERS BYTES   per iteration: MPI_Alltoallv (rank r sends r + 1 + ITER longs
 *                                  to each rank), then 2 PUTs
 *   ab_mpi gatherv|scatterv|alltoallw|reduce_scatter|reduce_scatter_block|scan|exscan ITERS BYTES
 *                                  per iteration: that collective (counts that differ by rank and
 *                                  grow by iteration where it takes counts per rank), then 2 PUTs
 *   ab_mpi neighbor_allgather|neighbor_allgatherv|neighbor_alltoall|neighbor_alltoallv|
 *          neighbor_alltoallw ITERS BYTES
 *                                  per iteration: that neighbourhood collective on a periodic ring
 *                                  (MPI_Cart_create; the neighbours are the ranks either side),
 *                                  then 2 PUTs
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

/* Built with -DLARGE_COUNT, every collective but MPI_Barrier is called in its MPI 4 large-count
 * form (MPI_Allreduce_c): counts of MPI_Count, displacements of MPI_Aint. */
#ifdef LARGE_COUNT
#define C(f) f##_c
typedef MPI_Count count_t;
typedef MPI_Aint displ_t;
#else
#define C(f) f
typedef int count_t;
typedef int displ_t;
#endif

/* Each rank's counts differ, and grow with the iteration: a kind of call is not its counts. */
#define V_MAX 64

/* Rank r's count r + 1 + it, and the blocks' displacements one after the other; 1 if they do not
 * fit in V_MAX. */
static int layout(int size, long it, count_t *counts, displ_t *displs)
{
	if (size > V_MAX || size + it > V_MAX)
		return 1;
	for (int r = 0, off = 0; r < size; r++) {
		counts[r] = r + 1 + (int)it;
		displs[r] = off;
		off += counts[r];
	}
	return 0;
}

/* MPI_Allgatherv (root < 0) or MPI_Gatherv to root of rank r's r + 1 + it longs (value
 * r * 1000 + it); 0 if every block arrived. */
static int gather_v(int rank, int size, long it, int root)
{
	long send[V_MAX] = {0}, recv[V_MAX * V_MAX] = {0};
	count_t counts[V_MAX] = {0};
	displ_t displs[V_MAX] = {0};
	int bad = 0;
	if (layout(size, it, counts, displs))
		return 1;
	for (int i = 0; i < counts[rank]; i++)
		send[i] = rank * 1000L + it;
	if (root < 0)
		bad |= C(MPI_Allgatherv)(send, counts[rank], MPI_LONG, recv, counts, displs, MPI_LONG, MPI_COMM_WORLD) !=
		       MPI_SUCCESS;
	else
		bad |= C(MPI_Gatherv)(send, counts[rank], MPI_LONG, recv, counts, displs, MPI_LONG, root,
				   MPI_COMM_WORLD) != MPI_SUCCESS;
	for (int r = 0; (root < 0 || rank == root) && r < size; r++)
		for (int i = 0; i < counts[r]; i++)
			bad |= recv[displs[r] + i] != r * 1000L + it;
	return bad;
}

/* MPI_Alltoallv: rank r sends r + 1 + it longs (value r * 1000 + dest) to each rank; 0 if every
 * block arrived. */
static int alltoallv(int rank, int size, long it)
{
	long send[V_MAX * V_MAX] = {0}, recv[V_MAX * V_MAX] = {0};
	count_t scounts[V_MAX] = {0}, rcounts[V_MAX] = {0};
	displ_t sdispls[V_MAX] = {0}, rdispls[V_MAX] = {0};
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
	bad |= C(MPI_Alltoallv)(send, scounts, sdispls, MPI_LONG, recv, rcounts, rdispls, MPI_LONG, MPI_COMM_WORLD) !=
	       MPI_SUCCESS;
	for (int r = 0; r < size; r++)
		for (int i = 0; i < rcounts[r]; i++)
			bad |= recv[rdispls[r] + i] != r * 1000L + rank;
	return bad;
}

/* MPI_Scatterv from rank 1: rank r gets r + 1 + it longs (value r * 1000 + it). */
static int scatterv(int rank, int size, long it)
{
	long send[V_MAX * V_MAX] = {0}, recv[V_MAX] = {0};
	count_t counts[V_MAX] = {0};
	displ_t displs[V_MAX] = {0};
	int bad = 0, root = 1 % size;
	if (layout(size, it, counts, displs))
		return 1;
	for (int r = 0; r < size; r++)
		for (int i = 0; i < counts[r]; i++)
			send[displs[r] + i] = r * 1000L + it;
	bad |= C(MPI_Scatterv)(send, counts, displs, MPI_LONG, recv, counts[rank], MPI_LONG, root, MPI_COMM_WORLD) !=
	       MPI_SUCCESS;
	for (int i = 0; i < counts[rank]; i++)
		bad |= recv[i] != rank * 1000L + it;
	return bad;
}

/* MPI_Alltoallw: as alltoallv, with a datatype per rank and displacements in bytes. */
static int alltoallw(int rank, int size, long it)
{
	long send[V_MAX * V_MAX] = {0}, recv[V_MAX * V_MAX] = {0};
	count_t scounts[V_MAX] = {0}, rcounts[V_MAX] = {0};
	displ_t sdispls[V_MAX] = {0}, rdispls[V_MAX] = {0};
	MPI_Datatype types[V_MAX];
	int soff = 0, roff = 0, bad = 0;
	if (size > V_MAX || size + it > V_MAX)
		return 1;
	for (int r = 0; r < V_MAX; r++)
		types[r] = MPI_LONG;
	for (int r = 0; r < size; r++) {
		scounts[r] = rank + 1 + (int)it;
		sdispls[r] = soff * (int)sizeof(long);
		rcounts[r] = r + 1 + (int)it;
		rdispls[r] = roff * (int)sizeof(long);
		for (int i = 0; i < scounts[r]; i++)
			send[soff + i] = rank * 1000L + r;
		soff += scounts[r];
		roff += rcounts[r];
	}
	bad |= C(MPI_Alltoallw)(send, scounts, sdispls, types, recv, rcounts, rdispls, types, MPI_COMM_WORLD) !=
	       MPI_SUCCESS;
	for (int r = 0; r < size; r++)
		for (int i = 0; i < rcounts[r]; i++)
			bad |= recv[rdispls[r] / (int)sizeof(long) + i] != r * 1000L + rank;
	return bad;
}

/* MPI_Reduce_scatter (rank r gets r + 1 longs) or MPI_Reduce_scatter_block (2 longs each) of
 * every rank's q + it: each value received is the sum over the ranks. */
static int reduce_scatter(int rank, int size, long it, int block)
{
	long send[V_MAX * V_MAX] = {0}, recv[V_MAX] = {0};
	count_t counts[V_MAX] = {0};
	int total = 0, bad = 0;
	if (size > V_MAX)
		return 1;
	for (int r = 0; r < size; r++) {
		counts[r] = block ? 2 : r + 1;
		total += counts[r];
	}
	for (int i = 0; i < total; i++)
		send[i] = rank + it;
	if (block)
		bad |= C(MPI_Reduce_scatter_block)(send, recv, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
	else
		bad |= C(MPI_Reduce_scatter)(send, recv, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
	for (int i = 0; i < counts[rank]; i++)
		bad |= recv[i] != (long)size * (size - 1) / 2 + size * it;
	return bad;
}

/* MPI_Scan (inclusive) or MPI_Exscan (exclusive; rank 0 gets nothing defined) of rank + it. */
static int scan(int rank, long it, int exclusive)
{
	long in = rank + it, out = 0;
	int bad = 0;
	if (exclusive) {
		bad |= C(MPI_Exscan)(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
		bad |= rank > 0 && out != (long)rank * (rank - 1) / 2 + rank * it;
	} else {
		bad |= C(MPI_Scan)(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
		bad |= out != (long)rank * (rank + 1) / 2 + (rank + 1) * it;
	}
	return bad;
}

/* The periodic ring the neighbourhood collectives run on; its neighbours are, in order, the rank
 * below and the rank above (MPI_Cart_create's order for one dimension). */
static MPI_Comm ring = MPI_COMM_NULL;

/* Rank r's count towards its neighbours: r + 1 + it longs. */
static int ring_count(int r, long it)
{
	return r + 1 + (int)it;
}

/* A neighbourhood collective MODE (without "neighbor_") on the ring; 0 if every block arrived.
 * Rank r sends r * 1000 + k to its k-th neighbour (allgather forms: r * 1000 to both). */
static int neighbor(const char *mode, int rank, int size, long it)
{
	int nb[2] = {(rank + size - 1) % size, (rank + 1) % size};
	long send[2 * V_MAX] = {0}, recv[2 * V_MAX] = {0};
	count_t scounts[2], rcounts[2];
	displ_t sdispls[2], rdispls[2];
	int bad = 0;
	MPI_Aint sbytes[2], rbytes[2];
	MPI_Datatype types[2] = {MPI_LONG, MPI_LONG};
	if (size + it > V_MAX)
		return 1;
	/* The forms that take one count use the same everywhere (the ring's smallest), in blocks of it. */
	int gather = !strncmp(mode, "allgather", 9), one = ring_count(0, it);
	int single = !strcmp(mode, "allgather") || !strcmp(mode, "alltoall");
	for (int k = 0, soff = 0, roff = 0; k < 2; k++) {
		scounts[k] = single ? one : ring_count(rank, it);
		sdispls[k] = gather ? 0 : soff;
		rcounts[k] = single ? one : ring_count(nb[k], it);
		rdispls[k] = roff;
		sbytes[k] = (MPI_Aint)sdispls[k] * (MPI_Aint)sizeof(long);
		rbytes[k] = (MPI_Aint)rdispls[k] * (MPI_Aint)sizeof(long);
		for (int i = 0; i < scounts[k]; i++)
			send[sdispls[k] + i] = rank * 1000L + (gather ? 0 : k);
		soff += scounts[k];
		roff += rcounts[k];
	}
	if (!strcmp(mode, "allgather"))
		bad |= C(MPI_Neighbor_allgather)(send, one, MPI_LONG, recv, one, MPI_LONG, ring) != MPI_SUCCESS;
	else if (!strcmp(mode, "allgatherv"))
		bad |= C(MPI_Neighbor_allgatherv)(send, scounts[0], MPI_LONG, recv, rcounts, rdispls, MPI_LONG, ring) !=
		       MPI_SUCCESS;
	else if (!strcmp(mode, "alltoall"))
		bad |= C(MPI_Neighbor_alltoall)(send, one, MPI_LONG, recv, one, MPI_LONG, ring) != MPI_SUCCESS;
	else if (!strcmp(mode, "alltoallv"))
		bad |= C(MPI_Neighbor_alltoallv)(send, scounts, sdispls, MPI_LONG, recv, rcounts, rdispls, MPI_LONG, ring) !=
		       MPI_SUCCESS;
	else if (!strcmp(mode, "alltoallw"))
		bad |= C(MPI_Neighbor_alltoallw)(send, scounts, sbytes, types, recv, rcounts, rbytes, types, ring) !=
		       MPI_SUCCESS;
	else
		return 1;
	for (int k = 0; k < 2; k++) {
		/* The k-th neighbour sent its block for its (1 - k)-th neighbour: this rank. */
		long want = nb[k] * 1000L + (gather ? 0 : 1 - k);
		for (int i = 0; i < rcounts[k]; i++)
			bad |= recv[rdispls[k] + i] != want;
	}
	return bad;
}

static const char *const MODES[] = {
	"barrier",           "allreduce",          "allgatherv",         "alltoallv",         "gatherv",
	"scatterv",          "alltoallw",          "reduce_scatter",     "reduce_scatter_block",
	"scan",              "exscan",             "neighbor_allgather", "neighbor_allgatherv",
	"neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw",
};

static int known(const char *mode)
{
	for (size_t i = 0; i < sizeof MODES / sizeof *MODES; i++)
		if (!strcmp(mode, MODES[i]))
			return 1;
	return 0;
}

/* One call of the collective MODE names (not allreduce or barrier). */
static int collective(const char *mode, int rank, int size, long it)
{
	if (!strcmp(mode, "allgatherv"))
		return gather_v(rank, size, it, -1);
	if (!strcmp(mode, "alltoallv"))
		return alltoallv(rank, size, it);
	if (!strcmp(mode, "gatherv"))
		return gather_v(rank, size, it, 1 % size);
	if (!strcmp(mode, "scatterv"))
		return scatterv(rank, size, it);
	if (!strcmp(mode, "alltoallw"))
		return alltoallw(rank, size, it);
	if (!strcmp(mode, "reduce_scatter"))
		return reduce_scatter(rank, size, it, 0);
	if (!strcmp(mode, "reduce_scatter_block"))
		return reduce_scatter(rank, size, it, 1);
	if (!strcmp(mode, "scan"))
		return scan(rank, it, 0);
	if (!strcmp(mode, "exscan"))
		return scan(rank, it, 1);
	if (!strncmp(mode, "neighbor_", 9))
		return neighbor(mode + 9, rank, size, it);
	return 1;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, size = 0, bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4 || !known(argv[1])) {
		fprintf(stderr, "usage: ab_mpi barrier|allreduce|allgatherv|alltoallv|gatherv|scatterv|alltoallw|"
				"reduce_scatter|reduce_scatter_block|scan|exscan|neighbor_allgather|"
				"neighbor_allgatherv|neighbor_alltoall|neighbor_alltoallv|neighbor_alltoallw ITERS BYTES\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int periodic = 1;
	if (!strncmp(argv[1], "neighbor_", 9) &&
	    MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &periodic, 0, &ring) != MPI_SUCCESS)
		MPI_Abort(MPI_COMM_WORLD, 1);
	int allreduce = !strcmp(argv[1], "allreduce"), barrier = !strcmp(argv[1], "barrier");
	long iters = atol(argv[2]);
	uint64_t bytes = strtoull(argv[3], NULL, 0);
	for (long it = 0; it <= iters; it++) {
		if (allreduce) {
			long in = it + rank, out = 0;
			bad |= C(MPI_Allreduce)(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
			bad |= out != it * size + (long)size * (size - 1) / 2;
		} else if (barrier) {
			bad |= MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS;
		} else {
			bad |= collective(argv[1], rank, size, it) != 0;
		}
		if (it == iters)
			break;
		if (it == 0 && pair_setup(bytes))
			MPI_Abort(MPI_COMM_WORLD, 1);
		bad |= pair_put(bytes, 1, 0) != 0;
		if (allreduce) {
			int one = 1, sum = 0;
			bad |= C(MPI_Allreduce)(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS || sum != size;
		}
		bad |= pair_put(bytes, 1, 0) != 0;
	}
	printf("rank %d of %d: %s\n", rank, size, bad ? "FAILED" : "ok");
	if (ring != MPI_COMM_NULL)
		MPI_Comm_free(&ring);
	MPI_Finalize();
	return bad;
}
