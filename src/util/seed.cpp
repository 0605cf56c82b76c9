// Seeds derived from the run's seed by splitmix64's finaliser, so every stream
// (init, data order, dropout) is independent and reproducible.
#include "util/seed.h"

namespace egm {

// splitmix64's golden-ratio increment and finaliser constants (Steele, Lea and Flood 2014).
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Mixed after each part, so (a, b) and (b, a) give different seeds.
uint64_t derive_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return mix64(mix64(mix64(mix64(seed) ^ a) ^ b) ^ c);
}

}  // namespace egm
