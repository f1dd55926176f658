#include "core/background.hpp"

namespace railcoll {

const char* const kBackgroundPatternNames = "complement, uniform, hotspot";

const char* background_name(BackgroundPattern p) {
  switch (p) {
    case BackgroundPattern::None: return "none";
    case BackgroundPattern::Complement: return "complement";
    case BackgroundPattern::Uniform: return "uniform";
    case BackgroundPattern::Hotspot: return "hotspot";
  }
  return "?";
}

bool parse_background(const std::string& name, BackgroundPattern* out) {
  for (BackgroundPattern p : {BackgroundPattern::None, BackgroundPattern::Complement, BackgroundPattern::Uniform,
                              BackgroundPattern::Hotspot})
    if (name == background_name(p)) return *out = p, true;
  return false;
}

int background_destination(BackgroundPattern p, int node, int nodes, uint64_t draw) {
  if (nodes < 2 || node < 0 || node >= nodes) return kNoBackgroundDestination;
  switch (p) {
    case BackgroundPattern::Complement: {
      int partner = nodes - 1 - node;
      return partner == node ? kNoBackgroundDestination : partner;
    }
    case BackgroundPattern::Uniform: {
      int dest = static_cast<int>(draw % static_cast<uint64_t>(nodes - 1));
      return dest >= node ? dest + 1 : dest;
    }
    case BackgroundPattern::Hotspot: return node == 0 ? kNoBackgroundDestination : 0;
    case BackgroundPattern::None: break;
  }
  return kNoBackgroundDestination;
}

}  // namespace railcoll
