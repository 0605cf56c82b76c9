// The [file:line host rank] prefix every egm::Error carries: the path cut to
// its source-tree part, the host and rank from process_info.
#include "util/error.h"

#include <cstring>

#include "util/process_info.h"

namespace egm::detail {

std::string location(const char* file, int line) {
  // Keep the path from "src/" (or the top-level folder) on, not the build machine's prefix.
  std::string path = file;
  // rfind: the last match, so a checkout under a folder that is itself called src/ still cuts right.
  for (const char* root : {"/src/", "/workers/", "/coordinator/", "/tests/"}) {
    auto pos = path.rfind(root);
    if (pos != std::string::npos) {
      path = path.substr(pos + 1);
      break;
    }
  }
  // process_info() never throws: this runs while an error is being built.
  const ProcessInfo& info = process_info();
  std::string where = fmt::format("{}:{} on {}", path, line, info.host);
  if (info.rank >= 0) where += fmt::format(" (rank {})", info.rank);
  return where;
}

}  // namespace egm::detail
