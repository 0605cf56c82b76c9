// Experiment specs: parse errors, schema violations and meaning checks, each
// reported with its JSON path; expansion; the shipped experiments; and the
// coordinator's entry point leaving the database alone when the spec is bad.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "config/run_config.h"
#include "config/variants.h"
#include "db/results_db.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "spec/sweep_setup.h"
#include "../db/test_helpers.h"
#include "spec_test_helpers.h"
#include "util/files.h"

namespace {

using namespace egm::spec;
using namespace egm::testing;  // ScratchDir, FileSnapshot, at
using nlohmann::json;

// A valid minimal spec, to which each test adds one mistake.
json minimal() {
  return json{{"name", "t"}, {"preset", "tiny"}, {"variants", {"base", "ega"}}, {"seeds", {0, 1}}};
}

std::vector<Problem> problems_of(const std::string& text) {
  try {
    parse_spec(text, "test.json");
  } catch (const SpecError& e) {
    return e.problems();
  }
  ADD_FAILURE() << "spec was accepted: " << text;
  return {};
}
std::vector<Problem> problems_of(const json& j) { return problems_of(j.dump(2)); }

bool mentions(const Problem& p, const std::string& text) { return p.message.find(text) != std::string::npos; }

// ---- stage 1: JSON ----------------------------------------------------------------

TEST(SpecJson, SyntaxErrorGivesFileLineAndColumn) {
  // Line 3 is `  "seeds": [0,, 1]`; its second comma is character 15 (counted by hand).
  const std::string text = "{\n  \"name\": \"t\",\n  \"seeds\": [0,, 1]\n}\n";
  try {
    parse_spec(text, "experiments/broken.json");
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].line, 3);
    EXPECT_EQ(e.problems()[0].column, 15);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("experiments/broken.json:3:15: invalid JSON: ", 0), 0u) << what;
  }
}

TEST(SpecJson, MissingFileIsAnIoErrorNamingIt) {
  try {
    load_spec("/nonexistent/egm/spec.json");
    FAIL() << "accepted";
  } catch (const egm::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/egm/spec.json"), std::string::npos);
  }
}

TEST(SpecJson, KeyGivenTwiceIsReported) {
  const auto p = problems_of(std::string(R"({"name": "t", "variants": ["base"], "seeds": [0], "seeds": [1]})"));
  EXPECT_TRUE(mentions(at(p, "$.seeds"), "twice"));
  const auto q = problems_of(std::string(
      R"({"name": "t", "variants": ["base"], "seeds": [0], "overrides": {"model": {"n_layer": 2, "n_layer": 3}}})"));
  EXPECT_TRUE(mentions(at(q, "$.overrides.model.n_layer"), "twice"));
}

// Inputs that crashed `egm sweep` with SIGSEGV before any message (a stack
// overflow in dump() after parsing 100000 nested arrays; std::regex, through
// valijson's "pattern" on the name, recursing once per character): each is now
// refused by the bounded reader as one problem, on one line, naming the path.
TEST(SpecJson, HostileDocumentsAreRefusedInOneLineWithTheirPath) {
  const std::string head = R"({"name": "t", "variants": ["base"], "seeds": [0], )";
  struct Case {
    std::string text;
    std::string path;  // the problem's path starts with this
    std::string says;
  };
  const std::vector<Case> cases = {
      {std::string(100000, '[') + std::string(100000, ']'), "$[0][0]", "deeper than 32 levels"},
      {std::string(100000, '['), "$[0][0]", "deeper than 32 levels"},
      {head + R"("overrides": {"model": )" + std::string(5000, '[') + std::string(5000, ']') + "}}",
       "$.overrides.model[0]", "deeper than 32 levels"},
      {R"({"seeds": [0], "variants": ["base"], "name": ")" + std::string(50000, 'a') + "\"}", "$.name",
       "string of 50000 bytes is longer than 8192 bytes"},
      {head + R"("description": ")" + std::string(100000, 'x') + "\"}", "$.description", "longer than 8192 bytes"},
      {head + R"("overrides": {"model": {"d_model": 1e400}}})", "$.overrides.model.d_model", "1e400 is out of range"},
      {head + R"("overrides": {"train": {"lr": -1e300}}})", "$.overrides.train.lr", "-1e300 is out of range"},
      {head + R"("steps": 123456789012345678901234567890})", "$.steps", "out of range"},
      {head + R"("description": ")" + std::string(20u << 20, ' ') + "\"}", "$", "longer than 1048576 bytes"},
  };
  for (const Case& c : cases) {
    try {
      parse_spec(c.text, "hostile.json");
      ADD_FAILURE() << "accepted: " << c.text.substr(0, 80);
    } catch (const SpecError& e) {
      const std::string what = e.what();
      ASSERT_EQ(e.problems().size(), 1u) << what.substr(0, 300);
      EXPECT_EQ(e.problems()[0].path.rfind(c.path, 0), 0u) << e.problems()[0].path;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what.substr(0, 300);
      EXPECT_EQ(what.rfind("hostile.json:1:", 0), 0u) << what.substr(0, 300);
      EXPECT_NE(what.find(c.path), std::string::npos) << what.substr(0, 300);
      EXPECT_NE(what.find(c.says), std::string::npos) << what.substr(0, 300);
      EXPECT_LT(what.size(), 400u);
    }
  }
}

// Just under the string limit, valijson still matches the name's pattern with
// std::regex: 8192 characters must stay inside the stack (the limit's reason).
TEST(SpecJson, NameAtTheStringLimitIsASchemaProblemNotACrash) {
  json j = minimal();
  j["name"] = std::string(8192, 'a');
  EXPECT_TRUE(mentions(at(problems_of(j), "$.name"), "100"));
}

// ---- stage 2: schema --------------------------------------------------------------

TEST(SpecSchema, UnknownKeysAreReportedWithPathAndValidKeys) {
  json j = minimal();
  j["overrides"] = {{"model", {{"n_layr", 3}}}};
  j["seed"] = 3;
  const auto p = problems_of(j);
  const Problem nested = at(p, "$.overrides.model.n_layr");
  EXPECT_TRUE(mentions(nested, "unknown key"));
  EXPECT_TRUE(mentions(nested, "n_layer"));
  EXPECT_TRUE(mentions(at(p, "$.seed"), "unknown key"));  // both problems, not just the first
}

TEST(SpecSchema, WrongTypesNameExpectedAndActual) {
  json j = minimal();
  j["seeds"] = {0, "one"};
  j["steps"] = "100";
  j["overrides"] = {{"train", {{"lr", "fast"}}}};
  const auto p = problems_of(j);
  const Problem seed = at(p, "$.seeds[1]");
  EXPECT_TRUE(mentions(seed, "expected integer")) << seed.message;
  EXPECT_TRUE(mentions(seed, "string")) << seed.message;
  EXPECT_TRUE(mentions(at(p, "$.steps"), "expected integer"));
  EXPECT_TRUE(mentions(at(p, "$.overrides.train.lr"), "expected number"));
}

TEST(SpecSchema, SeedsMustBeANonEmptyListOfUniqueNonNegativeIntegers) {
  json j = minimal();
  j["seeds"] = json::array();
  EXPECT_TRUE(mentions(at(problems_of(j), "$.seeds"), "must not be empty"));
  j["seeds"] = {0, 1, 0};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.seeds[2]"), "duplicate of item [0]"));
  j["seeds"] = {-1};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.seeds[0]"), ">= 0"));
  // Past int64 (the validator would call it negative): refused for what it is.
  j["seeds"] = {0, 18446744073709551615ULL};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.seeds[1]"), "must be <= 9007199254740991"));
  j["seeds"] = {9007199254740991LL};  // 2^53 - 1, the schema's maximum
  EXPECT_NO_THROW(parse_spec(j.dump()));
  j.erase("seeds");
  EXPECT_TRUE(mentions(at(problems_of(j), "$.seeds"), "required"));
}

// The schema's "uniqueItems" arrays are checked by sorting, not by valijson's
// pairwise loop: each item equal to an earlier one is one problem naming the first.
TEST(SpecSchema, EveryDuplicateIsNamedOnceWithTheItemItRepeats) {
  json j = minimal();
  j["seeds"] = {5, 7, 5, 9, 7, 5};
  const auto p = problems_of(j);
  EXPECT_TRUE(mentions(at(p, "$.seeds[2]"), "duplicate of item [0] (number 5)"));
  EXPECT_TRUE(mentions(at(p, "$.seeds[4]"), "duplicate of item [1] (number 7)"));
  EXPECT_TRUE(mentions(at(p, "$.seeds[5]"), "duplicate of item [0] (number 5)"));
  EXPECT_EQ(std::count_if(p.begin(), p.end(), [](const Problem& q) { return mentions(q, "duplicate"); }), 3);
}

TEST(SpecSchema, UniqueItemsIsCheckedWhereverTheSchemaAsksForIt) {
  json j = minimal();
  j["variants"] = {"base", "ega", "base"};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.variants[2]"), "duplicate of item [0]"));
  j = minimal();
  j.erase("variants");
  j["factorial"] = {{"attention", {"standard", "ega"}}, {"position", {"learned", "mope", "learned"}}};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.factorial.position[2]"), "duplicate of item [0]"));
  j = minimal();
  j["grid"] = {{"train.lr", {0.001, 0.003, 0.001}}};  // under additionalProperties
  EXPECT_TRUE(mentions(at(problems_of(j), "$.grid[\"train.lr\"][2]"), "duplicate of item [0]"));
}

// A large seed list (near the 1 MiB spec limit) with one repeat at its end: found, and
// named once (valijson's pairwise check made that 7 x 10^9 comparisons, minutes).
TEST(SpecSchema, ALargeSeedListIsCheckedForDuplicates) {
  json j = minimal();
  json seeds = json::array();
  for (int s = 0; s < 120000; ++s) seeds.push_back(s);
  seeds.push_back(98765);
  j["seeds"] = seeds;
  const auto p = problems_of(j.dump());
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].path, "$.seeds[120000]");
  EXPECT_TRUE(mentions(p[0], "duplicate of item [98765]")) << p[0].message;
}

TEST(SpecSchema, RangesEnumsAndNames) {
  json j = minimal();
  j["retries"] = -1;
  j["preset"] = "huge";
  j["name"] = "my sweep";
  j["data_parallel"] = 0;
  const auto p = problems_of(j);
  EXPECT_TRUE(mentions(at(p, "$.retries"), ">= 0"));
  EXPECT_TRUE(mentions(at(p, "$.preset"), "\"tiny\""));
  EXPECT_TRUE(mentions(at(p, "$.name"), "must match"));
  EXPECT_TRUE(mentions(at(p, "$.data_parallel"), ">= 1"));
}

TEST(SpecSchema, OverrideKeysMatchTheRunConfig) {
  // The schema lists every ModelConfig / TrainConfig key except the two the
  // sweep sets per cell; a field added to the config must be added here too.
  const json config = egm::to_json(egm::preset_config("paper"), /*every_field=*/true);
  const json& defs = experiment_schema()["definitions"];
  std::set<std::string> model, train, schema_model, schema_train;
  for (const auto& [k, v] : config["model"].items())
    if (k != "variant") model.insert(k);
  for (const auto& [k, v] : config["train"].items())
    if (k != "seed") train.insert(k);
  for (const auto& [k, v] : defs["model_overrides"]["properties"].items()) schema_model.insert(k);
  for (const auto& [k, v] : defs["train_overrides"]["properties"].items()) schema_train.insert(k);
  EXPECT_EQ(schema_model, model);
  EXPECT_EQ(schema_train, train);
}

// ---- stage 3: meaning ---------------------------------------------------------------

TEST(SpecMeaning, UnknownVariantIsReportedAtItsIndex) {
  json j = minimal();
  j["variants"] = {"base", "egaa", "mope"};
  const Problem p = at(problems_of(j), "$.variants[1]");
  EXPECT_TRUE(mentions(p, "unknown variant 'egaa'"));
}

TEST(SpecMeaning, ImpossibleSizesPointAtTheOverride) {
  json j = minimal();
  j["overrides"] = {{"model", {{"d_model", 30}, {"n_head", 4}}}};
  const Problem p = at(problems_of(j), "$.overrides.model.d_model");
  EXPECT_TRUE(mentions(p, "divisible")) << p.message;
  j["overrides"] = json::object();
  j["steps"] = 0;  // caught by the schema
  EXPECT_TRUE(mentions(at(problems_of(j), "$.steps"), ">= 1"));
  j.erase("steps");
  j["overrides"] = {{"train", {{"warmup_steps", -5}}}};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.overrides.train.warmup_steps"), ">= 0"));
  j["overrides"] = json::object();
  j["data_parallel"] = 3;  // tiny batch 8 over 3 ranks
  EXPECT_TRUE(mentions(at(problems_of(j), "$.data_parallel"), "divisible"));
}

TEST(SpecMeaning, VariantsXorFactorialAndShorthandConflicts) {
  json j = minimal();
  j["factorial"] = {{"attention", {"standard"}}, {"position", {"learned"}}};
  EXPECT_TRUE(mentions(at(problems_of(j), "$"), "not both"));
  j.erase("factorial");
  j.erase("variants");
  EXPECT_TRUE(mentions(at(problems_of(j), "$"), "missing"));
  j = minimal();
  j["steps"] = 100;
  j["overrides"] = {{"train", {{"max_steps", 200}}}};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.steps"), "give one"));
  j = minimal();
  j.erase("variants");
  j["factorial"] = {{"attention", {"standard", "egaa"}}, {"position", {"learned"}}};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.factorial.attention[1]"), "unknown attention"));
}

TEST(SpecMeaning, NamesMustBeVariantsOfTheSweep) {
  json j = minimal();
  j["baseline"] = "mope";
  j["published"] = {{"source", "paper"}, {"values", {{"base", 1.4742}, {"sincos", 1.5863}}}};
  const auto p = problems_of(j);
  EXPECT_TRUE(mentions(at(p, "$.baseline"), "not a variant of this sweep"));
  EXPECT_TRUE(mentions(at(p, "$.published.values.sincos"), "not a variant"));
  // A key that is not an identifier is quoted in the path.
  j.erase("baseline");
  j["published"]["values"] = {{"ega+rope", 1.0}};
  EXPECT_TRUE(mentions(at(problems_of(j), "$.published.values[\"ega+rope\"]"), "not a variant"));
}

TEST(SpecMeaning, FactorsMustFormATwoByTwo) {
  json j = minimal();
  j["variants"] = {"base", "ega", "mope", "ega_mope"};
  j["factors"] = {{"a", "ega"}, {"b", "mope"}, {"ab", "ega_mope"}, {"base", "base"}};
  EXPECT_NO_THROW(parse_spec(j.dump()));
  j["factors"]["ab"] = "mope";
  j["factors"]["b"] = "ega_mope";
  EXPECT_TRUE(mentions(at(problems_of(j), "$.factors"), "2x2"));
  j["factors"]["b"] = "nope";
  EXPECT_TRUE(mentions(at(problems_of(j), "$.factors.b"), "not a variant"));
}

// ---- expansion ------------------------------------------------------------------------

TEST(SpecExpand, FactorialNamesUseNamedVariants) {
  EXPECT_EQ(factorial_variant_name("standard", "learned"), "base");
  EXPECT_EQ(factorial_variant_name("ega", "mope"), "ega_mope");
  EXPECT_EQ(factorial_variant_name("ega", "learned"), "ega");
  EXPECT_EQ(factorial_variant_name("standard", "none"), "nope");

  // A pair no option-free named variant has is called ATTENTION+POSITION. The
  // variant table grows, so find such a pair in it rather than hard-coding one.
  std::string att, pos;
  for (const auto& a : egm::attention_kinds())
    for (const auto& p : egm::position_kinds()) {
      const bool named = std::any_of(egm::named_variants().begin(), egm::named_variants().end(), [&](const auto& v) {
        return v.attention == a && v.position == p && v.options.empty();
      });
      if (!named && att.empty()) att = a, pos = p;
    }
  ASSERT_FALSE(att.empty()) << "every attention x position pair has a name";
  EXPECT_EQ(factorial_variant_name(att, pos), att + "+" + pos);

  json j = minimal();
  j.erase("variants");
  j["factorial"] = {{"attention", {"standard", "ega"}}, {"position", {"learned", "mope"}}};
  const ExperimentSpec s = parse_spec(j.dump());
  const std::vector<std::string> expected = {"base", "mope", "ega", "ega_mope"};  // attention-major
  EXPECT_EQ(s.variants, expected);
  EXPECT_EQ(*s.baseline, "base");  // the default when the sweep has base
  j["factorial"] = {{"attention", {att}}, {"position", {pos}}};
  EXPECT_EQ(parse_spec(j.dump()).variants, std::vector<std::string>{att + "+" + pos});
}

TEST(SpecExpand, CellsInStableOrderWithTheirConfigs) {
  json j = minimal();
  j["variants"] = {"ega", "base"};
  j["seeds"] = {7, 3};
  j["steps"] = 40;
  j["eval_interval"] = 10;
  j["retries"] = 0;
  j["overrides"] = {{"model", {{"dropout", 0.0}}}, {"train", {{"lr", 0.001}}}};
  const ExperimentSpec s = parse_spec(j.dump());
  EXPECT_EQ(s.max_attempts(), 1);
  const auto cells = expand(s);
  ASSERT_EQ(cells.size(), 4u);
  const std::vector<std::string> keys = {"ega-s7", "ega-s3", "base-s7", "base-s3"};
  const egm::RunConfig tiny = egm::preset_config("tiny");
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(cells[i].key, keys[i]);
    EXPECT_EQ(cells[i].config.model.variant, cells[i].variant);
    EXPECT_EQ(cells[i].config.train.seed, cells[i].seed);
    EXPECT_EQ(cells[i].config.train.max_steps, 40);
    EXPECT_EQ(cells[i].config.train.eval_interval, 10);
    EXPECT_EQ(cells[i].config.train.lr, 0.001);
    EXPECT_EQ(cells[i].config.model.dropout, 0.0);
    EXPECT_EQ(cells[i].config.model.n_layer, tiny.model.n_layer);  // from the preset
    EXPECT_EQ(cells[i].config_hash, egm::config_hash(cells[i].config));
  }
  EXPECT_NE(cells[0].config_hash, cells[1].config_hash);
  const auto inputs = to_cell_inputs(s, cells);
  EXPECT_EQ(inputs[2].key, "base-s7");
  EXPECT_EQ(inputs[2].max_steps, 40);
  EXPECT_EQ(inputs[2].max_attempts, 1);
  EXPECT_EQ(egm::run_config_from_json(json::parse(inputs[2].config_json)).model.variant, "base");
}

TEST(SpecHash, CanonicalContentNotFormatting) {
  const std::string a = R"({"name": "t", "preset": "tiny", "variants": ["base"], "seeds": [0, 1]})";
  const std::string b = "{\n  \"seeds\": [0,1],\n  \"variants\": [\"base\"],\n  \"retries\": 2,\n"
                        "  \"preset\": \"tiny\", \"name\": \"t\"\n}";
  const std::string c = R"({"name": "t", "preset": "tiny", "variants": ["base"], "seeds": [0, 2]})";
  EXPECT_EQ(parse_spec(a).hash, parse_spec(b).hash);  // key order, spacing, an explicit default
  EXPECT_NE(parse_spec(a).hash, parse_spec(c).hash);
  EXPECT_EQ(parse_spec(a).hash.size(), 64u);
}

// ---- the shipped experiments --------------------------------------------------------

ExperimentSpec shipped(const std::string& name) {
  return load_spec(std::string(EGM_SOURCE_DIR) + "/experiments/" + name);
}

// "until" (a sequential sweep): read as written, checked by the schema, and
// left out of the hash (it says how the sweep runs, not what its cells are).
TEST(SpecUntil, ReadCheckedAndNotHashed) {
  json with = minimal();
  with["until"] = {{"claims", {"ega"}}, {"max_seeds", 8}, {"batch", 2}, {"alpha", 0.1}};
  const ExperimentSpec s = parse_spec(with.dump());
  ASSERT_TRUE(s.until.has_value());
  EXPECT_EQ(s.until->claims, std::vector<std::string>{"ega"});
  EXPECT_EQ(s.until->max_seeds, 8);
  EXPECT_EQ(s.until->batch, 2);
  EXPECT_EQ(s.until->alpha, 0.1);
  EXPECT_FALSE(s.until->half_width.has_value());
  EXPECT_EQ(s.hash, parse_spec(minimal().dump()).hash);
  EXPECT_FALSE(s.canonical.contains("until"));
  with["until"]["claims"] = "ega";  // one claim as a string
  EXPECT_EQ(parse_spec(with.dump()).until->claims, std::vector<std::string>{"ega"});

  auto problem = [](json until) {
    json spec = minimal();
    spec["until"] = std::move(until);
    const std::vector<Problem> p = problems_of(spec.dump());
    return p.empty() ? std::string() : p[0].path + ": " + p[0].message;
  };
  EXPECT_EQ(problem({{"claims", {"ega"}}}).rfind("$.until.max_seeds", 0), 0u) << problem({{"claims", {"ega"}}});
  EXPECT_EQ(problem({{"claims", {"ega"}}, {"max_seeds", 0}}).rfind("$.until.max_seeds: must be >= 1", 0), 0u);
  EXPECT_EQ(problem({{"claims", json::array()}, {"max_seeds", 4}}).rfind("$.until.claims", 0), 0u);
  EXPECT_EQ(problem({{"claims", {"ega"}}, {"max_seeds", 4}, {"seeds", 3}}).rfind("$.until.seeds", 0), 0u);
}

TEST(ShippedExperiments, AllValidateAndExpand) {
  namespace fs = std::filesystem;
  int n = 0;
  // experiments/findings/ too: the specs results/FINDINGS.md was measured with.
  for (const auto& entry : fs::recursive_directory_iterator(std::string(EGM_SOURCE_DIR) + "/experiments")) {
    if (entry.path().extension() != ".json") continue;
    if (entry.path().filename() == "paper_claims.json") continue;  // egm paper's claims, not a spec
    ++n;
    EXPECT_NO_THROW({
      const ExperimentSpec s = load_spec(entry.path().string());
      EXPECT_EQ(expand(s).size(), s.variants.size() * s.seeds.size() * s.points().size());
    }) << entry.path();
  }
  EXPECT_GE(n, 10);
}

TEST(ShippedExperiments, MatchThePaper) {
  // Published values: SPEC.md section 4 (val loss at step 5000).
  const ExperimentSpec tiny = shipped("tiny.json");
  EXPECT_EQ(tiny.preset, "tiny");
  EXPECT_EQ(tiny.variants, (std::vector<std::string>{"base", "ega", "mope", "ega_mope"}));
  EXPECT_EQ(tiny.seeds, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(tiny.retries, 1);
  EXPECT_EQ(tiny.published->values.at("ega_mope"), 1.3550);

  const ExperimentSpec p22 = shipped("paper_2x2.json");
  EXPECT_EQ(p22.preset, "paper");
  EXPECT_EQ(p22.seeds.size(), 5u);
  EXPECT_EQ(std::set<std::string>(p22.variants.begin(), p22.variants.end()),
            (std::set<std::string>{"base", "ega", "mope", "ega_mope"}));
  const auto cells = expand(p22);
  EXPECT_EQ(cells.size(), 20u);
  EXPECT_EQ(cells[0].config.train.max_steps, 5000);
  EXPECT_EQ(cells[0].config.train.eval_interval, 500);
  EXPECT_EQ(cells[0].config.model.d_model, 256);
  const auto& v = p22.published->values;
  EXPECT_EQ(v.at("base"), 1.4742);
  EXPECT_EQ(v.at("ega"), 1.3821);
  EXPECT_EQ(v.at("mope"), 1.5060);
  EXPECT_EQ(v.at("ega_mope"), 1.3550);
  // The published interaction: delta(ega_mope) - delta(ega) - delta(mope) = +0.059.
  const double d_ab = v.at("base") - v.at("ega_mope"), d_a = v.at("base") - v.at("ega"),
               d_b = v.at("base") - v.at("mope");
  EXPECT_NEAR(d_ab - d_a - d_b, 0.059, 0.0005);
  EXPECT_EQ(p22.factors->ab, "ega_mope");

  const ExperimentSpec pe = shipped("paper_pe.json");
  EXPECT_EQ(pe.variants, (std::vector<std::string>{"base", "mope", "sincos", "rope"}));
  EXPECT_EQ(pe.published->values.at("sincos"), 1.5863);
  EXPECT_EQ(pe.published->values.at("rope"), 1.4637);
  EXPECT_EQ(expand(pe).size(), 20u);
}

TEST(ShippedExperiments, AblationTablesMatchThePaper) {
  // SPEC.md section 4 (published values) and section 5 (ablation definitions).
  const ExperimentSpec conv = shipped("paper_conv.json");
  EXPECT_EQ(conv.variants, (std::vector<std::string>{"base", "conv_l4", "conv_l8", "conv_l16"}));
  EXPECT_EQ(conv.published->values.at("conv_l4"), 1.4668);
  EXPECT_EQ(conv.published->values.at("conv_l8"), 1.4691);
  for (const auto& cell : expand(conv))
    if (cell.variant != "base") {
      EXPECT_EQ(egm::resolve_variant(cell.config.model.variant).attention, "conv") << cell.variant;
      EXPECT_GT(cell.config.model.conv_max_lag, 0) << cell.variant;
    }

  const ExperimentSpec priors = shipped("paper_priors.json");
  const auto& pv = priors.published->values;
  EXPECT_EQ(pv.at("ega2"), 1.3950);
  EXPECT_EQ(pv.at("ega4"), 1.4088);
  EXPECT_EQ(pv.at("ega_morlet"), 1.4733);
  EXPECT_EQ(pv.at("ega_db2"), 1.4692);
  EXPECT_EQ(pv.at("ega_db4"), 1.4748);

  const ExperimentSpec mq = shipped("paper_mq.json");
  EXPECT_EQ(mq.baseline, std::optional<std::string>("ega"));  // the paper's reference for these
  EXPECT_EQ(std::set<std::string>(mq.variants.begin(), mq.variants.end()),
            (std::set<std::string>{"base", "ega", "mq_e", "mq_ep", "mq_ef", "mq_epf"}));

  EXPECT_EQ(shipped("paper_scale_init.json").variants, (std::vector<std::string>{"base", "scale_init"}));

  // The 2x2 with a causal gate: every cell's attention is standard or causal EGA.
  const ExperimentSpec causal = shipped("paper_2x2_causal.json");
  EXPECT_EQ(causal.factors->a, "ega_causal");
  EXPECT_EQ(causal.factors->ab, "ega_causal_mope");
  const auto cells = expand(causal);
  EXPECT_EQ(cells.size(), 20u);
  for (const auto& cell : cells) {
    const std::string attention = egm::resolve_variant(cell.config.model.variant).attention;
    EXPECT_TRUE(attention == "standard" || attention == "ega_causal") << cell.variant;
    EXPECT_EQ(cell.config.train.max_steps, 5000);
  }

  // Controls: 3 attentions x 5 positions, named after the shipped variants.
  const ExperimentSpec controls = shipped("paper_position_controls.json");
  EXPECT_EQ(controls.variants.size(), 15u);
  for (const char* v : {"nope", "alibi", "rope_only", "ega_nope", "ega_alibi", "ega_rope_only", "ega_causal_nope",
                        "ega_causal_alibi", "ega_causal_rope_only", "ega_causal_mope"})
    EXPECT_NE(std::find(controls.variants.begin(), controls.variants.end(), v), controls.variants.end()) << v;
}

// ---- the coordinator's entry point ----------------------------------------------------

TEST(OpenSweep, BadSpecLeavesTheDatabaseUntouched) {
  ScratchDir dir;
  const std::string db_path = dir.file("results.sqlite");
  const std::string good = dir.file("good.json");
  egm::atomic_write_file(good, minimal().dump());
  { auto setup = open_sweep(good, db_path, egm::db::ChangedSpec::refuse); }
  const FileSnapshot before = FileSnapshot::of(db_path);
  ASSERT_TRUE(before.exists);

  const std::string bad = dir.file("bad.json");
  json j = minimal();
  j["seeds"] = {0, 0};
  egm::atomic_write_file(bad, j.dump());
  EXPECT_THROW(open_sweep(bad, db_path, egm::db::ChangedSpec::refuse), SpecError);
  egm::atomic_write_file(bad, "{ not json");
  EXPECT_THROW(open_sweep(bad, db_path, egm::db::ChangedSpec::refuse), SpecError);
  EXPECT_TRUE(FileSnapshot::of(db_path).same_as(before));

  // Nor is a database created for a bad spec.
  const std::string fresh = dir.file("sub/never.sqlite");
  EXPECT_THROW(open_sweep(bad, fresh, egm::db::ChangedSpec::refuse), SpecError);
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_FALSE(std::filesystem::exists(dir.file("sub")));
}

TEST(OpenSweep, CreatesLoadsRefusesAndSupersedes) {
  ScratchDir dir;
  const std::string db_path = dir.file("runs/egm.sqlite");
  const std::string spec_path = dir.file("s.json");
  egm::atomic_write_file(spec_path, minimal().dump());
  std::vector<int64_t> ids;
  {
    auto setup = open_sweep(spec_path, db_path, egm::db::ChangedSpec::refuse);
    EXPECT_TRUE(setup.sweep.created);
    ASSERT_EQ(setup.cell_ids.size(), 4u);
    ASSERT_EQ(setup.cells.size(), 4u);
    ids = setup.cell_ids;
    const auto rows = setup.db.list_cells();
    EXPECT_EQ(rows[3].key, setup.cells[3].key);
    EXPECT_EQ(rows[3].config_hash, setup.cells[3].config_hash);
    EXPECT_EQ(setup.db.sweep(setup.sweep.sweep.id).spec_hash, setup.spec.hash);
  }
  {
    auto again = open_sweep(spec_path, db_path, egm::db::ChangedSpec::refuse);
    EXPECT_FALSE(again.sweep.created);
    EXPECT_EQ(again.cell_ids, ids);
  }
  json changed = minimal();
  changed["seeds"] = {0, 1, 2};
  egm::atomic_write_file(spec_path, changed.dump());
  const FileSnapshot before = FileSnapshot::of(db_path);
  try {
    open_sweep(spec_path, db_path, egm::db::ChangedSpec::refuse);
    FAIL() << "changed spec accepted";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--new-sweep"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--extend"), std::string::npos);
  }
  EXPECT_TRUE(FileSnapshot::of(db_path).same_as(before));
  auto fresh = open_sweep(spec_path, db_path, egm::db::ChangedSpec::new_sweep);
  EXPECT_TRUE(fresh.sweep.created);
  EXPECT_EQ(fresh.cell_ids.size(), 6u);
  EXPECT_EQ(*fresh.sweep.superseded_as, "t@1");
}

// --extend: a spec that only adds cells is taken by the existing sweep, which
// keeps its cells (ids, status, runs); one that drops or changes a cell is
// refused with nothing written.
TEST(OpenSweep, ExtendKeepsTheCellsAndRefusesDroppedOrChangedOnes) {
  using egm::db::ChangedSpec;
  ScratchDir dir;
  const std::string db_path = dir.file("egm.sqlite");
  const std::string spec_path = dir.file("s.json");
  egm::atomic_write_file(spec_path, minimal().dump());
  int64_t sweep_id = 0;
  std::map<std::string, int64_t> ids;
  std::string first_hash;
  {
    auto setup = open_sweep(spec_path, db_path, ChangedSpec::refuse);
    sweep_id = setup.sweep.sweep.id;
    first_hash = setup.spec.hash;
    for (size_t i = 0; i < setup.cells.size(); ++i) ids[setup.cells[i].key] = setup.cell_ids[i];
    setup.db.set_sweep_status(sweep_id, egm::db::SweepStatus::done);
  }
  ASSERT_EQ(ids.size(), 4u);

  // An unchanged spec with --extend just loads.
  {
    auto same = open_sweep(spec_path, db_path, ChangedSpec::extend);
    EXPECT_FALSE(same.sweep.created);
    EXPECT_FALSE(same.sweep.extended_from.has_value());
    EXPECT_EQ(same.sweep.sweep.status, egm::db::SweepStatus::done);
  }

  // More seeds and a variant: the same sweep, the old cells' ids, new cells added.
  json more = minimal();
  more["seeds"] = {0, 1, 2};
  more["variants"] = {"base", "ega", "mope"};
  egm::atomic_write_file(spec_path, more.dump());
  {
    auto ext = open_sweep(spec_path, db_path, ChangedSpec::extend);
    EXPECT_FALSE(ext.sweep.created);
    EXPECT_EQ(ext.sweep.sweep.id, sweep_id);
    ASSERT_TRUE(ext.sweep.extended_from.has_value());
    EXPECT_EQ(*ext.sweep.extended_from, first_hash);
    EXPECT_EQ(ext.sweep.sweep.spec_hash, ext.spec.hash);
    EXPECT_NE(ext.spec.hash, first_hash);
    EXPECT_EQ(ext.sweep.sweep.status, egm::db::SweepStatus::pending);  // was done; it has new cells now
    ASSERT_EQ(ext.cell_ids.size(), 9u);
    for (size_t i = 0; i < ext.cells.size(); ++i) {
      auto it = ids.find(ext.cells[i].key);
      if (it != ids.end()) {
        EXPECT_EQ(ext.cell_ids[i], it->second) << ext.cells[i].key;
      }
    }
    // Listed in the new expansion's order.
    const auto rows = ext.db.list_cells();
    ASSERT_EQ(rows.size(), 9u);
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].key, ext.cells[i].key);
    bool logged = false;
    for (const auto& e : ext.db.list_events(sweep_id))
      if (e.kind == egm::db::EventKind::sweep_extended) logged = e.message.find(first_hash) != std::string::npos;
    EXPECT_TRUE(logged);
    EXPECT_EQ(ext.db.list_sweeps(/*include_superseded=*/true).size(), 1u);
  }
  const std::string extended_hash = open_sweep(spec_path, db_path, ChangedSpec::refuse).spec.hash;

  // Dropping a seed, or changing every cell's config, is not an extension.
  const FileSnapshot before = FileSnapshot::of(db_path);
  json fewer = more;
  fewer["seeds"] = {0, 2};
  egm::atomic_write_file(spec_path, fewer.dump());
  try {
    open_sweep(spec_path, db_path, ChangedSpec::extend);
    FAIL() << "a spec that drops cells was accepted by --extend";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no longer expands to"), std::string::npos) << e.what();
  }
  json changed = more;
  changed["steps"] = 7;
  egm::atomic_write_file(spec_path, changed.dump());
  try {
    open_sweep(spec_path, db_path, ChangedSpec::extend);
    FAIL() << "a spec that changes cells was accepted by --extend";
  } catch (const egm::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("another run config"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(FileSnapshot::of(db_path).same_as(before));
  egm::atomic_write_file(spec_path, more.dump());
  EXPECT_EQ(open_sweep(spec_path, db_path, ChangedSpec::refuse).sweep.sweep.spec_hash, extended_hash);
}

}  // namespace
