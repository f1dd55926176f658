// railcoll info [--rails SPEC] [--provider NAME]: what this machine offers the
// runtime: the rails' addresses, the transport RAILCOLL_TRANSPORT chooses, and
// per rail the libfabric provider, fabric and domain the ofi transport would
// open there (docs/fabrics.md: what to check first on EFA, InfiniBand, Slingshot).
// railcoll info --settings [--markdown]: every RAILCOLL_* setting, its value
// here and where it came from (core/settings.hpp); --markdown: the table of
// docs/settings.md.
#include <cstdlib>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "core/settings.hpp"
#include "runtime/bootstrap/net.hpp"
#ifdef RAILCOLL_HAVE_OFI
#include <rdma/fabric.h>

#include "runtime/transport/ofi/ofi_rail.hpp"
#endif

namespace railcoll::cli {

int cmd_info(const std::vector<std::string>& argv) {
  Args a(argv, {"settings", "markdown"}, {"rails", "provider"});
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  if (a.flag("markdown") && !a.flag("settings")) throw UsageError("--markdown goes with --settings");
  if (a.flag("settings")) {
    // A wrong value is shown as its error, after the table (which has the default in its place).
    std::exception_ptr bad;
    const Settings settings = Settings::from_environment(&bad);
    std::cout << (a.flag("markdown") ? settings_table_markdown() : settings_report(settings));
    if (!bad || a.flag("markdown")) return 0;
    try {
      std::rethrow_exception(bad);
    } catch (const std::exception& e) {
      std::cout << "wrong: " << e.what() << " (its default holds above; a communicator would refuse it)\n";
    }
    return 1;
  }
  const char* env_rails = getenv("RAILCOLL_RAILS");
  const char* env_provider = getenv("RAILCOLL_OFI_PROVIDER");
  const char* env_transport = getenv("RAILCOLL_TRANSPORT");
  const std::string spec = a.has("rails") ? a.str("rails") : env_rails ? env_rails : "";
  const std::string provider = a.has("provider") ? a.str("provider") : env_provider ? env_provider : "";
  const auto chosen = rt::choose_rails(spec, rt::host_interfaces());
  std::vector<std::string> rails;
  for (auto& c : chosen) rails.push_back(c.addr);
  std::cout << "rails: " << rails.size() << " (" << (spec.empty() ? "discovered" : spec) << ")\n";
  for (size_t r = 0; r < chosen.size(); ++r)
    std::cout << "  rail " << r << ": " << (chosen[r].name.empty() ? "-" : chosen[r].name) << " " << chosen[r].addr
              << "  (" << chosen[r].why << ")\n";
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
