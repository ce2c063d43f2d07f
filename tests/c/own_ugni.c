/*
 * own_ugni: a program that carries uGNI's sends itself, as one linked with libugni's static
 * archive and -rdynamic does (it exports them). It asks libaar.so for its policy (aar.h, weak),
 * which starts the library, and prints it.
 */
#include <stdio.h>

#include "aar_weak.h"

int GNI_PostRdma(void *ep, void *pd);
int GNI_CdmCreate(void);

int GNI_PostRdma(void *ep, void *pd)
{
	return ep != pd;
}

int GNI_CdmCreate(void)
{
	return 0;
}

int main(void)
{
	printf("policy %s rc=%d\n", aar_policy_name ? aar_policy_name() : "none", GNI_PostRdma(0, 0) + GNI_CdmCreate());
	return 0;
}
