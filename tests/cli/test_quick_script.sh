#!/usr/bin/env bash
# scripts/quick.sh as written, in a copy of the checkout whose set-up is done
# (scripts/setup.sh and blas_env.sh stubbed: the build is there) and whose
# experiments/quick.json is a tiny 2x2 of the same name: it prints the 2x2
# table once, its verdict once, and ends with one line saying where the full
# analysis is; run again (nothing left to train) it prints the same.
#   test_quick_script.sh EGM_BINARY SOURCE_DIR WORK_DIR
set -u
EGM=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK/checkout/scripts" "$WORK/checkout/experiments" "$WORK/checkout/build"
# shellcheck source=../support/checks.sh
source "$SRC/tests/support/checks.sh"
[ -f "${EGM_DATA:-}" ] || { echo "SKIP: no corpus (set EGM_DATA)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

co=$WORK/checkout
cp "$SRC/scripts/quick.sh" "$co/scripts/quick.sh"
printf '#!/usr/bin/env bash\n' >"$co/scripts/setup.sh"
chmod +x "$co/scripts/setup.sh"
: >"$co/scripts/blas_env.sh"
ln -s "$(dirname "$EGM")" "$co/build/bin"
cat >"$co/experiments/quick.json" <<'JSON'
{"name": "quick", "description": "quick.sh's test: the 2x2 at test scale", "preset": "tiny",
 "variants": ["base", "ega", "mope", "ega_mope"], "seeds": [0, 1], "steps": 20, "eval_interval": 10,
 "overrides": {"train": {"full_val_eval": false, "ar_eval_windows": 0}},
 "baseline": "base", "factors": {"a": "ega", "b": "mope", "ab": "ega_mope", "base": "base"}}
JSON

for pass in first again; do
  (cd "$co" && EGM_DB="" scripts/quick.sh --view plain) >"$WORK/$pass.txt" 2>&1
  expect_eq "quick.sh ($pass): exit" 0 $?
  expect_eq "quick.sh ($pass): the 2x2 table, once" 1 "$(grep -c "Student-t intervals over seeds" "$WORK/$pass.txt")"
  expect_eq "quick.sh ($pass): the verdict, once" 1 "$(grep -c "verdict: " "$WORK/$pass.txt")"
  last=$(tail -n 1 "$WORK/$pass.txt")
  expect_in "quick.sh ($pass): the last line says where the full analysis is" "egm analyze quick" "$last"
  # The full analysis's own sections are not printed.
  grep -q "Paired deltas\|Wilcoxon\|Notes$" "$WORK/$pass.txt" && fail "quick.sh ($pass) printed the full analysis"
  [ "$failures" = 0 ] || sed 's/^/    | /' "$WORK/$pass.txt" | tail -n 40
done
finish
