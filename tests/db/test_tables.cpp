// db/tables.h against the schema the migrations build: at every schema version,
// every table and view of schemas/results.sql is listed with exactly its
// columns (the cells' measurement columns among them, run/outcome.h), their
// declared types and the version that added each.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "db/migrations.h"
#include "db/sqlite.h"
#include "db/tables.h"
#include "test_helpers.h"
#include "util/error.h"

namespace egm::db {
namespace {

const char* sql_name(SqlType type) {
  switch (type) {
    case SqlType::integer:
      return "INTEGER";
    case SqlType::real:
      return "REAL";
    case SqlType::text:
      return "TEXT";
    case SqlType::blob:
      return "BLOB";
  }
  return "?";
}

struct Built {
  std::string kind;                                          // "table" | "view"
  std::vector<std::pair<std::string, std::string>> columns;  // name, declared type
};

// The tables and views of a database at the first `version` migrations.
std::map<std::string, Built> schema_at(const std::string& path, int version) {
  Connection c(path, OpenMode::read_write_create);
  const std::vector<Migration>& all = results_migrations();
  migrate(c, std::vector<Migration>(all.begin(), all.begin() + version));
  std::map<std::string, Built> out;
  Statement s =
      c.prepare("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'");
  while (s.step()) out[s.text(0)].kind = s.text(1);
  for (auto& [name, built] : out) {
    Statement info = c.prepare("PRAGMA table_info(" + name + ")");
    while (info.step()) built.columns.emplace_back(info.text(1), info.text(2));
  }
  return out;
}

TEST(StoredTables, MatchTheSchemaAtEveryVersion) {
  testing::ScratchDir dir;
  for (int v = 1; v <= results_schema_version(); ++v) {
    SCOPED_TRACE("schema version " + std::to_string(v));
    const std::map<std::string, Built> built = schema_at(dir.file("v" + std::to_string(v) + ".sqlite"), v);
    std::set<std::string> listed;
    for (const StoredTable& t : stored_tables()) {
      if (t.since > v) continue;
      listed.insert(t.name);
      auto it = built.find(t.name);
      ASSERT_NE(it, built.end()) << t.name << " is in db/tables.cpp but not in the schema";
      // params was a table before v5; the rest are what they have always been.
      if (v == results_schema_version()) EXPECT_EQ(it->second.kind, t.view ? "view" : "table") << t.name;
      std::map<std::string, std::string> declared(it->second.columns.begin(), it->second.columns.end());
      std::set<std::string> expected;
      for (const StoredColumn& c : t.columns_at(v)) {
        expected.insert(c.name);
        auto col = declared.find(c.name);
        ASSERT_NE(col, declared.end()) << t.name << "." << c.name << " (since " << c.since << ") is not in the schema";
        // A view's CAST(... AS DOUBLE) declares no type SQLite names.
        if (!(t.view && col->second.empty())) EXPECT_EQ(col->second, sql_name(c.type)) << t.name << "." << c.name;
      }
      for (const auto& [name, type] : it->second.columns)
        EXPECT_TRUE(expected.count(name)) << t.name << "." << name << " is in the schema at v" << v
                                          << " but not in db/tables.cpp (or listed with a later version)";
    }
    for (const auto& [name, b] : built)
      EXPECT_TRUE(listed.count(name)) << "the " << b.kind << " " << name << " of schemas/results.sql (at v" << v
                                      << ") is missing from db/tables.cpp";
  }
}

TEST(StoredTables, EveryStoredTableHasAMergeRole) {
  // A view is derived (nothing to copy); every table is copied by egm merge.
  for (const StoredTable& t : stored_tables()) EXPECT_EQ(t.view, t.merge == MergeRole::derived) << t.name;
}

TEST(StoredTables, AnUnlistedNameIsAnError) {
  EXPECT_THROW(stored_table("no_such_table"), Error);
  EXPECT_THROW(stored_column("cells", "no_such_column"), Error);
  EXPECT_EQ(stored_column("cells", "grid_point").since, 3);
}

}  // namespace
}  // namespace egm::db
