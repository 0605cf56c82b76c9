// egm export's library: the TFRecord framing and its CRC against published
// check values, timestamps, the tables against the database read through
// egm's own SQL (the `params` view unpacks through another path than the
// exporter), and every refusal leaving nothing behind. The Parquet files and
// the TensorBoard files are read back by pyarrow and TensorBoard's own reader
// in test_export_readers.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "db/results_db.h"
#include "db/migrations.h"
#include "db/sqlite.h"
#include "export/csv_sink.h"
#include "export/exporter.h"
#include "export/tensorboard.h"
#include "export/tfrecord.h"
#include "export_fixture.h"
#include "util/error.h"
#include "util/files.h"

namespace egm::exporter {
namespace {

namespace fs = std::filesystem;

class ExportDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("egm_export_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    db_ = (root_ / "fx.sqlite").string();
    testing::write_export_fixture(db_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Every path under root_, to prove a refusal wrote nothing. Not SQLite's
  // -wal/-shm files of a WAL database, which any reader opens beside it.
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      const std::string p = e.path().string();
      if (p.size() > 4 && (p.substr(p.size() - 4) == "-wal" || p.substr(p.size() - 4) == "-shm")) continue;
      out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  ExportOptions options(ExportFormat format, const std::string& out = "out") const {
    ExportOptions o;
    o.db_path = db_;
    o.sweep = "fx";
    o.format = format;
    o.out_dir = (root_ / out).string();
    return o;
  }

  fs::path root_;
  std::string db_;
};

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Crc32c, PublishedCheckValues) {
  // The CRC catalogue's check value for CRC-32C, and RFC 3720 (iSCSI) B.4's 32 zero / 32 0xFF bytes.
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  // masked = rotate right by 15, plus 0xa282ead8 (mod 2^32), by hand from 0xE3069283:
  // 0x1C60D | 0x25060000 = 0x2507C60D, + 0xA282EAD8 = 0xC78AB0E5.
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(masked_crc32c("123456789"), static_cast<uint32_t>(((c >> 15) | (c << 17)) + 0xa282ead8u));
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5u);
}

TEST_F(ExportDir, TfRecordFraming) {
  const std::string path = (root_ / "r.tfrecord").string();
  TfRecordWriter w(path);
  w.write("123456789");
  w.write("");
  w.close();
  const std::string bytes = read_file(path);
  ASSERT_EQ(bytes.size(), 2 * (8 + 4 + 4) + 9u);
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x09\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(u32(8), masked_crc32c(bytes.substr(0, 8)));
  EXPECT_EQ(bytes.substr(12, 9), "123456789");
  EXPECT_EQ(u32(21), 0xC78AB0E5u);
  EXPECT_EQ(bytes.substr(25, 8), std::string(8, '\0'));
}

TEST(Iso8601, HandWorked) {
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(iso8601_utc(testing::kExportFixtureT0 + 0.25), "2026-12-01T12:00:00.250000Z");
  EXPECT_EQ(iso8601_utc(951782400.9999996), "2000-02-29T00:00:01.000000Z");  // rounds up into the next second
}

TEST(TensorBoardTags, Stable) {
  EXPECT_EQ(loss_tag("train"), "train/loss");
  EXPECT_EQ(loss_tag("eval_val"), "eval/val_loss");
  EXPECT_EQ(loss_tag("eval_train"), "eval/train_loss");
  EXPECT_EQ(loss_tag("val_ar_ref"), "final/val_ar_ref");
  EXPECT_EQ(loss_tag("something_new"), "other/something_new");
}

TEST_F(ExportDir, CsvTablesMatchTheDatabase) {
  const ExportSummary s = export_sweep(options(ExportFormat::csv));
  ASSERT_EQ(s.files.size(), 6u);
  const fs::path out = root_ / "out";
  // Row counts from SQL over the same database, only sweep fx's.
  db::ResultsDb results(db_, db::OpenMode::read_only);
  auto count = [&](const std::string& sql) {
    db::Statement q = results.connection().prepare(sql);
    EXPECT_TRUE(q.step());
    return q.int64(0);
  };
  const char* in_fx = "cell_id IN (SELECT c.id FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'fx')";
  EXPECT_EQ(lines_of((out / "sweep.csv").string()).size(), 2u);
  EXPECT_EQ(lines_of((out / "cells.csv").string()).size(), 1u + 8);
  EXPECT_EQ(lines_of((out / "runs.csv").string()).size(),
            1u + count(std::string("SELECT count(*) FROM runs WHERE ") + in_fx));
  EXPECT_EQ(lines_of((out / "metrics.csv").string()).size(),
            1u + count(std::string("SELECT count(*) FROM metrics WHERE ") + in_fx));
  EXPECT_EQ(count(std::string("SELECT count(*) FROM params WHERE ") + in_fx), 19);

  // The learned parameters: exactly the rows egm's `params` view unpacks (its
  // SQL function, not the exporter's loop), in the same order, same values.
  db::Statement q = results.connection().prepare(
      std::string("SELECT cell_id, run_id, step, module, layer, idx, name, value FROM params WHERE ") + in_fx +
      " ORDER BY cell_id, step, module, layer, name, idx");
  db::Table expected = db::read_rows(q);
  expected.columns = {"cell_id", "run_id", "step", "module", "layer", "idx", "name", "value"};
  EXPECT_EQ(read_file((out / "params.csv").string()), db::format_table(expected, db::Format::csv));

  // A train loss that was NaN is an empty field; times are ISO 8601; an error with quotes is quoted.
  const std::string metrics = read_file((out / "metrics.csv").string());
  EXPECT_NE(metrics.find("1,1,train,20,,0.001,1250,2026-12-01T12:00:30.000000Z"), std::string::npos) << metrics;
  EXPECT_NE(read_file((out / "cells.csv").string()).find("\"bad value, \"\"x\"\" at step 3\""), std::string::npos);
  // The other sweep's cell is not there.
  EXPECT_EQ(read_file((out / "cells.csv").string()).find("base-s9"), std::string::npos);
  // looks: fx's two, in order, an unbounded look's bounds empty; not the other sweep's.
  const std::vector<std::string> looks = lines_of((out / "looks.csv").string());
  ASSERT_EQ(looks.size(), 3u);
  EXPECT_EQ(looks[0], "look,time,claim,seeds,estimate,lower,upper,p_anytime,decision,settled,next,method,params");
  EXPECT_EQ(looks[1].rfind("1,2026-12-01T13:08:20.000000Z,delta(mope),2,0.25,,,0.5,undecided,0,seed 3 added,", 0), 0u)
      << looks[1];
  EXPECT_NE(looks[2].find(",0.05,0.35,0.01,positive,1,stopped: every claim settled,"), std::string::npos) << looks[2];
  // runs: threads and the GPU's name (schema v7), the duration.
  EXPECT_NE(read_file((out / "runs.csv").string()).find("cuda:0,NVIDIA H200,1,1,"), std::string::npos);
}

TEST_F(ExportDir, TensorBoardOneRunPerCellWithData) {
  const ExportSummary s = export_sweep(options(ExportFormat::tensorboard));
  // base-s1-g0 and mope-s1-g0 have metrics; the failed, running and pending cells have none.
  EXPECT_EQ(s.tensorboard_runs, 2);
  // base-s1-g0: 10 metric rows + final_val + best_val; mope-s1-g0: 2 + 2.
  EXPECT_EQ(s.files.at(0).rows, 12 + 4);
  const std::string file = "events.out.tfevents.1796126400.egm";
  EXPECT_TRUE(fs::exists(root_ / "out" / "base-s1-g0" / file));
  EXPECT_TRUE(fs::exists(root_ / "out" / "mope-s1-g0" / file));
  EXPECT_FALSE(fs::exists(root_ / "out" / "base-s2-g0"));
  // The same database exports the same bytes.
  export_sweep(options(ExportFormat::tensorboard, "again"));
  EXPECT_EQ(read_file((root_ / "out" / "base-s1-g0" / file).string()),
            read_file((root_ / "again" / "base-s1-g0" / file).string()));
}

TEST_F(ExportDir, AnEmptyFolderIsUsed) {
  fs::create_directory(root_ / "out");
  export_sweep(options(ExportFormat::csv));
  EXPECT_TRUE(fs::exists(root_ / "out" / "cells.csv"));
}

TEST_F(ExportDir, RefusalsWriteNothing) {
  fs::create_directories(root_ / "full");
  { std::ofstream(root_ / "full" / "x.txt") << "x"; }
  { std::ofstream(root_ / "not_a_db.sqlite") << "hello, I am not SQLite at all, but long enough to be read\n"; }
  {
    db::Connection c((root_ / "newer.sqlite").string(), db::OpenMode::read_write_create);
    c.exec("CREATE TABLE t (x)");
    c.set_user_version(db::results_schema_version() + 1);
  }
  const std::vector<std::string> before = listing();
  auto expect_refused = [&](ExportOptions o, const std::string& needle) {
    try {
      export_sweep(o);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    }
    EXPECT_EQ(listing(), before) << needle;
  };
  expect_refused(options(ExportFormat::csv, "full"), "exists and is not empty");
  expect_refused(options(ExportFormat::csv, "fx.sqlite"), "is not a folder");
  ExportOptions unknown = options(ExportFormat::csv);
  unknown.sweep = "nope";
  expect_refused(unknown, "no sweep named 'nope'");
  ExportOptions garbage = options(ExportFormat::csv);
  garbage.db_path = (root_ / "not_a_db.sqlite").string();
  expect_refused(garbage, "not_a_db.sqlite");
  ExportOptions newer = options(ExportFormat::tensorboard);
  newer.db_path = (root_ / "newer.sqlite").string();
  expect_refused(newer, "newer than this egm knows");
  ExportOptions missing = options(ExportFormat::csv);
  missing.db_path = (root_ / "missing.sqlite").string();
  expect_refused(missing, "missing.sqlite");
  ExportOptions no_module = options(ExportFormat::parquet);
  try {
    export_sweep(no_module, load_parquet_sinks((root_ / "no-such-module.so").string()));
    ADD_FAILURE() << "a missing module loaded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-module.so"), std::string::npos) << e.what();
  }
  EXPECT_EQ(listing(), before);
  EXPECT_THROW(parse_export_format("xlsx"), ConfigError);
}

// A sink that fails half-way (a full disk) leaves no output folder behind.
TEST_F(ExportDir, AFailureHalfWayLeavesNothing) {
  const std::vector<std::string> before = listing();
  int opened = 0;
  SinkFactory failing = [&](const std::string& path, const TableSchema& schema) -> std::unique_ptr<TableSink> {
    if (++opened == 3) EGM_THROW(IoError, "disk full (simulated) at {}", path);
    return open_csv_sink(path, schema);
  };
  EXPECT_THROW(export_sweep(options(ExportFormat::parquet), failing), IoError);
  EXPECT_EQ(listing(), before);
}

}  // namespace
}  // namespace egm::exporter
