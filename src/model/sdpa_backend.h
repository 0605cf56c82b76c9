// at::scaled_dot_product_attention with its backend made known and a refusal
// survived. LibTorch picks one of several kernels for each call (flash,
// memory-efficient, cuDNN, math; at::_fused_sdp_choice says which), and a fused
// one may refuse a shape only at run time (a cuDNN plan that fails to build, in
// forward or in backward). run_sdpa says which backend ran and, when the one
// LibTorch picked refuses, runs the same formula on the next one it would pick
// with that one off, after one warning line: every backend computes the same
// softmax(q k^T * scale + mask) v, so the fallback is exact.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace egm {

// at::SDPBackend's values, less `error`.
enum class SdpaBackend { math = 0, flash = 1, efficient = 2, cudnn = 3, overrideable = 4 };
// "math", "flash", "efficient", "cudnn", "overrideable".
const char* sdpa_backend_name(SdpaBackend backend);

struct SdpaCall {
  at::Tensor q, k, v;             // [B, H, T, E], [B, H, T', E], [B, H, T', E']
  std::optional<at::Tensor> mask;  // additive, broadcastable to [B, H, T, T'] (may require grad)
  double dropout_p = 0.0;
  bool is_causal = false;
  double scale = 1.0;
};

struct SdpaResult {
  at::Tensor out;                      // [B, H, T, E']
  SdpaBackend backend;                 // the backend that computed it
  std::vector<SdpaBackend> refused;    // backends that refused this kind of call before it ran
};

// The backend at::scaled_dot_product_attention takes for `call` with LibTorch's
// flags as they are (on the CPU: flash for a causal call without a mask or
// dropout, math otherwise; on CUDA: flash, efficient, cudnn or math).
SdpaBackend sdpa_choice(const SdpaCall& call);

// The attention of `call` (autocast's cast applied first, as SDPA's own would be).
// A call's kind (device, dtype, shapes, mask, dropout on or off, which inputs need
// gradients) is resolved once per process: LibTorch's choice, and when inputs need
// gradients and the choice is a fused kernel, one forward and backward on detached
// copies (the random generator restored), so a backward refusal is seen here and not
// in the middle of the step's backward. A refusal (a c10::Error other than running
// out of memory) turns that backend off for calls of that kind, says so in one
// warning line and tries the next; math refusing, or no backend left, is an error.
// EGM_SDPA_REFUSE=flash,cudnn (tests) makes the named backends refuse every call.
SdpaResult run_sdpa(const SdpaCall& call);

// Forgets every resolved kind and refusal (tests; after changing LibTorch's SDPA flags).
void forget_sdpa_resolutions();

}  // namespace egm
