#!/usr/bin/env bash
# egm sweep --reuse-from OTHER.sqlite (issue 38, src/db/reuse.h): a cell whose
# identity matches a finished run in another database takes it, its rows
# copied in with their provenance (a merge_sources row, reused_from naming the
# file), the other database unchanged to the byte and mtime. Bad input is one
# line, exit 2, nothing written: the sweep's own database, a missing file,
# --no-reuse beside it, a damaged, foreign or newer database. A database of
# another corpus is no error: nothing matches, and the sweep says so.
#   sweep_reuse_from.sh EGM WORK
source "$(dirname "$0")/lib.sh"
sweep() { "$EGM" sweep "$@" --workers 1 --runs-dir "$RUNS" --view plain; }
A=$WORK/a.sqlite
run "a trains one cell" 0 sweep "$SPECS/one_cell.json" --db "$A"
before=$(sha256sum "$A" | cut -d' ' -f1)$(stat -c %Y.%y "$A")

# ---- bad input: one line, exit 2, nothing written (the output never created)
refused() {  # refused WHAT NEEDLE ARGS...
  local what=$1 needle=$2
  shift 2
  run "$what" 2 sweep "$SPECS/one_cell.json" --db "$WORK/never.sqlite" "$@"
  expect_eq "$what: exit status" 2 "$status"
  expect_in "$what: the line" "$needle" "$err"
  expect_eq "$what: one line" 1 "$(printf '%s\n' "$err" | grep -c .)"
  [ -e "$WORK/never.sqlite" ] && fail "$what: the output database was created"
  rm -f "$WORK/never.sqlite"
}
refused "the sweep's own database" "is the sweep's own database" --reuse-from "$WORK/never.sqlite"
refused "a missing file" "does not exist" --reuse-from "$WORK/missing.sqlite"
refused "--no-reuse beside it" "--no-reuse" --reuse-from "$A" --no-reuse
head -c 8192 "$A" >"$WORK/damaged.sqlite"; head -c 100000 /dev/urandom >>"$WORK/damaged.sqlite"
refused "a damaged database" "--reuse-from $WORK/damaged.sqlite" --reuse-from "$WORK/damaged.sqlite"
/usr/bin/python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE t (x)"); c.commit()' \
  "$WORK/foreign.sqlite"
refused "a foreign database" "not an egm results database" --reuse-from "$WORK/foreign.sqlite"
cp "$A" "$WORK/newer.sqlite"
/usr/bin/python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version = 999"); c.commit()' \
  "$WORK/newer.sqlite"
refused "a newer database" "newer than this egm knows" --reuse-from "$WORK/newer.sqlite"
expect_eq "a: unchanged by the refusals" "$before" "$(sha256sum "$A" | cut -d' ' -f1)$(stat -c %Y.%y "$A")"

# ---- a cell of b takes a's run
B=$WORK/b.sqlite
run "dry run: b would reuse from a" 0 sweep "$SPECS/one_cell.json" --db "$B" --reuse-from "$A" --dry-run
line=$(grep -E '^  base-s0 ' <<<"$out")
expect_in "dry run: the cell linked to a's run" "link   takes run 1 of sweep 'one_cell', cell base-s0, trained on " "$line"
expect_in "dry run: the file named" " in $(realpath "$A")" "$line"
[ -e "$B" ] && fail "the dry run created b"
run "b reuses from a" 0 sweep "$SPECS/one_cell.json" --db "$B" --reuse-from "$A"
expect_in "the coordinator says so" "1 cell reused finished runs" "$out$err"
expect_eq "b trained nothing" 0 "$(q "$B" "SELECT count(*) FROM runs WHERE reused_from IS NULL")"
expect_eq "b's cell has a's numbers" "$(q "$A" "SELECT quote(final_val) || quote(full_val) || quote(ar_val) FROM cells")" \
  "$(q "$B" "SELECT quote(final_val) || quote(full_val) || quote(ar_val) FROM cells")"
expect_eq "b's cell has a's curves and parameters" \
  "$(q "$A" "SELECT (SELECT group_concat(split || step || quote(loss)) FROM (SELECT * FROM metrics ORDER BY split, step))
   || (SELECT group_concat(hex(data)) FROM (SELECT data FROM param_snapshots ORDER BY step))")" \
  "$(q "$B" "SELECT (SELECT group_concat(split || step || quote(loss)) FROM (SELECT * FROM metrics ORDER BY split, step))
   || (SELECT group_concat(hex(data)) FROM (SELECT data FROM param_snapshots ORDER BY step))")"
expect_eq "where it came from: the file" "$(realpath "$A")" "$(q "$B" "SELECT s.path FROM runs r
  JOIN merge_sources s ON s.id = r.merge_source")"
run "egm runs on b" 0 "$EGM" runs --db "$B" --format csv
expect_in "egm runs names the file" "in $(realpath "$A")" "$out"
expect_eq "a: unchanged by the reuse" "$before" "$(sha256sum "$A" | cut -d' ' -f1)$(stat -c %Y.%y "$A")"
# The same command again: every cell is done, so there is nothing to look for in a (and no
# "no finished run of it matches" note), and nothing is linked twice.
run "b again, every cell done" 0 sweep "$SPECS/one_cell.json" --db "$B" --reuse-from "$A"
expect_eq "b again: no note about a" "" "$(grep -F "no finished run of it matches" <<<"$out$err")"
expect_eq "b again: one run still" 1 "$(q "$B" "SELECT count(*) FROM runs")"

# ---- another corpus: nothing matches, and it is said
head -c 300000 "$EGM_DATA" >"$WORK/other.txt"
run "another corpus" 0 sweep "$SPECS/one_cell.json" --db "$WORK/c.sqlite" --reuse-from "$A" --data "$WORK/other.txt"
expect_in "nothing matched: said" "no finished run of it matches a cell to run" "$out$err"
expect_eq "c trained its cell" 1 "$(q "$WORK/c.sqlite" "SELECT count(*) FROM runs WHERE reused_from IS NULL
  AND status = 'done'")"
finish
