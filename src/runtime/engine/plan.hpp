// The plan of one collective call on one rank, and the checks a frame must pass
// against it before its payload is written anywhere. Socket-free, so the frame
// decoder can be fuzzed (tests/fuzz/).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/schedule.hpp"
#include "runtime/transport/wire.hpp"

namespace railcoll::rt {

// What one rank needs to execute a schedule: derived once, cached with it.
struct Plan {
  Schedule sched;
  uint64_t sig = 0;
  std::string what;  // "allgather/direct with 4096 B per rank"
  // The algorithm is proven right with send and recv one buffer
  // (AlgoSpec::in_place_ok): an in-place call needs no copy of its input.
  bool in_place_ok = false;
  // Puts and signals this rank receives as frames, by (sender, op); copies,
  // since a program yields its ops by value (schedule.hpp, Program).
  std::unordered_map<uint64_t, Op> incoming;
  std::vector<uint64_t> node_increments;  // per node counter of this rank's node
  // "" when every node's shared memory holds the schedule (the communicator
  // that made the plan knows every node's), else why not: decided once, when
  // the plan is made, and alike on every rank.
  std::string unfit;
};

uint64_t fnv(const std::string& s, uint64_t h = 1469598103934665603ull);
inline uint64_t key_of(int sender, int op) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(sender)) << 32) | static_cast<uint32_t>(op);
}

// A put into this node's shared buffer from a rank of the same node is a memcpy
// by the sender, not a message; the receiver sees at most a Notify.
bool memcpy_put(const Topology& t, int sender, const Op& op);

std::unique_ptr<Plan> make_plan(const Topology& t, int me, Collective collective, const std::string& algorithm,
                                const std::vector<uint64_t>& counts, const AlgoOptions& opts, const std::string& key);

// The parts a put is sent in: (rail, bytes); one part to a rank of the same node.
std::vector<std::pair<int, uint64_t>> put_parts(const Plan& p, const Topology& t, int sender, const Op& op);

// A Data or Notify frame of the current call, received by `me` on `rail` (-1:
// the local socket): the op it belongs to, or null with *why set (and
// *mismatch when the sender is in another call). Checks part, offset, length,
// total and rail against the schedule, so the payload lies inside the op's spans
// (a frame flagged kFlagMoved may come on any rail).
const Op* match_frame(const Plan& p, const Topology& t, int me, const FrameHeader& h, int rail, std::string* why,
                      bool* mismatch);

// Which parts of which messages have arrived in the current call; a part that
// arrives twice is refused (a replay), a message is complete when all parts are in.
class Arrivals {
 public:
  void clear() { parts_.clear(), done_.clear(); }
  // false: a duplicate. *complete: this part completed its message.
  bool add(const FrameHeader& h, bool* complete);
  bool done(uint64_t key) const { return done_.count(key) > 0; }
  bool has(const FrameHeader& h) const;  // this part arrived already

 private:
  std::unordered_map<uint64_t, uint64_t> parts_;  // (sender, op) -> bit mask of parts in
  std::unordered_set<uint64_t> done_;
};

// Calls f(span, bytes) for the pieces of payload bytes [off, off+len) of a put,
// as destination (dst) or source spans, in order.
template <class F>
void for_each_piece(const Op& op, uint64_t off, uint64_t len, bool dst, F f) {
  uint64_t pos = 0;
  for (auto& sg : op.segs) {
    uint64_t a = std::max(off, pos), z = std::min(off + len, pos + sg.src.length);
    if (a < z) {
      Span s = dst ? sg.dst : sg.src;
      s.offset += a - pos;
      s.length = z - a;
      f(s);
    }
    pos += sg.src.length;
  }
}

}  // namespace railcoll::rt
