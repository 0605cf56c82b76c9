// Hyperparameter grids: a spec's "grid" (run-config field path -> list of
// values) crosses every variant x seed with every combination of the values.
// On the command line, `--grid PATH=V1,V2,...` or `--grid PATH=range(a,b[,step])`
// (the multirun grammar of Hydra: a comma list, or a Python-style range with
// the stop excluded) adds an axis or replaces the spec's axis of that path.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace egm::spec {

// One axis: a run-config field ("train.lr", "model.dropout") and its values,
// in the order given.
struct GridAxis {
  std::string path;
  std::vector<nlohmann::json> values;
  std::string where;  // how messages name it: "$.grid[\"train.lr\"]" or "--grid train.lr" (not part of the spec's identity)
};

// One combination of the axes' values. index: 0-based, in expansion order
// (the first axis varies slowest).
struct GridPoint {
  int64_t index = 0;
  std::vector<std::pair<std::string, nlohmann::json>> values;  // path -> value, axis order

  // {"train.lr": 0.001, ...}: what the database stores (cells.grid_json).
  nlohmann::json as_json() const;
  // "train.lr=0.001 model.dropout=0": for people (tables, headings).
  std::string label() const;
};

// Parses one --grid argument, "PATH=V1,V2" or "PATH=range(a,b[,step])". An
// item that reads as a JSON number or boolean is one; any other is a string
// (surrounding double quotes removed). ConfigError, one line naming the
// argument, for a missing '=' or path, an empty item, a malformed or empty
// range, or a value given twice.
GridAxis parse_grid_arg(std::string_view arg);

// The values of "range(a,b[,step])" (stop excluded; integers when a, b and
// step are integers, else numbers a + i*step). ConfigError (naming `what`)
// when malformed, step 0, empty or longer than 10000 values.
std::vector<nlohmann::json> parse_range(std::string_view text, const std::string& what);

// Every combination, the first axis varying slowest; one point with no
// values when there are no axes.
std::vector<GridPoint> grid_points(const std::vector<GridAxis>& axes);

// A value in a label: numbers in their shortest form (0.001, 1e-05), strings bare.
std::string grid_value_text(const nlohmann::json& value);

}  // namespace egm::spec
