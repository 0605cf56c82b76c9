#!/usr/bin/env bash
# egm sweep --until (src/sequential), on the real binaries: bad --until
# input refused in one line with exit 2 and nothing written; a sequential sweep
# that adds one seed per look until its budget, every look stored (looks) with
# the claim's sequence and what the sweep did next, every cell done once; the
# same command with a larger budget goes on from the seeds it has (trains only
# the new ones); a claim settled early (a wide alpha and a loose half-width)
# stops the sweep before its budget; the stopped sweep is an ordinary one
# (analyze reads it); the spec's "until" field makes a plain egm sweep
# sequential, a flag overrides the field it names, --until none turns it off;
# SIGUSR2 to egm sweep --until alone (a batch job's time-limit warning) is
# passed on, the launch checkpoints, the loop exits 75 and the same command
# goes on to the budget with every cell done once; SIGUSR2 as the first look is
# taken stops the loop (exit 75) however far it had got.
#   sweep_until.sh EGM WORK
source "$(dirname "$0")/lib.sh"

cat >"$WORK/seq.json" <<'JSON'
{"name": "seq", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1], "steps": 10, "eval_interval": 5}
JSON
sweep() { "$EGM" sweep "$WORK/seq.json" --db "$DB" --runs-dir "$RUNS" --workers 2 --view none "$@"; }

# Refusals: one line, exit 2, no database.
refused() {  # refused NAME EXPECTED ARGS...
  local name=$1 expected=$2
  shift 2
  sweep "$@" >"$WORK/out" 2>"$WORK/err"
  expect_eq "$name: exit status" 2 $?
  expect_in "$name: the line" "$expected" "$(cat "$WORK/err")"
  expect_eq "$name: one line" 1 "$(wc -l <"$WORK/err")"
  [ -e "$DB" ] && fail "$name: wrote $DB"
}
refused "unknown variant" "no variant 'bogus' in sweep seq" --until bogus --max-seeds 4
refused "no budget" "--until needs a budget: --max-seeds N" --until ega
refused "budget below the seeds" "--max-seeds 1 is below the 2 seeds the spec already has" --until ega --max-seeds 1
refused "interaction without factors" "sweep seq has no 2x2" --until interaction --max-seeds 4
refused "half-width 0" "--half-width 0: must be > 0" --until ega --max-seeds 4 --half-width 0
refused "half-width negative" "--half-width -1: must be > 0" --until ega --max-seeds 4 --half-width -1
refused "alpha 0.5" "--alpha 0.5: must be in (0, 0.5)" --until ega --max-seeds 4 --alpha 0.5
refused "alpha 0" "--alpha 0: must be in (0, 0.5)" --until ega --max-seeds 4 --alpha 0
refused "the baseline" "'base' is the baseline" --until base --max-seeds 4
refused "a budget without claims" "--max-seeds belongs to a sequential sweep: name its claims with --until" --max-seeds 4
# At alpha 0.05 one claim's sequence is the whole line until 5 seeds: a budget of 4 could never settle it.
refused "a budget no claim can settle in" "--max-seeds 4: no claim can settle before 5 seeds" --until ega --max-seeds 4
cat >"$WORK/badfield.json" <<'JSON'
{"name": "seq", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1], "steps": 10,
 "until": {"claims": ["bogus"], "max_seeds": 4}}
JSON
"$EGM" sweep "$WORK/badfield.json" --db "$DB" --runs-dir "$RUNS" >"$WORK/out" 2>"$WORK/err"
expect_eq "a bad until field: exit status" 2 $?
expect_in "a bad until field: the line" "no variant 'bogus' in sweep seq" "$(cat "$WORK/err")"
[ -e "$DB" ] && fail "a bad until field: wrote $DB"
# Seeds the budget would add past 2^53 - 1, the largest a spec may hold: refused before anything runs.
cat >"$WORK/bigseed.json" <<'JSON'
{"name": "seqbig", "preset": "tiny", "variants": ["base", "ega"], "seeds": [9007199254740990], "steps": 10}
JSON
"$EGM" sweep "$WORK/bigseed.json" --db "$DB" --runs-dir "$RUNS" --until ega --max-seeds 5 --alpha 0.3 >"$WORK/out" 2>"$WORK/err"
expect_eq "seeds past 2^53-1: exit status" 2 $?
expect_in "seeds past 2^53-1: the line" "past the largest seed a spec may hold (9007199254740991)" "$(cat "$WORK/err")"
[ -e "$DB" ] || [ -e "$DB.until-seqbig.lock" ] && fail "seeds past 2^53-1: wrote $DB or its lock"
cat >"$WORK/grid.json" <<'JSON'
{"name": "seqgrid", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1], "steps": 10,
 "grid": {"train.lr": [0.001, 0.002]}}
JSON
"$EGM" sweep "$WORK/grid.json" --db "$DB" --runs-dir "$RUNS" --until ega --max-seeds 4 >"$WORK/out" 2>"$WORK/err"
expect_eq "a grid: exit status" 2 $?
expect_in "a grid: the line" "has a grid; a sequential sweep settles one configuration" "$(cat "$WORK/err")"
[ -e "$DB" ] && fail "a grid: wrote $DB"

# Up to the budget, a seed per look (alpha 0.3: bounded from 3 seeds, and these 4 never exclude 0).
run "until the budget" 0 sweep --until ega --max-seeds 4 --alpha 0.3
expect_eq "looks" "1|2|seed 2 added;2|3|seed 3 added;3|4|stopped: --max-seeds 4 reached;" \
  "$(q "$DB" "SELECT look || '|' || seeds || '|' || next FROM looks ORDER BY look" | tr '\n' ';')"
expect_eq "every look names the claim and the method" "3" \
  "$(q "$DB" "SELECT count(*) FROM looks WHERE claim = 'delta(ega)' AND method LIKE 't-mixture%' AND params LIKE '%alpha%'")"
expect_all_done_once "$DB" 8
# A dry run shows the sequence's worst case (every seed of the budget): the 8
# cells of seeds 0-3 done, the 4 of seeds 4-5 to train, priced from the done cells.
before=$(q "$DB" "SELECT count(*) FROM looks")
run "a dry run of the sequence" 0 sweep --until ega --max-seeds 6 --alpha 0.3 --dry-run
expect_in "the worst case" "the worst case of --until ega: all 6 seeds of the budget" "$out"
expect_in "its cells" "total: " "$out"
expect_in "its cells" " over the 4 of 12 cells to train; 0 linked to finished runs of the same identity instead (--no-reuse trains them), 8 done already" "$out"
expect_eq "the done cells" 8 "$(grep -cE '^  [a-z_]+-s[0-3] .* done ' <<<"$out")"
expect_eq "the cells to train" 4 "$(grep -cE '^  [a-z_]+-s[45] .* train ' <<<"$out")"
expect_in "a wall-time estimate" "4 of 4 cells priced at the median of the done cells of their configuration" "$out"
expect_eq "a dry run: no look" "$before" "$(q "$DB" "SELECT count(*) FROM looks")"
expect_all_done_once "$DB" 8
expect_eq "the stored spec has the seeds run" "1" \
  "$(q "$DB" "SELECT json_extract(spec_json, '\$.seeds') = json('[0,1,2,3]') FROM sweeps WHERE name = 'seq'")"

# The same command with a larger budget goes on from the 4 seeds: trains 2 cells more.
run "a larger budget" 0 sweep --until ega --max-seeds 5 --alpha 0.3
expect_in "it says where it goes on from" "sweep seq has 4 seeds already; going on from there" "$out"
expect_all_done_once "$DB" 10
# Nothing ran between the last look and this command's first launch: that look
# stands (no second look over the same data); its `next` now says what the sweep did.
expect_in "the last look stands" "look 3 stands (nothing ran since it)" "$out"
expect_eq "the looks" "1|2|seed 2 added;2|3|seed 3 added;3|4|seed 4 added;4|5|stopped: --max-seeds 5 reached;" \
  "$(q "$DB" "SELECT look || '|' || seeds || '|' || next FROM looks ORDER BY look" | tr '\n' ';')"
# The same command again, the sequence finished: no look added, nothing trained.
run "the finished command again" 0 sweep --until ega --max-seeds 5 --alpha 0.3
expect_in "it says the look stands" "look 4 stands (nothing ran since it): stopped: --max-seeds 5 reached" "$out"
expect_eq "no look added" 4 "$(q "$DB" "SELECT count(*) FROM looks")"
expect_all_done_once "$DB" 10
# Budgets and batches the spec's until field would refuse are refused as flags too (issue 40).
sweep --until ega --max-seeds 18446744073709551615 >"$WORK/out" 2>"$WORK/err"
expect_eq "a budget of 2^64: exit status" 2 $?
sweep --until ega --max-seeds 100001 >"$WORK/out" 2>"$WORK/err"
expect_eq "a budget past 100,000: exit status" 2 $?
expect_in "a budget past 100,000: the line" "--max-seeds 100001: at most 100000 seeds per variant" "$(cat "$WORK/err")"
sweep --until ega --max-seeds 10 --batch 1000000000000 >"$WORK/out" 2>"$WORK/err"
expect_eq "a batch of 10^12: exit status" 2 $?
expect_in "a batch of 10^12: the line" "at most 100000 seeds per look" "$(cat "$WORK/err")"
expect_eq "refused budgets: no look" 4 "$(q "$DB" "SELECT count(*) FROM looks")"
# A budget below the seeds the sweep has run: refused in one line, nothing written.
before=$(q "$DB" "SELECT count(*) FROM looks")
sweep --until ega --max-seeds 3 --alpha 0.3 >"$WORK/out" 2>"$WORK/err"
expect_eq "a budget below the seeds run: exit status" 2 $?
expect_in "a budget below the seeds run: the line" "--max-seeds 3 is below the 5 seeds sweep seq has already run" "$(cat "$WORK/err")"
expect_eq "a budget below the seeds run: one line" 1 "$(wc -l <"$WORK/err")"
expect_eq "a budget below the seeds run: no look" "$before" "$(q "$DB" "SELECT count(*) FROM looks")"
run "analyze reads it" 0 "$EGM" analyze seq --db "$DB"
run "egm status" 0 "$EGM" status --db "$DB"
expect_in "egm status: the claim at the last look" "look 4: delta(ega) after 5 seeds" "$out"
expect_in "egm status: what came next" "then: stopped: --max-seeds 5 reached" "$out"
# The sequence keeps the alpha and half-width it began with: another alpha is refused, naming both ...
before=$(q "$DB" "SELECT count(*) FROM looks")
sweep --until ega --max-seeds 5 --alpha 0.05 >"$WORK/out" 2>"$WORK/err"
expect_eq "another alpha: exit status" 2 $?
expect_in "another alpha: the line" "its sequence began at look 1 with --alpha 0.3 --half-width 0; this command asks for --alpha 0.05 --half-width 0" "$(cat "$WORK/err")"
expect_eq "another alpha: one line" 1 "$(wc -l <"$WORK/err")"
expect_eq "another alpha: no look" "$before" "$(q "$DB" "SELECT count(*) FROM looks")"
# ... unless the user starts a new sequence, which the look records; it then stands for the reruns.
run "a new sequence" 0 sweep --until ega --max-seeds 5 --alpha 0.05 --new-sequence
expect_eq "a new sequence: recorded" "5|family_alpha=0.05" \
  "$(q "$DB" "SELECT look || '|' || (CASE WHEN params LIKE '%family_alpha=0.05 %new_sequence=1' THEN 'family_alpha=0.05' ELSE params END) FROM looks ORDER BY id DESC LIMIT 1")"
run "the new sequence's values again" 0 sweep --until ega --max-seeds 5 --alpha 0.05
run "the first sequence's values now" 2 sweep --until ega --max-seeds 5 --alpha 0.3

# Settled before the budget: at alpha 0.45 the sequence is bounded at 3 seeds,
# and narrower than +-5 nats, so the claim is settled there.
run "settled early" 0 sweep --until ega --max-seeds 10 --alpha 0.45 --half-width 5 --new-sweep
expect_in "it says so" "stopped: every claim settled" "$out"
expect_eq "settled at the first bounded look" "1" \
  "$(q "$DB" "SELECT count(*) FROM looks l JOIN sweeps s ON s.id = l.sweep_id WHERE s.name = 'seq' AND l.settled = 1 AND l.decision = 'narrow' AND l.lower IS NOT NULL")"
cells=$(q "$DB" "SELECT count(*) FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'seq'")
[ "$cells" -lt 20 ] || fail "settled early: ran $cells cells, the whole budget"

# The spec's "until" field: egm sweep SPEC alone adds seeds; a flag overrides the
# field it names; --until none runs the spec's seeds as one plain launch.
cat >"$WORK/seqf.json" <<'JSON'
{"name": "seqf", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1], "steps": 10, "eval_interval": 5,
 "until": {"claims": ["ega"], "max_seeds": 3, "alpha": 0.3}}
JSON
sweepf() { "$EGM" sweep "$WORK/seqf.json" --db "$DB" --runs-dir "$RUNS" --workers 2 --view none "$@"; }
looks_of() {  # looks_of SWEEP: look|seeds|next;...
  q "$DB" "SELECT l.look || '|' || l.seeds || '|' || l.next FROM looks l JOIN sweeps s ON s.id = l.sweep_id
    WHERE s.name = '$1' ORDER BY l.look" | tr '\n' ';'
}
run "the spec's until field" 0 sweepf
expect_eq "its looks" "1|2|seed 2 added;2|3|stopped: --max-seeds 3 reached;" "$(looks_of seqf)"
run "a flag over the field" 0 sweepf --max-seeds 4
expect_eq "the budget from the flag" "1|2|seed 2 added;2|3|seed 3 added;3|4|stopped: --max-seeds 4 reached;" \
  "$(looks_of seqf)"
run "--until none" 0 sweepf --until none --new-sweep
expect_eq "a plain sweep: no looks" "" "$(looks_of seqf)"
expect_eq "a plain sweep: the spec's seeds" "4" \
  "$(q "$DB" "SELECT count(*) FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'seqf' AND c.status = 'done'")"

# SIGUSR2 to egm sweep --until only (as a batch job's shell sends it): passed on
# to the launch, whose cells checkpoint; exit 75; the same command goes on.
# The job is frozen with both cells mid-run, so the signal lands in a launch.
# one_seed_spec NAME STEPS EVAL_INTERVAL: base and ega from seed 0, no final passes; writes $WORK/NAME.json.
one_seed_spec() {
  cat >"$WORK/$1.json" <<JSON
{"name": "$1", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0], "steps": $2, "eval_interval": $3,
 "retries": 1, "overrides": {"train": {"full_val_eval": false, "ar_eval_windows": 0}}}
JSON
}
one_seed_spec seqsig 600 100
SIGDB=$WORK/sig.sqlite
sigargs=("$WORK/seqsig.json" --db "$SIGDB" --runs-dir "$RUNS" --workers 2 --view plain --until ega --max-seeds 3 --alpha 0.3)
"$EGM" sweep "${sigargs[@]}" >"$WORK/sig1.txt" 2>&1 &
job=$!  # egm sweep --until itself (it runs each launch as a child)
if freeze_job_when "$job" "$SIGDB" "SELECT count(*) = 2 AS ready FROM runs r WHERE r.status = 'running' AND EXISTS
    (SELECT 1 FROM metrics m WHERE m.run_id = r.id AND m.split = 'train' AND m.step >= 20)" 150 \
    "both cells of the first launch running past step 20" "runs_mid_way $RUNS/seqsig 2 20 580"; then
  kill -USR2 "$job"  # the loop only: it passes the signal on
  thaw_job
else
  fail "never caught the first launch's cells mid-run"
  kill_job "$job"; wait "$job"; finish
fi
wait "$job"
expect_eq "SIGUSR2 to egm sweep --until: exit status" 75 $?
expect_in_file "the launch checkpointed" "interrupted by SIGUSR2 (time-limit warning)" "$WORK/sig1.txt"
expect_eq "no look of an interrupted launch" "0" "$(q "$SIGDB" "SELECT count(*) FROM looks")"
expect_eq "interrupted attempts" 2 "$(q "$SIGDB" "SELECT count(*) FROM runs WHERE status = 'interrupted'")"
"$EGM" sweep "${sigargs[@]}" >"$WORK/sig2.txt" 2>&1
expect_eq "the same command again: exit status" 0 $?
expect_all_done_once "$SIGDB" 6
expect_eq "its looks" "1|1|seed 1 added;2|2|seed 2 added;3|3|stopped: --max-seeds 3 reached;" \
  "$(q "$SIGDB" "SELECT look || '|' || seeds || '|' || next FROM looks WHERE claim = 'delta(ega)' ORDER BY look" | tr '\n' ';')"

# SIGUSR2 as the first look is taken: the parent is frozen the moment the look
# is in the database, signalled and thawed. Where it stood decides the path
# (before launching seed 1: no launch, the look says which seeds were not run;
# seed 1's launch begun: that launch checkpoints, or finishes and the loop
# stops after its look), but every path exits 75 and the same command
# finishes the budget.
one_seed_spec seqlook 100 50
LOOKDB=$WORK/look.sqlite
lookargs=("$WORK/seqlook.json" --db "$LOOKDB" --runs-dir "$RUNS" --workers 2 --view plain --until ega --max-seeds 3 --alpha 0.3)
"$EGM" sweep "${lookargs[@]}" >"$WORK/look1.txt" 2>&1 &
job=$!
WATCH_PID=$job wait_for "$LOOKDB" "SELECT count(*) >= 1 AS looked FROM looks" 150 "the first look" || fail "no first look"
kill -STOP "$job"
# One sequence per sweep: a second loop is refused while the first lives, frozen between a look and a launch too.
"$EGM" sweep "${lookargs[@]}" >"$WORK/look-second.txt" 2>&1
expect_eq "a second loop of the sweep: exit status" 2 $?
expect_in_file "a second loop of the sweep: the line" "is being run by another egm sweep --until (pid $job on" \
  "$WORK/look-second.txt"
kill -USR2 "$job"
kill -CONT "$job"
wait "$job"
expect_eq "SIGUSR2 at the first look: exit status" 75 $?
last=$(q "$LOOKDB" "SELECT next FROM looks ORDER BY id DESC LIMIT 1")
status=$(q "$LOOKDB" "SELECT status FROM sweeps")
echo "stopped at the first look: last look '$last', sweep $status"
case "$last|$status" in
  "stopped by SIGUSR2: the next launch (seed "[12]" not run)|done" | *"|interrupted") ;;
  *) fail "SIGUSR2 at the first look: last look '$last', sweep '$status'" ;;
esac
"$EGM" sweep "${lookargs[@]}" >"$WORK/look2.txt" 2>&1
expect_eq "the same command again: exit status" 0 $?
expect_all_done_once "$LOOKDB" 6
expect_eq "the last look" "3|stopped: --max-seeds 3 reached" \
  "$(q "$LOOKDB" "SELECT seeds || '|' || next FROM looks ORDER BY id DESC LIMIT 1")"
finish
