#include "serve/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/figures.h"
#include "serve/html.h"

namespace egm::serve {

namespace {

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool log = false;
  void add(double v) {
    if (!std::isfinite(v) || (log && v <= 0)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool valid() const { return lo <= hi; }
};

// 1, 2, 5 x 10^k steps giving about `target` ticks.
std::vector<double> linear_ticks(double lo, double hi, int target) {
  const double span = hi - lo;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string tick_text(double v) { return fmt::format("{:.4g}", v); }

bool finite(double v) { return std::isfinite(v); }

}  // namespace

std::string render_svg(const analysis::Figure& f, const std::string& id, int width, int height) {
  using Layer = analysis::FigureLayer;
  using K = Layer::Kind;
  const bool log_x_ = f.log_x, log_y_ = f.log_y;
  const auto& layers_ = f.layers;
  const auto& categories_ = f.categories;
  Range xr, yr;
  xr.log = log_x_;
  yr.log = log_y_;
  for (const auto& l : layers_) {
    switch (l.kind) {
      case K::band:
        for (size_t i = 0; i < l.xs.size(); ++i) {
          xr.add(l.xs[i]);
          yr.add(l.lo[i]);
          yr.add(l.hi[i]);
        }
        break;
      case K::line:
      case K::points:
        for (size_t i = 0; i < l.xs.size() && i < l.ys.size(); ++i)
          if (finite(l.ys[i])) {
            xr.add(l.xs[i]);
            yr.add(l.ys[i]);
          }
        break;
      case K::interval:
        xr.add(l.xs[0]);
        yr.add(l.ys[0]);
        yr.add(l.lo[0]);
        yr.add(l.hi[0]);
        break;
      case K::hline: yr.add(l.ys[0]); break;
      case K::vline: xr.add(l.xs[0]); break;
    }
  }
  if (!categories_.empty()) {
    xr.lo = -0.6;
    xr.hi = static_cast<double>(categories_.size()) - 0.4;
  }
  std::string svg = fmt::format(
      "<svg id=\"{}\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\"><title>{}</title>\n",
      escape(id), width, height, width, height, escape(f.title));
  svg += fmt::format("<text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"600\">{}</text>\n",
                     width / 2, escape(f.title));
  if (!xr.valid() || !yr.valid()) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#5a6475\">no data yet</text></svg>\n",
                       width / 2, height / 2);
    return svg;
  }
  // Pad the ranges: 5% (linear) or a quarter decade (log); a point range gets some width.
  auto pad = [](Range& r) {
    if (r.log) {
      double a = std::log10(r.lo), b = std::log10(r.hi);
      if (b - a < 1e-9) a -= 0.5, b += 0.5;
      r.lo = std::pow(10.0, a - 0.05 * (b - a));
      r.hi = std::pow(10.0, b + 0.05 * (b - a));
    } else {
      double span = r.hi - r.lo;
      if (span <= 0) span = std::max(std::abs(r.lo) * 0.1, 1e-3);
      r.lo -= 0.06 * span;
      r.hi += 0.06 * span;
    }
  };
  if (categories_.empty()) pad(xr);
  pad(yr);
  // A figure's own ranges replace the fitted ones (the val curves' zoom on the end of training).
  if (f.x_range && categories_.empty()) xr.lo = f.x_range->first, xr.hi = f.x_range->second;
  if (f.y_range) yr.lo = f.y_range->first, yr.hi = f.y_range->second;
  // Legend entries (labelled layers) go on the right.
  std::vector<const Layer*> legend;
  for (const auto& l : layers_)
    if (!l.label.empty() && l.kind != K::band && l.kind != K::interval) legend.push_back(&l);
  size_t longest = 0;
  for (const Layer* l : legend) longest = std::max(longest, l->label.size());
  const double left = 62, top = 28, bottom = 44;
  const double right = legend.empty() ? 16 : std::min<double>(width * 0.42, 34 + 6.2 * static_cast<double>(longest));
  const double pw = width - left - right, ph = height - top - bottom;
  auto tx = [&](double v) {
    const double f = log_x_ ? (std::log10(v) - std::log10(xr.lo)) / (std::log10(xr.hi) - std::log10(xr.lo))
                            : (v - xr.lo) / (xr.hi - xr.lo);
    return left + f * pw;
  };
  auto ty = [&](double v) {
    const double f = log_y_ ? (std::log10(v) - std::log10(yr.lo)) / (std::log10(yr.hi) - std::log10(yr.lo))
                            : (v - yr.lo) / (yr.hi - yr.lo);
    return top + (1 - f) * ph;
  };
  auto ok_x = [&](double v) { return finite(v) && (!log_x_ || v > 0); };
  auto ok_y = [&](double v) { return finite(v) && (!log_y_ || v > 0); };
  // Frame, grid and ticks.
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
                     "stroke=\"#9aa4b5\"/>\n",
                     left, top, pw, ph);
  auto axis_ticks = [&](const Range& r, bool log, int target) {
    std::vector<double> t;
    if (log) {
      for (double e = std::floor(std::log10(r.lo)); e <= std::ceil(std::log10(r.hi)); ++e) {
        const double v = std::pow(10.0, e);
        if (v >= r.lo && v <= r.hi) t.push_back(v);
      }
      if (t.size() < 2)  // less than a decade: 1-2-5 ticks
        for (double e = std::floor(std::log10(r.lo)); e <= std::ceil(std::log10(r.hi)); ++e)
          for (double m : {2.0, 5.0}) {
            const double v = m * std::pow(10.0, e);
            if (v >= r.lo && v <= r.hi) t.push_back(v);
          }
      std::sort(t.begin(), t.end());
    } else {
      t = linear_ticks(r.lo, r.hi, target);
    }
    return t;
  };
  for (double v : axis_ticks(yr, log_y_, 6)) {
    const double y = ty(v);
    svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e8ef\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                       left, left + pw, y, y, left - 4, y + 4, tick_text(v));
  }
  if (!categories_.empty()) {
    for (size_t i = 0; i < categories_.size(); ++i)
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                         tx(static_cast<double>(i)), top + ph + 15, escape(categories_[i]));
  } else {
    for (double v : axis_ticks(xr, log_x_, 8)) {
      const double x = tx(v);
      svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e8ef\"/>"
                         "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                         x, x, top, top + ph, x, top + ph + 15, tick_text(v));
    }
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2, height - 8,
                     escape(f.x_label));
  svg += fmt::format("<text transform=\"translate(14,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     top + ph / 2, escape(f.y_label));
  // Layers, clipped to the frame.
  const std::string clip = "clip-" + id;
  svg += fmt::format("<clipPath id=\"{}\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>"
                     "</clipPath><g clip-path=\"url(#{})\">\n",
                     escape(clip), left, top, pw, ph, escape(clip));
  for (const auto& l : layers_) {
    const std::string dash = l.dashed ? " stroke-dasharray=\"5,4\"" : "";
    switch (l.kind) {
      case K::band: {
        std::string upper, lower;
        for (size_t i = 0; i < l.xs.size(); ++i)
          if (ok_x(l.xs[i]) && ok_y(l.lo[i]) && ok_y(l.hi[i])) {
            upper += fmt::format("{:.1f},{:.1f} ", tx(l.xs[i]), ty(l.hi[i]));
            lower = fmt::format("{:.1f},{:.1f} ", tx(l.xs[i]), ty(l.lo[i])) + lower;
          }
        if (!upper.empty())
          svg += fmt::format("<polygon class=\"band\" points=\"{}{}\" fill=\"{}\" fill-opacity=\"0.18\" "
                             "stroke=\"none\"/>\n",
                             upper, lower, l.colour);
        break;
      }
      case K::line: {
        std::string d;
        bool pen = false;
        for (size_t i = 0; i < l.xs.size() && i < l.ys.size(); ++i) {
          if (!ok_x(l.xs[i]) || !ok_y(l.ys[i])) {
            pen = false;
            continue;
          }
          d += fmt::format("{}{:.1f},{:.1f} ", pen ? "L" : "M", tx(l.xs[i]), ty(l.ys[i]));
          pen = true;
        }
        if (!d.empty())
          svg += fmt::format("<path class=\"line\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{}>"
                             "<title>{}</title></path>\n",
                             d, l.colour, dash, escape(l.label));
        break;
      }
      case K::points:
        for (size_t i = 0; i < l.xs.size() && i < l.ys.size(); ++i) {
          if (!ok_x(l.xs[i]) || !ok_y(l.ys[i])) continue;
          const std::string fill = l.hollow ? "none" : l.colour;
          if (l.shape == "diamond") {
            const double x = tx(l.xs[i]), y = ty(l.ys[i]);
            svg += fmt::format("<path class=\"point\" d=\"M{:.1f},{:.1f}l5,5l-5,5l-5,-5z\" fill=\"{}\" "
                               "stroke=\"{}\"/>\n",
                               x, y - 5, fill, l.colour);
          } else {
            svg += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\" "
                               "stroke=\"{}\"/>\n",
                               tx(l.xs[i]), ty(l.ys[i]), fill, l.colour);
          }
        }
        break;
      case K::interval: {
        const double x = tx(l.xs[0] + l.dx);
        if (ok_y(l.lo[0]) && ok_y(l.hi[0]))
          svg += fmt::format("<path class=\"interval\" d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}"
                             "M{3:.1f},{2:.1f}H{4:.1f}\" stroke=\"{5}\" stroke-width=\"1.6\" fill=\"none\"/>\n",
                             x, ty(l.lo[0]), ty(l.hi[0]), x - 5, x + 5, l.colour);
        if (ok_y(l.ys[0]))
          svg += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", x,
                             ty(l.ys[0]), l.colour);
        break;
      }
      case K::hline:
        if (ok_y(l.ys[0]))
          svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"{}/>\n", left,
                             left + pw, ty(l.ys[0]), ty(l.ys[0]), l.colour, dash);
        break;
      case K::vline:
        if (ok_x(l.xs[0]))
          svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"{}/>\n",
                             tx(l.xs[0]), tx(l.xs[0]), top, top + ph, l.colour, dash);
        break;
    }
  }
  svg += "</g>\n";
  for (const auto& [x, label] : f.top_labels)
    if (ok_x(x) && x >= xr.lo && x <= xr.hi)
      svg += fmt::format("<text class=\"region\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#5a6475\">{}</text>\n",
                         tx(x), top + 12, escape(label));
  // Legend.
  double ly = top + 8;
  for (const Layer* l : legend) {
    const double lx = left + pw + 10;
    if (l->kind == K::points)
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\" stroke=\"{}\"/>", lx + 9, ly,
                         l->hollow ? "none" : l->colour, l->colour);
    else
      svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                         "stroke-width=\"1.8\"{}/>",
                         lx, lx + 18, ly, ly, l->colour, l->dashed ? " stroke-dasharray=\"5,4\"" : "");
    svg += fmt::format("<text class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", lx + 24, ly + 4,
                       escape(l->label));
    ly += 16;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace egm::serve
