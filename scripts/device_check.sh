#!/usr/bin/env bash
# The prepared device check: one call on the lent GPU machine that always
# brings back a report, whatever fails or hangs.
#   GPU machine:  scripts/device_check.sh --bundle build/device-bundle.tar.gz --out "$OUT"
#                 (the bundle is made here by scripts/device_bundle.sh and carried)
#   rehearsal:    tests/gpu/device_rehearsal.sh runs it with --device cpu in a bare
#                 root file system (no Open MPI, no ssh, no compilers), as CI does
#   here:         scripts/device_check.sh --device cpu --out DIR  (the build folder's binaries)
#
# --budget SECONDS (default 420) bounds the whole call; the documented call gives the
# device tool a timeout_s of 480, so a second call (a rerun) still fits in the 15
# minutes a lent machine has, its start included. The parts run one after another in
# the order of what their result is worth; each gets the smaller of its cap and the
# time left (less a reserve for the last report), and one that cannot get its minimum
# is recorded as not run. report.json and report.md are rewritten before and after
# every part (running / done / failed with its last log lines / not run for lack of
# time), and logs.tgz after every part, so a call killed from outside still leaves the
# report of everything before.
# What comes back (--out): report.md, report.json, logs.tgz, profile_summary.txt.
#
# The parts, in order (cuda: the paper preset; cpu: the tiny one, few steps):
#   preflight        ldd of every carried binary and library (a "not found" is a broken
#                    bundle: exit 2; glibc/libstdc++ "version not found" lines listed apart;
#                    no ldd said so by itself), nvidia-smi, whether ssh exists, a tiny bench,
#                    whose matrix-product rate the packed runs reuse
#   bench_base_bf16  egm bench, base, bf16: the paper preset's step time
#   peer_eager_sdpa  PyTorch 2.11 eager with SDPA, base (tests/bench/pytorch_step.py), same GPU
#   bench_*_bf16     ega, ega_causal, mope, ega_mope
#   gpu_tests        tests/gpu on CUDA against the CPU, and at the paper's shapes; under
#                    --device cuda a skipped test fails
#   graphs           base bf16 again with train.cuda_graphs (the captured step) and with
#                    today's path (attention kernels, LibTorch's AdamW) beside the default
#                    (SDPA + fused AdamW); cpu: not run (CUDA only), said so
#   sdpa_no_cudnn    base and ega bf16 again with TORCH_CUDNN_SDPA_DEPRIORITIZED=1 (LibTorch
#                    then prefers flash / memory-efficient to cuDNN); cpu: not run, said so
#   profile          one profiled base bf16 step: kernels (cuda) or ATen ops per step, GPU-busy share
#   peer_compile     the eager peer under torch.compile, mode default then reduce-overhead
#                    (CUDA graphs: the fair peer of train.cuda_graphs)
#   nccl             test_nccl_link under mpirun with 1 rank (collectives on the GPU) and
#                    2 ranks on one GPU (must be refused cleanly, on every rank alike)
#   packing          1, 2 and 4 concurrent base bf16 benchmarks on one GPU: steps/s in total
#   sweep_rpg4       the quick sweep with runs_per_gpu 4 (egm sweep: mpirun without ssh)
#   bench_base_fp32  egm bench, base, fp32
# Every egm bench row records the SDPA backend its attention ran on (sdpa_backend);
# under --device cuda a row with peak_gpu_mb 0 fails its part (the CUDA paths are not in
# the build). Launches are hardened for a machine nobody has configured: Open MPI with
# pml ob1, vader's single-copy mechanism off and no binding; NCCL_DEBUG=WARN on the
# loopback socket; Triton's and Inductor's caches in the work folder; Python unbuffered.
# EGM_DEVICE_CHECK_STALL=PART (tests only) makes that part hang after its work, as a
# hung GPU run would: the budget must still leave a report.
# Exit status: 0 every part done; 1 a part failed or did not run; 2 bad input
# (--budget not a positive number of seconds, an --out that cannot be written,
# a missing or broken bundle: one line on stderr).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"

usage="usage: scripts/device_check.sh --out DIR [--device cuda|cpu] [--bundle TARBALL|DIR] [--budget SECONDS]"
die() { echo "device_check: error: $*" >&2; exit 2; }
OUT="" DEVICE=cuda BUNDLE="" BUDGET=420
while [ $# -gt 0 ]; do
  case "$1" in
    --out|--device|--bundle|--budget) [ $# -ge 2 ] || die "$1 needs a value ($usage)" ;;&
    --out) OUT=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --bundle) BUNDLE=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) die "unknown argument $1 ($usage)" ;;
  esac
done
[[ "$BUDGET" =~ ^[0-9]+$ ]] && [ "$BUDGET" -gt 0 ] ||
  die "--budget $BUDGET: expected a positive whole number of seconds (default 420)"
case "$DEVICE" in cuda|cpu) ;; *) die "--device $DEVICE: expected cuda or cpu" ;; esac
[ -n "$OUT" ] || die "--out DIR is required ($usage)"
{ mkdir -p "$OUT" && touch "$OUT/.device_check_probe" && rm -f "$OUT/.device_check_probe"; } 2>/dev/null ||
  die "--out $OUT cannot be written"
OUT=$(cd "$OUT" && pwd)
if [ -n "$BUNDLE" ]; then
  [ -e "$BUNDLE" ] || die "--bundle $BUNDLE: no such file or folder (scripts/device_bundle.sh makes it)"
  BUNDLE=$(cd "$(dirname "$BUNDLE")" && pwd)/$(basename "$BUNDLE")
fi
# python3 with torch (the PyTorch peers; the bundle's LibTorch): the GPU machine's is
# /opt/torch/.venv's, on the PATH there; here the venv of scripts/torch_env.sh.
PY=""
for p in "${EGM_PYTHON:-}" "$(command -v python3 || true)" /opt/torch/.venv/bin/python3 \
         "${EGM_TORCH_HOME:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/egm/torch-2.11.0}/bin/python3"; do
  [ -n "$p" ] && [ -x "$p" ] || continue
  [ -n "$PY" ] || PY=$p  # without torch it still writes the report
  if "$p" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || die "no python3 (the check writes its report with it; torch's venv has one)"

STARTED=$(date +%s)
DEADLINE=$((STARTED + BUDGET))
RESERVE=8  # seconds kept for the last report and logs.tgz
WORK=$(mktemp -d "${TMPDIR:-/tmp}/egm-device-check.XXXXXX")
LOGS=$WORK/logs
RESULTS=$WORK/results
mkdir -p "$LOGS" "$RESULTS"
trap 'rm -rf "$WORK"' EXIT
: >"$WORK/parts.tsv"
rm -f "$OUT/report.md" "$OUT/report.json" "$OUT/logs.tgz" "$OUT/profile_summary.txt"
now() { date +%s; }
# Progress on stdout; stderr carries only the one-line errors (bad input).
log() { echo "[device_check $(( $(now) - STARTED ))s] $*" | tee -a "$LOGS/device_check.log"; }

# ---- the parts: name, cap (s), minimum worth starting with (s) --------------------
# Caps and minimums: tests/gpu/README.md ("The device check's order and budgets").
PART_LIST=(
  "preflight 60 10" "bench_base_bf16 50 15" "peer_eager_sdpa 75 20"
  "bench_ega_bf16 45 15" "bench_ega_causal_bf16 45 15" "bench_mope_bf16 45 15" "bench_ega_mope_bf16 45 15"
  "gpu_tests 90 20" "graphs 60 20" "sdpa_no_cudnn 60 20" "profile 45 15" "peer_compile 180 45"
  "nccl 60 15" "packing 90 30" "sweep_rpg4 150 45" "bench_base_fp32 45 15"
)

write_report() {
  "$PY" "$SRC/scripts/device_report.py" --parts "$WORK/parts.tsv" --parts-order "${PART_LIST[*]}" \
    --results "$RESULTS" --logs "$LOGS" --machine "$WORK/machine.txt" --out "$OUT" --device "$DEVICE" \
    --preset "$PRESET" --budget "$BUDGET" --elapsed "$(( $(now) - STARTED ))" 2>>"$LOGS/device_check.log" ||
    log "warning: the report writer failed (see device_check.log)"
}
pack_logs() { tar -czf "$OUT/logs.tgz.part" -C "$WORK" logs 2>/dev/null && mv "$OUT/logs.tgz.part" "$OUT/logs.tgz"; }
# record NAME STATUS SECONDS TIMEOUT NOTE: one line per change; the last line of a part wins.
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5//$'\t'/ }" >>"$WORK/parts.tsv"; }

# ---- where the binaries and libraries come from ------------------------------------
PRESET=tiny
if [ "$DEVICE" = cuda ]; then PRESET=paper; fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -n), $(nproc) cores, kernel $(uname -r)"
  echo "budget: $BUDGET s, device $DEVICE, preset $PRESET"
} >"$WORK/machine.txt"
BDIR=""
if [ -n "$BUNDLE" ]; then
  if [ -d "$BUNDLE" ]; then
    BDIR=$BUNDLE
  else
    mkdir -p "$WORK/bundle"
    tar -xzf "$BUNDLE" -C "$WORK/bundle" 2>"$LOGS/unpack.log" || {
      record preflight failed 0 0 "the bundle $BUNDLE did not unpack"; write_report; pack_logs
      die "--bundle $BUNDLE did not unpack: $(head -n 1 "$LOGS/unpack.log")"; }
    BDIR=$WORK/bundle/device-bundle
  fi
  [ -x "$BDIR/bin/egm" ] || {
    record preflight failed 0 0 "the bundle has no bin/egm"; write_report; pack_logs
    die "--bundle $BUNDLE has no bin/egm (scripts/device_bundle.sh makes it)"; }
  BIN=$BDIR/bin
  cat "$BDIR/MANIFEST" >>"$WORK/machine.txt" 2>/dev/null
  torch_dir=$("$PY" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("torch").origin))' 2>>"$LOGS/device_check.log")
  [ -d "$torch_dir/lib" ] || die "$PY has no torch (the bundle's binaries load its LibTorch)"
  nv=$(find "$(dirname "$torch_dir")/nvidia" -maxdepth 3 -type d -name lib 2>/dev/null | tr '\n' ':')
  # Only egm's processes see the carried libraries (older than that machine's own:
  # python3 there keeps its own libz, libssl, ...).
  EGM_LD="$BDIR/lib:$torch_dir/lib:$nv${LD_LIBRARY_PATH:-}"
  if [ -d "$BDIR/openmpi" ]; then
    # Open MPI from the bundle, where it lies (not unpacked into /): its install
    # folders relocated through Open MPI's and PMIx's own variables.
    R=$BDIR/openmpi
    ML=$R/usr/lib/x86_64-linux-gnu
    export OPAL_PREFIX=$R/usr OPAL_EXEC_PREFIX=$R/usr OPAL_BINDIR=$R/usr/bin OPAL_LIBDIR=$ML/openmpi/lib
    export OPAL_PKGLIBDIR=$ML/openmpi/lib/openmpi3 OPAL_DATAROOTDIR=$R/usr/share OPAL_DATADIR=$R/usr/share
    export OPAL_PKGDATADIR=$R/usr/share/openmpi OPAL_SYSCONFDIR=$R/etc/openmpi
    export PMIX_INSTALL_PREFIX=$ML/pmix2 PMIX_MCA_mca_base_component_path=$ML/pmix2/lib/pmix
    export PATH=$R/usr/bin:$PATH
    EGM_LD="$ML:$ML/openmpi/lib:$ML/pmix2/lib:$EGM_LD"
  fi
else
  BUILD=$(cd "${EGM_BUILD_DIR:-build}" 2>/dev/null && pwd) || die "no build folder ${EGM_BUILD_DIR:-build}: run scripts/setup.sh"
  [ -x "$BUILD/bin/egm" ] || die "no $BUILD/bin/egm: run scripts/setup.sh first"
  BIN=$BUILD/bin
  for t in tests/gpu/test_gpu tests/dist/test_nccl_link; do [ -x "$BUILD/$t" ] && ln -sf "$BUILD/$t" "$WORK/$(basename "$t")"; done
  echo "egm commit: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown) (build folder $BUILD)" >>"$WORK/machine.txt"
  EGM_LD=${LD_LIBRARY_PATH:-}
fi
EGM=$BIN/egm
TEST_GPU=$BIN/test_gpu; [ -x "$TEST_GPU" ] || TEST_GPU=$WORK/test_gpu
TEST_NCCL=$BIN/test_nccl_link; [ -x "$TEST_NCCL" ] || TEST_NCCL=$WORK/test_nccl_link
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader GTEST_COLOR=no
# Open MPI on a machine nobody configured, for every mpirun (the NCCL part's and egm
# sweep's): the ob1 messaging layer over self/vader (never UCX), vader without a
# single-copy mechanism (CMA and XPMEM need ptrace rights or a kernel module a
# container may lack), and no binding of ranks to cores (packed runs share them).
export OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none
# NCCL: warnings only, bootstrapped over the loopback interface (one machine).
export NCCL_DEBUG=WARN NCCL_SOCKET_IFNAME=lo
# Python: lines reach the logs as they are printed (a part cut by its cap keeps its
# last lines); torch.compile's caches in the work folder, not in a home that may be
# read-only or shared.
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=$WORK/triton_cache TORCHINDUCTOR_CACHE_DIR=$WORK/inductor_cache
export EGM_DATA=${EGM_DATA:-$SRC/../shared/data/tinyshakespeare/input.txt}
if [ ! -f "$EGM_DATA" ]; then
  # Timing and the sweep need text, not Shakespeare: a fixed synthetic corpus.
  EGM_DATA="$WORK/corpus.txt"
  "$PY" -c 'import random; r=random.Random(0); w=["the","king","and","of","to","my","lord","a","I","you","that","in","is","not","with"]; print("\n".join(" ".join(r.choice(w) for _ in range(12)) for _ in range(40000)))' >"$EGM_DATA"
fi
echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null || echo '?') ($PY)" >>"$WORK/machine.txt"
if [ "$DEVICE" = cuda ]; then
  WARMUP=5 TIMED=20 THREADS=0 SWEEP_STEPS="" SWEEP_WORKERS=4 PEER_WARMUP=5 PEER_TIMED=20
else
  # One thread: on a small CPU machine more threads than free cores make LibTorch spin.
  WARMUP=1 TIMED=3 THREADS=1 SWEEP_STEPS=30 SWEEP_WORKERS=2 PEER_WARMUP=1 PEER_TIMED=3
fi
export SRC DEVICE PRESET PY EGM EGM_LD BIN TEST_GPU TEST_NCCL WORK LOGS RESULTS OUT WARMUP TIMED THREADS \
  SWEEP_STEPS SWEEP_WORKERS PEER_WARMUP PEER_TIMED BUNDLE BDIR

# ---- the parts' work (each runs in its own bash under `timeout`) ----------------------
# emit PART JSON...: appends result rows (one JSON object per argument) for the report.
emit() { local part=$1; shift; for j in "$@"; do echo "$j" >>"$RESULTS/$part.jsonl"; done; }
# egm_bench PART VARIANT PRECISION [more egm bench flags]: one egm bench, its JSON as a
# result row (with $SETTING, when set, saying what the row varies). Under --device cuda
# a row without GPU memory (the CUDA paths missing from the build) or, on the sdpa
# path, without the SDPA backend it ran on fails.
egm_bench() {
  local part=$1 variant=$2 precision=$3
  shift 3
  local out="$WORK/bench_${part}_$$_$RANDOM.json"
  env LD_LIBRARY_PATH="$EGM_LD" "$EGM" bench --preset "$PRESET" --variant "$variant" --device "$DEVICE" \
    --threads "$THREADS" --set "train.precision=$precision" --warmup "$WARMUP" --timed-steps "$TIMED" --json "$@" \
    >"$out" || return 1
  "$PY" - "$out" "$part" "$precision" "$DEVICE" "${SETTING:-}" >>"$RESULTS/$part.jsonl" <<'PY' || return 1
import json, sys
path, part, precision, device, setting = sys.argv[1:]
d = json.loads(open(path).read().strip().splitlines()[-1])
d["part"], d["precision"] = part, d.get("precision", precision)
if setting:
    d["setting"] = setting
# One write for the line and its newline: packed runs append to one file at once, and the check's
# unbuffered Python would write them apart (print's two writes interleave into an unreadable line).
sys.stdout.write(json.dumps(d) + "\n")
if device == "cuda" and not (d.get("peak_gpu_mb") or 0) > 0:
    sys.exit(f"{part}: peak_gpu_mb is {d.get('peak_gpu_mb')}: the run allocated no GPU memory "
             "(is this egm built with its CUDA paths?)")
if device == "cuda" and d.get("attention_path") == "sdpa" and not d.get("sdpa_backend"):
    sys.exit(f"{part}: the sdpa path ran but no SDPA backend was recorded")
PY
}
part_preflight() {
  local files=() missing="" versions="" f problems ldd_state=checked
  for f in "$BIN"/* ${BDIR:+"$BDIR"/lib/*}; do [ -f "$f" ] && files+=("$f"); done
  if [ -d "${BDIR:-}/openmpi" ]; then
    while IFS= read -r f; do files+=("$f"); done < <(find "$BDIR/openmpi" -type f \( -name '*.so*' -o -perm -u+x \) )
  fi
  if ! command -v ldd >/dev/null; then
    # Not a broken bundle: nothing here can say. The tiny bench below shows whether egm loads.
    ldd_state=none
    echo "no ldd: the bundle's ${#files[@]} binaries and libraries were not checked"
  else
    # One ldd per ELF file, as many at once as there are cores. "missing FILE needs LIB ..."
    # for a library not found; "version FILE: LIB: version \`GLIBC_2.38' not found" for a
    # C or C++ runtime older than the bundle's build (listed apart: not a missing library).
    problems=$(printf '%s\0' "${files[@]}" | LD_LIBRARY_PATH=$EGM_LD ROOT=${BDIR:-$BIN} xargs -0 -n 8 -P "$(nproc)" bash -c '
      for f in "$@"; do
        [ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d " ")" = 177ELF ] || continue
        out=$(ldd "$f" 2>&1)
        miss=$(grep "=> not found" <<<"$out" | awk "{print \$1}" | sort -u | paste -sd " ")
        [ -z "$miss" ] || echo "missing ${f#"$ROOT"/} needs $miss"
        grep "version .* not found" <<<"$out" | sed -E "s/^[[:space:]]+//; s/ \(required by [^)]*\)$//" | sort -u |
          while IFS= read -r v; do echo "version ${f#"$ROOT"/}: $v"; done
      done' ldd_check | sort)
    missing=$(sed -n 's/^missing //p' <<<"$problems")
    versions=$(sed -n 's/^version //p' <<<"$problems")
    echo "ldd: ${#files[@]} files checked"
  fi
  if [ -n "$versions" ]; then
    printf '%s\n' "$versions" >"$WORK/version_mismatches.txt"
    printf 'older C/C++ runtime here than the bundle was built against ("version not found"):\n%s\n' "$versions"
  fi
  if [ -n "$missing" ]; then
    printf '%s\n' "$missing" >"$WORK/missing_libraries.txt"
    printf 'missing libraries:\n%s\n' "$missing"
    emit preflight "$("$PY" -c 'import json,sys; print(json.dumps({"part":"preflight","missing":sys.argv[1].strip().splitlines(),"version_mismatches":sys.argv[2].strip().splitlines()}))' "$missing" "$versions")"
    return 3
  fi
  local smi ssh mpirun
  if command -v nvidia-smi >/dev/null; then
    smi=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1) || smi="none ($smi)"
  else
    smi="none (not installed)"
  fi
  ssh=$(command -v ssh || command -v rsh || echo none)
  mpirun=$(command -v mpirun || echo none)
  echo "nvidia-smi: $smi"; echo "ssh: $ssh"; echo "mpirun: $mpirun"
  emit preflight "$("$PY" -c 'import json,sys; print(json.dumps({"part":"preflight","files_checked":int(sys.argv[1]),"ldd":sys.argv[5],"nvidia_smi":sys.argv[2],"ssh":sys.argv[3],"mpirun":sys.argv[4],"version_mismatches":sys.argv[6].strip().splitlines()}))' "${#files[@]}" "$smi" "$ssh" "$mpirun" "$ldd_state" "$versions")"
  if [ "$DEVICE" = cuda ] && [[ "$smi" == none* ]]; then echo "no GPU: nvidia-smi failed"; return 1; fi
  local saved_preset=$PRESET saved_timed=$TIMED
  if ! PRESET=tiny TIMED=3 egm_bench preflight base fp32; then
    [ -z "$versions" ] || { echo "egm does not run here: the C/C++ runtime is older than the bundle needs (above)"; return 5; }
    return 1
  fi
  PRESET=$saved_preset TIMED=$saved_timed
  # The device's matrix-product rate, measured alone: the packed runs take it for their MFU.
  "$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["matmul_gflops"])' \
    "$RESULTS/preflight.jsonl" >"$WORK/matmul_gflops" || rm -f "$WORK/matmul_gflops"
}
part_gpu_tests() {
  [ -x "$TEST_GPU" ] || { echo "no test_gpu binary"; return 1; }
  env LD_LIBRARY_PATH="$EGM_LD" "$TEST_GPU" --gtest_output="json:$WORK/gpu_tests.json"
  local rc=$?
  "$PY" - "$WORK/gpu_tests.json" "$rc" "$DEVICE" >>"$RESULTS/gpu_tests.jsonl" <<'PY'
import json, sys
path, rc, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    cases = [c for s in json.load(open(path)).get("testsuites", []) for c in s.get("testsuite", [])]
except Exception:
    cases = []
skipped = [c["classname"] + "." + c["name"] for c in cases if c.get("result") == "SKIPPED"]
failed = [c["classname"] + "." + c["name"] for c in cases if c.get("failures")]
print(json.dumps({"part": "gpu_tests", "exit": rc, "tests": len(cases), "failed": failed, "skipped": skipped}))
PY
  [ "$rc" = 0 ] || return 1
  if [ "$DEVICE" = cuda ]; then
    "$PY" -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1]); sys.exit(1 if r["skipped"] or not r["tests"] else 0)' \
      "$RESULTS/gpu_tests.jsonl" || { echo "under --device cuda a skipped GPU test is a failure"; return 1; }
  fi
}
part_bench() { egm_bench "$PART" "$1" "$2"; }
part_graphs() {
  if [ "$DEVICE" != cuda ]; then echo "CUDA graphs capture GPU kernels: not run on $DEVICE"; return 0; fi
  SETTING=cuda_graphs egm_bench graphs base bf16 --set train.cuda_graphs=true || return 1
  SETTING="kernels path, LibTorch AdamW" egm_bench graphs base bf16 --set model.attention_path=kernels \
    --set train.optimizer_path=libtorch
}
part_sdpa_no_cudnn() {
  if [ "$DEVICE" != cuda ]; then echo "cuDNN's SDPA is a CUDA backend: not run on $DEVICE"; return 0; fi
  local v ok=0
  for v in base ega; do
    TORCH_CUDNN_SDPA_DEPRIORITIZED=1 SETTING="TORCH_CUDNN_SDPA_DEPRIORITIZED=1" egm_bench sdpa_no_cudnn "$v" bf16 || ok=1
  done
  return $ok
}
part_profile() {
  egm_bench profile base bf16 --profile "$LOGS/profile_trace.json" --count-ops || return 1
  "$PY" "$SRC/tests/bench/profile_summary.py" "$LOGS/profile_trace.json" --top 30 --json "$WORK/profile.json" \
    >"$OUT/profile_summary.txt" || return 1
  cat "$OUT/profile_summary.txt"
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["part"]="profile"; print(json.dumps(d))' "$WORK/profile.json" \
    >>"$RESULTS/profile.jsonl"
  # On CUDA a trace without kernels means the profiler saw no GPU (CUPTI): a failure, not a number.
  if [ "$DEVICE" = cuda ]; then
    "$PY" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["kernels"] > 0 else 1)' "$WORK/profile.json" ||
      { echo "the trace holds no GPU kernels (is CUPTI loadable?)"; return 1; }
  fi
}
part_nccl() {
  [ -x "$TEST_NCCL" ] || { echo "no test_nccl_link binary (built only when NCCL is found)"; return 1; }
  command -v mpirun >/dev/null || { echo "no mpirun (neither in the bundle nor on the PATH)"; return 1; }
  local np rc ok=0
  for np in 1 2; do
    env LD_LIBRARY_PATH="$EGM_LD" mpirun --mca plm isolated --mca pml ob1 --mca btl_vader_single_copy_mechanism none \
      --bind-to none --oversubscribe -np "$np" \
      bash -c 'exec "$0" --gtest_output="json:$1/nccl_np'"$np"'_rank${OMPI_COMM_WORLD_RANK}.json"' "$TEST_NCCL" "$WORK"
    rc=$?
    "$PY" - "$WORK" "$np" "$rc" "$DEVICE" >>"$RESULTS/nccl.jsonl" <<'PY' || ok=1
import glob, json, sys
work, np, rc, device = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ranks = {}
for path in sorted(glob.glob(f"{work}/nccl_np{np}_rank*.json")):
    cases = [c for s in json.load(open(path)).get("testsuites", []) for c in s.get("testsuite", [])]
    ranks[path.rsplit("rank", 1)[1][:-5]] = {c["classname"] + "." + c["name"]:
                                             "failed" if c.get("failures") else c.get("result", "?").lower()
                                             for c in cases}
# What each rank must show: with one rank the collectives run on the GPU; two
# ranks on one GPU are refused cleanly (share the GPU), on every rank alike.
# Without a GPU (the CPU rehearsal) both counts are refused cleanly.
gpu = device == "cuda"
want = {"NcclLink.TheLinkedLibraryIsTheHeadersVersion": "completed",
        "NcclLink.CheckMacrosCarryTheLibrariesOwnText": "completed"}
if gpu and np == 1:
    want["NcclOnGpus.AllreduceMeanAndBroadcastOnCudaTensors"] = "completed"
else:
    want["NcclLink.WithoutAGpuPerRankEveryRankFailsAlikeWithAClearMessage"] = "completed"
problems = [] if rc == 0 else [f"mpirun exit {rc}"]
if len(ranks) != np:
    problems.append(f"{len(ranks)} rank reports, want {np}")
for r, got in ranks.items():
    for name, result in want.items():
        if got.get(name) != result:
            problems.append(f"rank {r}: {name} {got.get(name, 'missing')}, want {result}")
print(json.dumps({"part": "nccl", "ranks": np, "exit": rc, "results": ranks, "problems": problems}))
sys.exit(1 if problems else 0)
PY
  done
  return $ok
}
part_packing() {
  local n i pids ok=0 rate=""
  [ -s "$WORK/matmul_gflops" ] && rate=$(cat "$WORK/matmul_gflops")
  for n in 1 2 4; do
    pids=()
    # On a GPU the n runs share the host's cores too (egm bench --threads 0 would give each all of them).
    [ "$DEVICE" = cuda ] && THREADS=$(( $(nproc) / n > 0 ? $(nproc) / n : 1 ))
    for ((i = 0; i < n; i++)); do
      # The preflight's rate: a GEMM loop at each run's end would overlap the others' timed steps.
      PART=packing_$n egm_bench "packing_$n" base bf16 ${rate:+--matmul-gflops "$rate"} >"$LOGS/packing_${n}_$i.log" 2>&1 &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || ok=1; done
    for ((i = 0; i < n; i++)); do echo "-- run $i of $n:"; tail -n 3 "$LOGS/packing_${n}_$i.log"; done
    "$PY" - "$RESULTS/packing_$n.jsonl" "$n" >>"$RESULTS/packing.jsonl" <<'PY' || ok=1
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
# Always one row, whatever the runs left behind: a run that failed or a line that does not parse is
# counted and named here, so the report says which of the n runs is missing and why.
rows, bad = [], []
try:
    lines = [l for l in open(path) if l.strip()]
except OSError as e:
    lines, bad = [], [f"no results file: {e.strerror}"]
for l in lines:
    try:
        r = json.loads(l)
        if float(r["ms_per_step"]) > 0:
            rows.append(r)
        else:
            bad.append(f"ms_per_step {r['ms_per_step']}")
    except (ValueError, KeyError, TypeError) as e:
        bad.append(f"unreadable row ({type(e).__name__}): {l[:120]!r}")
ms = [r["ms_per_step"] for r in rows]
print(json.dumps({"part": "packing", "runs": n, "finished": len(rows), "ms_per_step": ms,
                  "steps_per_s_total": sum(1000.0 / m for m in ms) if len(ms) == n else None,
                  "matmul_from_preflight": bool(rows) and all(r.get("matmul_measured") is False for r in rows),
                  **({"problems": bad} if bad else {})}))
sys.exit(0 if len(ms) == n else 1)
PY
    rm -f "$RESULTS/packing_$n.jsonl"
  done
  return $ok
}
part_sweep() {
  local spec="$WORK/quick_rpg4.json" t0 t1 rc
  "$PY" - "$SRC/experiments/quick.json" "$spec" "$SWEEP_STEPS" <<'PY' || return 1
import json, sys
src, dst, steps = sys.argv[1:]
spec = json.load(open(src))
spec["name"], spec["runs_per_gpu"] = "quick_rpg4", 4
if steps:  # the CPU rehearsal: tiny cells
    spec.update(preset="tiny", overrides={}, steps=int(steps), eval_interval=int(steps))
json.dump(spec, open(dst, "w"), indent=2)
PY
  t0=$(date +%s.%N)
  env LD_LIBRARY_PATH="$EGM_LD" "$EGM" sweep "$spec" --device "$DEVICE" --workers "$SWEEP_WORKERS" \
    --db "$WORK/sweep.sqlite" --runs-dir "$WORK/runs" --view plain
  rc=$?
  t1=$(date +%s.%N)
  "$PY" - "$WORK/sweep.sqlite" "$t0" "$t1" "$rc" "$SWEEP_WORKERS" >>"$RESULTS/sweep_rpg4.jsonl" <<'PY'
import json, sqlite3, sys
db, t0, t1, rc, workers = sys.argv[1:]
wall, done, cells = float(t1) - float(t0), 0, 0
try:
    con = sqlite3.connect(db)
    done, cells = con.execute("SELECT sum(status = 'done'), count(*) FROM cells").fetchone()
except Exception:
    pass
print(json.dumps({"part": "sweep_rpg4", "runs_per_gpu": 4, "workers": int(workers), "exit": int(rc),
                  "cells": cells, "cells_done": done, "wall_s": round(wall, 1),
                  "cells_per_hour": round(done / wall * 3600, 1) if wall > 0 and done else None}))
PY
  return $rc
}
# part_peer 0: eager; part_peer 1: torch.compile, mode default then reduce-overhead.
part_peer() {
  local compile=$1 threads=$THREADS flags=() cc mode modes=(none) ok=0
  [ "$threads" = 0 ] && threads=$(nproc)
  # What a PyTorch user who wants speed writes on a GPU: AdamW's fused kernel.
  [ "$DEVICE" = cuda ] && flags+=(--fused-adamw)
  if [ "$compile" = 1 ]; then
    modes=(default reduce-overhead)
    for cc in cc gcc clang; do command -v "$cc" >/dev/null && break; cc=""; done
    # Exit 4: skipped where that is no failure (the CPU rehearsal's bare root), failed on a GPU.
    [ -n "$cc" ] || { echo "no C compiler here: torch.compile (inductor, triton) needs one"; return 4; }
  fi
  for mode in "${modes[@]}"; do
    local extra=() out="$WORK/peer_${compile}_$mode.json"
    [ "$mode" = none ] || extra=(--compile --compile-mode "$mode")
    "$PY" "$SRC/tests/bench/pytorch_step.py" --preset "$PRESET" --variant base --style sdpa --device "$DEVICE" \
      --precision bf16 --threads "$threads" --warmup "$PEER_WARMUP" --timed-steps "$PEER_TIMED" "${flags[@]}" \
      "${extra[@]}" >"$out" || { ok=1; continue; }
    cat "$out"
    "$PY" -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); d["part"]=sys.argv[2]; print(json.dumps(d))' \
      "$out" "$PART" >>"$RESULTS/$PART.jsonl"
  done
  return $ok
}
export -f emit egm_bench part_preflight part_gpu_tests part_bench part_graphs part_sdpa_no_cudnn part_profile part_nccl \
  part_packing part_sweep part_peer

# run_part NAME CAP MIN COMMAND...: COMMAND (a part_ function and its arguments) under
# the smaller of CAP and the time left; recorded before and after.
BROKEN_BUNDLE=""
run_part() {
  local name=$1 cap=$2 min=$3
  shift 3
  local left=$((DEADLINE - $(now) - RESERVE))
  if [ -n "$BROKEN_BUNDLE" ]; then
    record "$name" not_run 0 0 "not run: the bundle is broken (preflight)"
    return
  fi
  if [ "$left" -lt "$min" ]; then
    record "$name" not_run 0 0 "not run for lack of time: ${left}s of the budget left, it needs ${min}s at least (cap ${cap}s)"
    log "$name: not run (${left}s left)"
    return
  fi
  local t=$((cap < left ? cap : left)) t0 rc
  record "$name" running 0 "$t" "running (timeout ${t}s)"
  write_report
  log "$name: start (timeout ${t}s)"
  t0=$(now)
  local run=('"$@"')
  [ "${EGM_DEVICE_CHECK_STALL:-}" = "$name" ] && run=('"$@"; echo "stalling (EGM_DEVICE_CHECK_STALL)"; exec sleep 100000')
  PART=$name timeout -k 5 "$t" bash -c "${run[0]}" part "$@" >"$LOGS/$name.log" 2>&1 </dev/null
  rc=$?
  local secs=$(( $(now) - t0 ))
  case $rc in
    0) record "$name" done "$secs" "$t" "" ;;
    124|137) if [ "$t" -lt "$cap" ]; then
               record "$name" failed "$secs" "$t" "cut at ${t}s: the budget ran out (cap ${cap}s)"
             else
               record "$name" failed "$secs" "$t" "timed out after ${t}s (its cap)"
             fi ;;
    3) record "$name" failed "$secs" "$t" "the bundle lacks libraries (ldd: not found)"; BROKEN_BUNDLE=1 ;;
    5) record "$name" failed "$secs" "$t" "egm does not run: this machine's C/C++ runtime is older than the bundle's (version not found)"
       BROKEN_BUNDLE=1 ;;
    4) if [ "$DEVICE" = cpu ]; then record "$name" skipped "$secs" "$t" "$(tail -n 1 "$LOGS/$name.log")"
       else record "$name" failed "$secs" "$t" "$(tail -n 1 "$LOGS/$name.log")"; fi ;;
    *) record "$name" failed "$secs" "$t" "exit $rc" ;;
  esac
  log "$name: exit $rc after ${secs}s"
  write_report
  pack_logs
}

for p in "${PART_LIST[@]}"; do record ${p%% *} pending 0 0 ""; done
write_report
for p in "${PART_LIST[@]}"; do
  read -r name cap min <<<"$p"
  case $name in
    preflight) run_part "$name" "$cap" "$min" part_preflight ;;
    gpu_tests) run_part "$name" "$cap" "$min" part_gpu_tests ;;
    profile) run_part "$name" "$cap" "$min" part_profile ;;
    graphs) run_part "$name" "$cap" "$min" part_graphs ;;
    sdpa_no_cudnn) run_part "$name" "$cap" "$min" part_sdpa_no_cudnn ;;
    nccl) run_part "$name" "$cap" "$min" part_nccl ;;
    packing) run_part "$name" "$cap" "$min" part_packing ;;
    sweep_rpg4) run_part "$name" "$cap" "$min" part_sweep ;;
    peer_eager_sdpa) run_part "$name" "$cap" "$min" part_peer 0 ;;
    peer_compile) run_part "$name" "$cap" "$min" part_peer 1 ;;
    bench_*) v=${name#bench_}; run_part "$name" "$cap" "$min" part_bench "${v%_*}" "${v##*_}" ;;
  esac
done
write_report
pack_logs
log "done in $(( $(now) - STARTED ))s of ${BUDGET}s; report in $OUT/report.md"
if [ -n "$BROKEN_BUNDLE" ] && [ -s "$WORK/missing_libraries.txt" ]; then
  die "the bundle lacks libraries: $(head -n 1 "$WORK/missing_libraries.txt")$([ "$(wc -l <"$WORK/missing_libraries.txt")" -gt 1 ] && echo "; report.md lists every one")"
elif [ -n "$BROKEN_BUNDLE" ]; then
  die "egm does not run here: this machine's C/C++ runtime is older than the bundle's: $(head -n 1 "$WORK/version_mismatches.txt" 2>/dev/null)"
fi
"$PY" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["ok"] else 1)' "$OUT/report.json"
