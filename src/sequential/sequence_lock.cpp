// The lock that keeps one egm sweep --until per sweep (sequence_lock.h).
#include "sequential/sequence_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/process_info.h"
#include "util/terminal_text.h"

namespace egm::sequential {

SequenceLock::SequenceLock(const std::string& db_path, const std::string& sweep_name) {
  std::string name;
  // The name becomes a file name: '/' and the like are replaced. Two names that map alike share a lock,
  // which only makes the lock stricter.
  for (char ch : sweep_name) name += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ? ch : '_';
  path_ = db_path + ".until-" + name + ".lock";
  std::error_code ec;  // the database's folder, as the coordinator would make it for the database
  if (const auto dir = std::filesystem::path(db_path).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir, ec);
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  EGM_REQUIRE(fd_ >= 0, IoError, "cannot open {}: {}", path_, std::strerror(errno));
  // flock is released by the kernel when the process dies, so a killed holder never leaves a stale lock.
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[256] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof(holder) - 1, 0);
    std::string who(holder, n > 0 ? static_cast<size_t>(n) : 0);
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    EGM_THROW(ConfigError,
              "sweep {} is being run by another egm sweep --until ({}): one sequence at a time; wait for it to end, "
              "or stop it first (SIGTERM checkpoints it; the same command resumes it); nothing written",
              sweep_name, who.empty() ? "its holder unknown" : terminal_safe(who));
  }
  // Written after the lock is held, so only the holder writes it; a refused process reads it for its message.
  const std::string me = fmt::format("pid {} on {}\n", ::getpid(), process_info().host);
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
    // who holds it is a courtesy for the refusal above; the lock itself holds
  }
}

SequenceLock::~SequenceLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock; the file stays (unlinking it would race a waiter)
}

}  // namespace egm::sequential
