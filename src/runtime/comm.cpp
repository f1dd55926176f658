#include "runtime/comm.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "railcoll/railcoll.h"
#include "runtime/auth.hpp"
#include "runtime/plan.hpp"
#include "runtime/reduce.hpp"
#include "runtime/store.hpp"
#include "runtime/wire.hpp"

namespace railcoll::rt {

// ---------------------------------------------------------------- bootstrap --

namespace {

const char* env(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, int dflt) {
  const char* v = env(name);
  if (!v) return dflt;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  if (*end || x < 0 || x > (1 << 24))
    throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, std::string(name) + "='" + v + "' is not a valid number");
  return static_cast<int>(x);
}

}  // namespace

Bootstrap settings_from_env() {
  Bootstrap b;
  if (env("RAILCOLL_JOB_ID")) b.job_id = env("RAILCOLL_JOB_ID");
  if (env("RAILCOLL_JOB_KEY")) b.job_key = env("RAILCOLL_JOB_KEY");
  if (env("RAILCOLL_NODE")) {
    b.node_id = std::string("node:") + env("RAILCOLL_NODE");
  } else {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    b.node_id = std::string("host:") + host;
  }
  if (env("RAILCOLL_RAILS")) b.rails_spec = env("RAILCOLL_RAILS");
  if (const char* t = env("RAILCOLL_TIMEOUT")) {
    char* end = nullptr;
    double x = strtod(t, &end);
    if (*end || !(x > 0) || x > 86400 * 7)
      throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, std::string("RAILCOLL_TIMEOUT='") + t + "' is not a number of seconds");
    b.timeout = x;
  }
  if (const char* t = env("RAILCOLL_RAIL_TIMEOUT")) {
    char* end = nullptr;
    double x = strtod(t, &end);
    if (*end || !(x > 0) || x > 3600)
      throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, std::string("RAILCOLL_RAIL_TIMEOUT='") + t + "' is not a number of seconds");
    b.rail_timeout = x;
  }
  if (env("RAILCOLL_STRIPE_BYTES")) {
    int x = env_int("RAILCOLL_STRIPE_BYTES", 1024);
    if (x < 1) throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "RAILCOLL_STRIPE_BYTES must be at least 1");
    b.stripe_bytes = static_cast<uint64_t>(x);
  }
  if (env("RAILCOLL_SPIN_US")) b.spin_seconds = env_int("RAILCOLL_SPIN_US", 0) * 1e-6;
  if (env("RAILCOLL_SHM_MIB")) b.shm_bytes = static_cast<uint64_t>(std::max(1, env_int("RAILCOLL_SHM_MIB", 256))) << 20;
  if (env("RAILCOLL_TEST_REPLAY_CALL")) b.replay_call = static_cast<uint64_t>(env_int("RAILCOLL_TEST_REPLAY_CALL", 0));
  return b;
}

Bootstrap bootstrap_from_env() {
  Bootstrap b = settings_from_env();
  struct Source {
    const char *rank, *size, *name;
  };
  const Source sources[] = {{"RAILCOLL_RANK", "RAILCOLL_SIZE", "railcoll"},
                            {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
                            {"PMI_RANK", "PMI_SIZE", "Hydra"},
                            {"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
                            {"RANK", "WORLD_SIZE", "torchrun"}};
  b.source = "none (a single process)";
  for (auto& s : sources) {
    if (!env(s.rank) || !env(s.size)) continue;
    b.rank = env_int(s.rank, 0);
    b.size = env_int(s.size, 1);
    b.source = s.name;
    break;
  }
  if (b.size < 1 || b.rank >= b.size)
    throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "rank " + std::to_string(b.rank) + " is not below size " +
                                                   std::to_string(b.size) + " (from " + b.source + " variables)");
  if (env("RAILCOLL_STORE"))
    b.store = env("RAILCOLL_STORE");
  else if (env("MASTER_ADDR") && env("MASTER_PORT"))
    b.store = std::string(env("MASTER_ADDR")) + ":" + env("MASTER_PORT");
  if (b.size > 1 && b.store.empty())
    throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP,
                       "no store address: set RAILCOLL_STORE=host:port (rank 0 listens there) or MASTER_ADDR and "
                       "MASTER_PORT; railcoll run and railcoll cluster run set it");
  return b;
}

// ---------------------------------------------------------------- shared memory --

namespace {

constexpr int kMaxNodeCounters = 256;
constexpr int kMaxLocalRanks = 512;
constexpr uint64_t kShmMagic = 0x5241494c434f4c4cull;  // "RAILCOLL"
constexpr size_t kShmHeader = 64 * 1024;

struct NodeShm {
  uint64_t magic;
  uint64_t capacity;
  std::atomic<uint64_t> counters[kMaxNodeCounters];
  std::atomic<uint32_t> waiting[kMaxLocalRanks];
  // The call each local rank is in, (sequence << 32) | 32 bits of its
  // signature in one word so a reader never sees half of a new call: data a
  // local peer leaves in shared memory carries no frame header, so ranks of a
  // node compare their calls here.
  std::atomic<uint64_t> call[kMaxLocalRanks];
};
static_assert(sizeof(NodeShm) <= kShmHeader, "shm header");

// ---------------------------------------------------------------- connections --

struct SendItem {
  FrameHeader hdr;
  std::vector<iovec> iov;  // payload pieces (memory stays valid until the call ends)
  std::string owned;       // payload owned by the item (Abort text)
  size_t done = 0;         // bytes of header+payload already written
  uint64_t end = 0;        // TCP: the connection's byte count once it is all written
  size_t total() const {
    size_t n = sizeof hdr + owned.size();
    for (auto& v : iov) n += v.iov_len;
    return n;
  }
};

struct Held {
  FrameHeader hdr;
  int rail;
  std::vector<char> payload;
};

struct Conn {
  int fd = -1;
  int peer = -1;
  int rail = -1;  // -1: the Unix socket to a local peer
  bool closed = false, bye = false;
  std::deque<SendItem> out;
  // receive state
  FrameHeader hdr{};
  size_t hdr_got = 0;
  bool in_payload = false;
  std::vector<iovec> dst;   // where the payload goes
  size_t payload_got = 0;
  std::vector<char> buffer;  // held, text or dropped payloads
  enum { Direct, Hold, Text, Drop } mode = Direct;
  // Rail failover (TCP only): Data and Notify frames stay in `unacked` after
  // they are written until the peer's kernel has acknowledged their last byte
  // (written - SIOCOUTQ >= end), so they can be sent again on another rail if
  // this one breaks or stalls. No acknowledgement frames: the kernel's do.
  bool down = false;               // given up: nothing more is sent on it; traffic on the other rails
  std::deque<SendItem> unacked;
  uint64_t written = 0, nread = 0;  // bytes through this connection each way
  bool told = false;               // our RailDown for it went to the peer
  int64_t drain_to = -1;           // the peer's RailDown: read this many bytes, then close
  double quiet_since = 0;          // last sign the rail moves our bytes (SIOCOUTQ dropped)
  double heard_at = 0;             // last byte received on it
  int outq = -1;                   // bytes in the kernel's send queue at the last look
  bool probed = false;             // other rails pinged for evidence the peer is alive
  double probe_at = 0;
  double down_at = 0;
  uint32_t generation = 1;         // connections made for this (peer, rail); in the Hello's seq
  double retry_at = 0;             // the lower rank reconnects a down rail from then
  bool connecting = false;
  double connect_until = 0;
  std::string name() const {
    return "rank " + std::to_string(peer) + (rail >= 0 ? " (rail " + std::to_string(rail) + ")" : " (same node)");
  }
};

int process_comm_index = 0;

bool tracked(uint16_t type) {
  return type == static_cast<uint16_t>(Frame::Data) || type == static_cast<uint16_t>(Frame::Notify);
}

}  // namespace

struct Comm::Impl {
  Bootstrap boot;
  Topology topo;
  int me = 0, N = 1, node = 0;
  std::vector<std::string> rail_addr;
  uint64_t comm_id = 0;
  std::string job;
  std::vector<Conn> conns;                       // all connections
  std::vector<std::vector<int>> conn_of;         // [peer][rail or 0 for local] -> index in conns
  NodeShm* shm = nullptr;
  char* shm_data = nullptr;
  size_t shm_map_bytes = 0;
  std::unique_ptr<StoreServer> store_server;
  std::vector<int> listen_fds;  // one per rail, then the Unix one; open during set-up
  std::string listen_nonce;     // proves a Hello is for this communicator (in the store)
  std::set<int> answered;       // peers that answered a liveness probe in this wait
  std::unique_ptr<SendItem> replay;  // RAILCOLL_TEST_REPLAY_CALL: the frame to send again
  std::vector<std::vector<std::string>> peer_addr;  // [peer][rail] "host:port" of its listener
  std::vector<std::string> peer_nonce;              // [peer] its listen nonce (for reconnect Hellos)
  std::vector<int> rail_down_count;                 // [rail] connections given up on it
  double next_rail_check = 0;
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
          throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, std::string("rank 0 cannot serve the store: ") + e.what());
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
        throw RuntimeError(RAILCOLL_ERR_PROTOCOL, "malformed store entry of rank " + std::to_string(r));
      node_of[r] = node_ids.emplace(fields[r][0], static_cast<int>(node_ids.size())).first->second;
      if (std::stoi(fields[r][1]) != rails_n)
        throw RuntimeError(RAILCOLL_ERR_MISMATCH, "rank " + std::to_string(r) + " has " + fields[r][1] +
                                                      " rails, this rank " + std::to_string(rails_n) +
                                                      " (check RAILCOLL_RAILS)");
    }
    // Topology::from_node_map renumbers ids ascending: first appearance order is kept.
    topo = Topology::from_node_map(node_of, rails_n);
    node = topo.node_of(me);
    if (topo.node_size(node) > kMaxLocalRanks)
      throw RuntimeError(RAILCOLL_ERR_UNSUPPORTED, "more than " + std::to_string(kMaxLocalRanks) + " ranks on one node");

    // Connections: the lower rank connects, the higher accepts; one TCP socket per
    // rail to every rank on another node, one Unix socket to every local rank.
    conn_of.assign(N, std::vector<int>(rails_n, -1));
    std::string uds_prefix = "railcoll/" + job + "/" + std::to_string(comm_index) + "/";
    if (topo.node_size(node) > 1) listen_fds.push_back(unix_listen(uds_prefix + std::to_string(me)));
    auto hello = [&](int fd, int peer, int rail, const std::string& nonce) {
      std::string frame = hello_frame(peer, rail, 1, nonce);
      write_all(fd, frame.data(), frame.size(), deadline,
                "rank " + std::to_string(peer) + (rail >= 0 ? " rail " + std::to_string(rail) : ""));
    };
    peer_addr.assign(N, {});
    peer_nonce.assign(N, "");
    for (int j = 0; j < N && N > 1; ++j) {
      peer_nonce[j] = from_hex(fields[j].back());
      for (int r = 0; r < rails_n; ++r) peer_addr[j].push_back(fields[j][2 + r]);
    }
    rail_down_count.assign(rails_n, 0);
    int expected = 0;
    for (int j = 0; j < N; ++j) {
      if (j == me) continue;
      bool local = topo.same_node(j, me);
      if (j < me) {
        expected += local ? 1 : rails_n;
        continue;
      }
      std::string nonce = from_hex(fields[j].back());
      if (local) {
        int fd = unix_connect(uds_prefix + std::to_string(j), deadline);
        add_conn(fd, j, -1);
        hello(fd, j, -1, nonce);
      } else {
        for (int r = 0; r < rails_n; ++r) {
          auto hp = split_host_port(fields[j][2 + r]);
          int fd = tcp_connect(rail_addr[r], hp.first, hp.second, deadline);
          add_conn(fd, j, r);
          hello(fd, j, r, nonce);
        }
      }
    }
    accept_peers(expected, deadline);
    // The rail listeners stay open: a rail that failed is reconnected there.
    if (listen_fds.size() > rail_addr.size()) close(listen_fds.back()), listen_fds.pop_back();
    if (N == 1 || topo.nnodes() == 1) {
      for (int fd : listen_fds) close(fd);
      listen_fds.clear();
    }

    map_node_shm(store.get(), comm_index, deadline);
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

  // ------------------------------------------------------------ the door
  // Connections of lower ranks: at set-up, and later when a rail reconnects.
  // Each must begin with a Hello for this communicator whose proof shows the
  // job key; anything else (a stranger, a wrong key, another job, garbage,
  // silence, an old Hello replayed) is closed and logged in one line.
  struct Pending {
    int fd;
    bool tcp;
    double until;
    std::string in;
  };
  std::vector<Pending> pending;

  void refuse(Pending& q, const std::string& why) {
    fprintf(stderr, "railcoll: rank %d refused a connection from %s: %s\n", me, describe_peer(q.fd).c_str(),
            why.c_str());
    close(q.fd);
    q.fd = -1;
  }

  // "" when the complete header in q may be a peer's Hello, else why not.
  std::string hello_problem(const Pending& q, FrameHeader& h) {
    memcpy(&h, q.in.data(), sizeof h);
    if (h.magic != kWireMagic) return "it does not speak the railcoll protocol";
    if (h.version != kWireVersion)
      return "wire version " + std::to_string(h.version) + ", this rank speaks " + std::to_string(kWireVersion);
    if (h.type != static_cast<uint16_t>(Frame::Hello) || h.length != kHelloProof) return "its first frame is not a hello";
    if (h.comm != comm_id) return "it belongs to another job or communicator";
    if (h.sender < 0 || h.sender >= me) return "it claims to be rank " + std::to_string(h.sender);
    bool local = topo.same_node(h.sender, me);
    if (local == q.tcp || (q.tcp && (h.op < 0 || h.op >= topo.rails())) || (!q.tcp && h.op != -1))
      return "rank " + std::to_string(h.sender) + " cannot connect on this socket as rail " + std::to_string(h.op);
    return "";
  }

  // Reads what q has sent; makes it a connection (true) or refuses it once it is
  // clear it is not one. `last`: set-up is over, refuse what is not yet a peer.
  bool examine(Pending& q, double now, bool last) {
    const size_t full = sizeof(FrameHeader) + kHelloProof;
    char buf[sizeof(FrameHeader) + kHelloProof];
    ssize_t r = recv(q.fd, buf, full - q.in.size(), MSG_DONTWAIT);
    if (r > 0) q.in.append(buf, static_cast<size_t>(r));
    FrameHeader h{};
    std::string why = q.in.size() >= sizeof h ? hello_problem(q, h) : "";
    if (why.empty() && q.in.size() == full) {
      std::string proof = hello_proof(boot.job_key, h, me, listen_nonce);
      if (!equal_constant_time(proof.data(), q.in.data() + sizeof h, kHelloProof)) {
        why = "wrong job key (RAILCOLL_JOB_KEY)";
      } else {
        int ci = conn_of[h.sender][std::max(0, h.op)];
        // Every connection of a (rank, rail) has a higher generation than the last.
        if (ci >= 0 && h.seq <= conns[ci].generation) {
          refuse(q, "an old hello of rank " + std::to_string(h.sender) + " rail " + std::to_string(h.op) +
                        " (a replay)");
          return false;
        }
        if (ci < 0)
          add_conn(q.fd, h.sender, h.op);
        else
          reconnected(conns[ci], q.fd, now);
        conns[conn_of[h.sender][std::max(0, h.op)]].generation = static_cast<uint32_t>(h.seq);
        q.fd = -1;
        return true;
      }
    }
    if (why.empty() && (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)))
      why = "it closed the connection before it said hello";
    if (why.empty() && now > q.until) why = "it sent no complete hello in time";
    if (why.empty() && last) why = "every peer of this communicator is already connected";
    if (!why.empty()) refuse(q, why);
    return false;
  }

  bool accept_new(size_t i, double now) {
    int fd = accept4(listen_fds[i], nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return false;
    bool tcp = i < rail_addr.size();
    tune_socket(fd, tcp);
    pending.push_back({fd, tcp, now + std::min(5.0, boot.timeout), ""});
    return true;
  }

  // One look at the listeners and the half-open connections; p holds their
  // poll results from index `at` on (listeners first).
  int serve_door(const std::vector<pollfd>& p, size_t at, double now) {
    int got = 0;
    for (size_t i = 0; i < pending.size(); ++i)
      if (p[at + listen_fds.size() + i].revents || now > pending[i].until) got += examine(pending[i], now, false);
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& q) { return q.fd < 0; }),
                  pending.end());
    for (size_t i = 0; i < listen_fds.size(); ++i)
      if (p[at + i].revents & POLLIN) accept_new(i, now);
    return got;
  }

  void accept_peers(int expected, double deadline) {
    for (int fd : listen_fds) set_nonblocking(fd);
    for (int got = 0; got < expected;) {
      double now = now_seconds();
      if (now > deadline)
        throw RuntimeError(RAILCOLL_ERR_TIMEOUT, "timed out waiting for peers to connect (" + std::to_string(got) +
                                                     " of " + std::to_string(expected) + " connections made)");
      std::vector<pollfd> p;
      for (int fd : listen_fds) p.push_back({fd, POLLIN, 0});
      for (auto& q : pending) p.push_back({q.fd, POLLIN, 0});
      poll(p.data(), p.size(), 100);
      got += serve_door(p, 0, now);
    }
    // Whoever else knocked during set-up is told no (and logged), rather than
    // left in the backlog.
    double now = now_seconds();
    for (size_t i = 0; i < listen_fds.size(); ++i)
      while (accept_new(i, now)) {
      }
    for (auto& q : pending) examine(q, now, true);
    pending.clear();
  }

  void add_conn(int fd, int peer, int rail) {
    Conn c;
    c.fd = fd;
    c.peer = peer;
    c.rail = rail;
    set_nonblocking(fd);
    conns.push_back(std::move(c));
    conn_of[peer][rail < 0 ? 0 : rail] = static_cast<int>(conns.size()) - 1;
  }

  // The Hello that opens a connection to `peer` on `rail` (-1: local); its seq is
  // the connection's generation, so an old Hello cannot open a new one.
  std::string hello_frame(int peer, int rail, uint32_t generation, const std::string& nonce) const {
    FrameHeader h = header(Frame::Hello, rail);
    h.seq = generation;
    h.length = kHelloProof;
    std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
    return frame + hello_proof(boot.job_key, h, peer, nonce);
  }

  // ------------------------------------------------------------ rail failover
  // A TCP connection that breaks, or stalls while another rail to the same peer
  // answers, is given up. Both sides then stop sending on it and tell the other
  // with a RailDown frame on a surviving rail carrying how many bytes of the
  // connection the peer's kernel has acknowledged (those are safe in its socket
  // and are still read, up to that count, then the connection is closed);
  // every frame beyond that goes again (flagged kFlagMoved) on the other rails.
  // Later puts avoid the rail; the lower rank reconnects it every kRailRetry s
  // and when that works it is used again. A call fails only when no rail to a
  // peer is left. The fast path pays a SIOCOUTQ per connection and call, and a
  // copy of what the peer's kernel has not acknowledged when the call returns.
  static constexpr double kRailRetry = 1.0;

  // The other usable rails to c's peer.
  std::vector<Conn*> other_rails(const Conn& c) {
    std::vector<Conn*> v;
    for (int ci : conn_of[c.peer])
      if (ci >= 0 && &conns[ci] != &c && !conns[ci].down && !conns[ci].closed) v.push_back(&conns[ci]);
    return v;
  }

  // One log line when a rail loses its first connection, one when its last comes back.
  void rail_state(int rail, int delta, const std::string& why) {
    int before = rail_down_count[rail];
    rail_down_count[rail] += delta;
    if (before == 0 && delta > 0)
      fprintf(stderr, "railcoll: rank %d: rail %d (%s) is down: %s; its traffic moves to the other rails\n", me, rail,
              rail_addr[rail].c_str(), why.c_str());
    if (before > 0 && rail_down_count[rail] == 0)
      fprintf(stderr, "railcoll: rank %d: rail %d (%s) is up again\n", me, rail, rail_addr[rail].c_str());
  }

  // Bytes of c the peer's kernel has acknowledged; frames wholly inside are let go.
  uint64_t release_confirmed(Conn& c) {
    int q = 0;
    if (ioctl(c.fd, SIOCOUTQ, &q) != 0) q = static_cast<int>(std::min<uint64_t>(c.written, INT32_MAX));
    uint64_t confirmed = c.written - static_cast<uint64_t>(q);
    while (!c.unacked.empty() && c.unacked.front().end <= confirmed) c.unacked.pop_front();
    return confirmed;
  }

  // When a call returns, frames the peer has not acknowledged stop pointing
  // into the user's buffers: they are copied, in case they must go again.
  void keep_unconfirmed() {
    for (auto& c : conns) {
      if (c.rail < 0 || c.closed || c.unacked.empty()) continue;
      release_confirmed(c);
      for (auto& it : c.unacked) {
        for (auto& v : it.iov) it.owned.append(static_cast<char*>(v.iov_base), v.iov_len);
        it.iov.clear();
      }
    }
  }

  // Takes c's unsent and unconfirmed frames out of it, to be sent again.
  std::vector<SendItem> take_frames(Conn& c) {
    std::vector<SendItem> v;
    for (auto* q : {&c.unacked, &c.out})
      for (auto& it : *q)
        if (tracked(it.hdr.type)) {
          it.done = 0;
          it.hdr.flags |= kFlagMoved;
          v.push_back(std::move(it));
        }
    c.unacked.clear();
    c.out.clear();
    return v;
  }

  void reset_stream(Conn& c, double now) {
    c.hdr_got = 0;
    c.in_payload = false;
    c.dst.clear();
    c.written = c.nread = 0;
    c.told = false;
    c.drain_to = -1;
    c.heard_at = now;
    c.outq = -1;
    c.probed = false;
  }

  void rail_failed(Conn& c, const std::string& why) {
    if (c.down || c.closed) return;
    auto alive = other_rails(c);
    if (alive.empty()) {
      c.closed = true;
      fail(RAILCOLL_ERR_PEER, c.name() + " " + why + ", and no other rail to rank " + std::to_string(c.peer) + " is left");
    }
    double now = now_seconds();
    uint64_t confirmed = release_confirmed(c);
    c.down = true;
    c.down_at = now;
    rail_state(c.rail, 1, "the connection to rank " + std::to_string(c.peer) + " " + why);
    // The notice goes first on the one connection that carries all the frames
    // sent again, so the peer knows where the old connection ends (and reads no
    // further in it) before it sees any of them.
    SendItem notice{header(Frame::RailDown, c.rail), {}, {}, 0, 0};
    notice.hdr.offset = confirmed;
    alive[0]->out.push_back(std::move(notice));
    c.told = true;
    for (auto& it : take_frames(c)) alive[0]->out.push_back(std::move(it));
    close_if_drained(c);
  }

  // A given-up connection is closed once the peer's acknowledged bytes are read.
  void close_if_drained(Conn& c) {
    if (!c.down || c.closed || !c.told || c.drain_to < 0 || c.nread < static_cast<uint64_t>(c.drain_to)) return;
    close(c.fd);
    c.fd = -1;
    c.closed = true;
    c.retry_at = now_seconds() + kRailRetry;
  }

  // The peer opened a new connection for a rail: it replaces the old one, and
  // whatever the old one had not delivered goes again on the new one.
  void reconnected(Conn& c, int fd, double now) {
    // What the peer's kernel acknowledged on the old connection is read first.
    for (uint64_t before = ~0ull; c.down && !c.closed && c.nread != before;) {
      before = c.nread;
      drive_recv(c);
    }
    std::vector<SendItem> again = take_frames(c);
    if (!c.closed) close(c.fd);
    if (c.down) rail_state(c.rail, -1, "");
    c.fd = fd;
    set_nonblocking(fd);
    c.down = c.closed = c.bye = c.connecting = false;
    reset_stream(c, now);
    for (auto& it : again) c.out.push_back(std::move(it));
  }

  // Puts and signals go on the schedule's rail, or the next usable one.
  Conn& route(int peer, int rail, bool* moved) {
    *moved = false;
    if (topo.same_node(peer, me)) {
      Conn& c = conns[conn_of[peer][0]];
      if (c.closed) fail(RAILCOLL_ERR_PEER, c.name() + " is gone: cannot send to it");
      return c;
    }
    int R = topo.rails();
    for (int k = 0; k < R; ++k) {
      Conn& c = conns[conn_of[peer][(rail + k) % R]];
      if (c.down || c.closed) continue;
      *moved = k > 0;
      return c;
    }
    fail(RAILCOLL_ERR_PEER, "no rail to rank " + std::to_string(peer) + " is left: cannot send to it");
  }

  void start_reconnect(Conn& c, double now) {
    auto hp = split_host_port(peer_addr[c.peer][c.rail]);
    c.fd = tcp_connect_start(rail_addr[c.rail], hp.first, hp.second);
    c.retry_at = now + kRailRetry;
    if (c.fd < 0) return;
    c.connecting = true;
    c.connect_until = now + kRailRetry;
  }

  void finish_connect(Conn& c, double now) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    std::string hello = hello_frame(c.peer, c.rail, c.generation + 1, peer_nonce[c.peer]);
    if (err != 0 || send(c.fd, hello.data(), hello.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(hello.size())) {
      close(c.fd);
      c.fd = -1;
      c.connecting = false;
      return;
    }
    ++c.generation;
    c.down = c.closed = c.bye = c.connecting = false;
    reset_stream(c, now);
    rail_state(c.rail, -1, "");
  }

  // Every 20 ms: confirmed frames let go, stalled rails given up, down rails
  // reconnected (by the lower rank of the pair).
  void check_rails(double now) {
    if (now < next_rail_check) return;
    next_rail_check = now + 0.02;
    for (auto& c : conns) {
      if (c.rail < 0) continue;
      if (c.down) {
        if (!c.closed && now - c.down_at > 2 * kRailRetry) {  // the peer never said where to stop reading
          c.drain_to = 0;
          c.told = true;
          close_if_drained(c);
        }
        if (!c.closed) continue;
        if (c.connecting && now > c.connect_until) {
          close(c.fd);
          c.fd = -1;
          c.connecting = false;
        } else if (!c.connecting && me < c.peer && now >= c.retry_at) {
          start_reconnect(c, now);
        }
        continue;
      }
      if (c.closed) continue;
      if (c.unacked.empty() && c.out.empty()) {
        c.outq = -1;  // idle: the stall clock starts when it has something to carry
        continue;
      }
      // The kernel's send queue shrinking means the rail carries our bytes.
      int q = 0;
      if (ioctl(c.fd, SIOCOUTQ, &q) == 0) {
        if (q == 0 || c.outq < 0 || q < c.outq) c.quiet_since = now, c.probed = false;
        c.outq = q;
        uint64_t confirmed = c.written - static_cast<uint64_t>(q);
        while (!c.unacked.empty() && c.unacked.front().end <= confirmed) c.unacked.pop_front();
      }
      double quiet = now - c.quiet_since;
      if (quiet > boot.rail_timeout / 2 && !c.probed) {  // ask the other rails for evidence the peer is alive
        c.probed = true;
        c.probe_at = now;
        for (Conn* d : other_rails(c)) d->out.push_back(SendItem{header(Frame::Ping, -1), {}, {}, 0, 0});
      }
      if (quiet > boot.rail_timeout && c.probed) {
        for (Conn* d : other_rails(c)) {
          if (d->heard_at < c.probe_at) continue;
          rail_failed(c, "carried nothing for " + seconds_text(quiet) + " while rail " + std::to_string(d->rail) +
                             " to the same rank answered");
          break;
        }
      }
    }
  }

  // Whatever set-up or a call left open (the normal path closes in close_all).
  ~Impl() {
    for (int fd : listen_fds) close(fd);
    for (auto& q : pending) refuse(q, "the communicator is closing");
    for (auto& c : conns) close(c.fd);
    if (shm) munmap(shm, shm_map_bytes);
  }

  // The node's segment: created by the node leader, opened by the others, and
  // unlinked as soon as everyone has it mapped, so a crash leaves nothing in /dev/shm.
  void map_node_shm(StoreClient* store, int comm_index, double deadline) {
    shm_map_bytes = kShmHeader + boot.shm_bytes;
    std::string name = "/railcoll-" + job + "-c" + std::to_string(comm_index) + "-n" + std::to_string(node);
    for (auto& ch : name)
      if (ch != '/' && !isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '_';
    bool leader = topo.is_leader(me);
    std::string prefix = "c" + std::to_string(comm_index) + "/shm/" + std::to_string(node) + "/";
    int fd = -1;
    if (leader) {
      fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0) throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "cannot create shared memory " + name + ": " + strerror(errno));
      if (ftruncate(fd, static_cast<off_t>(shm_map_bytes)) != 0) {
        shm_unlink(name.c_str());
        throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "cannot size shared memory " + name + ": " + strerror(errno));
      }
    } else {
      store->get(prefix + "created", deadline);
      fd = shm_open(name.c_str(), O_RDWR, 0600);
      if (fd < 0) throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "cannot open shared memory " + name + ": " + strerror(errno));
    }
    void* p = mmap(nullptr, shm_map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      if (leader) shm_unlink(name.c_str());
      throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "cannot map shared memory " + name + ": " + strerror(errno));
    }
    shm = static_cast<NodeShm*>(p);
    shm_data = static_cast<char*>(p) + kShmHeader;
    if (leader) {  // the header is complete before anyone may open the segment
      shm->capacity = boot.shm_bytes;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      shm->magic = kShmMagic;
      if (store) store->set(prefix + "created", "1");
    } else if (shm->magic != kShmMagic || shm->capacity != boot.shm_bytes) {
      throw RuntimeError(RAILCOLL_ERR_MISMATCH, "shared memory " + name + " has a different size on the node leader (" +
                                                    std::to_string(shm->capacity >> 20) + " MiB): RAILCOLL_SHM_MIB must be the same on every rank");
    }
    if (store) {
      store->set(prefix + "mapped/" + std::to_string(topo.local_rank(me)), "1");
      if (leader)
        for (int l = 0; l < topo.node_size(node); ++l) store->get(prefix + "mapped/" + std::to_string(l), deadline);
    }
    if (leader) shm_unlink(name.c_str());
  }

  // ------------------------------------------------------------ errors
  // Marks the communicator broken and tells every peer, so nobody waits for the
  // deadline; an abort received from a peer is not passed on (its sender told all).
  [[noreturn]] void fail(int code, const std::string& msg, bool tell_peers = true) {
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

  FrameHeader header(Frame type, int op) const {
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
      case Region::Shared: return shm_data + sp.offset;
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
  std::atomic<uint64_t>& node_counter(int index) { return shm->counters[index]; }

  void bump(const CounterRef& c) {
    if (!c.on_node) {
      ++rank_counters[c.index];
      return;
    }
    node_counter(c.index).fetch_add(1, std::memory_order_seq_cst);
    // Wake local ranks that announced they block on a node counter.
    for (int r : topo.ranks_of(node)) {
      if (r == me || !shm->waiting[topo.local_rank(r)].load(std::memory_order_seq_cst)) continue;
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
        fail(RAILCOLL_ERR_PEER, "lost the connection to " + c.name() + ": " + strerror(errno));
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
    fail(RAILCOLL_ERR_PROTOCOL, "rejected a frame from " + c.name() + ": " + what);
  }

  // A Data or Notify frame for the current call: checks it against the plan and
  // returns where its payload goes.
  const Op& check_frame(Conn& c, const FrameHeader& h, int rail) {
    std::string why;
    bool mismatch = false;
    const Op* op = match_frame(*plan, topo, me, h, rail, &why, &mismatch);
    if (mismatch) fail(RAILCOLL_ERR_MISMATCH, c.name() + " " + why);
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
      fail(RAILCOLL_ERR_PEER, "rank " + std::to_string(h.sender) + " aborted the collective: " +
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

  void drive_recv(Conn& c) {
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
      fail(RAILCOLL_ERR_PEER, c.name() + " closed its connection without saying goodbye: it exited or died");
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
    if (r < 0 && errno != EINTR) fail(RAILCOLL_ERR_NETWORK, std::string("poll: ") + strerror(errno));
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
      std::atomic<uint32_t>* flag = node_counter ? &shm->waiting[topo.local_rank(me)] : nullptr;
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
        fail(RAILCOLL_ERR_TIMEOUT, "timed out after " + seconds_text(boot.timeout) + " " + what() + silent_peers());
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

  static std::string seconds_text(double s) {
    std::ostringstream o;
    o << s << " s";
    return o.str();
  }

  // ------------------------------------------------------------ a call
  // Local ranks whose increments this rank has just waited for are in this call:
  // any of them with another signature passed other sizes or another algorithm.
  uint64_t call_word(const Plan& p) const { return (seq << 32) | (p.sig & 0xffffffffu); }
  void check_local_calls(const Plan& p) {
    const auto& ranks = topo.ranks_of(node);
    const uint64_t mine = call_word(p);
    for (size_t i = 0; i < ranks.size(); ++i) {
      uint64_t theirs = shm->call[i].load(std::memory_order_acquire);
      if (ranks[i] != me && theirs >> 32 == (seq & 0xffffffffu) && theirs != mine)
        fail(RAILCOLL_ERR_MISMATCH, "local rank " + std::to_string(ranks[i]) + " is in a different call than this rank (" +
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
    if (!broken.empty()) throw RuntimeError(RAILCOLL_ERR_BROKEN, "communicator is broken: " + broken);
    for (auto& c : conns)
      if (c.closed && !c.bye && !c.down) fail(RAILCOLL_ERR_PEER, c.name() + " is gone");
    plan = &p;
    bufs = b;
    const Schedule& s = p.sched;
    if (s.shared_bytes[node] > shm->capacity)
      throw RuntimeError(RAILCOLL_ERR_UNSUPPORTED,
                         p.what + " needs " + std::to_string(s.shared_bytes[node]) +
                             " bytes of node-shared memory; RAILCOLL_SHM_MIB allows " +
                             std::to_string(shm->capacity >> 20) + " MiB");
    if (s.node_counters > kMaxNodeCounters)
      throw RuntimeError(RAILCOLL_ERR_UNSUPPORTED, p.what + " needs " + std::to_string(s.node_counters) +
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
    shm->call[topo.local_rank(me)].store(call_word(p), std::memory_order_release);
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
    for (auto& c : conns) {
      if (c.down && !c.closed) close(c.fd), c.fd = -1, c.closed = true;  // a given-up rail says no goodbye
      if (c.closed) continue;
      FrameHeader h = header(Frame::Bye, -1);
      send(c.fd, &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
      shutdown(c.fd, SHUT_WR);
    }
    // Read until every peer said goodbye (or is gone), so no close resets a peer.
    std::vector<std::string> partial(conns.size());  // bytes of frames not yet whole
    while (now_seconds() < deadline) {
      bool open = false;
      for (auto& c : conns) open |= !c.closed && !c.bye;
      if (!open) break;
      std::vector<pollfd> p;
      for (auto& c : conns) p.push_back({c.fd, static_cast<short>(c.closed || c.bye ? 0 : POLLIN), 0});
      poll(p.data(), p.size(), 50);
      for (size_t i = 0; i < p.size(); ++i) {
        Conn& c = conns[i];
        if (c.closed || c.bye || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[65536];
        ssize_t r = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) c.closed = true;
        if (r <= 0) continue;
        // Whole frames only: a goodbye, or anything else that is dropped now.
        std::string& in = partial[i];
        in.append(buf, static_cast<size_t>(r));
        while (in.size() >= sizeof(FrameHeader)) {
          FrameHeader h;
          memcpy(&h, in.data(), sizeof h);
          if (h.magic != kWireMagic || h.length > (1u << 30)) {
            c.closed = true;
            break;
          }
          if (in.size() < sizeof h + h.length) break;
          in.erase(0, sizeof h + h.length);
          if (h.type == static_cast<uint16_t>(Frame::Bye)) c.bye = true;
        }
      }
    }
    for (auto& c : conns) close(c.fd);
    conns.clear();
    if (shm) munmap(shm, shm_map_bytes);
    shm = nullptr;
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

void Comm::run(const std::string& collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
               const AlgoOptions& call_opts, const Buffers& b) {
  AlgoOptions opts = call_opts;
  opts.stripe_threshold = impl_->boot.stripe_bytes;
  std::ostringstream key;
  key << collective << "/" << algorithm << "/" << opts.stripe_threshold << "/" << opts.concurrency << "/root "
      << opts.root << "/" << dtype_name(opts.dtype) << "/" << redop_name(opts.redop);
  for (auto c : counts) key << "," << c;
  if (impl_->plans.size() >= 256 && !impl_->plans.count(key.str())) impl_->plans.clear();  // bounded cache
  auto& slot = impl_->plans[key.str()];
  if (!slot) slot = make_plan(impl_->topo, impl_->me, collective, algorithm, counts, opts, key.str());
  impl_->run(*slot, b);
}


}  // namespace railcoll::rt
