#include "sim/network.hpp"

#include <algorithm>

namespace railcoll::sim {

Network::Network(const Machine& m, int nodes, int rails) : m_(m), nodes_(nodes), rails_(rails) {
  long nics = static_cast<long>(nodes) * rails;
  engines_.assign(nics * m.dma_engines, 0);
  bus_read_.assign(m.pci_per_node ? nodes : nics, {});
  if (!m.pci_half_duplex) bus_write_own_.assign(bus_read_.size(), {});
  bus_write_ = m.pci_half_duplex ? &bus_read_ : &bus_write_own_;
  nic_up_.assign(nics, {});
  nic_down_.assign(nics, {});
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

Network::Times Network::transfer(int a, int b, int rail, double t, uint64_t bytes) {
  long nic_a = static_cast<long>(a) * rails_ + rail, nic_b = static_cast<long>(b) * rails_ + rail;
  double* engine = &engines_[nic_a * m_.dma_engines];
  double* first = engine;
  for (int e = 1; e < m_.dma_engines; ++e)
    if (first[e] < *engine) engine = first + e;
  double ready = std::max(t, *engine) + m_.dma_startup_us;
  Head h{ready, ready};
  const double on_bus = bytes / m_.pci_MBps, on_link = bytes / m_.link_MBps;
  long bus_a = m_.pci_per_node ? a : nic_a, bus_b = m_.pci_per_node ? b : nic_b;
  stage(h, bus_read_[bus_a], on_bus, 0);
  double left = h.end;
  if (a == b) {  // NIC loopback: read and written back over the same bus
    *engine = left;
    stage(h, (*bus_write_)[bus_a], on_bus, m_.wire_latency_us);
    return {left, h.end};
  }
  // Injection: at most one message per gap_us on this NIC.
  stage(h, nic_up_[nic_a], on_link, 0, std::max(on_link, m_.gap_us));
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
  stage(h, nic_down_[nic_b], on_link, m_.wire_latency_us);
  stage(h, (*bus_write_)[bus_b], on_bus, 0);
  return {left, h.end};
}

}  // namespace railcoll::sim

