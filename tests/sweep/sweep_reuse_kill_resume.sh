#!/usr/bin/env bash
# SIGKILL a sweep that both reuses and trains (issue 38): base and mope are
# trained by one sweep; a second sweep (the causal 2x2) reuses them and trains
# ega_causal and ega_causal_mope; it is killed (mpirun and every rank, frozen
# first) while a causal cell is mid-run past a checkpoint, and run again: every
# cell done exactly once, the reused ones linked once (not again, not trained),
# the killed one resumed from its checkpoint.
#   sweep_reuse_kill_resume.sh EGM WORK
source "$(dirname "$0")/lib.sh"
sweep() { "$EGM" sweep "$@" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain; }

run "the first sweep (base, mope)" 0 sweep "$SPECS/reuse_long_a.json"
sweep "$SPECS/reuse_long_b.json" >"$WORK/first.txt" 2>&1 &
job=$!
ready="SELECT EXISTS (SELECT 1 FROM runs r JOIN events e ON e.run_id = r.id AND e.kind = 'checkpoint'
  JOIN metrics m ON m.run_id = r.id AND m.split = 'train' WHERE r.status = 'running' AND m.step > e.step) AS ready"
if freeze_job_when "$job" "$DB" "$ready" 150 "a causal cell running past a checkpoint"; then
  kill -KILL $FROZEN
else
  fail "the second sweep never had a running cell past a checkpoint"
  kill_job "$job"
fi
wait "$job"
echo "killed; its log:"; sed 's/^/    | /' "$WORK/first.txt" | tail -n 6
expect_eq "linked before the kill (at the start, with the cells)" 2 "$(q "$DB" "SELECT count(*) FROM runs
  WHERE reused_from IS NOT NULL")"

run "the second sweep again" 0 sweep "$SPECS/reuse_long_b.json"
expect_eq "every cell of the second sweep done" 4 "$(q "$DB" "SELECT count(*) FROM cells c JOIN sweeps s
  ON s.id = c.sweep_id WHERE s.name = 'reuse_long_b' AND c.status = 'done'")"
expect_eq "each cell with one done run: base and mope linked, the causal ones trained" \
  "base-s0 link;ega_causal-s0 trained;ega_causal_mope-s0 trained;mope-s0 link;" \
  "$(q "$DB" "SELECT c.key || ' ' || CASE WHEN r.reused_from IS NULL THEN 'trained' ELSE 'link' END FROM runs r
  JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'reuse_long_b'
  AND r.status = 'done' ORDER BY c.key" | tr '\n' ';')"
expect_eq "no cell of either sweep trained twice" 0 "$(q "$DB" "SELECT count(*) FROM (SELECT cell_id FROM runs
  WHERE status = 'done' GROUP BY cell_id HAVING count(*) > 1)")"
expect_eq "a killed cell resumed from a checkpoint" 1 "$(q "$DB" "SELECT count(*) >= 1 FROM runs
  WHERE status = 'done' AND reused_from IS NULL AND resumed_from_step > 0")"
expect_eq "nothing left running" 0 "$(q "$DB" "SELECT count(*) FROM runs WHERE status = 'running'")"
finish
