// The gate of `egm query`: one SQL statement from the user, let through only
// when it cannot change the database. Three locks, in order:
//   1. the connection is OpenMode::read_only (SQLITE_OPEN_READONLY, PRAGMA
//      query_only, no ATTACH): required here, so the gate cannot be misused;
//   2. exactly one statement (Connection::prepare refuses trailing SQL);
//   3. an authorizer allows only reading (tables, SELECT/WITH/VALUES/EXPLAIN,
//      functions, PRAGMAs that read) and sqlite3_stmt_readonly says it writes
//      nothing; else a ConfigError before it runs. (sqlite3_stmt_readonly alone
//      passes "PRAGMA query_only = OFF", REINDEX, ATTACH and BEGIN.)
// tests/fuzz/fuzz_query_gate.cpp fuzzes it: whatever passes must run without
// any attempt to write.
#pragma once

#include <string_view>

#include "db/sqlite.h"

namespace egm::db {

// Values (strings, blobs, rows) a query may build, at most: the connection's
// SQLITE_LIMIT_LENGTH from here on. The database's own are far smaller.
inline constexpr int kMaxValueBytes = 64 << 20;

// The prepared statement, ready to step; DbError for SQL SQLite rejects,
// ConfigError for a statement that would write.
Statement prepare_read_only_query(Connection& connection, std::string_view sql);

}  // namespace egm::db
