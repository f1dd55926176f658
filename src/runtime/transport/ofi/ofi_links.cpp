// OfiLinks (ofi_links.hpp): set-up, sending in chunks, completions,
// reassembly, giving up and reconnecting, the goodbye. The write path is in
// ofi_writes.cpp.
//
// A frame goes on its rail's endpoint as one or more messages, each a chunk:
// [ChunkHeader][FrameHeader][payload bytes]. The chunk header carries the
// sender's token (only holders of the job key can compute it; fabric_token),
// the frame's id (unique per sender: chunks of one frame are put together by
// (sender, id), whichever rail they came on) and the chunk's offset in the
// payload. Chunks may arrive in any order and more than once (a frame sent
// again on another rail after its link failed keeps its id): each is placed once.
//
// Hellos are the links' own: at set-up every rank says one to every remote
// peer on every rail (the layered providers connect lazily, and a wrong
// address or token shows here, not in a call), and a given-up link is
// reconnected with one the peer answers.
#include "runtime/transport/ofi/ofi_links.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"
#include "runtime/transport/ofi/ofi_chunks.hpp"
#include "runtime/transport/ofi/ofi_rail.hpp"

namespace railcoll::rt {

namespace {

constexpr int64_t kRmaBytesDefault = 32 << 10;  // RAILCOLL_OFI_RMA_BYTES unset, off the socket providers
constexpr double kConnectFor = 1.0;             // a reconnect's hello unanswered this long is dropped
// Sends to a peer refused this long with none in flight: the link is given up.
// Two heartbeats, so a rank that only receives finds a dead peer in about 1.5 s.
constexpr double kRefusedFor = 1.0;
constexpr double kProbeFor = 1.0;  // a connect probe unanswered this long says nothing
// Hello's seq: at set-up, a reconnect asked, a reconnect answered.
constexpr uint64_t kHelloSetUp = 0, kHelloAsk = 1, kHelloAnswer = 2;

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

}  // namespace

OfiLinks::OfiLinks(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr)
    : settings_(settings),
      me_(me),
      n_(nranks),
      rail_addr_(std::move(rail_addr)),
      nonce_(random_bytes(16)),
      bye_(nranks, 0) {
  const double start = now_seconds();
  for (size_t r = 0; r < rail_addr_.size(); ++r) {
    rails_.push_back(std::make_unique<FabricRail>(static_cast<int>(r), rail_addr_[r], settings.ofi_provider,
                                                  settings.ofi_strict_mr));
    if (rails_[r]->provider() != rails_[0]->provider())
      throw RuntimeError(Status::Network, "libfabric offers provider " + rails_[r]->provider() + " on rail " +
                                              std::to_string(r) + " but " + rails_[0]->provider() +
                                              " on rail 0 (set RAILCOLL_OFI_PROVIDER)");
  }
  const size_t R = rails_.size();
  out_.assign(R, std::vector<std::deque<OutChunks>>(nranks));
  in_flight_.assign(R, std::vector<int>(nranks, 0));
  refused_since_.assign(R, std::vector<double>(nranks, 0));
  failed_.assign(R * nranks, {});
  unhandled_.resize(R);
  probe_.resize(nranks);
  down_.assign(nranks, std::vector<char>(R, 0));
  connect_until_.assign(nranks, std::vector<double>(R, 0));
  heard_.assign(nranks, std::vector<char>(R, 0));
  heard_at_.assign(nranks, std::vector<double>(R, 0));
  moving_at_.assign(nranks, std::vector<double>(R, 0));
  token_of_.assign(nranks, 0);
  // As RAILCOLL_NOTSENT_LOWAT paces a rail socket: a link takes another chunk
  // only while fewer than that many bytes of it are unconfirmed, so a rank
  // streams to its peers one after the other rather than flooding the rail
  // with all of them at once (0: only the rail's send buffers limit it).
  chunks_per_link_ = settings.notsent_lowat > 0
                         ? std::max<int>(1, settings.notsent_lowat / static_cast<int>(FabricRail::kBufBytes))
                         : FabricRail::kSendBufs;
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
  write_bytes_in_flight_.assign(R, std::vector<uint64_t>(nranks, 0));
  // Writes are paced per link as chunks are (RAILCOLL_NOTSENT_LOWAT): writes of
  // half the budget, two in flight; 0: whole pieces, unpaced.
  link_write_budget_ = settings.notsent_lowat > 0 ? static_cast<uint64_t>(settings.notsent_lowat) : 0;
  write_bytes_ = link_write_budget_ ? std::max<uint64_t>(4096, link_write_budget_ / 2) : UINT64_MAX;
  if (settings.ofi_verbose)
    fprintf(stderr, "railcoll: rank %d: %zu rails of %s opened in %.3f s\n", me, rails_.size(), describe().c_str(),
            now_seconds() - start);
}

OfiLinks::~OfiLinks() {
  for (auto& pr : probe_)
    if (pr.fd >= 0) ::close(pr.fd);
}

std::string OfiLinks::contact() const {
  std::vector<std::string> fields{nonce_, rails_.empty() ? "" : rails_[0]->provider()};
  for (auto& r : rails_) fields.push_back(r->address());
  return pack_fields(fields);
}

std::string OfiLinks::describe() const {
  return "ofi:" + (rails_.empty() ? std::string("none") : rails_[0]->provider());
}

bool OfiLinks::remote(int peer) const { return peer != me_ && !topo_.same_node(peer, me_); }

bool OfiLinks::lost(int peer) const {
  for (char down : down_[peer])
    if (!down) return false;
  return true;
}

int OfiLinks::live_rail(int peer, int rail) const {
  const int k = static_cast<int>(rails_.size());
  for (int i = 0; i < k; ++i)
    if (!down_[peer][(rail + i) % k]) return (rail + i) % k;
  return -1;
}

void OfiLinks::connect(const LinkSetup& s, double deadline) {
  topo_ = *s.topo;
  comm_id_ = s.comm_id;
  const size_t rails_n = rails_.size();
  std::vector<std::vector<std::string>> fields(n_);
  const std::string mine = rails_.empty() ? "" : rails_[0]->provider();
  for (int r = 0; r < n_; ++r) {
    if (!unpack_fields(s.contacts[r], &fields[r]) || fields[r].size() != 2 + rails_n || fields[r][0].size() != 16)
      throw RuntimeError(Status::Protocol, "malformed contact of rank " + std::to_string(r) +
                                               " in the set-up exchange (does it use RAILCOLL_TRANSPORT=ofi too?)");
    if (fields[r][1] != mine)
      throw RuntimeError(Status::Mismatch, "rank " + std::to_string(r) + " uses libfabric provider " + fields[r][1] +
                                               ", this rank " + mine + " (set RAILCOLL_OFI_PROVIDER)");
    token_of_[r] = fabric_token(settings_.job_key, fields[r][0], s.comm_id);
  }
  my_token_ = token_of_[me_];
  // The node's segment lives as long as the communicator: registered once per
  // rail when a write first lands in it (or is written from it), kept.
  for (auto& r : rails_) r->set_kept_range(reinterpret_cast<char*>(s.segment.shm), s.segment.bytes);
  // The completion queues' fds end the rank's sleep; what they say is read in drive().
  for (auto& r : rails_)
    if (r->wait_fd() >= 0) s.waits->watch(r->wait_fd(), EPOLLIN, nullptr, 0);
  std::exception_ptr failed;
  try {
    for (size_t rail = 0; rail < rails_n; ++rail) {
      std::vector<std::string> addrs(n_);
      for (int r = 0; r < n_; ++r) addrs[r] = fields[r][2 + rail];
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
  all_or_none(*s.oob, failed, "reach its peers over libfabric");
  if (settings_.ofi_verbose)
    fprintf(stderr, "railcoll: rank %d: every remote peer heard on every rail %.3f s before the deadline\n", me_,
            deadline - now_seconds());
}

void OfiLinks::warm_up(double deadline) {
  for (int p = 0; p < n_; ++p)
    if (remote(p))
      for (size_t r = 0; r < rails_.size(); ++r) queue_control(p, static_cast<int>(r), Frame::Hello, kHelloSetUp);
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

void OfiLinks::queue(int peer, int rail, OutChunks f) {
  f.peer = peer;
  if (!f.id) f.id = next_frame_id_++;
  out_[rail][peer].push_back(std::move(f));
  post_sends(rail);
}

void OfiLinks::queue_control(int peer, int rail, Frame type, uint64_t seq) {
  OutChunks f;
  f.hdr = header(type);
  f.hdr.op = type == Frame::Hello ? rail : -1;
  f.hdr.seq = seq;
  queue(peer, rail, std::move(f));
}

// A frame from the rails layer: a whole one, or a piece of one sent again
// (link_offset: where its bytes start; link_id: the frame it belongs to). A
// data frame large enough goes by writes, unless it moved (it goes again by
// messages: the receiver may hold its announcement on the rail that failed).
void OfiLinks::send(int peer, int rail, OutFrame of) {
  OutChunks f;
  f.id = of.link_id;
  f.hdr = of.hdr;
  f.iov = std::move(of.iov);
  f.owned = std::move(of.owned);
  f.base = f.sent = of.link_offset;
  f.end = f.iov.empty() ? f.base + f.owned.size() : f.hdr.length;
  if (rma_bytes_ && !f.id && f.hdr.type == static_cast<uint16_t>(Frame::Data) && f.hdr.length >= rma_bytes_ &&
      !(f.hdr.flags & kFlagMoved))
    return start_rma(peer, rail, std::move(f));
  queue(peer, rail, std::move(f));
}

void OfiLinks::send_urgent(int peer, int rail, const OutFrame& f) {
  try {
    send(peer, rail, f);
  } catch (...) {
  }
}

// Urgent frames (aborts) get until `until` to go out.
void OfiLinks::flush_urgent(double until) {
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

// Cuts the rail's queued frames into chunks while send buffers are free, one
// peer after the other (a peer whose sends the provider refuses holds up no
// other). A refusal (-FI_EAGAIN) while none of our sends to that peer is in
// flight is the provider failing to reach it (rxm keeps a dead peer's
// connection refused): after kRefusedFor s the peer is probed (check_refused).
void OfiLinks::post_sends(int rail) {
  FabricRail& R = *rails_[rail];
  for (int step = 0; step < n_; ++step) {
    const int peer = (next_peer_ + step) % n_;
    auto& q = out_[rail][peer];
    while (!q.empty() && in_flight_[rail][peer] < chunks_per_link_) {
      OutChunks& f = q.front();
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
        gather_pieces(f.iov, f.sent, len, b->data + kHeaders);
      // A goodbye must arrive before our endpoint closes (a close may reset
      // what the peer's kernel has not read yet).
      const ssize_t rc = R.send(b, peer, kHeaders + len, f.hdr.type == static_cast<uint16_t>(Frame::Bye));
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
      if (f.sent >= f.end) q.pop_front();
    }
  }
}

// A peer whose sends every rail has refused for kRefusedFor s with none in
// flight is either gone or too busy to read (rxm cannot tell: it refuses
// both). Where the provider's addresses are IP socket addresses (tcp), a
// connect to the peer's rail-0 endpoint tells them apart: refused means no
// process listens there any more (the peer is gone); accepted means it lives,
// and the call's deadline decides as with TCP links. Other providers report
// an unreachable peer as completion errors.
void OfiLinks::check_refused(double now) {
  if (warming_up_) return;  // connections are being made: the set-up deadline decides
  for (int p = 0; p < n_; ++p) {
    Probe& pr = probe_[p];
    if (pr.fd >= 0) {
      finish_probe(p, now);
      continue;
    }
    if (!remote(p) || lost(p) || now < pr.next) continue;
    bool refused = true;
    double since = now;
    for (size_t r = 0; r < rails_.size(); ++r)
      if (!down_[p][r]) {
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

void OfiLinks::peer_gone(int p, double now) {
  const std::string why = "refused our sends for " + seconds_text(now - probe_[p].since) +
                          " and its endpoint refuses connections (the process is gone)";
  for (size_t r = 0; r < rails_.size(); ++r) {
    down_[p][r] = 1;
    out_[r][p].clear();
  }
  ev_->link_broken(p, 0, why, true);
}

void OfiLinks::finish_probe(int p, double now) {
  Probe& pr = probe_[p];
  pollfd q{pr.fd, POLLOUT, 0};
  if (::poll(&q, 1, 0) == 0) {
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

bool OfiLinks::queued(int rail) const {
  for (auto& q : out_[rail])
    if (!q.empty()) return true;
  return false;
}

// A frame on the RMA path is pending until its writes completed: the payload
// is read in place until then.
bool OfiLinks::sends_pending() const {
  if (!rma_.empty()) return true;
  for (size_t r = 0; r < rails_.size(); ++r)
    if (queued(static_cast<int>(r))) return true;
  return false;
}

// ------------------------------------------------------------------ links failing and coming back

// The link (peer, rail) cannot carry on: the rails layer decides (it gives it
// up, taking its frames back, or the peer is lost on every rail).
void OfiLinks::link_failed(int peer, int rail, const std::string& why) {
  if (down_[peer][rail]) return;  // given up already: its frames went again
  if (closing_) {
    down_[peer][rail] = 1;
    out_[rail][peer].clear();
    return;
  }
  ev_->link_broken(peer, rail, why, false);
}

// The frames the link had not surely delivered: those queued (from their
// start), copies of its chunks still in flight and of those whose send
// failed, and its frames on the write path (whole, to go by messages). The
// receiver places every chunk once, whichever rail brings it.
GivenUp OfiLinks::give_up(int peer, int rail) {
  GivenUp g;
  down_[peer][rail] = 1;
  connect_until_[peer][rail] = 0;
  refused_since_[rail][peer] = 0;
  if (settings_.ofi_verbose) fprintf(stderr, "railcoll: rank %d: gave up %s\n", me_, link_name(peer, rail).c_str());
  auto piece = [&](const FrameHeader& h, uint64_t id, uint64_t offset, std::string bytes) {
    OutFrame f;
    f.hdr = h;
    f.owned = std::move(bytes);
    f.link_id = id;
    f.link_offset = offset;
    g.frames.push_back(std::move(f));
  };
  std::vector<OutChunks> answers;  // CTSs: the links' own, they go again on another rail here
  for (const FabricRail::Buf* b : rails_[rail]->sends_to(peer)) {
    ChunkHeader ch;
    FrameHeader h;
    memcpy(&ch, b->data, sizeof ch);
    memcpy(&h, b->data + sizeof ch, sizeof h);
    if (ch.kind == kChunk && moves_with_rail(h.type)) piece(h, ch.frame, ch.offset, std::string(b->data + kHeaders, b->len - kHeaders));
  }
  for (auto& f : failed_[static_cast<size_t>(rail) * n_ + peer]) {
    if (f.kind == kCts) answers.push_back(std::move(f));
    else piece(f.hdr, f.id, f.base, std::move(f.owned));
  }
  failed_[static_cast<size_t>(rail) * n_ + peer].clear();
  for (auto& f : out_[rail][peer]) {
    if (f.kind == kRts) continue;  // its frame goes by messages (below)
    if (f.kind == kCts) {
      f.sent = f.base;
      answers.push_back(std::move(f));
      continue;
    }
    if (!moves_with_rail(f.hdr.type)) continue;
    OutFrame o;
    o.hdr = f.hdr;
    o.iov = std::move(f.iov);
    o.owned = std::move(f.owned);
    o.link_id = f.id;
    o.link_offset = f.base;
    g.frames.push_back(std::move(o));
  }
  out_[rail][peer].clear();
  std::vector<uint64_t> rma_ids;  // its frames on the write path over this link
  for (auto& [id, o] : rma_)
    if (o.f.peer == peer && o.rail == rail && !o.messages) rma_ids.push_back(id);
  for (uint64_t id : rma_ids) {
    RmaOut& o = rma_[id];
    OutFrame f;
    f.hdr = o.f.hdr;
    f.iov = o.f.iov;
    f.owned = o.f.owned;
    f.link_id = id;
    g.frames.push_back(std::move(f));
    o.messages = true;
    ++rma_declined_;
    if (o.in_flight == 0) rma_.erase(id);  // else its last completion (an error) erases it
  }
  const int to = live_rail(peer, rail);
  for (auto& f : answers)
    if (to >= 0) out_[to][peer].push_back(std::move(f));
  if (to >= 0) post_sends(to);
  ev_->link_closed(peer, rail);  // nothing to drain: a chunk brought late is placed once (done_)
  return g;
}

bool OfiLinks::reconnect(int peer, int rail, double now) {
  queue_control(peer, rail, Frame::Hello, kHelloAsk);
  connect_until_[peer][rail] = now + kConnectFor;
  return true;
}

void OfiLinks::restored(int peer, int rail) {
  down_[peer][rail] = 0;
  connect_until_[peer][rail] = 0;
  refused_since_[rail][peer] = 0;
  moving_at_[peer][rail] = now_seconds();
  ev_->link_restored(peer, rail);
}

// A hello: at set-up, the peer is heard on this rail; later, the peer brings a
// given-up link back (answered unless this side holds the rail down), or
// answers ours.
void OfiLinks::on_hello(int rail, int from, const FrameHeader& h) {
  if (h.op != rail) protocol_error(from, rail, "a hello for rail " + std::to_string(h.op));
  heard_[from][rail] = 1;
  if (h.seq == kHelloAsk) {
    if (down_[from][rail]) {
      if (!ev_->may_restore(from, rail)) return;
      restored(from, rail);
    }
    queue_control(from, rail, Frame::Hello, kHelloAnswer);
  } else if (h.seq == kHelloAnswer && connect_until_[from][rail] > 0 && down_[from][rail]) {
    restored(from, rail);
  }
}

LinkSigns OfiLinks::signs(int peer, int rail) {
  bool busy = !out_[rail][peer].empty() || in_flight_[rail][peer] > 0 || write_bytes_in_flight_[rail][peer] > 0;
  for (auto& [id, o] : rma_) busy |= !busy && o.f.peer == peer && o.rail == rail && !o.messages;
  if (!busy) moving_at_[peer][rail] = now_seconds();  // idle: the stall clock starts when it has something to carry
  return {busy, moving_at_[peer][rail], heard_at_[peer][rail]};
}

// ------------------------------------------------------------------ completions

void OfiLinks::drive(double now) {
  bool progressed = false;
  drive(&progressed);
  for (int p = 0; p < n_; ++p)
    for (size_t r = 0; r < rails_.size(); ++r)
      if (connect_until_[p][r] > 0 && now > connect_until_[p][r]) connect_until_[p][r] = 0;
}

void OfiLinks::drive(bool* progressed) {
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

// Sleep (in the node room's wait, which holds every rail's completion fd)
// only when each queue says nothing is there (fi_trywait); a provider without
// a wait fd, or sends held back by the provider, is polled every ms.
double OfiLinks::before_wait(double wait_s) {
  for (size_t r = 0; r < rails_.size() && wait_s > 0; ++r) {
    if (rails_[r]->wait_fd() < 0 || queued(static_cast<int>(r)) || writes_to_post()) wait_s = std::min(wait_s, 0.001);
    if (rails_[r]->wait_fd() >= 0 && !rails_[r]->try_wait()) wait_s = 0;
  }
  return wait_s;
}

// Completions of one rail: sends free their buffer, receives are handled and
// their buffer posted again. A receive whose handling throws (an abort, a
// refused frame) leaves the rest of its batch in unhandled_, handled first
// next time, so nothing read from the queue is lost.
void OfiLinks::poll_completions(int rail, bool* progressed) {
  FabricRail& R = *rails_[rail];
  auto& todo = unhandled_[rail];
  for (;;) {
    if (todo.empty()) {
      fi_cq_data_entry e[16];
      fi_addr_t src[16];
      const ssize_t n = R.read_cq(e, src, 16);
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
        moving_at_[b->peer][rail] = now_seconds();
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

// A failed send: its chunk is kept to go again (give_up hands it back) and the
// link is broken; a failed receive is a message that did not fit (a
// stranger's: dropped) or the rail itself broke.
void OfiLinks::completion_error(int rail) {
  FabricRail& R = *rails_[rail];
  FabricRail::Buf* b = nullptr;
  void* ctx = nullptr;
  int err = 0;
  const std::string why = R.cq_error(&b, &ctx, &err);
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
  ChunkHeader ch;
  OutChunks f;
  memcpy(&ch, b->data, sizeof ch);
  memcpy(&f.hdr, b->data + sizeof ch, sizeof f.hdr);
  if (f.hdr.type == static_cast<uint16_t>(Frame::Bye) || bye_[peer]) return;  // nothing to say to it any more
  if (down_[peer][rail]) return;  // given up: its chunks went again already
  // An RTS is not sent again: the link's RMA frames go by messages (give_up).
  if (ch.kind != kRts && (ch.kind == kCts || moves_with_rail(f.hdr.type))) {
    f.peer = peer;
    f.id = ch.frame;
    f.kind = ch.kind;
    f.owned.assign(b->data + kHeaders, b->len - kHeaders);
    f.base = f.sent = ch.offset;
    f.end = ch.offset + f.owned.size();
    failed_[static_cast<size_t>(rail) * n_ + peer].push_back(std::move(f));
  }
  link_failed(peer, rail, why);
}

// ------------------------------------------------------------------ receiving

[[noreturn]] void OfiLinks::protocol_error(int peer, int rail, const std::string& what) const {
  throw RuntimeError(Status::Protocol, "rejected a frame from " + link_name(peer, rail) + ": " + what);
}

void OfiLinks::on_chunk(int rail, const char* buf, size_t len, uint64_t src) {
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
  heard_at_[from][rail] = now_seconds();
  if (ch.kind == kRts) {
    if (closing_) return;  // no call is left to take it
    if (h.type != static_cast<uint16_t>(Frame::Data)) protocol_error(from, rail, "an RTS out of place");
    return on_rts(rail, from, h, ch.frame);
  }
  if (ch.kind == kCts) return on_cts(rail, from, ch.frame, data, n);
  if (ch.kind != kChunk) protocol_error(from, rail, "message kind " + std::to_string(ch.kind));
  switch (static_cast<Frame>(h.type)) {
    case Frame::Hello:
      return on_hello(rail, from, h);
    case Frame::Data:
    case Frame::Notify:
      return on_frame_chunk(rail, h, ch.frame, ch.offset, data, n);
    default: {  // the rails layer's own frames: one chunk each
      if (ch.offset != 0 || n != h.length) protocol_error(from, rail, "a control frame in pieces");
      if (h.type == static_cast<uint16_t>(Frame::Bye)) bye_[from] = 1;
      std::vector<iovec> place;
      if (ev_->frame_header(from, rail, h, &place) != Landing::Hold) return;
      std::vector<char> held(data, data + n);
      ev_->frame_done(from, rail, h, &held);
    }
  }
}

void OfiLinks::on_frame_chunk(int rail, const FrameHeader& h, uint64_t id, uint64_t off, const char* data,
                              size_t len) {
  if (off % kChunkPayload) protocol_error(h.sender, rail, "a chunk at an odd offset");
  const uint64_t key = in_key(h.sender, id);
  auto it = in_.find(key);
  if (it == in_.end()) {
    if (done_.count(key)) return;  // a chunk of a frame already whole, brought late by a given-up rail
    new_in_frame(key, rail, h);
    it = in_.find(key);
  }
  InFrame& f = it->second;
  if (f.hdr.length != h.length || f.hdr.seq != h.seq || f.hdr.op != h.op || f.hdr.part != h.part)
    protocol_error(h.sender, rail, "a chunk that does not belong to its frame");
  const size_t idx = off / kChunkPayload;
  if (idx >= f.seen.size() || f.seen[idx]) return;  // a chunk sent again after its link failed
  f.seen[idx] = 1;
  if (f.landing == Landing::Place) scatter_pieces(f.dst, off, data, len);
  if (f.landing == Landing::Hold) memcpy(f.held.data() + off, data, len);
  f.got += len;
  if (f.got < h.length || (h.length == 0 && !f.seen[0])) return;
  // Announced for writes but come by messages (its link failed): writes still
  // on their way must not count for another frame.
  if (f.slot >= 0) slots_[f.slot].dead = true;
  frame_complete(it);
}

// The frame is whole: its key is remembered for a while, so that chunks of it
// sent before its link was given up and brought late (the copies went on
// another rail) are dropped instead of starting the frame again.
void OfiLinks::frame_complete(std::unordered_map<uint64_t, InFrame>::iterator it) {
  InFrame done = std::move(it->second);
  done_.insert(it->first);
  done_order_.push_back(it->first);
  if (done_order_.size() > kRememberDone) {
    done_.erase(done_order_.front());
    done_order_.pop_front();
  }
  in_.erase(it);
  if (done.landing == Landing::Place) ev_->frame_done(done.hdr.sender, done.rail, done.hdr, nullptr);
  if (done.landing == Landing::Hold) ev_->frame_done(done.hdr.sender, done.rail, done.hdr, &done.held);
}

OfiLinks::InFrame& OfiLinks::new_in_frame(uint64_t key, int rail, const FrameHeader& h) {
  InFrame f;
  f.hdr = h;
  f.rail = rail;
  f.landing = ev_->frame_header(h.sender, rail, h, &f.dst);
  if (f.landing == Landing::Hold) f.held.resize(h.length);
  f.seen.assign(std::max<uint64_t>(1, (h.length + kChunkPayload - 1) / kChunkPayload), 0);
  return in_.emplace(key, std::move(f)).first->second;
}

// ------------------------------------------------------------------ the call's end, and the links' end

// The call's memory may change now: what still points into it is copied.
void OfiLinks::end_call() {
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
    gather_pieces(o.f.iov, 0, o.f.hdr.length, o.f.owned.data());
    o.f.iov.clear();
    o.f.base = 0;
    rma_by_messages(o);
  }
  for (auto& rq : out_)
    for (auto& q : rq)
      for (auto& f : q)
        if (!f.iov.empty()) {
          f.owned.resize(f.hdr.length);
          gather_pieces(f.iov, 0, f.hdr.length, f.owned.data());
          f.iov.clear();
          f.base = 0;
        }
  if (!writes_outstanding())  // the call's user memory may be freed now
    for (auto& r : rails_) r->release_call_regions();
}

// A failed call returned without end_call: frames and writes that still read
// its memory, which the caller may have freed since, are dropped (nobody
// waits for them any more). Writes already posted finish or fail in the provider.
void OfiLinks::forget_call_memory() {
  closing_ = true;
  for (auto& rq : out_)
    for (auto& q : rq)
      q.erase(std::remove_if(q.begin(), q.end(), [](const OutChunks& f) { return !f.iov.empty(); }), q.end());
  for (auto it = rma_.begin(); it != rma_.end();) {
    it->second.messages = true;
    it = it->second.in_flight == 0 ? rma_.erase(it) : std::next(it);
  }
}

// A goodbye to every remote peer, then theirs awaited (until `deadline` at
// most) with our sends done, so no peer takes our closed endpoint for a crash;
// then the rails closed.
void OfiLinks::goodbye(double deadline) {
  closing_ = true;
  const double start = now_seconds();
  try {
    for (int p = 0; p < n_; ++p) {
      if (!remote(p) || lost(p)) continue;
      queue_control(p, live_rail(p, 0), Frame::Bye);
    }
    for (;;) {
      bool progressed = false;
      drive(&progressed);
      bool waiting = false;
      for (int p = 0; p < n_; ++p) waiting |= remote(p) && !bye_[p] && !lost(p);
      for (size_t r = 0; r < rails_.size(); ++r) waiting |= queued(static_cast<int>(r)) || rails_[r]->sends_in_flight();
      waiting |= writes_outstanding();
      if (!waiting || now_seconds() > deadline) break;
      if (!progressed) {
        std::vector<pollfd> fds;
        for (auto& r : rails_)
          if (r->wait_fd() >= 0 && r->try_wait()) fds.push_back({r->wait_fd(), POLLIN, 0});
        if (fds.size() == rails_.size()) ::poll(fds.data(), fds.size(), 5);
        else sched_yield();
      }
    }
  } catch (...) {  // a peer gone at the end: nothing left to tell it
  }
  rails_.clear();
  if (settings_.ofi_verbose)
    fprintf(stderr,
            "railcoll: rank %d: libfabric closed in %.3f s; %llu frames by %llu one-sided writes, "
            "%llu announced frames by messages; waited %.1f ms for answers, %.1f ms for writes\n",
            me_, now_seconds() - start, static_cast<unsigned long long>(rma_frames_),
            static_cast<unsigned long long>(rma_writes_), static_cast<unsigned long long>(rma_declined_),
            rma_wait_s_ * 1e3, rma_write_s_ * 1e3);
}

}  // namespace railcoll::rt
