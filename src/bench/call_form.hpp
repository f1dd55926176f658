// How a benchmark calls the collective: railcoll_COLL, railcoll_iCOLL +
// railcoll_wait (--nonblocking), or railcoll_start + railcoll_wait of one
// railcoll_COLL_init request (--persistent); bench/overlap.hpp times the last two.
#pragma once

namespace railcoll::bench {

enum class CallForm { Blocking, Nonblocking, Persistent };

// "blocking", "nonblocking", "persistent": the option's name and the records' "form".
inline const char* call_form_name(CallForm f) {
  return f == CallForm::Blocking ? "blocking" : f == CallForm::Nonblocking ? "nonblocking" : "persistent";
}

}  // namespace railcoll::bench
