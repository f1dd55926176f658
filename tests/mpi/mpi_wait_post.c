/* MPI_THREAD_MULTIPLE with a request waited for on one thread while the next
 * nonblocking collectives are posted on the same communicator by another (MPI
 * lets any thread complete a request; the posts keep one order on every rank
 * because one thread makes them): on each of two communicators a poster
 * thread posts rounds of MPI_Iallreduce, MPI_Iallgather, MPI_Ibcast and
 * MPI_Ibarrier and hands every request to its waiter thread, which completes
 * it with MPI_Wait and checks the result. Four threads, two communicators at
 * once. Every byte checked; rank 0 prints the report the library should give
 * (tests/mpi/test_mpi_layer.sh compares it) and, after MPI_Finalize, the
 * verdict. Run under ThreadSanitizer by `make sanitize`.
 *   usage: mpi_wait_post [--rounds N] */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int world_rank, world_size, errors;
static pthread_mutex_t errors_mutex = PTHREAD_MUTEX_INITIALIZER;
#define FAIL_LOCKED(...)               \
  do {                                 \
    pthread_mutex_lock(&errors_mutex); \
    FAIL(__VA_ARGS__);                 \
    pthread_mutex_unlock(&errors_mutex); \
  } while (0)

enum { KINDS = 4, COUNT = 257 };

/* One posted call: its request and what its buffers must hold once complete. */
struct posted {
  MPI_Request req;
  int kind, round;
  int *in, *out;  /* what it sends, what it receives: MPI's until it completes */
};

struct lane {  /* one communicator: a poster, a waiter and the queue between them */
  MPI_Comm comm;
  int rounds, first;
  struct posted* queue;
  int posted, taken;
  pthread_mutex_t mutex;
  pthread_cond_t more;
};

static int value(int rank, int round, int i) { return rank * 1000003 + round * 7919 + i; }

static void* poster(void* arg) {
  struct lane* l = arg;
  for (int round = 0; round < l->rounds; ++round) {
    for (int kind = 0; kind < KINDS; ++kind) {
      struct posted p = {MPI_REQUEST_NULL, kind, l->first + round, NULL, NULL};
      if (kind < 2) {
        p.in = malloc(sizeof(int) * COUNT);
        for (int i = 0; i < COUNT; ++i) p.in[i] = value(world_rank, p.round, i);
      }
      switch (kind) {
        case 0:
          p.out = malloc(sizeof(int) * COUNT);
          MPI_Iallreduce(p.in, p.out, COUNT, MPI_INT, MPI_SUM, l->comm, &p.req);
          break;
        case 1:
          p.out = malloc(sizeof(int) * COUNT * (size_t)world_size);
          MPI_Iallgather(p.in, COUNT, MPI_INT, p.out, COUNT, MPI_INT, l->comm, &p.req);
          break;
        case 2:  /* rank round % size's values everywhere */
          p.out = calloc(COUNT, sizeof(int));
          if (world_rank == p.round % world_size)
            for (int i = 0; i < COUNT; ++i) p.out[i] = value(world_rank, p.round, i);
          MPI_Ibcast(p.out, COUNT, MPI_INT, p.round % world_size, l->comm, &p.req);
          break;
        default:
          MPI_Ibarrier(l->comm, &p.req);
      }
      pthread_mutex_lock(&l->mutex);
      l->queue[l->posted++] = p;
      pthread_cond_signal(&l->more);
      pthread_mutex_unlock(&l->mutex);
    }
  }
  return NULL;
}

static void check(const struct posted* p) {
  switch (p->kind) {
    case 0:
      for (int i = 0; i < COUNT; ++i) {
        long long want = 0;
        for (int r = 0; r < world_size; ++r) want += value(r, p->round, i);
        if (p->out[i] != (int)want) {
          FAIL_LOCKED("iallreduce round %d: element %d is %d, not %d", p->round, i, p->out[i], (int)want);
          return;
        }
      }
      break;
    case 1:
      for (int r = 0; r < world_size; ++r)
        for (int i = 0; i < COUNT; ++i)
          if (p->out[r * COUNT + i] != value(r, p->round, i)) {
            FAIL_LOCKED("iallgather round %d: rank %d's element %d is wrong", p->round, r, i);
            return;
          }
      break;
    case 2:
      for (int i = 0; i < COUNT; ++i)
        if (p->out[i] != value(p->round % world_size, p->round, i)) {
          FAIL_LOCKED("ibcast round %d: element %d is wrong", p->round, i);
          return;
        }
      break;
  }
}

static void* waiter(void* arg) {
  struct lane* l = arg;
  for (int done = 0; done < l->rounds * KINDS; ++done) {
    pthread_mutex_lock(&l->mutex);
    while (l->taken == l->posted) pthread_cond_wait(&l->more, &l->mutex);
    struct posted p = l->queue[l->taken++];
    pthread_mutex_unlock(&l->mutex);
    if (MPI_Wait(&p.req, MPI_STATUS_IGNORE) != MPI_SUCCESS) FAIL_LOCKED("MPI_Wait failed");
    if (p.req != MPI_REQUEST_NULL) FAIL_LOCKED("MPI_Wait left the request");
    check(&p);
    free(p.in);
    free(p.out);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int rounds = 20, provided;
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (world_rank == 0) fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  struct lane lanes[2];
  pthread_t threads[4];
  for (int c = 0; c < 2; ++c) {
    struct lane* l = &lanes[c];
    MPI_Comm_dup(MPI_COMM_WORLD, &l->comm);
    l->rounds = rounds;
    l->first = c * 100000;
    l->queue = calloc((size_t)(rounds * KINDS), sizeof(struct posted));
    l->posted = l->taken = 0;
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->more, NULL);
  }
  for (int c = 0; c < 2; ++c) {
    pthread_create(&threads[2 * c], NULL, poster, &lanes[c]);
    pthread_create(&threads[2 * c + 1], NULL, waiter, &lanes[c]);
  }
  for (int t = 0; t < 4; ++t) pthread_join(threads[t], NULL);
  for (int c = 0; c < 2; ++c) {
    MPI_Comm_free(&lanes[c].comm);
    free(lanes[c].queue);
  }

  int wrong = 0;
  PMPI_Allreduce(&errors, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  /* MPI's: not counted */
  char text[RANK0_TEXT] = "";
  size_t at = expected_text(world_rank, text, 0, sizeof text);
  const char* names[KINDS] = {"MPI_Iallreduce", "MPI_Iallgather", "MPI_Ibcast", "MPI_Ibarrier"};
  for (int k = 0; k < KINDS; ++k)
    at += (size_t)snprintf(text + at, sizeof text - at, "railcoll-mpi-expect: rank %d: %s railcoll=%d mpi=0\n",
                           world_rank, names[k], 2 * rounds);
  print_at_rank0(text, world_rank, world_size);
  MPI_Finalize();
  /* The verdict after MPI_Finalize: a crash or hang there must fail the test. */
  if (world_rank == 0) printf("wait-post correct: %d wrong\n", wrong);
  return wrong ? 1 : 0;
}
