#!/usr/bin/env bash
# The sweep's corpus and its size before it starts (issue 29), on the real binaries:
#  - `egm sweep --dry-run` lists the cells with memory and compute per run and
#    writes nothing; `egm sweep` prints the cell count;
#  - a 1000 x 1000 grid is refused by `egm sweep` and `egm submit` in one line
#    with the product of its axes, fast, before anything is written, and runs
#    past the refusal with --max-cells (here only its count is checked: --dry-run
#    is not run on a million cells);
#  - the corpus is stored at the first start; a resume and an --extend with
#    another corpus are refused in one line naming both paths and hashes, the
#    database unchanged; --new-sweep keeps them apart; egm analyze shows the
#    hash; egm train refuses a run folder trained on another corpus.
#   sweep_corpus_size.sh EGM WORK
source "$(dirname "$0")/lib.sh"
SPEC=$SPECS/one_cell.json
OTHER=$WORK/other.txt
head -c 400000 "$EGM_DATA" >"$OTHER"  # a truncated copy: another corpus
sha_data=$(sha256sum "$EGM_DATA" | cut -d' ' -f1)
sha_other=$(sha256sum "$OTHER" | cut -d' ' -f1)

# ---- size -------------------------------------------------------------------------
run "dry run" 0 "$EGM" sweep "$EXPERIMENTS/tiny.json" --dry-run --db "$WORK/dry.sqlite" --runs-dir "$WORK/dry_runs"
echo "$out" | sed 's/^/    | /'
expect_in "dry run: the product" "4 variants x 3 seeds = 12 cells (dry run: nothing trained, nothing written)" "$out"
expect_eq "dry run: one line per cell" 12 "$(grep -cE '^  (base|ega|mope|ega_mope)-s[0-9]+ ' <<<"$out")"
expect_in "dry run: memory per run" " MB " "$out"
expect_in "dry run: compute" "FLOP of training over 12 cells" "$out"
expect_in "dry run: no wall time without done cells" "wall time: no done cell of these configurations in $WORK/dry.sqlite" "$out"
[ -e "$WORK/dry.sqlite" ] && fail "dry run created the database"
[ -e "$WORK/dry_runs" ] && fail "dry run created the runs folder"

t0=$SECONDS
run "a million cells" 2 "$EGM" sweep "$SPEC" --grid "train.lr=range(1,1001)" --grid "train.weight_decay=range(1,1001)" \
  --db "$WORK/big.sqlite" --runs-dir "$WORK/big_runs"
expect_eq "a million cells: exit" 2 "$status"
expect_in "a million cells: the product" "1 variant x 1 seed x 1000 train.lr x 1000 train.weight_decay = 1000000 cells" "$err"
expect_in "a million cells: the way on" "--max-cells 1000000" "$err"
expect_eq "a million cells: one line" 1 "$(grep -c . <<<"$err")"
[ $((SECONDS - t0)) -le 30 ] || fail "the refusal took $((SECONDS - t0)) s: the cells were built first"
[ -e "$WORK/big.sqlite" ] && fail "the refused sweep created the database"
run "a million cells, submitted" 2 "$EGM" submit "$SPEC" --slurm --dry-run --grid "train.lr=range(1,1001)" \
  --grid "train.weight_decay=range(1,1001)" --db "$WORK/big.sqlite"
expect_in "a million cells, submitted: the product" "= 1000000 cells, more than --max-cells 10000" "$err"
# Above the default with --max-cells: accepted (the count only; nothing runs).
run "raised limit" 0 "$EGM" submit "$SPEC" --slurm --dry-run --grid "train.lr=range(1,121)" \
  --grid "train.weight_decay=range(1,101)" --max-cells 20000 --db "$WORK/big.sqlite"
expect_in "raised limit: the count" "= 12000 cells" "$err"

# ---- corpus -----------------------------------------------------------------------
run "first start" 0 "$EGM" sweep "$SPEC" --workers 1 --db "$DB" --runs-dir "$RUNS" --view plain --data "$EGM_DATA"
expect_in "first start: the cell count" "sweep one_cell: 1 variant x 1 seed = 1 cell" "$out"
expect_eq "corpus stored" "$sha_data|$(stat -c %s "$EGM_DATA")|$(realpath -s "$EGM_DATA")" \
  "$(qpoll "$DB" "SELECT corpus_sha256 || '|' || corpus_bytes || '|' || corpus_path FROM sweeps WHERE name = 'one_cell'")"
cp "$DB" "$WORK/before.sqlite"
run "resume on another corpus" 2 "$EGM" sweep "$SPEC" --workers 1 --db "$DB" --runs-dir "$RUNS" --view plain --data "$OTHER"
expect_in "resume on another corpus: its hash" "$sha_other" "$err"
expect_in "resume on another corpus: the sweep's hash" "$sha_data" "$err"
expect_in "resume on another corpus: both paths" "$OTHER" "$err"
expect_in "resume on another corpus: both paths" "$(realpath -s "$EGM_DATA")" "$err"
expect_eq "resume on another corpus: one line" 1 "$(grep -c . <<<"$err")"
cmp -s "$DB" "$WORK/before.sqlite" || fail "the refused resume changed the database"
sed 's/"seeds": \[0\]/"seeds": [0, 1]/' "$SPEC" >"$WORK/one_cell_more_seeds.json"
run "extend on another corpus" 2 "$EGM" sweep "$WORK/one_cell_more_seeds.json" --extend --workers 1 --db "$DB" \
  --runs-dir "$RUNS" --view plain --data "$OTHER"
expect_in "extend on another corpus: refused" "$sha_other" "$err"
expect_eq "extend on another corpus: the spec unchanged" 1 "$(q "$DB" "SELECT count(*) FROM cells")"
expect_eq "extend on another corpus: no sweep_extended event" 0 \
  "$(q "$DB" "SELECT count(*) FROM events WHERE kind = 'sweep_extended'")"
run "analyze shows the corpus" 0 "$EGM" analyze one_cell --db "$DB"
expect_in "analyze shows the corpus" "corpus: sha256 $sha_data" "$out"
run "new sweep on another corpus" 0 "$EGM" sweep "$SPEC" --new-sweep --workers 1 --db "$DB" --runs-dir "$RUNS" \
  --view plain --data "$OTHER"
expect_eq "--new-sweep: each sweep its own corpus" "one_cell=$sha_other;one_cell@1=$sha_data;" \
  "$(q "$DB" "SELECT group_concat(name || '=' || corpus_sha256 || ';', '') FROM (SELECT * FROM sweeps ORDER BY name)")"

# egm train on a run folder trained on another corpus.
"$EGM" query "SELECT config_json FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'one_cell'" --db "$DB" \
  --format json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["config_json"])' >"$WORK/config.json"
folder=$(ls -d "$RUNS"/one_cell/base-s0-*)
[ -f "$folder/corpus.json" ] || fail "the run folder has no corpus record"
run "train on another corpus" 2 "$EGM" train --config "$WORK/config.json" --out "$folder" --data "$EGM_DATA" -q
expect_in "train on another corpus: both hashes" "$sha_other" "$err"
expect_in "train on another corpus: both hashes" "$sha_data" "$err"
run "train on its corpus" 0 "$EGM" train --config "$WORK/config.json" --out "$folder" --data "$OTHER" -q
finish
