/*
 * dlopen_host: runs a program built as a shared library the way Python runs an extension module
 * (mpi4py's MPI module, say): dlopen() with RTLD_LOCAL, so the library and what it links (an MPI
 * library, libugni) are not in the loader's global scope, and dlsym(RTLD_NEXT) from a preloaded
 * library does not find them.
 *
 *   dlopen_host LIBRARY FUNCTION [ARGS...]   calls int FUNCTION(int argc, char **argv) in LIBRARY
 *                                            with argv[0] = LIBRARY and ARGS; exits with its
 *                                            result
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: dlopen_host LIBRARY FUNCTION [ARGS...]\n");
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
	return function(argc - 2, argv + 2);
}
