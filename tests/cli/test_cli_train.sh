#!/usr/bin/env bash
# End-to-end checks of `egm train`, `egm audit causality`, `egm data` and
# `egm bench` through the real binary: outputs, exit codes, error messages.
set -euo pipefail
EGM=${1:?usage: test_cli_train.sh path/to/egm}
: "${EGM_DATA:?set EGM_DATA to the TinyShakespeare corpus}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A short run: progress lines, files, resumable.
"$EGM" train --preset tiny --variant ega_mope --seed 3 --steps 20 --out "$work/run" > "$work/out.txt"
grep -q "^step     20/20" "$work/out.txt" || fail "no progress line for step 20"
grep -q "^val_full" "$work/out.txt" || fail "no full-validation line"
grep -q "^done at step 20" "$work/out.txt" || fail "no done line"
test -s "$work/run/config.json" || fail "config.json missing"
test -s "$work/run/checkpoint.egmc" || fail "checkpoint missing"
grep -q '"kind":"params"' "$work/run/metrics.jsonl" || fail "no learned-parameter records"
grep -q '"module":"mope"' "$work/run/metrics.jsonl" || fail "no MoPE parameters recorded"
grep -q '"module":"ega"' "$work/run/metrics.jsonl" || fail "no EGA parameters recorded"
# Running it again finds it complete and trains nothing.
"$EGM" train --preset tiny --variant ega_mope --seed 3 --steps 20 --out "$work/run" > "$work/again.txt"
grep -q "already complete" "$work/again.txt" || fail "a finished run was trained again"
# Another config into the same directory is refused.
if "$EGM" train --preset tiny --variant base --seed 3 --steps 20 --out "$work/run" 2> "$work/err.txt"; then
  fail "a checkpoint of another config was accepted"
fi
grep -q "another run config" "$work/err.txt" || fail "unclear message for a foreign checkpoint: $(cat "$work/err.txt")"

# Bad input: non-zero exit and a message that names the problem.
expect_error() {
  local pattern=$1; shift
  if "$EGM" "$@" > /dev/null 2> "$work/err.txt"; then fail "accepted: $*"; fi
  grep -q -- "$pattern" "$work/err.txt" || fail "message for '$*' lacks '$pattern': $(cat "$work/err.txt")"
}
expect_error "unknown variant 'nosuch'" train --variant nosuch --out "$work/x"
expect_error "must be divisible by model.n_head" train --set model.n_head=3 --out "$work/x"
expect_error "model.n_layer must be >= 1" train --set model.n_layer=-2 --out "$work/x"
expect_error "unknown key" train --set model.colour=3 --out "$work/x"
expect_error "corpus not found at /nonexistent/input.txt" train --data /nonexistent/input.txt --out "$work/x"

# Causality audit: exit status says which.
"$EGM" audit causality --variant ega_causal > "$work/audit.txt" || fail "ega_causal audited non-causal"
grep -q "ega_causal .* causal" "$work/audit.txt" || fail "audit table missing"
set +e
"$EGM" audit causality --variant ega > "$work/audit.txt"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "ega must audit non-causal (exit 1), got $rc"
grep -q "NON-CAUSAL" "$work/audit.txt" || fail "ega verdict missing"

# Corpus verification and the benchmark's output format.
"$EGM" data verify "$EGM_DATA" | grep "ok, 1115394 characters, vocabulary 65" >/dev/null || fail "data verify"
echo "not shakespeare" > "$work/bad.txt"
expect_error "checksum mismatch" data verify "$work/bad.txt"
"$EGM" bench --preset tiny --variant base --warmup 1 --timed-steps 3 | grep -E "^[0-9.]+ tokens/s$" >/dev/null || fail "bench output"
# The SDPA backend the model's attention ran on (LibTorch's CPU choice: flash for the bare
# causal call), and a given matrix-product rate taken instead of measured.
"$EGM" bench --preset tiny --variant base --set model.attention_path=sdpa --set model.dropout=0 --warmup 1 \
  --timed-steps 1 --json --matmul-gflops 12.5 >"$work/bench.json" || fail "bench --json --matmul-gflops"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if (d["sdpa_backend"], d["sdpa_refused"], d["matmul_gflops"], d["matmul_measured"]) == ("flash", [], 12.5, False) else d)' \
  "$work/bench.json" || fail "bench --json: the SDPA backend or the given rate"
expect_error "--matmul-gflops: expected a positive rate in GFLOP/s, got 0" bench --preset tiny --matmul-gflops 0
echo "cli train/audit/data/bench: ok"
