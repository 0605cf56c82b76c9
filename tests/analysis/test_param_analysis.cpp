// Learned parameters of the fixture (tests/analysis/fixture.h) against the
// values it was built from: MoPE regions, boundary shares, movement, the
// chosen number of clusters; EGA tau and alpha per layer and head.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "analysis/sweep_analysis.h"
#include "db/migrations.h"
#include "db/sqlite.h"
#include "util/error.h"
#include "fixture.h"
#include "test_helpers.h"

namespace {

using namespace egm;
using namespace egm::analysis;
namespace fx = egm::testing;
using egm::testing::ScratchDir;

using egm::testing::kTol;

class Params : public ::testing::Test {
 protected:
  void SetUp() override {
    db::ResultsDb db(dir_.file("r.sqlite"), db::OpenMode::read_write_create);
    fx::write_fixture(db);
    analysis_ = analyze_sweep(db, "fixture");
  }
  const MopeRun& run(const std::string& key) const {
    for (const auto& r : analysis_.params.mope)
      if (r.key == key) return r;
    throw std::runtime_error("no MoPE run " + key);
  }
  ScratchDir dir_;
  SweepAnalysis analysis_;
};

TEST_F(Params, MopeRunsInSpecOrder) {
  ASSERT_EQ(analysis_.params.mope.size(), 6u);  // mope and ega_mope, 3 seeds each
  EXPECT_EQ(analysis_.params.mope[0].key, "mope-s0");
  EXPECT_EQ(analysis_.params.mope[3].key, "ega_mope-s0");
  for (const auto& r : analysis_.params.mope) {
    EXPECT_EQ(r.step, 100);
    EXPECT_TRUE(r.has_init);
    EXPECT_EQ(r.pairs.size(), 12u);
  }
}

TEST_F(Params, SigmaRegionsNowAndAtInit) {
  const MopeRun& r = run("mope-s1");
  // Learned sigmas x 1.01: 2.02 2.121 2.222 | 8.08 8.484 8.888 | 30.3 31.815 33.33 | 70.7 74.235 77.77:
  // three each in character, word, clause and sentence, none below 1.
  const std::array<std::size_t, 5> now{0, 3, 3, 3, 3};
  EXPECT_EQ(r.regions, now);
  // Init sigma0 = 5 / f, f in [1, 0.99 pi]: from 5 down to 5 / 3.110 = 1.608: all character.
  const std::array<std::size_t, 5> init{0, 12, 0, 0, 0};
  EXPECT_EQ(r.regions_init, init);
}

TEST_F(Params, BoundaryShareNowAndAtInit) {
  const MopeRun& r = run("ega_mope-s2");
  // Pairs 1 and 7 have omega = 6 / sigma (omega * sigma = 6, 20% off); the other 10 sit on 5.
  EXPECT_NEAR(r.boundary_share, 10.0 / 12.0, kTol);
  EXPECT_FALSE(r.pairs[1].on_boundary);
  EXPECT_TRUE(r.pairs[2].on_boundary);
  // Every pair starts on omega * sigma = 5.
  EXPECT_NEAR(r.boundary_share_init, 1.0, kTol);
}

TEST_F(Params, MovementInLogSpace) {
  const MopeRun& r = run("mope-s0");
  // Pair 0: (omega0, sigma0) = (1, 5) -> (5/2, 2): d log omega = log 2.5,
  // d log sigma = log 0.4 = -log 2.5, distance sqrt 2 * log 2.5 = 1.295837.
  EXPECT_NEAR(r.pairs[0].omega0, 1.0, kTol);
  EXPECT_NEAR(r.pairs[0].sigma0, 5.0, kTol);
  EXPECT_NEAR(r.pairs[0].log_move, std::sqrt(2.0) * std::log(2.5), kTol);
  EXPECT_NEAR(r.pairs[0].sigma_ratio, 0.4, kTol);
  // Pair 11: f = 0.99 pi, sigma0 = 5 / (0.99 pi) -> sigma 77, omega 5/77:
  // both coordinates move by log(77 * 0.99 pi / 5).
  const double d = std::log(77.0 * 0.99 * M_PI / 5.0);
  EXPECT_NEAR(r.pairs[11].log_move, std::sqrt(2.0) * d, 1e-9);
  EXPECT_NEAR(r.move_max, std::sqrt(2.0) * d, 1e-9);
  // The median of 12 moves is the mean of the 6th and 7th smallest (type 7 at p = .5).
  std::vector<double> moves;
  for (const auto& p : r.pairs) moves.push_back(p.log_move);
  std::sort(moves.begin(), moves.end());
  EXPECT_NEAR(r.move_median, (moves[5] + moves[6]) / 2, kTol);
}

TEST_F(Params, ClusteringFindsTheFourBuiltInScales) {
  // Learned (log omega, log sigma) form four tight groups (one per region,
  // spread <= log 1.1 in sigma and log 1.2 in omega within a group, >= log 2.1
  // between neighbours): the gap statistic picks 4.
  const MopeRun& r = run("mope-s0");
  ASSERT_TRUE(r.clustered);
  EXPECT_EQ(r.clusters.gap_k, 4u);
  EXPECT_EQ(r.clusters.chosen_k, 4u);
  EXPECT_EQ(r.clusters.scores.size(), 8u);  // k = 1 .. kmax = 8, one score row each
  for (std::size_t size : r.clusters.chosen().sizes) EXPECT_EQ(size, 3u);
  ASSERT_TRUE(r.clustered_init);  // the initial pairs are clustered too, as a control
  EXPECT_EQ(r.clusters_init.scores.size(), 8u);
}

TEST_F(Params, SharedGapReferenceChoosesAsDrawingPerRun) {
  // The default shared reference tables against B draws in each run's own
  // box (the way every run was clustered before): the same k for every run's
  // learned and initial pairs, Gap(k) within a fraction of its standard error.
  db::ResultsDb db(dir_.file("r.sqlite"), db::OpenMode::read_only);
  AnalysisOptions per_run;
  per_run.params.gap_reference = stats::GapReference::per_call;
  const SweepAnalysis other = analyze_sweep(db, "fixture", per_run);
  ASSERT_EQ(other.params.mope.size(), analysis_.params.mope.size());
  for (std::size_t i = 0; i < other.params.mope.size(); ++i) {
    const MopeRun& a = analysis_.params.mope[i];
    const MopeRun& b = other.params.mope[i];
    for (const auto& [x, y] : {std::pair{&a.clusters, &b.clusters}, std::pair{&a.clusters_init, &b.clusters_init}}) {
      EXPECT_EQ(x->gap_k, y->gap_k) << a.key;
      EXPECT_EQ(x->chosen_k, y->chosen_k) << a.key;
      EXPECT_EQ(x->bic_k, y->bic_k) << a.key;                // the data's own fits are the same
      EXPECT_EQ(x->silhouette_k, y->silhouette_k) << a.key;
      ASSERT_EQ(x->scores.size(), y->scores.size());
      for (std::size_t k = 0; k < x->scores.size(); ++k) {
        EXPECT_EQ(x->scores[k].within_ss, y->scores[k].within_ss) << a.key;
        EXPECT_LT(std::fabs(x->scores[k].gap - y->scores[k].gap), 0.25 * y->scores[k].gap_se) << a.key << " k " << k;
      }
    }
  }
}

TEST_F(Params, EveryRunIsClusteredUpToTheLimitAndOnlyTheReportedFitIsKept) {
  // 3 runs per variant, under the default limit: every run is clustered, no note.
  ASSERT_EQ(analysis_.params.cluster_samples.size(), 2u);
  for (const ClusterSample& c : analysis_.params.cluster_samples) {
    EXPECT_EQ(c.clustered, 3u) << c.variant;
    EXPECT_EQ(c.runs, 3u) << c.variant;
  }
  EXPECT_EQ(analysis_.params.cluster_samples[0].variant, "mope");
  EXPECT_EQ(analysis_.params.cluster_samples[1].variant, "ega_mope");
  for (const auto& note : analysis_.params.notes) EXPECT_EQ(note.find("k-means on"), std::string::npos) << note;
  // Of the fits, the chosen one's centres and sizes are what the report reads.
  const MopeRun& r = run("mope-s1");
  ASSERT_EQ(r.clusters.fits.size(), r.clusters.chosen_k);
  EXPECT_EQ(r.clusters.chosen().centres.size(), r.clusters.chosen_k);
  for (const auto& fit : r.clusters.fits) EXPECT_TRUE(fit.assignments.empty());
}

TEST_F(Params, ClusterRunsTakesRunsEvenlySpacedInSeedOrderWithUnchangedNumbers) {
  // At most 2 of each variant's 3 runs: positions 0 and floor(1 * 3 / 2) = 1
  // in seed order, i.e. seeds 0 and 1; their clusterings are those of
  // clustering every run, bit for bit; seed 2 has none; a note says so.
  db::ResultsDb db(dir_.file("r.sqlite"), db::OpenMode::read_only);
  AnalysisOptions two;
  two.params.cluster_runs = 2;
  const SweepAnalysis s = analyze_sweep(db, "fixture", two);
  ASSERT_EQ(s.params.mope.size(), analysis_.params.mope.size());
  ASSERT_EQ(s.params.cluster_samples.size(), 2u);
  for (const ClusterSample& c : s.params.cluster_samples) {
    EXPECT_EQ(c.clustered, 2u) << c.variant;
    EXPECT_EQ(c.runs, 3u) << c.variant;
  }
  for (std::size_t i = 0; i < s.params.mope.size(); ++i) {
    const MopeRun& all = analysis_.params.mope[i];
    const MopeRun& some = s.params.mope[i];
    ASSERT_EQ(some.key, all.key);
    EXPECT_EQ(some.pairs.size(), all.pairs.size());
    EXPECT_EQ(some.move_median, all.move_median);  // the rest of the run's numbers do not depend on it
    if (some.seed == 2) {
      EXPECT_FALSE(some.clustered) << some.key;
      EXPECT_FALSE(some.clustered_init) << some.key;
      continue;
    }
    ASSERT_TRUE(some.clustered) << some.key;
    ASSERT_TRUE(some.clustered_init) << some.key;
    for (const auto& [x, y] :
         {std::pair{&some.clusters, &all.clusters}, std::pair{&some.clusters_init, &all.clusters_init}}) {
      EXPECT_EQ(x->gap_k, y->gap_k) << some.key;
      EXPECT_EQ(x->bic_k, y->bic_k) << some.key;
      EXPECT_EQ(x->silhouette_k, y->silhouette_k) << some.key;
      ASSERT_EQ(x->scores.size(), y->scores.size());
      for (std::size_t k = 0; k < x->scores.size(); ++k) {
        EXPECT_EQ(x->scores[k].within_ss, y->scores[k].within_ss) << some.key;
        EXPECT_EQ(x->scores[k].gap, y->scores[k].gap) << some.key;
        EXPECT_EQ(x->scores[k].bic, y->scores[k].bic) << some.key;
      }
      EXPECT_EQ(x->chosen().centres, y->chosen().centres) << some.key;
    }
  }
  std::size_t sample_notes = 0;
  for (const auto& note : s.params.notes)
    if (note.find("k-means on 2 of its 3 MoPE runs") != std::string::npos) ++sample_notes;
  EXPECT_EQ(sample_notes, 2u);  // mope and ega_mope
}

TEST(ClusterRuns, ParsesAllOrAPositiveCount) {
  EXPECT_EQ(parse_cluster_runs("all"), 0u);
  EXPECT_EQ(parse_cluster_runs("1"), 1u);
  EXPECT_EQ(parse_cluster_runs("500"), 500u);
  for (const char* bad : {"0", "-3", "", "12x", "none", "1.5"})
    EXPECT_THROW(parse_cluster_runs(bad), ConfigError) << bad;
}

TEST_F(Params, SnapshotsKeepTheStoredValuesExactly) {
  // The loaded parameters are the stored snapshots (step 0 and the last),
  // their values decoded from the stored floats or doubles as they were written.
  db::ResultsDb db(dir_.file("r.sqlite"), db::OpenMode::read_only);
  const SweepData data = load_sweep(db, "fixture");
  const CellData* cell = nullptr;
  for (const auto& c : data.cells)
    if (c.row.key == "mope-s1") cell = &c;
  ASSERT_NE(cell, nullptr);
  const std::vector<ParamSnapshot>& snapshots = data.params.at(cell->row.id);
  ASSERT_EQ(snapshots.size(), 2u);
  EXPECT_EQ(snapshots[0].step, 0);
  EXPECT_EQ(snapshots[1].step, 100);
  std::map<std::pair<std::string, int64_t>, double> last;
  snapshots[1].for_each([&](const db::ParamSeries& s, int64_t idx, double v) { last[{s.name, idx}] = v; });
  ASSERT_EQ(last.size(), 24u);  // 12 pairs
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(last.at({"omega", i}), fx::mope_omega(i, 1)) << i;
    EXPECT_EQ(last.at({"sigma", i}), fx::mope_sigma(i, 1)) << i;
  }
}

// A schema-v4 file (one row per value, before packed snapshots): 3 ega_mope
// cells with 16 MoPE pairs and EGA tau (layers 0-1, heads 0, 1, 3; one NULL)
// at steps 0, 500 and 1000.
void write_version_four_sweep(const std::string& path) {
  db::Connection c(path, db::OpenMode::read_write_create);
  const auto& all = db::results_migrations();
  ASSERT_GE(all.size(), 5u);
  ASSERT_EQ(db::migrate(c, {all.begin(), all.begin() + 4}), 4);
  c.exec("BEGIN");
  c.exec("INSERT INTO sweeps (id, name, spec_json, spec_hash, created_at, updated_at) VALUES (1, 's', '{}', 'h', 1, 1)");
  db::Statement insert = c.prepare(
      "INSERT INTO params (cell_id, run_id, step, module, layer, idx, name, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  for (int64_t cell = 1; cell <= 3; ++cell) {
    c.execute("INSERT INTO cells (id, sweep_id, position, key, variant, seed, config_json, config_hash, max_steps, "
              "max_attempts, updated_at) VALUES (?, 1, ?, ?, 'ega_mope', ?, '{}', 'c', 1000, 1, 1)",
              cell, cell, "ega_mope-s" + std::to_string(cell), cell);
    c.execute("INSERT INTO runs (id, cell_id, attempt, status, started_at) VALUES (?, ?, 1, 'done', 1)", cell, cell);
    auto put = [&](int64_t step, const char* module, int64_t layer, int64_t idx, const char* name,
                   std::optional<double> value) {
      insert.reset();
      insert.bind_all(cell, cell, step, module, layer, idx, name, value);
      insert.run();
    };
    for (int64_t step : {0, 500, 1000}) {
      for (int64_t pair = 0; pair < 16; ++pair) {
        put(step, "mope", -1, pair, "omega", static_cast<float>(0.5 + 0.01 * pair + 0.001 * step * (pair % 4)));
        put(step, "mope", -1, pair, "sigma", 0.1 * static_cast<double>(pair) + cell + 0.01 * step);
      }
      for (int64_t layer = 0; layer < 2; ++layer)
        for (int64_t head : {0, 1, 3})
          put(step, "ega", layer, head, "tau",
              head == 3 && step == 1000 && cell == 2 ? std::nullopt
                                                     : std::optional<double>(0.1 * cell + step / (1.0 + head + layer)));
    }
  }
  c.exec("COMMIT");
}

TEST(ParamsBeforeVersionFive, RowsGiveTheSameAnalysisAsTheMigratedSnapshots) {
  ScratchDir dir;
  const std::string path = dir.file("v4.sqlite");
  write_version_four_sweep(path);
  auto analyse = [](db::ResultsDb& db) {
    const SweepData data = load_sweep(db, "s");
    std::vector<const CellData*> cells;
    for (const auto& c : data.cells) cells.push_back(&c);
    return analyze_params(data, cells, ParamOptions{}, 7);
  };
  ParamAnalysis v4, v5;
  {
    db::ResultsDb reader(path, db::OpenMode::read_only);
    ASSERT_EQ(reader.schema_version(), 4);
    v4 = analyse(reader);
  }
  {
    db::ResultsDb db(path, db::OpenMode::read_write);
    ASSERT_GE(db.schema_version(), 5);
    v5 = analyse(db);
  }
  ASSERT_EQ(v4.mope.size(), 3u);
  ASSERT_EQ(v5.mope.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const MopeRun& a = v4.mope[i];
    const MopeRun& b = v5.mope[i];
    EXPECT_EQ(a.step, 1000);
    EXPECT_EQ(b.step, 1000);
    EXPECT_TRUE(a.has_init && b.has_init);
    ASSERT_EQ(a.pairs.size(), 16u);
    ASSERT_EQ(b.pairs.size(), 16u);
    for (std::size_t j = 0; j < 16; ++j) {
      EXPECT_EQ(a.pairs[j].omega, b.pairs[j].omega);
      EXPECT_EQ(a.pairs[j].sigma, b.pairs[j].sigma);
      EXPECT_EQ(a.pairs[j].sigma0, b.pairs[j].sigma0);
    }
    EXPECT_DOUBLE_EQ(b.pairs[3].sigma, 0.3 + static_cast<double>(i + 1) + 10.0);  // step 1000's, not 500's
    ASSERT_TRUE(a.clustered && b.clustered);
    EXPECT_EQ(a.clusters.gap_k, b.clusters.gap_k);
    EXPECT_EQ(a.clusters.scores[1].within_ss, b.clusters.scores[1].within_ss);
  }
  ASSERT_EQ(v4.gates.size(), 6u);  // 2 layers x 3 heads
  ASSERT_EQ(v5.gates.size(), 6u);
  for (std::size_t g = 0; g < 6; ++g) {
    EXPECT_EQ(v4.gates[g].n, v5.gates[g].n);
    EXPECT_EQ(v4.gates[g].mean, v5.gates[g].mean);
    EXPECT_EQ(v4.gates[g].init_mean, v5.gates[g].init_mean);
  }
  // Layer 1, head 3: cell 2's last tau is NULL, so its last value counts from
  // the two other cells only.
  EXPECT_EQ(v5.gates[5].idx, 3);
  EXPECT_EQ(v5.gates[5].n, 2u);
}

TEST_F(Params, EgaTauAndAlphaPerLayerAndHeadOverSeeds) {
  // 2 variants (ega, ega_mope) x 2 layers x 2 heads x {tau, alpha}.
  ASSERT_EQ(analysis_.params.gates.size(), 16u);
  const GateParamStat* tau = nullptr;
  const GateParamStat* alpha = nullptr;
  for (const auto& g : analysis_.params.gates)
    if (g.variant == "ega" && g.layer == 1 && g.idx == 1) (g.name == "tau" ? tau : alpha) = &g;
  ASSERT_NE(tau, nullptr);
  ASSERT_NE(alpha, nullptr);
  // tau(l1, h1) = .1 + .05 + .01 seed = .15 .16 .17: mean .16, sd .01; init 0.
  EXPECT_EQ(tau->n, 3u);
  EXPECT_NEAR(tau->mean, 0.16, kTol);
  EXPECT_NEAR(tau->sd, 0.01, kTol);
  EXPECT_NEAR(tau->min, 0.15, kTol);
  EXPECT_NEAR(tau->init_mean, 0.0, kTol);
  // alpha(h1) = 2.1 - .02 seed = 2.10 2.08 2.06: mean 2.08, sd .02; init 2.
  EXPECT_NEAR(alpha->mean, 2.08, kTol);
  EXPECT_NEAR(alpha->sd, 0.02, kTol);
  EXPECT_NEAR(alpha->init_mean, 2.0, kTol);
  // The fixture's runs hold no gate-threshold share: said so.
  bool said = false;
  for (const auto& n : analysis_.params.notes) said = said || n.find("gate threshold") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(Params, GateOpenShareIsSummarisedLikeTheOtherGateParameters) {
  ScratchDir other;
  db::ResultsDb db(other.file("g.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db, {});
  // As a worker records it: per layer and head at each eval; here 0.5 at step 0 and
  // 0.40 / 0.44 / 0.48 at step 100 for seeds 0 / 1 / 2 (layer 1, head 0 of ega).
  std::vector<db::ParamValue> shares;
  db::Statement taus = db.connection().prepare(
      "SELECT cell_id, run_id, step, layer, idx, "
      "CASE step WHEN 0 THEN 0.5 ELSE 0.40 + 0.04 * (SELECT seed FROM cells WHERE cells.id = params.cell_id) END "
      "FROM params WHERE module = 'ega' AND name = 'tau'");
  while (taus.step())
    shares.push_back({taus.int64(0), taus.int64(1), taus.int64(2), "ega", taus.int64(3), taus.int64(4),
                      "gate_open_share", taus.real(5)});
  db.record_params(shares);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  const GateParamStat* share = nullptr;
  for (const auto& g : a.params.gates)
    if (g.variant == "ega" && g.layer == 1 && g.idx == 0 && g.name == "gate_open_share") share = &g;
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->n, 3u);
  EXPECT_NEAR(share->mean, 0.44, kTol);
  EXPECT_NEAR(share->sd, 0.04, kTol);
  EXPECT_NEAR(share->init_mean, 0.5, kTol);
  for (const auto& n : a.params.notes) EXPECT_EQ(n.find("gate threshold"), std::string::npos) << n;
}

TEST_F(Params, ReadsStepZeroAndEachModulesLastSnapshot) {
  // An eval between init and the end with wild values changes nothing (only
  // step 0 and each module's last step are read), and a module whose last
  // value sits in an earlier snapshot than another module's is still read
  // at its own last step.
  ScratchDir other;
  db::ResultsDb db(other.file("m.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db);
  std::vector<db::ParamValue> middle, later;
  db::Statement rows = db.connection().prepare(
      "SELECT cell_id, run_id, module, layer, idx, name FROM params WHERE step = 100");
  while (rows.step()) {
    middle.push_back({rows.int64(0), rows.int64(1), 50, rows.text(2), rows.int64(3), rows.int64(4), rows.text(5),
                      1000.0});
    if (rows.text(2) == "ega" && rows.text(5) == "tau" && rows.int64(3) == 0 && rows.int64(4) == 0)
      later.push_back({rows.int64(0), rows.int64(1), 150, "extra", -1, 0, "knob", 7.0});
  }
  ASSERT_FALSE(middle.empty());
  ASSERT_EQ(later.size(), 6u);  // ega and ega_mope, 3 seeds each
  db.record_params(middle);
  db.record_params(later);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  ASSERT_EQ(a.params.mope.size(), analysis_.params.mope.size());
  for (std::size_t i = 0; i < a.params.mope.size(); ++i) {
    EXPECT_EQ(a.params.mope[i].step, 100);
    EXPECT_EQ(a.params.mope[i].boundary_share, analysis_.params.mope[i].boundary_share);
    EXPECT_EQ(a.params.mope[i].move_median, analysis_.params.mope[i].move_median);
  }
  std::size_t extra = 0;
  for (const GateParamStat& g : a.params.gates) {
    if (g.module == "extra") {
      ++extra;
      EXPECT_EQ(g.mean, 7.0);
      EXPECT_EQ(g.n, 3u);
      continue;
    }
    bool matched = false;
    for (const GateParamStat& b : analysis_.params.gates)
      if (b.variant == g.variant && b.module == g.module && b.layer == g.layer && b.idx == g.idx && b.name == g.name) {
        matched = true;
        EXPECT_EQ(g.mean, b.mean) << g.variant << " " << g.name;  // step 100's values, not step 50's 1000
        EXPECT_EQ(g.init_mean, b.init_mean);
      }
    EXPECT_TRUE(matched) << g.variant << " " << g.module << " " << g.name;
  }
  EXPECT_EQ(extra, 2u);  // ega and ega_mope
}

TEST_F(Params, NoInitRowsMeansNoComparison) {
  ScratchDir other;
  db::ResultsDb db(other.file("n.sqlite"), db::OpenMode::read_write_create);
  const int64_t cell = fx::write_fixture(db, {}).at("mope-s0");
  // Remove the step-0 snapshot of one run through SQL (the coordinator never deletes; a worker may not report step 0).
  db.connection().execute("DELETE FROM param_snapshots WHERE cell_id = ? AND step = 0", cell);
  const SweepAnalysis a = analyze_sweep(db, "fixture");
  const MopeRun* r = nullptr;
  for (const auto& x : a.params.mope)
    if (x.key == "mope-s0") r = &x;
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->has_init);
  EXPECT_TRUE(std::isnan(r->boundary_share_init));
  EXPECT_TRUE(std::isnan(r->move_median));
  EXPECT_NEAR(r->boundary_share, 10.0 / 12.0, kTol);
}

}  // namespace
