/*
 * dmapp_old: a minimal libdmapp.so without the extended attribute calls, as a release older than
 * dmapp_rma_attrs_ext_t (or a libdmapp that libaar.so cannot find them in) would be: it defines
 * dmapp_init, dmapp_finalize, dmapp_get_rma_attrs, dmapp_set_rma_attrs, dmapp_put and dmapp_get,
 * with one job-wide set of attributes, and no dmapp_get_rma_attrs_ext or dmapp_set_rma_attrs_ext.
 * Built with -DWITH_EXT it also has dmapp_get_rma_attrs_ext and dmapp_set_rma_attrs_ext (with
 * -DWITH_GET_EXT only the first), each made of the call without _ext, which it calls through its PLT (as a library built with -fPIC calls its
 * own exported functions), so that these calls reach libaar.so's. Built as a shared library by the
 * tests; dmapp_old_main.c runs over it.
 */
#include <stdint.h>
#include <string.h>
#include "dmapp.h"

static int running;
static dmapp_rma_attrs_t attrs;
static unsigned long long puts, gets;
static int last_put_routing = -1;

dmapp_return_t dmapp_init(dmapp_rma_attrs_t *requested, dmapp_rma_attrs_t *actual)
{
	if (!requested)
		return DMAPP_RC_INVALID_PARAM;
	attrs = *requested;
	running = 1;
	if (actual)
		*actual = attrs;
	return DMAPP_RC_SUCCESS;
}

dmapp_return_t dmapp_finalize(void)
{
	if (!running)
		return DMAPP_RC_PERMISSION_ERROR;
	running = 0;
	return DMAPP_RC_SUCCESS;
}

dmapp_return_t dmapp_get_rma_attrs(dmapp_rma_attrs_t *out)
{
	if (!running)
		return DMAPP_RC_PERMISSION_ERROR;
	if (!out)
		return DMAPP_RC_INVALID_PARAM;
	*out = attrs;
	return DMAPP_RC_SUCCESS;
}

dmapp_return_t dmapp_set_rma_attrs(dmapp_rma_attrs_t *requested, dmapp_rma_attrs_t *actual)
{
	if (!running)
		return DMAPP_RC_PERMISSION_ERROR;
	if (!requested)
		return DMAPP_RC_INVALID_PARAM;
	attrs = *requested;
	if (actual)
		*actual = attrs;
	return DMAPP_RC_SUCCESS;
}

#if defined(WITH_EXT) || defined(WITH_GET_EXT)
/* Only the 12 bytes this library knows: the rest of the caller's buffer is left as it is. */
dmapp_return_t dmapp_get_rma_attrs_ext(dmapp_rma_attrs_ext_t *out)
{
	return dmapp_get_rma_attrs((dmapp_rma_attrs_t *)out);
}
#endif

#ifdef WITH_EXT

dmapp_return_t dmapp_set_rma_attrs_ext(dmapp_rma_attrs_ext_t *requested, dmapp_rma_attrs_ext_t *actual)
{
	return dmapp_set_rma_attrs((dmapp_rma_attrs_t *)requested, (dmapp_rma_attrs_t *)actual);
}
#endif

dmapp_return_t dmapp_put(void *target_addr, dmapp_seg_desc_t *target_seg, dmapp_pe_t target_pe, void *source_addr,
			 uint64_t nelems, dmapp_type_t type)
{
	(void)target_addr, (void)target_seg, (void)target_pe, (void)source_addr, (void)nelems, (void)type;
	if (!running)
		return DMAPP_RC_PERMISSION_ERROR;
	puts++;
	last_put_routing = attrs.put_relaxed_ordering;
	return DMAPP_RC_SUCCESS;
}

dmapp_return_t dmapp_get(void *target_addr, void *source_addr, dmapp_seg_desc_t *source_seg, dmapp_pe_t source_pe,
			 uint64_t nelems, dmapp_type_t type)
{
	(void)target_addr, (void)source_addr, (void)source_seg, (void)source_pe, (void)nelems, (void)type;
	if (!running)
		return DMAPP_RC_PERMISSION_ERROR;
	gets++;
	return DMAPP_RC_SUCCESS;
}

/* What the program prints: the calls that arrived, and the PUT routing the last PUT went with. */
unsigned long long dmapp_old_puts(void)
{
	return puts;
}

unsigned long long dmapp_old_gets(void)
{
	return gets;
}

int dmapp_old_last_put_routing(void)
{
	return last_put_routing;
}
