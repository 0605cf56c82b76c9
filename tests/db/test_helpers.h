// Shared by the db and spec tests: a scratch folder per test, file snapshots
// (bytes and mtime) to prove a file was not touched, and a tiny sweep fixture.
#pragma once

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "db/results_db.h"
#include "util/files.h"

namespace egm::testing {

class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("egm_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct FileSnapshot {
  bool exists = false;
  std::string bytes;
  struct timespec mtime {};
  static FileSnapshot of(const std::string& path) {
    FileSnapshot s;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return s;
    s.exists = true;
    s.bytes = read_file(path);
    s.mtime = st.st_mtim;
    return s;
  }
  bool same_as(const FileSnapshot& o) const {
    return exists == o.exists && bytes == o.bytes && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

// A cell input with a made-up config (the db layer treats configs as opaque).
inline db::CellInput make_cell(const std::string& variant, int64_t seed, int64_t max_steps = 100,
                               int max_attempts = 2, const std::string& hash_salt = "") {
  db::CellInput c;
  c.key = variant + "-s" + std::to_string(seed);
  c.variant = variant;
  c.seed = seed;
  c.config_json = "{\"variant\":\"" + variant + "\",\"seed\":" + std::to_string(seed) + "}";
  c.config_hash = "hash-" + c.key + hash_salt;
  c.max_steps = max_steps;
  c.max_attempts = max_attempts;
  return c;
}

}  // namespace egm::testing
