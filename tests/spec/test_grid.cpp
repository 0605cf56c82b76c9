// Grid axes: the --grid grammar (comma lists, range(a,b[,step])), the spec's
// "grid" field and its checks (unknown field, wrong type, empty axis,
// duplicate value, each a problem naming its path), the expansion into grid
// points, identity (a spec without a grid keeps its hash and keys), and the
// database: points stored, resumed, a changed grid refused with nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "db/results_db.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "spec/grid.h"
#include "spec/schema_check.h"
#include "spec/sweep_setup.h"
#include "../db/test_helpers.h"
#include "spec_test_helpers.h"
#include "util/error.h"
#include "util/files.h"

namespace {

using namespace egm::spec;
using namespace egm::testing;  // ScratchDir, FileSnapshot, at
using nlohmann::json;

json two_variants() { return json{{"name", "g"}, {"preset", "tiny"}, {"variants", {"base", "ega"}}, {"seeds", {0, 1}}}; }

json with_grid(json grid) {
  json j = two_variants();
  j["grid"] = std::move(grid);
  return j;
}

// The message of the ConfigError `f` throws ("" and a test failure when none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const egm::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

std::vector<Problem> grid_problems(const json& j, const std::vector<std::string>& grid_args = {}) {
  try {
    parse_spec(j.dump(2), "g.json", grid_args);
  } catch (const SpecError& e) {
    return e.problems();
  }
  ADD_FAILURE() << "spec was accepted: " << j.dump();
  return {};
}

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- the command-line grammar ------------------------------------------------------

TEST(GridArg, CommaListReadsNumbersBooleansAndStrings) {
  const GridAxis a = parse_grid_arg("train.lr=1e-3, 3e-4");
  EXPECT_EQ(a.path, "train.lr");
  ASSERT_EQ(a.values.size(), 2u);
  EXPECT_TRUE(a.values[0].is_number_float());
  EXPECT_DOUBLE_EQ(a.values[0].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(a.values[1].get<double>(), 3e-4);
  EXPECT_EQ(a.where, "--grid train.lr");

  const GridAxis b = parse_grid_arg("model.n_layer=2,4");
  EXPECT_TRUE(b.values[0].is_number_integer());
  EXPECT_EQ(b.values[1].get<int64_t>(), 4);

  const GridAxis c = parse_grid_arg("train.precision=fp32,\"bf16\"");
  EXPECT_EQ(c.values[0], json("fp32"));
  EXPECT_EQ(c.values[1], json("bf16"));

  const GridAxis d = parse_grid_arg("model.qk_scale_init=true,false");
  EXPECT_EQ(d.values[0], json(true));
  EXPECT_EQ(d.values[1], json(false));

  // A prefix of a number is not a number: "1e-3x" stays a string (the type check then refuses it).
  EXPECT_TRUE(parse_grid_arg("train.lr=1e-3x").values[0].is_string());
  // Decimal only, as in JSON: a hexadecimal or an infinity is text (strtod reads "0x10" as 16).
  const GridAxis h = parse_grid_arg("train.max_steps=0x10,0x1p-3,infinity,010");
  EXPECT_EQ(h.values[0], json("0x10"));
  EXPECT_EQ(h.values[1], json("0x1p-3"));
  EXPECT_EQ(h.values[2], json("infinity"));
  EXPECT_EQ(h.values[3], json(10));  // leading zeros are decimal, not octal
}

TEST(GridArg, RangeIsPythonsStopExcluded) {
  auto values = [](const std::string& arg) { return parse_grid_arg(arg).values; };
  EXPECT_EQ(values("train.warmup_steps=range(0,3)"), (std::vector<json>{0, 1, 2}));
  EXPECT_EQ(values("train.warmup_steps=range(1, 10, 4)"), (std::vector<json>{1, 5, 9}));
  EXPECT_EQ(values("train.warmup_steps=range(5,0,-2)"), (std::vector<json>{5, 3, 1}));
  const std::vector<json> f = values("model.dropout=range(0,0.3,0.1)");
  ASSERT_EQ(f.size(), 3u);  // 0.3 is excluded despite rounding (0.1*3 = 0.30000000000000004)
  EXPECT_DOUBLE_EQ(f[0].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(f[1].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(f[2].get<double>(), 0.2);
  EXPECT_TRUE(f[1].is_number_float());
}

TEST(GridArg, MalformedArgumentsAreOneLineErrorsNamingTheAxis) {
  const std::map<std::string, std::string> cases = {
      {"train.lr", "expected PATH=V1,V2"},
      {"=1,2", "no field path"},
      {"train.lr=", "no values"},
      {"train.lr=1e-3,,3e-4", "empty value"},
      {"train.lr=1e-3,0.001", "value 0.001 is given twice"},
      {"train.warmup_steps=range(3)", "1 argument(s)"},
      {"train.warmup_steps=range(a,3)", "start 'a' is not a number"},
      {"train.warmup_steps=range(0,3,0)", "step is 0"},
      {"train.warmup_steps=range(0,3", "not of the form range(...)"},
      {"train.warmup_steps=range(3,0)", "is empty"},
      {"train.warmup_steps=range(0,1000000)", "more than 10000"},
  };
  for (const auto& [arg, expected] : cases) {
    const std::string what = error_of([&arg = arg] { parse_grid_arg(arg); });
    EXPECT_TRUE(mentions(what, expected)) << arg << " -> " << what;
    EXPECT_TRUE(mentions(what, "--grid")) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(GridPoints, CartesianProductFirstAxisSlowest) {
  const std::vector<GridPoint> points =
      grid_points({GridAxis{"model.dropout", {0, 0.1}, ""}, GridAxis{"train.lr", {0.001, 0.003, 0.01}, ""}});
  ASSERT_EQ(points.size(), 6u);
  for (size_t i = 0; i < points.size(); ++i) EXPECT_EQ(points[i].index, static_cast<int64_t>(i));
  EXPECT_EQ(points[0].label(), "model.dropout=0 train.lr=0.001");
  EXPECT_EQ(points[2].label(), "model.dropout=0 train.lr=0.01");
  EXPECT_EQ(points[3].label(), "model.dropout=0.1 train.lr=0.001");
  EXPECT_EQ(points[5].as_json(), (json{{"model.dropout", 0.1}, {"train.lr", 0.01}}));
  ASSERT_EQ(grid_points({}).size(), 1u);  // no axes: one point, no values
  EXPECT_TRUE(grid_points({})[0].values.empty());
}

// ---- the spec ------------------------------------------------------------------------

TEST(GridSpec, ExpandsPointMajorWithTheValuesSet) {
  const ExperimentSpec s = parse_spec(with_grid({{"train.lr", {0.001, 0.003}}, {"model.dropout", {0, 0.1}}}).dump());
  ASSERT_EQ(s.grid.size(), 2u);
  EXPECT_EQ(s.grid[0].path, "model.dropout");  // axes in path order
  const std::vector<Cell> cells = expand(s);
  ASSERT_EQ(cells.size(), 16u);  // 4 points x 2 variants x 2 seeds
  std::set<std::string> keys, hashes;
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    ASSERT_TRUE(c.point.has_value());
    const int64_t point = static_cast<int64_t>(i / 4);
    EXPECT_EQ(c.point->index, point);
    EXPECT_EQ(c.key, cell_key(c.variant, c.seed) + "-g" + std::to_string(point));
    EXPECT_DOUBLE_EQ(c.config.model.dropout, point < 2 ? 0.0 : 0.1);
    EXPECT_DOUBLE_EQ(c.config.train.lr, point % 2 == 0 ? 0.001 : 0.003);
    keys.insert(c.key);
    hashes.insert(c.config_hash);
  }
  EXPECT_EQ(keys.size(), 16u);
  EXPECT_EQ(hashes.size(), 16u);
  EXPECT_EQ(cells[0].variant, "base");
  EXPECT_EQ(cells[2].variant, "ega");
  EXPECT_EQ(cells[1].seed, 1u);
  const std::vector<egm::db::CellInput> in = to_cell_inputs(s, cells);
  EXPECT_EQ(in[5].grid_point, std::optional<int64_t>(1));
  EXPECT_EQ(json::parse(*in[5].grid_json), (json{{"model.dropout", 0}, {"train.lr", 0.003}}));
}

// expand resolves a point's and variant's config once and sets each seed in a
// copy, and splices each seed's digits into one dump of its text: every cell
// must still be exactly what cell_config resolves for it alone, text and hash.
// The seeds include the largest a spec takes (2^53 - 1) and the first 16
// digits of expand's marker seed.
TEST(GridSpec, EachExpandedCellIsWhatCellConfigResolves) {
  json j = with_grid({{"train.lr", {0.001, 0.003}}, {"model.dropout", {0, 0.1}}});
  j["seeds"] = {7, 0, 3, 9007199254740991LL, 1844674407370955LL};
  const ExperimentSpec s = parse_spec(j.dump());
  const std::vector<Cell> cells = expand(s);
  ASSERT_EQ(cells.size(), 40u);  // 4 points x 2 variants x 5 seeds
  for (const Cell& c : cells) {
    const egm::RunConfig alone = cell_config(s, c.variant, c.seed, &*c.point);
    EXPECT_EQ(egm::to_json(c.config), egm::to_json(alone)) << c.key;
    EXPECT_EQ(c.config_json, egm::config_text(alone)) << c.key;
    EXPECT_EQ(c.config_hash, egm::config_hash(alone)) << c.key;
    EXPECT_EQ(c.config.train.seed, c.seed);
  }
  EXPECT_NE(cells[0].config_hash, cells[1].config_hash);  // seeds 7 and 0
  const std::vector<egm::db::CellInput> in = to_cell_inputs(s, cells);
  for (size_t i = 0; i < cells.size(); ++i) EXPECT_EQ(in[i].config_json, cells[i].config_json) << cells[i].key;
  // The inputs carry the expansion's text, not a second dump of each config
  // (100,000 dumps cost a 100,000-cell launch 0.6 s; results/BENCHMARKS.md).
  std::vector<Cell> marked = cells;
  marked[1].config_json = "{\"the expansion's\": \"text\"}";
  EXPECT_EQ(to_cell_inputs(s, marked)[1].config_json, marked[1].config_json);
}

TEST(GridSpec, NoGridKeepsKeysAndHashes) {
  const ExperimentSpec plain = parse_spec(two_variants().dump());
  const ExperimentSpec empty = parse_spec(with_grid(json::object()).dump());
  EXPECT_EQ(plain.hash, empty.hash);
  EXPECT_FALSE(plain.canonical.contains("grid"));
  const std::vector<Cell> cells = expand(plain);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].key, "base-s0");
  EXPECT_FALSE(cells[0].point.has_value());
  EXPECT_FALSE(to_cell_inputs(plain, cells)[0].grid_point.has_value());
  // A grid changes the spec's identity, and so does changing its values.
  const ExperimentSpec g1 = parse_spec(with_grid({{"train.lr", {0.001}}}).dump());
  const ExperimentSpec g2 = parse_spec(with_grid({{"train.lr", {0.002}}}).dump());
  EXPECT_NE(g1.hash, plain.hash);
  EXPECT_NE(g1.hash, g2.hash);
}

TEST(GridSpec, CommandLineAxesAddOrReplace) {
  const ExperimentSpec s = parse_spec(with_grid({{"train.lr", {0.001, 0.003}}}).dump(), "g.json",
                                      {"train.lr=1e-2", "model.dropout=0,0.2"});
  ASSERT_EQ(s.grid.size(), 2u);
  EXPECT_EQ(s.grid[0].path, "train.lr");  // replaced in place
  EXPECT_EQ(s.grid[0].values, (std::vector<json>{0.01}));
  EXPECT_EQ(s.grid[1].path, "model.dropout");  // added after the file's axes
  EXPECT_EQ(expand(s).size(), 8u);
  // The same grid from the file or the command line is the same spec.
  const ExperimentSpec file = parse_spec(
      R"({"name": "g", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1],
          "grid": {"train.lr": [0.01], "model.dropout": [0, 0.2]}})");
  EXPECT_EQ(s.hash, file.hash);
  EXPECT_TRUE(mentions(error_of([&] { parse_spec(two_variants().dump(), "g.json", {"train.lr=1", "train.lr=2"}); }),
                       "--grid train.lr: axis given twice"));
}

// The first axis written varies slowest, as on the command line; an order
// that is not the paths' sorted order is part of the spec's identity.
TEST(GridSpec, AxesKeepTheOrderTheFileWritesThem) {
  const std::string lr_first = R"({"name": "g", "preset": "tiny", "variants": ["base"], "seeds": [0],
      "grid": {"train.lr": [0.001, 0.003], "model.dropout": [0, 0.1]}})";
  const std::string dropout_first = R"({"name": "g", "preset": "tiny", "variants": ["base"], "seeds": [0],
      "grid": {"model.dropout": [0, 0.1], "train.lr": [0.001, 0.003]}})";
  const ExperimentSpec a = parse_spec(lr_first);
  ASSERT_EQ(a.grid.size(), 2u);
  EXPECT_EQ(a.grid[0].path, "train.lr");
  const std::vector<Cell> cells = expand(a);
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_DOUBLE_EQ(cells[1].config.train.lr, 0.001);  // lr slowest
  EXPECT_DOUBLE_EQ(cells[1].config.model.dropout, 0.1);
  EXPECT_EQ(cells[1].point->label(), "train.lr=0.001 model.dropout=0.1");
  EXPECT_EQ(a.canonical["grid_order"], (json{"train.lr", "model.dropout"}));
  const ExperimentSpec b = parse_spec(dropout_first);
  EXPECT_EQ(b.grid[0].path, "model.dropout");
  EXPECT_FALSE(b.canonical.contains("grid_order"));  // sorted: the form (and hash) grids had before
  EXPECT_NE(a.hash, b.hash);
  EXPECT_DOUBLE_EQ(expand(b)[1].config.train.lr, 0.003);
}

// "range(a,b[,step])" in a spec file is the list it stands for.
TEST(GridSpec, RangeInTheFileIsItsList) {
  const ExperimentSpec r = parse_spec(with_grid({{"model.n_layer", "range(1, 4)"}}).dump());
  const ExperimentSpec l = parse_spec(with_grid({{"model.n_layer", {1, 2, 3}}}).dump());
  ASSERT_EQ(r.grid.size(), 1u);
  EXPECT_EQ(r.grid[0].values, (std::vector<json>{1, 2, 3}));
  EXPECT_EQ(r.hash, l.hash);
  const ExperimentSpec lr = parse_spec(with_grid({{"train.lr", "range(0.001, 0.0035, 0.001)"}}).dump());
  ASSERT_EQ(lr.grid[0].values.size(), 3u);
  EXPECT_NEAR(lr.grid[0].values[2].get<double>(), 0.003, 1e-12);
  // Not a range: the schema's problem, at the axis.
  EXPECT_FALSE(at(grid_problems(with_grid({{"train.lr", "fast"}})), path_with_key("$.grid", "train.lr")).message.empty());
  // A malformed or empty range: one line naming the axis.
  EXPECT_TRUE(mentions(error_of([&] { parse_spec(with_grid({{"model.n_layer", "range(4)"}}).dump()); }),
                       "$.grid"));
  EXPECT_TRUE(mentions(error_of([&] { parse_spec(with_grid({{"model.n_layer", "range(4, 1)"}}).dump()); }),
                       "is empty"));
}

TEST(GridSpec, BadAxesAreProblemsNamingTheirPath) {
  const std::string lr = path_with_key("$.grid", "train.lr");
  EXPECT_TRUE(mentions(at(grid_problems(with_grid({{"train.lrr", {1}}})), path_with_key("$.grid", "train.lrr")).message,
                       "unknown run-config field 'train.lrr'"));
  EXPECT_TRUE(mentions(at(grid_problems(with_grid({{"lr", {1}}})), path_with_key("$.grid", "lr")).message,
                       "model.n_layer"));
  // Wrong type: a string where a number belongs, a fraction where an integer belongs.
  EXPECT_FALSE(at(grid_problems(with_grid({{"train.lr", {0.001, "fast"}}})), lr + "[1]").message.empty());
  EXPECT_FALSE(
      at(grid_problems(with_grid({{"model.n_layer", {2, 2.5}}})), path_with_key("$.grid", "model.n_layer") + "[1]")
          .message.empty());
  // Out of range, alone on the shared config.
  EXPECT_TRUE(mentions(at(grid_problems(with_grid({{"train.lr", {-1}}})), lr + "[0]").message, "train.lr must be > 0"));
  // Empty axis and a duplicate value (the schema says so, at the path).
  EXPECT_FALSE(at(grid_problems(with_grid({{"train.lr", json::array()}})), lr).message.empty());
  EXPECT_FALSE(at(grid_problems(with_grid({{"train.lr", {0.001, 0.001}}})), lr + "[1]").message.empty());
  // Fields the sweep sets per cell, or the spec sets elsewhere.
  EXPECT_TRUE(mentions(at(grid_problems(with_grid({{"train.seed", {1}}})), path_with_key("$.grid", "train.seed")).message,
                       "\"seeds\""));
  EXPECT_TRUE(mentions(
      at(grid_problems(with_grid({{"model.variant", {"ega"}}})), path_with_key("$.grid", "model.variant")).message,
      "\"variants\""));
  json j = with_grid({{"train.lr", {0.001}}});
  j["overrides"] = {{"train", {{"lr", 0.002}}}};
  EXPECT_TRUE(mentions(at(grid_problems(j), lr).message, "also set by overrides.train.lr"));
  j = with_grid({{"train.max_steps", {10}}});
  j["steps"] = 20;
  EXPECT_TRUE(mentions(at(grid_problems(j), path_with_key("$.grid", "train.max_steps")).message, "\"steps\""));
  // A combination that fails only with the rest of the config points at the axis.
  EXPECT_FALSE(
      at(grid_problems(with_grid({{"model.n_head", {2, 3}}})), path_with_key("$.grid", "model.n_head") + "[1]")
          .message.empty());
}

TEST(GridSpec, CommandLineProblemsNameTheFlagInOneLine) {
  const std::vector<Problem> p = grid_problems(two_variants(), {"train.lrx=1"});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].path, "--grid train.lrx");
  try {
    parse_spec(two_variants().dump(), "g.json", {"train.lr=fast"});
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_TRUE(mentions(what, "g.json: --grid train.lr[0]: ")) << what;
  }
}

// ---- the database -------------------------------------------------------------------

TEST(GridSweep, PointsAreStoredResumedAndAChangedGridIsRefused) {
  ScratchDir dir;
  const std::string spec_path = dir.file("g.json"), db_path = dir.file("egm.sqlite");
  egm::atomic_write_file(spec_path, with_grid({{"train.lr", {0.001, 0.003}}}).dump(2));
  std::vector<int64_t> ids;
  {
    SweepSetup s = open_sweep(spec_path, db_path, egm::db::ChangedSpec::refuse);
    ids = s.cell_ids;
    ASSERT_EQ(ids.size(), 8u);
    const auto rows = s.db.list_cells();
    ASSERT_EQ(rows.size(), 8u);
    for (const auto& r : rows) {
      ASSERT_TRUE(r.grid_point.has_value());
      EXPECT_EQ(*r.grid_point, r.position / 4);
      EXPECT_EQ(json::parse(*r.grid_json), (json{{"train.lr", r.position < 4 ? 0.001 : 0.003}}));
      EXPECT_EQ(r.key.substr(r.key.size() - 3), "-g" + std::to_string(r.position / 4));
    }
    // Queryable: one point's cells by its value.
    egm::db::Statement q = s.db.connection().prepare(
        "SELECT count(*) FROM cells WHERE json_extract(grid_json, '$.\"train.lr\"') = 0.003");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.int64(0), 4);
    // One point's cell done; running the spec again resumes it (same cells, nothing new).
    s.db.connection().execute("UPDATE cells SET status = 'done' WHERE key = 'ega-s1-g1'");
  }
  {
    SweepSetup again = open_sweep(spec_path, db_path, egm::db::ChangedSpec::refuse);
    EXPECT_EQ(again.cell_ids, ids);
    EXPECT_FALSE(again.sweep.created);
    const auto todo = again.db.cells_to_run(again.sweep.sweep.id);
    EXPECT_EQ(todo.size(), 7u);
    for (const auto& r : todo) EXPECT_NE(r.key, "ega-s1-g1");
  }
  // A changed grid is a changed spec: refused, the file untouched; --new-sweep starts over.
  const FileSnapshot before = FileSnapshot::of(db_path);
  const std::string what =
      error_of([&] { open_sweep(load_spec(spec_path, {"train.lr=1e-3,3e-3,1e-2"}), db_path, egm::db::ChangedSpec::refuse); });
  EXPECT_TRUE(mentions(what, "--new-sweep")) << what;
  EXPECT_TRUE(FileSnapshot::of(db_path).same_as(before));
  SweepSetup fresh = open_sweep(load_spec(spec_path, {"train.lr=1e-3,3e-3,1e-2"}), db_path, egm::db::ChangedSpec::new_sweep);
  EXPECT_TRUE(fresh.sweep.created);
  EXPECT_EQ(fresh.cell_ids.size(), 12u);
}

TEST(GridSweep, ASweepWithoutAGridStoresNoPoint) {
  ScratchDir dir;
  const std::string spec_path = dir.file("p.json"), db_path = dir.file("egm.sqlite");
  egm::atomic_write_file(spec_path, two_variants().dump(2));
  SweepSetup s = open_sweep(spec_path, db_path, egm::db::ChangedSpec::refuse);
  for (const auto& r : s.db.list_cells()) {
    EXPECT_FALSE(r.grid_point.has_value());
    EXPECT_FALSE(r.grid_json.has_value());
    EXPECT_EQ(r.key, cell_key(r.variant, static_cast<uint64_t>(r.seed)));
  }
}

}  // namespace
