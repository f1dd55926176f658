/* A planted fault through the MPI layer (tests/observe/test_planted_cluster.sh):
 * three MPI_Allgathers of 64 KiB on MPI_COMM_WORLD (MPI_ERRORS_RETURN); the
 * last rank sleeps 3 x RAILCOLL_TIMEOUT before the third. Each rank prints
 * "rank R: call 3 -> class C after S s: <MPI_Error_string's text>" (or "call 3 -> ok"),
 * so the test can check that the user reads railcoll's words naming the rank
 * behind. Exit 1 when call 3 failed on this rank, as a program would. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const char* timeout_text = getenv("RAILCOLL_TIMEOUT");
  const double timeout = timeout_text ? atof(timeout_text) : 60;
  const int count = 16384; /* ints: 64 KiB */
  int* send = malloc(sizeof(int) * count);
  int* recv = malloc(sizeof(int) * count * n);
  for (int i = 0; i < count; ++i) send[i] = me;
  int rc = MPI_SUCCESS;
  double start = 0;
  for (int call = 1; call <= 3; ++call) {
    if (call == 3 && me == n - 1) usleep((useconds_t)(3 * timeout * 1e6));
    start = MPI_Wtime();
    rc = MPI_Allgather(send, count, MPI_INT, recv, count, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS || call == 3) break;
  }
  if (rc == MPI_SUCCESS) {
    printf("rank %d: call 3 -> ok\n", me);
  } else {
    int cls = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    printf("rank %d: call 3 -> class %d after %.2f s: %s\n", me, cls, MPI_Wtime() - start, text);
  }
  fflush(stdout);
  free(send);
  free(recv);
  MPI_Finalize(); /* railcoll's communicator says goodbye: no peer takes this rank's exit for a death */
  return rc == MPI_SUCCESS ? 0 : 1;
}
