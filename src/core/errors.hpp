// The errors of every layer, in one place. Each carries a Status, whose values
// are those of the public railcoll_status_t (the C API checks that they agree),
// so no layer below the C API needs the public header.
#pragma once
#include <stdexcept>
#include <string>

namespace railcoll {

enum class Status : int {
  Ok = 0,
  Arg = 1,          // an argument is invalid (null, out of range, unknown name)
  Unsupported = 2,  // the algorithm does not take this option or input
  Verify = 3,       // a schedule failed verification
  NoMem = 4,
  Internal = 5,
  Timeout = 6,      // a deadline passed
  Peer = 7,         // a peer died, closed its connections or aborted the collective
  Network = 8,      // a socket call failed
  Protocol = 9,     // a malformed or unexpected message
  Mismatch = 10,    // ranks disagree (sizes, algorithm, collective)
  Bootstrap = 11,   // environment or store problem while creating a communicator
  Broken = 12,      // the communicator failed earlier and cannot be used
};

struct Error : std::runtime_error {
  Error(Status status, const std::string& what) : std::runtime_error(what), status(status) {}
  Status status;
};

// Bad input from a user (CLI argument, API argument): the message names the problem.
struct InputError : Error {
  explicit InputError(const std::string& what) : Error(Status::Arg, what) {}
};

// A failure while running: network, peers, deadlines, protocol.
struct RuntimeError : Error {
  RuntimeError(Status status, const std::string& what) : Error(status, what) {}
};

}  // namespace railcoll
