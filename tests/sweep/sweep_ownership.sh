#!/usr/bin/env bash
# One live coordinator per sweep (coordinator/README.md, "Ownership"), on the
# real binaries:
#  1. two `egm sweep` of one spec on one database started at once: one runs
#     the sweep, the other is refused (exit 2, one line naming the owner and
#     its heartbeat's age) before it writes anything; the winner finishes every
#     cell exactly once. `--takeover` against the live owner is refused too.
#  2. a coordinator frozen with SIGSTOP past the stale limit (EGM_STALE_AFTER_S,
#     small here): a plain second launch is refused (its process is alive on
#     this host, so it says --takeover), `--takeover` takes it over and resumes
#     its running cells; the first, thawed with SIGCONT while the second trains,
#     finds it no longer owns the sweep, stops its workers and exits 75 with one
#     line; the second finishes every cell exactly once.
# Every wait is on what the database records (lib.sh), never on time alone.
#   sweep_ownership.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/long_tiny.json
sweep() { "$EGM" sweep "$SPEC" --workers 2 --db "$1" --runs-dir "$2" --view plain "${@:3}"; }
# Events only a launch that opened the sweep writes.
SETUP_EVENTS="SELECT count(*) FROM events WHERE kind IN ('sweep_loaded', 'coordinator_started', 'recovered', 'sweep_taken_over')"

# ---- 1. two launches at once ------------------------------------------------------
sweep "$DB" "$RUNS" >"$WORK/a.txt" 2>&1 &
a=$!
sweep "$DB" "$RUNS" >"$WORK/b.txt" 2>&1 &
b=$!
wait "$a"; status_a=$?
wait "$b"; status_b=$?
echo "two launches at once: exit $status_a and $status_b"
if [ "$status_a" = 0 ] && [ "$status_b" = 2 ]; then
  loser=$WORK/b.txt
elif [ "$status_a" = 2 ] && [ "$status_b" = 0 ]; then
  loser=$WORK/a.txt
else
  fail "two launches at once: expected one exit 0 and one exit 2, got $status_a and $status_b"
  sed 's/^/    a| /' "$WORK/a.txt" | tail -n 20
  sed 's/^/    b| /' "$WORK/b.txt" | tail -n 20
  loser=$WORK/b.txt
fi
sed 's/^/    refused| /' "$loser"
expect_in_file "the refusal names the owner" "is running elsewhere: the coordinator pid" "$loser"
expect_in_file "the refusal says how old its heartbeat is" "s ago" "$loser"
# Refused by egm sweep before mpirun when the winner owned the sweep already,
# else by the coordinator that lost the claim: one line either way.
expect_eq "the refusal is one line" 1 "$(grep -cE "^egm(-coordinator)?: error" "$loser")"
grep -q "will resume from their checkpoints" "$loser" && fail "the refused launch recovered the owner's attempts"
expect_all_done_once "$DB" 4
expect_eq "no attempt interrupted" 0 "$(q "$DB" "SELECT count(*) FROM runs WHERE status <> 'done'")"
expect_eq "one coordinator started the sweep" 1 "$(q "$DB" "SELECT count(*) FROM events WHERE kind = 'coordinator_started'")"
expect_eq "ownership released at the end" "" "$(q "$DB" "SELECT owner_host FROM sweeps WHERE name = 'long_tiny'")"

# --takeover while the owner's heartbeat is fresh: refused, nothing written.
DB2=$WORK/fresh.sqlite
sweep "$DB2" "$WORK/fresh_runs" >"$WORK/c.txt" 2>&1 &
c=$!
if WATCH_PID=$c wait_for "$DB2" "SELECT count(*) = 1 AS owned FROM sweeps WHERE owner_pid IS NOT NULL AND status = 'running'" \
    150 "the sweep running with an owner"; then
  run "egm status of an owned sweep" 0 "$EGM" status --db "$DB2"
  expect_in "egm status names the owner" "coordinator pid $(qpoll "$DB2" "SELECT owner_pid FROM sweeps") on" "$out"
  events=$(qpoll "$DB2" "$SETUP_EVENTS")
  run "--takeover of a live sweep" 2 "$EGM" sweep "$SPEC" --workers 1 --db "$DB2" --runs-dir "$WORK/fresh_runs" \
    --view plain --takeover
  expect_eq "--takeover of a live sweep: exit" 2 "$status"
  expect_in "--takeover of a live sweep: names the owner" "is running elsewhere: the coordinator pid" "$err"
  expect_eq "--takeover of a live sweep: one line on stderr" 1 "$(grep -c . <<<"$err")"
  expect_eq "--takeover of a live sweep: refused by egm sweep itself, before mpirun" "egm: error: sweep 'long_tiny'" \
    "$(cut -c1-29 <<<"$err")"
  expect_eq "--takeover of a live sweep wrote nothing" "$events" "$(qpoll "$DB2" "$SETUP_EVENTS")"
fi
wait "$c"
expect_eq "the owner went on undisturbed" 0 $?

# ---- 2. a frozen coordinator, taken over ----------------------------------------
export EGM_STALE_AFTER_S=4  # the owner beats every 4/3 s
DB3=$WORK/frozen.sqlite
RUNS3=$WORK/frozen_runs
sweep "$DB3" "$RUNS3" >"$WORK/first.txt" 2>&1 &
first=$!
# Frozen while two attempts train, at a moment the coordinator holds no write
# lock (a process stopped inside a transaction would block every writer).
unlocked() { sqlite3 -cmd ".timeout 0" "$DB3" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1; }
running="SELECT count(*) = 2 AS two_running FROM runs r WHERE r.status = 'running' AND EXISTS (SELECT 1 FROM events e
  WHERE e.run_id = r.id AND e.kind = 'checkpoint')"
if ! freeze_job_when "$first" "$DB3" "$running" 150 "two attempts training past a checkpoint" unlocked; then
  fail "the first sweep never had two attempts training"
  kill_job "$first"
  finish
fi
owner=$(q "$DB3" "SELECT owner_pid FROM sweeps WHERE name = 'long_tiny'")
echo "frozen: coordinator pid $owner"
wait_for "$DB3" "SELECT (julianday('now') - 2440587.5) * 86400 - owner_heartbeat > 5 AS stale FROM sweeps
  WHERE name = 'long_tiny'" 60 "the frozen owner's heartbeat past the limit" || fail "the heartbeat stayed fresh"
# Its process is alive on this host: only --takeover takes it.
run "plain launch against a stopped owner" 2 "$EGM" sweep "$SPEC" --workers 2 --db "$DB3" --runs-dir "$RUNS3" --view plain
expect_eq "plain launch against a stopped owner: exit" 2 "$status"
expect_in "plain launch against a stopped owner: says --takeover" "--takeover" "$err"
expect_in "plain launch against a stopped owner: names it" "pid $owner on" "$err"
sweep "$DB3" "$RUNS3" --takeover >"$WORK/second.txt" 2>&1 &
second=$!
# The thaw lands while the new owner trains the cells the first one had running.
if ! WATCH_PID=$second wait_for "$DB3" "SELECT count(*) >= 1 AS retrained FROM runs r WHERE r.attempt = 2 AND
    r.status = 'running' AND EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = r.id AND m.split = 'train')" 150 \
    "the new owner training a taken-over cell"; then
  fail "the takeover never trained a taken-over cell"
fi
thaw_job
wait "$first"
expect_eq "the thawed coordinator's exit" 75 $?
sed 's/^/    first| /' "$WORK/first.txt" | tail -n 4
expect_in_file "the thawed coordinator says it was taken over" "was taken over by the coordinator pid" "$WORK/first.txt"
expect_eq "the thawed coordinator's line comes once" 1 "$(grep -c "was taken over" "$WORK/first.txt")"
grep -q "already ended" "$WORK/first.txt" && fail "the thawed coordinator wrote to attempts it no longer owns"
wait "$second"
expect_eq "the taking-over sweep's exit" 0 $?
expect_in_file "the takeover says so" "taking over from the coordinator pid $owner" "$WORK/second.txt"
expect_eq "a sweep_taken_over event" 1 "$(q "$DB3" "SELECT count(*) FROM events WHERE kind = 'sweep_taken_over'")"
expect_all_done_once "$DB3" 4
expect_eq "the frozen attempts closed as interrupted" 2 "$(q "$DB3" "SELECT count(*) FROM runs WHERE status = 'interrupted'")"
expect_eq "the taken-over cells resumed from a checkpoint" 2 "$(q "$DB3" "SELECT count(*) FROM runs WHERE attempt = 2 AND
  resumed_from_step > 0")"
finish
