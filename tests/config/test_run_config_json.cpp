// Run configs read from outside (`egm train --config FILE`, `--set`, a spec's
// overrides): through the bounded JSON reader, and integer fields that refuse
// what they cannot hold instead of wrapping or invoking undefined behaviour.
#include <gtest/gtest.h>

#include <string>

#include "config/run_config.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace {

using egm::JsonLimits;
using nlohmann::json;

egm::RunConfig from_text(const std::string& text) {
  return egm::run_config_from_json(egm::parse_json(text, JsonLimits::user(), "config.json"), "tiny");
}

std::string refusal(const std::string& text) {
  try {
    from_text(text);
  } catch (const egm::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 80);
  return "";
}

TEST(RunConfigJson, ReadsAnOrdinaryConfig) {
  const egm::RunConfig c = from_text(R"({"preset": "tiny", "model": {"n_layer": 2, "dropout": 0}, "train": {"seed": 7}})");
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.train.seed, 7u);
  EXPECT_EQ(from_text(R"({"train": {"max_steps": 1e3}})").train.max_steps, 1000);  // a float without fraction
}

// An integer beyond int64_t used to wrap (18446744073709551615 became -1), and a
// float such as 1e300 was cast to int64_t: undefined behaviour (UBSan's
// float-cast-overflow). Both are refused with the field's path now.
TEST(RunConfigJson, IntegerFieldsRefuseWhatTheyCannotHold) {
  for (const char* v : {"9223372036854775808", "18446744073709551615"}) {
    const std::string what = refusal(std::string(R"({"model": {"n_layer": )") + v + "}}");
    EXPECT_NE(what.find("model.n_layer"), std::string::npos) << what;
    EXPECT_NE(what.find("out of range"), std::string::npos) << what;
  }
  EXPECT_NE(refusal(R"({"train": {"seed": -1}})").find("non-negative"), std::string::npos);
  EXPECT_NE(refusal(R"({"model": {"n_layer": 2.5}})").find("expected an integer"), std::string::npos);
  // The whole unsigned 64-bit range is a seed.
  EXPECT_EQ(from_text(R"({"train": {"seed": 18446744073709551615}})").train.seed, UINT64_MAX);
  // Direct (unbounded) JSON too: no cast of an out-of-range float.
  for (const double big : {1e300, 9.3e18, -9.3e18, 1.9e19})
    EXPECT_THROW(egm::run_config_from_json(json{{"train", {{"max_steps", big}}}}, "tiny"), egm::ConfigError) << big;
  for (const double big : {1e300, -9.3e18, 1.9e19})
    EXPECT_THROW(egm::run_config_from_json(json{{"train", {{"seed", big}}}}, "tiny"), egm::ConfigError) << big;
  EXPECT_EQ(egm::run_config_from_json(json{{"train", {{"seed", 9.3e18}}}}, "tiny").train.seed, 9300000000000000000u);
}

TEST(RunConfigJson, HostileFilesAreRefusedByTheReaderWithTheirPath) {
  const auto expect = [](const std::string& text, const std::string& path) {
    const std::string what = refusal(text);
    EXPECT_EQ(what.rfind("config.json:", 0), 0u) << what.substr(0, 200);
    EXPECT_NE(what.find(path), std::string::npos) << what.substr(0, 200);
    EXPECT_EQ(what.find('\n'), std::string::npos);
  };
  expect(R"({"model": )" + std::string(100000, '[') + std::string(100000, ']') + "}", "$.model[0]");
  expect(R"({"model": {"variant": ")" + std::string(100000, 'e') + "\"}}", "$.model.variant");
  expect(R"({"train": {"lr": 1e400}})", "$.train.lr");
  expect(R"({"train": {"lr": -1e20}})", "$.train.lr");
  expect(R"({"train": {"out_dir": ")" + std::string(20u << 20, 'x') + "\"}}", "$");
}

}  // namespace

// The execution paths (model.attention_path, train.optimizer_path, train.cuda_graphs)
// came after configs were hashed: at their defaults they are left out of the
// canonical JSON, so every existing config (and database cell) keeps its hash;
// chosen explicitly they are written, hashed and read back.
TEST(RunConfigJson, ExecutionPathsAtTheirDefaultsLeaveTheHashAlone) {
  for (const std::string& preset : egm::preset_names()) {
    const egm::RunConfig c = egm::preset_config(preset);
    const nlohmann::json j = egm::to_json(c);
    EXPECT_FALSE(j["model"].contains("attention_path")) << preset;
    EXPECT_FALSE(j["train"].contains("optimizer_path")) << preset;
    EXPECT_FALSE(j["train"].contains("cuda_graphs")) << preset;
    // Exactly the keys the canonical JSON had before the paths, so the same bytes and hash.
    EXPECT_EQ(j["model"].size(), 11u) << preset;
    EXPECT_EQ(j["train"].size(), 16u) << preset;
  }
  const nlohmann::json every = egm::to_json(egm::preset_config("paper"), /*every_field=*/true);
  EXPECT_EQ(every["model"]["attention_path"], "auto") << "the list a grid may vary has them";
  EXPECT_EQ(every["train"]["cuda_graphs"], false);
  egm::RunConfig c = egm::preset_config("paper");
  c.model.attention_path = "sdpa";
  c.train.optimizer_path = "fused";
  c.train.cuda_graphs = true;
  EXPECT_NE(egm::config_hash(c), egm::config_hash(egm::preset_config("paper")));
  const egm::RunConfig back = egm::run_config_from_json(egm::to_json(c));
  EXPECT_EQ(back.model.attention_path, "sdpa");
  EXPECT_EQ(back.train.optimizer_path, "fused");
  EXPECT_TRUE(back.train.cuda_graphs);
  EXPECT_EQ(egm::config_hash(back), egm::config_hash(c));
  EXPECT_THROW(egm::run_config_from_json({{"model", {{"attention_path", "flash"}}}}), egm::ConfigError);
  EXPECT_THROW(egm::run_config_from_json({{"train", {{"optimizer_path", "apex"}}}}), egm::ConfigError);
}
