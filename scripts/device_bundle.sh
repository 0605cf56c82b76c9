#!/usr/bin/env bash
# Packs what scripts/device_check.sh needs on the lent GPU machine, which has
# torch 2.11.0+cu130 (LibTorch, CUDA, NCCL) but none of Debian's libraries and
# no Open MPI: the binaries built here against the same torch, stripped, and
# every shared library they need that is not LibTorch's, CUDA's or glibc's;
# Open MPI's runtime (mpirun, its libraries and plugins) as a tarball of
# absolute paths that device_check.sh unpacks into / there (it runs as root).
#   scripts/device_bundle.sh [DIR]     default DIR: build/device-bundle (ignored)
# Then, with the device tool: carry DIR, run
#   scripts/device_check.sh --bundle DIR --out "$OUT"
# The device tool carries at most 64 MiB; this prints the bundle's size.
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-build/device-bundle}
BUILD_DIR=${EGM_BUILD_DIR:-build}
scripts/setup.sh egm egm-coordinator egm-worker test_gpu >/dev/null

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
for b in egm egm-torch egm-coordinator egm-worker; do cp "$BUILD_DIR/bin/$b" "$BUNDLE/bin/"; done
cp "$(find "$BUILD_DIR/tests/gpu" -maxdepth 1 -name test_gpu -type f)" "$BUNDLE/bin/"
strip --strip-unneeded "$BUNDLE"/bin/*

# Libraries the GPU machine has already (its torch wheel and CUDA, glibc and the
# compiler runtime) stay behind; everything else travels.
provided='^(libtorch|libc10|libcaffe2|libshm|libgomp|libcuda|libcudart|libcublas|libcudnn|libnccl|libnv|libcufft|libcurand|libcusparse|libcusolver|libcupti|libcufile|libnvshmem|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libresolv\.so|ld-linux|linux-vdso|libstdc\+\+|libgcc_s)'
carry_libs() {
  ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      [[ "$name" =~ $provided ]] && continue
      [ -e "$BUNDLE/lib/$name" ] || cp -L "$path" "$BUNDLE/lib/$name"
    done
}
carry_libs "$BUNDLE"/bin/*

# Open MPI: Debian's build is not relocatable, so its files travel with their
# absolute paths (a tarball) and their libraries' dependencies go to lib/.
if command -v orterun >/dev/null 2>&1; then
  ompi_files=$(dpkg -L openmpi-bin libopenmpi3 openmpi-common 2>/dev/null | while read -r f; do
    [ -f "$f" ] || [ -L "$f" ] || continue
    case "$f" in /usr/share/doc/*|/usr/share/man/*|/usr/share/lintian/*) continue ;; esac
    echo "$f"
  done)
  # shellcheck disable=SC2086
  tar -czf "$BUNDLE/openmpi.tar.gz" -P $ompi_files /etc/alternatives/mpirun /usr/bin/mpirun 2>/dev/null || true
  carry_libs $(echo "$ompi_files" | grep -E '\.so(\.|$)') /usr/bin/orterun /usr/bin/orted
fi
strip --strip-unneeded "$BUNDLE"/lib/*.so* 2>/dev/null || true
echo "egm device bundle: $BUNDLE, $(du -sh "$BUNDLE" | cut -f1) ($(ls "$BUNDLE/lib" | wc -l) libraries)"
