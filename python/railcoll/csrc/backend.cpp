// The process group: set-up and options, posting in issue order, the
// coalescing manager, split_group, shutdown.
#include "backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace railcoll_torch {

namespace {

// Sets an environment variable for the life of this object unless it is set.
// (Set-up runs under the GIL-free creator, but process groups are made one at
// a time by torch, so no other set-up reads the environment meanwhile.)
class EnvDefault {
 public:
  EnvDefault(const char* name, const std::string& value) : name_(name) {
    if (std::getenv(name)) return;
    setenv(name, value.c_str(), 0);
    set_ = true;
  }
  ~EnvDefault() {
    if (set_) unsetenv(name_);
  }

 private:
  const char* name_;
  bool set_ = false;
};

int64_t chunk_bytes_setting() {
  const char* c = std::getenv("RAILCOLL_TORCH_CHUNK_MIB");
  if (!c) return 4 << 20;
  char* end = nullptr;
  const double mib = std::strtod(c, &end);
  if (end == c || *end || !(mib >= 0) || mib > 1 << 20)
    C10_THROW_ERROR(DistBackendError,
                    std::string("railcoll: RAILCOLL_TORCH_CHUNK_MIB='") + c + "' is not a size in MiB (0: no chunks)");
  return static_cast<int64_t>(mib * (1 << 20));
}

}  // namespace

BackendRailcoll::BackendRailcoll(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, double timeout_s,
                                 const std::string& group_id)
    : c10d::Backend(rank, size), timeout_s_(timeout_s) {
  // The C API reads these at set-up; the caller's own settings win.
  // RAILCOLL_TIMEOUT: the group's timeout is the deadline of every wait.
  // RAILCOLL_SPIN_US: 0, a waiting thread sleeps at once: the ranks' Python
  // threads need the cores to issue their calls (docs/torch.md, "The communicator").
  EnvDefault timeout("RAILCOLL_TIMEOUT", std::to_string(std::max(1L, static_cast<long>(timeout_s))));
  EnvDefault spin("RAILCOLL_SPIN_US", "0");
  // All-reduces in chunks posted back to back (docs/torch.md, "Large all-reduces").
  chunk_bytes_ = chunk_bytes_setting();
  comm_ = std::make_unique<Comm>(store, "railcoll/" + group_id + "/" + std::to_string(generation(group_id)), rank,
                                 size, group_id);
}

BackendRailcoll::~BackendRailcoll() { shutdown(); }

void BackendRailcoll::shutdown() {
  std::deque<c10::intrusive_ptr<RailcollWork>> left;
  {
    std::lock_guard<std::recursive_mutex> lock(post_mutex_);
    if (stopping_) return;
    stopping_ = true;
    left.swap(outstanding_);
  }
  for (auto& w : left) {
    try {
      w->wait();
    } catch (...) {
      // Its error is the Work's; the communicator goes either way.
    }
  }
  futures_.stop();
  if (comm_) comm_->destroy();
}

int BackendRailcoll::generation(const std::string& group_id) {
  static std::mutex m;
  static std::map<std::string, int> made;
  std::lock_guard<std::mutex> lock(m);
  return made[group_id]++;
}

// split_group: `ranks` are this group's ranks of the new group, in its order;
// a rank outside it gets no backend (as Gloo's).
c10::intrusive_ptr<c10d::Backend> BackendRailcoll::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                         const std::vector<int>& ranks,
                                                         const c10::intrusive_ptr<Options>& opts) {
  const auto it = std::find(ranks.begin(), ranks.end(), rank_);
  if (it == ranks.end()) return nullptr;
  const double timeout_s = opts ? std::chrono::duration<double>(opts->timeout).count() : timeout_s_;
  const std::string name = opts && !opts->group_name.empty() ? opts->group_name : "split";
  return c10::make_intrusive<BackendRailcoll>(store, static_cast<int>(it - ranks.begin()),
                                              static_cast<int>(ranks.size()), timeout_s, name);
}

c10::intrusive_ptr<c10d::Backend::Options> BackendRailcoll::getBackendOptions() {
  return c10::make_intrusive<Options>("railcoll", std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000)));
}

void BackendRailcoll::startCoalescing() {
  std::lock_guard<std::recursive_mutex> lock(post_mutex_);
  if (coalescing_) fail("startCoalescing: this group is coalescing already");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> BackendRailcoll::endCoalescing() {
  std::vector<c10::intrusive_ptr<RailcollWork>> parts;
  {
    std::lock_guard<std::recursive_mutex> lock(post_mutex_);
    if (!coalescing_) fail("endCoalescing without startCoalescing");
    coalescing_ = false;
    parts.swap(coalesced_);
  }
  std::vector<at::Tensor> outputs;
  for (auto& p : parts)
    for (auto& t : p->result()) outputs.push_back(t);
  auto work = c10::make_intrusive<RailcollWork>(rank_, c10d::OpType::COALESCED, "coalesced", outputs);
  work->join(std::move(parts));
  return work;
}

c10::intrusive_ptr<RailcollWork> BackendRailcoll::post(c10d::OpType type, const char* op, std::vector<at::Tensor> outputs,
                                                       const std::function<void(RailcollWork&)>& start) {
  auto work = c10::make_intrusive<RailcollWork>(rank_, type, op, std::move(outputs));
  work->on_future([this](RailcollWork* w) {
    futures_.add(c10::intrusive_ptr<RailcollWork>::unsafe_reclaim_from_nonowning(w));
  });
  // Recursive: a future's callback run by reaping may post again.
  std::lock_guard<std::recursive_mutex> lock(post_mutex_);
  if (stopping_) fail(std::string(op) + ": the process group was destroyed");
  while (!outstanding_.empty() && outstanding_.front()->reap()) outstanding_.pop_front();
  if (coalescing_) coalesced_.push_back(work);
  try {
    start(*work);
  } catch (...) {
    work->fail_post(std::current_exception());
    return work;
  }
  outstanding_.push_back(work);
  return work;
}

void BackendRailcoll::check(Status st, const char* op) const {
  if (st != kOk) C10_THROW_ERROR(DistBackendError, call_failed(op, rank_, st));
}

at::Tensor BackendRailcoll::stage(RailcollWork& w, const at::Tensor& t, at::ScalarType carried) {
  at::Tensor x = staged(t, carried);
  w.keep(x);
  return x;
}

std::vector<at::Tensor> BackendRailcoll::per_rank_list(const std::vector<std::vector<at::Tensor>>& lists,
                                                       const at::Tensor& like, const std::string& op,
                                                       const std::string& what) const {
  if (lists.size() != 1 || static_cast<int>(lists[0].size()) != size_)
    fail(op + " needs one list of " + std::to_string(size_) + " " + what);
  for (auto& t : lists[0]) {
    check_cpu(t, op.c_str());
    if (t.numel() != like.numel() || t.scalar_type() != like.scalar_type())
      fail(op + ": every tensor of the list must have the size and dtype of the " +
           (what.rfind("input", 0) == 0 ? "output" : "input"));
  }
  return lists[0];
}

double BackendRailcoll::capi_allreduce_us(at::Tensor t, int iters, bool nonblocking) {
  barrier(c10d::BarrierOptions())->wait();
  ReducePlan plan = reduce_plan(t.scalar_type(), c10d::ReduceOp(c10d::ReduceOp::SUM), "all_reduce");
  return comm_->allreduce_us(t.data_ptr(), t.numel(), plan.c, iters, nonblocking);
}

}  // namespace railcoll_torch
