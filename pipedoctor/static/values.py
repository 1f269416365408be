"""Abstract values: what the static interpreter knows about an expression without running it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.pipeline import Pipeline


@dataclass(frozen=True)
class Unknown:
    """Not visible statically. ``per_replica`` is set for values derived from
    ``strategy.num_replicas_in_sync`` (``replicas``), with the per-replica factor when seen."""

    replicas: bool = False
    per_replica: int | None = None


OPAQUE = Unknown()
REPLICAS = Unknown(replicas=True)


@dataclass(frozen=True)
class Const:
    """A Python literal (or arithmetic over literals) seen in the source."""

    value: Any


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
