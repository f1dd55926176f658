/* Failures through the MPI interposition library (docs/mpi.md, "Errors"):
 *
 *   mpi_errors mismatch return|fatal   ranks pass different counts to
 *       MPI_Allgather. return: MPI_ERRORS_RETURN on MPI_COMM_WORLD; every
 *       rank prints "rank R: error returned: class C: STRING" with
 *       MPI_Error_string's text, then the next call's error (the railcoll
 *       communicator is broken). fatal: the default handler ends the job.
 *   mpi_errors nonblocking return|fatal   the same mismatch in an
 *       MPI_Iallgather completed by MPI_Waitall beside an MPI_Isend/MPI_Irecv
 *       pair. return: MPI_Waitall returns MPI_ERR_IN_STATUS, the collective's
 *       status holds railcoll's error ("rank R: error in status: ..."), the
 *       point-to-point ones MPI_SUCCESS and their data; then MPI_Wait on the
 *       next MPI_Ibarrier returns the broken communicator's error. fatal: the
 *       default handler ends the job in MPI_Waitall.
 *   mpi_errors setup                   MPI_ERRORS_RETURN; the first
 *       MPI_Allgather's railcoll set-up fails (the script sets a bad
 *       RAILCOLL_ALLGATHER_ALGO): every rank prints the error, then the same
 *       call again, which MPI serves, checked ("rank R: MPI served it: ok").
 * Exit status 0 when what a mode expects happened (fatal modes do not return). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, n;

static void report(const char* what, int rc) {
  int cls = -1, len = 0;
  char text[MPI_MAX_ERROR_STRING] = "";
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, text, &len);
  printf("rank %d: %s: class %d: %s\n", me, what, cls, text);
  fflush(stdout);
}

static int allgather_ints(int count) {
  int* send = malloc(sizeof(int) * (size_t)(count + 1));
  int* recv = malloc(sizeof(int) * (size_t)(count + 1) * (size_t)n);
  for (int i = 0; i < count; ++i) send[i] = me * 1000 + i;
  int rc = MPI_Allgather(send, count, MPI_INT, recv, count, MPI_INT, MPI_COMM_WORLD);
  int ok = rc == MPI_SUCCESS;
  for (int r = 0; ok && r < n; ++r)
    for (int i = 0; i < count; ++i) ok = ok && recv[r * count + i] == r * 1000 + i;
  free(send);
  free(recv);
  return rc != MPI_SUCCESS ? rc : ok ? MPI_SUCCESS : -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char* mode = argc > 1 ? argv[1] : "";
  int status = 0;
  if (!strcmp(mode, "mismatch")) {
    int fatal = argc > 2 && !strcmp(argv[2], "fatal");
    if (!fatal) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD); /* the railcoll communicator is made here */
    int rc = allgather_ints(4 + me % 2);
    if (rc == MPI_SUCCESS) status = 1, printf("rank %d: mismatched counts were not noticed\n", me);
    else report("error returned", rc);
    rc = MPI_Barrier(MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) status = 1, printf("rank %d: the broken communicator served a barrier\n", me);
    else report("next call", rc);
  } else if (!strcmp(mode, "nonblocking")) {
    int fatal = argc > 2 && !strcmp(argv[2], "fatal");
    if (!fatal) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    const int count = 4 + me % 2;
    int send[5] = {me, me, me, me, me}, recv[5 * 64], out = me * 7, in = -1;
    MPI_Request reqs[3];
    MPI_Status statuses[3];
    MPI_Irecv(&in, 1, MPI_INT, (me + n - 1) % n, 3, MPI_COMM_WORLD, &reqs[0]);
    MPI_Iallgather(send, count, MPI_INT, recv, count, MPI_INT, MPI_COMM_WORLD, &reqs[1]);
    MPI_Isend(&out, 1, MPI_INT, (me + 1) % n, 3, MPI_COMM_WORLD, &reqs[2]);
    int rc = MPI_Waitall(3, reqs, statuses);
    if (rc != MPI_ERR_IN_STATUS) status = 1, printf("rank %d: MPI_Waitall returned %d, not MPI_ERR_IN_STATUS\n", me, rc);
    else report("error in status", statuses[1].MPI_ERROR);
    if (statuses[0].MPI_ERROR != MPI_SUCCESS || statuses[2].MPI_ERROR != MPI_SUCCESS || in != ((me + n - 1) % n) * 7)
      status = 1, printf("rank %d: the point-to-point requests beside it: errors %d %d, received %d\n", me,
                         statuses[0].MPI_ERROR, statuses[2].MPI_ERROR, in);
    if (reqs[0] != MPI_REQUEST_NULL || reqs[1] != MPI_REQUEST_NULL || reqs[2] != MPI_REQUEST_NULL)
      status = 1, printf("rank %d: MPI_Waitall left a request\n", me);
    MPI_Request next;
    rc = MPI_Ibarrier(MPI_COMM_WORLD, &next);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&next, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) status = 1, printf("rank %d: the broken communicator served a barrier\n", me);
    else report("next call", rc);
  } else if (!strcmp(mode, "setup")) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = allgather_ints(3);
    if (rc == MPI_SUCCESS) status = 1, printf("rank %d: the bad setting was not noticed\n", me);
    else report("error returned", rc);
    rc = allgather_ints(3);
    if (rc == MPI_SUCCESS) printf("rank %d: MPI served it: ok\n", me);
    else status = 1, report("MPI failed to serve it", rc);
  } else {
    if (me == 0) fprintf(stderr, "usage: mpi_errors mismatch|nonblocking return|fatal | setup\n");
    status = 2;
  }
  MPI_Finalize();
  return status;
}
