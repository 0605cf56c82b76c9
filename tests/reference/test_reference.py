#!/usr/bin/python3
"""Self-tests of the PyTorch reference (egm_reference.py) and its fixture files.

Run: /usr/bin/python3 tests/reference/test_reference.py   (exit status 0 = all passed)

Each expected value comes from somewhere other than the code under test: the paper's published
parameter counts, closed-form identities stated in SPEC.md, hand-computed numbers, or numpy.
"""

import math
import os
import sys
import tempfile
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egm_ablations as abl  # noqa: E402
import egm_reference as ref  # noqa: E402
from egmt_format import read_egmt, write_egmt  # noqa: E402
import make_fixtures  # noqa: E402

torch.set_num_threads(1)
TINY = make_fixtures.CONFIGS["tiny"]


def tiny_model(attention, position, seed=0, dtype=torch.float64, conv_max_lag=None):
    if conv_max_lag is None:
        conv_max_lag = make_fixtures.conv_max_lag_for(attention)
    cfg = ref.GPTConfig(n_layer=2, n_head=2, d_model=16, block_size=12, vocab_size=11, dropout=0.0,
                        attention=attention, position=position, conv_max_lag=conv_max_lag)
    torch.manual_seed(seed)
    model = ref.GPT(cfg)
    model.reset_parameters(std=0.3)
    make_fixtures.perturb_away_from_init(model, torch.Generator().manual_seed(seed))
    return model.to(dtype).eval()


class ParameterCounts(unittest.TestCase):
    # Source: SPEC.md section 3, "parameters: base 4,816,640; EGA+MoPE 4,763,792".
    def test_paper_counts(self):
        base = ref.GPT(ref.GPTConfig(attention="standard", position="learned"))
        ega_mope = ref.GPT(ref.GPTConfig(attention="ega", position="mope"))
        self.assertEqual(ref.count_parameters(base), 4_816_640)
        self.assertEqual(ref.count_parameters(ega_mope), 4_763_792)

    def test_paper_shapes_by_name(self):
        model = ref.GPT(ref.GPTConfig(attention="ega_causal", position="rope"))
        shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
        expected = {
            "wte.weight": (65, 256), "wpe.weight": (256, 256),
            "h.5.ln_1.weight": (256,), "h.5.ln_1.bias": (256,),
            "h.5.attn.c_attn.weight": (768, 256), "h.5.attn.c_proj.weight": (256, 256),
            "h.5.attn.c_proj.bias": (256,), "h.5.attn.energy.weight": (8, 256),
            "h.5.attn.energy.bias": (8,), "h.5.attn.tau": (8,), "h.5.attn.alpha": (8,),
            "h.5.mlp.c_fc.weight": (1024, 256), "h.5.mlp.c_fc.bias": (1024,),
            "h.5.mlp.c_proj.weight": (256, 1024), "h.5.mlp.c_proj.bias": (256,),
            "ln_f.weight": (256,), "ln_f.bias": (256,),
        }
        for name, shape in expected.items():
            self.assertEqual(shapes.get(name), shape, name)
        self.assertNotIn("h.6.ln_1.weight", shapes)
        self.assertNotIn("lm_head.weight", shapes)     # tied to wte
        mope = ref.GPT(ref.GPTConfig(position="mope"))
        self.assertEqual(tuple(mope.mope.log_omega.shape), (128,))
        self.assertNotIn("wpe.weight", dict(mope.named_parameters()))

    def test_init_values(self):
        model = ref.GPT(ref.GPTConfig(attention="ega", position="learned"))
        attn = model.h[0].attn
        self.assertTrue(torch.all(attn.tau == 0.0))
        self.assertTrue(torch.all(attn.alpha == 2.0))
        self.assertAlmostEqual(model.wte.weight.std().item(), 0.02, delta=0.001)
        self.assertTrue(torch.all(model.h[0].mlp.c_fc.bias == 0))


class PositionEncodings(unittest.TestCase):
    def test_sincos_hand_values(self):
        table = ref.sincos_table(5, 4)
        # d = 4: frequencies 10000^0 = 1 and 10000^(-2/4) = 0.01.
        self.assertAlmostEqual(table[1, 0].item(), math.sin(1.0), places=12)
        self.assertAlmostEqual(table[1, 1].item(), math.cos(1.0), places=12)
        self.assertAlmostEqual(table[3, 2].item(), math.sin(0.03), places=12)
        self.assertAlmostEqual(table[3, 3].item(), math.cos(0.03), places=12)
        self.assertTrue(torch.equal(table[0], torch.tensor([0.0, 1.0, 0.0, 1.0], dtype=torch.float64)))

    def test_mope_init(self):
        mope = ref.MorletPositionalEncoding(256).double()
        f = np.exp(np.linspace(0.0, np.log(0.99 * np.pi), 128))
        np.testing.assert_allclose(np.exp(mope.log_omega.detach().numpy()), f, rtol=1e-6)
        np.testing.assert_allclose(np.exp(mope.log_sigma.detach().numpy()), 5 / f, rtol=1e-6)
        # By hand: pairs with f > 0.95 pi are clamped to 0.95 pi, which puts omega*sigma below 5, so the
        # projection sets omega = 5/sigma = f again: at init every effective omega is f.
        omega, sigma = mope.frequencies()
        np.testing.assert_allclose(omega.detach().numpy(), f, rtol=1e-6)
        self.assertGreater((f > 0.95 * np.pi).sum(), 0)

    def test_mope_large_sigma_is_sinusoid(self):
        # SPEC 2: sigma -> infinity gives a sinusoidal encoding with the learned frequencies.
        mope = ref.MorletPositionalEncoding(8).double()
        omegas = torch.tensor([0.1, 0.5, 1.0, 2.5], dtype=torch.float64)
        with torch.no_grad():
            mope.log_omega.copy_(omegas.log())
            mope.log_sigma.fill_(math.log(1e7))
        pe = mope(20)
        b = torch.arange(20, dtype=torch.float64)[:, None]
        torch.testing.assert_close(pe[:, 0::2], torch.cos(omegas * b), rtol=0, atol=1e-10)
        torch.testing.assert_close(pe[:, 1::2], torch.sin(omegas * b), rtol=0, atol=1e-10)
        # <PE(m), PE(n)> = sum_i cos(omega_i (m - n)): RoPE's angle (SPEC 2).
        torch.testing.assert_close(pe[7] @ pe[3], torch.cos(omegas * 4).sum(), rtol=0, atol=1e-10)

    def test_mope_clamp_and_projection_hand_values(self):
        mope = ref.MorletPositionalEncoding(4).double()
        with torch.no_grad():
            mope.log_omega.copy_(torch.tensor([math.log(1.0), math.log(4.0)], dtype=torch.float64))
            mope.log_sigma.copy_(torch.tensor([math.log(2.0), math.log(10.0)], dtype=torch.float64))
        omega, sigma = mope.frequencies()
        # Pair 0: 1*2 < 5 -> omega = 5/2. Pair 1: 4 clamped to 0.95 pi, 0.95 pi*10 >= 5 -> unchanged.
        self.assertAlmostEqual(omega[0].item(), 2.5, places=12)
        self.assertAlmostEqual(omega[1].item(), 0.95 * math.pi, places=12)
        pe = mope(4)
        self.assertAlmostEqual(pe[3, 0].item(), math.cos(7.5) * math.exp(-9 / (8 + 1e-8)), places=12)
        self.assertAlmostEqual(pe[3, 1].item(), math.sin(7.5) * math.exp(-9 / (8 + 1e-8)), places=12)
        self.assertAlmostEqual(pe[2, 3].item(), math.sin(1.9 * math.pi) * math.exp(-4 / (200 + 1e-8)), places=12)
        # SPEC 2: the projection gives log_omega no gradient where it is active (and so does the clamp).
        pe.sum().backward()
        self.assertEqual(mope.log_omega.grad.tolist(), [0.0, 0.0])
        self.assertTrue(torch.all(mope.log_sigma.grad != 0))

    def test_rope_hand_value_and_relative_property(self):
        # dh = 2: one pair with theta = 1, so position p rotates (x0, x1) by p radians.
        x = torch.tensor([1.0, 0.0], dtype=torch.float64).expand(1, 1, 4, 2)
        rotated = ref.apply_rope(x)
        torch.testing.assert_close(rotated[0, 0, 3], torch.tensor([math.cos(3), math.sin(3)], dtype=torch.float64))
        # q_m . k_n after RoPE depends only on m - n (same q and k at every position).
        torch.manual_seed(0)
        q = torch.randn(1, 1, 1, 8, dtype=torch.float64).expand(1, 1, 10, 8)
        k = torch.randn(1, 1, 1, 8, dtype=torch.float64).expand(1, 1, 10, 8)
        s = ref.apply_rope(q)[0, 0] @ ref.apply_rope(k)[0, 0].T          # [10,10]
        self.assertAlmostEqual(s[5, 2].item(), s[9, 6].item(), places=10)
        self.assertAlmostEqual(s[2, 5].item(), s[4, 7].item(), places=10)
        self.assertNotAlmostEqual(s[5, 2].item(), s[5, 3].item(), places=3)

    def test_alibi_slopes(self):
        # ALiBi (Press et al. 2022): for 8 heads the slopes are 1/2, 1/4, ..., 1/256.
        self.assertEqual(ref.alibi_slopes(8).tolist(), [2.0 ** -k for k in range(1, 9)])
        bias = ref.alibi_bias(2, 3, torch.zeros((), dtype=torch.float64))
        self.assertEqual(bias[0, 2, 0].item(), -2 * 2.0 ** -4)           # head 0 slope 2^(-8/2)
        self.assertEqual(bias[1, 2, 1].item(), -1 * 2.0 ** -8)
        self.assertEqual(bias[1, 1, 1].item(), 0.0)


class EnergyGate(unittest.TestCase):
    def test_zscore_population_std(self):
        e = torch.tensor([[1.0, 2.0, 4.0, 9.0]], dtype=torch.float64)
        values = np.array([1.0, 2.0, 4.0, 9.0])
        expected = (values - values.mean()) / values.std(ddof=0)
        np.testing.assert_allclose(ref.zscore(e)[0].numpy(), expected, rtol=1e-12)
        self.assertEqual(ref.zscore(torch.tensor([[3.5]])).tolist(), [[0.0]])          # T = 1
        self.assertEqual(ref.zscore(torch.tensor([[2.0, 2.0]])).tolist(), [[0.0, 0.0]])  # std floored

    def _attention_pieces(self, attention, position="none"):
        model = tiny_model(attention, position)
        attn = model.h[0].attn
        torch.manual_seed(1)
        x = torch.randn(3, 12, 16, dtype=torch.float64)
        return attn, x

    def _logit_bias_output(self, attn, x, causal):
        """softmax_j(s_ij + log g_ij) v, written independently of the module's gate code."""
        B, T, d = x.shape
        H, dh = attn.n_head, attn.head_dim
        W = attn.c_attn.weight
        q = (x @ W[:d].T).view(B, T, H, dh).transpose(1, 2)
        k = (x @ W[d:2 * d].T).view(B, T, H, dh).transpose(1, 2)
        v = (x @ W[2 * d:].T).view(B, T, H, dh).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)
        e = (x @ attn.energy.weight.T + attn.energy.bias).transpose(1, 2)    # [B,H,T]
        log_g = torch.empty(B, H, T, T, dtype=x.dtype)
        for i in range(T):
            keys = e[..., : i + 1] if causal else e
            mu = keys.mean(-1, keepdim=True)
            std = keys.std(-1, unbiased=False, keepdim=True).clamp(min=1e-8)
            z = (e - mu) / std if keys.shape[-1] > 1 else torch.zeros_like(e)
            log_g[:, :, i, :] = torch.nn.functional.logsigmoid(attn.alpha[:, None] * (z - attn.tau[:, None]))
        s = s + log_g
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(s, -1) @ v
        return attn.c_proj(y.transpose(1, 2).reshape(B, T, d))

    def test_ega_equals_logit_bias(self):
        # SPEC 1: without dropout the gate equals an additive logit bias softmax_j(s_ij + log g_j).
        for attention, causal in (("ega", False), ("ega_causal", True)):
            attn, x = self._attention_pieces(attention)
            with torch.no_grad():
                torch.testing.assert_close(attn(x), self._logit_bias_output(attn, x, causal), rtol=1e-10, atol=1e-12)

    def test_ega_with_zero_alpha_is_standard(self):
        # alpha = 0 makes g = 1/2 for every key, which renormalisation removes.
        attn, x = self._attention_pieces("ega")
        with torch.no_grad():
            attn.alpha.zero_()
            gated = attn(x)
            attn.attention = "standard"
            plain = attn(x)
        torch.testing.assert_close(gated, plain, rtol=1e-12, atol=1e-12)

    def test_attention_dropout_comes_before_the_gate(self):
        # SPEC 1: A = dropout(softmax(s)) and THEN gate + renormalise, so with EGA the dropped weights are
        # exactly 0 yet every row still sums to 1; standard attention keeps the 1/(1-p) rescaled rows.
        for attention in ("standard", "ega", "ega_causal"):
            cfg = ref.GPTConfig(n_layer=1, n_head=2, d_model=16, block_size=12, vocab_size=11, dropout=0.5,
                                attention=attention, position="none")
            attn = ref.CausalSelfAttention(cfg).double().train()
            torch.manual_seed(9)
            attn(torch.randn(4, 12, 16, dtype=torch.float64))
            w = attn.last_weights
            lower = torch.ones(12, 12, dtype=torch.bool).tril()
            self.assertGreater((w[..., lower] == 0).sum().item(), 0, attention)     # something was dropped
            row_sums = w[:, :, 1:].sum(-1)                                          # rows with >= 2 keys
            if attention == "standard":
                self.assertGreater((row_sums - 1).abs().max().item(), 0.1)
            else:
                nonzero = row_sums > 0                                              # a row may lose all keys
                torch.testing.assert_close(row_sums[nonzero], torch.ones_like(row_sums[nonzero]))

    def test_causal_gate_last_row_is_full_gate(self):
        torch.manual_seed(2)
        e = torch.randn(2, 3, 9, dtype=torch.float64)
        tau, alpha = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
        full = ref.ega_gate_full(e, tau, alpha)          # [B,H,1,T]
        causal = ref.ega_gate_causal(e, tau, alpha)      # [B,H,T,T]
        torch.testing.assert_close(causal[:, :, -1], full[:, :, 0], rtol=1e-12, atol=1e-12)
        # Row 0 sees one key: z = 0, g = sigmoid(-alpha tau).
        torch.testing.assert_close(causal[:, :, 0, 0], torch.sigmoid(-alpha * tau).expand(2, 3))

    def test_energy_bias_gets_no_gradient(self):
        # SPEC 1: the bias b_h is cancelled by the z-score (zero gradient); the weight does get one.
        for attention in ("ega", "ega_causal"):
            model = tiny_model(attention, "learned")
            idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(3))
            model(idx, idx)[1].backward()
            attn = model.h[0].attn
            self.assertLess(attn.energy.bias.grad.abs().max().item(), 1e-12)
            self.assertGreater(attn.energy.weight.grad.abs().max().item(), 1e-4)
            self.assertGreater(attn.tau.grad.abs().max().item(), 1e-4)


class ModelBehaviour(unittest.TestCase):
    def test_loss_is_mean_cross_entropy(self):
        model = tiny_model("standard", "learned")
        idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(4))
        targets = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(5))
        logits, loss = model(idx, targets)
        log_probs = logits - logits.logsumexp(-1, keepdim=True)
        manual = -log_probs.gather(-1, targets[..., None]).mean()
        self.assertAlmostEqual(loss.item(), manual.item(), places=12)

    def test_matches_plain_numpy_forward(self):
        # An independent numpy transcription of SPEC 3 (pre-LN, erf GELU, LN eps 1e-5, c_attn rows Q|K|V,
        # head h = columns h*dh..(h+1)*dh-1, tied head) for standard attention with a learned table.
        model = tiny_model("standard", "learned")
        P = {n: p.detach().numpy() for n, p in model.named_parameters()}
        idx = torch.randint(0, 11, (2, 12), generator=torch.Generator().manual_seed(10))
        erf = np.vectorize(math.erf)

        def layer_norm(x, w, b):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) / np.sqrt(var + 1e-5) * w + b

        T, d, H = 12, 16, 2
        dh = d // H
        x = P["wte.weight"][idx.numpy()] + P["wpe.weight"][:T]
        for i in range(2):
            pre = f"h.{i}."
            a = layer_norm(x, P[pre + "ln_1.weight"], P[pre + "ln_1.bias"])
            W = P[pre + "attn.c_attn.weight"]
            heads = []
            for h in range(H):
                rows = slice(h * dh, (h + 1) * dh)
                q = a @ W[:d][rows].T
                k = a @ W[d:2 * d][rows].T
                v = a @ W[2 * d:][rows].T
                s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
                s = np.where(np.triu(np.ones((T, T)), 1) > 0, -np.inf, s)
                p = np.exp(s - s.max(-1, keepdims=True))
                heads.append((p / p.sum(-1, keepdims=True)) @ v)
            y = np.concatenate(heads, axis=-1)
            x = x + y @ P[pre + "attn.c_proj.weight"].T + P[pre + "attn.c_proj.bias"]
            m = layer_norm(x, P[pre + "ln_2.weight"], P[pre + "ln_2.bias"])
            m = m @ P[pre + "mlp.c_fc.weight"].T + P[pre + "mlp.c_fc.bias"]
            m = 0.5 * m * (1 + erf(m / math.sqrt(2)))
            x = x + m @ P[pre + "mlp.c_proj.weight"].T + P[pre + "mlp.c_proj.bias"]
        logits = layer_norm(x, P["ln_f.weight"], P["ln_f.bias"]) @ P["wte.weight"].T
        with torch.no_grad():
            np.testing.assert_allclose(model(idx)[0].numpy(), logits, rtol=1e-10, atol=1e-10)

    def test_prefix_logits_causality(self):
        # SPEC 1: logits at i from the full window must equal those from the prefix x[0..i]. The published
        # EGA gate breaks this (its z-score uses future keys), and so, by design, do the ablation gates
        # (ega2/ega4, Morlet, Daubechies, mq: z over T; ABLATIONS.md table). standard, ega_causal and conv
        # must satisfy it; conv is tried with every position and with a lag range longer than the window.
        idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(6))
        cases = [(a, p, None) for a in ref.ATTENTIONS + ("conv",) for p in ref.POSITIONS]
        cases += [("conv", "alibi", 15), ("conv", "rope", 5)]
        cases += [(a, p, None) for a in abl.GATED_ATTENTIONS for p in ("learned", "alibi")]
        for attention, position, lag in cases:
            with self.subTest(attention=attention, position=position, lag=lag):
                model = tiny_model(attention, position, conv_max_lag=lag)
                with torch.no_grad():
                    full = model(idx)[0]
                    diff = (model.prefix_logits(idx) - full).abs()
                if attention in ref.CAUSAL_ATTENTIONS:
                    self.assertLess(diff.max().item(), 1e-10)
                else:
                    self.assertGreater(diff[:, :-1].max().item(), 1e-3)
                    self.assertLess(diff[:, -1].max().item(), 1e-10)       # the last prefix is the window

    def test_short_window_matches_long_window_prefix(self):
        # Position encodings are window-relative: a length-7 input equals the first 7 rows of a longer one
        # for every causal variant.
        idx = torch.randint(0, 11, (2, 12), generator=torch.Generator().manual_seed(7))
        for attention in ("standard", "ega_causal", "conv"):
            for position in ref.POSITIONS:
                model = tiny_model(attention, position)
                with torch.no_grad():
                    torch.testing.assert_close(model(idx[:, :7])[0], model(idx)[0][:, :7], rtol=1e-10, atol=1e-10)

    def test_dropout_only_in_training(self):
        cfg = ref.GPTConfig(n_layer=1, n_head=2, d_model=16, block_size=8, vocab_size=11, dropout=0.5,
                            attention="ega", position="mope")
        model = ref.GPT(cfg)
        idx = torch.randint(0, 11, (2, 8), generator=torch.Generator().manual_seed(8))
        model.eval()
        torch.testing.assert_close(model(idx)[0], model(idx)[0])
        model.train()
        self.assertFalse(torch.allclose(model(idx)[0], model(idx)[0]))


# ----------------------------------------------------------------------------
# Ablation kinds (src/model/ABLATIONS.md). Expected values come from the contract's formulas, written
# again below as plain numpy loops, from hand computation, or from known identities.
# ----------------------------------------------------------------------------

def np_zscore(e):
    """Contract z-score over the last axis: (e - mean) / sqrt(max(var, 1e-16)), population var; 0 when T = 1."""
    e = np.asarray(e, dtype=np.float64)
    if e.shape[-1] == 1:
        return np.zeros_like(e)
    mean = e.mean(-1, keepdims=True)
    var = ((e - mean) ** 2).mean(-1, keepdims=True)
    return (e - mean) / np.sqrt(np.maximum(var, 1e-16))


def np_morlet_bank(m, log_omega0, log_sigma):
    """re, im [B,H,4,T] of the contract's Morlet bank by direct sums; m [B,T], params [H,4] (numpy)."""
    B, T = m.shape
    H = log_omega0.shape[0]
    re = np.zeros((B, H, 4, T))
    im = np.zeros((B, H, 4, T))
    for h in range(H):
        for s, length in enumerate((3, 7, 15, 31)):
            omega = min(math.exp(log_omega0[h, s]), 0.95 * math.pi)
            sigma = max(math.exp(log_sigma[h, s]), 1e-3)
            if omega * sigma < 5:
                omega = 5 / sigma
            for b in range(B):
                for t in range(T):
                    for u in range(length):
                        if t - u >= 0:
                            env = math.exp(-u * u / (2 * sigma * sigma))
                            re[b, h, s, t] += math.cos(omega * u) * env * m[b, t - u]
                            im[b, h, s, t] += math.sin(omega * u) * env * m[b, t - u]
    return re, im


def np_mixed_gate(z, tau, alpha, scale_w):
    """g [B,H,T] = sum_s softmax(scale_w[h])_s sigmoid(alpha[h,s] (z[b,h,s,t] - tau[h,s]))."""
    mix = np.exp(scale_w) / np.exp(scale_w).sum(-1, keepdims=True)
    sig = 1 / (1 + np.exp(-alpha[None, :, :, None] * (z - tau[None, :, :, None])))
    return (mix[None, :, :, None] * sig).sum(2)


def np_params(attn, *names):
    return [getattr(attn, n).detach().numpy().astype(np.float64) for n in names]


def qk_scores(attn, x):
    """q_i . k_j / sqrt(dh) [B,H,T,T] straight from c_attn's rows (no masking)."""
    B, T, d = x.shape
    H, dh = attn.n_head, attn.head_dim
    W = attn.c_attn.weight
    q = (x @ W[:d].T).view(B, T, H, dh).transpose(1, 2)
    k = (x @ W[d:2 * d].T).view(B, T, H, dh).transpose(1, 2)
    return q @ k.transpose(-1, -2) / math.sqrt(dh)


def np_gated_attention(P, g, mask_future=True):
    """softmax over keys of P (future masked), gated per key column by g [B,H,T], rows renormalised."""
    T = P.shape[-1]
    s = np.where(np.triu(np.ones((T, T)), 1) > 0, -np.inf, P) if mask_future else P
    A = np.exp(s - s.max(-1, keepdims=True))
    A = A / A.sum(-1, keepdims=True)
    gated = A * g[:, :, None, :]
    return gated / np.maximum(gated.sum(-1, keepdims=True), 1e-8)


def random_ln_output(seed, B=3, T=12, d=16):
    """A stand-in for the ln_1 output with a non-constant channel mean (the Morlet/Daubechies signal)."""
    torch.manual_seed(seed)
    return torch.randn(B, T, d, dtype=torch.float64) + torch.randn(B, T, 1, dtype=torch.float64)


class AblationParameterCounts(unittest.TestCase):
    def test_paper_counts_by_hand(self):
        # Paper config L6 H8 d256 T256 V65; base (standard + learned) = 4,816,640 (SPEC 3). Per layer each
        # kind adds (ABLATIONS.md shapes), times 6 layers:
        #   conv L:        lag_weight H(2L+1):  L4 8*9 = 72 -> 432; L8 8*17 = 136 -> 816; L16 8*33 = 264 -> 1,584
        #   ega2:          energy 2H(d+1) = 16*257 = 4,112, tau/alpha/scale_w 3*2H = 48 -> 4,160 -> 24,960
        #   ega4:          4H(d+1) = 32*257 = 8,224, + 3*4H = 96 -> 8,320 -> 49,920
        #   ega_morlet:    log_omega0, log_sigma, tau, alpha, scale_w: 5*4H = 160 -> 960
        #   ega_db2/db4:   tau, alpha, scale_w: 3*4H = 96 -> 576 (fixed filters, no parameters)
        #   mq_e:          bank 2*4H = 64 + gate 3*4H = 96 + l_sim, l_E 2H = 16 -> 176 -> 1,056
        #   mq_ep, mq_ef:  + one more l (H = 8) -> 184 -> 1,104
        #   mq_epf:        + l_phi and l_F -> 192 -> 1,152
        #   scale_init:    init only -> + 0
        base = 4_816_640
        expected = {
            ("conv", 4): base + 432, ("conv", 8): base + 816, ("conv", 16): base + 1_584,
            ("ega2", 0): base + 24_960, ("ega4", 0): base + 49_920, ("ega_morlet", 0): base + 960,
            ("ega_db2", 0): base + 576, ("ega_db4", 0): base + 576, ("mq_e", 0): base + 1_056,
            ("mq_ep", 0): base + 1_104, ("mq_ef", 0): base + 1_104, ("mq_epf", 0): base + 1_152,
        }
        for (attention, lag), count in expected.items():
            model = ref.GPT(ref.GPTConfig(attention=attention, position="learned", conv_max_lag=lag))
            self.assertEqual(ref.count_parameters(model), count, (attention, lag))
        scale_init = ref.GPT(ref.GPTConfig(qk_scale_init=True))
        self.assertEqual(ref.count_parameters(scale_init), base)

    def test_shapes_and_inits_by_name(self):
        # ABLATIONS.md: names, shapes and init values (H = 8, d = 256, L_s = 3, 7, 15, 31).
        lengths = np.array([3.0, 7.0, 15.0, 31.0])
        conv = dict(ref.GPT(ref.GPTConfig(attention="conv", conv_max_lag=4)).named_parameters())
        w = conv["h.3.attn.lag_weight"].detach()
        self.assertEqual(tuple(w.shape), (8, 9))
        self.assertTrue(torch.equal(w[:, 4], torch.ones(8)) and w.abs().sum().item() == 8.0)
        ega4 = dict(ref.GPT(ref.GPTConfig(attention="ega4")).named_parameters())
        self.assertEqual(tuple(ega4["h.0.attn.energy.weight"].shape), (32, 256))
        self.assertEqual(tuple(ega4["h.0.attn.energy.bias"].shape), (32,))
        for name, value in (("tau", 0.0), ("alpha", 2.0), ("scale_w", 0.0)):
            self.assertTrue(torch.equal(ega4[f"h.0.attn.{name}"].detach(), torch.full((8, 4), value)), name)
        mq = dict(ref.GPT(ref.GPTConfig(attention="mq_epf")).named_parameters())
        np.testing.assert_allclose(np.exp(mq["h.2.attn.log_omega0"].detach().numpy()),
                                   np.tile(np.pi / lengths, (8, 1)), rtol=1e-6)
        np.testing.assert_allclose(np.exp(mq["h.2.attn.log_sigma"].detach().numpy()),
                                   np.tile(5 * lengths / np.pi, (8, 1)), rtol=1e-6)
        self.assertTrue(torch.equal(mq["h.2.attn.l_sim"].detach(), torch.ones(8)))
        for name in ("l_E", "l_phi", "l_F"):
            self.assertTrue(torch.equal(mq[f"h.2.attn.{name}"].detach(), torch.full((8,), 0.01)), name)
        db = dict(ref.GPT(ref.GPTConfig(attention="ega_db4")).named_parameters())
        self.assertEqual(sorted(n[9:] for n in db if n.startswith("h.0.attn.") and "c_" not in n),
                         ["alpha", "scale_w", "tau"])
        with self.assertRaises(ValueError):
            ref.GPTConfig(attention="ega", conv_max_lag=4)             # the lag only exists for conv

    def test_scale_init(self):
        # ABLATIONS.md: head h's Q and K rows ~ N(0, 0.02 (1 + (h mod 4)/4)); V and everything else as base
        # with the same seed.
        torch.manual_seed(5)
        base = dict(ref.GPT(ref.GPTConfig()).named_parameters())
        torch.manual_seed(5)
        scaled = dict(ref.GPT(ref.GPTConfig(qk_scale_init=True)).named_parameters())
        d, dh = 256, 32
        for name, p in base.items():
            if not name.endswith("c_attn.weight"):
                self.assertTrue(torch.equal(p, scaled[name]), name)
            else:
                self.assertTrue(torch.equal(p[2 * d:], scaled[name][2 * d:]), name)      # V unchanged
        for h in range(8):
            rows = torch.cat([torch.cat([scaled[f"h.{i}.attn.c_attn.weight"][o + h * dh:o + (h + 1) * dh]
                                         for o in (0, d)]) for i in range(6)])
            # 6 layers x 64 rows x 256 = 98,304 draws: the sample std is within ~0.5% of the truth.
            self.assertAlmostEqual(rows.std().item() / (0.02 * (1 + (h % 4) / 4)), 1.0, delta=0.02)


class AblationZscore(unittest.TestCase):
    def test_contract_zscore(self):
        # ABLATIONS.md: (e - mean) / sqrt(max(var, 1e-16)), population var, z = 0 when T = 1.
        e = torch.tensor([[1.0, 2.0, 4.0, 9.0]], dtype=torch.float64)
        values = np.array([1.0, 2.0, 4.0, 9.0])
        np.testing.assert_allclose(abl.zscore_T(e)[0].numpy(), (values - 4.0) / values.std(ddof=0), rtol=1e-12)
        self.assertEqual(abl.zscore_T(torch.tensor([[3.5]])).tolist(), [[0.0]])
        # Equal energies: var = 0 is floored, z = 0, and the gradient stays finite (the reason for the form).
        flat = torch.full((2, 5), 0.3, dtype=torch.float64, requires_grad=True)
        z = abl.zscore_T(flat)
        self.assertEqual(z.abs().max().item(), 0.0)
        (z * torch.arange(5.0, dtype=torch.float64)).sum().backward()
        self.assertTrue(torch.isfinite(flat.grad).all())

    def test_channel_mean_of_layer_norm_output(self):
        # Why the Morlet/Daubechies signal is (nearly) dead at the paper init: for y = LN(x) with gain w and
        # bias b, mean_c y_c = mean(b) + (1/d) sum_c (w_c - mean(w)) xhat_c, because sum_c xhat_c = 0. With
        # w = 1, b = 0 (the init) m_t = 0 up to rounding; only gains that differ across channels make it move.
        torch.manual_seed(23)
        ln = torch.nn.LayerNorm(16, eps=1e-5).double()
        x = torch.randn(3, 12, 16, dtype=torch.float64) * 2 + 1
        self.assertLess(ln(x).mean(-1).abs().max().item(), 1e-14)
        with torch.no_grad():
            ln.weight.copy_(1 + 0.1 * torch.randn(16, dtype=torch.float64))
            ln.bias.copy_(0.1 * torch.randn(16, dtype=torch.float64))
        xhat = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
        by_hand = ln.bias.mean() + ((ln.weight - ln.weight.mean()) * xhat).mean(-1)
        torch.testing.assert_close(ln(x).mean(-1), by_hand.detach(), rtol=1e-12, atol=1e-14)


class ConvAttention(unittest.TestCase):
    def _standard_twin(self, position, lag, lag_weight=None):
        """(conv model, standard model) with the same weights; conv's lag_weight as given (default: init)."""
        conv = tiny_model("conv", position, conv_max_lag=lag)
        std = tiny_model("standard", position)
        state = {k: v for k, v in conv.state_dict().items() if "lag_weight" not in k}
        std.load_state_dict(state, strict=True)
        with torch.no_grad():
            for block in conv.h:
                if lag_weight is None:
                    block.attn.lag_weight.zero_()
                    block.attn.lag_weight[:, lag] = 1.0                      # one-hot at lag 0 (the init)
                else:
                    block.attn.lag_weight.copy_(lag_weight)
        return conv, std

    def test_lag_zero_with_unit_weight_is_standard(self):
        idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(11))
        for position in ("learned", "alibi", "rope"):
            conv, std = self._standard_twin(position, 0, torch.ones(2, 1, dtype=torch.float64))
            with torch.no_grad():
                torch.testing.assert_close(conv(idx)[0], std(idx)[0], rtol=1e-12, atol=1e-12)

    def test_one_hot_at_lag_zero_is_standard_for_any_lag_range(self):
        idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(12))
        for lag in (1, 3, 11, 20):                                             # 20 > T: mostly out of range
            for position in ("learned", "alibi"):
                conv, std = self._standard_twin(position, lag)
                with torch.no_grad():
                    torch.testing.assert_close(conv(idx)[0], std(idx)[0], rtol=1e-12, atol=1e-12)
        # ... and a non-one-hot lag weight really changes the model.
        conv, std = self._standard_twin("learned", 1, torch.tensor([[0.3, 1.0, -0.2]] * 2, dtype=torch.float64))
        with torch.no_grad():
            self.assertGreater((conv(idx)[0] - std(idx)[0]).abs().max().item(), 1e-3)

    def test_hand_computed_example(self):
        # T = 3, one head, dh = 1 (so P_im = q_i k_m), L = 1, w = (w_-1, w_0, w_1) = (0.25, 1, -0.5),
        # q = (1, 2, -1), k = (0.5, -1, 2). The causal P (P_im = 0 for m > i):
        #   P = [[0.5, 0, 0], [1, -2, 0], [-0.5, 1, -2]]
        # s_ij = 0.25 P_{i,j-1} + P_{i,j} - 0.5 P_{i,j+1}, out-of-range terms 0:
        #   s_00 = 0.5 - 0.5*0 = 0.5                  (P_01 is a future key: 0, not q_0 k_1 = -1)
        #   s_10 = 1 - 0.5*(-2) = 2;      s_11 = 0.25*1 + (-2) - 0.5*0 = -1.75
        #   s_20 = -0.5 - 0.5*1 = -1;     s_21 = 0.25*(-0.5) + 1 - 0.5*(-2) = 1.875;   s_22 = 0.25*1 - 2 = -1.75
        q = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64).view(1, 1, 3, 1)
        k = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64).view(1, 1, 3, 1)
        P_full = q @ k.transpose(-1, -2)                                       # includes future entries
        attn = type("ConvStub", (), {})()
        attn.attention, attn.n_head = "conv", 1
        attn.lag_weight = torch.tensor([[0.25, 1.0, -0.5]], dtype=torch.float64)
        x = torch.zeros(1, 3, 4, dtype=torch.float64)                         # unused by conv
        s, gate = abl.scores_and_gate(attn, P_full, x)
        self.assertIsNone(gate)
        expected = {(0, 0): 0.5, (1, 0): 2.0, (1, 1): -1.75, (2, 0): -1.0, (2, 1): 1.875, (2, 2): -1.75}
        for (i, j), value in expected.items():
            self.assertAlmostEqual(s[0, 0, i, j].item(), value, places=14, msg=(i, j))
        # The attention weights these give: row 1 = (e^2, e^-1.75) / sum.
        masked = s.masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), float("-inf"))
        A = torch.softmax(masked, -1)[0, 0]
        self.assertAlmostEqual(A[1, 0].item(), 1 / (1 + math.exp(-3.75)), places=14)
        denominator = math.exp(-1) + math.exp(1.875) + math.exp(-1.75)
        self.assertAlmostEqual(A[2, 1].item(), math.exp(1.875) / denominator, places=14)

    def test_lagged_scores_match_direct_loop(self):
        rng = np.random.default_rng(13)
        B, H, T, L = 2, 3, 7, 2
        P = np.tril(rng.normal(size=(B, H, T, T)))
        w = rng.normal(size=(H, 2 * L + 1))
        expected = np.zeros_like(P)
        for b in range(B):
            for h in range(H):
                for i in range(T):
                    for j in range(T):
                        for l in range(-L, L + 1):
                            if 0 <= j + l < T:
                                expected[b, h, i, j] += w[h, l + L] * P[b, h, i, j + l]
        got = abl.lagged_scores(torch.tensor(P), torch.tensor(w))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)

    def test_every_lag_weight_gets_a_gradient_at_init(self):
        # ABLATIONS.md: one-hot init "so every lag weight gets a gradient" (the published one never trained).
        model = tiny_model("conv", "learned", conv_max_lag=3)
        idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(14))
        with torch.no_grad():
            for block in model.h:
                block.attn.lag_weight.zero_()
                block.attn.lag_weight[:, 3] = 1.0
        model(idx, idx)[1].backward()
        for block in model.h:
            self.assertGreater(block.attn.lag_weight.grad.abs().min().item(), 1e-8)


class FilterBanks(unittest.TestCase):
    def test_morlet_filters_at_init(self):
        # ABLATIONS.md: omega0 = pi/L_s, sigma = 5 L_s/pi at init; taps cos/sin(omega u) exp(-u^2/(2 sigma^2)).
        cfg = ref.GPTConfig(n_layer=1, n_head=2, d_model=16, block_size=12, vocab_size=11, attention="ega_morlet")
        attn = ref.CausalSelfAttention(cfg).double()
        filters = abl.morlet_filters(attn.log_omega0, attn.log_sigma)
        for s, length in enumerate((3, 7, 15, 31)):
            omega, sigma = math.pi / length, 5 * length / math.pi
            u = np.arange(length)
            env = np.exp(-u ** 2 / (2 * sigma ** 2))
            cos_taps, sin_taps = filters[s]
            self.assertEqual(tuple(cos_taps.shape), (2, length))
            for h in range(2):
                np.testing.assert_allclose(cos_taps[h].detach().numpy(), np.cos(omega * u) * env, rtol=1e-6, atol=1e-7)
                np.testing.assert_allclose(sin_taps[h].detach().numpy(), np.sin(omega * u) * env, rtol=1e-6, atol=1e-7)

    def test_morlet_clamp_and_projection_hand_values(self):
        log_omega0 = torch.log(torch.tensor([[0.2, 4.0, 1.0, 0.5]], dtype=torch.float64))
        log_sigma = torch.log(torch.tensor([[10.0, 10.0, 1e-4, 20.0]], dtype=torch.float64))
        omega, sigma = abl.morlet_frequencies(log_omega0, log_sigma)
        # 0.2*10 < 5 -> 5/10; 4 clamps to 0.95 pi, 0.95 pi*10 >= 5 stays; sigma 1e-4 -> 1e-3, then
        # 1*1e-3 < 5 -> 5000; 0.5*20 = 10 >= 5 unchanged.
        np.testing.assert_allclose(omega.numpy(), [[0.5, 0.95 * math.pi, 5000.0, 0.5]], rtol=1e-12)
        np.testing.assert_allclose(sigma.numpy(), [[10.0, 10.0, 1e-3, 20.0]], rtol=1e-12)

    def test_causal_filter_matches_direct_loop(self):
        rng = np.random.default_rng(15)
        m = rng.normal(size=(2, 9))
        taps = rng.normal(size=(3, 12))                                        # longer than T
        expected = np.zeros((2, 3, 9))
        for b in range(2):
            for f in range(3):
                for t in range(9):
                    expected[b, f, t] = sum(taps[f, u] * m[b, t - u] for u in range(12) if t - u >= 0)
        got = abl.causal_filter(torch.tensor(m), torch.tensor(taps))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)

    def test_morlet_bank_matches_direct_sums(self):
        rng = np.random.default_rng(16)
        m = rng.normal(size=(2, 12))
        lengths = np.array([3.0, 7.0, 15.0, 31.0])
        log_omega0 = np.log(np.pi / lengths) + rng.normal(scale=0.3, size=(3, 4))
        log_sigma = np.log(5 * lengths / np.pi) + rng.normal(scale=0.3, size=(3, 4))
        re, im = abl.morlet_bank(torch.tensor(m), torch.tensor(log_omega0), torch.tensor(log_sigma))
        re_np, im_np = np_morlet_bank(m, log_omega0, log_sigma)
        np.testing.assert_allclose(re.numpy(), re_np, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(im.numpy(), im_np, rtol=1e-12, atol=1e-12)

    def test_daubechies_filters(self):
        # db2 in closed form (Daubechies 1988): lo = ((1-r3), (3-r3), (3+r3), (1+r3)) / (4 r2), the order
        # of the contract's list, so h[u] = (-1)^(u+1) lo[3-u] = (-(1+r3), 3+r3, -(3-r3), 1-r3) / (4 r2).
        r3, c = math.sqrt(3), 4 * math.sqrt(2)
        db2 = abl.daubechies_high_pass("ega_db2").numpy()
        np.testing.assert_allclose(db2, [-(1 + r3) / c, (3 + r3) / c, -(3 - r3) / c, (1 - r3) / c], rtol=1e-14)
        np.testing.assert_allclose(db2, [-0.48296291314453416, 0.8365163037378079, -0.22414386804201339,
                                         -0.12940952255126037], rtol=1e-15)
        for kind, K in (("ega_db2", 4), ("ega_db4", 8)):
            h = abl.daubechies_high_pass(kind).numpy()
            lo = np.array(abl.DAUBECHIES_LOW_PASS[kind])
            self.assertEqual(len(h), K)
            # The contract's db4 digits (those of common wavelet tables) are good to ~4e-13: sum h^2 is
            # 1 - 9.3e-13, hence 11 places here.
            self.assertAlmostEqual(float((h ** 2).sum()), 1.0, places=11)     # orthonormal
            self.assertAlmostEqual(float(h.sum()), 0.0, places=12)            # high-pass: no DC
            self.assertAlmostEqual(float(lo.sum()), math.sqrt(2), places=12)
            np.testing.assert_allclose(lo[::-1], self._minimum_phase_daubechies(K // 2), rtol=0, atol=1e-12)
            # dbN has N = K/2 vanishing moments: sum_u u^p h[u] = 0 for p < N.
            u = np.arange(K, dtype=np.float64)
            for p in range(K // 2):
                self.assertAlmostEqual(float((u ** p * h).sum()), 0.0, places=10, msg=(kind, p))
            self.assertGreater(abs(float((u ** (K // 2) * h).sum())), 1e-3)  # and not one more
            # Double-shift orthogonality of lo, and h orthogonal to every even shift of lo.
            for shift in range(2, K, 2):
                self.assertAlmostEqual(float((lo[:-shift] * lo[shift:]).sum()), 0.0, places=11)
            for shift in range(-K + 2, K, 2):
                overlap = sum(h[k] * lo[k + shift] for k in range(K) if 0 <= k + shift < K)
                self.assertAlmostEqual(float(overlap), 0.0, places=11)

    @staticmethod
    def _minimum_phase_daubechies(N):
        """Daubechies' construction of the dbN low-pass filter, in order of increasing delay.

        |m0(w)|^2 = cos^{2N}(w/2) P(sin^2(w/2)), P(y) = sum_{k<N} C(N-1+k, k) y^k. Each root y of P gives
        z + 1/z = 2 - 4y; the minimum-phase factor keeps the root with |z| < 1. The filter is
        (1 + z)^N prod (z - z_i), scaled to sum sqrt(2).
        """
        roots_y = np.roots([math.comb(N - 1 + k, k) for k in range(N)][::-1])
        poly = np.array([1.0 + 0j])
        for _ in range(N):
            poly = np.convolve(poly, [1.0, 1.0])
        for y in roots_y:
            pair = np.roots([1.0, -(2 - 4 * y), 1.0])
            poly = np.convolve(poly, [1.0, -pair[np.argmin(np.abs(pair))]])
        f = np.real(poly)
        return f / f.sum() * math.sqrt(2)

    def test_dilation_structure(self):
        h = abl.daubechies_high_pass("ega_db4")
        for s in range(4):
            hs = abl.dilate(h, s).numpy()
            step = 2 ** s
            self.assertEqual(len(hs), 7 * step + 1)                            # u = 0..(K-1) 2^s
            for u in range(len(hs)):
                self.assertEqual(hs[u], h[u // step].item() if u % step == 0 else 0.0, (s, u))

    def test_daubechies_energy_matches_direct_loop(self):
        # y_{s,t} = sum_k h[k] m_{t - k 2^s} (the dilated filter written without dilate()), E = y^2.
        rng = np.random.default_rng(17)
        m = rng.normal(size=(2, 40))                                           # long enough for scale 3 of db4
        for kind in ("ega_db2", "ega_db4"):
            h = np.array(abl.daubechies_high_pass(kind))
            expected = np.zeros((2, 4, 40))
            for b in range(2):
                for s in range(4):
                    for t in range(40):
                        y = sum(h[k] * m[b, t - k * 2 ** s] for k in range(len(h)) if t - k * 2 ** s >= 0)
                        expected[b, s, t] = y * y
            got = abl.daubechies_energy(torch.tensor(m), kind)
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)


class AblationGates(unittest.TestCase):
    def _attn(self, attention, seed=0):
        return tiny_model(attention, "learned", seed=seed).h[0].attn

    def test_ega_n_with_identical_projections_is_ega(self):
        # All n projections of head h equal to EGA's w_h, b_h, and tau/alpha equal: the mixed gate is
        # sum_s softmax(scale_w)_s sigmoid(...) = sigmoid(...), EGA's gate, whatever scale_w is.
        x = random_ln_output(18)
        ega = self._attn("ega")
        for kind, n in (("ega2", 2), ("ega4", 4)):
            multi = self._attn(kind, seed=1)
            with torch.no_grad():
                multi.c_attn.weight.copy_(ega.c_attn.weight)
                multi.c_proj.weight.copy_(ega.c_proj.weight)
                multi.c_proj.bias.copy_(ega.c_proj.bias)
                multi.energy.weight.copy_(ega.energy.weight.repeat_interleave(n, dim=0))   # row h*n+s = w_h
                multi.energy.bias.copy_(ega.energy.bias.repeat_interleave(n))
                multi.tau.copy_(ega.tau[:, None].expand(2, n))
                multi.alpha.copy_(ega.alpha[:, None].expand(2, n))
                multi.scale_w.copy_(torch.randn(2, n, dtype=torch.float64))
                torch.testing.assert_close(multi(x), ega(x), rtol=1e-12, atol=1e-12)
                multi.alpha[0, 1] += 0.5                                       # one differing scale shows
                self.assertGreater((multi(x) - ega(x)).abs().max().item(), 1e-6)

    def test_ega_n_gate_formula_and_row_layout(self):
        # e_{h,s,j} = W[h*n+s] . x_j + b[h*n+s]; gate by the contract formula in numpy.
        x = random_ln_output(19)
        for kind, n in (("ega2", 2), ("ega4", 4)):
            attn = self._attn(kind)
            W, b = np_params(attn.energy, "weight", "bias")
            tau, alpha, scale_w = np_params(attn, "tau", "alpha", "scale_w")
            xn = x.numpy()
            e = np.zeros((3, 2, n, 12))
            for h in range(2):
                for s in range(n):
                    e[:, h, s, :] = xn @ W[h * n + s] + b[h * n + s]
            expected = np_mixed_gate(np_zscore(e), tau, alpha, scale_w)
            _, gate = abl.scores_and_gate(attn, qk_scores(attn, x), x)
            np.testing.assert_allclose(gate.detach().numpy(), expected, rtol=1e-12, atol=1e-12)

    def test_morlet_and_daubechies_attention_against_numpy(self):
        # Whole attention output: softmax, per-key gate from the bank on m = channel mean of x, renormalise.
        x = random_ln_output(20)
        m = x.mean(-1).numpy()
        for kind in ("ega_morlet", "ega_db2", "ega_db4"):
            attn = self._attn(kind)
            tau, alpha, scale_w = np_params(attn, "tau", "alpha", "scale_w")
            if kind == "ega_morlet":
                re, im = np_morlet_bank(m, *np_params(attn, "log_omega0", "log_sigma"))
                E = re ** 2 + im ** 2                                          # [B,H,4,T]
            else:
                h = np.array(abl.daubechies_high_pass(kind))
                E1 = np.zeros((3, 4, 12))
                for b in range(3):
                    for s in range(4):
                        for t in range(12):
                            E1[b, s, t] = sum(h[k] * m[b, t - k * 2 ** s]
                                              for k in range(len(h)) if t - k * 2 ** s >= 0) ** 2
                E = np.stack([E1, E1], axis=1)                                 # the same for both heads
            g = np_mixed_gate(np_zscore(E), tau, alpha, scale_w)
            with torch.no_grad():
                P = qk_scores(attn, x).numpy()
                Ahat = np_gated_attention(P, g)
                out = attn(x)
                np.testing.assert_allclose(attn.last_weights.numpy(), Ahat, rtol=1e-10, atol=1e-12)
                B, T, d = x.shape
                v = (x @ attn.c_attn.weight[2 * d:].T).view(B, T, 2, 8).transpose(1, 2).numpy()
                y = (Ahat @ v).transpose(0, 2, 1, 3).reshape(B, T, d)
                np.testing.assert_allclose(out.numpy(), y @ attn.c_proj.weight.detach().numpy().T
                                           + attn.c_proj.bias.detach().numpy(), rtol=1e-10, atol=1e-12)


class MultiQuantity(unittest.TestCase):
    TERMS = {"mq_e": {"E"}, "mq_ep": {"E", "phi"}, "mq_ef": {"E", "F"}, "mq_epf": {"E", "phi", "F"}}
    PARAM = {"E": "l_E", "phi": "l_phi", "F": "l_F"}

    def _quantities(self, attn, x):
        """Ez, cos(phi), Fz [B,H,T] from the contract, by numpy loops."""
        re, im = np_morlet_bank(x.mean(-1).numpy(), *np_params(attn, "log_omega0", "log_sigma"))
        E = (re ** 2 + im ** 2).mean(2)
        phi = np.arctan2(im, re).mean(2)
        F = np.zeros_like(E)
        for t in range(1, E.shape[-1]):
            F[..., t] = abs(E[..., t] - E[..., t - 1])
        return {"E": np_zscore(E), "phi": np.cos(phi), "F": np_zscore(F)}

    def test_zero_terms_and_unit_sim_give_standard_scores_and_the_morlet_gate(self):
        x = random_ln_output(21)
        morlet = tiny_model("ega_morlet", "learned").h[0].attn
        for kind in abl.MQ_ATTENTIONS:
            attn = tiny_model(kind, "learned").h[0].attn
            with torch.no_grad():
                for name in ("c_attn.weight", "c_proj.weight", "c_proj.bias", "log_omega0", "log_sigma",
                             "tau", "alpha", "scale_w"):
                    attn.get_parameter(name).copy_(morlet.get_parameter(name))
                attn.l_sim.fill_(1.0)
                for term in self.TERMS[kind]:
                    getattr(attn, self.PARAM[term]).zero_()
                P = qk_scores(attn, x)
                scores, _ = abl.scores_and_gate(attn, P, x)
                torch.testing.assert_close(scores, P, rtol=0, atol=0)
                torch.testing.assert_close(attn(x), morlet(x), rtol=1e-12, atol=1e-12)

    def test_each_term_present_exactly_for_its_variant(self):
        x = random_ln_output(22)
        for kind in abl.MQ_ATTENTIONS:
            attn = tiny_model(kind, "learned").h[0].attn
            names = {n for n, _ in attn.named_parameters()}
            for term, param in self.PARAM.items():
                self.assertEqual(param in names, term in self.TERMS[kind], (kind, param))
            self.assertIn("l_sim", names)
            expected = self._quantities(attn, x)
            P = qk_scores(attn, x)
            for term in self.TERMS[kind]:
                # l_sim = 0 and only this term's weight = 1.5: score_ij = 1.5 * X_j for every query i.
                with torch.no_grad():
                    attn.l_sim.zero_()
                    for other in self.TERMS[kind]:
                        getattr(attn, self.PARAM[other]).fill_(1.5 if other == term else 0.0)
                    scores, _ = abl.scores_and_gate(attn, P, x)
                want = np.broadcast_to(1.5 * expected[term][:, :, None, :], scores.shape)
                np.testing.assert_allclose(scores.numpy(), want, rtol=1e-10, atol=1e-10, err_msg=f"{kind} {term}")
            # All together with l_sim = 0.7, l = (0.2, -0.3, 0.4) for (E, phi, F) where present.
            weights = {"E": 0.2, "phi": -0.3, "F": 0.4}
            with torch.no_grad():
                attn.l_sim.fill_(0.7)
                for term in self.TERMS[kind]:
                    getattr(attn, self.PARAM[term]).fill_(weights[term])
                scores, _ = abl.scores_and_gate(attn, P, x)
            want = 0.7 * P.detach().numpy() + sum(weights[t] * expected[t][:, :, None, :] for t in self.TERMS[kind])
            np.testing.assert_allclose(scores.numpy(), want, rtol=1e-10, atol=1e-10, err_msg=kind)


class Fixtures(unittest.TestCase):
    def test_format_round_trip_and_errors(self):
        tensors = {"a.scalar": torch.tensor(1.5), "b": torch.arange(6, dtype=torch.int64).view(2, 3),
                   "c": torch.randn(2, 0, 3), "é": torch.randn(4)}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.egmt")
            write_egmt(path, tensors)
            back = read_egmt(path)
            self.assertEqual(list(back), list(tensors))
            for name in tensors:
                self.assertEqual(back[name].dtype, tensors[name].dtype)
                self.assertTrue(torch.equal(back[name], tensors[name]), name)
            with open(path, "rb") as f:
                blob = f.read()
            # Hand-check the header: magic, count 4, first name length 8.
            self.assertEqual(blob[:8], b"EGMTENS1")
            self.assertEqual(blob[8:12], (4).to_bytes(4, "little"))
            self.assertEqual(blob[12:16], (8).to_bytes(4, "little"))
            for bad in (b"EGMTENS2" + blob[8:], blob[:-1], blob + b"\0"):
                with open(path, "wb") as f:
                    f.write(bad)
                with self.assertRaises(ValueError):
                    read_egmt(path)

    def test_fixtures_round_trip_and_contents(self):
        with tempfile.TemporaryDirectory() as tmp:
            names = make_fixtures.write_all(tmp, TINY)
            self.assertEqual(len(names), 21 + 10)                  # 3 x 7 main variants, 10 ablation kinds
            ablation_names = [f"{kind}+learned" for kind in abl.ABLATION_ATTENTIONS]
            self.assertEqual(names[21:], ablation_names)
            for attention, position in make_fixtures.all_variants():
                name = f"{attention}+{position}"
                back = read_egmt(os.path.join(tmp, name + ".egmt"))
                expected, config = make_fixtures.build_fixture(attention, position, TINY)
                self.assertEqual(list(back), list(expected))
                for key in expected:
                    self.assertTrue(torch.equal(back[key], expected[key]), f"{name}: {key}")
                self.assertEqual(config["attention"], attention)
                self._check_contents(name, attention, position, back)

    def test_fixture_weights_load_by_name_in_float32(self):
        # What the C++ side does: build the model from the config, load every parameter by name (strict),
        # run in float32. The float64 answers in the file must hold to float32 rounding.
        fields = ("n_layer", "n_head", "d_model", "block_size", "vocab_size", "dropout", "attention",
                  "position", "ega_tau_init", "ega_alpha_init", "conv_max_lag")
        for attention, position in (("ega_causal", "mope"),) + make_fixtures.ABLATION_FIXTURES:
            with self.subTest(attention=attention):
                expected, config = make_fixtures.build_fixture(attention, position, TINY)
                model = ref.GPT(ref.GPTConfig(**{k: config[k] for k in fields})).eval()
                names = dict(model.named_parameters())
                model.load_state_dict({k: v for k, v in expected.items() if k in names}, strict=True)
                logits, loss = model(expected["input.idx"], expected["input.targets"])
                loss.backward()
                torch.testing.assert_close(logits, expected["output.logits"], rtol=1e-5, atol=1e-5)
                for n, p in names.items():
                    torch.testing.assert_close(p.grad, expected["grad." + n], rtol=1e-4, atol=1e-5)

    def _check_contents(self, name, attention, position, t):
        B, T, V = TINY["batch"], TINY["block_size"], TINY["vocab_size"]
        params = [k for k in t if not k.startswith(("config.", "input.", "output.", "grad.", "short.",
                                                    "prefix.", "debug."))]
        self.assertEqual(sorted(f"grad.{p}" for p in params), sorted(k for k in t if k.startswith("grad.")))
        for p in params:
            self.assertEqual(t[p].shape, t[f"grad.{p}"].shape, f"{name}: {p}")
        self.assertEqual(tuple(t["output.logits"].shape), (B, T, V))
        self.assertEqual(tuple(t["prefix.logits"].shape), (B, T, V))
        self.assertEqual(t["input.idx"].dtype, torch.int64)
        self.assertEqual(t["output.loss"].dim(), 0)
        self.assertLess(t["short.idx"].shape[1], T)
        self.assertEqual(("wpe.weight" in t), position in ("learned", "rope"), name)
        self.assertEqual(("mope.log_omega" in t), position == "mope", name)
        self.assertEqual(("h.0.attn.tau" in t), attention not in ("standard", "conv"), name)
        self.assertEqual(("h.0.attn.lag_weight" in t), attention == "conv", name)
        self.assertEqual(("config.conv_max_lag" in t), attention in abl.ABLATION_ATTENTIONS, name)
        if attention == "conv":
            self.assertEqual(t["config.conv_max_lag"].item(), 2)
            self.assertEqual(tuple(t["h.0.attn.lag_weight"].shape), (TINY["n_head"], 5))
        elif "config.conv_max_lag" in t:
            self.assertEqual(t["config.conv_max_lag"].item(), 0)
        # Every parameter is off its constant init, so every one of them can reveal a mismatch. The inits
        # are the contract's (ABLATIONS.md), written out here: 1 for LN weights and l_sim, 0 for biases,
        # tau and scale_w, 2 for alpha, 0.01 for l_E/l_phi/l_F, one-hot lag weights, log(pi/L_s) and
        # log(5 L_s/pi) for the Morlet bank.
        lengths = torch.tensor([3.0, 7.0, 15.0, 31.0])
        lag_init = torch.zeros(TINY["n_head"], 5)
        lag_init[:, 2] = 1.0
        inits = {"ln_1.weight": 1.0, "ln_2.weight": 1.0, "ln_f.weight": 1.0, "bias": 0.0, "tau": 0.0,
                 "alpha": 2.0, "scale_w": 0.0, "l_sim": 1.0, "l_E": 0.01, "l_phi": 0.01, "l_F": 0.01,
                 "lag_weight": lag_init, "attn.log_omega0": torch.log(math.pi / lengths),
                 "attn.log_sigma": torch.log(5 * lengths / math.pi)}
        for p in params:
            for suffix, init in inits.items():
                if p.endswith("." + suffix):
                    self.assertGreater((t[p] - init).abs().min().item(), 1e-6, f"{name}: {p}")
        gap = (t["prefix.logits"] - t["output.logits"]).abs().max().item()
        if attention in ref.CAUSAL_ATTENTIONS:
            self.assertLess(gap, 1e-6, name)
        else:
            self.assertGreater(gap, 1e-3, name)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if result.wasSuccessful() else 1)
