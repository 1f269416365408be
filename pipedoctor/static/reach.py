"""Which training a distribution strategy reaches, as the source shows it.

A strategy reaches the code under ``with strategy.scope()`` and the functions called from it,
the dataset it distributes (``experimental_distribute_dataset``,
``distribute_datasets_from_function``), the model ``fit`` trains and the optimizer that model
was compiled with. An Estimator reaches its ``input_fn`` through its ``RunConfig``, and the
Keras distribution API (``keras.distribution.set_distribution``) every model built after it.
Each training the code starts becomes a ``training`` fact carrying the strategy that reaches
it, so the PD2xx rules judge the setups a strategy really runs, not every model in a file
that happens to create one.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.pipeline import Fact, Location, Pipeline, TrainingSetup
from pipedoctor.static.values import Instance, Obj, Seq, Stream, Unknown, Value

STRATEGY_KINDS = {
    "MirroredStrategy": "mirrored",
    "MultiWorkerMirroredStrategy": "multi-worker-mirrored",
    "TPUStrategy": "tpu",
    "ParameterServerStrategy": "parameter-server",
    "CentralStorageStrategy": "central-storage",
    "OneDeviceStrategy": "one-device",
    "DataParallel": "keras.distribution",
    "ModelParallel": "keras.distribution",
}
"""Class name → the strategy kind rule files name in ``strategies``."""
TF_DISTRIBUTE = frozenset(k for n, k in STRATEGY_KINDS.items() if not k.startswith("keras."))
"""Kinds of ``tf.distribute`` strategy: under one, Keras's ``fit`` hands its dataset to the
strategy, whose iterator prefetches each replica's batches (a ``MultiDeviceIterator``)."""
DATA_PARALLEL = frozenset(
    {
        "MirroredStrategy",
        "MultiWorkerMirroredStrategy",
        "TPUStrategy",
        "CentralStorageStrategy",
        "DataParallel",
    }
)
"""Strategies that split one global batch across synchronous replicas."""
ESTIMATOR = "estimator"
LR_CALLBACKS = frozenset({"LearningRateScheduler"})
"""Callbacks that set the learning rate themselves, whatever the optimizer was given: one
whose schedule uses the replica count scales it."""
LR_HOOKS = frozenset({"on_epoch_begin", "on_train_batch_begin", "on_batch_begin"})
"""Where a callback of the user's own would set the learning rate."""

_ids = itertools.count(1)


def strategy_value(name: str, one_device: bool = False) -> Obj:
    """A new strategy object: its class name, kind and an identity of its own. ``one_device``:
    given a literal list of one device (``MirroredStrategy(devices=["/gpu:0"])``), it has one
    replica and splits no batch."""
    kind = STRATEGY_KINDS.get(name, "unknown")
    parallel = name in DATA_PARALLEL and not one_device
    return Obj("strategy", name, (("kind", kind), ("data_parallel", parallel), ("id", next(_ids))))


UNSEEN_SCOPE = Obj("strategy", "a strategy", (("kind", "unknown"), ("id", 0)))
"""``with <something>.scope():`` whose strategy the analysis could not see."""


def identity(value: Value) -> Any:
    """A key for a model or optimizer value (objects from the module compare by identity)."""
    return id(value) if isinstance(value, Instance) else value


@dataclass
class ModelRecord:
    fact: int | None
    scope: Obj | None
    compiled_scope: Obj | None = None
    optimizers: list[Any] = field(default_factory=list)
    """The optimizers ``compile`` was given (optimizer objects, or fact indexes of strings)."""
    fitted_scopes: list[Obj | None] = field(default_factory=list)
    scaled_batch: bool = False


@dataclass
class OptimizerRecord:
    fact: int
    scope: Obj | None
    compiled_into: list[ModelRecord] = field(default_factory=list)
    compiled_scopes: list[Obj | None] = field(default_factory=list)


class StrategyReach:
    """Scopes, strategies, models and optimizers, and the trainings that tie them together."""

    def __init__(self, training: TrainingSetup) -> None:
        self.training = training
        self.scopes: list[Obj] = []
        self.distribution: Obj | None = None
        self.strategies: list[Obj] = []
        self.estimator_only: set[int] = set()
        self.models: dict[Any, ModelRecord] = {}
        self.optimizers: dict[Any, OptimizerRecord] = {}

    # ------------------------------------------------------------------------- scopes

    def active(self) -> Obj | None:
        """The strategy whose scope the code is in now (or the global Keras distribution)."""
        if self.scopes:
            return self.scopes[-1]
        return self.distribution

    def context(self) -> tuple:
        """What a helper's analysis depends on: the scopes it runs under."""
        return tuple(s.get("id") for s in self.scopes)

    def new_strategy(self, name: str, location: Location, one_device: bool = False) -> Obj:
        strategy = strategy_value(name, one_device)
        self.strategies.append(strategy)
        self.training.add(
            "strategy",
            location,
            name=name,
            strategy_kind=strategy.get("kind"),
            data_parallel=strategy.get("data_parallel"),
            multi=strategy.get("data_parallel") or name == "ParameterServerStrategy",
            id=strategy.get("id"),
        )
        return strategy

    def used_by_estimator(self, strategy: Value) -> None:
        """A strategy handed to an Estimator's ``RunConfig``: the Estimator runs it."""
        if isinstance(strategy, Obj) and strategy.kind == "strategy":
            self.estimator_only.add(strategy.get("id"))

    # ------------------------------------------------------------------------- objects

    def model_created(self, value: Value, fact: int | None) -> None:
        self.models[identity(value)] = ModelRecord(fact, self.active())

    def unseen_model_compiled(self, key: Any) -> None:
        """``compile`` on a model the analysis cannot see (``Interpreter.unseen_model``): the
        scope it is compiled in is the strategy its ``fit`` distributes with. It has no fact of
        its own, so the rules about where models are created never judge it."""
        record = self.models.setdefault(key, ModelRecord(None, None))
        record.compiled_scope = self.active()

    def optimizer_created(self, value: Value, fact: int) -> None:
        self.optimizers[identity(value)] = OptimizerRecord(fact, self.active())

    def compiled(self, model: Value, optimizer: Value, string_fact: int | None) -> None:
        record = self.models.get(identity(model))
        scope = self.active()
        if record is not None:
            record.compiled_scope = scope
            chosen = string_fact if string_fact is not None else optimizer
            record.optimizers.append(chosen)
        opt = self.optimizers.get(identity(optimizer))
        if opt is not None:
            opt.compiled_scopes.append(scope)
            if record is not None:
                opt.compiled_into.append(record)

    # ------------------------------------------------------------------------- trainings

    def trained(
        self,
        location: Location,
        end: str,
        batches: list[int],
        model: Value = None,
        strategy: Obj | None = None,
        callbacks: Value = None,
    ) -> Obj | None:
        """One training (or validation) the code starts, with the strategy that reaches it
        (returned). ``batches`` are the indexes of the ``batch`` facts that size its dataset."""
        record = self.models.get(identity(model)) if model is not None else None
        if strategy is None:
            strategy = self.reaching(record)
        scaled = any(self.training.facts[i].get("replicas") for i in batches)
        if record is not None:
            record.fitted_scopes.append(self.active())
            record.scaled_batch |= scaled
        lr_callback, lr_unseen = self.lr_callbacks(callbacks)
        self.training.add(
            "training",
            location,
            end=end,
            strategy=strategy.name if strategy else None,
            strategy_kind=self.kind(strategy),
            data_parallel=bool(strategy and strategy.get("data_parallel")),
            batches=list(batches),
            optimizers=self.optimizer_facts(record, strategy),
            lr_callback=lr_callback,
            lr_unseen=lr_unseen,
        )
        return strategy

    def reaching(self, record: ModelRecord | None) -> Obj | None:
        """The strategy a ``fit`` runs under: the model's own, else the scope it is called in."""
        if record is not None:
            for scope in (record.scope, record.compiled_scope):
                if scope is not None:
                    return scope
        return self.active()

    def kind(self, strategy: Obj | None) -> str | None:
        if strategy is None:
            return None
        if strategy.get("id") in self.estimator_only:
            return ESTIMATOR
        return strategy.get("kind")

    def optimizer_facts(self, record: ModelRecord | None, strategy: Obj | None) -> list[int]:
        """The optimizer a training uses: the one its model was compiled with; for a custom
        loop, those created under its strategy's scope."""
        if record is not None and record.optimizers:
            facts = []
            for optimizer in record.optimizers:
                if isinstance(optimizer, int):
                    facts.append(optimizer)
                elif identity(optimizer) in self.optimizers:
                    facts.append(self.optimizers[identity(optimizer)].fact)
            return facts
        if strategy is None:
            return []
        return [o.fact for o in self.optimizers.values() if o.scope is strategy]

    @staticmethod
    def lr_callbacks(callbacks: Value) -> tuple[bool, bool]:
        """(a callback sets the learning rate, the callbacks cannot be seen)."""
        if callbacks is None:
            return False, False
        if not isinstance(callbacks, Seq):
            return False, True
        sets_lr = unseen = False
        for item in callbacks.items:
            if isinstance(item, Obj) and item.kind == "callback":
                sets_lr |= item.name in LR_CALLBACKS and bool(item.get("scaled"))
            elif isinstance(item, Instance) and not item.cls.methods.keys() & LR_HOOKS:
                continue  # a callback of the user's own that does not touch the rate
            else:
                unseen = True
        return sets_lr, unseen

    def exported(
        self, location: Location | None, batches: list[int], strategy: Obj | None = None
    ) -> None:
        """A dataset whose end is unknown (returned, exported): the strategy that distributes
        it, else the module's data-parallel strategy that no Estimator runs, would train it."""
        if strategy is None:
            strategy = next(
                (
                    s
                    for s in self.strategies
                    if s.get("data_parallel") and s.get("id") not in self.estimator_only
                ),
                None,
            )
        if strategy is None or location is None or not strategy.get("data_parallel"):
            return
        self.training.add(
            "training",
            location,
            end="unknown",
            strategy=strategy.name,
            strategy_kind=self.kind(strategy),
            data_parallel=True,
            batches=list(batches),
            optimizers=[o.fact for o in self.optimizers.values() if o.scope is strategy],
            lr_callback=False,
            lr_unseen=False,
        )

    # ------------------------------------------------------------------------- reach

    def finish(self, unentered: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        """Tie each model and optimizer created outside every scope to the strategy that
        trains it, if one does (PD205 reports only those). ``unentered``: the lines of
        strategies the code creates and never uses (see ``unentered_strategy_lines``); when no
        strategy places or sizes anything, the models, optimizers and trainings outside every
        scope belong to it: the script meant them for it, and they run on one device."""
        ties: list[tuple[Fact, Obj | None, bool]] = []  # (fact, its strategy, outside all)
        for record in self.models.values():
            if record.fact is None:
                continue
            strategy, used = None, [record.compiled_scope, *record.fitted_scopes]
            if record.scope is None:
                strategy = next((s for s in used if s is not None and self.scoped(s)), None)
                if strategy is None and record.scaled_batch:
                    strategy = next((s for s in self.strategies if self.scoped(s)), None)
            outside = record.scope is None and not any(used)
            ties.append((self.training.facts[record.fact], strategy, outside))
        for opt in self.optimizers.values():
            strategy = None
            used = [*opt.compiled_scopes, *(m.scope for m in opt.compiled_into)]
            if opt.scope is None:
                strategy = next((s for s in used if s is not None and self.scoped(s)), None)
            ties.append(
                (self.training.facts[opt.fact], strategy, opt.scope is None and not any(used))
            )
        orphan = None if any(s for _, s, _ in ties) else self.unentered(unentered)
        for fact, strategy, outside in ties:
            if orphan is not None and outside:
                strategy = orphan
            fact.data.update(
                tied=strategy is not None,
                strategy=strategy.name if strategy else None,
                unentered=strategy is not None and strategy is orphan,
            )
        if orphan is None:
            return
        for fact in self.training.of("training"):
            if fact.get("strategy") is None:
                fact.data.update(
                    strategy=orphan.name,
                    strategy_kind=self.kind(orphan),
                    data_parallel=True,
                    unentered=True,
                )

    def unentered(self, lines: set[int]) -> Obj | None:
        """The one data-parallel strategy the code creates and never uses, when no other
        strategy places anything."""
        created = [
            (f, s)
            for f, s in zip(self.training.of("strategy"), self.strategies, strict=False)
            if f.location is not None and f.location.line in lines and f.get("data_parallel")
        ]
        others = [s for s in self.strategies if all(s is not c for _, c in created)]
        if len(created) != 1 or any(self.scoped(s) for s in others):
            return None
        return created[0][1]

    def scoped(self, strategy: Obj) -> bool:
        """A tf.distribute strategy whose scope places variables (not Keras distribution, not
        one only an Estimator runs)."""
        return (
            strategy.get("kind") not in ("keras.distribution", "unknown", "one-device")
            and strategy.get("id") not in self.estimator_only
        )


def stream_strategy(value: Value) -> Obj | None:
    return value.strategy if isinstance(value, Stream) else None


def batch_facts_of(pipeline: Pipeline, stage_batches: dict[int, int]) -> list[int]:
    """The ``batch`` fact of the stage that sizes ``pipeline``'s elements: its last batch (an
    earlier one cuts a stream into sequences, it is no training batch)."""
    batched = [s for s in pipeline.walk() if id(s) in stage_batches]
    return [stage_batches[id(batched[-1])]] if batched else []


def replicas_scaled(value: Value) -> bool:
    return isinstance(value, Unknown) and value.replicas
