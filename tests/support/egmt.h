// Reader for EGMT tensor files (format: tests/reference/README.md), the
// exchange format between the PyTorch reference and the C++ tests.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

namespace egm::test {

using TensorMap = std::map<std::string, torch::Tensor>;

// Throws egm::IoError on a wrong magic, truncation or trailing bytes.
TensorMap read_egmt(const std::string& path);

// Where the reference fixtures live, or "" when they cannot be made here.
std::string reference_fixture_dir();

}  // namespace egm::test
