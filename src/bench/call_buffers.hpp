// The buffers of one benchmarked call, sized, filled and checked as the
// collective's traits define them (core/collective.hpp): what every benchmark
// program shares, railcoll's workers (bench/harness.hpp) and the peers'
// programs (bench/peer.hpp) alike, so a byte is checked the same way on every
// side. Bcast and gather use root 0; reductions sum floats.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/collective.hpp"

namespace railcoll::bench {

class CallBuffers {
 public:
  CallBuffers(Collective coll, uint64_t bytes, int me, int n);
  void prepare(int call);  // the input of call number `call`, and recv cleared
  std::string check(int call) const;  // "" when the result is right, else what is wrong
  uint64_t bytes() const { return shape_.bytes; }
  const CollectiveTraits& traits() const { return t_; }
  // A broadcast's root has its message in recv (CollectiveTraits::fill), and
  // every rank passes that one buffer.
  unsigned char* send() { return send_.data(); }
  unsigned char* recv() { return recv_.data(); }
  // The v-calls': the same bytes for every rank, packed.
  const std::vector<size_t>& counts() const { return counts_; }
  const std::vector<size_t>& displs() const { return displs_; }

 protected:
  const CollectiveTraits& t_;
  CallShape shape_;
  std::vector<unsigned char> send_, recv_;
  std::vector<size_t> counts_, displs_;
};

}  // namespace railcoll::bench
