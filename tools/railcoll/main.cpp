// railcoll: show, verify (and, later, run, bench, simulate) collective schedules.
#include <cstring>
#include <iostream>
#include <new>

#include "args.hpp"
#include "commands.hpp"
#include "core/errors.hpp"

namespace {

const char* kUsage =
    "usage: railcoll <command> [options]\n"
    "\n"
    "commands:\n"
    "  algos [--json | --rules]            list collectives and algorithms, or the selection rules in force\n"
    "  tune [-o FILE] [--collectives C,C] [bench options] | sim tune --preset P [-o FILE] ...\n"
    "                                      measure (or simulate) every algorithm into a tuning file\n"
    "  show COLL --algo A --ranks N [--ppn P | --nodes 4,4,5 | --node-map 0,1,0,1]\n"
    "       [--rails K] [--bytes B] [--stripe-threshold B] [--concurrency C] [--root R] [--json]\n"
    "                                      print the schedule of an algorithm\n"
    "  verify --all                        verify every algorithm over the sweep\n"
    "  verify COLL --algo A --ranks N ...  verify one case (same options as show)\n"
    "  run -n N [--ppn P] [--rails K] -- PROG ARGS   start N ranks here (pretend nodes with --ppn)\n"
    "  bench allgather|bcast|gather|allreduce|barrier [--algo A|all|auto] [-m MIN:MAX] [-i N] [-x N]\n"
    "        [-f] [-c] [--mpi] [--background complement|uniform|hotspot] [--json F] [--csv F] [--plot F]\n"
    "        [-n N] [--ppn P] [--rails K] [--local]\n"
    "                                      OSU-style benchmark, side by side with Open MPI\n"
    "  sim allgather|bcast|gather|allreduce|barrier --preset P [--algo A|all|auto] [-m MIN:MAX] [--root R]\n"
    "        [--ranks N --ppn P --rails K] [--nic-memory] [--background complement|uniform|hotspot\n"
    "        [--background-bytes B] [--seed S] [--samples K]] [--json F] [--csv F] [--plot F]\n"
    "                                      the same tables, simulated on a model of a machine\n"
    "  sim presets                         list the machine models\n"
    "  sim reproduce seed001|seed002|seed003|seed004|all [--json F] [--plot-dir D]\n"
    "                                      the seeds' results beside the model's\n"
    "  goal export COLL --algo A --ranks N ... [-o FILE]   a schedule as LogGOPSim GOAL text\n"
    "  goal import FILE [--rails K] [--preset P]         read GOAL (and simulate it)\n"
    "  calibrate [-o presets/testbed.preset] [--quick] [--local]   measure this cluster into a preset\n"
    "  calibrate --compare SIM.json BENCH.json                       simulated vs measured: error, fastest\n"
    "  cluster up|status|down|run|mpirun   the emulated multi-rail cluster (railcoll cluster --help)\n"
    "  traffic --pattern complement|uniform|hotspot [--seconds T]   background load (one rank per node)\n"
    "\n"
    "Sizes take K, M, G suffixes (powers of 1024). Exit status: 0 ok, 1 a check\n"
    "failed, 2 bad usage.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace railcoll::cli;
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
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
    if (cmd == "tune") return cmd_tune(args);
    std::cerr << "railcoll: unknown command '" << cmd << "' (railcoll --help lists them)\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << "railcoll " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const railcoll::InputError& e) {
    std::cerr << "railcoll " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "railcoll " << cmd << ": out of memory (the request is too large)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "railcoll " << cmd << ": internal error: " << e.what() << "\n";
    return 1;
  }
}
