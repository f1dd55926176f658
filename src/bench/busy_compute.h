/* The computation both nonblocking benchmarks overlap with a collective
 * (railcoll bench --nonblocking, railcoll-mpi-bench --nonblocking): a real
 * busy loop of dependent floating-point work, the clock read every few hundred
 * operations, and no call into railcoll or MPI, so that only a progress thread
 * (or the network itself) can advance the collective meanwhile. C, so that the
 * MPI program and the bench share it. */
#ifndef RAILCOLL_BENCH_BUSY_COMPUTE_H
#define RAILCOLL_BENCH_BUSY_COMPUTE_H
#include <time.h>

/* Computes for `us` microseconds of CLOCK_MONOTONIC; returns a value that
 * depends on every step, which the caller keeps (a volatile sink) so the
 * compiler cannot drop the work. */
static inline double railcoll_busy_compute(double us) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const double end = (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3 + us;
  double x = 1.0;
  for (;;) {
    /* ~256 dependent multiply-adds (well under a microsecond) between clock reads */
    for (int k = 0; k < 256; ++k) x = x * 0.999999 + 1e-7;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if ((double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3 >= end) return x;
  }
}

#endif
