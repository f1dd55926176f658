/* Preloaded by tests/test_checks.sh in front of librailcoll.so (and of the MPI
 * layer): its railcoll_comm_destroy misbehaves as DESTROY_FAULT says --
 * "abort" (a crash), "hang" (never returns), "error" (returns
 * RAILCOLL_ERR_INTERNAL), "finalize" (a crash, but only inside MPI_Finalize,
 * after an MPI program printed its verdict) -- after the program's calls went
 * right, so the checks of the multi-process tests must fail on their own
 * account (tests/check_lib.sh), not on a missing line. A test tool: nothing
 * ships it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <railcoll/railcoll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int finalizing;

/* Marks MPI_Finalize, then runs the next one (the MPI layer's). Exported by
 * hand: the project builds with hidden visibility, and only railcoll.h's
 * declarations carry theirs. */
__attribute__((visibility("default"))) int MPI_Finalize(void) {
  finalizing = 1;
  int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");
  return next ? next() : 0;
}

railcoll_status_t railcoll_comm_destroy(railcoll_comm_t comm) {
  const char* how = getenv("DESTROY_FAULT");
  if (how && strcmp(how, "hang") == 0)
    for (;;) pause();
  if (how && strcmp(how, "error") == 0) return RAILCOLL_ERR_INTERNAL;
  if (how && strcmp(how, "finalize") == 0 && !finalizing) {
    railcoll_status_t (*next)(railcoll_comm_t) =
        (railcoll_status_t(*)(railcoll_comm_t))dlsym(RTLD_NEXT, "railcoll_comm_destroy");
    return next(comm);
  }
  abort();
}
