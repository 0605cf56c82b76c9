#!/usr/bin/env bash
# Failing runs (test-only injection, EGM_TEST_FAIL) on 6 tiny cells (retries 1):
# ega-s1 throws at step 25 on its first attempt: recorded as failed with the
# error and where it was raised, retried from its step-20 checkpoint, done.
# mope-s0 throws on every attempt: given up after 2 failures, while the sweep
# goes on; the exit status is 1 and names the cell.
#   sweep_failure_retry.sh EGM WORK
source "$(dirname "$0")/lib.sh"

EGM_TEST_FAIL="ega:1:25:1,mope:0:5:99" \
  "$EGM" sweep "$SPECS/failures.json" --workers 2 --db "$DB" --runs-dir "$WORK/runs" --view plain \
  >"$WORK/out.txt" 2>&1
expect_eq "exit status (a cell failed for good)" 1 $?
expect_in_file "the cell given up is named" "mope-s0: failed 2 times, no retries left: injected failure at step 5" "$WORK/out.txt"
expect_eq "sweep status" failed "$(q "$DB" "SELECT status FROM sweeps WHERE name = 'failures'")"

cell_runs() { q "$DB" "SELECT r.attempt || ' ' || r.status FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$1' ORDER BY r.attempt" | tr '\n' ';'; }
expect_eq "ega-s1 attempts" "1 failed;2 done;" "$(cell_runs ega-s1)"
expect_eq "ega-s1 first error" 1 "$(q "$DB" "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
  WHERE c.key = 'ega-s1' AND r.attempt = 1 AND r.error LIKE 'injected failure at step 25%[at %trainer.cpp:%'")"
expect_eq "ega-s1 retry resumed from its checkpoint" 20 "$(q "$DB" "SELECT r.resumed_from_step FROM runs r
  JOIN cells c ON c.id = r.cell_id WHERE c.key = 'ega-s1' AND r.attempt = 2")"
expect_eq "ega-s1 cell" "done 1 2" "$(q "$DB" "SELECT status || ' ' || failures || ' ' || attempts FROM cells WHERE key = 'ega-s1'")"

expect_eq "mope-s0 attempts" "1 failed;2 failed;" "$(cell_runs mope-s0)"
expect_eq "mope-s0 cell" "failed 2 2" "$(q "$DB" "SELECT status || ' ' || failures || ' ' || max_attempts FROM cells WHERE key = 'mope-s0'")"
expect_eq "mope-s0 last error" 1 "$(q "$DB" "SELECT count(*) FROM cells WHERE key = 'mope-s0' AND last_error LIKE 'injected failure at step 5%'")"

# Everything else ran once and finished.
expect_eq "other cells done" 5 "$(q "$DB" "SELECT count(*) FROM cells WHERE status = 'done' AND key <> 'mope-s0'")"
expect_eq "done attempts" 5 "$(q "$DB" "SELECT count(*) FROM runs WHERE status = 'done'")"
expect_eq "failure events" 3 "$(q "$DB" "SELECT count(*) FROM events WHERE kind = 'attempt_failed'")"

# Running it again without the injection: only the given-up cell is left, and it stays given up.
"$EGM" sweep "$SPECS/failures.json" --workers 2 --db "$DB" --runs-dir "$WORK/runs" --view plain >"$WORK/again.txt" 2>&1
expect_eq "exit status of the rerun" 1 $?
expect_eq "attempts after the rerun" 8 "$(q "$DB" "SELECT count(*) FROM runs")"
finish
