/*
 * dlopen_host: runs a program built as a shared library the way Python runs an extension module
 * (mpi4py's MPI module, say): dlopen() with RTLD_LOCAL, so the library and what it links (an MPI
 * library, libugni) are not in the loader's global scope, and dlsym(RTLD_NEXT) from a preloaded
 * library does not find them.
 *
 *   dlopen_host LIBRARY FUNCTION [ARGS...]   calls int FUNCTION(int argc, char **argv) in LIBRARY
 *                                            with argv[0] = LIBRARY and ARGS; exits with its
 *                                            result
 *   dlopen_host --then-check NAME LIBRARY FUNCTION [ARGS...]
 *                                            the same, then dlclose()s LIBRARY (as a plugin
 *                                            framework closes a plugin it does not use) and
 *                                            prints "NAME still loaded: yes" or "no"
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *check = NULL;
	if (argc > 2 && strcmp(argv[1], "--then-check") == 0) {
		check = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: dlopen_host [--then-check NAME] LIBRARY FUNCTION [ARGS...]\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen_host: %s\n", dlerror());
		return 2;
	}
	int (*function)(int, char **) = (int (*)(int, char **))dlsym(lib, argv[2]);
	if (!function) {
		fprintf(stderr, "dlopen_host: %s\n", dlerror());
		return 2;
	}
	argv[2] = argv[1];
	int rc = function(argc - 2, argv + 2);
	if (check) {
		dlclose(lib);
		void *still = dlopen(check, RTLD_LAZY | RTLD_NOLOAD);
		printf("%s still loaded: %s\n", check, still ? "yes" : "no");
		if (still)
			dlclose(still);
	}
	return rc;
}
