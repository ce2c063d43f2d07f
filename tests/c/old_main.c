/*
 * old_main: runs over old_ugni (no chained transactions). A runtime probing for GNI_CtPostFma
 * finds libaar.so's export; calling it must return an error, not crash or forward nowhere.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "gni_pub.h"

unsigned long long old_ugni_posts(void);

int main(void)
{
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = GNI_POST_FMA_PUT;
	pd.length = 64;
	gni_return_t rc = GNI_PostFma(NULL, &pd);
	printf("postfma rc=%d dlvr=0x%x posts=%llu\n", (int)rc, pd.dlvr_mode, old_ugni_posts());
	gni_return_t (*ct)(gni_ep_handle_t, gni_post_descriptor_t *) =
		(gni_return_t (*)(gni_ep_handle_t, gni_post_descriptor_t *))dlsym(RTLD_DEFAULT, "GNI_CtPostFma");
	if (ct)
		printf("ctpostfma rc=%d posts=%llu\n", (int)ct(NULL, &pd), old_ugni_posts());
	else
		printf("ctpostfma absent\n");
	return 0;
}
