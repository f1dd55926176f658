// railcoll_comm_init_oob (railcoll.h): a communicator set up through the
// caller's all-gather instead of rank 0's store. The runtime already takes any
// rt::OutOfBand (oob.hpp); this file adapts the C callbacks to it, with
// railcoll's deadline around a non-blocking exchange (as UCC's oob.req_test).
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <exception>
#include <string>

#include "capi/capi_internal.hpp"
#include "capi/comm_handle.hpp"
#include "core/errors.hpp"
#include "railcoll/railcoll.h"
#include "runtime/bootstrap/identity.hpp"
#include "runtime/comm.hpp"
#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"
#include "select/select.hpp"

namespace {

using railcoll::RuntimeError;
using railcoll::Status;

class CallbackOutOfBand final : public railcoll::rt::OutOfBand {
 public:
  CallbackOutOfBand(const railcoll_oob_t& cb, double deadline) : cb_(cb), deadline_(deadline) {}
  int rank() const override { return cb_.rank; }
  int size() const override { return cb_.size; }

  void allgather(const void* mine, size_t bytes, void* all) override {
    const uint64_t exchange = exchanges_++;
    void* request = nullptr;
    if (int rc = cb_.allgather(mine, all, bytes, cb_.context, &request); rc != 0)
      throw RuntimeError(Status::Bootstrap, "the caller's out-of-band all-gather failed (set-up exchange " +
                                                std::to_string(exchange) + " returned " + std::to_string(rc) + ")");
    if (!cb_.test) {
      release(request, true);
      return;
    }
    // Waiting is polling the caller's exchange: yield the core at first (the
    // peers may need it), then sleep a little longer each round, up to 1 ms.
    long sleep_ns = 0;
    for (int round = 0;; ++round) {
      int done = cb_.test(request, cb_.context);
      if (done > 0) return release(request, true);
      if (done < 0) {
        release(request, false);
        throw RuntimeError(Status::Bootstrap, "the caller's out-of-band all-gather failed (set-up exchange " +
                                                  std::to_string(exchange) + ": test returned " +
                                                  std::to_string(done) + ")");
      }
      if (railcoll::rt::now_seconds() > deadline_) {
        release(request, false);
        throw RuntimeError(Status::Timeout,
                           "set-up exchange " + std::to_string(exchange) + " through the caller's all-gather did not "
                           "complete within RAILCOLL_TIMEOUT: some of the " + std::to_string(cb_.size) +
                           " ranks did not take part");
      }
      if (round < 16) {
        sched_yield();
        continue;
      }
      sleep_ns = std::min(1000000L, std::max(20000L, sleep_ns * 2));
      timespec ts{0, sleep_ns};
      nanosleep(&ts, nullptr);
    }
  }

 private:
  void release(void* request, bool complete) {
    if (cb_.release) cb_.release(request, complete ? 1 : 0, cb_.context);
  }
  railcoll_oob_t cb_;
  double deadline_;
  uint64_t exchanges_ = 0;
};

// The job key of a communicator: the one every rank was given, or, when no
// rank has one, a fresh one rank 0 draws and the caller's exchange carries
// (the caller trusts its own channel with the set-up; without this the
// connections would not be authenticated at all). Some ranks with a key and
// some without cannot connect: every rank fails, naming one of each.
std::string agree_on_key(railcoll::rt::OutOfBand& exchange, const std::string& mine) {
  constexpr size_t kKeyChars = 32;
  std::string record(1 + kKeyChars, '\0');
  record[0] = mine.empty() ? 0 : 1;
  if (exchange.rank() == 0 && mine.empty()) {
    const std::string drawn = railcoll::rt::random_bytes(kKeyChars / 2);
    record.replace(1, kKeyChars, railcoll::rt::to_hex(drawn.data(), drawn.size()));
  }
  std::string all(record.size() * exchange.size(), '\0');
  exchange.allgather(record.data(), record.size(), all.data());
  int with = -1, without = -1;
  for (int r = 0; r < exchange.size(); ++r) (all[r * record.size()] ? with : without) = r;
  if (with >= 0 && without >= 0)
    throw RuntimeError(Status::Bootstrap, "rank " + std::to_string(with) + " has a job key (RAILCOLL_JOB_KEY) but rank " +
                                              std::to_string(without) + " has none: give every rank the same");
  return with >= 0 ? mine : all.substr(1, kKeyChars);
}

}  // namespace

extern "C" railcoll_status_t railcoll_comm_init_oob(railcoll_comm_t* out, const railcoll_oob_t* oob) {
  using railcoll::capi::fail;
  return railcoll::capi::guarded([&]() -> railcoll_status_t {
    if (!out) return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_oob: output pointer is NULL");
    *out = nullptr;
    if (!oob || !oob->allgather) return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_oob: no allgather callback");
    if (oob->size < 1 || oob->rank < 0 || oob->rank >= oob->size)
      return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_oob: rank " + std::to_string(oob->rank) +
                                        " is not in [0, size " + std::to_string(oob->size) + ")");
    if (oob->node && !*oob->node) return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_oob: node is empty");
    using railcoll::Setting;
    railcoll::Settings settings = railcoll::Settings::from_environment();
    railcoll::rt::Identity who = railcoll::rt::local_identity(settings);
    who.rank = oob->rank;
    who.size = oob->size;
    who.source = "railcoll_comm_init_oob";
    if (oob->node) who.node_id = oob->node;
    if (oob->job_key) settings.set(Setting::JobKey, oob->job_key);
    CallbackOutOfBand exchange(*oob, railcoll::rt::now_seconds() + settings.seconds(Setting::Timeout));
    // The algorithm settings are read before any exchange, as railcoll_comm_init
    // does; a rank whose RAILCOLL_<COLL>_ALGO or tuning file is wrong tells the
    // others in one exchange, so none waits for it in the next.
    railcoll::Selector selector;
    std::exception_ptr failed;
    try {
      selector = railcoll::Selector::from_environment();
    } catch (...) {
      failed = std::current_exception();
    }
    railcoll::rt::all_or_none(exchange, failed, "read its algorithm settings (RAILCOLL_*_ALGO, RAILCOLL_TUNING)");
    settings.set(Setting::JobKey, agree_on_key(exchange, settings.text(Setting::JobKey)));
    auto comm = std::make_unique<railcoll::rt::Comm>(who, settings, exchange);
    *out = railcoll::capi::adopt_comm(std::move(selector), std::move(comm));
    return RAILCOLL_OK;
  });
}
