// Dissemination barrier (Hensgen, Finkel and Manber 1988).
//
// Step s = 0..ceil(log2 N)-1: rank p signals p + 2^s (mod N) with a 0-byte put
// and waits for the signal of p - 2^s. After the last step every rank has
// heard, directly or through others, from every rank.
// Hockney: T = ceil(log2 N) * ts; N*ceil(log2 N) messages, no bytes.
#include "core/registry.hpp"

namespace railcoll::barrier {

namespace {

void build_dissemination(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  for (int p = 0; p < N; ++p) {
    int step = 0;
    for (long d = 1; d < N; d *= 2, ++step) {
      int to = static_cast<int>((p + d) % N);
      b.put(p, step, to, {}, step % t.rails(), b.rank_counter(to, step));
      b.wait(p, step, b.rank_counter(p, step), 1);
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Barrier, 1, "dissemination",
    "dissemination: log2 N rounds, rank p signals p + 2^s",
    "ceil(log2 N) ts",
    "Hensgen, Finkel, Manber 1988", {}, build_dissemination}};

}  // namespace

}  // namespace railcoll::barrier
