// The C API (include/railcoll/railcoll.h) over the C++ core.
#include <cstring>
#include <new>
#include <string>

#include "capi/capi_internal.hpp"
#include "core/errors.hpp"
#include "core/status_text.hpp"
#include "core/registry.hpp"
#include "railcoll/railcoll.h"
#include "verify/verifier.hpp"

namespace railcoll::capi {
namespace {
thread_local std::string last_error;
}
railcoll_status_t fail(railcoll_status_t st, const std::string& msg) {
  last_error = msg;
  return st;
}
void clear_error() { last_error.clear(); }
const char* last_error_text() { return last_error.c_str(); }
}  // namespace railcoll::capi

// The internal Status mirrors the public codes one to one.
static_assert(static_cast<int>(railcoll::Status::Arg) == RAILCOLL_ERR_ARG &&
                  static_cast<int>(railcoll::Status::Verify) == RAILCOLL_ERR_VERIFY &&
                  static_cast<int>(railcoll::Status::Timeout) == RAILCOLL_ERR_TIMEOUT &&
                  static_cast<int>(railcoll::Status::Peer) == RAILCOLL_ERR_PEER &&
                  static_cast<int>(railcoll::Status::Mismatch) == RAILCOLL_ERR_MISMATCH &&
                  static_cast<int>(railcoll::Status::Broken) == RAILCOLL_ERR_BROKEN,
              "railcoll::Status and railcoll_status_t disagree");

using railcoll::capi::fail;
using railcoll::capi::guarded;

extern "C" {

const char* railcoll_version(void) { return RAILCOLL_VERSION_STRING; }

const char* railcoll_strerror(railcoll_status_t status) {
  int value;  // a C caller may pass any int: read it as one, not as the enum
  memcpy(&value, &status, sizeof value);
  if (value < 0 || value > static_cast<int>(railcoll::Status::Broken)) return "unknown status code";
  return railcoll::status_text(static_cast<railcoll::Status>(value));
}

const char* railcoll_last_error(void) { return railcoll::capi::last_error_text(); }

int railcoll_algorithm_count(void) { return static_cast<int>(railcoll::all_algorithms().size()); }

railcoll_status_t railcoll_algorithm_name(int index, const char** collective, const char** name) {
  if (index < 0 || index >= railcoll_algorithm_count() || !collective || !name)
    return fail(RAILCOLL_ERR_ARG, "algorithm index out of range or null output pointer");
  *collective = railcoll::collective_name(railcoll::all_algorithms()[index].collective);
  *name = railcoll::all_algorithms()[index].name;
  return RAILCOLL_OK;
}

railcoll_status_t railcoll_verify_allgather(const char* algorithm, int nranks, const int* node_of, int rails,
                                            size_t bytes) {
  return guarded([&]() -> railcoll_status_t {
    if (!algorithm) return fail(RAILCOLL_ERR_ARG, "algorithm is NULL");
    if (nranks < 1) return fail(RAILCOLL_ERR_ARG, "nranks must be at least 1");
    std::vector<int> map(nranks);
    for (int r = 0; r < nranks; ++r) map[r] = node_of ? node_of[r] : r;
    auto topo = railcoll::Topology::from_node_map(map, rails);
    auto s = railcoll::build_schedule(railcoll::Collective::Allgather, algorithm, topo, std::vector<uint64_t>(nranks, bytes), {});
    auto v = railcoll::verify_schedule(s);
    if (!v.ok()) return fail(RAILCOLL_ERR_VERIFY, v.errors[0]);
    return RAILCOLL_OK;
  });
}

}  // extern "C"
