#!/usr/bin/env bash
# egm plan end to end on the analysis fixture (make_fixture.cpp): the
# hand-worked plan, the too-small pilot said plainly, refusals (one line,
# exit 2), the database untouched, and no LibTorch loaded.
#   cli_plan_test.sh EGM_BINARY FIXTURE_BINARY WORK_DIR
set -u
# shellcheck source=../support/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"
fixture_setup "$@"
DB=$WORK/main.sqlite
before=$(sha256sum "$DB" | cut -d' ' -f1)

# Per-seed contrasts (fixture.h): delta(ega) = 0.08, 0.09, 0.07 (sd 0.01); delta(mope) = -0.03, -0.03, 0
# (sd 0.01732); delta(ega_mope) = 0.11, 0.11, 0.14 (sd 0.01732); I = 0.06, 0.05, 0.07 (sd 0.01).
# Four claims, Holm: each at 0.0125. +-0.01 with sd 0.01: t_{1-0.00625, 9} / sqrt(10) = 0.9986 <= 1 -> 10;
# with sd 0.01732: 23 (scipy). The largest, 23, for 4 variants beside 3 done seeds: 80 cells to add.
run "plan" 0 "$EGM" plan fixture --db "$DB" --half-width 0.01
expect_in "plan" "4 claims, alpha 0.05 family-wise (holm: each claim planned at 0.0125)" "$out"
expect_in "plan" "seeds needed: 23 per variant" "$out"
expect_in "plan" "cells: 80 to add (base 20, ega 20, mope 20, ega_mope 20) beside the 12 these variants have done" "$out"
expect_in "plan" "compute implied: 80 runs" "$out"
grep -E "^  delta\(ega\) +3 +\+0\.0800 +0\.0100 .* 10 " <<<"$out" >/dev/null || fail "plan: delta(ega) row: $out"

# One claim: the whole alpha; by name or delta(NAME).
run "plan one claim" 0 "$EGM" plan fixture --db "$DB" --half-width 0.01 --claims ega
expect_in "plan one claim" "1 claim, alpha 0.05" "$out"
# t_{0.975, 6} / sqrt(7) = 0.925 <= 1, t_{0.975, 5} / sqrt(6) = 1.050: 7 seeds, 4 more each.
expect_in "plan one claim" "seeds needed: 7 per variant" "$out"
expect_in "plan one claim" "cells: 8 to add (base 4, ega 4) beside the 6 these variants have done" "$out"

run "plan pilot too small" 0 "$EGM" plan one_seed --db "$DB" --effect 0.02
expect_in "plan pilot too small" "the pilot has 1 seed, fewer than 3 cannot estimate the variance" "$out"
expect_in "plan pilot too small" "seeds needed: no claim has a pilot to plan from" "$out"

for bad in "--half-width 0" "--half-width -1" "--effect 0.02 --alpha 0" "--effect 0.02 --alpha 0.5" \
           "--effect 0.02 --power 1" "--effect 0.02 --claims nope" "--effect 0.02 --adjust sidak" \
           "--effect 0.02 --format csv" ""; do
  # shellcheck disable=SC2086
  run "plan refuses '$bad'" 2 "$EGM" plan fixture --db "$DB" $bad
  expect_eq "plan refuses '$bad': exit" 2 "$status"
  expect_eq "plan refuses '$bad': lines" 1 "$(wc -l <<<"$err")"
  expect_eq "plan refuses '$bad': stdout" "" "$out"
done
run "plan unknown sweep" 2 "$EGM" plan nope --db "$DB" --effect 0.02
expect_in "plan unknown sweep" "no sweep" "$err"

# No LibTorch library loaded (src/cli/README.md).
LD_DEBUG=libs LD_DEBUG_OUTPUT="$WORK/ld" "$EGM" plan fixture --db "$DB" --effect 0.02 >/dev/null 2>&1 ||
  fail "plan under LD_DEBUG failed"
if cat "$WORK"/ld.* | grep -Eq "calling init: .*lib(torch|torch_cpu|c10)[._]"; then fail "egm plan loaded LibTorch"; fi

expect_eq "database unchanged" "$before" "$(sha256sum "$DB" | cut -d' ' -f1)"
finish
