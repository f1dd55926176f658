// Creating and mapping the node's shared-memory segment (layout in node_shm.hpp).
// Set-up only: the communicator (comm.cpp) calls it once and then uses the mapping.
#include "runtime/node_shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "runtime/net.hpp"
#include "runtime/store.hpp"

namespace railcoll::rt {

// The node's segment: created by the node leader, opened by the others, and
// unlinked as soon as everyone has it mapped, so a crash leaves nothing in /dev/shm.
void map_node_shm(NodeSegment& seg, StoreClient* store, const std::string& job, int comm_index, const Topology& topo,
                  int me, uint64_t shm_bytes, double deadline) {
  int node = topo.node_of(me);
  seg.bytes = kShmHeader + shm_bytes;
  std::string name = "/railcoll-" + job + "-c" + std::to_string(comm_index) + "-n" + std::to_string(node);
  for (auto& ch : name)
    if (ch != '/' && !isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '_';
  bool leader = topo.is_leader(me);
  std::string prefix = "c" + std::to_string(comm_index) + "/shm/" + std::to_string(node) + "/";
  int fd = -1;
  if (leader) {
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throw RuntimeError(Status::Bootstrap, "cannot create shared memory " + name + ": " + strerror(errno));
    if (ftruncate(fd, static_cast<off_t>(seg.bytes)) != 0) {
      shm_unlink(name.c_str());
      throw RuntimeError(Status::Bootstrap, "cannot size shared memory " + name + ": " + strerror(errno));
    }
  } else {
    store->get(prefix + "created", deadline);
    fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) throw RuntimeError(Status::Bootstrap, "cannot open shared memory " + name + ": " + strerror(errno));
  }
  void* p = mmap(nullptr, seg.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    if (leader) shm_unlink(name.c_str());
    throw RuntimeError(Status::Bootstrap, "cannot map shared memory " + name + ": " + strerror(errno));
  }
  seg.shm = static_cast<NodeShm*>(p);
  seg.data = static_cast<char*>(p) + kShmHeader;
  if (leader) {  // the header is complete before anyone may open the segment
    seg.shm->capacity = shm_bytes;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    seg.shm->magic = kShmMagic;
    if (store) store->set(prefix + "created", "1");
  } else if (seg.shm->magic != kShmMagic || seg.shm->capacity != shm_bytes) {
    throw RuntimeError(Status::Mismatch, "shared memory " + name + " has a different size on the node leader (" +
                                                  std::to_string(seg.shm->capacity >> 20) + " MiB): RAILCOLL_SHM_MIB must be the same on every rank");
  }
  if (store) {
    store->set(prefix + "mapped/" + std::to_string(topo.local_rank(me)), "1");
    if (leader)
      for (int l = 0; l < topo.node_size(node); ++l) store->get(prefix + "mapped/" + std::to_string(l), deadline);
  }
  if (leader) shm_unlink(name.c_str());
}

}  // namespace railcoll::rt
