// railcoll's failures as MPI errors: an error class per railcoll status (made
// on first use with MPI_Add_error_class, its string railcoll_strerror's) and
// an error code per failure whose string is railcoll's message, so that
// MPI_Error_class says what kind of failure and MPI_Error_string what exactly
// happened. The communicator's error handler gets the code, as for any MPI
// error: MPI_ERRORS_ARE_FATAL ends the job (railcoll's message is written to
// stderr first, whatever the handler prints), MPI_ERRORS_RETURN returns it.
#include <unistd.h>

#include <string>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

namespace {

constexpr int kStatuses = RAILCOLL_ERR_BROKEN + 1;
// Codes are a finite resource of the MPI library: after this many failures
// the last code of each class is reused, its string replaced.
constexpr int kMaxCodes = 64;
int classes[kStatuses] = {};
int last_code[kStatuses] = {};
int codes_made = 0;

int code_for(railcoll_status_t status, const std::string& message) {
  int s = status > 0 && status < kStatuses ? status : RAILCOLL_ERR_INTERNAL;
  if (!classes[s]) {
    PMPI_Add_error_class(&classes[s]);
    std::string text = std::string("railcoll: ") + railcoll_strerror(static_cast<railcoll_status_t>(s));
    PMPI_Add_error_string(classes[s], text.c_str());
  }
  if (codes_made < kMaxCodes || !last_code[s]) {
    PMPI_Add_error_code(classes[s], &last_code[s]);
    ++codes_made;
  }
  PMPI_Add_error_string(last_code[s], message.substr(0, MPI_MAX_ERROR_STRING - 1).c_str());
  return last_code[s];
}

bool handler_is_fatal(MPI_Comm comm) {
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  PMPI_Comm_get_errhandler(comm, &handler);
  bool fatal = handler == MPI_ERRORS_ARE_FATAL;
#ifdef MPI_ERRORS_ABORT
  fatal = fatal || handler == MPI_ERRORS_ABORT;
#endif
  if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
  return fatal;
}

int hand_over(MPI_Comm comm, Coll c, int code, const std::string& message) {
  if (handler_is_fatal(comm)) {
    std::string line = "railcoll-mpi: rank " + std::to_string(layer().world_rank) + ": " + message + "\n";
    if (write(2, line.data(), line.size()) < 0) {
    }
  }
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace

int raise_railcoll(MPI_Comm comm, Coll c, railcoll_status_t status, const std::string& detail) {
  std::string message = std::string("railcoll: ") + mpi_name(c) + ": " + detail;
  return hand_over(comm, c, code_for(status, message), message);
}

int raise_mpi(MPI_Comm comm, Coll c, int error_class, const std::string& detail) {
  return hand_over(comm, c, error_class, std::string("railcoll: ") + mpi_name(c) + ": " + detail);
}

}  // namespace railcoll::mpi
