#!/usr/bin/env bash
# Liveness: SIGKILL the whole job (mpirun and every rank) while cells run. The
# database still says 'running', but the coordinator's heartbeat stops:
# `egm status` shows the sweep as stale and its running cells as interrupted
# (waited for on what egm status prints, bounded). `egm sweep` then resumes it
# and every cell ends done exactly once.
#   sweep_stale_resume.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/long_tiny.json

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/first.txt" 2>&1 &
job=$!
# While the coordinator lives it writes a heartbeat, and egm status does not call the sweep stale.
if WATCH_PID=$job wait_for "$DB" "SELECT count(*) = 1 AS beating FROM sweeps WHERE name = 'long_tiny' AND status = 'running'
    AND heartbeat_at IS NOT NULL" 150 "the sweep running with a heartbeat"; then
  "$EGM" status --db "$DB" >"$WORK/status_alive.txt" 2>&1
  grep -q "stale" "$WORK/status_alive.txt" && fail "egm status calls a live sweep stale"
fi
# The kill lands on the job frozen (SIGSTOP) while two attempts run.
running="SELECT count(*) = 2 AS two_running FROM runs r WHERE r.status = 'running' AND EXISTS (SELECT 1 FROM metrics m
  WHERE m.run_id = r.id AND m.split = 'train')"
if freeze_job_when "$job" "$DB" "$running" 150 "two attempts running with train metrics"; then
  kill -KILL $FROZEN
else
  fail "the sweep never had two attempts running"
  kill_job "$job"
fi
wait "$job"
expect_eq "the sweep still says running" running "$(q "$DB" "SELECT status FROM sweeps WHERE name = 'long_tiny'")"
left=$(q "$DB" "SELECT count(*) FROM cells WHERE status = 'running'")
[ "$left" -ge 1 ] || fail "no cell left running by the kill"

# Until the heartbeat is kStaleAfterS (15 s) old, then stale.
t0=$SECONDS
while :; do
  "$EGM" status --db "$DB" >"$WORK/status.txt" 2>&1
  grep -q "stale: no heartbeat since" "$WORK/status.txt" && break
  if [ $((SECONDS - t0)) -ge 120 ]; then fail "egm status never called the sweep stale within 120 s"; break; fi
  sleep 0.5
done
sed 's/^/    | /' "$WORK/status.txt"
expect_in_file "status: stale" "sweep long_tiny  [stale]" "$WORK/status.txt"
expect_in_file "status: coordinator gone" "coordinator gone?" "$WORK/status.txt"
expect_in_file "status: running cells shown as interrupted" "0 running, " "$WORK/status.txt"
expect_in_file "status: running cells shown as interrupted" "$left interrupted" "$WORK/status.txt"

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/second.txt" 2>&1
expect_eq "exit status of the resumed sweep" 0 $?
expect_all_done_once "$DB" 4
expect_eq "attempts the kill left behind, recovered as interrupted" "$left" "$(q "$DB" "SELECT count(*) FROM runs WHERE status = 'interrupted'")"
"$EGM" status --db "$DB" >"$WORK/status_done.txt" 2>&1
grep -q "stale" "$WORK/status_done.txt" && fail "a finished sweep is called stale"
finish
