// Point-to-point messages (mailbox.hpp).
#include "runtime/engine/mailbox.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/bootstrap/net.hpp"
#include "runtime/engine/requests.hpp"

namespace railcoll::rt {

Mailbox::Mailbox(Transport& t, const Topology& topo, int me, uint64_t comm_id, uint64_t stripe_bytes, double timeout)
    : t_(t),
      topo_(topo),
      me_(me),
      comm_id_(comm_id),
      stripe_bytes_(stripe_bytes),
      timeout_(timeout),
      sent_(topo.nranks(), 0),
      next_take_(topo.nranks(), 1) {}

void Mailbox::complete(const std::shared_ptr<Request>& r, Status st, const std::string& why) {
  if (st == Status::Ok && !r->p2p->send && r->p2p->source_out) *r->p2p->source_out = r->p2p->peer;
  complete_(*r, st, why);
}

// ---------------------------------------------------------------- posting

void Mailbox::post(const std::shared_ptr<Request>& r) {
  Message& m = *r->p2p;
  const int n = topo_.nranks();
  if (m.peer == me_ || m.peer < (m.send ? 0 : kAnySource) || m.peer >= n)
    throw InputError(std::string(m.send ? "send to" : "receive from") + " rank " + std::to_string(m.peer) +
                     ": not another rank of this communicator of " + std::to_string(n));
  if (m.tag < 0) throw InputError("tag " + std::to_string(m.tag) + ": tags are 0 or more");
  if (!m.buf && m.bytes) throw InputError("a NULL buffer for " + std::to_string(m.bytes) + " bytes");
  m.posted_at = now_seconds();
  if (!m.send) {
    for (auto it = unmatched_.begin(); it != unmatched_.end(); ++it) {
      Incoming& in = incoming_.at(*it);
      if ((m.peer == kAnySource || m.peer == it->first) && in.tag == m.tag) {
        const Key k = *it;
        unmatched_.erase(it);
        return match(k, in, r);
      }
    }
    receives_.push_back(r);
    return;
  }
  // One part, or one per rail to a peer on another node above the striping
  // threshold; the parts go on the rails in turn from one the pair's ranks pick.
  const uint64_t seq = ++sent_[m.peer];
  const bool local = topo_.same_node(me_, m.peer);
  const int rails = std::max(1, topo_.rails());
  const int nparts = !local && m.bytes > stripe_bytes_ ? std::min(rails, 64) : 1;
  const int first_rail = local ? 0 : (me_ + m.peer) % rails;
  uint64_t off = 0;
  for (int p = 0; p < nparts; ++p) {
    const uint64_t len = m.bytes / nparts + (static_cast<uint64_t>(p) < m.bytes % nparts ? 1 : 0);
    FrameHeader h = make_header(Frame::Data, comm_id_, me_);
    h.seq = seq;
    h.op = m.tag;
    h.flags = kFlagMessage;
    h.part = static_cast<uint16_t>(p);
    h.nparts = static_cast<uint16_t>(nparts);
    h.offset = off;
    h.length = len;
    h.total = m.bytes;
    iov_.assign(len ? 1 : 0, iovec{m.buf + off, len});
    t_.send(m.peer, (first_rail + p) % rails, h, iov_.data(), iov_.size());
    off += len;
  }
  sends_.push_back(r);
  poll();
}

void Mailbox::poll() {
  if (!sends_.empty() && !t_.sends_pending()) {
    auto done = std::move(sends_);
    sends_.clear();
    for (auto& r : done) complete(r, Status::Ok, "");
  }
  if (receives_.empty()) return;
  const double now = now_seconds();
  for (auto it = receives_.begin(); it != receives_.end();) {
    const Message& m = *(*it)->p2p;
    if (now < m.posted_at + timeout_) {
      ++it;
      continue;
    }
    auto r = *it;
    it = receives_.erase(it);
    complete(r, Status::Timeout,
             "no message " + (m.peer == kAnySource ? std::string("from any rank") : "from rank " + std::to_string(m.peer)) +
                 " with tag " + std::to_string(m.tag) + " came within " + seconds_text(timeout_));
  }
}

void Mailbox::fail_all(Status st, const std::string& why) {
  std::vector<std::shared_ptr<Request>> failed(sends_.begin(), sends_.end());
  failed.insert(failed.end(), receives_.begin(), receives_.end());
  failed.insert(failed.end(), matched_.begin(), matched_.end());
  sends_.clear();
  receives_.clear();
  matched_.clear();
  incoming_.clear();
  unmatched_.clear();
  for (auto& r : failed) complete(r, st, why);
}

void Mailbox::withdraw(const std::shared_ptr<Request>& r) {
  auto it = std::find(receives_.begin(), receives_.end(), r);
  if (it == receives_.end()) return;
  receives_.erase(it);
  complete(r, Status::Arg, "the receive was withdrawn before a message matched it");
}

// ---------------------------------------------------------------- frames in

void Mailbox::bad_frame(const FrameHeader& h, int rail, const std::string& what) const {
  throw RuntimeError(Status::Protocol, "rejected a message frame from " + link_name(h.sender, rail) + ": " + what);
}

// Messages of `sender` taken into matching in its order, as far as their frames came.
void Mailbox::take_in_order(int sender) {
  for (;;) {
    const Key k{sender, next_take_[sender]};
    auto it = incoming_.find(k);
    if (it == incoming_.end()) return;
    ++next_take_[sender];
    Incoming& in = it->second;
    in.taken = true;
    auto r = std::find_if(receives_.begin(), receives_.end(), [&](const std::shared_ptr<Request>& q) {
      return (q->p2p->peer == kAnySource || q->p2p->peer == sender) && q->p2p->tag == in.tag;
    });
    if (r == receives_.end()) {
      unmatched_.push_back(k);
      continue;
    }
    auto req = *r;
    receives_.erase(r);
    match(k, in, req);
  }
}

// Message k and receive r meet: what of it came is copied in, the rest lands in place.
void Mailbox::match(const Key& k, Incoming& in, const std::shared_ptr<Request>& r) {
  Message& m = *r->p2p;
  m.peer = k.first;
  if (in.total != m.bytes) {
    complete(r, Status::Mismatch,
             "rank " + std::to_string(k.first) + " sent " + std::to_string(in.total) + " bytes with tag " +
                 std::to_string(in.tag) + ", this receive takes " + std::to_string(m.bytes) +
                 " (the message was dropped)");
    in.dropped = true;
    in.held.clear();
    finished(k, in);
    return;
  }
  for (auto& [off, bytes] : in.held) std::memcpy(m.buf + off, bytes.data(), bytes.size());
  in.held.clear();
  in.recv = r;
  if (!finished(k, in)) matched_.push_back(r);
}

// Every part of k is there: its receive completes and it is forgotten. True then.
bool Mailbox::finished(const Key& k, Incoming& in) {
  const uint64_t all = in.nparts >= 64 ? ~0ull : (1ull << in.nparts) - 1;
  if (in.parts_done != all || (!in.recv && !in.dropped)) return false;
  auto r = in.recv;
  incoming_.erase(k);  // in is gone from here on
  if (r) {
    matched_.erase(std::remove(matched_.begin(), matched_.end(), r), matched_.end());
    complete(r, Status::Ok, "");
  }
  return true;
}

Landing Mailbox::frame_header(const FrameHeader& h, int rail, std::vector<iovec>* place) {
  if (h.nparts == 0 || h.nparts > 64 || h.part >= h.nparts || h.offset > h.total || h.length > h.total - h.offset ||
      h.op < 0 || h.seq == 0)
    bad_frame(h, rail, "part " + std::to_string(h.part) + "/" + std::to_string(h.nparts) + " at offset " +
                           std::to_string(h.offset) + " length " + std::to_string(h.length) + " of " +
                           std::to_string(h.total) + " bytes, tag " + std::to_string(h.op));
  const Key k{h.sender, h.seq};
  auto it = incoming_.find(k);
  if (it == incoming_.end()) {
    if (h.seq < next_take_[h.sender]) {  // that message is complete: a copy sent again after a rail failed
      if (h.flags & kFlagMoved) return Landing::Drop;
      bad_frame(h, rail, "message " + std::to_string(h.seq) + " is complete (a replayed frame)");
    }
    Incoming in;
    in.tag = h.op;
    in.total = h.total;
    in.nparts = h.nparts;
    it = incoming_.emplace(k, std::move(in)).first;
  }
  Incoming& in = it->second;
  if (in.tag != h.op || in.total != h.total || in.nparts != h.nparts)
    bad_frame(h, rail, "its parts disagree on the tag, size or number of parts");
  const uint64_t bit = 1ull << h.part;
  if (in.parts_seen & bit) {
    if (h.flags & kFlagMoved) return Landing::Drop;
    bad_frame(h, rail, "part " + std::to_string(h.part) + " of message " + std::to_string(h.seq) + " came twice");
  }
  in.parts_seen |= bit;
  if (!in.taken) take_in_order(h.sender);
  it = incoming_.find(k);  // matching may have finished it (a message of another size)
  if (it == incoming_.end()) return Landing::Drop;
  Incoming& now = it->second;
  if (now.dropped) {  // its receive failed: counted, thrown away
    now.parts_done |= bit;
    finished(k, now);
    return Landing::Drop;
  }
  if (!now.recv) return Landing::Hold;
  place->assign(h.length ? 1 : 0, iovec{now.recv->p2p->buf + h.offset, h.length});
  return Landing::Place;
}

void Mailbox::frame_done(const FrameHeader& h, int, std::vector<char>* held) {
  const Key k{h.sender, h.seq};
  auto it = incoming_.find(k);
  if (it == incoming_.end()) return;  // dropped with its receive
  Incoming& in = it->second;
  in.parts_done |= 1ull << h.part;
  if (held && !in.dropped) {
    if (in.recv)  // matched while its payload came
      std::memcpy(in.recv->p2p->buf + h.offset, held->data(), held->size());
    else
      in.held.emplace_back(h.offset, std::move(*held));
  }
  finished(k, in);
}

}  // namespace railcoll::rt
