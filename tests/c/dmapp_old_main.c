/*
 * dmapp_old_main: a DMAPP program over dmapp_old.c's libdmapp.so: dmapp_init with ADAPTIVE routing
 * both ways, three 64-byte PUTs and one GET to PE 1, "routing=R" (the PUT routing the last PUT went
 * with); then aar_disable() (when libaar.so is loaded), one more PUT, "routing=R" again; then
 * dmapp_get_rma_attrs, "own=R" (the PUT routing the program reads), and "puts=P gets=G": the calls
 * that arrived. Exit status 0 only if every call succeeded.
 */
#include <stdio.h>
#include "aar_weak.h"
#include "dmapp.h"

unsigned long long dmapp_old_puts(void);
unsigned long long dmapp_old_gets(void);
int dmapp_old_last_put_routing(void);

static int bad;

static void put(void)
{
	static uint64_t word[8];
	dmapp_seg_desc_t seg = { 0 };
	bad |= dmapp_put(word, &seg, 1, word, 8, DMAPP_QW) != DMAPP_RC_SUCCESS;
}

int main(void)
{
	dmapp_rma_attrs_t req = { DMAPP_DEF_OUTSTANDING_NB, DMAPP_OFFLOAD_THRESHOLD, DMAPP_ROUTING_ADAPTIVE,
				  DMAPP_ROUTING_ADAPTIVE, 1 },
			  act;
	static uint64_t word[8];
	dmapp_seg_desc_t seg = { 0 };
	bad |= dmapp_init(&req, &act) != DMAPP_RC_SUCCESS;
	for (int i = 0; i < 3; i++)
		put();
	bad |= dmapp_get(word, word, &seg, 1, 8, DMAPP_QW) != DMAPP_RC_SUCCESS;
	printf("routing=%d\n", dmapp_old_last_put_routing());
	if (aar_disable)
		aar_disable();
	put();
	printf("routing=%d\n", dmapp_old_last_put_routing());
	bad |= dmapp_get_rma_attrs(&act) != DMAPP_RC_SUCCESS;
	printf("own=%d\n", act.put_relaxed_ordering);
	bad |= dmapp_finalize() != DMAPP_RC_SUCCESS;
	printf("puts=%llu gets=%llu\n", dmapp_old_puts(), dmapp_old_gets());
	return bad;
}
