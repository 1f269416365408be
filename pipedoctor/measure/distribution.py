"""The live setup under the Keras distribution API: the device mesh, the batch axis, where each
weight lives and which ``LayoutMap`` keys placed it.

Read from the real objects when training starts, into the ``TrainingSetup`` facts the PD2xx
rules judge (the ``tf.distribute`` facts are read in ``setup.py``). The weights are read from
the user's own model, never from a copy: a model built before ``set_distribution`` keeps its
variables on one device, and only the model the script built shows it.
"""

from __future__ import annotations

import re
from typing import Any

from pipedoctor.measure.memory import nbytes
from pipedoctor.measure.placement import KerasPlacement
from pipedoctor.pipeline import Location, TrainingSetup

OUTPUT_SUFFIX = "/output"
"""``LayoutMap`` keys for layer outputs end so; they relayout activations, not weights."""


def _devices(value: Any) -> set[Any]:
    sharding = getattr(value, "sharding", None)
    return set(getattr(sharding, "device_set", ()) or ())


def _axes(value: Any) -> list[Any]:
    """The mesh axes each dimension is split over (``None``: not split)."""
    spec = getattr(getattr(value, "sharding", None), "spec", None)
    if spec is None:
        return []
    return [list(a) if isinstance(a, tuple) else a for a in spec]


def weight_layouts(variables: list[Any]) -> list[dict[str, Any]]:
    """Each variable's path, shape, bytes and the mesh axes it is split over, largest first."""
    rows = []
    for variable in variables:
        value = getattr(variable, "value", None)
        axes = _axes(value)
        rows.append(
            {
                "path": variable.path,
                "shape": [int(d) for d in variable.shape],
                "bytes": nbytes(variable),
                "axes": axes,
                "sharded": any(a is not None for a in axes),
            }
        )
    return sorted(rows, key=lambda row: -row["bytes"])


def off_mesh(variables: list[Any], mesh_devices: set[Any]) -> list[Any]:
    """Variables whose values do not span the mesh: built before the distribution was set."""
    return [v for v in variables if _devices(getattr(v, "value", None)) != mesh_devices]


def layout_keys(layout_map: Any, paths: list[str]) -> list[dict[str, Any]]:
    """Each weight key of ``layout_map``, the paths it places (as Keras looks them up), and for a
    key that places nothing the paths it was probably meant for."""
    entries = [(key, layout) for key, layout in layout_map.items()]
    placed: dict[str, list[str]] = {key: [] for key, _ in entries}
    for path in paths:
        try:
            found = layout_map[path]
        except ValueError:  # several keys match: Keras refuses the variable, not our call
            continue
        for key, layout in entries:
            if found is layout and (key == path or re.search(key, path)):
                placed[key].append(path)
    rows = []
    for key, _ in entries:
        if key.endswith(OUTPUT_SUFFIX):
            continue
        row: dict[str, Any] = {"key": key, "placed": placed[key]}
        if not placed[key]:
            row["meant"] = _meant_for(key, paths)
        rows.append(row)
    return rows


def _meant_for(key: str, paths: list[str]) -> list[str]:
    try:
        return [p for p in paths if re.search(f"(?:{key})$", p)][:3]
    except re.error:
        return []


def keras_setup(
    model: Any,
    placement: KerasPlacement,
    setup: TrainingSetup,
    measurements: dict[str, Any],
    where: Location | None,
    sites: dict[str, Any],
) -> None:
    """Facts and measurements of a job under a Keras distribution. ``sites`` holds where the
    script set its distribution (``distribution``) and each ``LayoutMap`` key (``keys``)."""
    distribution = placement.distribution
    at = sites.get("distribution") or where
    mesh = {
        "api": "keras",
        "name": placement.name,
        "shape": list(placement.shape),
        "axis_names": list(placement.axis_names),
        "batch_axis": placement.batch_axis,
        "devices": placement.devices,
        "replicas": placement.replicas,
        "platform": _platform(distribution),
    }
    measurements["distribution"] = mesh
    setup.add("distribution", at, **mesh)
    model_axes = [
        name for name, size in zip(placement.axis_names, placement.shape, strict=False)
        if name != placement.batch_axis and size > 1
    ]  # fmt: skip
    setup.add("mesh", at, model_axes=model_axes, **mesh)
    if model is None:
        return
    weights = weight_layouts(list(model.weights))
    sizes = dict(zip(placement.axis_names, placement.shape, strict=False))
    mesh["weights"] = len(weights)
    mesh["sharded_weights"] = sum(1 for w in weights if w["sharded"])
    mesh["parameter_bytes"] = sum(w["bytes"] for w in weights)
    mesh["sharded_bytes"] = sum(w["bytes"] for w in weights if w["sharded"])
    mesh["per_device_bytes"] = sum(w["bytes"] // _split(w["axes"], sizes) for w in weights)
    measurements["layouts"] = weights[:20]
    for row in weights:
        setup.add("weight", None, **row)
    mesh_devices = set(distribution.device_mesh.backend_mesh.devices.flat)
    optimizer = getattr(model, "optimizer", None)
    for what, variables in (
        ("model", list(model.weights)),
        ("optimizer", list(getattr(optimizer, "variables", []) or [])),
    ):
        outside = off_mesh(variables, mesh_devices)
        if outside:
            held = sorted({str(d) for v in outside for d in _devices(v.value)})
            seen = {
                "what": what, "count": len(outside), "total": len(variables), "held_on": held,
                "mesh_devices": len(mesh_devices),
            }  # fmt: skip
            setup.add("built_before_distribution", where, **seen)
            measurements.setdefault("off_mesh", []).append(seen)
    layout_map = getattr(distribution, "_layout_map", None)
    if layout_map is not None:
        paths = [v.path for v in model.weights]
        paths += [v.path for v in getattr(optimizer, "variables", []) or []]
        key_sites = sites.get("keys") or {}
        for row in layout_keys(layout_map, paths):
            setup.add("layout_key", key_sites.get(row["key"]) or at, **row)


def _split(axes: list[Any], sizes: dict[str, int]) -> int:
    """Into how many pieces a weight laid out over ``axes`` is cut across the mesh."""
    pieces = 1
    for axis in axes:
        for name in axis if isinstance(axis, list) else [axis]:
            pieces *= sizes.get(name, 1) if name is not None else 1
    return pieces


def _platform(distribution: Any) -> str:
    devices = list(distribution.device_mesh.backend_mesh.devices.flat)
    return str(getattr(devices[0], "platform", "cpu")) if devices else "cpu"
