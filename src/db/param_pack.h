// Learned parameters, packed: one row per (cell, step) snapshot instead of one
// per value (schema v5; schemas/README.md, "params").
//
// A snapshot is a layout, the list of its (module, layer, name) series with
// their index ranges, shared by every snapshot of that shape (table
// param_layouts), and its values as one BLOB in layout order: 4-byte floats
// when every value is exactly a float (what the models report), else 8-byte
// doubles, so packing never changes a value. NULL is stored as NaN (a report
// never carries a NaN: JSON has none).
//
// Every egm connection registers the SQL side (register_param_functions):
// param_values(layout, data), a table-valued function that unpacks a
// snapshot into rows, on which the read-only view `params` stands, so that
// `SELECT ... FROM params` reads as before; and the aggregates
// param_pack_layout(module, layer, idx, name) and
// param_pack_data(module, layer, idx, name, value) that migration 5 packs
// the old rows with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace egm::db {

struct ParamEntry {
  std::string module;
  int64_t layer = -1;
  int64_t idx = 0;
  std::string name;
  std::optional<double> value;  // nullopt: NULL
};

struct PackedParams {
  std::string layout;  // JSON: [[module, layer, name, first_idx, count], ...]
  std::string data;    // count x float32, or count x float64 (little-endian)
};

// One series of a layout: values idx = first .. first + count - 1 of
// (module, layer, name).
struct ParamSeries {
  std::string module;
  int64_t layer = -1;
  std::string name;
  int64_t first = 0;
  int64_t count = 0;
};

// A layout parsed once, for unpacking many snapshots of one shape (a
// layout that is not one is a DbError).
std::vector<ParamSeries> parse_param_layout(std::string_view layout);
std::vector<ParamEntry> unpack_params(const std::vector<ParamSeries>& layout, std::string_view data);

// Packs one snapshot. Order does not matter; of two entries with the same
// (module, layer, idx, name) the later wins.
PackedParams pack_params(std::vector<ParamEntry> entries);

// The entries of a packed snapshot, ordered by (module, layer, name, idx).
// A layout or data that do not fit together is a DbError.
std::vector<ParamEntry> unpack_params(std::string_view layout, std::string_view data);

// param_values, param_pack_layout and param_pack_data on this connection.
void register_param_functions(sqlite3* db);

}  // namespace egm::db
