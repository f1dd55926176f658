#include "core/topology.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "core/errors.hpp"

namespace railcoll {

namespace {
constexpr int kMaxRanks = 1 << 16;
constexpr int kMaxRails = 64;

void check_rails(int rails) {
  if (rails < 1) throw InputError("rails must be at least 1 (got " + std::to_string(rails) + ")");
  if (rails > kMaxRails)
    throw InputError("rails must be at most " + std::to_string(kMaxRails) + " (got " +
                     std::to_string(rails) + ")");
}
void check_ranks(long n) {
  if (n < 1) throw InputError("ranks must be at least 1 (got " + std::to_string(n) + ")");
  if (n > kMaxRanks)
    throw InputError("ranks must be at most " + std::to_string(kMaxRanks) + " (got " +
                     std::to_string(n) + ")");
}
}  // namespace

Topology Topology::from_ppn(int nranks, int ppn, int rails) {
  check_ranks(nranks);
  check_rails(rails);
  if (ppn < 1) throw InputError("ppn must be at least 1 (got " + std::to_string(ppn) + ")");
  Topology t;
  t.rails_ = rails;
  t.node_of_.resize(nranks);
  for (int r = 0; r < nranks; ++r) t.node_of_[r] = r / ppn;
  t.derive();
  return t;
}

Topology Topology::from_node_sizes(const std::vector<int>& sizes, int rails) {
  check_rails(rails);
  if (sizes.empty()) throw InputError("node list is empty");
  long total = 0;
  for (int s : sizes) {
    if (s < 1) throw InputError("every node needs at least 1 rank (got " + std::to_string(s) + ")");
    total += s;
    check_ranks(total);
  }
  Topology t;
  t.rails_ = rails;
  for (size_t n = 0; n < sizes.size(); ++n)
    for (int i = 0; i < sizes[n]; ++i) t.node_of_.push_back(static_cast<int>(n));
  t.derive();
  return t;
}

Topology Topology::from_node_map(const std::vector<int>& node_of_rank, int rails) {
  check_rails(rails);
  check_ranks(static_cast<long>(node_of_rank.size()));
  std::map<int, int> dense;
  for (int id : node_of_rank) {
    if (id < 0) throw InputError("node ids must be non-negative (got " + std::to_string(id) + ")");
    dense.emplace(id, 0);
  }
  int next = 0;
  for (auto& kv : dense) kv.second = next++;
  Topology t;
  t.rails_ = rails;
  for (int id : node_of_rank) t.node_of_.push_back(dense[id]);
  t.derive();
  return t;
}

void Topology::derive() {
  int nn = *std::max_element(node_of_.begin(), node_of_.end()) + 1;
  node_ranks_.assign(nn, {});
  local_rank_.assign(node_of_.size(), 0);
  for (int r = 0; r < nranks(); ++r) {
    local_rank_[r] = static_cast<int>(node_ranks_[node_of_[r]].size());
    node_ranks_[node_of_[r]].push_back(r);
  }
}

int Topology::max_node_size() const {
  size_t m = 0;
  for (auto& v : node_ranks_) m = std::max(m, v.size());
  return static_cast<int>(m);
}

bool Topology::uniform() const {
  for (auto& v : node_ranks_)
    if (v.size() != node_ranks_[0].size()) return false;
  return true;
}

std::string Topology::node_sizes_string() const {
  std::string s;
  for (int n = 0; n < nnodes(); ++n) s += (n ? "," : "") + std::to_string(node_size(n));
  return s;
}

std::string Topology::describe() const {
  std::string s = std::to_string(nranks()) + " ranks, ";
  if (uniform())
    s += std::to_string(nnodes()) + " node" + (nnodes() > 1 ? "s" : "") + " x " +
         std::to_string(node_size(0));
  else
    s += "nodes " + node_sizes_string();
  bool consecutive = true;
  for (auto& v : node_ranks_)
    if (v.back() - v.front() + 1 != static_cast<int>(v.size())) consecutive = false;
  if (!consecutive) s += " (non-consecutive)";
  s += ", " + std::to_string(rails_) + " rail" + (rails_ > 1 ? "s" : "");
  return s;
}

}  // namespace railcoll
