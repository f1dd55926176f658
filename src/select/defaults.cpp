// The default rules: which algorithm `auto` runs when neither the call, nor
// RAILCOLL_<COLL>_ALGO, nor a tuning file says. First match wins; every
// collective ends with a rule that matches everything. docs/selection.md shows
// this table (a test compares the two).
//
// Where the thresholds come from (each rule's measurement, simulated or on
// the emulated cluster, is in docs/results.md, "The measurements behind the
// default rules"; a rule's reason keeps only the principle and its source):
// * allgather: the emulated cluster (4 nodes x 4 ranks, 2 rails) and the
//   papers' findings: shared memory inside a node always pays; small messages
//   want few network steps (SMP Bruck, seed 001 §7: SMP Gather+Bcast best for
//   the smallest, SMP Bruck for the middle sizes); large ones want every rail
//   driven at once (one leader per rail).
// * allreduce: ranks that share a node combine in shared memory first; one rank
//   per node wants latency (recursive doubling) for short vectors and bandwidth
//   (reduce-scatter + all-gather) for long ones.
// * reduce_scatter(_block) and reduce: the simulator on the calibrated testbed
//   (presets/testbed.preset, 4x4 and 4x1, 2 rails; docs/selection.md), except
//   where the emulated cluster's measurements overruled it: smp_pipelined for
//   reduce-scatter below smp_ring's sizes and binomial for reduce on multi-rank
//   nodes below the chain's sizes. smp_ring (one stream into and out of each
//   node) from 64 KiB blocks on up to 8 multi-rank nodes: measured ahead of
//   smp_pipelined on 4 nodes (the faithful and the 1 Gbit/s clusters), as the
//   model of the testbed puts it; the model of a 16-node machine puts its M-1
//   hops behind smp_pipelined's one (docs/selection.md). smp_chain (the rail bound's
//   traffic: no node takes in more than the vector) from 256 KiB on
//   multi-rank nodes, where the model puts it
//   ahead on 2-16 nodes (0.6x binomial's time at 4x4, 256 KiB; at 16 nodes it
//   passes binomial between 256 and 512 KiB); with one rank per node from
//   1 MiB on up to 8 nodes (on 16, rabenseifner's halving stays ahead to 4 MiB).
// * bcast and gather: the simulator on the calibrated testbed and on the seeds'
//   machines (QsNetII 4x4 dual rail, Elan3 64x4, Elan4 and InfiniBand 128x1):
//   smp is fastest wherever nodes hold several ranks, at every size. With one
//   rank per node it is the k-port tree, or the striped chain for long
//   messages; scatter_allgather beats both only for long messages on large
//   flat machines. Gather: direct's one network step beats the binomial tree
//   at every size in the model, and smp adds the node's shared memory.
// * alltoall(v) on several ranks per node: measured on the emulated cluster;
//   the tiny-block rule for one rank per node, scatter(v) and gatherv: the
//   simulator, on the calibrated testbed (4 x 4, 2 rails) and the seeds' large
//   machines (elan4 128x1, elan3 64x4).
// * hw_multicast and hw_combining are never chosen: the runtime has no such
//   hardware and refuses them (select.hpp software_equivalent names their twins).
#include "select/select.hpp"

namespace railcoll {

namespace {

constexpr Range kAny{};
constexpr Range kOne{1, 1};
constexpr Range kSeveral{2, kNoLimit};  // ranks/node: some node holds several ranks
constexpr Range upto(uint64_t hi) { return {0, hi}; }
constexpr Range from(uint64_t lo) { return {lo, kNoLimit}; }
constexpr uint64_t KiB = 1024;

struct Row {
  Collective collective;
  Range ranks, nodes, ppn, bytes, node_bytes;
  const char* algorithm;
  const char* reason;
};

// The reasons of the reduce-scatter rules, which both of its collectives share.
constexpr const char* kRsSmpRing = "combine in shared memory first, in pieces; the nodes' partials round a ring of the nodes, one stream into and out of each (measured, emulated cluster, 4 nodes)";
constexpr const char* kRsSmp = "combine in shared memory first, in pieces, each sent to its node as it is done (measured, emulated cluster)";
constexpr const char* kRsHalving = "one rank per node, short blocks: log2 N steps (simulated testbed)";
constexpr const char* kRsDirect = "one rank per node: one network step (simulated testbed)";
constexpr const char* kRsRing = "one rank per node, long blocks: the ring (simulated testbed)";
// Both reduce rules of the chain.
constexpr const char* kReduceChain = "several nodes, long vectors: every node takes in and sends the vector once, in pieces along a chain (simulated testbed)";
// The prefix reductions' rules, which scan and exscan share: the simulator.
constexpr const char* kScanChain = "few ranks, middle sizes: the chain's one message per rank at a time (simulated testbed)";
constexpr const char* kScanSmp = "prefix inside each node in shared memory, one message per step per node (simulated testbed, elan3, qsnet2)";
constexpr const char* kScanFew = "one rank per node, up to 4: 3 hops beat 2 exchanges that both load the rails (simulated testbed)";
constexpr const char* kScanDoubling = "one rank per node: log2 N steps (simulated elan4, testbed)";

// clang-format off
const Row kRows[] = {
  // collective           ranks      nodes  ranks/node bytes/rank       bytes/node     algorithm
  {Collective::Allgather, kAny,      kOne,  kAny,      kAny,            kAny,          "smp_direct",
   "one node: shared memory only, no network step"},
  {Collective::Allgather, kAny,      kAny,  kAny,      kAny,            upto(2 * KiB), "smp_gather_bcast",
   "few network steps for small messages (seed 001 §7; measured, emulated cluster)"},
  {Collective::Allgather, kAny,      upto(4), kAny,    kAny,            upto(64 * KiB), "smp_direct",
   "few nodes: each leader's one step to every other node (measured, emulated cluster)"},
  {Collective::Allgather, kAny,      kAny,  kAny,      kAny,            upto(64 * KiB), "smp_bruck",
   "SMP Bruck next (seed 001 §7; measured, emulated cluster)"},
  {Collective::Allgather, kAny,      kAny,  kOne,      kAny,            upto(512 * KiB), "smp_multileader_paced",
   "one rank per node: a share leaves when the last step's are in, one stream per rail and receiver (measured, emulated cluster)"},
  {Collective::Allgather, kAny,      kAny,  kAny,      kAny,            kAny,          "smp_multileader",
   "large messages drive every rail at once, one leader per rail (measured, emulated cluster)"},

  {Collective::Barrier,   kAny,      kAny,  kSeveral,  kAny,            kAny,          "smp",
   "shared-memory flags inside a node, dissemination among leaders"},
  {Collective::Barrier,   kAny,      kAny,  kAny,      kAny,            kAny,          "dissemination",
   "one rank per node: log2 N rounds, nothing to share"},

  {Collective::Bcast,     from(32),  kAny,  kOne,      from(128 * KiB), kAny,          "scatter_allgather",
   "large flat machines, long messages: the root's bytes leave once (simulated InfiniBand)"},
  {Collective::Bcast,     kAny,      kAny,  kAny,      kAny,            kAny,          "smp",
   "shared memory inside a node, the tree between nodes: where nodes hold several ranks, at every size (simulated testbed)"},

  {Collective::Gather,    kAny,      kAny,  kSeveral,  kAny,            kAny,          "smp",
   "direct's one network step plus the node's shared memory (simulator)"},
  {Collective::Gather,    kAny,      kAny,  kAny,      kAny,            kAny,          "direct",
   "one network step beats the binomial tree at every size (simulator)"},

  {Collective::Allreduce, kAny,      kAny,  kSeveral,  upto(64 * KiB),  kAny,          "smp_leader",
   "combine in shared memory first; one leader per node for short vectors"},
  {Collective::Allreduce, kAny,      kAny,  kSeveral,  kAny,            kAny,          "smp",
   "combine in shared memory first; one leader per slice for long vectors"},
  {Collective::Allreduce, kAny,      kAny,  kAny,      upto(16 * KiB),  kAny,          "recursive_doubling",
   "one rank per node, short vectors: latency"},
  {Collective::Allreduce, kAny,      kAny,  kAny,      kAny,            kAny,          "rabenseifner",
   "one rank per node, long vectors: bandwidth (reduce-scatter + all-gather)"},

  // reduce_scatter_block and reduce_scatter: the same algorithms, the same rules.
  {Collective::ReduceScatterBlock, kAny, upto(8), kSeveral, from(64 * KiB), kAny,      "smp_ring",
   kRsSmpRing},
  {Collective::ReduceScatterBlock, kAny, kAny, kSeveral, kAny,            kAny,          "smp_pipelined",
   kRsSmp},
  {Collective::ReduceScatterBlock, kAny, kAny, kAny,     upto(16 * KiB),  kAny,          "recursive_halving",
   kRsHalving},
  {Collective::ReduceScatterBlock, kAny, kAny, kAny,     upto(64 * KiB),  kAny,          "direct",
   kRsDirect},
  {Collective::ReduceScatterBlock, kAny, kAny, kAny,     kAny,            kAny,          "ring",
   kRsRing},
  {Collective::ReduceScatter, kAny,  upto(8), kSeveral, from(64 * KiB), kAny,         "smp_ring",
   kRsSmpRing},
  {Collective::ReduceScatter, kAny,  kAny,  kSeveral,  kAny,            kAny,          "smp_pipelined",
   kRsSmp},
  {Collective::ReduceScatter, kAny,  kAny,  kAny,      upto(16 * KiB),  kAny,          "recursive_halving",
   kRsHalving},
  {Collective::ReduceScatter, kAny,  kAny,  kAny,      upto(64 * KiB),  kAny,          "direct",
   kRsDirect},
  {Collective::ReduceScatter, kAny,  kAny,  kAny,      kAny,            kAny,          "ring",
   kRsRing},

  {Collective::Reduce,    kAny,      from(2), kSeveral, from(256 * KiB), kAny,         "smp_chain",
   kReduceChain},
  {Collective::Reduce,    kAny,      Range{2, 8}, kOne, from(1024 * KiB), kAny,          "smp_chain",
   kReduceChain},
  {Collective::Reduce,    kAny,      kOne,  kSeveral,  upto(4 * KiB),   kAny,          "smp",
   "one node, short vectors: flat through shared memory, no local socket (measured, one node of 8 ranks)"},
  {Collective::Reduce,    kAny,      kAny,  kSeveral,  kAny,            kAny,          "binomial",
   "log2 N steps; measured ahead of smp on the emulated cluster, where the simulator put smp ahead"},
  {Collective::Reduce,    kAny,      kAny,  kAny,      upto(128 * KiB), kAny,          "binomial",
   "one rank per node: log2 N steps (simulated testbed)"},
  {Collective::Reduce,    kAny,      kAny,  kAny,      kAny,            kAny,          "rabenseifner",
   "one rank per node, long vectors: reduce-scatter + gather (simulated testbed)"},
  // Personalised data (bytes: alltoall(v) per pair of ranks, scatter(v) per receiver).
  {Collective::Alltoall,  kAny,      kAny, kSeveral,  upto(16 * KiB),  kAny,          "smp_multileader",
   "node-to-node blocks, one leader per rail (measured, emulated cluster)"},
  {Collective::Alltoall,  kAny,      kAny, kAny,      upto(64),        kAny,          "bruck",
   "one rank per node, tiny blocks: log_{k+1} N messages (simulated elan4)"},
  {Collective::Alltoall,  kAny,      kAny, kAny,      kAny,            kAny,          "direct",
   "k-port pairwise, striped, one copy (measured, emulated cluster)"},
  {Collective::Alltoallv, kAny,      kAny, kSeveral,  upto(16 * KiB),  kAny,          "smp_multileader",
   "node-to-node blocks, one leader per rail (measured, emulated cluster)"},
  {Collective::Alltoallv, kAny,      kAny, kAny,      upto(64),        kAny,          "bruck",
   "one rank per node, tiny blocks: log_{k+1} N messages (simulated elan4)"},
  {Collective::Alltoallv, kAny,      kAny, kAny,      kAny,            kAny,          "direct",
   "k-port pairwise, striped, one copy (measured, emulated cluster)"},
  {Collective::Scatter,   kAny,      kAny, kSeveral,  upto(16 * KiB),  kAny,          "smp",
   "one message per node into its shared memory (simulated testbed)"},
  {Collective::Scatter,   from(64),  kAny, kAny,      upto(256),       kAny,          "binomial",
   "many ranks, tiny blocks: log2 N steps (simulated elan3)"},
  {Collective::Scatter,   kAny,      kAny, kAny,      kAny,            kAny,          "direct",
   "the root drives its k rails at once (simulated testbed)"},
  {Collective::Scatterv,  kAny,      kAny, kSeveral,  upto(16 * KiB),  kAny,          "smp",
   "one message per node into its shared memory (simulated testbed)"},
  {Collective::Scatterv,  from(64),  kAny, kAny,      upto(256),       kAny,          "binomial",
   "many ranks, tiny blocks: log2 N steps (simulated elan3)"},
  {Collective::Scatterv,  kAny,      kAny, kAny,      kAny,            kAny,          "direct",
   "the root drives its k rails at once (simulated testbed)"},
  {Collective::Gatherv,   kAny,      kAny, kSeveral,  upto(16 * KiB),  kAny,          "smp",
   "gather's smp: shared memory first (simulated testbed)"},
  {Collective::Gatherv,   kAny,      kAny, kAny,      kAny,            kAny,          "direct",
   "one network step, k ports (simulated testbed)"},
  // Prefix reductions: scan and exscan, the same rules.
  {Collective::Scan,      upto(16),  kAny, kSeveral,  Range{64 * KiB, 256 * KiB}, kAny, "linear", kScanChain},
  {Collective::Scan,      kAny,      kAny, kSeveral,  kAny,            kAny,          "smp", kScanSmp},
  {Collective::Scan,      upto(4),   kAny, kAny,      upto(128 * KiB), kAny,          "linear", kScanFew},
  {Collective::Scan,      kAny,      kAny, kAny,      kAny,            kAny,          "recursive_doubling", kScanDoubling},
  {Collective::Exscan,    upto(16),  kAny, kSeveral,  Range{64 * KiB, 256 * KiB}, kAny, "linear", kScanChain},
  {Collective::Exscan,    kAny,      kAny, kSeveral,  kAny,            kAny,          "smp", kScanSmp},
  {Collective::Exscan,    upto(4),   kAny, kAny,      upto(128 * KiB), kAny,          "linear", kScanFew},
  {Collective::Exscan,    kAny,      kAny, kAny,      kAny,            kAny,          "recursive_doubling", kScanDoubling},
};
// clang-format on

}  // namespace

const std::vector<Rule>& default_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> out;
    for (const Row& row : kRows) {
      Rule r;
      r.collective = row.collective;
      r.ranks = row.ranks;
      r.nodes = row.nodes;
      r.ppn = row.ppn;
      r.bytes = row.bytes;
      r.node_bytes = row.node_bytes;
      r.algorithm = row.algorithm;
      r.reason = row.reason;
      r.origin = "default#" + std::to_string(out.size());
      out.push_back(r);
    }
    return out;
  }();
  return rules;
}

}  // namespace railcoll
