#!/usr/bin/env bash
# The device from every front door, refused in one line before anything is
# written when it cannot be had: a device that does not exist (flag or spec
# field), CUDA on a machine without a GPU (this one; on a GPU machine those
# checks are skipped and the placement ones below still run), more workers
# than GPU slots in a submission, and runs that cannot fit in memory. An
# accepted CUDA submission trains on the GPUs it asks for: the rendered batch
# script's launch carries --device cuda and G x runs_per_gpu workers.
#   sweep_device.sh EGM WORK
source "$(dirname "$0")/lib.sh"

spec() {  # spec NAME EXTRA_JSON: a one-cell tiny spec with extra top-level fields
  printf '{"name": "%s", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1], "steps": 4%s}\n' "$1" "$2" \
    >"$WORK/$1.json"
}
refused() {  # refused WHAT EXPECTED_MESSAGE COMMAND...: exit 2, one line on stderr, no database, no run folder
  local what=$1 message=$2
  shift 2
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
  local status=$?
  expect_eq "$what: exit status" 2 "$status"
  expect_in_file "$what: message" "$message" "$WORK/err.txt"
  expect_eq "$what: one line on stderr" 1 "$(wc -l <"$WORK/err.txt")"
  [ ! -e "$DB" ] || fail "$what: the database was created"
  [ ! -e "$RUNS" ] || fail "$what: a run folder was created"
}

spec plain ''
refused "sweep --device tpu" "--device: unknown device 'tpu'" \
  "$EGM" sweep "$WORK/plain.json" --device tpu --db "$DB" --runs-dir "$RUNS"
refused "train --device tpu" "--device: unknown device 'tpu'" \
  "$EGM" train --preset tiny --variant base --steps 2 --device tpu --out "$RUNS/one"
spec bad_field ', "device": "gpu"'
refused "spec device field" "\$.device: unknown device 'gpu'" \
  "$EGM" sweep "$WORK/bad_field.json" --db "$DB" --runs-dir "$RUNS"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" = 0 ]; then
  refused "sweep --device cuda without a GPU" "no GPU is visible" \
    "$EGM" sweep "$WORK/plain.json" --device cuda --db "$DB" --runs-dir "$RUNS"
  refused "sweep --device cuda:7 without a GPU" "no GPU is visible" \
    "$EGM" sweep "$WORK/plain.json" --device cuda:7 --db "$DB" --runs-dir "$RUNS"
  spec cuda_field ', "device": "cuda"'
  refused "spec device cuda without a GPU" "no GPU is visible" \
    "$EGM" sweep "$WORK/cuda_field.json" --db "$DB" --runs-dir "$RUNS"
  refused "train --device cuda without a GPU" "no GPU is visible" \
    "$EGM" train --preset tiny --variant base --steps 2 --device cuda --out "$RUNS/one"
fi

# Memory: cells whose batch cannot fit in this host's memory, with the estimate and the limit.
spec huge ', "overrides": {"train": {"batch_size": 1000000}}'
refused "sweep of runs that cannot fit" "need about" \
  "$EGM" sweep "$WORK/huge.json" --workers 2 --db "$DB" --runs-dir "$RUNS"
expect_in_file "the estimate is itemised" "attention" "$WORK/err.txt"

# Submissions (dry runs: nothing written, nothing submitted).
spec packed ', "runs_per_gpu": 2'
refused "submit: more workers than GPU slots" "hold 4 workers" \
  "$EGM" submit "$WORK/packed.json" --slurm --gpus-per-node 2 --workers 5 --dry-run --db "$DB"
"$EGM" submit "$WORK/packed.json" --slurm --gpus-per-node a100:2 --dry-run --db "$DB" >"$WORK/script.sh" 2>"$WORK/err.txt"
expect_eq "submit with GPUs: exit status" 0 $?
expect_in_file "the job trains on the GPUs" "--device cuda" "$WORK/script.sh"
expect_in_file "4 workers: 4 cells, 2 GPUs x runs_per_gpu 2" ": -np 4 " "$WORK/script.sh"
expect_in_file "the allocation has the GPUs" "#SBATCH --gpus-per-node=a100:2" "$WORK/script.sh"
"$EGM" submit "$WORK/packed.json" --slurm --gpus-per-node 2 --device cpu --dry-run --db "$DB" >"$WORK/cpu.sh" 2>/dev/null
expect_in_file "--device cpu wins over the GPUs" "--device cpu" "$WORK/cpu.sh"
"$EGM" submit "$WORK/plain.json" --slurm --dry-run --db "$DB" >"$WORK/nogpu.sh" 2>/dev/null
grep -qF -- "--device cuda" "$WORK/nogpu.sh" && fail "a submission without GPUs asked for CUDA"
[ ! -e "$DB" ] || fail "a dry run created the database"
finish
