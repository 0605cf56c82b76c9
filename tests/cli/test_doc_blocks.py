"""Every command block of the READMEs is run by a test or says why not, and every egm line in them parses (issue 36).

  test_doc_blocks.py --egm build/bin/egm --source REPO [--run FILE#SECTION ...]

The files: README.md and every folder's README.md. A ```sh, ```bash or
```python block is either in a section another test runs as written (--run:
cli_readme_recipes runs the shell recipes, export_readers_notebook the
notebook's Python), or carries a marker on the line before its fence:
  <!-- recipe-test: dry-run (WHY) -->   run elsewhere with --dry-run
  <!-- recipe-test: skip (WHY) -->      not run here (a real cluster, a GPU, hours of training)
A block with neither fails: a new recipe must be run or say why it cannot be.
Every `egm VERB ...` line of every block (run or not) must parse as far as
this test can check without running it: VERB is one of egm's verbs, and
every --flag it writes is one `egm VERB --help` lists. A renamed verb or
flag then fails here, whatever the block's marker.
"""
import argparse
import pathlib
import re
import subprocess
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def blocks_of(path):
    """(section title, marker, language, code) for every command block of a Markdown file."""
    text = path.read_text()
    out = []
    section = ""
    pattern = re.compile(r"^(## [^\n]*)$|(?:<!-- recipe-test: (\S+) \((.+?)\) -->\n)?^```(sh|bash|python)\n(.*?)^```",
                         re.M | re.S)
    for m in pattern.finditer(text):
        if m.group(1):
            section = m.group(1)[3:].strip()
            continue
        out.append((section, m.group(2), m.group(4), m.group(5)))
    return out


def egm_lines(code):
    """The egm command lines of a shell block (continuations joined, comments dropped)."""
    lines, cur = [], ""
    for raw in code.splitlines():
        line = raw.split(" #")[0] if not cur else raw
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        full = (cur + line).strip()
        cur = ""
        m = re.search(r"(?:^|[\s;&|(])(?:\S*/)?egm\s+([a-z][a-z-]*)(.*)$", full)
        if m and not full.startswith("#"):
            lines.append((full, m.group(1), m.group(2)))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--egm", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--run", nargs="*", default=[], help="FILE#SECTION that another test runs as written")
    a = ap.parse_args()
    source = pathlib.Path(a.source).resolve()
    run = {tuple(r.split("#", 1)) for r in a.run}
    files = ["README.md"] + sorted(
        str(p.relative_to(source)) for p in source.glob("*/**/README.md")
        if not str(p.relative_to(source)).startswith(("build", "results/findings", "tests/golden/expected")))
    help_of = {}
    blocks = 0
    for f in files:
        for section, marker, lang, code in blocks_of(source / f):
            blocks += 1
            where = f"{f}, section '{section}'"
            covered = any(f == rf and section.startswith(rs) for rf, rs in run)
            check(covered or marker in ("dry-run", "skip"),
                  f"{where}: a ```{lang} block that no test runs and no marker explains:\n{code[:200]}")
            if lang == "python":
                continue
            for full, verb, rest in egm_lines(code):
                if verb not in help_of:
                    p = subprocess.run([a.egm, verb, "--help"], capture_output=True, text=True)
                    # An unknown verb gets egm's own help (exit 0): the verb's help names it in its usage line.
                    ok = p.returncode == 0 and re.search(rf"^Usage: \S*egm {re.escape(verb)}\b", p.stdout, re.M)
                    help_of[verb] = p.stdout if ok else None
                text = help_of[verb]
                check(text is not None, f"{where}: `{full}`: egm has no verb '{verb}'")
                if text is None:
                    continue
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest):
                    check(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None,
                          f"{where}: `{full}`: egm {verb} has no flag {flag}")
    print(f"doc blocks: {blocks} blocks in {len(files)} files; "
          f"{'all passed' if not FAILURES else f'{len(FAILURES)} failed'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
