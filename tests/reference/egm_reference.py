"""Independent PyTorch reference of the egm character GPT (SPEC.md sections 1-3).

This file is written from the spec alone, to cross-check the C++/LibTorch model.
It favours the obvious formulation over the fast one. It reads top-down:

    position encodings  (sincos, MoPE, RoPE, ALiBi)
    EGA gates           (published full-window gate, causal prefix gate)
    attention, MLP, block, config, GPT

The paper's ablation kinds (conv, ega2/ega4, ega_morlet, ega_db2/ega_db4, mq_*; ABLATIONS.md) live in
egm_ablations.py; the attention module below registers their parameters and calls into it.

Shapes: B batch, T sequence length (<= block_size), d model width, H heads,
dh = d / H head width, V vocabulary.

Parameter names match the C++ model, so weights are exchanged by name:
    wte.weight [V,d]                 token embedding, also the (tied) LM head
    wpe.weight [T,d]                 learned table (position "learned" and "rope")
    mope.log_omega, mope.log_sigma   [d/2] each (position "mope")
    h.{i}.ln_1.weight/.bias [d]
    h.{i}.attn.c_attn.weight [3d,d]  rows [0,d) = Q, [d,2d) = K, [2d,3d) = V; no bias
    h.{i}.attn.c_proj.weight [d,d], .bias [d]
    h.{i}.attn.energy.weight [H,d], .bias [H]; h.{i}.attn.tau [H]; h.{i}.attn.alpha [H]   (EGA only)
    ablation kinds: lag_weight, energy, tau/alpha/scale_w [H,n], log_omega0/log_sigma, l_*  (egm_ablations)
    h.{i}.ln_2.weight/.bias [d]
    h.{i}.mlp.c_fc.weight [4d,d], .bias [4d]; h.{i}.mlp.c_proj.weight [d,4d], .bias [d]
    ln_f.weight/.bias [d]
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

import egm_ablations as abl

ATTENTIONS = ("standard", "ega", "ega_causal")                  # the paper's main kinds
ALL_ATTENTIONS = ATTENTIONS + abl.ABLATION_ATTENTIONS          # plus the ablations (ABLATIONS.md)
CAUSAL_ATTENTIONS = ("standard", "ega_causal", "conv")         # the rest z-score over the whole window
POSITIONS = ("learned", "sincos", "mope", "rope", "rope_only", "alibi", "none")

# Positions that add a table to the token embeddings, and those that use the learned one.
ADDITIVE_TABLE_POSITIONS = ("learned", "sincos", "mope", "rope")
LEARNED_TABLE_POSITIONS = ("learned", "rope")
ROPE_POSITIONS = ("rope", "rope_only")

LAYER_NORM_EPS = 1e-5
EGA_STD_FLOOR = 1e-8          # z = (e - mean) / max(std, 1e-8)
EGA_RENORM_FLOOR = 1e-8       # Ahat = A g / max(sum A g, 1e-8)
MOPE_OMEGA_MAX = 0.95 * math.pi
MOPE_SIGMA_MIN = 1e-3
MOPE_ADMISSIBILITY = 5.0      # omega * sigma >= 5
MOPE_ENVELOPE_EPS = 1e-8
ROPE_BASE = 10000.0
SINCOS_BASE = 10000.0


# ----------------------------------------------------------------------------
# Position encodings
# ----------------------------------------------------------------------------

def sincos_table(T, d):
    """Fixed sinusoidal table [T,d]: PE[p,2i] = sin(p w_i), PE[p,2i+1] = cos(p w_i), w_i = 10000^(-2i/d)."""
    p = torch.arange(T, dtype=torch.float64)[:, None]                          # [T,1]
    w = SINCOS_BASE ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)       # [d/2]
    table = torch.empty(T, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(p * w)
    table[:, 1::2] = torch.cos(p * w)
    return table                                                               # float64; caller casts


class MorletPositionalEncoding(nn.Module):
    """MoPE (SPEC section 2): d/2 learned (omega, sigma) pairs, Gaussian-windowed cos/sin."""

    def __init__(self, d_model):
        super().__init__()
        n = d_model // 2
        f = torch.exp(torch.linspace(math.log(1.0), math.log(0.99 * math.pi), n, dtype=torch.float64))
        self.log_omega = nn.Parameter(torch.log(f).float())
        self.log_sigma = nn.Parameter(torch.log(MOPE_ADMISSIBILITY / f).float())   # omega*sigma = 5 at init

    def frequencies(self):
        """Returns (omega, sigma) [d/2] each after the clamps and the admissibility projection."""
        omega = torch.clamp(torch.exp(self.log_omega), max=MOPE_OMEGA_MAX)
        sigma = torch.clamp(torch.exp(self.log_sigma), min=MOPE_SIGMA_MIN)
        # Hard projection: where omega*sigma < 5 replace omega by 5/sigma (log_omega then gets no gradient).
        omega = torch.where(omega * sigma < MOPE_ADMISSIBILITY, MOPE_ADMISSIBILITY / sigma, omega)
        return omega, sigma

    def forward(self, T):
        omega, sigma = self.frequencies()                                      # [n], [n]
        b = torch.arange(T, dtype=omega.dtype, device=omega.device)[:, None]   # [T,1], window-relative
        envelope = torch.exp(-b ** 2 / (2 * sigma ** 2 + MOPE_ENVELOPE_EPS))   # [T,n]
        cos_part = torch.cos(omega * b) * envelope                             # [T,n]
        sin_part = torch.sin(omega * b) * envelope                             # [T,n]
        return torch.stack([cos_part, sin_part], dim=-1).reshape(T, -1)        # [T,d], (2i, 2i+1) = (cos, sin)


def apply_rope(x):
    """Rotates interleaved pairs (2i, 2i+1) of x [B,H,T,dh] by angle p * 10000^(-2i/dh), p = 0..T-1."""
    T, dh = x.shape[-2], x.shape[-1]
    p = torch.arange(T, dtype=torch.float64)[:, None]                          # [T,1]
    theta = ROPE_BASE ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)   # [dh/2]
    angle = (p * theta).to(x)                                                  # [T,dh/2]
    cos, sin = torch.cos(angle), torch.sin(angle)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]                                 # [B,H,T,dh/2]
    rotated_even = x_even * cos - x_odd * sin
    rotated_odd = x_even * sin + x_odd * cos
    return torch.stack([rotated_even, rotated_odd], dim=-1).reshape(x.shape)   # re-interleave


def alibi_slopes(n_head):
    """ALiBi slopes m_h = 2^(-8(h+1)/H), h = 0..H-1."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / n_head) for h in range(n_head)], dtype=torch.float64)


def alibi_bias(n_head, T, like):
    """Additive score bias [H,T,T]: -m_h * (i - j). Only j <= i matters; the causal mask hides the rest."""
    i = torch.arange(T, dtype=torch.float64)[:, None]
    j = torch.arange(T, dtype=torch.float64)[None, :]
    return (-alibi_slopes(n_head)[:, None, None] * (i - j)).to(like)             # dtype/device of `like`


# ----------------------------------------------------------------------------
# Energy gates (SPEC section 1)
# ----------------------------------------------------------------------------

def zscore(e):
    """z-score of e [..., n] over its last axis: population std, floored at 1e-8; z = 0 when n == 1."""
    if e.shape[-1] == 1:
        return torch.zeros_like(e)
    mean = e.mean(dim=-1, keepdim=True)
    var = ((e - mean) ** 2).mean(dim=-1, keepdim=True)                         # population: divide by n
    std = torch.clamp(var.sqrt(), min=EGA_STD_FLOOR)
    return (e - mean) / std


def ega_gate_full(e, tau, alpha):
    """Published EGA gate: statistics over ALL T positions (sees the future). e [B,H,T] -> g [B,H,1,T]."""
    z = zscore(e)                                                              # [B,H,T]
    g = torch.sigmoid(alpha[:, None] * (z - tau[:, None]))                     # [B,H,T], one value per key j
    return g[:, :, None, :]                                                    # broadcast over query rows


def ega_gate_causal(e, tau, alpha):
    """Causal EGA gate: row i uses mean/std of e over keys j <= i only. e [B,H,T] -> g [B,H,T,T]."""
    T = e.shape[-1]
    rows = []
    for i in range(T):
        prefix = e[..., : i + 1]                                               # keys the query i may see
        if i == 0:
            z_row = torch.zeros_like(e)                                        # one key: z = 0 by definition
        else:
            mean = prefix.mean(dim=-1, keepdim=True)
            var = ((prefix - mean) ** 2).mean(dim=-1, keepdim=True)
            std = torch.clamp(var.sqrt(), min=EGA_STD_FLOOR)
            z_row = (e - mean) / std                                           # [B,H,T], entries j > i unused
        rows.append(z_row)
    z = torch.stack(rows, dim=-2)                                              # [B,H,T(query),T(key)]
    future = torch.ones(T, T, dtype=torch.bool, device=e.device).triu(diagonal=1)
    z = z.masked_fill(future, 0.0)                                             # make the unused entries inert
    return torch.sigmoid(alpha[:, None, None] * (z - tau[:, None, None]))      # [B,H,T,T]


def gate_and_renormalise(A, g):
    """Ahat_ij = A_ij g_ij / max(sum_k A_ik g_ik, 1e-8). A [B,H,T,T]; g broadcastable to it."""
    gated = A * g
    return gated / torch.clamp(gated.sum(dim=-1, keepdim=True), min=EGA_RENORM_FLOOR)


# ----------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------

@dataclass
class GPTConfig:
    n_layer: int = 6            # paper: 6 blocks
    n_head: int = 8             # paper: 8 heads of width 32
    d_model: int = 256          # paper width
    block_size: int = 256       # longest window T; learned table has this many rows
    vocab_size: int = 65        # TinyShakespeare character set
    dropout: float = 0.1        # embeddings, attention probabilities, both residual branches
    attention: str = "standard"  # standard | ega | ega_causal | an ablation kind (egm_ablations)
    position: str = "learned"   # learned | sincos | mope | rope | rope_only | alibi | none
    ega_tau_init: float = 0.0   # gate threshold, per head
    ega_alpha_init: float = 2.0  # gate sharpness, per head
    conv_max_lag: int = 0       # L of attention "conv": lags -L..L
    qk_scale_init: bool = False  # variant scale_init: head h's Q/K rows drawn with std * (1 + (h mod 4)/4)

    def __post_init__(self):
        if self.attention not in ALL_ATTENTIONS:
            raise ValueError(f"attention {self.attention!r} not in {ALL_ATTENTIONS}")
        if self.conv_max_lag < 0 or (self.conv_max_lag and self.attention != "conv"):
            raise ValueError(f"conv_max_lag {self.conv_max_lag} needs attention conv and must be >= 0")
        if self.position not in POSITIONS:
            raise ValueError(f"position {self.position!r} not in {POSITIONS}")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model {self.d_model} not divisible by n_head {self.n_head}")
        if self.d_model % 2 or (self.d_model // self.n_head) % 2:
            raise ValueError("d_model and head width must be even (sin/cos and RoPE pairs)")


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention; standard softmax, energy-gated (EGA, causal EGA) or an ablation kind."""

    def __init__(self, cfg):
        super().__init__()
        d, H = cfg.d_model, cfg.n_head
        self.n_head, self.head_dim = H, d // H
        self.attention, self.position = cfg.attention, cfg.position
        self.c_attn = nn.Linear(d, 3 * d, bias=False)
        self.c_proj = nn.Linear(d, d, bias=True)
        if cfg.attention in ("ega", "ega_causal"):
            self.energy = nn.Linear(d, H, bias=True)                           # row h = w_h, bias b_h
            self.tau = nn.Parameter(torch.full((H,), float(cfg.ega_tau_init)))
            self.alpha = nn.Parameter(torch.full((H,), float(cfg.ega_alpha_init)))
        elif cfg.attention in abl.ABLATION_ATTENTIONS:
            abl.add_parameters(self, cfg)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.last_weights = None                                               # Ahat of the last call, for fixtures

    def forward(self, x):                                                      # x = ln_1 output [B,T,d]
        B, T, d = x.shape
        H, dh = self.n_head, self.head_dim
        q, k, v = self.c_attn(x).split(d, dim=-1)                              # [B,T,d] each
        q = q.view(B, T, H, dh).transpose(1, 2)                                # [B,H,T,dh]
        k = k.view(B, T, H, dh).transpose(1, 2)
        v = v.view(B, T, H, dh).transpose(1, 2)
        if self.position in ROPE_POSITIONS:
            q, k = apply_rope(q), apply_rope(k)

        scores = q @ k.transpose(-2, -1) / math.sqrt(dh)                       # [B,H,T,T]
        key_gate = None
        if self.attention in abl.ABLATION_ATTENTIONS:                          # conv lags, mq terms, gates
            scores, key_gate = abl.scores_and_gate(self, scores, x)
        if self.position == "alibi":
            scores = scores + alibi_bias(H, T, scores)
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        A = self.attn_dropout(torch.softmax(scores, dim=-1))                  # dropout BEFORE the gate

        if self.attention == "ega":
            e = self.energy(x).transpose(1, 2)                                 # [B,H,T]
            A = gate_and_renormalise(A, ega_gate_full(e, self.tau, self.alpha))
        elif self.attention == "ega_causal":
            e = self.energy(x).transpose(1, 2)
            A = gate_and_renormalise(A, ega_gate_causal(e, self.tau, self.alpha))
        elif key_gate is not None:
            A = gate_and_renormalise(A, key_gate[:, :, None, :])               # [B,H,T] -> one value per key
        self.last_weights = A.detach()

        y = A @ v                                                              # [B,H,T,dh]
        y = y.transpose(1, 2).reshape(B, T, d)                                 # heads merged, head-major
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.d_model, 4 * cfg.d_model)
        self.c_proj = nn.Linear(4 * cfg.d_model, cfg.d_model)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))                               # exact (erf) GELU


class Block(nn.Module):
    """Pre-LayerNorm transformer block."""

    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model, eps=LAYER_NORM_EPS)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, eps=LAYER_NORM_EPS)
        self.mlp = MLP(cfg)
        self.resid_dropout_attn = nn.Dropout(cfg.dropout)
        self.resid_dropout_mlp = nn.Dropout(cfg.dropout)

    def forward(self, x):
        x = x + self.resid_dropout_attn(self.attn(self.ln_1(x)))
        x = x + self.resid_dropout_mlp(self.mlp(self.ln_2(x)))
        return x


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.position in LEARNED_TABLE_POSITIONS:
            self.wpe = nn.Embedding(cfg.block_size, cfg.d_model)
        if cfg.position == "mope":
            self.mope = MorletPositionalEncoding(cfg.d_model)
        self.emb_dropout = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=LAYER_NORM_EPS)
        self.reset_parameters()

    def reset_parameters(self, std=0.02):
        """Paper init: Linear/Embedding weights N(0, std), biases 0; LayerNorm 1/0; EGA and MoPE at their inits.

        With qk_scale_init (variant scale_init) head h's rows of Q and K end up N(0, std * (1 + (h mod 4)/4)):
        they are drawn exactly as in base and then scaled, so the same seed gives base's values everywhere
        else (V included) and a rescaled copy of base's Q and K.
        """
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        if self.cfg.qk_scale_init:
            d, H = self.cfg.d_model, self.cfg.n_head
            dh = d // H
            with torch.no_grad():
                for block in self.h:
                    W = block.attn.c_attn.weight                               # rows [0,d) = Q, [d,2d) = K
                    for h in range(H):
                        factor = 1.0 + (h % 4) / 4.0
                        W[h * dh:(h + 1) * dh] *= factor                       # Q rows of head h
                        W[d + h * dh:d + (h + 1) * dh] *= factor               # K rows of head h

    def position_table(self, T):
        """The additive table PE[0:T] [T,d], or None when the position scheme adds nothing at the input."""
        pos = self.cfg.position
        if pos in LEARNED_TABLE_POSITIONS:
            return self.wpe.weight[:T]
        if pos == "sincos":
            return sincos_table(T, self.cfg.d_model).to(self.wte.weight)
        if pos == "mope":
            return self.mope(T)
        return None                                                            # rope_only, alibi, none

    def forward(self, idx, targets=None):
        """idx [B,T] int64 -> logits [B,T,V]; loss = mean cross-entropy over B*T when targets are given."""
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.cfg.block_size}")
        x = self.wte(idx)                                                      # [B,T,d]
        table = self.position_table(T)
        if table is not None:
            x = x + table                                                      # broadcast over B
        x = self.emb_dropout(x)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = x @ self.wte.weight.t()                                       # tied head, no bias: [B,T,V]
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss

    @torch.no_grad()
    def prefix_logits(self, idx):
        """Logits at each position i computed from idx[:, :i+1] alone, assembled into [B,T,V].

        For a causal model this equals forward(idx)[0]; a difference means position i saw the future.
        """
        rows = [self(idx[:, : i + 1])[0][:, i] for i in range(idx.shape[1])]
        return torch.stack(rows, dim=1)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())
