// Schedules as text (for people, checked against the papers' figures by eye) and
// as JSON (for tools and tests).
#pragma once
#include <ostream>

#include "core/schedule.hpp"

namespace railcoll {

void print_schedule_text(std::ostream& out, const Schedule& s);
void print_schedule_json(std::ostream& out, const Schedule& s);
void print_stats_text(std::ostream& out, const Schedule& s);

// "allgather/bruck [9 ranks, 9 nodes x 1, 2 rails; 3 B per rank]"
std::string schedule_title(const Schedule& s);
// "op #5 (step 1: put -> 1, rail 0, 3 B)"
std::string describe_op(const Schedule& s, int rank, int index);

// "4 KiB", "1.5 MiB", "17 B"
std::string human_bytes(uint64_t b);

}  // namespace railcoll
