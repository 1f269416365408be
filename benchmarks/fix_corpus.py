"""Apply ``pipedoctor lint --fix --unsafe-fixes`` to every file of a corpus, and check it.

Copies CORPUS_DIR (the layout ``build_corpus.py`` makes) to a scratch folder, fixes the copy
in place through the same code as the CLI, and checks every file it changed:

- it still parses (a notebook: every code cell the lint reads still parses);
- the rules it fixed no longer fire at the lines they were fixed at;
- it differs from the original only on lines a finding pointed at (the line, or the lines of
  the call the edit rewrote), in cells that had a fixed finding.

    python benchmarks/fix_corpus.py CORPUS_DIR [--keep DIR]

Prints the counts and every file that breaks one of these; exits 1 if any does.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from pipedoctor.config import Config
from pipedoctor.fix.edits import FIXABLE
from pipedoctor.fix.run import fix_report
from pipedoctor.lint import lint_fixed, lint_paths
from pipedoctor.rules import ALL_RULES


def sources_of(path: Path, text: str | None = None) -> dict[int | None, str]:
    """The file's Python (``text``, else what it holds now): the whole text, or each code
    cell by number."""
    text = path.read_text(encoding="utf-8") if text is None else text
    if path.suffix != ".ipynb":
        return {None: text}
    cells = json.loads(text)["cells"]
    return {
        n: "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for n, c in enumerate(cells, start=1)
        if c.get("cell_type") == "code"
    }


def changed_lines(before: str, after: str) -> set[int]:
    """Lines of ``before`` that the fix replaced or removed (1-based)."""
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--keep", type=Path, help="fix a copy here and keep it")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no such corpus folder: {args.corpus}")
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="pipedoctor-fix-corpus-"))
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(args.corpus, scratch)
    files = sorted(p for p in scratch.rglob("*") if p.suffix in (".py", ".ipynb") and p.is_file())
    originals = {p: p.read_text(encoding="utf-8", errors="replace") for p in files}
    report = lint_paths(files, Config())
    fixable = [f for f in report.findings if f.rule in FIXABLE]

    def relint(text: str, shown: str) -> list:
        return lint_fixed(text, shown, ALL_RULES)

    run = fix_report(report, relint, unsafe=True, write=True)
    problems: list[str] = []
    touched = sorted({Path(e.path) for e in run.edits})
    for path in touched:
        before = sources_of(path, originals[path])
        after = sources_of(path)
        edits = [e for e in run.edits if Path(e.path) == path]
        for key, code in after.items():
            try:
                ast.parse(code)
            except SyntaxError:
                if key is None or _parsed_before(before.get(key, "")):
                    problems.append(
                        f"{path}: {'cell ' + str(key) if key else 'file'} no longer parses"
                    )
        for key in set(before) | set(after):
            lines = changed_lines(before.get(key, ""), after.get(key, ""))
            allowed = {
                line
                for e in edits
                if e.cell == key
                for line in range(e.line, e.line + e.after.count("\n") + e.before.count("\n") + 1)
            }
            if lines - allowed:
                problems.append(
                    f"{path}: {'cell ' + str(key) if key else 'lines'} "
                    f"{sorted(lines - allowed)[:5]} changed with no finding there"
                )
        again = relint(path.read_text(encoding="utf-8"), str(path))
        for e in edits:
            if any(f.rule == e.rule and f.line == e.line and f.cell == e.cell for f in again):
                problems.append(f"{path}: {e.rule} still fires at line {e.line} after its fix")
    print(f"corpus: {args.corpus} ({len(files)} files)")
    print(f"fixable findings: {len(fixable)}; fixed: {len(run.edits)} in {len(touched)} files")
    reasons: dict[str, int] = {}
    for _, why in run.skipped:
        reasons[why] = reasons.get(why, 0) + 1
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  left alone: {n} ({why})")
    for shown, why in run.failed:
        print(f"  not fixed: {shown}: {why}")
    print(f"files that break a check: {len(problems)}")
    for line in problems:
        print(f"  {line}")
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(1 if problems else 0)


def _parsed_before(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


if __name__ == "__main__":
    main()
