#!/usr/bin/env bash
# slurm_sweep_requeue: the rendered sweep batch script (slurm/egm-sweep.sbatch.tmpl)
# on the private test cluster, with real mpirun and stand-in ranks for
# egm-coordinator and egm-worker (fake_rank.sh):
#   1. sbatch accepts the rendered #SBATCH lines, quoting included;
#   2. the warning SIGUSR2 reaches the batch shell, which forwards it to
#      mpirun, which forwards it to both ranks; the coordinator exits 75 and
#      the script requeues the job. The signal is sent with
#      `scancel --batch --signal=USR2`, the delivery Slurm uses for
#      --signal=B:USR2@N (slurm_harness_smoke times the real one; here it
#      would cost half a minute);
#   3. the second attempt (SLURM_RESTART_COUNT=1) resumes and completes, and
#      the appended log shows both attempts;
#   4. scancel (SIGTERM) ends a sweep without a requeue.
# Usage: test_sweep_script.sh PATH/TO/egm_render_sbatch. Exit 77: no Slurm here.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RENDER=$(realpath "${1:?usage: test_sweep_script.sh PATH/TO/egm_render_sbatch}")
[ -x "$RENDER" ] || fail "$RENDER is not an executable"
command -v mpirun >/dev/null || { echo "skip: mpirun not found"; exit 77; }

TEST_T0=$SECONDS
make_test_workdir sweep

start_test_cluster "$CLUSTER"
cd "$WORK"

# A folder with a space, so the launch command's quoting is exercised end to end.
BIN="$WORK/bin dir"
mkdir -p "$BIN"
cp "$SLURM_TEST_HERE/fake_rank.sh" "$BIN/fake_rank.sh"
chmod +x "$BIN/fake_rank.sh"

render() {  # render OUT EVENTS name=value...
  local out=$1 events=$2
  shift 2
  "$RENDER" workers=1 time=5 warning_seconds=50 max_restarts=3 chdir="$WORK" \
    output="$WORK/sweep-%j.out" job_name="egm sweep 'test'" \
    launch_command="mpirun -np 1 '$BIN/fake_rank.sh' coordinator '$events' : -np 1 '$BIN/fake_rank.sh' worker '$events'" \
    "$@" >"$out" || fail "rendering failed"
}

# 1-3. Warning, requeue, resume.
render "$WORK/sweep.sbatch" "$WORK/events.log"
bash -n "$WORK/sweep.sbatch" || fail "rendered script does not parse"
job=$(submit "$WORK/sweep.sbatch")
log=$WORK/sweep-$job.out
name=$(scontrol show job "$job" | sed -n "s/^ *JobId=$job JobName=//p")
[ "$name" = "egm sweep 'test'" ] || fail "sbatch read the job name as '$name'"
[ "$(job_field "$job" NumTasks)" = 2 ] || fail "NumTasks=$(job_field "$job" NumTasks), expected workers + 1 = 2"
grep -qx '#SBATCH --signal=B:USR2@50' "$WORK/sweep.sbatch" || fail "no warning signal line in the script"
note "submitted sweep job $job ('$name', 2 tasks)"

wait_for_line "$WORK/events.log" '^coordinator rank 0 attempt 0: started$' 60
wait_for_line "$WORK/events.log" '^worker rank 1 attempt 0: started$' 60
note "attempt 0 running under mpirun"
scancel --batch --signal=USR2 "$job"
wait_for_line "$log" 'SIGUSR2: time limit' 30
note "warning signal reached the batch shell"
wait_for_line "$log" 'attempt 1 .*start on' 90
note "attempt 1 started"
wait_job_state "$job" COMPLETED 90 "$log"
note "sweep job $job COMPLETED after $(job_field "$job" Restarts) requeue"

for line in \
  '^coordinator rank 0 attempt 0: got USR2, checkpointing$' \
  '^worker rank 1 attempt 0: got USR2, checkpointing$' \
  '^coordinator rank 0 attempt 0: exit 75$' \
  '^coordinator rank 0 attempt 1: resumed, finishing$' \
  '^worker rank 1 attempt 1: resumed, finishing$'; do
  grep -qE "$line" "$WORK/events.log" || { cat "$WORK/events.log" >&2; fail "events.log lacks '$line'"; }
done
for line in \
  'attempt 0 .*launcher exited with status 75$' \
  'attempt 0 .*requeueing$' \
  'attempt 1 .*launcher exited with status 0$'; do
  grep -qE "$line" "$log" || { cat "$log" >&2; fail "the sweep log lacks '$line'"; }
done
[ "$(job_field "$job" Restarts)" = 1 ] || fail "Restarts=$(job_field "$job" Restarts), expected 1"

# 4. A cancel is not a requeue.
render "$WORK/cancelled.sbatch" "$WORK/cancel-events.log"
cancelled=$(submit "$WORK/cancelled.sbatch")
wait_for_line "$WORK/cancel-events.log" '^coordinator rank 0 attempt 0: started$' 60
scancel "$cancelled"
wait_job_state "$cancelled" CANCELLED 60 "$WORK/sweep-$cancelled.out"
wait_node_idle 60   # every process of the job gone: the batch shell has logged all it will
[ "$(job_field "$cancelled" Restarts)" = 0 ] || fail "a cancelled sweep was requeued"
grep -q 'SIGTERM: job cancelled' "$WORK/sweep-$cancelled.out" ||
  { cat "$WORK/sweep-$cancelled.out" >&2; fail "the batch shell did not log the SIGTERM"; }
grep -q 'requeueing$' "$WORK/sweep-$cancelled.out" && fail "a cancelled sweep asked for a requeue"
note "cancelled sweep $cancelled: CANCELLED, not requeued"

stop_and_check_cluster "$CLUSTER"
note "slurm_sweep_requeue passed"
