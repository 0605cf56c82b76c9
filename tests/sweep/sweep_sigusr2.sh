#!/usr/bin/env bash
# SIGUSR2 (Slurm's time-limit warning) to the job mid-sweep: the coordinator
# tells the workers to checkpoint, records the interruption, and the job exits
# 75 with every rank alive to the end; running the spec again resumes the
# interrupted cells from the step they stopped at, and every cell is done once.
#   sweep_sigusr2.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/long_tiny.json

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/first.txt" 2>&1 &
job=$!  # egm execs mpirun: this is mpirun, which forwards SIGUSR2 to every rank
wait_for "$DB" "SELECT count(*) = 2 FROM runs r WHERE r.status = 'running' AND EXISTS (SELECT 1 FROM metrics m
  WHERE m.run_id = r.id AND m.split = 'train' AND m.step >= 20)" 120 || fail "two cells never trained together"
kill -USR2 "$job"
wait "$job"
expect_eq "exit status after SIGUSR2" 75 $?
echo "first run's log:"; sed 's/^/    | /' "$WORK/first.txt" | tail -n 8
expect_in "interruption reported" "interrupted by SIGUSR2 (time-limit warning)" "$WORK/first.txt"
if grep -q "exited on signal" "$WORK/first.txt"; then fail "a rank died of the signal"; fi

expect_eq "sweep status" interrupted "$(q "$DB" "SELECT status FROM sweeps")"
expect_eq "interruption event" 1 "$(q "$DB" "SELECT count(*) FROM events WHERE kind = 'interrupted_sigusr2'")"
expect_eq "attempts left running" 0 "$(q "$DB" "SELECT count(*) FROM runs WHERE status = 'running'")"
expect_eq "interrupted attempts" 2 "$(q "$DB" "SELECT count(*) FROM runs WHERE status = 'interrupted' AND
  error GLOB 'interrupted by SIGUSR2 (time-limit warning) at step [0-9]*; checkpointed'")"
expect_eq "failures counted" 0 "$(q "$DB" "SELECT sum(failures) FROM cells")"
# The step each interrupted attempt checkpointed at (from its error text).
stopped=$(q "$DB" "SELECT c.key || '=' || CAST(substr(r.error, instr(r.error, 'at step ') + 8) AS INTEGER) FROM runs r
  JOIN cells c ON c.id = r.cell_id WHERE r.status = 'interrupted' ORDER BY c.position" | tr '\n' ' ')
echo "interrupted: $stopped"
for kv in $stopped; do
  [ "${kv#*=}" -gt 0 ] || fail "$kv: stopped before any step"
done

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/second.txt" 2>&1
expect_eq "exit status of the resumed sweep" 0 $?
expect_all_done_once "$DB" 4
for kv in $stopped; do
  expect_eq "${kv%=*} resumed from where it stopped" "${kv#*=}" "$(q "$DB" "SELECT r.resumed_from_step FROM runs r
    JOIN cells c ON c.id = r.cell_id WHERE c.key = '${kv%=*}' AND r.attempt = 2")"
  expect_eq "${kv%=*} resumed event" 1 "$(q "$DB" "SELECT count(*) FROM events e JOIN cells c ON c.id = e.cell_id
    WHERE c.key = '${kv%=*}' AND e.kind = 'resumed' AND e.message LIKE '%(step ${kv#*=})%'")"
done
finish
