// Datatypes and operators as railcoll sees them: how many bytes, whether they
// lie in one piece (a local fact: it decides packing, never the route), and
// which of railcoll's types a reduction combines (predefined types only, as
// MPI's predefined operators take). Each
// type's facts are computed once: a predefined type's kept for the process (MPI
// never frees one), a derived type's on it (a datatype attribute, deleted with
// it by MPI_Type_free, so a handle MPI reuses never inherits them); the latest
// few types' are found without asking MPI (Recent, layer.hpp: each thread's
// own). Computing and keeping them is locked: two threads may use one datatype
// at once under MPI_THREAD_MULTIPLE.
#include <map>
#include <mutex>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

namespace {

struct Facts {
  MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  bool in_order = false;     // one element's typemap is one ascending run with no gap (typemap_in_order)
  int reduce_type = 0;       // railcoll_datatype_t of the one basic type, 0 when none railcoll reduces
  unsigned reduce_groups = 0;  // the groups of MPI's operators it belongs to (ReduceGroup)
};

int type_keyval = MPI_KEYVAL_INVALID;
std::map<MPI_Datatype, Facts>* named_facts = nullptr;  // the predefined types seen
std::mutex facts_mutex;  // guards named_facts, type_keyval and the attributes' making
RAILCOLL_MPI_THREAD_LOCAL Recent<MPI_Datatype, const Facts> recent;

int delete_facts(MPI_Datatype, int, void* value, void*) {
  Recent<MPI_Datatype, const Facts>::forget_everywhere();
  delete static_cast<Facts*>(value);
  return MPI_SUCCESS;
}

bool is_named(MPI_Datatype t) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  return combiner == MPI_COMBINER_NAMED;
}

// The predefined types railcoll reduces, by MPI's groups of them (MPI 4.0
// §6.9.2): C integers (signed and unsigned, 8 to 64 bits), float and double,
// C bool (logical), MPI_BYTE (bitwise), the (value, index) pairs (MINLOC,
// MAXLOC); and their Fortran twins: Fortran integers (MPI_INTEGER,
// MPI_INTEGER1-8), reals (MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL4, MPI_REAL8),
// MPI_LOGICAL (gfortran's .TRUE. is 1, as railcoll's logical results), and
// MPI_2INTEGER (laid out as MPI_2INT). MPI_CHAR is not an integer to MPI's
// operators, nor long double railcoll's, nor a complex type: they go to MPI.
struct Reducible {
  int type = 0;            // railcoll_datatype_t; 0: none
  unsigned groups = 0;     // ReduceGroup bits
};

Reducible reducible_named(MPI_Datatype t) {
  int size = 0;
  PMPI_Type_size(t, &size);
  const MPI_Datatype signed_ints[] = {MPI_SIGNED_CHAR, MPI_SHORT,    MPI_INT,      MPI_LONG,    MPI_LONG_LONG,
                                      MPI_LONG_LONG_INT, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T};
  const MPI_Datatype unsigned_ints[] = {MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
                                        MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T};
  const int signed_of_size[9] = {0, RAILCOLL_INT8, RAILCOLL_INT16, 0, RAILCOLL_INT32, 0, 0, 0, RAILCOLL_INT64};
  const int unsigned_of_size[9] = {0, RAILCOLL_UINT8, RAILCOLL_UINT16, 0, RAILCOLL_UINT32, 0, 0, 0, RAILCOLL_UINT64};
  const bool sized = size >= 1 && size <= 8;
  for (MPI_Datatype s : signed_ints)
    if (t == s) return {sized ? signed_of_size[size] : 0, kIntegerGroup};
  for (MPI_Datatype u : unsigned_ints)
    if (t == u) return {sized ? unsigned_of_size[size] : 0, kIntegerGroup};
  if (t == MPI_FLOAT) return {RAILCOLL_FLOAT, kFloatingGroup};
  if (t == MPI_DOUBLE) return {RAILCOLL_DOUBLE, kFloatingGroup};
  const MPI_Datatype fortran_ints[] = {MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8};
  for (MPI_Datatype f : fortran_ints)
    if (t == f) return {sized ? signed_of_size[size] : 0, kFortranIntegerGroup};
  const MPI_Datatype fortran_reals[] = {MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL4, MPI_REAL8};
  for (MPI_Datatype f : fortran_reals)
    if (t == f) return {size == 4 ? RAILCOLL_FLOAT : size == 8 ? RAILCOLL_DOUBLE : 0, kFloatingGroup};
  if (t == MPI_LOGICAL) return {sized ? signed_of_size[size] : 0, kLogicalGroup};
  if (t == MPI_2INTEGER && size == 2 * static_cast<int>(sizeof(int))) return {RAILCOLL_2INT, kPairGroup};
  if (t == MPI_C_BOOL && size == 1) return {RAILCOLL_UINT8, kLogicalGroup};
  if (t == MPI_BYTE) return {RAILCOLL_UINT8, kByteGroup};
  // (value, index) pairs, laid out as MPI's C structs (padding included) as railcoll's are.
  if (t == MPI_FLOAT_INT) return {RAILCOLL_FLOAT_INT, kPairGroup};
  if (t == MPI_DOUBLE_INT) return {RAILCOLL_DOUBLE_INT, kPairGroup};
  if (t == MPI_LONG_INT) return {RAILCOLL_LONG_INT, kPairGroup};
  if (t == MPI_2INT) return {RAILCOLL_2INT, kPairGroup};
  if (t == MPI_SHORT_INT) return {RAILCOLL_SHORT_INT, kPairGroup};
  return {};
}

Facts measure(MPI_Datatype t, bool named) {
  Facts f;
  PMPI_Type_size_x(t, &f.size);
  PMPI_Type_get_extent_x(t, &f.lb, &f.extent);
  PMPI_Type_get_true_extent_x(t, &f.true_lb, &f.true_extent);
  f.in_order = f.size == f.true_extent && (named || typemap_in_order(t));
  // MPI's predefined operators take predefined datatypes only: Open MPI and
  // MPICH refuse a derived one (MPI_ERR_OP), so a valid program passes the
  // same predefined type on every rank, and a derived one goes to MPI on every
  // rank, which reports the error as it would without this library.
  const Reducible r = named ? reducible_named(t) : Reducible{};
  f.reduce_type = r.type;
  f.reduce_groups = r.type ? r.groups : 0;
  return f;
}

// Where t's facts are kept, computed on t's first use.
const Facts* kept_facts(MPI_Datatype t) {
  std::lock_guard<std::mutex> lock(facts_mutex);
  if (is_named(t)) {
    if (!named_facts) named_facts = new std::map<MPI_Datatype, Facts>;
    auto it = named_facts->find(t);
    if (it == named_facts->end()) it = named_facts->emplace(t, measure(t, true)).first;
    return &it->second;
  }
  if (type_keyval == MPI_KEYVAL_INVALID)
    PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_facts, &type_keyval, nullptr);
  void* cached = nullptr;
  int found = 0;
  PMPI_Type_get_attr(t, type_keyval, &cached, &found);
  if (found) return static_cast<Facts*>(cached);
  auto* f = new Facts(measure(t, false));
  PMPI_Type_set_attr(t, type_keyval, f);
  return f;
}

const Facts& facts(MPI_Datatype t) {
  const Facts* f = recent.find(t);
  if (!f) recent.add(t, f = kept_facts(t));
  return *f;
}

}  // namespace

DataView view(MPI_Datatype type, int64_t count) {
  DataView v;
  v.type = type;
  v.count = count;
  if (type == MPI_DATATYPE_NULL || count < 0) return v;
  const Facts& f = facts(type);
  if (f.size < 0 || f.extent < 0) return v;  // MPI_UNDEFINED: let MPI say what is wrong
  v.valid = true;
  v.type_size = static_cast<uint64_t>(f.size);
  v.bytes = v.type_size * static_cast<uint64_t>(count);
  v.offset = static_cast<MPI_Aint>(f.true_lb);
  v.extent = static_cast<MPI_Aint>(f.extent);
  // In place only where MPI's order is memory's: each element one ascending
  // run with no gap, and each element beginning where the previous one ends
  // (so do the blocks of consecutive ranks in a gather's buffer, which lie
  // count * extent apart). Otherwise the layer packs (pack.cpp).
  v.contiguous = v.bytes == 0 || (f.in_order && f.extent == f.size);
  v.reduce_type = f.reduce_type;
  v.reduce_groups = f.reduce_groups;
  v.reduce_count = f.reduce_type ? static_cast<uint64_t>(count) : 0;  // a predefined type is one element
  return v;
}

int railcoll_op(MPI_Op op, unsigned groups, Reason* why) {
  struct Pair {
    MPI_Op mpi;
    int railcoll;
    unsigned groups;  // the type groups MPI defines the operator on
  };
  const unsigned arithmetic = kIntegerGroup | kFortranIntegerGroup | kFloatingGroup;
  const Pair ops[] = {{MPI_SUM, RAILCOLL_SUM, arithmetic},  {MPI_PROD, RAILCOLL_PROD, arithmetic},
                      {MPI_MIN, RAILCOLL_MIN, arithmetic},  {MPI_MAX, RAILCOLL_MAX, arithmetic},
                      {MPI_LAND, RAILCOLL_LAND, kIntegerGroup | kLogicalGroup},
                      {MPI_LOR, RAILCOLL_LOR, kIntegerGroup | kLogicalGroup},
                      {MPI_LXOR, RAILCOLL_LXOR, kIntegerGroup | kLogicalGroup},
                      {MPI_BAND, RAILCOLL_BAND, kIntegerGroup | kFortranIntegerGroup | kByteGroup},
                      {MPI_BOR, RAILCOLL_BOR, kIntegerGroup | kFortranIntegerGroup | kByteGroup},
                      {MPI_BXOR, RAILCOLL_BXOR, kIntegerGroup | kFortranIntegerGroup | kByteGroup},
                      {MPI_MINLOC, RAILCOLL_MINLOC, kPairGroup},
                      {MPI_MAXLOC, RAILCOLL_MAXLOC, kPairGroup}};
  for (const Pair& p : ops) {
    if (p.mpi != op) continue;
    if (groups & p.groups) return p.railcoll;
    *why = Reason::ReduceType;  // MPI refuses the pair (or defines it where railcoll does not reduce)
    return -1;
  }
  *why = Reason::Operator;  // user-defined, MPI_REPLACE, MPI_NO_OP
  return -1;
}

void datatypes_finalize() {
  std::lock_guard<std::mutex> lock(facts_mutex);
  recent.clear();
  Recent<MPI_Datatype, const Facts>::forget_everywhere();
  delete named_facts;
  named_facts = nullptr;
  if (type_keyval != MPI_KEYVAL_INVALID) PMPI_Type_free_keyval(&type_keyval);
}

}  // namespace railcoll::mpi
