#!/usr/bin/env python3
"""Crafted results databases against every verb that reads one (issue 40).

Each case copies a good egm database (the analysis fixture), changes it the way
a hostile or broken database from elsewhere would, and runs the reading verbs
on it: merge, status, runs, analyze, paper, report, export (CSV and TensorBoard). Every
run must end in a correct result, or in a one-line refusal with exit status 2:
no signal, no hang past its limit, the input unchanged (sha256), nothing
written outside the output folder, no merge temporary left behind.

  hostile_db.py --egm EGM --fixture MAKE_ANALYSIS_FIXTURE --work DIR [CASE...]
"""
import argparse
import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time

LIMIT_S = 60  # no verb may take longer on any case (the fixture is tiny)
failures = []


def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)


def sha(path):
    h = hashlib.sha256()
    for suffix in ("", "-wal", "-journal"):
        if os.path.exists(path + suffix):
            with open(path + suffix, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def listing(root):
    found = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            found.add(os.path.relpath(os.path.join(d, n), root))
    return found


class Runner:
    def __init__(self, egm, work):
        self.egm = egm
        self.work = work

    def run(self, case, verb, args, db, expect=None, out_dir=None, label=None):
        """Runs egm VERB ARGS on db; checks the common rules; returns (status, stdout, stderr)."""
        label = label or verb
        before = sha(db)
        outside_before = listing(self.work)
        started = time.monotonic()
        try:
            p = subprocess.run([self.egm, verb] + args, capture_output=True, timeout=LIMIT_S,
                               env=dict(os.environ, EGM_DB_TIME_LIMIT_S="10"))
        except subprocess.TimeoutExpired:
            fail(f"{case}/{label}: still running after {LIMIT_S} s")
            subprocess.run(["pkill", "-f", db])
            return None, "", ""
        took = time.monotonic() - started
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        where = f"{case}/{label} ({took:.1f} s)"
        if p.returncode < 0 or p.returncode > 128:
            fail(f"{where}: died of a signal ({p.returncode}); stderr: {err[-300:]}")
        elif p.returncode not in (0, 2):
            fail(f"{where}: exit {p.returncode}, expected 0 or 2; stderr: {err[-300:]}")
        if p.returncode == 2:
            # The refusal is one line, the last; progress lines of the verb ("egm export: ...") may precede it.
            lines = [line for line in err.splitlines() if line.strip()]
            progress = [line for line in lines[:-1] if line.startswith(f"egm {verb}: ")]
            if not lines or not lines[-1].startswith("egm: error: ") or len(progress) != len(lines) - 1:
                fail(f"{where}: the refusal is not one 'egm: error:' line: {err!r}")
            if "\x1b" in err:
                fail(f"{where}: raw ESC in stderr")
        if sha(db) != before:
            fail(f"{where}: the input database changed")
        new = listing(self.work) - outside_before
        allowed = os.path.relpath(out_dir, self.work) if out_dir else None
        stray = sorted(n for n in new if not (allowed and (n == allowed or n.startswith(allowed + os.sep))))
        if stray:
            fail(f"{where}: wrote outside its output: {stray[:5]}")
        if expect == "refused" and p.returncode != 2:
            fail(f"{where}: expected a refusal, got exit {p.returncode}; stdout: {out[-300:]}")
        if expect == "ok" and p.returncode != 0:
            fail(f"{where}: expected success, got: {err.strip()}")
        if isinstance(expect, str) and expect not in ("ok", "refused") and expect not in err:
            fail(f"{where}: expected '{expect}' in stderr, got: {err.strip()}")
        return p.returncode, out, err

    def every_verb(self, case, db, sweep="fixture", expect=None, verbs=None):
        """The reading verbs on db, each with its own output under WORK/CASE-out."""
        results = {}
        out_root = os.path.join(self.work, case + "-out")
        os.makedirs(out_root, exist_ok=True)
        calls = {
            "merge": ["merge", [os.path.join(out_root, "merged.sqlite"), db]],
            "status": ["status", ["--db", db]],
            "runs": ["runs", ["--db", db]],
            "analyze": ["analyze", [sweep, "--db", db]],
            # Every sweep at once: only the common rules (a result or one line, input unchanged), since
            # a sweep it cannot score is a "not measured" row where analyze refuses.
            "paper": ["paper", ["--db", db, "--format", "json"]],
            "report": ["report", [sweep, "--db", db, "--out", os.path.join(out_root, "report")]],
            "export-csv": ["export", [sweep, "--db", db, "--format", "csv", "--out", os.path.join(out_root, "csv")]],
            "export-tb": ["export", [sweep, "--db", db, "--format", "tensorboard",
                                     "--out", os.path.join(out_root, "tb")]],
        }
        for name, (verb, args) in calls.items():
            if verbs and name not in verbs:
                continue
            e = expect.get(name) if isinstance(expect, dict) else expect
            if name == "paper" and e not in ("ok", "refused"):
                e = None
            results[name] = self.run(case, verb, args, db, e, out_root, label=name)
        merging = [n for n in os.listdir(out_root) if ".merging-" in n]
        if merging:
            fail(f"{case}: merge left {merging}")
        return results


def crafted(base, work, case, sql=None, python=None):
    path = os.path.join(work, case + ".sqlite")
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    shutil.copy(base, path)
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode = DELETE")  # one file: nothing beside it changes its hash
    # Renames leave views as they are: this sqlite3 cannot parse `params` (egm's param_values is not here).
    c.execute("PRAGMA legacy_alter_table = ON")
    if sql:
        c.executescript(sql)
    if python:
        python(c)
    c.close()
    return path


def deep(n):
    return "[" * n + "]" * n


def serve_pages(r, case, db, sweep="fixture", forbid=None):
    """egm serve on db: every page of the sweep and its cells answers (an error
    page is an answer), within the limit, with the server alive and its memory
    bounded (a crafted layout once grew it to 23 GB)."""
    import re
    import urllib.error
    import urllib.parse
    import urllib.request
    log = os.path.join(r.work, case + "-serve.txt")
    with open(log, "w") as f:
        p = subprocess.Popen([r.egm, "serve", "--db", db, "--port", "0"], stdout=f, stderr=subprocess.STDOUT)
    try:
        url = None
        for _ in range(300):
            m = re.search(r"^egm serve: (http\S+) ", open(log).read(), re.M)
            if m:
                url = m.group(1)
                break
            if p.poll() is not None:
                break
            time.sleep(0.1)
        if url is None:
            text = open(log).read().strip()
            if p.poll() == 2 and len(text.splitlines()) == 1 and text.startswith("egm: error: "):
                return  # refused at start, in one line: the database is not egm's
            fail(f"{case}/serve: no URL; exit {p.poll()}; {text[-300:]}")
            return
        keys = [k for (k,) in sqlite3.connect(db).execute("SELECT key FROM cells")]
        paths = ["", "paper", "sweep/" + urllib.parse.quote(sweep, safe="")] + [
            "sweep/" + urllib.parse.quote(sweep, safe="") + "/cell/" + urllib.parse.quote(k, safe="") for k in keys]
        for path in paths:
            try:
                body = urllib.request.urlopen(url + path, timeout=LIMIT_S).read()
            except urllib.error.HTTPError as e:
                body = e.read()
            except Exception as e:  # no answer at all
                body = b""
                fail(f"{case}/serve /{path}: {e}")
            if forbid and forbid.encode() in body:
                fail(f"{case}/serve /{path}: the page carries {forbid!r} unescaped")
            if p.poll() is not None:
                fail(f"{case}/serve /{path}: the server died ({p.returncode})")
                return
        rss_kb = int(re.search(r"VmHWM:\s+(\d+)", open(f"/proc/{p.pid}/status").read()).group(1))
        if rss_kb > 1 << 20:
            fail(f"{case}/serve: peak memory {rss_kb // 1024} MB")
    finally:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=30)


def read_only_fs(a, base, r):
    """A WAL database on a read-only file system: read immutable when it has no
    write-ahead log waiting; refused, saying why, when it has one. Needs a
    read-only bind mount (root); skipped, saying so, where there is none."""
    src = os.path.join(a.work, "ro-src")
    mnt = os.path.join(a.work, "ro-mnt")
    os.makedirs(src)
    os.makedirs(mnt)
    shutil.copy(base, os.path.join(src, "clean.sqlite"))  # closed cleanly: WAL mode, no -wal, no -shm
    # A database whose last commits are still in its -wal (copied without -shm while a writer held it).
    live = os.path.join(a.work, "ro-live.sqlite")
    shutil.copy(base, live)
    c = sqlite3.connect(live, isolation_level=None)
    c.execute("PRAGMA wal_autocheckpoint = 0")
    c.execute("UPDATE cells SET updated_at = updated_at + 1")
    shutil.copy(live, os.path.join(src, "pending.sqlite"))
    shutil.copy(live + "-wal", os.path.join(src, "pending.sqlite-wal"))
    c.close()
    if subprocess.run(["mount", "--bind", src, mnt], capture_output=True).returncode != 0:
        print("SKIP read_only_fs: no bind mount here (not root?)")
        return
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", mnt], capture_output=True).returncode != 0:
            print("SKIP read_only_fs: cannot remount read-only")
            return
        clean = os.path.join(mnt, "clean.sqlite")
        out_root = os.path.join(a.work, "read_only_fs-out")
        os.makedirs(out_root)
        r.run("read_only_fs", "merge", [os.path.join(out_root, "m.sqlite"), clean], clean, "ok", out_root)
        r.run("read_only_fs", "export", ["fixture", "--db", clean, "--format", "csv",
                                         "--out", os.path.join(out_root, "csv")], clean, "ok", out_root)
        r.run("read_only_fs", "status", ["--db", clean], clean, "ok", out_root)
        pending = os.path.join(mnt, "pending.sqlite")
        r.run("read_only_fs", "status", ["--db", pending], pending, "write-ahead log", out_root)
        r.run("read_only_fs", "merge", [os.path.join(out_root, "p.sqlite"), pending], pending, "write-ahead log",
              out_root)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--egm", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    fixture_dir = os.path.join(a.work, "fixture")
    subprocess.run([a.fixture, fixture_dir], check=True, capture_output=True)
    base = os.path.join(fixture_dir, "main.sqlite")
    r = Runner(a.egm, a.work)
    want = set(a.cases)

    def case(name):
        return not want or name in want

    # The untouched fixture: every verb works (the rules above hold for good input too).
    if case("good"):
        db = crafted(base, a.work, "good")
        r.every_verb("good", db, expect="ok")
        serve_pages(r, "good", db)

    # ---- the schema runs nothing
    if case("view_endless_cte"):
        db = crafted(base, a.work, "view_endless_cte", sql="""
            ALTER TABLE sweeps RENAME TO sweeps_real;
            CREATE VIEW sweeps AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
              SELECT s.* FROM sweeps_real s, n;""")
        r.every_verb("view_endless_cte", db, expect="table sweeps is a view")
        serve_pages(r, "view_endless_cte", db)
    if case("view_param_values"):
        db = crafted(base, a.work, "view_param_values", sql=f"""
            INSERT INTO param_layouts (layout) VALUES ('{deep(100000)}');
            ALTER TABLE cells RENAME TO cells_real;
            CREATE VIEW cells AS SELECT c.* FROM cells_real c, param_values(
              (SELECT layout FROM param_layouts ORDER BY id DESC LIMIT 1), x'00000000');""")
        r.every_verb("view_param_values", db, expect="refused")
    if case("extra_view_calls_egm"):
        # A view of its own that calls egm's table-valued function on a 100,000-deep layout: never run.
        db = crafted(base, a.work, "extra_view_calls_egm", sql=f"""
            INSERT INTO param_layouts (layout) VALUES ('{deep(100000)}');
            CREATE VIEW spy AS SELECT v.* FROM param_layouts l, param_values(l.layout, x'00000000') v;""")
        r.every_verb("extra_view_calls_egm", db, expect="its view spy calls egm's own SQL function param_values")
    if case("trigger"):
        db = crafted(base, a.work, "trigger", sql="""
            CREATE TABLE log (x); CREATE TRIGGER spy AFTER INSERT ON events BEGIN INSERT INTO log VALUES (1); END;""")
        r.every_verb("trigger", db, expect="trigger")
    if case("params_view_changed"):
        db = crafted(base, a.work, "params_view_changed", sql="""
            DROP VIEW params; CREATE VIEW params AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
              SELECT 1 AS cell_id, 1 AS run_id, 1 AS step, 'm' AS module, 0 AS layer, i AS idx, 'x' AS name,
                     0.0 AS value FROM n;""")
        r.every_verb("params_view_changed", db, expect="view params is not egm's")
    if case("virtual_table"):
        db = crafted(base, a.work, "virtual_table", sql="""
            DROP TABLE looks; CREATE VIRTUAL TABLE looks USING fts5(claim);""")
        r.every_verb("virtual_table", db, expect="refused")
    if case("missing_column"):
        def drop_status(c):
            cols = [row[1] for row in c.execute("PRAGMA table_info(sweeps)") if row[1] != "status"]
            c.executescript(f"""PRAGMA foreign_keys = OFF; CREATE TABLE s2 AS SELECT {", ".join(cols)} FROM sweeps;
                DROP TABLE sweeps; ALTER TABLE s2 RENAME TO sweeps;""")
        db = crafted(base, a.work, "missing_column", python=drop_status)
        r.every_verb("missing_column", db, expect="table sweeps lacks egm's column")

    # ---- bounded, checked reading of stored values
    if case("layout_overflow"):
        db = crafted(base, a.work, "layout_overflow", sql="""
            INSERT INTO param_layouts (layout) VALUES
              ('[["mope",-1,"omega",0,9223372036854775807],["mope",-1,"sigma",0,9223372036854775807],["mope",-1,"tau",0,3]]');
            UPDATE param_snapshots SET layout_id = (SELECT max(id) FROM param_layouts), data = x'00000000';""")
        r.every_verb("layout_overflow", db, expect={"status": "ok", "runs": "ok", "merge": "table param_layouts",
                                                      "export-csv": "table param_layouts"})
        serve_pages(r, "layout_overflow", db)
    for where, sql in [
        ("deep_spec", f"UPDATE sweeps SET spec_json = '{deep(300000)}'"),
        ("deep_layout", f"UPDATE param_layouts SET layout = '{deep(300000)}' || id"),
        ("deep_grid", f"UPDATE cells SET grid_point = 0, grid_json = '{{\"a\": {deep(300000)}}}'"),
    ]:
        if case(where):
            db = crafted(base, a.work, where, sql=sql)
            r.every_verb(where, db)
            serve_pages(r, where, db)
    if case("metric_foreign_run"):
        db = crafted(base, a.work, "metric_foreign_run",
                     sql="UPDATE metrics SET run_id = 99999 WHERE (cell_id, split, step) IN "
                         "(SELECT cell_id, split, step FROM metrics LIMIT 11)")
        r.every_verb("metric_foreign_run", db, expect={"merge": "names no row of runs"}, verbs=["merge"])
    if case("text_nan"):
        db = crafted(base, a.work, "text_nan",
                     sql="UPDATE cells SET final_val = 'NaN' WHERE id = (SELECT min(id) FROM cells WHERE variant = 'base')")
        res = r.every_verb("text_nan", db, expect={"merge": "column final_val", "analyze": "ok", "status": "ok",
                                                     "runs": "ok", "report": "ok", "export-csv": "refused"})
        out = res.get("analyze", (None, "", ""))[1]
        if "read as missing" not in out:
            fail("text_nan/analyze: no note that a value was read as missing")
    if case("real_in_integer"):
        db = crafted(base, a.work, "real_in_integer",
                     sql="UPDATE metrics SET step = 1e300 WHERE (cell_id, split, step) IN "
                         "(SELECT cell_id, split, step FROM metrics LIMIT 1)")
        r.every_verb("real_in_integer", db, expect={"merge": "column step", "export-csv": "column step"},
                     verbs=["merge", "export-csv"])
    if case("text_in_real"):
        db = crafted(base, a.work, "text_in_real",
                     sql="UPDATE metrics SET loss = 'abc' WHERE (cell_id, split, step) IN "
                         "(SELECT cell_id, split, step FROM metrics LIMIT 1)")
        r.every_verb("text_in_real", db, expect={"merge": "column loss", "export-csv": "column loss",
                                                  "export-tb": "not a number"},
                     verbs=["merge", "export-csv", "export-tb"])
    if case("huge_seed_union"):
        def two_sweeps(c):
            spec = c.execute("SELECT spec_json FROM sweeps WHERE name = 'fixture'").fetchone()[0]
            import json
            s = json.loads(spec)
            s["seeds"] = list(range(70000))
            c.execute("UPDATE sweeps SET spec_json = ?, spec_hash = 'a' WHERE name = 'fixture'", (json.dumps(s),))
        db1 = crafted(base, a.work, "huge_seed_union", python=two_sweeps)

        def other(c):
            spec = c.execute("SELECT spec_json FROM sweeps WHERE name = 'fixture'").fetchone()[0]
            import json
            s = json.loads(spec)
            s["seeds"] = list(range(70000, 140000))
            c.execute("UPDATE sweeps SET spec_json = ?, spec_hash = 'b' WHERE name = 'fixture'", (json.dumps(s),))
        db2 = crafted(base, a.work, "huge_seed_union2", python=other)
        out_root = os.path.join(a.work, "huge_seed_union-out")
        os.makedirs(out_root)
        r.run("huge_seed_union", "merge", [os.path.join(out_root, "m.sqlite"), db1, db2], db1,
              "more than egm reads", out_root)

    # ---- writes stay under --out
    if case("tensorboard_names"):
        db = crafted(base, a.work, "tensorboard_names", sql="""
            UPDATE cells SET key = '../../escape' WHERE id = 1; UPDATE cells SET key = '/tmp/egm-hostile-abs' WHERE id = 2;
            UPDATE cells SET key = '.' WHERE id = 3; UPDATE cells SET key = '' WHERE id = 4;""")
        out = os.path.join(a.work, "tensorboard_names-out", "tb")
        status, _, _ = r.every_verb("tensorboard_names", db, verbs=["export-tb"], expect="ok")["export-tb"]
        if os.path.exists("/tmp/egm-hostile-abs"):
            fail("tensorboard_names: wrote /tmp/egm-hostile-abs")
            shutil.rmtree("/tmp/egm-hostile-abs", ignore_errors=True)
        if status == 0:
            n_cells = sqlite3.connect(db).execute(
                "SELECT count(DISTINCT c.id) FROM cells c JOIN metrics m ON m.cell_id = c.id "
                "JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'fixture'").fetchone()[0]
            files = [f for f in listing(out) if "tfevents" in f]
            if len(files) != n_cells:
                fail(f"tensorboard_names: {len(files)} event files for {n_cells} cells: {sorted(files)}")
    if case("out_symlink"):
        db = crafted(base, a.work, "out_symlink")
        out_root = os.path.join(a.work, "out_symlink-out")
        os.makedirs(out_root)
        target = os.path.join(out_root, "target")
        os.makedirs(target)
        os.chmod(target, 0o2775)
        link = os.path.join(out_root, "link")
        os.symlink(target, link)
        r.run("out_symlink", "export", ["fixture", "--db", db, "--format", "csv", "--out", link], db, "ok", out_root)
        if not os.path.islink(link):
            fail("out_symlink: --out is no longer a symbolic link")
        if not os.path.exists(os.path.join(target, "cells.csv")):
            fail("out_symlink: nothing written into the link's target")
        if stat.S_IMODE(os.stat(target).st_mode) != 0o2775:
            fail(f"out_symlink: the target's mode became {oct(stat.S_IMODE(os.stat(target).st_mode))}")
        hidden = [n for n in os.listdir(target) if n.startswith(".")]
        if hidden:
            fail(f"out_symlink: left {hidden}")

    # ---- terminal escapes
    if case("escapes"):
        db = crafted(base, a.work, "escapes", sql="""
            UPDATE sweeps SET name = 'fix' || char(27) || ']0;owned' || char(7) || char(27) || '[2J' WHERE name = 'fixture';
            UPDATE runs SET host = 'h' || char(27) || '[31m' || char(155) || 'x';""")
        name = "fix\x1b]0;owned\x07\x1b[2J"
        res = r.every_verb("escapes", db, sweep=name, verbs=["status", "runs", "analyze", "merge"], expect="ok")
        for verb, (_, out, err) in res.items():
            if "\x1b" in out or "\x07" in out or "\x9b" in out:
                fail(f"escapes/{verb}: raw control bytes on stdout")
        _, out, _ = r.run("escapes", "query", ["SELECT name FROM sweeps", "--db", db], db, "ok")
        if "\x1b" in out:
            fail("escapes/query: raw ESC in the table form")

    # ---- HTML: every name-like column carries markup; no page shows it raw
    if case("html"):
        evil = "<script>x</script>\"&'"
        db = crafted(base, a.work, "html", python=lambda c: (
            c.execute("UPDATE sweeps SET name = ? WHERE name = 'fixture'", ("fx" + evil,)),
            c.execute("UPDATE cells SET key = key || ?, last_error = ?", (evil, evil)),
            c.execute("UPDATE runs SET host = ?, error = ?, device = 'cpu'", (evil, evil)),
            c.execute("UPDATE events SET message = ?", (evil,))))
        serve_pages(r, "html", db, sweep="fx" + evil, forbid="<script>")

    # ---- clear words for good databases that cannot be read now
    if case("hot_journal"):
        db = crafted(base, a.work, "hot_journal")
        # A one-page cache spills the transaction's pages into the file: the journal is hot, the file half-written.
        code = ("import sqlite3, os; c = sqlite3.connect(%r, isolation_level=None); c.execute('PRAGMA cache_size = 1'); "
                "c.execute('BEGIN'); "
                "c.execute('UPDATE cells SET updated_at = updated_at + 1'); c.execute('DELETE FROM metrics'); "
                "os._exit(0)") % db
        subprocess.run([sys.executable, "-c", code], check=True)
        if not os.path.exists(db + "-journal"):
            fail("hot_journal: no journal left to test with")
        else:
            r.every_verb("hot_journal", db, expect="hot journal", verbs=["merge", "status"])

    if case("locked"):
        # A writer holding its lock past egm's 10 s busy timeout: "locked", never "not an egm database".
        db = crafted(base, a.work, "locked")
        holder = subprocess.Popen([sys.executable, "-c",
                                   "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
                                   "c.execute('BEGIN EXCLUSIVE'); c.execute('UPDATE cells SET updated_at = updated_at'); "
                                   "print('locked', flush=True); time.sleep(40)", db], stdout=subprocess.PIPE)
        holder.stdout.readline()
        try:
            r.every_verb("locked", db, expect="locked by another process", verbs=["merge", "status"])
        finally:
            holder.kill()
            holder.wait()

    if case("read_only_fs"):
        read_only_fs(a, base, r)

    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
