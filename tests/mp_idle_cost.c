/* What the progress thread costs an idle application (issue 21's closing
 * note): every rank but the last posts a railcoll_ibarrier, then sleeps
 * SECONDS without calling railcoll; the last rank sleeps SECONDS before it
 * posts its own, so the others' requests stay outstanding with no traffic all
 * that time. Each rank's process CPU time (every thread: the progress thread's
 * too) over its sleep is gathered and printed by rank 0, against the last
 * rank's, which has nothing outstanding. Run it as
 *   RAILCOLL_TIMEOUT=120 railcoll run -n 4 --ppn 2 -- build/bin/mp_idle_cost 60
 * and again with RAILCOLL_PROGRESS_THREAD=0 (docs/results.md).
 *   usage: mp_idle_cost SECONDS */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

static int check(railcoll_status_t st, const char* what) {
  if (st == RAILCOLL_OK) return 0;
  fprintf(stderr, "mp_idle_cost: %s: %s: %s\n", what, railcoll_strerror(st), railcoll_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2 || atof(argv[1]) <= 0) {
    fprintf(stderr, "usage: mp_idle_cost SECONDS\n");
    return 2;
  }
  const double seconds = atof(argv[1]);
  railcoll_comm_t comm;
  if (check(railcoll_comm_init(&comm), "railcoll_comm_init")) return 1;
  const int me = railcoll_comm_rank(comm), n = railcoll_comm_size(comm), late = n - 1;
  struct timespec nap = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  /* A nonblocking call first, everywhere, so every rank has its progress
   * thread (if any) before the measured sleep. */
  railcoll_request_t req = RAILCOLL_REQUEST_NULL;
  int bad = check(railcoll_ibarrier(comm, &req), "railcoll_ibarrier") || check(railcoll_wait(&req), "railcoll_wait");
  double used = 0;
  if (!bad && me != late) bad = check(railcoll_ibarrier(comm, &req), "railcoll_ibarrier (outstanding)");
  if (!bad) {
    const double before = cpu_seconds();
    while (nanosleep(&nap, &nap) != 0) {
    }
    used = cpu_seconds() - before;
    if (me == late) bad = check(railcoll_ibarrier(comm, &req), "railcoll_ibarrier (late)");
    if (!bad) bad = check(railcoll_wait(&req), "railcoll_wait (after the sleep)");
  }
  double* all = me == 0 ? calloc((size_t)n, sizeof(double)) : NULL;
  if (!bad) bad = check(railcoll_gather(comm, &used, all, sizeof used, 0, NULL), "railcoll_gather");
  /* Destroyed before the report: a crash or hang there fails the test's check. */
  if (check(railcoll_comm_destroy(comm), "railcoll_comm_destroy")) bad = 1;
  if (me == 0 && !bad) {
    double most = 0, sum = 0;
    for (int r = 0; r < late; ++r) sum += all[r], most = all[r] > most ? all[r] : most;
    printf("CPU seconds over %.0f s of sleep with one ibarrier outstanding: mean %.3f, most %.3f (%d ranks); "
           "the rank with none outstanding: %.3f\n",
           seconds, sum / late, most, late, all[late]);
    for (int r = 0; r < n; ++r) printf("rank %d: %.3f CPU s\n", r, all[r]);
  }
  free(all);
  return bad;
}
