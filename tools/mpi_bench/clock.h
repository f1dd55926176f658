/* The clock and the pause both MPI benchmarks use (railcoll-mpi-bench,
 * railcoll-mpi-layer-cost). */
#pragma once
#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps `us` microseconds, through signals. */
static inline void sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
