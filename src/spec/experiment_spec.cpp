// The sweep spec: loaded from a user's file (schema, then meaning) or read back
// from the database's stored canonical form, both by one field reader.
#include "spec/experiment_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <set>

#include "config/run_config.h"
#include "config/variants.h"
#include "spec/expand.h"
#include "spec/schema_check.h"
#include "util/files.h"
#include "util/json_limits.h"
#include "util/sha256.h"

namespace egm::spec {
namespace {

using nlohmann::json;

// One problem with a position reads as FILE:LINE:COL, the form editors jump to; several are listed by JSON path.
std::string error_message(const std::string& source, const std::vector<Problem>& problems) {
  if (problems.size() == 1 && problems[0].line > 0)
    return fmt::format("{}:{}:{}: {}", source, problems[0].line, problems[0].column, problems[0].message);
  if (problems.size() == 1) return fmt::format("{}: {}: {}", source, problems[0].path, problems[0].message);
  std::string text = fmt::format("{}: invalid experiment spec ({} problem{}):", source, problems.size(),
                                 problems.size() == 1 ? "" : "s");
  for (const auto& p : problems) text += fmt::format("\n  {}: {}", p.path, p.message);
  return text;
}

[[noreturn]] void fail(const std::string& source, std::vector<Problem> problems, const char* file, int line) {
  throw SpecError(source, std::move(problems), egm::detail::location(file, line));
}
// A macro so the SpecError records the line that refused the spec, as EGM_THROW does.
#define EGM_SPEC_FAIL(source, problems) fail(source, problems, __FILE__, __LINE__)

// ---- stage 1: JSON syntax and limits, and keys given twice ------------------------------

// The bounded reader (util/json_limits.h) refuses documents too large, too deep,
// with too long strings or out-of-range numbers before anything recursive
// (valijson, its std::regex, dump) sees them. nlohmann keeps the last of two
// equal keys silently; a spec that says "seeds" twice is almost surely a
// mistake, so the reader collects them and each is a problem here.
json parse_json(std::string_view text, const std::string& source) {
  std::vector<JsonDuplicateKey> duplicates;
  json document;
  try {
    document = egm::parse_json(text, JsonLimits::user(), source, &duplicates);
  } catch (const JsonError& e) {
    // A syntax error stops here: the later stages need a document to look at.
    Problem p;
    p.path = e.path();
    p.line = e.line();
    p.column = e.column();
    p.message = e.detail();
    EGM_SPEC_FAIL(source, {p});
  }
  std::vector<Problem> problems;
  for (const auto& d : duplicates)
    problems.push_back({d.path, fmt::format("key \"{}\" is given twice (only the last would count)", d.key)});
  if (!problems.empty()) EGM_SPEC_FAIL(source, problems);
  return document;
}

// ---- stage 3: meaning -----------------------------------------------------------------

std::vector<std::string> as_strings(const json& array) {
  std::vector<std::string> out;
  for (const auto& v : array) out.push_back(v.get<std::string>());
  return out;
}

// Linear: the lists are a spec's variants or the known kinds, a handful each.
bool contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// Where egm::validate's problem line points in the spec: the earliest field the
// user set that the line names ("model.d_model (30) must be divisible by
// model.n_head (4)"), else the variant whose config it is.
std::string locate_config_problem(const std::string& line, const std::vector<std::pair<std::string, std::string>>& fields,
                                  const std::string& variant_path) {
  size_t best = std::string::npos;
  std::string path = variant_path;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const auto& [key, field_path] : fields) {
    for (size_t pos = line.find(key); pos != std::string::npos; pos = line.find(key, pos + 1)) {
      // Whole words only: "head" must not match inside "n_head".
      const bool left_ok = pos == 0 || !word_char(line[pos - 1]);
      const bool right_ok = pos + key.size() >= line.size() || !word_char(line[pos + key.size()]);
      if (left_ok && right_ok) {
        if (pos < best) {
          best = pos;
          path = field_path;
        }
        break;
      }
    }
  }
  return path;
}

// The problems egm::validate lists, one per "  - " line.
std::vector<std::string> config_problem_lines(const std::string& message) {
  std::vector<std::string> lines;
  size_t pos = 0;
  // The "  - " bullet format is egm::validate's (config/run_config.cpp); a message without bullets is one problem.
  while ((pos = message.find("\n  - ", pos)) != std::string::npos) {
    pos += 5;
    size_t end = message.find('\n', pos);
    lines.push_back(message.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
  }
  if (lines.empty()) lines.push_back(message);
  return lines;
}

// A field that is there: a stored spec from an older egm may spell an absent
// optional as null (a user's file cannot: the schema refuses it).
bool present(const json& d, const char* key) { return d.contains(key) && !d.at(key).is_null(); }

// The one reader of a spec's fields, for a user's file (after the schema
// check) and a stored canonical spec alike (read_stored_spec, checked by
// nothing): every access is .at(), so a missing field is an exception there,
// never undefined behaviour; a field the schema makes optional may be absent.
ExperimentSpec read_fields(const json& d) {
  ExperimentSpec s;
  s.name = d.value("name", "");
  s.description = d.value("description", "");
  s.preset = d.value("preset", "paper");
  if (present(d, "overrides")) s.overrides = d.at("overrides");
  if (present(d, "variants")) s.variants = as_strings(d.at("variants"));
  if (present(d, "factorial"))
    s.factorial = Factorial{as_strings(d.at("factorial").at("attention")), as_strings(d.at("factorial").at("position"))};
  if (present(d, "seeds"))
    for (const auto& seed : d.at("seeds")) s.seeds.push_back(seed.get<uint64_t>());
  if (present(d, "steps")) s.steps = d.at("steps").get<int64_t>();
  if (present(d, "eval_interval")) s.eval_interval = d.at("eval_interval").get<int64_t>();
  s.retries = d.value("retries", 2);
  s.data_parallel = d.value("data_parallel", 1);
  if (present(d, "data_parallel_by_variant"))
    for (const auto& [variant, k] : d.at("data_parallel_by_variant").items()) s.data_parallel_by_variant[variant] = k.get<int>();
  s.runs_per_gpu = d.value("runs_per_gpu", 1);
  if (present(d, "baseline")) s.baseline = d.at("baseline").get<std::string>();
  if (present(d, "factors")) {
    const json& f = d.at("factors");
    s.factors = Factors{f.at("a").get<std::string>(), f.at("b").get<std::string>(), f.at("ab").get<std::string>(),
                        f.at("base").get<std::string>()};
  }
  if (present(d, "published")) {
    const json& p = d.at("published");
    Published pub;
    pub.source = p.value("source", "");
    pub.metric = p.value("metric", "final_val");
    if (present(p, "values"))
      for (const auto& [k, v] : p.at("values").items()) pub.values[k] = v.get<double>();
    s.published = pub;
  }
  // Reuse of finished runs is on unless the spec turns it off.
  s.reuse = !present(d, "reuse") || d.at("reuse").get<bool>();
  if (present(d, "until")) {
    const json& u = d.at("until");
    Until until;
    // "claims" may be one claim as a string or a list of them.
    until.claims = u.at("claims").is_string() ? std::vector<std::string>{u.at("claims").get<std::string>()}
                                              : as_strings(u.at("claims"));
    until.max_seeds = u.at("max_seeds").get<int64_t>();
    if (present(u, "batch")) until.batch = u.at("batch").get<int64_t>();
    if (present(u, "half_width")) until.half_width = u.at("half_width").get<double>();
    if (present(u, "alpha")) until.alpha = u.at("alpha").get<double>();
    s.until = until;
  }
  if (present(d, "grid"))
    for (const auto& [path, values] : d.at("grid").items()) {
      GridAxis axis;
      axis.path = path;
      axis.where = path_with_key("$.grid", path);
      if (values.is_string())  // "range(a,b[,step])", as on the command line (the schema checked the shape)
        axis.values = parse_range(values.get<std::string>(), axis.where);
      else
        for (const auto& v : values) axis.values.push_back(v);
      s.grid.push_back(std::move(axis));
    }
  return s;
}

// The grid's axes: a field of the run config the sweep does not set per cell
// and no other part of the spec sets, with values of its type and none twice.
// `base` is the config every cell starts from (preset, overrides, shorthands).
void check_grid(const ExperimentSpec& s, const RunConfig& base, std::vector<Problem>& problems) {
  // Every field of the run config, defaults included: the set of paths a grid axis may name.
  const json fields = to_json(base, /*every_field=*/true);
  const json& train = s.overrides.contains("train") ? s.overrides["train"] : json::object();
  const json& model = s.overrides.contains("model") ? s.overrides["model"] : json::object();
  for (const GridAxis& axis : s.grid) {
    auto add = [&](std::string path, std::string message) { problems.push_back({std::move(path), std::move(message)}); };
    const size_t dot = axis.path.find('.');
    const std::string section = dot == std::string::npos ? "" : axis.path.substr(0, dot);
    const std::string key = dot == std::string::npos ? "" : axis.path.substr(dot + 1);
    // An unknown field lists every valid one but the two that are set per cell.
    if ((section != "model" && section != "train") || key.empty() || !fields[section].contains(key)) {
      std::vector<std::string> valid;
      for (const char* sec : {"model", "train"})
        for (const auto& [k, v] : fields[sec].items())
          if (std::string(sec) + "." + k != "model.variant" && std::string(sec) + "." + k != "train.seed")
            valid.push_back(std::string(sec) + "." + k);
      add(axis.where, fmt::format("unknown run-config field '{}'; valid: {}", axis.path, fmt::join(valid, ", ")));
      continue;
    }
    if (axis.path == "model.variant") {
      add(axis.where, "model.variant is set per cell by \"variants\"; list the variants there");
      continue;
    }
    if (axis.path == "train.seed") {
      add(axis.where, "train.seed is set per cell by \"seeds\"; list the seeds there");
      continue;
    }
    if ((section == "model" ? model : train).contains(key)) {
      add(axis.where, fmt::format("also set by overrides.{}; give it in one place", axis.path));
      continue;
    }
    if ((axis.path == "train.max_steps" && s.steps) || (axis.path == "train.eval_interval" && s.eval_interval)) {
      add(axis.where, fmt::format("also set by \"{}\"; give it in one place", key == "max_steps" ? "steps" : key));
      continue;
    }
    if (axis.values.empty()) {
      add(axis.where, "empty axis: give at least one value");
      continue;
    }
    for (size_t i = 0; i < axis.values.size(); ++i) {
      const std::string at = fmt::format("{}[{}]", axis.where, i);
      bool duplicate = false;
      // Quadratic, but an axis has a handful of values; a duplicate would give two cells the same config.
      for (size_t j = 0; j < i && !duplicate; ++j)
        if (axis.values[i] == axis.values[j]) {
          add(at, fmt::format("{} is given twice (also item [{}])", grid_value_text(axis.values[i]), j));
          duplicate = true;
        }
      if (duplicate) continue;
      // The value alone on the shared config: a wrong type or a value out of
      // range is reported here, at the value; combinations are checked per cell.
      // A copy per value: apply_overrides changes the config it is given.
      RunConfig c = base;
      try {
        apply_overrides(c, json{{section, {{key, axis.values[i]}}}});
      } catch (const ConfigError& e) {
        add(at, config_problem_lines(e.what()).front());
      }
    }
  }
}

// Variants: a list xor a factorial; every name resolves. A factorial's
// variants are added to s.variants; `variant_paths` gets each one's spec path.
// False when the variants are not all known (no cell config is checked then).
bool check_variants(ExperimentSpec& s, const json& d, std::vector<std::string>& variant_paths,
                    std::vector<Problem>& problems) {
  auto add = [&](std::string path, std::string message) { problems.push_back({std::move(path), std::move(message)}); };
  // Each problem is collected (not thrown) so one run of egm plan lists them all.
  bool variants_ok = true;
  if (d.contains("variants") && d.contains("factorial")) {
    add("$", "give either \"variants\" or \"factorial\", not both");
    variants_ok = false;
  } else if (!d.contains("variants") && !d.contains("factorial")) {
    add("$", "missing \"variants\" (a list of variant names) or \"factorial\" ({\"attention\": [...], \"position\": [...]})");
    variants_ok = false;
  } else if (s.factorial) {
    // A factorial names kinds, not variants: every attention crossed with every position.
    const auto& ak = attention_kinds();
    const auto& pk = position_kinds();
    for (size_t i = 0; i < s.factorial->attention.size(); ++i)
      if (!contains(ak, s.factorial->attention[i])) {
        add(fmt::format("$.factorial.attention[{}]", i), fmt::format("unknown attention '{}'; valid: {}",
                                                                      s.factorial->attention[i], fmt::join(ak, ", ")));
        variants_ok = false;
      }
    for (size_t i = 0; i < s.factorial->position.size(); ++i)
      if (!contains(pk, s.factorial->position[i])) {
        add(fmt::format("$.factorial.position[{}]", i), fmt::format("unknown position encoding '{}'; valid: {}",
                                                                     s.factorial->position[i], fmt::join(pk, ", ")));
        variants_ok = false;
      }
    if (variants_ok)
      for (const auto& a : s.factorial->attention)
        for (const auto& p : s.factorial->position) {
          // Attention-major order: the cells' order, and so their positions, follow it.
          s.variants.push_back(factorial_variant_name(a, p));
          variant_paths.push_back("$.factorial");
        }
  } else {
    for (size_t i = 0; i < s.variants.size(); ++i) {
      variant_paths.push_back(fmt::format("$.variants[{}]", i));
      try {
        // Throws ConfigError, naming the known variants, for a name it cannot resolve.
        resolve_variant(s.variants[i]);
      } catch (const ConfigError& e) {
        add(variant_paths.back(), e.what());
        variants_ok = false;
      }
    }
  }

  return variants_ok;
}

// Every cell's config must be valid: check each variant once (seeds do not
// change validity) and point each problem at the field the user set.
void check_cell_configs(const ExperimentSpec& s, const std::vector<std::string>& variant_paths,
                        std::vector<Problem>& problems) {
  std::vector<std::pair<std::string, std::string>> fields;  // config key -> spec path
  for (const char* section : {"model", "train"})
    // The fields the user set, with where: a validate problem that names one is reported at it.
    if (s.overrides.contains(section))
      for (const auto& [key, v] : s.overrides[section].items())
        fields.emplace_back(key, fmt::format("$.overrides.{}.{}", section, key));
  if (s.steps) fields.emplace_back("max_steps", "$.steps");
  if (s.eval_interval) fields.emplace_back("eval_interval", "$.eval_interval");
  if (!s.grid.empty()) {
    // The axes on the config every cell shares (the variant and seed change nothing a grid may set).
    RunConfig shared = preset_config(s.preset);
    bool shared_ok = true;
    try {
      ExperimentSpec plain = s;
      plain.grid.clear();
      shared = cell_config(plain, s.variants.front(), s.seeds.front());
    } catch (const ConfigError&) {
      shared_ok = false;  // reported below, per variant
    }
    if (shared_ok) check_grid(s, shared, problems);
    for (const auto& axis : s.grid) {
      const size_t dot = axis.path.find('.');
      if (dot != std::string::npos) fields.emplace_back(axis.path.substr(dot + 1), axis.where);
    }
  }
  // With a bad axis the points cannot be built; one empty point still checks the configs without the grid.
  const std::vector<GridPoint> points = problems.empty() ? s.points() : std::vector<GridPoint>(1);
  // Many points and variants hit the same problem; each (path, message) is reported once.
  std::set<std::pair<std::string, std::string>> seen;
  for (const GridPoint& point : points)
  for (size_t i = 0; i < s.variants.size(); ++i) {
    try {
      RunConfig c = cell_config(s, s.variants[i], s.seeds.front(), s.grid.empty() ? nullptr : &point);
      // Each data-parallel rank trains on batch_size / ranks sequences: it must divide evenly.
      const int ranks = s.ranks_for(s.variants[i]);
      if (c.train.batch_size % ranks != 0) {
        const std::string path = s.data_parallel_by_variant.count(s.variants[i])
                                     ? path_with_key("$.data_parallel_by_variant", s.variants[i])
                                     : "$.data_parallel";
        Problem p{path, fmt::format("train.batch_size ({}) must be divisible by data_parallel ({}): "
                                    "the batch is split over the ranks",
                                    c.train.batch_size, ranks)};
        if (seen.insert({p.path, p.message}).second) problems.push_back(p);
      }
    } catch (const ConfigError& e) {
      for (const auto& line : config_problem_lines(e.what())) {
        Problem p{locate_config_problem(line, fields, variant_paths[i]), line};
        if (p.path == variant_paths[i] && s.factorial) p.message = fmt::format("variant {}: {}", s.variants[i], line);
        if (seen.insert({p.path, p.message}).second) problems.push_back(p);
      }
    }
  }
}

// Names that must be variants of this sweep (baseline, factors, published
// values, data_parallel_by_variant); the factors must form a 2x2.
void check_variant_names(ExperimentSpec& s, bool variants_ok, std::vector<Problem>& problems) {
  auto add = [&](std::string path, std::string message) { problems.push_back({std::move(path), std::move(message)}); };
  auto check_member = [&](const std::string& path, const std::string& name) {
    if (variants_ok && !contains(s.variants, name))
      add(path, fmt::format("'{}' is not a variant of this sweep ({})", name, fmt::join(s.variants, ", ")));
    return contains(s.variants, name);
  };
  // Without an explicit baseline, a variant named "base" is it.
  if (s.baseline)
    check_member("$.baseline", *s.baseline);
  else if (contains(s.variants, "base"))
    s.baseline = "base";
  if (s.factors) {
    const Factors& f = *s.factors;
    // Every member is checked (each unknown name gets its own error), then all must hold.
    const bool known[] = {check_member("$.factors.a", f.a), check_member("$.factors.b", f.b),
                          check_member("$.factors.ab", f.ab), check_member("$.factors.base", f.base)};
    bool all = std::all_of(std::begin(known), std::end(known), [](bool k) { return k; });
    if (all) {
      // A 2x2: a changes one factor of base, b the other, ab both.
      VariantInfo a = resolve_variant(f.a), b = resolve_variant(f.b), ab = resolve_variant(f.ab),
                  base = resolve_variant(f.base);
      auto pair = [](const VariantInfo& v) { return fmt::format("{}+{}", v.attention, v.position); };
      if (std::set<std::string>{f.a, f.b, f.ab, f.base}.size() != 4)
        add("$.factors", "a, b, ab and base must be four different variants");
      else if (ab.attention != a.attention || ab.position != b.position || base.attention != b.attention ||
               base.position != a.position)
        add("$.factors",
            fmt::format("not a 2x2 design: expected ab = (attention of a, position of b) and base = (attention of "
                        "b, position of a); got a {}, b {}, ab {}, base {}",
                        pair(a), pair(b), pair(ab), pair(base)));
    }
  }
  if (s.published)
    for (const auto& [variant, value] : s.published->values)
      check_member(path_with_key("$.published.values", variant), variant);
  for (const auto& [variant, k] : s.data_parallel_by_variant)
    check_member(path_with_key("$.data_parallel_by_variant", variant), variant);
}

std::vector<Problem> check_meaning(ExperimentSpec& s, const json& d) {
  std::vector<Problem> problems;
  auto add = [&](std::string path, std::string message) { problems.push_back({std::move(path), std::move(message)}); };

  // The device name is parsed here, not by the schema: the schema cannot know which devices egm knows.
  if (d.contains("device")) {  // a string, by the schema
    try {
      s.device = parse_device_name(d["device"].get<std::string>(), "");
    } catch (const ConfigError& e) {
      add("$.device", e.what());
    }
  }

  std::vector<std::string> variant_paths;
  const bool variants_ok = check_variants(s, d, variant_paths, problems);

  // A shorthand and the override it stands for, both given.
  const json& train = s.overrides.contains("train") ? s.overrides["train"] : json::object();
  if (s.steps && train.contains("max_steps"))
    add("$.steps", "also given as overrides.train.max_steps; give one of them");
  if (s.eval_interval && train.contains("eval_interval"))
    add("$.eval_interval", "also given as overrides.train.eval_interval; give one of them");

  // Cell configs only once the variants resolve and the spec is otherwise sound: else the problems would repeat earlier ones.
  if (variants_ok && problems.empty()) check_cell_configs(s, variant_paths, problems);
  check_variant_names(s, variants_ok, problems);
  return problems;
}

// What the sweep is: its hash decides whether a stored sweep resumes. How it runs ("until", "reuse") stays out,
// so changing those never starts a new sweep.
json canonical_form(const ExperimentSpec& s) {
  json c = json::object();
  c["name"] = s.name;
  c["description"] = s.description;
  c["preset"] = s.preset;
  c["overrides"] = s.overrides;
  // For a factorial, the variants it expanded to are stored too: the stored sweep needs no expansion to read.
  c["variants"] = s.variants;
  if (s.factorial) c["factorial"] = {{"attention", s.factorial->attention}, {"position", s.factorial->position}};
  c["seeds"] = s.seeds;
  if (s.steps) c["steps"] = *s.steps;
  if (s.eval_interval) c["eval_interval"] = *s.eval_interval;
  c["retries"] = s.retries;
  c["data_parallel"] = s.data_parallel;
  c["runs_per_gpu"] = s.runs_per_gpu;
  // Only when given, so the specs (and hashes) of sweeps written before it stay the same.
  if (!s.data_parallel_by_variant.empty()) c["data_parallel_by_variant"] = s.data_parallel_by_variant;
  if (s.device) c["device"] = s.device->str();
  if (s.baseline) c["baseline"] = *s.baseline;
  if (s.factors)
    c["factors"] = {{"a", s.factors->a}, {"b", s.factors->b}, {"ab", s.factors->ab}, {"base", s.factors->base}};
  if (s.published)
    c["published"] = {{"source", s.published->source}, {"metric", s.published->metric}, {"values", s.published->values}};
  // Only with a grid, so a spec without one keeps its hash (and its sweep resumes).
  if (!s.grid.empty()) {
    json grid = json::object();
    std::vector<std::string> order;
    for (const auto& axis : s.grid) {
      grid[axis.path] = axis.values;
      order.push_back(axis.path);
    }
    c["grid"] = grid;
    // The axes' order decides the points' order (and so the cells' -gN keys);
    // an object keeps its keys sorted, so an order that is not sorted is kept
    // beside it (and a grid whose axes are sorted keeps the hash it had).
    if (!std::is_sorted(order.begin(), order.end())) c["grid_order"] = order;
  }
  return c;
}

}  // namespace

SpecError::SpecError(std::string source, std::vector<Problem> problems, std::string where)
    : ConfigError(error_message(source, problems), std::move(where)),
      source_(std::move(source)),
      problems_(std::move(problems)) {}

std::string factorial_variant_name(const std::string& attention, const std::string& position) {
  // Only option-free named variants: one with options (a conv lag) is a
  // particular setting, not "the" variant of its pair.
  // The first matching named variant, in named_variants' order.
  for (const auto& v : named_variants())
    if (v.attention == attention && v.position == position && v.options.empty()) return v.name;
  return attention + "+" + position;
}

std::string SweepSize::product() const {
  std::string s = fmt::format("{} variant{} x {} seed{}", variants, variants == 1 ? "" : "s", seeds,
                              seeds == 1 ? "" : "s");
  for (const auto& [path, n] : axes) s += fmt::format(" x {} {}", n, path);
  return s + fmt::format(" = {:.0f} cell{}", cells, cells == 1 ? "" : "s");
}

SweepSize sweep_size(const ExperimentSpec& spec) {
  SweepSize z;
  z.variants = static_cast<int64_t>(spec.variants.size());
  z.seeds = static_cast<int64_t>(spec.seeds.size());
  // A double: a product of large axes could overflow an int64 before --max-cells refuses it.
  z.cells = static_cast<double>(z.variants) * static_cast<double>(z.seeds);
  for (const GridAxis& axis : spec.grid) {
    z.axes.emplace_back(axis.path, static_cast<int64_t>(axis.values.size()));
    z.cells *= static_cast<double>(axis.values.size());
  }
  return z;
}

ExperimentSpec parse_spec(std::string_view text, const std::string& source, const std::vector<std::string>& grid_args,
                          int64_t max_cells) {
  std::vector<GridAxis> cli_axes;  // a malformed --grid is refused before the file is read
  for (const auto& arg : grid_args) {
    GridAxis axis = parse_grid_arg(arg);
    for (const auto& other : cli_axes)
      if (other.path == axis.path) EGM_THROW(ConfigError, "--grid {}: axis given twice", axis.path);
    cli_axes.push_back(std::move(axis));
  }
  // The stages in order: JSON syntax, then the schema (shape and types), then meaning (names, configs).
  const json document = parse_json(text, source);
  if (std::vector<Problem> problems = schema_problems(document); !problems.empty())
    EGM_SPEC_FAIL(source, std::move(problems));
  ExperimentSpec spec = read_fields(document);
  spec.source = source;
  if (spec.grid.size() > 1) {
    // The axes in the order the file writes them (json keeps keys sorted);
    // the text passed the bounded reader above, so this second parse is safe.
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(text);
    std::vector<std::string> written;
    for (const auto& [path, values] : ordered.at("grid").items()) written.push_back(path);
    std::sort(spec.grid.begin(), spec.grid.end(), [&](const GridAxis& a, const GridAxis& b) {
      return std::find(written.begin(), written.end(), a.path) < std::find(written.begin(), written.end(), b.path);
    });
  }
  // A --grid axis replaces the file's axis of its path in place, or comes after them.
  for (auto& axis : cli_axes) {
    auto it = std::find_if(spec.grid.begin(), spec.grid.end(), [&](const GridAxis& g) { return g.path == axis.path; });
    if (it != spec.grid.end())
      *it = std::move(axis);
    else
      spec.grid.push_back(std::move(axis));
  }
  // Before the cells are built and checked one by one (a 1000 x 1000 grid would take minutes).
  if (max_cells > 0) {
    const SweepSize size = sweep_size(spec);
    EGM_REQUIRE(size.cells <= static_cast<double>(max_cells), ConfigError,
                "{}: {}, more than --max-cells {}; shrink the spec or pass --max-cells {:.0f} to run it", source,
                size.product(), max_cells, size.cells);
  }
  if (std::vector<Problem> problems = check_meaning(spec, document); !problems.empty())
    EGM_SPEC_FAIL(source, std::move(problems));
  spec.canonical = canonical_form(spec);
  // nlohmann's dump sorts object keys, so the same spec always hashes the same.
  spec.hash = sha256_hex(spec.canonical.dump());
  return spec;
}

// The file is read with the user limits: a huge file is refused before it is parsed.
ExperimentSpec load_spec(const std::string& path, const std::vector<std::string>& grid_args, int64_t max_cells) {
  return parse_spec(read_json_text(path, JsonLimits::user()), path, grid_args, max_cells);
}

}  // namespace egm::spec

namespace egm::spec {

// A stored spec is not checked against the schema again: it was checked when its sweep was created,
// and an older egm's spec must still read.
ExperimentSpec read_stored_spec_json(const nlohmann::json& canonical) {
  EGM_REQUIRE(canonical.is_object(), ConfigError, "the sweep's stored spec is not a JSON object");
  ExperimentSpec s;
  try {
    s = read_fields(canonical);
    // The axes' order: "grid_order" when the spec wrote them unsorted (canonical_form), else sorted.
    if (present(canonical, "grid_order")) {
      const std::vector<std::string> order = as_strings(canonical.at("grid_order"));
      auto rank = [&](const GridAxis& a) { return std::find(order.begin(), order.end(), a.path) - order.begin(); };
      std::stable_sort(s.grid.begin(), s.grid.end(), [&](const GridAxis& a, const GridAxis& b) { return rank(a) < rank(b); });
    }
  } catch (const nlohmann::json::exception& e) {
    EGM_THROW(ConfigError, "the sweep's stored spec has an unexpected shape: {}", e.what());
  }
  if (present(canonical, "device") && canonical.at("device").is_string()) {
    try {  // a device this build does not know is no reason to refuse the rest
      s.device = parse_device_name(canonical.at("device").get<std::string>(), "");
    } catch (const ConfigError&) {
    }
  }
  s.canonical = canonical;
  // Hashed as stored: the same hash the sweep row holds when it came from this egm's canonical_form.
  s.hash = sha256_hex(canonical.dump());
  return s;
}

ExperimentSpec read_stored_spec(std::string_view spec_json) {
  json j;
  try {
    j = egm::parse_json(spec_json, JsonLimits::user(), "spec_json");
  } catch (const JsonError& e) {
    EGM_THROW(ConfigError, "the sweep's stored spec is not valid JSON: {}", e.what());
  }
  return read_stored_spec_json(j);
}

// A sequential sweep (--until) grows its seeds: the spec with them gets its own canonical form and hash.
ExperimentSpec with_seeds(ExperimentSpec spec, std::vector<uint64_t> seeds) {
  spec.seeds = std::move(seeds);
  spec.canonical = canonical_form(spec);
  spec.hash = sha256_hex(spec.canonical.dump());
  return spec;
}

// A spec file that parse_spec reads back to the same sweep: the canonical form plus "until".
nlohmann::ordered_json spec_file_json(const ExperimentSpec& spec) {
  nlohmann::ordered_json f;
  for (const auto& [key, value] : spec.canonical.items()) {
    if (key == "grid_order") continue;                  // the grid below is written in its order
    if (key == "variants" && spec.factorial) continue;  // a spec gives variants or a factorial, not both
    f[key] = value;
  }
  if (!spec.grid.empty()) {
    nlohmann::ordered_json grid = nlohmann::ordered_json::object();
    for (const GridAxis& axis : spec.grid) grid[axis.path] = axis.values;
    f["grid"] = grid;
  }
  if (spec.until) {  // not part of the canonical form (what the sweep is), but of the file (how it runs)
    nlohmann::ordered_json u;
    u["claims"] = spec.until->claims;
    u["max_seeds"] = spec.until->max_seeds;
    if (spec.until->batch) u["batch"] = *spec.until->batch;
    if (spec.until->half_width) u["half_width"] = *spec.until->half_width;
    if (spec.until->alpha) u["alpha"] = *spec.until->alpha;
    f["until"] = u;
  }
  return f;
}

}  // namespace egm::spec
