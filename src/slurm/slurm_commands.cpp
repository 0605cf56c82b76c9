// Running sbatch, squeue and sacct (see slurm_commands.h).
#include "slurm/slurm_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "slurm/batch_script.h"
#include "util/error.h"

namespace egm::slurm {
namespace {

// The PATH search execvp would do, done before fork so the child needs no allocation and a missing program is known.
std::optional<std::string> find_in_path(const std::string& program) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) return executable(program) ? std::optional(program) : std::nullopt;
  const char* path_env = std::getenv("PATH");
  const std::string dirs = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(start, colon - start);
    // An empty PATH entry means the current directory, as POSIX shells read it.
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (executable(candidate)) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

std::string trim(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  return text.substr(start);
}

std::string first_line(const std::string& text) {
  const std::string t = trim(text);
  return t.substr(0, t.find('\n'));
}

}  // namespace

ProgramRun run_program(const std::vector<std::string>& argv_in, double timeout_s) {
  EGM_CHECK(!argv_in.empty(), "run_program: empty command");
  ProgramRun run;
  const std::optional<std::string> program = find_in_path(argv_in[0]);
  // started stays false: the caller says the program is missing rather than that it failed.
  if (!program) return run;

  // Everything the child needs is built before fork: it calls only
  // async-signal-safe functions.
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program->c_str()));
  for (std::size_t i = 1; i < argv_in.size(); ++i) argv.push_back(const_cast<char*>(argv_in[i].c_str()));
  argv.push_back(nullptr);
  int out_pipe[2], err_pipe[2];
  // O_CLOEXEC: the pipes never leak into the child's exec or into other children of this process.
  EGM_REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0, IoError, "pipe failed: {}", std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(out_pipe[0]), ::close(out_pipe[1]);
    EGM_THROW(IoError, "pipe failed: {}", std::strerror(err));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    EGM_THROW(IoError, "cannot start {}: fork failed: {}", argv_in[0], std::strerror(err));
  }
  if (pid == 0) {
    // stdin from /dev/null: sbatch or squeue must never wait on the terminal.
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    // dup2 clears O_CLOEXEC on the copy, so stdout and stderr survive the exec while the originals close.
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execv(argv[0], argv.data());
    // Reached only if exec failed; _exit skips the parent's atexit handlers and stdio buffers. 127 as a shell's "not found".
    ::_exit(127);
  }
  // The parent closes its write ends, so a read returns 0 once the child (the last writer) exits.
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  run.started = true;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open_fds = 2;
  // Both pipes are drained together: a child that fills one while the parent blocks on the other would deadlock.
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    // At most a second per poll, so the deadline is rechecked even with no output.
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      // poll ignores a negative fd, so a closed pipe stays in the array harmlessly.
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  // Reaped in every case (also after SIGKILL on a timeout), so no zombie is left behind.
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // 128 + signal: the shell's convention for a child killed by a signal.
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::uint64_t submit_batch_script(const std::string& script_path, const std::string& sbatch) {
  namespace fs = std::filesystem;
  // Absolute, so the message that says how to submit by hand works from any directory.
  const std::string script = fs::absolute(script_path).string();
  // 120 s: a busy slurmctld can take tens of seconds to answer; longer means it is down.
  const ProgramRun run = run_program({sbatch, script}, 120);
  EGM_REQUIRE(run.started, Error,
              "cannot run '{}': not found or not executable; is Slurm installed here (a login node)? The script is "
              "written, submit it yourself with: sbatch {}",
              sbatch, script);
  EGM_REQUIRE(!run.timed_out, Error, "'{} {}' did not answer within 120 s (slurmctld down?)", sbatch, script);
  EGM_REQUIRE(run.exit_code == 0, Error, "sbatch failed (exit {}) for {}: {}", run.exit_code, script,
              trim(run.err.empty() ? run.out : run.err));
  return parse_sbatch_job_id(run.out);
}

// Slurm's states in which the job may still run (or run again); the rest are final.
bool JobState::active() const {
  for (const char* s : {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                        "RESIZING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"})
    if (state == s) return true;
  return false;
}

JobState query_job_state(const std::string& job_id) {
  // -h: no header; -t all: finished jobs too, while the controller still remembers them; %T: the state's long name.
  const ProgramRun squeue = run_program({"squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"}, 30);
  if (!squeue.started) return {"unknown (squeue unavailable)", ""};
  const std::string from_squeue = first_line(squeue.out);
  if (squeue.exit_code == 0 && !from_squeue.empty()) return {from_squeue, "squeue"};
  // The controller forgot the job (MinJobAge passed): ask accounting. "-X"
  // gives the allocation only, "CANCELLED by 0" is cut to its first word.
  const ProgramRun sacct = run_program({"sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"}, 30);
  const std::string from_sacct = first_line(sacct.out);
  if (sacct.started && sacct.exit_code == 0 && !from_sacct.empty())
    return {from_sacct.substr(0, from_sacct.find(' ')), "sacct"};
  const std::string why_squeue = squeue.exit_code == 0 ? "not in squeue" : "squeue: " + first_line(squeue.err);
  const std::string why_sacct = !sacct.started ? "sacct unavailable"
                                : sacct.exit_code != 0 ? "sacct: " + first_line(sacct.err)
                                                       : "not in sacct";
  return {"unknown (" + why_squeue + "; " + why_sacct + ")", ""};
}

}  // namespace egm::slurm
