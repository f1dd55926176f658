// The executor's one hook for whoever watches calls (docs/observability.md):
// the flight recorder and the trace sink (runtime/observe/) sit behind it. The
// executor holds a pointer that is null when nothing watches, so the hook
// costs a test of that pointer per op and nothing else: no clock is read, no
// event built (tests/mp_call_cost.c counts the instructions of a call).
//
// Called on the thread that runs the executor, in this order per call:
// on_call_begin, then per op of this rank's program on_op (its first run;
// a wait that must wait is reported before it waits, with on_wait and no
// text, again with its text once it has waited a millisecond, then on_op_end
// when it is over), and on_call_end. on_arrival brackets a frame's
// payload arriving on a rail (the receiver's view of the rail's time), on_send
// one part of a put queued on a rail.
#pragma once
#include <cstdint>
#include <string>

#include "core/schedule.hpp"

namespace railcoll::rt {

struct Plan;

class Observer {
 public:
  virtual ~Observer() = default;
  // call: the communicator's call number; plan.what says the collective,
  // algorithm and sizes.
  virtual void on_call_begin(uint64_t call, const Plan& plan) = 0;
  // Op `index` of this rank's program starts.
  virtual void on_op(int index, const Op& op) = 0;
  // Op `index` is over (a wait: its counter reached the value).
  virtual void on_op_end(int index, const Op& op) = 0;
  // The call must wait at op `index` (a wait or a flush; past the last op:
  // its sends draining): for `peer` on `rail` (peer -1: unknown; rail -1: the
  // node's memory, kStripe: every rail), as the text `what` says ("" when
  // it begins: the text is made only for a wait that lasts).
  virtual void on_wait(int index, int peer, int rail, const std::string& what) = 0;
  // One part of a put leaves for `peer` on `rail` (-1: a local peer).
  virtual void on_send(int index, int peer, int rail, uint64_t bytes) = 0;
  // A frame of the current call from `peer` on `rail`: its header arrived
  // (begin) or its payload is all in (!begin).
  virtual void on_arrival(int peer, int rail, int op, uint64_t bytes, bool begin) = 0;
  // The call ended; error: "" when it succeeded, else the message it threw.
  virtual void on_call_end(uint64_t call, const std::string& error) = 0;
};

}  // namespace railcoll::rt
