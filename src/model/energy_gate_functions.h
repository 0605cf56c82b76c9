// The SDPA path's energy-gate pieces as autograd functions with their backward
// written by hand (model.attention_path sdpa, the CUDA default): the same formulas
// as the plain ops in energy_gated_attention.cpp and causal_energy_gated_attention.cpp,
// in a handful of kernels each instead of one per op and one or more per op's
// backward. Checked against the plain ops in tests/model/test_energy_gate_functions.cpp
// and, in the model, tests/model/test_sdpa_attention.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace egm {

// The published gate's value for SDPA: [g v | g | 0 ...], `width` columns (at least
// E + 1, E = v.size(-1)), with g = sigmoid(alpha_h (z_j - tau_h)) and z the z-score of
// e over its last axis (population std, max(std, 1e-8); z = 0 when T = 1).
// e: [B, H, T] float32; alpha, tau: [H]; v: [B, H, T, E]. Returns [B, H, T, width] in v's type.
at::Tensor published_gated_value(const at::Tensor& e, const at::Tensor& alpha, const at::Tensor& tau,
                                 const at::Tensor& v, int64_t width);

// q and k [B, H, T, E] with zero columns up to `width`, written once into one buffer.
std::pair<at::Tensor, at::Tensor> pad_query_key(const at::Tensor& q, const at::Tensor& k, int64_t width);

// [y | den | 0 ...] -> y / max(den, 1e-8): y the first E columns, den column E, the columns
// after it 0 (what SDPA gives for a value whose columns after the gate's are 0). y is laid
// out [B, T, H, E] in memory (4-d y_den [B, H, T, width]): merging the heads needs no copy.
at::Tensor renormalise_by_column(const at::Tensor& y_den, int64_t E);

// Causal EGA's prefix statistics as the gate's affine terms: alpha (z_ij - tau) = a_i d_j + c_i
// with z_ij = (e_j - mean_i) / max(std_i, 1e-8) over keys j <= i, d_j = e_j - e_0 (the shift
// that keeps the prefix sums from cancelling), a_i = alpha / std_i, c_i = -alpha (mean_i / std_i
// + tau). Computed in float64, returned in e's type: {a, c, d}, [B, H, T] each.
struct PrefixGateTerms {
  at::Tensor a, c, d;
};
PrefixGateTerms prefix_gate_terms(const at::Tensor& e, const at::Tensor& alpha, const at::Tensor& tau);

// log sigmoid(a_i d_j + c_i) for a, c, d [B, H, T]: the causal EGA gate as an additive
// score bias, [B, H, T(query), T(key)] (keys j > i included: the caller's causal mask hides them).
at::Tensor affine_log_gate(const at::Tensor& a, const at::Tensor& c, const at::Tensor& d);

// Whether some query row's gated weight sum sum_j P_ij g_ij (j <= i) may fall under the
// published clamp 1e-8, judged from a lower bound no softmax can go under: the row's
// smallest gate, sigmoid(c_i + min(a_i min_{j<=i} d_j, a_i max_{j<=i} d_j)). False means
// the clamp cannot bind in any row. Reads one value back to the host.
bool gate_clamp_may_bind(const at::Tensor& a, const at::Tensor& c, const at::Tensor& d);

// While one lives on this thread, attention reads nothing back to the host (a CUDA graph's
// capture forbids it): causal EGA then takes its two-copy form, exact without the check.
class NoHostReads {
 public:
  NoHostReads();
  ~NoHostReads();
  NoHostReads(const NoHostReads&) = delete;
  NoHostReads& operator=(const NoHostReads&) = delete;

 private:
  bool before_;
};
bool host_reads_allowed();

}  // namespace egm
