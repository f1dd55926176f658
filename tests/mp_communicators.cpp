// Several communicators alive at once in the same processes (started by
// `railcoll run -n N` with N even; tests/test_communicators.sh):
//   world   from the launcher's environment (the store rank 0 serves)
//   over    set up through an out-of-band exchange the caller supplies (here:
//           all-gathers on `world`, as the MPI layer will use MPI_Allgather),
//           with node identities the caller gives: every rank its own node
//   pairs   ranks r and r+1 (mod N), each pair through its own store on
//           127.0.0.1:MP_PORT_BASE+r, all with the same job id; even ranks
//           make their pairs in the other order than odd ones, and odd ranks
//           first make a single-rank communicator, so that no two processes
//           have made the same number of communicators when they meet: only
//           names agreed through the exchange keep them apart.
// Every communicator runs validated collectives, interleaved; then all are
// destroyed and the process must have the open files, threads and mappings it
// had before the first (/proc/self/fd, /proc/self/task, no /dev/shm/railcoll
// mapping in /proc/self/maps). Prints "rank r: communicators correct".
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "select/select.hpp"
#include "runtime/comm.hpp"
#include "process_holdings.hpp"

using namespace railcoll;
using namespace railcoll::rt;

namespace {

int me = -1;

// The caller's exchange: all-gathers on an existing communicator.
class OverComm final : public OutOfBand {
 public:
  explicit OverComm(Comm& c) : c_(c) {}
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  void allgather(const void* mine, size_t bytes, void* all) override {
    c_.run(Collective::Allgather, "direct", std::vector<uint64_t>(c_.size(), bytes), {}, {mine, all});
  }

 private:
  Comm& c_;
};

// One validated call of `coll` on c (call number `call` picks the pattern).
std::string check_call(Comm& c, Collective coll, uint64_t bytes, int call) {
  const CollectiveTraits& t = traits(coll);
  AlgoOptions opts = call_defaults(coll);
  opts.root = call % c.size();
  CallShape shape{c.rank(), c.size(), opts.root, bytes, opts.dtype, opts.redop};
  std::vector<unsigned char> send(t.send_length(shape)), recv(t.recv_length(shape));
  t.fill(shape, call, send.data(), recv.data());
  std::string algo = select_algorithm(coll, c.topo(), bytes);
  c.run(coll, algo, std::vector<uint64_t>(c.size(), bytes), opts, {send.data(), recv.data()});
  std::string why = t.check(shape, call, recv.data());
  return why.empty() ? "" : std::string(t.name) + "/" + algo + " on " + c.unique_name() + ": " + why;
}

int fail(const std::string& what) {
  fprintf(stderr, "rank %d: %s\n", me, what.c_str());
  return 1;
}

}  // namespace

int main() {
  const ProcessHoldings before = ProcessHoldings::now();
  const char* base = getenv("MP_PORT_BASE");
  if (!base) return fail("MP_PORT_BASE is not set");
  try {
    std::vector<std::unique_ptr<Comm>> comms;
    const Settings settings = Settings::from_environment();
    const Identity who = identity_from_env(settings);
    comms.push_back(std::make_unique<Comm>(who, settings));
    Comm& world = *comms[0];
    me = world.rank();
    const int n = world.size();
    if (n % 2) return fail("needs an even number of ranks");

    OverComm exchange(world);
    Identity solo_node = local_identity(settings);
    solo_node.node_id = "caller-given-node-" + std::to_string(me);
    comms.push_back(std::make_unique<Comm>(solo_node, settings, exchange));
    if (comms[1]->topo().nnodes() != n)
      return fail("the caller's node identities were not used: " + comms[1]->topo().describe());

    if (me % 2) {  // shifts this process's count of communicators made
      Identity alone = local_identity(settings);
      alone.job_id += "-alone";
      Comm single(alone, settings);
      if (std::string why = check_call(single, Collective::Allgather, 100, 1); !why.empty()) return fail(why);
    }
    auto make_pair = [&](int lo) {  // ranks lo and lo+1 (mod n)
      Identity pair = local_identity(settings);
      pair.rank = me == lo ? 0 : 1;
      pair.size = 2;
      pair.store = "127.0.0.1:" + std::to_string(atoi(base) + lo);
      pair.job_id += "-pairs";
      comms.push_back(std::make_unique<Comm>(pair, settings));
    };
    const int up = me, down = (me + n - 1) % n;  // the pairs this rank is in, by their lower rank
    if (me % 2 == 0) make_pair(up), make_pair(down);
    else make_pair(down), make_pair(up);

    for (size_t i = 0; i < comms.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (comms[i]->unique_name() == comms[j]->unique_name()) return fail("two communicators share a name");

    // Interleaved calls: world and over on every rank, then the pairs in the
    // order this rank made them (which cannot deadlock: see above).
    const Collective kinds[] = {Collective::Allgather, Collective::Allreduce, Collective::Bcast, Collective::Barrier};
    for (int call = 1; call <= 12; ++call) {
      const Collective coll = kinds[call % 4];
      const uint64_t bytes = traits(coll).reducing ? 4 * (1 + call * 97) : 1 + call * 397;
      for (auto& c : comms)
        if (std::string why = check_call(*c, coll, bytes, call); !why.empty()) return fail(why);
    }
    // Destroyed in another order than made.
    std::swap(comms[0], comms[comms.size() - 1]);
    comms.clear();
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  const ProcessHoldings after = ProcessHoldings::now();
  if (!(after == before)) return fail("left behind: " + after.since(before));
  printf("rank %d: communicators correct (world, over world, 2 pairs; %s)\n", me, after.since(before).c_str());
  return 0;
}
