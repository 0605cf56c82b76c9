// The results schema's migrations, one per version, applied in a transaction;
// a file newer than this egm is refused, never rewritten.
#include "db/migrations.h"

#include <algorithm>
#include <cctype>

#include "db/generated_results_sql.h"
#include "util/error.h"

namespace egm::db {
namespace {

// A line "-- @migration N: description" starts migration N; the SQL up to the next marker is its body.
constexpr std::string_view kMarker = "-- @migration ";

bool has_sql(std::string_view sql) {
  // Anything besides blanks and "--" comment lines.
  size_t pos = 0;
  while (pos < sql.size()) {
    size_t end = sql.find('\n', pos);
    if (end == std::string_view::npos) end = sql.size();
    std::string_view line = sql.substr(pos, end - pos);
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && line.substr(first, 2) != "--") return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

std::vector<Migration> parse_migrations(std::string_view script) {
  std::vector<Migration> migrations;
  size_t pos = 0;
  while (pos < script.size()) {
    size_t end = script.find('\n', pos);
    if (end == std::string_view::npos) end = script.size();
    std::string_view line = script.substr(pos, end - pos);
    if (line.substr(0, kMarker.size()) == kMarker) {
      std::string_view rest = line.substr(kMarker.size());
      size_t colon = rest.find(':');
      std::string number(rest.substr(0, colon));
      EGM_REQUIRE(!number.empty() && std::all_of(number.begin(), number.end(), [](unsigned char c) { return std::isdigit(c); }),
                  DbError, "schema script: bad migration marker '{}'", std::string(line));
      Migration m;
      m.version = std::stoi(number);
      if (colon != std::string_view::npos) {
        std::string_view d = rest.substr(colon + 1);
        size_t first = d.find_first_not_of(' ');
        m.description = first == std::string_view::npos ? "" : std::string(d.substr(first));
      }
      EGM_REQUIRE(m.version == static_cast<int>(migrations.size()) + 1, DbError,
                  "schema script: migration {} follows {}; versions must be 1, 2, 3, ... in order", m.version,
                  migrations.size());
      migrations.push_back(std::move(m));
    } else if (!migrations.empty()) {
      // Lines before the first marker (the script's header comment) belong to no migration.
      migrations.back().sql.append(line);
      migrations.back().sql += '\n';
    }
    pos = end + 1;
  }
  EGM_REQUIRE(!migrations.empty(), DbError, "schema script has no '{}N: ...' markers", kMarker);
  for (const auto& m : migrations)
    EGM_REQUIRE(has_sql(m.sql), DbError, "schema script: migration {} has no SQL", m.version);
  return migrations;
}

// The schema script is compiled in (generated_results_sql.h), so the binary needs no file beside it; minus its NUL.
std::string_view results_schema_sql() {
  return std::string_view(embedded::kResultsSql, sizeof(embedded::kResultsSql) - 1);
}

// Parsed once per process; a malformed script fails on the first open.
const std::vector<Migration>& results_migrations() {
  static const std::vector<Migration> migrations = parse_migrations(results_schema_sql());
  return migrations;
}

int results_schema_version() { return results_migrations().back().version; }

int migrate(Connection& connection, const std::vector<Migration>& migrations) {
  const int target = migrations.empty() ? 0 : migrations.back().version;
  int applied = 0;
  for (;;) {
    // The version is read inside the write transaction, so two processes
    // opening the same new file cannot both apply a migration.
    Transaction tx(connection);
    const int current = connection.user_version();
    if (current > target)
      EGM_THROW(DbError,
                "{} has schema version {}, newer than this egm knows ({}); use the egm that wrote it, or a newer one",
                connection.path(), current, target);
    if (current == target) break;  // the transaction rolls back: nothing was written
    // A file with tables but no user_version is someone else's: migrating it would mix egm's tables into it.
    if (current == 0) {
      Statement s = connection.prepare("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
      s.step();
      EGM_REQUIRE(s.int64(0) == 0, DbError,
                  "{} is a SQLite database but not an egm results database (it has tables and no schema "
                  "version); pass another --db path",
                  connection.path());
    }
    const Migration& m = migrations[static_cast<size_t>(current)];
    EGM_CHECK(m.version == current + 1, "migrations must be numbered 1..N in order (found {} at {})", m.version,
              current + 1);
    // The migration and its version number commit together: a crash in between leaves the old version, rerun whole.
    connection.exec(m.sql);
    connection.set_user_version(m.version);
    tx.commit();
    ++applied;
  }
  return applied;
}

}  // namespace egm::db
