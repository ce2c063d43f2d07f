/*
 * aar.h — the C API of libaar.so (application-aware routing for Cray Aries jobs).
 *
 * libaar.so is normally used without any code change: LD_PRELOAD=libaar.so (or `module load aar`)
 * routes every adaptive uGNI post and DMAPP data call automatically. These calls let an application
 * steer routing for a phase or a code region, and mark the iterations of A/B routing experiments
 * (AAR_AB).
 * Link with -laar before -lugni, or keep using LD_PRELOAD and declare these functions weak so
 * the program also runs without the library:
 *
 *     #pragma weak aar_set_mode
 *     if (aar_set_mode) aar_set_mode(GNI_DLVMODE_ADAPTIVE3);
 *
 * Weak declarations work in code compiled position-independent (-fPIE or -fPIC, the default of
 * current GCC and Clang). In code compiled with -fno-pie the link editor makes each weak function
 * NULL for good, under LD_PRELOAD too: look them up instead with
 * dlsym(RTLD_DEFAULT, "aar_set_mode") (<dlfcn.h>, with _GNU_SOURCE), NULL without the library.
 * Do not combine weak declarations with -laar: a link editor that drops unused libraries (the
 * default of many, --as-needed) then leaves libaar.so out. `aar doctor PROGRAM` under AAR_AB
 * warns when the program cannot call aar_iteration_begin.
 *
 * Every function is thread-safe, never blocks a sending thread and takes effect for the posts
 * that start after it returns. DMAPP routes by a routing attribute of each thread: a change
 * reaches a thread's DMAPP operations from its next call on (operations already issued keep
 * theirs), and the application's own attribute comes back the same way. None of them write to
 * stdout. None is async-signal-safe (they may take locks and allocate, the iteration calls always
 * do): do not call them from a signal handler.
 */
#ifndef AAR_H
#define AAR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define AAR_OK         0   /* done */
#define AAR_EINVAL    -1   /* a bad argument (not an adaptive routing mode or a known name, a bad
                              label), or a call this state refuses (a policy change while an A/B
                              experiment runs, an end with no iteration in progress, markers when
                              AAR_AB_BOUNDARY names an MPI function, a label the iteration record
                              could not take: see aar_iteration_label), or a call made while
                              libaar.so is still starting: on another thread for longer than the
                              2 s a call waits for it (loading PAPI, say), or from inside its
                              start-up; it changed nothing (but aar_iteration_begin: see there;
                              one message on stderr, once per process, says so): call again once
                              aar_policy_name() no longer returns "starting" */
#define AAR_EDISABLED -2   /* AAR_DISABLE is set, or libaar.so could not start (an internal error,
                              or a fork child made while another thread of the parent was still
                              starting it; said on stderr): the library stays inert for this
                              process (a bad argument is still AAR_EINVAL) */

/* Pin every adaptive message (posts, SMSG and DMAPP) to one routing mode: GNI_DLVMODE_ADAPTIVE0
 * (0x00), ADAPTIVE1 (0x20), ADAPTIVE2 (0x40) or ADAPTIVE3 (0x80), uGNI's values for DMAPP too (its
 * operations then get DMAPP_ROUTING_ADAPTIVE, _ADAPTIVE_1.._3). Any other value, including the
 * non-adaptive modes, flag bits and DMAPP's own DMAPP_ROUTING_* values, returns AAR_EINVAL and
 * changes nothing (the first such value of the process is said on stderr, by name). Posts whose
 * caller asked for a non-adaptive mode (IN_ORDER, MIN_HASH, NMIN_HASH), and DMAPP directions set to
 * IN_ORDER or DETERMINISTIC(_1), are never changed, pinned or not.
 * While an A/B experiment runs (AAR_AB), this call, aar_set_mode_name and aar_set_auto are
 * refused with AAR_EINVAL and change nothing: the schedule alone chooses each iteration's policy. */
int aar_set_mode(uint16_t dlvr_mode);

/* The same by name, as AAR_MODE takes it: "ADAPTIVE3" or "ADAPTIVE_3" (any case), or "auto" (also
 * "paper"), or "steady" (aar's own automatic policy: no oscillation, state per destination class,
 * each MPI collective call routed as a whole with the routing its calls were fastest with),
 * or "off" (also "observe": count and read counters, but leave every descriptor as the caller
 * wrote it). Any other name, or NULL, returns AAR_EINVAL and changes nothing (the first such name
 * of the process is said on stderr). */
int aar_set_mode_name(const char *name);

/* Back to automatic routing: NIC counters and the cost model choose per message (the paper's
 * policy, "auto"; aar_set_mode_name("steady") selects the other one). Without the counters (PAPI
 * or its events missing: one warning at start, and the fixed low-latency mode) it is accepted all
 * the same, but with no counter window to decide from every adaptive message gets
 * AAR_LOW_LATENCY_MODE (ADAPTIVE3), as one below the threshold does. AAR_LAMBDA, AAR_SIGMA,
 * AAR_FRESHNESS and AAR_ALLTOALL given under a fixed AAR_MODE (said at start-up to have no effect)
 * apply from then on. */
int aar_set_auto(void);

/* Pause the library: every call is forwarded untouched (SMSG modes and DMAPP routing attributes
 * are given back to what the application set) until aar_enable(). The routing policy is kept for when it resumes. Both work
 * during A/B experiments too (a policy change at an iteration boundary keeps the pause). */
int aar_disable(void);
int aar_enable(void);

/* The policy now in force: "auto", "steady", "off", "ADAPTIVE0".."ADAPTIVE3", "paused", "disabled"
 * when AAR_DISABLE is set (or libaar.so could not start), or "starting" while libaar.so is still
 * starting (see AAR_EINVAL). A static string. */
const char *aar_policy_name(void);

/* Iterations (the unit A/B experiments alternate policies on; see README, "A/B experiments").
 * Every rank must mark the same iterations in the same order: iteration i gets the policy the
 * AAR_AB schedule gives i, on every rank, without any communication. The policy changes only
 * here: before the first begin it is iteration 0's; after an end it stays until the next begin.
 * Each ended iteration is one row of the rank's iteration record in AAR_OUTPUT_DIR (the first
 * 100,000 of them; see README, "A/B experiments"); one still in progress at exit has no row and is
 * not counted in the summary record's ab.iterations (rank 0 says so on stderr). Calls made after libaar.so's exit handler ran
 * (by another thread while the process exits, from an atexit handler registered before the
 * library's first call, or a destructor) return as always, but the records are written by then:
 * iterations they end (or that end while the exit handler runs and find it counting already)
 * have no row and are not counted in the summary record's ab.iterations (one
 * message on stderr, once per process, says so): end the last iteration before exit (before
 * MPI_Finalize in an MPI program). The exit handler waits at most 200 ms for the iteration record:
 * held longer by another thread (inside fork(), writing rows to a slow file system), the rows
 * still buffered are not written, and the summary record counts them (ab.rows_unwritten_at_exit),
 * which aar report names as the cause of the missing rows. Begin and end are refused
 * (AAR_EINVAL) when AAR_AB_BOUNDARY names an MPI function, which then marks iterations; labels
 * work with both. A fork child starts in the iteration in progress at the fork; there begin and
 * end switch the policy (AAR_AB) and labels are accepted (AAR_OK), but no rows are written.
 * They wait at most 100 ms for the iteration record, which another thread may hold longer (one
 * inside fork(), until the fork is done; one writing rows to a slow file system): begin and end
 * then still begin and end iterations (index and policy change, AAR_OK), but those iterations
 * have no row; they count in the summary record's ab.iterations, and one message on stderr (once
 * per process) says so. */

/* Begin the next iteration (0, 1, 2, ...), ending the one in progress first, if any. Threads that
 * begin iterations at once each take the next index in the order their iterations begin.
 * Refused while libaar.so is still starting (AAR_EINVAL, see there), it begins no iteration (no
 * policy change, no row) but still takes the index it would have had, so that the next begin gets
 * the index it gets on the ranks that started sooner and every rank's iteration i is the same
 * work. The summary record's ab.iterations counts it, and its ab.refused_begins counts it by
 * cause ("inside_start_up": called from inside the start-up; "start_up_elsewhere": while another
 * thread was starting libaar.so), which aar report names for a rank whose rows begin later; one
 * message on stderr (once per process) says so. Do not call it again for that iteration. An end
 * or a label refused so takes nothing. */
int aar_iteration_begin(void);

/* End the iteration in progress; AAR_EINVAL when none is. */
int aar_iteration_end(void);

/* Label the iteration in progress, or the next one when none is (e.g. "isolated", "congested"):
 * 1 to 64 characters from A-Z a-z 0-9 - _ . : + / = @; anything else, or NULL, is AAR_EINVAL (the
 * first such label of the process is said on stderr). A later label of the same iteration replaces
 * an earlier one. AAR_EINVAL too, the label not set, when the iteration record stays held by
 * another thread (see above). */
int aar_iteration_label(const char *label);

/* The index of the iteration in progress, or -1 when none is (before the first, after an end). */
int64_t aar_iteration_index(void);

/* The library's version, e.g. "0.1.0". A static string. */
const char *aar_version(void);

#ifdef __cplusplus
}
#endif

#endif /* AAR_H */
