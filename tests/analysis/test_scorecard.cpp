// egm paper's claims file and scorecard: the embedded claims hold every
// number of SPEC.md section 4; a bad claims file is refused in one line
// naming the entry; on fixture databases each claim is matched to the sweeps
// that measured it (within a sweep only, one row per sweep), with verdicts
// worked out by hand from the fixture's numbers (fixture.h).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/paper_claims.h"
#include "analysis/scorecard.h"
#include "db/sqlite.h"
#include "fixture.h"
#include "stats/distributions.h"
#include "test_helpers.h"
#include "util/error.h"

namespace egm::analysis {
namespace {

namespace fx = egm::testing;

std::string refusal(const std::string& text) {
  try {
    parse_claims(text, "claims.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

const ScoreRow* row_of(const Scorecard& card, const std::string& claim, const std::string& sweep) {
  for (const ScoreRow& r : card.rows)
    if (card.claims.claims.at(r.claim).id == claim && r.sweep == sweep) return &r;
  return nullptr;
}
std::size_t rows_of(const Scorecard& card, const std::string& claim) {
  std::size_t n = 0;
  for (const ScoreRow& r : card.rows) n += card.claims.claims.at(r.claim).id == claim;
  return n;
}

TEST(PaperClaims, EmbeddedHoldEverySection4Number) {
  const PaperClaims& c = embedded_claims();
  EXPECT_EQ(c.reference, "base");
  EXPECT_EQ(c.metric, Metric::final_val);
  // The table's eight values, the earlier EGA run, the interaction, the three
  // deltas quoted alone, the five structured priors and the two MoPE claims.
  EXPECT_EQ(c.claims.size(), 20u);
  const std::pair<const char*, double> values[] = {{"base", 1.4742},    {"ega", 1.3821},     {"ega_earlier_run", 1.3712},
                                                   {"mope", 1.5060},    {"ega_mope", 1.3550}, {"sincos", 1.5863},
                                                   {"rope", 1.4637},    {"conv_l4", 1.4668}, {"conv_l8", 1.4691},
                                                   {"ega2", 1.3950},    {"ega4", 1.4088},    {"ega_morlet", 1.4733},
                                                   {"ega_db2", 1.4692}, {"ega_db4", 1.4748}};
  for (const auto& [id, v] : values) {
    const PaperClaim* claim = c.find(id);
    ASSERT_NE(claim, nullptr) << id;
    EXPECT_EQ(claim->kind, ClaimKind::value) << id;
    EXPECT_DOUBLE_EQ(*claim->value, v) << id;
  }
  EXPECT_DOUBLE_EQ(*c.find("ega")->delta, 0.092);
  EXPECT_TRUE(c.find("ega")->delta_quoted);
  EXPECT_DOUBLE_EQ(*c.find("rope")->delta, 0.0105);
  // No delta was printed for the priors: 1.4742 - 1.3950.
  EXPECT_FALSE(c.find("ega2")->delta_quoted);
  EXPECT_NEAR(*c.find("ega2")->delta, 0.0792, 1e-12);
  EXPECT_FALSE(c.find("base")->delta.has_value());
  EXPECT_DOUBLE_EQ(*c.find("interaction")->value, 0.059);
  EXPECT_EQ(c.find("interaction")->factors.ab, "ega_mope");
  EXPECT_DOUBLE_EQ(*c.find("scale_init")->delta, -0.007);
  EXPECT_EQ(c.find("mq_flux")->variant, "mq_ef");
  EXPECT_EQ(c.find("mq_flux")->reference, "ega");
  EXPECT_DOUBLE_EQ(*c.find("mq_flux")->delta, 0.012);
  EXPECT_DOUBLE_EQ(*c.find("mq_phase")->delta, -0.007);
  EXPECT_EQ(c.find("mope_four_clusters")->clusters, 4);
  EXPECT_DOUBLE_EQ(c.find("mope_boundary")->boundary, 5.0);
}

TEST(PaperClaims, RefusedInOneLineNamingTheEntry) {
  const std::string head = R"({"source": "s", "claims": [)";
  const std::string ok = R"({"id": "base", "kind": "value", "variant": "base", "value": 1.4742, "claim": "c"})";
  auto file = [&](const std::string& entry) { return head + ok + ", " + entry + "]}"; };
  const std::pair<std::string, std::string> cases[] = {
      {R"({"id": "x", "kind": "value", "variant": "egaa", "value": 1.3, "claim": "c"})",
       "claims.json: claims[1] (id 'x'): 'variant': unknown variant 'egaa'"},
      {R"({"id": "x", "kind": "value", "variant": "ega", "value": "1.38", "claim": "c"})",
       "claims.json: claims[1] (id 'x'): 'value' must be a number, got string \"1.38\""},
      {R"({"id": "x", "kind": "delta", "variant": "ega", "delta": null, "claim": "c"})",
       "claims.json: claims[1] (id 'x'): 'delta' must be a number, got null"},
      {R"({"id": "x", "kind": "value", "variant": "ega", "claim": "c"})",
       "claims.json: claims[1] (id 'x'): 'value' is missing"},
      {R"({"id": "x", "kind": "value", "variant": "ega", "vlaue": 1.3, "value": 1.3, "claim": "c"})",
       "claims.json: claims[1] (id 'x'): unknown field 'vlaue'"},
      {R"({"id": "x", "kind": "guess", "claim": "c"})", "claims.json: claims[1] (id 'x'): unknown kind 'guess'"},
      {R"({"id": "x", "kind": "interaction", "value": 0.05, "claim": "c",
           "factors": {"a": "ega", "b": "mope", "ab": "ega_mopp", "base": "base"}})",
       "claims.json: claims[1] (id 'x') factors: 'ab': unknown variant 'ega_mopp'"},
      {R"({"id": "x", "kind": "mope_clusters", "variants": ["mope"], "clusters": 2.5, "claim": "c"})",
       "claims.json: claims[1] (id 'x'): 'clusters' must be a whole number from 1 to 8"},
      {R"({"id": "base", "kind": "value", "variant": "base", "value": 1.4, "claim": "c"})",
       "claims.json: claims[1] (id 'base'): the id is used twice"},
  };
  for (const auto& [entry, message] : cases) {
    const std::string got = refusal(file(entry));
    EXPECT_EQ(got.rfind(message, 0), 0u) << "got: " << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
  // The whole line where the value is null: its type is its value, said once.
  EXPECT_EQ(refusal(file(R"({"id": "x", "kind": "delta", "variant": "ega", "delta": null, "claim": "c"})")),
            "claims.json: claims[1] (id 'x'): 'delta' must be a number, got null");
  // A number JSON cannot read is refused by the parser, at its line and column.
  EXPECT_NE(refusal(head + R"({"id": "x", "kind": "value", "variant": "ega", "value": 1.3.8, "claim": "c"}]})")
                .find("claims.json:1:"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"source": "s", "claims": [], "x": 1})").find("unknown field 'x'"), std::string::npos);
}

// The main fixture (fixture.h), 3 seeds: per seed base - ega = 0.08, 0.09, 0.07; base - mope = -0.03,
// -0.03, 0; base - ega_mope = 0.11, 0.11, 0.14; I = 0.06, 0.05, 0.07. t_{0.975, 2} = 4.302653.
TEST(Scorecard, MainFixtureVerdictsByHand) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db);
  const Scorecard card = build_scorecard(db, embedded_claims());
  const double t = 4.302653;

  const ScoreRow* base = row_of(card, "base", "fixture");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->verdict, ClaimVerdict::reference);
  EXPECT_NEAR(base->mean->mean, 1.50, fx::kTol);
  EXPECT_TRUE(base->scale.known);
  EXPECT_EQ(base->scale.preset, "tiny");  // the cells store "{}": the spec's preset fills it

  const ScoreRow* ega = row_of(card, "ega", "fixture");
  ASSERT_NE(ega, nullptr);
  EXPECT_EQ(ega->seeds, 3u);
  EXPECT_NEAR(ega->estimate->estimate, 0.08, fx::kTol);
  EXPECT_NEAR(ega->estimate->ci_low, 0.08 - t * 0.01 / std::sqrt(3.0), 1e-6);
  EXPECT_EQ(ega->verdict, ClaimVerdict::reproduced);
  EXPECT_FALSE(ega->sequential);
  EXPECT_FALSE(ega->sequence.has_value());
  EXPECT_NEAR(ega->mean->mean, (1.40 + 1.41 + 1.45) / 3, fx::kTol);
  // EGA reads later keys: the autoregressive columns exist, and the fixture has no ar_val.
  EXPECT_TRUE(ega->ega_family);
  EXPECT_FALSE(ega->ar_estimate.has_value());
  // The earlier EGA run is a claim of its own on the same numbers.
  EXPECT_EQ(row_of(card, "ega_earlier_run", "fixture")->verdict, ClaimVerdict::reproduced);

  // mope: -0.02 +- 4.3027 * 0.017321 / sqrt(3) = +-0.0430: contains 0 (published -0.032).
  const ScoreRow* mope = row_of(card, "mope", "fixture");
  EXPECT_NEAR(mope->estimate->estimate, -0.02, fx::kTol);
  EXPECT_EQ(mope->verdict, ClaimVerdict::not_settled);
  EXPECT_FALSE(mope->ega_family);
  EXPECT_EQ(row_of(card, "ega_mope", "fixture")->verdict, ClaimVerdict::reproduced);

  const ScoreRow* inter = row_of(card, "interaction", "fixture");
  ASSERT_NE(inter, nullptr);
  EXPECT_NEAR(inter->estimate->estimate, 0.06, fx::kTol);
  EXPECT_NEAR(inter->estimate->ci_high, 0.06 + t * 0.01 / std::sqrt(3.0), 1e-6);
  EXPECT_EQ(inter->verdict, ClaimVerdict::reproduced);
  EXPECT_TRUE(inter->ega_family);

  // What the fixture does not hold: one row each, no sweep, no error.
  for (const char* id : {"sincos", "rope", "conv_l4", "scale_init", "mq_flux", "ega2", "ega_db4"}) {
    ASSERT_EQ(rows_of(card, id), 1u) << id;
    const ScoreRow* r = row_of(card, id, "");
    ASSERT_NE(r, nullptr) << id;
    EXPECT_EQ(r->verdict, ClaimVerdict::not_measured) << id;
    EXPECT_NE(r->detail.find("no sweep of this database"), std::string::npos) << r->detail;
  }

  // MoPE (fixture.h): pairs 1 and 7 have omega = 6 / sigma, so 10 of 12 on the boundary in each of
  // the 6 runs (all 12 at init): the share is 10/12 with no spread, its interval below 1.
  const ScoreRow* boundary = row_of(card, "mope_boundary", "fixture");
  ASSERT_NE(boundary, nullptr);
  EXPECT_EQ(boundary->seeds, 6u);
  EXPECT_NEAR(boundary->estimate->estimate, 10.0 / 12.0, fx::kTol);
  EXPECT_EQ(boundary->verdict, ClaimVerdict::contradicted);
  EXPECT_NE(boundary->detail.find("60 of 72 pairs"), std::string::npos) << boundary->detail;
  EXPECT_NE(boundary->detail.find("at init 72 of 72"), std::string::npos) << boundary->detail;
  // Three sigmas per region: the gap statistic picks 4 in every run (test_param_analysis);
  // 6 of 6, exact lower bound 0.025^(1/6) = 0.5407 > 1/2.
  const ScoreRow* clusters = row_of(card, "mope_four_clusters", "fixture");
  ASSERT_NE(clusters, nullptr);
  EXPECT_NEAR(clusters->estimate->estimate, 1.0, fx::kTol);
  EXPECT_NEAR(clusters->estimate->ci_low, std::pow(0.025, 1.0 / 6.0), 1e-9);
  EXPECT_EQ(clusters->verdict, ClaimVerdict::reproduced);
}

// Two sweeps at two scales measure the same claims: two rows, each paired within its own sweep and
// labelled with its scale; a sweep with ega but no base measures no delta (no pairing across sweeps).
TEST(Scorecard, OneRowPerSweepNeverPairedAcross) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db);
  const std::string wide_config =
      R"({"preset": "small", "model": {"n_layer": 2, "n_head": 4, "d_model": 64, "block_size": 256},
          "train": {"batch_size": 32, "max_steps": 1000}})";
  std::vector<fx::FixtureCell> wide = fx::main_cells({0, 1});
  for (fx::FixtureCell& c : wide) {
    c.config_json = wide_config;
    if (c.variant == "ega") *c.final_val += 0.2;  // EGA worse than base here: delta -0.12, -0.11
    c.params = false;
  }
  nlohmann::json spec = nlohmann::json::parse(fx::main_spec_json("wide", {0, 1}));
  spec["preset"] = "small";
  fx::write_cells(db, "wide", spec.dump(), wide);
  std::vector<fx::FixtureCell> alone;
  for (fx::FixtureCell c : fx::main_cells({0, 1, 2}))
    if (c.variant == "ega") {
      c.final_val = 1.0;  // far better than any base: would "reproduce" if paired with another sweep's base
      c.params = false;
      alone.push_back(c);
    }
  fx::write_cells(db, "ega_alone", R"({"name": "ega_alone", "preset": "tiny", "variants": ["ega"], "seeds": [0, 1, 2]})",
                  alone);
  const Scorecard card = build_scorecard(db, embedded_claims());
  EXPECT_EQ(rows_of(card, "ega"), 2u);
  EXPECT_EQ(row_of(card, "ega", "ega_alone"), nullptr);
  const ScoreRow* w = row_of(card, "ega", "wide");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->scale.text(), "small: 2 layers, 4 heads, d 64, T 256, B 32, 1000 steps");
  EXPECT_EQ(w->seeds, 2u);
  EXPECT_NEAR(w->estimate->estimate, -0.115, fx::kTol);
  // -0.12, -0.11: sd 0.00707, t_{0.975,1} = 12.706: [-0.179, -0.051], below 0 against a published +0.092.
  EXPECT_EQ(w->verdict, ClaimVerdict::contradicted);
  EXPECT_EQ(row_of(card, "ega", "fixture")->verdict, ClaimVerdict::reproduced);
  EXPECT_EQ(rows_of(card, "interaction"), 2u);
  // Only the named sweeps.
  ScorecardOptions only;
  only.sweeps = {"wide"};
  const Scorecard one = build_scorecard(db, embedded_claims(), only);
  EXPECT_EQ(rows_of(one, "ega"), 1u);
  EXPECT_EQ(row_of(one, "mope_boundary", "")->verdict, ClaimVerdict::not_measured);  // wide has no params
  only.sweeps = {"nope"};
  EXPECT_THROW(build_scorecard(db, embedded_claims(), only), ConfigError);
}

// A grid sweep: each point is a scale of its own, scored on its own cells. Point 0 holds the main
// fixture's numbers; at point 1 ega = base + 0.04, 0.05, 0.07, so delta(ega) = -0.0533 with
// sd 0.01528: +-4.3027 * 0.01528 / sqrt(3) = +-0.0380, below 0.
TEST(Scorecard, GridPointsAreRowsOfTheirOwn) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  std::vector<fx::FixtureCell> cells;
  for (int64_t point = 0; point < 2; ++point)
    for (fx::FixtureCell c : fx::main_cells({0, 1, 2})) {
      c.grid_point = point;
      c.grid_json = nlohmann::json{{"train.lr", point == 0 ? 0.001 : 0.003}}.dump();
      if (point == 1 && c.variant == "ega")
        c.final_val = fx::fixture_final("base", c.seed) + std::vector<double>{0.04, 0.05, 0.07}[c.seed];
      c.params = false;
      cells.push_back(c);
    }
  nlohmann::json spec = nlohmann::json::parse(fx::main_spec_json("lr", {0, 1, 2}));
  spec["grid"] = {{"train.lr", {0.001, 0.003}}};
  fx::write_cells(db, "lr", spec.dump(), cells);
  const Scorecard card = build_scorecard(db, embedded_claims());
  ASSERT_EQ(rows_of(card, "ega"), 2u);
  const ScoreRow* p0 = nullptr;
  const ScoreRow* p1 = nullptr;
  for (const ScoreRow& r : card.rows)
    if (card.claims.claims.at(r.claim).id == "ega") (r.point == "point 0: train.lr=0.001" ? p0 : p1) = &r;
  ASSERT_NE(p0, nullptr);
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->point, "point 1: train.lr=0.003");
  EXPECT_NEAR(p0->estimate->estimate, 0.08, fx::kTol);
  EXPECT_EQ(p0->verdict, ClaimVerdict::reproduced);
  EXPECT_NEAR(p1->estimate->estimate, -0.16 / 3, fx::kTol);
  EXPECT_EQ(p1->seeds, 3u);
  EXPECT_EQ(p1->verdict, ClaimVerdict::contradicted);
  const std::string text = render_scorecard(card, ScorecardFormat::text);
  EXPECT_NE(text.find("\n  lr, point 1: train.lr=0.003 (tiny: "), std::string::npos) << text;
}

// Only at the paper's scale (the paper preset's width, depth, context, batch and steps) is an absolute
// value compared, with the prediction interval of one seed (the paper ran one): mean +- t s sqrt(1 + 1/n).
// base here is the fixture's + 0.2: 1.70 +- 4.3027 * 0.02 * 1.1547 = [1.6006, 1.7994], 1.4742 outside;
// ega 1.42 +- 4.3027 * 0.026458 * 1.1547 = [1.2886, 1.5514], 1.3821 inside.
TEST(Scorecard, AbsoluteValuesComparedOnlyAtThePapersScale) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db);  // tiny: no value check
  std::vector<fx::FixtureCell> cells = fx::main_cells({0, 1, 2});
  for (fx::FixtureCell& c : cells) {
    c.config_json = R"({"preset": "paper"})";
    c.params = false;
    if (c.variant == "base") *c.final_val += 0.2;
  }
  nlohmann::json spec = nlohmann::json::parse(fx::main_spec_json("at_paper", {0, 1, 2}));
  spec["preset"] = "paper";
  fx::write_cells(db, "at_paper", spec.dump(), cells);
  const Scorecard card = build_scorecard(db, embedded_claims());
  const ScoreRow* base = row_of(card, "base", "at_paper");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->scale.text(), "paper: 6 layers, 8 heads, d 256, T 256, B 64, 5000 steps");
  EXPECT_NE(base->detail.find("the published 1.4742 lies outside our 95% prediction interval of one seed "
                              "[1.6006, 1.7994]"),
            std::string::npos)
      << base->detail;
  const ScoreRow* ega = row_of(card, "ega", "at_paper");
  EXPECT_NE(ega->detail.find("the published 1.3821 lies inside our 95% prediction interval of one seed "
                             "[1.2886, 1.5514]"),
            std::string::npos)
      << ega->detail;
  EXPECT_EQ(row_of(card, "ega", "fixture")->detail.find("paper's scale"), std::string::npos);
}

// A sweep with looks (egm sweep --until): the verdict comes from the anytime-valid sequence,
// not the fixed-n t interval; 3 seeds leave the sequence unbounded, so "not settled" although the
// t interval lies above 0. The loop's own last look is quoted.
TEST(Scorecard, SequentialSweepDecidedByItsSequence) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db);
  const int64_t sweep = db.find_sweep("fixture")->id;
  db.connection().execute(
      "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
      "next, method, params) VALUES (?, 1, 0, 'delta(ega)', 3, 0.08, NULL, NULL, 1, 'undecided', 0, "
      "'seed 3 added', 't-mixture', '')",
      sweep);
  db.connection().execute(
      "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
      "next, method, params) VALUES (?, 1, 0, 'interaction', 3, 0.06, NULL, NULL, 1, 'undecided', 0, "
      "'seed 3 added', 't-mixture', '')",
      sweep);
  const Scorecard card = build_scorecard(db, embedded_claims());
  const ScoreRow* ega = row_of(card, "ega", "fixture");
  ASSERT_NE(ega, nullptr);
  EXPECT_TRUE(ega->sequential);
  ASSERT_TRUE(ega->sequence.has_value());
  EXPECT_EQ(ega->sequence->seeds, 3u);
  EXPECT_EQ(ega->sequence->decision, "undecided");
  EXPECT_TRUE(ega->estimate->ci_low > 0);  // the t interval alone would say reproduced
  EXPECT_EQ(ega->verdict, ClaimVerdict::not_settled);
  EXPECT_NE(ega->basis.find("anytime-valid"), std::string::npos);
  EXPECT_NE(ega->detail.find("last look (look 1, 3 seeds): undecided"), std::string::npos) << ega->detail;
  // Every claim of the sweep is replayed, not only those the loop watched; the loop's look of the
  // interaction is quoted where its 2x2 (the spec's factors) is the claim's.
  const ScoreRow* inter = row_of(card, "interaction", "fixture");
  EXPECT_TRUE(inter->sequence.has_value());
  EXPECT_NE(inter->detail.find("last look (look 1, 3 seeds): undecided"), std::string::npos) << inter->detail;
  EXPECT_EQ(row_of(card, "mope", "fixture")->detail, "") << "the loop never looked at delta(mope)";
}

// A sequential sweep whose sequence settled: base - ega = 0.05 + 0.01 * ((seed * 7) % 5 - 2) over
// 12 seeds (test_sequences.cpp: positive once bounded), so reproduced on the sequence.
TEST(Scorecard, SettledSequenceReproduces) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  std::vector<int64_t> seeds(12);
  for (int64_t s = 0; s < 12; ++s) seeds[static_cast<size_t>(s)] = s;
  fx::write_cells(db, "seq", nlohmann::json{{"name", "seq"}, {"variants", {"base", "ega"}}, {"seeds", seeds}}.dump(),
                  fx::sequence_cells(seeds));
  db.connection().execute(
      "INSERT INTO looks (sweep_id, look, time, claim, seeds, estimate, lower, upper, p_anytime, decision, settled, "
      "next, method, params) VALUES (?, 1, 0, 'delta(ega)', 12, 0.05, 0.01, 0.09, 0.001, 'positive', 1, "
      "'stopped: every claim settled', 't-mixture', '')",
      db.find_sweep("seq")->id);
  const Scorecard card = build_scorecard(db, embedded_claims());
  const ScoreRow* ega = row_of(card, "ega", "seq");
  ASSERT_NE(ega, nullptr);
  ASSERT_TRUE(ega->sequence.has_value());
  EXPECT_EQ(ega->sequence->decision, "positive");
  EXPECT_EQ(ega->sequence->seeds, 12u);
  EXPECT_GT(ega->sequence->lower, 0.0);
  EXPECT_EQ(ega->verdict, ClaimVerdict::reproduced);
  EXPECT_NE(ega->detail.find("(look 1, 12 seeds): positive, settled"), std::string::npos) << ega->detail;
}

// A sweep whose cells ran with another world size is not analysed (egm analyze refuses it
// too): its rows say so, with no error, and the scorecard's notes name it.
TEST(Scorecard, RefusedAnalysisIsNotMeasuredWithItsReason) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db, fx::mixed_world_size_options());
  const Scorecard card = build_scorecard(db, embedded_claims());
  const ScoreRow* ega = row_of(card, "ega", "fixture");
  ASSERT_NE(ega, nullptr);
  EXPECT_EQ(ega->verdict, ClaimVerdict::not_measured);
  EXPECT_NE(ega->detail.find("not analysed"), std::string::npos) << ega->detail;
  EXPECT_FALSE(card.notes.empty());
}

TEST(Scorecard, FormatsAndRefusal) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db);
  const Scorecard card = build_scorecard(db, embedded_claims());
  EXPECT_THROW(parse_scorecard_format("xml"), ConfigError);
  EXPECT_THROW(parse_scorecard_format("table"), ConfigError);
  const nlohmann::json j = nlohmann::json::parse(render_scorecard(card, ScorecardFormat::json));
  EXPECT_EQ(j.at("rows").size(), card.rows.size());
  EXPECT_EQ(j.at("rows").at(1).at("claim"), "ega");
  EXPECT_EQ(j.at("rows").at(1).at("verdict"), "reproduced in sign");
  const std::string csv = render_scorecard(card, ScorecardFormat::csv);
  EXPECT_EQ(csv.rfind("claim,kind,variant,reference,published_value,published_delta,", 0), 0u) << csv.substr(0, 200);
  const std::string md = render_scorecard(card, ScorecardFormat::markdown);
  EXPECT_NE(md.find("| ega: EGA with the learned table beats the baseline |"), std::string::npos) << md;
  const std::string text = render_scorecard(card, ScorecardFormat::text);
  EXPECT_NE(text.find("reproduced in sign"), std::string::npos);
  EXPECT_NE(text.find("not measured"), std::string::npos);
}

}  // namespace
}  // namespace egm::analysis
