/*
 * link_lost_reply: preloaded after libaar.so, link(2) and linkat(2) make the link, then fail
 * with EEXIST, as over NFS when the reply to a LINK is lost and the request sent again finds the
 * name it made taken (the server's cache of replies no longer held it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)
{
	static int (*real)(int, const char *, int, const char *, int);

	if (!real)
		real = (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
	if (real(olddirfd, oldpath, newdirfd, newpath, flags) != 0)
		return -1;
	errno = EEXIST;
	return -1;
}

int link(const char *oldpath, const char *newpath)
{
	return linkat(AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}
