/* railcoll-mpi-layout-cost: what a non-contiguous layout costs a collective,
 * measured in one program so both layouts see the same rails, load and pauses.
 * Call by call it alternates the same MPI call on
 *   N contiguous doubles, and
 *   the same N doubles laid out every other one (MPI_Type_vector(N, 1, 2)),
 * each after a barrier, and prints per size the median of the slowest rank's
 * time of each and their ratio. Run it plainly (MPI packs the vector its own
 * way) and with librailcoll_mpi.so preloaded (the library packs it into a
 * staging buffer, railcoll moves it, the receivers unpack): the two ratios
 * are the packing cost of each (docs/mpi.md, "Datatypes"). Every call's
 * result is checked once per size.
 *
 *   usage: railcoll-mpi-layout-cost [--coll allgather|bcast|gather] [-m MIN:MAX] [-i ITERS] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

typedef enum { ALLGATHER, BCAST, GATHER } Coll;
static const char* kNames[] = {"allgather", "bcast", "gather"};

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* `n` doubles of rank `me` in `t` (contiguous: 1 element of `t` holds them all). */
static void call(Coll c, MPI_Datatype t, double* send, double* recv, int me, int nranks, int n) {
  (void)nranks;
  (void)n;
  switch (c) {
    case ALLGATHER: MPI_Allgather(send, 1, t, recv, 1, t, MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(me == 0 ? send : recv, 1, t, 0, MPI_COMM_WORLD); break;
    case GATHER: MPI_Gather(send, 1, t, recv, 1, t, 0, MPI_COMM_WORLD); break;
  }
}

/* Value j of rank r's data, wherever the layout puts it. */
static double value(int r, int j) { return r * 1e6 + j; }

static int check(Coll c, MPI_Datatype t, int stride, const double* recv, int me, int nranks, int n) {
  MPI_Aint lb, extent;
  MPI_Type_get_extent(t, &lb, &extent);
  const int blocks = c == BCAST ? 1 : nranks;
  if (c == GATHER && me != 0) return 1;
  for (int b = 0; b < blocks; ++b) {
    const double* at = (const double*)((const char*)recv + (MPI_Aint)b * extent);
    for (int j = 0; j < n; ++j)
      if (at[(size_t)j * stride] != value(c == BCAST ? 0 : b, j)) return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Coll coll = ALLGATHER;
  long lo = 8, hi = 1 << 20;
  int iters = 100;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
      ++i;
      coll = !strcmp(argv[i], "bcast") ? BCAST : !strcmp(argv[i], "gather") ? GATHER : ALLGATHER;
    } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
      sscanf(argv[++i], "%ld:%ld", &lo, &hi);
    } else if (!strcmp(argv[i], "-i") && i + 1 < argc) {
      iters = atoi(argv[++i]);
    } else {
      if (me == 0) fprintf(stderr, "usage: railcoll-mpi-layout-cost [--coll allgather|bcast|gather] [-m MIN:MAX] [-i N]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (lo < 8) lo = 8;
  if (me == 0)
    printf("# %s, %d ranks: median of the slowest rank (us), contiguous doubles vs every other double (vector)\n"
           "# %10s %12s %12s %8s\n",
           kNames[coll], nranks, "bytes", "contiguous", "vector", "ratio");
  int wrong = 0;
  double* t_contig = malloc(sizeof(double) * (size_t)iters);
  double* t_vector = malloc(sizeof(double) * (size_t)iters);
  for (long bytes = lo; bytes <= hi; bytes *= 4) {
    const int n = (int)(bytes / 8);
    MPI_Datatype contig, vector;
    MPI_Type_contiguous(n, MPI_DOUBLE, &contig);
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &vector);
    MPI_Type_commit(&contig);
    MPI_Type_commit(&vector);
    /* Room for every rank's block in the widest layout. */
    double* send = malloc(sizeof(double) * 2 * (size_t)n);
    double* recv = malloc(sizeof(double) * 2 * (size_t)n * (size_t)nranks);
    for (int round = 0; round < iters + 1; ++round)
      for (int layout = 0; layout < 2; ++layout) {
        const MPI_Datatype t = layout ? vector : contig;
        const int stride = layout ? 2 : 1;
        for (int j = 0; j < n; ++j) send[(size_t)j * stride] = value(me, j);
        memset(recv, 0, sizeof(double) * 2 * (size_t)n * (size_t)nranks);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = monotonic_seconds();
        call(coll, t, send, recv, me, nranks, n);
        double mine = monotonic_seconds() - t0, slowest = 0;
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (round == 0) wrong += !check(coll, t, stride, recv, me, nranks, n);
        else (layout ? t_vector : t_contig)[round - 1] = slowest * 1e6;
      }
    qsort(t_contig, (size_t)iters, sizeof(double), cmp_double);
    qsort(t_vector, (size_t)iters, sizeof(double), cmp_double);
    if (me == 0)
      printf("  %10ld %12.1f %12.1f %8.2f\n", bytes, t_contig[iters / 2], t_vector[iters / 2],
             t_vector[iters / 2] / t_contig[iters / 2]);
    free(send);
    free(recv);
    MPI_Type_free(&contig);
    MPI_Type_free(&vector);
  }
  int all_wrong = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) printf("%s\n", all_wrong ? "WRONG results" : "results correct");
  free(t_contig);
  free(t_vector);
  MPI_Finalize();
  return all_wrong != 0;
}
