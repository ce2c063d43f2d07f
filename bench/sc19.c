/*
 * sc19: a stand-in for the SC'19 authors' interposer, for scripts/bench-overhead --compare only.
 *
 * It does per post what their library does, in the same order, written here from the paper's
 * description: add the length to a cumulative sum; once the sum passes the threshold (4096), decide
 * from the last window with the paper's cost model and set the routing byte; forward; then read the
 * five NIC events with one PAPI_read and turn them into the next window. It keeps one state per
 * process, takes no lock and reads the counters after every decision, as theirs does. It is not
 * their code and is never shipped: its only use is to put both libraries through one harness.
 *
 * Build: cc -O2 -shared -fPIC bench/sc19.c -o build/libsc19.so -lpapi -ldl -lm
 * Events: SC19_PAPI_EVENTS, comma-separated (the benchmark passes the emulator's SDE names).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <papi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gni_pub.h"

typedef gni_return_t (*post_fn)(gni_ep_handle_t, gni_post_descriptor_t *);

static post_fn real_fma, real_rdma;
static int eventset = PAPI_NULL, ready;
static long long last[5];
static double latency = -1, stall = -1;
static uint64_t sum_before, sum_after;
static uint16_t mode = GNI_DLVMODE_ADAPTIVE3;

static void init(void)
{
	real_fma = (post_fn)dlsym(RTLD_NEXT, "GNI_PostFma");
	real_rdma = (post_fn)dlsym(RTLD_NEXT, "GNI_PostRdma");
	int v = PAPI_library_init(PAPI_VER_CURRENT);
	if (v != PAPI_VER_CURRENT && v > 0)
		v = PAPI_library_init(v & 0xffff0000);
	if (PAPI_create_eventset(&eventset) != PAPI_OK) {
		fprintf(stderr, "sc19: PAPI_create_eventset failed\n");
		exit(2);
	}
	char *names = strdup(getenv("SC19_PAPI_EVENTS") ? getenv("SC19_PAPI_EVENTS") : "");
	int n = 0;
	for (char *t = strtok(names, ","); t; t = strtok(NULL, ","), n++)
		if (PAPI_add_named_event(eventset, t) != PAPI_OK) {
			fprintf(stderr, "sc19: cannot add the PAPI event %s\n", t);
			exit(2);
		}
	if (n != 5 || PAPI_start(eventset) != PAPI_OK) {
		fprintf(stderr, "sc19: need 5 events in SC19_PAPI_EVENTS and a started event set\n");
		exit(2);
	}
	PAPI_read(eventset, last);
	ready = 1;
}

/* The paper's rule on the last window: High Bias (ADAPTIVE3) or Adaptive (ADAPTIVE0). */
static uint16_t decide(uint64_t size, int get)
{
	if (latency < 0 || stall < 0)
		return mode;
	double flits = size / (64 / 5.0) / (get ? 5.0 : 1.0), packets = ceil(size / 64.0);
	double alpha = ceil((packets - 1 + 512) / 1024.0), s = stall * 1.25e-3;
	if (mode == GNI_DLVMODE_ADAPTIVE3) {
		double f = alpha * (1.2 * latency - latency) / (s - s / 5.0);
		return flits > f ? GNI_DLVMODE_ADAPTIVE0 : GNI_DLVMODE_ADAPTIVE3;
	}
	double f = alpha * (latency - latency / 1.2) / (5.0 * s - s);
	return flits < f ? GNI_DLVMODE_ADAPTIVE3 : GNI_DLVMODE_ADAPTIVE0;
}

static void observe(uint64_t size)
{
	sum_after += size;
	if (sum_after <= 4096)
		return;
	sum_after = 0;
	long long v[5];
	PAPI_read(eventset, v);
	if (v[3] > last[3] && v[0] > last[0]) {
		latency = (double)(v[2] - last[2]) / (double)(v[3] - last[3]);
		stall = (double)((v[1] - v[4]) - (last[1] - last[4])) / (double)(v[0] - last[0]);
		if (stall < 0)
			stall = 0;
	}
	memcpy(last, v, sizeof v);
}

static gni_return_t post(post_fn *real, gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	if (!ready)
		init();
	sum_before += pd->length;
	if (sum_before <= 4096) {
		mode = GNI_DLVMODE_ADAPTIVE3;
	} else {
		sum_before = 0;
		mode = decide(pd->length, pd->type == GNI_POST_RDMA_GET || pd->type == GNI_POST_FMA_GET);
	}
	pd->dlvr_mode = mode;
	gni_return_t rc = (*real)(ep, pd);
	observe(pd->length);
	return rc;
}

gni_return_t GNI_PostFma(gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	return post(&real_fma, ep, pd);
}

gni_return_t GNI_PostRdma(gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	return post(&real_rdma, ep, pd);
}
