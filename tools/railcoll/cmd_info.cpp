// railcoll info [--rails SPEC] [--provider NAME]: what this machine offers the
// runtime: the rails' addresses, the transport RAILCOLL_TRANSPORT chooses, and
// per rail the libfabric provider, fabric and domain the ofi transport would
// open there (docs/fabrics.md: what to check first on EFA, InfiniBand, Slingshot).
#include <cstdlib>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "runtime/net.hpp"
#ifdef RAILCOLL_HAVE_OFI
#include <rdma/fabric.h>

#include "runtime/transport/ofi/ofi_rail.hpp"
#endif

namespace railcoll::cli {

int cmd_info(const std::vector<std::string>& argv) {
  Args a(argv, {}, {"rails", "provider"});
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  const char* env_rails = getenv("RAILCOLL_RAILS");
  const char* env_provider = getenv("RAILCOLL_OFI_PROVIDER");
  const char* env_transport = getenv("RAILCOLL_TRANSPORT");
  const std::string spec = a.has("rails") ? a.str("rails") : env_rails ? env_rails : "";
  const std::string provider = a.has("provider") ? a.str("provider") : env_provider ? env_provider : "";
  auto rails = rt::resolve_rails(spec);
  std::cout << "rails: " << rails.size() << " (" << (spec.empty() ? "discovered" : spec) << ")\n";
  std::cout << "transport: " << (env_transport ? env_transport : "tcp")
            << " (RAILCOLL_TRANSPORT; tcp: native sockets per rail, ofi: libfabric between nodes)\n";
#ifdef RAILCOLL_HAVE_OFI
  std::cout << "libfabric: " << FI_MAJOR(fi_version()) << "." << FI_MINOR(fi_version()) << ", provider asked: "
            << (provider.empty() ? "any (the first offered on the rail's address, shm excepted)" : provider) << "\n";
  int usable = 0;
  for (auto& line : rt::describe_fabric_rails(rails, provider)) {
    std::cout << "  " << line << "\n";
    usable += line.find(": provider ") != std::string::npos;
  }
  return usable == static_cast<int>(rails.size()) ? 0 : 1;
#else
  std::cout << "libfabric: not built in (-DRAILCOLL_WITH_OFI=OFF)\n";
  return 0;
#endif
}

}  // namespace railcoll::cli
