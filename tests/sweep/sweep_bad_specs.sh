#!/usr/bin/env bash
# Bad specs never touch the database: malformed JSON, an unknown key, a wrong
# type, an empty seed list, impossible sizes, an unknown variant and bad ranks
# per variant (data_parallel_by_variant) make
# `egm sweep` exit non-zero with the problem's JSON path, and an existing
# database stays byte-identical (also when egm-coordinator is launched
# directly, and when a changed spec reuses a sweep's name).
#   sweep_bad_specs.sh EGM WORK
source "$(dirname "$0")/lib.sh"

"$EGM" sweep "$SPECS/one_cell.json" --workers 1 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/setup.txt" 2>&1 \
  || { fail "setting up the database failed"; cat "$WORK/setup.txt"; finish; }
before=$(sha256sum "$DB" | cut -d' ' -f1)
runs_before=$(find "$RUNS" | sort | sha256sum)

check_refused() {  # check_refused NAME EXPECTED_MESSAGE SPEC_TEXT
  printf '%s\n' "$3" >"$WORK/$1.json"
  "$EGM" sweep "$WORK/$1.json" --workers 1 --db "$DB" --runs-dir "$RUNS" >"$WORK/$1.out" 2>&1
  local status=$?
  [ "$status" != 0 ] || fail "$1: exit 0"
  expect_in_file "$1 message" "$2" "$WORK/$1.out"
  expect_eq "$1 leaves the database unchanged" "$before" "$(sha256sum "$DB" | cut -d' ' -f1)"
}
check_refused malformed "invalid JSON" '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": [0,}'
check_refused unknown_key '$.sedes: unknown key' \
  '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": [0], "sedes": [1]}'
check_refused wrong_type '$.steps: expected integer' \
  '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": [0], "steps": "ten"}'
check_refused empty_seeds '$.seeds' '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": []}'
check_refused impossible_sizes '$.overrides.model' \
  '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": [0], "overrides": {"model": {"d_model": 30, "n_head": 4}}}'
check_refused unknown_variant '$.variants[0]' '{"name": "one_cell", "preset": "tiny", "variants": ["bsae"], "seeds": [0]}'
# Ranks per variant (data_parallel_by_variant): a name that is not a variant, a batch the ranks do not divide, no ranks.
check_refused dp_unknown_variant "\$.data_parallel_by_variant.bsae: 'bsae' is not a variant of this sweep (base)" \
  '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": [0], "data_parallel_by_variant": {"bsae": 2}}'
check_refused dp_indivisible '$.data_parallel_by_variant.base: train.batch_size (8) must be divisible by data_parallel (3)' \
  '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": [0], "data_parallel_by_variant": {"base": 3}}'
check_refused dp_zero '$.data_parallel_by_variant.base: must be >= 1' \
  '{"name": "one_cell", "preset": "tiny", "variants": ["base"], "seeds": [0], "data_parallel_by_variant": {"base": 0}}'

# The coordinator itself refuses too (a launch that skips `egm sweep`), and sends its worker home.
mpirun --oversubscribe -np 1 "$BIN_DIR/egm-coordinator" "$WORK/unknown_key.json" --db "$DB" --runs-dir "$RUNS" \
  --view none : -np 1 "$BIN_DIR/egm-worker" --data "$EGM_DATA" >"$WORK/direct.out" 2>&1
[ $? != 0 ] || fail "egm-coordinator with a bad spec: exit 0"
expect_in_file "egm-coordinator message" '$.sedes: unknown key' "$WORK/direct.out"
expect_eq "egm-coordinator leaves the database unchanged" "$before" "$(sha256sum "$DB" | cut -d' ' -f1)"

# Same name, changed content: refused without --new-sweep, nothing written.
sed 's/"steps": 10/"steps": 12/' "$SPECS/one_cell.json" >"$WORK/changed.json"
"$EGM" sweep "$WORK/changed.json" --workers 1 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/changed.out" 2>&1
[ $? != 0 ] || fail "changed spec: exit 0"
expect_in_file "changed spec message" "--new-sweep" "$WORK/changed.out"
expect_eq "changed spec leaves the database unchanged" "$before" "$(sha256sum "$DB" | cut -d' ' -f1)"
expect_eq "run folders unchanged" "$runs_before" "$(find "$RUNS" | sort | sha256sum)"
finish
