#!/usr/bin/env bash
# Scheduling overhead of egm sweep (a benchmark, not a test): wall time of a
# 16-cell tiny sweep with 2 workers against the sum of its runs' own times / 2
# (each run's time = ended_at - started_at of its attempt, as the coordinator
# recorded it), plus the fixed cost of launching and shutting down the job
# (the same command again, with nothing left to run).
#   tests/sweep/bench_scheduling.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
BUILD=${1:?usage: bench_scheduling.sh BUILD_DIR [WORK_DIR]}
WORK=${2:-$(mktemp -d)}
EGM=$BUILD/bin/egm
SPEC=$(cd "$(dirname "$0")" && pwd)/specs/bench16.json
export EGM_DATA=${EGM_DATA:-/work/shared/data/tinyshakespeare/input.txt}
rm -rf "$WORK/bench" && mkdir -p "$WORK/bench"
DB=$WORK/bench/bench.sqlite

now() { date +%s.%N; }
t0=$(now)
"$EGM" sweep "$SPEC" --workers 2 --threads-per-worker 1 --db "$DB" --runs-dir "$WORK/bench/runs" --view none >"$WORK/bench/sweep.txt" 2>&1
t1=$(now)
"$EGM" sweep "$SPEC" --workers 2 --threads-per-worker 1 --db "$DB" --runs-dir "$WORK/bench/runs" --view none >"$WORK/bench/again.txt" 2>&1
t2=$(now)
q() { "$EGM" query "$1" --db "$DB" --format csv | tail -n +2; }
sum=$(q "SELECT printf('%.2f', sum(ended_at - started_at)) FROM runs WHERE status = 'done'")
n=$(q "SELECT count(*) FROM runs WHERE status = 'done'")
first=$(q "SELECT printf('%.2f', min(started_at)) FROM runs")
last=$(q "SELECT printf('%.2f', max(ended_at)) FROM runs")
/usr/bin/python3 - "$t0" "$t1" "$t2" "$sum" "$n" "$first" "$last" <<'PY'
import sys
t0, t1, t2, total, n, first, last = map(float, sys.argv[1:])
wall, empty = t1 - t0, t2 - t1
ideal = total / 2
print(f"cells done:                          {int(n)}")
print(f"wall time of the sweep:              {wall:7.2f} s")
print(f"sum of the runs' own times / 2:      {ideal:7.2f} s  (sum {total:.2f} s, mean run {total / n:.2f} s)")
print(f"overhead (wall - sum/2):             {wall - ideal:7.2f} s  ({100 * (wall - ideal) / wall:.1f}% of the wall time)")
print(f"  first start -> last end:           {last - first:7.2f} s  (scheduling inside the job: {last - first - ideal:.2f} s)")
print(f"  launch + shutdown, nothing to run: {empty:7.2f} s")
PY
