// The results database the export and notebook tests read:
//   sweep "fx" (a grid over train.lr with two points): base and mope, seeds 1
//   and 2, so 8 cells:
//     - base-s1-g0 done after two attempts (the first interrupted at step 20,
//       the second resumed from it), train/eval/final metrics, one train loss
//       NULL (a NaN in training);
//     - mope-s1-g0 done, with learned parameters at steps 0 and 40 (floats,
//       and one value that is not a float, so its snapshot is packed as doubles);
//     - base-s2-g0 failed (an error that needs CSV quoting), mope-s2-g0 running,
//       the rest pending.
//     Two looks of a sequential sweep (egm sweep --until), one unbounded.
//   sweep "other": one done cell and a look, which an export of "fx" must leave out.
// Times are fixed (2026-12-01 12:00:00 UTC on), so every export is the same.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "db/results_db.h"

namespace egm::testing {

inline constexpr double kExportFixtureT0 = 1796126400.0;  // 2026-12-01T12:00:00Z

inline db::CellInput export_fixture_cell(const std::string& variant, int seed, int point, double lr) {
  db::CellInput c;
  c.key = variant + "-s" + std::to_string(seed) + "-g" + std::to_string(point);
  c.variant = variant;
  c.seed = seed;
  c.config_json = "{\"model\":{\"variant\":\"" + variant + "\"},\"train\":{\"lr\":" + std::to_string(lr) + "}}";
  c.config_hash = "hash-" + c.key;
  c.max_steps = 40;
  c.max_attempts = 2;
  c.grid_point = point;
  c.grid_json = "{\"train.lr\": " + std::string(point == 0 ? "0.001" : "0.0003") + "}";
  return c;
}

inline void write_export_fixture(const std::string& path) {
  using namespace egm::db;
  constexpr double kT0 = kExportFixtureT0;
  std::filesystem::remove(path);
  ResultsDb db(path, OpenMode::read_write_create);
  double now = kT0;
  db.set_clock([&] { return now; });
  const int64_t sweep = db.create_or_load_sweep("fx", "{\"name\":\"fx\"}", "spec-hash-fx", false).sweep.id;
  std::vector<CellInput> inputs;
  for (int point : {0, 1})
    for (const char* v : {"base", "mope"})
      for (int seed : {1, 2}) inputs.push_back(export_fixture_cell(v, seed, point, point == 0 ? 1e-3 : 3e-4));
  const std::vector<int64_t> ids = db.ensure_cells(sweep, inputs);
  const int64_t base1 = ids[0], base2 = ids[1], mope1 = ids[2], mope2 = ids[3];
  db.set_sweep_status(sweep, SweepStatus::running);

  RunInfo cpu;
  cpu.host = "node1";
  cpu.device = DeviceName{};
  cpu.world_size = 1;
  cpu.backend = Backend::none;
  cpu.torch_version = "2.11.0";
  cpu.git_commit = "abc1234";
  cpu.threads = 2;

  // base-s1-g0: interrupted at 20, resumed, done at 40.
  now = kT0 + 10;
  const int64_t r1 = db.start_attempt(base1, cpu);
  db.record_metrics({{base1, r1, 0, MetricSplit::eval_val, 4.25, {}, {}, kT0 + 11},
                     {base1, r1, 10, MetricSplit::train, 3.5, 1e-3, 1200.0, kT0 + 20},
                     {base1, r1, 20, MetricSplit::train, {}, 1e-3, 1250.0, kT0 + 30}});
  now = kT0 + 40;
  db.finish_attempt(r1, RunStatus::interrupted, "preempted", {}, {}, 20);
  now = kT0 + 100;
  RunInfo resumed = cpu;
  resumed.resumed_from_step = 20;
  const int64_t r2 = db.start_attempt(base1, resumed);
  db.record_metrics({{base1, r2, 30, MetricSplit::train, 2.875, 5e-4, 1300.0, kT0 + 110},
                     {base1, r2, 40, MetricSplit::train, 2.5, 1e-4, 1310.5, kT0 + 120},
                     {base1, r2, 40, MetricSplit::eval_train, 2.4375, {}, {}, kT0 + 121},
                     {base1, r2, 40, MetricSplit::eval_val, 2.5625, {}, {}, kT0 + 121.5},
                     {base1, r2, 40, MetricSplit::val_full, 2.55, {}, {}, kT0 + 122},
                     {base1, r2, 40, MetricSplit::val_ar, 2.75, {}, {}, kT0 + 123},
                     {base1, r2, 40, MetricSplit::val_ar_ref, 2.5, {}, {}, kT0 + 124}});
  now = kT0 + 130;
  Measurements done;
  done.final_val = 2.5625;
  done.best_val = 2.5;
  done.full_val = 2.55;
  done.ar_val = 2.75;
  done.ar_ref_val = 2.5;
  db.finish_attempt(r2, RunStatus::done, "", done, {}, /*step=*/40);

  // mope-s1-g0: on a GPU, with learned parameters.
  RunInfo gpu = cpu;
  gpu.device = parse_device_name("cuda:0");
  gpu.gpu_name = "NVIDIA H200";
  gpu.threads = 1;
  now = kT0 + 200;
  const int64_t r3 = db.start_attempt(mope1, gpu);
  std::vector<ParamValue> params;
  for (int64_t step : {0, 40})
    for (int i = 0; i < 3; ++i) {
      params.push_back({mope1, r3, step, "mope", -1, i, "omega", 0.5 * (i + 1) + 0.25 * static_cast<double>(step)});
      params.push_back({mope1, r3, step, "mope", -1, i, "sigma", 8.0 + i});
      params.push_back({mope1, r3, step, "ega", 0, i, "tau", -0.125 * i});
    }
  params.push_back({mope1, r3, 40, "ega", 1, 0, "alpha", 0.1});  // not a float: this snapshot is doubles
  db.record_params(params);
  db.record_metrics({{mope1, r3, 40, MetricSplit::train, 2.625, 1e-3, 900.0, kT0 + 260},
                     {mope1, r3, 40, MetricSplit::eval_val, 2.6875, {}, {}, kT0 + 261}});
  now = kT0 + 3800;  // an hour on the GPU
  Measurements mope_done;
  mope_done.final_val = 2.6875;
  mope_done.best_val = 2.6875;
  db.finish_attempt(r3, RunStatus::done, "", mope_done, {}, /*step=*/40);

  // base-s2-g0 failed; mope-s2-g0 running.
  now = kT0 + 4000;
  const int64_t r4 = db.start_attempt(base2, cpu);
  now = kT0 + 4010;
  db.finish_attempt(r4, RunStatus::failed, "bad value, \"x\" at step 3", {}, FailureInfo{"full text", false});
  now = kT0 + 4020;
  db.start_attempt(mope2, cpu);

  // Two looks (schema v10): the first unbounded (NULL bounds), the second bounded.
  const char* look_sql =
      "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
      "next, method, params) VALUES (?, ?, ?, 'delta(mope)', ?, ?, ?, ?, ?, ?, ?, ?, 't-mixture', 'alpha=0.05')";
  db.connection().execute(look_sql, sweep, 1, kT0 + 4100, 2, 0.25, std::optional<double>(), std::optional<double>(),
                          0.5, "undecided", 0, "seed 3 added");
  db.connection().execute(look_sql, sweep, 2, kT0 + 4200, 3, 0.2, std::optional<double>(0.05),
                          std::optional<double>(0.35), 0.01, "positive", 1, "stopped: every claim settled");

  // Another sweep, which an export of fx leaves out.
  const int64_t other = db.create_or_load_sweep("other", "{\"name\":\"other\"}", "spec-hash-other", false).sweep.id;
  CellInput o = export_fixture_cell("base", 9, 0, 1e-3);
  o.grid_point.reset();
  o.grid_json.reset();
  o.key = "base-s9";
  const int64_t oid = db.ensure_cells(other, {o}).at(0);
  now = kT0 + 5000;
  const int64_t r5 = db.start_attempt(oid, cpu);
  db.record_metrics({{oid, r5, 10, MetricSplit::train, 3.0, 1e-3, 1000.0, kT0 + 5010}});
  db.record_params({{oid, r5, 10, "mope", -1, 0, "omega", 1.5}});
  now = kT0 + 5020;
  Measurements od;
  od.final_val = 3.0;
  db.finish_attempt(r5, RunStatus::done, "", od, {}, /*step=*/10);
  db.connection().execute(look_sql, other, 1, kT0 + 5100, 1, 9.0, std::optional<double>(), std::optional<double>(),
                          1.0, "undecided", 0, "the other sweep's look");
}

}  // namespace egm::testing
