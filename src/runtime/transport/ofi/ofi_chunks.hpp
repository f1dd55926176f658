// The libfabric links' wire (ofi_links.hpp): a message is a chunk,
// [ChunkHeader][FrameHeader][payload bytes], of one of three kinds: a piece
// of a frame's payload, a write path's announcement (RTS) or its answer (CTS,
// body: CtsHead then one Segment per destination piece).
#pragma once
#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/transport/ofi/ofi_rail.hpp"
#include "runtime/transport/wire.hpp"

namespace railcoll::rt {

#pragma pack(push, 1)
struct ChunkHeader {
  uint64_t token;   // the sender's (fabric_token)
  uint64_t frame;   // the frame's id among the sender's (kCts: among the receiver's of the answer)
  uint64_t offset;  // where the chunk's bytes go in the frame's payload
  uint32_t kind;    // kChunk, kRts, kCts
  uint32_t unused;
};
struct CtsHead {
  uint32_t answer;  // kAnswer*
  uint32_t slot;
  uint32_t segments;
  uint32_t unused;
};
struct Segment {  // one destination piece of the frame's payload, in order
  uint64_t addr, len, key;
};
#pragma pack(pop)

constexpr uint32_t kChunk = 0, kRts = 1, kCts = 2;
constexpr uint32_t kAnswerDrop = 0, kAnswerMessages = 1, kAnswerWrites = 2;
constexpr uint32_t kSlots = 4096;        // frames coming by writes at once, per rank
constexpr uint64_t kMaxWrites = 0xffff;  // writes per frame (16 bits of the CQ data)
constexpr size_t kHeaders = sizeof(ChunkHeader) + sizeof(FrameHeader);
constexpr size_t kChunkPayload = FabricRail::kBufBytes - kHeaders;

// Copies len bytes at offset off of the pieces `from` to `to`.
inline void gather_pieces(const std::vector<iovec>& from, uint64_t off, size_t len, char* to) {
  for (auto& v : from) {
    if (len == 0) return;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    const size_t n = std::min<size_t>(len, v.iov_len - off);
    memcpy(to, static_cast<const char*>(v.iov_base) + off, n);
    to += n, len -= n, off = 0;
  }
}

// Copies len bytes to offset off of the pieces `to`.
inline void scatter_pieces(const std::vector<iovec>& to, uint64_t off, const char* from, size_t len) {
  for (auto& v : to) {
    if (len == 0) return;
    if (off >= v.iov_len) {
      off -= v.iov_len;
      continue;
    }
    const size_t n = std::min<size_t>(len, v.iov_len - off);
    memcpy(static_cast<char*>(v.iov_base) + off, from, n);
    from += n, len -= n, off = 0;
  }
}

}  // namespace railcoll::rt
