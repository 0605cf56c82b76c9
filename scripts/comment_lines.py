#!/usr/bin/env python3
"""Comment lines per code line in egm's .cpp files, and the .cpp files that open without a comment.

Usage: scripts/comment_lines.py [--list] [PATH...]   (PATHs default to src/, coordinator/ and workers/)

A comment line is a line whose first non-blank characters are // or that lies
in a /* */ block; a code line is any other non-blank line (a code line with a
trailing // comment counts as code, and is counted apart). --list names the
files whose first non-blank line is not a comment.
"""
import pathlib
import re
import sys


def main():
    args = sys.argv[1:]
    listing = "--list" in args
    args = [a for a in args if a != "--list"]
    root = pathlib.Path(__file__).resolve().parent.parent
    roots = [pathlib.Path(a) for a in args] or [root / d for d in ("src", "coordinator", "workers")]
    files = sorted(f for r in roots for f in (r.rglob("*.cpp") if r.is_dir() else [r]))
    comment = code = trailing = 0
    no_opening = []
    for f in files:
        lines = f.read_text(errors="replace").split("\n")
        first = next((l.strip() for l in lines if l.strip()), "")
        if not first.startswith(("//", "/*")):
            no_opening.append(f)
        in_block = False
        for line in lines:
            s = line.strip()
            if not s:
                continue
            if in_block:
                comment += 1
                in_block = "*/" not in s
            elif s.startswith("//"):
                comment += 1
            elif s.startswith("/*"):
                comment += 1
                in_block = "*/" not in s
            else:
                code += 1
                trailing += re.search(r'(?<![:"])//', s) is not None
    print(f"{len(files)} .cpp files: {comment} comment lines, {code} code lines: {comment / max(code, 1):.3f} comment "
          f"lines per code line ({(comment + trailing) / max(code, 1):.3f} counting the {trailing} code lines with a "
          f"trailing comment); {len(no_opening)} open without a comment")
    if listing:
        for f in no_opening:
            print(f"  {f}")


if __name__ == "__main__":
    main()
