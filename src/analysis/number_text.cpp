// How numbers read in text, Markdown and LaTeX: p-values, mean +- half-width,
// signed deltas with their intervals, LaTeX escaping.
#include "analysis/number_text.h"

#include <fmt/format.h>

#include <cmath>

namespace egm::analysis::human {

std::string loss(double x) { return std::isfinite(x) ? fmt::format("{:.4f}", x) : "-"; }
std::string signed_loss(double x) { return std::isfinite(x) ? fmt::format("{:+.4f}", x) : "-"; }
std::string interval(double low, double high) { return fmt::format("[{}, {}]", signed_loss(low), signed_loss(high)); }
std::string plain_interval(double low, double high) { return fmt::format("[{}, {}]", loss(low), loss(high)); }
std::string p_text(double p) {
  if (!std::isfinite(p)) return "-";
  // Below 1e-4 only the magnitude matters: two digits (1.2e-05), where .3g would print three.
  return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.3g}", p);
}
std::string share(double x) { return std::isfinite(x) ? fmt::format("{:.0f}%", 100.0 * x) : "-"; }

std::string mean_pm(const stats::Summary& s) {
  if (s.n == 0) return "not measured";
  // One seed: the mean with no ±, and the reason.
  if (!s.has_interval) return fmt::format("{} (1 seed, no interval)", loss(s.mean));
  // The Student-t interval is symmetric, so ci_high - mean is its half-width.
  return fmt::format("{} ± {} ({})", loss(s.mean), loss(s.ci_high - s.mean), s.n);
}

std::string delta_pm(const Estimate& e) {
  if (!e.has_interval) return fmt::format("{} (no interval)", signed_loss(e.estimate));
  return fmt::format("{} ± {}", signed_loss(e.estimate), loss(e.ci_high - e.estimate));
}

std::string latex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '_': out += "\\_"; break;
      case '%': out += "\\%"; break;
      case '&': out += "\\&"; break;
      case '#': out += "\\#"; break;
      case '$': out += "\\$"; break;
      case '{': out += "\\{"; break;
      case '}': out += "\\}"; break;
      // ~, ^ and the backslash have no escaped form for text mode (an escaped ~ is an accent): named commands.
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      default: out += c;
    }
  }
  return out;
}

std::string latex_pm(const stats::Summary& s) {
  if (s.n == 0) return "--";
  // One seed: the mean and its count, as the other rows' (n).
  if (!s.has_interval) return fmt::format("${}$ (1)", loss(s.mean));
  return fmt::format("${} \\pm {}$ ({})", loss(s.mean), loss(s.ci_high - s.mean), s.n);
}

std::string latex_delta(const Estimate& e) {
  if (!e.has_interval) return fmt::format("${}$", signed_loss(e.estimate));
  return fmt::format("${} \\pm {}$", signed_loss(e.estimate), loss(e.ci_high - e.estimate));
}

}  // namespace egm::analysis::human
