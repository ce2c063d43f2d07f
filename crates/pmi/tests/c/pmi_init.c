/* PMI_Init in a process that was not started by a PMI launcher, whose environment says
 * otherwise: prints PMI_Init's code and whether the descriptor PMI_FD names is still open
 * afterwards, on stdout (which PMI_FD may name). */
#include <fcntl.h>
#include <pmi.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *env = getenv("PMI_FD");
    int fd = env ? atoi(env) : -1;
    int spawned = -1;
    int rc = PMI_Init(&spawned);
    printf("rc=%d fd%d_open=%d\n", rc, fd, fd >= 0 && fcntl(fd, F_GETFD) >= 0);
    return fflush(stdout) == 0 ? 0 : 3;
}
