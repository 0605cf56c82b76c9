#!/usr/bin/env python3
"""Times one training step of the egm model in PyTorch, for the side-by-side benchmark (issues 7, 14).

Three ways of writing the same model, each run eagerly or under torch.compile (--compile):

  per_head  "as the paper's code": every attention head is its own module with its own q/k/v Linear
            layers and its own [B,T,T] attention; the heads' outputs are concatenated, then projected
            (a ModuleList of heads, the way the paper's released scripts are structured).
  batched   the independent reference model of tests/reference/egm_reference.py (one [B,H,T,T]
            product for all heads), imported as is. Its causal EGA gate is written for clarity
            (a Python loop over query rows); the benchmark swaps in the vectorised prefix-sum gate
            below, otherwise ega_causal would time a loop that no one would train with.
  sdpa      the batched model with its attention core (mask, softmax, dropout, A v) replaced by
            F.scaled_dot_product_attention(is_causal=True, dropout_p) -- PyTorch 2.x's fused kernel
            (flash attention on CPU too). Only for standard attention without a score bias: base,
            mope, sincos, rope, nope (the EGA gates sit between softmax and the product).

Both run the step egm's trainer runs: sample B random windows, forward, mean cross-entropy, zero_grad,
backward, global-norm clip 1.0, AdamW (0.9, 0.95, weight decay 0.1) -- and wait for the loss (.item()).
Timing: warm-up steps, then the median (and min) of the timed steps. Output: one JSON object.

--compile wraps the model in torch.compile (inductor; --compile-mode default, reduce-overhead (its
kernels replayed as CUDA graphs: the fair peer of egm's train.cuda_graphs) or max-autotune); the
warm-up steps include the compilation, whose wall time is reported as warmup_s.

--device cuda runs the step on the GPU (the windows are sampled on the CPU and copied, as egm does);
--precision bf16 autocasts it to bf16 as egm's train.precision=bf16 does (on CUDA, SDPA then takes
its flash kernel); --fused-adamw asks AdamW for its fused kernel (CUDA). scripts/device_check.sh
runs the sdpa style at the paper preset on the lent GPU, eager and compiled (default and
reduce-overhead), next to egm's step.

Use the PyTorch 2.11 venv of scripts/torch_env.sh:
  ~/.cache/egm/torch-2.11.0/bin/python tests/bench/pytorch_step.py --preset small --variant ega --threads 1
"""

import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import egm_reference as ref  # noqa: E402

# The presets of src/config/run_config.cpp (model and batch sizes, dropout 0.1 everywhere).
PRESETS = {
    "paper": dict(n_layer=6, n_head=8, d_model=256, block_size=256, batch_size=64, lr=3e-4),
    "small": dict(n_layer=4, n_head=4, d_model=128, block_size=128, batch_size=32, lr=1e-3),
    "tiny": dict(n_layer=2, n_head=2, d_model=32, block_size=32, batch_size=8, lr=3e-3),
}
# The named variants this benchmark knows (src/config/variants.cpp): (attention, position).
VARIANTS = {
    "base": ("standard", "learned"),
    "ega": ("ega", "learned"),
    "ega_causal": ("ega_causal", "learned"),
    "mope": ("standard", "mope"),
    "ega_mope": ("ega", "mope"),
    "ega_causal_mope": ("ega_causal", "mope"),
    "sincos": ("standard", "sincos"),
    "rope": ("standard", "rope"),
    "alibi": ("standard", "alibi"),
    "nope": ("standard", "none"),
}


def prefix_zscore_gate(e, tau, alpha):
    """Causal EGA gate from prefix sums: row i z-scores every key with the mean/std of keys j <= i.

    e [..., T] (one per key), tau/alpha broadcastable to e[..., None]. Returns g [..., T(query), T(key)].
    Same definition as egm_reference.ega_gate_causal (z = 0 on row 0, std floored at 1e-8); the future
    entries are left as computed -- the causal mask has already zeroed A there.
    """
    T = e.shape[-1]
    n = torch.arange(1, T + 1, dtype=torch.float64, device=e.device)
    d = (e - e[..., :1]).double()                       # shifted: the cumulative sums do not cancel
    mean = d.cumsum(-1) / n
    var = (d.square().cumsum(-1) / n - mean.square()).clamp_min(1e-16)
    inv_std = var.rsqrt()
    z = (d[..., None, :] - mean[..., :, None]) * inv_std[..., :, None]
    return torch.sigmoid(alpha[..., None, None] * (z.to(e.dtype) - tau[..., None, None]))


def zscore_gate(e, tau, alpha):
    """Published EGA gate (statistics over the whole window). e [..., T] -> g [..., T]."""
    return torch.sigmoid(alpha[..., None] * (ref.zscore(e) - tau[..., None]))


# ----------------------------------------------------------------------------
# "As the paper's code": one module per head
# ----------------------------------------------------------------------------

class Head(nn.Module):
    """One attention head: its own q, k, v projections, mask, softmax, dropout, optional energy gate."""

    def __init__(self, d, dh, block_size, dropout, attention):
        super().__init__()
        self.query = nn.Linear(d, dh, bias=False)
        self.key = nn.Linear(d, dh, bias=False)
        self.value = nn.Linear(d, dh, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(dropout)
        self.attention = attention
        if attention in ("ega", "ega_causal"):
            self.energy = nn.Linear(d, 1)
            self.tau = nn.Parameter(torch.zeros(()))
            self.alpha = nn.Parameter(torch.full((), 2.0))

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.query(x), self.key(x), self.value(x)                      # [B,T,dh]
        w = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5                       # [B,T,T]
        w = w.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        w = self.dropout(F.softmax(w, dim=-1))
        if self.attention == "ega":
            e = self.energy(x).squeeze(-1)                                       # [B,T]
            w = ref.gate_and_renormalise(w, zscore_gate(e, self.tau, self.alpha)[:, None, :])
        elif self.attention == "ega_causal":
            e = self.energy(x).squeeze(-1)
            w = ref.gate_and_renormalise(w, prefix_zscore_gate(e, self.tau, self.alpha))
        return w @ v                                                             # [B,T,dh]


class MultiHead(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        dh = cfg.d_model // cfg.n_head
        self.heads = nn.ModuleList(
            [Head(cfg.d_model, dh, cfg.block_size, cfg.dropout, cfg.attention) for _ in range(cfg.n_head)])
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.dropout(self.proj(torch.cat([h(x) for h in self.heads], dim=-1)))


class PerHeadBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model)
        self.attn = MultiHead(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model), nn.Dropout(cfg.dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class PerHeadGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        if cfg.position not in ("learned", "mope", "none"):
            raise ValueError(f"per_head supports positions learned, mope, none; got {cfg.position}")
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.position == "learned":
            self.wpe = nn.Embedding(cfg.block_size, cfg.d_model)
        elif cfg.position == "mope":
            self.mope = ref.MorletPositionalEncoding(cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([PerHeadBlock(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx)
        if self.cfg.position == "learned":
            x = x + self.wpe(torch.arange(T, device=idx.device))
        elif self.cfg.position == "mope":
            x = x + self.mope(T)
        x = self.drop(x)
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()                              # tied head
        return logits, F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


# ----------------------------------------------------------------------------
# SDPA: the reference model with PyTorch's fused attention core
# ----------------------------------------------------------------------------

SDPA_VARIANTS = ("base", "mope", "sincos", "rope", "nope")


def sdpa_attention_forward(self, x):
    """ref.CausalSelfAttention.forward for standard attention, its core done by one SDPA call."""
    B, T, d = x.shape
    H, dh = self.n_head, self.head_dim
    q, k, v = self.c_attn(x).split(d, dim=-1)
    q = q.view(B, T, H, dh).transpose(1, 2)
    k = k.view(B, T, H, dh).transpose(1, 2)
    v = v.view(B, T, H, dh).transpose(1, 2)
    if self.position in ref.ROPE_POSITIONS:
        q, k = ref.apply_rope(q), ref.apply_rope(k)
    p = self.attn_dropout.p if self.training else 0.0
    y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)   # [B,H,T,dh]
    return self.c_proj(y.transpose(1, 2).reshape(B, T, d))


# ----------------------------------------------------------------------------

def load_corpus(path):
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    else:  # timing does not depend on the text (as egm bench does without a corpus)
        g = torch.Generator().manual_seed(1)
        text = "".join(chr(65 + int(c)) for c in torch.randint(0, 32, (1 << 20,), generator=g))
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)
    return data[: int(0.9 * len(data))], len(chars)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kB


def current_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024.0
    return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    ap.add_argument("--variant", default="base", choices=sorted(VARIANTS))
    ap.add_argument("--style", default="batched", choices=["batched", "per_head", "sdpa"])
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (inductor)")
    ap.add_argument("--compile-mode", default="default", choices=["default", "reduce-overhead", "max-autotune"])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                    help="bf16: autocast the step to bf16 (egm's train.precision=bf16)")
    ap.add_argument("--fused-adamw", action="store_true", help="AdamW(fused=True): one kernel for the update (CUDA)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timed-steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default=os.environ.get("EGM_DATA", ""))
    args = ap.parse_args()
    if args.style == "sdpa" and args.variant not in SDPA_VARIANTS:
        ap.error(f"--style sdpa is for standard attention without a score bias ({', '.join(SDPA_VARIANTS)}), "
                 f"not {args.variant}")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    p = PRESETS[args.preset]
    train, vocab = load_corpus(args.data)
    attention, position = VARIANTS[args.variant]
    cfg = ref.GPTConfig(n_layer=p["n_layer"], n_head=p["n_head"], d_model=p["d_model"],
                        block_size=p["block_size"], vocab_size=vocab, dropout=0.1,
                        attention=attention, position=position)
    if args.style in ("batched", "sdpa"):
        ref.ega_gate_causal = prefix_zscore_gate  # the vectorised gate (same definition; see the docstring)
        if args.style == "sdpa":
            ref.CausalSelfAttention.forward = sdpa_attention_forward
        model = ref.GPT(cfg)
    else:
        model = PerHeadGPT(cfg)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: torch sees no GPU")
    device = torch.device(args.device)
    model.to(device)
    model.train()
    run = torch.compile(model, mode=args.compile_mode) if args.compile else model
    step_forward = lambda x, y: run(x, y)[1]  # noqa: E731
    opt = torch.optim.AdamW(model.parameters(), lr=p["lr"], betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                            **({"fused": True} if args.fused_adamw else {}))
    B, T = p["batch_size"], p["block_size"]
    gen = torch.Generator().manual_seed(args.seed)
    autocast = torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def step():
        starts = torch.randint(0, len(train) - T - 1, (B,), generator=gen)
        windows = torch.stack([train[s: s + T + 1] for s in starts.tolist()]).to(device, non_blocking=True)
        x, y = windows[:, :-1], windows[:, 1:]
        with autocast:
            loss = step_forward(x, y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    t_warm = time.perf_counter()
    for _ in range(max(args.warmup, 1 if args.compile else 0)):
        step()
    warmup_s = time.perf_counter() - t_warm
    rss_after_warmup = current_rss_mb()
    ms = []
    for _ in range(args.timed_steps):
        t0 = time.perf_counter()
        step()
        ms.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(ms)
    print(json.dumps({
        "impl": "torch_" + args.style + ("_compile" if args.compile else ""), "variant": args.variant, "preset": args.preset,
        "device": args.device, "precision": args.precision, "fused_adamw": args.fused_adamw,
        "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if args.device == "cuda" else None,
        "threads": torch.get_num_threads(), "steps": args.timed_steps,
        "ms_per_step": med, "ms_per_step_min": min(ms), "tokens_per_s": B * T / (med / 1e3),
        "parameters": sum(q.numel() for q in model.parameters()),
        "peak_rss_mb": peak_rss_mb(), "rss_growth_mb": current_rss_mb() - rss_after_warmup,
        "torch_version": torch.__version__, "compile_mode": args.compile_mode if args.compile else None,
        "warmup_s": warmup_s,
    }))


if __name__ == "__main__":
    main()
