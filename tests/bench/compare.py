#!/usr/bin/env python3
"""egm vs PyTorch (eager, SDPA, torch.compile), side by side on one noisy machine (issues 7, 14).

For each (preset, threads, variant) cell it runs, in rounds, separate processes (--impls):
    egm             egm bench --json                                 (the C++ trainer's step)
    egm_panels      the same with EGM_ATTENTION_KERNEL=panels        (the older kernels storing [B,H,T,T])
    torch_per_head  pytorch_step.py --style per_head                 ("as the paper's code": a module per head)
    torch_batched   pytorch_step.py --style batched                  (the reference model, heads batched)
    torch_sdpa      pytorch_step.py --style sdpa                     (batched, attention by SDPA; standard
                                                                      attention only, skipped for the others)
    torch_compile   pytorch_step.py --compile, on the sdpa style where the variant allows it, else batched
The order rotates every round, so slow spells of the shared machine hit every candidate alike. Each
process reports the median ms/step of its timed steps; a cell reports the median over rounds, and the
speedups are the medians of the per-round ratios (paired within a round), not ratios of medians.
"eager" in the table is the faster of torch_batched and torch_sdpa in that round (what a user would pick).
torch.compile's first process per shape compiles for minutes (inductor caches the result on disk, so
later rounds start faster); the compile is in its warm-up steps, never in the timed ones.

The PyTorch side runs under this script's interpreter: use the venv of scripts/torch_env.sh.

Every child gets the same environment: OPENBLAS_NUM_THREADS = threads (torch.set_num_threads does not
reach OpenBLAS's own pool) and the --env settings (e.g. OPENBLAS_CORETYPE=SkylakeX).

Output: a Markdown table on stdout, and every raw measurement as JSON with --out.

    ~/.cache/egm/torch-2.11.0/bin/python tests/bench/compare.py --presets small --threads 1 \
        --variants base,ega --rounds 3 --out /tmp/compare.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
IMPLS = ("egm", "egm_panels", "torch_per_head", "torch_batched", "torch_sdpa", "torch_compile")
SDPA_VARIANTS = ("base", "mope", "sincos", "rope", "nope")  # pytorch_step.SDPA_VARIANTS


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_one(impl, args, preset, threads, variant, env):
    common = ["--preset", preset, "--variant", variant, "--threads", str(threads),
              "--warmup", str(args.warmup), "--timed-steps", str(args.timed_steps)]
    if impl in ("egm", "egm_panels"):
        cmd = [args.egm, "bench", "--json"] + common
        env = dict(env, EGM_ATTENTION_KERNEL="flash" if impl == "egm" else "panels")
    elif impl == "torch_compile":
        style = "sdpa" if variant in SDPA_VARIANTS else "batched"
        cmd = [sys.executable, os.path.join(HERE, "pytorch_step.py"), "--style", style, "--compile",
               "--compile-mode", args.compile_mode] + common
    else:
        cmd = [sys.executable, os.path.join(HERE, "pytorch_step.py"), "--style", impl[len("torch_"):]] + common
    load = load_average()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result["style"] = result.get("impl")
    result.update(impl=impl, load_before=load, command=" ".join(cmd))
    return result


def summarize(rows):
    by = {impl: [r for r in rows if r["impl"] == impl] for impl in IMPLS}
    cell = {impl: statistics.median(r["ms_per_step"] for r in by[impl]) for impl in IMPLS if by[impl]}
    rounds = sorted({r["round"] for r in rows})

    def in_round(impl, k, key="ms_per_step"):
        vals = [r[key] for r in by.get(impl, []) if r["round"] == k]
        return vals[0] if vals else None

    def eager_in_round(k, key="ms_per_step"):  # the faster eager PyTorch of round k
        cands = [(in_round(i, k), in_round(i, k, key)) for i in ("torch_batched", "torch_sdpa")]
        cands = [c for c in cands if c[0] is not None]
        return min(cands)[1] if cands else None

    def ratio(num, den):  # median over rounds of (num / den), paired within a round
        vals = []
        for k in rounds:
            a = eager_in_round(k) if num == "eager" else in_round(num, k)
            b = in_round(den, k)
            if a is not None and b is not None:
                vals.append(a / b)
        return statistics.median(vals) if vals else float("nan")

    egm = by["egm"]
    if not egm:
        raise SystemExit("compare.py: --impls must include egm")
    eager_rss = [eager_in_round(k, "peak_rss_mb") for k in rounds]
    eager_rss = [v for v in eager_rss if v is not None]
    return {
        "ms": cell,
        "speedup_vs_per_head": ratio("torch_per_head", "egm"),
        "speedup_vs_batched": ratio("torch_batched", "egm"),
        "speedup_vs_sdpa": ratio("torch_sdpa", "egm"),
        "speedup_vs_eager": ratio("eager", "egm"),
        "speedup_vs_compile": ratio("torch_compile", "egm"),
        "speedup_vs_panels": ratio("egm_panels", "egm"),
        "panels_rss_mb": max((r["peak_rss_mb"] for r in by["egm_panels"]), default=float("nan")),
        "eager_rss_mb": max(eager_rss) if eager_rss else float("nan"),
        "compile_warmup_s": max((r["warmup_s"] for r in by["torch_compile"]), default=float("nan")),
        "mfu": statistics.median(r["mfu"] for r in egm) if egm else float("nan"),
        "matmul_gflops": statistics.median(r["matmul_gflops"] for r in egm) if egm else float("nan"),
        "egm_rss_mb": max(r["peak_rss_mb"] for r in egm) if egm else float("nan"),
        "egm_rss_growth_mb": max(r["rss_growth_mb"] for r in egm) if egm else float("nan"),
        "torch_rss_mb": {impl: max(r["peak_rss_mb"] for r in by[impl]) for impl in IMPLS[2:] if by[impl]},
        "load": statistics.median(r["load_before"] for r in rows),
        "load_range": [min(r["load_before"] for r in rows), max(r["load_before"] for r in rows)],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--egm", default=os.path.join(ROOT, "build-perf", "bin", "egm"))
    ap.add_argument("--presets", default="tiny,small")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--variants", default="base,ega,ega_causal,mope,ega_mope")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--timed-steps", type=int, default=10)
    ap.add_argument("--compile-mode", default="default", choices=["default", "max-autotune"])
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for every child (repeatable)")
    ap.add_argument("--out", help="write every raw measurement here (JSON)")
    args = ap.parse_args()
    impls = args.impls.split(",")

    base_env = dict(os.environ)
    for kv in args.env:
        k, v = kv.split("=", 1)
        base_env[k] = v
    if not base_env.get("EGM_DATA"):
        shared = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare", "input.txt"))
        if os.path.exists(shared):
            base_env["EGM_DATA"] = shared

    raw, cells = [], []
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  load {load_average():.2f}  env {' '.join(args.env) or '(none)'}",
          file=sys.stderr)
    for preset in args.presets.split(","):
        for threads in [int(t) for t in args.threads.split(",")]:
            env = dict(base_env, OPENBLAS_NUM_THREADS=str(threads))
            for variant in args.variants.split(","):
                rows = []
                cell_impls = [i for i in impls if i != "torch_sdpa" or variant in SDPA_VARIANTS]
                for k in range(args.rounds):
                    order = cell_impls[k % len(cell_impls):] + cell_impls[: k % len(cell_impls)]  # rotate
                    for impl in order:
                        r = run_one(impl, args, preset, threads, variant, env)
                        r["round"] = k
                        rows.append(r)
                        print(f"  {preset} t{threads} {variant:>10} {impl:>15} round {k}: "
                              f"{r['peak_rss_mb']:6.0f} MB "
                              f"{r['ms_per_step']:9.1f} ms/step (load {r['load_before']:.1f})", file=sys.stderr)
                s = summarize(rows)
                s.update(preset=preset, threads=threads, variant=variant)
                cells.append(s)
                raw.extend(rows)
                if args.out:  # after every cell, so that a long run stopped early keeps what it measured
                    with open(args.out, "w") as f:
                        json.dump({"args": vars(args), "cells": cells, "raw": raw}, f, indent=1)

    nan = float("nan")
    print("| preset | thr | variant | egm ms | egm panels ms | per-head ms | batched ms | SDPA ms | compile ms "
          "| egm vs eager | vs compile | vs per-head | vs egm panels | egm MFU | sgemm GFLOP/s | egm RSS MB | eager RSS MB "
          "| egm/eager RSS | egm panels RSS MB | load (min-max) |")
    print("|---" * 20 + "|")
    for c in cells:
        ms = c["ms"]
        lo, hi = c["load_range"]
        print(f"| {c['preset']} | {c['threads']} | {c['variant']} | {ms.get('egm', nan):.0f} "
              f"| {ms.get('egm_panels', nan):.0f} "
              f"| {ms.get('torch_per_head', nan):.0f} | {ms.get('torch_batched', nan):.0f} "
              f"| {ms.get('torch_sdpa', nan):.0f} | {ms.get('torch_compile', nan):.0f} "
              f"| {c['speedup_vs_eager']:.2f}x | {c['speedup_vs_compile']:.2f}x | {c['speedup_vs_per_head']:.2f}x "
              f"| {c['speedup_vs_panels']:.2f}x "
              f"| {100 * c['mfu']:.1f}% | {c['matmul_gflops']:.0f} | {c['egm_rss_mb']:.0f} | {c['eager_rss_mb']:.0f} "
              f"| {c['egm_rss_mb'] / c['eager_rss_mb']:.2f} | {c['panels_rss_mb']:.0f} "
              f"| {c['load']:.1f} ({lo:.1f}-{hi:.1f}) |")


if __name__ == "__main__":
    main()
