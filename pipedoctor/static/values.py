"""Abstract values: what the static interpreter knows about an expression without running it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any

from pipedoctor.pipeline import Pipeline

MAX_SEQ_SIZE = 2_000
"""Values a tuple or list may hold, counted through nested ones, before it is unknown."""
MAX_SEQ_DEPTH = 32
"""Tuples nested in tuples before the value is unknown."""
MAX_TEXT = 10_000
"""Characters (or bytes) a string computed from constants may have before it is unknown."""
MAX_INT_BITS = 256
"""Bits an integer computed from constants may have before it is unknown."""


@dataclass(frozen=True)
class Unknown:
    """Not visible statically. ``per_replica`` is set for values derived from
    ``strategy.num_replicas_in_sync`` (``replicas``), with the per-replica factor when seen."""

    replicas: bool = False
    per_replica: int | None = None


OPAQUE = Unknown()
REPLICAS = Unknown(replicas=True)


@dataclass(frozen=True)
class Imported(Unknown):
    """A name imported from a module of the user's own project (``from data import make_ds``),
    or what calling it gives: unknown here, but the project pass
    (:mod:`pipedoctor.static.project`) can find the function in another file of the lint, and
    learn there whether what it returns is a dataset that trains."""

    origin: str = ""
    """The dotted name as imported: ``pkg.data.make_ds``, or ``.data.make_ds`` (relative)."""
    called: bool = False
    index: str | None = None
    """The item taken from what the call returned (``train_ds, val_ds = make_ds()``)."""
    then: tuple[str, ...] = ()
    """What the caller did with the result before it trained (``map``, ``prefetch``, a
    strategy's distribution): the dataset trained is then not the one returned as it was."""

    def member(self, name: str) -> Imported:
        """``module.name``, ``Class.method``, or a method called on what a call returned."""
        if self.index is not None or self.then:
            return Imported(origin="")
        return Imported(origin=f"{self.origin}.{name}" if self.origin else "")

    def item(self, index: object) -> Imported:
        if not self.called or self.index is not None:
            return Imported(origin="")
        return replace(self, index=str(index))

    def after(self, step: str) -> Imported:
        return replace(self, then=(*self.then, step))


@dataclass(frozen=True)
class Const:
    """A Python literal (or arithmetic over literals) seen in the source."""

    value: Any
    varies: bool = field(default=False, compare=False)
    """Bound differently on another branch (``if tpu: batch = 1024 else: batch = 64``): the
    value seen is one of several, so a rule that reads it as the constant can be wrong."""


@dataclass(frozen=True)
class Autotune:
    """``tf.data.AUTOTUNE`` under any spelling or alias."""


AUTOTUNE_VALUE = Autotune()


@dataclass(frozen=True)
class Ref:
    """A TensorFlow/Keras API object not yet called: ``tf.data.Dataset``, ``keras.layers.Dense``."""

    name: str


@dataclass(frozen=True)
class Seq:
    """A tuple or list whose items are abstract values."""

    items: tuple[Value, ...]
    size: int = field(default=0, compare=False, repr=False)
    """Values in it, counted through nested tuples (a tuple held twice counts twice): what
    walking, printing or comparing it costs."""
    depth: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        size, depth = len(self.items), 1
        for item in self.items:
            if isinstance(item, Seq):
                size += item.size
                depth = max(depth, item.depth + 1)
            elif isinstance(item, Func):
                size += item.weight
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "depth", depth)

    @property
    def oversized(self) -> bool:
        return self.size > MAX_SEQ_SIZE or self.depth > MAX_SEQ_DEPTH


@dataclass(frozen=True)
class Obj:
    """An instance of a TensorFlow/Keras class the rules care about.

    ``kind`` is one of ``strategy``, ``scope``, ``layer``, ``model``, ``optimizer``,
    ``options``, ``transform`` (a ``tf.data.experimental`` transformation for ``apply``).
    """

    kind: str
    name: str
    data: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.data).get(key, default)


@dataclass(eq=False)
class Func:
    """A function defined in the analysed module (``def``, ``lambda``, bound method, partial)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    closure: Any  # Frame of the enclosing scope
    bound: tuple[Value, ...] = ()
    bound_kwargs: tuple[tuple[str, Value], ...] = ()
    owner: ClassInfo | None = None
    weight: int = field(default=1, repr=False)
    """Values bound into it by ``functools.partial``, counted through those that are
    partials or tuples themselves (see ``Seq.size``)."""


@dataclass(eq=False)
class ClassInfo:
    """A class defined in the analysed module, with its ``self`` attributes as they are set."""

    node: ast.ClassDef
    bases: tuple[str, ...]
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    attrs: dict[str, Value] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Instance:
    """``self`` (or any instance) of a class defined in the module."""

    cls: ClassInfo


@dataclass(frozen=True)
class Method:
    """``receiver.name`` before it is called."""

    receiver: Value
    name: str


@dataclass(frozen=True, eq=False)
class Stream:
    """A dataset seen through ``iter()``, ``enumerate()``, ``as_numpy_iterator()`` or a
    strategy's distribution: using it is using the dataset. ``strategy`` is the strategy
    object that distributes it, when one does."""

    pipeline: Pipeline
    strategy: Obj | None = None


Value = (
    Unknown
    | Const
    | Autotune
    | Ref
    | Seq
    | Obj
    | Func
    | ClassInfo
    | Instance
    | Method
    | Pipeline
    | Stream
)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


class Frame:
    """One scope's variables; lookups fall back to the enclosing scope, then the module."""

    __slots__ = ("vars", "parent", "returns")

    def __init__(self, parent: Frame | None = None) -> None:
        self.vars: dict[str, Value] = {}
        self.parent = parent
        self.returns: list[Value] = []

    def lookup(self, name: str) -> Value | None:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.vars:
                return frame.vars[name]
            frame = frame.parent
        return None


def weight(value: Value) -> int:
    """What a value counts for in ``Seq.size`` and ``Func.weight``."""
    if isinstance(value, Seq):
        return value.size + 1
    if isinstance(value, Func):
        return value.weight
    return 1


def fold(op: ast.operator, a: Any, b: Any) -> Value:
    """``a op b`` for two constants from the source, computed only while it stays small: the
    code may build a huge string or number (``s = s + s`` forty times, even in dead code),
    and the analysis must not. Anything else is unknown."""
    texts = (str, bytes)
    if isinstance(a, texts) or isinstance(b, texts):
        if isinstance(op, ast.Add) and type(a) is type(b) and len(a) + len(b) <= MAX_TEXT:
            return Const(a + b)
        return OPAQUE  # ``"ab" * n``, ``"%s" % x``, ``b"" + ""``: nothing a rule reads
    numbers = (int, float)
    if not isinstance(a, numbers) or not isinstance(b, numbers):
        return OPAQUE
    if any(isinstance(x, int) and x.bit_length() > MAX_INT_BITS for x in (a, b)):
        return OPAQUE
    try:
        if isinstance(op, ast.Add):
            result = a + b
        elif isinstance(op, ast.Sub):
            result = a - b
        elif isinstance(op, ast.Mult):
            result = a * b
        elif isinstance(op, ast.Div):
            result = a / b
        elif isinstance(op, ast.FloorDiv):
            result = a // b
        else:
            return OPAQUE
    except (ArithmeticError, ValueError):
        return OPAQUE
    if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
        return OPAQUE
    return Const(result)
