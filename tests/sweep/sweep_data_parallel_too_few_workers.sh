#!/usr/bin/env bash
# A spec whose cells need more workers than the sweep has is refused before
# anything runs: `egm sweep --workers 1` on a spec with 2-rank cells exits 2
# naming the need, and so does egm-coordinator launched by hand with one
# worker; neither creates the database.
#   sweep_data_parallel_too_few_workers.sh EGM WORK
source "$(dirname "$0")/lib.sh"

"$EGM" sweep "$SPECS/mixed_dp.json" --workers 1 --db "$DB" --runs-dir "$WORK/runs" --view plain >"$WORK/sweep.txt" 2>&1
expect_eq "egm sweep --workers 1: exit status" 2 $?
expect_in_file "egm sweep names the need" "some cells need 2 workers (data_parallel) but --workers is 1" "$WORK/sweep.txt"
[ -e "$DB" ] && fail "egm sweep created the database"

# The coordinator's own check, for launches that bypass egm sweep (Slurm scripts).
mpirun --oversubscribe -np 1 "$BIN_DIR/egm-coordinator" "$SPECS/mixed_dp.json" --db "$DB" --runs-dir "$WORK/runs" \
  --view plain : -np 1 "$BIN_DIR/egm-worker" --data "$EGM_DATA" >"$WORK/coordinator.txt" 2>&1
expect_eq "egm-coordinator with 1 worker: exit status" 2 $?
expect_in_file "the coordinator names the cells and the need" \
  "the cells of base (data_parallel 2), ega_mope (data_parallel 2) need more workers than this sweep has (1)" \
  "$WORK/coordinator.txt"
[ -e "$DB" ] && fail "egm-coordinator created the database"
[ -e "$WORK/runs" ] && fail "egm-coordinator created the runs folder"
finish
