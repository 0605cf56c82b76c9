// The figure model's builders (figures.h): what each figure of a sweep shows,
// decided once for the report's gnuplot and the web view's SVG.
#include "analysis/figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace egm::analysis {

// matplotlib's tab10 colours, distinct at a glance, reordered so the first four (a 2x2's variants)
// are blue, red, green and purple; the index wraps after ten.
std::string figure_colour(size_t index) {
  static const char* const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                        "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
  return colours[index % (sizeof(colours) / sizeof(colours[0]))];
}

Figure& Figure::band(std::vector<double> xs, std::vector<double> lo, std::vector<double> hi, std::string colour) {
  FigureLayer l;
  l.kind = FigureLayer::Kind::band;
  l.xs = std::move(xs), l.lo = std::move(lo), l.hi = std::move(hi), l.colour = std::move(colour);
  layers.push_back(std::move(l));
  return *this;
}

Figure& Figure::line(std::vector<double> xs, std::vector<double> ys, std::string colour, std::string label,
                     bool dashed) {
  FigureLayer l;
  l.kind = FigureLayer::Kind::line;
  l.xs = std::move(xs), l.ys = std::move(ys), l.colour = std::move(colour), l.label = std::move(label);
  l.dashed = dashed;
  layers.push_back(std::move(l));
  return *this;
}

Figure& Figure::points(std::vector<double> xs, std::vector<double> ys, std::string colour, std::string label,
                       bool hollow, std::string shape) {
  FigureLayer l;
  l.kind = FigureLayer::Kind::points;
  l.xs = std::move(xs), l.ys = std::move(ys), l.colour = std::move(colour), l.label = std::move(label);
  l.hollow = hollow, l.shape = std::move(shape);
  layers.push_back(std::move(l));
  return *this;
}

Figure& Figure::interval(double x, double y, double lo, double hi, std::string colour, double dx,
                         std::string label) {
  FigureLayer l;
  l.kind = FigureLayer::Kind::interval;
  l.xs = {x}, l.ys = {y}, l.lo = {lo}, l.hi = {hi}, l.colour = std::move(colour), l.dx = dx;
  l.label = std::move(label);
  layers.push_back(std::move(l));
  return *this;
}

Figure& Figure::hline(double y, std::string colour, std::string label, bool dashed) {
  FigureLayer l;
  l.kind = FigureLayer::Kind::hline;
  l.ys = {y}, l.colour = std::move(colour), l.label = std::move(label), l.dashed = dashed;
  layers.push_back(std::move(l));
  return *this;
}

Figure& Figure::vline(double x, std::string colour, std::string label, bool dashed) {
  FigureLayer l;
  l.kind = FigureLayer::Kind::vline;
  l.xs = {x}, l.colour = std::move(colour), l.label = std::move(label), l.dashed = dashed;
  layers.push_back(std::move(l));
  return *this;
}

Figure& Figure::span(double from, double to, std::string colour, std::string label) {
  FigureLayer l;
  l.kind = FigureLayer::Kind::span;
  if (from <= to) l.xs = {from, to};  // NaN or from > to: legend only
  l.colour = std::move(colour), l.label = std::move(label);
  layers.push_back(std::move(l));
  return *this;
}

std::vector<const FigureLayer*> legend_entries(const Figure& f) {
  std::vector<const FigureLayer*> out;
  for (const auto& l : f.layers) {
    // A band shades its line's interval and shares its colour: the line's entry stands for both.
    if (l.label.empty() || l.kind == FigureLayer::Kind::band) continue;
    // A label once: the layers of one variant (its points and its interval) share one entry.
    if (std::none_of(out.begin(), out.end(), [&](const FigureLayer* e) { return e->label == l.label; }))
      out.push_back(&l);
  }
  return out;
}

bool Figure::empty() const {
  using K = FigureLayer::Kind;
  for (const auto& l : layers) {
    // Reference lines and spans are drawn whatever the data: alone they are no data.
    if (l.kind == K::hline || l.kind == K::vline || l.kind == K::span) continue;
    for (size_t i = 0; i < l.xs.size(); ++i) {
      if (!std::isfinite(l.xs[i])) continue;
      // A band keeps its values in lo and hi, not ys: a finite x is data.
      if (l.kind == K::band) return false;
      if (i < l.ys.size() && std::isfinite(l.ys[i])) return false;
    }
  }
  return true;
}

namespace {

std::string sweep_prefix(const std::string& sweep) { return sweep.empty() ? "" : "sweep " + sweep + ": "; }

std::string plural(size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

}  // namespace

std::optional<std::pair<double, double>> val_curve_y_range(const std::vector<VariantCurve>& curves) {
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const auto& [variant, points] : curves)
    // The first and last steps any curve has.
    for (const auto& p : points) first = std::min(first, p.step), last = std::max(last, p.step);
  if (first >= last) return std::nullopt;  // fewer than two steps: nothing to zoom into
  const double inf = std::numeric_limits<double>::infinity();
  double lo = inf, tail_hi = -inf, hi = -inf;
  // The second half of training, where the curves have flattened and the variants differ.
  const double half = static_cast<double>(first) + 0.5 * static_cast<double>(last - first);
  for (const auto& [variant, points] : curves)
    for (const auto& p : points) {
      for (double v : {p.min, p.mean, p.max}) {
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        if (static_cast<double>(p.step) >= half) tail_hi = std::max(tail_hi, v);
      }
    }
  // Flat data, or nothing finite late in training: the automatic range does better.
  if (!std::isfinite(lo) || !std::isfinite(tail_hi) || tail_hi <= lo) return std::nullopt;
  // The end's spread fills the lower half of the frame; the start runs off the top.
  const double top = std::min(hi, tail_hi + (tail_hi - lo));
  // The same 6% the SVG pads a fitted range by.
  const double margin = 0.06 * (top - lo);
  return std::make_pair(lo - margin, top + margin);
}

Figure val_curve_figure(const std::vector<VariantCurve>& curves, const std::string& sweep) {
  Figure f;
  f.name = "val_curves";
  f.title = sweep_prefix(sweep) + "val loss (eval_val) per variant: mean over seeds, min..max band";
  f.x_label = "step";
  f.y_label = "val loss (nats)";
  f.y_range = val_curve_y_range(curves);
  f.caption = "Val loss curves per variant: mean over seeds with the min..max band (eval_val, done cells)";
  if (f.y_range) f.caption += "; the y range shows the second half of training, where the variants differ";
  for (size_t v = 0; v < curves.size(); ++v) {
    std::vector<double> xs, mean, lo, hi;
    size_t n = 0;
    for (const auto& p : curves[v].second) {
      xs.push_back(static_cast<double>(p.step));
      mean.push_back(p.mean);
      lo.push_back(p.min);
      hi.push_back(p.max);
      // The legend's seed count: the most seeds any step had.
      n = std::max(n, p.n);
    }
    // The band first, so the mean line is drawn over it.
    f.band(xs, lo, hi, figure_colour(v));
    f.line(xs, mean, figure_colour(v), fmt::format("{} ({})", curves[v].first, plural(n, "seed")));
  }
  return f;
}

std::optional<Figure> omega_sigma_figure(const std::vector<MopeRun>& runs, const std::string& sweep,
                                         const std::string& name) {
  if (runs.empty()) return std::nullopt;
  Figure f;
  f.name = name;
  f.title = sweep_prefix(sweep) + "MoPE (sigma, omega): learned vs initial";
  f.x_label = "sigma (envelope width, characters)";
  f.y_label = "omega (radians per character)";
  f.caption = "MoPE (omega, sigma) pairs, log-log: learned against initial, with the omega*sigma = 5 boundary, "
              "the clamp and the sigma regions";
  f.log_x = f.log_y = true;
  std::vector<std::string> variants;
  std::vector<double> s0, o0;
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  auto widen = [&](double sigma) {
    // A log axis: only finite positive widths can widen it.
    if (std::isfinite(sigma) && sigma > 0) lo = std::min(lo, sigma), hi = std::max(hi, sigma);
  };
  for (const auto& r : runs) {
    // Variants in the order their runs come, one colour each.
    if (std::find(variants.begin(), variants.end(), r.variant) == variants.end()) variants.push_back(r.variant);
    for (const auto& p : r.pairs) {
      if (p.has_init) {
        s0.push_back(p.sigma0);
        o0.push_back(p.omega0);
        widen(p.sigma0);
      }
      widen(p.sigma);
    }
  }
  // Every region boundary the data comes near, with some margin.
  // At least 0.5 to 100, so every region boundary stays in view whatever the data's range.
  const double xmin = std::isfinite(lo) ? std::min(0.5, lo / 1.5) : 0.5;
  const double xmax = std::max(100.0, hi * 1.5);
  f.x_range = std::make_pair(xmin, xmax);
  const double bounds[] = {1.0, 6.0, 20.0, 55.0};
  // Unlabelled: the region names along the top say what the lines divide.
  for (double b : bounds) f.vline(b, "#c3cad6", "");
  const std::pair<const char*, std::pair<double, double>> regions[] = {
      {"below 1", {xmin, 1.0}}, {"character", {1.0, 6.0}}, {"word", {6.0, 20.0}},
      {"clause", {20.0, 55.0}}, {"sentence", {55.0, xmax}}};
  // Each name at its region's geometric middle, the centre on a log axis.
  for (const auto& [label, range] : regions) f.top_labels.emplace_back(std::sqrt(range.first * range.second), label);
  std::vector<double> bx, by;
  // 61 points evenly spaced in log sigma, across the whole x range.
  for (int i = 0; i <= 60; ++i) {
    const double x = xmin * std::pow(xmax / xmin, i / 60.0);
    bx.push_back(x);
    by.push_back(5.0 / x);
  }
  f.line(bx, by, "#1d2330", "omega*sigma = 5 (boundary)");
  // The forward pass clamps omega at 0.95 pi (SPEC.md section 2).
  f.hline(0.95 * M_PI, "#7f7f7f", "omega = 0.95 pi (clamp)");
  // Initial pairs hollow and grey, under the learned ones drawn after them.
  if (!s0.empty()) f.points(s0, o0, "#9aa4b5", "initial pairs", /*hollow=*/true);
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> xs, ys;
    size_t n = 0;
    for (const auto& r : runs) {
      if (r.variant != variants[v]) continue;
      ++n;
      for (const auto& p : r.pairs) {
        xs.push_back(p.sigma);
        ys.push_back(p.omega);
      }
    }
    f.points(xs, ys, figure_colour(v), fmt::format("learned: {} ({})", variants[v], plural(n, "run")));
  }
  return f;
}

std::optional<Figure> interaction_figure(const SweepAnalysis& a) {
  if (!a.interaction) return std::nullopt;
  const InteractionAnalysis& ia = *a.interaction;
  const Factors& fa = ia.factors;
  const stats::InteractionResult& r = ia.result;
  const double nan = std::nan("");
  std::map<std::string, double> pub;
  // Published numbers only when they measure the interaction's metric.
  if (a.published && a.published->metric == ia.metric)
    for (const auto& row : a.published->rows) pub[row.variant] = row.published;
  auto published_delta = [&](const std::string& v) {
    // In the sense of ours: published base minus published variant, positive = better.
    return pub.count(fa.base) && pub.count(v) ? pub[fa.base] - pub[v] : nan;
  };
  auto delta_ci = [&](const std::string& v, bool high) {
    // Our deltas' intervals are against the analysis's baseline: shown only when that is the factors' base.
    const DeltaResult* d = a.baseline == fa.base ? a.find_delta(v) : nullptr;
    return d && d->delta.has_interval ? (high ? d->delta.ci_high : d->delta.ci_low) : nan;
  };
  struct Row {
    std::string label;
    double est, lo, hi, published;
  };
  const std::vector<Row> rows{
      {"delta(" + fa.a + ")", r.delta_a, delta_ci(fa.a, false), delta_ci(fa.a, true), published_delta(fa.a)},
      {"delta(" + fa.b + ")", r.delta_b, delta_ci(fa.b, false), delta_ci(fa.b, true), published_delta(fa.b)},
      {"sum of parts", ia.sum_of_parts.estimate, ia.sum_of_parts.has_interval ? ia.sum_of_parts.ci_low : nan,
       ia.sum_of_parts.has_interval ? ia.sum_of_parts.ci_high : nan, published_delta(fa.a) + published_delta(fa.b)},
      {"delta(" + fa.ab + ")", r.delta_ab, delta_ci(fa.ab, false), delta_ci(fa.ab, true), published_delta(fa.ab)},
      {"interaction I", r.estimate, r.interval.has_interval ? r.interval.ci_low : nan,
       r.interval.has_interval ? r.interval.ci_high : nan,
       a.published && a.published->published_interaction ? *a.published->published_interaction : nan}};
  const std::string pct = fmt::format("{:g}%", a.level * 100);
  Figure f;
  f.name = "interaction";
  f.title = sweep_prefix(a.sweep) +
            fmt::format("is {} more than the sum of its parts? {}", fa.ab,
                        r.verdict == stats::Verdict::no_interval ? std::string("no verdict: one seed, no interval")
                                                                 : fmt::format("verdict: {}", verdict_label(r.verdict)));
  f.y_label = "val loss difference (nats), + = better than " + fa.base;
  f.caption = fmt::format("The deltas, their sum and the interaction I with {} t intervals (I's bootstrap interval "
                          "beside it; published values as diamonds)",
                          pct);
  // Every mark is labelled, so each has its legend entry (the deltas share one).
  std::vector<double> px, py;
  for (size_t i = 0; i < rows.size(); ++i) {
    f.categories.push_back(rows[i].label);
    // Row 4 is I, drawn in red apart from the deltas.
    const bool is_i = i == 4;
    f.interval(static_cast<double>(i), rows[i].est, rows[i].lo, rows[i].hi, is_i ? "#d62728" : "#1f77b4", 0,
               is_i ? fmt::format("interaction I: mean over seeds, {} t interval", pct)
                    : fmt::format("deltas: mean over seeds, {} t interval", pct));
    // Published values sit just right of each interval (the bootstrap, dx -0.18, just left of I's).
    px.push_back(static_cast<double>(i) + 0.18);
    py.push_back(rows[i].published);
  }
  if (r.has_bootstrap)
    f.interval(4, r.estimate, r.bootstrap.low, r.bootstrap.high, "#ff7f0e", -0.18,
               fmt::format("I: {} bootstrap interval", pct));
  // Diamonds only when the paper gives at least one of the numbers.
  if (std::any_of(py.begin(), py.end(), [](double v) { return std::isfinite(v); }))
    f.points(px, py, "#2ca02c", "published (paper)", false, "diamond");
  f.hline(0, "#1d2330", "zero", /*dashed=*/false);
  return f;
}

std::optional<Figure> sequence_figure(const std::vector<ClaimSequence>& sequences, double level) {
  if (sequences.empty()) return std::nullopt;
  Figure f;
  f.name = "sequences";
  f.title = fmt::format("each claim's anytime-valid {:g}% confidence sequence over seeds", level * 100);
  f.x_label = "seeds looked at (n)";
  f.y_label = "val loss difference (nats), + = better";
  f.caption = "Each claim's confidence sequence (t-mixture; valid however the seed count was chosen, also when "
              "seeds were added after looking) narrowing as seeds are added; shaded to the frame while it is "
              "unbounded; settled where its band leaves zero";
  f.integer_x = true;
  // The ranges: every look, and every finite number with zero, padded so that
  // zero (the line a claim must leave) is never on the frame.
  size_t n_lo = std::numeric_limits<size_t>::max(), n_hi = 0;
  double y_lo = 0, y_hi = 0;
  auto widen = [&](double v) {
    if (std::isfinite(v)) y_lo = std::min(y_lo, v), y_hi = std::max(y_hi, v);
  };
  for (const auto& seq : sequences)
    for (const auto& look : seq.looks) {
      n_lo = std::min(n_lo, look.n), n_hi = std::max(n_hi, look.n);
      widen(look.estimate);
      if (look.bounded()) widen(look.lower), widen(look.upper);
    }
  if (n_hi == 0) n_lo = n_hi = 1;  // no looks yet
  f.x_range = std::make_pair(static_cast<double>(n_lo) - 0.5, static_cast<double>(n_hi) + 0.5);
  // A single value (all looks at zero) still gets a visible range.
  const double span = y_hi - y_lo > 0 ? y_hi - y_lo : 0.01;
  f.y_range = std::make_pair(y_lo - 0.08 * span, y_hi + 0.08 * span);
  // The looks before a claim's first bounded one hold the whole line: shaded
  // to the frame, one grey span per distinct stretch (claims sharing it share
  // the span, so the shading darkens only where more claims are unbounded).
  const std::string shade = "#5a6475";
  std::vector<std::pair<double, double>> unbounded_spans;
  for (size_t c = 0; c < sequences.size(); ++c) {
    const ClaimSequence& seq = sequences[c];
    // The running intersection: once bounded, every later look is bounded too.
    std::vector<double> xs, lo, hi, est, band_xs;
    std::optional<size_t> bounded_from;
    for (const auto& look : seq.looks) {
      xs.push_back(static_cast<double>(look.n));
      est.push_back(look.estimate);
      if (!look.bounded()) continue;
      if (!bounded_from) bounded_from = look.n;
      band_xs.push_back(static_cast<double>(look.n));
      lo.push_back(look.lower);
      hi.push_back(look.upper);
    }
    const std::string colour = figure_colour(c);
    // Unbounded at the first look: shaded from it to the first bounded look, or to the frame's end.
    if (!seq.looks.empty() && (!bounded_from || *bounded_from > seq.looks.front().n)) {
      const std::pair<double, double> stretch{static_cast<double>(seq.looks.front().n) - 0.5,
                                              bounded_from ? static_cast<double>(*bounded_from) : f.x_range->second};
      // Claims unbounded over the same stretch share one span (see above).
      if (std::find(unbounded_spans.begin(), unbounded_spans.end(), stretch) == unbounded_spans.end())
        unbounded_spans.push_back(stretch);
    }
    // The band over bounded looks only: an unbounded look has no finite edge to draw.
    if (!band_xs.empty()) f.band(band_xs, lo, hi, colour);
    std::string unbounded;
    if (!seq.looks.empty() && !bounded_from)
      unbounded = seq.looks.size() == 1 ? fmt::format("unbounded at n = {}", seq.looks.front().n)
                                        : fmt::format("unbounded at every n, {}..{}", seq.looks.front().n,
                                                      seq.looks.back().n);
    else if (bounded_from && *bounded_from > seq.looks.front().n)
      unbounded = fmt::format("unbounded until n = {}", *bounded_from);
    const std::string settled =
        seq.settled_at ? fmt::format("settled at n = {}", *seq.settled_at) : std::string("not settled");
    f.line(xs, est, colour,
           fmt::format("{} ({}{})", seq.claim, unbounded.empty() ? "" : unbounded + "; ", settled));
  }
  if (!unbounded_spans.empty()) {
    // Behind everything: drawn first.
    Figure spans;
    for (const auto& [from, to] : unbounded_spans) spans.span(from, to, shade);
    f.layers.insert(f.layers.begin(), spans.layers.begin(), spans.layers.end());
    // NaN bounds draw nothing (Figure::span): the shading's legend entry only.
    f.span(std::nan(""), std::nan(""), shade, "shaded to the frame: no finite bound yet");
  }
  f.hline(0, "#1d2330", "zero", /*dashed=*/false);
  return f;
}

std::vector<Figure> sweep_figures(const SweepData& data, const SweepAnalysis& a,
                                  const std::vector<ClaimSequence>& sequences, bool empty_curves) {
  std::vector<Figure> out;
  const std::vector<VariantCurve> curves = val_curve_bands(data);
  // The web view shows the val-curve frame before any curve exists; the report leaves it out.
  if (!curves.empty() || empty_curves) out.push_back(val_curve_figure(curves, a.sweep));
  if (auto f = omega_sigma_figure(a.params.mope, a.sweep)) out.push_back(std::move(*f));
  if (auto f = interaction_figure(a)) out.push_back(std::move(*f));
  if (auto f = sequence_figure(sequences, a.level)) out.push_back(std::move(*f));
  return out;
}

}  // namespace egm::analysis
