/* The uGNI side of ab_fortran.f90: C functions Fortran calls through bind(C). */
#include "pair.h"

int posts_setup(long bytes)
{
	return pair_setup((uint64_t)bytes);
}

int posts_put(long bytes, int count)
{
	return pair_put((uint64_t)bytes, count, 0);
}
