#!/usr/bin/env bash
# egm merge of two databases that both trained one run identity in different
# sweeps (issue 38 item 4, src/db/merge.h): with the same results (what one
# identity gives) the merge keeps the first input's run and links the other
# cell to it, says so, and the compute statement counts the run once; with
# different results it is refused in one line naming the identity and
# --prefer, nothing written; with --prefer that input's run is kept.
#   sweep_reuse_merge.sh EGM WORK
source "$(dirname "$0")/lib.sh"
sweep() { "$EGM" sweep "$@" --workers 1 --runs-dir "$RUNS" --view plain; }
A=$WORK/a.sqlite B=$WORK/b.sqlite
sed 's/"name": "one_cell"/"name": "again"/' "$SPECS/one_cell.json" >"$WORK/again.json"
run "a trains sweep one_cell" 0 sweep "$SPECS/one_cell.json" --db "$A"
run "b trains sweep again, the same identity" 0 sweep "$WORK/again.json" --db "$B"
expect_eq "one identity, the same results" "$(q "$A" "SELECT config_hash || quote(final_val) FROM cells")" \
  "$(q "$B" "SELECT config_hash || quote(final_val) FROM cells")"
# links KEY DB: how many of the runs of cell KEY's sweeps are links, and trained.
runs_of() { q "$1" "SELECT s.name || ':' || sum(r.reused_from IS NULL) || '+' || sum(r.reused_from IS NOT NULL) AS v
  FROM runs r JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON s.id = c.sweep_id GROUP BY s.name ORDER BY s.name" |
  tr '\n' ' '; }

# ---- the same results: kept once without a flag
run "merge a b" 0 "$EGM" merge "$WORK/ab.sqlite" "$A" "$B"
expect_in "merge says so" "sweep again: 1 cells (1 done): 1 from $B; 1 cell trained in another input too, with one identity and the same results: linked to that run, counted once" "$out"
expect_eq "a's run kept, b's cell linked to it" "again:0+1 one_cell:1+0 " "$(runs_of "$WORK/ab.sqlite")"
expect_eq "the link names a's run, has no wall time" "1|1" "$(q "$WORK/ab.sqlite" "SELECT
  (r.reused_run = o.id) || '|' || (r.ended_at = r.started_at) FROM runs r JOIN runs o ON o.cell_id =
  (SELECT c.id FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'one_cell') WHERE r.reused_from IS NOT NULL")"
expect_eq "b's cell reads as before" "$(q "$B" "SELECT quote(final_val) || quote(full_val) || quote(ar_val) FROM cells")" \
  "$(q "$WORK/ab.sqlite" "SELECT quote(final_val) || quote(full_val) || quote(ar_val) FROM cells c JOIN sweeps s ON
  s.id = c.sweep_id WHERE s.name = 'again'")"
run "egm analyze again on the merge" 0 "$EGM" analyze again --db "$WORK/ab.sqlite"
expect_in "the compute statement counts the run once" "this table: 0 runs, " "$out"
expect_in "the compute statement: what reuse saved" "1 reused from earlier runs, not counted (reuse saved" "$out"
run "egm status on the merge" 0 "$EGM" status --sweep again --db "$WORK/ab.sqlite"
expect_in "egm status says where it came from" "1 of 1 cells reused from earlier runs (sweep 'one_cell': 1)" "$out"

# ---- different results (b's run edited): refused, one line, nothing written
cp "$B" "$WORK/b2.sqlite"
/usr/bin/python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE cells SET final_val = final_val + 1"); c.commit()' \
  "$WORK/b2.sqlite"
run "merge a b2" 2 "$EGM" merge "$WORK/ab2.sqlite" "$A" "$WORK/b2.sqlite"
expect_eq "refused: one line" 1 "$(printf '%s\n' "$err" | grep -c .)"
expect_in "refused: the cells and the identity" "one_cell base-s0 in $A, again base-s0 in $WORK/b2.sqlite: config " "$err"
expect_in "refused: the way on" "pass --prefer INPUT" "$err"
[ -e "$WORK/ab2.sqlite" ] && fail "the refused merge wrote its output"
run "merge a b2 --prefer b2" 0 "$EGM" merge "$WORK/ab2.sqlite" "$A" "$WORK/b2.sqlite" --prefer "$WORK/b2.sqlite"
expect_in "--prefer: said" "1 cell trained in another input too, with one identity but other results: linked to the --prefer input's run" "$out"
expect_eq "--prefer: b2's run kept, a's cell linked" "again:1+0 one_cell:0+1 " "$(runs_of "$WORK/ab2.sqlite")"
expect_eq "--prefer: a's cell takes b2's results" "$(q "$WORK/b2.sqlite" "SELECT quote(final_val) FROM cells")" \
  "$(q "$WORK/ab2.sqlite" "SELECT quote(final_val) FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'one_cell'")"
finish
