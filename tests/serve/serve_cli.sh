#!/usr/bin/env bash
# egm serve on the command line: refusals are one line on stderr with exit 2
# and create nothing; a database not there yet is waited for (said in a line)
# and served once it appears; a served page over loopback; SIGTERM stops it (exit 0);
# the database file's bytes and mtime unchanged by a session of requests.
#   serve_cli.sh EGM MAKE_FIXTURE WORK
set -u
EGM=$1 MAKE_FIXTURE=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=../support/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"

# refuse WHAT ARGS...: exit 2, exactly one line on stderr, nothing on stdout.
refuse() {
  local what=$1; shift
  "$EGM" serve "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
  local rc=$?
  [ "$rc" = 2 ] || fail "$what: exit $rc, expected 2"
  [ "$(wc -l <"$WORK/err.txt")" = 1 ] || { fail "$what: stderr is not one line"; cat "$WORK/err.txt"; }
  [ ! -s "$WORK/out.txt" ] || fail "$what: printed to stdout"
  echo "$what: $(cat "$WORK/err.txt")"
}

# A database not there yet (egm serve started before the sweep): it says it waits for
# it, creates nothing, and stops cleanly on SIGTERM meanwhile (exit 0)...
"$EGM" serve --db "$WORK/absent.sqlite" --port 0 >"$WORK/wait.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "waiting for" "$WORK/wait.txt" && break; sleep 0.1; done
grep -q "^egm serve: waiting for $WORK/absent.sqlite to appear" "$WORK/wait.txt" ||
  fail "no line saying what egm serve waits for: $(cat "$WORK/wait.txt")"
sleep 0.5
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 0 ] || fail "egm serve waiting for its database exited $rc on SIGTERM, expected 0"
[ ! -e "$WORK/absent.sqlite" ] || fail "a missing database was created"
[ ! -e "$WORK/absent.sqlite-wal" ] || fail "a missing database's WAL was created"
# ... and serves it once it appears.
"$EGM" serve --db "$WORK/later/main.sqlite" --port 0 >"$WORK/later.txt" 2>&1 &
later_pid=$!
for _ in $(seq 1 300); do grep -q "waiting for" "$WORK/later.txt" && break; sleep 0.1; done
grep -q "^egm serve: http" "$WORK/later.txt" && fail "egm serve served a database that did not exist"
"$MAKE_FIXTURE" "$WORK/later" >/dev/null || fail "fixture (later)"
for _ in $(seq 1 300); do grep -q "^egm serve: http" "$WORK/later.txt" && break; sleep 0.1; done
LATER_URL=$(sed -n 's/^egm serve: \(http[^ ]*\) .*/\1/p' "$WORK/later.txt")
[ -n "$LATER_URL" ] || fail "egm serve did not serve the database once it appeared: $(cat "$WORK/later.txt")"
echo "not sqlite" >"$WORK/text.sqlite"
refuse "not a database" --db "$WORK/text.sqlite" --port 0
[ "$(cat "$WORK/text.sqlite")" = "not sqlite" ] || fail "a non-database file was changed"

"$MAKE_FIXTURE" "$WORK/fx" >/dev/null || { echo "FAIL: fixture"; exit 1; }
DB=$WORK/fx/main.sqlite
refuse "bad port" --db "$DB" --port 70000
refuse "port not a number" --db "$DB" --port http
refuse "bad refresh" --db "$DB" --refresh -1
refuse "unknown flag" --db "$DB" --colour red
refuse "unresolvable host" --db "$DB" --host no.such.host.invalid --port 0

sqlite3 "$DB" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null 2>&1 || true
before=$(sha256sum "$DB" | cut -d' ' -f1)$(stat -c %Y.%y "$DB")
"$EGM" serve --db "$DB" --port 0 >"$WORK/serve.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q "^egm serve: http" "$WORK/serve.txt" && break; sleep 0.1; done
URL=$(sed -n 's/^egm serve: \(http[^ ]*\) .*/\1/p' "$WORK/serve.txt")
case "$URL" in http://127.0.0.1:[0-9]*/) ;; *) fail "printed URL '$URL', expected http://127.0.0.1:PORT/" ;; esac
fetch() { /usr/bin/python3 -c 'import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=60); print(r.status); sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code); sys.stdout.write(e.read().decode())' "$1"; }
if [ -n "$LATER_URL" ]; then
  page=$(fetch "${LATER_URL}sweep/fixture")
  [ "$(head -n1 <<<"$page")" = 200 ] || fail "GET /sweep/fixture of the database that appeared: $(head -n1 <<<"$page")"
fi
kill -TERM "$later_pid"
wait "$later_pid" || fail "egm serve (the database that appeared) exited $? on SIGTERM"
page=$(fetch "${URL}sweep/fixture")
[ "$(head -n1 <<<"$page")" = 200 ] || fail "GET /sweep/fixture: $(head -n1 <<<"$page")"
grep -q 'id="verdict">superadditive' <<<"$page" || fail "the sweep page lacks its verdict"
grep -q 'id="corpus">corpus: ' <<<"$page" || fail "the sweep page lacks its corpus line"
page=$(fetch "${URL}query?sql=DELETE%20FROM%20cells")
[ "$(head -n1 <<<"$page")" = 403 ] || fail "a DELETE through the SQL box: $(head -n1 <<<"$page"), expected 403"
page=$(fetch "${URL}nowhere")
[ "$(head -n1 <<<"$page")" = 404 ] || fail "an unknown path: $(head -n1 <<<"$page"), expected 404"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 0 ] || fail "egm serve exited $rc on SIGTERM, expected 0"
after=$(sha256sum "$DB" | cut -d' ' -f1)$(stat -c %Y.%y "$DB")
[ "$before" = "$after" ] || fail "the database file changed while served"

finish
