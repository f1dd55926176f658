// A rank program for the tests of point-to-point messages (C API
// railcoll_isend / railcoll_irecv), started by `railcoll run`. Modes:
//  correct  every pair of ranks exchanges messages of 0 B to 1 MiB + 3 (above
//           the striping threshold: in parts over the rails), receives posted
//           before and after the sends; three messages of one tag arrive in
//           the order sent while another tag is received first; any-source
//           receives name their senders; messages between collectives, and
//           outstanding across them; every byte checked.
//  errors   a receive of the wrong size fails (MISMATCH) and one nothing
//           matches times out (TIMEOUT), the communicator still works after
//           both; bad peers and tags are refused (ARG).
//  die      the last rank exits while the others wait for its message: they
//           fail with an error naming it within seconds.
// Prints "rank R: MODE ok" when the rank saw what it should, and exits 0.
#include <railcoll/railcoll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mp_common.hpp"

namespace {

using Bytes = std::vector<unsigned char>;
int n_ = 0;

Bytes message(int from, int to, int tag, size_t bytes) {
  Bytes b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = mp::pattern(from * 17 + to, tag, i);
  return b;
}

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    railcoll_status_t st_ = (call);                                                                  \
    if (st_ != RAILCOLL_OK) FAIL("%s: %s: %s", #call, railcoll_strerror(st_), railcoll_last_error()); \
  } while (0)

int allreduce_check(railcoll_comm_t comm, int call) {
  long v = mp::rank + call;
  const railcoll_call_opts_t in_place{nullptr, RAILCOLL_IN_PLACE};
  CHECK(railcoll_allreduce(comm, nullptr, &v, 1, RAILCOLL_INT64, RAILCOLL_SUM, &in_place));
  long want = static_cast<long>(n_) * (n_ - 1) / 2 + static_cast<long>(n_) * call;
  if (v != want) FAIL("allreduce between messages: %ld, want %ld", v, want);
  return 0;
}

int mode_correct(railcoll_comm_t comm) {
  const int me = mp::rank;
  const size_t sizes[] = {0, 7, 4096, 65536, (1u << 20) + 3};
  for (size_t bytes : sizes) {
    // Receives of odd ranks posted before the sends, of even ranks after.
    std::vector<Bytes> in(n_, Bytes(bytes)), out(n_);
    std::vector<railcoll_request_t> reqs;
    std::vector<int> sources(n_, -7);
    auto post_recvs = [&]() -> int {
      for (int p = 0; p < n_; ++p)
        if (p != me) {
          reqs.push_back(RAILCOLL_REQUEST_NULL);
          CHECK(railcoll_irecv(comm, in[p].data(), bytes, p, 5, &sources[p], &reqs.back()));
        }
      return 0;
    };
    if (me % 2 && post_recvs()) return 1;
    for (int p = 0; p < n_; ++p)
      if (p != me) {
        out[p] = message(me, p, 5, bytes);
        reqs.push_back(RAILCOLL_REQUEST_NULL);
        CHECK(railcoll_isend(comm, out[p].data(), bytes, p, 5, &reqs.back()));
      }
    if (me % 2 == 0 && post_recvs()) return 1;
    CHECK(railcoll_waitall(static_cast<int>(reqs.size()), reqs.data()));
    for (int p = 0; p < n_; ++p)
      if (p != me) {
        if (in[p] != message(p, me, 5, bytes)) FAIL("%zu B from rank %d: wrong bytes", bytes, p);
        if (sources[p] != p) FAIL("%zu B from rank %d: source says %d", bytes, p, sources[p]);
      }
    if (allreduce_check(comm, static_cast<int>(bytes % 1000))) return 1;
  }
  // Order within a tag, and tags apart: rank 0 sends tags 1, 1, 1, 2 to every
  // rank, which receives the tag 2 first, then the three of tag 1 in order.
  if (me == 0) {
    std::vector<Bytes> keep;
    std::vector<railcoll_request_t> reqs;
    for (int p = 1; p < n_; ++p)
      for (int k = 0; k < 4; ++k) {
        keep.push_back(message(0, p, k, 1000 + k));
        reqs.push_back(RAILCOLL_REQUEST_NULL);
        CHECK(railcoll_isend(comm, keep.back().data(), 1000 + k, p, k == 3 ? 2 : 1, &reqs.back()));
      }
    CHECK(railcoll_waitall(static_cast<int>(reqs.size()), reqs.data()));
  } else {
    Bytes b(1003);
    railcoll_request_t r;
    CHECK(railcoll_irecv(comm, b.data(), 1003, 0, 2, nullptr, &r));
    CHECK(railcoll_wait(&r));
    if (b != message(0, me, 3, 1003)) FAIL("tag 2 received first: wrong bytes");
    for (int k = 0; k < 3; ++k) {
      Bytes c(1000 + k);
      CHECK(railcoll_irecv(comm, c.data(), c.size(), 0, 1, nullptr, &r));
      CHECK(railcoll_wait(&r));
      if (c != message(0, me, k, 1000 + k)) FAIL("tag 1 message %d out of order or wrong", k);
    }
  }
  // Any source: every rank sends rank 0 one message; rank 0 receives from any.
  if (me == 0) {
    std::vector<int> seen(n_, 0);
    for (int k = 1; k < n_; ++k) {
      Bytes b(64);
      int from = -1;
      railcoll_request_t r;
      CHECK(railcoll_irecv(comm, b.data(), 64, RAILCOLL_ANY_SOURCE, 9, &from, &r));
      CHECK(railcoll_wait(&r));
      if (from < 1 || from >= n_ || seen[from]++) FAIL("any-source receive names rank %d", from);
      if (b != message(from, 0, 9, 64)) FAIL("any-source message of rank %d: wrong bytes", from);
    }
  } else {
    Bytes b = message(me, 0, 9, 64);
    railcoll_request_t r;
    CHECK(railcoll_isend(comm, b.data(), 64, 0, 9, &r));
    CHECK(railcoll_wait(&r));
  }
  // Outstanding across a collective: a ring, the receive posted, an
  // all-reduce, then the send.
  {
    const int next = (me + 1) % n_, prev = (me + n_ - 1) % n_;
    Bytes in(5000), out = message(me, next, 3, 5000);
    railcoll_request_t r, s;
    CHECK(railcoll_irecv(comm, in.data(), in.size(), prev, 3, nullptr, &r));
    if (allreduce_check(comm, 77)) return 1;
    CHECK(railcoll_isend(comm, out.data(), out.size(), next, 3, &s));
    CHECK(railcoll_wait(&s));
    CHECK(railcoll_wait(&r));
    if (in != message(prev, me, 3, 5000)) FAIL("ring across an all-reduce: wrong bytes");
  }
  if (allreduce_check(comm, 5)) return 1;
  printf("rank %d: correct ok\n", me);
  return 0;
}

int mode_errors(railcoll_comm_t comm) {
  const int me = mp::rank;
  Bytes b(100);
  railcoll_request_t r = RAILCOLL_REQUEST_NULL;
  if (railcoll_isend(comm, b.data(), 100, n_, 0, &r) != RAILCOLL_ERR_ARG) FAIL("a send to rank n was not refused");
  if (railcoll_isend(comm, b.data(), 100, me, 0, &r) != RAILCOLL_ERR_ARG) FAIL("a send to itself was not refused");
  if (railcoll_irecv(comm, b.data(), 100, (me + 1) % n_, -1, nullptr, &r) != RAILCOLL_ERR_ARG)
    FAIL("a negative tag was not refused");
  if (strstr(railcoll_last_error(), "tag") == nullptr) FAIL("the refusal does not name the tag: %s", railcoll_last_error());
  // The wrong size: rank 0 sends 100 B to rank 1, which expects 50.
  if (me == 0) {
    CHECK(railcoll_isend(comm, b.data(), 100, 1, 4, &r));
    CHECK(railcoll_wait(&r));
  } else if (me == 1) {
    CHECK(railcoll_irecv(comm, b.data(), 50, 0, 4, nullptr, &r));
    railcoll_status_t st = railcoll_wait(&r);
    if (st != RAILCOLL_ERR_MISMATCH || !strstr(railcoll_last_error(), "100 bytes"))
      FAIL("a receive of the wrong size: %s: %s", railcoll_strerror(st), railcoll_last_error());
  }
  if (allreduce_check(comm, 1)) return 1;
  // Nothing sent: the receive times out (RAILCOLL_TIMEOUT=2 here) and the communicator goes on.
  // (The others sleep meanwhile, or their next all-reduce would time out waiting for rank 1.)
  if (me == 1) {
    auto t0 = std::chrono::steady_clock::now();
    CHECK(railcoll_irecv(comm, b.data(), 100, 0, 11, nullptr, &r));
    railcoll_status_t st = railcoll_wait(&r);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st != RAILCOLL_ERR_TIMEOUT || s > 20)
      FAIL("an unmatched receive: %s after %.1f s: %s", railcoll_strerror(st), s, railcoll_last_error());
  } else {
    usleep(2500000);  // the all-reduce below waits for rank 1 no longer than the timeout
  }
  if (allreduce_check(comm, 2)) return 1;
  printf("rank %d: errors ok\n", me);
  return 0;
}

int mode_die(railcoll_comm_t comm) {
  const int me = mp::rank;
  if (allreduce_check(comm, 0)) return 1;
  if (me == n_ - 1) {  // once the others are out of the all-reduce (whose last frames an exit could cut off)
    usleep(1000000);
    _exit(0);
  }
  Bytes b(100);
  railcoll_request_t r;
  auto t0 = std::chrono::steady_clock::now();
  CHECK(railcoll_irecv(comm, b.data(), 100, n_ - 1, 0, nullptr, &r));
  railcoll_status_t st = railcoll_wait(&r);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string who = "rank " + std::to_string(n_ - 1);
  if (st == RAILCOLL_OK || s > 15 || !strstr(railcoll_last_error(), who.c_str()))
    FAIL("a receive from a dead rank: %s after %.1f s: %s", railcoll_strerror(st), s, railcoll_last_error());
  printf("rank %d: die ok (%.1f s: %s)\n", me, s, railcoll_last_error());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correct";
  const char* r = getenv("RAILCOLL_RANK");
  mp::rank = r ? atoi(r) : -1;
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    fprintf(stderr, "rank %d: init: %s\n", mp::rank, railcoll_last_error());
    return 1;
  }
  n_ = railcoll_comm_size(comm);
  int rc = mode == "correct" ? mode_correct(comm) : mode == "errors" ? mode_errors(comm) : mode == "die" ? mode_die(comm) : 2;
  railcoll_comm_destroy(comm);  // after "die" too: a survivor that left without a goodbye would be one more dead peer
  return rc;
}
