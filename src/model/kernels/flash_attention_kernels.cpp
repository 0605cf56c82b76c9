// Flash-style CPU attention: row panels of scores, an online softmax, the dropout
// bits and the causal EGA gate drawn in place, a backward that recomputes them.
#include "model/kernels/flash_attention_kernels.h"


#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model/kernels/causal_attention_kernels.h"
#include "model/kernels/counter_dropout.h"
#include "model/kernels/cpu_blas.h"
#include "model/head_slices.h"
#include "model/kernels/parallel.h"
#include "model/kernels/vector_math.h"

namespace egm {
namespace {

// Query rows per block, as in causal_attention_kernels.cpp (64 measured best there at T = 128, 256).
constexpr int64_t kBlock = 64;

std::atomic<bool>& flash_switch() {
  static std::atomic<bool> enabled{[] {
    const char* v = std::getenv("EGM_ATTENTION_KERNEL");
    return !(v && std::string(v) == "panels");
  }()};
  return enabled;
}

using kernels::Slices;
using kernels::unit_last_stride;

// The pair gate's three [B, H, T] vectors (contiguous), or none.
struct Gate {
  const float* a = nullptr;
  const float* c = nullptr;
  const float* d = nullptr;
  bool on() const { return a != nullptr; }
};

// Everything one call reads, resolved to raw slices.
struct Problem {
  Problem(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& bias,
          double scale)
      : B(q.size(0)), H(q.size(1)), T(q.size(2)), D(q.size(3)), E(v.size(3)), qs(q), ks(k), vs(v),
        bias(bias.numel() > 0 ? bias.data_ptr<float>() : nullptr), bias_heads(bias.numel() > 0 ? bias.size(0) : 0),
        scale(static_cast<float>(scale)) {}
  int64_t B, H, T, D, E;
  Slices qs, ks, vs;
  const float* bias;
  int64_t bias_heads;
  float scale;
};

// Rows r0..r1 of slice bh's scores against keys 0..r1 into panel (row stride r1):
// scale q_i.k_j + bias_ij. Entries above the diagonal are left as computed.
void score_panel(const Problem& pr, int64_t bh, int64_t r0, int64_t r1, float* panel) {
  const int64_t T = pr.T;
  const float* b = pr.bias ? pr.bias + (pr.bias_heads == 1 ? 0 : bh % pr.H) * T * T : nullptr;
  if (b)
    for (int64_t i = r0; i < r1; ++i) std::memcpy(panel + (i - r0) * r1, b + i * T, sizeof(float) * r1);
  cpu_sgemm(false, true, r1 - r0, r1, pr.D, pr.scale, pr.qs.at(bh) + r0 * pr.qs.ld, pr.qs.ld, pr.ks.at(bh),
            pr.ks.ld, b ? 1.0f : 0.0f, panel, r1);
}

// Row i's mixing weights from its probabilities p (n = i + 1 of them): m = dropout(p), times the
// gate when there is one (g receives the gate). Zeros up to `width`.
void mixing_row(const float* p, int64_t n, int64_t width, int64_t index, const DropoutMask& mask, const Gate& gate,
                int64_t gi, int64_t bh_t, float* m, float* g) {
  mask.apply(index, n, p, m);
  if (gate.on()) {
    affine_sigmoid(gate.a[gi], gate.c[gi], gate.d + bh_t, n, g);
    for (int64_t j = 0; j < n; ++j) m[j] *= g[j];
  }
  std::fill(m + n, m + width, 0.0f);
}

// ---- forward ---------------------------------------------------------------------------------

// Writes y (a [B, H, T, E] view with a unit last stride: contiguous, or the heads of a
// [B, T, H * E] tensor) and returns the row log-sum-exp [B, H, T].
torch::Tensor flash_forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& bias, double scale, const Gate& gate, const DropoutMask& mask,
                            const torch::Tensor& y) {
  const Problem pr(q, k, v, bias, scale);
  const int64_t T = pr.T, E = pr.E;
  torch::Tensor lse = torch::empty({pr.B, pr.H, T}, v.options().memory_format(at::MemoryFormat::Contiguous));
  const Slices ys(y);
  float* lse_data = lse.data_ptr<float>();
  SingleThreadedBlas one_blas_thread;
  parallel_for(0, pr.B * pr.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> s_panel(kBlock * T), m_panel(kBlock * T), g_row(T);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t bh_t = bh * T;
      for (int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const int64_t r1 = std::min(T, r0 + kBlock);
        score_panel(pr, bh, r0, r1, s_panel.data());
        for (int64_t i = r0; i < r1; ++i) {
          float* s = s_panel.data() + (i - r0) * r1;
          const int64_t n = i + 1;
          const float mx = max_of(s, n);
          exp_shifted(s, mx, n, s);
          const float sum = sum_of(s, n);  // >= 1: the maximum's own term
          const float inv = 1.0f / sum;
          for (int64_t j = 0; j < n; ++j) s[j] *= inv;
          lse_data[bh_t + i] = mx + std::log(sum);
          mixing_row(s, n, r1, bh * T * T + i * T, mask, gate, bh_t + i, bh_t, m_panel.data() + (i - r0) * r1,
                     g_row.data());
        }
        cpu_sgemm(false, false, r1 - r0, E, r1, 1.0f, m_panel.data(), r1, pr.vs.at(bh), pr.vs.ld, 0.0f,
                  ys.at(bh) + r0 * ys.ld, ys.ld);
      }
    }
  });
  return lse;
}

// A contiguous [B, H, T, E] output for flash_forward.
torch::Tensor heads_output(const torch::Tensor& q, const torch::Tensor& v) {
  return torch::empty({q.size(0), q.size(1), q.size(2), v.size(3)},
                      v.options().memory_format(at::MemoryFormat::Contiguous));
}

// ---- backward --------------------------------------------------------------------------------

struct Grads {
  torch::Tensor dq, dk, dv, da, dc, dd;
};

// Where flash_backward writes dq, dk, dv: [B, H, T, D/E] views with a unit last stride; their
// contents on entry are ignored (each (batch, head) zeroes its dk and dv rows before accumulating).
struct GradOutputs {
  torch::Tensor dq, dk, dv;
};

// With P = softmax(S) (recomputed from lse), A = dropout(P), M = A * G (G = 1 without a gate):
//   dv = M^T dy;  dM = dy v^T;  dA = dM * G;  dP = dA * dropout factors;
//   dS = P * (dP - rowsum(P * dP));  dq = scale dS k;  dk = scale dS^T q;
//   with a gate, dlogit = dM * A * G (1 - G): da_i = sum_j dlogit_ij d_j, dc_i = sum_j dlogit_ij,
//   dd_j = sum_i dlogit_ij a_i.
// Fresh contiguous dq, dk, dv for q [B, H, T, D], v [B, H, T, E].
GradOutputs contiguous_grad_outputs(const torch::Tensor& q, const torch::Tensor& v) {
  auto f32 = v.options().memory_format(at::MemoryFormat::Contiguous);
  return {torch::empty(q.sizes(), f32), torch::empty(q.sizes(), f32),
          torch::empty({q.size(0), q.size(1), q.size(2), v.size(3)}, f32)};
}

// dy: [B, H, T, E] with a unit last stride (any other layout).
Grads flash_backward(const torch::Tensor& dy_in, const torch::Tensor& q, const torch::Tensor& k,
                     const torch::Tensor& v, const torch::Tensor& bias, const torch::Tensor& lse, double scale,
                     const Gate& gate, const DropoutMask& mask, const GradOutputs& out) {
  const Problem pr(q, k, v, bias, scale);
  const int64_t B = pr.B, H = pr.H, T = pr.T;
  const torch::Tensor dy = unit_last_stride(dy_in);
  auto f32 = v.options().memory_format(at::MemoryFormat::Contiguous);
  Grads g{out.dq, out.dk, out.dv, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  if (gate.on()) {
    g.da = torch::empty({B, H, T}, f32);
    g.dc = torch::empty({B, H, T}, f32);
    g.dd = torch::zeros({B, H, T}, f32);
  }
  const Slices dys(dy), dqs(out.dq), dks(out.dk), dvs(out.dv);
  const float* lse_data = lse.data_ptr<float>();
  float* da = gate.on() ? g.da.data_ptr<float>() : nullptr;
  float* dc = gate.on() ? g.dc.data_ptr<float>() : nullptr;
  float* dd = gate.on() ? g.dd.data_ptr<float>() : nullptr;
  SingleThreadedBlas one_blas_thread;
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    // p: probabilities, then dS; m: mixing weights M; a/gv: dropout(P) and the gate (gate only); dm: dM -> dP;
    // f: the dropout factors, drawn once per row and used for both M and dP.
    std::vector<float> p_panel(kBlock * T), m_panel(kBlock * T), a_panel, g_panel, dm_panel(kBlock * T),
        f_panel(kBlock * T);
    if (gate.on()) {
      a_panel.resize(kBlock * T);
      g_panel.resize(kBlock * T);
    }
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t bh_t = bh * T;
      const float* dyp = dys.at(bh);
      const float* qp = pr.qs.at(bh);
      const float* kp = pr.ks.at(bh);
      for (int64_t t = 0; t < T; ++t) {  // dk, dv accumulate over the query blocks below
        std::fill_n(dks.at(bh) + t * dks.ld, pr.D, 0.0f);
        std::fill_n(dvs.at(bh) + t * dvs.ld, pr.E, 0.0f);
      }
      for (int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const int64_t r1 = std::min(T, r0 + kBlock), rows = r1 - r0;
        score_panel(pr, bh, r0, r1, p_panel.data());
        for (int64_t i = r0; i < r1; ++i) {
          const int64_t o = (i - r0) * r1, n = i + 1;
          float* p = p_panel.data() + o;
          exp_shifted(p, lse_data[bh_t + i], n, p);
          std::fill(p + n, p + r1, 0.0f);
          const float* f = f_panel.data() + o;
          mask.factors(bh * T * T + i * T, n, f_panel.data() + o);
          float* m = m_panel.data() + o;
          if (gate.on()) {
            // Keep dropout(P) and G apart: the gate's gradient needs both.
            float* a = a_panel.data() + o;
            float* gv = g_panel.data() + o;
            for (int64_t j = 0; j < n; ++j) a[j] = p[j] * f[j];
            affine_sigmoid(gate.a[bh_t + i], gate.c[bh_t + i], gate.d + bh_t, n, gv);
            for (int64_t j = 0; j < n; ++j) m[j] = a[j] * gv[j];
          } else {
            for (int64_t j = 0; j < n; ++j) m[j] = p[j] * f[j];
          }
          std::fill(m + n, m + r1, 0.0f);
        }
        // dv rows 0..r1 (as keys) take this block's queries; dM for the block.
        cpu_sgemm(true, false, r1, pr.E, rows, 1.0f, m_panel.data(), r1, dyp + r0 * dys.ld, dys.ld, 1.0f, dvs.at(bh),
                  dvs.ld);
        cpu_sgemm(false, true, rows, r1, pr.E, 1.0f, dyp + r0 * dys.ld, dys.ld, pr.vs.at(bh), pr.vs.ld, 0.0f,
                  dm_panel.data(), r1);
        for (int64_t i = r0; i < r1; ++i) {
          const int64_t o = (i - r0) * r1, n = i + 1;
          float* dm = dm_panel.data() + o;
          if (gate.on()) {
            const float* a = a_panel.data() + o;
            const float* gv = g_panel.data() + o;
            const float* d = gate.d + bh_t;
            const float ai = gate.a[bh_t + i];
            float sum_d = 0.0f, sum = 0.0f;
            for (int64_t j = 0; j < n; ++j) {
              const float dlogit = dm[j] * a[j] * gv[j] * (1.0f - gv[j]);
              sum_d += dlogit * d[j];
              sum += dlogit;
              dd[bh_t + j] += dlogit * ai;
              dm[j] *= gv[j];
            }
            da[bh_t + i] = sum_d;
            dc[bh_t + i] = sum;
          }
          const float* f = f_panel.data() + o;
          for (int64_t j = 0; j < n; ++j) dm[j] *= f[j];  // dA -> dP: the forward's factors
          float* p = p_panel.data() + o;
          const float rowdot = dot_of(p, dm, n);
          for (int64_t j = 0; j < n; ++j) p[j] *= dm[j] - rowdot;  // p now holds dS; zero above the diagonal
        }
        cpu_sgemm(false, false, rows, pr.D, r1, pr.scale, p_panel.data(), r1, kp, pr.ks.ld, 0.0f,
                  dqs.at(bh) + r0 * dqs.ld, dqs.ld);
        cpu_sgemm(true, false, r1, pr.D, rows, pr.scale, p_panel.data(), r1, qp + r0 * pr.qs.ld, pr.qs.ld, 1.0f,
                  dks.at(bh), dks.ld);
      }
    }
  });
  return g;
}

class FlashAttentionFunction : public torch::autograd::Function<FlashAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& bias, double scale, double p,
                               bool training) {
    torch::Tensor y = heads_output(q, v);
    torch::Tensor lse = flash_forward(q, k, v, bias, scale, Gate{}, draw_and_save_mask(ctx, p, training), y);
    ctx->save_for_backward({q, k, v, bias, lse});
    ctx->saved_data["scale"] = scale;
    return y;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto s = ctx->get_saved_variables();
    Grads g = flash_backward(grads[0], s[0], s[1], s[2], s[3], s[4], ctx->saved_data["scale"].toDouble(), Gate{},
                             DropoutMask::saved_in(ctx), contiguous_grad_outputs(s[0], s[2]));
    return {g.dq, g.dk, g.dv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// The heads of a fused projection qkv [B, T, 3 H D] (rows Q | K | V, head-major within each) as
// three [B, H, T, D] views: no copy.
std::array<torch::Tensor, 3> qkv_heads(const torch::Tensor& qkv, int64_t n_head) {
  const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(2) / (3 * n_head);
  torch::Tensor h = qkv.view({B, T, 3, n_head, D}).permute({2, 0, 3, 1, 4});
  return {h[0], h[1], h[2]};
}

// [B, T, H * D] -> its [B, H, T, D] view.
torch::Tensor as_heads(const torch::Tensor& y, int64_t n_head) {
  return y.view({y.size(0), y.size(1), n_head, y.size(2) / n_head}).permute({0, 2, 1, 3});
}

// Standard attention from the fused projection straight to the merged heads: reads q, k, v where
// the projection wrote them and writes y as [B, T, H * D], the layout c_proj takes; backward
// writes dq, dk, dv into one [B, T, 3 H D] gradient. Saves the head split's and merge's copies
// (forward: y's transpose; backward: dy's, the three gradients' stack and its reshape).
class FlashQkvAttentionFunction : public torch::autograd::Function<FlashQkvAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv, int64_t n_head,
                               const torch::Tensor& bias, double scale, double p, bool training) {
    auto [q, k, v] = qkv_heads(qkv, n_head);
    torch::Tensor y = torch::empty({qkv.size(0), qkv.size(1), qkv.size(2) / 3}, qkv.options());
    torch::Tensor lse =
        flash_forward(q, k, v, bias, scale, Gate{}, draw_and_save_mask(ctx, p, training), as_heads(y, n_head));
    ctx->save_for_backward({qkv, bias, lse});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["n_head"] = n_head;
    return y;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto s = ctx->get_saved_variables();
    const int64_t n_head = ctx->saved_data["n_head"].toInt();
    auto [q, k, v] = qkv_heads(s[0], n_head);
    torch::Tensor dqkv = torch::empty_like(s[0], at::MemoryFormat::Contiguous);
    auto [dq, dk, dv] = qkv_heads(dqkv, n_head);
    flash_backward(as_heads(grads[0].contiguous(), n_head), q, k, v, s[1], s[2], ctx->saved_data["scale"].toDouble(),
                   Gate{}, DropoutMask::saved_in(ctx), {dq, dk, dv});
    return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

class FlashGatedAttentionFunction : public torch::autograd::Function<FlashGatedAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& a, const torch::Tensor& c, const torch::Tensor& d,
                               const torch::Tensor& v, const torch::Tensor& bias, double scale, double p,
                               bool training) {
    const Gate gate{a.data_ptr<float>(), c.data_ptr<float>(), d.data_ptr<float>()};
    torch::Tensor y = heads_output(q, v);
    torch::Tensor lse = flash_forward(q, k, v, bias, scale, gate, draw_and_save_mask(ctx, p, training), y);
    ctx->save_for_backward({q, k, a, c, d, v, bias, lse});
    ctx->saved_data["scale"] = scale;
    return y;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto s = ctx->get_saved_variables();
    const Gate gate{s[2].data_ptr<float>(), s[3].data_ptr<float>(), s[4].data_ptr<float>()};
    Grads g = flash_backward(grads[0], s[0], s[1], s[5], s[6], s[7], ctx->saved_data["scale"].toDouble(), gate,
                             DropoutMask::saved_in(ctx), contiguous_grad_outputs(s[0], s[5]));
    return {g.dq, g.dk, g.da, g.dc, g.dd, g.dv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

torch::Tensor checked_bias(const torch::Tensor& bias, const torch::Tensor& q, const char* what) {
  if (!bias.defined()) return torch::empty({0}, q.options());  // "no bias" (an empty tensor, not undefined)
  torch::Tensor b = bias.to(torch::kFloat32).contiguous();
  TORCH_CHECK(b.dim() == 3 && (b.size(0) == 1 || b.size(0) == q.size(1)) && b.size(1) == q.size(2) &&
                  b.size(2) == q.size(2),
              what, ": bias must be [1 or H, T, T]");
  return b;
}

void check_qkv(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const char* what) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes() && v.dim() == 4 && v.size(0) == q.size(0) &&
                  v.size(1) == q.size(1) && v.size(2) == q.size(2),
              what, ": q, k must be [B, H, T, D] alike and v [B, H, T, E]");
  TORCH_CHECK(causal_kernels_apply(q, k) && causal_kernels_apply(q, v), what, ": CPU float32 tensors only");
}

}  // namespace

bool flash_attention_enabled() { return flash_switch().load(); }
void set_flash_attention(bool enabled) { flash_switch().store(enabled); }

torch::Tensor flash_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     double scale, const torch::Tensor& bias, double p, bool training) {
  check_qkv(q, k, v, "flash_causal_attention");
  return FlashAttentionFunction::apply(unit_last_stride(q), unit_last_stride(k), unit_last_stride(v),
                                       checked_bias(bias, q, "flash_causal_attention"), scale, training ? p : 0.0,
                                       training && p > 0.0);
}

torch::Tensor flash_causal_gated_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& a,
                                           const torch::Tensor& c, const torch::Tensor& d, const torch::Tensor& v,
                                           double scale, const torch::Tensor& bias, double p, bool training) {
  check_qkv(q, k, v, "flash_causal_gated_attention");
  for (const torch::Tensor* t : {&a, &c, &d})
    TORCH_CHECK(t->sizes() == q.sizes().slice(0, 3) && t->scalar_type() == torch::kFloat32 && t->device().is_cpu(),
                "flash_causal_gated_attention: a, c and d must be float32 [B, H, T]");
  return FlashGatedAttentionFunction::apply(unit_last_stride(q), unit_last_stride(k), a.contiguous(), c.contiguous(),
                                            d.contiguous(), unit_last_stride(v),
                                            checked_bias(bias, q, "flash_causal_gated_attention"), scale,
                                            training ? p : 0.0, training && p > 0.0);
}

torch::Tensor flash_causal_attention_qkv(const torch::Tensor& qkv, int64_t n_head, double scale,
                                         const torch::Tensor& bias, double p, bool training) {
  TORCH_CHECK(qkv.dim() == 3 && n_head > 0 && qkv.size(2) > 0 && qkv.size(2) % (3 * n_head) == 0,
              "flash_causal_attention_qkv: qkv must be [B, T, 3 * n_head * D]");
  TORCH_CHECK(causal_kernels_apply(qkv, qkv), "flash_causal_attention_qkv: CPU float32 tensors only");
  torch::Tensor x = qkv.contiguous();
  return FlashQkvAttentionFunction::apply(x, n_head, checked_bias(bias, qkv_heads(x, n_head)[0],
                                                                  "flash_causal_attention_qkv"),
                                          scale, training ? p : 0.0, training && p > 0.0);
}

torch::Tensor divide_by_last_column(const torch::Tensor& num_den) {
  const int64_t E = num_den.size(-1) - 1;
  return num_den.narrow(-1, 0, E) / num_den.narrow(-1, E, 1).clamp_min(1e-8);
}

}  // namespace egm
