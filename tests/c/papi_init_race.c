/*
 * papi_init_race: a thread's first call into libaar.so (its C API) starts the library's set-up,
 * which opens PAPI, while the main thread initialises PAPI for a measurement of its own. libpapi
 * is not safe to initialise from two threads at once. Prints "PAPI_library_init ok" when the
 * main thread's call returned PAPI's version. Linked with the emulated libugni.so, whose NIC
 * counters are the PAPI events libaar.so counts.
 */
#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "aar_emu.h"
#include "aar_weak.h"

static void *first_call(void *unused)
{
	if (aar_policy_name)
		aar_policy_name();
	return unused;
}

int main(void)
{
	pthread_t t;
	(void)aar_emu_clock_ns();
	if (pthread_create(&t, NULL, first_call, NULL))
		return 2;
	/* Long enough for the thread to be inside the set-up (flaky_papi's slow start holds it there). */
	usleep(200 * 1000);
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	printf("PAPI_library_init %s\n", rc == PAPI_VER_CURRENT ? "ok" : "failed");
	pthread_join(t, NULL);
	return 0;
}
