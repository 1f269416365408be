"""The child side of ``pipedoctor check``: run the user's script with hooks on training.

Run as ``python -m pipedoctor.capture.child --events FD --seconds S [--run-after] -- script
args...`` in the user's working directory. At the first ``Model.fit`` (or a strategy's
``experimental_distribute_dataset`` in a custom loop) it takes the model and dataset, runs the
measurement protocol, sends the result to the parent over the events pipe and stops the
script, unless ``--run-after`` lets it carry on training.

Events are JSON lines: ``started``, ``progress``, ``captured``, ``result``, ``exited``,
``user-error`` (the script raised: its own traceback, pipedoctor's frames removed) and
``error`` (the check could not measure, with a one-line reason).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time
import traceback
import weakref
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any, NoReturn

from pipedoctor.capture.processes import ChildGuard, wait_for_threads

PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep


FIT_POSITIONAL = ("epochs", "verbose", "callbacks", "validation_split", "validation_data")
"""``Model.fit``'s parameters after ``batch_size``, in order."""


KERAS_NOT_TRAINING = ("evaluate", "predict", "predict_on_batch", "test_on_batch")
"""Keras model methods that run the model without training it."""


def stop_script() -> NoReturn:
    """End the script here and now, once the check has said what it found. Not an exception:
    one would unwind through the script's own ``finally`` (a ``model.save`` there would
    overwrite the user's model with the untrained one) and could be swallowed by a bare
    ``except:``, after which the script would train and write its outputs. Nothing of the
    script runs after this: no handler, no ``atexit``, no pending write."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


class Events:
    def __init__(self, fd: int) -> None:
        self.stream = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, event: str, **data: Any) -> None:
        try:
            self.stream.write(json.dumps({"event": event, **data}, default=str) + "\n")
            self.stream.flush()
        except (BrokenPipeError, OSError):
            pass  # the parent is gone (timeout or Ctrl-C); nothing left to tell


def user_traceback(exc: BaseException) -> str:
    """The exception as the user's own: frames inside pipedoctor and runpy removed."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(PACKAGE_DIR)
        and Path(f.filename).name != "runpy.py"
        and f.filename != "<frozen runpy>"  # runpy is frozen into the interpreter since 3.11
    ]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


class Capture:
    """Hooks on Keras and tf.distribute; measures at the first training call it sees."""

    def __init__(
        self,
        events: Events,
        deadline: float,
        run_after: bool,
        workers: int | None = None,
        selection: Any = None,
        profile: Path | None = None,
    ) -> None:
        from pipedoctor.rules import ALL_RULES

        self.selection = selection or ALL_RULES
        """The user's rule selection and params: the graph and measured rules honour them."""
        self.events = events
        self.deadline = deadline
        self.run_after = run_after
        self.workers = workers
        self.profile = profile
        self.fit: dict[str, Any] | None = None
        """``fit``'s epochs and steps per epoch, where training started in ``fit``."""
        self.validation: tuple[Any, Any] = (None, None)
        """``fit``'s validation data and its batch size."""
        self.done = False
        self.models: list[weakref.ref[Any]] = []
        """Every Keras model the script built, oldest first."""
        self.timing: Any = None
        """The custom loop being timed, if any (``capture.loop.LoopPlan``)."""
        self.pending: list[Any] = []
        """Custom loops over distributed datasets, waiting for their first batch or for their
        first step to show that they train (``capture.loop.LoopPlan``): a script may loop over
        its evaluation set first."""
        self.applied = 0
        """Optimizer steps the script took outside Keras's evaluate/predict, so far."""
        self.where: Any = None
        self.distribution_sites: dict[int, Any] = {}
        """Where each Keras distribution was set, by the distribution's id."""
        self.key_sites: dict[tuple[int, str], Any] = {}
        """Where each ``LayoutMap`` key was written, by the map's id and the key."""
        self.not_training = 0
        """How deep the script is in Keras's own ``evaluate``/``predict`` calls (no training)."""

    def stop(self) -> NoReturn:
        """End the script now (``stop_script``). A harness that runs scripts in its own
        process, such as the what-if benchmark, ends them its own way instead."""
        stop_script()

    def install(self) -> None:
        """Hook Keras and TensorFlow once the script has imported them: never before, so the
        script still picks its Keras backend and device count itself."""
        from pipedoctor.capture.imports import after_import

        after_import("keras", lambda _: self.install_keras())
        after_import("tensorflow", lambda _: self.install_tensorflow())

    def install_keras(self) -> None:
        import keras

        from pipedoctor.capture import sites

        capture = self
        original_fit = keras.Model.fit

        def fit(
            model: Any, x: Any = None, y: Any = None, batch_size: Any = None, *args: Any, **kw: Any
        ):
            if args:  # ``fit(x, y, batch_size, epochs, ...)``: read as keywords
                kw = {**dict(zip(FIT_POSITIONAL, args, strict=False)), **kw}
                args = ()
            if not capture.done and capture.pending:
                # A dataset distributed by hand, then handed to ``fit``: not a custom loop.
                for plan in capture.pending:
                    x = plan.refit() if x is plan.distributed else x
                    plan.phase = "cancelled"
                capture.pending.clear()
            if not capture.done:
                capture.done = True
                capture.where = sites.user_site()
                capture.on_fit(model, x, y, batch_size, kw)
                if not capture.run_after:
                    capture.stop()
            return original_fit(model, x, y, batch_size, *args, **kw)

        fit.__wrapped__ = original_fit  # type: ignore[attr-defined]
        keras.Model.fit = fit
        for name in KERAS_NOT_TRAINING:
            self.wrap_not_training(keras.Model, name)

        original_init = keras.Model.__init__

        def init(model: Any, *args: Any, **kw: Any) -> None:
            original_init(model, *args, **kw)
            capture.models.append(weakref.ref(model))

        keras.Model.__init__ = init

        optimizer_cls = next(k for k in keras.optimizers.Optimizer.__mro__ if "apply" in k.__dict__)
        original_apply = optimizer_cls.apply

        def apply(optimizer: Any, *args: Any, **kw: Any) -> Any:
            if not capture.not_training:
                capture.applied += 1
                if not capture.done:
                    capture.on_loop_step()
            return original_apply(optimizer, *args, **kw)

        apply.__wrapped__ = original_apply  # type: ignore[attr-defined]
        optimizer_cls.apply = apply
        if hasattr(keras, "distribution"):
            self.install_distribution(keras.distribution)

    def wrap_not_training(self, cls: type, name: str) -> None:
        """While Keras evaluates or predicts (a baseline before ``fit``, as tutorials print),
        the datasets it distributes for itself start no measurement: training starts at
        ``fit`` or at a loop that applies gradients."""
        original = getattr(cls, name)
        capture = self

        def not_training(model: Any, *args: Any, **kw: Any) -> Any:
            capture.not_training += 1
            try:
                return original(model, *args, **kw)
            finally:
                capture.not_training -= 1

        not_training.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(cls, name, not_training)

    def install_distribution(self, api: Any) -> None:
        """Record where the script sets its distribution and each ``LayoutMap`` key, so that
        findings about them point at those lines."""
        from pipedoctor.capture import sites

        capture = self
        original_set = api.set_distribution

        def set_distribution(value: Any) -> None:
            capture.distribution_sites[id(value)] = sites.user_site()
            original_set(value)

        set_distribution.__wrapped__ = original_set  # type: ignore[attr-defined]
        api.set_distribution = set_distribution

        layout_map = api.LayoutMap
        original_setitem = layout_map.__setitem__

        def setitem(mapping: Any, key: Any, layout: Any) -> None:
            original_setitem(mapping, key, layout)
            capture.key_sites[(id(mapping), key)] = sites.user_site()

        layout_map.__setitem__ = setitem

    def install_tensorflow(self) -> None:
        import tensorflow as tf

        from pipedoctor.capture import sites
        from pipedoctor.capture.loop import watch_iterators

        sites.install()
        watch_iterators()
        capture = self

        strategy_cls = tf.distribute.Strategy
        original_distribute = strategy_cls.experimental_distribute_dataset

        def distribute(strategy: Any, dataset: Any, *args: Any, **kw: Any):
            distributed = original_distribute(strategy, dataset, *args, **kw)
            if not capture.done and not capture.not_training:
                capture.time_loop(
                    strategy, dataset, distributed, "experimental_distribute_dataset",
                    lambda: original_distribute(strategy, dataset.repeat(), *args, **kw),
                    fixed=lambda: original_distribute(strategy, one_batch(dataset), *args, **kw),
                )  # fmt: skip
            return distributed

        strategy_cls.experimental_distribute_dataset = distribute
        original_from_function = strategy_cls.distribute_datasets_from_function

        def from_function(strategy: Any, dataset_fn: Any, *args: Any, **kw: Any):
            distributed = original_from_function(strategy, dataset_fn, *args, **kw)
            if not capture.done and not capture.not_training:
                context = tf.distribute.InputContext(
                    num_input_pipelines=1,
                    input_pipeline_id=0,
                    num_replicas_in_sync=strategy.num_replicas_in_sync,
                )
                capture.time_loop(
                    strategy, dataset_fn(context), distributed,
                    "distribute_datasets_from_function",
                    lambda: original_from_function(
                        strategy, lambda ctx: dataset_fn(ctx).repeat(), *args, **kw
                    ),
                    refit=lambda: dataset_fn(tf.distribute.InputContext(1, 0, 1)),
                    fixed=lambda: original_from_function(
                        strategy, lambda ctx: one_batch(dataset_fn(ctx)), *args, **kw
                    ),
                )  # fmt: skip
            return distributed

        strategy_cls.distribute_datasets_from_function = from_function

    def model(self) -> Any:
        """The model the script trains, for a custom loop: the last one it compiled, else the
        last one it built that is no part of another (a ``Sequential`` builds a functional
        model inside itself)."""
        models = [m for m in (ref() for ref in self.models) if m is not None]
        compiled = [m for m in models if getattr(m, "compiled", False)]
        if compiled:
            return compiled[-1]
        inner = {id(getattr(m, "_functional", None)) for m in models}
        for m in models:
            inner.update(id(layer) for layer in getattr(m, "layers", []) if layer is not m)
        outer = [m for m in models if id(m) not in inner]
        return outer[-1] if outer else None

    def on_loop_step(self) -> None:
        """A first optimizer step with no ``fit``: in the first step of a loop over a
        distributed dataset, the sign that the loop trains; otherwise a plain custom loop,
        whose data is the tf.data iterator that served the latest batch to Python."""
        import tensorflow as tf

        from pipedoctor.capture import sites, writes
        from pipedoctor.capture.loop import last_served

        probing = next((plan for plan in self.pending if plan.phase == "probe"), None)
        if probing is not None:
            # Its timing starts at its next batch; until then nothing may reach the user's
            # files, as below.
            if not self.run_after and self.timing is None:
                self.timing = probing
                writes.arm(self.wrote_before_timing)
            return
        for plan in self.pending:  # distributed datasets the plain loop does not read
            plan.phase = "cancelled"
        self.pending.clear()
        self.done = True
        self.where = sites.user_site()
        iterator = last_served()
        dataset = getattr(iterator, "_dataset", None)
        if dataset is None:
            raise_error(
                self.events,
                "the script trains in a custom loop on data that is not a tf.data dataset read "
                "in Python (for example NumPy batches): the check can time only tf.data input",
            )
            self.stop()
        self.time_loop(
            tf.distribute.get_strategy(), dataset, None, "a custom loop's first optimizer step",
            lambda: dataset.repeat(), iterator=iterator, fixed=lambda: one_batch(dataset),
        )  # fmt: skip
        # The loop has trained one step on the user's batch: from here on nothing it does may
        # reach the user's files (a checkpoint at step 0 would rotate theirs away), though
        # the timing starts only at its next batch. Under --run-after its training is theirs.
        if not self.run_after:
            writes.arm(self.wrote_before_timing)

    def wrote_before_timing(self, what: str) -> None:
        """The loop writes between its first optimizer step and its next batch (a log line
        per step): its steps cannot be timed, but its pipeline still can be, alone, before
        the script is stopped there."""
        why = (
            f"the script's custom loop was about to {what} after its first optimizer step, "
            "before its steps could be timed: the check stopped it there (nothing was "
            "written), so only the input pipeline was measured"
        )
        if self.timing is not None and self.timing.phase in ("start", "probe"):
            self.timing.stop_untimed(why)  # the result is sent and the script stopped there
        raise_error(self.events, why)
        self.stop()

    def time_loop(
        self,
        strategy: Any,
        dataset: Any,
        distributed: Any,
        hook: str,
        repeated: Any,
        iterator: Any = None,
        refit: Any = None,
        fixed: Any = None,
    ) -> None:
        """Time the custom loop over ``distributed`` (or reading ``iterator``) from its next
        batch on (see ``capture.loop``); ``repeated`` makes a repeated copy for the training
        phase, ``fixed`` one that serves its first batch for ever (the ceiling of a compiled
        step); ``refit`` makes the dataset ``fit`` measures when the distributed dataset is
        handed to ``fit`` after all (global batches)."""
        from pipedoctor.capture import sites
        from pipedoctor.capture.loop import LoopPlan, mark, mark_iterator
        from pipedoctor.measure.protocol import Budget, MeasureError, measure_input
        from pipedoctor.measure.sampling import Sampling

        capture = self
        sampling = Sampling()
        state: dict[str, Any] = {}

        def progress(message: str) -> None:
            capture.events.send("progress", message=message)

        def start() -> None:
            for other in capture.pending:
                if other is not plan:
                    other.phase = "cancelled"
            capture.pending.clear()
            capture.done, capture.timing = True, plan
            capture.where = where
            state["started"] = time.perf_counter()
            plan.budget = state["budget"] = Budget.of(max(1.0, capture.deadline - time.time()))
            capture.events.send("captured", hook=hook, model=type(capture.model()).__name__)
            try:
                state["measured"], _, _ = measure_input(dataset, plan.budget, progress)
            except MeasureError as exc:
                raise_error(capture.events, str(exc))
                self.stop()

        def finish(plan: LoopPlan) -> None:
            capture.finish_loop(plan, state, sampling, dataset, hook)

        where = self.where if iterator is not None else sites.user_site()
        plan = LoopPlan(
            strategy, repeated, None, start, finish, progress, run_after=self.run_after,
            fixed=fixed, probe=None if iterator is not None else self.training_probe,
        )  # fmt: skip
        plan.dataset, plan.distributed = dataset, distributed
        plan.refit = refit or (lambda: dataset)
        plan.sampling_context = sampling.during
        if iterator is not None:
            self.timing = plan
            mark_iterator(iterator, plan)
            return
        plan.on_pass = self.passed
        self.pending.append(plan)
        mark(distributed, plan)

    def training_probe(self) -> Callable[[], bool]:
        """At a distributed loop's first batch: what says, at its second, whether the step
        between trained. An optimizer step says so (Keras's, hooked), and so does a change in
        the weights of the script's model (any other way to apply gradients); a loop that does
        neither, such as an evaluation loop before training, is left as the script wrote it.
        With no Keras model to look at, the loop is taken as training, as it was before."""
        applied, before = self.applied, self.weights_signature()
        if before is None:
            return lambda: True
        return lambda: self.applied > applied or self.weights_signature() != before

    def weights_signature(self) -> tuple[float, ...] | None:
        """The sum of each trainable weight of the script's model, read eagerly."""
        import numpy as np
        import tensorflow as tf

        model = self.model()
        if model is None or not getattr(model, "trainable_variables", None):
            return None
        with tf.init_scope():
            return tuple(
                float(np.sum(np.asarray(v, dtype=np.float64))) for v in model.trainable_variables
            )

    def passed(self, plan: Any) -> None:
        """A distributed loop whose first step did not train: it runs on as written, and the
        next loop or ``fit`` may be the training."""
        from pipedoctor.capture import writes

        if plan in self.pending:
            self.pending.remove(plan)
        if self.timing is plan:
            self.timing = None
            writes.disarm()

    def finish_loop(
        self, plan: Any, state: dict[str, Any], sampling: Any, dataset: Any, hook: str
    ) -> None:
        from pipedoctor.capture import writes
        from pipedoctor.measure.job import finish_job
        from pipedoctor.measure.placement import StrategyPlacement

        placement = StrategyPlacement(plan.strategy)
        measured = state["measured"]
        measured.ceiling = plan.rates.get("ceiling")
        measured.training = plan.rates.get("training")
        measured.batch_size = plan.samples or measured.batch_size
        measured.replicas = measured.devices = placement.replicas
        measured.strategy = placement.name
        if plan.ended_in is not None:
            measured.notes.append(
                f"the script's loop {plan.ended_by} while its {plan.ended_in} was timed: the "
                "figures are those of the steps it ran, and the script was stopped there; a "
                "longer loop (more steps or epochs) measures it better"
            )
        if held := silenced_files():
            measured.notes.append(
                f"while its loop was timed, what the script wrote to files it held open ({held}) "
                "went nowhere: they hold only what it wrote before"
            )
        if writes.GUARD.skipped:
            counts = Counter(writes.GUARD.skipped)
            saves = ", ".join(f"{n} {what} save{'s' * (n > 1)}" for what, n in counts.items())
            measured.notes.append(
                f"while its loop was timed the script's saves were skipped ({saves}): no file "
                "of yours holds weights trained on the check's batches"
            )
        if plan.untimed:
            measured.extra["incomplete"] = plan.incomplete
        elif plan.compiled:
            measured.notes.append(
                f"the loop reads its batches inside its compiled step ({plan.per_call} per "
                "call): each call was timed as that many steps, the ceiling with its iterator "
                "serving one batch over and over"
            )
        if self.run_after and not plan.untimed:
            measured.notes.append(
                "the compute ceiling of a custom loop is not measured with --run-after: it "
                "feeds the loop one batch over and over, which would change your training"
            )
        if placement.replicas > 1 and not plan.untimed:
            measured.notes.append(
                "a custom loop's scaling efficiency and parity are not measured: they need a "
                "copy of its step on one device, and the step is the script's own code"
            )
        info = {"hook": hook, "given": "a custom training loop"}
        job = finish_job(
            dataset, self.model(), measured, sampling, state["budget"], state["started"],
            lambda message: self.events.send("progress", message=message),
            self.job_options(info, placement=placement),
        )  # fmt: skip
        self.send_result(job, info)
        if not self.run_after:
            self.stop()

    def on_fit(self, model: Any, x: Any, y: Any, batch_size: Any, kw: dict[str, Any]) -> None:
        import tensorflow as tf

        if isinstance(x, tf.data.Dataset):
            dataset, given, built_by, steps = x, "a tf.data.Dataset", None, None
        elif x is not None:
            from pipedoctor.measure.protocol import MeasureError

            try:
                dataset, built_by, steps = keras_input(x, y, batch_size, kw)
            except MeasureError as exc:
                raise_error(self.events, str(exc))
                self.stop()
            given = f"{built_by} (measured as the tf.data pipeline Keras builds for it)"
        else:
            raise_error(self.events, "`fit` was called without training data")
            self.stop()
        self.validation = (kw.get("validation_data"), kw.get("validation_batch_size") or batch_size)
        self.fit = {  # how long the whole run is, for the decisions
            "epochs": max(1, int(kw.get("epochs", 1)) - int(kw.get("initial_epoch", 0))),
            "steps_per_epoch": kw.get("steps_per_epoch") or steps,
        }
        self.measure(dataset, model, {"hook": "fit", "given": given}, built_by)

    def measure(
        self, dataset: Any, model: Any, capture_info: dict[str, Any], built_by: str | None = None
    ) -> None:
        """``built_by``: what the script gave ``fit`` when Keras, not the script, built the
        pipeline (arrays, a generator, a ``PyDataset``)."""
        from pipedoctor.measure.job import measure_job
        from pipedoctor.measure.protocol import MeasureError

        self.events.send("captured", **capture_info, model=type(model).__name__ if model else None)
        try:
            job = measure_job(
                dataset,
                model,
                max(1.0, self.deadline - time.time()),
                lambda message: self.events.send("progress", message=message),
                self.job_options(capture_info, built_by=built_by),
            )
        except MeasureError as exc:
            raise_error(self.events, str(exc))
            if self.run_after:  # the check failed, the training the user asked for goes on
                return
            self.stop()
        self.send_result(job, capture_info)

    def job_options(self, capture_info: dict[str, Any], **given: Any) -> Any:
        """What the job is told about the script, with a partial result sent ahead of the
        graph doctor: if that runs past the check's time, the report still comes."""
        from pipedoctor.measure.job import JobOptions

        return JobOptions(
            self.selection,
            where=self.where,
            workers=self.workers,
            validation=self.validation,
            sites=self.sites(),
            profile=self.profile,
            partial=lambda job: self.send_result(job, capture_info, event="partial"),
            **given,
        )

    def send_result(self, job: Any, capture_info: dict[str, Any], event: str = "result") -> None:
        if self.fit is not None:
            job.measurements["fit"] = self.fit
        if self.where is not None:  # where job-level findings point, for SARIF
            job.measurements["training_call"] = {
                "path": self.where.path, "line": self.where.line, "column": self.where.column,
            }  # fmt: skip
        self.events.send(
            event,
            measurements=job.measurements,
            notes=job.notes,
            findings=[f.to_dict() for f in job.findings],
            capture=capture_info,
        )

    def sites(self) -> dict[str, Any]:
        """Where the active Keras distribution and its ``LayoutMap`` keys were set."""
        import keras

        api = getattr(keras, "distribution", None)
        active = api.distribution() if api is not None else None
        if active is None:
            return {}
        layout_map = getattr(active, "_layout_map", None)
        return {
            "distribution": self.distribution_sites.get(id(active)),
            "keys": {
                key: site
                for (owner, key), site in self.key_sites.items()
                if layout_map is not None and owner == id(layout_map)
            },
        }


def keras_input(x: Any, y: Any, batch_size: Any, kw: dict[str, Any]) -> tuple[Any, str, int | None]:
    """The tf.data pipeline Keras itself builds for what ``fit`` was given that is not a
    dataset (arrays, a list of arrays for a multi-input model, a generator, a ``PyDataset``),
    through Keras's own data adapters, and what that input was."""
    from keras.src.trainers.data_adapters import get_data_adapter

    from pipedoctor.measure.job import GRAIN_INPUT

    try:
        adapter = get_data_adapter(
            x, y, sample_weight=kw.get("sample_weight"), batch_size=batch_size,
            steps_per_epoch=kw.get("steps_per_epoch"), shuffle=kw.get("shuffle", True),
            class_weight=kw.get("class_weight"),
        )  # fmt: skip
        dataset = adapter.get_tf_dataset()
    except Exception as exc:  # noqa: BLE001 - what Keras would say, on one line
        from pipedoctor.measure.protocol import MeasureError, brief

        raise MeasureError(
            f"Keras cannot build an input pipeline from what `fit` was given "
            f"({type(x).__name__}): {brief(exc)}"
        ) from None
    kinds = {
        "ArrayDataAdapter": "in-memory arrays",
        "GeneratorDataAdapter": "a Python generator",
        "PyDatasetAdapter": f"a keras.utils.PyDataset ({type(x).__name__})",
        "GrainDatasetAdapter": f"{GRAIN_INPUT} DataLoader"
        if type(x).__name__ == "DataLoader"
        else f"{GRAIN_INPUT} dataset ({type(x).__name__})",
    }
    steps = getattr(adapter, "num_batches", None)
    built_by = kinds.get(type(adapter).__name__, type(x).__name__)
    return dataset, built_by, steps if isinstance(steps, int) and steps > 0 else None


def one_batch(dataset: Any) -> Any:
    """``dataset``'s first batch for ever, with its element spec: a compiled step that reads
    it keeps its trace, and the pipeline's cost is gone after the first read."""
    return dataset.take(1).cache().repeat()


def selection_from_json(text: str) -> Any:
    from pipedoctor.rules import Selection

    data = json.loads(text)
    return Selection(tuple(data["select"]), tuple(data["ignore"]), dict(data["params"]))


def raise_error(events: Events, message: str) -> None:
    events.send("error", message=message)


@contextmanager
def quiet_tensorflow() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pipedoctor.capture.child")
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--deadline", type=float, required=True, help="time.time() to finish by")
    parser.add_argument("--run-after", action="store_true")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--selection", type=selection_from_json, default=None)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    events = Events(options.events)
    script = Path(options.script).resolve()
    with quiet_tensorflow():
        missing = [name for name in ("tensorflow", "keras") if find_spec(name) is None]
        if missing:
            raise_error(
                events,
                f"TensorFlow and Keras are needed to check (no module named {missing[0]!r}): "
                "pip install 'pipedoctor[tf]'",
            )
            return 2
        capture = Capture(
            events,
            options.deadline,
            options.run_after,
            options.workers,
            options.selection,
            options.profile,
        )
        capture.install()

        def child_started(what: str) -> None:
            events.send("child", what=what)
            stop_script()  # before the child exists: it never trains, and writes nothing

        ChildGuard(lambda: not capture.done, child_started).install()
        events.send("started", pid=os.getpid())
        sys.argv = [str(script), *options.args]
        sys.path.insert(0, str(script.parent))

        def carried_on() -> bool:
            """Training went on after the check (--run-after): the exit code is the script's."""
            return options.run_after and capture.done

        try:
            runpy.run_path(str(script), run_name="__main__")
            wait_for_threads()  # a `fit` in a thread of its own is training too
            if capture.timing is not None:  # the loop ran out of steps while it was timed
                capture.timing.finish_now()
        except SystemExit as exc:
            if capture.timing is not None:
                capture.timing.finish_now()
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if carried_on() and not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)  # as Python shows SystemExit("message")
            events.send("exited", code=code, trained=capture.done)
            return code if carried_on() else 0
        except KeyboardInterrupt:
            return 130
        except BaseException as exc:  # noqa: BLE001 - the user's own error, shown as theirs
            summary = f"{type(exc).__name__}: {exc}"
            if held := silenced_files():  # a database read back through a silenced handle
                summary += (
                    " (as its loop was about to be timed, the files it held open for writing, "
                    f"{held}, were pointed at nothing so that they stay as they were: a script "
                    "that reads them back, as a database does, fails there)"
                )
            if capture.timing is not None and not carried_on():  # what was timed is the result
                capture.timing.finish_now(f"raised {summary}")
            events.send(
                "user-error", traceback=user_traceback(exc), summary=summary, trained=capture.done
            )
            if carried_on():
                sys.stderr.write(user_traceback(exc))
                return 1
            return 3
        events.send("exited", code=0, trained=capture.done)
        return 0


def silenced_files() -> str:
    """The files the write guard pointed at the null device, by name (empty when none)."""
    from pipedoctor.capture import writes

    return ", ".join(f"`{os.path.basename(p)}`" for p in sorted(set(writes.GUARD.silenced)))


if __name__ == "__main__":
    raise SystemExit(main())
