// The communicator's executor: set-up in order (store, topology, connections,
// the node segment), then the progress engine (sending, receiving and checking
// frames, counters, waits) and a call (running this rank's program of a
// schedule). What lies below it lives apart: the environment in bootstrap.cpp,
// the node segment in node_shm.cpp, the connections, the door and rail failover
// in transport.cpp and failover.cpp (class Transport, which Comm::Impl extends).
#include "runtime/comm.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "runtime/auth.hpp"
#include "runtime/node_shm.hpp"
#include "runtime/plan.hpp"
#include "runtime/reduce.hpp"
#include "runtime/store.hpp"
#include "runtime/transport.hpp"
#include "runtime/wire.hpp"

namespace railcoll::rt {

namespace {

struct Held {
  FrameHeader hdr;
  int rail;
  std::vector<char> payload;
};

int process_comm_index = 0;

}  // namespace

struct Comm::Impl final : Transport {
  std::string job;
  NodeSegment seg;  // the node's shared memory
  std::unique_ptr<StoreServer> store_server;
  std::set<int> answered;       // peers that answered a liveness probe in this wait
  std::unique_ptr<SendItem> replay;  // RAILCOLL_TEST_REPLAY_CALL: the frame to send again
  int replay_conn = -1;

  // call state
  uint64_t seq = 1;
  bool in_call = false;
  const Plan* plan = nullptr;
  Buffers bufs;
  std::vector<char> scratch;
  std::vector<uint64_t> rank_counters;
  std::vector<uint64_t> node_base = std::vector<uint64_t>(kMaxNodeCounters, 0);
  Arrivals arrivals;                              // (sender, op) parts in this call
  std::deque<Held> held;
  std::string broken;  // non-empty: the reason the communicator is unusable
  std::map<std::string, std::unique_ptr<Plan>> plans;

  // ------------------------------------------------------------ set-up
  void init() {
    me = boot.rank;
    N = boot.size;
    static bool warned = false;
    if (boot.job_key.empty() && N > 1 && me == 0 && !warned) {
      warned = true;
      fprintf(stderr,
              "railcoll: RAILCOLL_JOB_KEY is not set: connections are checked for the job and communicator but not "
              "authenticated (railcoll run and railcoll cluster run set it; with another launcher give every rank "
              "the same secret)\n");
    }
    rail_addr = resolve_rails(boot.rails_spec);
    int comm_index = process_comm_index++;
    double deadline = now_seconds() + boot.timeout;

    std::unique_ptr<StoreClient> store;
    std::vector<std::string> info(N);
    int rails_n = static_cast<int>(rail_addr.size());
    std::vector<int> ports;
    for (auto& a : rail_addr) {
      int port = 0;
      listen_fds.push_back(tcp_listen(a, 0, &port));
      ports.push_back(port);
    }
    if (N > 1) {
      auto hp = split_host_port(boot.store);
      if (me == 0) {
        try {
          store_server = std::make_unique<StoreServer>(hp.first, hp.second, boot.job_key, boot.job_id);
        } catch (const RuntimeError& e) {
          throw RuntimeError(Status::Bootstrap, std::string("rank 0 cannot serve the store: ") + e.what());
        }
      }
      store = std::make_unique<StoreClient>(hp.first, hp.second, boot.job_key, boot.job_id, deadline);
      std::string prefix = "c" + std::to_string(comm_index) + "/";
      if (me == 0) store->set(prefix + "job", boot.job_id.empty() ? std::to_string(getpid()) + "-" + std::to_string(static_cast<long>(now_seconds() * 1e6)) : boot.job_id);
      job = store->get(prefix + "job", deadline);
      std::ostringstream mine;
      mine << boot.node_id << "|" << rails_n;
      for (int r = 0; r < rails_n; ++r) mine << "|" << rail_addr[r] << ":" << ports[r];
      listen_nonce = random_bytes(kListenNonce);
      mine << "|" << to_hex(listen_nonce.data(), listen_nonce.size());
      store->set(prefix + "rank/" + std::to_string(me), mine.str());
      for (int r = 0; r < N; ++r) info[r] = store->get(prefix + "rank/" + std::to_string(r), deadline);
    } else {
      job = boot.job_id.empty() ? std::to_string(getpid()) : boot.job_id;
      info[0] = boot.node_id + "|" + std::to_string(rails_n);
    }
    comm_id = fnv(job) ^ static_cast<uint64_t>(comm_index);

    // Node identity -> topology; every rank must have the same number of rails.
    std::vector<std::vector<std::string>> fields(N);
    std::map<std::string, int> node_ids;
    std::vector<int> node_of(N);
    for (int r = 0; r < N; ++r) {
      std::stringstream ss(info[r]);
      for (std::string f; std::getline(ss, f, '|');) fields[r].push_back(f);
      if (fields[r].size() < 2 || (N > 1 && fields[r].size() != 3 + static_cast<size_t>(rails_n)))
        throw RuntimeError(Status::Protocol, "malformed store entry of rank " + std::to_string(r));
      node_of[r] = node_ids.emplace(fields[r][0], static_cast<int>(node_ids.size())).first->second;
      if (std::stoi(fields[r][1]) != rails_n)
        throw RuntimeError(Status::Mismatch, "rank " + std::to_string(r) + " has " + fields[r][1] +
                                                      " rails, this rank " + std::to_string(rails_n) +
                                                      " (check RAILCOLL_RAILS)");
    }
    // Topology::from_node_map renumbers ids ascending: first appearance order is kept.
    topo = Topology::from_node_map(node_of, rails_n);
    node = topo.node_of(me);
    if (topo.node_size(node) > kMaxLocalRanks)
      throw RuntimeError(Status::Unsupported, "more than " + std::to_string(kMaxLocalRanks) + " ranks on one node");

    connect_peers(fields, "railcoll/" + job + "/" + std::to_string(comm_index) + "/", deadline);

    map_node_shm(seg, store.get(), job, comm_index, topo, me, boot.shm_bytes, deadline);
    if (store) {
      // Rank 0 keeps serving until everyone has finished starting.
      std::string prefix = "c" + std::to_string(comm_index) + "/";
      store->set(prefix + "ready/" + std::to_string(me), "1");
      if (me == 0)
        for (int r = 0; r < N; ++r) store->get(prefix + "ready/" + std::to_string(r), deadline);
    }
    store.reset();
    if (store_server) store_server->stop();
  }

  // Whatever set-up or a call left open (the normal path closes in close_all).
  ~Impl() {
    if (seg.shm) munmap(seg.shm, seg.bytes);
  }

  // ------------------------------------------------------------ errors
  // Marks the communicator broken and tells every peer, so nobody waits for the
  // deadline; an abort received from a peer is not passed on (its sender told all).
  [[noreturn]] void fail(Status code, const std::string& msg, bool tell_peers = true) override {
    bool first = broken.empty();
    if (first) broken = msg;
    if (first && tell_peers) {
      for (auto& c : conns) {
        if (c.closed) continue;
        FrameHeader h = header(Frame::Abort, -1);
        std::string text = msg;
        if (text.size() > 2000) text.resize(2000);
        h.length = text.size();
        std::string frame(reinterpret_cast<char*>(&h), sizeof h);
        frame += text;
        send(c.fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    }
    in_call = false;
    throw RuntimeError(code, msg);
  }

  FrameHeader header(Frame type, int op) const override {
    FrameHeader h{};
    h.magic = kWireMagic;
    h.version = kWireVersion;
    h.type = static_cast<uint16_t>(type);
    h.comm = comm_id;
    h.seq = seq;
    h.call_sig = plan ? plan->sig : 0;
    h.sender = me;
    h.op = op;
    return h;
  }

  // ------------------------------------------------------------ memory
  char* resolve(const Span& sp) {
    switch (sp.region) {
      case Region::Send: return const_cast<char*>(static_cast<const char*>(bufs.send)) + sp.offset;
      case Region::Recv: return static_cast<char*>(bufs.recv) + sp.offset;
      case Region::Scratch: return scratch.data() + sp.offset;
      case Region::Shared: return seg.data + sp.offset;
    }
    return nullptr;
  }

  // Payload bytes [off, off+len) of a put, as destination (dst=true) or source iovecs.
  std::vector<iovec> payload_iov(const Op& op, uint64_t off, uint64_t len, bool dst) {
    std::vector<iovec> v;
    for_each_piece(op, off, len, dst, [&](const Span& s) { v.push_back({resolve(s), static_cast<size_t>(s.length)}); });
    return v;
  }

  // ------------------------------------------------------------ counters
  std::atomic<uint64_t>& node_counter(int index) { return seg.shm->counters[index]; }

  void bump(const CounterRef& c) {
    if (!c.on_node) {
      ++rank_counters[c.index];
      return;
    }
    node_counter(c.index).fetch_add(1, std::memory_order_seq_cst);
    // Wake local ranks that announced they block on a node counter.
    for (int r : topo.ranks_of(node)) {
      if (r == me || !seg.shm->waiting[topo.local_rank(r)].load(std::memory_order_seq_cst)) continue;
      Conn& c2 = conns[conn_of[r][0]];
      if (c2.closed) continue;
      SendItem it;
      it.hdr = header(Frame::Wake, -1);
      c2.out.push_back(std::move(it));
    }
  }

  // ------------------------------------------------------------ progress
  void queue_put(const Op& op, int op_index) {
    uint64_t total = op.bytes();
    auto parts = put_parts(*plan, topo, me, op);
    uint64_t off = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      bool moved;
      Conn& c = route(op.peer, parts[p].first, &moved);
      SendItem it;
      it.hdr = header(Frame::Data, op_index);
      if (moved) it.hdr.flags |= kFlagMoved;
      it.hdr.part = static_cast<uint16_t>(p);
      it.hdr.nparts = static_cast<uint16_t>(parts.size());
      it.hdr.offset = off;
      it.hdr.length = parts[p].second;
      it.hdr.total = total;
      it.iov = payload_iov(op, off, parts[p].second, false);
      off += parts[p].second;
      if (boot.replay_call == seq && !replay) {  // a test hook: keep a copy to replay next call
        replay = std::make_unique<SendItem>(SendItem{it.hdr, {}, {}, 0});
        for (auto& v : it.iov) replay->owned.append(static_cast<char*>(v.iov_base), v.iov_len);
        replay_conn = static_cast<int>(&c - conns.data());
      }
      c.out.push_back(std::move(it));
    }
  }

  bool pending_sends() const {
    for (auto& c : conns)
      if (!c.out.empty()) return true;
    return false;
  }

  void drive_sends(Conn& c) {
    while (!c.out.empty()) {
      SendItem& it = c.out.front();
      iovec v[64];
      int n = 0;
      size_t skip = it.done;
      auto add = [&](void* base, size_t len) {
        if (n >= 64) return;
        if (skip >= len) {
          skip -= len;
          return;
        }
        v[n++] = {static_cast<char*>(base) + skip, len - skip};
        skip = 0;
      };
      add(&it.hdr, sizeof it.hdr);
      for (auto& p : it.iov) add(p.iov_base, p.iov_len);
      if (!it.owned.empty()) add(it.owned.data(), it.owned.size());
      msghdr m{};
      m.msg_iov = v;
      m.msg_iovlen = static_cast<size_t>(n);
      ssize_t w = sendmsg(c.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        if (c.rail >= 0) return rail_failed(c, std::string("refused a send: ") + strerror(errno));
        c.closed = true;
        fail(Status::Peer, "lost the connection to " + c.name() + ": " + strerror(errno));
      }
      it.done += static_cast<size_t>(w);
      c.written += static_cast<uint64_t>(w);
      if (it.done < it.total()) return;
      it.end = c.written;
      if (c.rail >= 0 && tracked(it.hdr.type)) c.unacked.push_back(std::move(it));
      c.out.pop_front();
    }
  }

  void protocol_error(Conn& c, const std::string& what) {
    fail(Status::Protocol, "rejected a frame from " + c.name() + ": " + what);
  }

  // A Data or Notify frame for the current call: checks it against the plan and
  // returns where its payload goes.
  const Op& check_frame(Conn& c, const FrameHeader& h, int rail) {
    std::string why;
    bool mismatch = false;
    const Op* op = match_frame(*plan, topo, me, h, rail, &why, &mismatch);
    if (mismatch) fail(Status::Mismatch, c.name() + " " + why);
    if (!op) protocol_error(c, why);
    return *op;
  }

  // Counts a part; a part seen twice in one call is a replay and is refused,
  // unless it was sent again after a rail failed (then the copy is dropped).
  void part_arrived(Conn& c, const FrameHeader& h, const Op& op) {
    bool complete = false;
    if (!arrivals.add(h, &complete) && !(h.flags & kFlagMoved))
      protocol_error(c, "op #" + std::to_string(h.op) + " part " + std::to_string(h.part) +
                            " arrived twice in call " + std::to_string(h.seq) + " (a replayed frame)");
    if (complete) bump(op.counter);
  }

  void on_header(Conn& c) {
    FrameHeader& h = c.hdr;
    if (std::string why = header_problem(h, comm_id, c.peer); !why.empty()) protocol_error(c, why);
    c.payload_got = 0;
    c.dst.clear();
    switch (static_cast<Frame>(h.type)) {
      case Frame::RailDown: {
        if (h.length || c.rail < 0 || h.op < 0 || h.op >= topo.rails() || h.op == c.rail)
          protocol_error(c, "malformed rail-down notice");
        Conn& gone = conns[conn_of[c.peer][h.op]];
        if (gone.closed) return;
        gone.drain_to = static_cast<int64_t>(h.offset);
        if (!gone.down) rail_failed(gone, "was given up by rank " + std::to_string(c.peer));
        close_if_drained(gone);
        return;
      }
      case Frame::Bye:
        c.bye = true;
        return;
      case Frame::Wake:
        return;
      case Frame::Ping:  // answered whatever this rank is waiting for
        if (h.length) protocol_error(c, "ping with a payload");
        if (!c.down) c.out.push_back(SendItem{header(Frame::Pong, -1), {}, {}, 0, 0});
        return;
      case Frame::Pong:
        if (h.length) protocol_error(c, "pong with a payload");
        answered.insert(h.sender);
        return;
      case Frame::Abort:
        if (h.length > kMaxAbortText) protocol_error(c, "abort text too long");
        c.mode = Conn::Text;
        c.buffer.assign(h.length, 0);
        c.dst = {{c.buffer.data(), c.buffer.size()}};
        break;
      case Frame::Data:
      case Frame::Notify:
        if (in_call && h.seq == seq) {
          const Op& op = check_frame(c, h, c.rail);
          if ((h.flags & kFlagMoved) && arrivals.has(h)) {  // sent again, but the first copy came
            drop_payload(c);
          } else if (h.type == static_cast<uint16_t>(Frame::Notify)) {
            part_arrived(c, h, op);
            return;
          } else {
            c.mode = Conn::Direct;
            c.dst = payload_iov(op, h.offset, h.length, true);
          }
        } else if (h.seq < seq && (h.flags & kFlagMoved)) {  // a copy for a call that is over
          drop_payload(c);
        } else if (h.seq >= seq) {  // for a call this rank has not entered yet: hold it
          c.mode = Conn::Hold;
          c.buffer.assign(h.length, 0);
          c.dst = {{c.buffer.data(), c.buffer.size()}};
        } else {
          protocol_error(c, "stale frame for call " + std::to_string(h.seq) + " (this rank is at call " +
                                std::to_string(seq) + ")");
        }
        break;
      default:
        protocol_error(c, "unknown frame type " + std::to_string(h.type));
    }
    c.in_payload = h.length > 0;
    if (!c.in_payload) on_payload_done(c);
  }

  void drop_payload(Conn& c) {
    c.mode = Conn::Drop;
    c.buffer.assign(c.hdr.length, 0);
    c.dst = {{c.buffer.data(), c.buffer.size()}};
  }

  void on_payload_done(Conn& c) {
    FrameHeader& h = c.hdr;
    c.in_payload = false;
    if (c.mode == Conn::Drop) return c.buffer.clear();
    if (h.type == static_cast<uint16_t>(Frame::Abort)) {
      fail(Status::Peer, "rank " + std::to_string(h.sender) + " aborted the collective: " +
                                  std::string(c.buffer.begin(), c.buffer.end()), false);
    }
    if (c.mode == Conn::Hold) {
      Held frame{h, c.rail, std::move(c.buffer)};
      c.buffer.clear();
      // Its header came before this rank entered the call; if the call has
      // started meanwhile, the queue of held frames was already drained.
      if (in_call && h.seq == seq) return apply_held(frame);
      held.push_back(std::move(frame));
      return;
    }
    part_arrived(c, h, plan->incoming.at(key_of(h.sender, h.op)));
  }

  void drive_recv(Conn& c) override {
    for (int rounds = 0; rounds < 64; ++rounds) {
      // A given-up connection is read only up to what the peer says its kernel confirmed.
      size_t limit = c.down && c.drain_to >= 0 ? static_cast<size_t>(c.drain_to - static_cast<int64_t>(c.nread)) : SIZE_MAX;
      if (c.down && c.drain_to >= 0 && static_cast<int64_t>(c.nread) >= c.drain_to) return close_if_drained(c);
      if (!c.in_payload) {
        ssize_t r = recv(c.fd, reinterpret_cast<char*>(&c.hdr) + c.hdr_got, std::min(limit, sizeof c.hdr - c.hdr_got),
                         MSG_DONTWAIT);
        if (r == 0) return on_eof(c);
        if (r < 0) {
          if (errno == EAGAIN || errno == EINTR) return;
          return on_eof(c);
        }
        c.hdr_got += static_cast<size_t>(r);
        c.nread += static_cast<uint64_t>(r);
        c.heard_at = now_seconds();
        if (c.hdr_got < sizeof c.hdr) continue;
        c.hdr_got = 0;
        on_header(c);
        if (c.bye || c.closed) return;
        continue;
      }
      // Payload: straight into its destination (scatter), skipping what arrived.
      iovec v[64];
      int n = 0;
      size_t skip = c.payload_got;
      for (auto& d : c.dst) {
        if (n >= 64 || limit == 0) break;
        if (skip >= d.iov_len) {
          skip -= d.iov_len;
          continue;
        }
        size_t len = std::min(limit, d.iov_len - skip);
        v[n++] = {static_cast<char*>(d.iov_base) + skip, len};
        limit -= len;
        skip = 0;
      }
      msghdr m{};
      m.msg_iov = v;
      m.msg_iovlen = static_cast<size_t>(n);
      ssize_t r = recvmsg(c.fd, &m, MSG_DONTWAIT);
      if (r == 0) return on_eof(c);
      if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        return on_eof(c);
      }
      c.payload_got += static_cast<size_t>(r);
      c.nread += static_cast<uint64_t>(r);
      c.heard_at = now_seconds();
      if (c.payload_got == c.hdr.length) on_payload_done(c);
      if (c.closed) return;
    }
  }

  void on_eof(Conn& c) {
    if (c.closed) return;
    if (c.down) {  // a given-up connection that the peer closed
      c.drain_to = 0;
      c.told = true;
      return close_if_drained(c);
    }
    // A rail that closes while the peer's other rails stay open failed alone.
    if (c.rail >= 0 && !c.bye) {
      bool all_closing = true;
      for (Conn* d : other_rails(c)) {
        pollfd p{d->fd, POLLRDHUP, 0};
        all_closing &= poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
      }
      if (!all_closing) return rail_failed(c, "was closed (reset by the other side or the network)");
    }
    c.closed = true;
    if (!c.bye)
      fail(Status::Peer, c.name() + " closed its connection without saying goodbye: it exited or died");
  }

  // One round of progress on every connection; blocks up to `wait_s` for one.
  // Also: the rail listeners (reconnections, strangers), acks, rail health.
  void progress(double wait_s) {
    std::vector<pollfd> p;
    p.reserve(conns.size() + listen_fds.size() + pending.size());
    for (auto& c : conns)
      p.push_back({c.fd, static_cast<short>(c.connecting ? POLLOUT : c.closed ? 0 : (POLLIN | (c.out.empty() ? 0 : POLLOUT))), 0});
    for (int fd : listen_fds) p.push_back({fd, POLLIN, 0});
    for (auto& q : pending) p.push_back({q.fd, POLLIN, 0});
    int timeout_ms = wait_s <= 0 ? 0 : std::max(1, static_cast<int>(wait_s * 1000));
    int r = poll(p.data(), p.size(), timeout_ms);
    if (r < 0 && errno != EINTR) fail(Status::Network, std::string("poll: ") + strerror(errno));
    double now = now_seconds();
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      if (c.connecting) {
        if (p[i].revents) finish_connect(c, now);
        continue;
      }
      if (c.closed) continue;
      if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) drive_recv(c);
      if (!c.out.empty() && !c.closed) drive_sends(c);
    }
    if (r > 0 && p.size() > conns.size()) serve_door(p, conns.size(), now);
    check_rails(now);
  }

  // Blocks until cond() holds, making progress; spins briefly, then sleeps in poll
  // (16 ranks share 2 cores here: a spinning wait steals a peer's core).
  //
  // Half-way to the deadline it pings every peer: a peer in a railcoll call
  // answers at once, so at the deadline the error can name the ones that did
  // not (stopped, hung, or busy outside railcoll) rather than only the ranks
  // this one was waiting for, which may themselves be waiting on the culprit.
  void wait_until(const std::function<bool()>& cond, bool node_counter, const std::function<std::string()>& what) {
    double start = now_seconds(), deadline = start + boot.timeout;
    bool probed = false;
    for (int spin = 0;; ++spin) {
      if (cond()) return;
      progress(0);
      if (cond()) return;
      // Spin, yielding the core, for a short budget (RAILCOLL_SPIN_US); then sleep.
      if (spin < 4 || now_seconds() - start < boot.spin_seconds) {
        if (spin >= 4) sched_yield();
        continue;
      }
      std::atomic<uint32_t>* flag = node_counter ? &seg.shm->waiting[topo.local_rank(me)] : nullptr;
      if (flag) {
        flag->store(1, std::memory_order_seq_cst);
        if (cond()) {
          flag->store(0);
          return;
        }
      }
      progress(std::min(0.05, std::max(0.0, deadline - now_seconds())));
      if (flag) flag->store(0, std::memory_order_release);
      if (!probed && now_seconds() > start + boot.timeout / 2) {
        probed = true;
        probe_peers();
      }
      if (now_seconds() > deadline)
        fail(Status::Timeout, "timed out after " + seconds_text(boot.timeout) + " " + what() + silent_peers());
    }
  }

  void probe_peers() {
    answered.clear();
    for (int p = 0; p < N; ++p) {
      if (p == me) continue;
      for (int ci : conn_of[p]) {
        if (ci < 0 || conns[ci].closed) continue;
        conns[ci].out.push_back(SendItem{header(Frame::Ping, -1), {}, {}, 0, 0});
        break;
      }
    }
  }

  // "; rank 5 did not answer ..." for the peers that ignored the probe.
  std::string silent_peers() {
    std::string list;
    int n = 0;
    for (int p = 0; p < N; ++p) {
      if (p == me || answered.count(p)) continue;
      if (n++ < 8) list += (n > 1 ? ", " : "") + std::to_string(p);
    }
    if (n == 0) return "; every peer answered a liveness probe";
    return std::string("; rank") + (n > 1 ? "s " : " ") + list + (n > 8 ? ", ..." : "") +
           " did not answer a liveness probe (stopped, hung, or busy outside railcoll)";
  }

  // ------------------------------------------------------------ a call
  // Local ranks whose increments this rank has just waited for are in this call:
  // any of them with another signature passed other sizes or another algorithm.
  uint64_t call_word(const Plan& p) const { return (seq << 32) | (p.sig & 0xffffffffu); }
  void check_local_calls(const Plan& p) {
    const auto& ranks = topo.ranks_of(node);
    const uint64_t mine = call_word(p);
    for (size_t i = 0; i < ranks.size(); ++i) {
      uint64_t theirs = seg.shm->call[i].load(std::memory_order_acquire);
      if (ranks[i] != me && theirs >> 32 == (seq & 0xffffffffu) && theirs != mine)
        fail(Status::Mismatch, "local rank " + std::to_string(ranks[i]) + " is in a different call than this rank (" +
                                        p.what + "): the ranks disagree on the collective, its algorithm or its sizes");
    }
  }

  // The ranks whose messages for counter cref have not all arrived yet.
  std::string missing_senders(const CounterRef& cref) {
    std::ostringstream o;
    int shown = 0;
    for (auto& kv : plan->incoming) {
      if (!(kv.second.counter == cref) || arrivals.done(kv.first)) continue;
      if (shown++ < 6) o << (shown > 1 ? ", " : "") << "rank " << (kv.first >> 32) << " op #" << (kv.first & 0xffffffffu);
    }
    return shown ? " (still missing: " + o.str() + (shown > 6 ? ", ..." : "") + ")" : "";
  }

  // A frame that arrived before its call: checked, then copied into place.
  void apply_held(const Held& f) {
    Conn& c = conns[conn_of[f.hdr.sender][std::max(0, f.rail)]];
    const Op& op = check_frame(c, f.hdr, f.rail);
    if ((f.hdr.flags & kFlagMoved) && arrivals.has(f.hdr)) return;  // a copy sent again after a rail failed
    if (f.hdr.type == static_cast<uint16_t>(Frame::Data)) {
      size_t at = 0;
      for (auto& v : payload_iov(op, f.hdr.offset, f.hdr.length, true)) {
        memcpy(v.iov_base, f.payload.data() + at, v.iov_len);
        at += v.iov_len;
      }
    }
    part_arrived(c, f.hdr, op);
  }

  void run(const Plan& p, const Buffers& b) {
    if (!broken.empty()) throw RuntimeError(Status::Broken, "communicator is broken: " + broken);
    for (auto& c : conns)
      if (c.closed && !c.bye && !c.down) fail(Status::Peer, c.name() + " is gone");
    plan = &p;
    bufs = b;
    const Schedule& s = p.sched;
    if (s.shared_bytes[node] > seg.shm->capacity)
      throw RuntimeError(Status::Unsupported,
                         p.what + " needs " + std::to_string(s.shared_bytes[node]) +
                             " bytes of node-shared memory; RAILCOLL_SHM_MIB allows " +
                             std::to_string(seg.shm->capacity >> 20) + " MiB");
    if (s.node_counters > kMaxNodeCounters)
      throw RuntimeError(Status::Unsupported, p.what + " needs " + std::to_string(s.node_counters) +
                                                       " node counters; the shared segment has " +
                                                       std::to_string(kMaxNodeCounters));
    if (scratch.size() < s.scratch_bytes[me]) scratch.resize(s.scratch_bytes[me]);
    rank_counters.assign(std::max(1, s.rank_counters), 0);
    arrivals.clear();
    in_call = true;
    if (replay && seq == boot.replay_call + 2) {
      conns[replay_conn].out.push_back(std::move(*replay));
      replay.reset();
    }
    // Frames that arrived before this rank entered the call.
    for (auto it = held.begin(); it != held.end();) {
      if (it->hdr.seq != seq) {
        ++it;
        continue;
      }
      apply_held(*it);
      it = held.erase(it);
    }
    seg.shm->call[topo.local_rank(me)].store(call_word(p), std::memory_order_release);
    const auto& prog = s.programs[me];
    for (size_t i = 0; i < prog.size(); ++i) {
      const Op& op = prog[i];
      switch (op.kind) {
        case OpKind::Copy:
          for (auto& sg : op.segs) memmove(resolve(sg.dst), resolve(sg.src), sg.src.length);
          break;
        case OpKind::Reduce:
          for (auto& sg : op.segs) reduce_into(s.dtype, s.redop, resolve(sg.dst), resolve(sg.src), sg.src.length);
          break;
        case OpKind::Put:
          if (memcpy_put(topo, me, op)) {
            for (auto& sg : op.segs) memcpy(resolve(sg.dst), resolve(sg.src), sg.src.length);
            signal(op.counter, static_cast<int>(i), op.peer);
          } else {
            queue_put(op, static_cast<int>(i));
          }
          progress(0);
          break;
        case OpKind::Signal:
          signal(op.counter, static_cast<int>(i), -1);
          break;
        case OpKind::Wait: {
          const CounterRef c = op.counter;
          uint64_t target = op.value + (c.on_node ? node_base[c.index] : 0);
          wait_until(
              [&] {
                return c.on_node ? node_counter(c.index).load(std::memory_order_seq_cst) >= target
                                 : rank_counters[c.index] >= target;
              },
              c.on_node,
              [&] {
                return "waiting in " + p.what + ", step " + std::to_string(op.step) + ", for " +
                       (c.on_node ? "node" : "rank") + " counter " + std::to_string(c.index) + " to reach " +
                       std::to_string(op.value) + missing_senders(c);
              });
          if (c.on_node) check_local_calls(p);
          break;
        }
        case OpKind::Flush:
          wait_until([&] { return !pending_sends(); }, false, [&] { return "flushing sends in " + p.what; });
          break;
      }
    }
    wait_until([&] { return !pending_sends(); }, false, [&] { return "flushing sends at the end of " + p.what; });
    keep_unconfirmed();
    for (size_t i = 0; i < p.node_increments.size(); ++i) node_base[i] += p.node_increments[i];
    in_call = false;
    plan = nullptr;
    ++seq;
  }

  // A signal: local counters directly, others with a Notify frame to the rank
  // that owns the counter (a node counter elsewhere: to that node's leader).
  void signal(const CounterRef& c, int op_index, int via) {
    bool mine = c.on_node ? c.owner == node : c.owner == me;
    if (mine) return bump(c);
    int to = via >= 0 ? via : c.on_node ? topo.leader(c.owner) : c.owner;
    bool moved;
    Conn& conn = route(to, 0, &moved);
    SendItem it;
    it.hdr = header(Frame::Notify, op_index);
    if (moved) it.hdr.flags |= kFlagMoved;
    conn.out.push_back(std::move(it));
  }

  // ------------------------------------------------------------ the end
  void close_all() {
    double deadline = now_seconds() + std::min(5.0, boot.timeout);
    if (broken.empty()) {
      try {
        wait_until([&] { return !pending_sends(); }, false, [] { return std::string("flushing at close"); });
      } catch (...) {
      }
    }
    goodbye(deadline);
    if (seg.shm) munmap(seg.shm, seg.bytes);
    seg.shm = nullptr;
  }
};

// ---------------------------------------------------------------- Comm --

Comm::Comm(const Bootstrap& b) : impl_(std::make_unique<Impl>()) {
  impl_->boot = b;
  impl_->init();
}

Comm::~Comm() { impl_->close_all(); }

int Comm::rank() const { return impl_->me; }
int Comm::size() const { return impl_->N; }
const Topology& Comm::topo() const { return impl_->topo; }
int Comm::rails() const { return impl_->topo.rails(); }
int Comm::rails_up() const {
  int up = 0;
  for (int n : impl_->rail_down_count) up += n == 0;
  return impl_->rail_down_count.empty() ? rails() : up;
}
double Comm::timeout() const { return impl_->boot.timeout; }

void Comm::run(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
               const AlgoOptions& call_opts, const Buffers& b) {
  AlgoOptions opts = call_opts;
  opts.stripe_threshold = impl_->boot.stripe_bytes;
  std::ostringstream key;
  key << collective_name(collective) << "/" << algorithm << "/" << opts.stripe_threshold << "/" << opts.concurrency << "/root "
      << opts.root << "/" << dtype_name(opts.dtype) << "/" << redop_name(opts.redop);
  for (auto c : counts) key << "," << c;
  if (impl_->plans.size() >= 256 && !impl_->plans.count(key.str())) impl_->plans.clear();  // bounded cache
  auto& slot = impl_->plans[key.str()];
  if (!slot) slot = make_plan(impl_->topo, impl_->me, collective, algorithm, counts, opts, key.str());
  impl_->run(*slot, b);
}


}  // namespace railcoll::rt
