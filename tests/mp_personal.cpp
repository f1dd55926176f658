// A rank program for the multi-process tests of alltoall, alltoallv, scatter,
// scatterv and gatherv, started by `railcoll run` or `railcoll cluster run`:
// every algorithm (and auto) x sizes (0, odd, striped, uneven per-rank and
// per-pair counts, some 0) x every root, in place where MPI allows it, blocks at
// displacements with gaps and out of rank order; every byte of every recvbuf is
// checked, gaps and the byte past the end included (they must stay untouched).
// Modes: correct; badargs (NULL counts, overlapping buffers, counts a peer does
// not expect: an error, never a hang). Exit 0 when the rank saw what it should.
#include <railcoll/railcoll.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mp_common.hpp"

namespace {

int& rank_ = mp::rank;
int size_ = 0;
constexpr unsigned char kGuard = 0xEE;

// Byte i of the block rank s has for rank d in call `call`.
unsigned char byte_of(int s, int d, int call, size_t i) { return mp::pattern(s, call * 257 + d, i); }

// Where blocks go in a buffer: packed, or with gaps and in reverse rank order.
std::vector<size_t> displacements(const std::vector<size_t>& counts, bool scattered, size_t* end) {
  std::vector<size_t> displs(counts.size());
  size_t at = scattered ? 3 : 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    size_t r = scattered ? counts.size() - 1 - k : k;
    displs[r] = at;
    at += counts[r] + (scattered ? 5 : 0);
  }
  *end = at;
  return displs;
}

// Checks blocks[r] (counts[r] bytes at displs[r]) against want(r, i) and every
// other byte of buf against the guard.
template <class Want>
int check_blocks(const char* what, const std::vector<unsigned char>& buf, const std::vector<size_t>& counts,
                 const std::vector<size_t>& displs, Want want) {
  std::vector<char> covered(buf.size(), 0);
  for (size_t r = 0; r < counts.size(); ++r)
    for (size_t i = 0; i < counts[r]; ++i) {
      covered[displs[r] + i] = 1;
      if (buf[displs[r] + i] != want(static_cast<int>(r), i))
        FAIL("%s: wrong byte %zu of the block of rank %zu", what, i, r);
    }
  for (size_t b = 0; b < buf.size(); ++b)
    if (!covered[b] && buf[b] != kGuard) FAIL("%s: wrote byte %zu outside the blocks", what, b);
  return 0;
}

std::string label(const char* coll, const std::string& algo, size_t bytes, int root, bool in_place, bool scattered) {
  char s[256];
  snprintf(s, sizeof s, "%s %s %zu B%s%s%s", coll, algo.c_str(), bytes,
           root >= 0 ? (" root " + std::to_string(root)).c_str() : "", in_place ? " in place" : "",
           scattered ? " displaced" : "");
  return s;
}

int check_alltoall(railcoll_comm_t comm, const std::string& algo, size_t bytes, int call, bool in_place) {
  const size_t n = size_;
  std::vector<unsigned char> send(bytes * n + 1, kGuard), recv(bytes * n + 1, kGuard);
  auto& input = in_place ? recv : send;
  for (size_t d = 0; d < n; ++d)
    for (size_t i = 0; i < bytes; ++i) input[d * bytes + i] = byte_of(rank_, d, call, i);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  const std::string what = label("alltoall", algo, bytes, -1, in_place, false);
  if (railcoll_alltoall(comm, in_place ? nullptr : send.data(), recv.data(), bytes, &o) != RAILCOLL_OK)
    FAIL("%s: %s", what.c_str(), railcoll_last_error());
  std::vector<size_t> counts(n, bytes), displs(n);
  for (size_t s = 0; s < n; ++s) displs[s] = s * bytes;
  return check_blocks(what.c_str(), recv, counts, displs, [&](int s, size_t i) { return byte_of(s, rank_, call, i); });
}

// Bytes rank s sends to rank d: uneven, some 0, some above the stripe
// threshold; symmetric when in place (a rank sends to s what it gets from s).
size_t pair_count(int s, int d, int call, bool symmetric, size_t scale) {
  if (symmetric && s > d) std::swap(s, d);
  const int h = (s * 7 + d * 3 + call) % 11;
  return h < 2 ? 0 : (h * 97 + s + 2 * d) % 1500 * scale / 100 + (h == 10 ? 1100 : 0);
}

int check_alltoallv(railcoll_comm_t comm, const std::string& algo, size_t scale, int call, bool in_place,
                    bool scattered) {
  const int n = size_;
  std::vector<size_t> sc(n), rc(n);
  for (int d = 0; d < n; ++d) sc[d] = pair_count(rank_, d, call, in_place, scale);
  for (int s = 0; s < n; ++s) rc[s] = pair_count(s, rank_, call, in_place, scale);
  size_t send_end, recv_end;
  std::vector<size_t> sd = displacements(sc, scattered, &send_end), rd = displacements(rc, scattered, &recv_end);
  std::vector<unsigned char> send(send_end + 1, kGuard), recv(recv_end + 1, kGuard);
  if (in_place)
    for (int d = 0; d < n; ++d)
      for (size_t i = 0; i < rc[d]; ++i) recv[rd[d] + i] = byte_of(rank_, d, call, i);
  else
    for (int d = 0; d < n; ++d)
      for (size_t i = 0; i < sc[d]; ++i) send[sd[d] + i] = byte_of(rank_, d, call, i);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  const std::string what = label("alltoallv", algo, scale, -1, in_place, scattered);
  if (railcoll_alltoallv(comm, in_place ? nullptr : send.data(), sc.data(), sd.data(), recv.data(), rc.data(),
                         rd.data(), &o) != RAILCOLL_OK)
    FAIL("%s: %s", what.c_str(), railcoll_last_error());
  return check_blocks(what.c_str(), recv, rc, rd, [&](int s, size_t i) { return byte_of(s, rank_, call, i); });
}

// Bytes of rank r in a v-call: uneven, some 0.
size_t rank_count(int r, int call, size_t scale) { return (r * 5 + call) % 4 == 0 ? 0 : (r * 37 + 11) % 1300 * scale / 100 + 1; }

// RAILCOLL_ROOT_COUNTS off the root: this rank's own count, and what a
// program that knows no other count might leave in the rest.
std::vector<size_t> own_count_only(const std::vector<size_t>& counts) {
  std::vector<size_t> given(counts.size(), size_t{0xdeadbeef});
  given[static_cast<size_t>(rank_)] = counts[static_cast<size_t>(rank_)];
  return given;
}

int check_scatter(railcoll_comm_t comm, bool v, const std::string& algo, size_t bytes, int root, int call,
                  bool in_place, bool scattered) {
  const int n = size_;
  const bool at_root = rank_ == root;
  in_place = in_place && at_root;
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = v ? rank_count(r, call, bytes) : bytes;
  size_t end;
  std::vector<size_t> displs = displacements(counts, v && scattered, &end);
  std::vector<unsigned char> send(end + 1, kGuard), recv(counts[rank_] + 1, kGuard);
  if (at_root)
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < counts[r]; ++i) send[displs[r] + i] = byte_of(root, r, call, i);
  const std::vector<unsigned char> sent = send;
  // Every other scatterv takes its counts at the root alone: the others' own entry only, the rest garbage.
  const bool root_counts = v && call % 2 == 1;
  const std::vector<size_t> given = root_counts && !at_root ? own_count_only(counts) : counts;
  railcoll_call_opts_t o{algo.c_str(), (in_place ? RAILCOLL_IN_PLACE : 0u) | (root_counts ? RAILCOLL_ROOT_COUNTS : 0u)};
  const std::string what = label(v ? "scatterv" : "scatter", algo, bytes, root, in_place, v && scattered) +
                           (root_counts ? " root counts" : "");
  railcoll_status_t st = v ? railcoll_scatterv(comm, at_root ? send.data() : nullptr, given.data(),
                                               at_root ? displs.data() : nullptr, in_place ? nullptr : recv.data(), root, &o)
                           : railcoll_scatter(comm, at_root ? send.data() : nullptr, in_place ? nullptr : recv.data(),
                                              bytes, root, &o);
  if (st != RAILCOLL_OK) FAIL("%s: %s", what.c_str(), railcoll_last_error());
  if (send != sent) FAIL("%s: the root's sendbuf changed", what.c_str());
  if (in_place) {
    for (auto b : recv)
      if (b != kGuard) FAIL("%s: wrote into the root's recvbuf", what.c_str());
    return 0;
  }
  return check_blocks(what.c_str(), recv, {counts[rank_]}, {0}, [&](int, size_t i) { return byte_of(root, rank_, call, i); });
}

int check_gatherv(railcoll_comm_t comm, const std::string& algo, size_t scale, int root, int call, bool in_place,
                  bool scattered) {
  const int n = size_;
  const bool at_root = rank_ == root;
  in_place = in_place && at_root;
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = rank_count(r, call, scale);
  size_t end;
  std::vector<size_t> displs = displacements(counts, scattered, &end);
  std::vector<unsigned char> send(counts[rank_] + 1, kGuard), recv(at_root ? end + 1 : 0, kGuard);
  for (size_t i = 0; i < counts[rank_]; ++i)
    (in_place ? recv[displs[rank_] + i] : send[i]) = byte_of(rank_, root, call, i);
  const bool root_counts = call % 2 == 1;
  const std::vector<size_t> given = root_counts && !at_root ? own_count_only(counts) : counts;
  railcoll_call_opts_t o{algo.c_str(), (in_place ? RAILCOLL_IN_PLACE : 0u) | (root_counts ? RAILCOLL_ROOT_COUNTS : 0u)};
  const std::string what = label("gatherv", algo, scale, root, in_place, scattered) + (root_counts ? " root counts" : "");
  if (railcoll_gatherv(comm, in_place ? nullptr : send.data(), at_root ? recv.data() : nullptr, given.data(),
                       at_root ? displs.data() : nullptr, root, &o) != RAILCOLL_OK)
    FAIL("%s: %s", what.c_str(), railcoll_last_error());
  if (!at_root) return 0;
  return check_blocks(what.c_str(), recv, counts, displs, [&](int r, size_t i) { return byte_of(r, root, call, i); });
}

int mode_correct() {
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
  rank_ = railcoll_comm_rank(comm);
  size_ = railcoll_comm_size(comm);
  int call = 0;
  const size_t sizes[] = {0, 1, 7, 1000, 1025, 65536 + 3};
  for (auto& algo : mp::algorithms("alltoall"))
    for (size_t b : sizes) if (check_alltoall(comm, algo, b, call, call % 3 == 1)) return 1; else ++call;
  for (auto& algo : mp::algorithms("alltoallv"))
    for (size_t scale : {1, 100, 3000})
      for (int rep = 0; rep < 3; ++rep) if (check_alltoallv(comm, algo, scale, call, rep == 1, rep != 0)) return 1; else ++call;
  for (const char* coll : {"scatter", "scatterv"})
    for (auto& algo : mp::algorithms(coll))
      for (size_t b : sizes)
        for (int root = 0; root < size_; ++root)
          if (check_scatter(comm, coll[7] == 'v', algo, b, root, call, call % 3 == 1, call % 2 == 0)) return 1; else ++call;
  for (auto& algo : mp::algorithms("gatherv"))
    for (size_t scale : {0, 1, 100, 3000})
      for (int root = 0; root < size_; ++root)
        if (check_gatherv(comm, algo, scale, root, call, call % 3 == 1, call % 2 == 0)) return 1; else ++call;
  railcoll_comm_destroy(comm);
  mp::say("rank %d: %d personalised calls correct\n", rank_, call);
  return 0;
}

// Each bad call breaks the communicator: a fresh one per case.
int mode_badargs() {
  std::vector<unsigned char> buf(4096, kGuard);
  std::vector<size_t> counts(size_, 8), wrong(size_, 8);
  wrong[(rank_ + 1) % size_] = 9;  // what this rank expects from its right neighbour: not what it sends
  struct Case {
    const char* what;
    railcoll_status_t want;
    railcoll_status_t (*call)(railcoll_comm_t, unsigned char*, size_t*, size_t*);
  } cases[] = {
      {"alltoallv NULL recvcounts", RAILCOLL_ERR_ARG,
       [](railcoll_comm_t c, unsigned char* b, size_t* n, size_t*) {
         return railcoll_alltoallv(c, b, n, nullptr, b + 2048, nullptr, nullptr, nullptr);
       }},
      {"alltoall overlapping buffers", RAILCOLL_ERR_ARG,
       [](railcoll_comm_t c, unsigned char* b, size_t*, size_t*) { return railcoll_alltoall(c, b, b + 4, 8, nullptr); }},
      {"scatter root out of range", RAILCOLL_ERR_ARG,
       [](railcoll_comm_t c, unsigned char* b, size_t*, size_t*) {
         return railcoll_scatter(c, b, b + 2048, 8, size_, nullptr);
       }},
      {"alltoallv counts a peer does not expect", RAILCOLL_ERR_ARG,
       [](railcoll_comm_t c, unsigned char* b, size_t* n, size_t* w) {
         return railcoll_alltoallv(c, b, n, nullptr, b + 2048, w, nullptr, nullptr);
       }},
      {"gatherv with RAILCOLL_ROOT_COUNTS, a rank's own count not the root's", RAILCOLL_ERR_ARG,
       [](railcoll_comm_t c, unsigned char* b, size_t* n, size_t*) {
         const railcoll_call_opts_t o{nullptr, RAILCOLL_ROOT_COUNTS};
         std::vector<size_t> own(n, n + size_);
         if (rank_ != 0) own[static_cast<size_t>(rank_)] = 9;  // the root says 8
         return railcoll_gatherv(c, b, b + 2048, own.data(), nullptr, 0, &o);
       }},
      {"RAILCOLL_ROOT_COUNTS on a scatter", RAILCOLL_ERR_ARG,
       [](railcoll_comm_t c, unsigned char* b, size_t*, size_t*) {
         const railcoll_call_opts_t o{nullptr, RAILCOLL_ROOT_COUNTS};
         return railcoll_scatter(c, b, b + 2048, 8, 0, &o);
       }},
  };
  for (auto& k : cases) {
    railcoll_comm_t comm;
    if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("railcoll_comm_init: %s", railcoll_last_error());
    railcoll_status_t st = k.call(comm, buf.data(), counts.data(), wrong.data());
    railcoll_comm_destroy(comm);
    // The rank that saw the bad argument says so; the others learn it from a peer.
    if (st != k.want && st != RAILCOLL_ERR_PEER)
      FAIL("%s: expected %s or a peer's error, got %s: %s", k.what, railcoll_strerror(k.want), railcoll_strerror(st),
           railcoll_last_error());
  }
  mp::say("rank %d: bad arguments rejected\n", rank_);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correct";
  // The launcher's numbering, for badargs' messages and its wrong counts
  // (correct mode takes both from its communicator).
  const char* r = getenv("RAILCOLL_RANK");
  rank_ = r ? atoi(r) : -1;
  const char* n = getenv("RAILCOLL_SIZE");
  size_ = n ? atoi(n) : 1;
  return mp::finish(nullptr, mode == "correct" ? mode_correct() : mode == "badargs" ? mode_badargs() : 2);
}
