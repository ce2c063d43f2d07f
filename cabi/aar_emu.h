/*
 * aar_emu.h: control API of the emulated uGNI library (crates/emu, libugni.so), for test
 * programs that drive the emulated network. Link with -lugni. Not part of uGNI: a program that
 * calls these runs only against the emulator.
 *
 * The emulator keeps five NIC counters per process, published as PAPI Software-Defined Events
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
 *   f = p + ceil(len/16) request flits for PUT-like transfers (PUT, AMO, CQWRITE, SMSG),
 *   f = p for GET-like ones (RDMA_GET, FMA_GET, FMA_GET_W_FLAG);
 *   rsp_packets += p;  rsp_latency += p * L(m);  req_stalled += f * s(m);
 *   rsp_stalled += f * s(m) * rsp_stall;
 * with L(m) = latency_ad + w(m) * (latency_bs - latency_ad), s(m) likewise from stall_ad/stall_bs,
 * and the bias weight w of the low byte of dlvr_mode: ADAPTIVE0 0, ADAPTIVE1 1/3, ADAPTIVE2 2/3,
 * ADAPTIVE3 1, MIN_HASH and IN_ORDER 1, NMIN_HASH 0 with twice the latency (flag bits such as
 * ORDERED_TAIL are ignored). Fractions are carried over, so no small amount is lost.
 * A chained post counts as one transfer per element plus one for its head.
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
 *       the network profile (these are the defaults: a quiet network); any subset of the keys;
 *       a bad item gets one "aar-emu:" warning on stderr and keeps its default.
 *   AAR_EMU_LATENCY_UNIT=us|cycles   unit of rsp_latency (default us).
 *   AAR_EMU_LOG=<path>   append one JSON line per post/SMSG call (format: crates/emu/src/lib.rs).
 *   AAR_EMU_SIM="groups=2,placement=across-groups,nodes=2,background=uniform:0.3:4K,seed=1"
 *       the simulated network (unset or empty: the model above). Keys, all optional (defaults):
 *       groups (2, 1..16), global-per-router (10, 1..10), placement (across-groups; same-blade,
 *       same-group, scattered), nodes (2), background (none; uniform:LOAD[:SIZE],
 *       worst-case:LOAD[:SIZE], congestors[:SIZE]), background-nodes (32), background-global
 *       (0: background only in the groups of the process's nodes), seed (1). "1" alone means all
 *       defaults. A bad value gets one "aar-emu:" warning naming the variable and value, and the
 *       model above is used.
 */
#ifndef AAR_EMU_H
#define AAR_EMU_H

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the network profile: latency per response packet at the Adaptive (ADAPTIVE0) and High
 * Bias (ADAPTIVE3) ends, in microseconds, and stalled cycles per request flit at both ends.
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

#ifdef __cplusplus
}
#endif

#endif /* AAR_EMU_H */
