/*
 * sc19: a stand-in for the SC'19 authors' interposer (their library, awr), for
 * scripts/bench-overhead only.
 *
 * Per post it does the work their library does in its default configuration, in the same order
 * (docs/node-reader.md, "The stand-in", lists it): before the send, on every post, add the length
 * to a cumulative sum; past the threshold (4096), decide with the paper's cost model from the last
 * window, keeping the window of the side in force with the endpoint and size it was decided for,
 * and using the other side's kept window in place of the constant factors while it is at most 5
 * decisions old and was decided for the same endpoint and size; on a change of mode, set the SMSG
 * mode of every attached NIC; count the bytes (all, below the threshold, on the low-stall side);
 * set the routing byte; forward; after the send, on a second cumulative sum, read the five NIC
 * events with one PAPI_read and turn them into the next window. One state per process, no lock.
 * It is our code, not theirs, and is never shipped: its only use is to put both libraries through
 * one harness. It prints nothing (theirs prints its byte counts at exit; the harness reads stdout).
 *
 * Build: cc -O3 -shared -fPIC bench/sc19.c -o build/libsc19.so -lpapi -ldl -lm (their build: -O3)
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

#define THRESHOLD 4096
#define LOW_LATENCY GNI_DLVMODE_ADAPTIVE3
#define LOW_STALL GNI_DLVMODE_ADAPTIVE0
#define NO_MODE 0xffff
#define NO_WINDOW -100.0
#define FRESHNESS 5
#define MAX_NICS 10000

typedef gni_return_t (*post_fn)(gni_ep_handle_t, gni_post_descriptor_t *);
typedef gni_return_t (*attach_fn)(gni_cdm_handle_t, uint32_t, uint32_t *, gni_nic_handle_t *);
typedef gni_return_t (*smsg_mode_fn)(gni_nic_handle_t, uint16_t);

static post_fn real_fma, real_rdma;
static attach_fn real_attach;
static smsg_mode_fn real_smsg_mode;
static gni_nic_handle_t nics[MAX_NICS];
static unsigned n_nics;
static int eventset = PAPI_NULL, ready, mode_set, first_read = 1;
static long long last[5];
/* The latest window: response latency (cycles) and stall ratio; NO_WINDOW until there is one. */
static double latency = NO_WINDOW, stall = NO_WINDOW;
static uint64_t sum_before, sum_after, bytes_all, bytes_below, bytes_low_stall;
/* The mode posts are given, and the side the model last chose. */
static uint16_t mode = NO_MODE, side = NO_MODE;

/* The window a side was last measured on, for the post it was decided for. */
struct kept {
	double stall, latency;
	gni_ep_handle_t ep;
	uint64_t size;
	int fresh;
};
static struct kept kept_low_latency, kept_low_stall;

static void init(void)
{
	real_fma = (post_fn)dlsym(RTLD_NEXT, "GNI_PostFma");
	real_rdma = (post_fn)dlsym(RTLD_NEXT, "GNI_PostRdma");
	real_attach = (attach_fn)dlsym(RTLD_NEXT, "GNI_CdmAttach");
	real_smsg_mode = (smsg_mode_fn)dlsym(RTLD_NEXT, "GNI_SmsgSetDeliveryMode");
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
	ready = 1;
}

/* The paper's rule for a post of `size` bytes to `ep`: the side in force keeps this window; the
 * other side's time comes from its kept window when fresh and for the same endpoint and size,
 * else from the window scaled by the constant factors (latency 1.2, stalls 5). */
static uint16_t decide(uint64_t size, int get, gni_ep_handle_t ep)
{
	double flits = size / (64 / 5.0) / (get ? 5.0 : 1.0), packets = ceil(size / 64.0);
	double alpha = ceil((packets - 1 + 512) / 1024.0);
	double sr = stall < 0 ? 0 : stall, s = sr * 1.25e-3, lat_other, s_other;
	int on_low_latency = side == LOW_LATENCY;
	struct kept *here = on_low_latency ? &kept_low_latency : &kept_low_stall;
	struct kept *other = on_low_latency ? &kept_low_stall : &kept_low_latency;
	*here = (struct kept){sr, latency, ep, size, FRESHNESS};
	other->fresh--;
	int use_other = other->fresh > 0 && other->ep == ep && other->size == size;
	if (on_low_latency) {
		lat_other = use_other ? other->latency : 1.2 * latency;
		s_other = use_other ? other->stall * 1.25e-3 : s / 5.0;
		side = flits > alpha * (lat_other - latency) / (s - s_other) ? LOW_STALL : LOW_LATENCY;
	} else {
		lat_other = use_other ? other->latency : latency / 1.2;
		s_other = use_other ? other->stall * 1.25e-3 : 5.0 * s;
		side = flits < alpha * (latency - lat_other) / (s_other - s) ? LOW_LATENCY : LOW_STALL;
	}
	return side;
}

/* A new mode for posts, and for SMSG on every NIC. */
static void set_mode(uint16_t m)
{
	mode_set = 1;
	for (unsigned i = 0; real_smsg_mode && i < n_nics; i++)
		real_smsg_mode(nics[i], m);
}

static void before_send(uint64_t size, gni_ep_handle_t ep, gni_post_type_t type)
{
	uint16_t next = mode;
	sum_before += size;
	if (sum_before <= THRESHOLD) {
		next = LOW_LATENCY;
		bytes_below += size;
	} else if (stall != NO_WINDOW && latency != NO_WINDOW) {
		sum_before = 0;
		next = decide(size, type == GNI_POST_RDMA_GET || type == GNI_POST_FMA_GET, ep);
	}
	if (next != mode)
		set_mode(next);
	mode = next;
	bytes_all += size;
	if (mode == LOW_STALL)
		bytes_low_stall += size;
}

static void after_send(uint64_t size)
{
	sum_after += size;
	if (sum_after <= THRESHOLD)
		return;
	sum_after = 0;
	long long v[5];
	PAPI_read(eventset, v);
	if (v[3] > last[3] && v[0] > last[0] && !first_read) {
		latency = (double)(v[2] - last[2]) / (double)(v[3] - last[3]);
		stall = (double)((v[1] - v[4]) - (last[1] - last[4])) / (double)(v[0] - last[0]);
	} else {
		first_read = 0;
	}
	memcpy(last, v, sizeof v);
}

static gni_return_t post(post_fn *real, gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	if (!ready)
		init();
	before_send(pd->length, ep, pd->type);
	if (mode_set)
		pd->dlvr_mode = mode;
	gni_return_t rc = (*real)(ep, pd);
	after_send(pd->length);
	return rc;
}

/* Their library prints its byte counts at exit; the harness reads stdout, so here they go to
 * stderr, and only on request. */
__attribute__((destructor)) static void report(void)
{
	if (getenv("SC19_REPORT"))
		fprintf(stderr, "sc19: %llu bytes, %llu below the threshold, %llu on the low-stall side\n",
			(unsigned long long)bytes_all, (unsigned long long)bytes_below, (unsigned long long)bytes_low_stall);
}

gni_return_t GNI_PostFma(gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	return post(&real_fma, ep, pd);
}

gni_return_t GNI_PostRdma(gni_ep_handle_t ep, gni_post_descriptor_t *pd)
{
	return post(&real_rdma, ep, pd);
}

gni_return_t GNI_CdmAttach(gni_cdm_handle_t cdm, uint32_t device_id, uint32_t *local_addr, gni_nic_handle_t *nic)
{
	if (!ready)
		init();
	gni_return_t rc = real_attach(cdm, device_id, local_addr, nic);
	if (rc == GNI_RC_SUCCESS && n_nics < MAX_NICS)
		nics[n_nics++] = *nic;
	return rc;
}
