// Trees and pipeline chunks shared by the rooted collectives (bcast, gather,
// barrier) and by the SMP all-gather's broadcast phase.
#pragma once
#include <cstdint>
#include <vector>

namespace railcoll::trees {

// Ranks renumbered so that the root is 0 (MPICH's "relative rank").
inline int relative(int rank, int root, int n) { return (rank - root + n) % n; }
inline int absolute(int rel, int root, int n) { return (rel + root) % n; }

// ceil(log_base n); 0 for n <= 1.
int ceil_log(long base, long n);

// Binomial tree on 0..n-1 rooted at 0, in MPICH's shape: v's subtree is the
// contiguous range [v, v + 2^low(v)) cut at n, where low(v) is the index of v's
// lowest set bit (levels() for the root), so a scatter or a gather moves one
// contiguous range per edge. The parent of v is v - 2^low(v); its children are
// v + 2^j for j < low(v), largest subtree first. The edge to child c is used at
// step down_step(c) going down (bcast, scatter) and up_step(c) going up (gather).
class BinomialTree {
 public:
  explicit BinomialTree(int n) : n_(n), levels_(ceil_log(2, n)) {}
  int levels() const { return levels_; }
  int low(int v) const;
  int parent(int v) const { return v - (1 << low(v)); }
  int subtree_end(int v) const;
  std::vector<int> children(int v) const;
  int down_step(int v) const { return levels_ - 1 - low(v); }
  int up_step(int v) const { return low(v); }

 private:
  int n_, levels_;
};

// The (k+1)-nomial tree of a k-port broadcast (seed 001 §6.2.1, Phase 3): in
// round t every v < (k+1)^t sends to v + j*(k+1)^t, j = 1..k, on port j-1.
// ceil(log_{k+1} n) rounds.
struct KnomialEdge {
  int child, round, port;
};
std::vector<KnomialEdge> knomial_children(int v, int n, int k);
// The round in which v > 0 receives from its parent.
int knomial_round_received(int v, int k);

// Pipelines (pipelined_chain, smp bcast): a message of `bytes` crossing `hops`
// forwarding hops in C chunks, each hop using all `rails` (a chunk striped, or
// consecutive chunks on different rails), costs (hops - 1 + C) (ts + bytes/(C k) tau),
// least at C = sqrt((hops - 1) bytes / (k ts/tau)). railcoll takes ts/tau =
// kLatencyBytes (the emulated cluster's calibrated rails, presets/testbed.preset:
// about 16 us at 115 MB/s, 1.8 KB; QsNetII: 1.7 us at 900 MB/s, 1.5 KB) and caps C.
constexpr uint64_t kLatencyBytes = 2048;
constexpr int kMaxChunks = 64;
int pipeline_chunks(uint64_t bytes, int hops, int rails);
// The same model's cost, in units of tau (bytes): (hops - 1 + C) (kLatencyBytes + bytes/(C k)).
double pipeline_cost(uint64_t bytes, int hops, int rails, int chunks);
// Chunk c of `chunks` even chunks of a message: [chunk_begin(c), chunk_begin(c+1)).
inline uint64_t chunk_begin(uint64_t bytes, int chunks, int c) {
  return bytes / chunks * c + bytes % chunks * c / chunks;
}

}  // namespace railcoll::trees
