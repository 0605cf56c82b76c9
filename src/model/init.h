// Seeded initialisation (SPEC.md section 3: every Linear/Embedding weight
// N(0, 0.02), biases 0, LayerNorm 1/0; EGA tau/alpha and MoPE by formula).
//
// Each parameter draws from its own generator seeded by (seed, parameter
// name), so a parameter that two variants share (wte, c_attn, ...) starts
// identical in both: the paired design compares variants, not init noise.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace egm {

class GPTImpl;

void initialize_parameters(GPTImpl& model, uint64_t seed);

// N(0, std) from the generator of (seed, name), on the CPU, then copied.
void seeded_normal_(torch::Tensor& param, uint64_t seed, const std::string& name, double std);

uint64_t fnv1a64(const std::string& s);

}  // namespace egm
