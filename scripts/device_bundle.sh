#!/usr/bin/env bash
# Packs what scripts/device_check.sh needs on the lent GPU machine into one
# compressed tarball. That machine has python3 with torch 2.11.0+cu130 at
# /opt/torch/.venv (LibTorch, CUDA, NCCL) but none of Debian's libraries, no
# Open MPI and perhaps no ssh; the tarball holds, under device-bundle/:
#   bin/      egm, egm-torch, egm-coordinator, egm-worker, test_gpu, test_nccl_link (stripped)
#   lib/      every shared library they (and Open MPI) need that is not LibTorch's,
#             CUDA's, NCCL's, glibc's or the compiler runtime's
#   openmpi/  Debian's Open MPI runtime and its PMIx, at their paths under this folder
#             (device_check.sh relocates them with OPAL_PREFIX and friends: nothing is
#             unpacked into /); mpirun -> orterun
#   MANIFEST  the commit, the build and the date
#   scripts/device_bundle.sh [TARBALL]   default build/device-bundle.tar.gz (ignored by git)
#   EGM_BUNDLE_NO_BUILD=1                take the build folder's binaries as they are
#                                        (the rehearsal test, inside ctest)
# Then, with the device tool: carry the tarball, run
#   scripts/device_check.sh --bundle build/device-bundle.tar.gz --out "$OUT"
# The device tool carries at most 64 MiB; this prints the tarball's size.
# tests/gpu/device_rehearsal.sh proves, in a bare root without Open MPI, ssh or
# compilers, that the bundle carries everything (ldd finds no "not found").
set -euo pipefail
cd "$(dirname "$0")/.."
TARBALL=${1:-build/device-bundle.tar.gz}
BUILD_DIR=${EGM_BUILD_DIR:-build}
if [ "${EGM_BUNDLE_NO_BUILD:-0}" != 1 ]; then
  targets=(egm egm-coordinator egm-worker test_gpu)
  # test_nccl_link exists where CMake found NCCL (cmake/EgmDependencies.cmake).
  # grep without -q reads the whole list: a grep -q that stops early can SIGPIPE cmake, and
  # under pipefail the test binary would then be left out of the bundle.
  cmake --build "$BUILD_DIR" --target help 2>/dev/null | grep '^test_nccl_link:' >/dev/null && targets+=(test_nccl_link)
  scripts/setup.sh "${targets[@]}" >/dev/null
fi
mkdir -p "$(dirname "$TARBALL")"
TARBALL=$(cd "$(dirname "$TARBALL")" && pwd)/$(basename "$TARBALL")

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/device-bundle
mkdir -p "$B/bin" "$B/lib"
for b in egm egm-torch egm-coordinator egm-worker; do cp "$BUILD_DIR/bin/$b" "$B/bin/"; done
for t in tests/gpu/test_gpu tests/dist/test_nccl_link; do
  if [ -x "$BUILD_DIR/$t" ]; then
    cp "$BUILD_DIR/$t" "$B/bin/"
  else
    echo "egm device bundle: no $BUILD_DIR/$t (the check reports it missing)" >&2
  fi
done
strip --strip-unneeded "$B"/bin/*

# Libraries the GPU machine has already (its torch wheel and CUDA, glibc and the
# compiler runtime) stay behind; everything else travels.
provided='^(libtorch|libc10|libcaffe2|libshm|libgomp|libcuda|libcudart|libcublas|libcudnn|libnccl|libnv|libcufft|libcurand|libcusparse|libcusolver|libcupti|libcufile|libnvshmem|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libresolv\.so|libutil\.so|libanl\.so|ld-linux|linux-vdso|libstdc\+\+|libgcc_s)'
carry_libs() {
  ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      [[ "$name" =~ $provided ]] && continue
      [ -e "$B/lib/$name" ] || cp -L "$path" "$B/lib/$name"
    done
}
# Open MPI's own libraries travel in openmpi/ (below), not in lib/.
command -v orterun >/dev/null 2>&1 && provided="$provided|^(libmpi|libopen-|libmca_|libompitrace|libpmix|liboshmem)"
carry_libs "$B"/bin/*

# Open MPI: Debian's build knows its install folders by absolute path, so its
# files travel at those paths under openmpi/ and device_check.sh points Open MPI
# and PMIx at them (OPAL_PREFIX, OPAL_LIBDIR, ..., PMIX_INSTALL_PREFIX). The
# libraries its plugins need go to lib/ like the others.
if command -v orterun >/dev/null 2>&1; then
  while IFS= read -r f; do
    case "$f" in /usr/share/doc/*|/usr/share/man/*|/usr/share/lintian/*|*/include/*|*.h|*.pc|*.mod) continue ;; esac
    [ -f "$f" ] || continue
    mkdir -p "$B/openmpi$(dirname "$f")"
    cp -P "$f" "$B/openmpi$f"
  done < <(dpkg -L openmpi-bin libopenmpi3 openmpi-common libpmix2 2>/dev/null | sort -u)
  # Absolute links (Debian's alternatives) made relative inside openmpi/, or
  # replaced by their target where it is elsewhere; mpirun is orterun.
  find "$B/openmpi" -type l -lname '/*' | while read -r link; do
    target=$(readlink "$link")
    if [ -e "$B/openmpi$target" ]; then ln -sfr "$B/openmpi$target" "$link"; else rm -f "$link"; cp -L "$target" "$link" || true; fi
  done
  ln -sf orterun "$B/openmpi/usr/bin/mpirun"
  ln -sf orterun "$B/openmpi/usr/bin/mpiexec"
  ompi_elf=()
  while IFS= read -r -d '' f; do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = 177ELF ] && ompi_elf+=("$f")
  done < <(find "$B/openmpi" -type f -print0)
  carry_libs "${ompi_elf[@]}"
  strip --strip-unneeded "${ompi_elf[@]}" 2>/dev/null || true
fi
strip --strip-unneeded "$B"/lib/*.so* 2>/dev/null || true
{
  echo "egm commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "bundle built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(. /etc/os-release && echo "$PRETTY_NAME"))"
  echo "build: $(grep -m1 '^CMAKE_BUILD_TYPE' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null | cut -d= -f2), $(grep -m1 '^CMAKE_CXX_COMPILER:' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null | cut -d= -f2); test_nccl_link $([ -x "$B/bin/test_nccl_link" ] && echo included || echo 'missing (no NCCL)')"
} >"$B/MANIFEST"
tar -C "$STAGE" -czf "$TARBALL.part" device-bundle
mv "$TARBALL.part" "$TARBALL"
size=$(stat -c %s "$TARBALL")
echo "egm device bundle: $TARBALL, $((size / 1024 / 1024)) MiB ($size bytes; $(ls "$B/lib" | wc -l) libraries, $(du -sh "$B" | cut -f1) unpacked)"
