/* The MPI interposition library (src/mpi, docs/mpi.md) from an unmodified MPI
 * program: every served collective checked byte for byte, over datatypes from
 * int8 to double and a contiguous derived type, counts 0, 1, 7 and 1500,
 * MPI_IN_PLACE, roots other than 0, uneven MPI_Allgatherv counts with packed
 * and scattered displacements, on MPI_COMM_WORLD and sub-communicators (even
 * and odd ranks, reversed order, MPI_Comm_split_type, MPI_Comm_dup); a vector
 * type (packed by the library; tests/mpi/mpi_layouts.c has every layout);
 * a call MPI must serve (a user-defined operator made past the library) gives MPI's result; communicators freed and made again in a loop
 * leave the open files, threads and railcoll shared-memory mappings as they
 * were; communicators and datatypes made on freed ones' handles are taken for
 * what they are.
 *
 * It runs the same with or without the library. At the end each rank prints
 * what the library's report (RAILCOLL_MPI_VERBOSE=1) should say with it,
 *   railcoll-mpi-expect: rank R: MPI_Allgather railcoll=N mpi=M
 * from what the program knows: which calls railcoll may serve,
 * RAILCOLL_MPI_COLLS (the thread level changes nothing: MPI_THREAD_MULTIPLE is served). tests/mpi/test_mpi_layer.sh compares the two.
 *
 *   usage: mpi_collectives [--thread-multiple] [--loops N]
 * Exit status 0 when every byte was right and nothing was left behind. */
#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

static int selected[NCOLL];     /* RAILCOLL_MPI_COLLS, as the library reads it */
static int world_rank, errors;

static void expect(int coll, MPI_Comm comm, int railcoll_can) {
  int size;
  MPI_Comm_size(comm, &size);
  expected[coll][railcoll_can && selected[coll] && size > 1]++;
}

static void read_selection(void) {
  const char* v = getenv("RAILCOLL_MPI_COLLS");
  for (int c = 0; c < NCOLL; ++c) selected[c] = !v || !*v;
  if (!v || !*v) return;
  char list[256];
  snprintf(list, sizeof list, "%s", v);
  for (char* name = strtok(list, ","); name; name = strtok(NULL, ","))
    for (int c = 0; c < NCOLL; ++c)
      if (!strcmp(name, kEnv[c]) || !strcmp(name, "all")) selected[c] = 1;
}

/* ---- data ---- */
static void fill(unsigned char* p, uint64_t n, int rank, int call) {
  for (uint64_t j = 0; j < n; ++j) p[j] = pattern(rank, j, call);
}
/* The first wrong byte of rank `rank`'s pattern in p[0, n), or -1. */
static long wrong(const unsigned char* p, uint64_t n, int rank, int call) {
  for (uint64_t j = 0; j < n; ++j)
    if (p[j] != pattern(rank, j, call)) return (long)j;
  return -1;
}
static int untouched(const unsigned char* p, uint64_t n) {
  for (uint64_t j = 0; j < n; ++j)
    if (p[j] != 0xEE) return 0;
  return 1;
}

typedef struct {
  const char* name;
  MPI_Datatype type;
  int size; /* bytes per element */
} Type;
static Type types[8];
static int ntypes;
static const int kCounts[] = {0, 1, 7, 1500};
#define NCOUNTS 4

static void make_types(void) {
  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_INT, &triple);
  MPI_Type_commit(&triple);
  Type t[] = {{"int8", MPI_INT8_T, 1},  {"int16", MPI_SHORT, 2},  {"int32", MPI_INT, 4},
              {"int64", MPI_INT64_T, 8}, {"float", MPI_FLOAT, 4}, {"double", MPI_DOUBLE, 8},
              {"contiguous(3,int)", triple, 12}};
  ntypes = (int)(sizeof t / sizeof t[0]);
  memcpy(types, t, sizeof t);
}

static int call_no;

/* ---- the data-moving collectives ---- */
static void test_allgather(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  for (int t = 0; t < ntypes; ++t)
    for (int k = 0; k < NCOUNTS; ++k)
      for (int in_place = 0; in_place < 2; ++in_place) {
        const int count = kCounts[k];
        const uint64_t block = (uint64_t)count * (uint64_t)types[t].size;
        unsigned char* send = malloc(block + 1);
        unsigned char* recv = malloc(block * (uint64_t)n + 1);
        ++call_no;
        memset(recv, 0xEE, block * (uint64_t)n);
        if (in_place) fill(recv + (uint64_t)me * block, block, me, call_no);
        else fill(send, block, me, call_no);
        expect(ALLGATHER, comm, 1);
        MPI_Allgather(in_place ? MPI_IN_PLACE : send, count, types[t].type, recv, count, types[t].type, comm);
        for (int r = 0; r < n; ++r) {
          long j = wrong(recv + (uint64_t)r * block, block, r, call_no);
          if (j >= 0)
            FAIL("%s: MPI_Allgather %s x %d%s: byte %ld of rank %d's block", where, types[t].name, count,
                 in_place ? " in place" : "", j, r);
        }
        free(send);
        free(recv);
      }
}

static void test_allgatherv(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  int* counts = malloc(sizeof(int) * n);
  int* displs = malloc(sizeof(int) * n);
  for (int t = 0; t < ntypes; ++t)
    for (int layout = 0; layout < 2; ++layout) /* 0: packed, 1: reversed with gaps */
      for (int in_place = 0; in_place < 2; ++in_place) {
        const int esize = types[t].size;
        int most = 0, total = 0;
        for (int r = 0; r < n; ++r) {
          counts[r] = (r * 5 + 3) % 4 * (t + 1); /* uneven: 3, 0, 1, 2, ... */
          if (counts[r] > most) most = counts[r];
          total += counts[r];
        }
        int slots = layout ? n * (most + 2) : total;
        for (int r = 0, at = 0; r < n; ++r) {
          displs[r] = layout ? (n - 1 - r) * (most + 2) + 1 : at;
          at += counts[r];
        }
        unsigned char* send = malloc((uint64_t)counts[me] * esize + 1);
        unsigned char* recv = malloc((uint64_t)slots * esize + 1);
        ++call_no;
        memset(recv, 0xEE, (uint64_t)slots * esize);
        unsigned char* mine = recv + (uint64_t)displs[me] * esize;
        if (in_place) fill(mine, (uint64_t)counts[me] * esize, me, call_no);
        else fill(send, (uint64_t)counts[me] * esize, me, call_no);
        expect(ALLGATHERV, comm, 1);
        MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, counts[me], types[t].type, recv, counts, displs, types[t].type,
                       comm);
        /* Every block in place, every byte between them untouched. */
        unsigned char* covered = calloc((size_t)slots * esize + 1, 1);
        for (int r = 0; r < n; ++r) {
          uint64_t at = (uint64_t)displs[r] * esize, len = (uint64_t)counts[r] * esize;
          long j = wrong(recv + at, len, r, call_no);
          if (j >= 0)
            FAIL("%s: MPI_Allgatherv %s %s%s: byte %ld of rank %d's block", where, types[t].name,
                 layout ? "scattered" : "packed", in_place ? " in place" : "", j, r);
          memset(covered + at, 1, len);
        }
        for (uint64_t j = 0; j < (uint64_t)slots * esize; ++j)
          if (!covered[j] && recv[j] != 0xEE) {
            FAIL("%s: MPI_Allgatherv %s: byte %llu between blocks was written", where, types[t].name,
                 (unsigned long long)j);
            break;
          }
        free(covered);
        free(send);
        free(recv);
      }
  free(counts);
  free(displs);
}

static void test_bcast(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  for (int t = 0; t < ntypes; ++t)
    for (int k = 0; k < NCOUNTS; ++k)
      for (int root = 0; root < n; root += n > 1 ? n - 1 : 1) {
        const uint64_t bytes = (uint64_t)kCounts[k] * types[t].size;
        unsigned char* buf = malloc(bytes + 1);
        ++call_no;
        if (me == root) fill(buf, bytes, root, call_no);
        else memset(buf, 0xEE, bytes);
        expect(BCAST, comm, 1);
        MPI_Bcast(buf, kCounts[k], types[t].type, root, comm);
        long j = wrong(buf, bytes, root, call_no);
        if (j >= 0) FAIL("%s: MPI_Bcast %s x %d from %d: byte %ld", where, types[t].name, kCounts[k], root, j);
        free(buf);
      }
}

static void test_gather(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  for (int t = 0; t < ntypes; ++t)
    for (int k = 0; k < NCOUNTS; ++k)
      for (int root = 0; root < n; root += n > 1 ? n - 1 : 1)
        for (int in_place = 0; in_place < 2; ++in_place) {
          const int count = kCounts[k];
          const uint64_t block = (uint64_t)count * types[t].size;
          unsigned char* send = malloc(block + 1);
          unsigned char* recv = malloc(block * n + 1);
          const int root_in_place = in_place && me == root;
          ++call_no;
          memset(recv, 0xEE, block * n);
          if (root_in_place) fill(recv + (uint64_t)me * block, block, me, call_no);
          else fill(send, block, me, call_no);
          expect(GATHER, comm, 1);
          MPI_Gather(root_in_place ? MPI_IN_PLACE : send, count, types[t].type, recv, count, types[t].type, root, comm);
          if (me == root) {
            for (int r = 0; r < n; ++r) {
              long j = wrong(recv + (uint64_t)r * block, block, r, call_no);
              if (j >= 0)
                FAIL("%s: MPI_Gather %s x %d to %d%s: byte %ld of rank %d's block", where, types[t].name, count,
                     root, in_place ? " in place" : "", j, r);
            }
          } else if (!untouched(recv, block * n)) {
            FAIL("%s: MPI_Gather wrote into a non-root's recvbuf", where);
          }
          free(send);
          free(recv);
        }
}

/* ---- reductions: small integers, exact in every type and in any order ---- */
static int64_t value(int rank, int i, int call) { return (int64_t)((rank * 37 + i * 11 + call) % 10) - 4; }

static void store(void* p, int i, MPI_Datatype type, int64_t v) {
  if (type == MPI_INT) ((int*)p)[i] = (int)v;
  else if (type == MPI_INT64_T) ((int64_t*)p)[i] = v;
  else if (type == MPI_LONG) ((long*)p)[i] = (long)v;
  else if (type == MPI_FLOAT) ((float*)p)[i] = (float)v;
  else if (type == MPI_DOUBLE) ((double*)p)[i] = (double)v;
  else if (type == MPI_INT8_T) ((int8_t*)p)[i] = (int8_t)v;
  else if (type == MPI_SHORT) ((short*)p)[i] = (short)v;
}
static int64_t load(const void* p, int i, MPI_Datatype type) {
  if (type == MPI_INT) return ((const int*)p)[i];
  if (type == MPI_INT64_T) return ((const int64_t*)p)[i];
  if (type == MPI_LONG) return ((const long*)p)[i];
  if (type == MPI_FLOAT) return (int64_t)((const float*)p)[i];
  if (type == MPI_DOUBLE) return (int64_t)((const double*)p)[i];
  if (type == MPI_INT8_T) return ((const int8_t*)p)[i];
  return ((const short*)p)[i];
}

static void user_sum(void* in, void* inout, int* len, MPI_Datatype* type) {
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

typedef struct {
  const char* name;
  MPI_Datatype type;
  int railcoll; /* the library may serve it */
} ReduceType;

static void test_allreduce(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  MPI_Op mine_op, past_op;
  MPI_Op_create(user_sum, 1, &mine_op);
  /* Made past the library (as Open MPI's Fortran bindings make theirs): it
   * cannot know the function, and MPI serves it. */
  PMPI_Op_create(user_sum, 1, &past_op);
  /* Every operator but the one made past the library is railcoll's
   * (tests/mpi/mpi_reductions.c has every type and operator, tests/mpi/mpi_scan.c
   * more user-defined ones). */
  ReduceType rts[] = {{"int32", MPI_INT, 1},   {"int64", MPI_INT64_T, 1}, {"long", MPI_LONG, 1},
                      {"float", MPI_FLOAT, 1}, {"double", MPI_DOUBLE, 1}, {"int8", MPI_INT8_T, 1},
                      {"int16", MPI_SHORT, 1}};
  const MPI_Op ops[] = {MPI_SUM, MPI_MIN, MPI_MAX, MPI_PROD, mine_op, past_op};
  const char* op_names[] = {"sum", "min", "max", "prod", "user-defined sum", "user-defined sum made past the library (MPI serves it)"};
  for (size_t t = 0; t < sizeof rts / sizeof rts[0]; ++t)
    for (int o = 0; o < 6; ++o)
      for (int k = 0; k < NCOUNTS; ++k)
        for (int in_place = 0; in_place < 2; ++in_place) {
          /* Products of up to 64 factors of at most 5 in magnitude: exact in int64 and double only. */
          if (o == 3 && ((rts[t].type != MPI_INT64_T && rts[t].type != MPI_DOUBLE) || kCounts[k] > 7 || n > 16))
            continue;
          if (o >= 4 && rts[t].type != MPI_INT) continue;
          const int count = kCounts[k], elems = count;
          int esize;
          MPI_Type_size(rts[t].type, &esize);
          char* send = malloc((size_t)elems * esize + 1);
          char* recv = malloc((size_t)elems * esize + 1);
          ++call_no;
          for (int i = 0; i < elems; ++i) store(in_place ? recv : send, i, rts[t].type, value(me, i, call_no));
          expect(ALLREDUCE, comm, rts[t].railcoll && o < 5);
          MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, rts[t].type, ops[o], comm);
          for (int i = 0; i < elems; ++i) {
            int64_t want = value(0, i, call_no);
            for (int r = 1; r < n; ++r) {
              int64_t v = value(r, i, call_no);
              want = o == 0 || o >= 4 ? want + v : o == 1 ? (v < want ? v : want) : o == 2 ? (v > want ? v : want)
                                                                                           : want * v;
            }
            if (load(recv, i, rts[t].type) != want) {
              FAIL("%s: MPI_Allreduce %s %s x %d%s: element %d is %lld, expected %lld", where, rts[t].name,
                   op_names[o], count, in_place ? " in place" : "", i, (long long)load(recv, i, rts[t].type),
                   (long long)want);
              break;
            }
          }
          free(send);
          free(recv);
        }
  MPI_Op_free(&mine_op);
  MPI_Op_free(&past_op);
}

/* A datatype with gaps on one side of the call: railcoll serves it, packed. */
static void test_vector(MPI_Comm comm, const char* where) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  MPI_Datatype every_other;
  MPI_Type_vector(4, 1, 2, MPI_INT, &every_other); /* ints 0, 2, 4, 6 of 7 */
  MPI_Type_commit(&every_other);
  int buf[7], all[4 * 64];
  ++call_no;
  for (int i = 0; i < 7; ++i) buf[i] = i % 2 ? -1 : me * 100 + i;
  expect(ALLGATHER, comm, 1);
  MPI_Allgather(buf, 1, every_other, all, 4, MPI_INT, comm);
  for (int r = 0; r < n && r < 64; ++r)
    for (int i = 0; i < 4; ++i)
      if (all[r * 4 + i] != r * 100 + 2 * i) FAIL("%s: MPI_Allgather of a vector type: rank %d's int %d", where, r, i);
  const int root = n - 1;
  for (int i = 0; i < 7; ++i) buf[i] = me == root ? (i % 2 ? -1 : 1000 + i) : -7;
  expect(BCAST, comm, 1);
  MPI_Bcast(buf, 1, every_other, root, comm);
  for (int i = 0; i < 7; ++i)
    if (buf[i] != (i % 2 ? (me == root ? -1 : -7) : 1000 + i)) FAIL("%s: MPI_Bcast of a vector type: int %d", where, i);
  MPI_Type_free(&every_other);
}

static void test_barrier(MPI_Comm comm) {
  expect(BARRIER, comm, 1);
  MPI_Barrier(comm);
}

static void test_all(MPI_Comm comm, const char* where) {
  test_allgather(comm, where);
  test_allgatherv(comm, where);
  test_bcast(comm, where);
  test_gather(comm, where);
  test_allreduce(comm, where);
  test_vector(comm, where);
  test_barrier(comm);
}

/* The library keeps the latest communicators' and datatypes' facts by handle;
 * MPI gives a freed handle to the next object it makes. Objects of another
 * kind made where freed ones were must be taken for what they are: a split
 * of half the ranks where a duplicate of all was, a type with gaps where a
 * contiguous one was (and the other way round). Says how many handles MPI
 * did reuse, so a run that tested nothing shows. */
static void test_handle_reuse(int loops) {
  int reused_comms = 0, reused_types = 0;
  MPI_Comm last_comm = MPI_COMM_NULL;
  MPI_Datatype last_type = MPI_DATATYPE_NULL;
  for (int i = 0; i < 2 * loops; ++i) {
    MPI_Comm comm;
    if (i % 2) MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &comm);
    else MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    reused_comms += comm == last_comm;
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    /* 4 ints where 7 lie: a contiguous type, then one with gaps between them. */
    MPI_Datatype type;
    if (i % 2) MPI_Type_vector(4, 1, 2, MPI_INT, &type);
    else MPI_Type_contiguous(4, MPI_INT, &type);
    MPI_Type_commit(&type);
    reused_types += type == last_type;
    const int gaps = i % 2, root = i % n;
    int buf[7];
    ++call_no;
    for (int k = 0; k < 7; ++k) buf[k] = me == root ? 1000 * i + k : gaps && k % 2 ? -1 : -7;
    expect(BCAST, comm, 1);
    MPI_Bcast(buf, 1, type, root, comm);
    for (int k = 0; k < 7; ++k) {
      const int in_data = gaps ? k % 2 == 0 : k < 4;
      const int want = me == root || in_data ? 1000 * i + k : gaps ? -1 : -7;
      if (buf[k] != want) FAIL("handle reuse %d: MPI_Bcast of %s on %d ranks: int %d is %d, expected %d", i,
                               gaps ? "a vector type" : "a contiguous type", n, k, buf[k], want);
    }
    int x = me + i, sum = 0;
    expect(ALLREDUCE, comm, 1);
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (sum != n * (n - 1) / 2 + n * i) FAIL("handle reuse %d: MPI_Allreduce on %d ranks: %d", i, n, sum);
    last_comm = comm;
    last_type = type;
    MPI_Type_free(&type);
    MPI_Comm_free(&comm);
  }
  if (world_rank == 0)
    printf("handle reuse: %d communicators and types made and freed, handles reused %d and %d times\n", 2 * loops,
           reused_comms, reused_types);
}

/* ---- what a process holds ---- */
static int entries(const char* dir) {
  int n = 0;
  DIR* d = opendir(dir);
  if (!d) return -1;
  while (readdir(d)) ++n;
  closedir(d);
  return n;
}
static int shm_maps(void) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[1024];
  int n = 0;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) n += strstr(line, "/dev/shm/railcoll") != NULL;
  fclose(f);
  return n;
}
typedef struct {
  int files, threads, maps;
} Holdings;
static Holdings holdings(void) {
  Holdings h = {entries("/proc/self/fd"), entries("/proc/self/task"), shm_maps()};
  return h;
}

/* Communicators made, used and freed again and again: nothing accumulates. */
static void test_free_loop(int loops) {
  Holdings before = {0, 0, 0};
  for (int i = 0; i <= loops; ++i) {
    if (i == 1) before = holdings(); /* after the first round: MPI's own lazy allocations are made */
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    int n, x = world_rank + i, sum = 0;
    MPI_Comm_size(dup, &n);
    int* all = malloc(sizeof(int) * n);
    expect(ALLGATHER, dup, 1);
    MPI_Allgather(&x, 1, MPI_INT, all, 1, MPI_INT, dup);
    for (int r = 0; r < n; ++r)
      if (all[r] != r + i) FAIL("free loop %d: MPI_Allgather on a duplicate: rank %d's int", i, r);
    expect(ALLREDUCE, half, 1);
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, half);
    int want = 0;
    for (int r = world_rank % 2; r < n; r += 2) want += r + i;
    if (sum != want) FAIL("free loop %d: MPI_Allreduce on a split: %d, expected %d", i, sum, want);
    free(all);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
  }
  Holdings after = holdings();
  if (loops > 0 && (after.files != before.files || after.threads != before.threads || after.maps != before.maps))
    FAIL("after %d communicators made and freed: open files %d -> %d, threads %d -> %d, railcoll mappings %d -> %d",
         2 * loops, before.files, after.files, before.threads, after.threads, before.maps, after.maps);
  else if (world_rank == 0)
    printf("free loop: %d communicators made and freed, open files %d, threads %d, railcoll mappings %d before and "
           "after\n",
           2 * loops, after.files, after.threads, after.maps);
}

int main(int argc, char** argv) {
  int loops = 10, want_multiple = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--thread-multiple")) want_multiple = 1;
    else if (!strcmp(argv[i], "--loops") && i + 1 < argc) loops = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: mpi_collectives [--thread-multiple] [--loops N]\n");
      return 2;
    }
  }
  int provided = MPI_THREAD_SINGLE;
  if (want_multiple) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  else MPI_Init(&argc, &argv);
  if (want_multiple && provided != MPI_THREAD_MULTIPLE) fprintf(stderr, "note: MPI_THREAD_MULTIPLE asked, %d provided\n", provided);
  read_selection();
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  make_types();

  test_all(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm parity, reversed, node, dup;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &parity);
  test_all(parity, world_rank % 2 ? "odd ranks" : "even ranks");
  MPI_Comm_split(MPI_COMM_WORLD, 0, -world_rank, &reversed);
  test_all(reversed, "reversed ranks");
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  test_all(node, "MPI_Comm_split_type");
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  test_all(dup, "MPI_Comm_dup");
  MPI_Comm_free(&dup);
  MPI_Comm_free(&node);
  MPI_Comm_free(&reversed);
  MPI_Comm_free(&parity);
  test_free_loop(loops);
  test_handle_reuse(loops);

  /* The library's report comes from MPI_Finalize; ours first (with the sum below). */
  expect(ALLREDUCE, MPI_COMM_WORLD, 1);
  print_expected(world_rank);
  int all_errors = 0;
  MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  fflush(stdout);
  MPI_Type_free(&types[ntypes - 1].type);
  MPI_Finalize();
  /* The verdict after MPI_Finalize: a crash or hang there must fail the test. */
  if (world_rank == 0) printf("%s: %d wrong\n", all_errors ? "FAILED" : "collectives correct", all_errors);
  return all_errors ? 1 : 0;
}
