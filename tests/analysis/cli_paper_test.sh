#!/usr/bin/env bash
# egm paper end to end on the analysis fixture (make_fixture.cpp): the four
# formats (text, markdown, csv, json) with the verdicts worked out in
# test_scorecard.cpp, the claims the fixture lacks as "not measured" (no
# error), a claims file of one's own, the refusals (unknown format, a claims
# file with an unknown variant or a malformed number: one line, exit 2,
# nothing on stdout), the README's command, no LibTorch loaded, and the
# database untouched.
#   cli_paper_test.sh EGM_BINARY FIXTURE_BINARY WORK_DIR
set -u
# shellcheck source=../support/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"
fixture_setup "$@"
DB=$WORK/main.sqlite
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
before=$(sha256sum "$DB" | cut -d' ' -f1)

run "text" 0 "$EGM" paper --db "$DB"
expect_in "text" "the paper's claims, measured" "$out"
expect_in "text" "claims: embedded experiments/paper_claims.json (20 claims" "$out"
# A block per claim: what it says, the published number, a line per sweep that measured it.
grep -A2 -E "^ega: EGA with the learned table beats the baseline$" <<<"$out" >"$WORK/ega.txt"
expect_eq "text: the ega block" "ega: EGA with the learned table beats the baseline
  published: 1.3821 (delta +0.0920)
  fixture (tiny: 2 layers, 2 heads, d 32, T 32, B 8, 60 steps), 3 seeds: val 1.4200 ± 0.0657 (3); delta +0.0800 [+0.0552, +0.1048] -> reproduced in sign" "$(cat "$WORK/ega.txt")"
grep -A3 -E "^sincos: " <<<"$out" | grep -q "^  not measured: no sweep of this database has done cells of every one of base, sincos$" ||
  fail "text: sincos not measured: $out"
grep -A4 -E "^mope_boundary: " <<<"$out" | grep -qE "^  fixture .*, 6 runs: .* -> contradicted$" || fail "text: mope_boundary: $out"

run "markdown" 0 "$EGM" paper --db "$DB" --format markdown
expect_eq "markdown: first line" "# The paper's claims, measured" "$(head -1 <<<"$out")"
expect_in "markdown" "| claim | published | sweep | scale | seeds | estimate | sequence | verdict | autoregressive | note |" "$out"
expect_in "markdown" "| interaction: EGA and MoPE are superadditive" "$out"

run "csv" 0 "$EGM" paper --db "$DB" --format csv
printf '%s\n' "$out" >"$WORK/paper.csv"
python3 - "$WORK/paper.csv" <<'PY' || fail "csv: rows (above)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {(r["claim"], r["sweep"]): r for r in rows}
ega = by[("ega", "fixture")]
assert abs(float(ega["estimate"]) - 0.08) < 1e-12, ega
assert ega["verdict"] == "reproduced in sign" and ega["preset"] == "tiny" and ega["seeds"] == "3", ega
assert abs(float(by[("interaction", "fixture")]["estimate"]) - 0.06) < 1e-12
assert by[("sincos", "")]["verdict"] == "not measured"
assert by[("base", "fixture")]["verdict"] == "reference"
assert len({r["claim"] for r in rows}) == 20, len(rows)
PY

run "json" 0 "$EGM" paper --db "$DB" --format json
printf '%s\n' "$out" >"$WORK/paper.json"
python3 - "$WORK/paper.json" <<'PY' || fail "json: rows (above)"
import json, sys
j = json.load(open(sys.argv[1]))
rows = {(r["claim"], r["sweep"]): r for r in j["rows"]}
ega = rows[("ega", "fixture")]
assert ega["verdict"] == "reproduced in sign" and ega["estimate"]["n"] == 3, ega
assert ega["autoregressive"]["estimate"] is None  # the fixture has no autoregressive loss
assert rows[("mope_four_clusters", "fixture")]["verdict"] == "reproduced"
assert rows[("rope", None)]["verdict"] == "not measured"
assert j["level"] == 0.95 and j["metric"] == "final_val"
PY

# A claims file of one's own: only its claims.
cat >"$WORK/mine.json" <<'JSON'
{"source": "mine", "claims": [
  {"id": "mine", "kind": "delta", "variant": "mope", "delta": -0.01, "claim": "MoPE is a little worse"}]}
JSON
run "own claims" 0 "$EGM" paper --db "$DB" --claims "$WORK/mine.json" --format csv
expect_eq "own claims: header and a row per sweep" 3 "$(wc -l <<<"$out")"
expect_in "own claims" "mine,delta,mope,base,,-0.01,1,fixture," "$out"
expect_in "own claims" "mine,delta,mope,base,,-0.01,1,one_seed," "$out"

# Refusals: one line, exit 2, nothing on stdout.
refused() {  # refused NAME NEEDLE ARGS...
  local name=$1 needle=$2
  shift 2
  run "$name" 2 "$EGM" paper --db "$DB" "$@"
  expect_eq "$name: exit" 2 "$status"
  expect_eq "$name: lines" 1 "$(wc -l <<<"$err")"
  expect_eq "$name: stdout" "" "$out"
  expect_in "$name" "$needle" "$err"
}
refused "unknown format" "unknown format 'xml'; valid: text, markdown, csv, json" --format xml
sed 's/"variant": "mope"/"variant": "mopee"/' "$WORK/mine.json" >"$WORK/bad_variant.json"
refused "unknown variant" "$WORK/bad_variant.json: claims[0] (id 'mine'): 'variant': unknown variant 'mopee'" \
  --claims "$WORK/bad_variant.json"
sed 's/"delta": -0.01/"delta": "-0.01"/' "$WORK/mine.json" >"$WORK/bad_number.json"
refused "malformed number" "$WORK/bad_number.json: claims[0] (id 'mine'): 'delta' must be a number, got string" \
  --claims "$WORK/bad_number.json"
refused "missing claims file" "$WORK/none.json" --claims "$WORK/none.json"
refused "unknown sweep" "no sweep" --sweep nope

# A database whose sweep cannot be analysed (ega-s1 ran on 2 ranks): rows say why, exit 0.
run "mixed setups" 0 "$EGM" paper --db "$WORK/mixed.sqlite"
expect_in "mixed setups" "not analysed" "$out"

# The READMEs' command (the top README and src/analysis/README.md), run as written against the fixture.
for readme in README.md src/analysis/README.md; do
  line=$(grep -m1 -E '^build/bin/egm paper ' "$ROOT/$readme")
  [ -n "$line" ] || fail "$readme shows no egm paper command"
  cmd=${line%%#*}
  cmd=${cmd//build\/bin\/egm/$EGM}
  cmd=${cmd//runs\/egm.sqlite/$DB}
  run "$readme command" 0 env EGM_DB="$DB" bash -c "$cmd"  # the default database is the fixture
  expect_in "$readme command" "ega: EGA with the learned table beats the baseline" "$out"
done
# Some sweeps only.
run "one sweep" 0 "$EGM" paper --db "$DB" --sweep one_seed --format csv
expect_in "one sweep" "ega,value,ega,base,1.3821,0.092,1,one_seed," "$out"
grep -q ",fixture," <<<"$out" && fail "one sweep: the other sweep's rows are there"

# No LibTorch library loaded (src/cli/README.md).
LD_DEBUG=libs LD_DEBUG_OUTPUT="$WORK/ld" "$EGM" paper --db "$DB" >/dev/null 2>&1 || fail "paper under LD_DEBUG failed"
if cat "$WORK"/ld.* | grep -Eq "calling init: .*lib(torch|torch_cpu|c10)[._]"; then fail "egm paper loaded LibTorch"; fi

expect_eq "database unchanged" "$before" "$(sha256sum "$DB" | cut -d' ' -f1)"
finish
