// The stop-signal relay of egm sweep (signal_relay.h): the handler, the file
// the ranks read the signal from, and the child it is passed on to.
#include "sequential/signal_relay.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/error.h"
#include "util/stop_signal.h"

namespace egm::sequential {
namespace {

// What the handler reads and writes: plain process state, as a handler may touch nothing else.
volatile sig_atomic_t g_child = 0;  // the running child, 0 between launches
volatile sig_atomic_t g_stop = 0;   // the first stop signal, 0 none
int g_stop_file_fd = -1;            // util/stop_signal.h: where the ranks read g_stop
std::string g_stop_file;            // its path, removed at exit

void on_stop_signal(int sig) {
  if (g_stop == 0) {
    g_stop = sig;
    if (g_stop_file_fd >= 0) {
      // Two digits by hand: fmt and snprintf are not async-signal-safe; signal numbers are below 100.
      char digits[4] = {static_cast<char>('0' + sig / 10 % 10), static_cast<char>('0' + sig % 10), '\n', 0};
      if (::pwrite(g_stop_file_fd, digits, 3, 0) < 0) {
        // nothing to do in a signal handler: the ranks then name the signal they got
      }
    }
  }
  // Every one is passed on: a second Ctrl-C makes mpirun abort at once.
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

void remove_stop_file() {
  if (!g_stop_file.empty()) ::unlink(g_stop_file.c_str());
}

// Creates the file the ranks read the stop signal from, empty, and names it
// in the environment they inherit (removed when egm sweep exits).
void create_stop_file() {
  if (g_stop_file_fd >= 0) return;
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/egm-sweep-stop-XXXXXX";
  // mkstemp: a unique name created atomically, so two egm sweeps on one host never share a file.
  g_stop_file_fd = ::mkstemp(path.data());
  if (g_stop_file_fd < 0) return;  // without it the ranks name the signal they got
  g_stop_file = path;
  std::atexit(remove_stop_file);
  // Set before any child starts: mpirun passes the environment on to every rank.
  ::setenv(kStopSignalFileEnv, g_stop_file.c_str(), 1);
}

[[noreturn]] void exec_command(const std::vector<std::string>& cmd) {
  if (geteuid() == 0) {
    // Open MPI refuses root unless told; containers run as root.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Returns only on failure; the caller's child then exits 127.
  execvp(argv[0], argv.data());
  EGM_THROW(IoError, "cannot run {}: {}; install Open MPI (mpirun) or pass --mpirun PATH", cmd[0],
            std::strerror(errno));
}

}  // namespace

StopRelay::StopRelay() {
  create_stop_file();
  struct sigaction on {};
  on.sa_handler = on_stop_signal;
  sigemptyset(&on.sa_mask);
  // No SA_RESTART: waitpid returns EINTR on a signal, and run_child's loop simply waits again.
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &on, &old_[i]);
}

StopRelay::~StopRelay() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

int StopRelay::signal() { return g_stop; }

int StopRelay::run_child(const std::vector<std::string>& cmd) {
  // Flushed before fork, or the child would inherit the buffered text and print it a second time.
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  EGM_REQUIRE(pid >= 0, IoError, "cannot fork to run {}: {}", cmd[0], std::strerror(errno));
  if (pid == 0) {
    // A process group of its own: stop signals reach it through on_stop_signal.
    // Not the terminal's foreground group, so no terminal input either (mpirun
    // would stop on reading it): the sweep reads none.
    ::setpgid(0, 0);
    if (const int null = ::open("/dev/null", O_RDONLY); null >= 0) ::dup2(null, STDIN_FILENO);
    try {
      exec_command(cmd);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "egm sweep: %s\n", e.what());
    }
    _exit(127);
  }
  // From here the handler passes signals to the child; before, it only recorded them.
  g_child = pid;
  // A signal between the caller's check and here reached no child: pass it now.
  if (g_stop != 0) kill(pid, g_stop);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace egm::sequential
