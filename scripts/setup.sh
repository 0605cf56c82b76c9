#!/usr/bin/env bash
# Installs every Debian package egm needs (idempotent; apt as root) and builds
# the project into build/. Both README commands start here.
#   scripts/setup.sh            install + configure + build
#   EGM_SKIP_APT=1 scripts/setup.sh   build only (packages already present)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache git pkg-config
  libtorch-dev libopenblas0-pthread libtcmalloc-minimal4 python3-torch python3-numpy
  nlohmann-json3-dev libfmt-dev libsqlite3-dev sqlite3
  libopenmpi-dev openmpi-bin libcli11-dev libgtest-dev libgmock-dev
  libvalijson-dev libboost-math-dev libssl-dev libcurl4-openssl-dev
  gnuplot-nox slurm-wlm munge
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${EGM_SKIP_APT:-0}" != 1 ] && [ ${#missing[@]} -gt 0 ]; then
  echo "egm setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's LibTorch uses whatever libblas.so.3 points at; the reference BLAS is
# ~50x slower than OpenBLAS. Refuse to go on silently with it.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas*) ;;
  *) echo "egm setup: warning: libblas.so.3 -> ${blas:-none}, not OpenBLAS; matrix products will be very slow." >&2
     echo "           fix: apt-get install libopenblas0-pthread" >&2 ;;
esac

BUILD_DIR=${EGM_BUILD_DIR:-build}
BUILD_TYPE=${EGM_BUILD_TYPE:-Release}  # -g costs ~55% more compile time per LibTorch unit
export CCACHE_DIR=${CCACHE_DIR:-$PWD/.cache/ccache}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" ${EGM_CMAKE_ARGS:-}
fi
cmake --build "$BUILD_DIR" -j "${EGM_JOBS:-$(nproc)}"
echo "egm setup: built into $BUILD_DIR"
