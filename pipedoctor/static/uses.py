"""How the interpreter reports each use of a dataset, and each training it starts, to the data
flow (:mod:`pipedoctor.static.flow`) and the strategy reach (:mod:`pipedoctor.static.reach`).

:class:`DatasetUses` is a part of :class:`~pipedoctor.static.interpreter.ModuleInterpreter`
kept apart so that walking the code and recording what the code does with datasets read as
two jobs; it relies on the interpreter's state (``flow``, ``reach``, ``loops``, ``stack``...).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

from pipedoctor.pipeline import Pipeline
from pipedoctor.static import flow
from pipedoctor.static.evidence import files_to_shard, same_data_everywhere
from pipedoctor.static.flow import datasets_in, imported_in
from pipedoctor.static.reach import TF_DISTRIBUTE, UNSEEN_SCOPE, batch_facts_of
from pipedoctor.static.values import (
    OPAQUE,
    Const,
    Frame,
    Func,
    Imported,
    Obj,
    Seq,
    Stream,
    Unknown,
    Value,
)

STREAM_WRAPPERS = frozenset({"iter", "enumerate", "tqdm", "as_numpy", "trange"})
"""Calls that hand a dataset on to whatever iterates them."""
DISCARDABLE = frozenset(
    {
        "shuffle",
        "prefetch",
        "prefetch_to_device",
        "batch",
        "padded_batch",
        "cache",
        "repeat",
        "take",
        "skip",
        "shard",
        "with_options",
        "unbatch",
        "rebatch",
        "apply",
        "snapshot",
    }
)
"""Transformations with no effect but their result: as a bare statement they do nothing
(``map``, ``filter`` and ``interleave`` at least trace their function, which tests rely on)."""


NUMERIC_BUILTINS = {"int": int, "float": float, "round": round, "abs": abs, "min": min, "max": max}
"""Python's functions on numbers that the analysis folds, as it folds ``+`` and ``*``."""
DEMO_STEPS = 100
"""A ``fit`` of fewer steps in all (``epochs`` × ``steps_per_epoch``, both literal) is a
demo or a smoke test: its input pipeline's speed decides nothing."""


class DatasetUses:
    """Records what the code does with datasets: loops, training calls, strategies, discards."""

    def mark_applied_options(self, pipelines: list[Pipeline]) -> None:
        """An auto-shard policy counts where its options reach a dataset that trains."""
        applied: dict[int, list[Pipeline]] = {}
        for pipeline in pipelines:
            if pipeline.ends & {"training", "unknown"}:
                for stage in pipeline.walk():
                    if id(stage) in self.stage_options:
                        applied.setdefault(self.stage_options[id(stage)], []).append(pipeline)
        for fact in self.training.of("autoshard"):
            fact.data["applied"] = fact.get("options") in applied
            fact.data["files"] = files_to_shard(applied.get(fact.get("options"), []))
            fact.data["shared"] = same_data_everywhere(applied.get(fact.get("options"), []))

    def loop_end(self) -> str:
        """What the innermost loop the code is in does with a dataset it pulls from."""
        if not self.loops:
            return "inspection"
        return flow.loop_end(self.loops[-1], self.loops[:-1])

    def loop_epochs(self) -> int | None:
        """How many times the loops around the innermost one run it: 1 with none around it,
        the count of ``for _ in range(3)`` around it, None when not a literal."""
        epochs = 1
        for count in self.loop_counts[:-1]:
            if count is None:
                return None
            epochs *= count
        return epochs

    def where(self, node: ast.AST, what: str) -> str:
        """``fit (line 40)``: how a finding's evidence names the place a dataset went."""
        return f"{what} (line {self.location(node).line})"

    def trained(self, node: ast.AST, value: Value, end: str, **context: Any) -> None:
        """A dataset handed to training: tell the strategy reach which batches it trains on
        (not one another module's function returned: that one's module has its batches)."""
        if end != "training" or isinstance(value, Imported):
            return
        batches: list[int] = []
        for pipeline in datasets_in(value):
            batches += batch_facts_of(pipeline, self.stage_batches)
        strategy = value.strategy if isinstance(value, Stream) else None
        self.reach.trained(self.location(node), end, batches, strategy=strategy, **context)

    def exec_loop(
        self,
        body: list[ast.stmt],
        frame: Frame,
        iterated: Value | None,
        node: ast.AST,
        count: int | None = None,
    ) -> None:
        """A loop body, knowing what the loop does; the dataset it iterates ends so.
        ``count``: how many times it runs, when the code writes it (``range(3)``)."""
        vocabulary = self.vocabulary(node, body)
        self.loops.append(vocabulary)
        self.loop_counts.append(count)
        try:
            if vocabulary.yields:
                # feeds a generator: a dataset made from it decides (see ``source``)
                if self.stack:
                    self.generator_feeds.setdefault(self.stack[-1], []).append(iterated)
            elif isinstance(iterated, (Pipeline, Stream)) or (
                isinstance(iterated, Seq)
                and iterated.items
                and all(isinstance(i, Stream) for i in iterated.items)
            ):
                end = self.loop_end()
                how = self.where(node, f"a loop over it that reads as {end}")
                self.flow.use(iterated, end, how, self.loop_epochs())
                self.trained(node, iterated, end)
            elif isinstance(iterated, Imported) and iterated.called:
                # what a function of another module returned: for the project pass alone
                end = self.loop_end()
                self.flow.use(iterated, end, self.where(node, f"a loop that reads as {end}"))
            self.exec_block(body, frame)
        finally:
            self.loops.pop()
            self.loop_counts.pop()

    def note_discarded(self, expr: ast.expr, value: Value) -> None:
        """``ds.shuffle(n)`` as a statement: the transformation's result is thrown away."""
        if (
            isinstance(value, Pipeline)
            and not self.inspecting
            and isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in DISCARDABLE
            and value.last.location == self.location(expr)
        ):
            self.discarded.append(value)

    def scoped_object(self, name: str, result: Value) -> Value:
        """An object a library class builds inside a strategy's scope (a trainer, a model
        from a model zoo), or a model a function the analysis cannot see builds there
        (``constructor.build_model()``): it keeps that scope, so what it is compiled with, and
        the strategy its ``fit`` runs under, can be checked."""
        short = name.rsplit(".", 1)[-1]
        builds = short[:1].isupper() or "model" in short.lower()
        opaque = result is OPAQUE or isinstance(result, Imported)
        if not (self.reach.scopes and opaque and builds):
            return result
        value = Obj("object", short, (("id", next(self.ids)),))
        self.reach.model_created(value, None)
        return value

    def call_builtin(
        self, node: ast.Call, name: str, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        """Python's own functions: on numbers, folded (``int(3000 / 128 / 10)``); on a
        dataset, looking at it, or passing it on to a loop."""
        if name in NUMERIC_BUILTINS and args and not kwargs:
            numbers = [a.value for a in args if isinstance(a, Const)]
            if len(numbers) == len(args) and all(
                isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers
            ):
                try:
                    folded = NUMERIC_BUILTINS[name](*numbers)
                except (ValueError, OverflowError, TypeError):
                    return OPAQUE
                small = not isinstance(folded, int) or folded.bit_length() <= 256
                return Const(folded) if small else OPAQUE
        if name in ("dict", "list", "tuple") and args and isinstance(args[0], Obj):
            if args[0].kind == "array":
                return args[0]  # ``dict(frame)``: the same examples, as columns
        if name in flow.INSPECTING_BUILTINS:
            for value in [*args, *kwargs.values()]:
                self.flow.use(value, "inspection", self.where(node, f"`{name}`"))
            return OPAQUE
        if name.rsplit(".", 1)[-1] in STREAM_WRAPPERS and args:
            return self.stream(args[0])
        if name == "zip":
            streams = [self.stream(a) for a in args]
            if any(isinstance(s, Stream) for s in streams):
                return Seq(tuple(streams))
            return OPAQUE
        if name == "next" and args:
            self.pulled(node, args[0])
            return OPAQUE
        self.consumed(node, [name], args, kwargs)
        return OPAQUE

    @staticmethod
    def stream(value: Value) -> Value:
        if isinstance(value, Pipeline):
            return Stream(value)
        return value if isinstance(value, (Stream, Imported)) else OPAQUE

    def pulled(self, node: ast.AST, value: Value) -> None:
        """``next(iterator)``: the loop around it says what the element is for."""
        if isinstance(value, (Pipeline, Stream, Imported)):
            end = self.loop_end()
            how = self.where(node, f"`next()` in a loop that reads as {end}")
            self.flow.use(value, end, how, self.loop_epochs() if self.loops else False)
            self.trained(node, value, end)

    def consumed(
        self,
        node: ast.Call,
        names: list[str],
        args: list[Value],
        kwargs: dict[str, Value],
        untracked: bool = True,
    ) -> None:
        """Datasets handed to a call the analysis cannot follow end as its name says."""
        values = [*args, *kwargs.values()]
        if not any(True for v in values for _ in datasets_in(v)) and not any(
            True for v in values for _ in imported_in(v)
        ):
            return
        named = [*names, *flow.function_names(values)]
        end = flow.consumer_end(named) or ("unknown" if untracked else None)
        if end is None:
            return  # a TensorFlow or Keras API the analysis does not model: no claim
        how = self.where(node, f"`{named[0]}`" if named and named[0] else "a call")
        for keyword, value in [*((None, a) for a in args), *kwargs.items()]:
            used = flow.consumer_end([], [keyword]) if keyword else None
            self.flow.use(value, used or end, how)
            self.trained(node, value, used or end)

    def dataset_method(self, pipeline: Pipeline, name: str) -> Value:
        """A ``Dataset`` method that is no transformation: iterating, saving, looking."""
        if name in ("as_numpy_iterator", "__iter__"):
            return Stream(pipeline)
        if name in ("save", "snapshot"):
            self.flow.use(pipeline, "export")
        elif name in ("make_one_shot_iterator", "make_initializable_iterator"):
            how = "a TF1 iterator whose tensors feed a graph"  # the analysis cannot see it
            self.flow.use(pipeline, "unknown", how)
        else:
            self.flow.use(pipeline, "inspection")
        return OPAQUE

    def fit(
        self, node: ast.Call, model: Value, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        """``model.fit(x, validation_data=...)``: what trains, under which strategy."""
        x = kwargs.get("x", args[0] if args else OPAQUE)
        if isinstance(model, Obj) and model.get("one_pass"):
            # a TF-DF model reads its data once, into its own example cache, then grows
            # trees: the pipeline's speed is that one pass, as an evaluation's is
            how = self.where(node, "`fit` of a model that reads its data once")
            self.flow.use(x, "evaluation", how)
            self.flow.use(kwargs.get("validation_data", OPAQUE), "evaluation", how)
            return OPAQUE
        given = kwargs.get("epochs", args[2] if len(args) > 2 else None)
        epochs: int | None = 1  # Keras's default
        if given is not None:
            literal = isinstance(given, Const) and isinstance(given.value, int)
            epochs = given.value if literal else None  # type: ignore[union-attr]
        handled = model.get("preprocesses", "") if isinstance(model, Obj) else ""
        per_epoch = kwargs.get("steps_per_epoch")
        if isinstance(per_epoch, Const) and isinstance(per_epoch.value, int) and epochs:
            if per_epoch.value * epochs < DEMO_STEPS:  # a demo: no step waits long enough
                how = f"`fit` for {per_epoch.value * epochs} steps in all"
                self.flow.use(x, "inspection", self.where(node, how))
                self.flow.use(kwargs.get("validation_data", OPAQUE), "inspection")
                return OPAQUE
        self.flow.use(x, "training", self.where(node, "`fit`"), epochs, handled)
        steps = kwargs.get("validation_steps")
        one_batch = isinstance(steps, Const) and isinstance(steps.value, int) and steps.value <= 1
        one_batch |= given is not None and epochs == 1  # validated once, after the one epoch
        self.flow.use(  # one batch an epoch (``validation_steps=1``) is a look, not a stream
            kwargs.get("validation_data", OPAQUE),
            "inspection" if one_batch else "validation",
            self.where(node, "`fit`'s `validation_data`"),
            epochs,
            handled,
        )
        batches: list[int] = []
        if "batch_size" in kwargs:
            batches.append(self.batch_fact(node, kwargs["batch_size"], "fit"))
        for pipeline in datasets_in(x):
            batches += batch_facts_of(pipeline, self.stage_batches)
        strategy = self.reach.trained(
            self.location(node),
            "training",
            batches,
            model=model,
            strategy=x.strategy if isinstance(x, Stream) else None,
            callbacks=kwargs.get("callbacks"),
        )
        if strategy is not None and strategy.get("kind") in TF_DISTRIBUTE:
            for dataset in (x, kwargs.get("validation_data", OPAQUE)):
                self.flow.distribute(dataset, strategy)
        return OPAQUE

    def input_fn_result(self, input_fn: Func | Imported) -> Value:
        """What an Estimator's ``input_fn`` gives: the function analysed, or, for one of another
        module of the project (``input_fn=data.train_input_fn``), what calling it returns."""
        if isinstance(input_fn, Imported):
            return input_fn if input_fn.called else replace(input_fn, called=True)
        return self.call(input_fn, [], {})

    def estimator_call(
        self, node: ast.Call, estimator: Value, name: str, input_fn: Func | Imported
    ) -> Value:
        """``estimator.train(input_fn=...)``: the function's dataset trains (or evaluates)."""
        dataset = self.input_fn_result(input_fn)
        end = "training" if name == "train" else "evaluation"
        self.flow.use(dataset, end, self.where(node, f"an Estimator's `{name}`"), None)
        if end == "training":
            strategy = estimator.get("strategy") if isinstance(estimator, Obj) else None
            batches = [
                i for p in datasets_in(dataset) for i in batch_facts_of(p, self.stage_batches)
            ]
            if isinstance(strategy, Obj):
                self.reach.used_by_estimator(strategy)
            self.reach.trained(
                self.location(node),
                end,
                batches,
                strategy=strategy if isinstance(strategy, Obj) else None,
            )
        return OPAQUE

    def distributed(self, receiver: Value, name: str, args: list[Value]) -> Value:
        """A dataset a strategy distributes: what the code does with it decides its end."""
        strategy = receiver if isinstance(receiver, Obj) and receiver.kind == "strategy" else None
        if strategy is None:  # only a tf.distribute strategy has these methods
            strategy = UNSEEN_SCOPE
        dataset: Value = args[0] if args else OPAQUE
        if name == "distribute_datasets_from_function":
            dataset = self.call(dataset, [OPAQUE], {}) if isinstance(dataset, Func) else OPAQUE
        if isinstance(dataset, Pipeline):
            return Stream(dataset, strategy)
        if isinstance(dataset, Imported) and dataset.called:
            return dataset.after(name)  # its iterators prefetch to each replica
        return OPAQUE

    def compile(self, node: ast.Call, model: Value, optimizers: list[Value]) -> None:
        self.fact("compile", node)
        for optimizer in optimizers:
            string_fact = None
            if isinstance(optimizer, Const) and isinstance(optimizer.value, str):
                string_fact = self.fact(
                    "optimizer", node, name=optimizer.value, lr="default", from_compile=True
                )
            self.reach.compiled(model, optimizer, string_fact)

    def generated_from(self, node: ast.Call, generator: Value, pipeline: Pipeline) -> None:
        """``from_generator(gen)``: datasets ``gen`` iterates feed ``pipeline``, so they end
        where it does."""
        function = generator.node if isinstance(generator, Func) else None
        if isinstance(generator, Func) and function not in self.generator_feeds:
            self.call(generator, [], {})  # a generator handed over, not called: run its loops
        syntax = node.args[0] if node.args else None
        if function is None and isinstance(syntax, ast.Call):
            called = self.eval(syntax.func, self.module)
            function = called.node if isinstance(called, Func) else None
        for value in self.generator_feeds.get(function, []) if function is not None else []:
            self.flow.feed(pipeline, value)

    def scales_with_replicas(self, schedule: Value, depth: int = 0) -> bool:
        """Whether a learning-rate schedule function may follow the replica count: it uses it
        (directly, through a name derived from it, or in a helper it calls), or it uses a
        value the analysis cannot see, which may."""
        if not isinstance(schedule, Func) or depth > 2:
            return not isinstance(schedule, Func) and depth == 0
        node = schedule.node
        local = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr == "num_replicas_in_sync":
                return True
            if isinstance(sub, ast.Name) and sub.id not in local:
                value = schedule.closure.lookup(sub.id)
                if isinstance(value, Unknown):
                    return True  # replica-derived, or a value the code does not show
                if isinstance(value, Func) and value.node is not node:
                    if self.scales_with_replicas(value, depth + 1):
                        return True
        return False

    def keras_distribution(self, node: ast.Call, short: str, args: list[Value]) -> Value:
        """The Keras distribution API: ``DataParallel``/``ModelParallel`` and the global
        ``set_distribution`` every later model and ``fit`` runs under."""
        if short in ("DataParallel", "ModelParallel"):
            strategy = self.reach.new_strategy(short, self.location(node))
            return Obj("distribution", short, (("strategy", strategy),))
        if short == "set_distribution":
            self.distribution_fact(node, args[0] if args else OPAQUE)
            if args and isinstance(args[0], Obj):
                self.reach.distribution = args[0].get("strategy")
        return OPAQUE

    def estimator_api(
        self, node: ast.Call, short: str, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        """``RunConfig(train_distribute=...)``, Estimators built with it, and the specs of
        ``train_and_evaluate`` whose ``input_fn`` trains or evaluates."""
        if short == "RunConfig":
            strategy = kwargs.get("train_distribute", OPAQUE)
            self.reach.used_by_estimator(strategy)
            self.reach.used_by_estimator(kwargs.get("eval_distribute", OPAQUE))
            return Obj("runconfig", short, (("strategy", strategy),))
        if short in ("TrainSpec", "EvalSpec"):
            input_fn = kwargs.get("input_fn", args[0] if args else None)
            if isinstance(input_fn, (Func, Imported)):
                self.flow.use(
                    self.input_fn_result(input_fn),
                    "training" if short == "TrainSpec" else "evaluation",
                    self.where(node, f"`{short}`"),
                    None,
                )
            return OPAQUE
        if "Estimator" in short or short == "model_to_estimator":
            config = kwargs.get("config", OPAQUE)
            strategy = config.get("strategy") if isinstance(config, Obj) else None
            return Obj("estimator", short, (("strategy", strategy),))
        return OPAQUE
