// Rabenseifner's reduce (Rabenseifner 2004; Thakur, Rabenseifner, Gropp 2005,
// §4.4): a reduce-scatter by recursive halving of the vector cut into N chunks
// of whole elements (reduce_scatter/common.hpp), then a gather of the chunks:
// each rank puts its finished chunk straight into the root's recv at its place,
// on rail r mod k (striped above the threshold). Bandwidth-optimal for long
// vectors: (N-1)/N of the vector crosses each rank twice instead of log2 N times.
// Hockney: T = log2 p2 ts + (p2-1)/p2 m (tau + gamma) + ceil((N-1)/k) ts + (N-1)/N m tau
//          (+ ts + m tau + m gamma when N is not a power of two)
#include "algos/reduce_scatter/common.hpp"

namespace railcoll::reduce {

namespace {

void build_rabenseifner(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const uint64_t m = L.count[0];
  const allreduce::Chunks chunks(m, element_size(o), N);
  std::vector<uint64_t> sizes;
  for (int c = 0; c < N; ++c) sizes.push_back(chunks.size(c));
  const BlockLayout C(sizes);
  int arrivals = 0, counter = 0;  // the chunks put into the root, and the counter they notify
  const int last = reduce_scatter::recursive_halving(
      b, C, [&](int r) { return b.send(r, 0, m); }, 0, 0,
      [&](int chunk, int holder, Span reduced, int step, int ctr) {
        const Span dst = b.recv(root, C.displ[chunk], C.count[chunk]);
        counter = ctr;
        if (holder == root) return b.copy(root, step, {{reduced, dst}});
        b.put(holder, step, root, {{reduced, dst}}, b.rail_for(reduced.length, holder), b.rank_counter(root, ctr));
        ++arrivals;
      });
  b.wait(root, last - 1, b.rank_counter(root, counter), arrivals);
}

const AlgorithmRegistrar registered{{Collective::Reduce, 2, "rabenseifner",
    "reduce-scatter by recursive halving, then every chunk put straight into the root",
    "log2 N ts + (N-1)/N m (tau + gamma) + ceil((N-1)/k) ts + (N-1)/N m tau",
    "Rabenseifner 2004", {}, build_rabenseifner, /*keeps_order=*/false,
    /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::reduce
