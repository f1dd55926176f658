// Topology: which node each rank lives on and how many rails every node has.
// Nodes may hold different numbers of ranks and a node's ranks need not be
// consecutive; every algorithm must accept every topology (the architecture page, ../shared/design/ARCHITECTURE.md).
#pragma once
#include <string>
#include <vector>

namespace railcoll {

class Topology {
 public:
  Topology() = default;
  // N ranks, P per node (the last node may be short), k rails.
  static Topology from_ppn(int nranks, int ppn, int rails);
  // Node sizes in order: {4,4,5} puts ranks 0-3 on node 0, 4-7 on node 1, ...
  static Topology from_node_sizes(const std::vector<int>& sizes, int rails);
  // Node id of every rank; ids are renumbered densely in ascending order.
  static Topology from_node_map(const std::vector<int>& node_of_rank, int rails);

  int nranks() const { return static_cast<int>(node_of_.size()); }
  int nnodes() const { return static_cast<int>(node_ranks_.size()); }
  int rails() const { return rails_; }
  int node_of(int rank) const { return node_of_[rank]; }
  int local_rank(int rank) const { return local_rank_[rank]; }
  // Ranks of a node in ascending order; the first is the node leader (master).
  const std::vector<int>& ranks_of(int node) const { return node_ranks_[node]; }
  int node_size(int node) const { return static_cast<int>(node_ranks_[node].size()); }
  int leader(int node) const { return node_ranks_[node][0]; }
  bool is_leader(int rank) const { return local_rank_[rank] == 0; }
  // The rail a process drives when each rail has its own process (local rank mod k).
  int closest_rail(int rank) const { return local_rank_[rank] % rails_; }
  bool same_node(int a, int b) const { return node_of_[a] == node_of_[b]; }
  int max_node_size() const;
  bool uniform() const;  // every node has the same number of ranks

  // "16 ranks, 4 nodes x 4, 2 rails" or "13 ranks, nodes 4,4,5, 2 rails", plus
  // " (non-consecutive)" when a node's ranks are not a contiguous range.
  std::string describe() const;
  // Node sizes as "4,4,5".
  std::string node_sizes_string() const;

 private:
  void derive();
  int rails_ = 1;
  std::vector<int> node_of_;
  std::vector<int> local_rank_;
  std::vector<std::vector<int>> node_ranks_;
};

}  // namespace railcoll
