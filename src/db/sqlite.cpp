// The SQLite layer: opening (read-only, immutable where the folder is read-only),
// statements with bind and step, transactions, and errors that carry their SQL.
#include "db/sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
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

// True when what follows a prepared statement is only ';' and whitespace: nothing left to run.
bool only_separators(std::string_view rest) {
  for (char c : rest)
    if (!(c == ';' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) return false;
  return true;
}

// What a failed call means for the user, when SQLite's own words would mislead
// ("database is locked" read as "not an egm database"; "interrupted" with no
// reason): empty when SQLite's message says it well enough.
std::string plain_reason(int rc, const StatementDeadline* deadline) {
  // Extended result codes are on (the Connection's constructor): the low byte is the primary code.
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "locked by another process (a writer holds it); try again when it is done";
    case SQLITE_INTERRUPT:
      if (deadline && deadline->limit_s > 0)
        return fmt::format("a statement ran past the {:g} s limit and was stopped (a crafted schema or a very large "
                           "file? EGM_DB_TIME_LIMIT_S raises the limit)",
                           deadline->limit_s);
      return {};
    default: break;
  }
  if (rc == SQLITE_READONLY_ROLLBACK)
    return "it has an unfinished transaction (a hot journal) that only a writer can roll back: open it once with "
           "write access (sqlite3 FILE 'PRAGMA quick_check'), then try again";
  return {};
}

// SQLite's progress handler: a non-zero return interrupts the running statement (SQLITE_INTERRUPT).
int stop_after_deadline(void* arg) {
  const auto* d = static_cast<const StatementDeadline*>(arg);
  if (d->limit_s <= 0) return 0;
  const double ran = std::chrono::duration<double>(std::chrono::steady_clock::now() - d->started).count();
  return ran > d->limit_s ? 1 : 0;
}

// Whether a read-only open of `path` must be immutable: its folder cannot be
// written (a read-only file system, another user's folder), so SQLite could
// not make the -shm file a WAL database needs. Refused when a -wal file with
// content waits beside it: immutable would not see those commits.
bool needs_immutable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::absolute(path, ec).parent_path();
  if (::access(dir.c_str(), W_OK) == 0) return false;
  if (fs::exists(path + "-shm", ec)) return false;  // SQLite reads an existing -shm read-only
  // No -wal file sets ec, which is as good as an empty one.
  const auto wal = fs::file_size(path + "-wal", ec);
  EGM_REQUIRE(ec || wal == 0, DbError,
              "{} is in a folder egm cannot write (a read-only file system?) and has a write-ahead log ({}-wal, {} "
              "bytes) that SQLite cannot replay there without its -shm file: copy the database with its -wal file to "
              "a writable folder and read the copy",
              path, path, wal);
  return true;
}

// file:PATH?mode=ro[&immutable=1], '%', '?' and '#' escaped.
// Without the escapes SQLite would read '?' as the start of the URI's query and '#' as a fragment.
std::string uri_for(const std::string& path, bool immutable) {
  std::string uri = "file:";
  for (char ch : path) {
    if (ch == '%') uri += "%25";
    else if (ch == '?') uri += "%3F";
    else if (ch == '#') uri += "%23";
    else uri += ch;
  }
  return uri + "?mode=ro" + (immutable ? "&immutable=1" : "");
}

}  // namespace

// The read-only verbs' per-statement limit in seconds: 600 unless EGM_DB_TIME_LIMIT_S says otherwise.
double statement_time_limit_s() {
  const char* env = std::getenv("EGM_DB_TIME_LIMIT_S");
  if (env == nullptr || *env == '\0') return 600;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  EGM_REQUIRE(end != env && *end == '\0' && std::isfinite(v) && v > 0, ConfigError,
              "EGM_DB_TIME_LIMIT_S='{}': expected a positive number of seconds", env);
  return v;
}

// For a read-only ATTACH (merge's inputs): the same immutable rule as a read-only open.
std::string read_only_uri(const std::string& path) { return uri_for(path, needs_immutable(path)); }

// ---- Statement ----------------------------------------------------------------

Statement::Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql, std::string db_path,
                     StatementDeadline* deadline)
    : db_(db), deadline_(deadline), stmt_(stmt), sql_(std::move(sql)), db_path_(std::move(db_path)) {}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      deadline_(std::exchange(other.deadline_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      sql_(std::move(other.sql_)),
      db_path_(std::move(other.db_path_)) {}

// The statement this one held is finalized before it takes the other's.
Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    deadline_ = std::exchange(other.deadline_, nullptr);
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
  if (const std::string plain = plain_reason(rc, deadline_); !plain.empty())
    EGM_THROW(DbError, "{}: {}\n  SQL: {}", db_path_, plain, sql_excerpt(sql_));
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

// SQLITE_TRANSIENT: SQLite copies the bytes, since a string_view's text may die before the step.
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

// Returns true while there is a row; throws DbError, with the SQL, on any failure.
bool Statement::step() {
  if (deadline_ && deadline_->limit_s > 0) deadline_->start();  // the writer's steps (no limit) read no clock
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Leave the statement reusable and the error message intact for fail().
  std::string message = sqlite3_errmsg(db_);
  sqlite3_reset(stmt_);
  if (const std::string plain = plain_reason(rc, deadline_); !plain.empty())
    EGM_THROW(DbError, "{}: {}\n  SQL: {}", db_path_, plain, sql_excerpt(sql_));
  EGM_THROW(DbError, "{}: {} ({})\n  SQL: {}", db_path_, message, sqlite3_errstr(rc), sql_excerpt(sql_));
}

void Statement::run() {
  while (step()) {
  }
}

// Both: reset rewinds the statement, clear_bindings makes an unbound parameter NULL, not the last value.
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

// column_bytes after column_text: the length of the text, which may hold NUL bytes.
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

// A text or blob value is not a number: absent, with *mismatch set so the caller can count it.
std::optional<double> Statement::opt_number(int column, bool* mismatch) const {
  const int type = sqlite3_column_type(stmt_, column);
  if (type == SQLITE_FLOAT || type == SQLITE_INTEGER) return real(column);
  if (type != SQLITE_NULL && mismatch) *mismatch = true;
  return std::nullopt;
}

std::optional<std::string> Statement::opt_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

Value Statement::value(int column) const {
  // A blob reads as text: the query verbs print it and never write it back.
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
  // Checked first: SQLite's own "unable to open" does not tell the user what to do.
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
  // A read-only file in a folder egm cannot write is opened immutable (no -shm needed).
  std::string name = path;
  if (mode == OpenMode::read_only && needs_immutable(path)) {
    name = uri_for(path, /*immutable=*/true);
    flags |= SQLITE_OPEN_URI;
  }
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    EGM_THROW(DbError, "cannot open database {}: {}", path, message);
  }
  // Extended codes tell SQLITE_READONLY_ROLLBACK apart (plain_reason).
  sqlite3_extended_result_codes(db_, 1);
  // A writer waits for another's lock up to busy_timeout_ms before SQLITE_BUSY.
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  // The file's schema may come from elsewhere: its views and triggers may call
  // only functions marked innocuous (egm's param functions are; they check
  // what they read, param_pack.h).
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  register_param_functions(db_);  // the `params` view and migration 5 use them (param_pack.h)
  // Checked every 10,000 VM instructions: often enough to stop in time, rarely enough to cost nothing.
  // deadline_ is heap-held, so the pointer survives a move of the Connection.
  sqlite3_progress_handler(db_, 10000, stop_after_deadline, deadline_.get());
  if (mode == OpenMode::read_only) {
    // Belt and braces: even a statement that slips past sqlite3_stmt_readonly
    // cannot write, and no ATTACH reaches another file.
    set_defensive();
    set_time_limit(statement_time_limit_s());
    exec("PRAGMA query_only = ON");
    sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, 0);
  }
}

void Connection::set_time_limit(double limit_s) { deadline_->limit_s = limit_s; }

void Connection::set_defensive() { sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr); }

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)), mode_(other.mode_),
      deadline_(std::move(other.deadline_)), commits_(other.commits_), cache_(std::move(other.cache_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);  // closes once the cached statements below are finalized
    // The old cached statements are finalized here, which lets the deferred close finish.
    cache_.clear();
    cache_ = std::move(other.cache_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    mode_ = other.mode_;
    commits_ = other.commits_;
    deadline_ = std::move(other.deadline_);
  }
  return *this;
}

Connection::~Connection() {
  // close_v2 defers the close until every statement is finalized, so the
  // order in which RAII objects die does not matter.
  if (db_) sqlite3_close_v2(db_);
}

void Connection::fail(int rc, std::string_view sql) const {
  if (const std::string plain = plain_reason(rc, deadline_.get()); !plain.empty())
    EGM_THROW(DbError, "{}: {}\n  SQL: {}", path_, plain, sql_excerpt(sql));
  EGM_THROW(DbError, "{}: {} ({})\n  SQL: {}", path_, sqlite3_errmsg(db_), sqlite3_errstr(rc), sql_excerpt(sql));
}

CachedStatement Connection::cached(std::string_view sql) {
  // Keyed by the SQL text: the statement is prepared once per connection and reset on each use.
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
  // SQLite returns OK and no statement for SQL that holds only comments or whitespace.
  if (!stmt) EGM_THROW(DbError, "{}: empty SQL statement", path_);
  Statement statement(db_, stmt, std::string(sql), path_, deadline_.get());
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
  // exec runs every statement of a script (the migrations); prepare takes exactly one.
  std::string copy(sql);  // sqlite3_exec needs a NUL-terminated string
  char* message = nullptr;
  if (deadline_->limit_s > 0) deadline_->start();
  int rc = sqlite3_exec(db_, copy.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    if (const std::string plain = plain_reason(rc, deadline_.get()); !plain.empty()) text = plain;
    EGM_THROW(DbError, "{}: {} ({})\n  SQL: {}", path_, text, sqlite3_errstr(rc), sql_excerpt(sql));
  }
}

int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int64_t Connection::changes() const { return sqlite3_changes64(db_); }

// The schema version egm keeps in the file's header (0 on a new file).
int Connection::user_version() {
  Statement s = prepare("PRAGMA user_version");
  s.step();
  return static_cast<int>(s.int64(0));
}

void Connection::set_user_version(int version) {
  exec("PRAGMA user_version = " + std::to_string(version));
}

// SQLite is in autocommit mode exactly when no transaction is open.
bool Connection::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

// ---- Transaction --------------------------------------------------------------

// Inside an open transaction a Transaction is a savepoint, so functions that take one compose.
Transaction::Transaction(Connection& connection, Kind kind)
    : connection_(connection), nested_(connection.in_transaction()) {
  if (nested_)
    connection_.execute("SAVEPOINT egm_nested");  // LIFO: the innermost one is always the one named
  else
    // IMMEDIATE takes the write lock at once, so a writer never fails later upgrading from a read lock;
    // DEFERRED is for read snapshots.
    connection_.execute(kind == Kind::immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

Transaction::~Transaction() {
  if (done_) return;
  // Never throws: a failed rollback leaves SQLite to roll back on close.
  const char* sql = nested_ ? "ROLLBACK TO egm_nested; RELEASE egm_nested" : "ROLLBACK";
  sqlite3_exec(connection_.handle(), sql, nullptr, nullptr, nullptr);
}

// Only a real COMMIT is counted: a savepoint's release writes nothing to disk.
void Transaction::commit() {
  connection_.execute(nested_ ? "RELEASE egm_nested" : "COMMIT");
  done_ = true;
  if (!nested_) ++connection_.commits_;
}

// ---- helpers ------------------------------------------------------------------

// The whole result in memory, column names first: for the query verbs and tests, not for big tables.
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
