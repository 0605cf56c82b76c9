// Linked into every test binary that draws from LibTorch's default generator: the
// generator starts every test at one fixed seed, so a failure reproduces.
// LibTorch seeds it from the system's random source in each process; a test that
// drew its inputs or its model there (torch::randn without a generator, a module's
// default initialisation) checked a different case on every run, and CI's run was
// the one that found the rare case (tests/model/pass_compare.h, kCompareSeed).
// A test that seeds on its own (torch::manual_seed, a generator of its own) is unchanged.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "fixed_torch_seed.h"

namespace {

// Before every test, so a test starts at the seed whether it runs alone (as ctest
// runs it) or after others in the whole binary.
class FixedTorchSeed : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo&) override { torch::manual_seed(egm::test::kFixedTorchSeed); }
};

// Appended before main (gtest_main's InitGoogleTest keeps the listeners it finds).
[[maybe_unused]] const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new FixedTorchSeed);
  return true;
}();

}  // namespace
