/* Progress across both libraries (src/mpi/requests.cpp, docs/mpi.md
 * "Progress"): several nonblocking collectives outstanding at once, some
 * served by railcoll (MPI_Igatherv, MPI_Ibarrier, MPI_Iallgather,
 * MPI_Iscatterv, MPI_Ibcast) and some left to MPI (MPI_Iscan, MPI_Iexscan,
 * MPI_Ialltoallw, MPI_Ireduce with a user-defined operator, and
 * MPI_Isend/MPI_Irecv of 1 MiB around a ring), completed on each rank in its
 * own way -- MPI_Waitall, MPI_Wait one by one forwards, backwards and from
 * the middle, MPI_Waitany, MPI_Waitsome, MPI_Test, MPI_Testall, MPI_Testany,
 * MPI_Testsome -- the way changing from round to round and differing between
 * ranks. A rank that waited inside one library without driving the other
 * would leave a peer waiting in the other for ever.
 *
 * Run it with RAILCOLL_MPI_COLLS naming the served ones
 * (gatherv,barrier,allgather,scatterv,bcast): what the program leaves to MPI
 * stays MPI's whatever else the library learns to serve.
 *
 *   usage: mpi_progress [--rounds N]        the rounds above; exit 0 and
 *                                           "progress correct: 0 wrong" when all are exact
 *          mpi_progress blocking [--rounds N]
 *                                           a served blocking MPI_Allgather (and an
 *                                           MPI_Wait on a served MPI_Ibcast) on a rank whose
 *                                           peer waits in MPI_Recv for its 1 MiB MPI_Isend:
 *                                           the served wait must drive MPI's progress */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int world_rank, errors;

enum { BIG = 1 << 18 }; /* ints: 1 MiB, past every eager limit */

static void user_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

enum { M_WAITALL, M_WAIT_FORWARD, M_WAIT_BACKWARD, M_WAIT_MIDDLE, M_WAITANY, M_WAITSOME, M_TEST, M_TESTALL,
       M_TESTANY, M_TESTSOME, NMETHODS };
static const char* const kMethod[NMETHODS] = {"MPI_Waitall", "MPI_Wait forwards", "MPI_Wait backwards",
                                              "MPI_Wait from the middle", "MPI_Waitany", "MPI_Waitsome", "MPI_Test",
                                              "MPI_Testall", "MPI_Testany", "MPI_Testsome"};

/* Every request of reqs[0..n) complete, by `method`. */
static void complete(int method, int n, MPI_Request* reqs) {
  MPI_Status st[32];
  int idx[32], out, flag, done = 0;
  switch (method) {
    case M_WAITALL: MPI_Waitall(n, reqs, st); break;
    case M_WAIT_FORWARD: for (int i = 0; i < n; ++i) MPI_Wait(&reqs[i], &st[0]); break;
    case M_WAIT_BACKWARD: for (int i = n - 1; i >= 0; --i) MPI_Wait(&reqs[i], &st[0]); break;
    case M_WAIT_MIDDLE: for (int k = 0; k < n; ++k) MPI_Wait(&reqs[(k + n / 2) % n], &st[0]); break;
    case M_WAITANY:
      for (int k = 0; k < n; ++k) {
        MPI_Waitany(n, reqs, &idx[0], &st[0]);
        if (idx[0] == MPI_UNDEFINED) FAIL("MPI_Waitany: MPI_UNDEFINED with %d requests still active", n - k);
      }
      break;
    case M_WAITSOME:
      while (done < n) {
        MPI_Waitsome(n, reqs, &out, idx, st);
        if (out == MPI_UNDEFINED || out == 0) {
          FAIL("MPI_Waitsome: outcount %d with %d requests still active", out, n - done);
          break;
        }
        done += out;
      }
      break;
    case M_TEST:
      for (int i = 0; i < n; ++i)
        for (flag = 0; !flag;) MPI_Test(&reqs[i], &flag, &st[0]);
      break;
    case M_TESTALL: for (flag = 0; !flag;) MPI_Testall(n, reqs, &flag, st); break;
    case M_TESTANY:
      while (done < n) {
        MPI_Testany(n, reqs, &idx[0], &flag, &st[0]);
        if (flag && idx[0] == MPI_UNDEFINED) {
          FAIL("MPI_Testany: MPI_UNDEFINED with %d requests still active", n - done);
          break;
        }
        if (flag) ++done;
      }
      break;
    case M_TESTSOME:
      while (done < n) {
        MPI_Testsome(n, reqs, &out, idx, st);
        if (out == MPI_UNDEFINED) {
          FAIL("MPI_Testsome: MPI_UNDEFINED with %d requests still active", n - done);
          break;
        }
        done += out;
      }
      break;
  }
  for (int i = 0; i < n; ++i)
    if (reqs[i] != MPI_REQUEST_NULL) FAIL("%s left request %d active", kMethod[method], i);
}

/* One round's buffers. */
typedef struct {
  int round, root, n;
  int gv_send[64], gv_counts[64], gv_displs[64], total, *gv_recv;
  int scan_in, scan_out, ex_in, ex_out;
  int *big_out, *big_in;
  int ag_in[2], *ag_out;
  int aw_send[64], aw_recv[64], ones[64], bytes_at[64];
  MPI_Datatype ints[64];
  int red_in[3], red_out[3];
  int sv_send[2080], sv_recv[64];
  int bc[4];
} Round;

static void round_init(Round* r, int round) {
  memset(r, 0, sizeof *r);
  const int me = world_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &r->n);
  const int n = r->n;
  r->round = round;
  r->root = round % n;
  for (int q = 0; q < n; ++q) r->gv_counts[q] = q + 1, r->gv_displs[q] = r->total, r->total += q + 1;
  r->gv_recv = calloc((size_t)r->total, sizeof(int));
  for (int i = 0; i <= me; ++i) r->gv_send[i] = me * 1000 + i + round;
  r->scan_in = me + round, r->scan_out = -1;
  r->ex_in = 2 * me + 1, r->ex_out = -7;
  r->big_out = malloc(sizeof(int) * BIG);
  r->big_in = malloc(sizeof(int) * BIG);
  for (int i = 0; i < BIG; i += 4096) r->big_out[i] = me * 7 + i + round;
  r->ag_in[0] = me, r->ag_in[1] = round;
  r->ag_out = malloc(sizeof(int) * 2 * (size_t)n);
  for (int q = 0; q < n; ++q)
    r->aw_send[q] = me * 100 + q, r->aw_recv[q] = -1, r->ones[q] = 1, r->bytes_at[q] = 4 * q, r->ints[q] = MPI_INT;
  r->red_in[0] = me, r->red_in[1] = 1, r->red_in[2] = round;
  r->red_out[0] = r->red_out[1] = r->red_out[2] = -1;
  for (int i = 0; i < r->total; ++i) r->sv_send[i] = i * 3 + round;
  for (int i = 0; i < 4; ++i) r->bc[i] = me == r->root ? round * 10 + i : -1;
}

/* MPI's own: MPI_Iscan, the ring of 1 MiB, MPI_Iexscan, MPI_Ialltoallw, MPI_Ireduce with a user operator. */
static int post_mpi(Round* r, MPI_Request* reqs, MPI_Op op) {
  const int me = world_rank, n = r->n, right = (me + 1) % n, left = (me + n - 1) % n, tag = 40 + r->round % 7;
  int k = 0;
  MPI_Iscan(&r->scan_in, &r->scan_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[k++]);
  MPI_Irecv(r->big_in, BIG, MPI_INT, left, tag, MPI_COMM_WORLD, &reqs[k++]);
  MPI_Isend(r->big_out, BIG, MPI_INT, right, tag, MPI_COMM_WORLD, &reqs[k++]);
  MPI_Iexscan(&r->ex_in, &r->ex_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[k++]);
  MPI_Ialltoallw(r->aw_send, r->ones, r->bytes_at, r->ints, r->aw_recv, r->ones, r->bytes_at, r->ints, MPI_COMM_WORLD,
                 &reqs[k++]);
  MPI_Ireduce(r->red_in, r->red_out, 3, MPI_INT, op, r->root, MPI_COMM_WORLD, &reqs[k++]);
  return k;
}

/* railcoll's: MPI_Igatherv, MPI_Ibarrier, MPI_Iallgather, MPI_Iscatterv, MPI_Ibcast. */
static int post_served(Round* r, MPI_Request* reqs) {
  const int me = world_rank;
  int k = 0;
  MPI_Igatherv(r->gv_send, me + 1, MPI_INT, r->gv_recv, r->gv_counts, r->gv_displs, MPI_INT, r->root, MPI_COMM_WORLD,
               &reqs[k++]);
  MPI_Ibarrier(MPI_COMM_WORLD, &reqs[k++]);
  MPI_Iallgather(r->ag_in, 2, MPI_INT, r->ag_out, 2, MPI_INT, MPI_COMM_WORLD, &reqs[k++]);
  MPI_Iscatterv(r->sv_send, r->gv_counts, r->gv_displs, MPI_INT, r->sv_recv, me + 1, MPI_INT, r->root, MPI_COMM_WORLD,
                &reqs[k++]);
  MPI_Ibcast(r->bc, 4, MPI_INT, r->root, MPI_COMM_WORLD, &reqs[k++]);
  return k;
}

static void round_check(Round* r, const char* how) {
  const int me = world_rank, n = r->n, round = r->round, left = (me + n - 1) % n;
  if (me == r->root)
    for (int q = 0; q < n; ++q)
      for (int i = 0; i <= q; ++i)
        if (r->gv_recv[r->gv_displs[q] + i] != q * 1000 + i + round) {
          FAIL("round %d (%s): MPI_Igatherv: block %d int %d is %d", round, how, q, i, r->gv_recv[r->gv_displs[q] + i]);
          q = n;
          break;
        }
  int want_scan = 0;
  for (int q = 0; q <= me; ++q) want_scan += q + round;
  if (r->scan_out != want_scan) FAIL("round %d (%s): MPI_Iscan gave %d, expected %d", round, how, r->scan_out, want_scan);
  if (me > 0 && r->ex_out != me * me) FAIL("round %d (%s): MPI_Iexscan gave %d, expected %d", round, how, r->ex_out, me * me);
  for (int i = 0; i < BIG; i += 4096)
    if (r->big_in[i] != left * 7 + i + round) {
      FAIL("round %d (%s): MPI_Irecv of 1 MiB: int %d is %d", round, how, i, r->big_in[i]);
      break;
    }
  for (int q = 0; q < n; ++q)
    if (r->ag_out[2 * q] != q || r->ag_out[2 * q + 1] != round) {
      FAIL("round %d (%s): MPI_Iallgather: block %d is %d %d", round, how, q, r->ag_out[2 * q], r->ag_out[2 * q + 1]);
      break;
    }
  for (int q = 0; q < n; ++q)
    if (r->aw_recv[q] != q * 100 + me) {
      FAIL("round %d (%s): MPI_Ialltoallw: from %d got %d", round, how, q, r->aw_recv[q]);
      break;
    }
  if (me == r->root && (r->red_out[0] != n * (n - 1) / 2 || r->red_out[1] != n || r->red_out[2] != n * round))
    FAIL("round %d (%s): MPI_Ireduce (user operator) gave %d %d %d", round, how, r->red_out[0], r->red_out[1],
         r->red_out[2]);
  for (int i = 0; i <= me; ++i)
    if (r->sv_recv[i] != (r->gv_displs[me] + i) * 3 + round) {
      FAIL("round %d (%s): MPI_Iscatterv: int %d is %d", round, how, i, r->sv_recv[i]);
      break;
    }
  for (int i = 0; i < 4; ++i)
    if (r->bc[i] != round * 10 + i) {
      FAIL("round %d (%s): MPI_Ibcast: int %d is %d", round, how, i, r->bc[i]);
      break;
    }
  free(r->gv_recv);
  free(r->big_out);
  free(r->big_in);
  free(r->ag_out);
}

/* Mixed: MPI's and railcoll's requests posted interleaved, in one array,
 * completed together by `method`. */
static void mixed_round(int round, int method, MPI_Op op) {
  Round r;
  round_init(&r, round);
  MPI_Request a[16], b[16], all[32];
  const int na = post_mpi(&r, a, op), nb = post_served(&r, b);
  int k = 0;
  for (int i = 0; i < na || i < nb; ++i) {  /* interleaved in the array */
    if (i < nb) all[k++] = b[i];
    if (i < na) all[k++] = a[i];
  }
  complete(method, k, all);
  round_check(&r, kMethod[method]);
}

/* Staggered: every rank posts MPI's requests first, then railcoll's (the
 * one order MPI asks for); even ranks post theirs at once and complete
 * railcoll's first, odd ranks complete MPI's before they even post
 * railcoll's. An even rank waiting inside railcoll for an odd rank's
 * collective must keep MPI's going, or the odd rank never gets there
 * (MPI_Iscan forwards through every rank). With `served_first` the other way
 * round: railcoll's posted first, and odd ranks wait for MPI's first. */
static void staggered_round(int round, int m1, int m2, MPI_Op op, int served_first) {
  Round r;
  round_init(&r, round);
  MPI_Request a[16], b[16];
  const int even = world_rank % 2 == 0;
  int na = 0, nb = 0;
  if (served_first) {
    nb = post_served(&r, b);
    na = post_mpi(&r, a, op);
    if (even) complete(m1, nb, b), complete(m2, na, a);
    else complete(m1, na, a), complete(m2, nb, b);
  } else {
    na = post_mpi(&r, a, op);
    if (even) {
      nb = post_served(&r, b);
      complete(m1, nb, b);
      complete(m2, na, a);
    } else {
      complete(m1, na, a);
      nb = post_served(&r, b);
      complete(m2, nb, b);
    }
  }
  char how[96];
  snprintf(how, sizeof how, "staggered%s, %s then %s", served_first ? " served first" : "", kMethod[m1], kMethod[m2]);
  round_check(&r, how);
}

/* A served blocking call, and a served wait, on rank 0 while rank 1 waits
 * inside MPI (MPI_Recv) for rank 0's 1 MiB MPI_Isend, which rank 0's MPI
 * must progress (over TCP, or any transport where the sender pushes). */
static void blocking_round(int round) {
  int me = world_rank, n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int* big = malloc(sizeof(int) * BIG);
  int mine[2] = {me, round}, *all = malloc(sizeof(int) * 2 * (size_t)n);
  int bc[4] = {-1, -1, -1, -1};
  MPI_Request send = MPI_REQUEST_NULL, ib;
  if (me == 0) {
    for (int i = 0; i < BIG; i += 4096) big[i] = i + round;
    for (int i = 0; i < 4; ++i) bc[i] = round + i;
    MPI_Isend(big, BIG, MPI_INT, 1, 7, MPI_COMM_WORLD, &send);
    if (round % 2 == 0) {
      MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD); /* served, blocking */
    } else {
      MPI_Ibcast(bc, 4, MPI_INT, 0, MPI_COMM_WORLD, &ib);
      MPI_Wait(&ib, MPI_STATUS_IGNORE); /* served wait */
    }
    MPI_Wait(&send, MPI_STATUS_IGNORE);
  } else {
    if (me == 1) {
      MPI_Recv(big, BIG, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < BIG; i += 4096)
        if (big[i] != i + round) {
          FAIL("round %d: MPI_Recv of 1 MiB: int %d is %d", round, i, big[i]);
          break;
        }
    }
    if (round % 2 == 0) {
      MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    } else {
      MPI_Ibcast(bc, 4, MPI_INT, 0, MPI_COMM_WORLD, &ib);
      MPI_Wait(&ib, MPI_STATUS_IGNORE);
    }
  }
  if (round % 2 == 0) {
    for (int r = 0; r < n; ++r)
      if (all[2 * r] != r || all[2 * r + 1] != round) {
        FAIL("round %d: MPI_Allgather: block %d is %d %d", round, r, all[2 * r], all[2 * r + 1]);
        break;
      }
  } else {
    for (int i = 0; i < 4; ++i)
      if (bc[i] != round + i) {
        FAIL("round %d: MPI_Ibcast: int %d is %d", round, i, bc[i]);
        break;
      }
  }
  free(big);
  free(all);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int rounds = 30, blocking = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "blocking")) blocking = 1;
  }
  if (n > 64 || n < 2) {
    if (world_rank == 0) fprintf(stderr, "mpi_progress: 2 to 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Op op;
  MPI_Op_create(user_sum, 1, &op);
  for (int round = 0; round < rounds; ++round) {
    const int m1 = (world_rank * 3 + round) % NMETHODS, m2 = (world_rank + 7 * round + 1) % NMETHODS;
    if (blocking) blocking_round(round);
    else if (round % 3 == 0) mixed_round(round, m1, op);
    else staggered_round(round, m1, m2, op, round % 3 == 2);
  }
  MPI_Op_free(&op);
  int all = 0;
  PMPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0)
    printf("progress correct: %d wrong (%s, %d rounds, %d ranks)\n", all,
           blocking ? "served blocking calls beside MPI's pending send" : "outstanding requests of both, mixed and staggered",
           rounds, n);
  MPI_Finalize();
  return all ? 1 : 0;
}
