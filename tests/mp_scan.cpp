// A rank program for the multi-process tests of the prefix reductions and of
// user-defined operators through the C API (railcoll_scan, railcoll_exscan,
// railcoll_op_create), started by `railcoll run` or `railcoll cluster run`:
//   correct   every scan and exscan algorithm (and auto) x counts 0, 1, 7,
//             1000 x int32 sum, double max, int64 prod x in place x blocking,
//             nonblocking and persistent (3 starts, the input changed between
//             them); a non-commutative user operator (2x2 integer matrix
//             product, 32-byte elements) through allreduce, reduce (every
//             root), reduce_scatter_block, reduce_scatter (uneven counts),
//             scan and exscan, each on every algorithm that keeps rank order
//             and auto; a commutative one (int sum) on every allreduce algorithm
//   quick     the same with fewer sizes (the emulated cluster)
//   badargs   a user operator with a data type, RAILCOLL_OP_ELEMENTS with a
//             predefined operator, a freed operator, an algorithm that does
//             not keep rank order named for a non-commutative operator: each
//             RAILCOLL_ERR_ARG on that rank (and the communicator broken on
//             every rank, as after any call refused before it began)
// Every element is compared with the result computed here; exscan's rank 0
// must be left untouched. Exit 0 when the rank saw what it should have.
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
bool quick = false;
int call_no = 0;

// ---- predefined operators ----
struct Pre {
  const char* name;
  railcoll_datatype_t type;
  railcoll_op_t op;
  size_t width;
};
const Pre kPre[] = {{"int32 sum", RAILCOLL_INT32, RAILCOLL_SUM, 4},
                    {"double max", RAILCOLL_DOUBLE, RAILCOLL_MAX, 8},
                    {"int64 prod", RAILCOLL_INT64, RAILCOLL_PROD, 8}};

int64_t value(const Pre& p, int r, size_t i, int call) {
  if (p.op == RAILCOLL_PROD) return (r + i + call) % 5 == 0 ? -1 : (r < 6 && (r + i) % 4 == 0) ? 2 : 1;
  return static_cast<int64_t>((r * 37 + i * 11 + call) % 19) - 9;
}
void store(const Pre& p, void* buf, size_t i, int64_t v) {
  if (p.type == RAILCOLL_INT32) static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
  else if (p.type == RAILCOLL_DOUBLE) static_cast<double*>(buf)[i] = static_cast<double>(v);
  else static_cast<int64_t*>(buf)[i] = v;
}
int64_t load(const Pre& p, const void* buf, size_t i) {
  if (p.type == RAILCOLL_INT32) return static_cast<const int32_t*>(buf)[i];
  if (p.type == RAILCOLL_DOUBLE) return static_cast<int64_t>(static_cast<const double*>(buf)[i]);
  return static_cast<const int64_t*>(buf)[i];
}
int64_t combine(const Pre& p, int64_t a, int64_t b) {
  return p.op == RAILCOLL_SUM ? a + b : p.op == RAILCOLL_MAX ? (a > b ? a : b) : a * b;
}

enum Form { kBlocking, kNonblocking, kPersistent };
const char* form_name(Form f) { return f == kBlocking ? "" : f == kNonblocking ? " (nonblocking)" : " (persistent)"; }

int check_prefix(railcoll_comm_t comm, const std::string& algo, const Pre& p, bool exclusive, size_t count,
                 bool in_place, Form form) {
  std::vector<unsigned char> send(count * p.width + 1), recv(count * p.width + 1);
  railcoll_call_opts_t o{algo.c_str(), in_place ? RAILCOLL_IN_PLACE : 0u};
  railcoll_request_t req = RAILCOLL_REQUEST_NULL;
  const char* what = exclusive ? "exscan" : "scan";
  const int starts = form == kPersistent ? 3 : 1;
  for (int start = 0; start < starts; ++start) {
    const int call = ++call_no;
    memset(recv.data(), 0x5A, recv.size());
    for (size_t i = 0; i < count; ++i) store(p, in_place ? recv.data() : send.data(), i, value(p, rank_, i, call));
    const std::vector<unsigned char> before = recv;
    const void* s = in_place ? nullptr : send.data();
    railcoll_status_t st = RAILCOLL_OK;
    if (form == kBlocking)
      st = exclusive ? railcoll_exscan(comm, s, recv.data(), count, p.type, p.op, &o)
                     : railcoll_scan(comm, s, recv.data(), count, p.type, p.op, &o);
    else if (form == kNonblocking || start == 0)
      st = form == kNonblocking
               ? (exclusive ? railcoll_iexscan(comm, s, recv.data(), count, p.type, p.op, &o, &req)
                            : railcoll_iscan(comm, s, recv.data(), count, p.type, p.op, &o, &req))
               : (exclusive ? railcoll_exscan_init(comm, s, recv.data(), count, p.type, p.op, &o, &req)
                            : railcoll_scan_init(comm, s, recv.data(), count, p.type, p.op, &o, &req));
    if (st == RAILCOLL_OK && form == kPersistent) st = railcoll_start(req);
    if (st == RAILCOLL_OK && form != kBlocking) st = railcoll_wait(&req);
    if (st != RAILCOLL_OK)
      FAIL("%s %s %s x %zu%s%s: %s", what, algo.c_str(), p.name, count, in_place ? " in place" : "", form_name(form),
           railcoll_last_error());
    if (recv[count * p.width] != 0x5A) FAIL("%s %s: wrote past the end", what, algo.c_str());
    if (exclusive && rank_ == 0) {
      if (recv != before) FAIL("exscan %s %s x %zu: rank 0's recvbuf was written", algo.c_str(), p.name, count);
      continue;
    }
    for (size_t i = 0; i < count; ++i) {
      int64_t want = value(p, 0, i, call);
      for (int r = 1; r < (exclusive ? rank_ : rank_ + 1); ++r) want = combine(p, want, value(p, r, i, call));
      if (load(p, recv.data(), i) != want)
        FAIL("%s %s %s x %zu%s%s: element %zu is %lld, expected %lld", what, algo.c_str(), p.name, count,
             in_place ? " in place" : "", form_name(form), i, static_cast<long long>(load(p, recv.data(), i)),
             static_cast<long long>(want));
    }
  }
  if (req != RAILCOLL_REQUEST_NULL) railcoll_request_free(&req);
  return 0;
}

// ---- user-defined operators ----
struct Mat {
  int64_t a, b, c, d;
  bool operator==(const Mat& o) const { return a == o.a && b == o.b && c == o.c && d == o.d; }
};
Mat mul(const Mat& x, const Mat& y) {  // x * y, wrapping
  auto m = [](int64_t p, int64_t q) { return static_cast<uint64_t>(p) * static_cast<uint64_t>(q); };
  return {static_cast<int64_t>(m(x.a, y.a) + m(x.b, y.c)), static_cast<int64_t>(m(x.a, y.b) + m(x.b, y.d)),
          static_cast<int64_t>(m(x.c, y.a) + m(x.d, y.c)), static_cast<int64_t>(m(x.c, y.b) + m(x.d, y.d))};
}
Mat mat_of(int r, size_t i, int call) {
  const int64_t k = static_cast<int64_t>(i);
  return {1 + (r + k + call) % 3, (r * 7 + k) % 5 - 2, (r + 2 * k + call) % 4 - 1, 1 + (r * 3 + k) % 2};
}
Mat product(int lo, int hi, size_t i, int call) {
  Mat p{1, 0, 0, 1};
  for (int r = lo; r < hi; ++r) p = mul(p, mat_of(r, i, call));
  return p;
}
// MPI's order: inout = in (op) inout, `in` the lower ranks'.
void mat_product(const void* in, void* inout, size_t n, void* context) {
  ++*static_cast<long*>(context);
  const Mat* x = static_cast<const Mat*>(in);
  Mat* y = static_cast<Mat*>(inout);
  for (size_t i = 0; i < n; ++i) y[i] = mul(x[i], y[i]);
}
void int_sum(const void* in, void* inout, size_t n, void*) {
  for (size_t i = 0; i < n; ++i) static_cast<int32_t*>(inout)[i] += static_cast<const int32_t*>(in)[i];
}
long mat_calls = 0;  // the function's calls: it does run

int check_mats(const char* what, const std::string& algo, const std::vector<Mat>& got, size_t count, size_t first,
               int upto, int call) {
  for (size_t i = 0; i < count; ++i)
    if (!(got[i] == product(0, upto, first + i, call)))
      FAIL("%s %s, matrix product x %zu: matrix %zu is [%lld %lld; %lld %lld], expected the product over ranks 0..%d "
           "in rank order",
           what, algo.c_str(), count, first + i, static_cast<long long>(got[i].a), static_cast<long long>(got[i].b),
           static_cast<long long>(got[i].c), static_cast<long long>(got[i].d), upto - 1);
  return 0;
}

// The algorithms of `coll` that keep rank order (railcoll algos marks them), and auto.
std::vector<std::string> ordered(const std::string& coll) {
  if (coll == "allreduce") return {"recursive_doubling", "auto"};
  if (coll == "reduce") return {"binomial", "auto"};
  if (coll == "reduce_scatter_block" || coll == "reduce_scatter") return {"direct", "auto"};
  return mp::algorithms(coll);
}

#define CALL(what, expr) \
  if ((expr) != RAILCOLL_OK) FAIL("%s %s: %s", what, algo.c_str(), railcoll_last_error())

int check_user_ops(railcoll_comm_t comm, railcoll_op_t mat_op, railcoll_op_t sum_op) {
  const int n = size_;
  for (size_t count : quick ? std::vector<size_t>{3} : std::vector<size_t>{1, 3, 200}) {
    std::vector<Mat> send(count * n), recv(count * n);
    for (const std::string& algo : ordered("allreduce")) {
      railcoll_call_opts_t o{algo.c_str(), 0};
      int call = ++call_no;
      for (size_t i = 0; i < count; ++i) send[i] = mat_of(rank_, i, call);
      CALL("allreduce", railcoll_allreduce(comm, send.data(), recv.data(), count, RAILCOLL_OP_ELEMENTS, mat_op, &o));
      if (check_mats("allreduce", algo, recv, count, 0, n, call)) return 1;
      railcoll_request_t req;  // nonblocking, in place
      call = ++call_no;
      for (size_t i = 0; i < count; ++i) recv[i] = mat_of(rank_, i, call);
      railcoll_call_opts_t in_place{algo.c_str(), RAILCOLL_IN_PLACE};
      CALL("iallreduce", railcoll_iallreduce(comm, nullptr, recv.data(), count, RAILCOLL_OP_ELEMENTS, mat_op,
                                             &in_place, &req));
      CALL("iallreduce wait", railcoll_wait(&req));
      if (check_mats("iallreduce in place", algo, recv, count, 0, n, call)) return 1;
    }
    for (const std::string& algo : ordered("reduce"))
      for (int root = 0; root < n; ++root) {
        railcoll_call_opts_t o{algo.c_str(), 0};
        const int call = ++call_no;
        for (size_t i = 0; i < count; ++i) send[i] = mat_of(rank_, i, call);
        CALL("reduce", railcoll_reduce(comm, send.data(), recv.data(), count, RAILCOLL_OP_ELEMENTS, mat_op, root, &o));
        if (rank_ == root && check_mats("reduce", algo, recv, count, 0, n, call)) return 1;
      }
    for (const std::string& algo : ordered("reduce_scatter_block")) {
      railcoll_call_opts_t o{algo.c_str(), 0};
      const int call = ++call_no;
      for (size_t i = 0; i < count * n; ++i) send[i] = mat_of(rank_, i, call);
      CALL("reduce_scatter_block", railcoll_reduce_scatter_block(comm, send.data(), recv.data(), count,
                                                                 RAILCOLL_OP_ELEMENTS, mat_op, &o));
      if (check_mats("reduce_scatter_block", algo, recv, count, rank_ * count, n, call)) return 1;
    }
    for (const std::string& algo : ordered("reduce_scatter")) {
      std::vector<size_t> counts(n);
      size_t at = 0, mine = 0;
      for (int r = 0; r < n; ++r) {
        counts[r] = (r * 3 + count) % 4;
        if (r == rank_) mine = at;
        at += counts[r];
      }
      std::vector<Mat> all(at + 1), part(counts[rank_] + 1);
      railcoll_call_opts_t o{algo.c_str(), 0};
      const int call = ++call_no;
      for (size_t i = 0; i < at; ++i) all[i] = mat_of(rank_, i, call);
      CALL("reduce_scatter", railcoll_reduce_scatter(comm, all.data(), part.data(), counts.data(),
                                                     RAILCOLL_OP_ELEMENTS, mat_op, &o));
      if (check_mats("reduce_scatter", algo, part, counts[rank_], mine, n, call)) return 1;
    }
    for (bool exclusive : {false, true})
      for (const std::string& algo : ordered(exclusive ? "exscan" : "scan")) {
        railcoll_call_opts_t o{algo.c_str(), 0};
        const int call = ++call_no;
        for (size_t i = 0; i < count; ++i) send[i] = mat_of(rank_, i, call);
        const char* what = exclusive ? "exscan" : "scan";
        CALL(what, (exclusive ? railcoll_exscan : railcoll_scan)(comm, send.data(), recv.data(), count,
                                                                 RAILCOLL_OP_ELEMENTS, mat_op, &o));
        if (!(exclusive && rank_ == 0) && check_mats(what, algo, recv, count, 0, exclusive ? rank_ : rank_ + 1, call))
          return 1;
      }
  }
  if (n > 1 && mat_calls == 0) FAIL("the matrix operator's function was never called on this rank");
  // Commutative: every allreduce algorithm may run it.
  for (const std::string& algo : mp::algorithms("allreduce")) {
    std::vector<int32_t> x(301), y(301);
    const int call = ++call_no;
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i * 3 + rank_ + call);
    railcoll_call_opts_t o{algo.c_str(), 0};
    CALL("allreduce (commutative user sum)",
         railcoll_allreduce(comm, x.data(), y.data(), x.size(), RAILCOLL_OP_ELEMENTS, sum_op, &o));
    for (size_t i = 0; i < y.size(); ++i) {
      int32_t want = 0;
      for (int r = 0; r < n; ++r) want += static_cast<int32_t>(i * 3 + r + call);
      if (y[i] != want) FAIL("allreduce %s, commutative user sum: element %zu is %d, expected %d", algo.c_str(), i, y[i], want);
    }
  }
  return 0;
}

int mode_correct(railcoll_comm_t comm) {
  railcoll_op_t mat_op, sum_op;
  if (railcoll_op_create(mat_product, sizeof(Mat), 0, &mat_calls, &mat_op) != RAILCOLL_OK ||
      railcoll_op_create(int_sum, 4, 1, nullptr, &sum_op) != RAILCOLL_OK)
    FAIL("railcoll_op_create: %s", railcoll_last_error());
  const std::vector<size_t> counts = quick ? std::vector<size_t>{7} : std::vector<size_t>{0, 1, 7, 1000};
  for (bool exclusive : {false, true})
    for (const std::string& algo : mp::algorithms(exclusive ? "exscan" : "scan"))
      for (const Pre& p : kPre)
        for (size_t count : counts)
          for (bool in_place : {false, true})
            for (Form form : {kBlocking, kNonblocking, kPersistent}) {
              if (form != kBlocking && (count == 0 || (&p != kPre && count != 7))) continue;  // fewer for the other forms
              if (check_prefix(comm, algo, p, exclusive, count, in_place, form)) return 1;
            }
  if (check_user_ops(comm, mat_op, sum_op)) return 1;
  if (railcoll_op_free(&mat_op) != RAILCOLL_OK || railcoll_op_free(&sum_op) != RAILCOLL_OK)
    FAIL("railcoll_op_free: %s", railcoll_last_error());
  mp::say("rank %d: calls correct (%d calls)\n", rank_, call_no);
  return 0;
}

int mode_badargs(railcoll_comm_t comm) {
  railcoll_op_t mat_op, freed, gone;
  if (railcoll_op_create(mat_product, sizeof(Mat), 0, &mat_calls, &mat_op) != RAILCOLL_OK ||
      railcoll_op_create(int_sum, 4, 1, nullptr, &freed) != RAILCOLL_OK)
    FAIL("railcoll_op_create: %s", railcoll_last_error());
  gone = freed;  // its value, kept past the free
  if (railcoll_op_free(&freed) != RAILCOLL_OK) FAIL("railcoll_op_free: %s", railcoll_last_error());
  railcoll_op_t none;
  if (railcoll_op_create(nullptr, 4, 1, nullptr, &none) != RAILCOLL_ERR_ARG ||
      railcoll_op_create(int_sum, 0, 1, nullptr, &none) != RAILCOLL_ERR_ARG)
    FAIL("railcoll_op_create accepted a NULL function or 0-byte elements");
  railcoll_op_t sum = RAILCOLL_SUM;
  if (railcoll_op_free(&sum) != RAILCOLL_ERR_ARG) FAIL("railcoll_op_free of RAILCOLL_SUM was accepted");
  Mat m[2] = {mat_of(rank_, 0, 1), mat_of(rank_, 1, 1)}, out[2];
  // Each rank refuses its own call before it begins; the first breaks the
  // communicator everywhere (then every call is RAILCOLL_ERR_BROKEN): so each
  // case runs on a communicator of its own.
  struct Case {
    const char* what;
    const char* needle;
    railcoll_status_t (*run)(railcoll_comm_t, Mat*, Mat*, railcoll_op_t, railcoll_op_t);
  };
  const Case cases[] = {
      {"a user operator with a data type", "takes the type RAILCOLL_OP_ELEMENTS",
       [](railcoll_comm_t c, Mat* s, Mat* r, railcoll_op_t op, railcoll_op_t) {
         return railcoll_allreduce(c, s, r, 2, RAILCOLL_INT64, op, nullptr);
       }},
      {"RAILCOLL_OP_ELEMENTS with a predefined operator", "needs a user operator",
       [](railcoll_comm_t c, Mat* s, Mat* r, railcoll_op_t, railcoll_op_t) {
         return railcoll_scan(c, s, r, 2, RAILCOLL_OP_ELEMENTS, RAILCOLL_SUM, nullptr);
       }},
      {"a freed operator", "unknown operation",
       [](railcoll_comm_t c, Mat* s, Mat* r, railcoll_op_t, railcoll_op_t gone) {
         return railcoll_exscan(c, s, r, 2, RAILCOLL_OP_ELEMENTS, gone, nullptr);
       }},
      {"ring for a non-commutative operator", "does not combine in rank order",
       [](railcoll_comm_t c, Mat* s, Mat* r, railcoll_op_t op, railcoll_op_t) {
         railcoll_call_opts_t o{"ring", 0};
         return railcoll_allreduce(c, s, r, 2, RAILCOLL_OP_ELEMENTS, op, &o);
       }},
  };
  for (const Case& c : cases) {
    railcoll_comm_t fresh;
    if (railcoll_comm_init(&fresh) != RAILCOLL_OK) FAIL("a new communicator: %s", railcoll_last_error());
    railcoll_status_t st = c.run(fresh, m, out, mat_op, gone);
    const std::string why = railcoll_last_error();
    railcoll_comm_destroy(fresh);
    if (st != RAILCOLL_ERR_ARG || why.find(c.needle) == std::string::npos)
      FAIL("%s: expected RAILCOLL_ERR_ARG saying '%s', got %s: %s", c.what, c.needle, railcoll_strerror(st),
           why.c_str());
  }
  // auto passes over the algorithms that do not keep order: a long vector
  // (which the rules give to rabenseifner or smp) still reduces in order.
  std::vector<Mat> big(5000), res(5000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = mat_of(rank_, i, 2);
  if (railcoll_allreduce(comm, big.data(), res.data(), big.size(), RAILCOLL_OP_ELEMENTS, mat_op, nullptr) != RAILCOLL_OK)
    FAIL("allreduce auto, non-commutative, 160 KB: %s", railcoll_last_error());
  const std::string algo = "auto";
  if (check_mats("allreduce", algo, res, big.size(), 0, size_, 2)) return 1;
  railcoll_op_free(&mat_op);
  mp::say("rank %d: bad arguments rejected\n", rank_);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "correct";
  quick = mode == "quick";
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    fprintf(stderr, "railcoll_comm_init: %s\n", railcoll_last_error());
    return 1;
  }
  rank_ = railcoll_comm_rank(comm);
  size_ = railcoll_comm_size(comm);
  // The verdict is printed after the communicator is destroyed (mp::finish):
  // a crash or hang at destroy fails the check.
  return mp::finish(comm, mode == "correct" || mode == "quick" ? mode_correct(comm)
                          : mode == "badargs"                 ? mode_badargs(comm)
                                                               : 2);
}
