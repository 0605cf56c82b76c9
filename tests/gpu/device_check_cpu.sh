#!/usr/bin/env bash
# The device check's CPU dry run (scripts/device_check.sh --device cpu): the
# same script the GPU machine runs, here at the tiny preset, and its report
# must hold every part: the GPU tests (skipped here), ten benchmarks with
# numbers, and both packed quick sweeps with every cell done.
set -euo pipefail
SRC=$1 OUT=$2
rm -rf "$OUT"
EGM_BUILD_DIR=${EGM_BUILD_DIR:?} bash "$SRC/scripts/device_check.sh" --device cpu --out "$OUT"
python3 - "$OUT/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"], "the report says a part failed"
parts = {}
for row in r["results"]:
    parts.setdefault(row["part"], []).append(row)
assert len(parts.get("gpu_tests", [])) == 1 and parts["gpu_tests"][0]["exit"] == 0, parts.get("gpu_tests")
benches = parts.get("bench", [])
assert len(benches) == 10, f"{len(benches)} benchmarks, want 5 variants x fp32/bf16"
for b in benches:
    assert not b.get("error") and b["ms_per_step"] > 0 and b["tokens_per_s"] > 0 and b["mfu"] > 0, b
assert {(b["variant"], b["precision"]) for b in benches} == {
    (v, p) for v in ["base", "ega", "ega_causal", "mope", "ega_mope"] for p in ["fp32", "bf16"]}
sweeps = parts.get("sweep", [])
assert [s["runs_per_gpu"] for s in sweeps] == [1, 2], sweeps
for s in sweeps:
    assert s["exit"] == 0 and s["cells_done"] == 12 and s["cells_per_hour"] > 0, s
print("device check dry run: report complete")
PY
test -s "$OUT/report.md"
