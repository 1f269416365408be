"""Detectors for the distributed-training rules (PD2xx), written against ``TrainingSetup``.

The live check fills the setup from the one job it runs, and a rule judges it whole. The static
front end fills it from the source, where one file may hold several trainings with and without
a strategy: there each training the code starts is a ``training`` fact carrying the strategy
that reaches it, and a rule judges the trainings whose strategy kind its rule file names
(``strategies``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from pipedoctor.evidence import Evidence, assumed, shown
from pipedoctor.pipeline import Fact, TrainingSetup
from pipedoctor.rules import Context, Hit, detector, load_catalog

TRAINING_ENDS = ("training", "unknown")


def trainings(context: Context) -> list[Fact]:
    """Static: the trainings a data-parallel strategy of the rule's kinds reaches."""
    return [
        fact
        for fact in context.analysis.training.of("training")
        if fact.get("end") in TRAINING_ENDS
        and fact.get("strategy_kind") in context.strategies
        and fact.get("data_parallel")
    ]


def reached(training: Fact) -> Evidence:
    """Static: the strategy that reaches this training, and where it trains (shown); for a
    dataset the code never hands to training, only exports (``StrategyReach.exported``), the
    strategy that would train it if another module did (assumed)."""
    if training.get("end") == "unknown":
        return assumed(
            "setup", f"the code never trains this dataset; {training.get('strategy')} would"
        )
    line = f", line {training.location.line}" if training.location else ""
    return shown("setup", f"{training.get('strategy')} trains here{line}")


def constant_value(fact: Fact, what: str) -> Evidence:
    """Static: a batch size or rate the code writes as one literal (shown), or that a branch
    sets otherwise (assumed: the branch may size it for the devices)."""
    if fact.get("varies"):
        return assumed("value", f"the {what} is set differently on another branch")
    return shown("value", f"the {what} is the literal {fact.get('value')}")


def batches_of(setup: TrainingSetup, training: Fact) -> list[Fact]:
    return [setup.facts[i] for i in training.get("batches", ())]


def grows_with_replicas(batches: list[Fact]) -> bool:
    """A batch the code sizes by the replica count: only then is a constant learning rate
    PD203's; a constant batch is PD202's, whose fix scales the rate with it (alone, the rate
    fits the batch it was tuned for)."""
    return any(b.get("replicas") for b in batches)


def constant(batch: Fact) -> bool:
    return bool(batch.get("value")) and not batch.get("replicas") and not batch.get("live")


def multi_replica(setup: TrainingSetup) -> list[Fact]:
    return [f for f in setup.of("strategy") if f.get("multi")]


def strategy_name(setup: TrainingSetup) -> str:
    strategies = multi_replica(setup) or setup.of("strategy")
    return strategies[0].get("name", "a strategy") if strategies else "a strategy"


def keras_distribution(setup: TrainingSetup) -> Fact | None:
    """The Keras distribution (``DataParallel``, ``ModelParallel``) the job runs under."""
    found = setup.of("distribution")
    return found[0] if found else None


KERAS_REPLICAS = (
    "the number of devices on the mesh's batch axis (under DataParallel, "
    "`len(keras.distribution.list_devices())`)"
)
"""What a Keras distribution script scales by, where a tf.distribute one uses
``strategy.num_replicas_in_sync``."""


def scaling_context(context: Context) -> tuple[str, bool] | None:
    """The multi-replica setup a constant batch or learning rate is judged under, and whether
    it is a Keras distribution: a strategy the source shows, a Keras distribution in the
    source, or the live job's (a check judges the script's constants against the mesh it
    really trains on)."""
    setup = context.analysis.training
    if multi_replica(setup):
        return strategy_name(setup), False
    distribution = keras_distribution(setup)
    live = context.measurements.get("distribution") or {}
    if distribution is None and live.get("api") == "keras":
        distribution = Fact("distribution", None, live)
    if distribution is not None and (distribution.get("replicas") or 2) > 1:
        return str(distribution.get("name", "a Keras distribution")), True
    return None


KERAS_KIND = "keras.distribution"
"""The strategy kind of the Keras distribution API in the rule files' ``strategies``."""


def live_keras_distribution(context: Context) -> bool:
    """A check's job runs under a Keras distribution of several replicas: a script's constant
    batch and learning rate are judged against it even where the source hides the mesh."""
    live = context.measurements.get("distribution") or {}
    return live.get("api") == "keras" and (live.get("replicas") or 1) > 1


def _scaled_fix(rule_id: str, keras: bool) -> str | None:
    """The rule's fix with the Keras distribution's replica count, or ``None`` (the rule's)."""
    if not keras:
        return None
    fix = load_catalog()[rule_id].short_fix
    return fix.replace("`strategy.num_replicas_in_sync`", KERAS_REPLICAS)


def per_replica_batch(setup: TrainingSetup) -> tuple[float, str] | None:
    """The per-replica batch the setup implies, and how it was worked out (None if unseen)."""
    counts = setup.of("replicas")
    replicas = counts[0].get("count") if counts else None
    best: tuple[float, str] | None = None
    for fact in setup.of("batch"):
        if fact.get("per_replica"):
            estimate = (float(fact.get("per_replica")), "per replica")
        elif fact.get("value") and not fact.get("replicas"):
            n = replicas or 2
            bound = "" if replicas else "at most "
            estimate = (fact.get("value") / n, f"{bound}{fact.get('value')}/{n} per replica")
        else:
            continue
        if best is None or estimate[0] > best[0]:
            best = estimate
    return best


def batch_message(value: int, strategy: str) -> str:
    return (
        f"Global batch {value} is a constant under {strategy}: each replica gets {value}/N, "
        "so adding devices shrinks every device's batch instead of growing the global one."
    )


@detector("PD202")
def batch_not_scaled(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    if setup.static:
        seen: set[object] = set()
        for training in trainings(context):
            keras = training.get("strategy_kind") == KERAS_KIND
            for batch in batches_of(setup, training):
                if constant(batch) and batch.location not in seen:
                    seen.add(batch.location)
                    message = batch_message(batch.get("value"), training.get("strategy"))
                    found = context.evidence(
                        reached(training),
                        constant_value(batch, "global batch"),
                        *fixed_slice(training),
                    )
                    yield Hit(
                        batch.location,
                        message,
                        fix=_scaled_fix("PD202", keras),
                        evidence=found or (),
                    )
        if seen or not live_keras_distribution(context):
            return
    found = scaling_context(context)
    if found is None:
        return
    under, keras = found
    for fact in setup.of("batch"):
        if constant(fact):
            yield Hit(
                fact.location, batch_message(fact.get("value"), under),
                fix=_scaled_fix("PD202", keras),
            )  # fmt: skip


def fixed_slice(training: Fact) -> tuple[Evidence, ...]:
    """Static: on a TPU the number of cores is the slice the code names, so a constant global
    batch may be sized for it; elsewhere devices are added one by one (nothing to add)."""
    if training.get("strategy_kind") == "tpu":
        return (assumed("value", "a TPU slice is a fixed size: the batch may be sized for it"),)
    return ()


def unscaled_lr(fact: Fact, keras: bool = False) -> Hit | None:
    if fact.get("lr") not in ("constant", "default") or fact.get("warmup"):
        return None
    value = fact.get("value")
    rate = f"learning rate {value}" if value is not None else "its default learning rate"
    return Hit(
        fact.location,
        f"`{fact.get('name')}` uses {rate}, not scaled with the replica count, and no "
        "warm-up: when the global batch is scaled with the devices, the step size "
        "stays the same.",
        fix=_scaled_fix("PD203", keras),
    )


@detector("PD203")
def lr_not_scaled(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    if setup.static:
        seen: set[object] = set()
        for training in trainings(context):
            batches = batches_of(setup, training)
            if (
                not grows_with_replicas(batches)
                or training.get("lr_callback")
                or training.get("lr_unseen")
            ):
                continue  # a constant batch, or a callback sets the rate
            keras = training.get("strategy_kind") == KERAS_KIND
            batch = shown("value", "the global batch grows with the replicas")
            for index in training.get("optimizers", ()):
                optimizer = setup.facts[index]
                hit = unscaled_lr(optimizer, keras)
                if hit is not None and hit.location not in seen:
                    seen.add(hit.location)
                    rate = constant_value(optimizer, "learning rate")
                    if optimizer.get("lr") == "default":
                        rate = shown("value", "the optimizer's default learning rate")
                    found = context.evidence(reached(training), rate, batch)
                    yield replace(hit, evidence=found or ())
        if seen or not live_keras_distribution(context):
            return
    found = scaling_context(context)
    if found is None:
        return
    batches = setup.of("batch")
    if batches and not grows_with_replicas(batches):
        return
    for fact in setup.of("optimizer"):
        hit = unscaled_lr(fact, found[1])
        if hit is not None:
            yield hit


@detector("PD204")
def small_replica_batchnorm(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    if not multi_replica(setup):
        return
    if setup.static:
        reached = [b for t in trainings(context) for b in batches_of(setup, t)]
        if not reached:
            return
        setup = TrainingSetup([*reached, *setup.of("replicas"), *setup.of("batchnorm")])
        setup.facts += [f for f in context.analysis.training.of("strategy")]
    implied = per_replica_batch(setup)
    if implied is None or implied[0] >= context.param("min_per_replica_batch"):
        return
    per_replica = (
        assumed("value", f"{implied[1]}: the replica count is not in the code")
        if implied[1].startswith("at most")
        else shown("value", implied[1])
    )
    for fact in setup.of("batchnorm"):
        if not fact.get("frozen") and not fact.get("synchronized"):
            yield Hit(
                fact.location,
                f"`BatchNormalization` under {strategy_name(setup)} with a batch of "
                f"{implied[1]}: each replica normalises over fewer than "
                f"{context.param('min_per_replica_batch')} examples, so its statistics are noisy.",
                evidence=context.evidence(per_replica) or (),
            )


@detector("PD205")
def created_outside_scope(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    if not setup.has("strategy"):
        return
    what = {"model": "The model", "optimizer": "The optimizer"}
    for kind, label in what.items():
        for fact in setup.of(kind):
            if setup.static:
                # only a model or optimizer a strategy then trains with (see static.reach)
                if not fact.get("tied"):
                    continue
                strategy = fact.get("strategy")
            elif fact.get("in_scope") or fact.get("from_compile"):
                continue
            else:
                strategy = strategy_name(setup)
            unentered = " (which the script creates and never enters)" * bool(fact.get("unentered"))
            yield Hit(
                fact.location,
                f"{label} is created outside `strategy.scope()` of {strategy}{unentered}: "
                f"{_unplaced(strategy)}.",
            )


def _unplaced(strategy: object) -> str:
    """What goes wrong with variables made outside the scope, as the strategy places them."""
    if isinstance(strategy, str) and "ParameterServer" in strategy:
        return "its variables are not placed on the parameter servers"
    return "its variables are not mirrored across replicas"


@detector("PD206")
def python_state_metric(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    if not multi_replica(setup):
        return
    for fact in setup.of("metric_state"):
        yield Hit(
            fact.location,
            f"Metric `{fact.get('name')}` keeps its running state in a Python attribute: under "
            f"{strategy_name(setup)} each replica updates its own copy and the result shows "
            "one replica's view.",
        )


@detector("PD207")
def non_chief_writes(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    if not any(f.get("name") == "MultiWorkerMirroredStrategy" for f in setup.of("strategy")):
        return
    for fact in setup.of("write"):
        if setup.static and fact.get("call") == "ModelCheckpoint":
            continue  # Keras's callback writes the chief's file; other workers write to temp
        if fact.get("fixed") and not fact.get("chief_guarded"):
            yield Hit(
                fact.location,
                f"`{fact.get('call')}` writes to a fixed path on every worker: the workers "
                "overwrite each other's files.",
            )


@detector("PD208")
def distributed_eval_uneven(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    if not multi_replica(setup) or keras_distribution(setup) is not None:
        return  # under SPMD metrics are global: a last batch either splits (PD201) or fails
    counts = setup.of("replicas")
    replicas = counts[0].get("count") if counts else None
    for fact in setup.of("evaluation"):
        examples, batch = fact.get("examples"), fact.get("global_batch")
        if not examples or not batch or examples % batch == 0:
            continue
        rest = examples % batch
        if fact.get("drop_remainder"):
            message = (
                f"The validation set has {examples:,} examples and is batched by {batch} with "
                f"`drop_remainder=True`: the last {rest} are never evaluated, and which ones "
                "depends on the batch, and so on the device count."
            )
        else:
            message = (
                f"The validation set has {examples:,} examples: in global batches of {batch}"
                + (f" over {replicas} replicas" if replicas else "")
                + f" the last batch holds {rest}, split unevenly (some replicas may get none); "
                "custom metrics or steps that assume full per-replica batches miscount it."
            )
        yield Hit(fact.location, message)


@detector("PD210")
def autoshard_data(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    workers = setup.of("workers")
    multi_worker = workers or any(
        f.get("name") == "MultiWorkerMirroredStrategy" for f in setup.of("strategy")
    )
    if not multi_worker:
        return
    workers_count = workers[0].get("count") if workers else None
    failed = (context.measurements.get("sharding") or {}).get("applied") == "fails"
    outcome = (
        "TensorFlow's auto-shard rewrite, tried here for each worker, fails at the first step"
        if failed
        else "TensorFlow then fails or falls back to reading everything everywhere"
    )
    for files in setup.of("input_files"):
        if workers_count and files.get("count") < workers_count:
            yield Hit(
                files.location,
                f"The input has {files.get('count')} files for {workers_count} workers: file "
                f"sharding leaves some workers without data ({outcome}); write at least as many "
                "files as workers.",
            )
    for fact in setup.of("autoshard"):
        if fact.get("applied") is False:
            continue  # options no training dataset uses
        evidence: tuple = ()
        if fact.get("policy") == "DATA":
            files = fact.get("files")
            if files is None and fact.get("applied"):
                continue  # data in memory or one file: only data sharding can split it
            evidence = (files,) if files is not None else ()
        if fact.get("policy") == "OFF":
            shared = fact.get("shared")
            if shared is None and fact.get("applied"):
                continue  # split by hand (`shard`): each worker already reads its own part
            evidence = (shared,) if shared is not None else ()
        if fact.get("policy") in ("DATA", "OFF"):
            yield Hit(
                fact.location,
                f"`AutoShardPolicy.{fact.get('policy')}` set explicitly for multi-worker input: "
                + (
                    "every worker reads every file and keeps 1/N of the records."
                    if fact.get("policy") == "DATA"
                    else "every worker trains on the whole data set, duplicating examples."
                ),
                evidence=evidence,
            )


@detector("PD201")
def batch_not_divisible(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    distribution = keras_distribution(setup)
    for fact in setup.of("global_batch"):
        batch, replicas = fact.get("value"), fact.get("replicas")
        if not (batch and replicas and replicas > 1 and batch % replicas):
            continue
        if distribution is not None:
            yield Hit(
                fact.location,
                f"Global batch {batch} does not divide over the {replicas} devices of the "
                f"mesh's batch axis `{distribution.get('batch_axis')}`: "
                f"{distribution.get('name')} cannot split it, and the first training step "
                "fails (JAX's IndivisibleError).",
                fix=_scaled_fix("PD201", True),
            )
        else:
            yield Hit(
                fact.location,
                f"Global batch {batch} does not divide across {replicas} replicas: shards are "
                f"uneven ({batch // replicas + 1} and {batch // replicas}), and under "
                "MirroredStrategy a step can fail mid-epoch.",
            )
        return
    if distribution is not None:
        yield from _last_batches(setup, distribution)


def _last_batches(setup: TrainingSetup, distribution: Fact) -> Iterator[Hit]:
    """Under the Keras distribution every batch is split over the batch axis, the last,
    partial one of an epoch too: when it does not divide, the epoch fails at its end."""
    replicas = distribution.get("replicas") or 1
    for kind, when in (("last_batch", "the end of the first epoch"), ("evaluation", "")):
        for fact in setup.of(kind):
            examples, batch = fact.get("examples"), fact.get("global_batch")
            rest = examples % batch if examples and batch else 0
            if not rest or fact.get("drop_remainder") or rest % replicas == 0:
                continue
            data = "training data" if kind == "last_batch" else "validation set"
            when = when or "the first validation, at the end of the first epoch"
            yield Hit(
                fact.location,
                f"The {data} has {examples:,} examples: in batches of {batch} the last holds "
                f"{rest}, which does not divide over the {replicas} devices of the batch axis "
                f"`{distribution.get('batch_axis')}`, so {distribution.get('name')} fails at "
                f"{when} (JAX's IndivisibleError).",
                fix="Batch with `drop_remainder=True`, or make the number of examples a "
                f"multiple of the batch (or the last batch a multiple of {replicas}).",
            )


@detector("PD209")
def no_mixed_precision(context: Context) -> Iterator[Hit]:
    precision = context.analysis.training.of("precision")
    if not precision or precision[0].get("mixed"):
        return
    minimum = context.param("min_compute_capability")
    for gpu in context.measurements.get("gpus") or []:
        capability = gpu.get("compute_capability")
        if capability is not None and float(capability) >= minimum:
            yield Hit(
                precision[0].location,
                f"GPU {gpu.get('index')} ({gpu.get('name', 'GPU')}, compute capability "
                f"{capability}) has Tensor Cores, but the dtype policy is "
                f"{precision[0].get('policy')}: `keras.mixed_precision.set_global_policy"
                "('mixed_float16')` (or 'mixed_bfloat16') puts them to work; check it again with "
                "the policy set to measure what it gains here.",
            )
            return
