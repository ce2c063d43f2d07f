/*
 * dmapp_finrace: a shared object preloaded after libaar.so that makes one interleaving of two
 * threads happen every time, with no timing: a thread's change of routing (libaar.so's
 * dmapp_set_rma_attrs_ext, for a PUT of the thread) reaches DMAPP after another thread's
 * dmapp_finalize has ended the job. Armed (finrace_arm), the next dmapp_set_rma_attrs_ext waits
 * until the finalizing thread's dmapp_finalize has returned to it (finrace_ended), then goes on
 * to the emulator's, which refuses it (no job). With `inside`, it waits only until the emulator's
 * dmapp_finalize has returned, and this dmapp_finalize then waits until the sending thread says
 * its PUT has returned (finrace_sent): the refusal comes back while libaar.so's dmapp_finalize
 * has not returned. libaar.so finds these functions as the real ones.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "dmapp.h"

void finrace_arm(int inside);
void finrace_wait_set(void);
void finrace_ended(void);
void finrace_sent(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static enum { IDLE, ARMED, SETTING, ENDED, SENT } state;
static int wait_inside;

static void become(int s)
{
	state = s;
	pthread_cond_broadcast(&changed);
}

static void wait_for(int s)
{
	while ((int)state != s)
		pthread_cond_wait(&changed, &lock);
}

/* The next set call waits for the end of the job (and, `inside`, the end of the job for the
 * sending thread's PUT). */
void finrace_arm(int inside)
{
	pthread_mutex_lock(&lock);
	wait_inside = inside;
	become(ARMED);
	pthread_mutex_unlock(&lock);
}

/* Until the armed set call has begun. */
void finrace_wait_set(void)
{
	pthread_mutex_lock(&lock);
	wait_for(SETTING);
	pthread_mutex_unlock(&lock);
}

/* The finalizing thread's dmapp_finalize has returned. */
void finrace_ended(void)
{
	pthread_mutex_lock(&lock);
	if (state == SETTING)
		become(ENDED);
	pthread_mutex_unlock(&lock);
}

/* The sending thread's PUT has returned. */
void finrace_sent(void)
{
	pthread_mutex_lock(&lock);
	if (state == ENDED)
		become(SENT);
	pthread_mutex_unlock(&lock);
}

dmapp_return_t dmapp_set_rma_attrs_ext(dmapp_rma_attrs_ext_t *requested, dmapp_rma_attrs_ext_t *actual)
{
	typedef dmapp_return_t (*set_fn)(dmapp_rma_attrs_ext_t *, dmapp_rma_attrs_ext_t *);
	set_fn next = (set_fn)dlsym(RTLD_NEXT, "dmapp_set_rma_attrs_ext");
	pthread_mutex_lock(&lock);
	if (state == ARMED) {
		become(SETTING);
		wait_for(ENDED);
	}
	pthread_mutex_unlock(&lock);
	return next ? next(requested, actual) : DMAPP_RC_NOT_SUPPORTED;
}

dmapp_return_t dmapp_finalize(void)
{
	typedef dmapp_return_t (*finalize_fn)(void);
	finalize_fn next = (finalize_fn)dlsym(RTLD_NEXT, "dmapp_finalize");
	dmapp_return_t rc = next ? next() : DMAPP_RC_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	if (state == SETTING && wait_inside) {
		become(ENDED);
		wait_for(SENT);
	}
	pthread_mutex_unlock(&lock);
	return rc;
}
