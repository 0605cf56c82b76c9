"""An SQLite database as text, every byte of its content visible: the schema
version, each object's SQL, then each table's rows in rowid (or primary key) order (floats as
Python's shortest round trip, so a changed last bit shows; BLOBs as hex).
  dump_db.py DB"""
import sqlite3
import sys

con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
out = sys.stdout
out.write(f"PRAGMA user_version = {con.execute('PRAGMA user_version').fetchone()[0]}\n")
objects = con.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name").fetchall()
for kind, name, sql in objects:
    out.write(f"\n-- {kind} {name}\n{sql};\n")


def text(v):
    if isinstance(v, bytes):
        return "x'" + v.hex() + "'"
    return repr(v)


for kind, name, sql in objects:
    if kind != "table" or name.startswith("sqlite_"):
        continue
    # A WITHOUT ROWID table is read in its primary key's order.
    order = "" if "WITHOUT ROWID" in sql.upper() else " ORDER BY rowid"
    cur = con.execute(f'SELECT * FROM "{name}"{order}')
    cols = [d[0] for d in cur.description]
    out.write(f"\n-- rows of {name} ({', '.join(cols)})\n")
    for row in cur:
        out.write("(" + ", ".join(text(v) for v in row) + ")\n")
