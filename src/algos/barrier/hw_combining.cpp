// Hardware barrier with combined acknowledgements (seed 004 §4.1 elan_hgsync,
// Figure 7; seed 003 §4.3): rank 0's node sends a test-and-set multicast; the
// switches combine every process's answer into one acknowledgement; when all
// are ready, one multicast 'go' wakes every process.
//
// In the schedule: every other rank puts a 0-byte 'ready' to rank 0 flagged
// HwAssist::Combine (the simulator charges no per-message cost at rank 0 for
// them, as the switches combine them); rank 0 waits for N-1 readies, then puts
// the 'go' to every other rank flagged HwAssist::Multicast, consecutively, with
// the same (empty) source and rail: one injection. The verifier sees a
// centralised barrier (the runtime refuses it and names the software
// equivalent, select.hpp software_equivalent).
// Hockney with the hardware: T = 2 (ts + levels of the fat tree x hop latency),
// independent of N; as plain puts: 2 (N-1) messages through rank 0.
#include "core/registry.hpp"

namespace railcoll::barrier {

namespace {

void build_hw_combining(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  enum { kReady = 0, kGo = 1 };
  for (int p = 1; p < N; ++p) b.put(p, 0, 0, {}, 0, b.rank_counter(0, kReady), HwAssist::Combine);
  b.wait(0, 0, b.rank_counter(0, kReady), N - 1);
  for (int p = 1; p < N; ++p) b.put(0, 1, p, {}, 0, b.rank_counter(p, kGo), HwAssist::Multicast);
  for (int p = 1; p < N; ++p) b.wait(p, 1, b.rank_counter(p, kGo), 1);
}

const AlgorithmRegistrar registered{{Collective::Barrier, 4, "hw_combining",
    "hardware barrier: readies combined by the switches, one multicast 'go'",
    "2 ts (hardware); 2 (N-1) messages as plain puts",
    "seed 004 §4.1 Fig. 7, seed 003 §4.3", {}, build_hw_combining}};

}  // namespace

}  // namespace railcoll::barrier
