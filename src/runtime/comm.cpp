// The communicator (comm.hpp): set-up in order (listeners, the out-of-band
// exchange, topology, connections and the node segment, the executor), a call
// (its plan built once and cached), the end. The work is elsewhere: the
// executor in engine/executor.cpp, the transports under transport/ (the rails
// layer over the node's room and one kind of network link, RAILCOLL_TRANSPORT
// picks), the exchange in oob.cpp, who this process is in
// bootstrap/identity.cpp, the settings in core/settings.cpp.
#include "runtime/comm.hpp"

#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/engine/plan_cache.hpp"  // plan_key
#include "runtime/observe/observability.hpp"
#include "runtime/transport/local/local_node.hpp"
#include "runtime/transport/rails/rail_transport.hpp"
#include "runtime/transport/tcp/tcp_links.hpp"
#ifdef RAILCOLL_HAVE_OFI
#include "runtime/transport/ofi/ofi_links.hpp"
#endif

namespace railcoll::rt {

namespace {
std::string what_failed(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an unknown error";
  }
}

// Proves in the set-up record that this rank holds the job key, without a
// word about it: a fresh nonce and HMAC(key, nonce). A caller's exchange (MPI)
// has no store handshake, so ranks whose RAILCOLL_JOB_KEY differ learn it here
// rather than from data connections refused until the deadline.
constexpr size_t kKeyNonce = 16;
std::string key_check_text(const std::string& key, const std::string& nonce) {
  Digest d = hmac_sha256(key, "railcoll key check\0" + nonce);
  return nonce + std::string(reinterpret_cast<const char*>(d.data()), d.size());
}
bool same_key(const std::string& key, const std::string& theirs) {
  if (theirs.size() != kKeyNonce + 32) return false;
  std::string mine = key_check_text(key, theirs.substr(0, kKeyNonce));
  return equal_constant_time(mine.data(), theirs.data(), mine.size());
}

enum Field { kJob, kTag, kNode, kRails, kContact, kShm, kKeyCheck, kTransport, kFields };

// The rails layer over the node's room and the network links RAILCOLL_TRANSPORT
// names, opened on this rank's rails. A new kind of link is one more line here.
std::unique_ptr<ProcessTransport> make_transport(const Settings& s, int me, int n, const std::vector<std::string>& rails) {
  const TransportSettings settings = TransportSettings::from(s);
  std::unique_ptr<Links> net;
  if (s.text(Setting::Transport) == "ofi") {
#ifdef RAILCOLL_HAVE_OFI
    net = std::make_unique<OfiLinks>(settings, me, n, rails);
#else
    throw RuntimeError(Status::Unsupported,
                       "RAILCOLL_TRANSPORT=ofi: this railcoll was built without libfabric (-DRAILCOLL_WITH_OFI=OFF)");
#endif
  } else {
    net = std::make_unique<TcpLinks>(settings, me, n, rails);
  }
  return std::make_unique<RailTransport>(settings, me, n, rails, std::make_unique<LocalNode>(settings, me, n),
                                         std::move(net));
}

}  // namespace

struct Comm::Impl {
  Settings settings;
  double timeout = 0;            // RAILCOLL_TIMEOUT
  uint64_t stripe_bytes = 0;     // RAILCOLL_STRIPE_BYTES
  int me = 0, n = 1;
  Topology topo;
  std::string unique;
  std::vector<std::string> rails;
  std::unique_ptr<ProcessTransport> transport;
  std::exception_ptr open_failed;  // open_transport's failure, told to every rank in init
  std::unique_ptr<Observability> watch;  // before exec: outlives it
  std::unique_ptr<Executor> exec;
  std::unique_ptr<RequestQueue> queue;  // after exec: stops before it
  std::vector<uint64_t> node_capacity;  // [node] its shared buffer: RAILCOLL_SHM_MIB of its leader
};

Comm::Comm(const Identity& who, const Settings& settings, const Check& check) : impl_(std::make_unique<Impl>()) {
  impl_->settings = settings;
  open_transport(who.rank, who.size);
  const double deadline = now_seconds() + settings.seconds(Setting::Timeout);
  StoreOutOfBand oob(who, settings.text(Setting::JobKey), deadline);
  try {
    init(who, oob, deadline, check);
  } catch (const std::exception& e) {
    oob.abandon(e.what());  // no rank waits for this one until the deadline
    throw;
  }
  oob.finish();
}

Comm::Comm(const Identity& who, const Settings& settings, OutOfBand& oob, const Check& check)
    : impl_(std::make_unique<Impl>()) {
  impl_->settings = settings;
  open_transport(oob.rank(), oob.size());
  init(who, oob, now_seconds() + settings.seconds(Setting::Timeout), check);
}

// Local work that waits for no peer but may take long on a loaded machine,
// done before the set-up deadline starts: libfabric's first fi_getinfo loads
// its providers and reads /proc/kallsyms, and opening a rail's fabric, domain
// and endpoint takes a large part of a short RAILCOLL_TIMEOUT on a loaded
// machine (docs/results.md, "Opening the libfabric transport").
void Comm::open_transport(int me, int n) {
  Impl& m = *impl_;
  if (n < 1 || me < 0 || me >= n) return;  // init says what is wrong
  try {
    m.rails = resolve_rails(m.settings.text(Setting::Rails));
    m.transport = make_transport(m.settings, me, n, m.rails);
  } catch (...) {
    m.open_failed = std::current_exception();
  }
}

void Comm::init(const Identity& who, OutOfBand& oob, double deadline, const Check& check) {
  Impl& m = *impl_;
  const Settings& settings = m.settings;
  const std::string& job_key = settings.text(Setting::JobKey);
  const std::string& transport = settings.text(Setting::Transport);
  m.me = oob.rank();
  m.n = oob.size();
  if (m.n < 1 || m.me < 0 || m.me >= m.n)
    throw RuntimeError(Status::Bootstrap, "the out-of-band exchange says rank " + std::to_string(m.me) + " of " +
                                              std::to_string(m.n));
  static std::atomic<bool> warned{false};  // once per process, whichever thread makes communicators
  if (job_key.empty() && m.n > 1 && m.me == 0 && !warned.exchange(true)) {
    fprintf(stderr,
            "railcoll: RAILCOLL_JOB_KEY is not set: connections are checked for the job and communicator but not "
            "authenticated (railcoll run and railcoll cluster run set it; with another launcher give every rank "
            "the same secret)\n");
  }
  const std::vector<std::string>& rails = m.rails;
  std::exception_ptr failed;  // told to every rank in the exchange, so all fail together
  try {
    if (check) check();
    if (m.open_failed) std::rethrow_exception(m.open_failed);
    m.timeout = settings.seconds(Setting::Timeout);
    m.stripe_bytes = static_cast<uint64_t>(settings.integer(Setting::StripeBytes));
  } catch (...) {
    failed = std::current_exception();
  }

  // One exchange says who is where: every rank's node identity, rail count and
  // contact, and rank 0's job id and a tag it draws, which every rank adopts:
  // together they name this communicator's sockets and segments, so that
  // communicators made in any order, in one process or several, never meet.
  // A rank that could not start sends its error instead.
  std::string job = who.job_id;
  if (job.empty() && m.me == 0) job = std::to_string(getpid()) + "-" + std::to_string(static_cast<long>(now_seconds() * 1e6));
  const std::string tag = m.me == 0 ? to_hex(random_bytes(8).data(), 8) : "";
  std::vector<std::string> mine(kFields);
  if (!failed) {
    mine[kJob] = job;
    mine[kTag] = tag;
    mine[kNode] = who.node_id;
    mine[kRails] = std::to_string(rails.size());
    mine[kContact] = m.transport->contact();
    mine[kShm] = std::to_string(static_cast<uint64_t>(settings.integer(Setting::ShmMib)) << 20);
    mine[kKeyCheck] = key_check_text(job_key, random_bytes(kKeyNonce));
    mine[kTransport] = transport;
  }
  auto records = allgather_strings(oob, pack_fields(failed ? std::vector<std::string>{what_failed(failed)} : mine));
  if (failed) std::rethrow_exception(failed);
  std::vector<std::vector<std::string>> fields(m.n);
  for (int r = 0; r < m.n; ++r) {
    if (unpack_fields(records[r], &fields[r]) && fields[r].size() == 1)
      throw RuntimeError(Status::Bootstrap, "rank " + std::to_string(r) + " could not start: " + fields[r][0]);
    if (fields[r].size() != kFields || fields[r][kNode].empty())
      throw RuntimeError(Status::Protocol, "malformed set-up record of rank " + std::to_string(r));
  }
  for (int r = 0; r < m.n; ++r)
    if (!same_key(job_key, fields[r][kKeyCheck]))
      throw RuntimeError(Status::Bootstrap, "the ranks' RAILCOLL_JOB_KEY differ: rank " + std::to_string(r) +
                                                "'s does not match this rank's (give every rank the same secret)");
  job = fields[0][kJob];
  if (job.empty() || fields[0][kTag].size() != 16 || from_hex(fields[0][kTag]).empty())
    throw RuntimeError(Status::Protocol, "rank 0's set-up record names no job or communicator");
  m.unique = job + "-" + fields[0][kTag];

  // Node identity -> topology; every rank must have the same number of rails.
  std::map<std::string, int> node_ids;
  std::vector<int> node_of(m.n);
  std::vector<std::string> contacts(m.n);
  for (int r = 0; r < m.n; ++r) {
    node_of[r] = node_ids.emplace(fields[r][kNode], static_cast<int>(node_ids.size())).first->second;
    if (fields[r][kRails] != std::to_string(rails.size()))
      throw RuntimeError(Status::Mismatch, "rank " + std::to_string(r) + " has " + fields[r][kRails] +
                                               " rails, this rank " + std::to_string(rails.size()) +
                                               " (check RAILCOLL_RAILS)");
    if (fields[r][kTransport] != transport)
      throw RuntimeError(Status::Mismatch, "rank " + std::to_string(r) + " uses RAILCOLL_TRANSPORT=" +
                                               fields[r][kTransport] + ", this rank " + transport);
    contacts[r] = std::move(fields[r][kContact]);
  }
  // Topology::from_node_map renumbers ids ascending: first appearance order is kept.
  m.topo = Topology::from_node_map(node_of, static_cast<int>(rails.size()));
  // Every node's shared-buffer capacity (its leader's; the others must agree,
  // which mapping the segment checks), so that every rank can tell whether a
  // call fits on every node, and all decide alike.
  for (int node = 0; node < m.topo.nnodes(); ++node) {
    const std::string& text = fields[m.topo.leader(node)][kShm];
    char* end = nullptr;
    const unsigned long long bytes = strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end)
      throw RuntimeError(Status::Protocol, "malformed set-up record of rank " + std::to_string(m.topo.leader(node)));
    m.node_capacity.push_back(bytes);
  }
  if (m.topo.node_size(m.topo.node_of(m.me)) > kMaxLocalRanks)
    throw RuntimeError(Status::Unsupported, "more than " + std::to_string(kMaxLocalRanks) + " ranks on one node");

  const uint64_t comm_id = fnv(job);
  m.transport->connect(m.topo, comm_id, job, fields[0][1], contacts, oob, deadline);
  m.exec = std::make_unique<Executor>(*m.transport, m.topo, m.me, comm_id, ExecutorSettings::from(settings));
  m.watch = std::make_unique<Observability>(settings, m.me, m.n, m.topo.node_of(m.me), m.topo.rails(), comm_id);
  m.exec->set_observer(m.watch->observer());
  m.queue = std::make_unique<RequestQueue>(*m.exec, m.me, ProgressSettings::from(settings));
}

Comm::~Comm() {
  impl_->queue->drain();
  impl_->queue.reset();
  impl_->exec->finish();
  impl_->watch->close();
  impl_->transport->close(now_seconds() + std::min(5.0, impl_->timeout));
}

int Comm::rank() const { return impl_->me; }
int Comm::size() const { return impl_->n; }
const Topology& Comm::topo() const { return impl_->topo; }
int Comm::rails() const { return impl_->topo.rails(); }
int Comm::rails_up() const { return impl_->transport->rails_up(); }
std::string Comm::transport() const { return impl_->transport->describe(); }
double Comm::timeout() const { return impl_->timeout; }
const std::string& Comm::unique_name() const { return impl_->unique; }

std::shared_ptr<const Plan> Comm::plan(Collective collective, const std::string& algorithm,
                                       const std::vector<uint64_t>& counts, const AlgoOptions& call_opts) const {
  AlgoOptions opts = call_opts;
  opts.stripe_threshold = impl_->stripe_bytes;
  std::shared_ptr<Plan> p =
      make_plan(impl_->topo, impl_->me, collective, algorithm, counts, opts, plan_key(collective, algorithm, counts, opts));
  const Schedule& s = p->sched;
  for (int node = 0; node < impl_->topo.nnodes() && p->unfit.empty(); ++node)
    if (s.shared_bytes[node] > impl_->node_capacity[node])
      p->unfit = p->what + " needs " + std::to_string(s.shared_bytes[node]) +
                 " bytes of node-shared memory on node " + std::to_string(node) + "; its RAILCOLL_SHM_MIB allows " +
                 std::to_string(impl_->node_capacity[node] >> 20) + " MiB";
  if (p->unfit.empty() && s.node_counters > kMaxNodeCounters)
    p->unfit = p->what + " needs " + std::to_string(s.node_counters) + " node counters; the shared segment has " +
               std::to_string(kMaxNodeCounters);
  return p;
}

void Comm::run(const Plan& p, const Buffers& b) {
  if (!p.unfit.empty()) throw RuntimeError(Status::Unsupported, p.unfit);
  impl_->queue->run(p, b);
}

void Comm::post(const std::shared_ptr<Request>& r) { impl_->queue->post(r); }
void Comm::post_message(const std::shared_ptr<Request>& r) { impl_->queue->post_message(r); }
void Comm::withdraw(const std::shared_ptr<Request>& r) { impl_->queue->withdraw(r); }
bool Comm::test(Request& r) { return impl_->queue->test(r); }
void Comm::wait(Request& r) { impl_->queue->wait(r); }
void Comm::progress() { impl_->queue->poll(); }
void Comm::set_wait_hook(std::function<void()> hook, double every_s) {
  impl_->exec->set_wait_hook(std::move(hook), every_s);
}

void Comm::abandon(const std::string& why) { impl_->queue->abandon(why); }
std::string Comm::broken() const { return impl_->queue->broken(); }

}  // namespace railcoll::rt
