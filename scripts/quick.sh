#!/usr/bin/env bash
# Sets everything up (apt + build) and runs the main job: the paper's 2x2
# (base, ega, mope, ega_mope) x 3 seeds at CPU scale with 2 workers, then
# prints the superadditivity table. Resumes if interrupted; --new-sweep restarts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh egm egm-coordinator egm-worker  # not the test suite
source scripts/blas_env.sh
if [ -z "${EGM_DATA:-}" ] && [ -f ../shared/data/tinyshakespeare/input.txt ]; then
  EGM_DATA=$(realpath ../shared/data/tinyshakespeare/input.txt)
fi
export EGM_DATA=${EGM_DATA:-$PWD/data/tinyshakespeare/input.txt}
[ -f "$EGM_DATA" ] || build/bin/egm data fetch --dest "$EGM_DATA"
build/bin/egm sweep experiments/quick.json --workers "${EGM_WORKERS:-2}" "$@"
build/bin/egm analyze quick
