"""The shell recipes of the READMEs, run as a reader runs them (issue 36, item 1).

  test_readme_recipes.py --bin-dir build/bin --source REPO --work DIR FILE#SECTION...

Each FILE#SECTION names a Markdown file (relative to REPO) and a "## " section
of it (the start of its title); every ```sh block of the section runs, line
by line (a trailing backslash continues a line), with bash in DIR, which
looks like a checkout: `build/bin` is the build's binaries, `experiments/`
the repository's specs, and `egm` is on PATH for recipes that say plain
`egm`. Blocks run in the order given and share DIR, so the Export recipes
read the sweep the Sweeps recipes ran. Every line must exit 0.

A block that cannot run here as written says so in an HTML comment on the
line before its fence, and is then at least parsed:
  <!-- recipe-test: dry-run (WHY) -->  `egm sweep` / `egm submit` lines run with --dry-run
  <!-- recipe-test: skip (WHY) -->     not run (a real cluster, a GPU); WHY is required
Before the recipes, a one-cell sweep of another name goes into the default
database, so a recipe that forgets to name its sweep shows it (the query
check below). Then what the recipes printed is checked: the sweep's cells
listed, the per-variant average over that sweep's seeds only, a plan made.
Exit status 0 = every recipe ran and every check passed; 77 = skipped
(no corpus or no mpirun).
"""
import argparse
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def section_blocks(path, title):
    """The ```sh blocks of the '## TITLE...' section, each with its marker (or None)."""
    text = path.read_text()
    parts = re.split(r"^## ", text, flags=re.M)
    found = [p for p in parts[1:] if p.startswith(title)]
    if len(found) != 1:
        raise SystemExit(f"{path}: {len(found)} sections titled '{title}...', expected 1")
    blocks = []
    for m in re.finditer(r"(?:<!-- recipe-test: (\S+) \((.+?)\) -->\n)?```sh\n(.*?)```", found[0], re.S):
        blocks.append((m.group(1), m.group(2), m.group(3)))
    if not blocks:
        raise SystemExit(f"{path}, section '{title}': no ```sh blocks")
    return blocks


def command_lines(block):
    """The commands of a block: comment-only lines dropped, continuations joined."""
    lines, cur = [], ""
    for raw in block.splitlines():
        if not cur and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if raw.rstrip().endswith("\\"):
            cur += raw.rstrip()[:-1] + " "
            continue
        lines.append(cur + raw)
        cur = ""
    return lines


def make_checkout(work, source, bin_dir):
    """DIR as a reader's checkout, and PATH shims: `egm` as itself, or adding --dry-run to sweep/submit."""
    (work / "build").mkdir(parents=True)
    os.symlink(bin_dir, work / "build" / "bin")
    os.symlink(source / "experiments", work / "experiments")
    os.symlink(source / "tests", work / "tests")
    shims = {}
    for mode in ["run", "dry-run"]:
        d = work / ".shims" / mode
        d.mkdir(parents=True)
        egm = d / "egm"
        if mode == "run":
            os.symlink(bin_dir / "egm", egm)
        else:
            egm.write_text("#!/usr/bin/env bash\n"
                           f'real={bin_dir / "egm"}\n'
                           'case "$1" in sweep|submit) exec "$real" "$@" --dry-run ;; *) exec "$real" "$@" ;; esac\n')
            egm.chmod(egm.stat().st_mode | stat.S_IXUSR)
        shims[mode] = d
    return shims


def run_line(line, work, shim, env):
    """One recipe line under bash in DIR; `build/bin/egm` also goes through the shim."""
    shown = line
    if shim.name == "dry-run":
        line = re.sub(r"(^|\s)build/bin/egm(\s)", rf"\1{shim}/egm\2", line)
    e = dict(env, PATH=f"{shim}:{env['PATH']}")
    p = subprocess.run(["bash", "-c", line], cwd=work, env=e, capture_output=True, text=True)
    print(f"$ {shown}\n  exit {p.returncode}; {len(p.stdout.splitlines())} lines out")
    check(p.returncode == 0, f"`{shown}`: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    return p


def check_outputs(outputs, sweep_cells, seeds):
    """What the tour's recipes printed says what the README says they do."""
    for line, p in outputs:
        verb = re.search(r"egm (\w+)", line)
        verb = verb.group(1) if verb else ""
        if verb == "runs" and "--format csv" in line:
            rows = p.stdout.strip().splitlines()[1:]
            check(len(rows) == sweep_cells, f"`{line}`: {len(rows)} cells listed, expected {sweep_cells}")
        elif verb == "query" and "GROUP BY variant" in line:
            # the average is over the named sweep's seeds: every variant counted `seeds` times
            counts = [int(n) for n in re.findall(r"^\s*\S+\s+(\d+)\s+\S+\s*$", p.stdout, re.M)]
            check(len(counts) == sweep_cells // seeds and set(counts) == {seeds},
                  f"`{line}`: counts {counts}, expected {sweep_cells // seeds} variants x {seeds} seeds:\n{p.stdout}")
        elif verb == "plan":
            check("no plan" not in p.stdout and "seeds" in p.stdout, f"`{line}` made no plan:\n{p.stdout}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--other-sweep", help="a spec run first into the default database")
    ap.add_argument("sections", nargs="+", help="FILE#SECTION")
    a = ap.parse_args()
    source = pathlib.Path(a.source).resolve()
    bin_dir = pathlib.Path(a.bin_dir).resolve()
    work = pathlib.Path(a.work).resolve()
    if not os.path.isfile(os.environ.get("EGM_DATA", "")):
        print("SKIP: no corpus (set EGM_DATA)")
        return 77
    if not shutil.which("mpirun"):
        print("SKIP: no mpirun")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    shims = make_checkout(work, source, bin_dir)
    env = dict(os.environ, OMP_NUM_THREADS="1", EGM_DB="")
    env.pop("EGM_DB")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if a.other_sweep:
        run_line(f"build/bin/egm sweep {a.other_sweep} --workers 1 --view plain >/dev/null", work, shims["run"], env)

    outputs = []
    for item in a.sections:
        file, title = item.split("#", 1)
        for i, (mode, why, block) in enumerate(section_blocks(source / file, title)):
            print(f"--- {file}, '{title}', block {i + 1}" + (f" ({mode}: {why})" if mode else ""))
            if mode == "skip":
                continue
            check(mode in (None, "dry-run"), f"{file} '{title}' block {i + 1}: unknown marker '{mode}'")
            for line in command_lines(block):
                outputs.append((line, run_line(line, work, shims["dry-run" if mode else "run"], env)))

    # The tour's sweep: experiments/tiny.json (its name, and its cells by the spec).
    import json
    tiny = json.loads((source / "experiments" / "tiny.json").read_text())
    check_outputs(outputs, len(tiny["variants"]) * len(tiny["seeds"]), len(tiny["seeds"]))
    print(f"readme recipes: {'all passed' if not FAILURES else f'{len(FAILURES)} failed'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
