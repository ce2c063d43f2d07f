/*
 * ugni_pair.h: the uGNI set-up the examples share, written once, so that each example's own file
 * shows the calls that matter to it (post descriptors, posts, completions, short messages).
 *
 * An example runs two communication domains of one process, side A (inst_id N) and side B
 * (N + 1), each attached to its own NIC, as two ranks on two nodes would be. ugni_pair_open()
 * makes, for each side:
 *
 *   GNI_CdmCreate, GNI_CdmAttach  a communication domain with the job's ptag and cookie inside a
 *                                 Cray job (ugni_ptag_cookie), else GNI_FIND_ALLOC_PTAG and the
 *                                 program's own cookie; on the job's NIC device (PMI_GNI_DEV_ID,
 *                                 as cray/cray_util.h takes it) when set, else device 0
 *   GNI_CqCreate (twice)          tx_cq: the local completions of the side's own posts (the
 *                                 endpoint's CQ); rx_cq: the remote events of data landing in
 *                                 the side's memory, and SMSG arrivals (that memory's CQ)
 *   GNI_EpCreate, GNI_EpBind      an endpoint bound to the other side's NIC address and inst_id
 *   GNI_MemRegister               send_buf (no CQ) and recv_buf (rx_cq): zeroed, 64-byte aligned
 *   GNI_SmsgBufferSizeNeeded, GNI_MemRegister, GNI_SmsgInit
 *                                 an SMSG mailbox, when asked for
 *
 * and ugni_pair_close() gives it all back. Around them: the check every uGNI call goes through,
 * the waits for a post's completions, the reading of the command line (ugni_options: every
 * option's allowed values in one table, a refusal that names the option, the value and what to
 * type instead), and the clock.
 *
 * Define UGNI_PROGRAM, the name every message starts with, before including this header:
 *
 *   #define UGNI_PROGRAM "pingpong"
 *   #include "ugni_pair.h"
 *
 * Header-only, so an example still builds from its one .c file with this header beside it (-ldl:
 * dlsym is in libdl before glibc 2.34):
 *
 *   cc -O2 -o pingpong pingpong.c $(pkg-config --cflags --libs cray-ugni) -ldl
 *
 * with cray/pmi_gni_env.h (the reading of PMI_GNI_PTAG, PMI_GNI_COOKIE and PMI_GNI_DEV_ID, shared with the Cray
 * examples' cray_util.h) and cray/parse_size.h (the reading of a number option, shared with
 * cray/ab_exchange.c) in its folder beside it.
 *
 * The test programs of tests/c include it too.
 */
#ifndef AAR_UGNI_PAIR_H
#define AAR_UGNI_PAIR_H

#ifndef UGNI_PROGRAM
#error "define UGNI_PROGRAM (the program's name in its messages) before including ugni_pair.h"
#endif

/* clock_gettime is POSIX: without this, a strict -std=c99 or -std=c11 declares it not, and newer
 * compilers (GCC 14, Clang 16: Cray's CCE 15 on) refuse its implicit declaration. Only effective
 * when this header comes first, as in the examples; the GNU dialects define it anyway. */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gni_pub.h"

#include "cray/parse_size.h"
#include "cray/pmi_gni_env.h"

/* How long a wait for a completion may take before it counts as a failure. */
#define UGNI_WAIT_MS 10000

/* The emulator's simulated clock (cabi/aar_emu.h: 0 without a simulated network), looked up by
 * ugni_clock_simulated(); NULL in a process without it, as over a real libugni. Not a weak
 * declaration: in a program compiled without -fPIE (-fno-pie, or a compiler or wrapper whose
 * default that is) the linker fixes a weak function's address at link time, so a program linked
 * against the emulator crashed in its first timing over a libugni without the clock, and one
 * linked against a real libugni never used the clock over the emulator. */
static unsigned long long (*ugni_emu_clock_ns)(void);

/* One side of the pair. */
struct ugni_side {
	uint32_t inst_id, addr; /* the domain's instance id; its NIC's address */
	gni_cdm_handle_t cdm;
	gni_nic_handle_t nic;
	gni_cq_handle_t tx_cq, rx_cq;
	gni_ep_handle_t ep;
	unsigned char *send_buf, *recv_buf;
	gni_mem_handle_t send_mh, recv_mh;
	void *mailbox; /* NULL without SMSG */
	gni_mem_handle_t mailbox_mh;
	gni_smsg_attr_t smsg; /* this side's mailbox, as GNI_SmsgInit takes it */
};

/* What ugni_pair_open() makes. */
struct ugni_pair_config {
	uint32_t inst_id;         /* side A's; side B's is the next one */
	uint32_t cookie;          /* the cookie of both domains outside a job (ugni_ptag_cookie) */
	uint32_t cq_entries;      /* of each CQ */
	gni_cq_mode_t tx_cq_mode; /* GNI_CQ_BLOCKING to wait on tx_cq, GNI_CQ_NOBLOCK to poll it */
	uint64_t bytes;           /* of each send and receive buffer */
	uint32_t smsg_credits;    /* SMSG mailbox credits; 0: no mailbox */
	uint32_t smsg_max_size;   /* the largest short message, header and payload together */
};

/* Every uGNI call goes through this: 0 on success; otherwise a message naming the call, and -1. */
static inline int ugni_check(gni_return_t rc, const char *what)
{
	if (rc == GNI_RC_SUCCESS)
		return 0;
	fprintf(stderr, UGNI_PROGRAM ": %s failed: %s (%d)\n", what,
		(unsigned)rc <= GNI_RC_ERROR_NOMEM ? gni_err_str[rc] : "?", (int)rc);
	return -1;
}

/* `bytes` of zeroed, 64-byte aligned memory registered on `s`'s NIC, with `cq` (or NULL) as
 * the CQ of the remote events of data landing in it; NULL on failure (said). */
static inline void *ugni_register(struct ugni_side *s, uint64_t bytes, gni_cq_handle_t cq, gni_mem_handle_t *mh)
{
	size_t size = (bytes + 63) / 64 * 64;
	void *buf = aligned_alloc(64, size ? size : 64);
	if (!buf) {
		fprintf(stderr, UGNI_PROGRAM ": out of memory for a %llu-byte buffer\n", (unsigned long long)bytes);
		return NULL;
	}
	memset(buf, 0, size);
	if (ugni_check(GNI_MemRegister(s->nic, (uint64_t)(uintptr_t)buf, bytes, cq, GNI_MEM_READWRITE, (uint32_t)-1, mh),
		       "GNI_MemRegister")) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* An SMSG mailbox for `s`, registered with its rx_cq (where arrivals are announced). */
static inline int ugni_smsg_mailbox(struct ugni_side *s, uint32_t credits, uint32_t max_size)
{
	unsigned int bytes = 0;
	memset(&s->smsg, 0, sizeof s->smsg);
	s->smsg.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
	s->smsg.mbox_maxcredit = credits;
	s->smsg.msg_maxsize = max_size;
	if (ugni_check(GNI_SmsgBufferSizeNeeded(&s->smsg, &bytes), "GNI_SmsgBufferSizeNeeded"))
		return -1;
	s->mailbox = ugni_register(s, bytes, s->rx_cq, &s->mailbox_mh);
	if (!s->mailbox)
		return -1;
	s->smsg.msg_buffer = s->mailbox;
	s->smsg.buff_size = bytes;
	s->smsg.mem_hndl = s->mailbox_mh;
	s->smsg.mbox_offset = 0;
	return 0;
}

/* The first value of the job's PMI_GNI_* variable `name` (pmi_gni_env.h), at most `max`, into
 * *value: 0; 1 when it is unset; -1 when it is bad (said). */
static inline int ugni_job_env(const char *name, unsigned long max, unsigned long *value)
{
	const char *text;
	switch (pmi_gni_env(name, max, value, &text)) {
	case PMI_GNI_ENV_OK:
		return 0;
	case PMI_GNI_ENV_UNSET:
		return 1;
	case PMI_GNI_ENV_NOT_A_NUMBER:
		fprintf(stderr,
			UGNI_PROGRAM ": %s=\"%s\" refused: not a number (decimal or 0x hex; several ':'-separated, "
				     "the first is used): the job launcher sets it (aprun, srun or aar run); unset it to run "
				     "outside a job; nothing was run\n",
			name, text);
		return -1;
	case PMI_GNI_ENV_TOO_LARGE:
		break;
	}
	fprintf(stderr,
		UGNI_PROGRAM ": %s=\"%s\" refused: out of range (at most %lu): the job launcher sets it (aprun, srun "
			     "or aar run); unset it to run outside a job; nothing was run\n",
		name, text, max);
	return -1;
}

/* The ptag and cookie of the pair's domains. Inside a Cray job, whose launcher sets PMI_GNI_PTAG
 * and PMI_GNI_COOKIE, the job's (the first of each, which go together), as Cray's examples and
 * cray/cray_util.h take them; with neither set, today's GNI_FIND_ALLOC_PTAG (docs/abi.md 1.8: with
 * ALPS it asks for the allocation's ptag) and `own_cookie`, as over the emulator, which checks
 * neither. Whether a real Cray job accepts GNI_FIND_ALLOC_PTAG with a cookie of the program's own
 * is not known here, hence the job's values when there are some. 0 on success; -1 (said) when
 * only one of the two is set or either is bad. */
static inline int ugni_ptag_cookie(uint32_t own_cookie, uint8_t *ptag, uint32_t *cookie)
{
	unsigned long job_ptag = 0, job_cookie = 0;
	int p = ugni_job_env("PMI_GNI_PTAG", UINT8_MAX, &job_ptag);
	int c = ugni_job_env("PMI_GNI_COOKIE", UINT32_MAX, &job_cookie);
	if (p < 0 || c < 0)
		return -1;
	if (p != c) {
		fprintf(stderr,
			UGNI_PROGRAM ": %s is set but %s is not: a job launcher (aprun, srun or aar run) sets both; "
				     "set both, or neither to run outside a job (with GNI_FIND_ALLOC_PTAG); nothing was run\n",
			p ? "PMI_GNI_COOKIE" : "PMI_GNI_PTAG", p ? "PMI_GNI_PTAG" : "PMI_GNI_COOKIE");
		return -1;
	}
	*ptag = p ? (uint8_t)GNI_FIND_ALLOC_PTAG : (uint8_t)job_ptag;
	*cookie = p ? own_cookie : (uint32_t)job_cookie;
	return 0;
}

/* The NIC device of the pair's domains: inside a Cray job, whose launcher sets PMI_GNI_DEV_ID, the
 * job's (the first), as cray/cray_util.h takes it; device 0 when it is unset. 0 on success, with
 * *text the variable's value (NULL when unset); -1 (said) when it is bad. */
static inline int ugni_device(uint32_t *device, const char **text)
{
	unsigned long job_device = 0;
	int d = ugni_job_env("PMI_GNI_DEV_ID", UINT32_MAX, &job_device);
	*device = (uint32_t)job_device;
	*text = d == 0 ? getenv("PMI_GNI_DEV_ID") : NULL;
	return d < 0 ? -1 : 0;
}

/* One side: its domain (with `ptag` and `cookie`) on NIC device `device` (`device_text`: the
 * PMI_GNI_DEV_ID it came from, NULL for none, named when a device other than 0 cannot be
 * attached), NIC, CQs, endpoint (not bound yet), buffers and mailbox. */
static inline int ugni_side_open(struct ugni_side *s, uint32_t inst_id, uint8_t ptag, uint32_t cookie,
				 uint32_t device, const char *device_text, const struct ugni_pair_config *c)
{
	memset(s, 0, sizeof *s);
	s->inst_id = inst_id;
	if (ugni_check(GNI_CdmCreate(inst_id, ptag, cookie, 0, &s->cdm), "GNI_CdmCreate"))
		return -1;
	if (ugni_check(GNI_CdmAttach(s->cdm, device, &s->addr, &s->nic), "GNI_CdmAttach")) {
		if (device_text && device != 0)
			fprintf(stderr,
				UGNI_PROGRAM ": the NIC device was the job's PMI_GNI_DEV_ID=\"%s\": the job launcher (aprun, "
					     "srun or aar run) sets it; unset it for device 0\n",
				device_text);
		return -1;
	}
	if (ugni_check(GNI_CqCreate(s->nic, c->cq_entries, 0, c->tx_cq_mode, NULL, NULL, &s->tx_cq), "GNI_CqCreate") ||
	    ugni_check(GNI_CqCreate(s->nic, c->cq_entries, 0, GNI_CQ_BLOCKING, NULL, NULL, &s->rx_cq), "GNI_CqCreate") ||
	    ugni_check(GNI_EpCreate(s->nic, s->tx_cq, &s->ep), "GNI_EpCreate"))
		return -1;
	s->send_buf = ugni_register(s, c->bytes, NULL, &s->send_mh);
	s->recv_buf = s->send_buf ? ugni_register(s, c->bytes, s->rx_cq, &s->recv_mh) : NULL;
	if (!s->recv_buf)
		return -1;
	return c->smsg_credits ? ugni_smsg_mailbox(s, c->smsg_credits, c->smsg_max_size) : 0;
}

/* Both sides, their endpoints bound to each other, and their mailboxes paired. 0 on success. */
static inline int ugni_pair_open(struct ugni_side *a, struct ugni_side *b, const struct ugni_pair_config *c)
{
	uint8_t ptag;
	uint32_t cookie, device;
	const char *device_text;
	if (ugni_ptag_cookie(c->cookie, &ptag, &cookie) || ugni_device(&device, &device_text) ||
	    ugni_side_open(a, c->inst_id, ptag, cookie, device, device_text, c) ||
	    ugni_side_open(b, c->inst_id + 1, ptag, cookie, device, device_text, c) ||
	    ugni_check(GNI_EpBind(a->ep, b->addr, b->inst_id), "GNI_EpBind") ||
	    ugni_check(GNI_EpBind(b->ep, a->addr, a->inst_id), "GNI_EpBind"))
		return -1;
	if (c->smsg_credits &&
	    (ugni_check(GNI_SmsgInit(a->ep, &a->smsg, &b->smsg), "GNI_SmsgInit") ||
	     ugni_check(GNI_SmsgInit(b->ep, &b->smsg, &a->smsg), "GNI_SmsgInit")))
		return -1;
	return 0;
}

/* Everything ugni_side_open() made, given back in the reverse order. 0 if every call succeeded. */
static inline int ugni_side_close(struct ugni_side *s)
{
	int failed = (s->mailbox && ugni_check(GNI_MemDeregister(s->nic, &s->mailbox_mh), "GNI_MemDeregister")) |
		     ugni_check(GNI_MemDeregister(s->nic, &s->recv_mh), "GNI_MemDeregister") |
		     ugni_check(GNI_MemDeregister(s->nic, &s->send_mh), "GNI_MemDeregister") |
		     ugni_check(GNI_EpUnbind(s->ep), "GNI_EpUnbind") | ugni_check(GNI_EpDestroy(s->ep), "GNI_EpDestroy") |
		     ugni_check(GNI_CqDestroy(s->rx_cq), "GNI_CqDestroy") |
		     ugni_check(GNI_CqDestroy(s->tx_cq), "GNI_CqDestroy") |
		     ugni_check(GNI_CdmDestroy(s->cdm), "GNI_CdmDestroy");
	free(s->mailbox);
	free(s->recv_buf);
	free(s->send_buf);
	return failed ? -1 : 0;
}

static inline int ugni_pair_close(struct ugni_side *a, struct ugni_side *b)
{
	int failed = ugni_side_close(a) | ugni_side_close(b);
	return failed ? -1 : 0;
}

/* Wait for the local completion of `pd`, posted on `s`'s endpoint with GNI_CQMODE_GLOBAL_EVENT:
 * 0 if the event is the post's own (GNI_GetCompleted gives back its descriptor) and says it
 * succeeded. */
static inline int ugni_wait_local(struct ugni_side *s, gni_post_descriptor_t *pd)
{
	gni_cq_entry_t ev;
	gni_post_descriptor_t *done = NULL;
	if (ugni_check(GNI_CqWaitEvent(s->tx_cq, UGNI_WAIT_MS, &ev), "GNI_CqWaitEvent (local)") ||
	    ugni_check(GNI_GetCompleted(s->tx_cq, ev, &done), "GNI_GetCompleted"))
		return -1;
	if (done != pd || GNI_CQ_GET_TYPE(ev) != GNI_CQ_EVENT_TYPE_POST || !GNI_CQ_STATUS_OK(ev)) {
		fprintf(stderr, UGNI_PROGRAM ": wrong local completion for post %llu\n", (unsigned long long)pd->post_id);
		return -1;
	}
	return 0;
}

/* One RDMA PUT of `bytes` from `a`'s send buffer into `b`'s receive buffer with routing `dlvr`,
 * its bytes numbered by `seq`, waited for (GNI_CQMODE_GLOBAL_EVENT): 0 if it arrived intact. */
static inline int ugni_put_checked(struct ugni_side *a, struct ugni_side *b, uint64_t bytes, uint16_t dlvr,
				   unsigned seq)
{
	for (uint64_t i = 0; i < bytes; i++)
		a->send_buf[i] = (unsigned char)(i * 7u + seq);
	gni_post_descriptor_t pd;
	memset(&pd, 0, sizeof pd);
	pd.type = GNI_POST_RDMA_PUT;
	pd.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
	pd.dlvr_mode = dlvr;
	pd.local_addr = (uint64_t)(uintptr_t)a->send_buf;
	pd.local_mem_hndl = a->send_mh;
	pd.remote_addr = (uint64_t)(uintptr_t)b->recv_buf;
	pd.remote_mem_hndl = b->recv_mh;
	pd.length = bytes;
	return ugni_check(GNI_PostRdma(a->ep, &pd), "GNI_PostRdma") || ugni_wait_local(a, &pd) ||
	       memcmp(a->send_buf, b->recv_buf, bytes);
}

/* Wait for the remote event of a post from `from` (GNI_CQMODE_REMOTE_EVENT) whose data landed in
 * `to`'s memory: 0 if the event names `from` as the sender. */
static inline int ugni_wait_remote(struct ugni_side *to, const struct ugni_side *from)
{
	gni_cq_entry_t ev;
	if (ugni_check(GNI_CqWaitEvent(to->rx_cq, UGNI_WAIT_MS, &ev), "GNI_CqWaitEvent (remote)"))
		return -1;
	if (GNI_CQ_GET_INST_ID(ev) != from->inst_id) {
		fprintf(stderr, UGNI_PROGRAM ": remote event from inst_id %llu, expected %u\n",
			(unsigned long long)GNI_CQ_GET_INST_ID(ev), from->inst_id);
		return -1;
	}
	return 0;
}

/* One `--name VALUE` option, and the values it allows: every check of the command line is here,
 * so that each refusal names the option, the value given, what is allowed and what to type.
 *
 * A number (`number`, read by cray/parse_size.h) lies from `min` to `max` (0: no upper bound), is
 * a multiple of `multiple` (0: any) and, with `not_above`, is at most the value of the option of
 * that name (--min and --max); `unit` ("bytes") follows the range in a message, `hex` writes it
 * in 0x hex. A text (`text`) is one of `choices` (NULL-terminated; NULL: any text). */
struct ugni_option {
	const char *name;
	uint64_t *number;
	const char **text;
	int *given; /* if not NULL, set to 1 when the option is there */
	uint64_t min, max, multiple;
	const char *unit;
	int hex;
	const char *not_above;
	const char *const *choices;
};

/* `v` as the command line takes it back: 0x hex if `hex`, else with a K or M suffix if exact. */
static inline const char *ugni_number_text(char buf[32], uint64_t v, int hex)
{
	unsigned long long u = v;
	if (hex)
		snprintf(buf, 32, "0x%llx", u);
	else if (u && u % (1u << 20) == 0)
		snprintf(buf, 32, "%lluM", u >> 20);
	else if (u && u % 1024 == 0)
		snprintf(buf, 32, "%lluK", u >> 10);
	else
		snprintf(buf, 32, "%llu", u);
	return buf;
}

/* What `o` allows, as "8 to 4K bytes, a multiple of 8". */
static inline const char *ugni_range_text(char buf[160], const struct ugni_option *o)
{
	char lo[32], hi[32];
	int n = o->max ? snprintf(buf, 160, "%s to %s", ugni_number_text(lo, o->min, o->hex),
				  ugni_number_text(hi, o->max, o->hex))
		       : snprintf(buf, 160, "%s or more", ugni_number_text(lo, o->min, o->hex));
	if (o->unit)
		n += snprintf(buf + n, 160 - (size_t)n, " %s", o->unit);
	if (o->multiple > 1)
		snprintf(buf + n, 160 - (size_t)n, ", a multiple of %llu", (unsigned long long)o->multiple);
	return buf;
}

/* Whether `o` allows the number `v` (not_above aside). */
static inline int ugni_allows(const struct ugni_option *o, uint64_t v)
{
	return v >= o->min && (!o->max || v <= o->max) && (o->multiple < 2 || v % o->multiple == 0);
}

/* The value `o` allows nearest to `v`: the one to suggest instead of it. */
static inline uint64_t ugni_nearest(const struct ugni_option *o, uint64_t v)
{
	uint64_t top = o->max ? o->max : UINT64_MAX, step = o->multiple > 1 ? o->multiple : 1;
	v = v < o->min ? o->min : v > top ? top : v;
	uint64_t up = v + (step - v % step) % step;
	return up >= v && up <= top ? up : v - v % step;
}

/* The option named `name` of `options`, NULL if none. */
static inline const struct ugni_option *ugni_find_option(const struct ugni_option *options, size_t count,
							  const char *name)
{
	for (size_t i = 0; i < count; i++)
		if (!strcmp(options[i].name, name))
			return &options[i];
	return NULL;
}

/* Read argv against `options` (`count` of them). Returns -1 when the program is to go on;
 * otherwise the exit status, after `usage` was printed: 0 for --help or -h, 2 for anything
 * refused (an option it does not know, a value missing, unreadable or not allowed), after one
 * line on stderr that names the option and the value and says what is allowed and what to type. */
static inline int ugni_options(int argc, char **argv, const struct ugni_option *options, size_t count,
			       void (*usage)(void))
{
	char range[160], was[32], other[32];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		}
		const struct ugni_option *o = ugni_find_option(options, count, argv[i]);
		if (!o || i + 1 >= argc) {
			if (!o)
				fprintf(stderr, UGNI_PROGRAM ": %s refused: not an option of " UGNI_PROGRAM
							     " (its options are below); nothing was run\n",
					argv[i]);
			else
				fprintf(stderr, UGNI_PROGRAM ": %s refused: a value must follow it; nothing was run\n",
					argv[i]);
			usage();
			return 2;
		}
		const char *value = argv[++i];
		if (o->number) {
			uint64_t v = 0;
			int unreadable = parse_size(value, &v) != 0;
			if (unreadable || !ugni_allows(o, v)) {
				fprintf(stderr,
					UGNI_PROGRAM ": %s %s refused: %s%s takes %s%s; type e.g. %s %s; nothing was run\n",
					o->name, value, unreadable ? "not a number it can read; " : "", o->name, ugni_range_text(range, o),
					unreadable ? ", decimal or 0x hex, with an optional K or M (times 1024 or 1048576)" : "",
					o->name, ugni_number_text(was, ugni_nearest(o, unreadable ? *o->number : v), o->hex));
				usage();
				return 2;
			}
			*o->number = v;
		}
		if (o->text) {
			const char *const *c = o->choices;
			while (c && *c && strcmp(*c, value))
				c++;
			if (c && !*c) {
				fprintf(stderr, UGNI_PROGRAM ": %s %s refused: %s takes ", o->name, value, o->name);
				for (c = o->choices; *c; c++)
					fprintf(stderr, "%s%s", *c, !c[1] ? "" : !c[2] ? " or " : ", ");
				fprintf(stderr, "; type e.g. %s %s; nothing was run\n", o->name, *o->text);
				usage();
				return 2;
			}
			*o->text = value;
		}
		if (o->given)
			*o->given = 1;
	}
	/* Between options, once all are read: --min 32 is refused beside a --max of 16, given or not. */
	for (const struct ugni_option *o = options; o < options + count; o++) {
		const struct ugni_option *limit = o->not_above ? ugni_find_option(options, count, o->not_above) : NULL;
		if (limit && *o->number > *limit->number) {
			ugni_number_text(was, *o->number, o->hex);
			ugni_number_text(other, *limit->number, limit->hex);
			fprintf(stderr,
				UGNI_PROGRAM ": %s %s refused: %s may not be above %s, which is %s; type e.g. %s %s, or "
					     "%s %s; nothing was run\n",
				o->name, was, o->name, limit->name, other, o->name, other, limit->name, was);
			usage();
			return 2;
		}
	}
	return -1;
}

/* CLOCK_MONOTONIC, in ns. */
static inline uint64_t ugni_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The function `name` of the program or of a library it loaded (the emulator's libugni.so,
 * libaar.so under LD_PRELOAD), NULL if none has it: dlsym on the program's own handle, which
 * POSIX has (RTLD_DEFAULT would need _GNU_SOURCE before every system header). Through a union:
 * ISO C has no conversion from dlsym's object pointer to a function pointer (-Wpedantic warns of
 * a cast); void (*)(void) converts to any function type. Link with -ldl before glibc 2.34. */
static inline void (*ugni_lookup(const char *name))(void)
{
	void *program = dlopen(NULL, RTLD_LAZY);
	union {
		void *object;
		void (*function)(void);
	} found = { .object = program ? dlsym(program, name) : NULL };
	return found.function;
}

/* Whether the program runs over the emulator on a simulated network (AAR_EMU_SIM), whose clock
 * then times it: ask after the first uGNI call (the emulator reads its settings there). */
static inline int ugni_clock_simulated(void)
{
	ugni_emu_clock_ns = (unsigned long long (*)(void))ugni_lookup("aar_emu_clock_ns");
	return ugni_emu_clock_ns && ugni_emu_clock_ns() != 0;
}

/* Now, in ns: the simulated clock if `simulated` (as ugni_clock_simulated() said), CLOCK_MONOTONIC
 * otherwise. */
static inline uint64_t ugni_now_ns(int simulated)
{
	return simulated ? ugni_emu_clock_ns() : ugni_monotonic_ns();
}

#endif
