"""Turn findings into edits of the source with libcst, and write them safely.

Each mechanical rule has a rewrite of the call its finding points at (the span runs from the
called name to the end of the call, as the static front end reports it):

- PD101: the call handed to training gets ``.prefetch(AUTOTUNE)`` after it;
- PD102, PD103: its parallelism (``num_parallel_calls``, ``num_parallel_reads``, a
  ``prefetch`` buffer) becomes ``AUTOTUNE``;
- PD104: a reader gets ``num_parallel_reads=AUTOTUNE``, an ``interleave``
  ``num_parallel_calls=AUTOTUNE``;
- PD106 (only as a check measured it): ``.cache()`` after the call, with the stages the
  measured cache moved: a ``shuffle`` or ``repeat`` before it taken out of its place and
  written after the cache, a ``list_files`` shuffle of file names or a factory's own shuffle
  turned off; for work after a ``batch``, ``.unbatch()`` before the cache and the shuffle and
  ``batch`` the check measured after it;
- PD112: a transformation whose result was dropped is assigned back to the name it starts from.

``AUTOTUNE`` is written as the file already names it.
"""

from __future__ import annotations

import ast
import codecs
import difflib
import io
import os
import tempfile
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pipedoctor.pipeline import FEATURE_FILE_FACTORIES, READ_THREADS
from pipedoctor.report import Finding

FIXABLE = ("PD101", "PD102", "PD103", "PD104", "PD106", "PD112")
MEASURED_ONLY = ("PD106",)
"""Fixes written only where a check measured them: a cache needs its size known."""
WRAPS = ("PD106", "PD101")
"""Fixes that wrap the call (``.cache()``, ``.prefetch(...)``), in the order they wrap it:
applied after the ones that change the call itself, on one call with several findings."""
READERS = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")
FACTORY_ATTRIBUTES = ("class_names", "file_paths")
"""What Keras's directory factories set on the dataset they return, and a dataset made from
it by any method (``.cache()``, ``.prefetch()``) no longer has."""


@dataclass(frozen=True)
class CacheMove:
    """A stage that a measured cache moves: written after the cache (``shuffle``, ``repeat``),
    or turned off (``shuffle=False``) where it is: the shuffle of file names that a later
    ``shuffle`` replaces, or a shuffle inside a factory's call (``in_call``)."""

    op: str
    line: int
    column: int
    taken_out: bool = False
    in_call: bool = False


@dataclass(frozen=True)
class AddedStage:
    """A stage a measured cache adds: ``unbatch`` before it, or a ``shuffle`` / ``batch`` of
    ``value`` after the stages it moves."""

    op: str
    value: int | None = None
    drop_remainder: bool = False


@dataclass(frozen=True)
class MeasuredCache:
    """What ``check --fix`` writes for one measured cache: the method of the call it follows
    (several calls of a chain can begin at one place), the stages it moves and adds."""

    method: str | None = None
    moves: tuple[CacheMove, ...] = ()
    added: tuple[AddedStage, ...] = ()


Moves = dict[tuple[str, int, int], MeasuredCache]
"""Each measured cache, by its PD106 finding's (path, line, column)."""


class FixError(RuntimeError):
    """A file that cannot be fixed as asked: the one-line reason, naming the file."""


@dataclass(frozen=True)
class Edit:
    """One finding's fix, as applied or planned: where, which rule, how safe."""

    path: str
    rule: str
    line: int
    column: int
    safety: str
    before: str
    after: str
    cell: int | None = None
    """In a notebook: the cell the edit is in (``line`` counts in it)."""


def require_libcst():  # noqa: ANN201 - the module, imported only when a fix is asked for
    try:
        import libcst
    except ImportError:
        raise FixError(
            "fixing needs libcst, which keeps your formatting and comments: pip install libcst "
            "(it comes with the `tf` and `fix` extras)"
        ) from None
    return libcst


def autotune_expression(module) -> str | None:  # noqa: ANN001 - a libcst Module
    """How the file names ``tf.data.AUTOTUNE``: a module constant bound to it, a name imported
    from ``tensorflow.data``, or the file's alias for TensorFlow; ``None`` when it has none."""
    tree = ast.parse(module.code)
    alias = constant = imported = None
    for node in tree.body:
        if isinstance(node, ast.Import):
            for name in node.names:
                if name.name == "tensorflow":
                    alias = name.asname or "tensorflow"
        elif isinstance(node, ast.ImportFrom) and node.module in (
            "tensorflow.data", "tensorflow.data.experimental",
        ):  # fmt: skip
            for name in node.names:
                if name.name == "AUTOTUNE":
                    imported = name.asname or "AUTOTUNE"
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "AUTOTUNE"
        ):
            constant = node.targets[0].id
    if constant or imported:
        return constant or imported
    return f"{alias}.data.AUTOTUNE" if alias else None


def plan(
    source: str,
    findings: Sequence[Finding],
    safeties: dict[str, str],
    *,
    unsafe: bool = False,
    autotune: str | None = None,
    cell: bool = False,
    moves: Moves | None = None,
) -> tuple[str, list[Edit], list[tuple[Finding, str]]]:
    """The fixed source, the edits made, and each finding left alone with why. Safe fixes
    only, unless ``unsafe``; ``safeties`` maps rule ids to their fix safety. ``cell``: the
    source is one notebook cell, its findings counted in it, and ``autotune`` how the
    notebook (whose imports may sit in another cell) names ``tf.data.AUTOTUNE``. ``moves``:
    what each measured cache moves (a cache is fixed only with every one of its moves)."""
    cst = require_libcst()
    try:
        module = cst.parse_module(source)
    except Exception as exc:  # noqa: BLE001 - libcst's parser errors have no common base
        raise FixError(f"cannot be parsed, left untouched ({type(exc).__name__})") from None
    skipped: list[tuple[Finding, str]] = []
    targets: dict[tuple[int, int], Finding] = {}
    for finding in findings:
        safety = safeties.get(finding.rule, "none")
        if finding.rule not in FIXABLE or safety == "none" or finding.line is None:
            continue
        if finding.rule in MEASURED_ONLY and finding.gain is None:
            skipped.append((finding, "a cache is written only by `check --fix`, once measured"))
            continue
        if safety == "unsafe" and not unsafe:
            skipped.append((finding, "unsafe fix: pass --unsafe-fixes to apply it"))
            continue
        if (finding.cell is not None) != cell:
            continue
        targets[(finding.line, finding.column or 1)] = finding
    autotune = autotune or autotune_expression(module)
    if autotune is None and any(f.rule != "PD112" for f in targets.values()):
        for key in [k for k, f in targets.items() if f.rule != "PD112"]:
            skipped.append((targets.pop(key), "the file does not import TensorFlow by name"))
    if not targets:
        return source, [], skipped
    wrapper = cst.metadata.MetadataWrapper(module)
    calls = _Calls(cst, wrapper)
    moved: dict[tuple[int, int], list[tuple[CacheMove, object]]] = {}
    caches: dict[tuple[int, int], MeasuredCache] = {}
    for key, finding in list(targets.items()):
        if finding.rule != "PD106":
            continue
        cache = caches[key] = (moves or {}).get((finding.path or "", *key), MeasuredCache())
        if calls.at(key, cache.method) is None:
            continue  # left as "not a call this fix knows", and nothing is moved for it
        found = [(m, calls.at((m.line, m.column), _move_call(m))) for m in cache.moves]
        # without every one of its moves, it is not the cache that was measured
        missing = [m for m, call in found if call is None]
        if missing:
            skipped.append((targets.pop(key), _unmovable(cst, calls, missing[0])))
            continue
        moved[key] = found
    deferred = {}
    for key, finding in list(targets.items()):
        call = calls.at(key, caches[key].method if key in caches else None)
        if finding.rule not in WRAPS or call is None:
            continue
        later = _attributes_read_later(cst, wrapper.module, call)
        if later is None:
            continue
        if any(not move.taken_out for move, _ in moved.get(key, ())):
            skipped.append((targets.pop(key), _lost_attribute(later)))
            moved.pop(key, None)  # nothing of a fix left to the user is written
            continue
        deferred[id(call)] = later
    fixer = _transformer(cst)(
        targets, cst.parse_expression(autotune or "AUTOTUNE"), calls, moved, caches, deferred
    )
    fixed = wrapper.visit(fixer).code
    edits = []
    for key, finding in targets.items():
        if key not in fixer.done:
            skipped.append((finding, "the code at its place is not a call this fix knows"))
            continue
        before, after = fixer.done[key]
        edits.append(Edit(finding.path or "", finding.rule, key[0], key[1],
                          safeties[finding.rule], before, after))  # fmt: skip
    return fixed, sorted(edits, key=lambda e: (e.line, e.column)), skipped


def _called(cst, call) -> str:  # noqa: ANN001 - libcst is optional
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")


def _move_call(move: CacheMove) -> str | None:
    """The method a moved stage is written as: ``list_files`` for a shuffle of file names;
    any (the one call at its place) for a factory's own shuffle."""
    if move.in_call:
        return None
    return "list_files" if move.taken_out else move.op


class _Calls:
    """The file's calls by the places a finding may name them at: a call's method name, as
    the lint places findings; or where its expression begins, as the live graph records a
    stage's line. Several calls of a chain begin at one place: there the method's name
    (a moved ``shuffle``) tells them apart, and without one the place is ambiguous."""

    def __init__(self, cst, wrapper) -> None:  # noqa: ANN001 - libcst is optional
        from libcst.metadata import PositionProvider

        self._cst = cst
        positions = wrapper.resolve(PositionProvider)
        self.by_name: dict[tuple[int, int], object] = {}
        self.by_start: dict[tuple[int, int], list[object]] = {}
        for node, where in positions.items():
            if not isinstance(node, cst.Call):
                continue
            self.by_start.setdefault((where.start.line, where.start.column + 1), []).append(node)
            func = node.func
            name = func.attr if isinstance(func, cst.Attribute) else func
            if isinstance(name, cst.Name):
                start = positions[name].start
                self.by_name[(start.line, start.column + 1)] = node

    def at(self, key: tuple[int, int], method: str | None = None) -> object | None:
        """The one call at ``key`` (calling ``method``, when given), else ``None``."""
        call = self.by_name.get(key)
        if call is not None:
            return call if method is None or _called(self._cst, call) == method else None
        calls = self.by_start.get(key, [])
        if method is not None:
            calls = [c for c in calls if _called(self._cst, c) == method]
        return calls[0] if len(calls) == 1 else None


def _unmovable(cst, calls: _Calls, move: CacheMove) -> str:  # noqa: ANN001
    """Why a cache is left to the user: the stage it moves is not a call of its own."""
    inside = calls.at((move.line, move.column))
    name = _called(cst, inside) if inside is not None else ""
    where = f"inside `{name}`" if name else "not a call"
    return (
        f"the `{move.op}` the measured cache moves (line {move.line}) is {where}: "
        "make the cache by hand, as the report says"
    )


@dataclass(frozen=True)
class ReadLater:
    """A dataset assigned to ``name`` whose factory attributes later statements of the same
    block read: what wraps it is written as ``name = name....`` after the ``last`` of them."""

    name: str
    attribute: str
    line: int
    last: object


def _attributes_read_later(cst, module, call) -> ReadLater | None:  # noqa: ANN001
    """Where ``call`` is the whole value of ``name = call`` and a later statement of that
    block, before ``name`` is bound again, reads ``name.class_names`` (or another attribute
    the factory set): wrapping the call would take that attribute away."""
    from libcst.metadata import PositionProvider

    positions = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True).resolve(
        PositionProvider
    )
    for block in _blocks(cst, module):
        body = list(block.body)
        for i, statement in enumerate(body):
            name = _assigned_name(cst, statement, call)
            if name is None:
                continue
            found: ReadLater | None = None
            for later in body[i + 1 :]:
                read = _attribute_read(cst, later, name)
                if read is not None:
                    where = positions[read].start.line
                    found = ReadLater(name, read.attr.value, where, later)
                if name in _bound_names(cst, later):
                    break
            return found
    return None


def _lost_attribute(later: ReadLater) -> str:
    return (
        f"`{later.name}.{later.attribute}` is read at line {later.line}, and the dataset the "
        "fix makes would not have it: make the cache after that line by hand"
    )


def _blocks(cst, module) -> list:  # noqa: ANN001
    """The module and every indented block in it: where statements follow one another."""
    found = [module]

    class Blocks(cst.CSTVisitor):
        def visit_IndentedBlock(self, node) -> None:  # noqa: ANN001, N802
            found.append(node)

    module.visit(Blocks())
    return found


def _assigned_name(cst, statement, call) -> str | None:  # noqa: ANN001
    """``name`` for the statement ``name = call``, else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or assign.value is not call:
        return None
    targets = assign.targets
    if len(targets) != 1 or not isinstance(targets[0].target, cst.Name):
        return None
    return targets[0].target.value


def _attribute_read(cst, statement, name: str):  # noqa: ANN001, ANN202
    """The first ``name.class_names`` (a factory attribute) in ``statement``, else None."""
    found = []

    class Reads(cst.CSTVisitor):
        def visit_Attribute(self, node) -> None:  # noqa: ANN001, N802
            if (
                not found
                and isinstance(node.value, cst.Name)
                and node.value.value == name
                and node.attr.value in FACTORY_ATTRIBUTES
            ):
                found.append(node)

    statement.visit(Reads())
    return found[0] if found else None


def _bound_names(cst, statement) -> set[str]:  # noqa: ANN001
    """The names a simple statement assigns (``a = b = ...``, ``a += ...``)."""
    names: set[str] = set()
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            targets = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                targets = [small.target]
            names |= {t.value for t in targets if isinstance(t, cst.Name)}
    return names


def _transformer(cst):  # noqa: ANN001, ANN202 - built on first use: libcst is optional

    def keyword(call, name: str, value):  # noqa: ANN001, ANN202
        """``call`` with keyword ``name`` set to ``value``: the old one replaced, or a new one
        added in the call's own layout (one per line when it ends with a trailing comma)."""
        if any(a.keyword and a.keyword.value == name for a in call.args):
            return call.with_changes(args=[
                a.with_changes(value=value) if a.keyword and a.keyword.value == name else a
                for a in call.args
            ])  # fmt: skip
        args = list(call.args)
        tight = cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        )
        arg = cst.Arg(value=value, keyword=cst.Name(name), equal=tight)
        if args:
            last = args[-1]
            if isinstance(last.comma, cst.Comma):  # a trailing comma: keep one arg per line
                gap = args[-2].comma.whitespace_after if len(args) > 1 else None
                gap = gap or call.whitespace_before_args
                if isinstance(gap, cst.ParenthesizedWhitespace):  # the break, not its comment
                    gap = cst.ParenthesizedWhitespace(last_line=gap.last_line, indent=gap.indent)
                args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=gap))
                arg = arg.with_changes(comma=last.comma)
            else:  # what followed the last argument (a line break before `)`) follows the new
                space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                arg = arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
                args[-1] = last.with_changes(
                    comma=space, whitespace_after_arg=cst.SimpleWhitespace("")
                )
        return call.with_changes(args=[*args, arg])

    def parallel(call, autotune):  # noqa: ANN001, ANN202
        name = _called(cst, call)
        if name == "prefetch":
            if call.args and call.args[0].keyword is None:
                return call.with_changes(args=[call.args[0].with_changes(value=autotune),
                                               *call.args[1:]])  # fmt: skip
            return keyword(call, "buffer_size", autotune)
        if name in READERS or name in FEATURE_FILE_FACTORIES:
            return keyword(call, READ_THREADS.get(name, "num_parallel_reads"), autotune)
        if name in ("map", "interleave", "batch", "padded_batch", "flat_map"):
            if name == "flat_map":
                call = call.with_changes(func=call.func.with_changes(attr=cst.Name("interleave")))
            return keyword(call, "num_parallel_calls", autotune)
        return None

    def prefetch(call, autotune):  # noqa: ANN001, ANN202
        return cst.Call(func=cst.Attribute(value=call, attr=cst.Name("prefetch")),
                        args=[cst.Arg(value=autotune)])  # fmt: skip

    def cache(call, autotune):  # noqa: ANN001, ANN202, ARG001 - one signature for all
        return cst.Call(func=cst.Attribute(value=call, attr=cst.Name("cache")), args=[])

    def after(call, moved):  # noqa: ANN001, ANN202
        """``call`` then each moved call (``.shuffle(n)``, ``.repeat()``) as it was written."""
        for node in moved:
            call = node.with_changes(func=node.func.with_changes(value=call))
        return call

    def method(call, name: str, *args):  # noqa: ANN001, ANN202
        """``call.name(*args)``; an arg is a value, or a (keyword, value) pair."""
        written = [
            cst.Arg(value=cst.parse_expression(repr(a[1])), keyword=cst.Name(a[0]),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                          whitespace_after=cst.SimpleWhitespace("")))
            if isinstance(a, tuple) else cst.Arg(value=cst.parse_expression(repr(a)))
            for a in args
        ]  # fmt: skip
        return cst.Call(func=cst.Attribute(value=call, attr=cst.Name(name)), args=written)

    def added(call, stages, before: bool, autotune=None):  # noqa: ANN001, ANN202
        """``call`` with the stages a cache adds before it (``unbatch``) or after it."""
        for stage in stages:
            if (stage.op == "unbatch") != before:
                continue
            if stage.op == "prefetch":
                call = prefetch(call, autotune)
                continue
            extra = [("drop_remainder", True)] if stage.drop_remainder else []
            call = method(call, stage.op, *([stage.value] if stage.value is not None else []),
                          *extra)  # fmt: skip
        return call

    rewrites: dict[str, Callable] = {"PD101": prefetch, "PD102": parallel, "PD103": parallel,
                                     "PD104": parallel, "PD106": cache}  # fmt: skip

    class Fixer(cst.CSTTransformer):
        """The edits for ``targets`` (place → finding), the calls found at ``places``;
        ``moved``: for each measured cache, its moves and the calls they are."""

        def __init__(  # noqa: PLR0913 - one transformer, built once per file
            self,
            targets: dict,
            autotune: object,
            places: dict,
            moved: dict,
            caches: dict,
            deferred: dict,
        ) -> None:
            super().__init__()
            self.targets = targets
            self.deferred = deferred
            """``id`` of a call whose wraps go after a later statement → where (ReadLater)."""
            self.after: dict[int, list[object]] = {}
            """``id`` of a statement → the statements written right after it."""
            self.autotune = autotune
            self.caches = caches
            self.done: dict[tuple[int, int], tuple[str, str]] = {}
            self.at: dict[int, list[tuple[int, int]]] = {}
            """``id`` of a call → the places of its findings: one call may have several
            (a sequential ``map`` that a measured cache follows), in-place rewrites first,
            then the ones that wrap the call (``.cache()``, then ``.prefetch``)."""
            for key in sorted(targets, key=lambda k: WRAPS.index(targets[k].rule)
                              if targets[k].rule in WRAPS else -1):  # fmt: skip
                cache = caches.get(key)
                call = places.at(key, cache.method if cache else None)
                if call is not None:
                    self.at.setdefault(id(call), []).append(key)
            self.moved = {key: [call for _, call in pairs] for key, pairs in moved.items()}
            self.taken = {id(call): move for pairs in moved.values() for move, call in pairs}
            self.rewritten: dict[int, object] = {}
            """``id`` of each moved call as written → the call as it now reads (its own
            arguments' fixes in it), to be written after its cache."""
            self.emptied: set[int] = set()
            self._module = cst.Module([])

        def _code(self, node) -> str:  # noqa: ANN001
            return self._module.code_for_node(node)

        def leave_Call(self, original, updated):  # noqa: ANN001, ANN201, N802
            move = self.taken.get(id(original))
            if move is not None and not move.taken_out:
                self.rewritten[id(original)] = updated
                receiver = updated.func.value
                self.emptied.add(id(receiver))
                return receiver
            if move is not None:  # a shuffle turned off in its call, which a cache may follow
                updated = keyword(updated, "shuffle", cst.Name("False"))
            later = self.deferred.get(id(original))
            wrapped = updated if later is None else cst.Name(later.name)
            for key in self.at.get(id(original), ()):
                finding = self.targets[key]
                if finding.rule not in rewrites or key in self.done:
                    continue
                stages = self.caches[key].added if key in self.caches else ()
                new = rewrites[finding.rule](added(wrapped, stages, True), self.autotune)
                if new is None:
                    continue
                if finding.rule == "PD106":
                    moved = [c for c in self.moved.get(key, ()) if not self.taken[id(c)].taken_out]
                    new = after(new, [self.rewritten.get(id(c), c) for c in moved])
                    new = added(new, stages, False, self.autotune)
                wrapped = new
                if later is None:
                    self.done[key] = (self._code(original), self._code(new))
                    updated = new
                else:
                    self.done[key] = (self._code(original), f"{later.name} = {self._code(new)}")
            if later is not None and not isinstance(wrapped, cst.Name):
                target = cst.AssignTarget(target=cst.Name(later.name))
                statement = cst.SimpleStatementLine([cst.Assign([target], wrapped)])
                self.after.setdefault(id(later.last), []).append(statement)
            return updated

        def on_leave(self, original, updated):  # noqa: ANN001, ANN201
            """A wrap kept apart from its call (``ReadLater``) is written after its statement."""
            updated = super().on_leave(original, updated)
            extra = self.after.get(id(original))
            if extra and isinstance(updated, cst.CSTNode):
                return cst.FlattenSentinel([updated, *extra])
            return updated

        def leave_SimpleStatementLine(self, original, updated):  # noqa: ANN001, ANN201, N802
            """``ds = ds.shuffle(n)`` whose shuffle moved after a cache goes as a whole."""
            body = updated.body
            if (
                len(body) == 1
                and isinstance(body[0], cst.Assign)
                and id(body[0].value) in self.emptied
            ):
                targets = body[0].targets
                value = body[0].value
                if (
                    len(targets) == 1
                    and isinstance(targets[0].target, cst.Name)
                    and isinstance(value, cst.Name)
                    and targets[0].target.value == value.value
                ):
                    return cst.RemoveFromParent()
            return updated

        def leave_Expr(self, original, updated):  # noqa: ANN001, ANN201, N802
            call = original.value
            keys = self.at.get(id(call), ()) if isinstance(call, cst.Call) else ()
            key = next((k for k in keys if self.targets[k].rule == "PD112"), None)
            if key is None:
                return updated
            root = call
            while isinstance(root, cst.Call | cst.Attribute):
                root = root.func if isinstance(root, cst.Call) else root.value
            if not isinstance(root, cst.Name):
                return updated
            new = cst.Assign(targets=[cst.AssignTarget(target=cst.Name(root.value))],
                             value=updated.value)  # fmt: skip
            self.done[key] = (self._code(original), self._code(new))
            return new

    return Fixer


def plan_notebook(
    text: str, findings: Sequence[Finding], safeties: dict[str, str], *, unsafe: bool = False
) -> tuple[str, list[Edit], list[tuple[Finding, str]]]:
    """A notebook fixed cell by cell: only the ``source`` of the code cells with fixes
    changes; outputs, metadata and the file's JSON layout stay as they were (a notebook whose
    layout would not survive being written again is left alone)."""
    import json

    try:
        data = json.loads(text)
    except ValueError:
        raise FixError("is not valid notebook JSON: left untouched") from None
    dump = _json_layout(text, data)
    if dump is None:
        raise FixError("its JSON layout would not survive being written again: left untouched")
    from pipedoctor.static.notebook import NotebookError, cells_of, read_notebook, source_key

    try:
        cells = cells_of(data)  # nbformat 4's cells, or 3's, under its worksheets
    except NotebookError:
        raise FixError("has no cells: left untouched") from None

    joined = read_notebook(text)
    autotune = autotune_expression(require_libcst().parse_module(joined.text)) if joined else None
    edits: list[Edit] = []
    skipped: list[tuple[Finding, str]] = []
    for number, cell in enumerate(cells, start=1):
        found = [f for f in findings if f.cell == number]
        if not found:
            continue
        key = source_key(cell) if isinstance(cell, dict) else "source"
        source = cell.get(key) if isinstance(cell, dict) else None
        lines = source if isinstance(source, list) else None
        code = "".join(source) if lines is not None else source
        if not isinstance(code, str) or cell.get("cell_type") != "code":
            skipped += [(f, "the cell's source cannot be read") for f in found]
            continue
        try:
            fixed, done, left = plan(
                code, found, safeties, unsafe=unsafe, autotune=autotune, cell=True
            )
        except FixError:  # IPython lines (`!pip`, `%magic`) do not parse as Python
            skipped += [(f, "the cell holds IPython syntax: fix it by hand") for f in found]
            continue
        skipped += left
        edits += [replace(e, cell=number) for e in done]
        if done:
            cell[key] = fixed.splitlines(keepends=True) if lines is not None else fixed
    return dump(data), edits, skipped


def _json_layout(text: str, data: object) -> Callable[[object], str] | None:
    """How to write ``data`` back exactly as ``text`` lays it out (the indent, escaped or
    plain non-ASCII, sorted keys, a final newline), or ``None`` when no such way is found."""
    import json

    if "\r\n" in text:  # JSON escapes the newlines in its strings: every raw one is layout
        plain = _json_layout(text.replace("\r\n", "\n"), data)
        return None if plain is None else (lambda value: plain(value).replace("\n", "\r\n"))
    second = text.split("\n", 2)[1] if text.count("\n") >= 2 else ""
    indent = (len(second) - len(second.lstrip(" "))) or None
    end = "\n" if text.endswith("\n") else ""
    for ascii_only in (False, True):
        for sort_keys in (False, True):

            def dump(value: object, a: bool = ascii_only, k: bool = sort_keys) -> str:
                return json.dumps(value, indent=indent, ensure_ascii=a, sort_keys=k) + end

            if dump(data) == text:
                return dump
    return None


@dataclass(frozen=True)
class Encoded:
    """How a file's text is held in bytes, so a fix writes back every byte it did not change:
    its encoding (from a BOM or a PEP 263 cookie; ``utf-8-sig`` writes the BOM back) and its
    line endings, kept as they are (the text is decoded without newline translation)."""

    encoding: str = "utf-8"

    def decode(self, data: bytes) -> str:
        return data.decode(self.encoding)

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def read_source(path: Path) -> tuple[str, Encoded]:
    """A file's text exactly as its bytes hold it, and how to write it back. Raises ``OSError``
    or ``UnicodeDecodeError`` (or ``SyntaxError`` for a cookie naming no codec)."""
    data = path.read_bytes()
    if path.suffix == ".ipynb":
        encoded = Encoded("utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8")
    else:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        encoded = Encoded("utf-8-sig" if encoding == "utf-8-sig" else encoding)
    return encoded.decode(data), encoded


def unified_diff(path: str, before: str, after: str) -> str:
    """What ``--diff`` prints for one file."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}",
        )
    )  # fmt: skip


def apply_text(path: Path, expected: str, fixed: str, encoded: Encoded | None = None) -> None:
    """Write ``fixed`` over ``path`` through a temporary file in the same folder and a rename,
    keeping its permissions and its bytes' encoding; refuse when the file changed since it was
    read (``expected``), or when it cannot be written. Raises ``FixError`` with the reason."""
    encoded = encoded or Encoded()
    try:
        current = encoded.decode(path.read_bytes())
    except (OSError, UnicodeDecodeError) as exc:
        raise FixError(f"cannot read it again ({getattr(exc, 'strerror', None) or exc})") from None
    if current != expected:
        raise FixError("it changed since it was read: left as it is")
    write_bytes(path, encoded.encode(fixed))


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path``'s bytes through a temporary file in its folder and a rename, keeping
    its permissions; ``FixError`` when it is read-only or cannot be written."""
    mode = path.stat().st_mode
    if not os.access(path, os.W_OK) or not mode & 0o222:  # no write bit: even root leaves it
        raise FixError("it is read-only: left as it is")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise FixError(f"cannot be written ({exc.strerror or exc}): left as it is") from None


def apply(
    path: Path,
    source: str,
    findings: Iterable[Finding],
    safeties: dict[str, str],
    *,
    unsafe: bool = False,
    verify: Callable[[str], Sequence[Finding]] | None = None,
    write: bool = True,
    moves: Moves | None = None,
    encoded: Encoded | None = None,
) -> tuple[str, list[Edit], list[tuple[Finding, str]]]:
    """Plan the fixes for one file, check the result still compiles and (with ``verify``, a
    lint of the new text) that each fixed rule fires fewer times, then write it (``write``)
    in the bytes' own encoding (``encoded``). A file too deeply nested for the fixer's
    parser is left untouched, with the reason."""
    findings = list(findings)
    try:
        if path.suffix == ".ipynb":
            fixed, edits, skipped = plan_notebook(source, findings, safeties, unsafe=unsafe)
        else:
            try:
                compile(source, str(path), "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                raise FixError("has a syntax error: left untouched") from None
            fixed, edits, skipped = plan(source, findings, safeties, unsafe=unsafe, moves=moves)
    except (RecursionError, MemoryError):
        raise FixError("is nested too deeply for the fixer's parser: left untouched") from None
    if not edits:
        return source, [], skipped
    if path.suffix != ".ipynb":
        try:
            compile(fixed, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            raise FixError(f"the fixed text would not compile ({exc}): left as it is") from None
    if verify is not None:
        after = verify(fixed)
        for rule in {e.rule for e in edits}:
            before_n = sum(f.rule == rule for f in findings)
            if sum(f.rule == rule for f in after) >= before_n:
                raise FixError(f"{rule} still fires after its fix: left as it is")
    if write:
        apply_text(path, source, fixed, encoded)
    return fixed, edits, skipped
