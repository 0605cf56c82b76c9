// Counter-based dropout: the keep bits of element i from SplitMix64 of (seed, i),
// the mask saved as its seed in autograd, and the bits drawn in vector-friendly blocks.
#include "model/kernels/counter_dropout.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "model/kernels/parallel.h"

namespace egm {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // SplitMix64's increment

// SplitMix64's output function: state n = seed + n * golden -> 64 well-mixed bits.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr int64_t kGrain = 1 << 15;  // elements per parallel chunk

}  // namespace

DropoutMask::DropoutMask(double p, uint64_t seed) : active_(p > 0.0), p_(p), seed_(seed) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability must be in [0, 1], got ", p);
  // keep with probability (1 - p): 32 uniform bits below round((1 - p) 2^32)
  threshold_ = static_cast<uint64_t>(std::llround((1.0 - p) * 4294967296.0));
  scale_ = p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
}

DropoutMask DropoutMask::draw(double p) {
  if (p <= 0.0) return DropoutMask();
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  uint64_t seed = 0;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    seed = at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
  }
  return DropoutMask(p, seed);
}

void DropoutMask::save_to(torch::autograd::AutogradContext* ctx) const {
  ctx->saved_data["dropout_p"] = p_;
  ctx->saved_data["dropout_seed"] = static_cast<int64_t>(seed_);
}

DropoutMask draw_and_save_mask(torch::autograd::AutogradContext* ctx, double p, bool training) {
  DropoutMask mask = training ? DropoutMask::draw(p) : DropoutMask();
  mask.save_to(ctx);
  return mask;
}

DropoutMask DropoutMask::saved_in(torch::autograd::AutogradContext* ctx) {
  const double p = ctx->saved_data["dropout_p"].toDouble();
  return p > 0.0 ? DropoutMask(p, static_cast<uint64_t>(ctx->saved_data["dropout_seed"].toInt())) : DropoutMask();
}

namespace {

// Counters [c0, c0 + n) -> their 64 random bits. A plain loop over independent lanes, so the
// compiler vectorises it; the AVX-512 clone has a 64-bit vector multiply (vpmullq), the
// others emulate it. Picked once at load time by the CPU's features (not `arch=skylake-avx512`:
// the resolver matches that by CPU model, and a hypervisor's unnamed model never gets it).
__attribute__((target_clones("avx512dq", "avx2", "default")))
void counter_bits(uint64_t seed, uint64_t c0, int64_t n, uint64_t* out) {
  for (int64_t k = 0; k < n; ++k) out[k] = mix64(seed + (c0 + static_cast<uint64_t>(k)) * kGolden);
}

// out[j] = x[j] * (bits[j] < threshold ? scale : 0), as torch.dropout multiplies (a dropped NaN stays NaN).
// Called in place too (out == x): element j is read only before its own store, so the iterations
// are independent, which Clang's run-time overlap check would otherwise not see (scalar loop).
__attribute__((target_clones("avx512dq", "avx2", "default")))
void scale_kept(const uint32_t* bits, uint32_t threshold, float scale, int64_t n, const float* x, float* out) {
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#endif
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] * (bits[j] < threshold ? scale : 0.0f);  // NaN stays NaN
}

// out[j] = bits[j] < threshold ? scale : 0: the factors scale_kept multiplies by.
__attribute__((target_clones("avx512dq", "avx2", "default")))
void kept_factors(const uint32_t* bits, uint32_t threshold, float scale, int64_t n, float* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = bits[j] < threshold ? scale : 0.0f;
}

constexpr int64_t kCountersPerChunk = 256;  // 512 elements: the bits stay in L1

}  // namespace

void DropoutMask::apply(int64_t start, int64_t n, const float* x, float* out) const {
  if (!active_ || threshold_ > 0xffffffffULL) {  // nothing dropped (p = 0, or p below 2^-33)
    const float s = active_ ? scale_ : 1.0f;
    for (int64_t j = 0; j < n; ++j) out[j] = x[j] * s;
    return;
  }
  // Element i reads half (i & 1) of the 64 bits of counter i / 2: the low half for even i.
  // On little-endian x86 the 64-bit words, read as 32-bit words, are exactly that sequence.
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "element i's bits assume little-endian words");
  alignas(64) uint64_t words[kCountersPerChunk];
  const auto* halves = reinterpret_cast<const uint32_t*>(words);
  const uint32_t threshold = static_cast<uint32_t>(threshold_);
  int64_t done = 0;
  while (done < n) {
    const int64_t i = start + done;
    const int64_t first = i & 1;  // an odd start reads the high half of its first word
    const int64_t count = std::min<int64_t>(n - done, 2 * kCountersPerChunk - first);
    counter_bits(seed_, static_cast<uint64_t>(i >> 1), (first + count + 1) / 2, words);
    scale_kept(halves + first, threshold, scale_, count, x + done, out + done);
    done += count;
  }
}

void DropoutMask::factors(int64_t start, int64_t n, float* f) const {
  if (!active_ || threshold_ > 0xffffffffULL) {  // as apply: one factor for every element
    std::fill_n(f, n, active_ ? scale_ : 1.0f);
    return;
  }
  alignas(64) uint64_t words[kCountersPerChunk];
  const auto* halves = reinterpret_cast<const uint32_t*>(words);
  const uint32_t threshold = static_cast<uint32_t>(threshold_);
  int64_t done = 0;
  while (done < n) {  // the same chunks and bit halves as apply
    const int64_t i = start + done;
    const int64_t first = i & 1;
    const int64_t count = std::min<int64_t>(n - done, 2 * kCountersPerChunk - first);
    counter_bits(seed_, static_cast<uint64_t>(i >> 1), (first + count + 1) / 2, words);
    kept_factors(halves + first, threshold, scale_, count, f + done);
    done += count;
  }
}

namespace {

torch::Tensor apply_mask(const torch::Tensor& x, const DropoutMask& mask) {
  torch::Tensor in = x.contiguous();
  torch::Tensor out = torch::empty_like(in, at::MemoryFormat::Contiguous);
  const float* src = in.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  parallel_for(0, in.numel(), kGrain,
                   [&](int64_t begin, int64_t end) { mask.apply(begin, end - begin, src + begin, dst + begin); });
  return out;
}

class CounterDropoutFunction : public torch::autograd::Function<CounterDropoutFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p) {
    DropoutMask mask = DropoutMask::draw(p);
    mask.save_to(ctx);
    return apply_mask(x, mask);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    return {apply_mask(grads[0], DropoutMask::saved_in(ctx)), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor counter_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  if (!x.device().is_cpu() || x.scalar_type() != torch::kFloat32) return torch::dropout(x, p, training);
  return CounterDropoutFunction::apply(x, p);
}

torch::Tensor dropout(const torch::Tensor& x, const torch::nn::Dropout& module) {
  return counter_dropout(x, module->options.p(), module->is_training());
}

}  // namespace egm
