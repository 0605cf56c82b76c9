#!/usr/bin/env python3
"""Writes report.json and report.md of scripts/device_check.sh from its work folder.

Called before and after every part, so the report on disk always says what ran,
what failed (with the last lines of its log), what is running and what did not
run. Reads parts.tsv (name, status, seconds, timeout, note; the last line of a
part wins), results/<part>.jsonl (one JSON object per measurement) and the logs.
Writes each file whole, then renames it into place: a reader never sees half a report.
"""

import argparse
import json
import os

TAIL_LINES = 15
# Statuses that count as a pass: skipped only ever comes from --device cpu (no GPU
# there, or no compiler in the rehearsal's bare root); device_check.sh decides.
PASSING = {"done", "skipped"}


def read_parts(path, order):
    latest = {}
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 5:
                name, status, seconds, timeout, note = fields[:5]
                latest[name] = {"status": status, "seconds": int(seconds), "timeout_s": int(timeout), "note": note}
    parts = []
    for name, cap, minimum in order:
        p = {"name": name, "cap_s": cap, "min_s": minimum}
        p.update(latest.get(name, {"status": "pending", "seconds": 0, "timeout_s": 0, "note": ""}))
        parts.append(p)
    return parts


def tail(path, n=TAIL_LINES):
    try:
        with open(path, errors="replace") as f:
            return [l.rstrip("\n") for l in f.readlines()[-n:]]
    except OSError:
        return []


def read_results(folder):
    rows = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name)) as f:
                for line in f:
                    if line.strip():
                        try:
                            row = json.loads(line)
                        except ValueError:
                            continue
                        rows.setdefault(row.get("part", name[:-6]), []).append(row)
    return rows


def fmt(x, spec=".2f"):
    return "" if x is None else format(x, spec)


def attention(row):
    """The attention path of a bench row, with the SDPA backend it ran on and any refusals."""
    text = row.get("attention_path", "")
    if row.get("sdpa_backend"):
        text += f" ({row['sdpa_backend']}"
        if row.get("sdpa_refused"):
            text += f"; {', '.join(row['sdpa_refused'])} refused"
        text += ")"
    return text


def markdown(report):
    parts, res = report["parts"], report["results"]
    counts = {}
    for p in parts:
        counts[p["status"]] = counts.get(p["status"], 0) + 1
    md = [f"# egm device check ({report['device']}, {report['preset']} preset)", "", "```",
          *report["machine"], "```", "",
          f"{report['elapsed_s']} s of a {report['budget_s']} s budget; "
          + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
          + (". Every part passed." if report["ok"] else "."), "",
          "| part | status | s | timeout s | note |", "|---|---|---|---|---|"]
    for p in parts:
        md.append(f"| {p['name']} | {p['status']} | {p['seconds']} | {p['timeout_s'] or ''} | {p['note']} |")

    pre = res.get("preflight", [])
    for r in pre:
        if "missing" in r:
            md += ["", "## The bundle lacks libraries (ldd: not found)", "", *[f"- {m}" for m in r["missing"]]]
        elif "nvidia_smi" in r:
            checked = (f"{r['files_checked']} binaries and libraries resolve (ldd)" if r.get("ldd") != "none" else
                       f"no ldd here: the {r['files_checked']} binaries and libraries were not checked")
            md += ["", f"Preflight: {checked}; nvidia-smi: {r['nvidia_smi']}; ssh: {r['ssh']}; mpirun: {r['mpirun']}."]
        if r.get("version_mismatches"):
            md += ["", "## This machine's C/C++ runtime is older than the bundle's (ldd: version not found)", "",
                   "Not missing libraries: the ones here are older than those the bundle was built against.", "",
                   *[f"- {m}" for m in r["version_mismatches"]]]
    for r in res.get("gpu_tests", []):
        md += ["", f"GPU tests: exit {r['exit']}, {r['tests']} tests, {len(r['failed'])} failed, "
               f"{len(r['skipped'])} skipped" + (f" ({', '.join(r['failed'])})" if r["failed"] else "") + "."]

    benches = [r for p in parts
               if p["name"].startswith("bench_") or p["name"] in ("preflight", "graphs", "sdpa_no_cudnn")
               for r in res.get(p["name"], []) if "ms_per_step" in r]
    if benches:
        md += ["", "## egm bench", "",
               "| part | variant | preset | precision | setting | attention (SDPA backend) | ms/step | tokens/s | MFU "
               "| peak GPU MB | peak RSS MB |",
               "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in benches:
            md.append(f"| {r['part']} | {r['variant']} | {r.get('preset', '')} | {r['precision']} | "
                      f"{r.get('setting', '')} | {attention(r)} | "
                      f"{fmt(r['ms_per_step'])} | {fmt(r['tokens_per_s'], '.0f')} | {fmt(100 * r['mfu'], '.1f')}% | "
                      f"{fmt(r.get('peak_gpu_mb'), '.0f')} | {fmt(r.get('peak_rss_mb'), '.0f')} |")
        md += ["", "MFU: model FLOPs per second over the dense matrix-product rate measured in the same "
               "process (bf16 on CUDA, sgemm on the CPU; the packed runs take the preflight's). The SDPA "
               "backend is the one LibTorch ran the model's attention on (flash, efficient, cudnn or math); "
               "a backend that refused the model's calls is named after it."]
    for r in res.get("profile", []):
        if "kernels" in r:
            busy = r.get("gpu_busy_share")
            md += ["", "## One profiled step (base, bf16)", "",
                   f"Step span {fmt(r.get('span_ms'))} ms; {r['kernels']} GPU kernels, {r['cpu_ops']} ATen ops "
                   f"({r['top_level_ops']} top-level); GPU busy "
                   + ("n/a (no GPU)" if busy is None else f"{100 * busy:.1f}% of the step")
                   + ". Per-op table: profile_summary.txt."]
    nccl = res.get("nccl", [])
    if nccl:
        md += ["", "## NCCL (test_nccl_link under mpirun)", "", "| ranks | exit | problems |", "|---|---|---|"]
        for r in nccl:
            md.append(f"| {r['ranks']} | {r['exit']} | {'; '.join(r['problems']) or 'none'} |")
    packing = res.get("packing", [])
    if packing:
        md += ["", "## Packing: concurrent base bf16 runs on one device", "",
               "| runs | finished | ms/step each | steps/s in total |", "|---|---|---|---|"]
        for r in packing:
            md.append(f"| {r['runs']} | {r['finished']} | {', '.join(fmt(m, '.1f') for m in r['ms_per_step'])} | "
                      f"{fmt(r['steps_per_s_total'], '.1f')} |")
    for r in res.get("sweep_rpg4", []):
        md += ["", "## Quick sweep, runs_per_gpu 4", "",
               f"{r['cells_done']} of {r['cells']} cells done by {r['workers']} workers in {r['wall_s']} s "
               f"({r['cells_per_hour']} cells/hour), exit {r['exit']}."]
    peers = [r for k in ("peer_eager_sdpa", "peer_compile") for r in res.get(k, [])]
    if peers:
        egm_base = next((r for r in res.get("bench_base_bf16", []) if "ms_per_step" in r), None)
        md += ["", "## PyTorch 2.11 on the same device (base, bf16 autocast, SDPA)", "",
               "egm's step / this: egm's base bf16 ms/step over the peer's (above 1: egm is slower).", "",
               "| impl | ms/step | tokens/s | egm's step / this | compile s |", "|---|---|---|---|---|"]
        for r in peers:
            ratio = egm_base["ms_per_step"] / r["ms_per_step"] if egm_base else None
            impl = r["impl"] + (f" ({r['compile_mode']})" if r.get("compile_mode") else "")
            md.append(f"| {impl} | {fmt(r['ms_per_step'])} | {fmt(r['tokens_per_s'], '.0f')} | {fmt(ratio)} | "
                      f"{fmt(r.get('warmup_s') if r.get('compile_mode') else None, '.0f')} |")
    bad = [p for p in parts if p["status"] in ("failed", "running")]
    if bad:
        md += ["", "## Last lines of what failed"]
        for p in bad:
            md += ["", f"### {p['name']} ({p['status']}: {p['note']})", "", "```", *p.get("last_lines", []), "```"]
    return "\n".join(md) + "\n"


def write_atomic(path, text):
    with open(path + ".part", "w") as f:
        f.write(text)
    os.replace(path + ".part", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for flag in ("--parts", "--parts-order", "--results", "--logs", "--machine", "--out", "--device", "--preset"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--budget", type=int, required=True)
    ap.add_argument("--elapsed", type=int, required=True)
    a = ap.parse_args()
    words = a.parts_order.split()
    order = [(words[i], int(words[i + 1]), int(words[i + 2])) for i in range(0, len(words), 3)]
    parts = read_parts(a.parts, order)
    for p in parts:
        if p["status"] in ("failed", "running"):
            p["last_lines"] = tail(os.path.join(a.logs, p["name"] + ".log"))
    try:
        machine = open(a.machine).read().strip().splitlines()
    except OSError:
        machine = []
    report = {"device": a.device, "preset": a.preset, "budget_s": a.budget, "elapsed_s": a.elapsed,
              "ok": all(p["status"] in PASSING for p in parts), "machine": machine, "parts": parts,
              "results": read_results(a.results)}
    write_atomic(os.path.join(a.out, "report.json"), json.dumps(report, indent=2) + "\n")
    write_atomic(os.path.join(a.out, "report.md"), markdown(report))


if __name__ == "__main__":
    main()
