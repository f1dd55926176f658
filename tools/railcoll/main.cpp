// railcoll: show, verify, run, benchmark and simulate collective schedules.
// One file per verb; the usage of every verb is in usage.cpp, and -h/--help is
// answered here for all of them.
#include <railcoll/railcoll.h>

#include <cstring>
#include <iostream>
#include <new>

#include "args.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "usage.hpp"

namespace {

bool is_help(const std::string& a) { return a == "-h" || a == "--help"; }

// `railcoll VERB --help`: the verb's usage on stdout, exit 0.
int print_usage(const std::string& verb) {
  const char* u = railcoll::cli::verb_usage(verb);
  std::cout << (u ? std::string(u) : railcoll::cli::top_usage());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace railcoll::cli;
  if (argc < 2) {
    std::cout << top_usage();
    return 2;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (is_help(cmd) || cmd == "help") {
    if (cmd == "help" && !args.empty() && verb_usage(args[0])) return print_usage(args[0]);
    std::cout << top_usage();
    return 0;
  }
  if (cmd == "--version" || cmd == "-V" || cmd == "version") {
    std::cout << "railcoll " << railcoll_version() << "\n";
    return 0;
  }
  // A verb that dispatches on its first word (goal export, sim reproduce) may
  // not reach its option parser with --help first; answer here.
  if (!args.empty() && is_help(args[0]) && verb_usage(cmd)) return print_usage(cmd);
  try {
    if (cmd == "algos") return cmd_algos(args);
    if (cmd == "show") return cmd_show(args);
    if (cmd == "verify") return cmd_verify(args);
    if (cmd == "cluster") return cmd_cluster(args);
    if (cmd == "run") return cmd_run(args);
    if (cmd == "bench") return cmd_bench(args);
    if (cmd == "sim") return cmd_sim(args);
    if (cmd == "goal") return cmd_goal(args);
    if (cmd == "calibrate") return cmd_calibrate(args);
    if (cmd == "traffic") return cmd_traffic(args);
    if (cmd == "info") return cmd_info(args);
    if (cmd == "tune") return cmd_tune(args);
    if (cmd == "report") return cmd_report(args);
    if (cmd == "doctor") return cmd_doctor(args);
    if (cmd == "trace") return cmd_trace(args);
    std::cerr << "railcoll: unknown command '" << cmd << "' (railcoll --help lists them)\n";
    return 2;
  } catch (const HelpRequested&) {  // -h/--help among a verb's options (Args)
    return print_usage(cmd);
  } catch (const UsageError& e) {
    std::cerr << "railcoll " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const railcoll::InputError& e) {
    std::cerr << "railcoll " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const railcoll::Error& e) {  // a failure while running, said in one line
    std::cerr << "railcoll " << cmd << ": " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "railcoll " << cmd << ": out of memory (the request is too large)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "railcoll " << cmd << ": internal error: " << e.what() << "\n";
    return 1;
  }
}
