/*
 * smallmsg: a stream of many small messages between two endpoints of one process, the traffic of
 * a latency-bound runtime: SMSG sends (every fourth one tagged) interleaved with small FMA PUTs.
 *
 * Side A streams messages to side B in windows; B drains its receive CQ after each window: an
 * SMSG arrival is read with GNI_SmsgGetNextWTag and released, a PUT's remote event means its slot
 * in B's landing buffer is ready. Every message carries its sequence number and a byte pattern,
 * and B checks both, in order. A also takes every local completion from its CQ. When the mailbox
 * is out of credits (GNI_RC_NOT_DONE), A lets B drain and tries again.
 *
 *   smallmsg [--count N] [--size B] [--mix smsg|fma|both] [--window W]
 *            [--dlvr-mode M] [--smsg-mode M]
 *
 * --count messages (default 10000); payload sizes cycle from 8 to --size bytes (default 64, at
 * most 4096); --window messages between drains (default 16, at most 64); --dlvr-mode is the
 * routing mode of the FMA PUTs (default 0); --smsg-mode, if given, is set on both NICs with
 * GNI_SmsgSetDeliveryMode before the stream starts. Numbers are decimal or 0x hex, with an
 * optional K or M suffix. Exit status 0 only if everything arrived.
 *
 * The set-up of the two sides (domains, NICs, CQs, endpoints, registered buffers, SMSG mailboxes)
 * is in ugni_pair.h, beside this file.
 */
#define UGNI_PROGRAM "smallmsg"
#include "ugni_pair.h"

#define CQ_ENTRIES 256
#define MAX_WINDOW 64
#define MAX_SIZE 4096
#define CREDITS 16

struct msg_header {
	uint32_t seq;
	uint32_t len;
};

static uint32_t max_payload = 64;

static uint32_t payload_len(uint64_t seq)
{
	return 8 + (uint32_t)(seq * 8 % (max_payload - 7));
}

static unsigned char pattern(uint64_t seq, uint32_t i)
{
	return (unsigned char)(seq * 17u + i * 3u + 1u);
}

struct stream {
	struct ugni_side *a, *b;
	const char *mix;
	uint16_t dlvr_mode;
	uint64_t next_to_check; /* B: sequence number of the next message expected */
	uint64_t smsg_count, fma_count, bytes;
	gni_post_descriptor_t pds[MAX_WINDOW];
};

/* Which transport message `seq` uses. */
static int is_smsg(const struct stream *st, uint64_t seq)
{
	if (!strcmp(st->mix, "smsg"))
		return 1;
	if (!strcmp(st->mix, "fma"))
		return 0;
	return seq % 2 == 0;
}

/* B: handle every event on its receive CQ, checking messages in sequence order. */
static int drain_receiver(struct stream *st)
{
	struct ugni_side *b = st->b;
	gni_cq_entry_t ev;
	gni_return_t rc;
	while ((rc = GNI_CqGetEvent(b->rx_cq, &ev)) == GNI_RC_SUCCESS) {
		uint64_t seq = st->next_to_check;
		uint32_t len = payload_len(seq);
		if (GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_SMSG) {
			void *msg;
			uint8_t tag = GNI_SMSG_ANY_TAG;
			if (ugni_check(GNI_SmsgGetNextWTag(b->ep, &msg, &tag), "GNI_SmsgGetNextWTag"))
				return -1;
			struct msg_header h;
			memcpy(&h, msg, sizeof h);
			const unsigned char *data = (const unsigned char *)msg + sizeof h;
			uint8_t want_tag = seq % 8 == 0 ? (uint8_t)(seq / 8 % 200) : 0;
			if (h.seq != (uint32_t)seq || h.len != len || tag != want_tag || !is_smsg(st, seq)) {
				fprintf(stderr, "smallmsg: SMSG out of order: got seq %u len %u tag %u, expected seq %llu len %u tag %u\n",
					h.seq, h.len, tag, (unsigned long long)seq, len, want_tag);
				return -1;
			}
			for (uint32_t i = 0; i < len; i++)
				if (data[i] != pattern(seq, i)) {
					fprintf(stderr, "smallmsg: SMSG %llu: byte %u corrupted\n", (unsigned long long)seq, i);
					return -1;
				}
			if (ugni_check(GNI_SmsgRelease(b->ep), "GNI_SmsgRelease"))
				return -1;
		} else {
			const unsigned char *slot = b->recv_buf + (seq % MAX_WINDOW) * MAX_SIZE;
			struct msg_header h;
			memcpy(&h, slot, sizeof h);
			if (is_smsg(st, seq) || h.seq != (uint32_t)seq || h.len != len ||
			    GNI_CQ_GET_INST_ID(ev) != st->a->inst_id) {
				fprintf(stderr, "smallmsg: PUT out of order: got seq %u, expected %llu\n", h.seq,
					(unsigned long long)seq);
				return -1;
			}
			for (uint32_t i = sizeof h; i < len; i++)
				if (slot[i] != pattern(seq, i)) {
					fprintf(stderr, "smallmsg: PUT %llu: byte %u corrupted\n", (unsigned long long)seq, i);
					return -1;
				}
		}
		st->next_to_check++;
	}
	return rc == GNI_RC_NOT_DONE ? 0 : ugni_check(rc, "GNI_CqGetEvent (receiver)");
}

/* A: take every local completion. */
static int drain_sender(struct stream *st)
{
	gni_cq_entry_t ev;
	gni_return_t rc;
	while ((rc = GNI_CqGetEvent(st->a->tx_cq, &ev)) == GNI_RC_SUCCESS) {
		if (GNI_CQ_GET_TYPE(ev) == GNI_CQ_EVENT_TYPE_POST) {
			gni_post_descriptor_t *pd;
			if (ugni_check(GNI_GetCompleted(st->a->tx_cq, ev, &pd), "GNI_GetCompleted"))
				return -1;
			if (pd < st->pds || pd >= st->pds + MAX_WINDOW) {
				fprintf(stderr, "smallmsg: completion for an unknown descriptor\n");
				return -1;
			}
		}
	}
	return rc == GNI_RC_NOT_DONE ? 0 : ugni_check(rc, "GNI_CqGetEvent (sender)");
}

static int send_one(struct stream *st, uint64_t seq)
{
	struct ugni_side *a = st->a, *b = st->b;
	uint32_t len = payload_len(seq);
	unsigned char payload[MAX_SIZE];
	struct msg_header h = { (uint32_t)seq, len };
	for (uint32_t i = 0; i < len; i++)
		payload[i] = pattern(seq, i);

	if (is_smsg(st, seq)) {
		for (int tries = 0;; tries++) {
			gni_return_t rc = seq % 8 == 0
				? GNI_SmsgSendWTag(a->ep, &h, sizeof h, payload, len, (uint32_t)seq, (uint8_t)(seq / 8 % 200))
				: GNI_SmsgSend(a->ep, &h, sizeof h, payload, len, (uint32_t)seq);
			if (rc == GNI_RC_SUCCESS)
				break;
			if (rc != GNI_RC_NOT_DONE || tries > 1000)
				return ugni_check(rc, "GNI_SmsgSend");
			/* Out of credits: let the receiver catch up. */
			if (drain_receiver(st) || drain_sender(st))
				return -1;
		}
		st->smsg_count++;
		st->bytes += sizeof h + len;
		return 0;
	}

	/* A PUT of the payload, with the header in its first 8 bytes, into B's slot for it. */
	unsigned char *src = a->send_buf + (seq % MAX_WINDOW) * MAX_SIZE;
	memcpy(src, payload, len);
	memcpy(src, &h, sizeof h);
	gni_post_descriptor_t *pd = &st->pds[seq % MAX_WINDOW];
	memset(pd, 0, sizeof *pd);
	pd->type = GNI_POST_FMA_PUT;
	pd->cq_mode = GNI_CQMODE_GLOBAL_EVENT | GNI_CQMODE_REMOTE_EVENT;
	pd->dlvr_mode = st->dlvr_mode;
	pd->local_addr = (uint64_t)(uintptr_t)src;
	pd->local_mem_hndl = a->send_mh;
	pd->remote_addr = (uint64_t)(uintptr_t)(b->recv_buf + (seq % MAX_WINDOW) * MAX_SIZE);
	pd->remote_mem_hndl = b->recv_mh;
	pd->length = len;
	pd->post_id = seq;
	if (ugni_check(GNI_PostFma(a->ep, pd), "GNI_PostFma"))
		return -1;
	st->fma_count++;
	st->bytes += len;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: smallmsg [--count N] [--size B] [--mix smsg|fma|both] [--window W] [--dlvr-mode M] [--smsg-mode M]\n");
}

int main(int argc, char **argv)
{
	uint64_t count = 10000, size = 64, window = 16, dlvr_mode = 0, smsg_mode = 0;
	int set_smsg_mode = 0;
	const char *mix = "both";
	static const char *const mixes[] = { "smsg", "fma", "both", NULL };
	const struct ugni_option options[] = {
		{ .name = "--count", .number = &count, .unit = "messages" },
		{ .name = "--size", .number = &size, .min = 8, .max = MAX_SIZE, .unit = "bytes" },
		{ .name = "--mix", .text = &mix, .choices = mixes },
		{ .name = "--window", .number = &window, .min = 1, .max = MAX_WINDOW, .unit = "messages" },
		{ .name = "--dlvr-mode", .number = &dlvr_mode, .max = 0xffff, .hex = 1 },
		{ .name = "--smsg-mode", .number = &smsg_mode, .given = &set_smsg_mode, .max = 0xffff, .hex = 1 },
	};
	int status = ugni_options(argc, argv, options, sizeof options / sizeof *options, usage);
	if (status >= 0)
		return status;
	max_payload = (uint32_t)size;

	/* A's send buffer is the source of its PUTs, B's receive buffer their landing slots. */
	struct ugni_side a, b;
	const struct ugni_pair_config config = {
		.inst_id = 0,
		.cookie = 0x5678,
		.cq_entries = CQ_ENTRIES,
		.tx_cq_mode = GNI_CQ_NOBLOCK,
		.bytes = (uint64_t)MAX_WINDOW * MAX_SIZE,
		.smsg_credits = CREDITS,
		.smsg_max_size = sizeof(struct msg_header) + MAX_SIZE,
	};
	if (ugni_pair_open(&a, &b, &config))
		return 1;
	if (set_smsg_mode &&
	    (ugni_check(GNI_SmsgSetDeliveryMode(a.nic, (uint16_t)smsg_mode), "GNI_SmsgSetDeliveryMode") ||
	     ugni_check(GNI_SmsgSetDeliveryMode(b.nic, (uint16_t)smsg_mode), "GNI_SmsgSetDeliveryMode")))
		return 1;

	static struct stream st;
	st.a = &a;
	st.b = &b;
	st.mix = mix;
	st.dlvr_mode = (uint16_t)dlvr_mode;

	uint64_t t0 = ugni_monotonic_ns();
	for (uint64_t seq = 0; seq < count; seq++) {
		if (send_one(&st, seq))
			return 1;
		if ((seq + 1) % window == 0 && (drain_receiver(&st) || drain_sender(&st)))
			return 1;
	}
	if (drain_receiver(&st) || drain_sender(&st))
		return 1;
	double secs = (double)(ugni_monotonic_ns() - t0) / 1e9;
	if (st.next_to_check != count) {
		fprintf(stderr, "smallmsg: %llu of %llu messages arrived\n", (unsigned long long)st.next_to_check,
			(unsigned long long)count);
		return 1;
	}
	printf("smallmsg: OK, %llu messages (%llu SMSG, %llu FMA PUT), %llu bytes, %.0f messages/s, all verified\n",
	       (unsigned long long)count, (unsigned long long)st.smsg_count, (unsigned long long)st.fma_count,
	       (unsigned long long)st.bytes, secs > 0 ? (double)count / secs : 0.0);
	return ugni_pair_close(&a, &b) ? 1 : 0;
}
