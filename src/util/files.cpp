// Files egm writes and reads: atomic writes (a temporary file, fsync, rename),
// whole-file reads, existence checks and mkdir -p, each error naming the path.
#include "util/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace egm {
namespace {

void write_all(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      // path is the temporary file here: the target is untouched.
      ::unlink(path.c_str());
      EGM_THROW(IoError, "cannot write {}: {}{}", path, std::strerror(err),
                err == ENOSPC ? " (the disk is full; free space and retry, nothing was replaced)" : "");
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void atomic_write_file(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // In the target's folder, so the rename stays on one file system (rename is atomic only there);
  // the pid keeps two processes writing the same file from sharing a temporary.
  std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) EGM_THROW(IoError, "cannot create {}: {}", tmp, std::strerror(errno));
  write_all(fd, bytes, tmp);
  // fsync before rename: otherwise a crash could leave the new name pointing at an empty file.
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    EGM_THROW(IoError, "cannot flush {}: {}", tmp, std::strerror(err));
  }
  ::close(fd);
  // rename replaces the target atomically: a reader sees the old file or the new one, never a mix.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    EGM_THROW(IoError, "cannot rename {} to {}: {}", tmp, path, std::strerror(err));
  }
  // Make the rename itself durable.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  // Best effort: a folder that cannot be opened leaves the rename durable on the next sync instead.
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  // Binary mode: the bytes as they are (the corpus hash must match sha256sum's).
  if (!in) EGM_THROW(IoError, "cannot open {}: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) EGM_THROW(IoError, "cannot read {}", path);
  return ss.str();
}

// stat follows links: a dangling link does not exist. Folders count as existing.
bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  // No error when it exists already (mkdir -p); ec, not an exception, so the message names the path.
  std::filesystem::create_directories(path, ec);
  if (ec) EGM_THROW(IoError, "cannot create directory {}: {}", path, ec.message());
}

}  // namespace egm
