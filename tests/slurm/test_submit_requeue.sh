#!/usr/bin/env bash
# slurm_submit_requeue: a real sweep through `egm submit --slurm` on the
# private test cluster, preempted with `scontrol requeue` mid-sweep:
#   1. `egm submit --dry-run` prints the script and writes nothing;
#   2. `egm submit` writes DB_DIR/<sweep>.sbatch, creates the sweep (pending)
#      and stores the job id that sbatch printed; `egm status` shows it; a
#      second submit while the job lives is refused;
#   3. the job runs the real egm-coordinator and egm-worker under mpirun; once
#      a cell is done and another is mid-run with checkpoints behind it, the
#      job is requeued (Slurm sends SIGTERM to every process of the job, then
#      SIGKILL after KillWait);
#   4. while the job waits to start again, the step of every unfinished
#      cell's newest checkpoint is read from the files;
#   5. the second attempt (Restarts=1) finishes the sweep: every cell done
#      exactly once, each interrupted cell resumed from exactly the checkpoint
#      read in 4 (not from scratch, not an older one), no cell trained twice
#      after finishing, and `egm status` shows the job COMPLETED.
# With --reuse-from (issue 38): OTHER.sqlite holds a finished run of cell
# base-s0 (trained by egm sweep before the submit); the job links that cell
# (rows copied in with their provenance) and trains the other three. Across the
# requeue the linked cell is linked once and never trained, each trained cell
# finishes once, and OTHER is unchanged to the byte.
# Usage: test_submit_requeue.sh PATH/TO/egm. Exit 77: no Slurm, MPI or corpus here.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

real_sweep_prereqs test_submit_requeue.sh "${1:-}"
SPEC=$SLURM_TEST_HERE/specs/requeue_tiny.json
SWEEP=slurm_requeue_tiny
CELLS=4
CHECKPOINT_EVERY=20

TEST_T0=$SECONDS
make_test_workdir submit

# 1 coordinator + 2 workers = 3 tasks; the box may have fewer cores.
export EGM_SLURM_TEST_CPUS=3
start_test_cluster "$CLUSTER"
cd "$WORK"

DB=$WORK/db/results.sqlite
RUNS=$WORK/runs
# OTHER: base-s0 of the same spec (another sweep name, same identity), trained here.
OTHER=$WORK/other.sqlite
LINKED=base-s0
/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s.update(name="other", variants=["base"], seeds=[0])
json.dump(s, open(sys.argv[2], "w"))' "$SPEC" "$WORK/other.json"
"$EGM" sweep "$WORK/other.json" --workers 1 --db "$OTHER" --runs-dir "$WORK/other-runs" --view plain >"$WORK/other.out" 2>&1 ||
  fail "training OTHER failed: $(cat "$WORK/other.out")"
OTHER=$(realpath "$OTHER")  # as egm names it (fs::absolute of the relative path below, from $WORK)
other_sha=$(sha256sum "$OTHER" | cut -d' ' -f1)
note "OTHER: $LINKED trained by egm sweep"
# Relative on purpose: the job's command line names it absolute (a job may start elsewhere).
submit_args=("$SPEC" --slurm --workers 2 --db "$DB" --runs-dir "$RUNS" --time 10:00 --reuse-from other.sqlite
  --checkpoint-every "$CHECKPOINT_EVERY" --param max_restarts=2 --param warning_seconds=60)

# 1. Dry run: the script, nothing written.
"$EGM" submit "${submit_args[@]}" --dry-run >"$WORK/dry.sbatch" 2>"$WORK/dry.err" || fail "dry run failed: $(cat "$WORK/dry.err")"
grep -qx '#SBATCH --ntasks=3' "$WORK/dry.sbatch" || fail "dry run: no '--ntasks=3' line (2 workers + coordinator)"
grep -qx '#SBATCH --requeue' "$WORK/dry.sbatch" || fail "dry run: no --requeue line"
grep -q "egm-coordinator .*--checkpoint-every $CHECKPOINT_EVERY" "$WORK/dry.sbatch" || fail "dry run: launch command lacks the coordinator"
grep -q "^launch_command=.*egm-coordinator .*--reuse-from $OTHER " "$WORK/dry.sbatch" ||
  fail "dry run: the coordinator is not given --reuse-from $OTHER"
bash -n "$WORK/dry.sbatch" || fail "dry-run script does not parse"
# A bad --reuse-from is refused at submission (not by the job): one line, exit 2, nothing written.
rc=0
"$EGM" submit "${submit_args[@]}" --reuse-from "$WORK/missing.sqlite" --dry-run >/dev/null 2>"$WORK/bad.err" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--reuse-from .*missing.sqlite.*does not exist" "$WORK/bad.err" ||
  fail "a missing --reuse-from: exit $rc, $(cat "$WORK/bad.err")"
[ ! -e "$WORK/db" ] || fail "a dry run created $WORK/db"
note "dry run: script printed, nothing written"

# 2. Submit.
"$EGM" submit "${submit_args[@]}" >"$WORK/submit.out" 2>&1 || fail "egm submit failed: $(cat "$WORK/submit.out")"
cat "$WORK/submit.out"
job=$(sed -n 's/^submitted sweep .* as Slurm job \([0-9][0-9]*\)$/\1/p' "$WORK/submit.out")
[ -n "$job" ] || fail "no job id in egm submit's output"
SCRIPT=$WORK/db/$SWEEP.sbatch
LOG=$WORK/db/$SWEEP-$job.out
[ -f "$SCRIPT" ] || fail "no script at $SCRIPT"
cmp -s "$SCRIPT" "$WORK/dry.sbatch" || fail "the submitted script differs from the dry run's"
[ "$(q "SELECT slurm_job_id FROM sweeps WHERE name = '$SWEEP'")" = "$job" ] || fail "job id not stored with the sweep"
[ "$(q "SELECT count(*) FROM cells")" = $CELLS ] || fail "egm submit did not create the $CELLS cells"
"$EGM" status --db "$DB" >"$WORK/status0.txt" || fail "egm status failed"
grep -qE "slurm job $job: (PENDING|CONFIGURING|RUNNING)" "$WORK/status0.txt" || { cat "$WORK/status0.txt"; fail "egm status lacks the job and its state"; }
note "submitted job $job; $(head -n 1 "$WORK/status0.txt")"
# A second submit while the job lives would run the same cells twice: refused.
if "$EGM" submit "${submit_args[@]}" >"$WORK/again.out" 2>&1; then fail "a second submit of a sweep with a live job was accepted"; fi
grep -q "already has Slurm job $job" "$WORK/again.out" || fail "second submit refused without the reason: $(cat "$WORK/again.out")"
[ "$(squeue -h -o %A | wc -l)" = 1 ] || fail "a second job was submitted"

# 3. Mid-sweep: one trained cell done (besides the linked one), one running past two checkpoints and at most a
#    third of the way (600 steps), so 400 steps are left for the SIGTERM to land
#    in (the requeue takes well under a second; a tiny step is milliseconds).
wait_for "SELECT (SELECT count(*) FROM runs WHERE status = 'done' AND reused_from IS NULL) >= 1 AND EXISTS (SELECT 1 FROM runs r
  WHERE r.status = 'running' AND (SELECT max(step) FROM metrics m WHERE m.run_id = r.id AND m.split = 'train')
  BETWEEN $((2 * CHECKPOINT_EVERY + 5)) AND 200) AS ready" 150 ||
  { cat "$LOG" >&2 || true; fail "never saw a done cell next to a running one with checkpoints"; }
done_before=$(q "SELECT group_concat(key, ' ') FROM (SELECT key FROM cells WHERE status = 'done' ORDER BY key)")
note "requeueing job $job: done [$done_before], running: $(q "SELECT group_concat(c.key || '@' || (SELECT max(step)
  FROM metrics m WHERE m.run_id = r.id AND m.split = 'train'), ' ') AS running FROM runs r JOIN cells c ON c.id = r.cell_id
  WHERE r.status = 'running'")"
scontrol requeue "$job" || fail "scontrol requeue $job failed"

# 4. Back in the queue (after COMPLETING: every process of attempt 0 is gone):
#    the newest checkpoint of each unfinished cell.
wait_job_state "$job" PENDING 60 "$LOG"
note "job $job pending again ($(job_field "$job" Reason))"
ckpt_step() {  # the step in a checkpoint's header: "EGMCKPT1", uint32 length, JSON
  /usr/bin/python3 -c 'import json,struct,sys
b=open(sys.argv[1],"rb").read(); n=struct.unpack("<I",b[8:12])[0]; print(json.loads(b[12:12+n])["step"])' "$1"
}
declare -A last_ckpt=()
for key in $(q "SELECT key FROM cells WHERE status != 'done' ORDER BY key"); do
  files=("$RUNS/$SWEEP/$key"-*/checkpoint.egmc)
  [ -f "${files[0]}" ] || continue
  last_ckpt[$key]=$(ckpt_step "${files[0]}")
done
[ "${#last_ckpt[@]}" -ge 1 ] || fail "no unfinished cell had a checkpoint at the requeue"
# The cell seen past two periodic checkpoints has one at least that far (the
# workers also checkpoint where SIGTERM stops them, at any step).
newest=0
for key in "${!last_ckpt[@]}"; do [ "${last_ckpt[$key]}" -gt "$newest" ] && newest=${last_ckpt[$key]}; done
[ "$newest" -ge $((2 * CHECKPOINT_EVERY)) ] || fail "no checkpoint at step $((2 * CHECKPOINT_EVERY)) or later"
note "checkpoints at the requeue: $(for k in "${!last_ckpt[@]}"; do echo -n "$k@${last_ckpt[$k]} "; done)"
grep -q 'attempt 0 .*SIGTERM' "$LOG" || { cat "$LOG" >&2; fail "the batch shell of attempt 0 logged no SIGTERM"; }

# 5. The second attempt finishes the sweep.
wait_job_state "$job" COMPLETED 150 "$LOG"
note "job $job COMPLETED after $(job_field "$job" Restarts) requeue"
[ "$(job_field "$job" Restarts)" = 1 ] || fail "Restarts=$(job_field "$job" Restarts), expected 1"
grep -q 'attempt 1 .*launcher exited with status 0$' "$LOG" || { cat "$LOG" >&2; fail "attempt 1 did not end with status 0"; }

[ "$(q "SELECT count(*) FROM cells WHERE status = 'done'")" = $CELLS ] || fail "not every cell is done"
[ "$(q "SELECT count(*) FROM runs WHERE status = 'done'")" = $CELLS ] || fail "a cell finished more than once"
[ "$(q "SELECT count(*) FROM runs WHERE status IN ('running', 'failed')")" = 0 ] || fail "attempts left running or failed"
[ "$(q "SELECT sum(failures) FROM cells")" = 0 ] || fail "the requeue was counted as a failure"
[ "$(q "SELECT status FROM sweeps WHERE name = '$SWEEP'")" = done ] || fail "sweep not done"
for key in $done_before; do
  [ "$(q "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$key'")" = 1 ] ||
    fail "$key was done before the requeue and ran again"
done
for key in "${!last_ckpt[@]}"; do
  got=$(q "SELECT r.resumed_from_step FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$key' AND r.status = 'done'")
  # A cell that had just started when the SIGTERM came checkpointed at step 0;
  # resuming from there is starting from scratch (resumed_from_step NULL).
  want=${last_ckpt[$key]}
  [ "$want" = 0 ] && want=""
  [ "$got" = "$want" ] ||
    fail "$key resumed from step '${got:-scratch}', its last checkpoint was step ${last_ckpt[$key]}"
  [ "$(q "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$key' AND r.status = 'interrupted'")" -ge 1 ] ||
    fail "$key: the interrupted attempt is not recorded as interrupted"
done
# The linked cell: linked once (in attempt 0, not again in attempt 1), never trained, with OTHER's
# run and numbers and the file it came from; the other three trained.
[ "$(q "SELECT group_concat(c.key) FROM runs r JOIN cells c ON c.id = r.cell_id WHERE r.reused_from IS NOT NULL")" = "$LINKED" ] ||
  fail "linked runs: '$(q "SELECT group_concat(c.key || ':' || r.reused_from, '; ') FROM runs r JOIN cells c ON c.id = r.cell_id
    WHERE r.reused_from IS NOT NULL")', expected $LINKED once"
[ "$(q "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.key = '$LINKED' AND r.reused_from IS NULL")" = 0 ] ||
  fail "$LINKED was linked and trained"
[ "$(q "SELECT count(DISTINCT c.key) || '/' || count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
  WHERE r.status = 'done' AND r.reused_from IS NULL")" = "$((CELLS - 1))/$((CELLS - 1))" ] || fail "the trained cells did not each finish once"
[ "$(q "SELECT group_concat(path) FROM merge_sources")" = "$OTHER" ] || fail "provenance: merge_sources holds '$(q "SELECT group_concat(path) FROM merge_sources")'"
other_val=$(sqlite3 -readonly "$OTHER" "SELECT quote(final_val) FROM cells WHERE key = '$LINKED'")
[ "$(q "SELECT quote(final_val) FROM cells WHERE key = '$LINKED'")" = "$other_val" ] || fail "$LINKED lacks OTHER's final_val $other_val"
"$EGM" runs --db "$DB" --format csv >"$WORK/runs.csv" || fail "egm runs failed"
grep "$LINKED" "$WORK/runs.csv" | grep "in $OTHER" >/dev/null || { cat "$WORK/runs.csv"; fail "egm runs does not say $LINKED came from $OTHER"; }
[ "$(sha256sum "$OTHER" | cut -d' ' -f1)" = "$other_sha" ] || fail "OTHER changed"
note "$LINKED linked from OTHER once (OTHER unchanged), $((CELLS - 1)) cells trained once"
note "every cell done once; resumed: $(q "SELECT group_concat(c.key || '@' || r.resumed_from_step, ' ') FROM runs r
  JOIN cells c ON c.id = r.cell_id WHERE r.status = 'done' AND r.resumed_from_step IS NOT NULL")"
note "interruptions: $(q "SELECT group_concat(kind, ' ') FROM events WHERE kind LIKE 'interrupted%'")"
# Ownership (issue 29): each allocation's coordinator claimed the sweep, the
# requeued one was not refused by the first's, and the last released it; the
# corpus egm submit recorded is the one the workers read.
[ "$(q "SELECT count(*) FROM events WHERE kind = 'coordinator_started'")" -ge 2 ] ||
  fail "the requeued allocation's coordinator did not start the sweep"
[ -z "$(q "SELECT owner_host FROM sweeps WHERE name = '$SWEEP'")" ] || fail "the finished sweep still has an owner"
[ "$(q "SELECT corpus_sha256 FROM sweeps WHERE name = '$SWEEP'")" = "$(sha256sum "$EGM_DATA" | cut -d' ' -f1)" ] ||
  fail "the sweep's corpus is not the corpus the job read"

"$EGM" status --db "$DB" >"$WORK/status1.txt" || fail "egm status failed"
grep -q "slurm job $job: COMPLETED" "$WORK/status1.txt" || { cat "$WORK/status1.txt"; fail "egm status does not show job $job COMPLETED"; }
head -n 3 "$WORK/status1.txt"

stop_and_check_cluster "$CLUSTER"
note "slurm_submit_requeue passed"
