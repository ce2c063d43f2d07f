/*
 * flaky_papi: a PAPI whose reads fail now and then (a component whose read is interrupted),
 * given to libaar.so as AAR_PAPI_LIBRARY. It defines PAPI_read only; every other PAPI function
 * is found in the libpapi it links. FLAKY_PAPI_FAIL="FIRST COUNT [EVERY]": COUNT calls of
 * PAPI_read (counting from 1) fail with PAPI_ESYS, from call FIRST on, every EVERY-th (1 if not
 * given: calls FIRST..FIRST+COUNT-1); COUNT 0 means without end. FLAKY_PAPI_SLOW_START=MS: the
 * first PAPI_is_initialized (libaar.so's set-up asks it first) takes MS milliseconds more, and
 * PAPI_library_init says "flaky_papi: PAPI_library_init" on stderr when libaar.so calls it.
 * Every PAPI_read holds a lock, as libsde's read holds its spinlock; the first PAPI_read after the
 * program sets flaky_papi_slow_read (dlsym, in the library libaar.so opened) to MS holds it MS
 * milliseconds more, with flaky_papi_in_slow_read set meanwhile (a thread stuck in a read).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

volatile int flaky_papi_slow_read;
volatile int flaky_papi_in_slow_read;
static pthread_mutex_t read_lock = PTHREAD_MUTEX_INITIALIZER;

static int read_locked(int (*real)(int, long long *), int set, long long *values)
{
	int slow = __atomic_exchange_n(&flaky_papi_slow_read, 0, __ATOMIC_SEQ_CST);
	int rc;
	pthread_mutex_lock(&read_lock);
	if (slow) {
		flaky_papi_in_slow_read = 1;
		usleep((useconds_t)slow * 1000);
		flaky_papi_in_slow_read = 0;
	}
	rc = real ? real(set, values) : PAPI_ENOSUPP;
	pthread_mutex_unlock(&read_lock);
	return rc;
}

int PAPI_read(int set, long long *values)
{
	static int (*real)(int, long long *);
	static unsigned long calls, first, count, every = 1, failed;
	static int parsed;
	if (!real)
		real = (int (*)(int, long long *))dlsym(RTLD_NEXT, "PAPI_read");
	if (!parsed) {
		const char *spec = getenv("FLAKY_PAPI_FAIL");
		if (!spec || sscanf(spec, "%lu %lu %lu", &first, &count, &every) < 2 || every == 0)
			first = 0;
		parsed = 1;
	}
	calls++;
	if (first && calls >= first && (calls - first) % every == 0 && (count == 0 || failed < count)) {
		failed++;
		return PAPI_ESYS;
	}
	return read_locked(real, set, values);
}

int PAPI_is_initialized(void)
{
	static int (*real)(void);
	static int called;
	if (!real)
		real = (int (*)(void))dlsym(RTLD_NEXT, "PAPI_is_initialized");
	const char *slow = getenv("FLAKY_PAPI_SLOW_START");
	if (!called++ && slow)
		usleep((useconds_t)atoi(slow) * 1000);
	return real ? real() : PAPI_NOT_INITED;
}

int PAPI_library_init(int version)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "PAPI_library_init");
	if (getenv("FLAKY_PAPI_SLOW_START"))
		fputs("flaky_papi: PAPI_library_init\n", stderr);
	return real ? real(version) : PAPI_ENOSUPP;
}
