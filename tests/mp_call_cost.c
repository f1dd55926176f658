/* The instructions a call costs, for valgrind's callgrind (docs/runtime.md,
 * "Cost of a call"): CALLS all-gathers of BYTES per rank, all inside the one
 * function measured_calls, so that
 *   railcoll run -n 4 --ppn 2 -- sh -c '[ "$RAILCOLL_RANK" = 0 ] &&
 *     exec valgrind --tool=callgrind --toggle-collect=measured_calls PROG BYTES CALLS ||
 *     exec PROG BYTES CALLS'
 * counts the calls' instructions on rank 0 and nothing of set-up, warm-up
 * (the first calls build and cache the schedule) or the end.
 * FORM is how each all-gather is made (scripts/call_cost.sh compares them):
 *   blocking     railcoll_allgather (default)
 *   nonblocking  railcoll_iallgather + railcoll_wait
 *   persistent   railcoll_start + railcoll_wait of one railcoll_allgather_init
 *                request made before the warm-up: what a start costs, which
 *                should be no plan or buffer work (issue 21's target: at most
 *                the blocking call's instructions)
 *   usage: mp_call_cost BYTES CALLS [ALGORITHM|-] [FORM] */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { BLOCKING, NONBLOCKING, PERSISTENT } Form;

typedef struct {
  railcoll_comm_t comm;
  const char* send;
  char* recv;
  size_t bytes;
  const railcoll_call_opts_t* opts;
  Form form;
  railcoll_request_t persistent; /* PERSISTENT: the one request started again and again */
} Calls;

static int one_call(Calls* c) {
  railcoll_status_t st;
  railcoll_request_t req = RAILCOLL_REQUEST_NULL;
  switch (c->form) {
    case BLOCKING: st = railcoll_allgather(c->comm, c->send, c->recv, c->bytes, c->opts); break;
    case NONBLOCKING:
      st = railcoll_iallgather(c->comm, c->send, c->recv, c->bytes, c->opts, &req);
      if (st == RAILCOLL_OK) st = railcoll_wait(&req);
      break;
    default:
      st = railcoll_start(c->persistent);
      if (st == RAILCOLL_OK) st = railcoll_wait(&c->persistent);
      break;
  }
  if (st != RAILCOLL_OK) fprintf(stderr, "all-gather: %s: %s\n", railcoll_strerror(st), railcoll_last_error());
  return st != RAILCOLL_OK;
}

static int calls_of(Calls* c, int calls) {
  for (int i = 0; i < calls; ++i)
    if (one_call(c)) return 1;
  return 0;
}

__attribute__((noinline)) int measured_calls(Calls* c, int calls) { return calls_of(c, calls); }

int main(int argc, char** argv) {
  static const char* const kForms[] = {"blocking", "nonblocking", "persistent"};
  Form form = BLOCKING;
  if (argc > 4) {
    while (form <= PERSISTENT && strcmp(argv[4], kForms[form])) ++form;
  }
  if (argc < 3 || form > PERSISTENT) {
    fprintf(stderr, "usage: mp_call_cost BYTES CALLS [ALGORITHM|-] [blocking|nonblocking|persistent]\n");
    return 2;
  }
  size_t bytes = strtoul(argv[1], NULL, 10);
  int calls = atoi(argv[2]);
  railcoll_call_opts_t opts = {argc > 3 && strcmp(argv[3], "-") ? argv[3] : NULL, 0};
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s\n", railcoll_last_error());
    return 1;
  }
  int size = railcoll_comm_size(comm);
  char* send = calloc(bytes ? bytes : 1, 1);
  char* recv = calloc(bytes ? bytes * size : 1, 1);
  Calls c = {comm, send, recv, bytes, &opts, form, RAILCOLL_REQUEST_NULL};
  int bad = form == PERSISTENT && railcoll_allgather_init(comm, send, recv, bytes, &opts, &c.persistent) != RAILCOLL_OK;
  bad = bad || calls_of(&c, 10) || measured_calls(&c, calls) || railcoll_barrier(comm) != RAILCOLL_OK;
  if (bad) fprintf(stderr, "mp_call_cost: %s\n", railcoll_last_error());
  if (railcoll_comm_rank(comm) == 0 && !bad)
    printf("%d %s calls of %zu B per rank (%s)\n", calls, kForms[form], bytes,
           railcoll_algorithm_for(comm, "allgather", bytes, &opts));
  if (c.persistent != RAILCOLL_REQUEST_NULL) railcoll_request_free(&c.persistent);
  free(send);
  free(recv);
  railcoll_comm_destroy(comm);
  return bad;
}
