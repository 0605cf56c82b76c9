#!/usr/bin/env bash
# egm merge on the real binaries (src/db/merge.h): a small spec (base and ega,
# seeds 0 and 1) run whole in one database and as two halves (seed 0, seed 1)
# in two others; the halves merged give the whole sweep's `egm analyze`
# output, keep each run's provenance and name their input, leave the inputs
# untouched, and are an ordinary database (status, report, export read it;
# `egm sweep` of the whole spec on it trains nothing, and --extend with a new
# seed trains only its cells); so are two halves split by variant. The same
# cell in two inputs with the same results is kept once; with different ones
# it is a conflict (refused unless --prefer); a mismatched spec, a damaged
# input, an input that is not an egm database or is from a newer egm, a
# missing input and an existing OUT without --force are one line, exit 2,
# nothing written. An input from schema 7 is read as it is.
#   sweep_merge.sh EGM WORK
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no $PY (the test edits databases through its sqlite3 module)"; exit 77; }
# sql DB STATEMENT...: writes to a test copy (egm itself only reads inputs).
sql() { "$PY" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for s in sys.argv[2:]: c.execute(s)
c.commit()' "$@"; }

WHOLE=$WORK/whole.sqlite
A=$WORK/a.sqlite
B=$WORK/b.sqlite
M=$WORK/merged.sqlite
sed 's/"seeds": \[0, 1\]/"seeds": [0]/' "$SPECS/merge.json" >"$WORK/half_a.json"
sed 's/"seeds": \[0, 1\]/"seeds": [1]/' "$SPECS/merge.json" >"$WORK/half_b.json"
sed 's/"seeds": \[0, 1\]/"seeds": [0, 1, 2]/' "$SPECS/merge.json" >"$WORK/extended.json"
for s in whole:"$SPECS/merge.json" a:"$WORK/half_a.json" b:"$WORK/half_b.json"; do
  name=${s%%:*}
  "$EGM" sweep "${s#*:}" --workers 2 --db "$WORK/$name.sqlite" --runs-dir "$WORK/runs_$name" --view none \
    >"$WORK/sweep_$name.txt" 2>&1
  expect_eq "exit status of the $name sweep" 0 $?
done
expect_all_done_once "$WHOLE" 4
expect_all_done_once "$A" 2
expect_all_done_once "$B" 2
inputs_before=$(sha256sum "$A" "$B")

# The halves merged: the whole sweep's analysis, the whole spec.
run "merge the halves" 0 "$EGM" merge "$M" "$A" "$B"
expect_in "the summary" "sweep merge: 4 cells (4 done): 2 from $A, 2 from $B" "$out"
expect_in "the summary says the spec grew" "its spec lists the inputs' seeds and variants together" "$out"
expect_eq "inputs untouched" "$inputs_before" "$(sha256sum "$A" "$B")"
expect_all_done_once "$M" 4
expect_eq "the merged spec is the whole spec (its hash)" "$(q "$WHOLE" "SELECT spec_hash FROM sweeps")" \
  "$(q "$M" "SELECT spec_hash FROM sweeps")"
expect_eq "cells in the whole spec's order" "$(q "$WHOLE" "SELECT key || ' ' || position FROM cells ORDER BY key")" \
  "$(q "$M" "SELECT key || ' ' || position FROM cells ORDER BY key")"
expect_eq "the same results as the whole sweep" \
  "$(q "$WHOLE" "SELECT key, final_val, best_val, final_step FROM cells ORDER BY key")" \
  "$(q "$M" "SELECT key, final_val, best_val, final_step FROM cells ORDER BY key")"
for format in csv json; do
  "$EGM" analyze merge --db "$WHOLE" --format $format >"$WORK/analyze_whole.$format" 2>&1
  expect_eq "egm analyze --format $format of the whole sweep" 0 $?
  "$EGM" analyze merge --db "$M" --format $format >"$WORK/analyze_merged.$format" 2>&1
  expect_eq "egm analyze --format $format of the merged one" 0 $?
  cmp -s "$WORK/analyze_whole.$format" "$WORK/analyze_merged.$format" ||
    fail "egm analyze --format $format differs: $(diff "$WORK/analyze_whole.$format" "$WORK/analyze_merged.$format" | head -n 10)"
done
# The table too, up to the compute statement (the halves' own wall times).
"$EGM" analyze merge --db "$WHOLE" | sed '/^compute/,$d' >"$WORK/analyze_whole.txt"
"$EGM" analyze merge --db "$M" | sed '/^compute/,$d' >"$WORK/analyze_merged.txt"
cmp -s "$WORK/analyze_whole.txt" "$WORK/analyze_merged.txt" ||
  fail "egm analyze's table differs: $(diff "$WORK/analyze_whole.txt" "$WORK/analyze_merged.txt" | head -n 10)"
# Provenance: each run keeps host and commit, and names its input file.
expect_eq "runs with host and commit" 4 "$(q "$M" "SELECT count(*) FROM runs WHERE host <> '' AND git_commit <> ''")"
expect_eq "each run names its input" "$A 2;$B 2;" \
  "$(q "$M" "SELECT s.path || ' ' || count(*) FROM runs r JOIN merge_sources s ON s.id = r.merge_source
             GROUP BY s.path ORDER BY s.path" | tr '\n' ';')"
expect_eq "the metrics came along" "$(q "$WHOLE" "SELECT count(*) FROM metrics")" "$(q "$M" "SELECT count(*) FROM metrics")"
expect_eq "the learned parameters came along" "$(q "$WHOLE" "SELECT count(*) FROM params")" \
  "$(q "$M" "SELECT count(*) FROM params")"
expect_eq "a sweep_merged event" 1 "$(q "$M" "SELECT count(*) FROM events WHERE kind = 'sweep_merged'")"
expect_eq "no temporary file left" "" "$(find "$WORK" -maxdepth 1 -name "*.merging-*")"
"$EGM" status --db "$M" >"$WORK/status.txt" 2>&1 || fail "egm status on the merged database: $(cat "$WORK/status.txt")"
"$EGM" report merge --db "$M" --out "$WORK/report" >"$WORK/report.txt" 2>&1 ||
  fail "egm report on the merged database: $(tail -n 3 "$WORK/report.txt")"
"$EGM" export merge --format csv --out "$WORK/export" --db "$M" >"$WORK/export.txt" 2>&1 ||
  fail "egm export on the merged database: $(tail -n 3 "$WORK/export.txt")"

# An ordinary database: the whole spec resumes it (nothing to train) ...
"$EGM" sweep "$SPECS/merge.json" --workers 2 --db "$M" --runs-dir "$WORK/runs_m" --view none >"$WORK/resume.txt" 2>&1
expect_eq "exit status of egm sweep on the merged database" 0 $?
expect_eq "attempts after it" 4 "$(q "$M" "SELECT count(*) FROM runs")"
# ... and --extend with a third seed trains only its two cells.
"$EGM" sweep "$WORK/extended.json" --extend --workers 2 --db "$M" --runs-dir "$WORK/runs_m" --view none \
  >"$WORK/extend.txt" 2>&1
expect_eq "exit status of --extend on the merged database" 0 $?
expect_all_done_once "$M" 6
expect_eq "the new runs are this file's own" 2 "$(q "$M" "SELECT count(*) FROM runs WHERE merge_source IS NULL")"

# A split by variant: each half lists one variant (and the whole sweep's seeds).
for v in base:ega ega:base; do
  keep=${v%%:*} drop=${v#*:}
  cp "$WHOLE" "$WORK/only_$keep.sqlite"
  sql "$WORK/only_$keep.sqlite" "PRAGMA foreign_keys = ON" "DELETE FROM cells WHERE variant = '$drop'" \
    "UPDATE sweeps SET spec_json = json_set(spec_json, '\$.variants', json('[\"$keep\"]')), spec_hash = '$keep'"
done
run "merge a split by variant" 0 "$EGM" merge "$WORK/by_variant.sqlite" "$WORK/only_base.sqlite" "$WORK/only_ega.sqlite"
expect_eq "the variants' union is the whole spec" "$(q "$WHOLE" "SELECT spec_hash FROM sweeps")" \
  "$(q "$WORK/by_variant.sqlite" "SELECT spec_hash FROM sweeps")"
"$EGM" analyze merge --db "$WORK/by_variant.sqlite" --format csv >"$WORK/analyze_by_variant.csv" 2>&1
cmp -s "$WORK/analyze_whole.csv" "$WORK/analyze_by_variant.csv" ||
  fail "egm analyze of the split by variant differs: $(diff "$WORK/analyze_whole.csv" "$WORK/analyze_by_variant.csv" | head -n 10)"

# The same cells twice with the same results: kept once.
cp "$A" "$WORK/a_copy.sqlite"
run "merge a database with its copy" 0 "$EGM" merge "$WORK/twice.sqlite" "$A" "$WORK/a_copy.sqlite"
expect_in "kept once, said" "2 done in several inputs with the same results, kept once" "$out"
expect_eq "cells kept once" 2 "$(q "$WORK/twice.sqlite" "SELECT count(*) FROM cells")"
expect_eq "runs kept once" 2 "$(q "$WORK/twice.sqlite" "SELECT count(*) FROM runs")"
# A merged database merged again: its runs still name their first input, through it.
run "merge a merged database" 0 "$EGM" merge "$WORK/again.sqlite" "$WORK/twice.sqlite" "$B"
expect_eq "a run merged twice names its first input" "$A" \
  "$(q "$WORK/again.sqlite" "SELECT s.path FROM runs r JOIN cells c ON c.id = r.cell_id
     JOIN merge_sources s ON s.id = r.merge_source WHERE c.key = 'base-s0'")"
expect_eq "... through the merge it came in" "$WORK/twice.sqlite" \
  "$(q "$WORK/again.sqlite" "SELECT v.path FROM merge_sources s JOIN merge_sources v ON v.id = s.via
     WHERE s.path = '$A'")"

# An input from schema 7 (before merge_sources, as egm wrote until this version; made here by
# editing the schema's text: SQLite's DROP COLUMN re-parses the `params` view, which needs egm's
# function; the table is renamed, not deleted, so no page is left unused for quick_check to find):
# read as it is, its runs named.
cp "$A" "$WORK/v7.sqlite"
sql "$WORK/v7.sqlite" "PRAGMA writable_schema = ON" \
  "UPDATE sqlite_master SET sql = replace(sql, ', merge_source INTEGER REFERENCES merge_sources(id)', '') WHERE name = 'runs'" \
  "UPDATE sqlite_master SET name = 'unused_t', tbl_name = 'unused_t', sql = replace(replace(sql, 'CREATE TABLE merge_sources', 'CREATE TABLE unused_t'), 'REFERENCES merge_sources(id)', '') WHERE name = 'merge_sources'" \
  "PRAGMA user_version = 7"
# Its views as schema 7 had them: migration 12 redefined params and metric_points (read
# through row_sources) and added row_sources; their first CREATE in results.sql is version 7's.
"$PY" - "$WORK/v7.sqlite" "$EGM_SOURCE_DIR/schemas/results.sql" <<'EOF'
import re, sqlite3, sys
schema = open(sys.argv[2]).read()
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA writable_schema = ON")
for name in ("params", "metric_points"):
    first = re.search(r"^CREATE VIEW %s AS.*?;$" % name, schema, re.S | re.M).group(0)[:-1]
    c.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (first, name))
c.execute("DELETE FROM sqlite_master WHERE name = 'row_sources'")
c.commit()
EOF
expect_eq "the schema 7 copy has no merge_sources" 0 \
  "$(q "$WORK/v7.sqlite" "SELECT count(*) FROM sqlite_master WHERE name = 'merge_sources'")"
run "merge a schema 7 input" 0 "$EGM" merge "$WORK/from_v7.sqlite" "$WORK/v7.sqlite" "$B"
expect_eq "its runs named, with its version" "7 2;$(q "$B" "SELECT user_version FROM pragma_user_version") 2;" "$(q "$WORK/from_v7.sqlite" "SELECT s.schema_version || ' ' || count(*)
  FROM runs r JOIN merge_sources s ON s.id = r.merge_source GROUP BY s.id ORDER BY s.id" | tr '\n' ';')"
expect_eq "and its results" "$(q "$M" "SELECT key, final_val FROM cells WHERE seed < 2 ORDER BY key")" \
  "$(q "$WORK/from_v7.sqlite" "SELECT key, final_val FROM cells ORDER BY key")"

# refused NAME EXPECTED_LINE_PART ARGS...: one line, exit 2, OUT not written, no temporary file.
refused() {
  local name=$1 part=$2
  shift 2
  rm -f "$WORK/out.sqlite"
  "$EGM" merge "$WORK/out.sqlite" "$@" >"$WORK/refused.txt" 2>&1
  expect_eq "$name: exit status" 2 $?
  expect_eq "$name: one line" 1 "$(wc -l <"$WORK/refused.txt")"
  expect_in_file "$name: the line" "$part" "$WORK/refused.txt"
  [ -e "$WORK/out.sqlite" ] && fail "$name: wrote $WORK/out.sqlite"
  expect_eq "$name: no temporary file left" "" "$(find "$WORK" -maxdepth 1 -name "*.merging-*")"
}

# A conflict: the same cell done with different results.
cp "$A" "$WORK/a_other.sqlite"
sql "$WORK/a_other.sqlite" "UPDATE cells SET final_val = final_val + 0.01 WHERE key = 'base-s0'"
refused "a conflict" "conflict: 1 cell(s) done in two inputs with different results (merge base-s0: " \
  "$A" "$WORK/a_other.sqlite"
expect_in_file "the refusal says how to decide" "--prefer" "$WORK/refused.txt"
run "--prefer decides a conflict" 0 "$EGM" merge "$WORK/preferred.sqlite" "$A" "$WORK/a_other.sqlite" \
  --prefer "$WORK/a_other.sqlite"
expect_eq "the preferred input's result" "$(q "$WORK/a_other.sqlite" "SELECT final_val FROM cells WHERE key = 'base-s0'")" \
  "$(q "$WORK/preferred.sqlite" "SELECT final_val FROM cells WHERE key = 'base-s0'")"
expect_eq "... and its run" "$WORK/a_other.sqlite" "$(q "$WORK/preferred.sqlite" "SELECT s.path FROM runs r
  JOIN cells c ON c.id = r.cell_id JOIN merge_sources s ON s.id = r.merge_source WHERE c.key = 'base-s0'")"
refused "--prefer that is no input" "--prefer $B is not one of the inputs" "$A" "$WORK/a_other.sqlite" --prefer "$B"

# A mismatched spec under the same sweep name, and a cell with another run config.
cp "$B" "$WORK/b_spec.sqlite"
sql "$WORK/b_spec.sqlite" "UPDATE sweeps SET spec_json = json_set(spec_json, '\$.steps', 30), spec_hash = 'x'"
refused "a mismatched spec" "sweep 'merge': the spec in $WORK/b_spec.sqlite differs from the one in $A at \$.steps (20 vs 30)" \
  "$A" "$WORK/b_spec.sqlite"
cp "$A" "$WORK/a_config.sqlite"
sql "$WORK/a_config.sqlite" "UPDATE cells SET config_hash = 'ffffffffffffffff' WHERE key = 'ega-s0'"
refused "another run config" "cell ega-s0 has another run config" "$A" "$WORK/a_config.sqlite"
# Different corpora, where the sweeps record them.
cp "$A" "$WORK/a_corpus.sqlite"
cp "$B" "$WORK/b_corpus.sqlite"
sql "$WORK/a_corpus.sqlite" "UPDATE sweeps SET corpus_sha256 = 'aaaa'"
sql "$WORK/b_corpus.sqlite" "UPDATE sweeps SET corpus_sha256 = 'bbbb'"
refused "different corpora" "sweeps on different corpora are not merged" "$WORK/a_corpus.sqlite" "$WORK/b_corpus.sqlite"

# A damaged input: cut in half.
cp "$B" "$WORK/damaged.sqlite"
truncate -s $(($(stat -c %s "$WORK/damaged.sqlite") / 2)) "$WORK/damaged.sqlite"
refused "a damaged input" "input $WORK/damaged.sqlite is damaged" "$A" "$WORK/damaged.sqlite"
# Not an egm database: text, and SQLite without egm's schema version.
echo "not a database" >"$WORK/text.sqlite"
refused "a text file" "input $WORK/text.sqlite is not an egm results database" "$A" "$WORK/text.sqlite"
sql "$WORK/foreign.sqlite" "CREATE TABLE t (x)"
refused "a foreign SQLite file" "input $WORK/foreign.sqlite is not an egm results database" "$A" "$WORK/foreign.sqlite"
# From a newer egm.
cp "$B" "$WORK/newer.sqlite"
sql "$WORK/newer.sqlite" "PRAGMA user_version = 999"
refused "a newer schema" "input $WORK/newer.sqlite has schema version 999, newer than this egm knows" \
  "$A" "$WORK/newer.sqlite"
refused "a missing input" "input $WORK/missing.sqlite does not exist" "$A" "$WORK/missing.sqlite"
refused "an input twice" "is given twice" "$A" "$A"
# OUT exists: refused without --force (untouched), replaced with it.
before=$(sha256sum "$M")
"$EGM" merge "$M" "$A" "$B" >"$WORK/exists.txt" 2>&1
expect_eq "OUT exists: exit status" 2 $?
expect_eq "OUT exists: one line" 1 "$(wc -l <"$WORK/exists.txt")"
expect_in_file "OUT exists: says --force" "exists; pass --force to replace it" "$WORK/exists.txt"
expect_eq "OUT exists: untouched" "$before" "$(sha256sum "$M")"
run "--force replaces OUT" 0 "$EGM" merge "$M" "$A" "$B" --force
expect_eq "the replaced OUT" 4 "$(q "$M" "SELECT count(*) FROM cells")"
finish
