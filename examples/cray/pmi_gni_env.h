/*
 * pmi_gni_env.h: the reading of the PMI_GNI_* variables a Cray job launcher (aprun, srun; aar run
 * off-Cray) gives each rank, written once for the two kinds of examples that read them:
 * cray_util.h (the multi-rank examples beside this file, which need them) and ../ugni_pair.h (the
 * one-process examples, which use the job's ptag, cookie and NIC device when they run inside a
 * job). Only libc, so that either builds from its own folder as before.
 *
 * A value is one number per protection domain of the job, decimal or 0x hexadecimal, separated by
 * ':' ("219" or "219:220"), the n-th PMI_GNI_PTAG going with the n-th PMI_GNI_COOKIE (docs/abi.md
 * 1.8, read from Cray's uGNI examples). The first one is taken. Which ptags a launcher hands out
 * (beyond fitting in GNI_CdmCreate's uint8_t) is not checked: nothing here says.
 */
#ifndef PMI_GNI_ENV_H
#define PMI_GNI_ENV_H

#include <errno.h>
#include <stdlib.h>

/* What pmi_gni_env() found. */
enum pmi_gni_env_status {
	PMI_GNI_ENV_OK,           /* *value is the first number of the variable */
	PMI_GNI_ENV_UNSET,        /* the variable is not set */
	PMI_GNI_ENV_NOT_A_NUMBER, /* its first item is not a number */
	PMI_GNI_ENV_TOO_LARGE,    /* its first number is above `max` */
};

/* The first value of the PMI_GNI_* variable `name` (its text in *text when set), at most `max`:
 * checked, not cast to its type's width (a ptag of 493 was taken as 237). */
static inline enum pmi_gni_env_status pmi_gni_env(const char *name, unsigned long max, unsigned long *value,
						  const char **text)
{
	const char *s = getenv(name);
	*text = s;
	if (s == NULL)
		return PMI_GNI_ENV_UNSET;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno != 0 || end == s || (*end != '\0' && *end != ':'))
		return PMI_GNI_ENV_NOT_A_NUMBER;
	if (v > max)
		return PMI_GNI_ENV_TOO_LARGE;
	*value = v;
	return PMI_GNI_ENV_OK;
}

#endif /* PMI_GNI_ENV_H */
