#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in their own build folder
# and runs each for a bounded time; exit 1 when any finds a crash.
#   tests/fuzz/run.sh [TARGET...]          default: spec run_config query_gate stored
# Environment:
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_BUILD    build folder (default build-fuzz beside the repository's build/)
#   FUZZ_JOBS     compile jobs (default 2)
#   FUZZ_MAX_LEN  the longest input libFuzzer makes (default 8192; longer seeds are cut)
# Only torch-free libraries are built (util, config, db, spec); the configure
# step still finds LibTorch (the top-level CMakeLists requires it) but compiles none.
# New inputs go to $FUZZ_BUILD/corpus/<target> (seeded from tests/fuzz/corpus/<target>);
# a crash leaves its input in $FUZZ_BUILD/crashes/<target>/: add it to the committed
# corpus once fixed, so the replay test (ctest -L fuzz) keeps it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-2}
max_len=${FUZZ_MAX_LEN:-8192}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(spec run_config query_gate stored)
cxx=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
[ -n "$cxx" ] || { echo "run.sh: clang++ not found (apt-get install clang-14)" >&2; exit 2; }

mkdir -p "$build"
# The configure step finds the pinned LibTorch and Arrow as setup.sh does (scripts/torch_env.sh, arrow_env.sh).
# shellcheck source=../../scripts/torch_env.sh
source "$root/scripts/torch_env.sh" >/dev/null
# shellcheck source=../../scripts/arrow_env.sh
source "$root/scripts/arrow_env.sh" >/dev/null
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DEGM_FUZZ=ON -DEGM_TCMALLOC=OFF \
  "${EGM_TORCH_CMAKE_ARGS[@]}" "${EGM_ARROW_CMAKE_ARGS[@]}" > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log" >&2; exit 2; }
cmake --build "$build" -j "$jobs" --target $(printf 'egm_fuzz_%s ' "${targets[@]}")

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t crashes=$build/crashes/$t
  mkdir -p "$corpus" "$crashes"
  echo "== fuzz $t for ${seconds}s"
  if "$build/tests/fuzz/egm_fuzz_$t" "$corpus" "$here/corpus/$t" -max_total_time="$seconds" -max_len="$max_len" \
       -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" 2> "$build/fuzz_$t.log"; then
    grep -E "^stat::number_of_executed_units|^Done" "$build/fuzz_$t.log" || true
  else
    tail -40 "$build/fuzz_$t.log"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FUZZ FAILED: ${failed[*]} (inputs in $build/crashes/)" >&2
  exit 1
fi
echo "fuzz: ${targets[*]}: no crash in ${seconds}s each"
