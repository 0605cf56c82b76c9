#!/usr/bin/env bash
# A grid sweep on the real binaries (tiny preset, 2 variants x 1 seed x 2
# learning rates): every cell is stored with its grid point and trained with
# its point's lr; `egm runs` and `egm analyze` show the points; running it
# again resumes (nothing is redone); a --grid that changes the grid is a
# changed spec (exit 2, database untouched); --extend adds a point at the
# axis's end and trains only its cells (and refuses a grid that renumbers the
# points); --new-sweep starts over with the new points; a bad axis is one
# line, exit 2, nothing written.
#   sweep_grid.sh EGM WORK
source "$(dirname "$0")/lib.sh"

"$EGM" sweep "$SPECS/grid.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/out.txt" 2>&1
expect_eq "exit status" 0 $?
expect_all_done_once "$DB" 4
expect_eq "cells, points and their lr" \
  "base-s0-g0 0 0.003;base-s0-g1 1 0.01;ega-s0-g0 0 0.003;ega-s0-g1 1 0.01;" \
  "$(q "$DB" "SELECT key || ' ' || grid_point || ' ' || json_extract(grid_json, '\$.\"train.lr\"') FROM cells ORDER BY key" | tr '\n' ';')"
expect_eq "each cell trained with its point's lr" 4 \
  "$(q "$DB" "SELECT count(*) FROM cells WHERE json_extract(config_json, '\$.train.lr') = json_extract(grid_json, '\$.\"train.lr\"')")"
expect_eq "the two points' losses differ" 2 "$(q "$DB" "SELECT count(DISTINCT final_val) FROM cells WHERE variant = 'base'")"
"$EGM" runs --db "$DB" >"$WORK/runs.txt" 2>&1
expect_in_file "egm runs shows the point" "train.lr=0.01" "$WORK/runs.txt"
"$EGM" analyze grid --db "$DB" --no-params >"$WORK/analyze.txt" 2>&1
expect_eq "egm analyze exit status" 0 $?
expect_in_file "egm analyze: one section per point" "=== grid point 1: train.lr=0.01 ===" "$WORK/analyze.txt"
expect_in_file "egm analyze: across points" "=== across grid points ===" "$WORK/analyze.txt"
# Each point's claims have their own anytime-valid sequences (the point's family).
expect_eq "egm analyze: a sequence block per point" 2 \
  "$(grep -A1 -E '^grid point [01]: train.lr=' "$WORK/analyze.txt" | grep -c '^anytime-valid confidence sequences')"

# Again: resumed, nothing redone.
"$EGM" sweep "$SPECS/grid.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/again.txt" 2>&1
expect_eq "exit status of the rerun" 0 $?
expect_eq "attempts after the rerun" 4 "$(q "$DB" "SELECT count(*) FROM runs")"

# Another grid: a changed spec, refused, the database untouched.
before=$(sha256sum "$DB")
"$EGM" sweep "$SPECS/grid.json" --grid train.lr=3e-3,1e-2,3e-2 --workers 2 --db "$DB" --runs-dir "$RUNS" \
  --view plain >"$WORK/changed.txt" 2>&1
expect_eq "exit status of a changed grid" 2 $?
expect_in_file "the refusal says how to go on" "--new-sweep" "$WORK/changed.txt"
expect_eq "database untouched" "$before" "$(sha256sum "$DB")"

# A bad axis: one line naming it, exit 2, nothing written.
for arg in train.lrx=1 'train.lr=range(1,' train.lr=1,1 model.n_layer=2.5 train.lr=; do
  "$EGM" sweep "$SPECS/grid.json" --grid "$arg" --db "$WORK/bad.sqlite" --runs-dir "$RUNS" >"$WORK/bad.txt" 2>&1
  expect_eq "exit status of --grid $arg" 2 $?
  expect_eq "one line for --grid $arg" 1 "$(wc -l <"$WORK/bad.txt")"
  expect_in_file "the axis is named for --grid $arg" "--grid ${arg%%=*}" "$WORK/bad.txt"
  [ -e "$WORK/bad.sqlite" ] && fail "--grid $arg created the database"
done

# --extend with a grid that reorders the points: refused, the database untouched.
"$EGM" sweep "$SPECS/grid.json" --grid train.lr=1e-2,3e-3 --extend --workers 2 --db "$DB" --runs-dir "$RUNS" \
  --view plain >"$WORK/reordered.txt" 2>&1
expect_eq "exit status of --extend that changes cells" 2 $?
expect_in_file "the refusal names a cell" "base-s0-g0" "$WORK/reordered.txt"
expect_eq "database untouched by the refused --extend" "$before" "$(sha256sum "$DB")"

# --extend with a value added at the axis's end: the same sweep, only the new point's two cells train.
"$EGM" sweep "$SPECS/grid.json" --grid train.lr=3e-3,1e-2,3e-2 --extend --workers 2 --db "$DB" --runs-dir "$RUNS" \
  --view plain >"$WORK/extend.txt" 2>&1
expect_eq "exit status with --extend" 0 $?
expect_eq "one sweep, extended in place" "1 grid" "$(q "$DB" "SELECT count(*) || ' ' || min(name) FROM sweeps")"
expect_all_done_once "$DB" 6
expect_eq "attempts after --extend: the first four, and the new point's two" \
  "0 2;1 2;2 2;" "$(q "$DB" "SELECT c.grid_point || ' ' || count(*) FROM runs r JOIN cells c ON c.id = r.cell_id
  GROUP BY c.grid_point ORDER BY c.grid_point" | tr '\n' ';')"
expect_eq "the old spec kept in an event" 1 "$(q "$DB" "SELECT count(*) FROM events WHERE kind = 'sweep_extended'")"
before=$(sha256sum "$DB")

# --new-sweep with the new grid: the old sweep kept aside as grid@1, a new one with six cells.
"$EGM" sweep "$SPECS/grid.json" --grid train.lr=3e-3,1e-2,3e-2 --new-sweep --workers 2 --db "$DB" --runs-dir "$RUNS" \
  --view plain >"$WORK/new.txt" 2>&1
expect_eq "exit status with --new-sweep" 0 $?
expect_eq "cells of the new sweep" "6 done" \
  "$(q "$DB" "SELECT count(*) || ' ' || min(c.status) FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'grid'")"
expect_eq "its third point" 2 "$(q "$DB" "SELECT count(*) FROM cells c JOIN sweeps s ON s.id = c.sweep_id
  WHERE s.name = 'grid' AND json_extract(grid_json, '\$.\"train.lr\"') = 0.03")"
finish
