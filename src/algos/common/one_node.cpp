// Flat one-node schedules (one_node.hpp).
#include "algos/common/one_node.hpp"

#include <vector>

namespace railcoll::one_node {

namespace {

constexpr int kIn = 0;  // node counter: the inputs that are in their slots

// Every rank copies `len` bytes of its send into slot (its rank) and signals.
void stage(ScheduleBuilder& b, uint64_t len) {
  const int P = b.topo().nranks();
  b.set_shared(0, static_cast<uint64_t>(P) * len);
  for (int r = 0; r < P; ++r) {
    b.copy(r, 0, {{b.send(r, 0, len), b.shared(0, r * len, len)}});
    b.signal(r, 0, b.node_counter(0, kIn));
  }
}

// Rank r waits for every slot, then recv[0, len) = slot 0 (op) slot 1 (op) ... at offset `at`.
void combine_slots(ScheduleBuilder& b, int r, uint64_t slot_bytes, uint64_t at, uint64_t len) {
  const int P = b.topo().nranks();
  b.wait(r, 1, b.node_counter(0, kIn), static_cast<uint64_t>(P));
  if (len == 0) return;
  b.copy(r, 1, {{b.shared(0, at, len), b.recv(r, 0, len)}});
  for (int s = 1; s < P; ++s) b.reduce(r, 1, {{b.shared(0, s * slot_bytes + at, len), b.recv(r, 0, len)}});
}

}  // namespace

void allreduce(ScheduleBuilder& b, uint64_t m) {
  stage(b, m);
  for (int r = 0; r < b.topo().nranks(); ++r) combine_slots(b, r, m, 0, m);
}

void reduce(ScheduleBuilder& b, uint64_t m, int root) {
  stage(b, m);
  combine_slots(b, root, m, 0, m);
}

void reduce_scatter(ScheduleBuilder& b, const BlockLayout& L) {
  stage(b, L.total());
  for (int r = 0; r < b.topo().nranks(); ++r) combine_slots(b, r, L.total(), L.displ[r], L.count[r]);
}

void alltoall(ScheduleBuilder& b, const BlockLayout& L) {
  const int P = b.topo().nranks();
  // Block s -> d at in_slot[s * P + d], the blocks for one rank together.
  std::vector<uint64_t> at(static_cast<size_t>(P) * P);
  uint64_t total = 0;
  for (int d = 0; d < P; ++d)
    for (int s = 0; s < P; ++s)
      if (s != d) at[static_cast<size_t>(s) * P + d] = total, total += L.pair(s, d);
  b.set_shared(0, total);
  for (int s = 0; s < P; ++s) {
    std::vector<Segment> in;
    for (int d = 0; d < P; ++d)
      if (d != s && L.pair(s, d))
        in.push_back({b.send(s, L.send_offset(s, d), L.pair(s, d)), b.shared(0, at[static_cast<size_t>(s) * P + d], L.pair(s, d))});
    if (!in.empty()) b.copy(s, 0, in);
    if (L.pair(s, s)) b.copy(s, 0, {{b.send(s, L.send_offset(s, s), L.pair(s, s)), b.recv(s, L.recv_offset(s, s), L.pair(s, s))}});
    b.signal(s, 0, b.node_counter(0, kIn));
  }
  for (int d = 0; d < P; ++d) {
    b.wait(d, 1, b.node_counter(0, kIn), static_cast<uint64_t>(P));
    std::vector<Segment> out;
    for (int s = 0; s < P; ++s)
      if (s != d && L.pair(s, d))
        out.push_back({b.shared(0, at[static_cast<size_t>(s) * P + d], L.pair(s, d)), b.recv(d, L.recv_offset(d, s), L.pair(s, d))});
    if (!out.empty()) b.copy(d, 1, out);
  }
}

}  // namespace railcoll::one_node
