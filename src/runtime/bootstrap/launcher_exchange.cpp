#include "runtime/bootstrap/launcher_exchange.hpp"

#include <cstdlib>
#include <vector>

#include "runtime/auth.hpp"

namespace railcoll::rt {

namespace {

bool set(const char* name) {
  const char* v = getenv(name);
  return v && *v;
}

}  // namespace

std::string launcher_exchange_offered() {
  if (set("PMIX_NAMESPACE") && set("PMIX_RANK")) return "PMIx";
  if (set("PMI_FD") && set("PMI_RANK")) return "PMI-2";
  return "";
}

std::unique_ptr<LauncherExchange> launcher_exchange(double deadline) {
  if (set("RAILCOLL_RANK") || set("RAILCOLL_STORE") || set("MASTER_ADDR")) return nullptr;
  const std::string offered = launcher_exchange_offered();
  if (offered == "PMIx") return open_pmix(deadline);
  if (offered == "PMI-2") return open_pmi2(deadline);
  return nullptr;
}

Bootstrap launcher_settings(LauncherExchange& x, Bootstrap b) {
  b.rank = x.rank();
  b.size = x.size();
  b.source = x.name();
  if (!set("RAILCOLL_NODE")) b.node_id = "host:" + x.node();
  if (b.job_id.empty()) b.job_id = x.job();
  if (b.job_key.empty() && b.size > 1) {
    // The launcher's exchange reaches only this job's processes: the secret
    // every data connection proves can travel through it.
    constexpr size_t kKeyHex = 64;
    const std::string mine = to_hex(random_bytes(kKeyHex / 2).data(), kKeyHex / 2);
    std::vector<char> all(kKeyHex * static_cast<size_t>(b.size));
    x.allgather(mine.data(), kKeyHex, all.data());
    b.job_key.assign(all.data(), kKeyHex);  // rank 0's
  }
  return b;
}

#ifndef RAILCOLL_HAVE_PMIX
std::unique_ptr<LauncherExchange> open_pmix(double) {
  throw RuntimeError(Status::Bootstrap,
                     "a PMIx server started this process (PMIX_NAMESPACE is set), but this railcoll was built without "
                     "PMIx (Debian's libpmix-dev, scripts/install-deps.sh); set RAILCOLL_STORE=host:port instead");
}
#endif
#ifndef RAILCOLL_HAVE_PMI2
std::unique_ptr<LauncherExchange> open_pmi2(double) {
  throw RuntimeError(Status::Bootstrap,
                     "a PMI-2 launcher started this process (PMI_FD is set), but this railcoll was built without "
                     "PMI-2 (Debian's libpmi2-0-dev, scripts/install-deps.sh); set RAILCOLL_STORE=host:port instead");
}
#endif

}  // namespace railcoll::rt
