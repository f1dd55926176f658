// Point to point: send, recv, recv from any source (railcoll_isend and
// railcoll_irecv: beside the collectives, not in their order), and the
// monitored barrier built on them.
#include "backend.hpp"

#include <thread>

namespace railcoll_torch {

using c10d::OpType;

namespace {
// The monitored barriers' messages: tags no torch program uses (c10d's are
// small), one per call in turn, so that a late rank's message for a barrier
// rank 0 gave up on cannot pass for its message of the next one.
constexpr int kMonitoredBarrierTags = 0x7f000000, kMonitoredBarrierTurns = 1 << 20;
}  // namespace

c10::intrusive_ptr<c10d::Work> BackendRailcoll::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  at::Tensor t = single(tensors, "send");
  return post(OpType::SEND, "send", {t}, [&](RailcollWork& w) {
    at::Tensor x = stage(w, t, t.scalar_type());
    check(comm_->send(x.data_ptr(), bytes_of(x), dst, tag, w.next_request()), "send");
  });
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  return post_recv(single(tensors, src == kAnySource ? "recv (any source)" : "recv"), src, tag);
}

c10::intrusive_ptr<RailcollWork> BackendRailcoll::post_recv(at::Tensor t, int src, int tag) {
  auto source = std::make_shared<int>(src);
  auto work = post(src == kAnySource ? OpType::RECVANYSOURCE : OpType::RECV, "recv", {t}, [&](RailcollWork& w) {
    at::Tensor y = stage(w, t, t.scalar_type());
    check(comm_->recv(y.data_ptr(), bytes_of(y), src, tag, source.get(), w.next_request()), "recv");
    w.keep_alive(source);
    w.then([t, y]() mutable { copy_back(t, y); });
  });
  work->source_from([source] { return *source; });
  return work;
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  return recv(tensors, kAnySource, tag);
}

// As Gloo's: every rank tells rank 0 it arrived and waits for its answer;
// rank 0 waits for each rank until the timeout and names the ranks that did
// not come (the first, or with wait_all_ranks every one).
void BackendRailcoll::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const auto timeout = opts.timeout == c10d::kUnsetTimeout
                           ? std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000))
                           : std::chrono::duration_cast<std::chrono::milliseconds>(opts.timeout);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<at::Tensor> one{at::zeros({1}, at::kByte)};
  auto waited = [&](const auto& w) {
    const auto left = std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                  deadline - std::chrono::steady_clock::now()));
    try {
      w->wait(left);
      return true;
    } catch (const std::exception& e) {
      if (std::string(e.what()).find("timed out") == std::string::npos) throw;
      return false;
    }
  };
  const std::string ms = std::to_string(timeout.count()) + " ms";
  const int kMonitoredBarrierTag = kMonitoredBarrierTags + monitored_barriers_++ % kMonitoredBarrierTurns;
  if (rank_ != 0) {
    auto sent = send(one, 0, kMonitoredBarrierTag);
    auto got = post_recv(at::zeros({1}, at::kByte), 0, kMonitoredBarrierTag);
    const bool ok = waited(sent) && waited(got);
    if (!ok) got->abandon("monitored_barrier gave up on rank 0's answer");
    if (!ok)
      C10_THROW_ERROR(DistBackendError, "railcoll: monitored_barrier: rank 0 did not answer rank " +
                                            std::to_string(rank_) + " within " + ms);
    return;
  }
  std::vector<c10::intrusive_ptr<RailcollWork>> works(size_);
  for (int r = 1; r < size_; ++r) works[r] = post_recv(at::zeros({1}, at::kByte), r, kMonitoredBarrierTag);
  std::vector<int> missing;
  for (int r = 1; r < size_; ++r) {
    if (waited(works[r])) continue;
    missing.push_back(r);
    if (!wait_all_ranks) break;
  }
  if (!missing.empty()) {
    for (int r = 1; r < size_; ++r) works[r]->abandon("monitored_barrier gave up on rank " + std::to_string(r));
    std::string who;
    for (int r : missing) who += (who.empty() ? "" : ", ") + std::to_string(r);
    C10_THROW_ERROR(DistBackendError, "railcoll: monitored_barrier: rank" + std::string(missing.size() > 1 ? "s " : " ") +
                                          who + " did not reach the barrier within " + ms +
                                          " (they failed, hung or run behind)");
  }
  std::vector<c10::intrusive_ptr<c10d::Work>> answers;
  for (int r = 1; r < size_; ++r) answers.push_back(send(one, r, kMonitoredBarrierTag));
  for (auto& a : answers) a->wait();
}

}  // namespace railcoll_torch
