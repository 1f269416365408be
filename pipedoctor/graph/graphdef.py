"""A live dataset's GraphDef: serialise it, read it, edit it, and rebuild a dataset from it.

Stock TensorFlow only: ``DatasetToGraphV2`` to read, ``DatasetFromGraph`` to rebuild. Edits are
made on a copy; every new parameter gets a new ``Const`` node (an existing one may be shared).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2, graph_pb2, node_def_pb2

GraphDef = graph_pb2.GraphDef
NodeDef = node_def_pb2.NodeDef

IGNORE_EXTERNAL_STATE = 1
"""``ExternalStatePolicy.IGNORE``: serialise stateful functions (py_function, random ops)."""

PARAM_POSITIONS: dict[str, dict[str, int]] = {
    "ParallelMapDatasetV2": {"num_parallel_calls": 0},
    "PrefetchDataset": {"buffer_size": 0},
    "BatchDatasetV2": {"batch_size": 0, "drop_remainder": 1},
    "ParallelBatchDataset": {"batch_size": 0, "num_parallel_calls": 1, "drop_remainder": 2},
    "PaddedBatchDatasetV2": {"batch_size": 0},
    "ShuffleDatasetV3": {"buffer_size": 0, "seed": 1, "seed2": 2},
    "ShuffleDatasetV2": {"buffer_size": 0},
    "ShuffleAndRepeatDatasetV2": {"buffer_size": 0, "seed": 1, "seed2": 2, "count": 3},
    "InterleaveDataset": {"cycle_length": 0, "block_length": 1},
    "ParallelInterleaveDatasetV4": {
        "cycle_length": 0, "block_length": 1, "buffer_output_elements": 2,
        "prefetch_input_elements": 3, "num_parallel_calls": 4,
    },
    "LegacyParallelInterleaveDatasetV2": {"cycle_length": 0, "block_length": 1},
    "ShardDataset": {"num_shards": 0, "index": 1},
    "RepeatDataset": {"count": 0},
    "TakeDataset": {"count": 0},
    "SkipDataset": {"count": 0},
    "CacheDatasetV2": {"filename": 0},
    "CacheDataset": {"filename": 0},
}  # fmt: skip
"""Scalar parameters by position, counted after ``input_dataset`` and captured arguments."""


def clean(name: str) -> str:
    return name.lstrip("^").split(":")[0]


def serialize(dataset: Any) -> GraphDef:
    """The dataset's graph, with stateful functions allowed (they rebuild in this process)."""
    data = tf.raw_ops.DatasetToGraphV2(
        input_dataset=dataset._variant_tensor,
        external_state_policy=IGNORE_EXTERNAL_STATE,
        strip_device_assignment=False,
    )
    graph = GraphDef()
    graph.ParseFromString(data.numpy())
    return graph


def copy(graph: GraphDef) -> GraphDef:
    twin = GraphDef()
    twin.CopyFrom(graph)
    return twin


def nodes(graph: GraphDef) -> dict[str, NodeDef]:
    return {n.name: n for n in graph.node}


def output_node(graph: GraphDef) -> NodeDef:
    return next(n for n in graph.node if n.op == "_Retval")


def is_dataset(node: NodeDef) -> bool:
    return "Dataset" in node.op


def dataset_inputs(graph: GraphDef, node: NodeDef) -> list[NodeDef]:
    by_name = nodes(graph)
    found = [by_name[clean(i)] for i in node.input if not i.startswith("^")]
    return [n for n in found if is_dataset(n)]


def chain(graph: GraphDef) -> list[NodeDef]:
    """Dataset nodes from the source to the output, following each node's first dataset input."""
    by_name = nodes(graph)
    current: NodeDef | None = by_name[clean(output_node(graph).input[0])]
    out: list[NodeDef] = []
    while current is not None:
        out.append(current)
        inputs = dataset_inputs(graph, current)
        current = inputs[0] if inputs else None
    return list(reversed(out))


def captured(node: NodeDef) -> int:
    return len(node.attr["Targuments"].list.type) if "Targuments" in node.attr else 0


def const_value(node: NodeDef) -> Any:
    """The Python value of a ``Const`` node (``None`` for resources and non-constants)."""
    if node.op != "Const":
        return None
    tensor = node.attr["value"].tensor
    if tensor.dtype == tf.resource.as_datatype_enum:
        return None
    if tensor.dtype == tf.string.as_datatype_enum:
        value = tf.io.parse_tensor(tensor.SerializeToString(), tf.string).numpy()
    else:
        value = tf.make_ndarray(tensor)
    if getattr(value, "shape", None) == ():
        value = value.item() if hasattr(value, "item") else value
    return value


def param(graph: GraphDef, node: NodeDef, name: str) -> Any:
    """A scalar parameter's value (``None`` when the op has no such parameter)."""
    position = PARAM_POSITIONS.get(node.op, {}).get(name)
    if position is None:
        return None
    inputs = [i for i in node.input if not i.startswith("^")]
    index = 1 + captured(node) + position
    if index >= len(inputs):
        return None
    return const_value(nodes(graph)[clean(inputs[index])])


def function_ops(graph: GraphDef, name: str, seen: set[str] | None = None) -> list[str]:
    """Op types inside a library function, nested functions included."""
    library = {f.signature.name: f for f in graph.library.function}
    seen = seen if seen is not None else set()
    if name in seen or name not in library:
        return []
    seen.add(name)
    ops: list[str] = []
    for node in library[name].node_def:
        ops.append(node.op)
        for attr in node.attr.values():
            if attr.HasField("func"):
                ops += function_ops(graph, attr.func.name, seen)
            for func in attr.list.func:
                ops += function_ops(graph, func.name, seen)
    return ops


def functions_of(node: NodeDef) -> list[str]:
    return [a.func.name for a in node.attr.values() if a.HasField("func")]


def string_consts_feeding(graph: GraphDef, node: NodeDef) -> list[str]:
    """File names held in string Consts that feed ``node`` (through Identity-like ops)."""
    by_name = nodes(graph)
    names: list[str] = []
    stack = [clean(i) for i in node.input if not i.startswith("^")]
    seen: set[str] = set()
    while stack:
        current = by_name.get(stack.pop())
        if current is None or current.name in seen:
            continue
        seen.add(current.name)
        if current.op == "Const":
            value = const_value(current)
            if value is None:
                continue
            values = value.ravel().tolist() if hasattr(value, "ravel") else [value]
            names += [v.decode() if isinstance(v, bytes) else str(v) for v in values]
        elif current.op in ("Identity", "Reshape", "ExpandDims", "Squeeze", "TensorSliceDataset"):
            stack += [clean(i) for i in current.input if not i.startswith("^")]
    return names


def fresh_resources(graph: GraphDef, keep_live: frozenset[str] = frozenset()) -> GraphDef:
    """Replace live resource handles (memory cache, shuffle seed generator) with new ones, so a
    rebuilt dataset does not share a filled cache or an advanced RNG with the original. The
    nodes named in ``keep_live`` stay as they are: a cache filled on purpose is read, not
    filled again."""
    graph = copy(graph)
    creators = {
        "CacheDatasetV2": "DummyMemoryCache",
        "ShuffleDatasetV3": "DummySeedGenerator",
        "ShuffleAndRepeatDatasetV2": "DummySeedGenerator",
    }
    users: dict[str, str] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(clean(name), node.op)
    for node in graph.node:
        if node.name in keep_live:
            continue
        if node.op == "Const" and node.attr["dtype"].type == tf.resource.as_datatype_enum:
            creator = creators.get(users.get(node.name, ""))
            if creator:
                node.op = creator
                node.attr.clear()
    return graph


def rebuild(graph: GraphDef, element_spec: Any, keep_live: frozenset[str] = frozenset()) -> Any:
    """A dataset from a GraphDef, with the given element structure (see
    :func:`fresh_resources` for ``keep_live``)."""
    fresh = fresh_resources(graph, keep_live)
    variant = tf.raw_ops.DatasetFromGraph(graph_def=fresh.SerializeToString())
    return tf.data.experimental.from_variant(variant, element_spec)


def truncated(graph: GraphDef, node_name: str) -> GraphDef:
    """The pipeline cut after ``node_name`` (its output becomes the pipeline's output)."""
    graph = copy(graph)
    output_node(graph).input[0] = node_name
    return graph


# --------------------------------------------------------------------------------- edits


def _unique(graph: GraphDef, base: str) -> str:
    names = {n.name for n in graph.node}
    k = 0
    while f"{base}/_pd{k}" in names:
        k += 1
    return f"{base}/_pd{k}"


def add_const(graph: GraphDef, value: Any, dtype: Any) -> str:
    node = graph.node.add()
    node.name = _unique(graph, "Const")
    node.op = "Const"
    node.attr["dtype"].type = tf.as_dtype(dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
    return node.name


def _set_inputs(node: NodeDef, inputs: list[str]) -> None:
    del node.input[:]
    node.input.extend(inputs)


def _insert_input(node: NodeDef, index: int, name: str) -> None:
    inputs = list(node.input)
    inputs.insert(index, name)
    _set_inputs(node, inputs)


def set_param(graph: GraphDef, node_name: str, name: str, value: int) -> None:
    node = nodes(graph)[node_name]
    index = 1 + captured(node) + PARAM_POSITIONS[node.op][name]
    node.input[index] = add_const(graph, value, tf.int64)


def map_to_parallel(graph: GraphDef, node_name: str) -> None:
    """``MapDataset`` → ``ParallelMapDatasetV2`` with AUTOTUNE, order kept."""
    node = nodes(graph)[node_name]
    node.op = "ParallelMapDatasetV2"
    _insert_input(node, 1 + captured(node), add_const(graph, -1, tf.int64))
    node.attr.pop("force_synchronous", None)
    node.attr["deterministic"].s = b"true"
    node.attr["use_unbounded_threadpool"].b = False


def batch_to_parallel(graph: GraphDef, node_name: str) -> None:
    """``BatchDatasetV2`` → ``ParallelBatchDataset`` with AUTOTUNE, order kept."""
    node = nodes(graph)[node_name]
    node.op = "ParallelBatchDataset"
    _insert_input(node, 2, add_const(graph, -1, tf.int64))
    node.attr["deterministic"].s = b"true"


def interleave_to_parallel(
    graph: GraphDef, node_name: str, cycle_length: int | None = None
) -> None:
    """``InterleaveDataset``/``FlatMapDataset`` → ``ParallelInterleaveDatasetV4`` with AUTOTUNE.

    Order is kept for an interleave; a flat_map given ``cycle_length`` > 1 reads several inputs
    at once and so changes the order of what it yields.
    """
    node = nodes(graph)[node_name]
    k = 1 + captured(node)
    if node.op == "FlatMapDataset":
        _insert_input(node, k, add_const(graph, 1, tf.int64))  # block_length
        _insert_input(node, k, add_const(graph, cycle_length or 1, tf.int64))
    node.op = "ParallelInterleaveDatasetV4"
    _insert_input(node, k + 2, add_const(graph, -1, tf.int64))
    _insert_input(node, k + 3, add_const(graph, -1, tf.int64))
    _insert_input(node, k + 4, add_const(graph, -1, tf.int64))
    node.attr["deterministic"].s = b"true"


def _attrs(**values: Any) -> dict[str, attr_value_pb2.AttrValue]:
    out = {}
    for key, value in values.items():
        attr = attr_value_pb2.AttrValue()
        if isinstance(value, bool):
            attr.b = value
        elif isinstance(value, int):
            attr.i = value
        out[key] = attr
    return out


def _types_key(node: NodeDef) -> str:
    """Most dataset ops name their element types ``output_types``; a few ``Toutput_types``."""
    return "Toutput_types" if "Toutput_types" in node.attr else "output_types"


def element_attrs(node: NodeDef) -> tuple[attr_value_pb2.AttrValue, attr_value_pb2.AttrValue]:
    """A dataset node's element types and shapes."""
    return node.attr[_types_key(node)], node.attr["output_shapes"]


def copy_attr(attr: attr_value_pb2.AttrValue) -> attr_value_pb2.AttrValue:
    twin = attr_value_pb2.AttrValue()
    twin.CopyFrom(attr)
    return twin


def set_element_attrs(node: NodeDef, types: Any, shapes: Any) -> None:
    node.attr[_types_key(node)].CopyFrom(types)
    node.attr["output_shapes"].CopyFrom(shapes)


def _batched_shapes(shapes: attr_value_pb2.AttrValue, like: Any) -> attr_value_pb2.AttrValue:
    """``shapes`` with the leading batch dimension of ``like`` (a batch node's shapes)."""
    out = attr_value_pb2.AttrValue()
    batch_dim = like.list.shape[0].dim[0].size if like.list.shape[0].dim else -1
    for shape in shapes.list.shape:
        new = out.list.shape.add()
        if shape.unknown_rank:
            new.unknown_rank = True
            continue
        new.dim.add().size = batch_dim
        for dim in shape.dim:
            new.dim.add().size = dim.size
    return out


def _unbatched_shapes(shapes: attr_value_pb2.AttrValue) -> attr_value_pb2.AttrValue:
    """``shapes`` without their leading batch dimension."""
    out = attr_value_pb2.AttrValue()
    for shape in shapes.list.shape:
        new = out.list.shape.add()
        if shape.unknown_rank:
            new.unknown_rank = True
            continue
        for dim in shape.dim[1:]:
            new.dim.add().size = dim.size
    return out


def redirect(graph: GraphDef, old: str, new: str) -> None:
    """Every consumer of ``old``'s output reads ``new``'s instead (control inputs left alone)."""
    for node in graph.node:
        if node.name == new:
            continue
        for i, name in enumerate(node.input):
            if clean(name) == old and not name.startswith("^"):
                node.input[i] = new


def insert_after(
    graph: GraphDef, target: str, op: str, extra: list[str], attrs: dict[str, Any] | None = None
) -> str:
    """Insert ``op(target, *extra)`` and feed every consumer of ``target`` from it instead."""
    by_name = nodes(graph)
    new = NodeDef()
    new.name = _unique(graph, op)
    new.op = op
    redirect(graph, target, new.name)
    new.input.extend([target, *extra])
    types, shapes = element_attrs(by_name[target])
    new.attr["output_types"].CopyFrom(types)
    new.attr["output_shapes"].CopyFrom(shapes)
    for key, value in (attrs or {}).items():
        new.attr[key].CopyFrom(value)
    graph.node.append(new)
    return new.name


def move_after_batch(graph: GraphDef, map_name: str, batch_name: str) -> None:
    """Move an element-wise ``map`` from before ``batch`` to right after it.

    The stages between (shuffle, prefetch, ...) and the batch now carry the map's input
    elements; the map's function is unchanged and runs on whole batches, which is only the same
    computation for element-wise functions, so the caller verifies the values.
    """
    by_name = nodes(graph)
    mapped, batch = by_name[map_name], by_name[batch_name]
    source = by_name[clean(mapped.input[0])]
    types, shapes = element_attrs(source)
    batch_types, batch_shapes = (copy_attr(a) for a in element_attrs(batch))
    current = batch
    while True:  # every stage from the batch back to the map now sees the map's input
        below = by_name[clean(current.input[0])]
        if below.name == map_name:
            current.input[0] = source.name
            break
        set_element_attrs(below, types, shapes)
        current = below
    redirect(graph, batch_name, map_name)
    set_element_attrs(batch, types, _batched_shapes(shapes, batch_shapes))
    mapped.input[0] = batch_name
    set_element_attrs(mapped, batch_types, batch_shapes)


def insert_unbatch(graph: GraphDef, target: str) -> str:
    """``unbatch()`` after ``target``, a stage that yields batches. Returns its name."""
    name = insert_after(graph, target, "UnbatchDataset", [])
    node = nodes(graph)[name]
    node.attr["output_shapes"].CopyFrom(_unbatched_shapes(node.attr["output_shapes"]))
    return name


def insert_batch_like(graph: GraphDef, target: str, batch: str, elements: str) -> str:
    """A twin of the ``batch`` node (same size, remainder rule, parallelism) after ``target``,
    yielding what ``elements`` yields: batches of the same structure, batched again."""
    by_name = nodes(graph)
    original = by_name[batch]
    name = insert_after(graph, target, original.op, list(original.input[1:]))
    twin = nodes(graph)[name]
    for key, value in original.attr.items():
        if key not in ("output_types", "Toutput_types", "output_shapes"):
            twin.attr[key].CopyFrom(value)
    twin.attr["output_types"].CopyFrom(element_attrs(by_name[elements])[0])
    twin.attr["output_shapes"].CopyFrom(element_attrs(by_name[elements])[1])
    return name


def stub_function(graph: GraphDef, node_name: str, input_spec: Any, output_spec: Any) -> None:
    """Point the map at ``node_name`` at a function that only returns zeros shaped like its
    output: the pipeline as it would run if this stage's work cost nothing. An upper bound for
    any rewrite of the stage, never a fix. Raises ``ValueError`` for outputs whose shape is not
    fully known (zeros cannot be made for them)."""
    outputs = tf.nest.flatten(output_spec)
    if not all(isinstance(s, tf.TensorSpec) and s.shape.is_fully_defined() for s in outputs):
        raise ValueError("the stage's output shapes are not fully known")

    @tf.function(input_signature=tf.nest.flatten(input_spec), autograph=False)
    def free(*_: Any) -> list[Any]:
        return [tf.zeros(s.shape, s.dtype) for s in outputs]

    function = free.get_concrete_function().function_def
    graph.library.function.add().CopyFrom(function)
    node = nodes(graph)[node_name]
    _set_inputs(node, [node.input[0], *node.input[1 + captured(node) :]])
    node.attr["Targuments"].list.Clear()
    node.attr["f"].func.name = function.signature.name


def bypass(graph: GraphDef, node_name: str) -> None:
    """Take a pass-through stage (a shuffle) out: its consumers read its input instead."""
    redirect(graph, node_name, clean(nodes(graph)[node_name].input[0]))


def insert_prefetch(graph: GraphDef, target: str) -> str:
    buffer = add_const(graph, -1, tf.int64)
    extra = _attrs(legacy_autotune=True, slack_period=0, buffer_size_min=0)
    return insert_after(graph, target, "PrefetchDataset", [buffer], extra)


def insert_cache(
    graph: GraphDef, target: str, filename: str = "", resource: str | None = None
) -> str:
    """``cache(filename)`` after ``target``: in memory without a filename, else in files with
    that prefix. ``resource`` names the node that makes its memory-cache resource. Returns the
    cache node's name."""
    cache = graph.node.add()
    cache.name = resource or _unique(graph, "DummyMemoryCache")
    cache.op = "DummyMemoryCache"
    name = add_const(graph, filename, tf.string)
    return insert_after(graph, target, "CacheDatasetV2", [name, cache.name])


def use_live_resource(graph: GraphDef, resource_node: str, live: NodeDef) -> None:
    """Make ``resource_node`` the live resource handle ``live`` (a ``Const`` read from a
    serialised dataset whose cache is already filled), so a rebuild reads that cache."""
    node = nodes(graph)[resource_node]
    node.op = live.op
    node.attr.clear()
    for key, value in live.attr.items():
        node.attr[key].CopyFrom(value)


def move_after(graph: GraphDef, stage: str, target: str) -> None:
    """Move a stage that passes its elements through unchanged (``shuffle``, ``repeat``) from
    where it is to right after ``target``, downstream of it. Its consumers read its input
    instead; it now reads ``target`` and carries ``target``'s element structure."""
    by_name = nodes(graph)
    moved = by_name[stage]
    redirect(graph, stage, clean(moved.input[0]))
    redirect(graph, target, stage)
    moved.input[0] = target
    set_element_attrs(moved, *(copy_attr(a) for a in element_attrs(by_name[target])))
