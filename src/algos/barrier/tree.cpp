// Tree barrier, as elan_gsync (seed 004 §4.1, Figure 6; seed 003 §4.3): "a
// balanced tree to send the 'ready' signal to the process with VPID 0. Each
// process in the tree waits for 'ready' signals from its children, and when it
// receives all of them sends its own signal up to the parent process. When the
// root process receives all its 'ready' signals, it performs a broadcast ... to
// send the 'go' signal with the same tree structure" (the point-to-point form;
// with contiguous nodes elan_gsync sends the 'go' by hardware broadcast, which
// hw_combining models).
//
// The tree: rank p's parent is (p-1)/F, its children F p + 1 .. F p + F
// (F = kFanout = 4: depth log4 N, five levels at 1024 ranks, while a parent
// takes only four 0-byte arrivals per phase). Up: a rank at depth d waits for
// its children (r.c0) and puts a 0-byte 'ready' to its parent at step D-d-1
// (D the tree's depth). Down: the parent puts 'go' to each child (r.c1) at step
// D+d. Child i of a parent uses rail i mod k both ways.
// Hockney: T = 2 ceil(log4 N) ts (+ up to 4 arrivals per level at each parent);
// 2 (N-1) messages, no bytes.
#include <algorithm>

#include "algos/barrier/barrier.hpp"
#include "core/registry.hpp"

namespace railcoll::barrier {

namespace {
constexpr int kFanout = 4;

// The 'ready' phase, and with `go` the 'go' phase.
void build_phases(ScheduleBuilder& b, const Topology& t, bool go) {
  const int N = t.nranks();
  enum { kReady = 0, kGo = 1 };
  auto depth = [](int p) {
    int d = 0;
    for (; p > 0; p = (p - 1) / kFanout) ++d;
    return d;
  };
  const int D = depth(N - 1);
  for (int p = 0; p < N; ++p) {
    const int d = depth(p), first = kFanout * p + 1;
    const int kids = std::max(0, std::min(N, first + kFanout) - first);
    b.wait(p, D - d - 1, b.rank_counter(p, kReady), kids);
    if (p > 0) {
      int port = (p - 1) % kFanout;
      b.put(p, D - d, (p - 1) / kFanout, {}, port % t.rails(), b.rank_counter((p - 1) / kFanout, kReady));
      if (go) b.wait(p, D + d - 1, b.rank_counter(p, kGo), 1);
    }
    if (go)
      for (int i = 0; i < kids; ++i) b.put(p, D + d, first + i, {}, i % t.rails(), b.rank_counter(first + i, kGo));
  }
}

void build_tree(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  build_phases(b, t, true);
}

const AlgorithmRegistrar registered{{Collective::Barrier, 3, "tree",
    "balanced 4-ary tree: 'ready' up to rank 0, 'go' down the same tree (elan_gsync)",
    "2 ceil(log4 N) ts",
    "seed 004 §4.1 Fig. 6, seed 003 §4.3", {}, build_tree}};

}  // namespace

Schedule build_tree_ready(const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  ScheduleBuilder b(Collective::Barrier, "tree_ready", t, L, o);
  build_phases(b, t, false);
  return b.finish();
}

}  // namespace railcoll::barrier
