#include "db/sqlite.h"

#include <sqlite3.h>

#include <filesystem>

#include "db/param_pack.h"
#include "util/error.h"

namespace egm::db {
namespace {

// Long scripts (the schema) would drown the message; the start says which one it was.
std::string sql_excerpt(std::string_view sql) {
  constexpr size_t kMax = 300;
  std::string s(sql.substr(0, kMax));
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (sql.size() > kMax) s += " ...";
  return s;
}

bool only_separators(std::string_view rest) {
  for (char c : rest)
    if (!(c == ';' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) return false;
  return true;
}

}  // namespace

// ---- Statement ----------------------------------------------------------------

Statement::Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql, std::string db_path)
    : db_(db), stmt_(stmt), sql_(std::move(sql)), db_path_(std::move(db_path)) {}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      sql_(std::move(other.sql_)),
      db_path_(std::move(other.db_path_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    sql_ = std::move(other.sql_);
    db_path_ = std::move(other.db_path_);
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

void Statement::fail(int rc) const {
  EGM_THROW(DbError, "{}: {} ({})\n  SQL: {}", db_path_, sqlite3_errmsg(db_), sqlite3_errstr(rc),
            sql_excerpt(sql_));
}

Statement& Statement::bind(int index, int64_t value) {
  if (int rc = sqlite3_bind_int64(stmt_, index, value); rc != SQLITE_OK) fail(rc);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (int rc = sqlite3_bind_double(stmt_, index, value); rc != SQLITE_OK) fail(rc);
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(rc);
  return *this;
}

Statement& Statement::bind(int index, Blob value) {
  int rc = sqlite3_bind_blob64(stmt_, index, value.bytes.data(), value.bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(rc);
  return *this;
}

Statement& Statement::bind(int index, std::nullptr_t) {
  if (int rc = sqlite3_bind_null(stmt_, index); rc != SQLITE_OK) fail(rc);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Leave the statement reusable and the error message intact for fail().
  std::string message = sqlite3_errmsg(db_);
  sqlite3_reset(stmt_);
  EGM_THROW(DbError, "{}: {} ({})\n  SQL: {}", db_path_, message, sqlite3_errstr(rc), sql_excerpt(sql_));
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int Statement::column_count() const { return sqlite3_column_count(stmt_); }

std::string Statement::column_name(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name ? name : "";
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (!p) return {};
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::string Statement::blob(int column) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  if (!p) return {};
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::optional<int64_t> Statement::opt_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::optional<double> Statement::opt_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return real(column);
}

std::optional<std::string> Statement::opt_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

Value Statement::value(int column) const {
  switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_NULL: return std::monostate{};
    case SQLITE_INTEGER: return int64(column);
    case SQLITE_FLOAT: return real(column);
    default: return text(column);
  }
}

bool Statement::read_only() const { return sqlite3_stmt_readonly(stmt_) != 0; }

// ---- Connection ---------------------------------------------------------------

Connection::Connection(const std::string& path, OpenMode mode, int busy_timeout_ms)
    : path_(path), mode_(mode) {
  if (mode != OpenMode::read_write_create && !std::filesystem::exists(path))
    EGM_THROW(DbError, "no results database at {} (run a sweep first, or pass --db PATH / set EGM_DB)", path);
  int flags = mode == OpenMode::read_only    ? SQLITE_OPEN_READONLY
              : mode == OpenMode::read_write ? SQLITE_OPEN_READWRITE
                                             : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  // A connection is used by one thread at a time (class comment), so SQLite's
  // per-connection mutex is not needed: without it the coordinator no longer
  // locks and unlocks it on every bind, step and column read (~10% of its loop
  // at 100,000 cells: results/BENCHMARKS.md, issue 16).
  flags |= SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    EGM_THROW(DbError, "cannot open database {}: {}", path, message);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  register_param_functions(db_);  // the `params` view and migration 5 use them (param_pack.h)
  if (mode == OpenMode::read_only) {
    // Belt and braces: even a statement that slips past sqlite3_stmt_readonly
    // cannot write, and no ATTACH reaches another file.
    exec("PRAGMA query_only = ON");
    sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, 0);
  }
}

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)), mode_(other.mode_),
      commits_(other.commits_), cache_(std::move(other.cache_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);  // closes once the cached statements below are finalized
    cache_.clear();
    cache_ = std::move(other.cache_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    mode_ = other.mode_;
    commits_ = other.commits_;
  }
  return *this;
}

Connection::~Connection() {
  // close_v2 defers the close until every statement is finalized, so the
  // order in which RAII objects die does not matter.
  if (db_) sqlite3_close_v2(db_);
}

void Connection::fail(int rc, std::string_view sql) const {
  EGM_THROW(DbError, "{}: {} ({})\n  SQL: {}", path_, sqlite3_errmsg(db_), sqlite3_errstr(rc), sql_excerpt(sql));
}

CachedStatement Connection::cached(std::string_view sql) {
  auto it = cache_.find(std::string(sql));
  if (it == cache_.end()) it = cache_.emplace(std::string(sql), prepare(sql)).first;
  it->second.reset();
  return CachedStatement(it->second);
}

Statement Connection::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, &tail);
  if (rc != SQLITE_OK) fail(rc, sql);
  if (!stmt) EGM_THROW(DbError, "{}: empty SQL statement", path_);
  Statement statement(db_, stmt, std::string(sql), path_);
  std::string_view rest = sql.substr(static_cast<size_t>(tail - sql.data()));
  if (!only_separators(rest)) {
    // Whatever follows must be comments only: one statement per prepare.
    sqlite3_stmt* next = nullptr;
    rc = sqlite3_prepare_v2(db_, rest.data(), static_cast<int>(rest.size()), &next, nullptr);
    if (next) sqlite3_finalize(next);
    if (rc != SQLITE_OK || next)
      EGM_THROW(DbError, "{}: expected one SQL statement, found more after: {}", path_,
                sql_excerpt(sql.substr(0, static_cast<size_t>(tail - sql.data()))));
  }
  return statement;
}

void Connection::exec(std::string_view sql) {
  std::string copy(sql);  // sqlite3_exec needs a NUL-terminated string
  char* message = nullptr;
  int rc = sqlite3_exec(db_, copy.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    EGM_THROW(DbError, "{}: {} ({})\n  SQL: {}", path_, text, sqlite3_errstr(rc), sql_excerpt(sql));
  }
}

int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int64_t Connection::changes() const { return sqlite3_changes64(db_); }

int Connection::user_version() {
  Statement s = prepare("PRAGMA user_version");
  s.step();
  return static_cast<int>(s.int64(0));
}

void Connection::set_user_version(int version) {
  exec("PRAGMA user_version = " + std::to_string(version));
}

bool Connection::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

// ---- Transaction --------------------------------------------------------------

Transaction::Transaction(Connection& connection, Kind kind)
    : connection_(connection), nested_(connection.in_transaction()) {
  if (nested_)
    connection_.execute("SAVEPOINT egm_nested");  // LIFO: the innermost one is always the one named
  else
    connection_.execute(kind == Kind::immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

Transaction::~Transaction() {
  if (done_) return;
  // Never throws: a failed rollback leaves SQLite to roll back on close.
  const char* sql = nested_ ? "ROLLBACK TO egm_nested; RELEASE egm_nested" : "ROLLBACK";
  sqlite3_exec(connection_.handle(), sql, nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  connection_.execute(nested_ ? "RELEASE egm_nested" : "COMMIT");
  done_ = true;
  if (!nested_) ++connection_.commits_;
}

// ---- helpers ------------------------------------------------------------------

Table read_rows(Statement& statement) {
  Table table;
  for (int c = 0; c < statement.column_count(); ++c) table.columns.push_back(statement.column_name(c));
  while (statement.step()) {
    std::vector<Value> row;
    row.reserve(table.columns.size());
    for (int c = 0; c < statement.column_count(); ++c) row.push_back(statement.value(c));
    table.rows.push_back(std::move(row));
  }
  return table;
}

Table query_table(Connection& connection, std::string_view sql) {
  Statement statement = connection.prepare(sql);
  return read_rows(statement);
}

}  // namespace egm::db
