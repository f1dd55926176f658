// User-defined operators inside railcoll's reductions. MPI has no call that
// gives an operator's function back, so MPI_Op_create is intercepted: the
// layer notes each C operator's function and commutativity by handle (and
// forgets it at MPI_Op_free, before MPI may hand the handle out again). A
// reduction with such an operator runs on railcoll with a railcoll operator
// (railcoll_op_create) that calls the function as MPI would: on the
// datatype's own elements, `len` of them, with the call's datatype, the lower
// ranks' values in `invec` (MPI 4.0 §6.9.5). A non-commutative operator runs
// only on the algorithms that keep rank order (railcoll's selection passes
// over the others). One railcoll operator is kept per (function, datatype,
// extent, commutativity), for the process: a call finds it again without
// making one, and a pending call never loses it whatever the program frees.
//
// Operators made by Fortran bindings that call PMPI_Op_create directly (Open
// MPI's) are not seen here, and go to MPI (reason "operator").
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

namespace {

#if MPI_VERSION >= 4
using LargeFunction = MPI_User_function_c;
#else
using LargeFunction = void;
#endif

struct Made {
  MPI_User_function* fn = nullptr;
  LargeFunction* fn_c = nullptr;  // MPI_Op_create_c's (MPI 4), with MPI_Count lengths
  bool commute = true;
};

// What a railcoll operator calls the program's function with.
struct Context {
  Made made;
  MPI_Datatype type;
  size_t extent;
};

struct Ops {
  std::mutex mu;
  std::map<MPI_Op, Made> made;
  using Key = std::tuple<MPI_User_function*, LargeFunction*, MPI_Datatype, size_t, bool>;
  std::map<Key, std::pair<railcoll_op_t, Context*>> railcoll_ops;
};
Ops& ops() {
  static Ops* o = new Ops;  // a call may still run while statics are destroyed
  return *o;
}

// railcoll_user_fn: inout[i] = in[i] op inout[i], `n` elements, in pieces of
// at most INT_MAX for an int length.
void run_user(const void* in, void* inout, size_t n, void* context) {
  const Context& c = *static_cast<const Context*>(context);
  MPI_Datatype type = c.type;
  char* a = static_cast<char*>(const_cast<void*>(in));
  char* b = static_cast<char*>(inout);
#if MPI_VERSION >= 4
  if (c.made.fn_c) {
    MPI_Count len = static_cast<MPI_Count>(n);
    c.made.fn_c(a, b, &len, &type);
    return;
  }
#endif
  while (n > 0) {
    int len = static_cast<int>(std::min<size_t>(n, INT_MAX));
    const size_t done = static_cast<size_t>(len);
    c.made.fn(a, b, &len, &type);
    a += done * c.extent, b += done * c.extent, n -= done;
  }
}

void note(MPI_Op op, const Made& m) {
  std::lock_guard<std::mutex> lock(ops().mu);
  ops().made[op] = m;
}

}  // namespace

int user_op(MPI_Op op, const DataView& data, Reason* why) {
  Ops& o = ops();
  std::lock_guard<std::mutex> lock(o.mu);
  auto it = o.made.find(op);
  if (it == o.made.end()) {
    *why = Reason::Operator;
    return -1;
  }
  // The function reads `len` elements `extent` apart from the address it is
  // given: served when they are one piece from the buffer's own address.
  if (!data.contiguous || data.offset != 0 || data.extent <= 0 ||
      static_cast<uint64_t>(data.extent) != data.type_size) {
    *why = Reason::ReduceType;
    return -1;
  }
  const Made& m = it->second;
  const size_t extent = static_cast<size_t>(data.extent);
  const Ops::Key key{m.fn, m.fn_c, data.type, extent, m.commute};
  auto found = o.railcoll_ops.find(key);
  if (found != o.railcoll_ops.end()) return found->second.first;
  auto* context = new Context{m, data.type, extent};
  railcoll_op_t rop;
  if (railcoll_op_create(run_user, extent, m.commute, context, &rop) != RAILCOLL_OK) {
    delete context;
    *why = Reason::Operator;
    return -1;
  }
  o.railcoll_ops.emplace(key, std::make_pair(rop, context));
  return rop;
}

void ops_finalize() {
  Ops& o = ops();
  std::lock_guard<std::mutex> lock(o.mu);
  for (auto& kv : o.railcoll_ops) {
    railcoll_op_free(&kv.second.first);
    delete kv.second.second;
  }
  o.railcoll_ops.clear();
  o.made.clear();
}

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

extern "C" {

int MPI_Op_create(MPI_User_function* user_fn, int commute, MPI_Op* op) {
  const int rc = PMPI_Op_create(user_fn, commute, op);
  if (rc == MPI_SUCCESS && user_fn) note(*op, Made{user_fn, nullptr, commute != 0});
  return rc;
}

#if MPI_VERSION >= 4
int MPI_Op_create_c(MPI_User_function_c* user_fn, int commute, MPI_Op* op) {
  const int rc = PMPI_Op_create_c(user_fn, commute, op);
  if (rc == MPI_SUCCESS && user_fn) note(*op, Made{nullptr, user_fn, commute != 0});
  return rc;
}
#endif

int MPI_Op_free(MPI_Op* op) {
  if (op) {
    std::lock_guard<std::mutex> lock(ops().mu);
    ops().made.erase(*op);
  }
  return PMPI_Op_free(op);
}

}  // extern "C"
