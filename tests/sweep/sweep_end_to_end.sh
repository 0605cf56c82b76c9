#!/usr/bin/env bash
# egm sweep end to end: experiments/tiny.json (4 variants x 3 seeds) with
# 1 coordinator + 2 workers under mpirun. Every cell done exactly once,
# metrics and learned parameters stored, egm status/runs/query show them, and
# running the spec again runs nothing.
#   sweep_end_to_end.sh EGM WORK
source "$(dirname "$0")/lib.sh"

"$EGM" sweep "$EXPERIMENTS/tiny.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/out.txt" 2>&1
expect_eq "exit status" 0 $?
expect_all_done_once "$DB" 12
expect_in_file "the 2x2 table (analysis layer)" "Student-t intervals over seeds" "$WORK/out.txt"
if grep -q "^no analysis of sweep" "$WORK/out.txt"; then fail "no analysis: $(grep "^no analysis of sweep" "$WORK/out.txt")"; fi
expect_in_file "summary line" "sweep tiny: all 12 cells done" "$WORK/out.txt"
expect_eq "sweep status" done "$(q "$DB" "SELECT status FROM sweeps WHERE name = 'tiny'")"

# Metrics: the paper-protocol evals at 0, 20, 40, 60 (tiny preset), train
# progress, and the final measurements at the last step.
expect_eq "eval_val rows" 48 "$(q "$DB" "SELECT count(*) FROM metrics WHERE split = 'eval_val'")"
expect_eq "cells with train loss at step 60" 12 \
  "$(q "$DB" "SELECT count(*) FROM metrics WHERE split = 'train' AND step = 60 AND loss > 0 AND tokens_per_s > 0")"
for split in val_full val_ar val_ar_ref; do
  expect_eq "$split at step 60" 12 "$(q "$DB" "SELECT count(*) FROM metrics WHERE split = '$split' AND step = 60")"
done
# A cell's final_val is its eval_val at the final step; full_val its val_full row.
expect_eq "final_val = eval_val at step 60" 12 "$(q "$DB" "SELECT count(*) FROM cells c JOIN metrics m
  ON m.cell_id = c.id AND m.split = 'eval_val' AND m.step = c.final_step WHERE m.loss = c.final_val AND c.final_step = 60")"
expect_eq "full_val = val_full row" 12 "$(q "$DB" "SELECT count(*) FROM cells c JOIN metrics m
  ON m.cell_id = c.id AND m.split = 'val_full' AND m.step = 60 WHERE m.loss = c.full_val")"

# Learned parameters: MoPE omega/sigma in the mope cells, EGA tau/alpha in the ega cells, neither in base.
for pair in "mope omega" "mope sigma" "ega tau" "ega alpha"; do
  set -- $pair
  expect_eq "cells with $1.$2 at step 60" 6 "$(q "$DB" "SELECT count(DISTINCT c.id) FROM params p JOIN cells c
    ON c.id = p.cell_id WHERE p.module = '$1' AND p.name = '$2' AND p.step = 60 AND c.variant IN ('$1', 'ega_mope')")"
done
expect_eq "gate parameters in base cells" 0 "$(q "$DB" "SELECT count(*) FROM params p JOIN cells c
  ON c.id = p.cell_id WHERE c.variant = 'base' AND p.module IN ('ega', 'mope')")"

# Where and how each attempt ran.
expect_eq "runs with host, torch, commit" 12 "$(q "$DB" "SELECT count(*) FROM runs WHERE host <> '' AND
  torch_version <> '' AND git_commit <> '' AND device = 'cpu' AND world_size = 1 AND ended_at >= started_at")"
for d in "$RUNS"/tiny/*-s*; do
  [ -f "$d/checkpoint.egmc" ] && [ -f "$d/metrics.jsonl" ] || fail "run folder $d lacks its checkpoint or metrics.jsonl"
done
expect_eq "run folders" 12 "$(ls -d "$RUNS"/tiny/*-s* | wc -l)"

# The read-only verbs.
"$EGM" status --db "$DB" >"$WORK/status.txt" 2>&1 || fail "egm status failed"
expect_in_file "egm status" "12 cells: 12 done, 0 running, 0 pending, 0 failed" "$WORK/status.txt"
"$EGM" runs --db "$DB" --format csv >"$WORK/runs.csv" 2>&1 || fail "egm runs failed"
expect_eq "egm runs rows" 13 "$(wc -l <"$WORK/runs.csv")"
expect_in_file "egm runs" "tiny,ega_mope-s1,ega_mope,1,done" "$WORK/runs.csv"
"$EGM" query "SELECT variant, count(*) AS n FROM cells GROUP BY variant ORDER BY variant" --db "$DB" --format json \
  >"$WORK/query.json" 2>&1 || fail "egm query failed"
expect_in_file "egm query" '"variant": "ega_mope"' "$WORK/query.json"

# Again: done cells are skipped, nothing new runs.
"$EGM" sweep "$EXPERIMENTS/tiny.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/again.txt" 2>&1
expect_eq "exit status of the rerun" 0 $?
expect_in_file "rerun header" "12 cells (12 done, 0 to run" "$WORK/again.txt"
expect_eq "attempts after the rerun" 12 "$(q "$DB" "SELECT count(*) FROM runs")"
finish
