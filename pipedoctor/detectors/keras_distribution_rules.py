"""Detectors for the Keras distribution API (PD211-PD213), written against ``TrainingSetup``.

The live check fills the facts from the real mesh and the user's own model: where each weight
lives, which ``LayoutMap`` keys placed it, what a training step holds in memory. The static
front end fills what the source shows (the order of ``set_distribution`` and the build).
"""

from __future__ import annotations

from collections.abc import Iterator

from pipedoctor import diagnosis
from pipedoctor.detectors.distribution_rules import keras_distribution
from pipedoctor.pipeline import Fact, TrainingSetup
from pipedoctor.report import Severity
from pipedoctor.rules import Context, Hit, detector


def _distribution_name(setup: TrainingSetup) -> str:
    distribution = keras_distribution(setup)
    return str(distribution.get("name")) if distribution is not None else "the distribution"


@detector("PD211")
def set_distribution_after_build(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    distribution = keras_distribution(setup)
    # what the live check saw of the variables, for a fact the source gave
    live = {seen.get("what"): seen for seen in context.measurements.get("off_mesh") or []}
    checked = "distribution" in context.measurements  # a live job showed where variables are
    for fact in setup.of("built_before_distribution"):
        what = "model" if fact.get("what") == "model" else "optimizer"
        if checked and what not in live:
            continue  # the source's order, but the job's variables are on the mesh
        seen = {**live.get(what, {}), **fact.data}
        held = seen.get("held_on")
        if held:
            count, total = seen.get("count"), seen.get("total")
            which = f"all {total}" if count == total else f"{count} of the {total}"
            where = (
                f"{which} of its variables live on {', '.join(held)}, not on the "
                f"{seen.get('mesh_devices')}-device mesh"
            )
        else:  # the source alone: the order of the calls
            line = fact.location.line if fact.location else None
            where = f"it is built{f' on line {line}' if line else ''}, before the distribution"
        yield Hit(
            distribution.location if distribution is not None else fact.location,
            f"`set_distribution({_distribution_name(setup)})` comes after the {what} was built: "
            f"{where}. Variables take their layout when they are created, so the first "
            "training step fails (JAX: incompatible devices).",
        )


def _replicated_largest(weights: list[Fact], share: float) -> tuple[list[Fact], int]:
    """The replicated weights among the largest ones (those that together hold ``share`` of
    the parameter bytes), and the parameter bytes in all."""
    ordered = sorted(weights, key=lambda f: -(f.get("bytes") or 0))
    total = sum(f.get("bytes") or 0 for f in ordered)
    largest, held = [], 0
    for fact in ordered:
        if total and held >= share * total:
            break
        largest.append(fact)
        held += fact.get("bytes") or 0
    return [f for f in largest if not f.get("sharded")], total


@detector("PD212")
def layout_map_misses(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    meant: set[str] = set()
    for fact in setup.of("layout_key"):
        if fact.get("placed"):
            continue
        paths = list(fact.get("meant") or [])
        meant.update(paths)
        key = fact.get("key")
        if not paths:  # no weight is even close: a leftover or a typo, with nothing replicated
            yield Hit(
                fact.location,
                f"`LayoutMap` key `{key}` matches no weight of the model, and no weight's path "
                "ends with it: it places nothing.",
                severity=Severity.INFO,
            )
            continue
        yield Hit(
            fact.location,
            f"`LayoutMap` key `{key}` matches no weight of the model, so the weights it was "
            "meant for stay replicated on every device. Keys are matched against the whole "
            f"path, and the paths here are like `{paths[0]}`: `.*{key}` would match "
            + ", ".join(f"`{p}`" for p in paths)
            + ".",
        )
    meshes = [f for f in setup.of("mesh") if f.get("name") == "ModelParallel"]
    if not meshes or not meshes[0].get("model_axes"):
        return
    replicated, total = _replicated_largest(setup.of("weight"), context.param("largest_share"))
    replicated = [f for f in replicated if f.get("path") not in meant]
    if not replicated or not total:
        return
    listed = ", ".join(
        f"`{f.get('path')}` ({diagnosis.size(f.get('bytes') or 0)}, "
        f"{(f.get('bytes') or 0) / total:.0%})"
        for f in replicated[:3]
    )
    axes = ", ".join(f"`{a}`" for a in meshes[0].get("model_axes"))
    yield Hit(
        meshes[0].location,
        f"Under ModelParallel the largest weights stay whole on every device: {listed}, as "
        f"shares of the {diagnosis.size(total)} of parameters. No `LayoutMap` key shards them "
        f"over {axes}, so each device holds them as under DataParallel.",
    )


@detector("PD213")
def model_does_not_fit(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    distribution = keras_distribution(setup)
    if distribution is not None and distribution.get("name") == "ModelParallel":
        return  # already sharding: PD212 says whether the layout covers the largest weights
    for fact in setup.of("memory"):
        memory = dict(fact.data)
        if diagnosis.parallelism(memory, context.params)["fits"] is False:
            yield Hit(
                distribution.location if distribution is not None else fact.location,
                diagnosis.parallelism_sentence(memory, context.params),
            )
