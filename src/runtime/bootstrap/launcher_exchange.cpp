#include "runtime/bootstrap/launcher_exchange.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "runtime/bootstrap/auth.hpp"

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

std::unique_ptr<LauncherExchange> launcher_exchange(const Settings& s, double deadline) {
  if (s.given(Setting::Rank) || s.given(Setting::Store) || set("MASTER_ADDR")) return nullptr;
  const std::string offered = launcher_exchange_offered();
  if (offered == "PMIx") return open_pmix(deadline);
  if (offered == "PMI-2") return open_pmi2(deadline);
  return nullptr;
}

Identity launcher_identity(LauncherExchange& x, Settings* s) {
  Identity id = local_identity(*s);
  id.rank = x.rank();
  id.size = x.size();
  id.source = x.name();
  if (!s->given(Setting::Node)) id.node_id = "host:" + x.node();
  if (!s->given(Setting::JobId)) id.job_id = x.job();
  if (!s->given(Setting::JobKey) && id.size > 1) {
    // The launcher's exchange reaches only this job's processes: the secret
    // every data connection proves can travel through it.
    constexpr size_t kKeyHex = 64;
    const std::string mine = to_hex(random_bytes(kKeyHex / 2).data(), kKeyHex / 2);
    std::vector<char> all(kKeyHex * static_cast<size_t>(id.size));
    x.allgather(mine.data(), kKeyHex, all.data());
    s->set(Setting::JobKey, std::string(all.data(), kKeyHex));  // rank 0's
  }
  return id;
}

void* load_client_library(const char* soname, const char* started, const char* package) {
  void* lib = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
  if (!lib)
    throw RuntimeError(Status::Bootstrap, std::string(started) + " but " + soname + " cannot be loaded: " + dlerror() +
                                              " (" + package + ")");
  return lib;
}

void* client_symbol(void* library, const char* soname, const char* name) {
  void* f = dlsym(library, name);
  if (!f) throw RuntimeError(Status::Bootstrap, std::string(soname) + " has no " + name);
  return f;
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
