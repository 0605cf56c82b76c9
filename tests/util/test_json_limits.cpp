// The bounded JSON reader: each limit refused with its path, line and column,
// the hostile inputs that used to crash egm (SIGSEGV) refused before anything
// recursive runs, and ordinary documents read as nlohmann reads them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "util/json_limits.h"

namespace {

using egm::JsonError;
using egm::JsonLimits;
using egm::parse_json;
using nlohmann::json;

JsonError refused(const std::string& text, const JsonLimits& limits = JsonLimits::user()) {
  try {
    parse_json(text, limits, "in.json");
  } catch (const JsonError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 80);
  return JsonError(JsonError::Kind::syntax, "", "", 0, 0, "", "");
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos; }

TEST(JsonLimits, ReadsOrdinaryDocumentsAsNlohmannDoes) {
  const std::string text = R"({"a": [1, -2, 3.5, true, null, "x\u00e9"], "b": {"c": {}}, "n": 18446744073709551615})";
  EXPECT_EQ(parse_json(text, JsonLimits::user(), "t"), json::parse(text));
  EXPECT_EQ(parse_json("  7 ", JsonLimits::user(), "t"), json(7));
  EXPECT_EQ(parse_json("[]", JsonLimits::user(), "t"), json::array());
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(JsonLimits, RefusesDeepNestingWithPathAndLimit) {
  // 100000 '[' used to overflow the stack in dump() after a successful parse.
  for (const std::string& text : {std::string(100000, '[') + std::string(100000, ']'), std::string(100000, '['),
                                   "{\"a\": [1, " + repeat("{\"k\": ", 100000)}) {
    const JsonError e = refused(text);
    EXPECT_EQ(e.kind(), JsonError::Kind::depth);
    EXPECT_TRUE(one_line(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find("deeper than 32 levels"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("in.json:1:", 0), 0u) << e.what();
  }
  EXPECT_EQ(refused("{\"a\": [1, " + std::string(40, '[')).path().rfind("$.a[1][0][0]", 0), 0u);
  // Exactly at the limit is fine.
  EXPECT_NO_THROW(parse_json(std::string(32, '[') + std::string(32, ']'), JsonLimits::user(), "t"));
  EXPECT_EQ(refused(std::string(33, '[') + std::string(33, ']')).kind(), JsonError::Kind::depth);
}

TEST(JsonLimits, RefusesLongStringsAndKeys) {
  const JsonError e = refused("{\"seeds\": [1],\n \"name\": \"" + std::string(50000, 'a') + "\"}");
  EXPECT_EQ(e.kind(), JsonError::Kind::string);
  EXPECT_EQ(e.path(), "$.name");
  EXPECT_EQ(e.line(), 2);
  EXPECT_TRUE(one_line(e.what()));
  EXPECT_NE(std::string(e.what()).find("string of 50000 bytes is longer than 8192 bytes"), std::string::npos)
      << e.what();
  const JsonError k = refused("{\"x\": [{\"" + std::string(9000, 'k') + "\": 1}]}");
  EXPECT_EQ(k.kind(), JsonError::Kind::string);
  EXPECT_EQ(k.path().rfind("$.x[0][\"kkkk", 0), 0u) << k.path();
  EXPECT_LT(k.path().size(), 100u) << "a long key is cut in the path";
  EXPECT_NO_THROW(parse_json("\"" + std::string(8192, 'a') + "\"", JsonLimits::user(), "t"));
  EXPECT_NO_THROW(parse_json("\"" + std::string(50000, 'a') + "\"", JsonLimits::machine(), "t"));
}

TEST(JsonLimits, RefusesOutOfRangeNumbers) {
  for (const char* literal : {"1e400", "-1e400", "1e16", "99999999999999999999999", "-1e309"}) {
    const JsonError e = refused(std::string("{\"model\": {\"d_model\": ") + literal + "}}");
    EXPECT_EQ(e.kind(), JsonError::Kind::number) << literal;
    EXPECT_EQ(e.path(), "$.model.d_model") << literal;
    EXPECT_NE(std::string(e.what()).find(literal), std::string::npos) << e.what();
  }
  EXPECT_EQ(refused("[0, 1e999]").path(), "$[1]");
  // Non-finite literals are not JSON at all.
  for (const char* text : {"NaN", "[Infinity]", "{\"a\": -inf}", "[nan]"})
    EXPECT_EQ(refused(text).kind(), JsonError::Kind::syntax) << text;
  // 64-bit integers of any size, tiny floats, and large finite floats where allowed.
  EXPECT_EQ(parse_json("-9223372036854775808", JsonLimits::user(), "t"), json(INT64_MIN));
  EXPECT_EQ(parse_json("1e-400", JsonLimits::user(), "t"), json(0.0));
  EXPECT_EQ(parse_json("1e300", JsonLimits::machine(), "t"), json(1e300));
  EXPECT_EQ(refused("1e400", JsonLimits::machine()).kind(), JsonError::Kind::number);
}

TEST(JsonLimits, RefusesLargeDocumentsBeforeParsing) {
  std::string big = "[" + std::string(20u << 20, ' ') + "]";  // 20 MB
  const JsonError e = refused(big);
  EXPECT_EQ(e.kind(), JsonError::Kind::size);
  EXPECT_EQ(e.path(), "$");
  EXPECT_NE(std::string(e.what()).find("longer than 1048576 bytes"), std::string::npos) << e.what();
}

TEST(JsonLimits, SyntaxErrorsKeepLineColumnAndSayWhere) {
  const JsonError e = refused("{\"a\":\n  [1, 2,,]}");
  EXPECT_EQ(e.kind(), JsonError::Kind::syntax);
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(std::string(e.what()).rfind("in.json:2:9: invalid JSON: syntax error", 0), 0u) << e.what();
  EXPECT_NE(std::string(e.what()).find("(in $.a[2])"), std::string::npos) << e.what();
  EXPECT_EQ(refused("{\"steps\": NaN}").path(), "$.steps");
  EXPECT_EQ(refused("").kind(), JsonError::Kind::syntax);
  EXPECT_EQ(refused("{} x").kind(), JsonError::Kind::syntax);
  EXPECT_EQ(refused("\"\xff\"").kind(), JsonError::Kind::syntax);  // invalid UTF-8
  // A JsonError is a ConfigError: commands exit 2.
  EXPECT_THROW(parse_json("[", JsonLimits::user(), "t"), egm::ConfigError);
}

TEST(JsonLimits, CollectsDuplicateKeysWhenAsked) {
  std::vector<egm::JsonDuplicateKey> dups;
  const json j = parse_json("{\"a\": 1, \"b\": {\"c d\": 1, \"c d\": 2}, \"a\": 3}", JsonLimits::user(), "t", &dups);
  ASSERT_EQ(dups.size(), 2u);
  EXPECT_EQ(dups[0].path, "$.b[\"c d\"]");
  EXPECT_EQ(dups[1].path, "$.a");
  EXPECT_EQ(j["a"], 3);  // the last one, as nlohmann keeps it
  EXPECT_NO_THROW(parse_json("{\"a\": 1, \"a\": 2}", JsonLimits::user(), "t"));
}

TEST(JsonLimits, ReadsFilesOnlyUpToTheLimit) {
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / "egm_test_json_limits.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << "[\"" << std::string(3u << 20, 'a') << "\"]";
  }
  EXPECT_EQ(egm::read_json_text(path.string(), JsonLimits::user()).size(), (1u << 20) + 1);
  try {
    egm::read_json_file(path.string(), JsonLimits::user());
    ADD_FAILURE() << "accepted";
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), JsonError::Kind::size);
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ":1:", 0), 0u) << e.what();
  }
  fs::remove(path);
  EXPECT_THROW(egm::read_json_file("/nonexistent/egm.json", JsonLimits::user()), egm::IoError);
  // A character device never ends; the read stops at the limit.
  EXPECT_EQ(refused(egm::read_json_text("/dev/zero", JsonLimits::user())).kind(), JsonError::Kind::size);
}

TEST(JsonLimits, PathsUseTheMessageSyntax) {
  EXPECT_EQ(egm::json_path_with_key("$", "seeds"), "$.seeds");
  EXPECT_EQ(egm::json_path_with_key("$.x", "a+b"), "$.x[\"a+b\"]");
}

}  // namespace
