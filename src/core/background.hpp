// Background traffic patterns (seed 004 §5, seed 003 §4.6): who sends to whom
// while a measured collective runs. One pure definition for everything that
// generates load: the traffic generator on the emulated cluster
// (src/testbed/traffic.cpp) and, once switched over, the simulator's
// generators (src/sim/engine.cpp). Nodes are numbered 0..nodes-1.
#pragma once
#include <cstdint>
#include <string>

namespace railcoll {

enum class BackgroundPattern : uint8_t {
  None,
  Complement,  // node i -> node M-1-i: seed 004's bitwise complement when M is a power of two
  Uniform,     // every message to another node drawn at random
  Hotspot,     // every node -> node 0 (node 0 sends nothing)
};

// "complement, uniform, hotspot": for usage lines and error messages.
extern const char* const kBackgroundPatternNames;
const char* background_name(BackgroundPattern p);
// Accepts "none" and the names above; false for anything else.
bool parse_background(const std::string& name, BackgroundPattern* out);

// Returned by background_destination when the node sends nothing.
constexpr int kNoBackgroundDestination = -1;

// Where `node` (of `nodes`) sends its next background message. `draw` is a
// uniformly random 64-bit number, read by Uniform only (one draw per message);
// the other patterns give every node one fixed partner.
//   complement: M-1-i. For M a power of two that is the complement of every bit
//               of i (seed 004 §5) and a permutation: every node receives from
//               exactly one sender. For other M it is the mirror image, still a
//               permutation; the middle node of an odd M would be its own
//               partner and sends nothing.
//   uniform:    draw mod (M-1), skipping the node itself: each other node with
//               equal probability.
//   hotspot:    node 0; node 0 itself sends nothing.
// kNoBackgroundDestination for None, for a single node, and as said above.
int background_destination(BackgroundPattern p, int node, int nodes, uint64_t draw = 0);

}  // namespace railcoll
