/* What the library served last (issue 29, item 7), from an unmodified MPI
 * program, every element compared with the result computed here:
 *  scan      MPI_Scan and MPI_Exscan of predefined operators (int sum, double
 *            max, long long prod) and of user-defined ones, counts 0, 1, 7
 *            and 1500, in place, blocking, nonblocking and persistent
 *            (several starts, the input changed between them);
 *  userops   a non-commutative user operator (the product of 2x2 integer
 *            matrices, a contiguous type of 4 MPI_INT64_T: in rank order or
 *            wrong) and a commutative one, through MPI_Allreduce, MPI_Reduce
 *            (root 0 and the last), MPI_Reduce_scatter_block,
 *            MPI_Reduce_scatter (uneven counts), MPI_Scan, MPI_Exscan and the
 *            nonblocking forms; a user operator on a type with gaps (MPI
 *            serves it, with MPI's result);
 *  alltoallw MPI_Alltoallw with a datatype of its own per peer on each side
 *            (contiguous, vectors with gaps, blocks out of order in the
 *            buffer, the gaps checked untouched), in place, MPI_Ialltoallw and
 *            the persistent form;
 *  large count  where the MPI has them (MPICH): MPI_Allreduce_c, MPI_Scan_c,
 *            MPI_Iexscan_c with the matrix product, MPI_Alltoallw_c,
 *            MPI_Alltoallv_c, MPI_Bcast_c, MPI_Allgather_c, MPI_Igather_c;
 * on MPI_COMM_WORLD and on a split whose rank order is the reverse of the
 * world's, where rank order is what a scan and a non-commutative operator
 * must follow; then on each rank alone (every call MPI's).
 *
 * Prints the report the library should give (railcoll-mpi-expect lines, as
 * tests/mpi/mpi_collectives.c), "scan correct: N wrong", and a digest of
 * every result byte MPI defines (not exscan's rank 0): the same program
 * without the library must print the same digest.
 *   usage: mpi_scan [--starts N]   (persistent starts, default 3) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5)
#define PERSISTENT(name) MPI_##name##_init
#define HAVE_PERSISTENT 1
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PERSISTENT(name) MPIX_##name##_init
#define HAVE_PERSISTENT 1
#endif
#endif

#include "mpi_check.h"

static int world_rank, world_size, errors, starts = 3, call_no;
/* [form][coll][railcoll?]: form 0 blocking, 1 nonblocking, 2 persistent. */
static long expected_forms[3][NCOLL][2];
static uint64_t digest = 1469598103934665603ull;

static void expect(int form, int coll, MPI_Comm comm, int railcoll_can) {
  int size;
  MPI_Comm_size(comm, &size);
  expected_forms[form][coll][railcoll_can && size > 1]++;
}
static void mix(const void* p, size_t n) {
  for (size_t i = 0; i < n; ++i) digest = (digest ^ ((const unsigned char*)p)[i]) * 1099511628211ull;
}

/* ---- the operators ---- */
typedef struct {
  int64_t a, b, c, d; /* [a b; c d] */
} Mat;
static Mat mat_mul(Mat x, Mat y) { /* x * y, wrapping like MPI's integers */
  Mat r;
  r.a = (int64_t)((uint64_t)x.a * (uint64_t)y.a + (uint64_t)x.b * (uint64_t)y.c);
  r.b = (int64_t)((uint64_t)x.a * (uint64_t)y.b + (uint64_t)x.b * (uint64_t)y.d);
  r.c = (int64_t)((uint64_t)x.c * (uint64_t)y.a + (uint64_t)x.d * (uint64_t)y.c);
  r.d = (int64_t)((uint64_t)x.c * (uint64_t)y.b + (uint64_t)x.d * (uint64_t)y.d);
  return r;
}
static int mat_eq(Mat x, Mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }
/* MPI's order: inout = in op inout, `in` holding the lower ranks' product. */
static void mat_product(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  Mat* x = in;
  Mat* y = inout;
  for (int i = 0; i < *len; ++i) y[i] = mat_mul(x[i], y[i]);
}
/* Rank r's matrix i in call c: small entries, determinant +-1 or so, never commuting with its neighbours'. */
static Mat mat_of(int r, int i, int c) {
  Mat m = {1 + (r + i + c) % 3, (r * 7 + i) % 5 - 2, (r + 2 * i + c) % 4 - 1, 1 + (r * 3 + i) % 2};
  return m;
}
/* A commutative one: a sum that also counts its calls' elements (any grouping gives the same). */
static void int_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}
/* On every other int (a type with gaps: MPI serves it). */
static void strided_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[2 * i] += ((int*)in)[2 * i];
}

static MPI_Datatype mat_type, gapped_int;
static MPI_Op mat_op, sum_op, gapped_op;

/* ---- predefined scans ---- */
static int64_t value(int r, int i, int call) { return (r * 37 + i * 11 + call) % 19 - 9; }

typedef struct {
  const char* name;
  MPI_Datatype type;
  MPI_Op op;
  int width;
} Pre;

static void store(void* p, int i, const Pre* t, int64_t v) {
  if (t->type == MPI_INT) ((int*)p)[i] = (int)v;
  else if (t->type == MPI_DOUBLE) ((double*)p)[i] = (double)v;
  else ((long long*)p)[i] = v;
}
static int64_t load(const void* p, int i, const Pre* t) {
  if (t->type == MPI_INT) return ((const int*)p)[i];
  if (t->type == MPI_DOUBLE) return (int64_t)((const double*)p)[i];
  return ((const long long*)p)[i];
}
static int64_t combine(const Pre* t, int64_t a, int64_t b) {
  if (t->op == MPI_SUM) return a + b;
  if (t->op == MPI_MAX) return a > b ? a : b;
  return a * b;
}
/* Values for a product stay small: 1, -1 and a few 2s. */
static int64_t pre_value(const Pre* t, int r, int i, int call) {
  if (t->op == MPI_PROD) return (r + i + call) % 5 == 0 ? -1 : (r < 6 && (r + i) % 4 == 0) ? 2 : 1;
  return value(r, i, call);
}

/* One scan or exscan (form 0 blocking, 1 nonblocking, 2 persistent with `starts` starts). */
static void one_scan(MPI_Comm comm, const char* where, const Pre* t, int exclusive, int count, int in_place, int form) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  char* send = malloc((size_t)count * t->width + 1);
  char* recv = malloc((size_t)count * t->width + 1);
  MPI_Request req = MPI_REQUEST_NULL;
  const int rounds = form == 2 ? starts : 1;
#ifndef HAVE_PERSISTENT
  if (form == 2) {
    free(send);
    free(recv);
    return;
  }
#endif
  expect(form, exclusive ? EXSCAN : SCAN, comm, 1);
  for (int round = 0; round < rounds; ++round) {
    const int call = ++call_no;
    for (int i = 0; i < count; ++i) store(in_place ? recv : send, i, t, pre_value(t, me, i, call));
    if (!in_place) memset(recv, 0x5A, (size_t)count * t->width);
    const void* s = in_place ? MPI_IN_PLACE : send;
    if (form == 0) {
      if (exclusive) MPI_Exscan(s, recv, count, t->type, t->op, comm);
      else MPI_Scan(s, recv, count, t->type, t->op, comm);
    } else if (form == 1) {
      if (exclusive) MPI_Iexscan(s, recv, count, t->type, t->op, comm, &req);
      else MPI_Iscan(s, recv, count, t->type, t->op, comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
#ifdef HAVE_PERSISTENT
      if (round == 0) {
        if (exclusive) PERSISTENT(Exscan)(s, recv, count, t->type, t->op, comm, MPI_INFO_NULL, &req);
        else PERSISTENT(Scan)(s, recv, count, t->type, t->op, comm, MPI_INFO_NULL, &req);
      }
      MPI_Start(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
#endif
    }
    if (exclusive && me == 0) continue; /* undefined */
    mix(recv, (size_t)count * t->width);
    for (int i = 0; i < count; ++i) {
      int64_t want = pre_value(t, 0, i, call);
      for (int r = 1; r < (exclusive ? me : me + 1); ++r) want = combine(t, want, pre_value(t, r, i, call));
      if (load(recv, i, t) != want) {
        FAIL("%s: %s%s %s x %d%s: rank %d element %d is %lld, expected %lld", where, form == 1 ? "MPI_I" : "MPI_",
             exclusive ? "exscan" : "scan", t->name, count, in_place ? " in place" : "", me, i,
             (long long)load(recv, i, t), (long long)want);
        break;
      }
    }
  }
  if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
  free(send);
  free(recv);
}

static void test_scans(MPI_Comm comm, const char* where) {
  static const int counts[] = {0, 1, 7, 1500};
  const Pre types[] = {{"int sum", MPI_INT, MPI_SUM, 4}, {"double max", MPI_DOUBLE, MPI_MAX, 8},
                       {"long long prod", MPI_LONG_LONG, MPI_PROD, 8}};
  for (int t = 0; t < 3; ++t)
    for (int exclusive = 0; exclusive < 2; ++exclusive)
      for (int k = 0; k < 4; ++k)
        for (int in_place = 0; in_place < 2; ++in_place)
          for (int form = 0; form < 3; ++form) {
            if (form > 0 && (k == 0 || (t > 0 && k != 2))) continue;  /* the other forms: fewer cases */
            one_scan(comm, where, &types[t], exclusive, counts[k], in_place, form);
          }
}

/* ---- user-defined operators ---- */
/* Rank order: the product over ranks lo..hi-1 of their matrix i. */
static Mat product(int lo, int hi, int i, int call) {
  Mat p = {1, 0, 0, 1};
  for (int r = lo; r < hi; ++r) p = mat_mul(p, mat_of(r, i, call));
  return p;
}
static void check_mats(const char* where, const char* what, const Mat* got, int count, int first, int upto, int call) {
  mix(got, (size_t)count * sizeof(Mat));
  for (int i = 0; i < count; ++i)
    if (!mat_eq(got[i], product(0, upto, first + i, call))) {
      FAIL("%s: %s: matrix %d is [%lld %lld; %lld %lld], expected the product over ranks 0..%d in rank order", where,
           what, first + i, (long long)got[i].a, (long long)got[i].b, (long long)got[i].c, (long long)got[i].d,
           upto - 1);
      return;
    }
}

static void test_user_ops(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  for (int count = 1; count <= 700; count += 699) {
    Mat* send = malloc(sizeof(Mat) * (size_t)(count + 3) * n); /* reduce_scatter: up to 3 per rank */
    Mat* recv = malloc(sizeof(Mat) * (size_t)(count + 3) * n);
    int call = ++call_no;
    for (int i = 0; i < count; ++i) send[i] = mat_of(me, i, call);
    expect(0, ALLREDUCE, comm, 1);
    MPI_Allreduce(send, recv, count, mat_type, mat_op, comm);
    check_mats(where, "MPI_Allreduce, matrix product", recv, count, 0, n, call);

    MPI_Request req;
    call = ++call_no;
    for (int i = 0; i < count; ++i) recv[i] = mat_of(me, i, call);
    expect(1, ALLREDUCE, comm, 1);
    MPI_Iallreduce(MPI_IN_PLACE, recv, count, mat_type, mat_op, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check_mats(where, "MPI_Iallreduce in place, matrix product", recv, count, 0, n, call);

    for (int root = 0; root < n; root += n - 1 > 0 ? n - 1 : 1) {
      call = ++call_no;
      for (int i = 0; i < count; ++i) send[i] = mat_of(me, i, call);
      expect(0, REDUCE, comm, 1);
      MPI_Reduce(send, recv, count, mat_type, mat_op, root, comm);
      if (me == root) check_mats(where, "MPI_Reduce, matrix product", recv, count, 0, n, call);
      if (n == 1) break;
    }

    call = ++call_no;  /* block r (count matrices) for rank r */
    for (int i = 0; i < count * n; ++i) send[i] = mat_of(me, i, call);
    expect(0, REDUCE_SCATTER_BLOCK, comm, 1);
    MPI_Reduce_scatter_block(send, recv, count, mat_type, mat_op, comm);
    check_mats(where, "MPI_Reduce_scatter_block, matrix product", recv, count, me * count, n, call);

    int* counts = malloc(sizeof(int) * (size_t)n);
    int total = 0, mine_at = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = (r * 3 + count) % 4;  /* uneven, some 0 */
      if (r == me) mine_at = total;
      total += counts[r];
    }
    call = ++call_no;
    for (int i = 0; i < total; ++i) send[i] = mat_of(me, i, call);
    expect(0, REDUCE_SCATTER, comm, 1);
    MPI_Reduce_scatter(send, recv, counts, mat_type, mat_op, comm);
    check_mats(where, "MPI_Reduce_scatter, matrix product", recv, counts[me], mine_at, n, call);
    free(counts);

    for (int exclusive = 0; exclusive < 2; ++exclusive)
      for (int form = 0; form < 2; ++form) {
        call = ++call_no;
        for (int i = 0; i < count; ++i) send[i] = mat_of(me, i, call);
        expect(form, exclusive ? EXSCAN : SCAN, comm, 1);
        if (form == 0 && exclusive) MPI_Exscan(send, recv, count, mat_type, mat_op, comm);
        if (form == 0 && !exclusive) MPI_Scan(send, recv, count, mat_type, mat_op, comm);
        if (form == 1 && exclusive) MPI_Iexscan(send, recv, count, mat_type, mat_op, comm, &req);
        if (form == 1 && !exclusive) MPI_Iscan(send, recv, count, mat_type, mat_op, comm, &req);
        if (form == 1) MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (!(exclusive && me == 0))
          check_mats(where, exclusive ? "MPI_Exscan, matrix product" : "MPI_Scan, matrix product", recv, count, 0,
                     exclusive ? me : me + 1, call);
      }
    free(send);
    free(recv);
  }

  /* Commutative, on MPI_INT: allreduce and scan. */
  int x[5], y[5];
  const int call = ++call_no;
  for (int i = 0; i < 5; ++i) x[i] = (int)value(me, i, call);
  expect(0, ALLREDUCE, comm, 1);
  MPI_Allreduce(x, y, 5, MPI_INT, sum_op, comm);
  mix(y, sizeof y);
  for (int i = 0; i < 5; ++i) {
    int want = 0;
    for (int r = 0; r < n; ++r) want += (int)value(r, i, call);
    if (y[i] != want) FAIL("%s: MPI_Allreduce, commutative user sum: element %d is %d, expected %d", where, i, y[i], want);
  }
  expect(0, SCAN, comm, 1);
  MPI_Scan(x, y, 5, MPI_INT, sum_op, comm);
  mix(y, sizeof y);
  for (int i = 0; i < 5; ++i) {
    int want = 0;
    for (int r = 0; r <= me; ++r) want += (int)value(r, i, call);
    if (y[i] != want) FAIL("%s: MPI_Scan, commutative user sum: element %d is %d, expected %d", where, i, y[i], want);
  }
  /* Elements with gaps: the function reads them where MPI's layout puts them, so MPI serves it. */
  int gx[6], gy[6] = {0};
  for (int i = 0; i < 6; ++i) gx[i] = (int)value(me, i, call);
  expect(0, ALLREDUCE, comm, 0);
  MPI_Allreduce(gx, gy, 3, gapped_int, gapped_op, comm);
  for (int i = 0; i < 3; ++i) {
    int want = 0;
    for (int r = 0; r < n; ++r) want += (int)value(r, 2 * i, call);
    mix(&gy[2 * i], sizeof(int));
    if (gy[2 * i] != want) FAIL("%s: MPI_Allreduce on a type with gaps (MPI's): element %d is %d, expected %d", where, i, gy[2 * i], want);
  }
}

/* ---- alltoallw ---- */
static int64_t cross(int from, int to, int j, int call) { return (int64_t)from * 100000 + to * 1000 + j * 7 + call; }

typedef struct {
  int* counts;
  int* displs;
  MPI_Datatype* types;
  int elems_at;     /* int64 slots of the buffer */
} Side;

/* How rank `me` lays out its block with peer p (k int64 values): kind 0 plain
 * MPI_INT64_T, 1 a vector with gaps (stride `stride`), 2 one contiguous type. */
static MPI_Datatype block_type(int kind, int k, int stride, int* count) {
  MPI_Datatype t;
  if (kind == 0) {
    *count = k;
    return MPI_INT64_T;
  }
  if (kind == 1) MPI_Type_vector(k, 1, stride, MPI_INT64_T, &t);
  else MPI_Type_contiguous(k, MPI_INT64_T, &t);
  MPI_Type_commit(&t);
  *count = 1;
  return t;
}
static int64_t span_of(int kind, int k, int stride) { return kind == 1 ? (int64_t)(k - 1) * stride + 1 : k; }
static void free_types(MPI_Datatype* types, int n) {
  for (int p = 0; p < n; ++p)
    if (types[p] != MPI_INT64_T) MPI_Type_free(&types[p]);
}

/* Blocks of k(me, p) values laid out by kind_of(p), in peer order reversed
 * (descending) or not, 2 slots apart. */
static void lay_out(Side* s, int n, int me, int (*k)(int, int), int (*kind_of)(int), int stride, int reversed) {
  s->counts = malloc(sizeof(int) * (size_t)n);
  s->displs = malloc(sizeof(int) * (size_t)n);
  s->types = malloc(sizeof(MPI_Datatype) * (size_t)n);
  int at = 1;
  for (int q = 0; q < n; ++q) {
    const int p = reversed ? n - 1 - q : q;
    s->types[p] = block_type(kind_of(p), k(me, p), stride, &s->counts[p]);
    s->displs[p] = at * 8;
    at += (int)span_of(kind_of(p), k(me, p), stride) + 2;
  }
  s->elems_at = at;
}
static int k_send(int me, int p) { return 1 + (me + 2 * p) % 3; }
static int k_recv(int me, int p) { return k_send(p, me); }
static int k_both(int me, int p) { return 1 + (me + p) % 3; }  /* symmetric: in place */
static int send_kind(int p) { return p % 3; }
static int recv_kind(int p) { return p % 2; }
static int same_kind(int p) { return (p + 1) % 3; }

/* rank me's buffer `buf` (side s) holds what it received from every peer (k values each), and its gaps FILL. */
static void check_received(const char* where, const char* what, const int64_t* buf, const Side* s, int n, int me,
                           int (*k)(int, int), int (*kind_of)(int), int stride, int call) {
  char* touched = calloc((size_t)s->elems_at, 1);
  for (int p = 0; p < n; ++p) {
    const int kk = k(me, p);
    for (int j = 0; j < kk; ++j) {
      const int slot = s->displs[p] / 8 + (kind_of(p) == 1 ? j * stride : j);
      touched[slot] = 1;
      mix(&buf[slot], 8);
      if (buf[slot] != cross(p, me, j, call)) {
        FAIL("%s: %s: value %d from rank %d is %lld, expected %lld", where, what, j, p, (long long)buf[slot],
             (long long)cross(p, me, j, call));
        free(touched);
        return;
      }
    }
  }
  for (int i = 0; i < s->elems_at; ++i)
    if (!touched[i] && buf[i] != (int64_t)0x5A5A5A5A5A5A5A5Aull) {
      FAIL("%s: %s: the gap at slot %d was written", where, what, i);
      break;
    }
  free(touched);
}
static void fill_sent(int64_t* buf, const Side* s, int n, int me, int (*k)(int, int), int (*kind_of)(int), int stride,
                      int call) {
  memset(buf, 0x5A, (size_t)s->elems_at * 8);
  for (int p = 0; p < n; ++p)
    for (int j = 0; j < k(me, p); ++j) buf[s->displs[p] / 8 + (kind_of(p) == 1 ? j * stride : j)] = cross(me, p, j, call);
}

static void test_alltoallw(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  /* One rank goes to MPI, and Open MPI 4.1's own (coll/self) scales
   * MPI_Alltoallw's byte displacements by the extent: out of bounds here. */
  if (n == 1) return;
  Side send, recv, both;
  lay_out(&send, n, me, k_send, send_kind, 2, 1);
  lay_out(&recv, n, me, k_recv, recv_kind, 3, 0);
  lay_out(&both, n, me, k_both, same_kind, 2, 1);
  int64_t* sbuf = malloc((size_t)send.elems_at * 8);
  int64_t* rbuf = malloc((size_t)recv.elems_at * 8);
  int64_t* ibuf = malloc((size_t)both.elems_at * 8);

  for (int form = 0; form < 3; ++form) {
#ifndef HAVE_PERSISTENT
    if (form == 2) break;
#endif
    MPI_Request req = MPI_REQUEST_NULL;
    const int rounds = form == 2 ? starts : 1;
    expect(form, ALLTOALLW, comm, 1);
    for (int round = 0; round < rounds; ++round) {
      const int call = ++call_no;
      fill_sent(sbuf, &send, n, me, k_send, send_kind, 2, call);
      memset(rbuf, 0x5A, (size_t)recv.elems_at * 8);
      if (form == 0)
        MPI_Alltoallw(sbuf, send.counts, send.displs, send.types, rbuf, recv.counts, recv.displs, recv.types, comm);
      if (form == 1) {
        MPI_Ialltoallw(sbuf, send.counts, send.displs, send.types, rbuf, recv.counts, recv.displs, recv.types, comm,
                       &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      }
#ifdef HAVE_PERSISTENT
      if (form == 2) {
        if (round == 0)
          PERSISTENT(Alltoallw)(sbuf, send.counts, send.displs, send.types, rbuf, recv.counts, recv.displs,
                                recv.types, comm, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      }
#endif
      check_received(where, form == 0 ? "MPI_Alltoallw" : form == 1 ? "MPI_Ialltoallw" : "MPI_Alltoallw_init", rbuf,
                     &recv, n, me, k_recv, recv_kind, 3, call);
    }
    if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
  }
  /* In place: recvbuf holds what is sent, and gets what arrives, block for block. */
  const int call = ++call_no;
  fill_sent(ibuf, &both, n, me, k_both, same_kind, 2, call);
  expect(0, ALLTOALLW, comm, 1);
  MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, ibuf, both.counts, both.displs, both.types, comm);
  check_received(where, "MPI_Alltoallw in place", ibuf, &both, n, me, k_both, same_kind, 2, call);

  free_types(send.types, n);
  free_types(recv.types, n);
  free_types(both.types, n);
  Side* sides[] = {&send, &recv, &both};
  for (int i = 0; i < 3; ++i) free(sides[i]->counts), free(sides[i]->displs), free(sides[i]->types);
  free(sbuf);
  free(rbuf);
  free(ibuf);
}

/* ---- the large-count forms (MPI 4: MPICH), counted with their int forms ---- */
static void test_large_count(MPI_Comm comm, const char* where) {
#if MPI_VERSION >= 4
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  const MPI_Count count = 3;
  Mat send[3], recv[3];
  int call = ++call_no;
  for (int i = 0; i < 3; ++i) send[i] = mat_of(me, i, call);
  expect(0, ALLREDUCE, comm, 1);
  MPI_Allreduce_c(send, recv, count, mat_type, mat_op, comm);
  check_mats(where, "MPI_Allreduce_c, matrix product", recv, 3, 0, n, call);
  call = ++call_no;
  for (int i = 0; i < 3; ++i) send[i] = mat_of(me, i, call);
  expect(0, SCAN, comm, 1);
  MPI_Scan_c(send, recv, count, mat_type, mat_op, comm);
  check_mats(where, "MPI_Scan_c, matrix product", recv, 3, 0, me + 1, call);
  call = ++call_no;
  for (int i = 0; i < 3; ++i) send[i] = mat_of(me, i, call);
  MPI_Request req;
  expect(1, EXSCAN, comm, 1);
  MPI_Iexscan_c(send, recv, count, mat_type, mat_op, comm, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  if (me > 0) check_mats(where, "MPI_Iexscan_c, matrix product", recv, 3, 0, me, call);
  if (n == 1) return; /* as test_alltoallw */
  /* alltoallw_c: 2 int64 to every peer, MPI_Aint byte displacements */
  MPI_Count* counts = malloc(sizeof(MPI_Count) * (size_t)n);
  MPI_Aint* displs = malloc(sizeof(MPI_Aint) * (size_t)n);
  MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * (size_t)n);
  int64_t* out = malloc(16 * (size_t)n);
  int64_t* in = malloc(16 * (size_t)n);
  call = ++call_no;
  for (int p = 0; p < n; ++p) {
    counts[p] = 2, displs[p] = (MPI_Aint)(16 * p), types[p] = MPI_INT64_T;
    out[2 * p] = cross(me, p, 0, call), out[2 * p + 1] = cross(me, p, 1, call);
  }
  expect(0, ALLTOALLW, comm, 1);
  MPI_Alltoallw_c(out, counts, displs, types, in, counts, displs, types, comm);
  for (int p = 0; p < n; ++p) {
    mix(&in[2 * p], 16);
    if (in[2 * p] != cross(p, me, 0, call) || in[2 * p + 1] != cross(p, me, 1, call))
      FAIL("%s: MPI_Alltoallw_c: the block from rank %d is wrong", where, p);
  }
  free(types);
  /* alltoallv_c (served as alltoallw): 2 int64 to every peer, displacements in elements */
  call = ++call_no;
  for (int p = 0; p < n; ++p) {
    displs[p] = (MPI_Aint)(2 * (n - 1 - p)); /* blocks in reverse peer order */
    out[2 * (n - 1 - p)] = cross(me, p, 0, call), out[2 * (n - 1 - p) + 1] = cross(me, p, 1, call);
  }
  expect(0, ALLTOALLV, comm, 1);
  MPI_Alltoallv_c(out, counts, displs, MPI_INT64_T, in, counts, displs, MPI_INT64_T, comm);
  for (int p = 0; p < n; ++p) {
    const int64_t* got = &in[2 * (n - 1 - p)];
    mix(got, 16);
    if (got[0] != cross(p, me, 0, call) || got[1] != cross(p, me, 1, call))
      FAIL("%s: MPI_Alltoallv_c: the block from rank %d is wrong", where, p);
  }
  /* the calls of one count per side: bcast_c, allgather_c, igather_c */
  call = ++call_no;
  int64_t word = me == 0 ? cross(0, 0, 7, call) : 0;
  expect(0, BCAST, comm, 1);
  MPI_Bcast_c(&word, 1, MPI_INT64_T, 0, comm);
  mix(&word, 8);
  if (word != cross(0, 0, 7, call)) FAIL("%s: MPI_Bcast_c: %lld", where, (long long)word);
  int64_t mine2[2] = {cross(me, 0, 0, call), cross(me, 0, 1, call)};
  expect(0, ALLGATHER, comm, 1);
  MPI_Allgather_c(mine2, 2, MPI_INT64_T, in, 2, MPI_INT64_T, comm);
  for (int p = 0; p < n; ++p) {
    mix(&in[2 * p], 16);
    if (in[2 * p] != cross(p, 0, 0, call) || in[2 * p + 1] != cross(p, 0, 1, call))
      FAIL("%s: MPI_Allgather_c: the block of rank %d is wrong", where, p);
  }
  expect(1, GATHER, comm, 1);
  MPI_Igather_c(mine2, 2, MPI_INT64_T, in, 2, MPI_INT64_T, n - 1, comm, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  for (int p = 0; me == n - 1 && p < n; ++p) {
    mix(&in[2 * p], 16);
    if (in[2 * p] != cross(p, 0, 0, call) || in[2 * p + 1] != cross(p, 0, 1, call))
      FAIL("%s: MPI_Igather_c: the block of rank %d is wrong", where, p);
  }
  free(counts), free(displs), free(out), free(in);
#else
  (void)comm, (void)where;
#endif
}

static void test_all(MPI_Comm comm, const char* where) {
  test_scans(comm, where);
  test_user_ops(comm, where);
  test_alltoallw(comm, where);
  test_large_count(comm, where);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], "--starts")) starts = atoi(argv[i + 1]);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Type_contiguous(4, MPI_INT64_T, &mat_type);
  MPI_Type_commit(&mat_type);
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &gapped_int);
  MPI_Type_commit(&gapped_int);
  MPI_Op_create(mat_product, 0, &mat_op);
  MPI_Op_create(int_sum, 1, &sum_op);
  MPI_Op_create(strided_sum, 1, &gapped_op);

  test_all(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm reversed;  /* every rank, in the reverse of the world's order */
  MPI_Comm_split(MPI_COMM_WORLD, 0, -world_rank, &reversed);
  test_all(reversed, "every rank, reversed");
  MPI_Comm_free(&reversed);
  /* Each rank alone: every call MPI's own (one rank), after the served
   * persistent calls above were freed (MPICH 4.0.2 hung here while the
   * library's persistent requests were receives from MPI_PROC_NULL). */
  MPI_Comm alone;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &alone);
  test_all(alone, "each rank alone");
  MPI_Comm_free(&alone);

  MPI_Op_free(&mat_op);
  MPI_Op_free(&sum_op);
  MPI_Op_free(&gapped_op);
  MPI_Type_free(&mat_type);
  MPI_Type_free(&gapped_int);

  int wrong = 0;
  MPI_Allreduce(&errors, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  expect(0, ALLREDUCE, MPI_COMM_WORLD, 1);
  if (world_rank == 0) printf("scan correct: %d wrong\n", wrong);
  char head[64];
  snprintf(head, sizeof head, "digest: rank %d: %016llx\n", world_rank, (unsigned long long)digest);
  print_expected_forms(expected_forms, head, world_rank, world_size);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
