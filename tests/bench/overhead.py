#!/usr/bin/env python3
"""What a variant costs over its baseline in egm's own training step (issue 7's overhead targets).

For each round it runs `egm bench --json` once per variant, in an order that rotates every round, and
reports per pair (variant, baseline) the median over rounds of the paired ratio ms(variant) / ms(baseline)
measured in the same round -- on a shared, noisy machine a ratio of two medians taken at different times
mixes in the load; a ratio within one round mostly cancels it.

    python3 tests/bench/overhead.py --preset small --threads 2 --rounds 5 \\
        --pairs ega:base,ega_causal:base,mope:base --env OPENBLAS_CORETYPE=SkylakeX
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--egm", default=os.path.join(ROOT, "build-perf", "bin", "egm"))
    ap.add_argument("--preset", default="small")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", default="ega:base,ega_causal:base,mope:base",
                    help="VARIANT:BASELINE,... (ratio = VARIANT / BASELINE)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--timed-steps", type=int, default=5)
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for every child (repeatable)")
    ap.add_argument("--out", help="write every raw measurement here (JSON)")
    args = ap.parse_args()

    pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
    variants = []
    for a, b in pairs:
        for v in (b, a):
            if v not in variants:
                variants.append(v)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    for kv in args.env:
        k, v = kv.split("=", 1)
        env[k] = v

    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}  {args.preset} t{args.threads}  env {' '.join(args.env)}",
          file=sys.stderr)
    raw = []
    for k in range(args.rounds):
        order = variants[k % len(variants):] + variants[: k % len(variants)]
        for v in order:
            cmd = [args.egm, "bench", "--json", "--preset", args.preset, "--variant", v, "--threads",
                   str(args.threads), "--warmup", str(args.warmup), "--timed-steps", str(args.timed_steps)]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            r.update(round=k, variant=v)
            raw.append(r)
            print(f"  round {k} {v:>16}: {r['ms_per_step']:9.1f} ms/step", file=sys.stderr)

    def ms(v, k):
        return next(r["ms_per_step"] for r in raw if r["variant"] == v and r["round"] == k)

    print(f"| variant | baseline | median ms/step (variant, baseline) | overhead: median paired ratio - 1 "
          f"| per-round ratios |")
    print("|---|---|---|---|---|")
    summary = []
    for a, b in pairs:
        ratios = [ms(a, k) / ms(b, k) for k in range(args.rounds)]
        med_a = statistics.median(ms(a, k) for k in range(args.rounds))
        med_b = statistics.median(ms(b, k) for k in range(args.rounds))
        over = statistics.median(ratios) - 1
        summary.append(dict(variant=a, baseline=b, overhead=over, ratios=ratios))
        print(f"| {a} | {b} | {med_a:.1f}, {med_b:.1f} | {100 * over:+.1f}% | "
              f"{', '.join(f'{x:.3f}' for x in ratios)} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "summary": summary, "raw": raw}, f, indent=1)


if __name__ == "__main__":
    main()
