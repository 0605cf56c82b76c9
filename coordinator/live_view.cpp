// The live view drawn: the progress bar, the summary line with counts and ETA,
// one line per running cell; redrawn in place on a TTY, a status line otherwise.
#include "coordinator/live_view.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "util/enum_names.h"
#include "util/error.h"

namespace egm::coordinator {

ViewMode parse_view_mode(const std::string& name) {
  constexpr const char* kNames[] = {"auto", "tty", "plain", "none"};  // in enum order
  return parse_enum<ViewMode, ConfigError>(name, kNames, "view");
}

std::string format_duration_short(std::optional<double> seconds) {
  // Over 1e8 s (three years) is no real estimate, only a rate near zero.
  if (!seconds || !std::isfinite(*seconds) || *seconds < 0 || *seconds > 1e8) return "?";
  const auto s = static_cast<int64_t>(std::llround(*seconds));
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string format_rate(double v) {
  if (!std::isfinite(v) || v < 0) return "?";
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string progress_bar(double fraction, int width) {
  if (!std::isfinite(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  // The epsilon keeps an exact fraction (0.5 * 30) from flooring one short through rounding.
  const int filled = static_cast<int>(std::floor(fraction * width + 1e-9));
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '-') +
         "]";
}

std::string render_cell_line(const CellLine& c) {
  const std::string step = c.step ? fmt::format("{:>6}/{}", *c.step, c.max_steps) : fmt::format("{:>6}/{}", "-", c.max_steps);
  const std::string loss = c.loss && std::isfinite(*c.loss) ? fmt::format("{:.4f}", *c.loss) : "-";
  const std::string rate = c.tokens_per_s ? format_rate(*c.tokens_per_s) : "-";
  // A data-parallel cell shows all its ranks ("w1+w2"); a single-rank cell its one worker.
  const std::string workers = c.group.size() > 1 ? fmt::format("w{}", fmt::join(c.group, "+")) : fmt::format("w{}", c.worker);
  return fmt::format("  {:<16} seed {:<3} {:<3} try {}  step {}  loss {:<7}  {:>7} tok/s  ETA {}", c.variant, c.seed,
                     workers, c.attempt, step, loss, rate, format_duration_short(c.eta_s));
}

std::string render_summary_line(const SweepView& v, int bar_width) {
  return fmt::format("{} {:5.1f}%  {} done  {} running  {} pending  {} failed  of {}  elapsed {}  ETA {}",
                     progress_bar(v.fraction, bar_width), 100.0 * std::clamp(v.fraction, 0.0, 1.0), v.done, v.running,
                     v.pending, v.failed, v.total, format_duration_short(v.elapsed_s),
                     v.pending + v.running == 0 ? "-" : format_duration_short(v.eta_s));
}

std::vector<std::string> render_block(const SweepView& v, int columns) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("sweep {}{}", v.sweep, v.note.empty() ? "" : "  (" + v.note + ")"));
  lines.push_back(render_summary_line(v, 30));
  for (const auto& c : v.cells) lines.push_back(render_cell_line(c));
  if (columns > 0)
    for (auto& l : lines)
      // Cut to the terminal's width: a wrapped line would throw off the cursor-up count erase_block relies on.
      if (static_cast<int>(l.size()) > columns) l.resize(static_cast<size_t>(columns));
  return lines;
}

std::string render_plain_line(const SweepView& v) {
  std::string line = fmt::format("[{}] {:.1f}%  done {}  running {}  pending {}  failed {}  of {}  elapsed {}  ETA {}",
                                 v.sweep, 100.0 * std::clamp(v.fraction, 0.0, 1.0), v.done, v.running, v.pending,
                                 v.failed, v.total, format_duration_short(v.elapsed_s),
                                 v.pending + v.running == 0 ? "-" : format_duration_short(v.eta_s));
  if (!v.note.empty()) line += "  (" + v.note + ")";
  for (const auto& c : v.cells) {
    line += fmt::format(" | {} {}/{}", c.key, c.step ? std::to_string(*c.step) : "-", c.max_steps);
    if (c.loss && std::isfinite(*c.loss)) line += fmt::format(" loss {:.4f}", *c.loss);
  }
  return line;
}

LiveView::LiveView(std::FILE* out, ViewMode mode, double plain_interval_s)
    : out_(out), mode_(mode), interval_s_(plain_interval_s) {
  // A log file or pipe gets plain lines: escape codes would only clutter it.
  if (mode_ == ViewMode::automatic) mode_ = isatty(fileno(out_)) ? ViewMode::tty : ViewMode::plain;
}

LiveView::~LiveView() { close(); }

int LiveView::columns() const {
  winsize ws{};
  // One column short of the width: a line that fills it exactly makes some terminals wrap.
  if (ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col - 1;
  return 119;
}

bool LiveView::due() const {
  if (closed_ || mode_ == ViewMode::none) return false;
  if (!drawn_once_) return true;
  const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_draw_).count();
  // A TTY redraws twice a second; plain lines come at the slower interval, as each one stays in the log.
  return since >= (mode_ == ViewMode::tty ? 0.5 : interval_s_);
}

void LiveView::erase_block() {
  if (mode_ != ViewMode::tty || block_.empty()) return;
  // Cursor up over the block, then clear to the end of the screen.
  std::fprintf(out_, "\r\x1b[%zuA\x1b[J", block_.size());
  block_.clear();
}

void LiveView::draw(const std::vector<std::string>& lines) {
  for (const auto& l : lines) std::fprintf(out_, "%s\n", l.c_str());
  block_ = lines;
  std::fflush(out_);
}

void LiveView::show(const SweepView& view) {
  if (closed_ || mode_ == ViewMode::none) return;
  last_draw_ = std::chrono::steady_clock::now();
  drawn_once_ = true;
  if (mode_ == ViewMode::tty) {
    erase_block();
    draw(render_block(view, columns()));
  } else {
    std::fprintf(out_, "%s\n", render_plain_line(view).c_str());
    std::fflush(out_);
  }
}

void LiveView::message(const std::string& line) {
  if (mode_ == ViewMode::none) return;
  if (mode_ == ViewMode::tty && !closed_) {
    // A message goes above the live block: the block is erased, the line printed, the block drawn again below it.
    const std::vector<std::string> block = block_;
    erase_block();
    std::fprintf(out_, "%s\n", line.c_str());
    draw(block);
  } else {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char stamp[16];
    std::strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    std::fprintf(out_, "%s %s\n", stamp, line.c_str());
    std::fflush(out_);
  }
}

// The block is left on screen as it was last drawn; later messages print as plain lines.
void LiveView::close() { closed_ = true; }

}  // namespace egm::coordinator
