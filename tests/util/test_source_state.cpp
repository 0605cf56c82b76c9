// The source state baked into this build (cmake/WriteVersionHeader.cmake):
// consistent with the commit string and with the diff it embeds, whatever the
// tree looked like when the test binary was built (clean in CI, modified while
// someone works).
#include <gtest/gtest.h>

#include <string>

#include "egm/version_info.h"
#include "util/sha256.h"
#include "util/source_state.h"

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

TEST(SourceState, TheCommitSaysDirtyExactlyWhenADiffIsEmbedded) {
  const egm::SourceState& s = egm::source_state();
  EXPECT_EQ(s.commit, EGM_GIT_COMMIT);
  if (s.commit == "unknown") GTEST_SKIP() << "built outside a git checkout: no source state to check";
  EXPECT_EQ(ends_with(s.commit, "-dirty"), s.modified()) << s.commit;
  if (!s.modified()) {
    EXPECT_TRUE(s.diff.empty());
    EXPECT_EQ(s.diff_size, 0u);
    return;
  }
  EXPECT_EQ(s.diff_sha256.size(), 64u);
  EXPECT_FALSE(s.diff.empty());
  EXPECT_LE(s.diff.size(), s.diff_size);
  EXPECT_EQ(s.diff.substr(0, 11), "diff --git ") << "not git's own diff text";
  // The embedded bytes are the diff whose sha256 the runs record (when it was not cut short).
  if (!s.diff_truncated()) {
    EXPECT_EQ(egm::sha256_hex(s.diff), s.diff_sha256);
  }
}

}  // namespace
