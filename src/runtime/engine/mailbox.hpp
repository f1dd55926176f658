// Point-to-point messages beside the collectives (railcoll_isend, railcoll_irecv):
// a send from one rank to another with a tag, matched by a receive naming that
// rank (or any) and that tag. They travel as Data frames flagged kFlagMessage
// (wire.hpp) on the same connections as the collectives' puts, split over the
// rails above the striping threshold, so the executor (its frame sink) hands
// them here, whichever call it is in or none; they are not in the collectives'
// order and need no call number.
//
// Order: the sender numbers its messages to each receiver; the receiver takes
// them into matching in that order, a message as soon as a frame of it came
// and every earlier one was taken (its parts may arrive in any order and on
// any rail, also twice after a rail failed: the copy is dropped). So two
// messages of a sender with one tag match receives in the order they were
// sent (MPI's non-overtaking rule), and a receive posted before a message
// came takes it without a copy. A message no receive matches yet is held.
//
// Completion: a send once its frames are handed over to the transport (the
// transport reads the sender's buffer until then); a receive once every byte
// is in its buffer. A receive of another size than the message fails
// (Mismatch) and the message is dropped; one that no message matches within
// the timeout fails (Timeout); neither breaks the communicator. A failure of
// the communicator fails them all.
//
// Everything here runs under the engine's drive lock (requests.hpp).
#pragma once
#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/topology.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

class Request;

constexpr int kAnySource = -1;

// One send or receive (Request::message).
struct Message {
  bool send = false;
  char* buf = nullptr;        // the bytes sent, or the receive's buffer
  uint64_t bytes = 0;
  int peer = kAnySource;      // the destination; a receive's source, or kAnySource
  int tag = 0;
  int* source_out = nullptr;  // a receive's sender, written when it completes (may be null)
  double posted_at = 0;
};

class Mailbox {
 public:
  using Complete = std::function<void(Request&, Status, const std::string&)>;
  // stripe_bytes: messages above it to a peer on another node go in parts, one per rail.
  Mailbox(Transport& t, const Topology& topo, int me, uint64_t comm_id, uint64_t stripe_bytes, double timeout);
  void on_complete(Complete c) { complete_ = std::move(c); }

  // A send goes out (its frames queued in the transport); a receive takes the
  // first held message it matches, or waits for one. Throws InputError for a
  // bad peer or tag (nothing is sent then).
  void post(const std::shared_ptr<Request>& r);
  // Sends handed over complete; receives past the timeout fail.
  void poll();
  // Sends not yet handed over or receives not yet complete.
  bool waiting() const { return !sends_.empty() || !receives_.empty() || !matched_.empty(); }
  void fail_all(Status st, const std::string& why);
  // A receive not matched yet completes, failed, and matches nothing.
  void withdraw(const std::shared_ptr<Request>& r);

  // The executor's frame sink, for frames flagged kFlagMessage.
  Landing frame_header(const FrameHeader& h, int rail, std::vector<iovec>* place);
  void frame_done(const FrameHeader& h, int rail, std::vector<char>* held);

 private:
  using Key = std::pair<int, uint64_t>;  // (sender, its message number)
  struct Incoming {
    int tag = 0;
    uint64_t total = 0;
    uint16_t nparts = 0;
    uint64_t parts_seen = 0;     // bit p: part p's header came
    uint64_t parts_done = 0;     // bit p: part p's payload is all there
    bool taken = false;          // taken into matching (in the sender's order)
    bool dropped = false;        // matched a receive of another size: thrown away
    std::shared_ptr<Request> recv;  // the receive it matched
    std::vector<std::pair<uint64_t, std::vector<char>>> held;  // parts (offset, bytes) before a receive matched
  };

  void take_in_order(int sender);
  void match(const Key& k, Incoming& in, const std::shared_ptr<Request>& r);
  bool finished(const Key& k, Incoming& in);
  void complete(const std::shared_ptr<Request>& r, Status st, const std::string& why);
  [[noreturn]] void bad_frame(const FrameHeader& h, int rail, const std::string& what) const;

  Transport& t_;
  const Topology topo_;
  const int me_;
  const uint64_t comm_id_, stripe_bytes_;
  const double timeout_;
  Complete complete_;
  std::vector<uint64_t> sent_;        // per peer: messages sent to it
  std::vector<uint64_t> next_take_;   // per sender: the message number taken into matching next
  std::map<Key, Incoming> incoming_;  // messages with a frame here, not yet complete or matched
  std::deque<Key> unmatched_;         // taken, no receive yet: in the order taken
  std::deque<std::shared_ptr<Request>> receives_;  // posted, unmatched, in the order posted
  std::vector<std::shared_ptr<Request>> matched_;  // matched, bytes still coming
  std::vector<std::shared_ptr<Request>> sends_;    // frames not yet handed over
  std::vector<iovec> iov_;
};

}  // namespace railcoll::rt
