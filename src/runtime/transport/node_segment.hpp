// The node's shared-memory segment as the executor sees it (Transport::node()):
// its layout (counters, sleepers, the call each local rank is in, then the
// shared buffer's banks). Making it is the node room's set-up
// (local/node_shm.hpp); the fake transport lays out plain memory the same way.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace railcoll::rt {

constexpr int kMaxNodeCounters = 256;  // a schedule's node counters
constexpr int kMaxLocalRanks = 512;
constexpr uint64_t kShmMagic = 0x5241494c434f4c4cull;  // "RAILCOLL"
constexpr size_t kShmHeader = 64 * 1024;

// Two banks of node counters and of the shared buffer: call n uses bank n % 2,
// so a rank that has left call n and entered n+1 touches nothing a slower
// local rank may still use in call n, and no schedule needs a node-wide
// synchronisation at its end. A rank enters call n+2 (the same bank again)
// only once every rank of its node has entered call n+1, i.e. left call n:
// each rank counts its entries in the entry slot of the call's bank
// (executor.cpp, "Consecutive calls"; docs/runtime.md).
constexpr int kBanks = 2;
constexpr int kCounterSlots = kBanks * kMaxNodeCounters + kBanks;
// Where counter `index` of bank `bank` lives, and the bank's entry counter.
constexpr int counter_slot(int bank, int index) { return bank * kMaxNodeCounters + index; }
constexpr int entry_slot(int bank) { return kBanks * kMaxNodeCounters + bank; }
// Bytes of a node segment whose banks hold `capacity` bytes each (RAILCOLL_SHM_MIB).
constexpr size_t node_segment_bytes(uint64_t capacity) { return kShmHeader + kBanks * capacity; }

// A local rank asleep on a node counter says which one and how far it must
// get (want), so that a rank that raises it wakes exactly the sleepers whose
// wait is over, once: futex sleepers by their bell, the others (asleep in
// epoll over their connections too) by a Wake frame.
struct NodeSleeper {
  // 0: awake; else kWantSet | (kWantFutex) | counter index << 48 | target.
  std::atomic<uint64_t> want;
  std::atomic<uint32_t> bell;  // futex word of a sleeper that watches nothing else
  uint32_t unused;
};
constexpr uint64_t kWantSet = 1ull << 63;
constexpr uint64_t kWantFutex = 1ull << 62;
constexpr uint64_t kWantTargetBits = 48;
constexpr uint64_t kWantAnyTarget = (1ull << kWantTargetBits) - 1;  // a target too large to encode: wake at any rise

struct NodeShm {
  uint64_t magic;
  uint64_t capacity;
  std::atomic<uint64_t> counters[kCounterSlots];  // counter_slot(), entry_slot()
  NodeSleeper sleepers[kMaxLocalRanks];
  // The call each local rank is in, (sequence << 32) | 32 bits of its
  // signature in one word so a reader never sees half of a new call: data a
  // local peer leaves in shared memory carries no frame header, so ranks of a
  // node compare their calls here. Per bank: a rank already in call n+1 must
  // not hide its call n from a slower local peer that checks it (bank rule above).
  std::atomic<uint64_t> call[kBanks][kMaxLocalRanks];
};
static_assert(sizeof(NodeShm) <= kShmHeader, "shm header");

// One rank's mapping of its node's segment.
struct NodeSegment {
  NodeShm* shm = nullptr;
  char* data = nullptr;  // the shared buffer's banks, behind the header: bank b at data + b * capacity
  size_t bytes = 0;      // mapped: the header and the banks
  char* bank(int b) const { return data + static_cast<size_t>(b) * shm->capacity; }
};

}  // namespace railcoll::rt
