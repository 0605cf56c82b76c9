// The seed LibTorch's default generator starts each test at, in a binary
// built with egm_add_gtest(... SEEDED_TORCH) (fixed_torch_seed.cpp).
#pragma once

#include <cstdint>

namespace egm::test {
inline constexpr uint64_t kFixedTorchSeed = 20261206;
}
