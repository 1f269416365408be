"""Where each dataset a module builds ends up, so each rule judges only the pipelines it is about.

The interpreter reports every use of a dataset value here: handed to ``fit`` or a strategy,
iterated in a loop, printed, written out, given to ``adapt()``. A use is recorded against the
pipeline's place in the source (the lines of its stages), so code reached from several call
sites or branches has one set of ends and each rule judges each place once.

A loop says what it does with a dataset through the names in its body: a loop that calls
``train_step`` or applies gradients trains, one that calls ``test_step`` evaluates (and is
validation when it runs inside a training loop), one that only prints inspects. A call the
analysis cannot follow is read the same way from its name (``SidecarEvaluator``,
``index_from_dataset``, ``plot_images``); when nothing in a name says, the end is unknown and
the rules judge the dataset as before, since a library's ``make_dataset()`` is real code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePath

from pipedoctor.pipeline import Pipeline, ProjectUse, Stage, Stages, Uses
from pipedoctor.static.values import Func, Imported, Obj, Seq, Stream, Value

TRAINING_WORDS = frozenset(
    {"train", "training", "fit", "optimizer", "minimize", "gradients", "gradient", "backward"}
)
"""Words in a loop body or callee name that say it trains (``train_step``, ``apply_gradients``,
``GradientTape``)."""
WEAK_TRAINING_WORDS = frozenset({"step", "loss", "steps"})
"""Words that say so only when nothing says evaluation (``step_fn``, ``loss = model(x)``)."""
EVALUATION_WORDS = frozenset(
    {
        "test",
        "tests",
        "eval",
        "evaluate",
        "evaluation",
        "evaluator",
        "val",
        "valid",
        "validate",
        "validation",
        "predict",
        "prediction",
        "predictions",
        "infer",
        "inference",
        "metric",
        "metrics",
        "candidates",
    }
)
EXPORT_WORDS = frozenset({"write", "writer", "save", "export", "serialize", "dump", "index"})
INSPECTION_WORDS = frozenset(
    {"print", "plot", "show", "imshow", "display", "visualize", "visualise", "gallery", "pprint"}
)
SYNTHETIC_WORDS = frozenset({"fake", "synthetic", "dummy", "null"})
"""Words in an ``if`` test or a function name that mark input made up on purpose."""
INSPECTING_BUILTINS = frozenset(
    {"print", "list", "len", "tuple", "sorted", "repr", "str", "set", "dict", "sum", "max", "min"}
)
"""Builtins that look at a dataset's elements; ``iter``/``next``/``enumerate`` only pass it on."""
STREAMING_CALLS = frozenset({"iter", "enumerate", "tensorflow_datasets.as_numpy", "tqdm", "zip"})

RUNNERS = frozenset({"run", "schedule", "experimental_run_v2", "call_for_each_replica"})
"""Calls that run the function given first: ``strategy.run(train_step, args=...)``."""
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
PlaceKey = int


@lru_cache(maxsize=8192)
def _words(name: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(name))


def words(name: str) -> set[str]:
    """``distributedTrainStep`` / ``eval_input_fn`` → their lower-case words."""
    return set(_words(name))


class Places:
    """Each pipeline's place in the source (its stages' ops and positions) as a number, so
    pipelines at one place, from any call site or branch, share their ends.

    Places form a tree, a place's parent being that of the pipeline without its last stage.
    A place is numbered once, from its last stage and its parent's number, and each stage
    remembers the number of the place it ends: numbering every pipeline a module builds is
    linear in the stages it creates, however long the chains (``ds = ds.map(...)`` on every
    line of a file)."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[int, tuple], int] = {}
        self.parents: list[int] = [-1]
        """Place number → its parent's; 0 is the empty pipeline."""
        self.by_stage: dict[int, tuple[Stage, Stage | None, int]] = {}
        """``id(stage)`` → (the stage, the stage before it, the place it ends), as first
        numbered: each stage the interpreter makes extends one pipeline, so a stage with
        that stage before it stands for its whole prefix."""

    def key(self, pipeline: Pipeline) -> PlaceKey:
        stages = pipeline.stages
        i = len(stages) - 1
        number = 0
        while i >= 0:  # the longest prefix numbered already (usually all but the last stage)
            known = self.by_stage.get(id(stages[i]))
            if known is not None and known[0] is stages[i] and known[1] is _before(stages, i):
                number = known[2]
                break
            i -= 1
        for j in range(i + 1, len(stages)):
            stage = stages[j]
            where = stage.location
            element = (stage.op, where.line, where.column) if where else (stage.op,)
            found = self.numbers.get((number, element))
            if found is None:
                found = self.numbers[(number, element)] = len(self.parents)
                self.parents.append(number)
            number = found
            self.by_stage.setdefault(id(stage), (stage, _before(stages, j), number))
        return number

    def within(self, key: PlaceKey, prefix: PlaceKey) -> bool:
        """Whether the place ``prefix`` is ``key`` or one of its prefixes."""
        while key > 0:
            if key == prefix:
                return True
            key = self.parents[key]
        return False


def _before(stages: Stages, i: int) -> Stage | None:
    return stages[i - 1] if i else None


def is_synthetic_source(pipeline: Pipeline) -> bool:
    """``range(1).repeat()`` or ``from_tensors(x).repeat()``: one made-up element forever."""
    if len(pipeline.stages) < 2 or pipeline.stages[1].op != "repeat":
        return False
    source, repeat = pipeline.stages[0], pipeline.stages[1]
    if repeat.param("count") is not None:
        return False
    return source.op == "from_tensors" or source.op == "range" and source.param("arg0") == 1


def is_test_module(path: str, tree: ast.Module) -> bool:
    """Unit tests (``test_*.py``, ``*_test.py``, a ``TestCase`` class) are not training code."""
    name = PurePath(path).name
    if (
        name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py"))
        or name == "conftest.py"
    ):
        return True
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                # the last name of ``unittest.TestCase``, ``tf.test.TestCase`` (no unparse: an
                # attribute chain may be deeper than it can recurse)
                last = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                if isinstance(base, (ast.Name, ast.Attribute)) and last.endswith("TestCase"):
                    return True
    return False


def synthetic_name(name: str) -> bool:
    return bool(words(name) & SYNTHETIC_WORDS)


def synthetic_branch(test: ast.expr) -> str | None:
    """Which branch of ``if test:`` builds made-up input: ``"body"``, ``"orelse"`` or None."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if negated else test
    for node in ast.walk(inner):
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(name, str) and words(name) & SYNTHETIC_WORDS:
            return "orelse" if negated else "body"
    return None


@dataclass(frozen=True)
class Vocabulary:
    """The words of a loop body: what it calls, and what it assigns to."""

    calls: frozenset[str]
    assigned: frozenset[str]
    yields: bool = False
    """The body yields: the loop feeds a generator."""

    def trains(self) -> bool:
        """Strong evidence: it calls ``train_step``, ``apply_gradients``, ``GradientTape``."""
        return bool(self.calls & TRAINING_WORDS)

    def evaluates(self) -> bool:
        return bool(self.calls & EVALUATION_WORDS)

    def steps(self) -> bool:
        """Weak evidence: it calls a ``step_fn`` or assigns a ``loss``."""
        return bool(self.calls & WEAK_TRAINING_WORDS or "loss" in self.assigned)


def body_words(body: Iterable[ast.AST]) -> Vocabulary:
    """The words of the calls a block makes and the names it assigns (nested definitions left
    out). Variable names do not count: ``training_digits`` trains nothing."""
    calls: set[str] = set()
    assigned: set[str] = set()
    yields = False
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yields |= isinstance(node, (ast.Yield, ast.YieldFrom))
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            calls |= words(name)
            if name in RUNNERS and node.args:  # ``strategy.run(train_step, ...)``
                first = node.args[0]
                calls |= words(
                    first.id if isinstance(first, ast.Name) else getattr(first, "attr", "")
                )
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned |= words(node.id)
        for field in node._fields:  # ``ast.iter_child_nodes``, without its generator
            child = getattr(node, field, None)
            if isinstance(child, ast.AST):
                pending.append(child)
            elif isinstance(child, list):
                pending.extend(c for c in child if isinstance(c, ast.AST))
    return Vocabulary(frozenset(calls), frozenset(assigned), yields)


def loop_end(vocabulary: Vocabulary, enclosing: list[Vocabulary]) -> str:
    """What a loop over a dataset does with it, from the words of its body."""
    if vocabulary.trains():
        return "training"
    if vocabulary.evaluates():
        inside_training = any(v.trains() or v.steps() for v in enclosing)
        return "validation" if inside_training else "evaluation"
    if vocabulary.steps():
        return "training"
    return "inspection"


def consumer_end(names: Iterable[str], keywords: Iterable[str] = ()) -> str | None:
    """The end a call the analysis cannot follow gives the datasets passed to it, read from
    the callee's name and those of the functions passed with them; None when nothing says."""
    vocabulary: set[str] = set()
    for name in names:
        vocabulary |= words(name)
    keys = set(keywords)
    if "adapt" in vocabulary:
        return "adapt"
    if "validation_data" in keys:
        return "validation"
    if "candidates" in keys or vocabulary & EVALUATION_WORDS:
        return "evaluation"
    if vocabulary & EXPORT_WORDS:
        return "export"
    if vocabulary & INSPECTION_WORDS:
        return "inspection"
    if vocabulary & TRAINING_WORDS or vocabulary & WEAK_TRAINING_WORDS:
        return "training"
    return None


def function_names(values: Iterable[Value]) -> Iterator[str]:
    """Names of the module functions among call arguments (``schedule(step_fn, ...)``)."""
    for value in values:
        if isinstance(value, Func) and isinstance(
            value.node, (ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            yield value.node.name


class DataFlow:
    """The datasets a module creates and every end the code sends them to."""

    def __init__(self, exports_module_names: bool) -> None:
        self.exports_module_names = exports_module_names
        """A ``.py`` module's top-level datasets can be imported elsewhere: their end is
        unknown. A notebook's are used in the notebook or not at all, as are those of a script
        that trains as it runs (``trains_on_import``)."""
        self.places = Places()
        self.created: list[Stages] = []
        """The stages of each pipeline created, in order. A view of a shared list
        (:class:`Stages`), so holding every ``ds = ds.map(...)`` of a long file costs one
        stage per line, not the square of the file's length."""
        self.ends: dict[PlaceKey, set[str]] = {}
        self.module_level: set[PlaceKey] = set()
        self.distributed: dict[PlaceKey, Obj] = {}
        """The strategy that distributes a dataset, where one does."""
        self.feeds: list[tuple[PlaceKey, Value]] = []
        """(a ``from_generator`` source, a dataset its generator iterates)."""
        self.hows: dict[PlaceKey, dict[str, str]] = {}
        """Place → end → how the code first reached that end (``fit (line 40)``)."""
        self.epochs: dict[PlaceKey, list[int | None]] = {}
        """Place → the epochs of each training use (None: not a literal)."""
        self.handled: dict[PlaceKey, str] = {}
        """Place → a library that batches and prefetches the dataset it is handed."""
        self.returned: dict[PlaceKey, tuple[str, bool, str]] = {}
        """Place → (the function returning it to callers elsewhere, whether a parameter of
        that function says training, the project pass's key for it)."""
        self.project_uses: list[ProjectUse] = []
        """Datasets from functions of other modules of the project, and their ends here."""

    def create(self, pipeline: Pipeline) -> None:
        self.key(pipeline)
        self.created.append(pipeline.stages)

    def key(self, pipeline: Pipeline) -> PlaceKey:
        """The pipeline's place in the source: its stages' ops and positions."""
        return self.places.key(pipeline)

    def module_binding(self, value: Value) -> None:
        """A dataset bound to a name at module level (importable from a ``.py`` module)."""
        for pipeline in datasets_in(value):
            self.module_level.add(self.key(pipeline))

    def use(
        self,
        value: Value,
        end: str,
        how: str = "",
        epochs: int | None | bool = False,
        handled_by: str = "",
        returned_by: tuple[str, bool, str] | None = None,
    ) -> None:
        """Record that ``value`` (a dataset, a stream over one, or a tuple of them) ends so:
        ``how`` says where (for the evidence a finding cites), ``epochs`` how many times a
        training use reads it (None: not a literal; False: not said), ``handled_by`` a
        library that batches and prefetches it itself."""
        for pipeline in datasets_in(value):
            key = self.key(pipeline)
            self.ends.setdefault(key, set()).add(end)
            if how:
                self.hows.setdefault(key, {}).setdefault(end, how)
            if epochs is not False:
                self.epochs.setdefault(key, []).append(epochs)  # type: ignore[arg-type]
            if handled_by:
                self.handled[key] = handled_by
            if returned_by is not None:
                self.returned.setdefault(key, returned_by)
        if isinstance(value, Stream) and value.strategy is not None:
            self.distributed[self.key(value.pipeline)] = value.strategy
        for imported in imported_in(value):
            if end in ("training", "validation"):
                changed = bool(imported.then)
                self.project_uses.append(
                    ProjectUse(imported.origin, imported.index, end, how, changed)
                )
            elif end == "unknown" and returned_by is not None:
                self.project_uses.append(
                    ProjectUse(
                        imported.origin,
                        imported.index,
                        "returned",
                        how,
                        bool(imported.then),
                        returned_by[2],
                    )
                )

    def trains_on_import(self) -> None:
        """The module calls ``fit`` at its top level: it is a script, which no module imports
        (that would train), so a top-level dataset it never uses is unused, not exported."""
        self.exports_module_names = False

    def distribute(self, value: Value, strategy: Obj) -> None:
        """``value``'s datasets are handed to ``strategy`` (a ``fit`` under it)."""
        for pipeline in datasets_in(value):
            self.distributed.setdefault(self.key(pipeline), strategy)
        for imported in imported_in(value):  # its iterator prefetches: the dataset changes
            self.project_uses.append(ProjectUse(imported.origin, imported.index, "distributed"))

    def uses_of(self, key: PlaceKey) -> Uses:
        """What the code was seen to do with the dataset at ``key``, for the evidence."""
        hows = self.hows.get(key, {})
        counts = self.epochs.get(key, [])
        known = [n for n in counts if n is not None]
        return Uses(
            how=tuple(sorted(hows.items())),
            epochs=max(known) if known and len(known) == len(counts) else None,
            one_epoch=bool(counts) and all(n == 1 for n in counts),
            handled_by=self.handled.get(key, ""),
            returned_by=self.returned.get(key, ("", False, ""))[0],
            returned_as=self.returned.get(key, ("", False, ""))[2],
            distributed=key in self.distributed,
            training_flag=self.returned.get(key, ("", False, ""))[1],
        )

    def strategy_of(self, pipeline: Pipeline) -> Obj | None:
        return self.distributed.get(self.key(pipeline))

    def ends_of(self, pipeline: Pipeline) -> set[str]:
        return self.ends.get(self.key(pipeline), set())

    def feed(self, generated: Pipeline, fed: Value) -> None:
        """``fed`` is iterated by the generator of ``generated``: it ends where that does."""
        self.feeds.append((self.key(generated), fed))

    def settle_feeds(self) -> None:
        for source, fed in self.feeds:
            for key, ends in list(self.ends.items()):
                if self.places.within(key, source):
                    for end in ends:
                        how = self.hows.get(key, {}).get(end, "")
                        self.use(fed, end, f"feeds a generator that {how}" if how else "")

    def judged(self) -> list[Pipeline]:
        """Every pipeline the code uses, with its ends, plus the unused leaves a module
        exports; made-up input (``range(1).repeat()``) is left out."""
        self.settle_feeds()
        extended = self.extended()
        judged: list[Pipeline] = []
        seen: set[tuple] = set()
        for record in self.created:
            pipeline = Pipeline(record)
            key = self.key(pipeline)
            ends = set(self.ends.get(key, ()))
            if not ends:
                if key in extended:
                    continue
                if not (self.exports_module_names and key in self.module_level):
                    continue  # built and never used
                ends = {"unknown"}
                self.hows.setdefault(key, {}).setdefault(
                    "unknown", "bound at the top of a module other modules may import"
                )
            if is_synthetic_source(pipeline):
                continue
            identity = (
                key,
                tuple(repr(sorted(s.params.items(), key=str)) for s in pipeline.stages),
            )
            if identity in seen:
                continue
            seen.add(identity)
            judged.append(pipeline.with_ends(frozenset(ends), self.uses_of(key)))
        return judged

    def extended(self) -> set[PlaceKey]:
        """Places another pipeline carries on from: the proper prefixes of every pipeline the
        module creates, and each pipeline given to a ``zip`` or ``concatenate`` (with its
        prefixes). Each stage is looked at once, however often its pipeline is shared."""
        extended: set[PlaceKey] = set()
        parents = self.places.parents
        looked: dict[int, Stage | None] = {}
        """``id(stage)`` → the stage before it, for the stages whose inputs are marked."""

        def mark(key: PlaceKey) -> None:
            while key > 0 and key not in extended:  # a marked place has its prefixes marked
                extended.add(key)
                key = parents[key]

        def look(stage: Stage, before: Stage | None) -> bool:
            """Mark the inputs of ``stage``; False once it was looked at, with the same
            stage before it (and so are the stages before it, the same prefix)."""
            if id(stage) in looked and looked[id(stage)] is before:
                return False
            looked[id(stage)] = before
            for upstream in stage.inputs:
                mark(self.key(upstream))
                pending.append(upstream)
            return True

        pending: list[Pipeline] = []
        pending.extend(Pipeline(record) for record in self.created)
        while pending:
            pipeline = pending.pop()
            mark(parents[self.key(pipeline)])
            stages = pipeline.stages
            for i in range(len(stages) - 1, -1, -1):
                if not look(stages[i], _before(stages, i)):
                    break
        return extended


def imported_in(value: Value) -> Iterator[Imported]:
    """What calls to functions of the project's other modules returned, in ``value``."""
    if isinstance(value, Imported):
        if value.called and value.origin:
            yield value
    elif isinstance(value, Seq):
        for item in value.items:
            yield from imported_in(item)


def datasets_in(value: Value) -> Iterator[Pipeline]:
    if isinstance(value, Pipeline):
        yield value
    elif isinstance(value, Stream):
        yield value.pipeline
    elif isinstance(value, Seq):
        for item in value.items:
            yield from datasets_in(item)
