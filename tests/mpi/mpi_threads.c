/* MPI_THREAD_MULTIPLE through the MPI interposition library (docs/mpi.md,
 * "Threads"): THREADS threads each call collectives on a communicator of
 * their own at the same time -- MPI_Allgather, MPI_Allreduce, MPI_Bcast, an
 * MPI_Allgather into a strided type (the thread's own staging),
 * MPI_Iallgather with MPI_Ialltoall and MPI_Waitall -- and each makes,
 * uses and frees a communicator of its own on the way (railcoll
 * communicators made and destroyed while the other threads' run). Every byte
 * checked; prints the report the library should give (every call railcoll's)
 * and "threads correct: 0 wrong". Run with RAILCOLL_TIMEOUT short: a call
 * that waits for the wrong thread's peer fails in seconds instead of hanging.
 *   usage: mpi_threads [--loops N] */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

#define THREADS 3
static int world_rank, world_size, errors, loops = 30;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long nonblocking[NCOLL][2];

static void count(long table[][2], int coll, int n) {
  pthread_mutex_lock(&lock);
  table[coll][1] += n; /* every communicator here has all ranks: railcoll's */
  pthread_mutex_unlock(&lock);
}
static void failed(int thread, const char* what, int it, long at) {
  pthread_mutex_lock(&lock);
  FAIL("thread %d: %s, loop %d: wrong at %ld", thread, what, it, at);
  pthread_mutex_unlock(&lock);
}

/* One round of collectives on `comm`, seeded by (thread, it). */
static void round_on(MPI_Comm comm, int thread, int it) {
  int me, size;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  const int call = thread * 100000 + it, n = 1 + (it * 131 + thread * 977) % 3000, k = 1 + n / 3;
  unsigned char* mine = malloc((size_t)n);
  unsigned char* all = malloc((size_t)n * size);
  unsigned char* strided = malloc((size_t)2 * n * size);
  unsigned char* to_each = malloc((size_t)n * size);
  unsigned char* from_each = malloc((size_t)n * size);
  unsigned char* all2 = malloc((size_t)n * size);
  int* in = malloc(sizeof(int) * (size_t)k);
  int* out = malloc(sizeof(int) * (size_t)k);
  for (int j = 0; j < n; ++j) mine[j] = pattern(me, (uint64_t)j, call);
  for (int d = 0; d < size; ++d)
    for (int j = 0; j < n; ++j) to_each[d * n + j] = pattern(me * 64 + d, (uint64_t)j, call);
  for (int i = 0; i < k; ++i) in[i] = me * 10 + i + call;

  MPI_Allgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, comm);
  MPI_Allreduce(in, out, k, MPI_INT, MPI_SUM, comm);
  MPI_Datatype every_other;
  MPI_Type_vector(n, 1, 2, MPI_BYTE, &every_other);
  MPI_Type_commit(&every_other);
  memset(strided, 0xEE, (size_t)2 * n * size);
  MPI_Allgather(mine, n, MPI_BYTE, strided, 1, every_other, comm);
  MPI_Request reqs[2];
  MPI_Iallgather(mine, n, MPI_BYTE, all2, n, MPI_BYTE, comm, &reqs[0]);
  MPI_Ialltoall(to_each, n, MPI_BYTE, from_each, n, MPI_BYTE, comm, &reqs[1]);
  MPI_Status statuses[2];
  MPI_Waitall(2, reqs, statuses);
  const int root = it % size;
  unsigned char* b = mine;
  if (me != root) memset(b, 0, (size_t)n);
  else
    for (int j = 0; j < n; ++j) b[j] = pattern(root, (uint64_t)j, call + 1);
  MPI_Bcast(b, n, MPI_BYTE, root, comm);
  count(expected, ALLGATHER, 2), count(expected, ALLREDUCE, 1), count(expected, BCAST, 1);
  count(nonblocking, ALLGATHER, 1), count(nonblocking, ALLTOALL, 1);

  for (int r = 0; r < size; ++r)
    for (int j = 0; j < n; ++j) {
      if (all[r * n + j] != pattern(r, (uint64_t)j, call)) failed(thread, "MPI_Allgather", it, r * n + j), r = size;
      else if (all2[r * n + j] != pattern(r, (uint64_t)j, call)) failed(thread, "MPI_Iallgather", it, r * n + j), r = size;
      else if (strided[r * (2 * n - 1) + 2 * j] != pattern(r, (uint64_t)j, call))
        failed(thread, "MPI_Allgather (strided)", it, r * n + j), r = size;
      else if (from_each[r * n + j] != pattern(r * 64 + me, (uint64_t)j, call))
        failed(thread, "MPI_Ialltoall", it, r * n + j), r = size;
      if (r == size) break;
    }
  for (int i = 0; i < k; ++i)
    if (out[i] != size * (i + call) + 10 * size * (size - 1) / 2) {
      failed(thread, "MPI_Allreduce", it, i);
      break;
    }
  for (int j = 0; j < n; ++j)
    if (b[j] != pattern(root, (uint64_t)j, call + 1)) {
      failed(thread, "MPI_Bcast", it, j);
      break;
    }
  MPI_Type_free(&every_other);
  free(mine), free(all), free(strided), free(to_each), free(from_each), free(all2), free(in), free(out);
}

typedef struct {
  int thread;
  MPI_Comm comm;
} Work;

static void* run(void* arg) {
  Work* w = arg;
  for (int it = 0; it < loops; ++it) {
    round_on(w->comm, w->thread, it);
    if (it % 10 == 5) { /* a communicator of this thread's: made, served, freed while the others run */
      MPI_Comm own;
      MPI_Comm_dup(w->comm, &own);
      round_on(own, w->thread, it + 1000);
      MPI_Comm_free(&own);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--loops") && i + 1 < argc) loops = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: mpi_threads [--loops N]\n");
      return 2;
    }
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (provided != MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "rank %d: MPI_THREAD_MULTIPLE asked, %d provided\n", world_rank, provided);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  Work work[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    work[t].thread = t;
    MPI_Comm_dup(MPI_COMM_WORLD, &work[t].comm);
  }
  double t0 = MPI_Wtime();
  for (int t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, run, &work[t]);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  const double seconds = MPI_Wtime() - t0;
  for (int t = 0; t < THREADS; ++t) MPI_Comm_free(&work[t].comm);

  int wrong = 0;
  MPI_Allreduce(&errors, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  count(expected, ALLREDUCE, 1);
  if (world_rank == 0) {
    printf("threads: %d threads x %d loops of collectives on their own communicators at once, %.2f s\n", THREADS,
           loops, seconds);
  }
  char text[RANK0_TEXT] = "";
  size_t at = expected_text(world_rank, text, 0, sizeof text);
  for (int c = 0; c < NCOLL; ++c)
    if (nonblocking[c][1])
      at += (size_t)snprintf(text + at, sizeof text - at, "railcoll-mpi-expect: rank %d: MPI_I%c%s railcoll=%ld mpi=0\n",
                             world_rank, kNames[c][4] + 32, kNames[c] + 5, nonblocking[c][1]);
  print_at_rank0(text, world_rank, world_size);
  MPI_Finalize();
  /* The verdict after MPI_Finalize: a crash or hang there must fail the test. */
  if (world_rank == 0) printf("threads correct: %d wrong\n", wrong);
  return wrong ? 1 : 0;
}
