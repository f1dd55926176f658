// railcoll's failures as MPI errors: an error class per railcoll status (made
// on first use with MPI_Add_error_class, its string railcoll_strerror's) and
// an error code per failure whose string is railcoll's message, so that
// MPI_Error_class says what kind of failure and MPI_Error_string what exactly
// happened. The communicator's error handler gets the code, as for any MPI
// error: MPI_ERRORS_ARE_FATAL ends the job (railcoll's message is written to
// stderr first, whatever the handler prints), MPI_ERRORS_RETURN returns it.
#include <unistd.h>

#include <algorithm>
#include <mutex>
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
std::mutex codes_mutex;  // the codes above, under MPI_THREAD_MULTIPLE

// MPI_Error_string holds MPI_MAX_ERROR_STRING bytes (256 in Open MPI), and a
// timeout's message names its culprit near the end (docs/observability.md):
// one too long is cut to who failed and how, whom it waited for and the
// likely cause, so that the rank behind is still named.
std::string fit_error_string(const std::string& message) {
  const size_t room = MPI_MAX_ERROR_STRING - 1;
  if (message.size() <= room) return message;
  // From `key` to the first of `ends` after it.
  auto part = [&](const std::string& key, std::initializer_list<const char*> ends) -> std::string {
    size_t at = message.find(key);
    if (at == std::string::npos) return "";
    size_t end = message.size();
    for (const char* e : ends) end = std::min(end, message.find(e, at + key.size()));
    return message.substr(at, end - at);
  };
  std::string head = message.substr(0, std::min({message.find(" waiting in "), message.find(" flushing "),
                                                  message.find(';'), message.find(" (rank ")}));
  const std::string whom = part("waiting for rank ", {";"});
  const std::string cause = part("likely cause: ", {" (rank "});
  std::string fitted = head;
  if (!whom.empty()) fitted += "; " + whom;
  if (!cause.empty()) fitted += "; " + cause;
  return fitted.substr(0, room);
}

int code_for(railcoll_status_t status, const std::string& message) {
  std::lock_guard<std::mutex> lock(codes_mutex);
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
  PMPI_Add_error_string(last_code[s], fit_error_string(message).c_str());
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

void say(const std::string& message) {
  std::string line = "railcoll-mpi: rank " + std::to_string(layer().world_rank) + ": " + message + "\n";
  if (write(2, line.data(), line.size()) < 0) {
  }
}

int hand_over(MPI_Comm comm, int code, const std::string& message) {
  if (handler_is_fatal(comm)) say(message);
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace

int raise_railcoll(MPI_Comm comm, const char* call, railcoll_status_t status, const std::string& detail) {
  std::string message = std::string("railcoll: ") + call + ": " + detail;
  return hand_over(comm, code_for(status, message), message);
}

int railcoll_error_code(const char* call, railcoll_status_t status, const std::string& detail) {
  return code_for(status, std::string("railcoll: ") + call + ": " + detail);
}

int call_errhandler(MPI_Comm comm, int code) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (handler_is_fatal(comm)) {
    PMPI_Error_string(code, text, &len);
    say(text);
  }
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

int raise_mpi(MPI_Comm comm, const char* call, int error_class, const std::string& detail) {
  return hand_over(comm, error_class, std::string("railcoll: ") + call + ": " + detail);
}

}  // namespace railcoll::mpi
