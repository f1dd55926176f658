// railcoll-oneccl-bench: the benchmark of Intel oneCCL's collectives (its CPU
// build, oneccl-cpu on PyPI), a peer railcoll is compared with on the same
// ranks (`railcoll bench --peer oneccl`, docs/results.md). Started by Open MPI's
// mpirun like railcoll-mpi-bench; MPI is only its side channel (oneCCL's
// key-value store address from rank 0, the statistics between timed calls):
// every timed call, and the barrier before it, is oneCCL's. oneCCL's own
// settings come from the environment (CCL_ATL_TRANSPORT, CCL_WORKER_COUNT,
// CCL_MNIC*, FI_PROVIDER, ...; railcoll bench tries several). The loop, the
// buffers, the statistics and the records are the bench library's
// (bench/peer.hpp). Exit status: 0 ok, 1 a wrong result or a failure of
// oneCCL, 2 bad usage or a collective oneCCL does not have.
#include <mpi.h>

#include <cstdlib>
#include <iostream>
#include <oneapi/ccl.hpp>

#include "bench/peer.hpp"
#include "mpi_side.hpp"

namespace railcoll::bench {
namespace {

class CclCollectives : public PeerCollectives {
 public:
  explicit CclCollectives(ccl::communicator& comm) : comm_(comm) {}
  std::string lacks(Collective c, bool) override {
    switch (c) {
      case Collective::Allgather:
      case Collective::Allreduce:
      case Collective::Bcast:
      case Collective::Reduce:
      case Collective::ReduceScatterBlock:
      case Collective::ReduceScatter:
      case Collective::Alltoall:
      case Collective::Alltoallv:
      case Collective::Barrier: return "";
      default: return std::string("oneCCL has no ") + collective_name(c);
    }
  }
  void barrier() override { ccl::barrier(comm_).wait(); }
  void call(Collective c, CallBuffers& b) override { issue(c, b).wait(); }
  void post(Collective c, CallBuffers& b) override { pending_ = issue(c, b); }
  void wait() override { pending_.wait(); }

 private:
  ccl::event issue(Collective c, CallBuffers& b) {
    const size_t count = b.bytes(), floats = count / 4;
    void *send = b.send(), *recv = b.recv();
    switch (c) {
      case Collective::Allgather: return ccl::allgather(send, recv, count, ccl::datatype::int8, comm_);
      case Collective::Allreduce:
        return ccl::allreduce(send, recv, floats, ccl::datatype::float32, ccl::reduction::sum, comm_);
      case Collective::Bcast: return ccl::broadcast(recv, count, ccl::datatype::int8, 0, comm_);
      case Collective::Reduce:
        return ccl::reduce(send, recv, floats, ccl::datatype::float32, ccl::reduction::sum, 0, comm_);
      case Collective::ReduceScatterBlock:
      case Collective::ReduceScatter:  // the same block for every rank
        return ccl::reduce_scatter(send, recv, floats, ccl::datatype::float32, ccl::reduction::sum, comm_);
      case Collective::Alltoall: return ccl::alltoall(send, recv, count, ccl::datatype::int8, comm_);
      case Collective::Alltoallv: {
        counts_.assign(b.counts().begin(), b.counts().end());
        return ccl::alltoallv(send, counts_, recv, counts_, ccl::datatype::int8, comm_);
      }
      default: return ccl::barrier(comm_);
    }
  }

  ccl::communicator& comm_;
  ccl::event pending_;
  std::vector<size_t> counts_;
};

}  // namespace
}  // namespace railcoll::bench

int main(int argc, char** argv) {
  using namespace railcoll::bench;
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    MpiSide side;
    PeerOptions o;
    const std::string err = parse_peer_options({argv + 1, argv + argc}, "railcoll-oneccl-bench", "oneccl", &o);
    if (!err.empty()) {
      if (side.rank() == 0 && err == "help") std::cout << peer_usage("railcoll-oneccl-bench", "Intel oneCCL");
      if (side.rank() == 0 && err != "help") std::cerr << "railcoll-oneccl-bench: " << err << "\n";
      MPI_Finalize();
      return err == "help" ? 0 : 2;
    }
    // oneCCL places its workers by the node's ranks; it asks the environment first.
    setenv("CCL_LOCAL_RANK", std::to_string(side.local_rank()).c_str(), 0);
    setenv("CCL_LOCAL_SIZE", std::to_string(side.local_size()).c_str(), 0);
    try {
      ccl::init();
      ccl::shared_ptr_class<ccl::kvs> kvs;
      ccl::kvs::address_type address;
      if (side.rank() == 0) {
        kvs = ccl::create_main_kvs();
        address = kvs->get_address();
      }
      MPI_Bcast(address.data(), static_cast<int>(address.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
      if (side.rank() != 0) kvs = ccl::create_kvs(address);
      ccl::communicator comm = ccl::create_communicator(side.size(), side.rank(), kvs);
      CclCollectives lib(comm);
      if (std::string why = lib.lacks(o.collective, o.nonblocking); !why.empty()) {
        if (side.rank() == 0) std::cerr << "railcoll-oneccl-bench: " << why << "\n";
        status = 2;
      } else {
        status = run_peer_bench(side, lib, o, std::cout, std::cerr);
      }
    } catch (const std::exception& e) {
      std::cerr << "railcoll-oneccl-bench: rank " << side.rank() << ": oneCCL failed: " << e.what() << "\n";
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Finalize();
  return status;
}
