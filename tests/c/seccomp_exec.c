/*
 * seccomp_exec: runs a program under a seccomp filter that kills the process on membarrier(2)
 * and allows every other system call, as a container's filter that does not list membarrier
 * would. For tests/robustness.rs: libaar.so must never make the call there.
 *
 * Usage: seccomp_exec PROGRAM [ARGS...]
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: seccomp_exec PROGRAM [ARGS...]\n");
		return 2;
	}
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program)) {
		perror("seccomp_exec: installing the filter");
		return 2;
	}
	execvp(argv[1], argv + 1);
	perror("seccomp_exec: exec");
	return 2;
}
