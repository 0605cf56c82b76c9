"""Parquet files as pyarrow reads them back, as text, one OUT_DIR/TABLE.txt per
file: the Arrow schema with each field's type, the file's egm.* key-value
metadata (egm.git_commit, when it is this egm's commit, as "egm-commit") and
every row, floats as Python's shortest round trip.
  dump_parquet.py EGM_COMMIT OUT_DIR FILE.parquet..."""
import os
import sys

import pyarrow.parquet as pq

commit, out_dir = sys.argv[1], sys.argv[2]
os.makedirs(out_dir, exist_ok=True)
for path in sys.argv[3:]:
    table = pq.read_table(path)
    name = os.path.basename(path).removesuffix(".parquet")
    with open(os.path.join(out_dir, name + ".txt"), "w") as out:
        out.write("schema:\n")
        for field in table.schema:
            out.write(f"  {field.name}: {field.type}{'' if field.nullable else ' not null'}\n")
        out.write("metadata:\n")
        for key, value in sorted((table.schema.metadata or {}).items()):
            key, value = key.decode(), value.decode()
            if key == "ARROW:schema":
                continue  # the schema above, serialised
            if key == "egm.git_commit" and value == commit:
                value = "egm-commit"
            out.write(f"  {key}: {value}\n")
        out.write(f"rows: {table.num_rows}\n")
        for row in table.to_pylist():
            out.write(repr(row) + "\n")
