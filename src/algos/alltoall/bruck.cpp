// Radix-(k+1) Bruck alltoall(v) for small blocks (seed 000 §6.3's Bruck with k
// ports, on personalised data as in Bruck et al.'s index algorithm).
//
// Position i of rank p starts as p's block for (p + i) mod N. In stage x
// (x = 0..ceil(log_{k+1} N)-1) and port j = 1..k, rank p sends to p + j(k+1)^x,
// in one message, every block whose position has digit x (base k+1) equal to j;
// the receiver holds it at the same position. After the stages a block has moved
// by its position, i.e. reached its destination. A block whose higher digits are
// all 0 makes its last move in stage x and goes straight into the destination's
// recv; the others wait in the receiver's scratch, each stage in fresh room, so no
// write races a read of an earlier stage (no flushes, one counter per stage).
// Blocks need no local rotation: a message is a list of segments.
// Hockney: T = ceil(log_{k+1} N) (ts + N m tau / (k+1)); bytes sent per rank about
// ceil(log_{k+1} N) N m k/(k+1): fewer messages than Direct, more bytes.
#include "algos/alltoall/common.hpp"
#include "algos/common/trees.hpp"

namespace railcoll::alltoall {

namespace {

void build_bruck(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const int N = t.nranks(), k = t.rails(), radix = k + 1;
  const int stages = trees::ceil_log(radix, N);
  // Where position i of rank q is held now: p's send before it first moves.
  std::vector<std::vector<Span>> at(N, std::vector<Span>(N));
  for (int q = 0; q < N; ++q) {
    for (int i = 0; i < N; ++i) {
      const int d = (q + i) % N;
      at[q][i] = b.send(q, L.send_offset(q, d), L.pair(q, d));
    }
    b.copy(q, 0, {block_to_recv(b, L, q, q)});
  }
  std::vector<uint64_t> scratch_used(N, 0);
  long place = 1;
  for (int x = 0; x < stages; ++x, place *= radix) {
    std::vector<std::vector<Span>> next = at;
    int messages = 0;
    for (int j = 1; j <= k && j * place < N; ++j, ++messages)
      for (int p = 0; p < N; ++p) {
        const int q = static_cast<int>((p + j * place) % N);
        std::vector<Segment> segs;
        uint64_t bytes = 0;
        for (int i = 0; i < N; ++i) {
          if ((i / place) % radix != j) continue;
          const Span& from = at[p][i];
          bytes += from.length;
          Span to;
          if (i < place * radix) {  // last move: q is the destination, q - i the source
            to = b.recv(q, L.recv_offset(q, ((q - i) % N + N) % N), from.length);
          } else {
            to = b.scratch(q, scratch_used[q], from.length);
            scratch_used[q] += from.length;
          }
          segs.push_back({from, to});
          next[q][i] = to;
        }
        b.put(p, x, q, segs, b.rail_for(bytes, j - 1), b.rank_counter(q, x));
      }
    at = std::move(next);
    for (int p = 0; p < N; ++p) b.wait(p, x, b.rank_counter(p, x), messages);
  }
  for (int q = 0; q < N; ++q) b.set_scratch(q, scratch_used[q]);
}

const AlltoallRegistrar registered{{Collective::Alltoall, 2, "bruck",
    "radix-(k+1) Bruck: log_{k+1} N steps, blocks forwarded by the digits of their distance",
    "ceil(log_{k+1} N) (ts + N m tau / (k+1))",
    "seed 000 §6.3", {}, build_bruck}};

}  // namespace

}  // namespace railcoll::alltoall
