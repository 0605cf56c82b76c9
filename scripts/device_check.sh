#!/usr/bin/env bash
# The prepared device check: one call on the lent GPU machine (at most ~8 min),
# leaving a report (report.md, report.json, logs) in the folder it is given.
#   GPU machine:  scripts/device_check.sh --bundle build/device-bundle --out "$OUT"
#                 (the bundle is made here by scripts/device_bundle.sh and carried)
#   here (CI):    scripts/device_check.sh --device cpu --out DIR   (the CPU dry run)
# It holds, each part timed and recorded even when another fails:
#   1. the GPU tests (tests/gpu: every main variant's logits and gradients on
#      CUDA against the CPU, fp32 and bf16; a checkpoint CUDA -> CPU -> CUDA);
#   2. egm bench for base, ega, ega_causal, mope, ega_mope in fp32 and bf16
#      (ms/step, tokens/s, MFU against the measured dense bf16 rate, peak GPU memory);
#   3. the quick sweep with runs_per_gpu 1 and 4 (cells per hour each).
# On --device cpu the same steps run at the tiny preset with few steps: they
# check the script and the report, not speed. Exit status: 0 when every part
# ran and passed, 1 otherwise (the report says which).
set -uo pipefail
cd "$(dirname "$0")/.."

OUT="" DEVICE=cuda BUNDLE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --bundle) BUNDLE=$2; shift 2 ;;
    *) echo "device_check: unknown argument $1 (--out DIR [--device cuda|cpu] [--bundle DIR])" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "device_check: --out DIR is required" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
started=$(date +%s)
LOG="$OUT/device_check.log"
: >"$LOG"
log() { echo "[device_check $(( $(date +%s) - started ))s] $*" | tee -a "$LOG"; }

# ---- where the binaries and libraries come from -------------------------------
if [ -n "$BUNDLE" ]; then
  BIN=$(realpath "$BUNDLE/bin")
  torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>>"$LOG")
  site=$(dirname "$torch_dir")
  nv=$(find "$site/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | tr '\n' ':')
  # Only egm's processes see the carried libraries (older than that machine's own:
  # python3 there must keep its own libz, libssl, ...).
  EGM_LD="$(realpath "$BUNDLE/lib"):$torch_dir/lib:$nv${LD_LIBRARY_PATH:-}"
  if ! command -v mpirun >/dev/null 2>&1 && [ -f "$BUNDLE/openmpi.tar.gz" ]; then
    log "unpacking Open MPI from the bundle into /"
    tar -xzf "$BUNDLE/openmpi.tar.gz" -P 2>>"$LOG" || log "warning: Open MPI did not unpack"
  fi
else
  BUILD=$(realpath "${EGM_BUILD_DIR:-build}")
  BIN=$BUILD/bin
  [ -x "$BIN/egm" ] || { echo "device_check: no $BIN/egm: run scripts/setup.sh first" >&2; exit 2; }
fi
EGM_LD=${EGM_LD:-${LD_LIBRARY_PATH:-}}
EGM="$BIN/egm"
TEST_GPU="$BIN/test_gpu"
[ -x "$TEST_GPU" ] || TEST_GPU=$(find "${BUILD:-/nonexistent}/tests/gpu" -maxdepth 1 -name test_gpu -type f 2>/dev/null | head -n1)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export EGM_DATA=${EGM_DATA:-$PWD/../shared/data/tinyshakespeare/input.txt}
if [ ! -f "$EGM_DATA" ]; then
  # Timing and the sweep need text, not Shakespeare: a fixed synthetic corpus.
  EGM_DATA="$WORK/corpus.txt"
  python3 -c 'import random; r=random.Random(0); w=["the","king","and","of","to","my","lord","a","I","you","that","in","is","not","with"]; print("\n".join(" ".join(r.choice(w) for _ in range(12)) for _ in range(40000)))' >"$EGM_DATA"
fi

if [ "$DEVICE" = cpu ]; then
  # One thread: CI runs it beside other tests on 2 cores (more threads than free cores
  # make LibTorch spin: a tiny step went from 10 ms to 1 s).
  PRESET=tiny WARMUP=1 TIMED=3 SWEEP_STEPS=30 PACKINGS="1 2" THREADS=1
else
  PRESET=paper WARMUP=5 TIMED=20 SWEEP_STEPS="" PACKINGS="1 4" THREADS=0
fi
VARIANTS="base ega ega_causal mope ega_mope"
RESULTS="$WORK/results.jsonl"   # one JSON object per measurement
: >"$RESULTS"
failed=0

# ---- 0. the machine ------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname), $(nproc) cores"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: none"
  echo "egm commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "torch: $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null || echo '?')"
} >"$WORK/machine.txt" 2>&1
log "machine: $(tr '\n' ';' <"$WORK/machine.txt")"

# ---- 1. GPU tests --------------------------------------------------------------
if [ -n "$TEST_GPU" ] && [ -x "$TEST_GPU" ]; then
  log "GPU tests"
  t0=$(date +%s)
  timeout 180 env LD_LIBRARY_PATH="$EGM_LD" "$TEST_GPU" --gtest_output="json:$WORK/gpu_tests.json" >"$OUT/gpu_tests.log" 2>&1
  rc=$?
  log "GPU tests: exit $rc in $(( $(date +%s) - t0 ))s"
  [ $rc -eq 0 ] || failed=1
  python3 - "$WORK/gpu_tests.json" "$rc" >>"$RESULTS" <<'PY'
import json, sys
path, rc = sys.argv[1], int(sys.argv[2])
try:
    doc = json.load(open(path))
    cases = [c for s in doc.get("testsuites", []) for c in s.get("testsuite", [])]
except Exception:
    cases = []
skipped = sum(1 for c in cases if c.get("result") == "SKIPPED")
failures = sum(1 for c in cases if c.get("failures"))
print(json.dumps({"part": "gpu_tests", "exit": rc, "tests": len(cases), "failed": failures, "skipped": skipped}))
PY
else
  log "GPU tests: no test_gpu binary"; failed=1
fi

# ---- 2. benchmarks -------------------------------------------------------------
for precision in fp32 bf16; do
  for v in $VARIANTS; do
    log "bench $v $PRESET $precision on $DEVICE"
    if line=$(timeout 120 env LD_LIBRARY_PATH="$EGM_LD" "$EGM" bench --preset "$PRESET" --variant "$v" --device "$DEVICE" --threads "$THREADS" \
                --set "train.precision=$precision" --warmup "$WARMUP" --timed-steps "$TIMED" --json 2>>"$LOG" | tail -n1) &&
       python3 -c 'import json,sys; json.loads(sys.argv[1])' "$line" 2>/dev/null; then
      python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["part"]="bench"; print(json.dumps(d))' "$line" >>"$RESULTS"
    else
      log "bench $v $precision failed"; failed=1
      echo "{\"part\": \"bench\", \"variant\": \"$v\", \"precision\": \"$precision\", \"error\": true}" >>"$RESULTS"
    fi
  done
done

# ---- 3. the quick sweep, packed ------------------------------------------------
for per_gpu in $PACKINGS; do
  spec="$WORK/quick_rpg$per_gpu.json"
  python3 - experiments/quick.json "$spec" "$per_gpu" "$SWEEP_STEPS" <<'PY'
import json, sys
src, dst, per_gpu, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
spec = json.load(open(src))
spec["name"] = f"quick_rpg{per_gpu}"
spec["runs_per_gpu"] = per_gpu
if steps:  # the CPU dry run: tiny cells
    spec["preset"] = "tiny"
    spec["overrides"] = {}
    spec["steps"] = int(steps)
    spec["eval_interval"] = int(steps)
json.dump(spec, open(dst, "w"), indent=2)
PY
  workers=$per_gpu  # one GPU: runs_per_gpu workers share it
  log "quick sweep, runs_per_gpu $per_gpu, $workers worker(s) on $DEVICE"
  t0=$(date +%s.%N)
  timeout 240 env LD_LIBRARY_PATH="$EGM_LD" "$EGM" sweep "$spec" --device "$DEVICE" --workers "$workers" --db "$WORK/sweep.sqlite" \
    --runs-dir "$WORK/runs" --view plain >"$OUT/sweep_rpg$per_gpu.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  [ $rc -eq 0 ] || { failed=1; log "quick sweep runs_per_gpu $per_gpu: exit $rc (sweep_rpg$per_gpu.log)"; }
  python3 - "$WORK/sweep.sqlite" "quick_rpg$per_gpu" "$t0" "$t1" "$rc" "$per_gpu" "$workers" >>"$RESULTS" <<'PY'
import json, sqlite3, sys
db, name, t0, t1, rc, per_gpu, workers = sys.argv[1:]
wall = float(t1) - float(t0)
done = 0
try:
    con = sqlite3.connect(db)
    done = con.execute("SELECT count(*) FROM cells c JOIN sweeps s ON s.id = c.sweep_id "
                       "WHERE s.name = ? AND c.status = 'done'", (name,)).fetchone()[0]
except Exception:
    pass
print(json.dumps({"part": "sweep", "sweep": name, "runs_per_gpu": int(per_gpu), "workers": int(workers),
                  "exit": int(rc), "cells_done": done, "wall_s": round(wall, 1),
                  "cells_per_hour": round(done / wall * 3600, 1) if wall > 0 else None}))
PY
done

# ---- the report ----------------------------------------------------------------
python3 - "$RESULTS" "$WORK/machine.txt" "$OUT" "$DEVICE" "$PRESET" "$(( $(date +%s) - started ))" "$failed" <<'PY'
import json, sys
results_path, machine_path, out, device, preset, seconds, failed = sys.argv[1:]
rows = [json.loads(l) for l in open(results_path) if l.strip()]
machine = open(machine_path).read().strip()
report = {"device": device, "preset": preset, "seconds": int(seconds), "ok": failed == "0",
          "machine": machine.splitlines(), "results": rows}
json.dump(report, open(f"{out}/report.json", "w"), indent=2)
md = [f"# egm device check ({device})", "", "```", machine, "```", "",
      f"Total {seconds} s; {'every part passed' if failed == '0' else 'SOME PART FAILED (see the logs)'}.", ""]
for r in rows:
    if r["part"] == "gpu_tests":
        md += [f"GPU tests: exit {r['exit']}, {r['tests']} tests, {r['failed']} failed, {r['skipped']} skipped.", ""]
md += [f"## egm bench, {preset} preset", "",
       "| variant | precision | ms/step | tokens/s | MFU | peak GPU MB | peak RSS MB |", "|---|---|---|---|---|---|---|"]
for r in rows:
    if r["part"] != "bench":
        continue
    if r.get("error"):
        md.append(f"| {r['variant']} | {r['precision']} | failed | | | | |")
        continue
    md.append(f"| {r['variant']} | {r['precision']} | {r['ms_per_step']:.2f} | {r['tokens_per_s']:.0f} | "
              f"{100 * r['mfu']:.1f}% | {r.get('peak_gpu_mb', 0):.0f} | {r['peak_rss_mb']:.0f} |")
md += ["", "MFU: model FLOPs per second over the dense matrix-product rate measured in the same process "
       "(bf16 on CUDA, sgemm on the CPU).", "", "## quick sweep", "",
       "| runs per GPU | workers | cells done | wall s | cells/hour | exit |", "|---|---|---|---|---|---|"]
for r in rows:
    if r["part"] == "sweep":
        md.append(f"| {r['runs_per_gpu']} | {r['workers']} | {r['cells_done']} | {r['wall_s']} | "
                  f"{r['cells_per_hour']} | {r['exit']} |")
open(f"{out}/report.md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
log "done in $(( $(date +%s) - started ))s; report in $OUT/report.md"
exit $failed
