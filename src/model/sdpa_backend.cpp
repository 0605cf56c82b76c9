// run_sdpa: at::scaled_dot_product_attention with the backend it takes recorded and
// a backend's run-time refusal turned into a fallback to the next exact one.
#include "model/sdpa_backend.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/ops/_fused_sdp_choice.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/log.h"

namespace egm {
namespace {

constexpr SdpaBackend kAll[] = {SdpaBackend::math, SdpaBackend::flash, SdpaBackend::efficient, SdpaBackend::cudnn,
                                SdpaBackend::overrideable};

// Turns the given backends off in LibTorch's global SDPA flags for its lifetime, and
// puts every flag back as it found it. (The flags are LibTorch's, process-wide; egm
// runs one training step at a time per process.)
class BackendsOff {
 public:
  explicit BackendsOff(const std::set<SdpaBackend>& off) : ctx_(at::globalContext()) {
    saved_ = {ctx_.userEnabledMathSDP(), ctx_.userEnabledFlashSDP(), ctx_.userEnabledMemEfficientSDP(),
              ctx_.userEnabledCuDNNSDP(), ctx_.userEnabledOverrideableSDP()};
    for (SdpaBackend b : off) set(b, false);
  }
  ~BackendsOff() {
    for (SdpaBackend b : kAll) set(b, saved_[static_cast<int>(b)]);
  }
  BackendsOff(const BackendsOff&) = delete;
  BackendsOff& operator=(const BackendsOff&) = delete;

 private:
  void set(SdpaBackend b, bool on) {
    switch (b) {
      case SdpaBackend::math: ctx_.setSDPUseMath(on); break;
      case SdpaBackend::flash: ctx_.setSDPUseFlash(on); break;
      case SdpaBackend::efficient: ctx_.setSDPUseMemEfficient(on); break;
      case SdpaBackend::cudnn: ctx_.setSDPUseCuDNN(on); break;
      case SdpaBackend::overrideable: ctx_.setSDPUseOverrideable(on); break;
    }
  }
  at::Context& ctx_;
  std::array<bool, 5> saved_{};
};

// What decides LibTorch's choice and whether a backend accepts a call: one key per kind.
std::string kind_of(const SdpaCall& c) {
  std::ostringstream s;
  auto tensor = [&](const at::Tensor& t) {
    s << t.sizes() << t.strides() << c10::toString(t.scalar_type()) << (t.requires_grad() ? "g" : "") << ' ';
  };
  s << c.q.device() << ' ';
  tensor(c.q), tensor(c.k), tensor(c.v);
  if (c.mask) tensor(*c.mask);
  s << (c.dropout_p > 0 ? "dropout " : "") << (c.is_causal ? "causal " : "") << (at::GradMode::is_enabled() ? "grad" : "");
  return s.str();
}

std::string shapes_of(const SdpaCall& c) {
  std::string s = fmt::format("q {}, k {}, v {}", fmt::join(c.q.sizes(), "x"), fmt::join(c.k.sizes(), "x"),
                              fmt::join(c.v.sizes(), "x"));
  if (c.mask) s += fmt::format(", mask {}{}", fmt::join(c.mask->sizes(), "x"), c.mask->requires_grad() ? " (with gradient)" : "");
  return s + fmt::format(", {}, dropout {}{}", c10::toString(c.q.scalar_type()), c.dropout_p, c.is_causal ? ", causal" : "");
}

// EGM_SDPA_REFUSE (tests): the backends that refuse every call, as a refusal at run time would.
void refuse_if_told(SdpaBackend b) {
  const char* env = std::getenv("EGM_SDPA_REFUSE");
  if (env == nullptr) return;
  std::string list = std::string(",") + env + ",";
  TORCH_CHECK(list.find(std::string(",") + sdpa_backend_name(b) + ",") == std::string::npos,
              "refused by EGM_SDPA_REFUSE (a test standing in for a backend that rejects the shape)");
}

at::Tensor call_sdpa(const SdpaCall& c, SdpaBackend b) {
  refuse_if_told(b);
  return at::scaled_dot_product_attention(c.q, c.k, c.v, c.mask, c.dropout_p, c.is_causal, c.scale);
}

// One forward and backward of `c` on detached copies, so a backend that refuses the
// backward refuses here; the default generator is put back, so the step's dropout
// draws are what they would have been without the probe.
void probe(const SdpaCall& c, SdpaBackend b) {
  SdpaCall p = c;
  auto copy = [](const at::Tensor& t) { return t.detach().requires_grad_(t.requires_grad()); };
  p.q = copy(c.q), p.k = copy(c.k), p.v = copy(c.v);
  if (c.mask) p.mask = copy(*c.mask);
  at::Generator gen = at::globalContext().defaultGenerator(c.q.device());
  at::Tensor state;
  if (c.dropout_p > 0) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    state = gen.get_state();
  }
  struct Restore {
    at::Generator& gen;
    const at::Tensor& state;
    ~Restore() {
      if (!state.defined()) return;
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
  } restore{gen, state};
  at::AutoGradMode grad(true);
  call_sdpa(p, b).sum().backward();
}

// A kind's resolution: the backends that refused it and the one it runs on.
struct Resolution {
  std::set<SdpaBackend> refused;
  SdpaBackend backend = SdpaBackend::math;
};

// Every kind resolved in this process. Process-wide like the flags it reads: what
// a backend refuses depends on LibTorch, the device and the shapes, not on a model.
class Registry {
 public:
  static Registry& get() {
    static Registry r;
    return r;
  }
  std::mutex mutex;
  std::map<std::string, Resolution> kinds;
};

std::string first_line(const c10::Error& e) {
  std::string m = e.what_without_backtrace();
  return m.substr(0, m.find('\n'));
}

std::string names(const std::set<SdpaBackend>& backends) {
  std::vector<std::string> out;
  for (SdpaBackend b : backends) out.emplace_back(sdpa_backend_name(b));
  return fmt::format("{}", fmt::join(out, ", "));
}

// LibTorch's choice for `c` with the `refused` backends off.
SdpaBackend choice_without(const SdpaCall& c, const std::set<SdpaBackend>& refused) {
  BackendsOff off(refused);
  int64_t b = -1;
  try {
    b = at::_fused_sdp_choice(c.q, c.k, c.v, c.mask, c.dropout_p, c.is_causal, c.scale);
  } catch (const c10::Error& e) {
    EGM_THROW(Error, "no SDPA backend takes {}{}: {}", shapes_of(c),
              refused.empty() ? "" : " (" + names(refused) + " refused it)", first_line(e));
  }
  EGM_REQUIRE(b >= 0 && b <= static_cast<int64_t>(SdpaBackend::overrideable), Error,
              "no SDPA backend takes {}{}", shapes_of(c), refused.empty() ? "" : " (" + names(refused) + " refused it)");
  return static_cast<SdpaBackend>(b);
}

// `b` refused c: one warning line naming what runs instead, and the resolution moves on.
void fall_back(Resolution& r, const SdpaCall& c, SdpaBackend b, const c10::Error& e) {
  r.refused.insert(b);
  r.backend = choice_without(c, r.refused);
  log::warn("SDPA's {} backend refused {} ({}); running it on the {} backend instead", sdpa_backend_name(b),
            shapes_of(c), first_line(e), sdpa_backend_name(r.backend));
}

// Which backend calls of c's kind run on: LibTorch's choice, tried forward and backward
// (when c needs gradients and the choice is a fused kernel), the next one if it refuses.
Resolution resolve(const SdpaCall& c) {
  Resolution r;
  r.backend = choice_without(c, r.refused);
  const bool needs_grad = at::GradMode::is_enabled() && (c.q.requires_grad() || c.k.requires_grad() ||
                                                         c.v.requires_grad() || (c.mask && c.mask->requires_grad()));
  // math accepts every call; a forward alone is tried by the call itself.
  while (r.backend != SdpaBackend::math && needs_grad) {
    try {
      BackendsOff off(r.refused);
      probe(c, r.backend);
      break;
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const c10::Error& e) {
      fall_back(r, c, r.backend, e);
    }
  }
  return r;
}

}  // namespace

const char* sdpa_backend_name(SdpaBackend backend) {
  switch (backend) {
    case SdpaBackend::math: return "math";
    case SdpaBackend::flash: return "flash";
    case SdpaBackend::efficient: return "efficient";
    case SdpaBackend::cudnn: return "cudnn";
    case SdpaBackend::overrideable: return "overrideable";
  }
  return "?";
}

SdpaBackend sdpa_choice(const SdpaCall& call) { return choice_without(call, {}); }

void forget_sdpa_resolutions() {
  Registry& reg = Registry::get();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.kinds.clear();
}

SdpaResult run_sdpa(const SdpaCall& call) {
  SdpaCall c = call;
  // Autocast's cast first (SDPA is on its lower-precision list), so the choice below
  // sees the dtypes the kernel will.
  const at::DeviceType device = c.q.device().type();
  if (at::autocast::is_autocast_enabled(device)) {
    const at::ScalarType low = at::autocast::get_autocast_dtype(device);
    auto cast = [&](at::Tensor& t) {
      if (t.scalar_type() == at::kFloat) t = t.to(low);
    };
    cast(c.q), cast(c.k), cast(c.v);
    if (c.mask) cast(*c.mask);
  }
  Registry& reg = Registry::get();
  const std::string kind = kind_of(c);
  Resolution r;
  {
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto it = reg.kinds.find(kind);
    if (it == reg.kinds.end()) it = reg.kinds.emplace(kind, resolve(c)).first;
    r = it->second;
  }
  for (;;) {
    try {
      BackendsOff off(r.refused);
      return SdpaResult{call_sdpa(c, r.backend), r.backend, {r.refused.begin(), r.refused.end()}};
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const c10::Error& e) {
      // A forward that refuses (a call without gradients, or a refusal the probe did not
      // meet): the same fallback, remembered for the kind.
      EGM_REQUIRE(r.backend != SdpaBackend::math, Error, "SDPA's math backend failed on {}: {}", shapes_of(c),
                  first_line(e));
      fall_back(r, c, r.backend, e);
      std::lock_guard<std::mutex> lock(reg.mutex);
      reg.kinds[kind] = r;
    }
  }
}

}  // namespace egm
