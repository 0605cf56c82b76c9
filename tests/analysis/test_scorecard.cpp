// egm paper's claims file and scorecard: the embedded claims hold every
// number of SPEC.md section 4; a bad claims file is refused in one line
// naming the entry; on fixture databases each claim is matched to the sweeps
// that measured it (within a sweep only, one row per sweep), with verdicts
// worked out by hand from the fixture's numbers (fixture.h).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/paper_claims.h"
#include "util/error.h"

namespace egm::analysis {
namespace {

std::string refusal(const std::string& text) {
  try {
    parse_claims(text, "claims.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
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
  // A number JSON cannot read is refused by the parser, at its line and column.
  EXPECT_NE(refusal(head + R"({"id": "x", "kind": "value", "variant": "ega", "value": 1.3.8, "claim": "c"}]})")
                .find("claims.json:1:"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"source": "s", "claims": [], "x": 1})").find("unknown field 'x'"), std::string::npos);
}

}  // namespace
}  // namespace egm::analysis
