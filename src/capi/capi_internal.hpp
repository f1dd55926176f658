// Error plumbing shared by the C API files: every call returns a status and
// leaves its detailed message for railcoll_last_error().
#pragma once
#include <new>
#include <string>

#include "core/errors.hpp"
#include "railcoll/railcoll.h"

namespace railcoll::capi {

railcoll_status_t fail(railcoll_status_t st, const std::string& msg);
void clear_error();
const char* last_error_text();

template <class F>
railcoll_status_t guarded(F f) {
  try {
    clear_error();
    return f();
  } catch (const railcoll::Error& e) {
    return fail(static_cast<railcoll_status_t>(e.status), e.what());
  } catch (const std::bad_alloc&) {
    return fail(RAILCOLL_ERR_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    return fail(RAILCOLL_ERR_INTERNAL, e.what());
  }
}

}  // namespace railcoll::capi
