/* The smallest railcoll program: every rank contributes its rank number and
 * prints what it gathered. Run it with:
 *   railcoll run -n 4 --ppn 2 --rails 2 -- build/bin/allgather_example */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  railcoll_comm_t comm;
  railcoll_status_t st = railcoll_comm_init(&comm);
  if (st != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s: %s\n", railcoll_strerror(st), railcoll_last_error());
    return 1;
  }
  int rank = railcoll_comm_rank(comm), size = railcoll_comm_size(comm);
  int mine = rank * 10;
  int* all = calloc((size_t)size, sizeof(int));
  st = railcoll_allgather(comm, &mine, all, sizeof mine, NULL);
  if (st != RAILCOLL_OK) {
    fprintf(stderr, "rank %d: railcoll_allgather: %s: %s\n", rank, railcoll_strerror(st), railcoll_last_error());
    return 1;
  }
  printf("rank %d of %d (%d nodes, %d rails, algorithm %s):", rank, size, railcoll_comm_nodes(comm),
         railcoll_comm_rails(comm), railcoll_algorithm_for(comm, "allgather", sizeof mine, NULL));
  for (int i = 0; i < size; ++i) printf(" %d", all[i]);
  printf("\n");
  free(all);
  railcoll_comm_destroy(comm);
  return 0;
}
