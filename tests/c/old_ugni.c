/*
 * old_ugni: a minimal libugni.so of before chained transactions (CLE < 5.2UP04): it defines the
 * basic posts but not GNI_CtPostFma / GNI_CtPostCqWrite. Built as a shared library by the tests.
 */
#include <stdint.h>
#include "gni_pub.h"

static unsigned long long posts;

gni_return_t GNI_PostFma(gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	(void)ep;
	if (!pd)
		return GNI_RC_INVALID_PARAM;
	posts++;
	return GNI_RC_SUCCESS;
}

unsigned long long old_ugni_posts(void)
{
	return posts;
}
