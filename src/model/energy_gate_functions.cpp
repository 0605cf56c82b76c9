// The SDPA path's energy-gate autograd functions (energy_gate_functions.h): forward
// and a backward derived by hand, each a few whole-tensor kernels.
#include "model/energy_gate_functions.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "util/torch_compat.h"

namespace egm {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr double kVarFloor = 1e-16;  // max(std, 1e-8) written as sqrt(max(var, 1e-16)), as the plain ops do
constexpr double kDenFloor = 1e-8;   // the published renormalisation's clamp

// 1 where clamp_min left x as it was (its gradient flows, as clamp_min's own backward has
// it), else 0: in x's type, one kernel (a bool mask would cost a conversion where it is used).
at::Tensor unclamped(const at::Tensor& x, const at::Tensor& clamped) {
  at::Tensor ok = at::empty_like(x);
  at::eq_out(ok, clamped, x);
  return ok;
}

// The columns E.. of a gated value or of its gradient: [1, 0, ...] (`n` wide), so that one
// product writes a column of g and the zero padding after it. One per device, type and width,
// made once (a CUDA graph may capture the products that read it).
const at::Tensor& first_column_one(int64_t n, const at::TensorOptions& options) {
  static std::mutex mutex;
  // Never destroyed: a device tensor must not be freed by a static destructor after the device's teardown.
  static auto* made = new std::map<std::tuple<std::string, int, int64_t>, at::Tensor>();
  const std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& t = (*made)[{options.device().str(), static_cast<int>(options.dtype().toScalarType()), n}];
  if (!t.defined()) {
    t = at::zeros({n}, options);
    t.narrow(0, 0, 1).fill_(1);
  }
  return t;
}

// A [B, H, T, W] tensor laid out as [B, T, H, W] in memory: what merge's transpose(1, 2)
// then reshape reads without a copy (and the order SDPA's own output has).
at::Tensor empty_heads_last(int64_t B, int64_t H, int64_t T, int64_t W, const at::TensorOptions& options) {
  return at::empty({B, T, H, W}, options).transpose(1, 2);
}

class PadQueryKey : public torch::autograd::Function<PadQueryKey> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, int64_t width) {
    const int64_t E = q.size(-1);
    std::vector<int64_t> shape = q.sizes().vec();
    shape.insert(shape.begin(), 2);
    shape.back() = width;
    at::Tensor qk = at::empty(shape, q.options());  // [2, B, H, T, width]: both written once
    // q and k are most often two views of the fused projection, the same strides a fixed
    // distance apart: then one strided view holds both, and one copy writes them.
    const int64_t gap = k.storage_offset() - q.storage_offset();
    if (k.strides() == q.strides() && k.sizes() == q.sizes() && q.is_alias_of(k) && gap > 0) {
      std::vector<int64_t> strides = q.strides().vec();
      strides.insert(strides.begin(), gap);
      qk.narrow(-1, 0, E).copy_(q.as_strided(qk.narrow(-1, 0, E).sizes(), strides, q.storage_offset()));
    } else {
      qk[0].narrow(-1, 0, E).copy_(q);
      qk[1].narrow(-1, 0, E).copy_(k);
    }
    qk.narrow(-1, E, width - E).zero_();
    ctx->saved_data["E"] = E;
    return {qk[0], qk[1]};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const int64_t E = ctx->saved_data["E"].toInt();
    auto cut = [E](const at::Tensor& g) { return g.defined() ? g.narrow(-1, 0, E) : g; };  // views, no copy
    return {cut(grads[0]), cut(grads[1]), at::Tensor()};
  }
};

class PublishedGatedValue : public torch::autograd::Function<PublishedGatedValue> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& e, const at::Tensor& alpha, const at::Tensor& tau,
                            const at::Tensor& v, int64_t width) {
    compat::NoAutocast fp32;  // the gate is float32 whatever v's type (energy_gate.cpp says why)
    const int64_t T = e.size(-1), E = v.size(-1);
    // zm = [z | -1] per key, [B, H, T, 2]: the backward's two sums over t, -sum dx and
    // sum dx z, are then one product dx zm.
    std::vector<int64_t> zm_shape = e.sizes().vec();
    zm_shape.push_back(2);
    at::Tensor zm = at::empty(zm_shape, e.options());
    at::Tensor z = zm.select(-1, 0);
    zm.select(-1, 1).fill_(-1);
    at::Tensor inv_std, var_ok;
    if (T == 1) {
      z.zero_();  // SPEC: with one position the z-score is 0
    } else {
      auto [var, mean] = at::var_mean(e, at::IntArrayRef{-1}, at::Scalar(0), /*keepdim=*/true);  // population
      at::Tensor var_clamped = var.clamp_min(kVarFloor);
      var_ok = unclamped(var, var_clamped);  // where the clamp does not hold var, var's gradient flows
      inv_std = var_clamped.rsqrt_();
      at::sub_out(z, e, mean).mul_(inv_std);
    }
    at::Tensor g = (z - tau.view({1, -1, 1})).mul_(alpha.view({1, -1, 1})).sigmoid_();  // [B, H, T]
    at::Tensor gv = g.to(v.scalar_type()).unsqueeze(-1);                                 // [B, H, T, 1]
    std::vector<int64_t> shape = v.sizes().vec();
    shape.back() = width;
    at::Tensor out = at::empty(shape, v.options());  // [g v | g | 0 ...], built in place once
    at::Tensor gated = out.narrow(-1, 0, E);
    at::mul_out(gated, v, gv);
    at::Tensor tail = out.narrow(-1, E, width - E);
    at::mul_out(tail, gv, first_column_one(width - E, v.options()));  // [g | 0 ...]
    ctx->save_for_backward({zm, g, out, alpha, tau, inv_std, var_ok, e});
    ctx->saved_data["E"] = E;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    compat::NoAutocast fp32;
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &zm = s[0], &g = s[1], &out = s[2], &alpha = s[3], &tau = s[4], &inv_std = s[5], &var_ok = s[6];
    const at::Tensor& e = s[7];
    const int64_t E = ctx->saved_data["E"].toInt();
    const at::Tensor& G = grads[0];  // [B, H, T, width]
    at::Tensor dv = G.narrow(-1, 0, E) * out.narrow(-1, E, 1);
    // out's pad columns are 0, so sum_c G_c out_c = g (sum_e G_e v_e + G_E) = g dL/dg, and
    // dL/dx = g (1 - g) dL/dg for x = alpha (z - tau), the sigmoid's argument.
    at::Tensor g_dg = (G * out).sum(-1, /*keepdim=*/false, g.scalar_type());  // [B, H, T]
    at::Tensor dx = at::addcmul(g_dg, g_dg, g, /*value=*/-1);
    at::Tensor S = at::matmul(dx.unsqueeze(-2), zm);  // [B, H, 1, 2]: sum_t dx z, -sum_t dx
    at::Tensor S2 = S.select(-1, 0), minus_S1 = S.select(-1, 1);  // [B, H, 1]
    at::Tensor Sb = S.sum(0).view({-1, 2});                        // [H, 2]: the same summed over B
    at::Tensor dalpha = at::addcmul(Sb.select(-1, 0), tau, Sb.select(-1, 1));  // sum dx (z - tau)
    at::Tensor dtau = Sb.select(-1, 1) * alpha;                                  // -alpha sum dx
    at::Tensor de;
    if (inv_std.defined()) {
      // z = (e - mean) r, r = 1 / sqrt(max(var, 1e-16)), dL/dz = alpha dx:
      // dL/de = alpha r (dx - mean_t dx - z mean_t(dx z) [var >= 1e-16]).
      at::Tensor t = at::addcmul(minus_S1, zm.select(-1, 0), S2 * var_ok, /*value=*/-1);
      de = at::empty_like(e);  // e's layout (a transposed view of the energy projection): no copy behind it
      at::mul_out(de, at::add(dx, t, 1.0 / static_cast<double>(zm.size(-2))), inv_std * alpha.view({1, -1, 1}));
    }
    return {de, dalpha, dtau, dv, at::Tensor()};
  }
};

class RenormaliseByColumn : public torch::autograd::Function<RenormaliseByColumn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y_den, int64_t E) {
    const int64_t B = y_den.size(0), H = y_den.size(1), T = y_den.size(2);
    at::Tensor den = y_den.narrow(-1, E, 1);
    at::Tensor den_clamped = den.clamp_min(kDenFloor);
    // y laid out [B, T, H, E]: the heads' merge then reads it without a copy.
    at::Tensor y = empty_heads_last(B, H, T, E, y_den.options());
    at::div_out(y, y_den.narrow(-1, 0, E), den_clamped);
    // [1 where den's gradient flows, else 0 | 0 ...]: the columns after den are 0 and
    // den_clamped is not, so one comparison gives the mask and the zero padding after it.
    at::Tensor tail = y_den.narrow(-1, E, y_den.size(-1) - E);
    at::Tensor ok_tail = at::empty_like(tail);
    at::eq_out(ok_tail, tail, den_clamped);
    ctx->save_for_backward({ok_tail, den_clamped, y});
    ctx->saved_data["E"] = E;
    ctx->saved_data["width"] = y_den.size(-1);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &ok_tail = s[0], &den_clamped = s[1], &y = s[2];
    const int64_t E = ctx->saved_data["E"].toInt(), width = ctx->saved_data["width"].toInt();
    const int64_t B = y.size(0), H = y.size(1), T = y.size(2);
    at::Tensor G = empty_heads_last(B, H, T, width, y.options());  // SDPA's output's own layout
    at::Tensor g_num = G.narrow(-1, 0, E);
    at::div_out(g_num, grads[0], den_clamped);  // dL/dnum = gy / max(den, 1e-8)
    // dL/dden = -sum_e gy_e y_e / den where the clamp does not hold den, else 0: one batched
    // product per row ([B T H] rows, both laid out so), its sign taken by the product.
    const auto rows = [&](const at::Tensor& x, int64_t n, int64_t m) {
      return x.transpose(1, 2).reshape({B * T * H, n, m});
    };
    at::Tensor ignored = at::empty({1, 1, 1}, y.options());  // beta = 0: baddbmm reads nothing of it
    at::Tensor minus_s = at::baddbmm(ignored, rows(g_num, 1, E), rows(y, E, 1), /*beta=*/0, /*alpha=*/-1);
    at::Tensor tail = G.narrow(-1, E, width - E);  // [dL/dden | 0 ...]
    at::mul_out(tail, minus_s.view({B, T, H, 1}).transpose(1, 2), ok_tail);
    return {G, at::Tensor()};
  }
};

class PrefixTerms : public torch::autograd::Function<PrefixTerms> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& e, const at::Tensor& alpha,
                               const at::Tensor& tau) {
    compat::NoAutocast fp32;
    const int64_t T = e.size(-1);
    at::Tensor e64 = e.to(at::kDouble);
    // acdd = [a | c | d | d^2], [4, B, H, T]: d and d^2 side by side take one prefix sum, and
    // a, c, d side by side one conversion back to e's type.
    std::vector<int64_t> shape = e.sizes().vec();
    shape.insert(shape.begin(), 4);
    at::Tensor acdd = at::empty(shape, e64.options());
    at::Tensor d = acdd[2];
    at::sub_out(d, e64, e64.narrow(-1, 0, 1));  // [B, H, T]; row 0 gets z = 0 exactly
    at::Tensor d2 = acdd[3];
    at::mul_out(d2, d, d);
    at::Tensor n = at::arange(1, T + 1, e64.options());
    at::Tensor moments = acdd.narrow(0, 2, 2).cumsum(-1).div_(n);  // [mean | mean of d^2] over j <= i
    at::Tensor mean = moments[0];
    at::Tensor var = at::addcmul(moments[1], mean, mean, -1);  // population variance
    at::Tensor var_clamped = var.clamp_min(kVarFloor);
    at::Tensor var_ok = unclamped(var, var_clamped);
    at::Tensor r = var_clamped.rsqrt_();  // 1 / max(std, 1e-8)
    at::Tensor al = alpha.to(at::kDouble).view({1, -1, 1});
    at::Tensor minus_al = al.neg();
    at::Tensor q = at::addcmul(tau.to(at::kDouble).view({1, -1, 1}), mean, r);  // mean / std + tau
    at::Tensor a = acdd[0], c = acdd[1];
    at::mul_out(a, r, al);
    at::mul_out(c, q, minus_al);
    ctx->save_for_backward({d, mean, r, q, var_ok, minus_al, n, e});
    ctx->saved_data["param_type"] = static_cast<int64_t>(alpha.scalar_type());
    at::Tensor acd = acdd.narrow(0, 0, 3).to(e.scalar_type());
    return {acd[0], acd[1], acd[2]};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    compat::NoAutocast fp32;
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &d = s[0], &mean = s[1], &r = s[2], &q = s[3], &var_ok = s[4], &minus_al = s[5], &n = s[6];
    const at::Tensor& e = s[7];
    auto grad64 = [&](const at::Tensor& g) { return g.defined() ? g.to(at::kDouble) : at::zeros_like(d); };
    const at::Tensor ga = grad64(grads[0]), gc = grad64(grads[1]), gd = grad64(grads[2]);
    // a = alpha r, c = -alpha q, q = mean r + tau:
    at::Tensor dalpha = at::addcmul(ga * r, gc, q, -1).sum(at::IntArrayRef{0, 2});
    at::Tensor dtau = gc.sum(at::IntArrayRef{0, 2}) * minus_al.view({-1});
    at::Tensor dr = at::addcmul(ga, gc, mean, -1).mul_(minus_al);  // -alpha (ga - gc mean)
    // r = max(var, 1e-16)^(-1/2); var = S2 / n - mean^2, mean = S1 / n with S1, S2 the prefix
    // sums of d and d^2. h = 2 dL/dvar = -dL/dr r^3 [var >= 1e-16]; dL/dmean = -alpha r gc - 2 mean dL/dvar.
    at::Tensor h = dr.mul_(r.pow(3)).mul_(var_ok);
    std::vector<int64_t> shape = d.sizes().vec();
    shape.insert(shape.begin(), 2);
    at::Tensor per_n = at::empty(shape, d.options());  // [dL/dS1 | 2 dL/dS2], the two prefix sums' gradients
    at::Tensor dS1 = per_n[0], two_dS2 = per_n[1];
    at::div_out(dS1, at::addcmul((gc * r).mul_(minus_al), mean, h, -1), n);
    at::div_out(two_dS2, h, n);
    // A prefix sum's gradient is the suffix sum of its gradient: d_j receives sum_{i >= j} dS1_i
    // and 2 d_j sum_{i >= j} dS2_i.
    at::Tensor suffix = per_n.flip(-1).cumsum(-1).flip(-1);  // [2, B, H, T]
    at::Tensor dd = at::addcmul(gd + suffix[0], d, suffix[1]);
    dd.narrow(-1, 0, 1).sub_(dd.sum(-1, /*keepdim=*/true));  // d_j = e_j - e_0
    const auto param_type = static_cast<at::ScalarType>(ctx->saved_data["param_type"].toInt());
    at::Tensor de = at::empty_like(e);  // e's layout (a transposed view of the energy projection): no copy behind it
    de.copy_(dd);
    return {de, dalpha.to(param_type), dtau.to(param_type)};
  }
};

class AffineLogGate : public torch::autograd::Function<AffineLogGate> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& c, const at::Tensor& d) {
    compat::NoAutocast fp32;  // the gate's terms are float32; so is its log
    at::Tensor x = at::addcmul(c.unsqueeze(-1), a.unsqueeze(-1), d.unsqueeze(-2));
    auto [out, buffer] = at::log_sigmoid_forward(x);
    ctx->save_for_backward({a, d, x, buffer});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &a = s[0], &d = s[1], &x = s[2], &buffer = s[3];
    compat::NoAutocast fp32;  // a CPU backward may run inside an autocast region: keep the products float32
    // d/dx log sigmoid(x) = 1 - sigmoid(x), in log_sigmoid's own backward.
    at::Tensor gx = at::log_sigmoid_backward(grads[0], x, buffer);  // [B, H, T, T]
    at::Tensor ga = at::matmul(gx, d.unsqueeze(-1)).squeeze(-1);   // sum_j gx_ij d_j
    at::Tensor gc = gx.sum(-1);                                     // sum_j gx_ij
    at::Tensor gd = at::matmul(a.unsqueeze(-2), gx).squeeze(-2);   // sum_i a_i gx_ij
    return {ga, gc, gd};
  }
};

thread_local bool host_reads_off = false;

}  // namespace

NoHostReads::NoHostReads() : before_(host_reads_off) { host_reads_off = true; }
NoHostReads::~NoHostReads() { host_reads_off = before_; }
bool host_reads_allowed() { return !host_reads_off; }

at::Tensor published_gated_value(const at::Tensor& e, const at::Tensor& alpha, const at::Tensor& tau,
                                 const at::Tensor& v, int64_t width) {
  TORCH_CHECK(width > v.size(-1), "published_gated_value: width ", width, " leaves no column for g");
  return PublishedGatedValue::apply(e, alpha, tau, v, width);
}

std::pair<at::Tensor, at::Tensor> pad_query_key(const at::Tensor& q, const at::Tensor& k, int64_t width) {
  if (width == q.size(-1)) return {q, k};
  variable_list qk = PadQueryKey::apply(q, k, width);
  return {qk[0], qk[1]};
}

at::Tensor renormalise_by_column(const at::Tensor& y_den, int64_t E) {
  return RenormaliseByColumn::apply(y_den, E);
}

PrefixGateTerms prefix_gate_terms(const at::Tensor& e, const at::Tensor& alpha, const at::Tensor& tau) {
  variable_list acd = PrefixTerms::apply(e, alpha, tau);
  return {acd[0], acd[1], acd[2]};
}

at::Tensor affine_log_gate(const at::Tensor& a, const at::Tensor& c, const at::Tensor& d) {
  return AffineLogGate::apply(a, c, d);
}

bool gate_clamp_may_bind(const at::Tensor& a, const at::Tensor& c, const at::Tensor& d) {
  torch::NoGradGuard no_grad;
  // a_i d_j + c_i is affine in d_j, so over j <= i it is least at the prefix's smallest or largest d.
  std::vector<int64_t> shape = d.sizes().vec();
  shape.insert(shape.begin(), 2);
  at::Tensor lo_hi = at::empty(shape, d.options()), arg = at::empty(shape, d.options().dtype(at::kLong));
  at::Tensor lo = lo_hi[0], hi = lo_hi[1], lo_at = arg[0], hi_at = arg[1];
  at::cummin_out(lo, lo_at, d, -1);
  at::cummax_out(hi, hi_at, d, -1);
  const double x_min = at::addcmul(c, a, lo_hi).min().item<double>();
  // sigmoid(x) >= 1e-8 for x >= logit(1e-8) = -18.42; -18 leaves room for rounding. NaN: no
  // bound (the one-copy form then gives the NaN the published one would).
  return x_min < -18.0;
}

}  // namespace egm
