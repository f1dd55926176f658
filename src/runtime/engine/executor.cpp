// Running one rank's program of a schedule (executor.hpp). What crosses a
// process boundary goes through the Transport; the checks a frame must pass
// against the plan are plan.cpp's (match_frame, Arrivals).
#include "runtime/engine/executor.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "runtime/bootstrap/net.hpp"
#include "runtime/engine/reduce.hpp"
#include "runtime/engine/thread_priority.hpp"

namespace railcoll::rt {

ExecutorSettings ExecutorSettings::from(const Settings& s) {
  ExecutorSettings e;
  e.timeout = s.seconds(Setting::Timeout);
  if (s.given(Setting::SpinUs)) e.spin_seconds = static_cast<double>(s.integer(Setting::SpinUs)) * 1e-6;
  e.replay_call = static_cast<uint64_t>(s.integer(Setting::TestReplayCall));
  e.stripe_bytes = static_cast<uint64_t>(s.integer(Setting::StripeBytes));
  parse_progress_priority(s.text(Setting::ProgressPriority), &e.sleep_boost);  // the table checked the choice
  return e;
}

// The cores this process may run on (its affinity mask); 0 if unknown.
static int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

Executor::Executor(Transport& transport, const Topology& topo, int me, uint64_t comm_id,
                   const ExecutorSettings& settings)
    : t_(transport),
      topo_(topo),
      me_(me),
      node_(topo.node_of(me)),
      comm_id_(comm_id),
      timeout_(settings.timeout),
      settings_(settings),
      node_ranks_(topo.node_size(topo.node_of(me))),
      cores_(usable_cores()),
      spin_seconds_(spin_budget(settings, node_ranks_, 0, cores_)),
      replay_call_(settings.replay_call),
      seg_(transport.node()),
      mailbox_(transport, topo, me, comm_id, settings.stripe_bytes, settings.timeout),
      node_base_(kCounterSlots, 0) {
  t_.attach(this);
}

double spin_budget(const ExecutorSettings& settings, int node_ranks, uint64_t call_bytes, int cores) {
  if (settings.spin_seconds >= 0) return settings.spin_seconds;
  if (cores <= 0 || node_ranks <= cores) return kOwnCoreSpin;
  return call_bytes <= kShortCallBytes ? kShortCallSpin : 0.0;
}

double spin_budget(const ExecutorSettings& settings, int node_ranks, uint64_t call_bytes) {
  return spin_budget(settings, node_ranks, call_bytes, usable_cores());
}

uint64_t wait_bytes(const Schedule& s, int me) {
  const auto bytes_of = [&](const std::vector<uint64_t>& v) { return v.size() > static_cast<size_t>(me) ? v[me] : 0; };
  uint64_t recv = bytes_of(s.recv_bytes);
  // An all-gather's or a gather's blocks reach a node once for all of its ranks,
  // which copy them out of the node's shared memory: count a node rank's share.
  if (traits(s.collective).result == Result::Blocks) recv /= s.topo.node_size(s.topo.node_of(me));
  return std::max(bytes_of(s.send_bytes), recv);
}

FrameHeader Executor::header(Frame type, int op) const {
  FrameHeader h = make_header(type, comm_id_, me_);
  h.seq = seq_;
  h.call_sig = plan_ ? plan_->sig : 0;
  h.op = op;
  return h;
}

// ------------------------------------------------------------------ memory

char* Executor::resolve(const Span& sp) const {
  switch (sp.region) {
    case Region::Send: return const_cast<char*>(static_cast<const char*>(bufs_.send)) + sp.offset;
    case Region::Recv: return static_cast<char*>(bufs_.recv) + sp.offset;
    case Region::Scratch: return const_cast<char*>(scratch_.data()) + sp.offset;
    case Region::Shared: return shared_ + sp.offset;
  }
  return nullptr;
}

// Payload bytes [off, off+len) of a put, as destination (dst) or source pieces.
void Executor::payload_iov(const Op& op, uint64_t off, uint64_t len, bool dst, std::vector<iovec>* out) const {
  out->clear();
  for_each_piece(op, off, len, dst, [&](const Span& s) { out->push_back({resolve(s), static_cast<size_t>(s.length)}); });
}

// ------------------------------------------------------------------ counters

void Executor::bump(const CounterRef& c) {
  if (!c.on_node) {
    ++rank_counters_[c.index];
    return;
  }
  node_counter(c.index).fetch_add(1, std::memory_order_seq_cst);
  t_.wake_node_sleepers();
}

// A signal: local counters directly, others with a Notify frame to the rank
// that owns the counter (a node counter elsewhere: to that node's leader).
void Executor::signal(const CounterRef& c, int op_index, int via) {
  bool mine = c.on_node ? c.owner == node_ : c.owner == me_;
  if (mine) return bump(c);
  int to = via >= 0 ? via : c.on_node ? topo_.leader(c.owner) : c.owner;
  FrameHeader h = header(Frame::Notify, op_index);
  t_.send(to, 0, h, nullptr, 0);
}

// A put to another rank's memory: one frame per part (the schedule's rail or
// stripe decides the parts), its payload read straight from the source spans.
void Executor::queue_put(const Op& op, int op_index) {
  const uint64_t total = op.bytes();
  auto parts = put_parts(*plan_, topo_, me_, op);
  uint64_t off = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    FrameHeader h = header(Frame::Data, op_index);
    h.part = static_cast<uint16_t>(p);
    h.nparts = static_cast<uint16_t>(parts.size());
    h.offset = off;
    h.length = parts[p].second;
    h.total = total;
    payload_iov(op, off, parts[p].second, false, &send_iov_);
    off += parts[p].second;
    if (replay_call_ == seq_ && !replay_) {  // a test hook: keep a copy to send again in call n+2
      replay_ = std::make_unique<Replay>(Replay{h, op.peer, parts[p].first, {}});
      for (auto& v : send_iov_) replay_->payload.append(static_cast<char*>(v.iov_base), v.iov_len);
    }
    t_.send(op.peer, parts[p].first, h, send_iov_.data(), send_iov_.size());
    if (obs_) obs_->on_send(op_index, op.peer, topo_.same_node(op.peer, me_) ? -1 : parts[p].first, parts[p].second);
  }
}

// ------------------------------------------------------------------ frames in

[[noreturn]] void Executor::protocol_error(int peer, int rail, const std::string& what) const {
  throw RuntimeError(Status::Protocol, "rejected a frame from " + link_name(peer, rail) + ": " + what);
}

// A Data or Notify frame of the current call: checked against the plan before
// a byte of it is written; returns the op it belongs to.
const Op& Executor::check_frame(const FrameHeader& h, int rail) const {
  std::string why;
  bool mismatch = false;
  const Op* op = match_frame(*plan_, topo_, me_, h, rail, &why, &mismatch);
  if (mismatch) throw RuntimeError(Status::Mismatch, link_name(h.sender, rail) + " " + why);
  if (!op) protocol_error(h.sender, rail, why);
  return *op;
}

// Counts a part; a part seen twice in one call is a replay and is refused,
// unless it was sent again after a rail failed (then the copy is dropped).
void Executor::part_arrived(const FrameHeader& h, int rail, const Op& op) {
  bool complete = false;
  if (!arrivals_.add(h, &complete) && !(h.flags & kFlagMoved))
    protocol_error(h.sender, rail,
                   "op #" + std::to_string(h.op) + " part " + std::to_string(h.part) + " arrived twice in call " +
                       std::to_string(h.seq) + " (a replayed frame)");
  if (!complete) return;
  --messages_due_;
  bump(op.counter);
}

Landing Executor::frame_header(const FrameHeader& h, int rail, std::vector<iovec>* place) {
  if (h.flags & kFlagMessage) return mailbox_.frame_header(h, rail, place);
  if (in_call_ && h.seq == seq_) {
    const Op& op = check_frame(h, rail);
    if ((h.flags & kFlagMoved) && arrivals_.has(h)) return Landing::Drop;  // sent again, but the first copy came
    if (obs_) obs_->on_arrival(h.sender, rail, h.op, h.length, true);
    if (h.type == static_cast<uint16_t>(Frame::Data))
      payload_iov(op, h.offset, h.length, true, place);
    else
      place->clear();
    return Landing::Place;
  }
  if (h.seq < seq_ && (h.flags & kFlagMoved)) return Landing::Drop;  // a copy for a call that is over
  if (h.seq >= seq_) return Landing::Hold;  // for a call this rank has not entered yet
  protocol_error(h.sender, rail,
                 "stale frame for call " + std::to_string(h.seq) + " (this rank is at call " + std::to_string(seq_) +
                     ")");
}

void Executor::frame_done(const FrameHeader& h, int rail, std::vector<char>* held) {
  if (h.flags & kFlagMessage) return mailbox_.frame_done(h, rail, held);
  if (!held) {
    if (obs_) obs_->on_arrival(h.sender, rail, h.op, h.length, false);
    return part_arrived(h, rail, plan_->incoming.at(key_of(h.sender, h.op)));
  }
  Held frame{h, rail, std::move(*held)};
  held->clear();
  frames_held_.fetch_add(1, std::memory_order_relaxed);
  // Its header came before this rank entered the call; if the call has
  // started meanwhile, the queue of held frames was already drained.
  if (in_call_ && h.seq == seq_) return apply_held(frame);
  held_.push_back(std::move(frame));
}

// A peer that failed in call n+1 while this rank is still in call n (or about
// to enter it) had left call n: what it owed this rank for it was sent, and
// call n can end here.
void Executor::peer_aborted(int peer, uint64_t call, const std::string& why) {
  std::string msg = "rank " + std::to_string(peer) + " aborted the collective: " + why;
  if (call > seq_) {
    if (!later_abort_) later_abort_ = LaterAbort{call, msg};
    return;
  }
  if (broken_.empty()) broken_ = msg;  // its sender told everyone: not passed on
  throw RuntimeError(Status::Peer, msg);
}

PeerSaid Executor::position() const {
  PeerSaid here;
  here.answered = true;
  here.call = seq_;
  here.phase = static_cast<uint8_t>(phase_);
  here.op = phase_ == Phase::Idle ? -1 : static_cast<int>(pc_);
  return here;
}

// A frame that arrived before its call: checked, then copied into place.
void Executor::apply_held(const Held& f) {
  const Op& op = check_frame(f.hdr, f.rail);
  if ((f.hdr.flags & kFlagMoved) && arrivals_.has(f.hdr)) return;  // a copy sent again after a rail failed
  if (f.hdr.type == static_cast<uint16_t>(Frame::Data)) {
    size_t at = 0;
    for_each_piece(op, f.hdr.offset, f.hdr.length, true, [&](const Span& s) {
      memcpy(resolve(s), f.payload.data() + at, s.length);
      at += s.length;
    });
  }
  part_arrived(f.hdr, f.rail, op);
}

// ------------------------------------------------------------------ waiting

// The text that says what a wait waits for (which counter, the ranks still
// missing) is made once the wait has lasted this long: made for every wait,
// it was a third of a small call's instructions (docs/runtime.md, "Spinning
// without the sockets"), and a wait that ends sooner is never read.
constexpr double kDescribeWaitAfter = 1e-3;

// A call stops only where its program must wait for something other ranks do
// (the bank, a counter, sends draining). blocked() notes since when it has
// waited there: half-way to the deadline it probes every peer (a peer in a
// railcoll call answers at once, so at the deadline the error can name the
// ones that did not: stopped, hung, or busy outside railcoll, rather than only
// the ranks this one was waiting for, which may themselves be waiting on the
// culprit); at the deadline it throws.
template <class What, class Who>
bool Executor::blocked(What what, Who who) {
  const double now = now_seconds();
  if (wait_since_ == 0) {
    wait_since_ = now;
    probed_ = false;
    wait_told_ = false;
    if (obs_) {
      const Awaited a = who();
      obs_->on_wait(static_cast<int>(pc_), a.peer, a.rail, "");
    }
    return false;
  }
  if (obs_ && !wait_told_ && now > wait_since_ + kDescribeWaitAfter) {
    wait_told_ = true;
    const Awaited a = who();
    obs_->on_wait(static_cast<int>(pc_), a.peer, a.rail, what());
  }
  if (!probed_ && now > wait_since_ + timeout_ / 2) {
    probed_ = true;
    t_.probe_peers();
  }
  if (now > wait_since_ + timeout_) {
    const Awaited a = refine(who());
    if (obs_) obs_->on_wait(static_cast<int>(pc_), a.peer, a.rail, what());  // the recorder keeps the final culprit
    throw RuntimeError(Status::Timeout, timeout_text(what(), a));
  }
  return false;
}

void Executor::idle(double max_s) {
  if (!broken_.empty()) return;
  guard([&] {
    if (!in_call()) {  // between calls only point-to-point messages are awaited
      t_.progress(mailbox_.waiting() ? max_s : 0, nullptr);
      return mailbox_.poll();
    }
    if (max_s <= 0) return spin_look();
    const double left = wait_since_ > 0 ? wait_since_ + timeout_ - now_seconds() : 0;
    NodeWait* sleep_on = sleep_on_.counter ? &sleep_on_ : nullptr;
    if (sleep_on) sleep_on->net_idle = messages_due_ == 0;
    t_.progress(std::min(max_s, std::max(0.0, left)), sleep_on);
  });
}

// One look at the sockets without blocking, for a wait that spins: at once
// where frames of this call are due (to come or to leave) or messages wait,
// else at most every kSpinLookEvery (a wait on node counters alone: the
// sockets can only hold an abort, a probe or later calls' frames).
void Executor::spin_look() {
  if (messages_due_ == 0 && !t_.sends_pending() && !mailbox_.waiting()) {
    const double now = now_seconds();
    if (now - looked_ < kSpinLookEvery) return;
    looked_ = now;
  }
  t_.progress(0, nullptr);
}

void Executor::set_wait_hook(std::function<void()> hook, double every_s) {
  wait_hook_ = std::move(hook);
  hook_every_ = every_s;
}

void Executor::run_wait_hook_if_due() {
  if (!wait_hook_) return;
  const double now = now_seconds();
  if (now - hook_ran_.load(std::memory_order_relaxed) < hook_every_) return;
  hook_ran_.store(now, std::memory_order_relaxed);
  wait_hook_();
}

void Executor::wait_idle(double max_s) {
  if (!wait_hook_) return idle(max_s);
  idle(std::min(max_s, hook_every_));
  run_wait_hook_if_due();
}

// Blocks until the call ends: spins, yielding the core, for RAILCOLL_SPIN_US
// (default 2 ms; 0 where the node's ranks outnumber its cores), then sleeps in
// the transport until woken (docs/runtime.md, "The latency path"), running
// the wait hook between sleeps.
void Executor::finish_call() {
  const double start = now_seconds();
  BoostWhileAsleep boost(settings_.sleep_boost);
  while (!advance()) {
    const double spin = spin_seconds();
    if (spin > 0 && now_seconds() - start < spin) {
      sched_yield();
      spin_look();
    } else {
      boost.before_sleep();
      wait_idle(0.05);
    }
  }
}

static std::string rank_list(const std::vector<int>& ranks) {
  std::string list = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
  return list + (ranks.size() > 8 ? ", ..." : "");
}

static std::string rail_text(int rail) {
  return rail == kStripe ? "every rail" : rail < 0 ? "the node's memory" : "rail " + std::to_string(rail);
}

// Where the peers said they were when they answered the probe half-way to the
// deadline ("; rank 5 did not answer ..."), and in *cause the likeliest reason
// the wait expired, in words: a rank that does not answer (gone, stopped, or
// busy outside railcoll without a progress thread), one that has not entered
// this call (late, or it skipped it), one already past it, or, every rank
// being in this call, a message that does not come (a rail that stopped
// carrying, or a chain of waits: the other ranks' messages name its end).
std::string Executor::peers_said(const Awaited& culprit, std::string* cause) const {
  std::vector<int> silent, between, earlier, later;
  for (int p = 0; p < topo_.nranks(); ++p) {
    if (p == me_) continue;
    const PeerSaid s = t_.peer_said(p);
    if (!s.answered)
      silent.push_back(p);
    else if (s.call < seq_)
      earlier.push_back(p);
    else if (s.call == seq_ && s.phase == PeerSaid::Idle)
      between.push_back(p);
    else if (s.call > seq_)
      later.push_back(p);
  }
  const std::string call = "call " + std::to_string(seq_);
  std::string text;
  if (!silent.empty())
    text += "; " + rank_list(silent) + " did not answer a liveness probe (stopped, hung, or busy outside railcoll)";
  else
    text += "; every peer answered a liveness probe";
  if (!between.empty()) text += "; " + rank_list(between) + " answered between calls, before " + call;
  for (int p : earlier) {
    const PeerSaid s = t_.peer_said(p);
    text += "; rank " + std::to_string(p) + " answered from call " + std::to_string(s.call) + ", op #" +
            std::to_string(s.op);
  }
  if (!later.empty()) text += "; " + rank_list(later) + " answered from a later call than " + call;
  // The culprit answered on some rails but not on the one its message comes on.
  bool rail_silent = false;
  if (culprit.peer >= 0 && culprit.rail >= 0 && rail_gap(culprit.peer) == culprit.rail) rail_silent = true;
  if (culprit.peer >= 0) {
    const PeerSaid s = t_.peer_said(culprit.peer);
    if (s.answered && s.call == seq_ && s.phase != PeerSaid::Idle)
      text += "; rank " + std::to_string(culprit.peer) + " answered from this call, op #" + std::to_string(s.op);
    if (rail_silent) {
      std::string on;
      for (int r = 0; r < topo_.rails() && r < 31; ++r)
        if (s.rails & (1u << r)) on += (on.empty() ? "" : ", ") + std::to_string(r);
      text += "; rank " + std::to_string(culprit.peer) + " answered on rail " + (on.empty() ? "-" : on) +
              " but not on rail " + std::to_string(culprit.rail);
    }
  }
  if (rail_silent)
    *cause = "rail " + std::to_string(culprit.rail) + " between this rank and rank " + std::to_string(culprit.peer) +
             " stopped carrying (rank " + std::to_string(culprit.peer) + " answers on its other rails)";
  else if (!silent.empty())
    *cause = rank_list(silent) + " is gone, stopped or hung, or busy outside railcoll (a sleep, I/O, a long "
                                 "computation) with no progress thread to answer";
  else if (!between.empty())
    *cause = rank_list(between) + " has not entered " + call + ": it is late (busy outside railcoll) or skipped it";
  else if (!earlier.empty())
    *cause = rank_list(earlier) + " is still in an earlier call, waiting there";
  else if (!later.empty())
    *cause = rank_list(later) + " is past " + call + ": it skipped it, or the ranks made different calls";
  else if (culprit.peer >= 0)
    *cause = "every rank is in " + call + ", but rank " + std::to_string(culprit.peer) + "'s message on " +
             rail_text(culprit.rail) + " has not come: that rail may have stopped carrying, or rank " +
             std::to_string(culprit.peer) + " waits itself (its own message names whom)";
  else
    *cause = "every rank is in " + call + "; the transport could not hand this rank's sends over";
  return text;
}

// The first rail to `peer` (of another node) on which it did not answer the
// probe while it answered on another; -1: none.
int Executor::rail_gap(int peer) const {
  const PeerSaid s = t_.peer_said(peer);
  if (!s.answered || topo_.rails() < 2 || topo_.same_node(peer, me_)) return -1;
  for (int r = 0; r < topo_.rails() && r < 31; ++r)
    if (!(s.rails & (1u << r))) return r;
  return -1;
}

// The culprit a wait names at its deadline, with the probe's answers in: among
// the ranks whose messages are missing, one that did not answer, else one not
// in this call, else one with a rail that did not answer; a wait with no rank
// to name (sends that do not drain) names a peer whose rail did not answer.
Executor::Awaited Executor::refine(Awaited a) const {
  if (a.peer < 0) {
    for (int p = 0; p < topo_.nranks(); ++p)
      if (p != me_ && rail_gap(p) >= 0) return Awaited{p, rail_gap(p)};
    return a;
  }
  if (!plan_ || !plan_->sched.programs[me_].size() || pc_ >= plan_->sched.programs[me_].size()) return a;
  const Op op = plan_->sched.programs[me_][pc_];
  if (op.kind != OpKind::Wait) return a;
  int best = -1, best_rail = -1, best_score = 0;
  for (auto& kv : plan_->incoming) {
    if (!(kv.second.counter == op.counter) || arrivals_.done(kv.first)) continue;
    const int sender = static_cast<int>(kv.first >> 32);
    const PeerSaid s = t_.peer_said(sender);
    const int rail = topo_.same_node(sender, me_) ? -1 : kv.second.rail;
    const int score = !s.answered ? 3 : (s.call != seq_ || s.phase == PeerSaid::Idle) ? 2
                      : (rail >= 0 && rail_gap(sender) == rail) ? 1 : 0;
    if (score > best_score) best = sender, best_rail = rail, best_score = score;
  }
  return best >= 0 ? Awaited{best, best_rail} : a;
}

// "rank 0 timed out after 1 s waiting in ... (still missing: ...); in call 3
// of communicator ..., op #4 (wait, step 1), waiting for rank 3 on rail 1;
// <what the peers said>; likely cause: ...".
std::string Executor::timeout_text(const std::string& what, const Awaited& culprit) const {
  std::string where = where_text();
  if (culprit.peer >= 0) where += ", waiting for rank " + std::to_string(culprit.peer) + " on " + rail_text(culprit.rail);
  std::string cause;
  const std::string said = peers_said(culprit, &cause);
  return "rank " + std::to_string(me_) + " timed out after " + seconds_text(timeout_) + " " + what + where + said +
         "; likely cause: " + cause;
}

// "; in call 3 of communicator 9c3e... (allgather/direct with ...), op #4 (wait, step 1)": where this rank is.
std::string Executor::where_text() const {
  char comm[24];
  snprintf(comm, sizeof comm, "%016llx", static_cast<unsigned long long>(comm_id_));
  std::string where = "; in call " + std::to_string(seq_) + " of communicator " + comm;
  if (!plan_) return where;
  where += " (" + plan_->what + ")";
  const auto& prog = plan_->sched.programs[me_];
  if (phase_ == Phase::Entering) {
    where += ", entering it";
  } else if (pc_ < prog.size()) {
    const Op op = prog[pc_];
    where += ", op #" + std::to_string(pc_) + " (" + op_name(op.kind) + ", step " + std::to_string(op.step) + ")";
  } else {
    where += ", after its last op";
  }
  return where;
}

// The ranks whose messages for counter cref have not all arrived yet.
std::string Executor::missing_senders(const CounterRef& cref) const {
  std::ostringstream o;
  int shown = 0;
  for (auto& kv : plan_->incoming) {
    if (!(kv.second.counter == cref) || arrivals_.done(kv.first)) continue;
    if (shown++ < 6) o << (shown > 1 ? ", " : "") << "rank " << (kv.first >> 32) << " op #" << (kv.first & 0xffffffffu);
  }
  return shown ? " (still missing: " + o.str() + (shown > 6 ? ", ..." : "") + ")" : "";
}

// The first rank a wait on cref waits for: one whose message has not all
// arrived (and the rail it comes on), else a rank of this node that has not
// entered this call (its increments of a node counter come through memory).
Executor::Awaited Executor::awaited(const CounterRef& cref) const {
  Awaited a;
  for (auto& kv : plan_->incoming) {
    if (!(kv.second.counter == cref) || arrivals_.done(kv.first)) continue;
    const int sender = static_cast<int>(kv.first >> 32);
    if (a.peer < 0 || sender < a.peer) {
      a.peer = sender;
      a.rail = topo_.same_node(sender, me_) ? -1 : kv.second.rail;
    }
  }
  if (a.peer >= 0 || !cref.on_node) return a;
  const auto& ranks = topo_.ranks_of(node_);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const uint64_t theirs = seg_.shm->call[bank_][i].load(std::memory_order_acquire);
    if (ranks[i] != me_ && theirs >> 32 != (seq_ & 0xffffffffu)) return Awaited{ranks[i], -1};
  }
  return a;
}

// Local ranks whose increments this rank has just waited for are in this call:
// any of them with another signature passed other sizes or another algorithm.
// (Data a local peer leaves in shared memory carries no frame header, so ranks
// of a node compare their calls in the node segment.)
void Executor::check_local_calls(const Plan& p) const {
  const auto& ranks = topo_.ranks_of(node_);
  const uint64_t mine = call_word(p);
  for (size_t i = 0; i < ranks.size(); ++i) {
    uint64_t theirs = seg_.shm->call[bank_][i].load(std::memory_order_acquire);
    if (ranks[i] != me_ && theirs >> 32 == (seq_ & 0xffffffffu) && theirs != mine)
      throw RuntimeError(Status::Mismatch, "local rank " + std::to_string(ranks[i]) +
                                               " is in a different call than this rank (" + p.what +
                                               "): the ranks disagree on the collective, its algorithm or its sizes");
  }
}

// ------------------------------------------------------------------ a call

// Consecutive calls: call n uses bank n % 2 of the node's counters and shared
// buffer (node_shm.hpp), so schedules end without a node-wide synchronisation:
// a rank that has left call n may write bank (n+1) % 2 while a local peer still
// reads bank n % 2. Before it touches bank n % 2 again, in call n+2, every rank
// of the node must have left call n, i.e. entered call n+1: each rank counts
// its entries in the bank's entry slot, and waits (bank_free) for the other
// bank's count. All-gathers and allreduces never wait (finishing call n+1
// needed every local rank in it); a broadcast's fast ranks may, for a slow one.
void Executor::enter_bank() {
  bank_ = static_cast<int>(seq_ & 1);
  shared_ = seg_.bank(bank_);
  node_counter_slot(entry_slot(bank_)).fetch_add(1, std::memory_order_seq_cst);
  entries_[bank_] += static_cast<uint64_t>(topo_.node_size(node_));
  if (topo_.node_size(node_) > 1) t_.wake_node_sleepers();
}

bool Executor::bank_free() {
  const int prev = bank_ ^ 1;
  std::atomic<uint64_t>& left = node_counter_slot(entry_slot(prev));
  if (topo_.node_size(node_) == 1 || left.load(std::memory_order_seq_cst) >= entries_[prev]) return true;
  sleep_on_ = NodeWait{&left, entries_[prev], entry_slot(prev), false};
  return blocked([&] {
    return "entering " + plan_->what + " (call " + std::to_string(seq_) + "): a rank of this node has not left call " +
           std::to_string(seq_ - 2) + " yet";
  });
}

void Executor::break_and_tell(const std::string& why) {
  in_call_ = false;
  phase_ = Phase::Idle;
  plan_ = nullptr;
  if (!broken_.empty()) return;  // already told (or told by the peer that aborted)
  broken_ = why;
  t_.abort_peers(seq_, why);
}

void Executor::run(const Plan& p, const Buffers& b) {
  start(p, b);
  guard([&] { finish_call(); });
}

void Executor::start(const Plan& p, const Buffers& b) {
  if (!broken_.empty()) {
    if (obs_) obs_->on_call_end(seq_, "communicator is broken: " + broken_);  // the recorder writes its record
    throw RuntimeError(Status::Broken, "communicator is broken: " + broken_);
  }
  if (later_abort_ && later_abort_->call <= seq_) {
    broken_ = later_abort_->why;  // its sender told everyone: not passed on
    throw RuntimeError(Status::Peer, broken_);
  }
  if (phase_ != Phase::Idle) throw RuntimeError(Status::Internal, "executor: a call started inside another");
  const Schedule& s = p.sched;
  if (s.shared_bytes[node_] > seg_.shm->capacity)
    throw RuntimeError(Status::Unsupported, p.what + " needs " + std::to_string(s.shared_bytes[node_]) +
                                                " bytes of node-shared memory; RAILCOLL_SHM_MIB allows " +
                                                std::to_string(seg_.shm->capacity >> 20) + " MiB");
  if (s.node_counters > kMaxNodeCounters)
    throw RuntimeError(Status::Unsupported, p.what + " needs " + std::to_string(s.node_counters) +
                                                " node counters; the shared segment has " +
                                                std::to_string(kMaxNodeCounters));
  if (s.redop == ReduceOp::User && (!b.op || b.op->elem_bytes != s.elem_bytes))
    throw RuntimeError(Status::Internal, p.what + ": a user operator's call without its function");
  plan_ = &p;
  bufs_ = b;
  spin_seconds_.store(spin_budget(settings_, node_ranks_, wait_bytes(s, me_), cores_), std::memory_order_relaxed);
  guard([&] {
    t_.begin_call();
    if (scratch_.size() < s.scratch_bytes[me_]) scratch_.resize(s.scratch_bytes[me_]);
    rank_counters_.assign(std::max(1, s.rank_counters), 0);
    arrivals_.clear();
    messages_due_ = p.incoming.size();
    pc_ = 0;
    wait_since_ = 0;
    phase_ = Phase::Entering;
    if (obs_) {
      op_told_ = SIZE_MAX;
      obs_->on_call_begin(seq_, p);
    }
    enter_bank();
  });
}

bool Executor::advance() {
  if (!broken_.empty()) throw RuntimeError(Status::Broken, "communicator is broken: " + broken_);
  if (phase_ == Phase::Idle) return true;
  bool done = false;
  guard([&] {
    sleep_on_.counter = nullptr;
    switch (phase_) {
      case Phase::Entering:
        if (!bank_free()) return;
        entered();
        [[fallthrough]];
      case Phase::Running:
        if (!run_program()) return;
        phase_ = Phase::Flushing;
        wait_since_ = 0;
        if (t_.sends_pending()) t_.hand_over_sends();
        [[fallthrough]];
      case Phase::Flushing:
        if (t_.sends_pending() &&
            !blocked([&] { return "flushing sends at the end of " + plan_->what; }))
          return;
        ended();
        done = true;
        return;
      case Phase::Idle:
        done = true;
        return;
    }
  });
  return done;
}

// The call's bank is free: frames that came early are applied, and local peers
// can see which call this rank is in.
void Executor::entered() {
  wait_since_ = 0;
  phase_ = Phase::Running;
  in_call_ = true;
  if (replay_ && !replayed_ && seq_ == replay_call_ + 2) {
    replayed_ = true;
    iovec v{replay_->payload.data(), replay_->payload.size()};
    t_.send(replay_->peer, replay_->rail, replay_->hdr, &v, 1);
  }
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->hdr.seq != seq_) {
      ++it;
      continue;
    }
    apply_held(*it);
    it = held_.erase(it);
  }
  seg_.shm->call[bank_][topo_.local_rank(me_)].store(call_word(*plan_), std::memory_order_release);
}

// This rank's program from op pc_ on, until an op must wait (false) or the end (true).
bool Executor::run_program() {
  const Plan& p = *plan_;
  const Schedule& s = p.sched;
  const auto& prog = s.programs[me_];
  for (; pc_ < prog.size(); ++pc_) {
    const Op& op = prog[pc_];
    const int index = static_cast<int>(pc_);
    if (obs_ && op_told_ != pc_) {
      op_told_ = pc_;
      obs_->on_op(index, op);
    }
    switch (op.kind) {
      case OpKind::Copy:
        for (auto& sg : op.segs) {
          void* dst = resolve(sg.dst);
          const void* src = resolve(sg.src);
          if (dst != src) memmove(dst, src, sg.src.length);  // equal: send is recv (AlgoSpec::in_place_ok)
        }
        break;
      case OpKind::Reduce:
      case OpKind::ReduceBefore: {
        const bool src_first = op.kind == OpKind::ReduceBefore;
        for (auto& sg : op.segs) {
          if (s.redop == ReduceOp::User)
            reduce_user(*bufs_.op, resolve(sg.dst), resolve(sg.src), sg.src.length, src_first, &reduce_tmp_);
          else
            reduce_into(s.dtype, s.redop, resolve(sg.dst), resolve(sg.src), sg.src.length, src_first);
        }
        break;
      }
      case OpKind::Put:
        if (memcpy_put(topo_, me_, op)) {  // into this node's shared buffer: a memcpy, then the counter
          for (auto& sg : op.segs) memcpy(resolve(sg.dst), resolve(sg.src), sg.src.length);
          if (obs_) obs_->on_send(index, op.peer, -1, op.bytes());
          signal(op.counter, index, op.peer);
        } else {
          queue_put(op, index);  // the transport sends at once what the socket takes
        }
        break;
      case OpKind::Signal:
        signal(op.counter, index, -1);
        break;
      case OpKind::Wait: {
        const CounterRef c = op.counter;
        const uint64_t target = op.value + (c.on_node ? node_base_[counter_slot(bank_, c.index)] : 0);
        const bool reached = c.on_node ? node_counter(c.index).load(std::memory_order_seq_cst) >= target
                                       : rank_counters_[c.index] >= target;
        if (!reached) {
          if (c.on_node) sleep_on_ = NodeWait{&node_counter(c.index), target, counter_slot(bank_, c.index), false};
          return blocked(
              [&] {
                return "waiting in " + p.what + ", step " + std::to_string(op.step) + ", for " +
                       (c.on_node ? "node" : "rank") + " counter " + std::to_string(c.index) + " to reach " +
                       std::to_string(op.value) + missing_senders(c);
              },
              [&] { return awaited(c); });
        }
        wait_since_ = 0;
        if (c.on_node) check_local_calls(p);
        break;
      }
      case OpKind::Flush:
        if (t_.sends_pending()) return blocked([&] { return "flushing sends in " + p.what; });
        wait_since_ = 0;
        break;
    }
    if (obs_) obs_->on_op_end(index, op);
  }
  return true;
}

void Executor::ended() {
  const Plan& p = *plan_;
  t_.end_call();
  if (replayed_) replay_.reset();
  for (size_t i = 0; i < p.node_increments.size(); ++i)
    node_base_[counter_slot(bank_, static_cast<int>(i))] += p.node_increments[i];
  in_call_ = false;
  phase_ = Phase::Idle;
  plan_ = nullptr;
  if (obs_) obs_->on_call_end(seq_, "");
  ++seq_;
}

// Runs f; a failure breaks the executor and tells every peer, then goes on up.
template <class F>
void Executor::guard(F f) {
  try {
    f();
  } catch (const RuntimeError& e) {
    // Every failure inside a call says where this rank was (a timeout's text has it already).
    const bool add = plan_ && e.status != Status::Timeout && e.status != Status::Broken;
    const std::string msg = add ? e.what() + (" (rank " + std::to_string(me_) + where_text().substr(1) + ")") : e.what();
    if (obs_ && plan_) obs_->on_call_end(seq_, msg);
    break_and_tell(msg);
    if (add) throw RuntimeError(e.status, msg);
    throw;
  } catch (const std::exception& e) {
    if (obs_ && plan_) obs_->on_call_end(seq_, e.what());
    break_and_tell(e.what());
    throw;
  }
}

void Executor::finish() {
  if (!broken_.empty()) return;
  try {
    const double deadline = now_seconds() + timeout_;
    while (t_.sends_pending()) {
      if (now_seconds() > deadline) throw RuntimeError(Status::Timeout, "timed out flushing at close");
      t_.progress(std::min(0.05, deadline - now_seconds()), nullptr);
    }
  } catch (const std::exception& e) {
    break_and_tell(e.what());
  }
}

}  // namespace railcoll::rt
