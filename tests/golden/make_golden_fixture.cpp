// The golden test's two input databases, written through ResultsDb with a
// fixed clock, as two clusters would have run one sweep between them:
//   make_golden_fixture DIR   writes DIR/a.sqlite and DIR/b.sqlite
// golden.sh merges them (egm merge) into the database every pinned output
// reads. What each holds (README.md in this folder has the table):
//   a.sqlite  sweep golden_2x2: base, ega, mope, ega_mope x seeds 0, 1 x a
//             grid over train.lr (0.001, 0.0003), every cell done.
//   b.sqlite  sweep golden_2x2 on seed 2: base-s2-g0 interrupted once and
//             resumed, mope-s2-g1 failed for good, ega_mope-s2-g1 interrupted;
//             sweep golden_seq: the 2x2 on seeds 0-3 without a grid, run by
//             `egm sweep --until ega,interaction`, with its two looks.
// Every number is written here; nothing is trained or drawn at random.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/results_db.h"
#include "util/sha256.h"

namespace {

using namespace egm;
using nlohmann::json;

constexpr double kT0 = 1796126400.0;  // 2026-12-01T12:00:00Z
const std::vector<std::string> kVariants{"base", "ega", "mope", "ega_mope"};
const std::vector<double> kLr{0.001, 0.0003};  // the grid's points

// Final val loss by sweep, grid point (-1: none), variant and seed.
double final_val(const std::string& sweep, int point, const std::string& variant, int seed) {
  static const std::map<std::string, std::vector<double>> g0{{"base", {1.48, 1.50, 1.52}},
                                                             {"ega", {1.40, 1.41, 1.45}},
                                                             {"mope", {1.51, 1.53, 1.52}},
                                                             {"ega_mope", {1.37, 1.39, 1.38}}};
  static const std::map<std::string, std::vector<double>> g1{{"base", {1.60, 1.62, 1.61}},
                                                             {"ega", {1.55, 1.58, 1.56}},
                                                             {"mope", {1.63, 1.62, 1.66}},
                                                             {"ega_mope", {1.52, 1.55, 1.54}}};
  static const std::map<std::string, std::vector<double>> seq{{"base", {1.50, 1.49, 1.51, 1.50}},
                                                              {"ega", {1.41, 1.40, 1.42, 1.40}},
                                                              {"mope", {1.52, 1.51, 1.53, 1.52}},
                                                              {"ega_mope", {1.36, 1.35, 1.37, 1.36}}};
  const auto& table = sweep == "golden_seq" ? seq : point == 1 ? g1 : g0;
  return table.at(variant).at(static_cast<size_t>(seed));
}

bool has_mope(const std::string& v) { return v == "mope" || v == "ega_mope"; }
bool has_ega(const std::string& v) { return v == "ega" || v == "ega_mope"; }

json spec(const std::string& name, const std::vector<int>& seeds, bool grid) {
  json s = json::object();  // canonical_form's fields (src/spec/experiment_spec.cpp)
  s["name"] = name;
  s["description"] = "golden test fixture (tests/golden)";
  s["preset"] = "tiny";
  s["overrides"] = json::object();
  s["variants"] = kVariants;
  s["seeds"] = seeds;
  s["steps"] = 100;
  s["eval_interval"] = 50;
  s["retries"] = 0;
  s["data_parallel"] = 1;
  s["runs_per_gpu"] = 1;
  s["baseline"] = "base";
  s["factors"] = {{"a", "ega"}, {"b", "mope"}, {"ab", "ega_mope"}, {"base", "base"}};
  s["published"] = {{"source", "SPEC.md section 4"},
                    {"metric", "final_val"},
                    {"values", {{"base", 1.4742}, {"ega", 1.3821}, {"mope", 1.5060}, {"ega_mope", 1.3550}}}};
  if (grid) s["grid"] = {{"train.lr", kLr}};
  return s;
}

db::CellInput cell_input(const std::string& variant, int seed, int point) {
  db::CellInput c;
  c.key = fmt::format("{}-s{}", variant, seed) + (point >= 0 ? fmt::format("-g{}", point) : "");
  c.variant = variant;
  c.seed = seed;
  const double lr = point >= 0 ? kLr[static_cast<size_t>(point)] : 0.001;
  c.config_json = json{{"model", {{"variant", variant}}}, {"train", {{"lr", lr}, {"seed", seed}}}}.dump();
  c.config_hash = sha256_hex(c.config_json);
  c.max_steps = 100;
  c.max_attempts = 1;
  if (point >= 0) {
    c.grid_point = point;
    c.grid_json = json{{"train.lr", lr}}.dump();
  }
  return c;
}

// How a cell ends in its input.
enum class End { done, resumed, failed, interrupted };

struct Writer {
  db::ResultsDb db;
  double now = kT0;
  db::RunInfo info;

  explicit Writer(const std::string& path, const std::string& host, double t0)
      : db(path, db::OpenMode::read_write_create), now(t0) {
    db.set_clock([this] { return now; });
    info.host = host;
    info.device = DeviceName{};
    info.world_size = 1;
    info.backend = Backend::none;
    info.torch_version = "2.11.0";
    info.git_commit = "0123456789ab";
    info.threads = 1;
  }

  int64_t sweep(const std::string& name, const json& s) {
    const int64_t id = db.create_or_load_sweep(name, s.dump(2), sha256_hex(s.dump()), false).sweep.id;
    db.set_sweep_corpus(id, {"d3b8a2a4c9a9b7c0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8", 1115394,
                             "/data/tinyshakespeare/input.txt"});
    db.set_sweep_status(id, db::SweepStatus::running);
    return id;
  }

  // The metrics of steps [from, to] (evals every 50) on a curve that ends at `final`.
  void metrics(int64_t cell, int64_t run, int seed, int64_t from, int64_t to, double final) {
    std::vector<db::MetricPoint> m;
    const double s = seed;
    for (int64_t step = from; step <= to; step += 50) {
      const double eval = step == 100 ? final : step == 50 ? 2.0 + 0.02 * s : 4.0 + 0.01 * s;
      const double t = now + static_cast<double>(step - from);
      m.push_back({cell, run, step, MetricSplit::train, eval + 0.0625, 1e-3 * (1.0 - 0.005 * step), 1000.0 + step, t});
      m.push_back({cell, run, step, MetricSplit::eval_train, eval - 0.03125, {}, {}, t + 0.5});
      m.push_back({cell, run, step, MetricSplit::eval_val, eval, {}, {}, t + 0.75});
    }
    if (to == 100)
      for (auto [split, v] : {std::pair{MetricSplit::val_full, final + 0.005}, {MetricSplit::val_ar, final + 0.02},
                              {MetricSplit::val_ar_ref, final + 0.001}})
        m.push_back({cell, run, 100, split, v, {}, {}, now + static_cast<double>(100 - from) + 1.0});
    db.record_metrics(m);
  }

  // MoPE (omega, sigma) pairs and EGA (tau, alpha) per layer and head at steps 0 and 100.
  void params(int64_t cell, int64_t run, const std::string& variant, int seed) {
    std::vector<db::ParamValue> p;
    const double s = seed;
    if (has_mope(variant))
      for (int i = 0; i < 12; ++i) {
        const double omega0 = std::exp(i / 11.0 * std::log(0.99 * M_PI));
        const double sigma = std::vector<double>{2.0, 2.1, 2.2, 8.0, 8.4, 8.8, 30, 31.5, 33, 70, 73.5, 77}[i] *
                             (1.0 + 0.01 * s);
        p.push_back({cell, run, 0, "mope", -1, i, "omega", omega0});
        p.push_back({cell, run, 0, "mope", -1, i, "sigma", 5.0 / omega0});
        p.push_back({cell, run, 100, "mope", -1, i, "omega", (i == 1 || i == 7 ? 6.0 : 5.0) / sigma});
        p.push_back({cell, run, 100, "mope", -1, i, "sigma", sigma});
      }
    if (has_ega(variant))
      for (int64_t layer = 0; layer < 2; ++layer)
        for (int64_t head = 0; head < 2; ++head) {
          p.push_back({cell, run, 0, "ega", layer, head, "tau", 0.0});
          p.push_back({cell, run, 0, "ega", layer, head, "alpha", 2.0});
          p.push_back({cell, run, 100, "ega", layer, head, "tau", 0.1 * layer + 0.05 * head + 0.01 * s});
          p.push_back({cell, run, 100, "ega", layer, head, "alpha", 2.0 + 0.1 * head - 0.02 * s});
        }
    db.record_params(p);
  }

  void cell(const std::string& sweep_name, int64_t cell, const db::CellInput& in, int point, End end) {
    const int seed = static_cast<int>(in.seed);
    const double final = final_val(sweep_name, point, in.variant, seed);
    db::RunInfo first = info;
    if (end == End::resumed) {  // preempted at step 50, resumed from its checkpoint
      const int64_t run = db.start_attempt(cell, first);
      metrics(cell, run, seed, 0, 50, final);
      now += 60;
      db.finish_attempt(run, db::RunStatus::interrupted, "preempted", {}, {}, /*step=*/50);
      now += 30;
      first.resumed_from_step = 50;
    }
    const int64_t run = db.start_attempt(cell, first);
    switch (end) {
      case End::done:
      case End::resumed: {
        const int64_t from = end == End::resumed ? 100 : 0;
        metrics(cell, run, seed, from, 100, final);
        if (sweep_name != "golden_seq") params(cell, run, in.variant, seed);
        now += end == End::resumed ? 60 : 120;
        Measurements m;
        m.final_val = final;
        m.best_val = final - 0.01;
        m.full_val = final + 0.005;
        m.ar_val = final + 0.02;
        m.ar_ref_val = final + 0.001;
        db.finish_attempt(run, db::RunStatus::done, "", m, {}, /*step=*/100);
        break;
      }
      case End::failed:
        metrics(cell, run, seed, 0, 0, final);
        now += 40;
        db.finish_attempt(run, db::RunStatus::failed, "loss became NaN at step 40", {},
                          db::FailureInfo{"loss became NaN at step 40\n  at egm::train::Trainer::step", false},
                          /*step=*/40);
        break;
      case End::interrupted:
        metrics(cell, run, seed, 0, 50, final);
        now += 70;
        db.finish_attempt(run, db::RunStatus::interrupted, "worker lost", {}, {}, /*step=*/50);
        break;
    }
    now += 5;
  }
};

// Cluster A: the grid on seeds 0 and 1, every cell done.
void write_a(const std::string& path) {
  Writer w(path, "node-a", kT0);
  const int64_t sweep = w.sweep("golden_2x2", spec("golden_2x2", {0, 1}, true));
  std::vector<db::CellInput> inputs;
  for (int point : {0, 1})
    for (const auto& v : kVariants)
      for (int seed : {0, 1}) inputs.push_back(cell_input(v, seed, point));
  const std::vector<int64_t> ids = w.db.ensure_cells(sweep, inputs);
  for (size_t i = 0; i < ids.size(); ++i) w.cell("golden_2x2", ids[i], inputs[i], *inputs[i].grid_point, End::done);
  w.db.set_sweep_status(sweep, db::SweepStatus::done);
}

// Cluster B: the grid on seed 2 (one resumed, one failed, one interrupted), and the sequential sweep.
void write_b(const std::string& path) {
  Writer w(path, "node-b", kT0 + 3600);
  const int64_t sweep = w.sweep("golden_2x2", spec("golden_2x2", {2}, true));
  std::vector<db::CellInput> inputs;
  for (int point : {0, 1})
    for (const auto& v : kVariants) inputs.push_back(cell_input(v, 2, point));
  const std::vector<int64_t> ids = w.db.ensure_cells(sweep, inputs);
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& key = inputs[i].key;
    const End end = key == "base-s2-g0"       ? End::resumed
                    : key == "mope-s2-g1"     ? End::failed
                    : key == "ega_mope-s2-g1" ? End::interrupted
                                              : End::done;
    w.cell("golden_2x2", ids[i], inputs[i], *inputs[i].grid_point, end);
  }
  w.db.set_sweep_status(sweep, db::SweepStatus::interrupted);

  // The sequential sweep: seeds 0-2 first, a look, seed 3 added, a look that stops.
  const std::string name = "golden_seq";
  std::vector<int> seeds{0, 1, 2};
  int64_t seq = w.sweep(name, spec(name, seeds, false));
  const char* look_sql =
      "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
      "next, method, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 't-mixture', 'alpha=0.025 rho=0.05')";
  auto run_seeds = [&](const std::vector<int>& batch) {
    std::vector<db::CellInput> in;
    for (const auto& v : kVariants)
      for (int seed : seeds) in.push_back(cell_input(v, seed, -1));
    const std::vector<int64_t> cell_ids = w.db.ensure_cells(seq, in);
    for (size_t i = 0; i < in.size(); ++i)
      if (std::find(batch.begin(), batch.end(), static_cast<int>(in[i].seed)) != batch.end())
        w.cell(name, cell_ids[i], in[i], -1, End::done);
  };
  run_seeds(seeds);
  w.now += 10;
  w.db.connection().execute(look_sql, seq, 1, w.now, "delta(ega)", 3, 0.09, std::optional<double>(),
                            std::optional<double>(), 0.21, "undecided", 0, "seed 3 added");
  w.db.connection().execute(look_sql, seq, 1, w.now, "interaction", 3, 0.0633333333333333, -0.4, 0.52, 0.6,
                            "undecided", 0, "seed 3 added");
  seeds.push_back(3);
  w.db.set_sweep_status(seq, db::SweepStatus::done);
  seq = w.db.create_or_load_sweep(name, spec(name, seeds, false).dump(2), sha256_hex(spec(name, seeds, false).dump()),
                                  db::ChangedSpec::extend)
            .sweep.id;
  w.db.set_sweep_status(seq, db::SweepStatus::running);
  run_seeds({3});
  w.now += 10;
  w.db.connection().execute(look_sql, seq, 2, w.now, "delta(ega)", 4, 0.0925, 0.061, 0.124, 0.004, "positive", 1,
                            "stopped: every claim settled");
  w.db.connection().execute(look_sql, seq, 2, w.now, "interaction", 4, 0.0575, 0.012, 0.103, 0.02, "positive", 1,
                            "stopped: every claim settled");
  w.db.set_sweep_status(seq, db::SweepStatus::done);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  for (const char* f : {"a.sqlite", "b.sqlite"})
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(dir + "/" + f + suffix);
  write_a(dir + "/a.sqlite");
  write_b(dir + "/b.sqlite");
  return 0;
}
