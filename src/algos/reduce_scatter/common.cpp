#include "algos/reduce_scatter/common.hpp"

#include <algorithm>

#include "algos/allgather/common.hpp"

namespace railcoll::reduce_scatter {

BothRegistrars::BothRegistrars(int order, const char* name, const char* summary, const char* cost,
                               const char* source, BuildFn build, bool keeps_order)
    : block({Collective::ReduceScatterBlock, order, name, summary, cost, source, {}, build, keeps_order}),
      counts({Collective::ReduceScatter, order, name, summary, cost, source, {}, build, keeps_order}) {}

namespace {

// The bytes [lo, lo + length) of a rank-ordered buffer that sit at `at` in a span.
struct Window {
  Span at;
  uint64_t lo;
  Span part(uint64_t a, uint64_t z) const { return {at.region, at.owner, at.offset + (a - lo), z - a}; }
};

}  // namespace

int recursive_halving(ScheduleBuilder& b, const BlockLayout& L, const std::function<Span(int rank)>& input,
                      int step0, int counter0, const DeliverFn& deliver) {
  const int N = L.n();
  const uint64_t T = L.total();
  allreduce::Fold f(N);
  // Participant a speaks for ranks [first(a), first(a + 1)): its own and, for
  // the first rem, the rank that folded into it.
  auto first = [&](int a) { return a < f.rem ? 2 * a : a + f.rem; };
  auto bytes_at = [&](int a) { return L.displ[first(a)]; };  // a in [0, p2]
  // The participant range [lo, hi) a participant keeps after each step.
  auto kept = [&](int p) {
    std::vector<std::pair<int, int>> out;
    int lo = 0, hi = f.p2;
    for (int s = 0; s < f.log2; ++s) {
      int mid = (lo + hi) / 2;
      if (p & (f.p2 >> (s + 1))) lo = mid; else hi = mid;
      out.push_back({lo, hi});
    }
    return out;
  };
  // Scratch: the fold's slot (fold receivers), then one slot per step holding
  // the kept range, packed. A step's slot becomes the accumulator: what
  // arrives is combined with the previous accumulator's kept part in place.
  std::vector<std::vector<uint64_t>> slot_at(f.p2);
  std::vector<Window> acc(f.p2);
  for (int p = 0; p < f.p2; ++p) {
    const int r = f.unit_of(p);
    const bool folds_in = p < f.rem;
    uint64_t at = folds_in ? T : 0;
    for (auto [lo, hi] : kept(p)) slot_at[p].push_back(at), at += bytes_at(hi) - bytes_at(lo);
    b.set_scratch(r, at);
    acc[p] = {input(r), 0};
  }
  for (int p = 0; p < f.rem; ++p) {  // the fold: rank 2p hands its whole input to 2p + 1
    const int from = 2 * p, to = 2 * p + 1;
    const CounterRef c = b.rank_counter(to, counter0);
    const Span slot = b.scratch(to, 0, T);
    b.put(from, step0, to, {{input(from), slot}}, b.rail_for(T, 0), c);
    b.wait(to, step0, c, 1);
    b.reduce(to, step0, {{input(to), slot}});
    acc[p] = {slot, 0};
  }
  for (int s = 0; s < f.log2; ++s) {
    const int step = step0 + 1 + s;
    std::vector<Window> next(f.p2);
    for (int p = 0; p < f.p2; ++p) {
      const int q = p ^ (f.p2 >> (s + 1)), r = f.unit_of(p), peer = f.unit_of(q);
      const auto [glo, ghi] = kept(q)[s];  // what p gives up: the partner's half
      const auto [klo, khi] = kept(p)[s];
      const uint64_t give_lo = bytes_at(glo), give_hi = bytes_at(ghi), keep_lo = bytes_at(klo), keep_hi = bytes_at(khi);
      const CounterRef c = b.rank_counter(peer, counter0 + 1 + s);
      const Span into{Region::Scratch, peer, slot_at[q][s], give_hi - give_lo};
      b.put(r, step, peer, {{acc[p].part(give_lo, give_hi), into}}, b.rail_for(give_hi - give_lo, s), c);
      next[p] = {b.scratch(r, slot_at[p][s], keep_hi - keep_lo), keep_lo};
      b.wait(r, step, b.rank_counter(r, counter0 + 1 + s), 1);
      b.reduce(r, step, {{acc[p].part(keep_lo, keep_hi), next[p].part(keep_lo, keep_hi)}});
    }
    acc = std::move(next);
  }
  const int last = step0 + 1 + f.log2;
  for (int p = 0; p < f.p2; ++p)
    for (int o = first(p); o < first(p + 1); ++o)
      deliver(o, f.unit_of(p), acc[p].part(L.displ[o], L.displ[o + 1]), last, counter0 + 1 + f.log2);
  return last + 1;
}

std::vector<Piece> packed_part(const ByteRanges& ranges, uint64_t lo, uint64_t hi) {
  std::vector<Piece> out;
  uint64_t pos = 0;
  for (auto& br : ranges) {
    const uint64_t len = br.second - br.first, a = std::max(lo, pos), z = std::min(hi, pos + len);
    if (a < z) out.push_back({a, br.first + (a - pos), z - a});
    pos += len;
  }
  return out;
}

NodeStrings::NodeStrings(const Topology& t, const BlockLayout& L, size_t elem_bytes)
    : ranges(t.nnodes()), bytes(t.nnodes(), 0), packed_at(t.nranks(), 0), elem(elem_bytes),
      most_pieces(std::max(1, kCounterBudget / (2 * t.nnodes() - 1))) {
  for (int q = 0; q < t.nnodes(); ++q) {
    ranges[q] = allgather::byte_ranges(L, allgather::runs_of(t.ranks_of(q)));
    for (int r : t.ranks_of(q)) packed_at[r] = bytes[q], bytes[q] += L.count[r];
  }
}

allreduce::Chunks NodeStrings::pieces(int q) const {
  const uint64_t n = std::min((bytes[q] + kPieceBytes - 1) / kPieceBytes, most_pieces);
  return allreduce::Chunks(bytes[q], elem, static_cast<int>(std::max<uint64_t>(n, 1)));
}

int NodeStrings::all_pieces() const {
  int n = 0;
  for (size_t q = 0; q < bytes.size(); ++q) n += pieces(static_cast<int>(q)).parts;
  return n;
}

std::vector<Piece> NodeStrings::piece(int q, int j) const {
  const allreduce::Chunks c = pieces(q);
  return packed_part(ranges[q], c.begin(j), c.begin(j) + c.size(j));
}

}  // namespace railcoll::reduce_scatter
