// A sequential sweep's options (src/sequential/until_options.h): the spec's
// "until" field with the flags over it, `--until none`, the refusals, and the
// arguments egm submit writes for the job's egm sweep reading back as the
// same options.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sequential/until_options.h"
#include "spec/experiment_spec.h"
#include "util/error.h"

namespace {

using namespace egm::sequential;
using egm::spec::ExperimentSpec;
using egm::spec::parse_spec;

const char* kTwoByTwo = R"({"name": "t", "preset": "tiny", "variants": ["base", "ega", "mope", "ega_mope"],
  "seeds": [0, 1]})";
const char* kWithUntil = R"({"name": "t", "preset": "tiny", "variants": ["base", "ega", "mope", "ega_mope"],
  "seeds": [0, 1], "until": {"claims": ["interaction", "ega"], "max_seeds": 12, "half_width": 0.02}})";

// The flags parsed as egm sweep and egm submit parse them.
UntilFlags flags(std::vector<std::string> args) {
  CLI::App app;
  UntilFlags f;
  add_until_flags(app, f);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  return f;
}

std::string error_of(const UntilFlags& f, const ExperimentSpec& spec) {
  try {
    check_until(resolve_until(f, spec), spec);
  } catch (const egm::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(UntilOptions, NoFlagsAndNoFieldIsAPlainSweep) {
  EXPECT_FALSE(resolve_until(flags({}), parse_spec(kTwoByTwo)).active());
}

TEST(UntilOptions, TheSpecFieldIsUsedWithItsDefaults) {
  const UntilOptions o = resolve_until(flags({}), parse_spec(kWithUntil));
  EXPECT_EQ(o.claims, "interaction,ega");
  EXPECT_EQ(o.max_seeds, 12);
  EXPECT_EQ(o.batch, 1);
  EXPECT_DOUBLE_EQ(o.alpha, 0.05);
  ASSERT_TRUE(o.half_width.has_value());
  EXPECT_DOUBLE_EQ(*o.half_width, 0.02);
  EXPECT_EQ(check_until(o, parse_spec(kWithUntil)), (std::vector<std::string>{"interaction", "delta(ega)"}));
}

TEST(UntilOptions, AFlagOverridesOnlyTheFieldItNames) {
  const UntilOptions o = resolve_until(flags({"--max-seeds", "20", "--alpha", "0.1"}), parse_spec(kWithUntil));
  EXPECT_EQ(o.claims, "interaction,ega");
  EXPECT_EQ(o.max_seeds, 20);
  EXPECT_DOUBLE_EQ(o.alpha, 0.1);
  EXPECT_DOUBLE_EQ(o.half_width.value_or(0), 0.02);
  EXPECT_EQ(resolve_until(flags({"--until", "mope"}), parse_spec(kWithUntil)).claims, "mope");
}

TEST(UntilOptions, UntilNoneTurnsTheFieldOff) {
  EXPECT_FALSE(resolve_until(flags({"--until", "none"}), parse_spec(kWithUntil)).active());
}

TEST(UntilOptions, ABudgetFlagWithoutClaimsIsRefused) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--max-seeds", "4"}, {"--batch", "2"}, {"--half-width", "0.1"}, {"--alpha", "0.1"}}) {
    const std::string e = error_of(flags(args), parse_spec(kTwoByTwo));
    EXPECT_NE(e.find(args[0] + " belongs to a sequential sweep"), std::string::npos) << e;
  }
}

TEST(UntilOptions, TheFieldIsCheckedLikeTheFlags) {
  const ExperimentSpec bogus = parse_spec(R"({"name": "t", "preset": "tiny", "variants": ["base", "ega"],
    "seeds": [0, 1, 2], "until": {"claims": "bogus", "max_seeds": 4}})");
  EXPECT_NE(error_of(flags({}), bogus).find("no variant 'bogus' in sweep t"), std::string::npos);
  const ExperimentSpec low = parse_spec(R"({"name": "t", "preset": "tiny", "variants": ["base", "ega"],
    "seeds": [0, 1, 2], "until": {"claims": "ega", "max_seeds": 2}})");
  EXPECT_NE(error_of(flags({}), low).find("--max-seeds 2 is below the 3 seeds"), std::string::npos);
  const ExperimentSpec alpha = parse_spec(R"({"name": "t", "preset": "tiny", "variants": ["base", "ega"],
    "seeds": [0, 1], "until": {"claims": "ega", "max_seeds": 4, "alpha": 0.7}})");
  EXPECT_NE(error_of(flags({}), alpha).find("--alpha 0.7: must be in (0, 0.5)"), std::string::npos);
  EXPECT_EQ(error_of(flags({"--alpha", "0.2"}), alpha), "");  // the flag over the field
}

TEST(UntilOptions, TheJobsArgumentsReadBackAsTheSameOptions) {
  const ExperimentSpec spec = parse_spec(kTwoByTwo);
  UntilOptions o;
  o.claims = "interaction,delta(ega)";
  o.max_seeds = 9;
  o.batch = 3;
  o.alpha = 0.1 / 3;  // a value whose decimal text must be exact
  o.half_width = 0.0125;
  const UntilOptions back = resolve_until(flags(until_arguments(o)), spec);
  EXPECT_EQ(back.claims, o.claims);
  EXPECT_EQ(back.max_seeds, o.max_seeds);
  EXPECT_EQ(back.batch, o.batch);
  EXPECT_EQ(back.alpha, o.alpha);
  EXPECT_EQ(back.half_width, o.half_width);
  o.half_width.reset();
  EXPECT_FALSE(resolve_until(flags(until_arguments(o)), spec).half_width.has_value());
  // Written out: the spec's field cannot change what was checked at submission.
  const UntilOptions over = resolve_until(flags(until_arguments(o)), parse_spec(kWithUntil));
  EXPECT_EQ(over.claims, o.claims);
  EXPECT_EQ(over.max_seeds, 9);
}

}  // namespace
