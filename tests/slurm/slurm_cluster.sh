#!/usr/bin/env bash
# A private one-node Slurm cluster for tests: munged, slurmctld and slurmd,
# everything (key, sockets, config, state, logs, PIDs) inside one folder, on
# free ports, so it never touches the system's Slurm or another test's cluster.
#
#   slurm_cluster.sh start  DIR   generate DIR/slurm.conf, start the daemons, wait for the node to be idle
#   slurm_cluster.sh stop   DIR   cancel the cluster's jobs, stop exactly the daemons listed in DIR/pids
#   slurm_cluster.sh status DIR   print each recorded daemon and whether it runs (exit 0 when all do)
#   slurm_cluster.sh env    DIR   print the export lines for client commands: eval "$(... env DIR)"
#
# Exit codes: 0 done, 1 failure (with the daemon's log tail), 2 usage,
# 77 Slurm cannot run here at all (binaries missing): callers treat it as a skip.
# Environment: EGM_SLURM_TEST_CPUS=N declares N CPUs on the node whatever the
# hardware has (SlurmdParameters=config_overrides), to run wider jobs on a small box.
set -euo pipefail

readonly START_TIMEOUT_S=${EGM_SLURM_START_TIMEOUT_S:-60}
readonly STOP_TIMEOUT_S=5   # for stragglers after SIGTERM, before SIGKILL

die() { echo "slurm_cluster: error: $*" >&2; exit 1; }
skip() { echo "slurm_cluster: skip: $*" >&2; exit 77; }

usage() {
  sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -eq 2 ] && [ -n "$2" ] || usage
readonly action=$1
case "$action" in start | stop | status | env) ;; *) usage ;; esac
[ "$action" = start ] && mkdir -p "$2"
DIR=$(realpath -m "$2")
readonly DIR
readonly CONF=$DIR/slurm.conf
readonly PIDS=$DIR/pids

# Every daemon started here carries this in its environment, so the processes
# of THIS cluster can be told from other clusters' (and from reused PIDs).
readonly MARKER="EGM_SLURM_DAEMON_OF=$DIR"

# The slurm.conf lines this cluster shares with tests/cluster/multihost_slurm.sh.
# shellcheck source=slurm_conf.sh
source "$(dirname "${BASH_SOURCE[0]}")/slurm_conf.sh"

# --- PID bookkeeping --------------------------------------------------------

# Alive and not a zombie (in a container, PID 1 may never reap our daemons).
is_alive() {
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 1
  [ "$(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

recorded_pids() { [ -f "$PIDS" ] && awk '{print $2}' "$PIDS" || true; }

daemon_pid() { [ -f "$PIDS" ] && awk -v n="$1" '$1 == n {print $2}' "$PIDS" | tail -n 1 || true; }

# Alive and still the process we started (a recorded PID may since have been
# reused by another program).
is_ours() { is_alive "$1" && grep -qzxF "$MARKER" "/proc/$1/environ" 2>/dev/null; }

# Processes of this cluster, found without trusting names: the daemons carry
# MARKER in their environment; slurmstepd clears its environment but keeps
# DIR/log/slurmd.log open.
marked_pids() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    if grep -qzxF "$MARKER" "/proc/$p/environ" 2>/dev/null ||
      find "/proc/$p/fd" -maxdepth 1 -lname "$DIR/log/*" 2>/dev/null | grep . >/dev/null; then
      echo "$p"
    fi
  done
  return 0
}

# Waits until none of the given PIDs is alive; returns 1 on timeout.
wait_gone() {
  local deadline=$((SECONDS + $1)) p alive
  shift
  while :; do
    alive=""
    for p in "$@"; do is_alive "$p" && alive="$alive $p"; done
    [ -z "$alive" ] && return 0
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.2
  done
}

log_tail() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 25 "$f" >&2
  done
}

# --- start ------------------------------------------------------------------

check_can_run() {
  local b
  for b in munged mungekey slurmctld slurmd slurmstepd sinfo sbatch scontrol squeue scancel; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || skip "'$b' not found (install slurm-wlm and munge)"
  done
  slurmd -C >/dev/null 2>&1 || skip "'slurmd -C' cannot read this machine's configuration"
}

# A TCP port nobody listens on (checked against /proc/net/tcp*; the small race
# with another process binding it before us is acceptable for a test cluster).
free_port() {
  local exclude=${1:-} p hex
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 20000))
    [ "$p" = "$exclude" ] && continue
    hex=$(printf ':%04X ' "$p")
    grep -qi "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null || { echo "$p"; return 0; }
  done
  die "no free TCP port found"
}

write_config() {
  local node ctld_port slurmd_port hw cpus_line overrides=""
  node=$(hostname -s)
  ctld_port=$(free_port)
  slurmd_port=$(free_port "$ctld_port")
  # "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"
  hw=$(slurmd -C | sed -n 1p)  # sed reads it all: no SIGPIPE under pipefail
  cpus_line=$(echo "$hw" | sed -e 's/^NodeName=[^ ]* //')
  if [ -n "${EGM_SLURM_TEST_CPUS:-}" ]; then
    local mem
    mem=$(echo "$hw" | grep -o 'RealMemory=[0-9]*')
    cpus_line="CPUs=$EGM_SLURM_TEST_CPUS $mem"
    overrides="SlurmdParameters=config_overrides"
  fi
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run"
  : >"$DIR/plugstack.conf"   # no SPANK plugins from /etc/slurm
  cat >"$CONF.tmp" <<EOF
# Generated by tests/slurm/slurm_cluster.sh for a private test cluster; do not edit.
ClusterName=egmtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=root
SlurmdSpoolDir=$DIR/spool
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmdLogFile=$DIR/log/slurmd.log
$(slurm_conf_shared "$DIR" "${EGM_SLURM_CRED_EXPIRE_S:-10}")
$overrides
NodeName=$node NodeAddr=127.0.0.1 $cpus_line State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$CONF.tmp" "$CONF"
}

make_munge_key() {
  mkdir -p "$DIR/munge"
  # munged insists that every folder above its socket is searchable by all.
  chmod 0755 "$DIR" "$DIR/munge"
  local d=$DIR
  while d=$(dirname "$d") && [ "$d" != / ]; do
    [ -n "$(find "$d" -maxdepth 0 -perm -o+x)" ] ||
      die "munged needs every folder above its socket searchable by all, and $d is not (chmod o+x '$d', or use a DIR elsewhere)"
  done
  if [ ! -s "$DIR/munge/munge.key" ]; then
    mungekey --create --bits=1024 --keyfile="$DIR/munge/munge.key" >/dev/null 2>&1 ||
      dd if=/dev/urandom of="$DIR/munge/munge.key" bs=128 count=1 status=none
  fi
  chmod 0600 "$DIR/munge/munge.key"
}

# start_daemon NAME LOG COMMAND...: runs COMMAND in the foreground mode of the
# daemon, in its own session, output to LOG, and records its PID. setsid does
# not fork here (a background job of a script is no group leader), so $! is
# the daemon itself.
start_daemon() {
  local name=$1 log=$2 pid
  shift 2
  (cd "$DIR" && exec env "$MARKER" SLURM_CONF="$CONF" setsid "$@" >>"$log" 2>&1 </dev/null) &
  pid=$!
  echo "$name $pid" >>"$PIDS"
  sleep 0.3
  is_alive "$pid" || { log_tail "$log"; die "$name exited right after start (command: $*)"; }
}

wait_node_idle() {
  local deadline=$((SECONDS + START_TIMEOUT_S)) state="" name
  while [ $SECONDS -lt $deadline ]; do
    for name in munged slurmctld slurmd; do
      is_ours "$(daemon_pid $name)" || {
        log_tail "$DIR/log/$name.log" "$DIR/log/$name.out"
        stop_cluster >/dev/null 2>&1 || true
        die "$name died during start-up"
      }
    done
    state=$(SLURM_CONF=$CONF sinfo -h -N -o '%T' 2>/dev/null | sed -n 1p || true)
    [ "$state" = idle ] && return 0
    sleep 0.5
  done
  log_tail "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log"
  stop_cluster >/dev/null 2>&1 || true
  die "node not idle after ${START_TIMEOUT_S}s (last state: '${state:-no answer}')"
}

all_running() {
  local n=0 p
  for p in $(recorded_pids); do is_ours "$p" || return 1; n=$((n + 1)); done
  [ $n -eq 3 ]
}

start_cluster() {
  check_can_run
  if all_running && SLURM_CONF=$CONF sinfo -h >/dev/null 2>&1; then
    echo "slurm_cluster: already running in $DIR"
    return 0
  fi
  stop_cluster >/dev/null 2>&1 || true   # leftovers of a half-started cluster
  : >"$PIDS"
  make_munge_key
  write_config
  start_daemon munged "$DIR/log/munged.log" munged --foreground \
    --socket="$DIR/munge/munge.socket" --pid-file="$DIR/munge/munged.pid" \
    --log-file="$DIR/log/munged.file.log" --seed-file="$DIR/munge/munged.seed" \
    --key-file="$DIR/munge/munge.key"
  local i
  for i in $(seq 50); do [ -S "$DIR/munge/munge.socket" ] && break; sleep 0.1; done
  [ -S "$DIR/munge/munge.socket" ] || { log_tail "$DIR/log/munged.log"; die "munged made no socket"; }
  # -c: a fresh start, no jobs recovered from an earlier run in DIR.
  start_daemon slurmctld "$DIR/log/slurmctld.out" slurmctld -D -c -f "$CONF"
  start_daemon slurmd "$DIR/log/slurmd.out" slurmd -D -f "$CONF" -N "$(hostname -s)"
  wait_node_idle
  echo "slurm_cluster: running in $DIR (node $(hostname -s); $(grep -o 'CPUs=[0-9]*' "$CONF"))"
}

# --- stop -------------------------------------------------------------------

# Prints the given PIDs and all their descendants (job scripts under a
# slurmstepd whose slurmd is gone would otherwise be orphaned).
with_descendants() {
  [ $# -gt 0 ] || return 0
  ps -eo pid=,ppid= | awk -v roots="$*" '
    { parent[$1] = $2 }
    END {
      n = split(roots, r, " ")
      for (i = 1; i <= n; i++) keep[r[i]] = 1
      do {
        grown = 0
        for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grown = 1 }
      } while (grown)
      for (p in keep) print p
    }'
}

stop_cluster() {
  [ -f "$PIDS" ] || { echo "slurm_cluster: nothing recorded in $DIR"; return 0; }
  local ctld jobs
  ctld=$(daemon_pid slurmctld)
  # Jobs first, through Slurm, so every slurmstepd ends with its job (needs a
  # live slurmd; without one, the process sweep below ends them).
  if is_ours "$ctld" && is_ours "$(daemon_pid slurmd)"; then
    jobs=$(SLURM_CONF=$CONF timeout 10 squeue -h -o '%A' 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$CONF timeout 10 scancel $jobs 2>/dev/null || true
      local deadline=$((SECONDS + 15))
      while [ $SECONDS -lt $deadline ] &&
        [ -n "$(SLURM_CONF=$CONF timeout 10 squeue -h -o '%A' 2>/dev/null || true)" ]; do
        sleep 0.5
      done
    fi
  fi
  # Everything of this cluster, collected before anything dies and re-parents.
  local name pid daemons=() targets
  for name in slurmd slurmctld munged; do
    pid=$(daemon_pid "$name")
    is_ours "$pid" && daemons+=("$pid")
  done
  # shellcheck disable=SC2046
  targets=$(with_descendants "${daemons[@]}" $(marked_pids) | sort -un | tr '\n' ' ')
  # Daemons in reverse start order (slurmd, slurmctld, then the munged both
  # need), then whatever is left.
  for pid in "${daemons[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone 10 "$pid" || true
  done
  # shellcheck disable=SC2086
  [ -n "${targets// /}" ] && kill -TERM $targets 2>/dev/null || true
  # shellcheck disable=SC2086
  if ! wait_gone "$STOP_TIMEOUT_S" $targets; then
    # shellcheck disable=SC2086
    kill -KILL $targets 2>/dev/null || true
    # shellcheck disable=SC2086
    wait_gone 5 $targets || die "processes still alive after SIGKILL:$(for p in $targets; do is_alive "$p" && echo -n " $p"; done)"
  fi
  echo "slurm_cluster: stopped ($DIR)"
}

# --- status / env -----------------------------------------------------------

status_cluster() {
  [ -f "$PIDS" ] || { echo "slurm_cluster: not started in $DIR"; return 1; }
  local ok=0 name pid
  while read -r name pid; do
    if is_ours "$pid"; then echo "$name $pid running"; else echo "$name $pid stopped"; ok=1; fi
  done <"$PIDS"
  local stray
  stray=$(marked_pids | tr '\n' ' ')
  for pid in $(recorded_pids); do stray=${stray//"$pid "/}; done
  [ -n "${stray// /}" ] && echo "other processes of this cluster: $stray"
  return $ok
}

case "$action" in
  start) start_cluster ;;
  stop) stop_cluster ;;
  status) status_cluster ;;
  env)
    echo "export SLURM_CONF=$CONF"
    echo "export EGM_SLURM_CLUSTER_DIR=$DIR"
    ;;
  *) usage ;;
esac
