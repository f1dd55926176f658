#include "bench/call_buffers.hpp"

#include <algorithm>

namespace railcoll::bench {

CallBuffers::CallBuffers(Collective coll, uint64_t bytes, int me, int n) : t_(railcoll::traits(coll)) {
  shape_.rank = me;
  shape_.nranks = n;
  shape_.bytes = bytes;
  if (t_.reducing) shape_.dtype = DataType::Float32;
  send_.assign(t_.send_length(shape_) + 4, 0);
  recv_.assign(std::max<uint64_t>(t_.recv_length(shape_), bytes * (t_.result == Result::Blocks ? n : 1)) + 4, 0);
  counts_.assign(n, bytes);
  for (int r = 0; r < n; ++r) displs_.push_back(r * bytes);
}

void CallBuffers::prepare(int call) { t_.fill(shape_, call, send_.data(), recv_.data()); }

std::string CallBuffers::check(int call) const { return t_.check(shape_, call, recv_.data()); }

}  // namespace railcoll::bench
