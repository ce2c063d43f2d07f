/*
 * seccomp_exec: runs a program under a seccomp filter that kills the process on membarrier(2)
 * and allows every other system call, as a container's filter that does not list membarrier
 * would. For tests/robustness.rs: libaar.so must never make the call there.
 * With --no-links, link(2) and linkat(2) fail with EPERM instead, as on a file system without
 * hard links (vfat, DAOS's dfuse), and membarrier is allowed.
 *
 * Usage: seccomp_exec [--no-links] PROGRAM [ARGS...]
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int no_links = argc > 1 && !strcmp(argv[1], "--no-links");
	argv += no_links;
	argc -= no_links;
	if (argc < 2) {
		fprintf(stderr, "usage: seccomp_exec [--no-links] PROGRAM [ARGS...]\n");
		return 2;
	}
	struct sock_filter kill_membarrier[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter refuse_links[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_link, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_linkat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = {sizeof kill_membarrier / sizeof kill_membarrier[0], kill_membarrier};
	if (no_links)
		program = (struct sock_fprog){sizeof refuse_links / sizeof refuse_links[0], refuse_links};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program)) {
		perror("seccomp_exec: installing the filter");
		return 2;
	}
	execvp(argv[1], argv + 1);
	perror("seccomp_exec: exec");
	return 2;
}
