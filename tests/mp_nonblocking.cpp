// A rank program for the tests of nonblocking and persistent calls (C API),
// started by `railcoll run` or `railcoll cluster run`. Modes:
//  correct   every collective posted at once on one communicator, completed
//            in several orders (waitall, reverse waits, testany, waitany,
//            testall, request_done), then interleaved on two communicators,
//            then mixed with blocking calls; every byte checked.
//  persist [STARTS]  persistent allgather, allreduce (in place) and bcast
//            started STARTS times each (1,000), the input changed before every
//            start and checked after.
//  badargs   starting a nonblocking or an active request, NULL pointers: errors.
//  mismatch  rank 0 posts another collective than its peers: an error on every
//            rank, no hang.
//  die       the last rank exits with calls posted; every survivor's requests
//            fail with an error naming it within seconds.
//  threads   on each of two communicators, one thread posts every collective,
//            round after round, while another thread waits for the earlier
//            rounds' requests and checks them (a request waited for on one
//            thread while the next calls are posted on another): four threads,
//            two communicators at once. Run under ThreadSanitizer by
//            `make sanitize`.
//  priority WANT  a call outstanding, the progress thread's scheduling as the
//            kernel reports it is WANT (normal, short, realtime), and the call
//            completes with the right bytes (RAILCOLL_PROGRESS_PRIORITY).
// Prints "rank R: MODE ok" when the rank saw what it should, and exits 0.
#include <railcoll/railcoll.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "mp_common.hpp"

namespace {

int n_ = 0;
using Bytes = std::vector<unsigned char>;

unsigned char byte_of(int r, int call, size_t i) { return mp::pattern(r, call, i); }
Bytes block(int r, int call, size_t bytes) {
  Bytes b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = byte_of(r, call, i);
  return b;
}

int expect(const char* what, const unsigned char* got, const Bytes& want) {
  if (memcmp(got, want.data(), want.size()) != 0) FAIL("%s %zu B: wrong bytes", what, want.size());
  return 0;
}

// One posted call and how to check it once it is complete.
struct Posted {
  std::string what;
  railcoll_request_t req = RAILCOLL_REQUEST_NULL;
  std::function<int()> check;
};

// Every collective of the C API, posted on `comm`; buffers live in `keep`.
// call: a number that makes this batch's bytes differ from the others'.
int post_all(railcoll_comm_t comm, size_t bytes, int call, std::vector<Posted>* out, std::vector<Bytes>* keep) {
  const int me = mp::rank, n = n_, root = call % n;
  keep->reserve(keep->size() + 64);  // references into keep stay valid
  // The checks run after post_all has returned: they capture by value, and
  // buffers by their data pointers (stable while `keep` holds them).
  auto buf = [&](size_t len) {
    keep->emplace_back(len + 1, 0xEE);  // +1: a byte past the end, never written
    return keep->back().data();
  };
  // (The request is read here, after the call that set it: not as an argument
  // beside that call, whose order of evaluation C++ leaves open.)
  auto post = [&](const char* what, railcoll_status_t st, railcoll_request_t* req, std::function<int()> check) {
    if (st != RAILCOLL_OK) {
      fprintf(stderr, "rank %d: posting %s: %s\n", me, what, railcoll_last_error());
      return 1;
    }
    out->push_back({std::string(what) + " " + std::to_string(bytes) + " B", *req, std::move(check)});
    return 0;
  };
  railcoll_request_t r;
  // allgather
  {
    unsigned char* send = buf(bytes);
    unsigned char* recv = buf(bytes * n);
    memcpy(send, block(me, call, bytes).data(), bytes);
    if (post("iallgather", railcoll_iallgather(comm, send, recv, bytes, nullptr, &r), &r, [=] {
          for (int s = 0; s < n_; ++s)
            if (expect("iallgather", recv + s * bytes, block(s, call, bytes))) return 1;
          return recv[bytes * n_] == 0xEE ? 0 : 1;
        }))
      return 1;
  }
  // allreduce (int32 sums), in place
  {
    const size_t count = bytes / 4;
    unsigned char* io = buf(count * 4);
    for (size_t i = 0; i < count; ++i) {
      int32_t v = me * 1000 + static_cast<int32_t>(i) + call;
      memcpy(io + i * 4, &v, 4);
    }
    railcoll_call_opts_t o{nullptr, RAILCOLL_IN_PLACE};
    if (post("iallreduce", railcoll_iallreduce(comm, nullptr, io, count, RAILCOLL_INT32, RAILCOLL_SUM, &o, &r), &r,
             [=] {
               for (size_t i = 0; i < count; ++i) {
                 int32_t got;
                 memcpy(&got, io + i * 4, 4);
                 int32_t want = 1000 * n_ * (n_ - 1) / 2 + n_ * (static_cast<int32_t>(i) + call);
                 if (got != want) FAIL("iallreduce: element %zu is %d, not %d", i, got, want);
               }
               return 0;
             }))
      return 1;
  }
  // bcast
  {
    unsigned char* b = buf(bytes);
    if (me == root) memcpy(b, block(root, call + 1, bytes).data(), bytes);
    if (post("ibcast", railcoll_ibcast(comm, b, bytes, root, nullptr, &r), &r,
             [=] { return expect("ibcast", b, block(root, call + 1, bytes)); }))
      return 1;
  }
  // barrier
  if (post("ibarrier", railcoll_ibarrier(comm, &r), &r, [] { return 0; })) return 1;
  // gather
  {
    unsigned char* send = buf(bytes);
    unsigned char* recv = buf(bytes * n);
    memcpy(send, block(me, call + 2, bytes).data(), bytes);
    if (post("igather", railcoll_igather(comm, send, recv, bytes, root, nullptr, &r), &r, [=] {
          if (mp::rank != root) return 0;
          for (int s = 0; s < n_; ++s)
            if (expect("igather", recv + s * bytes, block(s, call + 2, bytes))) return 1;
          return 0;
        }))
      return 1;
  }
  // alltoall: block d of rank s is block(s * n + d)
  {
    unsigned char* send = buf(bytes * n);
    unsigned char* recv = buf(bytes * n);
    for (int d = 0; d < n; ++d) memcpy(send + d * bytes, block(me * n + d, call, bytes).data(), bytes);
    if (post("ialltoall", railcoll_ialltoall(comm, send, recv, bytes, nullptr, &r), &r, [=] {
          for (int s = 0; s < n_; ++s)
            if (expect("ialltoall", recv + s * bytes, block(s * n_ + mp::rank, call, bytes))) return 1;
          return 0;
        }))
      return 1;
  }
  // alltoallv: rank s sends (s + d) % 3 * bytes / 2 bytes to d, packed
  {
    std::vector<size_t> sc(n), rc(n);
    size_t st = 0, rt = 0;
    for (int d = 0; d < n; ++d) st += sc[d] = (me + d) % 3 * bytes / 2;
    for (int s = 0; s < n; ++s) rt += rc[s] = (s + me) % 3 * bytes / 2;
    unsigned char* send = buf(st);
    unsigned char* recv = buf(rt);
    for (int d = 0, at = 0; d < n; at += static_cast<int>(sc[d]), ++d)
      memcpy(send + at, block(me * n + d, call + 3, sc[d]).data(), sc[d]);
    if (post("ialltoallv",
             railcoll_ialltoallv(comm, send, sc.data(), nullptr, recv, rc.data(), nullptr, nullptr, &r), &r,
             [=] {
               size_t at = 0;
               for (int s = 0; s < n_; at += rc[s], ++s)
                 if (expect("ialltoallv", recv + at, block(s * n_ + mp::rank, call + 3, rc[s]))) return 1;
               return 0;
             }))
      return 1;
  }
  // reduce_scatter_block (int32 sums)
  {
    const size_t count = bytes / 4;
    unsigned char* send = buf(count * 4 * n);
    unsigned char* recv = buf(count * 4);
    for (size_t i = 0; i < count * n; ++i) {
      int32_t v = me + static_cast<int32_t>(i) * 3 + call;
      memcpy(send + i * 4, &v, 4);
    }
    if (post("ireduce_scatter_block",
             railcoll_ireduce_scatter_block(comm, send, recv, count, RAILCOLL_INT32, RAILCOLL_SUM, nullptr,
                                            &r), &r, [=] {
               for (size_t i = 0; i < count; ++i) {
                 int32_t got;
                 memcpy(&got, recv + i * 4, 4);
                 const int32_t idx = static_cast<int32_t>(mp::rank * count + i);
                 const int32_t want = n_ * (n_ - 1) / 2 + n_ * (idx * 3 + call);
                 if (got != want) FAIL("ireduce_scatter_block: element %zu is %d, not %d", i, got, want);
               }
               return 0;
             }))
      return 1;
  }
  // reduce (int64 max) at root
  {
    const size_t count = bytes / 8;
    unsigned char* send = buf(count * 8);
    unsigned char* recv = buf(count * 8);
    for (size_t i = 0; i < count; ++i) {
      int64_t v = (me * 7 + static_cast<int64_t>(i)) % n + call;
      memcpy(send + i * 8, &v, 8);
    }
    if (post("ireduce", railcoll_ireduce(comm, send, recv, count, RAILCOLL_INT64, RAILCOLL_MAX, root,
                                         nullptr, &r), &r, [=] {
               if (mp::rank != root) return 0;
               for (size_t i = 0; i < count; ++i) {
                 int64_t got, want = -1;
                 memcpy(&got, recv + i * 8, 8);
                 for (int s = 0; s < n_; ++s) want = std::max<int64_t>(want, (s * 7 + static_cast<int64_t>(i)) % n_ + call);
                 if (got != want) FAIL("ireduce: element %zu is %lld, not %lld", i, (long long)got, (long long)want);
               }
               return 0;
             }))
      return 1;
  }
  // scatter from root
  {
    unsigned char* send = buf(bytes * n);
    unsigned char* recv = buf(bytes);
    if (me == root)
      for (int d = 0; d < n; ++d) memcpy(send + d * bytes, block(d, call + 4, bytes).data(), bytes);
    if (post("iscatter", railcoll_iscatter(comm, send, recv, bytes, root, nullptr, &r), &r,
             [=] { return expect("iscatter", recv, block(mp::rank, call + 4, bytes)); }))
      return 1;
  }
  // gatherv with displaced blocks (reverse order, gaps)
  {
    std::vector<size_t> counts(n), displs(n);
    size_t at = 3;
    for (int k = n - 1; k >= 0; --k) counts[k] = (k % 2) * bytes, displs[k] = at, at += counts[k] + 5;
    unsigned char* send = buf(counts[me]);
    unsigned char* recv = buf(at);
    memcpy(send, block(me, call + 5, counts[me]).data(), counts[me]);
    if (post("igatherv", railcoll_igatherv(comm, send, recv, counts.data(), displs.data(), root, nullptr, &r), &r, [=] {
               if (mp::rank != root) return 0;
               for (int s = 0; s < n_; ++s)
                 if (expect("igatherv", recv + displs[s], block(s, call + 5, counts[s]))) return 1;
               return recv[0] == 0xEE ? 0 : 1;
             }))
      return 1;
  }
  return 0;
}

// Completes `posted` in one of several orders and checks every call.
int complete(std::vector<Posted>& posted, int order) {
  std::vector<railcoll_request_t> reqs;
  for (auto& p : posted) reqs.push_back(p.req);
  const int k = static_cast<int>(reqs.size());
  auto failed = [&](const char* how) {
    fprintf(stderr, "rank %d: %s: %s\n", mp::rank, how, railcoll_last_error());
    return 1;
  };
  switch (order % 5) {
    case 0:
      if (railcoll_waitall(k, reqs.data()) != RAILCOLL_OK) return failed("waitall");
      break;
    case 1:  // the last posted first
      for (int i = k - 1; i >= 0; --i)
        if (railcoll_wait(&reqs[i]) != RAILCOLL_OK) return failed(posted[i].what.c_str());
      break;
    case 2:  // testany until every one is done
      for (int left = k; left > 0;) {
        int index = -1, done = 0;
        if (railcoll_testany(k, reqs.data(), &index, &done) != RAILCOLL_OK) return failed("testany");
        if (done && index >= 0) --left;
        if (done && index < 0) FAIL("testany: every request inactive with %d left", left);
      }
      break;
    case 3:  // waitany
      for (int left = k; left > 0; --left) {
        int index = -1;
        if (railcoll_waitany(k, reqs.data(), &index) != RAILCOLL_OK) return failed("waitany");
        if (index < 0 || reqs[index] != RAILCOLL_REQUEST_NULL) FAIL("waitany: index %d not completed", index);
      }
      break;
    case 4: {  // request_done, then testall
      railcoll_status_t st;
      while (!railcoll_request_done(reqs[k - 1], &st)) {
      }
      if (st != RAILCOLL_OK) return failed("request_done");
      int done = 0;
      while (!done)
        if (railcoll_testall(k, reqs.data(), &done) != RAILCOLL_OK) return failed("testall");
      break;
    }
  }
  for (int i = 0; i < k; ++i)
    if (reqs[i] != RAILCOLL_REQUEST_NULL) FAIL("%s: request not cleared after completion", posted[i].what.c_str());
  for (auto& p : posted)
    if (p.check()) FAIL("%s: wrong result", p.what.c_str());
  return 0;
}

int mode_correct() {
  railcoll_comm_t a, b;
  if (railcoll_comm_init(&a) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
  n_ = railcoll_comm_size(a);
  mp::rank = railcoll_comm_rank(a);
  int call = 0;
  for (size_t bytes : {size_t(0), size_t(24), size_t(4000), size_t(65536)}) {
    for (int order = 0; order < 5; ++order, ++call) {
      std::vector<Posted> posted;
      std::vector<Bytes> keep;
      if (post_all(a, bytes, call, &posted, &keep) || complete(posted, order)) return 1;
    }
  }
  // Two communicators at once: their calls interleaved, completed together.
  if (railcoll_comm_init(&b) != RAILCOLL_OK) FAIL("second railcoll_comm_init: %s", railcoll_last_error());
  for (int round = 0; round < 3; ++round, call += 2) {
    std::vector<Posted> pa, pb;
    std::vector<Bytes> ka, kb;
    if (post_all(a, 4096, call, &pa, &ka) || post_all(b, 1000, call + 1, &pb, &kb)) return 1;
    if (complete(pb, round) || complete(pa, round + 2)) return 1;
  }
  // Blocking calls behind outstanding ones run after them, in order.
  {
    std::vector<Posted> posted;
    std::vector<Bytes> keep;
    if (post_all(a, 30000, ++call, &posted, &keep)) return 1;
    Bytes send = block(mp::rank, 99, 100), recv(100 * n_);
    if (railcoll_allgather(a, send.data(), recv.data(), 100, nullptr) != RAILCOLL_OK)
      FAIL("blocking allgather behind requests: %s", railcoll_last_error());
    for (int s = 0; s < n_; ++s)
      if (memcmp(recv.data() + s * 100, block(s, 99, 100).data(), 100)) FAIL("blocking allgather: wrong bytes");
    for (auto& p : posted)
      if (railcoll_request_done(p.req, nullptr) != 1) FAIL("%s not done after a later blocking call", p.what.c_str());
    if (complete(posted, 0)) return 1;
  }
  // A request freed while outstanding completes all the same.
  {
    Bytes send = block(mp::rank, 7, 5000), recv(5000 * n_);
    railcoll_request_t r;
    if (railcoll_iallgather(a, send.data(), recv.data(), 5000, nullptr, &r) != RAILCOLL_OK ||
        railcoll_request_free(&r) != RAILCOLL_OK || r != RAILCOLL_REQUEST_NULL)
      FAIL("request_free on an outstanding request: %s", railcoll_last_error());
    if (railcoll_barrier(a) != RAILCOLL_OK) FAIL("barrier after a freed request: %s", railcoll_last_error());
    for (int s = 0; s < n_; ++s)
      if (memcmp(recv.data() + s * 5000, block(s, 7, 5000).data(), 5000)) FAIL("freed iallgather: wrong bytes");
  }
  railcoll_comm_destroy(b);
  railcoll_comm_destroy(a);
  mp::say("rank %d: correct ok\n", mp::rank);
  return 0;
}

// Rounds of every collective posted on `comm` by this thread while a thread of
// its own waits for them in order and checks them; wrong results counted in *bad.
void post_while_waiting(railcoll_comm_t comm, int first_call, std::atomic<int>* bad) {
  const int rounds = 12;
  std::mutex m;
  std::condition_variable cv;
  std::deque<Posted> queue;
  bool posted_all = false;
  std::vector<std::vector<Bytes>> keeps(rounds);  // each round's buffers, until the end
  std::thread waiter([&] {
    for (;;) {
      Posted p;
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return !queue.empty() || posted_all; });
        if (queue.empty()) return;
        p = std::move(queue.front());
        queue.pop_front();
      }
      if (railcoll_wait(&p.req) != RAILCOLL_OK) {
        fprintf(stderr, "rank %d: waiting for %s: %s\n", mp::rank, p.what.c_str(), railcoll_last_error());
        ++*bad;
      } else if (p.check()) {
        fprintf(stderr, "rank %d: %s: wrong result\n", mp::rank, p.what.c_str());
        ++*bad;
      }
    }
  });
  for (int round = 0; round < rounds; ++round) {
    std::vector<Posted> posted;
    if (post_all(comm, 100 + static_cast<size_t>(round) * 2011, first_call + 10 * round, &posted, &keeps[round])) {
      ++*bad;
      break;
    }
    {
      std::lock_guard<std::mutex> lock(m);
      for (auto& p : posted) queue.push_back(std::move(p));
    }
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(m);
    posted_all = true;
  }
  cv.notify_one();
  waiter.join();
}

int mode_threads() {
  railcoll_comm_t a, b;
  if (railcoll_comm_init(&a) != RAILCOLL_OK || railcoll_comm_init(&b) != RAILCOLL_OK)
    FAIL("railcoll_comm_init: %s", railcoll_last_error());
  n_ = railcoll_comm_size(a);
  mp::rank = railcoll_comm_rank(a);
  std::atomic<int> bad{0};
  std::thread other(post_while_waiting, b, 1000, &bad);
  post_while_waiting(a, 0, &bad);
  other.join();
  if (bad) FAIL("%d calls failed or were wrong", bad.load());
  railcoll_comm_destroy(b);
  railcoll_comm_destroy(a);
  mp::say("rank %d: threads ok\n", mp::rank);
  return 0;
}

int mode_persist(int starts) {
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
  n_ = railcoll_comm_size(comm);
  mp::rank = railcoll_comm_rank(comm);
  const size_t bytes = 1000, count = 300;
  Bytes send(bytes), recv(bytes * n_), bc(bytes);
  std::vector<int32_t> io(count);
  railcoll_request_t reqs[3];
  railcoll_call_opts_t in_place{nullptr, RAILCOLL_IN_PLACE};
  if (railcoll_allgather_init(comm, send.data(), recv.data(), bytes, nullptr, &reqs[0]) != RAILCOLL_OK ||
      railcoll_allreduce_init(comm, nullptr, io.data(), count, RAILCOLL_INT32, RAILCOLL_SUM, &in_place, &reqs[1]) !=
          RAILCOLL_OK ||
      railcoll_bcast_init(comm, bc.data(), bytes, n_ - 1, nullptr, &reqs[2]) != RAILCOLL_OK)
    FAIL("init: %s", railcoll_last_error());
  int done = 0;
  if (railcoll_test(&reqs[0], &done) != RAILCOLL_OK || !done) FAIL("an inactive persistent request is not complete");
  for (int it = 0; it < starts; ++it) {
    // In place: the requests hold these buffers' addresses (no assignment,
    // which could move a new vector's storage in).
    const Bytes mine = block(mp::rank, it, bytes);
    std::copy(mine.begin(), mine.end(), send.begin());
    for (size_t i = 0; i < count; ++i) io[i] = mp::rank + static_cast<int32_t>(i) * it;
    const Bytes from_root = block(n_ + 1, it, bytes);
    if (mp::rank == n_ - 1) std::copy(from_root.begin(), from_root.end(), bc.begin());
    if (railcoll_startall(3, reqs) != RAILCOLL_OK) FAIL("start %d: %s", it, railcoll_last_error());
    if (it % 2 ? railcoll_waitall(3, reqs) != RAILCOLL_OK
               : railcoll_wait(&reqs[2]) != RAILCOLL_OK || railcoll_wait(&reqs[0]) != RAILCOLL_OK ||
                     railcoll_wait(&reqs[1]) != RAILCOLL_OK)
      FAIL("wait %d: %s", it, railcoll_last_error());
    for (int s = 0; s < n_; ++s)
      if (memcmp(recv.data() + s * bytes, block(s, it, bytes).data(), bytes))
        FAIL("allgather start %d: wrong bytes from rank %d (%02x, not %02x)", it, s, recv[s * bytes], block(s, it, bytes)[0]);
    for (size_t i = 0; i < count; ++i)
      if (io[i] != n_ * (n_ - 1) / 2 + n_ * static_cast<int32_t>(i) * it) FAIL("allreduce start %d: element %zu", it, i);
    if (bc != from_root) FAIL("bcast start %d: wrong bytes", it);
    for (auto& r : reqs)
      if (r == RAILCOLL_REQUEST_NULL) FAIL("a persistent request was freed by its completion");
  }
  for (auto& r : reqs)
    if (railcoll_request_free(&r) != RAILCOLL_OK) FAIL("request_free: %s", railcoll_last_error());
  railcoll_comm_destroy(comm);
  mp::say("rank %d: persist ok\n", mp::rank);
  return 0;
}

int mode_badargs() {
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
  n_ = railcoll_comm_size(comm);
  mp::rank = railcoll_comm_rank(comm);
  Bytes send(64), recv(64 * n_);
  railcoll_request_t r, p;
  if (railcoll_iallgather(comm, send.data(), recv.data(), 64, nullptr, nullptr) != RAILCOLL_ERR_ARG)
    FAIL("a NULL request pointer was taken");
  if (railcoll_iallgather(comm, send.data(), recv.data(), 64, nullptr, &r) != RAILCOLL_OK)
    FAIL("iallgather: %s", railcoll_last_error());
  if (railcoll_start(r) != RAILCOLL_ERR_ARG || !strstr(railcoll_last_error(), "persistent"))
    FAIL("starting a nonblocking request: '%s'", railcoll_last_error());
  if (railcoll_wait(&r) != RAILCOLL_OK) FAIL("wait: %s", railcoll_last_error());
  if (railcoll_allgather_init(comm, send.data(), recv.data(), 64, nullptr, &p) != RAILCOLL_OK)
    FAIL("allgather_init: %s", railcoll_last_error());
  if (railcoll_start(p) != RAILCOLL_OK) FAIL("start: %s", railcoll_last_error());
  if (railcoll_start(p) != RAILCOLL_ERR_ARG || !strstr(railcoll_last_error(), "already active"))
    FAIL("starting an active request: '%s'", railcoll_last_error());
  if (railcoll_wait(&p) != RAILCOLL_OK || railcoll_wait(&p) != RAILCOLL_OK) FAIL("wait: %s", railcoll_last_error());
  if (railcoll_start(RAILCOLL_REQUEST_NULL) != RAILCOLL_ERR_ARG) FAIL("started NULL");
  if (railcoll_waitall(-1, nullptr) != RAILCOLL_ERR_ARG) FAIL("waitall of -1 requests");
  railcoll_request_free(&p);
  // A bad argument to a nonblocking call: an error here, ERR_PEER on the others.
  railcoll_status_t st = railcoll_iallgather(comm, mp::rank == 0 ? nullptr : send.data(), recv.data(), 64, nullptr, &r);
  if (mp::rank == 0 && st != RAILCOLL_ERR_ARG) FAIL("a NULL sendbuf was taken");
  if (mp::rank != 0) {
    st = st == RAILCOLL_OK ? railcoll_wait(&r) : st;
    if (st != RAILCOLL_ERR_PEER) FAIL("a peer's bad argument gave %s: %s", railcoll_strerror(st), railcoll_last_error());
  }
  railcoll_comm_destroy(comm);
  mp::say("rank %d: badargs ok\n", mp::rank);
  return 0;
}

int mode_mismatch() {
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
  n_ = railcoll_comm_size(comm);
  mp::rank = railcoll_comm_rank(comm);
  Bytes send(4096), recv(4096 * n_);
  railcoll_request_t r[2];
  const auto start = std::chrono::steady_clock::now();
  railcoll_status_t st = mp::rank == 0 ? railcoll_ialltoall(comm, send.data(), recv.data(), 4096 / n_, nullptr, &r[0])
                                       : railcoll_iallgather(comm, send.data(), recv.data(), 4096, nullptr, &r[0]);
  if (st == RAILCOLL_OK) st = railcoll_ibarrier(comm, &r[1]);
  if (st == RAILCOLL_OK) st = railcoll_waitall(2, r);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (st != RAILCOLL_ERR_MISMATCH && st != RAILCOLL_ERR_PEER && st != RAILCOLL_ERR_PROTOCOL)
    FAIL("mismatched calls gave %s: %s", railcoll_strerror(st), railcoll_last_error());
  const std::string why = railcoll_last_error();
  railcoll_comm_destroy(comm);
  mp::say("rank %d: mismatch ok (%s after %.1f s: %s)\n", mp::rank, railcoll_strerror(st), took, why.c_str());
  return 0;
}

int mode_die() {
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
  n_ = railcoll_comm_size(comm);
  mp::rank = railcoll_comm_rank(comm);
  const size_t bytes = 1 << 20;
  Bytes send(bytes), recv(bytes * n_), red(bytes);
  railcoll_request_t r[3];
  if (railcoll_iallgather(comm, send.data(), recv.data(), bytes, nullptr, &r[0]) != RAILCOLL_OK ||
      railcoll_iallreduce(comm, send.data(), red.data(), bytes / 4, RAILCOLL_INT32, RAILCOLL_SUM, nullptr, &r[1]) !=
          RAILCOLL_OK)
    FAIL("posting: %s", railcoll_last_error());
  // The last rank dies with its calls outstanding. It never posts the barrier:
  // a post drives its call, and where the peers are quick (or this rank slow,
  // as under ThreadSanitizer) all three could end inside the posts, leaving
  // the peers nothing to fail on.
  if (mp::rank == n_ - 1) _exit(3);
  if (railcoll_ibarrier(comm, &r[2]) != RAILCOLL_OK) FAIL("posting: %s", railcoll_last_error());
  const auto start = std::chrono::steady_clock::now();
  railcoll_status_t st = railcoll_waitall(3, r);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string why = railcoll_last_error();
  if (st != RAILCOLL_ERR_PEER && st != RAILCOLL_ERR_NETWORK)
    FAIL("waitall with a dead peer gave %s: %s", railcoll_strerror(st), why.c_str());
  if (took > 5) FAIL("the failure took %.1f s to reach this rank", took);
  for (auto& q : r)
    if (q != RAILCOLL_REQUEST_NULL) FAIL("a failed request was not completed");
  if (railcoll_barrier(comm) != RAILCOLL_ERR_BROKEN) FAIL("the communicator is not broken after the failure");
  railcoll_comm_destroy(comm);
  mp::say("rank %d: die ok (%s after %.1f s: %s)\n", mp::rank, railcoll_strerror(st), took, why.c_str());
  return 0;
}

// The progress thread's scheduling as the kernel reports it
// (/proc/self/task/TID/sched): its policy and slice, "" if no thread is named so.
std::string progress_thread_scheduling() {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return "";
  std::string found;
  while (dirent* task = readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + task->d_name;
    FILE* comm = fopen((dir + "/comm").c_str(), "r");
    if (!comm) continue;
    char name[64] = {};
    const bool ours = fgets(name, sizeof name, comm) && strncmp(name, "railcoll-prog", 13) == 0;
    fclose(comm);
    if (!ours) continue;
    FILE* sched = fopen((dir + "/sched").c_str(), "r");
    if (!sched) break;
    long policy = -1, slice = -1;
    for (char line[256]; fgets(line, sizeof line, sched);) {
      char key[64];
      long value;
      if (sscanf(line, "%63s : %ld", key, &value) != 2) continue;
      if (strcmp(key, "policy") == 0) policy = value;
      if (strcmp(key, "se.slice") == 0) slice = value;
    }
    fclose(sched);
    found = policy == 1 || policy == 2 ? "realtime" : slice > 0 && slice <= 100000 ? "short" : "normal";
    break;
  }
  closedir(tasks);
  return found;
}

// priority WANT: with a call outstanding, the progress thread runs under the
// scheduling RAILCOLL_PROGRESS_PRIORITY asked for (WANT: what the kernel should
// report), and the call still completes with the right bytes.
int mode_priority(const std::string& want) {
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
  n_ = railcoll_comm_size(comm);
  mp::rank = railcoll_comm_rank(comm);
  const size_t bytes = 256 << 10;
  Bytes send = block(mp::rank, 0, bytes), recv(bytes * n_);
  railcoll_request_t r;
  if (railcoll_iallgather(comm, send.data(), recv.data(), bytes, nullptr, &r) != RAILCOLL_OK)
    FAIL("posting: %s", railcoll_last_error());
  std::string got;
  for (int i = 0; i < 1000 && got.empty(); ++i) {  // the thread names itself when it starts (5 s: a loaded machine)
    got = progress_thread_scheduling();
    if (got.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (railcoll_wait(&r) != RAILCOLL_OK) FAIL("wait: %s", railcoll_last_error());
  for (int p = 0; p < n_; ++p)
    if (expect("allgather under the priority", recv.data() + p * bytes, block(p, 0, bytes))) return 1;
  railcoll_comm_destroy(comm);
  if (got != want) FAIL("the progress thread's scheduling is '%s', not '%s'", got.c_str(), want.c_str());
  mp::say("rank %d: priority ok (%s)\n", mp::rank, got.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correct";
  const char* r = getenv("RAILCOLL_RANK");
  mp::rank = r ? atoi(r) : -1;
  // Every mode destroys its own communicators; their report comes after.
  if (mode == "correct") return mp::finish(nullptr, mode_correct());
  if (mode == "persist") return mp::finish(nullptr, mode_persist(argc > 2 ? atoi(argv[2]) : 1000));
  if (mode == "badargs") return mp::finish(nullptr, mode_badargs());
  if (mode == "mismatch") return mp::finish(nullptr, mode_mismatch());
  if (mode == "die") return mp::finish(nullptr, mode_die());
  if (mode == "threads") return mp::finish(nullptr, mode_threads());
  if (mode == "priority") return mp::finish(nullptr, mode_priority(argc > 2 ? argv[2] : "normal"));
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
