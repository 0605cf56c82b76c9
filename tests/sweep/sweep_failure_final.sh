#!/usr/bin/env bash
# Failures that read as errors, on the real binaries (test-only injection,
# EGM_TEST_FAIL's KIND) over 6 tiny cells with one retry each:
#   ega-s0: a config error at step 0 on every attempt: failed once, not retried;
#   mope-s1: LibTorch out of memory (a c10::Error with its C++ stack trace) at
#     step 0, before the first step completes: failed once, not retried;
#   base-s1: out of memory at step 25, after steps completed: retried, done.
# Each failure is one line in the live view and in `egm status`; the full text
# (stack trace included) is in the attempt_failed event and the run folder's
# errors.log. The sweep ends with egm's own summary (which cells, why, where the
# logs are), exit status 1, and no mpirun banner.
#   sweep_failure_final.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/failures.json

EGM_TEST_FAIL="ega:0:0:99:config,mope:1:0:99:oom,base:1:25:1:oom" \
  "$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/out.txt" 2>&1
expect_eq "exit status (cells failed for good)" 1 $?

cell_runs() { q "$DB" "SELECT r.attempt || ' ' || r.status FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$1' ORDER BY r.attempt" | tr '\n' ';'; }
expect_eq "ega-s0 (config error) ran once" "1 failed;" "$(cell_runs ega-s0)"
expect_eq "mope-s1 (out of memory at step 0) ran once" "1 failed;" "$(cell_runs mope-s1)"
expect_eq "base-s1 (out of memory at step 25) retried" "1 failed;2 done;" "$(cell_runs base-s1)"
expect_eq "cells failed for good" "ega-s0 1 1;mope-s1 1 1;" "$(q "$DB" "SELECT key || ' ' || failures || ' ' ||
  max_attempts AS v FROM cells WHERE status = 'failed' ORDER BY position" | tr '\n' ';')"
expect_eq "other cells done" 4 "$(q "$DB" "SELECT count(*) FROM cells WHERE status = 'done'")"

# One line in the database, the live view and egm status; no stack trace there.
expect_eq "last_error is one line" 0 "$(q "$DB" "SELECT count(*) FROM cells WHERE instr(last_error, char(10)) > 0
  OR last_error LIKE '%Exception raised from%'")"
expect_eq "runs.error is one line" 0 "$(q "$DB" "SELECT count(*) FROM runs WHERE instr(error, char(10)) > 0")"
expect_in_file "the view names the config error" "failed  ega-s0 attempt 1 failed" "$WORK/out.txt"
expect_in_file "the view shows the config error's message" "(injected as a config error)" "$WORK/out.txt"
expect_in_file "the view says it is not retried" "(not retried: it would fail the same way again; giving up on this cell)" "$WORK/out.txt"
expect_in_file "the view shows LibTorch's own message" "injected failure at step 0 (test-only fail_at_step) (injected as out of memory)" "$WORK/out.txt"
grep -q "Exception raised from" "$WORK/out.txt" && fail "a C++ stack trace reached the live view"
grep -q -e "Primary job" -e "mpirun detected" -e "non-zero exit code" "$WORK/out.txt" && fail "mpirun's banner is in the output"
expect_in_file "the summary names the cell" "mope-s1: failed 1 time, no retries left: injected failure at step 0" "$WORK/out.txt"
expect_in_file "the summary says where the logs are" "mope-s1: $RUNS/failures/mope-s1-" "$WORK/out.txt"

"$EGM" status --db "$DB" >"$WORK/status.txt" 2>&1 || fail "egm status failed"
expect_in_file "status: the config error in one line" "failed  ega-s0 (failure 1 of 1 allowed; given up): injected failure at step 0" "$WORK/status.txt"
expect_in_file "status: the out of memory in one line" "failed  mope-s1 (failure 1 of 1 allowed; given up): injected failure at step 0 (test-only fail_at_step) (injected as out of memory)" "$WORK/status.txt"
grep -q "Exception raised from" "$WORK/status.txt" && fail "a C++ stack trace reached egm status"

# The full text: the attempt_failed event and errors.log in the run folder.
expect_eq "mope-s1's event has the stack trace" 1 "$(q "$DB" "SELECT count(*) FROM events e JOIN cells c ON c.id = e.cell_id
  WHERE c.key = 'mope-s1' AND e.kind = 'attempt_failed' AND e.message LIKE '%(not retriable)%Exception raised from%'")"
log=$(ls "$RUNS"/failures/mope-s1-*/errors.log 2>/dev/null | head -n 1)
if [ -f "$log" ]; then
  expect_in_file "errors.log: the attempt" "mope-s1 attempt 1 failed on rank" "$log"
  expect_in_file "errors.log: not retriable" "out of memory, not retriable" "$log"
  expect_in_file "errors.log: the stack trace" "Exception raised from" "$log"
else
  fail "no errors.log in mope-s1's run folder"
fi
expect_in_file "base-s1's errors.log: retriable" "out of memory, retriable" "$(ls "$RUNS"/failures/base-s1-*/errors.log | head -n 1)"

# Running it again (no injection): nothing to retry, the given-up cells stay given up.
"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/again.txt" 2>&1
expect_eq "exit status of the rerun" 1 $?
expect_eq "attempts after the rerun (6 cells, base-s1 twice: none new)" 7 "$(q "$DB" "SELECT count(*) FROM runs")"
finish
