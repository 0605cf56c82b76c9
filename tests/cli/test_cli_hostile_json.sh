#!/usr/bin/env bash
# Hostile JSON through the real binary: specs to `egm sweep`, run configs to
# `egm train --config`, values to `--set`. Each must exit 2 with one line of
# error that names the JSON path, and leave no database and no run folder.
# (Before util/json_limits.h the deep and the long-string specs were SIGSEGV.)
#   test_cli_hostile_json.sh path/to/egm
set -uo pipefail
EGM=${1:?usage: test_cli_hostile_json.sh path/to/egm}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
unset EGM_DB
export EGM_DATA=${EGM_DATA:-/nonexistent/corpus}  # nothing may get as far as reading it
failures=0 tried=0 refused=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

py() { python3 -c "$1" > "$2"; }
# Specs: a valid head with one hostile part.
head='{"name": "t", "preset": "tiny", "variants": ["base"], "seeds": [0], '
py "print('[' * 100000 + ']' * 100000)" deep.json
py "print('[' * 100000)" deep_open.json
py "print('$head \"overrides\": {\"model\": ' + '[' * 100000 + ']' * 100000 + '}}')" deep_override.json
py "print('{\"seeds\": [0], \"variants\": [\"base\"], \"name\": \"' + 'a' * 100000 + '\"}')" long_name.json
py "print('$head \"description\": \"' + 'x' * 100000 + '\"}')" long_description.json
py "print('$head \"steps\": 1e400}')" huge_steps.json
py "print('$head \"overrides\": {\"train\": {\"lr\": -1e999}}}')" huge_lr.json
py "print('$head \"steps\": 123456789012345678901234567890}')" huge_int.json
py "print('$head \"steps\": NaN}')" nan.json
py "print('$head \"retries\": Infinity}')" infinity.json
py "print('$head \"description\": \"' + ' ' * (20 << 20) + '\"}')" big.json

# check NAME EXPECTED_PATH EXPECTED_TEXT -- CMD...
check() {
  local name=$1 path=$2 text=$3
  shift 4
  tried=$((tried + 1))
  "$@" > out.txt 2> err.txt
  local rc=$?
  [ "$rc" -eq 2 ] || { fail "$name: exit $rc (want 2): $(head -c 300 err.txt)"; return; }
  [ "$(wc -l < err.txt)" -eq 1 ] || fail "$name: $(wc -l < err.txt) lines of error, want 1: $(head -c 300 err.txt)"
  grep -qF -- "$path" err.txt || fail "$name: no path '$path' in: $(head -c 300 err.txt)"
  grep -qF -- "$text" err.txt || fail "$name: no '$text' in: $(head -c 300 err.txt)"
  [ "$(wc -c < err.txt)" -lt 500 ] || fail "$name: a $(wc -c < err.txt)-byte message"
  [ ! -e db.sqlite ] && [ ! -e runs ] && [ ! -e out ] || fail "$name: something was written: $(ls)"
  rm -rf db.sqlite runs out
  refused=$((refused + 1))
}

for spec in deep deep_open; do
  check "sweep $spec" '$[0][0]' "deeper than 32 levels" -- "$EGM" sweep "$spec.json" --db db.sqlite --runs-dir runs
done
check "sweep deep_override" '$.overrides.model[0]' "deeper than 32" -- "$EGM" sweep deep_override.json --db db.sqlite --runs-dir runs
check "sweep long_name" '$.name' "string of 100000 bytes is longer than 8192" -- "$EGM" sweep long_name.json --db db.sqlite --runs-dir runs
check "sweep long_description" '$.description' "longer than 8192" -- "$EGM" sweep long_description.json --db db.sqlite --runs-dir runs
check "sweep huge_steps" '$.steps' "1e400 is out of range" -- "$EGM" sweep huge_steps.json --db db.sqlite --runs-dir runs
check "sweep huge_lr" '$.overrides.train.lr' "out of range" -- "$EGM" sweep huge_lr.json --db db.sqlite --runs-dir runs
check "sweep huge_int" '$.steps' "out of range" -- "$EGM" sweep huge_int.json --db db.sqlite --runs-dir runs
check "sweep nan" '$.steps' "invalid JSON" -- "$EGM" sweep nan.json --db db.sqlite --runs-dir runs
check "sweep infinity" '$.retries' "invalid JSON" -- "$EGM" sweep infinity.json --db db.sqlite --runs-dir runs
check "sweep big" '$:' "longer than 1048576 bytes" -- "$EGM" sweep big.json --db db.sqlite --runs-dir runs

# Run configs.
py "print('{\"model\": ' + '[' * 100000 + ']' * 100000 + '}')" c_deep.json
py "print('{\"model\": {\"variant\": \"' + 'e' * 100000 + '\"}}')" c_long.json
py "print('{\"train\": {\"lr\": 1e400}}')" c_huge.json
py "print('{\"model\": {\"n_layer\": 18446744073709551615}}')" c_wrap.json
py "print('{\"train\": {\"lr\": NaN}}')" c_nan.json
py "print('{\"train\": {\"out\": \"' + 'x' * (20 << 20) + '\"}}')" c_big.json
check "train deep" '$.model[0][0]' "deeper than 32" -- "$EGM" train --config c_deep.json --out out
check "train long" '$.model.variant' "longer than 8192" -- "$EGM" train --config c_long.json --out out
check "train huge" '$.train.lr' "1e400 is out of range" -- "$EGM" train --config c_huge.json --out out
check "train wrap" 'model.n_layer' "out of range" -- "$EGM" train --config c_wrap.json --out out
check "train nan" '$.train.lr' "invalid JSON" -- "$EGM" train --config c_nan.json --out out
check "train big" '$:' "longer than 1048576 bytes" -- "$EGM" train --config c_big.json --out out
check "train /dev/zero" '$:' "longer than 1048576 bytes" -- "$EGM" train --config /dev/zero --out out
check "set huge" '$' "1e400 is out of range" -- "$EGM" train --set train.lr=1e400 --out out
check "set deep" '$[0][0]' "deeper than 32" -- "$EGM" train --set "model.dropout=$(python3 -c "print('[' * 30000 + ']' * 30000)")" --out out  # one argument: at most 128 KiB

echo "hostile JSON: $tried inputs, $refused refused cleanly, $failures failures"
[ "$failures" -eq 0 ]
