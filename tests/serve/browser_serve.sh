#!/usr/bin/env bash
# egm serve in a real browser (headless Chromium through chromedriver, driven
# by browser.py): a finished tiny sweep's pages (sweeps list, the sweep with
# its tables and plots, a cell, the SQL box, an unknown path), then a second
# sweep while it runs: frozen (SIGSTOP) once both its cells are past step 20,
# its page loaded and checked, then thawed; the page, reloading itself, must
# show more steps done without the test navigating. Screenshots: WORK/shots.
#   browser_serve.sh EGM WORK       (exit 77 without chromium/chromedriver)
source "$(dirname "$0")/../sweep/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
command -v chromium >/dev/null && command -v chromedriver >/dev/null ||
  { echo "SKIP: no chromium/chromedriver (scripts/test.sh installs them)"; exit 77; }
SHOTS=$WORK/shots
mkdir -p "$SHOTS"
serve_pid=""
job=""
cleanup() {
  [ -n "$job" ] && kill_job "$job" 2>/dev/null
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
}
trap cleanup EXIT

# 1. A finished sweep: experiments/tiny.json (the 2x2, three seeds, 12 cells).
"$EGM" sweep "$EXPERIMENTS/tiny.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/tiny.txt" 2>&1 ||
  { fail "the tiny sweep failed"; tail -n 20 "$WORK/tiny.txt"; finish; }

# The server, on any free port, reloading live pages every second.
"$EGM" serve --db "$DB" --port 0 --refresh 1 >"$WORK/serve.txt" 2>&1 &
serve_pid=$!
for _ in $(seq 1 300); do grep -q "^egm serve: http" "$WORK/serve.txt" && break; sleep 0.1; done
URL=$(sed -n 's/^egm serve: \(http[^ ]*\) .*/\1/p' "$WORK/serve.txt")
[ -n "$URL" ] || { fail "egm serve printed no URL"; cat "$WORK/serve.txt"; finish; }
case "$URL" in http://127.0.0.1:*) ;; *) fail "egm serve bound $URL, expected 127.0.0.1 by default" ;; esac
echo "serving $URL"

/usr/bin/python3 "$HERE/browser.py" finished "$URL" tiny "$SHOTS" || fail "the finished sweep's pages (above)"

# 2. A running sweep, watched while it trains.
"$EGM" sweep "$HERE/specs/live_pair.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain \
  >"$WORK/live.txt" 2>&1 &
job=$!
/usr/bin/python3 "$HERE/browser.py" live "$URL" serve_live "$SHOTS" &
browser=$!
wait_file() { for _ in $(seq 1 1200); do [ -f "$1" ] && return 0; sleep 0.1; done; return 1; }
wait_file "$SHOTS/ready" || fail "the browser never became ready"
if freeze_job_when "$job" "$DB" "SELECT count(*) = 2 AS ready FROM runs r JOIN cells c ON c.id = r.cell_id
    JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'serve_live' AND r.status = 'running' AND EXISTS
    (SELECT 1 FROM metrics m WHERE m.run_id = r.id AND m.split = 'train' AND m.step >= 20)" 150 \
    "both cells of serve_live past step 20"; then
  touch "$SHOTS/go"
  wait_file "$SHOTS/loaded" || fail "the browser never loaded the frozen sweep's page"
  echo "page loaded at $(cat "$SHOTS/loaded" 2>/dev/null) steps done; thawing the sweep"
  thaw_job
else
  fail "never caught serve_live with both cells running"
  touch "$SHOTS/go"
fi
wait "$browser" || fail "the running sweep's page (above)"
kill_job "$job"; wait "$job" 2>/dev/null; job=""

for shot in sweeps sweep sweep-top cell query-refused live-frozen live-updated; do
  [ -s "$SHOTS/$shot.png" ] || fail "no screenshot $shot.png"
done
echo "screenshots: $SHOTS"
finish
