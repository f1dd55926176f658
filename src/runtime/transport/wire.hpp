// The wire format between railcoll processes (TCP per rail between nodes, Unix
// sockets inside a node). Every frame starts with a fixed header; the receiver
// checks it against its own copy of the schedule before a byte of payload
// reaches a user buffer.
#pragma once
#include <cstdint>
#include <string>

namespace railcoll::rt {

constexpr uint32_t kWireMagic = 0x52434c31;  // "RCL1"
// 2: Hello carries an HMAC proof of the job key; Ping/Pong liveness probes;
//    rail failover (flags, RailDown).
// 3: RailHold (a rail held down after its link was lost).
constexpr uint16_t kWireVersion = 3;

enum class Frame : uint16_t {
  Hello = 1,   // first frame on a connection: who I am, on which rail; payload: the proof
  Data = 2,    // one part of a put: payload follows
  Notify = 3,  // a signal to a counter on the receiving side
  Abort = 4,   // the sender's collective failed; payload is the reason (text)
  Wake = 5,    // a local peer bumped a node counter this process may wait on
  Bye = 6,     // orderly close: no more frames follow
  Ping = 7,    // are you alive? (sent by a rank that has waited long); answered by Pong
  Pong = 8,
  RailDown = 9,  // the sender gave up its connection on rail `op` to the receiver; offset:
                 // the bytes of it the sender's kernel saw acknowledged (read those, then close)
  RailHold = 10,  // offset 1: the sender holds rail `op` down (its link is down or not yet
                  // stable): do not reconnect it; offset 0: it no longer does. seq orders the
                  // notices of one rail (a moved copy may arrive late)
};

// FrameHeader::flags
constexpr uint16_t kFlagMoved = 1;  // sent on another rail than the schedule's after a rail failed;
                                    // an earlier copy may have arrived, and then this one is dropped
constexpr uint16_t kFlagMessage = 2;  // Data: a part of a point-to-point message (mailbox.hpp), not of a
                                      // collective's put: seq numbers the sender's messages to the
                                      // receiver (from 1), op is the tag, call_sig 0

#pragma pack(push, 1)
struct FrameHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t type;       // Frame
  uint64_t comm;       // the job's id (fnv of the job id): connections are per communicator
  uint64_t seq;        // collective call number on this communicator
  uint64_t call_sig;   // hash of (collective, algorithm, sizes) of the sender's call
  int32_t sender;      // sender's rank
  int32_t op;          // Data/Notify: op index in the sender's program; Hello: rail
  uint16_t part;       // Data: which part of a striped put
  uint16_t nparts;
  uint16_t flags;      // kFlag*
  uint16_t reserved;
  uint64_t offset;     // Data: offset of this part in the put's payload
  uint64_t length;     // bytes of payload that follow this header
  uint64_t total;      // Data: the whole put's payload
};
#pragma pack(pop)
static_assert(sizeof(FrameHeader) == 72, "wire header layout");

constexpr uint64_t kMaxFrameLength = 1ull << 40;
constexpr uint64_t kMaxAbortText = 4096;
constexpr size_t kHelloProof = 32;    // HMAC-SHA256
constexpr size_t kListenNonce = 16;   // per rank and communicator, published in the store

// A header of `type` from `sender` of communicator `comm`, every other field 0.
FrameHeader make_header(Frame type, uint64_t comm, int sender);

// Where a rank was when it answered a liveness probe: the call it is in (or,
// when idle, the next it will enter), how far it got there, and the op index
// of its program (-1: none). A Pong carries it (seq, op, offset: the phase), so that a rank that
// waits for it in vain can say where the peer is.
struct PeerSaid {
  enum Phase : uint8_t { Idle = 0, Entering = 1, Running = 2, Flushing = 3 };
  bool answered = false;
  uint64_t call = 0;
  int op = -1;
  uint8_t phase = Idle;
  uint32_t rails = 0;  // bit r: an answer came on rail r (bit 31: through the node); kept by the receiver
};

// The Pong's fields for `here`, and what a Pong says.
void pong_header(const PeerSaid& here, FrameHeader* h);
PeerSaid said_in(const FrameHeader& pong);

// How a peer is named in messages: "rank 3 (rail 1)", or "rank 3 (same node)"
// for rail -1 (the local socket).
std::string link_name(int peer, int rail);

// "" when the header may come from `peer` of communicator `comm`, else what is wrong
// (magic, version, communicator, sender, type, absurd length).
std::string header_problem(const FrameHeader& h, uint64_t comm, int peer);

// The Hello's proof: HMAC(job key, header | receiver | the receiver's listen nonce).
// The nonce is fresh per communicator and every (sender, rail) connects once, so
// a recorded Hello is worth nothing to a replayer.
std::string hello_proof(const std::string& key, const FrameHeader& hello, int receiver, const std::string& nonce);

}  // namespace railcoll::rt
