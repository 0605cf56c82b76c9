// check_egm_schema: a database's tables, views and triggers against the schema
// egm's own migrations build at the same version.
#include "db/schema_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <vector>

#include "db/migrations.h"
#include "db/param_pack.h"
#include "util/error.h"

namespace egm::db {
namespace {

struct SchemaObject {
  std::string type;  // table, view, trigger, index
  std::string name;  // lower case: SQLite's names are case-insensitive
  std::string table;
  std::string sql;
  std::vector<std::pair<std::string, std::string>> columns;  // tables: (name, declared type), in order
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A virtual table's type in sqlite_master is 'table' too; only its SQL tells it apart (and it runs a module's code).
bool is_virtual(const std::string& sql) { return lower(sql.substr(0, 21)).rfind("create virtual table", 0) == 0; }

// Reading sqlite_master and table_xinfo runs nothing of the schema: SQLite
// parses it, and a view's columns are named without running the view.
std::map<std::string, SchemaObject> read_schema(Connection& c, const std::string& schema) {
  std::map<std::string, SchemaObject> objects;
  Statement s = c.prepare(fmt::format(
      // SQLite's internal objects (sqlite_sequence, sqlite_autoindex_*) differ with history, not with the schema: skipped.
      "SELECT type, name, tbl_name, sql FROM \"{}\".sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
      schema));
  while (s.step()) {
    SchemaObject o{s.text(0), lower(s.text(1)), lower(s.text(2)), s.text(3), {}};
    objects[o.name] = std::move(o);
  }
  for (auto& [name, o] : objects) {
    if (o.type != "table" || is_virtual(o.sql)) continue;
    // table_xinfo rather than table_info: it lists generated and hidden columns too. Column 1 is the name, 2 the declared type.
    Statement cols = c.prepare(fmt::format("PRAGMA \"{}\".table_xinfo(\"{}\")", schema, name));
    while (cols.step()) o.columns.emplace_back(cols.text(1), lower(cols.text(2)));
  }
  return objects;
}

// egm's schema at `version`, built once per version in an in-memory database.
const std::map<std::string, SchemaObject>& reference(int version) {
  // Guarded: the built map is shared by every connection of the process, whatever thread checks.
  static std::mutex mutex;
  static std::map<int, std::map<std::string, SchemaObject>> built;
  std::lock_guard lock(mutex);
  auto it = built.find(version);
  if (it != built.end()) return it->second;
  const std::vector<Migration>& all = results_migrations();
  EGM_CHECK(version >= 1 && version <= static_cast<int>(all.size()), "no egm schema version {}", version);
  // The reference is what the migrations build, never a second copy of the schema that could drift from them.
  Connection memory(":memory:", OpenMode::read_write_create);
  migrate(memory, std::vector<Migration>(all.begin(), all.begin() + version));
  return built.emplace(version, read_schema(memory, "main")).first->second;
}

std::string column_list(const std::vector<std::pair<std::string, std::string>>& columns) {
  std::string s;
  for (const auto& [name, type] : columns) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", name, type);
  return s;
}

}  // namespace

void check_egm_schema(Connection& connection, const std::string& schema, int version, const std::string& label) {
  const std::map<std::string, SchemaObject>& egm = reference(version);
  const std::map<std::string, SchemaObject> found = read_schema(connection, schema);
  auto refuse = [&](const std::string& what) {
    EGM_THROW(DbError, "{}: {}; egm reads only databases with its own schema (version {}), never code of theirs",
              label, what, version);
  };
  // Triggers and indexes are not compared: egm makes no triggers (refused below), and an index only speeds reads.
  for (const auto& [name, want] : egm) {
    if (want.type != "table" && want.type != "view") continue;
    auto it = found.find(name);
    if (it == found.end()) refuse(fmt::format("its {} {} is missing", want.type, name));
    const SchemaObject& got = it->second;
    if (want.type == "table") {
      if (got.type != "table") refuse(fmt::format("table {} is a {}, not egm's table", name, got.type));
      if (is_virtual(got.sql)) refuse(fmt::format("table {} is a virtual table, not egm's table", name));
      // egm's columns, each with egm's declared type; a column more is left alone (egm names what it reads).
      for (const auto& column : want.columns)
        if (std::find(got.columns.begin(), got.columns.end(), column) == got.columns.end())
          refuse(fmt::format("table {} lacks egm's column {} {} (it has {})", name, column.first, column.second,
                             column_list(got.columns)));
    } else if (got.type != "view" || got.sql != want.sql) {
      // A view is compared by its SQL text, since it is code that runs when the view is read.
      refuse(fmt::format("view {} is not egm's view (its SQL differs)", name));
    }
  }
  for (const auto& [name, got] : found) {
    if (got.type == "trigger") refuse(fmt::format("it has a trigger ({}, on {}), and egm makes none", name, got.table));
    // egm's own SQL functions are callable from egm's own views only (checked above, SQL for SQL):
    // a view egm does not know that calls them is refused too, so no schema of an input runs egm's code.
    if (got.type == "view" && egm.count(name) == 0) {
      const std::string sql = lower(got.sql);
      for (const char* function : {"param_values", "param_pack_layout", "param_pack_data"})
        if (sql.find(function) != std::string::npos)
          refuse(fmt::format("its view {} calls egm's own SQL function {}", name, function));
    }
  }
}

namespace {

// "id = 3" or "cell_id = 1, split = 'train', step = 20": a row by its primary key.
struct TableKey {
  std::string select;  // SQL expressions, comma-separated
  std::vector<std::string> names;
};

// table_xinfo's column 5 is the column's position in the primary key (0: not part of it).
TableKey key_of(Connection& c, const std::string& table) {
  TableKey k;
  std::vector<std::pair<int, std::string>> pk;
  Statement s = c.prepare(fmt::format("PRAGMA main.table_xinfo(\"{}\")", table));
  while (s.step())
    if (s.int64(5) > 0) pk.emplace_back(static_cast<int>(s.int64(5)), s.text(1));
  std::sort(pk.begin(), pk.end());
  // A table with no declared primary key is named by its rowid.
  if (pk.empty()) pk.emplace_back(1, "rowid");
  for (const auto& [order, name] : pk) {
    // quote() renders the key as an SQL literal, so a text key shows its quotes in the message.
    k.select += fmt::format("{}quote(x.\"{}\")", k.select.empty() ? "" : ", ", name);
    k.names.push_back(name);
  }
  return k;
}

std::string describe_row(const Statement& s, const TableKey& k) {
  std::string text;
  for (size_t i = 0; i < k.names.size(); ++i)
    text += fmt::format("{}{} = {}", i ? ", " : "", k.names[i], s.text(static_cast<int>(i)));
  return text;
}

// A value in a message, cut short (egm's error line escapes its control bytes).
std::string excerpt(const std::string& text) { return text.size() > 40 ? text.substr(0, 37) + "..." : text; }

}  // namespace

// SQLite's type affinity lets any column hold any type; this finds the first value whose type egm's reader would not accept.
void check_egm_values(Connection& connection, int version, const std::string& label) {
  for (const auto& [table, object] : reference(version)) {
    if (object.type != "table") continue;
    const TableKey key = key_of(connection, table);
    for (const auto& [column, declared] : object.columns) {
      // An integer in a REAL column is allowed: SQLite itself stores a whole REAL value as an integer on disk.
      const char* allowed = declared == "integer" ? "'integer'"
                            : declared == "real"  ? "'real', 'integer'"
                            : declared == "text"  ? "'text'"
                            : declared == "blob"  ? "'blob'"
                                                  : nullptr;
      // A column declared with no type (or another one) accepts anything.
      if (allowed == nullptr) continue;
      Statement s = connection.prepare(
          fmt::format("SELECT {0}, typeof(x.\"{1}\"), quote(x.\"{1}\") FROM main.\"{2}\" x "
                      "WHERE typeof(x.\"{1}\") NOT IN ('null', {3}) LIMIT 1",
                      key.select, column, table, allowed));
      if (s.step()) {
        const int n = static_cast<int>(key.names.size());
        EGM_THROW(DbError, "{}: table {}, column {} ({}), row {}: holds {} {}, not a{} {} value", label, table, column,
                  declared, describe_row(s, key), s.text(n), excerpt(s.text(n + 1)),
                  declared == "integer" ? "n" : "", declared);
      }
    }
  }
}

// The references egm's readers follow, checked by hand: a file made elsewhere may have been written with foreign keys off.
void check_egm_references(Connection& connection, int version, const std::string& label) {
  struct Reference {
    const char* table;
    const char* column;
    const char* target;
    const char* also;  // a further condition on the target row `r` and the row `x`
    const char* also_text;
  };
  static constexpr Reference kReferences[] = {
      {"cells", "sweep_id", "sweeps", "", ""},
      {"runs", "cell_id", "cells", "", ""},
      {"metrics", "cell_id", "cells", "", ""},
      {"metrics", "run_id", "runs", " AND r.cell_id = x.cell_id", " of its cell"},
      {"param_snapshots", "cell_id", "cells", "", ""},
      {"param_snapshots", "run_id", "runs", " AND r.cell_id = x.cell_id", " of its cell"},
      {"param_snapshots", "layout_id", "param_layouts", "", ""},
      {"events", "sweep_id", "sweeps", "", ""},
      {"events", "cell_id", "cells", " AND (x.sweep_id IS NULL OR r.sweep_id = x.sweep_id)", " of its sweep"},
      {"events", "run_id", "runs", " AND (x.cell_id IS NULL OR r.cell_id = x.cell_id)", " of its cell"},
      {"looks", "sweep_id", "sweeps", "", ""},
      {"runs", "merge_source", "merge_sources", "", ""},
      {"merge_sources", "via", "merge_sources", "", ""},
      {"runs", "reused_run", "runs", "", ""},
  };
  const auto& egm = reference(version);
  auto has_column = [&](const std::string& table, const std::string& column) {
    auto it = egm.find(table);
    if (it == egm.end() || it->second.type != "table") return false;
    for (const auto& [name, type] : it->second.columns)
      if (name == column) return true;
    return false;
  };
  for (const Reference& ref : kReferences) {
    // Only the references the file's schema version has (merge_sources and reused_run came later).
    if (!has_column(ref.table, ref.column) || !has_column(ref.target, "id")) continue;
    const TableKey key = key_of(connection, ref.table);
    Statement s = connection.prepare(
        fmt::format("SELECT {0}, quote(x.{1}) FROM main.{2} x WHERE x.{1} IS NOT NULL AND NOT EXISTS "
                    "(SELECT 1 FROM main.{3} r WHERE r.id = x.{1}{4}) LIMIT 1",
                    key.select, ref.column, ref.table, ref.target, ref.also));
    if (s.step()) {
      EGM_THROW(DbError, "{}: table {}, row {}: {} = {} names no row of {}{}", label, ref.table,
                describe_row(s, key), ref.column, s.text(static_cast<int>(key.names.size())), ref.target,
                ref.also_text);
    }
  }
}

void check_egm_layouts(Connection& connection, int version, const std::string& label) {
  if (reference(version).count("param_layouts") == 0) return;  // before v5: no packed parameters
  // Every layout is parsed (bounded, param_pack.cpp) before any snapshot's size is compared with it.
  std::map<int64_t, int64_t> values;  // layout id -> values per snapshot
  Statement layouts = connection.prepare("SELECT id, layout FROM main.param_layouts");
  while (layouts.step()) {
    int64_t n = 0;
    try {
      for (const ParamSeries& s : parse_param_layout(layouts.text(1))) n += s.count;
    } catch (const DbError& e) {
      EGM_THROW(DbError, "{}: table param_layouts, row id = {}: {}", label, layouts.int64(0), e.what());
    }
    values[layouts.int64(0)] = n;
  }
  Statement snapshots = connection.prepare("SELECT id, layout_id, length(data) FROM main.param_snapshots");
  while (snapshots.step()) {
    auto it = values.find(snapshots.int64(1));
    const int64_t bytes = snapshots.int64(2);
    // The same size rule unpack applies: floats or doubles, nothing else.
    if (it != values.end() && (bytes == 4 * it->second || bytes == 8 * it->second)) continue;
    EGM_THROW(DbError, "{}: table param_snapshots, row id = {}: {} bytes for a layout of {} values (4 or 8 bytes each)",
              label, snapshots.int64(0), bytes, it == values.end() ? int64_t{0} : it->second);
  }
}

}  // namespace egm::db
