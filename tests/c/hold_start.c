/*
 * hold_start: a stand-in for libpapi.so (AAR_PAPI_LIBRARY) that holds libaar.so's start-up as
 * long as the program wants: loading it, inside the start-up, calls the program's
 * hold_start_up(), if it defines one. It defines no PAPI function, so libaar.so then goes on
 * without counters.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

__attribute__((constructor)) static void hold(void)
{
	void (*hold_start_up)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "hold_start_up");
	if (hold_start_up)
		hold_start_up();
}
