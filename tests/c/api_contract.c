/*
 * api_contract: what the comments of aar.h promise, function by function, checked by the program
 * itself: each call's return code (AAR_OK, AAR_EINVAL, AAR_EDISABLED) and what aar_policy_name()
 * and aar_iteration_index() say after it. One case per run:
 *
 *   api_contract disabled  (AAR_DISABLE=1) every call with a good argument is AAR_EDISABLED, a bad
 *                          argument still AAR_EINVAL; the policy is "disabled", no iteration is
 *                          ever in progress
 *   api_contract calls     (no AAR_AB) the first call that starts the library is an end with no
 *                          iteration (AAR_EINVAL), and with no counters (no NIC attached) the policy is
 *                          the fixed low-latency mode; every adaptive mode pins, every other value is refused and
 *                          changes nothing; each name AAR_MODE takes, in any case, pins its policy,
 *                          anything else (non-UTF-8 included) is refused and changes nothing; a
 *                          pause keeps the policy, changed while paused, for the resume; a
 *                          policy name stays readable after the policy changes; begin, a nested
 *                          begin (ending the first), end, a second end (AAR_EINVAL); labels of
 *                          64 characters and of every character of the label set, labels that
 *                          are not UTF-8 or hold a tab (AAR_EINVAL). Prints "version V"
 *   api_contract ab        (AAR_AB=ADAPTIVE1,ADAPTIVE2, round-robin) the policy calls are refused
 *                          and change nothing, a bad argument is AAR_EINVAL; a pause holds across
 *                          two boundaries; resumed, the policy is the schedule's for the iteration
 *                          in progress, and it stays after an end; iteration 3 is left in
 *                          progress at exit
 *   api_contract fork      (AAR_AB as for ab) iterations 0 and 1 begun, then a fork: the child
 *                          sees iteration 1 in progress, begins 2 and 3 (each switching to its
 *                          scheduled policy), labels, ends, and exits through exit(); the parent
 *                          then ends 1 and runs 2 and 3 itself
 *
 * Each failed check prints "FAIL line N: ..."; the last line is "ok N checks" (exit 0) or
 * "failed F of N checks" (exit 1). Nothing else is printed but "version V" (calls): whatever
 * else stdout holds was written by libaar.so, which aar.h says never happens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aar.h"

static int checks, failures;

#define EXPECT_RC(call, want)                                                                                  \
	do {                                                                                                   \
		long long got_ = (long long)(call);                                                            \
		checks++;                                                                                      \
		if (got_ != (long long)(want)) {                                                               \
			failures++;                                                                            \
			printf("FAIL line %d: %s = %lld, not %s\n", __LINE__, #call, got_, #want);             \
		}                                                                                              \
	} while (0)

#define EXPECT_POLICY(want)                                                                                    \
	do {                                                                                                   \
		const char *got_ = aar_policy_name();                                                          \
		checks++;                                                                                      \
		if (!got_ || strcmp(got_, (want))) {                                                           \
			failures++;                                                                            \
			printf("FAIL line %d: aar_policy_name() = %s, not %s\n", __LINE__,                     \
			       got_ ? got_ : "(null)", (want));                                                \
		}                                                                                              \
	} while (0)

/* Round-robin over ADAPTIVE1,ADAPTIVE2: iteration i's policy. */
static const char *scheduled(long long i)
{
	return i % 2 ? "ADAPTIVE2" : "ADAPTIVE1";
}

static int finish(void)
{
	if (failures) {
		printf("failed %d of %d checks\n", failures, checks);
		return 1;
	}
	printf("ok %d checks\n", checks);
	return 0;
}

static void disabled(void)
{
	EXPECT_RC(aar_iteration_index(), -1);
	EXPECT_RC(aar_set_mode(0x20), AAR_EDISABLED);
	EXPECT_RC(aar_set_mode_name("auto"), AAR_EDISABLED);
	EXPECT_RC(aar_set_auto(), AAR_EDISABLED);
	EXPECT_RC(aar_disable(), AAR_EDISABLED);
	EXPECT_RC(aar_enable(), AAR_EDISABLED);
	EXPECT_RC(aar_iteration_label("ok"), AAR_EDISABLED);
	EXPECT_RC(aar_iteration_begin(), AAR_EDISABLED);
	EXPECT_RC(aar_iteration_index(), -1);
	EXPECT_RC(aar_iteration_end(), AAR_EDISABLED);
	EXPECT_RC(aar_iteration_end(), AAR_EDISABLED);
	/* A bad argument is AAR_EINVAL whatever the state. */
	EXPECT_RC(aar_set_mode(0x03), AAR_EINVAL);
	EXPECT_RC(aar_set_mode_name("ADAPTIVE4"), AAR_EINVAL);
	EXPECT_RC(aar_iteration_label("a b"), AAR_EINVAL);
	EXPECT_POLICY("disabled");
}

static void calls(void)
{
	static const unsigned short adaptive[] = {0x00, 0x20, 0x40, 0x80};
	static const char *const adaptive_names[] = {"ADAPTIVE0", "ADAPTIVE1", "ADAPTIVE2", "ADAPTIVE3"};
	/* Non-adaptive modes (NO_ADAPT, NO_HASH, IN_ORDER, NO_RADAPT, NMIN_HASH, MIN_HASH), two adaptive
	 * bits at once, ORDERED_TAIL alone and with a mode, bits above the routing byte. */
	static const unsigned short refused[] = {0x01, 0x02, 0x03, 0x04, 0x08, 0x10, 0x60, 0xa0, 0xc0, 0xe0,
						 0x100, 0x180, 0x8000, 0xffff};
	static const char *const names[][2] = {
		{"paper", "auto"},         {"observe", "off"},          {"AUTO", "auto"},
		{"Steady", "steady"},      {"OFF", "off"},              {"adaptive_2", "ADAPTIVE2"},
		{"Adaptive0", "ADAPTIVE0"}, {"gni_dlvmode_adaptive1", "ADAPTIVE1"},
	};
	static const char *const bad_names[] = {"",        "paused",       "disabled",        "starting",
						"IN_ORDER", "ADAPTIVE4",   "ADAPTIVE3\xff", "\xc3\xa9teint"};
	size_t k;

	/* The process's first calls of the library (an index, which does not start it, then an end,
	 * which does): no iteration in progress, none to end. */
	EXPECT_RC(aar_iteration_index(), -1);
	EXPECT_RC(aar_iteration_end(), AAR_EINVAL);
	/* No NIC is attached, so no counters: the fixed low-latency mode (see aar_set_auto). */
	EXPECT_POLICY("ADAPTIVE3");

	for (k = 0; k < sizeof adaptive / sizeof *adaptive; k++) {
		EXPECT_RC(aar_set_mode(adaptive[k]), AAR_OK);
		EXPECT_POLICY(adaptive_names[k]);
	}
	for (k = 0; k < sizeof refused / sizeof *refused; k++) {
		EXPECT_RC(aar_set_mode(refused[k]), AAR_EINVAL);
		EXPECT_POLICY("ADAPTIVE3");
	}
	for (k = 0; k < sizeof names / sizeof *names; k++) {
		EXPECT_RC(aar_set_mode_name(names[k][0]), AAR_OK);
		EXPECT_POLICY(names[k][1]);
	}
	for (k = 0; k < sizeof bad_names / sizeof *bad_names; k++) {
		EXPECT_RC(aar_set_mode_name(bad_names[k]), AAR_EINVAL);
		EXPECT_POLICY("ADAPTIVE1");
	}
	/* Accepted without the counters too. */
	EXPECT_RC(aar_set_auto(), AAR_OK);
	EXPECT_POLICY("auto");

	/* A pause keeps the policy, changed while paused too, for the resume. */
	EXPECT_RC(aar_disable(), AAR_OK);
	EXPECT_POLICY("paused");
	EXPECT_RC(aar_disable(), AAR_OK);
	EXPECT_RC(aar_set_mode(0x40), AAR_OK);
	EXPECT_POLICY("paused");
	EXPECT_RC(aar_set_mode_name("steady"), AAR_OK);
	EXPECT_POLICY("paused");
	EXPECT_RC(aar_enable(), AAR_OK);
	EXPECT_POLICY("steady");
	EXPECT_RC(aar_enable(), AAR_OK);
	EXPECT_POLICY("steady");

	/* A static string: still "steady" after the policy changed. */
	const char *name = aar_policy_name();
	EXPECT_RC(aar_set_auto(), AAR_OK);
	checks++;
	if (strcmp(name, "steady")) {
		failures++;
		printf("FAIL line %d: an earlier aar_policy_name() now reads %s\n", __LINE__, name);
	}

	/* Iterations: 0 (labelled before it began), 1 (begun while 0 was in progress), 2. */
	char longest[65];
	memset(longest, 'x', 64);
	longest[64] = 0;
	EXPECT_RC(aar_iteration_label("ABZabz09-_.:+/=@"), AAR_OK);
	EXPECT_RC(aar_iteration_label(longest), AAR_OK);
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_RC(aar_iteration_index(), 0);
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_RC(aar_iteration_index(), 1);
	EXPECT_RC(aar_iteration_label("ABZabz09-_.:+/=@"), AAR_OK);
	EXPECT_RC(aar_iteration_label("caf\xc3\xa9"), AAR_EINVAL);
	EXPECT_RC(aar_iteration_label("\xff"), AAR_EINVAL);
	EXPECT_RC(aar_iteration_label("a\tb"), AAR_EINVAL);
	EXPECT_RC(aar_iteration_end(), AAR_OK);
	EXPECT_RC(aar_iteration_index(), -1);
	EXPECT_RC(aar_iteration_end(), AAR_EINVAL);
	EXPECT_RC(aar_iteration_index(), -1);
	EXPECT_RC(aar_iteration_label("next"), AAR_OK);
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_RC(aar_iteration_index(), 2);
	EXPECT_RC(aar_iteration_end(), AAR_OK);
	EXPECT_POLICY("auto");
	printf("version %s\n", aar_version());
}

static void ab(void)
{
	EXPECT_POLICY(scheduled(0));
	EXPECT_RC(aar_set_mode(0x80), AAR_EINVAL);
	EXPECT_RC(aar_set_mode_name("auto"), AAR_EINVAL);
	EXPECT_RC(aar_set_auto(), AAR_EINVAL);
	EXPECT_RC(aar_set_mode(0x81), AAR_EINVAL);
	EXPECT_POLICY(scheduled(0));

	/* A pause holds across boundaries; resumed, the iteration's scheduled policy is in force. */
	EXPECT_RC(aar_disable(), AAR_OK);
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_POLICY("paused");
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_RC(aar_iteration_index(), 1);
	EXPECT_POLICY("paused");
	EXPECT_RC(aar_enable(), AAR_OK);
	EXPECT_POLICY(scheduled(1));
	EXPECT_RC(aar_iteration_end(), AAR_OK);
	EXPECT_POLICY(scheduled(1));
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_POLICY(scheduled(2));
	EXPECT_RC(aar_set_mode(0x20), AAR_EINVAL);
	EXPECT_POLICY(scheduled(2));
	EXPECT_RC(aar_iteration_end(), AAR_OK);
	/* Left in progress at exit: no row. */
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_RC(aar_iteration_index(), 3);
}

/* Iterations 2 and 3, each under its scheduled policy. */
static void two_more(void)
{
	for (long long i = 2; i < 4; i++) {
		EXPECT_RC(aar_iteration_begin(), AAR_OK);
		EXPECT_RC(aar_iteration_index(), i);
		EXPECT_POLICY(scheduled(i));
	}
}

static void forked(void)
{
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	EXPECT_RC(aar_iteration_begin(), AAR_OK);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		EXPECT_RC(aar_iteration_index(), 1);
		EXPECT_POLICY(scheduled(1));
		two_more();
		EXPECT_RC(aar_iteration_label("child"), AAR_OK);
		EXPECT_RC(aar_iteration_end(), AAR_OK);
		EXPECT_RC(aar_iteration_index(), -1);
		EXPECT_RC(aar_iteration_end(), AAR_EINVAL);
		printf("child ");
		exit(finish());
	}
	int status = -1;
	checks++;
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
		failures++;
		printf("FAIL line %d: the child failed (status %d)\n", __LINE__, status);
	}
	EXPECT_RC(aar_iteration_index(), 1);
	EXPECT_POLICY(scheduled(1));
	EXPECT_RC(aar_iteration_end(), AAR_OK);
	two_more();
	EXPECT_RC(aar_iteration_end(), AAR_OK);
}

int main(int argc, char **argv)
{
	const char *mode = argc == 2 ? argv[1] : "";
	if (!strcmp(mode, "disabled"))
		disabled();
	else if (!strcmp(mode, "calls"))
		calls();
	else if (!strcmp(mode, "ab"))
		ab();
	else if (!strcmp(mode, "fork"))
		forked();
	else {
		fprintf(stderr, "usage: api_contract disabled|calls|ab|fork\n");
		return 2;
	}
	return finish();
}
