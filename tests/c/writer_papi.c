/*
 * writer_papi: a PAPI that says, from inside each read, who holds the node segment's write slot,
 * given to libaar.so as AAR_PAPI_LIBRARY. It defines PAPI_read only; every other PAPI function is
 * found in the libpapi it links. While the process has a node segment (a mapping named
 * aar-node-...) whose sequence word is odd (a rank is writing: the reader's own read happens
 * then), each read prints "writer_papi: pid=P claim=C" on stderr, C the pid in the word's high
 * half: the process that holds the slot, so P when the read is the writer's own.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <papi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const volatile uint64_t *segment(void)
{
	static const volatile uint64_t *found;
	if (found)
		return found;
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[4096];
	while (maps && fgets(line, sizeof line, maps)) {
		unsigned long start;
		if (strstr(line, "/aar-node-") && sscanf(line, "%lx-", &start) == 1) {
			found = (const volatile uint64_t *)start;
			break;
		}
	}
	if (maps)
		fclose(maps);
	return found;
}

int PAPI_read(int set, long long *values)
{
	static int (*real)(int, long long *);
	if (!real)
		real = (int (*)(int, long long *))dlsym(RTLD_NEXT, "PAPI_read");
	const volatile uint64_t *seq = segment();
	if (seq && (*seq & 1))
		fprintf(stderr, "writer_papi: pid=%d claim=%u\n", (int)getpid(), (unsigned)(*seq >> 32));
	return real ? real(set, values) : PAPI_ENOSUPP;
}
