#include "core/registry.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "core/errors.hpp"

namespace railcoll {

namespace {

// Built on first use, so a registrar in any file may run first.
std::vector<AlgoSpec>& table() {
  static std::vector<AlgoSpec> algorithms;
  return algorithms;
}

bool listed_before(const AlgoSpec& a, const AlgoSpec& b) {
  return std::make_tuple(a.collective, a.order, std::string(a.name)) <
         std::make_tuple(b.collective, b.order, std::string(b.name));
}

}  // namespace

AlgorithmRegistrar::AlgorithmRegistrar(AlgoSpec spec) {
  if (find_algorithm(spec.collective, spec.name))
    throw std::logic_error(std::string("algorithm ") + collective_name(spec.collective) + "/" + spec.name +
                           " is registered twice");
  auto& t = table();
  t.insert(std::upper_bound(t.begin(), t.end(), spec, listed_before), std::move(spec));
}

AlgorithmRegistrar::AlgorithmRegistrar(AlgoSpec spec, Collective also) : AlgorithmRegistrar(spec) {
  spec.collective = also;
  AlgorithmRegistrar{std::move(spec)};
}

const std::vector<AlgoSpec>& all_algorithms() { return table(); }

const AlgoSpec* find_algorithm(Collective collective, const std::string& name) {
  for (auto& a : all_algorithms())
    if (collective == a.collective && name == a.name) return &a;
  return nullptr;
}

std::string algorithm_names(Collective collective) {
  std::string names;
  for (auto& a : all_algorithms())
    if (a.collective == collective) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

std::string order_keeping_names(Collective collective) {
  std::string names;
  for (auto& a : all_algorithms())
    if (a.collective == collective && a.keeps_order) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names.empty() ? "none of its algorithms" : names;
}

std::string unknown_algorithm_message(Collective collective, const std::string& name, const std::string& source) {
  return "unknown " + std::string(collective_name(collective)) + " algorithm '" + name + "' (" +
         (source.empty() ? "" : "from " + source + "; ") + "one of: " + algorithm_names(collective) + ")";
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
  if (c.reducing && opts.redop == ReduceOp::User) {
    if (opts.dtype != DataType::Byte || opts.elem_bytes == 0)
      throw InputError(std::string(c.name) + " with a user operator takes opaque elements of its own size (> 0 bytes)");
    for (uint64_t n : counts)
      if (n % opts.elem_bytes != 0)
        throw InputError(std::string(c.name) + ": " + std::to_string(n) + " bytes is not a whole number of the user "
                         "operator's " + std::to_string(opts.elem_bytes) + "-byte elements");
  } else if (c.reducing) {
    if (opts.dtype == DataType::Byte)
      throw InputError(std::string(c.name) + " needs a data type (" + dtype_names() + ")");
    if (!redop_applies(opts.redop, opts.dtype))
      throw InputError(std::string(c.name) + ": the operator " + redop_name(opts.redop) + " is not defined on " +
                       dtype_name(opts.dtype) + " (bitwise and logical operators take integers, minloc and maxloc the pairs)");
    size_t e = dtype_size(opts.dtype);
    for (uint64_t n : counts)
      if (n % e != 0)
        throw InputError(std::string(c.name) + " of " + dtype_name(opts.dtype) + ": " + std::to_string(n) +
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
  const size_t N = topo.nranks();
  const bool per_pair = traits(collective).result == Result::BlocksByDest;
  if (counts.size() != N && !(per_pair && counts.size() == N * N))
    throw InputError("got " + std::to_string(counts.size()) + " block sizes for " + std::to_string(N) + " ranks" +
                     (per_pair ? " (one per rank or one per pair of ranks)" : ""));
  uint64_t total = 0;
  for (uint64_t c : counts) {
    if (c > kMaxBytesPerRank)
      throw InputError("bytes per rank " + std::to_string(c) + " is above the limit of 2^40");
    total += c * (per_pair && counts.size() == N ? N : 1);
    if (total > kMaxTotalBytes) throw InputError("total bytes (ranks x bytes) is above the limit of 2^48");
  }
  check_call_args(collective, topo, counts, opts);
  if (traits(collective).reducing && opts.redop == ReduceOp::User && !opts.commutative && !spec->keeps_order)
    throw InputError(coll + "/" + algorithm + " does not combine in rank order, which a non-commutative operator "
                     "needs (" + coll + " algorithms that do: " + order_keeping_names(collective) + ")");
  if (opts.concurrency < 0) throw InputError("concurrency must be at least 1");
  if (opts.stripe_threshold == 0) throw InputError("stripe threshold must be at least 1 byte");
  const BlockLayout layout = per_pair ? BlockLayout::per_pair(topo.nranks(), counts) : BlockLayout(counts);
  ScheduleBuilder builder(collective, spec->name, topo, layout, opts);
  spec->build(builder, topo, layout, opts);
  return builder.finish();
}

}  // namespace railcoll
