#!/usr/bin/env bash
# Reuse of finished runs (issue 38, src/db/reuse.h), on the real binaries:
# the causal 2x2 after the 2x2, in one database, trains only ega_causal and
# ega_causal_mope (base and mope take the 2x2's runs), says so in the
# coordinator's lines, egm status, egm runs, egm analyze and the compute
# statement, and its analysis equals a --no-reuse run's bit for bit. A cell
# is reused only by identity: another corpus, another model field, another
# world size or another numerics version trains it; --no-reuse and the
# spec's "reuse": false train it too. --dry-run says beforehand which cells
# would be linked (and to which run) and which trained, and prices only those.
#   sweep_reuse.sh EGM WORK
source "$(dirname "$0")/lib.sh"
sweep() { "$EGM" sweep "$@" --workers 2 --runs-dir "$RUNS" --view plain; }
# trained DB SWEEP: the variants this sweep trained itself (distinct, sorted).
trained() {
  q "$1" "SELECT group_concat(v, ' ') AS variants FROM (SELECT DISTINCT c.variant AS v FROM runs r JOIN cells c ON c.id = r.cell_id
    JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = '$2' AND r.reused_from IS NULL AND r.status = 'done' ORDER BY v)"
}
reused_count() {  # reused_count DB SWEEP
  q "$1" "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON s.id = c.sweep_id
    WHERE s.name = '$2' AND r.reused_from IS NOT NULL"
}

# ---- the causal 2x2 after the 2x2
run "the 2x2" 0 sweep "$SPECS/reuse_2x2.json" --db "$DB"
expect_eq "the 2x2 trained every variant" "base ega ega_mope mope" "$(trained "$DB" reuse_2x2)"
expect_eq "the 2x2 reused nothing" 0 "$(reused_count "$DB" reuse_2x2)"
# A dry run of it first: base and mope would be linked (naming the 2x2's runs),
# the causal variants trained, and only those priced; nothing written.
rows() { q "$DB" "SELECT (SELECT count(*) FROM sweeps) || '|' || (SELECT count(*) FROM cells) || '|' ||
  (SELECT count(*) FROM runs) || '|' || (SELECT count(*) FROM metrics)"; }
rows_before=$(rows)
flop() { sed -n 's/^total: \([0-9.e+]*\) FLOP.*/\1/p' <<<"$1"; }
run "dry run of the causal 2x2" 0 sweep "$SPECS/reuse_causal.json" --db "$DB" --dry-run
echo "$out" | sed 's/^/    | /'
expect_eq "dry run: base and mope linked to the 2x2's runs of the same cell" 4 "$(grep -cE \
  "^  (base|mope)-s[01] .* link +takes run [0-9]+ of sweep 'reuse_2x2', cell (base|mope)-s[01], trained on " <<<"$out")"
expect_eq "dry run: each linked cell names its own original" 4 "$(grep -E '^  (base|mope)-s[01] ' <<<"$out" |
  sed -E 's/^  ([a-z_]+-s[01]) .*, cell ([a-z_]+-s[01]), .*/\1 \2/' | awk '$1 == $2' | wc -l)"
expect_eq "dry run: the causal variants trained" 4 "$(grep -cE '^  ega_causal(_mope)?-s[01] .* train *$' <<<"$out")"
expect_in "dry run: the totals" "over the 4 of 8 cells to train; 4 linked to finished runs of the same identity instead (--no-reuse trains them), 0 done already" "$out"
flop_reuse=$(flop "$out")
run "dry run, --no-reuse" 0 sweep "$SPECS/reuse_causal.json" --db "$DB" --dry-run --no-reuse
expect_eq "dry run --no-reuse: every cell trained" 8 "$(grep -cE '^  [a-z_]+-s[01] .* train *$' <<<"$out")"
expect_in "dry run --no-reuse: the totals" "FLOP of training over 8 cells" "$out"
/usr/bin/python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (0 < a < b))' "$flop_reuse" "$(flop "$out")" ||
  fail "the dry run priced the linked cells: $flop_reuse FLOP with reuse, $(flop "$out") without"
expect_eq "the dry runs wrote nothing" "$rows_before" "$(rows)"
run "the causal 2x2 after it" 0 sweep "$SPECS/reuse_causal.json" --db "$DB"
echo "$out" | sed 's/^/    | /' | head -n 4
expect_eq "the causal 2x2 trained only the causal variants" "ega_causal ega_causal_mope" "$(trained "$DB" reuse_causal)"
expect_eq "base and mope (2 seeds each) reused" 4 "$(reused_count "$DB" reuse_causal)"
expect_eq "every cell of the causal 2x2 done once" "8|8" "$(q "$DB" "SELECT count(*), sum(n) FROM (SELECT c.id,
  (SELECT count(*) FROM runs r WHERE r.cell_id = c.id AND r.status = 'done') AS n FROM cells c JOIN sweeps s
  ON s.id = c.sweep_id WHERE s.name = 'reuse_causal' AND c.status = 'done')" | tr ',' '|')"
expect_in "the coordinator names the reused cells" "4 cells reused finished runs" "$out"
run "dry run after it" 0 sweep "$SPECS/reuse_causal.json" --db "$DB" --dry-run
expect_in "dry run after it: every cell done" "over the 0 of 8 cells to train; 0 linked to finished runs of the same identity instead (--no-reuse trains them), 8 done already" "$out"
expect_in "dry run after it: no wall time" "wall time: none, nothing to train" "$out"
# A reused cell holds the original's numbers and reads its curves and parameter snapshots
# (row_sources), which are stored once, under the original's cell.
expect_eq "reused cells equal their originals" "0" "$(q "$DB" "SELECT count(*) FROM cells c JOIN sweeps s ON
  s.id = c.sweep_id JOIN cells o ON o.config_hash = c.config_hash AND o.id != c.id WHERE s.name = 'reuse_causal'
  AND (c.final_val IS NOT o.final_val OR c.best_val IS NOT o.best_val OR c.full_val IS NOT o.full_val
  OR c.ar_val IS NOT o.ar_val OR (SELECT group_concat(step || split || loss) FROM (SELECT * FROM metric_points m
  WHERE m.cell_id = c.id ORDER BY split, step)) IS NOT (SELECT group_concat(step || split || loss) FROM
  (SELECT * FROM metric_points m WHERE m.cell_id = o.id ORDER BY split, step)) OR (SELECT group_concat(hex(data))
  FROM (SELECT data FROM param_snapshots p JOIN row_sources x ON p.cell_id = x.rows_cell_id WHERE x.cell_id = c.id
  ORDER BY step)) IS NOT (SELECT group_concat(hex(data)) FROM (SELECT data FROM param_snapshots p WHERE
  p.cell_id = o.id ORDER BY step)))")"
expect_eq "a reused cell stores no rows of its own" "0" "$(q "$DB" "SELECT count(*) FROM metrics m JOIN runs r
  ON r.cell_id = m.cell_id WHERE r.reused_from IS NOT NULL")"
expect_eq "... and reads them all" "$(q "$DB" "SELECT count(*) FROM metrics m JOIN cells c ON c.id = m.cell_id
  WHERE c.config_hash IN (SELECT o.config_hash FROM cells o JOIN runs r ON r.cell_id = o.id WHERE
  r.reused_from IS NOT NULL)")" "$(q "$DB" "SELECT count(*) FROM metric_points p JOIN runs r ON r.cell_id = p.cell_id
  WHERE r.reused_from IS NOT NULL")"
expect_eq "a reused cell's link has no wall time" "0" "$(q "$DB" "SELECT count(*) FROM runs
  WHERE reused_from IS NOT NULL AND ended_at != started_at")"

# Where it came from, in every verb that shows cells.
run "egm status" 0 "$EGM" status --sweep reuse_causal --db "$DB"
expect_in "egm status" "4 of 8 cells reused from earlier runs (sweep 'reuse_2x2': 4)" "$out"
run "egm runs" 0 "$EGM" runs --sweep reuse_causal --db "$DB" --format csv
expect_in "egm runs: the column" "reused_from" "$out"
expect_in "egm runs: a reused cell" "of sweep 'reuse_2x2', cell base-s0" "$out"
run "egm analyze" 0 "$EGM" analyze reuse_causal --db "$DB"
expect_in "egm analyze: the reuse line" "4 of 8 cells reused from earlier runs" "$out"
expect_in "egm analyze: the compute statement" "4 reused from earlier runs, not counted (reuse saved" "$out"
run "egm report" 0 "$EGM" report reuse_causal --db "$DB" --out "$WORK/report" --gnuplot ''
grep -rqF "Cells reused from earlier runs" "$WORK/report" || fail "egm report: no section on the reused cells"
run "egm export" 0 "$EGM" export reuse_causal --db "$DB" --format csv --out "$WORK/export" -q
grep -rqF "reused_from" "$WORK/export" || fail "egm export: no reused_from column"

# The same causal 2x2 trained in full (--no-reuse, its own database): the
# analysis is the same to the bit, but for the line that says what was reused.
run "--no-reuse" 0 sweep "$SPECS/reuse_causal.json" --db "$WORK/full.sqlite" --no-reuse
expect_eq "--no-reuse trained every variant" "base ega_causal ega_causal_mope mope" \
  "$(trained "$WORK/full.sqlite" reuse_causal)"
"$EGM" analyze reuse_causal --db "$DB" --format json >"$WORK/reused.json" || fail "analyze --format json (reused)"
"$EGM" analyze reuse_causal --db "$WORK/full.sqlite" --format json >"$WORK/full.json" || fail "analyze json (full)"
/usr/bin/python3 - "$WORK/reused.json" "$WORK/full.json" <<'PY' || fail "the analysis with reuse differs from --no-reuse"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert len(a.pop("reused")) == 4 and "reused" not in b
if a != b:
    for k in a:
        if a.get(k) != b.get(k): print("  differs:", k)
    sys.exit(1)
print("  analysis with reuse == analysis of a --no-reuse run (JSON, every number)")
PY
expect_eq "final losses equal to the bit" "$(q "$WORK/full.sqlite" "SELECT group_concat(key || '=' || quote(final_val)
  || quote(full_val) || quote(ar_val), ' ') AS v FROM (SELECT * FROM cells ORDER BY key)")" \
  "$(q "$DB" "SELECT group_concat(key || '=' || quote(final_val) || quote(full_val) || quote(ar_val), ' ') AS v FROM
  (SELECT c.* FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'reuse_causal' ORDER BY key)")"

# ---- a merged database keeps its links, and its runs are reused like any
run "egm merge" 0 "$EGM" merge "$WORK/merged.sqlite" "$DB"
expect_eq "merged: the links kept, each naming a run of its own config" "4|0" "$(q "$WORK/merged.sqlite" "SELECT
  count(*) || '|' || sum(o.id IS NULL OR oc.config_hash != c.config_hash) AS v FROM runs r JOIN cells c ON c.id = r.cell_id
  LEFT JOIN runs o ON o.id = r.reused_run LEFT JOIN cells oc ON oc.id = o.cell_id WHERE r.reused_from IS NOT NULL")"
sed 's/"name": "reuse_causal"/"name": "causal_again"/' "$SPECS/reuse_causal.json" >"$WORK/causal_again.json"
run "the causal 2x2 again, on the merged database" 0 sweep "$WORK/causal_again.json" --db "$WORK/merged.sqlite"
expect_eq "a merged database's runs reused: nothing trained" "0|8" \
  "$(q "$WORK/merged.sqlite" "SELECT count(*) FROM runs r JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON
  s.id = c.sweep_id WHERE s.name = 'causal_again' AND r.reused_from IS NULL")|$(reused_count "$WORK/merged.sqlite" causal_again)"

# ---- by identity only: one cell (one_cell.json) under other names
python3 - "$SPECS/one_cell.json" "$WORK" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
def write(name, **changes):
    s = dict(spec, name=name, **changes)
    json.dump(s, open(f"{sys.argv[2]}/{name}.json", "w"))
write("same")                                                    # the identity again: reused
write("dropout", overrides={"model": {"dropout": 0.05}})         # a model field
write("ranks", data_parallel=2)                                  # the world size
write("off", reuse=False)                                        # the spec's field
write("numerics")                                                # after the numerics version changes
write("corpus")                                                  # on another corpus
PY
head -c 300000 "$EGM_DATA" >"$WORK/other.txt"
run "one cell" 0 sweep "$SPECS/one_cell.json" --db "$DB"
run "the same identity" 0 sweep "$WORK/same.json" --db "$DB"
expect_eq "the same identity is reused" "1|" "$(reused_count "$DB" same)|$(trained "$DB" same)"
run "another model field" 0 sweep "$WORK/dropout.json" --db "$DB"
expect_eq "another model field trains" "0|base" "$(reused_count "$DB" dropout)|$(trained "$DB" dropout)"
run "another world size" 0 sweep "$WORK/ranks.json" --db "$DB"
expect_eq "another world size trains" "0|base" "$(reused_count "$DB" ranks)|$(trained "$DB" ranks)"
run "the spec's reuse: false" 0 sweep "$WORK/off.json" --db "$DB"
expect_eq "reuse: false trains" "0|base" "$(reused_count "$DB" off)|$(trained "$DB" off)"
run "another corpus" 0 sweep "$WORK/corpus.json" --db "$DB" --data "$WORK/other.txt"
expect_eq "another corpus trains" "0|base" "$(reused_count "$DB" corpus)|$(trained "$DB" corpus)"
# Every finished run of this identity recorded by another numerics version (as
# after a change to training raised it): nothing matches, the cell trains.
/usr/bin/python3 - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE runs SET numerics_version = numerics_version + 1000")
db.commit()
PY
run "another numerics version" 0 sweep "$WORK/numerics.json" --db "$DB"
expect_eq "another numerics version trains" "0|base" "$(reused_count "$DB" numerics)|$(trained "$DB" numerics)"
finish
