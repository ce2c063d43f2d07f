/*
 * seccomp_errno: runs a program under a seccomp filter that makes the named system calls fail
 * with an errno and allows every other one, as a container's filter that does not list a newer
 * call would (Docker's before 20.10 answered faccessat2(2) with EPERM, not ENOSYS).
 *
 * Usage: seccomp_errno SYSCALL_NUMBER[,SYSCALL_NUMBER...] ERRNO PROGRAM [ARGS...]
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define MAX_CALLS 16

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: seccomp_errno SYSCALL_NUMBER[,...] ERRNO PROGRAM [ARGS...]\n");
		return 2;
	}
	struct sock_filter f[2 * MAX_CALLS + 2];
	unsigned n = 0, calls = 0;
	unsigned err = (unsigned)strtoul(argv[2], NULL, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (char *s = strtok(argv[1], ","); s; s = strtok(NULL, ",")) {
		if (++calls > MAX_CALLS) {
			fprintf(stderr, "seccomp_errno: at most %d system calls\n", MAX_CALLS);
			return 2;
		}
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)strtoul(s, NULL, 0), 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog program = {(unsigned short)n, f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program)) {
		perror("seccomp_errno: installing the filter");
		return 2;
	}
	execvp(argv[3], argv + 3);
	perror("seccomp_errno: exec");
	return 2;
}
