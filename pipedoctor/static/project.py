"""The project pass: a dataset one file's function returns trains when another file of the lint
hands what that function returns to training.

A file read alone cannot show that the dataset its ``make_dataset()`` returns trains: the
training script is another file, and the ``trains`` fact of every finding on that dataset is
assumed. Each file's analysis records what it does with what functions of the project's other
modules return (:class:`~pipedoctor.pipeline.ProjectUse`); this pass finds those functions
among the files linted, by module path, and turns the fact to shown, naming the caller. Chains
are followed: ``train.py`` fits what ``data/__init__.py``'s ``get_train()`` returns, which is
what ``data/records.py``'s ``parse()`` returned.

Only a use that trains the dataset as it was returned counts. A caller that maps, prefetches
or distributes it first trains another pipeline, where the finding may not hold (a ``cache()``
or ``prefetch`` right after the call is what the finding asks for); an evaluation or a look
shows nothing. What no file of the lint calls stays assumed: a library's callers are elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from pipedoctor.evidence import Evidence, confidence, shown
from pipedoctor.pipeline import ProjectUse
from pipedoctor.report import Finding
from pipedoctor.rules import load_catalog

TRAINING_ENDS = frozenset({"training", "validation"})


@dataclass(frozen=True)
class Target:
    """A function of a file of the lint, as the project pass keys it: the file (or, for a
    package's ``__init__`` that may re-export it, the package's folder) and
    ``Class.method[item]``."""

    where: Path
    key: str
    folder: bool = False

    def covers(self, path: Path, key: str) -> bool:
        if key != self.key:
            return False
        return path.parent.is_relative_to(self.where) if self.folder else path == self.where


class Modules:
    """The ``.py`` files of the lint by module path, to find what an import names."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.by_tail: dict[str, list[Path]] = {}
        for path in paths:
            if path.suffix != ".py":
                continue
            tail = path.with_suffix("").as_posix()
            if path.name == "__init__.py":
                tail = path.parent.as_posix()
            self.by_tail.setdefault(tail.rsplit("/", 1)[-1], []).append(path)

    def resolve(self, caller: Path, origin: str, index: str | None) -> list[Target]:
        """What ``origin`` (``pkg.data.make_ds``, ``..data.Loader.build``) imported in
        ``caller`` names among the files of the lint: the module file and the key of the
        function in it, nearest the caller where several files have that module path."""
        level = len(origin) - len(origin.lstrip("."))
        parts = origin.lstrip(".").split(".")
        if not parts[0]:
            return []
        base = caller.parent
        if level:
            if level - 1 >= len(caller.parents) - 1:
                return []
            base = caller.parents[level - 1]
        for cut in range(len(parts) - 1, 0, -1):  # the longest module path first
            module, chain = parts[:cut], parts[cut:]
            key = ".".join(chain) + (f"[{index}]" if index is not None else "")
            found = self.files(module, base if level else None)
            if found:
                best = nearest(found, caller)
                if best is None:
                    return []  # two files as near: which one is imported is not known
                folder = best.name == "__init__.py"
                return [Target(best.parent if folder else best, key, folder)]
        return []

    def files(self, module: list[str], base: Path | None) -> list[Path]:
        """Files that are ``module``: under ``base`` for a relative import, anywhere whose
        path ends so for an absolute one."""
        wanted = "/".join(module)
        found = []
        for path in self.by_tail.get(module[-1], []):
            tail = path.parent if path.name == "__init__.py" else path.with_suffix("")
            text = tail.as_posix()
            if base is not None:
                if text == (base / wanted).as_posix():
                    found.append(path)
            elif text == wanted or text.endswith("/" + wanted):
                found.append(path)
        return found


def nearest(paths: list[Path], caller: Path) -> Path | None:
    """The path sharing the longest folder prefix with ``caller``; None on a tie."""

    def shared(path: Path) -> int:
        return len(os.path.commonpath([path.parent, caller.parent]).split(os.sep))

    ranked = sorted(paths, key=shared, reverse=True)
    if len(ranked) > 1 and shared(ranked[0]) == shared(ranked[1]):
        return None
    return ranked[0]


@dataclass(frozen=True)
class Trained:
    """A function whose result trains, and the caller that shows it."""

    target: Target
    detail: str


def trained_functions(
    uses: dict[Path, list[ProjectUse]], modules: Modules, shown_as: dict[Path, str]
) -> list[Trained]:
    """Every function of the lint whose result some file trains on, as returned; followed
    through functions that return another module's result to their own callers. ``shown_as``:
    each caller's path as the lint's findings give it."""
    found: list[Trained] = []
    relays: list[tuple[Path, ProjectUse]] = []
    for caller, caller_uses in uses.items():
        distributed = {(u.origin, u.index) for u in caller_uses if u.end == "distributed"}
        for use in caller_uses:
            if use.end == "returned" and not use.changed:
                relays.append((caller, use))
            if use.end not in TRAINING_ENDS or use.changed:
                continue
            if (use.origin, use.index) in distributed:
                continue  # a strategy's iterators prefetch it: another pipeline trains
            for target in modules.resolve(caller, use.origin, use.index):
                detail = f"`{shown_as[caller]}` hands it to {use.how or use.end}"
                found.append(Trained(target, detail))
    grew = True
    while grew:  # a chain of functions each returning the next one's dataset
        grew = False
        for caller, use in relays:
            via = next((t for t in found if t.target.covers(caller, use.returned_as)), None)
            if via is None:
                continue
            for target in modules.resolve(caller, use.origin, use.index):
                if not any(t.target == target for t in found):
                    name = use.returned_as.split("[")[0]
                    detail = f"{via.detail}, through `{name}` in `{shown_as[caller]}`"
                    found.append(Trained(target, detail))
                    grew = True
    return found


def link_project(
    findings: list[Finding], uses: dict[str, list[ProjectUse]], files: Iterable[str]
) -> list[Finding]:
    """``findings`` with the ``trains`` fact shown, and the confidence raised, where another
    file of the lint trains on the dataset a finding's function returns. ``uses``: each
    file's (by its path as findings give it) uses of other modules' results; ``files``: every
    file linted."""
    linked = {id(f) for f in findings if any(e.link for e in f.evidence)}
    if not linked or not any(uses.values()):
        return findings
    modules = Modules(absolute(f) for f in files)
    shown_as = {absolute(p): p for p in uses}
    trained = trained_functions({absolute(p): u for p, u in uses.items() if u}, modules, shown_as)
    if not trained:
        return findings
    catalog = load_catalog()
    result = []
    for finding in findings:
        evidence = finding.evidence
        if id(finding) in linked and finding.path:
            where = absolute(finding.path)
            evidence = tuple(promoted(e, where, trained) for e in finding.evidence)
        if evidence != finding.evidence:
            rule = catalog.get(finding.rule)
            cap = rule.max_confidence if rule is not None else "high"
            finding = replace(finding, evidence=evidence, confidence=confidence(evidence, cap))
        result.append(finding)
    return result


def promoted(fact: Evidence, where: Path, trained: list[Trained]) -> Evidence:
    if fact.shown or not fact.link:
        return fact
    for found in trained:
        if found.target.covers(where, fact.link):
            return shown(fact.fact, found.detail)
    return fact


def absolute(path: str | Path) -> Path:
    return Path(os.path.abspath(path))
