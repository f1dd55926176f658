// Ring allreduce (Patarasuk and Yuan 2009; the "ring" of NCCL and Gloo): the
// vector is cut into N chunks; N-1 reduce-scatter steps pass partial chunks to
// the right neighbour, which combines them; N-1 all-gather steps pass the
// finished chunks around the ring straight into the neighbours' recv.
// Bandwidth-optimal: every rank sends 2 (N-1)/N of the vector.
// Hockney: T = 2 (N-1) (ts + m/N tau) + (N-1) m/N gamma
#include "algos/allreduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allreduce {

namespace {

void build_ring(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  const uint64_t m = L.count[0];
  Chunks ch(m, element_size(o), N);
  auto chunk = [&](int c) { return ((c % N) + N) % N; };
  for (int r = 0; r < N; ++r) {
    b.copy(r, 0, {{b.send(r, 0, m), b.recv(r, 0, m)}});
    // Step i's chunk lands in its own scratch slot: the right neighbour may send
    // step i+1 before this rank has combined step i.
    b.set_scratch(r, N > 1 ? m : 0);
  }
  for (int i = 0; i + 1 < N; ++i) {  // reduce-scatter: rank r passes chunk r-i
    for (int r = 0; r < N; ++r) {
      int right = (r + 1) % N, out = chunk(r - i), in = chunk(r - 1 - i);
      b.put(r, i, right, {{b.recv(r, ch.begin(out), ch.size(out)), b.scratch(right, ch.begin(out), ch.size(out))}},
            b.rail_for(ch.size(out), i), b.rank_counter(right, i));
      b.wait(r, i, b.rank_counter(r, i), 1);
      b.reduce(r, i, {{b.scratch(r, ch.begin(in), ch.size(in)), b.recv(r, ch.begin(in), ch.size(in))}});
    }
  }
  for (int i = 0; i + 1 < N; ++i) {  // all-gather: rank r passes finished chunk r+1-i
    int step = N - 1 + i;
    for (int r = 0; r < N; ++r) {
      int right = (r + 1) % N, out = chunk(r + 1 - i);
      b.put(r, step, right, {{b.recv(r, ch.begin(out), ch.size(out)), b.recv(right, ch.begin(out), ch.size(out))}},
            b.rail_for(ch.size(out), i), b.rank_counter(right, step));
      b.wait(r, step, b.rank_counter(r, step), 1);
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allreduce, 2, "ring",
    "ring reduce-scatter then ring all-gather, N chunks",
    "2 (N-1) (ts + m/N tau) + (N-1)/N m gamma",
    "Patarasuk and Yuan 2009", {}, build_ring, /*keeps_order=*/false, /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::allreduce
