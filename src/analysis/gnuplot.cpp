#include "analysis/gnuplot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "util/error.h"
#include "util/files.h"

namespace egm::analysis {

namespace {

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> find_program(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program)) return program;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(start, colon - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

GnuplotRun run_gnuplot(const std::string& gnuplot_path, const std::string& script, const std::string& directory) {
  const std::string log_path = directory + "/.gnuplot_output.log";
  // The child changes directory before exec: a relative program path would break.
  const std::string program = std::filesystem::absolute(gnuplot_path).string();
  // Everything the child needs is prepared before fork: it only calls
  // async-signal-safe functions.
  std::vector<char*> argv{const_cast<char*>(program.c_str()), const_cast<char*>(script.c_str()), nullptr};
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EGM_REQUIRE(log_fd >= 0, IoError, "cannot create {}: {}", log_path, std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    EGM_THROW(IoError, "cannot start {}: fork failed: {}", gnuplot_path, std::strerror(errno));
  }
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    if (::chdir(directory.c_str()) != 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) EGM_THROW(IoError, "waiting for {} failed: {}", gnuplot_path, std::strerror(errno));
  }
  GnuplotRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  run.output = read_file(log_path);
  ::unlink(log_path.c_str());
  if (run.exit_code == 127 && run.output.empty()) run.output = "could not execute " + gnuplot_path;
  if (run.exit_code == 126 && run.output.empty()) run.output = "could not enter " + directory;
  return run;
}

}  // namespace egm::analysis
