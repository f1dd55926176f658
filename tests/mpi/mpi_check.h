/* What the MPI test programs share: a failure report that stops printing after
 * ten (each program keeps `world_rank` and `errors`), and the byte pattern that
 * differs per rank, call and byte. */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                     \
  do {                                                \
    if (errors++ < 10) {                              \
      fprintf(stderr, "rank %d: FAIL: ", world_rank); \
      fprintf(stderr, __VA_ARGS__);                   \
      fputc('\n', stderr);                            \
    }                                                 \
  } while (0)

static inline unsigned char pattern(int rank, uint64_t j, int call) {
  uint32_t x = (uint32_t)rank * 0x9E3779B1u ^ (uint32_t)call * 0x85EBCA77u ^ (uint32_t)j * 0xC2B2AE3Du;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 13;
  return (unsigned char)x;
}

/* Every collective the library serves, in its report's order (src/mpi/layer.cpp). */
enum {
  ALLGATHER, ALLGATHERV, BCAST, GATHER, ALLREDUCE, BARRIER,
  REDUCE_SCATTER_BLOCK, REDUCE_SCATTER, REDUCE, ALLTOALL, ALLTOALLV, SCATTER, SCATTERV, GATHERV,
  SCAN, EXSCAN, ALLTOALLW,
  NCOLL
};
static const char* const kNames[NCOLL] = {
    "MPI_Allgather",  "MPI_Allgatherv", "MPI_Bcast",   "MPI_Gather",   "MPI_Allreduce",
    "MPI_Barrier",    "MPI_Reduce_scatter_block",      "MPI_Reduce_scatter",
    "MPI_Reduce",     "MPI_Alltoall",   "MPI_Alltoallv", "MPI_Scatter", "MPI_Scatterv", "MPI_Gatherv",
    "MPI_Scan",       "MPI_Exscan",     "MPI_Alltoallw"};
/* RAILCOLL_MPI_COLLS's names of the same. */
static const char* const kEnv[NCOLL] = {"allgather", "allgatherv", "bcast",     "gather",   "allreduce",
                                        "barrier",   "reduce_scatter_block",    "reduce_scatter",
                                        "reduce",    "alltoall",   "alltoallv", "scatter",  "scatterv", "gatherv",
                                        "scan",      "exscan",     "alltoallw"};
/* What the library's report must say: [coll][1] calls railcoll serves, [0] MPI's. */
static long expected[NCOLL][2];

/* The expected report's lines for `rank` appended to text (at most size
 * bytes in all); returns the new length. */
static inline size_t expected_text(int rank, char* text, size_t at, size_t size) {
  for (int c = 0; c < NCOLL; ++c)
    at += (size_t)snprintf(text + at, size - at, "railcoll-mpi-expect: rank %d: %s railcoll=%ld mpi=%ld\n", rank,
                           kNames[c], expected[c][1], expected[c][0]);
  return at;
}

#ifdef MPI_VERSION
/* Every rank's `text` (at most 8 KiB) printed by rank 0 alone, in rank order:
 * a launcher that forwards the ranks' output in pieces (the emulated
 * cluster's) cannot cut one rank's lines with another's. PMPI_Gather: MPI's
 * own, never served nor counted by the library. */
#define RANK0_TEXT 8192
static inline void print_at_rank0(const char* text, int rank, int size) {
  char mine[RANK0_TEXT] = "";
  snprintf(mine, sizeof mine, "%s", text);
  char* all = rank == 0 ? (char*)calloc((size_t)size, RANK0_TEXT) : NULL;
  PMPI_Gather(mine, RANK0_TEXT, MPI_CHAR, all, RANK0_TEXT, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) fputs(all + (size_t)r * RANK0_TEXT, stdout);
    free(all);
  }
  fflush(stdout);
}

/* The expected report of a program that counts every form: `forms`
 * [form][coll][railcoll?], form 0 blocking, 1 nonblocking (MPI_Ixxx), 2
 * persistent (MPI_Xxx_init); blocking lines always, the others' where called;
 * after `head` (a line or ""), printed by rank 0 for every rank. */
static inline void print_expected_forms(long forms[3][NCOLL][2], const char* head, int rank, int size) {
  char text[RANK0_TEXT] = "";
  size_t at = (size_t)snprintf(text, sizeof text, "%s", head);
  for (int form = 0; form < 3; ++form)
    for (int c = 0; c < NCOLL; ++c) {
      const long* e = forms[form][c];
      if (form && !e[0] && !e[1]) continue;
      char name[64];
      if (form == 1) snprintf(name, sizeof name, "MPI_I%c%s", kNames[c][4] + 32, kNames[c] + 5);
      else snprintf(name, sizeof name, "%s%s", kNames[c], form == 2 ? "_init" : "");
      at += (size_t)snprintf(text + at, sizeof text - at, "railcoll-mpi-expect: rank %d: %s railcoll=%ld mpi=%ld\n",
                             rank, name, e[1], e[0]);
    }
  print_at_rank0(text, rank, size);
}

/* The expected report (tests/mpi/test_mpi_layer.sh compares it with the
 * library's), printed by rank 0 for every rank: stdio flushes a pipe in 4 KiB
 * pieces, so each rank's own fputs could be cut mid-line by another's on the
 * emulated cluster (it was: a lone "mpi=0" line failed mpi_layer_cluster). */
static inline void print_expected(int rank) {
  char text[4096] = "";
  int size = 0;
  expected_text(rank, text, 0, sizeof text);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  fflush(stdout);
  print_at_rank0(text, rank, size);
}
#endif
