#!/usr/bin/env bash
# SIGUSR2 to the job while a 2-rank cell (specs/long_dp.json) trains: mpirun
# forwards it to every rank and the coordinator STOPs both members; they
# agree on one step, the leader checkpoints, both answer, and the job exits 75
# with every rank alive. Running the spec again resumes the cell on two
# workers from exactly that step.
#   sweep_data_parallel_sigusr2.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/long_dp.json

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/first.txt" 2>&1 &
job=$!  # egm execs mpirun: this is mpirun, which forwards SIGUSR2 to every rank
wait_for "$DB" "SELECT EXISTS (SELECT 1 FROM metrics WHERE split = 'train' AND step >= 60) AS ready" 120 ||
  fail "the 2-rank cell never reached step 60"
kill -USR2 "$job"
wait "$job"
expect_eq "exit status after SIGUSR2" 75 $?
echo "first run's log:"; sed 's/^/    | /' "$WORK/first.txt" | tail -n 5
expect_in "interruption reported" "interrupted by SIGUSR2 (time-limit warning): checkpointing 1 running cell" \
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
[ -n "$stopped" ] && [ "$stopped" -ge 60 ] || fail "stopped at step '$stopped', before the signal was sent"
expect_eq "the leader's checkpoint at that step" 1 "$(q "$DB" "SELECT count(*) FROM events WHERE kind = 'checkpoint'
  AND CAST(substr(message, 20) AS INTEGER) = $stopped")"

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/second.txt" 2>&1
expect_eq "exit status of the resumed sweep" 0 $?
expect_all_done_once "$DB" 1
expect_eq "attempt 2 on 2 ranks resumed from where attempt 1 stopped" "2 $stopped" "$(q "$DB" "SELECT world_size || ' ' || resumed_from_step AS v
  FROM runs WHERE attempt = 2")"
expect_eq "failures counted" 0 "$(q "$DB" "SELECT failures FROM cells")"
finish
