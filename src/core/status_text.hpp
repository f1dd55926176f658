// The words for a status (railcoll_strerror's text), for messages of the
// layers below the C API. Apart from errors.hpp, which every file includes.
#pragma once
#include "core/errors.hpp"

namespace railcoll {

// What a status means, in a few words (railcoll_strerror's text).
inline const char* status_text(Status s) {
  switch (s) {
    case Status::Ok: return "success";
    case Status::Arg: return "invalid argument";
    case Status::Unsupported: return "not supported by this algorithm";
    case Status::Verify: return "schedule failed verification";
    case Status::NoMem: return "out of memory";
    case Status::Internal: return "internal error";
    case Status::Timeout: return "deadline passed";
    case Status::Peer: return "a peer failed";
    case Status::Network: return "network error";
    case Status::Protocol: return "malformed or unexpected message";
    case Status::Mismatch: return "ranks disagree on the collective call";
    case Status::Bootstrap: return "cannot create the communicator";
    case Status::Broken: return "communicator is broken by an earlier failure";
  }
  return "unknown status code";
}

}  // namespace railcoll
