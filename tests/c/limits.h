/*
 * limits.h: a program at one of its limits, for the tests that libaar.so never ends it for one.
 */
#ifndef AAR_TEST_LIMITS_H
#define AAR_TEST_LIMITS_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* A program at its memory limit: the address space capped at what is mapped now (RLIMIT_AS), then
 * every byte malloc can still give taken and kept. Returns the bytes taken; 0 if the cap failed. */
static inline size_t take_all_memory(void)
{
	long pages = 0;
	FILE *statm = fopen("/proc/self/statm", "r");
	if (statm && fscanf(statm, "%ld", &pages) != 1)
		pages = 0;
	if (statm)
		fclose(statm);
	struct rlimit as = {(rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE), RLIM_INFINITY};
	if (!pages || setrlimit(RLIMIT_AS, &as))
		return 0;
	size_t taken = 0;
	for (size_t size = 1 << 20; size >= 16; size /= 2)
		while (malloc(size))
			taken += size;
	return taken;
}

/* A program with every descriptor its limit allows open: stdin duplicated until dup() fails.
 * Returns how many were taken. */
static inline int take_all_descriptors(void)
{
	int fds = 0;
	while (dup(0) >= 0)
		fds++;
	return fds;
}

#endif
