#!/usr/bin/env bash
# egm sweep on a host without ssh (issue 26). Open MPI's default launcher
# looks for ssh or rsh on the PATH and aborts (exit 243) without one, even when
# every rank is local, as on the lent GPU machine and in many containers. In a
# mount namespace where /dev/null is bound over every ssh and rsh on the PATH:
# plain `mpirun -np 1 true` exits 243 (so they are really gone), and `egm sweep`
# of two tiny cells on two workers still runs both, because its launch line for
# one host outside Slurm uses Open MPI's isolated launcher. --print-command shows
# that line; inside a Slurm job, or with launcher arguments naming hosts, the
# line keeps mpirun's own launcher, as before.
#   sweep_no_ssh.sh EGM WORK
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] && command -v unshare >/dev/null || { echo "SKIP: needs root and unshare (a mount namespace)"; exit 77; }

cat >"$WORK/two.json" <<'JSON'
{"name": "no_ssh", "preset": "tiny", "variants": ["base", "ega"], "seeds": [0], "steps": 10, "eval_interval": 5}
JSON

# The launch lines, outside any namespace.
"$EGM" sweep "$WORK/two.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --print-command >"$WORK/line.txt" 2>&1
expect_eq "print-command exit status" 0 $?
expect_in_file "one host: the isolated launcher" " --mca plm isolated -np 1 " "$WORK/line.txt"
env SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=1 "$EGM" sweep "$WORK/two.json" --workers 2 --db "$DB" --runs-dir "$RUNS" \
  --print-command >"$WORK/line_slurm.txt" 2>&1
expect_eq "print-command in a Slurm job: exit status" 0 $?
grep -q "plm" "$WORK/line_slurm.txt" && fail "inside a Slurm job the line chooses a launcher: $(cat "$WORK/line_slurm.txt")"
"$EGM" sweep "$WORK/two.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --mpirun-args "--host localhost:3" \
  --print-command >"$WORK/line_hosts.txt" 2>&1
expect_in_file "named hosts: passed on" "--host localhost:3 -np 1 " "$WORK/line_hosts.txt"
grep -q "plm" "$WORK/line_hosts.txt" && fail "with named hosts the line chooses a launcher: $(cat "$WORK/line_hosts.txt")"
[ -e "$DB" ] && fail "--print-command created the database"

# What Open MPI would find: every ssh and rsh on the PATH.
agents=()
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do for a in ssh rsh; do [ -f "$d/$a" ] && agents+=("$d/$a"); done; done
echo "hiding: ${agents[*]:-(none on the PATH)}"
unshare --mount --propagation private bash -s "$EGM" "$WORK" "$DB" "$RUNS" "${agents[@]}" >"$WORK/ns.txt" 2>&1 <<'NS'
EGM=$1 WORK=$2 DB=$3 RUNS=$4
shift 4
for a in "$@"; do mount --bind /dev/null "$a" || { echo "cannot hide $a"; exit 1; }; done
mpirun -np 1 true >"$WORK/plain_mpirun.txt" 2>&1 </dev/null
echo "plain mpirun: $?"
"$EGM" sweep "$WORK/two.json" --workers 2 --db "$DB" --runs-dir "$RUNS" --view plain >"$WORK/sweep.txt" 2>&1 </dev/null  # mpirun reads stdin: this script
echo "egm sweep: $?"
NS
cat "$WORK/ns.txt"
expect_in_file "without ssh plain mpirun aborts (ssh is hidden)" "plain mpirun: 243" "$WORK/ns.txt"
expect_in_file "Open MPI says why" "plm_rsh_agent" "$WORK/plain_mpirun.txt"
expect_in_file "egm sweep without ssh" "egm sweep: 0" "$WORK/ns.txt" || tail -n 20 "$WORK/sweep.txt"
expect_all_done_once "$DB" 2
finish
