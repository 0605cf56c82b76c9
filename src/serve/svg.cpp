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
    // A log axis cannot show 0 or a negative value: such values are left out of its range.
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
  // The power of ten at or below the raw step; the first 1, 2, 5 or 10 times it that covers raw is the step.
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  if (integer) step = std::max(step, 1.0);  // at least 1, and 1-2-5 x 10^k from there on is whole
  std::vector<double> ticks;
  // The small slack keeps a tick at hi that rounding put just past it.
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    // Accumulated rounding would print a tick at 0 as 1e-17: snapped to 0.
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
    // At least 35 degrees, and steeper when the ticks are too close for a line's height across.
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
      // A word wider than the room would be cut in two by wrap(); then the labels are turned instead.
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

using Layer = analysis::FigureLayer;
using K = Layer::Kind;

// The data's extent: every finite value of every layer (a category figure's
// x is its categories' positions, 0 .. n-1, with room for a point's width).
void fit_ranges(const analysis::Figure& f, Range& xr, Range& yr) {
  xr.log = f.log_x;
  yr.log = f.log_y;
  for (const auto& l : f.layers) {
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
  if (!f.categories.empty()) {
    xr.lo = -0.6;
    xr.hi = static_cast<double>(f.categories.size()) - 0.4;
  }
}

// Pad a range: 6% of its span each side (linear) or 5% of its decades (log); a
// range of one value first gets some width (10% of it, or a decade on a log axis).
void pad(Range& r) {
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
}

// Decades on a log axis (1-2-5 within less than one), else 1-2-5 x 10^k steps.
std::vector<double> axis_ticks(const Range& r, bool log, int target, bool integer) {
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
}

// The opening <svg> element with its <title>, and the figure's title in `title_lines`.
std::string svg_header(const analysis::Figure& f, const std::string& id, int width, int height,
                       const std::vector<std::string>& title_lines) {
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
}

// The legend (figures.h: every labelled layer but bands, each label once)
// on the right: a column at most 42% of the width, labels wrapped to it.
struct Legend {
  static constexpr double kPad = 40;  // 10 before the swatch, 24 swatch and gap, 6 after the text
  std::vector<const Layer*> entries;
  std::vector<std::vector<std::string>> lines;  // per entry
  double right = 16;                            // the margin it takes right of the frame
  double height = 0;
};
Legend layout_legend(const analysis::Figure& f, int width) {
  Legend out;
  out.entries = analysis::legend_entries(f);
  double longest = 0;
  for (const Layer* l : out.entries) longest = std::max(longest, text_px(l->label));
  if (!out.entries.empty()) out.right = std::min(width * 0.42, Legend::kPad + longest);
  for (const Layer* l : out.entries) {
    out.lines.push_back(wrap(l->label, out.right - Legend::kPad));
    out.height += kLinePx * static_cast<double>(out.lines.back().size()) + 3;
  }
  return out;
}

// The frame in pixels and the map from data to it.
struct Frame {
  Range xr, yr;
  double left = 62, top = 0, pw = 0, ph = 0;
  double tx(double v) const {
    // A log axis maps log10(v) linearly; ok_x and ok_y keep v <= 0 from reaching here.
    const double f = xr.log ? (std::log10(v) - std::log10(xr.lo)) / (std::log10(xr.hi) - std::log10(xr.lo))
                            : (v - xr.lo) / (xr.hi - xr.lo);
    return left + f * pw;
  }
  double ty(double v) const {
    const double f = yr.log ? (std::log10(v) - std::log10(yr.lo)) / (std::log10(yr.hi) - std::log10(yr.lo))
                            : (v - yr.lo) / (yr.hi - yr.lo);
    // SVG's y grows downward, so the range's high end is the frame's top.
    return top + (1 - f) * ph;
  }
  bool ok_x(double v) const { return finite(v) && (!xr.log || v > 0); }
  bool ok_y(double v) const { return finite(v) && (!yr.log || v > 0); }
};

// A turned label runs left and down from its tick: the left margin grows
// until the first ones clear the y label (which ends at x = 18); a narrower
// plot only turns them further (and shorter across).
void make_room_for_turned(Frame& fr, CategoryLayout& cats, const std::vector<std::string>& categories, int width,
                          double right) {
  // A wider margin narrows the plot, which changes the spacing and angle again: a few passes settle it.
  for (int pass = 0; pass < 3; ++pass) {
    const double unit = fr.pw / (fr.xr.hi - fr.xr.lo);
    cats.turn_for(unit);
    const double a = cats.degrees * M_PI / 180;
    double need = fr.left;
    for (size_t i = 0; i < categories.size(); ++i)
      need = std::max(need, 24 + text_px(categories[i]) * std::cos(a) + kLinePx * std::sin(a) - 4 -
                                (static_cast<double>(i) - fr.xr.lo) * unit);
    fr.left = need;
    fr.pw = width - fr.left - right;
  }
  cats.turn_for(fr.pw / (fr.xr.hi - fr.xr.lo));
}

// The frame, the y grid and ticks, the x ticks or category labels, and both axis labels.
std::string draw_axes(const analysis::Figure& f, const Frame& fr, const CategoryLayout& cats, int height) {
  std::string svg = fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
                                "stroke=\"#9aa4b5\"/>\n",
                                fr.left, fr.top, fr.pw, fr.ph);
  for (double v : axis_ticks(fr.yr, f.log_y, 6, false)) {
    const double y = fr.ty(v);
    svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e8ef\"/>"
                       "<text class=\"ytick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                       fr.left, fr.left + fr.pw, y, y, fr.left - 4, y + 4, tick_text(v));
  }
  const double tick_y = fr.top + fr.ph + 15;
  if (!f.categories.empty()) {
    for (size_t i = 0; i < f.categories.size(); ++i) {
      const double x = fr.tx(static_cast<double>(i));
      if (cats.mode == CategoryLayout::Mode::turned) {
        // Turned about its end, which sits under the tick.
        svg += fmt::format("<text class=\"xtick\" transform=\"translate({:.1f},{:.1f}) rotate(-{:g})\" "
                           "text-anchor=\"end\">{}</text>\n",
                           x + 4, tick_y - 4, cats.degrees, escape(f.categories[i]));
        continue;
      }
      svg += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">", x, tick_y);
      const auto& lines = cats.lines[i];
      for (size_t k = 0; k < lines.size(); ++k)
        svg += fmt::format("<tspan x=\"{:.1f}\" dy=\"{}\">{}</tspan>", x, k ? kLinePx : 0, escape(lines[k]));
      svg += "</text>\n";
    }
  } else {
    for (double v : axis_ticks(fr.xr, f.log_x, 8, f.integer_x)) {
      const double x = fr.tx(v);
      svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e8ef\"/>"
                         "<text class=\"xtick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                         x, x, fr.top, fr.top + fr.ph, x, tick_y, tick_text(v));
    }
  }
  if (!f.x_label.empty())
    svg += fmt::format("<text class=\"xlabel\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       fr.left + fr.pw / 2, height - 8, escape(f.x_label));
  svg += fmt::format("<text class=\"ylabel\" transform=\"translate(14,{:.1f}) rotate(-90)\" "
                     "text-anchor=\"middle\">{}</text>\n",
                     fr.top + fr.ph / 2, escape(f.y_label));
  return svg;
}

// One layer, in frame pixels (the caller clips it to the frame).
std::string draw_layer(const Layer& l, const Frame& fr) {
  std::string svg;
  const std::string dash = l.dashed ? " stroke-dasharray=\"5,4\"" : "";
  switch (l.kind) {
    case K::band: {
      std::string upper, lower;
      // The outline runs along the upper edge left to right, then back along the lower edge.
      for (size_t i = 0; i < l.xs.size(); ++i)
        if (fr.ok_x(l.xs[i]) && fr.ok_y(l.lo[i]) && fr.ok_y(l.hi[i])) {
          upper += fmt::format("{:.1f},{:.1f} ", fr.tx(l.xs[i]), fr.ty(l.hi[i]));
          lower = fmt::format("{:.1f},{:.1f} ", fr.tx(l.xs[i]), fr.ty(l.lo[i])) + lower;
        }
      if (!upper.empty())
        svg += fmt::format("<polygon class=\"band\" points=\"{}{}\" fill=\"{}\" fill-opacity=\"0.18\" "
                           "stroke=\"none\"/>\n",
                           upper, lower, l.colour);
      break;
    }
    case K::span: {
      if (l.xs.size() != 2 || !fr.ok_x(l.xs[0]) || !fr.ok_x(l.xs[1])) break;
      // The whole height: no finite bound here (clipped to the frame's x range).
      const double x0 = std::max(fr.left, fr.tx(l.xs[0])), x1 = std::min(fr.left + fr.pw, fr.tx(l.xs[1]));
      if (x1 > x0)
        svg += fmt::format("<rect class=\"span\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                           "fill=\"{}\" fill-opacity=\"0.10\" stroke=\"none\"/>\n",
                           x0, fr.top, x1 - x0, fr.ph, l.colour);
      break;
    }
    case K::line: {
      std::string d;
      bool pen = false;  // a skipped value lifts the pen: the line breaks there
      for (size_t i = 0; i < l.xs.size() && i < l.ys.size(); ++i) {
        if (!fr.ok_x(l.xs[i]) || !fr.ok_y(l.ys[i])) {
          pen = false;
          continue;
        }
        d += fmt::format("{}{:.1f},{:.1f} ", pen ? "L" : "M", fr.tx(l.xs[i]), fr.ty(l.ys[i]));
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
        if (!fr.ok_x(l.xs[i]) || !fr.ok_y(l.ys[i])) continue;
        const std::string fill = l.hollow ? "none" : l.colour;
        if (l.shape == "diamond") {
          const double x = fr.tx(l.xs[i]), y = fr.ty(l.ys[i]);
          svg += fmt::format("<path class=\"point\" d=\"M{:.1f},{:.1f}l5,5l-5,5l-5,-5z\" fill=\"{}\" "
                             "stroke=\"{}\"/>\n",
                             x, y - 5, fill, l.colour);
        } else {
          svg += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\" "
                             "stroke=\"{}\"/>\n",
                             fr.tx(l.xs[i]), fr.ty(l.ys[i]), fill, l.colour);
        }
      }
      break;
    case K::interval: {
      // dx moves an interval sideways (two intervals at one x drawn side by side).
      const double x = fr.tx(l.xs[0] + l.dx);
      if (fr.ok_y(l.lo[0]) && fr.ok_y(l.hi[0]))
        svg += fmt::format("<path class=\"interval\" d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}"
                           "M{3:.1f},{2:.1f}H{4:.1f}\" stroke=\"{5}\" stroke-width=\"1.6\" fill=\"none\"/>\n",
                           x, fr.ty(l.lo[0]), fr.ty(l.hi[0]), x - 5, x + 5, l.colour);
      if (fr.ok_y(l.ys[0]))
        svg += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", x,
                           fr.ty(l.ys[0]), l.colour);
      break;
    }
    case K::hline:
      if (fr.ok_y(l.ys[0]))
        svg += fmt::format("<line class=\"hline\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
                           "stroke=\"{}\"{}/>\n",
                           fr.left, fr.left + fr.pw, fr.ty(l.ys[0]), fr.ty(l.ys[0]), l.colour, dash);
      break;
    case K::vline:
      if (fr.ok_x(l.xs[0]))
        svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"{}/>\n",
                           fr.tx(l.xs[0]), fr.tx(l.xs[0]), fr.top, fr.top + fr.ph, l.colour, dash);
      break;
  }
  return svg;
}

// A legend entry's swatch at (lx, ly), drawn as its layer is.
std::string draw_swatch(const Layer& l, double lx, double ly) {
  switch (l.kind) {
    case K::points:
      if (l.shape == "diamond")
        return fmt::format("<path class=\"swatch\" d=\"M{:.1f},{:.1f}l5,5l-5,5l-5,-5z\" fill=\"{}\" stroke=\"{}\"/>",
                           lx + 9, ly - 5, l.hollow ? "none" : l.colour, l.colour);
      return fmt::format("<circle class=\"swatch\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.2\" fill=\"{}\" "
                         "stroke=\"{}\"/>",
                         lx + 9, ly, l.hollow ? "none" : l.colour, l.colour);
    case K::interval:
      return fmt::format("<path class=\"swatch\" d=\"M{0:.1f},{1:.1f}V{2:.1f}M{3:.1f},{1:.1f}H{4:.1f}"
                         "M{3:.1f},{2:.1f}H{4:.1f}\" stroke=\"{5}\" stroke-width=\"1.6\" fill=\"none\"/>"
                         "<circle cx=\"{6:.1f}\" cy=\"{7:.1f}\" r=\"3\" fill=\"{5}\"/>",
                         lx + 9, ly - 6, ly + 6, lx + 5, lx + 13, l.colour, lx + 9, ly);
    case K::span:
      return fmt::format("<rect class=\"swatch\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"18\" height=\"11\" fill=\"{}\" "
                         "fill-opacity=\"0.25\" stroke=\"none\"/>",
                         lx, ly - 5.5, l.colour);
    default:
      return fmt::format("<line class=\"swatch\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" "
                         "stroke=\"{}\" stroke-width=\"1.8\"{}/>",
                         lx, lx + 18, ly, ly, l.colour, l.dashed ? " stroke-dasharray=\"5,4\"" : "");
  }
}

// Legend: per entry a swatch and its label's lines, in a column right of the frame.
std::string draw_legend(const Legend& legend, const Frame& fr) {
  std::string svg;
  double ly = fr.top + 8;
  const double lx = fr.left + fr.pw + 10;
  for (size_t e = 0; e < legend.entries.size(); ++e) {
    svg += "<g class=\"legend-entry\">";
    svg += draw_swatch(*legend.entries[e], lx, ly);
    svg += fmt::format("<text class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\">", lx + 24, ly + 4);
    const auto& lines = legend.lines[e];
    for (size_t k = 0; k < lines.size(); ++k)
      svg += fmt::format("<tspan x=\"{:.1f}\" dy=\"{}\">{}</tspan>", lx + 24, k ? kLinePx : 0, escape(lines[k]));
    svg += "</text></g>\n";
    ly += kLinePx * static_cast<double>(lines.size()) + 3;
  }
  return svg;
}

}  // namespace

std::string render_svg(const analysis::Figure& f, const std::string& id, int width, int height_hint) {
  Frame fr;
  fit_ranges(f, fr.xr, fr.yr);
  // The title, in as many lines as the width needs (13 px, bold: about 8 px a character).
  const std::vector<std::string> title_lines = wrap(f.title, (width - 20) * kCharPx / 8.2);
  fr.top = 12 + 16 * static_cast<double>(title_lines.size());
  // Nothing finite to plot: the frame's place says so, at the hinted height.
  if (!fr.xr.valid() || !fr.yr.valid()) {
    return svg_header(f, id, width, height_hint, title_lines) +
           fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#5a6475\">no data yet</text></svg>\n",
                       width / 2, height_hint / 2);
  }
  if (f.categories.empty()) pad(fr.xr);
  pad(fr.yr);
  // A figure's own ranges replace the fitted ones (the val curves' zoom on the end of training).
  if (f.x_range && f.categories.empty()) fr.xr.lo = f.x_range->first, fr.xr.hi = f.x_range->second;
  if (f.y_range) fr.yr.lo = f.y_range->first, fr.yr.hi = f.y_range->second;
  const Legend legend = layout_legend(f, width);
  fr.pw = width - fr.left - legend.right;
  // Category labels: flat, wrapped or turned, whichever keeps neighbours apart.
  CategoryLayout cats =
      // The category spacing in pixels: the plot's width over the x range in category units.
      f.categories.empty() ? CategoryLayout{} : layout_categories(f.categories, fr.pw / (fr.xr.hi - fr.xr.lo));
  if (cats.mode == CategoryLayout::Mode::turned) make_room_for_turned(fr, cats, f.categories, width, legend.right);
  const double x_label_px = f.x_label.empty() ? 0 : 16;
  const double bottom = 28 + cats.height + x_label_px;
  // Tall enough for the whole legend beside the plot, and for the y label along it.
  const int height = std::max({height_hint, static_cast<int>(std::ceil(fr.top + 8 + legend.height + 8)),
                               static_cast<int>(std::ceil(fr.top + bottom + text_px(f.y_label) + 12))});
  fr.ph = height - fr.top - bottom;

  std::string svg = svg_header(f, id, width, height, title_lines);
  svg += draw_axes(f, fr, cats, height);
  // Layers, clipped to the frame.
  // The clip path's id carries the figure's, so the plots of one page do not share one clip.
  const std::string clip = "clip-" + id;
  svg += fmt::format("<clipPath id=\"{}\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>"
                     "</clipPath><g clip-path=\"url(#{})\">\n",
                     escape(clip), fr.left, fr.top, fr.pw, fr.ph, escape(clip));
  for (const auto& l : f.layers) svg += draw_layer(l, fr);
  svg += "</g>\n";
  for (const auto& [x, label] : f.top_labels)
    if (fr.ok_x(x) && x >= fr.xr.lo && x <= fr.xr.hi)
      svg += fmt::format("<text class=\"region\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#5a6475\">{}</text>\n",
                         fr.tx(x), fr.top + 12, escape(label));
  svg += draw_legend(legend, fr);
  svg += "</svg>\n";
  return svg;
}

}  // namespace egm::serve
