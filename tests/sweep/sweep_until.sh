#!/usr/bin/env bash
# egm sweep --until (src/cli/sweep_until.h), on the real binaries: bad --until
# input refused in one line with exit 2 and nothing written; a sequential sweep
# that adds one seed per look until its budget, every look stored (looks) with
# the claim's sequence and what the sweep did next, every cell done once; the
# same command with a larger budget goes on from the seeds it has (trains only
# the new ones); a claim settled early (a wide alpha and a loose half-width)
# stops the sweep before its budget; the stopped sweep is an ordinary one
# (analyze reads it).
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
cat >"$WORK/grid.json" <<'JSON'
{"name": "seqgrid", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0, 1], "steps": 10,
 "grid": {"train.lr": [0.001, 0.002]}}
JSON
"$EGM" sweep "$WORK/grid.json" --db "$DB" --runs-dir "$RUNS" --until ega --max-seeds 4 >"$WORK/out" 2>"$WORK/err"
expect_eq "a grid: exit status" 2 $?
expect_in "a grid: the line" "has a grid; a sequential sweep settles one configuration" "$(cat "$WORK/err")"
[ -e "$DB" ] && fail "a grid: wrote $DB"

# Up to the budget, a seed per look (alpha 0.05: at most 4 seeds never exclude 0).
run "until the budget" 0 sweep --until ega --max-seeds 4
expect_eq "looks" "1|2|seed 2 added;2|3|seed 3 added;3|4|stopped: --max-seeds 4 reached;" \
  "$(q "$DB" "SELECT look || '|' || seeds || '|' || next FROM looks ORDER BY look" | tr '\n' ';')"
expect_eq "every look names the claim and the method" "3" \
  "$(q "$DB" "SELECT count(*) FROM looks WHERE claim = 'delta(ega)' AND method LIKE 't-mixture%' AND params LIKE '%alpha%'")"
expect_all_done_once "$DB" 8
expect_eq "the stored spec has the seeds run" "1" \
  "$(q "$DB" "SELECT json_extract(spec_json, '\$.seeds') = json('[0,1,2,3]') FROM sweeps WHERE name = 'seq'")"

# The same command with a larger budget goes on from the 4 seeds: trains 2 cells more.
run "a larger budget" 0 sweep --until ega --max-seeds 5
expect_in "it says where it goes on from" "sweep seq has 4 seeds already; going on from there" "$out"
expect_all_done_once "$DB" 10
expect_eq "the last look" "5|5|stopped: --max-seeds 5 reached" \
  "$(q "$DB" "SELECT look || '|' || seeds || '|' || next FROM looks ORDER BY look DESC LIMIT 1")"
run "analyze reads it" 0 "$EGM" analyze seq --db "$DB"
run "egm status" 0 "$EGM" status --db "$DB"
expect_in "egm status: the claim at the last look" "look 5: delta(ega) after 5 seeds" "$out"
expect_in "egm status: what came next" "then: stopped: --max-seeds 5 reached" "$out"

# Settled before the budget: at alpha 0.45 the sequence is bounded at 3 seeds,
# and narrower than +-5 nats, so the claim is settled there.
run "settled early" 0 sweep --until ega --max-seeds 10 --alpha 0.45 --half-width 5 --new-sweep
expect_in "it says so" "stopped: every claim settled" "$out"
expect_eq "settled at the first bounded look" "1" \
  "$(q "$DB" "SELECT count(*) FROM looks l JOIN sweeps s ON s.id = l.sweep_id WHERE s.name = 'seq' AND l.settled = 1 AND l.decision = 'narrow' AND l.lower IS NOT NULL")"
cells=$(q "$DB" "SELECT count(*) FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'seq'")
[ "$cells" -lt 20 ] || fail "settled early: ran $cells cells, the whole budget"
finish
