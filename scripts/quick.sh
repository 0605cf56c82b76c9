#!/usr/bin/env bash
# Sets everything up (apt + build) and runs the main job: the paper's 2x2
# (base, ega, mope, ega_mope) x 3 seeds at CPU scale with 2 workers, which
# ends by printing the 2x2 table and its verdict once; then one line on where
# the full analysis is. Resumes if interrupted; --new-sweep restarts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh egm egm-coordinator egm-worker  # not the test suite
source scripts/blas_env.sh
if [ -z "${EGM_DATA:-}" ] && [ -f ../shared/data/tinyshakespeare/input.txt ]; then
  EGM_DATA=$(realpath ../shared/data/tinyshakespeare/input.txt)
fi
export EGM_DATA=${EGM_DATA:-$PWD/data/tinyshakespeare/input.txt}
[ -f "$EGM_DATA" ] || build/bin/egm data fetch --dest "$EGM_DATA"
# The sweep ends with the 2x2 table and its verdict; the rest of the analysis is one command away.
build/bin/egm sweep experiments/quick.json --workers "${EGM_WORKERS:-2}" "$@"
echo "the full analysis (paired tests, Holm, the learned MoPE and EGA parameters): build/bin/egm analyze quick; as files with plots: build/bin/egm report quick --out report/"
