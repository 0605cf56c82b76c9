// A small RAII layer over the SQLite C API: a Connection owns a sqlite3*, a
// Statement owns a sqlite3_stmt*, a Transaction rolls back unless committed.
// Every failure is an egm::DbError carrying SQLite's message, the SQL and the
// database path, so a user can tell which file and which query went wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <string_view>
#include <type_traits>
#include <utility>

#include "db/table_format.h"

struct sqlite3;
struct sqlite3_stmt;

namespace egm::db {

enum class OpenMode {
  read_write_create,  // create the file when missing (the coordinator)
  read_write,         // the file must exist
  read_only,          // SQLITE_OPEN_READONLY + PRAGMA query_only, no ATTACH (egm status/runs/query)
};

class Connection;

// How long one step of one statement may run before SQLite is told to stop
// (its progress handler): a database from elsewhere must not make a reader
// spin for ever (a view over an endless recursive CTE, a crafted join).
// Shared by a connection and its statements, at a fixed address.
struct StatementDeadline {
  double limit_s = 0;  // 0: no limit (the coordinator, which writes its own file)
  std::chrono::steady_clock::time_point started{};
  void start() { started = std::chrono::steady_clock::now(); }
};
// The limit every reading connection gets: $EGM_DB_TIME_LIMIT_S, else 600 s
// (egm's longest statements, a merge's copy of a 100,000-cell database's
// metrics, take under a minute here; results/BENCHMARKS.md).
double statement_time_limit_s();

// Bytes bound as a BLOB (a std::string_view binds as TEXT).
struct Blob {
  std::string_view bytes;
};

class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, std::nullptr_t);
  Statement& bind(int index, Blob value);
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, int64_t>>>
  Statement& bind(int index, T value) {
    return bind(index, static_cast<int64_t>(value));
  }
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind(index, nullptr);
  }
  // Binds every argument in order, starting at parameter 1.
  template <typename... Args>
  Statement& bind_all(const Args&... args) {
    int index = 0;
    (bind(++index, args), ...);
    return *this;
  }

  // Advances to the next row: true when a row is available, false when done.
  bool step();
  // Steps to completion (statements that return no rows).
  void run();
  // The column as a number, or nullopt when it is NULL or stored as TEXT or
  // BLOB (a database edited elsewhere: 'NaN' as text must not read as 0.0).
  // `mismatch` is set when a non-NULL value was not a number.
  std::optional<double> opt_number(int column, bool* mismatch = nullptr) const;
  // Rewinds so the statement can run again, and clears the bindings.
  void reset();

  int column_count() const;
  std::string column_name(int column) const;
  bool is_null(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::string blob(int column) const;  // a BLOB's bytes (TEXT as its UTF-8)
  std::optional<int64_t> opt_int64(int column) const;
  std::optional<double> opt_real(int column) const;
  std::optional<std::string> opt_text(int column) const;
  // The column as SQLite typed it (NULL, integer, real, text; blobs as text).
  Value value(int column) const;

  // True when the statement cannot change the database (sqlite3_stmt_readonly).
  bool read_only() const;
  const std::string& sql() const { return sql_; }

 private:
  friend class Connection;
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql, std::string db_path, StatementDeadline* deadline);
  [[noreturn]] void fail(int rc) const;

  sqlite3* db_ = nullptr;
  StatementDeadline* deadline_ = nullptr;  // the connection's
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
  std::string db_path_;
};

class Connection;

// A statement from Connection::cached, in use: reset when the guard goes (its
// bindings cleared and, for a SELECT, its read of the database released, so an
// unfinished read never holds back a WAL checkpoint).
class CachedStatement {
 public:
  CachedStatement(const CachedStatement&) = delete;
  CachedStatement& operator=(const CachedStatement&) = delete;
  ~CachedStatement() { statement_.reset(); }
  Statement& operator*() { return statement_; }
  Statement* operator->() { return &statement_; }

 private:
  friend class Connection;
  explicit CachedStatement(Statement& statement) : statement_(statement) {}
  Statement& statement_;
};

// One thread at a time: opened without SQLite's connection mutex
// (SQLITE_OPEN_NOMUTEX), so a Connection, its Statements and a ResultsDb must
// not be used by two threads at once; each thread opens its own.
class Connection {
 public:
  // Opens `path`. read_only and read_write require the file to exist (a clear
  // DbError otherwise, and nothing is created). busy_timeout_ms bounds how long
  // a statement waits for another connection's lock.
  //
  // Every connection is opened so that a database's own schema cannot run
  // code egm did not choose: SQLITE_DBCONFIG_TRUSTED_SCHEMA off (a view or
  // trigger may call only functions marked innocuous), and a read-only one
  // also in defensive mode with a statement time limit
  // (statement_time_limit_s). A read-only file on a read-only file system
  // (no -shm can be made beside it) is opened immutable when it has no
  // write-ahead log to replay; with one it is refused, saying so.
  Connection(const std::string& path, OpenMode mode, int busy_timeout_ms = 10000);
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // Prepares exactly one statement; trailing SQL after it is an error.
  Statement prepare(std::string_view sql);
  // Runs one or more statements that return nothing (schema scripts, pragmas).
  void exec(std::string_view sql);
  // The statement for `sql`, prepared once per connection and kept: a writer
  // runs the same few statements thousands of times a second, and compiling
  // them each time was a large share of the coordinator's database work.
  // One statement, like prepare; only for SQL text from the program (each
  // distinct text is kept until the connection closes).
  CachedStatement cached(std::string_view sql);
  // cached + bind_all + run; returns the number of rows changed.
  template <typename... Args>
  int64_t execute(std::string_view sql, const Args&... args) {
    CachedStatement s = cached(sql);
    s->bind_all(args...);
    s->run();
    return changes();
  }

  int64_t last_insert_rowid() const;
  int64_t changes() const;
  int user_version();
  void set_user_version(int version);
  bool in_transaction() const;

  const std::string& path() const { return path_; }
  OpenMode mode() const { return mode_; }
  // Outermost transactions committed through this connection (benchmarks).
  int64_t commits() const { return commits_; }
  // The raw handle, for the rare call this layer does not wrap (sqlite3_limit).
  sqlite3* handle() { return db_; }
  // Bounds each statement step to `limit_s` seconds (0: none); see StatementDeadline.
  void set_time_limit(double limit_s);
  // Defensive mode (SQLITE_DBCONFIG_DEFENSIVE): no writable_schema, no
  // journal_mode OFF, no writes to shadow tables. Read-only connections have
  // it from the start; a writer that builds a file with journal_mode OFF
  // (egm merge) turns it on after.
  void set_defensive();

 private:
  [[noreturn]] void fail(int rc, std::string_view sql) const;

  friend class Transaction;  // counts commits_

  sqlite3* db_ = nullptr;
  std::string path_;
  OpenMode mode_ = OpenMode::read_only;
  std::unique_ptr<StatementDeadline> deadline_ = std::make_unique<StatementDeadline>();
  int64_t commits_ = 0;
  std::unordered_map<std::string, Statement> cache_;  // cached(): by SQL text
};

// BEGIN on construction, ROLLBACK in the destructor unless commit() ran.
// Readers see all of a transaction's writes or none of them.
//  immediate: takes the write lock up front, so a writer never fails half-way
//             on a lock (the writer's kind).
//  deferred:  a read snapshot: several SELECTs see one consistent state (the
//             only kind a read-only connection can open).
// Nested inside an open transaction it becomes a SAVEPOINT, so methods that
// are one transaction each compose into a larger one (all or nothing).
class Transaction {
 public:
  enum class Kind { immediate, deferred };
  explicit Transaction(Connection& connection, Kind kind = Kind::immediate);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  Connection& connection_;
  bool nested_ = false;
  bool done_ = false;
};

// A file: URI that opens `path` read-only (for ATTACH): '%', '?' and '#'
// escaped, and immutable where a read-only Connection would be (see Connection).
std::string read_only_uri(const std::string& path);

// Runs one read statement and collects its rows with their column names.
Table query_table(Connection& connection, std::string_view sql);
Table read_rows(Statement& statement);

}  // namespace egm::db
