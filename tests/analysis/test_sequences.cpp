// Each claim's confidence sequence replayed over the sweep's seeds in run
// order: the order is the spec's seed list, the decision and the look at
// which it settled agree with the stats library on the same contrasts, and
// Bonferroni splits alpha over the claims.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/sequences.h"
#include "fixture.h"
#include "test_helpers.h"
#include "util/error.h"

namespace egm::analysis {
namespace {

namespace fx = egm::testing;

TEST(Sequences, ReplayedInSpecSeedOrderAndSettled) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("s.sqlite"), db::OpenMode::read_write_create);
  // base - ega = 0.05 + 0.01 * ((seed * 7) % 5 - 2): contrasts 0.03..0.07, sd ~0.016, 12 seeds
  // run in the order 11, 10, ..., 0 (the spec's list).
  std::vector<int64_t> order;
  for (int64_t s = 11; s >= 0; --s) order.push_back(s);
  nlohmann::json spec = {{"name", "seq"}, {"variants", {"base", "ega"}}, {"seeds", order}};
  fx::write_cells(db, "seq", spec.dump(), fx::sequence_cells(order));
  const SweepData data = load_sweep(db, "seq", false);
  AnalysisOptions ao;
  ao.analyse_params = false;
  const SweepAnalysis a = analyze_sweep(data, ao);
  ASSERT_EQ(data.spec.seeds, std::vector<uint64_t>(order.begin(), order.end()));

  const std::vector<ClaimSequence> seqs = claim_sequences(a, data.spec.seeds);
  ASSERT_EQ(seqs.size(), 1u);  // one delta, no factors
  const ClaimSequence& c = seqs[0];
  EXPECT_EQ(c.claim, "delta(ega)");
  EXPECT_EQ(c.seeds, order);
  EXPECT_DOUBLE_EQ(c.options.alpha, 0.05);  // one claim: the whole alpha
  // The same contrasts in the same order, straight through the stats library.
  std::vector<double> contrasts;
  for (int64_t s : order) contrasts.push_back(0.05 + 0.01 * static_cast<double>((s * 7) % 5 - 2));
  const std::vector<stats::SequenceLook> want = stats::t_mixture_sequence(contrasts);
  ASSERT_EQ(c.looks.size(), 12u);
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i].lower)) EXPECT_TRUE(std::isinf(c.looks[i].lower)) << i;
    else EXPECT_NEAR(c.looks[i].lower, want[i].lower, 1e-12) << i;
    if (!first && want[i].lower > 0) first = i + 1;
  }
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(c.settled_at, first);
  EXPECT_EQ(c.decision, stats::Decision::positive);
  EXPECT_GE(*first, 5u);  // nothing before the first bounded look
  EXPECT_TRUE(c.fixed_has_interval);
  const std::string text = render_sequences_text(seqs, {}, 0.95);
  EXPECT_NE(text.find(fmt::format("positive   settled at seed {} of 12", *first)), std::string::npos) << text;
  EXPECT_NE(text.find("not after optional stopping"), std::string::npos) << text;
  // The report's table: a row per look, settled from that look on.
  const db::Table table = sequences_table(seqs, {});
  ASSERT_EQ(table.rows.size(), 12u);
  EXPECT_EQ(std::get<int64_t>(table.rows[0][2]), 11);  // the first seed run
  EXPECT_TRUE(std::holds_alternative<std::monostate>(table.rows[0][5]));  // unbounded: empty
  EXPECT_EQ(std::get<std::string>(table.rows[*first - 1][8]), "positive");
  EXPECT_EQ(std::get<std::string>(table.rows[*first - 1][9]), "yes");
  EXPECT_EQ(std::get<std::string>(table.rows[*first - 2][9]), "no");
}

TEST(Sequences, BonferroniOverTheFixtureClaims) {
  fx::ScratchDir dir;
  db::ResultsDb db(dir.file("f.sqlite"), db::OpenMode::read_write_create);
  fx::write_fixture(db);
  const SweepData data = load_sweep(db, "fixture", false);
  AnalysisOptions ao;
  ao.analyse_params = false;
  const SweepAnalysis a = analyze_sweep(data, ao);
  const std::vector<ClaimSequence> seqs = claim_sequences(a, data.spec.seeds);
  ASSERT_EQ(seqs.size(), 4u);  // three deltas and the interaction
  for (const ClaimSequence& c : seqs) {
    EXPECT_DOUBLE_EQ(c.options.alpha, 0.0125);
    EXPECT_EQ(c.looks.size(), 3u);
    EXPECT_FALSE(c.looks.back().bounded());  // 3 seeds: the whole line
    EXPECT_EQ(c.decision, stats::Decision::undecided);
  }
  SequenceOptions bad;
  bad.alpha = 0.5;
  EXPECT_THROW(claim_sequences(a, data.spec.seeds, bad), ConfigError);
}

}  // namespace
}  // namespace egm::analysis
