#!/usr/bin/env bash
# Installs every Debian package egm needs (idempotent; apt as root), the pinned
# LibTorch and Apache Arrow from PyPI (scripts/torch_env.sh, scripts/arrow_env.sh:
# once per machine, outside the checkout) and builds the project into build/.
# Both README commands start here.
#   scripts/setup.sh                  install + configure + build everything
#   scripts/setup.sh egm egm-worker   ... build only these targets (and skip the
#                                     packages only the tests need)
#   EGM_SKIP_APT=1 scripts/setup.sh   build only (packages already present)
set -euo pipefail
cd "$(dirname "$0")/.."

# What building and running egm needs.
PACKAGES=(
  build-essential clang cmake ninja-build ccache git pkg-config
  python3-venv libtcmalloc-minimal4
  nlohmann-json3-dev libfmt-dev libsqlite3-dev sqlite3
  libopenmpi-dev openmpi-bin libcli11-dev libgtest-dev libgmock-dev
  libvalijson-dev libboost-math-dev libssl-dev libcurl4-openssl-dev
  gnuplot-nox libcpp-httplib-dev libprotobuf-dev protobuf-compiler
)
# libcpp-httplib-dev: egm serve. libprotobuf-dev, protobuf-compiler: egm export's
# TensorBoard event files (src/export/tensorboard_event.proto). What only the test
# suite needs: a local Slurm (tests/slurm, tests/cluster), network namespaces
# (tests/cluster), a headless browser (tests/serve) and debootstrap (the bare root
# in which tests/gpu rehearses the GPU machine; scripts/rehearsal_root.sh).
# Installed when setup.sh builds everything (scripts/test.sh) or with
# EGM_TEST_PACKAGES=1; a build of named targets (scripts/quick.sh) skips them.
TEST_PACKAGES=(slurm-wlm munge iproute2 chromium chromium-driver debootstrap)
if [ $# -eq 0 ] || [ "${EGM_TEST_PACKAGES:-0}" = 1 ]; then
  PACKAGES+=("${TEST_PACKAGES[@]}")
  # ... and the pinned PyPI packages the export and notebook tests read with (arrow_env.sh).
  EGM_ARROW_TEST_PACKAGES=1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if [ "${EGM_SKIP_APT:-0}" != 1 ] && [ ${#missing[@]} -gt 0 ]; then
  echo "egm setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

source scripts/torch_env.sh
source scripts/arrow_env.sh

BUILD_DIR=${EGM_BUILD_DIR:-build}
BUILD_TYPE=${EGM_BUILD_TYPE:-Release}  # -g costs ~55% more compile time per LibTorch unit
# Clang by default: from its precompiled <torch/torch.h> a LibTorch unit costs
# ~6 CPU-s instead of GCC's ~16, and the header itself ~20 s instead of ~90
# (results/BENCHMARKS.md, "Compile cost"). CXX=g++ scripts/setup.sh builds with GCC;
# either way the choice is made when build/ is first configured.
CXX_COMPILER=${CXX:-clang++}
# Outside the checkout, like the torch install: fresh clones (and CI) on this
# machine reuse the compiled units (paths inside the checkout are hashed relative
# to it, so a clone elsewhere hits the same entries).
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/egm/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# A build folder configured against another LibTorch (an older checkout's
# Debian 1.13 build, another EGM_TORCH) starts over: CMake caches the library paths.
if [ -f "$BUILD_DIR/CMakeCache.txt" ] && [ "$EGM_TORCH" = pypi ] &&
   ! grep -q "^Torch_DIR:PATH=$EGM_TORCH_HOME/" "$BUILD_DIR/CMakeCache.txt"; then
  echo "egm setup: $BUILD_DIR was configured against another LibTorch; configuring it anew"
  rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DCMAKE_CXX_COMPILER="$CXX_COMPILER" \
    "${EGM_TORCH_CMAKE_ARGS[@]}" "${EGM_ARROW_CMAKE_ARGS[@]}" ${EGM_CMAKE_ARGS:-}
elif ! grep -qxF -- "${EGM_ARROW_CMAKE_ARGS[0]/#-D/}" <(sed 's/:[A-Z]*=/=/' "$BUILD_DIR/CMakeCache.txt"); then
  # A build folder configured before Arrow was a dependency (or against another pyarrow).
  cmake -S . -B "$BUILD_DIR" "${EGM_ARROW_CMAKE_ARGS[@]}"
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "${EGM_JOBS:-$(nproc)}" "${targets[@]}"
echo "egm setup: built ${*:-everything} into $BUILD_DIR"
