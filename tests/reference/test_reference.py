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
import egm_reference as ref  # noqa: E402
from egmt_format import read_egmt, write_egmt  # noqa: E402
import make_fixtures  # noqa: E402

torch.set_num_threads(1)
TINY = make_fixtures.CONFIGS["tiny"]


def tiny_model(attention, position, seed=0, dtype=torch.float64):
    cfg = ref.GPTConfig(n_layer=2, n_head=2, d_model=16, block_size=12, vocab_size=11, dropout=0.0,
                        attention=attention, position=position)
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
        # EGA gate breaks this (its z-score uses future keys); every other variant must satisfy it.
        idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(6))
        for attention in ref.ATTENTIONS:
            for position in ref.POSITIONS:
                with self.subTest(attention=attention, position=position):
                    model = tiny_model(attention, position)
                    with torch.no_grad():
                        full = model(idx)[0]
                        diff = (model.prefix_logits(idx) - full).abs()
                    if attention == "ega":
                        self.assertGreater(diff[:, :-1].max().item(), 1e-3)
                        self.assertLess(diff[:, -1].max().item(), 1e-10)   # the last prefix is the window
                    else:
                        self.assertLess(diff.max().item(), 1e-10)

    def test_short_window_matches_long_window_prefix(self):
        # Position encodings are window-relative: a length-7 input equals the first 7 rows of a longer one
        # for every causal variant.
        idx = torch.randint(0, 11, (2, 12), generator=torch.Generator().manual_seed(7))
        for attention in ("standard", "ega_causal"):
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
            self.assertEqual(len(names), 21)
            for attention in ref.ATTENTIONS:
                for position in ref.POSITIONS:
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
        expected, config = make_fixtures.build_fixture("ega_causal", "mope", TINY)
        fields = ("n_layer", "n_head", "d_model", "block_size", "vocab_size", "dropout", "attention",
                  "position", "ega_tau_init", "ega_alpha_init")
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
        self.assertEqual(("h.0.attn.tau" in t), attention != "standard", name)
        # Every parameter is off its constant init, so every one of them can reveal a mismatch.
        for p in params:
            if p.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                self.assertGreater((t[p] - 1).abs().min().item(), 0, f"{name}: {p}")
            elif p.endswith(("bias", "tau")):
                self.assertGreater(t[p].abs().min().item(), 0, f"{name}: {p}")
            elif p.endswith("alpha"):
                self.assertGreater((t[p] - 2).abs().min().item(), 0, f"{name}: {p}")
        gap = (t["prefix.logits"] - t["output.logits"]).abs().max().item()
        if attention == "ega":
            self.assertGreater(gap, 1e-3, name)
        else:
            self.assertLess(gap, 1e-6, name)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if result.wasSuccessful() else 1)
