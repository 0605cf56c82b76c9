// A figure of src/analysis/figures.h as inline SVG, drawn by egm itself (no
// gnuplot, no JavaScript): a frame with ticks (linear, or decades on a log
// axis), then the figure's layers in order: shaded bands, lines, points,
// vertical intervals, labelled reference lines and full-height spans, clipped
// to the frame; its region labels; a legend of the labelled layers
// (`analysis::legend_entries`), each drawn with a swatch of its own kind and
// its label wrapped to the legend's column. Category labels are set flat,
// wrapped, or turned, whichever keeps them apart; a figure whose legend is
// taller than `height` is drawn taller. The figure decides what is
// drawn and its ranges (`egm report` draws the same figures with gnuplot);
// this file only decides how it looks on a page. Non-finite values are
// skipped (a line breaks there); on a log axis so are values <= 0.
#pragma once

#include <string>

namespace egm::analysis {
struct Figure;
}

namespace egm::serve {

// The <svg> element (with a <title> for screen readers), `width` x at least
// `height` px; `id` becomes the element's id (tests and links find plots by it). A
// figure with nothing to draw says "no data yet".
std::string render_svg(const analysis::Figure& figure, const std::string& id, int width = 720, int height = 380);

}  // namespace egm::serve
