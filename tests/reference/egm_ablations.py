"""The paper's ablation attention kinds, for the independent PyTorch reference (src/model/ABLATIONS.md).

Written from the contract alone. Like egm_reference.py it prefers the literal formula over the fast
one: filters are sums over their taps, the lag sum is a loop over lags. It reads top-down:

    z-score over T, the mixed per-scale gate
    conv:       lagged cross-correlation scores
    filter banks: causal filtering, the Morlet bank (learned), the Daubechies bank (fixed)
    multi-quantity key terms (E, phi, F)
    parameters of each kind, and the one entry point the attention module calls

This module is a leaf: it imports only torch. egm_reference.CausalSelfAttention registers the
parameters through add_parameters() and asks scores_and_gate() for the changed scores and the key gate.

Notation as in the contract: B batch, T length, d width, H heads, x = the block's ln_1 output [B,T,d],
m_t = mean over the d channels of x_t, S = 4 filter scales.
"""

import math

import torch
import torch.nn as nn

CONV_ATTENTIONS = ("conv",)
EGA_N_ATTENTIONS = ("ega2", "ega4")
MORLET_GATE_ATTENTIONS = ("ega_morlet",)
DAUBECHIES_ATTENTIONS = ("ega_db2", "ega_db4")
MQ_ATTENTIONS = ("mq_e", "mq_ep", "mq_ef", "mq_epf")
ABLATION_ATTENTIONS = (CONV_ATTENTIONS + EGA_N_ATTENTIONS + MORLET_GATE_ATTENTIONS + DAUBECHIES_ATTENTIONS
                       + MQ_ATTENTIONS)
# Kinds whose key gate uses z-scores over the whole window: they see the future (by design, as published).
GATED_ATTENTIONS = EGA_N_ATTENTIONS + MORLET_GATE_ATTENTIONS + DAUBECHIES_ATTENTIONS + MQ_ATTENTIONS

PROJECTIONS = {"ega2": 2, "ega4": 4}
# Which multi-quantity score terms exist: E (energy), phi (phase), F (flux).
MQ_TERMS = {"mq_e": ("E",), "mq_ep": ("E", "phi"), "mq_ef": ("E", "F"), "mq_epf": ("E", "phi", "F")}

ZSCORE_VAR_FLOOR = 1e-16          # z = (e - mean) / sqrt(max(var, 1e-16)): std floor 1e-8, finite gradient
MORLET_LENGTHS = (3, 7, 15, 31)   # causal filter length L_s of scale s
MORLET_OMEGA_MAX = 0.95 * math.pi
MORLET_SIGMA_MIN = 1e-3
MORLET_ADMISSIBILITY = 5.0        # omega * sigma >= 5, MoPE's projection
N_SCALES = 4

# Standard orthonormal Daubechies low-pass decomposition filters (the contract's digits).
DAUBECHIES_LOW_PASS = {
    "ega_db2": (-0.12940952255126037, 0.22414386804201339, 0.8365163037378079, 0.48296291314453416),
    "ega_db4": (-0.010597401784997278, 0.032883011666982945, 0.030841381835986965, -0.18703481171888114,
                -0.02798376941698385, 0.6308807679295904, 0.7148465705525415, 0.23037781330885523),
}

MQ_L_SIM_INIT = 1.0
MQ_L_TERM_INIT = 0.01


# ----------------------------------------------------------------------------
# z-score and the mixed gate
# ----------------------------------------------------------------------------

def zscore_T(e):
    """z-score over the last (T) axis, population variance floored at 1e-16; z = 0 when T == 1."""
    if e.shape[-1] == 1:
        return torch.zeros_like(e)
    mean = e.mean(dim=-1, keepdim=True)
    var = ((e - mean) ** 2).mean(dim=-1, keepdim=True)
    return (e - mean) / torch.sqrt(torch.clamp(var, min=ZSCORE_VAR_FLOOR))


def mixed_gate(z, tau, alpha, scale_w):
    """g_{h,j} = sum_s softmax_s(scale_w[h])_s * sigmoid(alpha[h,s] (z_{h,s,j} - tau[h,s])).

    z [B,H,S,T]; tau, alpha, scale_w [H,S]. Returns the key gate [B,H,T].
    """
    mix = torch.softmax(scale_w, dim=-1)                                       # [H,S], rows sum to 1
    per_scale = torch.sigmoid(alpha[:, :, None] * (z - tau[:, :, None]))      # [B,H,S,T]
    return (mix[:, :, None] * per_scale).sum(dim=2)                            # [B,H,T]


# ----------------------------------------------------------------------------
# conv: lagged cross-correlation scores
# ----------------------------------------------------------------------------

def lagged_scores(P, lag_weight):
    """s_ij = sum_{l=-L..L} w_{h,l} P_{i,j+l}, terms with j+l outside [0,T) contribute 0.

    P [B,H,T,T] must already be 0 above the diagonal (a key after the query is never read);
    lag_weight [H,2L+1], column l+L holds w_{h,l}. Returns the scores before the mask.
    """
    T = P.shape[-1]
    L = (lag_weight.shape[-1] - 1) // 2
    s = torch.zeros_like(P)
    for l in range(-L, L + 1):
        w = lag_weight[:, l + L][:, None, None]                                # [H,1,1]
        # Columns j with 0 <= j + l < T, i.e. j in [max(0, -l), min(T, T - l)).
        lo, hi = max(0, -l), min(T, T - l)
        if lo >= hi:
            continue                                                           # lag longer than the window
        shifted = torch.zeros_like(P)
        shifted[..., lo:hi] = P[..., lo + l:hi + l]                            # shifted[..., j] = P[..., j+l]
        s = s + w * shifted
    return s


# ----------------------------------------------------------------------------
# Filter banks on the channel mean m [B,T]
# ----------------------------------------------------------------------------

def causal_filter(m, taps):
    """y_t = sum_u taps[..., u] * m_{t-u}, with m_t = 0 for t < 0.

    m [B,T]; taps [..., K] (any leading shape F). Returns y [B, F..., T].
    """
    B, T = m.shape
    lead = taps.shape[:-1]
    y = torch.zeros((B,) + tuple(lead) + (T,), dtype=m.dtype, device=m.device)
    view = (1,) + tuple(lead) + (1,)
    for u in range(min(taps.shape[-1], T)):                                    # taps with u >= T read only padding
        delayed = torch.zeros_like(m)
        delayed[:, u:] = m[:, :T - u]                                          # delayed[:, t] = m[:, t-u]
        y = y + taps[..., u].reshape(view) * delayed.reshape((B,) + (1,) * len(lead) + (T,))
    return y


def morlet_init(n_head):
    """(log_omega0, log_sigma) [H,4] at init: omega0 = pi/L_s, sigma = 5 L_s / pi (omega0 * sigma = 5)."""
    lengths = torch.tensor(MORLET_LENGTHS, dtype=torch.float64)
    log_omega0 = torch.log(math.pi / lengths).expand(n_head, N_SCALES).clone()
    log_sigma = torch.log(MORLET_ADMISSIBILITY * lengths / math.pi).expand(n_head, N_SCALES).clone()
    return log_omega0.float(), log_sigma.float()


def morlet_frequencies(log_omega0, log_sigma):
    """(omega, sigma) [H,4] after the clamps and MoPE's projection (omega = 5/sigma where omega*sigma < 5)."""
    omega = torch.clamp(torch.exp(log_omega0), max=MORLET_OMEGA_MAX)
    sigma = torch.clamp(torch.exp(log_sigma), min=MORLET_SIGMA_MIN)
    omega = torch.where(omega * sigma < MORLET_ADMISSIBILITY, MORLET_ADMISSIBILITY / sigma, omega)
    return omega, sigma


def morlet_filters(log_omega0, log_sigma):
    """Per scale s a pair of taps [H, L_s]: cos(omega u) exp(-u^2/(2 sigma^2)) and the sin counterpart."""
    omega, sigma = morlet_frequencies(log_omega0, log_sigma)                   # [H,4]
    filters = []
    for s, length in enumerate(MORLET_LENGTHS):
        u = torch.arange(length, dtype=omega.dtype, device=omega.device)      # [L_s]
        w, sg = omega[:, s:s + 1], sigma[:, s:s + 1]                           # [H,1]
        envelope = torch.exp(-u ** 2 / (2 * sg ** 2))                          # [H,L_s]
        filters.append((torch.cos(w * u) * envelope, torch.sin(w * u) * envelope))
    return filters


def morlet_bank(m, log_omega0, log_sigma):
    """The 4-scale causal Morlet bank of every head. m [B,T] -> (re, im) [B,H,4,T]."""
    re, im = [], []
    for cos_taps, sin_taps in morlet_filters(log_omega0, log_sigma):
        re.append(causal_filter(m, cos_taps))                                  # [B,H,T]
        im.append(causal_filter(m, sin_taps))
    return torch.stack(re, dim=2), torch.stack(im, dim=2)


def daubechies_high_pass(kind):
    """Decomposition high-pass filter h[u] = (-1)^(u+1) lo[K-1-u] (float64 tensor [K])."""
    lo = DAUBECHIES_LOW_PASS[kind]
    K = len(lo)
    return torch.tensor([(-1.0) ** (u + 1) * lo[K - 1 - u] for u in range(K)], dtype=torch.float64)


def dilate(h, s):
    """A trous dilation: h_s(u) = h[u / 2^s] where 2^s divides u, else 0; u = 0..(K-1) 2^s."""
    step = 2 ** s
    out = torch.zeros((h.shape[0] - 1) * step + 1, dtype=h.dtype)
    for k in range(h.shape[0]):
        out[k * step] = h[k]
    return out


def daubechies_energy(m, kind):
    """E_{s,t} = y_{s,t}^2 with y_s = h_s * m (causal), s = 0..3. m [B,T] -> [B,4,T], the same for every head."""
    h = daubechies_high_pass(kind)
    scales = [causal_filter(m, dilate(h, s).to(m)) for s in range(N_SCALES)]  # each [B,T]
    return torch.stack(scales, dim=1) ** 2


# ----------------------------------------------------------------------------
# Multi-quantity key terms
# ----------------------------------------------------------------------------

def mq_quantities(re, im):
    """From the bank (re, im) [B,H,4,T]: Ez, cos(phi), Fz, each [B,H,T].

    E_t = mean_s (re^2 + im^2), Ez = zscore_T(E); phi_t = mean_s atan2(im, re);
    F_t = |E_t - E_{t-1}| with F_0 = 0, Fz = zscore_T(F).
    """
    E = (re ** 2 + im ** 2).mean(dim=2)                                        # [B,H,T]
    phi = torch.atan2(im, re).mean(dim=2)
    F = torch.zeros_like(E)
    F[..., 1:] = (E[..., 1:] - E[..., :-1]).abs()
    return zscore_T(E), torch.cos(phi), zscore_T(F)


# ----------------------------------------------------------------------------
# Parameters and the entry point
# ----------------------------------------------------------------------------

def add_parameters(attn, cfg):
    """Registers the kind's parameters on the attention module under the contract's names."""
    kind, H, d = cfg.attention, cfg.n_head, cfg.d_model

    def constant(shape, value):
        return nn.Parameter(torch.full(shape, float(value)))

    if kind == "conv":
        L = cfg.conv_max_lag
        lag = torch.zeros(H, 2 * L + 1)
        lag[:, L] = 1.0                                                        # w_{h,0} = 1: starts as standard
        attn.lag_weight = nn.Parameter(lag)
        return
    n = PROJECTIONS.get(kind, N_SCALES)                                        # gate components per head
    if kind in EGA_N_ATTENTIONS:
        attn.energy = nn.Linear(d, H * n, bias=True)                           # row h*n + s = projection s of head h
    if kind in MORLET_GATE_ATTENTIONS + MQ_ATTENTIONS:
        log_omega0, log_sigma = morlet_init(H)
        attn.log_omega0 = nn.Parameter(log_omega0)
        attn.log_sigma = nn.Parameter(log_sigma)
    attn.tau = constant((H, n), cfg.ega_tau_init)
    attn.alpha = constant((H, n), cfg.ega_alpha_init)
    attn.scale_w = constant((H, n), 0.0)                                       # uniform mix
    if kind in MQ_ATTENTIONS:
        attn.l_sim = constant((H,), MQ_L_SIM_INIT)
        terms = MQ_TERMS[kind]
        attn.l_E = constant((H,), MQ_L_TERM_INIT)
        if "phi" in terms:
            attn.l_phi = constant((H,), MQ_L_TERM_INIT)
        if "F" in terms:
            attn.l_F = constant((H,), MQ_L_TERM_INIT)


def scores_and_gate(attn, P, x):
    """The kind's change to standard attention.

    P [B,H,T,T] = q.k/sqrt(dh) (after RoPE when used), x = ln_1 output [B,T,d].
    Returns (scores before ALiBi and the causal mask [B,H,T,T], key gate [B,H,T] or None).
    """
    kind = attn.attention
    B, T, _ = x.shape
    H = attn.n_head
    if kind == "conv":
        future = torch.ones(T, T, dtype=torch.bool, device=P.device).triu(diagonal=1)
        return lagged_scores(P.masked_fill(future, 0.0), attn.lag_weight), None

    m = x.mean(dim=-1)                                                         # [B,T] channel mean
    if kind in EGA_N_ATTENTIONS:
        n = PROJECTIONS[kind]
        e = attn.energy(x).view(B, T, H, n).permute(0, 2, 3, 1)               # e_{h,s,j} [B,H,n,T]
        z = zscore_T(e)
    elif kind in DAUBECHIES_ATTENTIONS:
        z = zscore_T(daubechies_energy(m, kind))[:, None].expand(B, H, N_SCALES, T)
    else:                                                                      # ega_morlet, mq_*
        re, im = morlet_bank(m, attn.log_omega0, attn.log_sigma)
        attn.last_bank = (re.detach(), im.detach())                            # for the fixture margin checks
        z = zscore_T(re ** 2 + im ** 2)                                        # per-scale z of E_{h,s}
    gate = mixed_gate(z, attn.tau, attn.alpha, attn.scale_w)

    scores = P
    if kind in MQ_ATTENTIONS:
        Ez, cos_phi, Fz = mq_quantities(re, im)
        key_terms = attn.l_E[:, None] * Ez                                     # [B,H,T], one value per key j
        if "phi" in MQ_TERMS[kind]:
            key_terms = key_terms + attn.l_phi[:, None] * cos_phi
        if "F" in MQ_TERMS[kind]:
            key_terms = key_terms + attn.l_F[:, None] * Fz
        scores = attn.l_sim[:, None, None] * P + key_terms[:, :, None, :]
    return scores, gate
