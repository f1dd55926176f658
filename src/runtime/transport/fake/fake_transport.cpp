// The fake transport (fake_transport.hpp): queues between the ranks of one
// process, a fake node segment per pretend node, and the fault hooks.
#include "runtime/transport/fake/fake_transport.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/errors.hpp"

namespace railcoll::rt {

NodeSegment fake_node_segment(uint64_t shm_bytes, std::unique_ptr<char, void (*)(void*)>* mem) {
  // calloc: zeroed, and the kernel gives pages only when they are touched.
  char* p = static_cast<char*>(std::calloc(1, node_segment_bytes(shm_bytes)));
  if (!p) throw std::bad_alloc();
  mem->reset(p);
  NodeSegment seg;
  seg.shm = new (p) NodeShm{};
  seg.shm->capacity = shm_bytes;
  seg.shm->magic = kShmMagic;
  seg.data = p + kShmHeader;
  seg.bytes = node_segment_bytes(shm_bytes);
  return seg;
}

FakeFabric::FakeFabric(const Topology& topo, uint64_t shm_bytes) : topo_(topo), dead_(new std::atomic<bool>[topo.nranks()]) {
  for (int n = 0; n < topo.nnodes(); ++n) {
    node_mem_.emplace_back(nullptr, std::free);
    segs_.push_back(fake_node_segment(shm_bytes, &node_mem_.back()));
  }
  for (int r = 0; r < topo.nranks(); ++r) {
    dead_[r] = false;
    inbox_.push_back(std::make_unique<Inbox>());
    transports_.push_back(std::make_unique<FakeTransport>(*this, r));
  }
}

FakeFabric::~FakeFabric() = default;

Transport& FakeFabric::transport(int rank) { return *transports_.at(rank); }

void FakeFabric::deliver(int to, FakeFrame f) {
  Inbox& in = *inbox_[to];
  std::lock_guard<std::mutex> lock(in.m);
  if (in.hold && in.hold(f.hdr)) {
    in.gated.push_back(std::move(f));
    return;
  }
  in.frames.push_back(std::move(f));
  in.cv.notify_all();
}

void FakeFabric::poke(int rank) {
  Inbox& in = *inbox_[rank];
  std::lock_guard<std::mutex> lock(in.m);
  in.poked = true;
  in.cv.notify_all();
}

void FakeFabric::close_gate(int rank, std::function<bool(const FrameHeader&)> hold) {
  Inbox& in = *inbox_[rank];
  std::lock_guard<std::mutex> lock(in.m);
  in.hold = std::move(hold);
}

void FakeFabric::open_gate(int rank) {
  Inbox& in = *inbox_[rank];
  std::lock_guard<std::mutex> lock(in.m);
  in.hold = nullptr;
  for (auto& f : in.gated) in.frames.push_back(std::move(f));
  in.gated.clear();
  in.cv.notify_all();
}

void FakeFabric::kill(int rank) {
  dead_[rank] = true;
  for (int r = 0; r < topo_.nranks(); ++r)
    if (r != rank) poke(r);
}

size_t FakeFabric::queued(int rank) {
  Inbox& in = *inbox_[rank];
  std::lock_guard<std::mutex> lock(in.m);
  return in.frames.size() + in.gated.size();
}

// ------------------------------------------------------------------ a rank's end

FakeTransport::FakeTransport(FakeFabric& fabric, int rank)
    : fabric_(fabric), me_(rank), said_(fabric.topo().nranks()) {}

NodeSegment FakeTransport::node() const { return fabric_.segs_[fabric_.topo().node_of(me_)]; }

void FakeTransport::wake_node_sleepers() {
  const Topology& t = fabric_.topo();
  for (int r : t.ranks_of(t.node_of(me_)))
    if (r != me_) fabric_.poke(r);
}

void FakeTransport::send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) {
  check_alive();
  FakeFrame f{h, fabric_.topo().same_node(peer, me_) ? -1 : rail, {}};
  for (size_t i = 0; i < n; ++i) {
    const char* p = static_cast<const char*>(payload[i].iov_base);
    f.payload.insert(f.payload.end(), p, p + payload[i].iov_len);
  }
  std::vector<FakeFrame> extra;
  if (fabric_.tamper_ && !fabric_.tamper_(peer, &f, &extra)) return;
  fabric_.deliver(peer, std::move(f));
  for (auto& e : extra) fabric_.deliver(peer, std::move(e));
}

void FakeTransport::post(int to, Frame type, std::string payload, uint64_t seq) {
  FakeFrame f{make_header(type, FakeFabric::kCommId, me_), fabric_.topo().same_node(to, me_) ? -1 : 0,
              std::vector<char>(payload.begin(), payload.end())};
  f.hdr.seq = seq;
  f.hdr.length = f.payload.size();
  fabric_.deliver(to, std::move(f));
}

void FakeTransport::post_pong(int to) {
  const PeerSaid here = sink_ ? sink_->position() : PeerSaid{};
  FakeFrame f{make_header(Frame::Pong, FakeFabric::kCommId, me_), fabric_.topo().same_node(to, me_) ? -1 : 0, {}};
  pong_header(here, &f.hdr);
  fabric_.deliver(to, std::move(f));
}

// As the node room and TCP links: a peer whose connections closed without a goodbye.
void FakeTransport::check_alive() const {
  for (int r = 0; r < fabric_.topo().nranks(); ++r)
    if (r != me_ && fabric_.dead_[r])
      throw RuntimeError(Status::Peer, link_name(r, fabric_.topo().same_node(r, me_) ? -1 : 0) +
                                           " closed its connection without saying goodbye: it exited or died");
}

void FakeTransport::progress(double wait_s, const NodeWait* sleep_on) {
  if (!sink_) throw RuntimeError(Status::Internal, "transport: progress before the executor attached");
  FakeFabric::Inbox& in = *fabric_.inbox_[me_];
  {
    std::unique_lock<std::mutex> lock(in.m);
    auto ready = [&] {
      return !in.frames.empty() || in.poked ||
             (sleep_on && sleep_on->counter->load(std::memory_order_seq_cst) >= sleep_on->target);
    };
    if (wait_s > 0 && !ready()) in.cv.wait_for(lock, std::chrono::duration<double>(wait_s), ready);
    in.poked = false;
    taken_.swap(in.frames);
  }
  while (!taken_.empty()) {
    FakeFrame f = std::move(taken_.front());
    taken_.pop_front();
    receive(f);
  }
  check_alive();
}

// What a stream and the rails layer do with a frame, minus the socket.
void FakeTransport::receive(FakeFrame& f) {
  const FrameHeader& h = f.hdr;
  if (std::string why = header_problem(h, FakeFabric::kCommId, h.sender); !why.empty() || h.length != f.payload.size())
    throw RuntimeError(Status::Protocol, "rejected a frame from " + link_name(h.sender, f.rail) + ": " +
                                             (why.empty() ? "length differs from its payload" : why));
  switch (static_cast<Frame>(h.type)) {
    case Frame::Ping:
      post_pong(h.sender);
      return;
    case Frame::Pong:
      said_[h.sender] = said_in(h);
      said_[h.sender].rails = 1;
      return;
    case Frame::Abort:
      sink_->peer_aborted(h.sender, h.seq, std::string(f.payload.begin(), f.payload.end()));
      return;
    case Frame::Data:
    case Frame::Notify:
      break;
    default:
      return;  // Wake, Bye: nothing to do here
  }
  switch (sink_->frame_header(h, f.rail, &place_)) {
    case Landing::Place: {
      size_t at = 0;
      for (auto& v : place_) {
        if (at + v.iov_len > f.payload.size()) throw RuntimeError(Status::Internal, "fake: the sink placed too much");
        memcpy(v.iov_base, f.payload.data() + at, v.iov_len);
        at += v.iov_len;
      }
      if (at != f.payload.size()) throw RuntimeError(Status::Internal, "fake: the sink placed too little");
      return sink_->frame_done(h, f.rail, nullptr);
    }
    case Landing::Hold:
      return sink_->frame_done(h, f.rail, &f.payload);
    case Landing::Drop:
      return;
  }
}

void FakeTransport::probe_peers() {
  std::fill(said_.begin(), said_.end(), PeerSaid{});
  for (int r = 0; r < fabric_.topo().nranks(); ++r)
    if (r != me_) post(r, Frame::Ping);
}

void FakeTransport::abort_peers(uint64_t call, const std::string& why) {
  for (int r = 0; r < fabric_.topo().nranks(); ++r)
    if (r != me_) post(r, Frame::Abort, why.substr(0, 2000), call);
}

}  // namespace railcoll::rt
