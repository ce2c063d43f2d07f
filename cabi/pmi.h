/* pmi.h: PMI-1 (as MPICH declares it) with Cray's extensions, for aar's libpmi.so.0.
 * Programs find their job through it: rank, size, a barrier, a key-value space (KVS), and
 * Cray's PMI_Allgather, clique and NID calls. libpmi.so.0 speaks the simple PMI-1 wire protocol on the
 * socket in PMI_FD, so it works under `aar run` and under MPICH's mpiexec.hydra.
 * Build with: cc prog.c $(pkg-config --cflags --libs cray-pmi)
 */
#ifndef PMI_H_INCLUDED
#define PMI_H_INCLUDED

#ifdef __cplusplus
extern "C" {
#endif

#define PMI_SUCCESS                  0
#define PMI_FAIL                    -1
#define PMI_ERR_INIT                 1
#define PMI_ERR_NOMEM                2
#define PMI_ERR_INVALID_ARG          3
#define PMI_ERR_INVALID_KEY          4
#define PMI_ERR_INVALID_KEY_LENGTH   5
#define PMI_ERR_INVALID_VAL          6
#define PMI_ERR_INVALID_VAL_LENGTH   7
#define PMI_ERR_INVALID_LENGTH       8
#define PMI_ERR_INVALID_NUM_ARGS     9
#define PMI_ERR_INVALID_ARGS        10
#define PMI_ERR_INVALID_NUM_PARSED  11
#define PMI_ERR_INVALID_KEYVALP     12
#define PMI_ERR_INVALID_SIZE        13

typedef int PMI_BOOL;
#define PMI_TRUE  1
#define PMI_FALSE 0

/* Connects to the launcher (PMI_FD, PMI_RANK, PMI_SIZE); *spawned is always PMI_FALSE. */
int PMI_Init(int *spawned);
int PMI_Initialized(PMI_BOOL *initialized);
int PMI_Finalize(void);
int PMI_Get_size(int *size);
int PMI_Get_rank(int *rank);
int PMI_Get_universe_size(int *size);
int PMI_Get_appnum(int *appnum);
/* All ranks meet; KVS puts made before it are visible to every rank after it. */
int PMI_Barrier(void);
/* Ends the whole job with exit_code; error_msg goes to stderr. Does not return. Also before
   PMI_Init: the launcher is told on PMI_FD (after PMI_Finalize it cannot be: the exit status says it). */
int PMI_Abort(int exit_code, const char error_msg[]);

int PMI_KVS_Get_my_name(char kvsname[], int length);
int PMI_KVS_Get_name_length_max(int *length);
int PMI_KVS_Get_key_length_max(int *length);
int PMI_KVS_Get_value_length_max(int *length);
/* Keys and values may hold no space and no newline (the wire protocol has no escapes). */
int PMI_KVS_Put(const char kvsname[], const char key[], const char value[]);
int PMI_KVS_Commit(const char kvsname[]);
int PMI_KVS_Get(const char kvsname[], const char key[], char value[], int length);

/* Cray: every rank's len bytes of in, in rank order, into out (len * size bytes). Collective. */
int PMI_Allgather(void *in, void *out, int len);
/* Cray: the ranks on this rank's node (from PMI_process_mapping), in rank order. */
int PMI_Get_clique_size(int *size);
int PMI_Get_clique_ranks(int ranks[], int length);
/* Cray: the NID of rank's node. Under aar run a node's NID is the NIC address its ranks get in
 * PMI_GNI_LOC_ADDR. */
int PMI_Get_nid(int rank, int *nid);

#ifdef __cplusplus
}
#endif

#endif /* PMI_H_INCLUDED */
