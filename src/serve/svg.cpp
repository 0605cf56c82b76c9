// A figure as inline SVG (svg.h): ranges, ticks, the layers clipped to the
// frame, category labels laid out so they cannot overlap, and a legend that
// wraps its labels and makes room for itself so it is never clipped.
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

// 1, 2, 5 x 10^k steps giving about `target` ticks; whole numbers only when `integer`.
std::vector<double> linear_ticks(double lo, double hi, int target, bool integer = false) {
  const double span = hi - lo;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  if (integer) step = std::max(step, 1.0);  // at least 1, and 1-2-5 x 10^k from there on is whole
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string tick_text(double v) { return fmt::format("{:.4g}", v); }

bool finite(double v) { return std::isfinite(v); }

// Text metrics without a browser: the width of `s` at font size 11 (the
// figures' size), 0.62 em per character, a little over what DejaVu Sans and
// Liberation Sans (Chromium's sans-serif here) use on average, so a layout
// that fits by this estimate fits on the page (tests/serve/browser.py
// measures the real boxes).
constexpr double kCharPx = 6.85;
constexpr double kLinePx = 13;
size_t chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // UTF-8 code points
  return n;
}
double text_px(const std::string& s) { return kCharPx * static_cast<double>(chars(s)); }

// `s` in lines of at most `max_px`, broken at spaces and before '(' (so
// "delta(ega_mope)" becomes "delta" over "(ega_mope)"); a piece longer than a
// line is cut where it must be.
std::vector<std::string> wrap(const std::string& s, double max_px) {
  const size_t width = std::max<size_t>(4, static_cast<size_t>(max_px / kCharPx));
  struct Piece {
    std::string text;
    bool space_before = false;  // joined to the previous piece with a space (else directly: "delta" "(ega)")
  };
  std::vector<Piece> pieces;
  Piece cur;
  bool space = false;
  for (char c : s) {
    if ((c == ' ' || c == '(') && !cur.text.empty()) pieces.push_back(cur), cur = Piece{};
    if (c == ' ') {
      space = true;
      continue;
    }
    if (cur.text.empty()) cur.space_before = space, space = false;
    cur.text += c;
  }
  if (!cur.text.empty()) pieces.push_back(cur);
  std::vector<std::string> lines;
  std::string line;
  for (Piece piece : pieces) {
    const std::string joined = line.empty() ? piece.text : line + (piece.space_before ? " " : "") + piece.text;
    if (chars(joined) <= width) {
      line = joined;
      continue;
    }
    if (!line.empty()) lines.push_back(line), line.clear();
    while (chars(piece.text) > width) {  // a piece longer than a line (ASCII labels: cut by bytes)
      lines.push_back(piece.text.substr(0, width));
      piece.text = piece.text.substr(width);
    }
    line = piece.text;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// How the category labels under the frame are laid out: on one line each, in
// lines of their own width, or turned (when even wrapped they would touch).
struct CategoryLayout {
  enum class Mode { flat, wrapped, turned } mode = Mode::flat;
  std::vector<std::vector<std::string>> lines;  // per category
  double height = kLinePx;                      // what they take below the frame's tick row
  double degrees = 0;                           // turned: by this much, anticlockwise
  double widest = 0;
  // Turned labels are parallel; neighbours `spacing` apart are spacing *
  // sin(angle) apart across their lines, which must exceed a line's height.
  void turn_for(double spacing) {
    const double a = std::max(35 * M_PI / 180, std::asin(std::min(1.0, (kLinePx + 4) / spacing)));
    degrees = std::round(a * 180 / M_PI);
    height = widest * std::sin(degrees * M_PI / 180) + kLinePx * std::cos(degrees * M_PI / 180);
  }
};
CategoryLayout layout_categories(const std::vector<std::string>& categories, double spacing) {
  CategoryLayout out;
  const double room = spacing - 10;  // a gap between neighbours
  double widest = 0;
  for (const auto& c : categories) widest = std::max(widest, text_px(c));
  if (widest <= room) {
    for (const auto& c : categories) out.lines.push_back({c});
    return out;
  }
  // Wrapped only where every word fits a line (no word cut in two).
  size_t most = 0;
  bool fits = true;
  for (const auto& c : categories) {
    std::string word;
    for (char ch : c + " ") {
      if (ch == ' ' || ch == '(') fits = fits && text_px(word) <= room, word.clear();
      if (ch != ' ') word += ch;
    }
    out.lines.push_back(wrap(c, room));
    most = std::max(most, out.lines.back().size());
  }
  if (fits && most <= 3) {
    out.mode = CategoryLayout::Mode::wrapped;
    out.height = kLinePx * static_cast<double>(most);
    return out;
  }
  out.mode = CategoryLayout::Mode::turned;
  out.lines.clear();
  for (const auto& c : categories) out.lines.push_back({c});
  out.widest = widest;
  out.turn_for(spacing);
  return out;
}

}  // namespace

std::string render_svg(const analysis::Figure& f, const std::string& id, int width, int height_hint) {
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
      case K::span:
        for (double x : l.xs) xr.add(x);
        break;
    }
  }
  if (!categories_.empty()) {
    xr.lo = -0.6;
    xr.hi = static_cast<double>(categories_.size()) - 0.4;
  }
  // The title, in as many lines as the width needs (13 px, bold: about 8 px a character).
  const std::vector<std::string> title_lines = wrap(f.title, (width - 20) * kCharPx / 8.2);
  const double top = 12 + 16 * static_cast<double>(title_lines.size());
  auto header = [&](int height) {
    std::string h = fmt::format(
        "<svg id=\"{}\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
        "viewBox=\"0 0 {} {}\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\"><title>{}</title>\n",
        escape(id), width, height, width, height, escape(f.title));
    h += fmt::format("<text class=\"title\" x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\" "
                     "font-weight=\"600\">",
                     width / 2);
    for (size_t i = 0; i < title_lines.size(); ++i)
      h += fmt::format("<tspan x=\"{}\" dy=\"{}\">{}</tspan>", width / 2, i ? 16 : 0, escape(title_lines[i]));
    return h + "</text>\n";
  };
  if (!xr.valid() || !yr.valid()) {
    return header(height_hint) +
           fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#5a6475\">no data yet</text></svg>\n",
                       width / 2, height_hint / 2);
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
  // The legend (figures.h: every labelled layer but bands, each label once)
  // on the right: a column at most 42% of the width, labels wrapped to it.
  const std::vector<const Layer*> legend = analysis::legend_entries(f);
  double longest = 0;
  for (const Layer* l : legend) longest = std::max(longest, text_px(l->label));
  const double legend_pad = 40;  // 10 before the swatch, 24 swatch and gap, 6 after the text
  const double right = legend.empty() ? 16 : std::min(width * 0.42, legend_pad + longest);
  std::vector<std::vector<std::string>> legend_lines;
  double legend_height = 0;
  for (const Layer* l : legend) {
    legend_lines.push_back(wrap(l->label, right - legend_pad));
    legend_height += kLinePx * static_cast<double>(legend_lines.back().size()) + 3;
  }
  double left = 62;
  double pw = width - left - right;
  // Category labels: flat, wrapped or turned, whichever keeps neighbours apart.
  CategoryLayout cats =
      categories_.empty() ? CategoryLayout{} : layout_categories(categories_, pw / (xr.hi - xr.lo));
  if (cats.mode == CategoryLayout::Mode::turned) {
    // A turned label runs left and down from its tick: the left margin keeps
    // the first ones clear of the y label (which ends at x = 18).
    for (int pass = 0; pass < 3; ++pass) {
      const double unit = pw / (xr.hi - xr.lo);
      cats.turn_for(unit);
      const double a = cats.degrees * M_PI / 180;
      double need = left;
      for (size_t i = 0; i < categories_.size(); ++i)
        need = std::max(need, 24 + text_px(categories_[i]) * std::cos(a) + kLinePx * std::sin(a) - 4 -
                                  (static_cast<double>(i) - xr.lo) * unit);
      left = need;
      pw = width - left - right;
    }
    cats.turn_for(pw / (xr.hi - xr.lo));  // a narrower plot only turns them further (and shorter across)
  }
  const double x_label_px = f.x_label.empty() ? 0 : 16;
  const double bottom = 28 + cats.height + x_label_px;
  // Tall enough for the whole legend beside the plot, and for the y label along it.
  const int height = std::max({height_hint, static_cast<int>(std::ceil(top + 8 + legend_height + 8)),
                               static_cast<int>(std::ceil(top + bottom + text_px(f.y_label) + 12))});
  const double ph = height - top - bottom;
  std::string svg = header(height);
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
  auto axis_ticks = [&](const Range& r, bool log, int target, bool integer) {
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
      t = linear_ticks(r.lo, r.hi, target, integer);
    }
    return t;
  };
  for (double v : axis_ticks(yr, log_y_, 6, false)) {
    const double y = ty(v);
    svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e8ef\"/>"
                       "<text class=\"ytick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                       left, left + pw, y, y, left - 4, y + 4, tick_text(v));
  }
  const double tick_y = top + ph + 15;
  if (!categories_.empty()) {
    for (size_t i = 0; i < categories_.size(); ++i) {
      const double x = tx(static_cast<double>(i));
      if (cats.mode == CategoryLayout::Mode::turned) {
        // Turned about its end, which sits under the tick.
        svg += fmt::format("<text class=\"xtick\" transform=\"translate({:.1f},{:.1f}) rotate(-{:g})\" "
                           "text-anchor=\"end\">{}</text>\n",
                           x + 4, tick_y - 4, cats.degrees, escape(categories_[i]));
        continue;
      }
      svg += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">", x, tick_y);
      const auto& lines = cats.lines[i];
      for (size_t k = 0; k < lines.size(); ++k)
        svg += fmt::format("<tspan x=\"{:.1f}\" dy=\"{}\">{}</tspan>", x, k ? kLinePx : 0, escape(lines[k]));
      svg += "</text>\n";
    }
  } else {
    for (double v : axis_ticks(xr, log_x_, 8, f.integer_x)) {
      const double x = tx(v);
      svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e8ef\"/>"
                         "<text class=\"xtick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                         x, x, top, top + ph, x, tick_y, tick_text(v));
    }
  }
  if (!f.x_label.empty())
    svg += fmt::format("<text class=\"xlabel\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       left + pw / 2, height - 8, escape(f.x_label));
  svg += fmt::format("<text class=\"ylabel\" transform=\"translate(14,{:.1f}) rotate(-90)\" "
                     "text-anchor=\"middle\">{}</text>\n",
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
      case K::span: {
        if (l.xs.size() != 2 || !ok_x(l.xs[0]) || !ok_x(l.xs[1])) break;
        // The whole height: no finite bound here (clipped to the frame's x range).
        const double x0 = std::max(left, tx(l.xs[0])), x1 = std::min(left + pw, tx(l.xs[1]));
        if (x1 > x0)
          svg += fmt::format("<rect class=\"span\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                             "fill=\"{}\" fill-opacity=\"0.10\" stroke=\"none\"/>\n",
                             x0, top, x1 - x0, ph, l.colour);
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
          svg += fmt::format("<line class=\"hline\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
                             "stroke=\"{}\"{}/>\n",
                             left, left + pw, ty(l.ys[0]), ty(l.ys[0]), l.colour, dash);
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
  // Legend: per entry a swatch drawn as the layer is, and its label's lines.
  double ly = top + 8;
  const double lx = left + pw + 10;
  for (size_t e = 0; e < legend.size(); ++e) {
    const Layer* l = legend[e];
    svg += "<g class=\"legend-entry\">";
    switch (l->kind) {
      case K::points:
        if (l->shape == "diamond")
          svg += fmt::format("<path class=\"swatch\" d=\"M{:.1f},{:.1f}l5,5l-5,5l-5,-5z\" fill=\"{}\" stroke=\"{}\"/>",
                             lx + 9, ly - 5, l->hollow ? "none" : l->colour, l->colour);
        else
          svg += fmt::format("<circle class=\"swatch\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\" "
                             "stroke=\"{}\"/>",
                             lx + 9, ly, l->hollow ? "none" : l->colour, l->colour);
        break;
      case K::interval:
        svg += fmt::format("<path class=\"swatch\" d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}"
                           "M{3:.1f},{2:.1f}H{4:.1f}\" stroke=\"{5}\" stroke-width=\"1.6\" fill=\"none\"/>"
                           "<circle cx=\"{6:.1f}\" cy=\"{7:.1f}\" r=\"3\" fill=\"{5}\"/>",
                           lx + 9, ly - 6, ly + 6, lx + 5, lx + 13, l->colour, lx + 9, ly);
        break;
      case K::span:
        svg += fmt::format("<rect class=\"swatch\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"18\" height=\"11\" fill=\"{}\" "
                           "fill-opacity=\"0.25\" stroke=\"none\"/>",
                           lx, ly - 5.5, l->colour);
        break;
      default:
        svg += fmt::format("<line class=\"swatch\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
                           "stroke=\"{}\" stroke-width=\"1.8\"{}/>",
                           lx, lx + 18, ly, ly, l->colour, l->dashed ? " stroke-dasharray=\"5,4\"" : "");
    }
    svg += fmt::format("<text class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\">", lx + 24, ly + 4);
    const auto& lines = legend_lines[e];
    for (size_t k = 0; k < lines.size(); ++k)
      svg += fmt::format("<tspan x=\"{:.1f}\" dy=\"{}\">{}</tspan>", lx + 24, k ? kLinePx : 0, escape(lines[k]));
    svg += "</text></g>\n";
    ly += kLinePx * static_cast<double>(lines.size()) + 3;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace egm::serve
