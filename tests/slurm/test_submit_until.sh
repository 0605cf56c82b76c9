#!/usr/bin/env bash
# slurm_submit_until: a sequential sweep (egm submit --until) on the private
# test cluster, through a time-limit warning and its requeue:
#   1. `egm submit --until ega --max-seeds 3` writes a job whose launcher is
#      `egm sweep ... --until ega --max-seeds 3 ...` (not the mpirun line);
#   2. while the first launch's cells are mid-run, the batch shell gets
#      SIGUSR2 (as Slurm delivers --signal=B:USR2@N): it forwards it to egm
#      sweep --until, which passes it on to its mpirun; the cells checkpoint,
#      the loop exits 75 and the shell requeues the job;
#   3. the second attempt goes on from the seeds the sweep has and adds seeds
#      to the budget: every cell done exactly once, the interrupted ones
#      resumed from their checkpoints, and one look per seed count stored;
#   4. a budget below the seeds run is refused at submission; a larger one,
#      submitted again, goes on from the seeds the sweep has.
# Usage: test_submit_until.sh PATH/TO/egm. Exit 77: no Slurm, MPI or corpus here.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

real_sweep_prereqs test_submit_until.sh "${1:-}"
SWEEP=slurm_until_tiny

TEST_T0=$SECONDS
make_test_workdir until
export EGM_SLURM_TEST_CPUS=3  # 1 coordinator + 2 workers
start_test_cluster "$CLUSTER"
cd "$WORK"

# One seed to start, one cell per worker: both are mid-run when the signal comes.
cat >"$WORK/until.json" <<'JSON'
{"name": "slurm_until_tiny", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0], "steps": 600,
 "eval_interval": 100, "retries": 1, "overrides": {"train": {"full_val_eval": false, "ar_eval_windows": 0}}}
JSON
DB=$WORK/db/results.sqlite

# 1. The job runs egm sweep --until.
"$EGM" submit "$WORK/until.json" --slurm --workers 2 --db "$DB" --runs-dir "$WORK/runs" --time 10:00 \
  --checkpoint-every 20 --param max_restarts=2 --until ega --max-seeds 3 --alpha 0.3 >"$WORK/submit.out" 2>&1 ||
  fail "egm submit failed: $(cat "$WORK/submit.out")"
job=$(sed -n 's/^submitted sweep .* as Slurm job \([0-9][0-9]*\)$/\1/p' "$WORK/submit.out")
[ -n "$job" ] || fail "no job id in egm submit's output: $(cat "$WORK/submit.out")"
SCRIPT=$WORK/db/$SWEEP.sbatch
LOG=$WORK/db/$SWEEP-$job.out
grep -q "^launch_command=.*/egm sweep .*--workers 2 .*--until ega --max-seeds 3 --batch 1 --alpha 0.3'\$" "$SCRIPT" ||
  { grep launch_command "$SCRIPT"; fail "the job does not run egm sweep --until"; }
note "submitted job $job: $(grep -o "^launch_command=.*" "$SCRIPT" | cut -c1-90)..."

# 2. Both cells of the first launch running with a checkpoint behind them: the warning.
wait_for "SELECT count(*) = 2 AS ready FROM runs r WHERE r.status = 'running' AND (SELECT max(step) FROM metrics m
  WHERE m.run_id = r.id AND m.split = 'train') BETWEEN 45 AND 300" 150 ||
  { cat "$LOG" >&2 || true; fail "never saw both cells of the first launch mid-run"; }
scancel --batch --signal=USR2 "$job"
wait_for_line "$LOG" 'SIGUSR2: time limit' 30
wait_for_line "$LOG" 'requeueing$' 60
note "attempt 0: $(grep -c "stopped .*interrupted by SIGUSR2" "$LOG") cells checkpointed on the warning; requeued"

# 3. The second attempt finishes the sequence.
wait_job_state "$job" COMPLETED 240 "$LOG"
[ "$(job_field "$job" Restarts)" = 1 ] || fail "Restarts=$(job_field "$job" Restarts), expected 1"
grep -q 'attempt 1 .*launcher exited with status 0$' "$LOG" || { cat "$LOG" >&2; fail "attempt 1 did not end with status 0"; }
[ "$(q "SELECT count(*) FROM cells WHERE status = 'done'")" = 6 ] || fail "not 3 seeds x 2 variants done"
[ "$(q "SELECT count(*) FROM runs WHERE status = 'done'")" = 6 ] || fail "a cell finished more than once"
[ "$(q "SELECT count(*) FROM runs WHERE status = 'interrupted'")" = 2 ] || fail "the warning did not interrupt both cells"
[ "$(q "SELECT count(*) FROM runs WHERE status = 'done' AND resumed_from_step > 0")" = 2 ] ||
  fail "the interrupted cells did not resume from their checkpoints"
[ "$(q "SELECT sum(failures) FROM cells")" = 0 ] || fail "the requeue was counted as a failure"
looks=$(q "SELECT group_concat(seeds || ':' || next, ';') FROM (SELECT seeds, next FROM looks ORDER BY look)")
[ "$looks" = "1:seed 1 added;2:seed 2 added;3:stopped: --max-seeds 3 reached" ] || fail "looks: $looks"
note "looks: $looks"

# A budget below the seeds the sweep has run is refused at submission (the job would stop at once).
if "$EGM" submit "$WORK/until.json" --slurm --workers 2 --db "$DB" --runs-dir "$WORK/runs" --until ega --max-seeds 2 --alpha 0.3 \
  --dry-run >"$WORK/low.out" 2>&1; then fail "a budget below the seeds run was accepted"; fi
grep -q -- "--max-seeds 2 is below the 3 seeds sweep $SWEEP has already run" "$WORK/low.out" ||
  fail "a budget below the seeds run: $(cat "$WORK/low.out")"

# A larger budget, submitted again: the sweep (whose spec now lists seeds 0-2,
# where the file lists 0) is opened as it is, and the job trains seed 3 only.
"$EGM" submit "$WORK/until.json" --slurm --workers 2 --db "$DB" --runs-dir "$WORK/runs" --time 10:00 \
  --until ega --max-seeds 4 --alpha 0.3 >"$WORK/submit2.out" 2>&1 || fail "the second submit failed: $(cat "$WORK/submit2.out")"
job2=$(sed -n 's/^submitted sweep .* as Slurm job \([0-9][0-9]*\)$/\1/p' "$WORK/submit2.out")
[ -n "$job2" ] || fail "no job id in the second submit's output: $(cat "$WORK/submit2.out")"
wait_job_state "$job2" COMPLETED 240 "$WORK/db/$SWEEP-$job2.out"
[ "$(q "SELECT count(*) FROM cells WHERE status = 'done'")" = 8 ] || fail "not 4 seeds x 2 variants done"
[ "$(q "SELECT count(*) FROM runs WHERE status = 'done'")" = 8 ] || fail "a cell finished more than once"
looks=$(q "SELECT group_concat(seeds || ':' || next, ';') FROM (SELECT seeds, next FROM looks ORDER BY look)")
# The first job's last look stands (nothing ran since it): its `next` now says what the second job did.
[ "$looks" = "1:seed 1 added;2:seed 2 added;3:seed 3 added;4:stopped: --max-seeds 4 reached" ] ||
  fail "looks after the second job: $looks"
note "job $job2 went on to 4 seeds: $looks"

stop_and_check_cluster "$CLUSTER"
note "slurm_submit_until passed"
