// The older CPU kernels that store [B, H, T, T]: the lower-triangular P v with
// counter dropout, the gated form for causal EGA, and their backward passes.
#include "model/kernels/causal_attention_kernels.h"


#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "model/kernels/counter_dropout.h"
#include "model/head_slices.h"
#include "model/kernels/parallel.h"
#include "model/kernels/cpu_blas.h"
#include "model/kernels/vector_math.h"

namespace egm {
namespace {

// Query rows per GEMM: blocks stop at the diagonal, so smaller blocks skip
// more of the masked triangle but make smaller products. 64 measured best at
// T = 256 (paper) and T = 128 (small) on this project's CPU machine.
constexpr int64_t kBlock = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using kernels::Slices;
using kernels::unit_last_stride;

// ---- S = scale q k^T + bias, -inf above the diagonal ----------------------------------------

torch::Tensor scores_forward(const torch::Tensor& q, const torch::Tensor& k, double scale_d,
                             const torch::Tensor& bias) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  torch::Tensor S = torch::empty({B, H, T, T}, q.options().memory_format(at::MemoryFormat::Contiguous));
  const Slices qs(q), ks(k);
  float* s_data = S.data_ptr<float>();
  const bool has_bias = bias.numel() > 0;
  const float* bias_data = has_bias ? bias.data_ptr<float>() : nullptr;
  const int64_t bias_heads = has_bias ? bias.size(0) : 0;
  const float scale = static_cast<float>(scale_d);
  SingleThreadedBlas one_blas_thread;
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh) {
      float* s = s_data + bh * T * T;
      const float* b = bias_data ? bias_data + (bias_heads == 1 ? 0 : bh % H) * T * T : nullptr;
      for (int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const int64_t r1 = std::min(T, r0 + kBlock), rows = r1 - r0;  // keys 0..r1-1 can be seen
        for (int64_t i = r0; i < r1; ++i) {
          if (b) std::memcpy(s + i * T, b + i * T, sizeof(float) * r1);
          std::fill(s + i * T + r1, s + (i + 1) * T, kNegInf);
        }
        cpu_sgemm(false, true, rows, r1, D, scale, qs.at(bh) + r0 * qs.ld, qs.ld, ks.at(bh), ks.ld, b ? 1.0f : 0.0f,
                  s + r0 * T, T);
        for (int64_t i = r0; i < r1; ++i) std::fill(s + i * T + i + 1, s + i * T + r1, kNegInf);
      }
    }
  });
  return S;
}

// dq = scale dS k, dk = scale dS^T q, reading dS only on and below the diagonal.
std::pair<torch::Tensor, torch::Tensor> scores_backward(const torch::Tensor& dS_in, const torch::Tensor& q,
                                                        const torch::Tensor& k, double scale_d) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  torch::Tensor dS = dS_in.contiguous();
  torch::Tensor dq = torch::empty({B, H, T, D}, q.options().memory_format(at::MemoryFormat::Contiguous));
  torch::Tensor dk = torch::empty({B, H, T, D}, q.options().memory_format(at::MemoryFormat::Contiguous));
  const Slices qs(q), ks(k);
  const float* ds_data = dS.data_ptr<float>();
  float* dq_data = dq.data_ptr<float>();
  float* dk_data = dk.data_ptr<float>();
  const float scale = static_cast<float>(scale_d);
  SingleThreadedBlas one_blas_thread;
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> diag(kBlock * kBlock);
    for (int64_t bh = begin; bh < end; ++bh) {
      const float* ds = ds_data + bh * T * T;
      const float* qp = qs.at(bh);
      const float* kp = ks.at(bh);
      float* dqp = dq_data + bh * T * D;
      float* dkp = dk_data + bh * T * D;
      for (int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const int64_t r1 = std::min(T, r0 + kBlock), n = r1 - r0;
        // The diagonal block with its upper triangle zeroed.
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) diag[i * n + j] = j <= i ? ds[(r0 + i) * T + r0 + j] : 0.0f;
        // dq rows r0..r1: keys before the block, then the block itself.
        if (r0 > 0) cpu_sgemm(false, false, n, D, r0, scale, ds + r0 * T, T, kp, ks.ld, 0.0f, dqp + r0 * D, D);
        cpu_sgemm(false, false, n, D, n, scale, diag.data(), n, kp + r0 * ks.ld, ks.ld, r0 > 0 ? 1.0f : 0.0f,
                  dqp + r0 * D, D);
        // dk rows r0..r1 (as keys): the block itself, then the queries after it.
        cpu_sgemm(true, false, n, D, n, scale, diag.data(), n, qp + r0 * qs.ld, qs.ld, 0.0f, dkp + r0 * D, D);
        if (r1 < T)
          cpu_sgemm(true, false, n, D, T - r1, scale, ds + r1 * T + r0, T, qp + r1 * qs.ld, qs.ld, 1.0f,
                    dkp + r0 * D, D);
      }
    }
  });
  return {dq, dk};
}

class CausalScoresFunction : public torch::autograd::Function<CausalScoresFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               double scale, const torch::Tensor& bias) {
    ctx->save_for_backward({q, k});
    ctx->saved_data["scale"] = scale;
    return scores_forward(q, k, scale, bias);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    auto [dq, dk] = scores_backward(grads[0], saved[0], saved[1], ctx->saved_data["scale"].toDouble());
    return {dq, dk, torch::Tensor(), torch::Tensor()};
  }
};

// ---- y = dropout(P) v, P lower-triangular --------------------------------------------------------

// Rows [i0, i1) x columns [j0, j0 + width) of dropout(P) with the part above the diagonal
// zeroed, into dst (row stride width). P is one (b, h) slice; `base` its offset in P's index space.
void load_block(const float* P, int64_t T, int64_t base, const DropoutMask& mask, int64_t i0, int64_t i1,
                int64_t j0, int64_t width, float* dst) {
  for (int64_t i = i0; i < i1; ++i) {
    float* out = dst + (i - i0) * width;
    const int64_t n = std::clamp<int64_t>(i - j0 + 1, 0, width);  // columns j <= i
    mask.apply(base + i * T + j0, n, P + i * T + j0, out);
    std::fill(out + n, out + width, 0.0f);
  }
}

// y = M v for a lower-triangular [B, H, T, T] M that is never stored: load_rows(bh, r0, r1,
// panel, scratch) writes rows r0..r1 of slice bh's M (columns 0..r1, row stride r1, zeros
// above the diagonal) into panel; scratch holds T floats for the loader's own use.
template <typename LoadRows>
torch::Tensor lower_triangular_matmul(const torch::Tensor& P, const torch::Tensor& v, const LoadRows& load_rows) {
  const int64_t B = P.size(0), H = P.size(1), T = P.size(2), E = v.size(3);
  torch::Tensor y = torch::empty({B, H, T, E}, v.options().memory_format(at::MemoryFormat::Contiguous));
  const Slices vs(v);
  float* y_data = y.data_ptr<float>();
  SingleThreadedBlas one_blas_thread;
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> panel(kBlock * T), scratch(T);
    for (int64_t bh = begin; bh < end; ++bh) {
      for (int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const int64_t r1 = std::min(T, r0 + kBlock);
        load_rows(bh, r0, r1, panel.data(), scratch.data());
        cpu_sgemm(false, false, r1 - r0, E, r1, 1.0f, panel.data(), r1, vs.at(bh), vs.ld, 0.0f,
                  y_data + bh * T * E + r0 * E, E);
      }
    }
  });
  return y;
}

torch::Tensor mix_forward(const torch::Tensor& P, const torch::Tensor& v, const DropoutMask& mask) {
  const int64_t T = P.size(2);
  const float* p_data = P.data_ptr<float>();
  return lower_triangular_matmul(P, v, [&](int64_t bh, int64_t r0, int64_t r1, float* panel, float*) {
    load_block(p_data + bh * T * T, T, bh * T * T, mask, r0, r1, 0, r1, panel);
  });
}

// dP = (dy v^T) * dropout factors on and below the diagonal, 0 above; dv = dropout(P)^T dy.
std::pair<torch::Tensor, torch::Tensor> mix_backward(const torch::Tensor& dy_in, const torch::Tensor& P,
                                                     const torch::Tensor& v, const DropoutMask& mask) {
  const int64_t B = P.size(0), H = P.size(1), T = P.size(2), E = v.size(3);
  torch::Tensor dy = dy_in.contiguous();
  torch::Tensor dP = torch::empty({B, H, T, T}, P.options().memory_format(at::MemoryFormat::Contiguous));
  torch::Tensor dv = torch::empty({B, H, T, E}, v.options().memory_format(at::MemoryFormat::Contiguous));
  const Slices vs(v);
  const float* p_data = P.data_ptr<float>();
  const float* dy_data = dy.data_ptr<float>();
  float* dp_data = dP.data_ptr<float>();
  float* dv_data = dv.data_ptr<float>();
  SingleThreadedBlas one_blas_thread;
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> panel(T * kBlock);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t base = bh * T * T;
      const float* p = p_data + base;
      const float* dyp = dy_data + bh * T * E;
      float* dp = dp_data + base;
      for (int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const int64_t r1 = std::min(T, r0 + kBlock);
        cpu_sgemm(false, true, r1 - r0, r1, E, 1.0f, dyp + r0 * E, E, vs.at(bh), vs.ld, 0.0f, dp + r0 * T, T);
        for (int64_t i = r0; i < r1; ++i) {
          float* row = dp + i * T;
          mask.apply(base + i * T, i + 1, row, row);  // the same factors as forward
          std::fill(row + i + 1, row + T, 0.0f);
        }
        // dv rows r0..r1 (as keys) take every query i >= r0.
        const int64_t width = r1 - r0;
        load_block(p, T, base, mask, r0, T, r0, width, panel.data());
        cpu_sgemm(true, false, width, E, T - r0, 1.0f, panel.data(), width, dyp + r0 * E, E, 0.0f,
                  dv_data + bh * T * E + r0 * E, E);
      }
    }
  });
  return {dP, dv};
}

class CausalDropoutMatmulFunction : public torch::autograd::Function<CausalDropoutMatmulFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& P_in,
                               const torch::Tensor& v_in, double p, bool training) {
    torch::Tensor P = P_in.contiguous(), v = unit_last_stride(v_in);
    ctx->save_for_backward({P, v});
    return mix_forward(P, v, draw_and_save_mask(ctx, p, training));
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    auto [dP, dv] = mix_backward(grads[0], saved[0], saved[1], DropoutMask::saved_in(ctx));
    return {dP, dv, torch::Tensor(), torch::Tensor()};
  }
};


// ---- y = (dropout(P) * sigmoid(a_i d_j + c_i)) v, the gate formed on the fly -----------------

// The causal EGA's pair gate g_ij = sigmoid(a_i d_j + c_i) (causal_energy_gated_attention.cpp)
// needs only three [B, H, T] vectors, so it is computed where it is used instead of being
// stored as a [B, H, T, T] tensor (and kept twice for backward): the forward forms
// M_ij = dropout(P)_ij g_ij while loading a block, the backward forms it again.
struct AffineGate {
  explicit AffineGate(const torch::Tensor& a, const torch::Tensor& c, const torch::Tensor& d)
      : a(a.data_ptr<float>()), c(c.data_ptr<float>()), d(d.data_ptr<float>()) {}
  const float *a, *c, *d;  // contiguous [B, H, T]
};

// affine_sigmoid (vector_math.h): G[j] = sigmoid(a d[j] + c), vectorised.

// Row i of dropout(P) (A, columns 0..i) and of the gate (G) for one (b, h) slice; bh_t = bh * T.
void gate_row(const float* p_row, int64_t base_i, const DropoutMask& mask, const AffineGate& gate, int64_t bh_t,
              int64_t i, float* A, float* G) {
  mask.apply(base_i, i + 1, p_row, A);
  affine_sigmoid(gate.a[bh_t + i], gate.c[bh_t + i], gate.d + bh_t, i + 1, G);
}

torch::Tensor gated_mix_forward(const torch::Tensor& P, const AffineGate& gate, const torch::Tensor& v,
                                const DropoutMask& mask) {
  const int64_t T = P.size(2);
  const float* p_data = P.data_ptr<float>();
  return lower_triangular_matmul(P, v, [&](int64_t bh, int64_t r0, int64_t r1, float* panel, float* g_row) {
    const int64_t base = bh * T * T;
    for (int64_t i = r0; i < r1; ++i) {
      float* m = panel + (i - r0) * r1;
      gate_row(p_data + base + i * T, base + i * T, mask, gate, bh * T, i, m, g_row);
      for (int64_t j = 0; j <= i; ++j) m[j] *= g_row[j];
      std::fill(m + i + 1, m + r1, 0.0f);
    }
  });
}

struct GatedMixGrads {
  torch::Tensor dP, da, dc, dd, dv;
};

// With M = A * G (A = dropout(P), G the gate) and dM = dy v^T on and below the diagonal:
//   dv = M^T dy;  dP = (dM * G) * dropout factors;  dlogit = dM * A * G (1 - G);
//   da_i = sum_j dlogit_ij d_j,  dc_i = sum_j dlogit_ij,  dd_j = sum_i dlogit_ij a_i.
// One pass per row block: M's rows serve dv (accumulated over blocks) and the gate's gradients.
GatedMixGrads gated_mix_backward(const torch::Tensor& dy_in, const torch::Tensor& P, const AffineGate& gate,
                                 const torch::Tensor& v, const DropoutMask& mask) {
  const int64_t B = P.size(0), H = P.size(1), T = P.size(2), E = v.size(3);
  torch::Tensor dy = dy_in.contiguous();
  auto f32 = v.options().memory_format(at::MemoryFormat::Contiguous);
  GatedMixGrads g{torch::empty({B, H, T, T}, f32), torch::empty({B, H, T}, f32), torch::empty({B, H, T}, f32),
                  torch::zeros({B, H, T}, f32), torch::zeros({B, H, T, E}, f32)};
  const Slices vs(v);
  const float* p_data = P.data_ptr<float>();
  const float* dy_data = dy.data_ptr<float>();
  float* dp_data = g.dP.data_ptr<float>();
  float *da = g.da.data_ptr<float>(), *dc = g.dc.data_ptr<float>(), *dd = g.dd.data_ptr<float>();
  float* dv_data = g.dv.data_ptr<float>();
  SingleThreadedBlas one_blas_thread;
  parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> m_panel(kBlock * T), a_panel(kBlock * T), g_panel(kBlock * T);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t base = bh * T * T, bh_t = bh * T;
      const float* dyp = dy_data + bh * T * E;
      const float* d = gate.d + bh_t;
      float* dp = dp_data + base;
      for (int64_t r0 = 0; r0 < T; r0 += kBlock) {
        const int64_t r1 = std::min(T, r0 + kBlock), rows = r1 - r0;
        for (int64_t i = r0; i < r1; ++i) {
          const int64_t o = (i - r0) * r1;
          gate_row(p_data + base + i * T, base + i * T, mask, gate, bh_t, i, a_panel.data() + o, g_panel.data() + o);
          for (int64_t j = 0; j <= i; ++j) m_panel[o + j] = a_panel[o + j] * g_panel[o + j];
          std::fill(m_panel.data() + o + i + 1, m_panel.data() + o + r1, 0.0f);
        }
        // dv rows 0..r1 (as keys) take this block's queries.
        cpu_sgemm(true, false, r1, E, rows, 1.0f, m_panel.data(), r1, dyp + r0 * E, E, 1.0f, dv_data + bh * T * E, E);
        // dM for rows r0..r1, columns 0..r1, straight into dP's rows.
        cpu_sgemm(false, true, rows, r1, E, 1.0f, dyp + r0 * E, E, vs.at(bh), vs.ld, 0.0f, dp + r0 * T, T);
        for (int64_t i = r0; i < r1; ++i) {
          const int64_t o = (i - r0) * r1;
          float* row = dp + i * T;
          const float ai = gate.a[bh_t + i];
          float sum_d = 0.0f, sum = 0.0f;
          for (int64_t j = 0; j <= i; ++j) {
            const float gj = g_panel[o + j], dm = row[j];
            const float dlogit = dm * a_panel[o + j] * gj * (1.0f - gj);
            sum_d += dlogit * d[j];
            sum += dlogit;
            dd[bh_t + j] += dlogit * ai;
            row[j] = dm * gj;
          }
          da[bh_t + i] = sum_d;
          dc[bh_t + i] = sum;
          mask.apply(base + i * T, i + 1, row, row);  // dA -> dP: the forward's factors
          std::fill(row + i + 1, row + T, 0.0f);
        }
      }
    }
  });
  return g;
}

class CausalGatedMixFunction : public torch::autograd::Function<CausalGatedMixFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& P_in,
                               const torch::Tensor& a_in, const torch::Tensor& c_in, const torch::Tensor& d_in,
                               const torch::Tensor& v_in, double p, bool training) {
    torch::Tensor P = P_in.contiguous(), v = unit_last_stride(v_in);
    torch::Tensor a = a_in.contiguous(), c = c_in.contiguous(), d = d_in.contiguous();
    ctx->save_for_backward({P, a, c, d, v});
    return gated_mix_forward(P, AffineGate(a, c, d), v, draw_and_save_mask(ctx, p, training));
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto s = ctx->get_saved_variables();
    GatedMixGrads g =
        gated_mix_backward(grads[0], s[0], AffineGate(s[1], s[2], s[3]), s[4], DropoutMask::saved_in(ctx));
    return {g.dP, g.da, g.dc, g.dd, g.dv, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

bool causal_kernels_apply(const torch::Tensor& a, const torch::Tensor& b) {
  return a.device().is_cpu() && b.device().is_cpu() && a.scalar_type() == torch::kFloat32 &&
         b.scalar_type() == torch::kFloat32;
}

torch::Tensor causal_scores(const torch::Tensor& q, const torch::Tensor& k, double scale,
                            const torch::Tensor& bias) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes(), "causal_scores: q and k must be [B, H, T, D] alike");
  torch::Tensor b = torch::empty({0}, q.options());  // "no bias": LibTorch 1.13's Function::apply rejects undefined inputs
  if (bias.defined()) {
    b = bias.to(torch::kFloat32).contiguous();
    TORCH_CHECK(b.dim() == 3 && (b.size(0) == 1 || b.size(0) == q.size(1)) && b.size(1) == q.size(2) &&
                    b.size(2) == q.size(2),
                "causal_scores: bias must be [1 or H, T, T]");
  }
  return CausalScoresFunction::apply(unit_last_stride(q), unit_last_stride(k), scale, b);
}

torch::Tensor causal_dropout_matmul(const torch::Tensor& P, const torch::Tensor& v, double p, bool training) {
  TORCH_CHECK(P.dim() == 4 && v.dim() == 4 && P.size(2) == P.size(3) && v.size(2) == P.size(2) &&
                  v.size(0) == P.size(0) && v.size(1) == P.size(1),
              "causal_dropout_matmul: P must be [B, H, T, T] and v [B, H, T, E]");
  return CausalDropoutMatmulFunction::apply(P, v, training ? p : 0.0, training && p > 0.0);
}

torch::Tensor causal_gated_dropout_matmul(const torch::Tensor& P, const torch::Tensor& a, const torch::Tensor& c,
                                          const torch::Tensor& d, const torch::Tensor& v, double p, bool training) {
  TORCH_CHECK(P.dim() == 4 && v.dim() == 4 && P.size(2) == P.size(3) && v.size(2) == P.size(2) &&
                  v.size(0) == P.size(0) && v.size(1) == P.size(1),
              "causal_gated_dropout_matmul: P must be [B, H, T, T] and v [B, H, T, E]");
  for (const torch::Tensor* t : {&a, &c, &d})
    TORCH_CHECK(t->sizes() == P.sizes().slice(0, 3) && t->scalar_type() == torch::kFloat32,
                "causal_gated_dropout_matmul: a, c and d must be float32 [B, H, T]");
  return CausalGatedMixFunction::apply(P, a, c, d, v, training ? p : 0.0, training && p > 0.0);
}

}  // namespace egm
