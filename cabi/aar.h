/*
 * aar.h — the C API of libaar.so (application-aware routing for Cray Aries jobs).
 *
 * libaar.so is normally used without any code change: LD_PRELOAD=libaar.so (or `module load aar`)
 * routes every adaptive uGNI post automatically. These calls let an application steer routing
 * for a phase or a code region. Link with -laar before -lugni, or keep using LD_PRELOAD and
 * declare these functions weak so the program also runs without the library:
 *
 *     #pragma weak aar_set_mode
 *     if (aar_set_mode) aar_set_mode(GNI_DLVMODE_ADAPTIVE3);
 *
 * Every function is thread-safe, never blocks a sending thread and takes effect for the posts
 * that start after it returns. None of them write to stdout.
 */
#ifndef AAR_H
#define AAR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define AAR_OK         0   /* done */
#define AAR_EINVAL    -1   /* the argument is not an adaptive routing mode (or a known name) */
#define AAR_EDISABLED -2   /* AAR_DISABLE is set: the library stays inert for this process */

/* Pin every adaptive message (posts and SMSG) to one routing mode: GNI_DLVMODE_ADAPTIVE0 (0x00),
 * ADAPTIVE1 (0x20), ADAPTIVE2 (0x40) or ADAPTIVE3 (0x80). Any other value, including the
 * non-adaptive modes and flag bits, returns AAR_EINVAL. Posts whose caller asked for a
 * non-adaptive mode (IN_ORDER, MIN_HASH, NMIN_HASH) are never changed, pinned or not. */
int aar_set_mode(uint16_t dlvr_mode);

/* The same by name: "ADAPTIVE3" or "ADAPTIVE_3" (any case), or "auto", or "off" (count and read
 * counters, but leave every descriptor as the caller wrote it). */
int aar_set_mode_name(const char *name);

/* Back to automatic routing: NIC counters and the cost model choose per message. */
int aar_set_auto(void);

/* Pause the library: every call is forwarded untouched (SMSG modes are given back to what the
 * application set) until aar_enable(). The routing policy is kept for when it resumes. */
int aar_disable(void);
int aar_enable(void);

/* The policy now in force: "auto", "off", "ADAPTIVE0".."ADAPTIVE3", "paused", or "disabled"
 * when AAR_DISABLE is set. A static string. */
const char *aar_policy_name(void);

/* The library's version, e.g. "0.1.0". A static string. */
const char *aar_version(void);

#ifdef __cplusplus
}
#endif

#endif /* AAR_H */
