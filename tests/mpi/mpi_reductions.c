/* The reductions of the MPI interposition library (src/mpi/reductions.cpp,
 * docs/mpi.md): MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter over every predefined type MPI's operators take
 * (signed and unsigned integers of 8 to 64 bits, float, double, C bool,
 * MPI_BYTE) and every operator MPI defines on it (sum, prod, min, max, the
 * logical and the bitwise ones), every root, in place, counts 0, 1, 7 and
 * 1000 (uneven and zero MPI_Reduce_scatter counts), on MPI_COMM_WORLD and a
 * split. Every element is compared with the result computed here. A
 * user-defined operator is railcoll's, calling the program's function; MPI_MAXLOC on
 * MPI_DOUBLE_INT is railcoll's.
 *
 * Like mpi_collectives, it prints what the library's report must say
 * ("railcoll-mpi-expect: ..."), which tests/mpi/test_mpi_layer.sh compares. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int world_rank, errors, call_no;

static void expect(int coll, MPI_Comm comm, int railcoll_can) {
  int n;
  MPI_Comm_size(comm, &n);
  expected[coll][railcoll_can && n > 1]++;
}

/* ---- types and operators ---- */
typedef enum { SINT, UINT, FLT, BOOL, BYTE } Kind;
typedef struct {
  const char* name;
  MPI_Datatype type;
  Kind kind;
  int size;
} Type;
typedef enum { SUM, PROD, MIN, MAX, LAND, LOR, LXOR, BAND, BOR, BXOR, NOPS } Op;
static const char* const kOpNames[NOPS] = {"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor"};
static MPI_Op mpi_op(Op o) {
  const MPI_Op ops[NOPS] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
  return ops[o];
}
/* MPI 4.0 §6.9.2: which groups each operator takes. */
static int defined(Op o, Kind k) {
  if (o <= MAX) return k == SINT || k == UINT || k == FLT;
  if (o <= LXOR) return k == SINT || k == UINT || k == BOOL;
  return k == SINT || k == UINT || k == BYTE;
}

/* Element i of rank r's input: small, so sums of up to 16 ranks stay in every
 * type's range and products of at most 6 twos too. */
static int64_t input(int r, int i, int call, Op o) {
  if (o == PROD) return (r + i + call) % 3 == 0 ? 2 : 1;
  if (o >= LAND && o <= LXOR) return (r * 3 + i + call) % 4 == 0;
  if (o >= BAND) return (int64_t)pattern(r, (uint64_t)i, call);
  return (r * 5 + i * 3 + call) % 8;
}
static int64_t combine(Op o, int64_t a, int64_t b) {
  switch (o) {
    case SUM: return a + b;
    case PROD: return a * b;
    case MIN: return a < b ? a : b;
    case MAX: return a > b ? a : b;
    case LAND: return a && b;
    case LOR: return a || b;
    case LXOR: return !a != !b;
    case BAND: return a & b;
    case BOR: return a | b;
    default: return a ^ b;
  }
}
static void store(const Type* t, void* p, int i, int64_t v) {
  char* at = (char*)p + (size_t)i * t->size;
  if (t->kind == FLT) {
    if (t->size == 4) *(float*)at = (float)v;
    else *(double*)at = (double)v;
    return;
  }
  uint64_t u = (uint64_t)v;
  memcpy(at, &u, (size_t)t->size); /* little-endian: the low bytes */
}
static int64_t load(const Type* t, const void* p, int i) {
  const char* at = (const char*)p + (size_t)i * t->size;
  if (t->kind == FLT) return t->size == 4 ? (int64_t) * (const float*)at : (int64_t) * (const double*)at;
  uint64_t u = 0;
  memcpy(&u, at, (size_t)t->size);
  if (t->kind == SINT && t->size < 8 && (u >> (8 * t->size - 1)) & 1) u |= ~0ull << (8 * t->size);
  return (int64_t)u;
}
/* The reduction over ranks 0..n-1 of element i, as the type holds it. */
static int64_t reduced(const Type* t, Op o, int n, int i, int call) {
  int64_t v = input(0, i, call, o);
  for (int r = 1; r < n; ++r) v = combine(o, v, input(r, i, call, o));
  char box[8];
  store(t, box, 0, v);
  return load(t, box, 0);
}

static Type types[24];
static int ntypes;
static void make_types(void) {
  const Type t[] = {{"signed char", MPI_SIGNED_CHAR, SINT, 1}, {"unsigned char", MPI_UNSIGNED_CHAR, UINT, 1},
                    {"short", MPI_SHORT, SINT, 2},             {"unsigned short", MPI_UNSIGNED_SHORT, UINT, 2},
                    {"int", MPI_INT, SINT, 4},                 {"unsigned", MPI_UNSIGNED, UINT, 4},
                    {"long", MPI_LONG, SINT, 8},               {"unsigned long", MPI_UNSIGNED_LONG, UINT, 8},
                    {"long long", MPI_LONG_LONG, SINT, 8},     {"unsigned long long", MPI_UNSIGNED_LONG_LONG, UINT, 8},
                    {"int8_t", MPI_INT8_T, SINT, 1},           {"uint8_t", MPI_UINT8_T, UINT, 1},
                    {"int16_t", MPI_INT16_T, SINT, 2},         {"uint16_t", MPI_UINT16_T, UINT, 2},
                    {"int32_t", MPI_INT32_T, SINT, 4},         {"uint32_t", MPI_UINT32_T, UINT, 4},
                    {"int64_t", MPI_INT64_T, SINT, 8},         {"uint64_t", MPI_UINT64_T, UINT, 8},
                    {"float", MPI_FLOAT, FLT, 4},              {"double", MPI_DOUBLE, FLT, 8},
                    {"C bool", MPI_C_BOOL, BOOL, 1},           {"byte", MPI_BYTE, BYTE, 1}};
  ntypes = (int)(sizeof t / sizeof t[0]);
  memcpy(types, t, sizeof t);
}

static const int kCounts[] = {0, 1, 7, 1000};

static void fill_input(const Type* t, Op o, void* p, int me, int count, int call) {
  for (int i = 0; i < count; ++i) store(t, p, i, input(me, i, call, o));
}
static void check_result(const char* what, const Type* t, Op o, const void* p, int n, int first, int count, int call) {
  for (int i = 0; i < count; ++i) {
    int64_t want = reduced(t, o, n, first + i, call), got = load(t, p, i);
    if (got != want) {
      FAIL("%s: element %d is %lld, expected %lld", what, first + i, (long long)got, (long long)want);
      return;
    }
  }
}

static void check_type_op(MPI_Comm comm, const char* where, const Type* t, Op o) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  char what[200];
  for (size_t k = 0; k < sizeof kCounts / sizeof kCounts[0]; ++k) {
    const int count = kCounts[k];
    for (int in_place = 0; in_place < 2; ++in_place) {
      /* all-reduce */
      char* send = malloc((size_t)count * t->size * n + 8);
      char* recv = malloc((size_t)count * t->size * n + 8);
      ++call_no;
      fill_input(t, o, in_place ? recv : send, me, count, call_no);
      expect(ALLREDUCE, comm, 1);
      MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, t->type, mpi_op(o), comm);
      snprintf(what, sizeof what, "%s: MPI_Allreduce %s %s x %d%s", where, t->name, kOpNames[o], count,
               in_place ? " in place" : "");
      check_result(what, t, o, recv, n, 0, count, call_no);
      /* reduce, to the last rank and to rank 0 */
      for (int root = 0; root < n; root += n > 1 ? n - 1 : 1) {
        const int root_in_place = in_place && me == root;
        ++call_no;
        fill_input(t, o, root_in_place ? recv : send, me, count, call_no);
        expect(REDUCE, comm, 1);
        MPI_Reduce(root_in_place ? MPI_IN_PLACE : send, recv, count, t->type, mpi_op(o), root, comm);
        snprintf(what, sizeof what, "%s: MPI_Reduce %s %s x %d to %d%s", where, t->name, kOpNames[o], count, root,
                 root_in_place ? " in place" : "");
        if (me == root) check_result(what, t, o, recv, n, 0, count, call_no);
      }
      /* reduce_scatter_block: `count` elements each; the input n blocks of them */
      ++call_no;
      fill_input(t, o, in_place ? recv : send, me, count * n, call_no);
      expect(REDUCE_SCATTER_BLOCK, comm, 1);
      MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, count, t->type, mpi_op(o), comm);
      snprintf(what, sizeof what, "%s: MPI_Reduce_scatter_block %s %s x %d%s", where, t->name, kOpNames[o], count,
               in_place ? " in place" : "");
      check_result(what, t, o, recv, n, me * count, count, call_no);
      /* reduce_scatter: uneven counts, some zero */
      int* counts = malloc(sizeof(int) * n);
      int total = 0, first = 0;
      for (int r = 0; r < n; ++r) {
        counts[r] = count * ((r + 1) % 3) / 2;
        if (r < me) first += counts[r];
        total += counts[r];
      }
      ++call_no;
      fill_input(t, o, in_place ? recv : send, me, total, call_no);
      expect(REDUCE_SCATTER, comm, 1);
      MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : send, recv, counts, t->type, mpi_op(o), comm);
      snprintf(what, sizeof what, "%s: MPI_Reduce_scatter %s %s, %d of %d%s", where, t->name, kOpNames[o], counts[me],
               total, in_place ? " in place" : "");
      check_result(what, t, o, recv, n, first, counts[me], call_no);
      free(counts);
      free(send);
      free(recv);
    }
  }
}

static void user_max(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i)
    if (((int*)in)[i] > ((int*)inout)[i]) ((int*)inout)[i] = ((int*)in)[i];
}

/* A user-defined operator (railcoll's, calling the program's function) and
 * MPI_MAXLOC on a pair type (railcoll's: the greatest value, and the lowest
 * rank on a tie). */
static void check_user_op_and_maxloc(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  MPI_Op mine;
  MPI_Op_create(user_max, 1, &mine);
  int x = me * 3 % 7, best = -1;
  expect(ALLREDUCE, comm, 1);
  MPI_Allreduce(&x, &best, 1, MPI_INT, mine, comm);
  int want = 0;
  for (int r = 0; r < n; ++r) want = r * 3 % 7 > want ? r * 3 % 7 : want;
  if (best != want) FAIL("%s: MPI_Allreduce with a user-defined max: %d, expected %d", where, best, want);
  struct {
    double v;
    int rank;
  } in = {(double)(me * 5 % 3), me}, out = {0, -1};
  expect(REDUCE, comm, 1);
  MPI_Reduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, 0, comm);
  if (me == 0) {
    int at = 0;
    for (int r = 1; r < n; ++r)
      if (r * 5 % 3 > at * 5 % 3) at = r;
    if (out.rank != at || out.v != at * 5 % 3) FAIL("%s: MPI_Reduce MAXLOC: (%g, %d)", where, out.v, out.rank);
  }
  MPI_Op_free(&mine);
}

static void check_all(MPI_Comm comm, const char* where) {
  for (int t = 0; t < ntypes; ++t)
    for (int o = 0; o < NOPS; ++o)
      if (defined((Op)o, types[t].kind)) check_type_op(comm, where, &types[t], (Op)o);
  check_user_op_and_maxloc(comm, where);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  make_types();
  check_all(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm parity;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, -world_rank, &parity);
  check_all(parity, world_rank % 2 ? "odd ranks, reversed" : "even ranks, reversed");
  MPI_Comm_free(&parity);

  expect(ALLREDUCE, MPI_COMM_WORLD, 1);
  print_expected(world_rank);
  int all_errors = 0;
  MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  fflush(stdout);
  MPI_Finalize();
  /* The verdict after MPI_Finalize: a crash or hang there must fail the test. */
  if (world_rank == 0) printf("%s: %d wrong\n", all_errors ? "FAILED" : "collectives correct", all_errors);
  return all_errors ? 1 : 0;
}
