#!/usr/bin/env bash
# egm analyze and egm report end to end on the databases make_fixture writes:
# output, formats, exit statuses, refusals, and that nothing changes the file.
#   cli_test.sh EGM_BINARY FIXTURE_BINARY WORK_DIR
set -u
# shellcheck source=../support/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"
fixture_setup "$@"
DB=$WORK/main.sqlite
MIXED=$WORK/mixed.sqlite
PY=/usr/bin/python3

before=$(sha256sum "$DB" | cut -d' ' -f1)

run "analyze" 0 "$EGM" analyze fixture --db "$DB"
expect_in "analyze" "sweep fixture" "$out"
expect_in "analyze" "base: 1.5000 ± 0.0497 (3)" "$out"
expect_in "analyze" "interaction I = delta(ega_mope) - delta(ega) - delta(mope) = +0.0600" "$out"
expect_in "analyze" "verdict: superadditive" "$out"
expect_in "analyze" "published I = +0.0589" "$out"
expect_in "analyze" "MoPE (omega, sigma) per run" "$out"
expect_in "analyze" "compute: this table:" "$out"
expect_in "analyze" "anytime-valid confidence sequences (t-mixture (Gaussian mixture of the scale-invariant t likelihood ratio; Wang & Ramdas 2023), alpha=0.0125" "$out"
expect_in "analyze" "fixed-n 95% t interval [+0.0352, +0.0848]: valid only if the seed count was fixed in advance" "$out"
expect_in "analyze: the corpus line" "corpus: not recorded" "$out"

run "analyze csv" 0 "$EGM" analyze fixture --db "$DB" --format csv
expect_in "analyze csv" "variant,attention,position,n,mean,sd,ci_low,ci_high,delta" "$out"
expect_in "analyze csv" "base,standard,learned,3,1.5," "$out"

run "analyze json" 0 "$EGM" analyze fixture --db "$DB" --format json --no-params
echo "$out" > "$WORK/analysis.json"
verdict=$($PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['interaction']['verdict'], round(d['interaction']['estimate'], 10))" "$WORK/analysis.json") \
  || fail "analyze json: not JSON"
[ "$verdict" = "superadditive 0.06" ] || fail "analyze json: got '$verdict'"

run "analyze markdown" 0 "$EGM" analyze fixture --db "$DB" --format markdown --no-params
expect_in "analyze markdown" "| ega_mope | ega | mope | 1.3800 ± 0.0248 (3) |" "$out"

run "analyze best_val" 0 "$EGM" analyze fixture --db "$DB" --metric best_val --no-params
expect_in "analyze best_val" "lowest val loss" "$out"

run "one seed" 0 "$EGM" analyze one_seed --db "$DB" --no-params
expect_in "one seed" "no interval exists" "$out"
expect_in "one seed" "no verdict" "$out"

run "bad metric" 1 "$EGM" analyze fixture --db "$DB" --metric val
expect_in "bad metric" "unknown metric 'val'" "$err"
run "bad sweep" 1 "$EGM" analyze nope --db "$DB"
expect_in "bad sweep" "no sweep named 'nope'" "$err"
run "bad factors" 1 "$EGM" analyze fixture --db "$DB" --factors ega,mope
expect_in "bad factors" "a,b,ab,base" "$err"

# --cluster-runs: a sample of each variant's MoPE runs is clustered, and the output says so.
run "cluster runs" 0 "$EGM" analyze fixture --db "$DB" --cluster-runs 1
expect_in "cluster runs" "ega_mope: k-means on 1 of its 3 MoPE runs" "$out"
run "cluster runs all" 0 "$EGM" analyze fixture --db "$DB" --cluster-runs all --format json
case "$out" in *"k-means on"*) fail "cluster runs all: a sample note although every run was clustered" ;; esac
expect_in "cluster runs all" '"cluster_runs_per_variant": "all"' "$out"
run "bad cluster runs" 1 "$EGM" analyze fixture --db "$DB" --cluster-runs 0
[ "$status" = 2 ] || fail "bad cluster runs: exit $status, expected 2"
expect_in "bad cluster runs" "--cluster-runs: '0' is neither 'all' nor a positive number" "$err"
run "report bad cluster runs" 1 "$EGM" report fixture --db "$DB" --out "$WORK/report3" --cluster-runs some
[ -e "$WORK/report3" ] && fail "report bad cluster runs: wrote $WORK/report3"

run "mixed refused" 1 "$EGM" analyze fixture --db "$MIXED"
expect_in "mixed refused" "--allow-mixed-world-size" "$err"
expect_in "mixed refused" "ega-s1: world 2 / mpi" "$err"
run "mixed allowed" 0 "$EGM" analyze fixture --db "$MIXED" --allow-mixed-world-size --no-params
expect_in "mixed allowed" "WARNING" "$out"

run "report" 0 "$EGM" report fixture --db "$DB" --out "$WORK/report"
expect_in "report" "verdict: superadditive" "$out"
expect_in "report" "compute: this table:" "$out"
grep -q "^scope,name,runs,running,core_hours,gpu_hours,gpu$" "$WORK/report/compute.csv" || fail "report: compute.csv"
grep -q "compute: this table:" "$WORK/report/compute.md" || fail "report: compute.md"
for f in index.md main.md main.tex main.csv analysis.json plots/interaction.gp; do
  [ -s "$WORK/report/$f" ] || fail "report: $f missing or empty"
done
if command -v gnuplot >/dev/null; then
  for f in val_curves omega_sigma interaction; do
    [ -s "$WORK/report/plots/$f.png" ] || fail "report: plots/$f.png missing"
    [ -s "$WORK/report/plots/$f.svg" ] || fail "report: plots/$f.svg missing"
  done
fi
run "report without gnuplot" 0 "$EGM" report fixture --db "$DB" --out "$WORK/report2" --gnuplot "$WORK/none/gnuplot"
expect_in "report without gnuplot" "gnuplot not found" "$err"
[ -s "$WORK/report2/main.tex" ] || fail "report without gnuplot: no tables"
run "report needs --out" 1 "$EGM" report fixture --db "$DB"

after=$(sha256sum "$DB" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "the database changed"

finish
