#!/usr/bin/env bash
# scripts/device_check.sh on bad input and on a budget that runs out (the
# build folder's binaries, --device cpu, no bundle):
#   - --budget 0, -5, 1.5 or abc; an --out that cannot be written; a missing
#     bundle; a tarball that is not one; an unknown flag: one line
#     "device_check: error: ...", exit 2, nothing written into --out;
#   - a part that hangs (EGM_DEVICE_CHECK_STALL): killed from outside mid-part, the
#     report on disk says what was done and what is running; with a budget sized from the parts before it (70 s idle) the
#     hung part is cut when the budget runs out (failed, with its last lines), every
#     later part is not run for lack of time, and the call ends inside the budget, exit 1;
#     the parts come in the order of what their result is worth;
#   - the preflight on a machine without ldd (said so by itself; the check goes on) and
#     with a C library older than the build's (ldd's "version not found" lines listed
#     apart from missing libraries).
#   device_check_inputs.sh SRC_DIR WORK_DIR      (EGM_BUILD_DIR: the build folder)
set -uo pipefail
SRC=$1 WORK=$2
CHECK="$SRC/scripts/device_check.sh"
# shellcheck source=../support/checks.sh
source "$SRC/tests/support/checks.sh"
rm -rf "$WORK" && mkdir -p "$WORK"

# refused NAME EXPECTED_TEXT ARGS...: one line naming the problem, exit 2, --out left empty.
refused() {
  local name=$1 text=$2
  shift 2
  rm -rf "$WORK/out" && mkdir -p "$WORK/out"
  bash "$CHECK" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  local rc=$?
  [ $rc = 2 ] || fail "$name: exit $rc, expected 2 ($(head -c 300 "$WORK/stderr"))"
  [ "$(wc -l <"$WORK/stderr")" = 1 ] || fail "$name: stderr is not one line: $(cat "$WORK/stderr")"
  grep -q "^device_check: error: .*$text" "$WORK/stderr" || fail "$name: stderr '$(cat "$WORK/stderr")' lacks '$text'"
  [ -s "$WORK/stdout" ] && fail "$name: printed on stdout: $(head -c 300 "$WORK/stdout")"
  [ -z "$(ls -A "$WORK/out")" ] || fail "$name: wrote into --out: $(ls -A "$WORK/out")"
}
refused "budget 0" "--budget 0: expected a positive whole number" --device cpu --out "$WORK/out" --budget 0
refused "budget -5" "--budget -5: expected a positive whole number" --device cpu --out "$WORK/out" --budget -5
refused "budget 1.5" "--budget 1.5: expected a positive whole number" --device cpu --out "$WORK/out" --budget 1.5
refused "budget abc" "--budget abc: expected a positive whole number" --device cpu --out "$WORK/out" --budget abc
refused "budget without a value" "--budget needs a value" --device cpu --out "$WORK/out" --budget
refused "device tpu" "--device tpu: expected cuda or cpu" --device tpu --out "$WORK/out"
refused "unknown flag" "unknown argument --fast" --device cpu --out "$WORK/out" --fast
refused "no --out" "--out DIR is required" --device cpu
touch "$WORK/a_file"
refused "unwritable --out" "--out $WORK/a_file/out cannot be written" --device cpu --out "$WORK/a_file/out"
[ -e "$WORK/a_file/out" ] && fail "unwritable --out: something was made"
refused "missing bundle" "--bundle $WORK/nope.tar.gz: no such file" --device cpu --out "$WORK/out" --bundle "$WORK/nope.tar.gz"

# A tarball that is not one, and a folder without bin/egm: the check has started by
# then (the bundle is unpacked inside the budget), so a report says why, besides the line.
echo "not a tarball" >"$WORK/bad.tar.gz"
rm -rf "$WORK/out" && mkdir -p "$WORK/out"
bash "$CHECK" --device cpu --out "$WORK/out" --bundle "$WORK/bad.tar.gz" --budget 30 >/dev/null 2>"$WORK/stderr"
rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$WORK/stderr")" = 1 ] && grep -q "^device_check: error: --bundle .*did not unpack" "$WORK/stderr" ||
  fail "a bad tarball: exit $rc, stderr '$(cat "$WORK/stderr")'"
grep -q "did not unpack" "$WORK/out/report.md" 2>/dev/null || fail "a bad tarball: report.md does not say so"

# A part that hangs (EGM_DEVICE_CHECK_STALL), as a GPU run can: the third part, the
# eager PyTorch peer. First the call is killed from outside while it hangs (the device
# tool's own limit): the report on disk already says what was done and what is running.
STALL=peer_eager_sdpa
rm -rf "$WORK/out" "$WORK/tmp" && mkdir -p "$WORK/out" "$WORK/tmp"
TMPDIR=$WORK/tmp EGM_DEVICE_CHECK_STALL=$STALL setsid bash "$CHECK" --device cpu --out "$WORK/out" --budget 300 \
  >"$WORK/killed.log" 2>&1 &
pid=$!
running=""
for _ in $(seq 3000); do
  grep -q '"status": "running"' "$WORK/out/report.json" 2>/dev/null &&
    grep -q "stalling" "$WORK/tmp"/egm-device-check.*/logs/$STALL.log 2>/dev/null && { running=1; break; }
  sleep 0.1
done
kill -KILL -- "-$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -n "$running" ] || fail "killed: never saw $STALL running and stalled ($(tail -n 3 "$WORK/killed.log"))"
python3 - "$WORK/out/report.json" "$STALL" <<'PY' || fail "killed mid-part: the report on disk does not say where it was"
import json, sys
r, stall = json.load(open(sys.argv[1])), sys.argv[2]
parts = {p["name"]: p for p in r["parts"]}
assert [p["name"] for p in r["parts"]][:3] == ["preflight", "bench_base_bf16", stall], r["parts"][:3]
assert parts["preflight"]["status"] == "done", parts["preflight"]
assert parts["bench_base_bf16"]["status"] == "done", parts["bench_base_bf16"]
assert parts[stall]["status"] == "running", parts[stall]
assert all(p["status"] == "pending" for n, p in parts.items() if n not in ("preflight", "bench_base_bf16", stall))
assert not r["ok"]
PY
grep -q "| $STALL | running |" "$WORK/out/report.md" || fail "killed mid-part: report.md does not show $STALL running"
# grep without -q reads the whole listing: under pipefail, a grep -q that stops at the
# match can cut tar off with SIGPIPE, and the pipeline fails though the log is there.
tar -tzf "$WORK/out/logs.tgz" | grep "logs/preflight.log" >/dev/null || fail "killed mid-part: logs.tgz lacks the preflight's log"

# The budgets below are sized from how long the two parts before the stall took just
# now: on a loaded machine (ctest runs two tests at once, beside a rehearsal) the
# preflight alone has taken 45 s, so a fixed budget would test the load, not the check.
before=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["parts"]; print(int(p[0]["seconds"]) + int(p[1]["seconds"]))' \
  "$WORK/out/report.json") || fail "killed: no part times in the report"
[ "$before" -le 60 ] || fail "killed: the preflight and the base bench took $before s (a machine this loaded tests nothing)"

# Then the budget does its job: the hung part is cut when the budget runs out,
# everything after it is recorded as not run, and the call ends inside the budget.
rm -rf "$WORK/out" && mkdir -p "$WORK/out"
t0=$SECONDS
# The parts before it, with half again as much slack, then about 37 s: the hung part
# starts with at least its 20 s minimum, so it runs, and with less than its 75 s cap,
# so it is cut by the budget, not by its cap (70 s on an idle machine).
budget=$((before * 3 / 2 + 45))
[ $budget -ge 70 ] || budget=70
EGM_DEVICE_CHECK_STALL=$STALL bash "$CHECK" --device cpu --out "$WORK/out" --budget $budget >"$WORK/budget.log" 2>"$WORK/budget.err"
rc=$?
took=$((SECONDS - t0))
[ $rc = 1 ] || fail "budget $budget: exit $rc, expected 1 (a part failed)"
[ -s "$WORK/budget.err" ] && fail "budget $budget: wrote to stderr: $(head -c 300 "$WORK/budget.err")"
[ $took -le $((budget + 2)) ] || fail "budget $budget: took $took s"
python3 - "$WORK/out/report.json" "$STALL" "$budget" <<'PY' || fail "budget $budget: the report does not account for every part"
import json, sys
r, stall, budget = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
parts = r["parts"]
assert not r["ok"] and r["elapsed_s"] <= budget, (r["ok"], r["elapsed_s"])
# The order of what each result is worth (tests/gpu/README.md).
assert [p["name"] for p in parts] == [
    "preflight", "bench_base_bf16", "peer_eager_sdpa", "bench_ega_bf16", "bench_ega_causal_bf16", "bench_mope_bf16",
    "bench_ega_mope_bf16", "gpu_tests", "graphs", "sdpa_no_cudnn", "profile", "peer_compile", "nccl", "packing",
    "sweep_rpg4", "bench_base_fp32"], [p["name"] for p in parts]
assert parts[0]["status"] == "done" and parts[1]["status"] == "done", parts[:2]
cut = parts[2]
assert cut["name"] == stall and cut["status"] == "failed", cut
assert "the budget ran out" in cut["note"] and cut["timeout_s"] < cut["cap_s"], cut
assert any("stalling" in line for line in cut["last_lines"]), cut["last_lines"]
for p in parts[3:]:
    assert p["status"] == "not_run" and "lack of time" in p["note"], p
print(f"budget {budget}:", ", ".join(f"{p['name']} {p['status']}" for p in parts[:4]), "...")
PY
grep -q "not run for lack of time" "$WORK/out/report.md" || fail "budget $budget: report.md does not say what did not run"
grep -q "stalling" "$WORK/out/report.md" || fail "budget $budget: report.md lacks the cut part's last lines"
[ -s "$WORK/out/logs.tgz" ] || fail "budget $budget: no logs.tgz"
n=$(ls "$WORK/out" | wc -l)
[ "$n" -le 5 ] || fail "budget $budget: $n files in --out: $(ls "$WORK/out")"

# The preflight where ldd is missing, and where ldd says the C library is older than
# the build's. A PATH of links to every command but ldd stands in for the first; an ldd
# that adds glibc's "version not found" line for bin/egm for the second (egm still runs
# here, so the preflight passes and lists the line apart from missing libraries). The
# budget leaves room for the preflight and perhaps a part or two, not for all of them
# (torch's import alone, for the report's header, can take 20 s on a loaded machine).
mkdir -p "$WORK/noldd" "$WORK/oldlibc"
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  for c in "$d"/*; do
    b=${c##*/}
    [ "$b" = ldd ] || [ -e "$WORK/noldd/$b" ] || ln -s "$c" "$WORK/noldd/$b"
  done
done 2>/dev/null
{
  echo '#!/bin/bash'
  echo "$(command -v ldd) \"\$@\""
  echo 'case "$1" in */bin/egm) printf "\t/lib/x86_64-linux-gnu/libc.so.6: version \x60GLIBC_9.99'"'"' not found (required by %s)\n" "$1" ;; esac'
} >"$WORK/oldlibc/ldd"
chmod +x "$WORK/oldlibc/ldd"
# 40 s on an idle machine; room for the preflight as loaded as it was above.
pre_budget=$((before * 2 + 16))
[ $pre_budget -ge 40 ] || pre_budget=40
for case_ in noldd oldlibc; do
  rm -rf "$WORK/out" && mkdir -p "$WORK/out"
  if [ $case_ = noldd ]; then path=$WORK/noldd; else path=$WORK/oldlibc:$PATH; fi
  PATH=$path bash "$CHECK" --device cpu --out "$WORK/out" --budget $pre_budget >"$WORK/$case_.log" 2>"$WORK/$case_.err"
  rc=$?
  [ $rc = 1 ] || fail "$case_: exit $rc, expected 1 (only the preflight fits the budget): $(tail -n 5 "$WORK/$case_.log")"
  python3 - "$WORK/out/report.json" "$case_" <<'PY' || fail "$case_: the preflight's report is not what it should be"
import json, sys
r, case = json.load(open(sys.argv[1])), sys.argv[2]
pre = r["parts"][0]
assert pre["name"] == "preflight" and pre["status"] == "done", pre
rows = [x for x in r["results"]["preflight"] if "nvidia_smi" in x]
assert rows and not any("missing" in x for x in r["results"]["preflight"]), r["results"]["preflight"]
if case == "noldd":
    assert rows[0]["ldd"] == "none" and rows[0]["version_mismatches"] == [], rows[0]
else:
    assert rows[0]["ldd"] == "checked", rows[0]
    # Named relative to the folder checked (the build's bin/ here, the bundle's root there).
    assert rows[0]["version_mismatches"] == [
        "egm: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_9.99' not found"], rows[0]
PY
  if [ $case_ = noldd ]; then
    grep -q "no ldd here: the .* binaries and libraries were not checked" "$WORK/out/report.md" ||
      fail "noldd: report.md does not say there is no ldd"
  else
    grep -q "older than the bundle's (ldd: version not found)" "$WORK/out/report.md" ||
      fail "oldlibc: report.md does not list the version line apart"
    grep -q "lacks libraries" "$WORK/out/report.md" && fail "oldlibc: report.md calls a version line a missing library"
  fi
done

finish
