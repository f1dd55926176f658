// The collectives: each checks its arguments (raising on the calling thread),
// stages its tensors and posts railcoll's nonblocking calls (docs/torch.md,
// "Operations").
#include "backend.hpp"

#include <cstring>

namespace railcoll_torch {

using c10d::OpType;
using c10d::ReduceOp;

// ---- posting helpers

// The all-reduce of `x` into itself, in place: one call, or one per chunk of
// chunk_bytes_ (RAILCOLL_TORCH_CHUNK_MIB) posted back to back. The C API
// copies the input of an in-place call only where the schedule needs it, and
// no all-reduce schedule does (AlgoSpec::in_place_ok). `x` is kept by `w` (stage).
void BackendRailcoll::post_allreduce(RailcollWork& w, const at::Tensor& x, const ReducePlan& plan, const char* op) {
  const int64_t n = x.numel(), elem = x.element_size(), per = chunk_bytes_ ? std::max<int64_t>(1, chunk_bytes_ / elem) : n;
  auto* out = static_cast<char*>(x.data_ptr());
  for (int64_t at = 0; at < n || at == 0; at += per) {
    const int64_t len = std::min(per, n - at);
    check(comm_->allreduce(nullptr, out + at * elem, len, plan.c, w.next_request()), op);
    if (n == 0) break;
  }
}

// An all-gather of `in` into `out`, copied back when `out` had to be staged.
// An input that is this rank's own block of the output (FSDP2 gathers so) is
// gathered in place; one overlapping the output otherwise is copied first.
void BackendRailcoll::post_allgather(RailcollWork& w, const at::Tensor& out, const at::Tensor& in, const char* op) {
  at::Tensor y = stage(w, out, out.scalar_type());
  const size_t n = bytes_of(in);
  auto* block = static_cast<char*>(y.data_ptr()) + rank_ * n;
  const bool own_block = y.is_same(out) && in.is_contiguous() && in.data_ptr() == block;
  const bool overlaps = out.storage().is_alias_of(in.storage());
  at::Tensor x = own_block ? in : overlaps ? in.clone(at::MemoryFormat::Contiguous) : stage(w, in, in.scalar_type());
  w.keep(x);
  check(comm_->allgather(own_block ? nullptr : x.data_ptr(), y.data_ptr(), n, w.next_request()), op);
  at::Tensor o = out;
  w.then([o, y]() mutable { copy_back(o, y); });
}

// The reduce-scatter of `flat` (world size blocks, in the carried dtype, only
// read); this rank's block lands in `out`.
void BackendRailcoll::post_reduce_scatter(RailcollWork& w, const at::Tensor& flat, const at::Tensor& out,
                                          const ReducePlan& plan, const char* op) {
  const int64_t n = flat.numel() / size_;
  at::Tensor block = at::empty({n}, flat.options());
  w.keep(flat);
  w.keep(block);
  check(comm_->reduce_scatter_block(flat.data_ptr(), block.data_ptr(), n, plan.c, w.next_request()), op);
  at::Tensor o = out;
  const int size = size_;
  w.then([o, block, plan, size]() mutable {
    apply_after(block, plan.after, size);
    copy_back(o, block);
  });
}

void BackendRailcoll::check_gather_into(const at::Tensor& out, const at::Tensor& in, const char* op) const {
  check_cpu(out, op);
  check_cpu(in, op);
  if (out.numel() != in.numel() * size_ || out.scalar_type() != in.scalar_type())
    fail(std::string(op) + ": the output must hold world size times the input, of its dtype");
}

// ---- broadcast and reductions

c10::intrusive_ptr<c10d::Work> BackendRailcoll::broadcast(std::vector<at::Tensor>& tensors,
                                                          const c10d::BroadcastOptions& opts) {
  at::Tensor t = single(tensors, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  return post(OpType::BROADCAST, "broadcast", {t}, [&](RailcollWork& w) {
    at::Tensor x = stage(w, t, t.scalar_type());
    check(comm_->bcast(x.data_ptr(), bytes_of(x), root, w.next_request()), "broadcast");
    w.then([t, x]() mutable { copy_back(t, x); });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::allreduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].is_sparse()) return allreduce_sparse(tensors, opts);
  at::Tensor t = single(tensors, "all_reduce");
  ReducePlan plan = reduce_plan(t.scalar_type(), opts.reduceOp, "all_reduce");
  return post(OpType::ALLREDUCE, "all_reduce", {t}, [&](RailcollWork& w) {
    at::Tensor x = stage(w, t, plan.carried);
    post_allreduce(w, x, plan, "all_reduce");
    const int size = size_;
    w.then([t, x, plan, size]() mutable {
      apply_after(x, plan.after, size);
      copy_back(t, x);
    });
  });
}

// A sparse (COO) tensor's sum, as Gloo computes it: every rank's indices and
// values all-gathered (their counts first, on the calling thread), summed by
// coalescing, written into the tensor.
c10::intrusive_ptr<c10d::Work> BackendRailcoll::allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                                 const c10d::AllreduceOptions& opts) {
  const char* op = "all_reduce (sparse)";
  if (tensors.size() != 1) fail(std::string(op) + " takes one tensor per call");
  at::Tensor t = tensors[0];
  if (!t.device().is_cpu() || !t.is_sparse()) fail(std::string(op) + " takes a sparse COO tensor on the CPU");
  if (opts.reduceOp != ReduceOp::SUM) fail(std::string(op) + " takes SUM (as gloo)");
  at::Tensor input = t.coalesce();
  at::Tensor indices = input._indices().contiguous(), values = input._values().contiguous();
  // What every rank holds: its nnz, and the shape it must share with the others.
  const int64_t nnz = indices.size(1), row = values.numel() / std::max<int64_t>(1, nnz);
  at::Tensor meta = at::tensor({nnz, static_cast<int64_t>(t.sparse_dim()), t.dim(), static_cast<int64_t>(values.scalar_type())},
                               at::kLong);
  at::Tensor metas = at::empty({4 * size_}, at::kLong);
  {
    std::vector<Request> req(1, kNoRequest);
    std::lock_guard<std::recursive_mutex> lock(post_mutex_);
    if (stopping_) fail(std::string(op) + ": the process group was destroyed");
    check(comm_->allgather(meta.data_ptr(), metas.data_ptr(), bytes_of(meta), &req[0]), op);
    check(wait_all(req), op);
  }
  std::vector<size_t> index_bytes(size_), value_bytes(size_);
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    const int64_t* m = metas.data_ptr<int64_t>() + 4 * r;
    if (m[1] != meta[1].item<int64_t>() || m[2] != meta[2].item<int64_t>() || m[3] != meta[3].item<int64_t>())
      fail(std::string(op) + ": rank " + std::to_string(r) + "'s tensor differs from this rank's in sparse "
                             "dimensions, dimensions or dtype");
    index_bytes[r] = static_cast<size_t>(m[0] * t.sparse_dim() * 8);
    value_bytes[r] = static_cast<size_t>(m[0] * row * values.element_size());
    total += m[0];
  }
  return post(OpType::ALLREDUCE, op, {t}, [&](RailcollWork& w) {
    at::Tensor all_indices = at::empty({t.sparse_dim(), total}, at::kLong);
    std::vector<int64_t> value_shape = values.sizes().vec();
    value_shape[0] = total;
    at::Tensor all_values = at::empty(value_shape, values.options());
    // Indices are laid out sparse_dim x nnz: gathered transposed (nnz x sparse_dim), one block per rank.
    at::Tensor mine_t = indices.t().contiguous();
    at::Tensor all_t = at::empty({total, t.sparse_dim()}, at::kLong);
    w.keep(mine_t);
    w.keep(all_t);
    w.keep(values);
    w.keep(all_values);
    check(comm_->allgatherv(mine_t.data_ptr(), all_t.data_ptr(), index_bytes, w.next_request()), op);
    check(comm_->allgatherv(values.data_ptr(), all_values.data_ptr(), value_bytes, w.next_request()), op);
    w.then([t, all_t, all_values]() mutable {
      at::Tensor sum = at::sparse_coo_tensor(all_t.t(), all_values, t.sizes()).coalesce();
      t.copy_(sum);
    });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                    const c10d::AllreduceCoalescedOptions& opts) {
  // One call over the tensors flattened, when they share a dtype (as DDP's buckets do).
  if (tensors.empty()) fail("all_reduce_coalesced got no tensors");
  for (auto& t : tensors) {
    check_cpu(t, "all_reduce_coalesced");
    if (t.scalar_type() != tensors[0].scalar_type()) fail("all_reduce_coalesced takes tensors of one dtype");
  }
  ReducePlan plan = reduce_plan(tensors[0].scalar_type(), opts.reduceOp, "all_reduce_coalesced");
  return post(OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced", tensors, [&](RailcollWork& w) {
    at::Tensor flat = stage(w, at::cat(flatten_each(tensors)), plan.carried);
    post_allreduce(w, flat, plan, "all_reduce_coalesced");
    std::vector<at::Tensor> outs = tensors;
    const int size = size_;
    w.then([outs, flat, plan, size]() mutable {
      apply_after(flat, plan.after, size);
      const int64_t per = outs.empty() || !outs[0].is_complex() ? 1 : 2;  // a complex element is two reals
      int64_t at = 0;
      for (auto& t : outs) {
        copy_back(t, flat.narrow(0, at, t.numel() * per));
        at += t.numel() * per;
      }
    });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::reduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::ReduceOptions& opts) {
  at::Tensor t = single(tensors, "reduce");
  ReducePlan plan = reduce_plan(t.scalar_type(), opts.reduceOp, "reduce");
  const int root = static_cast<int>(opts.rootRank);
  return post(OpType::REDUCE, "reduce", {t}, [&](RailcollWork& w) {
    at::Tensor x = stage(w, t, plan.carried);
    // The result into a buffer of its own on the root (the others' tensors stay as they were).
    at::Tensor out = rank_ == root ? at::empty_like(x) : at::Tensor();
    if (out.defined()) w.keep(out);
    check(comm_->reduce(x.data_ptr(), out.defined() ? out.data_ptr() : nullptr, x.numel(), plan.c, root,
                        w.next_request()),
          "reduce");
    const int size = size_;
    if (out.defined())
      w.then([t, out, plan, size]() mutable {
        apply_after(out, plan.after, size);
        copy_back(t, out);
      });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                               std::vector<std::vector<at::Tensor>>& inputs,
                                                               const c10d::ReduceScatterOptions& opts) {
  at::Tensor out = single(outputs, "reduce_scatter");
  std::vector<at::Tensor> ins = per_rank_list(inputs, out, "reduce_scatter", "input tensors");
  ReducePlan plan = reduce_plan(out.scalar_type(), opts.reduceOp, "reduce_scatter");
  return post(OpType::REDUCE_SCATTER, "reduce_scatter", {out}, [&](RailcollWork& w) {
    post_reduce_scatter(w, staged(at::cat(flatten_each(ins)), plan.carried), out, plan, "reduce_scatter");
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                     const c10d::ReduceScatterOptions& opts) {
  check_cpu(output, "reduce_scatter_tensor");
  check_cpu(input, "reduce_scatter_tensor");
  if (input.numel() != output.numel() * size_ || output.scalar_type() != input.scalar_type())
    fail("reduce_scatter_tensor: the input must hold world size times the output, of its dtype");
  ReducePlan plan = reduce_plan(output.scalar_type(), opts.reduceOp, "reduce_scatter_tensor");
  return post(OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {output}, [&](RailcollWork& w) {
    // The input as given when it is contiguous and of the carried dtype (the
    // library only reads it), else a contiguous copy.
    post_reduce_scatter(w, staged(input, plan.carried), output, plan, "reduce_scatter_tensor");
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor_coalesced";
  if (outputs.size() != inputs.size()) fail(std::string(op) + ": as many outputs as inputs");
  std::vector<ReducePlan> plans;
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_cpu(outputs[i], op);
    check_cpu(inputs[i], op);
    if (inputs[i].numel() != outputs[i].numel() * size_ || outputs[i].scalar_type() != inputs[i].scalar_type())
      fail(std::string(op) + ": each input must hold world size times its output, of its dtype");
    plans.push_back(reduce_plan(outputs[i].scalar_type(), opts.reduceOp, op));
  }
  return post(OpType::COALESCED, op, outputs, [&](RailcollWork& w) {
    for (size_t i = 0; i < outputs.size(); ++i)
      post_reduce_scatter(w, staged(inputs[i], plans[i].carried), outputs[i], plans[i], op);
  });
}

// ---- gathers

c10::intrusive_ptr<c10d::Work> BackendRailcoll::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllgatherOptions&) {
  at::Tensor in = single(inputs, "all_gather");
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != size_)
    fail("all_gather needs one list of " + std::to_string(size_) + " output tensors");
  std::vector<at::Tensor> outs = outputs[0];
  std::vector<size_t> counts;
  bool equal = true;
  size_t total = 0;
  for (auto& o : outs) {
    check_cpu(o, "all_gather");
    if (o.scalar_type() != in.scalar_type()) fail("all_gather: output and input dtypes differ");
    counts.push_back(bytes_of(o));
    total += bytes_of(o);
    equal = equal && o.numel() == in.numel();
  }
  if (outs[rank_].numel() != in.numel()) fail("all_gather: this rank's output and its input differ in size");
  return post(OpType::ALLGATHER, "all_gather", outs, [&](RailcollWork& w) {
    at::Tensor x = stage(w, in, in.scalar_type());
    at::Tensor flat = at::empty({static_cast<int64_t>(total)}, in.options().dtype(at::kByte));
    w.keep(flat);
    if (equal)
      check(comm_->allgather(x.data_ptr(), flat.data_ptr(), bytes_of(x), w.next_request()), "all_gather");
    else
      check(comm_->allgatherv(x.data_ptr(), flat.data_ptr(), counts, w.next_request()), "all_gather");
    w.then([flat, outs, counts]() mutable { unpack_bytes(flat, outs, counts); });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                const c10d::AllgatherOptions&) {
  check_gather_into(output, input, "all_gather_into_tensor");
  return post(OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {output},
              [&](RailcollWork& w) { post_allgather(w, output, input, "all_gather_into_tensor"); });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                std::vector<at::Tensor>& inputs,
                                                                                const c10d::AllgatherOptions&) {
  const char* op = "all_gather_into_tensor_coalesced";
  if (outputs.size() != inputs.size()) fail(std::string(op) + ": as many outputs as inputs");
  for (size_t i = 0; i < outputs.size(); ++i) check_gather_into(outputs[i], inputs[i], op);
  return post(OpType::COALESCED, op, outputs, [&](RailcollWork& w) {
    for (size_t i = 0; i < outputs.size(); ++i) post_allgather(w, outputs[i], inputs[i], op);
  });
}

// all_gather_coalesced: input i gathered into output list i.
c10::intrusive_ptr<c10d::Work> BackendRailcoll::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                    std::vector<at::Tensor>& inputs,
                                                                    const c10d::AllgatherOptions&) {
  const char* op = "all_gather_coalesced";
  // One list per rank, each holding that rank's block of every input.
  if (outputs.size() != static_cast<size_t>(size_))
    fail(std::string(op) + " needs one list of output tensors per rank (" + std::to_string(size_) + ")");
  std::vector<at::Tensor> flat_outs;
  for (auto& per_rank : outputs) {
    if (per_rank.size() != inputs.size())
      fail(std::string(op) + ": each rank's output list must hold one tensor per input");
    for (size_t i = 0; i < inputs.size(); ++i) {
      check_cpu(per_rank[i], op);
      check_cpu(inputs[i], op);
      if (per_rank[i].numel() != inputs[i].numel() || per_rank[i].scalar_type() != inputs[i].scalar_type())
        fail(std::string(op) + ": each output must have its input's size and dtype");
      flat_outs.push_back(per_rank[i]);
    }
  }
  return post(OpType::ALLGATHER_COALESCED, op, flat_outs, [&](RailcollWork& w) {
    // The inputs packed into one block of bytes per rank: one all-gather.
    at::Tensor block = at::cat(flatten_bytes(inputs));
    at::Tensor all = at::empty({block.numel() * size_}, block.options());
    w.keep(block);
    w.keep(all);
    check(comm_->allgather(block.data_ptr(), all.data_ptr(), bytes_of(block), w.next_request()), op);
    std::vector<std::vector<at::Tensor>> outs = outputs;
    std::vector<size_t> counts;
    for (auto& t : inputs) counts.push_back(bytes_of(t));
    const int64_t per = block.numel();
    w.then([all, outs, counts, per]() mutable {
      for (size_t r = 0; r < outs.size(); ++r) unpack_bytes(all.narrow(0, r * per, per), outs[r], counts);
    });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::GatherOptions& opts) {
  at::Tensor in = single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (rank_ == root) outs = per_rank_list(outputs, in, "gather", "output tensors on the root");
  return post(OpType::GATHER, "gather", outs, [&](RailcollWork& w) {
    at::Tensor x = stage(w, in, in.scalar_type());
    at::Tensor flat;
    if (rank_ == root) {
      flat = at::empty({static_cast<int64_t>(bytes_of(x) * size_)}, in.options().dtype(at::kByte));
      w.keep(flat);
    }
    check(comm_->gather(x.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr, bytes_of(x), root,
                        w.next_request()),
          "gather");
    if (flat.defined()) {
      std::vector<size_t> counts(size_, bytes_of(x));
      w.then([flat, outs, counts]() mutable { unpack_bytes(flat, outs, counts); });
    }
  });
}

// gather_into_tensor: straight into the root's output (world size times the input).
c10::intrusive_ptr<c10d::Work> BackendRailcoll::gather_into_tensor(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::GatherOptions& opts) {
  const char* op = "gather_into_tensor";
  const int root = static_cast<int>(opts.rootRank);
  check_cpu(input, op);
  if (rank_ == root) check_gather_into(output, input, op);
  std::vector<at::Tensor> outs;
  if (rank_ == root) outs.push_back(output);
  return post(OpType::GATHER, op, outs, [&](RailcollWork& w) {
    at::Tensor x = stage(w, input, input.scalar_type());
    at::Tensor y = rank_ == root ? stage(w, output, output.scalar_type()) : at::Tensor();
    check(comm_->gather(x.data_ptr(), y.defined() ? y.data_ptr() : nullptr, bytes_of(x), root, w.next_request()), op);
    if (y.defined()) {
      at::Tensor o = output;
      w.then([o, y]() mutable { copy_back(o, y); });
    }
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::scatter(std::vector<at::Tensor>& outputs,
                                                        std::vector<std::vector<at::Tensor>>& inputs,
                                                        const c10d::ScatterOptions& opts) {
  at::Tensor out = single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (rank_ == root) ins = per_rank_list(inputs, out, "scatter", "input tensors on the root");
  return post(OpType::SCATTER, "scatter", {out}, [&](RailcollWork& w) {
    at::Tensor y = stage(w, out, out.scalar_type());
    at::Tensor flat;
    if (rank_ == root) {
      flat = at::cat(flatten_bytes(ins));
      w.keep(flat);
    }
    check(comm_->scatter(flat.defined() ? flat.data_ptr() : nullptr, y.data_ptr(), bytes_of(y), root,
                         w.next_request()),
          "scatter");
    w.then([out, y]() mutable { copy_back(out, y); });
  });
}

// ---- all-to-all and barrier

c10::intrusive_ptr<c10d::Work> BackendRailcoll::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                              std::vector<int64_t>& out_splits,
                                                              std::vector<int64_t>& in_splits,
                                                              const c10d::AllToAllOptions&) {
  check_cpu(output, "all_to_all_single");
  check_cpu(input, "all_to_all_single");
  if (output.scalar_type() != input.scalar_type()) fail("all_to_all_single: output and input dtypes differ");
  // Bytes per row of dimension 0: splits count rows.
  const int64_t row_in = input.dim() ? bytes_of(input) / std::max<int64_t>(1, input.size(0)) : 0;
  const int64_t row_out = output.dim() ? bytes_of(output) / std::max<int64_t>(1, output.size(0)) : 0;
  std::vector<size_t> scount(size_), sdispl(size_), rcount(size_), rdispl(size_);
  const bool even = out_splits.empty() && in_splits.empty();
  if (even) {
    if (input.numel() % size_ || output.numel() != input.numel())
      fail("all_to_all_single without splits needs input and output of equal size divisible by the world size");
  } else {
    auto fill = [&](const std::vector<int64_t>& splits, const at::Tensor& t, int64_t row, std::vector<size_t>& c,
                    std::vector<size_t>& d, const char* what) {
      if (!splits.empty() && static_cast<int>(splits.size()) != size_)
        fail(std::string("all_to_all_single: ") + what + " split sizes need one entry per rank");
      size_t at = 0;
      for (int r = 0; r < size_; ++r) {
        int64_t rows = splits.empty() ? t.size(0) / size_ : splits[r];
        c[r] = static_cast<size_t>(rows * row);
        d[r] = at;
        at += c[r];
      }
      if (at != bytes_of(t))
        fail(std::string("all_to_all_single: the ") + what + " split sizes do not add up to its tensor");
    };
    fill(in_splits, input, row_in, scount, sdispl, "input");
    fill(out_splits, output, row_out, rcount, rdispl, "output");
  }
  return post(OpType::ALLTOALL_BASE, "all_to_all_single", {output}, [&](RailcollWork& w) {
    at::Tensor x = stage(w, input, input.scalar_type()), y = stage(w, output, output.scalar_type());
    if (even)
      check(comm_->alltoall(x.data_ptr(), y.data_ptr(), bytes_of(x) / size_, w.next_request()), "all_to_all_single");
    else
      check(comm_->alltoallv(x.data_ptr(), scount, sdispl, y.data_ptr(), rcount, rdispl, w.next_request()),
            "all_to_all_single");
    at::Tensor out = output;
    w.then([out, y]() mutable { copy_back(out, y); });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::alltoall(std::vector<at::Tensor>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::AllToAllOptions&) {
  if (static_cast<int>(outputs.size()) != size_ || static_cast<int>(inputs.size()) != size_)
    fail("all_to_all needs " + std::to_string(size_) + " input and output tensors");
  std::vector<size_t> scount(size_), sdispl(size_), rcount(size_), rdispl(size_);
  size_t s = 0, r = 0;
  for (int i = 0; i < size_; ++i) {
    check_cpu(inputs[i], "all_to_all");
    check_cpu(outputs[i], "all_to_all");
    scount[i] = bytes_of(inputs[i]);
    sdispl[i] = s;
    s += scount[i];
    rcount[i] = bytes_of(outputs[i]);
    rdispl[i] = r;
    r += rcount[i];
  }
  return post(OpType::ALLTOALL, "all_to_all", outputs, [&](RailcollWork& w) {
    at::Tensor x = at::cat(flatten_bytes(inputs));
    at::Tensor y = at::empty({static_cast<int64_t>(r)}, x.options());
    w.keep(x);
    w.keep(y);
    check(comm_->alltoallv(x.data_ptr(), scount, sdispl, y.data_ptr(), rcount, rdispl, w.next_request()),
          "all_to_all");
    std::vector<at::Tensor> outs = outputs;
    w.then([y, outs, rcount]() mutable { unpack_bytes(y, outs, rcount); });
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::barrier(const c10d::BarrierOptions&) {
  return post(OpType::BARRIER, "barrier", {},
              [&](RailcollWork& w) { check(comm_->barrier(w.next_request()), "barrier"); });
}

}  // namespace railcoll_torch
