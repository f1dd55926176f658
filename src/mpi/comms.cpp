// A railcoll communicator per MPI communicator, made at its first served call
// through railcoll_comm_init_oob, with the MPI communicator itself as the
// out-of-band channel (PMPI_Iallgather, polled under railcoll's deadline).
// It lives in an attribute of the MPI communicator: MPI_Comm_free deletes the
// attribute and so destroys it, unless served requests on it are still
// outstanding or persistent (then the last of them does: MPI lets pending
// operations complete after MPI_Comm_free); MPI_Comm_dup does not copy it
// (MPI_COMM_NULL_COPY_FN), so a duplicate makes its own; MPI_Finalize
// destroys what is left, newest first, before MPI goes. Under
// MPI_THREAD_MULTIPLE two threads may make or free different communicators'
// at once: the list of live ones is locked, each thread keeps its own recent
// ones, and no lock is held while railcoll makes or destroys one (a rank
// waiting for its peers there must not hold up its other threads).
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

namespace {

}  // namespace

struct CommState {
  railcoll_comm_t rc = nullptr;
  bool passed = false;  // MPI serves every call on this communicator (`why`)
  Reason why = Reason::SetupFailed;
  int rank = 0, size = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  bool attached = true;        // still the attribute of `comm` (not yet freed by MPI_Comm_free)
  std::atomic<int> refs{1};    // the attribute's, and one per served request on it
};

namespace {

int comm_keyval = MPI_KEYVAL_INVALID;
std::once_flag keyval_made;
std::mutex live_mutex;  // guards `live`
// States holding a railcoll communicator, oldest first. Two ranks that share
// several communicators made theirs in the same order (each was made in a
// collective call of both), so destroying them newest first at MPI_Finalize
// meets the peers' goodbyes in the same order too.
std::vector<CommState*> live;

// How often a thread waiting in railcoll turns MPI's progress engine (about
// 1 us a turn; a peer's large MPI send from this rank moves on at this pace
// while this rank waits inside railcoll).
constexpr unsigned kPokeEveryUs = 1000;

// The thread's latest communicators' states: a call on one of them asks MPI nothing.
RAILCOLL_MPI_THREAD_LOCAL Recent<MPI_Comm, CommState> recent;

// Takes s's railcoll communicator out of `live` and destroys it (outside the lock).
void destroy_railcoll(CommState* s) {
  railcoll_comm_t rc = nullptr;
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    std::swap(rc, s->rc);
    for (size_t i = 0; i < live.size(); ++i)
      if (live[i] == s) live.erase(live.begin() + static_cast<long>(i));
  }
  if (rc) railcoll_comm_destroy(rc);
}

int delete_state(MPI_Comm, int, void* value, void*) {
  auto* s = static_cast<CommState*>(value);
  Recent<MPI_Comm, CommState>::forget_everywhere();
  s->attached = false;
  release(s);
  return MPI_SUCCESS;
}

// ---- the out-of-band exchange: PMPI_Iallgather on the communicator ----
struct Exchange {
  MPI_Comm comm;
  int size;
};
// One all-gather in flight. Its buffers are its own: when railcoll gives up
// waiting, MPI may still write into them, so a request that never completed
// is left allocated rather than freed under MPI's feet.
struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<char> send, recv;
  void* out = nullptr;
};

int oob_allgather(const void* send, void* recv, size_t bytes, void* context, void** request) {
  auto* ex = static_cast<Exchange*>(context);
  if (bytes > static_cast<size_t>(INT_MAX)) return 1;
  auto* p = new Pending;
  p->send.assign(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
  p->recv.resize(bytes * static_cast<size_t>(ex->size));
  p->out = recv;
  const int n = static_cast<int>(bytes);
  if (PMPI_Iallgather(p->send.data(), n, MPI_BYTE, p->recv.data(), n, MPI_BYTE, ex->comm, &p->request) !=
      MPI_SUCCESS) {
    delete p;
    return 1;
  }
  *request = p;
  return 0;
}

int oob_test(void* request, void*) {
  auto* p = static_cast<Pending*>(request);
  int done = 0;
  if (PMPI_Test(&p->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
  if (!done) return 0;
  if (!p->recv.empty()) memcpy(p->out, p->recv.data(), p->recv.size());
  return 1;
}

void oob_release(void* request, int complete, void*) {
  if (complete) delete static_cast<Pending*>(request);
}

double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

// The state of `comm`: among the recent ones, else from its attribute, made
// on the first call on it.
CommState* state_of(MPI_Comm comm) {
  if (CommState* s = recent.find(comm)) return s;
  std::call_once(keyval_made,
                 [] { PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &comm_keyval, nullptr); });
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, comm_keyval, &value, &found);
  auto* s = static_cast<CommState*>(value);
  if (!found) {
    // The first call on this communicator: what kind it is, once (calls on
    // one communicator are never concurrent: MPI requires the program to order them).
    s = new CommState;
    s->comm = comm;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_rank(comm, &s->rank);
    PMPI_Comm_size(comm, &s->size);
    if (inter) s->passed = true, s->why = Reason::Intercomm;
    else if (s->size < 2) s->passed = true, s->why = Reason::OneRank;
    PMPI_Comm_set_attr(comm, comm_keyval, s);
  }
  recent.add(comm, s);
  return s;
}

}  // namespace

Target classify(MPI_Comm comm) {
  Target t;
  t.passed = true;
  t.why = Reason::BadArgument;
  if (comm == MPI_COMM_NULL) return t;
  const CommState* s = state_of(comm);
  t.rc = s->rc;
  t.passed = s->passed;
  t.why = s->why;
  t.rank = s->rank;
  t.size = s->size;
  t.state = const_cast<CommState*>(s);
  return t;
}

void hold(CommState* s) { s->refs.fetch_add(1, std::memory_order_relaxed); }

void release(CommState* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  destroy_railcoll(s);
  delete s;
}

MPI_Comm errors_comm(const CommState* s) { return s && s->attached ? s->comm : MPI_COMM_WORLD; }

railcoll_comm_t railcoll_of(const CommState* s) { return s ? s->rc : nullptr; }

void poke_mpi_progress(void*) {
  const MPI_Comm poke = layer().poke;
  if (poke == MPI_COMM_NULL) return;
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, poke, &flag, MPI_STATUS_IGNORE);
}

void ensure_railcoll(MPI_Comm comm, const char* call, Target* t) {
  if (t->rc) return;
  CommState* s = state_of(comm);  // classify() made it
  Exchange ex{comm, s->size};
  railcoll_oob_t oob{};
  oob.allgather = oob_allgather;
  oob.test = oob_test;
  oob.release = oob_release;
  oob.context = &ex;
  oob.rank = s->rank;
  oob.size = s->size;
  oob.node = layer().node.c_str();
  oob.job_key = nullptr;  // RAILCOLL_JOB_KEY, else rank 0 draws one for this communicator
  const double t0 = now_ms();
  railcoll_comm_t rc = nullptr;
  railcoll_status_t st = railcoll_comm_init_oob(&rc, &oob);
  if (st != RAILCOLL_OK) {
    // Set-up fails on every rank together (railcoll_comm_init_oob): from now
    // on MPI serves this communicator, on every rank alike.
    s->passed = true;
    s->why = Reason::SetupFailed;
    t->error = raise_railcoll(comm, call, st, std::string("setting up railcoll on this communicator failed: ") +
                                               railcoll_last_error());
    return;
  }
  s->rc = t->rc = rc;
  railcoll_comm_set_wait_hook(rc, poke_mpi_progress, nullptr, kPokeEveryUs);
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    live.push_back(s);
  }
  if (layer().verbose >= 2 && s->rank == 0)
    fprintf(stderr, "railcoll-mpi: rank %d: railcoll communicator of %d ranks on %d nodes, %d rails (%s), made at %s "
                    "in %.1f ms\n",
            layer().world_rank, s->size, railcoll_comm_nodes(rc), railcoll_comm_rails(rc), railcoll_comm_transport(rc),
            call, now_ms() - t0);
}

void comms_finalize() {
  for (;;) {
    CommState* s = nullptr;
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      if (live.empty()) break;
      s = live.back();
    }
    // The attribute's reference goes with it; what requests still hold is
    // destroyed here all the same (requests.cpp let go of their railcoll
    // requests first) and the state freed with the last request.
    hold(s);
    if (s->attached) PMPI_Comm_delete_attr(s->comm, comm_keyval);
    destroy_railcoll(s);
    release(s);
  }
  if (comm_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&comm_keyval);
  recent.clear();
}

}  // namespace railcoll::mpi
