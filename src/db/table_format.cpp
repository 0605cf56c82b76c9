// A db::Table as aligned text (display width, one line per cell), CSV or JSON,
// reals written so they read back to the same double.
#include "db/table_format.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "util/enum_names.h"
#include "util/error.h"

namespace egm::db {
namespace {

bool is_number(const Value& v) {
  return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
}

// Display width in code points (UTF-8 continuation bytes do not count).
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// A table row is one line: control characters (multi-line errors) become spaces.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return s;
}

// fmt's "{}" is the shortest text that parses back to the same double; nan and inf have no JSON or CSV number form.
std::string round_trip(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

std::string render_text(const Table& t, const FormatOptions& options) {
  const size_t n = t.columns.size();
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width(n, 0);
  std::vector<bool> right(n, false), any_text(n, false), any_number(n, false);
  for (size_t c = 0; c < n; ++c) width[c] = display_width(t.columns[c]);
  for (const auto& row : t.rows) {
    std::vector<std::string> line;
    for (size_t c = 0; c < n; ++c) {
      // A short row (a hand-built Table) pads with NULLs rather than reading past its end.
      const Value& v = c < row.size() ? row[c] : Value{};
      line.push_back(one_line(value_text(v, options)));
      width[c] = std::max(width[c], display_width(line.back()));
      if (is_number(v)) any_number[c] = true;
      if (std::holds_alternative<std::string>(v)) any_text[c] = true;
    }
    cells.push_back(std::move(line));
  }
  // Numbers right-aligned so digits line up; a column with any text stays left.
  for (size_t c = 0; c < n; ++c) right[c] = any_number[c] && !any_text[c];

  auto emit = [&](const std::vector<std::string>& line, std::string& out) {
    std::string s;
    for (size_t c = 0; c < n; ++c) {
      if (c) s += "  ";
      size_t pad = width[c] - display_width(line[c]);
      if (right[c]) s.append(pad, ' ');
      s += line[c];
      if (!right[c]) s.append(pad, ' ');
    }
    // Trailing padding of the last column is dropped so lines do not end in spaces.
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out += s;
    out += '\n';
  };
  std::string out;
  emit(t.columns, out);
  std::vector<std::string> rule;
  for (size_t c = 0; c < n; ++c) rule.push_back(std::string(width[c], '-'));
  emit(rule, out);
  for (const auto& line : cells) emit(line, out);
  return out;
}

std::string render_csv(const Table& t, bool header) {
  std::string out;
  auto emit = [&](const std::vector<std::string>& fields) {
    for (size_t c = 0; c < fields.size(); ++c) {
      if (c) out += ',';
      out += csv_field(fields[c]);
    }
    out += '\n';
  };
  if (header) emit(t.columns);
  for (const auto& row : t.rows) {
    std::vector<std::string> fields;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const Value& v = c < row.size() ? row[c] : Value{};
      // CSV is for machines: reals in full (round_trip), NULL as an empty field, not the table's display text.
      if (std::holds_alternative<double>(v))
        fields.push_back(round_trip(std::get<double>(v)));
      else if (std::holds_alternative<std::monostate>(v))
        fields.emplace_back();
      else
        fields.push_back(value_text(v));
    }
    emit(fields);
  }
  return out;
}

std::string render_json(const Table& t) {
  // Duplicate column names (SELECT a.id, b.id) would collapse in an object.
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const auto& name : t.columns) {
    std::string key = name;
    for (int k = 2; seen.count(key); ++k) key = fmt::format("{}:{}", name, k);
    seen.insert(key);
    keys.push_back(key);
  }
  // ordered_json keeps the columns in the SELECT's order rather than sorting the keys.
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const auto& row : t.rows) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (size_t c = 0; c < keys.size(); ++c) {
      const Value& v = c < row.size() ? row[c] : Value{};
      if (const auto* i = std::get_if<int64_t>(&v))
        object[keys[c]] = *i;
      else if (const auto* d = std::get_if<double>(&v))
        // JSON has no NaN or infinity: they become null.
        object[keys[c]] = std::isfinite(*d) ? nlohmann::ordered_json(*d) : nlohmann::ordered_json(nullptr);
      else if (const auto* s = std::get_if<std::string>(&v))
        object[keys[c]] = *s;
      else
        object[keys[c]] = nullptr;
    }
    array.push_back(std::move(object));
  }
  // Text that is not valid UTF-8 (a blob) is replaced rather than aborting the output.
  return array.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

Format parse_format(const std::string& name) {
  constexpr const char* kNames[] = {"table", "csv", "json"};  // in enum order
  return parse_enum<Format, ConfigError>(name, kNames, "output format");
}

std::string value_text(const Value& value, const FormatOptions& options) {
  if (std::holds_alternative<std::monostate>(value)) return options.null_text;
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  // Display only: float_digits significant digits; CSV and JSON write reals in full.
  if (const auto* d = std::get_if<double>(&value)) {
    if (!std::isfinite(*d)) return round_trip(*d);
    // Large values (UNIX times, token counts) in %g would lose their last
    // digits to an exponent: print them in full with two decimals.
    if (std::fabs(*d) >= std::pow(10.0, options.float_digits) && std::fabs(*d) < 1e15)
      return fmt::format("{:.2f}", *d);
    return fmt::format("{:.{}g}", *d, options.float_digits);
  }
  return std::get<std::string>(value);
}

// "?" for an unknown or negative duration (an ETA with nothing to go on); else the two largest units.
std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 86400) return fmt::format("{}d {:02}h", s / 86400, (s % 86400) / 3600);
  if (s >= 3600) return fmt::format("{}h {:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

// gmtime_r, not gmtime: the static buffer of gmtime is not thread-safe.
std::string format_utc(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

std::string format_table(const Table& table, Format format, const FormatOptions& options) {
  switch (format) {
    case Format::table: return render_text(table, options);
    case Format::csv: return render_csv(table, options.header);
    case Format::json: return render_json(table);
  }
  // Unreachable for a valid Format; keeps compilers that do not see the switch is exhaustive quiet.
  return {};
}

}  // namespace egm::db
