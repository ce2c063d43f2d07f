/*
 * parse_size.h: the one reader of a size or count given on the command line, written once for the
 * two kinds of examples that take them: ab_exchange.c beside this file (--iters, --bytes) and
 * ../ugni_pair.h (every number option of the one-process examples). Only libc, so that either
 * builds from its own folder as before.
 *
 * A value is decimal or 0x hexadecimal, with an optional K or M suffix (KiB, MiB: times 1024 or
 * 1048576): "4096", "0x10K", "16M", with nothing before its first digit (no blank, no sign). Its
 * range is each program's to check.
 */
#ifndef PARSE_SIZE_H
#define PARSE_SIZE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The number `s` into *out; -1 if it is none (empty, or text after it), does not start with a
 * digit (strtoull skips leading blanks and takes a sign: " 64" and "+64" were read as 64, and
 * " -5" wrapped to 2^64 - 5), or does not fit in 64 bits once multiplied (a shift would wrap it
 * to a small number: 17592186044417M to 1M). */
static inline int parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		return -1;
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	if (*end != '\0' || v > UINT64_MAX >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

#endif /* PARSE_SIZE_H */
