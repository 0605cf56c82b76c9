#!/usr/bin/python3
"""Writes one EGMT fixture (+ JSON config) per attention x position variant for the C++ model tests.

The 21 main fixtures are {standard, ega, ega_causal} x every position; the 10 ablation fixtures are
<kind>+learned for every kind of egm_ablations.ABLATION_ATTENTIONS (conv with conv_max_lag 2).

    /usr/bin/python3 tests/reference/make_fixtures.py --out DIR [--config tiny]

Per variant, DIR/<attention>+<position>.egmt holds (see README.md for the byte layout):
    config.*            int64/float32 scalars (0-d) of the model config (+ config.conv_max_lag for ablations)
    <param name>        every parameter, float32, as loaded into the reference
    input.idx           [B,T] int64 tokens;   input.targets [B,T] int64
    output.logits       [B,T,V];              output.loss   [] mean cross-entropy
    grad.<param name>   d output.loss / d param (every parameter)
    short.idx, short.targets [B,T2] with T2 < block_size; short.logits [B,T2,V]; short.loss []
    prefix.logits       [B,T,V]: row i computed from input.idx[:, :i+1] alone
    debug.position_table [T,d]    the additive input table (absent for rope_only, alibi, none)
    debug.h.{i}.attn.weights [B,H,T,T]  final attention weights (after gate + renormalisation)
and DIR/<attention>+<position>.json the same config as JSON (with the attention/position strings).

Numbers: weights are drawn in float32 and written as such; the forward/backward is then run in
float64 on exactly those weights and the results rounded to float32, so the files hold the exact
answer to ~1e-7 relative and any difference is the C++ side's own float32 rounding (or a bug).
"""

import argparse
import json
import math
import os
import sys
from collections import OrderedDict

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egm_ablations as abl  # noqa: E402
from egm_reference import ATTENTIONS, POSITIONS, GPT, GPTConfig, MOPE_ADMISSIBILITY, MOPE_OMEGA_MAX  # noqa: E402
from egmt_format import write_egmt  # noqa: E402

CONFIGS = {
    # Small enough to run 21 variants in about a second, big enough for 2 layers, 2 heads, 4 RoPE pairs per head.
    "tiny": dict(n_layer=2, n_head=2, d_model=16, block_size=12, vocab_size=11, batch=3, short_len=7),
}
SEED = 20260526
# Fixture weights are N(0, 0.3) instead of the paper's 0.02: with d = 16 the paper init gives near-uniform
# attention, which would hide errors in masks, RoPE, ALiBi and the gates inside the tolerance.
FIXTURE_WEIGHT_STD = 0.3
# The conv fixture's lag range -2..2: long enough for both signs and two distances, short against T = 12.
FIXTURE_CONV_MAX_LAG = 2
# Ablation fixtures: every ablation kind with the learned table.
ABLATION_FIXTURES = tuple((kind, "learned") for kind in abl.ABLATION_ATTENTIONS)
# Relative distance every fixture keeps from a non-differentiable switch (clamp, projection, atan2 cut, |.|).
KINK_MARGIN = 1e-4


def conv_max_lag_for(attention):
    return FIXTURE_CONV_MAX_LAG if attention == "conv" else 0


def variant_name(attention, position):
    return f"{attention}+{position}"


def perturb_away_from_init(model, gen):
    """Moves every parameter that starts at a constant (LN, biases, tau, alpha, MoPE) off that constant."""
    def noise(p, scale):
        return scale * torch.randn(p.shape, generator=gen)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.add_(noise(p, 0.1))                    # around 1
            elif name.endswith(".bias"):
                p.add_(noise(p, 0.1))                    # around 0 (LN, c_proj, c_fc, energy)
            elif name.endswith("attn.tau"):
                p.add_(noise(p, 0.3))                    # around ega_tau_init
            elif name.endswith("attn.alpha"):
                p.add_(noise(p, 0.3))                    # around ega_alpha_init
            elif name.startswith("mope."):
                p.add_(noise(p, 0.1))                    # off the omega*sigma = 5 line, both sides
            elif name.endswith("attn.lag_weight"):
                p.add_(noise(p, 0.3))                    # around the one-hot w_{h,0} = 1
            elif name.endswith("attn.scale_w"):
                p.add_(noise(p, 0.5))                    # around 0 (uniform mix)
            elif name.endswith(("attn.log_omega0", "attn.log_sigma")):
                p.add_(noise(p, 0.1))                    # off omega*sigma = 5, both sides
            elif name.endswith("attn.l_sim"):
                p.add_(noise(p, 0.1))                    # around 1
            elif name.endswith(("attn.l_E", "attn.l_phi", "attn.l_F")):
                p.add_(noise(p, 0.5))                    # around 0.01: large enough that each term shows
    if hasattr(model, "mope"):
        check_mope_away_from_kinks(model.mope)
    banks = [block.attn for block in model.h if hasattr(block.attn, "log_omega0")]
    if banks:
        check_morlet_bank_away_from_kinks(banks)


def check_mope_away_from_kinks(mope):
    """The clamps and the projection are not differentiable at their switch points; keep clear of them
    so that float32 (C++) and float64 (here) take the same branch for every pair."""
    omega_raw = torch.exp(mope.log_omega.double())
    sigma = torch.exp(mope.log_sigma.double())
    omega = torch.clamp(omega_raw, max=MOPE_OMEGA_MAX)
    margins = [
        (omega_raw / MOPE_OMEGA_MAX - 1).abs().min().item(),
        ((omega * sigma) / MOPE_ADMISSIBILITY - 1).abs().min().item(),
    ]
    if min(margins) < 1e-4:
        raise RuntimeError(f"MoPE fixture parameters too close to a clamp/projection switch: {margins}")
    projected = (omega * sigma < MOPE_ADMISSIBILITY)
    if projected.all() or not projected.any():
        raise RuntimeError("MoPE fixture should exercise both projected and free pairs; change SEED")


def check_morlet_bank_away_from_kinks(attns):
    """Same as for MoPE, for the [H,4] Morlet bank parameters of every layer."""
    omega_raw = torch.cat([torch.exp(a.log_omega0.double()).flatten() for a in attns])
    sigma = torch.cat([torch.exp(a.log_sigma.double()).flatten() for a in attns])
    omega = torch.clamp(omega_raw, max=abl.MORLET_OMEGA_MAX)
    margins = [
        (omega_raw / abl.MORLET_OMEGA_MAX - 1).abs().min().item(),
        ((omega * sigma) / abl.MORLET_ADMISSIBILITY - 1).abs().min().item(),
        (sigma / abl.MORLET_SIGMA_MIN - 1).abs().min().item(),
    ]
    if min(margins) < KINK_MARGIN:
        raise RuntimeError(f"Morlet bank fixture parameters too close to a clamp/projection switch: {margins}")
    projected = (omega * sigma < abl.MORLET_ADMISSIBILITY)
    if projected.all() or not projected.any():
        raise RuntimeError("Morlet bank fixture should exercise both projected and free pairs; change SEED")


def check_activations_away_from_kinks(model, label):
    """After a forward pass: the mq quantities must not sit on a switch of atan2 or |.|.

    phi = atan2(im, re) jumps by 2 pi where im changes sign with re < 0; F = |E_t - E_{t-1}| has a kink
    at 0. Row t = 0 is exempt from the first: im_0 = 0 exactly there (sin 0 = 0), and all four scales
    share re_0 = m_0, so cos(mean phi) = cos(+-pi) = -1 whichever sign of zero an implementation gets.
    """
    for i, block in enumerate(model.h):
        attn = block.attn
        if attn.attention not in abl.MQ_ATTENTIONS:
            continue
        re, im = attn.last_bank                                                # [B,H,4,T]
        angle = torch.atan2(im, re)[..., 1:]
        cut_margin = (math.pi - angle.abs()).min().item()
        E = (re ** 2 + im ** 2).mean(dim=2)                                    # [B,H,T]
        flux_margin = ((E[..., 1:] - E[..., :-1]).abs() / E.abs().mean()).min().item()
        if min(cut_margin, flux_margin) < KINK_MARGIN:
            raise RuntimeError(f"{label}: layer {i} mq activations too close to a switch: "
                               f"atan2 cut {cut_margin:.2e}, flux {flux_margin:.2e}; change SEED")


def config_tensors(cfg):
    t = OrderedDict()
    for key in ("n_layer", "n_head", "d_model", "block_size", "vocab_size"):
        t[f"config.{key}"] = torch.tensor(getattr(cfg, key), dtype=torch.int64)
    for key in ("dropout", "ega_tau_init", "ega_alpha_init"):
        t[f"config.{key}"] = torch.tensor(getattr(cfg, key), dtype=torch.float32)
    if cfg.attention in abl.ABLATION_ATTENTIONS:                              # the 21 main files stay as they were
        t["config.conv_max_lag"] = torch.tensor(cfg.conv_max_lag, dtype=torch.int64)
    return t


def build_fixture(attention, position, size):
    """Returns (tensors, config dict) for one variant."""
    cfg = GPTConfig(n_layer=size["n_layer"], n_head=size["n_head"], d_model=size["d_model"],
                    block_size=size["block_size"], vocab_size=size["vocab_size"], dropout=0.0,
                    attention=attention, position=position, conv_max_lag=conv_max_lag_for(attention))
    B, T, T2, V = size["batch"], size["block_size"], size["short_len"], size["vocab_size"]

    gen = torch.Generator().manual_seed(SEED)                  # same stream for every variant
    idx = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)
    short_idx = torch.randint(0, V, (B, T2), generator=gen)
    short_targets = torch.randint(0, V, (B, T2), generator=gen)

    torch.manual_seed(SEED)
    model = GPT(cfg)
    model.reset_parameters(std=FIXTURE_WEIGHT_STD)
    perturb_away_from_init(model, gen)
    params32 = OrderedDict((n, p.detach().clone()) for n, p in model.named_parameters())

    model = model.double().eval()                              # eval: dropout off (it is 0 anyway)
    logits, loss = model(idx, targets)
    check_activations_away_from_kinks(model, variant_name(attention, position) + " input")
    loss.backward()
    weights = [block.attn.last_weights for block in model.h]
    grads = OrderedDict((f"grad.{n}", p.grad) for n, p in model.named_parameters())
    with torch.no_grad():
        table = model.position_table(T)
        short_logits, short_loss = model(short_idx, short_targets)
        check_activations_away_from_kinks(model, variant_name(attention, position) + " short")
        prefix = model.prefix_logits(idx)

    tensors = config_tensors(cfg)
    tensors.update(params32)
    tensors["input.idx"] = idx
    tensors["input.targets"] = targets
    tensors["output.logits"] = logits
    tensors["output.loss"] = loss
    tensors.update(grads)
    tensors["short.idx"] = short_idx
    tensors["short.targets"] = short_targets
    tensors["short.logits"] = short_logits
    tensors["short.loss"] = short_loss
    tensors["prefix.logits"] = prefix
    if table is not None:
        tensors["debug.position_table"] = table
    for i, w in enumerate(weights):
        tensors[f"debug.h.{i}.attn.weights"] = w
    for name, t in tensors.items():
        if t is None:
            raise RuntimeError(f"{variant_name(attention, position)}: {name} is missing (no gradient?)")
        if t.is_floating_point():
            if not torch.isfinite(t).all():
                raise RuntimeError(f"{variant_name(attention, position)}: {name} is not finite")
            tensors[name] = t.detach().float()

    config = dict(vars(cfg), batch=B, short_len=T2, seed=SEED, fixture_weight_std=FIXTURE_WEIGHT_STD,
                  loss=float(loss), n_params=sum(p.numel() for p in params32.values()))
    return tensors, config


def all_variants():
    """(attention, position) of every fixture: the 21 main ones, then the 10 ablations."""
    return [(a, p) for a in ATTENTIONS for p in POSITIONS] + list(ABLATION_FIXTURES)


def write_all(out_dir, size):
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for attention, position in all_variants():
        name = variant_name(attention, position)
        tensors, config = build_fixture(attention, position, size)
        path = os.path.join(out_dir, name + ".egmt")
        write_egmt(path + ".tmp", tensors)
        os.replace(path + ".tmp", path)                    # never leave a half-written fixture
        with open(os.path.join(out_dir, name + ".json.tmp"), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(os.path.join(out_dir, name + ".json.tmp"), os.path.join(out_dir, name + ".json"))
        names.append(name)
    return names


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    names = write_all(args.out, CONFIGS[args.config])
    print(f"wrote {len(names)} fixtures to {args.out}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
