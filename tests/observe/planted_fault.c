/* One planted fault in a job of real processes (docs/observability.md), for
 * tests/observe/test_planted_cluster.sh: every rank makes three all-gathers of
 * BYTES (default 65536) and the last rank misbehaves in call 3:
 *
 *   none   no fault (a trace of the three calls, RAILCOLL_TRACE)
 *   skip   the victim skips call 3's all-gather and goes on to the program's
 *          next call, a barrier, which is its call 3
 *   sleep  the victim sleeps outside railcoll before call 3, with no progress
 *          thread (calls 1 and 2 are blocking)
 *   size   the victim passes BYTES/2 in call 3
 *   die    the victim exits (without destroying its communicator) before call 3
 *   hold   no rank misbehaves: every rank makes HOLD_FILE.R and waits before
 *          call 3 until HOLD_FILE appears, while the test cuts a rail; call 4
 *          is a barrier
 *
 * Each rank prints "rank R: call C -> <status> after S s: <railcoll's message>"
 * for the call C that failed (or "call 3 -> ok") and exits 1 when one failed,
 * as a program would.
 * The victim sleeps 3 x RAILCOLL_TIMEOUT in sleep. */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nap(double seconds) {
  struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int main(int argc, char** argv) {
  const char* fault = argc > 1 ? argv[1] : "none";
  const size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 10) : 65536;
  const char* timeout_text = getenv("RAILCOLL_TIMEOUT");
  const double timeout = timeout_text ? atof(timeout_text) : 60;
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    fprintf(stderr, "set-up failed: %s\n", railcoll_last_error());
    return 1;
  }
  const int rank = railcoll_comm_rank(comm), size = railcoll_comm_size(comm), victim = size - 1;
  unsigned char* send = malloc(bytes);
  unsigned char* recv = malloc(bytes * size);
  memset(send, rank + 1, bytes);

  /* Calls 1 and 2, every rank alike (a peer's death can fail call 2 already). */
  railcoll_status_t st = RAILCOLL_OK;
  int call = 1;
  double start = 0;
  for (; call <= 2 && st == RAILCOLL_OK; ++call) {
    start = now();
    st = railcoll_allgather(comm, send, recv, bytes, NULL);
  }
  if (st != RAILCOLL_OK) {
    printf("rank %d: call %d -> %s after %.2f s: %s\n", rank, call - 1, railcoll_strerror(st), now() - start,
           railcoll_last_error());
    fflush(stdout);
    railcoll_comm_destroy(comm);
    return 1;
  }

  size_t mine = bytes;
  if (rank == victim) {
    if (strcmp(fault, "die") == 0) {
      fflush(stdout);
      _exit(3);
    }
    if (strcmp(fault, "sleep") == 0) nap(3 * timeout);
    if (strcmp(fault, "size") == 0) mine = bytes / 2;
  }
  if (strcmp(fault, "hold") == 0 && getenv("HOLD_FILE")) {
    char ready[4096];
    snprintf(ready, sizeof ready, "%s.%d", getenv("HOLD_FILE"), rank);
    fclose(fopen(ready, "w"));
    const double until = now() + 60;
    while (access(getenv("HOLD_FILE"), F_OK) != 0 && now() < until) nap(0.02);
  }
  start = now();
  st = rank == victim && strcmp(fault, "skip") == 0 ? railcoll_barrier(comm)
                                                    : railcoll_allgather(comm, send, recv, mine, NULL);
  /* Call 4 with a rail cut: a barrier, so that a rank whose call 3 ended
     waits there, answering probes, rather than leaving. */
  if (st == RAILCOLL_OK && strcmp(fault, "hold") == 0) {
    start = now();
    st = railcoll_barrier(comm);
    if (st != RAILCOLL_OK) {
      printf("rank %d: call 4 -> %s after %.2f s: %s\n", rank, railcoll_strerror(st), now() - start,
             railcoll_last_error());
      fflush(stdout);
      railcoll_comm_destroy(comm);
      return 1;
    }
  }
  if (st == RAILCOLL_OK)
    printf("rank %d: call 3 -> ok\n", rank);
  else
    printf("rank %d: call 3 -> %s after %.2f s: %s\n", rank, railcoll_strerror(st), now() - start,
           railcoll_last_error());
  fflush(stdout);
  railcoll_comm_destroy(comm);
  free(send);
  free(recv);
  return st == RAILCOLL_OK ? 0 : 1;
}
