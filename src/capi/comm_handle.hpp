// The C handle around a runtime communicator, for the constructors that live
// outside runtime_c.cpp (which owns struct railcoll_comm): oob_c.cpp.
#pragma once
#include <memory>

#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"
#include "select/select.hpp"

namespace railcoll::capi {

// A new handle owning `comm`, choosing algorithms with `selector`.
railcoll_comm_t adopt_comm(Selector selector, std::unique_ptr<rt::Comm> comm);

}  // namespace railcoll::capi
