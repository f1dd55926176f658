// railcoll sim allgather --preset P [--algo A|all|auto] [-m MIN:MAX] [--ranks N --ppn P --rails K]
//                        [--stripe-threshold B] [--concurrency C] [--json F] [--csv F] [--plot F]
//                        [--background none|complement|uniform|hotspot [--background-bytes B] [--seed S]]
// railcoll sim presets
//
// Runs railcoll's own schedules in virtual time on a model of a machine
// (src/sim/) and prints the same tables as `railcoll bench`.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <limits>

#include "args.hpp"
#include "bench_report.hpp"
#include "commands.hpp"
#include "core/registry.hpp"
#include "core/select.hpp"
#include "sim/engine.hpp"

namespace railcoll::cli {

namespace {

int list_presets() {
  std::cout << "preset search path: " << sim::preset_dirs_text() << "\n";
  for (const char* name : {"qsnet2-4x4-dual", "elan4-128", "ib-128", "elan3-64", "asciq-1024", "testbed"}) {
    try {
      sim::Machine m = sim::load_machine(name);
      std::cout << "  " << name << ": " << m.nodes << " nodes x " << m.ppn << ", " << m.rails << " rail"
                << (m.rails > 1 ? "s" : "") << ", " << m.topology << " — " << m.description << "\n";
    } catch (const std::exception& e) {
      std::cout << "  " << name << ": " << e.what() << "\n";
    }
  }
  return 0;
}

}  // namespace

int cmd_sim(const std::vector<std::string>& argv) {
  std::set<std::string> valued = kTopologyOptions;
  valued.insert({"preset", "algo", "m", "json", "csv", "plot", "stripe-threshold", "concurrency", "background",
                 "background-bytes", "seed"});
  if (!argv.empty() && argv[0] == "reproduce") return cmd_reproduce({argv.begin() + 1, argv.end()});
  Args a(argv, {}, valued);
  if (a.positional().size() == 1 && a.positional()[0] == "presets") return list_presets();
  if (a.positional().size() != 1 || a.positional()[0] != "allgather")
    throw UsageError("usage: railcoll sim allgather --preset P [--algo A|all|auto] [-m MIN:MAX] [--ranks N --ppn P "
                     "--rails K] [--json F] [--csv F] [--plot F] [--background none|complement|uniform|hotspot "
                     "[--background-bytes B] [--seed S]]; railcoll sim presets; railcoll sim reproduce NAME|all");
  if (!a.has("preset")) throw UsageError("--preset NAME is required (railcoll sim presets lists them)");
  sim::Machine m = sim::load_machine(a.str("preset"));
  sim::SimOptions loaded;
  loaded.background = a.str("background", "none");
  loaded.background_bytes = a.size("background-bytes", loaded.background_bytes);
  loaded.seed = static_cast<uint64_t>(a.integer("seed", 1, 0, std::numeric_limits<long>::max()));
  sim::check_options(loaded);
  const bool background = loaded.background != "none";

  // The machine's full size unless the topology is given.
  Topology topo;
  if (a.has("ranks") || a.has("nodes") || a.has("node-map")) {
    topo = topology_from(a);
  } else {
    int ppn = static_cast<int>(a.integer("ppn", m.ppn, 1, 1 << 16));
    int rails = static_cast<int>(a.integer("rails", m.rails, 1, 64));
    topo = Topology::from_ppn(m.nodes * ppn, ppn, rails);
  }
  sim::check_fits(topo, m);  // before any output: no partial table pretending to be a result
  std::string algo = a.str("algo", "all");
  std::vector<std::string> algos;
  if (algo == "all") {
    for (auto& s : all_algorithms())
      if (std::string(s.collective) == "allgather") algos.push_back(s.name);
    algos.push_back("auto");
  } else {
    if (algo != "auto" && !find_algorithm("allgather", algo))
      throw UsageError("unknown allgather algorithm '" + algo + "' (railcoll algos lists them)");
    algos.push_back(algo);
  }
  uint64_t lo = 8, hi = 1 << 20;
  size_range(a, &lo, &hi);
  AlgoOptions opts;
  opts.stripe_threshold = a.size("stripe-threshold", 1024);
  std::vector<std::string> given;
  if (a.has("concurrency")) {
    opts.concurrency = static_cast<int>(a.integer("concurrency", 0, 1, 1 << 16));
    given.push_back("concurrency");
  }

  BenchContext ctx;
  ctx.ranks = topo.nranks();
  ctx.nodes = topo.nnodes();
  ctx.rails = topo.rails();
  for (int n = 0; n < topo.nnodes(); ++n) ctx.ranks_per_node.push_back(topo.node_size(n));
  ctx.max_ppn = topo.max_node_size();
  ctx.rail_bits_per_s = m.nic_MBps() * 8e6;
  ctx.where = "simulated: " + m.name;

  std::vector<BenchRecord> recs, loaded_recs;
  uint64_t events = 0;
  double sim_seconds = 0;  // simulation only, without building the schedules
  for (auto& name : algos) {
    print_table_header(std::cout, name, ctx, false, false);
    for (uint64_t bytes = std::max<uint64_t>(lo, 1); bytes <= hi; bytes *= 2) {
      std::string chosen = name == "auto" ? select_algorithm("allgather", topo, bytes) : name;
      Schedule s = build_schedule("allgather", chosen, topo, std::vector<uint64_t>(topo.nranks(), bytes), opts,
                                  chosen == "concurrent_exchange" ? given : std::vector<std::string>{});
      auto t0 = std::chrono::steady_clock::now();
      sim::SimResult r = sim::simulate(s, m);
      sim_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      events += r.events;
      BenchRecord rec;
      rec.algorithm = name;
      if (name == "auto") rec.chosen = chosen;
      rec.bytes = bytes;
      rec.ranks = ctx.ranks;
      rec.nodes = ctx.nodes;
      rec.rails = ctx.rails;
      rec.iterations = 1;
      rec.avg_us = r.avg_us;
      rec.min_us = r.min_us;
      rec.max_us = r.max_us;
      rec.p50_us = r.max_us;  // deterministic: the slowest rank
      print_table_row(std::cout, rec, false);
      recs.push_back(rec);
      if (background) {
        sim::SimResult l = sim::simulate(s, m, loaded);
        events += l.events;
        rec.algorithm = name + " +" + loaded.background;
        rec.avg_us = l.avg_us;
        rec.min_us = l.min_us;
        rec.max_us = rec.p50_us = l.max_us;
        loaded_recs.push_back(rec);
      }
    }
  }
  print_summary(std::cout, recs, ctx);
  if (background) {
    // The same calls while every node's NICs keep background messages in flight.
    std::cout << "\n# Background traffic: " << loaded.background << ", " << loaded.background_bytes
              << "-byte messages, seed " << loaded.seed << "; slowest rank in us\n"
              << "# Algorithm                 Size        quiet       loaded   slowdown\n";
    for (size_t i = 0; i < recs.size(); ++i)
      std::cout << std::left << std::setw(26) << recs[i].algorithm << std::right << std::setw(7) << recs[i].bytes
                << std::fixed << std::setprecision(2) << std::setw(13) << recs[i].max_us << std::setw(13)
                << loaded_recs[i].max_us << std::setw(10) << loaded_recs[i].max_us / recs[i].max_us << "x\n";
    std::cout.unsetf(std::ios::fixed);
    recs.insert(recs.end(), loaded_recs.begin(), loaded_recs.end());
  }
  std::cout << "simulated " << events << " events in " << sim_seconds << " s ("
            << static_cast<uint64_t>(events / std::max(sim_seconds, 1e-9)) << " events/s, schedule building not counted)\n";
  if (a.has("json")) write_json(a.str("json"), recs);
  if (a.has("csv")) write_csv(a.str("csv"), recs);
  if (a.has("plot")) write_plot(recs, a.str("plot"), "allgather simulated on " + m.name);
  return 0;
}

}  // namespace railcoll::cli
