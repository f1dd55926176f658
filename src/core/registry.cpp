#include "core/registry.hpp"

#include <algorithm>

#include "algos/allgather/allgather.hpp"
#include "algos/allreduce/allreduce.hpp"
#include "algos/barrier/barrier.hpp"
#include "algos/bcast/bcast.hpp"
#include "algos/gather/gather.hpp"
#include "core/errors.hpp"

namespace railcoll {

const std::vector<AlgoSpec>& all_algorithms() {
  using namespace allgather;
  static const std::vector<AlgoSpec> table = {
      {Collective::Allgather, "direct", "k-port Direct: each rank writes its block to k others per step",
       "ceil((N-1)/k) (ts + m tau)", "seed 000 §6.1", {}, build_direct},
      {Collective::Allgather, "stdex", "k-port Standard Exchange (recursive doubling in base k+1), correction steps",
       "log_{k+1}N ts + (N-1)/k m tau", "seed 000 §6.2, seed 001 §6.1.2", {}, build_stdex},
      {Collective::Allgather, "bruck", "k-port Bruck: log_{k+1} N rounds on a rotated buffer, final local shift",
       "ceil(log_{k+1}N) ts + (N-1)/k m tau", "seed 000 §6.3", {}, build_bruck},
      {Collective::Allgather, "ring", "ring: N-1 steps, each rank forwards one block to its right neighbour",
       "(N-1) (ts + m tau)", "seed 001 §2 (elan_gather, large messages)", {}, build_ring},
      {Collective::Allgather, "recursive_doubling", "pairwise exchange: log2 N steps, message doubles each step",
       "log2N ts + (N-1) m tau", "seed 002 §3 eq. (2)", {}, build_recursive_doubling},
      {Collective::Allgather, "gather_bcast", "binomial gather to rank 0, then binomial broadcast (native baseline)",
       "2 log2N ts + (N-1) m tau + log2N N m tau", "seed 000 §2, seed 001 §2", {}, build_gather_bcast},
      {Collective::Allgather, "concurrent_exchange", "C groups exchange pairwise, every message also to the peers of the pair",
       "sum_i [T(2^i m) + (C-1) delta], i < log2(N/C)", "seed 002 §3.1", {"concurrency"},
       build_concurrent_exchange},
      {Collective::Allgather, "concurrent_exchange_split", "pairwise exchange, half of each block to the pair, half to the co-pair",
       "sum_i T2(2^i m / 2), i < log2 N", "seed 002 §3.2", {}, build_concurrent_exchange_split},
      {Collective::Allgather, "smp_gather_bcast", "shm gather, Direct gather of masters to root, broadcast, shm copy-out",
       "P m c + (ts + (M-1) P m tau/k) + ceil(log_{k+1}M) (ts + N m tau) + N m c", "seed 001 §6.2.1", {}, build_smp_gather_bcast},
      {Collective::Allgather, "smp_direct", "shm gather, k-port Direct among node masters, overlapped shm copy-out",
       "P m c + ceil((M-1)/k) (ts + P m tau) + (N-P) m c", "seed 001 §6.2.2", {}, build_smp_direct},
      {Collective::Allgather, "smp_bruck", "shm gather, k-port Bruck among node masters, copy-out instead of shift",
       "P m c + ceil(log_{k+1}M) ts + (M-1)/k P m tau + (N-P) m c", "seed 001 §6.2.2", {}, build_smp_bruck},
      {Collective::Allgather, "smp_multileader", "shm gather, every local rank sends its share of the node on rail r mod k",
       "P m c + (M-1) (ts + P m tau / k) + (N-P) m c", "railcoll (beyond seed 001)", {},
       build_smp_multileader},
      {Collective::Barrier, "dissemination", "dissemination: log2 N rounds, rank p signals p + 2^s",
       "ceil(log2 N) ts", "Hensgen, Finkel, Manber 1988", {}, barrier::build_dissemination},
      {Collective::Barrier, "smp", "shared-memory flags inside a node, dissemination among node leaders",
       "2 t_flag + ceil(log2 M) ts", "seed 001 §5.1 flags, seed 004 §4", {}, barrier::build_smp},
      {Collective::Barrier, "tree", "balanced 4-ary tree: 'ready' up to rank 0, 'go' down the same tree (elan_gsync)",
       "2 ceil(log4 N) ts", "seed 004 §4.1 Fig. 6, seed 003 §4.3", {}, barrier::build_tree},
      {Collective::Barrier, "hw_combining", "hardware barrier: readies combined by the switches, one multicast 'go'",
       "2 ts (hardware); 2 (N-1) messages as plain puts", "seed 004 §4.1 Fig. 7, seed 003 §4.3", {},
       barrier::build_hw_combining},
      {Collective::Bcast, "binomial", "binomial tree from the root, step s on rail s mod k",
       "ceil(log2 N) (ts + m tau)", "seed 004 §2.3.2, seed 003 §4.2", {}, bcast::build_binomial},
      {Collective::Bcast, "scatter_allgather", "binomial scatter of N chunks, then ring all-gather of the chunks (van de Geijn)",
       "(ceil(log2 N) + N-1) ts + 2 (N-1)/N m tau", "van de Geijn; MPICH long bcast", {},
       bcast::build_scatter_allgather},
      {Collective::Bcast, "pipelined_chain", "chain over the ranks (node-major), message in C chunks, chunk c on rail c mod k",
       "(N-2+C) (ts + m/C tau), C = sqrt((N-2) m / 2 KiB)", "seed 000 §5 striping; pipelined chain", {},
       bcast::build_pipelined_chain},
      {Collective::Bcast, "smp", "node leaders receive into shared memory, forward at once (tree or chunked chain), shm copy-out",
       "C=1: R (ts + m tau) + 2 m c; C>1: (M-2+C) (ts + m/C tau/k) + m/C c", "seed 004 §4.2, seed 001 §5.1", {},
       bcast::build_smp},
      {Collective::Bcast, "hw_multicast", "hardware multicast: one flagged put per destination, one injection",
       "ts + m tau (hardware); (N-1) (ts + m tau) as plain puts", "seed 004 §4.2, seed 003 §4.1", {},
       bcast::build_hw_multicast},
      {Collective::Gather, "tree", "binomial gather to the root, subtrees collected in scratch",
       "ceil(log2 N) ts + (N-1) m tau", "seed 001 §2 (elan_gather)", {}, gather::build_tree},
      {Collective::Gather, "direct", "k-port Direct: every rank puts its block into the root's recv, port (v-1) mod k",
       "ceil((N-1)/k) (ts + m tau)", "seed 000 §6.1, seed 001 §2", {}, gather::build_direct},
      {Collective::Gather, "smp", "shm gather per node, leaders put node blocks to the root, root copies out",
       "P m c + ceil((M-1)/k) (ts + P m tau) + P m c", "seed 001 §5.1, §6.2.1", {}, gather::build_smp},
      // allreduce
      {Collective::Allreduce, "recursive_doubling", "log2 N exchanges of the whole vector, both partners combine",
       "ceil(log2 N) (ts + m tau + m gamma)", "seed 002 §3 pairwise exchange, combining", {},
       allreduce::build_recursive_doubling},
      {Collective::Allreduce, "ring", "ring reduce-scatter then ring all-gather, N chunks",
       "2 (N-1) (ts + m/N tau) + (N-1)/N m gamma", "Patarasuk and Yuan 2009", {}, allreduce::build_ring},
      {Collective::Allreduce, "rabenseifner", "reduce-scatter by recursive halving, all-gather by recursive doubling",
       "2 log2 N ts + 2 (N-1)/N m tau + (N-1)/N m gamma", "Rabenseifner 2004", {}, allreduce::build_rabenseifner},
      {Collective::Allreduce, "smp", "shm reduce-scatter in the node, one leader per slice across nodes, shm copy-out",
       "2 m c + (P-1)/P m gamma + ceil(log2 M) (ts + m/P tau + m/P gamma)", "seed 003 §2, seed 004 §4, seed 001 §5.1",
       {}, allreduce::build_smp},
      {Collective::Allreduce, "smp_leader", "one leader per node combines the node in shm, leaders allreduce, results sent out",
       "m c + (P-1) m gamma + ceil(log2 M) (ts + m tau + m gamma) + (P-1) (ts_shm + m c)", "seed 004 §4", {},
       allreduce::build_smp_leader},
  };
  return table;
}

const AlgoSpec* find_algorithm(Collective collective, const std::string& name) {
  for (auto& a : all_algorithms())
    if (collective == a.collective && name == a.name) return &a;
  return nullptr;
}

namespace {

// The arguments of rooted and reducing collectives: the errors every rank must
// report alike (the sizes are checked against each other by the caller).
void check_call_args(Collective collective, const Topology& topo, const std::vector<uint64_t>& counts,
                     const AlgoOptions& opts) {
  const CollectiveTraits& c = traits(collective);
  const int N = topo.nranks();
  if (c.rooted && (opts.root < 0 || opts.root >= N))
    throw InputError("root " + std::to_string(opts.root) + " is out of range (" + std::to_string(N) + " ranks)");
  bool equal = std::all_of(counts.begin(), counts.end(), [&](uint64_t n) { return n == counts[0]; });
  if (c.equal_counts && c.moves_data && !equal) throw InputError(std::string(c.name) + " needs the same byte count on every rank");
  if (c.reducing) {
    if (opts.dtype == DataType::Byte)
      throw InputError(std::string(c.name) + " needs a data type (int32, int64, float or double)");
    size_t e = dtype_size(opts.dtype);
    if (!counts.empty() && counts[0] % e != 0)
      throw InputError(std::string(c.name) + " of " + dtype_name(opts.dtype) + ": " + std::to_string(counts[0]) +
                       " bytes is not a whole number of " + std::to_string(e) + "-byte elements");
  }
}

}  // namespace

AlgoOptions call_defaults(Collective collective) {
  AlgoOptions o;
  if (traits(collective).reducing) o.dtype = DataType::Float32;
  return o;
}

Schedule build_schedule(Collective collective, const std::string& algorithm, const Topology& topo,
                        const std::vector<uint64_t>& counts, const AlgoOptions& opts,
                        const std::vector<std::string>& given_options) {
  const std::string coll = collective_name(collective);
  if (!traits(collective).user_facing) throw InputError("collective '" + coll + "' has no algorithms to build");
  const AlgoSpec* spec = find_algorithm(collective, algorithm);
  if (!spec)
    throw InputError("unknown " + coll + " algorithm '" + algorithm + "' (railcoll algos lists them)");
  for (auto& o : given_options)
    if (std::find(spec->options.begin(), spec->options.end(), o) == spec->options.end())
      throw InputError(coll + " algorithm '" + algorithm + "' does not take the option --" + o);
  if (static_cast<int>(counts.size()) != topo.nranks())
    throw InputError("got " + std::to_string(counts.size()) + " block sizes for " +
                     std::to_string(topo.nranks()) + " ranks");
  uint64_t total = 0;
  for (uint64_t c : counts) {
    if (c > kMaxBytesPerRank)
      throw InputError("bytes per rank " + std::to_string(c) + " is above the limit of 2^40");
    total += c;
    if (total > kMaxTotalBytes) throw InputError("total bytes (ranks x bytes) is above the limit of 2^48");
  }
  check_call_args(collective, topo, counts, opts);
  if (opts.concurrency < 0) throw InputError("concurrency must be at least 1");
  if (opts.stripe_threshold == 0) throw InputError("stripe threshold must be at least 1 byte");
  return spec->build(topo, BlockLayout(counts), opts);
}

}  // namespace railcoll
