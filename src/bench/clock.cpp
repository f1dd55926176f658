#include "bench/clock.hpp"

#include <sys/stat.h>
#include <time.h>

#include <fstream>
#include <functional>
#include <string>

namespace railcoll::bench {

double monotonic_us() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

uint64_t clock_identity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat st {};
  uint64_t time_ns = stat("/proc/self/ns/time", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
  return std::hash<std::string>{}(boot) ^ (time_ns * 0x9E3779B97F4A7C15ull);
}

}  // namespace railcoll::bench
