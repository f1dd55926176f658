// A rank program for the multi-process tests, started by `railcoll run` or
// `railcoll cluster run`. Modes:
//   correct    every algorithm x sizes (byte-exact, a distinct pattern per rank
//              and per call), all-gatherv, in-place, barrier, back-to-back calls
//   mismatch   rank 0 passes a different size: every rank must get an error
//   badargs    NULL buffers, overlap, unknown algorithm on every rank: errors, no
//              hang; the communicator is broken after, and a new one works
//   onerank    one rank (MP_CULPRIT, default 1) makes a mistake the others do
//              not (a NULL buffer, a bad root, type or operator, overlap, an
//              unknown algorithm or flag), also entering before or after them:
//              it gets its own error, the others RAILCOLL_ERR_PEER naming it,
//              every rank within MP_WITHIN s (default 5; run it with a long
//              RAILCOLL_TIMEOUT); then every rank's next call is
//              RAILCOLL_ERR_BROKEN and the destroyed handle RAILCOLL_ERR_ARG.
//              Each case on a new communicator (railcoll_comm_init again)
//   shmfit     with a small RAILCOLL_SHM_MIB: `auto` all-gathers of 1 MiB per rank
//              run an algorithm that fits (rank 0 says so once on stderr), the
//              same on every rank, byte-exact; an SMP algorithm named in the
//              call that does not fit is RAILCOLL_ERR_UNSUPPORTED on every rank
//   twice      two communicators from the environment at once, validated calls
//              interleaved, destroyed in another order; then a third
//   peer-exit  the last rank exits without a collective: the others get an error
//   deadline   the last rank sleeps past RAILCOLL_TIMEOUT: the others time out
//   replay     with RAILCOLL_TEST_REPLAY_CALL=1 every rank sends a frame of call
//              1 (an all-gather) again in call 3 (the next, after a barrier):
//              every rank must fail call 3, and no byte of the replayed
//              payload may land in call 3's buffer
//   loop B A   validated all-gathers of B bytes with algorithm A until one fails
//              (a test kills or stops rank MP_VICTIM, which writes its pid to
//              MP_PIDFILE): the error must name the victim, the communicator
//              then says it is broken, and the survivors build a new one
//              (railcoll_comm_init_explicit at MP_RECOVERY_STORE, job
//              MP_RECOVERY_JOB), run a validated call on it, and have as many
//              open files afterwards as before the first communicator
//   steady B A S  validated all-gathers of B bytes with algorithm A for S seconds
//              (a test takes a rail down and up meanwhile): no call may fail or
//              be wrong; rank 0 prints calls per second and the rails up it saw.
//              MP_PAUSE_S=P: rank MP_PAUSE_RANK (default every rank) sleeps
//              P s before each call, away from railcoll (a late rank, or
//              another library's turn): its peers' links to it stand still
//   soak N S   N mixed calls (all-gather(v), barrier; random sizes, algorithms,
//              in place or not; seed S), every byte checked; open files after
//              10% of the calls and at the end, and the peak RSS of each half
//              (sampled every 5%, after a barrier: buffers of random sizes make
//              single samples noisy)
// Exit 0 when the rank saw what it should have.
#include <railcoll/railcoll.h>
#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <random>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mp_common.hpp"

namespace {

int& rank_ = mp::rank;
int fds_at_start = -1;

int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n - 3;  // ., .. and the directory itself
}

long rss_kib() {
  FILE* f = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

using mp::pattern;
std::vector<std::string> algorithms() { return mp::algorithms("allgather"); }

// One all-gather(v) call checked byte by byte. displaced: an all-gatherv whose
// blocks lie in reverse rank order with a gap of 3 bytes after each, which
// must keep their 0xEE.
int check_call(railcoll_comm_t comm, const std::string& algo, const std::vector<size_t>& counts, int call,
               bool in_place, bool displaced = false) {
  int size = railcoll_comm_size(comm);
  const size_t kGap = displaced ? 3 : 0;
  std::vector<size_t> displs(size);
  size_t total = 0;
  for (int i = 0; i < size; ++i) {
    const int r = displaced ? size - 1 - i : i;
    displs[r] = total;
    total += counts[r] + kGap;
  }
  std::vector<unsigned char> send(counts[rank_] + 1), recv(total + 1, 0xEE);
  for (size_t i = 0; i < counts[rank_]; ++i) send[i] = pattern(rank_, call, i);
  if (in_place) memcpy(recv.data() + displs[rank_], send.data(), counts[rank_]);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  bool uniform = !displaced;
  for (auto c : counts) uniform &= c == counts[0];
  railcoll_status_t st = uniform ? railcoll_allgather(comm, in_place ? nullptr : send.data(), recv.data(), counts[0], &o)
                                 : railcoll_allgatherv(comm, in_place ? nullptr : send.data(), recv.data(), counts.data(),
                                                       displaced ? displs.data() : nullptr, &o);
  if (st != RAILCOLL_OK) FAIL("%s call %d (%zu B): %s: %s", algo.c_str(), call, counts[0], railcoll_strerror(st), railcoll_last_error());
  for (int r = 0; r < size; ++r) {
    for (size_t i = 0; i < counts[r]; ++i)
      if (recv[displs[r] + i] != pattern(r, call, i))
        FAIL("%s call %d: wrong byte %zu of rank %d's block: got %d, expected %d", algo.c_str(), call, i, r,
             recv[displs[r] + i], pattern(r, call, i));
    for (size_t g = 0; g < kGap; ++g)
      if (recv[displs[r] + counts[r] + g] != 0xEE) FAIL("%s call %d: wrote into the gap after rank %d's block", algo.c_str(), call, r);
  }
  if (recv[total] != 0xEE) FAIL("%s call %d: wrote past the end of recv", algo.c_str(), call);
  return 0;
}

int mode_correct(railcoll_comm_t comm) {
  int size = railcoll_comm_size(comm), call = 0;
  const size_t sizes[] = {0, 1, 7, 1000, 1025, 4096, 65536 + 3};
  for (auto& algo : algorithms())
    for (size_t b : sizes)
      if (check_call(comm, algo, std::vector<size_t>(size, b), call++, false)) return 1;
  // All-gatherv with uneven (and some empty) blocks, and in-place calls.
  std::vector<size_t> v(size);
  for (int r = 0; r < size; ++r) v[r] = (r % 3 == 1) ? 0 : 100 * r + 17;
  for (auto& algo : algorithms()) {
    if (check_call(comm, algo, v, call++, false)) return 1;
    if (check_call(comm, algo, v, call++, false, true)) return 1;  // blocks at displacements
    if (check_call(comm, algo, v, call++, true, true)) return 1;   // ... and in place
    if (check_call(comm, algo, std::vector<size_t>(size, 333), call++, true)) return 1;
  }
  // Back to back: alternating algorithms and sizes, with barriers between some.
  auto algos = algorithms();
  for (int i = 0; i < 40; ++i) {
    if (check_call(comm, algos[i % algos.size()], std::vector<size_t>(size, (i * 977) % 5000), call++, false)) return 1;
    if (i % 7 == 0 && railcoll_barrier(comm) != RAILCOLL_OK) FAIL("barrier: %s", railcoll_last_error());
  }
  mp::say("rank %d: %d calls correct\n", rank_, call);
  return 0;
}

// Every rank must see an error, within the deadline; none may report success.
int expect_error(railcoll_status_t st, const char* what, double t0) {
  double took = seconds() - t0;
  if (st == RAILCOLL_OK) FAIL("%s: returned success", what);
  mp::say("rank %d: %s -> %s after %.1f s: %s\n", rank_, what, railcoll_strerror(st), took, railcoll_last_error());
  return 0;
}

int mode_mismatch(railcoll_comm_t comm) {
  int size = railcoll_comm_size(comm);
  size_t bytes = rank_ == 0 ? 100 : 200;
  std::vector<char> send(bytes, 1), recv(bytes * size);
  railcoll_call_opts_t o{"direct", 0};
  double t0 = seconds();
  return expect_error(railcoll_allgather(comm, send.data(), recv.data(), bytes, &o), "allgather with mismatched sizes", t0);
}

int mode_badargs(railcoll_comm_t comm) {
  int size = railcoll_comm_size(comm);
  std::vector<char> buf(64 * size);
  railcoll_call_opts_t bogus{"no_such_algo", 0};
  struct Case {
    const char* what;
    railcoll_status_t st;
    const char* says;
  } cases[] = {
      {"NULL recvbuf", railcoll_allgather(comm, buf.data(), nullptr, 4, nullptr), "recvbuf is NULL"},
      {"NULL sendbuf", railcoll_allgather(comm, nullptr, buf.data(), 4, nullptr), "sendbuf is NULL"},
      {"overlapping buffers", railcoll_allgather(comm, buf.data() + 4, buf.data(), 4, nullptr), "overlap"},
      {"NULL communicator", railcoll_allgather(nullptr, buf.data(), buf.data(), 4, nullptr), "communicator is NULL"},
      {"NULL counts", railcoll_allgatherv(comm, buf.data(), buf.data(), nullptr, nullptr, nullptr), "counts is NULL"},
      {"unknown algorithm", railcoll_allgather(comm, buf.data(), buf.data() + 64, 4, &bogus),
       "unknown allgather algorithm 'no_such_algo'"},
  };
  for (auto& c : cases) {
    if (c.st != RAILCOLL_ERR_ARG) FAIL("%s: expected RAILCOLL_ERR_ARG, got %s", c.what, railcoll_strerror(c.st));
    (void)c.says;
  }
  // The first rejected call broke the communicator (on every rank); a new one works.
  std::vector<char> send(8, static_cast<char>(rank_)), recv(8 * size);
  railcoll_status_t st = railcoll_allgather(comm, send.data(), recv.data(), 8, nullptr);
  if (st != RAILCOLL_ERR_BROKEN || !strstr(railcoll_last_error(), "recvbuf is NULL"))
    FAIL("the call after a rejected one: expected RAILCOLL_ERR_BROKEN naming it, got %s: %s", railcoll_strerror(st),
         railcoll_last_error());
  railcoll_comm_t fresh;
  if (railcoll_comm_init(&fresh) != RAILCOLL_OK) FAIL("a new communicator: %s", railcoll_last_error());
  if (railcoll_allgather(fresh, send.data(), recv.data(), 8, nullptr) != RAILCOLL_OK)
    FAIL("allgather on a new communicator after bad arguments: %s", railcoll_last_error());
  railcoll_comm_destroy(fresh);
  mp::say("rank %d: bad arguments rejected\n", rank_);
  return 0;
}

// One case of mode_onerank: what the culprit and the others call.
struct OneRankCase {
  const char* what;
  const char* culprit_says;  // in the culprit's own error
  const char* fn;            // the C function, named in the others' error
  int culprit_sleep_ms, others_sleep_ms;  // who enters late
  railcoll_status_t (*call)(railcoll_comm_t c, bool culprit, int culprit_rank);
  // A rank that only sends in this call may finish before the abort reaches
  // it (as in MPI); it must then get RAILCOLL_ERR_PEER from its next call.
  bool senders_may_finish = false;
};

railcoll_status_t onerank_allgather(railcoll_comm_t c, const void* send, void* recv, const char* algo, unsigned flags) {
  railcoll_call_opts_t o{algo, flags};
  return railcoll_allgather(c, send, recv, 64, &o);
}

int mode_onerank(railcoll_comm_t comm) {
  static std::vector<char> send(64, 1), recv(64 * 512);
  const OneRankCase cases[] = {
      {"NULL sendbuf (allgather, auto)", "sendbuf is NULL", "railcoll_allgather", 0, 0,
       [](railcoll_comm_t c, bool bad, int) { return onerank_allgather(c, bad ? nullptr : send.data(), recv.data(), nullptr, 0); }},
      {"NULL recvbuf (allgather, direct)", "recvbuf is NULL", "railcoll_allgather", 0, 0,
       [](railcoll_comm_t c, bool bad, int) { return onerank_allgather(c, send.data(), bad ? nullptr : recv.data(), "direct", 0); }},
      {"overlapping buffers (allgather, ring)", "overlap", "railcoll_allgather", 0, 0,
       [](railcoll_comm_t c, bool bad, int) {
         return onerank_allgather(c, bad ? recv.data() + 64 : send.data(), recv.data(), "ring", 0);
       }},
      {"NULL counts (allgatherv)", "counts is NULL", "railcoll_allgatherv", 0, 0,
       [](railcoll_comm_t c, bool bad, int) {
         std::vector<size_t> counts(railcoll_comm_size(c), 64);
         return railcoll_allgatherv(c, send.data(), recv.data(), bad ? nullptr : counts.data(), nullptr, nullptr);
       }},
      {"root out of range (bcast)", "is out of range", "railcoll_bcast", 0, 0,
       [](railcoll_comm_t c, bool bad, int) { return railcoll_bcast(c, recv.data(), 64, bad ? railcoll_comm_size(c) : 0, nullptr); },
       true},
      {"negative root (gather)", "root -1 is out of range", "railcoll_gather", 0, 0,
       [](railcoll_comm_t c, bool bad, int) { return railcoll_gather(c, send.data(), recv.data(), 64, bad ? -1 : 0, nullptr); },
       true},
      {"unknown data type (allreduce)", "unknown data type 99", "railcoll_allreduce", 0, 0,
       [](railcoll_comm_t c, bool bad, int) {
         return railcoll_allreduce(c, send.data(), recv.data(), 16, bad ? static_cast<railcoll_datatype_t>(99) : RAILCOLL_INT32,
                                   RAILCOLL_SUM, nullptr);
       }},
      {"unknown operation (allreduce)", "unknown operation 42", "railcoll_allreduce", 0, 0,
       [](railcoll_comm_t c, bool bad, int) {
         return railcoll_allreduce(c, send.data(), recv.data(), 16, RAILCOLL_INT32,
                                   bad ? static_cast<railcoll_op_t>(42) : RAILCOLL_MAX, nullptr);
       }},
      {"unknown algorithm (allgather)", "unknown allgather algorithm 'no_such_algo'", "railcoll_allgather", 0, 0,
       [](railcoll_comm_t c, bool bad, int) {
         return onerank_allgather(c, send.data(), recv.data(), bad ? "no_such_algo" : nullptr, 0);
       }},
      {"unknown option flag (allgather)", "unknown option flags 0x10", "railcoll_allgather", 0, 0,
       [](railcoll_comm_t c, bool bad, int) { return onerank_allgather(c, send.data(), recv.data(), nullptr, bad ? 0x10 : 0); }},
      {"NULL buffer at the root (bcast from the culprit)", "buf is NULL", "railcoll_bcast", 0, 0,
       [](railcoll_comm_t c, bool bad, int culprit) { return railcoll_bcast(c, bad ? nullptr : recv.data(), 64, culprit, nullptr); }},
      {"the others waiting in the call (allgather, auto; the culprit 0.5 s late)", "sendbuf is NULL",
       "railcoll_allgather", 500, 0,
       [](railcoll_comm_t c, bool bad, int) { return onerank_allgather(c, bad ? nullptr : send.data(), recv.data(), nullptr, 0); }},
      {"the others entering after the culprit left (bcast, smp; 0.5 s late)", "buf is NULL", "railcoll_bcast", 0, 500,
       [](railcoll_comm_t c, bool bad, int) { return railcoll_bcast(c, bad ? nullptr : recv.data(), 64, 0, nullptr); },
       true},
  };
  const int culprit = getenv("MP_CULPRIT") ? atoi(getenv("MP_CULPRIT")) : 1;
  const double within = getenv("MP_WITHIN") ? atof(getenv("MP_WITHIN")) : 5;
  double slowest = 0;
  int done = 0;
  for (const auto& k : cases) {
    if (!comm && railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("%s: a new communicator: %s", k.what, railcoll_last_error());
    const bool bad = rank_ == culprit;
    const int sleep_ms = bad ? k.culprit_sleep_ms : k.others_sleep_ms;
    if (sleep_ms) usleep(sleep_ms * 1000);
    double t0 = seconds();
    railcoll_status_t st = k.call(comm, bad, culprit);
    double took = seconds() - t0;
    std::string msg = railcoll_last_error();
    mp::say("rank %d: %s -> %s after %.3f s: %s\n", rank_, k.what, railcoll_strerror(st), took, msg.c_str());
    if (!bad && st == RAILCOLL_OK && k.senders_may_finish) {  // then its next call
      t0 = seconds();
      st = railcoll_barrier(comm);
      took = seconds() - t0;
      msg = railcoll_last_error();
      mp::say("rank %d: %s: the next call -> %s after %.3f s: %s\n", rank_, k.what, railcoll_strerror(st), took,
             msg.c_str());
    }
    if (bad && (st != RAILCOLL_ERR_ARG || msg.find(k.culprit_says) == std::string::npos))
      FAIL("%s: the culprit got %s: %s (expected RAILCOLL_ERR_ARG saying '%s')", k.what, railcoll_strerror(st),
           msg.c_str(), k.culprit_says);
    const std::string names = "rank " + std::to_string(culprit) + " aborted the collective: rank " +
                              std::to_string(culprit) + "'s " + k.fn + " failed before it began";
    if (!bad && (st != RAILCOLL_ERR_PEER || msg.find(names) == std::string::npos || msg.find(k.culprit_says) == std::string::npos))
      FAIL("%s: got %s: %s (expected RAILCOLL_ERR_PEER saying '%s ... %s')", k.what, railcoll_strerror(st), msg.c_str(),
           names.c_str(), k.culprit_says);
    // From the mistake: the others waited for a culprit that came late on purpose.
    const double since = bad ? took : took - k.culprit_sleep_ms / 1000.0;
    if (since > within) FAIL("%s: took %.3f s after the mistake (more than %.1f s)", k.what, since, within);
    slowest = std::max(slowest, since);
    // Broken on every rank now; the destroyed handle is a clear error.
    st = railcoll_barrier(comm);
    if (st != RAILCOLL_ERR_BROKEN) FAIL("%s: the next call: expected RAILCOLL_ERR_BROKEN, got %s: %s", k.what,
                                        railcoll_strerror(st), railcoll_last_error());
    if (railcoll_comm_destroy(comm) != RAILCOLL_OK) FAIL("%s: destroy: %s", k.what, railcoll_last_error());
    st = railcoll_barrier(comm);
    if (st != RAILCOLL_ERR_ARG || !strstr(railcoll_last_error(), "was destroyed"))
      FAIL("%s: a call on the destroyed handle: %s: %s", k.what, railcoll_strerror(st), railcoll_last_error());
    comm = nullptr;
    ++done;
  }
  mp::say("rank %d: %d one-rank mistakes: the culprit's own error, RAILCOLL_ERR_PEER on the others, slowest %.3f s after the mistake\n",
         rank_, done, slowest);
  return 0;
}

int mode_shmfit(railcoll_comm_t comm) {
  int size = railcoll_comm_size(comm);
  const size_t big = 1 << 20;
  const char* chosen = railcoll_algorithm_for(comm, "allgather", big, nullptr);
  if (!chosen) FAIL("railcoll_algorithm_for: %s", railcoll_last_error());
  std::vector<unsigned char> mine(64), names(64 * size);
  snprintf(reinterpret_cast<char*>(mine.data()), mine.size(), "%s", chosen);
  if (railcoll_allgather(comm, mine.data(), names.data(), 64, nullptr) != RAILCOLL_OK)
    FAIL("allgather of the names: %s", railcoll_last_error());
  for (int r = 0; r < size; ++r)
    if (memcmp(names.data() + 64 * r, mine.data(), 64) != 0) FAIL("rank %d chose another algorithm than %s", r, chosen);
  for (int call = 0; call < 3; ++call)
    if (check_call(comm, "auto", std::vector<size_t>(size, big), call, false)) return 1;
  // On a communicator of its own: a failed call breaks a communicator, and
  // fails a call a slower rank may still be finishing on it.
  railcoll_comm_t fresh;
  if (railcoll_comm_init(&fresh) != RAILCOLL_OK) FAIL("a second communicator: %s", railcoll_last_error());
  std::vector<char> send(big), recv(big * size);
  railcoll_call_opts_t o{"smp_direct", 0};
  railcoll_status_t st = railcoll_allgather(fresh, send.data(), recv.data(), big, &o);
  const std::string why = railcoll_last_error();
  railcoll_comm_destroy(fresh);
  if (st != RAILCOLL_ERR_UNSUPPORTED || why.find("RAILCOLL_SHM_MIB") == std::string::npos)
    FAIL("smp_direct, too big for the shared memory: %s: %s", railcoll_strerror(st), why.c_str());
  mp::say("rank %d: auto ran %s where the shared memory is too small, byte-exact; smp_direct named: %s\n", rank_,
         chosen, railcoll_strerror(st));
  return 0;
}

int mode_twice(railcoll_comm_t a) {
  railcoll_comm_t b, c;
  if (railcoll_comm_init(&b) != RAILCOLL_OK) FAIL("a second communicator: %s", railcoll_last_error());
  if (a == b || railcoll_comm_size(b) != railcoll_comm_size(a) || railcoll_comm_rank(b) != rank_)
    FAIL("the second communicator is not a second one of the same ranks");
  int size = railcoll_comm_size(a), call = 0;
  const size_t sizes[] = {0, 7, 1025, 65536 + 3};
  for (size_t bytes : sizes)
    for (railcoll_comm_t x : {a, b, a, b})
      if (check_call(x, "auto", std::vector<size_t>(size, bytes), call++, false)) return 1;
  railcoll_comm_destroy(a);
  if (check_call(b, "direct", std::vector<size_t>(size, 100), call++, false)) return 1;
  railcoll_comm_destroy(b);
  if (railcoll_comm_init(&c) != RAILCOLL_OK) FAIL("a third communicator: %s", railcoll_last_error());
  if (check_call(c, "auto", std::vector<size_t>(size, 4096), call++, false)) return 1;
  railcoll_comm_destroy(c);
  mp::say("rank %d: two communicators from the environment at once, and a third, correct (%d calls)\n", rank_, call);
  return 0;
}

int mode_peer_exit(railcoll_comm_t comm) {
  int size = railcoll_comm_size(comm);
  if (rank_ == size - 1) _exit(0);  // leaves without a goodbye, as a crash would
  std::vector<char> send(4096, 1), recv(4096 * size);
  railcoll_call_opts_t o{"direct", 0};
  double t0 = seconds();
  return expect_error(railcoll_allgather(comm, send.data(), recv.data(), 4096, &o), "allgather with a dead peer", t0);
}

int mode_deadline(railcoll_comm_t comm) {
  int size = railcoll_comm_size(comm);
  double timeout = getenv("RAILCOLL_TIMEOUT") ? atof(getenv("RAILCOLL_TIMEOUT")) : 60;
  if (rank_ == size - 1) {
    sleep(static_cast<unsigned>(timeout * 2 + 2));
    return 0;
  }
  std::vector<char> send(16, 1), recv(16 * size);
  railcoll_call_opts_t o{"ring", 0};
  double t0 = seconds();
  railcoll_status_t st = railcoll_allgather(comm, send.data(), recv.data(), 16, &o);
  if (seconds() - t0 > timeout * 2 + 1) FAIL("took %.1f s, deadline %.1f s", seconds() - t0, timeout);
  return expect_error(st, "allgather with a sleeping peer", t0);
}

int mode_replay(railcoll_comm_t comm) {
  int size = railcoll_comm_size(comm);
  const size_t bytes = 4096;
  if (check_call(comm, "direct", std::vector<size_t>(size, bytes), 0, false)) return 1;
  // A rank still in the barrier when a replay from call 1 reaches it refuses it there.
  double t0 = seconds();
  railcoll_status_t st = railcoll_barrier(comm);
  if (st != RAILCOLL_OK) {
    mp::say("rank %d: replayed frame refused in the barrier -> %s after %.1f s: %s\n", rank_, railcoll_strerror(st),
           seconds() - t0, railcoll_last_error());
    return 0;
  }
  std::vector<unsigned char> send(bytes), recv(bytes * size, 0xEE);
  for (size_t i = 0; i < bytes; ++i) send[i] = pattern(rank_, 1, i);
  railcoll_call_opts_t o{"direct", 0};
  t0 = seconds();
  st = railcoll_allgather(comm, send.data(), recv.data(), bytes, &o);
  if (st == RAILCOLL_OK) FAIL("call 3 succeeded although every rank replayed a frame of call 1");
  for (int r = 0; r < size; ++r) {
    if (r == rank_) continue;
    size_t old = 0;
    for (size_t i = 0; i < bytes; ++i) old += recv[r * bytes + i] == pattern(r, 0, i) && pattern(r, 0, i) != pattern(r, 1, i);
    if (old > bytes / 2) FAIL("%zu bytes of rank %d's block are call 1's: the replayed frame was written", old, r);
  }
  mp::say("rank %d: replayed frame refused -> %s after %.1f s: %s\n", rank_, railcoll_strerror(st), seconds() - t0,
         railcoll_last_error());
  return 0;
}

int mode_loop(railcoll_comm_t comm, size_t bytes, const std::string& algo) {
  int size = railcoll_comm_size(comm);
  int victim = getenv("MP_VICTIM") ? atoi(getenv("MP_VICTIM")) : size - 1;
  if (rank_ == victim && getenv("MP_PIDFILE")) {
    FILE* f = fopen(getenv("MP_PIDFILE"), "w");
    if (f) fprintf(f, "%d\n", getpid()), fclose(f);
  }
  std::vector<unsigned char> send(bytes), recv(bytes * size);
  railcoll_call_opts_t o{algo.c_str(), 0};
  railcoll_status_t st = RAILCOLL_OK;
  double t0 = seconds(), start = t0;
  int call = 0;
  for (; seconds() - start < 120; ++call) {
    for (size_t i = 0; i < bytes; ++i) send[i] = pattern(rank_, call, i);
    t0 = seconds();
    st = railcoll_allgather(comm, send.data(), recv.data(), bytes, &o);
    if (st != RAILCOLL_OK) break;
    for (int r = 0; r < size; ++r)
      for (size_t i = 0; i < bytes; i += 61)
        if (recv[r * bytes + i] != pattern(r, call, i)) FAIL("call %d: wrong byte %zu of rank %d", call, i, r);
  }
  double took = seconds() - t0;
  if (st == RAILCOLL_OK) FAIL("no call failed in 120 s");
  std::string msg = railcoll_last_error(), name = "rank " + std::to_string(victim);
  bool names = false;
  for (size_t at = msg.find(name); at != std::string::npos && !names; at = msg.find(name, at + 1))
    names = at + name.size() == msg.size() || !isdigit(static_cast<unsigned char>(msg[at + name.size()]));
  mp::say("rank %d: peer failure -> %s after %.2f s in call %d (names %s: %s): %s\n", rank_, railcoll_strerror(st), took,
         call, name.c_str(), names ? "yes" : "no", msg.c_str());
  st = railcoll_allgather(comm, send.data(), recv.data(), bytes, &o);
  mp::say("rank %d: next call -> %s: %s\n", rank_, railcoll_strerror(st), railcoll_last_error());
  railcoll_comm_destroy(comm);
  const char* store = getenv("MP_RECOVERY_STORE");
  const char* job = getenv("MP_RECOVERY_JOB");
  if (!store || !job) return 0;
  railcoll_comm_t again;
  int me = rank_ - (rank_ > victim);
  st = railcoll_comm_init_explicit(&again, me, size - 1, store, job);
  if (st != RAILCOLL_OK) FAIL("a new communicator of the survivors: %s: %s", railcoll_strerror(st), railcoll_last_error());
  int old_rank = rank_;
  rank_ = me;
  int bad = check_call(again, "auto", std::vector<size_t>(size - 1, 1000), 7, false);
  rank_ = old_rank;
  if (bad) return 1;
  if (railcoll_barrier(again) != RAILCOLL_OK) FAIL("barrier on the new communicator: %s", railcoll_last_error());
  railcoll_comm_destroy(again);
  mp::say("rank %d: recovered as rank %d of %d, open files %d before and %d after\n", rank_, me, size - 1, fds_at_start,
         open_fds());
  return 0;
}

int mode_steady(railcoll_comm_t comm, size_t bytes, const std::string& algo, double secs) {
  int size = railcoll_comm_size(comm);
  std::vector<unsigned char> send(bytes), recv(bytes * size);
  railcoll_call_opts_t o{algo.c_str(), 0};
  int fewest_rails = railcoll_comm_rails_up(comm), call = 0;
  const bool nonblocking = getenv("MP_NONBLOCKING") && atoi(getenv("MP_NONBLOCKING"));  // iallgather + wait
  const double pause = getenv("MP_PAUSE_S") && (!getenv("MP_PAUSE_RANK") || atoi(getenv("MP_PAUSE_RANK")) == rank_)
                           ? atof(getenv("MP_PAUSE_S"))
                           : 0;
  std::vector<int> per_second;
  double start = seconds();
  // Every rank must run the same number of calls: rank 0's clock decides, and
  // its verdict (go on or stop) travels in the first byte of its block.
  for (bool more = true; more; ++call) {
    for (size_t i = 0; i < bytes; ++i) send[i] = pattern(rank_, call, i);
    if (rank_ == 0) send[0] = seconds() - start < secs ? 1 : 0;
    if (pause > 0) std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    railcoll_status_t st;
    if (nonblocking) {  // posted, then waited for: driven by the progress thread meanwhile
      railcoll_request_t req;
      st = railcoll_iallgather(comm, send.data(), recv.data(), bytes, &o, &req);
      if (st == RAILCOLL_OK) st = railcoll_wait(&req);
    } else {
      st = railcoll_allgather(comm, send.data(), recv.data(), bytes, &o);
    }
    if (st != RAILCOLL_OK) FAIL("call %d failed: %s: %s", call, railcoll_strerror(st), railcoll_last_error());
    more = recv[0] == 1;
    for (int r = 0; r < size; ++r)
      for (size_t i = r == 0 ? 1 : 0; i < bytes; ++i)
        if (recv[r * bytes + i] != pattern(r, call, i)) FAIL("call %d: wrong byte %zu of rank %d's block", call, i, r);
    size_t second = static_cast<size_t>(seconds() - start);
    if (per_second.size() <= second) per_second.resize(second + 1);
    ++per_second[second];
    fewest_rails = std::min(fewest_rails, railcoll_comm_rails_up(comm));
  }
  mp::say("rank %d: steady %d calls correct, 0 failed; rails up: fewest %d, at the end %d\n", rank_, call, fewest_rails,
         railcoll_comm_rails_up(comm));
  if (rank_ == 0) {
    mp::say("calls per second:");
    for (int n : per_second) mp::say(" %d", n);
    mp::say("\n");
  }
  return 0;
}

int mode_soak(railcoll_comm_t comm, int calls, unsigned seed) {
  int size = railcoll_comm_size(comm);
  auto algos = algorithms();
  std::mt19937 rng(seed);  // the same on every rank: they must agree on every call
  // The first half warms caches and meets the large sizes; in the second half
  // the peak RSS may not rise.
  int warm = std::max(1, calls / 10), step = std::max(1, calls / 20), fds_warm = 0;
  // The test's own buffers (random sizes up to 256 KiB x ranks) must not move
  // the RSS: glibc raises its mmap threshold after large frees, and later large
  // buffers then stay in the heap (a +4.2 MiB second half once, no leak).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  long peak[2] = {0, 0};
  for (int call = 0; call < calls; ++call) {
    if (call == warm) fds_warm = open_fds();
    if (call % step == 0 && call > 0) {
      // After a barrier: a rank keeps a copy of what it sent until the peer's
      // kernel acknowledges it (to send it again if the rail fails), and right
      // after a node leader's 1.5 MiB broadcast to three nodes that was 4.4 MiB
      // held for a moment, not grown; the barrier's end releases what was confirmed.
      if (railcoll_barrier(comm) != RAILCOLL_OK) FAIL("call %d: barrier: %s", call, railcoll_last_error());
      long& p = peak[call > calls / 2];
      p = std::max(p, rss_kib());
    }
    int kind = rng() % 10;
    const std::string& algo = algos[rng() % algos.size()];
    size_t bytes = rng() % 4 == 0 ? rng() % 262144 : rng() % 4096;
    bool in_place = rng() % 5 == 0;
    if (kind == 0) {
      if (railcoll_barrier(comm) != RAILCOLL_OK) FAIL("call %d: barrier: %s", call, railcoll_last_error());
    } else if (kind == 1) {
      std::vector<size_t> counts(size);
      for (auto& c : counts) c = rng() % 3000;
      if (check_call(comm, algo, counts, call, false)) return 1;
    } else if (check_call(comm, algo, std::vector<size_t>(size, bytes), call, in_place)) {
      return 1;
    }
  }
  peak[1] = std::max(peak[1], rss_kib());
#ifdef __SANITIZE_ADDRESS__
  const char* note = ", under AddressSanitizer (its quarantine holds freed memory: RSS not comparable)";
#else
  const char* note = "";
#endif
  mp::say("rank %d: soak %d calls correct; open files %d -> %d, peak RSS %ld -> %ld KiB (first half, second half)%s\n",
         rank_, calls, fds_warm, open_fds(), peak[0], peak[1], note);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fds_at_start = open_fds();
  std::string mode = argc > 1 ? argv[1] : "correct";
  railcoll_comm_t comm;
  const double t0 = seconds();
  railcoll_status_t st = railcoll_comm_init(&comm);
  if (st != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s: %s (after %.3f s)\n", railcoll_strerror(st), railcoll_last_error(),
            seconds() - t0);
    return mode == "nostore" ? 0 : 1;
  }
  if (mode == "nostore") FAIL("railcoll_comm_init succeeded without a store");
  rank_ = railcoll_comm_rank(comm);
  int rc = mode == "correct"     ? mode_correct(comm)
           : mode == "mismatch"  ? mode_mismatch(comm)
           : mode == "badargs"   ? mode_badargs(comm)
           : mode == "onerank"   ? mode_onerank(comm)
           : mode == "twice"     ? mode_twice(comm)
           : mode == "shmfit"    ? mode_shmfit(comm)
           : mode == "peer-exit" ? mode_peer_exit(comm)
           : mode == "deadline"  ? mode_deadline(comm)
           : mode == "replay"    ? mode_replay(comm)
           : mode == "steady"    ? mode_steady(comm, argc > 2 ? strtoul(argv[2], nullptr, 0) : 1 << 20,
                                               argc > 3 ? argv[3] : "direct", argc > 4 ? atof(argv[4]) : 10)
           : mode == "soak"      ? mode_soak(comm, argc > 2 ? atoi(argv[2]) : 1000, argc > 3 ? atoi(argv[3]) : 1)
           : mode == "loop"      ? mode_loop(comm, argc > 2 ? strtoul(argv[2], nullptr, 0) : 65536,
                                             argc > 3 ? argv[3] : "auto")
                                 : 2;
  // loop, onerank and twice destroyed theirs themselves
  return mp::finish(mode == "loop" || mode == "onerank" || mode == "twice" ? nullptr : comm, rc);
}
