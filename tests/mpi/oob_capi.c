/* railcoll_comm_init_oob (railcoll.h), the constructor the MPI interposition
 * library makes its communicators with, from C with threads as ranks: the
 * caller's all-gather is slots in memory shared by the threads.
 *   - 4 ranks on 2 nodes with a blocking all-gather (test == NULL), and again
 *     with a non-blocking one: validated all-gather and allreduce, the job key
 *     drawn by rank 0 when none is given;
 *   - 3 ranks of which one never comes: the two others fail with
 *     RAILCOLL_ERR_TIMEOUT after RAILCOLL_TIMEOUT, and every request they
 *     started is released, the last one as incomplete;
 *   - one rank with a job key and others without: every rank fails, naming both;
 *   - bad arguments: RAILCOLL_ERR_ARG before any exchange.
 * Prints one "ok ..." line per case; exit status 0 when all passed. */
#include <pthread.h>
#include <railcoll/railcoll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxRanks = 4, kMaxExchanges = 32, kSlot = 1 << 16 };

typedef struct {
  int size;
  atomic_int arrived[kMaxExchanges];
  char slots[kMaxExchanges][kMaxRanks][kSlot];
} Shared;

typedef struct {
  Shared* shared;
  int rank, exchanges, released, released_incomplete;
  int blocking;            /* test == NULL */
  const char* node;
  const char* job_key;
  railcoll_status_t status;
  char error[512];
} Rank;

typedef struct {
  Rank* rank;
  int exchange;
  void* out;
  size_t bytes;
} Request;

static int test_request(void* request, void* context) {
  Request* q = request;
  Shared* s = q->rank->shared;
  if (atomic_load(&s->arrived[q->exchange]) < s->size) return 0;
  for (int r = 0; r < s->size; ++r) memcpy((char*)q->out + (size_t)r * q->bytes, s->slots[q->exchange][r], q->bytes);
  return 1;
}

static int start_allgather(const void* send, void* recv, size_t bytes, void* context, void** request) {
  Rank* me = context;
  Shared* s = me->shared;
  if (bytes > kSlot || me->exchanges >= kMaxExchanges) return 7;
  Request* q = malloc(sizeof *q);
  *q = (Request){me, me->exchanges++, recv, bytes};
  memcpy(s->slots[q->exchange][me->rank], send, bytes);
  atomic_fetch_add(&s->arrived[q->exchange], 1);
  if (me->blocking) {
    while (!test_request(q, context)) sched_yield();
  }
  *request = q;
  return 0;
}

static void release_request(void* request, int complete, void* context) {
  Rank* me = context;
  me->released++;
  if (!complete) me->released_incomplete++;
  free(request);
}

static void* run_rank(void* arg) {
  Rank* me = arg;
  railcoll_oob_t oob = {start_allgather, me->blocking ? NULL : test_request, release_request, me,
                        me->rank, me->shared->size, me->node, me->job_key};
  railcoll_comm_t comm = NULL;
  me->status = railcoll_comm_init_oob(&comm, &oob);
  if (me->status != RAILCOLL_OK) {
    snprintf(me->error, sizeof me->error, "%s", railcoll_last_error());
    return NULL;
  }
  int n = me->shared->size;
  int mine[3] = {me->rank, me->rank * 10, me->rank * 100}, all[3 * kMaxRanks];
  me->status = railcoll_allgather(comm, mine, all, sizeof mine, NULL);
  for (int r = 0; me->status == RAILCOLL_OK && r < n; ++r)
    if (all[3 * r] != r || all[3 * r + 1] != r * 10 || all[3 * r + 2] != r * 100) me->status = RAILCOLL_ERR_INTERNAL;
  double x = me->rank + 1, sum = 0;
  if (me->status == RAILCOLL_OK) me->status = railcoll_allreduce(comm, &x, &sum, 1, RAILCOLL_DOUBLE, RAILCOLL_SUM, NULL);
  if (me->status == RAILCOLL_OK && sum != n * (n + 1) / 2.0) me->status = RAILCOLL_ERR_INTERNAL;
  if (me->status != RAILCOLL_OK) snprintf(me->error, sizeof me->error, "%s", railcoll_last_error());
  railcoll_comm_destroy(comm);
  return NULL;
}

/* Runs `started` of `size` ranks as threads; returns them in ranks[]. */
static void run_ranks(Rank* ranks, int size, int started, int blocking, const char* const* keys) {
  Shared* s = calloc(1, sizeof *s);
  s->size = size;
  pthread_t threads[kMaxRanks];
  static const char* const nodes[] = {"n0", "n0", "n1", "n1"};
  for (int r = 0; r < started; ++r) {
    ranks[r] = (Rank){s, r, 0, 0, 0, blocking, nodes[r], keys ? keys[r] : NULL, RAILCOLL_OK, ""};
    pthread_create(&threads[r], NULL, run_rank, &ranks[r]);
  }
  for (int r = 0; r < started; ++r) pthread_join(threads[r], NULL);
  free(s);
}

static int failures;
static void verdict(int ok, const char* what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += !ok;
}

int main(void) {
  setenv("RAILCOLL_RAILS", "127.0.0.1,127.0.0.2", 1);
  setenv("RAILCOLL_TIMEOUT", "2", 1);
  unsetenv("RAILCOLL_JOB_KEY");
  Rank ranks[kMaxRanks];

  for (int blocking = 1; blocking >= 0; --blocking) {
    run_ranks(ranks, 4, 4, blocking, NULL);
    int ok = 1;
    for (int r = 0; r < 4; ++r) {
      if (ranks[r].status != RAILCOLL_OK) printf("     rank %d: %s\n", r, ranks[r].error);
      ok = ok && ranks[r].status == RAILCOLL_OK && ranks[r].released == ranks[r].exchanges &&
           !ranks[r].released_incomplete;
    }
    verdict(ok, blocking ? "4 ranks on 2 nodes through a blocking all-gather: all-gather and allreduce exact"
                         : "4 ranks on 2 nodes through a non-blocking all-gather: all-gather and allreduce exact");
  }

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  run_ranks(ranks, 3, 2, 0, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  int ok = seconds < 10;
  for (int r = 0; r < 2; ++r) {
    printf("     rank %d: %s\n", r, ranks[r].error);
    ok = ok && ranks[r].status == RAILCOLL_ERR_TIMEOUT && ranks[r].released == ranks[r].exchanges &&
         ranks[r].released_incomplete == 1;
  }
  verdict(ok, "a rank that never comes: the others time out, every request released");

  const char* keys[] = {"0123456789abcdef", NULL, NULL, NULL};
  run_ranks(ranks, 4, 4, 0, keys);
  ok = 1;
  for (int r = 0; r < 4; ++r)
    ok = ok && ranks[r].status == RAILCOLL_ERR_BOOTSTRAP && strstr(ranks[r].error, "rank 0 has a job key") &&
         strstr(ranks[r].error, "has none");
  printf("     rank 2: %s\n", ranks[2].error);
  verdict(ok, "a job key on one rank only: every rank fails, naming one with and one without");

  railcoll_comm_t comm = NULL;
  railcoll_oob_t bad = {NULL, NULL, NULL, NULL, 0, 2, NULL, NULL};
  int arg1 = railcoll_comm_init_oob(&comm, &bad) == RAILCOLL_ERR_ARG && comm == NULL;
  bad.allgather = start_allgather;
  bad.rank = 2;
  int arg2 = railcoll_comm_init_oob(&comm, &bad) == RAILCOLL_ERR_ARG && strstr(railcoll_last_error(), "rank 2");
  int arg3 = railcoll_comm_init_oob(NULL, &bad) == RAILCOLL_ERR_ARG;
  verdict(arg1 && arg2 && arg3, "no callback, a rank out of range, no output: RAILCOLL_ERR_ARG");
  printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
