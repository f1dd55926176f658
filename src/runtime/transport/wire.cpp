#include "runtime/transport/wire.hpp"

#include <cstring>

#include "runtime/bootstrap/auth.hpp"

namespace railcoll::rt {

FrameHeader make_header(Frame type, uint64_t comm, int sender) {
  FrameHeader h{};
  h.magic = kWireMagic;
  h.version = kWireVersion;
  h.type = static_cast<uint16_t>(type);
  h.comm = comm;
  h.sender = sender;
  return h;
}

void pong_header(const PeerSaid& here, FrameHeader* h) {
  h->seq = here.call;
  h->op = here.op;
  h->offset = here.phase;
}

PeerSaid said_in(const FrameHeader& pong) {
  PeerSaid s;
  s.answered = true;
  s.call = pong.seq;
  s.op = pong.op;
  s.phase = static_cast<uint8_t>(pong.offset <= PeerSaid::Flushing ? pong.offset : PeerSaid::Idle);
  return s;
}

std::string link_name(int peer, int rail) {
  return "rank " + std::to_string(peer) + (rail >= 0 ? " (rail " + std::to_string(rail) + ")" : " (same node)");
}

std::string header_problem(const FrameHeader& h, uint64_t comm, int peer) {
  if (h.magic != kWireMagic) return "bad magic (not a railcoll frame)";
  if (h.version != kWireVersion)
    return "wire version " + std::to_string(h.version) + ", this rank speaks " + std::to_string(kWireVersion);
  if (h.comm != comm) return "frame of another communicator or job";
  if (h.sender != peer) return "claims to come from rank " + std::to_string(h.sender);
  if (h.type < static_cast<uint16_t>(Frame::Hello) || h.type > static_cast<uint16_t>(Frame::RailHold))
    return "unknown frame type " + std::to_string(h.type);
  if (h.length > kMaxFrameLength) return "absurd length " + std::to_string(h.length);
  return "";
}

std::string hello_proof(const std::string& key, const FrameHeader& hello, int receiver, const std::string& nonce) {
  std::string msg = "railcoll hello";
  msg.append(reinterpret_cast<const char*>(&hello), sizeof hello);
  msg.append(reinterpret_cast<const char*>(&receiver), sizeof receiver);
  msg += nonce;
  Digest d = hmac_sha256(key, msg);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

}  // namespace railcoll::rt
