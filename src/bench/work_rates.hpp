// This machine's rates for the compute bound (bench/bounds.hpp): how fast its
// cores copy (memcpy) and combine (the runtime's float-sum reduction kernel)
// buffers larger than its caches, one core alone and every core at once.
#pragma once
#include <ostream>

namespace railcoll::bench {

struct WorkRates {
  int cores = 0;                                 // the CPUs this process may run on
  double copy_one_Bps = 0, reduce_one_Bps = 0;   // one core, bytes/s (reduce: bytes combined)
  double copy_all_Bps = 0, reduce_all_Bps = 0;   // every core at once, summed
};

// Measures for about a second; the best of a few trials (on a shared machine
// the least disturbed one is the closest to what the cores can do).
WorkRates measure_work_rates();

// "copy 9.1 GB/s on one core, 12.0 with 2 at once; reduce ..."
void print_work_rates(std::ostream& o, const WorkRates& w);

}  // namespace railcoll::bench
