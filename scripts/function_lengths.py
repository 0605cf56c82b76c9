#!/usr/bin/env python3
"""The length of every C++ function in egm's sources, by a brace counter.

Usage: scripts/function_lengths.py [--over N] [--check N] [--allow NAME]... [PATH...]

A function's length is its physical lines, from the first line of its
declaration (template line included) to its closing brace, blank and comment
lines included. Lambdas and local classes count toward the function they sit
in; a lambda or initializer at namespace or class scope counts as a function
of its own. PATHs default to src/, coordinator/ and workers/ of the checkout.

  --over N    list the functions of N lines or more, longest first (default 80)
  --check N   exit 1 when a function of N lines or more is found that --allow
              does not name (the test tests/util/function_lengths runs this)

The counter reads comments, string, character and raw string literals and
preprocessor lines as such, so braces inside them do not count; a file whose
braces do not balance is reported and makes --check fail.
"""

import argparse
import pathlib
import re
import sys

QUALIFIERS = {"const", "noexcept", "override", "final", "mutable", "try", "volatile", "&", "&&"}
CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "return"}


def strip(text):
    """The text with comments, literals and preprocessor lines blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + '"')
            i = end
            continue
        if c == "'" and i > 0 and text[i - 1].isalnum():
            # A digit separator (1'024), not a character literal.
            j = i - 1
            while j >= 0 and (text[j].isalnum() or text[j] in "'."):
                j -= 1
            if text[j + 1].isdigit():
                out.append(" ")
                i += 1
                continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * max(0, j - i - 1) + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def last_token(header):
    h = header.rstrip()
    if not h:
        return ""
    if h.endswith("&&"):
        return "&&"
    if h[-1] in ")}&":
        return h[-1]
    m = re.search(r"[A-Za-z_][A-Za-z_0-9]*$", h)
    return m.group(0) if m else h[-1]


def without_template(header):
    h = header.lstrip()
    while h.startswith("template"):
        depth, k = 0, h.find("<")
        if k < 0:
            break
        for k in range(k, len(h)):
            depth += {"<": 1, ">": -1}.get(h[k], 0)
            if depth == 0:
                break
        h = h[k + 1:].lstrip()
    return h


def kind_of(header):
    """namespace, class, function or init: what a brace opened after `header` (at namespace or class scope) is."""
    h = without_template(header)
    first = re.match(r"[A-Za-z_]+", h)
    first = first.group(0) if first else ""
    if first == "namespace" or (first == "extern" and '"' in h):
        return "namespace"
    tok = last_token(h)
    ctor_init = re.search(r"\)\s*(?:noexcept\s*)?:(?!:)", h) is not None
    if tok == ")" or tok in QUALIFIERS or re.search(r"\)\s*(?:const\s*)?(?:noexcept\s*)?->", h):
        if first in ("class", "struct", "union", "enum") and not re.search(r"\)\s*$", h.split("{")[0]):
            return "class"
        return "function"
    if tok == "}" and ctor_init:
        return "function"
    if first in ("class", "struct", "union", "enum") and "=" not in h:
        return "class"
    return "init"


def function_name(header):
    h = without_template(header)
    depth, cut = 0, len(h)
    for k, ch in enumerate(h):  # the name is what precedes the first top-level '('
        if ch == "(" and depth == 0:
            cut = k
            break
        depth += {"<": 1, ">": -1}.get(ch, 0)
    m = re.search(r"((?:[A-Za-z_~][A-Za-z_0-9]*(?:<[^()]*?>)?::)*(?:operator\s*\S+|~?[A-Za-z_][A-Za-z_0-9]*))\s*$",
                  h[:cut].rstrip())
    return m.group(1) if m else h[:cut].strip().split("\n")[-1][-40:]


def functions(path):
    """(name, first line, last line) of each function in the file, and whether its braces balance."""
    text = strip(path.read_text(encoding="utf-8", errors="replace"))
    found = []
    stack = []  # one entry per open brace: namespace, class, function, init or block
    header, header_line = "", None
    line = 1
    fn_start = None
    for ch in text:
        if ch == "\n":
            line += 1
            if header_line is not None:
                header += " "
            continue
        inside = any(s in ("function",) for s in stack)
        if ch == "{":
            if inside:
                stack.append("block")
                continue
            kind = kind_of(header)
            if kind == "function":
                fn_start = (function_name(header), header_line or line)
            stack.append(kind)
            if kind != "init":
                header, header_line = "", None
            else:
                header += ch
            continue
        if ch == "}":
            if not stack:
                return found, False
            kind = stack.pop()
            if kind == "function":
                found.append((fn_start[0], fn_start[1], line))
                header, header_line = "", None
            elif kind == "init":
                header += ch
            elif kind in ("namespace", "class"):
                header, header_line = "", None
            continue
        if inside:
            continue
        if ch == ";" and (not stack or stack[-1] != "init"):
            header, header_line = "", None
            continue
        if header_line is None:
            if ch.isspace():
                continue
            header_line = line
        header += ch
        # access specifiers end a header of their own (public: ...)
        if ch == ":" and re.fullmatch(r"\s*(public|private|protected)\s*:", header):
            header, header_line = "", None
    return found, not stack


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--over", type=int, default=80)
    ap.add_argument("--check", type=int)
    ap.add_argument("--allow", action="append", default=[])
    args = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    paths = [pathlib.Path(p) for p in args.paths] or [root / d for d in ("src", "coordinator", "workers")]
    files = []
    for p in paths:
        files += sorted(f for f in p.rglob("*") if f.suffix in (".cpp", ".h")) if p.is_dir() else [p]
    rows, unbalanced = [], []
    for f in files:
        found, balanced = functions(f)
        if not balanced:
            unbalanced.append(f)
        for name, first, last in found:
            rows.append((last - first + 1, name, f, first))
    limit = args.check if args.check is not None else args.over
    long_ones = sorted((r for r in rows if r[0] >= limit), key=lambda r: -r[0])
    for length, name, f, first in long_ones:
        rel = f.resolve().relative_to(root) if f.resolve().is_relative_to(root) else f
        note = "  (allowed)" if name.split("::")[-1] in args.allow else ""
        print(f"{length:5d}  {name}  {rel}:{first}{note}")
    for f in unbalanced:
        print(f"unbalanced braces (not counted in full): {f}")
    print(f"{len(rows)} functions in {len(files)} files; {len(long_ones)} of {limit} lines or more")
    if args.check is not None:
        bad = [r for r in long_ones if r[1].split("::")[-1] not in args.allow]
        if bad or unbalanced:
            print(f"FAIL: {len(bad)} function(s) of {args.check} lines or more; split them along their jobs")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
