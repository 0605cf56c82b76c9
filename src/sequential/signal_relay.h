// egm sweep's stop signals, relayed to the launch it runs as a child. While a
// StopRelay lives, SIGINT, SIGTERM and SIGUSR2 (Slurm's time-limit warning)
// are passed on to the running child (mpirun, which checkpoints the ranks)
// and remembered, so one that arrives between launches (during a look) still
// stops the --until loop before it trains more seeds. The first one is also
// written where the ranks read the reason (util/stop_signal.h: mpirun passes a
// Ctrl-C on to them as SIGTERM). A signal handler can only reach process
// state, so the relay keeps it here, behind this one class: one relay per
// process at a time.
#pragma once

#include <csignal>
#include <string>
#include <vector>

namespace egm::sequential {

class StopRelay {
 public:
  StopRelay();  // installs the handlers (and the stop file, once per process)
  ~StopRelay();  // restores the handlers it replaced
  StopRelay(const StopRelay&) = delete;
  StopRelay& operator=(const StopRelay&) = delete;

  // The first stop signal that arrived while a relay lived; 0 none.
  static int signal();

  // Runs `command` as a child in a process group of its own (so a terminal's
  // Ctrl-C reaches egm sweep alone, and is relayed) with stdin from
  // /dev/null, and waits for it: its exit status, or 128 + the signal that
  // ended it (127: it could not be started). A stop signal that came before
  // the child started is passed to it at once.
  int run_child(const std::vector<std::string>& command);

 private:
  static constexpr int kSignals[3] = {SIGTERM, SIGUSR2, SIGINT};
  struct sigaction old_[3] {};
};

}  // namespace egm::sequential
