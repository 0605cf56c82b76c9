// A learned scalar worth tracking over training (MoPE omega/sigma per pair,
// EGA tau/alpha per layer and head, the EGA gate's open share), as the model
// reports it, a params record carries it and the results database stores it.
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
