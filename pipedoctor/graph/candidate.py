"""A candidate fix: one rewrite of the pipeline's graph, and whether it may be applied unasked.

Whether a fix may be applied comes from one place, the rule it answers: a rule file's
``fix_safety`` of ``safe`` means the rewrite keeps what the pipeline yields; ``unsafe`` means
it may not (a cache can exhaust memory, a map moved after ``batch`` changes the values of a
function that is not element-wise), and such a fix is applied, by the projection and by
``optimize()``, only once it was verified on this very pipeline, in the way the rule file's
``verified_when`` says. The report states how each applied unsafe fix was verified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.graph import graphdef as g


def fix_safety(rule: str | None) -> str:
    """The catalog's fix safety for ``rule``. Rewrites that answer no rule (a parallel
    ``batch``) keep order and values by construction: deterministic parallelism only."""
    if rule is None:
        return "safe"
    from pipedoctor.rules import load_catalog

    return load_catalog()[rule].fix_safety


@dataclass
class Candidate:
    """One rewrite: the rule it answers, the stage it touches, how it is made and checked."""

    rule: str | None
    stage: int
    title: str
    apply: Callable[[g.GraphDef], None]
    verify: bool = False
    """Compare the rewritten pipeline's values with the original's before timing it."""
    bound: bool = False
    """Not a fix but a limit: how fast the pipeline could run at best (never applied)."""
    verified: str | None = None
    """How this fix was verified on this pipeline, once it was (for an ``unsafe`` rule)."""
    prepare: Callable[[float, Any], str | None] | None = None
    """Work before timing, within a deadline, given the pipeline's element structure (filling
    a cache, comparing a restructure's values); returns why it failed."""
    live: frozenset[str] = frozenset()
    """Graph nodes that hold live resources (a filled cache) a rebuild must keep."""
    writes_files: bool = False
    """Needs files of its own (a cache on disk): measured and counted in the projection, but
    ``optimize()`` never makes it, since the files would outlive the check."""
    details: dict[str, Any] = field(default_factory=dict)
    """What the report says about it beyond the gain (a cache's size, its reorders)."""
    upstream_of_it_is_moot: bool = False
    """Once applied, the work before its stage runs only once (a cache): fixes there are moot."""
    skip_reason: str | None = None
    """Reported, never timed: why this fix could not be measured on this pipeline."""
    cleanup: Callable[[], None] = lambda: None
    """Removes what ``prepare`` left behind (a cache's files)."""

    @property
    def safety(self) -> str:
        return fix_safety(self.rule)

    @property
    def applicable(self) -> bool:
        """May be applied without asking, so counted in the projection: safe, or unsafe and
        verified here; never a bound."""
        if self.bound:
            return False
        return self.safety == "safe" or (self.safety == "unsafe" and self.verified is not None)


def rewritten(gp: Any, fixes: list[Candidate], base: g.GraphDef | None = None) -> g.GraphDef:
    """A copy of the pipeline's graph (or of ``base``, an edited copy of it) with ``fixes``."""
    graph = g.copy(gp.graph if base is None else base)
    for fix in fixes:
        fix.apply(graph)
    return graph


def rebuilt(gp: Any, fixes: list[Candidate], element_spec: Any) -> Any:
    """The pipeline with ``fixes``, as a dataset (reading any cache they filled)."""
    live = frozenset().union(*(fix.live for fix in fixes))
    return g.rebuild(rewritten(gp, fixes), element_spec, keep_live=live)
