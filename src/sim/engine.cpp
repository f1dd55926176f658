#include "sim/engine.hpp"

#include <algorithm>
#include <queue>

#include "core/errors.hpp"

namespace railcoll::sim {

namespace {

struct Event {
  double t;
  uint64_t seq;
  int kind;  // 0: rank step, 1: put arrived (receive work), 2: counter increment
  int a, b;  // step: rank; arrived: counter id, receiving node; increment: counter id
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Engine {
 public:
  Engine(const Schedule& s, const Machine& m) : s_(s), m_(m), t_(s.topo), N(t_.nranks()) {
    check_fits(t_, m);
    int k = t_.rails();
    send_port_.assign(static_cast<size_t>(t_.nnodes()) * k, 0);
    recv_port_.assign(static_cast<size_t>(t_.nnodes()) * k, 0);
    membus_.assign(t_.nnodes(), 0);
    // One pool of cores per node, or one for the machine; contention matters only
    // when a pool has fewer cores than the processes it serves.
    int cores = m.cores > 0 ? m.cores : m.ppn;
    int pools = m.cores_machine_wide ? 1 : t_.nnodes();
    cores_.assign(pools, std::vector<double>(cores, 0));
    contended_ = m.cores > 0 && (m.cores_machine_wide ? cores < N : cores < t_.max_node_size());
    pc_.assign(N, 0);
    local_done_.assign(N, 0);
    finish_.assign(N, -1);
    counters_.assign(static_cast<size_t>(N) * std::max(1, s.rank_counters) +
                         static_cast<size_t>(t_.nnodes()) * std::max(1, s.node_counters),
                     0);
    waiters_.assign(counters_.size(), {});
  }

  SimResult run() {
    for (int r = 0; r < N; ++r) push(0, 0, r, 0);
    while (!heap_.empty()) {
      Event e = heap_.top();
      heap_.pop();
      ++events_;
      if (e.kind == 0) step(e.a, e.t);
      else if (e.kind == 1)  // receive overhead and kernel work on the receiving node's cores
        push(cpu(arrivals_[e.b].node, e.t, m_.recv_overhead_us + arrivals_[e.b].kernel_us), 2, e.a, 0);
      else increment(e.a, e.t);
    }
    SimResult res;
    res.finish_us = finish_;
    res.events = events_;
    res.min_us = 1e300;
    for (int r = 0; r < N; ++r) {
      if (finish_[r] < 0) throw std::logic_error("simulation stalled: rank " + std::to_string(r) + " never finished");
      res.max_us = std::max(res.max_us, finish_[r]);
      res.min_us = std::min(res.min_us, finish_[r]);
      res.avg_us += finish_[r] / N;
    }
    return res;
  }

 private:
  void push(double t, int kind, int a, int b) { heap_.push({t, seq_++, kind, a, b}); }

  int counter_id(const CounterRef& c) const {
    return c.on_node ? N * std::max(1, s_.rank_counters) + c.owner * std::max(1, s_.node_counters) + c.index
                     : c.owner * std::max(1, s_.rank_counters) + c.index;
  }

  // `d` us of host work on `node` from t: it waits for the first free core of
  // its pool (the work is requested in time order). Without contention, t + d.
  double cpu(int node, double t, double d) {
    if (!contended_) return t + d;
    auto& pool = cores_[m_.cores_machine_wide ? 0 : node];
    auto core = std::min_element(pool.begin(), pool.end());
    *core = std::max(*core, t) + d;
    return *core;
  }

  // A node's copy of `bytes`, starting at t; returns when it ends.
  double copy_time(int node, double t, uint64_t bytes) {
    double alone = cpu(node, t, bytes / m_.copy_MBps);
    membus_[node] = std::max(membus_[node], t) + bytes / m_.membus_MBps;
    return std::max(alone, membus_[node]);
  }

  // One part of a put from node a to node b on `rail`; returns its arrival time
  // and sets *left (when it has left the sending port).
  double transfer(int a, int b, int rail, double t, uint64_t bytes, double* left) {
    int k = t_.rails();
    bool loop = a == b;
    double bw = loop ? m_.nic_loopback_MBps : m_.nic_MBps();
    double& sp = send_port_[static_cast<size_t>(a) * k + rail];
    double start = std::max(t, sp);
    double wire = bytes / bw;
    sp = start + std::max(m_.gap_us, wire);
    *left = start + wire;
    double& rp = recv_port_[static_cast<size_t>(b) * k + rail];
    double lat = m_.wire_latency_us + m_.hop_latency_us * std::max(0, m_.hops(a, b) - 1);
    double arrive = std::max(start + lat + wire, rp + wire);
    rp = arrive;
    return arrive;
  }

  void step(int r, double t) {
    const auto& prog = s_.programs[r];
    while (pc_[r] < static_cast<int>(prog.size())) {
      const Op& op = prog[pc_[r]];
      int node = t_.node_of(r);
      switch (op.kind) {
        case OpKind::Copy:
        case OpKind::Reduce: {
          ++pc_[r];
          // A reduce streams three buffers (two in, one out) where a copy streams two.
          double end = copy_time(node, t, op.kind == OpKind::Reduce ? op.bytes() * 3 / 2 : op.bytes());
          if (end > t) return push(end, 0, r, 0);
          break;
        }
        case OpKind::Put: {
          ++pc_[r];
          t = cpu(node, t, m_.send_overhead_us);
          int peer_node = t_.node_of(op.peer);
          bool to_shared_here = peer_node == node && !op.segs.empty() && op.segs[0].dst.region == Region::Shared;
          if (to_shared_here || (peer_node == node && m_.intranode_put == "shm")) {
            // A memcpy into shared memory (and, to a private buffer, out again).
            double end = copy_time(node, t, op.bytes());
            if (!to_shared_here) end = copy_time(node, end, op.bytes());
            arrive(end + m_.flag_latency_us, peer_node, counter_id(op.counter), 0);
            local_done_[r] = std::max(local_done_[r], end);
            return push(std::max(end, t), 0, r, 0);  // the sender does the copy
          }
          // Every part's arrival is known now: the put counts when the last one
          // is in (one event per put, not one per part).
          // A TCP stack copies every byte on both ends (kernel_ns_per_byte; 0 for RDMA).
          double kernel = op.bytes() * m_.kernel_ns_per_byte * 1e-3;
          double sent = kernel > 0 ? cpu(node, t, kernel) : t;
          double last = sent;
          for (auto& p : s_.rail_parts(op.rail, op.bytes())) {
            double left = 0;
            last = std::max(last, transfer(node, peer_node, p.first, sent, p.second, &left));
            local_done_[r] = std::max(local_done_[r], left);
          }
          arrive(last, peer_node, counter_id(op.counter), kernel);
          return push(t, 0, r, 0);
        }
        case OpKind::Signal: {
          ++pc_[r];
          const CounterRef& c = op.counter;
          int target_node = c.on_node ? c.owner : t_.node_of(c.owner);
          if (target_node == node) {
            push(t + m_.flag_latency_us, 2, counter_id(c), 0);
          } else {
            double left = 0;
            t = cpu(node, t, m_.send_overhead_us);
            arrive(transfer(node, target_node, 0, t, 0, &left), target_node, counter_id(c), 0);
            return push(t, 0, r, 0);
          }
          break;
        }
        case OpKind::Wait: {
          int id = counter_id(op.counter);
          if (counters_[id] < op.value) {
            waiters_[id].push_back(r);
            return;  // released by increment()
          }
          ++pc_[r];
          break;
        }
        case OpKind::Flush: {
          ++pc_[r];
          if (local_done_[r] > t) return push(local_done_[r], 0, r, 0);
          break;
        }
      }
    }
    if (finish_[r] < 0) finish_[r] = std::max(t, local_done_[r]);  // returns after its puts left
  }

  // A put or signal has arrived at `node` at t: its receive overhead is host
  // work there (an event of its own only when cores are contended, so that the
  // work is claimed in time order; otherwise one event per put).
  void arrive(double t, int node, int counter, double kernel_us) {
    if (contended_) {
      arrivals_.push_back({node, kernel_us});
      push(t, 1, counter, static_cast<int>(arrivals_.size()) - 1);
    } else {
      push(t + m_.recv_overhead_us + kernel_us, 2, counter, 0);
    }
  }

  void increment(int id, double t) {
    ++counters_[id];
    auto& w = waiters_[id];
    for (size_t i = 0; i < w.size();) {
      int r = w[i];
      const Op& op = s_.programs[r][pc_[r]];
      if (counters_[id] >= op.value) {
        w[i] = w.back();
        w.pop_back();
        // A process that slept in its wait needs a core to wake up on.
        push(contended_ ? cpu(t_.node_of(r), t, m_.wakeup_us) : t, 0, r, 0);
      } else {
        ++i;
      }
    }
  }

  const Schedule& s_;
  const Machine& m_;
  const Topology& t_;
  const int N;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap_;
  uint64_t seq_ = 0, events_ = 0;
  std::vector<double> send_port_, recv_port_, membus_, local_done_, finish_;
  std::vector<int> pc_;
  std::vector<std::vector<double>> cores_;
  struct Arrival {
    int node;          // where the receive work runs
    double kernel_us;  // its kernel share of the bytes
  };
  std::vector<Arrival> arrivals_;  // per arrival event
  bool contended_ = false;
  std::vector<uint64_t> counters_;
  std::vector<std::vector<int>> waiters_;
};

}  // namespace

void check_fits(const Topology& t, const Machine& m) {
  if (t.nnodes() > m.nodes)
    throw InputError(std::to_string(t.nnodes()) + " nodes do not fit preset '" + m.name + "' (" +
                     std::to_string(m.nodes) + " nodes)");
  if (t.max_node_size() > m.ppn)
    throw InputError(std::to_string(t.max_node_size()) + " ranks on a node do not fit preset '" + m.name + "' (" +
                     std::to_string(m.ppn) + " per node)");
  if (t.rails() > m.rails)
    throw InputError(std::to_string(t.rails()) + " rails do not fit preset '" + m.name + "' (" +
                     std::to_string(m.rails) + ")");
}

SimResult simulate(const Schedule& s, const Machine& m) { return Engine(s, m).run(); }

}  // namespace railcoll::sim
