#include "db/read_only_query.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "util/error.h"

namespace egm::db {
namespace {

// PRAGMAs that only read, allowed with an argument ("PRAGMA table_info(cells)").
// Any other PRAGMA is allowed only in its query form, without an argument.
constexpr std::array<const char*, 9> kReadingPragmas = {"table_info",   "table_xinfo",       "index_list",
                                                        "index_info",   "index_xinfo",       "foreign_key_list",
                                                        "integrity_check", "quick_check",    "foreign_key_check"};
// PRAGMAs that may write even without an argument.
constexpr std::array<const char*, 4> kWritingPragmas = {"optimize", "wal_checkpoint", "incremental_vacuum",
                                                        "shrink_memory"};

template <typename List>
bool in(const char* name, const List& list) {
  return name && std::any_of(list.begin(), list.end(), [&](const char* p) { return sqlite3_stricmp(name, p) == 0; });
}

const char* action_name(int action) {
  switch (action) {
    case SQLITE_INSERT: return "INSERT";
    case SQLITE_UPDATE: return "UPDATE";
    case SQLITE_DELETE: return "DELETE";
    case SQLITE_ATTACH: return "ATTACH";
    case SQLITE_DETACH: return "DETACH";
    case SQLITE_TRANSACTION: return "a transaction (BEGIN, COMMIT, ROLLBACK)";
    case SQLITE_SAVEPOINT: return "SAVEPOINT";
    case SQLITE_REINDEX: return "REINDEX";
    case SQLITE_ANALYZE: return "ANALYZE";
    case SQLITE_ALTER_TABLE: return "ALTER TABLE";
    default: return "a statement that changes the schema";
  }
}

struct Refusal {
  std::string what;  // the first thing the authorizer denied
};

// The allow-list: reading tables, SELECT (also inside WITH, VALUES, EXPLAIN),
// functions, recursive CTEs, and reading PRAGMAs. sqlite3_stmt_readonly alone
// lets through statements that change the connection or may write
// ("PRAGMA query_only = OFF", "REINDEX", "PRAGMA optimize", ATTACH, BEGIN).
int authorize(void* context, int action, const char* a, const char* b, const char* /*database*/,
              const char* /*trigger*/) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if (in(a, kReadingPragmas) || (!b && !in(a, kWritingPragmas))) return SQLITE_OK;
      break;
    case SQLITE_UPDATE:
      // SQLite asks this when a SELECT first uses an eponymous virtual table
      // (json_each, pragma_table_info): no statement a user writes can update
      // sqlite_master while writable_schema is off, and setting it is refused above.
      if (a && sqlite3_stricmp(a, "sqlite_master") == 0) return SQLITE_OK;
      break;
    default:
      break;
  }
  auto* refusal = static_cast<Refusal*>(context);
  if (refusal->what.empty())
    refusal->what = action == SQLITE_PRAGMA ? std::string("PRAGMA ") + (a ? a : "") + (b ? " with a value" : "")
                                            : action_name(action);
  return SQLITE_DENY;
}

}  // namespace

Statement prepare_read_only_query(Connection& connection, std::string_view sql) {
  EGM_CHECK(connection.mode() == OpenMode::read_only, "prepare_read_only_query needs a read-only connection, {} is not",
            connection.path());
  // No value (a string, a blob, a row) above 64 MiB: zeroblob(1e9) or
  // randomblob(1e8) would otherwise build that much in memory.
  sqlite3_limit(connection.handle(), SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  Refusal refusal;
  sqlite3_set_authorizer(connection.handle(), authorize, &refusal);
  struct Reset {
    sqlite3* db;
    ~Reset() { sqlite3_set_authorizer(db, nullptr, nullptr); }
  } reset{connection.handle()};
  try {
    Statement statement = connection.prepare(sql);
    EGM_REQUIRE(statement.read_only(), ConfigError,
                "egm query is read-only: this statement would change {}; nothing was run. Results are written by "
                "the coordinator only",
                connection.path());
    return statement;
  } catch (const DbError&) {
    if (refusal.what.empty()) throw;  // SQL that SQLite itself rejects: its own message
    EGM_THROW(ConfigError,
              "egm query is read-only: {} is not allowed (SELECT, WITH, VALUES, EXPLAIN and PRAGMAs that read are); "
              "nothing was run",
              refusal.what);
  }
}

}  // namespace egm::db
