#!/usr/bin/env python3
"""egm plan against an independent implementation: statsmodels' TTestPower
(power and solve_power) and scipy's t quantiles, on per-seed contrasts this
script forms itself from the fixture database (sqlite3), not from egm.

  check_plan_statsmodels.py --egm build/bin/egm --fixture build/tests/analysis/egm_make_analysis_fixture --work DIR

Needs statsmodels and scipy (scripts/arrow_env.sh pins them into the notebook
python); without them it says so loudly and exits 77 (CTest: skipped).
"""
import argparse
import json
import math
import sqlite3
import subprocess
import sys

try:
    import scipy.stats
    from statsmodels.stats.power import TTestPower
except ImportError as e:  # the loud skip
    print("=" * 78, file=sys.stderr)
    print(f"SKIPPED: egm plan is NOT checked against statsmodels: {e}", file=sys.stderr)
    print(f"  ({sys.executable} lacks statsmodels/scipy; scripts/setup.sh with the test packages installs them)",
          file=sys.stderr)
    print("=" * 78, file=sys.stderr)
    sys.exit(77)

ap = argparse.ArgumentParser()
ap.add_argument("--egm", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--work", required=True)
args = ap.parse_args()
subprocess.run([args.fixture, args.work], check=True)
db = f"{args.work}/main.sqlite"

# Per-seed contrasts, formed here: delta(v) = base - v, I = a + b - ab - base.
con = sqlite3.connect(db)
vals = {}
for variant, seed, v in con.execute(
        "SELECT c.variant, c.seed, c.final_val FROM cells c JOIN sweeps s ON s.id = c.sweep_id "
        "WHERE s.name = 'fixture' AND c.status = 'done'"):
    vals[(variant, seed)] = v
seeds = sorted({s for (_, s) in vals})
contrasts = {f"delta({v})": [vals[("base", s)] - vals[(v, s)] for s in seeds] for v in ("ega", "mope", "ega_mope")}
contrasts["interaction"] = [vals[("ega", s)] + vals[("mope", s)] - vals[("ega_mope", s)] - vals[("base", s)]
                            for s in seeds]


def sd(x):
    m = sum(x) / len(x)
    return math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1))


def seeds_for_half_width(s, h, a):
    n = 2
    while scipy.stats.t.isf(a / 2, n - 1) * s / math.sqrt(n) > h:
        n += 1
    return n


power = TTestPower()
failures = []
cases = [dict(effect=0.02, half_width=0.01, alpha=0.05, adjust="holm", power=0.8),
         dict(effect=0.05, half_width=0.03, alpha=0.10, adjust="none", power=0.9),
         dict(effect=-0.015, half_width=0.005, alpha=0.01, adjust="bonferroni", power=0.7)]
checked = 0
for case in cases:
    out = subprocess.run([args.egm, "plan", "fixture", "--db", db, "--format", "json", "--effect", str(case["effect"]),
                          "--half-width", str(case["half_width"]), "--alpha", str(case["alpha"]),
                          "--adjust", case["adjust"], "--power", str(case["power"])],
                         check=True, capture_output=True, text=True).stdout
    plan = json.loads(out)[0]
    m = len(plan["claims"])
    a = case["alpha"] / m if case["adjust"] != "none" else case["alpha"]
    needed = 0
    for c in plan["claims"]:
        x = contrasts[c["name"]]
        s = sd(x)
        d = case["effect"] / s
        want_power_now = power.power(d, len(x), a, alternative="two-sided")
        n_real = power.solve_power(effect_size=abs(d), nobs=None, alpha=a, power=case["power"],
                                   alternative="two-sided")
        want_n = max(2, math.ceil(n_real - 1e-6))  # statsmodels' root stops ~1e-6 short
        want_hw = seeds_for_half_width(s, case["half_width"], a)
        got = (c["sd"], c["claim_alpha"], c["power_now"], c["seeds_for_power"], c["seeds_for_half_width"])
        ok = (abs(c["sd"] - s) < 1e-12 and abs(c["claim_alpha"] - a) < 1e-15 and
              abs(c["power_now"] - want_power_now) < 1e-8 and c["seeds_for_power"] == want_n and
              c["seeds_for_half_width"] == want_hw)
        print(f"{'ok  ' if ok else 'FAIL'} {case} {c['name']}: egm {got}, statsmodels/scipy "
              f"({s}, {a}, {want_power_now}, {want_n} [{n_real}], {want_hw})")
        if not ok:
            failures.append(c["name"])
        needed = max(needed, want_n, want_hw)
        checked += 1
    if plan["seeds_needed"] != needed or plan["cells_to_add"] != 4 * (needed - 3):
        failures.append(f"seeds_needed {plan['seeds_needed']} / cells_to_add {plan['cells_to_add']}, want {needed}")

# Bad input: one line on stderr, exit 2.
for bad in (["--half-width", "0"], ["--effect", "0.02", "--alpha", "0.5"], ["--effect", "0.02", "--claims", "bogus"],
            []):
    r = subprocess.run([args.egm, "plan", "fixture", "--db", db] + bad, capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    ok = r.returncode == 2 and len(lines) == 1 and r.stdout == ""
    print(f"{'ok  ' if ok else 'FAIL'} refused {bad}: rc {r.returncode}: {r.stderr.strip()}")
    if not ok:
        failures.append(f"refusal {bad}")

print(f"{checked} claim plans checked against statsmodels {__import__('statsmodels').__version__}, "
      f"scipy {scipy.__version__}")
if failures:
    print("FAILED:", failures)
    sys.exit(1)
