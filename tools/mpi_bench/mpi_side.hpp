// MPI as the side channel of a peer's benchmark program (bench/peer.hpp): the
// job's ranks, its nodes (ranks that share memory) and the statistics'
// gathering between timed calls. Used by railcoll-mpi-bench and
// railcoll-oneccl-bench, both started by mpirun.
#pragma once
#include <mpi.h>

#include <vector>

#include "bench/peer.hpp"

namespace railcoll::bench {

class MpiSide : public SideChannel {
 public:
  MpiSide() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node;
    int local = 0, local_size = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    local_rank_ = local, local_size_ = local_size;
    int leader = local == 0;
    MPI_Allreduce(&leader, &nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&local_size, &ppn_, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&node);
  }
  int rank() override { return rank_; }
  int size() override { return size_; }
  int nodes() override { return nodes_; }
  int max_ppn() override { return ppn_; }
  int local_rank() const { return local_rank_; }  // among the ranks of its node
  int local_size() const { return local_size_; }
  void gather(const std::vector<double>& mine, std::vector<double>* all) override {
    if (rank_ == 0) all->assign(mine.size() * static_cast<size_t>(size_), 0);
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, rank_ == 0 ? all->data() : nullptr,
               static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
  uint64_t sum(uint64_t mine) override {
    unsigned long long in = mine, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
  bool all_equal(uint64_t mine) override {
    unsigned long long in = mine, lo = 0, hi = 0;
    MPI_Allreduce(&in, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&in, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
  }

 private:
  int rank_ = 0, size_ = 1, nodes_ = 1, ppn_ = 1, local_rank_ = 0, local_size_ = 1;
};

}  // namespace railcoll::bench
