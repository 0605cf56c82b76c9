// The exact source this egm was built from: the commit, and when the tree had
// changes against it, the modification itself (`git diff HEAD` of tracked
// files, cmake/WriteVersionHeader.cmake), so a number trained by a modified
// build can be traced to the code that made it. Every run records the commit
// and the diff's sha256; the coordinator stores the diff with the sweep's
// runs (`egm runs --show-diff CELL`).
#pragma once

#include <cstdint>
#include <string_view>

namespace egm {

struct SourceState {
  std::string_view commit;       // EGM_GIT_COMMIT: "<12 hex>", "<12 hex>-dirty" or "unknown"
  std::string_view diff;         // the modification as built, at most its first 512 KiB; empty when clean
  std::string_view diff_sha256;  // of the whole diff; empty when clean
  uint64_t diff_size = 0;        // bytes of the whole diff

  bool modified() const { return !diff_sha256.empty(); }
  bool diff_truncated() const { return diff.size() < diff_size; }
};

const SourceState& source_state();

}  // namespace egm
