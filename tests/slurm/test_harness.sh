#!/usr/bin/env bash
# slurm_harness_smoke: the private test cluster (slurm_cluster.sh) runs real
# Slurm jobs:
#   1. a batch job runs to COMPLETED and writes its file;
#   2. a --requeue job requeued mid-run comes back with SLURM_RESTART_COUNT=1,
#      finishes, and its --open-mode=append log keeps both attempts;
#   3. --time=1 --signal=B:USR2@50 delivers SIGUSR2 to the batch shell before
#      the limit (the job traps it and ends COMPLETED, not TIMEOUT);
#   4. stop leaves no daemon alive.
# Exit 77 (skip) where Slurm cannot run at all.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

TEST_T0=$SECONDS
make_test_workdir smoke

start_test_cluster "$CLUSTER"
note "cluster up: $(sinfo -h -N -o '%N %T %c CPUs')"
cd "$WORK"

# 1. A trivial job.
job=$(submit -o "$WORK/trivial-%j.out" --wrap "echo \"hello from job \$SLURM_JOB_ID\" > $WORK/trivial.txt")
wait_job_state "$job" COMPLETED 60 "$WORK/trivial-$job.out"
[ "$(cat "$WORK/trivial.txt")" = "hello from job $job" ] || fail "trivial job wrote '$(cat "$WORK/trivial.txt")'"
note "trivial job $job COMPLETED"

# 3 (started early: it takes longest). The warning signal before the limit.
cat >"$WORK/warned.sh" <<'SCRIPT'
#!/bin/bash
start=$SECONDS
trap 'echo "USR2 after $((SECONDS - start))s" >> warned.log; exit 0' USR2
echo "started" > warned.log
while :; do sleep 1 & wait $!; done
SCRIPT
warned=$(submit --time=1 --signal=B:USR2@50 -o "$WORK/warned-%j.out" "$WORK/warned.sh")

# 2. Requeue mid-run.
cat >"$WORK/requeued.sh" <<'SCRIPT'
#!/bin/bash
attempt=${SLURM_RESTART_COUNT:-0}
echo "attempt $attempt" >> attempts.log
echo "stdout of attempt $attempt"
if [ "$attempt" -eq 0 ]; then sleep 300; fi
SCRIPT
requeued=$(submit --requeue --open-mode=append -o "$WORK/requeued-%j.out" "$WORK/requeued.sh")
wait_for_line "$WORK/attempts.log" '^attempt 0$' 60
t_requeue=$SECONDS
scontrol requeue "$requeued" || fail "scontrol requeue $requeued failed"
wait_job_state "$requeued" COMPLETED 120 "$WORK/requeued-$requeued.out"
note "requeued job $requeued COMPLETED $((SECONDS - t_requeue))s after the requeue"
[ "$(cat "$WORK/attempts.log")" = "$(printf 'attempt 0\nattempt 1')" ] ||
  fail "attempts.log is '$(cat "$WORK/attempts.log")', expected attempts 0 and 1"
[ "$(job_field "$requeued" Restarts)" = 1 ] || fail "Restarts=$(job_field "$requeued" Restarts), expected 1"
grep -q '^stdout of attempt 0$' "$WORK/requeued-$requeued.out" ||
  fail "the first attempt's output was not kept (open-mode=append)"
grep -q '^stdout of attempt 1$' "$WORK/requeued-$requeued.out" || fail "no output from attempt 1"

# 3, continued.
wait_job_state "$warned" COMPLETED 150 "$WORK/warned-$warned.out"
grep -q '^USR2 after [0-9]*s$' "$WORK/warned.log" || fail "no SIGUSR2 before the limit: $(cat "$WORK/warned.log")"
note "warning signal job $warned COMPLETED: $(tail -n 1 "$WORK/warned.log") (limit 60s, warning at 50s before)"

# 4.
stop_and_check_cluster "$CLUSTER"
note "slurm_harness_smoke passed"
