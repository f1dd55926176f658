/* Communicator handles through the C API, in one process (a communicator of one
 * rank, as a program started without a launcher gets): two alive at once,
 * every call on a destroyed handle a clear RAILCOLL_ERR_ARG (never a crash),
 * railcoll_algorithm_for's string stable across calls and an unknown collective
 * an error, unknown option flags rejected, and a rejected call breaking the
 * communicator (RAILCOLL_ERR_BROKEN next). */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              railcoll_last_error());                                               \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

static int has(const char* text) { return strstr(railcoll_last_error(), text) != NULL; }

int main(void) {
  railcoll_comm_t a, b, c;
  char send[8] = "railcoll", recv[8], first[64];
  const char *name, *again;
  railcoll_call_opts_t bogus_flags = {NULL, 0x10u};

  /* Two communicators from the environment at once, each working. */
  CHECK(railcoll_comm_init(&a) == RAILCOLL_OK);
  CHECK(railcoll_comm_init(&b) == RAILCOLL_OK);
  CHECK(a != b);
  CHECK(railcoll_comm_size(a) == 1 && railcoll_comm_size(b) == 1);
  CHECK(railcoll_allgather(a, send, recv, sizeof send, NULL) == RAILCOLL_OK && memcmp(send, recv, 8) == 0);
  CHECK(railcoll_allgather(b, send, recv, sizeof send, NULL) == RAILCOLL_OK);

  /* railcoll_algorithm_for: the library's own string, unchanged by the next call. */
  name = railcoll_algorithm_for(a, "allgather", 64, NULL);
  CHECK(name != NULL);
  snprintf(first, sizeof first, "%s", name);
  again = railcoll_algorithm_for(a, "bcast", 1 << 20, NULL);
  CHECK(again != NULL);
  CHECK(strcmp(name, first) == 0);
  CHECK(railcoll_algorithm_for(a, "allreduce", 4096, NULL) != NULL);
  CHECK(strcmp(name, first) == 0);
  CHECK(railcoll_algorithm_for(a, "allgatherv", 64, NULL) == NULL && has("unknown collective 'allgatherv'"));
  CHECK(railcoll_algorithm_for(a, "goal", 64, NULL) == NULL && has("unknown collective 'goal'"));
  CHECK(railcoll_algorithm_for(a, NULL, 64, NULL) == NULL && has("collective is NULL"));
  CHECK(railcoll_algorithm_for(NULL, "allgather", 64, NULL) == NULL && has("communicator is NULL"));

  /* Unknown option flags are rejected, and a rejected call breaks the communicator. */
  CHECK(railcoll_allgather(b, send, recv, sizeof send, &bogus_flags) == RAILCOLL_ERR_ARG);
  CHECK(has("unknown option flags 0x10"));
  CHECK(railcoll_barrier(b) == RAILCOLL_ERR_BROKEN && has("railcoll_allgather failed before it began"));
  CHECK(railcoll_comm_destroy(b) == RAILCOLL_OK);
  CHECK(railcoll_allgather(a, send, recv, sizeof send, NULL) == RAILCOLL_OK); /* a is not touched */

  /* Every call on a destroyed handle: RAILCOLL_ERR_ARG (or -1, or NULL) saying so. */
  CHECK(railcoll_comm_destroy(a) == RAILCOLL_OK);
  CHECK(railcoll_allgather(a, send, recv, sizeof send, NULL) == RAILCOLL_ERR_ARG && has("was destroyed"));
  CHECK(railcoll_allgatherv(a, send, recv, NULL, NULL, NULL) == RAILCOLL_ERR_ARG && has("was destroyed"));
  CHECK(railcoll_barrier(a) == RAILCOLL_ERR_ARG && has("was destroyed"));
  CHECK(railcoll_bcast(a, recv, 8, 0, NULL) == RAILCOLL_ERR_ARG && has("was destroyed"));
  CHECK(railcoll_gather(a, send, recv, 8, 0, NULL) == RAILCOLL_ERR_ARG && has("was destroyed"));
  CHECK(railcoll_allreduce(a, send, recv, 2, RAILCOLL_INT32, RAILCOLL_SUM, NULL) == RAILCOLL_ERR_ARG);
  CHECK(railcoll_comm_rank(a) == -1 && has("was destroyed"));
  CHECK(railcoll_comm_size(a) == -1 && railcoll_comm_nodes(a) == -1 && railcoll_comm_rails(a) == -1);
  CHECK(railcoll_comm_rails_up(a) == -1);
  CHECK(railcoll_algorithm_for(a, "allgather", 8, NULL) == NULL && has("was destroyed"));
  CHECK(railcoll_comm_destroy(a) == RAILCOLL_ERR_ARG && has("was destroyed"));
  CHECK(railcoll_comm_destroy(NULL) == RAILCOLL_ERR_ARG && has("communicator is NULL"));
  CHECK(railcoll_comm_init(NULL) == RAILCOLL_ERR_ARG);

  /* A new communicator after those works, and does not revive the old handles. */
  CHECK(railcoll_comm_init(&c) == RAILCOLL_OK);
  CHECK(railcoll_barrier(c) == RAILCOLL_OK);
  CHECK(railcoll_barrier(a) == RAILCOLL_ERR_ARG && railcoll_barrier(b) == RAILCOLL_ERR_ARG);
  CHECK(railcoll_comm_destroy(c) == RAILCOLL_OK);
  printf("capi communicators: ok\n");
  return 0;
}
