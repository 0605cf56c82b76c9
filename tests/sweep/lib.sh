# Shared helpers of the sweep end-to-end scripts (sourced).
#   EGM: the egm binary (egm-coordinator and egm-worker sit next to it)
#   WORK: a scratch folder, emptied first
# Environment (set by CTest): EGM_DATA, EGM_SWEEP_TEST_DIR, EGM_SOURCE_DIR.
set -u
EGM=$1
WORK=$2
BIN_DIR=$(dirname "$EGM")
SPECS=${EGM_SWEEP_TEST_DIR:?}/specs
EXPERIMENTS=${EGM_SOURCE_DIR:?}/experiments
DB=$WORK/results.sqlite  # where the scripts keep the sweep's database and run folders
RUNS=$WORK/runs
rm -rf "$WORK" && mkdir -p "$WORK"
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
[ -f "${EGM_DATA:-}" ] || { echo "SKIP: no corpus at '${EGM_DATA:-}' (set EGM_DATA)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# q DB SQL: one read-only query, CSV without the header line.
q() { "$EGM" query "$2" --db "$1" --format csv | tail -n +2; }
expect_eq() {  # expect_eq WHAT EXPECTED ACTUAL
  [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}
expect_in() {  # expect_in WHAT NEEDLE FILE
  grep -qF -- "$2" "$3" || { fail "$1: '$2' not in $3"; sed 's/^/    | /' "$3" | tail -n 30; }
}
finish() {
  if [ "$failures" != 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
  exit 0
}
# Every cell of the sweep done, with exactly one done attempt each.
expect_all_done_once() {  # expect_all_done_once DB CELLS
  expect_eq "cells done" "$2" "$(q "$1" "SELECT count(*) FROM cells WHERE status = 'done'")"
  expect_eq "cells with exactly one done attempt" "$2" \
    "$(q "$1" "SELECT count(*) FROM (SELECT cell_id FROM runs WHERE status = 'done' GROUP BY cell_id HAVING count(*) = 1)")"
  expect_eq "done attempts" "$2" "$(q "$1" "SELECT count(*) FROM runs WHERE status = 'done'")"
  expect_eq "attempts left running" "0" "$(q "$1" "SELECT count(*) FROM runs WHERE status = 'running'")"
}
# The launcher and the ranks it started (mpirun's children), for signals by process id.
job_pids() {  # job_pids PID
  local p=$1
  echo "$p"
  for c in $(pgrep -P "$p" || true); do job_pids "$c"; done
}
# wait_for DB SQL TIMEOUT_S: polls until the query returns 1 (give its one column a
# one-line name with AS: CSV quotes a multi-line name over several lines).
wait_for() {
  local deadline=$((SECONDS + $3))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(q "$1" "$2" 2>/dev/null)" = 1 ] && return 0
    sleep 0.2
  done
  return 1
}
# expect_resumed_from_checkpoint WHAT RESUMED LAST_DB_CHECKPOINT INTERVAL: a run
# killed by SIGKILL resumed from a checkpoint, not from 0: at the last one the
# database knows of or a later one (the kill can land after a checkpoint is on
# disk but before its record is written), on a checkpoint boundary.
expect_resumed_from_checkpoint() {
  local what=$1 resumed=$2 known=$3 interval=$4
  if [ -z "$resumed" ] || [ -z "$known" ] || [ "$resumed" -lt "$known" ] || [ "$resumed" -le 0 ] ||
     [ $((resumed % interval)) != 0 ]; then
    fail "$what: resumed from step '$resumed', expected a checkpoint step (multiple of $interval) >= $known"
  fi
}
