#include "fixture.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>

namespace egm::testing {

namespace {

const std::map<std::string, std::vector<double>>& final_table() {
  static const std::map<std::string, std::vector<double>> table{{"base", {1.48, 1.50, 1.52}},
                                                                {"ega", {1.40, 1.41, 1.45}},
                                                                {"mope", {1.51, 1.53, 1.52}},
                                                                {"ega_mope", {1.37, 1.39, 1.38}}};
  return table;
}

constexpr double kSigma[kMopePairs] = {2.0, 2.1, 2.2, 8.0, 8.4, 8.8, 30.0, 31.5, 33.0, 70.0, 73.5, 77.0};

bool has_mope(const std::string& v) { return v == "mope" || v == "ega_mope"; }
bool has_ega(const std::string& v) { return v == "ega" || v == "ega_mope"; }

void write_reports(db::ResultsDb& db, int64_t cell, int64_t run, const FixtureCell& c) {
  db::RecordBatch batch;
  if (c.curves && c.final_val) {
    const double s = static_cast<double>(c.seed);
    for (auto [step, loss] : {std::pair<int64_t, double>{0, 4.00 + 0.01 * s}, {50, 2.00 + 0.02 * s},
                              {100, *c.final_val}})
      batch.metrics.push_back({cell, run, step, MetricSplit::eval_val, loss, std::nullopt, std::nullopt, 1000.0 + step});
  }
  if (c.params) {
    if (has_mope(c.variant))
      for (int i = 0; i < kMopePairs; ++i) {
        batch.params.push_back({cell, run, 0, "mope", -1, i, "omega", mope_omega0(i)});
        batch.params.push_back({cell, run, 0, "mope", -1, i, "sigma", mope_sigma0(i)});
        batch.params.push_back({cell, run, 100, "mope", -1, i, "omega", mope_omega(i, c.seed)});
        batch.params.push_back({cell, run, 100, "mope", -1, i, "sigma", mope_sigma(i, c.seed)});
      }
    if (has_ega(c.variant))
      for (int64_t layer = 0; layer < 2; ++layer)
        for (int64_t head = 0; head < 2; ++head) {
          batch.params.push_back({cell, run, 0, "ega", layer, head, "tau", 0.0});
          batch.params.push_back({cell, run, 0, "ega", layer, head, "alpha", 2.0});
          batch.params.push_back({cell, run, 100, "ega", layer, head, "tau", ega_tau(layer, head, c.seed)});
          batch.params.push_back({cell, run, 100, "ega", layer, head, "alpha", ega_alpha(layer, head, c.seed)});
        }
  }
  db.record_batch(batch);
}

}  // namespace

double fixture_final(const std::string& variant, int64_t seed) {
  return final_table().at(variant).at(static_cast<size_t>(seed));
}

double mope_omega0(int i) {
  const double t = static_cast<double>(i) / (kMopePairs - 1);
  return std::exp(t * std::log(0.99 * M_PI));  // linspace(log 1, log 0.99 pi)
}
double mope_sigma0(int i) { return 5.0 / mope_omega0(i); }
double mope_sigma(int i, int64_t seed) { return kSigma[i] * (1.0 + 0.01 * static_cast<double>(seed)); }
double mope_omega(int i, int64_t seed) { return (i == 1 || i == 7 ? 6.0 : 5.0) / mope_sigma(i, seed); }
double ega_tau(int64_t layer, int64_t head, int64_t seed) {
  return 0.1 * static_cast<double>(layer) + 0.05 * static_cast<double>(head) + 0.01 * static_cast<double>(seed);
}
double ega_alpha(int64_t layer, int64_t head, int64_t seed) {
  (void)layer;
  return 2.0 + 0.1 * static_cast<double>(head) - 0.02 * static_cast<double>(seed);
}

db::RunInfo single_rank() {
  db::RunInfo i;
  i.host = "node1";
  i.device = DeviceName{};
  i.world_size = 1;
  i.backend = Backend::none;
  i.torch_version = "1.13.0";
  i.git_commit = "fixture";
  return i;
}

std::vector<FixtureCell> main_cells(const std::vector<int64_t>& seeds) {
  std::vector<FixtureCell> cells;
  for (const char* v : {"base", "ega", "mope", "ega_mope"})
    for (int64_t s : seeds) {
      FixtureCell c;
      c.variant = v;
      c.seed = s;
      c.final_val = fixture_final(v, s);
      c.best_val = *c.final_val - 0.01;
      if (c.variant == "base" || c.variant == "ega") c.full_val = *c.final_val + 0.005;
      c.info = single_rank();
      cells.push_back(c);
    }
  return cells;
}

std::vector<FixtureCell> pair_cells(const std::vector<int64_t>& seeds) {
  std::vector<FixtureCell> cells;
  for (const char* v : {"base", "ega"})
    for (int64_t s : seeds) {
      FixtureCell c;
      c.variant = v;
      c.seed = s;
      c.final_val = fixture_final(v, s);
      c.info = single_rank();
      c.params = false;
      cells.push_back(c);
    }
  return cells;
}

std::vector<FixtureCell> sequence_cells(const std::vector<int64_t>& seeds) {
  std::vector<FixtureCell> cells;
  for (int64_t s : seeds)
    for (const char* v : {"base", "ega"}) {
      FixtureCell c;
      c.variant = v;
      c.seed = s;
      c.final_val = std::string(v) == "base" ? 1.5 : 1.5 - (0.05 + 0.01 * static_cast<double>((s * 7) % 5 - 2));
      c.info = single_rank();
      c.params = false;
      c.curves = false;
      cells.push_back(c);
    }
  return cells;
}

FixtureOptions mixed_world_size_options() {
  FixtureOptions o;
  db::RunInfo two = single_rank();
  two.world_size = 2;
  two.backend = Backend::mpi;
  o.setups["ega-s1"] = two;
  return o;
}

std::string main_spec_json(const std::string& name, const std::vector<int64_t>& seeds) {
  nlohmann::json spec = {
      {"name", name},
      {"description", "analysis test fixture"},
      {"preset", "tiny"},
      {"variants", {"base", "ega", "mope", "ega_mope"}},
      {"seeds", seeds},
      {"baseline", "base"},
      {"factors", {{"a", "ega"}, {"b", "mope"}, {"ab", "ega_mope"}, {"base", "base"}}},
      {"published",
       {{"source", "SPEC.md section 4"},
        {"metric", "final_val"},
        {"values", {{"base", 1.4742}, {"ega", 1.3821}, {"mope", 1.5060}, {"ega_mope", 1.3550}}}}}};
  return spec.dump();
}

std::map<std::string, int64_t> write_cells(db::ResultsDb& db, const std::string& name, const std::string& spec_json,
                                           const std::vector<FixtureCell>& cells) {
  const int64_t sweep = db.create_or_load_sweep(name, spec_json, "hash-" + name, false).sweep.id;
  std::vector<db::CellInput> inputs;
  for (const auto& c : cells) {
    db::CellInput in;
    in.key = c.grid_point ? fmt::format("{}-s{}-g{}", c.variant, c.seed, *c.grid_point)
                          : fmt::format("{}-s{}", c.variant, c.seed);
    in.variant = c.variant;
    in.seed = c.seed;
    in.config_json = c.config_json;
    in.config_hash = "config-" + in.key;
    in.max_steps = 100;
    in.max_attempts = c.outcome == Outcome::failed_retry ? 2 : 1;
    in.grid_point = c.grid_point;
    in.grid_json = c.grid_json;
    inputs.push_back(in);
  }
  const std::vector<int64_t> ids = db.ensure_cells(sweep, inputs);
  std::map<std::string, int64_t> by_key;
  for (size_t i = 0; i < cells.size(); ++i) {
    const FixtureCell& c = cells[i];
    const int64_t id = ids[i];
    by_key[inputs[i].key] = id;
    if (c.outcome == Outcome::pending) continue;
    db::RunInfo info = c.info;
    if (c.resumed_from) {
      const int64_t first = db.start_attempt(id, *c.resumed_from);
      db.finish_attempt(first, db::RunStatus::interrupted, "preempted");
      info.resumed_from_step = 50;
    }
    const int64_t run = db.start_attempt(id, info);
    switch (c.outcome) {
      case Outcome::done: {
        write_reports(db, id, run, c);
        Measurements r;
        r.final_val = c.final_val;
        r.best_val = c.best_val;
        r.full_val = c.full_val;
        db.finish_attempt(run, db::RunStatus::done, "", r, {}, /*step=*/100);
        break;
      }
      case Outcome::failed_exhausted:
      case Outcome::failed_retry: db.finish_attempt(run, db::RunStatus::failed, "loss became NaN at step 40"); break;
      case Outcome::interrupted: db.finish_attempt(run, db::RunStatus::interrupted, "worker lost"); break;
      case Outcome::running:
      case Outcome::pending: break;
    }
  }
  return by_key;
}

std::map<std::string, int64_t> write_fixture(db::ResultsDb& db, const FixtureOptions& o) {
  std::vector<FixtureCell> cells;
  for (auto c : main_cells(o.seeds)) {
    const std::string key = fmt::format("{}-s{}", c.variant, c.seed);
    if (std::find(o.replace_keys.begin(), o.replace_keys.end(), key) != o.replace_keys.end()) continue;
    if (auto it = o.setups.find(key); it != o.setups.end()) c.info = it->second;
    cells.push_back(c);
  }
  cells.insert(cells.end(), o.extra_cells.begin(), o.extra_cells.end());
  std::vector<int64_t> seeds = o.seeds;
  for (const auto& c : o.extra_cells)
    if (std::find(seeds.begin(), seeds.end(), c.seed) == seeds.end()) seeds.push_back(c.seed);
  return write_cells(db, o.name, main_spec_json(o.name, seeds), cells);
}

}  // namespace egm::testing
