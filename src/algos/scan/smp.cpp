// SMP-aware scan: the ranks fall into runs, the longest stretches of
// consecutive ranks on one node (a node whose ranks are consecutive is one
// run; ranks dealt round-robin are runs of one):
//   1. inside a run, through the node's shared memory (seed 001 §5.1), every
//      rank but the last stages its vector and each rank combines the staged
//      vectors below it with its own: its prefix within the run;
//   2. the runs' last ranks run an exclusive recursive-doubling scan of the
//      run totals over the rails (seed 004 §4's leaders; Hillis and Steele);
//   3. each run's last rank leaves the prefix of the runs before it in the
//      node's shared memory, and every rank of the run puts it in front of
//      its own prefix.
// Only one message per step crosses the network per run, and the combining
// inside a node overlaps the network phase. Order is kept throughout, so a
// non-commutative operator may run on it; on round-robin layouts it is the
// recursive-doubling scan of runs of one, plus a copy.
// Hockney (P ranks per run, R runs): T = (P-1) m (c + gamma) + ceil(log2 R) (ts + m tau + 2 m gamma) + m (c + gamma)
#include "algos/scan/common.hpp"

namespace railcoll::scan {

namespace {

struct Run {
  int node, first, size, index;  // index: among its node's runs
  uint64_t shared_at;            // its part of the node's shared buffer: (size-1) staging areas, then the prefix
};

std::vector<Run> runs_of(const Topology& t, uint64_t m) {
  std::vector<Run> runs;
  std::vector<int> runs_on(t.nnodes(), 0);
  std::vector<uint64_t> shared(t.nnodes(), 0);
  for (int r = 0; r < t.nranks(); ++r) {
    const int n = t.node_of(r);
    if (!runs.empty() && runs.back().node == n) {
      ++runs.back().size;
      continue;
    }
    runs.push_back({n, r, 1, runs_on[n]++, 0});
  }
  for (Run& run : runs)
    if (run.size > 1) run.shared_at = shared[run.node], shared[run.node] += run.size * m;
  return runs;
}

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const uint64_t m = L.count[0];
  if (m == 0) return;
  const bool excl = exclusive(b);
  const std::vector<Run> runs = runs_of(t, m);
  const int R = static_cast<int>(runs.size()), steps = doubling_steps(R);
  std::vector<uint64_t> shared(t.nnodes(), 0);
  auto local_at = [&](int r) { return b.scratch(r, 0, m); };    // a rank's prefix within its run
  auto total_at = [&](int r) { return b.scratch(r, m, m); };    // exscan: the run's total
  auto prefix_at = [&](int r) { return b.scratch(r, 2 * m, m); };  // the runs before, at the last rank
  std::vector<Unit> units;
  std::vector<std::vector<Span>> local(R);  // per run, per rank: its prefix within the run (length 0: none)
  for (int j = 0; j < R; ++j) {
    const Run& run = runs[j];
    const int P = run.size, last = run.first + P - 1;
    const bool later = j + 1 < R;
    auto area = [&](int i) { return b.shared(run.node, run.shared_at + i * m, m); };
    const CounterRef staged = b.node_counter(run.node, 2 * run.index);
    if (P > 1) shared[run.node] = std::max(shared[run.node], run.shared_at + P * m);
    // 1. the prefix inside the run
    for (int i = 0; i < P; ++i) {
      const int r = run.first + i;
      b.set_scratch(r, r == last ? (3 + steps) * m : m);
      if (i + 1 < P) {
        b.copy(r, 0, {{b.send(r, 0, m), area(i)}});
        b.signal(r, 0, staged);
      }
      std::vector<Span> terms;  // in rank order: the staged vectors below it, then (scan) its own
      for (int k = 0; k < i; ++k) terms.push_back(area(k));
      if (!excl) terms.push_back(b.send(r, 0, m));
      if (i > 0) b.wait(r, 0, staged, P - 1);
      Span mine{};  // none: exscan's first rank of a run
      if (terms.size() == 1 && j > 0) {
        mine = terms[0];
      } else if (!terms.empty()) {  // the first run's ranks are done here
        mine = j == 0 ? b.recv(r, 0, m) : local_at(r);
        b.copy(r, 0, {{terms[0], mine}});
        for (size_t k = 1; k < terms.size(); ++k) b.reduce(r, 0, {{terms[k], mine}});
      }
      local[j].push_back(mine);
    }
    // The run's total, for the network phase (the last run's is never used:
    // only units below it receive it, and they pass it only upwards).
    Span total = excl ? b.send(last, 0, m) : local[j][P - 1];
    if (excl && later && P > 1) {
      total = total_at(last);
      b.copy(last, 0, {{local[j][P - 1], total}});
      b.reduce(last, 0, {{b.send(last, 0, m), total}});
    }
    units.push_back({last, total, excl && P == 1 ? b.recv(last, 0, m) : prefix_at(last)});
  }
  // 2. the runs' last ranks: an exclusive scan of the run totals
  const int fix = recursive_doubling(b, units, true, [&](int u, int s) { return b.scratch(units[u].rank, (3 + s) * m, m); }, 1, 0);
  // 3. the runs before in front of every rank's own prefix
  for (int j = 1; j < R; ++j) {
    const Run& run = runs[j];
    const int P = run.size, last = run.first + P - 1;
    if (excl && P == 1) continue;  // the scan wrote its recv
    const Span slot = b.shared(run.node, run.shared_at + (P - 1) * m, m);
    const CounterRef ready = b.node_counter(run.node, 2 * run.index + 1);
    if (P > 1) {
      b.copy(last, fix, {{prefix_at(last), slot}});
      b.signal(last, fix, ready);
    }
    for (int i = 0; i < P; ++i) {
      const int r = run.first + i;
      const Span before = r == last ? prefix_at(last) : slot;
      if (r != last) b.wait(r, fix, ready, 1);
      b.copy(r, fix, {{before, b.recv(r, 0, m)}});
      if (local[j][i].length) b.reduce(r, fix, {{local[j][i], b.recv(r, 0, m)}});
    }
  }
  for (int n = 0; n < t.nnodes(); ++n) b.set_shared(n, shared[n]);
}

const BothScans registered{3, "smp", "prefix inside each node's run of ranks in shm, run totals scanned over the rails, fix-up in shm",
                           "(P-1) m (c + gamma) + ceil(log2 R) (ts + m tau + 2 m gamma) + m (c + gamma)",
                           "seed 001 §5.1, seed 004 §4; Hillis and Steele 1986", build_smp};

}  // namespace

}  // namespace railcoll::scan
