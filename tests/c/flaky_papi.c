/*
 * flaky_papi: a PAPI whose reads fail now and then (a component whose read is interrupted),
 * given to libaar.so as AAR_PAPI_LIBRARY. It defines PAPI_read only; every other PAPI function
 * is found in the libpapi it links. FLAKY_PAPI_FAIL="FIRST COUNT": calls FIRST..FIRST+COUNT-1
 * (counting from 1) of PAPI_read fail with PAPI_ESYS; COUNT 0 means every call from FIRST on.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>

int PAPI_read(int set, long long *values)
{
	static int (*real)(int, long long *);
	static unsigned long calls, first, count;
	static int parsed;
	if (!real)
		real = (int (*)(int, long long *))dlsym(RTLD_NEXT, "PAPI_read");
	if (!parsed) {
		const char *spec = getenv("FLAKY_PAPI_FAIL");
		if (!spec || sscanf(spec, "%lu %lu", &first, &count) != 2)
			first = 0;
		parsed = 1;
	}
	calls++;
	if (first && calls >= first && (count == 0 || calls < first + count))
		return PAPI_ESYS;
	return real ? real(set, values) : PAPI_ENOSUPP;
}
