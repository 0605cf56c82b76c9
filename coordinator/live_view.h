// The coordinator's live view of a sweep: one line per running cell (variant,
// seed, step/max, latest train loss, tokens/s, ETA) under a progress bar with
// the counts (pending/running/done/failed) and the sweep's ETA.
//
// On a terminal the block is redrawn in place with ANSI codes; otherwise (a
// Slurm log, a pipe) a plain status line is printed every ~10 s so logs stay
// readable. Lines that must stay (a cell finished, a signal arrived) go
// through message(), above the live block.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace egm::coordinator {

enum class ViewMode { automatic, tty, plain, none };
// "auto", "tty", "plain", "none"; ConfigError otherwise.
ViewMode parse_view_mode(const std::string& name);

struct CellLine {
  std::string key;
  std::string variant;
  uint64_t seed = 0;
  int worker = 0;          // the rank training it (the leader of a data-parallel run)
  std::vector<int> group;  // all its ranks, when more than one ("w1+2")
  int attempt = 1;
  std::optional<int64_t> step;
  int64_t max_steps = 0;
  std::optional<double> loss;
  std::optional<double> tokens_per_s;
  std::optional<double> eta_s;
};

struct SweepView {
  std::string sweep;
  int64_t total = 0;
  int64_t pending = 0;
  int64_t running = 0;
  int64_t done = 0;
  int64_t failed = 0;  // out of retries
  double fraction = 0;  // of the steps that will run
  std::optional<double> eta_s;
  double elapsed_s = 0;
  std::string note;  // e.g. "stopping: waiting for 2 checkpoints"
  std::vector<CellLine> cells;
};

// "45s", "12m03s", "2h05m"; "?" when unknown.
std::string format_duration_short(std::optional<double> seconds);
// "12.3k", "1.20M".
std::string format_rate(double per_second);
// "[#####-----]" with `width` cells between the brackets.
std::string progress_bar(double fraction, int width);

std::string render_cell_line(const CellLine& cell);
std::string render_summary_line(const SweepView& view, int bar_width);
// The whole block (summary line first), each line cut to `columns`.
std::vector<std::string> render_block(const SweepView& view, int columns);
// One line for logs: counts, percentage, ETA and the running cells compactly.
std::string render_plain_line(const SweepView& view);

class LiveView {
 public:
  LiveView(std::FILE* out, ViewMode mode, double plain_interval_s = 10.0);
  ~LiveView();
  ViewMode mode() const { return mode_; }
  // Whether show() would draw now (so the caller builds the view only then).
  bool due() const;
  void show(const SweepView& view);
  // A line that stays, printed above the live block (with the time in plain mode).
  void message(const std::string& line);
  // Leaves the last block on screen and stops redrawing.
  void close();

 private:
  void erase_block();
  void draw(const std::vector<std::string>& lines);
  int columns() const;

  std::FILE* out_;
  ViewMode mode_;
  double interval_s_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_once_ = false;
  std::vector<std::string> block_;  // what is on screen (tty)
  bool closed_ = false;
};

}  // namespace egm::coordinator
