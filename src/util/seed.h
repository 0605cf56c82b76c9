// The seed rule: every random stream of a run (initialisation, data order,
// dropout) is derived from the run's one seed by mixing in tags, so streams
// are independent and any rank or resumed attempt can recompute the draw it
// needs without RNG state. Shared by the model (init), the data sampler and
// the trainer (dropout); torch-free.
#pragma once

#include <cstdint>

namespace egm {

// splitmix64's finaliser: a bijective 64-bit mix.
uint64_t mix64(uint64_t x);

// The seed of stream (a, b, c) of `seed`: mix64 chained over the tags.
uint64_t derive_seed(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0);

}  // namespace egm
