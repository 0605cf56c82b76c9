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

# shellcheck source=../support/checks.sh
source "${EGM_SOURCE_DIR:?}/tests/support/checks.sh"
# q DB SQL: one read-only query, CSV without the header line.
q() { "$EGM" query "$2" --db "$1" --format csv | tail -n +2; }
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
# qpoll DB SQL: q for polling loops: the sqlite3 shell where there is one (an egm
# process per poll costs up to a second on a loaded 2-core box), else egm query.
qpoll() {
  if command -v sqlite3 >/dev/null; then sqlite3 -readonly -csv -cmd ".timeout 5000" "$1" "$2"; else q "$1" "$2"; fi
}
# What the database says about each attempt, for a timeout's report.
show_attempts() {  # show_attempts DB
  echo "    attempts (cell attempt status last-train-step):"
  qpoll "$1" "SELECT c.key, r.attempt, r.status, (SELECT max(step) FROM metrics m WHERE m.run_id = r.id AND
    m.split = 'train') FROM runs r JOIN cells c ON c.id = r.cell_id ORDER BY r.id" 2>&1 | sed 's/^/      /'
}
# wait_for DB SQL TIMEOUT_S [WHAT]: polls until the query returns 1 (give its one column
# a one-line name with AS: CSV quotes a multi-line name over several lines). On timeout,
# or when the job in WATCH_PID (if set) has ended first, says what it was waiting for and
# what the database shows, and returns 1. Waits on the state the sweep records, never on time.
wait_for() {
  local db=$1 sql=$2 timeout=$3 what=${4:-"$2"} t0=$SECONDS last=""
  while :; do
    last=$(qpoll "$db" "$sql" 2>&1)
    [ "$last" = 1 ] && return 0
    if [ -n "${WATCH_PID:-}" ] && ! job_alive "$WATCH_PID"; then
      echo "the job ended while waiting for: $what (after $((SECONDS - t0)) s; last answer '$last')"
      show_attempts "$db"
      return 1
    fi
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      echo "timed out after $timeout s waiting for: $what (last answer '$last')"
      show_attempts "$db"
      return 1
    fi
    sleep 0.1
  done
}
job_alive() {  # job_alive PID: running or stopped, not exited (a zombie has exited)
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "${state:0:1}" != Z ]
}
# freeze_job PID: SIGSTOP the launcher and every rank (FROZEN lists them) and wait
# until each is stopped. While frozen the database (WAL: readers see the committed
# rows, and a SIGKILL keeps exactly those) and the run folders cannot change.
freeze_job() {
  FROZEN=$(job_pids "$1" | tr '\n' ' ')
  kill -STOP $FROZEN 2>/dev/null
  local p deadline=$((SECONDS + 30))
  for p in $FROZEN; do
    while job_alive "$p" && [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" != T ]; do
      [ $SECONDS -lt $deadline ] || { echo "process $p did not stop within 30 s of SIGSTOP"; return 1; }
      sleep 0.01
    done
  done
}
thaw_job() { kill -CONT $FROZEN 2>/dev/null; }
# freeze_job_when PID DB SQL TIMEOUT_S WHAT [CHECK]: returns 0 with the job frozen
# (FROZEN) at a moment when SQL returns 1 of the frozen database and the command
# CHECK (if given) succeeds on the frozen run folders; the caller then kills it, or
# signals and thaws it. When the job moved on between the poll and the freeze, it is
# thawed and the wait goes on. Returns 1 (the job running) when TIMEOUT_S pass first.
freeze_job_when() {
  local pid=$1 db=$2 sql=$3 timeout=$4 what=$5 check=${6:-true} t0=$SECONDS left
  while :; do
    left=$((timeout - (SECONDS - t0)))
    [ "$left" -gt 0 ] || left=1
    WATCH_PID=$pid wait_for "$db" "$sql" "$left" "$what" || return 1
    freeze_job "$pid" || { thaw_job; return 1; }
    if [ "$(qpoll "$db" "$sql" 2>&1)" = 1 ] && $check; then return 0; fi
    thaw_job
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      echo "timed out after $timeout s: the job never stayed at '$what' long enough to be frozen there"
      show_attempts "$db"
      return 1
    fi
  done
}
# kill_job PID: SIGKILL the launcher and every rank.
kill_job() { kill -KILL $(job_pids "$1") 2>/dev/null; }
# live_runs RUN_ROOT: one line per run folder under RUN_ROOT (RUNS/<sweep>), from
# what its trainer wrote (metrics.jsonl, flushed record by record): the cell key and
# the last train step it logged, or "ended" once the run has finished or stopped.
live_runs() {
  /usr/bin/python3 - "$1" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*/metrics.jsonl")):
    step, ended = 0, False
    for line in open(f):
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line still being written
        if r.get("kind") == "progress":
            step = r["step"]
        elif r.get("kind") == "status" and r.get("status") != "running":
            ended = True
    print(f.parent.name.rsplit("-", 1)[0], "ended" if ended else step)
PY
}
# runs_mid_way RUN_ROOT COUNT MIN MAX: exactly COUNT run folders, none ended, each
# last logged at a train step in [MIN, MAX]. Used on a frozen job with MAX at least
# two progress intervals before the run's last step: a run that has logged step s is
# at most at step s + 9 and checks for a stop signal before each later step, so it
# cannot finish before it sees one sent now.
runs_mid_way() {
  local runs n=0 key step
  runs=$(live_runs "$1")
  while read -r key step; do
    [ -n "$key" ] || continue
    n=$((n + 1))
    [[ "$step" =~ ^[0-9]+$ ]] && [ "$step" -ge "$3" ] && [ "$step" -le "$4" ] || return 1
  done <<<"$runs"
  [ "$n" = "$2" ]
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
