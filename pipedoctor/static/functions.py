"""What a function handed to ``Dataset.map`` (or its kin) does, read from its body.

The rules ask whether a mapped function decodes, draws random numbers, runs Python
(``py_function``, ``numpy_function``), is cheap enough that parallelism gains nothing, or
works element by element; :class:`FunctionInspector` answers from the function's code and the
module helpers it calls, evaluating names with the interpreter that found the function.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from pipedoctor.pipeline import FunctionFacts
from pipedoctor.static import api
from pipedoctor.static.names import dotted_name
from pipedoctor.static.values import (
    OPAQUE,
    Const,
    Frame,
    Func,
    FunctionNode,
    Method,
    Obj,
    Ref,
    Seq,
    Unknown,
    Value,
)

if TYPE_CHECKING:
    from pipedoctor.static.interpreter import ModuleInterpreter


DICT_METHODS = frozenset({"get", "items", "keys", "values", "pop", "copy", "update", "setdefault"})
"""Methods of the element's dict of features: structure, no work per element."""
TENSOR_METHODS = frozenset({"set_shape", "get_shape", "shape", "astype", "__getitem__"})
"""Methods of a tensor that only say or change its shape or type."""


class FunctionInspector:
    """Reads a mapped function's body (and the module helpers it calls) for the facts rules use."""

    MAX_NESTING = 3

    def __init__(self, interpreter: ModuleInterpreter, func: Func, depth: int = 0) -> None:
        self.interpreter = interpreter
        self.func = func
        self.depth = depth

    def facts(self) -> FunctionFacts:
        node = self.func.node
        frame = Frame(self.func.closure)
        for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            frame.vars[arg.arg] = OPAQUE
        if self.func.bound and isinstance(node, FunctionNode):
            positional = node.args.posonlyargs + node.args.args
            for arg, value in zip(positional, self.func.bound, strict=False):
                frame.vars[arg.arg] = value
        body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
        calls: set[str] = set()
        work: dict[str, None] = {}
        unseen: dict[str, None] = {}
        merged = FunctionFacts(elementwise=self.elementwise(node))
        decodes = random = augments = python = stateful = False
        reader = None
        for stmt in body:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.While) or (
                    isinstance(sub, (ast.For, ast.comprehension))
                    and not self.unrolled(sub.iter, frame)
                ):
                    work["loops over its input"] = None
                if not isinstance(sub, ast.Call):
                    continue
                callee = self.interpreter.eval(sub.func, frame)
                stateful |= isinstance(sub.func, ast.Attribute) and sub.func.attr in api.TABLE_OPS
                for found in self.cost(sub, callee):
                    (work if found[0] else unseen)[found[1]] = None
                if isinstance(callee, Ref):
                    name = callee.name
                    calls.add(name)
                    decodes |= api.is_decode(name)
                    if name in api.PYTHON_CALLS:
                        given = self.interpreter.eval(sub.args[0], frame) if sub.args else None
                        python |= not (isinstance(given, Func) and only_waits(given.node))
                    if api.is_stateless_random(name):
                        changing = not self.constant_seed(sub)
                        random |= changing
                        augments |= changing and api.is_image_augmentation(name)
                    else:
                        random |= api.is_random(name)
                        augments |= api.is_image_augmentation(name)
                    if api.SOURCES.get(name) in api.RECORD_READER_NAMES:
                        reader = api.SOURCES[name]
                        work[f"reads files (`{name.rsplit('.', 1)[-1]}`)"] = None
                elif isinstance(callee, Obj) and callee.kind in ("layer", "model"):
                    stateful |= callee.name in api.TABLE_LAYERS
                    if callee.get("random"):
                        random = True
                        augments |= bool(callee.get("augments", True))
                elif isinstance(callee, Func):
                    if self.depth >= self.MAX_NESTING or callee.node is node:
                        continue
                    inner = FunctionInspector(self.interpreter, callee, self.depth + 1).facts()
                    work.update(dict.fromkeys(inner.work))
                    unseen.update(dict.fromkeys(inner.unseen))
                    calls |= inner.calls
                    decodes |= inner.decodes
                    random |= inner.random
                    augments |= inner.augments_images
                    python |= inner.python
                    stateful |= inner.stateful
                    reader = reader or inner.reader
        return replace(
            merged,
            decodes=decodes,
            random=random,
            augments_images=augments,
            python=python,
            stateful=stateful,
            reader=reader,
            calls=frozenset(calls),
            cheap=not work and not unseen,
            work=tuple(work),
            unseen=tuple(unseen),
        )

    def cost(self, call: ast.Call, callee: Value) -> list[tuple[bool, str]]:
        """What one call in a mapped function costs, as (real work?, what it is): nothing for
        a cheap call, ``(True, "decodes (`decode_jpeg`)")`` for work the cost model knows,
        ``(False, "`preprocess`")`` for a call whose cost it cannot see."""
        if isinstance(callee, Ref):
            short = callee.name.rsplit(".", 1)[-1]
            kind = api.work_of(callee.name)
            if kind is not None:
                return [(True, f"{kind} (`{short}`)")]
            if api.is_cheap(callee.name) or api.is_random(callee.name):
                return []
            if api.SOURCES.get(callee.name) in api.RECORD_READER_NAMES:
                return []  # counted as a reader where the caller looks at it
            return [(False, f"`{callee.name}`")]
        if isinstance(callee, Obj) and callee.kind == "layer":
            if callee.name in api.CHEAP_LAYERS:
                return []
            if callee.name in api.WORK_LAYERS:
                return [(True, f"{api.WORK_LAYERS[callee.name]} (`{callee.name}`)")]
            if callee.get("random"):
                if callee.name in api.CHEAP_RANDOM_LAYERS:
                    return []
                return [(True, f"augments images (`{callee.name}`)")]
            return [(False, f"layer `{callee.name}`")]
        if isinstance(callee, Obj) and callee.kind == "model":
            return [(True, "runs a model")]
        if isinstance(callee, Func):
            if self.depth >= self.MAX_NESTING or callee.node is self.func.node:
                return [(False, f"`{getattr(callee.node, 'name', 'lambda')}` (nested too deep)")]
            return []  # judged from its own facts
        if isinstance(callee, Method):
            if callee.name in DICT_METHODS or callee.name in TENSOR_METHODS:
                return []
            return [(False, f"`.{callee.name}()`")]
        name = dotted_name(call.func)
        if isinstance(callee, Unknown) and name in api.CHEAP_BUILTINS:
            return []
        return [(False, f"`{name}`" if name else "a call it cannot follow")]

    def unrolled(self, iterated: ast.expr, frame: Frame) -> bool:
        """``for level in range(3)``, ``for key in features.keys()``, over a literal list or a
        name bound to one (``for col in UNWANTED_COLS``) in a mapped function unrolls when it
        is traced: the loop is over Python structure."""
        if isinstance(iterated, (ast.Tuple, ast.List)):
            return True
        if isinstance(iterated, ast.Name):
            return isinstance(self.interpreter.eval(iterated, frame), Seq)
        if not isinstance(iterated, ast.Call):
            return False
        func = iterated.func
        if isinstance(func, ast.Name):
            if func.id == "range":
                return True
            wraps = func.id in ("list", "sorted", "enumerate", "tuple") and iterated.args
            return bool(wraps) and self.unrolled(iterated.args[0], frame)
        return isinstance(func, ast.Attribute) and func.attr in ("keys", "items", "values")

    def constant_seed(self, call: ast.Call) -> bool:
        seed = next((kw.value for kw in call.keywords if kw.arg == "seed"), None)
        if seed is None and len(call.args) >= 2:
            seed = call.args[-1]
        if seed is None:
            return False
        value = self.interpreter.eval(seed, Frame(self.func.closure))
        if isinstance(value, Seq):
            return all(isinstance(i, Const) for i in value.items)
        return isinstance(value, Const)

    def elementwise(self, node: FunctionNode | ast.Lambda) -> bool:
        """True when the body is only arithmetic, casts and element-wise math on its inputs."""
        statements: list[ast.AST]
        if isinstance(node, ast.Lambda):
            statements = [node.body]
        else:
            statements = []
            for i, stmt in enumerate(node.body):
                if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    continue  # docstring
                if (
                    isinstance(stmt, ast.Return)
                    and stmt.value is not None
                    or isinstance(stmt, ast.Assign)
                    and all(isinstance(t, ast.Name) for t in stmt.targets)
                ):
                    statements.append(stmt.value)
                else:
                    return False
        arithmetic = False
        frame = Frame(self.func.closure)
        for expr in statements:
            for sub in ast.walk(expr):
                if isinstance(sub, ast.BinOp):
                    arithmetic = True
                elif isinstance(sub, ast.Call):
                    callee = self.interpreter.eval(sub.func, frame)
                    if not (isinstance(callee, Ref) and api.is_elementwise(callee.name)):
                        return False
                    arithmetic = True
                elif isinstance(
                    sub, (ast.Lambda, ast.IfExp, ast.ListComp, ast.DictComp, ast.Compare)
                ):
                    return False
        return arithmetic


def only_waits(node: ast.AST) -> bool:
    """Whether a Python function given to ``py_function`` or ``from_generator`` only sleeps
    (``time.sleep``) and hands back what it was given or a counter, as lessons simulate slow
    I/O: sleeping releases the GIL, so the usual advice about Python in a pipeline is wrong."""
    body = [node.body] if isinstance(node, ast.Lambda) else getattr(node, "body", [])
    sleeps = False
    for sub in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "sleep":
                sleeps = True
            elif name not in ("range", "len", "int", "float"):
                return False
        elif isinstance(sub, (ast.While, ast.With, ast.Try, ast.Import, ast.ImportFrom)):
            return False
    return sleeps
