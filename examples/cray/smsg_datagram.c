/*
 * smsg_datagram: SMSG all-to-all, the mailbox attributes exchanged with datagrams.
 *
 * Each rank makes one endpoint per peer, bound to the peer's NIC address and inst_id, and one
 * mailbox per peer in one registered buffer. It sends each peer the attributes of the mailbox
 * that peer will write into by GNI_EpPostData, and receives the peer's with GNI_EpPostDataWait
 * (which must report the peer's address and inst_id), then GNI_SmsgInit. Then every rank sends
 * MESSAGES tagged messages to every peer and receives every peer's, in order, checking their
 * contents, tags, and the local and remote SMSG events.
 */
#include "cray_util.h"

#define MESSAGES 4
#define MAX_MESSAGE 128
#define DATAGRAM_WAIT_MS (EVENT_WAIT_SECONDS * 1000)

struct message {
	uint32_t magic, from, to, seq;
	char text[48];
};
#define MAGIC 0x5a5a0001u

int main(void)
{
	job_init("smsg_datagram");
	int n = job.size, peers = job.size - 1;
	if (sizeof(gni_smsg_attr_t) > GNI_DATAGRAM_MAXSIZE)
		fail("a gni_smsg_attr_t (%zu bytes) does not fit in a datagram", sizeof(gni_smsg_attr_t));

	gni_cq_handle_t cq, rx_cq;
	unsigned events = (unsigned)(peers > 0 ? peers : 1) * MESSAGES;
	CHECK(GNI_CqCreate(job.nic, events, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
	CHECK(GNI_CqCreate(job.nic, events, 0, GNI_CQ_NOBLOCK, NULL, NULL, &rx_cq));

	/* One mailbox per peer; mailbox p receives from rank p. */
	gni_smsg_attr_t attr;
	memset(&attr, 0, sizeof attr);
	attr.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
	attr.mbox_maxcredit = MESSAGES;
	attr.msg_maxsize = MAX_MESSAGE;
	unsigned int mailbox_bytes;
	CHECK(GNI_SmsgBufferSizeNeeded(&attr, &mailbox_bytes));
	gni_mem_handle_t mailboxes_mdh;
	unsigned char *mailboxes = register_buffer((size_t)mailbox_bytes * (size_t)n, rx_cq, &mailboxes_mdh);

	gni_ep_handle_t *ep = calloc((size_t)n, sizeof *ep);
	gni_smsg_attr_t *local = calloc((size_t)n, sizeof *local), *remote = calloc((size_t)n, sizeof *remote);
	if (ep == NULL || local == NULL || remote == NULL)
		fail("out of memory");
	for (int p = 0; p < n; p++) {
		if (p == job.rank)
			continue;
		ep[p] = bind_endpoint(cq, p, (uint32_t)p * CDM_ID_MULTIPLIER);
		local[p] = attr;
		local[p].msg_buffer = mailboxes;
		local[p].buff_size = mailbox_bytes;
		local[p].mem_hndl = mailboxes_mdh;
		local[p].mbox_offset = mailbox_bytes * (uint32_t)p;
		CHECK(GNI_EpPostData(ep[p], &local[p], sizeof local[p], &remote[p], sizeof remote[p]));
	}
	for (int p = 0; p < n; p++) {
		if (p == job.rank)
			continue;
		gni_post_state_t state = GNI_POST_PENDING;
		uint32_t remote_address = 0, remote_id = 0;
		CHECK(GNI_EpPostDataWait(ep[p], DATAGRAM_WAIT_MS, &state, &remote_address, &remote_id));
		if (state != GNI_POST_COMPLETED)
			fail("datagram with rank %d: state %d, expected GNI_POST_COMPLETED", p, (int)state);
		if (remote_address != job.addresses[p] || remote_id != (uint32_t)p * CDM_ID_MULTIPLIER)
			fail("datagram with rank %d came from address %u id %u, expected %u and %u", p, remote_address,
			     remote_id, job.addresses[p], (uint32_t)p * CDM_ID_MULTIPLIER);
		if (remote[p].mbox_offset != mailbox_bytes * (uint32_t)job.rank || remote[p].mbox_maxcredit != MESSAGES)
			fail("rank %d's mailbox attributes: offset %u, credits %u; expected %u and %d", p,
			     remote[p].mbox_offset, remote[p].mbox_maxcredit, mailbox_bytes * (uint32_t)job.rank,
			     MESSAGES);
		CHECK(GNI_SmsgInit(ep[p], &local[p], &remote[p]));
	}
	PMI_CHECK(PMI_Barrier());

	/* Everyone sends to everyone, MESSAGES each, tag seq + 1. */
	for (uint32_t seq = 0; seq < MESSAGES; seq++) {
		for (int k = 1; k < n; k++) {
			int p = (job.rank + k) % n;
			struct message m = { MAGIC, (uint32_t)job.rank, (uint32_t)p, seq, "" };
			snprintf(m.text, sizeof m.text, "message %u from rank %d to rank %d", seq, job.rank, p);
			uint32_t msg_id = (uint32_t)p * MESSAGES + seq;
			double deadline = now_seconds() + EVENT_WAIT_SECONDS;
			gni_return_t rc;
			while ((rc = GNI_SmsgSendWTag(ep[p], &m, sizeof m, NULL, 0, msg_id, (uint8_t)(seq + 1))) ==
			       GNI_RC_NOT_DONE) {
				if (now_seconds() > deadline)
					fail("SMSG to rank %d: no credit after %d s", p, EVENT_WAIT_SECONDS);
				sched_yield();
			}
			CHECK(rc);
		}
	}

	/* Every peer's messages, in order. */
	for (int k = 1; k < n; k++) {
		int p = (job.rank + n - k) % n;
		for (uint32_t seq = 0; seq < MESSAGES; seq++) {
			void *header = NULL;
			uint8_t tag = GNI_SMSG_ANY_TAG;
			double deadline = now_seconds() + EVENT_WAIT_SECONDS;
			gni_return_t rc;
			while ((rc = GNI_SmsgGetNextWTag(ep[p], &header, &tag)) == GNI_RC_NOT_DONE) {
				if (now_seconds() > deadline)
					fail("SMSG from rank %d: message %u did not arrive in %d s", p, seq, EVENT_WAIT_SECONDS);
				tag = GNI_SMSG_ANY_TAG;
				sched_yield();
			}
			CHECK(rc);
			struct message m;
			memcpy(&m, header, sizeof m);
			char want[sizeof m.text];
			snprintf(want, sizeof want, "message %u from rank %d to rank %d", seq, p, job.rank);
			if (m.magic != MAGIC || m.from != (uint32_t)p || m.to != (uint32_t)job.rank || m.seq != seq ||
			    tag != seq + 1 || strcmp(m.text, want) != 0)
				fail("SMSG from rank %d: got \"%.48s\" (from %u, to %u, seq %u, tag %u), expected \"%s\" with tag %u",
				     p, m.text, m.from, m.to, m.seq, tag, want, seq + 1);
			CHECK(GNI_SmsgRelease(ep[p]));
		}
	}

	/* One local SMSG event per message sent, naming its msg_id; one remote event per message
	 * received. */
	unsigned char *sent = calloc((size_t)n * MESSAGES, 1);
	if (sent == NULL)
		fail("out of memory");
	for (int i = 0; i < peers * MESSAGES; i++) {
		gni_cq_entry_t ev = wait_event(cq, "local SMSG event");
		uint64_t id = GNI_CQ_GET_MSG_ID(ev);
		if (GNI_CQ_GET_TYPE(ev) != GNI_CQ_EVENT_TYPE_SMSG || id >= (uint64_t)n * MESSAGES ||
		    id / MESSAGES == (uint64_t)job.rank || sent[id]++)
			fail("local SMSG event %d: type %llu msg_id %llu, expected an SMSG event for each message once", i,
			     (unsigned long long)GNI_CQ_GET_TYPE(ev), (unsigned long long)id);
	}
	for (int i = 0; i < peers * MESSAGES; i++) {
		gni_cq_entry_t ev = wait_event(rx_cq, "remote SMSG event");
		if (GNI_CQ_GET_TYPE(ev) != GNI_CQ_EVENT_TYPE_SMSG)
			fail("remote event %d: type %llu, expected an SMSG event", i, (unsigned long long)GNI_CQ_GET_TYPE(ev));
	}

	PMI_CHECK(PMI_Barrier());
	for (int p = 0; p < n; p++) {
		if (p == job.rank)
			continue;
		CHECK(GNI_EpUnbind(ep[p]));
		CHECK(GNI_EpDestroy(ep[p]));
	}
	CHECK(GNI_MemDeregister(job.nic, &mailboxes_mdh));
	if (job.rank == 0)
		printf("smsg_datagram: %d ranks, mailboxes exchanged by datagram, %d SMSG messages all-to-all: contents, tags and events verified\n",
		       n, n * peers * MESSAGES);
	free(sent);
	free(ep);
	free(local);
	free(remote);
	job_finish();
	return 0;
}
