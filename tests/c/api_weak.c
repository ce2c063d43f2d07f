/*
 * api_weak: finding the C API of libaar.so at run time, without linking it, in the two ways aar.h
 * describes. Prints:
 *
 *   weak found|null [rc=RC]     aar_set_mode declared weak (aar_weak.h): NULL, or pinning
 *                               ADAPTIVE1 through it
 *   dlsym found|null [rc=RC]    aar_set_mode looked up with dlsym(RTLD_DEFAULT)
 *
 * Built as the compiler builds by default and with -fno-pie -no-pie, run with and without
 * LD_PRELOAD=libaar.so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "aar_weak.h"

int main(void)
{
	if (aar_set_mode)
		printf("weak found rc=%d\n", aar_set_mode(0x20));
	else
		printf("weak null\n");
	int (*set_mode)(uint16_t) = (int (*)(uint16_t))dlsym(RTLD_DEFAULT, "aar_set_mode");
	if (set_mode)
		printf("dlsym found rc=%d\n", set_mode(0x20));
	else
		printf("dlsym null\n");
	return 0;
}
