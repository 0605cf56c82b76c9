#!/usr/bin/env bash
# A sweep across two hosts, and one of them lost mid-sweep (tests/cluster/README.md).
#   multihost_mpi.sh EGM WORK
# Two test hosts are network namespaces this script makes (ip netns, a veth
# pair, 10.216.0.1 and 10.216.0.2), each process on them in its own UTS
# namespace with the host's name (egm-host-a, egm-host-b). mpirun runs on host
# A and starts its daemon on host B through a launcher agent that enters B's
# namespaces where ssh would log in; Open MPI talks TCP over the veth pair.
#  1. placement: Open MPI's ranks and local ranks per host (what the coordinator
#     deals GPUs by, src/launch/gpu_placement.h);
#  2. the reference: specs/multihost.json on one host (this machine, 3 workers);
#  3. the same sweep with the coordinator and worker 1 on host A and workers 2
#     and 3 on host B: a 2-rank cell trains on workers 1+2, across the hosts,
#     with the MPI all-reduce over TCP;
#  4. once that cell is done and a run on host B has checkpointed, every process
#     of host B is killed (SIGKILL): Open MPI ends the job;
#  5. the same command on host A alone finishes the sweep: every cell done
#     exactly once, nothing done before the kill run again, the cell caught on
#     B resumed from its checkpoint, and every cell's final and best val loss
#     bit-identical to the one-host reference.
# Needs root (network namespaces); exits 77 (skipped) where they cannot be made.
set -u
EGM_SWEEP_TEST_DIR=${EGM_SOURCE_DIR:?}/tests/sweep
export EGM_SWEEP_TEST_DIR
# shellcheck source=../sweep/lib.sh
source "$EGM_SWEEP_TEST_DIR/lib.sh" "$1" "$2"
SPEC=${EGM_SOURCE_DIR}/tests/cluster/specs/multihost.json
CELLS=8

for tool in ip unshare; do
  command -v "$tool" >/dev/null || { echo "SKIP: no '$tool' (iproute2, util-linux)"; exit 77; }
done
NS_A=egm_a_$$ NS_B=egm_b_$$ VETH_A=egmva$$ VETH_B=egmvb$$
IP_A=10.216.0.1 IP_B=10.216.0.2
cleanup() {
  local ns pids
  for ns in "$NS_A" "$NS_B"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}
trap cleanup EXIT
if ! ip netns add "$NS_A" 2>"$WORK/netns.err"; then
  echo "SKIP: cannot make a network namespace here (ip netns add: $(head -c 200 "$WORK/netns.err")); this test needs root"
  exit 77
fi
ip netns add "$NS_B" &&
  ip link add "$VETH_A" type veth peer name "$VETH_B" &&
  ip link set "$VETH_A" netns "$NS_A" && ip link set "$VETH_B" netns "$NS_B" &&
  ip -n "$NS_A" addr add "$IP_A/24" dev "$VETH_A" && ip -n "$NS_B" addr add "$IP_B/24" dev "$VETH_B" &&
  ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
  ip -n "$NS_A" link set "$VETH_A" up && ip -n "$NS_B" link set "$VETH_B" up ||
  { echo "FAIL: could not set up the two test hosts"; exit 1; }

# on_host a|b COMMAND...: COMMAND on that host (its network namespace, and a UTS
# namespace of its own carrying the host's name).
on_host() {
  local ns=$NS_A name=egm-host-a
  [ "$1" = b ] && ns=$NS_B name=egm-host-b
  shift
  ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$1"; shift; exec "$@"' on_host "$name" "$@"
}
# Open MPI's launcher agent: "agent HOST COMMAND" runs COMMAND (a shell line) on HOST.
cat >"$WORK/agent.sh" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in
  $IP_A) ns=$NS_A; name=egm-host-a ;;
  $IP_B) ns=$NS_B; name=egm-host-b ;;
  *) echo "agent: unknown test host '\$host'" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c 'hostname "\$1"; shift; exec /bin/sh -c "\$*"' agent "\$name" "\$@"
EOF
chmod +x "$WORK/agent.sh"
printf '%s slots=2\n%s slots=2\n' "$IP_A" "$IP_B" >"$WORK/hosts_ab"
printf '%s slots=4\n' "$IP_A" >"$WORK/hosts_a"
mpi_args() {  # mpi_args HOSTFILE
  echo "--hostfile $1 --mca plm_rsh_agent $WORK/agent.sh --mca btl self,tcp" \
    "--mca btl_tcp_if_include 10.216.0.0/24 --mca oob_tcp_if_include 10.216.0.0/24"
}
t0=$SECONDS

# 1. Placement: ranks fill host A's two slots, then host B's; local ranks count per host.
# shellcheck disable=SC2046,SC2016
on_host a mpirun --oversubscribe $(mpi_args "$WORK/hosts_ab") -np 4 \
  /bin/sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname) $OMPI_COMM_WORLD_LOCAL_RANK"' >"$WORK/probe.txt" 2>&1
expect_eq "ranks, hosts and local ranks" "0 egm-host-a 0|1 egm-host-a 1|2 egm-host-b 0|3 egm-host-b 1" \
  "$(sort -n "$WORK/probe.txt" | paste -sd'|')"

# 2. The reference: the same spec on one host.
"$EGM" sweep "$SPEC" --workers 3 --db "$WORK/one_host.sqlite" --runs-dir "$WORK/one_host_runs" --view none \
  >"$WORK/one_host.txt" 2>&1
expect_eq "one-host sweep exit status" 0 $?

# 3. Coordinator and worker 1 on host A, workers 2 and 3 on host B.
on_host a "$EGM" sweep "$SPEC" --workers 3 --db "$DB" --runs-dir "$RUNS" --view none \
  --mpirun-args "$(mpi_args "$WORK/hosts_ab")" >"$WORK/two_hosts.txt" 2>&1 &
JOB=$!

# 4. Caught when a 2-rank run across both hosts is done and a run on host B has checkpointed.
READY="SELECT (SELECT count(*) FROM runs WHERE status = 'done' AND host = 'egm-host-a,egm-host-b'
  AND world_size = 2) >= 1 AND (SELECT count(*) FROM runs r WHERE r.status = 'running'
  AND r.host LIKE '%egm-host-b%' AND EXISTS (SELECT 1 FROM events e WHERE e.run_id = r.id
  AND e.kind = 'checkpoint')) >= 1 AS ready"
if ! freeze_job_when "$JOB" "$DB" "$READY" 180 "a 2-rank run across the hosts done, a run on host B checkpointed"; then
  kill_job "$JOB"
  sed 's/^/    | /' "$WORK/two_hosts.txt" | tail -n 30
  fail "the two-host sweep never reached the state to cut host B at"
  finish
fi
done_before=$(q "$DB" "SELECT group_concat(key, ' ') FROM (SELECT key FROM cells WHERE status = 'done' ORDER BY key)")
caught=$(q "$DB" "SELECT group_concat(c.key, ' ') FROM runs r JOIN cells c ON c.id = r.cell_id
  WHERE r.status = 'running' AND r.host LIKE '%egm-host-b%' AND EXISTS (SELECT 1 FROM events e
  WHERE e.run_id = r.id AND e.kind = 'checkpoint')")
last_run=$(q "$DB" "SELECT max(id) FROM runs")
echo "host B cut at $((SECONDS - t0)) s; done: $done_before; checkpointed and running on host B: $caught"
# shellcheck disable=SC2046
kill -KILL $(ip netns pids "$NS_B") 2>/dev/null
thaw_job
deadline=$((SECONDS + 90))
while job_alive "$JOB" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
if job_alive "$JOB"; then
  fail "Open MPI did not end the job within 90 s of losing host B"
  kill_job "$JOB"
fi
wait "$JOB"
rc=$?
[ "$rc" != 0 ] || fail "the sweep that lost host B exited 0"
echo "the job ended with status $rc"
expect_eq "processes left on host B" "" "$(ip netns pids "$NS_B")"

# 5. The same command on host A alone.
on_host a "$EGM" sweep "$SPEC" --workers 3 --db "$DB" --runs-dir "$RUNS" --view none \
  --mpirun-args "$(mpi_args "$WORK/hosts_a")" >"$WORK/host_a.txt" 2>&1
rc=$?
expect_eq "exit status of the rerun on host A" 0 "$rc"
[ "$rc" = 0 ] || sed 's/^/    | /' "$WORK/host_a.txt" | tail -n 30
expect_all_done_once "$DB" "$CELLS"
expect_eq "cells done before the cut and run again" "" \
  "$(q "$DB" "SELECT group_concat(DISTINCT c.key) FROM runs r JOIN cells c ON c.id = r.cell_id
     WHERE r.id > $last_run AND instr(' $done_before ', ' ' || c.key || ' ') > 0")"
expect_eq "hosts of the attempts after the cut" "egm-host-a" \
  "$(q "$DB" "SELECT group_concat(DISTINCT host) FROM runs WHERE id > $last_run")"
for key in $caught; do
  expect_eq "$key resumed from its checkpoint on host A" 1 \
    "$(q "$DB" "SELECT r.resumed_from_step >= 50 FROM runs r JOIN cells c ON c.id = r.cell_id
       WHERE c.key = '$key' AND r.status = 'done'")"
done
expect_eq "2-rank runs across both hosts, done, over MPI" 1 \
  "$(q "$DB" "SELECT count(*) >= 1 FROM runs WHERE host = 'egm-host-a,egm-host-b' AND world_size = 2
     AND backend = 'mpi' AND status = 'done'")"
expect_eq "1-rank runs on host B" 1 "$(q "$DB" "SELECT count(*) >= 1 FROM runs WHERE host = 'egm-host-b'")"
LOSSES="SELECT key || ' ' || printf('%.17g', final_val) || ' ' || printf('%.17g', best_val) FROM cells ORDER BY key"
expect_eq "final and best val of every cell, against one host" "$(q "$WORK/one_host.sqlite" "$LOSSES" | paste -sd'|')" \
  "$(q "$DB" "$LOSSES" | paste -sd'|')"
echo "took $((SECONDS - t0)) s"
finish
