// railcoll as a torch.distributed backend for CPU tensors (docs/torch.md).
//
// Built against the installed torch and railcoll's public C API only (capi.hpp
// is the one file that calls it). The communicator is set up through the
// Store torch hands the backend. Every operation is checked, staged and posted
// on the calling thread, in issue order, as railcoll's nonblocking call: the
// communicator's progress thread advances it while Python computes, and its
// Work completes when the request does (work.hpp).
//
// The rooms: backend.cpp (the process group: set-up, options, posting,
// coalescing, split, shutdown), collectives.cpp (the collectives),
// point_to_point.cpp (send, recv, monitored barrier), dtypes.cpp (reduce
// types and staging), work.cpp, capi.cpp, module.cpp (Python).
#pragma once
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "capi.hpp"
#include "dtypes.hpp"
#include "work.hpp"

namespace railcoll_torch {

class BackendRailcoll : public c10d::Backend {
 public:
  BackendRailcoll(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, double timeout_s,
                  const std::string& group_id);
  ~BackendRailcoll() override;

  const std::string getBackendName() const override { return "railcoll"; }
  // What split_group copies for the new group (its timeout).
  c10::intrusive_ptr<Options> getBackendOptions() override;
  // Completes the outstanding operations, then ends the communicator (every rank does).
  void shutdown() override;

  // ---- process groups made from this one (backend.cpp)
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  // The coalescing manager with a device: the operations in between complete as one Work.
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // ---- collectives (collectives.cpp)
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather_into_tensor(at::Tensor& output, at::Tensor& input,
                                                    const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // ---- point to point (point_to_point.cpp)
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;

  // The C API call alone, on the caller's thread, after the outstanding
  // operations: what the backend adds per call is the torch call's time minus
  // this (bench.py --call-cost).
  double capi_allreduce_us(at::Tensor t, int iters, bool nonblocking);

 private:
  // Makes the Work of one operation and posts it (start() stages the tensors
  // and posts railcoll's nonblocking calls) under the post lock, so the C API
  // sees the group's operations in issue order. A failed post fails the Work,
  // not the call: its error comes from wait() and the future, as a failure in
  // the collective would. Works that finished meanwhile are completed first.
  c10::intrusive_ptr<RailcollWork> post(c10d::OpType type, const char* op, std::vector<at::Tensor> outputs,
                                             const std::function<void(RailcollWork&)>& start);

  // A post the C API refused: its message, raised from the Work.
  void check(Status st, const char* op) const;
  // The tensor the library works on for `t` (staged()), kept for it.
  static at::Tensor stage(RailcollWork& w, const at::Tensor& t, at::ScalarType carried);
  // The one list of world-size tensors a rooted or scattering call takes, each
  // of the size and dtype of `like`.
  std::vector<at::Tensor> per_rank_list(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like,
                                        const std::string& op, const std::string& what) const;

  c10::intrusive_ptr<RailcollWork> post_recv(at::Tensor t, int src, int tag);
  // Posting helpers of the collectives (collectives.cpp).
  void post_allreduce(RailcollWork& w, const at::Tensor& x, const ReducePlan& plan, const char* op);
  void post_allgather(RailcollWork& w, const at::Tensor& out, const at::Tensor& in, const char* op);
  void post_reduce_scatter(RailcollWork& w, const at::Tensor& flat, const at::Tensor& out, const ReducePlan& plan,
                           const char* op);
  void check_gather_into(const at::Tensor& out, const at::Tensor& in, const char* op) const;

  // How many communicators of this group name this process has made before: a
  // name comes back after destroy_process_group, and its Store may still hold
  // the earlier set-up's keys. Every member makes them in the same order.
  static int generation(const std::string& group_id);

  std::unique_ptr<Comm> comm_;
  int64_t chunk_bytes_ = 4 << 20;  // RAILCOLL_TORCH_CHUNK_MIB; 0: one call per all-reduce
  double timeout_s_;
  std::recursive_mutex post_mutex_;
  // Every posted operation until it completed (the caller may drop its Work):
  // the buffers stay alive and shutdown() completes them.
  std::deque<c10::intrusive_ptr<RailcollWork>> outstanding_;
  bool stopping_ = false;
  bool coalescing_ = false;
  int monitored_barriers_ = 0;  // calls so far: each one's messages have a tag of their own
  std::vector<c10::intrusive_ptr<RailcollWork>> coalesced_;  // between startCoalescing and endCoalescing
  FutureThread futures_;
};

}  // namespace railcoll_torch
