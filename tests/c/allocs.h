/*
 * allocs.h: an allocator that counts the allocations the program (and every library in it, libaar.so
 * included) makes while counting is armed, for the tests that the library's common path allocates
 * nothing. Define ALLOC_HOOK() before including it to run something on every allocation too.
 *
 *   count_armed = 1;  ... the calls under test ...  count_armed = 0;  read `allocations`
 */
#ifndef AAR_TEST_ALLOCS_H
#define AAR_TEST_ALLOCS_H

#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static volatile int count_armed;
static unsigned long long allocations;

#ifndef ALLOC_HOOK
#define ALLOC_HOOK()
#endif

static void counted(void)
{
	if (count_armed)
		__atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
	ALLOC_HOOK();
}
void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { counted(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }

#endif
