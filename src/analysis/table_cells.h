// The typed cells the analysis tables are built from (db::Value), shared by
// the table, paper-table, render and grid units: a number that is not finite
// (no interval, not measured) and an empty optional become NULL, which CSV
// writes as an empty field and text as its null marker.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "db/table_format.h"

namespace egm::analysis::cells {

// What the analysis stores for a quantity it could not measure.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline db::Value num(double x) { return std::isfinite(x) ? db::Value(x) : db::Value(); }
inline db::Value opt_num(const std::optional<double>& x) { return x ? num(*x) : db::Value(); }
inline db::Value str(std::string s) { return db::Value(std::move(s)); }

}  // namespace egm::analysis::cells
