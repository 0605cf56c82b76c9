// Learned parameters packed into one row per snapshot: the layout of (module,
// layer, name) series, the values as 4-byte floats or 8-byte doubles, and the SQL functions.
#include "db/param_pack.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "util/error.h"
#include "util/json_limits.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "param_pack stores values little-endian by copying them: add byte swapping for this target"
#endif

namespace egm::db {
namespace {

using Segment = ParamSeries;

// The most values one snapshot may hold: the paper's models report a few
// thousand learned scalars; a layout that claims more is not egm's (a crafted
// count would otherwise size an allocation: 2^63-1 + 2^63-1 + 3 wraps to 1).
constexpr int64_t kMaxSnapshotValues = int64_t{1} << 24;

// A stored layout, checked before a byte of its snapshot is read: JSON read
// with the bounded reader (depth, size), every segment [module, layer, name,
// first_idx, count] typed, every count positive, and the total within
// kMaxSnapshotValues without overflow.
std::vector<Segment> parse_layout(std::string_view layout) {
  std::vector<Segment> segments;
  nlohmann::json j;
  try {
    j = parse_json(layout, JsonLimits::machine(), "param layout");
  } catch (const JsonError& e) {
    // Rethrown as DbError: a bad layout is a damaged or foreign database, not a bad input file.
    EGM_THROW(DbError, "{}", e.what());
  }
  EGM_REQUIRE(j.is_array(), DbError, "param layout is not a JSON array");
  int64_t total = 0;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& s = j[i];
    EGM_REQUIRE(s.is_array() && s.size() == 5 && s[0].is_string() && s[1].is_number_integer() && s[2].is_string() &&
                    s[3].is_number_integer() && s[4].is_number_integer(),
                DbError, "param layout: segment {} is not [module, layer, name, first_idx, count]", i);
    Segment g{s[0].get<std::string>(), s[1].get<int64_t>(), s[2].get<std::string>(), s[3].get<int64_t>(),
              s[4].get<int64_t>()};
    // first + count must not overflow either: unpack computes first + i for every value.
    int64_t last = 0;
    EGM_REQUIRE(g.count > 0 && g.count <= kMaxSnapshotValues && g.first >= 0 &&
                    !__builtin_add_overflow(g.first, g.count, &last) &&
                    !__builtin_add_overflow(total, g.count, &total) && total <= kMaxSnapshotValues,
                DbError, "param layout: segment {} counts {} values from index {} (at most {} values a snapshot)", i,
                g.count, g.first, kMaxSnapshotValues);
    segments.push_back(std::move(g));
  }
  return segments;
}

int64_t layout_size(const std::vector<Segment>& segments) {
  int64_t n = 0;
  for (const auto& s : segments) n += s.count;
  return n;
}

std::vector<ParamEntry> unpack(const std::vector<Segment>& segments, std::string_view data) {
  const int64_t n = layout_size(segments);  // at most kMaxSnapshotValues: parse_layout checked it
  // The width is not stored: the blob's size says it (4 * n bytes for floats, 8 * n for doubles).
  const bool f32 = static_cast<int64_t>(data.size()) == 4 * n;
  EGM_REQUIRE(f32 || static_cast<int64_t>(data.size()) == 8 * n, DbError,
              "param snapshot: {} bytes for {} values (neither 4 nor 8 bytes each)", data.size(), n);
  std::vector<ParamEntry> out;
  out.reserve(static_cast<size_t>(n));
  size_t at = 0;
  for (const auto& s : segments)
    for (int64_t i = 0; i < s.count; ++i) {
      double v;
      if (f32) {
        float f;
        std::memcpy(&f, data.data() + at, 4);
        at += 4;
        v = f;
      } else {
        std::memcpy(&v, data.data() + at, 8);
        at += 8;
      }
      // NaN is how pack_params stores a missing value, so it reads back as absent.
      out.push_back({s.module, s.layer, s.first + i, s.name, std::isnan(v) ? std::nullopt : std::optional(v)});
    }
  return out;
}

}  // namespace

PackedParams pack_params(std::vector<ParamEntry> entries) {
  // Later entries win: a stable sort by key, then keep the last of each key.
  std::stable_sort(entries.begin(), entries.end(), [](const ParamEntry& a, const ParamEntry& b) {
    return std::tie(a.module, a.layer, a.name, a.idx) < std::tie(b.module, b.layer, b.name, b.idx);
  });
  // Equal keys are adjacent after the sort; assigning keeps the later entry's value.
  std::vector<ParamEntry> unique;
  unique.reserve(entries.size());
  for (auto& e : entries) {
    if (!unique.empty() && unique.back().module == e.module && unique.back().layer == e.layer &&
        unique.back().name == e.name && unique.back().idx == e.idx)
      unique.back() = std::move(e);
    else
      unique.push_back(std::move(e));
  }
  // Consecutive indices of one (module, layer, name) share one segment, so a vector costs one layout entry.
  nlohmann::json layout = nlohmann::json::array();
  bool f32 = true;
  for (size_t i = 0; i < unique.size(); ++i) {
    const ParamEntry& e = unique[i];
    const bool continues = i > 0 && unique[i - 1].module == e.module && unique[i - 1].layer == e.layer &&
                           unique[i - 1].name == e.name && unique[i - 1].idx + 1 == e.idx;
    if (continues)
      layout.back()[4] = layout.back()[4].get<int64_t>() + 1;
    else
      layout.push_back({e.module, e.layer, e.name, e.idx, 1});
    // Floats only if every value survives the round trip exactly; one that does not makes the whole snapshot doubles.
    if (e.value && !std::isnan(*e.value) &&
        (std::isinf(*e.value) || static_cast<double>(static_cast<float>(*e.value)) != *e.value))
      f32 = false;
  }
  PackedParams p;
  p.layout = layout.dump();
  p.data.resize(unique.size() * (f32 ? 4 : 8));
  char* out = p.data.data();
  for (const ParamEntry& e : unique) {
    // A missing value is stored as NaN (read back as absent by unpack).
    const double v = e.value ? *e.value : std::numeric_limits<double>::quiet_NaN();
    if (f32) {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      out += 4;
    } else {
      std::memcpy(out, &v, 8);
      out += 8;
    }
  }
  return p;
}

std::vector<ParamEntry> unpack_params(std::string_view layout, std::string_view data) {
  return unpack(parse_layout(layout), data);
}

std::vector<ParamSeries> parse_param_layout(std::string_view layout) { return parse_layout(layout); }

std::vector<ParamEntry> unpack_params(const std::vector<ParamSeries>& layout, std::string_view data) {
  return unpack(layout, data);
}

// ---- SQL: param_values(layout, data), an eponymous table-valued function ----------

namespace {

// The column order of the CREATE TABLE in values_connect; the last two are the hidden arguments.
enum PackedColumn { kModule, kLayer, kIdx, kName, kValue, kLayout, kData };

struct ValuesTable {
  sqlite3_vtab base{};
  // Parsed layouts by their text: a sweep has a handful (one per variant's shape).
  std::map<std::string, std::vector<Segment>, std::less<>> layouts;
};

struct ValuesCursor {
  sqlite3_vtab_cursor base{};
  std::vector<ParamEntry> rows;
  size_t at = 0;
};

int values_connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
  const int rc = sqlite3_declare_vtab(
      db, "CREATE TABLE x(module TEXT, layer INTEGER, idx INTEGER, name TEXT, value REAL, layout HIDDEN, data HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  auto* t = new ValuesTable();
  *out = &t->base;
  // Innocuous: usable from a schema's views with SQLITE_DBCONFIG_TRUSTED_SCHEMA off (sqlite.cpp).
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  return SQLITE_OK;
}

int values_disconnect(sqlite3_vtab* vtab) {
  delete reinterpret_cast<ValuesTable*>(vtab);
  return SQLITE_OK;
}

// Both hidden arguments are required and equality-constrained (as json_each's).
int values_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  int layout = -1, data = -1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (c.iColumn == kLayout) {
      if (!c.usable) return SQLITE_CONSTRAINT;
      layout = i;
    } else if (c.iColumn == kData) {
      if (!c.usable) return SQLITE_CONSTRAINT;
      data = i;
    }
  }
  // SQLITE_CONSTRAINT tells the planner this plan is unusable; with no plan at all the query fails.
  if (layout < 0 || data < 0) return SQLITE_CONSTRAINT;
  // The two values reach values_filter as argv[0] (layout) and argv[1] (data); omit: SQLite need not recheck them.
  info->aConstraintUsage[layout].argvIndex = 1;
  info->aConstraintUsage[layout].omit = 1;
  info->aConstraintUsage[data].argvIndex = 2;
  info->aConstraintUsage[data].omit = 1;
  info->estimatedCost = 100;
  info->estimatedRows = 100;
  return SQLITE_OK;
}

int values_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  auto* c = new ValuesCursor();
  *out = &c->base;
  return SQLITE_OK;
}

int values_close(sqlite3_vtab_cursor* cursor) {
  delete reinterpret_cast<ValuesCursor*>(cursor);
  return SQLITE_OK;
}

int values_filter(sqlite3_vtab_cursor* cursor, int, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<ValuesCursor*>(cursor);
  auto* t = reinterpret_cast<ValuesTable*>(cursor->pVtab);
  c->rows.clear();
  c->at = 0;
  if (argc != 2 || sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)
    return SQLITE_OK;  // no snapshot: no rows
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  const std::string_view layout(text ? text : "", static_cast<size_t>(sqlite3_value_bytes(argv[0])));
  // value_bytes after value_blob, as SQLite requires, so the length is the blob's.
  const void* blob = sqlite3_value_blob(argv[1]);
  const std::string_view data(static_cast<const char*>(blob), static_cast<size_t>(sqlite3_value_bytes(argv[1])));
  try {
    auto it = t->layouts.find(layout);
    if (it == t->layouts.end()) {
      // A bound on the cache: a crafted database with many layouts must not grow it without end.
      if (t->layouts.size() > 1000) t->layouts.clear();
      it = t->layouts.emplace(std::string(layout), parse_layout(layout)).first;
    }
    c->rows = unpack(it->second, data);
  } catch (const std::exception& e) {
    // zErrMsg is how a virtual table reports its error text; SQLite frees it once reported.
    sqlite3_free(cursor->pVtab->zErrMsg);
    cursor->pVtab->zErrMsg = sqlite3_mprintf("param_values: %s", e.what());
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

int values_next(sqlite3_vtab_cursor* cursor) {
  ++reinterpret_cast<ValuesCursor*>(cursor)->at;
  return SQLITE_OK;
}

int values_eof(sqlite3_vtab_cursor* cursor) {
  auto* c = reinterpret_cast<ValuesCursor*>(cursor);
  return c->at >= c->rows.size();
}

int values_column(sqlite3_vtab_cursor* cursor, sqlite3_context* ctx, int column) {
  auto* c = reinterpret_cast<ValuesCursor*>(cursor);
  const ParamEntry& e = c->rows[c->at];
  switch (column) {
    case kModule: sqlite3_result_text(ctx, e.module.data(), static_cast<int>(e.module.size()), SQLITE_TRANSIENT); break;
    case kLayer: sqlite3_result_int64(ctx, e.layer); break;
    case kIdx: sqlite3_result_int64(ctx, e.idx); break;
    case kName: sqlite3_result_text(ctx, e.name.data(), static_cast<int>(e.name.size()), SQLITE_TRANSIENT); break;
    case kValue:
      if (e.value)
        sqlite3_result_double(ctx, *e.value);
      else
        sqlite3_result_null(ctx);
      break;
    default: sqlite3_result_null(ctx); break;
  }
  return SQLITE_OK;
}

// The row's position in the snapshot: unique within one call, which is all SQLite needs.
int values_rowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(reinterpret_cast<ValuesCursor*>(cursor)->at);
  return SQLITE_OK;
}

sqlite3_module make_values_module() {
  sqlite3_module m{};
  m.iVersion = 0;
  m.xCreate = nullptr;  // eponymous only: no CREATE VIRTUAL TABLE
  m.xConnect = values_connect;
  m.xBestIndex = values_best_index;
  m.xDisconnect = values_disconnect;
  m.xDestroy = values_disconnect;
  m.xOpen = values_open;
  m.xClose = values_close;
  m.xFilter = values_filter;
  m.xNext = values_next;
  m.xEof = values_eof;
  m.xColumn = values_column;
  m.xRowid = values_rowid;
  return m;
}

const sqlite3_module kValuesModule = make_values_module();

// ---- SQL: param_pack_layout / param_pack_data, the aggregates of migration 5 ----------

// SQLite's aggregate context is zeroed raw memory, so it holds only a pointer to the C++ vector.
struct PackState {
  std::vector<ParamEntry>* entries;
};

void pack_step(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto* state = static_cast<PackState*>(sqlite3_aggregate_context(ctx, sizeof(PackState)));
  if (!state) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!state->entries) state->entries = new std::vector<ParamEntry>();
  ParamEntry e;
  const auto* module = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  const auto* name = reinterpret_cast<const char*>(sqlite3_value_text(argv[3]));
  e.module = module ? module : "";
  e.layer = sqlite3_value_int64(argv[1]);
  e.idx = sqlite3_value_int64(argv[2]);
  e.name = name ? name : "";
  // param_pack_layout takes 4 arguments (no value): the layout does not depend on the values.
  if (argc > 4 && sqlite3_value_type(argv[4]) != SQLITE_NULL) e.value = sqlite3_value_double(argv[4]);
  state->entries->push_back(std::move(e));
}

template <bool kLayout>
void pack_final(sqlite3_context* ctx) {
  auto* state = static_cast<PackState*>(sqlite3_aggregate_context(ctx, 0));
  if (!state || !state->entries) {
    sqlite3_result_null(ctx);
    return;
  }
  // Owned from here, so the vector is freed whether packing succeeds or throws.
  std::unique_ptr<std::vector<ParamEntry>> entries(state->entries);
  state->entries = nullptr;
  try {
    const PackedParams p = pack_params(std::move(*entries));
    if (kLayout)
      sqlite3_result_text(ctx, p.layout.data(), static_cast<int>(p.layout.size()), SQLITE_TRANSIENT);
    else
      sqlite3_result_blob(ctx, p.data.data(), static_cast<int>(p.data.size()), SQLITE_TRANSIENT);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

}  // namespace

// Called on every connection: functions and modules are per connection in SQLite.
void register_param_functions(sqlite3* db) {
  int rc = sqlite3_create_module(db, "param_values", &kValuesModule, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "param_pack_layout", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                 nullptr, nullptr, pack_step, pack_final<true>);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "param_pack_data", 5, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                 nullptr, nullptr, pack_step, pack_final<false>);
  EGM_CHECK(rc == SQLITE_OK, "registering the param_values/param_pack SQL functions: {}", sqlite3_errstr(rc));
}

}  // namespace egm::db
