"""An interrupted `egm sweep` exits 75 and names the signal it got, whichever it was.

  sweep_signals.py EGM WORK

specs/stop_pair.json (two 20000-step cells, one per worker) is started and,
once both cells are running past step 10 in the database, stopped by:
  ctrl-c   a Ctrl-C typed at the terminal: egm sweep runs on a pseudo-terminal
           and the test writes ^C to it, so the kernel sends SIGINT to the
           whole foreground process group (egm, mpirun, the ranks) as a shell's
           terminal does;
  SIGINT   `kill -INT` to egm alone (a script's interrupt);
  SIGTERM  `kill -TERM` to egm alone (a kill, scancel);
  SIGUSR2  `kill -USR2` to egm alone (Slurm's time-limit warning).
Each time: exit status 75; the last line says "stopped by" the signal sent,
described as egm describes it ("SIGINT (Ctrl-C)"); no line names another
stop signal (mpirun passes SIGINT on to the ranks as SIGTERM); the sweep is
'interrupted' and its attempts checkpointed, interrupted by that signal.
Exit status 0 = all passed, 77 = skipped (no corpus, no mpirun).
"""
import os
import pathlib
import pty
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

FAILURES = []
DESCRIBED = {"SIGINT": "SIGINT (Ctrl-C)", "SIGTERM": "SIGTERM (preemption or cancel)",
             "SIGUSR2": "SIGUSR2 (time-limit warning)"}


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def query(db, sql):
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None  # not created yet, or mid-migration


def both_running(db):
    rows = query(db, "SELECT count(*) FROM runs r WHERE r.status = 'running' AND EXISTS (SELECT 1 FROM metrics m "
                     "WHERE m.run_id = r.id AND m.split = 'train' AND m.step >= 10)")
    return bool(rows) and rows[0][0] == 2


def start(egm, spec, db, runs, on_tty):
    cmd = [egm, "sweep", spec, "--workers", "2", "--db", db, "--runs-dir", runs, "--view", "plain"]
    if not on_tty:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True), None
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session of its own with the pseudo-terminal as its controlling terminal
        os.execv(egm, cmd)
    return pid, fd


def drain(fd, buf):
    """Reads what the pseudo-terminal has (the sweep's output), so it never blocks on a full buffer."""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return False
        if not chunk:
            return False
        buf.append(chunk)
    return True


def one_case(case, egm, spec, work):
    sent = "SIGINT" if case == "ctrl-c" else case
    d = work / case
    d.mkdir(parents=True)
    db, runs = str(d / "results.sqlite"), str(d / "runs")
    on_tty = case == "ctrl-c"
    proc, fd = start(egm, spec, db, runs, on_tty)
    pid = proc if on_tty else proc.pid
    buf = []
    deadline = time.time() + 150
    while time.time() < deadline and not both_running(db):
        if on_tty:
            drain(fd, buf)
        elif proc.poll() is not None:
            break
        time.sleep(0.2)
    if not both_running(db):
        check(False, f"{case}: never saw both cells running past step 10")
        os.killpg(pid, signal.SIGKILL)
    elif on_tty:
        os.write(fd, b"\x03")  # ^C: the terminal's line discipline signals the foreground group
    else:
        os.kill(pid, getattr(signal, sent))
    if on_tty:
        status = None
        deadline = time.time() + 120
        while status is None and time.time() < deadline:
            drain(fd, buf)
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            else:
                time.sleep(0.1)
        if status is None:
            os.killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        drain(fd, buf)
        code = os.waitstatus_to_exitcode(status)
        out = b"".join(buf).decode(errors="replace").replace("\r\n", "\n")
    else:
        try:
            out = proc.communicate(timeout=120)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            os.killpg(pid, signal.SIGKILL)
            out = proc.communicate()[0].decode(errors="replace")
        code = proc.returncode
    lines = [l for l in out.splitlines() if l.strip()]
    print(f"--- {case}: exit {code}; last lines:\n    " + "\n    ".join(lines[-4:]))
    check(code == 75, f"{case}: exit {code}, expected 75")
    check(bool(lines) and f"stopped by {DESCRIBED[sent]}" in lines[-1],
          f"{case}: the last line does not name {DESCRIBED[sent]}: {lines[-1:]}")
    others = [s for s in DESCRIBED if s != sent and re.search(rf"\b{s}\b", out)]
    check(not others, f"{case}: the output names {others}, but {sent} was sent")
    check(query(db, "SELECT status FROM sweeps") == [("interrupted",)],
          f"{case}: sweep status {query(db, 'SELECT status FROM sweeps')}")
    attempts = query(db, "SELECT status, error FROM runs ORDER BY id") or []
    check(len(attempts) == 2 and all(s == "interrupted" and e.startswith(f"interrupted by {DESCRIBED[sent]} at step")
                                     and e.endswith("checkpointed") for s, e in attempts),
          f"{case}: attempts {attempts}")


def main():
    egm, work = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    if not os.path.isfile(os.environ.get("EGM_DATA", "")):
        print("SKIP: no corpus (set EGM_DATA)")
        return 77
    if not shutil.which("mpirun"):
        print("SKIP: no mpirun")
        return 77
    if os.geteuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spec = str(pathlib.Path(os.environ["EGM_SWEEP_TEST_DIR"]) / "specs" / "stop_pair.json")
    cases = sys.argv[3:] or ["ctrl-c", "SIGINT", "SIGTERM", "SIGUSR2"]
    for case in cases:
        one_case(case, egm, spec, work)
    print(f"sweep signals: {'all passed' if not FAILURES else f'{len(FAILURES)} failed'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
