// Learned parameters packed per snapshot (schema v5, db/param_pack.h): the
// packing itself, the `params` view, writes that merge into a snapshot, and a
// schema-v4 file whose rows migrate and read back with the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "db/migrations.h"
#include "db/param_pack.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "db/table_format.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm::db;
using egm::testing::make_cell;
using egm::testing::ScratchDir;

using Row = std::tuple<int64_t, int64_t, int64_t, std::string, int64_t, int64_t, std::string, std::optional<double>>;

// Every row of `params` (a table before v5, the view after), in key order.
std::vector<Row> param_rows(Connection& c) {
  std::vector<Row> rows;
  Statement s = c.prepare(
      "SELECT cell_id, run_id, step, module, layer, idx, name, value FROM params "
      "ORDER BY cell_id, step, module, layer, idx, name");
  while (s.step())
    rows.emplace_back(s.int64(0), s.int64(1), s.int64(2), s.text(3), s.int64(4), s.int64(5), s.text(6),
                      s.opt_real(7));
  return rows;
}

int64_t count(Connection& c, const std::string& sql) {
  Statement s = c.prepare(sql);
  EXPECT_TRUE(s.step());
  return s.int64(0);
}

TEST(ParamPack, RoundTripsEveryValueInKeyOrder) {
  // Floats pack to 4 bytes each; one value that is not a float makes the whole snapshot 8-byte doubles.
  std::vector<ParamEntry> floats = {{"mope", -1, 1, "sigma", 2.5}, {"ega", 0, 0, "tau", 0.125f},
                                    {"mope", -1, 0, "sigma", 1.0f / 3.0f}, {"ega", 0, 1, "tau", std::nullopt},
                                    {"ega", 0, 3, "tau", -7.0}, {"mope", -1, 0, "sigma", 9.0}};  // repeats a key: last wins
  PackedParams p = pack_params(floats);
  EXPECT_EQ(p.layout, R"([["ega",0,"tau",0,2],["ega",0,"tau",3,1],["mope",-1,"sigma",0,2]])");
  EXPECT_EQ(p.data.size(), 5u * 4u);
  std::vector<ParamEntry> back = unpack_params(p.layout, p.data);
  ASSERT_EQ(back.size(), 5u);
  EXPECT_EQ(back[0].value, 0.125);
  EXPECT_FALSE(back[1].value.has_value());
  EXPECT_EQ(back[2].idx, 3);
  EXPECT_EQ(back[2].value, -7.0);
  EXPECT_EQ(back[3].value, 9.0);
  EXPECT_EQ(back[4].value, 2.5);

  std::vector<ParamEntry> doubles = {{"ega", 2, 0, "alpha", 0.1}, {"ega", 2, 1, "alpha", 1e300}};
  p = pack_params(doubles);
  EXPECT_EQ(p.data.size(), 2u * 8u);
  back = unpack_params(p.layout, p.data);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].value, 0.1);  // exactly, not the float nearest to it
  EXPECT_EQ(back[1].value, 1e300);

  EXPECT_THROW(unpack_params(p.layout, p.data.substr(1)), egm::DbError);
  EXPECT_THROW(unpack_params("not json", p.data), egm::DbError);
}

TEST(ParamPack, WritesMergeIntoOneSnapshotPerStep) {
  ScratchDir dir;
  ResultsDb db(dir.file("r.sqlite"), OpenMode::read_write_create);
  const int64_t sweep = db.create_or_load_sweep("s", "{}", "h", false).sweep.id;
  const int64_t cell = db.ensure_cells(sweep, {make_cell("ega_mope", 0)})[0];
  RunInfo info;
  info.host = "node1";
  const int64_t run = db.start_attempt(cell, info);
  std::vector<ParamValue> values;
  for (int64_t step : {0, 100})
    for (int64_t layer = 0; layer < 2; ++layer)
      for (int64_t head = 0; head < 3; ++head)
        for (const char* name : {"tau", "alpha"})
          values.push_back({cell, run, step, "ega", layer, head, name, 0.25 * static_cast<double>(step + head) + layer});
  db.record_params(values);
  // A second message for step 100: one value changed, one added.
  db.record_params({{cell, run, 100, "ega", 1, 2, "tau", -1.0}, {cell, run, 100, "mope", -1, 0, "sigma", 0.1}});

  Connection& c = db.connection();
  EXPECT_EQ(count(c, "SELECT count(*) FROM param_snapshots"), 2);  // one per step
  EXPECT_EQ(count(c, "SELECT count(*) FROM param_layouts"), 2);    // two shapes
  const std::vector<Row> rows = param_rows(c);
  ASSERT_EQ(rows.size(), values.size() + 1);
  size_t changed = 0, added = 0;
  for (const Row& r : rows) {
    const auto& [cell_id, run_id, step, module, layer, idx, name, value] = r;
    EXPECT_EQ(cell_id, cell);
    EXPECT_EQ(run_id, run);
    if (module == "mope") {
      EXPECT_EQ(value, 0.1);
      ++added;
    } else if (step == 100 && layer == 1 && idx == 2 && name == "tau") {
      EXPECT_EQ(value, -1.0);
      ++changed;
    } else {
      EXPECT_EQ(value, 0.25 * static_cast<double>(step + idx) + static_cast<double>(layer));
    }
  }
  EXPECT_EQ(changed, 1u);
  EXPECT_EQ(added, 1u);
  // The view is read-only SQL like any other: filters and aggregates work on it.
  EXPECT_EQ(count(c, "SELECT count(*) FROM params WHERE module = 'ega' AND name = 'alpha' AND step = 0"), 6);
}

// A schema-v4 file with learned parameters as rows (gaps in the indices,
// NULLs, values that are and are not floats, two runs of one cell): read-only
// it reads as it is; opened for writing it migrates to packed snapshots and
// `params` returns exactly the same rows.
TEST(ParamPack, VersionFourRowsMigrateAndReadBackTheSame) {
  ScratchDir dir;
  const std::string path = dir.file("v4.sqlite");
  std::vector<Row> before;
  {
    Connection c(path, OpenMode::read_write_create);
    const auto& all = results_migrations();
    ASSERT_GE(all.size(), 5u);
    EXPECT_EQ(migrate(c, {all.begin(), all.begin() + 4}), 4);
    c.exec("BEGIN");
    // The cells and runs the rows belong to (the migrated file enforces foreign keys).
    c.exec("INSERT INTO sweeps (id, name, spec_json, spec_hash, created_at, updated_at) VALUES (1, 's', '{}', 'h', 1, 1)");
    for (int64_t cell = 1; cell <= 3; ++cell) {
      c.execute("INSERT INTO cells (id, sweep_id, position, key, variant, seed, config_json, config_hash, max_steps, "
                "max_attempts, updated_at) VALUES (?, 1, ?, ?, 'ega_mope', ?, '{}', 'c', 1000, 1, 1)",
                cell, cell, "ega_mope-s" + std::to_string(cell), cell);
      for (int64_t attempt = 1; attempt <= 2; ++attempt)
        c.execute("INSERT INTO runs (id, cell_id, attempt, status, started_at) VALUES (?, ?, ?, 'done', 1)",
                  attempt * 10 + cell, cell, attempt);
    }
    Statement insert = c.prepare(
        "INSERT INTO params (cell_id, run_id, step, module, layer, idx, name, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    auto put = [&](int64_t cell, int64_t run, int64_t step, const char* module, int64_t layer, int64_t idx,
                   const char* name, std::optional<double> value) {
      insert.reset();
      insert.bind_all(cell, run, step, module, layer, idx, name, value);
      insert.run();
    };
    for (int64_t cell = 1; cell <= 3; ++cell)
      for (int64_t step : {0, 500, 1000}) {
        for (int64_t pair = 0; pair < 16; ++pair) {
          put(cell, 10 + cell, step, "mope", -1, pair, "omega", static_cast<float>(0.5 + 0.01 * pair + step));
          put(cell, 10 + cell, step, "mope", -1, pair, "sigma", 0.1 * static_cast<double>(pair) + cell);
        }
        for (int64_t layer = 0; layer < 2; ++layer)
          for (int64_t head : {0, 1, 3})  // head 2 missing
            put(cell, step == 1000 ? 20 + cell : 10 + cell, step, "ega", layer, head, "tau",
                head == 3 && step == 500 ? std::nullopt : std::optional<double>(1.0f / (1 + head + layer)));
      }
    c.exec("COMMIT");
    before = param_rows(c);
    ASSERT_EQ(before.size(), 3u * 3u * (32u + 6u));
  }
  {
    ResultsDb reader(path, OpenMode::read_only);
    EXPECT_EQ(reader.schema_version(), 4);
    EXPECT_EQ(param_rows(reader.connection()), before);
  }
  {
    ResultsDb db(path, OpenMode::read_write);
    EXPECT_EQ(db.schema_version(), results_schema_version());
    Connection& c = db.connection();
    EXPECT_EQ(count(c, "SELECT count(*) FROM param_snapshots"), 9);  // 3 cells x 3 steps
    EXPECT_EQ(count(c, "SELECT count(*) FROM param_layouts"), 1);    // one shape
    // The steps whose sigma values are not floats are 8-byte doubles; none is rounded.
    EXPECT_EQ(count(c, "SELECT count(*) FROM param_snapshots WHERE length(data) = 8 * 38"), 9);
    const std::vector<Row> after = param_rows(c);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      // run_id: a snapshot keeps its rows' latest (the steps at 1000 mix runs 1x and 2x).
      const auto& [cell, run, step, module, layer, idx, name, value] = before[i];
      EXPECT_EQ(after[i], Row(cell, step == 1000 ? 20 + cell : run, step, module, layer, idx, name, value)) << i;
    }
  }
  {
    ResultsDb reader(path, OpenMode::read_only);
    EXPECT_EQ(param_rows(reader.connection()).size(), before.size());
  }
}

}  // namespace

namespace {

// A layout from elsewhere is checked before a byte of its snapshot is read (issue 40).
TEST(ParamPack, OverflowingOrDeepLayoutsAreRefused) {
  using egm::db::unpack_params;
  const std::string four_bytes(4, '\0');
  // 2^63-1 + 2^63-1 + 3 wraps to 1 value, which a 4-byte snapshot would "fit".
  EXPECT_THROW(unpack_params(R"([["m",-1,"a",0,9223372036854775807],["m",-1,"b",0,9223372036854775807],)"
                             R"(["m",-1,"c",0,3]])",
                             four_bytes),
               egm::DbError);
  EXPECT_THROW(unpack_params(R"([["m",-1,"a",9223372036854775807,2]])", std::string(8, '\0')), egm::DbError);
  EXPECT_THROW(unpack_params(R"([["m",-1,"a",0,-1]])", four_bytes), egm::DbError);
  EXPECT_THROW(unpack_params(R"([["m","x","a",0,1]])", four_bytes), egm::DbError);
  EXPECT_THROW(unpack_params(std::string(300000, '[') + std::string(300000, ']'), four_bytes), egm::DbError);
  EXPECT_THROW(unpack_params(R"([["m",-1,"a",0,2]])", four_bytes), egm::DbError);  // 2 values, 4 bytes
  EXPECT_EQ(unpack_params(R"([["m",-1,"a",0,1]])", four_bytes).size(), 1u);
}

}  // namespace
