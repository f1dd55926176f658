/* railcoll-mpi-layer-cost: what reaching railcoll through MPI costs, measured in
 * one program so that both sides see the same rails, the same load and the same
 * pauses. Run with librailcoll_mpi.so preloaded (railcoll cluster mpirun
 * --railcoll). Call by call it alternates
 *   the MPI call (MPI_Allgather, ...: served by the interposition library), and
 *   the same call on a railcoll communicator of its own (railcoll_comm_init_oob
 *   over PMPI_Allgather), straight through the C API,
 * each after a barrier, and prints per size the median of the slowest rank's
 * time of each and their ratio (docs/mpi.md, "What reaching railcoll through
 * MPI costs"). Every call's result is checked once per size.
 *
 * --cpu-us N calibrates the ratio: every rank spends N us of CPU inside each
 * timed C API call, before calling railcoll, as a layer costing N us a call
 * would (on ranks sharing cores, such a microsecond shows several times over
 * in the slowest rank's time). */
#include <mpi.h>
#include <railcoll/railcoll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

typedef enum { ALLGATHER, BCAST, GATHER, ALLREDUCE } Coll;
static const char* kNames[] = {"allgather", "bcast", "gather", "allreduce"};

static int oob_allgather(const void* send, void* recv, size_t bytes, void* context, void** request) {
  (void)context;
  *request = NULL;
  return PMPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* One call of `c` with `bytes` per rank: through MPI (via_mpi) or straight to railcoll. */
static int call(Coll c, int via_mpi, railcoll_comm_t rc, char* send, char* recv, int bytes, int me) {
  switch (c) {
    case ALLGATHER:
      return via_mpi ? MPI_Allgather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD)
                     : (int)railcoll_allgather(rc, send, recv, (size_t)bytes, NULL);
    case BCAST:
      return via_mpi ? MPI_Bcast(me == 0 ? send : recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD)
                     : (int)railcoll_bcast(rc, me == 0 ? send : recv, (size_t)bytes, 0, NULL);
    case GATHER:
      return via_mpi ? MPI_Gather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD)
                     : (int)railcoll_gather(rc, send, recv, (size_t)bytes, 0, NULL);
    case ALLREDUCE:
      return via_mpi ? MPI_Allreduce(send, recv, bytes / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)
                     : (int)railcoll_allreduce(rc, send, recv, (size_t)bytes / 4, RAILCOLL_FLOAT, RAILCOLL_SUM, NULL);
  }
  return -1;
}

/* Whether recv holds what the call should have left there (send: rank r's
 * bytes are r + 1; allreduce: floats 1 each, summed). */
static int correct(Coll c, const char* recv, int bytes, int me, int n) {
  if (c == ALLREDUCE) {
    for (int i = 0; i < bytes / 4; ++i)
      if (((const float*)recv)[i] != (float)n) return 0;
    return 1;
  }
  if (c == BCAST) {
    for (int i = 0; me != 0 && i < bytes; ++i)
      if (recv[i] != 1) return 0;
    return 1;
  }
  if (c == GATHER && me != 0) return 1;
  for (long i = 0; i < (long)bytes * n; ++i)
    if (recv[i] != (char)(i / bytes + 1)) return 0;
  return 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Coll c = ALLGATHER;
  long lo = 4096, hi = 1 << 20, iters = 50, idle_us = 0;
  double cpu_us = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--coll")) {
      for (int k = 0; k < 4; ++k)
        if (!strcmp(argv[i + 1], kNames[k])) c = (Coll)k;
    } else if (!strcmp(argv[i], "-m")) {
      sscanf(argv[i + 1], "%ld:%ld", &lo, &hi);
    } else if (!strcmp(argv[i], "-i")) {
      iters = atol(argv[i + 1]);
    } else if (!strcmp(argv[i], "--idle-us")) {
      idle_us = atol(argv[i + 1]);
    } else if (!strcmp(argv[i], "--cpu-us")) {
      cpu_us = atof(argv[i + 1]);
    } else {
      if (me == 0)
        fprintf(stderr, "usage: %s [--coll allgather|bcast|gather|allreduce] [-m MIN:MAX] [-i N] [--idle-us N] [--cpu-us N]\n",
                argv[0]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (lo < 4 || hi < lo || iters < 1 || (long)n * hi > (1L << 30) || !(cpu_us >= 0 && cpu_us <= 1e6)) {
    if (me == 0) fprintf(stderr, "railcoll-mpi-layer-cost: bad -m, -i or --cpu-us\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  railcoll_oob_t oob = {oob_allgather, NULL, NULL, NULL, me, n, NULL, NULL};
  railcoll_comm_t rc = NULL;
  if (railcoll_comm_init_oob(&rc, &oob) != RAILCOLL_OK) {
    fprintf(stderr, "rank %d: railcoll_comm_init_oob: %s\n", me, railcoll_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char* send = malloc((size_t)hi);
  char* recv = malloc((size_t)hi * n);
  double* t[2] = {malloc(sizeof(double) * iters), malloc(sizeof(double) * iters)};
  double* slowest = malloc(sizeof(double) * iters);
  if (me == 0)
    printf("# %s, %d ranks: the MPI call through librailcoll_mpi.so against railcoll's C API in the same program,\n"
           "# alternating call by call; median over calls of the slowest rank's time, us\n",
           kNames[c], n);
  if (me == 0 && cpu_us > 0) printf("# every C API call spends %.2f us of CPU first (--cpu-us)\n", cpu_us);
  if (me == 0) printf("# %-10s %12s %12s %10s\n", "bytes", "through MPI", "C API", "ratio");
  int wrong = 0;
  for (long bytes = lo; bytes <= hi; bytes *= 2) {
    if (c == ALLREDUCE)
      for (long i = 0; i < bytes / 4; ++i) ((float*)send)[i] = 1.0f;
    else
      memset(send, (char)(me + 1), (size_t)bytes);
    for (long i = 0; i < iters; ++i)
      for (int k = 0; k < 2; ++k) {
        const int via_mpi = (int)((i + k) % 2);  // which goes first alternates too
        if (idle_us) sleep_us((uint64_t)idle_us);
        memset(recv, 0, (size_t)bytes * (c == ALLGATHER || c == GATHER ? n : 1));
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = monotonic_seconds();
        if (!via_mpi)
          while (monotonic_seconds() < t0 + cpu_us * 1e-6) {
          }
        int st = call(c, via_mpi, rc, send, recv, (int)bytes, me);
        t[via_mpi][i] = (monotonic_seconds() - t0) * 1e6;
        if (st != 0 || (i == 0 && !correct(c, recv, (int)bytes, me, n))) wrong = 1;
      }
    double p50[2];
    for (int via_mpi = 0; via_mpi < 2; ++via_mpi) {
      PMPI_Allreduce(t[via_mpi], slowest, (int)iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      qsort(slowest, (size_t)iters, sizeof(double), cmp_double);
      p50[via_mpi] = slowest[iters / 2];
    }
    int any_wrong = 0;
    PMPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0)
      printf("  %-10ld %12.1f %12.1f %10.3f%s\n", bytes, p50[1], p50[0], p50[1] / p50[0],
             any_wrong ? "  WRONG RESULT" : "");
    if (any_wrong) break;
  }
  fflush(stdout);
  railcoll_comm_destroy(rc);
  free(send), free(recv), free(t[0]), free(t[1]), free(slowest);
  MPI_Finalize();
  return wrong;
}
