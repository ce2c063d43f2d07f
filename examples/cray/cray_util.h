/*
 * cray_util.h: what the Cray-style examples share, as Cray's own uGNI examples share their
 * utility functions. Only gni_pub.h, pmi.h, libc and pmi_gni_env.h (beside it), so the examples
 * build unchanged on a Cray.
 *
 *   job_init()         PMI_Init, the rank and the job size, a check that the NIC is an Aries,
 *                      the job's ptag and cookie (PMI_GNI_PTAG, PMI_GNI_COOKIE) and device
 *                      (PMI_GNI_DEV_ID), read by pmi_gni_env.h (beside this file),
 *                      GNI_CdmCreate with inst_id = rank * CDM_ID_MULTIPLIER,
 *                      GNI_CdmAttach, and every rank's NIC address through PMI_Allgather
 *   job_finish()       a barrier, GNI_CdmDestroy, PMI_Finalize
 *   register_buffer()  page-aligned memory, zeroed, registered with the NIC
 *   exchange_buffer()  every rank's (address, memory handle) of one buffer, by PMI_Allgather
 *   bind_endpoint()    GNI_EpCreate and GNI_EpBind to a peer's NIC address and a remote id
 *   wait_event()       the next event of a CQ, polled, failing after EVENT_WAIT_SECONDS
 *   expect_local_event()  a post's local completion: its inst_id and its descriptor
 *   fail()             a message naming the rank, then PMI_Abort: the whole job ends non-zero
 *   CHECK()            a uGNI call that must succeed, else fail() naming it and its return code
 *                      (gni_rc_name(): "?" for a code outside gni_err_str)
 */
#ifndef CRAY_UTIL_H
#define CRAY_UTIL_H

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gni_pub.h"
#include "pmi.h"
#include "pmi_gni_env.h"

/* inst_id of rank r's communication domain, as in Cray's examples. */
#define CDM_ID_MULTIPLIER 1000
/* How long any wait may take before the example gives up. */
#define EVENT_WAIT_SECONDS 30

static struct {
	const char *program;
	int rank, size;
	uint8_t ptag;
	uint32_t cookie, device_id;
	uint32_t inst_id, local_address;
	uint32_t *addresses; /* every rank's NIC address, by rank */
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
} job;

/* One rank's registered buffer, as the other ranks need it. */
typedef struct {
	uint64_t addr;
	gni_mem_handle_t mdh;
} remote_buffer_t;

static inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: rank %d: %s\n", job.program, job.rank, msg);
	fflush(stderr);
	PMI_Abort(1, msg);
	exit(1);
}

/* The name of a uGNI return code, "?" for one outside gni_err_str (a newer libugni's): never read
 * past the array's end. */
static inline const char *gni_rc_name(gni_return_t rc)
{
	return (unsigned)rc <= GNI_RC_ERROR_NOMEM ? gni_err_str[rc] : "?";
}

#define CHECK(call)                                                                              \
	do {                                                                                     \
		gni_return_t rc_ = (call);                                                       \
		if (rc_ != GNI_RC_SUCCESS)                                                       \
			fail("%s returned %s (%d)", #call, gni_rc_name(rc_), rc_);               \
	} while (0)

#define PMI_CHECK(call)                                                                       \
	do {                                                                                  \
		int rc_ = (call);                                                             \
		if (rc_ != PMI_SUCCESS)                                                       \
			fail("%s returned %d", #call, rc_);                                   \
	} while (0)

/* The first value of a PMI_GNI_* variable, at most `max` (pmi_gni_env.h); the job ends, saying
 * why, when it is unset or bad. */
static inline unsigned long job_env(const char *name, unsigned long max)
{
	unsigned long v = 0;
	const char *value;
	switch (pmi_gni_env(name, max, &v, &value)) {
	case PMI_GNI_ENV_OK:
		break;
	case PMI_GNI_ENV_UNSET:
		fail("%s is not set: start the program with the job launcher (aprun, srun or aar run)", name);
	case PMI_GNI_ENV_NOT_A_NUMBER:
		fail("%s=\"%s\" is not a number", name, value);
	case PMI_GNI_ENV_TOO_LARGE:
		fail("%s=\"%s\" is out of range (at most %lu): the job launcher sets it (aprun, srun or aar run); "
		     "do not set it yourself",
		     name, value, max);
	}
	return v;
}

static inline void job_init(const char *program)
{
	int spawned;
	job.program = program;
	PMI_CHECK(PMI_Init(&spawned));
	PMI_CHECK(PMI_Get_rank(&job.rank));
	PMI_CHECK(PMI_Get_size(&job.size));

	gni_nic_device_t device = GNI_DEVICE_GEMINI;
	CHECK(GNI_GetDeviceType(&device));
	if (device != GNI_DEVICE_ARIES)
		fail("the NIC is not an Aries (device type %d)", (int)device);

	job.ptag = (uint8_t)job_env("PMI_GNI_PTAG", UINT8_MAX);
	job.cookie = (uint32_t)job_env("PMI_GNI_COOKIE", UINT32_MAX);
	job.device_id = (uint32_t)job_env("PMI_GNI_DEV_ID", UINT32_MAX);
	job.inst_id = (uint32_t)job.rank * CDM_ID_MULTIPLIER;
	CHECK(GNI_CdmCreate(job.inst_id, job.ptag, job.cookie, 0, &job.cdm));
	CHECK(GNI_CdmAttach(job.cdm, job.device_id, &job.local_address, &job.nic));

	job.addresses = malloc(sizeof(uint32_t) * (size_t)job.size);
	if (job.addresses == NULL)
		fail("out of memory");
	PMI_CHECK(PMI_Allgather(&job.local_address, job.addresses, sizeof(uint32_t)));
	if (job.addresses[job.rank] != job.local_address)
		fail("PMI_Allgather put NIC address %u at my rank, mine is %u", job.addresses[job.rank],
		     job.local_address);
}

static inline void job_finish(void)
{
	PMI_CHECK(PMI_Barrier());
	CHECK(GNI_CdmDestroy(job.cdm));
	free(job.addresses);
	PMI_CHECK(PMI_Finalize());
}

static inline void *register_buffer(size_t bytes, gni_cq_handle_t dst_cq, gni_mem_handle_t *mdh)
{
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, bytes) != 0)
		fail("cannot allocate %zu bytes", bytes);
	memset(buf, 0, bytes);
	CHECK(GNI_MemRegister(job.nic, (uint64_t)(uintptr_t)buf, bytes, dst_cq, GNI_MEM_READWRITE, (uint32_t)-1, mdh));
	return buf;
}

/* Every rank's (address, handle) of its buffer, by rank; a barrier for all of them. */
static inline remote_buffer_t *exchange_buffer(void *buf, gni_mem_handle_t mdh)
{
	remote_buffer_t mine = { (uint64_t)(uintptr_t)buf, mdh };
	remote_buffer_t *all = malloc(sizeof mine * (size_t)job.size);
	if (all == NULL)
		fail("out of memory");
	PMI_CHECK(PMI_Allgather(&mine, all, sizeof mine));
	return all;
}

static inline gni_ep_handle_t bind_endpoint(gni_cq_handle_t cq, int peer, uint32_t remote_id)
{
	gni_ep_handle_t ep;
	CHECK(GNI_EpCreate(job.nic, cq, &ep));
	CHECK(GNI_EpBind(ep, job.addresses[peer], remote_id));
	return ep;
}

static inline double now_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline gni_cq_entry_t wait_event(gni_cq_handle_t cq, const char *what)
{
	double deadline = now_seconds() + EVENT_WAIT_SECONDS;
	for (;;) {
		gni_cq_entry_t ev = 0;
		gni_return_t rc = GNI_CqGetEvent(cq, &ev);
		if (rc == GNI_RC_SUCCESS)
			return ev;
		if (rc == GNI_RC_TRANSACTION_ERROR) {
			char text[256] = "";
			uint32_t recoverable = 0;
			GNI_CqErrorStr(ev, text, sizeof text);
			GNI_CqErrorRecoverable(ev, &recoverable);
			fail("%s: error event (%s, %s)", what, text, recoverable ? "recoverable" : "not recoverable");
		}
		if (rc != GNI_RC_NOT_DONE)
			fail("%s: GNI_CqGetEvent returned %s (%d)", what, gni_rc_name(rc), rc);
		if (now_seconds() > deadline)
			fail("%s: no event after %d s", what, EVENT_WAIT_SECONDS);
		sched_yield();
	}
}

/* The next event of `cq`: a POST event carrying `inst_id`. */
static inline gni_cq_entry_t expect_post_event(gni_cq_handle_t cq, uint32_t inst_id, const char *side,
					       const char *what)
{
	gni_cq_entry_t ev = wait_event(cq, what);
	if (GNI_CQ_GET_TYPE(ev) != GNI_CQ_EVENT_TYPE_POST)
		fail("%s: %s event of type %llu, expected a POST event", what, side,
		     (unsigned long long)GNI_CQ_GET_TYPE(ev));
	if (GNI_CQ_GET_INST_ID(ev) != inst_id)
		fail("%s: %s event inst_id %llu, expected %u", what, side, (unsigned long long)GNI_CQ_GET_INST_ID(ev),
		     inst_id);
	return ev;
}

/* The local completion of the post `pd` on `cq`: a POST event with `inst_id` whose descriptor
 * is `pd`. */
static inline void expect_local_event(gni_cq_handle_t cq, gni_post_descriptor_t *pd, uint32_t inst_id, const char *what)
{
	gni_cq_entry_t ev = expect_post_event(cq, inst_id, "local", what);
	gni_post_descriptor_t *done = NULL;
	CHECK(GNI_GetCompleted(cq, ev, &done));
	if (done != pd)
		fail("%s: GNI_GetCompleted gave descriptor %p, expected %p", what, (void *)done, (void *)pd);
}

/* A remote POST event on `cq` carrying `inst_id`. */
static inline void expect_remote_event(gni_cq_handle_t cq, uint32_t inst_id, const char *what)
{
	expect_post_event(cq, inst_id, "remote", what);
}

/* Byte i of the data rank `from` sends to rank `to`: differs for every (from, to, i) nearby. */
static inline unsigned char pattern(int from, int to, size_t i)
{
	return (unsigned char)(from * 31 + to * 7 + i * 13 + (i >> 8));
}

static inline void fill_pattern(unsigned char *buf, size_t bytes, int from, int to)
{
	for (size_t i = 0; i < bytes; i++)
		buf[i] = pattern(from, to, i);
}

static inline void expect_pattern(const unsigned char *buf, size_t bytes, int from, int to, const char *what)
{
	for (size_t i = 0; i < bytes; i++)
		if (buf[i] != pattern(from, to, i))
			fail("%s: byte %zu is %u, expected %u (data from rank %d for rank %d)", what, i, buf[i],
			     pattern(from, to, i), from, to);
}

#endif /* CRAY_UTIL_H */
