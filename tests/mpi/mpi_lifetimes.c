/* Handle lifetimes (src/mpi/call.hpp, requests.cpp, comms.cpp; docs/mpi.md
 * "Lifetimes"): what a served nonblocking or persistent call needs it holds
 * until it completes, whatever the program frees meanwhile, as MPI says
 * (MPI 4.0 §2.5.1, §5.9.9, §6.12, §7.4.3):
 *   types     MPI_Ibcast into a vector type, MPI_Iallgather from an indexed
 *             type into a vector type, MPI_Igatherv into a resized type, a
 *             persistent MPI_Bcast_init on a vector type started three times:
 *             the types freed right after the call, new types made on their
 *             handles, then the wait: every byte right, no crash;
 *   comm      MPI_Comm_free of a communicator with an MPI_Iallgather and an
 *             MPI_Ibarrier outstanding on it, then the waits: right, and a new
 *             communicator made in its place works;
 *   free      MPI_Request_free of an active MPI_Ibcast: an error (MPI 4.0
 *             §6.12 makes it erroneous; Open MPI and MPICH both refuse it),
 *             the request left as it was, which MPI_Wait then completes;
 *   cancel    MPI_Cancel of an active MPI_Iallgather: an error, the request
 *             left to complete normally, MPI_Test_cancelled false.
 * Every communicator here returns errors (MPI_ERRORS_RETURN).
 *
 *   usage: mpi_lifetimes [--mpi-alone]   exit 0 and "lifetimes correct: 0
 *          wrong" when all hold; --mpi-alone (the test checked on MPI's own
 *          collectives) spares Open MPI two valid programs its 4.1 gets
 *          wrong: `comm` is left out (it crashes in MPI_Waitall after freeing
 *          a communicator with nonblocking collectives outstanding), and the
 *          persistent broadcast's type is freed only after the request (with
 *          it freed first, MPIX_Bcast_init gives wrong data or crashes in
 *          opal_convertor_prepare_for_send) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

/* The persistent broadcast this MPI declares: MPI-4's, or Open MPI 4's extension. */
#if MPI_VERSION >= 4
#define BCAST_INIT MPI_Bcast_init
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define BCAST_INIT MPIX_Bcast_init
#endif
#endif

static int world_rank, world_size, errors;
static int spare_open_mpi; /* --mpi-alone under Open MPI */

/* Types made on the handles MPI may hand out again after a free. */
static void churn_types(MPI_Datatype* made, int n) {
  for (int i = 0; i < n; ++i) {
    MPI_Type_contiguous(i + 2, MPI_SHORT, &made[i]);
    MPI_Type_commit(&made[i]);
  }
}
static void free_types(MPI_Datatype* made, int n) {
  for (int i = 0; i < n; ++i) MPI_Type_free(&made[i]);
}

static void types(void) {
  const int me = world_rank, n = world_size;
  enum { N = 300 };
  MPI_Datatype junk[24];
  /* MPI_Ibcast into every other double */
  double* strided = malloc(sizeof(double) * 2 * N);
  for (int i = 0; i < 2 * N; ++i) strided[i] = me == 0 ? i : -1;
  MPI_Datatype vec;
  MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  MPI_Request req[4];
  MPI_Ibcast(strided, 1, vec, 0, MPI_COMM_WORLD, &req[0]);
  MPI_Type_free(&vec);
  /* MPI_Iallgather from a reversed indexed type into a vector of blocks */
  int lens[4] = {1, 1, 1, 1}, displs[4] = {3, 2, 1, 0}, mine[4];
  for (int i = 0; i < 4; ++i) mine[i] = me * 10 + i;
  MPI_Datatype rev;
  MPI_Type_indexed(4, lens, displs, MPI_INT, &rev);
  MPI_Type_commit(&rev);
  int* gathered = malloc(sizeof(int) * 8 * (size_t)n);
  for (int i = 0; i < 8 * n; ++i) gathered[i] = -5;
  /* each rank's block: 4 ints, every other one (a vector resized to 8 ints) */
  MPI_Datatype block, block_sized;
  MPI_Type_vector(4, 1, 2, MPI_INT, &block);
  MPI_Type_create_resized(block, 0, 8 * sizeof(int), &block_sized);
  MPI_Type_commit(&block_sized);
  MPI_Type_free(&block);
  MPI_Iallgather(mine, 1, rev, gathered, 1, block_sized, MPI_COMM_WORLD, &req[1]);
  MPI_Type_free(&rev);
  MPI_Type_free(&block_sized);
  /* MPI_Igatherv into a resized type (one int, extent 3 ints) */
  int counts[64], at[64];
  for (int r = 0; r < n; ++r) counts[r] = 2, at[r] = 2 * r;
  int gsend[2] = {me, -me}, *grecv = malloc(sizeof(int) * 6 * (size_t)n);
  for (int i = 0; i < 6 * n; ++i) grecv[i] = -9;
  MPI_Datatype spaced;
  MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &spaced);
  MPI_Type_commit(&spaced);
  MPI_Igatherv(gsend, 2, MPI_INT, grecv, counts, at, spaced, n - 1, MPI_COMM_WORLD, &req[2]);
  MPI_Type_free(&spaced);
  churn_types(junk, 24);
  MPI_Status st[3];
  MPI_Waitall(3, req, st);
  free_types(junk, 24);
  for (int i = 0; i < 2 * N; ++i)
    if (strided[i] != (i % 2 == 0 || me == 0 ? i : -1)) {
      FAIL("types: MPI_Ibcast into a freed vector type: double %d is %g", i, strided[i]);
      break;
    }
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 4; ++i)
      if (gathered[8 * r + 2 * i] != r * 10 + (3 - i) || gathered[8 * r + 2 * i + 1] != -5) {
        FAIL("types: MPI_Iallgather of freed types: rank %d's int %d is %d (gap %d)", r, i, gathered[8 * r + 2 * i],
             gathered[8 * r + 2 * i + 1]);
        r = n;
        break;
      }
  if (me == n - 1)
    for (int r = 0; r < n; ++r)
      if (grecv[6 * r] != r || grecv[6 * r + 3] != -r || grecv[6 * r + 1] != -9) {
        FAIL("types: MPI_Igatherv into a freed resized type: rank %d's block is %d %d", r, grecv[6 * r], grecv[6 * r + 3]);
        break;
      }
#ifdef BCAST_INIT
  /* a persistent MPI_Bcast_init on a vector type freed after the init */
  MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  BCAST_INIT(strided, 1, vec, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[3]);
  if (!spare_open_mpi) MPI_Type_free(&vec);
  for (int start = 0; start < 3; ++start) {
    for (int i = 0; i < 2 * N; ++i) strided[i] = me == 0 ? i + start : -1;
    churn_types(junk, 8);
    MPI_Start(&req[3]);
    MPI_Wait(&req[3], MPI_STATUS_IGNORE);
    free_types(junk, 8);
    for (int i = 0; i < 2 * N; ++i)
      if (strided[i] != (i % 2 == 0 || me == 0 ? i + start : -1)) {
        FAIL("types: persistent MPI_Bcast_init on a freed vector type, start %d: double %d is %g", start, i, strided[i]);
        break;
      }
  }
  MPI_Request_free(&req[3]);
  if (spare_open_mpi) MPI_Type_free(&vec);
#endif
  free(strided);
  free(gathered);
  free(grecv);
}

static void comm(void) {
  const int me = world_rank, n = world_size;
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int mine[3] = {me, me + 1, me + 2}, *all = malloc(sizeof(int) * 3 * (size_t)n);
  MPI_Request req[2];
  MPI_Iallgather(mine, 3, MPI_INT, all, 3, MPI_INT, dup, &req[0]);
  MPI_Ibarrier(dup, &req[1]);
  MPI_Comm_free(&dup);
  if (dup != MPI_COMM_NULL) FAIL("comm: MPI_Comm_free left the handle");
  MPI_Status st[2];
  int rc = MPI_Waitall(2, req, st);
  if (rc != MPI_SUCCESS) FAIL("comm: MPI_Waitall after MPI_Comm_free returned %d", rc);
  for (int r = 0; r < n; ++r)
    if (all[3 * r] != r || all[3 * r + 2] != r + 2) {
      FAIL("comm: MPI_Iallgather on a freed communicator: block %d is %d..%d", r, all[3 * r], all[3 * r + 2]);
      break;
    }
  /* a new communicator, perhaps on the same handle */
  MPI_Comm again;
  MPI_Comm_dup(MPI_COMM_WORLD, &again);
  int sum = 0, one = 1;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, again);
  if (sum != n) FAIL("comm: MPI_Allreduce on a communicator made after the free gave %d", sum);
  MPI_Comm_free(&again);
  free(all);
}

static void free_and_cancel(void) {
  const int me = world_rank, n = world_size;
  enum { N = 5000 };
  int* buf = malloc(sizeof(int) * N);
  for (int i = 0; i < N; ++i) buf[i] = me == 0 ? 3 * i : -1;
  MPI_Request req;
  MPI_Ibcast(buf, N, MPI_INT, 0, MPI_COMM_WORLD, &req);
  MPI_Request kept = req;
  int rc = MPI_Request_free(&req);
  int cls = MPI_SUCCESS;
  MPI_Error_class(rc, &cls);
  if (rc == MPI_SUCCESS) FAIL("free: MPI_Request_free of an active MPI_Ibcast succeeded (MPI 4.0 6.12: erroneous)");
  if (req != kept) FAIL("free: MPI_Request_free that failed changed the request");
  if (world_rank == 0) printf("free: MPI_Request_free of an active MPI_Ibcast: error class %d\n", cls);
  if (rc != MPI_SUCCESS) MPI_Wait(&req, MPI_STATUS_IGNORE);
  for (int i = 0; i < N; ++i)
    if (buf[i] != 3 * i) {
      FAIL("free: the MPI_Ibcast after the refused free: int %d is %d", i, buf[i]);
      break;
    }
  int mine = me, *all = malloc(sizeof(int) * (size_t)n);
  MPI_Iallgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &req);
  rc = MPI_Cancel(&req);
  MPI_Error_class(rc, &cls);
  if (rc == MPI_SUCCESS) FAIL("cancel: MPI_Cancel of an active MPI_Iallgather succeeded (MPI 4.0 6.12: erroneous)");
  if (world_rank == 0) printf("cancel: MPI_Cancel of an active MPI_Iallgather: error class %d\n", cls);
  MPI_Status st;
  rc = MPI_Wait(&req, &st);
  int cancelled = -1;
  MPI_Test_cancelled(&st, &cancelled);
  if (rc != MPI_SUCCESS || cancelled != 0 || req != MPI_REQUEST_NULL)
    FAIL("cancel: MPI_Wait after the refused cancel: rc %d, cancelled %d", rc, cancelled);
  for (int r = 0; r < n; ++r)
    if (all[r] != r) {
      FAIL("cancel: the MPI_Iallgather after the refused cancel: block %d is %d", r, all[r]);
      break;
    }
  free(buf);
  free(all);
}

int main(int argc, char** argv) {
  const int mpi_alone = argc > 1 && !strcmp(argv[1], "--mpi-alone");
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (world_size > 64) {
    if (world_rank == 0) fprintf(stderr, "mpi_lifetimes: at most 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
#ifdef OPEN_MPI
  spare_open_mpi = mpi_alone;
#else
  (void)mpi_alone;  /* MPICH's own collectives need no sparing */
#endif
  types();
#ifdef OPEN_MPI
  if (mpi_alone) {
    if (world_rank == 0) printf("comm: left out (Open MPI alone crashes on it)\n");
  } else
#endif
  comm();
  free_and_cancel();
  int all = 0;
  PMPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0) printf("lifetimes correct: %d wrong\n", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
