/* The uGNI side of programs in other languages (ab_fortran.f90 through bind(C), throw.cc): two
 * NICs of one process, A PUTting into B (pair.h). */
#include "pair.h"

int posts_setup(long bytes)
{
	return pair_setup((uint64_t)bytes);
}

int posts_put(long bytes, int count)
{
	return pair_put((uint64_t)bytes, count, 0);
}
