// FabricTransport (fabric_transport.hpp): set-up, sending in chunks,
// completions, reassembly, liveness, the goodbye.
//
// A frame to a rank on another node goes on its rail's endpoint as one or more
// messages, each a chunk: [ChunkHeader][FrameHeader][payload bytes]. The chunk
// header carries the sender's token (only holders of the job key can compute
// it; fabric_token), the frame's id (unique per sender: chunks of one frame are
// put together by (sender, id)) and the chunk's offset in the payload. Chunks
// may arrive in any order and more than once (a frame sent again on another
// rail after its rail failed): each is placed once.
//
// A data frame of at least RAILCOLL_OFI_RMA_BYTES goes by one-sided writes
// instead (a rendezvous in three steps, all on the frame's rail):
//   RTS  sender -> receiver: a message of headers only (kind kRts): the frame's
//        header, so the receiver's sink says where the payload lands.
//   CTS  receiver -> sender: where (kind kCts, body: CtsHead then one Segment
//        per destination piece: the address the sender writes to and the key of
//        the piece's region, registered through the rail's cache) and the
//        receiver's slot; or "by messages" (a frame of a call the receiver has
//        not entered: it holds it in a buffer of its own; no free slot) or "drop"
//        (a copy it has already).
//   writes: one fi_writedata per (source piece x destination piece), CQ data =
//        slot | number of writes << 16. The receiver counts the completions
//        that carry CQ data for the slot; the last one ends the frame.
// No FI_RMA_EVENT, fence or atomics; 4 bytes of CQ data; the receiver's
// progress (reading its CQ in progress()) is all the writes need at the target.
// A write that fails takes its link out as a failed send does, and the frame
// goes again by messages on another rail (same id: the receiver fills the
// frame it knows, and counts nothing more on the slot).
//
// Liveness: a peer that dies shows as completion errors on our sends to it; a
// rank waiting in a call pings the remote peers it has not heard from for
// kHeartbeat s, so even a rank that only receives sends something the dead
// peer's endpoint refuses. A send error on one rail takes that rail out for
// the peer (its frames move to another rail, marked kFlagMoved, as the socket
// transport's failover does); on every rail, the peer is gone (Status::Peer).
#include "runtime/transport/fabric/fabric_transport.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"
#include "runtime/transport/fabric/fabric_rail.hpp"
#include "runtime/transport/socket/socket_transport.hpp"

namespace railcoll::rt {

namespace {

#pragma pack(push, 1)
struct ChunkHeader {
  uint64_t token;   // the sender's (fabric_token)
  uint64_t frame;   // the frame's id among the sender's (kCts: among the receiver's of the answer)
  uint64_t offset;  // where the chunk's bytes go in the frame's payload
  uint32_t kind;    // kChunk, kRts, kCts
  uint32_t unused;
};
struct CtsHead {
  uint32_t answer;  // kAnswer*
  uint32_t slot;
  uint32_t segments;
  uint32_t unused;
};
struct Segment {  // one destination piece of the frame's payload, in order
  uint64_t addr, len, key;
};
#pragma pack(pop)
constexpr uint32_t kChunk = 0, kRts = 1, kCts = 2;
constexpr uint32_t kAnswerDrop = 0, kAnswerMessages = 1, kAnswerWrites = 2;
constexpr int64_t kRmaBytesDefault = 32 << 10;  // RAILCOLL_OFI_RMA_BYTES unset, off the socket providers
constexpr uint32_t kSlots = 4096;            // frames coming by writes at once, per rank
constexpr uint64_t kMaxWrites = 0xffff;      // writes per frame (16 bits of the CQ data)
constexpr size_t kHeaders = sizeof(ChunkHeader) + sizeof(FrameHeader);
constexpr size_t kChunkPayload = FabricRail::kBufBytes - kHeaders;
constexpr double kHeartbeat = 0.5;   // a silent remote peer is pinged this often while we wait
constexpr double kAbortFlush = 0.2;  // abort_peers lets its frames go out for this long at most
// Sends to a peer refused this long with none in flight: the link is given up.
// Two heartbeats, so a rank that only receives finds a dead peer in about 1.5 s.
constexpr double kRefusedFor = 1.0;
constexpr double kProbeFor = 1.0;  // a connect probe unanswered this long says nothing

// A sender's token: 8 bytes of HMAC(job key, its nonce | communicator). A
// stranger (or a process of another job) cannot make one, and the receiver
// checks it on every chunk before the header is looked at.
uint64_t fabric_token(const std::string& key, const std::string& nonce, uint64_t comm) {
  std::string msg = "railcoll fabric token";
  msg.push_back('\0');
  msg += nonce;
  msg.append(reinterpret_cast<const char*>(&comm), sizeof comm);
  Digest d = hmac_sha256(key, msg);
  uint64_t t;
  memcpy(&t, d.data(), sizeof t);
  return t;
}

// Copies len bytes at offset off of the pieces `from` to `to`.
void gather(const std::vector<iovec>& from, uint64_t off, size_t len, char* to) {
  for (auto& v : from) {
    if (len == 0) return;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    size_t n = std::min(len, v.iov_len - off);
    memcpy(to, static_cast<const char*>(v.iov_base) + off, n);
    to += n, len -= n, off = 0;
  }
}

// Copies len bytes to offset off of the pieces `to`.
void scatter(const std::vector<iovec>& to, uint64_t off, const char* from, size_t len) {
  for (auto& v : to) {
    if (len == 0) return;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    size_t n = std::min(len, v.iov_len - off);
    memcpy(static_cast<char*>(v.iov_base) + off, from, n);
    from += n, len -= n, off = 0;
  }
}

bool tracked(uint16_t type) {
  return type == static_cast<uint16_t>(Frame::Data) || type == static_cast<uint16_t>(Frame::Notify);
}

}  // namespace

FabricTransport::FabricTransport(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr)
    : settings_(settings),
      me_(me),
      n_(nranks),
      rail_addr_(std::move(rail_addr)),
      nonce_(random_bytes(16)),
      local_(std::make_unique<SocketTransport>(settings, me, nranks, rail_addr_, true)),
      answered_(nranks, 0),
      bye_(nranks, 0),
      heard_at_(nranks, 0) {
  const double start = now_seconds();
  for (size_t r = 0; r < rail_addr_.size(); ++r) {
    rails_.push_back(std::make_unique<FabricRail>(static_cast<int>(r), rail_addr_[r], settings.ofi_provider,
                                                  settings.ofi_strict_mr));
    if (rails_[r]->provider() != rails_[0]->provider())
      throw RuntimeError(Status::Network, "libfabric offers provider " + rails_[r]->provider() + " on rail " +
                                              std::to_string(r) + " but " + rails_[0]->provider() +
                                              " on rail 0 (set RAILCOLL_OFI_PROVIDER)");
    if (rails_[r]->wait_fd() >= 0) local_->also_watch(rails_[r]->wait_fd());
  }
  out_.assign(rails_.size(), std::vector<std::deque<OutFrame>>(nranks));
  in_flight_.assign(rails_.size(), std::vector<int>(nranks, 0));
  unhandled_.resize(rails_.size());
  probe_.resize(nranks);
  // As RAILCOLL_NOTSENT_LOWAT paces a rail socket: a link takes another chunk
  // only while fewer than that many bytes of it are unconfirmed, so a rank
  // streams to its peers one after the other rather than flooding the rail
  // with all of them at once (0: only the rail's send buffers limit it).
  chunks_per_link_ = settings.notsent_lowat > 0
                         ? std::max<int>(1, settings.notsent_lowat / static_cast<int>(FabricRail::kBufBytes))
                         : FabricRail::kSendBufs;
  refused_since_.assign(rails_.size(), std::vector<double>(nranks, 0));
  link_down_.assign(nranks, std::vector<char>(rails_.size(), 0));
  heard_.assign(nranks, std::vector<char>(rails_.size(), 0));
  token_of_.assign(nranks, 0);
  // Unset, the one-sided path is off over providers on kernel sockets: they
  // copy anyway, and the rendezvous's round trip cost more than the copies it
  // saves on the emulated cluster (docs/results.md, the libfabric section).
  const std::string prov = rails_.empty() ? "" : rails_[0]->provider();
  const bool sockets = prov.rfind("tcp", 0) == 0 || prov.rfind("sockets", 0) == 0 || prov.rfind("udp", 0) == 0;
  const int64_t wanted = settings.ofi_rma_bytes >= 0 ? settings.ofi_rma_bytes : (sockets ? 0 : kRmaBytesDefault);
  bool rma = wanted > 0;
  for (auto& r : rails_) rma &= r->rma_ok();
  rma_bytes_ = rma ? static_cast<uint64_t>(wanted) : 0;
  slots_.resize(kSlots);
  write_bytes_in_flight_.assign(rails_.size(), std::vector<uint64_t>(nranks, 0));
  // Writes are paced per link as chunks are (RAILCOLL_NOTSENT_LOWAT): writes of
  // half the budget, two in flight; 0: whole pieces, unpaced.
  link_write_budget_ = settings.notsent_lowat > 0 ? static_cast<uint64_t>(settings.notsent_lowat) : 0;
  write_bytes_ = link_write_budget_ ? std::max<uint64_t>(4096, link_write_budget_ / 2) : UINT64_MAX;
  if (settings.ofi_verbose)
    fprintf(stderr, "railcoll: rank %d: %zu rails of %s opened in %.3f s\n", me, rails_.size(), describe().c_str(),
            now_seconds() - start);
}

FabricTransport::~FabricTransport() {
  for (auto& pr : probe_)
    if (pr.fd >= 0) ::close(pr.fd);
}

std::string FabricTransport::contact() const {
  std::vector<std::string> fields{local_->contact(), nonce_, rails_.empty() ? "" : rails_[0]->provider()};
  for (auto& r : rails_) fields.push_back(r->address());
  return pack_fields(fields);
}

std::string FabricTransport::describe() const {
  return "ofi:" + (rails_.empty() ? std::string("none") : rails_[0]->provider());
}

bool FabricTransport::remote(int peer) const { return peer != me_ && !topo_.same_node(peer, me_); }

bool FabricTransport::lost(int peer) const {
  for (char down : link_down_[peer])
    if (!down) return false;
  return true;
}

void FabricTransport::connect(const Topology& topo, uint64_t comm_id, const std::string& job, const std::string& tag,
                              const std::vector<std::string>& contacts, OutOfBand& oob, double deadline) {
  topo_ = topo;
  comm_id_ = comm_id;
  const size_t rails_n = rails_.size();
  std::vector<std::vector<std::string>> fields(n_);
  std::vector<std::string> local_contacts(n_);
  for (int r = 0; r < n_; ++r) {
    if (!unpack_fields(contacts[r], &fields[r]) || fields[r].size() != 3 + rails_n || fields[r][1].size() != 16)
      throw RuntimeError(Status::Protocol, "malformed contact of rank " + std::to_string(r) +
                                               " in the set-up exchange (does it use RAILCOLL_TRANSPORT=ofi too?)");
    const std::string mine = rails_.empty() ? "" : rails_[0]->provider();
    if (fields[r][2] != mine)
      throw RuntimeError(Status::Mismatch, "rank " + std::to_string(r) + " uses libfabric provider " + fields[r][2] +
                                               ", this rank " + mine + " (set RAILCOLL_OFI_PROVIDER)");
    local_contacts[r] = fields[r][0];
    token_of_[r] = fabric_token(settings_.job_key, fields[r][1], comm_id);
  }
  my_token_ = token_of_[me_];
  local_->connect(topo, comm_id, job, tag, local_contacts, oob, deadline);
  // The node's segment lives as long as the communicator: registered once per
  // rail when a write first lands in it (or is written from it), kept.
  const NodeSegment seg = local_->node();
  for (auto& r : rails_) r->set_kept_range(reinterpret_cast<char*>(seg.shm), seg.bytes);
  std::exception_ptr failed;
  try {
    for (size_t rail = 0; rail < rails_n; ++rail) {
      std::vector<std::string> addrs(n_);
      for (int r = 0; r < n_; ++r) addrs[r] = fields[r][3 + rail];
      rails_[rail]->insert_peers(addrs);
    }
    warming_up_ = true;
    warm_up(deadline);
    warming_up_ = false;
  } catch (...) {
    failed = std::current_exception();
  }
  // Every rank has heard every remote peer on every rail before any call
  // starts (so no data frame can come before the executor is attached).
  all_or_none(oob, failed, "reach its peers over libfabric");
  if (settings_.ofi_verbose)
    fprintf(stderr, "railcoll: rank %d: every remote peer heard on every rail %.3f s before the deadline\n", me_,
            deadline - now_seconds());
}

// A hello to every remote peer on every rail, and theirs awaited: the layered
// providers connect lazily (rxm), so the first call would pay for it; and a
// peer whose address or token is wrong is found here, not in a call.
void FabricTransport::warm_up(double deadline) {
  for (int p = 0; p < n_; ++p)
    if (remote(p))
      for (size_t r = 0; r < rails_.size(); ++r) queue_control(p, static_cast<int>(r), Frame::Hello);
  for (;;) {
    bool progressed = false;
    drive(&progressed);
    int missing = -1, missing_rail = -1, count = 0;
    for (int p = 0; p < n_; ++p)
      for (size_t r = 0; r < rails_.size(); ++r)
        if (remote(p) && !heard_[p][r]) {
          if (missing < 0) missing = p, missing_rail = static_cast<int>(r);
          ++count;
        }
    if (count == 0) return;
    if (now_seconds() > deadline)
      throw RuntimeError(Status::Timeout, "timed out reaching peers over libfabric (" + std::to_string(count) +
                                              " links silent, the first " + link_name(missing, missing_rail) + ")");
    if (!progressed) sched_yield();
  }
}

// ------------------------------------------------------------------ sending

void FabricTransport::queue(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n,
                            std::string owned) {
  OutFrame f;
  f.peer = peer;
  f.id = next_frame_id_++;
  f.hdr = h;
  f.iov.assign(payload, payload + n);
  f.owned = std::move(owned);
  if (n == 0) f.hdr.length = f.owned.size();
  f.end = f.hdr.length;
  out_[rail][peer].push_back(std::move(f));
  post_sends(rail);
}

void FabricTransport::queue_control(int peer, int rail, Frame type, std::string text) {
  FrameHeader h = header(type);
  h.op = type == Frame::Hello ? rail : -1;
  queue(peer, rail, h, nullptr, 0, std::move(text));
}

// The schedule's rail, or (its link to the peer given up) the next one that is up.
int FabricTransport::usable_rail(int peer, int rail, bool* moved) const {
  const int k = static_cast<int>(rails_.size());
  *moved = false;
  for (int i = 0; i < k; ++i) {
    int r = (rail + i) % k;
    if (!link_down_[peer][r]) {
      *moved = i > 0;
      return r;
    }
  }
  throw RuntimeError(Status::Peer, "lost " + link_name(peer, rail) + " and every other rail to it");
}

void FabricTransport::send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) {
  if (!remote(peer)) return local_->send(peer, rail, h, payload, n);
  bool moved;
  int r = usable_rail(peer, std::max(0, rail), &moved);
  FrameHeader hh = h;
  if (moved) hh.flags |= kFlagMoved;
  if (rma_bytes_ && h.type == static_cast<uint16_t>(Frame::Data) && h.length >= rma_bytes_)
    return start_rma(peer, r, hh, payload, n);
  queue(peer, r, hh, payload, n, "");
}

// Cuts the rail's queued frames into chunks while send buffers are free, one
// peer after the other (a peer whose sends the provider refuses holds up no
// other). A refusal (-FI_EAGAIN) while none of our sends to that peer is in
// flight is the provider failing to reach it (rxm keeps a dead peer's
// connection refused): after kRefusedFor s the link is given up.
void FabricTransport::post_sends(int rail) {
  FabricRail& R = *rails_[rail];
  for (int step = 0; step < n_; ++step) {
    const int peer = (next_peer_ + step) % n_;
    auto& q = out_[rail][peer];
    while (!q.empty() && in_flight_[rail][peer] < chunks_per_link_) {
      OutFrame& f = q.front();
      FabricRail::Buf* b = R.free_send_buf();
      if (!b) {
        next_peer_ = peer;  // first in line when a buffer comes free
        return;             // a send completion frees one (poll_completions)
      }
      const size_t len = static_cast<size_t>(std::min<uint64_t>(kChunkPayload, f.end - f.sent));
      ChunkHeader ch{my_token_, f.id, f.sent, f.kind, 0};
      memcpy(b->data, &ch, sizeof ch);
      memcpy(b->data + sizeof ch, &f.hdr, sizeof f.hdr);
      if (f.iov.empty())
        memcpy(b->data + kHeaders, f.owned.data() + (f.sent - f.base), len);
      else
        gather(f.iov, f.sent, len, b->data + kHeaders);
      // A goodbye must arrive before our endpoint closes (a close may reset
      // what the peer's kernel has not read yet).
      ssize_t rc = R.send(b, peer, kHeaders + len, f.hdr.type == static_cast<uint16_t>(Frame::Bye));
      if (rc == -FI_EAGAIN) {
        if (in_flight_[rail][peer] == 0 && refused_since_[rail][peer] == 0) refused_since_[rail][peer] = now_seconds();
        break;  // the next peer; this one again after the provider's progress
      }
      if (rc != 0) {
        link_failed(peer, rail, std::string("fi_send: ") + fi_strerror(static_cast<int>(-rc)));
        return;  // the queues changed under f
      }
      refused_since_[rail][peer] = 0;
      ++in_flight_[rail][peer];
      f.sent += len;
      f.started = true;
      if (f.sent >= f.end) q.pop_front();
    }
  }
}

// A peer whose sends every rail has refused for kRefusedFor s with none in
// flight is either gone or too busy to read (rxm cannot tell: it refuses
// both). Where the provider's addresses are IP socket addresses (tcp), a
// connect to the peer's rail-0 endpoint tells them apart: refused means no
// process listens there any more (the peer is gone, Status::Peer); accepted
// means it lives, and the call's deadline decides as with the native
// transport. Other providers report an unreachable peer as completion errors.
void FabricTransport::check_refused(double now) {
  if (warming_up_) return;  // connections are being made: the set-up deadline decides
  for (int p = 0; p < n_; ++p) {
    Probe& pr = probe_[p];
    if (pr.fd >= 0) {
      finish_probe(p, now);
      continue;
    }
    if (lost(p) || now < pr.next) continue;
    bool refused = true;
    double since = now;
    for (size_t r = 0; r < rails_.size(); ++r)
      if (!link_down_[p][r]) {
        refused &= refused_since_[r][p] != 0;
        if (refused_since_[r][p] != 0) since = std::min(since, refused_since_[r][p]);
      }
    if (!refused || now - since < kRefusedFor) continue;
    pr.fd = rails_[0]->probe_connect(p);
    pr.started = now;
    pr.since = since;
    if (pr.fd == FabricRail::kProbeRefused) {
      pr.fd = -1;
      peer_gone(p, now);
    } else if (pr.fd < 0) {
      pr.next = now + 1e9;  // no probe for this provider: the deadline decides
    }
  }
}

void FabricTransport::peer_gone(int p, double now) {
  const std::string why = "its sends were refused for " + seconds_text(now - probe_[p].since) +
                          " and its endpoint refuses connections (the process is gone)";
  for (size_t r = 0; r < rails_.size(); ++r) link_down_[p][r] = 1;
  link_failed(p, 0, why);
}

void FabricTransport::finish_probe(int p, double now) {
  Probe& pr = probe_[p];
  pollfd q{pr.fd, POLLOUT, 0};
  if (poll(&q, 1, 0) == 0) {
    if (now - pr.started < kProbeFor) return;
    ::close(pr.fd);  // no answer (a node gone, a path down): the deadline decides
    pr.fd = -1;
    pr.next = now + kRefusedFor;
    return;
  }
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(pr.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  ::close(pr.fd);
  pr.fd = -1;
  pr.next = now + kRefusedFor;
  if (err == ECONNREFUSED) peer_gone(p, now);  // else it listens: alive, only not reading
}

bool FabricTransport::queued(int rail) const {
  for (auto& q : out_[rail])
    if (!q.empty()) return true;
  return false;
}

// A frame on the RMA path is pending until its writes completed: the payload
// is read in place until then.
bool FabricTransport::sends_pending() const {
  if (local_->sends_pending() || !rma_.empty()) return true;
  for (size_t r = 0; r < rails_.size(); ++r)
    if (queued(static_cast<int>(r))) return true;
  return false;
}

// The link (peer, rail) failed: it carries nothing more, and what was queued
// on it or lost in flight goes again on another rail, marked moved (the
// receiver drops what it already has). No other rail: the peer is gone.
void FabricTransport::link_failed(int peer, int rail, const std::string& why) {
  const bool first = !link_down_[peer][rail];
  link_down_[peer][rail] = 1;
  if (first && settings_.ofi_verbose)
    fprintf(stderr, "railcoll: rank %d: gave up %s: %s\n", me_, link_name(peer, rail).c_str(), why.c_str());
  bool moved;
  int to = -1;
  try {
    to = usable_rail(peer, rail, &moved);
  } catch (const RuntimeError&) {
  }
  auto& q = out_[rail][peer];
  std::vector<uint64_t> rma_ids;  // its frames on the RMA path over this link
  for (auto& [id, o] : rma_)
    if (o.f.peer == peer && (o.rail == rail || to < 0) && !o.messages) rma_ids.push_back(id);
  if (to < 0) {  // no rail left: the peer is gone, and nothing more goes to it
    for (auto& rq : out_) rq[peer].clear();
    for (uint64_t id : rma_ids) {
      rma_[id].messages = true;
      if (rma_[id].in_flight == 0) rma_.erase(id);  // else its last completion (an error) erases it
    }
    if (closing_) return;
    throw RuntimeError(Status::Peer, "lost " + link_name(peer, rail) + " and every other rail to it: " + why);
  }
  for (auto& f : q) {
    if (f.kind == kRts) continue;  // its frame goes by messages (below)
    f.sent = f.base, f.started = false;  // from the start: chunks already out are placed once
    if (tracked(f.hdr.type)) f.hdr.flags |= kFlagMoved;
    out_[to][peer].push_back(std::move(f));
  }
  q.clear();
  for (uint64_t id : rma_ids) rma_by_messages(rma_[id], true);
  post_sends(to);
}

// ------------------------------------------------------------------ completions

void FabricTransport::drive(bool* progressed) {
  for (size_t r = 0; r < rails_.size(); ++r) {
    poll_completions(static_cast<int>(r), progressed);
    post_sends(static_cast<int>(r));
  }
  if (writes_to_post()) {  // writes the provider refused (-FI_EAGAIN) before
    std::vector<uint64_t> ids;
    for (auto& [id, o] : rma_)
      if (!o.messages && o.posted < o.writes.size()) ids.push_back(id);
    for (uint64_t id : ids)
      if (auto it = rma_.find(id); it != rma_.end()) post_writes(it->second);
  }
  check_refused(now_seconds());
}

// Completions of one rail: sends free their buffer, receives are handled and
// their buffer posted again. A receive whose handling throws (an abort, a
// refused frame) leaves the rest of its batch in unhandled_, handled first
// next time, so nothing read from the queue is lost.
void FabricTransport::poll_completions(int rail, bool* progressed) {
  FabricRail& R = *rails_[rail];
  auto& todo = unhandled_[rail];
  for (;;) {
    if (todo.empty()) {
      fi_cq_data_entry e[16];
      fi_addr_t src[16];
      ssize_t n = R.read_cq(e, src, 16);
      if (n == -FI_EAVAIL) {
        completion_error(rail);
        *progressed = true;
        continue;
      }
      if (n <= 0) return;
      for (ssize_t i = 0; i < n; ++i) todo.push_back({e[i], src[i]});
    }
    *progressed = true;
    while (!todo.empty()) {
      const auto [e, src] = todo.front();
      todo.pop_front();
      // A write's CQ data arrived (op_context: a receive it consumed under
      // FI_RX_CQ_DATA, else nothing of ours, fi_cq(3)).
      if (e.flags & FI_REMOTE_CQ_DATA) {
        if (R.rx_cq_data() && e.op_context && R.is_buf(e.op_context))
          R.repost(reinterpret_cast<FabricRail::Buf*>(e.op_context));
        on_write_arrived(rail, e.data);
        continue;
      }
      if (!R.is_buf(e.op_context)) {  // one of our writes completed
        write_done(rail, static_cast<RmaWrite*>(e.op_context), nullptr);
        continue;
      }
      auto* b = reinterpret_cast<FabricRail::Buf*>(e.op_context);  // ctx is its first member
      b->busy = false;
      if (b->send) {
        --in_flight_[rail][b->peer];
        continue;
      }
      try {
        on_chunk(rail, b->data, e.len, src);
      } catch (...) {
        R.repost(b);
        throw;
      }
      R.repost(b);
    }
  }
}

// A failed send moves to another rail (the chunk as it was, marked moved); a
// failed receive is a message that did not fit (a stranger's: dropped) or the
// rail itself broke.
void FabricTransport::completion_error(int rail) {
  FabricRail& R = *rails_[rail];
  FabricRail::Buf* b = nullptr;
  void* ctx = nullptr;
  int err = 0;
  std::string why = R.cq_error(&b, &ctx, &err);
  if (!b && ctx && !R.is_buf(ctx)) return write_done(rail, static_cast<RmaWrite*>(ctx), &why);
  if (!b) throw RuntimeError(Status::Network, "libfabric on rail " + std::to_string(rail) + ": " + why);
  b->busy = false;
  if (b->send) --in_flight_[rail][b->peer];
  if (err == FI_ECANCELED && !b->send) return;
  if (!b->send) {
    R.repost(b);
    if (err == FI_ETRUNC) return;  // larger than any chunk: not one of ours
    throw RuntimeError(Status::Network, "a receive failed on rail " + std::to_string(rail) + ": " + why);
  }
  const int peer = b->peer;
  // The chunk goes again as it was (same sender, frame id and offset, so the
  // receiver places it once), after the frames queued on the failed link moved.
  OutFrame f;
  f.peer = peer;
  ChunkHeader ch;
  memcpy(&ch, b->data, sizeof ch);
  memcpy(&f.hdr, b->data + sizeof ch, sizeof f.hdr);
  if (f.hdr.type == static_cast<uint16_t>(Frame::Bye) || bye_[peer]) return;  // nothing to say to it any more
  // An RTS is not sent again: the link's RMA frames go by messages (link_failed).
  if (ch.kind == kRts) return link_failed(peer, rail, why);
  f.id = ch.frame;
  f.kind = ch.kind;
  f.owned.assign(b->data + kHeaders, b->len - kHeaders);
  f.base = f.sent = ch.offset;
  f.end = ch.offset + f.owned.size();
  if (tracked(f.hdr.type)) f.hdr.flags |= kFlagMoved;
  link_failed(peer, rail, why);
  bool moved;
  const int to = usable_rail(peer, rail, &moved);
  out_[to][peer].push_back(std::move(f));
  post_sends(to);
}

// ------------------------------------------------------------------ receiving

[[noreturn]] void FabricTransport::protocol_error(int peer, int rail, const std::string& what) const {
  throw RuntimeError(Status::Protocol, "rejected a frame from " + link_name(peer, rail) + ": " + what);
}

void FabricTransport::on_chunk(int rail, const char* buf, size_t len, uint64_t src) {
  auto stranger = [&](const std::string& what) {
    if (std::find(unplaced_.begin(), unplaced_.end(), what) != unplaced_.end()) return;
    unplaced_.push_back(what);
    fprintf(stderr, "railcoll: rank %d: dropped a message on rail %d: %s\n", me_, rail, what.c_str());
  };
  if (len < kHeaders) return stranger("too short for a railcoll chunk");
  ChunkHeader ch;
  FrameHeader h;
  memcpy(&ch, buf, sizeof ch);
  memcpy(&h, buf + sizeof ch, sizeof h);
  // With FI_SOURCE the provider names the sending endpoint (FI_ADDR_NOTAVAIL:
  // one not in our address vector, fi_cq(3)); without it the header does.
  int from = h.sender;
  if (rails_[rail]->has_source()) {
    from = src == FI_ADDR_NOTAVAIL ? -1 : rails_[rail]->rank_of(src);
    if (from < 0) return stranger("from an endpoint that is no rank of this communicator");
  }
  if (from < 0 || from >= n_ || from == me_ || !remote(from)) return stranger("names no remote rank");
  if (!equal_constant_time(&ch.token, &token_of_[from], sizeof ch.token))
    protocol_error(from, rail, "its token is wrong (not a member of this job, or another communicator)");
  if (std::string why = header_problem(h, comm_id_, from); !why.empty()) protocol_error(from, rail, why);
  const char* data = buf + kHeaders;
  const size_t n = len - kHeaders;
  if (ch.offset > h.length || n > h.length - ch.offset) protocol_error(from, rail, "a chunk beyond its frame");
  heard_at_[from] = now_seconds();
  if (ch.kind == kRts) {
    if (closing_ || broken_) return;  // no call is left to take it
    if (!sink_ || h.type != static_cast<uint16_t>(Frame::Data)) protocol_error(from, rail, "an RTS out of place");
    return on_rts(rail, from, h, ch.frame);
  }
  if (ch.kind == kCts) return on_cts(rail, from, ch.frame, data, n);
  if (ch.kind != kChunk) protocol_error(from, rail, "message kind " + std::to_string(ch.kind));
  switch (static_cast<Frame>(h.type)) {
    case Frame::Hello:
      if (h.op != rail) protocol_error(from, rail, "a hello for rail " + std::to_string(h.op));
      heard_[from][rail] = 1;
      return;
    case Frame::Ping:
      if (!bye_[from]) {
        bool moved;
        queue_control(from, usable_rail(from, rail, &moved), Frame::Pong);
      }
      return;
    case Frame::Pong:
      answered_[from] = 1;
      return;
    case Frame::Bye:
      bye_[from] = 1;
      return;
    case Frame::Abort:
      if (closing_) return;  // the communicator is being taken down anyway
      if (!sink_) throw RuntimeError(Status::Peer, "rank " + std::to_string(from) + " failed during set-up");
      broken_ = true;  // the communicator is broken: close waits for nobody
      sink_->peer_aborted(from, h.seq, std::string(data, std::min<size_t>(n, kMaxAbortText)));
      return;
    case Frame::Data:
    case Frame::Notify:
      // Closing, or the communicator failed (abort_peers drives the rails
      // after the executor gave up its call): no call is left to take it.
      if (closing_ || broken_) return;
      if (!sink_) protocol_error(from, rail, "a data frame before set-up ended");
      return on_frame_chunk(rail, h, ch.frame, ch.offset, data, n);
    default:
      protocol_error(from, rail, "frame type " + std::to_string(h.type) + " is not used over libfabric");
  }
}

void FabricTransport::on_frame_chunk(int rail, const FrameHeader& h, uint64_t id, uint64_t off, const char* data,
                                     size_t len) {
  if (off % kChunkPayload) protocol_error(h.sender, rail, "a chunk at an odd offset");
  const uint64_t key = in_key(h.sender, id);
  auto it = in_.find(key);
  if (it == in_.end()) {
    new_in_frame(key, rail, h);
    it = in_.find(key);
  }
  InFrame& f = it->second;
  if (f.hdr.length != h.length || f.hdr.seq != h.seq || f.hdr.op != h.op || f.hdr.part != h.part)
    protocol_error(h.sender, rail, "a chunk that does not belong to its frame");
  const size_t idx = off / kChunkPayload;
  if (idx >= f.seen.size() || f.seen[idx]) return;  // a chunk sent again after its rail failed
  f.seen[idx] = 1;
  if (f.landing == Landing::Place) scatter(f.dst, off, data, len);
  if (f.landing == Landing::Hold) memcpy(f.held.data() + off, data, len);
  f.got += len;
  if (f.got < h.length || (h.length == 0 && !f.seen[0])) return;
  // Announced for writes but come by messages (its rail failed): writes still
  // on their way must not count for another frame.
  if (f.slot >= 0) slots_[f.slot].dead = true;
  frame_complete(it);
}

void FabricTransport::frame_complete(std::unordered_map<uint64_t, InFrame>::iterator it) {
  InFrame done = std::move(it->second);
  in_.erase(it);
  if (done.landing == Landing::Place) sink_->frame_done(done.hdr, done.rail, nullptr);
  if (done.landing == Landing::Hold) sink_->frame_done(done.hdr, done.rail, &done.held);
}

FabricTransport::InFrame& FabricTransport::new_in_frame(uint64_t key, int rail, const FrameHeader& h) {
  InFrame f;
  f.hdr = h;
  f.rail = rail;
  f.landing = sink_->frame_header(h, rail, &f.dst);
  if (f.landing == Landing::Hold) f.held.resize(h.length);
  f.seen.assign(std::max<uint64_t>(1, (h.length + kChunkPayload - 1) / kChunkPayload), 0);
  return in_.emplace(key, std::move(f)).first->second;
}

// ------------------------------------------------------------------ the RMA path

void FabricTransport::queue_special(int peer, int rail, uint32_t kind, const FrameHeader& h, uint64_t id,
                                    std::string body) {
  OutFrame f;
  f.peer = peer;
  f.id = id;
  f.hdr = h;
  f.kind = kind;
  f.owned = std::move(body);
  f.end = f.owned.size();
  if (kind == kCts) f.hdr.length = f.end;  // an RTS's header keeps its frame's length (no payload goes)
  out_[rail][peer].push_back(std::move(f));
  post_sends(rail);
}

// The sender's first step: the frame waits (in place) for its answer, and its
// header goes ahead alone.
void FabricTransport::start_rma(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) {
  const uint64_t id = next_frame_id_++;
  RmaOut& o = rma_[id];
  o.f.peer = peer;
  o.f.id = id;
  o.f.hdr = h;
  o.f.iov.assign(payload, payload + n);
  o.f.end = h.length;
  o.rail = rail;
  o.announced_at = now_seconds();
  queue_special(peer, rail, kRts, h, id, "");
}

// The receiver: where the frame lands (the sink says, as for a first chunk),
// and the answer. An RTS sent again (after its rail failed) gets the same answer.
void FabricTransport::on_rts(int rail, int from, const FrameHeader& h, uint64_t id) {
  const uint64_t key = in_key(from, id);
  auto it = in_.find(key);
  InFrame* f = it != in_.end() ? &it->second : nullptr;
  std::string answer;
  if (f && !f->cts.empty()) {
    answer = f->cts;
  } else if (f) {  // its chunks came first (sent again after the rail failed)
    CtsHead c{kAnswerMessages, 0, 0, 0};
    answer.assign(reinterpret_cast<const char*>(&c), sizeof c);
  } else {
    f = &new_in_frame(key, rail, h);
    answer = answer_rts(rail, from, key, *f);
    if (f->landing == Landing::Drop) in_.erase(key);
    else f->cts = answer;
  }
  bool moved;
  queue_special(from, usable_rail(from, rail, &moved), kCts, header(Frame::Ping), id, std::move(answer));
}

std::string FabricTransport::answer_rts(int rail, int from, uint64_t key, InFrame& f) {
  CtsHead c{kAnswerMessages, 0, 0, 0};
  auto text = [&](const std::vector<Segment>& segs) {
    std::string s(reinterpret_cast<const char*>(&c), sizeof c);
    s.append(reinterpret_cast<const char*>(segs.data()), segs.size() * sizeof(Segment));
    return s;
  };
  if (f.landing == Landing::Drop) c.answer = kAnswerDrop;
  // Held (a call this rank has not entered): by messages into the buffer.
  if (f.landing != Landing::Place) return text({});
  std::vector<Segment> segs;
  for (auto& v : f.dst)
    if (v.iov_len > 0) segs.push_back({reinterpret_cast<uint64_t>(v.iov_base), v.iov_len, 0});
  if (segs.empty() || sizeof c + segs.size() * sizeof(Segment) > kChunkPayload) return text({});
  uint32_t slot = kSlots;
  for (uint32_t i = 0; i < kSlots && slot == kSlots; ++i)
    if (!slots_[(next_slot_ + i) % kSlots].used) slot = (next_slot_ + i) % kSlots;
  if (slot == kSlots) return text({});
  FabricRail& R = *rails_[rail];
  try {
    for (auto& s : segs) {
      const void* p = reinterpret_cast<const void*>(s.addr);
      FabricRail::Region reg = R.region_for(p, s.len);
      s.addr = R.remote_addr(reg, p);
      s.key = reg.key;
    }
  } catch (const RuntimeError& e) {  // cannot register: the message path still works
    if (settings_.ofi_verbose) fprintf(stderr, "railcoll: rank %d: by messages: %s\n", me_, e.what());
    return text({});
  }
  next_slot_ = (slot + 1) % kSlots;
  slots_[slot] = InSlot{key, from, 0, true, false};
  f.slot = static_cast<int>(slot);
  c = CtsHead{kAnswerWrites, slot, static_cast<uint32_t>(segs.size()), 0};
  return text(segs);
}

// The sender: the answer to one of its RTSs. Writes are cut where a source
// piece or a destination piece ends (and at the provider's largest write).
void FabricTransport::on_cts(int rail, int from, uint64_t id, const char* body, size_t len) {
  CtsHead c;
  if (len < sizeof c) protocol_error(from, rail, "a short CTS");
  memcpy(&c, body, sizeof c);
  auto it = rma_.find(id);
  if (it == rma_.end() || it->second.f.peer != from || it->second.answered) return;  // answered before
  RmaOut& o = it->second;
  o.answered = true;
  o.answered_at = now_seconds();
  if (o.messages) return;  // went by messages meanwhile
  if (c.answer == kAnswerDrop) return void(rma_.erase(it));
  if (c.answer != kAnswerWrites) return rma_by_messages(o, false);
  if (c.slot >= kSlots || c.segments == 0 || len != sizeof c + c.segments * sizeof(Segment))
    protocol_error(from, rail, "a malformed CTS");
  std::vector<Segment> segs(c.segments);
  memcpy(segs.data(), body + sizeof c, c.segments * sizeof(Segment));
  uint64_t total = 0;
  for (auto& s : segs) total += s.len;
  if (total != o.f.hdr.length) protocol_error(from, rail, "a CTS for another length");
  FabricRail& R = *rails_[o.rail];
  const bool local_desc = (R.mr_mode() & FI_MR_LOCAL) != 0;
  std::vector<RmaWrite> ws;
  size_t piece = 0, piece_off = 0;
  for (auto& s : segs) {
    uint64_t done = 0;
    while (done < s.len) {
      while (piece < o.f.iov.size() && piece_off == o.f.iov[piece].iov_len) ++piece, piece_off = 0;
      if (piece == o.f.iov.size()) protocol_error(from, rail, "a CTS beyond the payload");
      RmaWrite w;
      w.frame = id;
      w.src = static_cast<const char*>(o.f.iov[piece].iov_base) + piece_off;
      w.len = static_cast<size_t>(
          std::min<uint64_t>({s.len - done, o.f.iov[piece].iov_len - piece_off, R.max_write(), write_bytes_}));
      w.addr = s.addr + done;
      w.key = s.key;
      ws.push_back(w);
      done += w.len, piece_off += w.len;
    }
  }
  if (ws.size() > kMaxWrites) return rma_by_messages(o, false);  // the receiver's frame takes chunks too
  try {
    if (local_desc)  // FI_MR_LOCAL: every source piece registered (the rail's cache)
      for (auto& w : ws) w.desc = R.region_for(w.src, w.len).desc;
  } catch (const RuntimeError&) {
    return rma_by_messages(o, false);
  }
  o.writes = std::move(ws);
  o.data = c.slot | static_cast<uint32_t>(o.writes.size() << 16);
  ++rma_frames_, rma_writes_ += o.writes.size();
  rma_wait_s_ += o.answered_at - o.announced_at;
  post_writes(o);
}

// The frame goes by messages after all (same id: the receiver fills the frame
// its RTS made), on its rail or the next one up (then marked moved).
void FabricTransport::rma_by_messages(RmaOut& o, bool moved_flag) {
  o.messages = true;
  ++rma_declined_;
  bool moved;
  const int to = usable_rail(o.f.peer, o.rail, &moved);
  OutFrame f = o.f;
  if (moved || moved_flag) f.hdr.flags |= kFlagMoved;
  out_[to][f.peer].push_back(std::move(f));
  const uint64_t id = o.f.id;
  if (o.in_flight == 0) rma_.erase(id);  // else the last completion erases it
  post_sends(to);
}

void FabricTransport::post_writes(RmaOut& o) {
  FabricRail& R = *rails_[o.rail];
  uint64_t& link_bytes = write_bytes_in_flight_[o.rail][o.f.peer];
  while (o.posted < o.writes.size() && !o.messages) {
    RmaWrite& w = o.writes[o.posted];
    // Paced as chunks are: a link takes another write only within its budget.
    if (link_write_budget_ && link_bytes > 0 && link_bytes + w.len > link_write_budget_) return;
    ssize_t rc = R.write(w.src, w.len, w.desc, o.data, o.f.peer, w.addr, w.key, &w.ctx);
    if (rc == -FI_EAGAIN) {
      if (o.in_flight == 0 && refused_since_[o.rail][o.f.peer] == 0) refused_since_[o.rail][o.f.peer] = now_seconds();
      return;  // again after the provider's progress (drive)
    }
    if (rc != 0) {
      const std::string why = std::string("fi_writedata: ") + fi_strerror(static_cast<int>(-rc));
      link_failed(o.f.peer, o.rail, why);  // moves this frame to messages too
      return;
    }
    refused_since_[o.rail][o.f.peer] = 0;
    link_bytes += w.len;
    ++o.posted, ++o.in_flight;
  }
}

// A write completed (error: with the provider's words); the frame's last
// completion ends it on this side.
void FabricTransport::write_done(int rail, RmaWrite* w, const std::string* error) {
  const uint64_t id = w->frame;
  auto it = rma_.find(id);
  if (it == rma_.end()) throw RuntimeError(Status::Internal, "a write completed that no frame owns");
  --it->second.in_flight;
  write_bytes_in_flight_[rail][it->second.f.peer] -= w->len;
  if (error && !it->second.messages)
    link_failed(it->second.f.peer, rail, "a write failed: " + *error);  // the frame goes by messages
  it = rma_.find(id);
  if (it != rma_.end() && it->second.in_flight == 0 &&
      (it->second.messages || it->second.posted == it->second.writes.size())) {
    if (!it->second.messages) rma_write_s_ += now_seconds() - it->second.answered_at;
    rma_.erase(it);
  }
}

// The receiver: a write of a frame landed. Its CQ data names the slot and how
// many writes the frame takes; the last ends it.
void FabricTransport::on_write_arrived(int rail, uint64_t data) {
  if (closing_ || broken_) return;  // no call is left to take it (as for a chunk)
  const uint32_t slot = static_cast<uint32_t>(data & 0xffff), writes = static_cast<uint32_t>((data >> 16) & 0xffff);
  if (slot >= kSlots || !slots_[slot].used)
    throw RuntimeError(Status::Protocol, "a write on rail " + std::to_string(rail) + " into no slot of this rank");
  // The source address of a write's completion is not checked: fi_cq(3)
  // promises FI_SOURCE for received messages only (rxm reports another
  // address). Only the sender the CTS went to holds the regions' keys.
  InSlot& s = slots_[slot];
  heard_at_[s.sender] = now_seconds();
  if (s.dead || ++s.arrived < writes) return;
  const uint64_t key = s.key;
  s = InSlot{};
  auto it = in_.find(key);
  if (it == in_.end()) return;
  it->second.got = it->second.hdr.length;
  frame_complete(it);
}

bool FabricTransport::writes_to_post() const {
  for (auto& [id, o] : rma_)
    if (!o.messages && o.posted < o.writes.size()) return true;
  return false;
}

bool FabricTransport::writes_outstanding() const {
  for (auto& [id, o] : rma_)
    if (o.in_flight > 0 || (o.answered && !o.messages && o.posted < o.writes.size())) return true;
  return false;
}

// A failed call returned without end_call: frames and writes that still read
// its memory, which the caller may have freed since, are dropped (nobody
// waits for them any more). Writes already posted finish or fail in the provider.
void FabricTransport::forget_call_memory() {
  for (auto& rq : out_)
    for (auto& q : rq)
      q.erase(std::remove_if(q.begin(), q.end(), [](const OutFrame& f) { return !f.iov.empty(); }), q.end());
  for (auto it = rma_.begin(); it != rma_.end();) {
    it->second.messages = true;
    it = it->second.in_flight == 0 ? rma_.erase(it) : std::next(it);
  }
}

// ------------------------------------------------------------------ the Transport contract

void FabricTransport::attach(FrameSink* sink) {
  sink_ = sink;
  local_->attach(sink);
}

NodeSegment FabricTransport::node() const { return local_->node(); }
void FabricTransport::wake_node_sleepers() { local_->wake_node_sleepers(); }

void FabricTransport::begin_call() {
  if (broken_) throw RuntimeError(Status::Peer, "the communicator failed before");
  local_->begin_call();
  for (int p = 0; p < n_; ++p) {
    bool moved;
    if (remote(p)) usable_rail(p, 0, &moved);  // throws for a peer lost on every rail
  }
  in_call_ = true;
}

// The call's memory may change now: what still points into it is copied.
void FabricTransport::end_call() {
  // Writes read the call's memory in place: they finish first (the executor
  // flushes before it ends a call, so this waits only after a failure).
  const double deadline = now_seconds() + settings_.timeout;
  while (writes_outstanding()) {
    if (now_seconds() > deadline)
      throw RuntimeError(Status::Timeout, "timed out waiting for one-sided writes to complete");
    bool progressed = false;
    drive(&progressed);
    if (!progressed) sched_yield();
  }
  std::vector<uint64_t> unanswered;  // they go by messages, from a copy
  for (auto& [id, o] : rma_)
    if (!o.messages) unanswered.push_back(id);
  for (uint64_t id : unanswered) {
    RmaOut& o = rma_[id];
    o.f.owned.resize(o.f.hdr.length);
    gather(o.f.iov, 0, o.f.hdr.length, o.f.owned.data());
    o.f.iov.clear();
    o.f.base = 0;
    rma_by_messages(o, false);
  }
  for (auto& rq : out_)
    for (auto& q : rq)
      for (auto& f : q)
        if (!f.iov.empty()) {
        f.owned.resize(f.hdr.length);
        gather(f.iov, 0, f.hdr.length, f.owned.data());
        f.iov.clear();
        f.base = 0;
      }
  local_->end_call();
  if (!writes_outstanding())  // the call's user memory may be freed now
    for (auto& r : rails_) r->release_call_regions();
  in_call_ = false;
}

void FabricTransport::heartbeat(double now) {
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + kHeartbeat;
  for (int p = 0; p < n_; ++p) {
    if (!remote(p) || bye_[p] || now - heard_at_[p] < kHeartbeat) continue;
    for (size_t r = 0; r < rails_.size(); ++r)  // every rail: a dead peer shows on all at once
      if (!link_down_[p][r] && out_[r][p].empty()) queue_control(p, static_cast<int>(r), Frame::Ping);
  }
}

// Whatever a call of the transport throws breaks the communicator (the
// executor's contract): from then on close() waits for no goodbye.
void FabricTransport::progress(double wait_s, const NodeWait* sleep_on) {
  try {
    advance(wait_s, sleep_on);
  } catch (...) {
    broken_ = true;
    throw;
  }
}

void FabricTransport::advance(double wait_s, const NodeWait* sleep_on) {
  if (!sink_) throw RuntimeError(Status::Internal, "transport: progress before the executor attached");
  bool progressed = false;
  drive(&progressed);
  if (in_call_ && wait_s > 0) heartbeat(now_seconds());
  // Sleep (in the local part's epoll set, which holds every rail's completion
  // fd) only when each queue says nothing is there (fi_trywait); a provider
  // without a wait fd, or sends held back by the provider, is polled every ms.
  if (progressed) wait_s = 0;
  for (size_t r = 0; r < rails_.size() && wait_s > 0; ++r) {
    if (rails_[r]->wait_fd() < 0 || queued(static_cast<int>(r)) || writes_to_post()) wait_s = std::min(wait_s, 0.001);
    if (rails_[r]->wait_fd() >= 0 && !rails_[r]->try_wait()) wait_s = 0;
  }
  // Chunks still to cut need completions to free their way: the local part
  // must not sleep on a futex that watches no completion queue.
  NodeWait w;
  if (sleep_on && sleep_on->net_idle && sends_pending()) {
    w = *sleep_on;
    w.net_idle = false;
    sleep_on = &w;
  }
  local_->progress(wait_s, sleep_on);
  drive(&progressed);
}

int FabricTransport::rails_up() const {
  int up = 0;
  for (size_t r = 0; r < rails_.size(); ++r) {
    bool ok = true;
    for (int p = 0; p < n_; ++p) ok &= !link_down_[p][r];
    up += ok;
  }
  return up;
}

void FabricTransport::probe_peers() {
  std::fill(answered_.begin(), answered_.end(), 0);
  local_->probe_peers();
  for (int p = 0; p < n_; ++p) {
    if (!remote(p) || bye_[p] || lost(p)) continue;
    bool moved;
    queue_control(p, usable_rail(p, 0, &moved), Frame::Ping);
  }
}

bool FabricTransport::answered_probe(int peer) const {
  return remote(peer) ? answered_[peer] != 0 : local_->answered_probe(peer);
}

// Best effort, never throws: an abort to every remote peer on every rail still
// up, given kAbortFlush to go out; the local peers by the local part.
void FabricTransport::abort_peers(uint64_t call, const std::string& why) {
  broken_ = true;
  local_->abort_peers(call, why);
  const std::string text = why.substr(0, 2000);
  FrameHeader h = header(Frame::Abort);
  h.seq = call;
  h.op = -1;
  try {
    for (int p = 0; p < n_; ++p)
      if (remote(p) && !bye_[p])
        for (size_t r = 0; r < rails_.size(); ++r)
          if (!link_down_[p][r]) queue(p, static_cast<int>(r), h, nullptr, 0, text);
  } catch (...) {
  }
  const double until = now_seconds() + kAbortFlush;
  while (now_seconds() < until) {
    bool progressed = false, busy = false;
    try {
      drive(&progressed);
    } catch (...) {
    }
    for (size_t r = 0; r < rails_.size(); ++r) busy |= queued(static_cast<int>(r)) || rails_[r]->sends_in_flight();
    if (!busy) break;
    if (!progressed) sched_yield();
  }
}

// A goodbye to every remote peer, then theirs awaited (until `deadline` at
// most) with our sends done, so no peer takes our closed endpoint for a crash;
// then the local part's goodbye, and the rails closed.
void FabricTransport::close(double deadline) {
  closing_ = true;
  if (broken_) forget_call_memory();
  const double flush_until = now_seconds() + kAbortFlush;
  try {
    for (int p = 0; p < n_; ++p) {
      if (!remote(p) || lost(p)) continue;
      bool moved;
      queue_control(p, usable_rail(p, 0, &moved), Frame::Bye);
    }
    for (;;) {
      bool progressed = false;
      drive(&progressed);
      bool waiting = false;
      // After a failure nobody is told anything more (a dead peer would be
      // waited for until the deadline): our goodbyes get kAbortFlush to go out.
      for (int p = 0; p < n_; ++p) waiting |= remote(p) && !bye_[p] && !lost(p) && !broken_;
      for (size_t r = 0; r < rails_.size(); ++r) waiting |= queued(static_cast<int>(r)) || rails_[r]->sends_in_flight();
      waiting |= writes_outstanding();
      if (!waiting || now_seconds() > (broken_ ? std::min(deadline, flush_until) : deadline)) break;
      if (!progressed) {
        std::vector<pollfd> fds;
        for (auto& r : rails_)
          if (r->wait_fd() >= 0 && r->try_wait()) fds.push_back({r->wait_fd(), POLLIN, 0});
        if (fds.size() == rails_.size()) poll(fds.data(), fds.size(), 5);
        else sched_yield();
      }
    }
  } catch (...) {  // a peer gone at the end: nothing left to tell it
  }
  const double fabric_done = now_seconds();
  // After a failure the node's goodbyes get as little time as the fabric's: a
  // stopped local peer would hold this rank for the whole deadline while its
  // remote peers, which wait for nobody, go on (to a new communicator, say).
  local_->close(broken_ ? std::min(deadline, now_seconds() + kAbortFlush) : deadline);
  rails_.clear();
  if (settings_.ofi_verbose)
    fprintf(stderr,
            "railcoll: rank %d: closed in %.3f s (libfabric %.3f s)%s; %llu frames by %llu one-sided writes, "
            "%llu announced frames by messages; waited %.1f ms for answers, %.1f ms for writes\n",
            me_, now_seconds() - flush_until + kAbortFlush, fabric_done - flush_until + kAbortFlush,
            broken_ ? " after a failure" : "", static_cast<unsigned long long>(rma_frames_),
            static_cast<unsigned long long>(rma_writes_), static_cast<unsigned long long>(rma_declined_),
            rma_wait_s_ * 1e3, rma_write_s_ * 1e3);
}

}  // namespace railcoll::rt
