// egm_svg_gallery OUT.html: the SVG renderer's hardest cases on one page, for
// tests/serve/browser.py to measure in Chromium (browser_figures.sh): long
// variant and claim names in every legend, thirteen claims' sequences (some
// never bounded), category labels too wide to sit side by side, twelve
// categories, a tall legend. The figures come from the real builders
// (figures.h) where they can, so what is measured is what a page shows.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/figures.h"
#include "serve/svg.h"
#include "stats/confidence_sequence.h"

namespace {

using namespace egm::analysis;

const std::vector<std::string> kVariants{"base",          "ega_causal_rope_only", "mope", "ega_causal_mope+alibi_long",
                                         "ega_db4",       "conv_l16",             "mq_epf", "scale_init",
                                         "ega_morlet",    "sincos"};

Figure sequences() {
  std::vector<ClaimSequence> claims;
  for (size_t c = 0; c < 13; ++c) {
    ClaimSequence s;
    s.claim = c == 12 ? "interaction" : "delta(" + kVariants[c % 10] + (c >= 10 ? "_again" : "") + ")";
    std::vector<double> contrasts;
    const size_t n = c % 3 == 0 ? 4 : 12;  // some claims stop at four seeds: never bounded
    for (size_t i = 0; i < n; ++i)
      contrasts.push_back(0.01 * static_cast<double>(c) - 0.05 + 0.004 * std::sin(static_cast<double>(i + c)));
    s.looks = egm::stats::t_mixture_sequence(contrasts);
    for (const auto& look : s.looks)
      if (look.excludes_zero() && !s.settled_at) s.settled_at = look.n;
    claims.push_back(s);
  }
  Figure f = *sequence_figure(claims, 0.95);
  f.name = "gallery_sequences";
  return f;
}

Figure categories(size_t n) {
  Figure f;
  f.name = fmt::format("gallery_categories_{}", n);
  f.title = "sweep a_rather_long_sweep_name_for_the_title_line: is ega_causal_mope+alibi_long more than the sum of its "
            "parts? verdict: additive-consistent";
  f.y_label = "val loss difference (nats), + = better than base";
  std::vector<double> px, py;
  for (size_t i = 0; i < n; ++i) {
    f.categories.push_back(i + 1 == n ? "interaction I" : "delta(" + kVariants[(i % 9) + 1] + ")");
    const double y = 0.02 * std::sin(static_cast<double>(i));
    f.interval(static_cast<double>(i), y, y - 0.01, y + 0.01, i + 1 == n ? "#d62728" : "#1f77b4", 0,
               i + 1 == n ? "interaction I: mean over seeds, 95% t interval" : "deltas: mean over seeds, 95% t interval");
    px.push_back(static_cast<double>(i) + 0.18);
    py.push_back(y + 0.005);
  }
  f.points(px, py, "#2ca02c", "published (paper)", false, "diamond");
  f.hline(0, "#1d2330", "zero", false);
  return f;
}

Figure plane() {
  std::vector<MopeRun> runs;
  for (size_t v = 0; v < 4; ++v)
    for (int64_t seed = 0; seed < 3; ++seed) {
      MopeRun r;
      r.variant = kVariants[v * 2 + 1] + "_mope";
      r.key = fmt::format("{}-s{}", r.variant, seed);
      for (int i = 0; i < 12; ++i) {
        MopePair p;
        p.sigma0 = 5.0 / std::exp(i / 11.0 * std::log(0.99 * M_PI));
        p.omega0 = 5.0 / p.sigma0;
        p.has_init = true;
        p.sigma = p.sigma0 * (1.3 + 0.1 * static_cast<double>(v + seed));
        p.omega = 5.0 / p.sigma;
        r.pairs.push_back(p);
      }
      runs.push_back(r);
    }
  Figure f = *omega_sigma_figure(runs, "a_rather_long_sweep_name", "gallery_omega_sigma");
  return f;
}

Figure curves() {
  std::vector<VariantCurve> curves;
  for (size_t v = 0; v < kVariants.size(); ++v) {
    std::vector<CurvePointStats> points;
    for (int64_t step = 0; step <= 1000; step += 100) {
      const double loss = 2.5 + 0.01 * static_cast<double>(v) + 1.7 * std::exp(-static_cast<double>(step) / 150.0);
      points.push_back({step, 3, loss, 0.01, loss - 0.01, loss + 0.01});
    }
    curves.emplace_back(kVariants[v] + "_with_a_longer_name", points);
  }
  Figure f = val_curve_figure(curves, "gallery");
  f.name = "gallery_val_curves";
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.html\n", argv[0]);
    return 2;
  }
  std::string html = "<!doctype html><html><head><meta charset=\"utf-8\"><title>svg gallery</title></head><body>\n";
  for (const Figure& f : {sequences(), categories(5), categories(12), plane(), curves()}) {
    std::string id = "plot-" + f.name;
    html += egm::serve::render_svg(f, id) + "\n";
  }
  html += "</body></html>\n";
  std::ofstream(argv[1]) << html;
  return 0;
}
