// Making the node's shared-memory segment (layout in ../node_segment.hpp): a
// named segment the node leader creates, the out-of-band exchange saying when
// the others map it and when it is unlinked. Set-up only: the node room
// (local_node.hpp) calls it once and then hands out the mapping.
#pragma once
#include <cstdint>
#include <string>

#include "core/topology.hpp"
#include "runtime/transport/node_segment.hpp"

namespace railcoll::rt {

class OutOfBand;

// The node's segment: created by the node leader, opened by the others, and
// unlinked as soon as everyone has it mapped, so a crash leaves nothing in
// /dev/shm. name: unique per communicator ("<job>-<tag>"); shm_bytes: the
// buffer's capacity (RAILCOLL_SHM_MIB). Every rank of the communicator takes
// part (two exchanges on `oob`), and all fail together if one rank cannot.
// seg is filled in as soon as the segment is mapped, so its owner unmaps it
// (unmap_node_shm) even when a later step throws.
void map_node_shm(NodeSegment& seg, OutOfBand& oob, const std::string& name, const Topology& topo, int me,
                  uint64_t shm_bytes);
void unmap_node_shm(NodeSegment& seg);

}  // namespace railcoll::rt
