#!/usr/bin/python3
"""egm vs eager PyTorch, side by side on one noisy machine (issue 7).

For each (preset, threads, variant) cell it runs, in rounds, three separate processes:
    egm bench --json                                  (the C++ trainer's step)
    tests/bench/pytorch_step.py --style per_head      ("as the paper's code": one module per head)
    tests/bench/pytorch_step.py --style batched       (the reference model, heads batched)
The order rotates every round, so slow spells of the shared machine hit every candidate alike. Each
process reports the median ms/step of its timed steps; a cell reports the median over rounds, and the
speedups are the medians of the per-round ratios (paired within a round), not ratios of medians.

Every child gets the same environment: OPENBLAS_NUM_THREADS = threads (torch.set_num_threads does not
reach OpenBLAS's own pool) and the --env settings (e.g. OPENBLAS_CORETYPE=SkylakeX).

Output: a Markdown table on stdout, and every raw measurement as JSON with --out.

    /usr/bin/python3 tests/bench/compare.py --presets small --threads 1 --variants base,ega --rounds 3
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
IMPLS = ("egm", "torch_per_head", "torch_batched")


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_one(impl, args, preset, threads, variant, env):
    common = ["--preset", preset, "--variant", variant, "--threads", str(threads),
              "--warmup", str(args.warmup), "--timed-steps", str(args.timed_steps)]
    if impl == "egm":
        cmd = [args.egm, "bench", "--json"] + common
    else:
        cmd = [sys.executable, os.path.join(HERE, "pytorch_step.py"), "--style", impl[len("torch_"):]] + common
    load = load_average()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result.update(impl=impl, load_before=load, command=" ".join(cmd))
    return result


def summarize(rows):
    by = {impl: [r for r in rows if r["impl"] == impl] for impl in IMPLS}
    cell = {impl: statistics.median(r["ms_per_step"] for r in by[impl]) for impl in IMPLS if by[impl]}
    rounds = sorted({r["round"] for r in rows})

    def ratio(num, den):  # median over rounds of (num ms / den ms), paired within a round
        vals = []
        for k in rounds:
            a = [r["ms_per_step"] for r in by[num] if r["round"] == k]
            b = [r["ms_per_step"] for r in by[den] if r["round"] == k]
            if a and b:
                vals.append(a[0] / b[0])
        return statistics.median(vals) if vals else float("nan")

    egm = by["egm"]
    return {
        "ms": cell,
        "speedup_vs_per_head": ratio("torch_per_head", "egm"),
        "speedup_vs_batched": ratio("torch_batched", "egm"),
        "mfu": statistics.median(r["mfu"] for r in egm) if egm else float("nan"),
        "matmul_gflops": statistics.median(r["matmul_gflops"] for r in egm) if egm else float("nan"),
        "egm_rss_mb": max(r["peak_rss_mb"] for r in egm) if egm else float("nan"),
        "egm_rss_growth_mb": max(r["rss_growth_mb"] for r in egm) if egm else float("nan"),
        "torch_rss_mb": {impl: max(r["peak_rss_mb"] for r in by[impl]) for impl in IMPLS[1:] if by[impl]},
        "load": statistics.median(r["load_before"] for r in rows),
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
                for k in range(args.rounds):
                    order = impls[k % len(impls):] + impls[: k % len(impls)]  # rotate
                    for impl in order:
                        r = run_one(impl, args, preset, threads, variant, env)
                        r["round"] = k
                        rows.append(r)
                        print(f"  {preset} t{threads} {variant:>10} {impl:>15} round {k}: "
                              f"{r['ms_per_step']:9.1f} ms/step (load {r['load_before']:.1f})", file=sys.stderr)
                s = summarize(rows)
                s.update(preset=preset, threads=threads, variant=variant)
                cells.append(s)
                raw.extend(rows)

    nan = float("nan")
    print("| preset | thr | variant | egm ms/step | torch per-head ms | torch batched ms | egm speedup vs per-head "
          "| vs batched | egm tokens/s | MFU | sgemm GFLOP/s | egm peak RSS MB | torch batched RSS MB | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    tokens = {"tiny": 8 * 32, "small": 32 * 128, "paper": 64 * 256}
    for c in cells:
        ms = c["ms"]
        e = ms.get("egm", nan)
        print(f"| {c['preset']} | {c['threads']} | {c['variant']} | {e:.1f} | {ms.get('torch_per_head', nan):.1f} "
              f"| {ms.get('torch_batched', nan):.1f} | {c['speedup_vs_per_head']:.2f}x | {c['speedup_vs_batched']:.2f}x "
              f"| {tokens[c['preset']] / (e / 1e3):.0f} | {100 * c['mfu']:.1f}% | {c['matmul_gflops']:.0f} "
              f"| {c['egm_rss_mb']:.0f} | {c['torch_rss_mb'].get('torch_batched', nan):.0f} | {c['load']:.1f} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "cells": cells, "raw": raw}, f, indent=1)


if __name__ == "__main__":
    main()
