#!/usr/bin/env bash
# A sweep submitted to Slurm across two test hosts (tests/cluster/README.md).
#   multihost_slurm.sh EGM WORK
# Two test hosts are network namespaces this script makes (ip netns), each
# joined by a veth pair to a bridge in the root namespace (10.217.0.1 and
# 10.217.0.2; the root namespace is 10.217.0.254), each process on them in a
# UTS namespace of its own with the host's name (egm-host-a, egm-host-b).
# munged and slurmctld run in the root namespace; one `slurmd -N NAME` runs on
# each host, with its own spool folder, pid file and log (`%n` in slurm.conf).
#  1. the cluster: both nodes idle; `srun -N2 hostname` answers from both;
#  2. the reference: the spec on one host (this machine, 3 workers, egm sweep);
#  3. `egm submit SPEC --slurm --param nodes=2 --workers 3`: the real batch
#     script; mpirun in it (on egm-host-a) starts its daemon on egm-host-b with
#     srun; the 2-rank cells train on workers 1 (host A) and 2 (host B) with
#     the MPI all-reduce over TCP across the bridge;
#  4. once a 2-rank run across the hosts is done and a run on host B has
#     checkpointed, `scontrol requeue`; the second attempt finishes the sweep:
#     every cell done exactly once, nothing done before the requeue run again;
#  5. every cell's final and best val loss bit-identical to the one-host sweep.
# Needs root, Slurm and munge; exits 77 (skipped) where they cannot be set up.
set -u
EGM_SWEEP_TEST_DIR=${EGM_SOURCE_DIR:?}/tests/sweep
export EGM_SWEEP_TEST_DIR
# shellcheck source=../sweep/lib.sh
source "$EGM_SWEEP_TEST_DIR/lib.sh" "$1" "$2"
# The slurm.conf lines both test clusters share.
# shellcheck source=../slurm/slurm_conf.sh
source "${EGM_SOURCE_DIR}/tests/slurm/slurm_conf.sh"
SPEC=${EGM_SOURCE_DIR}/tests/cluster/specs/multihost.json
SWEEP=multihost
CELLS=8

for tool in ip unshare nsenter setsid munged mungekey slurmctld slurmd slurmstepd sbatch srun scontrol sinfo squeue scancel sqlite3; do
  command -v "$tool" >/dev/null || { echo "SKIP: no '$tool' (iproute2, util-linux, munge, slurm-wlm, slurm-client, sqlite3)"; exit 77; }
done
slurmd -C >/dev/null 2>&1 || { echo "SKIP: 'slurmd -C' cannot read this machine's configuration"; exit 77; }
NS_A=egm_sa_$$ NS_B=egm_sb_$$ BR=egmbr$$ VETH_A=egmsa$$ VETH_B=egmsb$$
IP_A=10.217.0.1 IP_B=10.217.0.2 IP_ROOT=10.217.0.254
# The cluster's folder: munged wants every folder above its socket searchable by all.
CL=$(mktemp -d /tmp/egm-mhslurm.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
chmod 755 "$CL"
MARKER="EGM_MULTIHOST_SLURM=$CL"
CONF=$CL/slurm.conf
export SLURM_CONF=$CONF
DAEMONS=""  # munged and slurmctld, in the root namespace

cleanup() {
  local ns pids p
  for ns in "$NS_B" "$NS_A"; do  # slurmd, slurmstepd and the job's processes on each host
    ip link del "$([ "$ns" = "$NS_A" ] && echo "$VETH_A" || echo "$VETH_B")" 2>/dev/null
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  for p in $DAEMONS; do
    grep -qzxF "$MARKER" "/proc/$p/environ" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  ip link del "$BR" 2>/dev/null
  if [ -d "$CL/log" ]; then mkdir -p "$WORK/cluster" && cp -r "$CL/log" "$CL/slurm.conf" "$WORK/cluster/" 2>/dev/null; fi
  rm -rf "$CL"
  return 0
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

if ! ip netns add "$NS_A" 2>"$WORK/netns.err"; then
  echo "SKIP: cannot make a network namespace here (ip netns add: $(head -c 200 "$WORK/netns.err")); this test needs root"
  exit 77
fi
if ! ip link add "$BR" type bridge 2>"$WORK/bridge.err"; then
  echo "SKIP: cannot make a bridge here (ip link add type bridge: $(head -c 200 "$WORK/bridge.err"))"
  exit 77
fi
ip netns add "$NS_B" &&
  ip addr add "$IP_ROOT/24" dev "$BR" && ip link set "$BR" up &&
  ip link add "$VETH_A" type veth peer name eth0 netns "$NS_A" &&
  ip link add "$VETH_B" type veth peer name eth0 netns "$NS_B" &&
  ip link set "$VETH_A" master "$BR" && ip link set "$VETH_B" master "$BR" &&
  ip link set "$VETH_A" up && ip link set "$VETH_B" up &&
  ip -n "$NS_A" addr add "$IP_A/24" dev eth0 && ip -n "$NS_B" addr add "$IP_B/24" dev eth0 &&
  ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
  ip -n "$NS_A" link set eth0 up && ip -n "$NS_B" link set eth0 up ||
  { echo "FAIL: could not set up the two test hosts"; exit 1; }

t0=$SECONDS
note() { echo "[$((SECONDS - t0)) s] $*"; }

# --- the cluster -------------------------------------------------------------
mkdir -p "$CL/munge" "$CL/state" "$CL/spool/egm-host-a" "$CL/spool/egm-host-b" "$CL/log" "$CL/run"
chmod 755 "$CL/munge"
mungekey --create --bits=1024 --keyfile="$CL/munge/munge.key" >/dev/null 2>&1 ||
  dd if=/dev/urandom of="$CL/munge/munge.key" bs=128 count=1 status=none
chmod 600 "$CL/munge/munge.key"
port() { echo $((20000 + RANDOM % 20000)); }  # the hosts' ports are their own; slurmctld's is checked below
CTLD_PORT=$(port)
while grep -qi "$(printf ':%04X ' "$CTLD_PORT")" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do CTLD_PORT=$(port); done
: >"$CL/plugstack.conf"
cat >"$CONF" <<EOF
# Generated by tests/cluster/multihost_slurm.sh: two nodes, each a test host.
ClusterName=egmmulti
SlurmctldHost=$(hostname -s)($IP_ROOT)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$(port)
SlurmUser=root
SlurmdUser=root
# One slurmd per test host on one file system: %n is the node's name.
SlurmdSpoolDir=$CL/spool/%n
SlurmdPidFile=$CL/run/slurmd-%n.pid
SlurmdLogFile=$CL/log/slurmd-%n.log
SlurmdParameters=config_overrides
$(slurm_conf_shared "$CL" 10)
NodeName=egm-host-a NodeAddr=$IP_A CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=egm-host-b NodeAddr=$IP_B CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=egm-host-a,egm-host-b Default=YES MaxTime=INFINITE State=UP
EOF

# daemon NAME COMMAND...: in the foreground mode, its own session, output to log/NAME.out.
daemon() {
  local name=$1
  shift
  (exec env "$MARKER" setsid "$@" >>"$CL/log/$name.out" 2>&1 </dev/null) &
  DAEMONS="$DAEMONS $!"
  disown $!  # killed by cleanup, not reported by this shell
}
daemon munged munged --foreground --socket="$CL/munge/munge.socket" --pid-file="$CL/munge/munged.pid" \
  --log-file="$CL/log/munged.log" --seed-file="$CL/munge/munged.seed" --key-file="$CL/munge/munge.key"
for _ in $(seq 50); do [ -S "$CL/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$CL/munge/munge.socket" ] || { cat "$CL/log/munged.out" "$CL/log/munged.log" 2>/dev/null; echo "SKIP: munged made no socket"; exit 77; }
daemon slurmctld slurmctld -D -c -f "$CONF"
# slurmd on each host: nsenter, not `ip netns exec`, which mounts a /sys of its
# own and so hides /sys/fs/cgroup, where slurmd looks even without cgroup plugins.
SLURMDS=""
for h in a b; do
  ns=$NS_A
  [ $h = b ] && ns=$NS_B
  # shellcheck disable=SC2016
  (exec env "$MARKER" setsid nsenter --net="/run/netns/$ns" unshare --uts /bin/sh -c \
    'hostname "$1"; shift; exec "$@"' slurmd_on "egm-host-$h" slurmd -D -f "$CONF" -N "egm-host-$h" \
    >>"$CL/log/slurmd-$h.out" 2>&1 </dev/null) &
  SLURMDS="$SLURMDS $!"
  disown $!
done
show_logs() {
  local f
  for f in "$CL"/log/*; do [ -s "$f" ] && { echo "    ----- $f"; tail -n 15 "$f" | sed 's/^/    | /'; }; done
}
deadline=$((SECONDS + 60))
until [ "$(sinfo -h -N -o '%N %T' 2>/dev/null | sort | paste -sd' ')" = "egm-host-a idle egm-host-b idle" ]; do
  dead=""
  for p in $DAEMONS $SLURMDS; do job_alive "$p" || dead="$dead $p"; done
  if [ $SECONDS -ge $deadline ] || [ -n "$dead" ]; then
    [ -z "$dead" ] || echo "    daemons that exited:$dead"
    sinfo -N 2>&1 | sed 's/^/    | /'
    show_logs
    echo "FAIL: the two nodes did not come up idle within 60 s"
    exit 1
  fi
  sleep 0.5
done
note "cluster up: $(sinfo -h -N -o '%N(%T)' | paste -sd' ')"

# 1. One step across both nodes: srun from the root namespace, tasks on each host.
expect_eq "srun -N2 hostname" "egm-host-a|egm-host-b" \
  "$(timeout 60 srun -N2 -n2 hostname 2>"$WORK/srun.err" | sort | paste -sd'|')"
[ -s "$WORK/srun.err" ] && sed 's/^/    srun: /' "$WORK/srun.err"
[ "$failures" = 0 ] || { show_logs; finish; }

# job_field JOB FIELD: one field of `scontrol show job` (JobState, Restarts, NodeList).
job_field() { scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
# wait_job_state JOB STATE TIMEOUT_S: 0 once the job is in STATE; 1 on another final
# state or on timeout, saying which.
wait_job_state() {
  local deadline=$((SECONDS + $3)) state=""
  while [ $SECONDS -lt $deadline ]; do
    state=$(job_field "$1" JobState)
    [ "$state" = "$2" ] && return 0
    case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL) break ;; esac
    sleep 0.25
  done
  echo "job $1 is '${state:-unknown}', not $2 (waited up to $3 s)"
  return 1
}
show_job() {  # the job, its log and the database, for a failure's report
  scontrol show job "$1" 2>&1 | sed 's/^/    | /'
  [ -f "$LOG" ] && tail -n 30 "$LOG" | sed 's/^/    log| /'
  show_attempts "$DB"
  show_logs
}

# 2. The reference: the same spec on one host.
"$EGM" sweep "$SPEC" --workers 3 --db "$WORK/one_host.sqlite" --runs-dir "$WORK/one_host_runs" --view none \
  >"$WORK/one_host.txt" 2>&1
expect_eq "one-host sweep exit status" 0 $?
note "one-host reference done"

# 3. The sweep as one Slurm job over both nodes: 1 coordinator + 3 workers = 4
#    tasks, 2 on each node (2 CPUs each), so rank 0 and worker 1 run on
#    egm-host-a and workers 2 and 3 on egm-host-b.
CHECKPOINT_EVERY=20
"$EGM" submit "$SPEC" --slurm --param nodes=2 --workers 3 --time 10:00 --db "$DB" --runs-dir "$RUNS" \
  --checkpoint-every $CHECKPOINT_EVERY >"$WORK/submit.txt" 2>&1
expect_eq "egm submit exit status" 0 $?
job=$(sed -n 's/^submitted sweep .* as Slurm job \([0-9][0-9]*\)$/\1/p' "$WORK/submit.txt")
LOG=$(dirname "$DB")/$SWEEP-$job.out
[ -n "$job" ] || { sed 's/^/    | /' "$WORK/submit.txt"; fail "no job id in egm submit's output"; finish; }
expect_in_file "the batch script asks for two nodes" "#SBATCH --nodes=2" "$(dirname "$DB")/$SWEEP.sbatch"
expect_in_file "the batch script asks for 4 tasks" "#SBATCH --ntasks=4" "$(dirname "$DB")/$SWEEP.sbatch"
wait_job_state "$job" RUNNING 60 || { show_job "$job"; fail "job $job never ran"; finish; }
expect_eq "the job's nodes" "egm-host-a,egm-host-b" "$(job_field "$job" NodeList)"
note "job $job running on $(job_field "$job" NodeList)"

# 4. Requeued once a 2-rank run across the hosts is done and a run on host B is
#    past a checkpoint with most of its steps still ahead (Slurm signals every
#    process of the job: the runs checkpoint where they stop).
READY="SELECT (SELECT count(*) FROM runs WHERE status = 'done' AND host = 'egm-host-a,egm-host-b'
  AND world_size = 2) >= 1 AND (SELECT count(*) FROM runs r WHERE r.status = 'running'
  AND r.host LIKE '%egm-host-b%' AND (SELECT max(step) FROM metrics m WHERE m.run_id = r.id AND m.split = 'train')
  BETWEEN $((CHECKPOINT_EVERY + 5)) AND 100) >= 1 AS ready"
if ! wait_for "$DB" "$READY" 120 "a 2-rank run across the hosts done, a run on host B past a checkpoint"; then
  show_job "$job"
  fail "the sweep never reached the state to requeue it at"
  scancel "$job"
  finish
fi
done_before=$(qpoll "$DB" "SELECT group_concat(key, ' ') FROM (SELECT key FROM cells WHERE status = 'done' ORDER BY key)")
last_run=$(qpoll "$DB" "SELECT max(id) FROM runs")
scontrol requeue "$job" || fail "scontrol requeue $job failed"
note "requeued job $job; done before: $done_before"
wait_job_state "$job" PENDING 60 || { show_job "$job"; fail "job $job did not go back to the queue"; finish; }
# Between the attempts: the newest checkpoint of each unfinished cell, from its file
# ("EGMCKPT1", uint32 length, JSON header), and where that cell ran.
ckpt_step() {
  /usr/bin/python3 -c 'import json,struct,sys
b=open(sys.argv[1],"rb").read(); n=struct.unpack("<I",b[8:12])[0]; print(json.loads(b[12:12+n])["step"])' "$1"
}
declare -A last_ckpt=()
on_b=""
for key in $(qpoll "$DB" "SELECT key FROM cells WHERE status != 'done' ORDER BY key"); do
  files=("$RUNS/$SWEEP/$key"-*/checkpoint.egmc)
  [ -f "${files[0]}" ] || continue
  last_ckpt[$key]=$(ckpt_step "${files[0]}")
  if [ "${last_ckpt[$key]}" -gt 0 ] && [ "$(qpoll "$DB" "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
      WHERE c.key = '$key' AND r.host LIKE '%egm-host-b%'")" != 0 ]; then on_b="$on_b $key"; fi
done
note "checkpoints between the attempts: $(for k in "${!last_ckpt[@]}"; do echo -n "$k@${last_ckpt[$k]} "; done)"
[ -n "$on_b" ] || fail "no run on host B had checkpointed past step 0 when the job was requeued"

# 5. The second attempt finishes the sweep.
if ! wait_job_state "$job" COMPLETED 150; then show_job "$job"; fail "the requeued job did not complete"; finish; fi
note "job $job completed after $(job_field "$job" Restarts) requeue"
expect_eq "requeues" 1 "$(job_field "$job" Restarts)"
expect_all_done_once "$DB" "$CELLS"
expect_eq "cells done before the requeue and run again" "" \
  "$(q "$DB" "SELECT group_concat(DISTINCT c.key) FROM runs r JOIN cells c ON c.id = r.cell_id
     WHERE r.id > $last_run AND instr(' $done_before ', ' ' || c.key || ' ') > 0")"
for key in "${!last_ckpt[@]}"; do
  want=${last_ckpt[$key]}
  [ "$want" = 0 ] && want=""  # resuming from step 0 is starting from scratch
  expect_eq "$key resumed from its last checkpoint" "$want" \
    "$(q "$DB" "SELECT r.resumed_from_step FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$key' AND r.status = 'done'")"
done
expect_eq "the requeue counted as a failure" 0 "$(q "$DB" "SELECT sum(failures) FROM cells")"
expect_eq "2-rank runs across both hosts, done, over MPI" 1 \
  "$(q "$DB" "SELECT count(*) >= 1 FROM runs WHERE host = 'egm-host-a,egm-host-b' AND world_size = 2
     AND backend = 'mpi' AND status = 'done'")"
expect_eq "1-rank runs on host B" 1 "$(q "$DB" "SELECT count(*) >= 1 FROM runs WHERE host = 'egm-host-b'")"
expect_eq "runs on hosts other than the test hosts" "" \
  "$(q "$DB" "SELECT group_concat(DISTINCT host) FROM runs
     WHERE host NOT IN ('egm-host-a', 'egm-host-b', 'egm-host-a,egm-host-b')")"
LOSSES="SELECT key || ' ' || printf('%.17g', final_val) || ' ' || printf('%.17g', best_val) FROM cells ORDER BY key"
expect_eq "final and best val of every cell, against one host" "$(q "$WORK/one_host.sqlite" "$LOSSES" | paste -sd'|')" \
  "$(q "$DB" "$LOSSES" | paste -sd'|')"
[ "$failures" = 0 ] || show_job "$job"
note "done"
finish
