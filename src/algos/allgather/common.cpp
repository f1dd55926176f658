#include "algos/allgather/common.hpp"

namespace railcoll::allgather {

RankRuns runs_of(const std::vector<int>& ranks) {
  RankRuns runs;
  for (int r : ranks) {
    if (!runs.empty() && runs.back().second == r)
      runs.back().second = r + 1;
    else
      runs.push_back({r, r + 1});
  }
  return runs;
}

std::vector<std::pair<uint64_t, uint64_t>> byte_ranges(const BlockLayout& L, const RankRuns& runs) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto& run : runs) out.push_back({L.displ[run.first], L.displ[run.second]});
  return out;
}

std::vector<Segment> same_offset_segments(const BlockLayout& L, const RankRuns& runs, Span src_base,
                                          Span dst_base) {
  std::vector<Segment> segs;
  for (auto& br : byte_ranges(L, runs)) {
    Span s = src_base, d = dst_base;
    s.offset = d.offset = br.first;
    s.length = d.length = br.second - br.first;
    segs.push_back({s, d});
  }
  return segs;
}

RankRuns complement(int nranks, const RankRuns& runs) {
  RankRuns out;
  int at = 0;
  for (auto& run : runs) {
    if (run.first > at) out.push_back({at, run.first});
    at = run.second;
  }
  if (at < nranks) out.push_back({at, nranks});
  return out;
}

void copy_runs_out(ScheduleBuilder& b, const BlockLayout& L, int rank, int step, const RankRuns& runs) {
  int node = b.topo().node_of(rank);
  b.copy(rank, step, same_offset_segments(L, runs, b.shared(node, 0, 0), b.recv(rank, 0, 0)));
}

}  // namespace railcoll::allgather
