#!/usr/bin/env bash
# Every number flag of every verb (found in the verbs' --help: the INT, UINT and
# FLOAT options, sub-verbs too) refuses what is not a decimal number of its
# type: exit 2, one line "egm: error: --FLAG: ...", nothing on stdout and
# nothing written. Before cli/number_flags.h, CLI11 read "0x10" as 16, "010"
# as 8, "-1" for an unsigned flag as 2^64 - 1, saturated a whole number past
# 64 bits (`egm train --steps 99999999999999999999` trained for 2^63 - 1
# steps), and took "nan", "inf" and 1e999 for a FLOAT. Then: "010" is ten; the
# count flags refuse 0 (or -1) in one readable line; `egm bench --timed-steps 0`
# (SIGSEGV before) and a negative --stop-timeout are refused.
#   test_cli_number_flags.sh path/to/egm
set -uo pipefail
EGM=$(realpath "${1:?usage: test_cli_number_flags.sh path/to/egm}")
spec=$(realpath "$(dirname "$0")/../../experiments/tiny.json")
work=$(mktemp -d) logs=$(mktemp -d)  # the verbs run in $work, which must stay empty
trap 'rm -rf "$work" "$logs"' EXIT
cd "$work" || exit 1
unset EGM_DB
export EGM_DATA=/nonexistent/corpus  # nothing may get as far as reading it
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# refused WHAT FLAG NEEDLE ARGS...: exit 2, one stderr line naming FLAG and NEEDLE, no stdout, nothing written.
refused() {
  local what=$1 flag=$2 needle=$3
  shift 3
  # A value read wrongly can start the verb's work (a server, a training run): cut off, a failure.
  timeout 30 "$EGM" "$@" >"$logs/out" 2>"$logs/err" </dev/null
  local rc=$?
  [ $rc = 2 ] || fail "$what: exit $rc, expected 2 ($(head -c 200 "$logs/err"))"
  [ "$(wc -l <"$logs/err")" = 1 ] || fail "$what: stderr is not one line: $(head -c 400 "$logs/err")"
  grep -qF -- "egm: error: $flag: " "$logs/err" || fail "$what: stderr does not name $flag: $(cat "$logs/err")"
  grep -qF -- "$needle" "$logs/err" || fail "$what: stderr lacks '$needle': $(cat "$logs/err")"
  [ -s "$logs/out" ] && fail "$what: printed on stdout: $(head -c 200 "$logs/out")"
  [ -z "$(ls -A "$work")" ] || fail "$what: wrote $(ls -A "$work")"
}

# Every verb and sub-verb, from egm --help (the "Subcommands:" lists).
subcommands() { "$EGM" "$@" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'; }
verbs=()
for v in $(subcommands); do
  verbs+=("$v")
  for s in $(subcommands "$v"); do verbs+=("$v $s"); done
done
[ ${#verbs[@]} -ge 16 ] || fail "found only ${#verbs[@]} verbs in egm --help"

checked=0
for verb in "${verbs[@]}"; do
  # "  --seed UINT=12345   ...", "  --workers INT:POSITIVE   ...", "  --level FLOAT=0.95   ..."
  # ($verb unquoted below: "audit causality" is two words.)
  # shellcheck disable=SC2086
  while read -r flag type; do
    base=${type%%[:=]*}
    # shellcheck disable=SC2086
    refused "$verb $flag 0x10" "$flag" "'0x10' is not a" $verb "$flag" 0x10
    # shellcheck disable=SC2086
    refused "$verb $flag nan" "$flag" "'nan' is not a" $verb "$flag" nan
    case $base in
      FLOAT)
        # shellcheck disable=SC2086
        refused "$verb $flag inf" "$flag" "'inf' is not a decimal number" $verb "$flag" inf
        # shellcheck disable=SC2086
        refused "$verb $flag 1e999" "$flag" "'1e999' is out of range" $verb "$flag" 1e999
        # shellcheck disable=SC2086
        refused "$verb $flag ' 1'" "$flag" "' 1' is not a decimal number" $verb "$flag" " 1" ;;
      *)
        # shellcheck disable=SC2086
        refused "$verb $flag 1e3" "$flag" "'1e3' is not a whole number in decimal digits" $verb "$flag" 1e3
        # shellcheck disable=SC2086
        refused "$verb $flag +5" "$flag" "'+5' is not a whole number in decimal digits" $verb "$flag" +5
        # shellcheck disable=SC2086
        refused "$verb $flag 2^64" "$flag" "'18446744073709551616' is out of range" $verb "$flag" 18446744073709551616 ;;
    esac
    case $base in
      UINT)
        # shellcheck disable=SC2086
        refused "$verb $flag -1" "$flag" "'-1' is negative; expected a whole number from 0" $verb "$flag" -1 ;;
      INT)
        # shellcheck disable=SC2086
        refused "$verb $flag 2^63" "$flag" "'9223372036854775808' is out of range" $verb "$flag" 9223372036854775808 ;;
    esac
    case $type in *POSITIVE*)
      # shellcheck disable=SC2086
      refused "$verb $flag 0" "$flag" "'0' must be at least 1" $verb "$flag" 0 ;;
    esac
    checked=$((checked + 1))
  done < <("$EGM" $verb --help | awk '$1 ~ /^--/ && $2 ~ /^(U?INT|FLOAT)([:=]|$)/ {print $1, $2}')
done
# egm train, bench, sweep, submit, analyze, report, plan, paper, runs and serve have such flags (47 today).
[ $checked -ge 40 ] || fail "only $checked number flags found in the verbs' --help"

# The ranges the type cannot say, each refused in its own words.
refused "bench --timed-steps 0" --timed-steps "'0' must be at least 1" bench --timed-steps 0
refused "bench --warmup -1" --warmup "'-1' must be at least 0" bench --warmup -1
refused "train --log-every 0" --log-every "'0' must be at least 1" train --log-every 0 --out o
for verb in train sweep submit; do
  refused "$verb --checkpoint-every -1" --checkpoint-every "'-1' must be at least 0" $verb --checkpoint-every -1
done
refused "sweep --stop-timeout -1" --stop-timeout "'-1' must be from 0 to 604800 seconds" sweep --stop-timeout -1
refused "submit --stop-timeout 1e6" --stop-timeout "'1e6' must be from 0 to 604800 seconds" submit --stop-timeout 1e6

# Decimal, leading zeros and all: 012 is twelve, so the 12 cells of experiments/tiny.json fit
# --max-cells 012 (as octal, ten, they did not).
"$EGM" sweep "$spec" --db "$work/t.sqlite" --dry-run --max-cells 012 >"$logs/out" 2>"$logs/err" ||
  fail "--max-cells 012: exit $?, $(head -c 300 "$logs/err")"
grep -q "= 12 cells" "$logs/out" || fail "--max-cells 012: the dry run did not list 12 cells: $(head -c 300 "$logs/out")"
[ -e "$work/t.sqlite" ] && fail "--max-cells 012: a dry run wrote the database"
"$EGM" sweep "$spec" --db "$work/t.sqlite" --dry-run --max-cells 011 >/dev/null 2>"$logs/err"
rc=$?
if [ $rc != 2 ] || ! grep -q "12 cells, more than --max-cells 11;" "$logs/err"; then
  fail "--max-cells 011 against 12 cells: exit $rc, $(head -c 300 "$logs/err")"
fi

echo "$checked number flags checked over ${#verbs[@]} verbs; $failures failures"
[ $failures = 0 ]
