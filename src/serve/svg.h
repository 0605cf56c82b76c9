// Plots as inline SVG, drawn by egm itself (no gnuplot, no JavaScript): a
// frame with ticks (linear, or decades on a log axis), then layers in the
// order added: shaded bands, lines, points, vertical intervals and labelled
// reference lines, and a legend. Enough for the three plots of a sweep page
// (val curves with seed bands, the omega-sigma plane, the interaction) and a
// cell's loss curves. Non-finite values are skipped (a line breaks there);
// on a log axis so are values <= 0.
#pragma once

#include <string>
#include <vector>

namespace egm::serve {

// A colour of the palette by index (cycles), "#1f77b4", ...
std::string palette(size_t index);

class SvgPlot {
 public:
  SvgPlot(std::string title, std::string x_label, std::string y_label);
  SvgPlot& log_x(bool on = true);
  SvgPlot& log_y(bool on = true);
  // Category labels at x = 0, 1, ... instead of numeric ticks.
  SvgPlot& categories(std::vector<std::string> labels);
  // Forces the x range to include [lo, hi] (e.g. to show region boundaries).
  SvgPlot& include_x(double lo, double hi);

  // The band between lo and hi over xs (a seed band), filled translucent.
  SvgPlot& band(const std::vector<double>& xs, const std::vector<double>& lo, const std::vector<double>& hi,
                const std::string& colour);
  SvgPlot& line(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& colour,
                const std::string& label, bool dashed = false);
  SvgPlot& points(const std::vector<double>& xs, const std::vector<double>& ys, const std::string& colour,
                  const std::string& label, bool hollow = false, const std::string& shape = "circle");
  // A vertical interval [lo, hi] at x with a dot at y (an estimate with its CI).
  SvgPlot& interval(double x, double y, double lo, double hi, const std::string& colour, double dx = 0);
  SvgPlot& hline(double y, const std::string& colour, const std::string& label, bool dashed = true);
  SvgPlot& vline(double x, const std::string& colour, const std::string& label, bool dashed = true);

  // The <svg> element (with a <title> for screen readers), `width` x `height` px.
  // `id` becomes the element's id (tests and links find plots by it).
  std::string render(const std::string& id, int width = 720, int height = 380) const;
  bool empty() const;  // nothing drawable was added

 private:
  struct Layer {
    enum Kind { band, line, points, interval, hline, vline } kind = line;
    std::vector<double> xs, ys, lo, hi;
    std::string colour, label, shape;
    bool dashed = false, hollow = false;
    double dx = 0;
  };
  std::string title_, x_label_, y_label_;
  bool log_x_ = false, log_y_ = false;
  std::vector<std::string> categories_;
  std::vector<double> x_extra_;
  std::vector<Layer> layers_;
};

}  // namespace egm::serve
