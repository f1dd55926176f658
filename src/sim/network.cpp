#include "sim/network.hpp"

#include <algorithm>

namespace railcoll::sim {

Network::Network(const Machine& m, int nodes, int rails, uint64_t seed)
    : m_(m), nodes_(nodes), rails_(rails), random_(seed ^ 0x5eed5eed5eed5eedULL) {
  long nics = static_cast<long>(nodes) * rails;
  engines_.assign(nics * m.dma_engines, 0);
  bus_read_.assign(m.pci_per_node ? nodes : nics, {});
  if (!m.pci_half_duplex) bus_write_own_.assign(bus_read_.size(), {});
  bus_write_ = m.pci_half_duplex ? &bus_read_ : &bus_write_own_;
  multicast_root_.assign(rails, 0);
  nic_up_.assign(nics, {});
  nic_down_.assign(nics, {});
  if (m.link_burst_bytes > 0) {  // full buckets: the links were idle before the run
    up_bucket_.assign(nics, {m.link_burst_bytes, 0});
    down_bucket_.assign(nics, {m.link_burst_bytes, 0});
  }
  if (m.topology == "fattree") {
    arity_ = m.fattree_arity;
    span_.push_back(1);
    while (span_.back() < nodes) span_.push_back(span_.back() * arity_);
    levels_ = std::max<int>(1, static_cast<int>(span_.size()) - 1);
    span_.push_back(span_.back() * arity_);
    // Level l (1 = the switches nodes plug into) has ceil(nodes / k^l) groups of
    // k^(l-1) switches (k-ary n-tree: every group's switches are the replicas the
    // up-port choices lead to); each switch below the top has k up links.
    level_first_.assign(levels_ + 1, 0);
    for (int l = 1; l < levels_; ++l) {
      long groups = (nodes + span_[l] - 1) / span_[l];
      level_first_[l + 1] = level_first_[l] + groups * span_[l - 1] * arity_;
    }
    links_per_rail_ = level_first_[levels_];
    tree_up_.assign(links_per_rail_ * rails, {});
    tree_down_.assign(links_per_rail_ * rails, {});
    group_.resize(static_cast<size_t>(levels_ + 1) * nodes);
    digit_.resize(static_cast<size_t>(levels_ + 1) * nodes);
    for (int l = 0; l <= levels_; ++l)
      for (int n = 0; n < nodes; ++n) {
        group_[static_cast<size_t>(l) * nodes + n] = static_cast<int>(n / span_[l]);
        digit_[static_cast<size_t>(l) * nodes + n] = l ? static_cast<int>((n / span_[l - 1]) % arity_) : 0;
      }
  }
}

namespace {

// A request for a resource: its bytes are ready at `ready` and keep it `busy`.
// Returns when it ends (and sets *start). A request for a busy resource uses
// what is left of its hole after `ready` first and the time after `free` for the
// rest: the resource loses no capacity to requests made out of time order.
inline double reserve(Network::Queue& q, double ready, double busy, double* start) {
  if (ready < q.free) {
    *start = std::max(ready, q.hole_from);
    double in_hole = std::max(0.0, q.hole_to - *start);
    if (busy <= in_hole) {
      q.hole_from = *start + busy;
      return q.hole_from;
    }
    q.hole_from = q.hole_to;  // the hole is used up
    q.free += busy - in_hole;
    *start = q.free - busy;  // downstream, as if it had run in one piece
    return q.free;
  }
  q.hole_from = q.free;
  q.hole_to = ready;
  *start = ready;
  q.free = ready + busy;
  return q.free;
}

// One stage of the pipeline: the bytes cross `q` in `busy`, `latency` after the
// previous stage; the resource is held for `occupy` (at least `busy`: a NIC
// port injects one message per gap_us, which limits the rate of the messages
// after this one without delaying this one's bytes).
inline void stage(Network::Head& h, Network::Queue& q, double busy, double latency, double occupy) {
  double start;
  reserve(q, h.start + latency, occupy, &start);
  h.end = std::max(start + busy, h.end + latency);
  h.start = start;
}
inline void stage(Network::Head& h, Network::Queue& q, double busy, double latency) {
  stage(h, q, busy, latency, busy);
}

// A stage for a hardware collective's packets. The Elites switch packets, not
// messages (seed 004 §2.2.1: wormhole packets of at most 320 B, two virtual
// channels per link), and the Elan3 DMA thread time-slices large DMAs "so that
// small DMAs are not adversely blocked" (§2.1): at a resource that another
// transfer holds, they wait for the rest of the packet in flight (`wait`), not
// for the whole message, then share it
// packet by packet with what is there: both go at half rate while both have
// bytes left, and what was queued finishes later by this transfer's time.
inline void stage_between_packets(Network::Head& h, Network::Queue& q, double busy, double latency, double occupy,
                                  double wait) {
  double ready = h.start + latency, queued = q.free - ready;
  if (queued <= wait) return stage(h, q, busy, latency, occupy);
  h.start = ready + wait;
  q.free += occupy;
  h.end = std::max(h.start + busy + std::min(busy, queued - wait), h.end + latency);
}

}  // namespace

// Adaptive routing up (the Elites, seed 004 §2.2): the up link whose queue is
// free first when the head arrives; ties go to the lowest port.
int Network::choose_up(long link0, double head) const {
  int best = 0;
  double best_t = std::max(tree_up_[link0].free, head);
  for (int j = 1; j < arity_; ++j) {
    double t = std::max(tree_up_[link0 + j].free, head);
    if (t < best_t) best_t = t, best = j;
  }
  return best;
}

double* Network::free_engine(long nic) {
  double* first = &engines_[nic * m_.dma_engines];
  double* engine = first;
  for (int e = 1; e < m_.dma_engines; ++e)
    if (first[e] < *engine) engine = first + e;
  return engine;
}

// Token refill is booked in time order of the stage's start (holes ignored):
// close enough for a shaper whose bucket is a fraction of a millisecond of traffic.
double Network::link_time(Queue& q, std::vector<Bucket>& buckets, long nic, double ready, double bytes) {
  if (buckets.empty()) return bytes / m_.link_MBps;
  Bucket& b = buckets[nic];
  double start = std::max(ready, q.free);
  double tokens = std::min(m_.link_burst_bytes, b.tokens + std::max(0.0, start - b.at) * m_.link_MBps);
  double pass = std::min(bytes, tokens), busy = (bytes - pass) / m_.link_MBps;
  // While the rest is paced, the tokens that come in are its own.
  b.tokens = tokens - pass;
  b.at = std::max(b.at, start + busy);
  return busy;
}

Network::Times Network::transfer(int a, int b, int rail, double t, uint64_t bytes, bool host_bus) {
  long nic_a = static_cast<long>(a) * rails_ + rail, nic_b = static_cast<long>(b) * rails_ + rail;
  double* engine = free_engine(nic_a);
  double ready = std::max(t, *engine) + m_.dma_startup_us;
  Head h{ready, ready};
  const double on_bus = host_bus ? bytes / m_.pci_MBps : 0, on_link = bytes / m_.link_MBps;
  long bus_a = m_.pci_per_node ? a : nic_a, bus_b = m_.pci_per_node ? b : nic_b;
  if (host_bus) stage(h, bus_read_[bus_a], on_bus, 0);
  double left = h.end;
  if (a == b) {  // NIC loopback: read and written back over the same bus
    *engine = left;
    if (host_bus) stage(h, (*bus_write_)[bus_a], on_bus, m_.wire_latency_us);
    else h.end += m_.wire_latency_us;
    return {left, h.end};
  }
  // Injection: at most one message per gap_us on this NIC.
  const double up = link_time(nic_up_[nic_a], up_bucket_, nic_a, h.start, static_cast<double>(bytes));
  stage(h, nic_up_[nic_a], up, 0, std::max(up, m_.gap_us));
  *engine = h.end;  // the engine is free once the bytes have left the NIC
  if (!tree_up_.empty()) {
    // Up to the lowest level whose subtree holds both nodes, then down the
    // unique path to b: at every level the same up port's cable, downwards.
    // replica[l] is the switch reached at level l within a's group of that level.
    const int* ga = &group_[a];
    const int* gb = &group_[b];
    int top = 1;
    while (ga[top * nodes_] != gb[top * nodes_]) ++top;
    long base = links_per_rail_ * rail;
    long replica[64];
    int port[64];
    replica[1] = 0;
    for (int l = 1; l < top; ++l) {
      long link0 = base + level_first_[l] + (ga[l * nodes_] * span_[l - 1] + replica[l]) * arity_;
      int j = m_.adaptive_up ? choose_up(link0, h.start + m_.hop_latency_us)
                             : digit_[static_cast<size_t>(l) * nodes_ + b];  // d-mod-k static tables
      stage(h, tree_up_[link0 + j], on_link, m_.hop_latency_us);
      port[l] = j;
      replica[l + 1] = replica[l] + j * span_[l - 1];
    }
    for (int l = top - 1; l >= 1; --l) {
      long lower = gb[l * nodes_] * span_[l - 1] + replica[l];
      stage(h, tree_down_[base + level_first_[l] + lower * arity_ + port[l]], on_link, m_.hop_latency_us);
    }
  }
  const double down = link_time(nic_down_[nic_b], down_bucket_, nic_b, h.start + m_.wire_latency_us,
                                static_cast<double>(bytes));
  stage(h, nic_down_[nic_b], down, m_.wire_latency_us);
  if (host_bus) stage(h, (*bus_write_)[bus_b], on_bus, 0);
  return {left, h.end};
}

Network::MulticastTimes Network::multicast(int a, int lo, int hi, int rail, double t, uint64_t bytes,
                                           const std::vector<int>& writes, bool host_bus) {
  return replicate(a, lo, hi, rail, t, bytes, writes, true, false, host_bus);
}

Network::MulticastTimes Network::test_and_set(int a, int lo, int hi, int rail, double t) {
  return replicate(a, lo, hi, rail, t, 0, std::vector<int>(hi - lo + 1, 0), false, true, true);
}

Network::MulticastTimes Network::replicate(int a, int lo, int hi, int rail, double t, uint64_t bytes,
                                           const std::vector<int>& writes, bool dma, bool check_host,
                                           bool host_bus) {
  const double packet = m_.hw_packet_bytes;  // another transfer's packet, which a packet may find in flight
  const double on_bus = host_bus ? bytes / m_.pci_MBps : 0, on_link = bytes / m_.link_MBps;
  const double bus_wait = packet / m_.pci_MBps, link_wait = packet / m_.link_MBps;
  // A packet that finds a resource busy arrives at a uniformly random point of
  // the packet in flight (the loaded runs' variation; a quiet run never draws).
  // Without a packet size (hw_packet_bytes = 0) it queues behind whole messages.
  auto stage_hw = [&](Head& h, Queue& q, double busy, double latency, double occupy, double wait) {
    if (packet <= 0) return stage(h, q, busy, latency, occupy);
    if (q.free <= h.start + latency) return stage(h, q, busy, latency, occupy);
    stage_between_packets(h, q, busy, latency, occupy, wait * next_uniform(random_));
  };
  const long nic_a = static_cast<long>(a) * rails_ + rail;
  auto bus_of = [&](int n) { return m_.pci_per_node ? n : static_cast<long>(n) * rails_ + rail; };
  Head h{t, t};
  double left = t, *engine = nullptr, engine_start = t;
  if (dma) {  // the DMA thread slices this DMA in between the one it is working on
    engine = free_engine(nic_a);
    if (*engine > t) engine_start = packet > 0 ? std::min(*engine, t + link_wait * next_uniform(random_)) : *engine;
    h.start = h.end = engine_start + m_.dma_startup_us;
    if (host_bus) stage_hw(h, bus_read_[bus_of(a)], on_bus, 0, on_bus, bus_wait);
    left = h.end;
  }
  stage_hw(h, nic_up_[nic_a], on_link, 0, std::max(on_link, m_.gap_us), link_wait);
  if (engine) *engine = *engine > engine_start ? *engine + (h.end - engine_start) : h.end;
  // Up the fixed path (up port 0 at every level: the "top leftmost switch" is
  // the root, seed 004 §2.3.1) to the lowest level whose subtree holds the range.
  int top = 1;
  const long base = links_per_rail_ * rail;
  if (!tree_up_.empty()) {
    while (group_[static_cast<size_t>(top) * nodes_ + lo] != group_[static_cast<size_t>(top) * nodes_ + hi]) ++top;
    for (int l = 1; l < top; ++l) {
      long link = base + level_first_[l] + group_[static_cast<size_t>(l) * nodes_ + a] * span_[l - 1] * arity_;
      stage_hw(h, tree_up_[link], on_link, m_.hop_latency_us, on_link, link_wait);
    }
  }
  // The root switch passes one multicast at a time.
  double& root = multicast_root_[rail];
  if (root > h.start) {
    h.end += root - h.start;
    h.start = root;
  }
  // Down: every switch of the range's subtree forwards to all its ports in the
  // range at once. heads[g - first group of the level] is the head at the
  // level-l switch of group g (replica 0, the leftmost path).
  std::vector<Head> heads(1, h), below;
  for (int l = top - 1; l >= 1; --l) {
    const size_t at = static_cast<size_t>(l) * nodes_;
    const int g0 = group_[at + lo], g1 = group_[at + hi], parent0 = group_[at + nodes_ + lo];
    below.assign(g1 - g0 + 1, h);
    for (int g = g0; g <= g1; ++g) {
      Head& x = below[g - g0];
      x = heads[g / arity_ - parent0];
      stage_hw(x, tree_down_[base + level_first_[l] + g * span_[l - 1] * arity_], on_link,
                            m_.hop_latency_us, on_link, link_wait);
    }
    heads.swap(below);
  }
  // Into every node of the range: its NIC, then its bus; the last byte in the
  // last memory is when every node has it (replication in lockstep).
  double arrive = t;
  const int leaf0 = top > 1 ? group_[static_cast<size_t>(nodes_) + lo] : 0;
  for (int n = lo; n <= hi; ++n) {
    Head x = heads[top > 1 ? group_[static_cast<size_t>(nodes_) + n] - leaf0 : 0];
    stage_hw(x, nic_down_[static_cast<long>(n) * rails_ + rail], on_link, m_.wire_latency_us, on_link,
                          link_wait);
    // The check is one read of host memory: a DMA start-up's round trip over the bus.
    if (check_host) stage_hw(x, bus_read_[bus_of(n)], 0, m_.dma_startup_us, 0, bus_wait);
    Queue& bus = (*bus_write_)[bus_of(n)];
    double in = x.end;
    for (int w = 0; host_bus && w < writes[n - lo]; ++w) {
      Head y = x;
      stage_hw(y, bus, on_bus, 0, on_bus, bus_wait);
      in = std::max(in, y.end);
    }
    arrive = std::max(arrive, in);
  }
  // The acknowledgements climb back to the root switch and down to a: the
  // latency of a 0-byte message over that path, combined on the way.
  root = arrive + m_.wire_latency_us + 2 * (top - 1) * m_.hop_latency_us;
  return {left, arrive, root};
}

}  // namespace railcoll::sim

