/*
 * aar_emu.h: control API of the emulated uGNI and DMAPP library (crates/emu, libugni.so, also
 * reachable as libdmapp.so), for test programs that drive the emulated network. Link with -lugni
 * (or -ldmapp). Not part of uGNI or DMAPP: a program that calls these runs only against the
 * emulator.
 *
 * The emulator keeps five NIC counters per process (in an `aar run` job, per node: the ranks of
 * one NIC address share them, as a NIC's registers are, so the calls below that read or change
 * them see the node's; docs/emulator-job.md), published as PAPI Software-Defined Events
 * (read them with PAPI_add_named_event("sde:::aries::<name>")), always in this order:
 *   0 req_flits    AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_FLITS      request flits sent
 *   1 req_stalled  AR_NIC_NETMON_ORB_EVENT_CNTR_REQ_STALLED    request flit stalled cycles
 *   2 rsp_latency  AR_NIC_ORB_PRF_NET_RSP_TRACK_2              cumulative response latency
 *                                                              (us, or cycles at 800 MHz with
 *                                                              AAR_EMU_LATENCY_UNIT=cycles)
 *   3 rsp_packets  AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_NET_TRACK  response packets
 *   4 rsp_stalled  AR_NIC_NETMON_ORB_EVENT_CNTR_RSP_STALLED    response stalled cycles
 *
 * Every transfer updates them through the NIC timing model: for len bytes in routing mode m,
 * with packets and request flits counted as aar's cost model counts them (crates/engine),
 *   p = max(1, ceil(len/64)) packets;
 *   f = p + ceil(len/16) request flits for PUT-like transfers (PUT, AMO, CQWRITE, SMSG;
 *     a CQ write's len is 0 whatever its descriptor's length, which uGNI does not read for it),
 *   f = p for GET-like ones (RDMA_GET, FMA_GET, FMA_GET_W_FLAG);
 *   rsp_packets += p;  rsp_latency += p * L(m);  req_stalled += f * s(m);
 *   rsp_stalled += f * s(m) * rsp_stall;
 * with L(m) = latency_ad + w(m) * (latency_bs - latency_ad), s(m) likewise from stall_ad/stall_bs,
 * and the bias weight w of the low byte of dlvr_mode: ADAPTIVE0 0, ADAPTIVE1 1/3, ADAPTIVE2 2/3,
 * ADAPTIVE3 1, MIN_HASH and IN_ORDER 1, NMIN_HASH 0 with twice the latency (flag bits such as
 * ORDERED_TAIL are ignored). Fractions are carried over, so no small amount is lost.
 * A chained post counts as one transfer per element plus one for its head.
 * A DMAPP data call counts as one transfer per target PE, of nelems x element size bytes (AMOs
 * 8), GET-like for GETs and PUT-like for PUTs and every AMO, in the uGNI mode of the routing
 * attribute in force on the calling thread (DMAPP_ROUTING_ADAPTIVE as ADAPTIVE0, _ADAPTIVE_1..3
 * as ADAPTIVE1..3, DETERMINISTIC as NMIN_HASH, DETERMINISTIC_1 as MIN_HASH, IN_ORDER as
 * IN_ORDER), from PE 0's NIC (address 0x100) to the PE's (0x100 + PE).
 *
 * Simulated network (AAR_EMU_SIM set): instead of the model above, every transfer is injected
 * into the packet-level Dragonfly simulator of crates/sim (Aries-like groups, credit flow
 * control, the routing mode of dlvr_mode's low byte: ADAPTIVE0..3, MIN_HASH, NMIN_HASH,
 * IN_ORDER; PUT-like transfers as PUTs, GET-like ones as GETs, an SMSG send as a small PUT in
 * the NIC's SMSG mode) at the current simulated time, and the simulation, background traffic
 * included, runs until the transfer's last response is back at the source NIC; then the post
 * returns. Data still moves inside the process as before; only timing and counters change:
 *   - NIC k attached by the process (addresses 0x100, 0x101, ... in attach order) sits on node
 *     (k mod nodes) of the placement (across-groups: node i in group i mod groups);
 *   - the five counters are the simulator's NIC counters summed over the process's nodes (the
 *     process is one rank; with one NIC, exactly its node's counters; a two-NIC process such as
 *     the examples sees the traffic of both sides, as co-located ranks share a NIC on Aries);
 *     rsp_latency is simulated in 800 MHz cycles and published in AAR_EMU_LATENCY_UNIT;
 *   - aar_emu_clock_ns() is the simulated time: it starts at 5000 ns (the background's lead
 *     time) and moves only while transfers are in flight (host time is not modelled);
 *   - aar_emu_set_network has no effect (the profile only applies if the simulation fails, in
 *     which case one "aar-emu:" warning says so and the default model takes over);
 *   - frozen counters still let transfers through the simulated network and the clock.
 *
 * Environment (each variable read once, by the first call that needs it; a bad value
 * gets one "aar-emu:" line on stderr naming the variable and value and what is used instead):
 *   AAR_EMU_NETWORK="latency_ad=1.4,latency_bs=1.1,stall_ad=1,stall_bs=2,rsp_stall=0"
 *       the network profile (these are the defaults: a quiet network); any subset of the keys,
 *       each once, each from 0 to 1e6; a bad item gets one "aar-emu:" warning on stderr and keeps
 *       its default, a key given again one warning and its first value. (aar_emu_set_network
 *       takes any finite value of 0 or more.)
 *   AAR_EMU_LATENCY_UNIT=us|cycles   unit of rsp_latency (default us).
 *   AAR_EMU_LOG=<path>   append one JSON line per post/SMSG call and per DMAPP data or attribute
 *       call (format: crates/emu/src/lib.rs).
 *   AAR_EMU_SIM="groups=2,placement=across-groups,nodes=2,background=uniform:0.3:4K,seed=1"
 *       the simulated network (unset, blank, 0, off, no or false: the model above). Keys, all
 *       optional (defaults): groups (2, 1..16), global-per-router (10, 1..10), placement
 *       (across-groups, or same-group with groups=1; same-blade, same-group, scattered,
 *       packed:ROUTERS:GROUPS), nodes (2), background (none; uniform:LOAD[:SIZE],
 *       worst-case:LOAD[:SIZE], congestors[:SIZE], production[:LOAD[:SIZE]]), background-nodes
 *       (32), background-global (0: background only in the groups of the process's nodes), seed
 *       (1). "1" alone means all defaults. A bad value, a key given twice, or keys that mean
 *       nothing together (across-groups or worst-case on one group, too few background-nodes
 *       for the background) get one "aar-emu:" warning naming the variable and value, and the
 *       model above is used.
 *   AAR_EMU_DMAPP_PES=4      PEs of the DMAPP job, 1 to 4096, read by dmapp_init. The process is
 *       PE 0; the others are virtual PEs of the same process, each with its own copy of the
 *       symmetric heap and of every segment (made at the first transfer that touches it).
 *   AAR_EMU_DMAPP_SHEAP=16M  bytes of each PE's symmetric heap, 4K to 64G (64K, 1M, 1GiB, ...).
 *   AAR_EMU_DMAPP_LAYOUT=standard|queue-first   the layout of dmapp_rma_attrs_ext_t: standard is
 *       cabi/dmapp.h's; queue-first puts a uint64_t queue_flags at bytes 8-15 (the emulator knows
 *       its bits 1 and 9, both set by default, and a set clears the others) and the PUT and GET
 *       routing at bytes 16 and 17, so a caller that changes bytes 8 and 9 does not read back what
 *       it wrote (a DMAPP release whose layout aar does not know).
 *   AAR_EMU_DMAPP_SET_BUSY=0   the first N dmapp_set_rma_attrs[_ext] calls of the process (any
 *       thread's) return DMAPP_RC_BUSY and change nothing; "always": every one; "N after M" or
 *       "always after M": the same once M calls have been answered as usual (see also
 *       aar_emu_dmapp_set_busy below).
 *   AAR_EMU_DMAPP_GET_BUSY=0   the same for dmapp_get_rma_attrs[_ext] calls, which then read
 *       nothing.
 *   AAR_EMU_JOB_DIR=<folder>   set by `aar run` (with PMI_RANK, PMI_SIZE, PMI_GNI_LOC_ADDR and
 *       PMI_GNI_COOKIE): the process is one rank of a job; NIC state other ranks must reach lives
 *       in files of that folder, and posts, AMOs, CQ events, SMSG and datagrams reach other ranks
 *       (docs/emulator-job.md). A missing or bad companion variable gets one "aar-emu:" warning
 *       and the process runs in-process.
 *   AAR_EMU_JOB_COPY=process_vm|service   how bytes move between ranks: process_vm (the default,
 *       also process-vm: process_vm_readv and _writev, or, where the kernel refuses them, the other
 *       rank's service thread), service (always the service thread).
 *
 * DMAPP in the emulator (cabi/dmapp.h): everything completes inside its call (an _nb sync id is
 * complete at once, dmapp_gsync_wait has nothing to wait for). Before dmapp_init (and after
 * dmapp_finalize) every call returns DMAPP_RC_PERMISSION_ERROR; a bad PE, element type, segment
 * descriptor, NULL pointer, a range outside the segment or a GET of zero elements (which DMAPP
 * does not support) DMAPP_RC_INVALID_PARAM; an address not aligned to the element size (AMO words
 * and put_flag flags: 8 bytes) DMAPP_RC_ALIGNMENT_ERROR; a PE copy the system has no memory for
 * DMAPP_RC_NO_SPACE. A refused call moves nothing. Every
 * thread's attributes start as those dmapp_init was asked for; a NULL request (as Cray's sample
 * programs make) asks for DMAPP's defaults: ADAPTIVE both ways, the emulator's own, since what a
 * real DMAPP starts with is not published (docs/abi.md).
 */
#ifndef AAR_EMU_H
#define AAR_EMU_H

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the network profile: latency per response packet at the Adaptive (ADAPTIVE0) and High
 * Bias (ADAPTIVE3) ends, in microseconds, and stalled cycles per request flit at both ends; the
 * response stalls per request stall stay as AAR_EMU_NETWORK's rsp_stall set them.
 * Returns 0, or -1 (and changes nothing) when a value is negative or not finite. */
int aar_emu_set_network(double latency_ad_us, double latency_bs_us, double stall_ad, double stall_bs);

/* Adds to the five counters (values may be negative: tests inject decreasing or absurd counters).
 * Works while frozen. */
void aar_emu_counters_add(long long req_flits, long long req_stalled, long long rsp_latency,
                          long long rsp_packets, long long rsp_stalled);

/* Sets the five counters to absolute values (and drops the model's carried-over fractions). */
void aar_emu_counters_set(long long req_flits, long long req_stalled, long long rsp_latency,
                          long long rsp_packets, long long rsp_stalled);

/* Copies the five counters, in the order above, into values[0..4]. */
void aar_emu_counters_get(long long values[5]);

/* on != 0: transfers stop changing the counters (only _add/_set do); on == 0: they resume. */
void aar_emu_counters_freeze(int on);

/* The emulator's clock, in nanoseconds: with AAR_EMU_SIM, the simulated time (it moves only while
 * transfers are in flight, and a post returns at its transfer's completion); 0 with the default
 * model, which has no clock (use clock_gettime then). Programs that should also run on a real
 * Cray declare it weak (#pragma weak aar_emu_clock_ns) and fall back when it is absent or 0. */
unsigned long long aar_emu_clock_ns(void);

/* Post and SMSG-send calls received so far, of every kind (GNI_PostRdma, GNI_PostFma,
 * GNI_PostCqWrite, GNI_CtPostFma, GNI_CtPostCqWrite, GNI_SmsgSend, GNI_SmsgSendWTag), counted on
 * entry whatever they return. */
unsigned long long aar_emu_post_count(void);

/* DMAPP data calls received so far, of every kind and form (dmapp_put, dmapp_put_nb, ...), counted
 * on entry whatever they return. Not in aar_emu_post_count. */
unsigned long long aar_emu_dmapp_calls(void);

/* dmapp_set_rma_attrs and dmapp_set_rma_attrs_ext calls received so far, whatever they returned:
 * by the calling thread (all == 0) or by every thread (all != 0). */
unsigned long long aar_emu_dmapp_attr_sets(int all);

/* The next n dmapp_set_rma_attrs and dmapp_set_rma_attrs_ext calls, of any thread, return
 * DMAPP_RC_BUSY and change nothing (UINT_MAX: every one from now on; 0: none); replaces what is
 * left of AAR_EMU_DMAPP_SET_BUSY. */
void aar_emu_dmapp_set_busy(unsigned n);

/* The routing attribute in force on the calling thread, as a dmapp_routing_type_t value, for
 * direction 0 (PUTs and AMOs) or 1 (GETs), read from the emulator itself (whatever the ext
 * layout, and past anything that rewrites what dmapp_get_rma_attrs returns); -1 before dmapp_init
 * or for another direction. */
int aar_emu_dmapp_routing(int direction);

#ifdef __cplusplus
}
#endif

#endif /* AAR_EMU_H */
