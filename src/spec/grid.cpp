// --grid PATH=VALUES on the command line: lists and ranges parsed into a spec's
// grid axes, with the values typed as the run config's field.
#include "spec/grid.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "util/error.h"

namespace egm::spec {
namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return parts;
}

// A number as the whole of `s` (strtod/strtoll accept a prefix; we do not).
bool read_number(std::string_view s, json& out) {
  // Decimal, as JSON writes numbers: strtod would also read "0x10" (16), "0x1p-3" and "infinity".
  if (s.empty() || s.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return false;
  const std::string text(s);
  char* end = nullptr;
  const bool integral = text.find_first_of(".eE") == std::string::npos;
  if (integral) {
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() + text.size() && errno == 0) {
      out = static_cast<int64_t>(v);
      return true;
    }
  }
  errno = 0;
  const double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno != 0 || !std::isfinite(d)) return false;
  out = d;
  return true;
}

// A list item is typed by its text: a number, true/false, else a string (quotes optional, for a string that looks like a number).
json read_item(std::string_view item) {
  json v;
  if (read_number(item, v)) return v;
  if (item == "true") return true;
  if (item == "false") return false;
  if (item.size() >= 2 && item.front() == '"' && item.back() == '"') return std::string(item.substr(1, item.size() - 2));
  return std::string(item);
}

}  // namespace

std::string grid_value_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());  // shortest round-trip form
  return value.dump();
}

json GridPoint::as_json() const {
  json j = json::object();
  for (const auto& [path, value] : values) j[path] = value;
  return j;
}

std::string GridPoint::label() const {
  std::string s;
  for (const auto& [path, value] : values) {
    if (!s.empty()) s += ' ';
    s += path + "=" + grid_value_text(value);
  }
  return s;
}

std::vector<json> parse_range(std::string_view text, const std::string& what) {
  const std::string_view body = trim(text);
  const auto bad = [&](const std::string& why) {
    EGM_THROW(ConfigError, "{}: malformed range '{}': {}; expected range(start, stop[, step]) with numbers", what,
              std::string(body), why);
  };
  if (body.substr(0, 6) != "range(" || body.back() != ')') bad("not of the form range(...)");
  const std::vector<std::string_view> args = split_commas(body.substr(6, body.size() - 7));
  if (args.size() < 2 || args.size() > 3) bad(fmt::format("{} argument(s), not 2 or 3", args.size()));
  json a, b, step = 1;
  if (!read_number(args[0], a)) bad(fmt::format("start '{}' is not a number", std::string(args[0])));
  if (!read_number(args[1], b)) bad(fmt::format("stop '{}' is not a number", std::string(args[1])));
  if (args.size() == 3 && !read_number(args[2], step)) bad(fmt::format("step '{}' is not a number", std::string(args[2])));
  // The count is computed in doubles even for integers: a negative step counts down, as Python's range.
  const double start = a.get<double>(), stop = b.get<double>(), st = step.get<double>();
  if (st == 0.0) bad("step is 0");
  const double span = (stop - start) / st;
  // Python's count, with a little slack so range(0,0.3,0.1) does not gain a 0.30000000000000004.
  const double count = span <= 0 ? 0 : std::ceil(span - 1e-9);
  if (count <= 0)
    EGM_THROW(ConfigError, "{}: range '{}' is empty (stop is excluded; a negative step counts down)", what,
              std::string(body));
  // A bound on the values of one axis: a typo like range(0,1e9) must not build a billion cells.
  if (count > 10000) EGM_THROW(ConfigError, "{}: range '{}' has {:.0f} values, more than 10000", what, std::string(body), count);
  const bool integers = a.is_number_integer() && b.is_number_integer() && step.is_number_integer();
  std::vector<json> values;
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
    // Integers stay integers (an int field refuses 3.0); reals are start + i * step, not summed, so errors do not accumulate.
    if (integers)
      values.emplace_back(a.get<int64_t>() + i * step.get<int64_t>());
    else
      values.emplace_back(start + static_cast<double>(i) * st);
  }
  return values;
}

GridAxis parse_grid_arg(std::string_view arg) {
  const std::string what = fmt::format("--grid {}", std::string(arg));
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos)
    EGM_THROW(ConfigError, "{}: expected PATH=V1,V2,... or PATH=range(a,b[,step]), e.g. train.lr=1e-3,3e-4", what);
  GridAxis axis;
  axis.path = std::string(trim(arg.substr(0, eq)));
  if (axis.path.empty()) EGM_THROW(ConfigError, "{}: no field path before '='", what);
  const std::string_view rest = trim(arg.substr(eq + 1));
  const std::string where = fmt::format("--grid {}", axis.path);
  axis.where = where;
  if (rest.empty()) EGM_THROW(ConfigError, "{}: no values after '=' (an axis needs at least one)", where);
  // A value list cannot start with "range": a string value "range..." would need quotes.
  if (rest.substr(0, 5) == "range") {
    axis.values = parse_range(rest, where);
  } else {
    for (std::string_view item : split_commas(rest)) {
      if (item.empty()) EGM_THROW(ConfigError, "{}: empty value in '{}'", where, std::string(rest));
      axis.values.push_back(read_item(item));
    }
  }
  for (size_t i = 0; i < axis.values.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (axis.values[i] == axis.values[j])
        EGM_THROW(ConfigError, "{}: value {} is given twice", where, grid_value_text(axis.values[i]));
  return axis;
}

// The cartesian product, the last axis varying fastest; no axes give one empty point.
std::vector<GridPoint> grid_points(const std::vector<GridAxis>& axes) {
  std::vector<GridPoint> points(1);
  for (const auto& axis : axes) {
    std::vector<GridPoint> next;
    next.reserve(points.size() * axis.values.size());
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        GridPoint q = p;
        q.values.emplace_back(axis.path, v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  for (size_t i = 0; i < points.size(); ++i) points[i].index = static_cast<int64_t>(i);
  return points;
}

}  // namespace egm::spec
