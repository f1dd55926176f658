#include "verify/sweep.hpp"

#include <atomic>
#include <mutex>
#include <thread>

#include "verify/verifier.hpp"

namespace railcoll {

namespace {

// The node layouts of the sweep, by name.
Topology layout(int which, int N, int k) {
  switch (which) {
    case 0: return Topology::from_ppn(N, 1, k);
    case 1: return Topology::from_ppn(N, 2, k);
    case 2: return Topology::from_ppn(N, 3, k);
    case 3: return Topology::from_ppn(N, 4, k);
    case 4: return Topology::from_ppn(N, 8, k);
    case 5: {  // uneven nodes: sizes 3,1,4,2,5,3,1,4,... cut to N
      const int pattern[] = {3, 1, 4, 2, 5};
      std::vector<int> sizes;
      for (int left = N, i = 0; left > 0; ++i) {
        int s = std::min(left, pattern[i % 5]);
        sizes.push_back(s);
        left -= s;
      }
      return Topology::from_node_sizes(sizes, k);
    }
    default: {  // non-consecutive: rank r on node (r * 7) % M, M ~ N/3
      int M = std::max(1, N / 3);
      std::vector<int> map;
      for (int r = 0; r < N; ++r) map.push_back((r * 7 + r / M) % M);
      return Topology::from_node_map(map, k);
    }
  }
}
constexpr int kLayouts = 7;

std::vector<uint64_t> sizes(int which, int N) {
  switch (which) {
    case 0: return std::vector<uint64_t>(N, 0);
    case 1: return std::vector<uint64_t>(N, 1);
    case 2: return std::vector<uint64_t>(N, 7);
    case 3: return std::vector<uint64_t>(N, 1500);  // above the 1 KiB stripe threshold
    default: {                                      // all-gatherv: per-rank sizes, some 0
      std::vector<uint64_t> v;
      for (int r = 0; r < N; ++r) v.push_back((r * 5 + 3) % 7 == 0 ? 0 : (r * 37) % 11 + 1);
      return v;
    }
  }
}
constexpr int kSizes = 5;

// alltoallv: per-pair sizes (row = source), odd, uneven, some 0, some striped.
std::vector<uint64_t> pair_sizes(int N) {
  std::vector<uint64_t> v;
  for (int s = 0; s < N; ++s)
    for (int d = 0; d < N; ++d) {
      const int h = (s * 7 + d * 3 + s * d) % 13;
      v.push_back(h < 3 ? 0 : h == 12 ? 1100 + s : static_cast<uint64_t>(h * 5 + d % 3));
    }
  return v;
}

}  // namespace

std::string SweepCase::label() const {
  const CollectiveTraits& c = traits(collective);
  std::string s = std::string(c.name) + "/" + algorithm + " " + topo.describe() + ", bytes ";
  bool uniform = true;
  for (auto c : counts) uniform &= c == counts[0];
  s += uniform ? std::to_string(counts[0]) : "variable";
  if (opts.concurrency) s += ", concurrency " + std::to_string(opts.concurrency);
  if (c.rooted) s += ", root " + std::to_string(opts.root);
  if (c.reducing && opts.redop == ReduceOp::User)
    s += ", user operator on " + std::to_string(opts.elem_bytes) + "-byte elements" +
         (opts.commutative ? "" : ", non-commutative");
  else if (c.reducing)
    s += std::string(", ") + dtype_name(opts.dtype) + " " + redop_name(opts.redop);
  if (in_place) s += ", in place";
  return s;
}

std::vector<SweepCase> sweep_cases(Collective collective, const std::string& algorithm) {
  std::vector<SweepCase> out;
  const AlgoSpec* spec = find_algorithm(collective, algorithm);
  const CollectiveTraits& coll = traits(collective);
  bool takes_c = false;
  for (auto& o : spec->options) takes_c |= o == "concurrency";
  int index = 0;
  auto add = [&](int N, int k, int lay, int size) {
    SweepCase c;
    c.collective = collective;
    c.algorithm = algorithm;
    c.topo = layout(lay, N, k);
    c.counts = sizes(size, N);
    if (coll.rooted) c.opts.root = (index * 5) % N;  // roots other than 0
    if (coll.equal_counts && size == kSizes - 1)
      c.counts.assign(N, 13);  // no per-rank sizes: one count for every rank
    else if (coll.result == Result::BlocksByDest && size == kSizes - 1)
      c.counts = pair_sizes(N);  // alltoallv: a count per pair, some 0
    if (coll.reducing) {  // counts in elements of every type; every (type, operator) pair over the sweep
      const auto& types = reduction_types();
      const auto& ops = reduction_ops();
      c.opts.dtype = types[index % types.size()];
      c.opts.redop = ops[(index / types.size()) % ops.size()];
      for (size_t k = 1; !redop_applies(c.opts.redop, c.opts.dtype); ++k)  // the next operator the type has
        c.opts.redop = ops[(index / types.size() + k) % ops.size()];
      // A user operator on elements of its own size, every algorithm a commutative one, an
      // algorithm that keeps rank order a non-commutative one too (the order checked).
      if (index % 3 == 2 || (spec->keeps_order && index % 3 == 1)) {
        c.opts.redop = ReduceOp::User;
        c.opts.dtype = DataType::Byte;
        c.opts.elem_bytes = index % 2 ? 12 : 32;
        c.opts.commutative = index % 3 == 2;
      }
      for (auto& n : c.counts) n *= element_size(c.opts);
    }
    // An algorithm that claims in-place calls need no copy of the input: every
    // other case with send and recv one buffer.
    c.in_place = spec->in_place_ok && index % 2 == 1;
    if (takes_c && index % 3 != 0) {
      c.opts.concurrency = 1 + index % 5;
      c.given = {"concurrency"};
    }
    ++index;
    out.push_back(std::move(c));
  };
  for (int N = 1; N <= 64; ++N)
    for (int k = 1; k <= 4; ++k)
      for (int lay = 0; lay < kLayouts; ++lay) add(N, k, lay, (N + k + lay) % kSizes);
  // Every root of small communicators, over every layout and size.
  for (int N = 2; coll.rooted && N <= 12; ++N)
    for (int root = 0; root < N; ++root) {
      add(N, 1 + root % 4, (N + root) % kLayouts, root % kSizes);
      out.back().opts.root = root;
    }
  if (coll.rooted)  // every root of small N, with per-rank sizes
    for (int N = 2; N <= 9; ++N)
      for (int root = 0; root < N; ++root) {
        const size_t at = out.size();
        add(N, 1 + root % 4, (N + root) % kLayouts, kSizes - 1);
        out[at].opts.root = root;
      }
  for (int N : {81, 96, 125, 128, 130, 200, 256})
    for (int k = 1; k <= 4; ++k) {
      add(N, k, (N + k) % kLayouts, (N + k) % kSizes);
      add(N, k, (N + k + 3) % kLayouts, 3);
    }
  return out;
}

SweepOutcome run_sweep(const std::vector<SweepCase>& cases) {
  SweepOutcome out;
  std::vector<std::string> first_error(cases.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < cases.size();) {
      const SweepCase& c = cases[i];
      try {
        Schedule s = build_schedule(c.collective, c.algorithm, c.topo, c.counts, c.opts, c.given);
        VerifyResult v = verify_schedule(s, c.in_place);
        if (!v.ok()) first_error[i] = (c.in_place ? "in place: " : "") + v.errors[0];
      } catch (const std::exception& e) {
        first_error[i] = c.label() + ": building the schedule failed: " + e.what();
      }
    }
  };
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (auto& e : first_error) {
    if (e.empty()) {
      ++out.passed;
    } else {
      ++out.failed;
      if (out.failures.size() < 10) out.failures.push_back(e);
    }
  }
  return out;
}

}  // namespace railcoll
