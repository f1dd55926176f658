// A rank program for the multi-process tests of bcast, gather, allreduce and
// every barrier, started by `railcoll run` or `railcoll cluster run`. Modes:
//   correct   every algorithm x sizes x roots (byte-exact for bcast and gather,
//             exact for integer reductions, within a stated bound for floating
//             point), in-place calls, barriers that no rank leaves early
//   badargs   root out of range, unknown type or operation, NULL buffers: the
//             error on every rank, the buffers untouched; the communicator is
//             broken after the first (as after any failed call), a new one works
//   mismatch  rank 0 passes a different count: an error on every rank, no hang
//             (a bcast root that only sends: at the latest on its next call)
// Exit 0 when the rank saw what it should have.
#include <railcoll/railcoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
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
using mp::algorithms;
using mp::pattern;

std::vector<int> roots() {
  std::vector<int> r = {0};
  if (size_ > 1) r.push_back(size_ - 1);
  if (size_ > 2) r.push_back(size_ / 2);
  return r;
}

int check_bcast(railcoll_comm_t comm, const std::string& algo, size_t bytes, int root, int call) {
  std::vector<unsigned char> buf(bytes + 1, 0xEE);
  if (rank_ == root)
    for (size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, call, i);
  railcoll_call_opts_t o{algo.c_str(), 0};
  if (railcoll_bcast(comm, buf.data(), bytes, root, &o) != RAILCOLL_OK)
    FAIL("bcast %s %zu B root %d: %s", algo.c_str(), bytes, root, railcoll_last_error());
  for (size_t i = 0; i < bytes; ++i)
    if (buf[i] != pattern(root, call, i))
      FAIL("bcast %s %zu B root %d: wrong byte %zu: %d, expected %d", algo.c_str(), bytes, root, i, buf[i],
           pattern(root, call, i));
  if (buf[bytes] != 0xEE) FAIL("bcast %s: wrote past the end", algo.c_str());
  return 0;
}

int check_gather(railcoll_comm_t comm, const std::string& algo, size_t bytes, int root, int call, bool in_place) {
  std::vector<unsigned char> send(bytes + 1), recv(bytes * size_ + 1, 0xEE);
  for (size_t i = 0; i < bytes; ++i) send[i] = pattern(rank_, call, i);
  in_place = in_place && rank_ == root;
  if (in_place) memcpy(recv.data() + rank_ * bytes, send.data(), bytes);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  if (railcoll_gather(comm, in_place ? nullptr : send.data(), rank_ == root ? recv.data() : nullptr, bytes, root, &o) !=
      RAILCOLL_OK)
    FAIL("gather %s %zu B root %d: %s", algo.c_str(), bytes, root, railcoll_last_error());
  if (rank_ != root) return 0;
  for (int r = 0; r < size_; ++r)
    for (size_t i = 0; i < bytes; ++i)
      if (recv[r * bytes + i] != pattern(r, call, i))
        FAIL("gather %s %zu B root %d: wrong byte %zu of rank %d's block", algo.c_str(), bytes, root, i, r);
  if (recv[bytes * size_] != 0xEE) FAIL("gather %s: wrote past the end", algo.c_str());
  return 0;
}

// Rank r's element i: small integers, so that integer sums are exact and
// floating-point sums of up to 2^24 / 1000 ranks are exact too; negative values
// for min and max.
int64_t element(int rank, size_t i, int call) { return static_cast<int64_t>((rank * 37 + i * 11 + call) % 1000) - 400; }

template <class T>
int check_allreduce_typed(railcoll_comm_t comm, const std::string& algo, size_t count, railcoll_datatype_t type,
                          railcoll_op_t op, int call, bool in_place) {
  std::vector<T> send(count), recv(count + 1, static_cast<T>(-7777));
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<T>(element(rank_, i, call));
  if (in_place) std::copy(send.begin(), send.end(), recv.begin());
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  if (railcoll_allreduce(comm, in_place ? nullptr : send.data(), recv.data(), count, type, op, &o) != RAILCOLL_OK)
    FAIL("allreduce %s count %zu type %d op %d: %s", algo.c_str(), count, type, op, railcoll_last_error());
  for (size_t i = 0; i < count; ++i) {
    int64_t want = op == RAILCOLL_SUM ? 0 : element(0, i, call);
    for (int r = 0; r < size_; ++r) {
      int64_t x = element(r, i, call);
      want = op == RAILCOLL_SUM ? want + x : op == RAILCOLL_MIN ? std::min(want, x) : std::max(want, x);
    }
    // Every partial sum is an integer below 2^24 in magnitude, so even float
    // sums are exact in any order: the bound is 0.
    if (recv[i] != static_cast<T>(want))
      FAIL("allreduce %s count %zu type %d op %d: element %zu is %.17g, expected %lld", algo.c_str(), count, type, op,
           i, static_cast<double>(recv[i]), static_cast<long long>(want));
  }
  if (recv[count] != static_cast<T>(-7777)) FAIL("allreduce %s: wrote past the end", algo.c_str());
  return 0;
}

// Non-integer floats: the result must be within n * eps * sum|x| of the exact
// sum (the standard bound for recursive summation in any order, Higham 2002 §4.2).
int check_float_rounding(railcoll_comm_t comm, const std::string& algo, size_t count) {
  std::vector<float> send(count), recv(count);
  for (size_t i = 0; i < count; ++i) send[i] = 1.0f / static_cast<float>(3 + rank_ + i % 17);
  railcoll_call_opts_t o{algo.c_str(), 0};
  if (railcoll_allreduce(comm, send.data(), recv.data(), count, RAILCOLL_FLOAT, RAILCOLL_SUM, &o) != RAILCOLL_OK)
    FAIL("allreduce %s float: %s", algo.c_str(), railcoll_last_error());
  for (size_t i = 0; i < count; ++i) {
    double exact = 0, mag = 0;
    for (int r = 0; r < size_; ++r) {
      double x = static_cast<float>(1.0f / static_cast<float>(3 + r + i % 17));
      exact += x, mag += std::fabs(x);
    }
    double bound = size_ * 1.1920929e-7 * mag;
    if (std::fabs(recv[i] - exact) > bound)
      FAIL("allreduce %s float: element %zu is %.9g, exact %.9g, beyond the bound %.3g", algo.c_str(), i, recv[i],
           exact, bound);
  }
  // Every rank must hold the same bits: compare with everyone's.
  std::vector<float> all(count * size_);
  if (railcoll_allgather(comm, recv.data(), all.data(), count * sizeof(float), nullptr) != RAILCOLL_OK)
    FAIL("allgather: %s", railcoll_last_error());
  for (int r = 0; r < size_; ++r)
    if (memcmp(all.data() + r * count, recv.data(), count * sizeof(float)) != 0)
      FAIL("allreduce %s float: rank %d ended with other bits than this rank", algo.c_str(), r);
  return 0;
}

int check_allreduce(railcoll_comm_t comm, const std::string& algo, size_t count, int call, bool in_place) {
  const railcoll_op_t ops[] = {RAILCOLL_SUM, RAILCOLL_MIN, RAILCOLL_MAX};
  railcoll_op_t op = ops[call % 3];
  switch (call % 4) {
    case 0: return check_allreduce_typed<int32_t>(comm, algo, count, RAILCOLL_INT32, op, call, in_place);
    case 1: return check_allreduce_typed<int64_t>(comm, algo, count, RAILCOLL_INT64, op, call, in_place);
    case 2: return check_allreduce_typed<float>(comm, algo, count, RAILCOLL_FLOAT, op, call, in_place);
    default: return check_allreduce_typed<double>(comm, algo, count, RAILCOLL_DOUBLE, op, call, in_place);
  }
}

// No rank may leave a barrier before every rank has entered it: each rank
// leaves a mark in a directory shared by all ranks (the cluster's namespaces
// share the file system), then after the barrier looks for everyone's.
int check_barrier(railcoll_comm_t comm, const std::string& algo, const std::string& dir, int call) {
  std::string mark = dir + "/" + std::to_string(call) + "." + std::to_string(rank_);
  FILE* f = fopen(mark.c_str(), "w");
  if (!f) FAIL("cannot write %s", mark.c_str());
  fclose(f);
  setenv("RAILCOLL_BARRIER_ALGO", algo.c_str(), 1);
  if (railcoll_barrier(comm) != RAILCOLL_OK) FAIL("barrier %s: %s", algo.c_str(), railcoll_last_error());
  for (int r = 0; r < size_; ++r) {
    struct stat st;
    if (stat((dir + "/" + std::to_string(call) + "." + std::to_string(r)).c_str(), &st) != 0)
      FAIL("barrier %s call %d: left before rank %d entered", algo.c_str(), call, r);
  }
  return 0;
}

int mode_correct(railcoll_comm_t comm, const std::string& dir) {
  int call = 0;
  mkdir(dir.c_str(), 0700);  // every rank tries; one wins
  const size_t sizes[] = {0, 1, 7, 1000, 1025, 65536 + 3};
  for (auto& algo : algorithms("bcast"))
    for (size_t b : sizes)
      for (int root : roots())
        if (check_bcast(comm, algo, b, root, call++)) return 1;
  for (auto& algo : algorithms("gather"))
    for (size_t b : sizes)
      for (int root : roots())
        if (check_gather(comm, algo, b, root, call, call % 5 == 0) || !++call) return 1;
  for (auto& algo : algorithms("allreduce")) {
    for (size_t count : {0, 1, 7, 1000, 1025, 16384 + 3})
      for (int rep = 0; rep < 4; ++rep)  // every type, every operation, some in place
        if (check_allreduce(comm, algo, count, call++, rep == 3)) return 1;
    if (check_float_rounding(comm, algo, 4099)) return 1;
    ++call;
  }
  for (auto& algo : algorithms("barrier"))
    for (int rep = 0; rep < 3; ++rep)
      if (check_barrier(comm, algo, dir, call++)) return 1;
  unsetenv("RAILCOLL_BARRIER_ALGO");
  mp::say("rank %d: %d calls correct\n", rank_, call);
  return 0;
}

int mode_badargs(railcoll_comm_t comm) {
  std::vector<unsigned char> buf(64 * size_, 0xEE);
  struct Case {
    const char* what;
    railcoll_status_t st;
  } cases[] = {
      {"bcast root -1", railcoll_bcast(comm, buf.data(), 4, -1, nullptr)},
      {"bcast root = size", railcoll_bcast(comm, buf.data(), 4, size_, nullptr)},
      {"gather root = size", railcoll_gather(comm, buf.data(), buf.data() + 8, 4, size_, nullptr)},
      {"bcast NULL buffer", railcoll_bcast(comm, nullptr, 4, 0, nullptr)},
      {"allreduce unknown type", railcoll_allreduce(comm, buf.data(), buf.data() + 32, 2, (railcoll_datatype_t)99, RAILCOLL_SUM, nullptr)},
      {"allreduce unknown op", railcoll_allreduce(comm, buf.data(), buf.data() + 32, 2, RAILCOLL_INT32, (railcoll_op_t)99, nullptr)},
      {"allreduce NULL recvbuf", railcoll_allreduce(comm, buf.data(), nullptr, 2, RAILCOLL_INT32, RAILCOLL_SUM, nullptr)},
      {"allreduce overlapping buffers", railcoll_allreduce(comm, buf.data(), buf.data() + 4, 2, RAILCOLL_INT32, RAILCOLL_SUM, nullptr)},
  };
  for (auto& c : cases)
    if (c.st != RAILCOLL_ERR_ARG) FAIL("%s: expected RAILCOLL_ERR_ARG, got %s", c.what, railcoll_strerror(c.st));
  for (size_t i = 0; i < buf.size(); ++i)
    if (buf[i] != 0xEE) FAIL("a rejected call wrote byte %zu of the user's buffer", i);
  railcoll_call_opts_t o{"no_such_algo", 0};
  if (railcoll_allreduce(comm, buf.data(), buf.data() + 32, 2, RAILCOLL_INT32, RAILCOLL_SUM, &o) != RAILCOLL_ERR_ARG ||
      !strstr(railcoll_last_error(), "unknown allreduce algorithm 'no_such_algo'"))
    FAIL("unknown algorithm: %s", railcoll_last_error());
  // The first rejected call broke the communicator on every rank; a new one works.
  int32_t one = 1, sum = 0;
  railcoll_status_t st = railcoll_allreduce(comm, &one, &sum, 1, RAILCOLL_INT32, RAILCOLL_SUM, nullptr);
  if (st != RAILCOLL_ERR_BROKEN || !strstr(railcoll_last_error(), "root -1 is out of range"))
    FAIL("allreduce after bad arguments: expected RAILCOLL_ERR_BROKEN naming the first, got %s: %s",
         railcoll_strerror(st), railcoll_last_error());
  railcoll_comm_t fresh;
  if (railcoll_comm_init(&fresh) != RAILCOLL_OK) FAIL("a new communicator: %s", railcoll_last_error());
  st = railcoll_allreduce(fresh, &one, &sum, 1, RAILCOLL_INT32, RAILCOLL_SUM, nullptr);
  railcoll_comm_destroy(fresh);
  if (st != RAILCOLL_OK || sum != size_) FAIL("allreduce on a new communicator: %s (sum %d)", railcoll_last_error(), sum);
  mp::say("rank %d: bad arguments rejected\n", rank_);
  return 0;
}

int mode_mismatch(railcoll_comm_t comm, const std::string& what) {
  size_t count = rank_ == 0 ? 100 : 200;
  std::vector<int32_t> send(count, 1), recv(count);
  railcoll_status_t st = what == "bcast" ? railcoll_bcast(comm, recv.data(), count * 4, 0, nullptr)
                                         : railcoll_allreduce(comm, send.data(), recv.data(), count, RAILCOLL_INT32,
                                                              RAILCOLL_SUM, nullptr);
  const char* when = "";
  if (st == RAILCOLL_OK && what == "bcast" && rank_ == 0) {
    // The root of a short broadcast only sends and may be done before any rank
    // has looked at its message (as in MPI); it must learn of the error by its
    // next call at the latest, and never see success again.
    st = railcoll_barrier(comm);
    when = " (on its next call)";
  }
  if (st == RAILCOLL_OK) FAIL("%s with mismatched counts returned success", what.c_str());
  mp::say("rank %d: %s with mismatched counts -> %s%s: %s\n", rank_, what.c_str(), railcoll_strerror(st), when,
         railcoll_last_error());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "correct", arg = argc > 2 ? argv[2] : "/tmp";
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s\n", railcoll_last_error());
    return 1;
  }
  rank_ = railcoll_comm_rank(comm);
  size_ = railcoll_comm_size(comm);
  int rc = mode == "correct"    ? mode_correct(comm, arg)
           : mode == "badargs"  ? mode_badargs(comm)
           : mode == "mismatch" ? mode_mismatch(comm, arg)
                                : 2;
  return mp::finish(comm, rc);
}
