#!/usr/bin/env bash
# egm bench for every named variant at one preset: one `egm bench --json` line
# per variant, prefixed by "PRESET VARIANT LOAD1" (the 1-minute load average
# before the run), for results/BENCHMARKS.md ("Every variant").
#   tests/bench/all_variants.sh PRESET THREADS [egm bench flags...]
#   e.g. tests/bench/all_variants.sh small 1 --warmup 1 --timed-steps 3 > small.txt
set -euo pipefail
preset=${1:?usage: all_variants.sh PRESET THREADS [egm bench flags...]}
threads=${2:?usage: all_variants.sh PRESET THREADS [egm bench flags...]}
shift 2
EGM=${EGM:-build/bin/egm}
export OPENBLAS_NUM_THREADS=$threads   # torch's thread count does not reach OpenBLAS's own pool
# The variant names, in the order of config/variants (the audit lists every named one).
# (The audit exits 1 because some variants read the future by design; only its list is used.)
variants=$("$EGM" audit causality --all | awk 'NR > 1 {print $1}' || true)
[ -n "$variants" ] || { echo "all_variants.sh: no variants from '$EGM audit causality --all'" >&2; exit 1; }
for v in $variants; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "$preset $v $load $("$EGM" bench --preset "$preset" --variant "$v" --threads "$threads" --json "$@")"
done
