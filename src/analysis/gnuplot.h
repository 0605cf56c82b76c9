// Running gnuplot on a generated script: find the program, run it in the
// plot folder without a shell (arguments passed as they are), and keep what
// it printed so a failed plot says why.
#pragma once

#include <optional>
#include <string>

namespace egm::analysis {

// The full path of `program`: itself when it contains a '/', else the first
// executable match on $PATH; nullopt when there is none.
std::optional<std::string> find_program(const std::string& program);

struct GnuplotRun {
  bool ok = false;   // exit status 0
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `gnuplot script` with `directory` as working directory, so the script
// names its data and output files relative to it. IoError when it cannot start.
GnuplotRun run_gnuplot(const std::string& gnuplot_path, const std::string& script, const std::string& directory);

}  // namespace egm::analysis

namespace egm::analysis {

struct Figure;

// A figure (figures.h) as gnuplot input: `data` is NAME.dat (one block per
// data layer, addressed by gnuplot's `index`; '?' marks a missing value) and
// `script` a complete script that draws the figure twice, as NAME.png
// (pngcairo when this gnuplot has it, else libgd's png) and NAME.svg, when run
// by `gnuplot NAME.gp` in the folder holding both files.
struct GnuplotFigure {
  std::string data;
  std::string script;
};
GnuplotFigure gnuplot_figure(const Figure& figure, int width = 1100, int height = 600);

}  // namespace egm::analysis
