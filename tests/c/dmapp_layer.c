/*
 * dmapp_layer: a shared object preloaded after libaar.so that stands for a libdmapp which sends
 * through uGNI: its dmapp_put first calls the program's dmapp_layer_post() (one uGNI post, through
 * the GNI_PostFma the process sees first: libaar.so's), then forwards to the next dmapp_put (the
 * emulator's). libaar.so finds this dmapp_put as the real one, so the post is made from inside an
 * intercepted DMAPP call. DMAPP_LAYER_RC=RC: each dmapp_put that the next one took
 * (DMAPP_RC_SUCCESS) returns RC instead, as a dmapp_put whose transaction the network failed
 * (DMAPP_RC_TRANSACTION_ERROR, 3) after it went out.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dmapp.h"

dmapp_return_t dmapp_put(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe, void *source_addr,
			 uint64_t nelems, dmapp_type_t type)
{
	typedef dmapp_return_t (*put_fn)(void *, dmapp_seg_desc_t *, dmapp_pe_t, void *, uint64_t, dmapp_type_t);
	void (*post)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "dmapp_layer_post");
	put_fn next = (put_fn)dlsym(RTLD_NEXT, "dmapp_put");
	const char *rc_env = getenv("DMAPP_LAYER_RC");
	dmapp_return_t rc;
	if (post)
		post();
	rc = next ? next(target_addr, target_seg, target_pe, source_addr, nelems, type) : DMAPP_RC_NOT_SUPPORTED;
	return rc == DMAPP_RC_SUCCESS && rc_env ? (dmapp_return_t)atoi(rc_env) : rc;
}
