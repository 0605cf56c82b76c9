// Run-directory naming and the ownership of a sweep's folder (sweep/run_dirs.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "protocol/run_dirs.h"
#include "util/error.h"
#include "util/files.h"

namespace fs = std::filesystem;
namespace es = egm::protocol;

namespace {
fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("egm_test_run_dirs_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
}  // namespace

TEST(RunDirs, PathIsSweepThenKeyAndTwelveHashCharacters) {
  EXPECT_EQ(es::run_dir("/r", "quick", "ega_mope-s2", "0123456789abcdef0123"), "/r/quick/ega_mope-s2-0123456789ab");
  EXPECT_EQ(es::run_dir("runs", "t", "ega+rope-s0", std::string(64, 'f')), "runs/t/ega+rope-s0-ffffffffffff");
  EXPECT_THROW(es::run_dir("runs", "t", "k", "short"), egm::Error);
}

TEST(RunDirs, OwnFolderIsKeptForeignOrUnmarkedFoldersAreMovedAside) {
  const fs::path root = fresh_dir("own");
  const es::SweepIdentity first{1, "quick", "hashA", 1000.25};
  es::SweepDir d = es::prepare_sweep_dir(root.string(), first);
  EXPECT_EQ(d.path, (root / "quick").string());
  EXPECT_FALSE(d.moved_aside);
  egm::atomic_write_file((root / "quick" / "marker.txt").string(), "checkpoint of sweep 1");

  // The same sweep again (a resume): nothing moves.
  d = es::prepare_sweep_dir(root.string(), first);
  EXPECT_FALSE(d.moved_aside);
  EXPECT_TRUE(fs::exists(root / "quick" / "marker.txt"));

  // Same name, another sweep (superseded by --new-sweep): the old folder goes to quick@1.
  const es::SweepIdentity second{2, "quick", "hashA", 2000.5};
  d = es::prepare_sweep_dir(root.string(), second);
  ASSERT_TRUE(d.moved_aside);
  EXPECT_EQ(*d.moved_aside, (root / "quick@1").string());
  EXPECT_TRUE(fs::exists(root / "quick@1" / "marker.txt"));
  EXPECT_FALSE(fs::exists(root / "quick" / "marker.txt"));

  // Same id but another creation time (the database was deleted and made again): moved too, to a free name.
  const es::SweepIdentity reborn{2, "quick", "hashA", 3000.0};
  d = es::prepare_sweep_dir(root.string(), reborn);
  ASSERT_TRUE(d.moved_aside);
  EXPECT_EQ(*d.moved_aside, (root / "quick@2").string());
  egm::atomic_write_file((root / "quick" / "x").string(), "y");
  fs::remove(root / "quick" / "sweep.json");  // unmarked folder
  d = es::prepare_sweep_dir(root.string(), reborn);
  ASSERT_TRUE(d.moved_aside);
  EXPECT_EQ(*d.moved_aside, (root / "quick@unknown").string());
  EXPECT_TRUE(fs::exists(root / "quick" / "sweep.json"));
  fs::remove_all(root);
}
