// The fixed Daubechies filters of the ega_db2 / ega_db4 gates (ABLATIONS.md):
// the decomposition high-pass filter h[u] = (-1)^(u+1) lo[K-1-u] of the
// standard orthonormal low-pass lo (db2: 4 taps, db4: 8 taps), dilated a trous
// to 4 scales: h_s(u) = h[u / 2^s] where 2^s divides u, else 0.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace egm {

// The contract's low-pass decomposition filter; taps is 4 (db2) or 8 (db4).
std::vector<double> daubechies_lowpass(int64_t taps);
// h[u] = (-1)^(u+1) lo[K-1-u], u = 0..K-1.
std::vector<double> daubechies_highpass(int64_t taps);
// h_s: length (K-1) 2^s + 1, zeros between the taps.
std::vector<double> dilate_a_trous(const std::vector<double>& h, int64_t scale);
// Rows s = 0..n_scales-1 of dilated high-pass filters, zero-padded to the
// longest: [n_scales, (K-1) 2^(n_scales-1) + 1], float32.
torch::Tensor daubechies_filter_bank(int64_t taps, int64_t n_scales);

}  // namespace egm
