/* railcoll-mpi-bench: an OSU-style MPI_Allgather benchmark, the Open MPI
 * baseline railcoll is compared with on the emulated cluster
 * (`railcoll cluster mpirun -- railcoll-mpi-bench ...`, docs/cluster.md).
 *
 * Timing follows osu_allgather: for each size, every call is preceded by an
 * MPI_Barrier and timed alone with MPI_Wtime; each rank averages its calls;
 * avg/min/max are the mean/min/max of those per-rank averages, in us.
 *
 * Output: one JSON object per size on stdout, from rank 0:
 * {"collective":"allgather","algorithm":LABEL,"bytes":B,"ranks":N,"nodes":M,
 *  "rails":K,"avg_us":X,"min_us":X,"max_us":X,"p50_us":X,"iterations":N,"validated":true|false}
 *  (p50_us: the median over calls of the slowest rank's time)
 *
 * Exit status: 0 ok, 1 a validation error or out of memory, 2 bad usage. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large sizes run fewer calls: at most kCapBytes gathered per rank per size
 * (but at least kMinLargeIters calls, and never more than -i). --full turns
 * this off. With 16 ranks: 1 MiB per rank -> 16 calls instead of 100. */
static const uint64_t kCapBytes = 256ull << 20;
static const int kMinLargeIters = 10;

typedef struct {
  uint64_t min_bytes, max_bytes;
  int iters, warmup, check, full, rails;
  const char* label;
} Options;

static void usage(FILE* f) {
  fprintf(f,
          "usage: railcoll-mpi-bench [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-c] [--full]\n"
          "                          [--label NAME] [--rails K]\n"
          "  -m MIN:MAX    bytes per rank, powers of two from MIN to MAX (default 8:1048576)\n"
          "  -i ITERS      timed calls per size (default 100; large sizes run fewer, at most\n"
          "                256 MiB gathered per rank per size but at least 10, unless --full)\n"
          "  -x WARMUP     untimed calls first (default 10; fewer when -i was reduced)\n"
          "  -c            validate every byte of every call\n"
          "  --label NAME  the \"algorithm\" field, e.g. mpi:tuned or mpi:han (default mpi)\n"
          "  --rails K     rails in use, copied to the output (default: the count in\n"
          "                RAILCOLL_RAILS, else 1)\n");
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
  *o = (Options){8, 1048576, 100, 10, 0, 0, default_rails(), "mpi"};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t x = 0;
    if (!strcmp(a, "-c")) { o->check = 1; continue; }
    if (!strcmp(a, "--full")) { o->full = 1; continue; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return "help";
    if (strcmp(a, "-m") && strcmp(a, "-i") && strcmp(a, "-x") && strcmp(a, "--label") && strcmp(a, "--rails")) {
      snprintf(msg, sizeof msg, "unknown option '%s' (-h lists them)", a);
      return msg;
    }
    if (!v) {
      snprintf(msg, sizeof msg, "option %s needs a value", a);
      return msg;
    }
    ++i;
    if (!strcmp(a, "--label")) { o->label = v; continue; }
    if (!strcmp(a, "-m")) {
      if (parse_range(v, o) || o->min_bytes < 1 || o->min_bytes > o->max_bytes || o->max_bytes > (1ull << 30)) {
        snprintf(msg, sizeof msg, "-m expects MIN:MAX bytes with 1 <= MIN <= MAX <= 1073741824, got '%s'", v);
        return msg;
      }
      continue;
    }
    if (parse_u64(v, &x) || x > 100000000 || (x < 1 && strcmp(a, "-x"))) {
      snprintf(msg, sizeof msg, "%s expects a whole number%s, got '%s'", a, strcmp(a, "-x") ? " >= 1" : "", v);
      return msg;
    }
    if (!strcmp(a, "-i")) o->iters = (int)x;
    else if (!strcmp(a, "-x")) o->warmup = (int)x;
    else if (x > 64) return "--rails must be between 1 and 64";
    else o->rails = (int)x;
  }
  return NULL;
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

static void fill(unsigned char* buf, uint64_t n, int rank, uint32_t call) {
  for (uint64_t j = 0; j < n; ++j) buf[j] = pattern(rank, call, j);
}

/* Counts wrong bytes in recv; reports the first one on stderr. */
static uint64_t verify(const unsigned char* recv, uint64_t bytes, int nranks, int me, uint32_t call) {
  uint64_t wrong = 0;
  for (int src = 0; src < nranks; ++src) {
    const unsigned char* part = recv + (uint64_t)src * bytes;
    for (uint64_t j = 0; j < bytes; ++j) {
      unsigned char want = pattern(src, call, j);
      if (part[j] == want) continue;
      if (!wrong)
        fprintf(stderr,
                "railcoll-mpi-bench: rank %d, %llu bytes per rank, call %u: byte %llu from rank %d is 0x%02x, "
                "expected 0x%02x\n",
                me, (unsigned long long)bytes, call, (unsigned long long)j, src, part[j], want);
      ++wrong;
    }
  }
  return wrong;
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

static int count_nodes(void) {
  MPI_Comm node;
  int local = 0, leaders = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  int leader = local == 0;
  MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_free(&node);
  return leaders;
}

static void calls_for(const Options* o, uint64_t bytes, int nranks, int* iters, int* warmup) {
  uint64_t per_call = bytes * (uint64_t)nranks;
  *iters = o->iters;
  *warmup = o->warmup;
  if (o->full || per_call * (uint64_t)o->iters <= kCapBytes) return;
  uint64_t fit = kCapBytes / per_call;
  *iters = (int)(fit > (uint64_t)kMinLargeIters ? fit : (uint64_t)kMinLargeIters);
  if (*iters > o->iters) *iters = o->iters;
  int w = *iters / 5 > 1 ? *iters / 5 : 1;
  if (*warmup > w) *warmup = w;
}

typedef struct {
  double seconds;  /* sum over timed calls */
  uint64_t wrong;  /* bytes that failed validation */
  int iters;
  double* each;    /* seconds of every timed call (malloc'd) */
} SizeResult;

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static SizeResult run_size(const Options* o, uint64_t bytes, unsigned char* send, unsigned char* recv, int me,
                           int nranks, uint32_t* call) {
  SizeResult r = {0, 0, 0, NULL};
  int iters, warmup;
  calls_for(o, bytes, nranks, &iters, &warmup);
  r.iters = iters;
  r.each = calloc((size_t)iters, sizeof(double));
  for (int i = 0; i < warmup + iters; ++i, ++*call) {
    if (o->check) {
      fill(send, bytes, me, *call);
      memset(recv, 0, bytes * (uint64_t)nranks);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (i >= warmup) r.seconds += t1 - t0, r.each[i - warmup] = t1 - t0;
    if (o->check && !r.wrong) r.wrong = verify(recv, bytes, nranks, me, *call);
  }
  r.seconds /= iters;
  return r;
}

static void report(const Options* o, uint64_t bytes, int nranks, int nodes, double avg_us, double min_us,
                   double max_us, double p50_us, int iters, int validated) {
  printf("{\"collective\":\"allgather\",\"algorithm\":");
  print_json_string(o->label);
  printf(",\"bytes\":%llu,\"ranks\":%d,\"nodes\":%d,\"rails\":%d,\"avg_us\":%.2f,\"min_us\":%.2f,\"max_us\":%.2f,"
         "\"p50_us\":%.2f,\"iterations\":%d,\"validated\":%s}\n",
         (unsigned long long)bytes, nranks, nodes, o->rails, avg_us, min_us, max_us, p50_us, iters,
         validated ? "true" : "false");
  fflush(stdout);
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
  unsigned char* send = malloc(o.max_bytes);
  unsigned char* recv = malloc(o.max_bytes * (uint64_t)nranks);
  int no_memory = !send || !recv, any_no_memory = 0;
  MPI_Allreduce(&no_memory, &any_no_memory, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_no_memory) {
    if (me == 0)
      fprintf(stderr, "railcoll-mpi-bench: out of memory for %llu bytes per rank\n", (unsigned long long)o.max_bytes);
    MPI_Finalize();
    return 1;
  }
  fill(send, o.max_bytes, me, 0);
  memset(recv, 0, o.max_bytes * (uint64_t)nranks);
  int nodes = count_nodes(), status = 0;
  uint32_t call = 1;
  for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes && !status; bytes *= 2) {
    SizeResult r = run_size(&o, bytes, send, recv, me, nranks, &call);
    double us = r.seconds * 1e6, min_us = 0, max_us = 0, sum_us = 0;
    unsigned long long wrong = r.wrong, all_wrong = 0;
    MPI_Reduce(&us, &min_us, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&us, &sum_us, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* The median over calls of the slowest rank's time: a call is done when its
     * last rank is (railcoll bench reports the same). */
    double* slowest = calloc((size_t)r.iters, sizeof(double));
    MPI_Reduce(r.each, slowest, r.iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    qsort(slowest, (size_t)r.iters, sizeof(double), cmp_double);
    double p50_us = slowest[r.iters / 2] * 1e6;
    free(slowest);
    free(r.each);
    if (me == 0)
      report(&o, bytes, nranks, nodes, sum_us / nranks, min_us, max_us, p50_us, r.iters, o.check && !all_wrong);
    if (all_wrong) {
      if (me == 0)
        fprintf(stderr, "railcoll-mpi-bench: validation FAILED at %llu bytes per rank: %llu wrong byte(s) in the "
                        "first bad call of each rank (each rank's first wrong byte is reported on stderr)\n",
                (unsigned long long)bytes, all_wrong);
      status = 1;
    }
    if (bytes > UINT64_MAX / 2) break;
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return status;
}
