/*
 * aar_weak.h: the C API of libaar.so (cabi/aar.h) with every function declared weak, as aar.h
 * advises, so that a test program also runs without the library (each function is then NULL).
 */
#ifndef AAR_TEST_WEAK_H
#define AAR_TEST_WEAK_H

#include "aar.h"

#pragma weak aar_set_mode
#pragma weak aar_set_mode_name
#pragma weak aar_set_auto
#pragma weak aar_disable
#pragma weak aar_enable
#pragma weak aar_policy_name
#pragma weak aar_iteration_begin
#pragma weak aar_iteration_end
#pragma weak aar_iteration_label
#pragma weak aar_iteration_index
#pragma weak aar_version

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The test drivers' "api WHAT [ARG]" command: mode DLVR, name NAME, auto, disable or enable through
 * the C API, printing "api WHAT rc=RC" ("unavailable" without libaar.so). Returns how many
 * arguments after WHAT it used. */
static inline int api_command(const char *what, const char *arg)
{
	int takes_arg = !strcmp(what, "mode") || !strcmp(what, "name");
	int rc = -100;
	if (!aar_set_mode)
		printf("api %s unavailable\n", what);
	else if (!strcmp(what, "mode"))
		rc = aar_set_mode((uint16_t)strtoull(arg, NULL, 0));
	else if (!strcmp(what, "name"))
		rc = aar_set_mode_name(arg);
	else if (!strcmp(what, "auto"))
		rc = aar_set_auto();
	else if (!strcmp(what, "disable"))
		rc = aar_disable();
	else if (!strcmp(what, "enable"))
		rc = aar_enable();
	if (aar_set_mode)
		printf("api %s rc=%d\n", what, rc);
	return takes_arg;
}

/* Their "iter WHAT [ARG]" command: begin, end, label NAME or index, printing the return code (or the
 * index). Returns how many arguments after WHAT it used. */
static inline int iter_command(const char *what, const char *arg)
{
	int takes_arg = !strcmp(what, "label");
	if (!aar_iteration_begin)
		printf("iter %s unavailable\n", what);
	else if (!strcmp(what, "begin"))
		printf("iter begin rc=%d\n", aar_iteration_begin());
	else if (!strcmp(what, "end"))
		printf("iter end rc=%d\n", aar_iteration_end());
	else if (!strcmp(what, "label"))
		printf("iter label rc=%d\n", aar_iteration_label(arg));
	else if (!strcmp(what, "index"))
		printf("iter index=%lld\n", (long long)aar_iteration_index());
	return takes_arg;
}

#endif
