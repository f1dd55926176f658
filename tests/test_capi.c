/* The C header compiles as C99 and the shared library answers. */
#include <railcoll/railcoll.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                  \
    }                                                            \
  } while (0)

int main(void) {
  const char *coll, *name;
  int node_of[16];
  int i;
  char version[32];
  snprintf(version, sizeof version, "%d.%d.%d", RAILCOLL_VERSION_MAJOR, RAILCOLL_VERSION_MINOR, RAILCOLL_VERSION_PATCH);
  CHECK(strcmp(railcoll_version(), version) == 0); /* one version: the header's macros and the library agree */
  CHECK(strcmp(railcoll_version(), RAILCOLL_VERSION_STRING) == 0);
  CHECK(railcoll_algorithm_count() >= 12);
  CHECK(railcoll_algorithm_name(0, &coll, &name) == RAILCOLL_OK);
  CHECK(strcmp(coll, "allgather") == 0);
  CHECK(railcoll_algorithm_name(-1, &coll, &name) == RAILCOLL_ERR_ARG);
  for (i = 0; i < 16; ++i) node_of[i] = i / 4;
  CHECK(railcoll_verify_allgather("smp_bruck", 16, node_of, 2, 4096) == RAILCOLL_OK);
  CHECK(railcoll_verify_allgather("bruck", 9, NULL, 2, 1) == RAILCOLL_OK);
  CHECK(railcoll_verify_allgather("nope", 9, NULL, 2, 1) == RAILCOLL_ERR_ARG);
  CHECK(strstr(railcoll_last_error(), "unknown allgather algorithm 'nope'") != NULL);
  CHECK(railcoll_verify_allgather("bruck", 0, NULL, 2, 1) == RAILCOLL_ERR_ARG);
  CHECK(railcoll_verify_allgather(NULL, 4, NULL, 2, 1) == RAILCOLL_ERR_ARG);
  CHECK(railcoll_verify_allgather("bruck", 4, NULL, 0, 1) == RAILCOLL_ERR_ARG);
  CHECK(strcmp(railcoll_strerror(RAILCOLL_ERR_VERIFY), "schedule failed verification") == 0);
  printf("capi: ok\n");
  return 0;
}
