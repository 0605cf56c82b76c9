// egm --version: the build (version, git commit, whether the tree was
// modified), what it was built against (LibTorch, CUDA: recorded at build
// time, so egm prints them without loading LibTorch) and the results schema
// it writes. Alone only: with any other argument it is refused (exit 2).
#pragma once

#include <optional>
#include <string>

namespace egm::cli {

// The lines `egm --version` prints.
std::string version_text();

// When the command line asks for --version: prints it and returns 0, or
// refuses it in one line (other arguments too) and returns 2. Otherwise none.
std::optional<int> answer_version_flag(int argc, char** argv);

}  // namespace egm::cli
