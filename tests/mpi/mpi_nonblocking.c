/* Nonblocking and persistent collectives through the MPI interposition
 * library (src/mpi/requests.cpp, docs/mpi.md "Nonblocking and persistent
 * collectives"), from an unmodified MPI program:
 *
 *  batches  every served nonblocking collective (MPI_Iallgather ...
 *           MPI_Igatherv, an MPI_Iallgatherv with gaps and an MPI_Iallgather
 *           into a strided type: staging of their own), one MPI_Iallreduce with
 *           a user-defined operator (MPI serves it), and MPI_Isend/MPI_Irecv
 *           of 100 B and 64 KiB around a ring, all in one array, on one
 *           communicator and spread over two; completed by MPI_Waitall, a
 *           MPI_Waitany loop, a MPI_Testsome loop, MPI_Test loops (backwards),
 *           MPI_Request_get_status then MPI_Wait, MPI_Waitsome, MPI_Testall
 *           and MPI_Testany loops; every byte checked, the point-to-point
 *           statuses (source, tag, count) checked, every request null after;
 *  persistent  the persistent form of every kind above, started together
 *           once by MPI_Startall over two communicators; MPI_Allgather_init, MPI_Allreduce_init, MPI_Bcast_init of a
 *           strided type (packed at every start) and MPI_Barrier_init with a
 *           persistent send and receive, started N times (default 1000) by
 *           MPI_Startall / MPI_Start, completed by MPI_Waitall, MPI_Waitany
 *           (inactive requests ignored) and MPI_Testall, the buffers changed
 *           before every start and checked after it (MPI_Allgather_init is
 *           MPIX_Allgather_init on Open MPI 4);
 *  comm_free  MPI_Comm_free with an MPI_Iallgather outstanding on it, then
 *           MPI_Wait: the data is right.
 *
 * Prints the report the library should give (railcoll-mpi-expect lines, as
 * tests/mpi/mpi_collectives.c) and "nonblocking correct: 0 wrong".
 *   usage: mpi_nonblocking [--starts N] [--thread-multiple]
 *          mpi_nonblocking leave   posts an MPI_Iallreduce and finalizes without
 *                                  completing it (MPI_Finalize must not hang) */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
#define PERSISTENT(name) MPI_##name##_init
#define HAVE_PERSISTENT 1
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PERSISTENT(name) MPIX_##name##_init
#define HAVE_PERSISTENT 1
#endif
#endif

#include "mpi_check.h"

static int world_rank, world_size, errors;
static int library_in;  /* the library is preloaded or linked */
/* What the report should say per form: [0] blocking (mpi_check.h's expected), [1] nonblocking, [2] persistent. */
static long expected_forms[3][NCOLL][2];

static void expect(int form, int coll, MPI_Comm comm, int railcoll_can) {
  int size;
  MPI_Comm_size(comm, &size);
  expected_forms[form][coll][railcoll_can && size > 1]++;
}

/* ---- one collective of a batch ---- */
/* The collectives before SCAN (this test posts no scan, exscan or alltoallw:
 * tests/mpi/mpi_scan.c does), then two variants of them. */
enum { VECTOR_ALLGATHER = SCAN, USER_OP_ALLREDUCE, NKINDS };
typedef struct {
  int kind, call, root, n; /* n: bytes (or ints) per block */
  int persistent;          /* made by the persistent form (MPI_Allgather_init ...) */
  MPI_Comm comm;
  int me, size;
  unsigned char *send, *recv;
  int *sc, *sd, *rc, *rd; /* v-calls' counts and displacements */
  MPI_Datatype type;      /* the strided type, when one */
  MPI_Op op;
} Coll;

static void user_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}
static MPI_Op user_op;

static int* ints(int n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(int)); }
static unsigned char* bytes(size_t n, unsigned char fill) {
  unsigned char* p = malloc(n ? n : 1);
  memset(p, fill, n ? n : 1);
  return p;
}
/* Element i of rank r's reduction input in call `call`. */
static int value(int r, int i, int call) { return r * 1000 + i * 7 + call; }
static int sum_of(int size, int i, int call) {
  int s = 0;
  for (int r = 0; r < size; ++r) s += value(r, i, call);
  return s;
}
/* Block of rank `from` for rank `to`, byte j. */
static unsigned char cross(int from, int to, int j, int call) { return pattern(from * 64 + to, (uint64_t)j, call); }

/* The nonblocking call, or its persistent form for c->persistent (started later). */
#ifdef HAVE_PERSISTENT
#define ISSUE(nonblocking, name, ...) \
  (c->persistent ? PERSISTENT(name)(__VA_ARGS__, MPI_INFO_NULL, req) : nonblocking(__VA_ARGS__, req))
#else
#define ISSUE(nonblocking, name, ...) nonblocking(__VA_ARGS__, req)
#endif

static void post(Coll* c, MPI_Request* req) {
  const int me = c->me, size = c->size, n = c->n, call = c->call, root = c->root;
  int total = 0;
  switch (c->kind) {
    case ALLGATHER:
      c->send = bytes((size_t)n, 0);
      for (int j = 0; j < n; ++j) c->send[j] = pattern(me, (uint64_t)j, call);
      c->recv = bytes((size_t)n * size, 0xEE);
      ISSUE(MPI_Iallgather, Allgather, c->send, n, MPI_BYTE, c->recv, n, MPI_BYTE, c->comm);
      break;
    case VECTOR_ALLGATHER: /* every other byte of the receive buffer: packed by the library */
      c->send = bytes((size_t)n, 0);
      for (int j = 0; j < n; ++j) c->send[j] = pattern(me, (uint64_t)j, call);
      MPI_Type_vector(n, 1, 2, MPI_BYTE, &c->type);
      MPI_Type_commit(&c->type);
      c->recv = bytes((size_t)(2 * n) * size, 0xEE);
      ISSUE(MPI_Iallgather, Allgather, c->send, n, MPI_BYTE, c->recv, 1, c->type, c->comm);
      break;
    case ALLGATHERV: /* uneven counts, a gap of 3 bytes before each block: unpacked by the library */
      c->rc = ints(size);
      c->rd = ints(size);
      for (int r = 0; r < size; ++r) c->rc[r] = n + r, c->rd[r] = total + 3 * (r + 1), total += n + r;
      c->send = bytes((size_t)(n + me), 0);
      for (int j = 0; j < n + me; ++j) c->send[j] = pattern(me, (uint64_t)j, call);
      c->recv = bytes((size_t)total + 3 * size, 0xEE);
      ISSUE(MPI_Iallgatherv, Allgatherv, c->send, n + me, MPI_BYTE, c->recv, c->rc, c->rd, MPI_BYTE, c->comm);
      break;
    case BCAST:
      c->recv = bytes((size_t)n, 0);
      if (me == root)
        for (int j = 0; j < n; ++j) c->recv[j] = pattern(root, (uint64_t)j, call);
      ISSUE(MPI_Ibcast, Bcast, c->recv, n, MPI_BYTE, root, c->comm);
      break;
    case GATHER:
      c->send = bytes((size_t)n, 0);
      for (int j = 0; j < n; ++j) c->send[j] = pattern(me, (uint64_t)j, call);
      c->recv = bytes((size_t)n * size, 0xEE);
      ISSUE(MPI_Igather, Gather, c->send, n, MPI_BYTE, c->recv, n, MPI_BYTE, root, c->comm);
      break;
    case ALLREDUCE:
    case USER_OP_ALLREDUCE:
    case REDUCE:
      c->send = bytes((size_t)n * sizeof(int), 0);
      for (int i = 0; i < n; ++i) ((int*)c->send)[i] = value(me, i, call);
      c->recv = bytes((size_t)n * sizeof(int), 0xEE);
      if (c->kind == REDUCE) ISSUE(MPI_Ireduce, Reduce, c->send, c->recv, n, MPI_INT, MPI_SUM, root, c->comm);
      else ISSUE(MPI_Iallreduce, Allreduce, c->send, c->recv, n, MPI_INT, c->kind == ALLREDUCE ? MPI_SUM : user_op, c->comm);
      break;
    case BARRIER:
      ISSUE(MPI_Ibarrier, Barrier, c->comm);
      break;
    case REDUCE_SCATTER_BLOCK:
    case REDUCE_SCATTER:
      c->rc = ints(size);
      for (int r = 0; r < size; ++r) c->rc[r] = c->kind == REDUCE_SCATTER ? n + r : n, total += c->rc[r];
      c->send = bytes((size_t)total * sizeof(int), 0);
      for (int i = 0; i < total; ++i) ((int*)c->send)[i] = value(me, i, call);
      c->recv = bytes((size_t)c->rc[me] * sizeof(int), 0xEE);
      if (c->kind == REDUCE_SCATTER) ISSUE(MPI_Ireduce_scatter, Reduce_scatter, c->send, c->recv, c->rc, MPI_INT, MPI_SUM, c->comm);
      else ISSUE(MPI_Ireduce_scatter_block, Reduce_scatter_block, c->send, c->recv, n, MPI_INT, MPI_SUM, c->comm);
      break;
    case ALLTOALL:
      c->send = bytes((size_t)n * size, 0);
      for (int d = 0; d < size; ++d)
        for (int j = 0; j < n; ++j) c->send[d * n + j] = cross(me, d, j, call);
      c->recv = bytes((size_t)n * size, 0xEE);
      ISSUE(MPI_Ialltoall, Alltoall, c->send, n, MPI_BYTE, c->recv, n, MPI_BYTE, c->comm);
      break;
    case ALLTOALLV: {
      int rtotal = 0;
      c->sc = ints(size), c->sd = ints(size), c->rc = ints(size), c->rd = ints(size);
      for (int r = 0; r < size; ++r) {
        c->sc[r] = n + (me + 2 * r) % 3, c->sd[r] = total, total += c->sc[r];
        c->rc[r] = n + (r + 2 * me) % 3, c->rd[r] = rtotal, rtotal += c->rc[r];
      }
      c->send = bytes((size_t)total, 0);
      for (int d = 0; d < size; ++d)
        for (int j = 0; j < c->sc[d]; ++j) c->send[c->sd[d] + j] = cross(me, d, j, call);
      c->recv = bytes((size_t)rtotal, 0xEE);
      ISSUE(MPI_Ialltoallv, Alltoallv, c->send, c->sc, c->sd, MPI_BYTE, c->recv, c->rc, c->rd, MPI_BYTE, c->comm);
      break;
    }
    case SCATTER:
      c->send = bytes((size_t)n * size, 0);
      for (int d = 0; d < size; ++d)
        for (int j = 0; j < n; ++j) c->send[d * n + j] = cross(root, d, j, call);
      c->recv = bytes((size_t)n, 0xEE);
      ISSUE(MPI_Iscatter, Scatter, c->send, n, MPI_BYTE, c->recv, n, MPI_BYTE, root, c->comm);
      break;
    case SCATTERV:
      c->sc = ints(size), c->sd = ints(size);
      for (int r = 0; r < size; ++r) c->sc[r] = n + r, c->sd[r] = total, total += n + r;
      c->send = bytes((size_t)total, 0);
      for (int d = 0; d < size; ++d)
        for (int j = 0; j < c->sc[d]; ++j) c->send[c->sd[d] + j] = cross(root, d, j, call);
      c->recv = bytes((size_t)(n + me), 0xEE);
      ISSUE(MPI_Iscatterv, Scatterv, c->send, c->sc, c->sd, MPI_BYTE, c->recv, n + me, MPI_BYTE, root, c->comm);
      break;
    case GATHERV:
      c->rc = ints(size), c->rd = ints(size);
      for (int r = 0; r < size; ++r) c->rc[r] = n + r, c->rd[r] = total, total += n + r;
      c->send = bytes((size_t)(n + me), 0);
      for (int j = 0; j < n + me; ++j) c->send[j] = pattern(me, (uint64_t)j, call);
      c->recv = bytes((size_t)total, 0xEE);
      ISSUE(MPI_Igatherv, Gatherv, c->send, n + me, MPI_BYTE, c->recv, c->rc, c->rd, MPI_BYTE, root, c->comm);
      break;
  }
  const int coll = c->kind == VECTOR_ALLGATHER ? ALLGATHER : c->kind == USER_OP_ALLREDUCE ? ALLREDUCE : c->kind;
  expect(c->persistent ? 2 : 1, coll, c->comm, c->kind != USER_OP_ALLREDUCE);
}

static const char* kind_name(int kind) {
  return kind == VECTOR_ALLGATHER ? "MPI_Iallgather(strided)" : kind == USER_OP_ALLREDUCE ? "MPI_Iallreduce(user op)" : kNames[kind];
}

/* Checks what arrived; frees the buffers. */
static void check(Coll* c, const char* how) {
  const int me = c->me, size = c->size, n = c->n, call = c->call, root = c->root;
  long bad = -1;
  switch (c->kind) {
    case ALLGATHER:
      for (int r = 0; r < size && bad < 0; ++r)
        for (int j = 0; j < n; ++j)
          if (c->recv[r * n + j] != pattern(r, (uint64_t)j, call)) { bad = r * n + j; break; }
      break;
    case VECTOR_ALLGATHER:
      for (int r = 0; r < size && bad < 0; ++r)
        for (int j = 0; j < n; ++j)
          if (c->recv[r * (2 * n - 1) + 2 * j] != pattern(r, (uint64_t)j, call)) { bad = r * (2 * n - 1) + 2 * j; break; }
      MPI_Type_free(&c->type);
      break;
    case ALLGATHERV:
      for (int r = 0; r < size && bad < 0; ++r) {
        for (int g = 1; g <= 3; ++g)
          if (c->recv[c->rd[r] - g] != 0xEE) bad = c->rd[r] - g;
        for (int j = 0; j < c->rc[r]; ++j)
          if (c->recv[c->rd[r] + j] != pattern(r, (uint64_t)j, call)) { bad = c->rd[r] + j; break; }
      }
      break;
    case BCAST:
      for (int j = 0; j < n && bad < 0; ++j)
        if (c->recv[j] != pattern(root, (uint64_t)j, call)) bad = j;
      break;
    case GATHER:
      for (int r = 0; me == root && r < size && bad < 0; ++r)
        for (int j = 0; j < n; ++j)
          if (c->recv[r * n + j] != pattern(r, (uint64_t)j, call)) { bad = r * n + j; break; }
      break;
    case ALLREDUCE:
    case USER_OP_ALLREDUCE:
    case REDUCE:
      for (int i = 0; (c->kind != REDUCE || me == root) && i < n && bad < 0; ++i)
        if (((int*)c->recv)[i] != sum_of(size, i, call)) bad = i;
      break;
    case REDUCE_SCATTER_BLOCK:
    case REDUCE_SCATTER: {
      int first = 0;
      for (int r = 0; r < me; ++r) first += c->rc[r];
      for (int i = 0; i < c->rc[me] && bad < 0; ++i)
        if (((int*)c->recv)[i] != sum_of(size, first + i, call)) bad = i;
      break;
    }
    case ALLTOALL:
      for (int s = 0; s < size && bad < 0; ++s)
        for (int j = 0; j < n; ++j)
          if (c->recv[s * n + j] != cross(s, me, j, call)) { bad = s * n + j; break; }
      break;
    case ALLTOALLV:
      for (int s = 0; s < size && bad < 0; ++s)
        for (int j = 0; j < c->rc[s]; ++j)
          if (c->recv[c->rd[s] + j] != cross(s, me, j, call)) { bad = c->rd[s] + j; break; }
      break;
    case SCATTER:
    case SCATTERV:
      for (int j = 0; j < (c->kind == SCATTER ? n : n + me) && bad < 0; ++j)
        if (c->recv[j] != cross(root, me, j, call)) bad = j;
      break;
    case GATHERV:
      for (int r = 0; me == root && r < size && bad < 0; ++r)
        for (int j = 0; j < c->rc[r]; ++j)
          if (c->recv[c->rd[r] + j] != pattern(r, (uint64_t)j, call)) { bad = c->rd[r] + j; break; }
      break;
  }
  if (bad >= 0) FAIL("%s (%s, call %d, %d per block, root %d): wrong at %ld", kind_name(c->kind), how, call, n, root, bad);
  free(c->send), free(c->recv), free(c->sc), free(c->sd), free(c->rc), free(c->rd);
  memset(c, 0, sizeof *c);
}

/* ---- a batch: every kind, point-to-point around a ring, one array, one completion method ---- */
enum { BY_WAITALL, BY_WAITANY, BY_TESTSOME, BY_TEST_BACKWARDS, BY_GET_STATUS, BY_WAITSOME, BY_TESTALL, BY_TESTANY, NMETHODS };
static const char* const kMethods[NMETHODS] = {"MPI_Waitall",  "MPI_Waitany loop", "MPI_Testsome loop", "MPI_Test loops",
                                               "MPI_Request_get_status", "MPI_Waitsome loop", "MPI_Testall loop",
                                               "MPI_Testany loop"};
#define P2P 4 /* a small and a large message each way round the ring */
#define MAXREQ (NKINDS + P2P)

static void complete(int method, int count, MPI_Request* reqs, MPI_Status* statuses) {
  int done = 0, flag = 0, index = 0, out = 0, idx[MAXREQ];
  MPI_Status st[MAXREQ];
  switch (method) {
    case BY_WAITALL:
      MPI_Waitall(count, reqs, statuses);
      break;
    case BY_WAITANY:
      for (;;) {
        MPI_Waitany(count, reqs, &index, &st[0]);
        if (index == MPI_UNDEFINED) break;
        statuses[index] = st[0];
        ++done;
      }
      if (done != count) FAIL("MPI_Waitany completed %d of %d requests", done, count);
      break;
    case BY_TESTSOME:
    case BY_WAITSOME:
      for (;;) {
        if (method == BY_TESTSOME) MPI_Testsome(count, reqs, &out, idx, st);
        else MPI_Waitsome(count, reqs, &out, idx, st);
        if (out == MPI_UNDEFINED) break;
        for (int k = 0; k < out; ++k) statuses[idx[k]] = st[k];
        done += out;
      }
      if (done != count) FAIL("%s completed %d of %d requests", kMethods[method], done, count);
      break;
    case BY_TEST_BACKWARDS:
      for (int i = count - 1; i >= 0; --i)
        for (flag = 0; !flag;) MPI_Test(&reqs[i], &flag, &statuses[i]);
      break;
    case BY_GET_STATUS:
      for (int i = 0; i < count; ++i) {
        for (flag = 0; !flag;) MPI_Request_get_status(reqs[i], &flag, &st[0]);
        if (reqs[i] == MPI_REQUEST_NULL) FAIL("MPI_Request_get_status freed request %d", i);
        MPI_Wait(&reqs[i], &statuses[i]);
      }
      break;
    case BY_TESTALL:
      for (flag = 0; !flag;) MPI_Testall(count, reqs, &flag, statuses);
      break;
    case BY_TESTANY:
      for (;;) {
        MPI_Testany(count, reqs, &index, &flag, &st[0]);
        if (flag && index == MPI_UNDEFINED) break;
        if (flag) statuses[index] = st[0], ++done;
      }
      if (done != count) FAIL("MPI_Testany completed %d of %d requests", done, count);
      break;
  }
  for (int i = 0; i < count; ++i)
    if (reqs[i] != MPI_REQUEST_NULL) FAIL("%s left request %d not null", kMethods[method], i);
}

static void batch(int method, MPI_Comm a, MPI_Comm b, int call) {
  Coll colls[NKINDS];
  MPI_Request reqs[MAXREQ];
  MPI_Status statuses[MAXREQ];
  const int sizes[P2P] = {100, 100, 65536, 65536}; /* receive k, its send k + 1 */
  unsigned char* msg[P2P];
  int p2p_at[P2P], count = 0;
  const int right = (world_rank + 1) % world_size, left = (world_rank + world_size - 1) % world_size;
  /* Receives first, then collectives with the sends among them. */
  for (int k = 0; k < P2P; k += 2) {
    msg[k] = bytes((size_t)sizes[k], 0);
    p2p_at[k] = count;
    MPI_Irecv(msg[k], sizes[k], MPI_BYTE, left, call * 4 + k, MPI_COMM_WORLD, &reqs[count++]);
  }
  for (int kind = 0; kind < NKINDS; ++kind) {
    Coll* c = &colls[kind];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->comm = kind % 2 ? b : a;
    c->call = call * 32 + kind;
    MPI_Comm_rank(c->comm, &c->me);
    MPI_Comm_size(c->comm, &c->size);
    c->root = (call + kind) % c->size;
    c->n = 1 + (call * 37 + kind * 101) % 1500;
    post(c, &reqs[count++]);
    if (kind == NKINDS / 2)
      for (int k = 1; k < P2P; k += 2) {
        msg[k] = bytes((size_t)sizes[k], 0);
        for (int j = 0; j < sizes[k]; ++j) msg[k][j] = pattern(world_rank, (uint64_t)j, call * 4 + k);
        p2p_at[k] = count;
        MPI_Isend(msg[k], sizes[k], MPI_BYTE, right, call * 4 + k - 1, MPI_COMM_WORLD, &reqs[count++]);
      }
  }
  complete(method, count, reqs, statuses);
  for (int kind = 0; kind < NKINDS; ++kind) check(&colls[kind], kMethods[method]);
  for (int k = 0; k < P2P; k += 2) {
    MPI_Status* s = &statuses[p2p_at[k]];
    int got = -1;
    MPI_Get_count(s, MPI_BYTE, &got);
    if (s->MPI_SOURCE != left || s->MPI_TAG != call * 4 + k || got != sizes[k])
      FAIL("%s: MPI_Irecv's status: source %d tag %d count %d, want %d %d %d", kMethods[method], s->MPI_SOURCE,
           s->MPI_TAG, got, left, call * 4 + k, sizes[k]);
    for (int j = 0; j < sizes[k]; ++j)
      if (msg[k][j] != pattern(left, (uint64_t)j, call * 4 + k + 1)) {
        FAIL("%s: MPI_Irecv of %d bytes: wrong at %d", kMethods[method], sizes[k], j);
        break;
      }
  }
  for (int k = 0; k < P2P; ++k) free(msg[k]);
}

/* ---- persistent collectives started again and again ---- */
#ifdef HAVE_PERSISTENT
/* The persistent form of every kind (an MPI_Allreduce_init that MPI serves
 * among them), spread over two communicators, started together once. */
static void persistent_kinds(MPI_Comm a, MPI_Comm b) {
  Coll colls[NKINDS];
  MPI_Request reqs[NKINDS];
  MPI_Status statuses[NKINDS];
  for (int kind = 0; kind < NKINDS; ++kind) {
    Coll* c = &colls[kind];
    memset(c, 0, sizeof *c);
    c->kind = kind, c->persistent = 1, c->comm = kind % 2 ? b : a, c->call = 5000 + kind;
    MPI_Comm_rank(c->comm, &c->me);
    MPI_Comm_size(c->comm, &c->size);
    c->root = kind % c->size;
    c->n = 1 + kind * 211 % 1400;
    post(c, &reqs[kind]);
  }
  MPI_Startall(NKINDS, reqs);
  MPI_Waitall(NKINDS, reqs, statuses);
  for (int kind = 0; kind < NKINDS; ++kind) {
    if (reqs[kind] == MPI_REQUEST_NULL) FAIL("persistent %s: the request was freed by MPI_Waitall", kind_name(kind));
    MPI_Request_free(&reqs[kind]);
    check(&colls[kind], "persistent, MPI_Startall");
  }
  if (world_rank == 0) printf("persistent kinds: %d, started together once\n", NKINDS);
}

static void persistent(MPI_Comm comm, int starts) {
  int me, size;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  enum { N = 333, K = 257 };
  unsigned char send[N], *all = bytes((size_t)N * size, 0), strided[2 * N];
  int in[K], out[K], token_out = 0, token_in = -1;
  MPI_Datatype every_other;
  MPI_Type_vector(N, 1, 2, MPI_BYTE, &every_other);
  MPI_Type_commit(&every_other);
  const int bcast_root = size - 1, right = (me + 1) % size, left = (me + size - 1) % size;
  MPI_Request reqs[6];
  MPI_Status sts[6];
  PERSISTENT(Allgather)(send, N, MPI_BYTE, all, N, MPI_BYTE, comm, MPI_INFO_NULL, &reqs[0]);
  MPI_Recv_init(&token_in, 1, MPI_INT, left, 7, comm, &reqs[1]);
  PERSISTENT(Allreduce)(in, out, K, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &reqs[2]);
  PERSISTENT(Bcast)(strided, 1, every_other, bcast_root, comm, MPI_INFO_NULL, &reqs[3]);
  MPI_Send_init(&token_out, 1, MPI_INT, right, 7, comm, &reqs[4]);
  PERSISTENT(Barrier)(comm, MPI_INFO_NULL, &reqs[5]);
  expect(2, ALLGATHER, comm, 1), expect(2, ALLREDUCE, comm, 1), expect(2, BCAST, comm, 1), expect(2, BARRIER, comm, 1);
  const MPI_Request kept[6] = {reqs[0], reqs[1], reqs[2], reqs[3], reqs[4], reqs[5]};
  int wrong = 0;
  for (int it = 0; it < starts; ++it) {
    for (int j = 0; j < N; ++j) send[j] = pattern(me, (uint64_t)j, it);
    for (int i = 0; i < K; ++i) in[i] = value(me, i, it);
    memset(all, 0xEE, (size_t)N * size);
    memset(out, 0xEE, sizeof out);
    memset(strided, 0xEE, sizeof strided);
    if (me == bcast_root)
      for (int j = 0; j < N; ++j) strided[2 * j] = pattern(bcast_root, (uint64_t)j, it + 99);
    token_out = it * 10 + me;
    token_in = -1;
    /* MPICH 4.0.2 alone never returns from MPI_Waitany once a persistent
       collective of the array is inactive again: without the library that
       round uses MPI_Waitall. */
    int method = it % 3;
#ifndef OPEN_MPI
    if (!library_in && method == 1) method = 0;
#endif
    if (method == 0) {
      MPI_Startall(6, reqs);
      MPI_Waitall(6, reqs, sts);
    } else {
      for (int r = 0; r < 6; ++r) MPI_Start(&reqs[r]);
      int index = 0, flag = 0, done = 0;
      if (method == 1)
        for (;;) {
          MPI_Waitany(6, reqs, &index, MPI_STATUS_IGNORE);
          if (index == MPI_UNDEFINED) break;
          ++done;
        }
      else
        for (done = 6; !flag;) MPI_Testall(6, reqs, &flag, sts);
      if (done != 6 && wrong++ < 3) FAIL("persistent start %d: %d of 6 completed", it, done);
    }
    for (int r = 0; r < 6; ++r)
      if (reqs[r] != kept[r] && wrong++ < 3) FAIL("persistent start %d: request %d changed", it, r);
    for (int r = 0; r < size; ++r)
      for (int j = 0; j < N; ++j)
        if (all[r * N + j] != pattern(r, (uint64_t)j, it)) {
          if (wrong++ < 3) FAIL("MPI_Allgather_init start %d: wrong at %d", it, r * N + j);
          r = size;
          break;
        }
    for (int i = 0; i < K; ++i)
      if (out[i] != sum_of(size, i, it)) {
        if (wrong++ < 3) FAIL("MPI_Allreduce_init start %d: wrong at %d", it, i);
        break;
      }
    for (int j = 0; j < N; ++j)
      if (strided[2 * j] != pattern(bcast_root, (uint64_t)j, it + 99) || (j < N - 1 && strided[2 * j + 1] != 0xEE)) {
        if (wrong++ < 3) FAIL("MPI_Bcast_init (strided) start %d: wrong at %d", it, 2 * j);
        break;
      }
    if (token_in != it * 10 + left && wrong++ < 3) FAIL("persistent receive start %d: %d", it, token_in);
  }
  if (wrong) errors += wrong;
  for (int r = 0; r < 6; ++r) MPI_Request_free(&reqs[r]);
  MPI_Type_free(&every_other);
  free(all);
  if (world_rank == 0) printf("persistent: %d starts of allgather, allreduce, strided bcast, barrier and a send/receive\n", starts);
}
#endif

/* ---- MPI_Comm_free with a request outstanding ---- */
static void comm_freed(void) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  Coll c;
  memset(&c, 0, sizeof c);
  c.kind = ALLGATHER, c.comm = dup, c.call = 777, c.n = 5000, c.me = world_rank, c.size = world_size;
  MPI_Request req;
  post(&c, &req);
  MPI_Comm_free(&dup);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  c.comm = MPI_COMM_NULL;
  check(&c, "after MPI_Comm_free");
}

int main(int argc, char** argv) {
  int starts = 1000, provided = 0, leave = 0, multiple = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--starts") && i + 1 < argc) starts = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--thread-multiple")) multiple = 1;
    else if (!strcmp(argv[i], "leave")) leave = 1;
    else {
      fprintf(stderr, "usage: mpi_nonblocking [--starts N] [--thread-multiple] | leave\n");
      return 2;
    }
  }
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  library_in = dlsym(RTLD_DEFAULT, "railcoll_version") != NULL;
  if (leave) { /* an erroneous program: MPI_Finalize with a collective outstanding must still end */
    int x = world_rank, y = 0;
    MPI_Request req;
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Finalize();
    printf("rank %d: finalized with a request outstanding\n", world_rank);
    return 0;
  }
  /* Made past the library (as Open MPI's Fortran bindings make theirs): it
   * cannot know the function, so MPI serves the calls that use it. */
  PMPI_Op_create(user_sum, 1, &user_op);
  MPI_Comm dup, half;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  int call = 0;
  for (int method = 0; method < NMETHODS; ++method) {
    batch(method, MPI_COMM_WORLD, MPI_COMM_WORLD, call++);
    batch(method, dup, half, call++);
  }
  if (world_rank == 0) printf("batches: %d kinds and %d point-to-point requests per array, %d completion methods, one and two communicators\n", NKINDS, P2P, NMETHODS);
#ifdef HAVE_PERSISTENT
  persistent_kinds(dup, half);
  persistent(dup, starts);
#else
  (void)starts;
  if (world_rank == 0) printf("persistent: this MPI declares no persistent collectives\n");
#endif
  /* MPI_Request_free and MPI_Cancel of active collectives are refused, as MPI 4.0 says: tests/mpi/mpi_lifetimes.c */
  comm_freed();
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  MPI_Op_free(&user_op);

  int wrong = 0;
  MPI_Allreduce(&errors, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  expect(0, ALLREDUCE, MPI_COMM_WORLD, 1);
  /* The report the library should give: every blocking line, and the other forms' that were called. */
  print_expected_forms(expected_forms, "", world_rank, world_size);
  MPI_Finalize();
  /* The verdict after MPI_Finalize: a crash or hang there must fail the test. */
  if (world_rank == 0) printf("nonblocking correct: %d wrong\n", wrong);
  return wrong ? 1 : 0;
}
