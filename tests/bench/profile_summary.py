#!/usr/bin/env python3
"""Per-op time of one training step from a profiler trace (`egm bench --profile FILE`).

Self time = an op's duration minus that of the ops nested inside it (same thread), so the
columns add up to the step. Backward ops are grouped under their autograd node name
("autograd::engine::evaluate_function: XBackward0") in the inclusive table.

The trace is Kineto's (what egm bench writes: {"traceEvents": [...]}, the CPU ops as
"cpu_op" and, on CUDA, every GPU kernel as "kernel"); the older autograd-profiler form
(a plain list of op events) is read too. The header gives the step's span, the ATen ops
dispatched (all, and top-level), the GPU kernels launched, and the GPU-busy share: the
time some kernel, copy or memset ran on the GPU (their union) over the step's span.
--json FILE writes those numbers (scripts/device_check.sh reports them).

    python3 tests/bench/profile_summary.py /tmp/trace.json [--top 25] [--json numbers.json]
"""

import argparse
import collections
import json

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def union_us(intervals):
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", help="also write the step's numbers here")
    args = ap.parse_args()
    with open(args.trace) as f:
        doc = json.load(f)
    kineto = isinstance(doc, dict)
    events = [e for e in (doc.get("traceEvents", []) if kineto else doc) if e.get("ph") == "X"]
    ops = [e for e in events if e.get("cat") == "cpu_op"] if kineto else events
    gpu = [e for e in events if e.get("cat") in GPU_CATEGORIES]
    kernels = sum(1 for e in gpu if e["cat"] == "kernel")

    self_us = collections.Counter()
    incl_us = collections.Counter()
    count = collections.Counter()
    by_thread = collections.defaultdict(list)
    for e in ops:
        by_thread[e["tid"]].append(e)
    total, top_level = 0.0, 0
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [end, name, child time, duration]
        for e in evs:
            start, end = e["ts"], e["ts"] + e["dur"]
            while stack and stack[-1][0] <= start:
                done = stack.pop()
                self_us[done[1]] += done[3] - done[2]
            if stack:
                stack[-1][2] += e["dur"]
            else:
                total += e["dur"]
                top_level += 1
            stack.append([end, e["name"], 0.0, e["dur"]])
            incl_us[e["name"]] += e["dur"]
            count[e["name"]] += 1
        for done in stack:
            self_us[done[1]] += done[3] - done[2]

    timed = ops + gpu
    span_us = (max(e["ts"] + e["dur"] for e in timed) - min(e["ts"] for e in timed)) if timed else 0.0
    busy = union_us([(e["ts"], e["ts"] + e["dur"]) for e in gpu]) / span_us if gpu and span_us > 0 else None
    numbers = {"span_ms": span_us / 1e3, "cpu_ops": len(ops), "top_level_ops": top_level, "kernels": kernels,
               "gpu_events": len(gpu), "gpu_busy_share": busy, "trace_format": "kineto" if kineto else "legacy"}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=2)

    print(f"step span {span_us / 1e3:.1f} ms; ATen ops {len(ops)} ({top_level} top-level); GPU kernels {kernels}; "
          f"GPU busy {'n/a' if busy is None else f'{100 * busy:.1f}%'}")
    print(f"top-level op time {total / 1e3:.1f} ms")
    print(f"{'self ms':>9} {'%':>6} {'calls':>6}  op")
    for name, us in self_us.most_common(args.top):
        print(f"{us / 1e3:9.1f} {100 * us / total if total else 0:6.1f} {count[name]:6d}  {name}")
    print(f"\n{'incl ms':>9} {'%':>6} {'calls':>6}  backward node")
    back = [(n, us) for n, us in incl_us.items() if n.startswith("autograd::engine::evaluate_function")]
    for name, us in sorted(back, key=lambda x: -x[1])[: args.top]:
        print(f"{us / 1e3:9.1f} {100 * us / total if total else 0:6.1f} {count[name]:6d}  {name.split(': ', 1)[-1]}")
    if gpu:
        by_kernel = collections.Counter()
        kcount = collections.Counter()
        for e in gpu:
            by_kernel[e["name"]] += e["dur"]
            kcount[e["name"]] += 1
        print(f"\n{'GPU ms':>9} {'calls':>6}  kernel / copy")
        for name, us in by_kernel.most_common(args.top):
            print(f"{us / 1e3:9.2f} {kcount[name]:6d}  {name[:120]}")


if __name__ == "__main__":
    main()
