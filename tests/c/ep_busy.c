/*
 * ep_busy: preloaded after libaar.so, GNI_EpUnbind and GNI_EpDestroy refuse (GNI_RC_NOT_DONE, as a
 * uGNI with transactions still outstanding on the endpoint may) without calling the real ones: the
 * endpoint stays bound and alive.
 */
#include <gni_pub.h>

gni_return_t GNI_EpUnbind(gni_ep_handle_t ep)
{
	(void)ep;
	return GNI_RC_NOT_DONE;
}

gni_return_t GNI_EpDestroy(gni_ep_handle_t ep)
{
	(void)ep;
	return GNI_RC_NOT_DONE;
}
