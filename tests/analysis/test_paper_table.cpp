// The paper's main table is built once (build_paper_table) and every
// rendering reads that model: a value changed in the model shows in the CSV,
// Markdown, LaTeX and text forms alike. The headline a sweep ends with
// (render_headline) is egm analyze's main table, per grid point for a grid.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "analysis/grid_analysis.h"
#include "analysis/paper_table.h"
#include "analysis/render.h"
#include "analysis/tables.h"
#include "fixture.h"
#include "test_helpers.h"
#include "util/error.h"

namespace {

using namespace egm;
using namespace egm::analysis;
using egm::testing::ScratchDir;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class PaperTableTest : public ::testing::Test {
 protected:
  SweepAnalysis fixture() {
    db::ResultsDb db(dir_.file("r.sqlite"), db::OpenMode::read_write_create);
    egm::testing::write_fixture(db);
    AnalysisOptions o;
    o.analyse_params = false;
    return analyze_sweep(db, "fixture", o);
  }
  ScratchDir dir_;
};

TEST_F(PaperTableTest, RowsAreTheVariantsInSpecOrderThenTheInteraction) {
  const SweepAnalysis a = fixture();
  const PaperTable t = build_paper_table(a);
  ASSERT_EQ(t.rows.size(), 5u);
  EXPECT_EQ(t.rows[0].variant, "base");
  EXPECT_EQ(t.rows[0].note, "baseline");
  EXPECT_FALSE(t.rows[0].delta);
  EXPECT_EQ(t.rows[3].variant, "ega_mope");
  EXPECT_EQ(t.rows[3].n, 3u);
  EXPECT_NEAR(t.rows[3].mean.mean, 1.38, 1e-12);  // (1.37 + 1.39 + 1.38) / 3
  ASSERT_TRUE(t.rows[1].delta);
  EXPECT_NEAR(t.rows[1].delta->estimate, 1.50 - 1.42, 1e-12);  // base 1.50, ega (1.40 + 1.41 + 1.45) / 3
  const PaperRow* i = t.interaction();
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i, &t.rows[4]);
  EXPECT_NEAR(i->delta->estimate, 0.06, 1e-12);
  EXPECT_TRUE(t.published);
  ASSERT_TRUE(t.rows[0].published);
  EXPECT_EQ(t.factors.ab, "ega_mope");
  EXPECT_FALSE(t.verdict.empty());
  // The analysis's own entry points render this model.
  EXPECT_EQ(render_markdown_main(a), paper_markdown(t));
  EXPECT_EQ(render_latex_main(a), paper_latex(t));
  EXPECT_EQ(db::format_table(paper_table(a), db::Format::csv), db::format_table(paper_number_table(t), db::Format::csv));
}

TEST_F(PaperTableTest, EveryRendererReadsTheModel) {
  PaperTable t = build_paper_table(fixture());
  t.rows[2].published = 9.8765;        // mope
  t.rows[1].mean.mean = 7.25;          // ega
  t.rows[4].published_delta = -0.4321;  // the published interaction
  const std::string csv = db::format_table(paper_number_table(t), db::Format::csv);
  EXPECT_TRUE(contains(csv, "9.8765")) << csv;
  EXPECT_TRUE(contains(csv, "7.25")) << csv;
  EXPECT_TRUE(contains(csv, "-0.4321")) << csv;
  const std::string md = paper_markdown(t);
  EXPECT_TRUE(contains(md, "| 9.8765 |")) << md;
  EXPECT_TRUE(contains(md, "| ega | ")) << md;
  EXPECT_TRUE(contains(md, "7.2500 ± ")) << md;
  EXPECT_TRUE(contains(md, "| -0.4321 |")) << md;
  const std::string tex = paper_latex(t);
  EXPECT_TRUE(contains(tex, "& 9.8765 &")) << tex;
  EXPECT_TRUE(contains(tex, "$7.2500 \\pm")) << tex;
  EXPECT_TRUE(contains(tex, "$-0.4321$")) << tex;
  const std::string grid = db::format_table(paper_text_grid(t), db::Format::table);
  EXPECT_TRUE(contains(grid, "ega: 7.2500 ± ")) << grid;
  const std::string variants = db::format_table(paper_text_variants(t), db::Format::table);
  EXPECT_TRUE(contains(variants, "7.2500 ± ")) << variants;
  EXPECT_FALSE(contains(variants, "interaction")) << variants;
}

TEST_F(PaperTableTest, WithoutPublishedValuesOnTheMetricThereAreNoPublishedColumns) {
  PaperTable t = build_paper_table(fixture());
  t.published = false;
  EXPECT_FALSE(contains(paper_markdown(t), "published"));
  EXPECT_TRUE(contains(paper_latex(t), "\\begin{tabular}{lllll}"));
  EXPECT_EQ(paper_number_table(t).columns.size(), 17u);  // the CSV keeps its columns, empty
}

TEST_F(PaperTableTest, HeadlineIsTheMainTable) {
  db::ResultsDb db(dir_.file("h.sqlite"), db::OpenMode::read_write_create);
  egm::testing::write_fixture(db);
  AnalysisOptions o;
  o.analyse_params = false;
  const std::string headline = render_headline(db, "fixture");
  EXPECT_EQ(headline, render_main_table(analyze_sweep(db, "fixture", o)));
  EXPECT_TRUE(contains(headline, "verdict: superadditive")) << headline;
  EXPECT_FALSE(contains(headline, "Per variant")) << headline;  // the sections are egm analyze's, not the headline's
  EXPECT_THROW(render_headline(db, "no_such_sweep"), egm::ConfigError);
}

}  // namespace
