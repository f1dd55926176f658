// The Fortran entry points of the C entry points that are not collectives but
// that a served call depends on, where the MPI's Fortran binding calls PMPI_*
// itself (fortran.hpp): MPI_INIT and MPI_INIT_THREAD (the layer starts there),
// MPI_FINALIZE (the report, the communicators' end), and the completion and
// start calls, which must know the served requests (requests.cpp). Each
// converts the Fortran arguments -- request arrays, statuses, 1-based
// indices, LOGICAL flags -- and calls the C entry point.
#include "mpi/fortran/fortran.hpp"

namespace {

using railcoll::mpi::fortran::logical;
using railcoll::mpi::fortran::put_status;
using railcoll::mpi::fortran::Requests;
using railcoll::mpi::fortran::status_ignored;
using railcoll::mpi::fortran::statuses_ignored;

void set(MPI_Fint* ierror, int rc) {
  if (ierror) *ierror = rc;
}

// One status: the C call's, copied out unless the program passed MPI_STATUS_IGNORE.
class Status {
 public:
  explicit Status(void* f) : f_(f) {}
  ~Status() {
    if (!status_ignored(f_)) put_status(c_, f_, 0);
  }
  MPI_Status* c() { return status_ignored(f_) ? MPI_STATUS_IGNORE : &c_; }

 private:
  void* f_;
  MPI_Status c_{};
};

// `count` statuses (MPI_STATUSES_IGNORE: none), the first `written()` copied out.
class Statuses {
 public:
  Statuses(int count, void* f) : f_(f), c_(statuses_ignored(f) || count <= 0 ? 0 : static_cast<size_t>(count)) {}
  void copy_out(int n) {
    for (int i = 0; i < n && static_cast<size_t>(i) < c_.size(); ++i) put_status(c_[i], f_, static_cast<size_t>(i));
  }
  MPI_Status* c() { return statuses_ignored(f_) ? MPI_STATUSES_IGNORE : c_.data(); }

 private:
  void* f_;
  std::vector<MPI_Status> c_;
};

void init(MPI_Fint* ierror) { set(ierror, MPI_Init(nullptr, nullptr)); }
void init_thread(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierror) {
  int p = 0;
  set(ierror, MPI_Init_thread(nullptr, nullptr, *required, &p));
  *provided = p;
}
void finalize(MPI_Fint* ierror) { set(ierror, MPI_Finalize()); }

void wait(MPI_Fint* request, void* status, MPI_Fint* ierror) {
  Requests r(1, request);
  Status s(status);
  set(ierror, MPI_Wait(r.c(), s.c()));
}
void test(MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror) {
  Requests r(1, request);
  Status s(status);
  int f = 0;
  set(ierror, MPI_Test(r.c(), &f, s.c()));
  *flag = logical(f);
}
void request_get_status(MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror) {
  Status s(status);
  int f = 0;
  set(ierror, MPI_Request_get_status(PMPI_Request_f2c(*request), &f, s.c()));
  *flag = logical(f);
}
void request_free(MPI_Fint* request, MPI_Fint* ierror) {
  Requests r(1, request);
  set(ierror, MPI_Request_free(r.c()));
}
void cancel(MPI_Fint* request, MPI_Fint* ierror) {  // a served collective's is refused, as MPI does (requests.cpp)
  MPI_Request c = PMPI_Request_f2c(*request);
  set(ierror, MPI_Cancel(&c));
}
void start(MPI_Fint* request, MPI_Fint* ierror) {
  Requests r(1, request);
  set(ierror, MPI_Start(r.c()));
}
void startall(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierror) {
  Requests r(*count, requests);
  set(ierror, MPI_Startall(*count, r.c()));
}
void waitall(MPI_Fint* count, MPI_Fint* requests, void* statuses, MPI_Fint* ierror) {
  Requests r(*count, requests);
  Statuses s(*count, statuses);
  const int rc = MPI_Waitall(*count, r.c(), s.c());
  s.copy_out(*count);  // also with MPI_ERR_IN_STATUS: each status says how its request ended
  set(ierror, rc);
}
void testall(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, void* statuses, MPI_Fint* ierror) {
  Requests r(*count, requests);
  Statuses s(*count, statuses);
  int f = 0;
  const int rc = MPI_Testall(*count, r.c(), &f, s.c());
  if (f || rc == MPI_ERR_IN_STATUS) s.copy_out(*count);
  *flag = logical(f);
  set(ierror, rc);
}
// Fortran indices count from 1; MPI_UNDEFINED stays.
MPI_Fint one_based(int index) { return index == MPI_UNDEFINED ? MPI_UNDEFINED : index + 1; }
void waitany(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, void* status, MPI_Fint* ierror) {
  Requests r(*count, requests);
  Status s(status);
  int i = MPI_UNDEFINED;
  set(ierror, MPI_Waitany(*count, r.c(), &i, s.c()));
  *index = one_based(i);
}
void testany(MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag, void* status, MPI_Fint* ierror) {
  Requests r(*count, requests);
  Status s(status);
  int i = MPI_UNDEFINED, f = 0;
  set(ierror, MPI_Testany(*count, r.c(), &i, &f, s.c()));
  *index = one_based(i);
  *flag = logical(f);
}
void some(int (*fn)(int, MPI_Request[], int*, int[], MPI_Status[]), MPI_Fint* incount, MPI_Fint* requests,
          MPI_Fint* outcount, MPI_Fint* indices, void* statuses, MPI_Fint* ierror) {
  Requests r(*incount, requests);
  Statuses s(*incount, statuses);
  std::vector<int> c_indices(*incount > 0 ? static_cast<size_t>(*incount) : 0);
  int out = MPI_UNDEFINED;
  set(ierror, fn(*incount, r.c(), &out, c_indices.data(), s.c()));
  *outcount = out;
  if (out == MPI_UNDEFINED) return;
  for (int i = 0; i < out; ++i) indices[i] = one_based(c_indices[static_cast<size_t>(i)]);
  s.copy_out(out);
}
void waitsome(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, void* statuses,
              MPI_Fint* ierror) {
  some(MPI_Waitsome, incount, requests, outcount, indices, statuses, ierror);
}
void testsome(MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices, void* statuses,
              MPI_Fint* ierror) {
  some(MPI_Testsome, incount, requests, outcount, indices, statuses, ierror);
}

}  // namespace

// RAILCOLL_F_ROUTINE(lower, UPPER, PARAMS, ARGS): the entry points of the
// function `lower` above under the names the binding calls.
#if defined(OPEN_MPI)  // every name of mpif.h, use mpi and use mpi_f08
#define RAILCOLL_F_ROUTINE(lower, UPPER, PARAMS, ARGS)                  \
  extern "C" void mpi_##lower##_ PARAMS { lower ARGS; }                 \
  RAILCOLL_F77_ALIASES(mpi_##lower, MPI_##UPPER, PARAMS)                \
  extern "C" void mpi_##lower##_f08_ PARAMS { lower ARGS; }
#else  // MPICH: its mpi_f08 binding's names (mpif.h and use mpi call MPI_*)
#define RAILCOLL_F_ROUTINE(lower, UPPER, PARAMS, ARGS) extern "C" void mpi_##lower##_f08_ PARAMS { lower ARGS; }
#endif

RAILCOLL_F_ROUTINE(init, INIT, (MPI_Fint * e), (e))
RAILCOLL_F_ROUTINE(init_thread, INIT_THREAD, (MPI_Fint * q, MPI_Fint* p, MPI_Fint* e), (q, p, e))
RAILCOLL_F_ROUTINE(finalize, FINALIZE, (MPI_Fint * e), (e))
RAILCOLL_F_ROUTINE(wait, WAIT, (MPI_Fint * r, void* s, MPI_Fint* e), (r, s, e))
RAILCOLL_F_ROUTINE(test, TEST, (MPI_Fint * r, MPI_Fint* f, void* s, MPI_Fint* e), (r, f, s, e))
RAILCOLL_F_ROUTINE(request_get_status, REQUEST_GET_STATUS, (MPI_Fint * r, MPI_Fint* f, void* s, MPI_Fint* e),
                   (r, f, s, e))
RAILCOLL_F_ROUTINE(request_free, REQUEST_FREE, (MPI_Fint * r, MPI_Fint* e), (r, e))
RAILCOLL_F_ROUTINE(cancel, CANCEL, (MPI_Fint * r, MPI_Fint* e), (r, e))
RAILCOLL_F_ROUTINE(start, START, (MPI_Fint * r, MPI_Fint* e), (r, e))
RAILCOLL_F_ROUTINE(startall, STARTALL, (MPI_Fint * n, MPI_Fint* r, MPI_Fint* e), (n, r, e))
RAILCOLL_F_ROUTINE(waitall, WAITALL, (MPI_Fint * n, MPI_Fint* r, void* s, MPI_Fint* e), (n, r, s, e))
RAILCOLL_F_ROUTINE(testall, TESTALL, (MPI_Fint * n, MPI_Fint* r, MPI_Fint* f, void* s, MPI_Fint* e), (n, r, f, s, e))
RAILCOLL_F_ROUTINE(waitany, WAITANY, (MPI_Fint * n, MPI_Fint* r, MPI_Fint* i, void* s, MPI_Fint* e), (n, r, i, s, e))
RAILCOLL_F_ROUTINE(testany, TESTANY, (MPI_Fint * n, MPI_Fint* r, MPI_Fint* i, MPI_Fint* f, void* s, MPI_Fint* e),
                   (n, r, i, f, s, e))
RAILCOLL_F_ROUTINE(waitsome, WAITSOME, (MPI_Fint * n, MPI_Fint* r, MPI_Fint* o, MPI_Fint* i, void* s, MPI_Fint* e),
                   (n, r, o, i, s, e))
RAILCOLL_F_ROUTINE(testsome, TESTSOME, (MPI_Fint * n, MPI_Fint* r, MPI_Fint* o, MPI_Fint* i, void* s, MPI_Fint* e),
                   (n, r, o, i, s, e))
