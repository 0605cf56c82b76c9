#!/usr/bin/env bash
# SIGKILL the whole job (mpirun and every rank) mid-sweep, once a cell has
# finished and another is mid-run with a checkpoint (checked on the job frozen
# with SIGSTOP just before the kill, so nothing moves on in between); run the
# spec again:
# every cell done exactly once, the killed cell continues from its checkpoint,
# and its final losses equal those of an uninterrupted `egm train` of the same
# config, bit for bit (CPU, one thread).
#   sweep_kill_resume.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/long_tiny.json

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/first.txt" 2>&1 &
job=$!
# A finished cell, and a running attempt that has checkpointed and trained on past it.
# The kill lands on a frozen job whose (frozen) database shows exactly that, so it is
# what the rerun finds, however fast the cells run.
ready="SELECT (SELECT count(*) FROM cells WHERE status = 'done') >= 1 AND EXISTS (SELECT 1 FROM runs r
  JOIN events e ON e.run_id = r.id AND e.kind = 'checkpoint'
  JOIN metrics m ON m.run_id = r.id AND m.split = 'train'
  WHERE r.status = 'running' AND m.step > e.step) AS ready"
if freeze_job_when "$job" "$DB" "$ready" 150 "a done cell and a running one trained past a checkpoint"; then
  kill -KILL $FROZEN
else
  fail "the sweep never reached a done cell plus a checkpointed running one"
  kill_job "$job"
fi
wait "$job"
echo "killed; first run's log:"; sed 's/^/    | /' "$WORK/first.txt" | tail -n 8

killed=$(q "$DB" "SELECT c.key FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.status = 'running' AND EXISTS
  (SELECT 1 FROM events e WHERE e.run_id = r.id AND e.kind = 'checkpoint') ORDER BY c.position LIMIT 1")
[ -n "$killed" ] || fail "no attempt left running with a checkpoint after the kill"
ckpt=$(q "$DB" "SELECT max(e.step) FROM events e JOIN cells c ON c.id = e.cell_id
  WHERE c.key = '$killed' AND e.kind = 'checkpoint'")
done_before=$(q "$DB" "SELECT key FROM cells WHERE status = 'done' ORDER BY position" | tr '\n' ' ')
echo "killed mid-run: $killed (last checkpoint at step $ckpt); done before the kill: $done_before"

"$EGM" sweep "$SPEC" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/second.txt" 2>&1
expect_eq "exit status of the resumed sweep" 0 $?
expect_all_done_once "$DB" 4
for key in $done_before; do
  expect_eq "$key (done before the kill) ran once" 1 "$(q "$DB" "SELECT count(*) FROM runs r JOIN cells c
    ON c.id = r.cell_id WHERE c.key = '$key'")"
done
expect_eq "$killed: attempt 1 interrupted (recovered), attempt 2 done" "1 interrupted;2 done;" \
  "$(q "$DB" "SELECT r.attempt || ' ' || r.status FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$killed'
  ORDER BY r.attempt" | tr '\n' ';')"
expect_resumed_from_checkpoint "$killed" "$(q "$DB" "SELECT r.resumed_from_step FROM runs r
  JOIN cells c ON c.id = r.cell_id WHERE c.key = '$killed' AND r.attempt = 2")" "$ckpt" 50

# The same cell trained in one go, outside the sweep.
"$EGM" query "SELECT config_json FROM cells WHERE key = '$killed'" --db "$DB" --format json |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["config_json"])' >"$WORK/config.json"
"$EGM" train --config "$WORK/config.json" --out "$WORK/reference" --threads 1 --data "$EGM_DATA" -q \
  >"$WORK/train.txt" 2>&1 || fail "egm train of $killed failed"
/usr/bin/python3 - "$WORK/reference/metrics.jsonl" "$DB" "$killed" "$EGM" <<'PY' || fail "resumed losses differ from the uninterrupted run"
import json, subprocess, sys
metrics, db, key, egm = sys.argv[1:]
status = [json.loads(l) for l in open(metrics) if '"kind":"status"' in l]
ref = [s for s in status if s["status"] == "done"][-1]
out = subprocess.run([egm, "query", f"SELECT final_val, best_val FROM cells WHERE key = '{key}'",
                      "--db", db, "--format", "json"], check=True, capture_output=True, text=True).stdout
cell = json.loads(out)[0]
bad = 0
for name in ("final_val", "best_val"):
    same = float(cell[name]) == float(ref[name])
    print(f"  {name}: sweep (killed, resumed) {cell[name]!r}  uninterrupted {ref[name]!r}  {'equal' if same else 'DIFFERENT'}")
    bad += not same
sys.exit(1 if bad else 0)
PY
finish
