"""``pipedoctor lint --fix`` / ``--diff``: the lint's findings applied as edits, file by file.

Only the files the lint read are touched (the ones given on the command line, or found under
the folders given). ``--diff`` writes nothing and prints a unified diff; ``--fix`` writes the
safe fixes (``--unsafe-fixes`` adds the rest), each file through a temporary file and a
rename, and each only when its fixed text compiles and the fixed rules fire less on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipedoctor.fix.edits import Edit, FixError, Moves, apply, read_source, unified_diff
from pipedoctor.report import Finding, Report


@dataclass
class FixRun:
    """What ``--fix`` or ``--diff`` did: the edits, the diff text, the findings left as they
    were (with why), and the files that could not be fixed (with why)."""

    edits: list[Edit] = field(default_factory=list)
    diff: str = ""
    skipped: list[tuple[Finding, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def fix_report(
    report: Report,
    relint: Callable[[str, str], list[Finding]],
    *,
    unsafe: bool = False,
    write: bool = True,
    root: Path | None = None,
    moves: Moves | None = None,
) -> FixRun:
    """Apply (``write``) or show the fixes for every file ``report`` has findings in.
    ``relint(text, path)`` lints a fixed text, to check each fix took. ``root``: the folder
    the findings' paths are relative to (the diff names them as they are). ``moves``: what
    each measured cache moves."""
    from pipedoctor.rules import load_catalog

    safeties = {rule.id: rule.fix_safety for rule in load_catalog().values()}
    by_path: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.path is not None:
            by_path.setdefault(finding.path, []).append(finding)
    run = FixRun()
    for shown, findings in sorted(by_path.items()):
        if all(finding.rule == "PD000" for finding in findings):
            continue  # nothing to fix: its PD000 finding (a syntax error, unreadable) says why
        path = (root or Path()) / shown
        try:
            source, encoded = read_source(path)
            fixed, edits, skipped = apply(
                path, source, findings, safeties, unsafe=unsafe, write=write,
                verify=lambda text, shown=shown: relint(text, shown), moves=moves,
                encoded=encoded,
            )  # fmt: skip
        except FixError as exc:
            run.failed.append((shown, str(exc)))
            continue
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            run.failed.append((shown, f"cannot be read ({exc}): left as it is"))
            continue
        run.edits += edits
        run.skipped += skipped
        if edits and path.suffix == ".ipynb":
            run.diff += cell_diffs(shown, source, fixed)
        elif edits:
            run.diff += unified_diff(shown, source, fixed)
    return run


def cell_diffs(shown: str, before: str, after: str) -> str:
    """A notebook's fixes as one diff per changed cell (``nb.ipynb:cell 3``), not its JSON."""
    import json

    from pipedoctor.static.notebook import cells_of, source_key

    old_cells, new_cells = cells_of(json.loads(before)), cells_of(json.loads(after))
    text = ""
    for number, (old, new) in enumerate(zip(old_cells, new_cells, strict=True), start=1):
        if old.get(source_key(old)) != new.get(source_key(new)):
            text += unified_diff(f"{shown}:cell {number}", _text(old), _text(new))
    return text


def _text(cell: dict) -> str:
    from pipedoctor.static.notebook import source_key

    source = cell.get(source_key(cell), "")
    text = "".join(source) if isinstance(source, list) else str(source)
    return text if text.endswith("\n") else text + "\n"


def summary(run: FixRun, *, wrote: bool) -> str:
    """``Fixed 3 findings in 2 files (1 more with --unsafe-fixes).``"""
    files = len({e.path for e in run.edits})
    verb = "Fixed" if wrote else "Would fix"
    text = f"{verb} {len(run.edits)} finding{'s' * (len(run.edits) != 1)} in {files} file"
    text += "s" * (files != 1)
    unsafe = sum(why.startswith("unsafe fix") for _, why in run.skipped)
    if unsafe:
        text += f" ({unsafe} more with --unsafe-fixes)"
    return text + "."
