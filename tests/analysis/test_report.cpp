// egm report on the fixture database: every table and plot file is written,
// and the numbers in the Markdown, LaTeX, CSV and JSON are the fixture's
// (worked out by hand in fixture.h / test_sweep_analysis.cpp), not whatever
// the code printed. Plots need gnuplot: without it those checks are skipped,
// and a missing gnuplot is tested with a path that does not exist.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/gnuplot.h"
#include "analysis/report.h"
#include "analysis/sweep_data.h"
#include "fixture.h"
#include "test_helpers.h"
#include "util/files.h"

namespace {

using namespace egm;
using namespace egm::analysis;
namespace fx = egm::testing;
using egm::testing::ScratchDir;

using egm::testing::kTol;

// RFC 4180 rows (quoted fields with doubled quotes); enough for our CSVs.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// column name -> value for the row whose first field is `key`.
std::map<std::string, std::string> csv_row(const std::string& text, const std::string& key) {
  const auto rows = parse_csv(text);
  std::map<std::string, std::string> out;
  for (size_t r = 1; r < rows.size(); ++r)
    if (!rows[r].empty() && rows[r][0] == key)
      for (size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) out[rows[0][c]] = rows[r][c];
  return out;
}

bool starts_with_bytes(const std::string& path, const std::string& magic) {
  return read_file(path).compare(0, magic.size(), magic) == 0;
}

class Report : public ::testing::Test {
 protected:
  void SetUp() override {
    db::ResultsDb db(dir_.file("r.sqlite"), db::OpenMode::read_write_create);
    fx::write_fixture(db);
    data_ = load_sweep(db, "fixture");
  }
  ReportResult write(const std::string& sub, const std::string& gnuplot = "gnuplot") {
    ReportOptions o;
    o.out_dir = dir_.file(sub);
    o.gnuplot = gnuplot;
    return write_report(data_, o);
  }
  std::string file(const std::string& sub, const std::string& name) const { return read_file(dir_.file(sub) + "/" + name); }
  ScratchDir dir_;
  SweepData data_;
};

TEST_F(Report, TablesCarryTheFixtureNumbers) {
  const ReportResult r = write("out");
  for (const char* name : {"index.md", "main.md", "main.tex", "main.csv", "analysis.md", "analysis.txt",
                           "analysis.json", "summary.csv", "per_seed.csv", "deltas.csv", "interaction.csv",
                           "published.csv", "excluded.csv", "mope_runs.csv", "mope_pairs.csv", "mope_k_scores.csv",
                           "gates.csv", "gates_by_layer.csv", "plots/val_curves.gp", "plots/val_curves.dat",
                           "plots/omega_sigma.gp", "plots/omega_sigma.dat", "plots/interaction.gp",
                           "plots/interaction.dat"}) {
    EXPECT_TRUE(std::find(r.files.begin(), r.files.end(), name) != r.files.end()) << name;
    EXPECT_FALSE(file("out", name).empty()) << name;
  }
  // main.csv: base mean 1.50 (1.48, 1.50, 1.52), interaction .06 with the published .0589.
  const std::string csv = file("out", "main.csv");
  auto base = csv_row(csv, "base");
  EXPECT_NEAR(std::stod(base["mean"]), 1.50, kTol);
  EXPECT_NEAR(std::stod(base["sd"]), 0.02, kTol);
  EXPECT_EQ(base["n"], "3");
  EXPECT_NEAR(std::stod(base["published"]), 1.4742, kTol);
  auto ega = csv_row(csv, "ega");
  EXPECT_NEAR(std::stod(ega["delta"]), 0.08, kTol);
  EXPECT_NEAR(std::stod(ega["published_delta"]), 1.4742 - 1.3821, kTol);
  auto interaction = csv_row(csv, "interaction");
  EXPECT_NEAR(std::stod(interaction["delta"]), 0.06, kTol);
  EXPECT_NEAR(std::stod(interaction["published_delta"]), 0.0589, kTol);
  // per_seed.csv holds the database's values.
  const auto rows = parse_csv(file("out", "per_seed.csv"));
  size_t matched = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const int64_t seed = std::stoll(rows[i][1]);
    EXPECT_NEAR(std::stod(rows[i][2]), fx::fixture_final(rows[i][0], seed), kTol) << rows[i][0];
    EXPECT_NEAR(std::stod(rows[i][3]), fx::fixture_final(rows[i][0], seed) - 0.01, kTol);
    ++matched;
  }
  EXPECT_EQ(matched, 12u);
  // Markdown and LaTeX in the paper's layout: 1.50 +- 4.302653 * .02 / sqrt 3 = 1.5000 +- 0.0497 (3).
  const std::string md = file("out", "main.md");
  EXPECT_NE(md.find("| base | standard | learned | 1.5000 ± 0.0497 (3) | baseline | 1.4742 | - |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("+0.0600 ± 0.0248"), std::string::npos) << md;
  EXPECT_NE(md.find("+0.0589"), std::string::npos) << md;
  const std::string tex = file("out", "main.tex");
  EXPECT_NE(tex.find("ega\\_mope & ega & mope & $1.3800 \\pm 0.0248$ (3) & $+0.1200 \\pm 0.0430$"), std::string::npos)
      << tex;
  EXPECT_NE(tex.find("\\toprule"), std::string::npos);
  // JSON: the interaction and a per-seed value.
  const nlohmann::json j = nlohmann::json::parse(file("out", "analysis.json"));
  EXPECT_NEAR(j["interaction"]["estimate"].get<double>(), 0.06, kTol);
  EXPECT_EQ(j["interaction"]["verdict"], "superadditive");
  EXPECT_NEAR(j["variants"][1]["metrics"]["final_val"]["seeds"]["2"].get<double>(), 1.45, kTol);
  EXPECT_NEAR(j["published"]["interaction"]["published"].get<double>(), 0.0589, kTol);
  // index.md links the tables.
  const std::string index = file("out", "index.md");
  EXPECT_NE(index.find("[main.tex](main.tex)"), std::string::npos);
  EXPECT_NE(index.find("[analysis.json](analysis.json)"), std::string::npos);
}

TEST_F(Report, CurveBandsAreMeanSdMinMaxOverSeeds) {
  const std::vector<VariantCurve> curves = val_curve_bands(data_);
  ASSERT_EQ(curves.size(), 4u);
  EXPECT_EQ(curves[0].first, "base");
  ASSERT_EQ(curves[0].second.size(), 3u);  // steps 0, 50, 100
  // base at step 50: 2.00, 2.02, 2.04 -> mean 2.02, sd .02, min 2.00, max 2.04.
  const CurvePointStats& p = curves[0].second[1];
  EXPECT_EQ(p.step, 50);
  EXPECT_EQ(p.n, 3u);
  EXPECT_NEAR(p.mean, 2.02, kTol);
  EXPECT_NEAR(p.sd, 0.02, kTol);
  EXPECT_NEAR(p.min, 2.00, kTol);
  EXPECT_NEAR(p.max, 2.04, kTol);
  // At step 100 the curve ends at the final val loss: ega 1.42 on average.
  EXPECT_NEAR(curves[1].second[2].mean, 1.42, kTol);
  // The data file the plot reads carries the same numbers.
  write("out");
  // The figure's blocks: index 0 is base's min..max band (x lo hi), index 1 its mean (x y).
  std::ifstream dat(dir_.file("out") + "/plots/val_curves.dat");
  std::string line, block;
  bool found_band = false, found = false;
  while (std::getline(dat, line)) {
    if (line.rfind("# index ", 0) == 0) block = line.substr(8, line.find(':') - 8);
    if (line.rfind("50 ", 0) != 0) continue;
    double step, a, b;
    const int fields = std::sscanf(line.c_str(), "%lf %lf %lf", &step, &a, &b);
    if (block == "0") {
      ASSERT_EQ(fields, 3) << line;
      EXPECT_NEAR(a, 2.00, 1e-9);
      EXPECT_NEAR(b, 2.04, 1e-9);
      found_band = true;
    } else if (block == "1") {
      ASSERT_EQ(fields, 2) << line;
      EXPECT_NEAR(a, 2.02, 1e-9);
      found = true;
    }
  }
  EXPECT_TRUE(found_band);
  EXPECT_TRUE(found);
}

TEST_F(Report, PlotsArePngAndSvgWhenGnuplotExists) {
  if (!find_program("gnuplot")) GTEST_SKIP() << "gnuplot is not installed";
  const ReportResult r = write("out");
  EXPECT_TRUE(r.plots_made) << r.plot_message;
  for (const char* plot : {"val_curves", "omega_sigma", "interaction"}) {
    const std::string base = dir_.file("out") + "/plots/" + plot;
    ASSERT_TRUE(std::filesystem::exists(base + ".png")) << plot << ": " << r.plot_message;
    EXPECT_GT(std::filesystem::file_size(base + ".png"), 1000u) << plot;
    EXPECT_TRUE(starts_with_bytes(base + ".png", "\x89PNG\r\n\x1a\n")) << plot;
    const std::string svg = read_file(base + ".svg");
    EXPECT_NE(svg.find("<svg"), std::string::npos) << plot;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << plot;
  }
  const std::string index = file("out", "index.md");
  EXPECT_NE(index.find("![interaction](plots/interaction.png)"), std::string::npos) << index;
  EXPECT_NE(index.find("[SVG](plots/omega_sigma.svg)"), std::string::npos) << index;
}

TEST_F(Report, MissingGnuplotStillWritesTheTables) {
  const ReportResult r = write("out", dir_.file("no-such-dir") + "/gnuplot");
  EXPECT_FALSE(r.plots_made);
  EXPECT_NE(r.plot_message.find("gnuplot not found"), std::string::npos) << r.plot_message;
  EXPECT_FALSE(file("out", "main.md").empty());
  EXPECT_FALSE(file("out", "plots/interaction.gp").empty());  // scripts kept for later
  EXPECT_FALSE(std::filesystem::exists(dir_.file("out") + "/plots/interaction.png"));
  EXPECT_NE(file("out", "index.md").find("gnuplot not found"), std::string::npos);
}

TEST_F(Report, OneSeedAndNoFactorsStillReport) {
  // One seed: every plot is drawn with points only (no interval, no band width).
  db::ResultsDb db(dir_.file("other.sqlite"), db::OpenMode::read_write_create);
  fx::FixtureOptions one;
  one.name = "one_seed";
  one.seeds = {0};
  fx::write_fixture(db, one);
  // Two variants, no 2x2, no learned parameters: no interaction and no omega-sigma plot.
  fx::write_cells(db, "pair", R"({"name": "pair", "variants": ["base", "ega"], "seeds": [0, 1]})",
                  fx::pair_cells({0, 1}));
  const bool gnuplot = find_program("gnuplot").has_value();
  for (const std::string sweep : {"one_seed", "pair"}) {
    ReportOptions o;
    o.out_dir = dir_.file(sweep);
    const ReportResult r = write_report(db, sweep, o);
    EXPECT_EQ(r.plots_made, gnuplot) << sweep << ": " << r.plot_message;
    EXPECT_FALSE(read_file(o.out_dir + "/main.tex").empty());
  }
  // pair: delta(ega) over seeds 0, 1 = .08, .09; no interaction row, no interaction or MoPE plot.
  const std::string csv = file("pair", "main.csv");
  EXPECT_NEAR(std::stod(csv_row(csv, "ega")["delta"]), 0.085, kTol);
  EXPECT_TRUE(csv_row(csv, "interaction").empty());
  EXPECT_FALSE(std::filesystem::exists(dir_.file("pair") + "/plots/interaction.gp"));
  EXPECT_FALSE(std::filesystem::exists(dir_.file("pair") + "/plots/omega_sigma.gp"));
  EXPECT_TRUE(std::filesystem::exists(dir_.file("pair") + "/plots/val_curves.gp"));
  EXPECT_NE(file("pair", "analysis.txt").find("no 2x2 factors"), std::string::npos);
  // one_seed: the Markdown says there is no interval.
  EXPECT_NE(file("one_seed", "main.md").find("1.4800 (1 seed, no interval)"), std::string::npos);
}

TEST_F(Report, SameDatabaseSameReport) {
  write("one", "");
  write("two", "");
  for (const char* name : {"analysis.json", "main.md", "main.tex", "mope_k_scores.csv", "interaction.csv"})
    EXPECT_EQ(file("one", name), file("two", name)) << name;
}

}  // namespace
