// Daubechies db2/db4 filters: the low-pass taps, the high-pass by alternating
// flip, a trous dilation per scale, and the bank as one tensor.
#include "model/daubechies.h"

#include "util/error.h"

namespace egm {

std::vector<double> daubechies_lowpass(int64_t taps) {
  // ABLATIONS.md (the standard orthonormal decomposition low-pass filters).
  if (taps == 4)
    return {-0.12940952255126037, 0.22414386804201339, 0.8365163037378079, 0.48296291314453416};
  if (taps == 8)
    return {-0.010597401784997278, 0.032883011666982945, 0.030841381835986965, -0.18703481171888114,
            -0.02798376941698385,  0.6308807679295904,   0.7148465705525415,   0.23037781330885523};
  EGM_THROW(ConfigError, "no Daubechies filter with {} taps (have 4: db2, 8: db4)", taps);
}

std::vector<double> daubechies_highpass(int64_t taps) {
  const std::vector<double> lo = daubechies_lowpass(taps);
  const size_t K = lo.size();
  std::vector<double> h(K);
  for (size_t u = 0; u < K; ++u) h[u] = (u % 2 == 0 ? -1.0 : 1.0) * lo[K - 1 - u];  // (-1)^(u+1)
  return h;
}

std::vector<double> dilate_a_trous(const std::vector<double>& h, int64_t scale) {
  // Scale s spreads the taps 2^s apart (zeros between): the same filter at a coarser resolution, without downsampling.
  const size_t step = size_t{1} << scale;
  std::vector<double> out((h.size() - 1) * step + 1, 0.0);
  for (size_t u = 0; u < h.size(); ++u) out[u * step] = h[u];
  return out;
}

torch::Tensor daubechies_filter_bank(int64_t taps, int64_t n_scales) {
  const std::vector<double> h = daubechies_highpass(taps);
  // Every row is padded to the widest (coarsest) filter, so the bank is one rectangular tensor.
  const int64_t width = static_cast<int64_t>(dilate_a_trous(h, n_scales - 1).size());
  torch::Tensor bank = torch::zeros({n_scales, width}, torch::kFloat64);
  for (int64_t s = 0; s < n_scales; ++s) {
    std::vector<double> row = dilate_a_trous(h, s);
    bank[s].narrow(0, 0, static_cast<int64_t>(row.size())).copy_(torch::tensor(row, torch::kFloat64));
  }
  return bank.to(torch::kFloat32);
}

}  // namespace egm
