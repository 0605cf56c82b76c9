#!/usr/bin/env bash
# SIGKILL the whole job (mpirun and every rank) while a 2-rank cell
# (specs/long_dp.json) is mid-run with a checkpoint written; run the spec
# again: the cell continues from that checkpoint on two workers (not from
# step 0), and its train losses after the resume and its final losses equal
# those of the same spec swept without interruption, bit for bit (CPU, one
# thread per rank, dropout on: each rank's mask stream resumes too).
#   sweep_data_parallel_kill_resume.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/long_dp.json

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/first.txt" 2>&1 &
job=$!
# The running attempt has checkpointed and trained on past it.
ready="SELECT EXISTS (SELECT 1 FROM runs r
  JOIN events e ON e.run_id = r.id AND e.kind = 'checkpoint'
  JOIN metrics m ON m.run_id = r.id AND m.split = 'train'
  WHERE r.status = 'running' AND m.step > e.step) AS ready"
# Checked on the job frozen with SIGSTOP, then killed: nothing moves on in between.
if freeze_job_when "$job" "$DB" "$ready" 150 "the 2-rank cell running past a checkpoint"; then
  kill -KILL $FROZEN
else
  fail "the 2-rank cell never reached a checkpoint with training past it"
  kill_job "$job"
fi
wait "$job"
echo "killed; first run's log:"; sed 's/^/    | /' "$WORK/first.txt" | tail -n 6

ckpt=$(q "$DB" "SELECT max(step) FROM events WHERE kind = 'checkpoint'")
trained=$(q "$DB" "SELECT max(step) FROM metrics WHERE split = 'train'")
echo "killed at about step $trained; last checkpoint at step $ckpt"
[ -n "$ckpt" ] && [ "$ckpt" -gt 0 ] || fail "no checkpoint before the kill"
expect_eq "attempts left running by the kill" 1 "$(q "$DB" "SELECT count(*) FROM runs WHERE status = 'running'")"

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/second.txt" 2>&1
expect_eq "exit status of the resumed sweep" 0 $?
expect_all_done_once "$DB" 1
expect_eq "attempt 1 interrupted (recovered), attempt 2 done, both on 2 ranks over MPI" \
  "1 interrupted 2 mpi;2 done 2 mpi;" "$(q "$DB" "SELECT attempt || ' ' || status || ' ' || world_size || ' ' || backend
  FROM runs ORDER BY attempt" | tr '\n' ';')"
resumed=$(q "$DB" "SELECT resumed_from_step FROM runs WHERE attempt = 2")
expect_resumed_from_checkpoint "attempt 2" "$resumed" "$ckpt" 50
expect_in_file "resumed on two workers" "on workers " "$WORK/second.txt"
first_step=$(q "$DB" "SELECT min(m.step) FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.attempt = 2
  AND m.split = 'train'")
[ -n "$first_step" ] && [ -n "$resumed" ] && [ "$first_step" -gt "$resumed" ] ||
  fail "attempt 2's first train step is '$first_step', not after its checkpoint at $resumed (restarted?)"

# The same spec swept in one go, in another database and runs folder.
"$EGM" sweep "$SPEC" --workers 2 --db "$WORK/reference.sqlite" --runs-dir "$WORK/reference_runs" --view plain \
  >"$WORK/reference.txt" 2>&1 || fail "the uninterrupted reference sweep failed"
/usr/bin/python3 - "$DB" "$WORK/reference.sqlite" "$EGM" "$ckpt" <<'PY' || fail "the resumed 2-rank run differs from the uninterrupted one"
import json, subprocess, sys
db, ref, egm, ckpt = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def query(path, sql):
    out = subprocess.run([egm, "query", sql, "--db", path, "--format", "json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)
bad = 0
mine, theirs = query(db, "SELECT final_val, best_val FROM cells")[0], query(ref, "SELECT final_val, best_val FROM cells")[0]
for name in ("final_val", "best_val"):
    same = float(mine[name]) == float(theirs[name])
    print(f"  {name}: killed and resumed {mine[name]!r}  uninterrupted {theirs[name]!r}  {'equal' if same else 'DIFFERENT'}")
    bad += not same
sql = f"SELECT step, loss FROM metrics WHERE split = 'train' AND step > {ckpt} ORDER BY step"
a = [(r["step"], float(r["loss"])) for r in query(db, sql)]
b = [(r["step"], float(r["loss"])) for r in query(ref, sql)]
same = a == b and len(a) > 0
print(f"  train losses after step {ckpt}: {len(a)} rows vs {len(b)}, {'bitwise equal' if same else 'DIFFERENT'}")
bad += not same
sys.exit(1 if bad else 0)
PY
finish
