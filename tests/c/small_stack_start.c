/*
 * small_stack_start: a thread made with a small stack (24 KiB, as a runtime makes its progress
 * thread) makes the process's first call of libaar.so, aar_policy_name(); its start-up needs more
 * stack than is left and runs on a helper thread of libaar.so's, which the first thread waits for.
 * With hold_start.so as AAR_PAPI_LIBRARY, loading it inside the start-up calls hold_start_up()
 * below: from inside the start-up (on that helper thread) a begin and an end ("inside begin
 * rc=RC", "inside end rc=RC"), then, the start-up over, one iteration begun and ended ("started
 * begin rc=RC index I end rc=RC").
 *
 * Linked with -laar (as aar.h advises), so every function exists.
 */
#include <pthread.h>
#include <stdio.h>

#include "aar.h"

/* Called by hold_start.so's constructor, inside libaar.so's start-up. */
void hold_start_up(void);
void hold_start_up(void)
{
	printf("inside begin rc=%d\n", aar_iteration_begin());
	printf("inside end rc=%d\n", aar_iteration_end());
	fflush(stdout);
}

static void *start_library(void *unused)
{
	(void)unused;
	aar_policy_name();
	return NULL;
}

int main(void)
{
	pthread_attr_t attr;
	pthread_t t;
	if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 24 << 10) ||
	    pthread_create(&t, &attr, start_library, NULL) || pthread_join(t, NULL))
		return 2;
	int begin = aar_iteration_begin();
	long long index = (long long)aar_iteration_index();
	printf("started begin rc=%d index %lld end rc=%d\n", begin, index, aar_iteration_end());
	return 0;
}
