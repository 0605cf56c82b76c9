#!/usr/bin/env bash
# The golden test: one fixed database, the bytes of every reading verb's output
# compared with tests/golden/expected (README.md in this folder).
#   golden.sh main|parquet EGM MAKE_FIXTURE VERSION_HEADER WORK [NOTEBOOK_PYTHON]
# main: egm merge, analyze, report, export --format csv and the serve pages;
# parquet: export --format parquet read back by pyarrow (needs NOTEBOOK_PYTHON).
# EGM_GOLDEN_UPDATE=1 writes what this egm prints into expected/ instead.
set -u
MODE=$1 EGM=$2 FIXTURE=$3 VERSION_HEADER=$4 WORK=$5 NB_PYTHON=${6:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EXPECTED=$HERE/expected
PY=/usr/bin/python3
rm -rf "$WORK" && mkdir -p "$WORK/actual"
cd "$WORK" || exit 1
WORK=$(pwd -P)  # as egm merge's absolute paths spell it (getcwd: no symlinks)
ACTUAL=$WORK/actual

die() { echo "FAIL: $*"; exit 1; }
# verb OUT ERR CMD...: CMD's stdout to actual/OUT, its stderr to actual/ERR (kept
# only when not empty); CMD must succeed.
verb() {
  local out=$ACTUAL/$1 err=$ACTUAL/$2
  shift 2
  mkdir -p "$(dirname "$out")" "$(dirname "$err")"
  "$@" >"$out" 2>"$err" || die "$* exited $?: $(cat "$err")"
  [ -s "$err" ] || rm -f "$err"
}

# ---- the database: two clusters' inputs, merged, and the merge's own values pinned
"$FIXTURE" "$WORK" || die "make_golden_fixture failed"
before=$(date +%s)
verb merge/egm_merge.txt merge/egm_merge.stderr.txt "$EGM" merge golden.sqlite a.sqlite b.sqlite
after=$(($(date +%s) + 1))
# What egm merge takes from the moment and the machine (merge.h): the time it
# ran (merge_sources.merged_at, the merged sweeps' updated_at, their
# sweep_merged event), the inputs' absolute paths (merge_sources.path, that
# event's message), this host's name and this egm's commit. Each is replaced
# only where it is exactly the value this run must have written, so a wrong
# value still shows in the golden.
commit=$(sed -n 's/^#define EGM_GIT_COMMIT "\(.*\)"$/\1/p' "$VERSION_HEADER")
[ -n "$commit" ] || die "no EGM_GIT_COMMIT in $VERSION_HEADER"
in_run=$(sqlite3 golden.sqlite "SELECT count(*) = 2 AND min(merged_at) = max(merged_at) AND
                                 min(merged_at) BETWEEN $before AND $after FROM merge_sources")
[ "$in_run" = 1 ] || die "merge_sources.merged_at is not this merge's time (it ran in $before..$after)"
q() { sed "s/'/''/g" <<<"$1"; }
at="(SELECT merged_at FROM merge_sources WHERE id = 1)"
sqlite3 golden.sqlite "
  UPDATE sweeps SET updated_at = 1796169600 WHERE updated_at = $at;
  UPDATE events SET time = 1796169600, message = replace(message, '$(q "$WORK")/', '')
    WHERE kind = 'sweep_merged' AND time = $at;
  UPDATE merge_sources SET merged_at = 1796169600, path = replace(path, '$(q "$WORK")/', ''),
    host = CASE host WHEN '$(q "$(hostname)")' THEN 'merge-host' ELSE host END,
    egm_commit = CASE egm_commit WHEN '$(q "$commit")' THEN 'egm-commit' ELSE egm_commit END;
  PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null || die "pinning the merge's time, paths, host and commit failed"
# The verbs below name the database relative to $WORK, so no page or file holds $WORK.
DB=golden.sqlite

if [ "$MODE" = main ]; then
  SUBDIRS="merge analyze report export_csv serve"
  verb merge/golden.sqlite.txt merge/dump.stderr.txt "$PY" "$HERE/dump_db.py" "$DB"

  for sweep in golden_2x2 golden_seq; do
    verb "analyze/$sweep.txt" "analyze/$sweep.stderr.txt" "$EGM" analyze "$sweep" --db "$DB"
    verb "analyze/$sweep.json" "analyze/$sweep.json.stderr.txt" "$EGM" analyze "$sweep" --db "$DB" --format json
    # No gnuplot: its PNGs and SVGs are gnuplot's bytes, not egm's.
    verb "report/$sweep/egm_report.txt" "report/$sweep/egm_report.stderr.txt" "$EGM" report "$sweep" --db "$DB" --out "report_$sweep" --gnuplot no/gnuplot
    (cd "report_$sweep" && find . -type f \( -name '*.md' -o -name '*.csv' -o -name '*.json' \) -print0) |
      while IFS= read -r -d '' f; do
        mkdir -p "$(dirname "$ACTUAL/report/$sweep/$f")" && cp "report_$sweep/$f" "$ACTUAL/report/$sweep/$f"
      done
    verb "export_csv/$sweep/egm_export.txt" "export_csv/$sweep/egm_export.stderr.txt" "$EGM" export "$sweep" --db "$DB" --format csv --out "csv_$sweep" -q
    cp "csv_$sweep"/*.csv "$ACTUAL/export_csv/$sweep/"
  done

  # The pages, from egm serve on a loopback port; its one moving part, "page
  # generated <now> UTC" at the foot of every page, becomes "page generated NOW".
  "$EGM" serve --db "$DB" --port 0 >serve.log 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null' EXIT
  for _ in $(seq 1 300); do grep -q "^egm serve: http" serve.log && break; sleep 0.1; done
  URL=$(sed -n 's/^egm serve: \(http[^ ]*\) .*/\1/p' serve.log)
  [ -n "$URL" ] || die "egm serve printed no URL: $(cat serve.log)"
  mkdir -p "$ACTUAL/serve"
  while read -r name target; do
    "$PY" - "$URL${target#/}" "$ACTUAL/serve/$name" <<'EOF' || die "GET $target failed"
import re, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as r:
    body = r.read().decode()
body = re.sub(r"page generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "page generated NOW", body)
open(sys.argv[2], "w").write(body)
EOF
  done <<'EOF'
sweeps.html /
sweep_golden_2x2.html /sweep/golden_2x2
sweep_golden_2x2_point1.html /sweep/golden_2x2?point=1
sweep_golden_seq.html /sweep/golden_seq
cell_ega_mope-s0-g0.html /sweep/golden_2x2/cell/ega_mope-s0-g0
cell_base-s2-g0.html /sweep/golden_2x2/cell/base-s2-g0
cell_mope-s2-g1.html /sweep/golden_2x2/cell/mope-s2-g1
cell_ega_mope-s2-g1.html /sweep/golden_2x2/cell/ega_mope-s2-g1
query.html /query?sql=SELECT%20name%2C%20status%20FROM%20sweeps%20ORDER%20BY%20id
EOF
  kill -TERM "$pid" && wait "$pid"
  trap - EXIT
elif [ "$MODE" = parquet ]; then
  SUBDIRS="export_parquet"
  [ -n "$NB_PYTHON" ] || die "the parquet mode needs the notebook python (scripts/arrow_env.sh)"
  for sweep in golden_2x2 golden_seq; do
    verb "export_parquet/$sweep/egm_export.txt" "export_parquet/$sweep/egm_export.stderr.txt" "$EGM" export "$sweep" --db "$DB" --format parquet --out "pq_$sweep" -q
    "$NB_PYTHON" "$HERE/dump_parquet.py" "$commit" "$ACTUAL/export_parquet/$sweep" "pq_$sweep"/*.parquet ||
      die "reading pq_$sweep back with pyarrow failed"
  done
else
  die "unknown mode '$MODE' (main or parquet)"
fi

# ---- compare (or update) this mode's folders
if [ "${EGM_GOLDEN_UPDATE:-0}" = 1 ]; then
  for d in $SUBDIRS; do
    rm -rf "${EXPECTED:?}/$d" && mkdir -p "$EXPECTED" && cp -r "$ACTUAL/$d" "$EXPECTED/$d"
  done
  echo "golden ($MODE): wrote $SUBDIRS into $EXPECTED; review them with git diff before committing"
  exit 0
fi
failed=0
for d in $SUBDIRS; do
  if ! diff -ru "$EXPECTED/$d" "$ACTUAL/$d" >"$WORK/diff_$d.txt" 2>&1; then
    failed=1
    echo "FAIL: $d differs from tests/golden/expected/$d ($(grep -c '^diff -ru\|^Only in' "$WORK/diff_$d.txt") file(s)):"
    head -n 60 "$WORK/diff_$d.txt"
    echo "    (whole diff: $WORK/diff_$d.txt)"
  fi
done
[ "$failed" = 0 ] || {
  echo "A change that is meant: EGM_GOLDEN_UPDATE=1 ctest -R golden, then review git diff tests/golden/expected"
  exit 1
}
echo "golden ($MODE): every output is byte for byte the expected one ($SUBDIRS)"
