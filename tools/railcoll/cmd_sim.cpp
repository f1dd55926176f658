// railcoll sim COLL --preset P [--algo A|all|auto] [-m MIN:MAX]
//          [--root R] [--ranks N --ppn P --rails K] [--stripe-threshold B] [--concurrency C] [--nic-memory]
//          [--background none|complement|uniform|hotspot [--background-bytes B] [--seed S] [--samples K]]
//          [--json F] [--csv F] [--plot F]
// railcoll sim presets
//
// Runs railcoll's own schedules in virtual time on a model of a machine
// (src/sim/) and prints the same tables as `railcoll bench`: allreduce sums
// floats, bcast and gather use --root (0), barrier is one call of 0 bytes.
#include <sys/stat.h>

#include <chrono>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "args.hpp"
#include "bench/plot.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "testbed/spawn.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "select/select.hpp"
#include "core/trace_format.hpp"
#include "sim/engine.hpp"

namespace railcoll::cli {

using namespace railcoll::bench;  // records, reports and plots

namespace {

const char* kUsage =
    "usage: railcoll sim COLL --preset P [--algo A|all|auto] [-m MIN:MAX] "
    "[--root R] [--ranks N --ppn P --rails K] [--nic-memory] [--json F] [--csv F] [--plot F] "
    "[--background none|complement|uniform|hotspot [--background-bytes B] [--seed S] [--samples K]]; "
    "railcoll sim presets; railcoll sim reproduce NAME|all";

int list_presets() {
  std::cout << "preset search path: " << sim::preset_dirs_text() << "\n";
  for (const char* name : {"qsnet2-4x4-dual", "elan4-128", "ib-128", "elan3-64", "asciq-1024", "testbed"}) {
    try {
      sim::Machine m = sim::load_machine(name);
      std::cout << "  " << name << ": " << m.nodes << " nodes x " << m.ppn << ", " << m.rails << " rail"
                << (m.rails > 1 ? "s" : "") << ", " << m.topology << (m.hw_multicast ? ", hw multicast" : "")
                << (m.hw_barrier ? ", hw barrier" : "") << " — " << m.description << "\n";
    } catch (const std::exception& e) {
      std::cout << "  " << name << ": " << e.what() << "\n";
    }
  }
  return 0;
}

}  // namespace

// `railcoll sim --trace DIR`: the modeled call in the runtime's trace format
// (core/trace_format.hpp), DIR/trace-sim-rank<R>.json per rank, so that
// `railcoll trace --compare MEASURED DIR` sets model and measurement side by
// side. Virtual time from 0; the call is call 1.
class SimTraceFiles final : public sim::SimTrace {
 public:
  SimTraceFiles(const std::string& dir, const Topology& t, const std::string& what) : what_(what) {
    for (int r = 0; r < t.nranks(); ++r) {
      files_.push_back(std::make_unique<TraceWriter>(dir + "/trace-sim-rank" + std::to_string(r) + ".json", r,
                                                     t.node_of(r), t.rails(), "simulated"));
      if (!files_.back()->ok()) throw InputError("cannot write the trace into " + dir);
    }
  }
  void op(int rank, int index, const Op& op, double start, double end) override {
    TraceEvent e = event(start, end, kTraceProgramTrack, op_name(op.kind), "op");
    e.op = index;
    e.step = op.step;
    if (op.kind == OpKind::Put || op.kind == OpKind::Wait) e.peer = op.peer;
    if (op.kind == OpKind::Put || op.kind == OpKind::Copy || op.kind == OpKind::Reduce) e.bytes = op.bytes();
    files_[rank]->event(e);
    first_ = std::min(first_, start);
    last_[rank] = std::max(last_[rank], end);
  }
  void transfer(int from, int to, int rail, int op, uint64_t bytes, double start, double arrive) override {
    TraceEvent e = event(start, arrive, rail < 0 ? kTraceLocalTrack : kTraceRailTrack + rail, "recv", "rail");
    e.op = op;
    e.peer = from;
    e.rail = rail;
    e.bytes = bytes;
    files_[to]->event(e);
  }
  // Each rank's call span, from the first op of any rank to its own last.
  void end_calls() {
    for (size_t r = 0; r < files_.size(); ++r) {
      TraceEvent e = event(first_, last_[r], kTraceCallTrack, "", "call");
      files_[r]->event(e, &what_);
    }
  }

 private:
  static TraceEvent event(double start, double end, int tid, const char* name, const char* cat) {
    TraceEvent e;
    e.ts = start;
    e.dur = std::max(0.0, end - start);
    e.tid = tid;
    e.name = name;
    e.cat = cat;
    e.call = 1;
    return e;
  }
  std::string what_;
  std::vector<std::unique_ptr<TraceWriter>> files_;
  double first_ = std::numeric_limits<double>::max();
  std::map<size_t, double> last_;
};

int cmd_sim(const std::vector<std::string>& argv) {
  std::set<std::string> valued = kTopologyOptions;
  valued.insert({"preset", "algo", "m", "json", "csv", "plot", "stripe-threshold", "concurrency", "root", "background",
                 "background-bytes", "seed", "samples", "trace"});
  if (!argv.empty() && argv[0] == "reproduce") return cmd_reproduce({argv.begin() + 1, argv.end()});
  if (!argv.empty() && argv[0] == "tune") return cmd_sim_tune({argv.begin() + 1, argv.end()});
  Args a(argv, {"nic-memory"}, valued);
  if (a.positional().size() == 1 && a.positional()[0] == "presets") return list_presets();
  Collective coll;
  if (a.positional().size() != 1 || !parse_collective(a.positional()[0], &coll)) throw UsageError(kUsage);
  const std::string coll_name = a.positional()[0];
  if (!a.has("preset")) throw UsageError("--preset NAME is required (railcoll sim presets lists them)");
  sim::Machine m = sim::load_machine(a.str("preset"));
  sim::SimOptions quiet;
  quiet.nic_memory = a.flag("nic-memory");
  quiet.seed = static_cast<uint64_t>(a.integer("seed", 1, 0, std::numeric_limits<long>::max()));
  sim::SimOptions loaded = quiet;
  loaded.background = a.str("background", "none");
  loaded.background_bytes = a.size("background-bytes", loaded.background_bytes);
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
  // A barrier's latency distribution needs many calls (seed 004 Figs. 11-12);
  // so does a call whose processes' cores are drawn (contended cores).
  const bool drawn = sim::placement_drawn(topo, m);
  const int samples =
      static_cast<int>(a.integer("samples", !traits(coll).moves_data ? 100 : drawn ? 25 : 1, 1, 1000000));
  std::string algo = a.str("algo", "all");
  std::vector<std::string> algos;
  if (algo == "all") {
    for (auto& s : all_algorithms())
      if (s.collective == coll) algos.push_back(s.name);
    algos.push_back("auto");
  } else {
    if (algo != "auto" && !find_algorithm(coll, algo))
      throw UsageError("unknown " + coll_name + " algorithm '" + algo + "' (railcoll algos lists them)");
    algos.push_back(algo);
  }
  uint64_t lo = 8, hi = 1 << 20;
  size_range(a, &lo, &hi);
  if (!traits(coll).moves_data) lo = hi = 0;
  const std::vector<uint64_t> sizes = bench_sizes(coll_name, lo, hi);
  AlgoOptions opts = call_defaults(coll);
  opts.root = static_cast<int>(a.integer("root", 0, 0, topo.nranks() - 1));
  opts.stripe_threshold = a.size("stripe-threshold", 1024);
  std::vector<std::string> given;
  if (a.has("concurrency")) {
    opts.concurrency = static_cast<int>(a.integer("concurrency", 0, 1, 1 << 16));
    given.push_back("concurrency");
  }
  auto schedule = [&](const std::string& name, uint64_t bytes) {
    return build_schedule(coll, name, topo, std::vector<uint64_t>(topo.nranks(), bytes), opts,
                          name == "concurrent_exchange" ? given : std::vector<std::string>{});
  };
  // An algorithm the machine cannot run (the hardware collectives on a machine
  // without them) is an error when asked for by name, a note in --algo all.
  // One algorithm's checked schedule is the first one simulated: kept, not
  // built again (a 4096-rank Direct all-gather takes seconds to build).
  std::vector<std::string> runnable;
  std::optional<Schedule> first;
  for (auto& name : algos) {
    if (name == "auto") {
      runnable.push_back(name);
      continue;
    }
    try {
      Schedule s = schedule(name, sizes.front());
      sim::check_runs(s, m);
      runnable.push_back(name);
      if (algos.size() == 1) first = std::move(s);
    } catch (const InputError& e) {
      if (algos.size() == 1) throw;
      std::cout << "# skipped " << name << ": " << e.what() << "\n";
    }
  }

  BenchContext ctx;
  ctx.collective = coll_name;
  ctx.ranks = topo.nranks();
  ctx.nodes = topo.nnodes();
  ctx.rails = topo.rails();
  for (int n = 0; n < topo.nnodes(); ++n) ctx.ranks_per_node.push_back(topo.node_size(n));
  ctx.max_ppn = topo.max_node_size();
  ctx.rail_bits_per_s = (quiet.nic_memory ? m.link_MBps : m.nic_MBps()) * 8e6;
  ctx.where = "simulated: " + m.name + (quiet.nic_memory ? ", buffers in NIC memory" : "");
  if (drawn)
    std::cout << "# every process's core and turn order are drawn anew for each call: " << samples << " sample"
              << (samples > 1 ? "s" : "") << " (seeds " << quiet.seed << ".." << quiet.seed + samples - 1 << ")";
  else
    std::cout << "# the model is deterministic: a quiet call has one time (p50 = p90 = p99)";
  if (background)
    std::cout << "; under " << loaded.background << " traffic, " << samples << " sample" << (samples > 1 ? "s" : "")
              << " (seeds " << loaded.seed << ".." << loaded.seed + samples - 1
              << ", each starting at another phase of the traffic)";
  std::cout << "\n";

  std::vector<BenchRecord> recs, loaded_recs;
  uint64_t events = 0;
  double sim_seconds = 0;  // simulation only, without building the schedules
  auto timed = [&](const Schedule& s, const sim::SimOptions& o) {
    auto t0 = std::chrono::steady_clock::now();
    sim::SimResult r = sim::simulate(s, m, o);
    sim_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    events += r.events;
    return r;
  };
  // Sample i's options -> the record's statistics over the samples: the
  // slowest rank's time per sample, as bench's per call.
  auto sampled = [&](BenchRecord* rec, int n, const Schedule& s, auto options_of) {
    rec->iterations = n;
    rec->avg_us = rec->min_us = rec->max_us = 0;
    std::vector<double> slowest;
    for (int i = 0; i < n; ++i) {
      sim::SimResult x = timed(s, options_of(i));
      rec->avg_us += x.avg_us / n;
      rec->min_us += x.min_us / n;
      rec->max_us += x.max_us / n;
      slowest.push_back(x.max_us);
    }
    set_percentiles(rec, slowest);
    rec->samples_us = !traits(coll).moves_data ? slowest : std::vector<double>{};
  };
  for (auto& name : runnable) {
    print_table_header(std::cout, name, ctx, false, false);
    for (uint64_t bytes : sizes) {
      std::string chosen = name == "auto" ? select_algorithm(coll, topo, bytes) : name;
      Schedule s = first ? std::move(*first) : schedule(chosen, bytes);
      first.reset();
      BenchRecord rec;
      rec.simulated = true;
      rec.preset = m.name;
      rec.collective = coll_name;
      rec.algorithm = name;
      if (name == "auto") rec.chosen = chosen;
      rec.bytes = bytes;
      rec.ranks = ctx.ranks;
      rec.nodes = ctx.nodes;
      rec.rails = ctx.rails;
      sampled(&rec, drawn ? samples : 1, s, [&](int i) {
        sim::SimOptions o = quiet;
        o.seed = quiet.seed + static_cast<uint64_t>(i);
        return o;
      });
      print_table_row(std::cout, rec, false);
      recs.push_back(rec);
      if (!background) continue;
      BenchRecord l = rec;
      l.background = loaded.background;
      sampled(&l, samples, s, [&](int i) { return sim::loaded_sample(loaded, m, i); });
      loaded_recs.push_back(l);
    }
  }
  if (a.has("trace")) {
    if (runnable.size() != 1 || sizes.size() != 1)
      throw UsageError("--trace models one call: give one algorithm (--algo A) and one size (-m B:B)");
    const std::string dir = a.str("trace");
    mkdir(dir.c_str(), 0777);
    const std::string chosen = runnable[0] == "auto" ? select_algorithm(coll, topo, sizes[0]) : runnable[0];
    SimTraceFiles files(dir, topo,
                        coll_name + "/" + chosen + " with " + std::to_string(sizes[0]) + " B per rank");
    sim::SimOptions o = quiet;
    o.trace = &files;
    sim::simulate(schedule(chosen, sizes[0]), m, o);
    files.end_calls();
    std::cout << "# the modeled call's trace: " << dir << "/trace-sim-rank*.json (railcoll trace " << dir << ")\n";
  }
  print_summary(std::cout, recs, ctx);
  if (background) {
    std::cout << "\n# " << loaded.background_bytes << "-byte background messages\n";
    print_background_summary(std::cout, recs, loaded_recs, ctx, loaded.background);
    recs.insert(recs.end(), loaded_recs.begin(), loaded_recs.end());
  }
  std::cout << "simulated " << events << " events in " << sim_seconds << " s ("
            << static_cast<uint64_t>(events / std::max(sim_seconds, 1e-9)) << " events/s, schedule building not counted)\n";
  if (a.has("json")) write_json(a.str("json"), recs);
  if (a.has("csv")) write_csv(a.str("csv"), recs);
  if (a.has("plot")) write_plot(recs, a.str("plot"), coll_name + " simulated on " + m.name);
  return 0;
}

}  // namespace railcoll::cli
