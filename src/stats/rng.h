// Draws from std::mt19937_64 that are the same on every platform. The
// standard distributions (uniform_int_distribution, ...) are
// implementation-defined, so a seeded bootstrap or k-means would give a
// different answer with another standard library; these do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace egm::stats {

// uniform_index for one n drawn many times (the bootstrap's inner loop): the
// rejection limit computed once; the same draws as uniform_index.
class UniformIndex {
 public:
  explicit UniformIndex(std::size_t n)
      : range_(static_cast<std::uint64_t>(n)), limit_(UINT64_MAX - (UINT64_MAX % range_ + 1) % range_) {}
  std::size_t operator()(std::mt19937_64& rng) const {
    std::uint64_t draw;
    do {
      draw = rng();
    } while (draw > limit_);
    return static_cast<std::size_t>(draw % range_);
  }

 private:
  std::uint64_t range_;
  std::uint64_t limit_;
};

// Uniform in [0, n) by rejection (no modulo bias). n must be > 0.
inline std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) {
  const std::uint64_t range = static_cast<std::uint64_t>(n);
  // Largest multiple of range that fits; draws at or above it are rejected.
  const std::uint64_t limit = UINT64_MAX - (UINT64_MAX % range + 1) % range;
  std::uint64_t draw;
  do {
    draw = rng();
  } while (draw > limit);
  return static_cast<std::size_t>(draw % range);
}

// Uniform in [0, 1) with 53 random bits.
inline double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace egm::stats
