# The checks every scripted test uses, written once (sourced):
#   source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"
# A script counts its failures, says each one on a line, and ends with
# `finish` (exit 1 when any check failed, 0 otherwise).
failures=0
# fixture_setup EGM_BINARY FIXTURE_BINARY WORK_DIR [FILE]: the start of a test of the
# CLI on a fixture: sets EGM, FIXTURE and WORK, empties WORK, and runs the fixture on
# WORK (or on WORK/FILE, the database it writes); a failing fixture ends the script.
fixture_setup() {
  EGM=$1 FIXTURE=$2 WORK=$3
  rm -rf "$WORK" && mkdir -p "$WORK"
  "$FIXTURE" "$WORK${4:+/$4}" || { echo "fixture failed"; exit 1; }
}
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_eq() {  # expect_eq WHAT EXPECTED ACTUAL
  [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}
expect_in() {  # expect_in WHAT NEEDLE TEXT
  case "$3" in *"$2"*) ;; *) fail "$1: missing '$2' in: $3" ;; esac
}
expect_in_file() {  # expect_in_file WHAT NEEDLE FILE: the file's last lines shown when it is not there
  grep -qF -- "$2" "$3" || { fail "$1: '$2' not in $3"; sed 's/^/    | /' "$3" | tail -n 30; }
}
# run NAME EXPECTED_STATUS CMD...: runs CMD; stdout in $out, stderr in $err, exit status in $status.
# EXPECTED_STATUS 0 fails on any other status; anything else fails on 0. Needs $WORK.
run() {
  local name=$1 expected=$2
  shift 2
  out=$("$@" 2>"$WORK/stderr")
  status=$?
  err=$(cat "$WORK/stderr")
  if [ "$expected" = 0 ] && [ "$status" != 0 ]; then fail "$name: exit $status, stderr: $err"; fi
  if [ "$expected" != 0 ] && [ "$status" = 0 ]; then fail "$name: exit 0, expected failure; stdout: $out"; fi
}
finish() {
  if [ "$failures" != 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}
