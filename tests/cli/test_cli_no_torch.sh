#!/usr/bin/env bash
# `egm` loads no LibTorch for the read-only verbs (src/cli/README.md): its
# binary needs none of LibTorch's libraries, and the dynamic loader's trace
# (LD_DEBUG=libs) of status, runs, query, analyze, report, merge, paper, serve (a
# sweep page served) and export (every
# format: Parquet loads Arrow from egm-parquet.so, never LibTorch) on a small
# database, of `egm submit --dry-run`, and of `egm --help` / `egm train --help`,
# names none; nor does the trace of `egm status` name Arrow (only export loads
# it). The torch
# verbs do load it (through egm-torch, same pid: LD_DEBUG follows the exec),
# and without egm-torch next to egm they stop with one line and exit 2.
#   test_cli_no_torch.sh EGM_BINARY FIXTURE_BINARY WORK_DIR
set -u
# shellcheck source=../support/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"
fixture_setup "$@" results.sqlite
DB=$WORK/results.sqlite
torch_libs='lib(torch|torch_cpu|torch_cuda|c10|c10_cuda|cudart|cublas|cudnn|nccl)[._]'

needed=$(readelf -d "$EGM" | grep NEEDED)
[ -n "$needed" ] || fail "readelf -d $EGM listed no NEEDED libraries"
if grep -Eq "$torch_libs" <<<"$needed"; then fail "egm needs LibTorch: $(grep -E "$torch_libs" <<<"$needed" | tr -s ' ')"; fi

# loaded NAME EXPECTED(yes|no) CMD...: runs CMD under LD_DEBUG=libs and checks whether a LibTorch library was loaded.
loaded() {
  local name=$1 expected=$2
  shift 2
  rm -f "$WORK"/ld.*
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$WORK/ld" "$@" >"$WORK/out" 2>"$WORK/err"
  local status=$?
  [ "$status" = 0 ] || fail "$name: exit $status: $(head -c 400 "$WORK/err")"
  if ! cat "$WORK"/ld.* 2>/dev/null | grep -q "calling init"; then fail "$name: no loader trace (LD_DEBUG)"; return; fi
  local got=no
  cat "$WORK"/ld.* | grep -E "calling init: .*$torch_libs" -q && got=yes
  [ "$got" = "$expected" ] || fail "$name: LibTorch loaded: $got, expected $expected"
}

loaded "egm --help" no "$EGM" --help
loaded "egm train --help" no "$EGM" train --help
# egm --version: the build's commit (and whether the tree was modified), LibTorch and
# CUDA as CMake found them at build time, and the schema; printed without loading LibTorch.
loaded "egm --version" no "$EGM" --version
commit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && git rev-parse --short=12 HEAD 2>/dev/null) || commit='[0-9a-f]{12}'
grep -Eq "^commit: $commit, (clean|dirty \(uncommitted changes to tracked files.*\))$" "$WORK/out" || fail "egm --version: commit line: $(cat "$WORK/out")"
grep -Eq '^LibTorch: [0-9]+\.[0-9]+\.[0-9]+' "$WORK/out" || fail "egm --version: no LibTorch version: $(cat "$WORK/out")"
grep -Eq '^CUDA: ([0-9]+\.[0-9]+|none \(CPU-only LibTorch\))' "$WORK/out" || fail "egm --version: no CUDA line: $(cat "$WORK/out")"
schema=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA user_version").fetchone()[0])' "$DB")
grep -qx "results schema: $schema" "$WORK/out" || fail "egm --version: schema (the fixture's is $schema): $(cat "$WORK/out")"
# With anything else on the line: one line, exit 2, nothing on stdout.
for args in "--version status" "status --version" "--version --db $DB" "-v --version"; do
  # shellcheck disable=SC2086
  "$EGM" $args >"$WORK/out" 2>"$WORK/err"
  st=$?
  [ "$st" = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q -- "--version takes no other arguments" "$WORK/err" &&
    [ ! -s "$WORK/out" ] || fail "egm $args: exit $st, stderr '$(cat "$WORK/err")', stdout '$(head -c 200 "$WORK/out")'"
done
loaded "egm status" no "$EGM" status --db "$DB"
loaded "egm runs" no "$EGM" runs --db "$DB"
loaded "egm query" no "$EGM" query "SELECT count(*) FROM cells" --db "$DB"
loaded "egm analyze" no "$EGM" analyze demo --db "$DB"
loaded "egm report" no "$EGM" report demo --db "$DB" --out "$WORK/report"
loaded "egm merge" no "$EGM" merge "$WORK/merged.sqlite" "$DB"
loaded "egm paper" no "$EGM" paper --db "$DB"
# egm serve: a sweep page served (the analysis and its figures built), then the server stopped.
rm -f "$WORK"/ld.*
LD_DEBUG=libs LD_DEBUG_OUTPUT="$WORK/ld" "$EGM" serve --db "$DB" --port 0 >"$WORK/serve.out" 2>&1 &
serve_pid=$!
url=""
for _ in $(seq 200); do
  url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$WORK/serve.out" | head -1)
  [ -n "$url" ] && break
  sleep 0.1
done
if [ -z "$url" ]; then
  fail "egm serve printed no URL: $(head -c 400 "$WORK/serve.out")"
else
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' \
    "${url}sweep/demo" >"$WORK/page.html" || fail "egm serve: GET /sweep/demo failed"
  grep -q 'id="main-table"' "$WORK/page.html" || fail "egm serve: the sweep page has no paper table"
fi
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null
cat "$WORK"/ld.* 2>/dev/null | grep -q "calling init" || fail "egm serve: no loader trace (LD_DEBUG)"
cat "$WORK"/ld.* 2>/dev/null | grep -Eq "calling init: .*$torch_libs" && fail "egm serve loaded LibTorch"
# egm submit renders the batch script around the launch line (launch/launch_command.h) in egm
# itself: no LibTorch, nothing written. The job's line keeps mpirun's launcher for Slurm.
cat >"$WORK/spec.json" <<'JSON'
{"name": "no_torch", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0], "steps": 10}
JSON
echo "to be or not to be" >"$WORK/corpus.txt"
loaded "egm submit --dry-run" no "$EGM" submit "$WORK/spec.json" --slurm --dry-run --workers 2 \
  --db "$WORK/submit/egm.sqlite" --data "$WORK/corpus.txt"
grep -q -- "egm-coordinator $WORK/spec.json --db $WORK/submit/egm.sqlite .*--view plain : -np 2 .*egm-worker --data $WORK/corpus.txt" \
  "$WORK/out" || fail "egm submit --dry-run: no launch line in: $(grep launch_command "$WORK/out")"
grep -q "plm" "$WORK/out" && fail "egm submit --dry-run: the Slurm job's line chooses a launcher: $(grep plm "$WORK/out")"
[ -e "$WORK/submit" ] && fail "egm submit --dry-run wrote $WORK/submit"
for format in csv tensorboard parquet; do
  loaded "egm export --format $format" no "$EGM" export demo --format "$format" --out "$WORK/export-$format" --db "$DB" -q
done
[ -s "$WORK/export-parquet/cells.parquet" ] || fail "egm export --format parquet wrote no cells.parquet"
cat "$WORK"/ld.* | grep -Eq "calling init: .*libarrow" || fail "egm export --format parquet: Arrow was not loaded"
LD_DEBUG=libs LD_DEBUG_OUTPUT="$WORK/ld-status" "$EGM" status --db "$DB" >/dev/null 2>&1
cat "$WORK"/ld-status.* | grep -Eq "libarrow|libparquet" && fail "egm status loaded Arrow"
# A torch verb: the exec into egm-torch, which loads it, prints the corpus path it would use.
EGM_DATA=$WORK/corpus.txt loaded "egm data path" yes "$EGM" data path
expect_eq "egm data path" "$WORK/corpus.txt" "$(cat "$WORK/out")"
# ... and says, in one line (exit 2, nothing on stdout), when that file is missing.
EGM_DATA=$WORK/missing/input.txt "$EGM" data path >"$WORK/out" 2>"$WORK/err"
expect_eq "egm data path, file missing: exit" 2 $?
[ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "corpus $WORK/missing/input.txt (from EGM_DATA) not found" "$WORK/err" ||
  fail "egm data path, file missing: stderr '$(cat "$WORK/err")'"
[ -s "$WORK/out" ] && fail "egm data path, file missing, printed: $(cat "$WORK/out")"

# egm alone, without egm-torch: the read-only verbs work, a torch verb is one line, exit 2.
mkdir -p "$WORK/alone"
cp "$EGM" "$WORK/alone/egm"
"$WORK/alone/egm" status --db "$DB" >/dev/null 2>"$WORK/err" || fail "egm status without egm-torch: $(cat "$WORK/err")"
"$WORK/alone/egm" data path >"$WORK/out" 2>"$WORK/err"
status=$?
[ "$status" = 2 ] || fail "egm data path without egm-torch: exit $status, expected 2"
[ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "egm-torch" "$WORK/err" || fail "egm data path without egm-torch: stderr '$(cat "$WORK/err")'"
[ -s "$WORK/out" ] && fail "egm data path without egm-torch printed: $(cat "$WORK/out")"

finish
