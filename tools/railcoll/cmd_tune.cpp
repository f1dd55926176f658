// railcoll tune [-o FILE] [--collectives C,C] [-m MIN:MAX] [-i N] [-x N] [-n N] [--ppn P] [--rails K] [--local]
// railcoll sim tune --preset P [--ranks N --ppn P --rails K | --nodes ... | --node-map ...] [-m MIN:MAX]
//                   [--collectives C,C] [-o FILE]
//
// Tuning files from measurements (docs/selection.md): every algorithm of each
// collective is measured at every size, by `railcoll bench COLL --algo all` run
// as a subprocess (on the emulated cluster, or with --local locally), or in
// the simulator on a preset; src/select/tune.hpp turns the records into rules
// (the fastest algorithm per size, neighbouring sizes merged) and the file is
// written and loaded back before this says it is done.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "args.hpp"
#include "bench/plot.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "testbed/spawn.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "select/select.hpp"
#include "select/tune.hpp"
#include "select/tuning_file.hpp"
#include "sim/engine.hpp"

namespace railcoll::cli {

using namespace railcoll::bench;  // records, reports and plots

namespace {

std::vector<Collective> collectives_from(const Args& a) {
  if (!a.has("collectives")) return user_collectives();
  std::vector<Collective> out;
  std::stringstream list(a.str("collectives"));
  for (std::string name; std::getline(list, name, ',');) {
    Collective c;
    if (!parse_collective(name, &c)) throw UsageError("--collectives: unknown collective '" + name + "'");
    out.push_back(c);
  }
  if (out.empty()) throw UsageError("--collectives needs at least one collective");
  return out;
}

std::string command_line(const std::string& verb, const std::vector<std::string>& argv) {
  std::string s = "railcoll " + verb;
  for (auto& x : argv) s += " " + x;
  return s;
}

// Writes the rules, loads the file back as RAILCOLL_TUNING would, and shows them.
int finish(const std::vector<Measurement>& measured, const std::string& path, const std::string& comment) {
  std::vector<Rule> rules = rules_from_measurements(measured);
  if (rules.empty()) {
    std::cerr << "railcoll tune: no usable measurement, no file written\n";
    return 1;
  }
  write_tuning_file(path, rules, comment);
  std::vector<Rule> loaded = load_tuning_file(path);
  std::cout << "\n# " << measured.size() << " measurements -> " << loaded.size() << " rules in " << path
            << "; use them with RAILCOLL_TUNING=" << path << "\n"
            << rules_table_text(loaded);
  return 0;
}

}  // namespace

int cmd_tune(const std::vector<std::string>& argv) {
  Args a(argv, {"local"}, {"o", "collectives", "m", "i", "x", "n", "ppn", "rails"});
  if (!a.positional().empty())
    throw UsageError("usage: railcoll tune [-o FILE] [--collectives C,C] [-m MIN:MAX] [-i N] [-x N] [-n N] [--ppn P] "
                     "[--rails K] [--local]");
  const std::string out = a.str("o", "tuning.json");
  const std::vector<Collective> colls = collectives_from(a);
  std::vector<std::string> forwarded;
  for (const char* k : {"m", "i", "x", "n", "ppn", "rails"})
    if (a.has(k)) forwarded.insert(forwarded.end(), {std::string(k[1] ? "--" : "-") + k, a.str(k)});
  if (a.flag("local")) forwarded.push_back("--local");

  char tmpl[] = "/tmp/railcoll-tune-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file in /tmp");
  close(fd);
  const std::string records = tmpl;
  std::vector<Measurement> measured;
  for (Collective c : colls) {
    std::vector<std::string> cmd = {testbed::self_exe(), "bench", collective_name(c), "--algo", "all", "--json", records};
    cmd.insert(cmd.end(), forwarded.begin(), forwarded.end());
    std::cout << "# railcoll tune: measuring every " << collective_name(c) << " algorithm\n" << std::flush;
    testbed::RunOptions inherit;
    inherit.capture_out = inherit.capture_err = false;
    if (int st = testbed::run(cmd, inherit).code(); st != 0) {
      unlink(records.c_str());
      std::cerr << "railcoll tune: railcoll bench " << collective_name(c) << " failed (status " << st
                << "); no file written\n";
      return 1;
    }
    auto m = measurements(read_records(records));
    measured.insert(measured.end(), m.begin(), m.end());
  }
  unlink(records.c_str());
  return finish(measured, out, command_line("tune", argv) + " (railcoll bench: p50 of the span for bcast and gather, else of the slowest rank)");
}

int cmd_sim_tune(const std::vector<std::string>& argv) {
  std::set<std::string> valued = kTopologyOptions;
  valued.insert({"preset", "m", "collectives", "o"});
  Args a(argv, {}, valued);
  if (!a.positional().empty() || !a.has("preset"))
    throw UsageError("usage: railcoll sim tune --preset P [--ranks N --ppn P --rails K] [-m MIN:MAX] "
                     "[--collectives C,C] [-o FILE]");
  sim::Machine m = sim::load_machine(a.str("preset"));
  Topology topo;  // the machine's full size unless given, as `railcoll sim`
  if (a.has("ranks") || a.has("nodes") || a.has("node-map")) {
    topo = topology_from(a);
  } else {
    int ppn = static_cast<int>(a.integer("ppn", m.ppn, 1, 1 << 16));
    topo = Topology::from_ppn(m.nodes * ppn, ppn, static_cast<int>(a.integer("rails", m.rails, 1, 64)));
  }
  sim::check_fits(topo, m);
  uint64_t lo = 8, hi = 1 << 20;
  size_range(a, &lo, &hi);
  const std::string out = a.str("o", "tuning.json");
  std::cout << "# railcoll sim tune: " << topo.describe() << " on " << m.name << "\n";
  std::vector<Measurement> measured;
  for (Collective c : collectives_from(a)) {
    const std::string name = collective_name(c);
    AlgoOptions opts = call_defaults(c);  // root 0; allreduce sums floats, as `railcoll sim`
    for (const AlgoSpec& spec : all_algorithms()) {
      if (spec.collective != c) continue;
      for (uint64_t bytes : bench_sizes(name, lo, hi)) {
        Schedule s = build_schedule(c, spec.name, topo, std::vector<uint64_t>(topo.nranks(), bytes), opts);
        try {
          sim::check_runs(s, m);
        } catch (const InputError& e) {  // hardware this machine lacks
          std::cout << "# skipped " << name << "/" << spec.name << ": " << e.what() << "\n";
          break;
        }
        measured.push_back({c, topo.nranks(), topo.nnodes(), topo.max_node_size(), topo.rails(), bytes, spec.name,
                            sim::simulate(s, m).max_us});
      }
    }
  }
  return finish(measured, out, command_line("sim tune", argv) + " (simulated, slowest rank)");
}

}  // namespace railcoll::cli
