/* The instructions a call costs, for valgrind's callgrind (docs/runtime.md,
 * "Cost of a call"): CALLS all-gathers of BYTES per rank, all inside the one
 * function measured_calls, so that
 *   railcoll run -n 4 --ppn 2 -- sh -c '[ "$RAILCOLL_RANK" = 0 ] &&
 *     exec valgrind --tool=callgrind --toggle-collect=measured_calls PROG BYTES CALLS ||
 *     exec PROG BYTES CALLS'
 * counts the calls' instructions on rank 0 and nothing of set-up, warm-up
 * (the first calls build and cache the schedule) or the end.
 *   usage: mp_call_cost BYTES CALLS [ALGORITHM] */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <stdlib.h>

static int calls_of(railcoll_comm_t comm, const char* send, char* recv, size_t bytes, int calls,
                    const railcoll_call_opts_t* opts) {
  for (int i = 0; i < calls; ++i) {
    railcoll_status_t st = railcoll_allgather(comm, send, recv, bytes, opts);
    if (st != RAILCOLL_OK) {
      fprintf(stderr, "railcoll_allgather: %s: %s\n", railcoll_strerror(st), railcoll_last_error());
      return 1;
    }
  }
  return 0;
}

__attribute__((noinline)) int measured_calls(railcoll_comm_t comm, const char* send, char* recv, size_t bytes,
                                             int calls, const railcoll_call_opts_t* opts) {
  return calls_of(comm, send, recv, bytes, calls, opts);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: mp_call_cost BYTES CALLS [ALGORITHM]\n");
    return 2;
  }
  size_t bytes = strtoul(argv[1], NULL, 10);
  int calls = atoi(argv[2]);
  railcoll_call_opts_t opts = {argc > 3 ? argv[3] : NULL, 0};
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s\n", railcoll_last_error());
    return 1;
  }
  int size = railcoll_comm_size(comm);
  char* send = calloc(bytes ? bytes : 1, 1);
  char* recv = calloc(bytes ? bytes * size : 1, 1);
  int bad = calls_of(comm, send, recv, bytes, 10, &opts) || measured_calls(comm, send, recv, bytes, calls, &opts) ||
            railcoll_barrier(comm) != RAILCOLL_OK;
  if (railcoll_comm_rank(comm) == 0 && !bad)
    printf("%d calls of %zu B per rank (%s)\n", calls, bytes,
           railcoll_algorithm_for(comm, "allgather", bytes, &opts));
  free(send);
  free(recv);
  railcoll_comm_destroy(comm);
  return bad;
}
