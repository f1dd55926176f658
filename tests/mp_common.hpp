// What the multi-process test programs (mp_collectives, mp_more_collectives,
// ...) share: the calling rank for messages, a failure macro, the byte pattern
// of (rank, call, index), the registered algorithms of a collective, and the
// report a rank prints only once its communicators are destroyed.
#pragma once
#include <railcoll/railcoll.h>

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

namespace mp {

inline int rank = -1;  // this process's rank, for messages

// The byte rank `r` contributes at index i in call `call`: differs with each of
// the three, so a misplaced, stale or foreign byte shows.
inline unsigned char pattern(int r, int call, size_t i) {
  return static_cast<unsigned char>((r * 131 + call * 31 + i * 7 + (i >> 8)) & 0xff);
}

// The algorithms of `collective` by name, then "auto"; empty if it has none.
// Not the hardware ones (hw_multicast, hw_combining): the runtime has no such
// hardware and refuses them (docs/selection.md).
inline std::vector<std::string> algorithms(const std::string& collective) {
  std::vector<std::string> v;
  for (int i = 0; i < railcoll_algorithm_count(); ++i) {
    const char *coll, *name;
    railcoll_algorithm_name(i, &coll, &name);
    if (collective == coll && std::string(name).rfind("hw_", 0) != 0) v.push_back(name);
  }
  if (!v.empty()) v.push_back("auto");
  return v;
}

// What a rank reports on stdout (the lines the test scripts count) is held
// back until its communicators are destroyed: a crash or a hang at destroy
// must fail the check that counts them (tests/check_lib.sh), not follow them.
inline std::string report;
__attribute__((format(printf, 1, 2))) inline void say(const char* format, ...) {
  char line[4096];
  va_list ap;
  va_start(ap, format);
  vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  report += line;
}
// Destroys `comm` (null: the mode destroyed its own), then prints the report;
// returns the exit status (a failed destroy fails the rank).
inline int finish(railcoll_comm_t comm, int rc) {
  if (comm) {
    railcoll_status_t st = railcoll_comm_destroy(comm);
    if (st != RAILCOLL_OK) {
      fprintf(stderr, "rank %d: railcoll_comm_destroy: %s: %s\n", rank, railcoll_strerror(st), railcoll_last_error());
      if (rc == 0) rc = 1;
    }
  }
  fputs(report.c_str(), stdout);
  fflush(stdout);
  return rc;
}

}  // namespace mp

// Reports a failure of this rank on stderr, in one write so that the lines of
// ranks failing together do not interleave, and returns 1 from the caller.
#define FAIL(...)                                                         \
  do {                                                                    \
    char what_[1024];                                                     \
    snprintf(what_, sizeof what_, __VA_ARGS__);                           \
    fprintf(stderr, "rank %d: %s\n", mp::rank, what_);                    \
    return 1;                                                             \
  } while (0)
