/* railcoll-mpi-bench: an OSU-style benchmark of Open MPI's MPI_Allgather,
 * MPI_Bcast, MPI_Gather, MPI_Allreduce, MPI_Barrier and the others of --coll,
 * blocking or (--nonblocking) MPI_Iallgather..., the baseline railcoll
 * is compared with (`railcoll bench --mpi`, and on the emulated cluster
 * `railcoll cluster mpirun -- railcoll-mpi-bench ...`, docs/cluster.md).
 *
 * Timing follows the OSU benchmarks: for each size, every call is preceded by
 * an MPI_Barrier and timed alone; with -c a second MPI_Barrier after the call
 * keeps validation out of every call's time. --coll barrier instead times
 * consecutive MPI_Barrier calls with nothing in between. Each rank records its
 * entry into and exit from every call on CLOCK_MONOTONIC. Each rank averages
 * its calls; avg/min/max are the mean/min/max of those per-rank averages, in
 * us. p50/p90/p99 are percentiles over calls of the slowest rank's time (a
 * call is done when its last rank is; railcoll bench reports the same).
 * own_p50/p90/p99/max are over every rank's own time of every call (OSU's -z
 * view: each rank a sample), and slow_calls counts those samples above 3x
 * own_p50. --skew US delays each rank's entry into each call by a random
 * 0..US us after the barrier (its own time starts at its entry), as an
 * application's imbalance does; railcoll bench --skew does the same.
 * span_p50/p90/p99 are percentiles over calls of the span, the last rank's
 * exit minus the first rank's entry: written only when every rank reads the
 * same clock (the same kernel and time namespace, as on the emulated
 * cluster), since differences of unrelated clocks mean nothing.
 *
 * Output: one JSON object per size on stdout, from rank 0 (one for barrier):
 * {"collective":NAME,"algorithm":LABEL,"bytes":B,"ranks":N,"nodes":M,"rails":K,"ppn":P,
 *  "avg_us":X,"min_us":X,"max_us":X,"p50_us":X,"p90_us":X,"p99_us":X,
 *  ["span_p50_us":X,"span_p90_us":X,"span_p99_us":X,]
 *  "own_p50_us":X,"own_p90_us":X,"own_p99_us":X,"own_max_us":X,"slow_calls":N,"idle_us":N,"skew_us":N,
 *  "iterations":N,"validated":true|false[,"samples_us":[X,...]]}
 * bytes: per rank for allgather and gather, the message for bcast, the vector
 * for allreduce (a multiple of 4: bytes/4 floats), 0 for barrier. ppn: the
 * most ranks on one node. samples_us (--samples): the slowest rank's time of
 * every timed call, in call order.
 *
 * --nonblocking (OSU's osu_iallgather, osu_iallreduce, osu_ibcast, ...): the
 * nonblocking form, MPI_I<coll> + MPI_Wait, timed call by call alternating
 * with the blocking one (either first in turn), then the overlap run: MPI_I<coll>,
 * a busy loop as long as this rank's mean MPI_I<coll> + MPI_Wait that calls
 * nothing of MPI (src/bench/busy_compute.h, railcoll bench's too), MPI_Wait.
 * Every call of the three, with -c, checked. The record's times are then
 * MPI_I<coll> + MPI_Wait's, and it adds
 *  "form":"nonblocking","blocking_avg_us":X,"blocking_p50_us":X,"blocking_p99_us":X,
 *  "overall_avg_us":X,"overall_p50_us":X,"overall_p99_us":X,"compute_avg_us":X,
 *  "post_avg_us":X,"wait_avg_us":X,"overlap_pct":X,"overlap_p50_pct":X
 * (blocking_* and overall_* as avg/p50/p99; compute, post, wait: means over
 * ranks of each rank's mean; overlap_pct = max(0, 100 (1 - (overall_avg -
 * compute_avg) / avg)) as OSU; overlap_p50_pct the same from the median over
 * ranks x calls of overall - compute against own_p50).
 *
 * Exit status: 0 ok, 1 a validation error or out of memory, 2 bad usage. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "busy_compute.h"
#include "clock.h"

/* Large sizes run fewer calls: at most kCapBytes received by the busiest rank
 * per size (but at least kMinLargeIters calls, and never more than -i).
 * --full turns this off. Allgather with 16 ranks: 1 MiB per rank -> 16 calls
 * instead of 100. */
static const uint64_t kCapBytes = 256ull << 20;
static const int kMinLargeIters = 10;

typedef enum {
  COLL_ALLGATHER, COLL_BCAST, COLL_GATHER, COLL_ALLREDUCE,
  COLL_REDUCE_SCATTER_BLOCK, COLL_REDUCE, /* the reduction family */
  COLL_BARRIER,
  COLL_ALLTOALL, COLL_ALLTOALLV, COLL_SCATTER, COLL_SCATTERV, COLL_GATHERV, /* personalised data */
  COLL_COUNT
} Collective;
static const char* const kCollectiveNames[COLL_COUNT] = {
    "allgather", "bcast",    "gather",    "allreduce", "reduce_scatter_block", "reduce",
    "barrier",   "alltoall", "alltoallv", "scatter",   "scatterv",             "gatherv"};
/* Collectives that sum floats: sizes are whole floats, -c checks exact sums. */
static int sums_floats(Collective c) {
  return c == COLL_ALLREDUCE || c == COLL_REDUCE_SCATTER_BLOCK || c == COLL_REDUCE;
}

/* Defaults of -i and -x: barrier calls are short, so many more of them. */
static const int kDefaultIters = 100, kDefaultBarrierIters = 10000;
static const int kDefaultWarmup = 10, kDefaultBarrierWarmup = 100;

typedef struct {
  Collective coll;
  uint64_t min_bytes, max_bytes;
  int iters, warmup; /* 0 and -1 until set by -i / -x or the collective's default */
  int check, full, samples, rails;
  int nonblocking; /* MPI_I<coll> + MPI_Wait and OSU's overlap (--nonblocking) */
  uint64_t idle_us; /* idle time before each timed call's barrier (--idle-us) */
  uint64_t skew_us; /* each rank's entry delayed by a random 0..skew_us after the barrier (--skew) */
  const char* label;
} Options;

static void usage(FILE* f) {
  fprintf(f,
          "usage: railcoll-mpi-bench [--coll NAME] [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-c] [--full]\n"
          "                          [--samples] [--label NAME] [--rails K] [--idle-us N] [--skew US]\n"
          "                          [--nonblocking]\n"
          "  --coll NAME   the collective (default allgather):\n"
          "                  allgather  MPI_Allgather of MIN..MAX bytes from every rank\n"
          "                  bcast      MPI_Bcast of MIN..MAX bytes from rank 0\n"
          "                  gather     MPI_Gather of MIN..MAX bytes from every rank to rank 0\n"
          "                  allreduce  MPI_Allreduce, MPI_SUM of bytes/4 floats (sizes rounded\n"
          "                             up to a multiple of 4 bytes)\n"
          "                  reduce_scatter_block  MPI_Reduce_scatter_block, MPI_SUM: each rank\n"
          "                             ends with a block of bytes/4 floats (sends size x that)\n"
          "                  reduce     MPI_Reduce, MPI_SUM of bytes/4 floats to rank 0\n"
          "                  barrier    MPI_Barrier: one record with bytes 0; -m is ignored\n"
          "                  alltoall   MPI_Alltoall of MIN..MAX bytes from every rank to every rank\n"
          "                  alltoallv  MPI_Alltoallv, the same counts to every rank, packed\n"
          "                  scatter    MPI_Scatter of MIN..MAX bytes to every rank from rank 0\n"
          "                  scatterv   MPI_Scatterv, the same counts, packed\n"
          "                  gatherv    MPI_Gatherv, the same counts, packed\n"
          "  -m MIN:MAX    sizes in bytes, powers of two from MIN to MAX (default 8:1048576)\n"
          "  -i ITERS      timed calls per size (default 100, barrier 10000; large sizes run\n"
          "                fewer, at most 256 MiB received by a rank per size but at least 10,\n"
          "                unless --full)\n"
          "  -x WARMUP     untimed calls first (default 10, barrier 100; fewer when large\n"
          "                sizes run fewer calls)\n"
          "  -c            validate every call: byte patterns, exact float sums for allreduce\n"
          "  --full        run -i and -x calls at every size\n"
          "  --samples     add \"samples_us\": the slowest rank's time of every timed call\n"
          "  --label NAME  the \"algorithm\" field, e.g. mpi:tuned or mpi:han (default mpi)\n"
          "  --rails K     rails in use, copied to the output (default: the count in\n"
          "                RAILCOLL_RAILS, else 1)\n"
          "  --idle-us N   sleep N us before each call's barrier (default 0), so every call\n"
          "                finds the rails idle: a shaper's burst refilled, as railcoll bench does\n"
          "  --skew US     after each call's barrier, each rank waits a random 0..US us before\n"
          "                entering the call (its time starts then), as an application's imbalance does\n"
          "  --nonblocking OSU's nonblocking benchmark (osu_iallgather...): MPI_I<coll> + MPI_Wait\n"
          "                alternating with the blocking call, then MPI_I<coll>, a busy loop as long\n"
          "                as this rank's mean MPI_I<coll> + MPI_Wait that calls nothing of MPI, MPI_Wait;\n"
          "                the record's times are MPI_I<coll> + MPI_Wait, with the blocking call's,\n"
          "                the overlap run's and overlap %% beside them (not with --skew)\n"
          "Timing: an MPI_Barrier before every timed call, except for barrier, whose calls\n"
          "are timed back to back.\n");
}

/* Parses a whole unsigned number; returns 0 on success. */
static int parse_u64(const char* s, uint64_t* out) {
  char* end = NULL;
  if (!s || !*s || *s == '-') return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end) return -1;
  *out = v;
  return 0;
}

static int parse_range(const char* s, Options* o) {
  const char* colon = strchr(s, ':');
  char lo[32] = "";
  if (!colon) return parse_u64(s, &o->max_bytes);
  if ((size_t)(colon - s) >= sizeof lo) return -1;
  memcpy(lo, s, (size_t)(colon - s));
  if (*lo && parse_u64(lo, &o->min_bytes)) return -1;
  return colon[1] ? parse_u64(colon + 1, &o->max_bytes) : 0;
}

static int parse_collective(const char* s, Collective* out) {
  for (int c = 0; c < COLL_COUNT; ++c)
    if (!strcmp(s, kCollectiveNames[c])) {
      *out = (Collective)c;
      return 0;
    }
  return -1;
}

static int default_rails(void) {
  const char* r = getenv("RAILCOLL_RAILS");
  int n = 1;
  if (!r || !*r) return 1;
  for (; *r; ++r) n += *r == ',';
  return n;
}

/* Returns NULL on success or the error message. */
static const char* parse_options(int argc, char** argv, Options* o) {
  static char msg[256];
  *o = (Options){.coll = COLL_ALLGATHER, .min_bytes = 8, .max_bytes = 1048576, .iters = 0, .warmup = -1,
                 .rails = default_rails(), .label = "mpi"};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t x = 0;
    if (!strcmp(a, "-c")) { o->check = 1; continue; }
    if (!strcmp(a, "--full")) { o->full = 1; continue; }
    if (!strcmp(a, "--samples")) { o->samples = 1; continue; }
    if (!strcmp(a, "--nonblocking")) { o->nonblocking = 1; continue; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return "help";
    if (strcmp(a, "--coll") && strcmp(a, "-m") && strcmp(a, "-i") && strcmp(a, "-x") && strcmp(a, "--label") &&
        strcmp(a, "--rails") && strcmp(a, "--idle-us") && strcmp(a, "--skew")) {
      snprintf(msg, sizeof msg, "unknown option '%s' (-h lists them)", a);
      return msg;
    }
    if (!v) {
      snprintf(msg, sizeof msg, "option %s needs a value", a);
      return msg;
    }
    ++i;
    if (!strcmp(a, "--label")) { o->label = v; continue; }
    if (!strcmp(a, "--coll")) {
      if (parse_collective(v, &o->coll)) {
        snprintf(msg, sizeof msg, "--coll expects one of the collectives -h lists, got '%s'", v);
        return msg;
      }
      continue;
    }
    if (!strcmp(a, "-m")) {
      if (parse_range(v, o) || o->min_bytes < 1 || o->min_bytes > o->max_bytes || o->max_bytes > (1ull << 30)) {
        snprintf(msg, sizeof msg, "-m expects MIN:MAX bytes with 1 <= MIN <= MAX <= 1073741824, got '%s'", v);
        return msg;
      }
      continue;
    }
    const int zero_ok = !strcmp(a, "-x") || !strcmp(a, "--idle-us") || !strcmp(a, "--skew");
    if (parse_u64(v, &x) || x > 100000000 || (x < 1 && !zero_ok)) {
      snprintf(msg, sizeof msg, "%s expects a whole number%s, got '%s'", a, zero_ok ? "" : " >= 1", v);
      return msg;
    }
    if (!strcmp(a, "-i")) o->iters = (int)x;
    else if (!strcmp(a, "-x")) o->warmup = (int)x;
    else if (!strcmp(a, "--idle-us")) o->idle_us = x;
    else if (!strcmp(a, "--skew")) o->skew_us = x;
    else if (x > 64) return "--rails must be between 1 and 64";
    else o->rails = (int)x;
  }
  if (o->nonblocking && o->skew_us) return "--skew does not go with --nonblocking";
  int barrier = o->coll == COLL_BARRIER;
  if (o->iters == 0) o->iters = barrier ? kDefaultBarrierIters : kDefaultIters;
  if (o->warmup < 0) o->warmup = barrier ? kDefaultBarrierWarmup : kDefaultWarmup;
  return NULL;
}

/* The bytes one call moves for a size of the -m range: allreduce rounds up
 * to whole floats, barrier moves none. */
static uint64_t message_bytes(Collective coll, uint64_t size) {
  if (sums_floats(coll)) return (size + 3) & ~(uint64_t)3;
  return coll == COLL_BARRIER ? 0 : size;
}

/* The receive buffer rank `me` needs for messages of `bytes` (bcast works in
 * place in the send buffer). */
static uint64_t recv_bytes(Collective coll, uint64_t bytes, int me, int nranks) {
  switch (coll) {
    case COLL_ALLGATHER: return bytes * (uint64_t)nranks;
    case COLL_GATHER: return me == 0 ? bytes * (uint64_t)nranks : 0;
    case COLL_ALLREDUCE:
    case COLL_REDUCE_SCATTER_BLOCK: return bytes;
    case COLL_REDUCE: return me == 0 ? bytes : 0;
    case COLL_ALLTOALL:
    case COLL_ALLTOALLV: return bytes * (uint64_t)nranks;
    case COLL_SCATTER:
    case COLL_SCATTERV: return bytes;
    case COLL_GATHERV: return me == 0 ? bytes * (uint64_t)nranks : 0;
    default: return 0;
  }
}

/* The send buffer rank `me` needs (bcast's is also its receive buffer; a
 * reduce-scatter sends every rank's block). */
static uint64_t send_bytes(Collective coll, uint64_t bytes, int me, int nranks) {
  switch (coll) {
    case COLL_REDUCE_SCATTER_BLOCK:
    case COLL_ALLTOALL:
    case COLL_ALLTOALLV: return bytes * (uint64_t)nranks;
    case COLL_SCATTER:
    case COLL_SCATTERV: return me == 0 ? bytes * (uint64_t)nranks : 0;
    default: return bytes;
  }
}

/* The byte that rank `rank` sends at index j in call `call`: differs with
 * each of the three, so a misplaced, stale or foreign byte shows. */
static inline unsigned char pattern(int rank, uint32_t call, uint64_t j) {
  uint32_t x = (uint32_t)rank * 0x9E3779B1u ^ call * 0x85EBCA77u ^ (uint32_t)j * 0xC2B2AE3Du ^ (uint32_t)(j >> 32);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return (unsigned char)(x ^ (x >> 8));
}

/* The float that rank `rank` adds at index i in call `call`: a small integer
 * (-400..599), so every sum over ranks is exact whatever the order. */
static inline float summand(int rank, uint32_t call, uint64_t i) {
  return (float)((int)(((uint64_t)rank * 37 + i * 11 + call) % 1000) - 400);
}

static void fill(unsigned char* buf, uint64_t n, int rank, uint32_t call) {
  for (uint64_t j = 0; j < n; ++j) buf[j] = pattern(rank, call, j);
}

typedef struct {
  unsigned char* send; /* also bcast's buffer */
  unsigned char* recv; /* unused by bcast and barrier, and by gather off the root */
  int me, nranks;
  int *counts, *displs; /* the v-calls': the same count for every rank, packed */
} Buffers;

/* Before a validated call: the send data of call `call`, and the receive
 * buffer (bcast's everywhere but the root) cleared to 0xFF, NaN as floats. */
static void prepare_buffers(Collective coll, const Buffers* b, uint64_t bytes, uint32_t call) {
  switch (coll) {
    case COLL_ALLGATHER:
    case COLL_GATHER: fill(b->send, bytes, b->me, call); break;
    case COLL_BCAST:
      if (b->me == 0) fill(b->send, bytes, 0, call);
      else memset(b->send, 0xFF, bytes);
      break;
    case COLL_ALLREDUCE:
    case COLL_REDUCE_SCATTER_BLOCK:
    case COLL_REDUCE:
      for (uint64_t i = 0; i < send_bytes(coll, bytes, b->me, b->nranks) / 4; ++i)
        ((float*)b->send)[i] = summand(b->me, call, i);
      break;
    case COLL_ALLTOALL:
    case COLL_ALLTOALLV:
    case COLL_GATHERV: fill(b->send, send_bytes(coll, bytes, b->me, b->nranks), b->me, call); break;
    case COLL_SCATTER:
    case COLL_SCATTERV: fill(b->send, send_bytes(coll, bytes, b->me, b->nranks), 0, call); break;
    default: break;
  }
  memset(b->recv, 0xFF, recv_bytes(coll, bytes, b->me, b->nranks));
}

static void call_collective(Collective coll, const Buffers* b, uint64_t bytes) {
  int count = (int)bytes; /* bytes <= 1 GiB */
  switch (coll) {
    case COLL_ALLGATHER: MPI_Allgather(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, MPI_COMM_WORLD); break;
    case COLL_BCAST: MPI_Bcast(b->send, count, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case COLL_GATHER: MPI_Gather(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case COLL_ALLREDUCE: MPI_Allreduce(b->send, b->recv, count / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case COLL_REDUCE_SCATTER_BLOCK:
      MPI_Reduce_scatter_block(b->send, b->recv, count / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case COLL_REDUCE: MPI_Reduce(b->send, b->recv, count / 4, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case COLL_BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case COLL_ALLTOALL: MPI_Alltoall(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, MPI_COMM_WORLD); break;
    case COLL_ALLTOALLV:
      MPI_Alltoallv(b->send, b->counts, b->displs, MPI_BYTE, b->recv, b->counts, b->displs, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case COLL_SCATTER: MPI_Scatter(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case COLL_SCATTERV:
      MPI_Scatterv(b->send, b->counts, b->displs, MPI_BYTE, b->recv, count, MPI_BYTE, 0, MPI_COMM_WORLD);
      break;
    case COLL_GATHERV:
      MPI_Gatherv(b->send, count, MPI_BYTE, b->recv, b->counts, b->displs, MPI_BYTE, 0, MPI_COMM_WORLD);
      break;
    default: break;
  }
}

/* The nonblocking form of call_collective (MPI-3), into *req. */
static void post_collective(Collective coll, const Buffers* b, uint64_t bytes, MPI_Request* req) {
  int count = (int)bytes;
  MPI_Comm w = MPI_COMM_WORLD;
  switch (coll) {
    case COLL_ALLGATHER: MPI_Iallgather(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, w, req); break;
    case COLL_BCAST: MPI_Ibcast(b->send, count, MPI_BYTE, 0, w, req); break;
    case COLL_GATHER: MPI_Igather(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, 0, w, req); break;
    case COLL_ALLREDUCE: MPI_Iallreduce(b->send, b->recv, count / 4, MPI_FLOAT, MPI_SUM, w, req); break;
    case COLL_REDUCE_SCATTER_BLOCK:
      MPI_Ireduce_scatter_block(b->send, b->recv, count / 4, MPI_FLOAT, MPI_SUM, w, req);
      break;
    case COLL_REDUCE: MPI_Ireduce(b->send, b->recv, count / 4, MPI_FLOAT, MPI_SUM, 0, w, req); break;
    case COLL_BARRIER: MPI_Ibarrier(w, req); break;
    case COLL_ALLTOALL: MPI_Ialltoall(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, w, req); break;
    case COLL_ALLTOALLV:
      MPI_Ialltoallv(b->send, b->counts, b->displs, MPI_BYTE, b->recv, b->counts, b->displs, MPI_BYTE, w, req);
      break;
    case COLL_SCATTER: MPI_Iscatter(b->send, count, MPI_BYTE, b->recv, count, MPI_BYTE, 0, w, req); break;
    case COLL_SCATTERV:
      MPI_Iscatterv(b->send, b->counts, b->displs, MPI_BYTE, b->recv, count, MPI_BYTE, 0, w, req);
      break;
    case COLL_GATHERV: MPI_Igatherv(b->send, count, MPI_BYTE, b->recv, b->counts, b->displs, MPI_BYTE, 0, w, req); break;
    default: *req = MPI_REQUEST_NULL; break;
  }
}

/* Keeps the busy loop's result, so the compiler keeps the loop. */
static volatile double compute_sink;

/* Counts wrong bytes of personalised blocks: block `src` of `blocks` holds
 * part `part` (this rank's index) of rank src's send (scatter: one block,
 * from rank 0). Reports the first one on stderr. */
static uint64_t wrong_parts(Collective coll, const unsigned char* buf, uint64_t bytes, int blocks, int first_src,
                            int part, int me, uint32_t call) {
  uint64_t wrong = 0;
  for (int k = 0; k < blocks; ++k) {
    const int src = first_src + k;
    for (uint64_t j = 0; j < bytes; ++j) {
      unsigned char want = pattern(src, call, (uint64_t)part * bytes + j);
      if (buf[(uint64_t)k * bytes + j] == want) continue;
      if (!wrong)
        fprintf(stderr, "railcoll-mpi-bench: %s of %llu bytes, rank %d, call %u: byte %llu from rank %d is wrong\n",
                kCollectiveNames[coll], (unsigned long long)bytes, me, call, (unsigned long long)j, src);
      ++wrong;
    }
  }
  return wrong;
}

/* Counts wrong bytes in `blocks` consecutive blocks of `bytes`, block src
 * holding rank src's pattern; reports the first one on stderr. */
static uint64_t wrong_bytes(Collective coll, const unsigned char* buf, uint64_t bytes, int blocks, int me,
                            uint32_t call) {
  uint64_t wrong = 0;
  for (int src = 0; src < blocks; ++src) {
    const unsigned char* part = buf + (uint64_t)src * bytes;
    for (uint64_t j = 0; j < bytes; ++j) {
      unsigned char want = pattern(src, call, j);
      if (part[j] == want) continue;
      if (!wrong)
        fprintf(stderr,
                "railcoll-mpi-bench: %s of %llu bytes, rank %d, call %u: byte %llu from rank %d is 0x%02x, "
                "expected 0x%02x\n",
                kCollectiveNames[coll], (unsigned long long)bytes, me, call, (unsigned long long)j, src, part[j],
                want);
      ++wrong;
    }
  }
  return wrong;
}

/* Counts wrong floats in a sum of elements first.. over every rank; reports the first one. */
static uint64_t wrong_sums(const float* sums, uint64_t count, uint64_t first, int nranks, int me, uint32_t call) {
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += summand(r, call, first + i);
    if (sums[i] == want) continue;
    if (!wrong)
      fprintf(stderr, "railcoll-mpi-bench: sum of %llu floats, rank %d, call %u: float %llu is %g, expected %g\n",
              (unsigned long long)count, me, call, (unsigned long long)i, sums[i], want);
    ++wrong;
  }
  return wrong;
}

/* After a validated call: the wrong bytes (floats for allreduce) this rank holds. */
static uint64_t count_wrong(Collective coll, const Buffers* b, uint64_t bytes, uint32_t call) {
  switch (coll) {
    case COLL_ALLGATHER: return wrong_bytes(coll, b->recv, bytes, b->nranks, b->me, call);
    case COLL_GATHER: return b->me == 0 ? wrong_bytes(coll, b->recv, bytes, b->nranks, b->me, call) : 0;
    case COLL_BCAST: return wrong_bytes(coll, b->send, bytes, 1, b->me, call);
    case COLL_ALLREDUCE: return wrong_sums((const float*)b->recv, bytes / 4, 0, b->nranks, b->me, call);
    case COLL_REDUCE_SCATTER_BLOCK:
      return wrong_sums((const float*)b->recv, bytes / 4, (uint64_t)b->me * (bytes / 4), b->nranks, b->me, call);
    case COLL_REDUCE: return b->me == 0 ? wrong_sums((const float*)b->recv, bytes / 4, 0, b->nranks, b->me, call) : 0;
    case COLL_ALLTOALL:
    case COLL_ALLTOALLV: return wrong_parts(coll, b->recv, bytes, b->nranks, 0, b->me, b->me, call);
    case COLL_SCATTER:
    case COLL_SCATTERV: return wrong_parts(coll, b->recv, bytes, 1, 0, b->me, b->me, call);
    case COLL_GATHERV: return b->me == 0 ? wrong_bytes(coll, b->recv, bytes, b->nranks, b->me, call) : 0;
    default: return 0;
  }
}

static void print_json_string(const char* s) {
  putchar('"');
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

/* Timed and warm-up calls for one size, after the kCapBytes limit. */
static void calls_for(const Options* o, uint64_t bytes, int nranks, int* iters, int* warmup) {
  /* What the busiest rank (gather's root) receives per call; 0 for barrier. */
  /* (scatter: what its root sends) */
  uint64_t per_call = o->coll == COLL_BCAST                                  ? bytes
                      : o->coll == COLL_SCATTER || o->coll == COLL_SCATTERV ? bytes * (uint64_t)nranks
                                                                             : recv_bytes(o->coll, bytes, 0, nranks);
  *iters = o->iters;
  *warmup = o->warmup;
  if (o->full || per_call * (uint64_t)o->iters <= kCapBytes) return;
  uint64_t fit = kCapBytes / per_call;
  *iters = (int)(fit > (uint64_t)kMinLargeIters ? fit : (uint64_t)kMinLargeIters);
  if (*iters > o->iters) *iters = o->iters;
  int w = *iters / 5 > 1 ? *iters / 5 : 1;
  if (*warmup > w) *warmup = w;
}

/* Every timed call's entry and exit on this rank, entries then exits,
 * CLOCK_MONOTONIC seconds (malloc'd). */
typedef struct {
  uint64_t wrong;     /* bytes (floats for allreduce) that failed validation */
  int iters;
  double* times;      /* the calls timed; --nonblocking: post + wait with nothing between */
  /* --nonblocking only (else NULL): the blocking calls alternating with
   * those, the overlap run's post + compute + wait, and its parts per call in
   * seconds (each iters long). */
  double *blocking, *overlapped, *compute, *post, *wait;
} SizeResult;

static void free_result(SizeResult* r) {
  free(r->times), free(r->blocking), free(r->overlapped), free(r->compute), free(r->post), free(r->wait);
}

/* CLOCK_MONOTONIC in seconds: one clock for every process of a host, in every
 * network namespace. */
/* Equal on two ranks exactly when they read the same CLOCK_MONOTONIC: the
 * kernel's boot id and the time namespace, hashed (FNV-1a). */
static uint64_t clock_identity(void) {
  char boot[64] = "";
  FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
    fclose(f);
  }
  struct stat st;
  uint64_t h = 1469598103934665603ull, ns = stat("/proc/self/ns/time", &st) == 0 ? (uint64_t)st.st_ino : 0;
  for (const char* c = boot; *c; ++c) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  return h ^ (ns * 0x9E3779B97F4A7C15ull);
}

/* xorshift32: each rank's own sequence of skews. */
static uint32_t next_random(uint32_t* state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *state = x;
}

/* Before a timed call: its input, the rest, the barrier (none between barriers). */
static void before_call(const Options* o, const Buffers* b, uint64_t bytes, uint32_t call) {
  if (o->check) prepare_buffers(o->coll, b, bytes, call);
  if (o->coll != COLL_BARRIER && o->idle_us) sleep_us(o->idle_us);
  if (o->coll != COLL_BARRIER) MPI_Barrier(MPI_COMM_WORLD);
}

/* After it: checked only once every rank has left the call (a rank that
 * checks while the slowest is still in it takes a core from it; 2 cores here). */
static void after_call(const Options* o, const Buffers* b, uint64_t bytes, uint32_t call, uint64_t* wrong) {
  if (o->check && o->coll != COLL_BARRIER) MPI_Barrier(MPI_COMM_WORLD);
  if (o->check && !*wrong) *wrong = count_wrong(o->coll, b, bytes, call);
}

/* A size's result with room for its timed calls' entries and exits; *iters and
 * *warmup: how many calls it times and runs untimed first. */
static SizeResult new_size_result(const Options* o, const Buffers* b, uint64_t bytes, int* iters, int* warmup) {
  SizeResult r = {0};
  calls_for(o, bytes, b->nranks, iters, warmup);
  r.iters = *iters;
  r.times = calloc(2 * (size_t)*iters, sizeof(double));
  return r;
}

static SizeResult run_size(const Options* o, const Buffers* b, uint64_t bytes, uint32_t* call) {
  int iters, warmup;
  SizeResult r = new_size_result(o, b, bytes, &iters, &warmup);
  uint32_t skew_state = (uint32_t)b->me * 7919u + (uint32_t)bytes + 1u;
  for (int i = -warmup; i < iters; ++i, ++*call) {
    before_call(o, b, bytes, *call);
    if (o->skew_us) sleep_us(next_random(&skew_state) % (o->skew_us + 1));
    double t0 = monotonic_seconds();
    call_collective(o->coll, b, bytes);
    double t1 = monotonic_seconds();
    if (i >= 0) r.times[i] = t0, r.times[iters + i] = t1;
    after_call(o, b, bytes, *call, &r.wrong);
  }
  return r;
}

/* --nonblocking, OSU's way (osu_iallgather...): post + wait alternating with
 * the blocking call (which one first changes every round, so both see the
 * same machine); then post, a busy loop as long as this rank's mean post +
 * wait that calls nothing of MPI (busy_compute.h), wait. */
static SizeResult run_nonblocking_size(const Options* o, const Buffers* b, uint64_t bytes, uint32_t* call) {
  int iters, warmup;
  SizeResult r = new_size_result(o, b, bytes, &iters, &warmup);
  r.blocking = calloc(2 * (size_t)iters, sizeof(double));
  r.overlapped = calloc(2 * (size_t)iters, sizeof(double));
  r.compute = calloc((size_t)iters, sizeof(double));
  r.post = calloc((size_t)iters, sizeof(double));
  r.wait = calloc((size_t)iters, sizeof(double));
  for (int i = -warmup; i < iters; ++i)
    for (int k = 0; k < 2; ++k, ++*call) {
      const int blocking = (k == 0) == ((i & 1) == 0);
      MPI_Request req;
      before_call(o, b, bytes, *call);
      double t0 = monotonic_seconds();
      if (blocking) call_collective(o->coll, b, bytes);
      else post_collective(o->coll, b, bytes, &req), MPI_Wait(&req, MPI_STATUS_IGNORE);
      double t1 = monotonic_seconds();
      double* t = blocking ? r.blocking : r.times;
      if (i >= 0) t[i] = t0, t[iters + i] = t1;
      after_call(o, b, bytes, *call, &r.wrong);
    }
  double target_us = 0;
  for (int i = 0; i < iters; ++i) target_us += (r.times[iters + i] - r.times[i]) * 1e6 / iters;
  for (int i = -warmup; i < iters; ++i, ++*call) {
    MPI_Request req;
    before_call(o, b, bytes, *call);
    double t0 = monotonic_seconds();
    post_collective(o->coll, b, bytes, &req);
    double t1 = monotonic_seconds();
    compute_sink = railcoll_busy_compute(target_us);
    double t2 = monotonic_seconds();
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    double t3 = monotonic_seconds();
    if (i >= 0) {
      r.overlapped[i] = t0, r.overlapped[iters + i] = t3;
      r.post[i] = t1 - t0, r.compute[i] = t2 - t1, r.wait[i] = t3 - t2;
    }
    after_call(o, b, bytes, *call, &r.wrong);
  }
  return r;
}

typedef struct {
  double avg_us, min_us, max_us;    /* over ranks of each rank's mean */
  double p50_us, p90_us, p99_us;    /* over calls of the slowest rank's time */
  double span_p50_us, span_p90_us, span_p99_us; /* over calls of the span; < 0: not measured */
  double own_p50_us, own_p90_us, own_p99_us, own_max_us; /* over ranks x calls of each rank's own time */
  int slow_calls;                   /* of those, the ones above 3x own_p50 */
  double* slowest_s;                /* the slowest rank's time of each call (malloc'd on rank 0) */
} SizeStats;

/* --nonblocking: the blocking calls' and the overlap run's figures. */
typedef struct {
  SizeStats blocking, overall;
  double compute_avg_us, post_avg_us, wait_avg_us; /* over ranks of each rank's mean */
  double overlap_pct, overlap_p50_pct;             /* OSU's formula from those means; from medians */
} OverlapStats;

/* What every record says about the job. */
typedef struct {
  int nranks, nodes, ppn;
  int shared_clock; /* every rank reads the same CLOCK_MONOTONIC */
} Job;

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Element floor(q * n) of sorted[0..n), as railcoll bench computes it. */
static double percentile(const double* sorted, int n, double q) {
  int k = (int)(q * n);
  return sorted[k < n ? k : n - 1];
}

static void report(const Options* o, uint64_t bytes, const Job* job, const SizeStats* s, int iters, int validated,
                   const OverlapStats* nb) {
  printf("{\"collective\":\"%s\",\"algorithm\":", kCollectiveNames[o->coll]);
  print_json_string(o->label);
  printf(",\"bytes\":%llu,\"ranks\":%d,\"nodes\":%d,\"rails\":%d,\"ppn\":%d,\"avg_us\":%.2f,\"min_us\":%.2f,"
         "\"max_us\":%.2f,\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f",
         (unsigned long long)bytes, job->nranks, job->nodes, o->rails, job->ppn, s->avg_us, s->min_us, s->max_us,
         s->p50_us, s->p90_us, s->p99_us);
  if (s->span_p50_us >= 0)
    printf(",\"span_p50_us\":%.2f,\"span_p90_us\":%.2f,\"span_p99_us\":%.2f", s->span_p50_us, s->span_p90_us,
           s->span_p99_us);
  printf(",\"own_p50_us\":%.2f,\"own_p90_us\":%.2f,\"own_p99_us\":%.2f,\"own_max_us\":%.2f,\"slow_calls\":%d,"
         "\"idle_us\":%llu,\"skew_us\":%llu",
         s->own_p50_us, s->own_p90_us, s->own_p99_us, s->own_max_us, s->slow_calls,
         (unsigned long long)(o->coll == COLL_BARRIER ? 0 : o->idle_us), (unsigned long long)o->skew_us);
  if (nb)
    printf(",\"form\":\"nonblocking\",\"blocking_avg_us\":%.2f,\"blocking_p50_us\":%.2f,\"blocking_p99_us\":%.2f,"
           "\"overall_avg_us\":%.2f,\"overall_p50_us\":%.2f,\"overall_p99_us\":%.2f,\"compute_avg_us\":%.2f,"
           "\"post_avg_us\":%.2f,\"wait_avg_us\":%.2f,\"overlap_pct\":%.2f,\"overlap_p50_pct\":%.2f",
           nb->blocking.avg_us, nb->blocking.p50_us, nb->blocking.p99_us, nb->overall.avg_us, nb->overall.p50_us,
           nb->overall.p99_us, nb->compute_avg_us, nb->post_avg_us, nb->wait_avg_us, nb->overlap_pct,
           nb->overlap_p50_pct);
  printf(",\"iterations\":%d,\"validated\":%s", iters, validated ? "true" : "false");
  if (o->samples) {
    printf(",\"samples_us\":[");
    for (int i = 0; i < iters; ++i) printf("%s%.2f", i ? "," : "", s->slowest_s[i] * 1e6);
    putchar(']');
  }
  printf("}\n");
  fflush(stdout);
}

/* Every rank's own time of every call (every: each rank's entries, then its
 * exits) -> the own_* figures and slow_calls of s. */
static void own_times(const double* every, int nranks, int iters, SizeStats* s) {
  size_t n = (size_t)nranks * (size_t)iters;
  double* own = calloc(n, sizeof(double));
  if (!own) return;
  for (int k = 0; k < nranks; ++k)
    for (int i = 0; i < iters; ++i) {
      const double* t = every + (size_t)k * 2 * (size_t)iters;
      own[(size_t)k * (size_t)iters + (size_t)i] = t[iters + i] - t[i];
    }
  qsort(own, n, sizeof(double), cmp_double);
  s->own_p50_us = percentile(own, (int)n, 0.50) * 1e6;
  s->own_p90_us = percentile(own, (int)n, 0.90) * 1e6;
  s->own_p99_us = percentile(own, (int)n, 0.99) * 1e6;
  s->own_max_us = own[n - 1] * 1e6;
  s->slow_calls = 0;
  for (size_t j = n; j > 0 && own[j - 1] * 1e6 > 3 * s->own_p50_us; --j) ++s->slow_calls;
  free(own);
}

/* The figures of one kind of call, from every rank's entries and exits
 * (times: this rank's, entries then exits), on rank 0; a collective call. */
static SizeStats call_stats(int me, const Job* job, int iters, const double* times) {
  const int nranks = job->nranks;
  SizeStats s = {0};
  s.span_p50_us = s.span_p90_us = s.span_p99_us = -1;
  double* each = calloc((size_t)iters, sizeof(double));
  double* sorted = calloc((size_t)iters, sizeof(double));
  double* every = me == 0 ? calloc(2 * (size_t)iters * (size_t)nranks, sizeof(double)) : NULL;
  s.slowest_s = me == 0 ? calloc((size_t)iters, sizeof(double)) : NULL;
  double us = 0, sum_us = 0;
  for (int i = 0; i < iters; ++i) each[i] = times[iters + i] - times[i], us += each[i] * 1e6 / iters;
  MPI_Reduce(&us, &s.min_us, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&us, &s.max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&us, &sum_us, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(each, s.slowest_s, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Gather(times, 2 * iters, MPI_DOUBLE, every, 2 * iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (me == 0) {
    s.avg_us = sum_us / nranks;
    memcpy(sorted, s.slowest_s, (size_t)iters * sizeof(double));
    qsort(sorted, (size_t)iters, sizeof(double), cmp_double);
    s.p50_us = percentile(sorted, iters, 0.50) * 1e6;
    s.p90_us = percentile(sorted, iters, 0.90) * 1e6;
    s.p99_us = percentile(sorted, iters, 0.99) * 1e6;
    own_times(every, nranks, iters, &s);
    if (job->shared_clock) {
      /* every[k * 2 * iters + i]: rank k's entry into call i; + iters: its exit. */
      for (int i = 0; i < iters; ++i) {
        double first_in = every[i], last_out = every[iters + i];
        for (int k = 1; k < nranks; ++k) {
          const double* t = every + (size_t)k * 2 * (size_t)iters;
          if (t[i] < first_in) first_in = t[i];
          if (t[iters + i] > last_out) last_out = t[iters + i];
        }
        sorted[i] = last_out - first_in;
      }
      qsort(sorted, (size_t)iters, sizeof(double), cmp_double);
      s.span_p50_us = percentile(sorted, iters, 0.50) * 1e6;
      s.span_p90_us = percentile(sorted, iters, 0.90) * 1e6;
      s.span_p99_us = percentile(sorted, iters, 0.99) * 1e6;
    }
  }
  free(each);
  free(sorted);
  free(every);
  return s;
}

/* The mean over ranks of each rank's mean of `values` (seconds), in us, on rank 0. */
static double mean_of_means_us(const double* values, int iters, int nranks) {
  double mine = 0, sum = 0;
  for (int i = 0; i < iters; ++i) mine += values[i] * 1e6 / iters;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  return sum / nranks;
}

static double overlap_percent(double overall, double compute, double pure) {
  double v = pure > 0 ? 100.0 * (1.0 - (overall - compute) / pure) : 0;
  return v > 0 ? v : 0;
}

/* --nonblocking: the blocking calls, the overlap run and its parts, and
 * overlap % (OSU: 100 (1 - (overall - compute) / pure), from means; and the
 * same from medians over every rank's calls); pure: the nonblocking calls'. */
static OverlapStats overlap_stats(int me, const Job* job, const SizeResult* r, const SizeStats* pure) {
  const int iters = r->iters, nranks = job->nranks;
  OverlapStats nb;
  nb.blocking = call_stats(me, job, iters, r->blocking);
  nb.overall = call_stats(me, job, iters, r->overlapped);
  nb.compute_avg_us = mean_of_means_us(r->compute, iters, nranks);
  nb.post_avg_us = mean_of_means_us(r->post, iters, nranks);
  nb.wait_avg_us = mean_of_means_us(r->wait, iters, nranks);
  nb.overlap_pct = overlap_percent(nb.overall.avg_us, nb.compute_avg_us, pure->avg_us);
  /* What is left of the communication after computing, per call. */
  double* left = calloc((size_t)iters, sizeof(double));
  double* all = me == 0 ? calloc((size_t)iters * (size_t)nranks, sizeof(double)) : NULL;
  for (int i = 0; i < iters; ++i) left[i] = r->overlapped[iters + i] - r->overlapped[i] - r->compute[i];
  MPI_Gather(left, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  nb.overlap_p50_pct = 0;
  if (me == 0) {
    qsort(all, (size_t)iters * (size_t)nranks, sizeof(double), cmp_double);
    nb.overlap_p50_pct = overlap_percent(percentile(all, iters * nranks, 0.5) * 1e6, 0, pure->own_p50_us);
  }
  free(left);
  free(all);
  return nb;
}

/* Combines every rank's result for one size, prints the record from rank 0;
 * returns the exit status so far (1 if a rank saw a wrong byte). */
static int summarize(const Options* o, uint64_t bytes, int me, const Job* job, const SizeResult* r) {
  unsigned long long wrong = r->wrong, all_wrong = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  SizeStats s = call_stats(me, job, r->iters, r->times);
  OverlapStats nb;
  if (o->nonblocking) nb = overlap_stats(me, job, r, &s);
  if (me == 0) {
    report(o, bytes, job, &s, r->iters, o->check && !all_wrong, o->nonblocking ? &nb : NULL);
    if (all_wrong)
      fprintf(stderr, "railcoll-mpi-bench: validation FAILED: %s%s of %llu bytes: %llu wrong %s in the first bad "
                      "call of each rank (each rank's first one is reported on stderr)\n",
              o->nonblocking ? "nonblocking " : "", kCollectiveNames[o->coll], (unsigned long long)bytes, all_wrong,
              sums_floats(o->coll) ? "float(s)" : "byte(s)");
  }
  free(s.slowest_s);
  if (o->nonblocking) free(nb.blocking.slowest_s), free(nb.overall.slowest_s);
  return all_wrong ? 1 : 0;
}

/* Ranks, nodes (MPI_COMM_TYPE_SHARED groups), the most ranks on one node, and
 * whether all ranks read one clock. */
static Job describe_job(void) {
  Job job = {0, 0, 0, 0};
  MPI_Comm node;
  int local = 0, local_size = 0, leaders = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &job.nranks);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_size(node, &local_size);
  int leader = local == 0;
  MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&local_size, &job.ppn, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Comm_free(&node);
  job.nodes = leaders;
  unsigned long long mine = clock_identity(), lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  job.shared_clock = lo == hi;
  return job;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options o;
  const char* err = parse_options(argc, argv, &o);
  if (err) {
    int help = !strcmp(err, "help");
    if (me == 0 && help) usage(stdout);
    if (me == 0 && !help) fprintf(stderr, "railcoll-mpi-bench: %s\n", err);
    MPI_Finalize();
    return help ? 0 : 2;
  }
  uint64_t max_message = message_bytes(o.coll, o.max_bytes);
  uint64_t max_recv = recv_bytes(o.coll, max_message, me, nranks);
  uint64_t max_send = send_bytes(o.coll, max_message, me, nranks);
  Buffers b = {malloc(max_send ? max_send : 1), malloc(max_recv ? max_recv : 1), me, nranks,
               malloc(sizeof(int) * (size_t)nranks), malloc(sizeof(int) * (size_t)nranks)};
  int no_memory = !b.send || !b.recv || !b.counts || !b.displs, any_no_memory = 0;
  MPI_Allreduce(&no_memory, &any_no_memory, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_no_memory) {
    if (me == 0)
      fprintf(stderr, "railcoll-mpi-bench: out of memory for %s of %llu bytes\n", kCollectiveNames[o.coll],
              (unsigned long long)max_message);
    MPI_Finalize();
    return 1;
  }
  /* Defined contents for the calls that -c does not prepare (small integers,
   * not NaNs or denormals, for allreduce). */
  prepare_buffers(o.coll, &b, max_message, 0);
  Job job = describe_job();
  int status = 0;
  uint32_t call = 1;
  uint64_t previous = UINT64_MAX;
  for (uint64_t size = o.min_bytes; size <= o.max_bytes && !status; size *= 2) {
    uint64_t bytes = message_bytes(o.coll, size);
    if (bytes == previous) continue; /* allreduce: 1 and 2 round up to 4; barrier: one record */
    previous = bytes;
    for (int r = 0; r < nranks; ++r) b.counts[r] = (int)bytes, b.displs[r] = (int)(bytes * (uint64_t)r);
    SizeResult r = o.nonblocking ? run_nonblocking_size(&o, &b, bytes, &call) : run_size(&o, &b, bytes, &call);
    status = summarize(&o, bytes, me, &job, &r);
    free_result(&r);
  }
  free(b.send);
  free(b.recv);
  free(b.counts);
  free(b.displs);
  MPI_Finalize();
  return status;
}
