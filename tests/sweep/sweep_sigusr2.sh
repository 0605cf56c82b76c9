#!/usr/bin/env bash
# SIGUSR2 (Slurm's time-limit warning) to the job mid-sweep: the coordinator
# tells the workers to checkpoint, records the interruption, and the job exits
# 75 with every rank alive to the end; running the spec again resumes the
# interrupted cells from the step they stopped at, and every cell is done once.
#
# Both cells are mid-run when the signal lands, by construction and whatever
# the machine's speed: specs/signal_pair.json has one cell per worker (no cell
# can start around the signal) of 600 steps; once the database shows both past
# step 20 the job is frozen (SIGSTOP), its run folders must show both short of
# step 580, and SIGUSR2 goes to mpirun and to every rank before the job is
# thawed, so each rank sees it before its next step (mpirun forwards it again).
#   sweep_sigusr2.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/signal_pair.json
STEPS=600

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/first.txt" 2>&1 &
job=$!  # egm, which runs mpirun as its child (freeze_job_when signals them all)
both_mid_way() { runs_mid_way "$RUNS/signal_pair" 2 20 $((STEPS - 20)); }
declare -A at_signal=()
if freeze_job_when "$job" "$DB" "SELECT count(*) = 2 AS ready FROM runs r WHERE r.status = 'running' AND EXISTS
    (SELECT 1 FROM metrics m WHERE m.run_id = r.id AND m.split = 'train' AND m.step >= 20)" 150 \
    "both cells running and past step 20 in the database" both_mid_way; then
  while read -r key step; do at_signal[$key]=$step; done < <(live_runs "$RUNS/signal_pair")
  echo "frozen with both cells mid-run (last logged steps): $(live_runs "$RUNS/signal_pair" | tr '\n' ' ')"
  kill -USR2 $FROZEN
  thaw_job
else
  fail "never caught both cells running mid-way"
  kill_job "$job"; wait "$job"; finish
fi
wait "$job"
expect_eq "exit status after SIGUSR2" 75 $?
echo "first run's log:"; sed 's/^/    | /' "$WORK/first.txt" | tail -n 8
expect_in_file "interruption reported" "interrupted by SIGUSR2 (time-limit warning)" "$WORK/first.txt"
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
expect_eq "cells interrupted" "${#at_signal[@]}" "$(echo $stopped | wc -w)"
# Each stopped where it was frozen: at the step it had logged, or the step it was
# computing then (progress is logged every 10 steps).
for kv in $stopped; do
  key=${kv%=*} step=${kv#*=} seen=${at_signal[${kv%=*}]:-}
  [ -n "$seen" ] && [ "$step" -ge "$seen" ] && [ "$step" -le $((seen + 10)) ] ||
    fail "$key: stopped at step $step, frozen after logging step '$seen'"
done

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/second.txt" 2>&1
expect_eq "exit status of the resumed sweep" 0 $?
expect_all_done_once "$DB" 2
for kv in $stopped; do
  expect_eq "${kv%=*} resumed from where it stopped" "${kv#*=}" "$(q "$DB" "SELECT r.resumed_from_step FROM runs r
    JOIN cells c ON c.id = r.cell_id WHERE c.key = '${kv%=*}' AND r.attempt = 2")"
  expect_eq "${kv%=*} resumed event" 1 "$(q "$DB" "SELECT count(*) FROM events e JOIN cells c ON c.id = e.cell_id
    WHERE c.key = '${kv%=*}' AND e.kind = 'resumed' AND e.step = ${kv#*=}")"
done
finish
