/* A program built against an installed railcoll (tests/test_install.sh): the
 * header's version agrees with the library's, every algorithm is registered
 * (as many as the installed command lists, RAILCOLL_EXPECT_ALGORITHMS: a
 * static link that dropped one would show), and a one-rank communicator runs
 * every collective. */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "consumer: check failed: %s (%s)\n", #cond, railcoll_last_error()); \
      return 1;                                                       \
    }                                                                 \
  } while (0)

int main(void) {
  char version[32];
  railcoll_comm_t comm;
  int mine = 42, all = 0;
  double x = 1.5, sum = 0;
  snprintf(version, sizeof version, "%d.%d.%d", RAILCOLL_VERSION_MAJOR, RAILCOLL_VERSION_MINOR, RAILCOLL_VERSION_PATCH);
  CHECK(strcmp(railcoll_version(), version) == 0);
  CHECK(strcmp(railcoll_version(), RAILCOLL_VERSION_STRING) == 0);
  const char* want = getenv("RAILCOLL_EXPECT_ALGORITHMS");
  CHECK(want != NULL && railcoll_algorithm_count() == atoi(want));
  CHECK(railcoll_comm_init(&comm) == RAILCOLL_OK);
  CHECK(railcoll_comm_size(comm) == 1);
  CHECK(railcoll_allgather(comm, &mine, &all, sizeof mine, NULL) == RAILCOLL_OK && all == 42);
  CHECK(railcoll_bcast(comm, &mine, sizeof mine, 0, NULL) == RAILCOLL_OK && mine == 42);
  CHECK(railcoll_allreduce(comm, &x, &sum, 1, RAILCOLL_DOUBLE, RAILCOLL_SUM, NULL) == RAILCOLL_OK && sum == 1.5);
  CHECK(railcoll_barrier(comm) == RAILCOLL_OK);
  CHECK(railcoll_verify_allgather("bruck", 9, NULL, 2, 1) == RAILCOLL_OK);
  CHECK(railcoll_comm_destroy(comm) == RAILCOLL_OK);
  printf("consumer: railcoll %s ok\n", railcoll_version());
  return 0;
}
