// Shared by the spec tests: the problem a spec check reported at one JSON path.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spec/experiment_spec.h"

namespace egm::testing {

// The problem at `path`, or a test failure listing what was found.
inline spec::Problem at(const std::vector<spec::Problem>& problems, const std::string& path) {
  for (const auto& p : problems)
    if (p.path == path) return p;
  std::string found;
  for (const auto& p : problems) found += "\n  " + p.path + ": " + p.message;
  ADD_FAILURE() << "no problem at " << path << "; found:" << found;
  return {};
}

}  // namespace egm::testing
