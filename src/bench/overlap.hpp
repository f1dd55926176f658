// The nonblocking and persistent benchmark (railcoll bench COLL --nonblocking |
// --persistent), OSU's way (osu_iallgather, osu_iallreduce, osu_ibcast, ...):
//   pure     post + wait, nothing between: the nonblocking latency t_pure, timed
//            call by call alternating with the blocking call (t_blocking), so
//            both see the same machine;
//   overlap  post, a busy loop of t_pure (each rank its own mean t_pure, as OSU)
//            that calls nothing of railcoll (busy_compute.h), wait: the overall
//            time t_ovrl and the compute time t_cpu;
//   overlap % = max(0, 100 * (1 - (t_ovrl - t_cpu) / t_pure)), from means over
//            ranks of each rank's mean (OSU), and from medians over every rank's
//            calls (the same formula, robust to a noisy machine).
// "post" is railcoll_iCOLL, or for --persistent railcoll_start of one request
// made by railcoll_COLL_init before the size's first call; "wait" is
// railcoll_wait. Every call is preceded by a barrier (and the rest of
// --idle-us), and with -c followed by one and checked, like the blocking
// benchmark (bench/harness.hpp).
#pragma once
#include <railcoll/railcoll.h>

#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "bench/overlap_figures.hpp"
#include "bench/records.hpp"
#include "bench/stats.hpp"

namespace railcoll::bench {

// Times one size on this rank (every rank calls it with the same arguments):
// `warmup` untimed and `calls` timed calls of each kind. Returns "" or what
// failed (a call's status, with railcoll_last_error()); a wrong result sets
// *wrong to its description (the first one) and the run goes on.
std::string time_overlap(railcoll_comm_t comm, BenchCall& call, CallForm form, const railcoll_call_opts_t* opts,
                         int calls, int warmup, bool validate, int idle_us, OverlapTimes* mine, std::string* wrong);

}  // namespace railcoll::bench
