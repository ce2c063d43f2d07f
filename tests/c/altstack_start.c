/*
 * altstack_start: the process's first call of libaar.so, aar_policy_name(), made from a signal
 * handler that runs on an alternate signal stack (sigaltstack, SA_ONSTACK: as runtimes install
 * theirs) of ALT_KIB KiB (argument; default 16), mapped with an inaccessible page below it so
 * that running past its end faults at once instead of overwriting memory. Prints "handler
 * policy NAME", then, from main, "policy NAME".
 *
 * Linked with -laar (as aar.h advises), so every function exists, and with the emulated libugni.so,
 * whose NIC counters are the PAPI events libaar.so counts.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aar.h"
#include "aar_emu.h"

static const char *volatile in_handler;

static void first_call(int sig)
{
	(void)sig;
	in_handler = aar_policy_name();
}

int main(int argc, char **argv)
{
	/* The emulated NIC's counters exist, so the start-up opens PAPI with them. */
	(void)aar_emu_clock_ns();
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = (size_t)(argc > 1 ? atoi(argv[1]) : 16) << 10;
	char *map = mmap(NULL, page + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map, page, PROT_NONE))
		return 2;
	stack_t alt = {.ss_sp = map + page, .ss_size = size, .ss_flags = 0};
	struct sigaction sa = {.sa_handler = first_call, .sa_flags = SA_ONSTACK};
	sigemptyset(&sa.sa_mask);
	if (sigaltstack(&alt, NULL) || sigaction(SIGUSR1, &sa, NULL) || raise(SIGUSR1))
		return 2;
	printf("handler policy %s\n", in_handler ? in_handler : "(none)");
	printf("policy %s\n", aar_policy_name());
	return 0;
}
