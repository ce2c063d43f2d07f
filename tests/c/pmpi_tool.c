/*
 * pmpi_tool: a profiling tool of the kind mpiP, IPM and Score-P are, built as a shared library
 * for LD_PRELOAD: it defines the MPI collectives libaar.so wraps, counts their calls and passes
 * each to its PMPI function. At exit it prints "pmpi_tool: MPI_<Fn> N" on stderr for each function
 * it saw called.
 */
#include <mpi.h>
#include <stdio.h>

enum {
	BARRIER,
	BCAST,
	REDUCE,
	ALLREDUCE,
	SCAN,
	EXSCAN,
	REDUCE_SCATTER,
	REDUCE_SCATTER_BLOCK,
	GATHER,
	GATHERV,
	SCATTER,
	SCATTERV,
	ALLGATHER,
	ALLGATHERV,
	ALLTOALL,
	ALLTOALLV,
	ALLTOALLW,
	NEIGHBOR_ALLGATHER,
	NEIGHBOR_ALLGATHERV,
	NEIGHBOR_ALLTOALL,
	NEIGHBOR_ALLTOALLV,
	NEIGHBOR_ALLTOALLW,
	N_FUNCTIONS
};

static const char *const names[N_FUNCTIONS] = {
	"MPI_Barrier",		  "MPI_Bcast",		     "MPI_Reduce",		"MPI_Allreduce",
	"MPI_Scan",		  "MPI_Exscan",		     "MPI_Reduce_scatter",	"MPI_Reduce_scatter_block",
	"MPI_Gather",		  "MPI_Gatherv",	     "MPI_Scatter",		"MPI_Scatterv",
	"MPI_Allgather",	  "MPI_Allgatherv",	     "MPI_Alltoall",		"MPI_Alltoallv",
	"MPI_Alltoallw",	  "MPI_Neighbor_allgather", "MPI_Neighbor_allgatherv", "MPI_Neighbor_alltoall",
	"MPI_Neighbor_alltoallv", "MPI_Neighbor_alltoallw",
};

static unsigned long calls[N_FUNCTIONS];

__attribute__((destructor)) static void report(void)
{
	for (int f = 0; f < N_FUNCTIONS; f++)
		if (calls[f])
			fprintf(stderr, "pmpi_tool: %s %lu\n", names[f], calls[f]);
}

int MPI_Barrier(MPI_Comm c)
{
	calls[BARRIER]++;
	return PMPI_Barrier(c);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
	calls[BCAST]++;
	return PMPI_Bcast(b, n, t, root, c);
}

int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
	calls[REDUCE]++;
	return PMPI_Reduce(s, r, n, t, op, root, c);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
	calls[ALLREDUCE]++;
	return PMPI_Allreduce(s, r, n, t, op, c);
}

int MPI_Scan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
	calls[SCAN]++;
	return PMPI_Scan(s, r, n, t, op, c);
}

int MPI_Exscan(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
	calls[EXSCAN]++;
	return PMPI_Exscan(s, r, n, t, op, c);
}

int MPI_Reduce_scatter(const void *s, void *r, const int *rn, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
	calls[REDUCE_SCATTER]++;
	return PMPI_Reduce_scatter(s, r, rn, t, op, c);
}

int MPI_Reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
	calls[REDUCE_SCATTER_BLOCK]++;
	return PMPI_Reduce_scatter_block(s, r, n, t, op, c);
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c)
{
	calls[GATHER]++;
	return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
}

int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt,
		int root, MPI_Comm c)
{
	calls[GATHERV]++;
	return PMPI_Gatherv(s, sn, st, r, rn, rd, rt, root, c);
}

int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c)
{
	calls[SCATTER]++;
	return PMPI_Scatter(s, sn, st, r, rn, rt, root, c);
}

int MPI_Scatterv(const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
		 int root, MPI_Comm c)
{
	calls[SCATTERV]++;
	return PMPI_Scatterv(s, sn, sd, st, r, rn, rt, root, c);
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
	calls[ALLGATHER]++;
	return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}

int MPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt,
		   MPI_Comm c)
{
	calls[ALLGATHERV]++;
	return PMPI_Allgatherv(s, sn, st, r, rn, rd, rt, c);
}

int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
	calls[ALLTOALL]++;
	return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
}

int MPI_Alltoallv(const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r, const int *rn,
		  const int *rd, MPI_Datatype rt, MPI_Comm c)
{
	calls[ALLTOALLV]++;
	return PMPI_Alltoallv(s, sn, sd, st, r, rn, rd, rt, c);
}

int MPI_Alltoallw(const void *s, const int *sn, const int *sd, const MPI_Datatype *st, void *r, const int *rn,
		  const int *rd, const MPI_Datatype *rt, MPI_Comm c)
{
	calls[ALLTOALLW]++;
	return PMPI_Alltoallw(s, sn, sd, st, r, rn, rd, rt, c);
}

int MPI_Neighbor_allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
	calls[NEIGHBOR_ALLGATHER]++;
	return PMPI_Neighbor_allgather(s, sn, st, r, rn, rt, c);
}

int MPI_Neighbor_allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd,
			    MPI_Datatype rt, MPI_Comm c)
{
	calls[NEIGHBOR_ALLGATHERV]++;
	return PMPI_Neighbor_allgatherv(s, sn, st, r, rn, rd, rt, c);
}

int MPI_Neighbor_alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
	calls[NEIGHBOR_ALLTOALL]++;
	return PMPI_Neighbor_alltoall(s, sn, st, r, rn, rt, c);
}

int MPI_Neighbor_alltoallv(const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r, const int *rn,
			   const int *rd, MPI_Datatype rt, MPI_Comm c)
{
	calls[NEIGHBOR_ALLTOALLV]++;
	return PMPI_Neighbor_alltoallv(s, sn, sd, st, r, rn, rd, rt, c);
}

int MPI_Neighbor_alltoallw(const void *s, const int *sn, const MPI_Aint *sd, const MPI_Datatype *st, void *r,
			   const int *rn, const MPI_Aint *rd, const MPI_Datatype *rt, MPI_Comm c)
{
	calls[NEIGHBOR_ALLTOALLW]++;
	return PMPI_Neighbor_alltoallw(s, sn, sd, st, r, rn, rd, rt, c);
}
