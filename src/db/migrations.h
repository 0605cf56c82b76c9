// Schema versions of the results database. schemas/results.sql is a list of
// migrations, each starting with a "-- @migration N: description" line; the
// file is embedded in the binary at build time. A database records its version
// in PRAGMA user_version (0 = a new, empty file) and migrate() applies every
// later migration, each in its own transaction together with the new version,
// so a crash leaves the file at one version or the next, never in between.
// Adding schema version N+1 = appending one "-- @migration N+1" section.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "db/sqlite.h"

namespace egm::db {

struct Migration {
  int version = 0;          // the user_version after it ran
  std::string description;  // the marker line's text after "N:"
  std::string sql;
};

// Splits a migration script at its markers; throws DbError unless the versions
// are 1, 2, ..., N in order and every section has SQL.
std::vector<Migration> parse_migrations(std::string_view script);

// The results database's migrations (from the embedded schemas/results.sql).
const std::vector<Migration>& results_migrations();
// The version this binary writes: the last of results_migrations().
int results_schema_version();
// The embedded schemas/results.sql, verbatim.
std::string_view results_schema_sql();

// Brings the database to the last version in `migrations` and returns how many
// migrations ran. Throws DbError when the file's version is newer than this
// binary knows, or when it is a SQLite file with tables but no egm version.
int migrate(Connection& connection, const std::vector<Migration>& migrations);

}  // namespace egm::db
