#!/usr/bin/env bash
# The bare root file system in which CI rehearses the lent GPU machine
# (tests/gpu/device_rehearsal.sh): Debian bookworm, debootstrap's minbase
# variant plus python3 (the interpreter a torch virtual environment is made
# from; the GPU machine has one under its /opt/torch/.venv too). No Open MPI,
# no ssh, no compilers, no -dev packages: whatever egm needs there must come
# in the device bundle. Built once per machine and kept outside the checkout,
# like LibTorch (scripts/torch_env.sh):
#   ${EGM_REHEARSAL_ROOT:-${XDG_CACHE_HOME:-~/.cache}/egm/rehearsal-bookworm}
# (about 150 MB; a minute or two to download and unpack). Prints its path.
# Exit 77 when it cannot be built here (not root, no debootstrap, no mirror):
# the rehearsal then skips, loudly.
#   EGM_DEBIAN_MIRROR   the mirror debootstrap fetches from (default deb.debian.org)
set -euo pipefail
ROOT=${EGM_REHEARSAL_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/egm/rehearsal-bookworm}
MIRROR=${EGM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Bump when the recipe below changes: an older root is then built anew.
RECIPE="bookworm minbase +python3 v1"

if [ -f "$ROOT/.egm-complete" ] && [ "$(cat "$ROOT/.egm-complete")" = "$RECIPE" ]; then
  echo "$ROOT"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "rehearsal root: needs root (debootstrap, chroot, mounts)" >&2; exit 77; }
command -v debootstrap >/dev/null || {
  echo "rehearsal root: no debootstrap (scripts/setup.sh installs it with the test packages)" >&2; exit 77; }
mkdir -p "$(dirname "$ROOT")"
(
  # One builder at a time per machine (CI and a developer may start together).
  flock 9
  if [ -f "$ROOT/.egm-complete" ] && [ "$(cat "$ROOT/.egm-complete")" = "$RECIPE" ]; then exit 0; fi
  tmp="$ROOT.partial"
  rm -rf "$tmp" "$ROOT"
  echo "rehearsal root: debootstrap --variant=minbase --include=python3 bookworm $ROOT (once per machine)" >&2
  if ! debootstrap --variant=minbase --include=python3 bookworm "$tmp" "$MIRROR" >"$tmp.log" 2>&1; then
    echo "rehearsal root: debootstrap failed (last lines of $tmp.log):" >&2
    tail -n 5 "$tmp.log" >&2
    rm -rf "$tmp"
    exit 77
  fi
  rm -rf "$tmp/var/cache/apt/archives"/*.deb "$tmp.log"
  echo "$RECIPE" >"$tmp/.egm-complete"
  mv "$tmp" "$ROOT"
) 9>"$(dirname "$ROOT")/.rehearsal-root.lock"
echo "$ROOT"
