// egm --version (version.h): the build's commit and source state, the LibTorch
// and CUDA versions CMake found when it was built (egm/build_info.h), and the
// results schema version, all compiled-in constants.
#include "cli/version.h"

#include <fmt/format.h>

#include <cstdio>
#include <string_view>

#include "db/migrations.h"
#include "egm/build_info.h"
#include "egm/version_info.h"
#include "util/source_state.h"

namespace egm::cli {

std::string version_text() {
  const SourceState& s = source_state();
  std::string_view commit = s.commit;
  constexpr std::string_view kDirty = "-dirty";
  // A commit ending in -dirty was built with uncommitted changes to tracked files.
  const bool dirty = commit.size() > kDirty.size() && commit.substr(commit.size() - kDirty.size()) == kDirty;
  if (dirty) commit.remove_suffix(kDirty.size());
  std::string state = "clean";
  if (dirty)
    state = s.modified() ? fmt::format("dirty (uncommitted changes to tracked files: diff sha256 {}, {} bytes)",
                                       s.diff_sha256.substr(0, 12), s.diff_size)
                         : "dirty (uncommitted changes to tracked files)";
  if (commit == "unknown") state = "unknown (not built from a git checkout)";
  return fmt::format(
      "egm {}\n"
      "commit: {}, {}\n"
      "LibTorch: {}\n"
      "CUDA: {}\n"
      "results schema: {}\n",
      EGM_VERSION_STRING, commit, state, EGM_BUILT_TORCH_VERSION, EGM_BUILT_CUDA_VERSION,
      db::results_schema_version());
}

std::optional<int> answer_version_flag(int argc, char** argv) {
  bool asked = false;
  // Scanned before CLI11 parses, which would demand a verb (require_subcommand).
  for (int i = 1; i < argc; ++i) asked = asked || std::string_view(argv[i]) == "--version";
  if (!asked) return std::nullopt;
  if (argc != 2) {
    std::string rest;
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) != "--version") rest += (rest.empty() ? "" : " ") + std::string(argv[i]);
    std::fprintf(stderr, "egm: error: --version takes no other arguments (got: %s); run `egm --version` alone\n",
                 rest.c_str());
    return 2;
  }
  std::fputs(version_text().c_str(), stdout);
  return 0;
}

}  // namespace egm::cli
