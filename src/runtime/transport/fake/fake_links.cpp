// Fake links with rails (fake_links.hpp): the fake node room, the fake
// network links, and the fabric that joins them.
#include "runtime/transport/fake/fake_links.hpp"
#include "runtime/transport/fake/fake_transport.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/errors.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"
#include "runtime/transport/link.hpp"
#include "runtime/transport/rails/rail_transport.hpp"

namespace railcoll::rt {

namespace {

// Hands one arriving frame to the rails layer, as a stream would: the header,
// then the payload into place (or held), then done.
void hand_up(LinkEvents& ev, FakeRails::Item& it, std::vector<iovec>* place) {
  const Landing l = ev.frame_header(it.from, it.rail, it.hdr, place);
  if (l == Landing::Drop) return;
  if (l == Landing::Hold) return ev.frame_done(it.from, it.rail, it.hdr, &it.payload);
  size_t at = 0;
  for (auto& v : *place) {
    if (at + v.iov_len > it.payload.size()) throw RuntimeError(Status::Internal, "fake: the sink placed too much");
    memcpy(v.iov_base, it.payload.data() + at, v.iov_len);
    at += v.iov_len;
  }
  if (at != it.payload.size()) throw RuntimeError(Status::Internal, "fake: the sink placed too little");
  ev.frame_done(it.from, it.rail, it.hdr, nullptr);
}

FakeRails::Item item_of(int from, int rail, const OutFrame& f) {
  FakeRails::Item it;
  it.from = from;
  it.rail = rail;
  it.hdr = f.hdr;
  it.payload.assign(f.owned.begin(), f.owned.end());
  for (auto& v : f.iov)
    it.payload.insert(it.payload.end(), static_cast<const char*>(v.iov_base),
                      static_cast<const char*>(v.iov_base) + v.iov_len);
  it.hdr.length = it.payload.size();
  return it;
}

// The room of a pretend node: the local links (frames straight into the
// peer's inbox), the node's fake segment, the wait on the rank's inbox.
class FakeNode final : public NodeRoom {
 public:
  FakeNode(FakeRails& net, int me) : net_(net), me_(me) {}
  void attach(LinkEvents* ev) override { ev_ = ev; }
  std::string contact() const override { return ""; }
  void connect(const LinkSetup&, double) override {}
  std::string describe() const override { return "fake"; }
  void send(int peer, int, OutFrame f) override { net_.post(peer, item_of(me_, -1, f), true); }
  void send_urgent(int peer, int rail, const OutFrame& f) override { send(peer, rail, f); }
  bool sends_pending() const override { return false; }  // queued means delivered
  void end_call() override {}
  void drive(double) override {
    FakeRails::Box& b = net_.box(me_);
    if (taken_.empty()) {
      std::lock_guard<std::mutex> lock(b.m);
      taken_.swap(b.local);
    }
    while (!taken_.empty()) {  // what a refused frame leaves is handled next time
      FakeRails::Item it = std::move(taken_.front());
      taken_.pop_front();
      hand_up(*ev_, it, &place_);
    }
  }
  LinkSigns signs(int, int) override { return {}; }
  GivenUp give_up(int, int) override { return {}; }
  void peer_gave_up(int, int, uint64_t) override {}
  bool closed(int, int) const override { return false; }
  bool reconnect(int, int, double) override { return false; }
  bool reconnecting(int, int) const override { return false; }
  void stop_reconnect(int, int) override {}
  void goodbye(double) override {
    const Topology& t = net_.topo();
    OutFrame bye;
    bye.hdr = make_header(Frame::Bye, FakeRails::kCommId, me_);
    for (int r : t.ranks_of(t.node_of(me_)))
      if (r != me_) send(r, -1, bye);
  }
  // NodeRoom
  NodeSegment node() const override { return net_.segment(net_.topo().node_of(me_)); }
  void wake_node_sleepers() override {
    const Topology& t = net_.topo();
    for (int r : t.ranks_of(t.node_of(me_)))
      if (r != me_) net_.poke(r);
  }
  void wait(double wait_s, const NodeWait* sleep_on, bool) override {
    FakeRails::Box& b = net_.box(me_);
    std::unique_lock<std::mutex> lock(b.m);
    auto ready = [&] {
      return !b.local.empty() || !b.net.empty() || b.poked ||
             (sleep_on && sleep_on->counter->load(std::memory_order_seq_cst) >= sleep_on->target);
    };
    if (wait_s > 0 && !ready()) b.cv.wait_for(lock, std::chrono::duration<double>(wait_s), ready);
    b.poked = false;
  }
  void unmap() override {}
  void watch(int, uint32_t, FdWatcher*, uint32_t) override {}
  void unwatch(int) override {}

 private:
  FakeRails& net_;
  const int me_;
  LinkEvents* ev_ = nullptr;
  std::deque<FakeRails::Item> taken_;
  std::vector<iovec> place_;
};

// The network links of one rank: (peer, rail) for every peer on another node.
class FakeNetLinks final : public Links {
 public:
  FakeNetLinks(FakeRails& net, int me) : net_(net), me_(me), links_(net.topo().nranks() * net.topo().rails()) {}
  void attach(LinkEvents* ev) override { ev_ = ev; }
  std::string contact() const override { return ""; }
  void connect(const LinkSetup&, double) override {}
  std::string describe() const override { return "fake"; }

  void send(int peer, int rail, OutFrame f) override {
    Link& l = link(peer, rail);
    l.out.push_back(item_of(me_, rail, f));
    push(peer, rail);
  }
  void send_urgent(int peer, int rail, const OutFrame& f) override { send(peer, rail, f); }
  bool sends_pending() const override {
    for (auto& l : links_)
      if (!l.out.empty()) return true;
    return false;
  }
  void end_call() override {}  // payloads were copied when sent

  void drive(double now) override {
    const Topology& t = net_.topo();
    for (int p = 0; p < t.nranks(); ++p)
      if (!t.same_node(p, me_))
        for (int r = 0; r < t.rails(); ++r) push(p, r);
    FakeRails::Box& b = net_.box(me_);
    if (taken_.empty()) {
      std::lock_guard<std::mutex> lock(b.m);
      taken_.swap(b.net);
      for (auto& it : taken_)
        if (it.kind == FakeRails::Item::Frame) {
          net_.in_box(it.from, me_, it.rail).fetch_sub(1);
          net_.taken(it.from, me_, it.rail).fetch_add(1);
        }
    }
    while (!taken_.empty()) {
      FakeRails::Item it = std::move(taken_.front());
      taken_.pop_front();
      receive(it, now);
    }
    for (auto& l : links_)
      if (l.connecting && now > l.connect_until) l.connecting = false;
  }

  LinkSigns signs(int peer, int rail) override {
    Link& l = link(peer, rail);
    const double now = now_seconds();
    const uint64_t taken = net_.taken(me_, peer, rail).load();
    const bool busy = !l.out.empty() || net_.in_box(me_, peer, rail).load() > 0;
    if (!busy || taken != l.taken_seen || !l.was_busy) l.moving_at = now;  // idle: the clock starts when busy
    l.taken_seen = taken;
    l.was_busy = busy;
    return {busy, l.moving_at, l.heard_at};
  }

  // What the peer has not taken comes back out of its inbox, with what never left.
  GivenUp give_up(int peer, int rail) override {
    Link& l = link(peer, rail);
    GivenUp g;
    std::deque<FakeRails::Item> back;
    {
      FakeRails::Box& b = net_.box(peer);
      std::lock_guard<std::mutex> lock(b.m);
      for (auto it = b.net.begin(); it != b.net.end();) {
        if (it->kind == FakeRails::Item::Frame && it->from == me_ && it->rail == rail) {
          back.push_back(std::move(*it));
          it = b.net.erase(it);
          net_.in_box(me_, peer, rail).fetch_sub(1);
        } else {
          ++it;
        }
      }
    }
    for (auto* q : {&back, &l.out})
      for (auto& it : *q)
        if (moves_with_rail(it.hdr.type)) {
          OutFrame f;
          f.hdr = it.hdr;
          f.owned.assign(it.payload.begin(), it.payload.end());
          g.frames.push_back(std::move(f));
        }
    l.out.clear();
    l.down = true;
    close_if_drained(peer, rail);
    return g;
  }
  void peer_gave_up(int peer, int rail, uint64_t) override {
    link(peer, rail).drained = true;
    close_if_drained(peer, rail);
  }
  bool closed(int peer, int rail) const override { return link(peer, rail).closed; }
  bool reconnect(int peer, int rail, double now) override {
    Link& l = link(peer, rail);
    if (!net_.carries(me_, peer, rail)) return false;  // the connect would time out
    FakeRails::Item hello;
    hello.kind = FakeRails::Item::Hello;
    hello.from = me_;
    hello.rail = rail;
    net_.post(peer, std::move(hello), false);
    l.connecting = true;
    l.connect_until = now + 1.0;
    return true;
  }
  bool reconnecting(int peer, int rail) const override { return link(peer, rail).connecting; }
  void stop_reconnect(int peer, int rail) override { link(peer, rail).connecting = false; }

  void goodbye(double) override {
    const Topology& t = net_.topo();
    for (int p = 0; p < t.nranks(); ++p) {
      if (t.same_node(p, me_)) continue;
      for (int r = 0; r < t.rails(); ++r) {
        if (link(p, r).down) continue;
        OutFrame bye;
        bye.hdr = make_header(Frame::Bye, FakeRails::kCommId, me_);
        send(p, r, bye);
      }
    }
  }

 private:
  struct Link {
    std::deque<FakeRails::Item> out;  // not yet in the peer's inbox (the rail is cut)
    bool down = false, drained = false, closed = false;
    bool connecting = false;
    double connect_until = 0;
    uint64_t taken_seen = 0;
    bool was_busy = false;
    double moving_at = 0, heard_at = 0;
  };
  Link& link(int peer, int rail) { return links_[static_cast<size_t>(peer) * net_.topo().rails() + rail]; }
  const Link& link(int peer, int rail) const {
    return links_[static_cast<size_t>(peer) * net_.topo().rails() + rail];
  }

  // Frames go into the peer's inbox while the rail carries them.
  void push(int peer, int rail) {
    Link& l = link(peer, rail);
    if (l.out.empty() || !net_.carries(me_, peer, rail)) return;
    while (!l.out.empty()) {
      net_.in_box(me_, peer, rail).fetch_add(1);
      net_.post(peer, std::move(l.out.front()), false);
      l.out.pop_front();
    }
  }

  void close_if_drained(int peer, int rail) {
    Link& l = link(peer, rail);
    if (l.closed || !l.down || !l.drained) return;
    l.closed = true;
    ev_->link_closed(peer, rail);
  }

  void restored(int peer, int rail) {
    Link& l = link(peer, rail);
    l.down = l.drained = l.closed = l.connecting = false;
    ev_->link_restored(peer, rail);
  }

  void receive(FakeRails::Item& it, double now) {
    switch (it.kind) {
      case FakeRails::Item::Interface:
        return ev_->interface_changed(it.rail, it.running);
      case FakeRails::Item::Hello: {  // the peer reconnects: answered unless held down here
        if (!ev_->may_restore(it.from, it.rail)) return;
        restored(it.from, it.rail);
        FakeRails::Item ack;
        ack.kind = FakeRails::Item::HelloAck;
        ack.from = me_;
        ack.rail = it.rail;
        if (net_.carries(me_, it.from, it.rail)) net_.post(it.from, std::move(ack), false);
        return;
      }
      case FakeRails::Item::HelloAck:
        if (link(it.from, it.rail).connecting) restored(it.from, it.rail);
        return;
      case FakeRails::Item::Frame:
        link(it.from, it.rail).heard_at = now;
        return hand_up(*ev_, it, &place_);
    }
  }

  FakeRails& net_;
  const int me_;
  LinkEvents* ev_ = nullptr;
  std::vector<Link> links_;  // [peer * rails + rail]
  std::deque<FakeRails::Item> taken_;
  std::vector<iovec> place_;
};

// The fake links need no exchange: set-up has nothing to say.
class NoOutOfBand final : public OutOfBand {
 public:
  explicit NoOutOfBand(int n) : n_(n) {}
  int rank() const override { return 0; }
  int size() const override { return n_; }
  void allgather(const void*, size_t, void*) override {
    throw RuntimeError(Status::Internal, "fake: no out-of-band exchange");
  }

 private:
  int n_;
};

}  // namespace

FakeRails::FakeRails(const Topology& topo, const TransportSettings& settings, uint64_t shm_bytes)
    : topo_(topo),
      counters_(new Counters[static_cast<size_t>(topo.nranks()) * topo.nranks() * topo.rails()]),
      up_(new std::atomic<bool>[static_cast<size_t>(topo.nnodes()) * topo.rails()]) {
  for (int i = 0; i < topo.nnodes() * topo.rails(); ++i) up_[i] = true;
  for (int n = 0; n < topo.nnodes(); ++n) {
    node_mem_.emplace_back(nullptr, std::free);
    segs_.push_back(fake_node_segment(shm_bytes, &node_mem_.back()));
  }
  std::vector<std::string> rails;
  for (int r = 0; r < topo.rails(); ++r) rails.push_back("fake-rail-" + std::to_string(r));
  for (int r = 0; r < topo.nranks(); ++r) {
    boxes_.push_back(std::make_unique<Box>());
    transports_.push_back(std::make_unique<RailTransport>(settings, r, topo.nranks(), rails,
                                                          std::make_unique<FakeNode>(*this, r),
                                                          std::make_unique<FakeNetLinks>(*this, r), false));
  }
  NoOutOfBand oob(topo.nranks());
  std::vector<std::string> contacts;
  for (auto& t : transports_) contacts.push_back(t->contact());
  for (auto& t : transports_) t->connect(topo, kCommId, "fake", "0", contacts, oob, now_seconds() + 1);
}

FakeRails::~FakeRails() = default;

Transport& FakeRails::transport(int rank) { return *transports_.at(rank); }

void FakeRails::post(int to, Item item, bool local) {
  Box& b = *boxes_[to];
  std::lock_guard<std::mutex> lock(b.m);
  (local ? b.local : b.net).push_back(std::move(item));
  b.cv.notify_all();
}

void FakeRails::poke(int rank) {
  Box& b = *boxes_[rank];
  std::lock_guard<std::mutex> lock(b.m);
  b.poked = true;
  b.cv.notify_all();
}

bool FakeRails::carries(int a, int b, int rail) const {
  return up_[topo_.node_of(a) * topo_.rails() + rail] && up_[topo_.node_of(b) * topo_.rails() + rail];
}

void FakeRails::cut(int node, int rail, bool silent) {
  up_[node * topo_.rails() + rail] = false;
  if (!silent) tell_interface(node, rail, false);
}

void FakeRails::mend(int node, int rail) {
  up_[node * topo_.rails() + rail] = true;
  tell_interface(node, rail, true);
  for (int r = 0; r < topo_.nranks(); ++r) poke(r);  // frames waiting for the rail may go now
}

// The ranks of the node hear that its interface of `rail` lost or regained its link.
void FakeRails::tell_interface(int node, int rail, bool running) {
  for (int r : topo_.ranks_of(node)) {
    Item it;
    it.kind = Item::Interface;
    it.rail = rail;
    it.running = running;
    post(r, std::move(it), false);
  }
}

}  // namespace railcoll::rt
