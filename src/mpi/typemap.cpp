// Whether a datatype's typemap, in MPI's order, is one run of ascending
// addresses with no gap: the one layout whose bytes railcoll may read or write
// where they are. MPI's order is the typemap's, not memory's: an
// MPI_Type_indexed with displacements n-1, ..., 0 has no gap (true extent =
// size) yet its first element is the last int in memory, so a rank that
// receives into it from one that sends plain ints must see them reversed.
// Open MPI's datatype engine keeps the same distinction (a description with
// no gaps is not "contiguous" unless each piece follows the previous one), as
// does ROMIO's walk over MPI_Type_get_envelope/contents; railcoll asks MPI
// only through the standard calls, so it walks the constructors itself
// (docs/mpi.md, "Datatypes").
#include <cstdint>
#include <vector>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

namespace {

// A walk that meets more pieces than this decides "not in order": packing is
// right for every layout, so an undecided one costs speed, never bytes.
constexpr uint64_t kMaxPieces = uint64_t{1} << 20;
// A layout the walk does not know (darray, the deprecated Fortran combiners)
// is tested by packing one element of it, up to this size.
constexpr MPI_Aint kMaxProbeBytes = MPI_Aint{16} << 20;

// The pieces met so far: one run from `first` to `next`.
struct Run {
  MPI_Aint next = 0;
  bool started = false;
  uint64_t pieces = 0;
  bool add(MPI_Aint at, MPI_Aint bytes) {
    if (bytes == 0) return true;
    if (++pieces > kMaxPieces) return false;
    if (started && at != next) return false;
    started = true;
    next = at + bytes;
    return true;
  }
};

struct Shape {
  MPI_Aint size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
};

Shape shape_of(MPI_Datatype t) {
  MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_size_x(t, &size);
  PMPI_Type_get_extent_x(t, &lb, &extent);
  PMPI_Type_get_true_extent_x(t, &true_lb, &true_extent);
  return {static_cast<MPI_Aint>(size), static_cast<MPI_Aint>(lb), static_cast<MPI_Aint>(extent),
          static_cast<MPI_Aint>(true_lb), static_cast<MPI_Aint>(true_extent)};
}

// How a derived type was made. MPI hands out new handles for the derived
// types it was made of: they are the caller's to free.
struct Contents {
  int combiner = MPI_COMBINER_NAMED;
  std::vector<int> ints;
  std::vector<MPI_Aint> addrs;
  std::vector<MPI_Datatype> types;
  explicit Contents(MPI_Datatype t) {
    int ni = 0, na = 0, nd = 0;
    PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
    if (combiner == MPI_COMBINER_NAMED) return;
    ints.resize(static_cast<size_t>(ni));
    addrs.resize(static_cast<size_t>(na));
    types.resize(static_cast<size_t>(nd));
    PMPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data());
  }
  ~Contents() {
    for (MPI_Datatype& d : types) {
      int ni = 0, na = 0, nd = 0, c = 0;
      PMPI_Type_get_envelope(d, &ni, &na, &nd, &c);
      if (c != MPI_COMBINER_NAMED) PMPI_Type_free(&d);
    }
  }
  Contents(const Contents&) = delete;
  Contents& operator=(const Contents&) = delete;
};

bool elements(MPI_Datatype t, MPI_Aint at, int64_t n, Run& run);

// One element of t at `at`, packed and compared with the bytes it was packed
// from: in order exactly when byte j of the packed element came from byte j
// of the run (one pass per byte of an offset).
bool probe(MPI_Datatype t, MPI_Aint at, const Shape& s, Run& run) {
  if (s.size > kMaxProbeBytes) return false;
  MPI_Datatype copy;
  if (PMPI_Type_dup(t, &copy) != MPI_SUCCESS) return false;
  PMPI_Type_commit(&copy);
  const size_t n = static_cast<size_t>(s.size);
  std::vector<unsigned char> from(n), packed(n);
  bool in_order = true;
  int shift = 0;
  do {
    for (size_t k = 0; k < n; ++k) from[k] = static_cast<unsigned char>(k >> shift);
    int position = 0;
    PMPI_Pack(from.data() - s.true_lb, 1, copy, packed.data(), static_cast<int>(n), &position, MPI_COMM_SELF);
    in_order = static_cast<size_t>(position) == n && packed == from;
    shift += 8;
  } while (in_order && shift < 64 && ((n - 1) >> shift) != 0);
  PMPI_Type_free(&copy);
  return in_order && run.add(at + s.true_lb, s.size);
}

// A subarray's elements of `old` in its order (C: the last dimension
// fastest; Fortran: the first), a row of the fastest dimension at a time.
bool subarray(const Contents& c, MPI_Aint at, Run& run) {
  const int nd = c.ints[0];
  const int* sizes = &c.ints[1];
  const int* subsizes = &c.ints[1 + nd];
  const int* starts = &c.ints[1 + 2 * nd];
  const bool fortran = c.ints[1 + 3 * nd] == MPI_ORDER_FORTRAN;
  MPI_Datatype old = c.types[0];
  const MPI_Aint ext = shape_of(old).extent;
  std::vector<int> dims(static_cast<size_t>(nd));  // fastest first
  for (int i = 0; i < nd; ++i) dims[static_cast<size_t>(i)] = fortran ? i : nd - 1 - i;
  std::vector<MPI_Aint> stride(static_cast<size_t>(nd));  // in elements of old
  MPI_Aint step = 1;
  for (int d : dims) {
    stride[static_cast<size_t>(d)] = step;
    step *= sizes[d];
  }
  for (int d = 0; d < nd; ++d)
    if (subsizes[d] == 0) return true;
  std::vector<int> idx(static_cast<size_t>(nd), 0);
  const int fast = dims[0];
  for (;;) {
    MPI_Aint element = 0;
    for (int d = 0; d < nd; ++d) element += (starts[d] + (d == fast ? 0 : idx[static_cast<size_t>(d)])) * stride[static_cast<size_t>(d)];
    if (!elements(old, at + element * ext, subsizes[fast], run)) return false;
    int k = 1;  // the odometer over the other dimensions, next-fastest first
    for (; k < nd; ++k) {
      const int d = dims[static_cast<size_t>(k)];
      if (++idx[static_cast<size_t>(d)] < subsizes[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
    if (k >= nd) return true;
  }
}

// One element of t (whose shape is s) at `at`, in its typemap's order.
bool element(MPI_Datatype t, MPI_Aint at, const Shape& s, Run& run) {
  const Contents c(t);
  switch (c.combiner) {
    case MPI_COMBINER_NAMED:
    case MPI_COMBINER_F90_REAL:
    case MPI_COMBINER_F90_COMPLEX:
    case MPI_COMBINER_F90_INTEGER:
      return run.add(at + s.true_lb, s.size);  // a basic type; no gap (checked by the caller)
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
      return elements(c.types[0], at, 1, run);
    case MPI_COMBINER_CONTIGUOUS:
      return elements(c.types[0], at, c.ints[0], run);
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: {
      const int count = c.ints[0], block = c.ints[1];
      const MPI_Aint ext = shape_of(c.types[0]).extent;
      const MPI_Aint stride = c.combiner == MPI_COMBINER_VECTOR ? c.ints[2] * ext : c.addrs[0];
      if (stride == block * ext) return elements(c.types[0], at, int64_t{count} * block, run);
      for (int i = 0; i < count; ++i)
        if (!elements(c.types[0], at + i * stride, block, run)) return false;
      return true;
    }
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: {
      const int count = c.ints[0];
      const bool one_length = c.combiner == MPI_COMBINER_INDEXED_BLOCK || c.combiner == MPI_COMBINER_HINDEXED_BLOCK;
      const bool in_bytes = c.combiner == MPI_COMBINER_HINDEXED || c.combiner == MPI_COMBINER_HINDEXED_BLOCK;
      const MPI_Aint ext = shape_of(c.types[0]).extent;
      const int* displs = c.ints.data() + (one_length ? 2 : 1 + count);  // unused for the h- forms
      for (int i = 0; i < count; ++i) {
        const int block = one_length ? c.ints[1] : c.ints[1 + i];
        const MPI_Aint displ = in_bytes ? c.addrs[i] : displs[i] * ext;
        if (!elements(c.types[0], at + displ, block, run)) return false;
      }
      return true;
    }
    case MPI_COMBINER_STRUCT: {
      const int count = c.ints[0];
      for (int i = 0; i < count; ++i)
        if (!elements(c.types[i], at + c.addrs[i], c.ints[1 + i], run)) return false;
      return true;
    }
    case MPI_COMBINER_SUBARRAY:
      return subarray(c, at, run);
    default:  // darray and the rest
      return probe(t, at, s, run);
  }
}

// n consecutive elements of t from `at` (each `extent` after the previous).
bool elements(MPI_Datatype t, MPI_Aint at, int64_t n, Run& run) {
  if (n <= 0) return true;
  const Shape s = shape_of(t);
  if (s.size == 0) return true;
  if (s.size != s.true_extent) return false;  // a gap inside an element, or bytes twice
  if (!element(t, at, s, run)) return false;
  if (n == 1) return true;
  // Element 0 is one run from at + true_lb; the next begins where it ends
  // only when the extent is the size, and then all of them follow on.
  return s.extent == s.size && run.add(at + s.extent + s.true_lb, (n - 1) * s.size);
}

}  // namespace

bool typemap_in_order(MPI_Datatype t) {
  Run run;
  return elements(t, 0, 1, run);
}

}  // namespace railcoll::mpi
