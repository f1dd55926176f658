/* A railcoll C program as a user starts it under a launcher (srun --mpi=pmix
 * or pmi2, mpirun): railcoll_comm_init() and nothing else, no RAILCOLL_* set.
 * It runs every collective of the C API at a few sizes (0 B, odd, a striped
 * 256 KiB) and roots, checks every byte (integer reductions exactly), and
 * prints "rank R of N (M nodes, K rails): C collectives correct". With an
 * argument EXPECTED_NODES it also checks the node count the launcher gave.
 * Exit 0 when every call was right. */
#include <railcoll/railcoll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, calls;

#define CHECK(cond, ...)                                      \
  do {                                                        \
    if (!(cond)) {                                            \
      fprintf(stderr, "rank %d: FAILED: ", rank);             \
      fprintf(stderr, __VA_ARGS__);                           \
      fprintf(stderr, " (%s)\n", railcoll_last_error());      \
      exit(1);                                                \
    }                                                         \
  } while (0)
#define OK(call, what) CHECK((call) == RAILCOLL_OK, "%s", what)

/* Byte i of rank r's block in call c. */
static unsigned char pattern(int r, int c, size_t i) { return (unsigned char)(r * 131 + c * 17 + i * 7 + 1); }
static void fill(unsigned char* p, int r, int c, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern(r, c, i);
}
static void expect(const unsigned char* p, int r, int c, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i)
    CHECK(p[i] == pattern(r, c, i), "%s: byte %zu of rank %d's block is %u, not %u", what, i, r, p[i], pattern(r, c, i));
}

static void rooted_and_gathers(railcoll_comm_t comm, size_t bytes) {
  unsigned char* mine = malloc(bytes + 1);
  unsigned char* all = malloc(bytes * size + 1);
  const int root = calls % size;
  fill(mine, rank, calls, bytes);
  OK(railcoll_allgather(comm, mine, all, bytes, NULL), "allgather");
  for (int r = 0; r < size; ++r) expect(all + r * bytes, r, calls, bytes, "allgather");
  ++calls;

  fill(mine, root, calls, bytes);
  if (rank != root) memset(mine, 0, bytes);
  OK(railcoll_bcast(comm, mine, bytes, root, NULL), "bcast");
  expect(mine, root, calls, bytes, "bcast");
  ++calls;

  fill(mine, rank, calls, bytes);
  memset(all, 0, bytes * size);
  OK(railcoll_gather(comm, mine, all, bytes, root, NULL), "gather");
  if (rank == root)
    for (int r = 0; r < size; ++r) expect(all + r * bytes, r, calls, bytes, "gather");
  ++calls;

  if (rank == root)
    for (int r = 0; r < size; ++r) fill(all + r * bytes, r, calls, bytes);
  memset(mine, 0, bytes);
  OK(railcoll_scatter(comm, all, mine, bytes, root, NULL), "scatter");
  expect(mine, rank, calls, bytes, "scatter");
  ++calls;

  /* Every rank sends block d (pattern of the pair) to rank d. */
  unsigned char* out = malloc(bytes * size + 1);
  for (int d = 0; d < size; ++d) fill(out + d * bytes, rank * size + d, calls, bytes);
  OK(railcoll_alltoall(comm, out, all, bytes, NULL), "alltoall");
  for (int s = 0; s < size; ++s) expect(all + s * bytes, s * size + rank, calls, bytes, "alltoall");
  ++calls;
  free(out);
  free(mine);
  free(all);
}

static void varying(railcoll_comm_t comm) {
  /* Rank r holds r + 3 bytes. */
  size_t* counts = malloc(sizeof(size_t) * size);
  size_t total = 0;
  for (int r = 0; r < size; ++r) counts[r] = (size_t)r + 3, total += counts[r];
  unsigned char* mine = malloc(counts[rank]);
  unsigned char* all = malloc(total);
  const int root = (calls + 1) % size;
  fill(mine, rank, calls, counts[rank]);
  OK(railcoll_allgatherv(comm, mine, all, counts, NULL, NULL), "allgatherv");
  for (int r = 0, at = 0; r < size; at += (int)counts[r], ++r) expect(all + at, r, calls, counts[r], "allgatherv");
  ++calls;
  fill(mine, rank, calls, counts[rank]);
  memset(all, 0, total);
  OK(railcoll_gatherv(comm, mine, all, counts, NULL, root, NULL), "gatherv");
  if (rank == root)
    for (int r = 0, at = 0; r < size; at += (int)counts[r], ++r) expect(all + at, r, calls, counts[r], "gatherv");
  ++calls;
  if (rank == root)
    for (int r = 0, at = 0; r < size; at += (int)counts[r], ++r) fill(all + at, r, calls, counts[r]);
  memset(mine, 0, counts[rank]);
  OK(railcoll_scatterv(comm, all, counts, NULL, mine, root, NULL), "scatterv");
  expect(mine, rank, calls, counts[rank], "scatterv");
  ++calls;
  /* alltoallv: rank s sends s + d + 1 bytes to rank d. */
  size_t *sc = malloc(sizeof(size_t) * size), *rc = malloc(sizeof(size_t) * size);
  size_t sent = 0, got = 0;
  for (int d = 0; d < size; ++d) sc[d] = (size_t)(rank + d + 1), rc[d] = (size_t)(d + rank + 1), sent += sc[d], got += rc[d];
  unsigned char *out = malloc(sent), *in = malloc(got);
  for (int d = 0, at = 0; d < size; at += (int)sc[d], ++d) fill(out + at, rank * size + d, calls, sc[d]);
  OK(railcoll_alltoallv(comm, out, sc, NULL, in, rc, NULL, NULL), "alltoallv");
  for (int s = 0, at = 0; s < size; at += (int)rc[s], ++s) expect(in + at, s * size + rank, calls, rc[s], "alltoallv");
  ++calls;
  free(sc), free(rc), free(out), free(in), free(counts), free(mine), free(all);
}

static int64_t element(int r, size_t i, int c) { return (int64_t)((r * 37 + i * 11 + c) % 1000) - 400; }

static void reductions(railcoll_comm_t comm, size_t count) {
  int64_t* in = malloc(sizeof(int64_t) * count * size + 8);
  int64_t* out = malloc(sizeof(int64_t) * count * size + 8);
  const int root = (calls + 2) % size;
  for (size_t i = 0; i < count * size; ++i) in[i] = element(rank, i, calls);
  OK(railcoll_allreduce(comm, in, out, count, RAILCOLL_INT64, RAILCOLL_SUM, NULL), "allreduce");
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int r = 0; r < size; ++r) want += element(r, i, calls);
    CHECK(out[i] == want, "allreduce sum: element %zu is %lld, not %lld", i, (long long)out[i], (long long)want);
  }
  OK(railcoll_reduce(comm, in, out, count, RAILCOLL_INT64, RAILCOLL_MAX, root, NULL), "reduce");
  if (rank == root)
    for (size_t i = 0; i < count; ++i) {
      int64_t want = element(0, i, calls);
      for (int r = 1; r < size; ++r) want = element(r, i, calls) > want ? element(r, i, calls) : want;
      CHECK(out[i] == want, "reduce max: element %zu is %lld, not %lld", i, (long long)out[i], (long long)want);
    }
  OK(railcoll_reduce_scatter_block(comm, in, out, count, RAILCOLL_INT64, RAILCOLL_SUM, NULL), "reduce_scatter_block");
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int r = 0; r < size; ++r) want += element(r, rank * count + i, calls);
    CHECK(out[i] == want, "reduce_scatter_block: element %zu is %lld, not %lld", i, (long long)out[i], (long long)want);
  }
  calls += 3;
  free(in);
  free(out);
}

int main(int argc, char** argv) {
  railcoll_comm_t comm;
  railcoll_status_t st = railcoll_comm_init(&comm);
  if (st != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s: %s\n", railcoll_strerror(st), railcoll_last_error());
    return 1;
  }
  rank = railcoll_comm_rank(comm);
  size = railcoll_comm_size(comm);
  const int nodes = railcoll_comm_nodes(comm), rails = railcoll_comm_rails(comm);
  if (argc > 1) CHECK(nodes == atoi(argv[1]), "the job has %d nodes, not %s", nodes, argv[1]);
  const size_t sizes[] = {0, 1, 13, 4096, 256 << 10};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) rooted_and_gathers(comm, sizes[s]);
  varying(comm);
  reductions(comm, 1);
  reductions(comm, 1000);
  OK(railcoll_barrier(comm), "barrier");
  ++calls;
  printf("rank %d of %d (%d nodes, %d rails): %d collectives correct\n", rank, size, nodes, rails, calls);
  railcoll_comm_destroy(comm);
  return 0;
}
