// The stop signals (INT, TERM, USR2): a handler that only records the first to
// arrive (a second Ctrl-C kills), and every signal's name for messages.
#include "util/stop_signal.h"

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>

namespace egm {
namespace {
// volatile sig_atomic_t: the only type a signal handler may write portably.
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  if (sig == SIGINT && g_signal == SIGINT) std::signal(SIGINT, SIG_DFL);  // second Ctrl-C: default
  // The first stop signal is the reason: after a Ctrl-C, mpirun passes SIGTERM
  // on to the ranks, which must still report the Ctrl-C.
  if (g_signal == 0) g_signal = sig;
}
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: an interrupted read or write resumes; the loops poll stop_requested instead.
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGUSR2}) sigaction(sig, &sa, nullptr);
}

bool stop_requested() { return g_signal != 0; }
int stop_signal() {
  if (g_signal == 0) return 0;
  // The launcher writes the signal it received to this file: it names the real reason when the launcher
  // turned it into another signal for this process (a Ctrl-C forwarded as SIGTERM).
  if (const char* file = std::getenv(kStopSignalFileEnv); file != nullptr && *file != '\0') {
    std::ifstream in(file);
    int launcher_signal = 0;
    if (in >> launcher_signal && launcher_signal > 0 && launcher_signal < 65) return launcher_signal;
  }
  return g_signal;
}
std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(sig);
  }
}

std::string describe_stop_signal(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT (Ctrl-C)";
    case SIGTERM: return "SIGTERM (preemption or cancel)";
    case SIGUSR2: return "SIGUSR2 (time-limit warning)";
    default: return signal_name(sig);
  }
}

void request_stop(int signal_number) { g_signal = signal_number; }
void clear_stop_request() { g_signal = 0; }

}  // namespace egm
