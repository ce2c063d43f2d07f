/*
 * api_thread: the integration driver (tests/c/driver.c, compiled with -Dmain=driver_main) with a
 * second thread that calls the whole C API of aar.h in a loop while the driver's script posts, so
 * that the sanitizer runs (tests/sanitizers.rs) see the control word, policy changes, pause and
 * resume, and iteration boundaries (counter reads, totals, iteration rows and their file) race
 * with posts, threshold crossings and counter reads.
 *
 *   api_thread SCRIPT...       as the driver; with API_THREAD=1 in the environment the API thread
 *                              runs from before the first command until the script ends, then
 *                              prints "api_calls=N".
 *
 * Every API call's return code is checked against what aar.h allows; the exit status is the
 * driver's, or 3 if the API returned something aar.h does not allow.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Weak, as in the driver: the program also runs without libaar.so. */
#include "aar_weak.h"

int driver_main(int argc, char **argv);

static atomic_int stop;
static atomic_ulong calls;
static atomic_int bad;

/* Count one API call; `allowed`: what it returned is what aar.h allows. */
static void expect(int allowed)
{
	if (!allowed)
		atomic_store(&bad, 1);
	atomic_fetch_add(&calls, 1);
}

static void check(int rc, int allowed_einval)
{
	expect(rc == AAR_OK || (allowed_einval && rc == AAR_EINVAL) || rc == AAR_EDISABLED);
}

/* The API's names (policy, version) are never NULL or empty. */
static int named(const char *name)
{
	return name && *name;
}

static void *api_loop(void *unused)
{
	static const char *names[] = {"ADAPTIVE0", "ADAPTIVE_3", "auto", "off", "IN_ORDER", "bogus", ""};
	unsigned long i = 0;
	while (!atomic_load(&stop)) {
		switch (i++ % 13) {
		case 0: check(aar_set_mode(0x80), 0); break;
		case 1: check(aar_set_mode(0x03), 1); break; /* IN_ORDER: refused */
		case 2: check(aar_set_mode_name(names[i / 13 % 7]), 1); break;
		case 3: check(aar_disable(), 0); break;
		case 4: check(aar_enable(), 0); break;
		case 5: check(aar_set_auto(), 0); break;
		case 6: expect(named(aar_policy_name())); break;
		case 7: expect(named(aar_version())); break;
		/* Iterations: boundaries (counter reads, totals, rows, their file) race with the posts. */
		case 9: check(aar_iteration_label(i % 2 ? "congested" : "bad label"), 1); break;
		case 10: check(aar_iteration_begin(), 1); break; /* refused under an MPI boundary */
		case 11: expect(aar_iteration_index() >= -1); break;
		case 12: check(aar_iteration_end(), 1); break; /* none in progress after a refused begin */
		default: check(aar_set_mode(0x20), 0); break;
		}
	}
	check(aar_set_auto(), 0);
	return unused;
}

int main(int argc, char **argv)
{
	pthread_t tid;
	int with_api = getenv("API_THREAD") && !strcmp(getenv("API_THREAD"), "1") && aar_set_mode;
	if (with_api && pthread_create(&tid, NULL, api_loop, NULL)) {
		fprintf(stderr, "api_thread: pthread_create failed\n");
		return 2;
	}
	int rc = driver_main(argc, argv);
	if (with_api) {
		atomic_store(&stop, 1);
		pthread_join(tid, NULL);
		printf("api_calls=%lu bad=%d\n", atomic_load(&calls), atomic_load(&bad));
	}
	/* LeakSanitizer ends the process from its exit hook without flushing stdio: flush first. */
	fflush(stdout);
	return rc ? rc : atomic_load(&bad) ? 3 : 0;
}
