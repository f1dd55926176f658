// A rank program for the multi-process tests, started by `railcoll run` or
// `railcoll cluster run`. Modes:
//   correct    every algorithm x sizes (byte-exact, a distinct pattern per rank
//              and per call), all-gatherv, in-place, barrier, back-to-back calls
//   mismatch   rank 0 passes a different size: every rank must get an error
//   badargs    NULL buffers, overlap, unknown algorithm: errors, no hang
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
//              be wrong; rank 0 prints calls per second and the rails up it saw
//   soak N S   N mixed calls (all-gather(v), barrier; random sizes, algorithms,
//              in place or not; seed S), every byte checked; open files after
//              10% of the calls and at the end, and the peak RSS of each half
//              (sampled every 5%: buffers of random sizes make single samples noisy)
// Exit 0 when the rank saw what it should have.
#include <railcoll/railcoll.h>
#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
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

// One all-gather(v) call checked byte by byte.
int check_call(railcoll_comm_t comm, const std::string& algo, const std::vector<size_t>& counts, int call,
               bool in_place) {
  int size = railcoll_comm_size(comm);
  size_t total = 0, displ = 0;
  for (int r = 0; r < size; ++r) {
    if (r == rank_) displ = total;
    total += counts[r];
  }
  std::vector<unsigned char> send(counts[rank_] + 1), recv(total + 1, 0xEE);
  for (size_t i = 0; i < counts[rank_]; ++i) send[i] = pattern(rank_, call, i);
  if (in_place) memcpy(recv.data() + displ, send.data(), counts[rank_]);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  bool uniform = true;
  for (auto c : counts) uniform &= c == counts[0];
  railcoll_status_t st = uniform ? railcoll_allgather(comm, in_place ? nullptr : send.data(), recv.data(), counts[0], &o)
                                 : railcoll_allgatherv(comm, in_place ? nullptr : send.data(), recv.data(), counts.data(), &o);
  if (st != RAILCOLL_OK) FAIL("%s call %d (%zu B): %s: %s", algo.c_str(), call, counts[0], railcoll_strerror(st), railcoll_last_error());
  size_t at = 0;
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < counts[r]; ++i, ++at)
      if (recv[at] != pattern(r, call, i))
        FAIL("%s call %d: wrong byte %zu of rank %d's block: got %d, expected %d", algo.c_str(), call, i, r,
             recv[at], pattern(r, call, i));
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
    if (check_call(comm, algo, std::vector<size_t>(size, 333), call++, true)) return 1;
  }
  // Back to back: alternating algorithms and sizes, with barriers between some.
  auto algos = algorithms();
  for (int i = 0; i < 40; ++i) {
    if (check_call(comm, algos[i % algos.size()], std::vector<size_t>(size, (i * 977) % 5000), call++, false)) return 1;
    if (i % 7 == 0 && railcoll_barrier(comm) != RAILCOLL_OK) FAIL("barrier: %s", railcoll_last_error());
  }
  printf("rank %d: %d calls correct\n", rank_, call);
  return 0;
}

// Every rank must see an error, within the deadline; none may report success.
int expect_error(railcoll_status_t st, const char* what, double t0) {
  double took = seconds() - t0;
  if (st == RAILCOLL_OK) FAIL("%s: returned success", what);
  printf("rank %d: %s -> %s after %.1f s: %s\n", rank_, what, railcoll_strerror(st), took, railcoll_last_error());
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
  struct Case {
    const char* what;
    railcoll_status_t st;
  } cases[] = {
      {"NULL recvbuf", railcoll_allgather(comm, buf.data(), nullptr, 4, nullptr)},
      {"NULL sendbuf", railcoll_allgather(comm, nullptr, buf.data(), 4, nullptr)},
      {"overlapping buffers", railcoll_allgather(comm, buf.data() + 4, buf.data(), 4, nullptr)},
      {"NULL communicator", railcoll_allgather(nullptr, buf.data(), buf.data(), 4, nullptr)},
      {"NULL counts", railcoll_allgatherv(comm, buf.data(), buf.data(), nullptr, nullptr)},
  };
  for (auto& c : cases)
    if (c.st != RAILCOLL_ERR_ARG) FAIL("%s: expected RAILCOLL_ERR_ARG, got %s", c.what, railcoll_strerror(c.st));
  railcoll_call_opts_t o{"no_such_algo", 0};
  if (railcoll_allgather(comm, buf.data(), buf.data() + 64, 4, &o) != RAILCOLL_ERR_ARG ||
      !strstr(railcoll_last_error(), "unknown allgather algorithm 'no_such_algo'"))
    FAIL("unknown algorithm: %s", railcoll_last_error());
  // The communicator still works after rejected arguments.
  std::vector<char> send(8, static_cast<char>(rank_)), recv(8 * size);
  if (railcoll_allgather(comm, send.data(), recv.data(), 8, nullptr) != RAILCOLL_OK)
    FAIL("allgather after bad arguments: %s", railcoll_last_error());
  printf("rank %d: bad arguments rejected\n", rank_);
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
    printf("rank %d: replayed frame refused in the barrier -> %s after %.1f s: %s\n", rank_, railcoll_strerror(st),
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
  printf("rank %d: replayed frame refused -> %s after %.1f s: %s\n", rank_, railcoll_strerror(st), seconds() - t0,
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
  printf("rank %d: peer failure -> %s after %.2f s in call %d (names %s: %s): %s\n", rank_, railcoll_strerror(st), took,
         call, name.c_str(), names ? "yes" : "no", msg.c_str());
  st = railcoll_allgather(comm, send.data(), recv.data(), bytes, &o);
  printf("rank %d: next call -> %s: %s\n", rank_, railcoll_strerror(st), railcoll_last_error());
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
  printf("rank %d: recovered as rank %d of %d, open files %d before and %d after\n", rank_, me, size - 1, fds_at_start,
         open_fds());
  return 0;
}

int mode_steady(railcoll_comm_t comm, size_t bytes, const std::string& algo, double secs) {
  int size = railcoll_comm_size(comm);
  std::vector<unsigned char> send(bytes), recv(bytes * size);
  railcoll_call_opts_t o{algo.c_str(), 0};
  int fewest_rails = railcoll_comm_rails_up(comm), call = 0;
  std::vector<int> per_second;
  double start = seconds();
  // Every rank must run the same number of calls: rank 0's clock decides, and
  // its verdict (go on or stop) travels in the first byte of its block.
  for (bool more = true; more; ++call) {
    for (size_t i = 0; i < bytes; ++i) send[i] = pattern(rank_, call, i);
    if (rank_ == 0) send[0] = seconds() - start < secs ? 1 : 0;
    railcoll_status_t st = railcoll_allgather(comm, send.data(), recv.data(), bytes, &o);
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
  printf("rank %d: steady %d calls correct, 0 failed; rails up: fewest %d, at the end %d\n", rank_, call, fewest_rails,
         railcoll_comm_rails_up(comm));
  if (rank_ == 0) {
    printf("calls per second:");
    for (int n : per_second) printf(" %d", n);
    printf("\n");
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
  printf("rank %d: soak %d calls correct; open files %d -> %d, peak RSS %ld -> %ld KiB (first half, second half)%s\n",
         rank_, calls, fds_warm, open_fds(), peak[0], peak[1], note);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  fds_at_start = open_fds();
  std::string mode = argc > 1 ? argv[1] : "correct";
  railcoll_comm_t comm;
  railcoll_status_t st = railcoll_comm_init(&comm);
  if (st != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s: %s\n", railcoll_strerror(st), railcoll_last_error());
    return mode == "nostore" ? 0 : 1;
  }
  if (mode == "nostore") FAIL("railcoll_comm_init succeeded without a store");
  rank_ = railcoll_comm_rank(comm);
  int rc = mode == "correct"     ? mode_correct(comm)
           : mode == "mismatch"  ? mode_mismatch(comm)
           : mode == "badargs"   ? mode_badargs(comm)
           : mode == "peer-exit" ? mode_peer_exit(comm)
           : mode == "deadline"  ? mode_deadline(comm)
           : mode == "replay"    ? mode_replay(comm)
           : mode == "steady"    ? mode_steady(comm, argc > 2 ? strtoul(argv[2], nullptr, 0) : 1 << 20,
                                               argc > 3 ? argv[3] : "direct", argc > 4 ? atof(argv[4]) : 10)
           : mode == "soak"      ? mode_soak(comm, argc > 2 ? atoi(argv[2]) : 1000, argc > 3 ? atoi(argv[3]) : 1)
           : mode == "loop"      ? mode_loop(comm, argc > 2 ? strtoul(argv[2], nullptr, 0) : 65536,
                                             argc > 3 ? argv[3] : "auto")
                                 : 2;
  if (mode == "loop") return rc;  // it destroyed the communicator itself
  railcoll_comm_destroy(comm);
  return rc;
}
