// A learned scalar worth tracking over training (MoPE omega/sigma per pair,
// EGA tau/alpha per layer and head), as emitted to the metrics stream and the
// results database.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace egm {

struct LearnedParam {
  std::string module;  // "mope", "ega", ...
  int64_t layer;       // block index, -1 for model-level modules
  int64_t index;       // head or pair index
  std::string name;    // "omega", "sigma", "tau", "alpha", ...
  double value;
};

using LearnedParams = std::vector<LearnedParam>;

}  // namespace egm
