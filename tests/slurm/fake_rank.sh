#!/bin/bash
# Stand-in for egm-coordinator and egm-worker in test_sweep_script.sh, doing
# what the requeue protocol asks of them (slurm/README.md): on SIGUSR2 the
# workers checkpoint and exit 0, the coordinator waits for them and exits 75;
# a requeued attempt (SLURM_RESTART_COUNT > 0) resumes and finishes.
# Usage: fake_rank.sh coordinator|worker EVENTS_FILE
role=$1
events=$2
attempt=${SLURM_RESTART_COUNT:-0}
say() { echo "$role rank ${OMPI_COMM_WORLD_RANK:-?} attempt $attempt: $*" >>"$events"; }

say started
if [ "$attempt" -gt 0 ]; then
  say "resumed, finishing"
  exit 0
fi
# Like the real coordinator, which exits only once every worker has answered its
# STOP: it waits (30 s at most) for the worker's line before exiting 75; mpirun
# would otherwise end the worker before it logged.
worker_stopped() {
  local deadline=$((SECONDS + 30))
  until grep -qE "^worker rank [0-9]+ attempt $attempt: got USR2" "$events" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { say "no worker got USR2 within 30 s"; return; }
    sleep 0.05
  done
}
if [ "$role" = coordinator ]; then
  trap 'say "got USR2, checkpointing"; worker_stopped; say "exit 75"; exit 75' USR2
else
  trap 'say "got USR2, checkpointing"; exit 0' USR2
fi
trap 'say "got TERM"; exit 1' TERM
while :; do
  sleep 0.2 &
  wait $!
done
