// egm query: one read-only SQL statement against the results database, printed
// as a table, CSV or JSON. Three locks keep it read-only (db/read_only_query.h):
// the statement must be one SQLite itself calls read-only (else a clear error
// before it runs), the file is opened SQLITE_OPEN_READONLY (without ATTACH),
// and PRAGMA query_only is on.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/read_verbs.h"
#include "db/read_only_query.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "db/table_format.h"
#include "util/error.h"
#include "util/terminal_text.h"

namespace egm::cli {
namespace {

struct QueryOptions {
  std::string sql;
  std::string db;
  std::string format = "table";
};

void run_query(const QueryOptions& o) {
  const db::Format format = db::parse_format(o.format);
  // A bare Connection, not a ResultsDb: the query reads whatever the file holds, without egm's schema check.
  db::Connection connection(o.db.empty() ? db::default_db_path() : o.db, db::OpenMode::read_only);
  db::Statement statement = db::prepare_read_only_query(connection, o.sql);
  const db::Table table = db::read_rows(statement);
  db::FormatOptions options;
  // NULL spelled out, as SQL shows it: an empty cell could also be an empty string.
  options.null_text = "NULL";
  print_table(table, format, options);
}

}  // namespace

void register_query_command(CLI::App& app) {
  auto opts = std::make_shared<QueryOptions>();
  auto* cmd = app.add_subcommand("query", "run one read-only SQL statement on the results database");
  cmd->add_option("sql", opts->sql, "the SQL statement, e.g. \"SELECT variant, avg(final_val) FROM cells GROUP BY 1\"")
      ->required();
  add_db_flag(cmd, opts->db);
  cmd->add_option("--format", opts->format, "table, csv or json")->capture_default_str();
  cmd->footer("Tables: sweeps, cells, runs, metrics, params, events (schemas/README.md). "
              "Times are UNIX seconds: datetime(started_at, 'unixepoch').");
  cmd->callback([opts] { run_query(*opts); });
}

}  // namespace egm::cli
