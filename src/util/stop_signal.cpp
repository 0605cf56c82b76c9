#include "util/stop_signal.h"

#include <csignal>
#include <initializer_list>

namespace egm {
namespace {
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  if (sig == SIGINT && g_signal == SIGINT) std::signal(SIGINT, SIG_DFL);  // second Ctrl-C: default
  g_signal = sig;
}
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGUSR2}) sigaction(sig, &sa, nullptr);
}

bool stop_requested() { return g_signal != 0; }
int stop_signal() { return g_signal; }
void request_stop(int signal_number) { g_signal = signal_number; }
void clear_stop_request() { g_signal = 0; }

}  // namespace egm
