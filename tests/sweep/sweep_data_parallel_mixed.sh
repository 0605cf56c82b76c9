#!/usr/bin/env bash
# A sweep mixing 1-rank and 2-rank cells (specs/mixed_dp.json: base and
# ega_mope on 2 ranks, ega and mope on 1) with 3 workers: every cell done
# exactly once; each 2-rank cell went to two workers at once (the
# coordinator's start line names both), its attempt records world size 2
# over MPI, and its trainer really ran on a 2-rank communicator (the status
# record it wrote in its run folder says so); 1-rank cells record world
# size 1 and no backend.
#   sweep_data_parallel_mixed.sh EGM WORK
source "$(dirname "$0")/lib.sh"

"$EGM" sweep "$SPECS/mixed_dp.json" --workers 3 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/out.txt" 2>&1
expect_eq "exit status" 0 $?
expect_all_done_once "$DB" 4
expect_in_file "summary line" "sweep mixed_dp: all 4 cells done" "$WORK/out.txt"

# What the database recorded for each attempt (spec order).
expect_eq "world size and backend per cell" "base 2 mpi;ega 1 none;mope 1 none;ega_mope 2 mpi;" \
  "$(q "$DB" "SELECT c.variant || ' ' || r.world_size || ' ' || r.backend FROM runs r JOIN cells c ON c.id = r.cell_id
  ORDER BY c.position" | tr '\n' ';')"
expect_eq "device recorded" "cpu" "$(q "$DB" "SELECT group_concat(DISTINCT device) FROM runs")"

# Placement: a 2-rank cell starts on two distinct workers in one line.
for variant in base ega_mope; do
  line=$(grep -E "start +${variant}-" "$WORK/out.txt" | head -n 1)
  echo "  $line"
  if [[ "$line" =~ on\ workers\ ([0-9]+)\+([0-9]+) ]] && [ "${BASH_REMATCH[1]}" != "${BASH_REMATCH[2]}" ]; then
    :
  else
    fail "$variant did not start on two workers at once: '$line'"; sed 's/^/    | /' "$WORK/out.txt" | tail -n 30
  fi
done
for variant in ega mope; do
  grep -qE "start +${variant}-.* on worker [0-9]+ " "$WORK/out.txt" || fail "$variant did not start on one worker"
done

# The trainers themselves: the first status record of each run folder has the
# communicator's size and backend (train/trainer.cpp), written by the leader.
/usr/bin/python3 - "$RUNS/mixed_dp" <<'PY' || fail "a run folder's trainer status disagrees with its data-parallel degree"
import json, pathlib, sys
expected = {"base": (2, "mpi"), "ega": (1, "none"), "mope": (1, "none"), "ega_mope": (2, "mpi")}
bad = 0
for variant, (size, backend) in expected.items():
    folders = [p for p in pathlib.Path(sys.argv[1]).iterdir() if p.name.startswith(variant + "-s")]
    if len(folders) != 1:
        print(f"  {variant}: {len(folders)} run folders"); bad += 1; continue
    status = [json.loads(l) for l in open(folders[0] / "metrics.jsonl") if '"kind":"status"' in l]
    first = status[0]
    ok = first["world_size"] == size and first["backend"] == backend
    print(f"  {variant}: trainer world_size {first['world_size']} backend {first['backend']}  {'ok' if ok else 'WRONG'}")
    bad += not ok
sys.exit(1 if bad else 0)
PY

# The 2-rank cells' learning is the same learning: their final val losses lie
# where the 1-rank runs' do (tiny preset after 40 steps: ~3.0; an untrained
# model is ln(65) = 4.17 for the 65-character corpus).
expect_eq "final val below the untrained ln(65)" 4 "$(q "$DB" "SELECT count(*) FROM cells WHERE final_val < 4.17")"
finish
