// Creating and mapping the node's shared-memory segment (layout in node_shm.hpp).
// Set-up only: the node room (local_node.hpp) calls it once and then hands out the mapping.
#include "runtime/transport/local/node_shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>

#include "core/errors.hpp"
#include "runtime/bootstrap/oob.hpp"

namespace railcoll::rt {

void map_node_shm(NodeSegment& seg, OutOfBand& oob, const std::string& unique, const Topology& topo, int me,
                  uint64_t shm_bytes) {
  const int node = topo.node_of(me);
  const bool leader = topo.is_leader(me);
  seg.bytes = node_segment_bytes(shm_bytes);
  std::string name = "/railcoll-" + unique + "-n" + std::to_string(node);
  for (auto& ch : name)
    if (ch != '/' && !isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '_';
  auto map = [&](int fd) {
    void* p = mmap(nullptr, seg.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw RuntimeError(Status::Bootstrap, "cannot map shared memory " + name + ": " + strerror(errno));
    seg.shm = static_cast<NodeShm*>(p);
    seg.data = static_cast<char*>(p) + kShmHeader;
  };

  // 1. The leader creates it and writes the header.
  std::exception_ptr failed;
  if (leader) {
    try {
      int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0) throw RuntimeError(Status::Bootstrap, "cannot create shared memory " + name + ": " + strerror(errno));
      if (ftruncate(fd, static_cast<off_t>(seg.bytes)) != 0) {
        close(fd);
        shm_unlink(name.c_str());
        throw RuntimeError(Status::Bootstrap, "cannot size shared memory " + name + ": " + strerror(errno));
      }
      try {
        map(fd);
      } catch (...) {
        shm_unlink(name.c_str());
        throw;
      }
      seg.shm->capacity = shm_bytes;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      seg.shm->magic = kShmMagic;
    } catch (...) {
      failed = std::current_exception();
    }
  }
  try {
    all_or_none(oob, failed, "create its node's shared memory");
  } catch (...) {
    if (leader && seg.shm) shm_unlink(name.c_str());
    throw;
  }

  // 2. The others map it; 3. once all have, the leader unlinks it (whatever happened).
  if (!leader) {
    try {
      int fd = shm_open(name.c_str(), O_RDWR, 0600);
      if (fd < 0) throw RuntimeError(Status::Bootstrap, "cannot open shared memory " + name + ": " + strerror(errno));
      map(fd);
      if (seg.shm->magic != kShmMagic || seg.shm->capacity != shm_bytes)
        throw RuntimeError(Status::Mismatch, "shared memory " + name + " has a different size on the node leader (" +
                                                 std::to_string(seg.shm->capacity >> 20) +
                                                 " MiB): RAILCOLL_SHM_MIB must be the same on every rank");
    } catch (...) {
      failed = std::current_exception();
    }
  }
  try {
    all_or_none(oob, failed, "map its node's shared memory");
  } catch (...) {
    if (leader) shm_unlink(name.c_str());
    throw;
  }
  if (leader) shm_unlink(name.c_str());
}

void unmap_node_shm(NodeSegment& seg) {
  if (seg.shm) munmap(seg.shm, seg.bytes);
  seg.shm = nullptr;
  seg.data = nullptr;
}

}  // namespace railcoll::rt
