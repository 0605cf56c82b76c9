#include <gtest/gtest.h>

#include <filesystem>

#include "util/error.h"
#include "util/files.h"
#include "util/sha256.h"
#include "util/terminal_text.h"

namespace {

TEST(Sha256, MatchesKnownVectors) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(egm::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(egm::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AtomicWrite, ReplacesWholeFileAndLeavesNoTemp) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "egm_test_atomic";
  fs::remove_all(dir);
  egm::make_dirs(dir.string());
  std::string path = (dir / "f.bin").string();
  egm::atomic_write_file(path, "first");
  egm::atomic_write_file(path, "second, longer");
  EXPECT_EQ(egm::read_file(path), "second, longer");
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir)) { (void)e; ++entries; }
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

TEST(Errors, CarryLocationAndType) {
  try {
    EGM_THROW(ConfigError, "value {} is bad", 7);
    FAIL() << "no throw";
  } catch (const egm::ConfigError& e) {
    EXPECT_STREQ(e.what(), "value 7 is bad");
    EXPECT_NE(e.where().find("test_util.cpp:"), std::string::npos) << e.where();
  }
  EXPECT_THROW(egm::read_file("/nonexistent/egm/file"), egm::IoError);
}

}  // namespace

namespace {

// Text from a database on a terminal (issue 40): control bytes shown, never sent.
TEST(TerminalSafe, EscapesControlBytesAndKeepsTheRest) {
  EXPECT_EQ(egm::terminal_safe("plain text\twith tab\nand newline"), "plain text\twith tab\nand newline");
  EXPECT_EQ(egm::terminal_safe("a\x1b]0;title\x07z"), "a\\x1b]0;title\\x07z");
  EXPECT_EQ(egm::terminal_safe("\x7f"), "\\x7f");
  EXPECT_EQ(egm::terminal_safe("csi\xc2\x9b" "2J"), "csi\\u009b2J");  // C1 CSI in UTF-8
  EXPECT_EQ(egm::terminal_safe("caf\xc3\xa9 \xe2\x86\x92"), "caf\xc3\xa9 \xe2\x86\x92");  // UTF-8 kept
  EXPECT_EQ(egm::terminal_safe(std::string("nul\0x", 5)), "nul\\x00x");
}

}  // namespace
