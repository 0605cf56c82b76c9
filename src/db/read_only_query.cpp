// prepare_read_only_query: a read-only connection required, one statement, an
// authorizer that allows only reading (naming its first denial), sqlite3_stmt_readonly.
#include "db/read_only_query.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

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

// Case-insensitive, as SQLite's own PRAGMA names are; a null name (no pragma) is in no list.
template <typename List>
bool in(const char* name, const List& list) {
  return name && std::any_of(list.begin(), list.end(), [&](const char* p) { return sqlite3_stricmp(name, p) == 0; });
}

// The statement's own kind from its first words ("DROP TABLE", "CREATE
// INDEX", "INSERT"), comments and whitespace skipped; what a refusal names
// when the authorizer's first denial is SQLite's own bookkeeping (a DROP TABLE
// deletes from sqlite_master, a CREATE TABLE inserts into it).
std::string statement_kind(std::string_view sql) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < sql.size() && words.size() < 4) {
    const char ch = sql[i];
    if (std::isspace(static_cast<unsigned char>(ch))) {
      ++i;
    } else if (sql.substr(i, 2) == "--") {
      const size_t end = sql.find('\n', i);
      i = end == std::string_view::npos ? sql.size() : end + 1;
    } else if (sql.substr(i, 2) == "/*") {
      const size_t end = sql.find("*/", i + 2);
      i = end == std::string_view::npos ? sql.size() : end + 2;
    } else if (std::isalpha(static_cast<unsigned char>(ch))) {
      std::string w;
      while (i < sql.size() && (std::isalnum(static_cast<unsigned char>(sql[i])) || sql[i] == '_'))
        w += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i++])));
      words.push_back(w);
    } else {
      break;
    }
  }
  if (words.empty()) return "";
  // Other statements are named by their first word; only CREATE and DROP need the object kind too.
  if (words[0] != "CREATE" && words[0] != "DROP") return words[0];
  // CREATE [TEMP|TEMPORARY|UNIQUE|VIRTUAL] TABLE|INDEX|VIEW|TRIGGER
  for (size_t w = 1; w < words.size(); ++w)
    if (words[w] == "TABLE" || words[w] == "INDEX" || words[w] == "VIEW" || words[w] == "TRIGGER")
      return words[0] + " " + (w > 1 && words[w - 1] == "VIRTUAL" ? "VIRTUAL " : "") + words[w];
  return words[0];
}

// The four names SQLite accepts for the schema tables (sqlite_schema since 3.33).
bool schema_table(const char* name) {
  return name && (sqlite3_stricmp(name, "sqlite_master") == 0 || sqlite3_stricmp(name, "sqlite_schema") == 0 ||
                  sqlite3_stricmp(name, "sqlite_temp_master") == 0 || sqlite3_stricmp(name, "sqlite_temp_schema") == 0);
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
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TEMP_TABLE: return "CREATE TABLE";
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TEMP_INDEX: return "CREATE INDEX";
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TEMP_VIEW: return "CREATE VIEW";
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER: return "CREATE TRIGGER";
    case SQLITE_CREATE_VTABLE: return "CREATE VIRTUAL TABLE";
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_TABLE: return "DROP TABLE";
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TEMP_INDEX: return "DROP INDEX";
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_TEMP_VIEW: return "DROP VIEW";
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TRIGGER: return "DROP TRIGGER";
    case SQLITE_DROP_VTABLE: return "DROP VIRTUAL TABLE";
    default: return "a statement that changes the schema";
  }
}

struct Refusal {
  std::string kind;  // the statement's own kind (statement_kind), for SQLite's bookkeeping denials
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
    // For a PRAGMA, a is its name and b its argument (null in the query form).
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
  // Only the first denial is named: later ones follow from it and would mislead.
  auto* refusal = static_cast<Refusal*>(context);
  if (refusal->what.empty()) {
    const bool bookkeeping =
        (action == SQLITE_INSERT || action == SQLITE_UPDATE || action == SQLITE_DELETE) && schema_table(a);
    if (action == SQLITE_PRAGMA)
      refusal->what = std::string("PRAGMA ") + (a ? a : "") + (b ? " with a value" : "");
    else if (bookkeeping)  // the schema changes: name what the statement is, not its row in sqlite_master
      refusal->what = refusal->kind.empty() ? action_name(-1) : refusal->kind;
    else
      refusal->what = action_name(action);
  }
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
  refusal.kind = statement_kind(sql);
  // The authorizer runs while SQLite compiles the statement (in prepare), so it must be set before it.
  sqlite3_set_authorizer(connection.handle(), authorize, &refusal);
  // Removed again on every way out, since it points at this frame's refusal.
  struct Reset {
    sqlite3* db;
    ~Reset() { sqlite3_set_authorizer(db, nullptr, nullptr); }
  } reset{connection.handle()};
  try {
    Statement statement = connection.prepare(sql);
    // The second guard: sqlite3_stmt_readonly looks at the compiled program, the authorizer at what it names.
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
