// gnuplot: finding and running it (no shell), and a figure (figures.h) as a
// script with its data file, drawn as PNG and SVG.
#include "analysis/gnuplot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/figures.h"
#include "util/error.h"
#include "util/files.h"

namespace egm::analysis {

namespace {

bool is_executable_file(const std::string& path) {
  struct stat st {};
  // A regular file: access(X_OK) alone is also true for a searchable directory.
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> find_program(const std::string& program) {
  if (program.empty()) return std::nullopt;
  // A path with a '/' is used as given, as a shell would; only a bare name searches PATH.
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program)) return program;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  // No PATH at all: a conventional default search path.
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(start, colon - start);
    // An empty PATH entry means the current directory (POSIX).
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

GnuplotRun run_gnuplot(const std::string& gnuplot_path, const std::string& script, const std::string& directory) {
  // Output to a file, not a pipe: no reading loop, and no deadlock on a full pipe.
  const std::string log_path = directory + "/.gnuplot_output.log";
  // The child changes directory before exec: a relative program path would break.
  const std::string program = std::filesystem::absolute(gnuplot_path).string();
  // Everything the child needs is prepared before fork: it only calls
  // async-signal-safe functions.
  std::vector<char*> argv{const_cast<char*>(program.c_str()), const_cast<char*>(script.c_str()), nullptr};
  // O_CLOEXEC: the child keeps the log only as its dup2'ed stdout and stderr (dup2 clears the flag).
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EGM_REQUIRE(log_fd >= 0, IoError, "cannot create {}: {}", log_path, std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    EGM_THROW(IoError, "cannot start {}: fork failed: {}", gnuplot_path, std::strerror(errno));
  }
  if (pid == 0) {
    // stdin from /dev/null: gnuplot never waits on a terminal.
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    // 126 and 127 as a shell reports them: could not enter, could not execute.
    if (::chdir(directory.c_str()) != 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    // _exit, not exit: the forked child must not run the parent's atexit handlers or flush its stdio.
    ::_exit(127);
  }
  ::close(log_fd);
  int status = 0;
  // Retried when a signal interrupts the wait.
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) EGM_THROW(IoError, "waiting for {} failed: {}", gnuplot_path, std::strerror(errno));
  }
  GnuplotRun run;
  // Killed by a signal: 128 + its number, as shells report it.
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  run.output = read_file(log_path);
  ::unlink(log_path.c_str());
  if (run.exit_code == 127 && run.output.empty()) run.output = "could not execute " + gnuplot_path;
  if (run.exit_code == 126 && run.output.empty()) run.output = "could not enter " + directory;
  return run;
}

namespace {

// A gnuplot single-quoted string: no escapes inside, a quote is doubled.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A data-file value; '?' is declared missing in every script.
// 10 significant digits: finer than any plot resolves.
std::string gp_num(double x) { return std::isfinite(x) ? fmt::format("{:.10g}", x) : "?"; }

int point_type(const FigureLayer& l) {
  // gnuplot's point types: 6 and 7 open and filled circles, 12 and 13 open and filled diamonds.
  if (l.shape == "diamond") return l.hollow ? 12 : 13;
  return l.hollow ? 6 : 7;
}

// The x tic step of a count axis: a whole 1, 2, 5 x 10^k giving at most about 10 tics.
int integer_xtic_step(const Figure& f) {
  double lo = 0, hi = 1;
  if (f.x_range) {
    lo = f.x_range->first, hi = f.x_range->second;
  } else {
    for (const auto& l : f.layers)
      for (double x : l.xs)
        if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  // About 10 tics over the range.
  const double raw = (hi - lo) / 10;
  for (int mag = 1;; mag *= 10)
    for (int m : {1, 2, 5})
      // The cap on the magnitude ends the loop for an absurd range.
      if (m * mag >= raw || mag > 100000000) return m * mag;
}

// The settings before `plot`: title, labels, log scales, the x axis (categories,
// a fixed range, or autoscaled; count tics) and the y range, and the region labels.
std::string gp_settings(const Figure& f, int width) {
  std::string body = "set title " + gp_quote(f.title) + "\n";
  body += "set xlabel " + gp_quote(f.x_label) + "\nset ylabel " + gp_quote(f.y_label) + "\n";
  // Bands filled at 18% opacity, as the SVG draws them (fill-opacity 0.18).
  body += "set grid\nset key outside right top Left reverse\nset style fill transparent solid 0.18 noborder\n";
  body += f.log_x ? "set logscale x\n" : "unset logscale x\n";
  body += f.log_y ? "set logscale y\n" : "unset logscale y\n";
  if (!f.categories.empty()) {
    std::string tics;
    for (size_t i = 0; i < f.categories.size(); ++i)
      tics += fmt::format("{}{} {}", i ? ", " : "", gp_quote(f.categories[i]), i);
    body += "set xtics (" + tics + ")\n";
    // Turned when the longest label would not fit its share of the plot's
    // width (about 70% of the image; 10-point sans, about 7 px a character).
    size_t longest = 0;
    for (const auto& c : f.categories) longest = std::max(longest, c.size());
    if (7.0 * static_cast<double>(longest) > 0.7 * width / static_cast<double>(f.categories.size()) - 10)
      body += "set xtics rotate by -30 right\n";
    // The same x range as the SVG's category axis: -0.6 to n - 0.4.
    body += fmt::format("set xrange [-0.6:{}]\n", static_cast<double>(f.categories.size()) - 0.4);
    body += "set offsets 0, 0, graph 0.08, graph 0.08\n";  // keep markers off the frame
  } else if (f.x_range) {
    body += fmt::format("set xrange [{}:{}]\n", gp_num(f.x_range->first), gp_num(f.x_range->second));
  } else {
    body += "set autoscale x\n";
  }
  if (f.categories.empty() && f.integer_x) body += fmt::format("set xtics {}\n", integer_xtic_step(f));
  if (f.y_range)
    body += fmt::format("set yrange [{}:{}]\n", gp_num(f.y_range->first), gp_num(f.y_range->second));
  else
    body += "set autoscale y\n";
  for (const auto& [x, label] : f.top_labels)
    // graph 0.97: just under the frame's top, whatever the y range.
    body += fmt::format("set label {} at {}, graph 0.97 center textcolor rgb 'gray30'\n", gp_quote(label), gp_num(x));
  return body;
}

// The layers: spans and vertical lines become objects and arrows in `body`,
// every other layer a block of `data` (gnuplot's `index`) and a clause of `plots`.
void gp_layers(const Figure& f, std::string& body, std::string& data, std::vector<std::string>& plots) {
  using K = FigureLayer::Kind;
  // The legend's rule (figures.h): these layers have a title, every other one `notitle`.
  const std::vector<const FigureLayer*> legend = legend_entries(f);
  auto title_of = [&](const FigureLayer& l) {
    return std::find(legend.begin(), legend.end(), &l) == legend.end() ? std::string("notitle")
                                                                       : "title " + gp_quote(l.label);
  };
  const std::string dat = f.name + ".dat";
  int index = 0, object = 0;
  for (const auto& l : f.layers) {
    const std::string dash = l.dashed ? " dt 2" : "";
    switch (l.kind) {
      case K::span:
        if (l.xs.size() == 2)  // the whole height between two x values, behind the data
          body += fmt::format("set object {} rect from {}, graph 0 to {}, graph 1 behind fc rgb '{}' "
                              "fs transparent solid 0.08 noborder\n",
                              ++object, gp_num(l.xs[0]), gp_num(l.xs[1]), l.colour);
        if (title_of(l) != "notitle")
          // keyentry: a legend entry that plots nothing.
          plots.push_back(fmt::format("keyentry with boxes fs transparent solid 0.25 noborder lc rgb '{}' {}",
                                      l.colour, title_of(l)));
        continue;
      case K::vline:
        // In graph coordinates the arrow spans the full height, whatever the y range.
        body += fmt::format("set arrow from {0}, graph 0 to {0}, graph 1 nohead{1} lc rgb '{2}'\n", gp_num(l.xs[0]),
                            dash, l.colour);
        continue;
      case K::hline:
        // A constant plots as a horizontal line across the x range.
        plots.push_back(fmt::format("{} with lines lw 1.2{} lc rgb '{}' {}", gp_num(l.ys[0]), dash, l.colour,
                                    title_of(l)));
        continue;
      default: break;
    }
    if (l.xs.empty()) {  // a legend entry only
      // 1/0 is undefined everywhere: gnuplot draws nothing but keeps the title.
      plots.push_back(fmt::format("1/0 with {} lc rgb '{}' {}", l.kind == K::points ? "points" : "lines lw 2",
                                  l.colour, title_of(l)));
      continue;
    }
    // Two blank lines between blocks: what gnuplot's `index` counts.
    data += fmt::format("{}# index {}: {}{}\n", index ? "\n\n" : "", index, l.label.empty() ? "(unlabelled)" : l.label,
                        l.kind == K::band ? " (x low high)" : l.kind == K::interval ? " (x y low high)" : " (x y)");
    for (size_t i = 0; i < l.xs.size(); ++i) {
      if (l.kind == K::band)
        data += fmt::format("{} {} {}\n", gp_num(l.xs[i]), gp_num(l.lo[i]), gp_num(l.hi[i]));
      else if (l.kind == K::interval)
        data += fmt::format("{} {} {} {}\n", gp_num(l.xs[i] + l.dx), gp_num(l.ys[i]), gp_num(l.lo[i]),
                            gp_num(l.hi[i]));
      else
        // A y missing from a layer writes '?', which the script declares missing.
        data += fmt::format("{} {}\n", gp_num(l.xs[i]), i < l.ys.size() ? gp_num(l.ys[i]) : "?");
    }
    const std::string src = fmt::format("{} index {}", gp_quote(dat), index++);
    switch (l.kind) {
      case K::band:
        if (f.y_range) {
          // Clamped to the frame in the script (the data stays exact): gnuplot
          // draws a filled band that leaves the y range as stray polygons.
          const std::string lo = gp_num(f.y_range->first), hi = gp_num(f.y_range->second);
          auto clamp = [&](int col) {
            return fmt::format("(${0} < {1} ? {1} : ${0} > {2} ? {2} : ${0})", col, lo, hi);
          };
          plots.push_back(fmt::format("{} using 1:{}:{} with filledcurves lc rgb '{}' notitle", src, clamp(2), clamp(3),
                                      l.colour));
        } else {
          plots.push_back(fmt::format("{} using 1:2:3 with filledcurves lc rgb '{}' notitle", src, l.colour));
        }
        break;
      case K::line:
        plots.push_back(fmt::format("{} using 1:2 with lines lw 2{} lc rgb '{}' {}", src, dash, l.colour, title_of(l)));
        break;
      case K::points:
        plots.push_back(fmt::format("{} using 1:2 with points pt {} ps 0.8 lc rgb '{}' {}", src, point_type(l),
                                    l.colour, title_of(l)));
        break;
      case K::interval:
        plots.push_back(fmt::format("{} using 1:2:3:4 with yerrorbars pt 7 ps 1.2 lc rgb '{}' {}", src, l.colour,
                                    title_of(l)));
        break;
      default: break;
    }
  }
}

}  // namespace

GnuplotFigure gnuplot_figure(const Figure& f, int width, int height) {
  GnuplotFigure out;
  out.data = fmt::format("# {}: the data of {}.gp, one block per layer (gnuplot index)\n", f.title, f.name);
  std::string body = gp_settings(f, width);
  std::vector<std::string> plots;
  gp_layers(f, body, out.data, plots);
  body += "set samples 400\n";
  // One plot clause a line, each continued by a trailing backslash.
  body += plots.empty() ? "plot 1/0 notitle\n" : "plot " + fmt::format("{}", fmt::join(plots, ", \\\n     ")) + "\n";
  // The body runs twice (PNG, then SVG): the second run must not inherit the first's arrows, labels and objects.
  body += "unset arrow\nunset label\nunset object\n";

  // The same body drawn twice: PNG (pngcairo where gnuplot has it), then SVG.
  std::string& s = out.script;
  s = fmt::format("# Generated by egm report; run `gnuplot {}.gp` in this folder to redraw.\n", f.name);
  s += "set encoding utf8\nset datafile missing '?'\n";
  // pngcairo antialiases; plain png is the fallback where gnuplot was built without cairo.
  s += "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n";
  // noenhanced: labels print as given (an underscore in a variant name is no subscript).
  s += fmt::format("  set terminal pngcairo size {},{} noenhanced font 'sans,10'\n", width, height);
  s += "} else {\n";
  s += fmt::format("  set terminal png size {},{} noenhanced\n", width, height);
  s += "}\n";
  s += fmt::format("set output '{}.png'\n", f.name);
  s += body;
  s += "unset output\n";
  s += fmt::format("set terminal svg size {},{} dynamic noenhanced font 'sans,11' background rgb 'white'\n", width,
                   height);
  s += fmt::format("set output '{}.svg'\n", f.name);
  s += body;
  s += "unset output\n";
  return out;
}

}  // namespace egm::analysis
