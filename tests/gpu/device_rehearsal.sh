#!/usr/bin/env bash
# The lent GPU machine, rehearsed here: scripts/device_check.sh --bundle ...
# --device cpu runs end to end, inside its budget, in a bare root file system
# that has what that machine is known to have and nothing more:
#   - Debian's minbase plus python3 (scripts/rehearsal_root.sh, cached in ~/.cache/egm);
#   - the torch virtual environment bound at /opt/torch/.venv (its interpreter too,
#     where it lives outside /usr), read-only;
#   - no Open MPI, no ssh or rsh, no compilers, no -dev packages (checked first);
#   - the checkout at another path (/egm/src, read-only), the bundle tarball, --out;
#   - a root that writes nowhere lasting (an overlay on a tmpfs), /tmp a tmpfs.
# It proves the bundle carries everything (the preflight's ldd finds no "not
# found"), that mpirun starts the sweep's and the NCCL test's ranks without ssh,
# and that the report says what each part did. Then the same root with a bundle
# that lacks a library: one line naming it, exit 2, and a report saying so.
#   device_rehearsal.sh SRC_DIR BUILD_DIR WORK_DIR [BUDGET_S]
# Exit 77 (ctest: skipped) with a loud banner where it cannot run here (not
# root, no debootstrap or mirror, no overlay mounts).
set -uo pipefail
SRC=$1 BUILD=$2 WORK=$3 BUDGET=${4:-420}
skip() {
  printf '\n%s\n*** DEVICE REHEARSAL SKIPPED: %s\n*** The GPU machine was NOT rehearsed: the bundle and the launch without ssh are unproven.\n%s\n\n' \
    "$(printf '*%.0s' {1..78})" "$*" "$(printf '*%.0s' {1..78})" >&2
  exit 77
}
# shellcheck source=../support/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/checks.sh"
note() { echo "[rehearsal $((SECONDS))s] $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (chroot and mounts)"
for c in unshare chroot mount; do command -v $c >/dev/null || skip "no $c here"; done
ROOT=$(bash "$SRC/scripts/rehearsal_root.sh")
rc=$?
[ $rc = 0 ] || skip "no bare root file system (scripts/rehearsal_root.sh exit $rc)"
VENV=${EGM_TORCH_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/egm/torch-2.11.0}
[ -x "$VENV/bin/python3" ] && [ -f "$VENV/pyvenv.cfg" ] || skip "no torch virtual environment at $VENV (scripts/torch_env.sh)"
# The interpreter the environment was made from: bound too where it lives outside
# /usr (pyenv); a Debian python3.11 is in the root already.
PYHOME=$(sed -n 's/^home *= *//p' "$VENV/pyvenv.cfg")
PYPREFIX=$(dirname "$PYHOME")
case "$PYPREFIX" in /usr|/usr/local) PYPREFIX="" ;; esac

rm -rf "$WORK"
mkdir -p "$WORK/out" "$WORK/out_broken" "$WORK/mnt"
note "building the bundle from $BUILD"
EGM_BUILD_DIR=$BUILD EGM_BUNDLE_NO_BUILD=1 bash "$SRC/scripts/device_bundle.sh" "$WORK/device-bundle.tar.gz" ||
  { fail "scripts/device_bundle.sh failed"; exit 1; }
size=$(stat -c %s "$WORK/device-bundle.tar.gz")
[ "$size" -lt $((64 * 1024 * 1024)) ] || fail "the bundle is $size bytes: the device tool carries 64 MiB at most"
# A bundle that lacks one library the binaries need (unpacked: --bundle takes a folder too).
mkdir -p "$WORK/broken"
tar -xzf "$WORK/device-bundle.tar.gz" -C "$WORK/broken"
victim=$(cd "$WORK/broken/device-bundle/lib" && ls | grep '^libfmt\.so' | sed -n 1p)
[ -n "$victim" ] || victim=$(cd "$WORK/broken/device-bundle/lib" && ls | sed -n 1p)
rm -f "$WORK/broken/device-bundle/lib/$victim"

# in_root SCRIPT: runs bash SCRIPT inside a fresh mount namespace, chrooted into
# an overlay of the bare root with the binds above; its output and exit status.
in_root() {
  unshare --mount --propagation private bash -s "$1" <<EOF
set -e
M="$WORK/mnt"
mount -t tmpfs -o size=4g tmpfs "$WORK/mnt"
mkdir -p "\$M/upper" "\$M/work" "\$M/root"
mount -t overlay overlay -o lowerdir="$ROOT",upperdir="\$M/upper",workdir="\$M/work" "\$M/root" || exit 91
R="\$M/root"
mount -t proc proc "\$R/proc"
mount --rbind /dev "\$R/dev"
mount --rbind /sys "\$R/sys"
mount -t tmpfs tmpfs "\$R/tmp"
ro() { mkdir -p "\$2"; mount --bind "\$1" "\$2"; mount -o remount,bind,ro "\$2"; }
ro "$VENV" "\$R/opt/torch/.venv"
[ -z "$PYPREFIX" ] || ro "$PYPREFIX" "\$R$PYPREFIX"
ro "$SRC" "\$R/egm/src"
ro "$WORK" "\$R/egm/bundle"
mkdir -p "\$R/egm/out" "\$R/egm/out_broken"
mount --bind "$WORK/out" "\$R/egm/out"
mount --bind "$WORK/out_broken" "\$R/egm/out_broken"
set +e
exec chroot "\$R" /usr/bin/env -i PATH=/opt/torch/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 TMPDIR=/tmp bash -c "\$1" </dev/null
EOF
}

note "checking the bare root: no Open MPI, ssh, compilers or -dev packages; torch's python works"
in_root '
for c in ssh rsh mpirun orterun cc gcc g++ c++ clang clang++ nvcc; do
  command -v $c >/dev/null && echo "FOUND $c: $(command -v $c)"
done
dev=$(dpkg-query -W -f "\${Package}\n" | grep -E -- "-dev(:|$)" | tr "\n" " ")
[ -z "$dev" ] || echo "FOUND -dev packages: $dev"
python3 -c "import torch, sqlite3; print(\"python\", torch.__version__, \"at\", __import__(\"sys\").executable)" || echo "FOUND no torch"
[ "$(pwd)" = / ] && [ -f /egm/src/scripts/device_check.sh ] || echo "FOUND no checkout at /egm/src"
' >"$WORK/root_check.txt" 2>&1
rc=$?
[ $rc = 91 ] && skip "cannot mount an overlay here"
cat "$WORK/root_check.txt"
grep -q '^FOUND' "$WORK/root_check.txt" && fail "the bare root is not bare or lacks torch: $(grep '^FOUND' "$WORK/root_check.txt" | tr '\n' ' ')"
[ $rc = 0 ] || fail "the root check exited $rc"

note "device_check.sh --bundle --device cpu --budget $BUDGET in the bare root"
t0=$SECONDS
in_root "bash /egm/src/scripts/device_check.sh --bundle /egm/bundle/device-bundle.tar.gz --device cpu --out /egm/out --budget $BUDGET" \
  >"$WORK/check.txt" 2>&1
rc=$?
wall=$((SECONDS - t0))
tail -n 40 "$WORK/check.txt"
# A failed part's own log, so that a failure seen once (in CI) can be explained from its output alone.
show_failed_part_logs() {
  local x="$WORK/out_logs" part
  rm -rf "$x" && mkdir -p "$x" && tar -xzf "$WORK/out/logs.tgz" -C "$x" 2>/dev/null || return 0
  for part in $(python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(open(sys.argv[1]))["parts"] if p["status"] == "failed"))' "$WORK/out/report.json" 2>/dev/null); do
    find "$x" -name "$part*.log" | sort | while read -r f; do echo "--- ${f#"$x"/} (last 30 lines)"; tail -n 30 "$f"; done
  done
}
[ $rc = 0 ] || { show_failed_part_logs; fail "device_check.sh exited $rc in the bare root (report: $WORK/out/report.md)"; }
[ -f "$WORK/out/report.md" ] && sed -n '1,40p' "$WORK/out/report.md"
python3 - "$WORK/out" "$BUDGET" <<'PY' || fail "the report is not what the rehearsal expects"
import json, os, sys
out, budget = sys.argv[1], int(sys.argv[2])
r = json.load(open(os.path.join(out, "report.json")))
problems = []
def want(cond, what):
    if not cond:
        problems.append(what)
files = sorted(os.listdir(out))
want(set(files) == {"report.md", "report.json", "logs.tgz", "profile_summary.txt"}, f"files in --out: {files}")
status = {p["name"]: p for p in r["parts"]}
for name, p in status.items():
    if name == "peer_compile":  # the bare root has no compiler: said so, not failed
        want(p["status"] == "skipped" and "no C compiler" in p["note"], f"peer_compile: {p}")
    else:
        want(p["status"] == "done", f"{name}: {p['status']} {p['note']}")
want(r["elapsed_s"] <= budget, f"took {r['elapsed_s']} s of a {budget} s budget")
res = r["results"]
pre = [x for x in res.get("preflight", []) if "ssh" in x]
want(pre and pre[0]["ssh"] == "none", f"preflight saw ssh: {pre}")
want(pre and "/openmpi/usr/bin/mpirun" in pre[0]["mpirun"], f"mpirun not the bundle's: {pre}")
want(len([x for x in res.get("preflight", []) if "ms_per_step" in x]) == 1, "no tiny bench in the preflight")
benches = {(x["variant"], x["precision"]) for k, rows in res.items() if k.startswith("bench_") for x in rows}
want_benches = {(v, "bf16") for v in ["base", "ega", "ega_causal", "mope", "ega_mope"]} | {("base", "fp32")}
want(benches == want_benches, f"benches {sorted(benches)}")
rows = [x for k, rows in res.items() if k.startswith("bench_") or k == "preflight" for x in rows if "ms_per_step" in x]
want(all("sdpa_backend" in x for x in rows), "a bench row without its sdpa_backend")
want(pre and pre[0].get("ldd") == "checked" and pre[0].get("version_mismatches") == [], f"preflight's ldd: {pre}")
order = [p["name"] for p in r["parts"]]
want(order[:3] == ["preflight", "bench_base_bf16", "peer_eager_sdpa"] and order[-1] == "bench_base_fp32",
     f"the parts' order: {order}")
prof = next((x for x in res.get("profile", []) if "kernels" in x), {})
want(prof.get("cpu_ops", 0) > 100 and prof.get("kernels") == 0, f"profile {prof}")
nccl = res.get("nccl", [])
want([x["ranks"] for x in nccl] == [1, 2] and all(not x["problems"] for x in nccl), f"nccl {nccl}")
packing = res.get("packing", [])
want([x["runs"] for x in packing] == [1, 2, 4] and all(x["steps_per_s_total"] for x in packing), f"packing {packing}")
want(all(x.get("matmul_from_preflight") for x in packing), f"packed runs measured their own matmul rate: {packing}")
sweep = res.get("sweep_rpg4", [{}])[0]
want(sweep.get("exit") == 0 and sweep.get("cells_done") == 12, f"sweep {sweep}")
peer = res.get("peer_eager_sdpa", [{}])[0]
want(peer.get("ms_per_step", 0) > 0 and peer.get("impl") == "torch_sdpa", f"peer {peer}")
for p in problems:
    print("  report:", p)
sys.exit(1 if problems else 0)
PY

note "the same root, a bundle without $victim"
in_root "bash /egm/src/scripts/device_check.sh --bundle /egm/bundle/broken/device-bundle --device cpu --out /egm/out_broken --budget 60" \
  >"$WORK/broken.out" 2>"$WORK/broken.err"
rc=$?
[ $rc = 2 ] || fail "a bundle without $victim: exit $rc, expected 2"
[ "$(wc -l <"$WORK/broken.err")" = 1 ] && grep -q "device_check: error: the bundle lacks libraries: .*$victim" "$WORK/broken.err" ||
  fail "a bundle without $victim: stderr '$(cat "$WORK/broken.err")'"
python3 - "$WORK/out_broken/report.json" "$victim" <<'PY' || fail "the broken bundle's report does not say what happened"
import json, sys
r = json.load(open(sys.argv[1]))
parts = {p["name"]: p for p in r["parts"]}
assert parts["preflight"]["status"] == "failed", parts["preflight"]
assert any(sys.argv[2] in m for x in r["results"]["preflight"] for m in x.get("missing", [])), r["results"]
assert all(p["status"] == "not_run" and "bundle is broken" in p["note"] for n, p in parts.items() if n != "preflight")
PY

note "bundle $((size / 1024 / 1024)) MiB ($size bytes); device check in the bare root: ${wall} s of a ${BUDGET} s budget"
finish
