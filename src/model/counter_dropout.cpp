#include "model/counter_dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <mutex>

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

void DropoutMask::apply(int64_t start, int64_t n, const float* x, float* out) const {
  if (!active_) {
    for (int64_t j = 0; j < n; ++j) out[j] = x[j];
    return;
  }
  const float kept = scale_;
  const uint64_t threshold = threshold_;
  auto factor = [&](uint32_t bits) { return bits < threshold ? kept : 0.0f; };
  int64_t i = start;
  const int64_t end = start + n;
  // Element i reads half (i & 1) of the 64 bits of counter i / 2.
  if ((i & 1) && i < end) {
    out[i - start] = x[i - start] * factor(static_cast<uint32_t>(mix64(seed_ + (i >> 1) * kGolden) >> 32));
    ++i;
  }
  for (; i + 1 < end; i += 2) {
    const uint64_t r = mix64(seed_ + (i >> 1) * kGolden);
    out[i - start] = x[i - start] * factor(static_cast<uint32_t>(r));
    out[i + 1 - start] = x[i + 1 - start] * factor(static_cast<uint32_t>(r >> 32));
  }
  if (i < end) out[i - start] = x[i - start] * factor(static_cast<uint32_t>(mix64(seed_ + (i >> 1) * kGolden)));
}

namespace {

torch::Tensor apply_mask(const torch::Tensor& x, const DropoutMask& mask) {
  torch::Tensor in = x.contiguous();
  torch::Tensor out = torch::empty_like(in, at::MemoryFormat::Contiguous);
  const float* src = in.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  at::parallel_for(0, in.numel(), kGrain,
                   [&](int64_t begin, int64_t end) { mask.apply(begin, end - begin, src + begin, dst + begin); });
  return out;
}

class CounterDropoutFunction : public torch::autograd::Function<CounterDropoutFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p) {
    DropoutMask mask = DropoutMask::draw(p);
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = static_cast<int64_t>(mask.seed());
    return apply_mask(x, mask);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    DropoutMask mask(ctx->saved_data["p"].toDouble(), static_cast<uint64_t>(ctx->saved_data["seed"].toInt()));
    return {apply_mask(grads[0], mask), torch::Tensor()};
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
