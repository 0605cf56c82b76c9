"""egm export and the database read by the tools researchers use, as they use them.

  test_export_readers.py CHECK --egm build/bin/egm --fixture build/tests/export/egm_make_export_fixture
                         --work DIR [--readme README.md]
CHECK: parquet (pyarrow reads every table with its column types; values against the
database read with Python's own sqlite3, the learned parameters unpacked here from
their BLOBs by an independent decoder), tensorboard (TensorBoard's own event reader),
csv, refusals (bad input: one line, exit 2, nothing written), notebook (the README's
"Notebooks" snippets run as written, with the database and sweep substituted, and
their frames have the right types). Exit status 0 = every check passed.
"""
import argparse
import json
import math
import os
import pathlib
import re
import shutil
import sqlite3
import struct
import subprocess
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def close(a, b, tol=1e-12):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(b))


def run_egm(args, egm, expect=0):
    p = subprocess.run([egm] + args, capture_output=True, text=True)
    check(p.returncode == expect, f"egm {' '.join(args)}: exit {p.returncode}, expected {expect}: {p.stderr}")
    return p


def db_rows(db, sql, params=()):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute(sql, params)]
    con.close()
    return rows


def unpack_snapshot(layout_json, data):
    """The packed parameters (schemas/README.md, param_snapshots): the layout's
    [module, layer, name, first_idx, count] series in order; 4-byte floats when
    data holds one per value, else 8-byte doubles, little-endian; NaN = NULL."""
    layout = json.loads(layout_json)
    n = sum(s[4] for s in layout)
    width = len(data) // n
    check(width in (4, 8) and width * n == len(data), f"snapshot of {len(data)} bytes for {n} values")
    values = struct.unpack("<" + ("f" if width == 4 else "d") * n, data)
    out, k = [], 0
    for module, layer, name, first, count in layout:
        for i in range(count):
            v = values[k]
            out.append((module, layer, first + i, name, None if math.isnan(v) else v))
            k += 1
    return out


def expected_params(db, sweep):
    rows = []
    for s in db_rows(db, "SELECT s.cell_id, s.run_id, s.step, l.layout, s.data FROM param_snapshots s "
                         "JOIN param_layouts l ON l.id = s.layout_id JOIN cells c ON c.id = s.cell_id "
                         "JOIN sweeps w ON w.id = c.sweep_id WHERE w.name = ? ORDER BY s.cell_id, s.step", (sweep,)):
        for module, layer, idx, name, value in unpack_snapshot(s["layout"], s["data"]):
            rows.append((s["cell_id"], s["run_id"], s["step"], module, layer, idx, name, value))
    return rows


def check_parquet(a, db):
    import pyarrow as pa
    import pyarrow.parquet as pq
    out = a.work / "parquet"
    run_egm(["export", "fx", "--format", "parquet", "--out", str(out), "--db", str(db), "-q"], a.egm)
    files = sorted(p.name for p in out.iterdir())
    check(files == ["cells.parquet", "looks.parquet", "metrics.parquet", "params.parquet", "runs.parquet", "sweep.parquet"], f"files {files}")
    ts = pa.timestamp("us", tz="UTC")
    want_types = {
        "cells": {"cell_id": pa.int64(), "seed": pa.int64(), "grid_point": pa.int64(), "key": pa.string(),
                  "final_val": pa.float64(), "final_step": pa.int64(), "updated_at": ts},
        "runs": {"run_id": pa.int64(), "threads": pa.int64(), "gpu_name": pa.string(), "started_at": ts,
                 "ended_at": ts, "duration_s": pa.float64(), "resumed_from_step": pa.int64()},
        "metrics": {"cell_id": pa.int64(), "step": pa.int64(), "split": pa.string(), "loss": pa.float64(), "time": ts},
        "params": {"cell_id": pa.int64(), "layer": pa.int64(), "idx": pa.int64(), "name": pa.string(),
                   "value": pa.float64()},
        "sweep": {"sweep_id": pa.int64(), "created_at": ts, "spec_json": pa.string()},
        "looks": {"look": pa.int64(), "time": ts, "claim": pa.string(), "seeds": pa.int64(), "lower": pa.float64(),
                  "settled": pa.int64(), "next": pa.string()},
    }
    tables = {}
    for name, cols in want_types.items():
        t = pq.read_table(out / f"{name}.parquet")
        tables[name] = t
        for col, typ in cols.items():
            check(t.schema.field(col).type == typ, f"{name}.{col}: {t.schema.field(col).type}, expected {typ}")
        md = t.schema.metadata or {}
        check(md.get(b"egm.sweep") == b"fx" and md.get(b"egm.table") == name.encode(), f"{name} metadata {md}")

    def epoch(v):
        return None if v is None else v.timestamp()

    cells = tables["cells"].to_pylist()
    want = db_rows(db, "SELECT c.* FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'fx' ORDER BY position")
    check(len(cells) == len(want) == 8, f"cells: {len(cells)} rows, database {len(want)}")
    for got, w in zip(cells, want):
        for col in ["key", "variant", "seed", "grid_point", "grid_json", "status", "attempts", "failures", "final_step",
                    "last_error", "config_json"]:
            check(got[col] == w[col], f"cells {w['key']}.{col}: {got[col]!r} != {w[col]!r}")
        for col in ["final_val", "best_val", "full_val", "ar_val", "ar_ref_val"]:
            check(close(got[col], w[col]), f"cells {w['key']}.{col}: {got[col]} != {w[col]}")
        check(close(epoch(got["updated_at"]), w["updated_at"], 1e-15), f"cells {w['key']}.updated_at")
        check(got["cell_id"] == w["id"], f"cells {w['key']}.cell_id")

    runs = tables["runs"].to_pylist()
    want = db_rows(db, "SELECT r.* FROM runs r JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON s.id = c.sweep_id "
                       "WHERE s.name = 'fx' ORDER BY c.position, r.attempt")
    check(len(runs) == len(want) == 5, f"runs: {len(runs)} rows, database {len(want)}")
    for got, w in zip(runs, want):
        for col in ["cell_id", "attempt", "status", "host", "device", "gpu_name", "world_size", "threads", "backend",
                    "resumed_from_step", "error"]:
            check(got[col] == w[col], f"runs {w['id']}.{col}: {got[col]!r} != {w[col]!r}")
        check(close(epoch(got["started_at"]), w["started_at"], 1e-15), f"runs {w['id']}.started_at")
        check(close(epoch(got["ended_at"]), w["ended_at"], 1e-15), f"runs {w['id']}.ended_at")
        dur = None if w["ended_at"] is None else w["ended_at"] - w["started_at"]
        check(close(got["duration_s"], dur), f"runs {w['id']}.duration_s {got['duration_s']} != {dur}")

    metrics = tables["metrics"].to_pylist()
    want = db_rows(db, "SELECT m.* FROM metrics m JOIN cells c ON c.id = m.cell_id JOIN sweeps s ON s.id = c.sweep_id "
                       "WHERE s.name = 'fx' ORDER BY m.cell_id, m.split, m.step")
    check(len(metrics) == len(want) == 12, f"metrics: {len(metrics)} rows, database {len(want)}")
    for got, w in zip(metrics, want):
        for col in ["cell_id", "run_id", "split", "step"]:
            check(got[col] == w[col], f"metrics {col}: {got[col]!r} != {w[col]!r}")
        for col in ["loss", "lr", "tokens_per_s"]:
            check(close(got[col], w[col]), f"metrics {w['cell_id']}/{w['split']}/{w['step']}.{col}")
        check(close(epoch(got["time"]), w["time"], 1e-15), "metrics time")
    check(any(m["loss"] is None for m in metrics), "a NULL (NaN) loss stays null")

    looks = tables["looks"].to_pylist()
    want_looks = db_rows(db, "SELECT l.* FROM looks l JOIN sweeps s ON s.id = l.sweep_id WHERE s.name = 'fx' "
                             "ORDER BY l.look, l.id")
    check(len(looks) == len(want_looks) == 2, f"looks: {len(looks)} rows, {len(want_looks)} in the database")
    for got, w in zip(looks, want_looks):
        check(all(got[c] == w[c] for c in ["look", "claim", "seeds", "estimate", "lower", "upper", "decision", "next"])
              and close(epoch(got["time"]), w["time"], 1e-15), f"look {got} != {w}")
    params = [tuple(r[c] for c in ["cell_id", "run_id", "step", "module", "layer", "idx", "name", "value"])
              for r in tables["params"].to_pylist()]
    want = sorted(expected_params(db, "fx"), key=lambda r: (r[0], r[2], r[3], r[4], r[6], r[5]))
    check(len(params) == len(want) == 19, f"params: {len(params)} rows, decoded {len(want)}")
    for got, w in zip(params, want):
        check(got[:7] == w[:7] and close(got[7], w[7], 0), f"params {got} != {w}")
    check(any(r[6] == "alpha" and r[7] == 0.1 for r in params), "the double 0.1 survives exactly")


def check_tensorboard(a, db):
    from tensorboard.backend.event_processing import event_accumulator, event_file_loader
    out = a.work / "tb"
    run_egm(["export", "fx", "--format", "tensorboard", "--out", str(out), "--db", str(db), "-q"], a.egm)
    runs = sorted(p.name for p in out.iterdir())
    check(runs == ["base-s1-g0", "mope-s1-g0"], f"runs {runs}")
    tag_of = {"train": "train/loss", "eval_train": "eval/train_loss", "eval_val": "eval/val_loss",
              "val_full": "final/val_full", "val_ar": "final/val_ar", "val_ar_ref": "final/val_ar_ref"}
    for run in runs:
        files = list((out / run).iterdir())
        check(len(files) == 1 and "tfevents" in files[0].name, f"{run}: {files}")
        # Every record read back through TensorBoard's loader (it checks both CRCs and stops at a bad one).
        events = list(event_file_loader.EventFileLoader(str(files[0])).Load())
        check(events and events[0].file_version == "brain.Event:2", f"{run}: first event {events[:1]}")
        acc = event_accumulator.EventAccumulator(str(out / run))
        acc.Reload()
        cell = db_rows(db, "SELECT * FROM cells WHERE key = ?", (run,))[0]
        metrics = db_rows(db, "SELECT * FROM metrics WHERE cell_id = ? ORDER BY split, step", (cell["id"],))
        want = {}
        for m in metrics:
            loss = float("nan") if m["loss"] is None else m["loss"]
            want.setdefault(tag_of[m["split"]], []).append((m["step"], m["time"], loss))
            if m["split"] == "train":
                want.setdefault("train/lr", []).append((m["step"], m["time"], m["lr"]))
                want.setdefault("train/tokens_per_s", []).append((m["step"], m["time"], m["tokens_per_s"]))
        want["final/final_val"] = [(cell["final_step"], cell["updated_at"], cell["final_val"])]
        want["final/best_val"] = [(cell["final_step"], cell["updated_at"], cell["best_val"])]
        tags = sorted(acc.Tags()["scalars"])
        check(tags == sorted(want), f"{run}: tags {tags}, expected {sorted(want)}")
        check(len(events) - 1 == sum(1 for m in metrics) + 2, f"{run}: {len(events) - 1} events")
        for tag, points in want.items():
            if tag not in tags:
                continue
            got = [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
            check(len(got) == len(points), f"{run} {tag}: {len(got)} points, expected {len(points)}")
            for (gs, gt, gv), (ws, wt, wv) in zip(got, points):
                f32 = struct.unpack("<f", struct.pack("<f", wv))[0]  # simple_value is a float
                check(gs == ws and close(gt, wt, 1e-15) and close(gv, f32, 0), f"{run} {tag}: {(gs, gt, gv)} != {(ws, wt, f32)}")


def check_csv(a, db):
    import pandas as pd
    out = a.work / "csv"
    run_egm(["export", "fx", "--format", "csv", "--out", str(out), "--db", str(db), "-q"], a.egm)
    cells = pd.read_csv(out / "cells.csv")
    want = db_rows(db, "SELECT c.* FROM cells c JOIN sweeps s ON s.id = c.sweep_id WHERE s.name = 'fx' ORDER BY position")
    check(list(cells["key"]) == [w["key"] for w in want], "csv cells keys")
    check(list(cells["last_error"].fillna("")) == [w["last_error"] or "" for w in want], "csv last_error (quoted)")
    runs = pd.read_csv(out / "runs.csv", parse_dates=["started_at", "ended_at"])
    check(str(runs["started_at"].dtype).startswith("datetime64") and str(runs["started_at"].dt.tz) == "UTC",
          f"ISO 8601 times parse as UTC datetimes: {runs['started_at'].dtype}")
    w = db_rows(db, "SELECT started_at FROM runs ORDER BY id LIMIT 1")[0]
    check(abs(runs["started_at"].iloc[0].timestamp() - w["started_at"]) < 1e-6, "csv started_at value")
    params = pd.read_csv(out / "params.csv")
    check(len(params) == 19, f"csv params rows {len(params)}")


def check_refusals(a, db):
    (a.work / "full").mkdir(parents=True, exist_ok=True)
    (a.work / "full" / "x").write_text("x")
    (a.work / "garbage.sqlite").write_text("not a database, only text\n" * 100)
    newer = a.work / "newer.sqlite"
    con = sqlite3.connect(newer)
    con.execute("CREATE TABLE t (x)")
    con.execute("PRAGMA user_version = 999")
    con.commit()
    con.close()

    def listing():
        return sorted(str(p) for p in a.work.rglob("*") if not str(p).endswith(("-wal", "-shm")))

    before = listing()
    cases = [
        (["export", "fx", "--out", str(a.work / "full"), "--db", str(db)], "exists and is not empty"),
        (["export", "fx", "--format", "xlsx", "--out", str(a.work / "new"), "--db", str(db)], "unknown export format"),
        (["export", "nope", "--out", str(a.work / "new"), "--db", str(db)], "no sweep named 'nope'"),
        (["export", "fx", "--out", str(a.work / "new"), "--db", str(a.work / "garbage.sqlite")], "garbage.sqlite"),
        (["export", "fx", "--out", str(a.work / "new"), "--db", str(newer)], "newer than this egm knows"),
        (["export", "fx", "--out", str(a.work / "new"), "--db", str(a.work / "missing.sqlite")], "missing.sqlite"),
    ]
    for args, needle in cases:
        p = run_egm(args, a.egm, expect=2)
        lines = p.stderr.splitlines()
        check(len(lines) == 1 and lines[0].startswith("egm: error:") and needle in lines[0],
              f"{needle}: stderr {p.stderr!r}")
        check(p.stdout == "", f"{needle}: stdout {p.stdout!r}")
        check(listing() == before, f"{needle}: something was written: {sorted(set(listing()) - set(before))}")
    # Without the Parquet module next to egm: one line, exit 2; CSV still works.
    alone = a.work / "alone"
    alone.mkdir()
    shutil.copy(a.egm, alone / "egm")
    before = listing()
    p = run_egm(["export", "fx", "--out", str(a.work / "new"), "--db", str(db)], str(alone / "egm"), expect=2)
    check(len(p.stderr.splitlines()) == 1 and "egm-parquet.so" in p.stderr, f"no module: {p.stderr!r}")
    check(listing() == before, "no module: nothing written")
    run_egm(["export", "fx", "--format", "csv", "--out", str(a.work / "alone_csv"), "--db", str(db), "-q"],
            str(alone / "egm"))


def readme_blocks(readme):
    """The ```python blocks of the README's "Notebooks" section, in order."""
    text = readme.read_text()
    section = text.split("\n## Notebooks", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def check_notebook(a, db):
    # The snippets as a reader runs them, in a folder holding the database and
    # an export of it; only the lines naming the database and the sweep are set.
    nb = a.work / "notebook"
    (nb / "runs").mkdir(parents=True)
    shutil.copy(db, nb / "runs" / "egm.sqlite")
    run_egm(["export", "fx", "--format", "parquet", "--out", str(nb / "export"), "--db", str(nb / "runs" / "egm.sqlite"), "-q"], a.egm)
    # DuckDB installs extensions under ~/.duckdb: a home of the test's own, empty, so
    # the README's DuckDB block must install the scanner itself, from its pinned
    # wheel, offline, as a reader's notebook would.
    os.environ["HOME"] = str(nb)
    os.chdir(nb)
    blocks = readme_blocks(a.readme)
    check(len(blocks) >= 4, f"README Notebooks: {len(blocks)} python blocks")
    ns = {}
    for i, block in enumerate(blocks):
        code = re.sub(r'^SWEEP = ".*"', 'SWEEP = "fx"', block, flags=re.M)
        try:
            exec(compile(code, f"README.md Notebooks block {i + 1}", "exec"), ns)
        except Exception as e:  # a snippet that does not run is a failure, reported with its block
            check(False, f"README block {i + 1} raised {type(e).__name__}: {e}")
    import pandas as pd
    import polars as pl
    want_cells = db_rows(db, "SELECT * FROM cell_results WHERE sweep = 'fx' AND status = 'done' ORDER BY cell_id")
    if "cells" in ns:
        c = ns["cells"]
        check(str(c["seed"].dtype) == "Int64" and str(c["final_val"].dtype) == "Float64"
              and str(c["grid_point"].dtype) == "Int64", f"pandas cells dtypes {dict(c.dtypes)}")
        check(sorted(c["final_val"]) == sorted(w["final_val"] for w in want_cells), "pandas cells values")
    for name in ["curves"]:
        check(name in ns and str(ns[name]["time"].dtype).startswith("datetime64"), f"pandas {name}.time is a datetime")
    if "pl_cells" in ns:
        s = ns["pl_cells"].schema
        check(s["seed"] == pl.Int64 and s["final_val"] == pl.Float64 and s["grid_point"] == pl.Int64,
              f"polars cells schema {s}")
    check("compute" in ns and ns["compute"].schema["gpu_seconds"] == pl.Float64
          and ns["compute"].schema["started_at"].base_type() == pl.Datetime, f"polars compute {ns.get('compute')}")
    if "by_variant" in ns:
        rel = ns["by_variant"].fetchall()
        want = {}
        for w in want_cells:
            want.setdefault(w["variant"], []).append(w["final_val"])
        check(sorted((v, n) for v, n, _ in rel) == sorted((v, len(x)) for v, x in want.items()), f"duckdb {rel}")
    check("duck_types" in ns and ns["duck_types"]["final_val"] == "DOUBLE" and ns["duck_types"]["seed"] == "BIGINT",
          f"duckdb types {ns.get('duck_types')}")
    # A sweep without a grid: grid_point and grid_json are NULL in every row, and keep their types.
    other = {}
    for i, block in enumerate(blocks[:2]):
        code = re.sub(r'^SWEEP = ".*"', 'SWEEP = "other"', block, flags=re.M)
        try:
            exec(compile(code, f"README.md Notebooks block {i + 1} (sweep other)", "exec"), other)
        except Exception as e:
            check(False, f"README block {i + 1} on a sweep without a grid raised {type(e).__name__}: {e}")
    if "cells" in other and "pl_cells" in other:
        c, s = other["cells"], other["pl_cells"].schema
        check(len(c) == 1 and c["grid_point"].isna().all(), f"pandas cells of other: {len(c)} rows")
        check(str(c["grid_point"].dtype) == "Int64" and str(c["grid_json"].dtype) == "string",
              f"pandas all-NULL columns typed {dict(c.dtypes)}")
        check(s["grid_point"] == pl.Int64 and s["grid_json"] == pl.String and s["final_val"] == pl.Float64,
              f"polars all-NULL columns typed {s}")
    if "params" in ns:
        p = ns["params"]
        check(len(p) == 19 and str(p["value"].dtype) == "float64" and str(p["layer"].dtype) == "int64",
              f"parquet params {p.dtypes.to_dict()}")
    else:
        check(False, "README: no params frame read from the Parquet export")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["parquet", "tensorboard", "csv", "refusals", "notebook"])
    ap.add_argument("--egm", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--readme")
    a = ap.parse_args()
    a.work = pathlib.Path(a.work).resolve()
    a.egm = str(pathlib.Path(a.egm).resolve())
    if a.readme:
        a.readme = pathlib.Path(a.readme).resolve()
    shutil.rmtree(a.work, ignore_errors=True)
    a.work.mkdir(parents=True)
    db = a.work / "fx.sqlite"
    subprocess.run([a.fixture, str(db)], check=True)
    {"parquet": check_parquet, "tensorboard": check_tensorboard, "csv": check_csv, "refusals": check_refusals,
     "notebook": check_notebook}[a.check](a, db)
    print(f"{a.check}: {'all passed' if not FAILURES else f'{len(FAILURES)} failed'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
