// The seeds' results beside the simulator's (`railcoll sim reproduce`,
// docs/simulator.md "Reproductions"). The papers' figures are images, not
// data, so the comparison is on the quantities their text states. Nothing is
// tuned per figure: the presets are fitted only to point-to-point and memory
// micro-benchmarks (presets/README.md), and every mechanism has a source.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace railcoll::sim {

// One quantity a seed states, and the model's value.
//  * kind "point": one model value, compared with the paper's within 20%
//    (for unit "at least": met when the model is at or above the paper's);
//  * kind "band": the quantity depends on an input the text leaves open
//    (`open_input`); the model is run over the documented plausible range of
//    that input, `band_lo`..`band_hi` are the model's values at its ends, and
//    `sim_value` is the value at the preset's default. Met when the paper's
//    value lies inside the band.
struct Quantity {
  std::string paper, figure, quantity;
  double paper_value = 0, sim_value = 0;
  std::string unit;  // "ratio", "us", "MB/s", "fraction", "share of sizes", "at least"
  std::string kind = "point";
  double band_lo = 0, band_hi = 0;
  std::string open_input;  // what varies, and over what range (a band; or a point the input moves less than 20%)
  // Why the model cannot meet it, with the seed's sentence that rules the
  // mechanism out or leaves its input unknown (shown when it is not met).
  std::string cause;
  double rel_error() const { return paper_value == 0 ? 0 : (sim_value - paper_value) / paper_value; }
  bool met() const;
};

// One simulated time of a figure: `x` is the size per rank, or the number of
// nodes in a scaling figure; `us` the slowest rank's time; `samples_us` the
// slowest rank's time of every sample of a loaded run (empty when quiet).
struct FigurePoint {
  std::string collective, label;
  uint64_t x = 0;
  int ranks = 0, nodes = 0, rails = 0;
  double us = 0;
  std::vector<double> samples_us;
  std::string background;  // "" when quiet
};

struct Figure {
  std::string name;  // file stem, e.g. "seed001-fig5"
  std::string title, x_label = "bytes per rank";
  std::vector<FigurePoint> points;
};

struct Reproduction {
  std::vector<Quantity> quantities;
  std::vector<Figure> figures;
};

// "seed001", "seed002", "seed003", "seed004".
const std::vector<std::string>& reproduction_names();
// Throws InputError for an unknown name.
Reproduction reproduce(const std::string& name);

}  // namespace railcoll::sim
