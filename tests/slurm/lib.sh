# Helpers shared by the scripted Slurm tests (sourced, not run). They drive the
# private cluster of slurm_cluster.sh and poll `scontrol show job` (the test
# cluster has no accounting database, so no sacct).

SLURM_TEST_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER_SH=$SLURM_TEST_HERE/slurm_cluster.sh

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Seconds since the test began, for the timing lines.
elapsed() { echo "$((SECONDS - ${TEST_T0:-0}))s"; }
note() { echo "[$(elapsed)] $*"; }

# make_test_workdir NAME: a scratch folder WORK (kept with EGM_KEEP_TEST_DIR=1) with
# the cluster's folder CLUSTER inside, and the traps that stop the cluster and
# remove WORK however the test ends (a CTest timeout sends TERM).
make_test_workdir() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/egm-slurm-$1.XXXXXX")
  chmod 0755 "$WORK"   # munged wants every folder above its socket searchable
  CLUSTER=$WORK/cluster
  trap cleanup_test_workdir EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
}
cleanup_test_workdir() {
  "$CLUSTER_SH" stop "$CLUSTER" >/dev/null 2>&1 || true
  if [ "${EGM_KEEP_TEST_DIR:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}

# start_test_cluster DIR: starts the cluster and exports its client settings;
# exits 77 (CTest skip) when Slurm cannot run here.
start_test_cluster() {
  local rc=0
  "$CLUSTER_SH" start "$1" || rc=$?
  [ "$rc" -eq 77 ] && exit 77
  [ "$rc" -eq 0 ] || fail "the test cluster did not start (exit $rc)"
  eval "$("$CLUSTER_SH" env "$1")"
}

# stop_and_check_cluster DIR: stops it and fails if any process of it survives.
stop_and_check_cluster() {
  "$CLUSTER_SH" stop "$1" || fail "slurm_cluster.sh stop failed"
  local name pid survivors=""
  while read -r name pid; do
    # A zombie has exited (a container's PID 1 may never reap it).
    if kill -0 "$pid" 2>/dev/null && [ "$(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
      survivors="$survivors $name:$pid"
    fi
  done <"$1/pids"
  [ -z "$survivors" ] || fail "daemons still running after stop:$survivors"
  local status
  status=$("$CLUSTER_SH" status "$1" || true)
  if echo "$status" | grep -qE 'running|other processes'; then
    fail "processes of the cluster survive stop: $status"
  fi
  note "cluster stopped, no process left"
}

# job_field JOBID FIELD: one field of `scontrol show job` ("JobState", "Restarts").
job_field() {
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# wait_job_state JOBID STATE TIMEOUT_S [LOG]: waits for STATE; fails at once on
# any other final state, or on timeout, showing the job and its log.
wait_job_state() {
  local job=$1 want=$2 deadline=$((SECONDS + $3)) log=${4:-} state=""
  while [ $SECONDS -lt "$deadline" ]; do
    state=$(job_field "$job" JobState)
    [ "$state" = "$want" ] && return 0
    case "$state" in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
        break ;;
    esac
    sleep 0.25
  done
  scontrol show job "$job" >&2 || true
  if [ -n "$log" ] && [ -f "$log" ]; then
    echo "----- $log -----" >&2
    cat "$log" >&2
  fi
  fail "job $job: state '${state:-unknown}', expected $want"
}

# wait_for_line FILE REGEX TIMEOUT_S: waits until FILE has a line matching REGEX.
wait_for_line() {
  local deadline=$((SECONDS + $3))
  while [ $SECONDS -lt "$deadline" ]; do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "no line matching '$2' in $1 after $3 s"
}

# wait_node_idle TIMEOUT_S: until the test cluster's node is idle: no job on it and
# every process of the last one gone (COMPLETING is over). Fails showing sinfo.
wait_node_idle() {
  local deadline=$((SECONDS + $1)) state=""
  while [ $SECONDS -lt "$deadline" ]; do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$state" = "idle " ] && return 0
    sleep 0.2
  done
  sinfo -N >&2 || true
  fail "the node is '$state', not idle, $1 s on"
}

submit() {
  local out
  out=$(sbatch "$@") || fail "sbatch $* failed: $out"
  echo "$out" | sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p'
}

# The tests of real sweeps through egm submit (test_submit_*.sh):
# real_sweep_prereqs USAGE_NAME EGM_ARG sets EGM (absolute) and skips (77)
# where mpirun, the corpus ($EGM_DATA) or the sqlite3 shell is missing.
real_sweep_prereqs() {
  EGM=$(realpath "${2:?usage: $1 PATH/TO/egm}")
  [ -x "$EGM" ] || fail "$EGM is not an executable"
  command -v mpirun >/dev/null || { echo "skip: mpirun not found"; exit 77; }
  [ -f "${EGM_DATA:-}" ] || { echo "skip: no corpus at '${EGM_DATA:-}' (set EGM_DATA)"; exit 77; }
  command -v sqlite3 >/dev/null || { echo "skip: sqlite3 (the shell) not found"; exit 77; }
}
# q SQL: a read-only query of $DB in the sqlite3 shell's list mode (no
# quoting); an egm process per poll costs a second on a loaded 2-core box.
q() { sqlite3 -readonly -cmd ".timeout 5000" "$DB" "$1"; }
# wait_for SQL TIMEOUT_S: until the one-column query returns 1 (1: timed out).
wait_for() {
  local deadline=$((SECONDS + $2))
  while [ $SECONDS -lt "$deadline" ]; do
    [ "$(q "$1" 2>/dev/null)" = 1 ] && return 0
    sleep 0.3
  done
  return 1
}
