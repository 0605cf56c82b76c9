// The SDPA path's energy-gate autograd functions (energy_gate_functions.h): forward
// and a backward derived by hand, each a few whole-tensor kernels.
#include "model/energy_gate_functions.h"

#include <torch/torch.h>

#include <cmath>
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

class PadQueryKey : public torch::autograd::Function<PadQueryKey> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, int64_t width) {
    const int64_t E = q.size(-1);
    std::vector<int64_t> shape = q.sizes().vec();
    shape.insert(shape.begin(), 2);
    shape.back() = width;
    at::Tensor qk = at::empty(shape, q.options());  // [2, B, H, T, width]: both written once
    qk[0].narrow(-1, 0, E).copy_(q);
    qk[1].narrow(-1, 0, E).copy_(k);
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
    at::Tensor z, inv_std, var_ok;
    if (T == 1) {
      z = at::zeros_like(e);  // SPEC: with one position the z-score is 0
    } else {
      auto [var, mean] = at::var_mean(e, at::IntArrayRef{-1}, at::Scalar(0), /*keepdim=*/true);  // population
      at::Tensor var_clamped = var.clamp_min(kVarFloor);
      var_ok = unclamped(var, var_clamped);  // where the clamp does not hold var, var's gradient flows
      inv_std = var_clamped.rsqrt_();
      z = (e - mean).mul_(inv_std);
    }
    at::Tensor g = (z - tau.view({1, -1, 1})).mul_(alpha.view({1, -1, 1})).sigmoid_();  // [B, H, T]
    at::Tensor gv = g.to(v.scalar_type()).unsqueeze(-1);                                 // [B, H, T, 1]
    std::vector<int64_t> shape = v.sizes().vec();
    shape.back() = width;
    at::Tensor out = at::empty(shape, v.options());  // [g v | g | 0 ...], built in place once
    at::Tensor gated = out.narrow(-1, 0, E);
    at::mul_out(gated, v, gv);
    out.narrow(-1, E, 1).copy_(gv);
    if (width > E + 1) out.narrow(-1, E + 1, width - E - 1).zero_();
    ctx->save_for_backward({z, g, out, alpha, tau, inv_std, var_ok});
    ctx->saved_data["E"] = E;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    compat::NoAutocast fp32;
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &z = s[0], &g = s[1], &out = s[2], &alpha = s[3], &tau = s[4], &inv_std = s[5], &var_ok = s[6];
    const int64_t E = ctx->saved_data["E"].toInt();
    const at::Tensor& G = grads[0];  // [B, H, T, width]
    at::Tensor dv = G.narrow(-1, 0, E) * out.narrow(-1, E, 1);
    // out's pad columns are 0, so sum_c G_c out_c = g (sum_e G_e v_e + G_E) = g dL/dg, and
    // dL/dx = g (1 - g) dL/dg for x = alpha (z - tau), the sigmoid's argument.
    at::Tensor g_dg = (G * out).sum(-1, /*keepdim=*/false, g.scalar_type());  // [B, H, T]
    at::Tensor dx = at::addcmul(g_dg, g_dg, g, /*value=*/-1);
    at::Tensor S1 = dx.sum(-1, /*keepdim=*/true);        // [B, H, 1]: sum_t dx
    at::Tensor S2 = (dx * z).sum(-1, /*keepdim=*/true);  //            sum_t dx z
    const at::Tensor ta = tau.view({1, -1, 1});
    at::Tensor dalpha = at::addcmul(S2, ta, S1, /*value=*/-1).sum(at::IntArrayRef{0, 2});  // sum dx (z - tau)
    at::Tensor dtau = S1.sum(at::IntArrayRef{0, 2}) * alpha.neg();                        // -alpha sum dx
    at::Tensor de;
    if (inv_std.defined()) {
      // z = (e - mean) r, r = 1 / sqrt(max(var, 1e-16)), dL/dz = alpha dx:
      // dL/de = alpha r (dx - mean_t dx - z mean_t(dx z) [var >= 1e-16]).
      at::Tensor t = at::addcmul(S1, z, S2 * var_ok);
      de = at::add(dx, t, -1.0 / static_cast<double>(z.size(-1))).mul_(inv_std * alpha.view({1, -1, 1}));
    }
    return {de, dalpha, dtau, dv, at::Tensor()};
  }
};

class RenormaliseByColumn : public torch::autograd::Function<RenormaliseByColumn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y_den, int64_t E) {
    at::Tensor den = y_den.narrow(-1, E, 1);
    at::Tensor den_clamped = den.clamp_min(kDenFloor);
    at::Tensor y = y_den.narrow(-1, 0, E) / den_clamped;
    at::Tensor minus_ok = unclamped(den, den_clamped).neg_();  // -1 where den's gradient flows, else 0
    ctx->save_for_backward({minus_ok, den_clamped, y});
    ctx->saved_data["E"] = E;
    ctx->saved_data["width"] = y_den.size(-1);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &minus_ok = s[0], &den_clamped = s[1], &y = s[2];
    const int64_t E = ctx->saved_data["E"].toInt(), width = ctx->saved_data["width"].toInt();
    std::vector<int64_t> shape = y.sizes().vec();
    shape.back() = width;
    at::Tensor G = at::empty(shape, y.options());
    at::Tensor g_num = G.narrow(-1, 0, E);
    at::div_out(g_num, grads[0], den_clamped);  // dL/dnum = gy / max(den, 1e-8)
    // dL/dden = -sum_e gy_e y_e / den where the clamp does not hold den, else 0.
    at::Tensor g_den = G.narrow(-1, E, 1);
    at::mul_out(g_den, (g_num * y).sum(-1, /*keepdim=*/true), minus_ok);
    if (width > E + 1) G.narrow(-1, E + 1, width - E - 1).zero_();
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
    at::Tensor d = e64 - e64.narrow(-1, 0, 1);  // [B, H, T]; row 0 gets z = 0 exactly
    at::Tensor n = at::arange(1, T + 1, e64.options());
    at::Tensor mean = d.cumsum(-1).div_(n);                                        // mean over j <= i
    at::Tensor var = at::addcmul(d.square().cumsum(-1).div_(n), mean, mean, -1);  // population variance
    at::Tensor var_clamped = var.clamp_min(kVarFloor);
    at::Tensor var_ok = unclamped(var, var_clamped);
    at::Tensor r = var_clamped.rsqrt_();  // 1 / max(std, 1e-8)
    at::Tensor al = alpha.to(at::kDouble).view({1, -1, 1});
    at::Tensor q = at::addcmul(tau.to(at::kDouble).view({1, -1, 1}), mean, r);  // mean / std + tau
    ctx->save_for_backward({d, mean, r, q, var_ok, al, n});
    ctx->saved_data["e_type"] = static_cast<int64_t>(e.scalar_type());
    ctx->saved_data["param_type"] = static_cast<int64_t>(alpha.scalar_type());
    const auto type = e.scalar_type();
    return {(al * r).to(type), (q * al.neg()).to(type), d.to(type)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    compat::NoAutocast fp32;
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &d = s[0], &mean = s[1], &r = s[2], &q = s[3], &var_ok = s[4], &al = s[5], &n = s[6];
    auto grad64 = [&](const at::Tensor& g) { return g.defined() ? g.to(at::kDouble) : at::zeros_like(d); };
    const at::Tensor ga = grad64(grads[0]), gc = grad64(grads[1]), gd = grad64(grads[2]);
    // a = alpha r, c = -alpha q, q = mean r + tau:
    at::Tensor dalpha = at::addcmul(ga * r, gc, q, -1).sum(at::IntArrayRef{0, 2});
    at::Tensor dtau = gc.sum(at::IntArrayRef{0, 2}) * al.view({-1}).neg();
    at::Tensor dr = at::addcmul(ga, gc, mean, -1).mul_(al);  // alpha (ga - gc mean)
    at::Tensor dmean = (gc * r).mul_(al.neg());              // -alpha r gc
    // r = max(var, 1e-16)^(-1/2); var = S2 / n - mean^2, mean = S1 / n with S1, S2 the prefix
    // sums of d and d^2.
    at::Tensor dvar = dr.mul_(r.pow(3)).mul_(var_ok).mul_(-0.5);
    dmean.addcmul_(dvar, mean, -2.0);
    // A prefix sum's gradient is the suffix sum of its gradient: d_j receives sum_{i >= j} dS1_i
    // and 2 d_j sum_{i >= j} dS2_i.
    at::Tensor suffix = at::stack({dmean, dvar}).div_(n).flip(-1).cumsum(-1).flip(-1);  // [2, B, H, T]
    at::Tensor dd = at::addcmul(gd + suffix[0], d, suffix[1], 2.0);
    dd.narrow(-1, 0, 1).sub_(dd.sum(-1, /*keepdim=*/true));  // d_j = e_j - e_0
    const auto e_type = static_cast<at::ScalarType>(ctx->saved_data["e_type"].toInt());
    const auto param_type = static_cast<at::ScalarType>(ctx->saved_data["param_type"].toInt());
    return {dd.to(e_type), dalpha.to(param_type), dtau.to(param_type)};
  }
};

class AffineLogGate : public torch::autograd::Function<AffineLogGate> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& c, const at::Tensor& d) {
    compat::NoAutocast fp32;  // the gate's terms are float32; so is its log
    at::Tensor out = at::log_sigmoid(at::addcmul(c.unsqueeze(-1), a.unsqueeze(-1), d.unsqueeze(-2)));
    ctx->save_for_backward({a, d, out});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &a = s[0], &d = s[1], &out = s[2];
    compat::NoAutocast fp32;  // a CPU backward may run inside an autocast region: keep the products float32
    const at::Tensor& G = grads[0];  // [B, H, T, T]
    // d/dx log sigmoid(x) = 1 - sigmoid(x) = 1 - exp(out).
    at::Tensor gx = at::addcmul(G, G, out.exp(), /*value=*/-1);
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
  at::Tensor lo = std::get<0>(d.cummin(-1)), hi = std::get<0>(d.cummax(-1));
  const double x_min = at::minimum(at::addcmul(c, a, lo), at::addcmul(c, a, hi)).min().item<double>();
  // sigmoid(x) >= 1e-8 for x >= logit(1e-8) = -18.42; -18 leaves room for rounding. NaN: no
  // bound (the one-copy form then gives the NaN the published one would).
  return x_min < -18.0;
}

}  // namespace egm
