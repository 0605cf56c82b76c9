// A stored spec read back (spec::read_stored_spec), a spec with other seeds
// (with_seeds, spec_file_json), the expansion's order as a number (CellOrder)
// and egm merge's union rules (union_specs).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "spec/spec_union.h"
#include "util/error.h"

namespace {

using namespace egm::spec;
using nlohmann::json;

// A 2x2 factorial with a baseline, factors, published values and two grid
// axes written unsorted: every field the canonical form has. Ordered, so
// the file written keeps the axes' order.
nlohmann::ordered_json full_spec() {
  return nlohmann::ordered_json::parse(R"({
    "name": "full", "description": "every field", "preset": "tiny",
    "factorial": {"attention": ["standard", "ega"], "position": ["learned", "mope"]},
    "seeds": [5, 3], "steps": 4, "eval_interval": 2, "retries": 1,
    "baseline": "base", "factors": {"a": "ega", "b": "mope", "ab": "ega_mope", "base": "base"},
    "published": {"source": "the paper", "metric": "best_val", "values": {"base": 1.5, "ega": 1.4}},
    "data_parallel_by_variant": {"ega": 2},
    "grid": {"train.lr": [0.001, 0.003], "model.dropout": [0, 0.1]}
  })");
}

TEST(StoredSpec, ReadsBackWhatParseSpecStored) {
  const ExperimentSpec s = parse_spec(full_spec().dump());
  const ExperimentSpec r = read_stored_spec(s.canonical.dump(2));
  EXPECT_EQ(r.name, "full");
  EXPECT_EQ(r.description, "every field");
  EXPECT_EQ(r.preset, "tiny");
  EXPECT_EQ(r.variants, s.variants);
  ASSERT_TRUE(r.factorial);
  EXPECT_EQ(r.factorial->attention, (std::vector<std::string>{"standard", "ega"}));
  EXPECT_EQ(r.seeds, (std::vector<uint64_t>{5, 3}));  // run order, not sorted
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(r.retries, 1);
  EXPECT_EQ(r.ranks_for("ega"), 2);
  EXPECT_EQ(r.baseline, "base");
  ASSERT_TRUE(r.factors);
  EXPECT_EQ(r.factors->ab, "ega_mope");
  ASSERT_TRUE(r.published);
  EXPECT_EQ(r.published->metric, "best_val");
  EXPECT_EQ(r.published->values.at("ega"), 1.4);
  ASSERT_EQ(r.grid.size(), 2u);  // the spec's order, from "grid_order"
  EXPECT_EQ(r.grid[0].path, "train.lr");
  EXPECT_EQ(r.grid[1].path, "model.dropout");
  EXPECT_EQ(r.hash, s.hash);
  EXPECT_EQ(r.canonical, s.canonical);
}

// What an older egm stored: no grid, device, runs_per_gpu or
// data_parallel_by_variant; an absent optional written as null; a device this
// build does not know; a variant it does not know.
TEST(StoredSpec, ToleratesWhatOlderSchemasStored) {
  const json old = {{"name", "old"},        {"preset", "small"},    {"variants", {"base", "retired_variant"}},
                    {"seeds", {0, 1, 2}},   {"retries", 2},         {"data_parallel", 1},
                    {"baseline", nullptr},  {"device", "tpu"},      {"overrides", json::object()}};
  const ExperimentSpec r = read_stored_spec(old.dump());
  EXPECT_EQ(r.variants, (std::vector<std::string>{"base", "retired_variant"}));
  EXPECT_EQ(r.seeds.size(), 3u);
  EXPECT_FALSE(r.baseline);
  EXPECT_FALSE(r.device);
  EXPECT_TRUE(r.grid.empty());
  EXPECT_EQ(r.runs_per_gpu, 1);
  EXPECT_EQ(read_stored_spec(R"({"variants": ["base"]})").preset, "paper");  // nothing else: the defaults
}

TEST(StoredSpec, RefusesWhatIsNotASpecInOneLine) {
  auto message = [](const std::string& text) -> std::string {
    try {
      read_stored_spec(text);
    } catch (const egm::ConfigError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(message("{").find("the sweep's stored spec is not valid JSON"), std::string::npos) << message("{");
  EXPECT_EQ(message("[1]"), "the sweep's stored spec is not a JSON object");
  EXPECT_NE(message(R"({"variants": [1]})").find("unexpected shape"), std::string::npos);
  EXPECT_NE(message(R"({"factors": {"a": "ega"}})").find("unexpected shape"), std::string::npos);
  EXPECT_NE(message(R"({"seeds": "0"})").find("unexpected shape"), std::string::npos);
}

// with_seeds changes the seeds and the identity as parse_spec would; the file
// spec_file_json writes parses back to the same spec (a factorial, unsorted
// grid axes and "until" included).
TEST(StoredSpec, WithSeedsAndItsFileAreTheSpecParsedWithThoseSeeds) {
  const ExperimentSpec s = parse_spec(full_spec().dump(), "full.json");
  const ExperimentSpec more = with_seeds(s, {5, 3, 6});
  nlohmann::ordered_json edited = full_spec();
  edited["seeds"] = {5, 3, 6};
  EXPECT_EQ(more.hash, parse_spec(edited.dump()).hash);
  EXPECT_NE(more.hash, s.hash);
  EXPECT_EQ(more.source, "full.json");

  const ExperimentSpec back = parse_spec(spec_file_json(more).dump(2));
  EXPECT_EQ(back.hash, more.hash);
  EXPECT_EQ(back.grid[0].path, "train.lr");

  json until = json::parse(R"({"name": "u", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1],
                               "until": {"claims": ["ega"], "max_seeds": 8, "alpha": 0.1}})");
  const ExperimentSpec u = parse_spec(spec_file_json(with_seeds(parse_spec(until.dump()), {0, 1, 2})).dump());
  ASSERT_TRUE(u.until);
  EXPECT_EQ(u.until->max_seeds, 8);
  EXPECT_EQ(u.until->alpha, 0.1);
  EXPECT_EQ(u.seeds, (std::vector<uint64_t>{0, 1, 2}));
}

// CellOrder's number is each cell's index in expand(), so egm merge's order
// is the coordinator's.
TEST(CellOrder, IsTheExpansionsOrder) {
  const ExperimentSpec s = parse_spec(full_spec().dump());
  const std::vector<Cell> cells = expand(s);
  const CellOrder order(s);
  for (size_t i = 0; i < cells.size(); ++i)
    EXPECT_EQ(order.position(cells[i].point ? cells[i].point->index : 0, cells[i].variant, cells[i].seed),
              static_cast<int64_t>(i))
        << cells[i].key;
  EXPECT_FALSE(order.position(0, "rope", 5));
  EXPECT_FALSE(order.position(0, "base", 4));
}

TEST(SpecUnion, SeedsAndVariantsUnionAndWhatNamesVariantsMayBeAbsent) {
  json a = {{"name", "x"}, {"seeds", {0, 1}}, {"variants", {"base", "ega"}}, {"baseline", "base"},
            {"published", {{"source", "p"}, {"values", {{"base", 1.5}}}}}};
  const json b = {{"name", "x"}, {"seeds", {1, 2}}, {"variants", {"mope"}},
                  {"published", {{"source", "p"}, {"values", {{"mope", 1.6}}}}}};
  EXPECT_EQ(union_specs(a, b), std::nullopt);
  EXPECT_EQ(a.at("seeds"), json({0, 1, 2}));
  EXPECT_EQ(a.at("variants"), json({"base", "ega", "mope"}));
  EXPECT_EQ(a.at("baseline"), "base");
  EXPECT_EQ(a.at("published").at("values"), json({{"base", 1.5}, {"mope", 1.6}}));

  json c = {{"name", "x"}, {"preset", "tiny"}, {"seeds", {0}}};
  EXPECT_EQ(union_specs(c, json{{"name", "x"}, {"preset", "small"}, {"seeds", {0}}}),
            R"($.preset ("tiny" vs "small"))");
  json d = {{"name", "x"}};
  EXPECT_EQ(union_specs(d, json{{"name", "x"}, {"steps", 4}}), "$.steps (in one, not the other)");
}

}  // namespace
