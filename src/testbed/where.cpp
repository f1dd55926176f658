#include "testbed/where.hpp"

#include "core/errors.hpp"
#include "testbed/cluster.hpp"

namespace railcoll::testbed {

namespace {

// Why no cluster can be used here, as the start of a sentence.
std::string why_no_cluster() {
  if (!cluster::is_root()) return "the emulated cluster needs root (network namespaces), and this process is not root";
  std::optional<cluster::Config> cfg;
  try {
    cfg = cluster::load_state();
  } catch (const std::exception& e) {
    return std::string("the emulated cluster's state is unreadable (") + e.what() + "); railcoll cluster down clears it";
  }
  if (!cfg) return "no emulated cluster is up";
  return "the emulated cluster is not healthy (railcoll cluster status says what is wrong; railcoll cluster down "
         "clears it)";
}

}  // namespace

bool cluster_unless_local(bool local) {
  if (local) return false;
  if (cluster::usable()) return true;
  throw InputError(why_no_cluster() +
                   ". Bring one up (as root: railcoll cluster up --nodes 4 --ppn 4 --rails 2 --rate 1gbit; "
                   "railcoll cluster down after) or ask for local processes (--local)");
}

void require_peer(const std::string& program, const std::string& what, const std::string& install) {
  if (cluster::resolve_program(program).empty())
    throw InputError("cannot find " + program + " (" + what + "): " + install);
}

}  // namespace railcoll::testbed
