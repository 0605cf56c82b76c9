#!/usr/bin/env bash
# Under `set -o pipefail`, a reader that stops early (grep -q, grep -m, head) can close
# the pipe while the writer still writes: the writer dies of SIGPIPE, the pipeline
# fails, and a check that found what it looked for reports that it did not. It is a
# timing race (tar's listing of logs.tgz failed CI this way once). This test finds such
# readers in every tracked shell script that sets pipefail; a reader that reads to the
# end (`grep PATTERN >/dev/null`, `sed -n 1p`) does not race.
# The finder is tried first on a sample with known lines.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# early_readers FILE...: "FILE:LINE: TEXT" for each pipe into a reader that can stop early,
# in files that set pipefail (comments skipped).
early_readers() {
  local f
  for f in "$@"; do
    grep -qE 'set -[a-z]*o pipefail|set -o pipefail|set -euo pipefail' "$f" || continue
    grep -nE '\|[[:space:]]*(grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head([[:space:]]|$))' "$f" |
      grep -vE '^[0-9]+:[[:space:]]*#' | sed "s|^|$f:|" || true
  done
}

cat >"$work/sample.sh" <<'SH'
set -euo pipefail
yes | grep -q y && echo 1
yes | head -n 1
yes | grep -m1 y
# yes | grep -q y  (a comment)
yes | grep y >/dev/null
yes | sed -n 1p
SH
cat >"$work/no_pipefail.sh" <<'SH'
set -eu
yes | grep -q y
SH
found=$(early_readers "$work/sample.sh" "$work/no_pipefail.sh")
echo "$found"
[ "$(wc -l <<<"$found")" = 3 ] || { echo "FAIL: the sample has 3 early readers"; exit 1; }
for n in 2 3 4; do grep -q "sample.sh:$n:" <<<"$found" || { echo "FAIL: line $n not found"; exit 1; }; done

cd "$root"
# All but this file, whose sample above holds the early readers on purpose.
mapfile -t scripts < <(git ls-files '*.sh' .ci/run 2>/dev/null | grep -vxF tests/shape/pipefail_readers_test.sh)
[ "${#scripts[@]}" -gt 20 ] || { echo "FAIL: only ${#scripts[@]} shell scripts found under $root"; exit 1; }
bad=$(early_readers "${scripts[@]}")
if [ -n "$bad" ]; then
  echo "FAIL: readers that can stop early, in scripts that set pipefail (read to the end instead):"
  echo "$bad"
  exit 1
fi
echo "ok: ${#scripts[@]} shell scripts, no early reader under pipefail"
