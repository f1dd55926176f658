// railcoll-mpi-bench: the benchmark of an MPI library's collectives (Open
// MPI's tuned and HAN, or railcoll's through librailcoll_mpi.so preloaded), the
// baseline railcoll is compared with (`railcoll bench --mpi`, and on the
// emulated cluster `railcoll cluster mpirun -- railcoll-mpi-bench ...`,
// docs/cluster.md). The loop, the buffers, the statistics and the records are
// the bench library's (bench/peer.hpp); this file maps each collective onto
// its MPI call. Exit status: 0 ok, 1 a wrong result, 2 bad usage.
#include <mpi.h>

#include <iostream>

#include "bench/peer.hpp"
#include "mpi_side.hpp"

namespace railcoll::bench {
namespace {

class MpiCollectives : public PeerCollectives {
 public:
  std::string lacks(Collective, bool) override { return ""; }  // MPI has every one, blocking and not
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  void call(Collective c, CallBuffers& b) override { issue(c, b, nullptr); }
  void post(Collective c, CallBuffers& b) override { issue(c, b, &request_); }
  void wait() override { MPI_Wait(&request_, MPI_STATUS_IGNORE); }

 private:
  // The blocking call (req == nullptr) or its nonblocking form into *req.
  void issue(Collective c, CallBuffers& b, MPI_Request* req) {
    const int count = static_cast<int>(b.bytes()), floats = count / 4;  // bytes <= 1 GiB
    MPI_Comm w = MPI_COMM_WORLD;
    void *send = b.send(), *recv = b.recv();
    counts_.assign(b.counts().begin(), b.counts().end());
    displs_.assign(b.displs().begin(), b.displs().end());
    const int *counts = counts_.data(), *displs = displs_.data();
    switch (c) {
      case Collective::Allgather:
        req ? MPI_Iallgather(send, count, MPI_BYTE, recv, count, MPI_BYTE, w, req)
            : MPI_Allgather(send, count, MPI_BYTE, recv, count, MPI_BYTE, w);
        break;
      case Collective::Bcast:  // one buffer, recv (bench/call_buffers.hpp)
        req ? MPI_Ibcast(recv, count, MPI_BYTE, 0, w, req) : MPI_Bcast(recv, count, MPI_BYTE, 0, w);
        break;
      case Collective::Gather:
        req ? MPI_Igather(send, count, MPI_BYTE, recv, count, MPI_BYTE, 0, w, req)
            : MPI_Gather(send, count, MPI_BYTE, recv, count, MPI_BYTE, 0, w);
        break;
      case Collective::Allreduce:
        req ? MPI_Iallreduce(send, recv, floats, MPI_FLOAT, MPI_SUM, w, req)
            : MPI_Allreduce(send, recv, floats, MPI_FLOAT, MPI_SUM, w);
        break;
      case Collective::ReduceScatterBlock:
        req ? MPI_Ireduce_scatter_block(send, recv, floats, MPI_FLOAT, MPI_SUM, w, req)
            : MPI_Reduce_scatter_block(send, recv, floats, MPI_FLOAT, MPI_SUM, w);
        break;
      case Collective::ReduceScatter: {
        blocks_.assign(counts_.size(), floats);
        req ? MPI_Ireduce_scatter(send, recv, blocks_.data(), MPI_FLOAT, MPI_SUM, w, req)
            : MPI_Reduce_scatter(send, recv, blocks_.data(), MPI_FLOAT, MPI_SUM, w);
        break;
      }
      case Collective::Reduce:
        req ? MPI_Ireduce(send, recv, floats, MPI_FLOAT, MPI_SUM, 0, w, req)
            : MPI_Reduce(send, recv, floats, MPI_FLOAT, MPI_SUM, 0, w);
        break;
      case Collective::Alltoall:
        req ? MPI_Ialltoall(send, count, MPI_BYTE, recv, count, MPI_BYTE, w, req)
            : MPI_Alltoall(send, count, MPI_BYTE, recv, count, MPI_BYTE, w);
        break;
      case Collective::Alltoallv:
        req ? MPI_Ialltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, w, req)
            : MPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, w);
        break;
      case Collective::Scatter:
        req ? MPI_Iscatter(send, count, MPI_BYTE, recv, count, MPI_BYTE, 0, w, req)
            : MPI_Scatter(send, count, MPI_BYTE, recv, count, MPI_BYTE, 0, w);
        break;
      case Collective::Scatterv:
        req ? MPI_Iscatterv(send, counts, displs, MPI_BYTE, recv, count, MPI_BYTE, 0, w, req)
            : MPI_Scatterv(send, counts, displs, MPI_BYTE, recv, count, MPI_BYTE, 0, w);
        break;
      case Collective::Gatherv:
        req ? MPI_Igatherv(send, count, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, w, req)
            : MPI_Gatherv(send, count, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, w);
        break;
      default:
        req ? MPI_Ibarrier(w, req) : MPI_Barrier(w);
        break;
    }
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  std::vector<int> counts_, displs_, blocks_;
};

}  // namespace
}  // namespace railcoll::bench

int main(int argc, char** argv) {
  using namespace railcoll::bench;
  MPI_Init(&argc, &argv);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  PeerOptions o;
  const std::string err = parse_peer_options({argv + 1, argv + argc}, "railcoll-mpi-bench", "mpi", &o);
  if (!err.empty()) {
    if (me == 0 && err == "help") std::cout << peer_usage("railcoll-mpi-bench", "an MPI library (Open MPI)");
    if (me == 0 && err != "help") std::cerr << "railcoll-mpi-bench: " << err << "\n";
    MPI_Finalize();
    return err == "help" ? 0 : 2;
  }
  MpiSide side;
  MpiCollectives mpi;
  const int status = run_peer_bench(side, mpi, o, std::cout, std::cerr);
  MPI_Finalize();
  return status;
}
