// How a served call starts: the route (railcoll or MPI, read from what every
// rank of the call shares: layer.hpp) and the small helpers every served
// collective uses once routed.
#pragma once
#include <string>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

class Route {
 public:
  // `request`: where a nonblocking or persistent call's request goes (set to
  // MPI_REQUEST_NULL when the call fails before railcoll takes it).
  Route(Coll c, MPI_Comm comm, Mode mode = Mode::Blocking, MPI_Request* request = nullptr)
      : c_(c), mode_(mode), comm_(comm), request_(request) {
    const Layer& L = layer();
    if (!L.started) {
      open_ = false;  // MPI_Init did not come through here: nothing to count either
      return;
    }
    if (!(L.colls & (1u << static_cast<int>(c)))) {
      decline(Reason::NotSelected);
      return;
    }
    target_ = classify(comm);
    if (target_.passed) decline(target_.why);
  }
  bool open() const { return open_; }
  void decline(Reason why) {
    if (open_) open_ = false, why_ = why;
  }
  // A buffer of the call as railcoll would take it: the datatype known and
  // the count sane. Its layout is not asked: that is this rank's alone.
  void need(const DataView& v) {
    if (!v.valid) decline(Reason::BadArgument);
  }
  // MPI serves the call (counted, with the reason).
  bool to_mpi() {
    if (open_) return false;
    if (layer().started) count_passed(c_, mode_, why_);
    return true;
  }
  Coll coll() const { return c_; }
  Mode mode() const { return mode_; }
  MPI_Request* request() const { return request_; }
  CommState* state() const { return target_.state; }
  const char* name() const { return mpi_name(c_, mode_); }
  int rank() const { return target_.rank; }
  int size() const { return target_.size; }
  // railcoll serves it: its communicator, made now on a first call; null when
  // that failed, and error() is what the call returns.
  railcoll_comm_t railcoll() {
    layer().served[static_cast<int>(mode_)][static_cast<int>(c_)].fetch_add(1, std::memory_order_relaxed);
    if (!target_.rc) ensure_railcoll(comm_, name(), &target_);
    if (!target_.rc) no_request();
    return target_.rc;
  }
  int error() const { return target_.error; }
  int finish(railcoll_status_t st) {
    if (st == RAILCOLL_OK) return MPI_SUCCESS;
    no_request();
    return raise_railcoll(comm_, name(), st, railcoll_last_error());
  }
  int refuse(int error_class, const std::string& why) {
    no_request();
    return raise_mpi(comm_, name(), error_class, why);
  }

 private:
  void no_request() {
    if (request_) *request_ = MPI_REQUEST_NULL;
  }
  Coll c_;
  Mode mode_;
  MPI_Comm comm_;
  MPI_Request* request_;
  bool open_ = true;
  Reason why_ = Reason::NotSelected;
  Target target_;
};

inline std::string bytes_text(uint64_t n) { return std::to_string(n) + " byte" + (n == 1 ? "" : "s"); }

inline int check_root(Route& route, int root) {
  if (root >= 0 && root < route.size()) return MPI_SUCCESS;
  return route.refuse(MPI_ERR_ROOT, "root " + std::to_string(root) + " is not a rank of this communicator (" +
                                        std::to_string(route.size()) + " ranks)");
}

// The railcoll operator of a reduction over `data`, or -1 with the call
// declined (to MPI, on every rank alike: the operator and the datatype are
// the same on every rank). A user's operator runs on the datatype's own
// elements: data's reduce_type becomes RAILCOLL_OP_ELEMENTS, its reduce_count
// the count.
inline int reduce_op(Route& route, MPI_Op op, DataView* data) {
  Reason why = Reason::ReduceType;
  int rop = data->valid ? railcoll_op(op, data->reduce_groups, &why) : -1;
  if (rop < 0 && data->valid && why == Reason::Operator) {
    rop = user_op(op, *data, &why);
    if (rop >= 0) data->reduce_type = RAILCOLL_OP_ELEMENTS, data->reduce_count = static_cast<uint64_t>(data->count);
  }
  if (rop < 0) route.decline(data->valid ? why : Reason::BadArgument);
  return rop;
}

}  // namespace railcoll::mpi
