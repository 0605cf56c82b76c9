// Table / CSV / JSON output; expected strings written by hand from RFC 4180
// (CSV) and the JSON spec, not produced by the code under test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "db/table_format.h"
#include "util/error.h"

namespace {

using namespace egm::db;

Table sample() {
  Table t;
  t.columns = {"variant", "seed", "final_val", "note"};
  t.rows.push_back({std::string("base"), int64_t{0}, 1.4742, std::monostate{}});
  t.rows.push_back({std::string("ega_mope"), int64_t{12}, 1.355, std::string("a, \"quoted\"\nline")});
  return t;
}

TEST(TableFormat, AlignedTextTable) {
  const std::string expected =
      "variant   seed  final_val  note\n"
      "--------  ----  ---------  ----------------\n"
      "base         0     1.4742\n"
      "ega_mope    12      1.355  a, \"quoted\" line\n";
  EXPECT_EQ(format_table(sample(), Format::table), expected);
}

TEST(TableFormat, CsvQuotesPerRfc4180) {
  const std::string expected =
      "variant,seed,final_val,note\n"
      "base,0,1.4742,\n"
      "ega_mope,12,1.355,\"a, \"\"quoted\"\"\nline\"\n";
  EXPECT_EQ(format_table(sample(), Format::csv), expected);
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("x\ry"), "\"x\ry\"");
}

TEST(TableFormat, JsonArrayOfObjects) {
  const auto parsed = nlohmann::json::parse(format_table(sample(), Format::json));
  ASSERT_TRUE(parsed.is_array());
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0]["variant"], "base");
  EXPECT_EQ(parsed[0]["seed"], 0);
  EXPECT_EQ(parsed[0]["final_val"].get<double>(), 1.4742);
  EXPECT_TRUE(parsed[0]["note"].is_null());
  EXPECT_EQ(parsed[1]["note"], "a, \"quoted\"\nline");
  // Column order is kept (nlohmann::json sorts keys when parsing, so check the text).
  const std::string raw = format_table(sample(), Format::json);
  EXPECT_LT(raw.find("\"variant\""), raw.find("\"seed\""));
  EXPECT_LT(raw.find("\"seed\""), raw.find("\"final_val\""));
}

TEST(TableFormat, EmptyAndDuplicateColumns) {
  Table t;
  t.columns = {"id", "id"};
  EXPECT_EQ(format_table(t, Format::json), "[]\n");
  EXPECT_EQ(format_table(t, Format::csv), "id,id\n");
  t.rows.push_back({int64_t{1}, int64_t{2}});
  const auto parsed = nlohmann::json::parse(format_table(t, Format::json));
  EXPECT_EQ(parsed[0]["id"], 1);
  EXPECT_EQ(parsed[0]["id:2"], 2);
}

TEST(TableFormat, RealsInTheTable) {
  EXPECT_EQ(value_text(Value{1.4742}), "1.4742");
  EXPECT_EQ(value_text(Value{3e-5}), "3e-05");
  EXPECT_EQ(value_text(Value{1795982643.125}), "1795982643.12");  // a UNIX time keeps its digits
  EXPECT_EQ(value_text(Value{999999.0}), "999999");
  EXPECT_EQ(value_text(Value{std::monostate{}}, FormatOptions{6, "NULL"}), "NULL");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(190), "3m 10s");
  EXPECT_EQ(format_duration(7500), "2h 05m");
  EXPECT_EQ(format_utc(0), "1970-01-01 00:00:00");
  EXPECT_EQ(format_utc(86400 + 3661), "1970-01-02 01:01:01");
}

TEST(TableFormat, ParseFormat) {
  EXPECT_EQ(parse_format("csv"), Format::csv);
  EXPECT_THROW(parse_format("xml"), egm::ConfigError);
}

}  // namespace
