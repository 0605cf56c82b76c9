#!/usr/bin/env python3
"""Per-op time of one training step from an autograd-profiler trace (`egm bench --profile FILE`).

Self time = an op's duration minus that of the ops nested inside it (same thread), so the
columns add up to the step. Backward ops are grouped under their autograd node name
("autograd::engine::evaluate_function: XBackward0") in the inclusive table.

    python3 tests/bench/profile_summary.py /tmp/trace.json [--top 25]
"""

import argparse
import collections
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with open(args.trace) as f:
        events = [e for e in json.load(f) if e.get("ph") == "X"]

    self_us = collections.Counter()
    incl_us = collections.Counter()
    count = collections.Counter()
    by_thread = collections.defaultdict(list)
    for e in events:
        by_thread[e["tid"]].append(e)
    total = 0.0
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [end, name, child time]
        for e in evs:
            start, end = e["ts"], e["ts"] + e["dur"]
            while stack and stack[-1][0] <= start:
                done = stack.pop()
                self_us[done[1]] += done[3] - done[2]
            if stack:
                stack[-1][2] += e["dur"]
            else:
                total += e["dur"]
            stack.append([end, e["name"], 0.0, e["dur"]])
            incl_us[e["name"]] += e["dur"]
            count[e["name"]] += 1
        for done in stack:
            self_us[done[1]] += done[3] - done[2]

    print(f"top-level time {total / 1e3:.1f} ms")
    print(f"{'self ms':>9} {'%':>6} {'calls':>6}  op")
    for name, us in self_us.most_common(args.top):
        print(f"{us / 1e3:9.1f} {100 * us / total:6.1f} {count[name]:6d}  {name}")
    print(f"\n{'incl ms':>9} {'%':>6} {'calls':>6}  backward node")
    back = [(n, us) for n, us in incl_us.items() if n.startswith("autograd::engine::evaluate_function")]
    for name, us in sorted(back, key=lambda x: -x[1])[: args.top]:
        print(f"{us / 1e3:9.1f} {100 * us / total:6.1f} {count[name]:6d}  {name.split(': ', 1)[-1]}")


if __name__ == "__main__":
    main()
