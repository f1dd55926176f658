/* railcoll: collective communication for multi-rail SMP clusters.
 *
 * C API. Every call returns a railcoll_status_t; railcoll_strerror() turns it
 * into text and railcoll_last_error() gives the detailed message of the last
 * failed call on this thread. No call aborts the process on bad input. */
#ifndef RAILCOLL_RAILCOLL_H
#define RAILCOLL_RAILCOLL_H

#include <railcoll/version.h>
#include <stddef.h>

/* The library exports these functions and nothing else (it is built with
 * hidden visibility). */
#if defined(__GNUC__)
#define RAILCOLL_API __attribute__((visibility("default")))
#else
#define RAILCOLL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RAILCOLL_OK = 0,
  RAILCOLL_ERR_ARG = 1,        /* an argument is invalid (null, out of range, unknown name) */
  RAILCOLL_ERR_UNSUPPORTED = 2, /* the algorithm does not take this option or input */
  RAILCOLL_ERR_VERIFY = 3,     /* a schedule failed verification */
  RAILCOLL_ERR_NOMEM = 4,      /* out of memory */
  RAILCOLL_ERR_INTERNAL = 5,   /* a bug in railcoll: please report it */
  RAILCOLL_ERR_TIMEOUT = 6,    /* a deadline passed (RAILCOLL_TIMEOUT, default 60 s) */
  RAILCOLL_ERR_PEER = 7,       /* a peer died, closed its connections or aborted the collective */
  RAILCOLL_ERR_NETWORK = 8,    /* a socket call failed */
  RAILCOLL_ERR_PROTOCOL = 9,   /* a malformed or unexpected message was received */
  RAILCOLL_ERR_MISMATCH = 10,  /* ranks disagree (sizes, algorithm, collective) */
  RAILCOLL_ERR_BOOTSTRAP = 11, /* environment or store problem while creating a communicator */
  RAILCOLL_ERR_BROKEN = 12     /* the communicator failed earlier and cannot be used */
} railcoll_status_t;

/* The library's version, "MAJOR.MINOR.PATCH": RAILCOLL_VERSION_STRING of the
 * header it was built with (a program can compare it with its own). */
RAILCOLL_API const char* railcoll_version(void);
RAILCOLL_API const char* railcoll_strerror(railcoll_status_t status);
/* Detailed message of the last failed call on this thread ("" if none). */
RAILCOLL_API const char* railcoll_last_error(void);

/* ---- communicators and collectives ----
 *
 * A communicator is made from the environment of the launcher that started the
 * process: railcoll's own (`railcoll run`, `railcoll cluster run`: RAILCOLL_RANK,
 * RAILCOLL_SIZE, RAILCOLL_STORE, ...), torchrun (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT), Open MPI (OMPI_COMM_WORLD_*), Hydra (PMI_*), Slurm (SLURM_*); with
 * the last four, RAILCOLL_STORE=host:port must name where rank 0 listens unless
 * MASTER_ADDR/MASTER_PORT do (the host may be a name or an IPv4 address). Rails
 * come from RAILCOLL_RAILS (interfaces, subnets or addresses, comma-separated) or
 * are discovered. Every wait has a deadline: RAILCOLL_TIMEOUT seconds (default
 * 60). A process may make several communicators, also several from the same
 * environment one after another (every rank makes them in the same order).
 *
 * Making one fails on every rank at once, not at the deadline, when one rank
 * cannot take part: the rank with the problem gets its own error, the others
 * RAILCOLL_ERR_BOOTSTRAP naming it. Such problems: a variable that names an
 * unknown collective or algorithm (RAILCOLL_<COLL>_ALGO; RAILCOLL_ALLGATHERV_ALGO
 * is one: all-gatherv is selected as allgather) or a bad tuning file
 * (RAILCOLL_TUNING), both RAILCOLL_ERR_ARG on that rank; a bad RAILCOLL_*
 * setting; a RAILCOLL_JOB_KEY that differs from the other ranks' ("the ranks'
 * RAILCOLL_JOB_KEY differ").
 *
 * Errors in calls. Every rank must make the same collective calls in the same
 * order, with the same sizes, root, type, operator and algorithm. A call that
 * fails on any rank fails the collective on every rank and breaks the
 * communicator everywhere: later calls return RAILCOLL_ERR_BROKEN; destroy it
 * and make a new one. That includes a call one rank rejects before it begins
 * (a NULL buffer, a bad root, type or operator, overlapping buffers, unknown
 * option flags or algorithm, a schedule the nodes' shared memory cannot hold):
 * that rank returns its own error (RAILCOLL_ERR_ARG, RAILCOLL_ERR_UNSUPPORTED)
 * and tells the others, which return RAILCOLL_ERR_PEER naming it from that
 * call, or from their next one if they have not entered it yet, within
 * milliseconds rather than at the deadline.
 *
 * The algorithm of a call comes from its options, else RAILCOLL_<COLL>_ALGO,
 * else the tuning file RAILCOLL_TUNING names, else the default rules
 * (docs/selection.md). When the rules' choice needs more node-shared memory
 * than RAILCOLL_SHM_MIB gives, the next rule's that fits runs instead (rank 0
 * says so once on stderr); an algorithm the call or a variable names is run as
 * named, and fails with RAILCOLL_ERR_UNSUPPORTED if it does not fit. */
typedef struct railcoll_comm* railcoll_comm_t;

#define RAILCOLL_IN_PLACE 1u /* flag: the send block is already at its place in recvbuf */
/* flag of railcoll_scatterv and railcoll_gatherv (all three forms): counts is
 * read at the root alone, as MPI's are; every other rank reads only its own
 * entry, counts[rank]. The root's counts reach the others inside the call, as
 * its first step (a small broadcast; a persistent call's first start only),
 * and a rank whose own count differs from the root's fails the call on every
 * rank (RAILCOLL_ERR_ARG there, RAILCOLL_ERR_PEER elsewhere). */
#define RAILCOLL_ROOT_COUNTS 2u

typedef struct {
  const char* algorithm; /* NULL or "auto": RAILCOLL_<COLL>_ALGO, else RAILCOLL_TUNING, else the defaults */
  unsigned flags;        /* RAILCOLL_IN_PLACE, RAILCOLL_ROOT_COUNTS; any other bit is RAILCOLL_ERR_ARG */
} railcoll_call_opts_t;

RAILCOLL_API railcoll_status_t railcoll_comm_init(railcoll_comm_t* comm);
/* A communicator of explicitly numbered ranks instead of the launcher's: rank
 * in [0, size), the store that rank 0 serves at "host:port" (a free port on one
 * of rank 0's addresses), and a job id every rank of the new communicator passes
 * alike (its store admits only that job).
 * The key, rails, node and timeout still come from the environment. This is how
 * the survivors of a failed communicator carry on: destroy it, agree on the new
 * numbering, store and job id (e.g. rank r -> r minus the dead ranks below it,
 * the old job id with a suffix), and call this on every survivor. Start the
 * job with `railcoll run --grace S` (or your launcher's equivalent) so the
 * launcher does not end the survivors when the first rank fails. */
RAILCOLL_API railcoll_status_t railcoll_comm_init_explicit(railcoll_comm_t* comm, int rank, int size, const char* store,
                                                           const char* job_id);
/* Ends the communicator (every rank calls it). A handle used after it was
 * destroyed (here or in any call) is RAILCOLL_ERR_ARG ("the communicator was
 * destroyed"), never a crash: its few bytes stay allocated for that. */
RAILCOLL_API railcoll_status_t railcoll_comm_destroy(railcoll_comm_t comm);
/* -1 for a NULL or destroyed communicator (railcoll_last_error() says which). */
RAILCOLL_API int railcoll_comm_rank(railcoll_comm_t comm);
RAILCOLL_API int railcoll_comm_size(railcoll_comm_t comm);
RAILCOLL_API int railcoll_comm_nodes(railcoll_comm_t comm);
RAILCOLL_API int railcoll_comm_rails(railcoll_comm_t comm);
/* Rails this rank can use now: a rail whose connection to some peer broke or
 * stalled (its traffic moved to the other rails, logged once on stderr) does
 * not count until it is reconnected. A call fails only when no rail to a peer
 * is left. */
RAILCOLL_API int railcoll_comm_rails_up(railcoll_comm_t comm);
/* The transport between nodes (RAILCOLL_TRANSPORT): "tcp" (railcoll's sockets)
 * or "ofi:<libfabric provider>", e.g. "ofi:tcp;ofi_rxm". Valid until the next
 * call on comm; NULL for a NULL or destroyed communicator. */
RAILCOLL_API const char* railcoll_comm_transport(railcoll_comm_t comm);

/* ---- communicators over the caller's own out-of-band exchange ----
 *
 * For a program or library that already connects its processes (an MPI
 * communicator, a job's key-value store, its own sockets) and wants no
 * RAILCOLL_STORE: railcoll sets the communicator up through an all-gather the
 * caller provides, as UCC's ucc_oob_coll_t and NCCL's unique id do. railcoll's
 * MPI interposition library (docs/mpi.md) makes its communicators this way,
 * over the MPI communicator itself.
 *
 * Every one of the `size` ranks calls railcoll_comm_init_oob at once with its
 * own `rank`. Set-up runs about six all-gathers (rail addresses, nonces, the
 * job id and key checks travel in them); each must be a barrier as well: no
 * rank's all-gather completes before every rank has started it. Any failure on
 * any rank (no rail, a bad RAILCOLL_* setting) makes every rank fail with a
 * message naming it, so no rank is left in an exchange the others abandoned.
 *
 * An all-gather may be blocking (test == NULL: it has finished when allgather
 * returns 0) or, better, non-blocking: allgather starts it and sets *request,
 * then railcoll calls test until it says done, sleeping a little between calls,
 * and gives up after RAILCOLL_TIMEOUT seconds (from the start of set-up) with
 * RAILCOLL_ERR_TIMEOUT. With a blocking all-gather that deadline cannot apply:
 * the caller's own must. Key, rails, timeouts and the algorithm settings come
 * from the environment, as for railcoll_comm_init. */
typedef struct {
  /* All-gather `bytes` from sendbuf of every rank into recvbuf (size * bytes,
   * rank r's at r * bytes). Returns 0 when started (or, without test, done),
   * non-zero on failure. sendbuf and recvbuf stay valid until test reports
   * the end or release is called. */
  int (*allgather)(const void* sendbuf, void* recvbuf, size_t bytes, void* context, void** request);
  /* 1 when the all-gather of `request` is complete, 0 when not yet, negative
   * when it failed. NULL: allgather blocks until done. */
  int (*test)(void* request, void* context);
  /* Called once for every request allgather made, after test said 1 or < 0
   * (complete = 1 or 0), or when railcoll gives up waiting (complete = 0: the
   * exchange may still be running, and must not write into recvbuf any more).
   * NULL: nothing to release. */
  void (*release)(void* request, int complete, void* context);
  void* context;       /* passed to the three callbacks */
  int rank, size;      /* this rank, 0 <= rank < size, and how many take part */
  const char* node;    /* this rank's node: ranks with equal strings share memory. NULL: RAILCOLL_NODE, else the hostname */
  /* The secret every connection proves; every rank must pass the same. NULL:
   * RAILCOLL_JOB_KEY; when no rank has one, rank 0 draws a key for this
   * communicator and the exchange carries it to the others (the caller's
   * channel is trusted with it, as with the rest of set-up). */
  const char* job_key;
} railcoll_oob_t;

RAILCOLL_API railcoll_status_t railcoll_comm_init_oob(railcoll_comm_t* comm, const railcoll_oob_t* oob);

/* The caller's own progress while this rank waits inside railcoll: a thread
 * waiting inside railcoll for a call on comm (a blocking collective, a wait on
 * a request) calls hook(arg) between its sleeps, about every every_us
 * microseconds (0: 1000), until the call is done. A peer
 * waiting inside the caller's library for this rank (an MPI rank in MPI's
 * own wait, for a message this rank's MPI must progress) is then not
 * starved: railcoll's MPI library passes a poke at MPI's progress engine.
 * Never called from railcoll's own threads (the caller's library may take
 * calls from the program's threads alone). hook NULL: none (the default). */
RAILCOLL_API railcoll_status_t railcoll_comm_set_wait_hook(railcoll_comm_t comm, void (*hook)(void* arg), void* arg,
                                                           unsigned every_us);

/* Every rank contributes `bytes` from sendbuf; recvbuf (size * bytes) receives
 * every rank's block in rank order. opts may be NULL. */
RAILCOLL_API railcoll_status_t railcoll_allgather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                  size_t bytes, const railcoll_call_opts_t* opts);
/* Rank r contributes counts[r] bytes; block r lands at byte displs[r] of recvbuf
 * (displs NULL: at the sum of counts[0..r-1], the blocks packed in rank order),
 * as gatherv's. Every rank must pass the same counts; blocks may not overlap. */
RAILCOLL_API railcoll_status_t railcoll_allgatherv(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                   const size_t* counts, const size_t* displs,
                                                   const railcoll_call_opts_t* opts);
RAILCOLL_API railcoll_status_t railcoll_barrier(railcoll_comm_t comm);

/* The root's `bytes` of buf are copied into buf on every other rank. Every rank
 * passes the same bytes and root. */
RAILCOLL_API railcoll_status_t railcoll_bcast(railcoll_comm_t comm, void* buf, size_t bytes, int root,
                                              const railcoll_call_opts_t* opts);
/* Every rank contributes `bytes` from sendbuf; the root's recvbuf (size * bytes)
 * receives them in rank order (recvbuf is ignored elsewhere and may be NULL). */
RAILCOLL_API railcoll_status_t railcoll_gather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                                               int root, const railcoll_call_opts_t* opts);

/* Element types. FLOAT16 is IEEE binary16, BFLOAT16 the upper half of a
 * float; both are combined in float and rounded back (to nearest even) once
 * per combination. */
typedef enum {
  RAILCOLL_INT32 = 1, RAILCOLL_INT64 = 2, RAILCOLL_FLOAT = 3, RAILCOLL_DOUBLE = 4,
  RAILCOLL_INT8 = 5, RAILCOLL_UINT8 = 6, RAILCOLL_INT16 = 7, RAILCOLL_UINT16 = 8,
  RAILCOLL_UINT32 = 9, RAILCOLL_UINT64 = 10, RAILCOLL_FLOAT16 = 11, RAILCOLL_BFLOAT16 = 12,
  /* (value, int index) pairs for MINLOC and MAXLOC, laid out as the C structs
   * { float; int; }, { double; int; }, { long; int; }, { int; int; }, { short; int; }
   * (MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT); a
   * count counts pairs */
  RAILCOLL_FLOAT_INT = 13, RAILCOLL_DOUBLE_INT = 14, RAILCOLL_LONG_INT = 15, RAILCOLL_2INT = 16,
  RAILCOLL_SHORT_INT = 17,
  /* with a user operator (railcoll_op_create) only: the operator's own
   * elements, a count counts them */
  RAILCOLL_OP_ELEMENTS = 0
} railcoll_datatype_t;
/* Integer sums and products wrap around. The bitwise (BAND, BOR, BXOR) and
 * logical (LAND, LOR, LXOR: the result is 1 or 0) operators take the integer
 * types only; MINLOC and MAXLOC (the least or greatest value, and on a tie the
 * least index) the pairs only, and the pairs no other operator: anything else
 * is RAILCOLL_ERR_ARG. */
typedef enum {
  RAILCOLL_SUM = 0, RAILCOLL_MIN = 1, RAILCOLL_MAX = 2, RAILCOLL_PROD = 3,
  RAILCOLL_BAND = 4, RAILCOLL_BOR = 5, RAILCOLL_BXOR = 6,
  RAILCOLL_LAND = 7, RAILCOLL_LOR = 8, RAILCOLL_LXOR = 9,
  RAILCOLL_MINLOC = 10, RAILCOLL_MAXLOC = 11
} railcoll_op_t;

/* A reduction operator of the program's own (MPI's MPI_Op_create), for every
 * reducing call (allreduce, reduce, reduce_scatter(_block), scan, exscan) with
 * type RAILCOLL_OP_ELEMENTS: fn(in, inout, n, context) must set inout[i] =
 * in[i] op inout[i] for the n elements of elem_bytes bytes each at in and
 * inout -- MPI's MPI_User_function order: `in` holds the lower ranks' values.
 * The operator must be associative. commute = 0 says it is not commutative:
 * railcoll then combines strictly in rank order, on the algorithms that keep
 * it (`railcoll algos` marks them; selection passes over the others, and a call
 * or RAILCOLL_<COLL>_ALGO naming one fails with RAILCOLL_ERR_ARG). Every rank
 * passes an operator of the same element size and commutativity. fn runs on
 * whichever thread drives the call (the caller's or railcoll's progress
 * thread), on buffers aligned as the caller's and railcoll's own (16 bytes),
 * and must not call railcoll. *op gets a new value of railcoll_op_t (above the
 * predefined ones); railcoll_op_free gives it back: calls outstanding with it
 * keep the operator until they complete, and the value may be handed out again. */
typedef void (*railcoll_user_fn)(const void* in, void* inout, size_t n, void* context);
RAILCOLL_API railcoll_status_t railcoll_op_create(railcoll_user_fn fn, size_t elem_bytes, int commute, void* context,
                                                  railcoll_op_t* op);
RAILCOLL_API railcoll_status_t railcoll_op_free(railcoll_op_t* op);
/* recvbuf[i] = op over all ranks of sendbuf[i], for `count` elements of `type`.
 * With RAILCOLL_IN_PLACE, recvbuf holds the input and sendbuf is ignored.
 * Floating-point sums depend on the algorithm's order of combination (as in MPI). */
RAILCOLL_API railcoll_status_t railcoll_allreduce(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                  size_t count, railcoll_datatype_t type, railcoll_op_t op,
                                                  const railcoll_call_opts_t* opts);
/* MPI_Reduce_scatter_block: sendbuf holds size * count elements, block r (at
 * r * count) for rank r; recvbuf (count elements) receives this rank's block
 * reduced over every rank. With RAILCOLL_IN_PLACE, recvbuf holds the input
 * (size * count elements) and the result lands at its start. */
RAILCOLL_API railcoll_status_t railcoll_reduce_scatter_block(railcoll_comm_t comm, const void* sendbuf,
                                                             void* recvbuf, size_t count, railcoll_datatype_t type,
                                                             railcoll_op_t op, const railcoll_call_opts_t* opts);
/* MPI_Reduce_scatter: as railcoll_reduce_scatter_block with counts[r] elements
 * for rank r, the blocks one after the other in rank order (every rank passes
 * the same counts; some may be 0). In place: recvbuf holds the whole input. */
RAILCOLL_API railcoll_status_t railcoll_reduce_scatter(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                       const size_t* counts, railcoll_datatype_t type,
                                                       railcoll_op_t op, const railcoll_call_opts_t* opts);
/* MPI_Reduce: the root's recvbuf[i] = op over all ranks of sendbuf[i] (recvbuf
 * is ignored elsewhere and may be NULL). RAILCOLL_IN_PLACE at the root: its
 * recvbuf holds its input; other ranks always pass sendbuf. */
RAILCOLL_API railcoll_status_t railcoll_reduce(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                               size_t count, railcoll_datatype_t type, railcoll_op_t op, int root,
                                               const railcoll_call_opts_t* opts);
/* ---- personalised data: alltoall(v), scatter(v), gatherv ----
 * Counts and displacements are in bytes, displacements from the buffer's start;
 * blocks may lie anywhere (packed in rank order costs no copy; a NULL
 * displacement array means packed). */
/* Every rank sends `bytes` to every rank: block d of sendbuf (size * bytes) goes
 * to rank d, where it lands as block r (the sender's rank) of recvbuf. With
 * RAILCOLL_IN_PLACE, recvbuf holds the blocks to send and sendbuf is ignored. */
RAILCOLL_API railcoll_status_t railcoll_alltoall(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                 size_t bytes, const railcoll_call_opts_t* opts);
/* sendcounts[d] bytes at sendbuf + sdispls[d] go to rank d; recvcounts[s] bytes
 * from rank s land at recvbuf + rdispls[s]. What rank s sends to d must be what d
 * expects from s (else RAILCOLL_ERR_ARG on d, naming the pair). Each rank's counts
 * reach the others in a small all-gather before the data moves. With
 * RAILCOLL_IN_PLACE, recvbuf holds the blocks to send (recvcounts, rdispls: a
 * rank sends to s what it receives from s) and sendbuf, sendcounts and sdispls
 * are ignored. */
RAILCOLL_API railcoll_status_t railcoll_alltoallv(railcoll_comm_t comm, const void* sendbuf, const size_t* sendcounts,
                                                  const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                                                  const size_t* rdispls, const railcoll_call_opts_t* opts);
/* The root's sendbuf (size * bytes) holds a block for every rank; rank r's block
 * lands in its recvbuf (bytes). sendbuf is ignored elsewhere and may be NULL. With
 * RAILCOLL_IN_PLACE at the root, the root's block stays in sendbuf and its recvbuf
 * is ignored. */
RAILCOLL_API railcoll_status_t railcoll_scatter(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                                                int root, const railcoll_call_opts_t* opts);
/* As railcoll_scatter with counts[r] bytes for rank r at sendbuf + displs[r]
 * (displs is read at the root only; NULL: packed). Every rank passes the same
 * counts. */
RAILCOLL_API railcoll_status_t railcoll_scatterv(railcoll_comm_t comm, const void* sendbuf, const size_t* counts,
                                                 const size_t* displs, void* recvbuf, int root,
                                                 const railcoll_call_opts_t* opts);
/* Rank r contributes counts[r] bytes from sendbuf; they land at recvbuf +
 * displs[r] on the root (displs read at the root only; NULL: packed). Every rank
 * passes the same counts. With RAILCOLL_IN_PLACE at the root, its block is
 * already at recvbuf + displs[root] and sendbuf is ignored. */
RAILCOLL_API railcoll_status_t railcoll_gatherv(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                const size_t* counts, const size_t* displs, int root,
                                                const railcoll_call_opts_t* opts);
/* ---- nonblocking and persistent calls ----
 *
 * railcoll_iCOLL(..., req) starts the collective railcoll_COLL(...) and returns at
 * once with a request; railcoll_COLL_init(..., req) builds it once (algorithm,
 * plan, argument checks) as an inactive persistent request that railcoll_start
 * runs again and again. The arguments mean what they mean for the blocking call.
 * Buffers belong to the library until the request completes; count and
 * displacement arrays are copied (they may change or go once the call returns).
 *
 * Order: like MPI, every rank of a communicator issues its collectives, blocking,
 * nonblocking and started persistent ones, in the same order; they complete in that
 * order. A rank whose next call differs from its peers' (another collective, size
 * or root) gets RAILCOLL_ERR_MISMATCH on every rank, never a hang or wrong data.
 * Several calls may be outstanding on one communicator and on several at once.
 *
 * Progress: outstanding calls advance inside any railcoll call on their
 * communicator (test, wait, another collective) and, unless
 * RAILCOLL_PROGRESS_THREAD=0, on a progress thread of the communicator that
 * sleeps in the kernel (epoll, futex) while nothing arrives and exists only
 * once the communicator has had a nonblocking or persistent call.
 *
 * Completion: wait and test complete a request; a nonblocking request is then
 * freed and *req set to RAILCOLL_REQUEST_NULL; a persistent one becomes inactive
 * (start it again, or free it). Their status is the call's: a failed call (a dead
 * peer, a timeout, a mismatch) fails every request outstanding on its communicator
 * on every rank, and the communicator is broken. A request that is NULL or
 * inactive counts as complete with RAILCOLL_OK. Requests may be waited for from any
 * thread, a given request from one thread at a time. */
typedef struct railcoll_request* railcoll_request_t;
#define RAILCOLL_REQUEST_NULL ((railcoll_request_t)0)

RAILCOLL_API railcoll_status_t railcoll_iallgather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                   size_t bytes, const railcoll_call_opts_t* opts,
                                                   railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_iallgatherv(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                    const size_t* counts, const size_t* displs,
                                                    const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_ibarrier(railcoll_comm_t comm, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_ibcast(railcoll_comm_t comm, void* buf, size_t bytes, int root,
                                               const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_igather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                size_t bytes, int root, const railcoll_call_opts_t* opts,
                                                railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_iallreduce(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                   size_t count, railcoll_datatype_t type, railcoll_op_t op,
                                                   const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_ireduce_scatter_block(railcoll_comm_t comm, const void* sendbuf,
                                                              void* recvbuf, size_t count, railcoll_datatype_t type,
                                                              railcoll_op_t op, const railcoll_call_opts_t* opts,
                                                              railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_ireduce_scatter(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                        const size_t* counts, railcoll_datatype_t type,
                                                        railcoll_op_t op, const railcoll_call_opts_t* opts,
                                                        railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_ireduce(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                size_t count, railcoll_datatype_t type, railcoll_op_t op, int root,
                                                const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_ialltoall(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                  size_t bytes, const railcoll_call_opts_t* opts,
                                                  railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_ialltoallv(railcoll_comm_t comm, const void* sendbuf,
                                                   const size_t* sendcounts, const size_t* sdispls, void* recvbuf,
                                                   const size_t* recvcounts, const size_t* rdispls,
                                                   const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_iscatter(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                 size_t bytes, int root, const railcoll_call_opts_t* opts,
                                                 railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_iscatterv(railcoll_comm_t comm, const void* sendbuf, const size_t* counts,
                                                  const size_t* displs, void* recvbuf, int root,
                                                  const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_igatherv(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                 const size_t* counts, const size_t* displs, int root,
                                                 const railcoll_call_opts_t* opts, railcoll_request_t* req);

RAILCOLL_API railcoll_status_t railcoll_allgather_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                       size_t bytes, const railcoll_call_opts_t* opts,
                                                       railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_allgatherv_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                        const size_t* counts, const size_t* displs,
                                                        const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_barrier_init(railcoll_comm_t comm, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_bcast_init(railcoll_comm_t comm, void* buf, size_t bytes, int root,
                                                   const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_gather_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                    size_t bytes, int root, const railcoll_call_opts_t* opts,
                                                    railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_allreduce_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                       size_t count, railcoll_datatype_t type, railcoll_op_t op,
                                                       const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_reduce_scatter_block_init(railcoll_comm_t comm, const void* sendbuf,
                                                                  void* recvbuf, size_t count,
                                                                  railcoll_datatype_t type, railcoll_op_t op,
                                                                  const railcoll_call_opts_t* opts,
                                                                  railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_reduce_scatter_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                            const size_t* counts, railcoll_datatype_t type,
                                                            railcoll_op_t op, const railcoll_call_opts_t* opts,
                                                            railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_reduce_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                    size_t count, railcoll_datatype_t type, railcoll_op_t op,
                                                    int root, const railcoll_call_opts_t* opts,
                                                    railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_alltoall_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                      size_t bytes, const railcoll_call_opts_t* opts,
                                                      railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_alltoallv_init(railcoll_comm_t comm, const void* sendbuf,
                                                       const size_t* sendcounts, const size_t* sdispls,
                                                       void* recvbuf, const size_t* recvcounts,
                                                       const size_t* rdispls, const railcoll_call_opts_t* opts,
                                                       railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_scatter_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                     size_t bytes, int root, const railcoll_call_opts_t* opts,
                                                     railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_scatterv_init(railcoll_comm_t comm, const void* sendbuf,
                                                      const size_t* counts, const size_t* displs, void* recvbuf,
                                                      int root, const railcoll_call_opts_t* opts,
                                                      railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_gatherv_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                     const size_t* counts, const size_t* displs, int root,
                                                     const railcoll_call_opts_t* opts, railcoll_request_t* req);

/* ---- prefix reductions (MPI_Scan, MPI_Exscan), in the three forms ----
 *
 * scan: rank r's recvbuf[i] = sendbuf[i] of ranks 0, 1, ..., r combined in
 * that order, for `count` elements; exscan: of ranks 0..r-1, and rank 0's
 * recvbuf is not written (MPI leaves it undefined). With RAILCOLL_IN_PLACE,
 * recvbuf holds the input. Every rank passes the same count, type and
 * operator; any operator, a non-commutative user operator included
 * (railcoll_op_create): every scan algorithm keeps rank order. */
RAILCOLL_API railcoll_status_t railcoll_scan(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                             railcoll_datatype_t type, railcoll_op_t op,
                                             const railcoll_call_opts_t* opts);
RAILCOLL_API railcoll_status_t railcoll_exscan(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                               railcoll_datatype_t type, railcoll_op_t op,
                                               const railcoll_call_opts_t* opts);
RAILCOLL_API railcoll_status_t railcoll_iscan(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                              railcoll_datatype_t type, railcoll_op_t op,
                                              const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_iexscan(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                                railcoll_datatype_t type, railcoll_op_t op,
                                                const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_scan_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                  size_t count, railcoll_datatype_t type, railcoll_op_t op,
                                                  const railcoll_call_opts_t* opts, railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_exscan_init(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                                    size_t count, railcoll_datatype_t type, railcoll_op_t op,
                                                    const railcoll_call_opts_t* opts, railcoll_request_t* req);

/* ---- point to point ----
 *
 * railcoll_isend sends `bytes` bytes of buf to rank `peer` with a tag (0 or
 * more); railcoll_irecv receives a message from rank `peer`, or from any rank
 * (RAILCOLL_ANY_SOURCE), with that tag into buf, which takes exactly `bytes`
 * (a message of another size fails the receive with RAILCOLL_ERR_MISMATCH and
 * is dropped); *source, unless source is NULL, is the sender once the receive
 * completes. Both return a request completed by railcoll_wait, railcoll_test
 * and the others; buf belongs to the library until then.
 *
 * Unlike collectives, they need not be issued in the same order on every rank,
 * nor by every rank, and they go beside the collectives, not in their order.
 * Between two ranks, messages of one tag are received in the order they were
 * sent (MPI's rule). A send completes once its bytes are handed to the network;
 * a receive once they are in buf. They travel on the collectives' connections
 * (inside a node the local socket), split over the rails above
 * RAILCOLL_STRIPE_BYTES. A receive no message matches within RAILCOLL_TIMEOUT
 * of its post fails with RAILCOLL_ERR_TIMEOUT; that and a size mismatch leave
 * the communicator usable; a dead peer breaks it. */
#define RAILCOLL_ANY_SOURCE (-1)
RAILCOLL_API railcoll_status_t railcoll_isend(railcoll_comm_t comm, const void* buf, size_t bytes, int peer, int tag,
                                              railcoll_request_t* req);
RAILCOLL_API railcoll_status_t railcoll_irecv(railcoll_comm_t comm, void* buf, size_t bytes, int peer, int tag,
                                              int* source, railcoll_request_t* req);

/* Starts an inactive persistent request (RAILCOLL_ERR_ARG if it is active or
 * not persistent); startall starts n of them in array order. */
RAILCOLL_API railcoll_status_t railcoll_start(railcoll_request_t req);
RAILCOLL_API railcoll_status_t railcoll_startall(int n, railcoll_request_t* reqs);
/* *done = 1 when the request is complete (then as described above), else 0;
 * never blocks. The status is the call's once done. */
RAILCOLL_API railcoll_status_t railcoll_test(railcoll_request_t* req, int* done);
/* Blocks until the request completes (within RAILCOLL_TIMEOUT of the last sign
 * of progress: then RAILCOLL_ERR_TIMEOUT on every rank). */
RAILCOLL_API railcoll_status_t railcoll_wait(railcoll_request_t* req);
/* Every request of the array; returns the first failure's status (every request
 * is completed either way). */
RAILCOLL_API railcoll_status_t railcoll_waitall(int n, railcoll_request_t* reqs);
RAILCOLL_API railcoll_status_t railcoll_testall(int n, railcoll_request_t* reqs, int* done);
/* One complete request of the array: its index in *index (-1 with *done = 1 when
 * every entry is NULL or inactive); the status is that request's. */
RAILCOLL_API railcoll_status_t railcoll_waitany(int n, railcoll_request_t* reqs, int* index);
RAILCOLL_API railcoll_status_t railcoll_testany(int n, railcoll_request_t* reqs, int* index, int* done);
/* 1 when the request is complete or inactive (or NULL), without completing it
 * (MPI_Request_get_status); *status then holds the call's status. */
RAILCOLL_API int railcoll_request_done(railcoll_request_t req, railcoll_status_t* status);
/* Frees a request: an inactive persistent one at once; an outstanding one once
 * its call completes (its outcome is then seen by nobody), except a
 * point-to-point receive no message has matched yet, which is withdrawn at
 * once. *req becomes NULL. */
RAILCOLL_API railcoll_status_t railcoll_request_free(railcoll_request_t* req);
/* Advances the outstanding calls of comm without blocking (for a caller that
 * turned the progress thread off and computes between tests). */
RAILCOLL_API railcoll_status_t railcoll_progress(railcoll_comm_t comm);

/* The algorithm a call of `collective` ("allgather", "bcast", ...) with `bytes`
 * per rank would use, with the options' algorithm if given (a root of 0 and
 * float sums for the rooted and reducing ones). The string is the library's
 * own and stays valid while it is loaded. NULL for an unknown collective or
 * algorithm or a NULL or destroyed communicator (railcoll_last_error() says
 * which). */
RAILCOLL_API const char* railcoll_algorithm_for(railcoll_comm_t comm, const char* collective, size_t bytes,
                                                const railcoll_call_opts_t* opts);

/* Algorithms, by index: 0 <= i < railcoll_algorithm_count(). */
RAILCOLL_API int railcoll_algorithm_count(void);
RAILCOLL_API railcoll_status_t railcoll_algorithm_name(int index, const char** collective, const char** name);

/* Builds the all-gather schedule of `algorithm` for `nranks` ranks, where rank r
 * lives on node node_of[r] (node_of may be NULL: one rank per node), with `rails`
 * rails and `bytes` per rank, and verifies it symbolically. RAILCOLL_OK when it
 * is correct; RAILCOLL_ERR_VERIFY with the verifier's message otherwise. */
RAILCOLL_API railcoll_status_t railcoll_verify_allgather(const char* algorithm, int nranks, const int* node_of,
                                                         int rails, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* RAILCOLL_RAILCOLL_H */
