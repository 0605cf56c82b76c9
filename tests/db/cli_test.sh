#!/usr/bin/env bash
# The read-only verbs end to end: egm query / status / runs on a database made
# by make_cli_fixture. Checks output, exit statuses, and that nothing (not even
# a refused write) changes the file.
#   cli_test.sh EGM_BINARY FIXTURE_BINARY WORK_DIR
set -u
# shellcheck source=../support/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"
fixture_setup "$@" results.sqlite
DB=$WORK/results.sqlite

# Close every writer first: the checksum is of the file at rest.
before=$(sha256sum "$DB" | cut -d' ' -f1)

run "query csv" 0 "$EGM" query "SELECT variant, final_val FROM cells WHERE status = 'done'" --db "$DB" --format csv
[ "$out" = "variant,final_val
base,1.4742" ] || fail "query csv: got '$out'"

run "query json" 0 "$EGM" query "SELECT key, status FROM cells ORDER BY position" --db "$DB" --format json
expect_in "query json" '"key": "ega-s0"' "$out"
expect_in "query json" '"status": "running"' "$out"

for sql in "DELETE FROM cells" "DROP TABLE cells" "UPDATE cells SET status = 'done'" \
           "INSERT INTO events (time, kind, message) VALUES (0, 'x', 'y')" "PRAGMA user_version = 9" \
           "ATTACH DATABASE '$WORK/other.sqlite' AS other"; do
  run "write refused: $sql" 1 "$EGM" query "$sql" --db "$DB"
  [ "$status" = 0 ] || expect_in "write refused: $sql" "" "$err"
done
run "write message" 1 "$EGM" query "DELETE FROM cells" --db "$DB"
expect_in "write message" "read-only" "$err"
[ ! -e "$WORK/other.sqlite" ] || fail "ATTACH created a file"

run "count after writes" 0 "$EGM" query "SELECT count(*) AS n FROM cells" --db "$DB" --format csv
[ "$out" = "n
3" ] || fail "cells changed: '$out'"

run "status" 0 "$EGM" status --db "$DB"
expect_in "status" "sweep demo" "$out"
expect_in "status" "3 cells: 1 done, 1 running, 0 pending, 1 failed (1 with no retries left), 0 interrupted" "$out"
expect_in "status" "ega-s0" "$out"
expect_in "status" "20/100" "$out"
# 300 steps in all, 100 of them in the failed cell that has no retries left:
# 120 of 200 done (60%), 80 to go at the running cell's 1 step/s.
expect_in "status" " 60.0%  120/200 steps" "$out"
expect_in "status" "ETA 1m 20s" "$out"

expect_in "status: a failed cell in one line" "failed  mope-s0 (failure 1 of 1 allowed; given up): bad value" "$out"

# A sweep whose coordinator is gone (no heartbeat for an hour, still 'running'):
# stale, and its running cell counts as interrupted.
"$FIXTURE" "$WORK/stale.sqlite" stale || fail "stale fixture failed"
run "status stale" 0 "$EGM" status --db "$WORK/stale.sqlite"
expect_in "status stale" "sweep demo  [stale]" "$out"
expect_in "status stale" "stale: no heartbeat since" "$out"
expect_in "status stale" "coordinator gone?" "$out"
expect_in "status stale" "3 cells: 1 done, 0 running, 0 pending, 1 failed (1 with no retries left), 1 interrupted" "$out"
expect_in "status stale: the running cell listed as interrupted" "    interrupted" "$out"

run "status unknown sweep" 1 "$EGM" status --db "$DB" --sweep nope
expect_in "status unknown sweep" "no sweep named 'nope'" "$err"

run "runs json" 0 "$EGM" runs --db "$DB" --status done --format json
expect_in "runs json" '"final_val": 1.4742' "$out"
expect_in "runs json" '"cell": "base-s0"' "$out"

run "runs csv quoting" 0 "$EGM" runs --db "$DB" --variant mope --format csv
expect_in "runs csv quoting" '"bad value, ""x"" at step 3"' "$out"

run "runs attempts" 0 "$EGM" runs --db "$DB" --attempts --seed 0 --format csv
[ "$(printf '%s\n' "$out" | wc -l)" = 4 ] || fail "runs attempts: expected header + 3 rows: $out"

run "show diff" 0 "$EGM" runs --db "$DB" --show-diff base-s0
expect_in "show diff" "diff --git a/x b/x" "$out"
expect_in "show diff" "# base-s0 attempt 1 (egm 0123456789ab-dirty): diff sha256 aaaa" "$out"
run "show diff of a clean build" 0 "$EGM" runs --db "$DB" --show-diff mope-s0
[ -z "$out" ] || fail "show diff of a clean build printed a diff: $out"
expect_in "show diff of a clean build" "built from a clean tree" "$err"
run "show diff of no such cell" 1 "$EGM" runs --db "$DB" --show-diff nope-s9
expect_in "show diff of no such cell" "no attempt of a cell nope-s9" "$err"

run "runs via EGM_DB" 0 env EGM_DB="$DB" "$EGM" runs --format csv --variant base
expect_in "runs via EGM_DB" "demo,base-s0,base,0,done" "$out"

run "runs bad status" 1 "$EGM" runs --db "$DB" --status finished
expect_in "runs bad status" "valid" "$err"

run "missing db" 1 "$EGM" status --db "$WORK/missing.sqlite"
expect_in "missing db" "no results database" "$err"
[ ! -e "$WORK/missing.sqlite" ] || fail "status created the missing database"
run "missing db query" 1 "$EGM" query "SELECT 1" --db "$WORK/missing.sqlite"
[ ! -e "$WORK/missing.sqlite" ] || fail "query created the missing database"

# egm runs: a --sweep or --variant that names nothing is a typo, refused in one line
# (exit 2) naming what there is, as egm status refuses a sweep; not an empty table.
one_line_refusal() {  # one_line_refusal WHAT NEEDLE: after `run`
  expect_eq "$1: exit" 2 "$status"
  expect_in "$1" "$2" "$err"
  expect_eq "$1: stderr lines" 1 "$(printf '%s\n' "$err" | wc -l)"
  [ -z "$out" ] || fail "$1: printed a table: $out"
}
run "runs unknown sweep" 1 "$EGM" runs --db "$DB" --sweep typo
one_line_refusal "runs unknown sweep" "--sweep typo: no sweep named 'typo' in $DB; sweeps: demo"
run "runs unknown sweep beside a known one" 1 "$EGM" runs --db "$DB" --sweep demo --sweep typo --attempts
one_line_refusal "runs unknown sweep beside a known one" "no sweep named 'typo'"
run "runs unknown variant" 1 "$EGM" runs --db "$DB" --variant typo
one_line_refusal "runs unknown variant" "--variant typo: no cell of variant 'typo' in $DB; variants: base, ega, mope"
run "runs unknown variant of a sweep" 1 "$EGM" runs --db "$DB" --sweep demo --variant base --variant typo --attempts
one_line_refusal "runs unknown variant of a sweep" "no cell of variant 'typo' in sweep demo"
# A known variant that the other filters leave without rows is an empty answer, not an error.
run "runs known variant, no row" 0 "$EGM" runs --db "$DB" --variant ega --status done --format csv
expect_eq "runs known variant, no row" 1 "$(printf '%s\n' "$out" | wc -l)"

# egm status --format json: what the text says, one object per sweep, for scripts.
run "status json" 0 "$EGM" status --db "$DB" --format json
python3 - "$out" <<'PY' || fail "status json: $out"
import json, sys
s = json.loads(sys.argv[1])
assert len(s) == 1 and s[0]["sweep"] == "demo" and s[0]["status"] == "running", s
c = s[0]["cells"]
assert (c["total"], c["done"], c["running"], c["pending"], c["failed"], c["failed_no_retries_left"],
        c["interrupted"]) == (3, 1, 1, 0, 1, 1, 0), c
assert (s[0]["steps_done"], s[0]["steps_to_run"], round(s[0]["eta_s"])) == (120, 200, 80), s[0]
assert [(f["cell"], f["failures"], f["max_attempts"]) for f in s[0]["failed_cells"]] == [("mope-s0", 1, 1)], s[0]
assert s[0]["failed_cells"][0]["error"].startswith("bad value"), s[0]
r = s[0]["running_cells"]
assert [(x["cell"], x["step"], x["max_steps"], x["interrupted"]) for x in r] == [("ega-s0", 20, 100, False)], r
assert s[0]["looks"] == [] and s[0]["slurm_job"] is None, s[0]
PY
run "status json, stale" 0 "$EGM" status --db "$WORK/stale.sqlite" --format json --sweep demo
python3 - "$out" <<'PY' || fail "status json, stale: $out"
import json, sys
s = json.loads(sys.argv[1])[0]
assert s["status"] == "stale" and s["stale_since"] > 0 and s["eta_s"] is None and s["coordinator"] is None, s
assert (s["cells"]["running"], s["cells"]["interrupted"]) == (0, 1), s["cells"]
assert [x["interrupted"] for x in s["running_cells"]] == [True], s["running_cells"]
PY
run "status unknown format" 1 "$EGM" status --db "$DB" --format yaml
expect_eq "status unknown format: exit" 2 "$status"
expect_eq "status unknown format: one line" 1 "$(printf '%s\n' "$err" | wc -l)"
expect_in "status unknown format" "--format" "$err"
[ -z "$out" ] || fail "status unknown format printed: $out"

after=$(sha256sum "$DB" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "the database file changed"

finish
