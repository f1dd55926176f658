// The one-sided path of the libfabric links (ofi_links.hpp). A data frame of
// at least RAILCOLL_OFI_RMA_BYTES goes by writes, a rendezvous in three steps,
// all on the frame's rail:
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
// progress (reading its CQ in drive()) is all the writes need at the target.
// A write that fails breaks its link as a failed send does, and the frame goes
// again by messages on another rail (same id: the receiver fills the frame it
// knows, and counts nothing more on the slot).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/bootstrap/net.hpp"
#include "runtime/transport/ofi/ofi_chunks.hpp"
#include "runtime/transport/ofi/ofi_links.hpp"
#include "runtime/transport/ofi/ofi_rail.hpp"

namespace railcoll::rt {

void OfiLinks::queue_special(int peer, int rail, uint32_t kind, const FrameHeader& h, uint64_t id, std::string body) {
  OutChunks f;
  f.id = id;
  f.hdr = h;
  f.kind = kind;
  f.owned = std::move(body);
  f.end = f.owned.size();
  if (kind == kCts) f.hdr.length = f.end;  // an RTS's header keeps its frame's length (no payload goes)
  queue(peer, rail, std::move(f));
}

// The sender's first step: the frame waits (in place) for its answer, and its
// header goes ahead alone.
void OfiLinks::start_rma(int peer, int rail, OutChunks f) {
  const uint64_t id = next_frame_id_++;
  RmaOut& o = rma_[id];
  o.f = std::move(f);
  o.f.peer = peer;
  o.f.id = id;
  o.f.end = o.f.hdr.length;
  o.rail = rail;
  o.announced_at = now_seconds();
  queue_special(peer, rail, kRts, o.f.hdr, id, "");
}

// The receiver: where the frame lands (the sink says, as for a first chunk),
// and the answer. An RTS sent again gets the same answer.
void OfiLinks::on_rts(int rail, int from, const FrameHeader& h, uint64_t id) {
  const uint64_t key = in_key(from, id);
  auto it = in_.find(key);
  InFrame* f = it != in_.end() ? &it->second : nullptr;
  std::string answer;
  if (f && !f->cts.empty()) {
    answer = f->cts;
  } else if (f) {  // its chunks came first (sent again after its link failed)
    CtsHead c{kAnswerMessages, 0, 0, 0};
    answer.assign(reinterpret_cast<const char*>(&c), sizeof c);
  } else if (done_.count(key)) {  // whole already (by messages on another rail): a late announcement
    CtsHead c{kAnswerDrop, 0, 0, 0};
    answer.assign(reinterpret_cast<const char*>(&c), sizeof c);
  } else {
    f = &new_in_frame(key, rail, h);
    answer = answer_rts(rail, from, key, *f);
    if (f->landing == Landing::Drop) in_.erase(key);
    else f->cts = answer;
  }
  const int to = live_rail(from, rail);
  if (to >= 0) queue_special(from, to, kCts, header(Frame::Ping), id, std::move(answer));
}

std::string OfiLinks::answer_rts(int rail, int from, uint64_t key, InFrame& f) {
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
void OfiLinks::on_cts(int rail, int from, uint64_t id, const char* body, size_t len) {
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
  if (c.answer != kAnswerWrites) return rma_by_messages(o);
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
  if (ws.size() > kMaxWrites) return rma_by_messages(o);  // the receiver's frame takes chunks too
  try {
    if (local_desc)  // FI_MR_LOCAL: every source piece registered (the rail's cache)
      for (auto& w : ws) w.desc = R.region_for(w.src, w.len).desc;
  } catch (const RuntimeError&) {
    return rma_by_messages(o);
  }
  o.writes = std::move(ws);
  o.data = c.slot | static_cast<uint32_t>(o.writes.size() << 16);
  ++rma_frames_, rma_writes_ += o.writes.size();
  rma_wait_s_ += o.answered_at - o.announced_at;
  post_writes(o);
}

// The frame goes by messages after all (same id: the receiver fills the frame
// its RTS made), on its rail or the next one up (then marked moved).
void OfiLinks::rma_by_messages(RmaOut& o) {
  o.messages = true;
  ++rma_declined_;
  const int to = live_rail(o.f.peer, o.rail);
  const uint64_t id = o.f.id;
  const int peer = o.f.peer;
  if (to >= 0) {
    OutChunks f = o.f;
    if (to != o.rail) f.hdr.flags |= kFlagMoved;
    out_[to][peer].push_back(std::move(f));
  }
  if (o.in_flight == 0) rma_.erase(id);  // else the last completion erases it
  if (to >= 0) post_sends(to);
}

void OfiLinks::post_writes(RmaOut& o) {
  FabricRail& R = *rails_[o.rail];
  uint64_t& link_bytes = write_bytes_in_flight_[o.rail][o.f.peer];
  while (o.posted < o.writes.size() && !o.messages) {
    RmaWrite& w = o.writes[o.posted];
    // Paced as chunks are: a link takes another write only within its budget.
    if (link_write_budget_ && link_bytes > 0 && link_bytes + w.len > link_write_budget_) return;
    const ssize_t rc = R.write(w.src, w.len, w.desc, o.data, o.f.peer, w.addr, w.key, &w.ctx);
    if (rc == -FI_EAGAIN) {
      if (o.in_flight == 0 && refused_since_[o.rail][o.f.peer] == 0) refused_since_[o.rail][o.f.peer] = now_seconds();
      return;  // again after the provider's progress (drive)
    }
    if (rc != 0) {
      const std::string why = std::string("fi_writedata: ") + fi_strerror(static_cast<int>(-rc));
      link_failed(o.f.peer, o.rail, why);  // moves this frame to messages too (give_up)
      return;
    }
    refused_since_[o.rail][o.f.peer] = 0;
    link_bytes += w.len;
    ++o.posted, ++o.in_flight;
  }
}

// A write completed (error: with the provider's words); the frame's last
// completion ends it on this side.
void OfiLinks::write_done(int rail, RmaWrite* w, const std::string* error) {
  const uint64_t id = w->frame;
  auto it = rma_.find(id);
  if (it == rma_.end()) throw RuntimeError(Status::Internal, "a write completed that no frame owns");
  --it->second.in_flight;
  const int peer = it->second.f.peer;
  write_bytes_in_flight_[rail][peer] -= w->len;
  moving_at_[peer][rail] = now_seconds();
  if (error && !it->second.messages)
    link_failed(peer, rail, "a write failed: " + *error);  // the frame goes by messages
  it = rma_.find(id);
  if (it != rma_.end() && it->second.in_flight == 0 &&
      (it->second.messages || it->second.posted == it->second.writes.size())) {
    if (!it->second.messages) rma_write_s_ += now_seconds() - it->second.answered_at;
    rma_.erase(it);
  }
}

// The receiver: a write of a frame landed. Its CQ data names the slot and how
// many writes the frame takes; the last ends it.
void OfiLinks::on_write_arrived(int rail, uint64_t data) {
  if (closing_) return;  // no call is left to take it (as for a chunk)
  const uint32_t slot = static_cast<uint32_t>(data & 0xffff), writes = static_cast<uint32_t>((data >> 16) & 0xffff);
  if (slot >= kSlots || !slots_[slot].used)
    throw RuntimeError(Status::Protocol, "a write on rail " + std::to_string(rail) + " into no slot of this rank");
  // The source address of a write's completion is not checked: fi_cq(3)
  // promises FI_SOURCE for received messages only (rxm reports another
  // address). Only the sender the CTS went to holds the regions' keys.
  InSlot& s = slots_[slot];
  heard_at_[s.sender][rail] = now_seconds();
  if (s.dead || ++s.arrived < writes) return;
  const uint64_t key = s.key;
  s = InSlot{};
  auto it = in_.find(key);
  if (it == in_.end()) return;
  it->second.got = it->second.hdr.length;
  frame_complete(it);
}

bool OfiLinks::writes_to_post() const {
  for (auto& [id, o] : rma_)
    if (!o.messages && o.posted < o.writes.size()) return true;
  return false;
}

bool OfiLinks::writes_outstanding() const {
  for (auto& [id, o] : rma_)
    if (o.in_flight > 0 || (o.answered && !o.messages && o.posted < o.writes.size())) return true;
  return false;
}

}  // namespace railcoll::rt
