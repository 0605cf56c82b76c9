#!/usr/bin/env bash
# Sets everything up (apt + build, via setup.sh) and runs every test suite.
#   scripts/test.sh                 all tests
#   scripts/test.sh -L unit         only one label (unit, reference, cli, sweep, slurm, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/blas_env.sh
if [ -z "${EGM_DATA:-}" ] && [ -f ../shared/data/tinyshakespeare/input.txt ]; then
  EGM_DATA=$(realpath ../shared/data/tinyshakespeare/input.txt)
fi
export EGM_DATA=${EGM_DATA:-$PWD/data/tinyshakespeare/input.txt}
if [ ! -f "$EGM_DATA" ]; then
  echo "egm test: no corpus at $EGM_DATA; fetching TinyShakespeare (sha256 checked)"
  build/bin/egm data fetch --dest "$EGM_DATA"
fi
ctest --test-dir "${EGM_BUILD_DIR:-build}" --output-on-failure -j "${EGM_TEST_JOBS:-2}" "$@"
