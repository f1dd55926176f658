// A rank program for the multi-process tests of the reduction family
// (reduce_scatter_block, reduce_scatter, reduce, and allreduce over the new
// types), started by `railcoll run` or `railcoll cluster run`. Every byte of
// every result is compared with an expected value this program computes on its
// own (its own operator code and element encodings, not the library's):
//   every (type, operator) pair MPI defines, for each collective, with auto,
//   minloc and maxloc over the five (value, index) pair types among them;
//   every algorithm x sizes 0, 1, odd, striped x a few pairs; in place;
//   reduce_scatter with uneven and zero counts; reduce at every root;
//   the guard bytes after every recv untouched.
// Modes: "correct" (all of the above), "quick" (every pair, auto, one size;
// and every algorithm once): for the emulated cluster.
// Exit 0 when the rank saw what it should have.
#include <railcoll/railcoll.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mp_common.hpp"

namespace {

int& rank_ = mp::rank;
int size_ = 0;
constexpr unsigned char kGuard = 0xA5;

enum class Kind { Signed, Unsigned, Float, Half, BFloat };
struct Type {
  railcoll_datatype_t id;
  const char* name;
  size_t size;
  Kind kind;
};
const Type kTypes[] = {
    {RAILCOLL_INT8, "int8", 1, Kind::Signed},      {RAILCOLL_UINT8, "uint8", 1, Kind::Unsigned},
    {RAILCOLL_INT16, "int16", 2, Kind::Signed},    {RAILCOLL_UINT16, "uint16", 2, Kind::Unsigned},
    {RAILCOLL_INT32, "int32", 4, Kind::Signed},    {RAILCOLL_UINT32, "uint32", 4, Kind::Unsigned},
    {RAILCOLL_INT64, "int64", 8, Kind::Signed},    {RAILCOLL_UINT64, "uint64", 8, Kind::Unsigned},
    {RAILCOLL_FLOAT16, "float16", 2, Kind::Half},  {RAILCOLL_BFLOAT16, "bfloat16", 2, Kind::BFloat},
    {RAILCOLL_FLOAT, "float", 4, Kind::Float},     {RAILCOLL_DOUBLE, "double", 8, Kind::Float}};
struct Op {
  railcoll_op_t id;
  const char* name;
  bool integers_only;
};
const Op kOps[] = {{RAILCOLL_SUM, "sum", false},  {RAILCOLL_PROD, "prod", false}, {RAILCOLL_MIN, "min", false},
                   {RAILCOLL_MAX, "max", false},  {RAILCOLL_BAND, "band", true},  {RAILCOLL_BOR, "bor", true},
                   {RAILCOLL_BXOR, "bxor", true}, {RAILCOLL_LAND, "land", true},  {RAILCOLL_LOR, "lor", true},
                   {RAILCOLL_LXOR, "lxor", true}};

bool integer(const Type& t) { return t.kind == Kind::Signed || t.kind == Kind::Unsigned; }

// Rank r's element i of call c for operator op: results stay exact in every
// type (products at most 2^5 in magnitude, half-precision sums within +-3 N).
int64_t value(const Type& t, const Op& op, int r, size_t i, int c) {
  switch (op.id) {
    case RAILCOLL_PROD: return (r + i + c) % 7 == 0 ? -1 : (r < 5 && (i + r) % 3 == 0 ? 2 : 1);
    case RAILCOLL_LAND: case RAILCOLL_LXOR: return (r * 5 + i * 3 + c) % 13 == 0 ? 0 : 1 + (r * 29 + i * 7) % 90;
    case RAILCOLL_LOR: return (r * 5 + i * 3 + c) % 13 == 0 ? -(r + 1) : 0;
    default: break;
  }
  if (t.kind == Kind::Half || t.kind == Kind::BFloat) return static_cast<int64_t>((r * r + r * i + i * 5 + c * 3) % 7) - 3;
  return static_cast<int64_t>((r * 29 + i * 7 + c * 3) % 1000) - 450;
}

// Integers: the value wrapped to the type's width, as its two's-complement bits.
uint64_t wrap(const Type& t, uint64_t v) { return t.size == 8 ? v : v & ((uint64_t{1} << (8 * t.size)) - 1); }
// The wrapped bits read as a number of the type, for min and max.
long double number(const Type& t, uint64_t bits) {
  if (t.kind == Kind::Unsigned) return static_cast<long double>(bits);
  const unsigned w = 8 * static_cast<unsigned>(t.size);
  const uint64_t sign = uint64_t{1} << (w - 1);
  return bits & sign ? -static_cast<long double>(((~bits) & (sign | (sign - 1))) + 1) : static_cast<long double>(bits);
}

uint64_t int_combine(const Type& t, const Op& op, uint64_t a, uint64_t b) {
  switch (op.id) {
    case RAILCOLL_SUM: return wrap(t, a + b);
    case RAILCOLL_PROD: return wrap(t, a * b);
    case RAILCOLL_MIN: return number(t, a) <= number(t, b) ? a : b;
    case RAILCOLL_MAX: return number(t, a) >= number(t, b) ? a : b;
    case RAILCOLL_BAND: return a & b;
    case RAILCOLL_BOR: return a | b;
    case RAILCOLL_BXOR: return a ^ b;
    case RAILCOLL_LAND: return (a != 0) && (b != 0);
    case RAILCOLL_LOR: return (a != 0) || (b != 0);
    default: return (a != 0) != (b != 0);
  }
}

double float_combine(const Op& op, double a, double b) {
  switch (op.id) {
    case RAILCOLL_SUM: return a + b;
    case RAILCOLL_PROD: return a * b;
    case RAILCOLL_MIN: return std::min(a, b);
    default: return std::max(a, b);
  }
}

// Writes element v (an exact small number for the floating types) in the type's encoding.
void encode_int(const Type& t, uint64_t bits, unsigned char* p) { memcpy(p, &bits, t.size); }  // little-endian
void encode_float(const Type& t, double v, unsigned char* p) {
  if (t.kind == Kind::Half) {
    const _Float16 h = static_cast<_Float16>(v);
    memcpy(p, &h, 2);
  } else if (t.kind == Kind::BFloat) {  // exact small numbers: the float's upper half
    const float f = static_cast<float>(v);
    uint32_t bits;
    memcpy(&bits, &f, 4);
    const uint16_t h = static_cast<uint16_t>(bits >> 16);
    memcpy(p, &h, 2);
  } else if (t.size == 4) {
    const float f = static_cast<float>(v);
    memcpy(p, &f, 4);
  } else {
    memcpy(p, &v, 8);
  }
}

// Rank r's input: `n` elements starting at element `first` of its vector.
void fill(const Type& t, const Op& op, int r, int c, size_t first, size_t n, unsigned char* out) {
  for (size_t i = 0; i < n; ++i) {
    const int64_t v = value(t, op, r, first + i, c);
    if (integer(t)) encode_int(t, wrap(t, static_cast<uint64_t>(v)), out + i * t.size);
    else encode_float(t, static_cast<double>(v), out + i * t.size);
  }
}

// The expected result: elements first .. first + n - 1 reduced over every rank.
std::vector<unsigned char> expected(const Type& t, const Op& op, int c, size_t first, size_t n) {
  std::vector<unsigned char> out(n * t.size);
  for (size_t i = 0; i < n; ++i) {
    if (integer(t)) {
      uint64_t acc = wrap(t, static_cast<uint64_t>(value(t, op, 0, first + i, c)));  // one rank: its input as it is
      for (int r = 1; r < size_; ++r) acc = int_combine(t, op, acc, wrap(t, static_cast<uint64_t>(value(t, op, r, first + i, c))));
      encode_int(t, acc, out.data() + i * t.size);
    } else {
      double acc = static_cast<double>(value(t, op, 0, first + i, c));
      for (int r = 1; r < size_; ++r) acc = float_combine(op, acc, static_cast<double>(value(t, op, r, first + i, c)));
      encode_float(t, acc, out.data() + i * t.size);
    }
  }
  return out;
}

int compare(const char* what, const std::string& algo, const Type& t, const Op& op, const unsigned char* got,
            const std::vector<unsigned char>& want, size_t guard_at, const std::vector<unsigned char>& buf) {
  for (size_t b = 0; b < want.size(); ++b)
    if (got[b] != want[b])
      FAIL("%s %s %s %s (%d ranks): byte %zu (element %zu) is 0x%02x, expected 0x%02x", what, algo.c_str(), t.name,
           op.name, size_, b, b / t.size, got[b], want[b]);
  for (size_t b = guard_at; b < buf.size(); ++b)
    if (buf[b] != kGuard) FAIL("%s %s %s %s: wrote past the end (byte %zu)", what, algo.c_str(), t.name, op.name, b);
  return 0;
}

// reduce_scatter(_block) with `counts` elements per rank (block: all equal).
int check_reduce_scatter(railcoll_comm_t comm, bool block, const std::string& algo, const Type& t, const Op& op,
                         const std::vector<size_t>& counts, int c, bool in_place) {
  size_t total = 0, first = 0;  // all elements; where this rank's block starts
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) first = total;
    total += counts[r];
  }
  const size_t mine = counts[rank_], es = t.size;
  std::vector<unsigned char> send(total * es + 1), recv((in_place ? total : mine) * es + 16, kGuard);
  fill(t, op, rank_, c, 0, total, send.data());
  if (in_place) memcpy(recv.data(), send.data(), total * es);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  const void* src = in_place ? nullptr : send.data();
  const char* what = block ? "reduce_scatter_block" : "reduce_scatter";
  railcoll_status_t st = block ? railcoll_reduce_scatter_block(comm, src, recv.data(), mine, t.id, op.id, &o)
                               : railcoll_reduce_scatter(comm, src, recv.data(), counts.data(), t.id, op.id, &o);
  if (st != RAILCOLL_OK) FAIL("%s %s %s %s: %s", what, algo.c_str(), t.name, op.name, railcoll_last_error());
  // In place, MPI leaves the rest of the input undefined: only the guard after it is checked.
  return compare(what, algo, t, op, recv.data(), expected(t, op, c, first, mine), (in_place ? total : mine) * es, recv);
}

int check_reduce(railcoll_comm_t comm, const std::string& algo, const Type& t, const Op& op, size_t n, int root,
                 int c, bool in_place) {
  const size_t es = t.size;
  std::vector<unsigned char> send(n * es + 1), recv(n * es + 16, kGuard);
  fill(t, op, rank_, c, 0, n, send.data());
  in_place = in_place && rank_ == root;
  if (in_place) memcpy(recv.data(), send.data(), n * es);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  if (railcoll_reduce(comm, in_place ? nullptr : send.data(), rank_ == root ? recv.data() : nullptr, n, t.id, op.id,
                      root, &o) != RAILCOLL_OK)
    FAIL("reduce %s %s %s root %d: %s", algo.c_str(), t.name, op.name, root, railcoll_last_error());
  if (rank_ != root) {
    for (unsigned char x : recv)
      if (x != kGuard) FAIL("reduce %s: a rank other than the root had its recv written", algo.c_str());
    return 0;
  }
  return compare("reduce", algo, t, op, recv.data(), expected(t, op, c, 0, n), n * es, recv);
}

int check_allreduce(railcoll_comm_t comm, const Type& t, const Op& op, size_t n, int c, bool in_place) {
  const size_t es = t.size;
  std::vector<unsigned char> send(n * es + 1), recv(n * es + 16, kGuard);
  fill(t, op, rank_, c, 0, n, send.data());
  if (in_place) memcpy(recv.data(), send.data(), n * es);
  railcoll_call_opts_t o{nullptr, in_place ? RAILCOLL_IN_PLACE : 0u};
  if (railcoll_allreduce(comm, in_place ? nullptr : send.data(), recv.data(), n, t.id, op.id, &o) != RAILCOLL_OK)
    FAIL("allreduce %s %s: %s", t.name, op.name, railcoll_last_error());
  return compare("allreduce", "auto", t, op, recv.data(), expected(t, op, c, 0, n), n * es, recv);
}

// Uneven counts with zeros, a different shape each call.
std::vector<size_t> uneven(int c) {
  std::vector<size_t> v;
  for (int r = 0; r < size_; ++r) v.push_back((r * 5 + c) % 4 == 0 ? 0 : static_cast<size_t>((r * 37 + c * 11) % 23 + 1));
  return v;
}

// ---- (value, index) pairs: MINLOC and MAXLOC, compared field by field (C leaves
// the padding of a struct { double; int; } undefined).
template <class V>
struct PairOf {
  V value;
  int index;
};

template <class V>
PairOf<V> pair_input(int r, size_t i, int c) {
  return {static_cast<V>((r * 13 + i * 7 + c) % 5), static_cast<int>((r * 3 + i) % 7)};  // ties on purpose
}

template <class V>
PairOf<V> pair_expected(railcoll_op_t op, size_t i, int c) {
  PairOf<V> acc = pair_input<V>(0, i, c);
  for (int r = 1; r < size_; ++r) {
    const PairOf<V> x = pair_input<V>(r, i, c);
    const bool better = op == RAILCOLL_MINLOC ? x.value < acc.value : x.value > acc.value;
    if (better || (x.value == acc.value && x.index < acc.index)) acc = x;
  }
  return acc;
}

// reduce_scatter_block, reduce_scatter (uneven), reduce (at root) and allreduce of n pairs.
template <class V>
int check_pairs(railcoll_comm_t comm, railcoll_datatype_t type, const char* name, railcoll_op_t op, int c) {
  using P = PairOf<V>;
  const size_t n = 5 + c % 4;
  std::vector<size_t> counts = uneven(c);
  size_t total = 0, first = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) first = total;
    total += counts[r];
  }
  std::vector<P> send(std::max(total, n * size_)), recv(send.size() + 1);
  for (size_t i = 0; i < send.size(); ++i) send[i] = pair_input<V>(rank_, i, c);
  auto same = [&](const P* got, size_t from, size_t count, const char* what) {
    for (size_t i = 0; i < count; ++i) {
      const P want = pair_expected<V>(op, from + i, c);
      if (got[i].value != want.value || got[i].index != want.index)
        FAIL("%s %s %s: pair %zu is (%g, %d), expected (%g, %d)", what, name, op == RAILCOLL_MINLOC ? "minloc" : "maxloc",
             i, static_cast<double>(got[i].value), got[i].index, static_cast<double>(want.value), want.index);
    }
    return 0;
  };
  if (railcoll_reduce_scatter_block(comm, send.data(), recv.data(), n, type, op, nullptr) != RAILCOLL_OK)
    FAIL("reduce_scatter_block %s: %s", name, railcoll_last_error());
  if (same(recv.data(), rank_ * n, n, "reduce_scatter_block")) return 1;
  if (railcoll_reduce_scatter(comm, send.data(), recv.data(), counts.data(), type, op, nullptr) != RAILCOLL_OK)
    FAIL("reduce_scatter %s: %s", name, railcoll_last_error());
  if (same(recv.data(), first, counts[rank_], "reduce_scatter")) return 1;
  const int root = c % size_;
  if (railcoll_reduce(comm, send.data(), recv.data(), n, type, op, root, nullptr) != RAILCOLL_OK)
    FAIL("reduce %s: %s", name, railcoll_last_error());
  if (rank_ == root && same(recv.data(), 0, n, "reduce")) return 1;
  if (railcoll_allreduce(comm, send.data(), recv.data(), n, type, op, nullptr) != RAILCOLL_OK)
    FAIL("allreduce %s: %s", name, railcoll_last_error());
  return same(recv.data(), 0, n, "allreduce");
}

int check_every_pair(railcoll_comm_t comm, int* call) {
  for (railcoll_op_t op : {RAILCOLL_MINLOC, RAILCOLL_MAXLOC}) {
    if (check_pairs<float>(comm, RAILCOLL_FLOAT_INT, "float_int", op, (*call)++) ||
        check_pairs<double>(comm, RAILCOLL_DOUBLE_INT, "double_int", op, (*call)++) ||
        check_pairs<long>(comm, RAILCOLL_LONG_INT, "long_int", op, (*call)++) ||
        check_pairs<int>(comm, RAILCOLL_2INT, "2int", op, (*call)++) ||
        check_pairs<short>(comm, RAILCOLL_SHORT_INT, "short_int", op, (*call)++))
      return 1;
  }
  return 0;
}

int mode_correct(railcoll_comm_t comm, bool quick) {
  int call = 0, bad = 0;
  // Every (type, operator) pair, every collective, the automatic choice; in place on odd calls.
  for (const Type& t : kTypes)
    for (const Op& op : kOps) {
      if (op.integers_only && !integer(t)) continue;
      const size_t n = 1 + (call % 5) * 3;
      bad |= check_reduce_scatter(comm, true, "auto", t, op, std::vector<size_t>(size_, n), call, call % 2);
      bad |= check_reduce_scatter(comm, false, "auto", t, op, uneven(call), call, call % 2 == 0);
      bad |= check_reduce(comm, "auto", t, op, 3 * n, call % size_, call, call % 2);
      bad |= check_allreduce(comm, t, op, 2 * n + 1, call, call % 2);
      ++call;
      if (bad) return 1;
    }
  if (check_every_pair(comm, &call)) return 1;
  // Every algorithm: zero, one, odd and striped (above 1 KiB) sizes, in and out of place.
  const std::vector<size_t> sizes = quick ? std::vector<size_t>{7, 700} : std::vector<size_t>{0, 1, 13, 700, 5000};
  const Type& i32 = kTypes[4];
  const Type& f16 = kTypes[8];
  const Op& sum = kOps[0];
  const Op& bxor = kOps[6];
  for (bool block : {true, false})
    for (const std::string& algo : mp::algorithms(block ? "reduce_scatter_block" : "reduce_scatter"))
      for (size_t n : sizes) {
        std::vector<size_t> counts(size_, n);
        if (!block) counts = uneven(call), counts[call % size_] = n;
        bad |= check_reduce_scatter(comm, block, algo, i32, bxor, counts, call, false);
        bad |= check_reduce_scatter(comm, block, algo, f16, sum, counts, call + 1, true);
        call += 2;
        if (bad) return 1;
      }
  for (const std::string& algo : mp::algorithms("reduce"))
    for (size_t n : sizes)
      for (int root = 0; root < size_; ++root) {  // every root
        if (quick && root > 1) break;
        bad |= check_reduce(comm, algo, root % 2 ? i32 : f16, root % 2 ? bxor : sum, n, root, call, root % 3 == 1);
        ++call;
        if (bad) return 1;
      }
  mp::say("rank %d: %d calls correct\n", rank_, call);
  return 0;
}

// Operators a type lacks and unknown enums: RAILCOLL_ERR_ARG on every rank, naming the cause.
int mode_badargs(railcoll_comm_t comm) {
  float x[4] = {1, 2, 3, 4}, y[4];
  if (railcoll_reduce(comm, x, y, 4, RAILCOLL_FLOAT, RAILCOLL_BXOR, 0, nullptr) != RAILCOLL_ERR_ARG ||
      !strstr(railcoll_last_error(), "not defined on float"))
    FAIL("reduce of float bxor: %s", railcoll_last_error());
  railcoll_comm_destroy(comm);
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) FAIL("new communicator: %s", railcoll_last_error());
  if (railcoll_reduce_scatter_block(comm, x, y, 1, static_cast<railcoll_datatype_t>(99), RAILCOLL_SUM, nullptr) !=
          RAILCOLL_ERR_ARG ||
      !strstr(railcoll_last_error(), "unknown data type 99"))
    FAIL("reduce_scatter_block of type 99: %s", railcoll_last_error());
  railcoll_comm_destroy(comm);
  mp::say("rank %d: bad arguments rejected\n", rank_);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correct";
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    fprintf(stderr, "comm_init: %s\n", railcoll_last_error());
    return 1;
  }
  rank_ = railcoll_comm_rank(comm);
  size_ = railcoll_comm_size(comm);
  if (mode == "badargs") return mp::finish(nullptr, mode_badargs(comm));  // destroys its own
  return mp::finish(comm, mode_correct(comm, mode == "quick"));
}
