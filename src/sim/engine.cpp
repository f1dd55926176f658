#include "sim/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <tuple>

#include "core/background.hpp"
#include "core/errors.hpp"
#include "sim/network.hpp"

namespace railcoll::sim {


namespace {

enum Kind : int {
  kStep,        // a: rank
  kReceive,     // a: counter, b: arrival record (receive work on the receiving node's cores)
  kIncrement,   // a: counter
  kBackground,  // a: generator (one of its messages has arrived)
  kCore,        // a: core (contended cores: it runs the next process in its queue)
  kWake,        // a: rank (contended cores: a sleeper whose sends have left)
};

// 16 bytes, not 24: the queue moves every event a few times (below).
struct Event {
  double t;
  uint32_t kind : 3, a : 29;
  int32_t b;
};
constexpr size_t kMaxEventA = size_t{1} << 29;  // counters, ranks, generators, cores
static_assert(kWake < 8, "an event's kind has 3 bits");

// The event queue: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990) on the
// bits of the time, which sort like the time for times >= 0. Simulated time
// never goes back (every event is pushed at or after the one being handled), so
// a push is an append and each event moves down a few of the 65 buckets before
// it is popped: far cheaper than a binary heap, the simulator's former hot spot.
// Events of the same time come out in the order they were pushed (every bucket
// keeps insertion order), so runs are deterministic.
class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  // The earliest event; the queue must not be empty.
  const Event& top() {
    if (head_ == buckets_[0].size()) refill();
    return buckets_[0][head_];
  }
  void pop() {
    top();
    --size_;
    if (++head_ == buckets_[0].size()) {
      buckets_[0].clear();
      head_ = 0;
    }
  }
  void push(const Event& e) {
    uint64_t k = key(e.t);
    if (k < last_) throw std::logic_error("simulator: an event was scheduled in the past");
    buckets_[bucket(k, last_)].push_back(e);
    ++size_;
  }

 private:
  static uint64_t key(double t) {
    t += 0.0;  // -0 -> +0
    uint64_t k;
    std::memcpy(&k, &t, sizeof k);
    return k;
  }
  static int bucket(uint64_t k, uint64_t last) { return k == last ? 0 : 64 - __builtin_clzll(k ^ last); }
  // Bucket 0 (events at last_) is used up: the smallest non-empty bucket's
  // earliest time becomes last_, and its events spread over lower buckets.
  void refill() {
    buckets_[0].clear();
    head_ = 0;
    int i = 1;
    while (buckets_[i].empty()) ++i;
    auto& from = buckets_[i];
    uint64_t m = key(from[0].t);
    for (auto& e : from) m = std::min(m, key(e.t));
    last_ = m;
    for (auto& e : from) buckets_[bucket(key(e.t), m)].push_back(e);
    from.clear();
  }

  std::vector<Event> buckets_[65];
  size_t head_ = 0, size_ = 0;
  uint64_t last_ = 0;
};

// Consecutive puts of a rank flagged Multicast, with the same source span and
// rail, are one injection (schedule.hpp, HwAssist): the end of the run that
// starts at prog[first].
size_t multicast_run_end(const Program& prog, size_t first) {
  const Op a = prog[first];
  auto same_source = [&](const Op& b) {
    if (a.segs.empty() || b.segs.empty()) return a.segs.empty() && b.segs.empty();
    const Span &x = a.segs[0].src, &y = b.segs[0].src;
    return x.region == y.region && x.owner == y.owner && x.offset == y.offset && x.length == y.length;
  };
  size_t end = first + 1;
  for (; end < prog.size() && prog.kind(end) == OpKind::Put && prog.hw(end) == HwAssist::Multicast; ++end) {
    const Op b = prog[end];
    if (b.rail != a.rail || !same_source(b)) break;
  }
  return end;
}

// The nodes a hardware operation spans: its source's and its destinations'.
// The switches deliver to a contiguous range of nodes only (seed 004 §2.3.1:
// "as long as the multicast set is physically contiguous"; §4.2).
struct NodeRange {
  int source = 0, lo = 0, hi = -1;
  std::vector<int> ranks;  // ranks[n - lo]: destination ranks on node n
  bool contiguous() const {
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == 0 && static_cast<int>(i) != source - lo) return false;
    return true;
  }
};
NodeRange node_range(const Topology& t, int source_node, const std::vector<int>& dest_ranks) {
  NodeRange x;
  x.source = x.lo = x.hi = source_node;
  for (int r : dest_ranks) x.lo = std::min(x.lo, t.node_of(r)), x.hi = std::max(x.hi, t.node_of(r));
  x.ranks.assign(x.hi - x.lo + 1, 0);
  for (int r : dest_ranks) ++x.ranks[t.node_of(r) - x.lo];
  return x;
}

std::string node_list(const NodeRange& x) {
  std::string s;
  for (size_t i = 0; i < x.ranks.size(); ++i)
    if (x.ranks[i] || static_cast<int>(i) == x.source - x.lo) s += (s.empty() ? "" : ",") + std::to_string(x.lo + i);
  return s;
}

// The hardware barrier's waves: the puts flagged Combine to one counter, the
// ranks that issue them (each marks itself ready) and the counter, whose rank
// receives the one combined acknowledgement.
struct CombineGroup {
  CounterRef counter;
  int root = 0;  // the counter's rank (the put's peer)
  std::vector<int> ranks;
};

// What check_runs checks, in one pass over the schedule (33.5 M operations in
// a 4096-rank Direct all-gather) that decodes only the puts using network
// hardware; returns the hardware barrier's waves, which the engine needs too.
std::vector<CombineGroup> check_schedule(const Schedule& s, const Machine& m) {
  check_fits(s.topo, m);
  const std::string who = std::string(collective_name(s.collective)) + "/" + s.algorithm;
  std::map<std::tuple<bool, int, int>, CombineGroup> by_counter;
  std::string multicast_error;  // the first; reported after the barrier's (as before the one pass)
  for (int r = 0; r < static_cast<int>(s.programs.size()); ++r) {
    const Program& prog = s.programs[r];
    for (size_t i = 0; i < prog.size(); ++i) {
      switch (prog.kind(i)) {
        case OpKind::Put:
        case OpKind::Copy:
        case OpKind::Reduce:
        case OpKind::ReduceBefore:
        case OpKind::Signal:
        case OpKind::Wait:
        case OpKind::Flush:
          break;
        default:  // e.g. an operation of a newer schedule format
          throw InputError(who + " uses a '" + op_name(prog.kind(i)) +
                           "' operation, which the simulator does not model; preset '" + m.name + "' cannot run it");
      }
      if (prog.kind(i) != OpKind::Put || prog.hw(i) == HwAssist::None) continue;
      if (prog.hw(i) == HwAssist::Combine) {
        const Op op = prog[i];
        CombineGroup& g = by_counter[{op.counter.on_node, op.counter.owner, op.counter.index}];
        g.counter = op.counter;
        g.root = op.peer;
        g.ranks.push_back(r);
        continue;
      }
      if (prog.hw(i) != HwAssist::Multicast || !multicast_error.empty()) continue;
      if (!m.hw_multicast) {
        multicast_error = who + " needs the hardware multicast, which preset '" + m.name +
                          "' does not have (hw_multicast = no)";
        continue;
      }
      size_t end = multicast_run_end(prog, i);
      std::vector<int> dests;
      for (size_t j = i; j < end; ++j) dests.push_back(prog[j].peer);
      NodeRange x = node_range(s.topo, s.topo.node_of(r), dests);
      if (!x.contiguous())
        multicast_error = who + ": rank " + std::to_string(r) + " multicasts to nodes " + node_list(x) +
                          ", not a contiguous range; the hardware multicast needs one (seed 004 §2.3.1)";
      i = end - 1;
    }
  }
  // The hardware collectives: only on machines that have them, and only over a
  // contiguous range of nodes (seed 004 §2.3.1). elan_hbcast falls back to
  // software for other sets (§4.2); here the schedule is refused instead, so
  // that a hardware time is never reported for what the hardware cannot do.
  std::vector<CombineGroup> groups;
  for (auto& kv : by_counter) groups.push_back(std::move(kv.second));
  if (!groups.empty() && !m.hw_barrier)  // first: the barrier's 'go' is a multicast too
    throw InputError(who + " needs the hardware barrier, which preset '" + m.name + "' does not have (hw_barrier = no)");
  for (const CombineGroup& g : groups) {
    NodeRange x = node_range(s.topo, s.topo.node_of(g.root), g.ranks);
    if (!x.contiguous())
      throw InputError(who + ": the hardware barrier spans nodes " + node_list(x) +
                       ", not a contiguous range; the test-and-set multicast needs one (seed 004 §2.3.1)");
  }
  if (!multicast_error.empty()) throw InputError(multicast_error);
  return groups;
}

class Simulation {
 public:
  Simulation(const Schedule& s, const Machine& m, const SimOptions& o, const std::vector<CombineGroup>& combines)
      : s_(s), m_(m), o_(o), t_(s.topo), N(t_.nranks()), net_(m, t_.nnodes(), t_.rails(), o.seed), random_(o.seed) {
    check_options(o);
    membus_.assign(m.membus_machine_wide ? 1 : t_.nnodes(), 0);
    // One pool of cores per node, or one for the machine; contention matters only
    // when a pool has fewer cores than the processes it serves.
    cores_ = m.cores > 0 ? m.cores : m.ppn;
    int pools = m.cores_machine_wide ? 1 : t_.nnodes();
    contended_ = m.cores > 0 && (m.cores_machine_wide ? cores_ < N : cores_ < t_.max_node_size());
    cpu_serial_ = contended_ || m.recv_on_cpu;
    in_flight_.assign(pools, 0);
    busy_.assign(N, 0);
    start_.assign(N, contended_ ? -1 : o.start_us);
    if (contended_) place_processes(pools);
    place_.resize(N);
    for (int r = 0; r < N; ++r) place_[r] = {s.programs[r].at(0), s.programs[r].at(s.programs[r].size()), 0};
    local_done_.assign(N, 0);
    finish_.assign(N, -1);
    counters_.assign(static_cast<size_t>(N) * std::max(1, s.rank_counters) +
                         static_cast<size_t>(t_.nnodes()) * std::max(1, s.node_counters),
                     0);
    waiters_.assign(counters_.size(), {});
    add_combine_waves(combines);
    add_generators();
    add_thread_ops();
    add_noise();
    if (counters_.size() >= kMaxEventA || generators_.size() >= kMaxEventA)  // events name them in 29 bits
      throw InputError("the simulator takes fewer than 2^29 counters and ranks");
  }

  SimResult run() {
    if (contended_) {  // every core starts on the first process of its queue
      for (size_t c = 0; c < cores_of_.size(); ++c) {
        cores_of_[c].busy = true;
        push(o_.start_us, kCore, static_cast<int>(c), 0);
      }
    } else {  // every rank starts at once, with its call's own work
      for (int r = 0; r < N; ++r) push(noisy(t_.node_of(r), o_.start_us, m_.call_overhead_us), kStep, r, 0);
    }
    for (size_t g = 0; g < generators_.size(); ++g)
      for (int e = 0; e < m_.dma_engines; ++e) background_send(static_cast<int>(g), 0);
    while (!heap_.empty() && finished_ < N) {
      Event e = heap_.top();
      heap_.pop();
      ++events_;
      const double t = now_ = e.t;
      switch (e.kind) {
        case kStep:
          if (contended_) proc_continues(e.a, t);
          else step(e.a, t);
          break;
        case kReceive:
          if (contended_) deliver(e.b, t);
          else receive(e.b, t);
          break;
        case kIncrement: increment(e.a, e.b, t); break;
        case kBackground: background_send(e.a, t); break;
        case kCore: core_runs_next(e.a, t); break;
        case kWake: flush_wakes(e.a, t); break;
      }
    }
    SimResult res;
    // Each rank's time from its own start, as a benchmark times it.
    for (int r = 0; r < N; ++r)
      if (finish_[r] >= 0) finish_[r] -= start_[r];
    res.finish_us = finish_;
    res.events = events_;
    res.background_messages = background_messages_;
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
  void push(double t, int kind, int a, int b) {
    heap_.push({t, static_cast<uint32_t>(kind), static_cast<uint32_t>(a), b});
  }
  int pool(int node) const { return m_.cores_machine_wide ? 0 : node; }

  int counter_id(const CounterRef& c) const {
    return c.on_node ? N * std::max(1, s_.rank_counters) + c.owner * std::max(1, s_.node_counters) + c.index
                     : c.owner * std::max(1, s_.rank_counters) + c.index;
  }

  // `d` us of host work of rank r from t; returns when it ends. On contended
  // cores the rank holds its core while it works (it was given the core, below:
  // "Cores"). Otherwise a process has its core to itself: its work and (with
  // recv_cpu = loggp) its receive work queue behind each other, as LogGP's o;
  // with recv_cpu = event, t + d.
  double cpu(int r, double t, double d) {
    if (!cpu_serial_ || contended_) return noisy(t_.node_of(r), t, d);
    busy_[r] = noisy(t_.node_of(r), std::max(t, busy_[r]), d);
    return busy_[r];
  }

  // ---- operating-system noise (Machine::noise)
  void add_noise() {
    if (m_.noise.empty()) return;
    uint64_t state = o_.seed ^ 0x6e6f697365ULL;  // "noise": its own stream, from the run's seed
    for (size_t i = 0; i < m_.noise.size(); ++i) {
      std::vector<double> phase(t_.nnodes(), -1);  // -1: the source does not run on that node
      for (int n = 0; n < t_.nnodes(); ++n)
        if (n % m_.noise[i].every == 0) phase[n] = next_uniform(state) * m_.noise[i].period_us;
      noise_phase_.push_back(std::move(phase));
    }
  }
  // When `d` us of host work on `node` that could start at t ends, around the
  // node's noise (work paused by a detour goes on after it).
  double noisy(int node, double t, double d) const {
    if (noise_phase_.empty()) return t + d;
    // The start of the period of a source (phase ph, period P) that holds `at`:
    // start <= at < start + P, also where rounding puts `at` on a boundary.
    auto period_start = [](double at, double ph, double P) {
      double start = ph + std::floor((at - ph) / P) * P;
      if (start > at) start -= P;
      else if (start + P <= at) start += P;
      return start;
    };
    double at = t, left = d;
    for (;;) {
      for (bool moved = true; moved;) {  // out of any detour `at` is in
        moved = false;
        for (size_t i = 0; i < noise_phase_.size(); ++i) {
          const double ph = noise_phase_[i][node], D = m_.noise[i].duration_us;
          if (ph < 0 || D <= 0) continue;
          const double start = period_start(at, ph, m_.noise[i].period_us);
          if (at < start + D) at = start + D, moved = true;
        }
      }
      double next = at + left;  // the next detour's start, if the work reaches it (always after `at`)
      for (size_t i = 0; i < noise_phase_.size(); ++i) {
        const double ph = noise_phase_[i][node], P = m_.noise[i].period_us;
        if (ph < 0 || m_.noise[i].duration_us <= 0) continue;
        next = std::min(next, period_start(at, ph, P) + P);
      }
      if (next >= at + left) return at + left;
      left -= next - at;
      at = next;
    }
  }

  // Rank r's copy of `bytes` on `node`, starting at t; returns when it ends.
  double copy_time(int r, int node, double t, uint64_t bytes) {
    double alone = cpu(r, t, bytes / m_.copy_MBps);
    double& bus = membus_[m_.membus_machine_wide ? 0 : node];
    bus = std::max(bus, t) + bytes / m_.membus_MBps;
    return std::max(alone, bus);
  }

  void step(int r, double t) {
    if (cpu_serial_ && !contended_ && busy_[r] > t) return push(busy_[r], kStep, r, 0);  // still receiving
    const Program& prog = s_.programs[r];
    const int node = t_.node_of(r);
    Place& at = place_[r];
    Op& op = op_;
    while (at.pos != at.end) {
      if (thread_op_at(r, at.pc)) return push(t + m_.nic_thread_us, kStep, r, 0);
      const uint8_t* next = Program::decode(at.pos, &op);
      switch (op.kind) {
        case OpKind::Copy:
        case OpKind::Reduce:
        case OpKind::ReduceBefore: {
          at.move_to(next);
          // A reduce streams three buffers (two in, one out) where a copy streams two.
          double end = copy_time(r, node, t, op.kind == OpKind::Copy ? op.bytes() : op.bytes() * 3 / 2);
          if (end > t) return push(end, kStep, r, 0);
          break;
        }
        case OpKind::Put: {
          if (op.hw == HwAssist::Combine) {  // the process only marks itself ready
            at.move_to(next);
            combine_ready(r, op, t);
            break;
          }
          double resume;
          if (op.hw == HwAssist::Multicast) {
            size_t end = multicast_run_end(prog, at.pc);
            resume = multicast(r, node, prog, at.pc, end, t);
            at.pc = static_cast<int>(end);
            at.pos = prog.at(end);
          } else {
            at.move_to(next);
            resume = put(r, node, op, t);
          }
          // A flush right after the put only moves the same resumption later:
          // one event instead of two (Direct's every put is followed by one).
          // On contended cores a flush that must wait gives up the core: not here.
          if (!contended_ && at.pos != at.end && Program::kind(at.pos) == OpKind::Flush) {
            at.move_to(Program::decode(at.pos, &op));
            resume = std::max(resume, local_done_[r]);
          }
          return push(resume, kStep, r, 0);
        }
        case OpKind::Signal: {
          at.move_to(next);
          const CounterRef& c = op.counter;
          int target_node = c.on_node ? c.owner : t_.node_of(c.owner);
          if (target_node == node) {
            push(t + m_.flag_latency_us, kIncrement, counter_id(c), 1);
            break;
          }
          t = cpu(r, t, send_overhead(node, target_node));
          arrive(net_.transfer(node, target_node, 0, t, 0, !o_.nic_memory).arrive,
                 c.on_node ? t_.leader(c.owner) : c.owner, counter_id(c), 0, 1, pool(node));
          return push(t, kStep, r, 0);
        }
        case OpKind::Wait: {
          int id = counter_id(op.counter);
          if (counters_[id] < op.value) {
            waiters_[id].push_back({r, op.value});
            if (contended_) return begin_wait(r, t, id, op.value, 0);  // its turns check the counter
            return;  // released by increment()
          }
          at.move_to(next);
          break;
        }
        case OpKind::Flush: {
          at.move_to(next);
          if (local_done_[r] <= t) break;
          if (contended_) return begin_wait(r, t, -1, 0, local_done_[r]);
          return push(local_done_[r], kStep, r, 0);
        }
        default:
          throw std::logic_error("check_runs let an unknown operation through");
      }
    }
    if (finish_[r] >= 0) return;
    if (contended_) {  // it returns after its puts left, and gives up its core
      if (local_done_[r] > t) return begin_wait(r, t, -1, 0, local_done_[r]);
      finish_[r] = t;
      ++finished_;
      return release_core(r, t);
    }
    finish_[r] = std::max(t, local_done_[r]);  // returns after its puts left
    ++finished_;
  }

  // Issues put `op` of rank r at t; returns when the rank may go on.
  double put(int r, int node, const Op& op, double t) {
    const int peer_node = t_.node_of(op.peer), from = pool(node);
    const uint64_t bytes = op.bytes();
    bool to_shared_here = peer_node == node && !op.segs.empty() && op.segs[0].dst.region == Region::Shared;
    if (to_shared_here || (peer_node == node && m_.intranode_put == "shm")) {
      // A memcpy into shared memory (and, to a private buffer, out again). It
      // does not pass the kernel's network path: not a message in flight
      // (overhead_shared), its overheads are a lone message's.
      t = cpu(r, t, m_.send_overhead_us);
      double end = copy_time(r, node, t, bytes);
      if (!to_shared_here) end = copy_time(r, node, end, bytes);
      arrive(end + m_.flag_latency_us, op.peer, counter_id(op.counter), 0);
      local_done_[r] = std::max(local_done_[r], end);
      return std::max(end, t);  // the sender does the copy
    }
    if (peer_node == node && m_.intranode_put == "socket") {
      t = cpu(r, t, send_overhead(node, peer_node));
      // A local socket: the kernel copies the bytes in on the sender's side and
      // out on the receiver's (after its receive overhead), no link between.
      double per_end = bytes * m_.socket_ns_per_byte * 1e-3;
      double sent = cpu(r, t, per_end);
      arrive(sent, op.peer, counter_id(op.counter), per_end, 1, from,
             local_socket(node, peer_node) ? m_.socket_overhead_us / 2 : -1);
      local_done_[r] = std::max(local_done_[r], sent);
      return sent;
    }
    // On a message-passing stack (recv_cpu = loggp) a striped put is one
    // message per rail (the runtime's one frame per part, each sent and
    // received on its own): a send overhead each, and the receiver's overhead
    // for each. An RDMA NIC's put (recv_cpu = event) pays them once, as the
    // papers' presets give them.
    const int k = t_.rails();
    const int parts = m_.recv_on_cpu && op.rail == kStripe && k > 1 ? k : 1;
    for (int i = 0; i < parts; ++i) t = cpu(r, t, send_overhead(node, peer_node));
    // Every part's arrival is known now: the put counts when the last one is in
    // (one event per put, not one per part). A TCP stack copies every byte on
    // both ends (kernel_ns_per_byte; 0 for RDMA).
    double kernel = bytes * m_.kernel_ns_per_byte * 1e-3;
    double sent = kernel > 0 ? cpu(r, t, kernel) : t;
    double last = sent;
    auto part = [&](int rail, uint64_t b) {
      Network::Times x = net_.transfer(node, peer_node, rail, sent, b, !o_.nic_memory);
      last = std::max(last, x.arrive);
      local_done_[r] = std::max(local_done_[r], x.left);
    };
    if (op.rail != kStripe || k == 1) {
      part(op.rail == kStripe ? 0 : op.rail, bytes);
    } else {  // even striping, the first bytes % k parts one byte longer (Schedule::rail_parts)
      for (int i = 0; i < k; ++i) part(i, bytes / k + (static_cast<uint64_t>(i) < bytes % k));
    }
    arrive(last, op.peer, counter_id(op.counter), kernel, 1, from, -1, parts);
    return contended_ ? sent : t;  // on its own core the sender goes on once its kernel copy is done
  }

  // Puts [first, end) of rank r's program are one hardware multicast: one send
  // overhead, one injection replicated by the switches (Network::multicast);
  // every destination counts it when the last node has it, plus its own
  // receive overhead. The hardware writes the whole contiguous range, the
  // source's node too (its NIC writes the copy: on a half-duplex bus the source
  // reads and writes every byte), and one DMA write per destination process
  // (it writes one process's memory per multicast, seed 004 §4.2).
  double multicast(int r, int node, const Program& prog, size_t first, size_t end, double t) {
    t = cpu(r, t, m_.send_overhead_us);
    std::vector<int> dests;
    for (size_t i = first; i < end; ++i) dests.push_back(prog[i].peer);
    NodeRange x = node_range(t_, node, dests);
    std::vector<int> writes = x.ranks;
    writes[node - x.lo] = std::max(1, writes[node - x.lo]);
    double last = t;
    for (auto& part : s_.rail_parts(prog[first].rail, prog[first].bytes())) {
      Network::MulticastTimes m = net_.multicast(node, x.lo, x.hi, part.first, t, part.second, writes, !o_.nic_memory);
      last = std::max(last, m.arrive);
      local_done_[r] = std::max(local_done_[r], m.left);
    }
    for (size_t i = first; i < end; ++i) {
      const Op op = prog[i];
      arrive(last, op.peer, counter_id(op.counter), 0);
    }
    return t;
  }

  // ---- the hardware barrier's combined acknowledgements (seed 004 §4.1, Fig. 7;
  // seed 003 §4.3). The Combine puts to one counter form a wave: each process
  // marks itself ready (a word in its memory, no message); once the last one
  // has, the test-and-set multicast from the counter's node finds every node
  // ready: a packet the NIC sends (no DMA), a check of a word of host memory on
  // every node, and one combined acknowledgement back, which the counter's rank
  // receives once (no per-message work there).
  struct CombineWave {
    int expected = 0, issued = 0;
    double latest = 0;  // the latest time a rank of this wave marked itself ready
    int root_node = 0, lo = 0, hi = 0;
  };

  void add_combine_waves(const std::vector<CombineGroup>& combines) {
    for (const CombineGroup& g : combines) {
      CombineWave w;
      w.expected = static_cast<int>(g.ranks.size());
      w.root_node = t_.node_of(g.root);
      NodeRange x = node_range(t_, w.root_node, g.ranks);
      w.lo = x.lo;
      w.hi = x.hi;
      wave_of_[counter_id(g.counter)] = static_cast<int>(waves_.size());
      waves_.push_back(w);
    }
  }

  void combine_ready(int r, const Op& op, double t) {
    t = noisy(t_.node_of(r), t, 0);  // it marks itself ready when its host runs
    const int id = counter_id(op.counter);
    CombineWave& w = waves_[wave_of_.at(id)];
    w.latest = std::max(w.latest, t);
    if (++w.issued < w.expected) return;
    const double all_ready = w.latest;
    w.issued = 0;
    w.latest = 0;
    arrive(net_.test_and_set(w.root_node, w.lo, w.hi, 0, all_ready).acked, op.peer, id, 0, w.expected);
  }


  // The factor of a message's overhead with n messages in flight in its pool
  // (Machine::overhead_shared).
  double shared_overhead(int n) const {
    return 1 - m_.overhead_shared + m_.overhead_shared / std::max(1, n);
  }
  // A message from `node` to `to_node`: its send overhead (through a local
  // socket: half of socket_overhead_us when given). From now on it is in
  // flight, in the pools of both ends, until its receiver takes it (CPU work
  // only).
  double send_overhead(int node, int to_node) {
    const double o_s = local_socket(node, to_node) ? m_.socket_overhead_us / 2 : m_.send_overhead_us;
    if (!cpu_serial_) return o_s;
    const int from = pool(node), to = pool(to_node);
    ++in_flight_[from];
    if (to != from) ++in_flight_[to];
    return o_s * shared_overhead(in_flight_[from]);
  }
  // A message between two ranks of a node through a socket whose cost is
  // measured apart from the network's (Machine::socket_overhead_us).
  bool local_socket(int node, int to_node) const {
    return node == to_node && m_.intranode_put == "socket" && m_.socket_overhead_us >= 0;
  }

  // A put or signal for rank `to` has arrived at t, adding `amount` to the
  // counter: its receive overhead o_r is that rank's work (an event of its own
  // when it is CPU work, so that the work is claimed in time order; otherwise
  // one event per put).
  // `from_pool`: the pool it was counted in flight from when issued
  // (send_overhead), or -1: shared-memory puts and the hardware collectives'
  // arrivals are not messages in flight; they pay a lone message's o_r (on
  // contended cores none: the writer counts a put into shared memory itself).
  void arrive(double t, int to, int counter, double kernel_us, int amount = 1, int from_pool = -1, double o_r = -1,
              int parts = 1) {
    if (o_r < 0) o_r = m_.recv_overhead_us;
    if (!cpu_serial_) return push(noisy(t_.node_of(to), t, parts * o_r + kernel_us), kIncrement, counter, amount);
    if (contended_ && from_pool < 0) return push(t, kIncrement, counter, amount);
    int id;
    if (free_arrivals_.empty()) {
      id = static_cast<int>(arrivals_.size());
      arrivals_.push_back({});
    } else {
      id = free_arrivals_.back();
      free_arrivals_.pop_back();
    }
    arrivals_[id] = {to, counter, o_r, kernel_us, amount, from_pool, parts};
    push(t, kReceive, counter, id);
  }

  // The receive work of arrival `id` on its rank's CPU from `at`: its share of
  // o_r among the messages in flight, and the kernel's share of its bytes.
  // Its counter rises when the work ends; returns then. Frees the record.
  double receive(int id, double at) {
    const Arrival x = arrivals_[id];
    free_arrivals_.push_back(id);
    const int p = pool(t_.node_of(x.rank));
    const double o_r = x.o_r * (x.from_pool >= 0 ? shared_overhead(in_flight_[p]) : 1.0);
    if (x.from_pool >= 0) {  // taken off the network: its receive work starts
      in_flight_[x.from_pool] -= x.parts;
      if (x.from_pool != p) in_flight_[p] -= x.parts;
    }
    const double end = cpu(x.rank, at, x.parts * o_r + x.kernel_us);
    push(end, kIncrement, x.counter, x.amount);
    return end;
  }

  void increment(int id, int amount, double t) {
    counters_[id] += amount;
    auto& w = waiters_[id];
    for (size_t i = 0; i < w.size();) {
      if (counters_[id] >= w[i].value) {
        int r = w[i].rank;
        w[i] = w.back();
        w.pop_back();
        // On contended cores a spinning waiter notices at its next turn; a
        // sleeping one is woken by the rank that ends its wait, once (the
        // runtime's futex on a node counter, or its frame's arrival).
        if (contended_) wake(r, t);
        else push(noisy(t_.node_of(r), t, 0), kStep, r, 0);  // the host notices once it runs
      } else {
        ++i;
      }
    }
  }

  // ---- contended cores (docs/simulator.md, "Cores")
  //
  // Every core runs the processes placed on it round robin, as the kernel's
  // run queue of one core does when they yield (the runtime's waits:
  // src/runtime/executor.cpp, wait_until). The core's next process:
  //  * a working process keeps the core until it must wait (its sends,
  //    copies and receive work run one after another, at full speed);
  //  * a waiting one spins: a turn of spin_turn_us (the yield, the switch, a
  //    poll), then the receive work of every message that has come for it;
  //    if its wait is over it works on, else it yields to the next; after
  //    spin_us of waiting it sleeps instead (leaves the queue) until its wait
  //    is over or a message comes for it, and its next run starts with
  //    wakeup_us instead of a turn;
  //  * at the start every process waits on the barrier before the call, over
  //    at 0: each starts its call (its clock starts) after its first turn.
  // A process stays on its core (no migration within a call).
  struct Proc {
    int core = 0;
    bool asleep = false, woken = false, waiting = false;
    int wait_counter = -1;  // the counter its wait is for, or -1: its sends leaving (until flush_until)
    uint64_t wait_value = 0;
    double flush_until = 0, wait_since = 0;
    std::vector<int> inbox;  // arrivals it has not taken yet
  };
  struct Core {
    std::deque<int> queue;  // its runnable processes, in turn order
    bool busy = false;      // a kCore event is due, or a process holds it
  };

  // Which core each process runs on, and the initial turn order. With
  // busiest_core_share the pool's busiest core holds that share of its
  // processes (at least an even share), the others spread evenly over the
  // other cores; which ones, and the order, from the run's seed. Otherwise
  // round robin in rank order.
  void place_processes(int pools) {
    procs_.assign(N, {});
    cores_of_.assign(static_cast<size_t>(pools) * cores_, {});
    uint64_t state = o_.seed ^ 0x636f726573ULL;  // "cores": its own stream, from the run's seed
    for (int p = 0; p < pools; ++p) {
      std::vector<int> ranks;
      for (int r = 0; r < N; ++r)
        if (pool(t_.node_of(r)) == p) ranks.push_back(r);
      const int n = static_cast<int>(ranks.size());
      int busiest = 0;
      if (m_.busiest_core_share > 0 && cores_ > 1) {
        for (int i = n - 1; i > 0; --i) std::swap(ranks[i], ranks[next_random(state) % (i + 1)]);
        busiest = static_cast<int>(std::lround(m_.busiest_core_share * n));
        busiest = std::clamp(busiest, (n + cores_ - 1) / cores_, n);
      }
      for (int i = 0; i < n; ++i) {
        int k = busiest == 0 ? i % cores_ : i < busiest ? 0 : 1 + (i - busiest) % (cores_ - 1);
        procs_[ranks[i]].core = p * cores_ + k;
        cores_of_[procs_[ranks[i]].core].queue.push_back(ranks[i]);
      }
    }
  }

  // Core c is free at t: it runs the next process of its queue.
  void core_runs_next(int c, double t) {
    Core& k = cores_of_[c];
    if (k.queue.empty()) {
      k.busy = false;
      return;
    }
    const int r = k.queue.front();
    k.queue.pop_front();
    Proc& p = procs_[r];
    double at = noisy(t_.node_of(r), t, p.woken ? m_.wakeup_us : m_.spin_turn_us);
    p.woken = false;
    if (start_[r] < 0) {  // out of the barrier before the call: its clock starts, its call's own work
      start_[r] = at;
      at = noisy(t_.node_of(r), at, m_.call_overhead_us);
    }
    take_inbox(r, at);
  }

  // Rank r holds its core at t: it works on, or checks its wait.
  void proc_continues(int r, double t) {
    Proc& p = procs_[r];
    if (finish_[r] >= 0) return release_core(r, t);  // woken after its call by a message it did not wait for
    if (!p.waiting) return step(r, t);
    const bool over = p.wait_counter >= 0 ? counters_[p.wait_counter] >= p.wait_value : t >= p.flush_until;
    if (over) {
      p.waiting = false;
      return step(r, t);
    }
    if (!p.inbox.empty()) return take_inbox(r, t);  // came during its turn: taken before it yields or sleeps
    // Spun long enough: asleep until its wait is over or a message comes. With
    // free turns (spin_turn_us = 0) a spinner is as good as asleep without the
    // wake-up: it notices at once, and turns of no time would never end.
    if (t - p.wait_since >= m_.spin_us || m_.spin_turn_us <= 0) {
      p.asleep = true;
      if (p.wait_counter < 0) push(p.flush_until, kWake, r, 0);
      return release_core(r, t);
    }
    cores_of_[p.core].queue.push_back(r);  // yields: to the back of the queue
    release_core(r, t);
  }

  // Rank r, holding its core, must wait from t for counter `counter` to reach
  // `value` (or, with counter -1, for its sends to leave, at flush_until). As
  // the runtime's wait, it first takes what has come for it, then spins.
  void begin_wait(int r, double t, int counter, uint64_t value, double flush_until) {
    Proc& p = procs_[r];
    p.waiting = true;
    p.wait_counter = counter;
    p.wait_value = value;
    p.flush_until = flush_until;
    p.wait_since = t;
    take_inbox(r, t);
  }

  // Rank r, holding its core, takes what has come for it; then checks its wait
  // (proc_continues).
  void take_inbox(int r, double t) {
    Proc& p = procs_[r];
    for (int id : p.inbox) t = receive(id, t);
    p.inbox.clear();
    push(t, kStep, r, 0);
  }

  void release_core(int r, double t) { push(t, kCore, procs_[r].core, 0); }

  // A sleeping process is woken: it joins a core's queue (and pays a wake-up
  // when it runs): an idle core of its pool if its own is not, as the
  // kernel's wake-up prefers an idle core (so long calls, whose waits sleep,
  // spread their processes again).
  void wake(int r, double t) {
    Proc& p = procs_[r];
    if (!p.asleep) return;
    p.asleep = false;
    p.woken = t - p.wait_since >= m_.spin_us;  // a free spinner (above) needs no wake-up
    auto idle = [&](int c) { return !cores_of_[c].busy && cores_of_[c].queue.empty(); };
    if (p.woken && !idle(p.core)) {
      const int first = p.core - p.core % cores_;
      for (int c = first; c < first + cores_; ++c)
        if (idle(c)) {
          p.core = c;
          break;
        }
    }
    Core& k = cores_of_[p.core];
    k.queue.push_back(r);
    if (!k.busy) {
      k.busy = true;
      push(t, kCore, p.core, 0);
    }
  }

  // A message has come for its rank: taken at its next turn; it wakes a sleeper.
  void deliver(int id, double t) {
    const int r = arrivals_[id].rank;
    procs_[r].inbox.push_back(id);
    wake(r, t);
  }

  // A sleeper waiting for its sends to leave: woken when they have.
  void flush_wakes(int r, double t) {
    const Proc& p = procs_[r];
    if (p.waiting && p.wait_counter < 0 && t >= p.flush_until) wake(r, t);
  }

  // ---- operations the NIC's thread processor issues (SimOptions::nic_thread_ops)
  void add_thread_ops() {
    if (o_.nic_thread_ops.empty()) return;
    thread_ops_.assign(N, {});
    next_thread_op_.assign(N, 0);
    for (auto& [r, i] : o_.nic_thread_ops) {
      if (r < 0 || r >= N || i >= s_.programs[r].size())
        throw InputError("a NIC thread operation names rank " + std::to_string(r) + " op #" + std::to_string(i) +
                         ", which the schedule does not have");
      thread_ops_[r].push_back(i);
    }
    for (auto& v : thread_ops_) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
  }
  // Whether rank r must first wait for its NIC's thread before op pc (once:
  // the second time it reaches pc, the thread has issued it).
  bool thread_op_at(int r, int pc) {
    if (thread_ops_.empty()) return false;
    size_t& next = next_thread_op_[r];
    const std::vector<size_t>& ops = thread_ops_[r];
    while (next < ops.size() && ops[next] < static_cast<size_t>(pc)) ++next;  // inside a run issued as one
    if (next >= ops.size() || ops[next] != static_cast<size_t>(pc)) return false;
    ++next;
    return true;
  }

  // ---- background traffic (docs/simulator.md, "Background traffic")
  struct Generator {
    int node, rail, dest;  // dest -1: a uniformly random other node per message
  };

  // Who sends to whom is core/background.hpp's definition, the same as the
  // traffic generator's on the emulated cluster.
  void add_generators() {
    const int M = t_.nnodes();
    BackgroundPattern p = BackgroundPattern::None;
    parse_background(o_.background, &p);  // checked by check_options
    if (p == BackgroundPattern::None || M < 2) return;
    for (int n = 0; n < M; ++n) {
      int dest = p == BackgroundPattern::Uniform ? -1 : background_destination(p, n, M);
      if (p != BackgroundPattern::Uniform && dest == kNoBackgroundDestination) continue;
      for (int rail = 0; rail < t_.rails(); ++rail) generators_.push_back({n, rail, dest});
    }
  }

  // A generator keeps dma_engines messages in flight: a new one when one arrives.
  void background_send(int g, double t) {
    const Generator& gen = generators_[g];
    int dest = gen.dest;
    if (dest < 0) dest = background_destination(BackgroundPattern::Uniform, gen.node, t_.nnodes(), next_random(random_));
    ++background_messages_;
    push(net_.transfer(gen.node, dest, gen.rail, t, o_.background_bytes).arrive, kBackground, g, 0);
  }

  const Schedule& s_;
  const Machine& m_;
  const SimOptions& o_;
  const Topology& t_;
  const int N;
  Network net_;
  EventQueue heap_;
  uint64_t events_ = 0, background_messages_ = 0;
  int finished_ = 0;
  std::vector<double> membus_, local_done_, finish_;
  // Where each rank is in its program: op pc, which begins at pos (read in
  // order, without the program's index: schedule.hpp, Program).
  struct Place {
    const uint8_t* pos;
    const uint8_t* end;
    int pc;
    void move_to(const uint8_t* next) {
      pos = next;
      ++pc;
    }
  };
  std::vector<Place> place_;
  Op op_;  // the op step() decodes into: one, not one per event
  int cores_ = 0;     // per pool
  std::vector<double> busy_;  // per rank: its host work is done until then (contended cores only)
  double now_ = 0;    // the time of the event being handled
  std::vector<int> in_flight_;  // per pool: messages from or to it whose receive work has not started (CPU work only)
  std::vector<Proc> procs_;     // contended cores: per rank
  std::vector<Core> cores_of_;  // contended cores: every pool's cores
  std::vector<double> start_;   // per rank: when its call started (its first turn on contended cores)
  struct Arrival {
    int rank;          // whose receive work it is
    int counter;       // the counter it raises
    double o_r;        // its receive overhead (a lone message's)
    double kernel_us;  // its kernel share of the bytes
    int amount;        // what it adds to the counter
    int from_pool;     // counted in flight in this pool (and the receiver's) since it was issued; -1: not counted
    int parts;         // messages it came in (a striped put: one per rail), each with its o_r
  };
  std::vector<CombineWave> waves_;
  std::map<int, int> wave_of_;  // counter -> its wave
  std::vector<Arrival> arrivals_;  // per arrival event in flight
  std::vector<int> free_arrivals_;  // entries of arrivals_ whose event is done
  bool contended_ = false;
  bool cpu_serial_ = false;  // host work queues per rank: contended cores, or recv_cpu = loggp
  std::vector<uint64_t> counters_;
  struct Waiter {
    int rank;
    uint64_t value;  // of its wait: an increment need not decode the wait again
  };
  std::vector<std::vector<Waiter>> waiters_;
  std::vector<Generator> generators_;
  uint64_t random_;
  std::vector<std::vector<size_t>> thread_ops_;  // per rank, sorted (empty: none in this run)
  std::vector<std::vector<double>> noise_phase_;  // per noise source and node: the first detour's start, or -1
  std::vector<size_t> next_thread_op_;
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

void check_options(const SimOptions& o) {
  BackgroundPattern p;
  if (!parse_background(o.background, &p))
    throw InputError("unknown background traffic '" + o.background + "' (none, " + kBackgroundPatternNames + ")");
  if (o.background != "none" && o.background_bytes == 0)
    throw InputError("background messages need at least 1 byte");
}

SimOptions loaded_sample(const SimOptions& o, const Machine& m, int i) {
  SimOptions x = o;
  x.seed = o.seed + static_cast<uint64_t>(i);
  if (o.background == "none") return x;
  uint64_t state = x.seed;
  x.start_us = o.start_us + (2 + next_uniform(state)) * static_cast<double>(o.background_bytes) / m.nic_MBps();
  return x;
}

void check_runs(const Schedule& s, const Machine& m) { check_schedule(s, m); }

bool placement_drawn(const Topology& t, const Machine& m) {
  if (m.cores <= 1 || m.busiest_core_share <= 0) return false;
  return m.cores_machine_wide ? m.cores < t.nranks() : m.cores < t.max_node_size();
}

SimResult simulate(const Schedule& s, const Machine& m, const SimOptions& o) {
  return Simulation(s, m, o, check_schedule(s, m)).run();
}

}  // namespace railcoll::sim
