// An experiment spec: the JSON file a user writes to describe one sweep
// (variants x seeds on a preset, with overrides). Loading it checks, in order:
//   1. the JSON parses (else: FILE:LINE:COLUMN and the parser's message),
//      with no key given twice in an object;
//   2. it matches schemas/experiment.schema.json (embedded; every violation,
//      each with its JSON path, e.g. "$.overrides.model.n_layr: unknown key");
//   3. it makes sense: variant names resolve, variants xor factorial, baseline,
//      factors and published values name variants of the sweep, and every
//      expanded run config passes egm::validate ("impossible sizes").
// All problems of a stage are reported together in one SpecError.
// experiments/README.md documents the format field by field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run/device.h"
#include "spec/grid.h"
#include "util/error.h"

namespace egm::spec {

// One problem, located by a JSON path: "$" is the document, "$.seeds[1]" the
// second seed, "$.overrides.model.d_model" a nested key.
// A JSON syntax error has no path but a line and column (1-based).
struct Problem {
  std::string path;
  std::string message;
  int line = 0;
  int column = 0;
};

// A spec that does not load. what() is "SOURCE:LINE:COLUMN: invalid JSON: ..."
// for a syntax error, else "SOURCE: invalid experiment spec (N problems):"
// followed by one "  PATH: message" line per problem; problems() has them as data.
class SpecError : public ConfigError {
 public:
  SpecError(std::string source, std::vector<Problem> problems, std::string where);
  const std::string& source() const { return source_; }
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  std::string source_;
  std::vector<Problem> problems_;
};

struct Factorial {
  std::vector<std::string> attention;  // attention kinds (config/variants.h)
  std::vector<std::string> position;   // position kinds
};

// The 2x2 design: a and b each change one factor of base, ab changes both.
struct Factors {
  std::string a;
  std::string b;
  std::string ab;
  std::string base;
};

struct Published {
  std::string source;                    // where the numbers come from
  std::string metric = "final_val";      // which cells column they compare with
  std::map<std::string, double> values;  // variant -> published value
};

// A sequential sweep (egm sweep --until, src/sequential/until_options.h): seeds are
// added in batches until every claim's anytime-valid confidence sequence is
// settled or max_seeds is reached. The spec field and the flags are one
// thing: a flag given overrides the field it names.
struct Until {
  std::vector<std::string> claims;   // "interaction", a variant (its delta against the baseline), "all"
  int64_t max_seeds = 0;             // the budget: seeds per variant at most
  std::optional<int64_t> batch;      // seeds added per look (default 1)
  std::optional<double> half_width;  // a claim narrower than +-this (nats) is settled too
  std::optional<double> alpha;       // family-wise over the claims (default 0.05)
};

struct ExperimentSpec {
  std::string name;                       // [A-Za-z0-9_.-]+, the sweep's name
  std::string description;
  std::string preset = "paper";           // paper | small | tiny
  nlohmann::json overrides = nlohmann::json::object();  // {"model": {...}, "train": {...}}
  std::vector<std::string> variants;      // in spec order; a factorial already expanded
  std::optional<Factorial> factorial;     // as written, when the spec used one
  std::vector<uint64_t> seeds;            // shared by every variant (paired design)
  std::optional<int64_t> steps;           // shorthand for train.max_steps
  std::optional<int64_t> eval_interval;   // shorthand for train.eval_interval
  int retries = 2;                        // failed attempts retried per cell
  int data_parallel = 1;                  // ranks per run
  std::map<std::string, int> data_parallel_by_variant;  // variant -> ranks, overriding data_parallel
  int runs_per_gpu = 1;                   // runs sharing one GPU
  std::optional<DeviceName> device;       // cpu, cuda or cuda:N; --device overrides it (default cpu)
  std::optional<std::string> baseline;    // default "base" when the sweep has it
  std::optional<Factors> factors;
  std::optional<Published> published;
  // How the sweep is run, not what its cells are: left out of the canonical
  // form and the hash, so changing it needs no --extend.
  std::optional<Until> until;
  // false: train every cell, even one whose identity matches a finished run
  // elsewhere in the database (db/reuse.h); as --no-reuse. Not hashed either.
  bool reuse = true;
  // Grid axes (spec/grid.h): every variant x seed runs at every combination of
  // their values. Ordered by path; axes from --grid replace the spec's axis of
  // the same path. Empty: no grid (cells, keys and hashes as before grids).
  std::vector<GridAxis> grid;

  std::string source;  // the file it came from, or the name given to parse_spec
  // The canonical JSON: every field with its default filled in and variants
  // expanded; objects have sorted keys. Stored in the database as spec_json.
  nlohmann::json canonical;
  std::string hash;    // sha256 of canonical.dump(): identifies the spec's content

  // Failed attempts a cell may have before it is given up (1 + retries).
  int max_attempts() const { return retries + 1; }
  // The grid's points (spec/grid.h); one point with no values without a grid.
  std::vector<GridPoint> points() const { return grid_points(grid); }
  // Ranks that train one cell of `variant` together.
  int ranks_for(const std::string& variant) const {
    const auto it = data_parallel_by_variant.find(variant);
    return it == data_parallel_by_variant.end() ? data_parallel : it->second;
  }
};

// The size of a sweep: variants x seeds x the values of each grid axis.
struct SweepSize {
  int64_t variants = 0;
  int64_t seeds = 0;
  std::vector<std::pair<std::string, int64_t>> axes;  // grid path -> values, in expansion order
  double cells = 0;  // the product (a double: a hostile grid cannot overflow it)
  // "2 variants x 3 seeds x 1000 train.lr x 1000 train.weight_decay = 6000000 cells"
  std::string product() const;
};
SweepSize sweep_size(const ExperimentSpec& spec);
// What egm sweep and egm submit accept without --max-cells.
inline constexpr int64_t kDefaultMaxCells = 10000;

// Parses and checks a spec; throws SpecError listing every problem found.
// `grid_args` are --grid arguments ("train.lr=1e-3,3e-4", spec/grid.h): each
// adds an axis, or replaces the spec's axis of that path; their problems are
// named "--grid PATH" (a malformed argument is a ConfigError of one line).
// `max_cells` > 0: a spec of more cells is refused (a ConfigError of one line
// with the product of its axes) before its cells are built and checked.
ExperimentSpec parse_spec(std::string_view text, const std::string& source = "<spec>",
                          const std::vector<std::string>& grid_args = {}, int64_t max_cells = 0);
// Reads `path` (IoError when it cannot) and parses it with the path as source.
ExperimentSpec load_spec(const std::string& path, const std::vector<std::string>& grid_args = {},
                         int64_t max_cells = 0);

// A sweep's stored canonical spec (sweeps.spec_json, `canonical` above) read
// back into the spec's own types: what the analysis, egm merge and the
// sequential loop know of a sweep. Tolerant, as a database may come from any
// egm since schema 1: a field the canonical form gained later (grid,
// data_parallel_by_variant, device) may be absent, an absent optional may be
// null, an unknown device is left out; nothing is validated (a variant this
// build does not know still reads). The grid's axes in the spec's order
// ("grid_order", else sorted). ConfigError when the text is not JSON within
// the bounded reader's limits, not an object, or a field has another shape.
ExperimentSpec read_stored_spec(std::string_view spec_json);
ExperimentSpec read_stored_spec_json(const nlohmann::json& canonical);

// The same spec with these seeds (all of them, in run order), its canonical
// form and hash again: what a sequential sweep launches next.
ExperimentSpec with_seeds(ExperimentSpec spec, std::vector<uint64_t> seeds);

// A spec file that parse_spec reads back to this spec (the same canonical
// form and hash): the canonical form, with a factorial instead of its
// variants, the grid in its axes' order, and the "until" field.
nlohmann::ordered_json spec_file_json(const ExperimentSpec& spec);

// The name a factorial cell gets: the named variant with this (attention,
// position) when there is one (standard+learned -> base, ega+mope ->
// ega_mope), else "ATTENTION+POSITION".
std::string factorial_variant_name(const std::string& attention, const std::string& position);

// The embedded schemas/experiment.schema.json.
const nlohmann::json& experiment_schema();

}  // namespace egm::spec
