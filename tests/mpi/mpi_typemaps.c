/* Typemap order (src/mpi/typemap.cpp, docs/mpi.md "Datatypes"): a datatype
 * whose typemap has no gap but does not run in memory order -- a reversed
 * MPI_Type_indexed, MPI_Type_indexed(2, {1,1}, {1,0}), negative strides,
 * permuted and negative displacements, nested swaps, MPI_BOTTOM with absolute
 * addresses listed backwards -- must be packed, not served in place; one that
 * does run in order (with a negative lower bound, a lower bound other than
 * its true one) may be served in place. Every constructor MPI has: contiguous,
 * vector, hvector, indexed, hindexed, indexed_block, hindexed_block, struct,
 * subarray in C and Fortran order, darray, resized with an extent smaller and
 * larger than the data, dup. Counts 1, 2 and 3 (the extent between elements
 * matters). On every rank half the calls use the case's type and half plain
 * MPI_INT of the same signature, the halves swapping, in MPI_Bcast,
 * MPI_Allgather, MPI_Gather, MPI_Scatter, MPI_Alltoall, MPI_Allgatherv,
 * MPI_Gatherv, MPI_Scatterv, MPI_Alltoallv, MPI_Ibcast and MPI_Iallgather.
 *
 * Each call is made twice on copies of the same buffers: through MPI_* (the
 * library's, when preloaded) and through PMPI_* (MPI's own collective, never
 * the library's): every byte of the receive buffers, gaps and margins
 * included, must be the same.
 *
 *   usage: mpi_typemaps [--case N]   exit 0 and "typemaps correct: 0 wrong" when all agree */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int world_rank, errors, calls, trace; /* MPI_TYPEMAPS_TRACE=1: each call on stderr first */

enum { NCASES = 27, PAD = 64 };
static int wrong_in_case[NCASES];

typedef struct {
  const char* name;
  int ints;      /* MPI_INT in one element's signature */
  int send_only; /* elements overlap in memory: erroneous to receive into */
  int bottom;    /* absolute addresses: the buffer is MPI_BOTTOM */
} Case;

static const Case kCases[NCASES] = {
    {"indexed(5, 1, {4,3,2,1,0}): a reversed array", 5, 0, 0},
    {"indexed(2, {1,1}, {1,0})", 2, 0, 0},
    {"contiguous(3): in order", 3, 0, 0},
    {"vector(3, 1, -1): a negative stride", 3, 0, 0},
    {"vector(2, 2, 2): stride = block, in order", 4, 0, 0},
    {"hvector(3, 1, -4 bytes)", 3, 0, 0},
    {"hindexed({1,1,1}, {4,0,8} bytes): permuted", 3, 0, 0},
    {"indexed_block(3, 1, {2,0,1}): permuted", 3, 0, 0},
    {"hindexed_block(2, 2, {8,0} bytes): pairs swapped", 4, 0, 0},
    {"struct{int@4, int@0}", 2, 0, 0},
    {"struct{int@0, indexed(3,1,{2,1,0})@4}: a reversed tail", 4, 0, 0},
    {"struct{int@-8, int@-4}: in order, negative lower bound", 2, 0, 0},
    {"hindexed({1,1}, {-4,-8} bytes): reversed, negative", 2, 0, 0},
    {"subarray C 3x4, whole", 12, 0, 0},
    {"subarray C 3x4, rows 1-2", 8, 0, 0},
    {"subarray Fortran 3x4, columns 1-2", 6, 0, 0},
    {"subarray Fortran 3x4, rows 0-1 (gaps)", 8, 0, 0},
    {"darray 4x3 block rows, rank 0 of 2", 6, 0, 0},
    {"darray 6 cyclic, rank 1 of 2", 3, 0, 0},
    {"resized(int, 0, 8): extent larger than the data", 1, 0, 0},
    {"resized(contiguous(2), 0, 4): extent smaller (overlapping)", 2, 1, 0},
    {"resized(contiguous(2), -4, 8): lower bound not the true one", 2, 0, 0},
    {"dup(indexed(4, 1, {3,2,1,0}))", 4, 0, 0},
    {"contiguous(2, indexed(2, {1,1}, {1,0})): nested swaps", 4, 0, 0},
    {"MPI_BOTTOM, struct of 3 ints at absolute addresses in order", 3, 0, 1},
    {"MPI_BOTTOM, struct of 3 ints at absolute addresses reversed", 3, 0, 1},
    {"indexed({1,0,1}, {1,5,0}): reversed around an empty block", 2, 0, 0},
};

static MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

static MPI_Datatype indexed_ones(int n, const int* displs) {
  int lens[8];
  for (int i = 0; i < n; ++i) lens[i] = 1;
  MPI_Datatype t;
  MPI_Type_indexed(n, lens, (int*)displs, MPI_INT, &t);
  return t;
}

/* Case c's type; `at` is where its data starts when it uses absolute addresses. */
static MPI_Datatype make(int c, char* at) {
  MPI_Datatype t, u;
  int one[3] = {1, 1, 1};
  switch (c) {
    case 0: { int d[5] = {4, 3, 2, 1, 0}; return committed(indexed_ones(5, d)); }
    case 1: { int d[2] = {1, 0}; return committed(indexed_ones(2, d)); }
    case 2: MPI_Type_contiguous(3, MPI_INT, &t); return committed(t);
    case 3: MPI_Type_vector(3, 1, -1, MPI_INT, &t); return committed(t);
    case 4: MPI_Type_vector(2, 2, 2, MPI_INT, &t); return committed(t);
    case 5: MPI_Type_create_hvector(3, 1, -4, MPI_INT, &t); return committed(t);
    case 6: { MPI_Aint d[3] = {4, 0, 8}; MPI_Type_create_hindexed(3, one, d, MPI_INT, &t); return committed(t); }
    case 7: { int d[3] = {2, 0, 1}; MPI_Type_create_indexed_block(3, 1, d, MPI_INT, &t); return committed(t); }
    case 8: { MPI_Aint d[2] = {8, 0}; MPI_Type_create_hindexed_block(2, 2, d, MPI_INT, &t); return committed(t); }
    case 9: {
      MPI_Aint d[2] = {4, 0};
      MPI_Datatype ts[2] = {MPI_INT, MPI_INT};
      MPI_Type_create_struct(2, one, d, ts, &t);
      return committed(t);
    }
    case 10: {
      int r[3] = {2, 1, 0};
      MPI_Datatype rev = indexed_ones(3, r);
      MPI_Aint d[2] = {0, 4};
      MPI_Datatype ts[2] = {MPI_INT, rev};
      MPI_Type_create_struct(2, one, d, ts, &t);
      MPI_Type_free(&rev);
      return committed(t);
    }
    case 11: {
      MPI_Aint d[2] = {-8, -4};
      MPI_Datatype ts[2] = {MPI_INT, MPI_INT};
      MPI_Type_create_struct(2, one, d, ts, &t);
      return committed(t);
    }
    case 12: { MPI_Aint d[2] = {-4, -8}; MPI_Type_create_hindexed(2, one, d, MPI_INT, &t); return committed(t); }
    case 13: case 14: case 15: case 16: {
      int sizes[2] = {3, 4}, sub[2] = {3, 4}, start[2] = {0, 0}, order = MPI_ORDER_C;
      if (c == 14) sub[0] = 2, start[0] = 1;
      if (c == 15) sub[1] = 2, start[1] = 1, order = MPI_ORDER_FORTRAN;
      if (c == 16) sub[0] = 2, order = MPI_ORDER_FORTRAN; /* rows 0-1 of each column: 2 of every 3 */
      MPI_Type_create_subarray(2, sizes, sub, start, order, MPI_INT, &t);
      return committed(t);
    }
    case 17: {
      int gsizes[2] = {4, 3}, distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_NONE};
      int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, psizes[2] = {2, 1};
      MPI_Type_create_darray(2, 0, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t);
      return committed(t);
    }
    case 18: {
      int gsizes[1] = {6}, distribs[1] = {MPI_DISTRIBUTE_CYCLIC}, dargs[1] = {1}, psizes[1] = {2};
      MPI_Type_create_darray(2, 1, 1, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t);
      return committed(t);
    }
    case 19: MPI_Type_create_resized(MPI_INT, 0, 8, &t); return committed(t);
    case 20: case 21:
      MPI_Type_contiguous(2, MPI_INT, &u);
      if (c == 20) MPI_Type_create_resized(u, 0, 4, &t);
      else MPI_Type_create_resized(u, -4, 8, &t);
      MPI_Type_free(&u);
      return committed(t);
    case 22: {
      int d[4] = {3, 2, 1, 0};
      u = indexed_ones(4, d);
      MPI_Type_dup(u, &t);
      MPI_Type_free(&u);
      return committed(t);
    }
    case 23: {
      int d[2] = {1, 0};
      u = indexed_ones(2, d);
      MPI_Type_contiguous(2, u, &t);
      MPI_Type_free(&u);
      return committed(t);
    }
    case 24: case 25: {
      MPI_Aint d[3];
      MPI_Datatype ts[3] = {MPI_INT, MPI_INT, MPI_INT};
      for (int i = 0; i < 3; ++i) MPI_Get_address(at + 4 * (c == 24 ? i : 2 - i), &d[i]);
      MPI_Type_create_struct(3, one, d, ts, &t);
      return committed(t);
    }
    case 26: {
      int lens[3] = {1, 0, 1}, d[3] = {1, 5, 0};
      MPI_Type_indexed(3, lens, d, MPI_INT, &t);
      return committed(t);
    }
  }
  return MPI_DATATYPE_NULL;
}

/* A buffer of `count` elements of one side's layout: its memory (margins of
 * PAD bytes on both sides) and the pointer and type a call passes. */
typedef struct {
  char* mem;
  size_t size;
  void* buf;
  MPI_Datatype type; /* the case's, or MPI_INT */
  int per_block;     /* elements of type in one rank's block */
} Side;

/* `blocks` blocks of `elements` case elements, in the case's type (`typed`)
 * or as plain MPI_INT; filled with `fill` (this rank's pattern) or 0xEE. */
static void side_make(Side* s, int c, int typed, int elements, int blocks, int fill_call) {
  const int ints = kCases[c].ints;
  MPI_Aint tlb = 0, span;
  if (!typed) {
    s->type = MPI_INT;
    s->per_block = elements * ints;
    span = (MPI_Aint)s->per_block * blocks * 4;
  } else {
    MPI_Datatype shape = make(c, NULL); /* absolute addresses aside, the shape is the same */
    MPI_Aint lb, extent, textent;
    MPI_Type_get_extent(shape, &lb, &extent);
    MPI_Type_get_true_extent(shape, &tlb, &textent);
    MPI_Type_free(&shape);
    s->per_block = elements;
    span = ((MPI_Aint)elements * blocks - 1) * extent + textent;
  }
  s->size = (size_t)span + 2 * PAD;
  s->mem = malloc(s->size);
  if (typed && kCases[c].bottom) {
    s->type = make(c, s->mem + PAD);
    s->buf = MPI_BOTTOM;
  } else {
    if (typed) s->type = make(c, NULL);
    s->buf = s->mem + PAD - tlb;
  }
  for (size_t j = 0; j < s->size; ++j) s->mem[j] = fill_call ? (char)pattern(world_rank, j, fill_call) : (char)0xEE;
}

static void side_free(Side* s) {
  if (s->type != MPI_INT) MPI_Type_free(&s->type);
  free(s->mem);
}

static void compare(const char* coll, int c, int elements, int variant, const Side* got, const Side* want) {
  for (size_t j = 0; j < got->size; ++j)
    if ((unsigned char)got->mem[j] != (unsigned char)want->mem[j]) {
      ++wrong_in_case[c];
      FAIL("%s, %s, %d element(s) a block, variant %d (%s): byte %zu of the receive buffer is 0x%02x, MPI's own "
           "gives 0x%02x",
           coll, kCases[c].name, elements, variant, got->type == MPI_INT ? "plain MPI_INT here" : "the case's type here",
           j, (unsigned char)got->mem[j], (unsigned char)want->mem[j]);
      return;
    }
}

enum { C_BCAST, C_ALLGATHER, C_GATHER, C_SCATTER, C_ALLTOALL, C_ALLGATHERV, C_GATHERV, C_SCATTERV, C_ALLTOALLV,
       C_IBCAST, C_IALLGATHER, NCALLS };
static const char* const kCall[NCALLS] = {"MPI_Bcast", "MPI_Allgather", "MPI_Gather", "MPI_Scatter", "MPI_Alltoall",
                                          "MPI_Allgatherv", "MPI_Gatherv", "MPI_Scatterv", "MPI_Alltoallv",
                                          "MPI_Ibcast", "MPI_Iallgather"};

/* One collective, through MPI_* when `served`, else PMPI_*. A side a rank
 * does not have (a scatter's send side off the root) is NULL, 0, MPI_INT. */
static void call(int which, int served, const Side* send, const Side* recv, int root, int n) {
  void* sbuf = send ? send->buf : NULL;
  void* rbuf = recv ? recv->buf : NULL;
  const int sc = send ? send->per_block : 0, rc = recv ? recv->per_block : 0;
  MPI_Datatype st = send ? send->type : MPI_INT, rt = recv ? recv->type : MPI_INT;
  int counts[64], displs[64], scounts[64], sdispls[64];
  for (int r = 0; r < n; ++r) counts[r] = rc, displs[r] = r * rc, scounts[r] = sc, sdispls[r] = r * sc;
  MPI_Request req;
  const MPI_Comm w = MPI_COMM_WORLD;
  switch (which) {
    case C_BCAST: served ? MPI_Bcast(rbuf, rc, rt, root, w) : PMPI_Bcast(rbuf, rc, rt, root, w); break;
    case C_IBCAST:
      served ? MPI_Ibcast(rbuf, rc, rt, root, w, &req) : PMPI_Ibcast(rbuf, rc, rt, root, w, &req);
      served ? MPI_Wait(&req, MPI_STATUS_IGNORE) : PMPI_Wait(&req, MPI_STATUS_IGNORE);
      break;
    case C_ALLGATHER:
      served ? MPI_Allgather(sbuf, sc, st, rbuf, rc, rt, w) : PMPI_Allgather(sbuf, sc, st, rbuf, rc, rt, w);
      break;
    case C_IALLGATHER:
      served ? MPI_Iallgather(sbuf, sc, st, rbuf, rc, rt, w, &req) : PMPI_Iallgather(sbuf, sc, st, rbuf, rc, rt, w, &req);
      served ? MPI_Wait(&req, MPI_STATUS_IGNORE) : PMPI_Wait(&req, MPI_STATUS_IGNORE);
      break;
    case C_GATHER:
      served ? MPI_Gather(sbuf, sc, st, rbuf, rc, rt, root, w) : PMPI_Gather(sbuf, sc, st, rbuf, rc, rt, root, w);
      break;
    case C_SCATTER:
      served ? MPI_Scatter(sbuf, sc, st, rbuf, rc, rt, root, w) : PMPI_Scatter(sbuf, sc, st, rbuf, rc, rt, root, w);
      break;
    case C_ALLTOALL:
      served ? MPI_Alltoall(sbuf, sc, st, rbuf, rc, rt, w) : PMPI_Alltoall(sbuf, sc, st, rbuf, rc, rt, w);
      break;
    case C_ALLGATHERV:
      served ? MPI_Allgatherv(sbuf, sc, st, rbuf, counts, displs, rt, w)
             : PMPI_Allgatherv(sbuf, sc, st, rbuf, counts, displs, rt, w);
      break;
    case C_GATHERV:
      served ? MPI_Gatherv(sbuf, sc, st, rbuf, counts, displs, rt, root, w)
             : PMPI_Gatherv(sbuf, sc, st, rbuf, counts, displs, rt, root, w);
      break;
    case C_SCATTERV:
      served ? MPI_Scatterv(sbuf, scounts, sdispls, st, rbuf, rc, rt, root, w)
             : PMPI_Scatterv(sbuf, scounts, sdispls, st, rbuf, rc, rt, root, w);
      break;
    case C_ALLTOALLV:
      served ? MPI_Alltoallv(sbuf, scounts, sdispls, st, rbuf, counts, displs, rt, w)
             : PMPI_Alltoallv(sbuf, scounts, sdispls, st, rbuf, counts, displs, rt, w);
      break;
  }
}

/* MPI_Gather's reference where MPI's own is wrong: Open MPI 4.1's binomial
 * gather places a child's block at the parent's send-type extent, so a send
 * type whose extent is smaller than its data (case 20) garbles the blocks a
 * rank forwards (MPICH and railcoll give the bytes MPI_Pack gives). Then the
 * reference is each rank's send side packed by MPI_Pack, gathered as bytes
 * and unpacked at the root by MPI_Unpack. */
static void gather_by_packing(const Side* send, const Side* recv, int root, int n) {
  int size = 0, pos = 0;
  PMPI_Pack_size(send->per_block, send->type, MPI_COMM_SELF, &size);
  char* packed = malloc((size_t)size + 1);
  PMPI_Pack(send->buf, send->per_block, send->type, packed, size, &pos, MPI_COMM_SELF);
  char* all = world_rank == root ? malloc((size_t)pos * n + 1) : NULL;
  PMPI_Gather(packed, pos, MPI_BYTE, all, pos, MPI_BYTE, root, MPI_COMM_WORLD);
  if (world_rank == root) {
    int at = 0;
    PMPI_Unpack(all, pos * n, &at, recv->buf, recv->per_block * n, recv->type, MPI_COMM_SELF);
  }
  free(packed);
  free(all);
}

static int mpi_gather_wrong(int which, int c) {
#ifdef OPEN_MPI
  return which == C_GATHER && c == 20;
#else
  (void)which, (void)c;
  return 0;
#endif
}

/* Case c, `elements` case elements a block, in collective `which`, twice
 * (the library's call, then MPI's own on copies). A rank's send side is the
 * case's type when (rank + variant) is even, its receive side when odd (a
 * case that overlaps in memory only sends); a broadcast's one buffer follows
 * the send side's rule. */
static void one(int which, int c, int elements, int variant, int n) {
  const int me = world_rank, root = (variant * (n - 1)) % n;
  const int typed_send = (me + variant) % 2 == 0;
  const int typed_recv = !typed_send && !kCases[c].send_only;
  int send_blocks = 1, recv_blocks = 1, has_send = 1, has_recv = 1;
  const int bcast = which == C_BCAST || which == C_IBCAST;
  switch (which) {
    case C_BCAST: case C_IBCAST: has_send = 0; break;
    case C_GATHER: case C_GATHERV: recv_blocks = n; has_recv = me == root; break;
    case C_SCATTER: case C_SCATTERV: send_blocks = n; has_send = me == root; break;
    case C_ALLTOALL: case C_ALLTOALLV: send_blocks = recv_blocks = n; break;
    default: recv_blocks = n; break; /* the all-gathers */
  }
  ++calls;
  Side send[2], recv[2];
  for (int k = 0; k < 2; ++k) {
    if (has_send) side_make(&send[k], c, typed_send, elements, send_blocks, calls);
    if (bcast) side_make(&recv[k], c, typed_send && !kCases[c].send_only, elements, 1, me == root ? calls : 0);
    else if (has_recv) side_make(&recv[k], c, typed_recv, elements, recv_blocks, 0);
  }
  if (trace) fprintf(stderr, "rank %d: %s, case %d, %d element(s), variant %d\n", me, kCall[which], c, elements, variant);
  call(which, 1, has_send ? &send[0] : NULL, bcast || has_recv ? &recv[0] : NULL, root, n);
  if (mpi_gather_wrong(which, c)) gather_by_packing(&send[1], has_recv ? &recv[1] : NULL, root, n);
  else call(which, 0, has_send ? &send[1] : NULL, bcast || has_recv ? &recv[1] : NULL, root, n);
  if (bcast || has_recv) compare(kCall[which], c, elements, variant, &recv[0], &recv[1]);
  for (int k = 0; k < 2; ++k) {
    if (has_send) side_free(&send[k]);
    if (bcast || has_recv) side_free(&recv[k]);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int only = -1;
  trace = getenv("MPI_TYPEMAPS_TRACE") != NULL;
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], "--case") && i + 1 < argc) only = atoi(argv[++i]);
  if (n > 64) {
    if (world_rank == 0) fprintf(stderr, "mpi_typemaps: at most 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int c = 0; c < NCASES; ++c) {
    if (only >= 0 && c != only) continue;
    for (int which = 0; which < NCALLS; ++which)
      for (int elements = 1; elements <= 3; ++elements)
        for (int variant = 0; variant < 2; ++variant) one(which, c, elements, variant, n);
  }
  int all = 0;
  PMPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int by_case[NCASES];
  PMPI_Allreduce(wrong_in_case, by_case, NCASES, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int c = 0; c < NCASES && world_rank == 0; ++c)
    if (by_case[c]) printf("case %d, %s: %d wrong calls\n", c, kCases[c].name, by_case[c]);
  if (world_rank == 0) printf("typemaps correct: %d wrong (%d cases, %d calls a rank, each against MPI's own)\n", all,
                              only >= 0 ? 1 : NCASES, calls);
  MPI_Finalize();
  return all ? 1 : 0;
}
