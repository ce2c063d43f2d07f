/*
 * throw: an MPI library whose MPI_Alltoall throws a C++ exception (an error handler that throws),
 * which the program catches and goes on. The program is its own MPI: its PMPI_Alltoall, which
 * libaar.so forwards to, throws. Posts come from tests/c/ab_fortran_posts.c (C).
 *
 *   throw BYTES POSTS
 *
 * Sets the emulated network so that `auto` chooses Adaptive for large messages, makes POSTS RDMA
 * PUTs of BYTES, calls MPI_Alltoall (which throws), then makes POSTS more. Prints "caught: WHAT"
 * (or "returned") and "posts ok" on stdout.
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

extern "C" {
int posts_setup(long bytes);
int posts_put(long bytes, int count);
int aar_emu_set_network(double latency_ad_us, double latency_bs_us, double stall_ad, double stall_bs);
// libaar.so's, when it is preloaded; else the program's own is called directly.
int MPI_Alltoall(const void *, int, int, void *, int, int, int) __attribute__((weak));
int PMPI_Alltoall(const void *, int, int, void *, int, int, int);
}

int PMPI_Alltoall(const void *, int, int, void *, int, int, int)
{
	throw std::runtime_error("MPI_ERR_OTHER from the error handler");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: throw BYTES POSTS\n");
		return 2;
	}
	long bytes = std::atol(argv[1]);
	int posts = std::atoi(argv[2]);
	// High Bias stalls far more than Adaptive: `auto` chooses Adaptive (ADAPTIVE0), which inside
	// MPI_Alltoall is ADAPTIVE1.
	if (aar_emu_set_network(1.2, 1.0, 2, 50) || posts_setup(bytes) || posts_put(bytes, posts))
		return 1;
	long send = 1, recv = 0;
	try {
		(MPI_Alltoall ? MPI_Alltoall : PMPI_Alltoall)(&send, 1, 0, &recv, 1, 0, 0);
		std::puts("returned");
	} catch (const std::exception &e) {
		std::printf("caught: %s\n", e.what());
	}
	if (posts_put(bytes, posts))
		return 1;
	std::puts("posts ok");
	return 0;
}
