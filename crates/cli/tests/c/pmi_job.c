/* A rank of a PMI job, as uGNI programs use Cray's PMI: rank and size, a barrier, KVS puts and
 * gets across ranks, PMI_Allgather of rank-dependent data (small, and larger than one KVS
 * value), cliques, and the library's answers to bad arguments. Each check that fails says so on
 * stderr; the rank exits 1 if any failed. Several threads also put and get at once (libpmi.so.0
 * serialises them on its one socket).
 *
 *   pmi_job             the checks, then PMI_Finalize; prints one "rank=R ..." line
 *   pmi_job abort R C   the checks, then rank R calls PMI_Abort(C) and waits in it as MPICH's rank
 *                       does (see wait_as_mpich), and the others wait in a barrier
 *   pmi_job early R C   rank R calls PMI_Abort(C) before PMI_Init; the others go on as without arguments
 *   pmi_job segv R      the checks, then rank R dies by SIGSEGV and the others wait in a barrier
 *   pmi_job hang        the checks, then every rank ignores SIGTERM and sleeps (prints "ready")
 *   pmi_job leave R     the checks, then rank R exits 0 and the others wait in a barrier
 *   pmi_job close R     the checks, then rank R closes PMI_FD without PMI_Finalize and waits for a
 *                       signal (prints "closed"); the others wait for a signal (as for R's data
 *                       outside PMI) after printing "waiting rank=R"
 *   pmi_job linger R    the checks, then rank R calls PMI_Finalize (which closes PMI_FD) and waits
 *                       for a signal (prints "finalized"), the others wait in a barrier
 *   pmi_job finalized R C  the checks and PMI_Finalize, then rank R calls PMI_Abort(C) (the
 *                       launcher can no longer be told), the others exit
 *   pmi_job sigpipe R C as abort R C, but the others die of SIGPIPE at the SIGTERM that ends
 *                       the job, as a rank writing to a peer that SIGTERM killed first does
 *   pmi_job alone       what of the checks needs no other rank (no barrier), its own key read
 *                       back, then PMI_Finalize; prints one "alone rank=R ..." line
 *   pmi_job overwrite R the checks, then rank R puts PMI_process_mapping and rank R+1's key (both
 *                       must fail), a barrier, and every rank prints "overwrite rank=R ..." with
 *                       the values it then gets, then PMI_Finalize
 *   pmi_job fill-kvs R  the checks, then rank R puts keys of the longest values until a put fails,
 *                       and one more; a barrier, and every rank prints "fill rank=R ..." with the
 *                       count and whether it still gets PMI_process_mapping, then PMI_Finalize
 *   pmi_job fill-stderr no PMI_Init: writes lines to stderr until the launcher no longer reads it
 *                       (its queue for stderr is full: nobody reads the launcher's), then exits 0
 *   pmi_job launcher-closed  with SIGPIPE's default action (a C program's), sends the launcher a
 *                       line longer than it takes, so that it closes the connection; then PMI_Init,
 *                       whose request meets the closed socket; prints "launcher-closed rc=RC", exits 0
 *                       (SIGTERM ignored: the launcher ends the job at such a line)
 *   pmi_job gone R      the checks, then rank R exits 0 without PMI_Finalize; the others wait for a
 *                       signal (as for R's data outside PMI) after printing "waiting rank=R"
 *   pmi_job unequal R   the checks, then PMI_Allgather of 1022 bytes (rank R: 2000); every rank
 *                       prints "unequal rank=R rc=RC", then PMI_Finalize
 */
#include <errno.h>
#include <fcntl.h>
#include <pmi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "pmi_job: rank %d: check failed: %s: ", rank, #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

enum { THREADS = 4, ROUNDS = 50 };
static int thread_rank, thread_size, thread_phase;
static const char *thread_kvs;

/* Phase 0: puts ROUNDS keys of its own. Phase 1 (after a barrier): reads the keys that the same
 * thread of the next rank put. All threads of a rank do this at once. */
static void *put_or_get(void *arg) {
    long t = (long)arg, bad = 0;
    char key[64], value[64], got[64];
    int owner = thread_phase == 0 ? thread_rank : (thread_rank + 1) % thread_size;
    for (int i = 0; i < ROUNDS; i++) {
        snprintf(key, sizeof key, "t%d-%ld-%d", owner, t, i);
        snprintf(value, sizeof value, "v%ld-%d", t * 1000 + i, owner);
        if (thread_phase == 0)
            bad += PMI_KVS_Put(thread_kvs, key, value) != PMI_SUCCESS;
        else
            bad += PMI_KVS_Get(thread_kvs, key, got, sizeof got) != PMI_SUCCESS || strcmp(got, value) != 0;
    }
    return (void *)bad;
}

static void run_threads(int phase) {
    int rank = thread_rank; /* for CHECK */
    pthread_t threads[THREADS];
    thread_phase = phase;
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, put_or_get, (void *)t);
    for (long t = 0; t < THREADS; t++) {
        void *bad = NULL;
        pthread_join(threads[t], &bad);
        CHECK(bad == NULL, "thread %ld of phase %d: %ld puts or gets failed", t, phase, (long)bad);
    }
}

/* After it told the launcher, MPICH's PMI_Abort reads PMI_FD for an answer that hydra never
 * sends (it kills the ranks); on an answer, or the connection closed, MPICH 4's MPI_Abort returns
 * to the program. libpmi.so.0's PMI_Abort exits at once, so this rank waits so in an atexit
 * handler, and says when the connection closes, or when it got SIGTERM, of which it then dies. */
static char term_line[64];

static void on_term(int sig) {
    if (write(2, term_line, strlen(term_line)) < 0)
        _exit(125);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Dies of SIGPIPE at SIGTERM (mode sigpipe). */
static void on_term_sigpipe(int sig) {
    (void)sig;
    signal(SIGPIPE, SIG_DFL);
    raise(SIGPIPE);
}

static void wait_as_mpich(void) {
    char c;
    const char *fd = getenv("PMI_FD");
    ssize_t n = -1;
    while (fd && ((n = read(atoi(fd), &c, 1)) > 0 || (n < 0 && errno == EINTR)))
        ;
    if (n == 0)
        fprintf(stderr, "pmi_job: rank %s: PMI_FD closed after PMI_Abort\n", getenv("PMI_RANK"));
    else
        perror("pmi_job: reading PMI_FD after PMI_Abort");
    for (;;)
        pause();
}

/* One PMI-1 request on PMI_FD, its answer read whole: aar run answers it in a turn of its loop
 * that then reads this rank's stdout and stderr pipes. */
static int ask_launcher(int fd) {
    static const char ask[] = "cmd=get_maxes\n";
    char c = 0;
    if (write(fd, ask, sizeof ask - 1) != (ssize_t)(sizeof ask - 1))
        return -1;
    while (c != '\n')
        if (read(fd, &c, 1) != 1)
            return -1;
    return 0;
}

/* `fill-stderr`: fill the stderr pipe without blocking, then ask the launcher twice: the turn of
 * its loop that answered the first question, which the second waited for, looked at the pipe; if
 * it still holds as much, that turn did not read it, which aar run does only when its queue for
 * stderr is full (and nothing empties it while nobody reads its stderr). Else again. */
static int fill_stderr(void) {
    const char *pmi_fd = getenv("PMI_FD");
    int flags = fcntl(2, F_GETFL), fd = pmi_fd ? atoi(pmi_fd) : -1;
    static char line[4096]; /* PIPE_BUF: a write takes it whole or not at all */
    memset(line, 'f', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    if (fd < 0 || flags < 0 || fcntl(2, F_SETFL, flags | O_NONBLOCK) < 0)
        return 1;
    for (;;) {
        int before = -1, after = -2;
        while (write(2, line, sizeof line) == (ssize_t)sizeof line)
            ;
        if (errno != EAGAIN || ioctl(2, FIONREAD, &before) < 0 || ask_launcher(fd) < 0 || ask_launcher(fd) < 0 ||
            ioctl(2, FIONREAD, &after) < 0)
            return 1;
        if (after == before)
            break;
    }
    return fcntl(2, F_SETFL, flags) < 0;
}

/* `launcher-closed`: more than the launcher reads without a newline (64 KiB), then its end of
 * PMI_FD read to its close; then PMI_Init, with SIGPIPE's default action, which ends a program. */
static int launcher_closed(void) {
    const char *pmi_fd = getenv("PMI_FD");
    int fd = pmi_fd ? atoi(pmi_fd) : -1, spawned = 0;
    static char junk[70000];
    char c;
    memset(junk, 'x', sizeof junk);
    signal(SIGPIPE, SIG_DFL);
    /* The launcher ends the job at once at such a line: the call on the closed socket is still
     * made, not cut short by the job's SIGTERM. */
    signal(SIGTERM, SIG_IGN);
    if (fd < 0 || write(fd, junk, sizeof junk) != (ssize_t)sizeof junk)
        return 1;
    while (read(fd, &c, 1) > 0)
        ;
    printf("launcher-closed rc=%d\n", PMI_Init(&spawned));
    return 0;
}

int main(int argc, char **argv) {
    int rank = -1, size = 0, spawned = -1, initialized = -1;
    if (argc >= 2 && strcmp(argv[1], "fill-stderr") == 0)
        return fill_stderr();
    if (argc >= 2 && strcmp(argv[1], "launcher-closed") == 0)
        return launcher_closed();
    CHECK(PMI_Initialized(&initialized) == PMI_SUCCESS && initialized == PMI_FALSE, "initialized %d", initialized);
    CHECK(PMI_Get_rank(&rank) == PMI_ERR_INIT, "PMI_Get_rank before PMI_Init");
    if (argc >= 4 && strcmp(argv[1], "early") == 0 && getenv("PMI_RANK") && atoi(getenv("PMI_RANK")) == atoi(argv[2]))
        PMI_Abort(atoi(argv[3]), "pmi_job asked to abort before PMI_Init");
    if (PMI_Init(&spawned) != PMI_SUCCESS) {
        fprintf(stderr, "pmi_job: PMI_Init failed\n");
        return 1;
    }
    CHECK(spawned == PMI_FALSE, "spawned %d", spawned);
    CHECK(PMI_Initialized(&initialized) == PMI_SUCCESS && initialized == PMI_TRUE, "initialized %d", initialized);
    CHECK(PMI_Get_rank(&rank) == PMI_SUCCESS, "rank");
    CHECK(PMI_Get_size(&size) == PMI_SUCCESS && size >= 1, "size %d", size);
    CHECK(rank >= 0 && rank < size, "rank %d of %d", rank, size);
    int universe = 0, appnum = -1;
    /* hydra answers -1 (not set) unless given -usize; aar run answers the job size. */
    CHECK(PMI_Get_universe_size(&universe) == PMI_SUCCESS &&
              (universe == size || (universe == -1 && !getenv("AAR_EMU_JOB_DIR"))),
          "universe %d", universe);
    CHECK(PMI_Get_appnum(&appnum) == PMI_SUCCESS && appnum == 0, "appnum %d", appnum);

    /* Bad arguments: error codes, never a crash. */
    CHECK(PMI_Get_rank(NULL) == PMI_ERR_INVALID_ARG, "PMI_Get_rank(NULL)");
    CHECK(PMI_Get_clique_ranks(NULL, 4) == PMI_ERR_INVALID_ARG, "PMI_Get_clique_ranks(NULL)");
    int no_nid = -1;
    CHECK(PMI_Get_nid(0, NULL) == PMI_ERR_INVALID_ARG, "PMI_Get_nid(0, NULL)");
    CHECK(PMI_Get_nid(size, &no_nid) == PMI_ERR_INVALID_ARG && no_nid == -1, "PMI_Get_nid of rank %d", size);
    CHECK(PMI_Get_nid(-1, &no_nid) == PMI_ERR_INVALID_ARG && no_nid == -1, "PMI_Get_nid of rank -1");

    int name_max = 0, key_max = 0, val_max = 0;
    CHECK(PMI_KVS_Get_name_length_max(&name_max) == PMI_SUCCESS && name_max > 1, "name max %d", name_max);
    CHECK(PMI_KVS_Get_key_length_max(&key_max) == PMI_SUCCESS && key_max > 16, "key max %d", key_max);
    CHECK(PMI_KVS_Get_value_length_max(&val_max) == PMI_SUCCESS && val_max > 16, "value max %d", val_max);
    char *kvs = calloc(name_max + 1, 1);
    CHECK(PMI_KVS_Get_my_name(kvs, 1) == PMI_ERR_INVALID_LENGTH, "a 1-byte KVS name buffer");
    CHECK(PMI_KVS_Get_my_name(kvs, name_max) == PMI_SUCCESS && kvs[0] != 0, "kvs name");

    /* KVS: each rank puts its own key; after a barrier every rank reads every other's. */
    char key[64], value[256], expect[64];
    snprintf(key, sizeof key, "rank-%d", rank);
    snprintf(value, sizeof value, "value-%d-%d", rank, rank * 7 + 1);
    CHECK(PMI_KVS_Put(kvs, key, value) == PMI_SUCCESS, "put %s", key);
    CHECK(PMI_KVS_Put(kvs, "a key", value) == PMI_ERR_INVALID_KEY, "a key with a space");
    CHECK(PMI_KVS_Commit(kvs) == PMI_SUCCESS, "commit");
    if (argc >= 2 && strcmp(argv[1], "alone") == 0) {
        /* All of PMI that needs no other rank (no barrier): its own key back, then finalize. */
        char got[256];
        CHECK(PMI_KVS_Get(kvs, key, got, sizeof got) == PMI_SUCCESS && strcmp(got, value) == 0, "get %s", key);
        CHECK(PMI_Finalize() == PMI_SUCCESS, "finalize");
        printf("alone rank=%d size=%d failures=%d\n", rank, size, failures);
        return failures ? 1 : 0;
    }
    CHECK(PMI_Barrier() == PMI_SUCCESS, "barrier");
    for (int r = 0; r < size; r++) {
        snprintf(key, sizeof key, "rank-%d", r);
        snprintf(expect, sizeof expect, "value-%d-%d", r, r * 7 + 1);
        memset(value, 0, sizeof value);
        CHECK(PMI_KVS_Get(kvs, key, value, sizeof value) == PMI_SUCCESS && strcmp(value, expect) == 0,
              "get %s: \"%s\"", key, value);
    }
    CHECK(PMI_KVS_Get(kvs, "rank-0", value, 3) == PMI_ERR_INVALID_LENGTH, "a 3-byte value buffer");
    CHECK(PMI_KVS_Get(kvs, "no-such-key", value, sizeof value) != PMI_SUCCESS, "a key nobody put");
    /* hydra ends the job at a get of another KVS; aar run refuses it, and the error says why. */
    if (getenv("AAR_EMU_JOB_DIR"))
        CHECK(PMI_KVS_Get("no-such-kvs", "rank-0", value, sizeof value) == PMI_FAIL, "a KVS the job has not");

    /* Threads: concurrent calls, each answered with its own reply. */
    thread_rank = rank;
    thread_size = size;
    thread_kvs = kvs;
    run_threads(0);
    CHECK(PMI_Barrier() == PMI_SUCCESS, "barrier after the threads' puts");
    run_threads(1);

    /* Allgather: two ints per rank, then 3000 bytes per rank (more than one KVS value). */
    int mine[2] = {rank, rank * rank + 5};
    int *all = calloc(2 * (size_t)size, sizeof(int));
    CHECK(PMI_Allgather(mine, all, sizeof mine) == PMI_SUCCESS, "allgather");
    for (int r = 0; r < size; r++)
        CHECK(all[2 * r] == r && all[2 * r + 1] == r * r + 5, "allgather[%d] = %d,%d", r, all[2 * r], all[2 * r + 1]);
    enum { BIG = 3000 };
    unsigned char *big = malloc(BIG), *bigs = malloc((size_t)BIG * size);
    for (int i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i * 31 + rank);
    CHECK(PMI_Allgather(big, bigs, BIG) == PMI_SUCCESS, "big allgather");
    int big_ok = 1;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < BIG; i++)
            big_ok &= bigs[(size_t)r * BIG + i] == (unsigned char)(i * 31 + r);
    CHECK(big_ok, "the big allgather's bytes");

    /* Cliques: printed for the test to compare with the placement it asked for. */
    int clique = 0;
    CHECK(PMI_Get_clique_size(&clique) == PMI_SUCCESS && clique >= 1, "clique size %d", clique);
    int *cranks = calloc((size_t)clique + 1, sizeof(int));
    if (clique > 1)
        CHECK(PMI_Get_clique_ranks(cranks, clique - 1) == PMI_ERR_INVALID_LENGTH, "a too short clique array");
    CHECK(PMI_Get_clique_ranks(cranks, clique) == PMI_SUCCESS, "clique ranks");

    const char *dir = getenv("AAR_EMU_JOB_DIR");
    struct stat st;
    int dir_mode = dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? (int)(st.st_mode & 0777) : -1;
#define ENV(name) (getenv(name) ? getenv(name) : "none")
    printf("rank=%d size=%d clique=", rank, size);
    for (int i = 0; i < clique; i++)
        printf("%s%d", i ? "," : "", cranks[i]);
    printf(" nids=");
    for (int r = 0; r < size; r++) {
        int nid = -1;
        CHECK(PMI_Get_nid(r, &nid) == PMI_SUCCESS, "PMI_Get_nid(%d)", r);
        printf("%s%d", r ? "," : "", nid);
    }
    printf(" jobid=%s ptag=%s cookie=%s dev_id=%s loc_addr=%s jobdir=%s jobdir_mode=%o failures=%d\n", ENV("PMI_JOBID"),
           ENV("PMI_GNI_PTAG"), ENV("PMI_GNI_COOKIE"), ENV("PMI_GNI_DEV_ID"), ENV("PMI_GNI_LOC_ADDR"), ENV("AAR_EMU_JOB_DIR"),
           dir_mode < 0 ? 0 : dir_mode, failures);
    fflush(stdout);

    if (argc >= 3 && strcmp(argv[1], "overwrite") == 0) {
        int puts[2] = {PMI_SUCCESS, PMI_SUCCESS};
        char other[64], mapping[1024] = "", got[256] = "";
        snprintf(other, sizeof other, "rank-%d", (atoi(argv[2]) + 1) % size);
        if (rank == atoi(argv[2])) {
            puts[0] = PMI_KVS_Put(kvs, "PMI_process_mapping", "junk");
            puts[1] = PMI_KVS_Put(kvs, other, "junk");
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS, "barrier after the overwrites");
        CHECK(PMI_KVS_Get(kvs, "PMI_process_mapping", mapping, sizeof mapping) == PMI_SUCCESS, "get the mapping");
        CHECK(PMI_KVS_Get(kvs, other, got, sizeof got) == PMI_SUCCESS, "get %s", other);
        printf("overwrite rank=%d mapping_put=%d other_put=%d mapping=%s %s=%s\n", rank, puts[0], puts[1], mapping, other,
               got);
    }
    if (argc >= 3 && strcmp(argv[1], "fill-kvs") == 0) {
        long puts = 0;
        int again = PMI_SUCCESS;
        char mapping[1024] = "";
        if (rank == atoi(argv[2])) {
            char *big = malloc((size_t)val_max);
            memset(big, 'v', (size_t)val_max - 1);
            big[val_max - 1] = 0;
            /* The bound stops it at 64 MiB; without one, at twice that. */
            for (; puts < (128L << 20) / val_max; puts++) {
                snprintf(key, sizeof key, "fill-%d-%ld", rank, puts);
                if (PMI_KVS_Put(kvs, key, big) != PMI_SUCCESS)
                    break;
            }
            again = PMI_KVS_Put(kvs, "fill-again", big);
            free(big);
        }
        CHECK(PMI_Barrier() == PMI_SUCCESS, "barrier after the puts");
        int got = PMI_KVS_Get(kvs, "PMI_process_mapping", mapping, sizeof mapping);
        printf("fill rank=%d puts=%ld again=%d mapping_get=%d\n", rank, puts, again, got);
    }
    if (argc >= 3 && strcmp(argv[1], "unequal") == 0) {
        size_t n = rank == atoi(argv[2]) ? 2000 : 1022;
        unsigned char *in = calloc(n, 1), *out = calloc(n * (size_t)size, 1);
        printf("unequal rank=%d rc=%d\n", rank, PMI_Allgather(in, out, (int)n));
        fflush(stdout);
        free(in);
        free(out);
    }
    if (argc >= 3 && strcmp(argv[1], "gone") == 0) {
        if (rank == atoi(argv[2]))
            return 0;
        printf("waiting rank=%d\n", rank);
        fflush(stdout);
        for (;;)
            pause();
    }
    int sigpipe = argc >= 4 && strcmp(argv[1], "sigpipe") == 0;
    if (sigpipe) {
        /* Before the barrier, so every rank has its handler before rank R can abort. */
        if (rank != atoi(argv[2]))
            signal(SIGTERM, on_term_sigpipe);
        PMI_Barrier();
    }
    if (argc >= 4 && (strcmp(argv[1], "abort") == 0 || sigpipe)) {
        if (rank == atoi(argv[2])) {
            snprintf(term_line, sizeof term_line, "pmi_job: rank %d: got SIGTERM after PMI_Abort\n", rank);
            atexit(wait_as_mpich);
            /* Now, not in wait_as_mpich: the launcher's SIGTERM may come before exit() runs it. */
            signal(SIGTERM, on_term);
            PMI_Abort(atoi(argv[3]), "pmi_job asked to abort");
        }
        PMI_Barrier(); /* never completes: the aborting rank does not enter it */
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "segv") == 0) {
        if (rank == atoi(argv[2]))
            raise(SIGSEGV);
        PMI_Barrier();
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "leave") == 0) {
        if (rank == atoi(argv[2]))
            return 0;
        PMI_Barrier();
        return 0;
    }
    if (argc >= 3 && (strcmp(argv[1], "close") == 0 || strcmp(argv[1], "linger") == 0)) {
        int lingers = strcmp(argv[1], "linger") == 0;
        /* First: the launcher may end the job as soon as PMI_FD is closed. */
        if (rank == atoi(argv[2]))
            printf("%s\n", lingers ? "finalized" : "closed");
        else if (!lingers)
            printf("waiting rank=%d\n", rank);
        fflush(stdout);
        if (rank == atoi(argv[2])) {
            if (lingers)
                CHECK(PMI_Finalize() == PMI_SUCCESS, "finalize");
            else
                close(atoi(getenv("PMI_FD")));
        } else if (lingers) {
            PMI_Barrier(); /* never completes: rank R does not enter it */
        }
        for (;;)
            pause();
    }
    if (argc >= 2 && strcmp(argv[1], "hang") == 0) {
        signal(SIGTERM, SIG_IGN);
        PMI_Barrier();
        printf("ready pid=%d\n", (int)getpid());
        fflush(stdout);
        for (;;)
            pause();
    }
    CHECK(PMI_Finalize() == PMI_SUCCESS, "finalize");
    CHECK(PMI_Initialized(&initialized) == PMI_SUCCESS && initialized == PMI_FALSE, "initialized after finalize");
    CHECK(PMI_Init(&spawned) == PMI_ERR_INIT, "PMI_Init after PMI_Finalize");
    if (argc >= 4 && strcmp(argv[1], "finalized") == 0 && rank == atoi(argv[2]))
        PMI_Abort(atoi(argv[3]), "pmi_job asked to abort after PMI_Finalize");
    return failures ? 1 : 0;
}
