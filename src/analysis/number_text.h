// Numbers for people, the same way in every rendering of the analysis: losses
// with four decimals, signed deltas, intervals, p-values, a mean with its
// interval ("1.5000 ± 0.0497 (3)"), and LaTeX's escaping. Internal to
// src/analysis (render.cpp, paper_table.cpp).
#pragma once

#include <string>

#include "analysis/sweep_analysis.h"

namespace egm::analysis::human {

std::string loss(double x);         // "1.5000"; "-" when not finite
std::string signed_loss(double x);  // "+0.0600"; "-" when not finite
std::string interval(double low, double high);        // "[+0.0100, +0.1100]"
std::string plain_interval(double low, double high);  // "[1.4503, 1.5497]"
std::string p_text(double p);                         // "0.0123", "1.2e-05"; "-" when not finite
std::string share(double x);                          // "40%"
// "1.5000 ± 0.0497 (3)", "1.5000 (1 seed, no interval)", "not measured".
std::string mean_pm(const stats::Summary& s);
// "+0.0600 ± 0.0500", "+0.0600 (no interval)".
std::string delta_pm(const Estimate& e);
std::string latex_escape(const std::string& s);
// "$1.5000 \pm 0.0497$ (3)", "$1.5000$ (1)", "--".
std::string latex_pm(const stats::Summary& s);
// "$+0.0600 \pm 0.0500$", "$+0.0600$".
std::string latex_delta(const Estimate& e);

}  // namespace egm::analysis::human
