#!/usr/bin/env bash
# SIGUSR2 to the job while a 2-rank cell (specs/signal_dp.json) trains: every
# rank gets it (mpirun forwards it too) and the coordinator STOPs both members; they
# agree on one step, the leader checkpoints, both answer, and the job exits 75
# with every rank alive. Running the spec again resumes the cell on two
# workers from exactly that step.
#   sweep_data_parallel_sigusr2.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/signal_dp.json
STEPS=600

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/first.txt" 2>&1 &
job=$!  # egm, which runs mpirun as its child (freeze_job_when signals them all)
# Caught mid-run by construction: once the database shows step 20, the job is
# frozen (SIGSTOP), the leader's run folder must show the cell short of step
# STEPS - 20, and SIGUSR2 goes to mpirun and to every rank before the job is
# thawed, so both members see it before their next step.
mid_way() { runs_mid_way "$RUNS/signal_dp" 1 20 $((STEPS - 20)); }
if freeze_job_when "$job" "$DB" "SELECT EXISTS (SELECT 1 FROM runs r JOIN metrics m ON m.run_id = r.id
    WHERE r.status = 'running' AND m.split = 'train' AND m.step >= 20) AS ready" 150 \
    "the 2-rank cell running past step 20 in the database" mid_way; then
  seen=$(live_runs "$RUNS/signal_dp" | awk '{print $2}')
  echo "frozen with the cell mid-run: last logged step $seen"
  kill -USR2 $FROZEN
  thaw_job
else
  fail "never caught the 2-rank cell mid-run"
  kill_job "$job"; wait "$job"; finish
fi
wait "$job"
expect_eq "exit status after SIGUSR2" 75 $?
echo "first run's log:"; sed 's/^/    | /' "$WORK/first.txt" | tail -n 5
expect_in_file "interruption reported" "interrupted by SIGUSR2 (time-limit warning): checkpointing 1 running cell" \
  "$WORK/first.txt"
if grep -q "exited on signal" "$WORK/first.txt"; then fail "a rank died of the signal"; fi
# Both members answered their STOP in time (no attempt closed by the timeout, no stray answers).
if grep -qE "no answer to STOP|which it is not running|did not answer" "$WORK/first.txt"; then
  fail "a member did not answer in order: $(grep -E "no answer to STOP|which it is not running|did not answer" "$WORK/first.txt")"
fi
expect_eq "attempt interrupted at a step, checkpointed" 1 "$(q "$DB" "SELECT count(*) FROM runs WHERE status =
  'interrupted' AND world_size = 2 AND error GLOB 'interrupted by SIGUSR2 (time-limit warning) at step [0-9]*; checkpointed'")"
stopped=$(q "$DB" "SELECT CAST(substr(error, instr(error, 'at step ') + 8) AS INTEGER) FROM runs WHERE status = 'interrupted'")
echo "stopped at step $stopped"
# Where it was frozen: the step it had logged, or the one it was computing (progress every 10 steps).
[ -n "$stopped" ] && [ "$stopped" -ge "$seen" ] && [ "$stopped" -le $((seen + 10)) ] ||
  fail "stopped at step '$stopped', frozen after logging step $seen"
# (One, or two when it stopped at an eval step: the eval's checkpoint and the stop's.)
expect_eq "the leader's checkpoint at that step" 1 "$(q "$DB" "SELECT count(*) >= 1 AS v FROM events WHERE kind =
  'checkpoint' AND step = $stopped")"

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/second.txt" 2>&1
expect_eq "exit status of the resumed sweep" 0 $?
expect_all_done_once "$DB" 1
expect_eq "attempt 2 on 2 ranks resumed from where attempt 1 stopped" "2 $stopped" "$(q "$DB" "SELECT world_size || ' ' || resumed_from_step AS v
  FROM runs WHERE attempt = 2")"
expect_eq "failures counted" 0 "$(q "$DB" "SELECT failures FROM cells")"
finish
