"""Source → ``Pipeline``: an abstract interpreter over one module's AST, without running it.

It follows only what it has seen created (a ``tf.data`` source, a strategy, a Keras layer), so
objects that merely look alike (pandas, torch loaders, Hugging Face datasets, user classes with
``.map``) stay opaque and draw no findings. Helper functions and methods are analysed at their
call sites with the argument values seen there; functions nobody in the module calls are
analysed on their own, their parameters unknown (a default is not the value when callers
elsewhere pass their own) or a dataset, when annotated as one.

Where each dataset ends up is :mod:`pipedoctor.static.flow`'s business and which training a
strategy reaches is :mod:`pipedoctor.static.reach`'s: the interpreter reports uses to them
(:mod:`pipedoctor.static.uses`). What a mapped function does is read by
:mod:`pipedoctor.static.functions`.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from pipedoctor.pipeline import (
    AUTOTUNE,
    UNKNOWN,
    Analysis,
    Files,
    FunctionFacts,
    Location,
    Pipeline,
    Stage,
    TrainingSetup,
)
from pipedoctor.static import api, flow
from pipedoctor.static.flow import DataFlow
from pipedoctor.static.functions import FunctionInspector, only_waits
from pipedoctor.static.names import (
    canonical,
    dotted_name,
    import_table,
    project_import_table,
)
from pipedoctor.static.notebook import source_lines
from pipedoctor.static.reach import UNSEEN_SCOPE, StrategyReach, batch_facts_of
from pipedoctor.static.uses import STREAM_WRAPPERS, DatasetUses
from pipedoctor.static.values import (
    AUTOTUNE_VALUE,
    MAX_SEQ_SIZE,
    OPAQUE,
    REPLICAS,
    Autotune,
    ClassInfo,
    Const,
    Frame,
    Func,
    FunctionNode,
    Imported,
    Instance,
    Method,
    Obj,
    Ref,
    Seq,
    Stream,
    Unknown,
    Value,
    fold,
    weight,
)

MAX_DEPTH = 4
"""How deep helper calls are followed; beyond it a call's result is unknown."""
MAX_STEPS = 60_000
"""Expressions evaluated per module (at least; a larger module gets one per 4 characters)
before the analysis stops: helper calls analysed at every call site can multiply the work,
and the lint must stay fast. A module it stops in is reported as not fully analysed."""
MAX_EXPRESSION_NESTING = 60
"""Expressions evaluated inside one another (``a.map(f).map(g)...``, ``"a" + "b" + ...``)
before the rest of a deeper one is evaluated bottom up, without recursion."""
MAX_BLOCK_NESTING = 100
"""Blocks of statements run inside one another, helper bodies included, before a deeper
one is skipped (and the module reported as not fully analysed)."""
CHIEF_WORDS = ("chief", "task_id", "task_type", "worker_index", "rank")

GIVEN_FUNCTION = re.compile(
    r"(?=[mifpr])"  # a first letter to look for: the search skips ahead fast
    r"(?:\b(?:map|interleave|flat_map|filter|parallel_interleave|map_and_batch)\(\s*([A-Za-z_][\w.]*)"
    r"|\b(?:map_func|predicate|func|reader)\s*=\s*([A-Za-z_][\w.]*))"
)
"""A function named as the first argument of ``map`` and its kin, or as their ``map_func=``,
``predicate=`` or ``func=``, or as the ``reader=`` of ``make_batched_features_dataset`` (called
with one file name at a time)."""
MADE_UP = ("fake", "synthetic", "dummy", "null")
"""Words of made-up input; a module without any has no such branch to look for."""
CONTAINER_METHODS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "put", "__setitem__"}
)
TF1_ITERATORS = frozenset({"make_one_shot_iterator", "make_initializable_iterator"})
"""TF1 iterators: their tensors feed a graph the analysis cannot follow (end unknown)."""
TFDS_WRITERS = frozenset({"_generate_examples", "_split_generators"})
"""TFDS builder methods whose datasets are read once to write the prepared data set."""
EVALUATING_METHODS = frozenset({"evaluate", "predict", "predict_on_batch", "test_on_batch"})
DISTRIBUTING_METHODS = frozenset(
    {
        "experimental_distribute_dataset",
        "distribute_datasets_from_function",
        "make_dataset_iterator",
    }
)
"""A strategy's methods that take a dataset and give its per-replica batches (TF 2.0's
``make_dataset_iterator`` as well): their iterators prefetch to each replica."""
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RELEVANT_WORDS = re.compile(
    r"^(?:.*(?:Dataset|dataset|Strategy|strategy|tfds).*|ds|fit|apply_gradients|input_fn)$",
    re.MULTILINE,
)
"""Identifiers that say a function may build, distribute or train on a dataset (one another
module's function returned, for the project pass), found among identifiers written one to a
line."""


class ModuleInterpreter(DatasetUses):
    """Walks one parsed module and collects its pipelines and training-setup facts."""

    def __init__(self, tree: ast.Module, path: str, text: str | None = None) -> None:
        self.tree = tree
        self.path = path
        self.text = text
        self.track_chief = text is None or "MultiWorker" in text
        lowered = text.lower() if text is not None else None
        self.mentions_made_up = lowered is None or any(w in lowered for w in MADE_UP)
        self.memo: dict[tuple, Value] = {}
        self.imports = import_table(tree)
        self.project_imports = project_import_table(tree)
        self.module = Frame()
        self.training = TrainingSetup(static=True)
        self.flow = DataFlow(exports_module_names=not path.endswith(".ipynb"))
        self.reach = StrategyReach(self.training)
        self.stage_batches: dict[int, int] = {}
        """id(batch stage) → index of its ``batch`` fact."""
        self.stage_options: dict[int, int] = {}
        """id(with_options stage) → identity of the ``tf.data.Options`` it applies."""
        self.discarded: list[Pipeline] = []
        self.generator_feeds: dict[ast.AST, list[Value]] = {}
        """Generator function → the datasets its loops iterate to yield elements."""
        self.loops: list[flow.Vocabulary] = []
        """Words of the bodies of the loops the code is in, innermost last."""
        self.loop_counts: list[int | None] = []
        """How many times each of those loops runs, where the code writes it."""
        self.ids = itertools.count(1)
        self._function_words: dict[FunctionNode, set[str]] | None = None
        self.steps = 0
        self.stack: list[ast.AST] = []
        self.executed: set[ast.AST] = set()
        self.map_functions: set[ast.AST] = set()
        self.standalone: ast.AST | None = None
        self.standalone_key = ""
        """The standalone function as other modules call it: ``make_ds``, ``Loader.build``."""
        self.factory_flag = False
        """The function that made the standalone one takes a flag that says training."""
        self.chief_depth = 0
        self.main_guarded = 0
        """How deep in ``if __name__ == "__main__":`` blocks the code being read is."""
        self.inspecting = 0
        self.max_steps = max(MAX_STEPS, len(text) // 4 if text else 0)
        self.incomplete: tuple[str, int | None] | None = None
        """Why, and from which line, part of the module was not analysed, when it was not."""
        self.expressions = 0
        self.blocks = 0
        self.ready: dict[ast.AST, Value] = {}
        """Values of sub-expressions evaluated ahead of their parent (see ``eval_deep``)."""
        self.branches: dict[ast.AST, object] = {}
        """``if`` test → which branch builds made-up input (see ``synthetic_branch``)."""
        self.vocabularies: dict[ast.AST, flow.Vocabulary] = {}
        """Loop → the words of its body (see ``vocabulary``)."""
        self.evaluators = {
            ast.Constant: self.eval_constant,
            ast.Name: self.eval_name,
            ast.Attribute: self.eval_attribute,
            ast.Call: self.eval_call,
            ast.Tuple: self.eval_sequence,
            ast.List: self.eval_sequence,
            ast.Lambda: self.eval_lambda,
            ast.BinOp: self.eval_binop,
            ast.UnaryOp: self.eval_unary,
            ast.Subscript: self.eval_subscript,
            ast.NamedExpr: self.eval_named,
            ast.IfExp: self.eval_ifexp,
        }

    def stop(self, node: ast.AST, why: str) -> None:
        """Note the first place where the analysis gave up on part of the module."""
        if self.incomplete is None:
            self.incomplete = (why, getattr(node, "lineno", None))

    def out_of_steps(self, node: ast.AST) -> None:
        self.stop(node, f"the analysis stopped after {self.max_steps:,} evaluations")

    # ----------------------------------------------------------------------------- driver

    def run(self) -> Analysis:
        if flow.is_test_module(self.path, self.tree):
            return Analysis(self.path)  # unit tests are not the training path
        self.hoist(self.tree.body, self.module)
        if self.text is None or "update_state" in self.text:
            self.scan_metrics()
        self.exec_block(self.tree.body, self.module)
        self.map_functions |= self.functions_given_to_datasets()
        relevant = self.relevant_functions()
        unreferenced = self.unreferenced_in_notebook()
        for function, owner in self.entry_functions():
            if function in relevant and function not in self.executed | self.map_functions:
                if function.name not in unreferenced:
                    self.run_standalone(function, owner)
        pipelines = self.flow.judged()
        for pipeline in pipelines:
            if pipeline.ends == {"unknown"}:
                batches = batch_facts_of(pipeline, self.stage_batches)
                strategy = self.flow.strategy_of(pipeline)
                self.reach.exported(pipeline.last.location, batches, strategy)
        self.reach.finish(unentered_strategy_lines(self.tree))
        self.mark_applied_options(pipelines)
        discarded = [self.discarded_ends(p, pipelines) for p in self.discarded]
        return Analysis(self.path, pipelines, self.training, discarded, self.flow.project_uses)

    def discarded_ends(self, thrown: Pipeline, pipelines: list[Pipeline]) -> Pipeline:
        """A thrown-away transformation, with the ends of the dataset it was meant to change:
        those of every pipeline that carries on from the dataset it was applied to."""
        receiver = self.flow.key(Pipeline(thrown.stages[:-1]))
        ends: set[str] = set()
        uses = None
        for pipeline in pipelines:
            if self.flow.places.within(self.flow.key(pipeline), receiver):
                ends |= pipeline.ends
                uses = uses or pipeline.uses
        return thrown.with_ends(frozenset(ends or {"unknown"}), uses)

    def scan_metrics(self) -> None:
        """Metric classes whose ``update_state`` mutates plain Python attributes (PD206)."""
        for node in statements(self.tree.body):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {s.name: s for s in node.body if isinstance(s, FunctionNode)}
            if "update_state" not in methods or "result" not in methods:
                continue
            python_state = set()
            for stmt in ast.walk(methods.get("__init__", node)):
                if isinstance(stmt, ast.Assign) and isinstance(
                    stmt.value, (ast.Constant, ast.List, ast.Dict, ast.Tuple)
                ):
                    python_state |= {
                        t.attr
                        for t in stmt.targets
                        if isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    }
            for stmt in ast.walk(methods["update_state"]):
                target = getattr(stmt, "target", None) if isinstance(stmt, ast.AugAssign) else None
                if target is None and isinstance(stmt, ast.Assign):
                    target = stmt.targets[0]
                if isinstance(target, ast.Attribute) and target.attr in python_state:
                    self.training.add(
                        "metric_state", self.location(stmt), name=node.name, attribute=target.attr
                    )
                    break

    def entry_functions(self) -> Iterator[tuple[FunctionNode, ClassInfo | None]]:
        """Module functions and methods in source order, those no other function uses first:
        a helper is then analysed where its caller uses it, not on its own."""
        ordered = [(node, owner) for nodes, owner in self.function_groups() for node in nodes]
        used = self.used_by_others()
        ordered.sort(
            key=lambda pair: (pair[0].name != "__init__", pair[0].name in used, pair[0].lineno)
        )
        yield from ordered

    def unreferenced_in_notebook(self) -> set[str]:
        """In a notebook, the functions no cell reaches (names, or names through functions
        the cells reach): nothing can import a notebook, so what such a function builds never
        trains (a ``.py`` module's uncalled function may be another module's dataset factory)."""
        if not self.path.endswith(".ipynb"):
            return set()
        reached: set[str] = set()
        stack: list[ast.AST] = list(self.tree.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.extend(node.decorator_list)
                continue
            if isinstance(node, ast.Name):
                reached.add(node.id)
            elif isinstance(node, ast.Attribute):
                reached.add(node.attr)
            stack.extend(ast.iter_child_nodes(node))
        words = {node.name: found for node, found in self.function_words().items()}
        todo = [name for name in reached if name in words]
        while todo:  # what the reached functions name, in turn
            for name in words.pop(todo.pop(), set()) - reached:
                reached.add(name)
                if name in words:
                    todo.append(name)
        defined = {n.name for n in self.tree.body if isinstance(n, FunctionNode)}
        return defined - reached  # methods stay: the framework calls those by their names

    def used_by_others(self) -> set[str]:
        """Names of functions that another function's text mentions (calls or passes on)."""
        words = self.function_words()
        names = {node.name for node in words}
        owners: dict[str, set[FunctionNode]] = {}
        for node, found in words.items():
            for name in found & names:
                owners.setdefault(name, set()).add(node)
        return {node.name for node in words if owners.get(node.name, set()) - {node}}

    def function_words(self) -> dict[FunctionNode, set[str]]:
        """The identifiers in each module function's and method's text (read once)."""
        if self._function_words is not None:
            return self._function_words
        lines = source_lines(self.text) if self.text else []
        words: dict[FunctionNode, set[str]] = {}
        for nodes, _ in self.function_groups():
            for node in nodes:
                body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                words[node] = set(IDENTIFIER.findall(body)) if lines else {"Dataset"}
        self._function_words = words
        return words

    def function_groups(self) -> list[tuple[list[FunctionNode], ClassInfo | None]]:
        """The module's functions, each alone, and each class's methods together (``__init__``
        first), with the class they belong to."""
        groups: list[tuple[list[FunctionNode], ClassInfo | None]] = []
        for value in list(self.module.vars.values()):
            if isinstance(value, Func) and isinstance(value.node, FunctionNode):
                groups.append(([value.node], None))
            elif isinstance(value, ClassInfo):
                methods = sorted(value.methods.values(), key=lambda m: m.name != "__init__")
                groups.append((methods, value))
        return groups

    def functions_given_to_datasets(self) -> set[ast.AST]:
        """Module functions passed by name to ``map``/``interleave``/``flat_map``/``filter``
        (or ``parallel_interleave``, or a factory's ``reader=``): they run per element (per
        file), not as code that builds pipelines.
        Read from the text, which is several times cheaper than walking every node."""
        text = self.text if self.text is not None else ast.unparse(self.tree)
        names = {
            (positional or keyword).rpartition(".")[2]
            for positional, keyword in GIVEN_FUNCTION.findall(text)
        }
        found: set[ast.AST] = set()
        for value in self.module.vars.values():
            if isinstance(value, Func) and isinstance(value.node, FunctionNode):
                if value.node.name in names:
                    found.add(value.node)
            elif isinstance(value, ClassInfo):
                found |= {m for n, m in value.methods.items() if n in names}
        return found

    def relevant_functions(self) -> set[FunctionNode]:
        """Functions whose analysis can find something: those that name a dataset or strategy
        API, and those that call such functions. The rest are skipped (they are still analysed
        when a relevant function calls them)."""
        words = self.function_words()
        siblings: dict[FunctionNode, list[FunctionNode]] = {}
        seeds = {
            name
            for name, value in self.module.vars.items()
            if isinstance(value, Pipeline) or isinstance(value, Obj) and value.kind == "strategy"
        }
        for nodes, _ in self.function_groups():
            for node in nodes:
                siblings[node] = nodes  # methods share ``self``: one relevant, all relevant
        every = "\n".join(set().union(*words.values()))
        hits = set(RELEVANT_WORDS.findall(every)) | seeds  # one pass over all of them
        relevant: set[FunctionNode] = {n for n, w in words.items() if w & hits}
        grew = True
        while grew:
            names = {n.name for n in relevant}
            extra = {n for n, w in words.items() if n not in relevant and w & names}
            extra |= {s for n in relevant for s in siblings[n] if s not in relevant}
            relevant |= extra
            grew = bool(extra)
        return set(relevant)

    def run_standalone(self, function: FunctionNode, owner: ClassInfo | None) -> None:
        """Analyse a function nobody in the module calls: what it returns ends elsewhere."""
        bound: tuple[Value, ...] = (Instance(owner),) if owner is not None else ()
        self.standalone = function
        self.standalone_key = f"{owner.node.name}.{function.name}" if owner else function.name
        distribution = self.reach.distribution
        try:
            made = self.call(Func(function, self.module, bound=bound, owner=owner), [], {})
            if isinstance(made, Func) and isinstance(made.node, FunctionNode):
                # a factory of input functions (``make_input_fn(files)`` returns ``input_fn``):
                # what the function it makes returns ends with that function's callers
                self.standalone = made.node
                self.factory_flag = training_flag(function)
                self.call(made, [], {})
        finally:
            self.standalone = None
            self.factory_flag = False
            self.reach.distribution = distribution  # set in the function: its own business

    # ----------------------------------------------------------------------------- helpers

    def location(self, node: ast.AST) -> Location:
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if func.end_lineno is not None and func.end_col_offset is not None:
                line, col = func.end_lineno, func.end_col_offset - len(func.attr)
        end_col = getattr(node, "end_col_offset", None)
        return Location(
            self.path,
            line,
            col + 1,
            getattr(node, "end_lineno", None),
            end_col + 1 if end_col is not None else None,
        )

    def new_pipeline(self, pipeline: Pipeline) -> Pipeline:
        if not self.inspecting:
            self.flow.create(pipeline)
        return pipeline

    def fact(self, kind: str, node: ast.AST, **data: Any) -> int:
        """Record a training-setup fact; returns its index."""
        self.training.add(kind, self.location(node), in_scope=bool(self.reach.scopes), **data)
        return len(self.training.facts) - 1

    # ----------------------------------------------------------------------------- statements

    def hoist(self, body: Sequence[ast.stmt], frame: Frame) -> None:
        """Bind the functions and classes a block defines, so earlier code can call them."""
        for stmt in body:
            if isinstance(stmt, FunctionNode):
                frame.vars[stmt.name] = Func(stmt, frame)
            elif isinstance(stmt, ast.ClassDef):
                frame.vars[stmt.name] = self.class_info(stmt, frame)

    def class_info(self, node: ast.ClassDef, frame: Frame) -> ClassInfo:
        bases = []
        for base in node.bases:
            value = self.eval(base, frame)
            if isinstance(value, Ref):
                bases.append(value.name)
            elif isinstance(value, ClassInfo):
                bases.extend(value.bases)
        methods = {s.name: s for s in node.body if isinstance(s, FunctionNode)}
        return ClassInfo(node, tuple(bases), methods)

    def exec_block(self, body: Sequence[ast.stmt], frame: Frame) -> None:
        if not body:
            return
        if self.blocks >= MAX_BLOCK_NESTING:
            self.stop(body[0], f"statements nested more than {MAX_BLOCK_NESTING} blocks deep")
            return
        self.blocks += 1
        try:
            for stmt in body:
                if self.steps > self.max_steps:
                    self.out_of_steps(stmt)
                    return
                self.exec_stmt(stmt, frame)
        finally:
            self.blocks -= 1

    def exec_stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, frame)
            for target in stmt.targets:
                self.bind(target, value, frame)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.bind(stmt.target, self.eval(stmt.value, frame), frame)
        elif isinstance(stmt, ast.AugAssign):
            current = self.eval(stmt.target, frame) if isinstance(stmt.target, ast.Name) else OPAQUE
            self.bind(
                stmt.target, self.binop(stmt.op, current, self.eval(stmt.value, frame)), frame
            )
        elif isinstance(stmt, ast.Expr):
            value = self.eval(stmt.value, frame)
            self.note_discarded(stmt.value, value)
        elif isinstance(stmt, ast.Return):
            value = self.eval(stmt.value, frame) if stmt.value is not None else Const(None)
            if self.inspecting:
                return  # a made-up branch's result is not the function's
            if self.standalone is not None and self.stack == [self.standalone]:
                # returned to callers the module does not show; a TFDS builder writes it out
                name = getattr(self.standalone, "name", "")
                writes = name in TFDS_WRITERS
                how = f"returned from `{name}`, which nothing in this file calls"
                flag = training_flag(self.standalone) or self.factory_flag
                end = "export" if writes else "unknown"
                key = self.standalone_key
                if isinstance(value, Seq):  # ``return train_ds, val_ds``: each its own item
                    for i, item in enumerate(value.items):
                        self.flow.use(item, end, how, returned_by=(name, flag, f"{key}[{i}]"))
                else:
                    self.flow.use(value, end, how, returned_by=(name, flag, key))
            frame.returns.append(value)
        elif isinstance(stmt, ast.If):
            self.exec_if(stmt, frame)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            iterated = self.eval(stmt.iter, frame)
            self.bind(stmt.target, OPAQUE, frame)
            self.exec_loop(stmt.body, frame, iterated, stmt, self.range_count(stmt.iter, frame))
            self.exec_block(stmt.orelse, frame)
        elif isinstance(stmt, ast.While):
            self.eval(stmt.test, frame)
            self.exec_loop(stmt.body, frame, None, stmt)
            self.exec_block(stmt.orelse, frame)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            scopes = 0
            for item in stmt.items:
                value = self.eval(item.context_expr, frame)
                if isinstance(value, Obj) and value.kind == "scope":
                    self.reach.scopes.append(value.get("strategy", UNSEEN_SCOPE))
                    scopes += 1
                elif self.is_scope_call(item.context_expr):
                    self.reach.scopes.append(UNSEEN_SCOPE)
                    scopes += 1
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, OPAQUE, frame)
            try:
                self.exec_block(stmt.body, frame)
            finally:
                del self.reach.scopes[len(self.reach.scopes) - scopes :]
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.exec_block(stmt.body, frame)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                self.exec_block(handler.body, frame)
            self.exec_block(stmt.orelse, frame)  # type: ignore[attr-defined]
            self.exec_block(stmt.finalbody, frame)  # type: ignore[attr-defined]
        elif isinstance(stmt, FunctionNode):
            if frame is not self.module:
                frame.vars[stmt.name] = Func(stmt, frame)
        elif isinstance(stmt, ast.ClassDef):
            if frame is not self.module:
                frame.vars[stmt.name] = self.class_info(stmt, frame)
        elif isinstance(stmt, ast.Match):
            self.eval(stmt.subject, frame)
            for case in stmt.cases:
                self.exec_block(case.body, frame)

    def range_count(self, iterated: ast.expr, frame: Frame) -> int | None:
        """``range(3)`` or ``range(1, EPOCHS + 1)`` with literal bounds: how many times the
        loop runs; None for anything else."""
        if not (
            isinstance(iterated, ast.Call)
            and isinstance(iterated.func, ast.Name)
            and iterated.func.id in ("range", "trange")
            and 1 <= len(iterated.args) <= 2
        ):
            return None
        bounds = [self.eval(a, frame) for a in iterated.args]
        if not all(isinstance(b, Const) and isinstance(b.value, int) for b in bounds):
            return None
        values = [b.value for b in bounds]  # type: ignore[union-attr]
        start, stop = (0, values[0]) if len(values) == 1 else values
        return max(stop - start, 0)

    def exec_if(self, stmt: ast.If, frame: Frame) -> None:
        """Both branches run; a name either one binds keeps the first branch's dataset, so
        the main path wins over an ``else`` fallback, and a branch that builds made-up input
        (``if use_fake_data:``) leaves nothing behind."""
        self.eval(stmt.test, frame)
        fake = self.synthetic_branch(stmt.test) if self.mentions_made_up else None
        guarded = self.track_chief and self.mentions_chief(stmt.test)
        main = is_main_guard(stmt.test)
        before = dict(frame.vars)
        self.chief_depth += guarded
        self.main_guarded += main
        self.exec_branch(stmt.body, frame, fake == "body")
        self.main_guarded -= main
        self.chief_depth -= guarded
        if not stmt.orelse:
            return
        after_body = frame.vars
        frame.vars = dict(before)
        self.exec_branch(stmt.orelse, frame, fake == "orelse")
        replica_test = mentions_replicas(stmt.test)
        for name, value in after_body.items():
            if before.get(name) is value:
                continue  # the first branch left it alone
            other = frame.vars.get(name)
            if isinstance(value, Const) and other is not None and other != value:
                # a value each branch sets its own way: sized for the replicas when the test
                # is about them (``if num_replicas > 1:``), else one of several constants
                value = REPLICAS if replica_test else replace(value, varies=True)
            if isinstance(value, Pipeline) or not isinstance(other, Pipeline):
                frame.vars[name] = value

    def exec_branch(self, body: list[ast.stmt], frame: Frame, fake: bool) -> None:
        if not fake:
            self.exec_block(body, frame)
            return
        before = dict(frame.vars)
        self.inspecting += 1
        try:
            self.exec_block(body, frame)
        finally:
            self.inspecting -= 1
            frame.vars = before

    @staticmethod
    def is_scope_call(expr: ast.expr) -> bool:
        """``with <anything>.scope():``: strategies are what have a ``scope()`` to enter, even
        when the strategy came from a branch or a helper the analysis could not follow."""
        return (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "scope"
        )

    def synthetic_branch(self, test: ast.expr) -> str | None:
        """``flow.synthetic_branch``, once per ``if`` (a helper runs at each call site)."""
        known = self.branches.get(test, self)
        if known is self:
            known = self.branches[test] = flow.synthetic_branch(test)
        return known  # type: ignore[return-value]

    def vocabulary(self, node: ast.AST, body: list[ast.stmt]) -> flow.Vocabulary:
        """``flow.body_words`` of a loop's body, once per loop."""
        known = self.vocabularies.get(node)
        if known is None:
            known = self.vocabularies[node] = flow.body_words(body)
        return known

    @staticmethod
    def mentions_chief(test: ast.expr) -> bool:
        for node in ast.walk(test):
            word = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
            if isinstance(word, str) and any(w in word.lower() for w in CHIEF_WORDS):
                return True
        return False

    def bind(self, target: ast.expr, value: Value, frame: Frame) -> None:
        pending = [(target, value)]  # nested tuples of targets, without recursion
        while pending:
            target, value = pending.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                items = value.items if isinstance(value, Seq) else ()
                if isinstance(value, Imported) and value.called:  # ``train, val = make_ds()``
                    items = tuple(value.item(i) for i in range(len(target.elts)))
                matched = len(items) == len(target.elts)
                for i in range(len(target.elts) - 1, -1, -1):
                    element = target.elts[i]
                    if isinstance(element, ast.Starred):
                        pending.append((element.value, OPAQUE))
                    else:
                        pending.append((element, items[i] if matched else OPAQUE))
            else:
                self.bind_one(target, value, frame)

    def bind_one(self, target: ast.expr, value: Value, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            frame.vars[target.id] = value
            if frame is self.module:
                self.flow.module_binding(value)
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, frame)
            if isinstance(base, Instance):
                base.cls.attrs[target.attr] = value
            elif target.attr == "auto_shard_policy" and isinstance(value, Ref):
                options = base.receiver if isinstance(base, Method) else None
                self.fact(
                    "autoshard",
                    target,
                    policy=value.name.rsplit(".", 1)[-1],
                    options=options.get("id") if isinstance(options, Obj) else None,
                )
            elif (
                target.attr == "trainable"
                and isinstance(base, Obj)
                and base.get("fact") is not None
            ):
                if value == Const(False):
                    self.training.facts[base.get("fact")].data["frozen"] = True

    # ----------------------------------------------------------------------------- expressions

    def eval(self, node: ast.expr | None, frame: Frame) -> Value:
        if node is None:
            return OPAQUE
        if self.ready:
            value = self.ready.pop(node, None)
            if value is not None:
                return value
        self.steps += 1
        if self.steps > self.max_steps:
            self.out_of_steps(node)
            return OPAQUE
        kind = type(node)
        if kind is ast.Name:  # the leaves, most of what is evaluated: no nesting to count
            return self.lookup(node.id, frame)
        if kind is ast.Constant:
            return Const(node.value)
        if self.expressions >= MAX_EXPRESSION_NESTING:
            return self.eval_deep(node, frame)
        self.expressions += 1
        try:
            if kind is ast.Attribute:
                return self.attribute(self.eval(node.value, frame), node.attr)
            if kind is ast.Call:
                return self.eval_call(node, frame)
            return self.evaluators.get(kind, self.eval_other)(node, frame)
        finally:
            self.expressions -= 1

    def eval_deep(self, node: ast.expr, frame: Frame) -> Value:
        """An expression nested too deep to evaluate by recursion (a chain of hundreds of
        calls, a sum of a thousand terms): its sub-expressions are evaluated first, bottom up,
        so that evaluating each finds the values of its own already there."""
        order: list[ast.expr] = []
        pending: list[tuple[ast.expr, bool]] = [(node, False)]
        while pending:
            sub, expanded = pending.pop()
            if expanded:
                order.append(sub)
                continue
            pending.append((sub, True))
            pending.extend((child, False) for child in reversed(evaluated_children(sub)))
        try:
            for sub in order[:-1]:
                self.steps += 1
                if self.steps > self.max_steps:
                    self.out_of_steps(sub)
                    return OPAQUE
                self.ready[sub] = self.evaluators.get(type(sub), self.eval_other)(sub, frame)
            return self.evaluators.get(type(node), self.eval_other)(node, frame)
        finally:
            for sub in order:
                self.ready.pop(sub, None)

    def eval_constant(self, node: ast.Constant, frame: Frame) -> Value:
        return Const(node.value)

    def eval_name(self, node: ast.Name, frame: Frame) -> Value:
        return self.lookup(node.id, frame)

    def eval_attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        return self.attribute(self.eval(node.value, frame), node.attr)

    def eval_sequence(self, node: ast.Tuple | ast.List, frame: Frame) -> Value:
        value = Seq(tuple([self.eval(e, frame) for e in node.elts]))
        return OPAQUE if value.oversized else value

    def eval_lambda(self, node: ast.Lambda, frame: Frame) -> Value:
        return Func(node, frame)

    def eval_binop(self, node: ast.BinOp, frame: Frame) -> Value:
        return self.binop(node.op, self.eval(node.left, frame), self.eval(node.right, frame))

    def eval_unary(self, node: ast.UnaryOp, frame: Frame) -> Value:
        operand = self.eval(node.operand, frame)
        if isinstance(operand, Const) and isinstance(node.op, ast.USub):
            if isinstance(operand.value, (int, float)):
                return Const(-operand.value)
        return OPAQUE

    def eval_subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        base = self.eval(node.value, frame)
        index = self.eval(node.slice, frame)
        if isinstance(base, Seq) and isinstance(index, Const) and isinstance(index.value, int):
            if -len(base.items) <= index.value < len(base.items):
                return base.items[index.value]
        if isinstance(base, Pipeline) and base.source.op == "tfds.load" and len(base.stages) == 1:
            return base  # ``tfds.load(name)`` without a split: a dict of splits
        if isinstance(base, Imported) and isinstance(index, Const):
            return base.item(index.value)  # ``make_datasets()["train"]``
        if isinstance(base, Obj) and base.kind == "array":
            # ``x[..., None]`` keeps the examples; ``x[:100]`` may not: the count is unknown
            kept = isinstance(node.slice, ast.Tuple) or isinstance(index, Const)
            data = tuple((k, v) for k, v in base.data if k != "rows" or kept)
            return Obj("array", base.name, data)
        return OPAQUE

    def eval_named(self, node: ast.NamedExpr, frame: Frame) -> Value:
        value = self.eval(node.value, frame)
        self.bind(node.target, value, frame)
        return value

    def eval_ifexp(self, node: ast.IfExp, frame: Frame) -> Value:
        self.eval(node.test, frame)
        body, orelse = self.eval(node.body, frame), self.eval(node.orelse, frame)
        return body if body == orelse else OPAQUE

    def eval_other(self, node: ast.expr, frame: Frame) -> Value:
        for child in expression_children(node):
            self.eval(child, frame)
        return OPAQUE

    def lookup(self, name: str, frame: Frame) -> Value:
        value = frame.lookup(name)
        if value is not None:
            return value
        if name in self.imports:
            return self.ref(self.imports[name])
        if name in self.project_imports:
            return Imported(origin=self.project_imports[name])
        return OPAQUE

    @staticmethod
    def ref(name: str) -> Value:
        return AUTOTUNE_VALUE if name == "tensorflow.data.AUTOTUNE" else Ref(name)

    def attribute(self, base: Value, attr: str) -> Value:
        if isinstance(base, Ref):
            return self.ref(canonical(f"{base.name}.{attr}"))
        if isinstance(base, Obj) and base.kind == "strategy" and attr == "num_replicas_in_sync":
            return REPLICAS
        if isinstance(base, Obj) and base.kind == "array" and attr in ARRAY_VIEWS:
            return base  # ``iris.data``, ``frame.values``, ``x.T``: the same examples
        if isinstance(base, Instance):
            if attr in base.cls.attrs:
                return base.cls.attrs[attr]
            if attr in base.cls.methods:
                return Func(base.cls.methods[attr], self.module, (base,), owner=base.cls)
            return Method(base, attr)  # inherited: ``fit``, ``compile``, ...
        if isinstance(base, ClassInfo) and attr in base.methods:
            return Func(base.methods[attr], self.module, owner=base)
        if isinstance(base, Imported) and not base.called:
            return base.member(attr)  # ``data.make_ds``, ``Loader.build``
        return Method(base, attr)

    @staticmethod
    def binop(op: ast.operator, left: Value, right: Value) -> Value:
        if isinstance(left, Const) and isinstance(right, Const):
            folded = fold(op, left.value, right.value)
            if isinstance(folded, Const) and (left.varies or right.varies):
                return replace(folded, varies=True)
            return folded
        for this, other in ((left, right), (right, left)):
            if isinstance(this, Obj) and this.kind == "array" and isinstance(other, (Const, Obj)):
                return this  # ``x_train / 255.0``: the same examples
        for this, other in ((left, right), (right, left)):
            if isinstance(this, Unknown) and this.replicas:
                factor = None
                if (
                    isinstance(op, ast.Mult)
                    and isinstance(other, Const)
                    and isinstance(other.value, int)
                ):
                    factor = other.value
                return Unknown(replicas=True, per_replica=factor)
        return OPAQUE

    # ----------------------------------------------------------------------------- calls

    def eval_call(self, node: ast.Call, frame: Frame) -> Value:
        callee = self.eval(node.func, frame)
        name = dotted_name(node.func)
        builtin = (
            name
            if isinstance(callee, Unknown)
            and not isinstance(callee, Imported)
            and frame.lookup(name or "") is None
            else None
        )
        inspecting = builtin in flow.INSPECTING_BUILTINS
        self.inspecting += inspecting
        args = [OPAQUE if isinstance(a, ast.Starred) else self.eval(a, frame) for a in node.args]
        kwargs = {kw.arg: self.eval(kw.value, frame) for kw in node.keywords if kw.arg}
        self.inspecting -= inspecting
        if name in ("partial", "functools.partial") and args and isinstance(args[0], Func):
            base = args[0]
            added = sum(weight(v) for v in [*args[1:], *kwargs.values()])
            if base.weight + added > MAX_SEQ_SIZE:
                return OPAQUE  # ``f = partial(f, f)`` on and on: too big to follow
            return replace(
                base,
                bound=base.bound + tuple(args[1:]),
                bound_kwargs=base.bound_kwargs + tuple(kwargs.items()),
                weight=base.weight + added,
            )
        if isinstance(callee, Method):
            result = self.call_method(node, callee.receiver, callee.name, args, kwargs)
            return self.scoped_object(callee.name, result)
        if isinstance(callee, Ref):
            return self.call_api(node, callee.name, args, kwargs)
        if isinstance(callee, Func):
            return self.call(callee, args, kwargs)
        if isinstance(callee, ClassInfo):
            return self.instantiate(node, callee, args, kwargs)
        if builtin is not None:
            result = self.call_builtin(node, builtin, args, kwargs)
            return self.scoped_object(builtin, result)
        self.consumed(node, [name or ""], args, kwargs)
        if isinstance(callee, Imported) and callee.origin and not callee.called:
            # ``make_ds(...)``: a function of the project's; a model one builds in a scope
            return self.scoped_object(name or "", replace(callee, called=True))
        return OPAQUE

    def call(self, func: Func, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Analyse a module-defined function's body with these arguments (a call site)."""
        node = func.node
        if len(self.stack) >= MAX_DEPTH or node in self.stack or self.steps > self.max_steps:
            return OPAQUE
        memo_key = self.memo_key(func, args, kwargs)
        if memo_key is not None and memo_key in self.memo:
            return self.memo[memo_key]
        result = self.run_call(func, args, kwargs)
        if memo_key is not None and not self.has_identity(result):
            self.memo[memo_key] = result
        return result

    @staticmethod
    def has_identity(value: Value) -> bool:
        """Models, optimizers and instances are new objects at every call: never reuse one."""
        return isinstance(value, Instance) or (
            isinstance(value, Obj) and value.get("id") is not None
        )

    def memo_key(self, func: Func, args: list[Value], kwargs: dict[str, Value]) -> tuple | None:
        """Calls with only plain arguments give the same result every time: analyse them once
        per context (inside a strategy scope or not, under a chief check or not)."""
        values = [*func.bound, *args, *(v for _, v in func.bound_kwargs), *kwargs.values()]
        if not all(isinstance(v, (Const, Unknown, Autotune, Ref)) for v in values):
            return None
        return (
            func.node,
            self.reach.context(),
            self.chief_depth > 0,
            bool(self.inspecting),
            bool(self.loops),
            repr(values),
            tuple(kwargs),
            tuple(k for k, _ in func.bound_kwargs),
        )

    def run_call(self, func: Func, args: list[Value], kwargs: dict[str, Value]) -> Value:
        node = func.node
        self.executed.add(node)
        frame = Frame(func.closure)
        # On the stack before its defaults are evaluated: a default may call the function
        # itself, directly or through a ``functools.partial`` of it (``def f(x=p())``).
        self.stack.append(node)
        made_up = isinstance(node, FunctionNode) and flow.synthetic_name(node.name)
        self.inspecting += made_up  # ``_input_fn_null``, ``make_fake_data``: not real input
        try:
            self.bind_parameters(
                node, frame, list(func.bound) + args, {**dict(func.bound_kwargs), **kwargs}
            )
            if isinstance(node, ast.Lambda):
                return self.eval(node.body, frame)
            self.hoist(node.body, frame)
            self.exec_block(node.body, frame)
        finally:
            self.stack.pop()
            self.inspecting -= made_up
        pipelines = [v for v in frame.returns if isinstance(v, Pipeline)]
        if pipelines:
            return pipelines[-1]
        distinct = {repr(v) for v in frame.returns}
        return frame.returns[-1] if len(distinct) == 1 else OPAQUE

    def bind_parameters(
        self,
        node: FunctionNode | ast.Lambda,
        frame: Frame,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> None:
        spec = node.args
        positional = spec.posonlyargs + spec.args
        defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        pairs = list(zip(positional, defaults, strict=True))
        pairs += list(zip(spec.kwonlyargs, spec.kw_defaults, strict=True))
        for i, (param, default) in enumerate(pairs):
            if i < len(positional) and i < len(args):
                value = args[i]
            elif param.arg in kwargs:
                value = kwargs[param.arg]
            elif default is not None and not (node is self.standalone and len(self.stack) == 1):
                value = self.eval(default, frame.parent or self.module)
            else:
                value = OPAQUE
            frame.vars[param.arg] = self.annotated(param, value)
        for extra in (spec.vararg, spec.kwarg):
            if extra is not None:
                frame.vars[extra.arg] = OPAQUE

    def annotated(self, param: ast.arg, value: Value) -> Value:
        """A parameter annotated ``tf.data.Dataset`` is a dataset even when its origin is unseen."""
        if not isinstance(value, Unknown) or param.annotation is None:
            return value
        hint = self.eval(param.annotation, self.module)
        if isinstance(hint, Ref) and hint.name in (api.DATASET, "tensorflow.data.DatasetV2"):
            stage = Stage("external", location=self.location(param))
            return Pipeline((stage,))
        return value

    def instantiate(
        self, node: ast.Call, cls: ClassInfo, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        instance = Instance(cls)
        model_fact = (
            self.fact("model", node, name=cls.node.name) if self.is_model(instance) else None
        )
        self.reach.model_created(instance, model_fact)  # any class may be compiled and fitted
        init = cls.methods.get("__init__")
        if init is not None:
            self.call(Func(init, self.module, (instance,), owner=cls), args, kwargs)
        return instance

    def call_method(
        self,
        node: ast.Call,
        receiver: Value,
        name: str,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        if isinstance(receiver, Pipeline):
            if name in api.TRANSFORMATIONS:
                return self.transform(node, receiver, name, args, kwargs)
            return self.dataset_method(receiver, name)
        if isinstance(receiver, Stream):
            if name in ("get_next", "__next__", "get_next_as_optional"):
                self.pulled(node, receiver)
            return OPAQUE
        if isinstance(receiver, Imported) and receiver.called and name in api.TRANSFORMATIONS:
            return receiver.after(name)  # ``make_ds().prefetch(2)``
        if isinstance(receiver, Obj) and receiver.kind == "array" and name in ARRAY_METHODS:
            return receiver  # ``x.astype("float32")``, ``x.reshape(-1, 28, 28, 1)``
        if name == "as_dataset" and receiver is not None:
            # ``tfds.builder(name).as_dataset(split=...)``, a replay buffer's ``as_dataset()``:
            # a tf.data dataset, as ``tfds.load`` gives
            called = (dotted_name(node.func) or "").lower()
            if "buffer" in called or "replay" in called:
                kwargs = {**kwargs, "origin": Const("replay:buffer")}
            return self.source(node, "tfds.load", [], {"split": OPAQUE, **kwargs})
        input_fn = kwargs.get("input_fn", args[0] if args else None)
        if name in ("train", "evaluate", "predict") and isinstance(input_fn, Func):
            return self.estimator_call(node, receiver, name, input_fn)
        if name == "train" and isinstance(input_fn, Imported) and input_fn.origin:
            return self.estimator_call(node, receiver, name, input_fn)
        if name in ("fit", "fit_generator"):
            if not self.stack and not self.main_guarded:
                self.flow.trains_on_import()
            return self.fit(node, self.unseen_model(node, receiver), args, kwargs)
        if name in EVALUATING_METHODS:
            for value in (*args[:1], kwargs.get("x", OPAQUE)):
                self.flow.use(value, "evaluation")
            return OPAQUE
        if name in DISTRIBUTING_METHODS:
            return self.distributed(receiver, name, args)
        if name == "create_per_worker_dataset" and args and isinstance(args[0], Func):
            dataset = self.call(args[0], [OPAQUE], {})
            strategy = receiver.get("strategy") if isinstance(receiver, Obj) else None
            if isinstance(dataset, Stream):
                dataset = dataset.pipeline
            if isinstance(dataset, Pipeline):
                return Stream(dataset, strategy if isinstance(strategy, Obj) else None)
            return OPAQUE
        if isinstance(receiver, Obj) and receiver.kind == "strategy" and name == "scope":
            return Obj("scope", receiver.name, (("strategy", receiver),))
        if isinstance(receiver, Obj) and receiver.kind == "distribution" and name == "scope":
            return Obj("scope", receiver.name, (("strategy", receiver.get("strategy")),))
        if name == "compile" and (
            self.is_model(receiver)
            or isinstance(receiver, Instance)
            or isinstance(receiver, Obj)
            and receiver.kind == "object"
        ):
            optimizers = [v for k, v in kwargs.items() if k.endswith("optimizer")]
            self.compile(node, receiver, optimizers or [args[0] if args else OPAQUE])
            return OPAQUE
        if name == "compile" and (unseen := self.unseen_model(node, receiver)) is not receiver:
            self.reach.unseen_model_compiled(unseen)
            return OPAQUE
        if name in ("save", "save_weights") and self.is_model(receiver):
            path = kwargs.get("filepath", args[0] if args else OPAQUE)
            self.write_fact(node, name, path)
            return OPAQUE
        if name in STREAM_WRAPPERS and args:  # ``tqdm.tqdm(ds)``, ``tfds.as_numpy(ds)``
            return self.stream(args[0])
        if name not in CONTAINER_METHODS:  # a list or dict that holds a dataset is no use
            self.consumed(node, [dotted_name(node.func) or name], args, kwargs)
        if isinstance(receiver, Imported) and receiver.called:
            return replace(receiver.member(name), called=True)  # ``Loader(cfg).train_ds()``
        return OPAQUE

    def unseen_model(self, node: ast.Call, receiver: Value) -> Value:
        """A model the analysis cannot see (one a function of another package builds), named
        by the variable it is called through in the function being read: ``model.compile`` in
        a strategy's scope and ``model.fit`` after it are one model's. Any other value as it is."""
        target = node.func.value if isinstance(node.func, ast.Attribute) else None
        if not isinstance(receiver, Unknown) or not isinstance(target, ast.Name):
            return receiver
        return ("unseen model", id(self.stack[-1]) if self.stack else None, target.id)

    @staticmethod
    def is_model(value: Value) -> bool:
        if isinstance(value, Obj):
            return value.kind == "model"
        return isinstance(value, Instance) and any(
            b in api.KERAS_MODELS or b.endswith(".Model") for b in value.cls.bases
        )

    def distribution_fact(self, node: ast.Call, value: Value) -> None:
        """``set_distribution(...)``; the first one also marks every model and optimizer built
        before it (the facts are recorded in the order the code runs)."""
        first = not self.training.has("distribution")
        built = [*self.training.of("model"), *self.training.of("optimizer")] if first else []
        kind = value.name if isinstance(value, Obj) and value.kind == "distribution" else None
        self.fact("distribution", node, api="keras", name=kind or "a Keras distribution")
        for fact in built:
            self.training.add("built_before_distribution", fact.location, what=fact.kind)

    def write_fact(self, node: ast.Call, kind: str, path: Value) -> None:
        fixed = isinstance(path, Const) and isinstance(path.value, str)
        self.fact("write", node, call=kind, fixed=fixed, chief_guarded=self.chief_depth > 0)

    def batch_fact(self, node: ast.Call, size: Value, where: str) -> int:
        value = size.value if isinstance(size, Const) and isinstance(size.value, int) else None
        replicas = isinstance(size, Unknown) and size.replicas
        per_replica = size.per_replica if isinstance(size, Unknown) else None
        varies = isinstance(size, Const) and size.varies
        return self.fact(
            "batch",
            node,
            value=value,
            replicas=replicas,
            per_replica=per_replica,
            where=where,
            varies=varies,
        )

    # ----------------------------------------------------------------------------- tf.data

    def transform(
        self,
        node: ast.Call,
        pipeline: Pipeline,
        op: str,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> Value:
        if op == "apply" and args:
            func = args[0]
            if isinstance(func, Func):
                result = self.call(func, [pipeline], {})
                return result if isinstance(result, Pipeline) else OPAQUE
            if isinstance(func, Obj) and func.kind == "transform":
                params = dict(func.data)
                fn = self.function_facts(params.pop("map_func", None))
                converted = self.to_params(params)  # literals as rules read them: ``4``
                stage = Stage(func.name, converted, fn, location=self.location(node))
                return self.new_pipeline(pipeline.then(stage))
            return OPAQUE
        params = self.params(op, args, kwargs)
        inputs: tuple[Pipeline, ...] = ()
        fn = None
        if op in ("map", "interleave", "flat_map", "filter", "map_with_legacy_function"):
            fn = self.function_facts(params.pop("map_func", params.pop("predicate", None)))
        if op in ("concatenate", "zip"):
            inputs = tuple(self.dataset_inputs(args))
        stage = Stage(op, self.to_params(params), fn, inputs, self.location(node))
        if op == "batch" or op == "padded_batch":
            size = self.raw_arg(op, "batch_size", args, kwargs)
            self.stage_batches[id(stage)] = self.batch_fact(node, size, "batch")
        if op == "with_options":
            options = self.raw_arg(op, "options", args, kwargs)
            if isinstance(options, Obj) and options.kind == "options":
                self.stage_options[id(stage)] = options.get("id")
        return self.new_pipeline(pipeline.then(stage))

    def raw_arg(self, op: str, name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
        names = api.POSITIONAL.get(op, ())
        if name in kwargs:
            return kwargs[name]
        if name in names and names.index(name) < len(args):
            return args[names.index(name)]
        return OPAQUE

    @staticmethod
    def params(op: str, args: list[Value], kwargs: dict[str, Value]) -> dict[str, Value]:
        names = api.POSITIONAL.get(op, ())
        params: dict[str, Value] = {}
        for i, value in enumerate(args):
            params[names[i] if i < len(names) else f"arg{i}"] = value
        params.update(kwargs)
        return params

    def to_params(self, params: dict[str, Value]) -> dict[str, Any]:
        return {name: self.to_param(name, value) for name, value in params.items()}

    def to_param(self, name: str, value: Value) -> Any:
        if name == "filenames":
            return self.files(value)
        if name == "file_pattern":
            return self.pattern_files(value)
        if isinstance(value, Autotune):
            return AUTOTUNE
        if isinstance(value, Const) and isinstance(
            value.value, (int, float, str, bool, type(None))
        ):
            return value.value
        if isinstance(value, Ref):
            return value.name
        return UNKNOWN

    def files(self, value: Value, node: ast.expr | None = None) -> Files:
        """What a reader is given to read, and how the code shows how many files that is."""
        if isinstance(value, Const) and isinstance(value.value, str):
            return Files(1, literal=True)
        if isinstance(value, Seq):
            literal = all(isinstance(i, Const) and isinstance(i.value, str) for i in value.items)
            return Files(len(value.items), literal=literal)
        if isinstance(value, Obj) and value.kind == "files":
            return Files(None, how=value.get("how", ""))
        if isinstance(value, Pipeline):
            return Files(None, how="dataset")
        if node is not None and _string_expression(node):
            return Files(1)  # a path built from strings: readers do not glob, so one file
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            counts = [self.range_count(g.iter, self.module) for g in node.generators]
            several = all(c is not None and c > 1 for c in counts)
            return Files(None, how="shards" if several else "")
        if node is None or not isinstance(node, (ast.Name, ast.Attribute)):
            return Files(None)  # a comprehension or call the analysis cannot follow: several
        name = (node.id if isinstance(node, ast.Name) else node.attr).lower()
        plural = name.endswith("s") or any(w in name for w in ("files", "pattern", "glob", "list"))
        return Files(None, how="name") if plural else Files(1)

    @staticmethod
    def pattern_files(value: Value) -> Files:
        """``list_files(pattern)``, ``make_csv_dataset(pattern)``: a pattern with a wildcard
        names several files, one without names one."""
        if isinstance(value, Const) and isinstance(value.value, str):
            wild = has_wildcard(value.value)
            return Files(None, literal=True, how="glob") if wild else Files(1, literal=True)
        if isinstance(value, Seq):
            return Files(len(value.items), literal=True)
        if isinstance(value, Obj) and value.kind == "files":
            return Files(None, how=value.get("how", ""))
        return Files(None)

    @staticmethod
    def literal_count(value: Value) -> int | None:
        """How many elements ``from_tensor_slices`` of a written-out list (or a tuple of
        them) gives; None when the list is not written out."""
        if isinstance(value, Seq) and value.items and isinstance(value.items[0], (Seq, Obj)):
            value = value.items[0]
        if isinstance(value, Seq) and all(isinstance(i, (Const, Seq)) for i in value.items):
            return len(value.items)
        if isinstance(value, Obj) and value.kind == "array":
            return value.get("rows")
        return None

    def arrays_read(self, function: Func) -> Iterator[Value]:
        """The arrays a generator function reads from the names around it (``x_train[i]``)."""
        for node in ast.walk(function.node):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                value = function.closure.lookup(node.id)
                if isinstance(value, Obj) and value.kind == "array":
                    yield value

    def dataset_inputs(self, args: list[Value]) -> Iterator[Pipeline]:
        for value in args:
            if isinstance(value, Pipeline):
                yield value
            elif isinstance(value, Seq):
                yield from self.dataset_inputs(list(value.items))

    def source(self, node: ast.Call, op: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
        params = self.params(op, args, kwargs)
        fn = None
        if op == "from_generator":
            generator = args[0] if args else kwargs.get("generator", OPAQUE)
            waits = isinstance(generator, Func) and only_waits(generator.node)
            if isinstance(generator, Func):
                read = FunctionInspector(self, generator).facts()  # what it runs, not a map
                fn = replace(read, python=not waits, random=False, augments_images=False)
                origin = data_origin(Seq(tuple(self.arrays_read(generator))), None)
                if origin:
                    params["origin"] = Const(origin)
            else:
                fn = FunctionFacts(known=False, python=not waits)
        inputs: tuple[Pipeline, ...] = ()
        if op in ("zip", "sample_from_datasets", "choose_from_datasets"):
            inputs = tuple(self.dataset_inputs(args + list(kwargs.values())))
        converted = self.to_params(params)
        if "filenames" in params:
            syntax = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg == "filenames"), None)
            )
            converted["filenames"] = self.files(params["filenames"], syntax)
        listed = converted.get("file_pattern")
        if op == "list_files" and isinstance(listed, Files) and listed.count is None:
            converted["file_pattern"] = replace(listed, how=listed.how or "list_files")
        if op == "from_tensor_slices" and args:
            count = self.literal_count(args[0])
            if count is not None:
                converted["elements"] = count
        if op in ("from_tensor_slices", "from_tensors") and args:
            origin = data_origin(args[0], node.args[0] if node.args else None)
            if origin:
                converted["origin"] = origin
        stage = Stage(op, converted, fn, inputs, self.location(node))
        pipeline = self.new_pipeline(Pipeline((stage,)))
        if op == "from_generator":
            generator = args[0] if args else kwargs.get("generator", OPAQUE)
            self.generated_from(node, generator, pipeline)
        subset = kwargs.get("subset")
        if op.endswith("_dataset_from_directory") and isinstance(subset, Const):
            if subset.value == "both":  # ``train, val = ...(subset="both")``: two datasets
                other = self.new_pipeline(Pipeline((replace(stage, params=dict(converted)),)))
                return Seq((pipeline, other))
        if op == "tfds.load":
            split = kwargs.get("split")
            if isinstance(split, Seq):
                pipeline_items = tuple(pipeline for _ in split.items)
                first: Value = Seq(pipeline_items)
            else:
                first = pipeline
            with_info = kwargs.get("with_info")
            if isinstance(with_info, Const) and with_info.value:
                return Seq((first, OPAQUE))
            return first
        return pipeline

    # ----------------------------------------------------------------------------- API calls

    def call_api(
        self, node: ast.Call, name: str, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        if name in api.SOURCES:
            return self.source(node, api.SOURCES[name], args, kwargs)
        short = name.rsplit(".", 1)[-1]
        if name == "tensorflow.distribute.get_strategy":
            return UNSEEN_SCOPE
        if strategy_class := api.strategy_class(name):
            devices = kwargs.get("devices", args[0] if args else None)
            one = isinstance(devices, Seq) and len(devices.items) == 1
            return self.reach.new_strategy(strategy_class, self.location(node), one_device=one)
        if name.startswith("keras.distribution."):
            return self.keras_distribution(node, short, args)
        if name == "tensorflow.data.Options":
            return Obj("options", short, (("id", next(self.ids)),))
        if name.startswith(("tensorflow.estimator.", "keras.estimator.")):
            return self.estimator_api(node, short, args, kwargs)
        if name == "tensorflow_datasets.as_numpy" and args:
            return self.stream(args[0])
        if name.startswith("tensorflow_decision_forests.keras.") and short.endswith("Model"):
            return Obj("model", short, (("one_pass", True), ("id", next(self.ids))))
        rows = array_rows(name, args, kwargs)
        if rows is not None or name in ARRAY_MAKERS:
            generated = "random" in name or short in ("arange", "linspace")
            origin = f"made-up:{short}" if generated else ""  # zeros: a buffer filled later
            return Obj("array", short, (("rows", rows), ("origin", origin)))
        known = known_data(name, args, kwargs)
        if known is not None:
            return known
        if name in ARRAY_KEEPERS and args and isinstance(args[0], Obj) and args[0].kind == "array":
            return args[0]  # ``tf.convert_to_tensor(x)``, ``np.expand_dims(x, -1)``
        if name in FILE_LISTERS:
            written = node.args[0] if node.args else None  # ``data_dir + "/train-*"`` too
            wild = written is not None and any(
                isinstance(n, ast.Constant) and isinstance(n.value, str) and has_wildcard(n.value)
                for n in ast.walk(written)
            )
            listing = name.endswith("listdir")
            return Obj("files", short, (("how", "glob" if wild or listing else ""),))
        if name.startswith(("keras_hub.models.", "keras_nlp.models.")) and any(
            part[:1].isupper() for part in name.split(".")
        ):
            if isinstance(kwargs.get("preprocessor"), Const):  # ``preprocessor=None``
                return Obj("model", short, (("id", next(self.ids)),))
            task = name.split(".")[2] if name.count(".") >= 2 else short
            prepared = ("preprocesses", f"KerasHub's `{task}`")
            model = Obj("model", task, (prepared, ("id", next(self.ids))))
            self.reach.model_created(model, self.fact("model", node, name=task))
            return model
        if short == "ClusterCoordinator":
            strategy = kwargs.get("strategy", args[0] if args else OPAQUE)
            return Obj("coordinator", short, (("strategy", strategy),))
        if short == "DatasetCreator" and args and isinstance(args[0], Func):
            return self.stream(self.call(args[0], [OPAQUE], {}))
        if short in TF1_ITERATORS and name.startswith("tensorflow."):
            self.flow.use(args[0] if args else OPAQUE, "unknown")  # tensors for a graph
            return OPAQUE
        if name.startswith("tensorflow.data.experimental.") and short[:1].islower():
            if short in ("save", "make_one_shot_iterator"):
                self.flow.use(
                    args[0] if args else OPAQUE, "export" if short == "save" else "unknown"
                )
                return OPAQUE
            params = self.params(short, args, kwargs)
            return Obj("transform", short, tuple(params.items()))
        if name.startswith("keras.optimizers.schedules."):
            warmup = "warmup" in short.lower() or "warmup_steps" in kwargs
            return Obj("schedule", short, (("warmup", warmup),))
        if name.startswith("keras.optimizers.") and short[:1].isupper():
            optimizer = Obj("optimizer", short, (("id", next(self.ids)),))
            lr = kwargs.get("learning_rate", args[0] if args else None)
            self.reach.optimizer_created(optimizer, self.optimizer_fact(node, short, lr))
            return optimizer
        if name.startswith("keras.callbacks.") and short[:1].isupper():
            if short == "ModelCheckpoint":
                path = kwargs.get("filepath", args[0] if args else OPAQUE)
                self.write_fact(node, "ModelCheckpoint", path)
            schedule = kwargs.get("schedule", args[0] if args else OPAQUE)
            return Obj("callback", short, (("scaled", self.scales_with_replicas(schedule)),))
        if name in api.LOADED_MODELS:
            return Obj("model", short, (("id", next(self.ids)),))
        if name in api.KERAS_MODELS or name.startswith("keras.applications."):
            layers = [v for v in self.flatten(args) if isinstance(v, Obj) and v.kind == "layer"]
            random = any(self.is_random_layer(v) for v in layers)
            model = Obj("model", short, (("random", random), ("id", next(self.ids))))
            if not (layers and all(self.is_random_layer(v) for v in layers)):
                # an all-augmentation Sequential is no model
                self.reach.model_created(model, self.fact("model", node, name=short))
            return model
        if name.startswith("keras.layers."):
            return self.layer(node, name, kwargs)
        if name.startswith(api.DATASET + ".") and short in api.TRANSFORMATIONS and args:
            if isinstance(args[0], Pipeline):  # ``tf.data.Dataset.concatenate(a, b)``
                return self.transform(node, args[0], short, args[1:], kwargs)
        self.consumed(node, [name], args, kwargs, untracked=False)
        return OPAQUE

    def optimizer_fact(self, node: ast.Call, name: str, lr: Value | None) -> int:
        if lr is None:
            kind, warmup = "default", False
        elif isinstance(lr, Obj) and lr.kind == "schedule":
            kind, warmup = "schedule", bool(lr.get("warmup"))
        elif isinstance(lr, Unknown) and lr.replicas:
            kind, warmup = "scaled", False
        elif isinstance(lr, Const):
            kind, warmup = "constant", False
        else:
            kind, warmup = "unknown", False
        value = lr.value if isinstance(lr, Const) else None
        varies = isinstance(lr, Const) and lr.varies
        return self.fact(
            "optimizer", node, name=name, lr=kind, value=value, warmup=warmup, varies=varies
        )

    def layer(self, node: ast.Call, name: str, kwargs: dict[str, Value]) -> Value:
        random, augments = api.random_layer(name)
        data: list[tuple[str, Any]] = [("random", random), ("augments", augments)]
        if name in api.BATCHNORM:
            frozen = kwargs.get("trainable") == Const(False)
            synchronized = name.endswith("SyncBatchNormalization") or kwargs.get(
                "synchronized"
            ) == Const(True)
            self.fact("batchnorm", node, frozen=frozen, synchronized=synchronized)
            data.append(("fact", len(self.training.facts) - 1))
        return Obj("layer", name.rsplit(".", 1)[-1], tuple(data))

    def flatten(self, values: Iterable[Value]) -> Iterator[Value]:
        for value in values:
            if isinstance(value, Seq):
                yield from self.flatten(value.items)
            else:
                yield value

    @staticmethod
    def is_random_layer(value: Value) -> bool:
        return (
            isinstance(value, Obj)
            and value.kind in ("layer", "model")
            and bool(value.get("random"))
        )

    # ----------------------------------------------------------------------------- functions

    def function_facts(self, value: Value | None) -> FunctionFacts:
        """What a function handed to ``map``/``interleave``/``filter`` does, from its body."""
        if isinstance(value, Func):
            self.map_functions.add(value.node)
            return FunctionInspector(self, value).facts()
        if isinstance(value, Ref):
            name = value.name
            reader = api.SOURCES.get(name)
            reads = reader if reader in api.RECORD_READER_NAMES else None
            kind = api.work_of(name) or (f"reads files (`{reads}`)" if reads else None)
            cheap = api.is_cheap(name)
            return FunctionFacts(
                reader=reads,
                decodes=api.is_decode(name),
                random=api.is_random(name),
                augments_images=api.is_image_augmentation(name),
                python=name in api.PYTHON_CALLS,
                elementwise=api.is_elementwise(name),
                calls=frozenset({name}),
                cheap=cheap,
                work=(kind,) if kind else (),
                unseen=() if kind or cheap else (f"`{name}`",),
            )
        if isinstance(value, Obj) and value.kind in ("layer", "model"):
            random = bool(value.get("random"))
            kind = api.WORK_LAYERS.get(value.name) or ("augments images" if random else None)
            if value.kind == "model":
                kind = "runs a model"
            cheap = value.name in api.CHEAP_LAYERS
            return FunctionFacts(
                random=random,
                augments_images=random,
                cheap=cheap,
                work=(f"{kind} (`{value.name}`)",) if kind else (),
                unseen=() if kind or cheap else (f"layer `{value.name}`",),
            )
        return FunctionFacts(known=False)


TRAINING_FLAGS = frozenset({"is_training", "training", "train", "is_train", "mode", "train_mode"})
"""Parameters of a dataset factory that choose the training path (``input_fn(is_training)``,
an Estimator's ``mode``)."""


REPLICA_WORDS = ("replica", "tpu", "gpu", "device", "worker", "strategy", "distribut")
"""Words of an ``if`` test about the devices a job runs on."""


def mentions_replicas(test: ast.expr) -> bool:
    """Whether an ``if`` test is about the devices or replicas (``if use_tpu:``,
    ``if strategy.num_replicas_in_sync > 1:``)."""
    for node in ast.walk(test):
        word = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(word, str) and any(w in word.lower() for w in REPLICA_WORDS):
            return True
    return False


def has_wildcard(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def training_flag(function: ast.AST) -> bool:
    """Whether a function takes a parameter that says training."""
    spec = getattr(function, "args", None)
    if spec is None:
        return False
    names = [a.arg for a in spec.posonlyargs + spec.args + spec.kwonlyargs]
    return any(name in TRAINING_FLAGS for name in names)


def analyze_module(tree: ast.Module, path: str, text: str | None = None) -> Analysis:
    """Pipelines and training facts of one parsed module (``text``: its source, when at hand)."""
    return ModuleInterpreter(tree, path, text).run()


def analyze(
    tree: ast.Module, path: str, text: str | None = None
) -> tuple[Analysis, tuple[str, int | None] | None]:
    """Like :func:`analyze_module`, with why and from which line part of the module was not
    analysed (``None`` when all of it was): a module beyond the analysis' limits."""
    interpreter = ModuleInterpreter(tree, path, text)
    analysis = interpreter.run()
    return analysis, interpreter.incomplete


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in ``body`` and in the blocks nested in it, at any depth (classes and
    functions are statements: this finds them all, cheaper than ``ast.walk``)."""
    pending = list(reversed(body))
    while pending:
        node = pending.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                pending.extend(reversed(children))


def evaluated_children(node: ast.expr) -> list[ast.expr]:
    """The sub-expressions ``ModuleInterpreter.eval`` evaluates for ``node``, in its order."""
    if isinstance(node, ast.Call):
        return [
            node.func,
            *(a for a in node.args if not isinstance(a, ast.Starred)),
            *(k.value for k in node.keywords if k.arg),
        ]
    if isinstance(node, ast.Attribute):
        return [node.value]
    if isinstance(node, ast.Subscript):
        return [node.value, node.slice]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, (ast.Tuple, ast.List)):
        return list(node.elts)
    if isinstance(node, ast.NamedExpr):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return [node.test, node.body, node.orelse]
    if isinstance(node, (ast.Constant, ast.Name, ast.Lambda)):
        return []
    return list(expression_children(node))


def expression_children(node: ast.AST) -> Iterator[ast.expr]:
    """The expressions directly under ``node`` (``ast.iter_child_nodes`` without the rest)."""
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.expr):
            yield value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.expr):
                    yield item


PATH_BUILDERS = frozenset({"join", "format", "str", "fspath", "joinpath"})
"""Calls that build one path string (``os.path.join``, ``"{}".format``, ``str(path)``)."""


def _string_expression(node: ast.expr) -> bool:
    """Whether ``node`` builds one string: ``data_dir + "/train.txt"``, an f-string,
    ``os.path.join(...)``, ``"%s.csv" % name``, ``root / "train.tfrecord"``."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod, ast.Div)):
        sides = (node.left, node.right)
        return any(
            (isinstance(side, ast.Constant) and isinstance(side.value, str))
            or _string_expression(side)
            for side in sides
        )
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name == "join" and isinstance(func, ast.Attribute):
            # os.path.join(a, b) builds a path; ",".join(files) builds no file name
            return not (isinstance(func.value, ast.Constant))
        return name in PATH_BUILDERS
    return False


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``: what runs only when the module is run, not imported."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and {ast.unparse(test.left), ast.unparse(test.comparators[0])} == {"__name__", "'__main__'"}
    )


def unentered_strategy_lines(tree: ast.Module) -> set[int]:
    """Lines where a data-parallel strategy is created, bound to a name, and then never used
    but to read its replica count: no ``scope()``, no distributed dataset, not handed to
    anything. Its training runs on one device, however the script sized its batch for it."""
    from pipedoctor.static.reach import DATA_PARALLEL

    created: dict[str, int] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            func = node.value.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in DATA_PARALLEL and name != "DataParallel":
                created[node.targets[0].id] = node.lineno
    if not created:
        return set()
    harmless: set[int] = set()  # ``strategy.num_replicas_in_sync``: only read
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "num_replicas_in_sync":
            harmless.add(id(node.value))
    used = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and node.id in created
        and isinstance(node.ctx, ast.Load)
        and id(node) not in harmless
    }
    return {line for name, line in created.items() if name not in used}


FILE_LISTERS = frozenset(
    {"glob.glob", "glob.iglob", "tensorflow.io.gfile.glob", "tensorflow.io.gfile.listdir"}
)
"""Calls that list files: several, when their pattern has a wildcard (or a folder is listed)."""
ARRAY_VIEWS = frozenset({"data", "target", "values", "T", "images", "labels"})
"""Attributes of a data set or array that hold its examples."""
ARRAY_METHODS = frozenset(
    {"astype", "reshape", "to_numpy", "copy", "squeeze", "transpose", "flatten", "ravel"}
)
"""Array methods that keep the examples they are called on."""
KERAS_DATASETS = {
    "mnist": 60_000,
    "fashion_mnist": 60_000,
    "cifar10": 50_000,
    "cifar100": 50_000,
    "imdb": 25_000,
    "reuters": 8_982,
    "boston_housing": 404,
    "california_housing": 16_512,
}
"""``keras.datasets.<name>.load_data()``: its training examples."""
SKLEARN_TOYS = frozenset(
    {
        "load_iris",
        "load_wine",
        "load_breast_cancer",
        "load_diabetes",
        "load_digits",
        "load_linnerud",
        "load_boston",
        "make_moons",
        "make_circles",
        "make_blobs",
        "make_classification",
        "make_regression",
    }
)
"""scikit-learn's bundled toy data sets and generators of made-up data."""


ARRAY_KEEPERS = frozenset(
    {
        "tensorflow.convert_to_tensor",
        "tensorflow.cast",
        "tensorflow.constant",
        "tensorflow.reshape",
        "tensorflow.expand_dims",
        "tensorflow.one_hot",
        "numpy.array",
        "numpy.asarray",
        "numpy.expand_dims",
        "numpy.reshape",
        "numpy.float32",
        "numpy.squeeze",
        "keras.utils.to_categorical",
        "keras.utils.pad_sequences",
        "keras.preprocessing.sequence.pad_sequences",
    }
)
"""Calls that give back the examples of the array they are handed, converted or reshaped."""
FILE_READERS = frozenset(
    {"pandas.read_csv", "pandas.read_parquet", "pandas.read_json", "pandas.read_table"}
    | {"pandas.read_pickle", "pandas.read_excel", "numpy.load", "numpy.loadtxt"}
    | {"numpy.genfromtxt"}
)
"""Calls that load arrays from a file: real data, unless the file's name is a toy's."""


def known_data(name: str, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
    """A data set a library call loads, as arrays that say where they come from: Keras's
    ``load_data()`` (train and test pairs), scikit-learn's toys, a file read with pandas or
    NumPy (a toy when its name says so: ``iris.csv``); None for other calls."""
    parts = name.split(".")
    if name in FILE_READERS:
        given = kwargs.get("filepath_or_buffer", args[0] if args else OPAQUE)
        path = given.value if isinstance(given, Const) and isinstance(given.value, str) else ""
        stem = re.split(r"[/\\.]", path.lower())
        toy = next((w for w in stem if any(t in w for t in TOY_FILE_WORDS)), None)
        origin = f"toy:{toy}" if toy else f"file:{path.rsplit('/', 1)[-1] or 'a file'}"
        return Obj("array", parts[-1], (("rows", None), ("origin", origin)))
    if len(parts) == 4 and parts[:2] == ["keras", "datasets"] and parts[3] == "load_data":
        rows = KERAS_DATASETS.get(parts[2])
        kind = "toy" if rows is not None and rows <= 1000 else "dataset"
        origin = ("origin", f"{kind}:{parts[2]}")
        train = Obj("array", parts[2], (("rows", rows), origin))
        test = Obj("array", parts[2], (("rows", None), origin))
        return Seq((Seq((train, train)), Seq((test, test))))
    if name.startswith("sklearn.datasets.") and parts[-1] in SKLEARN_TOYS:
        kind = "made-up" if parts[-1].startswith("make_") else "toy"
        array = Obj("array", parts[-1], (("rows", None), ("origin", f"{kind}:{parts[-1]}")))
        return Seq((array, array))  # ``X, y = load_iris(return_X_y=True)``, or ``.data``
    return None


def data_origin(value: Value, node: ast.expr | None) -> str:
    """Where the arrays a dataset is sliced from come from: ``dataset:mnist``, ``toy:iris``,
    ``made-up:...`` (random or generated arrays, or names that say so), or "" (not seen)."""
    origins: list[str] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Seq):
            pending.extend(item.items)
        elif isinstance(item, Obj) and item.kind == "array" and item.get("origin"):
            origins.append(item.get("origin"))
    for real in ("dataset:", "file:"):
        if any(o.startswith(real) for o in origins):
            return next(o for o in origins if o.startswith(real))
    if origins:
        return origins[0]
    if node is not None:
        for sub in ast.walk(node):
            name = sub.id if isinstance(sub, ast.Name) else getattr(sub, "attr", None)
            if isinstance(name, str) and flow.words(name) & MADE_UP_NAMES:
                return f"made-up:{name}"
    return ""


TOY_FILE_WORDS = ("iris", "penguin", "titanic", "boston", "auto-mpg", "auto_mpg", "heart")
"""Words in a data file's name that say it is one of the small sets lessons use."""
MADE_UP_NAMES = frozenset({"fake", "synthetic", "dummy", "random", "toy", "noise"})
"""Words in the name of arrays a dataset is sliced from that say they are made up."""


ARRAY_MAKERS = {
    # canonical name: (the positional index of the shape or row count, its keyword)
    "numpy.zeros": (0, "shape"),
    "numpy.ones": (0, "shape"),
    "numpy.empty": (0, "shape"),
    "numpy.full": (0, "shape"),
    "numpy.arange": (0, None),
    "numpy.linspace": (2, "num"),
    "numpy.random.rand": (0, None),
    "numpy.random.randn": (0, None),
    "numpy.random.random": (0, "size"),
    "numpy.random.uniform": (2, "size"),
    "numpy.random.normal": (2, "size"),
    "numpy.random.randint": (2, "size"),
    "tensorflow.zeros": (0, "shape"),
    "tensorflow.ones": (0, "shape"),
    "tensorflow.random.uniform": (0, "shape"),
    "tensorflow.random.normal": (0, "shape"),
    "numpy.random.choice": (1, "size"),
    "numpy.random.random_sample": (0, "size"),
}
"""Array constructors whose first dimension a literal gives: the examples of made-up data."""


def array_rows(name: str, args: list[Value], kwargs: dict[str, Value]) -> int | None:
    """How many rows an array made by ``name`` has, when the code writes the number out
    (``np.random.uniform(-1, 1, size=(200, 2))``: 200); ``None`` otherwise."""
    where = ARRAY_MAKERS.get(name)
    if where is None:
        return None
    index, keyword = where
    value = kwargs.get(keyword) if keyword else None
    if value is None and len(args) > index:
        value = args[index]
    if value is None and name == "numpy.linspace":
        return 50
    if isinstance(value, Seq) and value.items:
        value = value.items[0]
    if (
        isinstance(value, Const)
        and isinstance(value.value, int)
        and not isinstance(value.value, bool)
    ):
        return value.value
    return None
