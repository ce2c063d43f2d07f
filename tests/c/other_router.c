/*
 * other_router: another library that takes the program's uGNI RDMA and FMA posts, as a second
 * router (the SC'19 authors' awr) or a tracer does, built as a shared library for LD_PRELOAD. It
 * counts the posts it sees and passes each to the next GNI_PostRdma / GNI_PostFma unchanged. At
 * exit it prints "other_router: posts N" on stderr.
 */
#define _GNU_SOURCE
#include "gni_pub.h"
#include <dlfcn.h>
#include <stdio.h>

typedef gni_return_t (*post_fn)(gni_ep_handle_t, gni_post_descriptor_t *);
static unsigned long posts;

static gni_return_t forward(const char *name, gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	post_fn next = (post_fn)dlsym(RTLD_NEXT, name);
	posts++;
	return next ? next(ep, pd) : GNI_RC_ERROR_RESOURCE;
}

gni_return_t GNI_PostRdma(gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	return forward("GNI_PostRdma", ep, pd);
}

gni_return_t GNI_PostFma(gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	return forward("GNI_PostFma", ep, pd);
}

__attribute__((destructor)) static void report(void)
{
	fprintf(stderr, "other_router: posts %lu\n", posts);
}
