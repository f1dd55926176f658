// The requests of served nonblocking and persistent calls, and MPI's
// completion calls over them.
//
// The program gets a real MPI request for each, so that it can keep it, copy
// it, compare it with MPI_REQUEST_NULL and put it in one array with MPI's own
// requests: a generalized request (MPI_Grequest_start) for a nonblocking call,
// completed and freed here once railcoll's call is over; an inactive
// persistent request (a receive from rank 0 of MPI_COMM_SELF, never started)
// for a persistent one, which lives until MPI_Request_free. Not a receive from
// MPI_PROC_NULL: once MPICH 4.0.2 has freed one of those, its own persistent
// collectives on a one-rank communicator never complete. A table
// from MPI request to served call (locked: MPI_THREAD_MULTIPLE) lets the
// completion calls below find them: each drives railcoll's requests of the
// array itself (railcoll_test, railcoll_wait) and hands MPI a copy of the array
// with them replaced by MPI_REQUEST_NULL, then puts the two outcomes together.
// MPI never completes one of ours: a generalized request is complete only
// when we say so, and the inactive one is never started. While no served
// request is outstanding every call goes straight to its PMPI_ function.
//
// Every completion call keeps both libraries going (MPI's progress rule;
// docs/mpi.md, "Progress"). A wait over railcoll's requests alone is
// railcoll's wait (its deadline, its sleeping), which turns MPI's progress
// engine while it sleeps (the wait hook, comms.cpp). A wait over both polls
// both sides in turn, neither starving the other, yielding the core and then
// sleeping between rounds; a wait over MPI's alone while served calls run
// polls MPI's and drives railcoll's (mpi_until); a test that finds ours not
// done turns MPI's engine once. MPI's own waits have no deadline, so neither
// have these loops; railcoll's requests in them end at railcoll's
// (RAILCOLL_TIMEOUT), with an error.
//
// A collective's status is empty (MPI_ANY_SOURCE, MPI_ANY_TAG, count 0) with
// MPI_ERROR its outcome. A railcoll failure goes to the communicator's error
// handler when a completion call reports it, as the blocking call's does
// (errors.cpp); the multiple-completion calls then return MPI_ERR_IN_STATUS.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "mpi/call.hpp"

namespace railcoll::mpi {

namespace {

std::mutex table_mutex;  // guards table and freed
std::unordered_map<MPI_Request, Served*> table;
// Requests the program freed (MPI_Request_free) while railcoll still ran
// them: their staging is railcoll's until then, and what arrived is unpacked.
std::vector<Served*> freed;
// table.size() + freed.size(): 0 lets every completion call go straight to MPI.
std::atomic<int> outstanding{0};
std::atomic<int> freed_count{0};  // freed.size(), read without the lock
// Served calls started and not yet concluded (Served::active && !finished):
// while any runs, a completion call over MPI's requests alone drives
// railcoll's too (mpi_until).
std::atomic<int> running{0};
std::vector<Served*> graveyard;  // MPI_Finalize: freed after the railcoll communicators

int grequest_query(void*, MPI_Status* status);
int grequest_free(void*) { return MPI_SUCCESS; }
int grequest_cancel(void*, int) { return MPI_SUCCESS; }  // never called: MPI_Cancel refuses ours first

void empty_status(MPI_Status* status, int error) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = error;
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
}

int grequest_query(void*, MPI_Status* status) {
  empty_status(status, MPI_SUCCESS);
  return MPI_SUCCESS;
}

MPI_Status* status_at(MPI_Status* statuses, int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

Served* find(MPI_Request h) {
  if (h == MPI_REQUEST_NULL || outstanding.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(table_mutex);
  auto it = table.find(h);
  return it == table.end() ? nullptr : it->second;
}

// Out of the table before MPI frees the handle (so that a handle MPI gives
// out again is never taken for ours), then the handle freed.
void drop_handle(Served& s) {
  {
    std::lock_guard<std::mutex> lock(table_mutex);
    table.erase(s.handle);
    outstanding.fetch_sub(1, std::memory_order_release);
  }
  if (s.mode == Mode::Nonblocking) PMPI_Grequest_complete(s.handle);
  PMPI_Request_free(&s.handle);
}

void conclude(Served& s, railcoll_status_t st) {
  s.finished = true;
  running.fetch_sub(1, std::memory_order_release);
  if (st == RAILCOLL_OK) {
    for (auto& f : s.after) f();
    s.error = MPI_SUCCESS;
  } else {
    s.error = railcoll_error_code(mpi_name(s.coll, s.mode), st, railcoll_last_error());
  }
}

// True when s needs nothing more from railcoll (finished, or an inactive
// persistent request); else one railcoll_test.
bool advance(Served& s) {
  if (s.finished || !s.active) return true;
  int done = 0;
  const railcoll_status_t st = railcoll_test(&s.rc, &done);
  if (st == RAILCOLL_OK && !done) return false;
  conclude(s, st);
  return true;
}

void wait_for(Served& s) {
  if (!s.finished && s.active) conclude(s, railcoll_wait(&s.rc));
}

// The completion the program sees: the status, the error to its handler, and
// the request freed (nonblocking) or made inactive (persistent).
int retire(Served& s, MPI_Request* request, MPI_Status* status) {
  empty_status(status, s.error);
  int error = s.error;
  if (error != MPI_SUCCESS) error = call_errhandler(errors_comm(s.comm), error);
  if (s.mode == Mode::Persistent) {
    s.active = s.finished = false;
    s.error = MPI_SUCCESS;
    return error;
  }
  drop_handle(s);
  delete &s;
  *request = MPI_REQUEST_NULL;
  return error;
}

// Between rounds of a wait over both MPI's and railcoll's requests: yield
// the core while railcoll's waits would spin (Layer::spin_us), then sleep.
class Backoff {
 public:
  void pause() {
    if (++rounds_ < 16) return;
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (rounds_ == 16) start_ = now;
    const double us = (now.tv_sec - start_.tv_sec) * 1e6 + (now.tv_nsec - start_.tv_nsec) * 1e-3;
    if (us < layer().spin_us) {
      sched_yield();
      return;
    }
    const timespec nap{0, 20000};
    nanosleep(&nap, nullptr);
  }

 private:
  int rounds_ = 0;
  timespec start_{};
};

// railcoll's communicators with served calls running, driven by a completion
// call that waits for MPI's requests alone (so that they advance even with
// RAILCOLL_PROGRESS_THREAD=0, as MPI's progress rule asks). Collected once per
// completion call; a communicator destroyed meanwhile (another thread's
// request completed) answers RAILCOLL_ERR_ARG, its handle never reused.
class RunningComms {
 public:
  void progress() {
    if (running.load(std::memory_order_acquire) == 0) return;
    if (!collected_) collect();
    for (railcoll_comm_t c : comms_) railcoll_progress(c);
  }

 private:
  void collect() {
    collected_ = true;
    std::lock_guard<std::mutex> lock(table_mutex);
    auto add = [&](const Served* s) {
      if (!s->active || s->finished) return;
      railcoll_comm_t c = railcoll_of(s->comm);
      if (c && std::find(comms_.begin(), comms_.end(), c) == comms_.end()) comms_.push_back(c);
    };
    for (auto& [handle, s] : table) add(s);
    for (const Served* s : freed) add(s);
  }
  bool collected_ = false;
  std::vector<railcoll_comm_t> comms_;
};

// A completion call over MPI's requests alone: `test` (one PMPI_Test* round,
// true when the call is answered, *rc its return) until it answers, railcoll's
// running calls driven between rounds. With none running, `wait` (the
// PMPI_Wait* call itself).
template <class Test, class Wait>
int mpi_until(Test test, Wait wait) {
  if (running.load(std::memory_order_acquire) == 0) return wait();
  RunningComms comms;
  Backoff backoff;
  int rc = MPI_SUCCESS;
  while (!test(&rc)) {
    comms.progress();
    backoff.pause();
  }
  return rc;
}

// An array of requests: railcoll's entries (index, served call) and a copy
// for MPI with them replaced by MPI_REQUEST_NULL.
struct Split {
  std::vector<std::pair<int, Served*>> ours;
  std::vector<MPI_Request> theirs;
  // False (and nothing copied) when the array holds none of ours.
  bool of(int n, const MPI_Request* reqs) {
    if (n <= 0 || outstanding.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard<std::mutex> lock(table_mutex);
    for (int i = 0; i < n; ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      auto it = table.find(reqs[i]);
      if (it == table.end()) continue;
      if (ours.empty()) theirs.assign(reqs, reqs + n);
      ours.emplace_back(i, it->second);
      theirs[static_cast<size_t>(i)] = MPI_REQUEST_NULL;
    }
    return !ours.empty();
  }
  // MPI's outcome for its entries (completed ones are null now, persistent ones inactive).
  void copy_back(int n, MPI_Request* reqs) const {
    size_t k = 0;
    for (int i = 0; i < n; ++i) {
      if (k < ours.size() && ours[k].first == i) {
        ++k;
        continue;
      }
      reqs[i] = theirs[static_cast<size_t>(i)];
    }
  }
  bool any_active() const {
    for (auto& o : ours)
      if (o.second->active) return true;
    return false;
  }
  bool has_mpi() const {
    for (MPI_Request r : theirs)
      if (r != MPI_REQUEST_NULL) return true;
    return false;
  }
  // A poke at MPI's progress without completing anything (MPI's progress
  // rule: its requests advance while the program waits for ours), on one of
  // MPI's requests here, else on none (poke_mpi_progress). False when MPI
  // has no request here.
  bool poke_mpi() {
    for (MPI_Request& r : theirs)
      if (r != MPI_REQUEST_NULL) {
        int flag = 0;
        PMPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
        return true;
      }
    poke_mpi_progress();
    return false;
  }
};

// After an array's own and MPI's entries completed: ours retired into their
// places; MPI_ERR_IN_STATUS when any failed (statuses then say which).
int retire_all(Split& split, int n, MPI_Request* reqs, MPI_Status* statuses, int mpi_rc) {
  split.copy_back(n, reqs);
  if (mpi_rc != MPI_SUCCESS && mpi_rc != MPI_ERR_IN_STATUS) return mpi_rc;
  bool failed = mpi_rc == MPI_ERR_IN_STATUS;
  if (!failed && statuses != MPI_STATUSES_IGNORE)
    for (int i = 0; i < n; ++i) statuses[i].MPI_ERROR = MPI_SUCCESS;
  for (auto& [i, s] : split.ours)
    if (retire(*s, &reqs[i], status_at(statuses, i)) != MPI_SUCCESS) failed = true;
  return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int start(Served& s) {
  const char* name = mpi_name(s.coll, s.mode);
  if (s.active) return raise_mpi(errors_comm(s.comm), name, MPI_ERR_REQUEST, "started while still active");
  for (auto& f : s.before) f();
  const railcoll_status_t st = railcoll_start(s.rc);
  if (st != RAILCOLL_OK) return raise_railcoll(errors_comm(s.comm), name, st, railcoll_last_error());
  s.active = true;
  s.finished = false;
  running.fetch_add(1, std::memory_order_release);
  return MPI_SUCCESS;
}

}  // namespace

Served::~Served() {
  if (rc) railcoll_request_free(&rc);
  for (MPI_Datatype& t : types) PMPI_Type_free(&t);
  if (comm) release(comm);
}

int adopt(std::unique_ptr<Served> s, MPI_Request* request) {
  const int rc = s->mode == Mode::Nonblocking
                     ? PMPI_Grequest_start(grequest_query, grequest_free, grequest_cancel, nullptr, &s->handle)
                     : PMPI_Recv_init(nullptr, 0, MPI_BYTE, 0, 0, MPI_COMM_SELF, &s->handle);
  if (rc != MPI_SUCCESS) {
    wait_for(*s);  // MPI has no request to give: the call is not left running under freed memory
    *request = MPI_REQUEST_NULL;
    return rc;
  }
  *request = s->handle;
  std::lock_guard<std::mutex> lock(table_mutex);
  table.emplace(s->handle, s.get());
  outstanding.fetch_add(1, std::memory_order_release);
  s.release();
  return MPI_SUCCESS;
}

int ServedCall::issued(railcoll_status_t st) {
  if (st != RAILCOLL_OK) return route_.finish(st);
  served_->coll = route_.coll();
  served_->mode = mode_;
  served_->comm = route_.state();
  hold(served_->comm);
  served_->active = mode_ == Mode::Nonblocking;
  if (served_->active) running.fetch_add(1, std::memory_order_release);
  return adopt(std::move(served_), route_.request());
}

void reap_freed() {
  if (freed_count.load(std::memory_order_acquire) == 0) return;
  std::vector<Served*> done;
  {
    std::lock_guard<std::mutex> lock(table_mutex);
    for (size_t i = 0; i < freed.size();) {
      if (advance(*freed[i])) {
        done.push_back(freed[i]);
        freed.erase(freed.begin() + static_cast<long>(i));
        outstanding.fetch_sub(1, std::memory_order_release);
        freed_count.fetch_sub(1, std::memory_order_release);
      } else {
        ++i;
      }
    }
  }
  for (Served* s : done) delete s;  // its outcome is seen by nobody (MPI_Request_free)
}

void requests_finalize() {
  std::lock_guard<std::mutex> lock(table_mutex);
  for (auto& [handle, s] : table) {
    if (s->mode == Mode::Nonblocking) PMPI_Grequest_complete(s->handle);
    PMPI_Request_free(&s->handle);
    graveyard.push_back(s);
  }
  graveyard.insert(graveyard.end(), freed.begin(), freed.end());
  table.clear();
  freed.clear();
  outstanding.store(0);
  freed_count.store(0);
  running.store(0);
  // railcoll's requests let go; the communicators' destruction ends them.
  for (Served* s : graveyard)
    if (s->rc) railcoll_request_free(&s->rc);
}

void requests_forget() {
  for (Served* s : graveyard) delete s;
  graveyard.clear();
}

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  Served* s = find(*request);
  if (!s)
    return mpi_until(
        [&](int* rc) {
          int flag = 0;
          *rc = PMPI_Test(request, &flag, status);
          return flag || *rc != MPI_SUCCESS;
        },
        [&] { return PMPI_Wait(request, status); });
  reap_freed();
  if (!s->active) {  // an inactive persistent request
    empty_status(status, MPI_SUCCESS);
    return MPI_SUCCESS;
  }
  wait_for(*s);
  return retire(*s, request, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  Served* s = find(*request);
  if (!s) {
    const int rc = PMPI_Test(request, flag, status);
    if (!*flag) RunningComms().progress();
    return rc;
  }
  reap_freed();
  if (!s->active) {
    *flag = 1;
    empty_status(status, MPI_SUCCESS);
    return MPI_SUCCESS;
  }
  *flag = advance(*s);
  if (!*flag) poke_mpi_progress();  // a program testing in a loop keeps MPI's operations going too
  return *flag ? retire(*s, request, status) : MPI_SUCCESS;
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  Served* s = find(request);
  if (!s) {
    const int rc = PMPI_Request_get_status(request, flag, status);
    if (!*flag) RunningComms().progress();
    return rc;
  }
  *flag = advance(*s);
  if (*flag) empty_status(status, s->active ? s->error : MPI_SUCCESS);
  else poke_mpi_progress();
  return MPI_SUCCESS;
}

// MPI 4.0 §6.12: freeing (or cancelling) a nonblocking collective's request
// is erroneous, and Open MPI and MPICH both refuse it (MPI_ERR_REQUEST here):
// the request stays, and a completion call completes it as usual. A
// persistent one may be freed while inactive; while active, Open MPI refuses
// that too and MPICH takes it, and so does the library built for each (under
// MPICH the call runs on, its data landing, reap_freed).
int MPI_Request_free(MPI_Request* request) {
  Served* s = find(*request);
  if (!s) return PMPI_Request_free(request);
  bool refuse = s->mode == Mode::Nonblocking;
#ifdef OPEN_MPI
  refuse = refuse || s->active;
#endif
  if (refuse)
    return raise_mpi(errors_comm(s->comm), "MPI_Request_free", MPI_ERR_REQUEST,
                     std::string("the request of an active ") + mpi_name(s->coll, s->mode) +
                         " cannot be freed (MPI 4.0 6.12, 6.13); complete it with a wait or test");
  drop_handle(*s);
  *request = MPI_REQUEST_NULL;
  if (s->active && !s->finished) {
    // Still running in railcoll: its staging stays railcoll's until it ends,
    // and what arrives still lands in the program's buffer (reap_freed).
    std::lock_guard<std::mutex> lock(table_mutex);
    freed.push_back(s);
    outstanding.fetch_add(1, std::memory_order_release);
    freed_count.fetch_add(1, std::memory_order_release);
    return MPI_SUCCESS;
  }
  delete s;
  return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request* request) {
  Served* s = request ? find(*request) : nullptr;
  if (!s) return PMPI_Cancel(request);
  return raise_mpi(errors_comm(s->comm), "MPI_Cancel", MPI_ERR_REQUEST,
                   std::string(mpi_name(s->coll, s->mode)) +
                       ": a collective cannot be cancelled (MPI 4.0 6.12); it completes as usual");
}

int MPI_Start(MPI_Request* request) {
  Served* s = find(*request);
  if (!s) return PMPI_Start(request);
  reap_freed();
  return start(*s);
}

// In array order (collectives start in the order every rank gives them).
int MPI_Startall(int count, MPI_Request requests[]) {
  Split split;
  if (!split.of(count, requests)) return PMPI_Startall(count, requests);
  int first_error = MPI_SUCCESS;
  size_t k = 0;
  for (int i = 0; i < count; ++i) {
    int rc;
    if (k < split.ours.size() && split.ours[k].first == i) rc = start(*split.ours[k++].second);
    else rc = PMPI_Start(&requests[i]);
    if (rc != MPI_SUCCESS && first_error == MPI_SUCCESS) first_error = rc;
  }
  return first_error;
}

namespace {

// PMPI_Waitall, railcoll's running calls driven meanwhile: MPI's entries only
// looked at (PMPI_Request_get_status: MPICH 4.0.2's MPI_Testall fails on its
// own persistent collectives) until every one is complete, then waited for.
int mpi_side_waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return mpi_until(
      [&](int* rc) {
        for (int i = 0; i < count; ++i) {
          int flag = 1;
          if (requests[i] != MPI_REQUEST_NULL) PMPI_Request_get_status(requests[i], &flag, MPI_STATUS_IGNORE);
          if (!flag) return false;
        }
        *rc = PMPI_Waitall(count, requests, statuses);
        return true;
      },
      [&] { return PMPI_Waitall(count, requests, statuses); });
}

}  // namespace

// Until railcoll's requests are done, MPI's are only driven (not completed,
// as in mpi_side_waitall), then MPI waits for its own.
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  Split split;
  if (!split.of(count, requests)) return mpi_side_waitall(count, requests, statuses);
  reap_freed();
  Backoff backoff;
  RunningComms others;
  for (;;) {
    bool ours_done = true;
    for (auto& o : split.ours) ours_done = advance(*o.second) && ours_done;
    if (ours_done) break;
    if (!split.poke_mpi()) {  // nothing of MPI's: railcoll's wait (which drives MPI: comms.cpp, the wait hook)
      for (auto& o : split.ours) wait_for(*o.second);
      break;
    }
    others.progress();
    backoff.pause();
  }
  const int mpi_rc = mpi_side_waitall(count, split.theirs.data(), statuses);
  return retire_all(split, count, requests, statuses, mpi_rc);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  Split split;
  if (!split.of(count, requests)) {
    const int rc = PMPI_Testall(count, requests, flag, statuses);
    if (!*flag) RunningComms().progress();
    return rc;
  }
  reap_freed();
  bool ours_done = true;
  for (auto& o : split.ours) ours_done = advance(*o.second) && ours_done;
  if (!ours_done) {  // MPI_Testall completes all or nothing
    split.poke_mpi();
    *flag = 0;
    return MPI_SUCCESS;
  }
  const int mpi_rc = PMPI_Testall(count, split.theirs.data(), flag, statuses);
  if (!*flag && mpi_rc == MPI_SUCCESS) return MPI_SUCCESS;  // ours stay finished, retired by a later call
  *flag = 1;
  return retire_all(split, count, requests, statuses, mpi_rc);
}

namespace {

// One round of MPI_Waitany / MPI_Testany: ours first (one railcoll_test each),
// then MPI's. True when the call is answered (*rc its return).
bool any_round(Split& split, int count, MPI_Request requests[], int* index, MPI_Status* status, int* rc) {
  for (auto& [i, s] : split.ours)
    if (s->active && advance(*s)) {
      *index = i;
      *rc = retire(*s, &requests[i], status);
      return true;
    }
  int flag = 0;
  if (!split.has_mpi()) poke_mpi_progress();  // MPI_Testany over null entries need not turn it
  *rc = PMPI_Testany(count, split.theirs.data(), index, &flag, status);
  if (*rc != MPI_SUCCESS || (flag && *index != MPI_UNDEFINED)) {
    split.copy_back(count, requests);
    return true;
  }
  if (flag && !split.any_active()) {  // every entry null or inactive
    *index = MPI_UNDEFINED;
    empty_status(status, MPI_SUCCESS);
    return true;
  }
  return false;
}

// One round of MPI_Waitsome / MPI_Testsome: every request of ours done, and
// MPI's, in index order.
bool some_round(Split& split, int count, MPI_Request requests[], int* outcount, int indices[],
                MPI_Status statuses[], int* rc) {
  std::vector<std::pair<int, Served*>> done;
  for (auto& o : split.ours)
    if (o.second->active && advance(*o.second)) done.push_back(o);
  std::vector<int> mpi_indices(static_cast<size_t>(count));
  std::vector<MPI_Status> mpi_statuses(static_cast<size_t>(count));
  int mpi_out = 0;
  const bool want_status = statuses != MPI_STATUSES_IGNORE;
  if (!split.has_mpi()) poke_mpi_progress();
  *rc = PMPI_Testsome(count, split.theirs.data(), &mpi_out, mpi_indices.data(),
                      want_status ? mpi_statuses.data() : MPI_STATUSES_IGNORE);
  if (*rc != MPI_SUCCESS && *rc != MPI_ERR_IN_STATUS) return true;
  const bool mpi_none = mpi_out == MPI_UNDEFINED;  // MPI's entries all null or inactive
  if (mpi_none) mpi_out = 0;
  if (done.empty() && mpi_out == 0) {
    if (split.any_active() || !mpi_none) return false;
    *outcount = MPI_UNDEFINED;
    *rc = MPI_SUCCESS;
    return true;
  }
  split.copy_back(count, requests);
  bool failed = *rc == MPI_ERR_IN_STATUS;
  int out = 0;
  size_t a = 0, b = 0;
  while (a < done.size() || b < static_cast<size_t>(mpi_out)) {
    const bool take_ours = b >= static_cast<size_t>(mpi_out) ||
                           (a < done.size() && done[a].first < mpi_indices[b]);
    if (take_ours) {
      const int i = done[a].first;
      if (retire(*done[a].second, &requests[i], status_at(statuses, out)) != MPI_SUCCESS) failed = true;
      indices[out++] = i;
      ++a;
    } else {
      if (want_status) {
        statuses[out] = mpi_statuses[b];
        if (*rc != MPI_ERR_IN_STATUS) statuses[out].MPI_ERROR = MPI_SUCCESS;
      }
      indices[out++] = mpi_indices[b++];
    }
  }
  *outcount = out;
  *rc = failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
  return true;
}

}  // namespace

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  Split split;
  if (!split.of(count, requests))
    return mpi_until(
        [&](int* rc) {
          int flag = 0;
          *rc = PMPI_Testany(count, requests, index, &flag, status);
          return flag || *rc != MPI_SUCCESS;
        },
        [&] { return PMPI_Waitany(count, requests, index, status); });
  reap_freed();
  Backoff backoff;
  RunningComms others;
  int rc = MPI_SUCCESS;
  while (!any_round(split, count, requests, index, status, &rc)) {
    others.progress();
    backoff.pause();
  }
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  Split split;
  if (!split.of(count, requests)) {
    const int rc = PMPI_Testany(count, requests, index, flag, status);
    if (!*flag) RunningComms().progress();
    return rc;
  }
  reap_freed();
  int rc = MPI_SUCCESS;
  *flag = any_round(split, count, requests, index, status, &rc);
  if (!*flag) *index = MPI_UNDEFINED;
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  Split split;
  if (!split.of(incount, requests))
    return mpi_until(
        [&](int* rc) {
          *rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
          return *outcount != 0 || (*rc != MPI_SUCCESS && *rc != MPI_ERR_IN_STATUS);
        },
        [&] { return PMPI_Waitsome(incount, requests, outcount, indices, statuses); });
  reap_freed();
  Backoff backoff;
  RunningComms others;
  int rc = MPI_SUCCESS;
  while (!some_round(split, incount, requests, outcount, indices, statuses, &rc)) {
    others.progress();
    backoff.pause();
  }
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  Split split;
  if (!split.of(incount, requests)) {
    const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (*outcount == 0) RunningComms().progress();
    return rc;
  }
  reap_freed();
  int rc = MPI_SUCCESS;
  if (!some_round(split, incount, requests, outcount, indices, statuses, &rc)) *outcount = 0;
  return rc;
}

}  // extern "C"
